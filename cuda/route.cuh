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

/*
 * Device bytes per cell of a routing: what build_route keeps for what follows
 * (surface, kinds, receivers, flat flags, shares), and its peak, which adds
 * the scratch of the flats (more than the raw band or the fill's copy).
 */
size_t		route_kept_bytes_per_cell(const tg_flow_params *p, size_t value_size);
constexpr size_t ROUTE_SCRATCH_BYTES_PER_CELL = 20;	/* distances, labels, heights, masks */
size_t		route_bytes_per_cell(const tg_flow_params *p, size_t value_size);

/*
 * Upload the DEM and compute its routing on the device (fill with
 * p->fill).  rounds: relaxation rounds of the fill and the flats.  given:
 * flat-mask values decided elsewhere (a part's flats that cross its edges),
 * as tg_cpu_route_surface takes them, given_batch of them at a time on the
 * device (all at once where 0).
 */
template <typename V>
tg_status	build_route(const tg_ctx *ctx, const tg_band *dem, const tg_flow_params *p,
						device_route<V> &r, double *transfer_ms, int *rounds, tg_error *err,
						const tg_flat_masks *given = nullptr, size_t given_batch = 0);

/*
 * Each cell's weight on the device: a plane of one per cell (a weight
 * raster), else one per row (the cell's area, or 1 in cells: a grid-sized
 * plane of them would cost 8 bytes a cell for height values), else 1.
 */
struct cell_weights
{
	const double *cell = nullptr;
	const double *row = nullptr;
	int			width = 0;

	__device__ double at(size_t c) const
	{
		return cell ? cell[c] : row ? row[c / (size_t) width] : 1.0;
	}
};

/*
 * accum.cu: accumulate on a routing already on the device (auto: the tiled
 * D8 scheme for integer-valued weights, else indegree); *used names what ran.
 * gather: the indegree and topological pulls of fixed-share routings read
 * each cell's inflowing shares gathered beside it (32 bytes a cell more, the
 * same sums, faster), where the call's peak with them fits the device.
 */
template <typename V>
tg_status	accumulate(const tg_ctx *ctx, const device_route<V> &route, const tg_flow_params *p,
					   cell_weights weight, tg_accum_method method, bool gather, double *acc, int *rounds,
					   const char **used, tg_error *err);
/* Indegree on a D8 routing: one launch of chains from its sources (accum.cu). */
tg_status	d8_chains(const tg_ctx *ctx, const tg_route_view &r, const uint8_t *kind, cell_weights weight,
					  double *acc, uint16_t *links, uint32_t *indeg, uint32_t *order, int *launches,
					  tg_error *err);
/*
 * Device bytes per cell of an accumulation by `method`: the result, the
 * weights where they are a plane, the method's own buffers (the gathered
 * shares where `gather`).
 */
size_t		accumulation_bytes_per_cell(tg_accum_method method, tg_routing routing, bool weight_plane,
										bool gather);

/* accum_tiled.cu: D8 accumulation in two levels, for integer-valued weights (sums exact in any order) */
tg_status	accumulate_d8_tiled(const tg_ctx *ctx, const tg_route_view &r, const uint8_t *kind,
								cell_weights weight, double *acc, int *rounds, tg_error *err);
size_t		tiled_bytes_per_cell(void);

#endif							/* TG_ROUTE_CUH */
