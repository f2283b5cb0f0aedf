/*
 * fill_scan.cu — a strip's fill scan (scale/seams/fill_seams.c) on the GPU.
 *
 * The scan floods a strip from its outlets (label 0) and from the cells of
 * its first and last rows (each its own label), and gives the seams' solve
 * the lowest height at which water crosses between every two labels that
 * meet.  A cell's level lf, its minimax height to the nearest seed, is the
 * fill (epsilon 0) of the strip with its seeds fixed as outlets: hydro.cuh's
 * tiled relaxation.  The labels need not be the CPU flood's: where every
 * cell reaches its label's seed without rising above its own lf, a minimax
 * path between seeds crosses between labels no higher than itself, so the
 * minimax distances over the label graph, hence the levels the solve gives
 * the seeds, are the same.  Here each cell drains to its lowest lower
 * neighbour; a cell with none (in a filled depression, on a flat) to the
 * smallest exit of its flat (a neighbour of equal lf that is a seed or has a
 * lower neighbour); pointer jumping finds each cell's seed.  The meetings,
 * keyed by label pair, are sorted and reduced to their lowest height on the
 * device, a band of rows at a time within its memory.
 */
#include <vector>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>

#include "hydro.cuh"

namespace
{
/* A cell of the first or last row, a label of its own: fixed, as an outlet, in the fill. */
constexpr uint8_t KIND_SEED = 3;
constexpr uint32_t NO_EXIT = 0xFFFFFFFFu;

/* Pointer-jumping passes per check of the convergence flags. */
constexpr int JUMP_BATCH = 4;

/*
 * Each interior cell's lowest lower neighbour (the first of equals), or,
 * without one, a flat cell (parent NO_EXIT until its flat's exit is known);
 * seeds and nodata their own parents.  Interior cells have every neighbour
 * in the grid.
 */
__global__ void
tgk_scan_descend(const double *__restrict__ lf, const uint8_t *__restrict__ kind, int W, size_t n,
				 uint32_t *__restrict__ parent, uint8_t *__restrict__ flat, uint32_t *__restrict__ root)
{
	TG_GRID_STRIDE(i, n)
	{
		uint32_t	p = (uint32_t) i;
		uint8_t		f = 0;

		if (kind[i] == KIND_INTERIOR)
		{
			double		best = lf[i];

			for (int k = 0; k < 8; k++)
			{
				const size_t m = (size_t) ((ptrdiff_t) i + (ptrdiff_t) tg_nbr_dy(k) * W + tg_nbr_dx(k));

				if (lf[m] < best)	/* false on nodata */
				{
					best = lf[m];
					p = (uint32_t) m;
				}
			}
			f = p == i;
			p = f ? NO_EXIT : p;
		}
		parent[i] = p;
		flat[i] = f;
		root[i] = (uint32_t) i;
	}
}

/*
 * A flat's exits: its cells' neighbours of equal level outside it (each a
 * seed or with a lower neighbour); the smallest becomes its root's parent.
 */
__global__ void
tgk_scan_exits(const double *__restrict__ lf, const uint8_t *__restrict__ flat, int W, size_t n,
			   const uint32_t *__restrict__ root, uint32_t *parent)
{
	TG_GRID_STRIDE(i, n)
	{
		if (!flat[i])
			continue;
		for (int k = 0; k < 8; k++)
		{
			const size_t m = (size_t) ((ptrdiff_t) i + (ptrdiff_t) tg_nbr_dy(k) * W + tg_nbr_dx(k));

			if (!flat[m] && lf[m] == lf[i])
				atomicMin(&parent[root[i]], (uint32_t) m);
		}
	}
}

/* Every other cell of a flat drains where its root does. */
__global__ void
tgk_scan_join(const uint8_t *__restrict__ flat, size_t n, const uint32_t *__restrict__ root, uint32_t *parent)
{
	TG_GRID_STRIDE(i, n)
	{
		if (flat[i] && root[i] != i)
			parent[i] = parent[root[i]];
	}
}

/*
 * One pass of pointer jumping, in place: a parent only ever moves to one of
 * its ancestors, whatever other threads wrote.  changed: set where one moved.
 */
__global__ void
tgk_scan_jump(size_t n, uint32_t *parent, unsigned *changed)
{
	TG_GRID_STRIDE(i, n)
	{
		const uint32_t p = parent[i];

		if (p == NO_EXIT)
			continue;
		const uint32_t g = parent[p];

		if (g != p && g != NO_EXIT)
		{
			parent[i] = g;
			*changed = 1;
		}
	}
}

/*
 * Each cell's label from the seed it reached (in place of its parent); a
 * cell that reached no seed (none can: every flat has an exit) is counted
 * in `orphans`.
 */
__global__ void
tgk_scan_label(const uint8_t *__restrict__ kind, int W, uint32_t top_base, uint32_t bottom_base, size_t n,
			   uint32_t *label, unsigned *orphans)
{
	TG_GRID_STRIDE(i, n)
	{
		const uint32_t r = label[i];
		uint32_t	l = 0;

		if (kind[i] == KIND_NODATA)
			l = 0;
		else if (r == NO_EXIT || (kind[r] != KIND_OUTLET && kind[r] != KIND_SEED))
			atomicAdd(orphans, 1u);
		else if (kind[r] == KIND_SEED)
			l = (r < (uint32_t) W ? top_base : bottom_base) + r % (uint32_t) W;
		label[i] = l;
	}
}

/*
 * Whether cell i meets another label at its j-th forward neighbour *m
 * (east, south-west, south, south-east: each pair of cells once): both
 * valid, the neighbour in the rows [0, nrows).
 */
__device__ __forceinline__ bool
meets(const double *__restrict__ lf, const uint32_t *__restrict__ label, int W, int nrows, size_t i, int j,
	  size_t *m)
{
	const int	dx = j == 0 ? 1 : j - 2,
				dy = j == 0 ? 0 : 1,
				nx = (int) (i % W) + dx,
				ny = (int) (i / W) + dy;

	if (nx < 0 || nx >= W || ny >= nrows)
		return false;
	*m = (size_t) ny * W + nx;
	return !isnan(lf[i]) && !isnan(lf[*m]) && label[*m] != label[i];
}

/* Meetings of two labels per row (rows [0, nrows)). */
__global__ void
tgk_scan_count(const double *__restrict__ lf, const uint32_t *__restrict__ label, int W, int nrows,
			   uint32_t *__restrict__ per_row)
{
	TG_GRID_STRIDE(i, (size_t) W * nrows)
	{
		unsigned	c = 0;
		size_t		m;

		for (int j = 0; j < 4; j++)
			c += meets(lf, label, W, nrows, i, j, &m);
		if (c)
			atomicAdd(&per_row[i / W], c);
	}
}

/* The meetings of rows [y_begin, y_end), each at its row's cursor (the row's offset in the band, advancing). */
__global__ void
tgk_scan_meet(const double *__restrict__ lf, const uint32_t *__restrict__ label, int W, int nrows, int y_begin,
			  int y_end, uint32_t *__restrict__ cursor, uint64_t *__restrict__ key, double *__restrict__ height)
{
	TG_GRID_STRIDE(t, (size_t) W * (y_end - y_begin))
	{
		const size_t i = (size_t) y_begin * W + t;
		size_t		m;

		for (int j = 0; j < 4; j++)
		{
			if (!meets(lf, label, W, nrows, i, j, &m))
				continue;
			const uint32_t a = label[i] < label[m] ? label[i] : label[m],
						b = label[i] < label[m] ? label[m] : label[i],
						at = atomicAdd(&cursor[i / W - y_begin], 1u);

			key[at] = (uint64_t) a << 32 | b;
			height[at] = lf[i] > lf[m] ? lf[i] : lf[m];
		}
	}
}

struct lower_height
{
	__device__ double operator()(double a, double b) const
	{
		return b < a ? b : a;
	}
};

/* Levels and labels of the own rows (lf, label: W * nrows on the device). */
tg_status
scan_labels(const tg_ctx *ctx, const double *z, int W, int count, int y0, int nrows, uint32_t top_base,
			uint32_t bottom_base, double *lf, uint32_t *label, double *transfer_ms, int *rounds, tg_error *err)
{
	const size_t n = (size_t) W * nrows;
	dbuf<double> d_z;
	dbuf<uint8_t> kind,
				flat;
	dbuf<uint32_t> root;
	dbuf<unsigned> flags;
	unsigned	host[JUMP_BATCH];
	event_timer up;
	tg_status	st;

	TG_CUDA_CHECK(up.init(), "creating timing events");
	TG_CUDA_CHECK(d_z.alloc((size_t) W * count), "allocating a strip's surface");
	TG_CUDA_CHECK(kind.alloc(n), "allocating cell kinds");
	TG_CUDA_CHECK(flat.alloc(n), "allocating flat flags");
	TG_CUDA_CHECK(root.alloc(n), "allocating flat labels");
	TG_CUDA_CHECK(flags.alloc(JUMP_BATCH + 1), "allocating flags");
	TG_CUDA_CHECK(cudaEventRecord(up.start), "recording an event");
	TG_CUDA_CHECK(tg_cuda_copy_to_device(ctx, d_z.p, z, (size_t) W * count * sizeof(double)),
				  "copying a strip to the GPU");
	TG_CUDA_CHECK(cudaEventRecord(up.stop), "recording an event");
	tgk_classify<double><<<grid_for(n), 256>>>(d_z.p, W, count, y0, nrows, KIND_SEED, kind.p);
	TG_CUDA_CHECK(cudaGetLastError(), "classifying a strip's cells");
	st = fill_surface<double>(ctx, d_z.p + (size_t) W * y0, kind.p, W, nrows, TG_FILL_PRIORITY_FLOOD, 0, lf, rounds,
							  err);
	if (st != TG_OK)
		return st;
	tgk_scan_descend<<<grid_for(n), 256>>>(lf, kind.p, W, n, label, flat.p, root.p);
	TG_CUDA_CHECK(cudaGetLastError(), "draining a strip's cells");
	tgk_flat_merge<<<grid_for(n), 256>>>(flat.p, W, nrows, root.p);
	TG_CUDA_CHECK(cudaGetLastError(), "joining a strip's flats");
	tgk_flat_resolve<<<grid_for(n), 256>>>(flat.p, n, root.p);
	TG_CUDA_CHECK(cudaGetLastError(), "labelling a strip's flats");
	tgk_scan_exits<<<grid_for(n), 256>>>(lf, flat.p, W, n, root.p, label);
	TG_CUDA_CHECK(cudaGetLastError(), "finding the flats' exits");
	tgk_scan_join<<<grid_for(n), 256>>>(flat.p, n, root.p, label);
	TG_CUDA_CHECK(cudaGetLastError(), "draining the flats");
	for (bool moved = true; moved;)
	{
		if (tg_canceled(ctx))
			return tg_error_set(err, TG_ECANCELED, "fill canceled");
		TG_CUDA_CHECK(cudaMemsetAsync(flags.p, 0, JUMP_BATCH * sizeof(unsigned)), "clearing flags");
		for (int s = 0; s < JUMP_BATCH; s++)
			tgk_scan_jump<<<grid_for(n), 256>>>(n, label, flags.p + s);
		TG_CUDA_CHECK(cudaGetLastError(), "finding each cell's seed");
		TG_CUDA_CHECK(cudaMemcpy(host, flags.p, sizeof host, cudaMemcpyDeviceToHost), "finding each cell's seed");
		moved = host[JUMP_BATCH - 1] != 0;
	}
	TG_CUDA_CHECK(cudaMemsetAsync(flags.p + JUMP_BATCH, 0, sizeof(unsigned)), "clearing flags");
	tgk_scan_label<<<grid_for(n), 256>>>(kind.p, W, top_base, bottom_base, n, label, flags.p + JUMP_BATCH);
	TG_CUDA_CHECK(cudaGetLastError(), "labelling a strip's cells");
	TG_CUDA_CHECK(cudaMemcpy(host, flags.p + JUMP_BATCH, sizeof(unsigned), cudaMemcpyDeviceToHost),
				  "labelling a strip's cells");
	if (host[0] != 0)
		return tg_error_set(err, TG_EDEVICE, "%u cells of a strip's fill scan reached no seed", host[0]);
	*transfer_ms += up.elapsed();
	return TG_OK;
}

/*
 * The meetings of the labels, a band of rows at a time (as many as `room`
 * meetings hold), each band's sorted by label pair and reduced to the
 * lowest height; appended to the host's lists.
 */
tg_status
scan_meetings(const tg_ctx *ctx, const double *lf, const uint32_t *label, int W, int nrows, size_t room,
			  std::vector<uint64_t> &keys, std::vector<double> &heights, double *transfer_ms, tg_error *err)
{
	dbuf<uint32_t> per_row;
	std::vector<uint32_t> rows((size_t) nrows);
	size_t		most = 0,
				band = 0,
				sort_bytes = 0,
				reduce_bytes = 0;
	dbuf<uint64_t> key[2];
	dbuf<double> height[2];
	dbuf<uint8_t> tmp;
	dbuf<int64_t> runs;

	TG_CUDA_CHECK(per_row.alloc((size_t) nrows), "allocating meeting counts");
	TG_CUDA_CHECK(cudaMemsetAsync(per_row.p, 0, (size_t) nrows * sizeof(uint32_t)), "clearing meeting counts");
	tgk_scan_count<<<grid_for((size_t) W * nrows), 256>>>(lf, label, W, nrows, per_row.p);
	TG_CUDA_CHECK(cudaGetLastError(), "counting the labels' meetings");
	TG_CUDA_CHECK(cudaMemcpy(rows.data(), per_row.p, rows.size() * sizeof(uint32_t), cudaMemcpyDeviceToHost),
				  "counting the labels' meetings");
	for (int y = 0; y < nrows; y++)
	{
		most = std::max(most, (size_t) rows[y]);
		band += rows[y];
	}
	band = std::min(band, std::max(room, most));
	if (band == 0)
		return TG_OK;
	TG_CUDA_CHECK(key[0].alloc(band), "allocating the labels' meetings");
	TG_CUDA_CHECK(key[1].alloc(band), "allocating the labels' meetings");
	TG_CUDA_CHECK(height[0].alloc(band), "allocating the labels' meetings");
	TG_CUDA_CHECK(height[1].alloc(band), "allocating the labels' meetings");
	TG_CUDA_CHECK(runs.alloc(1), "allocating a count");
	{
		cub::DoubleBuffer<uint64_t> k(key[0].p, key[1].p);
		cub::DoubleBuffer<double> h(height[0].p, height[1].p);

		TG_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, k, h, (int64_t) band),
					  "sizing the meetings' sort");
		TG_CUDA_CHECK(cub::DeviceReduce::ReduceByKey(nullptr, reduce_bytes, key[0].p, key[1].p, height[0].p,
													 height[1].p, runs.p, lower_height{}, (int64_t) band),
					  "sizing the meetings' reduction");
	}
	TG_CUDA_CHECK(tmp.alloc(std::max(sort_bytes, reduce_bytes)), "allocating the meetings' scratch");
	for (int y0 = 0; y0 < nrows;)
	{
		int			y1 = y0;
		size_t		m = 0;
		int64_t		found = 0;
		std::vector<uint32_t> offset;

		/* rows while their meetings fit the band; a row's alone always does */
		for (; y1 < nrows && (y1 == y0 || m + rows[y1] <= band); y1++)
		{
			offset.push_back((uint32_t) m);
			m += rows[y1];
		}
		if (m > 0)
		{
			cub::DoubleBuffer<uint64_t> k(key[0].p, key[1].p);
			cub::DoubleBuffer<double> h(height[0].p, height[1].p);
			size_t		bytes = sort_bytes;
			const size_t at = keys.size();

			TG_CUDA_CHECK(cudaMemcpy(per_row.p, offset.data(), offset.size() * sizeof(uint32_t),
									 cudaMemcpyHostToDevice), "placing the labels' meetings");
			tgk_scan_meet<<<grid_for((size_t) W * (y1 - y0)), 256>>>(lf, label, W, nrows, y0, y1, per_row.p,
																	  key[0].p, height[0].p);
			TG_CUDA_CHECK(cudaGetLastError(), "listing the labels' meetings");
			TG_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(tmp.p, bytes, k, h, (int64_t) m),
						  "sorting the labels' meetings");
			bytes = reduce_bytes;
			TG_CUDA_CHECK(cub::DeviceReduce::ReduceByKey(tmp.p, bytes, k.Current(), k.Alternate(), h.Current(),
														 h.Alternate(), runs.p, lower_height{}, (int64_t) m),
						  "reducing the labels' meetings");
			TG_CUDA_CHECK(cudaMemcpy(&found, runs.p, sizeof found, cudaMemcpyDeviceToHost),
						  "reducing the labels' meetings");
			keys.resize(at + (size_t) found);
			heights.resize(at + (size_t) found);
			event_timer down;

			TG_CUDA_CHECK(down.init(), "creating timing events");
			TG_CUDA_CHECK(cudaEventRecord(down.start), "recording an event");
			TG_CUDA_CHECK(tg_cuda_copy_to_host(ctx, keys.data() + at, k.Alternate(), (size_t) found * sizeof(uint64_t)),
						  "copying the labels' meetings back from the GPU");
			TG_CUDA_CHECK(tg_cuda_copy_to_host(ctx, heights.data() + at, h.Alternate(),
											   (size_t) found * sizeof(double)),
						  "copying the labels' meetings back from the GPU");
			TG_CUDA_CHECK(cudaEventRecord(down.stop), "recording an event");
			TG_CUDA_CHECK(cudaEventSynchronize(down.stop), "copying the labels' meetings back from the GPU");
			*transfer_ms += down.elapsed();
		}
		y0 = y1;
		if (tg_canceled(ctx))
			return tg_error_set(err, TG_ECANCELED, "fill canceled");
	}
	return TG_OK;
}

/* Device bytes per own cell: the scan's levels and labels, and its peak beside them (kinds, flats, roots). */
constexpr size_t SCAN_KEPT_BYTES = sizeof(double) + sizeof(uint32_t);
constexpr size_t SCAN_PEAK_BYTES = SCAN_KEPT_BYTES + 1 + 1 + sizeof(uint32_t);
/* A meeting's bytes: key and height, twice for the sort. */
constexpr size_t MEETING_BYTES = 2 * (sizeof(uint64_t) + sizeof(double));

tg_status
fill_scan_impl(const tg_ctx *ctx, const double *z, int W, int count, int y0, int nrows, uint32_t top_base,
			   uint32_t bottom_base, tg_scan_edges *edges, uint32_t *first, uint32_t *last, tg_error *err)
{
	const size_t n = (size_t) W * nrows;
	size_t		budget = 0;
	dbuf<double> lf;
	dbuf<uint32_t> label;
	std::vector<uint64_t> keys;
	std::vector<double> heights;
	event_timer compute,
				down;
	double		transfer_ms = 0;
	int			rounds = 0;
	tg_status	st;

	memset(edges, 0, sizeof *edges);
	if (W < 1 || nrows < 1 || y0 < 0 || y0 > 1 || y0 + nrows > count || count - nrows - y0 > 1 || n >= NO_EXIT)
		return tg_error_set(err, TG_EINVAL, "a strip's fill scan takes its rows with at most one row either side");
	st = tg_cuda_memory_budget(ctx, &budget, err);
	if (st == TG_OK)
		st = tg_cuda_check_budget(ctx, (size_t) W * count * sizeof(double) + n * SCAN_PEAK_BYTES,
								  "a strip's fill scan", err);
	if (st != TG_OK)
		return st;
	TG_CUDA_CHECK(compute.init(), "creating timing events");
	TG_CUDA_CHECK(down.init(), "creating timing events");
	TG_CUDA_CHECK(lf.alloc(n), "allocating a strip's levels");
	TG_CUDA_CHECK(label.alloc(n), "allocating a strip's labels");
	TG_CUDA_CHECK(cudaEventRecord(compute.start), "recording an event");
	st = scan_labels(ctx, z, W, count, y0, nrows, top_base, bottom_base, lf.p, label.p, &transfer_ms, &rounds, err);
	if (st == TG_OK)
		st = scan_meetings(ctx, lf.p, label.p, W, nrows,
						   (budget > n * SCAN_KEPT_BYTES ? budget - n * SCAN_KEPT_BYTES : 0) / MEETING_BYTES / 8 * 7,
						   keys, heights, &transfer_ms, err);
	if (st != TG_OK)
		return st;
	TG_CUDA_CHECK(cudaEventRecord(compute.stop), "recording an event");
	TG_CUDA_CHECK(cudaEventRecord(down.start), "recording an event");
	TG_CUDA_CHECK(tg_cuda_copy_to_host(ctx, first, label.p, (size_t) W * sizeof(uint32_t)),
				  "copying a strip's labels back from the GPU");
	TG_CUDA_CHECK(tg_cuda_copy_to_host(ctx, last, label.p + n - W, (size_t) W * sizeof(uint32_t)),
				  "copying a strip's labels back from the GPU");
	TG_CUDA_CHECK(cudaEventRecord(down.stop), "recording an event");
	TG_CUDA_CHECK(cudaEventSynchronize(down.stop), "scanning a strip");

	edges->a = static_cast<uint32_t *>(tg_alloc(ctx, (keys.size() + 1) * sizeof(uint32_t)));
	edges->b = static_cast<uint32_t *>(tg_alloc(ctx, (keys.size() + 1) * sizeof(uint32_t)));
	edges->height = static_cast<double *>(tg_alloc(ctx, (keys.size() + 1) * sizeof(double)));
	if (edges->a == NULL || edges->b == NULL || edges->height == NULL)
		return tg_cuda_host_oom(err, "a strip's fill scan");
	for (size_t i = 0; i < keys.size(); i++)
	{
		edges->a[i] = (uint32_t) (keys[i] >> 32);
		edges->b[i] = (uint32_t) keys[i];
		edges->height[i] = heights[i];
	}
	edges->n = keys.size();
	charge_device_time(ctx, compute.elapsed() - transfer_ms, transfer_ms + down.elapsed(), rounds);
	return TG_OK;
}
}								/* namespace */

extern "C" tg_status
tg_cuda_fill_scan(const tg_ctx *ctx, const double *z, int W, int count, int y0, int nrows, uint32_t top_base,
				  uint32_t bottom_base, tg_scan_edges *edges, uint32_t *first, uint32_t *last, tg_error *err)
{
	return tg_cuda_catch_all(err, [&] {
		return fill_scan_impl(ctx, z, W, count, y0, nrows, top_base, bottom_base, edges, first, last, err);
	});
}
