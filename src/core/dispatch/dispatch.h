/*
 * dispatch.h — the operations on one grid in memory, each on the backend the
 * dispatcher's policy chooses (dispatch.c), and the interface of the CUDA
 * backend behind them (cuda/).
 *
 * One policy for every operation: cpu always the CPU; gpu the GPU, or
 * TG_ENODEVICE with the reason; auto the GPU when one is ready and the input
 * has at least ctx->min_cells_for_gpu cells, else the CPU, and the CPU again
 * where the device runs out of memory.  What ran, and how long it took, goes
 * to ctx->stats.  The operations' parameters are tg_core.h's (the glue fills
 * them into a tg_op).
 */
#ifndef TG_DISPATCH_H
#define TG_DISPATCH_H

#include "tg_core.h"
#include "hydro/hydro.h"
#include "hydro/flats/flats.h"

#ifdef __cplusplus
extern "C"
{
#endif

/* ------------------------------------------------------------------------
 * The operations (dispatch.c)
 * ------------------------------------------------------------------------ */
/*
 * Horn (1981) slope of `dem` into out (width*height floats).
 *
 * Same arithmetic as PostGIS' ST_Slope: a neighbour outside the raster or
 * nodata takes the centre value; a nodata (or NaN) centre gives out_nodata.
 * dz/dx = ((c+2f+i) - (a+2d+g)) / pixel_width,
 * dz/dy = ((g+2h+i) - (a+2b+c)) / pixel_height,
 * tan(slope) = sqrt(dzdx^2 + dzdy^2) / (8 * scale).
 */
tg_status	tg_slope(const tg_ctx *ctx, const tg_band *dem,
					 const tg_slope_params *params, float *out, tg_error *err);

/* Any of the local terrain derivatives from one pass (tg_core.h's tg_terrain_params): out[k],
 * width * height values of types[k], for products[k]; tg_slope is its slope alone. */
tg_status	tg_terrain(const tg_ctx *ctx, const tg_band *dem, const tg_terrain_params *params,
					   void *const *out, tg_error *err);

/*
 * Depression filling: the minimal surface W >= Z in which every valid cell
 * drains to an outlet, W(c) = max(Z(c), min over neighbours n of inc(W(n)))
 * for non-outlet cells, W = Z at outlets, where inc(w) = w for epsilon = 0
 * and otherwise the larger of w + epsilon and the next representable value
 * above w in out_type.  This surface is unique, so every method and backend
 * returns the same values bit for bit.  out receives width * height values of
 * out_type; nodata cells (NaN or the band's nodata) get out_nodata.
 *
 * TG_FILL_BREACH instead lowers cells, never raising one: complete breaching
 * after Lindsay (2016).  A priority-flood from the outlets (ties to the
 * smaller cell index) links every cell to the cell it was reached from; at
 * each pit (a valid non-outlet cell with no valid neighbour lower), in the
 * flood's order, the cells along those links are lowered to the pit's
 * elevation (epsilon > 0: each the dec() of the one before, the mirror of
 * inc()) until one is already that low, the outlet included.  Every valid
 * cell then drains to an outlet through cells no higher than itself (flats
 * where epsilon is 0, resolved by the flow routing like a fill's).  CPU only
 * (the result depends on the flood's order).
 */
tg_status	tg_fill(const tg_ctx *ctx, const tg_band *dem, const tg_fill_params *params,
					double out_nodata, void *out, tg_error *err);

/*
 * Flow directions of a DEM.  D8: d8[i] = ESRI code (1..128) of the receiver,
 * 0 for an outlet or an undrained cell, 255 for nodata.  Multiple-flow
 * routings: frac[k * n + i] = the share of cell i's outflow that goes to
 * neighbour k (0 where none; the shares of a draining cell sum to 1), NaN for
 * nodata.  Exactly one of d8 / frac is used, by routing.
 * Flats (after filling) are drained by Barnes et al. (2014)'s combined
 * gradient towards lower and away from higher terrain.
 */
tg_status	tg_flow_direction(const tg_ctx *ctx, const tg_band *dem,
							  const tg_flow_params *params, uint8_t *d8, float *frac,
							  tg_error *err);

/*
 * Flow accumulation of a DEM: every valid cell contributes its weight (1, or
 * the weight band's value; nodata weights count 0) to itself and, split by
 * the routing, to every cell downstream.  out: width * height doubles, NaN
 * where the DEM is nodata.  All methods and backends agree: D8 exactly,
 * multiple-flow routings within rounding (1e-6 relative).
 */
tg_status	tg_flow_accumulation(const tg_ctx *ctx, const tg_band *dem,
								 const tg_band *weight, const tg_flow_params *params,
								 tg_accum_method method, tg_accum_units units,
								 double *out, tg_error *err);

/*
 * tg_flow_accumulation plus the routing surface and the receivers the
 * accumulation used (fdd8: D8 where that accumulation reaches the threshold).
 */
tg_status	tg_hydrology(const tg_ctx *ctx, const tg_band *dem, const tg_band *weight,
						 const tg_flow_params *params, tg_accum_method method,
						 tg_accum_units units, const tg_flow_products *out, tg_error *err);

/*
 * LS factor after Mitasova et al. (1996) and RUSLE soil loss:
 *     LS = (m + 1) (A s / a0)^m (sin b / b0)^n        A = R K LS C P
 * with A the flow accumulation in cells under params->flow (each cell counts
 * itself), s the cell width sqrt(dx dy) (metric per row on geographic
 * rasters) and b the Horn slope of the routing surface (the filled DEM with
 * flow.fill), neighbours outside the raster or nodata taking the centre's
 * value as in ST_Slope.  ls and soil_loss: width * height floats, NaN where
 * the DEM (for soil_loss also a factor) is nodata; either may be NULL.
 * Backends agree within 1e-6 relative (pow rounds differently on the GPU).
 */
tg_status	tg_rusle(const tg_ctx *ctx, const tg_band *dem, const tg_rusle_params *params,
					 float *ls, float *soil_loss, tg_error *err);

/*
 * Travel time along D8 paths (Zhao et al. 2010).  A cell's step to its
 * receiver takes t = n L / (K max(S, min_slope)^b), L the distance to the
 * receiver and S the drop of the routing surface over L; a cell's time is
 * the sum of the steps from it down to the end of its path, where the time
 * is 0.  With an outlet, paths end there and cells whose path does not pass
 * it get NaN; without, every path ends at its own outlet (a cell without a
 * receiver).  time: width * height floats (NaN for nodata), may be NULL;
 * watershed: 1 for cells draining through the outlet (itself included), 0
 * for other cells, 255 for nodata; needs an outlet; may be NULL.
 * Step times that meet a nodata factor are NaN, and so is every time
 * upstream of them.  Times agree within 1e-6 relative across backends (the
 * GPU sums each path by pointer jumping, in another order); watersheds
 * exactly.
 */
tg_status	tg_travel_time(const tg_ctx *ctx, const tg_band *dem, const tg_travel_params *params,
						   float *time, uint8_t *watershed, tg_error *err);

/*
 * Pour point snapping: the valid cell of highest D8 accumulation (in cells,
 * on the routing surface of params->flow) among the cell holding the point
 * and the cells whose centre lies within `distance` of it; ties go to the
 * nearer centre, then to the first cell in row-major order.  Distances are
 * measured on the cell spacing of the point's row (tg_row_spacing: metres on
 * geographic grids, as for a viewshed's max_distance).  With distance 0 the
 * cell holding the point.  No valid candidate: TG_EDATA.  The accumulation
 * runs on ctx's backend through tg_flow_accumulation (exact integers on
 * both); the choice is made on the host, so both backends pick the same cell.
 */
tg_status	tg_snap_pour_point(const tg_ctx *ctx, const tg_band *dem, const tg_snap_params *params,
							   int *col, int *row, tg_error *err);

/*
 * out: width * height floats, NaN where the DEM is nodata or the cell is out
 * of range.  The observer's own cell is visible, with angle NaN and height 0.
 * Nodata cells neither block nor are seen.  CPU and GPU R2 give identical
 * output.
 */
tg_status	tg_viewshed(const tg_ctx *ctx, const tg_band *dem, const tg_viewshed_params *params,
						float *out, tg_error *err);

/*
 * Cumulative viewshed: count[i] = how many of the n observers (cells
 * cols[k], rows[k]; params' own observer is ignored) see cell i under R2.
 * The DEM stays on the device for the whole batch.  Nodata and out-of-range
 * cells count 0; an observer outside the raster or on nodata is refused,
 * named by its position in the list.
 */
tg_status	tg_viewshed_count(const tg_ctx *ctx, const tg_band *dem, const tg_viewshed_params *params,
							  const int *cols, const int *rows, int n, uint32_t *count,
							  tg_error *err);

/* down[] of drainage.c's passes on a nodata cell (beside TG_NO_DIRECTION: no receiver) */
#define TG_DOWN_NODATA 0xFE

/*
 * One step of a call on the backend the dispatcher's policy chooses for
 * `cells`: gpu where it chooses the GPU, cpu otherwise and where, under
 * auto, the device runs out of memory.  For the passes of a call already
 * open (no statistics reset, no phases of its own): drainage's passes, a
 * strip's and a part's D8 routing and accumulation call the CUDA backend
 * through it, and so do the seams' fill scan and first walk of flats.
 */
typedef tg_status (*tg_step_fn) (const tg_ctx *ctx, const void *args, tg_error *err);

tg_status	tg_run_step(const tg_ctx *ctx, int64_t cells, tg_step_fn cpu, tg_step_fn gpu, const void *args,
						tg_error *err);

/*
 * The flats that cross the edges of rows [y0, y0 + nrows) of z (32BF or
 * 64BF, NaN: nodata), as flats.h's tg_cpu_crossing_flats lists them, listed
 * as a step of the call (tg_run_step): a strip's or a part's scan.
 */
tg_status	tg_crossing_flats(const tg_ctx *ctx, const tg_band *z, int y0, int nrows, tg_crossing_list *list,
							  tg_error *err);

/*
 * Whether the steps of a call can run: with backend gpu, a usable device
 * (else TG_ENODEVICE, as the first step would fail), checked before a call
 * made of many steps reads anything.
 */
tg_status	tg_backend_ready(const tg_ctx *ctx, tg_error *err);

/* ------------------------------------------------------------------------
 * The CUDA backend (cuda/, or cuda/tg_cuda_stub.c without nvcc).  Its entry
 * points never throw, never longjmp, free every device buffer on every path
 * and report through tg_error; they are called from the calling thread of a
 * core call only, and only through the dispatcher: by dispatch.c's entry
 * points above, and by the gpu steps handed to tg_run_step (drainage's
 * passes, a strip's and a part's fill scan, D8 routing and accumulation and
 * crossing flats, the walk of the flats across them).  Each takes the same
 * arguments as its CPU counterpart (tg_cpu_* in the domain folders, the
 * seams' own for the fill scan and the walk).
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
 * The most device memory the buffers of this process held at once since the
 * last call of tg_cuda_peak_restart (the stream-ordered pool's high mark);
 * 0 without a device.
 */
void		tg_cuda_peak_restart(void);
size_t		tg_cuda_peak_bytes(void);

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

/*
 * For the tests: the room of a band of streamed products in the shared
 * pinned block (tg_rows_sink), 0 = half of it; a row of tiles beyond it has
 * staging of its own.
 */
extern size_t tg_stream_slice_bytes;

/* out[k]: product k's plane (tg_terrain) */
tg_status	tg_cuda_terrain(const tg_ctx *ctx, const tg_band *dem, const tg_terrain_params *params,
							void *const *out, tg_error *err);

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

/* An amount added at a cell of the grid (cells numbered row * width + column). */
typedef struct tg_cell_amount
{
	int64_t		cell;
	double		amount;
} tg_cell_amount;

/*
 * What each own cell of a part puts into its D8 accumulation on the device,
 * as the threads' dense weights would hold it: cell[i] where `cell` is
 * given (per own cell), else its row's row[y] (per own row: a grid without
 * a weight raster need not send a plane of them); then add[j].amount added
 * to own cell add[j].cell - first, in their order (cells ascending, own).
 */
typedef struct tg_part_weights
{
	const double *cell;
	const double *row;
	const tg_cell_amount *add;
	size_t		nadd;
	int64_t		first;
} tg_part_weights;

/*
 * The D8 paths out of a part's own rows from their first and last rows (2 *
 * W cells: the first row's, then the last's; one row alone: twice): each
 * cell's direction and accumulation, and the own cell (numbered from the
 * first own row's first) its path leaves the own rows from, TG_NO_EXIT
 * where the path ends in them.  What the seams' link reads
 * (scale/seams/flow_seams.c), without the rows between.
 */
#define TG_NO_EXIT UINT32_MAX

typedef struct tg_edge_paths
{
	uint8_t    *d8;
	double	   *acc;
	uint32_t   *exit;
} tg_edge_paths;

/* What tg_cuda_part_d8 copies back of the own rows, each where given. */
typedef struct tg_part_d8_out
{
	uint8_t    *d8;				/* directions (D8 indices) */
	double	   *acc;			/* the accumulation */
	uint16_t   *receivers;		/* receiver masks */
	tg_edge_paths edges;		/* the paths out (edges.exit given: all three) */
} tg_part_d8_out;

/*
 * A part's routing and D8 accumulation (scale/parts/'s link; a strip's in
 * scale/strips/) on the device: z the routing surface's rows (32BF or 64BF,
 * NaN: nodata), the part's own being own_rows of them from own0, routed with
 * `given` as tg_cpu_route_surface routes them (p's geometry that of the
 * rows); out, for the own rows, their directions and the accumulation of
 * `weight` with directions out of them taken as exits, as tg_cpu_accumulate
 * gives it, each cell's receiver mask, as tg_route_receivers, and the paths
 * out of them, as tg_edge_paths_of.
 */
tg_status	tg_cuda_part_d8(const tg_ctx *ctx, const tg_band *z, int own0, int own_rows,
							const tg_flow_params *p, const tg_flat_masks *given,
							const tg_part_weights *weight, const tg_part_d8_out *out, tg_error *err);

/*
 * The most own rows of W cells whose tg_cuda_part_d8 (two rows around them
 * on each side) fits the device's budget, a sixteenth of it left to the
 * crossing flats' masks: however many there are, they go to the device in
 * batches of what the budget leaves, tg_given_masks_batch at most (a
 * variable for the tests, which set it small).
 */
extern size_t tg_given_masks_batch;
tg_status	tg_cuda_part_d8_rows(const tg_ctx *ctx, int W, const tg_flow_params *p, int64_t *rows,
								 tg_error *err);

tg_status	tg_cuda_crossing_flats(const tg_ctx *ctx, const tg_band *z, int y0, int nrows, tg_crossing_list *list,
								   tg_error *err);

/*
 * The first walk of the flats across seams (scale/seams/flat_seams.c) on the
 * device: n crossing cells linked as tg_crossing_neighbours reads them, each
 * distance (d0 towards the drains, d1 away from higher ground) at 1 on its
 * seeds and TG_FLAT_FAR elsewhere, as the link leaves them; walked in place,
 * level by level, to every cell its seeds reach.
 */
tg_status	tg_cuda_seam_flats_walk(const tg_ctx *ctx, size_t n, const uint8_t *nbr, const uint32_t *up,
									const uint32_t *down, int32_t *d0, int32_t *d1, tg_error *err);

/*
 * A strip's fill scan (scale/seams/fill_seams.c) on the device: rows
 * [y0, y0 + nrows) of z (W x count, NaN = nodata, with the row above and the
 * row below where there is one) flooded from their outlets (label 0) and
 * from their first row (labels top_base + x, where there is a row above)
 * and last row (bottom_base + x, where there is a row below).  edges: every
 * pair of labels that meet, each at the lowest height max(lf, lf') of the
 * neighbours where they do (a pair may be listed more than once; arrays
 * allocated with ctx's allocator, the caller frees them); first and last:
 * the labels of the first and last rows (W each; 0 on nodata).  The labels
 * inside differ from the CPU's flood, but the levels solved from them do
 * not.
 */
typedef struct tg_scan_edges
{
	size_t		n;
	uint32_t   *a;
	uint32_t   *b;
	double	   *height;
} tg_scan_edges;

tg_status	tg_cuda_fill_scan(const tg_ctx *ctx, const double *z, int W, int count, int y0, int nrows,
							  uint32_t top_base, uint32_t bottom_base, tg_scan_edges *edges, uint32_t *first,
							  uint32_t *last, tg_error *err);

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

#endif							/* TG_DISPATCH_H */
