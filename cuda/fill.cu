/*
 * fill.cu — depression filling on the GPU.  Both methods reach the surface
 * the CPU computes (tg_core.h, tg_fill), bit for bit: it is the unique fixed
 * point of W(c) = max(Z(c), min_n inc(W(n))), W = Z at outlets.
 *
 * planchon-darboux  as Qin & Zhan (2012) port Planchon & Darboux (2001): one
 *                   thread per cell lowers W from +inf in place, sweep after
 *                   sweep, until a sweep changes nothing.  Information moves
 *                   about one cell per sweep, so sweeps ~ the longest drainage
 *                   path.
 * priority-flood    the same equation solved tile by tile (hydro.cuh's tiled
 *                   relaxation): a 32 x 32 tile converges in shared memory
 *                   before its neighbours hear of it, so rounds ~ the longest
 *                   path in tiles.  (The CPU's priority-flood and this give the
 *                   same surface; a heap has no fast GPU equivalent.)
 */
#include "hydro.cuh"

namespace
{
template <typename V>
__global__ void
tgk_fill_init(const V *__restrict__ z, const uint8_t *__restrict__ kind, size_t n, V *__restrict__ w)
{
	TG_GRID_STRIDE(i, n)
		w[i] = kind[i] == KIND_INTERIOR ? (V) INFINITY : z[i];
}

/* One Planchon-Darboux sweep, in place; changed[0] set if any cell moved. */
template <typename V>
__global__ void
tgk_pd_sweep(const V *__restrict__ z, const uint8_t *__restrict__ kind, int W, int H, double eps,
			 V *w, unsigned *changed)
{
	fill_op<V>	op = {z, kind, eps};

	TG_GRID_STRIDE(i, (size_t) W * H)
	{
		V			cur,
					v;
		V			nb[8];
		int			x,
					y;

		if (kind[i] != KIND_INTERIOR)
			continue;
		cur = w[i];
		if (!(cur > z[i]))
			continue;
		x = (int) (i % W);
		y = (int) (i / W);
#pragma unroll
		for (int k = 0; k < 8; k++)
			nb[k] = w[(size_t) (y + tg_nbr_dy(k)) * W + x + tg_nbr_dx(k)];
		v = op.relax(i, cur, nb);
		if (v < cur)
		{
			w[i] = v;
			*changed = 1;
		}
	}
}

template <typename V>
__global__ void
tgk_fill_export(const V *__restrict__ w, size_t n, V out_nodata, V *__restrict__ out)
{
	TG_GRID_STRIDE(i, n)
		out[i] = isnan(w[i]) ? out_nodata : w[i];
}

/* Sweeps per check of the convergence flags. */
constexpr int PD_BATCH = 16;

template <typename V>
tg_status
planchon_darboux(const tg_ctx *ctx, const V *z, const uint8_t *kind, int W, int H, double eps,
				 V *w, int *sweeps, tg_error *err)
{
	const size_t n = (size_t) W * H;
	dbuf<unsigned> flags;
	unsigned	host[PD_BATCH];

	TG_CUDA_CHECK(flags.alloc(PD_BATCH), "allocating sweep flags");
	for (*sweeps = 0;;)
	{
		if (tg_canceled(ctx))
			return tg_error_set(err, TG_ECANCELED, "fill canceled");
		TG_CUDA_CHECK(cudaMemsetAsync(flags.p, 0, PD_BATCH * sizeof(unsigned)), "clearing flags");
		for (int s = 0; s < PD_BATCH; s++)
			tgk_pd_sweep<V><<<grid_for(n), 256>>>(z, kind, W, H, eps, w, flags.p + s);
		TG_CUDA_CHECK(cudaGetLastError(), "running Planchon-Darboux sweeps");
		TG_CUDA_CHECK(cudaMemcpy(host, flags.p, sizeof host, cudaMemcpyDeviceToHost),
					  "running Planchon-Darboux sweeps");
		for (int s = 0; s < PD_BATCH; s++)
		{
			(*sweeps)++;
			if (!host[s])
				return TG_OK;	/* a sweep that changed nothing: the fixed point */
		}
	}
}

template <typename V>
tg_status
fill_impl(const tg_ctx *ctx, const tg_band *dem, const tg_fill_params *params, double out_nodata,
		  void *out, tg_error *err)
{
	const int	W = dem->width,
				H = dem->height;
	const size_t n = (size_t) W * H;
	const size_t need = n * ((size_t) tg_pixtype_size(dem->pixtype) + 3 * sizeof(V) + 1);
	double		transfer_ms = 0;
	int			iterations = 0;
	dbuf<V>		z,
				w;
	dbuf<uint8_t> kind;
	event_timer compute,
				down;
	tg_status	st;

	if (tg_cuda_check_budget(ctx, need, "the fill", err) != TG_OK)
		return err->code;
	st = upload_dem<V>(ctx, dem, z, &transfer_ms, err);
	if (st != TG_OK)
		return st;
	TG_CUDA_CHECK(kind.alloc(n), "allocating cell kinds");
	TG_CUDA_CHECK(w.alloc(n), "allocating the filled DEM");
	TG_CUDA_CHECK(compute.init(), "creating timing events");
	TG_CUDA_CHECK(down.init(), "creating timing events");

	TG_CUDA_CHECK(cudaEventRecord(compute.start), "recording an event");
	tgk_classify<V><<<grid_for(n), 256>>>(z.p, W, H, 0, H, KIND_INTERIOR, kind.p);
	TG_CUDA_CHECK(cudaGetLastError(), "classifying cells");
	st = fill_surface<V>(ctx, z.p, kind.p, W, H, params->method, params->epsilon, w.p,
						 &iterations, err);
	if (st != TG_OK)
		return st;
	/* the export reuses z's memory for the output values */
	tgk_fill_export<V><<<grid_for(n), 256>>>(w.p, n, (V) out_nodata, z.p);
	TG_CUDA_CHECK(cudaGetLastError(), "exporting the filled DEM");
	TG_CUDA_CHECK(cudaEventRecord(compute.stop), "recording an event");

	TG_CUDA_CHECK(cudaEventRecord(down.start), "recording an event");
	TG_CUDA_CHECK(tg_cuda_copy_to_host(ctx, out, z.p, n * sizeof(V)),
				  "copying the filled DEM back from the GPU");
	TG_CUDA_CHECK(cudaEventRecord(down.stop), "recording an event");
	TG_CUDA_CHECK(cudaEventSynchronize(down.stop), "filling depressions");

	if (ctx->stats)
	{
		ctx->stats->kernel_ms += compute.elapsed();
		ctx->stats->transfer_ms += transfer_ms + down.elapsed();
		ctx->stats->iterations = iterations;
		ctx->stats->chunks = 1;
	}
	return TG_OK;
}
}								/* namespace */

template <typename V>
tg_status
fill_surface(const tg_ctx *ctx, const V *z, const uint8_t *kind, int W, int H,
			 tg_fill_method method, double eps, V *w, int *iterations, tg_error *err)
{
	const size_t n = (size_t) W * H;

	tgk_fill_init<V><<<grid_for(n), 256>>>(z, kind, n, w);
	TG_CUDA_CHECK(cudaGetLastError(), "starting the fill");
	if (method == TG_FILL_PLANCHON_DARBOUX)
		return planchon_darboux<V>(ctx, z, kind, W, H, eps, w, iterations, err);
	return relax_tiles(ctx, fill_op<V>{z, kind, eps}, w, W, H, iterations, err);
}

template tg_status fill_surface<float>(const tg_ctx *, const float *, const uint8_t *, int, int,
									   tg_fill_method, double, float *, int *, tg_error *);
template tg_status fill_surface<double>(const tg_ctx *, const double *, const uint8_t *, int, int,
										tg_fill_method, double, double *, int *, tg_error *);

extern "C" tg_status
tg_cuda_fill(const tg_ctx *ctx, const tg_band *dem, const tg_fill_params *params,
			 double out_nodata, void *out, tg_error *err)
{
	return tg_cuda_catch_all(err, [&] {
		if (params->out_type == TG_PT_32BF)
			return fill_impl<float>(ctx, dem, params, out_nodata, out, err);
		return fill_impl<double>(ctx, dem, params, out_nodata, out, err);
	});
}
