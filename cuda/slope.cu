/*
 * slope.cu — Horn slope on the GPU.
 *
 * The band travels in its stored pixel type (2 bytes a cell for the usual
 * Int16 DEM) and is decoded on the device.  Each block stages a 34 x 34 tile
 * of doubles (a 32 x 32 output tile plus a one-cell halo, nodata as NaN) in
 * shared memory, then every thread evaluates tg_horn_slope() — the same
 * function the CPU path uses — for 4 cells of a column.
 *
 * The raster is processed in horizontal strips sized to the device memory
 * budget (one strip when it fits); each strip carries one halo row above and
 * below, and cancellation is polled between strips.
 */
#include <algorithm>

#include "tg_cuda_common.cuh"
#include "tg_pixels.cuh"
#include "terrain/terrain.h"

namespace
{
constexpr int TILE_W = 32;
constexpr int TILE_H = 32;
constexpr int BLOCK_ROWS = 8;

struct band_desc
{
	int			width;
	bool		has_nodata;
	bool		all_nodata;
	double		nodata;
};

/*
 * in:  rows [in_row0, in_row0 + in_rows) of the band;
 * out: rows [out_row0, out_row0 + out_rows) of the result.
 * Rows outside the input strip are outside the raster (the strip carries the
 * halo), so they read as missing.
 */
template <class PF>
__global__ void __launch_bounds__(TILE_W * BLOCK_ROWS)
tgk_slope(const typename PF::storage *__restrict__ in, int in_row0, int in_rows,
		  int out_row0, int out_rows, band_desc b, tg_horn_factors f,
		  float out_nodata, float *__restrict__ out)
{
	__shared__ double tile[TILE_H + 2][TILE_W + 2];
	const int	x0 = blockIdx.x * TILE_W;
	const int	y0 = out_row0 + blockIdx.y * TILE_H;
	const int	tid = threadIdx.y * TILE_W + threadIdx.x;

	for (int idx = tid; idx < (TILE_H + 2) * (TILE_W + 2); idx += TILE_W * BLOCK_ROWS)
	{
		const int	ty = idx / (TILE_W + 2);
		const int	tx = idx % (TILE_W + 2);
		const int	gx = x0 - 1 + tx;
		const int	gy = y0 - 1 + ty;
		double		v = NAN;

		if (gx >= 0 && gx < b.width && gy >= in_row0 && gy < in_row0 + in_rows)
		{
			v = PF::load(in, (size_t) (gy - in_row0) * b.width + gx);
			if (tg_is_nodata(v, b.has_nodata, b.all_nodata, PF::is_float, b.nodata))
				v = NAN;
		}
		tile[ty][tx] = v;
	}
	__syncthreads();

	const int	tx = threadIdx.x;
	const int	gx = x0 + tx;

	if (gx >= b.width)
		return;
	for (int r = threadIdx.y; r < TILE_H; r += BLOCK_ROWS)
	{
		const int	gy = y0 + r;

		if (gy >= out_row0 + out_rows)
			break;

		double		w[9] = {
			tile[r][tx], tile[r][tx + 1], tile[r][tx + 2],
			tile[r + 1][tx], tile[r + 1][tx + 1], tile[r + 1][tx + 2],
			tile[r + 2][tx], tile[r + 2][tx + 1], tile[r + 2][tx + 2]
		};

		out[(size_t) (gy - out_row0) * b.width + gx] =
			isnan(w[4]) ? out_nodata : tg_horn_slope(w, f);
	}
}

void
launch(tg_pixtype pt, const void *in, int in_row0, int in_rows, int out_row0, int out_rows,
	   const band_desc &b, const tg_slope_params &p, float *out)
{
	dim3		block(TILE_W, BLOCK_ROWS);
	dim3		grid(tg_div_up(b.width, TILE_W), tg_div_up(out_rows, TILE_H));

	with_pixel_format(pt, [&](auto pf) {
		using PF = decltype(pf);
		tgk_slope<PF><<<grid, block>>>(static_cast<const typename PF::storage *>(in),
									   in_row0, in_rows, out_row0, out_rows, b,
									   tg_horn_factors_for(p), p.out_nodata, out);
	});
}
}								/* namespace */

static tg_status
slope_impl(const tg_ctx *ctx, const tg_band *dem, const tg_slope_params *params, float *out,
		   tg_error *err)
{
	const size_t W = (size_t) dem->width;
	const size_t H = (size_t) dem->height;
	const size_t pix = (size_t) tg_pixtype_size(dem->pixtype);
	const band_desc b = {dem->width, dem->has_nodata, dem->is_nodata, dem->nodata};
	dbuf<uint8_t> d_in;
	dbuf<float> d_out;
	event_timer up,				/* the strip's upload */
				down;			/* its slope's download; the kernel runs between */
	size_t		budget = 0;
	size_t		strip_rows;

	if (W == 0 || H == 0)
		return TG_OK;
	if (tg_cuda_memory_budget(ctx, &budget, err) != TG_OK)
		return err->code;

	/* a strip of n output rows holds n + 2 input rows and n output rows */
	if (budget < 2 * W * pix + W * (pix + sizeof(float)))
	{
		tg_error_set(err, TG_ENOMEM, "slope of a %zu-pixel-wide raster needs at least %zu bytes of GPU memory, %zu are available",
					 W, 2 * W * pix + W * (pix + sizeof(float)), budget);
		err->on_device = true;
		return TG_ENOMEM;
	}
	strip_rows = std::min(H, (budget - 2 * W * pix) / (W * (pix + sizeof(float))));

	TG_CUDA_CHECK(d_in.alloc((strip_rows + 2) * W * pix), "allocating the input strip");
	TG_CUDA_CHECK(d_out.alloc(strip_rows * W), "allocating the output strip");
	TG_CUDA_CHECK(up.init(), "creating timing events");
	TG_CUDA_CHECK(down.init(), "creating timing events");

	for (size_t o0 = 0; o0 < H; o0 += strip_rows)
	{
		const size_t o1 = std::min(H, o0 + strip_rows);
		const size_t s0 = o0 > 0 ? o0 - 1 : 0;
		const size_t s1 = std::min(H, o1 + 1);

		if (tg_canceled(ctx))
			return tg_error_set(err, TG_ECANCELED, "slope canceled");

		TG_CUDA_CHECK(cudaEventRecord(up.start), "recording an event");
		TG_CUDA_CHECK(tg_cuda_copy_to_device(ctx, d_in.p, (const uint8_t *) dem->data + s0 * W * pix,
											 (s1 - s0) * W * pix),
					  "copying the DEM to the GPU");
		TG_CUDA_CHECK(cudaEventRecord(up.stop), "recording an event");
		launch(dem->pixtype, d_in.p, (int) s0, (int) (s1 - s0), (int) o0, (int) (o1 - o0), b,
			   *params, d_out.p);
		TG_CUDA_CHECK(cudaGetLastError(), "launching the slope kernel");
		TG_CUDA_CHECK(cudaEventRecord(down.start), "recording an event");
		TG_CUDA_CHECK(tg_cuda_copy_to_host(ctx, out + o0 * W, d_out.p, (o1 - o0) * W * sizeof(float)),
					  "copying the slope back from the GPU");
		TG_CUDA_CHECK(cudaEventRecord(down.stop), "recording an event");
		TG_CUDA_CHECK(cudaEventSynchronize(down.stop), "running the slope kernel");

		if (ctx->stats)
		{
			ctx->stats->transfer_ms += up.elapsed() + down.elapsed();
			ctx->stats->kernel_ms += tg_cuda_elapsed_ms(up.stop, down.start);
			ctx->stats->chunks++;
		}
	}
	return TG_OK;
}

extern "C" tg_status
tg_cuda_slope(const tg_ctx *ctx, const tg_band *dem, const tg_slope_params *params,
			  float *out, tg_error *err)
{
	return tg_cuda_catch_all(err, [&] {
		return slope_impl(ctx, dem, params, out, err);
	});
}
