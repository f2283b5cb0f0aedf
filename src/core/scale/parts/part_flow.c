/*
 * part_flow.c — multiple flow across parts in rounds: each part pulls its
 * cells once every donor's value is final and hands over the values of the
 * row its neighbour takes in as they become final (tg_part_flow); the
 * coordinator passes them on and ends the rounds when none comes
 * (tg_parts_put_flow, tg_parts_flow_idle, tg_parts_flow_settled).
 */
#include "scale/parts/part_state.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int			tg_part_flow_halo = 4;

/*
 * The values of s->ready[side] (cells of the row the neighbour on `side`
 * takes in, final since last handed over): their count, their columns as
 * varints of the gaps between them, the values byte plane by byte plane
 * from the most significant (values of one magnitude share their sign and
 * exponent bytes, which the message's compression takes in runs).  The
 * list is emptied.
 */
static int
cmp_cell(const void *a, const void *b)
{
	const uint32_t x = *(const uint32_t *) a,
				y = *(const uint32_t *) b;

	return (x > y) - (x < y);
}

static void
put_ready(writer *w, part_state *s, int side)
{
	const size_t W = (size_t) s->W,
				count = s->nready[side];
	uint32_t   *cell = s->ready[side];
	uint8_t    *planes = w->failed ? NULL : tg_alloc(w->ctx, 8 * count + 1);
	const size_t at = begin_section(w);
	size_t		next = 0;

	if (planes == NULL)
	{
		w->failed = true;
		return;
	}
	if (count > 0)
	{
		/* in column order (cells of one row) */
		qsort(cell, count, sizeof *cell, cmp_cell);
		put_varint(w, count);
		for (size_t j = 0; j < count; j++)
		{
			const size_t x = cell[j] % W;
			uint64_t	bits;

			put_varint(w, x - next);
			next = x + 1;
			memcpy(&bits, &s->flow_acc[cell[j]], sizeof bits);
			for (int b = 0; b < 8; b++)
				planes[(size_t) b * count + j] = (uint8_t) (bits >> (8 * (7 - b)));
		}
		put(w, planes, 8 * count);
	}
	end_section(w, at);
	tg_free(w->ctx, planes);
	s->nready[side] = 0;
}

/*
 * A neighbour's put_ready into the row taken in on `side`: each cell must
 * still wait for its value; it is then final and pushed on the stack.
 */
static tg_status
get_ready(const tg_ctx *ctx, reader *sec, part_state *s, int side, tg_error *err)
{
	const size_t W = (size_t) s->W,
				y = around_row(s, side, s->flow_halo);
	const uint64_t count = get_varint(sec);
	uint32_t   *col;
	size_t		x = 0;
	tg_status	st = TG_OK;

	if (sec->bad || count > W || count * 9 > sec->left)
		return tg_error_set(err, TG_EDATA, "a flow message's values are malformed");
	if ((col = tg_alloc(ctx, count * sizeof(uint32_t) + 1)) == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate %zu values", (size_t) count);
	for (size_t j = 0; j < count && !sec->bad; j++)
	{
		x += get_varint(sec);
		col[j] = (uint32_t) x++;
		if (x > W)
			sec->bad = true;
	}
	if (sec->bad || sec->left != 8 * count)
		st = tg_error_set(err, TG_EDATA, "a flow message's values are malformed");
	for (size_t j = 0; j < count && st == TG_OK; j++)
	{
		const size_t i = y * W + col[j];
		uint64_t	bits = 0;

		for (int b = 0; b < 8; b++)
			bits |= (uint64_t) sec->p[(size_t) b * count + j] << (8 * (7 - b));
		if (s->flow_wait[i] != 1)
			st = tg_error_set(err, TG_EDATA, "a flow message hands over a value the part does not wait for");
		else
		{
			memcpy(&s->flow_acc[i], &bits, sizeof bits);
			s->flow_wait[i] = 0;
			s->flow_stack[s->nstack++] = (uint32_t) i;
			s->npending--;
		}
	}
	tg_free(ctx, col);
	return st;
}

/*
 * A kept array of the flow's rows: `around` cells before and after the
 * part's own `own` cells set to the byte `none`, its own copied from src
 * (size bytes a cell), on the call's threads.
 */
static void
around_and_own(const tg_ctx *ctx, void *dst, int none, const void *src, size_t size, size_t around, size_t own)
{
	uint8_t    *d = dst;

	memset(d, none, around * size);
	tg_parallel_memcpy(ctx, d + around * size, src, own * size);
	memset(d + (around + own) * size, none, around * size);
}

/*
 * Round 0: every crossing flat's height and the halo's depth; the part
 * routed with the crossing flats' masks and kept in rows with room around
 * it (no cells there yet), its rows that the neighbours compute too handed
 * over (into w), the weights of all its rows set.
 */
static tg_status
flow_begin(const tg_ctx *ctx, const tg_op *op, tg_part *part, reader *r, writer *w, tg_error *err)
{
	part_state *s = part->state;
	const int	halo = get_i32(r);
	size_t		W = (size_t) s->W,
				H = (size_t) s->H,
				n,
				own0,
				own;
	double	   *weights = NULL;
	tg_grid_geometry g = op->flow.geom;
	tg_route	route;
	tg_status	st;

	if (r->bad || halo < 1 || halo >= s->H)
		return tg_error_set(err, TG_EDATA, "a flow message asks for %d halo rows of a part of %d", halo, s->H);
	s->flow_halo = halo;
	n = W * flow_rows(s);
	own0 = flow_own0(s);
	st = tg_part_read_heights(ctx, part, r, err);
	if (st == TG_OK)
		st = tg_part_route(ctx, op, s, &route, &own, err);
	if (st != TG_OK)
		return st;
	s->flow_z = keep_alloc(part, n * sizeof(double));
	s->flow_d8 = keep_alloc(part, n);
	s->flow_frac = keep_alloc(part, 8 * n * sizeof(float));
	s->flow_w = keep_alloc(part, n * sizeof(double));
	s->flow_acc = keep_alloc(part, n * sizeof(double));
	s->taken_reach = keep_alloc(part, 2 * W);
	if (!s->flow_z || !s->flow_d8 || !s->flow_frac || !s->flow_w || !s->flow_acc || !s->taken_reach ||
		route.frac == NULL)
	{
		tg_route_free(ctx, &route);
		return tg_error_set(err, TG_ENOMEM, "could not keep a part's routing (%zu cells)", n);
	}
	/*
	 * no routing around the part until its neighbours hand theirs over; the
	 * cells there all count (their nodata neither sends nor receives water)
	 */
	around_and_own(ctx, s->flow_z, 0, s->z + 2 * W, sizeof(double), own0 * W, W * H);
	around_and_own(ctx, s->flow_d8, TG_NO_DIRECTION, route.d8 + own, 1, own0 * W, W * H);
	for (int k = 0; k < 8; k++)
		around_and_own(ctx, s->flow_frac + (size_t) k * n, 0, route.frac + (size_t) k * W * route.height + own,
					   sizeof(float), own0 * W, W * H);
	tg_route_free(ctx, &route);
	for (int side = 0; side < 2; side++)
	{
		const size_t at = begin_section(w);

		if (has_neighbour(s, side))
			tg_part_put_halo_routing(w, op, s, side, s->taken_reach + side * W);
		end_section(w, at);
	}
	/* the weights of the rows around too: the grid's rows there (the rows taken in are only set) */
	g.row0 -= (int) own0;
	g.height = (int) flow_rows(s);
	st = tg_cell_weights(ctx, NULL, &g, op->units, &weights, err);
	if (st == TG_OK)
		tg_parallel_memcpy(ctx, s->flow_w, weights, n * sizeof(double));
	tg_free(ctx, weights);
	return st;
}

/* Computed cell i final: listed to hand over where it lies in a row a neighbour takes in and reaches it. */
static void
flow_final(part_state *s, size_t i)
{
	const size_t W = (size_t) s->W;

	for (int side = 0; side < 2; side++)
		if (i / W == halo_row(s, side, s->flow_halo) && s->taken_reach[side * W + i % W] &&
			has_neighbour(s, side))
			s->ready[side][s->nready[side]++] = (uint32_t) i;
}

/*
 * Does cell c send water to its neighbour k, a computed cell (rows 1 ..
 * last: not a row taken in)?  Its index into *ni.
 */
static inline bool
flow_receiver(const part_state *s, const tg_route_view *v, size_t c, int k, size_t last, size_t *ni)
{
	const size_t W = (size_t) s->W;
	const long	nx = (long) (c % W) + tg_nbr_dx(k);
	const size_t ny = c / W + tg_nbr_dy(k);

	*ni = ny * W + (size_t) nx;
	return nx >= 0 && nx < (long) W && ny >= 1 && ny <= last && tg_route_drains_to(v, c, k);
}

/*
 * The computed cells that the stack's cells send water to, each once the
 * last of its donors is final: pulled then (every donor final: the single
 * grid's value), pushed in turn.  count: add 1 to each receiver's wait
 * instead, pushing it when it first waits (the first round's count of the
 * donors that wait).
 */
static tg_status
flow_push(const tg_ctx *ctx, const tg_op *op, part_state *s, bool count, tg_error *err)
{
	const tg_route route = flow_route(op, s);
	const tg_route_view v = tg_cpu_route_view(&route, op->flow.threshold);
	const size_t last = flow_rows(s) - 2;
	size_t		done = 0;

	while (s->nstack > 0)
	{
		const size_t c = s->flow_stack[--s->nstack];

		for (int k = 0; k < 8; k++)
		{
			size_t		ni;

			if (!flow_receiver(s, &v, c, k, last, &ni))
				continue;
			if (count)
			{
				if (s->flow_wait[ni]++ == 0)
					s->flow_stack[s->nstack++] = (uint32_t) ni;
			}
			else if (--s->flow_wait[ni] == 0)
			{
				s->flow_acc[ni] = tg_route_pull(&v, s->flow_w, s->flow_acc, ni);
				s->flow_stack[s->nstack++] = (uint32_t) ni;
				flow_final(s, ni);
			}
		}
		if (++done % TG_CANCEL_EVERY == 0 && tg_canceled(ctx))
			return tg_error_set(err, TG_ECANCELED, "flow accumulation canceled");
	}
	return TG_OK;
}

/*
 * Round 1, the neighbours' routing in: the sums of every computed cell,
 * final where no cell taken in that drains into the computed rows is
 * upstream; each other cell waits for as many donors as wait themselves,
 * and each such cell taken in for its value.
 */
static tg_status
flow_first_sums(const tg_ctx *ctx, const tg_op *op, tg_part *part, tg_error *err)
{
	part_state *s = part->state;
	const size_t W = (size_t) s->W,
				n = W * flow_rows(s),
				last = flow_rows(s) - 2;
	const tg_route route = flow_route(op, s);
	const tg_route_view v = tg_cpu_route_view(&route, op->flow.threshold);
	tg_status	st;

	s->flow_wait = keep_alloc(part, n);
	s->flow_stack = keep_alloc(part, n * sizeof(uint32_t));
	s->ready[0] = keep_alloc(part, W * sizeof(uint32_t));
	s->ready[1] = keep_alloc(part, W * sizeof(uint32_t));
	if (!s->flow_wait || !s->flow_stack || !s->ready[0] || !s->ready[1])
		return tg_error_set(err, TG_ENOMEM, "could not allocate a part's flow (%zu cells)", n);
	st = tg_cpu_accumulate(ctx, &route, &op->flow, s->flow_w, TG_ACC_INDEGREE, s->flow_acc, err);
	if (st != TG_OK)
		return st;
	tg_parallel_memset(ctx, s->flow_wait, 0, n);
	for (int side = 0; side < 2; side++)
		for (size_t x = 0; x < W && has_neighbour(s, side); x++)
		{
			const size_t t = around_row(s, side, s->flow_halo) * W + x;
			bool		drains = false;
			size_t		ni;

			for (int k = 0; k < 8 && !drains; k++)
				drains = flow_receiver(s, &v, t, k, last, &ni);
			if (drains)
			{
				s->flow_wait[t] = 1;
				s->flow_stack[s->nstack++] = (uint32_t) t;
				s->npending++;
			}
		}
	st = flow_push(ctx, op, s, true, err);
	for (int side = 0; side < 2 && st == TG_OK; side++)
	{
		const size_t y = halo_row(s, side, s->flow_halo);

		for (size_t x = 0; x < W && has_neighbour(s, side); x++)
			if (s->flow_wait[y * W + x] == 0 && s->taken_reach[side * W + x])
				s->ready[side][s->nready[side]++] = (uint32_t) (y * W + x);
	}
	return st;
}

/*
 * A round of the flow.  Round 0: routed, the rows the neighbours compute
 * too handed over; round 1: theirs in, every computed cell summed, the
 * final values of the rows the neighbours take in handed over; later
 * rounds: the neighbours' final values in, the cells that no longer wait
 * pulled, and the values of those rows that became final handed over.
 */
tg_status
tg_part_flow(const tg_ctx *ctx, const tg_op *op, tg_part *part, reader *r, tg_error *err)
{
	part_state *s = part->state;
	const uint64_t round_in = get_varint(r);
	const int	round = round_in > MAX_ROUNDS ? -1 : (int) round_in;
	writer		w = {.ctx = ctx};
	tg_status	st = TG_OK;

	if (round < 0)
		return tg_error_set(err, TG_EDATA, "a flow message names round %llu", (unsigned long long) round_in);
	if (s == NULL || s->mask == NULL || (round > 0 && s->flow_acc == NULL) || (round > 1 && s->flow_wait == NULL))
		return tg_error_set(err, TG_EDATA, "a flow message reached a part that was not routed");
	put_header(&w, TG_PART_FLOW | REPLY, op->kind);
	if (round == 0)
		st = flow_begin(ctx, op, part, r, &w, err);
	else
	{
		/* from the neighbour above into the rows before ours, from the one below into those after */
		for (int side = 0; side < 2 && st == TG_OK; side++)
		{
			reader		routing = get_section(r),
						values = get_section(r);

			if (routing.bad || values.bad)
				st = tg_error_set(err, TG_EDATA, "a flow message is truncated");
			else if ((routing.left > 0 && round != 1) || (values.left > 0 && round == 1))
				st = tg_error_set(err, TG_EDATA, "a flow message of round %d is malformed", round);
			else if (routing.left > 0)
				st = tg_part_get_halo_routing(ctx, op, &routing, s, side, err);
			else if (values.left > 0)
				st = get_ready(ctx, &values, s, side, err);
		}
		put_section(&w, NULL, 0);
		put_section(&w, NULL, 0);
	}
	if (st == TG_OK)
		st = reader_done(r, "a flow message", err);
	if (st == TG_OK && round == 1)
	{
		tg_phase(ctx, "flow of the part");
		st = flow_first_sums(ctx, op, part, err);
	}
	else if (st == TG_OK && round > 1)
	{
		tg_phase(ctx, "flow of the part: values handed over");
		st = flow_push(ctx, op, s, false, err);
	}
	for (int side = 0; side < 2 && st == TG_OK; side++)
	{
		if (round > 0)
			put_ready(&w, s, side);
		else
			put_section(&w, NULL, 0);
	}
	if (st == TG_OK)
		st = writer_done(&w, &part->reply, err);
	else
		tg_free(ctx, w.data);
	return st;
}

/*
 * Section `which` of a flow reply (after its header) as a reader, bad where
 * the reply is cut short; empty for a part the round left out (tg_parts_flow_idle).
 */
static reader
flow_reply_section(const tg_part_bytes *b, int which)
{
	reader		r = {b->data + 6, b->size - 6, b->size < 6};
	reader		sec = {NULL, 0, true};

	if (b->size == 0)
		return (reader) {NULL, 0, false};

	for (int k = 0; k <= which && !r.bad; k++)
		sec = get_section(&r);
	return sec;
}

/*
 * Does part i have nothing to do in the flow's next round (from round 2 on:
 * its neighbours handed it no value in the round whose replies c keeps)?
 * It is then left out: no message, no reply.
 */
bool
tg_parts_flow_idle(const coordinator *c, int i)
{
	for (int side = 0; side < 2; side++)
	{
		const int	j = neighbour(c, i, side);

		if (j >= 0 && flow_reply_section(&c->slot[TG_PART_FLOW][j], side == 0 ? VALUES_LAST : VALUES_FIRST).left > 0)
			return false;
	}
	return true;
}

/* Did no part hand a value over in the round?  (Round 0 hands routing over.) */
tg_status
tg_parts_flow_settled(const coordinator *c, const tg_part_bytes *replies, bool *settled, tg_error *err)
{
	*settled = c->round > 0;
	for (int i = 0; i < c->n; i++)
		for (int which = ROUTING_FIRST; which <= VALUES_LAST; which++)
		{
			reader		sec = flow_reply_section(&replies[i], which);

			if (sec.bad)
				return tg_error_set(err, TG_EDATA, "the flow reply of %s is truncated", c->names[i]);
			if (which >= VALUES_FIRST && sec.left > 0)
				*settled = false;
		}
	return TG_OK;
}

/*
 * Round 0: the halo's depth (rows each part computes of each neighbour's:
 * as many as allowed, short of a whole part) and every crossing flat's
 * height; every round after: the sections of the neighbours' last replies
 * that face part i.
 */
tg_status
tg_parts_put_flow(writer *w, const coordinator *c, int i, tg_error *err)
{
	put_varint(w, (uint64_t) c->round);
	if (c->round == 0)
	{
		int			halo = tg_part_flow_halo;

		for (int k = 0; k < c->n; k++)
			halo = c->height[k] - 1 < halo ? c->height[k] - 1 : halo;
		put_i32(w, halo < 1 ? 1 : halo);
		return tg_parts_put_heights(w, c, err);
	}
	for (int side = 0; side < 2; side++)
	{
		const int	j = neighbour(c, i, side);
		const int	sections[2] = {side == 0 ? ROUTING_LAST : ROUTING_FIRST, side == 0 ? VALUES_LAST : VALUES_FIRST};

		for (int s = 0; s < 2; s++)
		{
			reader		sec = {NULL, 0, false};

			if (j >= 0)
				sec = flow_reply_section(&c->slot[TG_PART_FLOW][j], sections[s]);
			if (sec.bad)
				return tg_error_set(err, TG_EDATA, "the flow reply of %s is truncated", c->names[j]);
			put_section(w, sec.p, sec.left);
		}
	}
	return TG_OK;
}
