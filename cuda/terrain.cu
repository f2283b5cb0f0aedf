/*
 * terrain.cu — the local terrain derivatives on the GPU (tg_terrain, and so
 * tg_slope).
 *
 * The band travels in its stored pixel type (2 bytes a cell for the usual
 * Int16 DEM) and one kernel decodes it into a block of doubles padded with
 * `halo` NaN columns on either side (nodata as NaN), as terrain_cpu.c
 * decodes its rows; a second runs one thread per cell through
 * tg_terrain_cell(), terrain.h's formulas that the CPU path runs along
 * rows.  This file is compiled without fused multiply-adds (Makefile), so
 * every sum and product rounds as on the CPU.
 *
 * The raster is processed in strips of rows sized to the device memory
 * budget (one strip when it fits), each read with `halo` rows above and
 * below; cancellation is polled between strips.
 */
#include <algorithm>

#include "tg_cuda_common.cuh"
#include "tg_pixels.cuh"
#include "terrain/terrain.h"

namespace
{
constexpr int BLOCK_X = 32;
constexpr int BLOCK_Y = 8;
constexpr int DECODE_THREADS = 256;

struct band_desc
{
	int			width;
	bool		has_nodata;
	bool		all_nodata;
	double		nodata;
};

/* Device planes of a strip, one per product. */
struct planes
{
	void	   *p[TG_TERRAIN_PRODUCTS];
};

/*
 * block: rows [block_row0, block_row0 + block_rows) of the raster (rows
 * outside it NaN), width + 2 halo columns; in: rows [in_row0, in_row0 +
 * in_rows) of the band.
 */
template <class PF>
__global__ void
tgk_terrain_decode(const typename PF::storage *__restrict__ in, int in_row0, int in_rows, band_desc b,
				   int halo, int block_row0, int block_rows, double *__restrict__ block)
{
	const size_t stride = (size_t) b.width + 2 * halo;
	const size_t n = stride * block_rows;

	for (size_t idx = (size_t) blockIdx.x * blockDim.x + threadIdx.x; idx < n;
		 idx += (size_t) gridDim.x * blockDim.x)
	{
		const int	y = block_row0 + (int) (idx / stride);
		const int	x = (int) (idx % stride) - halo;
		double		v = NAN;

		if (x >= 0 && x < b.width && y >= in_row0 && y < in_row0 + in_rows)
		{
			v = PF::load(in, (size_t) (y - in_row0) * b.width + x);
			if (tg_is_nodata(v, b.has_nodata, b.all_nodata, PF::is_float, b.nodata))
				v = NAN;
		}
		block[idx] = v;
	}
}

/* Row y of the strip's output is row y + halo of the block. */
__global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
tgk_terrain(const double *__restrict__ block, int width, int halo, int out_rows, tg_terrain_consts c,
			planes out)
{
	const int	x = blockIdx.x * BLOCK_X + threadIdx.x;
	const int	y = blockIdx.y * BLOCK_Y + threadIdx.y;
	const ptrdiff_t stride = (ptrdiff_t) width + 2 * halo;

	if (x >= width || y >= out_rows)
		return;
	tg_terrain_cell(&c, block + (y + halo) * stride + halo + x, stride, out.p, (size_t) y * width + x);
}

void
launch_decode(tg_pixtype pt, const void *in, int in_row0, int in_rows, const band_desc &b, int halo,
			  int block_row0, int block_rows, double *block)
{
	const size_t n = ((size_t) b.width + 2 * halo) * block_rows;
	const unsigned blocks = (unsigned) std::min<size_t>(tg_div_up(n, DECODE_THREADS), 65535);

	with_pixel_format(pt, [&](auto pf) {
		using PF = decltype(pf);
		tgk_terrain_decode<PF><<<blocks, DECODE_THREADS>>>(static_cast<const typename PF::storage *>(in),
														   in_row0, in_rows, b, halo, block_row0,
														   block_rows, block);
	});
}
}								/* namespace */

static tg_status
terrain_impl(const tg_ctx *ctx, const tg_band *dem, const tg_terrain_params *params, void *const *out,
			 tg_error *err)
{
	const size_t W = (size_t) dem->width;
	const size_t H = (size_t) dem->height;
	const size_t pix = (size_t) tg_pixtype_size(dem->pixtype);
	const size_t R = (size_t) tg_terrain_halo(params);
	const band_desc b = {dem->width, dem->has_nodata, dem->is_nodata, dem->nodata};
	const int	nproducts = params->nproducts;
	tg_terrain_consts consts;
	size_t		out_bytes = 0;	/* per cell, every product */
	size_t		budget = 0;
	size_t		per_row,
				fixed,
				strip_rows;
	dbuf<uint8_t> d_in;
	dbuf<double> d_block;
	dbuf<uint8_t> d_out[TG_TERRAIN_PRODUCTS];
	planes		d_planes;
	event_timer up,				/* the strip's upload */
				down;			/* its products' download; the kernels run between */

	if (W == 0 || H == 0)
		return TG_OK;
	tg_terrain_prepare(params, &consts);
	for (int k = 0; k < nproducts; k++)
		out_bytes += (size_t) tg_pixtype_size(params->types[k]);
	if (tg_cuda_memory_budget(ctx, &budget, err) != TG_OK)
		return err->code;

	/* a strip of n output rows holds n + 2R input rows, as many block rows, and n rows of products */
	per_row = W * pix + (W + 2 * R) * sizeof(double) + W * out_bytes;
	fixed = 2 * R * (W * pix + (W + 2 * R) * sizeof(double));
	if (budget < fixed + per_row)
	{
		tg_error_set(err, TG_ENOMEM, "terrain derivatives of a %zu-pixel-wide raster need at least %zu bytes of GPU memory, %zu are available",
					 W, fixed + per_row, budget);
		err->on_device = true;
		return TG_ENOMEM;
	}
	strip_rows = std::min(H, (budget - fixed) / per_row);

	TG_CUDA_CHECK(d_in.alloc((strip_rows + 2 * R) * W * pix), "allocating the input strip");
	TG_CUDA_CHECK(d_block.alloc((strip_rows + 2 * R) * (W + 2 * R)), "allocating the decoded strip");
	for (int k = 0; k < nproducts; k++)
	{
		TG_CUDA_CHECK(d_out[k].alloc(strip_rows * W * tg_pixtype_size(params->types[k])),
					  "allocating a product's strip");
		d_planes.p[k] = d_out[k].p;
	}
	TG_CUDA_CHECK(up.init(), "creating timing events");
	TG_CUDA_CHECK(down.init(), "creating timing events");

	for (size_t o0 = 0; o0 < H; o0 += strip_rows)
	{
		const size_t o1 = std::min(H, o0 + strip_rows);
		const size_t s0 = o0 > R ? o0 - R : 0;
		const size_t s1 = std::min(H, o1 + R);
		const dim3	block(BLOCK_X, BLOCK_Y);
		const dim3	grid(tg_div_up(W, BLOCK_X), tg_div_up(o1 - o0, BLOCK_Y));

		if (tg_canceled(ctx))
			return tg_error_set(err, TG_ECANCELED, "terrain derivatives canceled");

		TG_CUDA_CHECK(cudaEventRecord(up.start), "recording an event");
		TG_CUDA_CHECK(tg_cuda_copy_to_device(ctx, d_in.p, (const uint8_t *) dem->data + s0 * W * pix,
											 (s1 - s0) * W * pix),
					  "copying the DEM to the GPU");
		TG_CUDA_CHECK(cudaEventRecord(up.stop), "recording an event");
		launch_decode(dem->pixtype, d_in.p, (int) s0, (int) (s1 - s0), b, (int) R, (int) o0 - (int) R,
					  (int) (o1 - o0 + 2 * R), d_block.p);
		TG_CUDA_CHECK(cudaGetLastError(), "launching the decoding kernel");
		tgk_terrain<<<grid, block>>>(d_block.p, (int) W, (int) R, (int) (o1 - o0), consts, d_planes);
		TG_CUDA_CHECK(cudaGetLastError(), "launching the terrain kernel");
		TG_CUDA_CHECK(cudaEventRecord(down.start), "recording an event");
		for (int k = 0; k < nproducts; k++)
		{
			const size_t size = (size_t) tg_pixtype_size(params->types[k]);

			TG_CUDA_CHECK(tg_cuda_copy_to_host(ctx, (uint8_t *) out[k] + o0 * W * size, d_out[k].p,
											   (o1 - o0) * W * size),
						  "copying the terrain derivatives back from the GPU");
		}
		TG_CUDA_CHECK(cudaEventRecord(down.stop), "recording an event");
		TG_CUDA_CHECK(cudaEventSynchronize(down.stop), "running the terrain kernels");

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
tg_cuda_terrain(const tg_ctx *ctx, const tg_band *dem, const tg_terrain_params *params, void *const *out,
				tg_error *err)
{
	return tg_cuda_catch_all(err, [&] {
		return terrain_impl(ctx, dem, params, out, err);
	});
}
