/*
 * tg_cuda_common.cuh — helpers shared by the .cu files (never seen by C code).
 */
#ifndef TG_CUDA_COMMON_CUH
#define TG_CUDA_COMMON_CUH

#include <cstdint>
#include <exception>
#include <new>
#include <type_traits>

#include <cuda_runtime.h>

#include "dispatch/dispatch.h"

/*
 * Record a failed CUDA call in err and return its status from the calling
 * function; buffers and events are RAII types below, so they free themselves.
 * The sticky error is cleared so the next call in this process starts clean.
 * Allocation failures become TG_ENOMEM on the device, the rest TG_EDEVICE.
 * After a kernel launch, check cudaGetLastError(): launch-configuration
 * errors surface there.
 */
#define TG_CUDA_CHECK(call, what)										\
	do {																\
		cudaError_t tg_rc_ = (call);									\
		if (tg_rc_ != cudaSuccess) {									\
			(void) cudaGetLastError();									\
			tg_cuda_fail(err, tg_rc_, (what), __FILE__, __LINE__);		\
			return err->code;											\
		}																\
	} while (0)

void		tg_cuda_fail(tg_error *err, cudaError_t rc, const char *what,
						 const char *file, int line);

/*
 * Device bytes this call may use: the smaller of the per-backend cap
 * (ctx->device_memory_limit, 0 = none) and 90 % of what is free now.
 */
tg_status	tg_cuda_memory_budget(const tg_ctx *ctx, size_t *budget, tg_error *err);
/* TG_ENOMEM (on the device) when `need` bytes exceed that budget. */
tg_status	tg_cuda_check_budget(const tg_ctx *ctx, size_t need, const char *what, tg_error *err);
/* Whether `need` bytes fit that budget now: a question for a choice, not a check (no error). */
bool		tg_cuda_fits_budget(const tg_ctx *ctx, size_t need);

/* Accumulate event-timed milliseconds into the run statistics. */
float		tg_cuda_elapsed_ms(cudaEvent_t from, cudaEvent_t to);

/*
 * Copies of grid-sized data between pageable host memory and the device,
 * staged through a small ring of pinned buffers (device.cu): the call's
 * threads copy one chunk between the caller's memory and a pinned slot
 * (tg_parallel_memcpy) while the DMA of the chunks before or after it runs.
 * They come after the work already queued on the legacy default stream and
 * return once the bytes are in place, as cudaMemcpy does, so the events
 * callers record on the legacy stream before and after them time the whole
 * staged copy, host memcpy included: that is what ctx->stats->transfer_ms
 * receives.  Copies under a megabyte, and every copy where pinned memory
 * cannot be had, are a plain cudaMemcpy.
 */
cudaError_t tg_cuda_copy_to_device(const tg_ctx *ctx, void *dst, const void *src, size_t bytes);
cudaError_t tg_cuda_copy_to_host(const tg_ctx *ctx, void *dst, const void *src, size_t bytes);

/*
 * Device planes of width * height cells (elem[k] bytes each; dev[k] NULL
 * and elem[k] 0: none) handed to sink in bands of its cuts, each band copied
 * into pinned staging while the sink reads the one before (tg_rows_sink):
 * the shared block where a row of tiles fits its half, else staging of the
 * call's own for two rows of tiles.  sink->used stays false where the cuts
 * do not run from 0 to the height or no pinned memory could be had: nothing
 * was done, copy the planes whole.  *dma_ms: the device time of the copies
 * alone.
 */
tg_status	tg_cuda_stream_rows(const tg_ctx *ctx, const void *const dev[TG_SINK_PLANES],
								const size_t elem[TG_SINK_PLANES], int width, int height,
								tg_rows_sink *sink, double *dma_ms, tg_error *err);

/*
 * A device array that frees itself; nothing in here throws.  It comes from
 * the device's stream-ordered pool, in the order of the legacy default
 * stream: neither allocating nor freeing waits for the device, and a call
 * that frees and allocates again reuses the pool's memory (device.cu keeps
 * the pool during a call and gives it back after, tg_cuda_release).  Work on
 * other streams must be finished before its buffers are freed.
 */
template <typename T>
struct dbuf
{
	T		   *p = nullptr;
	size_t		n = 0;

	dbuf() = default;
	dbuf(const dbuf &) = delete;
	dbuf &operator=(const dbuf &) = delete;
	~dbuf()
	{
		if (p)
			cudaFreeAsync(p, 0);
	}
	cudaError_t alloc(size_t count)
	{
		n = count;
		return cudaMallocAsync((void **) &p, (count ? count : 1) * sizeof(T), 0);
	}
};

/* A step's device time (and relaxation rounds) added to the call's statistics, where it keeps them. */
static inline void
charge_device_time(const tg_ctx *ctx, double kernel_ms, double transfer_ms, int rounds = 0)
{
	if (ctx->stats)
	{
		ctx->stats->kernel_ms += kernel_ms;
		ctx->stats->transfer_ms += transfer_ms;
		ctx->stats->chunks += rounds;
	}
}

/* Events around device work, summed into the run statistics. */
struct event_timer
{
	cudaEvent_t start = nullptr,
				stop = nullptr;

	~event_timer()
	{
		if (start)
			cudaEventDestroy(start);
		if (stop)
			cudaEventDestroy(stop);
	}
	cudaError_t init()
	{
		cudaError_t rc = cudaEventCreate(&start);

		return rc == cudaSuccess ? cudaEventCreate(&stop) : rc;
	}
	/* milliseconds between the two records (after they completed) */
	float elapsed() const
	{
		return tg_cuda_elapsed_ms(start, stop);
	}
};

/* An event destroyed with its holder; it converts to the handle it holds. */
struct cuda_event
{
	cudaEvent_t e = nullptr;

	cuda_event() = default;
	cuda_event(const cuda_event &) = delete;
	cuda_event &operator=(const cuda_event &) = delete;
	~cuda_event()
	{
		if (e)
			cudaEventDestroy(e);
	}
	cudaError_t create(unsigned flags = cudaEventDefault)
	{
		return cudaEventCreateWithFlags(&e, flags);
	}
	operator cudaEvent_t() const
	{
		return e;
	}
};

/*
 * A stream of its own.  Destroying it first waits for the work queued on it,
 * so declared after the buffers that work uses, it goes before they do.
 */
struct cuda_stream
{
	cudaStream_t s = nullptr;

	cuda_stream() = default;
	cuda_stream(const cuda_stream &) = delete;
	cuda_stream &operator=(const cuda_stream &) = delete;
	~cuda_stream()
	{
		if (s)
		{
			cudaStreamSynchronize(s);
			cudaStreamDestroy(s);
		}
	}
	cudaError_t create(unsigned flags)
	{
		return cudaStreamCreateWithFlags(&s, flags);
	}
	operator cudaStream_t() const
	{
		return s;
	}
};

/*
 * Page-locked host memory (cudaMallocHost) that frees itself, for copies
 * that overlap other work.  The copies using it must be over before it is
 * destroyed (declare the stream that runs them after it).
 */
template <typename T>
struct pinned_buf
{
	T		   *p = nullptr;
	size_t		n = 0;

	pinned_buf() = default;
	pinned_buf(const pinned_buf &) = delete;
	pinned_buf &operator=(const pinned_buf &) = delete;
	~pinned_buf()
	{
		if (p)
			cudaFreeHost(p);
	}
	cudaError_t alloc(size_t count)
	{
		n = count;
		return cudaMallocHost((void **) &p, (count ? count : 1) * sizeof(T));
	}
	T &operator[](size_t i)
	{
		return p[i];
	}
	const T &operator[](size_t i) const
	{
		return p[i];
	}
};

/*
 * Host scratch from the call's allocator (tg_alloc: palloc without OOM
 * errors in a backend), freed with tg_free.  alloc returns false when there
 * is no memory; nothing throws.  Plain data only: nothing is constructed.
 */
template <typename T>
struct hbuf
{
	static_assert(std::is_trivially_copyable<T>::value && std::is_trivially_destructible<T>::value,
				  "hbuf holds plain data");

	const tg_ctx *ctx;
	T		   *p = nullptr;
	size_t		n = 0;

	explicit hbuf(const tg_ctx *owner) : ctx(owner) {}
	hbuf(const hbuf &) = delete;
	hbuf &operator=(const hbuf &) = delete;
	~hbuf()
	{
		tg_free(ctx, p);
	}
	bool alloc(size_t count)
	{
		tg_free(ctx, p);
		p = nullptr;
		n = 0;
		if (count > SIZE_MAX / sizeof(T))
			return false;
		p = static_cast<T *>(tg_alloc(ctx, (count ? count : 1) * sizeof(T)));
		if (p)
			n = count;
		return p != nullptr;
	}
	T &operator[](size_t i)
	{
		return p[i];
	}
	const T &operator[](size_t i) const
	{
		return p[i];
	}
};

/* A host allocation failed: TG_ENOMEM in host memory (on_device stays false). */
static inline tg_status
tg_cuda_host_oom(tg_error *err, const char *what)
{
	tg_error_set(err, TG_ENOMEM, "out of memory for %s", what);
	return err->code;
}

/*
 * The body of every extern "C" entry point runs inside this, so that no C++
 * exception reaches the C caller: std::bad_alloc becomes TG_ENOMEM in host
 * memory, anything else TG_EDEVICE.  An error recorded before the throw
 * stays (the first one wins).  err may be NULL.
 */
template <typename Body>
tg_status
tg_cuda_catch_all(tg_error *err, Body &&body) noexcept
{
	try
	{
		return body();
	}
	catch (const std::bad_alloc &)
	{
		if (err && err->code == TG_OK)
		{
			tg_error_set(err, TG_ENOMEM, "out of memory in the CUDA backend");
			err->on_device = false;
		}
		return err ? err->code : TG_ENOMEM;
	}
	catch (const std::exception &e)
	{
		if (err && err->code == TG_OK)
		{
			tg_error_set(err, TG_EDEVICE, "unexpected C++ exception in the CUDA backend");
			tg_error_detail(err, "%s", e.what());
		}
		return err ? err->code : TG_EDEVICE;
	}
	catch (...)
	{
		tg_error_set(err, TG_EDEVICE, "unexpected C++ exception in the CUDA backend");
		return err ? err->code : TG_EDEVICE;
	}
}

static inline unsigned
tg_div_up(size_t a, unsigned b)
{
	return (unsigned) ((a + b - 1) / b);
}

#endif							/* TG_CUDA_COMMON_CUH */
