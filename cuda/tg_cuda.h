/*
 * tg_cuda.h — the CUDA side of the core, as plain C declarations.
 *
 * Implemented by the extern "C" wrappers at the bottom of each .cu file in cuda/, or
 * by tg_cuda_stub.c in a build without nvcc.  Wrappers never throw, never
 * longjmp, free every device buffer on every path and report through
 * tg_error; they may be called only from one thread at a time.
 */
#ifndef TG_CUDA_H
#define TG_CUDA_H

#include "tg_core.h"
#include "tg_hydro.h"

#ifdef __cplusplus
extern "C"
{
#endif

/*
 * Make `device` current, initialising CUDA in this process on first use.
 * Fills info (may be NULL); returns TG_ENODEVICE with the reason when there
 * is no usable device.  The outcome of the first probe is cached.
 */
tg_status	tg_cuda_probe(int device, tg_device_info *info, tg_error *err);

/* After a call that ran on the device: give the memory its buffers took back. */
void		tg_cuda_release(void);

tg_status	tg_cuda_slope(const tg_ctx *ctx, const tg_band *dem,
						  const tg_slope_params *params, float *out, tg_error *err);

tg_status	tg_cuda_fill(const tg_ctx *ctx, const tg_band *dem, const tg_fill_params *params,
						 double out_nodata, void *out, tg_error *err);

/* weight: per-cell weights already multiplied by cell areas (n doubles). */
tg_status	tg_cuda_flow_accumulation(const tg_ctx *ctx, const tg_band *dem,
									  const double *weight, const tg_flow_params *params,
									  tg_accum_method method, const tg_flow_products *out,
									  tg_error *err);

tg_status	tg_cuda_flow_direction(const tg_ctx *ctx, const tg_band *dem,
								   const tg_flow_params *params, uint8_t *d8, float *frac,
								   tg_error *err);

/* factors as tg_cpu_rusle's: host arrays (or constants) */
tg_status	tg_cuda_rusle(const tg_ctx *ctx, const tg_band *dem, const tg_rusle_params *params,
						  const tg_cell_factor factors[4], float *ls, float *soil_loss,
						  tg_error *err);

tg_status	tg_cuda_travel_time(const tg_ctx *ctx, const tg_band *dem,
								const tg_travel_params *params, const tg_cell_factor *roughness,
								const tg_cell_factor *velocity, float *time, uint8_t *watershed,
								tg_error *err);

tg_status	tg_cuda_viewshed(const tg_ctx *ctx, const tg_band *dem, const tg_viewshed_params *params,
							 float *out, tg_error *err);

tg_status	tg_cuda_viewshed_count(const tg_ctx *ctx, const tg_band *dem,
								   const tg_viewshed_params *params, const int *cols,
								   const int *rows, int n, uint32_t *count, tg_error *err);

/* Node arrays allocated with ctx's allocator, as tg_bmmq_build documents. */
tg_status	tg_cuda_bmmq_build(const tg_ctx *ctx, const tg_band *tiles, int ntiles,
							   const double *bounds, int nbounds, tg_bmmq_tree *trees,
							   tg_error *err);

#ifdef __cplusplus
}
#endif

#endif							/* TG_CUDA_H */
