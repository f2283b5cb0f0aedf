/*
 * fill_strips.c — depression filling (epsilon 0) of a grid too large for
 * memory, strip by strip, after Barnes (2016), "Parallel priority-flood
 * depression filling for trillion cell digital elevation models".
 *
 * The filled surface without epsilon is W(c) = the lowest possible highest
 * elevation on a path from c to an outlet (an edge cell or one next to
 * nodata).  A strip of rows is flooded on its own from two kinds of seeds:
 * its true outlets (label 0) and the cells of its top and bottom rows, each
 * its own label.  The flood gives every cell a local level lf (the same
 * minimax, to the nearest seed) and the label of that seed, and where two
 * labels meet, the height max(lf(a), lf(b)) at which water crosses between
 * them.  Rows facing each other across a strip boundary join their labels at
 * max(z, z').  Over that graph of labels, the level of each label is its
 * minimax distance to label 0 (a Dijkstra with max for +); then
 *     W(c) = max(lf(c), level(label(c)))
 * which a second flood of each strip (identical, as the flood is
 * deterministic) turns into the output.  Memory: one strip's cells, plus two
 * labels per column per strip and the edges between labels.
 *
 * Use: begin; scan every strip top to bottom; solve; finish every strip (any
 * order); end.  A strip is given with the row above and below it where they
 * exist, so that cells next to nodata across the boundary are outlets, as in
 * the in-memory fill.
 */
#include "tg_backends.h"
#include "fill_flood.h"
#include "tg_heap.h"

#include <math.h>
#include <string.h>

struct tg_fill_strips
{
	int			width;
	int			height;
	int			nstrips;
	int			strip_cap;
	int		   *strip_row0;
	int		   *strip_rows;
	uint32_t   *prev_bottom;	/* labels of the last scanned strip's bottom row */
	tg_label_graph *graph;
	double	   *level;			/* after solve: level of every label */
	int			next_row;		/* the row the next scanned strip must start at */
	bool		solved;
};

/* One strip's flood: local levels and labels. */
typedef struct strip_work
{
	double	   *lf;
	uint32_t   *label;
} strip_work;

static void
strip_free(const tg_ctx *ctx, strip_work *b)
{
	tg_free(ctx, b->lf);
	tg_free(ctx, b->label);
	memset(b, 0, sizeof *b);
}

static int
strip_index(const tg_fill_strips *fb, int row0, int nrows)
{
	for (int k = 0; k < fb->nstrips; k++)
		if (fb->strip_row0[k] == row0 && fb->strip_rows[k] == nrows)
			return k;
	return -1;
}

/* Labels of strip k's seeded rows: its top row, then its bottom row. */
static uint32_t
top_base(int width, int k)
{
	return (uint32_t) (1 + 2 * (size_t) k * width);
}

static uint32_t
bottom_base(int width, int k)
{
	return (uint32_t) (1 + 2 * (size_t) k * width + width);
}

/*
 * Flood strip `k` of a grid `width` columns wide (nrows rows; z starts at
 * the row above when there is one, and goes on to the row below when there
 * is one), recording its label edges into the graph when given.
 */
static tg_status
flood_strip(const tg_ctx *ctx, int width, int k, int nrows, bool above, bool below, const double *z,
			tg_label_graph *graph, strip_work *b, tg_error *err)
{
	const size_t W = (size_t) width,
				n = W * nrows;
	tg_flood	f;

	memset(b, 0, sizeof *b);
	b->lf = tg_alloc(ctx, (n ? n : 1) * sizeof(double));
	b->label = tg_alloc(ctx, (n ? n : 1) * sizeof(uint32_t));
	if (!b->lf || !b->label)
		return tg_error_set(err, TG_ENOMEM, "could not allocate a fill strip of %zu x %d cells", W, nrows);
	memset(&f, 0, sizeof f);
	f.width = width;
	f.nrows = nrows;
	f.z = z + (above ? W : 0);
	f.above = above;
	f.below = below;
	f.lf = b->lf;
	f.label = b->label;
	f.top_base = above ? top_base(width, k) : 0;
	f.bottom_base = below ? bottom_base(width, k) : 0;
	f.graph = graph;
	return tg_flood_run(ctx, &f, err);
}

static tg_status
strip_flood(const tg_ctx *ctx, tg_fill_strips *fb, int k, int row0, int nrows, const double *z,
			tg_label_graph *graph, strip_work *b, tg_error *err)
{
	return flood_strip(ctx, fb->width, k, nrows, row0 > 0, row0 + nrows < fb->height, z, graph, b, err);
}

/* ------------------------------------------------------------------------ */

size_t
tg_fill_strips_bytes_per_cell(void)
{
	/*
	 * input doubles, local level; label, pit and climb; the flood's state;
	 * its queue at worst (a heap, for float DEMs)
	 */
	return sizeof(double) * 2 + sizeof(uint32_t) * 3 + 1 + sizeof(tg_heap_item);
}

tg_status
tg_fill_strips_begin(const tg_ctx *ctx, int width, int height, tg_fill_strips **out, tg_error *err)
{
	tg_fill_strips *fb = tg_alloc(ctx, sizeof *fb);
	tg_status	st;

	*out = NULL;
	if (fb == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate the blocked fill");
	memset(fb, 0, sizeof *fb);
	fb->width = width;
	fb->height = height;
	fb->prev_bottom = tg_alloc(ctx, (width ? width : 1) * sizeof(uint32_t));
	st = fb->prev_bottom ? tg_label_graph_create(ctx, &fb->graph, err)
		: tg_error_set(err, TG_ENOMEM, "could not allocate the blocked fill");
	if (st != TG_OK)
	{
		tg_fill_strips_end(ctx, fb);
		return st;
	}
	*out = fb;
	return TG_OK;
}

tg_status
tg_fill_strips_scan(const tg_ctx *ctx, tg_fill_strips *fb, int row0, int nrows, const double *z,
					tg_error *err)
{
	const int	W = fb->width;
	strip_work	b;
	tg_status	st;

	if (fb->solved || row0 != fb->next_row || nrows < 1 || row0 + nrows > fb->height)
		return tg_error_set(err, TG_EINVAL, "blocked fill: strip at row %d of %d rows out of order",
							row0, nrows);
	if ((uint64_t) (2 * (fb->nstrips + 1)) * (uint64_t) W + 1 > UINT32_MAX)
		return tg_error_set(err, TG_ELIMIT, "blocked fill: too many strips of %d columns", W);
	if (fb->nstrips == fb->strip_cap)
	{
		int			cap = fb->strip_cap ? 2 * fb->strip_cap : 64;
		int		   *r0 = tg_alloc(ctx, cap * sizeof(int)),
				   *rs = tg_alloc(ctx, cap * sizeof(int));

		if (r0 == NULL || rs == NULL)
		{
			tg_free(ctx, r0);
			tg_free(ctx, rs);
			return tg_error_set(err, TG_ENOMEM, "could not allocate the blocked fill's strips");
		}
		if (fb->nstrips)
		{
			memcpy(r0, fb->strip_row0, fb->nstrips * sizeof(int));
			memcpy(rs, fb->strip_rows, fb->nstrips * sizeof(int));
		}
		tg_free(ctx, fb->strip_row0);
		tg_free(ctx, fb->strip_rows);
		fb->strip_row0 = r0;
		fb->strip_rows = rs;
		fb->strip_cap = cap;
	}
	st = strip_flood(ctx, fb, fb->nstrips, row0, nrows, z, fb->graph, &b, err);
	/* rows facing the strip above: join their labels at the higher cell */
	if (st == TG_OK && row0 > 0 && fb->nstrips > 0)
		st = tg_label_graph_join_rows(ctx, fb->graph, W, fb->prev_bottom, z, b.label, z + W, err);
	if (st == TG_OK)
	{
		memcpy(fb->prev_bottom, b.label + (size_t) (nrows - 1) * W, W * sizeof(uint32_t));
		fb->strip_row0[fb->nstrips] = row0;
		fb->strip_rows[fb->nstrips] = nrows;
		fb->nstrips++;
		fb->next_row = row0 + nrows;
	}
	strip_free(ctx, &b);
	return st;
}

/* Levels of all labels: minimax distance to label 0 over the edges. */
tg_status
tg_fill_strips_solve(const tg_ctx *ctx, tg_fill_strips *fb, tg_error *err)
{
	tg_status	st;

	if (fb->next_row != fb->height)
		return tg_error_set(err, TG_EINVAL, "blocked fill: strips cover %d of %d rows",
							fb->next_row, fb->height);
	st = tg_label_graph_solve(ctx, &fb->graph, 1, 1 + (size_t) 2 * fb->nstrips * fb->width,
							  &fb->level, err);
	fb->solved = st == TG_OK;
	return st;
}

tg_status
tg_fill_strips_finish(const tg_ctx *ctx, tg_fill_strips *fb, int row0, int nrows, const double *z,
					  double *w, tg_error *err)
{
	const size_t n = (size_t) fb->width * nrows;
	const int	k = strip_index(fb, row0, nrows);
	strip_work	b;
	tg_status	st;

	if (!fb->solved || k < 0)
		return tg_error_set(err, TG_EINVAL, "blocked fill: strip at row %d of %d rows was not scanned",
							row0, nrows);
	/* the same flood again (it is deterministic), labels only */
	st = strip_flood(ctx, fb, k, row0, nrows, z, NULL, &b, err);
	if (st == TG_OK)
		for (size_t i = 0; i < n; i++)
			w[i] = isnan(b.lf[i]) ? NAN : fmax(b.lf[i], fb->level[b.label[i]]);
	strip_free(ctx, &b);
	return st;
}

void
tg_fill_strips_end(const tg_ctx *ctx, tg_fill_strips *fb)
{
	if (fb == NULL)
		return;
	tg_free(ctx, fb->strip_row0);
	tg_free(ctx, fb->strip_rows);
	tg_free(ctx, fb->prev_bottom);
	tg_label_graph_free(ctx, fb->graph);
	tg_free(ctx, fb->level);
	tg_free(ctx, fb);
}

/* ------------------------------------------------------------------------
 * Strips on several servers: each part scanned where it lives, the labels
 * solved where the scans meet, each part finished where it lives.
 * ------------------------------------------------------------------------ */

static bool
labels_too_many(int width, int count)
{
	return (uint64_t) (2 * (uint64_t) count) * (uint64_t) width + 1 > UINT32_MAX;
}

tg_status
tg_fill_part_scan(const tg_ctx *ctx, int width, int k, int count, int nrows, const double *z,
				  tg_fill_part *out, tg_error *err)
{
	const bool	above = k > 0,
				below = k + 1 < count;
	tg_label_graph *graph = NULL;
	strip_work	b;
	tg_status	st;

	memset(out, 0, sizeof *out);
	memset(&b, 0, sizeof b);
	if (labels_too_many(width, count))
		return tg_error_set(err, TG_ELIMIT, "a fill over %d parts of %d columns has too many labels", count, width);
	st = tg_label_graph_create(ctx, &graph, err);
	if (st == TG_OK)
		st = flood_strip(ctx, width, k, nrows, above, below, z, graph, &b, err);
	if (st == TG_OK)
	{
		const size_t ne = tg_label_graph_edges(graph);

		out->nedges = ne;
		out->a = tg_alloc(ctx, (ne ? ne : 1) * sizeof(uint32_t));
		out->b = tg_alloc(ctx, (ne ? ne : 1) * sizeof(uint32_t));
		out->height = tg_alloc(ctx, (ne ? ne : 1) * sizeof(double));
		out->first = tg_alloc(ctx, (size_t) width * sizeof(uint32_t));
		out->last = tg_alloc(ctx, (size_t) width * sizeof(uint32_t));
		if (!out->a || !out->b || !out->height || !out->first || !out->last)
			st = tg_error_set(err, TG_ENOMEM, "could not allocate a fill part's %zu label edges", ne);
		else
		{
			tg_label_graph_export(graph, out->a, out->b, out->height);
			memcpy(out->first, b.label, (size_t) width * sizeof(uint32_t));
			memcpy(out->last, b.label + (size_t) (nrows - 1) * width, (size_t) width * sizeof(uint32_t));
		}
	}
	if (st != TG_OK)
		tg_fill_part_free(ctx, out);
	strip_free(ctx, &b);
	tg_label_graph_free(ctx, graph);
	return st;
}

void
tg_fill_part_free(const tg_ctx *ctx, tg_fill_part *p)
{
	tg_free(ctx, p->a);
	tg_free(ctx, p->b);
	tg_free(ctx, p->height);
	tg_free(ctx, p->first);
	tg_free(ctx, p->last);
	memset(p, 0, sizeof *p);
}

tg_status
tg_fill_part_solve(const tg_ctx *ctx, int width, int count, const tg_fill_part *parts,
				   const double *const *first_rows, const double *const *last_rows,
				   double *const *levels, tg_error *err)
{
	tg_label_graph *graph = NULL;
	double	   *level = NULL;
	tg_status	st;

	if (labels_too_many(width, count))
		return tg_error_set(err, TG_ELIMIT, "a fill over %d parts of %d columns has too many labels", count, width);
	st = tg_label_graph_create(ctx, &graph, err);
	for (int k = 0; k < count && st == TG_OK; k++)
	{
		for (size_t e = 0; e < parts[k].nedges && st == TG_OK; e++)
			st = tg_label_graph_add(ctx, graph, parts[k].a[e], parts[k].b[e], parts[k].height[e], err);
		/* rows facing each other across the boundary above: join at the higher cell */
		if (st == TG_OK && k > 0)
			st = tg_label_graph_join_rows(ctx, graph, width, parts[k - 1].last, last_rows[k - 1],
										  parts[k].first, first_rows[k], err);
	}
	if (st == TG_OK)
		st = tg_label_graph_solve(ctx, &graph, 1, 1 + (size_t) 2 * count * width, &level, err);
	for (int k = 0; k < count && st == TG_OK; k++)
	{
		levels[k][0] = level[0];
		memcpy(levels[k] + 1, level + top_base(width, k), 2 * (size_t) width * sizeof(double));
	}
	tg_free(ctx, level);
	tg_label_graph_free(ctx, graph);
	return st;
}

/*
 * W(c) = max(lf(c), level(label(c))) is the fill of the part as a grid of
 * its own whose seeded edge cells (outlets there) stand at their global
 * level max(z, level): each cell's water leaves by the lowest way, through
 * a true outlet or over a seeded cell at the height that cell's water
 * reaches.  So the part is finished by tg_fill on those rows, on the
 * backend and threads the call has, with the same bits as the flood (the
 * filled surface is unique).
 */
tg_status
tg_fill_part_finish(const tg_ctx *ctx, int width, int k, int count, int nrows, const double *z,
					const double *levels, double *w, tg_error *err)
{
	const size_t W = (size_t) width,
				n = W * nrows;
	const bool	above = k > 0,
				below = k + 1 < count;
	const double *rows = z + (above ? W : 0);
	double	   *raised = tg_alloc(ctx, (n ? n : 1) * sizeof(double));
	tg_band		band;
	tg_fill_params fp = {TG_FILL_PRIORITY_FLOOD, 0, TG_PT_64BF};
	tg_status	st;

	if (raised == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate a fill part of %zu cells", n);
	memcpy(raised, rows, n * sizeof(double));
	/* seeded as the flood seeds: the top row's labels first, then the bottom row's */
	for (int y = 0; y < nrows; y += nrows > 1 ? nrows - 1 : 1)
	{
		const bool	top = y == 0 && above,
					bottom = y == nrows - 1 && below;

		if (!top && !bottom)
			continue;
		for (int x = 0; x < width; x++)
		{
			double	   *c = raised + (size_t) y * W + x;

			/* an outlet as the flood seeds it: the halo rows' nodata counts */
			if (!isnan(*c) && !tg_cpu_is_outlet(z, width, nrows + above + below, x, y + above))
				*c = fmax(*c, levels[1 + (top ? 0 : W) + (size_t) x]);
		}
	}
	memset(&band, 0, sizeof band);
	band.width = width;
	band.height = nrows;
	band.pixtype = TG_PT_64BF;
	band.data = raised;
	st = tg_fill(ctx, &band, &fp, NAN, w, err);
	tg_free(ctx, raised);
	return st;
}
