/*
 * part_coordinator.c — the coordinator (tg_parts_step): from the replies
 * of the phase just run and its state, the next phase and each part's
 * message; its state kept between calls as bytes.
 */
#include "scale/parts/part_state.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
coordinator_free(coordinator *c)
{
	for (int s = 0; s < SLOTS; s++)
		tg_free(c->ctx, c->slot[s]);
	for (int i = 0; c->dem_first && i < c->n; i++)
	{
		tg_free(c->ctx, c->dem_first[i]);
		tg_free(c->ctx, c->dem_last[i]);
	}
	tg_free(c->ctx, c->dem_first);
	tg_free(c->ctx, c->dem_last);
	tg_free(c->ctx, c->order);
	tg_free(c->ctx, c->row0);
	tg_free(c->ctx, c->col0);
	tg_free(c->ctx, c->height);
}

/* The state: kind, parts, last phase, round, then the replies kept (pointing into `in`). */
static tg_status
read_state(coordinator *c, const tg_part_bytes *in, tg_error *err)
{
	reader		r = {in->data, in->size, false};
	uint32_t	magic;

	get(&r, &magic, sizeof magic);
	if (r.bad || magic != STATE_MAGIC || get_u8(&r) != c->kind || get_i32(&r) != c->n)
		return tg_error_set(err, TG_EDATA, "the coordinator's state is not that of this run");
	c->last = (tg_part_phase) get_u8(&r);
	c->round = get_i32(&r);
	for (int s = 0; s < SLOTS && !r.bad; s++)
	{
		if (!get_u8(&r))
			continue;
		c->slot[s] = tg_alloc(c->ctx, c->n * sizeof(tg_part_bytes));
		if (c->slot[s] == NULL)
			return tg_error_set(err, TG_ENOMEM, "could not allocate the coordinator's state");
		for (int i = 0; i < c->n && !r.bad; i++)
		{
			get(&r, &c->slot[s][i].size, sizeof(size_t));
			if (c->slot[s][i].size > r.left)
				r.bad = true;
			else
			{
				c->slot[s][i].data = (uint8_t *) r.p;
				r.p += c->slot[s][i].size;
				r.left -= c->slot[s][i].size;
			}
		}
	}
	return reader_done(&r, "the coordinator's state", err);
}

static tg_status
write_state(const coordinator *c, tg_part_bytes *out, tg_error *err)
{
	writer		w = {.ctx = c->ctx};
	size_t		size = 4 + 1 + 4 + 1 + 4 + SLOTS;

	/* its size first: the state grows to megabytes, and doubling would copy it over and over */
	for (int s = 0; s < SLOTS; s++)
		for (int i = 0; c->slot[s] && i < c->n; i++)
			size += sizeof(size_t) + c->slot[s][i].size;
	if ((w.data = tg_alloc(c->ctx, size)) == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate the coordinator's state of %zu bytes", size);
	w.cap = size;
	put_i32(&w, (int32_t) STATE_MAGIC);
	put_u8(&w, (uint8_t) c->kind);
	put_i32(&w, c->n);
	put_u8(&w, (uint8_t) c->last);
	put_i32(&w, c->round);
	for (int s = 0; s < SLOTS; s++)
	{
		put_u8(&w, c->slot[s] != NULL);
		for (int i = 0; c->slot[s] && i < c->n; i++)
		{
			put(&w, &c->slot[s][i].size, sizeof(size_t));
			put(&w, c->slot[s][i].data, c->slot[s][i].size);
		}
	}
	return writer_done(&w, out, err);
}

static void
put_part_header(writer *w, const coordinator *c, tg_part_phase phase, int i)
{
	int			k = 0;

	while (c->order[k] != i)
		k++;
	put_header(w, (uint8_t) phase, c->kind);
	put_i32(w, k);
	put_i32(w, c->n);
	put_i32(w, c->W);
	put_i32(w, c->col0[i]);
	put_i32(w, c->row0[i]);
	put(w, &c->lat_top, sizeof c->lat_top);
}

/* Did no part's boundary values change in the round (its reply: two empty blocks after the header)? */
static bool
nothing_changed(const tg_part_bytes *replies, int n)
{
	for (int i = 0; i < n; i++)
		if (replies[i].size != 8 || replies[i].data[6] != 0 || replies[i].data[7] != 0)
			return false;
	return true;
}

/* The phase after c->last (whose replies are kept). */
static tg_part_phase
next_phase(coordinator *c, bool settled)
{
	switch (c->last)
	{
		case TG_PART_DONE:
			return TG_PART_EDGES;
		case TG_PART_EDGES:
			return c->kind == TG_OP_SLOPE ? TG_PART_FINISH : c->fill ? TG_PART_SCAN : TG_PART_SURFACE;
		case TG_PART_SCAN:
			return c->kind == TG_OP_FILL ? TG_PART_FINISH : TG_PART_SURFACE;
		case TG_PART_SURFACE:
			return TG_PART_FLATS;
		case TG_PART_FLATS:
			return settled ? TG_PART_HEIGHTS : TG_PART_FLATS;
		case TG_PART_HEIGHTS:
			return !accumulates(c->kind) ? TG_PART_FINISH : c->multiple ? TG_PART_FLOW : TG_PART_LINK;
		case TG_PART_LINK:
			return TG_PART_FINISH;
		case TG_PART_FLOW:
			return settled ? TG_PART_FINISH : TG_PART_FLOW;
		default:
			return TG_PART_DONE;
	}
}

tg_status
tg_parts_step(const tg_ctx *ctx, tg_op_kind kind, int n, const char *const *names,
			  const tg_part_bytes *replies, const tg_part_bytes *state_in, tg_part_phase *phase,
			  int *round, tg_part_bytes *messages, tg_part_bytes *state_out, tg_error *err)
{
	coordinator c;
	double	  **levels = NULL;
	tg_strip_inflow *inflows = NULL;
	size_t		ninflows = 0;
	bool		settled = false,
				placed = false;
	tg_status	st = TG_OK;

	memset(&c, 0, sizeof c);
	memset(messages, 0, n * sizeof *messages);
	memset(state_out, 0, sizeof *state_out);
	c.ctx = ctx;
	c.kind = kind;
	c.n = n;
	c.names = names;
	*phase = TG_PART_DONE;
	if (n < 1)
		return tg_error_set(err, TG_EINVAL, "a partitioned coverage needs at least one part");
	if (dem_halo(kind) == 0)
		return tg_error_set(err, TG_EUNSUPPORTED, "this operation cannot run over a partitioned coverage");
	if (state_in && state_in->data)
		st = read_state(&c, state_in, err);
	/* where the parts lie, once their edges are in (the flow's rounds need it to check their replies) */
	if (st == TG_OK && c.slot[TG_PART_EDGES])
	{
		st = tg_parts_place(&c, err);
		placed = true;
	}
	/* the replies of the phase just run */
	if (st == TG_OK && c.last != TG_PART_DONE)
	{
		if (replies == NULL)
			st = tg_error_set(err, TG_EINVAL, "the replies of the %s phase are missing", tg_part_phase_name(c.last));
		for (int i = 0; i < n && st == TG_OK; i++)
		{
			/* a part the flow's round left out replies nothing */
			const bool	left_out = c.last == TG_PART_FLOW && c.round >= 2 && tg_parts_flow_idle(&c, i);

			if (left_out ? replies[i].size != 0 : replies[i].size < 6 || replies[i].data[4] != (c.last | REPLY))
				st = tg_error_set(err, TG_EDATA, "the reply of %s is not one of the %s phase", names[i],
								  tg_part_phase_name(c.last));
		}
		if (st == TG_OK && c.last == TG_PART_FLATS)
			settled = nothing_changed(replies, n);
		if (st == TG_OK && c.last == TG_PART_FLOW)
			st = tg_parts_flow_settled(&c, replies, &settled, err);
		if (st == TG_OK && c.last < SLOTS)
		{
			if (c.slot[c.last] == NULL && (c.slot[c.last] = tg_alloc(ctx, n * sizeof(tg_part_bytes))) == NULL)
				st = tg_error_set(err, TG_ENOMEM, "could not allocate the coordinator's state");
			else
				memcpy(c.slot[c.last], replies, n * sizeof(tg_part_bytes));
		}
	}
	if (st == TG_OK && c.slot[TG_PART_EDGES] && !placed)
		st = tg_parts_place(&c, err);
	if (st != TG_OK)
		goto done;
	*phase = next_phase(&c, settled);
	c.round = (*phase == TG_PART_FLATS || *phase == TG_PART_FLOW) && c.last == *phase ? c.round + 1 : 0;
	if (c.round > MAX_ROUNDS)
	{
		st = tg_error_set(err, TG_ELIMIT, "the %s across parts did not settle in %d rounds",
						  *phase == TG_PART_FLATS ? "flats" : "flow", MAX_ROUNDS);
		goto done;
	}
	*round = c.round;
	c.last = *phase;
	/* the DEM rows around each part: sent in these phases, and the fill's levels solved from them */
	if (*phase == TG_PART_SCAN || *phase == TG_PART_SURFACE || *phase == TG_PART_FINISH)
		st = tg_parts_dem_rows(&c, err);
	if (st != TG_OK)
		goto done;
	if ((*phase == TG_PART_SURFACE || *phase == TG_PART_FINISH) && c.fill && c.kind != TG_OP_SLOPE &&
		(c.kind == TG_OP_FILL) == (*phase == TG_PART_FINISH))
	{
		levels = tg_alloc(ctx, n * sizeof(double *));
		if (levels == NULL)
			st = tg_error_set(err, TG_ENOMEM, "could not allocate %d parts", n);
		else
			memset(levels, 0, n * sizeof(double *));
		for (int i = 0; i < n && st == TG_OK; i++)
			if ((levels[i] = tg_alloc(ctx, sizeof(double) * (1 + 2 * (size_t) c.W))) == NULL)
				st = tg_error_set(err, TG_ENOMEM, "could not allocate the fill's levels");
		if (st == TG_OK)
			st = tg_parts_solve_fill(&c, levels, err);
	}
	if (st == TG_OK && *phase == TG_PART_FINISH && accumulates(c.kind) && !c.multiple)
		st = tg_parts_solve_flow(&c, &inflows, &ninflows, err);
	for (int i = 0; i < n && st == TG_OK && *phase != TG_PART_DONE; i++)
	{
		writer		w = {.ctx = ctx};

		if (*phase == TG_PART_FLOW && c.round >= 2 && tg_parts_flow_idle(&c, i))
		{
			messages[i] = (tg_part_bytes) {NULL, 0};
			continue;
		}
		if (*phase == TG_PART_EDGES || *phase == TG_PART_HEIGHTS)
			put_header(&w, (uint8_t) *phase, kind);
		else if (*phase == TG_PART_FLOW && c.round >= 2)
			put_header(&w, TG_PART_FLOW | BARE, kind);
		else
			put_part_header(&w, &c, *phase, i);
		if (*phase == TG_PART_SCAN || (*phase == TG_PART_FINISH && !routes(c.kind)) ||
			(*phase == TG_PART_SURFACE && c.fill))
			tg_parts_put_dem_halos(&w, &c, i);
		if (levels)
			put_values(&w, levels[i], 1 + 2 * (size_t) c.W);
		if (*phase == TG_PART_FLATS)
			st = tg_parts_put_flats(&w, &c, i, err);
		else if (*phase == TG_PART_FLOW)
			st = tg_parts_put_flow(&w, &c, i, err);
		else if (*phase == TG_PART_LINK || (*phase == TG_PART_FINISH && c.kind == TG_OP_DIRECTIONS))
			st = tg_parts_put_heights(&w, &c, err);
		else if (*phase == TG_PART_FINISH && accumulates(c.kind) && !c.multiple)
			tg_parts_put_inflows(&w, &c, i, inflows, ninflows);
		if (st == TG_OK)
			st = writer_done(&w, &messages[i], err);
		else
			tg_free(ctx, w.data);
	}
	if (st == TG_OK)
		st = write_state(&c, state_out, err);
	if (st != TG_OK)
		for (int i = 0; i < n; i++)
		{
			tg_free(ctx, messages[i].data);
			messages[i].data = NULL;
		}
done:
	for (int i = 0; levels && i < n; i++)
		tg_free(ctx, levels[i]);
	tg_free(ctx, levels);
	tg_free(ctx, inflows);
	/* the kept replies point into state_in or replies: only the slot arrays are ours */
	coordinator_free(&c);
	return st;
}
