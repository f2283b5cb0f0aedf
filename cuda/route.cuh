/*
 * route.cuh — the routing on the device (route.cu) and the accumulations on
 * it (accum.cu), read by the chain (flow.cu) and catchment.cu.
 */
#ifndef TG_ROUTE_CUH
#define TG_ROUTE_CUH

#include "hydro.cuh"

/* Device copy of tg_route plus what the GPU pipeline keeps beside it. */
template <typename V>
struct device_route
{
	int			width = 0;
	int			height = 0;
	size_t		n = 0;
	tg_routing	routing = TG_ROUTE_D8;
	dbuf<V>		z;				/* routing surface, NaN = nodata */
	dbuf<uint8_t> kind;			/* KIND_* */
	dbuf<uint8_t> d8;			/* steepest receiver index or TG_NO_DIRECTION */
	dbuf<uint8_t> flat;
	dbuf<float> frac;			/* 8 planes of shares; multiple-flow only */

	tg_route_view view(double threshold) const
	{
		tg_route_view v = {width, height, routing, threshold, d8.p, frac.p};

		return v;
	}
};

/* Device bytes per cell that build_route holds at its peak. */
size_t		route_bytes_per_cell(const tg_band *dem, const tg_flow_params *p, size_t value_size);

/*
 * Upload the DEM and compute its routing on the device (fill with
 * p->fill).  rounds: relaxation rounds of the fill and the flats.  given:
 * flat-mask values decided elsewhere (a part's flats that cross its edges),
 * as tg_cpu_route_surface takes them.
 */
template <typename V>
tg_status	build_route(const tg_ctx *ctx, const tg_band *dem, const tg_flow_params *p,
						device_route<V> &r, double *transfer_ms, int *rounds, tg_error *err,
						const tg_flat_masks *given = nullptr);

/*
 * accum.cu: accumulate on a routing already on the device (auto: the tiled
 * D8 scheme for integer-valued weights, else indegree); *used names what ran.
 */
template <typename V>
tg_status	accumulate(const tg_ctx *ctx, const device_route<V> &route, const tg_flow_params *p,
					   const double *weight, tg_accum_method method, double *acc, int *rounds,
					   const char **used, tg_error *err);
/* Indegree on a D8 routing: one launch of chains from its sources (accum.cu). */
tg_status	d8_chains(const tg_ctx *ctx, const tg_route_view &r, const uint8_t *kind, const double *weight,
					  double *acc, uint16_t *links, uint32_t *indeg, uint32_t *order, int *launches,
					  tg_error *err);
/* Device bytes per cell of an accumulation by `method`, weights and result included. */
size_t		accumulation_bytes_per_cell(tg_accum_method method, tg_routing routing);

/* accum_tiled.cu: D8 accumulation in two levels, for integer-valued weights (sums exact in any order) */
tg_status	accumulate_d8_tiled(const tg_ctx *ctx, const tg_route_view &r, const uint8_t *kind,
								const double *weight, double *acc, int *rounds, tg_error *err);
size_t		tiled_bytes_per_cell(void);

#endif							/* TG_ROUTE_CUH */
