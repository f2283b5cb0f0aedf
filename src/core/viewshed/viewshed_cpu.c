/*
 * viewshed_cpu.c — R2 viewshed on the CPU (each ray walked outward, the
 * horizon carried along it) and the exact R3 reference (every cell's own
 * line of sight, sampled at every grid line it crosses).
 */
#include "viewshed/viewshed.h"

#include <string.h>

/*
 * One ray of R2, from the observer to its edge cell (dx, dy): at step k the
 * cells beside the calculation point (minor offsets q and q + 1) within
 * half a cell of the ray are candidates; the ray decides those it is the
 * nearest to, under the horizon of the steps before.
 */
static void
walk_ray(const tg_view_setup *s, const double *z, int dx, int dy, float *out)
{
	const bool	xmajor = (dx < 0 ? -dx : dx) >= (dy < 0 ? -dy : dy);
	const int	sgn = xmajor ? (dx > 0 ? 1 : -1) : (dy > 0 ? 1 : -1);
	const int64_t i = xmajor ? (int64_t) dx * sgn : (int64_t) dy * sgn;
	const int64_t j = xmajor ? dy : dx;
	const int64_t steps = i / s->density;	/* whole cells along the major axis */
	tg_view_rivals rivals;
	tg_view_advance one;
	tg_view_walk w;
	double		horizon = -INFINITY;

	tg_view_rivals_init(s, dx, dy, &rivals);
	tg_view_advance_init(s, xmajor, sgn, i, j, 1, &one);
	for (tg_view_walk_start(s, xmajor, sgn, i, j, 1, &w); w.k <= steps; tg_view_walk_next(&w, &one, i))
	{
		tg_view_point p;
		tg_view_sample e;
		double		zc[2];
		int			c0,
					c1;

		tg_view_locate(s, xmajor, i, &w, &p);
		zc[0] = z[p.at0];
		zc[1] = p.rem != 0 ? z[p.at1] : NAN;
		tg_view_eval(s, &p, i, zc[0], zc[1], &e);
		tg_view_candidates(&p, i, &c0, &c1);
		for (int c = c0; c <= c1; c++)
		{
			if (tg_view_rivals_decide(&rivals, w.k, p.q + c, c == 0 ? p.rem : i - p.rem))
			{
				const int	a = xmajor ? (int) (sgn * w.k) : (int) (p.q + c);
				const int	b = xmajor ? (int) (p.q + c) : (int) (sgn * w.k);

				out[(size_t) (s->oy + b) * s->width + s->ox + a] =
					tg_view_decide(s, zc[c], a, b, &e, horizon);
			}
		}
		horizon = e.h > horizon ? e.h : horizon;
	}
}

/* R3: the line of sight to cell (x, y), sampled at every grid line it crosses. */
static float
exact_cell(const tg_view_setup *s, const double *z, int x, int y)
{
	const int	a = x - s->ox,
				b = y - s->oy;
	const int64_t ia = a < 0 ? -a : a,
				ib = b < 0 ? -b : b;
	double		horizon = -INFINITY;

	for (int64_t k = 1; k < ia; k++)
	{
		double		h = tg_view_horizon_at(s, z, true, a > 0 ? 1 : -1, ia, b, k);

		horizon = h > horizon ? h : horizon;
	}
	for (int64_t k = 1; k < ib; k++)
	{
		double		h = tg_view_horizon_at(s, z, false, b > 0 ? 1 : -1, ib, a, k);

		horizon = h > horizon ? h : horizon;
	}
	return tg_view_decide(s, z[(size_t) y * s->width + x], a, b, NULL, horizon);
}

/* ------------------------------------------------------------------------
 * On the call's threads: each cell is decided by exactly one ray (R2) or by
 * its own line of sight (R3), so rays and rows write disjoint cells.
 * ------------------------------------------------------------------------ */
#define RAYS_PER_TASK 256

typedef struct view_job
{
	const tg_view_setup *s;
	const double *z;
	float	   *out;
	uint32_t   *count;			/* cumulative: observers seeing each cell */
} view_job;

static tg_status
nan_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const view_job *j = arg;

	for (size_t c = (size_t) y0 * j->s->width; c < (size_t) y1 * j->s->width; c++)
		j->out[c] = NAN;
	return TG_OK;
}

static tg_status
ray_task(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	const view_job *j = arg;
	const int	end = (int) ((task + 1) * RAYS_PER_TASK < j->s->nrays ? (task + 1) * RAYS_PER_TASK
							 : j->s->nrays);

	for (int r = (int) task * RAYS_PER_TASK; r < end; r++)
	{
		int			dx,
					dy;

		tg_view_ray(j->s, r, &dx, &dy);
		if (dx != 0 || dy != 0)
			walk_ray(j->s, j->z, dx, dy, j->out);
	}
	return TG_OK;
}

static tg_status
r3_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const view_job *j = arg;
	const tg_view_setup *s = j->s;

	for (int y = y0 > s->y0 ? y0 : s->y0; y < y1 && y <= s->y1; y++)
		for (int x = s->x0; x <= s->x1; x++)
			if (x != s->ox || y != s->oy)
				j->out[(size_t) y * s->width + x] = exact_cell(s, j->z, x, y);
	return TG_OK;
}

static tg_status
finish_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const view_job *j = arg;

	tg_view_finish_rows(j->s, j->out, y0, y1);
	return TG_OK;
}

static tg_status
count_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const view_job *j = arg;

	for (size_t c = (size_t) y0 * j->s->width; c < (size_t) y1 * j->s->width; c++)
		j->count[c] += j->out[c] == 1.0f;
	return TG_OK;
}

/* R2 or R3 of a prepared setup into out. */
static tg_status
view_all(const tg_ctx *ctx, const tg_view_setup *s, const double *z, tg_view_algorithm algorithm,
		 float *out, tg_error *err)
{
	view_job	j = {s, z, out, NULL};
	tg_status	st;

	st = tg_parallel_rows(ctx, s->width, s->height, nan_rows, &j, err);
	if (st == TG_OK && algorithm == TG_VIEW_R3)
		st = tg_parallel_rows(ctx, s->width, s->height, r3_rows, &j, err);
	else if (st == TG_OK)
		st = tg_parallel(ctx, (s->nrays + RAYS_PER_TASK - 1) / RAYS_PER_TASK, ray_task, &j, err);
	if (st == TG_OK)
		st = tg_parallel_rows(ctx, s->width, s->height, finish_rows, &j, err);
	return st;
}

tg_status
tg_cpu_viewshed_count(const tg_ctx *ctx, const tg_band *dem, const tg_viewshed_params *p,
					  const int *cols, const int *rows, int n, uint32_t *count, tg_error *err)
{
	const size_t cells = (size_t) dem->width * dem->height;
	tg_viewshed_params one = *p;
	tg_view_setup s;
	double	   *z = NULL;
	float	   *vis = NULL;
	tg_status	st;

	memset(count, 0, cells * sizeof *count);
	tg_phase_span(ctx, 0, 0);	/* the phase's progress is the observers' */
	one.output = TG_VIEW_VISIBLE;
	one.algorithm = TG_VIEW_R2;
	st = tg_band_decode(ctx, dem, &z, err);
	if (st == TG_OK && (vis = tg_alloc(ctx, (cells ? cells : 1) * sizeof(float))) == NULL)
		st = tg_error_set(err, TG_ENOMEM, "could not allocate %zu bytes for a viewshed", cells * sizeof(float));
	for (int k = 0; k < n && st == TG_OK; k++)
	{
		view_job	j = {&s, z, vis, count};

		one.observer_col = cols[k];
		one.observer_row = rows[k];
		tg_phase_span(ctx, (double) k / n, (double) (k + 1) / n);
		st = tg_view_prepare(dem, &one, z, &s, err);
		if (st != TG_OK)
			tg_error_detail(err, "Observer %d of the list.", k + 1);
		else
			st = view_all(ctx, &s, z, TG_VIEW_R2, vis, err);
		if (st == TG_OK)
			st = tg_parallel_rows(ctx, dem->width, dem->height, count_rows, &j, err);
	}
	if (ctx->stats)
		ctx->stats->iterations = n;
	tg_free(ctx, vis);
	tg_free(ctx, z);
	return st;
}

tg_status
tg_cpu_viewshed(const tg_ctx *ctx, const tg_band *dem, const tg_viewshed_params *p,
				float *out, tg_error *err)
{
	tg_view_setup s;
	double	   *z = NULL;
	tg_status	st;

	st = tg_band_decode(ctx, dem, &z, err);
	if (st == TG_OK)
		st = tg_view_prepare(dem, p, z, &s, err);
	if (st == TG_OK)
		st = view_all(ctx, &s, z, p->algorithm, out, err);
	if (st == TG_OK && ctx->stats)
		ctx->stats->iterations = s.nrays;
	tg_free(ctx, z);
	return st;
}
