/*
 * tg_backends.h — the per-backend implementations behind the dispatcher.
 *
 * tg_cpu_* live in the *_cpu.c files of src/core; tg_cuda_* in the .cu files
 * of cuda/ (or in cuda/tg_cuda_stub.c when built without nvcc), which
 * implement the declarations below.  Both sides of a pair take the same
 * arguments; only tg_dispatch.c calls them.
 */
#ifndef TG_BACKENDS_H
#define TG_BACKENDS_H

#include "tg_core.h"
#include "hydro/hydro.h"

#ifdef __cplusplus
extern "C"
{
#endif

/* down[] of drainage.c's passes on a nodata cell (beside TG_NO_DIRECTION: no receiver) */
#define TG_DOWN_NODATA 0xFE

/*
 * One step of a call on the backend the dispatcher's policy chooses for
 * `cells` (tg_dispatch.c): gpu where it chooses the GPU, cpu otherwise and
 * where, under auto, the device runs out of memory.  For the passes of a
 * call already open (no statistics reset, no phases of its own).
 */
typedef tg_status (*tg_step_fn) (const tg_ctx *ctx, const void *args, tg_error *err);

tg_status	tg_run_step(const tg_ctx *ctx, int64_t cells, tg_step_fn cpu, tg_step_fn gpu, const void *args,
						tg_error *err);

/* ------------------------------------------------------------------------
 * The CUDA backend (cuda/).  Its entry points never throw, never longjmp,
 * free every device buffer on every path and report through tg_error; they
 * are called from the calling thread of a core call only.
 * ------------------------------------------------------------------------ */

/*
 * Make `device` current, initialising CUDA in this process on first use.
 * Fills info (may be NULL); returns TG_ENODEVICE with the reason when there
 * is no usable device.  The outcome of the first probe is cached.
 */
tg_status	tg_cuda_probe(int device, tg_device_info *info, tg_error *err);

/* After a call that ran on the device: give the memory its buffers took back. */
void		tg_cuda_release(void);

/*
 * For the benchmarks: GB/s of copies of `bytes` between the host and the
 * current device, best of three.  The floor is the DMA from and to pinned
 * memory; the staged copies are those every grid takes (pageable memory
 * through the pinned slots, on ctx's threads: call inside a call scope).
 */
typedef struct tg_copy_rates
{
	double		pinned_up_gbs;
	double		pinned_down_gbs;
	double		staged_up_gbs;	/* from pages written before */
	double		staged_down_gbs;	/* into pages written before */
	double		staged_down_fresh_gbs;	/* into pages never touched, from tg_alloc (huge pages advised) */
	double		staged_down_fresh_small_gbs;	/* the same from malloc: 4 kB pages where not advised */
	double		host_memcpy_gbs;	/* pinned to pageable memory on ctx's threads, no DMA */
} tg_copy_rates;

tg_status	tg_cuda_copy_rates(const tg_ctx *ctx, size_t bytes, tg_copy_rates *rates, tg_error *err);

/* For the tests: the pinned room of a band of streamed products (tg_rows_sink), 0 = all there is. */
extern size_t tg_stream_band_bytes;

tg_status	tg_cuda_slope(const tg_ctx *ctx, const tg_band *dem,
						  const tg_slope_params *params, float *out, tg_error *err);

tg_status	tg_cuda_fill(const tg_ctx *ctx, const tg_band *dem, const tg_fill_params *params,
						 double out_nodata, void *out, tg_error *err);

/*
 * weight: per-cell weights already multiplied by cell areas (n doubles); or
 * NULL, and row_weight one weight per row (without a weight raster every cell
 * of a row weighs the same: the device spreads them, sparing the upload).
 * row_divisor (or NULL): the accumulation of row y divided by row_divisor[y]
 * once the receivers are exported (specific catchment area, as tg_to_sca).
 */
tg_status	tg_cuda_flow_accumulation(const tg_ctx *ctx, const tg_band *dem,
									  const double *weight, const double *row_weight,
									  const double *row_divisor, const tg_flow_params *params,
									  tg_accum_method method, const tg_flow_products *out,
									  tg_error *err);

tg_status	tg_cuda_flow_direction(const tg_ctx *ctx, const tg_band *dem,
								   const tg_flow_params *params, uint8_t *d8, float *frac,
								   tg_error *err);

/* factors as tg_cpu_rusle's: host arrays (or constants) */
tg_status	tg_cuda_rusle(const tg_ctx *ctx, const tg_band *dem, const tg_rusle_params *params,
						  const tg_cell_factor factors[4], float *ls, float *soil_loss,
						  tg_error *err);

tg_status	tg_cuda_travel_time(const tg_ctx *ctx, const tg_band *dem,
								const tg_travel_params *params, const tg_cell_factor *roughness,
								const tg_cell_factor *velocity, float *time, uint8_t *watershed,
								tg_error *err);

tg_status	tg_cuda_viewshed(const tg_ctx *ctx, const tg_band *dem, const tg_viewshed_params *params,
							 float *out, tg_error *err);

tg_status	tg_cuda_viewshed_count(const tg_ctx *ctx, const tg_band *dem,
								   const tg_viewshed_params *params, const int *cols,
								   const int *rows, int n, uint32_t *count, tg_error *err);

/* Node arrays allocated with ctx's allocator, as tg_bmmq_build documents. */
tg_status	tg_cuda_bmmq_build(const tg_ctx *ctx, const tg_band *tiles, int ntiles,
							   const double *bounds, int nbounds, tg_bmmq_tree *trees,
							   tg_error *err);

/*
 * drainage.c's passes over D8 receivers.  down: per cell the receiver's
 * neighbour index, TG_NO_DIRECTION where the path ends, TG_DOWN_NODATA on
 * nodata.  Labels: a cell's is its mark where it has one (mark NULL: the
 * path ends, numbered from 1 in row-major order), 0 on nodata and where its
 * path ends unmarked, else its receiver's.  Orders: Strahler (or Shreve
 * where shreve) over the cells where stream[] is nonzero, 0 elsewhere.
 */
tg_status	tg_cuda_drainage_labels(const tg_ctx *ctx, int width, int height, const uint8_t *down,
									const uint32_t *mark, uint32_t *labels, tg_error *err);
tg_status	tg_cuda_stream_order(const tg_ctx *ctx, int width, int height, const uint8_t *down,
								 const uint8_t *stream, bool shreve, uint32_t *order, tg_error *err);

/* ------------------------------------------------------------------------
 * The CPU backend (the *_cpu.c files of src/core)
 * ------------------------------------------------------------------------ */

tg_status	tg_cpu_slope(const tg_ctx *ctx, const tg_band *dem,
						 const tg_slope_params *params, float *out, tg_error *err);

/* Hydrology on the CPU: the fill surface, the routing, accumulation. */
tg_status	tg_cpu_decode(const tg_ctx *ctx, const tg_band *dem, double **z, tg_error *err);
bool		tg_cpu_is_outlet(const double *z, int W, int H, int x, int y);
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
tg_status	tg_cpu_fill(const tg_ctx *ctx, const tg_band *dem, const tg_fill_params *params,
						double out_nodata, void *out, tg_error *err);

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

/* The routing as the per-cell formulas of tg_hydro.h read it. */
static inline tg_route_view
tg_cpu_route_view(const tg_route *r, double threshold)
{
	tg_route_view v = {r->width, r->height, r->routing, threshold, r->d8, r->frac};

	return v;
}

tg_status	tg_cpu_route_build(const tg_ctx *ctx, const tg_band *dem,
							   const tg_flow_params *p, tg_route *r, tg_error *err);

/*
 * Flat-mask values decided elsewhere (route_strips.c: flats that extend
 * beyond a band): mask[j] replaces the local value of cell cell[j].
 */
typedef struct tg_flat_masks
{
	size_t		count;
	const size_t *cell;
	const int32_t *mask;
} tg_flat_masks;

/*
 * A part's routing and D8 accumulation (parts.c's link) on the device: z
 * the routing surface of `rows` rows (NaN: nodata), the part's own being
 * own_rows of them from own0, routed with `given` as tg_cpu_route_surface
 * routes them (p's geometry that of the rows); out, for the own rows, their
 * directions (D8 indices) and the accumulation of `weight` (own rows) with
 * directions out of them taken as exits, as tg_cpu_accumulate gives it.
 */
tg_status	tg_cuda_part_d8(const tg_ctx *ctx, const double *z, int W, int rows, int own0, int own_rows,
							const tg_flow_params *p, const tg_flat_masks *given, const double *weight,
							uint8_t *d8, double *acc, tg_error *err);

/*
 * Flats of at least this many cells are resolved in strips of rows on the
 * call's threads, smaller ones each by a walk on one thread: the two ways
 * give the same distances, which the tests check by sending every flat
 * down each.
 */
extern int64_t tg_flat_strip_cells;
/* Rows of a flat per strip, at least (tests set fewer to cut small flats in many strips). */
extern int	tg_flat_strip_rows;

/*
 * The routing of a surface as it is (tg_cpu_route_build does the decoding
 * and filling): takes z (r->z; freed with the route, or on failure).
 */
tg_status	tg_cpu_route_surface(const tg_ctx *ctx, double *z, int W, int H,
								 const tg_flow_params *p, const tg_flat_masks *given,
								 tg_route *r, tg_error *err);
void		tg_route_free(const tg_ctx *ctx, tg_route *r);

/*
 * route_cache.c: the routing of a DEM, built or (when ctx->route_cache_limit
 * allows) kept from an earlier call on the same DEM and parameters.  kept:
 * the cache owns it; give it back with tg_cpu_route_put either way.  The
 * topological order of the kept routing can be kept beside it.
 */
tg_status	tg_cpu_route_get(const tg_ctx *ctx, const tg_band *dem, const tg_flow_params *p,
							 tg_route *r, bool *kept, tg_error *err);
void		tg_cpu_route_put(const tg_ctx *ctx, tg_route *r, bool kept);
const uint32_t *tg_cpu_route_order(const tg_route *r, size_t *len, int *levels,
								   const uint32_t **level_start);
/*
 * accum_cpu.c: the valid cells in level order (Kahn's frontier rounds), with
 * level_start (room for cells + 1) where each level begins; within a level
 * the order depends on the threads.
 */
tg_status	tg_cpu_route_levels(const tg_ctx *ctx, const tg_route *r, uint32_t *order, size_t *count,
								uint32_t *level_start, int *levels, tg_error *err);
void		tg_cpu_route_keep_order(const tg_ctx *ctx, const tg_route *r, const uint32_t *order,
									const uint32_t *level_start, size_t len, int levels);
/*
 * ESRI codes (d8) and shares (frac, 8 planes) of a routing, through the
 * accumulation's share formula (fdd8 needs acc; NULL for the others).
 */
tg_status	tg_cpu_export_directions(const tg_ctx *ctx, const tg_route *r, const tg_flow_params *p,
									 const double *acc, uint8_t *d8, float *frac, tg_error *err);
/* The CPU side of tg_flow_direction and tg_hydrology (tg_core.h). */
tg_status	tg_cpu_flow_direction(const tg_ctx *ctx, const tg_band *dem, const tg_flow_params *p,
								  uint8_t *d8, float *frac, tg_error *err);
tg_status	tg_cpu_hydrology(const tg_ctx *ctx, const tg_band *dem, const tg_band *weight,
							 const tg_flow_params *p, tg_accum_method method, tg_accum_units units,
							 const tg_flow_products *out, tg_error *err);

/*
 * Flats that reach over the edges of rows [y0, y0 + nrows) of a surface z
 * (W x count, NaN = nodata, with rows around them), as those rows alone join
 * them: keep() hears each of their cells in those rows, in raster order (its
 * index in z), with its seeds (next to a draining cell of equal elevation,
 * next to a higher one) and its flat's number among them (0, 1, ... in the
 * order of their first cells).  On the call's threads (route_cpu.c).
 * Their masks, once the breadth-first distances over the whole flats
 * are known (towards the drains, away from higher ground, and the flat's
 * greatest distance away), are route_cpu.c's M = 2 T + (H - A), 0 where
 * undrained.
 */
#define TG_SEED_DRAINS 1
#define TG_SEED_HIGHER 2
typedef tg_status (*tg_crossing_flat_fn) (void *arg, size_t i, uint8_t seed, int64_t flat, tg_error *err);
tg_status	tg_crossing_flats(const tg_ctx *ctx, const double *z, int W, int count, int y0, int nrows,
							  tg_crossing_flat_fn keep, void *arg, tg_error *err);

/*
 * The two breadth-first distances over flats (towards the drains, away from
 * higher ground), in place, on the call's threads (route_cpu.c).  A cell
 * joins its 8 neighbours of the same flat number.  Every cell of the flats
 * taken in columns [x0, x1] and rows [y0, y1] (flat `only`, or every flat
 * when it is negative) holds where each distance starts (TG_FLAT_FAR where
 * it does not) and is left with min over the cells c' of its flat of
 * start(c') + steps(c', c), TG_FLAT_FAR where none reaches it.  Starting
 * from distances already so computed, of which `lowered` lists the cells
 * whose start fell since (raster order, per distance), gives the same and
 * walks only from those; lowered NULL scans every cell.  queued[] must be
 * 0 on those cells and is left so.
 */
#define TG_FLAT_FAR INT32_MAX
typedef struct tg_flat_grid
{
	int			W,
				H;
	const int32_t *id;			/* per cell: its flat's number; negative off the flats */
	int32_t    *d[2];			/* per cell: towards the drains, away from higher ground */
	uint8_t    *queued[2];		/* per cell and distance: FIFO marks */
} tg_flat_grid;
typedef struct tg_flat_lowered
{
	const uint32_t *cells[2];
	size_t		n[2];
} tg_flat_lowered;
tg_status	tg_flat_steps(const tg_ctx *ctx, const tg_flat_grid *g, int32_t only, int x0, int x1, int y0,
						  int y1, const tg_flat_lowered *lowered, tg_error *err);

static inline int32_t
tg_flat_mask_value(int32_t towards, int32_t away, int32_t height)
{
	return towards > 0 ? 2 * towards + (away > 0 ? height - away : 0) : 0;
}

/*
 * D8 flow across strips of rows, after Barnes (2017) (route_strips.c; used
 * within one server and across servers, parts.c).  Cells are numbered
 * row * width + column over the whole grid.  An exit is a cell whose
 * receiver lies in another strip, with the water leaving by it; a strip's
 * ends tell for each cell of its first and last rows the exit its path
 * leaves by.  tg_strips_flow carries the water of every exit along the
 * strips' paths (sorting exits and strips) and gives what enters each
 * receiver, by cell.
 */
#define TG_NO_CELL (-1)

typedef struct tg_strip_exit
{
	int64_t		cell;
	int64_t		receiver;
	double		acc;			/* the strip's own accumulation, then the total leaving */
} tg_strip_exit;

typedef struct tg_strip_inflow
{
	int64_t		cell;
	double		amount;
} tg_strip_inflow;

typedef struct tg_strip_ends
{
	int			row0;
	int			nrows;
	int64_t    *dest;			/* 2 * width: the first row's exits, then the last row's */
} tg_strip_ends;

tg_status	tg_strip_link(const tg_ctx *ctx, const tg_route *strip, const double *acc, int row0,
						  tg_strip_exit **exits, size_t *nexits, size_t *cap, int64_t *dest, tg_error *err);
tg_status	tg_strips_flow(const tg_ctx *ctx, int W, tg_strip_exit *exits, size_t n, tg_strip_ends *strips,
						   int nstrips, tg_strip_inflow **inflows, size_t *ninflows, tg_error *err);

/*
 * cell_weights.c: accumulation weights of a grid (geometry g): the weight
 * band (nodata counts 0, NULL for 1) times the cell area unless units are
 * cells; and the division of an accumulated area by the contour width that
 * makes it specific.
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
/* weight: per-cell weights (tg_cell_weights), NULL for 1 each */
tg_status	tg_cpu_accumulate(const tg_ctx *ctx, const tg_route *r, const tg_flow_params *p,
							  const double *weight, tg_accum_method method, double *acc,
							  tg_error *err);

/*
 * factors.c: a factor decoded for the backends: a band becomes n doubles
 * (NaN for nodata), a constant stays one; positive: values <= 0 are refused
 * (else values < 0), naming the factor and the first such cell.
 */
tg_status	tg_factor_decode(const tg_ctx *ctx, const tg_band *dem, const tg_factor *f,
							 const char *name, bool positive, tg_cell_factor *out, tg_error *err);

/* factors: R, K, C, P */
tg_status	tg_cpu_rusle(const tg_ctx *ctx, const tg_band *dem, const tg_rusle_params *p,
						 const tg_cell_factor factors[4], float *ls, float *soil_loss, tg_error *err);
tg_status	tg_cpu_travel_time(const tg_ctx *ctx, const tg_band *dem, const tg_travel_params *p,
							   const tg_cell_factor *roughness, const tg_cell_factor *velocity,
							   float *time, uint8_t *watershed, tg_error *err);

tg_status	tg_cpu_bmmq_build(const tg_ctx *ctx, const tg_band *tiles, int ntiles,
							  const double *bounds, int nbounds, tg_bmmq_tree *trees,
							  tg_error *err);

tg_status	tg_cpu_viewshed(const tg_ctx *ctx, const tg_band *dem, const tg_viewshed_params *p,
							float *out, tg_error *err);
tg_status	tg_cpu_viewshed_count(const tg_ctx *ctx, const tg_band *dem, const tg_viewshed_params *p,
								  const int *cols, const int *rows, int n, uint32_t *count,
								  tg_error *err);

/*
 * The snapping choice of tg_snap_pour_point on a given D8 accumulation in
 * cells (NULL allowed for distance 0): shared with the basins of many pour
 * points, which compute that accumulation once.
 */
tg_status	tg_snap_choose(const tg_band *dem, const tg_snap_params *p, const double *acc, int *col, int *row,
						   tg_error *err);

#ifdef __cplusplus
}
#endif

#endif							/* TG_BACKENDS_H */
