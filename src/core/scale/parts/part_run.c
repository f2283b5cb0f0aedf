/*
 * part_run.c — a part's phase (tg_run_part): the coordinator's message
 * read, the phase run on the part's own tiles placed on the grid, its reply
 * written.
 */
#include "scale/parts/part_state.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * Operations and their phases
 * ------------------------------------------------------------------------ */

const char *
tg_part_phase_name(tg_part_phase phase)
{
	static const char *const names[] = {"done", "edges", "scan", "surface", "flats", "heights", "link", "flow", "finish"};

	return phase >= TG_PART_DONE && phase <= TG_PART_FINISH ? names[phase] : "?";
}

tg_part_phase
tg_part_message_phase(const tg_part_bytes *message)
{
	uint32_t	magic;
	uint8_t		type;

	if (message->data == NULL || message->size < 6)
		return TG_PART_DONE;
	memcpy(&magic, message->data, sizeof magic);
	type = message->data[4] & ~BARE;
	return magic == PART_MAGIC && type >= TG_PART_EDGES && type <= TG_PART_FINISH ? (tg_part_phase) type
		: TG_PART_DONE;
}

static tg_status
read_header(reader *r, tg_op_kind kind, part_message *m, tg_error *err)
{
	m->index = get_i32(r);
	m->count = get_i32(r);
	m->width = get_i32(r);
	m->col0 = get_i32(r);
	m->row0 = get_i32(r);
	get(r, &m->lat_top, sizeof m->lat_top);
	if (r->bad || m->count < 1 || m->index < 0 || m->index >= m->count || m->width < 1 || m->col0 < 0 ||
		m->col0 >= m->width || m->row0 < 0)
		return tg_error_set(err, TG_EDATA, "a part message names part %d of %d, %d wide", m->index, m->count,
							m->width);
	return TG_OK;
}

/* Phase `type` of a part, its message's header read (m; zero for the edges and the heights). */
static tg_status
run_phase(const tg_ctx *ctx, const tg_op *op, const tg_job *job, tg_part *part, uint8_t type, reader *rd,
		  const part_message *mp, tg_error *err)
{
	part_message m = *mp;
	reader		r = *rd;
	tg_grid_band g;
	tg_op		own;
	tg_status	st;

	memset(&g, 0, sizeof g);
	/*
	 * The grid's whole rows (the part's own columns may be fewer).  A
	 * geographic grid's rows have the whole grid's latitudes, as the single
	 * server computes them (from its first row's), for weights, distances
	 * and shares identical to its.
	 */
	own = *op;
	if (m.width > 0)
		own.flow.geom.width = m.width;
	if (own.flow.geom.geographic && m.width > 0)
	{
		own.flow.geom.lat_top = m.lat_top;
		own.flow.geom.row0 = m.row0;
	}
	op = &own;
	/* a later phase's message must be for the grid and the part the state was kept for */
	if (type != TG_PART_SURFACE && m.width > 0 && part->state != NULL)
	{
		const part_state *s = part->state;

		if (s->W != job->layout->width || s->H != job->layout->height || s->index != m.index ||
			s->count != m.count || s->row0 != m.row0)
			return tg_error_set(err, TG_EDATA, "a part message for part %d of %d, %d wide, reached part %d of %d, "
								"%d wide", m.index, m.count, m.width, s->index, s->count, s->W);
	}
	switch (type)
	{
		case TG_PART_EDGES:
			st = reader_done(&r, "an edges message", err);
			return st == TG_OK ? tg_part_edges(ctx, op, job, &g, &part->reply, err) : st;
		case TG_PART_SCAN:
			return tg_part_scan(ctx, op, job, &r, &m, &g, &part->reply, err);
		case TG_PART_SURFACE:
			return tg_part_surface(ctx, op, job, part, &r, &m, &g, err);
		case TG_PART_FLATS:
			return tg_part_flats(ctx, op, part, &r, err);
		case TG_PART_HEIGHTS:
			if (part->state == NULL || ((part_state *) part->state)->flats.d[0] == NULL)
				return tg_error_set(err, TG_EDATA, "a heights message reached a part that kept no flats");
			st = reader_done(&r, "a heights message", err);
			return st == TG_OK ? tg_part_heights(ctx, op, part, err) : st;
		case TG_PART_LINK:
			return tg_part_link(ctx, op, part, &r, err);
		case TG_PART_FLOW:
			return tg_part_flow(ctx, op, part, &r, err);
		case TG_PART_FINISH:
			return tg_part_finish(ctx, op, job, part, &r, &m, &g, err);
		default:
			return tg_error_set(err, TG_EDATA, "a part message of unknown type %d", type);
	}
}

tg_status
tg_run_part(const tg_ctx *ctx, const tg_op *op, const tg_job *job, tg_error *err)
{
	const tg_layout *l = job->layout;
	tg_part    *part = job->part;
	tg_layout	wide;
	tg_tile_place *places = NULL;
	tg_input	dem;
	tg_job		on_grid;
	const char *why_not;
	part_message m;
	tg_op_kind	kind = TG_OP_SLOPE;	/* open_reader sets it */
	reader		r;
	uint8_t		type;
	tg_status	st;

	memset(&m, 0, sizeof m);
	part->reply.data = NULL;
	part->reply.size = 0;
	if (!tg_op_in_parts(op, &why_not))
		return tg_error_set(err, TG_EUNSUPPORTED, "%s cannot run over a partitioned coverage: only %s can",
							job->function, why_not);
	if (part->message.size < 6 || part->message.data == NULL)
		return tg_error_set(err, TG_EDATA, "a part message is truncated");
	type = part->message.data[4];
	st = open_reader(&r, &part->message, type, &kind, "a part message", err);
	if (st == TG_OK && kind != op->kind)
		st = tg_error_set(err, TG_EDATA, "a part message for another operation reached %s", job->function);
	if (st == TG_OK && (type & BARE) && type != (TG_PART_FLOW | BARE))
		st = tg_error_set(err, TG_EDATA, "a part message of type %d comes without its header", type & ~BARE);
	if (st == TG_OK && (type & BARE))
		type = TG_PART_FLOW;
	else if (st == TG_OK && type != TG_PART_EDGES && type != TG_PART_HEIGHTS)
	{
		st = read_header(&r, kind, &m, err);
		if (st == TG_OK && m.col0 + l->width > m.width)
			st = tg_error_set(err, TG_EDATA, "the part message is for a grid %d wide from column %d, %s is %d wide",
							  m.width, m.col0, l->name, l->width);
	}
	if (st == TG_OK && m.width > 0 && (m.width != l->width || m.col0 != 0))
	{
		/* the grid's whole rows: the part's tiles moved by its first column, nodata around them */
		places = tg_alloc(ctx, (l->ntiles ? l->ntiles : 1) * sizeof(tg_tile_place));
		if (places == NULL)
			return tg_error_set(err, TG_ENOMEM, "could not place %d tiles", l->ntiles);
		for (int i = 0; i < l->ntiles; i++)
		{
			places[i] = l->tiles[i];
			places[i].col0 += m.col0;
		}
		wide = *l;
		wide.width = m.width;
		wide.tiles = places;
		wide.geo.upperleft_x -= m.col0 * l->geo.scale_x;
		wide.geo.upperleft_y -= m.col0 * l->geo.skew_y;
		dem = job->inputs[0];
		dem.layout = &wide;
		on_grid = *job;
		on_grid.layout = l = &wide;
		on_grid.inputs = &dem;
		on_grid.ninputs = 1;	/* a part reads the DEM alone */
		job = &on_grid;
	}
	if (st == TG_OK && (size_t) l->width * ((size_t) l->height + 4) * tg_op_bytes_per_cell(op, false) > job->memory_budget)
	{
		tg_error_set(err, TG_ELIMIT, "%s: the part %s of %d x %d cells needs about %zu MB, more than %s (%zu MB)",
					 job->function, l->name, l->width, l->height,
					 ((size_t) l->width * l->height * tg_op_bytes_per_cell(op, false)) >> 20, job->budget_name,
					 job->memory_budget >> 20);
		tg_error_hint(err, "Split the coverage into more partitions, or raise %s on this server.",
					  job->budget_name);
		st = TG_ELIMIT;
	}
	if (st == TG_OK)
		st = run_phase(ctx, op, job, part, type, &r, &m, err);
	tg_free(ctx, places);
	return st;
}
