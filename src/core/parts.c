/*
 * parts.c — a coverage partitioned by rows of tiles over several servers:
 * every server computes on the part it holds, the coordinator stitches what
 * crosses part boundaries, and only that crosses the network.
 *
 *   slope  edges: each part hands over its first and last row;
 *          finish: each part computes with the rows around it.
 *   fill   edges; scan: each part is flooded with its own outlets and its
 *          first and last rows as seeds (Barnes 2016, fill_strips.c) and
 *          hands over its label edges; the coordinator joins the labels
 *          across boundaries and solves them; finish: each part floods
 *          again and raises its cells to their labels' levels.
 * The result equals the single-grid run cell for cell.
 *
 * A part runs a phase as tg_run with job->part set: the coordinator's
 * message in, the reply out.  Messages and replies are byte strings in this
 * file's format (native byte order, which the first word checks), read with
 * every length checked.  Rows of values travel as floats where every value
 * of the row set is exact in one (integer DEMs), else as doubles.
 */
#include "tg_tiles.h"
#include "tg_pool.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PART_MAGIC 0x54475031u	/* "TGP1" */

/* What a message or a reply is. */
enum
{
	M_EDGES = 'E',				/* to a part: hand over your edges */
	R_EDGES = 'e',				/* its place on the grid, first and last rows */
	M_SCAN = 'S',				/* to a part: scan yourself (fill) */
	R_SCAN = 's',				/* its label edges, first and last rows' labels */
	M_FINISH = 'F',				/* to a part: write your tiles */
	R_FINISH = 'f'				/* the tiles written */
};

/* ------------------------------------------------------------------------
 * Byte strings
 * ------------------------------------------------------------------------ */
typedef struct writer
{
	const tg_ctx *ctx;
	uint8_t    *data;
	size_t		size;
	size_t		cap;
	bool		failed;
} writer;

static void
put(writer *w, const void *p, size_t n)
{
	if (w->failed)
		return;
	if (w->size + n > w->cap)
	{
		size_t		cap = w->cap ? w->cap : 256;
		uint8_t    *d;

		while (cap < w->size + n)
			cap *= 2;
		d = tg_alloc(w->ctx, cap);
		if (d == NULL)
		{
			w->failed = true;
			return;
		}
		if (w->size)
			memcpy(d, w->data, w->size);
		tg_free(w->ctx, w->data);
		w->data = d;
		w->cap = cap;
	}
	memcpy(w->data + w->size, p, n);
	w->size += n;
}

static void
put_i32(writer *w, int32_t v)
{
	put(w, &v, sizeof v);
}

static void
put_u8(writer *w, uint8_t v)
{
	put(w, &v, 1);
}

/* n values: floats where every one is exact as a float (NaN included), else doubles. */
static void
put_values(writer *w, const double *v, size_t n)
{
	bool		single = true;

	for (size_t i = 0; i < n && single; i++)
		single = isnan(v[i]) || (double) (float) v[i] == v[i];
	put_u8(w, single);
	if (single)
		for (size_t i = 0; i < n; i++)
		{
			const float f = (float) v[i];

			put(w, &f, sizeof f);
		}
	else
		put(w, v, n * sizeof(double));
}

/*
 * n labels as differences from the label before plus one: a row's labels
 * mostly run on by one, and their zeros compress well.
 */
static void
put_runs(writer *w, const uint32_t *v, size_t n)
{
	uint32_t	prev = UINT32_MAX;

	for (size_t i = 0; i < n; i++)
	{
		const uint32_t d = v[i] - prev - 1;

		put(w, &d, sizeof d);
		prev = v[i];
	}
}

static void
put_header(writer *w, uint8_t type, tg_op_kind kind)
{
	put_i32(w, (int32_t) PART_MAGIC);
	put_u8(w, type);
	put_u8(w, (uint8_t) kind);
}

static tg_status
writer_done(writer *w, tg_part_bytes *out, tg_error *err)
{
	if (w->failed)
	{
		tg_free(w->ctx, w->data);
		return tg_error_set(err, TG_ENOMEM, "could not allocate a message of %zu bytes", w->size);
	}
	out->data = w->data;
	out->size = w->size;
	return TG_OK;
}

typedef struct reader
{
	const uint8_t *p;
	size_t		left;
	bool		bad;
} reader;

static void
get(reader *r, void *out, size_t n)
{
	if (r->bad || n > r->left)
	{
		r->bad = true;
		memset(out, 0, n);
		return;
	}
	memcpy(out, r->p, n);
	r->p += n;
	r->left -= n;
}

static int32_t
get_i32(reader *r)
{
	int32_t		v;

	get(r, &v, sizeof v);
	return v;
}

static uint8_t
get_u8(reader *r)
{
	uint8_t		v;

	get(r, &v, 1);
	return v;
}

/* n values (put_values) into v. */
static void
get_values(reader *r, double *v, size_t n)
{
	const bool	single = get_u8(r) != 0;
	const size_t size = single ? sizeof(float) : sizeof(double);

	if (r->bad || n > r->left / size)
	{
		r->bad = true;
		return;
	}
	for (size_t i = 0; i < n; i++)
	{
		if (single)
		{
			float		f;

			memcpy(&f, r->p + i * size, size);
			v[i] = f;
		}
		else
			memcpy(&v[i], r->p + i * size, size);
	}
	r->p += n * size;
	r->left -= n * size;
}

/* n labels (put_runs) into v. */
static void
get_runs(reader *r, uint32_t *v, size_t n)
{
	uint32_t	prev = UINT32_MAX;

	for (size_t i = 0; i < n && !r->bad; i++)
	{
		uint32_t	d;

		get(r, &d, sizeof d);
		v[i] = prev + 1 + d;
		prev = v[i];
	}
}

/* Open a message or reply of `type`; its operation into *kind. */
static tg_status
open_reader(reader *r, const tg_part_bytes *b, uint8_t type, tg_op_kind *kind, const char *what,
			tg_error *err)
{
	uint32_t	magic;

	r->p = b->data;
	r->left = b->data ? b->size : 0;
	r->bad = false;
	get(r, &magic, sizeof magic);
	if (!r->bad && magic == __builtin_bswap32(PART_MAGIC))
		return tg_error_set(err, TG_EUNSUPPORTED, "%s comes from a server of the other byte order", what);
	if (r->bad || magic != PART_MAGIC || get_u8(r) != type)
		return tg_error_set(err, TG_EDATA, "%s is not a part message of the expected kind", what);
	*kind = (tg_op_kind) get_u8(r);
	return TG_OK;
}

static tg_status
reader_done(const reader *r, const char *what, tg_error *err)
{
	if (r->bad || r->left != 0)
		return tg_error_set(err, TG_EDATA, "%s is truncated or has trailing bytes", what);
	return TG_OK;
}

/* ------------------------------------------------------------------------
 * Operations
 * ------------------------------------------------------------------------ */

/* Rows each part needs from its neighbours, 0 where op cannot run over parts. */
static int
halo_rows(tg_op_kind kind)
{
	return kind == TG_OP_SLOPE || kind == TG_OP_FILL ? 1 : 0;
}

static bool
has_scan(tg_op_kind kind)
{
	return kind == TG_OP_FILL;
}

bool
tg_op_in_parts(const tg_op *op, const char **why_not)
{
	*why_not = NULL;
	if (halo_rows(op->kind) == 0)
		*why_not = "tg_fill and tg_slope";
	else if (op->kind == TG_OP_FILL && (op->fill_method != TG_FILL_PRIORITY_FLOOD || op->epsilon != 0))
		*why_not = "tg_fill with method priority-flood and epsilon 0";
	return *why_not == NULL;
}

/* ------------------------------------------------------------------------
 * A part's run
 * ------------------------------------------------------------------------ */

/* What a part knows from a scan or finish message. */
typedef struct part_message
{
	int			index;
	int			count;
	int			width;
	double	   *above;			/* halo rows, NULL for the first part */
	double	   *below;			/* NULL for the last */
	double	   *levels;			/* fill finish: 1 + 2 * width */
} part_message;

static void
part_message_free(const tg_ctx *ctx, part_message *m)
{
	tg_free(ctx, m->above);
	tg_free(ctx, m->below);
	tg_free(ctx, m->levels);
}

static tg_status
read_part_message(const tg_ctx *ctx, reader *r, tg_op_kind kind, bool finish, part_message *m,
				  tg_error *err)
{
	const int	halo = halo_rows(kind);

	memset(m, 0, sizeof *m);
	m->index = get_i32(r);
	m->count = get_i32(r);
	m->width = get_i32(r);
	if (r->bad || m->count < 1 || m->index < 0 || m->index >= m->count || m->width < 1)
		return tg_error_set(err, TG_EDATA, "a part message names part %d of %d, %d wide", m->index, m->count,
							m->width);
	if (m->index > 0)
	{
		m->above = tg_alloc(ctx, sizeof(double) * (size_t) m->width * halo);
		if (m->above)
			get_values(r, m->above, (size_t) m->width * halo);
	}
	if (m->index + 1 < m->count)
	{
		m->below = tg_alloc(ctx, sizeof(double) * (size_t) m->width * halo);
		if (m->below)
			get_values(r, m->below, (size_t) m->width * halo);
	}
	if (finish && has_scan(kind))
	{
		m->levels = tg_alloc(ctx, sizeof(double) * (1 + 2 * (size_t) m->width));
		if (m->levels)
			get_values(r, m->levels, 1 + 2 * (size_t) m->width);
	}
	if ((m->index > 0 && !m->above) || (m->index + 1 < m->count && !m->below) ||
		(finish && has_scan(kind) && !m->levels))
		return tg_error_set(err, TG_ENOMEM, "could not allocate a part message");
	return reader_done(r, "a part message", err);
}

/*
 * The part's rows as doubles (NaN = nodata) with `above` rows before them
 * and `below` after; *g keeps the DEM's type.
 */
static tg_status
read_part(const tg_ctx *ctx, const tg_job *job, tg_grid_band *g, int row0, int nrows, int above,
		  int below, double **z, tg_error *err)
{
	const size_t W = (size_t) job->layout->width;

	*z = tg_alloc(ctx, sizeof(double) * W * ((size_t) nrows + above + below) + 1);
	if (*z == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate a part of %d rows", nrows);
	g->as_rows = true;
	g->rows = *z + W * above;
	g->row0 = row0;
	g->nrows = nrows;
	return tg_read_input(ctx, job->layout, &job->inputs[0], g, row0, nrows, err);
}

static tg_status
part_edges(const tg_ctx *ctx, const tg_op *op, const tg_job *job, tg_grid_band *g, tg_part_bytes *reply,
		   tg_error *err)
{
	const tg_layout *l = job->layout;
	const int	halo = halo_rows(op->kind),
				n = l->height < halo ? l->height : halo;
	writer		w = {.ctx = ctx};
	double	   *first = NULL,
			   *last = NULL;
	tg_status	st = read_part(ctx, job, g, 0, n, 0, 0, &first, err);

	if (st == TG_OK)
		st = read_part(ctx, job, g, l->height - n, n, 0, 0, &last, err);
	if (st == TG_OK && l->height < halo)
		st = tg_error_set(err, TG_EDATA, "%s has %d rows, fewer than the %d its neighbours need",
						  l->name, l->height, halo);
	if (st == TG_OK)
	{
		put_header(&w, R_EDGES, op->kind);
		put_i32(&w, l->width);
		put_i32(&w, l->height);
		put(&w, &l->geo, sizeof l->geo);
		put_values(&w, first, (size_t) l->width * n);
		put_values(&w, last, (size_t) l->width * n);
		st = writer_done(&w, reply, err);
	}
	tg_free(ctx, first);
	tg_free(ctx, last);
	return st;
}

typedef struct label_edge
{
	uint32_t	a;
	uint32_t	b;
	double		height;
} label_edge;

static int
cmp_edge(const void *x, const void *y)
{
	const label_edge *e = x,
			   *f = y;

	if (e->a != f->a)
		return e->a < f->a ? -1 : 1;
	return (e->b > f->b) - (e->b < f->b);
}

/* The edges in label order (the graph gives them in hash order): their labels then run on. */
static void
sort_edges(tg_fill_part *p)
{
	label_edge *e = malloc((p->nedges ? p->nedges : 1) * sizeof(label_edge));

	if (e == NULL)
		return;					/* unsorted is as valid, only larger */
	for (size_t i = 0; i < p->nedges; i++)
		e[i] = (label_edge) {p->a[i], p->b[i], p->height[i]};
	qsort(e, p->nedges, sizeof *e, cmp_edge);
	for (size_t i = 0; i < p->nedges; i++)
	{
		p->a[i] = e[i].a;
		p->b[i] = e[i].b;
		p->height[i] = e[i].height;
	}
	free(e);
}

static tg_status
part_scan(const tg_ctx *ctx, const tg_op *op, const tg_job *job, const part_message *m, tg_grid_band *g,
		  tg_part_bytes *reply, tg_error *err)
{
	const tg_layout *l = job->layout;
	const size_t W = (size_t) l->width;
	const int	above = m->above ? 1 : 0,
				below = m->below ? 1 : 0;
	writer		w = {.ctx = ctx};
	tg_fill_part p;
	double	   *z;
	tg_status	st = read_part(ctx, job, g, 0, l->height, above, below, &z, err);

	memset(&p, 0, sizeof p);
	if (st == TG_OK)
	{
		if (above)
			memcpy(z, m->above, W * sizeof(double));
		if (below)
			memcpy(z + W * (above + l->height), m->below, W * sizeof(double));
		tg_phase(ctx, "fill scan of the part");
		st = tg_fill_part_scan(ctx, l->width, m->index, m->count, l->height, z, &p, err);
	}
	if (st == TG_OK)
	{
		put_header(&w, R_SCAN, op->kind);
		put_i32(&w, m->index);
		put(&w, &p.nedges, sizeof p.nedges);
		sort_edges(&p);
		put_runs(&w, p.a, p.nedges);
		put_runs(&w, p.b, p.nedges);
		put_values(&w, p.height, p.nedges);
		put_runs(&w, p.first, W);
		put_runs(&w, p.last, W);
		st = writer_done(&w, reply, err);
	}
	tg_fill_part_free(ctx, &p);
	tg_free(ctx, z);
	return st;
}

static tg_status
part_finish(const tg_ctx *ctx, const tg_op *op, const tg_job *job, const part_message *m, tg_grid_band *g,
			tg_part_bytes *reply, tg_error *err)
{
	const tg_layout *l = job->layout;
	const size_t W = (size_t) l->width,
				n = W * l->height;
	const int	above = m->above ? 1 : 0,
				below = m->below ? 1 : 0;
	writer		w = {.ctx = ctx};
	tg_output	out;
	double	   *z,
			   *filled = NULL;
	float	   *slope = NULL;
	tg_status	st = read_part(ctx, job, g, 0, l->height, above, below, &z, err);

	if (st == TG_OK)
	{
		if (above)
			memcpy(z, m->above, W * sizeof(double));
		if (below)
			memcpy(z + W * (above + l->height), m->below, W * sizeof(double));
		st = tg_op_plan(op, &g->band, &out, err);
	}
	if (st == TG_OK && op->kind == TG_OP_FILL)
	{
		filled = tg_alloc(ctx, n * sizeof(double) + 1);
		tg_phase(ctx, "fill of the part");
		st = filled ? tg_fill_part_finish(ctx, l->width, m->index, m->count, l->height, z, m->levels, filled, err)
			: tg_error_set(err, TG_ENOMEM, "could not allocate a filled part of %zu cells", n);
		out.planes[0].data = filled;
		out.planes[0].type = TG_PT_64BF;
		out.planes[0].has_marker = false;
	}
	else if (st == TG_OK)
	{
		tg_band		rows;
		tg_slope_params p;

		/* the part's rows with those around it as a 64BF band, nodata NaN */
		memset(&rows, 0, sizeof rows);
		rows.pixtype = TG_PT_64BF;
		rows.width = l->width;
		rows.height = l->height + above + below;
		rows.data = z;
		p.pixel_width = tg_georef_pixel_width(&l->geo);
		p.pixel_height = tg_georef_pixel_height(&l->geo);
		p.scale = op->slope_scale;
		p.units = op->slope_units;
		p.out_nodata = (float) out.specs[0].nodata;
		slope = tg_alloc(ctx, sizeof(float) * W * rows.height + 1);
		st = slope ? tg_slope(ctx, &rows, &p, slope, err)
			: tg_error_set(err, TG_ENOMEM, "could not allocate the slopes of a part of %zu cells", n);
		out.planes[0].data = slope + W * above;
		out.planes[0].type = TG_PT_32BF;
		out.planes[0].has_marker = false;
	}
	tg_free(ctx, z);
	if (st == TG_OK)
	{
		tg_phase(ctx, "encode");
		st = tg_write_tiles(ctx, job, &out, 1, 0, l->height, err);
	}
	if (st == TG_OK)
	{
		put_header(&w, R_FINISH, op->kind);
		put_i32(&w, l->ntiles);
		st = writer_done(&w, reply, err);
	}
	tg_free(ctx, filled);
	tg_free(ctx, slope);
	return st;
}

tg_status
tg_run_part(const tg_ctx *ctx, const tg_op *op, const tg_job *job, tg_error *err)
{
	const tg_layout *l = job->layout;
	tg_part    *part = job->part;
	const char *why_not;
	tg_grid_band g;
	part_message m;
	tg_op_kind	kind;
	reader		r;
	uint8_t		type;
	tg_status	st;

	memset(&g, 0, sizeof g);
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
	if (st == TG_OK && (size_t) l->width * ((size_t) l->height + 2) * tg_op_bytes_per_cell(op) > job->memory_budget)
	{
		tg_error_set(err, TG_ELIMIT, "%s: the part %s of %d x %d cells needs about %zu MB, more than %s (%zu MB)",
					 job->function, l->name, l->width, l->height,
					 ((size_t) l->width * l->height * tg_op_bytes_per_cell(op)) >> 20, job->budget_name,
					 job->memory_budget >> 20);
		tg_error_hint(err, "Split the coverage into more partitions, or raise %s on this server.",
					  job->budget_name);
		st = TG_ELIMIT;
	}
	if (st != TG_OK)
		return st;
	if (type == M_EDGES)
	{
		st = reader_done(&r, "a part message", err);
		if (st == TG_OK)
			st = part_edges(ctx, op, job, &g, &part->reply, err);
	}
	else if (type == M_SCAN || type == M_FINISH)
	{
		st = read_part_message(ctx, &r, kind, type == M_FINISH, &m, err);
		if (st == TG_OK && m.width != l->width)
			st = tg_error_set(err, TG_EDATA, "the part message is for a part %d wide, %s is %d wide", m.width,
							  l->name, l->width);
		if (st == TG_OK && type == M_SCAN && !has_scan(op->kind))
			st = tg_error_set(err, TG_EDATA, "%s has no scan phase", job->function);
		if (st == TG_OK)
			st = type == M_SCAN ? part_scan(ctx, op, job, &m, &g, &part->reply, err)
				: part_finish(ctx, op, job, &m, &g, &part->reply, err);
	}
	else
		st = tg_error_set(err, TG_EDATA, "a part message of unknown type %d", type);
	part_message_free(ctx, &m);
	return st;
}

/* ------------------------------------------------------------------------
 * The coordinator
 * ------------------------------------------------------------------------ */

/* A part's edges reply. */
typedef struct part_place
{
	int			width;
	int			height;
	tg_georef	geo;
	double	   *first;			/* halo rows */
	double	   *last;
	int			order;			/* its place, top to bottom */
} part_place;

static bool
near(double a, double b, double tolerance)
{
	return fabs(a - b) <= tolerance;
}

/* Parse every edges reply; put the parts in their order on the grid (order[k]: the k-th part from the top). */
static tg_status
place_parts(const tg_ctx *ctx, tg_op_kind kind, int n, const char *const *names, const tg_part_bytes *edges,
			part_place *pl, int *order, tg_error *err)
{
	const int	halo = halo_rows(kind);

	for (int i = 0; i < n; i++)
	{
		reader		r;
		tg_op_kind	k;
		tg_status	st = open_reader(&r, &edges[i], R_EDGES, &k, "an edges reply", err);
		size_t		cells;

		if (st != TG_OK)
			return st;
		pl[i].width = get_i32(&r);
		pl[i].height = get_i32(&r);
		get(&r, &pl[i].geo, sizeof pl[i].geo);
		if (r.bad || k != kind || pl[i].width < 1 || pl[i].height < halo)
			return tg_error_set(err, TG_EDATA, "the edges reply of %s does not describe a part", names[i]);
		cells = (size_t) pl[i].width * halo;
		pl[i].first = tg_alloc(ctx, cells * sizeof(double) + 1);
		pl[i].last = tg_alloc(ctx, cells * sizeof(double) + 1);
		if (!pl[i].first || !pl[i].last)
			return tg_error_set(err, TG_ENOMEM, "could not allocate the edges of %d parts", n);
		get_values(&r, pl[i].first, cells);
		get_values(&r, pl[i].last, cells);
		st = reader_done(&r, "an edges reply", err);
		if (st != TG_OK)
			return st;
		order[i] = i;
	}
	/* top to bottom: along the grid's rows (scale_y < 0: north first) */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0; j--)
		{
			const tg_georef *a = &pl[order[j - 1]].geo,
					   *b = &pl[order[j]].geo;
			const int	t = order[j];

			if ((b->upperleft_y - a->upperleft_y) / a->scale_y >= 0)
				break;
			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	pl[order[0]].order = 0;
	for (int k = 1; k < n; k++)
	{
		part_place *p = &pl[order[k]];
		const part_place *q = &pl[order[k - 1]];
		const double tol = 1e-6 * fabs(q->geo.scale_y),
					expect_y = q->geo.upperleft_y + q->height * q->geo.scale_y;

		p->order = k;
		if (p->width != q->width || p->geo.srid != q->geo.srid ||
			!near(p->geo.scale_x, q->geo.scale_x, 1e-9 * fabs(q->geo.scale_x)) ||
			!near(p->geo.scale_y, q->geo.scale_y, 1e-9 * fabs(q->geo.scale_y)) ||
			p->geo.skew_x != q->geo.skew_x || p->geo.skew_y != q->geo.skew_y ||
			!near(p->geo.upperleft_x, q->geo.upperleft_x, 1e-6 * fabs(q->geo.scale_x)))
		{
			tg_error_set(err, TG_EDATA, "the parts on %s and %s do not lie on one grid of whole rows",
						 names[order[k - 1]], names[order[k]]);
			tg_error_detail(err, "%s: %d columns from x %.9g, SRID %d; %s: %d columns from x %.9g, SRID %d",
							names[order[k - 1]], q->width, q->geo.upperleft_x, q->geo.srid,
							names[order[k]], p->width, p->geo.upperleft_x, p->geo.srid);
			tg_error_hint(err, "Partition the coverage by rows of tiles that span its whole width.");
			return TG_EDATA;
		}
		if (!near(p->geo.upperleft_y, expect_y, tol))
		{
			tg_error_set(err, TG_EDATA, "the parts on %s and %s do not meet: one ends at y %.9g, the next begins at y %.9g",
						 names[order[k - 1]], names[order[k]], expect_y, p->geo.upperleft_y);
			tg_error_hint(err, "Every row of tiles must be in exactly one partition.");
			return TG_EDATA;
		}
	}
	return TG_OK;
}

static void
places_free(const tg_ctx *ctx, part_place *pl, int n)
{
	for (int i = 0; pl && i < n; i++)
	{
		tg_free(ctx, pl[i].first);
		tg_free(ctx, pl[i].last);
	}
	tg_free(ctx, pl);
}

/* The scans of the fill, solved: levels[i] for part i (1 + 2 * width each). */
static tg_status
solve_fill(const tg_ctx *ctx, int n, const char *const *names, const tg_part_bytes *scans,
		   const part_place *pl, const int *order, double **levels, tg_error *err)
{
	const int	W = pl[0].width;
	tg_fill_part *parts = tg_alloc(ctx, n * sizeof(tg_fill_part));
	const double **first = tg_alloc(ctx, n * sizeof(double *)),
			  **last = tg_alloc(ctx, n * sizeof(double *));
	double	  **lv = tg_alloc(ctx, n * sizeof(double *));
	tg_status	st = TG_OK;

	if (!parts || !first || !last || !lv)
		st = tg_error_set(err, TG_ENOMEM, "could not allocate the fill's %d parts", n);
	else
		memset(parts, 0, n * sizeof(tg_fill_part));
	for (int i = 0; i < n && st == TG_OK; i++)
	{
		const int	k = pl[i].order;
		tg_fill_part *p = &parts[k];
		reader		r;
		tg_op_kind	kind;
		size_t		ne;

		st = open_reader(&r, &scans[i], R_SCAN, &kind, "a scan reply", err);
		if (st != TG_OK)
			break;
		if (get_i32(&r) != k || kind != TG_OP_FILL)
		{
			st = tg_error_set(err, TG_EDATA, "the scan reply of %s is for another part", names[i]);
			break;
		}
		get(&r, &ne, sizeof ne);
		if (r.bad || ne > r.left / (2 * sizeof(uint32_t) + sizeof(float)))
		{
			st = tg_error_set(err, TG_EDATA, "the scan reply of %s is truncated", names[i]);
			break;
		}
		p->nedges = ne;
		p->a = tg_alloc(ctx, ne * sizeof(uint32_t) + 1);
		p->b = tg_alloc(ctx, ne * sizeof(uint32_t) + 1);
		p->height = tg_alloc(ctx, ne * sizeof(double) + 1);
		p->first = tg_alloc(ctx, (size_t) W * sizeof(uint32_t));
		p->last = tg_alloc(ctx, (size_t) W * sizeof(uint32_t));
		if (!p->a || !p->b || !p->height || !p->first || !p->last)
		{
			st = tg_error_set(err, TG_ENOMEM, "could not allocate the %zu label edges of %s", ne, names[i]);
			break;
		}
		get_runs(&r, p->a, ne);
		get_runs(&r, p->b, ne);
		get_values(&r, p->height, ne);
		get_runs(&r, p->first, W);
		get_runs(&r, p->last, W);
		st = reader_done(&r, "a scan reply", err);
		/* labels outside the part's own are refused: the solve indexes by them */
		for (size_t e = 0; e < ne && st == TG_OK; e++)
			if ((uint64_t) p->a[e] > 2 * (uint64_t) n * W || (uint64_t) p->b[e] > 2 * (uint64_t) n * W)
				st = tg_error_set(err, TG_EDATA, "the scan reply of %s names label %u, beyond the grid's", names[i],
								  p->a[e] > p->b[e] ? p->a[e] : p->b[e]);
		first[k] = pl[i].first;
		last[k] = pl[i].last;
		lv[k] = levels[i];
	}
	if (st == TG_OK)
		st = tg_fill_part_solve(ctx, W, n, parts, first, last, lv, err);
	for (int k = 0; parts && k < n; k++)
		tg_fill_part_free(ctx, &parts[k]);
	tg_free(ctx, parts);
	tg_free(ctx, first);
	tg_free(ctx, last);
	tg_free(ctx, lv);
	return st;
}

tg_status
tg_parts_messages(const tg_ctx *ctx, tg_op_kind kind, tg_part_phase phase, int n, const char *const *names,
				  const tg_part_bytes *edges, const tg_part_bytes *scans, tg_part_bytes *messages,
				  tg_error *err)
{
	const int	halo = halo_rows(kind);
	part_place *pl = NULL;
	int		   *order = NULL;
	double	  **levels = NULL;
	tg_status	st = TG_OK;

	memset(messages, 0, n * sizeof *messages);
	if (n < 1)
		return tg_error_set(err, TG_EINVAL, "a partitioned coverage needs at least one part");
	if (halo == 0)
		return tg_error_set(err, TG_EUNSUPPORTED, "this operation cannot run over a partitioned coverage");
	if (phase == TG_PART_EDGES)
	{
		for (int i = 0; i < n && st == TG_OK; i++)
		{
			writer		w = {.ctx = ctx};

			put_header(&w, M_EDGES, kind);
			st = writer_done(&w, &messages[i], err);
		}
		return st;
	}
	if (phase == TG_PART_SCAN && !has_scan(kind))
		return tg_error_set(err, TG_EINVAL, "this operation has no scan phase");
	if (edges == NULL || (phase == TG_PART_FINISH && has_scan(kind) && scans == NULL))
		return tg_error_set(err, TG_EINVAL, "the replies of the phases before are missing");
	pl = tg_alloc(ctx, n * sizeof(part_place));
	order = tg_alloc(ctx, n * sizeof(int));
	if (!pl || !order)
		st = tg_error_set(err, TG_ENOMEM, "could not allocate %d parts", n);
	else
		memset(pl, 0, n * sizeof(part_place));
	if (st == TG_OK)
		st = place_parts(ctx, kind, n, names, edges, pl, order, err);
	if (st == TG_OK && phase == TG_PART_FINISH && has_scan(kind))
	{
		levels = tg_alloc(ctx, n * sizeof(double *));
		if (levels == NULL)
			st = tg_error_set(err, TG_ENOMEM, "could not allocate %d parts", n);
		else
			memset(levels, 0, n * sizeof(double *));
		for (int i = 0; i < n && st == TG_OK; i++)
			if ((levels[i] = tg_alloc(ctx, sizeof(double) * (1 + 2 * (size_t) pl[0].width))) == NULL)
				st = tg_error_set(err, TG_ENOMEM, "could not allocate the fill's levels");
		if (st == TG_OK)
			st = solve_fill(ctx, n, names, scans, pl, order, levels, err);
	}
	for (int i = 0; i < n && st == TG_OK; i++)
	{
		const int	k = pl[i].order;
		const size_t cells = (size_t) pl[i].width * halo;
		writer		w = {.ctx = ctx};

		put_header(&w, phase == TG_PART_SCAN ? M_SCAN : M_FINISH, kind);
		put_i32(&w, k);
		put_i32(&w, n);
		put_i32(&w, pl[i].width);
		if (k > 0)
			put_values(&w, pl[order[k - 1]].last, cells);
		if (k + 1 < n)
			put_values(&w, pl[order[k + 1]].first, cells);
		if (levels)
			put_values(&w, levels[i], 1 + 2 * (size_t) pl[i].width);
		st = writer_done(&w, &messages[i], err);
	}
	if (st != TG_OK)
		for (int i = 0; i < n; i++)
			tg_free(ctx, messages[i].data);
	for (int i = 0; levels && i < n; i++)
		tg_free(ctx, levels[i]);
	tg_free(ctx, levels);
	places_free(ctx, pl, n);
	tg_free(ctx, order);
	return st;
}
