/*
 * route.h — the routing of every cell: where its water goes (hydro/route/).
 *
 * 1. The routing surface: the DEM, depression-filled (priority-flood,
 *    epsilon 0) unless the caller routes on the raw DEM.
 * 2. Cells with a lower neighbour drain by the routing's formula on the
 *    surface's gradients (hydro.h).  Outlets with no lower neighbour pass
 *    their water off the raster.
 * 3. Flat cells (no lower neighbour, not outlets) drain down their flat's
 *    mask (hydro/flats/).
 * route_cpu.c routes; route_cache.c keeps the last routing (and its
 * topological order) for the next call on the same DEM.  Internal to the
 * core.
 */
#ifndef TG_ROUTE_H
#define TG_ROUTE_H

#include "hydro/flats/flats.h"

#ifdef __cplusplus
extern "C"
{
#endif

/*
 * Where every cell's water goes.  z: the routing surface (NaN = nodata);
 * d8: index 0..7 of the steepest receiver (TG_NO_DIRECTION for none);
 * frac: for multiple-flow routings, 8 planes of n shares (frac[k * n + i]).
 */
typedef struct tg_route
{
	int			width;
	int			height;
	tg_routing	routing;
	double	   *z;
	uint8_t    *d8;
	float	   *frac;
} tg_route;

/* The routing as the per-cell formulas of hydro.h read it. */
static inline tg_route_view
tg_cpu_route_view(const tg_route *r, double threshold)
{
	tg_route_view v = {r->width, r->height, r->routing, threshold, r->d8, r->frac};

	return v;
}

tg_status	tg_cpu_route_build(const tg_ctx *ctx, const tg_band *dem,
							   const tg_flow_params *p, tg_route *r, tg_error *err);

/*
 * Cell (x, y) of a surface z (W x H) as the routing's gradient pass sees it:
 * nodata; an outlet (none lower, on the edge or next to nodata: its water
 * leaves); flat (none lower: it drains down its flat's mask, which this
 * does not know); or on a slope, its steepest receiver into d8 and, where
 * share is given, its shares under p's routing (dist: the row's neighbour
 * distances, tg_nbr_distances).  d8 is TG_NO_DIRECTION off a slope.
 */
typedef enum tg_cell_kind
{
	TG_CELL_NODATA, TG_CELL_OUTLET, TG_CELL_FLAT, TG_CELL_SLOPE
} tg_cell_kind;

tg_cell_kind tg_cpu_route_cell(const double *z, int W, int H, int x, int y, const tg_flow_params *p,
							   const double dist[8], uint8_t *d8, float share[8]);
/*
 * A flat cell's routing down its flat's mask (Barnes et al. 2014): flat
 * marks the surface's flat cells, mask their masks (mask[(x, y)] not 0); its
 * steepest receiver into d8, its shares where share is given.
 */
void		tg_cpu_flat_route_cell(const double *z, const uint8_t *flat, const int32_t *mask, int W, int H, int x,
								   int y, const tg_flow_params *p, uint8_t *d8, float share[8]);

/*
 * The routing of a surface as it is (tg_cpu_route_build does the decoding
 * and filling): takes z (r->z; freed with the route, or on failure).
 */
tg_status	tg_cpu_route_surface(const tg_ctx *ctx, double *z, int W, int H,
								 const tg_flow_params *p, const tg_flat_masks *given,
								 tg_route *r, tg_error *err);
void		tg_route_free(const tg_ctx *ctx, tg_route *r);

/*
 * The routing of a DEM, built or (when ctx->route_cache_limit allows) kept
 * from an earlier call on the same DEM and parameters (route_cache.c).  kept:
 * the cache owns it; give it back with tg_cpu_route_put either way.  The
 * topological order of the kept routing can be kept beside it.
 */
tg_status	tg_cpu_route_get(const tg_ctx *ctx, const tg_band *dem, const tg_flow_params *p,
							 tg_route *r, bool *kept, tg_error *err);
void		tg_cpu_route_put(const tg_ctx *ctx, tg_route *r, bool kept);
const uint32_t *tg_cpu_route_order(const tg_route *r, size_t *len, int *levels,
								   const uint32_t **level_start);
void		tg_cpu_route_keep_order(const tg_ctx *ctx, const tg_route *r, const uint32_t *order,
									const uint32_t *level_start, size_t len, int levels);

/*
 * ESRI codes (d8) and shares (frac, 8 planes) of a routing, through the
 * accumulation's share formula (fdd8 needs acc; NULL for the others).
 */
tg_status	tg_cpu_export_directions(const tg_ctx *ctx, const tg_route *r, const tg_flow_params *p,
									 const double *acc, uint8_t *d8, float *frac, tg_error *err);

#ifdef __cplusplus
}
#endif

#endif							/* TG_ROUTE_H */
