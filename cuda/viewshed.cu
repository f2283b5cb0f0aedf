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

__global__ void __launch_bounds__(RAY_THREADS)
tgk_viewshed_r2(tg_view_setup s, const double *__restrict__ z, float *__restrict__ out)
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
	double		carry = -INFINITY;

	for (int64_t base = 0; base < i; base += RAY_THREADS)
	{
		const int64_t k = base + threadIdx.x + 1;
		const double h = k <= i ? tg_view_sample(&s, z, xmajor, sgn, i, j, k) : -INFINITY;
		double		before,
					chunk_max;

		scan_t(scan_tmp).ExclusiveScan(h, before, -INFINITY, dmax(), chunk_max);
		before = before > carry ? before : carry;
		if (k <= i)
		{
			const int64_t num = k * j;
			const int64_t q = tg_floor_div(num, i);

			for (int64_t jj = q; jj <= q + 1; jj++)
			{
				const int64_t off = num - jj * i;
				const int	a = xmajor ? (int) (sgn * k) : (int) jj;
				const int	b = xmajor ? (int) jj : (int) (sgn * k);

				if (2 * (off < 0 ? -off : off) <= i && tg_view_owns(&s, dx, dy, a, b))
					out[(int64_t) (s.oy + b) * s.width + s.ox + a] =
						tg_view_decide(&s, z, s.ox + a, s.oy + b, a, b, before);
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
	tgk_viewshed_r2<<<s.nrays, RAY_THREADS>>>(s, z.p, d_out.p);
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
