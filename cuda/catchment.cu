/*
 * catchment.cu — RUSLE soil loss and D8 travel time on the GPU, on the
 * routing of route.cu: the DEM crosses PCIe once, the results once.
 *
 *   rusle        routing -> accumulation (accum.cu) -> one kernel for the
 *                Horn slope, LS and R K LS C P (hydro.h's formulas).
 *   travel time  routing -> step times -> pointer jumping: every cell holds
 *                (next, time to next); a pass replaces both by next's, so
 *                after ceil(log2(longest path)) passes next is the end of
 *                the path and time the whole path's.  Each pass reads only
 *                the previous pass's buffers (double buffering), so the
 *                result does not depend on thread timing.
 */
#include "route.cuh"

#include <algorithm>
#include <cstdio>

namespace
{

/* A factor on the device: float or double values, or a constant. */
struct device_factor
{
	const float *f32;
	const double *f64;
	double		value;

	__device__ double at(size_t i) const
	{
		return f32 ? (double) f32[i] : f64 ? f64[i] : value;
	}
};

/* The buffers behind a device_factor: floats when every value is one exactly. */
struct factor_upload
{
	dbuf<float> f32;
	dbuf<double> f64;
};

tg_status
upload_factor(const tg_ctx *ctx, const tg_cell_factor *f, size_t n, factor_upload &buf,
			  device_factor *out, double *transfer_ms, tg_error *err)
{
	event_timer t;
	bool		exact = true;

	*out = {nullptr, nullptr, f->value};
	if (f->values == nullptr)
		return TG_OK;
	for (size_t i = 0; i < n && exact; i++)
		exact = isnan(f->values[i]) || (double) (float) f->values[i] == f->values[i];
	TG_CUDA_CHECK(t.init(), "creating timing events");
	if (exact)
	{
		hbuf<float> host(ctx);

		if (!host.alloc(n))
			return tg_cuda_host_oom(err, "a factor in single precision");
		for (size_t i = 0; i < n; i++)
			host[i] = (float) f->values[i];
		TG_CUDA_CHECK(buf.f32.alloc(n), "allocating a factor");
		TG_CUDA_CHECK(cudaEventRecord(t.start), "recording an event");
		TG_CUDA_CHECK(tg_cuda_copy_to_device(ctx, buf.f32.p, host.p, n * sizeof(float)),
					  "copying a factor to the GPU");
		out->f32 = buf.f32.p;
	}
	else
	{
		TG_CUDA_CHECK(buf.f64.alloc(n), "allocating a factor");
		TG_CUDA_CHECK(cudaEventRecord(t.start), "recording an event");
		TG_CUDA_CHECK(tg_cuda_copy_to_device(ctx, buf.f64.p, f->values, n * sizeof(double)),
					  "copying a factor to the GPU");
		out->f64 = buf.f64.p;
	}
	TG_CUDA_CHECK(cudaEventRecord(t.stop), "recording an event");
	TG_CUDA_CHECK(cudaEventSynchronize(t.stop), "copying a factor to the GPU");
	*transfer_ms += t.elapsed();
	return TG_OK;
}

/* Per-row constants uploaded once: Horn factors and cell width, or distances. */
tg_status
upload_rows(const hbuf<double> &host, dbuf<double> &d, tg_error *err)
{
	TG_CUDA_CHECK(d.alloc(host.n), "allocating row constants");
	TG_CUDA_CHECK(cudaMemcpy(d.p, host.p, host.n * sizeof(double),
							 cudaMemcpyHostToDevice), "copying row constants to the GPU");
	return TG_OK;
}

/* ------------------------------------------------------------------------
 * RUSLE
 * ------------------------------------------------------------------------ */
struct ls_params
{
	double		m,
				n,
				a0,
				b0;
};

/* rows: kx, ky, width per row.  ls / soil may be null. */
template <typename V>
__global__ void
tgk_rusle(const V *__restrict__ z, int W, int H, const double *__restrict__ acc,
		  const double *__restrict__ rows, ls_params lp, device_factor r, device_factor k,
		  device_factor c, device_factor p, float *__restrict__ ls, float *__restrict__ soil)
{
	TG_GRID_STRIDE(i, (size_t) W * H)
	{
		const int	x = (int) (i % W),
					y = (int) (i / W);
		double		value = NAN;

		if (!isnan((double) z[i]))
		{
			double		w[9];
			int			q = 0;

			for (int dy = -1; dy <= 1; dy++)
				for (int dx = -1; dx <= 1; dx++, q++)
				{
					int			nx = x + dx,
								ny = y + dy;

					w[q] = nx >= 0 && ny >= 0 && nx < W && ny < H ? (double) z[(size_t) ny * W + nx] : NAN;
				}
			value = tg_ls_value(acc[i], rows[3 * y + 2], tg_horn_tan(w, rows[3 * y], rows[3 * y + 1]),
								lp.m, lp.n, lp.a0, lp.b0);
		}
		if (ls)
			ls[i] = (float) value;
		if (soil)
			soil[i] = (float) TG_DMUL(TG_DMUL(TG_DMUL(TG_DMUL(value, r.at(i)), k.at(i)), c.at(i)), p.at(i));
	}
}

template <typename V>
tg_status
rusle_impl(const tg_ctx *ctx, const tg_band *dem, const tg_rusle_params *p,
		   const tg_cell_factor factors[4], float *ls, float *soil, tg_error *err)
{
	const int	W = dem->width,
				H = dem->height;
	const size_t n = (size_t) W * H;
	device_route<V> route;
	dbuf<double> d_acc,
				d_rows;
	dbuf<float> d_ls,
				d_soil;
	factor_upload bufs[4];
	device_factor df[4];
	hbuf<double> rows(ctx);
	event_timer compute,
				routed,
				down;
	double		transfer_ms = 0,	/* factors */
				upload_ms = 0;	/* the DEM, inside the chain's events */
	int			route_rounds = 0,
				rounds = 0;
	const char *used = "";
	size_t		factor_bytes = 0;
	tg_status	st;

	for (int f = 0; f < 4; f++)
		factor_bytes += factors[f].values ? sizeof(double) : 0;

	/* the factors beside the routing, and the largest of its build, the accumulation and the products */
	auto peak = [&](bool gather) {
		return n * (route_kept_bytes_per_cell(&p->flow, sizeof(V)) + factor_bytes +
					std::max({ROUTE_SCRATCH_BYTES_PER_CELL,
							  accumulation_bytes_per_cell(p->method, p->flow.routing, false, gather),
							  sizeof(double) + (ls ? 4 : 0) + (soil ? 4 : 0)}));
	};
	const bool	gather = tg_cuda_fits_budget(ctx, peak(true));

	st = tg_cuda_check_budget(ctx, peak(gather), "RUSLE", err);
	if (st != TG_OK)
		return st;
	if (!rows.alloc((size_t) H * 3))
		return tg_cuda_host_oom(err, "row constants");
	for (int y = 0; y < H; y++)
	{
		double		dx,
					dy;

		tg_row_spacing(&p->flow.geom, y, &dx, &dy);
		rows[3 * y] = 1.0 / (8.0 * dx);
		rows[3 * y + 1] = 1.0 / (8.0 * dy);
		rows[3 * y + 2] = sqrt(dx * dy);
	}
	for (int f = 0; f < 4; f++)
	{
		st = upload_factor(ctx, &factors[f], n, bufs[f], &df[f], &transfer_ms, err);
		if (st != TG_OK)
			return st;
	}
	st = upload_rows(rows, d_rows, err);
	if (st != TG_OK)
		return st;
	TG_CUDA_CHECK(compute.init(), "creating timing events");
	TG_CUDA_CHECK(routed.init(), "creating timing events");
	TG_CUDA_CHECK(down.init(), "creating timing events");

	TG_CUDA_CHECK(cudaEventRecord(compute.start), "recording an event");
	st = build_route<V>(ctx, dem, &p->flow, route, &upload_ms, &route_rounds, err);
	if (st != TG_OK)
		return st;
	TG_CUDA_CHECK(cudaEventRecord(routed.stop), "recording an event");
	TG_CUDA_CHECK(d_acc.alloc(n), "allocating the accumulation");
	/* the upslope area in cells: every cell weighs 1 */
	st = accumulate<V>(ctx, route, &p->flow, cell_weights(), p->method, gather, d_acc.p, &rounds, &used, err);
	if (st != TG_OK)
		return st;
	if (ls)
		TG_CUDA_CHECK(d_ls.alloc(n), "allocating the LS factor");
	if (soil)
		TG_CUDA_CHECK(d_soil.alloc(n), "allocating the soil loss");
	tgk_rusle<V><<<grid_for(n), 256>>>(route.z.p, W, H, d_acc.p, d_rows.p,
										ls_params{p->m, p->n, p->a0, p->b0}, df[0], df[1], df[2],
										df[3], d_ls.p, d_soil.p);
	TG_CUDA_CHECK(cudaGetLastError(), "computing LS and soil loss");
	TG_CUDA_CHECK(cudaEventRecord(compute.stop), "recording an event");

	TG_CUDA_CHECK(cudaEventRecord(down.start), "recording an event");
	if (ls)
		TG_CUDA_CHECK(tg_cuda_copy_to_host(ctx, ls, d_ls.p, n * sizeof(float)),
					  "copying the LS factor back from the GPU");
	if (soil)
		TG_CUDA_CHECK(tg_cuda_copy_to_host(ctx, soil, d_soil.p, n * sizeof(float)),
					  "copying the soil loss back from the GPU");
	TG_CUDA_CHECK(cudaEventRecord(down.stop), "recording an event");
	TG_CUDA_CHECK(cudaEventSynchronize(down.stop), "computing RUSLE");
	if (ctx->stats)
	{
		ctx->stats->kernel_ms += compute.elapsed() - upload_ms;
		ctx->stats->prep_ms += tg_cuda_elapsed_ms(compute.start, routed.stop) - upload_ms;
		ctx->stats->transfer_ms += transfer_ms + upload_ms + down.elapsed();
		ctx->stats->iterations = rounds;
		ctx->stats->chunks = route_rounds;
		snprintf(ctx->stats->method, sizeof ctx->stats->method, "%s", used);
	}
	return TG_OK;
}

/* ------------------------------------------------------------------------
 * Travel time
 * ------------------------------------------------------------------------ */
constexpr uint32_t NO_CELL = 0xFFFFFFFFu;

/* next = receiver (itself at a path's end, NO_CELL for nodata), t = step time */
template <typename V>
__global__ void
tgk_travel_steps(const V *__restrict__ z, const uint8_t *__restrict__ d8, int W, int H,
				 const double *__restrict__ row_dist, uint32_t outlet, device_factor rough,
				 device_factor vel, double b, double min_slope, uint32_t *__restrict__ next,
				 double *__restrict__ t)
{
	TG_GRID_STRIDE(i, (size_t) W * H)
	{
		const int	k = d8[i];

		if (isnan((double) z[i]))
		{
			next[i] = NO_CELL;
			t[i] = NAN;
		}
		else if (k == TG_NO_DIRECTION || i == outlet)
		{
			next[i] = (uint32_t) i;
			t[i] = 0;
		}
		else
		{
			const int	x = (int) (i % W) + tg_nbr_dx(k),
						y = (int) (i / W) + tg_nbr_dy(k);
			const size_t j = (size_t) y * W + x;

			next[i] = (uint32_t) j;
			t[i] = tg_step_time((double) z[i] - (double) z[j], row_dist[(i / W) * 8 + k],
								rough.at(i), vel.at(i), b, min_slope);
		}
	}
}

__global__ void
tgk_jump(const uint32_t *__restrict__ next, const double *__restrict__ t, size_t n,
		 uint32_t *__restrict__ next_out, double *__restrict__ t_out, unsigned *__restrict__ moved)
{
	TG_GRID_STRIDE(i, n)
	{
		const uint32_t j = next[i];

		if (j == NO_CELL || j == i)
		{
			next_out[i] = j;
			t_out[i] = t[i];
			continue;
		}
		const uint32_t jj = next[j];

		t_out[i] = TG_DADD(t[i], t[j]);
		next_out[i] = jj;
		if (jj != j)
			*moved = 1;
	}
}

__global__ void
tgk_travel_out(const uint32_t *__restrict__ end, const double *__restrict__ t, size_t n,
			   bool has_outlet, uint32_t outlet, float *__restrict__ time,
			   uint8_t *__restrict__ watershed)
{
	TG_GRID_STRIDE(i, n)
	{
		const uint32_t e = end[i];

		if (time)
			time[i] = e == NO_CELL || (has_outlet && e != outlet) ? NAN : (float) t[i];
		if (watershed)
			watershed[i] = e == NO_CELL ? 255 : e == outlet ? 1 : 0;
	}
}

template <typename V>
tg_status
travel_impl(const tg_ctx *ctx, const tg_band *dem, const tg_travel_params *p,
			const tg_cell_factor *roughness, const tg_cell_factor *velocity, float *time,
			uint8_t *watershed, tg_error *err)
{
	const int	W = dem->width,
				H = dem->height;
	const size_t n = (size_t) W * H;
	const uint32_t outlet = p->has_outlet ? (uint32_t) ((size_t) p->outlet_row * W + p->outlet_col)
		: NO_CELL;
	device_route<V> route;
	dbuf<uint32_t> next[2];
	dbuf<double> t[2],
				d_dist;
	dbuf<unsigned> moved;
	dbuf<float> d_time;
	dbuf<uint8_t> d_shed;
	factor_upload bufs[2];
	device_factor rough,
				vel;
	hbuf<double> dist(ctx);
	event_timer compute,
				routed,
				down;
	double		transfer_ms = 0,	/* factors */
				upload_ms = 0;	/* the DEM, inside the chain's events */
	int			route_rounds = 0,
				passes = 0,
				cur = 0;
	tg_status	st;

	if (n >= NO_CELL)
		return tg_error_set(err, TG_ELIMIT, "travel times on the GPU take at most %u cells, got %zu",
							NO_CELL - 1, n);
	st = tg_cuda_check_budget(ctx, n * (route_bytes_per_cell(&p->flow, sizeof(V)) + 24 +
								(roughness->values ? 8 : 0) + (velocity->values ? 8 : 0) +
								(time ? 4 : 0) + (watershed ? 1 : 0)), "travel time", err);
	if (st != TG_OK)
		return st;
	if (!dist.alloc((size_t) H * 8))
		return tg_cuda_host_oom(err, "row distances");
	for (int y = 0; y < H; y++)
	{
		double		dx,
					dy;

		tg_row_spacing(&p->flow.geom, y, &dx, &dy);
		tg_nbr_distances(dx, dy, dist.p + (size_t) y * 8);
	}
	st = upload_factor(ctx, roughness, n, bufs[0], &rough, &transfer_ms, err);
	if (st == TG_OK)
		st = upload_factor(ctx, velocity, n, bufs[1], &vel, &transfer_ms, err);
	if (st == TG_OK)
		st = upload_rows(dist, d_dist, err);
	if (st != TG_OK)
		return st;
	TG_CUDA_CHECK(compute.init(), "creating timing events");
	TG_CUDA_CHECK(routed.init(), "creating timing events");
	TG_CUDA_CHECK(down.init(), "creating timing events");

	TG_CUDA_CHECK(cudaEventRecord(compute.start), "recording an event");
	st = build_route<V>(ctx, dem, &p->flow, route, &upload_ms, &route_rounds, err);
	if (st != TG_OK)
		return st;
	TG_CUDA_CHECK(cudaEventRecord(routed.stop), "recording an event");
	for (int b = 0; b < 2; b++)
	{
		TG_CUDA_CHECK(next[b].alloc(n), "allocating paths");
		TG_CUDA_CHECK(t[b].alloc(n), "allocating travel times");
	}
	TG_CUDA_CHECK(moved.alloc(1), "allocating a flag");
	tgk_travel_steps<V><<<grid_for(n), 256>>>(route.z.p, route.d8.p, W, H, d_dist.p, outlet, rough,
											   vel, p->b, p->min_slope, next[0].p, t[0].p);
	TG_CUDA_CHECK(cudaGetLastError(), "computing step times");
	for (;;)
	{
		unsigned	host_moved = 0;

		if (tg_canceled(ctx))
			return tg_error_set(err, TG_ECANCELED, "canceled");
		TG_CUDA_CHECK(cudaMemsetAsync(moved.p, 0, sizeof(unsigned)), "clearing a flag");
		tgk_jump<<<grid_for(n), 256>>>(next[cur].p, t[cur].p, n, next[1 - cur].p, t[1 - cur].p,
									   moved.p);
		TG_CUDA_CHECK(cudaGetLastError(), "summing paths");
		cur = 1 - cur;
		passes++;
		TG_CUDA_CHECK(cudaMemcpy(&host_moved, moved.p, sizeof host_moved, cudaMemcpyDeviceToHost),
					  "summing paths");
		if (!host_moved)
			break;
		if (passes > 64)
			return tg_error_set(err, TG_EDATA, "flow paths do not end (the routing has a cycle)");
	}
	if (time)
		TG_CUDA_CHECK(d_time.alloc(n), "allocating travel times");
	if (watershed)
		TG_CUDA_CHECK(d_shed.alloc(n), "allocating the watershed");
	tgk_travel_out<<<grid_for(n), 256>>>(next[cur].p, t[cur].p, n, p->has_outlet, outlet, d_time.p,
										 d_shed.p);
	TG_CUDA_CHECK(cudaGetLastError(), "writing travel times");
	TG_CUDA_CHECK(cudaEventRecord(compute.stop), "recording an event");

	TG_CUDA_CHECK(cudaEventRecord(down.start), "recording an event");
	if (time)
		TG_CUDA_CHECK(tg_cuda_copy_to_host(ctx, time, d_time.p, n * sizeof(float)),
					  "copying travel times back from the GPU");
	if (watershed)
		TG_CUDA_CHECK(tg_cuda_copy_to_host(ctx, watershed, d_shed.p, n),
					  "copying the watershed back from the GPU");
	TG_CUDA_CHECK(cudaEventRecord(down.stop), "recording an event");
	TG_CUDA_CHECK(cudaEventSynchronize(down.stop), "computing travel times");
	if (ctx->stats)
	{
		ctx->stats->kernel_ms += compute.elapsed() - upload_ms;
		ctx->stats->prep_ms += tg_cuda_elapsed_ms(compute.start, routed.stop) - upload_ms;
		ctx->stats->transfer_ms += transfer_ms + upload_ms + down.elapsed();
		ctx->stats->iterations = passes;
		ctx->stats->chunks = route_rounds;
		snprintf(ctx->stats->method, sizeof ctx->stats->method, "pointer jumping");
	}
	return TG_OK;
}
}								/* namespace */

extern "C" tg_status
tg_cuda_rusle(const tg_ctx *ctx, const tg_band *dem, const tg_rusle_params *params,
			  const tg_cell_factor factors[4], float *ls, float *soil_loss, tg_error *err)
{
	return tg_cuda_catch_all(err, [&] {
		if (pixtype_fits_float(dem->pixtype))
			return rusle_impl<float>(ctx, dem, params, factors, ls, soil_loss, err);
		return rusle_impl<double>(ctx, dem, params, factors, ls, soil_loss, err);
	});
}

extern "C" tg_status
tg_cuda_travel_time(const tg_ctx *ctx, const tg_band *dem, const tg_travel_params *params,
					const tg_cell_factor *roughness, const tg_cell_factor *velocity, float *time,
					uint8_t *watershed, tg_error *err)
{
	return tg_cuda_catch_all(err, [&] {
		if (pixtype_fits_float(dem->pixtype))
			return travel_impl<float>(ctx, dem, params, roughness, velocity, time, watershed, err);
		return travel_impl<double>(ctx, dem, params, roughness, velocity, time, watershed, err);
	});
}
