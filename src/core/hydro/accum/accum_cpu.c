/*
 * accum_cpu.c — flow accumulation on the CPU, by the four strategies of Sten
 * et al. (2016), on the call's threads, over the routing of route_cpu.c.
 *
 * Every strategy but flow transfer computes a cell's value the same way, by
 * pulling from its donors in neighbour order once they are final:
 *     acc(c) = w(c) + sum over donors n (k = 0..7) of acc(n) share(n -> c)
 * so they agree bit for bit; they differ in how they find an order in which
 * donors come first.
 *
 *   indegree             Kahn's algorithm (Qin & Zhan 2012's graph strategy):
 *                        a cell whose donors are all done is finished, which
 *                        may free its receivers; followed depth-first.
 *   topological          cells grouped by level (longest donor chain), found
 *                        by frontier rounds, then accumulated level by level.
 *   dependency-transfer  rounds over the pending cells; a cell whose donors
 *                        were all done by the end of the previous round
 *                        completes in this one (one level per round).
 *   flow-transfer        every cell starts with its weight in transit; each
 *                        round moves all water in transit one cell downstream
 *                        (each receiver pulls it from its donors in neighbour
 *                        order) and adds it where it arrives, until none is
 *                        left.  Sums in another order: multiple-flow results
 *                        agree with the others to rounding (D8 exactly).
 *
 * fdd8's shares depend on the donor's own accumulation (D8 once it reaches the
 * threshold), which the pull order provides; flow transfer moves water before
 * a cell's total is known, so it cannot route fdd8.
 */
#include "hydro/accum/accum.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static inline bool
drains_to(const tg_route *r, size_t ni, int k)
{
	tg_route_view v = tg_cpu_route_view(r, 0);

	return tg_route_drains_to(&v, ni, k);
}

static inline double
pull(const tg_route *r, const tg_flow_params *p, const double *weight, const double *acc,
	 size_t i)
{
	tg_route_view v = tg_cpu_route_view(r, p->threshold);

	return tg_route_pull(&v, weight, acc, i);
}

static inline double
share_of(const tg_route *r, const tg_flow_params *p, size_t ni, int k, const double *acc)
{
	tg_route_view v = tg_cpu_route_view(r, p->threshold);

	return tg_route_share(&v, ni, k, acc[ni]);
}

typedef struct donors_job
{
	const tg_route *r;
	uint8_t    *indeg;
	uint8_t    *donors;			/* or NULL: each cell's donors (bit k: neighbour k) */
} donors_job;

static tg_status
donor_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const donors_job *d = arg;
	const tg_route *r = d->r;
	const int	W = r->width,
				H = r->height;

	for (int y = y0; y < y1; y++)
		for (int x = 0; x < W; x++)
		{
			uint8_t		c = 0,
						mask = 0;

			for (int k = 0; k < 8; k++)
			{
				int			nx = x + tg_nbr_dx(k),
							ny = y + tg_nbr_dy(k);

				if (nx >= 0 && ny >= 0 && nx < W && ny < H &&
					drains_to(r, (size_t) ny * W + nx, tg_nbr_opposite(k)))
				{
					c++;
					mask |= (uint8_t) (1u << k);
				}
			}
			d->indeg[(size_t) y * W + x] = c;
			if (d->donors)
				d->donors[(size_t) y * W + x] = mask;
		}
	return TG_OK;
}

/* Number of donors of each cell, and (donors not NULL) which they are. */
static tg_status
count_donors(const tg_ctx *ctx, const tg_route *r, uint8_t *indeg, uint8_t *donors, tg_error *err)
{
	donors_job	d = {r, indeg, donors};

	return tg_parallel_rows(ctx, r->width, r->height, donor_rows, &d, err);
}

/*
 * Indegree (Kahn's algorithm): a cell whose donors are all done is
 * finished, which may free its receivers.  Each task takes the sources
 * (valid cells without donors) of its rows in raster order and follows what
 * they free downstream depth-first (a stack), so the work follows flow paths
 * and stays in cache.  Tasks run at once: a receiver's count of pending
 * donors is decremented atomically (acquire-release, so the donors' values
 * are visible), and the task that frees it finishes it.  Every cell pulls
 * from its donors in neighbour order once they are final, so the sums do not
 * depend on which task finished what.
 */
#define SOURCE 0xFE				/* a source no task has taken yet */
#define TAKEN 0xFF

typedef struct indegree_job
{
	const tg_route *r;
	const tg_flow_params *p;
	const double *weight;
	double	   *acc;
	uint8_t    *indeg;
	uint8_t    *donors;			/* D8: each cell's donors, counted once (NULL otherwise) */
	int			rows;			/* per task */
} indegree_job;

/*
 * Cell c's value, and its receivers counted down: those it frees pushed on
 * the stack.  D8 reads the donors counted before and its one receiver; the
 * other routings look at every neighbour.
 */
static inline void
finish_cell(const indegree_job *j, const tg_route_view *v, uint32_t c, uint32_t *stack, size_t *top)
{
	const tg_route *r = j->r;
	const int	W = r->width,
				H = r->height;
	const int	cx = (int) (c % W),
				cy = (int) (c / W);

	if (j->donors)
	{
		const int	k = r->d8[c];

		j->acc[c] = tg_route_pull_own(v, j->weight ? j->weight[c] : 1.0, j->acc, c, j->donors[c], NULL);
		if (k != TG_NO_DIRECTION)
		{
			const int	nx = cx + tg_nbr_dx(k),
						ny = cy + tg_nbr_dy(k);
			const size_t ni = (size_t) ny * W + nx;

			if (nx >= 0 && ny >= 0 && nx < W && ny < H &&
				__atomic_sub_fetch(&j->indeg[ni], 1, __ATOMIC_ACQ_REL) == 0)
				stack[(*top)++] = (uint32_t) ni;
		}
		return;
	}
	j->acc[c] = pull(r, j->p, j->weight, j->acc, c);
	for (int k = 0; k < 8; k++)
	{
		const int64_t ni = tg_nbr_cell(W, H, cx, cy, k);

		if (ni < 0 || !drains_to(r, c, k))
			continue;
		if (__atomic_sub_fetch(&j->indeg[ni], 1, __ATOMIC_ACQ_REL) == 0)
			stack[(*top)++] = (uint32_t) ni;
	}
}

static tg_status
indegree_task(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	const indegree_job *j = arg;
	const tg_route *r = j->r;
	const int	W = r->width,
				H = r->height;
	const size_t first = (size_t) task * j->rows * W;
	const size_t end = (size_t) ((task + 1) * j->rows < H ? (task + 1) * j->rows : H) * W;
	const tg_route_view v = tg_cpu_route_view(r, j->p->threshold);
	size_t		cap = 1024,
				done = 0;
	uint32_t   *stack = tg_alloc(ctx, cap * sizeof(uint32_t));
	tg_status	st = TG_OK;

	if (stack == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate an accumulation stack");
	for (size_t i = first; i < end && st == TG_OK; i++)
	{
		size_t		top = 0;

		/* other tasks count their donors down concurrently: atomic, though a source has none */
		if (__atomic_load_n(&j->indeg[i], __ATOMIC_RELAXED) != SOURCE)
			continue;
		__atomic_store_n(&j->indeg[i], TAKEN, __ATOMIC_RELAXED);
		stack[top++] = (uint32_t) i;
		while (top > 0)
		{
			const uint32_t c = stack[--top];

			/* room for every receiver a cell may free */
			if (cap - top < 8)
			{
				uint32_t   *bigger = tg_alloc(ctx, 2 * cap * sizeof(uint32_t));

				if (bigger == NULL)
				{
					st = tg_error_set(err, TG_ENOMEM, "could not grow an accumulation stack");
					break;
				}
				memcpy(bigger, stack, top * sizeof(uint32_t));
				tg_free(ctx, stack);
				stack = bigger;
				cap *= 2;
			}
			finish_cell(j, &v, c, stack, &top);
			if (++done % TG_CANCEL_EVERY == 0 && tg_canceled(ctx))
			{
				st = tg_error_set(err, TG_ECANCELED, "flow accumulation canceled");
				break;
			}
		}
	}
	tg_free(ctx, stack);
	return st;
}

/* Sources (valid cells without donors) marked for the tasks to take. */
static tg_status
mark_source_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const indegree_job *j = arg;

	for (size_t i = (size_t) y0 * j->r->width; i < (size_t) y1 * j->r->width; i++)
		if (j->indeg[i] == 0)
			j->indeg[i] = isnan(j->r->z[i]) ? TAKEN : SOURCE;
	return TG_OK;
}

static tg_status
accumulate_indegree(const tg_ctx *ctx, const tg_route *r, const tg_flow_params *p,
					const double *weight, double *acc, tg_error *err)
{
	const int	W = r->width,
				H = r->height;
	const size_t n = (size_t) W * H;
	indegree_job j = {r, p, weight, acc, tg_alloc(ctx, n ? n : 1), NULL, 1};
	tg_status	st;

	if (r->routing == TG_ROUTE_D8)
		j.donors = tg_alloc(ctx, n ? n : 1);
	if (j.indeg == NULL || (r->routing == TG_ROUTE_D8 && j.donors == NULL))
	{
		tg_free(ctx, j.indeg);
		tg_free(ctx, j.donors);
		return tg_error_set(err, TG_ENOMEM, "could not allocate accumulation buffers (%zu cells)", n);
	}
	if (W > 0 && W < TG_TASK_CELLS)
		j.rows = TG_TASK_CELLS / W;
	st = count_donors(ctx, r, j.indeg, j.donors, err);
	if (st == TG_OK)
		st = tg_parallel_rows(ctx, W, H, mark_source_rows, &j, err);
	if (st == TG_OK)
		st = tg_parallel(ctx, (H + j.rows - 1) / j.rows, indegree_task, &j, err);
	tg_free(ctx, j.indeg);
	tg_free(ctx, j.donors);
	return st;
}

/* ------------------------------------------------------------------------
 * Topological: levels, then level by level
 * ------------------------------------------------------------------------ */
typedef struct levels_job
{
	const tg_route *r;
	uint8_t    *indeg;
	uint32_t   *order;
	size_t		tail;			/* atomic: cells placed in order[] */
	size_t		from,
				to;				/* the level being expanded: order[from .. to) */
} levels_job;

static tg_status
source_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	levels_job *j = arg;
	tg_cell_batch b;

	tg_batch_init(&b, j->order, &j->tail);

	for (size_t i = (size_t) y0 * j->r->width; i < (size_t) y1 * j->r->width; i++)
		if (!isnan(j->r->z[i]) && j->indeg[i] == 0)
			tg_batch_add(&b, (uint32_t) i);
	tg_batch_flush(&b);
	return TG_OK;
}

/* The receivers a level frees make the next level. */
static tg_status
expand_task(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	levels_job *j = arg;
	const tg_route *r = j->r;
	const int	W = r->width;
	tg_cell_batch b;
	size_t		lo,
				hi;

	tg_batch_init(&b, j->order, &j->tail);
	tg_list_range(j->to - j->from, task, &lo, &hi);
	for (size_t f = j->from + lo; f < j->from + hi; f++)
	{
		const uint32_t c = j->order[f];
		const int	cx = (int) (c % W),
					cy = (int) (c / W);

		for (int k = 0; k < 8; k++)
		{
			const int	nx = cx + tg_nbr_dx(k),
						ny = cy + tg_nbr_dy(k);
			size_t		ni;

			if (nx < 0 || ny < 0 || nx >= W || ny >= r->height || !drains_to(r, c, k))
				continue;
			ni = (size_t) ny * W + nx;
			if (__atomic_sub_fetch(&j->indeg[ni], 1, __ATOMIC_RELAXED) == 0)
				tg_batch_add(&b, (uint32_t) ni);
		}
	}
	tg_batch_flush(&b);
	return TG_OK;
}

/*
 * Kahn's frontier rounds: order[0, *count) gets the valid cells level by
 * level (a cell's level is the longest path to it from a cell without
 * donors), level_start (room for cells + 1) where each level begins, ending
 * with *count.  Within a level the order depends on the threads.
 */
tg_status
tg_cpu_route_levels(const tg_ctx *ctx, const tg_route *r, uint32_t *order, size_t *count,
					uint32_t *level_start, int *levels, tg_error *err)
{
	const size_t n = (size_t) r->width * r->height;
	levels_job	j = {r, tg_alloc(ctx, n ? n : 1), order, 0, 0, 0};
	tg_status	st;

	*count = 0;
	*levels = 0;
	if (j.indeg == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate donor counts (%zu cells)", n);
	st = count_donors(ctx, r, j.indeg, NULL, err);
	if (st == TG_OK)
		st = tg_parallel_rows(ctx, r->width, r->height, source_rows, &j, err);
	level_start[0] = 0;
	while (st == TG_OK && j.tail > j.to)
	{
		j.from = j.to;
		j.to = j.tail;
		level_start[++*levels] = (uint32_t) j.to;
		st = tg_parallel(ctx, tg_list_tasks(j.to - j.from), expand_task, &j, err);
	}
	*count = j.tail;
	tg_free(ctx, j.indeg);
	return st;
}

typedef struct replay_job
{
	const tg_route *r;
	const tg_flow_params *p;
	const double *weight;
	double	   *acc;
	const uint32_t *cells;
	size_t		len;
} replay_job;

static tg_status
replay_task(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	const replay_job *j = arg;
	size_t		lo,
				hi;

	tg_list_range(j->len, task, &lo, &hi);
	for (size_t f = lo; f < hi; f++)
		j->acc[j->cells[f]] = pull(j->r, j->p, j->weight, j->acc, j->cells[f]);
	return TG_OK;
}

/*
 * Topological: frontier rounds of Kahn's algorithm give every cell its level;
 * the cells of each level, whose donors are all in earlier levels, are then
 * accumulated at once, a level after the other.  The order depends only on
 * the routing: when the routing was kept from an earlier call
 * (route_cache.c), its order is kept beside it and replayed.
 */
static tg_status
accumulate_topological(const tg_ctx *ctx, const tg_route *r, const tg_flow_params *p,
					   const double *weight, double *acc, int *levels, tg_error *err)
{
	const size_t n = (size_t) r->width * r->height;
	const uint32_t *order,
			   *level_start;
	uint32_t   *own_order = NULL,
			   *own_start = NULL;
	replay_job	j = {r, p, weight, acc, NULL, 0};
	size_t		count;
	tg_status	st = TG_OK;

	order = tg_cpu_route_order(r, &count, levels, &level_start);
	if (order == NULL)
	{
		own_order = tg_alloc(ctx, (n ? n : 1) * sizeof(uint32_t));
		own_start = tg_alloc(ctx, (n + 1) * sizeof(uint32_t));
		if (own_order == NULL || own_start == NULL)
			st = tg_error_set(err, TG_ENOMEM, "could not allocate accumulation buffers (%zu cells)", n);
		else
			st = tg_cpu_route_levels(ctx, r, own_order, &count, own_start, levels, err);
		order = own_order;
		level_start = own_start;
	}
	for (int l = 0; st == TG_OK && l < *levels; l++)
	{
		j.cells = order + level_start[l];
		j.len = level_start[l + 1] - level_start[l];
		st = tg_parallel(ctx, tg_list_tasks(j.len), replay_task, &j, err);
	}
	if (st == TG_OK && own_order)
		tg_cpu_route_keep_order(ctx, r, own_order, own_start, count, *levels);
	tg_free(ctx, own_order);
	tg_free(ctx, own_start);
	return st;
}

/* ------------------------------------------------------------------------
 * Dependency transfer: rounds over the pending cells
 * ------------------------------------------------------------------------ */
typedef struct dependency_job
{
	const tg_route *r;
	const tg_flow_params *p;
	const double *weight;
	double	   *acc;
	uint8_t    *done;
	const uint32_t *pending;
	size_t		npending;
	uint32_t   *kept;			/* per task: its still pending cells, from its first slot */
	uint32_t   *completed;		/* per task: the cells it completed, likewise */
	size_t	   *nkept;			/* per task */
	size_t	   *ncompleted;		/* per task */
} dependency_job;

/* A cell whose donors were all done before this round completes in it. */
static tg_status
dependency_task(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	const dependency_job *j = arg;
	const tg_route *r = j->r;
	const int	W = r->width,
				H = r->height;
	size_t		lo,
				hi,
				kept = 0,
				completed = 0;

	tg_list_range(j->npending, task, &lo, &hi);
	for (size_t f = lo; f < hi; f++)
	{
		const uint32_t c = j->pending[f];
		const int	cx = (int) (c % W),
					cy = (int) (c / W);
		bool		ready = true;

		for (int k = 0; k < 8 && ready; k++)
		{
			const int64_t ni = tg_nbr_cell(W, H, cx, cy, k);

			if (ni < 0)
				continue;
			if (!j->done[ni] && drains_to(r, ni, tg_nbr_opposite(k)))
				ready = false;
		}
		if (ready)
		{
			j->acc[c] = pull(r, j->p, j->weight, j->acc, c);
			j->completed[lo + completed++] = c;
		}
		else
			j->kept[lo + kept++] = c;
	}
	j->nkept[task] = kept;
	j->ncompleted[task] = completed;
	return TG_OK;
}

/* What completed in a round becomes visible to the next. */
static tg_status
mark_done_task(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	const dependency_job *j = arg;
	size_t		lo,
				hi;

	tg_list_range(j->npending, task, &lo, &hi);
	for (size_t f = 0; f < j->ncompleted[task]; f++)
		j->done[j->completed[lo + f]] = 1;
	return TG_OK;
}

static tg_status
accumulate_dependency_transfer(const tg_ctx *ctx, const tg_route *r, const tg_flow_params *p,
							   const double *weight, double *acc, int *rounds, tg_error *err)
{
	const size_t n = (size_t) r->width * r->height;
	const int64_t most_tasks = tg_list_tasks(n);
	uint32_t   *pending = tg_alloc(ctx, (n ? n : 1) * sizeof(uint32_t));
	dependency_job j = {r, p, weight, acc, tg_alloc(ctx, n ? n : 1), pending, 0,
		tg_alloc(ctx, (n ? n : 1) * sizeof(uint32_t)), tg_alloc(ctx, (n ? n : 1) * sizeof(uint32_t)),
		tg_alloc(ctx, (most_tasks + 1) * sizeof(size_t)), tg_alloc(ctx, (most_tasks + 1) * sizeof(size_t))};
	tg_status	st = TG_OK;

	if (!pending || !j.done || !j.kept || !j.completed || !j.nkept || !j.ncompleted)
	{
		st = tg_error_set(err, TG_ENOMEM, "could not allocate accumulation buffers (%zu cells)", n);
		goto out;
	}
	for (size_t i = 0; i < n; i++)
	{
		j.done[i] = isnan(r->z[i]);
		if (!j.done[i])
			pending[j.npending++] = (uint32_t) i;
	}
	for (*rounds = 0; j.npending > 0; (*rounds)++)
	{
		const int64_t tasks = tg_list_tasks(j.npending);
		size_t		still = 0,
					completed = 0;

		st = tg_parallel(ctx, tasks, dependency_task, &j, err);
		if (st == TG_OK)
			st = tg_parallel(ctx, tasks, mark_done_task, &j, err);
		if (st != TG_OK)
			goto out;
		/* the cells still pending, in the order they were */
		for (int64_t t = 0; t < tasks; t++)
		{
			memmove(pending + still, j.kept + (size_t) t * TG_LIST_TASK, j.nkept[t] * sizeof(uint32_t));
			still += j.nkept[t];
			completed += j.ncompleted[t];
		}
		if (completed == 0)
		{
			st = tg_error_set(err, TG_EDATA, "flow routing has a cycle");
			goto out;
		}
		j.npending = still;
	}

out:
	tg_free(ctx, pending);
	tg_free(ctx, j.done);
	tg_free(ctx, j.kept);
	tg_free(ctx, j.completed);
	tg_free(ctx, j.nkept);
	tg_free(ctx, j.ncompleted);
	return st;
}

/* ------------------------------------------------------------------------
 * Flow transfer: the water in transit moves one cell a round
 * ------------------------------------------------------------------------ */
typedef struct transfer_job
{
	const tg_route *r;
	const tg_flow_params *p;
	double	   *acc;
	double	   *flow;			/* water in transit at each cell */
	double	   *arriving;		/* what reaches each cell of `next` this round */
	uint8_t    *queued;
	const uint32_t *active;		/* cells with water in transit */
	size_t		nactive;
	uint32_t   *next;			/* the cells it reaches */
	size_t		nnext;			/* atomic */
} transfer_job;

/* The receivers of the water in transit, each once. */
static tg_status
receivers_task(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	transfer_job *j = arg;
	const tg_route *r = j->r;
	const int	W = r->width,
				H = r->height;
	tg_cell_batch b;
	size_t		lo,
				hi;

	tg_batch_init(&b, j->next, &j->nnext);
	tg_list_range(j->nactive, task, &lo, &hi);
	for (size_t f = lo; f < hi; f++)
	{
		const uint32_t c = j->active[f];
		const int	cx = (int) (c % W),
					cy = (int) (c / W);

		for (int k = 0; k < 8; k++)
		{
			const int64_t ni = tg_nbr_cell(W, H, cx, cy, k);

			if (ni < 0 || !(share_of(r, j->p, c, k, j->acc) > 0))
				continue;
			if (__atomic_exchange_n(&j->queued[ni], 1, __ATOMIC_RELAXED) == 0)
				tg_batch_add(&b, (uint32_t) ni);
		}
	}
	tg_batch_flush(&b);
	return TG_OK;
}

/* Each receiving cell pulls this round's water from its donors, in neighbour order. */
static tg_status
arrive_task(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	transfer_job *j = arg;
	const tg_route *r = j->r;
	const int	W = r->width,
				H = r->height;
	size_t		lo,
				hi;

	tg_list_range(j->nnext, task, &lo, &hi);
	for (size_t f = lo; f < hi; f++)
	{
		const uint32_t c = j->next[f];
		const int	cx = (int) (c % W),
					cy = (int) (c / W);
		double		in = 0;

		for (int k = 0; k < 8; k++)
		{
			const int	nx = cx + tg_nbr_dx(k),
						ny = cy + tg_nbr_dy(k);
			size_t		ni;
			double		s;

			if (nx < 0 || ny < 0 || nx >= W || ny >= H)
				continue;
			ni = (size_t) ny * W + nx;
			s = share_of(r, j->p, ni, tg_nbr_opposite(k), j->acc);
			if (s > 0 && j->flow[ni] != 0)
				in = TG_DADD(in, TG_DMUL(j->flow[ni], s));
		}
		j->arriving[c] = in;
	}
	return TG_OK;
}

/* The water moved on: the senders keep none, the receivers add what arrived. */
static tg_status
sent_task(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	transfer_job *j = arg;
	size_t		lo,
				hi;

	tg_list_range(j->nactive, task, &lo, &hi);
	for (size_t f = lo; f < hi; f++)
		j->flow[j->active[f]] = 0;
	return TG_OK;
}

static tg_status
received_task(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	transfer_job *j = arg;
	size_t		lo,
				hi;

	tg_list_range(j->nnext, task, &lo, &hi);
	for (size_t f = lo; f < hi; f++)
	{
		const uint32_t c = j->next[f];

		j->acc[c] += j->arriving[c];
		j->flow[c] = j->arriving[c];
		j->queued[c] = 0;
	}
	return TG_OK;
}

static tg_status
accumulate_flow_transfer(const tg_ctx *ctx, const tg_route *r, const tg_flow_params *p,
						 const double *weight, double *acc, int *rounds, tg_error *err)
{
	const size_t n = (size_t) r->width * r->height;
	uint32_t   *active = tg_alloc(ctx, (n ? n : 1) * sizeof(uint32_t));
	transfer_job j = {r, p, acc, tg_alloc(ctx, (n ? n : 1) * sizeof(double)),
		tg_alloc(ctx, (n ? n : 1) * sizeof(double)), tg_alloc(ctx, n ? n : 1), active, 0,
		tg_alloc(ctx, (n ? n : 1) * sizeof(uint32_t)), 0};
	tg_status	st = TG_OK;

	if (!active || !j.flow || !j.arriving || !j.queued || !j.next)
	{
		st = tg_error_set(err, TG_ENOMEM, "could not allocate accumulation buffers (%zu cells)", n);
		goto out;
	}
	memset(j.queued, 0, n);
	for (size_t i = 0; i < n; i++)
	{
		const double w = isnan(r->z[i]) ? 0 : weight ? weight[i] : 1.0;

		acc[i] = isnan(r->z[i]) ? NAN : w;
		j.flow[i] = w;
		if (w != 0)
			active[j.nactive++] = (uint32_t) i;
	}
	for (*rounds = 0; j.nactive > 0; (*rounds)++)
	{
		uint32_t   *t;

		j.nnext = 0;
		st = tg_parallel(ctx, tg_list_tasks(j.nactive), receivers_task, &j, err);
		if (st == TG_OK)
			st = tg_parallel(ctx, tg_list_tasks(j.nnext), arrive_task, &j, err);
		if (st == TG_OK)
			st = tg_parallel(ctx, tg_list_tasks(j.nactive), sent_task, &j, err);
		if (st == TG_OK)
			st = tg_parallel(ctx, tg_list_tasks(j.nnext), received_task, &j, err);
		if (st != TG_OK)
			goto out;
		t = (uint32_t *) j.active;
		j.active = j.next;
		j.nactive = j.nnext;
		j.next = t;
	}

out:
	tg_free(ctx, (void *) j.active);
	tg_free(ctx, j.next);
	tg_free(ctx, j.flow);
	tg_free(ctx, j.arriving);
	tg_free(ctx, j.queued);
	return st;
}

typedef struct clear_job
{
	const tg_route *r;
	double	   *acc;
} clear_job;

static tg_status
clear_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const clear_job *j = arg;
	const size_t i0 = (size_t) y0 * j->r->width,
				i1 = (size_t) y1 * j->r->width;

	for (size_t i = i0; i < i1; i++)
		j->acc[i] = isnan(j->r->z[i]) ? NAN : 0.0;
	return TG_OK;
}

tg_status
tg_cpu_accumulate(const tg_ctx *ctx, const tg_route *r, const tg_flow_params *p,
				  const double *weight, tg_accum_method method, double *acc,
				  tg_error *err)
{
	clear_job	c = {r, acc};
	int			rounds = 0;
	tg_status	st;

	tg_phase(ctx, "accumulation");
	st = tg_parallel_rows(ctx, r->width, r->height, clear_rows, &c, err);
	if (st != TG_OK)
		return st;
	switch (method)
	{
		case TG_ACC_FLOW_TRANSFER:
			st = accumulate_flow_transfer(ctx, r, p, weight, acc, &rounds, err);
			break;
		case TG_ACC_DEPENDENCY_TRANSFER:
			st = accumulate_dependency_transfer(ctx, r, p, weight, acc, &rounds, err);
			break;
		case TG_ACC_TOPOLOGICAL:
			st = accumulate_topological(ctx, r, p, weight, acc, &rounds, err);
			break;
		case TG_ACC_INDEGREE:
			st = accumulate_indegree(ctx, r, p, weight, acc, err);
			break;
		default:
			st = tg_error_set(err, TG_EINVAL, "accumulation method %s does not run on the CPU",
							  tg_accum_method_name(method));
			break;
	}
	if (ctx->stats)
		ctx->stats->iterations = rounds;
	return st;
}

/* ------------------------------------------------------------------------
 * The receivers of a routing, as tg_hydrology exports them
 * ------------------------------------------------------------------------ */
void
tg_route_receivers(const tg_route_view *v, const double *acc, size_t i0, size_t i1, uint16_t *receivers)
{
	for (size_t i = i0; i < i1; i++)
	{
		uint16_t	mask = 0;

		if (isnan(acc[i]))
			mask = TG_NODATA_RECEIVERS;
		else
			for (int k = 0; k < 8; k++)
				if (tg_route_share(v, i, k, acc[i]) > 0)
					mask |= (uint16_t) (1u << k);
		receivers[i] = mask;
	}
}

typedef struct receivers_job
{
	const tg_route_view *v;
	const double *acc;
	size_t		skip;
	uint16_t   *out;
} receivers_job;

static tg_status
receiver_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const receivers_job *j = arg;
	const size_t W = (size_t) j->v->width;

	tg_route_receivers(j->v, j->acc, j->skip + (size_t) y0 * W, j->skip + (size_t) y1 * W, j->out);
	return TG_OK;
}

tg_status
tg_route_receivers_rows(const tg_ctx *ctx, const tg_route_view *v, const double *acc, size_t skip, int nrows,
						uint16_t *receivers, tg_error *err)
{
	receivers_job j = {v, acc, skip, receivers};

	return tg_parallel_rows(ctx, v->width, nrows, receiver_rows, &j, err);
}
