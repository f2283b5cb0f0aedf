/*
 * parts.c — a coverage partitioned by rows of tiles over several servers:
 * every server computes on the part it holds, the coordinator stitches what
 * crosses part boundaries, and only that crosses the network.  The result
 * equals the single-grid run cell for cell.
 *
 *   slope         edges (each part's first and last rows); finish (each part
 *                 with the rows around it).
 *   fill          edges; scan: each part flooded from its own outlets and its
 *                 first and last rows (Barnes 2016, fill_strips.c), its label
 *                 edges handed over and solved where they meet; finish: each
 *                 part flooded again and raised to its labels' levels.
 *   D8            [edges, scan for the fill]; surface: each part keeps its
 *   accumulation  routing surface and hands over its first and last two
 *                 rows; flats: flats that cross part boundaries get their
 *                 breadth-first distances (Barnes et al. 2014) in rounds, each
 *                 part relaxing its own cells from the values its neighbours
 *                 hold along the boundary, until no boundary value changes;
 *                 heights: each such flat's greatest distance from higher
 *                 ground; link: each part routed with those masks and
 *                 accumulated alone, its exits and the exits its edge rows
 *                 drain by handed over (Barnes 2017, route_strips.c) and
 *                 solved where they meet; finish: the water entering each
 *                 part added to its link's accumulation, the cells
 *                 downstream of where it enters pulled again (the values of
 *                 the part accumulated again with it).
 *   multiple-flow as D8 up to the heights; flow: each part routed with the
 *   accumulation  masks; its rows next to each neighbour's (the halo,
 *                 tg_part_flow_halo of them, and one more) handed over once,
 *                 as the surface's rows the neighbour lacks to route them
 *                 itself and the routing of their cells on flats; then each
 *                 part sums its rows with the halos around them and, around
 *                 those, the row taken in, whose cells hold the value its
 *                 neighbour hands over once it is final.  A cell is pulled
 *                 once every donor's value is final (Kahn's order over the
 *                 cells downstream of a row taken in), from its donors in
 *                 neighbour order as the single grid pulls it, so its value
 *                 is the single grid's bit for bit; each value crosses once,
 *                 in the round it becomes final; rounds until none does.
 *                 Water may cross a boundary several times, so a split
 *                 cannot be solved at once as D8's exits are: a round
 *                 settles water that leaves a part's halo and comes back;
 *                 water that zigzags across a boundary within the halos
 *                 costs no rounds.
 *   tg_hydrology  as the accumulation of its routing; the finish also writes
 *                 the part's routing surface and receivers (of the routing
 *                 the part kept).
 *
 * A part runs a phase as tg_run with job->part set: the coordinator's
 * message in, the reply out, and what it keeps between phases in
 * part->state (allocated with part->keep).  The coordinator
 * (tg_parts_step) keeps its own state between phases as bytes too.
 * Messages and replies are byte strings in this file's format (native byte
 * order, which the first word checks), read with every length checked.
 * Rows of values travel as varints of their differences where every value
 * is an integer (integer DEMs), else as floats where each is exact in one,
 * else as doubles; labels and cell numbers as varints of differences.
 */
#include "raster/raster.h"
#include "dispatch/dispatch.h"
#include "raster/codec.h"
#include "hydro/hydro.h"
#include "runtime/runtime.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PART_MAGIC 0x54475031u	/* "TGP1" */
#define STATE_MAGIC 0x54475053u	/* "TGPS" */
#define REPLY 0x80				/* a reply's type: its phase | REPLY */
#define BARE 0x40				/* a message's type without the part's header (the flow's later rounds) */
#define MAX_ROUNDS 100000		/* of the flats or the flow */
#define CANCEL_EVERY 65536		/* cells between looks at a cancel in a serial pass */

int			tg_part_flow_halo = 4;

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
	if (w->failed || n == 0)
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

static void
put_varint(writer *w, uint64_t v)
{
	uint8_t		b[10];

	put(w, b, tg_varint_put(v, b));
}

/* A signed number as an unsigned one, small either side of 0 (zigzag), and back. */
static inline uint64_t
zigzag(int64_t v)
{
	return ((uint64_t) v << 1) ^ (uint64_t) -(int64_t) ((uint64_t) v >> 63);
}

static inline int64_t
unzigzag(uint64_t z)
{
	return (int64_t) ((z >> 1) ^ (uint64_t) -(int64_t) (z & 1));
}

/* How put_values writes a row of values. */
enum
{
	VALUES_DOUBLE, VALUES_FLOAT, VALUES_INTEGER
};

#define INTEGER_LIMIT 4503599627370496.0	/* 2^52: integers and their differences exact in doubles */

/* Is v an integer put_values may write as one (its sign and bits come back the same)? */
static inline bool
integer_value(double v)
{
	return fabs(v) < INTEGER_LIMIT && v == trunc(v) && !(v == 0 && signbit(v));
}

/*
 * n values: where each is NaN or an integer (a DEM of integers, its filled
 * surface, cell counts) as varints of the difference from the one before
 * (0 for NaN, else 1 + the difference zigzagged): neighbouring cells differ
 * a little; else as floats where every one is exact as a float (NaN
 * included), else as doubles.
 */
static void
put_values(writer *w, const double *v, size_t n)
{
	bool		integer = true,
				single = true;

	for (size_t i = 0; i < n && (integer || single); i++)
	{
		integer = integer && (isnan(v[i]) || integer_value(v[i]));
		single = single && (isnan(v[i]) || (double) (float) v[i] == v[i]);
	}
	put_u8(w, integer ? VALUES_INTEGER : single ? VALUES_FLOAT : VALUES_DOUBLE);
	if (integer)
	{
		int64_t		prev = 0;

		for (size_t i = 0; i < n; i++)
			if (isnan(v[i]))
				put_u8(w, 0);
			else
			{
				const int64_t d = (int64_t) v[i] - prev;

				put_varint(w, 1 + zigzag(d));
				prev = (int64_t) v[i];
			}
	}
	else if (single)
		for (size_t i = 0; i < n; i++)
		{
			const float f = (float) v[i];

			put(w, &f, sizeof f);
		}
	else
		put(w, v, n * sizeof(double));
}

/*
 * n labels (or sorted columns) as varints of their differences from the
 * one before plus one, zigzagged: a row's labels mostly run on by one, and
 * their zeros compress well.
 */
static void
put_runs(writer *w, const uint32_t *v, size_t n)
{
	uint32_t	prev = UINT32_MAX;

	for (size_t i = 0; i < n; i++)
	{
		const uint32_t d = v[i] - prev - 1;

		put_varint(w, zigzag((int32_t) d));
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

static uint64_t
get_varint(reader *r)
{
	uint64_t	v = 0;
	const size_t k = r->bad ? 0 : tg_varint_get(r->p, r->left, &v);

	if (k == 0)
	{
		r->bad = true;
		return 0;
	}
	r->p += k;
	r->left -= k;
	return v;
}

/* n values (put_values) into v. */
static void
get_values(reader *r, double *v, size_t n)
{
	const uint8_t mode = get_u8(r);
	const size_t size = mode == VALUES_FLOAT ? sizeof(float) : sizeof(double);

	if (mode == VALUES_INTEGER)
	{
		int64_t		prev = 0;

		for (size_t i = 0; i < n && !r->bad; i++)
		{
			const uint64_t code = get_varint(r);
			const int64_t d = unzigzag(code - 1);

			if (code == 0)
				v[i] = NAN;
			else if (fabs((double) prev + (double) d) >= INTEGER_LIMIT)
				r->bad = true;
			else
				v[i] = (double) (prev += d);
		}
		return;
	}
	if (r->bad || mode > VALUES_INTEGER || n > r->left / size)
	{
		r->bad = true;
		return;
	}
	for (size_t i = 0; i < n; i++)
	{
		if (mode == VALUES_FLOAT)
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

/*
 * n cell numbers as varints of their differences from the one before,
 * zigzagged: sorted or repeated ones take a byte or two.
 */
static void
put_cells(writer *w, const int64_t *v, size_t n, size_t stride)
{
	uint64_t	prev = 0;

	for (size_t i = 0; i < n; i++)
	{
		int64_t		c;

		memcpy(&c, (const uint8_t *) v + i * stride, sizeof c);
		put_varint(w, zigzag((int64_t) ((uint64_t) c - prev)));
		prev = (uint64_t) c;
	}
}

static void
get_cells(reader *r, int64_t *v, size_t n, size_t stride)
{
	uint64_t	prev = 0;

	for (size_t i = 0; i < n && !r->bad; i++)
	{
		const int64_t c = (int64_t) (prev + (uint64_t) unzigzag(get_varint(r)));

		memcpy((uint8_t *) v + i * stride, &c, sizeof c);
		prev = (uint64_t) c;
	}
}

/* n labels (put_runs) into v. */
static void
get_runs(reader *r, uint32_t *v, size_t n)
{
	uint32_t	prev = UINT32_MAX;

	for (size_t i = 0; i < n && !r->bad; i++)
	{
		const int64_t d = unzigzag(get_varint(r));

		if (d < INT32_MIN || d > INT32_MAX)
			r->bad = true;
		v[i] = prev + 1 + (uint32_t) d;
		prev = v[i];
	}
}

/*
 * Sections: a length (a varint), then that many bytes.  begin_section
 * leaves a byte for the length; end_section makes room for a longer one.
 */
static size_t
begin_section(writer *w)
{
	const size_t at = w->size;

	put_u8(w, 0);
	return at;
}

static void
end_section(writer *w, size_t at)
{
	const size_t len = w->size - at - 1;
	uint8_t		head[10];
	const size_t k = tg_varint_put(len, head);

	for (size_t more = 1; more < k; more++)
		put_u8(w, 0);
	if (w->failed)
		return;
	memmove(w->data + at + k, w->data + at + 1, len);
	memcpy(w->data + at, head, k);
}

static void
put_section(writer *w, const uint8_t *data, size_t len)
{
	put_varint(w, len);
	if (len)
		put(w, data, len);
}

/* The next section of r as a reader of its own. */
static reader
get_section(reader *r)
{
	const uint64_t len = get_varint(r);
	reader		sec = {NULL, 0, false};

	if (r->bad || len > r->left)
		r->bad = sec.bad = true;
	else
	{
		sec.p = r->p;
		sec.left = len;
		r->p += len;
		r->left -= len;
	}
	return sec;
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
/* ------------------------------------------------------------------------
 * Operations and their phases
 * ------------------------------------------------------------------------ */

const char *
tg_part_phase_name(tg_part_phase phase)
{
	static const char *const names[] = {"done", "edges", "scan", "surface", "flats", "heights", "link", "flow", "finish"};

	return phase >= TG_PART_DONE && phase <= TG_PART_FINISH ? names[phase] : "?";
}

/* Rows each part needs of its neighbours' DEM (fill, slope), 0 where op cannot run over parts. */
static int
dem_halo(tg_op_kind kind)
{
	return kind == TG_OP_SLOPE || kind == TG_OP_FILL || kind == TG_OP_DIRECTIONS || kind == TG_OP_ACCUMULATION ||
		kind == TG_OP_HYDROLOGY ? 1 : 0;
}

/* Does op accumulate (tg_flow_accumulation, tg_hydrology)? */
static bool
accumulates(tg_op_kind kind)
{
	return kind == TG_OP_ACCUMULATION || kind == TG_OP_HYDROLOGY;
}

/* Does op route, keeping its surface between the phases? */
static bool
routes(tg_op_kind kind)
{
	return kind == TG_OP_DIRECTIONS || accumulates(kind);
}

/* The fewest rows a part may have. */
static int
min_rows(tg_op_kind kind)
{
	return routes(kind) ? 2 : 1;
}

bool
tg_op_in_parts(const tg_op *op, const char **why_not)
{
	*why_not = NULL;
	if (dem_halo(op->kind) == 0)
		*why_not = "tg_fill, tg_slope, tg_flow_direction, tg_flow_accumulation and tg_hydrology";
	else if (op->kind == TG_OP_FILL && (op->fill_method != TG_FILL_PRIORITY_FLOOD || op->epsilon != 0))
		*why_not = "tg_fill with method priority-flood and epsilon 0";
	else if (op->kind == TG_OP_DIRECTIONS && (op->flow.routing != TG_ROUTE_D8 || op->directions != TG_DIRECTIONS_CODES))
		*why_not = "tg_flow_direction with routing d8 and output codes";
	else if (accumulates(op->kind) && op->weight_input > 0)
		*why_not = "tg_flow_accumulation and tg_hydrology with no weight";
	return *why_not == NULL;
}

/* Does op accumulate by a routing that splits the water (flow rounds instead of D8's link)? */
static bool
multiple_flow(const tg_op *op)
{
	return accumulates(op->kind) && op->flow.routing != TG_ROUTE_D8;
}

/* Does op fill the DEM first? */
static bool
op_fills(const tg_op *op)
{
	return op->kind == TG_OP_FILL || (routes(op->kind) && op->flow.fill);
}

/* ------------------------------------------------------------------------
 * A part's run
 * ------------------------------------------------------------------------ */

/* What every message but the edges' tells a part. */
typedef struct part_message
{
	int			index;
	int			count;
	int			width;			/* of the grid */
	int			col0;			/* of the grid: the part's first column (its tiles may not span the width) */
	int			row0;			/* of the grid: the part's first row */
	double		lat_top;		/* of the grid: its first row's latitude (geographic grids) */
} part_message;

/* What an accumulating part keeps between phases. */
typedef struct part_state
{
	int			W;
	int			H;
	int			index;
	int			count;
	int			row0;
	tg_band		dem;			/* the DEM's type and nodata (no pixels): tg_hydrology's filled DEM has them */
	double	   *z;				/* (2 + H + 2) * W: the routing surface with two rows around (NaN: none) */
	/* its own cells of flats that cross its edges */
	size_t		nflat;
	size_t		flat_cap;
	uint32_t   *cell;			/* y * W + x over its own rows, raster order */
	uint8_t    *seed;
	int32_t    *at;				/* H * W: the index in cell[] of each own cell, -1 */
	int32_t    *comp;			/* the flat each belongs to, as far as the part sees it */
	int64_t    *comp_least;		/* each such flat's label from its own cells: ncomp */
	int64_t    *least;			/* and with its neighbours': ncomp; a cell's label (1 + the smallest
								 * grid cell number of its flat) is its flat's */
	/* until the masks: the distances over the crossing cells, as tg_flat_steps keeps them */
	int32_t    *flat_id;		/* H * W: each own crossing cell's comp, -1 */
	int32_t    *dist[2];		/* H * W: towards the drains, away from higher ground */
	uint8_t    *dist_queued[2];	/* H * W: their FIFO marks */
	int			fx0,
				fx1,
				fy0,
				fy1;			/* the crossing cells' box, inclusive */
	size_t		ncomp;
	uint32_t   *edge;			/* the crossing cells of the part's first and last rows (indices) */
	size_t		nedge;
	int32_t    *mask;
	/* the same of the row above (the neighbour's last) and the row below (its first): 2 * W */
	int32_t    *nb_towards;
	int32_t    *nb_away;
	int64_t    *nb_label;
	int32_t    *nb_mask;
	uint8_t    *sent;			/* our first and last rows' values as last handed over (32 * W bytes) */
	uint8_t    *d8;				/* after the link: the part's directions (H * W) */
	double	   *acc;			/* and its accumulation alone; the finish adds the inflows */
	/*
	 * Multiple-flow accumulation: the part's routing with flow_halo rows of
	 * each neighbour's around it, which it computes too (their routing as
	 * the neighbour handed it over), and around those one row taken in,
	 * whose cells weigh what the neighbour last handed over of their
	 * accumulation.  (H + 2 (flow_halo + 1)) * W cells, the part's own from
	 * row flow_halo + 1; flow_z is the own rows' z (NaN: nodata), 0 around.
	 */
	int			flow_halo;
	double	   *flow_z;
	uint8_t    *flow_d8;
	float	   *flow_frac;		/* 8 planes */
	double	   *flow_w;
	double	   *flow_acc;
	uint8_t    *flow_wait;		/* computed cells: donors not yet final; cells taken in: 1 until their value comes */
	uint32_t   *flow_stack;		/* cells final, their receivers not yet told */
	size_t		nstack;
	size_t		npending;		/* cells taken in still waiting for their value */
	uint8_t    *taken_reach;	/* of the rows the neighbours take in, the cells that route into theirs: 2 * W */
	uint32_t   *ready[2];		/* cells of those rows final since last handed over */
	size_t		nready[2];
} part_state;

static void *
keep_alloc(const tg_part *part, size_t size)
{
	return part->keep.alloc(size ? size : 1, part->keep.arg);
}

static void
state_free(const tg_part *part, part_state *s)
{
	void	   *bufs[] = {s->z, s->cell, s->seed, s->at, s->comp, s->comp_least, s->least, s->flat_id,
		s->dist[0], s->dist[1], s->dist_queued[0], s->dist_queued[1], s->edge, s->mask,
		s->nb_towards, s->nb_away, s->nb_label, s->nb_mask, s->sent, s->d8, s->acc,
		s->flow_z, s->flow_d8, s->flow_frac, s->flow_w, s->flow_acc, s->flow_wait, s->flow_stack, s->taken_reach,
		s->ready[0], s->ready[1]};

	for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
		if (bufs[i])
			part->keep.free(bufs[i], part->keep.arg);
	part->keep.free(s, part->keep.arg);
}

void
tg_part_forget(tg_part *part)
{
	if (part->state)
		state_free(part, part->state);
	part->state = NULL;
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

/* n rows of the DEM from the part above (where there is one) and below, each `halo` rows. */
static tg_status
read_halos(const tg_ctx *ctx, reader *r, const part_message *m, int halo, double **above, double **below,
		   tg_error *err)
{
	const size_t n = (size_t) m->width * halo;

	*above = *below = NULL;
	if (m->index > 0 && (*above = tg_alloc(ctx, n * sizeof(double))) != NULL)
		get_values(r, *above, n);
	if (m->index + 1 < m->count && (*below = tg_alloc(ctx, n * sizeof(double))) != NULL)
		get_values(r, *below, n);
	if ((m->index > 0 && !*above) || (m->index + 1 < m->count && !*below))
		return tg_error_set(err, TG_ENOMEM, "could not allocate a part message");
	return TG_OK;
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

/* The part's DEM with the rows of its neighbours around it (one each side where given). */
static tg_status
read_with_halos(const tg_ctx *ctx, const tg_job *job, tg_grid_band *g, const double *above,
				const double *below, double **z, tg_error *err)
{
	const tg_layout *l = job->layout;
	const size_t W = (size_t) l->width;
	tg_status	st = read_part(ctx, job, g, 0, l->height, above ? 1 : 0, below ? 1 : 0, z, err);

	if (st == TG_OK && above)
		memcpy(*z, above, W * sizeof(double));
	if (st == TG_OK && below)
		memcpy(*z + W * ((above ? 1 : 0) + l->height), below, W * sizeof(double));
	return st;
}

static tg_status
part_edges(const tg_ctx *ctx, const tg_op *op, const tg_job *job, tg_grid_band *g, tg_part_bytes *reply,
		   tg_error *err)
{
	const tg_layout *l = job->layout;
	const int	halo = dem_halo(op->kind);
	writer		w = {.ctx = ctx};
	double	   *first = NULL,
			   *last = NULL;
	tg_status	st = TG_OK;

	if (l->height < min_rows(op->kind))
		return tg_error_set(err, TG_EDATA, "%s has %d rows, fewer than the %d a part needs", l->name, l->height,
							min_rows(op->kind));
	st = read_part(ctx, job, g, 0, halo, 0, 0, &first, err);
	if (st == TG_OK)
		st = read_part(ctx, job, g, l->height - halo, halo, 0, 0, &last, err);
	if (st == TG_OK)
	{
		put_header(&w, TG_PART_EDGES | REPLY, op->kind);
		put_i32(&w, l->width);
		put_i32(&w, l->height);
		put(&w, &l->geo, sizeof l->geo);
		put_u8(&w, op_fills(op));
		put_u8(&w, multiple_flow(op));
		put_values(&w, first, (size_t) l->width * halo);
		put_values(&w, last, (size_t) l->width * halo);
		st = writer_done(&w, reply, err);
	}
	tg_free(ctx, first);
	tg_free(ctx, last);
	return st;
}

static tg_status
part_scan(const tg_ctx *ctx, const tg_op *op, const tg_job *job, reader *r, const part_message *m,
		  tg_grid_band *g, tg_part_bytes *reply, tg_error *err)
{
	const tg_layout *l = job->layout;
	const size_t W = (size_t) l->width;
	writer		w = {.ctx = ctx};
	tg_fill_part p;
	double	   *above,
			   *below,
			   *z = NULL;
	tg_status	st = read_halos(ctx, r, m, 1, &above, &below, err);

	memset(&p, 0, sizeof p);
	if (st == TG_OK)
		st = reader_done(r, "a scan message", err);
	if (st == TG_OK)
		st = read_with_halos(ctx, job, g, above, below, &z, err);
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
	tg_fill_part_free(ctx, &p);
	tg_free(ctx, z);
	tg_free(ctx, above);
	tg_free(ctx, below);
	return st;
}

/*
 * The part's DEM, filled where op fills (the fill's halos and levels read
 * from r), into *out (H * W, NaN = nodata).
 */
static tg_status
part_surface_of(const tg_ctx *ctx, const tg_op *op, const tg_job *job, reader *r, const part_message *m,
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
		st = read_halos(ctx, r, m, 1, &above, &below, err);
		levels = tg_alloc(ctx, sizeof(double) * (1 + 2 * W));
		if (st == TG_OK && levels == NULL)
			st = tg_error_set(err, TG_ENOMEM, "could not allocate the fill's levels");
		if (st == TG_OK)
			get_values(r, levels, 1 + 2 * W);
	}
	if (st == TG_OK)
		st = read_with_halos(ctx, job, g, above, below, &z, err);
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
static tg_status
part_surface(const tg_ctx *ctx, const tg_op *op, const tg_job *job, tg_part *part, reader *r,
			 const part_message *m, tg_grid_band *g, tg_error *err)
{
	const tg_layout *l = job->layout;
	const size_t W = (size_t) l->width,
				n = W * l->height;
	writer		w = {.ctx = ctx};
	part_state *s;
	double	   *surface;
	tg_status	st = part_surface_of(ctx, op, job, r, m, g, &surface, err);

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

/* The routing surface's rows a part routes: its own with those of its neighbours around them. */
static void
routed_rows(const part_state *s, int *first, int *count)
{
	*first = s->index > 0 ? 0 : 2;
	*count = s->H + (s->index > 0 ? 2 : 0) + (s->index + 1 < s->count ? 2 : 0);
}

typedef struct crossing_keep
{
	const tg_part *part;
	part_state *s;
	size_t		own0;			/* index in the routed rows of the first own cell */
} crossing_keep;

static tg_status
keep_crossing(void *arg, size_t i, uint8_t seed, int64_t flat, tg_error *err)
{
	crossing_keep *k = arg;
	part_state *s = k->s;

	if (s->nflat == s->flat_cap)
	{
		size_t		cap = s->flat_cap ? 2 * s->flat_cap : 4096;
		uint32_t   *cell = keep_alloc(k->part, cap * sizeof(uint32_t));
		uint8_t    *seeds = keep_alloc(k->part, cap);
		int32_t    *comp = keep_alloc(k->part, cap * sizeof(int32_t));

		if (cell == NULL || seeds == NULL || comp == NULL)
		{
			void	   *got[] = {cell, seeds, comp};

			for (int g = 0; g < 3; g++)
				if (got[g])
					k->part->keep.free(got[g], k->part->keep.arg);
			return tg_error_set(err, TG_ENOMEM, "could not keep %zu cells of flats across parts", cap);
		}
		if (s->nflat)
		{
			memcpy(cell, s->cell, s->nflat * sizeof(uint32_t));
			memcpy(seeds, s->seed, s->nflat);
			memcpy(comp, s->comp, s->nflat * sizeof(int32_t));
			k->part->keep.free(s->cell, k->part->keep.arg);
			k->part->keep.free(s->seed, k->part->keep.arg);
			k->part->keep.free(s->comp, k->part->keep.arg);
		}
		s->cell = cell;
		s->seed = seeds;
		s->comp = comp;
		s->flat_cap = cap;
	}
	s->cell[s->nflat] = (uint32_t) (i - k->own0);
	s->seed[s->nflat] = seed;
	s->comp[s->nflat++] = (int32_t) flat;
	s->ncomp = (size_t) flat + 1 > s->ncomp ? (size_t) flat + 1 : s->ncomp;
	return TG_OK;
}

/* Each flat's label from its own cells: 1 + the grid cell number of its first (cells are in raster order). */
static tg_status
flats_least(tg_part *part, tg_error *err)
{
	part_state *s = part->state;

	s->comp_least = keep_alloc(part, s->ncomp * sizeof(int64_t));
	s->least = keep_alloc(part, s->ncomp * sizeof(int64_t));
	if (s->comp_least == NULL || s->least == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not keep a part's %zu flats", s->ncomp);
	for (size_t f = 0; f < s->ncomp; f++)
		s->comp_least[f] = 0;
	for (size_t c = 0; c < s->nflat; c++)
		if (s->comp_least[s->comp[c]] == 0)
			s->comp_least[s->comp[c]] = 1 + (int64_t) (s->row0 + s->cell[c] / s->W) * s->W + s->cell[c] % s->W;
	return TG_OK;
}

/* Round 0 of the flats: the neighbours' rows around the surface, the crossing flats' cells. */
static tg_status
flats_begin(const tg_ctx *ctx, tg_part *part, reader *r, tg_error *err)
{
	part_state *s = part->state;
	const size_t W = (size_t) s->W,
				n = W * s->H;
	int			first,
				count;
	crossing_keep k = {part, s, 0};
	tg_status	st;

	if (s->index > 0)
		get_values(r, s->z, 2 * W);
	if (s->index + 1 < s->count)
		get_values(r, s->z + 2 * W + n, 2 * W);
	routed_rows(s, &first, &count);
	k.own0 = (size_t) (2 - first) * W;
	st = tg_crossing_flats(ctx, s->z + (size_t) first * W, s->W, count, 2 - first, s->H, keep_crossing, &k, err);
	if (st != TG_OK)
		return st;
	s->at = keep_alloc(part, n * sizeof(int32_t));
	s->flat_id = keep_alloc(part, n * sizeof(int32_t));
	for (int p = 0; p < 2; p++)
	{
		s->dist[p] = keep_alloc(part, n * sizeof(int32_t));
		s->dist_queued[p] = keep_alloc(part, n);
	}
	s->mask = keep_alloc(part, s->nflat * sizeof(int32_t));
	s->nb_towards = keep_alloc(part, 2 * W * sizeof(int32_t));
	s->nb_away = keep_alloc(part, 2 * W * sizeof(int32_t));
	s->nb_label = keep_alloc(part, 2 * W * sizeof(int64_t));
	s->nb_mask = keep_alloc(part, 2 * W * sizeof(int32_t));
	s->sent = keep_alloc(part, 32 * W);
	s->edge = keep_alloc(part, s->nflat * sizeof(uint32_t));
	if (!s->at || !s->flat_id || !s->dist[0] || !s->dist[1] || !s->dist_queued[0] || !s->dist_queued[1] ||
		!s->mask || !s->nb_towards || !s->nb_away || !s->nb_label || !s->nb_mask || !s->sent || !s->edge)
		return tg_error_set(err, TG_ENOMEM, "could not keep the flats of a part of %zu cells", n);
	tg_parallel_memset(ctx, s->at, 0xff, n * sizeof(int32_t));
	for (size_t j = 0; j < s->nflat; j++)
		if (s->cell[j] < W || s->cell[j] >= n - W)
			s->edge[s->nedge++] = (uint32_t) j;
	memset(s->nb_towards, 0, 2 * W * sizeof(int32_t));
	memset(s->nb_away, 0, 2 * W * sizeof(int32_t));
	memset(s->nb_label, 0, 2 * W * sizeof(int64_t));
	memset(s->sent, 0, 32 * W);
	for (size_t j = 0; j < s->nflat; j++)
		s->at[s->cell[j]] = (int32_t) j;
	st = flats_least(part, err);
	if (st != TG_OK)
		return st;
	/* the distances start at the seeds; the box the steps scan */
	tg_parallel_memset(ctx, s->flat_id, 0xff, n * sizeof(int32_t));
	tg_parallel_memset(ctx, s->dist_queued[0], 0, n);
	tg_parallel_memset(ctx, s->dist_queued[1], 0, n);
	s->fx0 = s->W;
	s->fx1 = -1;
	s->fy0 = s->nflat ? (int) (s->cell[0] / W) : 0;
	s->fy1 = s->nflat ? (int) (s->cell[s->nflat - 1] / W) : -1;
	for (size_t c = 0; c < s->nflat; c++)
	{
		const uint32_t i = s->cell[c];
		const int	x = (int) (i % W);

		s->flat_id[i] = s->comp[c];
		s->dist[0][i] = s->seed[c] & TG_SEED_DRAINS ? 1 : TG_FLAT_FAR;
		s->dist[1][i] = s->seed[c] & TG_SEED_HIGHER ? 1 : TG_FLAT_FAR;
		s->fx0 = x < s->fx0 ? x : s->fx0;
		s->fx1 = x > s->fx1 ? x : s->fx1;
	}
	return TG_OK;
}

/* The distances' grids, once the masks are known. */
static void
forget_flat_steps(const tg_part *part)
{
	part_state *s = part->state;
	void	  **bufs[] = {(void **) &s->flat_id, (void **) &s->dist[0], (void **) &s->dist[1],
		(void **) &s->dist_queued[0], (void **) &s->dist_queued[1]};

	for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
		if (*bufs[i])
		{
			part->keep.free(*bufs[i], part->keep.arg);
			*bufs[i] = NULL;
		}
}

/* Own crossing cell c's distance p (0: towards the drains, 1: away from higher ground); 0: none reaches it. */
static inline int32_t
flat_dist(const part_state *s, int p, size_t c)
{
	const int32_t d = s->dist[p][s->cell[c]];

	return d == TG_FLAT_FAR ? 0 : d;
}

/*
 * Crossing-flat neighbour j of own cell c (index in cell[]) at offset k, or
 * -1; *nb: the neighbour lies in the row above (0) or below (1) at column
 * *col instead, where its values are the neighbours'.
 */
static int64_t
flat_neighbour(const part_state *s, size_t c, int k, int *nb, int *col)
{
	const int	x = (int) (s->cell[c] % s->W) + tg_nbr_dx(k),
				y = (int) (s->cell[c] / s->W) + tg_nbr_dy(k);
	const double zc = s->z[2 * (size_t) s->W + s->cell[c]];

	*nb = -1;
	if (x < 0 || x >= s->W || s->z[(size_t) (y + 2) * s->W + x] != zc)
		return -1;
	if (y < 0 || y >= s->H)
	{
		*nb = y < 0 ? 0 : 1;
		*col = x;
		return -1;
	}
	return s->at[(size_t) y * s->W + x];
}

/*
 * The edge cells' distances lowered by what the neighbours hold across the
 * boundary (their value + 1), those lowered listed in raster order (room for
 * nedge each); the steps carry it on over the flats.
 */
static void
flats_lower_edges(const part_state *s, uint32_t *lowered[2], size_t n[2])
{
	n[0] = n[1] = 0;
	for (size_t e = 0; e < s->nedge; e++)
	{
		const uint32_t c = s->edge[e];
		bool		fell[2] = {false, false};

		for (int k = 0; k < 8; k++)
		{
			int			side,
						col;

			(void) flat_neighbour(s, c, k, &side, &col);
			for (int p = 0; side >= 0 && p < 2; p++)
			{
				const int32_t v = (p == 0 ? s->nb_towards : s->nb_away)[(size_t) side * s->W + col];
				int32_t    *d = &s->dist[p][s->cell[c]];

				if (v > 0 && v + 1 < *d)
				{
					*d = v + 1;
					fell[p] = true;
				}
			}
		}
		for (int p = 0; p < 2; p++)
			if (fell[p])
				lowered[p][n[p]++] = s->cell[c];
	}
}

/*
 * Each flat's label: 1 + the smallest grid cell number among its cells,
 * here and, through the boundary, beyond (least[]).
 */
static void
flats_label(const part_state *s)
{
	memcpy(s->least, s->comp_least, s->ncomp * sizeof(int64_t));
	for (size_t e = 0; e < s->nedge; e++)
	{
		const uint32_t c = s->edge[e];

		for (int k = 0; k < 8; k++)
		{
			int			side,
						col;
			int64_t		v;

			(void) flat_neighbour(s, c, k, &side, &col);
			v = side >= 0 ? s->nb_label[(size_t) side * s->W + col] : 0;
			if (v > 0 && v < s->least[s->comp[c]])
				s->least[s->comp[c]] = v;
		}
	}
}

/*
 * The values of own row y's crossing cells (towards, away, label; 0
 * elsewhere) into out (16 * W bytes): W int32, W int32, W int64.
 */
static void
row_values(const part_state *s, int y, uint8_t *out)
{
	const int32_t *at = s->at + (size_t) y * s->W;
	const size_t W = (size_t) s->W;

	for (size_t x = 0; x < W; x++)
	{
		const int32_t t = at[x] < 0 ? 0 : flat_dist(s, 0, (size_t) at[x]),
					a = at[x] < 0 ? 0 : flat_dist(s, 1, (size_t) at[x]);
		const int64_t l = at[x] < 0 ? 0 : s->least[s->comp[at[x]]];

		memcpy(out + 4 * x, &t, 4);
		memcpy(out + 4 * (W + x), &a, 4);
		memcpy(out + 8 * (W + x), &l, 8);
	}
}

/*
 * A row block's change since it was last sent (row_values' layout: W
 * uint32, W uint32, W uint64), written over `now` as the difference of each
 * cell's change from its left neighbour's (mod 2^32, 2^64): distances and
 * labels along a boundary run smoothly, so that mostly small numbers and
 * zeros travel; `sent` becomes now.
 */
static void
encode_change(uint8_t *now, uint8_t *sent, size_t W)
{
	for (int which = 0; which < 3; which++)
	{
		const size_t size = which < 2 ? 4 : 8,
					base = which < 2 ? which * 4 * W : 8 * W;
		uint64_t	before = 0;

		for (size_t x = 0; x < W; x++)
		{
			uint64_t	v = 0,
						old = 0,
						change,
						out;

			memcpy(&v, now + base + size * x, size);
			memcpy(&old, sent + base + size * x, size);
			memcpy(sent + base + size * x, &v, size);
			change = v - old;
			out = change - before;
			before = change;
			memcpy(now + base + size * x, &out, size);
		}
	}
}

/* Apply a neighbour row block's change (encode_change) to what the part holds of it. */
static void
apply_row_change(const uint8_t *change, size_t W, int32_t *towards, int32_t *away, int64_t *label)
{
	uint32_t	ct = 0,
				ca = 0;
	uint64_t	cl = 0;

	for (size_t x = 0; x < W; x++)
	{
		uint32_t	t,
					a;
		uint64_t	l;

		memcpy(&t, change + 4 * x, 4);
		memcpy(&a, change + 4 * (W + x), 4);
		memcpy(&l, change + 8 * (W + x), 8);
		ct += t;
		ca += a;
		cl += l;
		towards[x] = (int32_t) ((uint32_t) towards[x] + ct);
		away[x] = (int32_t) ((uint32_t) away[x] + ca);
		label[x] = (int64_t) ((uint64_t) label[x] + cl);
	}
}

/*
 * A row block's change (encode_change) as a section: its 3 W numbers as
 * zigzagged varints, nothing where every one is zero.
 */
static void
put_change_block(writer *w, const uint8_t *change, size_t W)
{
	const size_t at = begin_section(w);
	bool		any = false;

	for (size_t b = 0; b < 16 * W && !any; b++)
		any = change[b] != 0;
	for (size_t x = 0; any && x < 2 * W; x++)
	{
		uint32_t	v;

		memcpy(&v, change + 4 * x, 4);
		put_varint(w, zigzag((int32_t) v));
	}
	for (size_t x = 0; any && x < W; x++)
	{
		uint64_t	v;

		memcpy(&v, change + 8 * (W + x), 8);
		put_varint(w, zigzag((int64_t) v));
	}
	end_section(w, at);
}

/* A put_change_block into change (16 W bytes, encode_change's layout). */
static void
get_change_block(reader *r, uint8_t *change, size_t W)
{
	reader		sec = get_section(r);

	memset(change, 0, 16 * W);
	for (size_t x = 0; sec.left > 0 && x < 2 * W; x++)
	{
		const uint32_t v = (uint32_t) unzigzag(get_varint(&sec));

		memcpy(change + 4 * x, &v, 4);
	}
	for (size_t x = 0; sec.left > 0 && x < W; x++)
	{
		const uint64_t v = (uint64_t) unzigzag(get_varint(&sec));

		memcpy(change + 8 * (W + x), &v, 8);
	}
	if (sec.bad || sec.left != 0)
		r->bad = true;
}

/* A round of the flats: the neighbours' boundary values in, ours out. */
static tg_status
part_flats(const tg_ctx *ctx, const tg_op *op, tg_part *part, reader *r, tg_error *err)
{
	part_state *s = part->state;
	const int	round = get_i32(r);
	writer		w = {.ctx = ctx};
	tg_status	st = TG_OK;

	if (s == NULL || (round > 0 && s->dist[0] == NULL))
		return tg_error_set(err, TG_EDATA, "a flats message reached a part that kept no flats");
	if (round == 0)
		st = flats_begin(ctx, part, r, err);
	if (st != TG_OK)
		return st;
	/* the neighbours' rows: each round their change since the last (encode_change) */
	for (int side = 0; side < 2; side++)
	{
		uint8_t    *change = tg_alloc(ctx, 16 * (size_t) s->W);

		if (change == NULL)
			return tg_error_set(err, TG_ENOMEM, "could not allocate a part's flat values");
		get_change_block(r, change, (size_t) s->W);
		if (!r->bad)
			apply_row_change(change, s->W, s->nb_towards + (size_t) side * s->W, s->nb_away + (size_t) side * s->W,
							 s->nb_label + (size_t) side * s->W);
		tg_free(ctx, change);
	}
	st = reader_done(r, "a flats message", err);
	if (st == TG_OK)
	{
		const tg_flat_grid g = {s->W, s->H, s->flat_id, {s->dist[0], s->dist[1]},
			{s->dist_queued[0], s->dist_queued[1]}};
		uint32_t   *lowered[2] = {tg_alloc(ctx, (s->nedge ? s->nedge : 1) * sizeof(uint32_t)),
			tg_alloc(ctx, (s->nedge ? s->nedge : 1) * sizeof(uint32_t))};
		tg_flat_lowered low = {{lowered[0], lowered[1]}, {0, 0}};

		if (lowered[0] == NULL || lowered[1] == NULL)
			st = tg_error_set(err, TG_ENOMEM, "could not allocate a part's %zu edge cells of flats", s->nedge);
		if (st == TG_OK)
		{
			/* the first round from the seeds over every cell; later ones from what the boundary lowered */
			flats_lower_edges(s, lowered, low.n);
			st = tg_flat_steps(ctx, &g, -1, s->fx0, s->fx1, s->fy0, s->fy1, round == 0 ? NULL : &low, err);
		}
		tg_free(ctx, lowered[0]);
		tg_free(ctx, lowered[1]);
	}
	if (st == TG_OK)
		flats_label(s);
	if (st == TG_OK)
	{
		/* our first and last rows' change since the last round */
		const size_t bytes = 32 * (size_t) s->W;
		uint8_t    *now = tg_alloc(ctx, bytes);

		if (now == NULL)
			return tg_error_set(err, TG_ENOMEM, "could not allocate a part's flat values");
		row_values(s, 0, now);
		row_values(s, s->H - 1, now + bytes / 2);
		encode_change(now, s->sent, s->W);
		encode_change(now + bytes / 2, s->sent + bytes / 2, s->W);
		put_header(&w, TG_PART_FLATS | REPLY, op->kind);
		put_change_block(&w, now, (size_t) s->W);
		put_change_block(&w, now + bytes / 2, (size_t) s->W);
		tg_free(ctx, now);
		st = writer_done(&w, &part->reply, err);
	}
	return st;
}

/* Each crossing flat's greatest distance from higher ground, over the part's cells. */
static int
cmp_label_height(const void *a, const void *b)
{
	int64_t		x,
				y;

	memcpy(&x, a, sizeof x);
	memcpy(&y, b, sizeof y);
	return (x > y) - (x < y);
}

typedef struct label_height
{
	int64_t		label;
	int32_t		height;
} label_height;

static tg_status
part_heights(const tg_ctx *ctx, const tg_op *op, tg_part *part, tg_error *err)
{
	const part_state *s = part->state;
	label_height *lh = tg_alloc(ctx, (s->ncomp ? s->ncomp : 1) * sizeof(label_height));
	size_t		m = 0;
	writer		w = {.ctx = ctx};
	tg_status	st;

	if (lh == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate a part's flat heights");
	for (size_t f = 0; f < s->ncomp; f++)
		lh[f] = (label_height) {s->least[f], 0};
	for (size_t c = 0; c < s->nflat; c++)
	{
		const int32_t a = flat_dist(s, 1, c);
		label_height *h = &lh[s->comp[c]];

		h->height = a > h->height ? a : h->height;
	}
	/* the part's flats of one label (joined beyond the part) as one */
	qsort(lh, s->ncomp, sizeof *lh, cmp_label_height);
	for (size_t f = 0; f < s->ncomp; f++)
		if (m > 0 && lh[m - 1].label == lh[f].label)
			lh[m - 1].height = lh[f].height > lh[m - 1].height ? lh[f].height : lh[m - 1].height;
		else
			lh[m++] = lh[f];
	put_header(&w, TG_PART_HEIGHTS | REPLY, op->kind);
	put(&w, &m, sizeof m);
	for (size_t i = 0; i < m; i++)
	{
		put(&w, &lh[i].label, sizeof lh[i].label);
		put(&w, &lh[i].height, sizeof lh[i].height);
	}
	st = writer_done(&w, &part->reply, err);
	tg_free(ctx, lh);
	return st;
}

static int32_t
height_of(const label_height *lh, size_t m, int64_t label)
{
	size_t		lo = 0,
				hi = m;

	while (lo < hi)
	{
		size_t		mid = lo + (hi - lo) / 2;

		if (lh[mid].label < label)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < m && lh[lo].label == label ? lh[lo].height : 0;
}

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
static tg_status
route_part(const tg_ctx *ctx, const tg_op *op, const part_state *s, tg_route *sub, size_t *own, tg_error *err)
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

/* A D8 routing's own rows (route_part) as a routing of their own, pointing into it. */
static tg_route
own_rows_d8(const part_state *s, const tg_route *sub, size_t own)
{
	return (tg_route) {s->W, s->H, sub->routing, sub->z + own, sub->d8 + own, NULL};
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
	const double *weight;		/* of the own rows */
} link_step;

static tg_status
link_cpu(const tg_ctx *ctx, const void *arg, tg_error *err)
{
	const link_step *l = arg;
	tg_route	sub,
				strip;
	size_t		own;
	tg_status	st = route_part(ctx, l->op, l->s, &sub, &own, err);

	if (st != TG_OK)
		return st;
	strip = own_rows_d8(l->s, &sub, own);
	tg_parallel_memcpy(ctx, l->s->d8, strip.d8, (size_t) l->s->W * l->s->H);
	st = tg_cpu_accumulate(ctx, &strip, &l->op->flow, l->weight, TG_ACC_INDEGREE, l->s->acc, err);
	tg_route_free(ctx, &sub);
	return st;
}

static tg_status
link_gpu(const tg_ctx *ctx, const void *arg, tg_error *err)
{
	const link_step *l = arg;
	const part_state *s = l->s;
	int			first,
				count;
	tg_flow_params p;
	tg_flat_masks given;
	tg_status	st;

	routed_rows(s, &first, &count);
	st = crossing_masks(ctx, l->op, s, first, count, &given, &p, err);
	if (st != TG_OK)
		return st;
	p.fill = false;				/* the part's surface is filled already, where asked */
	st = tg_cuda_part_d8(ctx, s->z + (size_t) first * s->W, s->W, count, 2 - first, s->H, &p, &given, l->weight,
						 s->d8, s->acc, err);
	free_masks(ctx, &given);
	return st;
}

/* Every crossing flat's height (from the coordinator), and from them the masks of the part's crossing cells and its neighbours'. */
static tg_status
read_heights(const tg_ctx *ctx, tg_part *part, reader *r, tg_error *err)
{
	part_state *s = part->state;
	const size_t W = (size_t) s->W;
	size_t		m = 0;
	label_height *lh;
	int32_t    *height;			/* of each of the part's flats */

	get(r, &m, sizeof m);
	if (r->bad || m > r->left / (sizeof(int64_t) + sizeof(int32_t)))
		return tg_error_set(err, TG_EDATA, "a part message's flat heights are truncated");
	if ((lh = tg_alloc(ctx, (m ? m : 1) * sizeof(label_height))) == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate %zu flat heights", m);
	for (size_t i = 0; i < m; i++)
	{
		get(r, &lh[i].label, sizeof lh[i].label);
		get(r, &lh[i].height, sizeof lh[i].height);
	}
	/* the own masks once (the distances are then let go) */
	if (s->dist[0] != NULL)
	{
		if ((height = tg_alloc(ctx, (s->ncomp ? s->ncomp : 1) * sizeof(int32_t))) == NULL)
		{
			tg_free(ctx, lh);
			return tg_error_set(err, TG_ENOMEM, "could not allocate %zu flat heights", s->ncomp);
		}
		for (size_t f = 0; f < s->ncomp; f++)
			height[f] = height_of(lh, m, s->least[f]);
		for (size_t c = 0; c < s->nflat; c++)
			s->mask[c] = tg_flat_mask_value(flat_dist(s, 0, c), flat_dist(s, 1, c), height[s->comp[c]]);
		tg_free(ctx, height);
	}
	for (size_t i = 0; i < 2 * W; i++)
		s->nb_mask[i] = s->nb_label[i] > 0 ?
			tg_flat_mask_value(s->nb_towards[i], s->nb_away[i], height_of(lh, m, s->nb_label[i])) : 0;
	tg_free(ctx, lh);
	forget_flat_steps(part);
	return TG_OK;
}

/* The masks of the crossing flats from every flat's height; then the part linked. */
static tg_status
part_link(const tg_ctx *ctx, const tg_op *op, tg_part *part, reader *r, tg_error *err)
{
	part_state *s = part->state;
	const size_t W = (size_t) s->W;
	size_t		nexits = 0,
				cap = 0;
	tg_strip_exit *exits = NULL;
	int64_t    *dest = tg_alloc(ctx, 2 * W * sizeof(int64_t));
	writer		w = {.ctx = ctx};
	double	   *weight = NULL;
	tg_route	strip;
	tg_status	st = TG_OK;

	if (s == NULL || s->mask == NULL)
		return tg_error_set(err, TG_EDATA, "a link message reached a part that kept no flats");
	st = dest ? read_heights(ctx, part, r, err) : tg_error_set(err, TG_ENOMEM, "could not allocate a part's ends");
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
		st = tg_cell_weights(ctx, NULL, &op->flow.geom, op->units, &weight, err);
	if (st == TG_OK)
	{
		link_step	l = {op, s, weight};

		tg_phase(ctx, "link: routing and accumulation of the part");
		st = tg_run_step(ctx, (int64_t) W * s->H, link_cpu, link_gpu, &l, err);
	}
	tg_free(ctx, weight);
	strip = (tg_route) {s->W, s->H, TG_ROUTE_D8, s->z + 2 * W, s->d8, NULL};
	if (st == TG_OK)
		st = tg_strip_link(ctx, &strip, s->acc, s->row0, &exits, &nexits, &cap, dest, err);
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

/* ------------------------------------------------------------------------
 * Multiple-flow accumulation: the flow between parts in rounds
 * ------------------------------------------------------------------------ */

/*
 * A flow reply holds four sections (begin_section), empty where there is
 * nothing to say: the routing of the part's rows that the neighbour above
 * and the one below compute too (round 0), then the values of the row each
 * takes in that became final since last handed over.  A flow message
 * holds, after its round, the sections of the neighbour above (its last
 * rows') and then below (its first rows'): routing, values.
 */
enum
{
	ROUTING_FIRST, ROUTING_LAST, VALUES_FIRST, VALUES_LAST
};

/* The computed rows' first (the part's own first row) and their count (rows around included). */
static inline size_t
flow_own0(const part_state *s)
{
	return (size_t) s->flow_halo + 1;
}

static inline size_t
flow_rows(const part_state *s)
{
	return (size_t) s->H + 2 * flow_own0(s);
}

/*
 * The nonzero shares of a row (8 planes n apart, W cells) in raster order,
 * byte plane by byte plane from the most significant: shares lie in (0, 1],
 * so their sign and exponent bytes compress to runs.
 */
static void
put_share_planes(writer *w, const float *row, size_t n, size_t W)
{
	uint32_t   *bits = w->failed ? NULL : tg_alloc(w->ctx, 8 * W * sizeof(uint32_t) + 1);
	size_t		m = 0;

	if (bits == NULL)
	{
		w->failed = true;
		return;
	}
	for (size_t x = 0; x < W; x++)
		for (int k = 0; k < 8; k++)
			if (row[(size_t) k * n + x] != 0)
				memcpy(&bits[m++], &row[(size_t) k * n + x], sizeof(uint32_t));
	for (int b = 3; b >= 0; b--)
		for (size_t j = 0; j < m; j++)
			put_u8(w, (uint8_t) (bits[j] >> (8 * b)));
	tg_free(w->ctx, bits);
}

/* m shares of put_share_planes into out. */
static void
get_share_planes(reader *r, uint32_t *out, size_t m)
{
	if (r->bad || m > r->left / 4)
	{
		r->bad = true;
		return;
	}
	for (size_t j = 0; j < m; j++)
		out[j] = 0;
	for (int b = 3; b >= 0; b--)
		for (size_t j = 0; j < m; j++)
			out[j] |= (uint32_t) r->p[(size_t) (3 - b) * m + j] << (8 * b);
	r->p += 4 * m;
	r->left -= 4 * m;
}

/* Has the part a neighbour on `side` (0: above, 1: below)? */
static inline bool
has_neighbour(const part_state *s, int side)
{
	return side == 0 ? s->index > 0 : s->index + 1 < s->count;
}

/* The flow's rows as a routing (its z tells cells from nodata). */
static tg_route
flow_route(const tg_op *op, const part_state *s)
{
	return (tg_route) {s->W, (int) flow_rows(s), op->flow.routing, s->flow_z, s->flow_d8, s->flow_frac};
}

/*
 * Row j of the part's own rows that the neighbour on `side` (0: above, 1:
 * below) computes too, nearest the boundary first; row flow_halo is the one
 * it takes in.
 */
static inline size_t
halo_row(const part_state *s, int side, int j)
{
	return side == 0 ? flow_own0(s) + j : flow_own0(s) + s->H - 1 - j;
}

/* Row j of the rows around the part on `side` that are the neighbour's, nearest the boundary first. */
static inline size_t
around_row(const part_state *s, int side, int j)
{
	return side == 0 ? flow_own0(s) - 1 - j : flow_own0(s) + s->H + j;
}

/*
 * Of the part's rows that the neighbour on `side` computes too (rows j = 0
 * .. flow_halo, halo_row), mark in reach the cells whose water reaches the
 * neighbour's rows without leaving them: the halo's, and of the row the
 * neighbour takes in those that drain into such cells.  The routing of the
 * others changes nothing of the neighbour's own values.
 */
static bool
halo_reach(const tg_ctx *ctx, const tg_op *op, const part_state *s, int side, uint8_t *reach)
{
	const size_t W = (size_t) s->W,
				cells = W * (s->flow_halo + 1);
	const int	toward = side == 0 ? -1 : 1;
	const tg_route route = flow_route(op, s);
	const tg_route_view v = tg_cpu_route_view(&route, op->flow.threshold);
	uint32_t   *queue = tg_alloc(ctx, cells * sizeof(uint32_t));
	size_t		head = 0,
				tail = 0;

	if (queue == NULL)
		return false;
	memset(reach, 0, cells);
	for (size_t x = 0; x < W; x++)
		for (int k = 0; k < 8; k++)
		{
			const long	nx = (long) x + tg_nbr_dx(k);

			if (tg_nbr_dy(k) == toward && nx >= 0 && nx < (long) W &&
				tg_route_drains_to(&v, halo_row(s, side, 0) * W + x, k) && !reach[x])
			{
				reach[x] = 1;
				queue[tail++] = (uint32_t) x;
			}
		}
	while (head < tail)
	{
		const uint32_t q = queue[head++];
		const int	j = (int) (q / W);
		const size_t x = q % W,
					i = halo_row(s, side, j) * W + x;
		const unsigned donors = j < s->flow_halo ? tg_route_donors(&v, i) : 0;

		for (int k = 0; k < 8; k++)
			if ((donors >> k) & 1u)
			{
				const int	dj = j - toward * tg_nbr_dy(k);
				const size_t at = (size_t) dj * W + x + tg_nbr_dx(k);

				if (dj >= 0 && dj <= s->flow_halo && !reach[at])
				{
					reach[at] = 1;
					queue[tail++] = (uint32_t) at;
				}
			}
	}
	tg_free(ctx, queue);
	return true;
}

/*
 * The mask of the cell of the part's row y (-1 and H: the neighbours' rows
 * next to it), column x, where it is a cell of a flat that crosses a part
 * boundary: false where it is not.
 */
static bool
crossing_mask(const part_state *s, int y, size_t x, int32_t *m)
{
	const size_t W = (size_t) s->W;

	if (y >= 0 && y < s->H)
	{
		const int32_t at = s->at[(size_t) y * W + x];

		if (at >= 0)
			*m = s->mask[at];
		return at >= 0;
	}
	if ((y == -1 || y == s->H) && has_neighbour(s, y == -1 ? 0 : 1))
	{
		const size_t o = (y == -1 ? 0 : W) + x;

		if (s->nb_label[o] > 0)
			*m = s->nb_mask[o];
		return s->nb_label[o] > 0;
	}
	return false;
}

/* The neighbour distances of grid row `row` (the op's geometry is the part's). */
static void
row_distances(const tg_op *op, int row, double dist[8])
{
	double		dx,
				dy;

	tg_row_spacing(&op->flow.geom, row - op->flow.geom.row0, &dx, &dy);
	tg_nbr_distances(dx, dy, dist);
}

/*
 * Of depths 0 .. h + 1 from the boundary (rows of W), the cells a reached
 * cell (reach: depths 0 .. h) reads to be routed: itself and its
 * neighbours.
 */
static void
halo_need(const uint8_t *reach, size_t W, size_t h, uint8_t *need)
{
	memset(need, 0, (h + 2) * W);
	for (size_t j = 0; j <= h; j++)
		for (size_t x = 0; x < W; x++)
			if (reach[j * W + x])
				for (size_t d = j > 0 ? j - 1 : 0; d <= j + 1; d++)
					for (size_t c = x > 0 ? x - 1 : 0; c <= x + 1 && c < W; c++)
						need[d * W + c] = 1;
}

/* n flags as a bitmap. */
static void
put_bits(writer *w, const uint8_t *flag, size_t n)
{
	for (size_t x = 0; x < n; x += 8)
	{
		uint8_t		b = 0;

		for (size_t e = 0; e < 8 && x + e < n; e++)
			b |= (uint8_t) ((flag[x + e] != 0) << e);
		put_u8(w, b);
	}
}

static void
get_bits(reader *r, uint8_t *flag, size_t n)
{
	for (size_t x = 0; x < n && !r->bad; x += 8)
	{
		const uint8_t b = get_u8(r);

		for (size_t e = 0; e < 8 && x + e < n; e++)
			flag[x + e] = (b >> e) & 1u;
	}
}

/*
 * The routing of the part's rows that the neighbour on `side` computes too
 * (halo_reach), as the neighbour can route them itself: per row j the
 * cells reached, as bitmaps; of the cells those read (halo_need), the
 * surface where the neighbour lacks it (depths 2 .. flow_halo + 1: it holds
 * the two rows next to it), then which are cells of flats that cross part
 * boundaries, as a bitmap, and their masks; then per row j the reached
 * cells on flats that do not cross: their count, codes, bytes of the
 * neighbours that get a share, and those shares (put_share_planes).  The
 * cells reached of the row it takes in into taken (W).
 */
static void
put_halo_routing(writer *w, const tg_op *op, const part_state *s, int side, uint8_t *taken)
{
	const size_t W = (size_t) s->W,
				n = W * flow_rows(s),
				h = (size_t) s->flow_halo;
	uint8_t    *reach = w->failed ? NULL : tg_alloc(w->ctx, W * (h + 1));
	uint8_t    *need = w->failed ? NULL : tg_alloc(w->ctx, W * (h + 2));
	uint8_t    *crossing = w->failed ? NULL : tg_alloc(w->ctx, W * (h + 2));
	int32_t    *masks = w->failed ? NULL : tg_alloc(w->ctx, W * (h + 2) * sizeof(int32_t));
	float	   *row = w->failed ? NULL : tg_alloc(w->ctx, 8 * W * sizeof(float));
	double	   *beyond = w->failed ? NULL : tg_alloc(w->ctx, h * W * sizeof(double) + 1);
	size_t		nz = 0,
				nc = 0,
				nm = 0;
	int64_t		prev = 0;

	if (reach == NULL || need == NULL || crossing == NULL || masks == NULL || row == NULL || beyond == NULL ||
		!halo_reach(w->ctx, op, s, side, reach))
	{
		tg_free(w->ctx, reach);
		tg_free(w->ctx, need);
		tg_free(w->ctx, crossing);
		tg_free(w->ctx, masks);
		tg_free(w->ctx, row);
		tg_free(w->ctx, beyond);
		w->failed = true;
		return;
	}
	memcpy(taken, reach + h * W, W);
	put_bits(w, reach, (h + 1) * W);
	halo_need(reach, W, h, need);
	/* depth d is own row d (side 0) or H - 1 - d (row 2 + that of s->z; -1 and H: the rows around) */
	for (size_t d = 0; d <= h + 1; d++)
	{
		const int	y = side == 0 ? (int) d : s->H - 1 - (int) d;

		for (size_t x = 0; x < W; x++)
		{
			if (!need[d * W + x])
				continue;
			if (d >= 2)
				beyond[nz++] = s->z[(size_t) (y + 2) * W + x];
			crossing[nc] = crossing_mask(s, y, x, &masks[nm]);
			nm += crossing[nc++];
		}
	}
	put_values(w, beyond, nz);
	put_bits(w, crossing, nc);
	for (size_t j = 0; j < nm; j++)
	{
		put_varint(w, zigzag(masks[j] - prev));
		prev = masks[j];
	}
	for (size_t j = 0; j <= h; j++)
	{
		const size_t y = halo_row(s, side, (int) j),
					zy = y + 2 - flow_own0(s);	/* its row in s->z */
		uint8_t    *in = reach + j * W;
		double		dist[8];
		size_t		m = 0,
					flat = 0;

		row_distances(op, s->row0 + (int) y - (int) flow_own0(s), dist);
		/* the reached cells on flats that do not cross (whose masks go with them), marked in `in` as 2 */
		for (size_t x = 0; x < W; x++)
		{
			uint8_t		d8;
			int32_t		mask;

			if (in[x] && !crossing_mask(s, (int) zy - 2, x, &mask) &&
				tg_cpu_route_cell(s->z, s->W, s->H + 4, (int) x, (int) zy, &op->flow, dist, &d8, NULL) ==
				TG_CELL_FLAT)
			{
				in[x] = 2;
				flat++;
			}
		}
		put_varint(w, flat);
		for (size_t x = 0; x < W; x++)
			if (in[x] == 2)
				put_u8(w, s->flow_d8[y * W + x]);
		for (size_t x = 0; x < W; x++)
			if (in[x] == 2)
			{
				uint8_t		bits = 0;

				for (int k = 0; k < 8; k++)
				{
					const float f = s->flow_frac[(size_t) k * n + y * W + x];

					row[(size_t) k * W + m] = f;
					bits |= (uint8_t) ((f != 0) << k);
				}
				m++;
				put_u8(w, bits);
			}
		put_share_planes(w, row, W, m);
	}
	tg_free(w->ctx, reach);
	tg_free(w->ctx, need);
	tg_free(w->ctx, crossing);
	tg_free(w->ctx, masks);
	tg_free(w->ctx, row);
	tg_free(w->ctx, beyond);
}

/*
 * A neighbour's routing (put_halo_routing) into the rows around the part on
 * `side`: each reached cell routed from the surface (the two rows the part
 * holds and the cells handed over) as the neighbour routes it: on a slope
 * by its gradient, on a flat that crosses part boundaries down that flat's
 * mask, on another flat as handed over; cells not reached route nothing.
 * (The row taken in is never pulled, only set: what its routing says
 * beyond the computed rows, or the halo's into it, changes nothing; nor
 * does a cell of nodata there, which sends and receives no water.)
 */
static tg_status
get_halo_routing(const tg_ctx *ctx, const tg_op *op, reader *sec, part_state *s, int side, tg_error *err)
{
	const size_t W = (size_t) s->W,
				H = (size_t) s->H,
				n = W * flow_rows(s),
				h = (size_t) s->flow_halo;
	uint8_t    *reach = tg_alloc(ctx, (h + 1) * W),
			   *need = tg_alloc(ctx, (h + 2) * W),
			   *crossing = tg_alloc(ctx, (h + 2) * W),
			   *flats = tg_alloc(ctx, (h + 3) * W);
	uint32_t   *shares = tg_alloc(ctx, 8 * W * sizeof(uint32_t));
	int32_t    *masks = tg_alloc(ctx, (h + 3) * W * sizeof(int32_t));
	double	   *z = tg_alloc(ctx, (h + 3) * W * sizeof(double)),
			   *beyond = tg_alloc(ctx, h * W * sizeof(double) + 1);
	const bool	oom = !reach || !need || !crossing || !flats || !shares || !masks || !z || !beyond;
	size_t		nz = 0,
				nc = 0,
				at = 0;
	int64_t		prev = 0;

	if (oom)
		sec->bad = true;
	else if (sec->left > 0)
	{
		/*
		 * The surface, flats and masks from the part's edge row to depth
		 * h + 1 of the neighbour's, in raster order: depth d at row
		 * h + 1 - d above the part's first row (side 0), at row d + 1 below
		 * its last (side 1).  Depths 0 and 1 are the rows around the part
		 * it holds; cells no reached cell reads stay 0.
		 */
		get_bits(sec, reach, (h + 1) * W);
		halo_need(reach, W, h, need);
		for (size_t i = 0; i < (h + 2) * W; i++)
		{
			nz += i >= 2 * W && need[i];
			nc += need[i];
		}
		get_values(sec, beyond, nz);
		get_bits(sec, crossing, nc);
		memset(z, 0, (h + 3) * W * sizeof(double));
		memset(flats, 0, (h + 3) * W);
		memset(masks, 0, (h + 3) * W * sizeof(int32_t));
		memcpy(z + (side == 0 ? h + 2 : 0) * W, s->z + (side == 0 ? 2 : H + 1) * W, W * sizeof(double));
		for (size_t x = 0; x < W; x++)
		{
			const size_t edge = (side == 0 ? h + 2 : 0) * W + x;

			flats[edge] = crossing_mask(s, side == 0 ? 0 : (int) H - 1, x, &masks[edge]);
		}
		for (size_t d = 0, c = 0, b = 0; d <= h + 1 && !sec->bad; d++)
		{
			const size_t row = (side == 0 ? h + 1 - d : d + 1) * W;

			if (d < 2)
				memcpy(z + row, s->z + (side == 0 ? 1 - d : H + 2 + d) * W, W * sizeof(double));
			for (size_t x = 0; x < W && !sec->bad; x++)
			{
				if (!need[d * W + x])
					continue;
				if (d >= 2)
					z[row + x] = beyond[b++];
				if (crossing[c++])
				{
					prev += unzigzag(get_varint(sec));
					if (prev < INT32_MIN || prev > INT32_MAX)
						sec->bad = true;
					flats[row + x] = 1;
					masks[row + x] = (int32_t) prev;
				}
			}
		}
	}
	for (size_t j = 0; j <= h && !sec->bad && sec->left > 0; j++)
	{
		const size_t y = around_row(s, side, (int) j),
					zy = side == 0 ? h + 1 - j : j + 1;
		const uint64_t flat = get_varint(sec);
		size_t		m = 0;
		const uint8_t *codes,
				   *bits;
		double		dist[8];

		row_distances(op, s->row0 + (int) y - (int) flow_own0(s), dist);
		if (sec->bad || flat > W || 2 * flat > sec->left)
		{
			sec->bad = true;
			break;
		}
		codes = sec->p;
		bits = sec->p + flat;
		sec->p += 2 * flat;
		sec->left -= 2 * flat;
		for (size_t c = 0; c < flat; c++)
			m += (size_t) __builtin_popcount(bits[c]);
		get_share_planes(sec, shares, m);
		m = 0;
		at = 0;
		for (size_t x = 0; x < W && !sec->bad; x++)
		{
			uint8_t		d = TG_NO_DIRECTION;
			float		share[8] = {0, 0, 0, 0, 0, 0, 0, 0};
			const tg_cell_kind kind = reach[j * W + x] ?
				tg_cpu_route_cell(z, s->W, (int) h + 3, (int) x, (int) zy, &op->flow, dist, &d, share) :
				TG_CELL_NODATA;

			if (kind == TG_CELL_FLAT && flats[zy * W + x])
			{
				/* a flat that crosses: down its mask, as the neighbour routes it */
				if (masks[zy * W + x] != 0)
					tg_cpu_flat_route_cell(z, flats, masks, s->W, (int) h + 3, (int) x, (int) zy, &op->flow, &d, share);
			}
			else if (kind == TG_CELL_FLAT)
			{
				if (at == flat || (codes[at] != TG_NO_DIRECTION && codes[at] > 7))
				{
					sec->bad = true;
					break;
				}
				d = codes[at];
				for (int k = 0; k < 8; k++)
					if ((bits[at] >> k) & 1u)
					{
						memcpy(&share[k], &shares[m++], sizeof(float));
						if (!(share[k] > 0 && share[k] <= 1))
							sec->bad = true;
					}
				at++;
			}
			s->flow_d8[y * W + x] = d;
			for (int k = 0; k < 8; k++)
				s->flow_frac[(size_t) k * n + y * W + x] = share[k];
		}
		if (at != flat)
			sec->bad = true;
	}
	tg_free(ctx, reach);
	tg_free(ctx, need);
	tg_free(ctx, crossing);
	tg_free(ctx, flats);
	tg_free(ctx, shares);
	tg_free(ctx, masks);
	tg_free(ctx, z);
	tg_free(ctx, beyond);
	if (oom)
		return tg_error_set(err, TG_ENOMEM, "could not allocate a part's routing rows");
	return sec->bad || sec->left != 0 ? tg_error_set(err, TG_EDATA, "a flow message's routing rows are malformed")
		: TG_OK;
}

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
	st = read_heights(ctx, part, r, err);
	if (st == TG_OK)
		st = route_part(ctx, op, s, &route, &own, err);
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
			put_halo_routing(w, op, s, side, s->taken_reach + side * W);
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
		if (++done % CANCEL_EVERY == 0 && tg_canceled(ctx))
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
static tg_status
part_flow(const tg_ctx *ctx, const tg_op *op, tg_part *part, reader *r, tg_error *err)
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
				st = get_halo_routing(ctx, op, &routing, s, side, err);
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
	tg_grid_geometry g = op->flow.geom;
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
	g.height = H;
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
			if (++steps % CANCEL_EVERY == 0 && tg_canceled(ctx))
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
			if (++steps % CANCEL_EVERY == 0 && tg_canceled(ctx))
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
static tg_status
finish_accumulation(const tg_ctx *ctx, const tg_op *op, tg_part *part, reader *r, double **acc,
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

typedef struct receivers_job
{
	tg_route_view v;
	const double *acc;			/* over the routing's cells */
	size_t		skip;			/* the routing's cells before the part's own */
	uint16_t   *out;			/* indexed as the routing */
} receivers_job;

static tg_status
receiver_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const receivers_job *j = arg;
	const size_t W = (size_t) j->v.width;

	tg_route_receivers(&j->v, j->acc, j->skip + (size_t) y0 * W, j->skip + (size_t) y1 * W, j->out);
	return TG_OK;
}

/*
 * The receivers of every cell of the part (as tg_hydrology exports them:
 * the ESRI codes of the neighbours that get a share, fdd8 by the cell's
 * accumulation in cells, acc), from its routing with the crossing flats'
 * masks as the part kept it: D8's codes (all a D8 routing's receivers are),
 * or the flow rounds' routing (of the own rows and the rows around them).
 */
static tg_status
part_receivers(const tg_ctx *ctx, const tg_op *op, part_state *s, const double *acc, uint16_t **out,
			   tg_error *err)
{
	const size_t W = (size_t) s->W,
				n = W * s->H;
	tg_route	route;
	receivers_job j;
	tg_status	st;

	*out = NULL;
	if (s->d8 != NULL)
	{
		route = (tg_route) {s->W, s->H, TG_ROUTE_D8, s->z + 2 * W, s->d8, NULL};
		j.acc = acc;
		j.skip = 0;
	}
	else if (s->flow_d8 != NULL)
	{
		/* the routing has rows around the part; acc is the own rows of its accumulation */
		route = flow_route(op, s);
		j.acc = s->flow_acc;
		j.skip = flow_own0(s) * W;
	}
	else
		return tg_error_set(err, TG_EDATA, "a finish message reached a part that kept no routing");
	j.v = tg_cpu_route_view(&route, op->flow.threshold);
	if ((j.out = tg_alloc(ctx, (j.skip + n) * sizeof(uint16_t) + 1)) == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate a part's receivers (%zu cells)", n);
	st = tg_parallel_rows(ctx, s->W, s->H, receiver_rows, &j, err);
	if (st != TG_OK)
	{
		tg_free(ctx, j.out);
		return st;
	}
	memmove(j.out, j.out + j.skip, n * sizeof(uint16_t));
	*out = j.out;
	return TG_OK;
}

/* The part's D8 codes (ESRI; 255 where none), once every crossing flat's height is known. */
static tg_status
finish_directions(const tg_ctx *ctx, const tg_op *op, tg_part *part, reader *r, uint8_t **codes,
				  tg_error *err)
{
	part_state *s = part->state;
	tg_route	sub,
				strip;
	size_t		own;
	tg_status	st;

	if (s == NULL || s->mask == NULL)
		return tg_error_set(err, TG_EDATA, "a finish message reached a part that kept no flats");
	st = read_heights(ctx, part, r, err);
	if (st == TG_OK)
		st = route_part(ctx, op, s, &sub, &own, err);
	if (st != TG_OK)
		return st;
	strip = own_rows_d8(s, &sub, own);
	*codes = tg_alloc(ctx, (size_t) s->W * s->H + 1);
	st = *codes ? tg_cpu_export_directions(ctx, &strip, &op->flow, NULL, *codes, NULL, err)
		: tg_error_set(err, TG_ENOMEM, "could not allocate a part's directions");
	tg_route_free(ctx, &sub);
	return st;
}

static tg_status
part_finish(const tg_ctx *ctx, const tg_op *op, const tg_job *job, tg_part *part, reader *r,
			const part_message *m, tg_grid_band *g, tg_error *err)
{
	const tg_layout *l = job->layout;
	const size_t W = (size_t) l->width,
				n = W * l->height;
	writer		w = {.ctx = ctx};
	tg_output	out[3];
	int			nout = 1;
	double	   *values = NULL;	/* the part's own where it accumulates: freed with its state */
	float	   *slope = NULL;
	uint8_t    *codes = NULL;
	uint16_t   *receivers = NULL;
	tg_status	st = TG_OK;

	if (op->kind == TG_OP_FILL)
		st = part_surface_of(ctx, op, job, r, m, g, &values, err);
	else if (op->kind == TG_OP_DIRECTIONS)
		st = finish_directions(ctx, op, part, r, &codes, err);
	else if (accumulates(op->kind))
	{
		/* tg_hydrology's receivers are exported before the units: fdd8 reads the accumulation in cells */
		st = finish_accumulation(ctx, op, part, r, &values, err);
		if (st == TG_OK && op->kind == TG_OP_HYDROLOGY)
			st = part_receivers(ctx, op, part->state, values, &receivers, err);
		if (st == TG_OK && op->units == TG_UNITS_SCA)
			st = tg_to_sca(ctx, &op->flow.geom, values, err);
	}
	else
	{
		double	   *above,
				   *below;
		tg_band		rows;
		tg_slope_params p;

		st = read_halos(ctx, r, m, 1, &above, &below, err);
		if (st == TG_OK)
			st = read_with_halos(ctx, job, g, above, below, &values, err);
		if (st == TG_OK)
			st = tg_op_plan(op, &g->band, out, err);
		if (st == TG_OK)
		{
			/* the part's rows with those around it as a 64BF band, nodata NaN */
			memset(&rows, 0, sizeof rows);
			rows.pixtype = TG_PT_64BF;
			rows.width = l->width;
			rows.height = l->height + (above ? 1 : 0) + (below ? 1 : 0);
			rows.data = values;
			p.pixel_width = tg_georef_pixel_width(&l->geo);
			p.pixel_height = tg_georef_pixel_height(&l->geo);
			p.scale = op->slope_scale;
			p.units = op->slope_units;
			p.out_nodata = (float) out[0].specs[0].nodata;
			slope = tg_alloc(ctx, sizeof(float) * W * rows.height + 1);
			st = slope ? tg_slope(ctx, &rows, &p, slope, err)
				: tg_error_set(err, TG_ENOMEM, "could not allocate the slopes of a part of %zu cells", n);
		}
		if (st == TG_OK)
			memmove(slope, slope + (above ? W : 0), n * sizeof(float));
		tg_free(ctx, above);
		tg_free(ctx, below);
	}
	if (st == TG_OK)
		st = reader_done(r, "a finish message", err);
	/* a routing part's DEM was read in the surface phase */
	if (st == TG_OK)
		st = tg_op_plan(op, routes(op->kind) ? &((const part_state *) part->state)->dem : &g->band, out, err);
	if (st == TG_OK && op->kind == TG_OP_HYDROLOGY)
	{
		const part_state *s = part->state;

		out[0].planes[0] = (tg_plane) {s->z + 2 * W, TG_PT_64BF, false, 0};
		out[1].planes[0] = (tg_plane) {receivers, TG_PT_16BUI, true, TG_NODATA_RECEIVERS};
		out[2].planes[0] = (tg_plane) {values, TG_PT_64BF, false, 0};
		nout = 3;
	}
	else if (st == TG_OK)
	{
		out[0].planes[0].data = codes ? (const void *) codes : slope ? (const void *) slope : (const void *) values;
		out[0].planes[0].type = codes ? TG_PT_8BUI : slope ? TG_PT_32BF : TG_PT_64BF;
		out[0].planes[0].has_marker = codes != NULL;
		out[0].planes[0].marker = 255;
	}
	if (st == TG_OK)
	{
		tg_phase(ctx, "encode");
		st = tg_write_tiles(ctx, job, out, nout, 0, l->height, err);
	}
	if (st == TG_OK)
	{
		put_header(&w, TG_PART_FINISH | REPLY, op->kind);
		put_i32(&w, l->ntiles);
		st = writer_done(&w, &part->reply, err);
	}
	if (!accumulates(op->kind))
		tg_free(ctx, values);
	tg_free(ctx, slope);
	tg_free(ctx, codes);
	tg_free(ctx, receivers);
	if (routes(op->kind))
		tg_part_forget(part);
	return st;
}

static tg_status run_phase(const tg_ctx *ctx, const tg_op *op, const tg_job *job, tg_part *part, uint8_t type,
						   reader *rd, const part_message *mp, tg_error *err);

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
	tg_op_kind	kind;
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
	if (st == TG_OK && (size_t) l->width * ((size_t) l->height + 4) * tg_op_bytes_per_cell(op) > job->memory_budget)
	{
		tg_error_set(err, TG_ELIMIT, "%s: the part %s of %d x %d cells needs about %zu MB, more than %s (%zu MB)",
					 job->function, l->name, l->width, l->height,
					 ((size_t) l->width * l->height * tg_op_bytes_per_cell(op)) >> 20, job->budget_name,
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
	switch (type)
	{
		case TG_PART_EDGES:
			st = reader_done(&r, "an edges message", err);
			return st == TG_OK ? part_edges(ctx, op, job, &g, &part->reply, err) : st;
		case TG_PART_SCAN:
			return part_scan(ctx, op, job, &r, &m, &g, &part->reply, err);
		case TG_PART_SURFACE:
			return part_surface(ctx, op, job, part, &r, &m, &g, err);
		case TG_PART_FLATS:
			return part_flats(ctx, op, part, &r, err);
		case TG_PART_HEIGHTS:
			if (part->state == NULL || ((part_state *) part->state)->dist[0] == NULL)
				return tg_error_set(err, TG_EDATA, "a heights message reached a part that kept no flats");
			st = reader_done(&r, "a heights message", err);
			return st == TG_OK ? part_heights(ctx, op, part, err) : st;
		case TG_PART_LINK:
			return part_link(ctx, op, part, &r, err);
		case TG_PART_FLOW:
			return part_flow(ctx, op, part, &r, err);
		case TG_PART_FINISH:
			return part_finish(ctx, op, job, part, &r, &m, &g, err);
		default:
			return tg_error_set(err, TG_EDATA, "a part message of unknown type %d", type);
	}
}

/* ------------------------------------------------------------------------
 * The coordinator
 * ------------------------------------------------------------------------ */

/* The phases whose replies the coordinator keeps, in its state. */
#define SLOTS (TG_PART_FLOW + 1)

typedef struct coordinator
{
	const tg_ctx *ctx;
	tg_op_kind	kind;
	int			n;
	const char *const *names;
	tg_part_phase last;			/* the phase whose replies come next */
	int			round;			/* of the flats or the flow */
	tg_part_bytes *slot[SLOTS]; /* n replies of each phase kept, or NULL */
	/* from the edges */
	int			W;
	double		lat_top;		/* the grid's first row's latitude, as the top part's georeference gives it */
	bool		fill;
	bool		multiple;		/* multiple-flow accumulation: flow rounds */
	int		   *order;			/* order[k]: the part k-th from the top */
	int		   *row0;			/* each part's first row on the grid */
	int		   *col0;			/* and first column (where its rows of tiles begin) */
	int		   *height;
	double	  **dem_first;		/* each part's first and last DEM rows, the grid's width */
	double	  **dem_last;
} coordinator;

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

static bool
near(double a, double b, double tolerance)
{
	return fabs(a - b) <= tolerance;
}

/*
 * Every part's place on the grid from its edges reply; they must stack into
 * one grid of whole rows.  A part's rows of tiles may begin after the grid's
 * first column or end before its last (raster2pgsql leaves out tiles of
 * nodata alone): the grid spans every part's columns, and the parts read and
 * send their rows that wide.
 */
static tg_status
place_parts(coordinator *c, tg_error *err)
{
	const int	n = c->n,
				halo = dem_halo(c->kind);
	const char *const *names = c->names;
	int		   *width = tg_alloc(c->ctx, n * sizeof(int));
	tg_georef  *geo = tg_alloc(c->ctx, n * sizeof(tg_georef));
	bool	   *aligned = tg_alloc(c->ctx, n * sizeof(bool));
	int64_t    *offset = tg_alloc(c->ctx, n * sizeof(int64_t)),
			   *column = tg_alloc(c->ctx, n * sizeof(int64_t)),
				first_col = 0,
				end_col = 0;
	tg_status	st = TG_OK;

	c->order = tg_alloc(c->ctx, n * sizeof(int));
	c->row0 = tg_alloc(c->ctx, n * sizeof(int));
	c->col0 = tg_alloc(c->ctx, n * sizeof(int));
	c->height = tg_alloc(c->ctx, n * sizeof(int));
	c->dem_first = tg_alloc(c->ctx, n * sizeof(double *));
	c->dem_last = tg_alloc(c->ctx, n * sizeof(double *));
	if (!width || !geo || !aligned || !offset || !column || !c->order || !c->row0 || !c->col0 || !c->height ||
		!c->dem_first || !c->dem_last)
	{
		st = tg_error_set(err, TG_ENOMEM, "could not allocate %d parts", n);
		goto done;
	}
	memset(c->dem_first, 0, n * sizeof(double *));
	memset(c->dem_last, 0, n * sizeof(double *));
	for (int i = 0; i < n && st == TG_OK; i++)
	{
		reader		r;
		tg_op_kind	k;
		size_t		cells;

		st = open_reader(&r, &c->slot[TG_PART_EDGES][i], TG_PART_EDGES | REPLY, &k, "an edges reply", err);
		if (st != TG_OK)
			break;
		width[i] = get_i32(&r);
		c->height[i] = get_i32(&r);
		get(&r, &geo[i], sizeof geo[i]);
		c->fill = get_u8(&r) != 0;
		c->multiple = get_u8(&r) != 0;
		if (r.bad || k != c->kind || width[i] < 1 || c->height[i] < min_rows(c->kind))
		{
			st = tg_error_set(err, TG_EDATA, "the edges reply of %s does not describe a part", names[i]);
			break;
		}
		cells = (size_t) width[i] * halo;
		c->dem_first[i] = tg_alloc(c->ctx, cells * sizeof(double) + 1);
		c->dem_last[i] = tg_alloc(c->ctx, cells * sizeof(double) + 1);
		if (!c->dem_first[i] || !c->dem_last[i])
		{
			st = tg_error_set(err, TG_ENOMEM, "could not allocate the edges of %d parts", n);
			break;
		}
		get_values(&r, c->dem_first[i], cells);
		get_values(&r, c->dem_last[i], cells);
		st = reader_done(&r, "an edges reply", err);
		c->order[i] = i;
	}
	/*
	 * Each part's place on the first part's grid (tg_georef_offset, as for
	 * the tiles of one coverage): its first row and column there, then top to
	 * bottom.
	 */
	for (int i = 0; i < n && st == TG_OK; i++)
	{
		double		col,
					row;

		aligned[i] = tg_georef_offset(&geo[0], geo[i].upperleft_x, geo[i].upperleft_y, &col, &row);
		offset[i] = aligned[i] ? (int64_t) rint(row) : 0;
		column[i] = aligned[i] ? (int64_t) rint(col) : 0;
		first_col = i == 0 || column[i] < first_col ? column[i] : first_col;
		end_col = i == 0 || column[i] + width[i] > end_col ? column[i] + width[i] : end_col;
	}
	for (int i = 1; i < n && st == TG_OK; i++)
		for (int j = i; j > 0 && offset[c->order[j]] < offset[c->order[j - 1]]; j--)
		{
			const int	t = c->order[j];

			c->order[j] = c->order[j - 1];
			c->order[j - 1] = t;
		}
	for (int k = 0; k < n && st == TG_OK; k++)
	{
		const int	p = c->order[k],
					q = k > 0 ? c->order[k - 1] : p;

		c->row0[p] = k > 0 ? c->row0[q] + c->height[q] : 0;
		c->col0[p] = (int) (column[p] - first_col);
		if (end_col - first_col > INT32_MAX / 2 || geo[p].srid != geo[q].srid || !aligned[p] ||
			!near(geo[p].scale_x, geo[q].scale_x, 1e-9 * fabs(geo[q].scale_x)) ||
			!near(geo[p].scale_y, geo[q].scale_y, 1e-9 * fabs(geo[q].scale_y)) ||
			geo[p].skew_x != geo[q].skew_x || geo[p].skew_y != geo[q].skew_y)
		{
			tg_error_set(err, TG_EDATA, "the parts on %s and %s do not lie on one grid",
						 names[q], names[p]);
			tg_error_detail(err, "%s: %d columns from x %.9g, SRID %d; %s: %d columns from x %.9g, SRID %d",
							names[q], width[q], geo[q].upperleft_x, geo[q].srid,
							names[p], width[p], geo[p].upperleft_x, geo[p].srid);
			tg_error_hint(err, "Partition one coverage by rows of tiles.");
			st = TG_EDATA;
		}
		else if (k > 0 && offset[p] != offset[q] + c->height[q])
		{
			tg_error_set(err, TG_EDATA, "the parts on %s and %s do not meet: one ends at row %lld, the next begins at row %lld",
						 names[q], names[p], (long long) (offset[q] + c->height[q]), (long long) offset[p]);
			tg_error_hint(err, "Every row of tiles must be in exactly one partition.");
			st = TG_EDATA;
		}
	}
	c->W = (int) (end_col - first_col);
	/* the edge rows as wide as the grid, nodata where a part has no tiles */
	for (int i = 0; i < n && st == TG_OK; i++)
		if (width[i] != c->W)
		{
			double	  **rows[2] = {&c->dem_first[i], &c->dem_last[i]};

			for (int e = 0; e < 2 && st == TG_OK; e++)
			{
				double	   *wide = tg_alloc(c->ctx, (size_t) c->W * halo * sizeof(double) + 1);

				if (wide == NULL)
				{
					st = tg_error_set(err, TG_ENOMEM, "could not allocate the edges of %d parts", n);
					break;
				}
				for (size_t x = 0; x < (size_t) c->W * halo; x++)
					wide[x] = NAN;
				for (int y = 0; y < halo; y++)
					memcpy(wide + (size_t) y * c->W + c->col0[i], *rows[e] + (size_t) y * width[i],
						   (size_t) width[i] * sizeof(double));
				tg_free(c->ctx, *rows[e]);
				*rows[e] = wide;
			}
		}
	if (st == TG_OK)
		c->lat_top = geo[c->order[0]].upperleft_y + 0.5 * geo[c->order[0]].scale_y;
done:
	tg_free(c->ctx, column);
	tg_free(c->ctx, width);
	tg_free(c->ctx, geo);
	tg_free(c->ctx, aligned);
	tg_free(c->ctx, offset);
	return st;
}

/* The fill's scans solved: levels[i] for part i (1 + 2 * width each). */
static tg_status
solve_fill(coordinator *c, double **levels, tg_error *err)
{
	const int	n = c->n,
				W = c->W;
	tg_fill_part *parts = tg_alloc(c->ctx, n * sizeof(tg_fill_part));
	const double **first = tg_alloc(c->ctx, n * sizeof(double *)),
			  **last = tg_alloc(c->ctx, n * sizeof(double *));
	double	  **lv = tg_alloc(c->ctx, n * sizeof(double *));
	tg_status	st = TG_OK;

	if (!parts || !first || !last || !lv)
		st = tg_error_set(err, TG_ENOMEM, "could not allocate the fill's %d parts", n);
	else
		memset(parts, 0, n * sizeof(tg_fill_part));
	for (int i = 0; i < n && st == TG_OK; i++)
	{
		int			k = 0;
		tg_fill_part *p;
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
		tg_fill_part_free(c->ctx, &parts[k]);
	tg_free(c->ctx, parts);
	tg_free(c->ctx, first);
	tg_free(c->ctx, last);
	tg_free(c->ctx, lv);
	return st;
}

/* Part i's neighbour above (k - 1) or below (k + 1), or -1. */
static int
neighbour(const coordinator *c, int i, int side)
{
	int			k = 0;

	while (c->order[k] != i)
		k++;
	k += side == 0 ? -1 : 1;
	return k >= 0 && k < c->n ? c->order[k] : -1;
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

/* The DEM rows around part i. */
static void
put_dem_halos(writer *w, const coordinator *c, int i)
{
	const int	above = neighbour(c, i, 0),
				below = neighbour(c, i, 1);

	if (above >= 0)
		put_values(w, c->dem_last[above], (size_t) c->W * dem_halo(c->kind));
	if (below >= 0)
		put_values(w, c->dem_first[below], (size_t) c->W * dem_halo(c->kind));
}

/*
 * Round 0: the neighbours' surface rows; every round: the change of their
 * boundary values in the round before (none before the first).
 */
static tg_status
put_flats(writer *w, const coordinator *c, int i, tg_error *err)
{
	const size_t W = (size_t) c->W;

	put_i32(w, c->round);
	for (int side = 0; side < 2 && c->round == 0; side++)
	{
		const int	j = neighbour(c, i, side);
		reader		r;
		tg_op_kind	k;
		double	   *rows;
		tg_status	st;

		if (j < 0)
			continue;
		st = open_reader(&r, &c->slot[TG_PART_SURFACE][j], TG_PART_SURFACE | REPLY, &k, "a surface reply", err);
		rows = tg_alloc(c->ctx, 2 * W * sizeof(double));
		if (st == TG_OK && rows == NULL)
			st = tg_error_set(err, TG_ENOMEM, "could not allocate a part's surface rows");
		/*
		 * The part above: its last two rows, after its first two (sent
		 * unless it is the top part); the part below: its first two.
		 */
		if (st == TG_OK && side == 0)
		{
			if (neighbour(c, j, 0) >= 0)
				get_values(&r, rows, 2 * W);
			get_values(&r, rows, 2 * W);
			st = reader_done(&r, "a surface reply", err);
		}
		else if (st == TG_OK)
		{
			get_values(&r, rows, 2 * W);
			if (r.bad)
				st = tg_error_set(err, TG_EDATA, "the surface reply of %s is truncated", c->names[j]);
		}
		if (st == TG_OK)
			put_values(w, rows, 2 * W);
		tg_free(c->ctx, rows);
		if (st != TG_OK)
			return st;
	}
	for (int side = 0; side < 2; side++)
	{
		const int	j = neighbour(c, i, side);
		reader		sec = {NULL, 0, false};

		if (j >= 0 && c->round > 0)
		{
			/* the part above: its last row's block, after its first row's; the part below: its first row's */
			const tg_part_bytes *b = &c->slot[TG_PART_FLATS][j];
			reader		r = {b->data + 6, b->size - 6, b->size < 6};

			sec = get_section(&r);
			if (side == 0)
				sec = get_section(&r);
			if (sec.bad)
				return tg_error_set(err, TG_EDATA, "the flats reply of %s is truncated", c->names[j]);
		}
		put_section(w, sec.p, sec.left);
	}
	return TG_OK;
}

/* Every crossing flat's height: the greatest over the parts' replies. */
static tg_status
put_heights(writer *w, const coordinator *c, tg_error *err)
{
	label_height *all = NULL;
	size_t		total = 0,
				m = 0;

	for (int i = 0; i < c->n; i++)
	{
		reader		r;
		tg_op_kind	k;
		size_t		count;
		label_height *grown;
		tg_status	st = open_reader(&r, &c->slot[TG_PART_HEIGHTS][i], TG_PART_HEIGHTS | REPLY, &k, "a heights reply",
									 err);

		if (st != TG_OK)
		{
			tg_free(c->ctx, all);
			return st;
		}
		get(&r, &count, sizeof count);
		if (r.bad || count > r.left / (sizeof(int64_t) + sizeof(int32_t)))
		{
			tg_free(c->ctx, all);
			return tg_error_set(err, TG_EDATA, "the heights reply of %s is truncated", c->names[i]);
		}
		grown = tg_alloc(c->ctx, (total + count + 1) * sizeof(label_height));
		if (grown == NULL)
		{
			tg_free(c->ctx, all);
			return tg_error_set(err, TG_ENOMEM, "could not allocate the flats' heights");
		}
		if (total)
			memcpy(grown, all, total * sizeof(label_height));
		tg_free(c->ctx, all);
		all = grown;
		for (size_t j = 0; j < count; j++, total++)
		{
			get(&r, &all[total].label, sizeof all[total].label);
			get(&r, &all[total].height, sizeof all[total].height);
		}
	}
	qsort(all, total, sizeof *all, cmp_label_height);
	for (size_t j = 0; j < total; j++)
		if (m > 0 && all[m - 1].label == all[j].label)
			all[m - 1].height = all[j].height > all[m - 1].height ? all[j].height : all[m - 1].height;
		else
			all[m++] = all[j];
	put(w, &m, sizeof m);
	for (size_t j = 0; j < m; j++)
	{
		put(w, &all[j].label, sizeof all[j].label);
		put(w, &all[j].height, sizeof all[j].height);
	}
	tg_free(c->ctx, all);
	return TG_OK;
}

/* The water entering each part from the others: inflows[i] (sorted by cell), counts[i]. */
static tg_status
solve_flow(const coordinator *c, tg_strip_inflow **inflows, size_t *ninflows, tg_error *err)
{
	const size_t W = (size_t) c->W;
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
static void
put_inflows(writer *w, const coordinator *c, int i, const tg_strip_inflow *in, size_t n)
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

/* Did no part's boundary values change in the round (its reply: two empty blocks after the header)? */
static bool
nothing_changed(const tg_part_bytes *replies, int n)
{
	for (int i = 0; i < n; i++)
		if (replies[i].size != 8 || replies[i].data[6] != 0 || replies[i].data[7] != 0)
			return false;
	return true;
}

/*
 * Section `which` of a flow reply (after its header) as a reader, bad where
 * the reply is cut short; empty for a part the round left out (flow_idle).
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
static bool
flow_idle(const coordinator *c, int i)
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
static tg_status
flow_settled(const coordinator *c, const tg_part_bytes *replies, bool *settled, tg_error *err)
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
static tg_status
put_flow(writer *w, const coordinator *c, int i, tg_error *err)
{
	put_varint(w, (uint64_t) c->round);
	if (c->round == 0)
	{
		int			halo = tg_part_flow_halo;

		for (int k = 0; k < c->n; k++)
			halo = c->height[k] - 1 < halo ? c->height[k] - 1 : halo;
		put_i32(w, halo < 1 ? 1 : halo);
		return put_heights(w, c, err);
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
		st = place_parts(&c, err);
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
			const bool	left_out = c.last == TG_PART_FLOW && c.round >= 2 && flow_idle(&c, i);

			if (left_out ? replies[i].size != 0 : replies[i].size < 6 || replies[i].data[4] != (c.last | REPLY))
				st = tg_error_set(err, TG_EDATA, "the reply of %s is not one of the %s phase", names[i],
								  tg_part_phase_name(c.last));
		}
		if (st == TG_OK && c.last == TG_PART_FLATS)
			settled = nothing_changed(replies, n);
		if (st == TG_OK && c.last == TG_PART_FLOW)
			st = flow_settled(&c, replies, &settled, err);
		if (st == TG_OK && c.last < SLOTS)
		{
			if (c.slot[c.last] == NULL && (c.slot[c.last] = tg_alloc(ctx, n * sizeof(tg_part_bytes))) == NULL)
				st = tg_error_set(err, TG_ENOMEM, "could not allocate the coordinator's state");
			else
				memcpy(c.slot[c.last], replies, n * sizeof(tg_part_bytes));
		}
	}
	if (st == TG_OK && c.slot[TG_PART_EDGES] && !placed)
		st = place_parts(&c, err);
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
			st = solve_fill(&c, levels, err);
	}
	if (st == TG_OK && *phase == TG_PART_FINISH && accumulates(c.kind) && !c.multiple)
		st = solve_flow(&c, &inflows, &ninflows, err);
	for (int i = 0; i < n && st == TG_OK && *phase != TG_PART_DONE; i++)
	{
		writer		w = {.ctx = ctx};

		if (*phase == TG_PART_FLOW && c.round >= 2 && flow_idle(&c, i))
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
			put_dem_halos(&w, &c, i);
		if (levels)
			put_values(&w, levels[i], 1 + 2 * (size_t) c.W);
		if (*phase == TG_PART_FLATS)
			st = put_flats(&w, &c, i, err);
		else if (*phase == TG_PART_FLOW)
			st = put_flow(&w, &c, i, err);
		else if (*phase == TG_PART_LINK || (*phase == TG_PART_FINISH && c.kind == TG_OP_DIRECTIONS))
			st = put_heights(&w, &c, err);
		else if (*phase == TG_PART_FINISH && accumulates(c.kind) && !c.multiple)
			put_inflows(&w, &c, i, inflows, ninflows);
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
