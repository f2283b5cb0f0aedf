/*
 * drainage.cu — drainage.c's graph passes over D8 receivers on the device:
 * labels carried down the flow (basins) and stream orders gathered up it
 * (Strahler, Shreve).  They give the host passes' values exactly: a label is
 * copied, never computed, and an order is a maximum or a sum of integers.
 *
 * Labels.  A cell's label is its mark where it ends (a mark, the end of a
 * path, nodata: 0) and its receiver's otherwise, so each cell needs the end
 * of its path.  Pointer jumping, in three steps: every cell follows its
 * path within its 32 x 32 tile, in shared memory, to where it ends or
 * leaves the tile; a path enters a tile on the tile's edge, so
 * then only the cells where a path enters a tile (listed) jump, over the
 * grid (one cooperative kernel, rounds separated by grid barriers), until
 * each points at an end; then every cell takes the label of the end its
 * path reaches in its tile, or that the entry it goes to points at.
 *
 * Orders.  An order is the same along a link (from a source or a confluence
 * down to the next confluence): the stream cells, listed, find their link's
 * head by pointer jumping up the one stream donor each cell inside a link
 * has; then one thread per source walks down the tree of links (Kahn's
 * algorithm): the thread that hands a confluence its last incoming link
 * computes the confluence's order and goes on from there, one atomic per
 * confluence.
 */
#include "levels.cuh"
#include "tg_cuda_common.cuh"
#include "hydro/hydro.h"

namespace cg = cooperative_groups;

namespace
{
constexpr int TILE = 32;		/* labels: a block follows paths in a TILE x TILE tile */
constexpr int THREADS = 256;
constexpr uint8_t MARKED = 0xFD;	/* down[] on the device: a marked cell, where labels end */
constexpr uint32_t NONE = 0xFFFFFFFFu;
constexpr int MAX_JUMPS = 64;	/* 2^64 steps: more means a cycle, which D8 receivers never have */

/* Where paths end: marks, the ends of paths, nodata (down[] beyond 7). */
__device__ __forceinline__ bool
ends(uint8_t d)
{
	return d > 7;
}

__device__ __forceinline__ uint32_t
receiver_of(uint32_t c, uint8_t d, int W)
{
	return (uint32_t) ((int64_t) c + tg_nbr_dy(d) * (int64_t) W + tg_nbr_dx(d));
}

/* ------------------------------------------------------------------------
 * Labels
 * ------------------------------------------------------------------------ */

/* Marked cells end paths (label[] holds the marks). */
__global__ void
tgk_mark_ends(uint8_t *down, const uint32_t *label, size_t n)
{
	for (size_t i = blockIdx.x * (size_t) blockDim.x + threadIdx.x; i < n; i += (size_t) gridDim.x * blockDim.x)
		if (label[i] != 0 && down[i] != TG_DOWN_NODATA)
			down[i] = MARKED;
}

struct is_path_end
{
	__device__ bool operator()(uint8_t d) const
	{
		return d == TG_NO_DIRECTION;
	}
};

/* The ends of the paths, listed in row-major order: each one's number, from 1. */
__global__ void
tgk_number_ends(const uint32_t *end, const uint32_t *count, uint32_t *label)
{
	const uint32_t ends = *count;

	for (uint32_t k = blockIdx.x * blockDim.x + threadIdx.x; k < ends; k += gridDim.x * blockDim.x)
		label[end[k]] = k + 1;
}

/*
 * A block of TILE x TILE_ROWS threads per tile, each with PER_THREAD cells
 * of a column (small blocks keep several tiles on a multiprocessor while
 * one waits at a barrier).
 */
constexpr int PER_THREAD = 4;
constexpr int TILE_ROWS = TILE / PER_THREAD;

/*
 * to[c] of every cell: where its path goes when followed inside its tile —
 * the cell itself where it ends, else the end of its path in the tile, else
 * the first cell of its path outside the tile — by pointer jumping in
 * shared memory (a walk cell by cell is slower: the resolved flats' paths
 * wind through whole tiles).  And the cells where paths enter a tile from
 * another (a neighbour in another tile drains into them), listed in
 * entry[0, *count).
 */
__global__ void __launch_bounds__(TILE * TILE_ROWS)
tgk_tile_paths(const uint8_t *down, uint32_t *to, int W, int H, uint32_t *entry, uint32_t *count)
{
	__shared__ int16_t next[TILE * TILE];	/* the next cell in the tile, or -1 */
	__shared__ uint32_t last[TILE * TILE];	/* where the path goes from there */
	__shared__ uint32_t in_block,
				base;
	const int	x0 = blockIdx.x * TILE,
				y0 = blockIdx.y * TILE,
				tw = min(TILE, W - x0),
				th = min(TILE, H - y0),
				lx = threadIdx.x;
	bool		more = false;
	int			entered = 0;
	uint32_t	at = 0;

	for (int j = 0; j < PER_THREAD; j++)
	{
		const int	ly = threadIdx.y + j * TILE_ROWS,
					t = ly * TILE + lx;
		const uint32_t c = (uint32_t) (y0 + ly) * (uint32_t) W + (uint32_t) (x0 + lx);

		next[t] = -1;
		if (lx >= tw || ly >= th)
			continue;
		last[t] = c;
		if (!ends(down[c]))
		{
			const uint8_t d = down[c];
			const int	nx = lx + tg_nbr_dx(d),
						ny = ly + tg_nbr_dy(d);

			if (nx >= 0 && ny >= 0 && nx < tw && ny < th)
			{
				next[t] = (int16_t) (ny * TILE + nx);
				more = true;
			}
			else
				last[t] = receiver_of(c, d, W);
		}
	}
	while (__syncthreads_or(more))
	{
		int			k[PER_THREAD],
					k2[PER_THREAD];
		uint32_t	l[PER_THREAD];

		for (int j = 0; j < PER_THREAD; j++)
		{
			k[j] = next[(threadIdx.y + j * TILE_ROWS) * TILE + lx];
			if (k[j] >= 0)
			{
				k2[j] = next[k[j]];
				l[j] = last[k[j]];
			}
		}
		__syncthreads();
		more = false;
		for (int j = 0; j < PER_THREAD; j++)
			if (k[j] >= 0)
			{
				const int	t = (threadIdx.y + j * TILE_ROWS) * TILE + lx;

				next[t] = (int16_t) k2[j];
				last[t] = l[j];
				more |= k2[j] >= 0;
			}
	}
	if (threadIdx.x == 0 && threadIdx.y == 0)
		in_block = 0;
	for (int j = 0; j < PER_THREAD; j++)
	{
		const int	ly = threadIdx.y + j * TILE_ROWS,
					x = x0 + lx,
					y = y0 + ly;
		const uint32_t c = (uint32_t) y * (uint32_t) W + (uint32_t) x;
		bool		in = false;

		if (lx >= tw || ly >= th)
			continue;
		to[c] = last[ly * TILE + lx];
		if (lx == 0 || ly == 0 || lx == tw - 1 || ly == th - 1)
			for (int k = 0; k < 8 && !in; k++)
			{
				const int	nx = x + tg_nbr_dx(k),
							ny = y + tg_nbr_dy(k);

				in = nx >= 0 && ny >= 0 && nx < W && ny < H &&
					(nx < x0 || ny < y0 || nx >= x0 + tw || ny >= y0 + th) &&
					down[(size_t) ny * W + nx] == tg_nbr_opposite(k);
			}
		entered |= in << j;
	}
	/* one atomic on the global count per block */
	__syncthreads();
	if (entered)
		at = atomicAdd(&in_block, (uint32_t) __popc(entered));
	__syncthreads();
	if (threadIdx.x == 0 && threadIdx.y == 0 && in_block > 0)
		base = atomicAdd(count, in_block);
	__syncthreads();
	for (int j = 0; j < PER_THREAD; j++)
		if (entered & (1 << j))
			entry[base + at++] = (uint32_t) (y0 + threadIdx.y + j * TILE_ROWS) * (uint32_t) W + (uint32_t) (x0 + lx);
}

/*
 * Every cell's label: that of the end its path reaches in its tile, or of
 * the end the entry it goes to points at.  *broken: a path that did not
 * reach an end (never, unless the receivers had a cycle).
 */
__global__ void
tgk_take_labels(const uint8_t *down, const uint32_t *to, uint32_t *label, size_t n, int *broken)
{
	for (size_t i = blockIdx.x * (size_t) blockDim.x + threadIdx.x; i < n; i += (size_t) gridDim.x * blockDim.x)
	{
		const uint8_t d = down[i];
		uint32_t	t;

		if (ends(d))
		{
			if (d == TG_DOWN_NODATA)
				label[i] = 0;
			continue;
		}
		t = to[i];
		if (!ends(down[t]))
			t = to[t];
		if (!ends(down[t]))
			*broken = 1;
		label[i] = down[t] == TG_DOWN_NODATA ? 0 : label[t];
	}
}

/*
 * Pointer jumping in one cooperative launch: rounds of step(k) for every
 * k < step.size(), separated by grid barriers, until no step moved.
 * moved[r]: a step moved in round r (MAX_JUMPS of them, zero); *rounds: how
 * many ran.  What other blocks wrote is read through L2.
 */
template <typename Step>
__global__ void __launch_bounds__(THREADS)
tgk_jump(Step step, int *moved, int *rounds)
{
	cg::grid_group grid = cg::this_grid();
	const uint32_t m = step.size();

	for (int round = 0; round < MAX_JUMPS; round++)
	{
		bool		any = false;

		for (uint32_t k = grid.thread_rank(); k < m; k += grid.size())
			any |= step(k);
		if (__syncthreads_or(any) && threadIdx.x == 0)
			atomicExch(&moved[round], 1);
		grid.sync();
		if (TG_LOAD_SHARED(&moved[round]) == 0)
		{
			if (grid.thread_rank() == 0)
				*rounds = round;
			return;
		}
	}
	if (grid.thread_rank() == 0)
		*rounds = MAX_JUMPS;
}

/* Jump until no step moves; a cycle (no end after MAX_JUMPS rounds) is an error. */
template <typename Step>
tg_status
jump(Step step, int *d_moved, const char *what, tg_error *err)
{
	int		   *rounds = d_moved + MAX_JUMPS;
	int			ran = 0;
	unsigned	blocks = 0;
	void	   *args[] = {&step, &d_moved, &rounds};

	if (coop_grid(tgk_jump<Step>, &blocks, err) != TG_OK)
		return err->code;
	TG_CUDA_CHECK(cudaMemsetAsync(d_moved, 0, (MAX_JUMPS + 1) * sizeof(int), 0), "clearing flags");
	TG_CUDA_CHECK(cudaLaunchCooperativeKernel((void *) tgk_jump<Step>, blocks, THREADS, args, 0, 0),
				  "launching the jumps");
	TG_CUDA_CHECK(cudaMemcpy(&ran, rounds, sizeof ran, cudaMemcpyDeviceToHost), "reading the jumps' rounds");
	if (ran >= MAX_JUMPS)
		return tg_error_set(err, TG_EDEVICE, "%s have a cycle (no end after %d jumps)", what, ran);
	return TG_OK;
}

/* A listed entry c jumps, to[c] = to[to[c]], until it points at an end (an end or another entry). */
struct entry_jump
{
	const uint8_t *down;
	uint32_t   *to;
	const uint32_t *entry;
	const uint32_t *count;

	__device__ uint32_t size() const
	{
		return *count;
	}
	__device__ bool operator() (uint32_t e) const
	{
		const uint32_t c = entry[e],
					t = to[c];

		if (ends(down[t]))
			return false;
		to[c] = TG_LOAD_SHARED(&to[t]);
		return true;
	}
};

unsigned
grid_for(size_t n)
{
	return (unsigned) std::min<size_t>(tg_div_up(n, THREADS), 65535u * 8u);
}

tg_status
labels_impl(const tg_ctx *ctx, int W, int H, const uint8_t *down, const uint32_t *mark, uint32_t *labels,
			tg_error *err)
{
	const size_t n = (size_t) W * H;
	const dim3	tiles(tg_div_up(W, TILE), tg_div_up(H, TILE));
	dbuf<uint8_t> d_down;
	dbuf<uint32_t> d_to,
				d_label,
				d_entry,		/* the cells where paths enter a tile */
				d_count;
	dbuf<int>	d_flag;
	event_timer up,
				work,
				back;
	int			broken = 0;

	if (n == 0)
		return TG_OK;
	if (tg_cuda_check_budget(ctx, n * (1 + 2 * sizeof(uint32_t)) + n / 2, "labelling basins", err) != TG_OK)
		return err->code;
	TG_CUDA_CHECK(d_down.alloc(n), "allocating the receivers");
	TG_CUDA_CHECK(d_to.alloc(n), "allocating the paths");
	TG_CUDA_CHECK(d_label.alloc(n), "allocating the labels");
	/* at most the edges of every tile */
	TG_CUDA_CHECK(d_entry.alloc(std::min(n, (size_t) tiles.x * tiles.y * 4 * TILE)), "allocating the entries");
	TG_CUDA_CHECK(d_count.alloc(1), "allocating a count");
	TG_CUDA_CHECK(d_flag.alloc(MAX_JUMPS + 1), "allocating flags");
	TG_CUDA_CHECK(up.init(), "creating timing events");
	TG_CUDA_CHECK(work.init(), "creating timing events");
	TG_CUDA_CHECK(back.init(), "creating timing events");

	TG_CUDA_CHECK(cudaEventRecord(up.start), "recording an event");
	TG_CUDA_CHECK(tg_cuda_copy_to_device(ctx, d_down.p, down, n), "copying the receivers to the GPU");
	if (mark)
		TG_CUDA_CHECK(tg_cuda_copy_to_device(ctx, d_label.p, mark, n * sizeof(uint32_t)),
					  "copying the marks to the GPU");
	TG_CUDA_CHECK(cudaEventRecord(up.stop), "recording an event");

	TG_CUDA_CHECK(cudaEventRecord(work.start), "recording an event");
	/* the marks, or the ends of the paths numbered (listed where the paths go later) */
	if (mark)
		tgk_mark_ends<<<grid_for(n), THREADS>>>(d_down.p, d_label.p, n);
	else if (select_cells(thrust::make_transform_iterator(d_down.p, is_path_end()), n, d_to.p, d_count.p, err) ==
			 TG_OK)
		tgk_number_ends<<<512, THREADS>>>(d_to.p, d_count.p, d_label.p);
	else
		return err->code;
	TG_CUDA_CHECK(cudaGetLastError(), "launching the marks");
	TG_CUDA_CHECK(cudaMemsetAsync(d_count.p, 0, sizeof(uint32_t), 0), "clearing a count");
	tgk_tile_paths<<<tiles, dim3(TILE, TILE_ROWS)>>>(d_down.p, d_to.p, W, H, d_entry.p, d_count.p);
	TG_CUDA_CHECK(cudaGetLastError(), "launching the paths in tiles");
	if (jump(entry_jump {d_down.p, d_to.p, d_entry.p, d_count.p}, d_flag.p, "the D8 receivers", err) != TG_OK)
		return err->code;
	TG_CUDA_CHECK(cudaMemsetAsync(d_flag.p, 0, sizeof(int), 0), "clearing a flag");
	tgk_take_labels<<<grid_for(n), THREADS>>>(d_down.p, d_to.p, d_label.p, n, d_flag.p);
	TG_CUDA_CHECK(cudaGetLastError(), "launching the labels");
	TG_CUDA_CHECK(cudaEventRecord(work.stop), "recording an event");

	TG_CUDA_CHECK(cudaEventRecord(back.start), "recording an event");
	TG_CUDA_CHECK(tg_cuda_copy_to_host(ctx, labels, d_label.p, n * sizeof(uint32_t)),
				  "copying the labels back from the GPU");
	TG_CUDA_CHECK(cudaMemcpy(&broken, d_flag.p, sizeof(int), cudaMemcpyDeviceToHost), "reading a flag");
	TG_CUDA_CHECK(cudaEventRecord(back.stop), "recording an event");
	TG_CUDA_CHECK(cudaEventSynchronize(back.stop), "labelling basins");
	if (broken)
		return tg_error_set(err, TG_EDEVICE, "a flow path on the GPU did not reach its end");
	charge_device_time(ctx, work.elapsed(), up.elapsed() + back.elapsed());
	return TG_OK;
}

/* ------------------------------------------------------------------------
 * Stream orders
 * ------------------------------------------------------------------------ */

struct is_stream
{
	__device__ bool operator()(uint8_t s) const
	{
		return s != 0;
	}
};

/* Each stream cell's place in the list. */
__global__ void
tgk_stream_places(const uint32_t *cell, uint32_t m, uint32_t *pos)
{
	for (uint32_t k = blockIdx.x * blockDim.x + threadIdx.x; k < m; k += gridDim.x * blockDim.x)
		pos[cell[k]] = k;
}

/*
 * Per stream cell k: the stream cell below it (below; NONE where the stream
 * ends), counting itself among that one's stream donors (ndon, zero
 * before); up[k] = k for now.
 */
__global__ void
tgk_stream_links(const uint8_t *down, const uint8_t *stream, const uint32_t *pos, const uint32_t *cell,
				 uint32_t m, int W, uint32_t *ndon, uint32_t *up, uint32_t *below)
{
	for (uint32_t k = blockIdx.x * blockDim.x + threadIdx.x; k < m; k += gridDim.x * blockDim.x)
	{
		const uint32_t c = cell[k];
		const uint8_t d = down[c];
		uint32_t	b = NONE;

		if (!ends(d))
		{
			const uint32_t r = receiver_of(c, d, W);

			if (stream[r])
				b = pos[r];
		}
		below[k] = b;
		up[k] = k;
		if (b != NONE)
			atomicAdd(&ndon[b], 1u);
	}
}

/* Inside a link, a cell's one stream donor is the cell above it. */
__global__ void
tgk_stream_up(const uint32_t *ndon, const uint32_t *below, uint32_t m, uint32_t *up)
{
	for (uint32_t k = blockIdx.x * blockDim.x + threadIdx.x; k < m; k += gridDim.x * blockDim.x)
	{
		const uint32_t b = below[k];

		if (b != NONE && ndon[b] == 1)
			up[b] = k;
	}
}

/* A stream cell jumps up to its link's head, up[k] = up[up[k]]. */
struct head_jump
{
	uint32_t   *up;
	uint32_t	m;

	__device__ uint32_t size() const
	{
		return m;
	}
	__device__ bool operator() (uint32_t k) const
	{
		const uint32_t u = up[k],
					uu = TG_LOAD_SHARED(&up[u]);

		if (uu == u)
			return false;
		up[k] = uu;
		return true;
	}
};

/*
 * What a confluence has gathered, in one 64-bit word so that one atomic
 * hands it a link: the links still to come (4 bits: a cell has at most 8
 * donors) and, above them, for Strahler the highest incoming order (32
 * bits) and how many links have it (28 bits), for Shreve the sum of the
 * incoming magnitudes.
 */
constexpr int PENDING_BITS = 4;

__device__ __forceinline__ unsigned long long
gather(unsigned long long g, uint32_t o, bool shreve)
{
	const uint32_t top = (uint32_t) (g >> 32);

	if (shreve)
		return g + ((unsigned long long) o << PENDING_BITS) - 1;
	if (o > top)
		return ((unsigned long long) o << 32) | (1ull << PENDING_BITS) | ((g & 0xF) - 1);
	return (o == top ? g + (1ull << PENDING_BITS) : g) - 1;
}

__device__ __forceinline__ uint32_t
gathered_order(unsigned long long g, bool shreve)
{
	const uint32_t top = (uint32_t) (g >> 32),
				count = (uint32_t) (g & 0xFFFFFFFFull) >> PENDING_BITS;

	return shreve ? (uint32_t) (g >> PENDING_BITS) : count >= 2 ? top + 1 : top;
}

/* The confluence each link flows into (parent, by its head), and how many links each one waits for. */
__global__ void
tgk_link_tree(const uint32_t *ndon, const uint32_t *up, const uint32_t *below, uint32_t m, uint32_t *parent,
			  unsigned long long *gathered)
{
	for (uint32_t k = blockIdx.x * blockDim.x + threadIdx.x; k < m; k += gridDim.x * blockDim.x)
	{
		const uint32_t b = below[k];

		gathered[k] = ndon[k];
		/* the last cell of a link: the stream ends below it, or a confluence starts there */
		if (b != NONE && ndon[b] >= 2)
			parent[up[k]] = b;
		else if (b == NONE)
			parent[up[k]] = NONE;
	}
}

/*
 * From every source down the tree of links: the thread whose link is the
 * last a confluence waits for computes the confluence's order and goes on.
 */
__global__ void
tgk_walk_links(const uint32_t *ndon, const uint32_t *parent, unsigned long long *gathered, uint32_t *order,
			   uint32_t m, bool shreve)
{
	for (uint32_t k = blockIdx.x * blockDim.x + threadIdx.x; k < m; k += gridDim.x * blockDim.x)
	{
		uint32_t	h = k,
					o = 1;

		if (ndon[k] != 0)
			continue;
		for (;;)
		{
			const uint32_t p = parent[h];
			unsigned long long seen,
						now;

			order[h] = o;
			if (p == NONE)
				break;
			seen = gathered[p];
			for (;;)
			{
				const unsigned long long was = atomicCAS(&gathered[p], seen, now = gather(seen, o, shreve));

				if (was == seen)
					break;
				seen = was;
			}
			if ((now & 0xF) != 0)
				break;
			o = gathered_order(now, shreve);
			h = p;
		}
	}
}

__global__ void
tgk_orders_out(const uint32_t *cell, const uint32_t *up, const uint32_t *link_order, uint32_t m, uint32_t *out)
{
	for (uint32_t k = blockIdx.x * blockDim.x + threadIdx.x; k < m; k += gridDim.x * blockDim.x)
		out[cell[k]] = link_order[up[k]];
}

tg_status
orders_impl(const tg_ctx *ctx, int W, int H, const uint8_t *down, const uint8_t *stream, bool shreve,
			uint32_t *order, tg_error *err)
{
	const size_t n = (size_t) W * H;
	dbuf<uint8_t> d_down,
				d_stream;
	dbuf<uint32_t> d_pos,		/* each stream cell's place in the list; later the output */
				d_count,
				d_ndon,
				d_cell,
				d_up,
				d_below,
				d_parent,
				d_order;
	dbuf<unsigned long long> d_gathered;
	dbuf<int>	d_flag;
	event_timer up,
				work,
				back;
	uint32_t	m = 0;

	if (n == 0)
		return TG_OK;
	if (tg_cuda_check_budget(ctx, n * (2 + sizeof(uint32_t)), "stream orders", err) != TG_OK)
		return err->code;
	TG_CUDA_CHECK(d_down.alloc(n), "allocating the receivers");
	TG_CUDA_CHECK(d_stream.alloc(n), "allocating the stream cells");
	TG_CUDA_CHECK(d_pos.alloc(n), "allocating the stream list");
	TG_CUDA_CHECK(d_count.alloc(1), "allocating a count");
	TG_CUDA_CHECK(d_flag.alloc(MAX_JUMPS + 1), "allocating flags");
	TG_CUDA_CHECK(up.init(), "creating timing events");
	TG_CUDA_CHECK(work.init(), "creating timing events");
	TG_CUDA_CHECK(back.init(), "creating timing events");

	TG_CUDA_CHECK(cudaEventRecord(up.start), "recording an event");
	TG_CUDA_CHECK(tg_cuda_copy_to_device(ctx, d_down.p, down, n), "copying the receivers to the GPU");
	TG_CUDA_CHECK(tg_cuda_copy_to_device(ctx, d_stream.p, stream, n), "copying the stream cells to the GPU");
	TG_CUDA_CHECK(cudaEventRecord(up.stop), "recording an event");

	TG_CUDA_CHECK(cudaEventRecord(work.start), "recording an event");
	/* the stream cells listed in row-major order, first where their places go */
	if (select_cells(thrust::make_transform_iterator(d_stream.p, is_stream()), n, d_pos.p, d_count.p, err) != TG_OK)
		return err->code;
	TG_CUDA_CHECK(cudaMemcpy(&m, d_count.p, sizeof m, cudaMemcpyDeviceToHost), "reading the stream cells' count");
	if (m > 0)
	{
		if (tg_cuda_check_budget(ctx, (size_t) m * (6 * sizeof(uint32_t) + sizeof(unsigned long long)),
						 "stream orders", err) != TG_OK)
			return err->code;
		TG_CUDA_CHECK(d_cell.alloc(m), "allocating the stream list");
		TG_CUDA_CHECK(d_ndon.alloc(m), "allocating the stream list");
		TG_CUDA_CHECK(d_up.alloc(m), "allocating the stream list");
		TG_CUDA_CHECK(d_below.alloc(m), "allocating the stream list");
		TG_CUDA_CHECK(d_parent.alloc(m), "allocating the link tree");
		TG_CUDA_CHECK(d_order.alloc(m), "allocating the link tree");
		TG_CUDA_CHECK(d_gathered.alloc(m), "allocating the link tree");
		TG_CUDA_CHECK(cudaMemcpyAsync(d_cell.p, d_pos.p, (size_t) m * sizeof(uint32_t), cudaMemcpyDeviceToDevice, 0),
					  "copying the stream list");
		tgk_stream_places<<<grid_for(m), THREADS>>>(d_cell.p, m, d_pos.p);
		TG_CUDA_CHECK(cudaGetLastError(), "launching the stream cells' places");
		TG_CUDA_CHECK(cudaMemsetAsync(d_ndon.p, 0, (size_t) m * sizeof(uint32_t), 0), "clearing the donors");
		tgk_stream_links<<<grid_for(m), THREADS>>>(d_down.p, d_stream.p, d_pos.p, d_cell.p, m, W, d_ndon.p, d_up.p,
												  d_below.p);
		TG_CUDA_CHECK(cudaGetLastError(), "launching the stream links");
		tgk_stream_up<<<grid_for(m), THREADS>>>(d_ndon.p, d_below.p, m, d_up.p);
		TG_CUDA_CHECK(cudaGetLastError(), "launching the links' cells");
		if (jump(head_jump {d_up.p, m}, d_flag.p, "the stream cells", err) != TG_OK)
			return err->code;
		tgk_link_tree<<<grid_for(m), THREADS>>>(d_ndon.p, d_up.p, d_below.p, m, d_parent.p, d_gathered.p);
		TG_CUDA_CHECK(cudaGetLastError(), "launching the link tree");
		tgk_walk_links<<<grid_for(m), THREADS>>>(d_ndon.p, d_parent.p, d_gathered.p, d_order.p, m, shreve);
		TG_CUDA_CHECK(cudaGetLastError(), "launching the walk down the links");
	}
	/* the list is done with the places: the output goes there */
	TG_CUDA_CHECK(cudaMemsetAsync(d_pos.p, 0, n * sizeof(uint32_t), 0), "clearing the orders");
	if (m > 0)
	{
		tgk_orders_out<<<grid_for(m), THREADS>>>(d_cell.p, d_up.p, d_order.p, m, d_pos.p);
		TG_CUDA_CHECK(cudaGetLastError(), "launching the orders");
	}
	TG_CUDA_CHECK(cudaEventRecord(work.stop), "recording an event");

	TG_CUDA_CHECK(cudaEventRecord(back.start), "recording an event");
	TG_CUDA_CHECK(tg_cuda_copy_to_host(ctx, order, d_pos.p, n * sizeof(uint32_t)),
				  "copying the orders back from the GPU");
	TG_CUDA_CHECK(cudaEventRecord(back.stop), "recording an event");
	TG_CUDA_CHECK(cudaEventSynchronize(back.stop), "ordering streams");
	charge_device_time(ctx, work.elapsed(), up.elapsed() + back.elapsed());
	return TG_OK;
}
}								/* namespace */

extern "C" tg_status
tg_cuda_drainage_labels(const tg_ctx *ctx, int width, int height, const uint8_t *down, const uint32_t *mark,
						uint32_t *labels, tg_error *err)
{
	return tg_cuda_catch_all(err, [&] {
		return labels_impl(ctx, width, height, down, mark, labels, err);
	});
}

extern "C" tg_status
tg_cuda_stream_order(const tg_ctx *ctx, int width, int height, const uint8_t *down, const uint8_t *stream,
					 bool shreve, uint32_t *order, tg_error *err)
{
	return tg_cuda_catch_all(err, [&] {
		return orders_impl(ctx, width, height, down, stream, shreve, order, err);
	});
}
