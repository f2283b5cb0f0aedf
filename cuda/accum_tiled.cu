/*
 * accum_tiled.cu — D8 flow accumulation in two levels, after Barnes (2017)'s
 * tiled accumulation, for integer-valued weights (cell counts, integer weight
 * bands).  Sums of integers below 2^53 are exact in any order, so the result
 * equals the other strategies' bit for bit; backend auto uses this one for
 * D8 on the GPU whenever the weights allow.
 *
 * 1. Per 64 x 64 tile, in shared memory: accumulate the tile on its own
 *    (Kahn's algorithm, level by level between block barriers), and find for
 *    every cell where its path leaves the tile (pointer jumping): its exit.
 * 2. The exits (cells whose receiver lies in another tile) form a forest:
 *    exit e drains to the exit of the cell it flows into.  Its total is its
 *    local accumulation plus the totals of the exits draining to it, found by
 *    frontier rounds over that forest, whose depth is the number of tile
 *    crossings along the longest path (hundreds, not thousands of levels).
 * 3. Per tile again: the water entering from other tiles (the totals of the
 *    exits that drain into the tile) is accumulated down the tile's paths and
 *    added to the local accumulation.
 * Every pass reads and writes tiles with coalesced accesses and keeps the
 * long dependency chains in shared memory, where a level costs a barrier.
 */
#include "route.cuh"

#include <cooperative_groups.h>

namespace
{
namespace cg = cooperative_groups;

constexpr int TS = 64;			/* tile side */
constexpr int TN = TS * TS;
constexpr int THREADS = 1024;
constexpr int PER = TN / THREADS;
constexpr int HS = TS + 2;		/* tile plus halo */
constexpr int FOREST_THREADS = 256;
constexpr uint32_t FOREST_LEVELS_PER_LAUNCH = 4096;

struct tile_smem
{
	double		acc[TN];
	uint32_t	pending[TN];	/* donors inside the tile not yet done */
	uint16_t	frontier[2][TN];
	uint16_t	next[TN];		/* pointer jumping */
	uint8_t		dir[HS * HS];	/* D8 index of the tile and its halo */
	uint32_t	count[2];
};

__device__ __forceinline__ int
halo_index(int lx, int ly)
{
	return (ly + 1) * HS + lx + 1;
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
 * paths: Kahn's algorithm with the frontier in shared memory.  Integer-valued
 * sums, so the shared-memory atomics' order does not matter.
 */
__device__ void
accumulate_tile(tile_smem &s, int tw, int th)
{
	int			cur = 0;

	for (int j = 0; j < PER; j++)
		s.pending[threadIdx.x + j * THREADS] = 0;
	if (threadIdx.x < 2)
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
			s.frontier[0][atomicAdd(&s.count[0], 1u)] = (uint16_t) c;
	}
	__syncthreads();
	while (s.count[cur] > 0)
	{
		const uint32_t count = s.count[cur];

		for (uint32_t j = threadIdx.x; j < count; j += THREADS)
		{
			int			c = s.frontier[cur][j];
			int			r = local_receiver(s, c % TS, c / TS, tw, th);

			if (r < 0)
				continue;
			atomicAdd(&s.acc[r], s.acc[c]);
			if (atomicSub(&s.pending[r], 1u) == 1u)
				s.frontier[cur ^ 1][atomicAdd(&s.count[cur ^ 1], 1u)] = (uint16_t) r;
		}
		__syncthreads();
		if (threadIdx.x == 0)
			s.count[cur] = 0;
		cur ^= 1;
		__syncthreads();
	}
}

/*
 * Phase 1: local accumulation and each cell's exit (global index of the last
 * cell of its path in the tile when that cell's receiver lies outside, else -1).
 */
__global__ void __launch_bounds__(THREADS)
tgk_tile_local(const uint8_t *__restrict__ d8, const double *__restrict__ weight, int W, int H,
			   double *__restrict__ local, int64_t *__restrict__ exit_of)
{
	extern __shared__ __align__(16) unsigned char raw[];
	tile_smem  &s = *reinterpret_cast<tile_smem *>(raw);
	const int	x0 = blockIdx.x * TS,
				y0 = blockIdx.y * TS;
	const int	tw = min(TS, W - x0),
				th = min(TS, H - y0);

	load_dirs(s, d8, W, H, x0, y0);
	for (int j = 0; j < PER; j++)
	{
		int			c = threadIdx.x + j * THREADS,
					lx = c % TS,
					ly = c / TS;

		s.acc[c] = (lx < tw && ly < th) ? weight[(size_t) (y0 + ly) * W + x0 + lx] : 0.0;
	}
	__syncthreads();

	/* pointer jumping to the end of each cell's path inside the tile */
	for (int j = 0; j < PER; j++)
	{
		int			c = threadIdx.x + j * THREADS,
					lx = c % TS,
					ly = c / TS;
		int			r = (lx < tw && ly < th) ? local_receiver(s, lx, ly, tw, th) : -2;

		s.next[c] = (uint16_t) (r >= 0 ? r : c);
	}
	__syncthreads();
	for (int step = 0; step < 12; step++)	/* 2^12 = TN */
	{
		uint16_t	jump[PER];

		for (int j = 0; j < PER; j++)
			jump[j] = s.next[s.next[threadIdx.x + j * THREADS]];
		__syncthreads();
		for (int j = 0; j < PER; j++)
			s.next[threadIdx.x + j * THREADS] = jump[j];
		__syncthreads();
	}
	for (int j = 0; j < PER; j++)
	{
		int			c = threadIdx.x + j * THREADS,
					lx = c % TS,
					ly = c / TS,
					t;

		if (lx >= tw || ly >= th)
			continue;
		t = s.next[c];
		exit_of[(size_t) (y0 + ly) * W + x0 + lx] =
			local_receiver(s, t % TS, t / TS, tw, th) == -1 ? (int64_t) (y0 + t / TS) * W + x0 + t % TS : -1;
	}

	accumulate_tile(s, tw, th);
	for (int j = 0; j < PER; j++)
	{
		int			c = threadIdx.x + j * THREADS,
					lx = c % TS,
					ly = c / TS;

		if (lx < tw && ly < th)
			local[(size_t) (y0 + ly) * W + x0 + lx] = s.acc[c];
	}
}

/* Exits: cells whose receiver lies in another tile; slot_of maps cell -> slot. */
__global__ void
tgk_find_exits(const uint8_t *__restrict__ d8, int W, int H, int64_t *__restrict__ exits,
			   uint32_t *__restrict__ nexits, int32_t *__restrict__ slot_of)
{
	TG_GRID_STRIDE(i, (size_t) W * H)
	{
		int			k = d8[i],
					x = (int) (i % W),
					y = (int) (i / W);
		int			rx,
					ry;

		slot_of[i] = -1;
		if (k == TG_NO_DIRECTION)
			continue;
		rx = x + tg_nbr_dx(k);
		ry = y + tg_nbr_dy(k);
		if (rx / TS != x / TS || ry / TS != y / TS)
		{
			uint32_t	s = atomicAdd(nexits, 1u);

			exits[s] = (int64_t) i;
			slot_of[i] = (int32_t) s;
		}
	}
}

/* The exit forest: successor slot, pending predecessors, starting totals. */
__global__ void
tgk_link_exits(const uint8_t *__restrict__ d8, int W, const int64_t *__restrict__ exits,
			   uint32_t nexits, const int64_t *__restrict__ exit_of,
			   const int32_t *__restrict__ slot_of, const double *__restrict__ local,
			   int32_t *__restrict__ succ, uint32_t *__restrict__ pending, double *__restrict__ total)
{
	TG_GRID_STRIDE(s, (size_t) nexits)
	{
		int64_t		e = exits[s];
		int			k = d8[e];
		int64_t		r = (int64_t) (e / W + tg_nbr_dy(k)) * W + e % W + tg_nbr_dx(k);
		int64_t		t = exit_of[r];

		succ[s] = t >= 0 ? slot_of[t] : -1;
		total[s] = local[e];
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
 * Frontier rounds over the exit forest: a finished exit adds its total to its
 * successor (integer-valued: order-free) and frees it when it was the last.
 * state = {head, count, level}; appended as in accum.cu's frontier kernel.
 */
__global__ void __launch_bounds__(FOREST_THREADS)
tgk_forest_coop(const int32_t *__restrict__ succ, uint32_t *pending, double *total,
				uint32_t *order, uint32_t *state, uint32_t *appended, uint32_t max_levels)
{
	cg::grid_group grid = cg::this_grid();
	uint32_t	head = state[0],
				count = state[1],
				level = state[2];

	for (uint32_t done = 0; done < max_levels && count > 0; done++)
	{
		const uint32_t end = head + count;
		uint32_t   *slot = &appended[level % 3];

		if (grid.thread_rank() == 0)
			appended[(level + 1) % 3] = 0;
		for (uint32_t j = grid.thread_rank(); j < count; j += grid.size())
		{
			uint32_t	e = __ldcg(&order[head + j]);
			int32_t		t = succ[e];

			if (t < 0)
				continue;
			atomicAdd(&total[t], __ldcg(&total[e]));
			if (atomicSub(&pending[t], 1u) == 1u)
				order[end + atomicAdd(slot, 1u)] = (uint32_t) t;
		}
		grid.sync();
		head = end;
		count = __ldcg(slot);
		level++;
	}
	if (grid.thread_rank() == 0)
	{
		state[0] = head;
		state[1] = count;
		state[2] = level;
	}
}

/*
 * Phase 3: each tile accumulates the water entering from other tiles (the
 * totals of exits whose receiver is in the tile) and adds its own local
 * accumulation; nodata becomes NaN.
 */
__global__ void __launch_bounds__(THREADS)
tgk_tile_inflow(const uint8_t *__restrict__ d8, const uint8_t *__restrict__ kind, int W, int H,
				const int32_t *__restrict__ slot_of, const double *__restrict__ total,
				const double *__restrict__ local, double *__restrict__ acc)
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
		double		in = 0;

		if (lx < tw && ly < th && (lx == 0 || ly == 0 || lx == tw - 1 || ly == th - 1))
			for (int k = 0; k < 8; k++)
			{
				int			nx = lx + tg_nbr_dx(k),
							ny = ly + tg_nbr_dy(k);

				/* a neighbour in another tile whose receiver is this cell */
				if ((nx < 0 || ny < 0 || nx >= tw || ny >= th) &&
					s.dir[halo_index(nx, ny)] == tg_nbr_opposite(k))
					in += total[slot_of[(size_t) (y0 + ny) * W + x0 + nx]];
			}
		s.acc[c] = in;
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
		acc[i] = kind[i] == KIND_NODATA ? NAN : local[i] + s.acc[c];
	}
}

/* Non-integer weights (a flag), and whether every weight is below 2^53 / n. */
__global__ void
tgk_weights_integral(const double *__restrict__ weight, const uint8_t *__restrict__ kind,
					 size_t n, unsigned *__restrict__ bad)
{
	const double limit = 9007199254740992.0 / (double) (n ? n : 1);

	TG_GRID_STRIDE(i, n)
		if (kind[i] != KIND_NODATA && (weight[i] != floor(weight[i]) || fabs(weight[i]) > limit))
		*bad = 1;
}
}								/* namespace */

tg_status
weights_are_integral(const double *weight, const uint8_t *kind, size_t n, bool *integral,
					 tg_error *err)
{
	dbuf<unsigned> bad;
	unsigned	h = 0;

	TG_CUDA_RETURN_IF(bad.alloc(1), "allocating a flag");
	TG_CUDA_RETURN_IF(cudaMemset(bad.p, 0, sizeof(unsigned)), "clearing a flag");
	tgk_weights_integral<<<grid_for(n), 256>>>(weight, kind, n, bad.p);
	TG_CUDA_RETURN_IF_LAUNCH("checking weights");
	TG_CUDA_RETURN_IF(cudaMemcpy(&h, bad.p, sizeof h, cudaMemcpyDeviceToHost), "checking weights");
	*integral = h == 0;
	return TG_OK;
}

size_t
tiled_bytes_per_cell(void)
{
	/* local accumulation, exit of each cell, slot of each cell, and the exit
	 * forest (bounded by n: index, successor, pending, total, order) */
	return 8 + 8 + 4 + 8 + 4 + 4 + 8 + 4;
}

tg_status
accumulate_d8_tiled(const tg_ctx *ctx, const tg_route_view &r, const uint8_t *kind,
					const double *weight, double *acc, int *rounds, tg_error *err)
{
	const int	W = r.width,
				H = r.height;
	const size_t n = (size_t) W * H;
	const dim3	tiles((W + TS - 1) / TS, (H + TS - 1) / TS);
	const size_t smem = sizeof(tile_smem);
	dbuf<double> local,
				total;
	dbuf<int64_t> exit_of,
				exits;
	dbuf<int32_t> slot_of,
				succ;
	dbuf<uint32_t> pending,
				order,
				nexits,
				state,
				appended;
	uint32_t	m = 0,
				h[3] = {0, 0, 0};
	int			device = 0,
				sms = 0,
				per_sm = 0;

	TG_CUDA_RETURN_IF(cudaFuncSetAttribute(tgk_tile_local, cudaFuncAttributeMaxDynamicSharedMemorySize,
										   (int) smem), "configuring shared memory");
	TG_CUDA_RETURN_IF(cudaFuncSetAttribute(tgk_tile_inflow, cudaFuncAttributeMaxDynamicSharedMemorySize,
										   (int) smem), "configuring shared memory");
	TG_CUDA_RETURN_IF(local.alloc(n), "allocating local accumulation");
	TG_CUDA_RETURN_IF(exit_of.alloc(n), "allocating exits");
	TG_CUDA_RETURN_IF(slot_of.alloc(n), "allocating exits");
	TG_CUDA_RETURN_IF(nexits.alloc(1), "allocating a counter");
	TG_CUDA_RETURN_IF(cudaMemset(nexits.p, 0, sizeof(uint32_t)), "clearing a counter");

	/* 1: tiles on their own */
	tgk_tile_local<<<tiles, THREADS, smem>>>(r.d8, weight, W, H, local.p, exit_of.p);
	TG_CUDA_RETURN_IF_LAUNCH("accumulating tiles");

	/* 2: the forest of exits */
	TG_CUDA_RETURN_IF(exits.alloc(n), "allocating exits");
	tgk_find_exits<<<grid_for(n), 256>>>(r.d8, W, H, exits.p, nexits.p, slot_of.p);
	TG_CUDA_RETURN_IF_LAUNCH("finding exits");
	TG_CUDA_RETURN_IF(cudaMemcpy(&m, nexits.p, sizeof m, cudaMemcpyDeviceToHost), "finding exits");
	TG_CUDA_RETURN_IF(succ.alloc(m), "allocating the exit forest");
	TG_CUDA_RETURN_IF(pending.alloc(m), "allocating the exit forest");
	TG_CUDA_RETURN_IF(total.alloc(m), "allocating the exit forest");
	TG_CUDA_RETURN_IF(order.alloc(m), "allocating the exit forest");
	TG_CUDA_RETURN_IF(state.alloc(3), "allocating frontier state");
	TG_CUDA_RETURN_IF(appended.alloc(3), "allocating frontier counters");
	TG_CUDA_RETURN_IF(cudaMemset(pending.p, 0, (m ? m : 1) * sizeof(uint32_t)), "clearing the exit forest");
	TG_CUDA_RETURN_IF(cudaMemset(appended.p, 0, 3 * sizeof(uint32_t)), "clearing frontier counters");
	TG_CUDA_RETURN_IF(cudaMemset(nexits.p, 0, sizeof(uint32_t)), "clearing a counter");
	if (m > 0)
	{
		tgk_link_exits<<<grid_for(m), 256>>>(r.d8, W, exits.p, m, exit_of.p, slot_of.p, local.p,
											 succ.p, pending.p, total.p);
		TG_CUDA_RETURN_IF_LAUNCH("linking exits");
		tgk_forest_sources<<<grid_for(m), 256>>>(pending.p, m, order.p, nexits.p);
		TG_CUDA_RETURN_IF_LAUNCH("finding forest sources");
		TG_CUDA_RETURN_IF(cudaMemcpy(&h[1], nexits.p, sizeof(uint32_t), cudaMemcpyDeviceToHost),
						  "finding forest sources");
		TG_CUDA_RETURN_IF(cudaMemcpy(state.p, h, sizeof h, cudaMemcpyHostToDevice), "starting the forest");
		TG_CUDA_RETURN_IF(cudaGetDevice(&device), "querying the device");
		TG_CUDA_RETURN_IF(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
						  "querying the device");
		TG_CUDA_RETURN_IF(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, tgk_forest_coop,
																	   FOREST_THREADS, 0),
						  "querying occupancy");
		while (h[1] > 0)
		{
			unsigned	blocks = (unsigned) (sms * (per_sm > 0 ? per_sm : 1));
			void	   *args[] = {(void *) &succ.p, (void *) &pending.p, (void *) &total.p,
				(void *) &order.p, (void *) &state.p, (void *) &appended.p,
			(void *) &FOREST_LEVELS_PER_LAUNCH};

			if (tg_canceled(ctx))
				return tg_error_set(err, TG_ECANCELED, "flow accumulation canceled");
			TG_CUDA_RETURN_IF(cudaLaunchCooperativeKernel((void *) tgk_forest_coop, blocks, FOREST_THREADS,
														  args, 0, 0), "solving the exit forest");
			TG_CUDA_RETURN_IF(cudaMemcpy(h, state.p, sizeof h, cudaMemcpyDeviceToHost),
							  "solving the exit forest");
		}
	}
	*rounds = (int) h[2];

	/* 3: inflows down the tiles */
	tgk_tile_inflow<<<tiles, THREADS, smem>>>(r.d8, kind, W, H, slot_of.p, total.p, local.p, acc);
	TG_CUDA_RETURN_IF_LAUNCH("adding inflows");
	return TG_OK;
}
