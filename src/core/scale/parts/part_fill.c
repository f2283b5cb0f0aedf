/*
 * part_fill.c — the fill across parts (Barnes 2016): each part's scan (its
 * label edges and first and last rows' labels, tg_part_scan), the
 * coordinator's solution of the label graph (tg_parts_solve_fill), and the
 * part's surface filled with the levels it is handed (tg_part_surface_of,
 * tg_part_surface keeps it for the routing).
 */
#include "scale/parts/part_state.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * The fill's label edges, in label order (the graph gives them in hash
 * order): their labels then run on
 * ------------------------------------------------------------------------ */
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

static void
sort_edges(tg_fill_scan *p)
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

tg_status
tg_part_scan(const tg_ctx *ctx, const tg_op *op, const tg_job *job, reader *r, const part_message *m,
		  tg_grid_band *g, tg_part_bytes *reply, tg_error *err)
{
	const tg_layout *l = job->layout;
	const size_t W = (size_t) l->width;
	writer		w = {.ctx = ctx};
	tg_fill_scan p;
	double	   *above,
			   *below,
			   *z = NULL;
	tg_status	st = tg_part_read_halos(ctx, r, m, 1, &above, &below, err);

	memset(&p, 0, sizeof p);
	if (st == TG_OK)
		st = reader_done(r, "a scan message", err);
	if (st == TG_OK)
		st = tg_part_read_with_halos(ctx, job, g, above, below, &z, err);
	if (st == TG_OK)
	{
		tg_phase(ctx, "fill scan of the part");
		st = tg_fill_part_scan(ctx, l->width, m->index, m->count, l->height, z, &p, err);
	}
	if (st == TG_OK)
	{
		put_header(&w, TG_PART_SCAN | REPLY, op->kind);
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
	tg_fill_scan_free(ctx, &p);
	tg_free(ctx, z);
	tg_free(ctx, above);
	tg_free(ctx, below);
	return st;
}

/*
 * The part's DEM, filled where op fills (the fill's halos and levels read
 * from r), into *out (H * W, NaN = nodata).
 */
tg_status
tg_part_surface_of(const tg_ctx *ctx, const tg_op *op, const tg_job *job, reader *r, const part_message *m,
				tg_grid_band *g, double **out, tg_error *err)
{
	const tg_layout *l = job->layout;
	const size_t W = (size_t) l->width,
				n = W * l->height;
	double	   *above = NULL,
			   *below = NULL,
			   *levels = NULL,
			   *z = NULL;
	tg_status	st = TG_OK;

	*out = NULL;
	if (op_fills(op))
	{
		st = tg_part_read_halos(ctx, r, m, 1, &above, &below, err);
		levels = tg_alloc(ctx, sizeof(double) * (1 + 2 * W));
		if (st == TG_OK && levels == NULL)
			st = tg_error_set(err, TG_ENOMEM, "could not allocate the fill's levels");
		if (st == TG_OK)
			get_values(r, levels, 1 + 2 * W);
	}
	if (st == TG_OK)
		st = tg_part_read_with_halos(ctx, job, g, above, below, &z, err);
	if (st == TG_OK && op_fills(op))
	{
		*out = tg_alloc(ctx, n * sizeof(double) + 1);
		tg_phase(ctx, "fill of the part");
		st = *out ? tg_fill_part_finish(ctx, l->width, m->index, m->count, l->height, z, levels, *out, err)
			: tg_error_set(err, TG_ENOMEM, "could not allocate a filled part of %zu cells", n);
		tg_free(ctx, z);
	}
	else if (st == TG_OK)
		*out = z;
	tg_free(ctx, above);
	tg_free(ctx, below);
	tg_free(ctx, levels);
	return st;
}

/* Keep the routing surface; hand over its first and last two rows. */
tg_status
tg_part_surface(const tg_ctx *ctx, const tg_op *op, const tg_job *job, tg_part *part, reader *r,
			 const part_message *m, tg_grid_band *g, tg_error *err)
{
	const tg_layout *l = job->layout;
	const size_t W = (size_t) l->width,
				n = W * l->height;
	writer		w = {.ctx = ctx};
	part_state *s;
	double	   *surface;
	tg_status	st = tg_part_surface_of(ctx, op, job, r, m, g, &surface, err);

	if (st == TG_OK)
		st = reader_done(r, "a surface message", err);
	tg_part_forget(part);
	if (st == TG_OK)
	{
		s = keep_alloc(part, sizeof *s);
		if (s != NULL)
		{
			memset(s, 0, sizeof *s);
			part->state = s;
			s->z = keep_alloc(part, (n + 4 * W) * sizeof(double));
		}
		if (s == NULL || s->z == NULL)
			st = tg_error_set(err, TG_ENOMEM, "could not keep a part's surface of %zu cells", n);
	}
	if (st == TG_OK)
	{
		s->W = l->width;
		s->H = l->height;
		s->dem = g->band;
		s->dem.data = NULL;
		s->index = m->index;
		s->count = m->count;
		s->row0 = m->row0;
		for (size_t i = 0; i < 4 * W; i++)
			s->z[i < 2 * W ? i : n + i] = NAN;
		tg_parallel_memcpy(ctx, s->z + 2 * W, surface, n * sizeof(double));
		put_header(&w, TG_PART_SURFACE | REPLY, op->kind);
		/* the rows a neighbour routes with: the first two for the part above, the last two for the one below */
		if (m->index > 0)
			put_values(&w, surface, 2 * W);
		if (m->index + 1 < m->count)
			put_values(&w, surface + n - 2 * W, 2 * W);
		st = writer_done(&w, &part->reply, err);
	}
	tg_free(ctx, surface);
	return st;
}

/* The fill's scans solved: levels[i] for part i (1 + 2 * width each). */
tg_status
tg_parts_solve_fill(coordinator *c, double **levels, tg_error *err)
{
	const int	n = c->n,
				W = c->W;
	tg_fill_scan *parts = tg_alloc(c->ctx, n * sizeof(tg_fill_scan));
	const double **first = tg_alloc(c->ctx, n * sizeof(double *)),
			  **last = tg_alloc(c->ctx, n * sizeof(double *));
	double	  **lv = tg_alloc(c->ctx, n * sizeof(double *));
	tg_status	st = TG_OK;

	if (!parts || !first || !last || !lv)
		st = tg_error_set(err, TG_ENOMEM, "could not allocate the fill's %d parts", n);
	else
		memset(parts, 0, n * sizeof(tg_fill_scan));
	for (int i = 0; i < n && st == TG_OK; i++)
	{
		int			k = 0;
		tg_fill_scan *p;
		reader		r;
		tg_op_kind	kind;
		size_t		ne;

		while (c->order[k] != i)
			k++;
		p = &parts[k];
		st = open_reader(&r, &c->slot[TG_PART_SCAN][i], TG_PART_SCAN | REPLY, &kind, "a scan reply", err);
		if (st != TG_OK)
			break;
		if (get_i32(&r) != k)
		{
			st = tg_error_set(err, TG_EDATA, "the scan reply of %s is for another part", c->names[i]);
			break;
		}
		get(&r, &ne, sizeof ne);
		/* each edge at least a byte of each label and one of its height */
		if (r.bad || ne > r.left / 3)
		{
			st = tg_error_set(err, TG_EDATA, "the scan reply of %s is truncated", c->names[i]);
			break;
		}
		p->nedges = ne;
		p->a = tg_alloc(c->ctx, ne * sizeof(uint32_t) + 1);
		p->b = tg_alloc(c->ctx, ne * sizeof(uint32_t) + 1);
		p->height = tg_alloc(c->ctx, ne * sizeof(double) + 1);
		p->first = tg_alloc(c->ctx, (size_t) W * sizeof(uint32_t));
		p->last = tg_alloc(c->ctx, (size_t) W * sizeof(uint32_t));
		if (!p->a || !p->b || !p->height || !p->first || !p->last)
		{
			st = tg_error_set(err, TG_ENOMEM, "could not allocate the %zu label edges of %s", ne, c->names[i]);
			break;
		}
		get_runs(&r, p->a, ne);
		get_runs(&r, p->b, ne);
		get_values(&r, p->height, ne);
		get_runs(&r, p->first, W);
		get_runs(&r, p->last, W);
		st = reader_done(&r, "a scan reply", err);
		/* labels beyond the grid's are refused: the solve indexes by them */
		for (size_t e = 0; e < ne && st == TG_OK; e++)
			if ((uint64_t) p->a[e] > 2 * (uint64_t) n * W || (uint64_t) p->b[e] > 2 * (uint64_t) n * W)
				st = tg_error_set(err, TG_EDATA, "the scan reply of %s names label %u, beyond the grid's",
								  c->names[i], p->a[e] > p->b[e] ? p->a[e] : p->b[e]);
		first[k] = c->dem_first[i];
		last[k] = c->dem_last[i];
		lv[k] = levels[i];
	}
	if (st == TG_OK)
		st = tg_fill_part_solve(c->ctx, W, n, parts, first, last, lv, err);
	for (int k = 0; parts && k < n; k++)
		tg_fill_scan_free(c->ctx, &parts[k]);
	tg_free(c->ctx, parts);
	tg_free(c->ctx, first);
	tg_free(c->ctx, last);
	tg_free(c->ctx, lv);
	return st;
}
