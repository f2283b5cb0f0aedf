/*
 * catchment.h — RUSLE soil loss and D8 travel time on the CPU
 * (hydro/catchment/: catchment_cpu.c), and the per-cell factors both
 * backends take (factors.c).  Internal to the core.
 */
#ifndef TG_CATCHMENT_H
#define TG_CATCHMENT_H

#include "hydro/accum/accum.h"

#ifdef __cplusplus
extern "C"
{
#endif

/*
 * A factor decoded for the backends (factors.c): a band becomes n doubles
 * (NaN for nodata), a constant stays one; positive: values <= 0 are refused
 * (else values < 0), naming the factor and the first such cell.
 */
tg_status	tg_factor_decode(const tg_ctx *ctx, const tg_band *dem, const tg_factor *f,
							 const char *name, bool positive, tg_cell_factor *out, tg_error *err);

/* factors: R, K, C, P */
tg_status	tg_cpu_rusle(const tg_ctx *ctx, const tg_band *dem, const tg_rusle_params *p,
						 const tg_cell_factor factors[4], float *ls, float *soil_loss, tg_error *err);
tg_status	tg_cpu_travel_time(const tg_ctx *ctx, const tg_band *dem, const tg_travel_params *p,
							   const tg_cell_factor *roughness, const tg_cell_factor *velocity,
							   float *time, uint8_t *watershed, tg_error *err);

#ifdef __cplusplus
}
#endif

#endif							/* TG_CATCHMENT_H */
