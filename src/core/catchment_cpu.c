/*
 * catchment_cpu.c — RUSLE soil loss and D8 travel time on the CPU, on the
 * routing of route_cpu.c.  The per-cell formulas are tg_hydro.h's, shared
 * with cuda/catchment.cu.
 */
#include "tg_backends.h"
#include "tg_pool.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define CANCEL_EVERY (1u << 20)

/* The 3x3 window of the routing surface around (x, y), NaN outside. */
static void
window(const double *z, int W, int H, int x, int y, double w[9])
{
	int			k = 0;

	for (int dy = -1; dy <= 1; dy++)
		for (int dx = -1; dx <= 1; dx++, k++)
		{
			int			nx = x + dx,
						ny = y + dy;

			w[k] = nx >= 0 && ny >= 0 && nx < W && ny < H ? z[(size_t) ny * W + nx] : NAN;
		}
}

typedef struct rusle_job
{
	const tg_rusle_params *p;
	const tg_cell_factor *factors;
	const tg_route *route;
	const double *acc;
	float	   *ls;
	float	   *soil_loss;
} rusle_job;

static tg_status
rusle_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const rusle_job *j = arg;
	const tg_rusle_params *p = j->p;
	const int	W = j->route->width,
				H = j->route->height;
	const double *z = j->route->z;

	for (int y = y0; y < y1; y++)
	{
		double		dx,
					dy,
					width,
					kx,
					ky;

		tg_row_spacing(&p->flow.geom, y, &dx, &dy);
		width = sqrt(dx * dy);
		kx = 1.0 / (8.0 * dx);
		ky = 1.0 / (8.0 * dy);
		for (int x = 0; x < W; x++)
		{
			const size_t i = (size_t) y * W + x;
			double		w[9],
						value = NAN;

			if (!isnan(z[i]))
			{
				window(z, W, H, x, y, w);
				value = tg_ls_value(j->acc[i], width, tg_horn_tan(w, kx, ky), p->m, p->n, p->a0, p->b0);
			}
			if (j->ls)
				j->ls[i] = (float) value;
			if (j->soil_loss)
			{
				double		a = value;

				for (int f = 0; f < 4; f++)
					a = TG_DMUL(a, tg_factor_at(&j->factors[f], i));
				j->soil_loss[i] = (float) a;
			}
		}
	}
	return TG_OK;
}

tg_status
tg_cpu_rusle(const tg_ctx *ctx, const tg_band *dem, const tg_rusle_params *p,
			 const tg_cell_factor factors[4], float *ls, float *soil_loss, tg_error *err)
{
	const size_t n = (size_t) dem->width * dem->height;
	const tg_accum_method method = p->method == TG_ACC_AUTO ? TG_ACC_INDEGREE : p->method;
	tg_route	route;
	bool		kept;
	double	   *acc;
	tg_status	st;

	acc = tg_alloc(ctx, (n ? n : 1) * sizeof(double));
	if (acc == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate the accumulation");
	st = tg_cpu_route_get(ctx, dem, &p->flow, &route, &kept, err);
	if (st != TG_OK)
	{
		tg_free(ctx, acc);
		return st;
	}
	/* the accumulation in cells: every cell weighs 1 */
	st = tg_cpu_accumulate(ctx, &route, &p->flow, NULL, method, acc, err);
	if (st == TG_OK)
	{
		rusle_job	j = {p, factors, &route, acc, ls, soil_loss};

		st = tg_parallel_rows(ctx, dem->width, dem->height, rusle_rows, &j, err);
	}
	if (ctx->stats)
		snprintf(ctx->stats->method, sizeof ctx->stats->method, "%s", tg_accum_method_name(method));
	tg_cpu_route_put(ctx, &route, kept);
	tg_free(ctx, acc);
	return st;
}

/*
 * Travel time: each cell's time is its step time plus its receiver's, so
 * cells are finished from the ends of their paths upstream: follow a path
 * down to a finished cell (or its end) on a stack, then unwind it.
 */
tg_status
tg_cpu_travel_time(const tg_ctx *ctx, const tg_band *dem, const tg_travel_params *p,
				   const tg_cell_factor *roughness, const tg_cell_factor *velocity,
				   float *time, uint8_t *watershed, tg_error *err)
{
	const int	W = dem->width,
				H = dem->height;
	const size_t n = (size_t) W * H;
	const size_t outlet = p->has_outlet ? (size_t) p->outlet_row * W + p->outlet_col : n;
	double	   *t = NULL,
			   *row_dist = NULL;
	uint8_t    *state = NULL;	/* 0 pending, 1 done, 2 done and reaches the outlet */
	size_t	   *stack = NULL;
	size_t		cap = 1u << 16,
				depth;
	tg_route	route;
	bool		kept;
	tg_status	st;

	st = tg_cpu_route_get(ctx, dem, &p->flow, &route, &kept, err);
	if (st != TG_OK)
		return st;
	t = tg_alloc(ctx, (n ? n : 1) * sizeof(double));
	state = tg_alloc(ctx, n ? n : 1);
	row_dist = tg_alloc(ctx, (size_t) H * 8 * sizeof(double));
	stack = tg_alloc(ctx, cap * sizeof(size_t));
	if (!t || !state || !row_dist || !stack)
	{
		st = tg_error_set(err, TG_ENOMEM, "could not allocate travel times");
		goto done;
	}
	memset(state, 0, n);
	for (int y = 0; y < H; y++)
	{
		double		dx,
					dy;

		tg_row_spacing(&p->flow.geom, y, &dx, &dy);
		tg_nbr_distances(dx, dy, row_dist + (size_t) y * 8);
	}

	for (size_t start = 0; start < n; start++)
	{
		size_t		c = start;

		if (state[start] || isnan(route.z[start]))
			continue;
		if ((start & (CANCEL_EVERY - 1)) == 0 && tg_canceled(ctx))
		{
			st = tg_error_set(err, TG_ECANCELED, "canceled");
			goto done;
		}
		/* down the path to a finished cell or the path's end */
		depth = 0;
		while (!state[c] && c != outlet && route.d8[c] != TG_NO_DIRECTION)
		{
			const int	k = route.d8[c];

			if (depth == cap)
			{
				size_t	   *bigger = tg_alloc(ctx, 2 * cap * sizeof(size_t));

				if (bigger == NULL)
				{
					st = tg_error_set(err, TG_ENOMEM, "could not allocate a flow path");
					goto done;
				}
				memcpy(bigger, stack, cap * sizeof(size_t));
				tg_free(ctx, stack);
				stack = bigger;
				cap *= 2;
			}
			stack[depth++] = c;
			c = (size_t) ((long) (c / W) + tg_nbr_dy(k)) * W + (size_t) ((long) (c % W) + tg_nbr_dx(k));
		}
		if (!state[c])
		{
			t[c] = 0;
			state[c] = c == outlet ? 2 : 1;
		}
		while (depth > 0)
		{
			const size_t i = stack[--depth];
			const int	k = route.d8[i];
			const size_t j = (size_t) ((long) (i / W) + tg_nbr_dy(k)) * W + (size_t) ((long) (i % W) + tg_nbr_dx(k));
			const double length = row_dist[(i / W) * 8 + k];
			double		step = tg_step_time(route.z[i] - route.z[j], length,
											tg_factor_at(roughness, i), tg_factor_at(velocity, i),
											p->b, p->min_slope);

			t[i] = TG_DADD(step, t[j]);
			state[i] = state[j];
		}
	}
	if (ctx->stats)
		snprintf(ctx->stats->method, sizeof ctx->stats->method, "path unwinding");
	for (size_t i = 0; i < n; i++)
	{
		const bool	valid = !isnan(route.z[i]);

		if (time)
			time[i] = !valid || (p->has_outlet && state[i] != 2) ? NAN : (float) t[i];
		if (watershed)
			watershed[i] = !valid ? 255 : state[i] == 2 ? 1 : 0;
	}

done:
	tg_free(ctx, stack);
	tg_free(ctx, row_dist);
	tg_free(ctx, state);
	tg_free(ctx, t);
	tg_cpu_route_put(ctx, &route, kept);
	return st;
}
