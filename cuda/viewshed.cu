/*
 * viewshed.cu — R2 viewshed on the GPU.
 *
 * One block per ray (the paper uses one thread per ray; a ray's horizon is a
 * prefix maximum of its terrain samples, so a block can take 256 steps at
 * once): each thread samples one step, a block-wide exclusive max-scan gives
 * every step the horizon of the samples before it (plus what earlier chunks
 * carried), and the thread decides the cells its step owns under the
 * nearest-ray rule.  Neighbouring threads read neighbouring cells, so loads
 * coalesce along the ray.  Maximum is exact and order-free, and the samples
 * use the same arithmetic as the CPU walk (tg_viewshed.h): the output is
 * identical.
 */
#include <vector>

#include <cub/block/block_scan.cuh>

#include "hydro.cuh"
#include "tg_viewshed.h"

namespace
{
constexpr int RAY_THREADS = 256;

struct dmax
{
	__device__ __forceinline__ double operator() (double a, double b) const
	{
		return a > b ? a : b;
	}
};

__global__ void
tgk_fill_nan(float *out, size_t n)
{
	TG_GRID_STRIDE(i, n)
		out[i] = NAN;
}

/*
 * COUNT = false: write each decided cell's value to out;
 * COUNT = true: add 1 to count for each cell seen (a cumulative viewshed).
 */
template <bool COUNT>
__global__ void __launch_bounds__(RAY_THREADS)
tgk_viewshed_r2(tg_view_setup s, const double *__restrict__ z, float *__restrict__ out,
				uint32_t *__restrict__ count)
{
	using scan_t = cub::BlockScan<double, RAY_THREADS>;
	__shared__ typename scan_t::TempStorage scan_tmp;
	int			dx,
				dy;

	tg_view_ray(&s, blockIdx.x, &dx, &dy);
	if (dx == 0 && dy == 0)
		return;

	const bool	xmajor = (dx < 0 ? -dx : dx) >= (dy < 0 ? -dy : dy);
	const int	sgn = xmajor ? (dx > 0 ? 1 : -1) : (dy > 0 ? 1 : -1);
	const int64_t i = xmajor ? (int64_t) dx * sgn : (int64_t) dy * sgn;
	const int64_t j = xmajor ? dy : dx;
	const int64_t steps = i / s.density;	/* whole cells along the major axis */
	double		carry = -INFINITY;

	for (int64_t base = 0; base < steps; base += RAY_THREADS)
	{
		const int64_t k = base + threadIdx.x + 1;
		double		zp = NAN,
					d2 = 0,
					before,
					chunk_max;
		const double h = k <= steps ? tg_view_step(&s, z, xmajor, sgn, i, j, k, &zp, &d2) : -INFINITY;

		scan_t(scan_tmp).ExclusiveScan(h, before, -INFINITY, dmax(), chunk_max);
		before = before > carry ? before : carry;
		if (k <= steps)
		{
			const int64_t num = k * j;
			const int64_t q = tg_floor_div(num, i);

			for (int64_t jj = q; jj <= q + 1; jj++)
			{
				const int64_t off = num - jj * i;
				const int	a = xmajor ? (int) (sgn * k) : (int) jj;
				const int	b = xmajor ? (int) jj : (int) (sgn * k);

				if (2 * (off < 0 ? -off : off) <= i && tg_view_owns(&s, dx, dy, a, b))
				{
					const int64_t at = (int64_t) (s.oy + b) * s.width + s.ox + a;
					const float v = tg_view_decide(&s, z, s.ox + a, s.oy + b, a, b, zp, d2, before);

					if (!COUNT)
						out[at] = v;
					else if (v == 1.0f)
						atomicAdd(&count[at], 1u);
				}
			}
		}
		carry = chunk_max > carry ? chunk_max : carry;
		__syncthreads();		/* scan_tmp is reused by the next chunk */
	}
}
}								/* namespace */

extern "C" tg_status
tg_cuda_viewshed(const tg_ctx *ctx, const tg_band *dem, const tg_viewshed_params *params,
				 float *out, tg_error *err)
{
	const size_t n = (size_t) dem->width * dem->height;
	tg_view_setup s;
	dbuf<double> z;
	dbuf<float> d_out;
	event_timer t_kernel,
				t_back;
	size_t		budget = 0;
	double		up_ms = 0;

	if (tg_view_prepare(dem, params, NULL, &s, err) != TG_OK)
		return err->code;
	if (tg_cuda_memory_budget(ctx, &budget, err) != TG_OK)
		return err->code;
	if (n * (sizeof(double) + sizeof(float) + tg_pixtype_size(dem->pixtype)) > budget)
	{
		tg_error_set(err, TG_ENOMEM, "a viewshed of %zu cells needs %zu bytes of GPU memory, %zu are available",
					 n, n * (sizeof(double) + sizeof(float) + tg_pixtype_size(dem->pixtype)), budget);
		err->on_device = true;
		return TG_ENOMEM;
	}
	if (upload_dem(dem, z, &up_ms, err) != TG_OK)
		return err->code;
	TG_CUDA_RETURN_IF(d_out.alloc(n), "allocating the viewshed on the GPU");
	TG_CUDA_RETURN_IF(t_kernel.init(), "creating timing events");
	TG_CUDA_RETURN_IF(t_back.init(), "creating timing events");
	if (tg_canceled(ctx))
		return tg_error_set(err, TG_ECANCELED, "viewshed canceled");

	TG_CUDA_RETURN_IF(cudaEventRecord(t_kernel.start), "recording an event");
	tgk_fill_nan<<<grid_for(n), 256>>>(d_out.p, n);
	TG_CUDA_RETURN_IF_LAUNCH("launching the viewshed initialisation");
	tgk_viewshed_r2<false><<<s.nrays, RAY_THREADS>>>(s, z.p, d_out.p, nullptr);
	TG_CUDA_RETURN_IF_LAUNCH("launching the viewshed kernel");
	TG_CUDA_RETURN_IF(cudaEventRecord(t_kernel.stop), "recording an event");
	TG_CUDA_RETURN_IF(cudaEventRecord(t_back.start), "recording an event");
	TG_CUDA_RETURN_IF(cudaMemcpy(out, d_out.p, n * sizeof(float), cudaMemcpyDeviceToHost),
					  "copying the viewshed back from the GPU");
	TG_CUDA_RETURN_IF(cudaEventRecord(t_back.stop), "recording an event");
	TG_CUDA_RETURN_IF(cudaEventSynchronize(t_back.stop), "running the viewshed kernel");

	tg_view_finish(&s, out);
	if (ctx->stats)
	{
		ctx->stats->kernel_ms += t_kernel.elapsed();
		ctx->stats->transfer_ms += up_ms + t_back.elapsed();
		ctx->stats->chunks = 1;
		ctx->stats->iterations = s.nrays;
	}
	return TG_OK;
}

extern "C" tg_status
tg_cuda_viewshed_count(const tg_ctx *ctx, const tg_band *dem, const tg_viewshed_params *params,
					   const int *cols, const int *rows, int n, uint32_t *count, tg_error *err)
{
	const size_t cells = (size_t) dem->width * dem->height;
	tg_viewshed_params one = *params;
	dbuf<double> z;
	dbuf<uint32_t> d_count;
	event_timer t_kernel,
				t_back;
	size_t		budget = 0;
	double		up_ms = 0;
	std::vector<tg_view_setup> setups(n);

	one.output = TG_VIEW_VISIBLE;
	one.algorithm = TG_VIEW_R2;
	for (int k = 0; k < n; k++)
	{
		one.observer_col = cols[k];
		one.observer_row = rows[k];
		if (tg_view_prepare(dem, &one, NULL, &setups[k], err) != TG_OK)
		{
			tg_error_detail(err, "Observer %d of the list.", k + 1);
			return err->code;
		}
	}
	if (tg_cuda_memory_budget(ctx, &budget, err) != TG_OK)
		return err->code;
	if (cells * (sizeof(double) + sizeof(uint32_t) + tg_pixtype_size(dem->pixtype)) > budget)
	{
		tg_error_set(err, TG_ENOMEM, "a viewshed of %zu cells needs %zu bytes of GPU memory, %zu are available",
					 cells, cells * (sizeof(double) + sizeof(uint32_t) + tg_pixtype_size(dem->pixtype)), budget);
		err->on_device = true;
		return TG_ENOMEM;
	}
	if (upload_dem(dem, z, &up_ms, err) != TG_OK)
		return err->code;
	TG_CUDA_RETURN_IF(d_count.alloc(cells), "allocating the counts on the GPU");
	TG_CUDA_RETURN_IF(t_kernel.init(), "creating timing events");
	TG_CUDA_RETURN_IF(t_back.init(), "creating timing events");
	TG_CUDA_RETURN_IF(cudaMemset(d_count.p, 0, cells * sizeof(uint32_t)), "clearing the counts");

	/* the DEM stays resident; one launch per observer, cancellation between them */
	TG_CUDA_RETURN_IF(cudaEventRecord(t_kernel.start), "recording an event");
	for (int k = 0; k < n; k++)
	{
		if (tg_canceled(ctx))
			return tg_error_set(err, TG_ECANCELED, "viewshed canceled");
		tgk_viewshed_r2<true><<<setups[k].nrays, RAY_THREADS>>>(setups[k], z.p, nullptr, d_count.p);
		TG_CUDA_RETURN_IF_LAUNCH("launching the viewshed kernel");
		if ((k & 15) == 15)
			TG_CUDA_RETURN_IF(cudaDeviceSynchronize(), "running the viewshed kernel");
	}
	TG_CUDA_RETURN_IF(cudaEventRecord(t_kernel.stop), "recording an event");
	TG_CUDA_RETURN_IF(cudaEventRecord(t_back.start), "recording an event");
	TG_CUDA_RETURN_IF(cudaMemcpy(count, d_count.p, cells * sizeof(uint32_t), cudaMemcpyDeviceToHost),
					  "copying the counts back from the GPU");
	TG_CUDA_RETURN_IF(cudaEventRecord(t_back.stop), "recording an event");
	TG_CUDA_RETURN_IF(cudaEventSynchronize(t_back.stop), "running the viewshed kernel");

	/* every observer sees its own cell (no ray decides it) */
	for (int k = 0; k < n; k++)
		count[(size_t) rows[k] * dem->width + cols[k]]++;
	if (ctx->stats)
	{
		ctx->stats->kernel_ms += t_kernel.elapsed();
		ctx->stats->transfer_ms += up_ms + t_back.elapsed();
		ctx->stats->chunks = n;
		ctx->stats->iterations = n;
	}
	return TG_OK;
}
