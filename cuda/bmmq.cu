/*
 * bmmq.cu — BMMQ-tree construction on the GPU (Zhang & You 2013's steps as
 * data-parallel passes over a batch of tiles of one size class):
 *
 *   1. leaves:   bin each cell and scatter it to its Z-order slot; the same
 *                block reduces its 32 x 32 cells to min/max for five levels
 *                in shared memory (the paper's transform + scatter + the
 *                first level tables in one pass over the tile);
 *   2. reduce:   the coarser levels, five per pass, from the level tables;
 *   3. scan:     CUB exclusive sum of the "not uniform" flags (min != max,
 *                computed as the scan reads the level tables) of every level
 *                of every tile: the rank of a non-uniform node among those of
 *                its tile, in breadth-first order;
 *   4. assemble: every non-uniform node writes its four children at
 *                1 + 4 * rank(node) + child index — breadth-first order lists
 *                children in the order of their parents, so one scan gives
 *                every position (the paper's count + scan, and the pruning of
 *                the children of uniform nodes, which nobody writes).
 *
 * The node arrays are identical to the CPU builder's (bmmq_cpu.c).
 */
#include <algorithm>
#include <cstring>
#include <numeric>

#include <cub/device/device_scan.cuh>
#include <thrust/iterator/transform_iterator.h>

#include "bmmq/bmmq.h"
#include "tg_cuda_common.cuh"
#include "tg_pixels.cuh"

namespace
{
constexpr int BLOCK_SIDE_LEVELS = 5;	/* a leaves block covers 32 x 32 cells */
constexpr int REDUCE_ENTRIES = 1 << (2 * BLOCK_SIDE_LEVELS);
constexpr int THREADS = 256;
constexpr int SHARED_BOUNDS = 256;	/* more boundaries are searched in global memory */
constexpr int64_t MAX_BATCH_CELLS = (int64_t) 1 << 28;

struct tile_desc
{
	size_t		offset;			/* first pixel in the staged input */
	int			width;
	int			height;
	bool		has_nodata;
	bool		is_nodata;
	double		nodata;
};

/* One size class of a batch: tiles padded to 2^L x 2^L. */
struct batch_shape
{
	int			levels;
	int64_t		cells;			/* 4^L per tile */
	int64_t		upper;			/* (4^L - 1) / 3 entries of levels 0..L-1 per tile */
};

__device__ __forceinline__ uint32_t
pack(uint16_t mn, uint16_t mx)
{
	return (uint32_t) mn | ((uint32_t) mx << 16);
}

/*
 * Reduce `levels` levels of the block's 4^levels entries held in s_min/s_max
 * (Z order), writing each coarser level to the tile's level tables.
 * `level` is the level of the entries held; `first` their first key.
 */
__device__ void
reduce_in_block(uint16_t *s_min, uint16_t *s_max, int level, int64_t first, int levels,
				uint32_t *__restrict__ mm, int64_t tile_base)
{
	int			count = 1 << (2 * levels);

	for (int d = 1; d <= levels; d++)
	{
		const int	parents = count >> 2;
		const int	l = level - d;
		uint16_t	mn[4],
					mx[4];
		int			held = 0;

		/* read every parent's children before anyone overwrites them */
		for (int i = threadIdx.x; i < parents; i += blockDim.x, held++)
		{
			uint16_t	a = s_min[4 * i],
						b = s_max[4 * i];

			for (int c = 1; c < 4; c++)
			{
				a = min(a, s_min[4 * i + c]);
				b = max(b, s_max[4 * i + c]);
			}
			mn[held] = a;
			mx[held] = b;
		}
		__syncthreads();
		held = 0;
		for (int i = threadIdx.x; i < parents; i += blockDim.x, held++)
		{
			const int64_t k = (first >> (2 * d)) + i;
			const int64_t at = tile_base + tg_bmmq_level_start(l) + k;

			s_min[i] = mn[held];
			s_max[i] = mx[held];
			mm[at] = pack(mn[held], mx[held]);
		}
		__syncthreads();
		count = parents;
	}
}

/* Step 1: bin, scatter to Z order, first levels of the pyramid. */
template <typename PF>
__global__ void
tgk_bmmq_leaves(const typename PF::storage *__restrict__ in, const tile_desc *__restrict__ tiles,
				const double *__restrict__ bounds, int nbounds, batch_shape shape,
				uint16_t *__restrict__ zbin, uint32_t *__restrict__ mm)
{
	__shared__ uint16_t s_min[REDUCE_ENTRIES];
	__shared__ uint16_t s_max[REDUCE_ENTRIES];
	__shared__ double s_bounds[SHARED_BOUNDS];
	const int	t = blockIdx.y;
	const tile_desc td = tiles[t];
	const int	side_levels = min(BLOCK_SIDE_LEVELS, shape.levels);
	const int	side = 1 << side_levels;
	const int	n = side * side;
	const int64_t first = (int64_t) blockIdx.x * n; /* Z key of the block's first cell */
	const uint32_t x0 = tg_morton_compact((uint64_t) first);
	const uint32_t y0 = tg_morton_compact((uint64_t) first >> 1);
	const uint16_t pad = (uint16_t) TG_BMMQ_PAD_CODE(nbounds);
	const uint16_t nodata = (uint16_t) TG_BMMQ_NODATA_CODE(nbounds);

	/* the usual few boundaries are searched in shared memory */
	if (nbounds <= SHARED_BOUNDS)
	{
		for (int i = threadIdx.x; i < nbounds; i += blockDim.x)
			s_bounds[i] = bounds[i];
		__syncthreads();
		bounds = s_bounds;
	}

	/* row-major reads (coalesced), Z-order slots in shared memory */
	for (int i = threadIdx.x; i < n; i += blockDim.x)
	{
		const uint32_t lx = i & (side - 1);
		const uint32_t ly = i >> side_levels;
		const uint32_t x = x0 + lx,
					y = y0 + ly;
		uint16_t	code = pad;

		if (x < (uint32_t) td.width && y < (uint32_t) td.height)
		{
			const double v = PF::load(in + td.offset, (size_t) y * td.width + x);

			code = tg_is_nodata(v, td.has_nodata, td.is_nodata, PF::is_float, td.nodata)
				? nodata : (uint16_t) tg_bmmq_bin(v, bounds, nbounds);
		}
		const uint32_t z = (uint32_t) (tg_morton_spread(lx) | (tg_morton_spread(ly) << 1));

		s_min[z] = code;
		s_max[z] = code;
	}
	__syncthreads();
	for (int i = threadIdx.x; i < n; i += blockDim.x)
		zbin[(int64_t) t * shape.cells + first + i] = s_min[i];
	reduce_in_block(s_min, s_max, shape.levels, first, side_levels, mm,
					(int64_t) t * shape.upper);
}

/* Step 2: up to five coarser levels from the level-`level` tables. */
__global__ void
tgk_bmmq_reduce(batch_shape shape, int level, int levels, uint32_t *__restrict__ mm)
{
	__shared__ uint16_t s_min[REDUCE_ENTRIES];
	__shared__ uint16_t s_max[REDUCE_ENTRIES];
	const int	t = blockIdx.y;
	const int	n = 1 << (2 * levels);
	const int64_t first = (int64_t) blockIdx.x * n;
	const int64_t tile_base = (int64_t) t * shape.upper;
	const int64_t src = tile_base + tg_bmmq_level_start(level) + first;

	for (int i = threadIdx.x; i < n; i += blockDim.x)
	{
		const uint32_t v = mm[src + i];

		s_min[i] = (uint16_t) (v & 0xFFFF);
		s_max[i] = (uint16_t) (v >> 16);
	}
	__syncthreads();
	reduce_in_block(s_min, s_max, level, first, levels, mm, tile_base);
}

/* base[t] = where tile t's nodes start: t earlier roots + 4 per earlier non-uniform node. */
__global__ void
tgk_bmmq_bases(const int32_t *__restrict__ rank, int ntiles, int64_t upper,
			   int64_t *__restrict__ base)
{
	const int	t = blockIdx.x * blockDim.x + threadIdx.x;

	if (t <= ntiles)
		base[t] = t + 4 * (int64_t) rank[(int64_t) t * upper];
}

/* Level of entry idx of a tile's level tables: 3 idx + 1 lies in [4^l, 4^(l+1)). */
__device__ __forceinline__ int
level_of(int64_t idx)
{
	return (63 - __clzll(3 * idx + 1)) >> 1;
}

/* A level-table entry is a node with children when its min and max differ. */
struct split_flag
{
	__host__ __device__ int32_t operator() (uint32_t v) const
	{
		return (v & 0xFFFF) != (v >> 16);
	}
};

/* The scan's input: the flags computed on the fly from the level tables. */
thrust::transform_iterator<split_flag, const uint32_t *>
split_flags(const uint32_t *mm)
{
	return thrust::make_transform_iterator(mm, split_flag());
}

__device__ __forceinline__ tg_bmmq_node
make_node(uint32_t v, int64_t at, const int32_t *__restrict__ rank, int32_t rank0)
{
	tg_bmmq_node n;

	n.min_bin = (uint16_t) (v & 0xFFFF);
	n.max_bin = (uint16_t) (v >> 16);
	n.first_child = n.min_bin != n.max_bin ? (int32_t) (1 + 4 * (int64_t) (rank[at] - rank0)) : -1;
	return n;
}

/*
 * Step 4: each non-uniform node writes its four children to their
 * breadth-first slots; entry 0 also writes the root.
 */
__global__ void
tgk_bmmq_assemble(batch_shape shape, const uint16_t *__restrict__ zbin,
				  const uint32_t *__restrict__ mm, const int32_t *__restrict__ rank,
				  const int64_t *__restrict__ base, tg_bmmq_node *__restrict__ nodes)
{
	const int	t = blockIdx.y;
	const int64_t idx = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
	const int64_t tile_base = (int64_t) t * shape.upper;
	const int	L = shape.levels;
	tg_bmmq_node *out = nodes + base[t];

	if (idx >= (shape.upper > 0 ? shape.upper : 1))
		return;
	if (L == 0)
	{
		out[0].min_bin = out[0].max_bin = zbin[(int64_t) t * shape.cells];
		out[0].first_child = -1;
		return;
	}

	const uint32_t v = mm[tile_base + idx];
	const int32_t rank0 = rank[tile_base];

	if (idx == 0)
		out[0] = make_node(v, tile_base, rank, rank0);
	if ((v & 0xFFFF) == (v >> 16))
		return;

	const int	l = level_of(idx);
	const int64_t k = idx - tg_bmmq_level_start(l);
	const int64_t first = 1 + 4 * (int64_t) (rank[tile_base + idx] - rank0);

	if (l + 1 < L)
	{
		const int64_t at = tile_base + tg_bmmq_level_start(l + 1) + 4 * k;

		for (int c = 0; c < 4; c++)
			out[first + c] = make_node(mm[at + c], at + c, rank, rank0);
	}
	else
	{
		const uint16_t *cell = zbin + (int64_t) t * shape.cells + 4 * k;

		for (int c = 0; c < 4; c++)
		{
			out[first + c].min_bin = out[first + c].max_bin = cell[c];
			out[first + c].first_child = -1;
		}
	}
}

/* Everything one batch holds on the device, freed on every path. */
struct batch_buffers
{
	dbuf<uint8_t> in;
	dbuf<tile_desc> tiles;
	dbuf<double> bounds;
	dbuf<uint16_t> zbin;
	dbuf<uint32_t> mm;
	dbuf<int32_t> rank;
	dbuf<int64_t> base;
	dbuf<tg_bmmq_node> nodes;
	dbuf<unsigned char> scan_tmp;
};

/* Device bytes a tile of this shape needs, nodes at their worst (every node kept). */
size_t
tile_bytes(const batch_shape &s, int pix)
{
	return (size_t) s.cells * (pix + sizeof(uint16_t)) +
		(size_t) s.upper * (sizeof(uint32_t) + sizeof(int32_t)) +
		(size_t) tg_bmmq_level_start(s.levels + 1) * sizeof(tg_bmmq_node) + sizeof(tile_desc) + 64;
}

/* Build trees[idx[0..n)] (same levels and pixel type) in one pass. */
tg_status
build_batch(const tg_ctx *ctx, const tg_band *bands, const int *idx, int n,
			const double *bounds, int nbounds, tg_bmmq_tree *trees, tg_error *err)
{
	const tg_band &b0 = bands[idx[0]];
	const int	pix = tg_pixtype_size(b0.pixtype);
	batch_shape shape;
	batch_buffers d;
	hbuf<tile_desc> desc(ctx);
	hbuf<int64_t> base(ctx);
	hbuf<uint8_t> staged(ctx);
	hbuf<tg_bmmq_node> host_nodes(ctx);
	cuda_event	ev[6];
	size_t		in_elems = 0,
				scan_bytes = 0;
	int64_t		flags;

	shape.levels = tg_bmmq_levels(b0.width, b0.height);
	shape.cells = (int64_t) 1 << (2 * shape.levels);
	shape.upper = tg_bmmq_level_start(shape.levels);
	flags = (int64_t) n * shape.upper + 1;

	if (!desc.alloc((size_t) n))
		return tg_cuda_host_oom(err, "tile descriptors");
	if (!base.alloc((size_t) n + 1))
		return tg_cuda_host_oom(err, "tile bases");
	for (int i = 0; i < n; i++)
	{
		const tg_band &b = bands[idx[i]];

		desc[i] = {in_elems, b.width, b.height, b.has_nodata, b.is_nodata, b.nodata};
		in_elems += (size_t) b.width * b.height;
	}
	if (!staged.alloc(in_elems * pix))
	{
		tg_error_set(err, TG_ENOMEM, "out of memory staging %zu pixels for the GPU", in_elems);
		return TG_ENOMEM;
	}
	for (int i = 0; i < n; i++)
		memcpy(staged.p + desc[i].offset * pix, bands[idx[i]].data,
			   (size_t) desc[i].width * desc[i].height * pix);

	/* ev: upload [0,1), kernels [1,2) and [3,4), node copy [4,5) */
	for (int i = 0; i < 6; i++)
		TG_CUDA_CHECK(ev[i].create(), "creating timing events");
	TG_CUDA_CHECK(d.in.alloc(in_elems * pix), "allocating the tiles");
	TG_CUDA_CHECK(d.tiles.alloc(n), "allocating tile descriptors");
	TG_CUDA_CHECK(d.bounds.alloc(nbounds), "allocating bin boundaries");
	TG_CUDA_CHECK(d.zbin.alloc((size_t) n * shape.cells), "allocating leaf codes");
	/* one entry more than the tables: a uniform sentinel, so the scan's last rank is the total */
	TG_CUDA_CHECK(d.mm.alloc(flags), "allocating level tables");
	TG_CUDA_CHECK(d.rank.alloc(flags), "allocating node ranks");
	TG_CUDA_CHECK(d.base.alloc(n + 1), "allocating tile bases");
	TG_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, split_flags(d.mm.p), d.rank.p, flags),
				  "sizing the scan");
	TG_CUDA_CHECK(d.scan_tmp.alloc(scan_bytes), "allocating scan space");

	TG_CUDA_CHECK(cudaEventRecord(ev[0]), "recording an event");
	TG_CUDA_CHECK(tg_cuda_copy_to_device(ctx, d.in.p, staged.p, in_elems * pix),
				  "copying tiles to the GPU");
	TG_CUDA_CHECK(cudaMemcpy(d.tiles.p, desc.p, n * sizeof(tile_desc), cudaMemcpyHostToDevice),
				  "copying tile descriptors");
	TG_CUDA_CHECK(cudaMemcpy(d.bounds.p, bounds, nbounds * sizeof(double), cudaMemcpyHostToDevice),
				  "copying bin boundaries");
	TG_CUDA_CHECK(cudaMemsetAsync(d.mm.p + flags - 1, 0, sizeof(uint32_t)), "clearing the sentinel");
	TG_CUDA_CHECK(cudaEventRecord(ev[1]), "recording an event");

	{
		const int	first_levels = std::min(BLOCK_SIDE_LEVELS, shape.levels);
		dim3		grid((unsigned) (shape.cells >> (2 * first_levels)), n);

		with_pixel_format(b0.pixtype, [&](auto pf) {
			using PF = decltype(pf);
			tgk_bmmq_leaves<PF><<<grid, THREADS>>>(reinterpret_cast<const typename PF::storage *>(d.in.p),
														  d.tiles.p, d.bounds.p, nbounds, shape,
														  d.zbin.p, d.mm.p);
		});
		TG_CUDA_CHECK(cudaGetLastError(), "launching the quadtree leaf kernel");
		for (int l = shape.levels - first_levels; l > 0;)
		{
			const int	step = std::min(BLOCK_SIDE_LEVELS, l);
			dim3		g((unsigned) (((int64_t) 1 << (2 * l)) >> (2 * step)), n);

			tgk_bmmq_reduce<<<g, THREADS>>>(shape, l, step, d.mm.p);
			TG_CUDA_CHECK(cudaGetLastError(), "launching the quadtree level kernel");
			l -= step;
		}
	}
	TG_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(d.scan_tmp.p, scan_bytes, split_flags(d.mm.p), d.rank.p, flags),
				  "ranking non-uniform nodes");
	tgk_bmmq_bases<<<tg_div_up(n + 1, THREADS), THREADS>>>(d.rank.p, n, shape.upper, d.base.p);
	TG_CUDA_CHECK(cudaGetLastError(), "launching the tile base kernel");
	TG_CUDA_CHECK(cudaEventRecord(ev[2]), "recording an event");
	/* the node count sizes the output: the one mid-build read */
	TG_CUDA_CHECK(cudaMemcpy(base.p, d.base.p, (n + 1) * sizeof(int64_t), cudaMemcpyDeviceToHost),
				  "reading node counts");
	TG_CUDA_CHECK(d.nodes.alloc(base[n]), "allocating quadtree nodes");
	TG_CUDA_CHECK(cudaEventRecord(ev[3]), "recording an event");
	{
		dim3		grid(tg_div_up(std::max<int64_t>(1, shape.upper), THREADS), n);

		tgk_bmmq_assemble<<<grid, THREADS>>>(shape, d.zbin.p, d.mm.p, d.rank.p, d.base.p, d.nodes.p);
		TG_CUDA_CHECK(cudaGetLastError(), "launching the quadtree assembly kernel");
	}
	TG_CUDA_CHECK(cudaEventRecord(ev[4]), "recording an event");

	if (!host_nodes.alloc(base[n]))
		return tg_error_set(err, TG_ENOMEM, "out of memory for %lld quadtree nodes", (long long) base[n]);
	TG_CUDA_CHECK(tg_cuda_copy_to_host(ctx, host_nodes.p, d.nodes.p, base[n] * sizeof(tg_bmmq_node)),
				  "copying quadtree nodes back");
	TG_CUDA_CHECK(cudaEventRecord(ev[5]), "recording an event");
	TG_CUDA_CHECK(cudaEventSynchronize(ev[5]), "building quadtrees");
	if (ctx->stats)
	{
		ctx->stats->kernel_ms += tg_cuda_elapsed_ms(ev[1], ev[2]) + tg_cuda_elapsed_ms(ev[3], ev[4]);
		ctx->stats->transfer_ms += tg_cuda_elapsed_ms(ev[0], ev[1]) + tg_cuda_elapsed_ms(ev[4], ev[5]);
	}

	for (int i = 0; i < n; i++)
	{
		tg_bmmq_tree *tree = &trees[idx[i]];

		tree->levels = shape.levels;
		tree->count = base[i + 1] - base[i];
		tree->nodes = (tg_bmmq_node *) tg_alloc(ctx, tree->count * sizeof(tg_bmmq_node));
		if (!tree->nodes)
			return tg_error_set(err, TG_ENOMEM, "out of memory for %lld quadtree nodes", (long long) tree->count);
		memcpy(tree->nodes, host_nodes.p + base[i], tree->count * sizeof(tg_bmmq_node));
	}
	return TG_OK;
}
}								/* namespace */

static tg_status
build_trees(const tg_ctx *ctx, const tg_band *tiles, int ntiles, const double *bounds, int nbounds,
			tg_bmmq_tree *trees, tg_error *err)
{
	hbuf<int>	order(ctx);
	size_t		budget = 0;

	if (tg_cuda_memory_budget(ctx, &budget, err) != TG_OK)
		return err->code;
	if (!order.alloc((size_t) ntiles))
		return tg_cuda_host_oom(err, "the tile order");

	/* size classes: same levels and pixel type build together */
	std::iota(order.p, order.p + ntiles, 0);
	std::stable_sort(order.p, order.p + ntiles, [&](int a, int b) {
		int			la = tg_bmmq_levels(tiles[a].width, tiles[a].height);
		int			lb = tg_bmmq_levels(tiles[b].width, tiles[b].height);

		return la != lb ? la < lb : tiles[a].pixtype < tiles[b].pixtype;
	});

	for (int i = 0; i < ntiles && err->code == TG_OK;)
	{
		const tg_band &b = tiles[order[i]];
		batch_shape shape;
		size_t		per_tile;
		int			n = 1;

		shape.levels = tg_bmmq_levels(b.width, b.height);
		shape.cells = (int64_t) 1 << (2 * shape.levels);
		shape.upper = tg_bmmq_level_start(shape.levels);
		per_tile = tile_bytes(shape, tg_pixtype_size(b.pixtype));
		if (per_tile > budget)
		{
			tg_error_set(err, TG_ENOMEM,
						 "a quadtree of a %d x %d tile needs %zu bytes of GPU memory, %zu are available",
						 b.width, b.height, per_tile, budget);
			err->on_device = true;
			break;
		}
		while (i + n < ntiles && n < 65535 &&
			   tg_bmmq_levels(tiles[order[i + n]].width, tiles[order[i + n]].height) == shape.levels &&
			   tiles[order[i + n]].pixtype == b.pixtype &&
			   (size_t) (n + 1) * per_tile <= budget &&
			   (int64_t) (n + 1) * shape.cells <= MAX_BATCH_CELLS)
			n++;

		if (tg_canceled(ctx))
			tg_error_set(err, TG_ECANCELED, "quadtree build canceled");
		else if (build_batch(ctx, tiles, &order[i], n, bounds, nbounds, trees, err) == TG_OK &&
				 ctx->stats)
			ctx->stats->chunks++;
		i += n;
	}
	return err->code;
}

extern "C" tg_status
tg_cuda_bmmq_build(const tg_ctx *ctx, const tg_band *tiles, int ntiles, const double *bounds,
				   int nbounds, tg_bmmq_tree *trees, tg_error *err)
{
	return tg_cuda_catch_all(err, [&] {
		return build_trees(ctx, tiles, ntiles, bounds, nbounds, trees, err);
	});
}
