/*
 * flow.cu — the flow chain on the GPU behind tg_flow_direction,
 * tg_hydrology and a part's D8 link: the routing (route.cu) and the
 * accumulation (accum.cu) on the device, then the products the caller asked
 * for (directions, shares, routing surface, receivers) copied back or
 * streamed to its sink slice by slice.
 */
#include "route.cuh"

#include <algorithm>
#include <cstdio>

namespace
{
/* The products beside the accumulation: routing surface and receiver masks. */
template <typename V, typename O>
__global__ void
tgk_export_surface(const V *__restrict__ z, size_t n, O nodata, O *__restrict__ out)
{
	TG_GRID_STRIDE(i, n)
	{
		V			v = z[i];

		out[i] = isnan(v) ? nodata : (O) v;
	}
}

__global__ void
tgk_export_receivers(tg_route_view r, const uint8_t *__restrict__ kind,
					 const double *__restrict__ acc, uint16_t *__restrict__ mask_out)
{
	const size_t n = (size_t) r.width * r.height;

	TG_GRID_STRIDE(i, n)
	{
		uint16_t	mask = 0;

		if (kind[i] == KIND_NODATA)
			mask = TG_NODATA_RECEIVERS;
		else
			for (int k = 0; k < 8; k++)
				if (tg_route_share(&r, i, k, acc[i]) > 0)
					mask |= (uint16_t) (1u << k);
		mask_out[i] = mask;
	}
}

/* The products beside the accumulation, on the device: routing surface and receiver masks. */
template <typename V>
tg_status
export_products(const device_route<V> &route, const tg_flow_params *p, const double *d_acc,
				const tg_flow_products *out, dbuf<uint8_t> &d_surface, dbuf<uint16_t> &d_mask, tg_error *err)
{
	const size_t n = route.n;

	if (tg_flow_wants(out, 0))
	{
		const size_t size = out->surface_type == TG_PT_64BF ? sizeof(double) : sizeof(float);

		TG_CUDA_CHECK(d_surface.alloc(n * size), "allocating the routing surface");
		if (out->surface_type == TG_PT_64BF)
			tgk_export_surface<V, double><<<grid_for(n), 256>>>(route.z.p, n, out->surface_nodata,
																 (double *) d_surface.p);
		else
			tgk_export_surface<V, float><<<grid_for(n), 256>>>(route.z.p, n,
																(float) out->surface_nodata,
																(float *) d_surface.p);
		TG_CUDA_CHECK(cudaGetLastError(), "exporting the routing surface");
	}
	if (tg_flow_wants(out, 1))
	{
		TG_CUDA_CHECK(d_mask.alloc(n), "allocating receiver masks");
		tgk_export_receivers<<<grid_for(n), 256>>>(route.view(p->threshold), route.kind.p, d_acc,
													d_mask.p);
		TG_CUDA_CHECK(cudaGetLastError(), "exporting receivers");
	}
	return TG_OK;
}

/*
 * The products to the host: to the sink band by band where one is given,
 * else (or where no staging could be had) into the product planes, whole.
 * *copy_ms: the copies' device time.
 */
tg_status
fetch_products(const tg_ctx *ctx, const tg_band *dem, const tg_flow_products *asked, const double *d_acc,
			   const dbuf<uint8_t> &d_surface, const dbuf<uint16_t> &d_mask, double *copy_ms, tg_error *err)
{
	const size_t n = (size_t) dem->width * dem->height,
				surface_size = asked->surface_type == TG_PT_64BF ? sizeof(double) : sizeof(float);
	tg_flow_products out;
	event_timer down;
	tg_status	st;

	if (asked->sink)
	{
		const void *const dev[TG_SINK_PLANES] = {d_surface.p, d_mask.p, d_acc};
		const size_t elem[TG_SINK_PLANES] = {d_surface.p ? surface_size : 0, d_mask.p ? sizeof(uint16_t) : 0,
		sizeof(double)};

		st = tg_cuda_stream_rows(ctx, dev, elem, dem->width, dem->height, asked->sink, copy_ms, err);
		if (st != TG_OK || asked->sink->used)
			return st;
	}
	st = tg_flow_planes(ctx, asked, &out, err);
	if (st != TG_OK)
		return st;
	TG_CUDA_CHECK(down.init(), "creating timing events");
	TG_CUDA_CHECK(cudaEventRecord(down.start), "recording an event");
	TG_CUDA_CHECK(tg_cuda_copy_to_host(ctx, out.acc, d_acc, n * sizeof(double)),
				  "copying the accumulation back from the GPU");
	if (out.surface)
		TG_CUDA_CHECK(tg_cuda_copy_to_host(ctx, out.surface, d_surface.p, n * surface_size),
					  "copying the routing surface back from the GPU");
	if (out.receivers)
		TG_CUDA_CHECK(tg_cuda_copy_to_host(ctx, out.receivers, d_mask.p, n * sizeof(uint16_t)),
					  "copying receivers back from the GPU");
	TG_CUDA_CHECK(cudaEventRecord(down.stop), "recording an event");
	TG_CUDA_CHECK(cudaEventSynchronize(down.stop), "copying products back from the GPU");
	*copy_ms += down.elapsed();
	return TG_OK;
}

/* Each cell of row y divided by divisor[y] (IEEE division: the host's tg_to_sca bit for bit). */
__global__ void
tgk_divide_rows(const double *__restrict__ divisor, int width, size_t n, double *__restrict__ acc)
{
	TG_GRID_STRIDE(i, n)
		acc[i] = acc[i] / divisor[i / (size_t) width];
}

template <typename V>
tg_status
accumulation_impl(const tg_ctx *ctx, const tg_band *dem, const double *weight,
				  const double *row_weight, const double *row_divisor, const tg_flow_params *p,
				  tg_accum_method method, const tg_flow_products *products, tg_error *err)
{
	const size_t n = (size_t) dem->width * dem->height;
	const size_t products_bytes = (tg_flow_wants(products, 0) ? sizeof(double) : 0) +
		(tg_flow_wants(products, 1) ? sizeof(uint16_t) : 0);
	device_route<V> route;
	cell_weights w;
	dbuf<double> d_weight,
				d_row_weight,
				d_row_divisor,
				d_acc;
	dbuf<uint8_t> d_surface;
	dbuf<uint16_t> d_mask;
	event_timer prep,
				compute,
				up;
	double		transfer_ms = 0,
				down_ms = 0;
	int			route_rounds = 0,
				rounds = 0;
	const char *used = "";
	tg_status	st;

	/* the peak: the routing's build, its accumulation, or the products beside the result */
	auto peak = [&](bool gather) {
		return n * (route_kept_bytes_per_cell(p, sizeof(V)) +
					std::max({ROUTE_SCRATCH_BYTES_PER_CELL,
							  accumulation_bytes_per_cell(method, p->routing, weight != nullptr, gather),
							  sizeof(double) * (weight ? 2 : 1) + products_bytes}));
	};
	const bool	gather = tg_cuda_fits_budget(ctx, peak(true));

	st = tg_cuda_check_budget(ctx, peak(gather), "flow accumulation", err);
	if (st != TG_OK)
		return st;
	TG_CUDA_CHECK(prep.init(), "creating timing events");
	TG_CUDA_CHECK(compute.init(), "creating timing events");
	TG_CUDA_CHECK(up.init(), "creating timing events");

	TG_CUDA_CHECK(cudaEventRecord(prep.start), "recording an event");
	st = build_route<V>(ctx, dem, p, route, &transfer_ms, &route_rounds, err);
	if (st != TG_OK)
		return st;
	TG_CUDA_CHECK(cudaEventRecord(prep.stop), "recording an event");
	TG_CUDA_CHECK(d_acc.alloc(n), "allocating the accumulation");
	TG_CUDA_CHECK(cudaEventRecord(up.start), "recording an event");
	w.width = dem->width;
	if (weight)
	{
		TG_CUDA_CHECK(d_weight.alloc(n), "allocating weights");
		TG_CUDA_CHECK(tg_cuda_copy_to_device(ctx, d_weight.p, weight, n * sizeof(double)),
					  "copying weights to the GPU");
		w.cell = d_weight.p;
	}
	else
	{
		TG_CUDA_CHECK(d_row_weight.alloc(dem->height), "allocating row weights");
		TG_CUDA_CHECK(tg_cuda_copy_to_device(ctx, d_row_weight.p, row_weight,
											 (size_t) dem->height * sizeof(double)),
					  "copying row weights to the GPU");
		w.row = d_row_weight.p;
	}
	if (row_divisor)
	{
		TG_CUDA_CHECK(d_row_divisor.alloc(dem->height), "allocating contour widths");
		TG_CUDA_CHECK(tg_cuda_copy_to_device(ctx, d_row_divisor.p, row_divisor,
											 (size_t) dem->height * sizeof(double)),
					  "copying contour widths to the GPU");
	}
	TG_CUDA_CHECK(cudaEventRecord(up.stop), "recording an event");

	TG_CUDA_CHECK(cudaEventRecord(compute.start), "recording an event");
	st = accumulate<V>(ctx, route, p, w, method, gather, d_acc.p, &rounds, &used, err);
	if (st != TG_OK)
		return st;
	/* the receivers first: fdd8's read the accumulation in cells */
	st = export_products<V>(route, p, d_acc.p, products, d_surface, d_mask, err);
	if (st != TG_OK)
		return st;
	if (row_divisor)
	{
		tgk_divide_rows<<<grid_for(n), 256>>>(d_row_divisor.p, dem->width, n, d_acc.p);
		TG_CUDA_CHECK(cudaGetLastError(), "dividing by contour widths");
	}
	TG_CUDA_CHECK(cudaEventRecord(compute.stop), "recording an event");
	st = fetch_products(ctx, dem, products, d_acc.p, d_surface, d_mask, &down_ms, err);
	if (st != TG_OK)
		return st;
	TG_CUDA_CHECK(cudaEventSynchronize(compute.stop), "accumulating flow");

	if (ctx->stats)
	{
		/* the routing's device time (fill, flats) includes the DEM's upload */
		double		prep_ms = prep.elapsed() - transfer_ms;

		ctx->stats->prep_ms += prep_ms;
		ctx->stats->kernel_ms += prep_ms + compute.elapsed();
		ctx->stats->transfer_ms += transfer_ms + up.elapsed() + down_ms;
		ctx->stats->iterations = rounds;
		ctx->stats->chunks = route_rounds;
		snprintf(ctx->stats->method, sizeof ctx->stats->method, "%s", used);
	}
	return TG_OK;
}

__global__ void
tgk_export_directions(tg_route_view r, const uint8_t *__restrict__ kind,
					  const double *__restrict__ acc, uint8_t *__restrict__ codes,
					  float *__restrict__ frac_out)
{
	const size_t n = (size_t) r.width * r.height;

	TG_GRID_STRIDE(i, n)
	{
		bool		valid = kind[i] != KIND_NODATA;
		uint8_t		d = r.d8[i];

		if (codes)
			codes[i] = !valid ? 255 : d == TG_NO_DIRECTION ? 0 : (uint8_t) (1u << d);
		if (frac_out)
			for (int k = 0; k < 8; k++)
				frac_out[(size_t) k * n + i] = !valid ? NAN : (float) tg_route_share(&r, i, k, acc ? acc[i] : 0.0);
	}
}

template <typename V>
tg_status
direction_impl(const tg_ctx *ctx, const tg_band *dem, const tg_flow_params *p, uint8_t *d8,
			   float *frac, tg_error *err)
{
	const size_t n = (size_t) dem->width * dem->height;
	const bool	fdd8 = p->routing == TG_ROUTE_FDD8;
	device_route<V> route;
	dbuf<uint8_t> d_codes;
	dbuf<float> d_frac;
	dbuf<double> d_acc;
	event_timer compute,
				down;
	double		transfer_ms = 0;
	int			rounds = 0,
				acc_rounds = 0;
	tg_status	st;

	st = tg_cuda_check_budget(ctx, n * (route_bytes_per_cell(p, sizeof(V)) + (d8 ? 1 : 32) +
								(fdd8 ? accumulation_bytes_per_cell(TG_ACC_INDEGREE, TG_ROUTE_FDD8, false, false)
								 : 0)),
					  "flow direction", err);
	if (st != TG_OK)
		return st;
	TG_CUDA_CHECK(compute.init(), "creating timing events");
	TG_CUDA_CHECK(down.init(), "creating timing events");
	TG_CUDA_CHECK(cudaEventRecord(compute.start), "recording an event");
	st = build_route<V>(ctx, dem, p, route, &transfer_ms, &rounds, err);
	if (st != TG_OK)
		return st;
	if (fdd8)
	{
		/* fdd8 turns D8 where the accumulation (in cells) reaches the threshold */
		const char *used;

		TG_CUDA_CHECK(d_acc.alloc(n), "allocating the accumulation");
		st = accumulate<V>(ctx, route, p, cell_weights(), TG_ACC_INDEGREE, false, d_acc.p, &acc_rounds, &used,
						   err);
		if (st != TG_OK)
			return st;
	}
	if (d8)
		TG_CUDA_CHECK(d_codes.alloc(n), "allocating direction codes");
	if (frac)
		TG_CUDA_CHECK(d_frac.alloc(8 * n), "allocating shares");
	tgk_export_directions<<<grid_for(n), 256>>>(route.view(p->threshold), route.kind.p, d_acc.p,
												 d8 ? d_codes.p : nullptr, frac ? d_frac.p : nullptr);
	TG_CUDA_CHECK(cudaGetLastError(), "exporting directions");
	TG_CUDA_CHECK(cudaEventRecord(compute.stop), "recording an event");
	TG_CUDA_CHECK(cudaEventRecord(down.start), "recording an event");
	if (d8)
		TG_CUDA_CHECK(tg_cuda_copy_to_host(ctx, d8, d_codes.p, n),
					  "copying directions back from the GPU");
	if (frac)
		TG_CUDA_CHECK(tg_cuda_copy_to_host(ctx, frac, d_frac.p, 8 * n * sizeof(float)),
					  "copying shares back from the GPU");
	TG_CUDA_CHECK(cudaEventRecord(down.stop), "recording an event");
	TG_CUDA_CHECK(cudaEventSynchronize(down.stop), "computing flow directions");
	if (ctx->stats)
	{
		ctx->stats->kernel_ms += compute.elapsed();
		ctx->stats->transfer_ms += transfer_ms + down.elapsed();
		ctx->stats->iterations = acc_rounds;
		ctx->stats->chunks = rounds;
	}
	return TG_OK;
}

/* A part's weights spread from its rows' (tg_part_weights' row). */
__global__ void
tgk_weights_of_rows(const double *__restrict__ row, int W, size_t n, double *__restrict__ w)
{
	TG_GRID_STRIDE(i, n)
		w[i] = row[i / (size_t) W];
}

/* The amounts added to their cells in their order, as the threads add them: a run of one cell by its first. */
__global__ void
tgk_add_amounts(const tg_cell_amount *__restrict__ add, size_t nadd, int64_t first, size_t n,
				double *__restrict__ w)
{
	TG_GRID_STRIDE(j, nadd)
	{
		const int64_t cell = add[j].cell;
		double		v;

		if ((j > 0 && add[j - 1].cell == cell) || cell < first || (size_t) (cell - first) >= n)
			continue;
		v = w[cell - first];
		for (size_t k = j; k < nadd && add[k].cell == cell; k++)
			v += add[k].amount;
		w[cell - first] = v;
	}
}

/* What each of a part's own cells puts in (tg_part_weights), into d_w on the device. */
tg_status
part_weights_to_device(const tg_ctx *ctx, const tg_part_weights *w, int W, int own_rows, double *d_w,
					   tg_error *err)
{
	const size_t own = (size_t) W * own_rows;
	dbuf<double> d_row;
	dbuf<tg_cell_amount> d_add;

	if (w->cell)
		TG_CUDA_CHECK(tg_cuda_copy_to_device(ctx, d_w, w->cell, own * sizeof(double)),
					  "copying weights to the GPU");
	else if (w->row)
	{
		TG_CUDA_CHECK(d_row.alloc(own_rows), "allocating row weights");
		TG_CUDA_CHECK(cudaMemcpy(d_row.p, w->row, own_rows * sizeof(double), cudaMemcpyHostToDevice),
					  "copying row weights to the GPU");
		tgk_weights_of_rows<<<grid_for(own), 256>>>(d_row.p, W, own, d_w);
		TG_CUDA_CHECK(cudaGetLastError(), "spreading row weights");
	}
	else
		return tg_error_set(err, TG_EINVAL, "a part's accumulation needs its cells' or its rows' weights");
	if (w->nadd > 0)
	{
		TG_CUDA_CHECK(d_add.alloc(w->nadd), "allocating inflows");
		TG_CUDA_CHECK(tg_cuda_copy_to_device(ctx, d_add.p, w->add, w->nadd * sizeof(tg_cell_amount)),
					  "copying inflows to the GPU");
		tgk_add_amounts<<<grid_for(w->nadd), 256>>>(d_add.p, w->nadd, w->first, own, d_w);
		TG_CUDA_CHECK(cudaGetLastError(), "adding inflows");
	}
	return TG_OK;
}

/*
 * The paths out of a part's own rows, by pointer jumping: each own cell
 * holds the next cell of its path, or its end marked EXIT_FINAL (the own
 * cell it leaves from, or TG_NO_EXIT, which has the mark too); every round
 * each unfinished cell takes its next cell's pointer, so a pointer spans
 * at least twice as many cells as the round before and 31 rounds finish any
 * path of fewer than 2^31 cells.  A cell whose next cell changes within a
 * round reads its old or its new pointer: both lie on the path.
 */
constexpr uint32_t EXIT_FINAL = 0x80000000u;

__global__ void
tgk_exit_first_hop(const uint8_t *__restrict__ d8, int W, int rows, uint32_t *__restrict__ to)
{
	const size_t n = (size_t) W * rows;

	TG_GRID_STRIDE(i, n)
	{
		const int	k = d8[i];
		const int	ny = (int) (i / W) + (k == TG_NO_DIRECTION ? 0 : tg_nbr_dy(k));

		if (k == TG_NO_DIRECTION)
			to[i] = TG_NO_EXIT;
		else if (ny < 0 || ny >= rows)
			to[i] = EXIT_FINAL | (uint32_t) i;
		else
			to[i] = (uint32_t) ((size_t) ny * W + (int) (i % W) + tg_nbr_dx(k));
	}
}

__global__ void
tgk_exit_jump(uint32_t *to, size_t n, unsigned *unfinished)
{
	TG_GRID_STRIDE(i, n)
	{
		const uint32_t t = to[i];
		uint32_t	u;

		if (t & EXIT_FINAL)
			continue;
		u = to[t];
		to[i] = u;
		if (!(u & EXIT_FINAL))
			*unfinished = 1;
	}
}

/* The first and last rows' directions, accumulation and exits, side by side (tg_edge_paths). */
__global__ void
tgk_edge_paths(const uint8_t *__restrict__ d8, const double *__restrict__ acc, const uint32_t *__restrict__ to,
			   int W, int rows, uint8_t *__restrict__ e_d8, double *__restrict__ e_acc, uint32_t *__restrict__ e_exit)
{
	TG_GRID_STRIDE(j, 2 * (size_t) W)
	{
		const size_t i = (j < (size_t) W ? 0 : (size_t) (rows - 1) * W) + j % W;
		const uint32_t u = to[i];

		e_d8[j] = d8[i];
		e_acc[j] = acc[i];
		e_exit[j] = u == TG_NO_EXIT ? TG_NO_EXIT : u & ~EXIT_FINAL;
	}
}

/* The paths out of the own rows (v their routing, d_acc their accumulation), jumping in `to` (a plane of them). */
tg_status
edge_paths_out(const tg_route_view &v, const double *d_acc, uint32_t *to, const tg_edge_paths &edges,
			   tg_error *err)
{
	const size_t n = (size_t) v.width * v.height,
				e = 2 * (size_t) v.width;
	dbuf<unsigned> unfinished;
	dbuf<uint8_t> e_d8;
	dbuf<double> e_acc;
	dbuf<uint32_t> e_exit;
	unsigned	more = 1;

	if (n >= EXIT_FINAL - 1)
		return tg_error_set(err, TG_ELIMIT, "%zu cells are too many to follow their paths out on the GPU", n);
	TG_CUDA_CHECK(unfinished.alloc(1), "allocating a flag");
	tgk_exit_first_hop<<<grid_for(n), 256>>>(v.d8, v.width, v.height, to);
	TG_CUDA_CHECK(cudaGetLastError(), "following the paths out");
	for (int round = 0; more; round++)
	{
		if (round > 32)
			return tg_error_set(err, TG_EDATA, "the D8 routing has a cycle");
		TG_CUDA_CHECK(cudaMemset(unfinished.p, 0, sizeof(unsigned)), "clearing a flag");
		tgk_exit_jump<<<grid_for(n), 256>>>(to, n, unfinished.p);
		TG_CUDA_CHECK(cudaGetLastError(), "following the paths out");
		TG_CUDA_CHECK(cudaMemcpy(&more, unfinished.p, sizeof more, cudaMemcpyDeviceToHost),
					  "following the paths out");
	}
	TG_CUDA_CHECK(e_d8.alloc(e), "allocating the paths out");
	TG_CUDA_CHECK(e_acc.alloc(e), "allocating the paths out");
	TG_CUDA_CHECK(e_exit.alloc(e), "allocating the paths out");
	tgk_edge_paths<<<grid_for(e), 256>>>(v.d8, d_acc, to, v.width, v.height, e_d8.p, e_acc.p, e_exit.p);
	TG_CUDA_CHECK(cudaGetLastError(), "gathering the paths out");
	TG_CUDA_CHECK(cudaMemcpy(edges.d8, e_d8.p, e, cudaMemcpyDeviceToHost), "copying the paths out back");
	TG_CUDA_CHECK(cudaMemcpy(edges.acc, e_acc.p, e * sizeof(double), cudaMemcpyDeviceToHost),
				  "copying the paths out back");
	TG_CUDA_CHECK(cudaMemcpy(edges.exit, e_exit.p, e * sizeof(uint32_t), cudaMemcpyDeviceToHost),
				  "copying the paths out back");
	return TG_OK;
}

/* Device bytes of part_d8_impl over n cells, own of them its own, besides the crossing flats' masks. */
size_t
part_d8_bytes(const tg_flow_params *p, size_t n, size_t own)
{
	return n * route_bytes_per_cell(p, sizeof(double)) +
		own * accumulation_bytes_per_cell(TG_ACC_INDEGREE, TG_ROUTE_D8, true, false);
}

/*
 * A part's routing with its crossing flats' masks and the D8 accumulation of
 * its own rows (a part's link, scale/parts/): the rows around the own ones shape the
 * routing only; in the own rows' accumulation a direction out of them is an
 * exit, as in the CPU's accumulation of those rows copied alone.
 */
template <typename V>
tg_status
part_d8_impl(const tg_ctx *ctx, const tg_band *z, int own0, int own_rows, const tg_flow_params *p,
			 const tg_flat_masks *given, const tg_part_weights *weight, const tg_part_d8_out *out, tg_error *err)
{
	const int	W = z->width,
				rows = z->height;
	const size_t n = (size_t) W * rows,
				own = (size_t) W * own_rows,
				off = (size_t) W * own0,
				base = part_d8_bytes(p, n, own),
				per_mask = sizeof(size_t) + sizeof(int32_t);
	size_t		budget = 0,
				batch;
	device_route<V> route;
	dbuf<double> d_weight,
				d_acc;
	dbuf<uint32_t> indeg,
				order;
	dbuf<uint16_t> links;
	event_timer compute,
				down;
	double		transfer_ms = 0;
	int			rounds = 0,
				launches = 0;
	tg_route_view v;
	tg_status	st;

	if (p->routing != TG_ROUTE_D8 || p->fill || own0 < 0 || own0 + own_rows > rows ||
		(z->pixtype != TG_PT_32BF && z->pixtype != TG_PT_64BF))
		return tg_error_set(err, TG_EINVAL, "a part's D8 link on the GPU takes a D8 routing of a filled surface");
	st = tg_cuda_memory_budget(ctx, &budget, err);
	if (st != TG_OK)
		return st;
	/* the crossing flats' masks go up in batches of what the budget leaves, tg_given_masks_batch at most */
	batch = std::min({given->count, std::max(tg_given_masks_batch, (size_t) 1),
					  budget > base ? (budget - base) / per_mask : 0});
	st = tg_cuda_check_budget(ctx, base + (given->count > 0 ? std::max(batch, (size_t) 1) * per_mask : 0),
							  "a part's flow accumulation", err);
	if (st != TG_OK)
		return st;
	TG_CUDA_CHECK(compute.init(), "creating timing events");
	TG_CUDA_CHECK(down.init(), "creating timing events");
	TG_CUDA_CHECK(cudaEventRecord(compute.start), "recording an event");
	st = build_route<V>(ctx, z, p, route, &transfer_ms, &rounds, err, given, batch);
	if (st != TG_OK)
		return st;
	TG_CUDA_CHECK(d_weight.alloc(own), "allocating weights");
	TG_CUDA_CHECK(d_acc.alloc(own), "allocating the accumulation");
	TG_CUDA_CHECK(indeg.alloc(own), "allocating donor counts");
	TG_CUDA_CHECK(order.alloc(own), "allocating the order");
	TG_CUDA_CHECK(links.alloc(own), "allocating donor masks");
	st = part_weights_to_device(ctx, weight, W, own_rows, d_weight.p, err);
	if (st != TG_OK)
		return st;
	/* the own rows alone: their routing out of them leaves the grid */
	v = route.view(p->threshold);
	v.height = own_rows;
	v.d8 = route.d8.p + off;
	st = d8_chains(ctx, v, route.kind.p + off, cell_weights{d_weight.p, nullptr, W}, d_acc.p, links.p, indeg.p,
				   order.p, &launches, err);
	if (st != TG_OK)
		return st;
	if (out->receivers)
	{
		/* the donor masks are done with: their buffer holds the receiver masks */
		tgk_export_receivers<<<grid_for(own), 256>>>(v, route.kind.p + off, d_acc.p, links.p);
		TG_CUDA_CHECK(cudaGetLastError(), "finding receivers");
	}
	/* the order is done with too: the paths out jump in it */
	if (out->edges.exit)
		st = edge_paths_out(v, d_acc.p, order.p, out->edges, err);
	if (st != TG_OK)
		return st;
	TG_CUDA_CHECK(cudaEventRecord(compute.stop), "recording an event");
	TG_CUDA_CHECK(cudaEventRecord(down.start), "recording an event");
	if (out->d8)
		TG_CUDA_CHECK(tg_cuda_copy_to_host(ctx, out->d8, route.d8.p + off, own),
					  "copying directions back from the GPU");
	if (out->acc)
		TG_CUDA_CHECK(tg_cuda_copy_to_host(ctx, out->acc, d_acc.p, own * sizeof(double)),
					  "copying the accumulation back from the GPU");
	if (out->receivers)
		TG_CUDA_CHECK(tg_cuda_copy_to_host(ctx, out->receivers, links.p, own * sizeof(uint16_t)),
					  "copying receivers back from the GPU");
	TG_CUDA_CHECK(cudaEventRecord(down.stop), "recording an event");
	TG_CUDA_CHECK(cudaEventSynchronize(down.stop), "accumulating a part's flow");
	charge_device_time(ctx, compute.elapsed() - transfer_ms, transfer_ms + down.elapsed(), rounds);
	return TG_OK;
}
}								/* namespace */

extern "C" tg_status
tg_cuda_flow_accumulation(const tg_ctx *ctx, const tg_band *dem, const double *weight,
						  const double *row_weight, const double *row_divisor, const tg_flow_params *params,
						  tg_accum_method method, const tg_flow_products *out, tg_error *err)
{
	return tg_cuda_catch_all(err, [&] {
		if (pixtype_fits_float(dem->pixtype))
			return accumulation_impl<float>(ctx, dem, weight, row_weight, row_divisor, params, method, out,
											err);
		return accumulation_impl<double>(ctx, dem, weight, row_weight, row_divisor, params, method, out,
										 err);
	});
}

extern "C" tg_status
tg_cuda_part_d8(const tg_ctx *ctx, const tg_band *z, int own0, int own_rows, const tg_flow_params *params,
				const tg_flat_masks *given, const tg_part_weights *weight, const tg_part_d8_out *out,
				tg_error *err)
{
	return tg_cuda_catch_all(err, [&] {
		/* a surface of floats is routed in floats, as the one grid's */
		if (z->pixtype == TG_PT_32BF)
			return part_d8_impl<float>(ctx, z, own0, own_rows, params, given, weight, out, err);
		return part_d8_impl<double>(ctx, z, own0, own_rows, params, given, weight, out, err);
	});
}

extern "C" tg_status
tg_cuda_part_d8_rows(const tg_ctx *ctx, int W, const tg_flow_params *params, int64_t *rows, tg_error *err)
{
	return tg_cuda_catch_all(err, [&] {
		const size_t row = part_d8_bytes(params, (size_t) W, (size_t) W);
		size_t		budget = 0;
		tg_status	st = tg_cuda_memory_budget(ctx, &budget, err);

		if (st == TG_OK)
			*rows = (int64_t) (budget / 16 * 15 / row) - 4;
		return st;
	});
}

extern "C" tg_status
tg_cuda_flow_direction(const tg_ctx *ctx, const tg_band *dem, const tg_flow_params *params,
					   uint8_t *d8, float *frac, tg_error *err)
{
	return tg_cuda_catch_all(err, [&] {
		if (pixtype_fits_float(dem->pixtype))
			return direction_impl<float>(ctx, dem, params, d8, frac, err);
		return direction_impl<double>(ctx, dem, params, d8, frac, err);
	});
}
