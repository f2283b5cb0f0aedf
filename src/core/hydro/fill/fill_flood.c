/*
 * fill_flood.c — the priority-flood of fill.h and the label graph of
 * the strip decomposition.
 *
 * The flood is Barnes, Lehman & Mulla (2014)'s improved priority-flood:
 * cells are finished in order of their level lf; a neighbour reached at or
 * below the level of the cell that reaches it is raised to that level and
 * goes through a plain FIFO (its level equals the current one).  Two
 * additions keep most cells off the priority queue:
 *   - a neighbour reached above the current level is final at its own
 *     elevation (a path through the finished cell never rises above it), and
 *     so is every cell reached uphill from it: such cells are finished at
 *     once by a climb over non-decreasing ground, and only a climbed cell
 *     with a lower unfinished neighbour enters the queue, at its own
 *     elevation, to reach that neighbour in order (Zhou, Sun & Fu 2016);
 *   - when every level is an integer in a moderate range (8- and 16-bit
 *     DEMs, most 32-bit ones), the queue is an array of buckets, one per
 *     elevation: O(1) per cell instead of a heap's O(log n) (Barnes et al.
 *     2014, §4).
 * The filled surface does not depend on the order in which cells of one
 * level are taken, so neither addition changes a single value.
 */
#include "hydro/fill/fill.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

/* Buckets at most: 4 M (16 MB of heads) */
#define MAX_BUCKETS (1u << 22)

/* Label pairs remembered by a flood (a power of two) */
#define MET_CACHE 1024

enum cell_state
{
	OPEN = 0, DONE = 1, NODATA = 2
};

/* ------------------------------------------------------------------------
 * The priority queue: buckets of integer levels, else a binary heap.  A
 * bucket is a stack of small chunks of cells, so that taking cells reads
 * memory in order; chunks emptied go back to a free list.
 * ------------------------------------------------------------------------ */
#define CHUNK_CELLS 62

typedef struct chunk
{
	uint32_t	below;			/* the chunk under this one in its bucket, or NONE */
	uint32_t	count;
	uint32_t	cell[CHUNK_CELLS];
} chunk;

typedef struct flood_queue
{
	bool		buckets;
	double		base;			/* level of bucket 0 */
	uint32_t	nbuckets;
	uint32_t   *top;			/* per bucket: its top chunk, or NONE */
	chunk	   *chunks;
	uint32_t	nchunks;
	uint32_t	used;			/* chunks ever taken from the arena */
	uint32_t	free;			/* free list through `below` */
	uint32_t	cur;			/* no bucket below this one holds a cell */
	size_t		len;
	tg_heap		heap;
} flood_queue;

/* Integer levels in a range the buckets can hold? */
static bool
integer_levels(const double *z, size_t n, double *lo, uint32_t *range)
{
	double		mn = INFINITY,
				mx = -INFINITY;

	for (size_t i = 0; i < n; i++)
	{
		const double v = z[i];

		if (isnan(v))
			continue;
		if (v != rint(v) || isinf(v))
			return false;
		mn = v < mn ? v : mn;
		mx = v > mx ? v : mx;
	}
	if (mn > mx)
		mn = mx = 0;
	if (mx - mn >= MAX_BUCKETS)
		return false;
	*lo = mn;
	*range = (uint32_t) (mx - mn) + 1;
	return true;
}

static tg_status
queue_init(const tg_ctx *ctx, flood_queue *q, const double *z, size_t n, tg_error *err)
{
	memset(q, 0, sizeof *q);
	q->buckets = integer_levels(z, n, &q->base, &q->nbuckets);
	if (q->buckets)
	{
		/* every cell once, in full chunks but for one partly filled per bucket */
		const uint64_t need = n / CHUNK_CELLS + 1 + q->nbuckets;

		if (need >= NONE)
			q->buckets = false;
		else
		{
			q->nchunks = (uint32_t) need;
			q->top = tg_alloc(ctx, (size_t) q->nbuckets * sizeof(uint32_t));
			q->chunks = tg_alloc(ctx, (size_t) q->nchunks * sizeof(chunk));
			if (q->top == NULL || q->chunks == NULL)
				return tg_error_set(err, TG_ENOMEM, "could not allocate the fill's queue (%zu cells)", n);
			memset(q->top, 0xFF, (size_t) q->nbuckets * sizeof(uint32_t));
			q->free = NONE;
			return TG_OK;
		}
	}
	q->heap.a = tg_alloc(ctx, (n ? n : 1) * sizeof(tg_heap_item));
	if (q->heap.a == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate the fill's queue (%zu cells)", n);
	return TG_OK;
}

static void
queue_free(const tg_ctx *ctx, flood_queue *q)
{
	tg_free(ctx, q->top);
	tg_free(ctx, q->chunks);
	tg_free(ctx, q->heap.a);
}

static inline void
queue_push(flood_queue *q, double level, uint32_t cell)
{
	q->len++;
	if (q->buckets)
	{
		const uint32_t b = (uint32_t) (level - q->base);
		uint32_t	t = q->top[b];

		if (t == NONE || q->chunks[t].count == CHUNK_CELLS)
		{
			uint32_t	fresh;

			if (q->free != NONE)
			{
				fresh = q->free;
				q->free = q->chunks[fresh].below;
			}
			else
				fresh = q->used++;
			q->chunks[fresh].below = t;
			q->chunks[fresh].count = 0;
			q->top[b] = t = fresh;
		}
		q->chunks[t].cell[q->chunks[t].count++] = cell;
	}
	else
		tg_heap_push(&q->heap, level, cell);
}

/*
 * The next cell and its level.  Levels pushed never fall below the last one
 * taken: the buckets only move up.
 */
static inline uint32_t
queue_pop(flood_queue *q, double *level)
{
	q->len--;
	if (q->buckets)
	{
		uint32_t	t,
					c;
		chunk	   *k;

		while (q->top[q->cur] == NONE)
			q->cur++;
		t = q->top[q->cur];
		k = &q->chunks[t];
		c = k->cell[--k->count];
		if (k->count == 0)
		{
			q->top[q->cur] = k->below;
			k->below = q->free;
			q->free = t;
		}
		*level = q->base + q->cur;
		return c;
	}
	else
	{
		const tg_heap_item top = tg_heap_pop(&q->heap);

		*level = top.w;
		return top.i;
	}
}

/* ------------------------------------------------------------------------
 * The flood
 * ------------------------------------------------------------------------ */
typedef struct flood_state
{
	const tg_flood *f;
	const tg_ctx *ctx;
	uint8_t    *state;			/* enum cell_state */
	uint32_t   *pit;			/* FIFO of cells raised to the current level */
	size_t		pit_head,
				pit_tail;
	uint32_t   *climb;			/* stack of the climb */
	flood_queue q;
	ptrdiff_t	offset[8];		/* index offsets of the 8 neighbours */
	/* label pairs met lately, at the lowest height recorded: most meetings repeat one */
	struct
	{
		uint64_t	key;
		double		height;
	}			met[MET_CACHE];
	tg_status	st;
	tg_error   *err;
} flood_state;

/* The labels of finished cells c and m meet at the higher of the two. */
static inline void
meet(flood_state *s, uint32_t c, uint32_t m)
{
	const tg_flood *f = s->f;
	uint32_t	a,
				b;
	uint64_t	key;
	double		h;
	unsigned	slot;

	if (f->graph == NULL || (a = f->label[c]) == (b = f->label[m]))
		return;
	key = (uint64_t) (a < b ? a : b) << 32 | (a < b ? b : a);
	h = f->lf[c] > f->lf[m] ? f->lf[c] : f->lf[m];
	slot = (unsigned) ((key * 0x9E3779B97F4A7C15ull) >> 54) & (MET_CACHE - 1);
	if (s->met[slot].key == key + 1 && s->met[slot].height <= h)
		return;
	s->met[slot].key = key + 1;
	s->met[slot].height = h;
	if (s->st == TG_OK)
		s->st = tg_label_graph_add(s->ctx, f->graph, a, b, h, s->err);
}

/* Whether neighbour k of cell (x, y) lies in the region. */
static inline bool
inside(const tg_flood *f, int x, int y, int k)
{
	const int	nx = x + tg_nbr_dx(k),
				ny = y + tg_nbr_dy(k);

	return nx >= 0 && ny >= 0 && nx < f->width && ny < f->nrows;
}

/*
 * Neighbour k of cell c at (x, y) as *m when it lies in the region and is
 * still open; a done one it reaches is a meeting of two labels.
 */
static inline bool
open_neighbour(flood_state *s, uint32_t c, int x, int y, bool interior, int k, uint32_t *m)
{
	if (!interior && !inside(s->f, x, y, k))
		return false;
	*m = (uint32_t) ((ptrdiff_t) c + s->offset[k]);
	if (s->state[*m] == OPEN)
		return true;
	if (s->state[*m] == DONE)
		meet(s, c, *m);
	return false;
}

/*
 * Finish every cell reached uphill from `start` (finished at its own
 * elevation): each is final at its own elevation.  A climbed cell with a
 * lower unfinished neighbour is queued at its elevation.
 */
static void
climb(flood_state *s, uint32_t start)
{
	const tg_flood *f = s->f;
	const int	W = f->width;
	size_t		top = 0;

	s->climb[top++] = start;
	while (top > 0)
	{
		const uint32_t c = s->climb[--top];
		const int	x = (int) (c % W),
					y = (int) (c / W);
		const bool	interior = x > 0 && y > 0 && x < W - 1 && y < f->nrows - 1;
		const double zc = f->z[c];
		bool		lower_open = false;

		for (int k = 0; k < 8; k++)
		{
			uint32_t	m;

			if (!open_neighbour(s, c, x, y, interior, k, &m))
				continue;
			if (f->z[m] >= zc)
			{
				s->state[m] = DONE;
				f->lf[m] = f->z[m];
				if (f->label)
					f->label[m] = f->label[c];
				s->climb[top++] = m;
			}
			else
				lower_open = true;
		}
		if (lower_open)
			queue_push(&s->q, zc, c);
	}
}

/* Finish the unfinished neighbours of c, which is final at `level`. */
static void
spread(flood_state *s, uint32_t c, double level)
{
	const tg_flood *f = s->f;
	const int	W = f->width;
	const int	x = (int) (c % W),
				y = (int) (c / W);
	const bool	interior = x > 0 && y > 0 && x < W - 1 && y < f->nrows - 1;

	for (int k = 0; k < 8; k++)
	{
		uint32_t	m;

		if (!open_neighbour(s, c, x, y, interior, k, &m))
			continue;
		s->state[m] = DONE;
		if (f->label)
			f->label[m] = f->label[c];
		if (f->z[m] <= level)
		{
			f->lf[m] = level;
			s->pit[s->pit_tail++] = m;
		}
		else
		{
			f->lf[m] = f->z[m];
			climb(s, m);
		}
	}
}

static inline bool
nodata_near(const double *row, int width, int x)
{
	for (int dx = -1; dx <= 1; dx++)
		if (x + dx >= 0 && x + dx < width && isnan(row[x + dx]))
			return true;
	return false;
}

/* Is row y's cell x next to a nodata cell of the halo rows? */
static inline bool
halo_nodata(const tg_flood *f, int x, int y)
{
	return (y == 0 && f->above && nodata_near(f->z - f->width, f->width, x)) ||
		(y == f->nrows - 1 && f->below &&
		 nodata_near(f->z + (size_t) f->nrows * f->width, f->width, x));
}

/* Seeds: outlets (label 0), then a strip's top and bottom rows, queued in raster order. */
static void
seed(flood_state *s)
{
	const tg_flood *f = s->f;
	const int	W = f->width,
				R = f->nrows;
	const size_t n = (size_t) W * R;
	uint8_t    *outlet = (uint8_t *) s->climb;	/* scratch: the climb has not started */

	memset(outlet, 0, n);
	for (size_t i = 0; i < n; i++)
	{
		f->lf[i] = f->z[i];
		s->state[i] = isnan(f->z[i]) ? NODATA : OPEN;
	}
	/* next to nodata inside the region: mark from the nodata cells */
	for (size_t i = 0; i < n; i++)
	{
		const int	x = (int) (i % W),
					y = (int) (i / W);

		if (s->state[i] != NODATA)
			continue;
		for (int k = 0; k < 8; k++)
			if (inside(f, x, y, k))
				outlet[(ptrdiff_t) i + s->offset[k]] = 1;
	}
	for (int y = 0; y < R; y++)
		for (int x = 0; x < W; x++)
		{
			const size_t i = (size_t) y * W + x;
			const bool	top = y == 0 && f->above && f->top_base,
						bottom = y == R - 1 && f->below && f->bottom_base;

			if (s->state[i] == NODATA)
				continue;
			if (x == 0 || x == W - 1 || (y == 0 && !f->above) || (y == R - 1 && !f->below) ||
				halo_nodata(f, x, y))
				outlet[i] = 1;
			if (!outlet[i] && !top && !bottom)
				continue;
			if (f->label)
				f->label[i] = outlet[i] ? 0 : top ? f->top_base + (uint32_t) x
					: f->bottom_base + (uint32_t) x;
			s->state[i] = DONE;
			queue_push(&s->q, f->z[i], (uint32_t) i);
		}
}

tg_status
tg_flood_run(const tg_ctx *ctx, const tg_flood *f, tg_error *err)
{
	const int	W = f->width;
	const size_t n = (size_t) W * f->nrows;
	flood_state s;
	size_t		processed = 0;

	memset(&s, 0, sizeof s);
	s.f = f;
	s.ctx = ctx;
	s.err = err;
	if (n >= UINT32_MAX)
		return tg_error_set(err, TG_ELIMIT, "a fill region of %zu cells is too large", n);
	for (int k = 0; k < 8; k++)
		s.offset[k] = (ptrdiff_t) tg_nbr_dy(k) * W + tg_nbr_dx(k);
	s.state = tg_alloc(ctx, n ? n : 1);
	s.pit = tg_alloc(ctx, (n ? n : 1) * sizeof(uint32_t));
	s.climb = tg_alloc(ctx, (n ? n : 1) * sizeof(uint32_t));
	if (s.state == NULL || s.pit == NULL || s.climb == NULL)
		s.st = tg_error_set(err, TG_ENOMEM, "could not allocate the fill's buffers (%zu cells)", n);
	if (s.st == TG_OK)
		s.st = queue_init(ctx, &s.q, f->z, n, err);
	if (s.st == TG_OK)
	{
		double		level = 0;

		seed(&s);
		/* cells raised into the pit share the level of the last cell taken from the queue */
		while (s.st == TG_OK && (s.pit_head < s.pit_tail || s.q.len > 0))
		{
			const uint32_t c = s.pit_head < s.pit_tail ? s.pit[s.pit_head++] : queue_pop(&s.q, &level);

			if (++processed % TG_CANCEL_EVERY == 0 && tg_canceled(ctx))
				s.st = tg_error_set(err, TG_ECANCELED, "fill canceled");
			else
				spread(&s, c, level);
		}
	}
	queue_free(ctx, &s.q);
	tg_free(ctx, s.state);
	tg_free(ctx, s.pit);
	tg_free(ctx, s.climb);
	return s.st;
}

/* ------------------------------------------------------------------------
 * The label graph: label pairs and the lowest height water crosses them at,
 * in an open-addressing table.  Its memory comes from malloc, whatever the
 * context: a band's flood on a worker thread adds to its own graph, which
 * the calling thread merges and frees.
 * ------------------------------------------------------------------------ */
typedef struct edge_slot
{
	uint64_t	key;			/* (low label << 32 | high label) + 1; 0 = empty */
	double		height;
} edge_slot;

struct tg_label_graph
{
	edge_slot  *slots;
	size_t		count;
	size_t		cap;			/* a power of two */
	bool		listed;			/* slots[0 .. count) in the order added, no lookup */
};

/*
 * The high bits of the product: its low bits depend on the key's low bits
 * alone (the high label), so every pair of one label would start at one slot.
 */
static inline size_t
slot_of(uint64_t key, size_t cap)
{
	return (size_t) ((key * 0x9E3779B97F4A7C15ull) >> (64 - __builtin_ctzll(cap)));
}

tg_status
tg_label_graph_create(const tg_ctx *ctx, tg_label_graph **g, tg_error *err)
{
	*g = calloc(1, sizeof **g);
	return *g ? TG_OK : tg_error_set(err, TG_ENOMEM, "could not allocate the fill's label graph");
}

tg_status
tg_label_graph_create_list(const tg_ctx *ctx, tg_label_graph **g, tg_error *err)
{
	tg_status	st = tg_label_graph_create(ctx, g, err);

	if (st == TG_OK)
		(*g)->listed = true;
	return st;
}

void
tg_label_graph_free(const tg_ctx *ctx, tg_label_graph *g)
{
	if (g == NULL)
		return;
	free(g->slots);
	free(g);
}

size_t
tg_label_graph_edges(const tg_label_graph *g)
{
	return g->count;
}

void
tg_label_graph_export(const tg_label_graph *g, uint32_t *a, uint32_t *b, double *height)
{
	size_t		e = 0;

	for (size_t j = 0; j < g->cap; j++)
		if (g->slots[j].key)
		{
			const uint64_t key = g->slots[j].key - 1;

			a[e] = (uint32_t) (key >> 32);
			b[e] = (uint32_t) key;
			height[e++] = g->slots[j].height;
		}
}

static void
insert_slot(edge_slot *slots, size_t cap, uint64_t key, double height)
{
	size_t		j;

	for (j = slot_of(key, cap); slots[j].key && slots[j].key != key; j = (j + 1) & (cap - 1))
		;
	if (slots[j].key == 0 || height < slots[j].height)
		slots[j].height = height;
	slots[j].key = key;
}

tg_status
tg_label_graph_add(const tg_ctx *ctx, tg_label_graph *g, uint32_t a, uint32_t b, double height,
				   tg_error *err)
{
	const uint64_t key = ((uint64_t) (a < b ? a : b) << 32 | (a < b ? b : a)) + 1;
	size_t		j;

	if (a == b)
		return TG_OK;
	if (g->listed)
	{
		if (g->count == g->cap)
		{
			size_t		cap = g->cap ? 2 * g->cap : 1024;
			edge_slot  *slots = calloc(cap, sizeof(edge_slot));

			if (slots == NULL)
				return tg_error_set(err, TG_ENOMEM, "could not grow the fill's label graph to %zu edges", cap);
			if (g->count)
				memcpy(slots, g->slots, g->count * sizeof(edge_slot));
			free(g->slots);
			g->slots = slots;
			g->cap = cap;
		}
		g->slots[g->count].key = key;
		g->slots[g->count++].height = height;
		return TG_OK;
	}
	if (2 * (g->count + 1) > g->cap)
	{
		size_t		cap = g->cap ? 2 * g->cap : 1024;
		edge_slot  *slots = calloc(cap, sizeof(edge_slot));

		if (slots == NULL)
			return tg_error_set(err, TG_ENOMEM, "could not grow the fill's label graph to %zu edges", cap / 2);
		for (size_t i = 0; i < g->cap; i++)
			if (g->slots[i].key)
				insert_slot(slots, cap, g->slots[i].key, g->slots[i].height);
		free(g->slots);
		g->slots = slots;
		g->cap = cap;
	}
	for (j = slot_of(key, g->cap);; j = (j + 1) & (g->cap - 1))
	{
		if (g->slots[j].key == key)
		{
			if (height < g->slots[j].height)
				g->slots[j].height = height;
			return TG_OK;
		}
		if (g->slots[j].key == 0)
		{
			g->slots[j].key = key;
			g->slots[j].height = height;
			g->count++;
			return TG_OK;
		}
	}
}

tg_status
tg_label_rows_meet(int width, const uint32_t *upper_labels, const double *upper_z, const uint32_t *lower_labels,
				   const double *lower_z, tg_label_meet_fn meet, void *arg, tg_error *err)
{
	for (int x = 0; x < width; x++)
	{
		if (isnan(lower_z[x]))
			continue;
		for (int dx = -1; dx <= 1; dx++)
		{
			const int	ax = x + dx;
			tg_status	st;

			if (ax < 0 || ax >= width || isnan(upper_z[ax]))
				continue;
			st = meet(arg, lower_labels[x], upper_labels[ax], fmax(lower_z[x], upper_z[ax]), err);
			if (st != TG_OK)
				return st;
		}
	}
	return TG_OK;
}

typedef struct graph_meet
{
	const tg_ctx *ctx;
	tg_label_graph *g;
} graph_meet;

static tg_status
add_meeting(void *arg, uint32_t lower, uint32_t upper, double height, tg_error *err)
{
	const graph_meet *m = arg;

	return tg_label_graph_add(m->ctx, m->g, lower, upper, height, err);
}

tg_status
tg_label_graph_join_rows(const tg_ctx *ctx, tg_label_graph *g, int width,
						 const uint32_t *upper_labels, const double *upper_z,
						 const uint32_t *lower_labels, const double *lower_z, tg_error *err)
{
	graph_meet	m = {ctx, g};

	return tg_label_rows_meet(width, upper_labels, upper_z, lower_labels, lower_z, add_meeting, &m, err);
}

/* Dijkstra with max for +: level(v) = min over edges (u, v) of max(level(u), h). */
tg_status
tg_label_graph_solve(const tg_ctx *ctx, tg_label_graph *const *graphs, int ngraphs, size_t nlabels,
					 double **out, tg_error *err)
{
	const size_t L = nlabels;
	size_t		E = 0;
	size_t	   *start,
			   *fill;
	uint32_t   *to;
	double	   *height,
			   *level;
	tg_heap		q;
	tg_status	st = TG_OK;

	for (int k = 0; k < ngraphs; k++)
		E += graphs[k]->count;
	start = tg_alloc(ctx, (L + 1) * sizeof(size_t));
	fill = tg_alloc(ctx, (L + 1) * sizeof(size_t));
	to = tg_alloc(ctx, (2 * E + 1) * sizeof(uint32_t));
	height = tg_alloc(ctx, (2 * E + 1) * sizeof(double));
	level = tg_alloc(ctx, (L ? L : 1) * sizeof(double));
	q.a = tg_alloc(ctx, (2 * E + 1) * sizeof(tg_heap_item));
	q.len = 0;
	*out = NULL;
	if (!start || !fill || !to || !height || !level || !q.a)
	{
		st = tg_error_set(err, TG_ENOMEM, "could not allocate the label graph (%zu labels, %zu edges)",
						  L, E);
		goto done;
	}
	/* adjacency lists over every graph's edges (a pair in two graphs gives two edges) */
	memset(start, 0, (L + 1) * sizeof(size_t));
	for (int k = 0; k < ngraphs; k++)
		for (size_t i = 0; i < graphs[k]->cap; i++)
			if (graphs[k]->slots[i].key)
			{
				const uint64_t key = graphs[k]->slots[i].key - 1;

				start[(key >> 32) + 1]++;
				start[(uint32_t) key + 1]++;
			}
	for (size_t l = 0; l < L; l++)
		start[l + 1] += start[l];
	memcpy(fill, start, (L + 1) * sizeof(size_t));
	for (int k = 0; k < ngraphs; k++)
		for (size_t i = 0; i < graphs[k]->cap; i++)
			if (graphs[k]->slots[i].key)
			{
				const uint64_t key = graphs[k]->slots[i].key - 1;
				const uint32_t a = (uint32_t) (key >> 32),
							b = (uint32_t) key;
				const double h = graphs[k]->slots[i].height;

				to[fill[a]] = b;
				height[fill[a]++] = h;
				to[fill[b]] = a;
				height[fill[b]++] = h;
			}
	for (size_t l = 0; l < L; l++)
		level[l] = INFINITY;
	if (L > 0)
	{
		level[0] = -INFINITY;
		tg_heap_push(&q, -INFINITY, 0);
	}
	while (q.len > 0)
	{
		const tg_heap_item top = tg_heap_pop(&q);
		const uint32_t u = top.i;

		if (top.w > level[u])
			continue;			/* a stale entry */
		for (size_t e = start[u]; e < start[u + 1]; e++)
		{
			const double cand = top.w > height[e] ? top.w : height[e];

			if (cand < level[to[e]])
			{
				level[to[e]] = cand;
				tg_heap_push(&q, cand, to[e]);
			}
		}
	}
	*out = level;
	level = NULL;

done:
	tg_free(ctx, start);
	tg_free(ctx, fill);
	tg_free(ctx, to);
	tg_free(ctx, height);
	tg_free(ctx, level);
	tg_free(ctx, q.a);
	return st;
}
