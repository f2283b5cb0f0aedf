/*
 * fill_seams.c — depression filling (epsilon 0) of a grid too large for
 * memory, strip by strip, after Barnes (2016), "Parallel priority-flood
 * depression filling for trillion cell digital elevation models"; the same
 * for the parts of a coverage on several servers.
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
 * which is the fill of the strip as a grid of its own whose seeded cells
 * stand at max(z, level): tg_fill on the call's backend and threads
 * finishes every strip.  The scan runs where the call's policy sends a step
 * (on the GPU, cuda/fill_scan.cu, with labels of its own that give the same
 * levels).  Memory: one strip's cells, plus two labels per column per strip
 * and the edges between labels.
 *
 * Use: begin; scan every strip top to bottom; solve; finish every strip (any
 * order); end.  A strip is given with the row above and below it where they
 * exist, so that cells next to nodata across the boundary are outlets, as in
 * the in-memory fill.
 */
#include "scale/seams/seams.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * The fill's spill graph over strips or parts: the label edges of each
 * strip's scan, added from the top, and the rows facing each other across
 * every seam joined at the higher cell.
 */
struct tg_spill_graph
{
	int			width;
	int			nstrips;		/* added so far */
	uint32_t   *prev_last;		/* labels of the last added strip's last row */
	/*
	 * Listed, not looked up: a strip's edges come from its own graph, each
	 * pair once, and every cell of the rows facing a seam is a label of its
	 * own, so that its three meetings across are pairs of their own too.
	 */
	tg_label_graph *graph;
};

struct tg_fill_strips
{
	int			width;
	int			height;
	int			nstrips;
	size_t		strip_cap;
	size_t		rows_cap;
	int		   *strip_row0;
	int		   *strip_rows;
	tg_spill_graph *spill;
	double	   *level;			/* after solve: level of every label */
	int			next_row;		/* the row the next scanned strip must start at */
	bool		solved;
};

static int
strip_index(const tg_fill_strips *fb, int row0, int nrows)
{
	for (int k = 0; k < fb->nstrips; k++)
		if (fb->strip_row0[k] == row0 && fb->strip_rows[k] == nrows)
			return k;
	return -1;
}

/* Do the labels of `count` strips of `width` columns (two rows each, and the outlets') overflow? */
static bool
labels_too_many(int width, int count)
{
	return (uint64_t) (2 * (uint64_t) count) * (uint64_t) width + 1 > UINT32_MAX;
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
 * Strip k of rows (nrows; z from the row above where there is one, on to
 * the row below where there is one) scanned: its label edges, its first and
 * last rows' labels; and finished from the levels of those rows' labels
 * (2 * width: the top row's, then the bottom row's).
 */
static tg_status scan_rows(const tg_ctx *ctx, int width, int k, bool above, bool below, int nrows,
						   const double *z, tg_fill_scan *out, tg_error *err);
static tg_status finish_rows(const tg_ctx *ctx, int width, bool above, bool below, int nrows,
							 double *z, const double *row_levels, double *w, tg_error *err);

/* ------------------------------------------------------------------------
 * The spill graph
 * ------------------------------------------------------------------------ */

tg_status
tg_spill_graph_begin(const tg_ctx *ctx, int width, tg_spill_graph **out, tg_error *err)
{
	tg_spill_graph *g = tg_alloc(ctx, sizeof *g);
	tg_status	st;

	*out = NULL;
	if (g == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate the fill's spill graph");
	memset(g, 0, sizeof *g);
	g->width = width;
	g->prev_last = tg_alloc(ctx, (width ? width : 1) * sizeof(uint32_t));
	st = g->prev_last ? tg_label_graph_create_list(ctx, &g->graph, err)
		: tg_error_set(err, TG_ENOMEM, "could not allocate the fill's spill graph");
	if (st != TG_OK)
	{
		tg_spill_graph_end(ctx, g);
		return st;
	}
	*out = g;
	return TG_OK;
}

/* A label strip k may name: 0 (where water leaves), or one of its two seeded rows'. */
static bool
strip_label(int width, int k, uint32_t label)
{
	return label == 0 || (label >= top_base(width, k) && label - top_base(width, k) < 2 * (uint32_t) width);
}

/*
 * A part's scan arrives as bytes from another server: every label must be
 * the part's own and every height a number before the graph indexes by them.
 */
static bool
scan_valid(int width, int k, const tg_fill_scan *scan)
{
	for (size_t e = 0; e < scan->nedges; e++)
		if (!strip_label(width, k, scan->a[e]) || !strip_label(width, k, scan->b[e]) || isnan(scan->height[e]))
			return false;
	for (int x = 0; x < width; x++)
		if (!strip_label(width, k, scan->first[x]) || !strip_label(width, k, scan->last[x]))
			return false;
	return true;
}

tg_status
tg_spill_graph_add(const tg_ctx *ctx, tg_spill_graph *g, const tg_fill_scan *scan, const double *row_above,
				   const double *first_row, tg_error *err)
{
	tg_status	st = TG_OK;

	if (labels_too_many(g->width, g->nstrips + 1))
		return tg_error_set(err, TG_ELIMIT, "a fill over %d strips of %d columns has too many labels",
							g->nstrips + 1, g->width);
	if (!scan_valid(g->width, g->nstrips, scan))
		return tg_error_set(err, TG_EDATA, "the fill's summary of part %d names labels not its own",
							g->nstrips + 1);
	for (size_t e = 0; e < scan->nedges && st == TG_OK; e++)
		st = tg_label_graph_add(ctx, g->graph, scan->a[e], scan->b[e], scan->height[e], err);
	/* rows facing each other across the seam above: join their labels at the higher cell */
	if (st == TG_OK && g->nstrips > 0)
		st = tg_label_graph_join_rows(ctx, g->graph, g->width, g->prev_last, row_above, scan->first, first_row,
									  err);
	if (st == TG_OK)
	{
		memcpy(g->prev_last, scan->last, (size_t) g->width * sizeof(uint32_t));
		g->nstrips++;
	}
	return st;
}

tg_status
tg_spill_graph_solve(const tg_ctx *ctx, tg_spill_graph *g, double **level, tg_error *err)
{
	return tg_label_graph_solve(ctx, &g->graph, 1, 1 + (size_t) 2 * g->nstrips * g->width, level, err);
}

/* Where strip k's labels begin in the levels: its first row's, then its last row's. */
size_t
tg_spill_graph_labels(int width, int k)
{
	return top_base(width, k);
}

void
tg_spill_graph_end(const tg_ctx *ctx, tg_spill_graph *g)
{
	if (g == NULL)
		return;
	tg_free(ctx, g->prev_last);
	tg_label_graph_free(ctx, g->graph);
	tg_free(ctx, g);
}

/* ------------------------------------------------------------------------
 * Strips on one server
 * ------------------------------------------------------------------------ */

size_t
tg_fill_strips_bytes_per_cell(void)
{
	/*
	 * The scan: input doubles, local level; label, pit and climb; the
	 * flood's state; its queue at worst (a heap, for float DEMs).  The
	 * finish: tg_fill's own (an in-memory fill's 40 bytes, decoding and
	 * output included) over the input, raised in place.
	 */
	const size_t scan = sizeof(double) * 2 + sizeof(uint32_t) * 3 + 1 + sizeof(tg_heap_item),
				finish = 40;

	return scan > finish ? scan : finish;
}

tg_status
tg_fill_strips_begin(const tg_ctx *ctx, int width, int height, tg_fill_strips **out, tg_error *err)
{
	tg_fill_strips *fb = tg_alloc(ctx, sizeof *fb);
	tg_status	st;

	*out = NULL;
	if (fb == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate the fill in strips");
	memset(fb, 0, sizeof *fb);
	fb->width = width;
	fb->height = height;
	st = tg_spill_graph_begin(ctx, width, &fb->spill, err);
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
	tg_fill_scan p;
	tg_status	st;

	if (fb->solved || row0 != fb->next_row || nrows < 1 || row0 + nrows > fb->height)
		return tg_error_set(err, TG_EINVAL, "fill in strips: strip at row %d of %d rows out of order",
							row0, nrows);
	if (!tg_grow(ctx, (void **) &fb->strip_row0, &fb->strip_cap, (size_t) fb->nstrips + 1, sizeof(int)) ||
		!tg_grow(ctx, (void **) &fb->strip_rows, &fb->rows_cap, (size_t) fb->nstrips + 1, sizeof(int)))
		return tg_error_set(err, TG_ENOMEM, "could not allocate the fill's strips");
	st = scan_rows(ctx, W, fb->nstrips, row0 > 0, row0 + nrows < fb->height, nrows, z, &p, err);
	/* z begins with the row above where there is one */
	if (st == TG_OK)
		st = tg_spill_graph_add(ctx, fb->spill, &p, row0 > 0 ? z : NULL, row0 > 0 ? z + W : z, err);
	if (st == TG_OK)
	{
		fb->strip_row0[fb->nstrips] = row0;
		fb->strip_rows[fb->nstrips] = nrows;
		fb->nstrips++;
		fb->next_row = row0 + nrows;
	}
	tg_fill_scan_free(ctx, &p);
	return st;
}

/* Levels of all labels: minimax distance to label 0 over the edges. */
tg_status
tg_fill_strips_solve(const tg_ctx *ctx, tg_fill_strips *fb, tg_error *err)
{
	tg_status	st;

	if (fb->next_row != fb->height)
		return tg_error_set(err, TG_EINVAL, "fill in strips: strips cover %d of %d rows",
							fb->next_row, fb->height);
	st = tg_spill_graph_solve(ctx, fb->spill, &fb->level, err);
	fb->solved = st == TG_OK;
	return st;
}

tg_status
tg_fill_strips_finish(const tg_ctx *ctx, tg_fill_strips *fb, int row0, int nrows, double *z,
					  double *w, tg_error *err)
{
	const int	k = strip_index(fb, row0, nrows);

	if (!fb->solved || k < 0)
		return tg_error_set(err, TG_EINVAL, "fill in strips: strip at row %d of %d rows was not scanned",
							row0, nrows);
	/* the strip's top row labels, then its bottom row's, follow each other */
	return finish_rows(ctx, fb->width, row0 > 0, row0 + nrows < fb->height, nrows, z,
					   fb->level + tg_spill_graph_labels(fb->width, k), w, err);
}

void
tg_fill_strips_end(const tg_ctx *ctx, tg_fill_strips *fb)
{
	if (fb == NULL)
		return;
	tg_free(ctx, fb->strip_row0);
	tg_free(ctx, fb->strip_rows);
	tg_spill_graph_end(ctx, fb->spill);
	tg_free(ctx, fb->level);
	tg_free(ctx, fb);
}

/* ------------------------------------------------------------------------
 * Strips on several servers: each part scanned where it lives, the labels
 * solved where the scans meet, each part finished where it lives.
 * ------------------------------------------------------------------------ */

/*
 * A part's scan on the call's threads.  The part is cut into sub-strips of
 * whole rows (how many depends on its size, never on the threads), each
 * flooded on its own with labels of its own (numbered as strips 0 .. nsub-1
 * of the part): Barnes' scheme one level down.  Their graphs are then cut
 * down to the labels the coordinator knows (the outlets', the part's first
 * and last rows') by Kruskal's algorithm: the edge that first connects two
 * groups of labels each holding a kept label joins those two at its height.
 * Minimax distances between kept labels are those of the whole graph, so
 * the solve gives every label the same level whatever the cut.  The cut
 * runs as a tree of merges, on the threads: a sub-strip's graph becomes its
 * minimum spanning tree; two neighbouring ranges of sub-strips, with the
 * rows where they meet joined, keep the labels of the outer rows; so no
 * step holds more than about seven edges per column, and the coordinator
 * receives at most one edge per label it knows.
 */
#define SCAN_MAX_SUBSTRIPS 64
/* a part of one row of 256-row tiles (a refresh's band) scans on 4 threads */
int			tg_part_scan_rows = 64;

typedef struct scan_edge
{
	double		height;
	uint32_t	a;
	uint32_t	b;
} scan_edge;

typedef struct part_scan
{
	int			width;
	int			nrows;
	int			nsub;
	bool		above;			/* the part has a row above */
	bool		below;
	const double *rows;			/* the part's rows (nodata NaN), between the rows above and below where given */
	uint32_t   *label;			/* nrows * width, every sub-strip's rows */
	double	   *lf;
	scan_edge **kept;			/* per range of sub-strips (by its first): at most 2 * width edges */
	size_t	   *nkept;
	int			span;			/* the merges under way: ranges of `span` sub-strips, pairwise */
} part_scan;

static int
scan_substrips(int width, int nrows)
{
	int			nsub = nrows / (tg_part_scan_rows > 0 ? tg_part_scan_rows : 1);

	if (nsub > SCAN_MAX_SUBSTRIPS)
		nsub = SCAN_MAX_SUBSTRIPS;
	return nsub < 1 || labels_too_many(width, nsub) ? 1 : nsub;
}

/* Heights as unsigned keys in the same order (-0 and 0 one height; no NaN reaches here). */
static inline uint64_t
height_key(double h)
{
	uint64_t	u;

	h = h == 0 ? 0 : h;
	memcpy(&u, &h, sizeof u);
	return u >> 63 ? ~u : u | (uint64_t) 1 << 63;
}

/* Byte `digit` (0: the least significant) of an edge's key: height (as h, its height_key), then a, then b. */
static inline unsigned
edge_digit(const scan_edge *e, uint64_t h, int digit)
{
	if (digit < 4)
		return (e->b >> (8 * digit)) & 0xFF;
	if (digit < 8)
		return (e->a >> (8 * (digit - 4))) & 0xFF;
	return (unsigned) (h >> (8 * (digit - 8))) & 0xFF;
}

#define EDGE_DIGITS 16

typedef size_t edge_counts[EDGE_DIGITS][256];

/*
 * Edges by height, then a, then b, by a least-significant-digit radix sort
 * (tmp: room for n more; count: scratch): linear where a comparison sort
 * took a large share of the scan.  A digit every edge shares takes no pass.
 */
static void
sort_scan_edges(scan_edge *e, scan_edge *tmp, size_t n, edge_counts count)
{
	scan_edge  *from = e,
			   *to = tmp;

	memset(count, 0, sizeof(edge_counts));
	for (size_t i = 0; i < n; i++)
	{
		const uint64_t h = height_key(e[i].height);

		for (int d = 0; d < EDGE_DIGITS; d++)
			count[d][edge_digit(&e[i], h, d)]++;
	}
	for (int d = 0; n > 0 && d < EDGE_DIGITS; d++)
	{
		size_t		at = 0;
		scan_edge  *swap;

		if (count[d][edge_digit(&e[0], height_key(e[0].height), d)] == n)
			continue;
		for (int v = 0; v < 256; v++)
		{
			const size_t c = count[d][v];

			count[d][v] = at;
			at += c;
		}
		for (size_t i = 0; i < n; i++)
			to[count[d][edge_digit(&from[i], height_key(from[i].height), d)]++] = from[i];
		swap = from;
		from = to;
		to = swap;
	}
	if (from != e)
		memcpy(e, from, n * sizeof *e);
}

static uint32_t
uf_find(uint32_t *parent, uint32_t v)
{
	uint32_t	r = v;

	while (parent[r] != r)
		r = parent[r];
	while (parent[v] != r)
	{
		uint32_t	next = parent[v];

		parent[v] = r;
		v = next;
	}
	return r;
}

/*
 * Labels of a range of sub-strips, dense: 0, then four rows of width labels
 * (the labels a range's edges can hold: its first sub-strip's top row, the
 * bottom and top rows where two ranges meet, its last sub-strip's bottom row).
 */
typedef struct scan_labels
{
	uint32_t	base[4];
	uint32_t	width;
} scan_labels;

static uint32_t
dense_label(const scan_labels *m, uint32_t l)
{
	for (int r = 0; l != 0 && r < 4; r++)
		if (l >= m->base[r] && l < m->base[r] + m->width)
			return 1 + r * m->width + (l - m->base[r]);
	return 0;
}

/* The label a dense one stands for. */
static uint32_t
sparse_label(const scan_labels *m, uint32_t d)
{
	return d == 0 ? 0 : m->base[(d - 1) / m->width] + (d - 1) % m->width;
}

/*
 * Kruskal over edges (sorted here), keeping in out (at most 2 * width edges)
 * those that first join two groups each holding a kept dense label: 0 and
 * rows 0 and 3.
 */
static tg_status
keep_edges(const tg_ctx *ctx, const scan_labels *m, scan_edge *e, size_t n, scan_edge *out, size_t *nout,
		   tg_error *err)
{
	const size_t L = 1 + 4 * (size_t) m->width;
	uint32_t   *parent = tg_alloc(ctx, L * sizeof(uint32_t)),
			   *rep = tg_alloc(ctx, L * sizeof(uint32_t));
	scan_edge  *tmp = tg_alloc(ctx, (n + 1) * sizeof(scan_edge));
	size_t		(*count)[256] = tg_alloc(ctx, sizeof(edge_counts));

	if (parent == NULL || rep == NULL || tmp == NULL || count == NULL)
	{
		tg_free(ctx, parent);
		tg_free(ctx, rep);
		tg_free(ctx, tmp);
		tg_free(ctx, count);
		return tg_error_set(err, TG_ENOMEM, "could not allocate a fill part's %zu labels and %zu edges", L, n);
	}
	for (size_t l = 0; l < L; l++)
	{
		parent[l] = (uint32_t) l;
		rep[l] = l == 0 || l <= m->width || l > 3 * (size_t) m->width ? (uint32_t) l : UINT32_MAX;
	}
	sort_scan_edges(e, tmp, n, count);
	tg_free(ctx, tmp);
	tg_free(ctx, count);
	*nout = 0;
	for (size_t i = 0; i < n; i++)
	{
		const uint32_t ra = uf_find(parent, dense_label(m, e[i].a)),
					rb = uf_find(parent, dense_label(m, e[i].b));

		if (ra == rb)
			continue;
		if (rep[ra] != UINT32_MAX && rep[rb] != UINT32_MAX && *nout < 2 * (size_t) m->width)
			out[(*nout)++] = (scan_edge) {e[i].height, sparse_label(m, rep[ra]), sparse_label(m, rep[rb])};
		parent[rb] = ra;
		if (rep[ra] == UINT32_MAX)
			rep[ra] = rep[rb];
	}
	tg_free(ctx, parent);
	tg_free(ctx, rep);
	return TG_OK;
}

/* Sub-strip j flooded; its graph kept as its minimum spanning tree. */
static tg_status
scan_substrip(const tg_ctx *ctx, void *arg, int64_t j, tg_error *err)
{
	part_scan  *s = arg;
	const size_t W = (size_t) s->width;
	/* every label of a sub-strip is kept: its top row as row 0, its bottom row as row 3 */
	const scan_labels leaf = {{top_base(s->width, (int) j), UINT32_MAX - (uint32_t) W, UINT32_MAX - (uint32_t) W,
	bottom_base(s->width, (int) j)}, (uint32_t) W};
	int64_t		r0,
				r1;
	tg_label_graph *graph = NULL;
	tg_flood	f;
	tg_status	st;

	tg_part_range(s->nrows, s->nsub, j, &r0, &r1);
	memset(&f, 0, sizeof f);
	f.width = s->width;
	f.nrows = (int) (r1 - r0);
	f.z = s->rows + (size_t) r0 * W;
	f.above = j > 0 || s->above;
	f.below = j + 1 < s->nsub || s->below;
	f.lf = s->lf + (size_t) r0 * W;
	f.label = s->label + (size_t) r0 * W;
	f.top_base = f.above ? top_base(s->width, (int) j) : 0;
	f.bottom_base = f.below ? bottom_base(s->width, (int) j) : 0;
	st = tg_label_graph_create(ctx, &graph, err);
	f.graph = graph;
	if (st == TG_OK)
		st = tg_flood_run(ctx, &f, err);
	if (st == TG_OK)
	{
		const size_t n = tg_label_graph_edges(graph);
		uint32_t   *a = tg_alloc(ctx, (n + 1) * sizeof(uint32_t)),
				   *b = tg_alloc(ctx, (n + 1) * sizeof(uint32_t));
		double	   *h = tg_alloc(ctx, (n + 1) * sizeof(double));
		scan_edge  *e = tg_alloc(ctx, (n + 1) * sizeof(scan_edge));

		if (!a || !b || !h || !e)
			st = tg_error_set(err, TG_ENOMEM, "could not allocate a fill part's %zu label edges", n);
		else
		{
			tg_label_graph_export(graph, a, b, h);
			for (size_t i = 0; i < n; i++)
				e[i] = (scan_edge) {h[i], a[i], b[i]};
		}
		/* the sort's room in place of the graph and its export */
		tg_label_graph_free(ctx, graph);
		graph = NULL;
		tg_free(ctx, a);
		tg_free(ctx, b);
		tg_free(ctx, h);
		if (st == TG_OK)
			st = keep_edges(ctx, &leaf, e, n, s->kept[j], &s->nkept[j], err);
		tg_free(ctx, e);
	}
	tg_label_graph_free(ctx, graph);
	return st;
}

/* Edges gathered for a merge (room made beforehand). */
typedef struct edge_list
{
	scan_edge  *e;
	size_t		n;
} edge_list;

static tg_status
append_meeting(void *arg, uint32_t lower, uint32_t upper, double height, tg_error *err)
{
	edge_list  *list = arg;

	list->e[list->n++] = (scan_edge) {height, upper, lower};
	return TG_OK;
}

/* Ranges [i, i + span) and [i + span, i + 2 * span) of sub-strips, with i = 2 * span * task, as one. */
static tg_status
merge_ranges(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	part_scan  *s = arg;
	const size_t W = (size_t) s->width;
	const int	i = (int) (2 * s->span * task),
				mid = i + s->span,
				last = mid + s->span < s->nsub ? mid + s->span - 1 : s->nsub - 1;
	const scan_labels m = {{top_base(s->width, i), bottom_base(s->width, mid - 1), top_base(s->width, mid),
	bottom_base(s->width, last)}, (uint32_t) W};
	const size_t cap = s->nkept[i] + s->nkept[mid] + 3 * W + 1;
	edge_list	list = {tg_alloc(ctx, cap * sizeof(scan_edge)), 0};
	int64_t		r0,
				r1;
	tg_status	st;

	if (list.e == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate a fill part's %zu label edges", cap);
	memcpy(list.e, s->kept[i], s->nkept[i] * sizeof(scan_edge));
	list.n = s->nkept[i];
	memcpy(list.e + list.n, s->kept[mid], s->nkept[mid] * sizeof(scan_edge));
	list.n += s->nkept[mid];
	/* the last row of sub-strip mid - 1 faces the first of mid */
	tg_part_range(s->nrows, s->nsub, mid, &r0, &r1);
	st = tg_label_rows_meet(s->width, s->label + (size_t) (r0 - 1) * W, s->rows + (size_t) (r0 - 1) * W,
							s->label + (size_t) r0 * W, s->rows + (size_t) r0 * W, append_meeting, &list, err);
	if (st == TG_OK)
		st = keep_edges(ctx, &m, list.e, list.n, s->kept[i], &s->nkept[i], err);
	tg_free(ctx, list.e);
	return st;
}

/* The part's label for a label of its first or last row (UINT32_MAX: not one the coordinator knows). */
static uint32_t
known_label(const part_scan *s, int k, uint32_t l)
{
	const uint32_t W = (uint32_t) s->width,
				last = bottom_base(s->width, s->nsub - 1);

	if (l == 0)
		return 0;
	if (s->above && l >= top_base(s->width, 0) && l < top_base(s->width, 0) + W)
		return top_base(s->width, k) + (l - top_base(s->width, 0));
	if (s->below && l >= last && l < last + W)
		return bottom_base(s->width, k) + (l - last);
	return UINT32_MAX;
}

/* The part's labels of a first or last row as the coordinator knows them (0 where nodata). */
static tg_status
edge_row_labels(const part_scan *s, int k, const double *row, const uint32_t *labels, uint32_t *out,
				tg_error *err)
{
	for (size_t x = 0; x < (size_t) s->width; x++)
	{
		out[x] = isnan(row[x]) ? 0 : known_label(s, k, labels[x]);
		if (out[x] == UINT32_MAX)
			return tg_error_set(err, TG_EDATA, "a fill part's edge row holds an inner label");
	}
	return TG_OK;
}

/*
 * The scan's result from its root range's edges (labels of the part) and
 * its first and last rows' labels: in the labels the coordinator knows.
 */
static tg_status
scan_result(const tg_ctx *ctx, const part_scan *s, int k, const scan_edge *kept, size_t nkept,
			const uint32_t *first, const uint32_t *last, tg_fill_scan *out, tg_error *err)
{
	const size_t W = (size_t) s->width;
	tg_status	st = TG_OK;

	out->nedges = nkept;
	out->a = tg_alloc(ctx, (nkept + 1) * sizeof(uint32_t));
	out->b = tg_alloc(ctx, (nkept + 1) * sizeof(uint32_t));
	out->height = tg_alloc(ctx, (nkept + 1) * sizeof(double));
	out->first = tg_alloc(ctx, W * sizeof(uint32_t) + 1);
	out->last = tg_alloc(ctx, W * sizeof(uint32_t) + 1);
	if (!out->a || !out->b || !out->height || !out->first || !out->last)
		st = tg_error_set(err, TG_ENOMEM, "could not allocate a fill part's %zu label edges", nkept);
	for (size_t i = 0; st == TG_OK && i < nkept; i++)
	{
		out->a[i] = known_label(s, k, kept[i].a);
		out->b[i] = known_label(s, k, kept[i].b);
		out->height[i] = kept[i].height;
		if (out->a[i] == UINT32_MAX || out->b[i] == UINT32_MAX)
			st = tg_error_set(err, TG_EDATA, "a fill part's graph kept an inner label");
	}
	if (st == TG_OK)
		st = edge_row_labels(s, k, s->rows, first, out->first, err);
	if (st == TG_OK)
		st = edge_row_labels(s, k, s->rows + (size_t) (s->nrows - 1) * W, last, out->last, err);
	return st;
}

/* A part's scan: its rows, with the row above and below where it has them. */
typedef struct scan_step
{
	int			width;
	int			k;
	bool		above;
	bool		below;
	int			nrows;
	const double *z;
	tg_fill_scan *out;
} scan_step;

static part_scan
scan_plan(const scan_step *a, int nsub)
{
	part_scan	s;

	memset(&s, 0, sizeof s);
	s.width = a->width;
	s.nrows = a->nrows;
	s.nsub = nsub;
	s.above = a->above;
	s.below = a->below;
	s.rows = a->z + (s.above ? (size_t) a->width : 0);
	return s;
}

/* On the call's threads: sub-strips flooded, their graphs merged pairwise. */
static tg_status
scan_rows_cpu(const tg_ctx *ctx, const void *arg, tg_error *err)
{
	const scan_step *a = arg;
	const size_t W = (size_t) a->width,
				n = W * a->nrows;
	part_scan	s = scan_plan(a, scan_substrips(a->width, a->nrows));
	tg_status	st = TG_OK;

	s.label = tg_alloc(ctx, (n ? n : 1) * sizeof(uint32_t));
	s.lf = tg_alloc(ctx, (n ? n : 1) * sizeof(double));
	s.kept = tg_alloc(ctx, s.nsub * sizeof(scan_edge *));
	s.nkept = tg_alloc(ctx, s.nsub * sizeof(size_t));
	if (!s.label || !s.lf || !s.kept || !s.nkept)
		st = tg_error_set(err, TG_ENOMEM, "could not allocate a fill part of %zu x %d cells", W, a->nrows);
	if (st == TG_OK)
		memset(s.kept, 0, s.nsub * sizeof(scan_edge *));
	for (int j = 0; st == TG_OK && j < s.nsub; j++)
		if ((s.kept[j] = tg_alloc(ctx, (2 * W + 1) * sizeof(scan_edge))) == NULL)
			st = tg_error_set(err, TG_ENOMEM, "could not allocate a fill part's label edges");
	if (st == TG_OK)
		st = tg_parallel(ctx, s.nsub, scan_substrip, &s, err);
	for (s.span = 1; st == TG_OK && s.span < s.nsub; s.span *= 2)
		st = tg_parallel(ctx, (s.nsub - s.span + 2 * s.span - 1) / (2 * s.span), merge_ranges, &s, err);
	if (st == TG_OK)
		st = scan_result(ctx, &s, a->k, s.kept[0], s.nkept[0], s.label, s.label + n - W, a->out, err);
	for (int j = 0; s.kept && j < s.nsub; j++)
		tg_free(ctx, s.kept[j]);
	tg_free(ctx, s.kept);
	tg_free(ctx, s.nkept);
	tg_free(ctx, s.label);
	tg_free(ctx, s.lf);
	return st;
}

/*
 * On the device: the part as one sub-strip whose labels are all seeds; its
 * meetings kept as the minimum spanning tree of those labels, as a
 * sub-strip's are.
 */
static tg_status
scan_rows_gpu(const tg_ctx *ctx, const void *arg, tg_error *err)
{
	const scan_step *a = arg;
	const size_t W = (size_t) a->width;
	const part_scan s = scan_plan(a, 1);
	const scan_labels leaf = {{top_base(a->width, 0), UINT32_MAX - (uint32_t) W, UINT32_MAX - (uint32_t) W,
	bottom_base(a->width, 0)}, (uint32_t) W};
	tg_scan_edges edges;
	uint32_t   *first = tg_alloc(ctx, 2 * W * sizeof(uint32_t));
	scan_edge  *e = NULL,
			   *kept = tg_alloc(ctx, (2 * W + 1) * sizeof(scan_edge));
	size_t		nkept = 0;
	tg_status	st;

	memset(&edges, 0, sizeof edges);
	st = first && kept ? tg_cuda_fill_scan(ctx, a->z, a->width, a->nrows + a->above + a->below, a->above, a->nrows,
										   a->above ? top_base(a->width, 0) : 0,
										   a->below ? bottom_base(a->width, 0) : 0, &edges, first, first + W, err)
		: tg_error_set(err, TG_ENOMEM, "could not allocate a fill part's labels");
	if (st == TG_OK && (e = tg_alloc(ctx, (edges.n + 1) * sizeof(scan_edge))) == NULL)
		st = tg_error_set(err, TG_ENOMEM, "could not allocate a fill part's %zu label edges", edges.n);
	for (size_t i = 0; st == TG_OK && i < edges.n; i++)
		e[i] = (scan_edge) {edges.height[i], edges.a[i], edges.b[i]};
	tg_free(ctx, edges.a);
	tg_free(ctx, edges.b);
	tg_free(ctx, edges.height);
	if (st == TG_OK)
		st = keep_edges(ctx, &leaf, e, edges.n, kept, &nkept, err);
	if (st == TG_OK)
		st = scan_result(ctx, &s, a->k, kept, nkept, first, first + W, a->out, err);
	tg_free(ctx, e);
	tg_free(ctx, kept);
	tg_free(ctx, first);
	return st;
}

static tg_status
scan_rows(const tg_ctx *ctx, int width, int k, bool above, bool below, int nrows, const double *z,
		  tg_fill_scan *out, tg_error *err)
{
	const scan_step a = {width, k, above, below, nrows, z, out};
	tg_status	st;

	memset(out, 0, sizeof *out);
	st = tg_run_step(ctx, (int64_t) width * nrows, scan_rows_cpu, scan_rows_gpu, &a, err);
	if (st != TG_OK)
		tg_fill_scan_free(ctx, out);
	return st;
}

tg_status
tg_fill_part_scan(const tg_ctx *ctx, int width, int k, int count, int nrows, const double *z,
				  tg_fill_scan *out, tg_error *err)
{
	memset(out, 0, sizeof *out);
	if (labels_too_many(width, count))
		return tg_error_set(err, TG_ELIMIT, "a fill over %d parts of %d columns has too many labels", count, width);
	return scan_rows(ctx, width, k, k > 0, k + 1 < count, nrows, z, out, err);
}

void
tg_fill_scan_free(const tg_ctx *ctx, tg_fill_scan *p)
{
	tg_free(ctx, p->a);
	tg_free(ctx, p->b);
	tg_free(ctx, p->height);
	tg_free(ctx, p->first);
	tg_free(ctx, p->last);
	memset(p, 0, sizeof *p);
}

tg_status
tg_fill_part_solve(const tg_ctx *ctx, int width, int count, const tg_fill_scan *parts,
				   const double *const *first_rows, const double *const *last_rows,
				   double *const *levels, tg_error *err)
{
	tg_spill_graph *spill = NULL;
	double	   *level = NULL;
	tg_status	st = tg_spill_graph_begin(ctx, width, &spill, err);

	for (int k = 0; k < count && st == TG_OK; k++)
		st = tg_spill_graph_add(ctx, spill, &parts[k], k > 0 ? last_rows[k - 1] : NULL, first_rows[k], err);
	if (st == TG_OK)
		st = tg_spill_graph_solve(ctx, spill, &level, err);
	for (int k = 0; k < count && st == TG_OK; k++)
	{
		levels[k][0] = level[0];
		memcpy(levels[k] + 1, level + tg_spill_graph_labels(width, k), 2 * (size_t) width * sizeof(double));
	}
	tg_free(ctx, level);
	tg_spill_graph_end(ctx, spill);
	return st;
}

/*
 * W(c) = max(lf(c), level(label(c))) is the fill of the strip as a grid of
 * its own whose seeded edge cells (outlets there) stand at their global
 * level max(z, level): each cell's water leaves by the lowest way, through
 * a true outlet or over a seeded cell at the height that cell's water
 * reaches.  So the strip is finished by tg_fill on those rows, on the
 * backend and threads the call has, with the same bits as the flood (the
 * filled surface is unique).
 */
static tg_status
finish_rows(const tg_ctx *ctx, int width, bool above, bool below, int nrows, double *z,
			const double *row_levels, double *w, tg_error *err)
{
	const size_t W = (size_t) width;
	double	   *raised = z + (above ? W : 0);
	tg_band		band;
	tg_fill_params fp = {TG_FILL_PRIORITY_FLOOD, 0, TG_PT_64BF};

	/*
	 * seeded as the flood seeds: the top row's labels first, then the bottom
	 * row's; raised in place (an outlet depends on nodata only, which
	 * raising leaves as it is)
	 */
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
				*c = fmax(*c, row_levels[(top ? 0 : W) + (size_t) x]);
		}
	}
	memset(&band, 0, sizeof band);
	band.width = width;
	band.height = nrows;
	band.pixtype = TG_PT_64BF;
	band.data = raised;
	return tg_fill(ctx, &band, &fp, NAN, w, err);
}

tg_status
tg_fill_part_finish(const tg_ctx *ctx, int width, int k, int count, int nrows, double *z,
					const double *levels, double *w, tg_error *err)
{
	/* levels[0], the outlets', is not needed: they stay as they are */
	return finish_rows(ctx, width, k > 0, k + 1 < count, nrows, z, levels + 1, w, err);
}
