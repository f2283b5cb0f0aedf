/*
 * part_link.c — D8 accumulation across parts (Barnes 2017): each part
 * routed with the crossing flats' masks and accumulated alone, its exits
 * handed over (tg_part_link); the coordinator carries their water across
 * the parts (tg_parts_solve_flow, tg_parts_put_inflows); each part adds
 * what enters it (tg_part_finish_accumulation).
 */
#include "scale/parts/part_state.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The crossing flats' masks over the rows the part routes (routed_rows:
 * `first` is the first of them in s->z), in raster order: the row above's
 * crossing cells, the part's own, the row below's; and the routing's
 * parameters for those rows.  given's arrays are the caller's to free.
 */
static tg_status
crossing_masks(const tg_ctx *ctx, const tg_op *op, const part_state *s, int first, int count,
			   tg_flat_masks *given, tg_flow_params *p, tg_error *err)
{
	const size_t W = (size_t) s->W,
				nb = W * s->H,
				off = (size_t) (2 - first) * W;
	size_t	   *cells = tg_alloc(ctx, (s->nflat + 2 * W + 1) * sizeof(size_t));
	int32_t    *masks = tg_alloc(ctx, (s->nflat + 2 * W + 1) * sizeof(int32_t));
	size_t		n = 0;

	if (!cells || !masks)
	{
		tg_free(ctx, cells);
		tg_free(ctx, masks);
		return tg_error_set(err, TG_ENOMEM, "could not allocate a part's flat masks (%zu cells)", nb);
	}
	if (s->index > 0)
		for (size_t x = 0; x < W; x++)
			if (s->nb_label[x] > 0)
			{
				cells[n] = off - W + x;
				masks[n++] = s->nb_mask[x];
			}
	for (size_t c = 0; c < s->nflat; c++)
	{
		cells[n] = off + s->cell[c];
		masks[n++] = s->mask[c];
	}
	if (s->index + 1 < s->count)
		for (size_t x = 0; x < W; x++)
			if (s->nb_label[W + x] > 0)
			{
				cells[n] = off + nb + x;
				masks[n++] = s->nb_mask[W + x];
			}
	*given = (tg_flat_masks) {n, cells, masks};
	*p = op->flow;
	p->geom.height = count;
	p->geom.row0 += first - 2;
	return TG_OK;
}

static void
free_masks(const tg_ctx *ctx, tg_flat_masks *given)
{
	tg_free(ctx, (void *) given->cell);
	tg_free(ctx, (void *) given->mask);
}

/*
 * The part routed with the crossing flats' masks: the rows routed_rows
 * names (its own and the neighbours' around them, which shape the routing
 * of its edge rows); *own: the index in sub of its first own cell.
 */
tg_status
tg_part_route(const tg_ctx *ctx, const tg_op *op, const part_state *s, tg_route *sub, size_t *own, tg_error *err)
{
	const size_t W = (size_t) s->W;
	int			first,
				count;
	double	   *z;
	tg_flow_params p;
	tg_flat_masks given;
	tg_status	st;

	routed_rows(s, &first, &count);
	*own = (size_t) (2 - first) * W;
	st = crossing_masks(ctx, op, s, first, count, &given, &p, err);
	if (st != TG_OK)
		return st;
	if ((z = tg_alloc(ctx, W * count * sizeof(double))) == NULL)
	{
		free_masks(ctx, &given);
		return tg_error_set(err, TG_ENOMEM, "could not allocate a part's routing (%zu cells)", W * count);
	}
	tg_parallel_memcpy(ctx, z, s->z + (size_t) first * W, W * count * sizeof(double));
	st = tg_cpu_route_surface(ctx, z, s->W, count, &p, &given, sub, err);
	free_masks(ctx, &given);
	return st;
}

/* The geometry of the part's own rows, what its cells' weights are computed over. */
static tg_grid_geometry
own_geometry(const tg_op *op, const part_state *s)
{
	tg_grid_geometry g = op->flow.geom;

	g.height = s->H;
	return g;
}

/*
 * The link's routing and D8 accumulation of the part's own rows into
 * s->d8 and s->acc, on the backend the call's policy chooses: the same
 * directions and the same sums either way.
 */
typedef struct link_step
{
	const tg_op *op;
	part_state *s;
} link_step;

static tg_status
link_cpu(const tg_ctx *ctx, const void *arg, tg_error *err)
{
	const link_step *l = arg;
	const tg_grid_geometry g = own_geometry(l->op, l->s);
	double	   *weight = NULL;
	tg_route	sub,
				strip;
	size_t		own;
	tg_status	st = tg_cell_weights(ctx, NULL, &g, l->op->units, &weight, err);

	if (st == TG_OK)
		st = tg_part_route(ctx, l->op, l->s, &sub, &own, err);
	if (st != TG_OK)
	{
		tg_free(ctx, weight);
		return st;
	}
	strip = own_rows_d8(l->s, &sub, own);
	tg_parallel_memcpy(ctx, l->s->d8, strip.d8, (size_t) l->s->W * l->s->H);
	st = tg_cpu_accumulate(ctx, &strip, &l->op->flow, weight, TG_ACC_INDEGREE, l->s->acc, err);
	tg_route_free(ctx, &sub);
	tg_free(ctx, weight);
	return st;
}

static tg_status
link_gpu(const tg_ctx *ctx, const void *arg, tg_error *err)
{
	const link_step *l = arg;
	const part_state *s = l->s;
	int			first,
				count;
	const tg_grid_geometry g = own_geometry(l->op, s);
	double	   *row_w = NULL;
	tg_flow_params p;
	tg_flat_masks given;
	tg_status	st = tg_row_weights(ctx, &g, l->op->units, &row_w, err);

	if (st != TG_OK)
		return st;
	routed_rows(s, &first, &count);
	st = crossing_masks(ctx, l->op, s, first, count, &given, &p, err);
	if (st == TG_OK)
	{
		/* no weight raster: each cell puts in its row's weight, spread on the device */
		const tg_part_weights w = {NULL, row_w, NULL, 0, 0};
		const tg_part_d8_out out = {s->d8, s->acc, NULL, {0}};
		const tg_band z = {TG_PT_64BF, false, false, false, 0, s->W, count, s->z + (size_t) first * s->W};

		p.fill = false;			/* the part's surface is filled already, where asked */
		st = tg_cuda_part_d8(ctx, &z, 2 - first, s->H, &p, &given, &w, &out, err);
		free_masks(ctx, &given);
	}
	tg_free(ctx, row_w);
	return st;
}

/* The masks of the crossing flats from every flat's height; then the part linked. */
tg_status
tg_part_link(const tg_ctx *ctx, const tg_op *op, tg_part *part, reader *r, tg_error *err)
{
	part_state *s = part->state;
	size_t		W,
				nexits = 0,
				cap = 0;
	tg_strip_exit *exits = NULL;
	int64_t    *dest;
	writer		w = {.ctx = ctx};
	tg_route	strip;
	tg_edge_paths edges = {0};
	tg_status	st = TG_OK;

	if (s == NULL || s->mask == NULL)
		return tg_error_set(err, TG_EDATA, "a link message reached a part that kept no flats");
	W = (size_t) s->W;
	dest = tg_alloc(ctx, 2 * W * sizeof(int64_t));
	st = dest ? tg_part_read_heights(ctx, part, r, err) : tg_error_set(err, TG_ENOMEM, "could not allocate a part's ends");
	if (st == TG_OK)
		st = reader_done(r, "a link message", err);
	/* the finish adds the inflows to this accumulation of the same routing: keep both */
	if (st == TG_OK)
	{
		s->d8 = keep_alloc(part, W * s->H);
		s->acc = keep_alloc(part, W * s->H * sizeof(double));
		if (s->d8 == NULL || s->acc == NULL)
			st = tg_error_set(err, TG_ENOMEM, "could not keep a part's directions and accumulation");
	}
	if (st == TG_OK)
	{
		link_step	l = {op, s};

		tg_phase(ctx, "link: routing and accumulation of the part");
		st = tg_run_step(ctx, (int64_t) W * s->H, link_cpu, link_gpu, &l, err);
	}
	strip = (tg_route) {s->W, s->H, TG_ROUTE_D8, s->z + 2 * W, s->d8, NULL};
	if (st == TG_OK && !tg_edge_paths_alloc(ctx, s->W, &edges))
		st = tg_error_set(err, TG_ENOMEM, "could not allocate a part's paths out");
	if (st == TG_OK)
		st = tg_edge_paths_of(ctx, &strip, s->acc, &edges, err);
	if (st == TG_OK)
		st = tg_strip_link(ctx, s->W, s->H, s->row0, &edges, &exits, &nexits, &cap, dest, err);
	tg_edge_paths_free(ctx, &edges);
	if (st == TG_OK)
	{
		double	   *amount = tg_alloc(ctx, (nexits + 1) * sizeof(double));

		if (amount == NULL)
			st = tg_error_set(err, TG_ENOMEM, "could not allocate %zu exits", nexits);
		for (size_t i = 0; st == TG_OK && i < nexits; i++)
		{
			amount[i] = exits[i].acc;
			exits[i].receiver -= exits[i].cell;		/* one of the 8 neighbours: few values */
		}
		put_header(&w, TG_PART_LINK | REPLY, op->kind);
		put(&w, &nexits, sizeof nexits);
		if (nexits > 0)
		{
			put_cells(&w, &exits[0].cell, nexits, sizeof(tg_strip_exit));
			put_cells(&w, &exits[0].receiver, nexits, sizeof(tg_strip_exit));
		}
		if (amount)
			put_values(&w, amount, nexits);
		put_cells(&w, dest, 2 * W, sizeof(int64_t));
		tg_free(ctx, amount);
		if (st == TG_OK)
			st = writer_done(&w, &part->reply, err);
		else
			tg_free(ctx, w.data);
	}
	tg_free(ctx, exits);
	tg_free(ctx, dest);
	return st;
}

static inline bool
is_marked(const uint8_t *mark, size_t i)
{
	return (mark[i >> 3] >> (i & 7)) & 1u;
}

/*
 * The link's accumulation of the part made the one with the water entering
 * it (in[0 .. n): grid cells; those of other parts are not the part's).
 * Only the cells downstream of an inflow cell change.  Each is pulled again
 * as a whole accumulation of the part would pull it (its weight, the inflows
 * added to it, then its donors in neighbour order), after its donors that
 * change; every other cell keeps the link's value, which such an
 * accumulation gives it too, so the result is the same bit for bit.  Rivers
 * entering a part are thin lines: few cells change, and one thread walks
 * them.
 */
static tg_status
add_inflows(const tg_ctx *ctx, const tg_op *op, const part_state *s, const tg_strip_inflow *in, size_t n,
			tg_error *err)
{
	const int	W = s->W,
				H = s->H;
	const size_t nb = (size_t) W * H;
	const int64_t begin = (int64_t) s->row0 * W;
	const tg_route strip = {W, H, TG_ROUTE_D8, s->z + 2 * (size_t) W, s->d8, NULL};
	const tg_route_view v = tg_cpu_route_view(&strip, op->flow.threshold);
	const tg_grid_geometry g = own_geometry(op, s);
	double	   *acc = s->acc,
			   *rw = NULL;
	uint8_t    *mark = tg_alloc(ctx, nb / 8 + 1);
	uint32_t   *root = tg_alloc(ctx, (n ? n : 1) * sizeof(uint32_t)),
			   *stack = NULL;
	size_t		nroot = 0,
				nmarked = 0,
				steps = 0;
	tg_status	st;

	/* a cell's weight as tg_cell_weights gives it without a weight raster: its row's */
	st = tg_row_weights(ctx, &g, op->units, &rw, err);
	if (st == TG_OK && (mark == NULL || root == NULL))
		st = tg_error_set(err, TG_ENOMEM, "could not allocate a part's inflows (%zu cells)", nb);
	if (st == TG_OK)
		memset(mark, 0, nb / 8 + 1);

	/*
	 * The paths down from the inflow cells marked, each cell holding its
	 * weight until it is pulled: every marked cell drains into a marked one
	 * but the roots, where a path ends or leaves the part, so the marks make
	 * trees.  A nodata cell no donor drains into is never pulled: it stays.
	 */
	for (size_t j = 0; st == TG_OK && j < n; j++)
	{
		size_t		c;

		if (in[j].cell < begin || in[j].cell >= begin + (int64_t) nb)
			continue;
		c = (size_t) (in[j].cell - begin);
		if (is_marked(mark, c) || isnan(acc[c]))
			continue;
		for (;;)
		{
			const int	k = s->d8[c];
			int			x,
						y;

			mark[c >> 3] |= (uint8_t) (1u << (c & 7));
			acc[c] = rw[c / W];
			nmarked++;
			if (++steps % TG_CANCEL_EVERY == 0 && tg_canceled(ctx))
			{
				st = tg_error_set(err, TG_ECANCELED, "flow accumulation canceled");
				break;
			}
			if (k == TG_NO_DIRECTION)
			{
				root[nroot++] = (uint32_t) c;
				break;
			}
			x = (int) (c % W) + tg_nbr_dx(k);
			y = (int) (c / W) + tg_nbr_dy(k);
			if (x < 0 || y < 0 || x >= W || y >= H)
			{
				root[nroot++] = (uint32_t) c;
				break;
			}
			c = (size_t) y * W + x;
			if (is_marked(mark, c))
				break;
		}
	}
	/* the inflows added in their order, as to the weights of a whole accumulation */
	for (size_t j = 0; st == TG_OK && j < n; j++)
		if (in[j].cell >= begin && in[j].cell < begin + (int64_t) nb && is_marked(mark, in[j].cell - begin))
			acc[in[j].cell - begin] += in[j].amount;

	/*
	 * Each tree pulled depth-first from its root upstream, a cell after its
	 * marked donors: its mark is cleared when its donors are put on the
	 * stack above it, and it is pulled when it is on top again.  Each
	 * marked cell has one receiver, so it is put on the stack once.
	 */
	if (st == TG_OK && (stack = tg_alloc(ctx, (nmarked ? nmarked : 1) * sizeof(uint32_t))) == NULL)
		st = tg_error_set(err, TG_ENOMEM, "could not allocate a part's inflow paths (%zu cells)", nmarked);
	for (size_t j = 0; st == TG_OK && j < nroot; j++)
	{
		size_t		top = 0;

		stack[top++] = root[j];
		while (top > 0)
		{
			const uint32_t c = stack[top - 1];
			const unsigned donors = tg_route_donors(&v, c);

			if (is_marked(mark, c))
			{
				mark[c >> 3] &= (uint8_t) ~(1u << (c & 7));
				for (int k = 0; k < 8; k++)
					if ((donors >> k) & 1u)
					{
						const size_t d = (size_t) ((int) (c / W) + tg_nbr_dy(k)) * W +
							(size_t) ((int) (c % W) + tg_nbr_dx(k));

						if (is_marked(mark, d))
							stack[top++] = (uint32_t) d;
					}
				continue;
			}
			acc[c] = tg_route_pull_own(&v, acc[c], acc, c, donors, NULL);
			top--;
			if (++steps % TG_CANCEL_EVERY == 0 && tg_canceled(ctx))
			{
				st = tg_error_set(err, TG_ECANCELED, "flow accumulation canceled");
				break;
			}
		}
	}
	tg_free(ctx, rw);
	tg_free(ctx, mark);
	tg_free(ctx, root);
	tg_free(ctx, stack);
	return st;
}

/* The part's accumulation with the water entering it: *acc, kept by the part (its last phase frees it). */
tg_status
tg_part_finish_accumulation(const tg_ctx *ctx, const tg_op *op, tg_part *part, reader *r, double **acc,
					tg_error *err)
{
	const part_state *s = part->state;
	tg_strip_inflow *in = NULL;
	size_t		n = 0;
	tg_status	st = TG_OK;

	*acc = NULL;
	if (s != NULL && s->flow_acc != NULL)
	{
		/* the flow's rounds left the settled accumulation: the part's own rows */
		if (s->flow_wait == NULL || s->npending > 0)
			return tg_error_set(err, TG_EDATA, "the flow between parts ended with %zu values not handed over",
								s->npending);
		*acc = s->flow_acc + flow_own0(s) * s->W;
		return TG_OK;
	}
	if (s == NULL || s->d8 == NULL || s->acc == NULL)
		return tg_error_set(err, TG_EDATA, "a finish message reached a part that was not linked");
	get(r, &n, sizeof n);
	/* each inflow at least a byte of its cell and its amount */
	if (r->bad || n > r->left / (1 + sizeof(double)))
		return tg_error_set(err, TG_EDATA, "a finish message is truncated");
	if ((in = tg_alloc(ctx, (n ? n : 1) * sizeof(tg_strip_inflow))) == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate %zu inflows", n);
	get_cells(r, &in[0].cell, n, sizeof(tg_strip_inflow));
	for (size_t j = 0; j < n; j++)
		get(r, &in[j].amount, sizeof(double));
	st = reader_done(r, "a finish message", err);
	if (st == TG_OK)
	{
		tg_phase(ctx, "accumulation of the part");
		st = add_inflows(ctx, op, s, in, n, err);
	}
	if (st == TG_OK)
		*acc = s->acc;
	tg_free(ctx, in);
	return st;
}

/* The water entering each part from the others: inflows[i] (sorted by cell), counts[i]. */
tg_status
tg_parts_solve_flow(const coordinator *c, tg_strip_inflow **inflows, size_t *ninflows, tg_error *err)
{
	const size_t W = (size_t) c->W;
	const int	last = c->order[c->n - 1];
	const int64_t cells = (int64_t) (c->row0[last] + c->height[last]) * c->W;
	tg_strip_ends *ends = tg_alloc(c->ctx, c->n * sizeof(tg_strip_ends));
	tg_strip_exit *exits = NULL;
	size_t		n = 0;
	tg_status	st = TG_OK;

	if (ends == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate the flow between %d parts", c->n);
	memset(ends, 0, c->n * sizeof(tg_strip_ends));
	for (int i = 0; i < c->n && st == TG_OK; i++)
	{
		reader		r;
		tg_op_kind	k;
		size_t		count;
		tg_strip_exit *grown;
		double	   *amount;

		st = open_reader(&r, &c->slot[TG_PART_LINK][i], TG_PART_LINK | REPLY, &k, "a link reply", err);
		if (st != TG_OK)
			break;

		get(&r, &count, sizeof count);
		/* each exit at least a byte of its cell, its receiver and its amount */
		if (r.bad || count > r.left / 3)
		{
			st = tg_error_set(err, TG_EDATA, "the link reply of %s is truncated", c->names[i]);
			break;
		}
		grown = tg_alloc(c->ctx, (n + count + 1) * sizeof(tg_strip_exit));
		amount = tg_alloc(c->ctx, (count + 1) * sizeof(double));
		if (grown == NULL || amount == NULL)
		{
			tg_free(c->ctx, grown);
			tg_free(c->ctx, amount);
			st = tg_error_set(err, TG_ENOMEM, "could not allocate the exits of %d parts", c->n);
			break;
		}
		if (n)
			memcpy(grown, exits, n * sizeof(tg_strip_exit));
		tg_free(c->ctx, exits);
		exits = grown;
		get_cells(&r, &exits[n].cell, count, sizeof(tg_strip_exit));
		get_cells(&r, &exits[n].receiver, count, sizeof(tg_strip_exit));
		get_values(&r, amount, count);
		for (size_t e = 0; e < count; e++)
		{
			exits[n + e].receiver += exits[n + e].cell;
			exits[n + e].acc = amount[e];
			/* an exit is a cell of the part's, its receiver one of the grid's */
			if (exits[n + e].cell < (int64_t) c->row0[i] * c->W ||
				exits[n + e].cell >= (int64_t) (c->row0[i] + c->height[i]) * c->W ||
				exits[n + e].receiver < 0 || exits[n + e].receiver >= cells)
				r.bad = true;
		}
		tg_free(c->ctx, amount);
		n += count;
		ends[i].row0 = c->row0[i];
		ends[i].nrows = c->height[i];
		if ((ends[i].dest = tg_alloc(c->ctx, 2 * W * sizeof(int64_t))) == NULL)
			st = tg_error_set(err, TG_ENOMEM, "could not allocate the ends of %d parts", c->n);
		else
		{
			get_cells(&r, ends[i].dest, 2 * W, sizeof(int64_t));
			st = reader_done(&r, "a link reply", err);
		}
	}
	if (st == TG_OK)
		st = tg_strips_flow(c->ctx, c->W, exits, n, ends, c->n, inflows, ninflows, err);
	for (int i = 0; i < c->n; i++)
		tg_free(c->ctx, ends[i].dest);
	tg_free(c->ctx, exits);
	tg_free(c->ctx, ends);
	return st;
}

/* Each part's inflows: those whose cell lies in its rows. */
void
tg_parts_put_inflows(writer *w, const coordinator *c, int i, const tg_strip_inflow *in, size_t n)
{
	const int64_t begin = (int64_t) c->row0[i] * c->W,
				end = begin + (int64_t) c->height[i] * c->W;
	size_t		count = 0,
				j0 = 0;

	while (j0 < n && in[j0].cell < begin)
		j0++;
	while (j0 + count < n && in[j0 + count].cell < end)
		count++;
	put(w, &count, sizeof count);
	if (count > 0)
		put_cells(w, &in[j0].cell, count, sizeof(tg_strip_inflow));
	for (size_t j = j0; j < j0 + count; j++)
		put(w, &in[j].amount, sizeof(double));
}
