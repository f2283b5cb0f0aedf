/*
 * test_hydro.h — helpers of the hydrology tests (test_hydro.c,
 * test_chain.c, test_strips.c): DEMs as 64BF bands, flow parameters, a CPU
 * context, and the fill, directions and accumulation of a grid.
 */
#ifndef TG_TEST_HYDRO_H
#define TG_TEST_HYDRO_H

#include "test.h"

#define ND (-9999.0)

static inline tg_band
band_f64(const double *z, int W, int H)
{
	return test_band(TG_PT_64BF, z, W, H, true, ND);
}

static inline tg_ctx
cpu_ctx(tg_run_stats *stats)
{
	tg_ctx		ctx;

	tg_ctx_init(&ctx);
	ctx.backend = TG_BACKEND_CPU;
	ctx.stats = stats;
	return ctx;
}

static inline tg_status
fill64(tg_backend backend, const double *z, int W, int H, tg_fill_method m, double eps,
	   double *out)
{
	tg_band		b = band_f64(z, W, H);
	tg_fill_params fp = {m, eps, TG_PT_64BF};
	tg_ctx		ctx = cpu_ctx(NULL);
	tg_error	err;

	ctx.backend = backend;
	tg_error_clear(&err);
	return tg_fill(&ctx, &b, &fp, ND, out, &err);
}

static inline tg_status
accumulate(tg_backend backend, const double *z, int W, int H, const tg_flow_params *p,
		   tg_accum_method method, double *acc)
{
	tg_band		b = band_f64(z, W, H);
	tg_ctx		ctx = cpu_ctx(NULL);
	tg_error	err;

	ctx.backend = backend;
	tg_error_clear(&err);
	return tg_flow_accumulation(&ctx, &b, NULL, p, method, TG_UNITS_CELLS, acc, &err);
}

/* Largest |a - b| over n floats; infinite where only one of the two is NaN. */
static inline double
max_abs_diff_f32(const float *a, const float *b, size_t n)
{
	double		worst = 0;

	for (size_t i = 0; i < n; i++)
		worst = fmax(worst, isnan(a[i]) != isnan(b[i]) ? INFINITY : isnan(a[i]) ? 0 : fabs(a[i] - b[i]));
	return worst;
}

/* Random DEM with plateaus (values quantized to `levels`) and ~4 % holes. */
static inline double *
random_terrain(int W, int H, int levels, double holes)
{
	double	   *z = malloc(sizeof(double) * (W * H > 0 ? W * H : 1));
	int			i;

	for (i = 0; i < W * H; i++)
		z[i] = rng_uniform() < holes ? ND : (double) (rng_next() % (uint64_t) levels);
	return z;
}

static inline void
directions(const double *z, int W, int H, tg_routing routing, bool fill, uint8_t *d8, float *frac)
{
	tg_band		b = band_f64(z, W, H);
	tg_flow_params p = flow_params(routing, W, H, 1, fill);
	tg_ctx		ctx = cpu_ctx(NULL);
	tg_error	err;

	tg_error_clear(&err);
	if (tg_flow_direction(&ctx, &b, &p, d8, frac, &err) != TG_OK)
		check(false, "flow direction failed: %s", err.message);
}

#endif							/* TG_TEST_HYDRO_H */
