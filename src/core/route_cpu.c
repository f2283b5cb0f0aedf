/*
 * route_cpu.c — the routing of every cell: where its water goes.
 *
 * 1. The routing surface: the DEM, depression-filled (priority-flood,
 *    epsilon 0) unless the caller routes on the raw DEM.
 * 2. Cells with a lower neighbour drain by the routing's formula on the
 *    surface's gradients (tg_hydro.h).  Outlets with no lower neighbour pass
 *    their water off the raster.
 * 3. Flat cells (no lower neighbour, not outlets) are drained over the flat
 *    by Barnes, Lehman & Mulla (2014): a breadth-first gradient towards the
 *    flat's draining edge T, and one away from higher terrain A, combined as
 *    M = 2 T + (H - A) with H the largest A of the flat; water on a flat moves
 *    down M, which strictly decreases to the draining edge, so every flat that
 *    touches a draining cell drains.  Flats with no draining edge (only in an
 *    unfilled DEM) keep no direction.
 */
#include "tg_backends.h"
#include "cell_list.h"
#include "tg_hydro.h"
#include "tg_pool.h"

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

/* Neighbour k of cell (x, y), or -1 outside the raster. */
static inline int64_t
neighbour(int W, int H, int x, int y, int k)
{
	int			nx = x + tg_nbr_dx(k),
				ny = y + tg_nbr_dy(k);

	return (nx < 0 || ny < 0 || nx >= W || ny >= H) ? -1 : (int64_t) ny * W + nx;
}

/* ------------------------------------------------------------------------
 * Flats, on the call's threads.  Both breadth-first distances grow a level
 * at a time, every task of a level claiming the cells it reaches with an
 * atomic compare-and-swap: a cell's distance is the level it is first
 * reached at, whichever task reaches it.  Flats are labelled by a union-find
 * that links the larger root under the smaller, so a flat's label is its
 * smallest cell, whatever the order of the unions.
 * ------------------------------------------------------------------------ */

typedef struct flat_job
{
	const tg_ctx *ctx;
	const double *z;
	const uint8_t *flat;
	int			W,
				H;
	int32_t    *dist;			/* the distance being grown (towards or away) */
	int32_t    *parent;			/* union-find */
	int32_t    *height;			/* per root: the largest distance away from higher ground */
	const int32_t *away;
	int32_t    *mask;
	/* the frontier of the level being grown, and the next one */
	uint32_t   *cur;
	size_t		ncur;
	uint32_t   *next;
	size_t		nnext;			/* atomic */
	int32_t		level;
	bool		seed_lower;		/* seeds: next to lower (equal, draining) ground, else higher */
} flat_job;

/* Seeds of a distance: flat cells next to a draining cell of equal elevation
 * (towards lower ground) or next to a higher cell (away from higher ground). */
static tg_status
seed_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	flat_job   *j = arg;
	tg_cell_batch b;

	tg_batch_init(&b, j->next, &j->nnext);
	for (int y = y0; y < y1; y++)
		for (int x = 0; x < j->W; x++)
		{
			const size_t i = (size_t) y * j->W + x;

			if (!j->flat[i])
				continue;
			for (int k = 0; k < 8; k++)
			{
				const int64_t ni = neighbour(j->W, j->H, x, y, k);

				if (ni >= 0 && (j->seed_lower ? !j->flat[ni] && j->z[ni] == j->z[i]
								: j->z[ni] > j->z[i]))
				{
					j->dist[i] = 1;
					tg_batch_add(&b, (uint32_t) i);
					break;
				}
			}
		}
	tg_batch_flush(&b);
	return TG_OK;
}

/* One level: the unreached flat cells of equal elevation next to the frontier. */
static tg_status
grow_task(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	flat_job   *j = arg;
	tg_cell_batch b;
	size_t		lo,
				hi;

	tg_batch_init(&b, j->next, &j->nnext);
	tg_list_range(j->ncur, task, &lo, &hi);
	for (size_t f = lo; f < hi; f++)
	{
		const uint32_t c = j->cur[f];
		const int	cx = (int) (c % j->W),
					cy = (int) (c / j->W);

		for (int k = 0; k < 8; k++)
		{
			const int64_t ni = neighbour(j->W, j->H, cx, cy, k);
			int32_t		unreached = 0;

			if (ni < 0 || !j->flat[ni] || j->z[ni] != j->z[c] ||
				__atomic_load_n(&j->dist[ni], __ATOMIC_RELAXED) != 0)
				continue;
			/* on the calling thread alone, nobody else claims cells */
			if (ctx->worker == 0)
				j->dist[ni] = j->level + 1;
			else if (!__atomic_compare_exchange_n(&j->dist[ni], &unreached, j->level + 1, false,
												  __ATOMIC_RELAXED, __ATOMIC_RELAXED))
				continue;
			tg_batch_add(&b, (uint32_t) ni);
		}
	}
	tg_batch_flush(&b);
	return TG_OK;
}

/* Breadth-first distances over the flats from their seeds (dist: 0 = unreached). */
static tg_status
flat_distance(const tg_ctx *ctx, flat_job *j, int32_t *dist, bool seed_lower, tg_error *err)
{
	tg_status	st;

	memset(dist, 0, (size_t) j->W * j->H * sizeof(int32_t));
	j->dist = dist;
	j->seed_lower = seed_lower;
	j->nnext = 0;
	st = tg_parallel_rows(ctx, j->W, j->H, seed_rows, j, err);
	for (j->level = 1; st == TG_OK && j->nnext > 0; j->level++)
	{
		uint32_t   *t = j->cur;

		j->cur = j->next;
		j->ncur = j->nnext;
		j->next = t;
		j->nnext = 0;
		st = tg_parallel(ctx, tg_list_tasks(j->ncur), grow_task, j, err);
	}
	return st;
}

static inline int32_t
find_root(int32_t *parent, int32_t i)
{
	int32_t		p;

	while ((p = __atomic_load_n(&parent[i], __ATOMIC_RELAXED)) != i)
	{
		const int32_t gp = __atomic_load_n(&parent[p], __ATOMIC_RELAXED);

		/* path halving: a stale write only lengthens a path back to a valid one */
		__atomic_compare_exchange_n(&parent[i], &p, gp, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
		i = gp;
	}
	return i;
}

static void
unite(int32_t *parent, int32_t a, int32_t b)
{
	for (;;)
	{
		int32_t		ra = find_root(parent, a),
					rb = find_root(parent, b),
					lo,
					hi;

		if (ra == rb)
			return;
		lo = ra < rb ? ra : rb;
		hi = ra < rb ? rb : ra;
		/* hi is still a root: put it under lo, else someone moved it: retry */
		if (__atomic_compare_exchange_n(&parent[hi], &hi, lo, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			return;
	}
}

/* Union the flat cells of equal elevation with their later neighbours. */
static tg_status
label_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	flat_job   *j = arg;

	for (int y = y0; y < y1; y++)
		for (int x = 0; x < j->W; x++)
		{
			const size_t i = (size_t) y * j->W + x;

			if (!j->flat[i])
				continue;
			for (int k = 0; k < 4; k++)		/* east, south-east, south, south-west */
			{
				const int64_t ni = neighbour(j->W, j->H, x, y, k);

				if (ni >= 0 && j->flat[ni] && j->z[ni] == j->z[i])
					unite(j->parent, (int32_t) i, (int32_t) ni);
			}
		}
	return TG_OK;
}

/* Each flat's largest distance from higher ground, kept at its root. */
static tg_status
height_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	flat_job   *j = arg;

	for (size_t i = (size_t) y0 * j->W; i < (size_t) y1 * j->W; i++)
	{
		int32_t		root,
					old;

		if (!j->flat[i])
			continue;
		root = find_root(j->parent, (int32_t) i);
		old = __atomic_load_n(&j->height[root], __ATOMIC_RELAXED);
		while (j->away[i] > old &&
			   !__atomic_compare_exchange_n(&j->height[root], &old, j->away[i], true,
											__ATOMIC_RELAXED, __ATOMIC_RELAXED))
			;
	}
	return TG_OK;
}

/* M = 2 T + (H - A); undrained flat cells (T = 0) keep 0 */
static tg_status
combine_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	flat_job   *j = arg;

	for (size_t i = (size_t) y0 * j->W; i < (size_t) y1 * j->W; i++)
		if (j->flat[i] && j->mask[i] > 0)
			j->mask[i] = 2 * j->mask[i] +
				(j->away[i] > 0 ? j->height[find_root(j->parent, (int32_t) i)] - j->away[i] : 0);
	return TG_OK;
}

static tg_status
parent_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	flat_job   *j = arg;

	for (size_t i = (size_t) y0 * j->W; i < (size_t) y1 * j->W; i++)
	{
		j->parent[i] = (int32_t) i;
		j->height[i] = 0;
	}
	return TG_OK;
}

/*
 * The flat mask M (0 off flats).  flat[i]: i is a flat cell; a cell next to a
 * flat cell of equal elevation that is not flat itself drains.
 */
static tg_status
flat_mask(const tg_ctx *ctx, const double *z, const uint8_t *flat, int W, int H,
		  int32_t *mask, tg_error *err)
{
	const size_t n = (size_t) W * H;
	flat_job	j;
	int32_t    *away = tg_alloc(ctx, (n ? n : 1) * sizeof(int32_t));
	tg_status	st = TG_OK;

	memset(&j, 0, sizeof j);
	j.ctx = ctx;
	j.z = z;
	j.flat = flat;
	j.W = W;
	j.H = H;
	j.mask = mask;
	j.away = away;
	j.parent = tg_alloc(ctx, (n ? n : 1) * sizeof(int32_t));
	j.height = tg_alloc(ctx, (n ? n : 1) * sizeof(int32_t));
	j.cur = tg_alloc(ctx, (n ? n : 1) * sizeof(uint32_t));
	j.next = tg_alloc(ctx, (n ? n : 1) * sizeof(uint32_t));
	if (!away || !j.parent || !j.height || !j.cur || !j.next)
		st = tg_error_set(err, TG_ENOMEM, "could not allocate flat-resolution buffers (%zu cells)", n);
	if (n > INT32_MAX)
		st = tg_error_set(err, TG_ELIMIT, "flat resolution handles at most %d cells", INT32_MAX);
	/* towards lower terrain: seeds next to a draining cell of equal elevation */
	if (st == TG_OK)
		st = flat_distance(ctx, &j, mask, true, err);
	/* away from higher terrain: seeds next to a strictly higher valid cell */
	if (st == TG_OK)
		st = flat_distance(ctx, &j, away, false, err);
	if (st == TG_OK)
		st = tg_parallel_rows(ctx, W, H, parent_rows, &j, err);
	if (st == TG_OK)
		st = tg_parallel_rows(ctx, W, H, label_rows, &j, err);
	if (st == TG_OK)
		st = tg_parallel_rows(ctx, W, H, height_rows, &j, err);
	if (st == TG_OK)
		st = tg_parallel_rows(ctx, W, H, combine_rows, &j, err);
	tg_free(ctx, away);
	tg_free(ctx, j.parent);
	tg_free(ctx, j.height);
	tg_free(ctx, j.cur);
	tg_free(ctx, j.next);
	return st;
}

/*
 * Flat cells: valid, no valid neighbour strictly lower, not an outlet (the
 * edge or next to nodata).  tg_cpu_route_surface finds them in its gradient
 * pass by the same rule; the routing in strips' tests hold the two together.
 */
void
tg_cpu_flat_cells(const double *z, int W, int H, uint8_t *flat)
{
	int			x,
				y,
				k;

	for (y = 0; y < H; y++)
		for (x = 0; x < W; x++)
		{
			size_t		i = (size_t) y * W + x;
			bool		lower = false;

			flat[i] = 0;
			if (isnan(z[i]))
				continue;
			for (k = 0; k < 8 && !lower; k++)
			{
				int64_t		ni = neighbour(W, H, x, y, k);

				lower = ni >= 0 && z[ni] < z[i];
			}
			flat[i] = !lower && !tg_cpu_is_outlet(z, W, H, x, y);
		}
}

tg_status
tg_cpu_route_build(const tg_ctx *ctx, const tg_band *dem, const tg_flow_params *p,
				   tg_route *r, tg_error *err)
{
	const size_t n = (size_t) dem->width * dem->height;
	double	   *z;
	tg_status	st;

	tg_phase(ctx, "decode");
	st = tg_cpu_decode(ctx, dem, &z, err);
	if (st != TG_OK)
		return st;
	if (p->fill)
	{
		double	   *w = tg_alloc(ctx, (n ? n : 1) * sizeof(double));

		tg_phase(ctx, "fill");
		if (w == NULL)
		{
			tg_free(ctx, z);
			return tg_error_set(err, TG_ENOMEM, "could not allocate %zu bytes for the filled DEM",
								n * sizeof(double));
		}
		st = tg_cpu_fill_surface(ctx, z, dem->width, dem->height, TG_FILL_PRIORITY_FLOOD, 0,
								 false, w, err);
		tg_free(ctx, z);
		if (st != TG_OK)
		{
			tg_free(ctx, w);
			return st;
		}
		z = w;
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

static void
set_shares(tg_route *r, size_t i, const tg_flow_params *p, bool on_flat, const double drop[8],
		   const double dist[8])
{
	const size_t n = (size_t) r->width * r->height;
	float		share[8];

	tg_flow_shares(p->routing, p->exponent, on_flat, drop, dist, share);
	for (int k = 0; k < 8; k++)
		r->frac[(size_t) k * n + i] = share[k];
}

/* Slopes on the surface; flat cells as tg_cpu_flat_cells finds them. */
static tg_status
gradient_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const surface_job *j = arg;
	tg_route   *r = j->r;
	const int	W = r->width,
				H = r->height;

	for (int y = y0; y < y1; y++)
	{
		double		dx,
					dy,
					dist[8];

		tg_row_spacing(&j->p->geom, y, &dx, &dy);
		tg_nbr_distances(dx, dy, dist);
		for (int x = 0; x < W; x++)
		{
			size_t		i = (size_t) y * W + x;
			double		drop[8],
						g[8];
			int			lower = 0;

			j->flat[i] = 0;
			r->d8[i] = TG_NO_DIRECTION;
			if (isnan(r->z[i]))
				continue;
			for (int k = 0; k < 8; k++)
			{
				int64_t		ni = neighbour(W, H, x, y, k);

				drop[k] = (ni < 0 || isnan(r->z[ni])) ? 0.0 : r->z[i] - r->z[ni];
				g[k] = drop[k] / dist[k];
				lower |= g[k] > 0;
			}
			if (!lower)
			{
				/* outlets pass their water off the raster */
				j->flat[i] = !tg_cpu_is_outlet(r->z, W, H, x, y);
				continue;
			}
			r->d8[i] = (uint8_t) tg_d8_choose(g);
			if (r->frac)
				set_shares(r, i, j->p, false, drop, dist);
		}
	}
	return TG_OK;
}

/* Flat cells drain down the mask, in cell units. */
static tg_status
flat_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const surface_job *j = arg;
	tg_route   *r = j->r;
	const int	W = r->width,
				H = r->height;
	double		dist[8];

	tg_flat_distances(dist);
	for (int y = y0; y < y1; y++)
		for (int x = 0; x < W; x++)
		{
			size_t		i = (size_t) y * W + x;
			double		drop[8],
						g[8];

			if (!j->flat[i] || j->mask[i] == 0)
				continue;
			for (int k = 0; k < 8; k++)
			{
				int64_t		ni = neighbour(W, H, x, y, k);
				int32_t		m;

				drop[k] = 0;
				g[k] = 0;
				if (ni < 0 || r->z[ni] != r->z[i])
					continue;
				m = j->flat[ni] ? j->mask[ni] : 0;
				if (j->flat[ni] && m == 0)
					continue;	/* an undrained flat cannot receive */
				drop[k] = (double) (j->mask[i] - m);
				g[k] = drop[k] / dist[k];
			}
			r->d8[i] = (uint8_t) tg_d8_choose(g);
			if (r->frac)
				set_shares(r, i, j->p, true, drop, dist);
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
	if (multiple)
		memset(r->frac, 0, 8 * n * sizeof(float));
	j.p = p;
	j.r = r;
	j.flat = flat;
	j.mask = mask;
	st = tg_parallel_rows(ctx, W, H, gradient_rows, &j, err);
	if (st == TG_OK)
		st = flat_mask(ctx, r->z, flat, W, H, mask, err);
	if (st != TG_OK)
		goto fail;
	if (given)
		for (size_t g = 0; g < given->count; g++)
			mask[given->cell[g]] = given->mask[g];
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
