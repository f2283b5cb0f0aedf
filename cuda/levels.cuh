/*
 * levels.cuh — Kahn-style level rounds over a work list on the device,
 * shared by the frontier accumulation (accum.cu: cells) and the exit forest
 * of the tiled D8 scheme (accum_tiled.cu: tile exits).
 *
 * The frontier of level l is order[head, head + count).  A Step processes one
 * item: `step(item, order, end, appended)` does its work and appends the items
 * it frees at order[end + atomicAdd(appended, 1)].  Wide levels run in one
 * cooperative kernel that stays resident on every multiprocessor and
 * separates levels with a grid barrier; narrow ones (the thousands at the end
 * of a drainage graph) in a single block separated by block barriers, a
 * fraction of a grid barrier's cost.  Either way a level costs no launch and
 * no host round trip.  Values other blocks wrote (the order, the state,
 * whatever the step reads) must be read through L2 (__ldcg): L1 is not
 * coherent across multiprocessors.
 */
#ifndef TG_LEVELS_CUH
#define TG_LEVELS_CUH

#include "hydro.cuh"

#include <cooperative_groups.h>

#include <algorithm>
#include <climits>

namespace
{
constexpr int LEVELS_GRID_THREADS = 256;
constexpr int LEVELS_BLOCK_THREADS = 1024;	/* the single block that runs narrow levels */
#ifndef TG_LEVELS_NARROW
#define TG_LEVELS_NARROW 1024
#endif
constexpr uint32_t LEVELS_NARROW = TG_LEVELS_NARROW;	/* a level this small runs in the single block... */
constexpr uint32_t LEVELS_WIDE = 2 * LEVELS_NARROW;	/* ...which hands over to the grid above this */
constexpr uint32_t LEVELS_PER_LAUNCH = 1024;	/* cancellation is polled between launches */

/*
 * Levels on the grid while they are at least LEVELS_NARROW wide, at most
 * max_levels.  Items freed during level l are counted in slot l % 3 of
 * `appended`; the slot of level l + 1 is cleared during level l, after the
 * barrier that followed anyone's last read of it (so all three start clear).
 * state = {head, count, level}; level_start (may be NULL) records where each
 * level begins.
 */
template <typename Step>
__global__ void __launch_bounds__(LEVELS_GRID_THREADS)
tgk_levels_grid(Step step, uint32_t *order, uint32_t *state, uint32_t *appended,
				uint32_t *level_start, uint32_t max_levels)
{
	cooperative_groups::grid_group grid = cooperative_groups::this_grid();
	uint32_t	head = state[0],
				count = state[1],
				level = state[2];

	for (uint32_t done = 0; done < max_levels && count >= LEVELS_NARROW; done++)
	{
		const uint32_t end = head + count;
		uint32_t   *slot = &appended[level % 3];

		if (grid.thread_rank() == 0)
		{
			appended[(level + 1) % 3] = 0;
			if (level_start)
				level_start[level] = head;
		}
		for (uint32_t j = grid.thread_rank(); j < count; j += grid.size())
			step(__ldcg(&order[head + j]), order, end, slot);
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
 * The same levels in one block, until the frontier is empty, wider than
 * LEVELS_WIDE, or max_levels have run.  One block on one multiprocessor: its
 * own writes are visible to it after a barrier, earlier kernels' at launch.
 */
template <typename Step>
__global__ void __launch_bounds__(LEVELS_BLOCK_THREADS)
tgk_levels_block(Step step, uint32_t *order, uint32_t *state, uint32_t *level_start, uint32_t max_levels)
{
	__shared__ uint32_t appended;
	uint32_t	head = state[0],
				count = state[1],
				level = state[2];

	for (uint32_t done = 0; done < max_levels && count > 0 && count <= LEVELS_WIDE; done++)
	{
		const uint32_t end = head + count;

		if (threadIdx.x == 0)
		{
			appended = 0;
			if (level_start)
				level_start[level] = head;
		}
		__syncthreads();
		for (uint32_t j = threadIdx.x; j < count; j += LEVELS_BLOCK_THREADS)
			step(order[head + j], order, end, &appended);
		__syncthreads();
		head = end;
		count = appended;
		level++;
		__syncthreads();		/* everyone has read the count before it is cleared */
	}
	if (threadIdx.x == 0)
	{
		state[0] = head;
		state[1] = count;
		state[2] = level;
	}
}

/*
 * Blocks of `threads` threads that can all be resident at once, at most
 * max_per_sm on each multiprocessor (a persistent grid).
 */
template <typename K>
tg_status
resident_grid(K kernel, int threads, int max_per_sm, unsigned *blocks, tg_error *err)
{
	int			device = 0,
				sms = 0,
				per_sm = 0;

	TG_CUDA_CHECK(cudaGetDevice(&device), "querying the device");
	TG_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
				  "querying the device");
	TG_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0),
				  "querying occupancy");
	*blocks = (unsigned) (sms * std::max(1, std::min(per_sm, max_per_sm)));
	return TG_OK;
}

/* The largest grid of LEVELS_GRID_THREADS blocks that can all be resident at once. */
template <typename K>
tg_status
coop_grid(K kernel, unsigned *blocks, tg_error *err)
{
	int			device = 0,
				coop = 0;

	TG_CUDA_CHECK(cudaGetDevice(&device), "querying the device");
	TG_CUDA_CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, device),
				  "querying the device");
	if (!coop)
		return tg_error_set(err, TG_EUNSUPPORTED, "this GPU cannot launch cooperative kernels");
	return resident_grid(kernel, LEVELS_GRID_THREADS, INT_MAX, blocks, err);
}

/*
 * Run levels from the state on the device (state = {head, count, level},
 * h its host copy) until the frontier is empty; h ends as the final state.
 * appended: 3 device counters.  level_start may be NULL.
 */
template <typename Step>
tg_status
run_levels(const tg_ctx *ctx, Step step, uint32_t *order, uint32_t *state, uint32_t *appended,
		   uint32_t *level_start, uint32_t h[3], const char *what, tg_error *err)
{
	unsigned	blocks = 0;
	tg_status	st = coop_grid(tgk_levels_grid<Step>, &blocks, err);

	if (st != TG_OK)
		return st;
	while (h[1] > 0)
	{
		void	   *args[] = {(void *) &step, (void *) &order, (void *) &state, (void *) &appended,
			(void *) &level_start, (void *) &LEVELS_PER_LAUNCH};

		if (tg_canceled(ctx))
			return tg_error_set(err, TG_ECANCELED, "flow accumulation canceled");
		if (h[1] >= LEVELS_NARROW)
		{
			/* the grid kernel expects every append counter clear */
			TG_CUDA_CHECK(cudaMemsetAsync(appended, 0, 3 * sizeof(uint32_t)), what);
			TG_CUDA_CHECK(cudaLaunchCooperativeKernel((void *) tgk_levels_grid<Step>, blocks,
													  LEVELS_GRID_THREADS, args, 0, 0), what);
		}
		else
		{
			tgk_levels_block<Step><<<1, LEVELS_BLOCK_THREADS>>>(step, order, state, level_start,
																 LEVELS_PER_LAUNCH);
			TG_CUDA_CHECK(cudaGetLastError(), what);
		}
		TG_CUDA_CHECK(cudaMemcpy(h, state, 3 * sizeof(uint32_t), cudaMemcpyDeviceToHost), what);
	}
	return TG_OK;
}
}								/* namespace */

#endif							/* TG_LEVELS_CUH */
