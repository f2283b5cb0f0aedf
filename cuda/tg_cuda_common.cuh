/*
 * tg_cuda_common.cuh — helpers shared by the .cu files (never seen by C code).
 */
#ifndef TG_CUDA_COMMON_CUH
#define TG_CUDA_COMMON_CUH

#include <cuda_runtime.h>

#include "tg_backends.h"

/*
 * Record a failed CUDA call in err and jump to the wrapper's cleanup label.
 * The sticky error is cleared so the next call in this process starts clean.
 * Allocation failures become TG_ENOMEM on the device, the rest TG_EDEVICE.
 */
#define TG_CUDA_TRY(call, what)											\
	do {																\
		cudaError_t tg_rc_ = (call);									\
		if (tg_rc_ != cudaSuccess) {									\
			(void) cudaGetLastError();									\
			tg_cuda_fail(err, tg_rc_, (what), __FILE__, __LINE__);		\
			goto cleanup;												\
		}																\
	} while (0)

/* After a kernel launch: launch-configuration errors surface here. */
#define TG_CUDA_CHECK_LAUNCH(what) TG_CUDA_TRY(cudaGetLastError(), (what))

void		tg_cuda_fail(tg_error *err, cudaError_t rc, const char *what,
						 const char *file, int line);

/*
 * Device bytes this call may use: the smaller of the per-backend cap
 * (ctx->device_memory_limit, 0 = none) and 90 % of what is free now.
 */
tg_status	tg_cuda_memory_budget(const tg_ctx *ctx, size_t *budget, tg_error *err);

/* Accumulate event-timed milliseconds into the run statistics. */
float		tg_cuda_elapsed_ms(cudaEvent_t from, cudaEvent_t to);

static inline unsigned
tg_div_up(size_t a, unsigned b)
{
	return (unsigned) ((a + b - 1) / b);
}

#endif							/* TG_CUDA_COMMON_CUH */
