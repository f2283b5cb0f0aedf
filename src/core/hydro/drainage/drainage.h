/*
 * drainage.h — what an analyst computes after the accumulation
 * (hydro/drainage/): stream orders and links, basins, flow lengths, height
 * above the nearest drainage and the wetness index.  Each runs the flow
 * chain (tg_hydrology, on ctx's backend; D8 except for the wetness index),
 * then passes over its receivers on the host threads (orders and labels on
 * the device where the dispatcher chooses it): every backend and thread
 * count gives the same result.  Grids of 2^32 cells or more: TG_ELIMIT.
 * The parameters are tg_core.h's.  Internal to the core.
 */
#ifndef TG_DRAINAGE_H
#define TG_DRAINAGE_H

#include "dispatch/dispatch.h"

/* order: width * height; the stream cells' order, 0 elsewhere (nodata too). */
tg_status	tg_stream_order(const tg_ctx *ctx, const tg_band *dem, const tg_drainage_params *p,
							uint32_t *order, tg_error *err);

/*
 * The links of the streams of p, and the Strahler order of every cell as
 * tg_stream_order gives it.  net's arrays come from ctx's allocator; free
 * them with tg_stream_network_free.
 */
tg_status	tg_stream_network_build(const tg_ctx *ctx, const tg_band *dem, const tg_drainage_params *p,
									uint32_t *strahler, tg_stream_network *net, tg_error *err);
void		tg_stream_network_free(const tg_ctx *ctx, tg_stream_network *net);

tg_status	tg_basins(const tg_ctx *ctx, const tg_band *dem, const tg_basin_params *p, uint32_t *labels,
					  tg_error *err);

/*
 * length (NaN on nodata): downstream, the distance along the D8 path to its
 * end (an outlet, a pit, the edge of the raster); upstream, the longest D8
 * path from the divide down to the cell (0 on the divide).  Steps measure
 * the row's cell spacing of the cell they leave (metres on geographic grids).
 */
tg_status	tg_flow_length(const tg_ctx *ctx, const tg_band *dem, const tg_drainage_params *p,
						   float *length, tg_error *err);

/*
 * Height above the nearest drainage (Rennó et al. 2008, Nobre et al. 2011):
 * the routing surface's height of a cell above the first stream cell on its
 * D8 path (0 on streams; never negative on the filled surface); NaN on
 * nodata and where the path ends before it meets a stream.
 */
tg_status	tg_hand(const tg_ctx *ctx, const tg_band *dem, const tg_drainage_params *p,
					float *hand, tg_error *err);

/*
 * Topographic wetness index (Beven & Kirkby 1979): ln(a / tan b), a the
 * specific catchment area of p->flow's routing (TG_UNITS_SCA) and b the Horn
 * slope of the routing surface, tan b at least p->min_slope; NaN on nodata.
 */
tg_status	tg_wetness_index(const tg_ctx *ctx, const tg_band *dem, const tg_drainage_params *p,
							 float *twi, tg_error *err);

#endif							/* TG_DRAINAGE_H */
