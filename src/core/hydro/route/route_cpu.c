/*
 * route_cpu.c — the routing of every cell: where its water goes.
 *
 * 1. The routing surface: the DEM, depression-filled (priority-flood,
 *    epsilon 0) unless the caller routes on the raw DEM.
 * 2. Cells with a lower neighbour drain by the routing's formula on the
 *    surface's gradients (hydro.h).  Outlets with no lower neighbour pass
 *    their water off the raster.
 * 3. Flat cells (no lower neighbour, not outlets) are drained over the flat
 *    by Barnes, Lehman & Mulla (2014): a breadth-first gradient towards the
 *    flat's draining edge T, and one away from higher terrain A, combined as
 *    M = 2 T + (H - A) with H the largest A of the flat; water on a flat moves
 *    down M, which strictly decreases to the draining edge, so every flat that
 *    touches a draining cell drains.  Flats with no draining edge (only in an
 *    unfilled DEM) keep no direction.
 */
#include "hydro/route/route.h"

#include <math.h>
#include <string.h>

void
tg_route_free(const tg_ctx *ctx, tg_route *r)
{
	tg_free(ctx, r->z);
	tg_free(ctx, r->d8);
	tg_free(ctx, r->frac);
	memset(r, 0, sizeof *r);
}

tg_status
tg_cpu_route_build(const tg_ctx *ctx, const tg_band *dem, const tg_flow_params *p,
				   tg_route *r, tg_error *err)
{
	const size_t n = (size_t) dem->width * dem->height;
	double	   *z;
	tg_status	st;

	if (p->fill)
	{
		const tg_fill_params fp = {TG_FILL_PRIORITY_FLOOD, 0, TG_PT_64BF};

		tg_phase(ctx, "fill");
		z = tg_alloc(ctx, (n ? n : 1) * sizeof(double));
		st = z ? tg_cpu_fill(ctx, dem, &fp, NAN, z, err)
			: tg_error_set(err, TG_ENOMEM, "could not allocate %zu bytes for the filled DEM",
						   n * sizeof(double));
	}
	else
	{
		tg_phase(ctx, "decode");
		st = tg_band_decode(ctx, dem, &z, err);
	}
	if (st != TG_OK)
	{
		tg_free(ctx, z);
		return st;
	}
	tg_phase(ctx, "directions");
	return tg_cpu_route_surface(ctx, z, dem->width, dem->height, p, NULL, r, err);
}

/* The two per-cell passes of tg_cpu_route_surface, on row tasks. */
typedef struct surface_job
{
	const tg_flow_params *p;
	tg_route   *r;
	uint8_t    *flat;
	const int32_t *mask;
} surface_job;

tg_cell_kind
tg_cpu_route_cell(const double *z, int W, int H, int x, int y, const tg_flow_params *p, const double dist[8],
				  uint8_t *d8, float share[8])
{
	const size_t i = (size_t) y * W + x;
	double		drop[8],
				g[8];
	int			lower = 0;

	*d8 = TG_NO_DIRECTION;
	if (isnan(z[i]))
		return TG_CELL_NODATA;
	for (int k = 0; k < 8; k++)
	{
		int64_t		ni = tg_nbr_cell(W, H, x, y, k);

		drop[k] = (ni < 0 || isnan(z[ni])) ? 0.0 : z[i] - z[ni];
		g[k] = drop[k] / dist[k];
		lower |= g[k] > 0;
	}
	/* outlets pass their water off the raster */
	if (!lower)
		return tg_cpu_is_outlet(z, W, H, x, y) ? TG_CELL_OUTLET : TG_CELL_FLAT;
	*d8 = (uint8_t) tg_d8_choose(g);
	if (share)
		tg_flow_shares(p->routing, p->exponent, false, drop, dist, share);
	return TG_CELL_SLOPE;
}

/* Slopes on the surface; flat cells as flat_cells_rows finds them. */
static tg_status
gradient_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const surface_job *j = arg;
	tg_route   *r = j->r;
	const int	W = r->width,
				H = r->height;
	const size_t n = (size_t) W * H;

	/* the rows' shares start at 0, on the thread that writes them (not one memset of 8 planes) */
	if (r->frac)
		for (int k = 0; k < 8; k++)
			memset(r->frac + (size_t) k * n + (size_t) y0 * W, 0, (size_t) (y1 - y0) * W * sizeof(float));
	for (int y = y0; y < y1; y++)
	{
		double		dx,
					dy,
					dist[8];

		tg_row_spacing(&j->p->geom, y, &dx, &dy);
		tg_nbr_distances(dx, dy, dist);
		for (int x = 0; x < W; x++)
		{
			const size_t i = (size_t) y * W + x;
			float		share[8];
			const tg_cell_kind kind = tg_cpu_route_cell(r->z, W, H, x, y, j->p, dist, &r->d8[i],
													   r->frac ? share : NULL);

			j->flat[i] = kind == TG_CELL_FLAT;
			if (kind == TG_CELL_SLOPE && r->frac)
				for (int k = 0; k < 8; k++)
					r->frac[(size_t) k * n + i] = share[k];
		}
	}
	return TG_OK;
}

void
tg_cpu_flat_route_cell(const double *z, const uint8_t *flat, const int32_t *mask, int W, int H, int x, int y,
					   const tg_flow_params *p, uint8_t *d8, float share[8])
{
	const size_t i = (size_t) y * W + x;
	double		dist[8],
				drop[8],
				g[8];

	tg_flat_distances(dist);
	for (int k = 0; k < 8; k++)
	{
		int64_t		ni = tg_nbr_cell(W, H, x, y, k);
		int32_t		m;

		drop[k] = 0;
		g[k] = 0;
		if (ni < 0 || z[ni] != z[i])
			continue;
		m = flat[ni] ? mask[ni] : 0;
		if (flat[ni] && m == 0)
			continue;			/* an undrained flat cannot receive */
		drop[k] = (double) (mask[i] - m);
		g[k] = drop[k] / dist[k];
	}
	*d8 = (uint8_t) tg_d8_choose(g);
	if (share)
		tg_flow_shares(p->routing, p->exponent, true, drop, dist, share);
}

/* Flat cells drain down the mask, in cell units. */
static tg_status
flat_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const surface_job *j = arg;
	tg_route   *r = j->r;
	const int	W = r->width,
				H = r->height;
	const size_t n = (size_t) W * H;

	for (int y = y0; y < y1; y++)
		for (int x = 0; x < W; x++)
		{
			const size_t i = (size_t) y * W + x;
			float		share[8];

			if (!j->flat[i] || j->mask[i] == 0)
				continue;
			tg_cpu_flat_route_cell(r->z, j->flat, j->mask, W, H, x, y, j->p, &r->d8[i], r->frac ? share : NULL);
			if (r->frac)
				for (int k = 0; k < 8; k++)
					r->frac[(size_t) k * n + i] = share[k];
		}
	return TG_OK;
}

tg_status
tg_cpu_route_surface(const tg_ctx *ctx, double *z, int W, int H, const tg_flow_params *p,
					 const tg_flat_masks *given, tg_route *r, tg_error *err)
{
	const size_t n = (size_t) W * H;
	const bool	multiple = p->routing != TG_ROUTE_D8;
	uint8_t    *flat = NULL;
	int32_t    *mask = NULL;
	surface_job j;
	tg_status	st;

	memset(r, 0, sizeof *r);
	r->width = W;
	r->height = H;
	r->routing = p->routing;
	r->z = z;

	r->d8 = tg_alloc(ctx, n ? n : 1);
	flat = tg_alloc(ctx, n ? n : 1);
	mask = tg_alloc(ctx, (n ? n : 1) * sizeof(int32_t));
	if (multiple)
		r->frac = tg_alloc(ctx, (n ? 8 * n : 1) * sizeof(float));
	if (r->d8 == NULL || flat == NULL || mask == NULL || (multiple && r->frac == NULL))
	{
		st = tg_error_set(err, TG_ENOMEM, "could not allocate flow-routing buffers (%zu cells)", n);
		goto fail;
	}
	j.p = p;
	j.r = r;
	j.flat = flat;
	j.mask = mask;
	st = tg_parallel_rows(ctx, W, H, gradient_rows, &j, err);
	if (st == TG_OK)
		st = tg_flat_mask(ctx, r->z, flat, W, H, mask, err);
	if (st != TG_OK)
		goto fail;
	if (given)
		for (size_t g = 0; g < given->count; g++)
			mask[given->cell[g]] = given->mask[g];
	tg_phase(ctx, "flats: flow");
	st = tg_parallel_rows(ctx, W, H, flat_rows, &j, err);
	if (st != TG_OK)
		goto fail;
	tg_free(ctx, flat);
	tg_free(ctx, mask);
	return TG_OK;

fail:
	tg_free(ctx, flat);
	tg_free(ctx, mask);
	tg_route_free(ctx, r);
	return st;
}

/* ------------------------------------------------------------------------
 * Codes and shares out of a routing
 * ------------------------------------------------------------------------ */
typedef struct directions_job
{
	const tg_route *r;
	const tg_flow_params *p;
	const double *acc;
	uint8_t    *d8;
	float	   *frac;
} directions_job;

static tg_status
direction_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const directions_job *j = arg;
	const tg_route *r = j->r;
	const size_t n = (size_t) r->width * r->height;
	const tg_route_view v = tg_cpu_route_view(r, j->p->threshold);

	for (size_t i = (size_t) y0 * r->width; i < (size_t) y1 * r->width; i++)
	{
		const bool	valid = !isnan(r->z[i]);

		if (j->d8)
			j->d8[i] = !valid ? 255 : r->d8[i] == TG_NO_DIRECTION ? 0 : (uint8_t) (1u << r->d8[i]);
		if (j->frac)
			for (int k = 0; k < 8; k++)
				j->frac[(size_t) k * n + i] = !valid ? NAN :
					(float) tg_route_share(&v, i, k, j->acc ? j->acc[i] : 0.0);
	}
	return TG_OK;
}

/*
 * Codes and shares out of a routing, through the same share formula as the
 * accumulation (fdd8 resolved with its accumulation; acc may be NULL for the
 * other routings).
 */
tg_status
tg_cpu_export_directions(const tg_ctx *ctx, const tg_route *r, const tg_flow_params *p,
						 const double *acc, uint8_t *d8, float *frac, tg_error *err)
{
	directions_job j = {r, p, acc, d8, frac};

	return tg_parallel_rows(ctx, r->width, r->height, direction_rows, &j, err);
}
