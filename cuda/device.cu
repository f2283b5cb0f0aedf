/*
 * device.cu — lazy CUDA start-up, device description, memory budget, errors.
 *
 * CUDA is initialised by the first tg_cuda_probe() in a process, never at
 * library load: PostgreSQL backends are forked from the postmaster and CUDA
 * does not survive fork().  The first probe's outcome is cached; a process
 * forked after a successful probe is refused rather than crashed.
 *
 * Also the pinned staging of host<->device copies (tg_cuda_copy_to_device,
 * tg_cuda_copy_to_host).
 */
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unistd.h>
#include <vector>

#include "tg_cuda_common.cuh"
#include "runtime/runtime.h"

/* Oldest architecture the fat binary carries machine code for (sm_80). */
#define TG_MIN_CC_MAJOR 8

namespace
{
enum probe_state { PROBE_UNKNOWN, PROBE_NONE, PROBE_READY };

#define MAX_DEVICES 64

/* What we keep of cudaDeviceProp: reading it costs about a millisecond. */
struct device_desc
{
	bool		known;
	char		name[256];
	int			major;
	int			minor;
	int			multiprocessors;
	size_t		total_memory;
};

probe_state state = PROBE_UNKNOWN;
pid_t		probe_pid;
int			device_count;
tg_error	none_error;			/* why there is no device, when PROBE_NONE */
device_desc devices[MAX_DEVICES];

void
fail_with_rc(tg_error *err, cudaError_t rc, const char *call)
{
	tg_error_set(err, TG_ENODEVICE, "no usable CUDA device");
	tg_error_detail(err, "%s: %s (%s)", call, cudaGetErrorName(rc),
					cudaGetErrorString(rc));
}

/* The first call in this process: count devices, with the reason if none. */
void
probe_once(void)
{
	cudaError_t rc;

	tg_error_clear(&none_error);
	rc = cudaGetDeviceCount(&device_count);
	if (rc != cudaSuccess)
	{
		(void) cudaGetLastError();
		device_count = 0;
		fail_with_rc(&none_error, rc, "cudaGetDeviceCount");
		state = PROBE_NONE;
		return;
	}
	if (device_count == 0)
	{
		tg_error_set(&none_error, TG_ENODEVICE, "no usable CUDA device");
		tg_error_detail(&none_error, "The CUDA runtime found no device.");
		state = PROBE_NONE;
		return;
	}
	probe_pid = getpid();
	state = PROBE_READY;
}
}								/* namespace */

void
tg_cuda_fail(tg_error *err, cudaError_t rc, const char *what, const char *file,
			 int line)
{
	if (rc == cudaErrorMemoryAllocation)
	{
		tg_error_set(err, TG_ENOMEM, "out of GPU memory while %s", what);
		if (err)
			err->on_device = true;
	}
	else
		tg_error_set(err, TG_EDEVICE, "CUDA error while %s", what);
	tg_error_detail(err, "%s: %s (%s:%d)", cudaGetErrorName(rc),
					cudaGetErrorString(rc), file, line);
}

float
tg_cuda_elapsed_ms(cudaEvent_t from, cudaEvent_t to)
{
	float		ms = 0;

	if (cudaEventElapsedTime(&ms, from, to) != cudaSuccess)
	{
		(void) cudaGetLastError();
		return 0;
	}
	return ms;
}

tg_status
tg_cuda_memory_budget(const tg_ctx *ctx, size_t *budget, tg_error *err)
{
	size_t		free_b = 0;
	size_t		total_b = 0;

	TG_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b), "reading free device memory");
	*budget = free_b / 10 * 9;
	if (ctx->device_memory_limit > 0 && ctx->device_memory_limit < *budget)
		*budget = ctx->device_memory_limit;
	return TG_OK;
}

bool
tg_cuda_fits_budget(const tg_ctx *ctx, size_t need)
{
	size_t		budget = 0;
	tg_error	ignored = {};

	return tg_cuda_memory_budget(ctx, &budget, &ignored) == TG_OK && need <= budget;
}

tg_status
tg_cuda_check_budget(const tg_ctx *ctx, size_t need, const char *what, tg_error *err)
{
	size_t		budget = 0;

	if (tg_cuda_memory_budget(ctx, &budget, err) != TG_OK)
		return err->code;
	if (need <= budget)
		return TG_OK;
	tg_error_set(err, TG_ENOMEM, "%s needs about %zu MB of GPU memory, %zu MB are available",
				 what, need >> 20, budget >> 20);
	err->on_device = true;
	return TG_ENOMEM;
}

/*
 * The stream-ordered pool (tg_cuda_common.cuh's dbuf) would give memory back
 * to the system at every synchronisation; it keeps it instead until the call
 * is over and tg_cuda_release trims it, so a call's later allocations reuse
 * its earlier ones and an idle backend holds no device memory.
 */
static void
keep_pool_during_calls(int device)
{
	cudaMemPool_t pool;
	uint64_t	keep = UINT64_MAX;

	if (cudaDeviceGetDefaultMemPool(&pool, device) != cudaSuccess ||
		cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep) != cudaSuccess)
		(void) cudaGetLastError();
}

/* The current device's pool gives back every byte it holds. */
static void
trim_pool(void)
{
	cudaMemPool_t pool;
	int			device;

	if (cudaGetDevice(&device) != cudaSuccess ||
		cudaDeviceSynchronize() != cudaSuccess ||
		cudaDeviceGetDefaultMemPool(&pool, device) != cudaSuccess ||
		cudaMemPoolTrimTo(pool, 0) != cudaSuccess)
		(void) cudaGetLastError();
}

extern "C" void
tg_cuda_release(void)
{
	(void) tg_cuda_catch_all(nullptr, [] {
		trim_pool();
		return TG_OK;
	});
}

/* The pool's high mark: what dbuf held at most (device memory outside the pool is the CUDA context's). */
extern "C" void
tg_cuda_peak_restart(void)
{
	(void) tg_cuda_catch_all(nullptr, [] {
		cudaMemPool_t pool;
		int			device;
		uint64_t	zero = 0;

		if (cudaGetDevice(&device) != cudaSuccess ||
			cudaDeviceGetDefaultMemPool(&pool, device) != cudaSuccess ||
			cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero) != cudaSuccess)
			(void) cudaGetLastError();
		return TG_OK;
	});
}

extern "C" size_t
tg_cuda_peak_bytes(void)
{
	uint64_t	high = 0;

	(void) tg_cuda_catch_all(nullptr, [&] {
		cudaMemPool_t pool;
		int			device;

		if (cudaGetDevice(&device) != cudaSuccess ||
			cudaDeviceGetDefaultMemPool(&pool, device) != cudaSuccess ||
			cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &high) != cudaSuccess)
		{
			(void) cudaGetLastError();
			high = 0;
		}
		return TG_OK;
	});
	return (size_t) high;
}

static tg_status
probe(int device, tg_device_info *info, tg_error *err)
{
	device_desc *d;
	cudaError_t rc;

	if (state == PROBE_UNKNOWN)
		probe_once();
	if (state == PROBE_NONE)
	{
		if (err)
			*err = none_error;
		return TG_ENODEVICE;
	}
	if (getpid() != probe_pid)
	{
		tg_error_set(err, TG_ENODEVICE, "no usable CUDA device");
		tg_error_detail(err, "CUDA was initialised in a parent process; a forked process cannot use it.");
		return TG_ENODEVICE;
	}
	if (info)
		info->device_count = device_count;
	if (device < 0 || device >= device_count || device >= MAX_DEVICES)
	{
		tg_error_set(err, TG_ENODEVICE, "CUDA device %d does not exist", device);
		tg_error_detail(err, "This process sees %d device%s (0 to %d).", device_count,
						device_count == 1 ? "" : "s", device_count - 1);
		return TG_ENODEVICE;
	}

	d = &devices[device];
	rc = cudaSetDevice(device);
	if (rc == cudaSuccess && !d->known)
	{
		cudaDeviceProp prop;

		rc = cudaGetDeviceProperties(&prop, device);
		if (rc == cudaSuccess)
		{
			snprintf(d->name, sizeof d->name, "%s", prop.name);
			d->major = prop.major;
			d->minor = prop.minor;
			d->multiprocessors = prop.multiProcessorCount;
			d->total_memory = prop.totalGlobalMem;
			d->known = true;
			keep_pool_during_calls(device);
		}
	}
	if (rc != cudaSuccess)
	{
		(void) cudaGetLastError();
		fail_with_rc(err, rc, "cudaSetDevice");
		return TG_ENODEVICE;
	}
	if (d->major < TG_MIN_CC_MAJOR)
	{
		tg_error_set(err, TG_ENODEVICE, "CUDA device %d is too old", device);
		tg_error_detail(err, "%s has compute capability %d.%d; this build needs %d.0 or newer.",
						d->name, d->major, d->minor, TG_MIN_CC_MAJOR);
		return TG_ENODEVICE;
	}

	if (info)
	{
		size_t		free_b = 0;
		size_t		total_b = d->total_memory;

		/* creates the context: the first call in a backend takes a while */
		if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess)
			(void) cudaGetLastError();
		info->available = true;
		info->device = device;
		snprintf(info->name, sizeof info->name, "%s", d->name);
		info->cc_major = d->major;
		info->cc_minor = d->minor;
		info->total_memory = total_b;
		info->free_memory = free_b;
		info->multiprocessors = d->multiprocessors;
		cudaDriverGetVersion(&info->driver_version);
		cudaRuntimeGetVersion(&info->runtime_version);
	}
	return TG_OK;
}

static void stage_at_start(void);

extern "C" tg_status
tg_cuda_probe(int device, tg_device_info *info, tg_error *err)
{
	return tg_cuda_catch_all(err, [&] {
		tg_status	st = probe(device, info, err);

		if (st == TG_OK)
			stage_at_start();
		return st;
	});
}

/* ------------------------------------------------------------------------
 * Staged copies
 *
 * Pageable memory crosses PCIe at a fraction of pinned memory's rate, and
 * pinning the caller's arrays would cost more than it saves.  So copies go
 * through a ring of pinned slots: the host fills (or empties) one slot on the
 * call's threads while the DMA of the others runs on a stream of the copy's
 * own.  The slots (one block) are allocated by the first staged copy after a
 * successful probe, and kept for the life of the process: freeing them at
 * exit could call into a CUDA runtime already torn down.  Products streamed
 * to a sink use the block as two halves where a row of tiles fits one, else
 * staging of the call's own (tg_cuda_stream_rows).
 * ------------------------------------------------------------------------ */
namespace
{
constexpr int STAGE_SLOTS = 4;
constexpr size_t STAGE_SLOT_BYTES = (size_t) 16 << 20;
constexpr size_t STAGE_MIN_BYTES = (size_t) 1 << 20;	/* smaller copies go direct */

enum stage_state { STAGE_UNTRIED, STAGE_READY, STAGE_NONE };

stage_state stage = STAGE_UNTRIED;
void	   *stage_block;			/* the slots, one after the other */
void	   *stage_slot[STAGE_SLOTS];
std::mutex	stage_lock;			/* one staged copy at a time in a process */

/* The pinned slots, allocated on first use; false: copy directly. */
bool
staging_ready(void)
{
	/* never before a successful probe, never in a process forked after one */
	if (state != PROBE_READY || getpid() != probe_pid)
		return false;
	if (stage == STAGE_UNTRIED)
	{
		stage = STAGE_NONE;		/* one try: a failure is not retried call after call */
		if (cudaHostAlloc(&stage_block, STAGE_SLOTS * STAGE_SLOT_BYTES, cudaHostAllocPortable) != cudaSuccess)
		{
			(void) cudaGetLastError();
			stage_block = nullptr;
			return false;
		}
		for (int s = 0; s < STAGE_SLOTS; s++)
			stage_slot[s] = (uint8_t *) stage_block + s * STAGE_SLOT_BYTES;
		stage = STAGE_READY;
	}
	return stage == STAGE_READY;
}
}								/* namespace */

/*
 * Pinning the slots takes tens of milliseconds: done when the process's GPU
 * starts, as CUDA's own start is, rather than in its first copy.
 */
static void
stage_at_start(void)
{
	std::lock_guard<std::mutex> hold(stage_lock);

	(void) staging_ready();
}

namespace
{
/*
 * One staged copy's stream and events, on the current device.  The stream
 * is non-blocking, so start() orders it explicitly after the work queued on
 * the legacy default stream (the kernels that wrote the source, the pool
 * allocation of the destination).  The stream is declared last: it is
 * synchronised and destroyed first, so no DMA into or out of a slot outlives
 * the copy, whatever path it returns by.
 */
struct staged_copy
{
	cuda_event	queued_before;
	cuda_event	slot_done[STAGE_SLOTS];	/* the DMA of the slot's latest chunk is over */
	cuda_stream stream;

	cudaError_t start()
	{
		cudaError_t rc = stream.create(cudaStreamNonBlocking);

		if (rc == cudaSuccess)
			rc = queued_before.create(cudaEventDisableTiming);
		for (int s = 0; s < STAGE_SLOTS && rc == cudaSuccess; s++)
			rc = slot_done[s].create(cudaEventDisableTiming);
		if (rc == cudaSuccess)
			rc = cudaEventRecord(queued_before, cudaStreamLegacy);
		if (rc == cudaSuccess)
			rc = cudaStreamWaitEvent(stream, queued_before, 0);
		return rc;
	}
};

/* Queue chunk k of a device-to-host copy into its slot. */
cudaError_t
fetch_chunk(staged_copy &c, const void *src, size_t bytes, size_t k)
{
	const int	s = (int) (k % STAGE_SLOTS);
	const size_t off = k * STAGE_SLOT_BYTES;
	cudaError_t rc = cudaMemcpyAsync(stage_slot[s], (const uint8_t *) src + off,
									 std::min(STAGE_SLOT_BYTES, bytes - off),
									 cudaMemcpyDeviceToHost, c.stream);

	return rc == cudaSuccess ? cudaEventRecord(c.slot_done[s], c.stream) : rc;
}
}								/* namespace */

cudaError_t
tg_cuda_copy_to_device(const tg_ctx *ctx, void *dst, const void *src, size_t bytes)
{
	if (bytes < STAGE_MIN_BYTES)
		return cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);

	std::lock_guard<std::mutex> hold(stage_lock);

	if (!staging_ready())
		return cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);

	staged_copy c;
	cudaError_t rc = c.start();

	/* the host fills a slot while the chunks of the other slots are in flight */
	for (size_t k = 0, off = 0; rc == cudaSuccess && off < bytes; k++, off += STAGE_SLOT_BYTES)
	{
		const int	s = (int) (k % STAGE_SLOTS);
		const size_t len = std::min(STAGE_SLOT_BYTES, bytes - off);

		if (k >= STAGE_SLOTS)
			rc = cudaEventSynchronize(c.slot_done[s]);	/* the slot's last chunk has left */
		if (rc != cudaSuccess)
			break;
		tg_parallel_memcpy(ctx, stage_slot[s], (const uint8_t *) src + off, len);
		rc = cudaMemcpyAsync((uint8_t *) dst + off, stage_slot[s], len, cudaMemcpyHostToDevice,
							 c.stream);
		if (rc == cudaSuccess)
			rc = cudaEventRecord(c.slot_done[s], c.stream);
	}
	/* as with cudaMemcpy, the bytes are on the device when this returns */
	if (rc == cudaSuccess)
		rc = cudaStreamSynchronize(c.stream);
	return rc;
}

cudaError_t
tg_cuda_copy_to_host(const tg_ctx *ctx, void *dst, const void *src, size_t bytes)
{
	if (bytes < STAGE_MIN_BYTES)
		return cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);

	std::lock_guard<std::mutex> hold(stage_lock);

	if (!staging_ready())
		return cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);

	staged_copy c;
	cudaError_t rc = c.start();
	const size_t chunks = (bytes + STAGE_SLOT_BYTES - 1) / STAGE_SLOT_BYTES;

	/* every slot's chunk is queued ahead; the host empties one while the next arrive */
	for (size_t k = 0; rc == cudaSuccess && k < chunks && k < STAGE_SLOTS; k++)
		rc = fetch_chunk(c, src, bytes, k);
	for (size_t k = 0; rc == cudaSuccess && k < chunks; k++)
	{
		const int	s = (int) (k % STAGE_SLOTS);
		const size_t off = k * STAGE_SLOT_BYTES;

		rc = cudaEventSynchronize(c.slot_done[s]);
		if (rc != cudaSuccess)
			break;
		tg_parallel_memcpy(ctx, (uint8_t *) dst + off, stage_slot[s],
						   std::min(STAGE_SLOT_BYTES, bytes - off));
		if (k + STAGE_SLOTS < chunks)
			rc = fetch_chunk(c, src, bytes, k + STAGE_SLOTS);
	}
	return rc;
}

/* 0: a slice of streamed products has half the staging block (the tests set less) */
size_t		tg_stream_slice_bytes = 0;

/*
 * Products streamed to a sink band by band: each band of rows comes back
 * into one half of the staging while the sink reads the band before it from
 * the other.  The staging is the shared block where a band of one row of
 * tiles fits its half; a wider grid has pinned staging of its own for the
 * call, two such bands, freed when the call ends.
 */
namespace
{
constexpr size_t STREAM_ROOM = STAGE_SLOTS * STAGE_SLOT_BYTES / 2;

size_t
plane_room(size_t bytes)
{
	return (bytes + 63) & ~(size_t) 63;
}

/* The room of a band in the shared block: a half, or less for the tests. */
size_t
shared_room(void)
{
	return tg_stream_slice_bytes > 0 && tg_stream_slice_bytes < STREAM_ROOM ? tg_stream_slice_bytes : STREAM_ROOM;
}

/* The bytes nrows rows of every plane take in a half, each plane aligned. */
size_t
band_bytes(const size_t elem[TG_SINK_PLANES], int width, int nrows)
{
	size_t		total = 0;

	for (int k = 0; k < TG_SINK_PLANES; k++)
		total += plane_room(elem[k] * width * (size_t) nrows);
	return total;
}

/* The bytes of the largest band between two cuts next to each other: one row of tiles. */
size_t
widest_band(const tg_rows_sink *sink, const size_t elem[TG_SINK_PLANES], int width)
{
	size_t		most = 0;

	for (int c = 1; c < sink->ncuts; c++)
		most = std::max(most, band_bytes(elem, width, sink->cuts[c] - sink->cuts[c - 1]));
	return most;
}

/* The band from `start`: up to the furthest cut whose rows fit `room` (at least the next cut). */
int
band_end(const tg_rows_sink *sink, const size_t elem[TG_SINK_PLANES], int width, int start, size_t room)
{
	int			end = start;

	for (int c = 0; c < sink->ncuts; c++)
		if (sink->cuts[c] > start)
		{
			if (end > start && band_bytes(elem, width, sink->cuts[c] - start) > room)
				break;
			end = sink->cuts[c];
		}
	return end;
}

struct streamed_half
{
	int			row0 = 0,
				nrows = 0;		/* 0: nothing queued */
	cuda_event	start,
				stop;			/* timing the half's DMA */
};

tg_status
stream_bands(const tg_ctx *ctx, const void *const dev[TG_SINK_PLANES], const size_t elem[TG_SINK_PLANES],
			 int width, int height, tg_rows_sink *sink, uint8_t *staging, size_t room, double *dma_ms,
			 tg_error *err)
{
	cuda_event	queued_before;
	streamed_half half[2];
	cuda_stream stream;			/* last: synchronised before the halves' events go */
	int			next = 0;

	TG_CUDA_CHECK(stream.create(cudaStreamNonBlocking), "creating a copy stream");
	TG_CUDA_CHECK(queued_before.create(cudaEventDisableTiming), "creating an event");
	for (int h = 0; h < 2; h++)
	{
		TG_CUDA_CHECK(half[h].start.create(), "creating an event");
		TG_CUDA_CHECK(half[h].stop.create(), "creating an event");
	}
	/* after the kernels that wrote the planes, on the legacy stream */
	TG_CUDA_CHECK(cudaEventRecord(queued_before, cudaStreamLegacy), "recording an event");
	TG_CUDA_CHECK(cudaStreamWaitEvent(stream, queued_before, 0), "ordering the copies");

	auto		queue = [&](int h) -> cudaError_t {
		uint8_t    *slot = staging + h * room;
		const int	end = band_end(sink, elem, width, next, room);
		cudaError_t rc = cudaEventRecord(half[h].start, stream);

		for (int k = 0; k < TG_SINK_PLANES && rc == cudaSuccess; k++)
			if (dev[k])
			{
				const size_t bytes = elem[k] * width * (size_t) (end - next);

				rc = cudaMemcpyAsync(slot, (const uint8_t *) dev[k] + elem[k] * width * (size_t) next, bytes,
									 cudaMemcpyDeviceToHost, stream);
				slot += plane_room(bytes);
			}
		if (rc == cudaSuccess)
			rc = cudaEventRecord(half[h].stop, stream);
		half[h].row0 = next;
		half[h].nrows = end - next;
		next = end;
		return rc;
	};

	for (int h = 0; h < 2 && next < height; h++)
		TG_CUDA_CHECK(queue(h), "copying products back from the GPU");
	for (int k = 0; half[k % 2].nrows > 0; k++)
	{
		streamed_half &b = half[k % 2];
		uint8_t    *slot = staging + (k % 2) * room;
		void	   *planes[TG_SINK_PLANES];
		tg_status	st;

		TG_CUDA_CHECK(cudaEventSynchronize(b.stop), "copying products back from the GPU");
		*dma_ms += tg_cuda_elapsed_ms(b.start, b.stop);
		for (int p = 0; p < TG_SINK_PLANES; p++)
		{
			planes[p] = dev[p] ? slot : nullptr;
			if (dev[p])
				slot += plane_room(elem[p] * width * (size_t) b.nrows);
		}
		sink->used = true;
		st = sink->rows(ctx, sink->arg, b.row0, b.nrows, planes, err);
		if (st != TG_OK)
			return st;
		b.nrows = 0;
		if (next < height)
			TG_CUDA_CHECK(queue(k % 2), "copying products back from the GPU");
	}
	return TG_OK;
}
}								/* namespace */

tg_status
tg_cuda_stream_rows(const tg_ctx *ctx, const void *const dev[TG_SINK_PLANES], const size_t elem[TG_SINK_PLANES],
					int width, int height, tg_rows_sink *sink, double *dma_ms, tg_error *err)
{
	std::lock_guard<std::mutex> hold(stage_lock);
	const size_t band = widest_band(sink, elem, width);
	pinned_buf<uint8_t> own;	/* staging of the call's own, freed on every path */
	uint8_t    *staging = (uint8_t *) stage_block;
	size_t		room = shared_room();
	tg_status	st;

	/* no cuts down to the height, or no pinned memory: the caller copies the products whole */
	if (!staging_ready() || sink->ncuts < 2 || sink->cuts[0] != 0 || sink->cuts[sink->ncuts - 1] != height)
		return TG_OK;
	if (band > room)
	{
		if (own.alloc(2 * band) != cudaSuccess)
		{
			(void) cudaGetLastError();
			own.p = nullptr;
			return TG_OK;
		}
		staging = own.p;
		room = band;
	}
	st = stream_bands(ctx, dev, elem, width, height, sink, staging, room, dma_ms, err);
	/* what the sink took is not undone: no other backend may start over */
	if (st != TG_OK && sink->used && err)
		err->on_device = false;
	return st;
}

/* ------------------------------------------------------------------------
 * The copies' floor, for the benchmarks: DMA from and to pinned memory
 * against the staged copies of pageable memory.
 * ------------------------------------------------------------------------ */
namespace
{
/* Best of reps: GB/s of one copy of `bytes`. */
template <typename F>
cudaError_t
best_rate(size_t bytes, int reps, double *gbs, F copy)
{
	*gbs = 0;
	for (int r = 0; r < reps; r++)
	{
		double		t0 = tg_clock_ms();
		cudaError_t rc = copy();

		if (rc == cudaSuccess)
			rc = cudaDeviceSynchronize();
		if (rc != cudaSuccess)
			return rc;
		*gbs = std::max(*gbs, bytes / ((tg_clock_ms() - t0) * 1e6));
	}
	return cudaSuccess;
}

tg_status
measure_copy_rates(const tg_ctx *ctx, size_t bytes, tg_copy_rates *out, tg_error *err)
{
	const int	reps = 3;
	dbuf<uint8_t> dev;
	uint8_t    *pinned = nullptr;
	std::vector<uint8_t *> pageable;
	tg_status	st = TG_OK;
	cudaError_t rc;

	memset(out, 0, sizeof *out);
	TG_CUDA_CHECK(dev.alloc(bytes), "allocating device memory");
	TG_CUDA_CHECK(cudaMemset(dev.p, 1, bytes), "clearing device memory");
	TG_CUDA_CHECK(cudaHostAlloc((void **) &pinned, bytes, cudaHostAllocDefault), "allocating pinned memory");
	/*
	 * one touched buffer, then fresh ones for the staged copies into untouched
	 * pages: as a grid's planes come (tg_alloc: huge pages advised), and plain
	 */
	for (int i = 0; i < 1 + 2 * reps && st == TG_OK; i++)
	{
		uint8_t    *p = (uint8_t *) (i <= reps ? tg_alloc(ctx, bytes) : malloc(bytes));

		if (p == nullptr)
			st = tg_error_set(err, TG_ENOMEM, "could not allocate %zu bytes", bytes);
		else
			pageable.push_back(p);
	}
	if (st == TG_OK)
	{
		uint8_t    *touched = pageable[0];
		int			fresh = 1;

		memset(touched, 2, bytes);
		memset(pinned, 3, bytes);
		rc = best_rate(bytes, reps, &out->pinned_up_gbs,
					   [&] { return cudaMemcpy(dev.p, pinned, bytes, cudaMemcpyHostToDevice); });
		if (rc == cudaSuccess)
			rc = best_rate(bytes, reps, &out->pinned_down_gbs,
						   [&] { return cudaMemcpy(pinned, dev.p, bytes, cudaMemcpyDeviceToHost); });
		if (rc == cudaSuccess)
			rc = best_rate(bytes, reps, &out->staged_up_gbs,
						   [&] { return tg_cuda_copy_to_device(ctx, dev.p, touched, bytes); });
		if (rc == cudaSuccess)
			rc = best_rate(bytes, reps, &out->staged_down_gbs,
						   [&] { return tg_cuda_copy_to_host(ctx, touched, dev.p, bytes); });
		if (rc == cudaSuccess)
			rc = best_rate(bytes, reps, &out->staged_down_fresh_gbs,
						   [&] { return tg_cuda_copy_to_host(ctx, pageable[fresh++], dev.p, bytes); });
		if (rc == cudaSuccess)
			rc = best_rate(bytes, reps, &out->staged_down_fresh_small_gbs,
						   [&] { return tg_cuda_copy_to_host(ctx, pageable[fresh++], dev.p, bytes); });
		if (rc == cudaSuccess)
			rc = best_rate(bytes, reps, &out->host_memcpy_gbs, [&] {
				tg_parallel_memcpy(ctx, touched, pinned, bytes);
				return cudaSuccess;
			});
		if (rc != cudaSuccess)
		{
			tg_cuda_fail(err, rc, "measuring copies", __FILE__, __LINE__);
			st = err->code;
		}
	}
	for (size_t i = 0; i < pageable.size(); i++)
		if ((int) i <= reps)
			tg_free(ctx, pageable[i]);
		else
			free(pageable[i]);
	cudaFreeHost(pinned);
	return st;
}
}								/* namespace */

extern "C" tg_status
tg_cuda_copy_rates(const tg_ctx *ctx, size_t bytes, tg_copy_rates *rates, tg_error *err)
{
	return tg_cuda_catch_all(err, [&] {
		return measure_copy_rates(ctx, bytes, rates, err);
	});
}
