/*
 * accum.h — flow accumulation on the CPU (hydro/accum/): the four
 * strategies of Sten et al. (2016) over a routing (accum_cpu.c), what each
 * cell puts in (cell_weights.c), and the chain routing -> accumulation ->
 * products behind tg_flow_direction and tg_hydrology (chain_cpu.c).
 * Internal to the core.
 */
#ifndef TG_ACCUM_H
#define TG_ACCUM_H

#include "hydro/route/route.h"

#ifdef __cplusplus
extern "C"
{
#endif

/*
 * Accumulation weights of a grid of geometry g (cell_weights.c): the
 * weight band (nodata counts 0, NULL for 1) times the cell area unless
 * units are cells; and the division of an accumulated area by the contour
 * width that makes it specific.
 */
tg_status	tg_cell_weights(const tg_ctx *ctx, const tg_band *weight, const tg_grid_geometry *g,
							tg_accum_units units, double **out, tg_error *err);
/* Without a weight raster: the weight of every cell of each row (height doubles). */
tg_status	tg_row_weights(const tg_ctx *ctx, const tg_grid_geometry *g, tg_accum_units units,
						   double **out, tg_error *err);
tg_status	tg_to_sca(const tg_ctx *ctx, const tg_grid_geometry *g, double *acc, tg_error *err);
/* What tg_to_sca divides each row by (height doubles), for the device to divide the same way. */
tg_status	tg_row_contour_widths(const tg_ctx *ctx, const tg_grid_geometry *g, double **out,
								  tg_error *err);
/*
 * The receiver masks of cells [i0, i1) of a routing as tg_hydrology exports
 * them (bit k: neighbour k gets a share; TG_NODATA_RECEIVERS where the
 * accumulation is NaN, i.e. nodata), from their accumulation in cells
 * (fdd8's shares depend on it).
 */
void		tg_route_receivers(const tg_route_view *v, const double *acc, size_t i0, size_t i1,
							   uint16_t *receivers);
/* The same for rows [0, nrows) of v after cell `skip` (both arrays indexed as v), on the call's threads. */
tg_status	tg_route_receivers_rows(const tg_ctx *ctx, const tg_route_view *v, const double *acc, size_t skip,
									int nrows, uint16_t *receivers, tg_error *err);
/* weight: per-cell weights (tg_cell_weights), NULL for 1 each */
tg_status	tg_cpu_accumulate(const tg_ctx *ctx, const tg_route *r, const tg_flow_params *p,
							  const double *weight, tg_accum_method method, double *acc,
							  tg_error *err);

/*
 * The valid cells in level order (Kahn's frontier rounds), with
 * level_start (room for cells + 1) where each level begins; within a level
 * the order depends on the threads.
 */
tg_status	tg_cpu_route_levels(const tg_ctx *ctx, const tg_route *r, uint32_t *order, size_t *count,
								uint32_t *level_start, int *levels, tg_error *err);

/* The CPU side of tg_flow_direction and tg_hydrology (chain_cpu.c). */
tg_status	tg_cpu_flow_direction(const tg_ctx *ctx, const tg_band *dem, const tg_flow_params *p,
								  uint8_t *d8, float *frac, tg_error *err);
tg_status	tg_cpu_hydrology(const tg_ctx *ctx, const tg_band *dem, const tg_band *weight,
							 const tg_flow_params *p, tg_accum_method method, tg_accum_units units,
							 const tg_flow_products *out, tg_error *err);

#ifdef __cplusplus
}
#endif

#endif							/* TG_ACCUM_H */
