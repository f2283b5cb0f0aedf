/*
 * accum_tiled.cu — D8 flow accumulation in two levels, after Barnes (2017)'s
 * tiled accumulation, for integer-valued weights (cell counts, integer weight
 * bands).  Sums of integers below 2^53 are exact in any order, so the result
 * equals the other strategies' bit for bit; backend auto uses this one for
 * D8 on the GPU whenever the weights allow.
 *
 * 1. Per 64 x 64 tile, in shared memory: find for every cell where its path
 *    leaves the tile (pointer jumping), and sum the weights of the cells whose
 *    path leaves through each exit (cells whose receiver lies in another
 *    tile).  That sum is the exit's accumulation within its tile.
 * 2. The exits form a forest: exit e drains to the exit where the path of the
 *    cell it flows into leaves that cell's tile.  An exit's total is its
 *    in-tile sum plus the totals of the exits draining to it, found by
 *    frontier rounds over that forest, whose depth is the number of tile
 *    crossings along the longest path (about a hundred, not thousands).
 * 3. Per tile again: each cell starts with its weight plus the totals of the
 *    exits of other tiles that drain into it, and Kahn's algorithm
 *    accumulates that down the tile's paths in shared memory.
 * Only tile boundaries and exits live in global memory between the phases;
 * the long dependency chains stay in shared memory, where a level costs a
 * block barrier.
 */
#include "levels.cuh"
#include "route.cuh"

namespace
{
#ifndef TG_TILE_THREADS
#define TG_TILE_THREADS 512	/* measured best on an H100: 3 blocks per multiprocessor */
#endif

constexpr int TS = 64;			/* tile side */
constexpr int TN = TS * TS;
constexpr int TB = 4 * TS - 4;	/* boundary cells of a tile: the most exits it can have */
constexpr int THREADS = TG_TILE_THREADS;
constexpr int PER = TN / THREADS;
constexpr int HS = TS + 2;		/* tile plus halo */

struct tile_smem
{
	double		acc[TN];
	uint32_t	pending[TN];	/* donors inside the tile not yet done; exit slots in phase 1 */
	union
	{
		uint16_t	queue[TN];	/* Kahn's order, level after level (phase 3) */
		uint16_t	next[TN];	/* pointer jumping (phase 1) */
	};
	uint8_t		dir[HS * HS];	/* D8 index of the tile and its halo */
	uint32_t	count[3];
};

__device__ __forceinline__ int
halo_index(int lx, int ly)
{
	return (ly + 1) * HS + lx + 1;
}

__device__ __forceinline__ bool
on_tile_boundary(int lx, int ly, int tw, int th)
{
	return lx == 0 || ly == 0 || lx == tw - 1 || ly == th - 1;
}

/* Load the D8 indices of a tile and its one-cell halo (outside: none). */
__device__ void
load_dirs(tile_smem &s, const uint8_t *__restrict__ d8, int W, int H, int x0, int y0)
{
	for (int i = threadIdx.x; i < HS * HS; i += THREADS)
	{
		int			gx = x0 - 1 + i % HS,
					gy = y0 - 1 + i / HS;

		s.dir[i] = (gx >= 0 && gy >= 0 && gx < W && gy < H) ? d8[(size_t) gy * W + gx] : TG_NO_DIRECTION;
	}
}

/*
 * The local receiver of tile cell (lx, ly) as a tile index, -1 when its water
 * leaves the tile, -2 when it has no receiver.
 */
__device__ __forceinline__ int
local_receiver(const tile_smem &s, int lx, int ly, int tw, int th)
{
	int			k = s.dir[halo_index(lx, ly)];
	int			rx,
				ry;

	if (k == TG_NO_DIRECTION)
		return -2;
	rx = lx + tg_nbr_dx(k);
	ry = ly + tg_nbr_dy(k);
	return (rx < 0 || ry < 0 || rx >= tw || ry >= th) ? -1 : ry * TS + rx;
}

/*
 * Accumulate s.acc (holding each cell's own contribution) down the tile's
 * paths: Kahn's algorithm, the order in shared memory, one block barrier per
 * level.  Cells freed during level l are appended after it by counting in
 * slot l % 3; the slot of level l + 1 is cleared during level l, two barriers
 * after anyone last read it.  Integer-valued sums, so the shared-memory
 * atomics' order does not matter.
 */
__device__ void
accumulate_tile(tile_smem &s, int tw, int th)
{
	uint32_t	head = 0,
				end;

	for (int j = 0; j < PER; j++)
		s.pending[threadIdx.x + j * THREADS] = 0;
	if (threadIdx.x < 3)
		s.count[threadIdx.x] = 0;
	__syncthreads();
	for (int j = 0; j < PER; j++)
	{
		int			c = threadIdx.x + j * THREADS,
					lx = c % TS,
					ly = c / TS,
					r;

		if (lx >= tw || ly >= th)
			continue;
		r = local_receiver(s, lx, ly, tw, th);
		if (r >= 0)
			atomicAdd(&s.pending[r], 1u);
	}
	__syncthreads();
	for (int j = 0; j < PER; j++)
	{
		int			c = threadIdx.x + j * THREADS;

		if (c % TS < tw && c / TS < th && s.pending[c] == 0)
			s.queue[atomicAdd(&s.count[2], 1u)] = (uint16_t) c;
	}
	__syncthreads();
	end = s.count[2];
	for (uint32_t level = 0; head < end; level++)
	{
		if (threadIdx.x == 0)
			s.count[(level + 1) % 3] = 0;
		for (uint32_t j = head + threadIdx.x; j < end; j += THREADS)
		{
			int			c = s.queue[j];
			int			r = local_receiver(s, c % TS, c / TS, tw, th);

			if (r < 0)
				continue;
			atomicAdd(&s.acc[r], s.acc[c]);
			if (atomicSub(&s.pending[r], 1u) == 1u)
				s.queue[end + atomicAdd(&s.count[level % 3], 1u)] = (uint16_t) r;
		}
		__syncthreads();
		head = end;
		end += s.count[level % 3];
	}
}

/*
 * Sum v over the lanes of the warp holding the same key, by a tree over each
 * group's ranks; the group's lowest lane gets the sum and *first.  Phase 1
 * adds whole paths' weights to a few exits, and adding each cell's weight
 * with its own shared-memory atomic would queue thousands on one address.
 * Every lane of the warp must call it.
 */
__device__ __forceinline__ double
warp_sum_by_key(unsigned key, double v, bool *first)
{
	const unsigned lane = threadIdx.x & 31;
	const unsigned peers = __match_any_sync(0xffffffffu, key);
	const unsigned rank = __popc(peers & ((1u << lane) - 1));
	const unsigned above = peers & ~((2u << lane) - 1);	/* lane 31: none */

	for (unsigned s = 1; s < 32; s <<= 1)
	{
		unsigned	m = above;
		int			src;
		double		o;

		for (unsigned i = 1; i < s && m; i++)
			m &= m - 1;			/* drop the lowest: m's lowest is then the s-th above */
		src = m ? __ffs(m) - 1 : (int) lane;
		o = __shfl_sync(0xffffffffu, v, src);
		if ((rank & (2 * s - 1)) == 0 && m)
			v += o;
	}
	*first = rank == 0;
	return v;
}

/*
 * Phase 1: the exits of each tile, numbered in `exits` (global cell index)
 * from a shared counter, with their in-tile sums in `total`; and for each
 * boundary cell the slot of the exit its path leaves by (-1: it ends at an
 * outlet inside the tile).  Interior cells' slots are never read.
 */
__global__ void __launch_bounds__(THREADS)
tgk_tile_exits(const uint8_t *__restrict__ d8, cell_weights weight, int W, int H,
			   int64_t *__restrict__ exits, double *__restrict__ total, uint32_t *__restrict__ nexits,
			   int32_t *__restrict__ exit_slot)
{
	extern __shared__ __align__(16) unsigned char raw[];
	tile_smem  &s = *reinterpret_cast<tile_smem *>(raw);
	const int	x0 = blockIdx.x * TS,
				y0 = blockIdx.y * TS;
	const int	tw = min(TS, W - x0),
				th = min(TS, H - y0);
	__shared__ uint32_t base;

	load_dirs(s, d8, W, H, x0, y0);
	if (threadIdx.x == 0)
		s.count[0] = 0;
	__syncthreads();

	/* pointer jumping to the end of each cell's path inside the tile */
	for (int j = 0; j < PER; j++)
	{
		int			c = threadIdx.x + j * THREADS,
					lx = c % TS,
					ly = c / TS;
		int			r = (lx < tw && ly < th) ? local_receiver(s, lx, ly, tw, th) : -2;

		s.next[c] = (uint16_t) (r >= 0 ? r : c);
		s.acc[c] = 0.0;
	}
	__syncthreads();
	for (int step = 0; step < 12; step++)	/* 2^12 = TN */
	{
		uint16_t	jump[PER];
		int			moved = 0;

		for (int j = 0; j < PER; j++)
		{
			jump[j] = s.next[s.next[threadIdx.x + j * THREADS]];
			moved |= jump[j] != s.next[threadIdx.x + j * THREADS];
		}
		if (!__syncthreads_or(moved))
			break;
		for (int j = 0; j < PER; j++)
			s.next[threadIdx.x + j * THREADS] = jump[j];
		__syncthreads();
	}

	/* number the exits, and sum the weights of the paths leaving by each */
	for (int j = 0; j < PER; j++)
	{
		int			c = threadIdx.x + j * THREADS,
					lx = c % TS,
					ly = c / TS,
					t = s.next[c];
		bool		inside = lx < tw && ly < th,
					leaves = inside && local_receiver(s, t % TS, t / TS, tw, th) == -1,
					first;
		double		v;

		if (inside && local_receiver(s, lx, ly, tw, th) == -1)
			s.pending[c] = atomicAdd(&s.count[0], 1u);
		v = warp_sum_by_key(leaves ? (unsigned) t : 0xffffffffu,
							leaves ? weight.at((size_t) (y0 + ly) * W + x0 + lx) : 0.0, &first);
		if (leaves && first)
			atomicAdd(&s.acc[t], v);
	}
	__syncthreads();
	if (threadIdx.x == 0)
		base = atomicAdd(nexits, s.count[0]);
	__syncthreads();
	for (int j = 0; j < PER; j++)
	{
		int			c = threadIdx.x + j * THREADS,
					lx = c % TS,
					ly = c / TS,
					t;
		size_t		i = (size_t) (y0 + ly) * W + x0 + lx;

		if (lx >= tw || ly >= th)
			continue;
		if (local_receiver(s, lx, ly, tw, th) == -1)
		{
			exits[base + s.pending[c]] = (int64_t) i;
			total[base + s.pending[c]] = s.acc[c];
		}
		if (on_tile_boundary(lx, ly, tw, th))
		{
			t = s.next[c];
			exit_slot[i] = local_receiver(s, t % TS, t / TS, tw, th) == -1 ? (int32_t) (base + s.pending[t]) : -1;
		}
	}
}

/* The exit forest: each exit's successor slot, and pending predecessors. */
__global__ void
tgk_link_exits(const uint8_t *__restrict__ d8, int W, const int64_t *__restrict__ exits,
			   uint32_t nexits, const int32_t *__restrict__ exit_slot,
			   int32_t *__restrict__ succ, uint32_t *__restrict__ pending)
{
	TG_GRID_STRIDE(s, (size_t) nexits)
	{
		int64_t		e = exits[s];
		int			k = d8[e];
		int64_t		r = (int64_t) (e / W + tg_nbr_dy(k)) * W + e % W + tg_nbr_dx(k);

		/* r lies on the boundary of its tile, so its slot was recorded */
		succ[s] = exit_slot[r];
		if (succ[s] >= 0)
			atomicAdd(&pending[succ[s]], 1u);
	}
}

__global__ void
tgk_forest_sources(const uint32_t *__restrict__ pending, uint32_t nexits, uint32_t *__restrict__ order,
				   uint32_t *__restrict__ count)
{
	TG_GRID_STRIDE(s, (size_t) nexits)
		if (pending[s] == 0)
		order[atomicAdd(count, 1u)] = (uint32_t) s;
}

/*
 * A level of the exit forest (levels.cuh): a finished exit adds its total to
 * its successor (integer-valued: order-free) and frees it when it was the last.
 */
struct forest_step
{
	const int32_t *succ;
	uint32_t   *pending;
	double	   *total;

	__device__ void operator()(uint32_t e, uint32_t *order, uint32_t end, uint32_t *appended) const
	{
		int32_t		t = succ[e];

		if (t < 0)
			return;
		atomicAdd(&total[t], __ldcg(&total[e]));
		if (atomicSub(&pending[t], 1u) == 1u)
			order[end + atomicAdd(appended, 1u)] = (uint32_t) t;
	}
};

/*
 * Phase 3: each cell starts with its weight plus the totals of the exits of
 * other tiles that drain into it, accumulated down the tile's paths; nodata
 * becomes NaN.
 */
__global__ void __launch_bounds__(THREADS)
tgk_tile_accumulate(const uint8_t *__restrict__ d8, const uint8_t *__restrict__ kind,
					cell_weights weight, int W, int H,
					const int32_t *__restrict__ exit_slot, const double *__restrict__ total,
					double *__restrict__ acc)
{
	extern __shared__ __align__(16) unsigned char raw[];
	tile_smem  &s = *reinterpret_cast<tile_smem *>(raw);
	const int	x0 = blockIdx.x * TS,
				y0 = blockIdx.y * TS;
	const int	tw = min(TS, W - x0),
				th = min(TS, H - y0);

	load_dirs(s, d8, W, H, x0, y0);
	__syncthreads();
	for (int j = 0; j < PER; j++)
	{
		int			c = threadIdx.x + j * THREADS,
					lx = c % TS,
					ly = c / TS;
		double		v = 0;

		if (lx < tw && ly < th)
		{
			v = weight.at((size_t) (y0 + ly) * W + x0 + lx);
			if (on_tile_boundary(lx, ly, tw, th))
				for (int k = 0; k < 8; k++)
				{
					int			nx = lx + tg_nbr_dx(k),
								ny = ly + tg_nbr_dy(k);

					/* a neighbour in another tile whose receiver is this cell: an exit */
					if ((nx < 0 || ny < 0 || nx >= tw || ny >= th) &&
						s.dir[halo_index(nx, ny)] == tg_nbr_opposite(k))
						v += total[exit_slot[(size_t) (y0 + ny) * W + x0 + nx]];
				}
		}
		s.acc[c] = v;
	}
	__syncthreads();
	accumulate_tile(s, tw, th);
	for (int j = 0; j < PER; j++)
	{
		int			c = threadIdx.x + j * THREADS,
					lx = c % TS,
					ly = c / TS;
		size_t		i;

		if (lx >= tw || ly >= th)
			continue;
		i = (size_t) (y0 + ly) * W + x0 + lx;
		acc[i] = kind[i] == KIND_NODATA ? NAN : s.acc[c];
	}
}

}								/* namespace */

size_t
tiled_bytes_per_cell(void)
{
	/* each cell's exit slot (boundary cells only, but indexed by cell), and
	 * the exit forest, at most TB exits per tile: cell, total, successor,
	 * pending, order */
	return 4 + ((8 + 8 + 4 + 4 + 4) * TB + TN - 1) / TN;
}

/* Carves aligned arrays out of one device allocation. */
struct arena
{
	dbuf<unsigned char> mem;
	size_t		used = 0;

	template <typename T>
	T		   *take(size_t count)
	{
		T		   *p = reinterpret_cast<T *>(mem.p + used);

		used += (count * sizeof(T) + 255) & ~(size_t) 255;
		return p;
	}
};

tg_status
accumulate_d8_tiled(const tg_ctx *ctx, const tg_route_view &r, const uint8_t *kind,
					cell_weights weight, double *acc, int *rounds, tg_error *err)
{
	const int	W = r.width,
				H = r.height;
	const size_t n = (size_t) W * H;
	const dim3	tiles((W + TS - 1) / TS, (H + TS - 1) / TS);
	const size_t bound = (size_t) tiles.x * tiles.y * TB;
	const size_t smem = sizeof(tile_smem);
	arena		a;
	uint32_t	m = 0,
				h[3] = {0, 0, 0};
	tg_status	st;

	TG_CUDA_CHECK(a.mem.alloc(n * sizeof(int32_t) + bound * (8 + 8 + 4 + 4 + 4) + 16 * 256),
				  "allocating the exit forest");
	int32_t    *exit_slot = a.take<int32_t>(n);
	int64_t    *exits = a.take<int64_t>(bound);
	double	   *total = a.take<double>(bound);
	int32_t    *succ = a.take<int32_t>(bound);
	uint32_t   *pending = a.take<uint32_t>(bound);
	uint32_t   *order = a.take<uint32_t>(bound);
	uint32_t   *counters = a.take<uint32_t>(8);	/* nexits, state[3], appended[3] */
	uint32_t   *nexits = counters,
			   *state = counters + 1,
			   *appended = counters + 4;

	TG_CUDA_CHECK(cudaFuncSetAttribute(tgk_tile_exits, cudaFuncAttributeMaxDynamicSharedMemorySize,
									   (int) smem), "configuring shared memory");
	TG_CUDA_CHECK(cudaFuncSetAttribute(tgk_tile_accumulate, cudaFuncAttributeMaxDynamicSharedMemorySize,
									   (int) smem), "configuring shared memory");
	TG_CUDA_CHECK(cudaMemsetAsync(counters, 0, 8 * sizeof(uint32_t)), "clearing counters");

	/* 1: the exits of each tile and their in-tile sums */
	tgk_tile_exits<<<tiles, THREADS, smem>>>(r.d8, weight, W, H, exits, total, nexits, exit_slot);
	TG_CUDA_CHECK(cudaGetLastError(), "finding tile exits");
	TG_CUDA_CHECK(cudaMemcpy(&m, nexits, sizeof m, cudaMemcpyDeviceToHost), "finding tile exits");

	/* 2: the forest of exits */
	if (m > 0)
	{
		TG_CUDA_CHECK(cudaMemsetAsync(pending, 0, m * sizeof(uint32_t)), "clearing the exit forest");
		TG_CUDA_CHECK(cudaMemsetAsync(nexits, 0, sizeof(uint32_t)), "clearing a counter");
		tgk_link_exits<<<grid_for(m), 256>>>(r.d8, W, exits, m, exit_slot, succ, pending);
		TG_CUDA_CHECK(cudaGetLastError(), "linking exits");
		tgk_forest_sources<<<grid_for(m), 256>>>(pending, m, order, nexits);
		TG_CUDA_CHECK(cudaGetLastError(), "finding forest sources");
		TG_CUDA_CHECK(cudaMemcpy(&h[1], nexits, sizeof(uint32_t), cudaMemcpyDeviceToHost),
					  "finding forest sources");
		TG_CUDA_CHECK(cudaMemcpy(state, h, sizeof h, cudaMemcpyHostToDevice), "starting the forest");
		st = run_levels(ctx, forest_step{succ, pending, total}, order, state, appended, nullptr, h,
						"solving the exit forest", err);
		if (st != TG_OK)
			return st;
	}
	*rounds = (int) h[2];

	/* 3: weights and inflows down the tiles */
	tgk_tile_accumulate<<<tiles, THREADS, smem>>>(r.d8, kind, weight, W, H, exit_slot, total, acc);
	TG_CUDA_CHECK(cudaGetLastError(), "accumulating tiles");
	return TG_OK;
}
