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
 * use the same arithmetic as the CPU walk (viewshed/viewshed.h): the output is
 * identical.
 */
#include <cub/block/block_scan.cuh>

#include "hydro.cuh"
#include "viewshed/viewshed.h"

namespace
{
constexpr int RAY_THREADS = 256;

#ifndef TG_VIEW_MIN_BLOCKS
#define TG_VIEW_MIN_BLOCKS 4		/* blocks per multiprocessor the registers must allow */
#endif

struct dmax
{
	__device__ __forceinline__ double operator() (double a, double b) const
	{
		return a > b ? a : b;
	}
};

/*
 * COUNT = false: write each decided cell's value to out;
 * COUNT = true: add 1 to count for each cell seen (a cumulative viewshed).
 *
 * Rows lo..hi of z and out are on the device (the whole raster, or one
 * strip of rows with a row of halo on each side); z and out point at where
 * row 0 would be, so rows index them directly.  A ray goes as far as its
 * steps stay within those rows; with `carry`/`next` (strips) it records
 * its horizon and next step for the following strip, without them it
 * starts at step 1 and must finish.  T: the elevations as stored on the
 * device (float where the pixel type converts exactly, which halves the
 * traffic); the arithmetic is double either way.
 */
template <bool COUNT, typename T>
__global__ void __launch_bounds__(RAY_THREADS, TG_VIEW_MIN_BLOCKS)
tgk_viewshed_r2(tg_view_setup s, const T *__restrict__ z, float *__restrict__ out,
				uint32_t *__restrict__ count, int lo, int hi, double *__restrict__ carry_state,
				int64_t *__restrict__ next_state)
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
	tg_view_rivals rivals;
	double		carry = carry_state ? carry_state[blockIdx.x] : -INFINITY;
	int64_t		first = next_state ? next_state[blockIdx.x] : 1;

	__shared__ tg_view_advance chunk;	/* the ray's, kept out of registers */
	tg_view_walk w;

	tg_view_rivals_init(&s, dx, dy, &rivals);
	if (threadIdx.x == 0)
		tg_view_advance_init(&s, xmajor, sgn, i, j, RAY_THREADS, &chunk);
	tg_view_walk_start(&s, xmajor, sgn, i, j, first + threadIdx.x, &w);
	__syncthreads();
	for (int64_t base = first - 1; base < steps; base += RAY_THREADS, tg_view_walk_next(&w, &chunk, i))
	{
		const int64_t k = w.k;
		tg_view_point p;
		tg_view_sample e;
		double		z0 = NAN,
					z1 = NAN,
					before,
					chunk_max;

		tg_view_locate(&s, xmajor, i, &w, &p);

		/* the rows step k reads and may write */
		const int64_t r_lo = xmajor ? s.oy + p.q : s.oy + sgn * k;
		const int64_t r_hi = xmajor ? r_lo + (p.rem != 0) : r_lo;
		const bool	ok = k <= steps && r_lo >= lo && r_hi <= hi;

		e.h = -INFINITY;
		if (ok)
		{
			z0 = (double) z[p.at0];
			if (p.rem != 0)
				z1 = (double) z[p.at1];
			tg_view_eval(&s, &p, i, z0, z1, &e);
		}
		scan_t(scan_tmp).ExclusiveScan(e.h, before, -INFINITY, dmax(), chunk_max);
		before = before > carry ? before : carry;
		if (ok)
		{
			/* one candidate but where the ray passes midway: a warp runs
			 * the decision once, not once per possible cell */
			int			c0,
						c1;

			tg_view_candidates(&p, i, &c0, &c1);
			for (int c = c0; c <= c1; c++)
			{
				if (tg_view_rivals_decide(&rivals, k, p.q + c, c == 0 ? p.rem : i - p.rem))
				{
					const int	a = xmajor ? (int) (sgn * k) : (int) (p.q + c);
					const int	b = xmajor ? (int) (p.q + c) : (int) (sgn * k);
					const int64_t at = (int64_t) (s.oy + b) * s.width + s.ox + a;
					const float v = tg_view_decide(&s, c == 0 ? z0 : z1, a, b, &e, before);

					if (!COUNT)
						out[at] = v;
					else if (v == 1.0f)
						atomicAdd(&count[at], 1u);
				}
			}
		}
		carry = chunk_max > carry ? chunk_max : carry;
		/* steps leave the rows monotonically: the processed ones are a prefix */
		const int	done = __syncthreads_count(ok);

		if (done < RAY_THREADS && base + done < steps)
		{
			if (next_state && threadIdx.x == 0)
			{
				next_state[blockIdx.x] = base + done + 1;
				carry_state[blockIdx.x] = carry;
			}
			return;
		}
	}
	if (next_state && threadIdx.x == 0)
	{
		next_state[blockIdx.x] = steps + 1;
		carry_state[blockIdx.x] = carry;
	}
}

/* Value no decision produces: marks the cells a strip left alone. */
#define UNDECIDED (-INFINITY)

/*
 * Rasters beyond the device budget: strips of rows, the observer's first and
 * then outward (each ray meets its rows in that order), with per-ray horizon
 * and step carried from band to band.  Two buffers on two streams: while one
 * band is on the GPU, the next is staged and the previous merged on the host.
 */
template <typename T>
tg_status
viewshed_strips(const tg_ctx *ctx, const tg_band *dem, const tg_view_setup &s, size_t budget,
				  float *out, tg_error *err)
{
	const int	W = dem->width,
				H = dem->height;
	const size_t pix = tg_pixtype_size(dem->pixtype);
	const size_t state = (size_t) s.nrays * (sizeof(double) + sizeof(int64_t));
	const size_t per_row = 2 * (size_t) W * (pix + sizeof(T) + sizeof(float));
	dbuf<double> carry;
	dbuf<int64_t> next;
	dbuf<uint8_t> raw[2];
	dbuf<T>		z[2];
	dbuf<float> dout[2];
	pinned_buf<uint8_t> in_h[2];
	pinned_buf<float> out_h[2];
	cuda_event	done[2],
				kdone;
	/* last, so destroyed first: their work is over before the buffers go */
	cuda_stream stream[2];
	int			pending_lo[2] = {-1, -1},
				pending_rows[2] = {0, 0};
	hbuf<int>	order(ctx);		/* strips in the order they run */
	size_t		norder = 0;
	int64_t		rows;

	rows = budget > state + 2 * per_row ? (int64_t) ((budget - state) / per_row) - 2 : 0;
	if (rows < 1)
	{
		tg_error_set(err, TG_ENOMEM, "a viewshed of a %d-pixel-wide raster needs at least %zu bytes of GPU memory, %zu are available",
					 W, state + 3 * per_row, budget);
		err->on_device = true;
		return TG_ENOMEM;
	}
	{
		const int	nseg = (int) ((H + rows - 1) / rows);
		const int	so = (int) (s.oy / rows);

		if (!order.alloc((size_t) nseg))
			return tg_cuda_host_oom(err, "the strip order");
		order[norder++] = so;
		for (int d = 1; d < nseg; d++)
		{
			if (so - d >= 0)
				order[norder++] = so - d;
			if (so + d < nseg)
				order[norder++] = so + d;
		}
	}

	TG_CUDA_CHECK(carry.alloc(s.nrays), "allocating ray state");
	TG_CUDA_CHECK(next.alloc(s.nrays), "allocating ray state");
	for (int b = 0; b < 2; b++)
	{
		TG_CUDA_CHECK(raw[b].alloc((rows + 2) * W * pix), "allocating a strip");
		TG_CUDA_CHECK(z[b].alloc((rows + 2) * W), "allocating a strip");
		TG_CUDA_CHECK(dout[b].alloc((rows + 2) * W), "allocating a strip");
		TG_CUDA_CHECK(in_h[b].alloc((rows + 2) * W * pix), "allocating pinned staging memory");
		TG_CUDA_CHECK(out_h[b].alloc((rows + 2) * W), "allocating pinned staging memory");
		TG_CUDA_CHECK(stream[b].create(cudaStreamNonBlocking), "creating a stream");
		TG_CUDA_CHECK(done[b].create(cudaEventDisableTiming), "creating an event");
	}
	TG_CUDA_CHECK(kdone.create(cudaEventDisableTiming), "creating an event");
	/* every ray starts at step 1 under an empty horizon */
	{
		hbuf<double> c(ctx);
		hbuf<int64_t> nx(ctx);

		if (!c.alloc(s.nrays) || !nx.alloc(s.nrays))
			return tg_cuda_host_oom(err, "ray state");
		for (int k = 0; k < s.nrays; k++)
		{
			c[k] = -INFINITY;
			nx[k] = 1;
		}
		TG_CUDA_CHECK(cudaMemcpy(carry.p, c.p, s.nrays * sizeof(double), cudaMemcpyHostToDevice),
					  "initialising ray state");
		TG_CUDA_CHECK(cudaMemcpy(next.p, nx.p, s.nrays * sizeof(int64_t), cudaMemcpyHostToDevice),
					  "initialising ray state");
	}
	for (size_t c = 0; c < (size_t) W * H; c++)
		out[c] = NAN;

	for (size_t n = 0; n <= norder; n++)
	{
		const int	b = (int) (n % 2);

		/* the buffer's previous band: wait for it and merge what it decided */
		if (pending_lo[b] >= 0)
		{
			TG_CUDA_CHECK(cudaEventSynchronize(done[b]), "running the viewshed kernel");
			for (size_t c = 0; c < (size_t) pending_rows[b] * W; c++)
				if (out_h[b][c] != UNDECIDED)
					out[(size_t) pending_lo[b] * W + c] = out_h[b][c];
			pending_lo[b] = -1;
		}
		if (n == norder)
		{
			/* drain the other buffer */
			const int	o = 1 - b;

			if (pending_lo[o] >= 0)
			{
				TG_CUDA_CHECK(cudaEventSynchronize(done[o]), "running the viewshed kernel");
				for (size_t c = 0; c < (size_t) pending_rows[o] * W; c++)
					if (out_h[o][c] != UNDECIDED)
						out[(size_t) pending_lo[o] * W + c] = out_h[o][c];
			}
			break;
		}
		if (tg_canceled(ctx))
			return tg_error_set(err, TG_ECANCELED, "viewshed canceled");
		{
			const int	r0 = order[n] * (int) rows;
			const int	r1 = r0 + (int) rows < H ? r0 + (int) rows : H;
			const int	lo = r0 > 0 ? r0 - 1 : 0;
			const int	hi = r1 < H ? r1 : H - 1;	/* inclusive */
			const size_t cells = (size_t) (hi - lo + 1) * W;

			memcpy(in_h[b].p, (const uint8_t *) dem->data + (size_t) lo * W * pix, cells * pix);
			TG_CUDA_CHECK(cudaMemcpyAsync(raw[b].p, in_h[b].p, cells * pix, cudaMemcpyHostToDevice, stream[b]),
						  "copying a strip to the GPU");
			with_pixel_format(dem->pixtype, [&](auto pf) {
				using PF = decltype(pf);
				tgk_decode<PF, T><<<grid_for(cells), 256, 0, stream[b]>>>(
					reinterpret_cast<const typename PF::storage *>(raw[b].p), cells, dem->has_nodata,
					dem->is_nodata, dem->nodata, z[b].p);
			});
			tgk_fill<float><<<grid_for(cells), 256, 0, stream[b]>>>(dout[b].p, cells, UNDECIDED);
			TG_CUDA_CHECK(cudaStreamWaitEvent(stream[b], kdone, 0), "ordering the strips");
			tgk_viewshed_r2<false, T><<<s.nrays, RAY_THREADS, 0, stream[b]>>>(
				s, z[b].p - (int64_t) lo * W, dout[b].p - (int64_t) lo * W, nullptr, lo, hi,
				carry.p, next.p);
			TG_CUDA_CHECK(cudaGetLastError(), "launching the viewshed kernel");
			TG_CUDA_CHECK(cudaEventRecord(kdone, stream[b]), "recording an event");
			TG_CUDA_CHECK(cudaMemcpyAsync(out_h[b].p, dout[b].p, cells * sizeof(float), cudaMemcpyDeviceToHost,
										  stream[b]), "copying a strip back");
			TG_CUDA_CHECK(cudaEventRecord(done[b], stream[b]), "recording an event");
			pending_lo[b] = lo;
			pending_rows[b] = hi - lo + 1;
		}
	}
	if (ctx->stats)
		ctx->stats->chunks = (int) norder;
	return TG_OK;
}

template <typename T>
tg_status
viewshed_impl(const tg_ctx *ctx, const tg_band *dem, const tg_viewshed_params *params,
			  float *out, tg_error *err)
{
	const size_t n = (size_t) dem->width * dem->height;
	tg_view_setup s;
	dbuf<T>		z;
	dbuf<float> d_out;
	event_timer t_kernel,
				t_back;
	size_t		budget = 0;
	double		up_ms = 0;

	if (tg_view_prepare(dem, params, NULL, &s, err) != TG_OK)
		return err->code;
	if (tg_cuda_memory_budget(ctx, &budget, err) != TG_OK)
		return err->code;
	if (n * (sizeof(T) + sizeof(float) + tg_pixtype_size(dem->pixtype)) > budget)
	{
		/* beyond the budget: strips of rows streamed through the GPU */
		event_timer t_all;

		TG_CUDA_CHECK(t_all.init(), "creating timing events");
		TG_CUDA_CHECK(cudaEventRecord(t_all.start), "recording an event");
		if (viewshed_strips<T>(ctx, dem, s, budget, out, err) != TG_OK)
			return err->code;
		TG_CUDA_CHECK(cudaEventRecord(t_all.stop), "recording an event");
		TG_CUDA_CHECK(cudaEventSynchronize(t_all.stop), "running the viewshed kernel");
		tg_view_finish(&s, out);
		if (ctx->stats)
		{
			/* kernels and transfers overlap: the pipeline's device time */
			ctx->stats->kernel_ms += t_all.elapsed();
			ctx->stats->iterations = s.nrays;
		}
		return TG_OK;
	}
	if (upload_dem(ctx, dem, z, &up_ms, err) != TG_OK)
		return err->code;
	TG_CUDA_CHECK(d_out.alloc(n), "allocating the viewshed on the GPU");
	TG_CUDA_CHECK(t_kernel.init(), "creating timing events");
	TG_CUDA_CHECK(t_back.init(), "creating timing events");
	if (tg_canceled(ctx))
		return tg_error_set(err, TG_ECANCELED, "viewshed canceled");

	TG_CUDA_CHECK(cudaEventRecord(t_kernel.start), "recording an event");
	tgk_fill<float><<<grid_for(n), 256>>>(d_out.p, n, NAN);
	TG_CUDA_CHECK(cudaGetLastError(), "launching the viewshed initialisation");
	tgk_viewshed_r2<false, T><<<s.nrays, RAY_THREADS>>>(s, z.p, d_out.p, nullptr, 0, dem->height - 1,
														 nullptr, nullptr);
	TG_CUDA_CHECK(cudaGetLastError(), "launching the viewshed kernel");
	TG_CUDA_CHECK(cudaEventRecord(t_kernel.stop), "recording an event");
	TG_CUDA_CHECK(cudaEventRecord(t_back.start), "recording an event");
	TG_CUDA_CHECK(tg_cuda_copy_to_host(ctx, out, d_out.p, n * sizeof(float)),
				  "copying the viewshed back from the GPU");
	TG_CUDA_CHECK(cudaEventRecord(t_back.stop), "recording an event");
	TG_CUDA_CHECK(cudaEventSynchronize(t_back.stop), "running the viewshed kernel");

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

template <typename T>
tg_status
viewshed_count_impl(const tg_ctx *ctx, const tg_band *dem, const tg_viewshed_params *params,
					const int *cols, const int *rows, int n, uint32_t *count, tg_error *err)
{
	const size_t cells = (size_t) dem->width * dem->height;
	tg_viewshed_params one = *params;
	dbuf<T>		z;
	dbuf<uint32_t> d_count;
	event_timer t_kernel,
				t_back;
	size_t		budget = 0;
	double		up_ms = 0;
	hbuf<tg_view_setup> setups(ctx);

	if (!setups.alloc((size_t) n))
		return tg_cuda_host_oom(err, "observer setups");
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
	if (cells * (sizeof(T) + sizeof(uint32_t) + tg_pixtype_size(dem->pixtype)) > budget)
	{
		tg_error_set(err, TG_ENOMEM, "a viewshed of %zu cells needs %zu bytes of GPU memory, %zu are available",
					 cells, cells * (sizeof(T) + sizeof(uint32_t) + tg_pixtype_size(dem->pixtype)), budget);
		err->on_device = true;
		return TG_ENOMEM;
	}
	if (upload_dem(ctx, dem, z, &up_ms, err) != TG_OK)
		return err->code;
	TG_CUDA_CHECK(d_count.alloc(cells), "allocating the counts on the GPU");
	TG_CUDA_CHECK(t_kernel.init(), "creating timing events");
	TG_CUDA_CHECK(t_back.init(), "creating timing events");
	TG_CUDA_CHECK(cudaMemset(d_count.p, 0, cells * sizeof(uint32_t)), "clearing the counts");

	/* the DEM stays resident; one launch per observer, cancellation between them */
	TG_CUDA_CHECK(cudaEventRecord(t_kernel.start), "recording an event");
	for (int k = 0; k < n; k++)
	{
		if (tg_canceled(ctx))
			return tg_error_set(err, TG_ECANCELED, "viewshed canceled");
		tgk_viewshed_r2<true, T><<<setups[k].nrays, RAY_THREADS>>>(setups[k], z.p, nullptr, d_count.p, 0,
																 dem->height - 1, nullptr, nullptr);
		TG_CUDA_CHECK(cudaGetLastError(), "launching the viewshed kernel");
		if ((k & 15) == 15)
			TG_CUDA_CHECK(cudaDeviceSynchronize(), "running the viewshed kernel");
	}
	TG_CUDA_CHECK(cudaEventRecord(t_kernel.stop), "recording an event");
	TG_CUDA_CHECK(cudaEventRecord(t_back.start), "recording an event");
	TG_CUDA_CHECK(tg_cuda_copy_to_host(ctx, count, d_count.p, cells * sizeof(uint32_t)),
				  "copying the counts back from the GPU");
	TG_CUDA_CHECK(cudaEventRecord(t_back.stop), "recording an event");
	TG_CUDA_CHECK(cudaEventSynchronize(t_back.stop), "running the viewshed kernel");

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
}								/* namespace */

extern "C" tg_status
tg_cuda_viewshed(const tg_ctx *ctx, const tg_band *dem, const tg_viewshed_params *params,
				 float *out, tg_error *err)
{
	return tg_cuda_catch_all(err, [&] {
		if (pixtype_fits_float(dem->pixtype))
			return viewshed_impl<float>(ctx, dem, params, out, err);
		return viewshed_impl<double>(ctx, dem, params, out, err);
	});
}

extern "C" tg_status
tg_cuda_viewshed_count(const tg_ctx *ctx, const tg_band *dem, const tg_viewshed_params *params,
					   const int *cols, const int *rows, int n, uint32_t *count, tg_error *err)
{
	return tg_cuda_catch_all(err, [&] {
		if (pixtype_fits_float(dem->pixtype))
			return viewshed_count_impl<float>(ctx, dem, params, cols, rows, n, count, err);
		return viewshed_count_impl<double>(ctx, dem, params, cols, rows, n, count, err);
	});
}
