/*
 * accum.cu — flow accumulation on the GPU, by the four strategies of Sten et
 * al. (2016), over the routing of route.cu.  Like the CPU (accum_cpu.c) every
 * strategy but flow transfer computes a cell by pulling from its donors once
 * they are final (tg_route_pull, the same expression), so results do not
 * depend on thread timing and equal the CPU's.
 *
 *   indegree             D8: chains (Ortega & Rueda 2010, Sten's
 *                        "indegree"): a thread starts at a cell without
 *                        donors and follows the flow downstream, going on
 *                        from each cell to its receiver when it was that
 *                        receiver's last pending donor, so no barrier
 *                        separates one cell of a long river from the next.
 *                        Multiple-flow routings: the same rule over a
 *                        shared queue (tgk_async_pull): a thread carries
 *                        on down one receiver it freed, hands the others
 *                        to lanes of its warp whose path ended and queues
 *                        the rest for idle threads, so there is neither a
 *                        barrier per level nor one thread per subtree.
 *                        (Plain chains leave the thread that finishes last
 *                        the last donor of ever more cells: 0.2-9 s on
 *                        57.6 M cells; frontier rounds, a barrier per
 *                        level: 50 ms; this: 28 ms.)
 *   topological          frontier rounds (Kahn) record the order (cells
 *                        grouped by level: a cell joins the next frontier
 *                        when its last donor is placed), once per routing;
 *                        the accumulation then replays it level by level.
 *   dependency-transfer  full sweeps: a cell whose donors all completed in
 *                        earlier sweeps completes in this one.
 *   flow-transfer        full sweeps: all water in transit moves one cell;
 *                        each cell adds what arrives (pull of its donors'
 *                        in-transit water) until none moves.
 *
 * Frontier rounds run on the level engine of levels.cuh (wide levels on the
 * grid, narrow ones in one block); level replays split the same way.  Values
 * other blocks wrote are read through L2 (TG_LOAD_SHARED / __ldcg): L1 is
 * not coherent across multiprocessors.
 */
#include "levels.cuh"
#include "route.cuh"

#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/scan.h>
#include <cuda/atomic>

#include <algorithm>
#include <cstdio>

namespace
{
namespace cg = cooperative_groups;

constexpr int SWEEP_BATCH = 16;		/* sweeps per convergence check */

/* Routings whose shares are fixed (not fdd8's, which depend on the flow): these may be gathered. */
bool
shares_gatherable(tg_routing routing)
{
	return routing == TG_ROUTE_MFD_MD || routing == TG_ROUTE_FD8;
}

/*
 * Per cell the donor mask (low byte, tg_route_donors) and the receiver mask
 * (high byte: neighbours inside the grid it drains to), and the number of
 * donors still pending.
 */
__global__ void
tgk_links(tg_route_view r, const uint8_t *__restrict__ kind, uint16_t *__restrict__ links,
		  uint32_t *__restrict__ indeg)
{
	const int	W = r.width,
				H = r.height;

	TG_GRID_STRIDE(i, (size_t) W * H)
	{
		const int	x = (int) (i % W),
					y = (int) (i / W);
		unsigned	donors = 0,
					out = 0;

		if (kind[i] != KIND_NODATA)
		{
			donors = tg_route_donors(&r, i);
			for (int k = 0; k < 8; k++)
			{
				int			nx = x + tg_nbr_dx(k),
							ny = y + tg_nbr_dy(k);

				if (nx >= 0 && ny >= 0 && nx < W && ny < H && tg_route_drains_to(&r, i, k))
					out |= 1u << k;
			}
		}
		links[i] = (uint16_t) (donors | out << 8);
		indeg[i] = (uint32_t) __popc(donors);
	}
}

/* Sources (cells without donors) appended to order[]; acc (if any) starts as NaN. */
__global__ void
tgk_sources(const uint8_t *__restrict__ kind, const uint32_t *__restrict__ indeg, size_t n,
			uint32_t *__restrict__ order, uint32_t *__restrict__ tail, double *__restrict__ acc)
{
	TG_GRID_STRIDE(i, n)
	{
		if (acc)
			acc[i] = NAN;
		if (kind[i] != KIND_NODATA && indeg[i] == 0)
			order[atomicAdd(tail, 1u)] = (uint32_t) i;
	}
}

/* Cells that are not nodata, added to *count. */
__global__ void
tgk_count_valid(const uint8_t *__restrict__ kind, size_t n, uint32_t *__restrict__ count)
{
	uint32_t	mine = 0;

	TG_GRID_STRIDE(i, n)
		mine += kind[i] != KIND_NODATA;
	mine = __reduce_add_sync(0xffffffffu, mine);
	if ((threadIdx.x & 31) == 0 && mine)
		atomicAdd(count, mine);
}

/* Index of neighbour k of cell c (inside the grid). */
__device__ __forceinline__ uint32_t
neighbour(int W, uint32_t c, int k)
{
	return (uint32_t) ((int64_t) c + (int64_t) tg_nbr_dy(k) * W + tg_nbr_dx(k));
}

/*
 * Cell c is done: decrement the pending-donor counts of its receivers (mask
 * out); left[k] is receiver k's count before (1: c was its last donor), 0
 * for other neighbours.  All the atomics are issued before any result is
 * looked at, so their latencies overlap.
 */
__device__ __forceinline__ void
decrement_receivers(int W, uint32_t c, unsigned out, uint32_t *indeg, uint32_t left[8])
{
#pragma unroll
	for (int k = 0; k < 8; k++)
		left[k] = (out >> k) & 1u ? atomicSub(&indeg[neighbour(W, c, k)], 1u) : 0;
}

/* ... and append the receivers that reach zero at order[end + (*appended)++]. */
__device__ __forceinline__ void
release_receivers(int W, uint32_t c, unsigned out, uint32_t *indeg, uint32_t *order,
				  uint32_t end, uint32_t *appended)
{
	uint32_t	left[8];

	decrement_receivers(W, c, out, indeg, left);
	/* one append counter per level: the lanes of a warp reserve their slots together */
	uint32_t	mine = 0;

#pragma unroll
	for (int k = 0; k < 8; k++)
		mine += left[k] == 1u;

	cg::coalesced_group lanes = cg::coalesced_threads();
	const uint32_t upto = cg::inclusive_scan(lanes, mine);
	uint32_t	base = 0;

	if (lanes.thread_rank() == lanes.size() - 1 && upto > 0)
		base = atomicAdd(appended, upto);
	base = lanes.shfl(base, lanes.size() - 1) + upto - mine;
#pragma unroll
	for (int k = 0; k < 8; k++)
		if (left[k] == 1u)
			order[end + base++] = neighbour(W, c, k);
}

/*
 * Multiple-flow routings (shares fixed by the routing, not fdd8): for each
 * cell the share each donor sends it, gathered next to each other
 * (inflow[8 c + k], 0 for non-donors) so that a pull reads 32 contiguous
 * bytes instead of one float from each of up to eight planes.
 */
__global__ void
tgk_gather_inflow(tg_route_view r, const uint16_t *__restrict__ links, float *__restrict__ inflow)
{
	const int	W = r.width;
	const size_t n = (size_t) W * r.height;

	TG_GRID_STRIDE(i, n)
	{
		const int	x = (int) (i % W),
					y = (int) (i / W);
		const unsigned l = links[i];
		float		s[8];

#pragma unroll
		for (int k = 0; k < 8; k++)
			s[k] = (l >> k) & 1u ?
				r.frac[(size_t) tg_nbr_opposite(k) * n + (size_t) (y + tg_nbr_dy(k)) * W + x + tg_nbr_dx(k)] : 0.0f;
		reinterpret_cast<float4 *>(inflow)[2 * i] = make_float4(s[0], s[1], s[2], s[3]);
		reinterpret_cast<float4 *>(inflow)[2 * i + 1] = make_float4(s[4], s[5], s[6], s[7]);
	}
}

/* A frontier item of the order's rounds: cell c is placed, free its receivers. */
struct order_step
{
	int			width;
	const uint16_t *links;
	uint32_t   *indeg;

	__device__ void operator()(uint32_t c, uint32_t *order, uint32_t end, uint32_t *appended) const
	{
		release_receivers(width, c, links[c] >> 8, indeg, order, end, appended);
	}
};

/*
 * D8 chains from each source queue[j]: accumulate a cell, then its receiver
 * if this was its last pending donor.  A cell's value is stored and fenced
 * before the receiver's count drops, and the thread that takes the count to
 * zero fences before it pulls: every donor value it reads (through L2) is
 * final, as in the level-by-level schemes, so the sums are the CPU's.
 */
__global__ void __launch_bounds__(256)
tgk_d8_chains(tg_route_view r, cell_weights weight, double *acc,
			  const uint16_t *__restrict__ links, uint32_t *indeg, const uint32_t *__restrict__ queue,
			  uint32_t count)
{
	const int	W = r.width;

	for (uint32_t j = blockIdx.x * blockDim.x + threadIdx.x; j < count; j += gridDim.x * blockDim.x)
	{
		uint32_t	c = queue[j];

		for (;;)
		{
			const unsigned l = links[c];
			const unsigned out = l >> 8;

			acc[c] = tg_route_pull_own(&r, weight.at(c), acc, c, l & 0xffu, nullptr);
			if (out == 0)
				break;

			const uint32_t next = neighbour(W, c, __ffs(out) - 1);

			__threadfence();
			if (atomicSub(&indeg[next], 1u) != 1u)
				break;
			__threadfence();
			c = next;
		}
	}
}

/*
 * Multiple-flow indegree without levels.  A persistent grid shares one queue
 * (the sources, then each cell queued): a thread takes a cell, pulls it, and
 * releases its receivers; of those it was the last pending donor of, it
 * carries on with the first itself, hands the others to lanes of its warp
 * whose path ended and queues the rest for any idle thread.  A long flow
 * path is then followed hop by hop by whichever thread finished the previous
 * cell, with no barrier between one cell and the next, while the wide part
 * of the graph is shared out through the queue.  A donor stores its value
 * and fences (release) before its receivers' counts drop; each step ends
 * with one acq_rel fence of the warp after the counts and the polls, before
 * the next cells' pulls and the queue stores, so every donor value a pull
 * reads is final: the sums are the CPU's.
 *
 * A lane keeps the slot it claimed while it works on cells handed to it and
 * polls it every step; a cell that arrives there meanwhile is its spare,
 * handed on, queued again or taken when the lane's path ends (its fence
 * already made the spare's donors visible).
 *
 * state = {head (next slot to claim), tail (next slot to fill), finished
 * cells, stalled flag}.  Slots are claimed and filled per warp.  A thread
 * that has waited on its slot while the finished count did not move for
 * ASYNC_STALL_NS gives up and raises the flag (only a cycle in the routing
 * can cause that).
 */
constexpr uint32_t QUEUE_EMPTY = 0xffffffffu;
constexpr unsigned long long ASYNC_STALL_NS = 2000000000ull;
constexpr unsigned ASYNC_BACKOFF_NS = 256;	/* longest sleep between polls of a slot */
constexpr unsigned ASYNC_CHECK_EVERY = 32;	/* idle polls between looks at the shared counters */
/*
 * The persistent grid: one 256-thread block per multiprocessor.  On the H100
 * and 57.6 M cells, MFD-md (before the hand-over within the warp): 46 ms; 2
 * blocks 49, 4 blocks 66, 8 blocks 77 ms (idle lanes polling compete with the
 * work); with the step below, 128-thread blocks 33.0 and 64-thread ones 36.5
 * against 31.2 ms (fewer lanes to carry the wide levels).  Tried and
 * dropped: polls and slot hand-out deferred by one step (52 ms; again with
 * the step below, 36 vs 33), carrying on down the steepest receiver rather
 * than the first (48 ms), warps with working lanes taking only cells already
 * queued (56 vs 50 ms), and a push in fixed point (value and pending count in
 * one 64-bit word, one atomic per edge and no fences: exact run to run, 4e-10
 * from the CPU, but 51 vs 50 ms).  With the hand-over (40 ms): the
 * receivers' records prefetched into L1 (43), 2 blocks per multiprocessor
 * (44); with the step below, prefetched into L2 (34.5 vs 31.5), the next
 * cell's links, weight and shares loaded before the fence (34.1 vs 33.0),
 * held slots polled at the start of the step (32.9 vs 31.7: a poll issued
 * before the work misses cells queued during it).  With spares (28.9 ms):
 * spares always kept by their lane, never queued again (29.1; FDD8 53.5
 * against 45.2, kept spares waiting behind long D8 paths); the sources
 * finished by one pass before the queue (28.07 against 28.09).  Before them
 * (32.0 ms): sources ordered by height (32.1: the longest path's source
 * starts at once but waits on its tributaries), the least steep receiver
 * carried on (37.0), sources dealt out to lanes in fixed lists (56.6: the
 * path's source waited 48 ms at the end of one list), 2-4 blocks per
 * multiprocessor whose extra warps claim slots only while cells wait (33.7,
 * 35.5, 37.0: the wide levels are bound by memory, not by lanes; a cell's
 * work grew from 4.7 to 17.7 µs with 3 blocks).  bench/RESULTS.md has the
 * queue's counters and the longest path's timeline behind these figures.
 */
constexpr int ASYNC_BLOCKS_PER_SM = 1;
constexpr uint32_t ASYNC_REQUEUES = 64;	/* spares a lane may queue again, at most */

__device__ __forceinline__ unsigned long long
global_ns()
{
	unsigned long long t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

/*
 * tg_route_pull_from for gathered shares with every load issued at once: the
 * cell's links, its shares, its weight and all eight neighbours' values
 * (non-donors' are read and dropped), so one round trip precedes the sum
 * where waiting for the donors mask made it two.  Same terms in the same
 * order: the same sum.  *out: the cell's receivers.
 */
__device__ __forceinline__ double
pull_eager(int W, int H, cell_weights weight, const double *acc,
		   const uint16_t *__restrict__ links, const float *__restrict__ inflow, uint32_t c,
		   unsigned *out)
{
	const unsigned l = links[c];
	const int	x = (int) (c % (uint32_t) W),
				y = (int) (c / (uint32_t) W);
	const float4 g0 = __ldg((const float4 *) inflow + 2 * (size_t) c),
				g1 = __ldg((const float4 *) inflow + 2 * (size_t) c + 1);
	const float g[8] = {g0.x, g0.y, g0.z, g0.w, g1.x, g1.y, g1.z, g1.w};
	double		a[8];
	double		sum = weight.at(c);

#pragma unroll
	for (int k = 0; k < 8; k++)
		a[k] = (unsigned) (x + tg_nbr_dx(k)) < (unsigned) W && (unsigned) (y + tg_nbr_dy(k)) < (unsigned) H
			? __ldcg(&acc[neighbour(W, c, k)]) : 0.0;
#pragma unroll
	for (int k = 0; k < 8; k++)
		if (((l >> k) & 1u) && g[k] > 0)
			sum = TG_DADD(sum, TG_DMUL(a[k], (double) g[k]));
	*out = l >> 8;
	return sum;
}

/*
 * One step of a warp: lanes with a cell pull it and release its receivers;
 * freed receivers are carried on, handed over within the warp or queued;
 * lanes left without a cell claim a slot or poll theirs; one fence; the
 * queued cells are stored.  Every global round trip of a step sits on the
 * longest flow path (5,874 hops on the 57.6 M-cell DEM), so the step is
 * arranged to have few: the pull's loads all at once (pull_eager), the
 * queue's slot reservation issued beside the claim, and besides the release
 * before the counts one fence where there were up to three (an acquire for
 * a polled cell, another after the counts, a release per queued cell).
 * H100, MFD-md: 39.6 → 34.4 (one fence after the counts) → 33.1 (eager
 * pull) → 31.7 (this step) → 31.1 ms (reservation beside the claim) → 28.5
 * (lanes holding a slot take hand-overs, spares).
 */
__global__ void __launch_bounds__(256)
tgk_async_pull(tg_route_view r, cell_weights weight, double *acc,
			   const uint16_t *__restrict__ links, const float *__restrict__ inflow, uint32_t *indeg,
			   uint32_t *queue, uint32_t capacity, uint32_t requeues, uint32_t *state, uint32_t valid)
{
	using counter = cuda::atomic_ref<uint32_t, cuda::thread_scope_device>;
	constexpr unsigned ALL = 0xffffffffu;
	const cg::thread_block_tile<32> warp = cg::tiled_partition<32>(cg::this_thread_block());
	const unsigned lane = warp.thread_rank();
	const int	W = r.width;
	uint32_t	c = QUEUE_EMPTY,	/* the cell this lane works on (fenced) */
				slot = QUEUE_EMPTY, /* the queue slot it waits on */
				spare = QUEUE_EMPTY,	/* a cell its slot gave while it had one (fenced) */
				finished = 0,
				seen = 0;
	unsigned	backoff = 0,
				polls = 0,
				requeued = 0;
	unsigned long long since = 0;

	for (;;)
	{
		uint32_t	next = QUEUE_EMPTY;
		unsigned	freed = 0;	/* directions of the other receivers freed */

		if (__any_sync(ALL, c != QUEUE_EMPTY))
		{
			backoff = 0;
			polls = 0;
			if (c != QUEUE_EMPTY)
			{
				uint32_t	left[8] = {0, 0, 0, 0, 0, 0, 0, 0};
				unsigned	out;

				if (inflow)
					acc[c] = pull_eager(W, r.height, weight, acc, links, inflow, c, &out);
				else
				{
					const unsigned l = links[c];

					out = l >> 8;
					acc[c] = tg_route_pull_own(&r, weight.at(c), acc, c, l & 0xffu, nullptr);
				}
				finished++;
				if (out)
				{
					cuda::atomic_thread_fence(cuda::memory_order_release, cuda::thread_scope_device);
					decrement_receivers(W, c, out, indeg, left);
#pragma unroll
					for (int k = 0; k < 8; k++)
						if (left[k] == 1u)
						{
							if (next == QUEUE_EMPTY)
								next = neighbour(W, c, k);
							else
								freed |= 1u << k;
						}
				}
			}

			/*
			 * Lanes whose path ended take the other receivers freed in this warp
			 * and the spares: no queue atomics, no wait of a step or more on a
			 * slot.  On the H100 and 57.6 M cells it cut the queued cells from
			 * 11.1 to 4.3 million and MFD-md from 49.8 to 44.2 ms.  Lanes that
			 * hold a slot take too (their slot's cell, should it come while they
			 * work, becomes a spare): the longest path's cells then seldom wait
			 * in the queue (1,565 of its 5,808 hops did, 5.6 µs each) and MFD-md
			 * went from 32.0 to 28.5 ms.
			 */
			for (;;)
			{
				const unsigned givers = __ballot_sync(ALL, freed != 0 || spare != QUEUE_EMPTY),
							takers = __ballot_sync(ALL, next == QUEUE_EMPTY);

				if (!givers || !takers)
					break;

				const int	g = __ffs(givers) - 1,
							t = __ffs(takers) - 1;
				const uint32_t gift = __shfl_sync(ALL, spare != QUEUE_EMPTY ? spare :
												  freed ? neighbour(W, c, __ffs(freed) - 1) : QUEUE_EMPTY, g);

				if ((int) lane == g)
				{
					if (spare != QUEUE_EMPTY)
						spare = QUEUE_EMPTY;
					else
						freed &= freed - 1;
				}
				if ((int) lane == t)
					next = gift;
			}
		}

		/*
		 * A spare no lane could take is queued again, at most `requeues` times
		 * per lane (the queue has that many slots per lane beyond one per
		 * cell), else kept until this lane's path ends.  The warp reserves the
		 * slots of the cells it queues with one atomic, looked at after the fence.
		 */
		const bool	requeue = spare != QUEUE_EMPTY && requeued < requeues;
		const uint32_t queued = (uint32_t) __popc(freed) + requeue;
		const bool	any_queued = __any_sync(ALL, queued > 0);
		uint32_t	upto = 0,
					reserved = 0;

		if (any_queued)
		{
			upto = cg::inclusive_scan(warp, queued);
			if (lane == 31)
				reserved = atomicAdd(&state[1], upto);
		}

		/* lanes without a next cell claim a slot (one atomic for the warp) or poll theirs, relaxed */
		const unsigned needy = __ballot_sync(ALL, next == QUEUE_EMPTY && slot == QUEUE_EMPTY);

		if (needy)
		{
			const int	leader = __ffs(needy) - 1;
			uint32_t	base = 0;

			if ((int) lane == leader)
				base = atomicAdd(&state[0], (uint32_t) __popc(needy));
			base = __shfl_sync(ALL, base, leader);
			if ((needy >> lane) & 1u)
				slot = base + (uint32_t) __popc(needy & ((1u << lane) - 1u));
		}
		uint32_t	polled_spare = QUEUE_EMPTY;

		if (slot < capacity)
		{
			/* polled every step, working or not: a cell that comes while this lane works is a spare */
			const uint32_t v = counter(queue[slot]).load(cuda::memory_order_relaxed);

			if (v != QUEUE_EMPTY)
			{
				if (next == QUEUE_EMPTY)
					next = v;
				else
					polled_spare = v;
				slot = QUEUE_EMPTY;
			}
		}

		if (!__any_sync(ALL, next != QUEUE_EMPTY) && !any_queued)
		{
			/* the whole warp is waiting: report what it finished, look at the shared counters now and then */
			finished = cg::reduce(warp, finished, cg::plus<uint32_t>());
			if (lane == 0 && finished)
				atomicAdd(&state[2], finished);
			finished = 0;
			c = QUEUE_EMPTY;
			if (__all_sync(ALL, slot >= capacity))
				return;			/* no slot of this warp can ever be filled */
			if (++polls % ASYNC_CHECK_EVERY == 0)
			{
				uint32_t	now = 0,
							stalled = 0;

				if (lane == 0)
				{
					now = counter(state[2]).load(cuda::memory_order_relaxed);
					stalled = counter(state[3]).load(cuda::memory_order_relaxed);
					if (now != valid && !stalled)
					{
						if (now != seen || since == 0)
						{
							seen = now;
							since = global_ns();
						}
						else if (global_ns() - since > ASYNC_STALL_NS)
						{
							counter(state[3]).store(1, cuda::memory_order_relaxed);
							stalled = 1;
						}
					}
				}
				if (__shfl_sync(ALL, now == valid || stalled, 0))
					return;
			}
			__nanosleep(backoff);
			backoff = backoff ? min(2 * backoff, ASYNC_BACKOFF_NS) : 32;
			continue;
		}

		/*
		 * One fence for the warp: acquire for every lane's next cell (carried
		 * on, handed over or polled: their donors' values), release for the
		 * cells queued below (the counts this lane saw drop to zero).
		 */
		cuda::atomic_thread_fence(cuda::memory_order_acq_rel, cuda::thread_scope_device);
		if (any_queued)
		{
			uint32_t	at = warp.shfl(reserved, 31) + upto - queued;

#pragma unroll
			for (int k = 0; k < 8; k++)
				if ((freed >> k) & 1u)
					counter(queue[at++]).store(neighbour(W, c, k), cuda::memory_order_relaxed);
			if (requeue)
				counter(queue[at++]).store(spare, cuda::memory_order_relaxed);
		}
		if (requeue)
		{
			spare = QUEUE_EMPTY;
			requeued++;
		}
		if (polled_spare != QUEUE_EMPTY)
			spare = polled_spare;
		c = next;
	}
}

/* Accumulate levels [l0, l1) of a recorded order, a grid barrier between levels. */
__global__ void __launch_bounds__(LEVELS_GRID_THREADS)
tgk_replay_coop(tg_route_view r, cell_weights weight, double *acc,
				const uint16_t *__restrict__ links, const float *__restrict__ inflow,
				const uint32_t *__restrict__ order, const uint32_t *__restrict__ level_start,
				uint32_t l0, uint32_t l1)
{
	cg::grid_group grid = cg::this_grid();

	for (uint32_t l = l0; l < l1; l++)
	{
		for (uint32_t j = level_start[l] + grid.thread_rank(); j < level_start[l + 1]; j += grid.size())
		{
			const uint32_t c = order[j];

			acc[c] = tg_route_pull_own(&r, weight.at(c), acc, c, links[c] & 0xffu, inflow);
		}
		grid.sync();
	}
}

/* The same for narrow levels, in one block. */
__global__ void __launch_bounds__(LEVELS_BLOCK_THREADS)
tgk_replay_block(tg_route_view r, cell_weights weight, double *acc,
				 const uint16_t *__restrict__ links, const float *__restrict__ inflow,
				 const uint32_t *__restrict__ order, const uint32_t *__restrict__ level_start,
				 uint32_t l0, uint32_t l1)
{
	for (uint32_t l = l0; l < l1; l++)
	{
		for (uint32_t j = level_start[l] + threadIdx.x; j < level_start[l + 1]; j += LEVELS_BLOCK_THREADS)
		{
			const uint32_t c = order[j];

			acc[c] = tg_route_pull_own(&r, weight.at(c), acc, c, links[c] & 0xffu, inflow);
		}
		__syncthreads();
	}
}

__global__ void
tgk_transfer_init(const uint8_t *__restrict__ kind, cell_weights weight, size_t n,
				  double *__restrict__ acc, double *__restrict__ flow)
{
	TG_GRID_STRIDE(i, n)
	{
		acc[i] = kind[i] == KIND_NODATA ? NAN : weight.at(i);
		flow[i] = kind[i] == KIND_NODATA ? 0.0 : weight.at(i);
	}
}

/* One flow-transfer sweep: pull the donors' in-transit water one cell on. */
__global__ void
tgk_transfer_sweep(tg_route_view r, const uint8_t *__restrict__ kind,
				   const double *__restrict__ flow_in, double *__restrict__ flow_out,
				   double *__restrict__ acc, unsigned *moved)
{
	const int	W = r.width,
				H = r.height;

	TG_GRID_STRIDE(i, (size_t) W * H)
	{
		const int	x = (int) (i % W),
					y = (int) (i / W);
		double		in = 0;

		if (kind[i] == KIND_NODATA)
			continue;
		for (int k = 0; k < 8; k++)
		{
			int			nx = x + tg_nbr_dx(k),
						ny = y + tg_nbr_dy(k);
			size_t		ni;
			double		s;

			if (nx < 0 || ny < 0 || nx >= W || ny >= H)
				continue;
			ni = (size_t) ny * W + nx;
			if (flow_in[ni] == 0)
				continue;
			s = tg_route_share(&r, ni, tg_nbr_opposite(k), 0.0);
			if (s > 0)
				in = TG_DADD(in, TG_DMUL(flow_in[ni], s));
		}
		flow_out[i] = in;
		if (in != 0)
		{
			acc[i] = TG_DADD(acc[i], in);
			*moved = 1;
		}
	}
}

/* One dependency-transfer sweep: done[c] = sweep in which c completed, -1 if not yet. */
__global__ void
tgk_dependency_sweep(tg_route_view r, const uint8_t *__restrict__ kind,
					 cell_weights weight, double *acc, int32_t *done, int32_t sweep,
					 unsigned *pending)
{
	const int	W = r.width,
				H = r.height;

	TG_GRID_STRIDE(i, (size_t) W * H)
	{
		const int	x = (int) (i % W),
					y = (int) (i / W);
		bool		ready = true;

		if (kind[i] == KIND_NODATA || done[i] >= 0)
			continue;
		for (int k = 0; k < 8 && ready; k++)
		{
			int			nx = x + tg_nbr_dx(k),
						ny = y + tg_nbr_dy(k);
			size_t		ni;
			int32_t		d;

			if (nx < 0 || ny < 0 || nx >= W || ny >= H)
				continue;
			ni = (size_t) ny * W + nx;
			if (!tg_route_drains_to(&r, ni, tg_nbr_opposite(k)))
				continue;
			d = done[ni];
			ready = d >= 0 && d < sweep;	/* completed in an earlier sweep */
		}
		if (ready)
		{
			acc[i] = tg_route_pull_own(&r, weight.at(i), acc, i, tg_route_donors(&r, i), nullptr);
			done[i] = sweep;
		}
		else
			*pending = 1;
	}
}

__global__ void
tgk_nodata_nan(const uint8_t *__restrict__ kind, size_t n, double *__restrict__ acc)
{
	TG_GRID_STRIDE(i, n)
		if (kind[i] == KIND_NODATA)
		acc[i] = NAN;
}

/*
 * Donor and receiver masks, pending-donor counts, and the sources at
 * order[0, *sources); acc (if any) starts as NaN.
 */
tg_status
find_sources(const tg_route_view &r, const uint8_t *kind, double *acc, uint16_t *links,
			 uint32_t *indeg, uint32_t *order, uint32_t *sources, tg_error *err)
{
	const size_t n = (size_t) r.width * r.height;
	dbuf<uint32_t> count;

	TG_CUDA_CHECK(count.alloc(1), "allocating a counter");
	TG_CUDA_CHECK(cudaMemset(count.p, 0, sizeof(uint32_t)), "clearing a counter");
	tgk_links<<<grid_for(n), 256>>>(r, kind, links, indeg);
	TG_CUDA_CHECK(cudaGetLastError(), "linking donors and receivers");
	tgk_sources<<<grid_for(n), 256>>>(kind, indeg, n, order, count.p, acc);
	TG_CUDA_CHECK(cudaGetLastError(), "finding sources");
	TG_CUDA_CHECK(cudaMemcpy(sources, count.p, sizeof(uint32_t), cudaMemcpyDeviceToHost),
				  "finding sources");
	return TG_OK;
}

/*
 * The topological order: Kahn's frontier rounds from the sources, cells
 * grouped by level in order[]; level_start (host) receives the level
 * boundaries, d_level_start the device copy (less the final one).
 */
tg_status
frontier_rounds(const tg_ctx *ctx, const tg_route_view &r, const uint8_t *kind, uint16_t *links,
				uint32_t *indeg, uint32_t *order, uint32_t *d_level_start,
				hbuf<uint32_t> *level_start, int *levels, tg_error *err)
{
	dbuf<uint32_t> state,		/* {head, count, level} */
				appended;		/* 3 rotating append counters */
	uint32_t	h[3] = {0, 0, 0};
	tg_status	st;

	TG_CUDA_CHECK(state.alloc(3), "allocating frontier state");
	TG_CUDA_CHECK(appended.alloc(3), "allocating frontier counters");
	st = find_sources(r, kind, nullptr, links, indeg, order, &h[1], err);
	if (st != TG_OK)
		return st;
	TG_CUDA_CHECK(cudaMemcpy(state.p, h, sizeof h, cudaMemcpyHostToDevice), "finding sources");
	st = run_levels(ctx, order_step{r.width, links, indeg}, order, state.p, appended.p, d_level_start, h,
					"running frontier rounds", err);
	if (st != TG_OK)
		return st;
	*levels = (int) h[2];
	if (!level_start->alloc((size_t) h[2] + 1))
		return tg_cuda_host_oom(err, "level starts");
	if (h[2] > 0)
		TG_CUDA_CHECK(cudaMemcpy(level_start->p, d_level_start, h[2] * sizeof(uint32_t),
								 cudaMemcpyDeviceToHost), "reading levels");
	(*level_start)[h[2]] = h[0];
	return TG_OK;
}

/* Indegree on a multiple-flow routing: one launch of tgk_async_pull's persistent grid. */
tg_status
async_pull(const tg_ctx *ctx, const tg_route_view &r, const uint8_t *kind, cell_weights weight,
		   double *acc, float *inflow, uint16_t *links, uint32_t *indeg, int *launches, tg_error *err)
{
	const size_t n = (size_t) r.width * r.height;
	dbuf<uint32_t> state,
				queue;			/* the sources, then the queued cells */
	uint32_t	h[4] = {0, 0, 0, 0},
				valid = 0;
	unsigned	blocks = 0;
	tg_status	st;

	st = resident_grid(tgk_async_pull, 256, ASYNC_BLOCKS_PER_SM, &blocks, err);
	if (st != TG_OK)
		return st;

	/* a slot per cell, ASYNC_REQUEUES more per lane for spares (fewer if the indices run out) */
	const size_t lanes = (size_t) blocks * 256,
				capacity = std::min<size_t>(n + lanes * ASYNC_REQUEUES, QUEUE_EMPTY - 1);
	const uint32_t requeues = (uint32_t) ((capacity - n) / lanes);

	TG_CUDA_CHECK(state.alloc(4), "allocating queue state");
	TG_CUDA_CHECK(queue.alloc(capacity), "allocating the queue");
	TG_CUDA_CHECK(cudaMemset(state.p, 0, 4 * sizeof(uint32_t)), "clearing queue state");
	TG_CUDA_CHECK(cudaMemset(queue.p, 0xff, capacity * sizeof(uint32_t)), "clearing the queue");
	tgk_count_valid<<<grid_for(n), 256>>>(kind, n, state.p + 2);
	TG_CUDA_CHECK(cudaGetLastError(), "counting cells");
	TG_CUDA_CHECK(cudaMemcpy(&valid, state.p + 2, sizeof valid, cudaMemcpyDeviceToHost), "counting cells");
	st = find_sources(r, kind, acc, links, indeg, queue.p, &h[1], err);
	if (st != TG_OK)
		return st;
	if (inflow)
	{
		tgk_gather_inflow<<<grid_for(n), 256>>>(r, links, inflow);
		TG_CUDA_CHECK(cudaGetLastError(), "gathering shares");
	}
	*launches = 1;
	if (valid == 0)
		return TG_OK;
	if (tg_canceled(ctx))
		return tg_error_set(err, TG_ECANCELED, "flow accumulation canceled");
	TG_CUDA_CHECK(cudaMemcpy(state.p, h, sizeof h, cudaMemcpyHostToDevice), "starting the queue");
	tgk_async_pull<<<blocks, 256>>>(r, weight, acc, links, inflow, indeg, queue.p, (uint32_t) capacity,
									requeues, state.p, valid);
	TG_CUDA_CHECK(cudaGetLastError(), "accumulating from the queue");
	TG_CUDA_CHECK(cudaMemcpy(h, state.p, sizeof h, cudaMemcpyDeviceToHost), "accumulating from the queue");
	if (h[3] || h[2] != valid)
		return tg_error_set(err, TG_EDATA, "flow routing has a cycle");
	return TG_OK;
}

tg_status
replay_levels(const tg_ctx *ctx, const tg_route_view &r, cell_weights weight, double *acc,
			  const uint16_t *links, const float *inflow, const uint32_t *order, uint32_t *d_level_start,
			  const hbuf<uint32_t> &level_start, tg_error *err)
{
	const uint32_t levels = (uint32_t) level_start.n - 1;
	unsigned	blocks = 0;
	tg_status	st;

	st = coop_grid(tgk_replay_coop, &blocks, err);
	if (st != TG_OK)
		return st;
	/* the device copy needs the final boundary too */
	TG_CUDA_CHECK(cudaMemcpy(d_level_start + levels, &level_start[levels], sizeof(uint32_t),
							 cudaMemcpyHostToDevice), "recording levels");
	/* runs of wide levels on the grid, runs of narrow ones in one block */
	for (uint32_t l0 = 0, l1; l0 < levels; l0 = l1)
	{
		const bool	narrow = level_start[l0 + 1] - level_start[l0] < LEVELS_NARROW;
		void	   *args[] = {(void *) &r, (void *) &weight, (void *) &acc, (void *) &links, (void *) &inflow,
		(void *) &order, (void *) &d_level_start, (void *) &l0, (void *) &l1};

		for (l1 = l0 + 1; l1 < levels && l1 - l0 < LEVELS_PER_LAUNCH &&
			 (level_start[l1 + 1] - level_start[l1] < LEVELS_NARROW) == narrow; l1++)
			;
		if (tg_canceled(ctx))
			return tg_error_set(err, TG_ECANCELED, "flow accumulation canceled");
		if (narrow)
		{
			tgk_replay_block<<<1, LEVELS_BLOCK_THREADS>>>(r, weight, acc, links, inflow, order, d_level_start,
														   l0, l1);
			TG_CUDA_CHECK(cudaGetLastError(), "replaying levels");
		}
		else
			TG_CUDA_CHECK(cudaLaunchCooperativeKernel((void *) tgk_replay_coop, blocks, LEVELS_GRID_THREADS,
													  args, 0, 0), "replaying levels");
	}
	return TG_OK;
}

tg_status
flow_transfer(const tg_ctx *ctx, const tg_route_view &r, const uint8_t *kind,
			  cell_weights weight, double *acc, int *sweeps, tg_error *err)
{
	const size_t n = (size_t) r.width * r.height;
	dbuf<double> a,
				b;
	dbuf<unsigned> flags;
	unsigned	host[SWEEP_BATCH];

	TG_CUDA_CHECK(a.alloc(n), "allocating water in transit");
	TG_CUDA_CHECK(b.alloc(n), "allocating water in transit");
	TG_CUDA_CHECK(flags.alloc(SWEEP_BATCH), "allocating sweep flags");
	TG_CUDA_CHECK(cudaMemset(b.p, 0, n * sizeof(double)), "clearing water in transit");
	tgk_transfer_init<<<grid_for(n), 256>>>(kind, weight, n, acc, a.p);
	TG_CUDA_CHECK(cudaGetLastError(), "starting flow transfer");
	for (*sweeps = 0;;)
	{
		if (tg_canceled(ctx))
			return tg_error_set(err, TG_ECANCELED, "flow accumulation canceled");
		TG_CUDA_CHECK(cudaMemsetAsync(flags.p, 0, sizeof host), "clearing flags");
		for (int s = 0; s < SWEEP_BATCH; s++)
		{
			tgk_transfer_sweep<<<grid_for(n), 256>>>(r, kind, a.p, b.p, acc, flags.p + s);
			std::swap(a.p, b.p);
		}
		TG_CUDA_CHECK(cudaGetLastError(), "transferring flow");
		TG_CUDA_CHECK(cudaMemcpy(host, flags.p, sizeof host, cudaMemcpyDeviceToHost),
					  "transferring flow");
		for (int s = 0; s < SWEEP_BATCH; s++)
		{
			if (!host[s])
				return TG_OK;	/* nothing in transit any more */
			(*sweeps)++;
		}
	}
}

tg_status
dependency_transfer(const tg_ctx *ctx, const tg_route_view &r, const uint8_t *kind,
					cell_weights weight, double *acc, int *sweeps, tg_error *err)
{
	const size_t n = (size_t) r.width * r.height;
	dbuf<int32_t> done;
	dbuf<unsigned> flags;
	unsigned	host[SWEEP_BATCH];

	TG_CUDA_CHECK(done.alloc(n), "allocating completion sweeps");
	TG_CUDA_CHECK(flags.alloc(SWEEP_BATCH), "allocating sweep flags");
	TG_CUDA_CHECK(cudaMemset(done.p, 0xFF, n * sizeof(int32_t)), "clearing completion sweeps");
	tgk_nodata_nan<<<grid_for(n), 256>>>(kind, n, acc);
	for (*sweeps = 0;;)
	{
		if (tg_canceled(ctx))
			return tg_error_set(err, TG_ECANCELED, "flow accumulation canceled");
		TG_CUDA_CHECK(cudaMemsetAsync(flags.p, 0, sizeof host), "clearing flags");
		for (int s = 0; s < SWEEP_BATCH; s++)
			tgk_dependency_sweep<<<grid_for(n), 256>>>(r, kind, weight, acc, done.p,
														*sweeps + s, flags.p + s);
		TG_CUDA_CHECK(cudaGetLastError(), "transferring dependencies");
		TG_CUDA_CHECK(cudaMemcpy(host, flags.p, sizeof host, cudaMemcpyDeviceToHost),
					  "transferring dependencies");
		for (int s = 0; s < SWEEP_BATCH; s++)
		{
			(*sweeps)++;
			if (!host[s])
				return TG_OK;	/* nothing was left pending after this sweep */
		}
		if ((size_t) *sweeps > n + 1)
			return tg_error_set(err, TG_EDATA, "flow routing has a cycle");
	}
}

}								/* namespace */

/* Indegree on a D8 routing: one launch of chains from the sources. */
tg_status
d8_chains(const tg_ctx *ctx, const tg_route_view &r, const uint8_t *kind, cell_weights weight,
		  double *acc, uint16_t *links, uint32_t *indeg, uint32_t *order, int *launches,
		  tg_error *err)
{
	uint32_t	sources = 0;
	tg_status	st;

	st = find_sources(r, kind, acc, links, indeg, order, &sources, err);
	if (st != TG_OK)
		return st;
	if (tg_canceled(ctx))
		return tg_error_set(err, TG_ECANCELED, "flow accumulation canceled");
	*launches = 1;
	if (sources == 0)
		return TG_OK;
	tgk_d8_chains<<<grid_for(sources), 256>>>(r, weight, acc, links, indeg, order, sources);
	TG_CUDA_CHECK(cudaGetLastError(), "following chains");
	return TG_OK;
}

/*
 * Accumulate on a routing already on the device, by the method the
 * dispatcher resolved (tiled: accum_tiled.cu); *used names what ran.
 */
template <typename V>
tg_status
accumulate(const tg_ctx *ctx, const device_route<V> &route, const tg_flow_params *p,
		   cell_weights weight, tg_accum_method method, bool gather, double *acc, int *rounds,
		   const char **used, tg_error *err)
{
	const tg_route_view r = route.view(p->threshold);
	const size_t n = route.n;

	*used = tg_accum_method_name(method);
	if (method == TG_ACC_TILED)
	{
		if (p->routing != TG_ROUTE_D8)
			return tg_error_set(err, TG_EINVAL, "the tiled accumulation routes d8 only");
		return accumulate_d8_tiled(ctx, r, route.kind.p, weight, acc, rounds, err);
	}

	if (method == TG_ACC_FLOW_TRANSFER)
		return flow_transfer(ctx, r, route.kind.p, weight, acc, rounds, err);
	if (method == TG_ACC_DEPENDENCY_TRANSFER)
		return dependency_transfer(ctx, r, route.kind.p, weight, acc, rounds, err);

	dbuf<uint32_t> indeg,
				order;
	dbuf<uint16_t> links;
	dbuf<float> inflow;

	TG_CUDA_CHECK(indeg.alloc(n), "allocating donor counts");
	/* the multiple-flow indegree (async_pull) allocates its own, larger queue */
	if (method == TG_ACC_TOPOLOGICAL || p->routing == TG_ROUTE_D8)
		TG_CUDA_CHECK(order.alloc(n), "allocating the order");
	TG_CUDA_CHECK(links.alloc(n), "allocating donor masks");
	if (gather && shares_gatherable(p->routing))
		TG_CUDA_CHECK(inflow.alloc(8 * n), "allocating gathered shares");
	if (method == TG_ACC_TOPOLOGICAL)
	{
		dbuf<uint32_t> d_level_start;
		hbuf<uint32_t> level_start(ctx);
		tg_status	st;

		TG_CUDA_CHECK(d_level_start.alloc(n + 1), "allocating levels");
		st = frontier_rounds(ctx, r, route.kind.p, links.p, indeg.p, order.p, d_level_start.p,
							 &level_start, rounds, err);
		if (st != TG_OK)
			return st;
		if (inflow.p)
		{
			tgk_gather_inflow<<<grid_for(n), 256>>>(r, links.p, inflow.p);
			TG_CUDA_CHECK(cudaGetLastError(), "gathering shares");
		}
		tgk_nodata_nan<<<grid_for(n), 256>>>(route.kind.p, n, acc);
		TG_CUDA_CHECK(cudaGetLastError(), "clearing nodata");
		return replay_levels(ctx, r, weight, acc, links.p, inflow.p, order.p, d_level_start.p,
							 level_start, err);
	}
	if (p->routing == TG_ROUTE_D8)
		return d8_chains(ctx, r, route.kind.p, weight, acc, links.p, indeg.p, order.p, rounds, err);
	return async_pull(ctx, r, route.kind.p, weight, acc, inflow.p, links.p, indeg.p, rounds, err);
}

size_t
accumulation_bytes_per_cell(tg_accum_method method, tg_routing routing, bool weight_plane, bool gather)
{
	/* count, queue, masks, the gathered shares */
	const size_t indegree = 10 + (gather && shares_gatherable(routing) ? 32 : 0);
	size_t		own = method == TG_ACC_FLOW_TRANSFER ? 16 : method == TG_ACC_DEPENDENCY_TRANSFER ? 4 :
		method == TG_ACC_TOPOLOGICAL ? indegree + 4 :
		method == TG_ACC_TILED ? tiled_bytes_per_cell() : indegree;

	return sizeof(double) + (weight_plane ? sizeof(double) : 0) + own;
}

template tg_status accumulate<float>(const tg_ctx *, const device_route<float> &,
									 const tg_flow_params *, cell_weights, tg_accum_method, bool,
									 double *, int *, const char **, tg_error *);
template tg_status accumulate<double>(const tg_ctx *, const device_route<double> &,
									  const tg_flow_params *, cell_weights, tg_accum_method, bool,
									  double *, int *, const char **, tg_error *);
