/*
 * catchment_cpu.c — RUSLE soil loss and D8 travel time on the CPU, on the
 * routing of route_cpu.c.  The per-cell formulas are hydro.h's, shared
 * with cuda/catchment.cu.
 */
#include "hydro/catchment/catchment.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

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
	const tg_accum_method method = p->method;	/* resolved by the dispatcher */
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
 * Travel time: a cell's time is its step time plus its receiver's, summed
 * in that order, so cells are finished from the ends of their paths upward:
 * level 0 are the ends (cells without a receiver, and the outlet), level
 * k + 1 the donors of level k, each level's cells at once.
 */
typedef struct travel_job
{
	const tg_travel_params *p;
	const tg_cell_factor *roughness;
	const tg_cell_factor *velocity;
	const tg_route *route;
	size_t		outlet;			/* n without one */
	const double *row_dist;		/* 8 neighbour distances per row */
	double	   *t;
	uint8_t    *state;			/* 1 done, 2 done and reaches the outlet */
	uint32_t   *cur;
	size_t		ncur;
	uint32_t   *next;
	size_t		nnext;			/* atomic */
	float	   *time;
	uint8_t    *watershed;
} travel_job;

static tg_status
travel_ends(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	travel_job *j = arg;
	const tg_route *r = j->route;
	tg_cell_batch b;

	tg_batch_init(&b, j->next, &j->nnext);
	for (size_t i = (size_t) y0 * r->width; i < (size_t) y1 * r->width; i++)
	{
		j->state[i] = 0;
		if (isnan(r->z[i]) || (r->d8[i] != TG_NO_DIRECTION && i != j->outlet))
			continue;
		j->t[i] = 0;
		j->state[i] = i == j->outlet ? 2 : 1;
		tg_batch_add(&b, (uint32_t) i);
	}
	tg_batch_flush(&b);
	return TG_OK;
}

/* The donors of a level: each one step further from its path's end. */
static tg_status
travel_up(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	travel_job *j = arg;
	const tg_route *r = j->route;
	const int	W = r->width,
				H = r->height;
	tg_cell_batch b;
	size_t		lo,
				hi;

	tg_batch_init(&b, j->next, &j->nnext);
	tg_list_range(j->ncur, task, &lo, &hi);
	for (size_t f = lo; f < hi; f++)
	{
		const uint32_t c = j->cur[f];
		const int	cx = (int) (c % W),
					cy = (int) (c / W);

		for (int k = 0; k < 8; k++)
		{
			const int	nx = cx + tg_nbr_dx(k),
						ny = cy + tg_nbr_dy(k);
			size_t		i;
			int			back;

			if (nx < 0 || ny < 0 || nx >= W || ny >= H)
				continue;
			i = (size_t) ny * W + nx;
			back = tg_nbr_opposite(k);
			if (r->d8[i] != back || i == j->outlet)
				continue;
			j->t[i] = TG_DADD(tg_step_time(r->z[i] - r->z[c], j->row_dist[(size_t) ny * 8 + back],
										   tg_factor_at(j->roughness, i), tg_factor_at(j->velocity, i),
										   j->p->b, j->p->min_slope),
							  j->t[c]);
			j->state[i] = j->state[c];
			tg_batch_add(&b, (uint32_t) i);
		}
	}
	tg_batch_flush(&b);
	return TG_OK;
}

static tg_status
travel_out(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const travel_job *j = arg;
	const tg_route *r = j->route;

	for (size_t i = (size_t) y0 * r->width; i < (size_t) y1 * r->width; i++)
	{
		const bool	valid = !isnan(r->z[i]);

		if (j->time)
			j->time[i] = !valid || (j->p->has_outlet && j->state[i] != 2) ? NAN : (float) j->t[i];
		if (j->watershed)
			j->watershed[i] = !valid ? 255 : j->state[i] == 2 ? 1 : 0;
	}
	return TG_OK;
}

tg_status
tg_cpu_travel_time(const tg_ctx *ctx, const tg_band *dem, const tg_travel_params *p,
				   const tg_cell_factor *roughness, const tg_cell_factor *velocity,
				   float *time, uint8_t *watershed, tg_error *err)
{
	const int	W = dem->width,
				H = dem->height;
	const size_t n = (size_t) W * H;
	travel_job	j;
	double	   *row_dist = NULL;
	tg_route	route;
	bool		kept;
	tg_status	st;

	st = tg_cpu_route_get(ctx, dem, &p->flow, &route, &kept, err);
	if (st != TG_OK)
		return st;
	memset(&j, 0, sizeof j);
	j.p = p;
	j.roughness = roughness;
	j.velocity = velocity;
	j.route = &route;
	j.outlet = p->has_outlet ? (size_t) p->outlet_row * W + p->outlet_col : n;
	j.time = time;
	j.watershed = watershed;
	j.t = tg_alloc(ctx, (n ? n : 1) * sizeof(double));
	j.state = tg_alloc(ctx, n ? n : 1);
	j.cur = tg_alloc(ctx, (n ? n : 1) * sizeof(uint32_t));
	j.next = tg_alloc(ctx, (n ? n : 1) * sizeof(uint32_t));
	row_dist = tg_alloc(ctx, ((size_t) H * 8 + 1) * sizeof(double));
	if (!j.t || !j.state || !j.cur || !j.next || !row_dist)
	{
		st = tg_error_set(err, TG_ENOMEM, "could not allocate travel times");
		goto done;
	}
	for (int y = 0; y < H; y++)
	{
		double		dx,
					dy;

		tg_row_spacing(&p->flow.geom, y, &dx, &dy);
		tg_nbr_distances(dx, dy, row_dist + (size_t) y * 8);
	}
	j.row_dist = row_dist;
	st = tg_parallel_rows(ctx, W, H, travel_ends, &j, err);
	while (st == TG_OK && j.nnext > 0)
	{
		uint32_t   *swap = j.cur;

		j.cur = j.next;
		j.ncur = j.nnext;
		j.next = swap;
		j.nnext = 0;
		st = tg_parallel(ctx, tg_list_tasks(j.ncur), travel_up, &j, err);
	}
	if (st == TG_OK)
		st = tg_parallel_rows(ctx, W, H, travel_out, &j, err);
	if (ctx->stats)
		snprintf(ctx->stats->method, sizeof ctx->stats->method, "path unwinding");

done:
	tg_free(ctx, row_dist);
	tg_free(ctx, j.t);
	tg_free(ctx, j.state);
	tg_free(ctx, j.cur);
	tg_free(ctx, j.next);
	tg_cpu_route_put(ctx, &route, kept);
	return st;
}
