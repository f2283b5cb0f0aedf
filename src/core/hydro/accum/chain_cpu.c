/*
 * chain_cpu.c — the CPU chain behind tg_flow_direction and tg_hydrology:
 * the routing (built, or kept from the last call on the same DEM), the
 * accumulation, and what the caller asked of the routing (codes and shares;
 * the routing surface and receivers).
 */
#include "hydro/accum/accum.h"

#include <math.h>
#include <stdio.h>
#include <time.h>

tg_status
tg_cpu_flow_direction(const tg_ctx *ctx, const tg_band *dem, const tg_flow_params *p,
					  uint8_t *d8, float *frac, tg_error *err)
{
	const size_t n = (size_t) dem->width * dem->height;
	double	   *acc = NULL;
	tg_route	route;
	bool		kept;
	tg_status	st;

	st = tg_cpu_route_get(ctx, dem, p, &route, &kept, err);
	if (st != TG_OK)
		return st;
	/* fdd8 turns to d8 where its accumulation (in cells) reaches the threshold */
	if (p->routing == TG_ROUTE_FDD8)
	{
		acc = tg_alloc(ctx, (n ? n : 1) * sizeof(double));
		st = acc ? tg_cpu_accumulate(ctx, &route, p, NULL, TG_ACC_INDEGREE, acc, err)
			: tg_error_set(err, TG_ENOMEM, "could not allocate the accumulation");
	}
	if (st == TG_OK)
		st = tg_cpu_export_directions(ctx, &route, p, acc, d8, frac, err);
	tg_free(ctx, acc);
	tg_cpu_route_put(ctx, &route, kept);
	return st;
}

typedef struct export_job
{
	const tg_route *r;
	const tg_flow_params *p;
	const tg_flow_products *out;
} export_job;

/* The routing surface and receiver masks of a routing, as the GPU exports them. */
static tg_status
export_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const export_job *j = arg;
	const tg_route *r = j->r;
	const tg_flow_products *out = j->out;
	const tg_route_view v = tg_cpu_route_view(r, j->p->threshold);
	const size_t i0 = (size_t) y0 * r->width,
				i1 = (size_t) y1 * r->width;

	if (out->surface)
	{
		const tg_band_spec spec = {out->surface_type, true, out->surface_nodata};

		for (int y = y0; y < y1; y++)
			tg_pixels_to_band(TG_PT_64BF, r->z, (size_t) y * r->width, false, 0, &spec, out->surface,
							  (size_t) y * r->width, r->width);
	}
	if (out->receivers)
		tg_route_receivers(&v, out->acc, i0, i1, out->receivers);
	return TG_OK;
}

tg_status
tg_cpu_hydrology(const tg_ctx *ctx, const tg_band *dem, const tg_band *weight,
				 const tg_flow_params *p, tg_accum_method method, tg_accum_units units,
				 const tg_flow_products *out, tg_error *err)
{
	const tg_accum_method m = method;	/* resolved by the dispatcher */
	tg_route	route;
	bool		kept;
	double	   *w = NULL;
	tg_status	st = TG_OK;
	struct timespec t0,
				t1;

	/* unit weights need no array */
	if (weight || units != TG_UNITS_CELLS)
		st = tg_cell_weights(ctx, weight, &p->geom, units, &w, err);
	if (st != TG_OK)
		return st;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	st = tg_cpu_route_get(ctx, dem, p, &route, &kept, err);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (ctx->stats)
		ctx->stats->prep_ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
	if (st == TG_OK)
	{
		export_job	j = {&route, p, out};

		st = tg_cpu_accumulate(ctx, &route, p, w, m, out->acc, err);
		if (st == TG_OK && (out->surface || out->receivers))
		{
			tg_phase(ctx, "export");
			st = tg_parallel_rows(ctx, route.width, route.height, export_rows, &j, err);
		}
		tg_cpu_route_put(ctx, &route, kept);
	}
	tg_free(ctx, w);
	if (st == TG_OK && units == TG_UNITS_SCA)
		st = tg_to_sca(ctx, &p->geom, out->acc, err);
	if (ctx->stats)
		snprintf(ctx->stats->method, sizeof ctx->stats->method, "%s", tg_accum_method_name(m));
	return st;
}
