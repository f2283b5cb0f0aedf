/*
 * tg_backends.h — the per-backend implementations behind the dispatcher.
 *
 * tg_cpu_* live in the *_cpu.c files of src/core; tg_cuda_* in the .cu files
 * of cuda/ (or in
 * cuda/tg_cuda_stub.c when built without nvcc).  Both sides of a pair take the
 * same arguments; only tg_dispatch.c calls them.
 */
#ifndef TG_BACKENDS_H
#define TG_BACKENDS_H

#include "tg_core.h"
#include "tg_cuda.h"

tg_status	tg_cpu_slope(const tg_ctx *ctx, const tg_band *dem,
						 const tg_slope_params *params, float *out, tg_error *err);

#endif							/* TG_BACKENDS_H */
