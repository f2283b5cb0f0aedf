/*
 * strips.h — a coverage beyond the memory budget, in strips of whole tile
 * rows on one server (scale/strips/): strips.c runs each operation over
 * them, route_strips.c routes and accumulates them, the seams between them
 * stitched as scale/seams/ does.  Internal to the core.
 */
#ifndef TG_STRIPS_H
#define TG_STRIPS_H

#include "scale/seams/seams.h"

/* op in strips beyond the memory budget (strips.c), where tg_op_in_strips allows it. */
tg_status	tg_run_strips(const tg_ctx *ctx, const tg_op *op, const tg_job *job, tg_error *err);

/* Rows [row0, row0 + nrows) and columns [col0, col0 + ncols) of a grid. */
typedef struct tg_grid_window
{
	int			row0;
	int			nrows;
	int			col0;
	int			ncols;
} tg_grid_window;

/*
 * A local operation (slope, the terrain derivatives) over a window of the
 * grid only, read and computed with its halo: that of the tiles a job wants,
 * where the tiles around are read for their edge cells alone (a refresh).
 */
tg_status	tg_run_local_window(const tg_ctx *ctx, const tg_op *op, const tg_job *job, const tg_grid_window *w,
								tg_error *err);

/*
 * Flow directions and accumulation of a grid larger than memory, in strips
 * of rows (route_strips.c, CPU): the same directions as tg_flow_direction and
 * the same accumulation as tg_flow_accumulation (D8 in cells exactly, weighted
 * and multiple-flow sums to rounding).  Every call gives z, the routing
 * surface (filled or not, as p->fill says the caller prepared it; 32BF or
 * 64BF, NaN = nodata) of rows [row0 - 2, row0 + nrows + 2) clipped to the
 * grid.
 *   1. scan every strip, top to bottom; solve_flats;
 *   2. directions: tg_route_strips_directions of any strip (d8: ESRI codes,
 *      frac: 8 planes of shares, either NULL);
 *   3. D8 accumulation: link every strip (any order), solve_flow, then
 *      accumulate any strip (acc: nrows * width, in `units`; weight: the
 *      strip's own rows of the weight band, nodata counting 0, or NULL;
 *      receivers: tg_hydrology's masks, or NULL).
 *   4. multiple-flow accumulation (fd8, mfd-md, dinf, anisotropic): spread
 *      every strip (any order: routed and accumulated alone, its shares and
 *      accumulation written to `spill` from `base` on, the water leaving it
 *      kept), settle (that water carried on until none is left), then
 *      tg_route_strips_flow_result of any strip (receivers as in 3).  The spill holds
 *      tg_route_strips_spill_bytes() from `base`.
 * fdd8 is not available.  Memory: about tg_route_strips_bytes_per_cell()
 * per cell of the strip being processed, plus what the flats that cross
 * strip boundaries take (tg_route_strips_flat_bytes) and 24 bytes per exit
 * (D8) or per cell the water leaving strips enters (multiple flow).
 */
typedef struct tg_route_strips tg_route_strips;

size_t		tg_route_strips_bytes_per_cell(tg_routing routing, bool accumulate);
tg_status	tg_route_strips_begin(const tg_ctx *ctx, const tg_flow_params *p, tg_accum_units units,
								  tg_route_strips **rb, tg_error *err);
tg_status	tg_route_strips_scan(const tg_ctx *ctx, tg_route_strips *rb, int row0, int nrows,
								 const tg_band *z, tg_error *err);
tg_status	tg_route_strips_solve_flats(const tg_ctx *ctx, tg_route_strips *rb, tg_error *err);
size_t		tg_route_strips_flat_cells(const tg_route_strips *rb);
/* Memory the crossing flats take while solving them (solving), or now (while scanning, or after). */
size_t		tg_route_strips_flat_bytes(const tg_route_strips *rb, bool solving);
/*
 * After solve_flats: the crossing cells' columns and masks (8 bytes a cell)
 * parked in the spill from `at` (8 bytes a crossing cell there), each strip's
 * window of them read back as it is routed.
 */
tg_status	tg_route_strips_park_flats(const tg_ctx *ctx, tg_route_strips *rb, const tg_spill *spill, size_t at,
									   tg_error *err);
tg_status	tg_route_strips_directions(const tg_ctx *ctx, tg_route_strips *rb, int row0, int nrows,
									   const tg_band *z, uint8_t *d8, float *frac, tg_error *err);
tg_status	tg_route_strips_link(const tg_ctx *ctx, tg_route_strips *rb, int row0, int nrows,
								 const tg_band *z, const tg_band *weight, tg_error *err);
tg_status	tg_route_strips_solve_flow(const tg_ctx *ctx, tg_route_strips *rb, tg_error *err);
tg_status	tg_route_strips_accumulate(const tg_ctx *ctx, tg_route_strips *rb, int row0, int nrows,
									   const tg_band *z, const tg_band *weight, double *acc,
									   uint16_t *receivers, tg_error *err);
tg_status	tg_route_strips_spread(const tg_ctx *ctx, tg_route_strips *rb, int row0, int nrows,
								   const tg_band *z, const tg_band *weight, const tg_spill *spill,
								   size_t base, tg_error *err);
tg_status	tg_route_strips_settle(const tg_ctx *ctx, tg_route_strips *rb, const tg_spill *spill,
								   size_t base, tg_error *err);
tg_status	tg_route_strips_flow_result(const tg_ctx *ctx, tg_route_strips *rb, int row0, int nrows,
										const tg_spill *spill, size_t base, double *acc,
										uint16_t *receivers, tg_error *err);
size_t		tg_route_strips_spill_bytes(const tg_route_strips *rb);
/* After settle: the sweeps over the strips and the windows processed. */
void		tg_route_strips_settled(const tg_route_strips *rb, int *sweeps, int64_t *windows);
void		tg_route_strips_end(const tg_ctx *ctx, tg_route_strips *rb);

#endif							/* TG_STRIPS_H */
