/*
 * accum_cpu.c — flow accumulation on the CPU, by the four strategies of Sten
 * et al. (2016), sequential here, over the routing of route_cpu.c.
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
 *                        and adds it where it arrives, until none is left.
 *                        Sums in another order: multiple-flow results agree
 *                        with the others to rounding (D8 exactly).
 *
 * fdd8's shares depend on the donor's own accumulation (D8 once it reaches the
 * threshold), which the pull order provides; flow transfer moves water before
 * a cell's total is known, so it cannot route fdd8.
 */
#include "tg_backends.h"
#include "tg_hydro.h"
#include "tg_pool.h"

#include <math.h>
#include <string.h>

#define CANCEL_EVERY 65536

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
			uint8_t		c = 0;

			for (int k = 0; k < 8; k++)
			{
				int			nx = x + tg_nbr_dx(k),
							ny = y + tg_nbr_dy(k);

				if (nx >= 0 && ny >= 0 && nx < W && ny < H &&
					drains_to(r, (size_t) ny * W + nx, tg_nbr_opposite(k)))
					c++;
			}
			d->indeg[(size_t) y * W + x] = c;
		}
	return TG_OK;
}

/* Number of donors of each cell. */
static tg_status
count_donors(const tg_ctx *ctx, const tg_route *r, uint8_t *indeg, tg_error *err)
{
	donors_job	d = {r, indeg};

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
	int			rows;			/* per task */
} indegree_job;

static tg_status
indegree_task(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	const indegree_job *j = arg;
	const tg_route *r = j->r;
	const int	W = r->width,
				H = r->height;
	const size_t first = (size_t) task * j->rows * W;
	const size_t end = (size_t) ((task + 1) * j->rows < H ? (task + 1) * j->rows : H) * W;
	size_t		cap = 1024,
				done = 0;
	uint32_t   *stack = tg_alloc(ctx, cap * sizeof(uint32_t));
	tg_status	st = TG_OK;

	if (stack == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate an accumulation stack");
	for (size_t i = first; i < end && st == TG_OK; i++)
	{
		size_t		top = 0;

		if (j->indeg[i] != SOURCE)
			continue;
		j->indeg[i] = TAKEN;
		stack[top++] = (uint32_t) i;
		while (top > 0)
		{
			const uint32_t c = stack[--top];
			const int	cx = (int) (c % W),
						cy = (int) (c / W);

			j->acc[c] = pull(r, j->p, j->weight, j->acc, c);
			for (int k = 0; k < 8; k++)
			{
				int			nx = cx + tg_nbr_dx(k),
							ny = cy + tg_nbr_dy(k);
				size_t		ni;

				if (nx < 0 || ny < 0 || nx >= W || ny >= H || !drains_to(r, c, k))
					continue;
				ni = (size_t) ny * W + nx;
				if (__atomic_sub_fetch(&j->indeg[ni], 1, __ATOMIC_ACQ_REL) != 0)
					continue;
				if (top == cap)
				{
					uint32_t   *bigger = tg_alloc(ctx, 2 * cap * sizeof(uint32_t));

					if (bigger == NULL)
					{
						st = tg_error_set(err, TG_ENOMEM, "could not grow an accumulation stack");
						break;
					}
					memcpy(bigger, stack, cap * sizeof(uint32_t));
					tg_free(ctx, stack);
					stack = bigger;
					cap *= 2;
				}
				stack[top++] = (uint32_t) ni;
			}
			if (st != TG_OK)
				break;
			if (++done % CANCEL_EVERY == 0 && tg_canceled(ctx))
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
	indegree_job j = {r, p, weight, acc, tg_alloc(ctx, n ? n : 1), 1};
	tg_status	st;

	if (j.indeg == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate accumulation buffers (%zu cells)", n);
	if (W > 0 && W < TG_TASK_CELLS)
		j.rows = TG_TASK_CELLS / W;
	st = count_donors(ctx, r, j.indeg, err);
	if (st == TG_OK)
		st = tg_parallel_rows(ctx, W, H, mark_source_rows, &j, err);
	if (st == TG_OK)
		st = tg_parallel(ctx, (H + j.rows - 1) / j.rows, indegree_task, &j, err);
	tg_free(ctx, j.indeg);
	return st;
}

/* Accumulate cells in a topological order (donors first), polling for cancellation. */
static tg_status
replay_order(const tg_ctx *ctx, const tg_route *r, const tg_flow_params *p, const double *weight,
			 double *acc, const uint32_t *order, size_t len, tg_error *err)
{
	for (size_t i = 0; i < len; i++)
	{
		if (i % CANCEL_EVERY == 0 && tg_canceled(ctx))
			return tg_error_set(err, TG_ECANCELED, "flow accumulation canceled");
		acc[order[i]] = pull(r, p, weight, acc, order[i]);
	}
	return TG_OK;
}

/*
 * Kahn's frontier rounds: order[0, *count) gets the valid cells level by
 * level (a cell's level is the longest path to it from a cell without
 * donors), level_start (if not NULL, room for cells + 1) where each level
 * begins, ending with *count.
 */
tg_status
tg_cpu_route_levels(const tg_ctx *ctx, const tg_route *r, uint32_t *order, size_t *count,
					uint32_t *level_start, int *levels, tg_error *err)
{
	const int	W = r->width;
	const size_t n = (size_t) W * r->height;
	uint8_t    *indeg = tg_alloc(ctx, n ? n : 1);
	size_t		head = 0,
				tail = 0,
				level_end;
	tg_status	st = TG_OK;
	size_t		i;

	*count = 0;
	*levels = 0;
	if (indeg == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate donor counts (%zu cells)", n);
	if ((st = count_donors(ctx, r, indeg, err)) != TG_OK)
		goto out;
	for (i = 0; i < n; i++)
		if (!isnan(r->z[i]) && indeg[i] == 0)
			order[tail++] = (uint32_t) i;
	level_end = tail;
	if (level_start && tail > 0)
		level_start[0] = 0;
	while (head < tail)
	{
		uint32_t	c = order[head++];
		int			cx = (int) (c % W),
					cy = (int) (c / W),
					k;

		for (k = 0; k < 8; k++)
		{
			int			nx = cx + tg_nbr_dx(k),
						ny = cy + tg_nbr_dy(k);
			size_t		ni;

			if (nx < 0 || ny < 0 || nx >= W || ny >= r->height || !drains_to(r, c, k))
				continue;
			ni = (size_t) ny * W + nx;
			if (--indeg[ni] == 0)
				order[tail++] = (uint32_t) ni;
		}
		if (head == level_end)
		{
			(*levels)++;
			if (level_start)
				level_start[*levels] = (uint32_t) head;
			level_end = tail;
			if (tg_canceled(ctx))
			{
				st = tg_error_set(err, TG_ECANCELED, "flow accumulation canceled");
				goto out;
			}
		}
	}
	*count = tail;

out:
	tg_free(ctx, indeg);
	return st;
}

/*
 * Topological: frontier rounds of Kahn's algorithm give every cell its level
 * (round); the cells, in level order, are then accumulated in one pass.  The
 * order depends only on the routing: when the routing was kept from an
 * earlier call (route_cache.c), its order is kept beside it and replayed.
 */
static tg_status
accumulate_topological(const tg_ctx *ctx, const tg_route *r, const tg_flow_params *p,
					   const double *weight, double *acc, int *levels, tg_error *err)
{
	const size_t n = (size_t) r->width * r->height;
	const uint32_t *kept;
	uint32_t   *order;
	size_t		tail = 0;
	tg_status	st;

	if ((kept = tg_cpu_route_order(r, &tail, levels)) != NULL)
		return replay_order(ctx, r, p, weight, acc, kept, tail, err);
	order = tg_alloc(ctx, (n ? n : 1) * sizeof(uint32_t));
	if (order == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate accumulation buffers (%zu cells)", n);
	if ((st = tg_cpu_route_levels(ctx, r, order, &tail, NULL, levels, err)) != TG_OK)
		goto out;
	st = replay_order(ctx, r, p, weight, acc, order, tail, err);
	if (st == TG_OK)
		tg_cpu_route_keep_order(ctx, r, order, tail, *levels);

out:
	tg_free(ctx, order);
	return st;
}

static tg_status
accumulate_dependency_transfer(const tg_ctx *ctx, const tg_route *r, const tg_flow_params *p,
							   const double *weight, double *acc, int *rounds, tg_error *err)
{
	const int	W = r->width,
				H = r->height;
	const size_t n = (size_t) W * H;
	uint8_t    *done = tg_alloc(ctx, n ? n : 1);
	uint32_t   *pending = tg_alloc(ctx, (n ? n : 1) * sizeof(uint32_t));
	uint32_t   *completed = tg_alloc(ctx, (n ? n : 1) * sizeof(uint32_t));
	size_t		npending = 0;
	tg_status	st = TG_OK;
	size_t		i;

	if (done == NULL || pending == NULL || completed == NULL)
	{
		st = tg_error_set(err, TG_ENOMEM, "could not allocate accumulation buffers (%zu cells)", n);
		goto out;
	}
	for (i = 0; i < n; i++)
	{
		done[i] = isnan(r->z[i]);
		if (!done[i])
			pending[npending++] = (uint32_t) i;
	}
	for (*rounds = 0; npending > 0; (*rounds)++)
	{
		size_t		kept = 0,
					ncompleted = 0,
					j;

		if (tg_canceled(ctx))
		{
			st = tg_error_set(err, TG_ECANCELED, "flow accumulation canceled");
			goto out;
		}
		for (j = 0; j < npending; j++)
		{
			uint32_t	c = pending[j];
			int			cx = (int) (c % W),
						cy = (int) (c / W),
						k;
			bool		ready = true;

			for (k = 0; k < 8 && ready; k++)
			{
				int			nx = cx + tg_nbr_dx(k),
							ny = cy + tg_nbr_dy(k);
				size_t		ni;

				if (nx < 0 || ny < 0 || nx >= W || ny >= H)
					continue;
				ni = (size_t) ny * W + nx;
				if (!done[ni] && drains_to(r, ni, tg_nbr_opposite(k)))
					ready = false;
			}
			if (ready)
			{
				acc[c] = pull(r, p, weight, acc, c);
				completed[ncompleted++] = c;
			}
			else
				pending[kept++] = c;
		}
		if (ncompleted == 0)
		{
			st = tg_error_set(err, TG_EDATA, "flow routing has a cycle");
			goto out;
		}
		/* what completed in this round becomes visible to the next */
		for (j = 0; j < ncompleted; j++)
			done[completed[j]] = 1;
		npending = kept;
	}

out:
	tg_free(ctx, done);
	tg_free(ctx, pending);
	tg_free(ctx, completed);
	return st;
}

static tg_status
accumulate_flow_transfer(const tg_ctx *ctx, const tg_route *r, const tg_flow_params *p,
						 const double *weight, double *acc, int *rounds, tg_error *err)
{
	const int	W = r->width,
				H = r->height;
	const size_t n = (size_t) W * H;
	double	   *flow = tg_alloc(ctx, (n ? n : 1) * sizeof(double));
	double	   *next = tg_alloc(ctx, (n ? n : 1) * sizeof(double));
	uint32_t   *active = tg_alloc(ctx, (n ? n : 1) * sizeof(uint32_t));
	uint32_t   *next_active = tg_alloc(ctx, (n ? n : 1) * sizeof(uint32_t));
	uint8_t    *queued = tg_alloc(ctx, n ? n : 1);
	size_t		nactive = 0;
	tg_status	st = TG_OK;
	size_t		i;

	if (!flow || !next || !active || !next_active || !queued)
	{
		st = tg_error_set(err, TG_ENOMEM, "could not allocate accumulation buffers (%zu cells)", n);
		goto out;
	}
	memset(next, 0, n * sizeof(double));
	memset(queued, 0, n);
	for (i = 0; i < n; i++)
	{
		acc[i] = isnan(r->z[i]) ? NAN : weight[i];
		flow[i] = isnan(r->z[i]) ? 0 : weight[i];
		if (flow[i] != 0)
			active[nactive++] = (uint32_t) i;
	}
	for (*rounds = 0; nactive > 0; (*rounds)++)
	{
		size_t		nnext = 0,
					j;

		if (tg_canceled(ctx))
		{
			st = tg_error_set(err, TG_ECANCELED, "flow accumulation canceled");
			goto out;
		}
		/* move the water in transit one cell downstream */
		for (j = 0; j < nactive; j++)
		{
			uint32_t	c = active[j];
			int			cx = (int) (c % W),
						cy = (int) (c / W),
						k;

			for (k = 0; k < 8; k++)
			{
				int			nx = cx + tg_nbr_dx(k),
							ny = cy + tg_nbr_dy(k);
				size_t		ni;
				double		s;

				if (nx < 0 || ny < 0 || nx >= W || ny >= H)
					continue;
				s = share_of(r, p, c, k, acc);
				if (s <= 0)
					continue;
				ni = (size_t) ny * W + nx;
				next[ni] += flow[c] * s;
				if (!queued[ni])
				{
					queued[ni] = 1;
					next_active[nnext++] = (uint32_t) ni;
				}
			}
			flow[c] = 0;
		}
		/* and add it where it arrived */
		for (j = 0; j < nnext; j++)
		{
			uint32_t	c = next_active[j];

			acc[c] += next[c];
			flow[c] = next[c];
			next[c] = 0;
			queued[c] = 0;
		}
		memcpy(active, next_active, nnext * sizeof(uint32_t));
		nactive = nnext;
	}

out:
	tg_free(ctx, flow);
	tg_free(ctx, next);
	tg_free(ctx, active);
	tg_free(ctx, next_active);
	tg_free(ctx, queued);
	return st;
}

tg_status
tg_cpu_accumulate(const tg_ctx *ctx, const tg_route *r, const tg_flow_params *p,
				  const double *weight, tg_accum_method method, double *acc,
				  tg_error *err)
{
	const size_t n = (size_t) r->width * r->height;
	int			rounds = 0;
	tg_status	st;
	size_t		i;

	for (i = 0; i < n; i++)
		acc[i] = isnan(r->z[i]) ? NAN : 0.0;
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
		case TG_ACC_AUTO:
		default:
			st = accumulate_indegree(ctx, r, p, weight, acc, err);
			break;
	}
	if (ctx->stats)
		ctx->stats->iterations = rounds;
	return st;
}
