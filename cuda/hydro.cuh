/*
 * hydro.cuh — what the hydrology .cu files share: the DEM on the device, and
 * a tiled monotone relaxation used for the depression fill and for the
 * breadth-first gradients of flats.
 */
#ifndef TG_HYDRO_CUH
#define TG_HYDRO_CUH

#include <cstdint>
#include <type_traits>

#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "tg_cuda_common.cuh"
#include "hydro/hydro.h"
#include "tg_pixels.cuh"

static inline unsigned
grid_for(size_t n, unsigned block = 256)
{
	size_t		g = (n + block - 1) / block;

	return (unsigned) (g < 1 ? 1 : g > 65535u * 32 ? 65535u * 32 : g);
}

#define TG_GRID_STRIDE(i, n) \
	for (size_t i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
		 i += (size_t) gridDim.x * blockDim.x)

/* out[0, *count) = the indices i < n where flag[i], in order (flag: any iterator; count on the device) */
template <typename Flags>
tg_status
select_cells(Flags flag, size_t n, uint32_t *out, uint32_t *count, tg_error *err)
{
	const thrust::counting_iterator<uint32_t> cells(0);
	size_t		bytes = 0;
	dbuf<uint8_t> tmp;

	TG_CUDA_CHECK(cub::DeviceSelect::Flagged(nullptr, bytes, cells, flag, out, count, (int64_t) n),
				  "sizing a selection");
	TG_CUDA_CHECK(tmp.alloc(bytes), "allocating a selection's scratch");
	TG_CUDA_CHECK(cub::DeviceSelect::Flagged(tmp.p, bytes, cells, flag, out, count, (int64_t) n), "selecting cells");
	return TG_OK;
}

/* out[i] = v for every cell: buffers start on the device, nothing crosses PCIe. */
template <typename T>
__global__ void
tgk_fill(T *__restrict__ out, size_t n, T v)
{
	TG_GRID_STRIDE(i, n)
		out[i] = v;
}

/* Cell kinds: where nothing flows, where water leaves, where it is routed. */
enum : uint8_t { KIND_NODATA = 0, KIND_OUTLET = 1, KIND_INTERIOR = 2 };

/* Stored band -> V (NaN for nodata), on the device. */
template <class PF, typename V>
__global__ void
tgk_decode(const typename PF::storage *__restrict__ in, size_t n, bool has_nodata,
		   bool all_nodata, double nodata, V *__restrict__ out)
{
	TG_GRID_STRIDE(i, n)
	{
		double		v = PF::load(in, i);

		out[i] = tg_is_nodata(v, has_nodata, all_nodata, PF::is_float, nodata) ? (V) NAN : (V) v;
	}
}

/*
 * The kinds of rows [y0, y0 + nrows) of z's `count` rows (kind: those rows
 * alone): nodata; outlet where water leaves — the grid's edge, the first
 * or last of these rows where nothing lies beyond it, a cell next to nodata
 * in any of the rows; interior.  The first and last rows' other cells are
 * edge_kind: interior on a whole grid, seeds of a strip's fill scan.
 */
template <typename V>
__global__ void
tgk_classify(const V *__restrict__ z, int W, int count, int y0, int nrows, uint8_t edge_kind,
			 uint8_t *__restrict__ kind)
{
	const bool	above = y0 > 0,
				below = y0 + nrows < count;

	TG_GRID_STRIDE(i, (size_t) W * nrows)
	{
		const int	x = (int) (i % W),
					y = (int) (i / W),
					wy = y0 + y;
		uint8_t		k = KIND_NODATA;

		if (!isnan(z[(size_t) wy * W + x]))
		{
			bool		outlet = x == 0 || x == W - 1 || (y == 0 && !above) || (y == nrows - 1 && !below);

			for (int d = 0; d < 8 && !outlet; d++)
			{
				const int	ny = wy + tg_nbr_dy(d);

				outlet = ny >= 0 && ny < count && isnan(z[(size_t) ny * W + x + tg_nbr_dx(d)]);
			}
			k = outlet ? KIND_OUTLET : y == 0 || y == nrows - 1 ? edge_kind : KIND_INTERIOR;
		}
		kind[i] = k;
	}
}

/*
 * Copy a band to the device and decode it into z (NaN = nodata).
 */
template <typename V>
tg_status
upload_dem(const tg_ctx *ctx, const tg_band *dem, dbuf<V> &z, double *transfer_ms, tg_error *err)
{
	const size_t n = (size_t) dem->width * dem->height;
	const size_t bytes = n * (size_t) tg_pixtype_size(dem->pixtype);
	dbuf<uint8_t> raw;
	event_timer t;

	TG_CUDA_CHECK(raw.alloc(bytes), "allocating the DEM on the GPU");
	TG_CUDA_CHECK(z.alloc(n), "allocating the DEM on the GPU");
	TG_CUDA_CHECK(t.init(), "creating timing events");
	TG_CUDA_CHECK(cudaEventRecord(t.start), "recording an event");
	TG_CUDA_CHECK(tg_cuda_copy_to_device(ctx, raw.p, dem->data, bytes),
				  "copying the DEM to the GPU");
	TG_CUDA_CHECK(cudaEventRecord(t.stop), "recording an event");
	with_pixel_format(dem->pixtype, [&](auto pf) {
		using PF = decltype(pf);
		tgk_decode<PF, V><<<grid_for(n), 256>>>(reinterpret_cast<const typename PF::storage *>(raw.p),
												 n, dem->has_nodata, dem->is_nodata, dem->nodata, z.p);
	});
	TG_CUDA_CHECK(cudaGetLastError(), "decoding the DEM");
	TG_CUDA_CHECK(cudaEventSynchronize(t.stop), "copying the DEM to the GPU");
	*transfer_ms += t.elapsed();
	return TG_OK;
}

/* ------------------------------------------------------------------------
 * Tiled monotone relaxation
 *
 * Repeats v(c) <- op.relax(c, v(c), v(neighbours)) for the cells op marks
 * updatable, where relax never increases a value, until nothing changes: the
 * greatest fixed point below the starting values, which is unique for our
 * uses (fill surface, breadth-first distances), whatever
 * the order of the updates.  Each block loads a 32 x 32 tile and its halo
 * into shared memory and iterates in place until the tile is stable; a tile
 * whose border changed re-activates its neighbours for the next round; the
 * rounds end when no tile was re-activated.  Reads of a halo that another
 * block is rewriting see an old or a new value, both upper bounds, and the
 * re-activation then brings the new one in.
 * ------------------------------------------------------------------------ */
constexpr int RELAX_TILE = 32;
constexpr int RELAX_ROWS = 8;	/* threads per column of a tile: 4 cells each */

template <class Op>
__global__ void __launch_bounds__(RELAX_TILE * RELAX_ROWS)
tgk_relax_tiles(Op op, typename Op::value_t *__restrict__ vals, int W, int H, int tiles_x,
				const uint8_t *__restrict__ active, uint8_t *__restrict__ next_active,
				unsigned *__restrict__ activations)
{
	using V = typename Op::value_t;
	constexpr int S = RELAX_TILE + 2;
	constexpr int PER = RELAX_TILE / RELAX_ROWS;
	__shared__ V tile[S][S];
	const int	bx = blockIdx.x,
				by = blockIdx.y;
	const int	tid = threadIdx.y * RELAX_TILE + threadIdx.x;

	if (!active[(size_t) by * tiles_x + bx])
		return;

	const int	x0 = bx * RELAX_TILE,
				y0 = by * RELAX_TILE;

	for (int idx = tid; idx < S * S; idx += RELAX_TILE * RELAX_ROWS)
	{
		int			sy = idx / S,
					sx = idx % S;
		int			gx = x0 - 1 + sx,
					gy = y0 - 1 + sy;

		tile[sy][sx] = (gx >= 0 && gy >= 0 && gx < W && gy < H) ? vals[(size_t) gy * W + gx]
			: op.outside();
	}
	__syncthreads();

	const int	lx = threadIdx.x;
	size_t		gi[PER];
	bool		upd[PER];
	V			orig[PER];

#pragma unroll
	for (int j = 0; j < PER; j++)
	{
		int			ly = threadIdx.y + j * RELAX_ROWS;
		int			gx = x0 + lx,
					gy = y0 + ly;

		gi[j] = (size_t) gy * W + gx;
		upd[j] = gx < W && gy < H && op.updatable(gi[j]);
		orig[j] = tile[ly + 1][lx + 1];
	}

	bool		changed;

	do
	{
		changed = false;
#pragma unroll
		for (int j = 0; j < PER; j++)
		{
			const int	ly = threadIdx.y + j * RELAX_ROWS;
			V			nb[8];
			V			cur,
						v;

			if (!upd[j])
				continue;
			cur = tile[ly + 1][lx + 1];
#pragma unroll
			for (int k = 0; k < 8; k++)
				nb[k] = tile[ly + 1 + tg_nbr_dy(k)][lx + 1 + tg_nbr_dx(k)];
			v = op.relax(gi[j], cur, nb);
			if (v < cur)
			{
				tile[ly + 1][lx + 1] = v;
				changed = true;
			}
		}
	} while (__syncthreads_or(changed));

	bool		border = false;

#pragma unroll
	for (int j = 0; j < PER; j++)
	{
		const int	ly = threadIdx.y + j * RELAX_ROWS;
		V			v = tile[ly + 1][lx + 1];

		if (upd[j] && v != orig[j])
		{
			vals[gi[j]] = v;
			border |= lx == 0 || ly == 0 || lx == RELAX_TILE - 1 || ly == RELAX_TILE - 1;
		}
	}
	if (__syncthreads_or(border) && tid == 0)
	{
		const int	tiles_y = (H + RELAX_TILE - 1) / RELAX_TILE;

		for (int k = 0; k < 8; k++)
		{
			int			nx = bx + tg_nbr_dx(k),
						ny = by + tg_nbr_dy(k);

			if (nx >= 0 && ny >= 0 && nx < tiles_x && ny < tiles_y)
				next_active[(size_t) ny * tiles_x + nx] = 1;
		}
		atomicAdd(activations, 1u);
	}
}

/* Rounds launched between two reads of the activation counters. */
constexpr int RELAX_ROUNDS_PER_CHECK = 4;

/*
 * Run the relaxation to its fixed point.  rounds: how many passes it took
 * (up to the first that re-activated no tile).
 */
template <class Op>
tg_status
relax_tiles(const tg_ctx *ctx, const Op &op, typename Op::value_t *vals, int W, int H,
			int *rounds, tg_error *err)
{
	const int	tiles_x = (W + RELAX_TILE - 1) / RELAX_TILE;
	const int	tiles_y = (H + RELAX_TILE - 1) / RELAX_TILE;
	const size_t ntiles = (size_t) tiles_x * tiles_y;
	dbuf<uint8_t> cur,
				next;
	dbuf<unsigned> activations;
	unsigned	counts[RELAX_ROUNDS_PER_CHECK];
	dim3		block(RELAX_TILE, RELAX_ROWS);
	dim3		grid(tiles_x, tiles_y);

	TG_CUDA_CHECK(cur.alloc(ntiles), "allocating tile flags");
	TG_CUDA_CHECK(next.alloc(ntiles), "allocating tile flags");
	TG_CUDA_CHECK(activations.alloc(RELAX_ROUNDS_PER_CHECK), "allocating counters");
	TG_CUDA_CHECK(cudaMemset(cur.p, 1, ntiles), "clearing tile flags");

	for (*rounds = 0;;)
	{
		if (tg_canceled(ctx))
			return tg_error_set(err, TG_ECANCELED, "canceled");
		TG_CUDA_CHECK(cudaMemsetAsync(activations.p, 0, sizeof counts), "clearing counters");
		for (int r = 0; r < RELAX_ROUNDS_PER_CHECK; r++)
		{
			TG_CUDA_CHECK(cudaMemsetAsync(next.p, 0, ntiles), "clearing tile flags");
			tgk_relax_tiles<Op><<<grid, block>>>(op, vals, W, H, tiles_x, cur.p, next.p,
												 activations.p + r);
			std::swap(cur.p, next.p);
		}
		TG_CUDA_CHECK(cudaGetLastError(), "relaxing tiles");
		TG_CUDA_CHECK(cudaMemcpy(counts, activations.p, sizeof counts, cudaMemcpyDeviceToHost),
					  "relaxing tiles");
		for (int r = 0; r < RELAX_ROUNDS_PER_CHECK; r++)
		{
			(*rounds)++;
			if (counts[r] == 0)
				return TG_OK;	/* nothing changed at a tile border: converged */
		}
	}
}

/* Depression fill: v(c) <- max(Z(c), min(v(c), min_n inc(v(n)))). */
template <typename V>
struct fill_op
{
	using value_t = V;
	const V    *z;
	const uint8_t *kind;
	double		eps;

	__device__ V outside() const
	{
		return (V) NAN;
	}
	__device__ bool updatable(size_t i) const
	{
		return kind[i] == KIND_INTERIOR;
	}
	__device__ V relax(size_t i, V cur, const V nb[8]) const
	{
		V			best = cur;

#pragma unroll
		for (int k = 0; k < 8; k++)
		{
			V			v = (V) tg_fill_inc((double) nb[k], eps, std::is_same<V, float>::value);

			if (v < best)
				best = v;
		}
		return best < z[i] ? z[i] : best;
	}
};

/*
 * Flat labels by union-find (route.cu): with parent[i] = i beforehand for the
 * flat cells of a W x H grid, none in its first or last column, each flat
 * cell's label after the merge and the resolve is the smallest index of its
 * flat (8-connected flat cells of the grid).  The routing's flats, a strip's
 * crossing flats and the fill scan's flats.
 */
__global__ void tgk_flat_merge(const uint8_t *__restrict__ flat, int W, int H, uint32_t *parent);
__global__ void tgk_flat_resolve(const uint8_t *__restrict__ flat, size_t n, uint32_t *label);

/* Host-side entry points shared between the hydrology .cu files. */
template <typename V>
tg_status	fill_surface(const tg_ctx *ctx, const V *z, const uint8_t *kind, int W, int H,
						 tg_fill_method method, double eps, V *w, int *iterations, tg_error *err);

#endif							/* TG_HYDRO_CUH */
