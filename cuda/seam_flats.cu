/*
 * seam_flats.cu — the first walk of the flats across seams
 * (scale/seams/flat_seams.c) on the GPU.
 *
 * The crossing cells are kept compact, each with the bits of its neighbours
 * on its flat; both breadth-first distances start at 1 on their seeds.  A
 * level's cells take every neighbour still at TG_FLAT_FAR to the next level
 * with one compare-and-swap, which lists it in the next front: a cell's
 * first distance is its last, so each cell is listed once and the result is
 * the CPU's, whatever the order within a level.
 */
#include "hydro.cuh"

namespace
{
/* Levels walked between checks for a cancel and reports of progress. */
constexpr int32_t LEVELS_PER_CHECK = 64;

struct seeded
{
	const int32_t *d;

	__device__ bool operator()(uint32_t i) const
	{
		return d[i] == 1;
	}
};

__global__ void
tgk_walk_level(const uint8_t *__restrict__ nbr, const uint32_t *__restrict__ up, const uint32_t *__restrict__ down,
			   int32_t *d, int32_t level, const uint32_t *__restrict__ front, uint32_t nfront,
			   uint32_t *__restrict__ next, uint32_t *nnext)
{
	TG_GRID_STRIDE(k, (size_t) nfront)
	{
		uint32_t	nb[8];
		const int	count = tg_crossing_neighbours(nbr, up, down, front[k], nb);

		for (int q = 0; q < count; q++)
			if (atomicCAS(&d[nb[q]], TG_FLAT_FAR, level + 1) == TG_FLAT_FAR)
				next[atomicAdd(nnext, 1u)] = nb[q];
	}
}

/* One distance walked in place on the device (d: n cells there). */
tg_status
walk_distance(const tg_ctx *ctx, size_t n, const uint8_t *nbr, const uint32_t *up, const uint32_t *down, int32_t *d,
			  int p, uint32_t *front, uint32_t *next, uint32_t *count, tg_error *err)
{
	uint32_t	nfront = 0;
	tg_status	st = select_cells(thrust::make_transform_iterator(thrust::counting_iterator<uint32_t>(0), seeded{d}),
								  n, front, count, err);

	if (st != TG_OK)
		return st;
	TG_CUDA_CHECK(cudaMemcpy(&nfront, count, sizeof nfront, cudaMemcpyDeviceToHost), "listing the flats' seeds");
	for (int32_t level = 1; nfront > 0; level++)
	{
		TG_CUDA_CHECK(cudaMemsetAsync(count, 0, sizeof(uint32_t)), "clearing a count");
		tgk_walk_level<<<grid_for(nfront), 256>>>(nbr, up, down, d, level, front, nfront, next, count);
		TG_CUDA_CHECK(cudaGetLastError(), "walking the flats across seams");
		TG_CUDA_CHECK(cudaMemcpy(&nfront, count, sizeof nfront, cudaMemcpyDeviceToHost),
					  "walking the flats across seams");
		std::swap(front, next);
		if (level % LEVELS_PER_CHECK == 0)
		{
			if (tg_canceled(ctx))
				return tg_error_set(err, TG_ECANCELED, "flow routing canceled");
			tg_phase_progress(ctx, (p + (double) level / (level + LEVELS_PER_CHECK)) / 2);
		}
	}
	return TG_OK;
}

tg_status
walk_impl(const tg_ctx *ctx, size_t n, const uint8_t *nbr, const uint32_t *up, const uint32_t *down, int32_t *d0,
		  int32_t *d1, tg_error *err)
{
	int32_t    *host_d[2] = {d0, d1};
	dbuf<uint8_t> d_nbr;
	dbuf<uint32_t> d_up,
				d_down,
				front,
				next,
				count;
	dbuf<int32_t> d;
	event_timer up_t,
				compute,
				down_t;
	double		links_ms,
				copies_ms = 0;		/* the distances' copies, within the compute events */
	tg_status	st;

	if (n == 0)
		return TG_OK;
	if (n >= UINT32_MAX)
		return tg_error_set(err, TG_ELIMIT, "%zu cells of flats across seams are too many for the GPU's walk", n);
	/* links, one distance, two fronts */
	st = tg_cuda_check_budget(ctx, n * (1 + 4 + 4 + 4 + 4 + 4), "the walk of flats across seams", err);
	if (st != TG_OK)
		return st;
	TG_CUDA_CHECK(up_t.init(), "creating timing events");
	TG_CUDA_CHECK(compute.init(), "creating timing events");
	TG_CUDA_CHECK(down_t.init(), "creating timing events");
	TG_CUDA_CHECK(d_nbr.alloc(n), "allocating the flats' links");
	TG_CUDA_CHECK(d_up.alloc(n), "allocating the flats' links");
	TG_CUDA_CHECK(d_down.alloc(n), "allocating the flats' links");
	TG_CUDA_CHECK(d.alloc(n), "allocating the flats' distances");
	TG_CUDA_CHECK(front.alloc(n), "allocating the walk's fronts");
	TG_CUDA_CHECK(next.alloc(n), "allocating the walk's fronts");
	TG_CUDA_CHECK(count.alloc(1), "allocating a count");
	TG_CUDA_CHECK(cudaEventRecord(up_t.start), "recording an event");
	TG_CUDA_CHECK(tg_cuda_copy_to_device(ctx, d_nbr.p, nbr, n), "copying the flats' links to the GPU");
	TG_CUDA_CHECK(tg_cuda_copy_to_device(ctx, d_up.p, up, n * sizeof(uint32_t)), "copying the flats' links to the GPU");
	TG_CUDA_CHECK(tg_cuda_copy_to_device(ctx, d_down.p, down, n * sizeof(uint32_t)),
				  "copying the flats' links to the GPU");
	TG_CUDA_CHECK(cudaEventRecord(up_t.stop), "recording an event");
	TG_CUDA_CHECK(cudaEventSynchronize(up_t.stop), "copying the flats' links to the GPU");
	links_ms = up_t.elapsed();
	TG_CUDA_CHECK(cudaEventRecord(compute.start), "recording an event");
	for (int p = 0; p < 2; p++)
	{
		TG_CUDA_CHECK(cudaEventRecord(up_t.start), "recording an event");
		TG_CUDA_CHECK(tg_cuda_copy_to_device(ctx, d.p, host_d[p], n * sizeof(int32_t)),
					  "copying the flats' distances to the GPU");
		TG_CUDA_CHECK(cudaEventRecord(up_t.stop), "recording an event");
		st = walk_distance(ctx, n, d_nbr.p, d_up.p, d_down.p, d.p, p, front.p, next.p, count.p, err);
		if (st != TG_OK)
			return st;
		TG_CUDA_CHECK(cudaEventRecord(down_t.start), "recording an event");
		TG_CUDA_CHECK(tg_cuda_copy_to_host(ctx, host_d[p], d.p, n * sizeof(int32_t)),
					  "copying the flats' distances back from the GPU");
		TG_CUDA_CHECK(cudaEventRecord(down_t.stop), "recording an event");
		TG_CUDA_CHECK(cudaEventSynchronize(down_t.stop), "walking the flats across seams");
		copies_ms += up_t.elapsed() + down_t.elapsed();
	}
	TG_CUDA_CHECK(cudaEventRecord(compute.stop), "recording an event");
	TG_CUDA_CHECK(cudaEventSynchronize(compute.stop), "walking the flats across seams");
	charge_device_time(ctx, compute.elapsed() - copies_ms, links_ms + copies_ms);
	return TG_OK;
}
}								/* namespace */

extern "C" tg_status
tg_cuda_seam_flats_walk(const tg_ctx *ctx, size_t n, const uint8_t *nbr, const uint32_t *up, const uint32_t *down,
						int32_t *d0, int32_t *d1, tg_error *err)
{
	return tg_cuda_catch_all(err, [&] {
		return walk_impl(ctx, n, nbr, up, down, d0, d1, err);
	});
}
