/*
 * drainage.c — what an analyst computes after the accumulation: stream
 * order and links, basins, flow lengths, height above the nearest drainage
 * and the wetness index.  Each runs the flow chain (tg_hydrology, on the
 * backend the dispatcher chooses) and then graph passes over its D8
 * receivers on the call's threads; stream orders and basin labels (and
 * HAND, as labels) run on the device where the dispatcher chooses it
 * (cuda/drainage.cu).  The passes read only the chain's outputs, which both
 * backends produce identically for D8, so the results do not depend on the
 * backend nor on the number of threads.
 *
 * Two kinds of pass, level by level (each level's cells at once):
 *   downstream values (flow length to the outlet, HAND, basin labels) start
 *   at the ends of the paths and go up: a cell's value follows from its
 *   receiver's;
 *   upstream values (stream order, longest upstream path, upstream sums)
 *   start at the cells without donors and go down (Kahn): a cell is
 *   computed, from all of its donors at once, by the task whose donor
 *   finished last.
 */
#include "hydro/drainage/drainage.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The chain's products and what the passes derive from them. */
typedef struct drainage
{
	int			width;
	int			height;
	size_t		n;
	double	   *acc;
	double	   *z;				/* the routing surface (filled when flow.fill) */
	uint16_t   *receivers;
	uint8_t    *down;			/* the receiver's neighbour index, or the markers above */
	uint8_t    *stream;			/* 1 on stream cells (accumulation >= threshold) */
	double	   *row_dist;		/* the 8 neighbour distances of each row */
} drainage;

static void
drainage_free(const tg_ctx *ctx, drainage *d)
{
	tg_free(ctx, d->acc);
	tg_free(ctx, d->z);
	tg_free(ctx, d->receivers);
	tg_free(ctx, d->down);
	tg_free(ctx, d->stream);
	tg_free(ctx, d->row_dist);
	memset(d, 0, sizeof *d);
}

/*
 * D8 receivers (one ESRI code each) to neighbour indices, the surface's
 * nodata to NaN.  (The wetness index's multiple-flow receivers give down[]
 * no meaning beyond marking nodata, which is all it reads there.)
 */
static tg_status
decode_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	drainage   *d = arg;

	for (size_t i = (size_t) y0 * d->width; i < (size_t) y1 * d->width; i++)
	{
		const uint16_t r = d->receivers[i];

		if (r == TG_NODATA_RECEIVERS)
		{
			d->down[i] = TG_DOWN_NODATA;
			d->z[i] = NAN;
		}
		else
			d->down[i] = r == 0 ? TG_NO_DIRECTION : (uint8_t) __builtin_ctz(r);
	}
	return TG_OK;
}

/*
 * Run the chain (accumulation in `units`) and derive down[] and the row
 * distances.  The chain runs with routing D8 unless `routing_any`.
 */
static tg_status
drainage_open(const tg_ctx *ctx, const tg_band *dem, const tg_drainage_params *p,
			  tg_accum_units units, bool routing_any, drainage *d, tg_error *err)
{
	tg_flow_products pr;
	tg_flow_params flow = p->flow;
	tg_status	st;

	memset(d, 0, sizeof *d);
	d->width = dem->width;
	d->height = dem->height;
	d->n = (size_t) dem->width * dem->height;
	if (!routing_any)
		flow.routing = TG_ROUTE_D8;
	d->acc = tg_alloc(ctx, (d->n ? d->n : 1) * sizeof(double));
	d->z = tg_alloc(ctx, (d->n ? d->n : 1) * sizeof(double));
	d->receivers = tg_alloc(ctx, (d->n ? d->n : 1) * sizeof(uint16_t));
	d->down = tg_alloc(ctx, d->n ? d->n : 1);
	d->row_dist = tg_alloc(ctx, ((size_t) d->height * 8 + 1) * sizeof(double));
	if (!d->acc || !d->z || !d->receivers || !d->down || !d->row_dist)
		return tg_error_set(err, TG_ENOMEM, "could not allocate the flow chain's products");
	memset(&pr, 0, sizeof pr);
	pr.acc = d->acc;
	pr.surface = d->z;
	pr.surface_type = TG_PT_64BF;
	pr.surface_nodata = NAN;
	pr.receivers = d->receivers;
	st = tg_hydrology(ctx, dem, NULL, &flow, p->method, units, &pr, err);
	if (st != TG_OK)
		return st;
	tg_phase(ctx, "drainage passes");
	for (int y = 0; y < d->height; y++)
	{
		double		dx,
					dy;

		tg_row_spacing(&p->flow.geom, y, &dx, &dy);
		tg_nbr_distances(dx, dy, d->row_dist + (size_t) y * 8);
	}
	return tg_parallel_rows(ctx, d->width, d->height, decode_rows, d, err);
}

/* The length of cell i's step to its receiver. */
static inline double
step_length(const drainage *d, size_t i)
{
	return d->row_dist[(i / d->width) * 8 + d->down[i]];
}

/* Is cell i (a neighbour of c in direction k) one of c's donors? */
static inline bool
donor_at(const drainage *d, int cx, int cy, int k, size_t *i)
{
	const int	nx = cx + tg_nbr_dx(k),
				ny = cy + tg_nbr_dy(k);

	if (nx < 0 || ny < 0 || nx >= d->width || ny >= d->height)
		return false;
	*i = (size_t) ny * d->width + nx;
	return d->down[*i] == tg_nbr_opposite(k);
}

/* The cell c drains into, or SIZE_MAX where it has no receiver (nodata included). */
static inline size_t
receiver_of(const drainage *d, size_t c)
{
	const int	cx = (int) (c % d->width),
				cy = (int) (c / d->width);

	if (d->down[c] == TG_NO_DIRECTION || d->down[c] == TG_DOWN_NODATA)
		return SIZE_MAX;
	return (size_t) (cy + tg_nbr_dy(d->down[c])) * d->width + (size_t) (cx + tg_nbr_dx(d->down[c]));
}

/* ------------------------------------------------------------------------
 * Downstream values: flow length to the outlet, height above drainage
 * ------------------------------------------------------------------------ */
typedef enum down_kind
{
	DOWN_LENGTH,				/* value: the length down to the path's end */
	DOWN_HAND,					/* value: the height of the first stream cell met (NaN: none yet) */
	DOWN_LABEL					/* label: the first nonzero mark met (0: none) */
} down_kind;

typedef struct down_job
{
	const drainage *d;
	down_kind	kind;
	double	   *value;
	uint32_t   *label;
	const uint32_t *mark;
	uint8_t    *state;			/* per cell 0: to do, 1: being written, 2: done (atomic) */
} down_job;

/*
 * Cell i's value from its receiver r's (done; SIZE_MAX at a path's end),
 * written by one thread: another that reaches i meanwhile waits for it.
 */
static void
down_set(const down_job *j, size_t i, size_t r)
{
	const drainage *d = j->d;
	uint8_t		expected = 0;

	if (!__atomic_compare_exchange_n(&j->state[i], &expected, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE))
	{
		while (__atomic_load_n(&j->state[i], __ATOMIC_ACQUIRE) != 2)
			;
		return;
	}
	if (d->down[i] == TG_DOWN_NODATA)
	{
		if (j->kind == DOWN_LABEL)
			j->label[i] = 0;
		else
			j->value[i] = NAN;
	}
	else if (j->kind == DOWN_LABEL)
		j->label[i] = j->mark[i] || r == SIZE_MAX ? j->mark[i] : j->label[r];
	else if (j->kind == DOWN_HAND)
		j->value[i] = d->stream[i] ? d->z[i] : r == SIZE_MAX ? NAN : j->value[r];
	else
		j->value[i] = r == SIZE_MAX ? 0.0 : TG_DADD(j->value[r], step_length(d, i));
	__atomic_store_n(&j->state[i], 2, __ATOMIC_RELEASE);
}

/*
 * Every value depends on the receiver's alone, so any order that sets a
 * receiver before its donors gives the same values: each cell of the rows
 * walks down its path to a cell already done (or the path's end), then sets
 * the cells it passed on its way back up.  The rows go to the threads at
 * once, where a pass level by level would pay a parallel region per level
 * of the longest path.
 */
static tg_status
down_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const down_job *j = arg;
	const drainage *d = j->d;
	size_t		cap = 4096,
				len;
	size_t	   *path = tg_alloc(ctx, cap * sizeof(size_t));

	if (path == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate a flow path");
	for (size_t i = (size_t) y0 * d->width; i < (size_t) y1 * d->width; i++)
	{
		size_t		c = i;

		if (__atomic_load_n(&j->state[i], __ATOMIC_ACQUIRE) == 2)
			continue;
		for (len = 0;; c = receiver_of(d, c))
		{
			size_t		r;

			if (len == cap)
			{
				size_t	   *grown = tg_alloc(ctx, 2 * cap * sizeof(size_t));

				if (grown == NULL)
				{
					tg_free(ctx, path);
					return tg_error_set(err, TG_ENOMEM, "could not allocate a flow path of %zu cells", 2 * cap);
				}
				memcpy(grown, path, cap * sizeof(size_t));
				tg_free(ctx, path);
				path = grown;
				cap *= 2;
			}
			path[len++] = c;
			r = receiver_of(d, c);
			if (r == SIZE_MAX || __atomic_load_n(&j->state[r], __ATOMIC_ACQUIRE) == 2)
				break;
		}
		while (len > 0)
		{
			c = path[--len];
			down_set(j, c, receiver_of(d, c));
		}
	}
	tg_free(ctx, path);
	return TG_OK;
}

static tg_status
down_pass(const tg_ctx *ctx, down_job *j, tg_error *err)
{
	tg_status	st;

	j->state = tg_alloc(ctx, j->d->n ? j->d->n : 1);
	if (j->state == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate the drainage pass (%zu cells)", j->d->n);
	memset(j->state, 0, j->d->n);
	st = tg_parallel_rows(ctx, j->d->width, j->d->height, down_rows, j, err);
	tg_free(ctx, j->state);
	return st;
}

/* ------------------------------------------------------------------------
 * Upstream values: stream order, longest path from the divide, upstream sums
 * ------------------------------------------------------------------------ */
typedef enum up_kind
{
	UP_STRAHLER,				/* over stream cells */
	UP_SHREVE,					/* over stream cells */
	UP_LENGTH,					/* over every valid cell */
	UP_CELLS,					/* over every valid cell: the cells draining through */
	UP_AREA						/* over every valid cell: their area */
} up_kind;

typedef struct up_job
{
	const drainage *d;
	up_kind		kind;
	uint8_t    *pending;		/* covered donors not yet done (atomic); UP_SOURCE: none at all */
	uint32_t   *order;			/* UP_STRAHLER, UP_SHREVE */
	double	   *value;			/* UP_LENGTH, UP_CELLS, UP_AREA */
} up_job;

#define UP_SOURCE 0x80

/* Does the pass cover cell i? */
static inline bool
up_covers(const up_job *j, size_t i)
{
	return j->kind == UP_STRAHLER || j->kind == UP_SHREVE ? j->d->stream[i] != 0
		: j->d->down[i] != TG_DOWN_NODATA;
}

/* how many covered donors each covered cell waits for (UP_SOURCE: none) */
static tg_status
up_start(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	up_job	   *j = arg;
	const drainage *d = j->d;

	for (int y = y0; y < y1; y++)
		for (int x = 0; x < d->width; x++)
		{
			const size_t c = (size_t) y * d->width + x;
			uint8_t		donors = 0;

			if (j->value)
				j->value[c] = NAN;
			if (!up_covers(j, c))
				continue;
			for (int k = 0; k < 8; k++)
			{
				size_t		i;

				if (donor_at(d, x, y, k, &i) && up_covers(j, i))
					donors++;
			}
			j->pending[c] = donors ? donors : UP_SOURCE;
		}
	return TG_OK;
}

/* Cell c's value from its donors', all done, in neighbour order. */
static void
up_set(const up_job *j, size_t c)
{
	const drainage *d = j->d;
	const int	cx = (int) (c % d->width),
				cy = (int) (c / d->width);
	uint32_t	top = 0,
				at_top = 0,
				sum = 0;
	double		v = 0;

	if (j->kind == UP_CELLS)
		v = 1;
	else if (j->kind == UP_AREA)
		v = d->row_dist[(size_t) cy * 8] * d->row_dist[(size_t) cy * 8 + 2];
	for (int k = 0; k < 8; k++)
	{
		size_t		i;

		if (!donor_at(d, cx, cy, k, &i) || !up_covers(j, i))
			continue;
		switch (j->kind)
		{
			case UP_STRAHLER:
			case UP_SHREVE:
				if (j->order[i] > top)
				{
					top = j->order[i];
					at_top = 1;
				}
				else if (j->order[i] == top)
					at_top++;
				sum += j->order[i];
				break;
			case UP_LENGTH:
				v = fmax(v, TG_DADD(j->value[i], step_length(d, i)));
				break;
			case UP_CELLS:
			case UP_AREA:
				v = TG_DADD(v, j->value[i]);
				break;
		}
	}
	if (j->kind == UP_SHREVE)
		j->order[c] = sum > 0 ? sum : 1;
	else if (j->kind == UP_STRAHLER)
		/* one more where two or more donors share the highest order */
		j->order[c] = top == 0 ? 1 : at_top >= 2 ? top + 1 : top;
	else
		j->value[c] = v;
}

/*
 * From each cell without donors, downstream while the cell reached has all
 * its donors done: the thread that completes a cell's last donor goes on
 * with it (Kahn's algorithm walked, as the indegree accumulation does), so
 * rows of sources go to the threads at once instead of one parallel region
 * per level.  A cell is computed once, from its donors in neighbour order:
 * the same values in any order.
 */
static tg_status
up_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	up_job	   *j = arg;
	const drainage *d = j->d;

	for (size_t i = (size_t) y0 * d->width; i < (size_t) y1 * d->width; i++)
	{
		size_t		c = i;

		if (!up_covers(j, i) || j->pending[i] != UP_SOURCE)
			continue;
		for (;;)
		{
			const size_t r = receiver_of(d, c);

			up_set(j, c);
			if (r == SIZE_MAX || !up_covers(j, r) ||
				__atomic_sub_fetch(&j->pending[r], 1, __ATOMIC_ACQ_REL) != 0)
				break;
			c = r;
		}
	}
	return TG_OK;
}

/* One upstream pass into order (the orders) or value (the rest). */
static tg_status
up_pass(const tg_ctx *ctx, const drainage *d, up_kind kind, uint32_t *order, double *value, tg_error *err)
{
	up_job		j = {.d = d, .kind = kind, .order = order, .value = value};
	tg_status	st;

	j.pending = tg_alloc(ctx, d->n ? d->n : 1);
	if (j.pending == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate the drainage counts");
	if (order)
		memset(order, 0, d->n * sizeof(uint32_t));
	st = tg_parallel_rows(ctx, d->width, d->height, up_start, &j, err);
	if (st == TG_OK)
		st = tg_parallel_rows(ctx, d->width, d->height, up_rows, &j, err);
	tg_free(ctx, j.pending);
	return st;
}

/* ------------------------------------------------------------------------
 * Orders and labels on the backend the dispatcher chooses: the device's
 * passes (cuda/drainage.cu) give the same integers as the threads'.
 * ------------------------------------------------------------------------ */
typedef struct order_step
{
	const drainage *d;
	bool		shreve;
	uint32_t   *order;
} order_step;

static tg_status
order_cpu(const tg_ctx *ctx, const void *arg, tg_error *err)
{
	const order_step *s = arg;

	return up_pass(ctx, s->d, s->shreve ? UP_SHREVE : UP_STRAHLER, s->order, NULL, err);
}

static tg_status
order_gpu(const tg_ctx *ctx, const void *arg, tg_error *err)
{
	const order_step *s = arg;
	tg_status	st;

	tg_phase(ctx, "drainage passes on the GPU");
	st = tg_cuda_stream_order(ctx, s->d->width, s->d->height, s->d->down, s->d->stream, s->shreve, s->order, err);
	tg_phase(ctx, "drainage passes");
	return st;
}

static tg_status
stream_orders(const tg_ctx *ctx, const drainage *d, bool shreve, uint32_t *order, tg_error *err)
{
	order_step	s = {d, shreve, order};

	return tg_run_step(ctx, (int64_t) d->n, order_cpu, order_gpu, &s, err);
}

typedef struct label_step
{
	const drainage *d;
	uint32_t   *mark;			/* NULL: the ends of the paths, numbered in row-major order */
	uint32_t   *labels;
} label_step;

static tg_status
label_cpu(const tg_ctx *ctx, const void *arg, tg_error *err)
{
	const label_step *s = arg;
	const drainage *d = s->d;
	uint32_t   *mark = s->mark;
	tg_status	st;

	if (mark == NULL)
	{
		uint32_t	next = 1;

		if ((mark = tg_alloc(ctx, (d->n ? d->n : 1) * sizeof(uint32_t))) == NULL)
			return tg_error_set(err, TG_ENOMEM, "could not allocate the basin marks");
		for (size_t i = 0; i < d->n; i++)
			mark[i] = d->down[i] == TG_NO_DIRECTION ? next++ : 0;
	}
	{
		down_job	j = {.d = d, .kind = DOWN_LABEL, .label = s->labels, .mark = mark};

		st = down_pass(ctx, &j, err);
	}
	if (mark != s->mark)
		tg_free(ctx, mark);
	return st;
}

static tg_status
label_gpu(const tg_ctx *ctx, const void *arg, tg_error *err)
{
	const label_step *s = arg;
	tg_status	st;

	tg_phase(ctx, "drainage passes on the GPU");
	st = tg_cuda_drainage_labels(ctx, s->d->width, s->d->height, s->d->down, s->mark, s->labels, err);
	tg_phase(ctx, "drainage passes");
	return st;
}

/*
 * The height of the first stream cell on each cell's path (NaN where none):
 * on the device, the basins' labels with every stream cell its own mark
 * (its index + 1), read back as heights.
 */
typedef struct base_step
{
	const drainage *d;
	double	   *base;
	uint32_t   *label;			/* base_gpu's: the marks, then the device's labels */
} base_step;

static tg_status
base_cpu(const tg_ctx *ctx, const void *arg, tg_error *err)
{
	const base_step *s = arg;
	down_job	j = {.d = s->d, .kind = DOWN_HAND, .value = s->base};

	return down_pass(ctx, &j, err);
}

static tg_status
stream_marks(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const base_step *s = arg;

	for (size_t i = (size_t) y0 * s->d->width; i < (size_t) y1 * s->d->width; i++)
		s->label[i] = s->d->stream[i] ? (uint32_t) i + 1 : 0;
	return TG_OK;
}

static tg_status
label_heights(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const base_step *s = arg;

	for (size_t i = (size_t) y0 * s->d->width; i < (size_t) y1 * s->d->width; i++)
		s->base[i] = s->label[i] ? s->d->z[s->label[i] - 1] : NAN;
	return TG_OK;
}

static tg_status
base_gpu(const tg_ctx *ctx, const void *arg, tg_error *err)
{
	base_step	s = *(const base_step *) arg;
	const drainage *d = s.d;
	tg_status	st;

	if ((s.label = tg_alloc(ctx, (d->n ? d->n : 1) * sizeof(uint32_t))) == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate the drainage labels");
	st = tg_parallel_rows(ctx, d->width, d->height, stream_marks, &s, err);
	if (st == TG_OK)
	{
		const label_step marks = {.d = d, .mark = s.label, .labels = s.label};

		st = label_gpu(ctx, &marks, err);
	}
	if (st == TG_OK)
		st = tg_parallel_rows(ctx, d->width, d->height, label_heights, &s, err);
	tg_free(ctx, s.label);
	return st;
}

/* ------------------------------------------------------------------------
 * Stream cells: accumulation at least the threshold
 * ------------------------------------------------------------------------ */
typedef struct stream_job
{
	drainage   *d;
	double		threshold;
} stream_job;

static tg_status
stream_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	stream_job *j = arg;
	drainage   *d = j->d;

	for (size_t i = (size_t) y0 * d->width; i < (size_t) y1 * d->width; i++)
		d->stream[i] = d->down[i] != TG_DOWN_NODATA && d->acc[i] >= j->threshold;
	return TG_OK;
}

static tg_status
find_streams(const tg_ctx *ctx, drainage *d, double threshold, tg_error *err)
{
	stream_job	j = {d, threshold};

	d->stream = tg_alloc(ctx, d->n ? d->n : 1);
	if (d->stream == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate the stream cells");
	return tg_parallel_rows(ctx, d->width, d->height, stream_rows, &j, err);
}

/* ------------------------------------------------------------------------
 * Outputs
 * ------------------------------------------------------------------------ */
typedef struct out_job
{
	const drainage *d;
	const double *value;
	float	   *out;
	bool		minus_z;		/* out = z - value (HAND) */
	double		min_slope;		/* the wetness index */
} out_job;

/* value (or z - value), NaN on nodata and where the value is NaN */
static tg_status
value_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const out_job *j = arg;
	const drainage *d = j->d;

	for (size_t i = (size_t) y0 * d->width; i < (size_t) y1 * d->width; i++)
		j->out[i] = d->down[i] == TG_DOWN_NODATA ? NAN :
			(float) (j->minus_z ? d->z[i] - j->value[i] : j->value[i]);
	return TG_OK;
}

/* ln(a / tan b): a the specific catchment area, b the Horn slope of the routing surface */
static tg_status
wetness_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const out_job *j = arg;
	const drainage *d = j->d;
	const int	W = d->width,
				H = d->height;

	for (int y = y0; y < y1; y++)
	{
		const double kx = 1.0 / (8.0 * d->row_dist[(size_t) y * 8]),
					ky = 1.0 / (8.0 * d->row_dist[(size_t) y * 8 + 2]);

		for (int x = 0; x < W; x++)
		{
			const size_t i = (size_t) y * W + x;
			double		w[9];
			int			k = 0;

			if (d->down[i] == TG_DOWN_NODATA)
			{
				j->out[i] = NAN;
				continue;
			}
			for (int wy = -1; wy <= 1; wy++)
				for (int wx = -1; wx <= 1; wx++, k++)
				{
					const int	nx = x + wx,
								ny = y + wy;

					w[k] = nx >= 0 && ny >= 0 && nx < W && ny < H ? d->z[(size_t) ny * W + nx] : NAN;
				}
			j->out[i] = (float) log(d->acc[i] / fmax(tg_horn_tan(w, kx, ky), j->min_slope));
		}
	}
	return TG_OK;
}

/* ------------------------------------------------------------------------
 * Entry points
 * ------------------------------------------------------------------------ */
static tg_status
check_params(const tg_band *dem, const tg_drainage_params *p, bool threshold, tg_error *err)
{
	if (threshold && (!(p->threshold > 0) || !isfinite(p->threshold)))
		return tg_error_set(err, TG_EINVAL, "the stream threshold must be a positive number, got %g",
							p->threshold);
	if (threshold && p->units != TG_UNITS_CELLS && p->units != TG_UNITS_AREA)
		return tg_error_set(err, TG_EINVAL, "a stream threshold counts cells or area");
	if ((size_t) dem->width * dem->height >= UINT32_MAX)
		return tg_error_set(err, TG_ELIMIT, "%d x %d cells are more than drainage passes index",
							dem->width, dem->height);
	return TG_OK;
}

/* The call scope of an entry point: the chain and the passes share its threads. */
static void
open_call(const tg_ctx *ctx, const tg_band *dem, tg_ctx *call, double *t0)
{
	*t0 = tg_stats_begin(ctx, (int64_t) dem->width * dem->height);
	tg_call_open(ctx, call);
}

static void
close_call(const tg_ctx *ctx, tg_ctx *call, double t0)
{
	tg_call_close(call);
	tg_stats_end(ctx, t0);
}

/*
 * The chain's drainage in `units`, with the stream cells of p->threshold
 * marked where `streams`.
 */
static tg_status
drainage_streams(const tg_ctx *call, const tg_band *dem, const tg_drainage_params *p, tg_accum_units units,
				 bool streams, drainage *d, tg_error *err)
{
	tg_status	st = drainage_open(call, dem, p, units, false, d, err);

	if (st == TG_OK && streams)
		st = find_streams(call, d, p->threshold, err);
	return st;
}

/* ------------------------------------------------------------------------
 * Stream links: from a source or a confluence down to the next confluence
 * or the end of the stream
 * ------------------------------------------------------------------------ */
typedef struct link_job
{
	const drainage *d;
	uint8_t    *head;			/* 1 on stream cells that start a link */
	const uint32_t *heads;		/* those cells in row-major order: link k + 1 starts at heads[k] */
	size_t		nheads;
	const uint32_t *strahler;
	const uint32_t *shreve;
	const double *cells;		/* upstream cells and area of every cell */
	const double *area;
	tg_stream_network *net;
} link_job;

/* a stream cell starts a link unless exactly one stream cell drains into it */
static tg_status
head_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	link_job   *j = arg;
	const drainage *d = j->d;

	for (int y = y0; y < y1; y++)
		for (int x = 0; x < d->width; x++)
		{
			const size_t c = (size_t) y * d->width + x;
			int			donors = 0;

			if (!d->stream[c])
			{
				j->head[c] = 0;
				continue;
			}
			for (int k = 0; k < 8; k++)
			{
				size_t		i;

				if (donor_at(d, x, y, k, &i) && d->stream[i])
					donors++;
			}
			j->head[c] = donors != 1;
		}
	return TG_OK;
}

/* The stream cell c drains into, or SIZE_MAX. */
static inline size_t
stream_receiver(const drainage *d, size_t c)
{
	const size_t r = receiver_of(d, c);

	return r != SIZE_MAX && d->stream[r] ? r : SIZE_MAX;
}

/* The link starting at head cell c (1-based), by binary search of the heads. */
static int64_t
link_at(const link_job *j, size_t c)
{
	size_t		lo = 0,
				hi = j->nheads;

	while (lo < hi)
	{
		size_t		mid = lo + (hi - lo) / 2;

		if (j->heads[mid] < c)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < j->nheads && j->heads[lo] == c ? (int64_t) lo + 1 : 0;
}

/* Walk each link of a task: count its vertices, or (vertices set) write them and its attributes. */
static tg_status
link_walk(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	link_job   *j = arg;
	const drainage *d = j->d;
	tg_stream_network *net = j->net;
	size_t		lo,
				hi;

	tg_list_range(j->nheads, task, &lo, &hi);
	for (size_t k = lo; k < hi; k++)
	{
		tg_stream_link *link = &net->links[k];
		size_t		c = j->heads[k],
					r,
					count = 1;
		double		length = 0;

		if (net->vertices)
			net->vertices[link->first] = (uint32_t) c;
		for (;;)
		{
			r = stream_receiver(d, c);
			if (r == SIZE_MAX)
				break;
			length = TG_DADD(length, step_length(d, c));
			if (net->vertices)
				net->vertices[link->first + count] = (uint32_t) r;
			count++;
			if (j->head[r])
				break;
			c = r;
		}
		link->count = count;
		if (!net->vertices)
			continue;
		link->id = (int64_t) k + 1;
		link->downstream = r == SIZE_MAX ? 0 : link_at(j, r);
		link->length = length;
		if (!j->strahler)
			continue;
		link->strahler = j->strahler[j->heads[k]];
		link->shreve = j->shreve[j->heads[k]];
		link->cells = j->cells[c];
		link->area = j->area[c];
	}
	return TG_OK;
}

void
tg_stream_network_free(const tg_ctx *ctx, tg_stream_network *net)
{
	tg_free(ctx, net->links);
	tg_free(ctx, net->vertices);
	memset(net, 0, sizeof *net);
}

/*
 * The links of d's streams (find_streams done) into net, and with strahler
 * (not NULL) their attributes too: the orders (Strahler's of every cell into
 * strahler), upstream cells and area.  Without, only what numbers the links
 * and places their cells.
 */
static tg_status
network_of(const tg_ctx *ctx, const tg_ctx *owner, drainage *d, const tg_drainage_params *p,
		   uint32_t *strahler, tg_stream_network *net, tg_error *err)
{
	link_job	j;
	uint32_t   *shreve,
			   *heads = NULL;
	double	   *other;
	tg_status	st = TG_OK;

	memset(&j, 0, sizeof j);
	shreve = strahler ? tg_alloc(ctx, (d->n ? d->n : 1) * sizeof(uint32_t)) : NULL;
	other = strahler ? tg_alloc(ctx, (d->n ? d->n : 1) * sizeof(double)) : NULL;
	j.head = tg_alloc(ctx, d->n ? d->n : 1);
	if ((strahler && (!shreve || !other)) || !j.head)
		st = tg_error_set(err, TG_ENOMEM, "could not allocate the stream links");
	if (st == TG_OK && strahler)
		st = stream_orders(ctx, d, false, strahler, err);
	if (st == TG_OK && strahler)
		st = stream_orders(ctx, d, true, shreve, err);
	/* the chain's accumulation is in the threshold's units; the other unit by a pass */
	if (st == TG_OK && strahler)
		st = up_pass(ctx, d, p->units == TG_UNITS_AREA ? UP_CELLS : UP_AREA, NULL, other, err);
	if (st == TG_OK)
	{
		j.d = d;
		j.strahler = strahler;
		j.shreve = shreve;
		j.cells = p->units == TG_UNITS_AREA ? other : d->acc;
		j.area = p->units == TG_UNITS_AREA ? d->acc : other;
		j.net = net;
		st = tg_parallel_rows(ctx, d->width, d->height, head_rows, &j, err);
	}
	if (st == TG_OK && (heads = tg_alloc(ctx, (d->n ? d->n : 1) * sizeof(uint32_t))) == NULL)
		st = tg_error_set(err, TG_ENOMEM, "could not allocate the stream links");
	if (st == TG_OK)
	{
		/* the heads in row-major order number the links */
		for (size_t i = 0; i < d->n; i++)
			if (j.head[i])
				heads[j.nheads++] = (uint32_t) i;
		j.heads = heads;
		net->links = tg_alloc(owner, (j.nheads ? j.nheads : 1) * sizeof(tg_stream_link));
		if (net->links == NULL)
			st = tg_error_set(err, TG_ENOMEM, "could not allocate the stream links");
		else
			memset(net->links, 0, (j.nheads ? j.nheads : 1) * sizeof(tg_stream_link));
		net->nlinks = j.nheads;
	}
	if (st == TG_OK)
		st = tg_parallel(ctx, tg_list_tasks(j.nheads), link_walk, &j, err);
	if (st == TG_OK)
	{
		for (size_t k = 0; k < net->nlinks; k++)
		{
			net->links[k].first = net->nvertices;
			net->nvertices += net->links[k].count;
		}
		net->vertices = tg_alloc(owner, (net->nvertices ? net->nvertices : 1) * sizeof(uint32_t));
		if (net->vertices == NULL)
			st = tg_error_set(err, TG_ENOMEM, "could not allocate the stream vertices");
	}
	if (st == TG_OK)
		st = tg_parallel(ctx, tg_list_tasks(j.nheads), link_walk, &j, err);
	if (st != TG_OK)
		tg_stream_network_free(owner, net);
	tg_free(ctx, shreve);
	tg_free(ctx, other);
	tg_free(ctx, j.head);
	tg_free(ctx, heads);
	return st;
}

tg_status
tg_stream_network_build(const tg_ctx *ctx, const tg_band *dem, const tg_drainage_params *p,
						uint32_t *strahler, tg_stream_network *net, tg_error *err)
{
	tg_ctx		call;
	drainage	d;
	double		t0;
	tg_status	st = check_params(dem, p, true, err);

	memset(net, 0, sizeof *net);
	if (st != TG_OK)
		return st;
	open_call(ctx, dem, &call, &t0);
	st = drainage_streams(&call, dem, p, p->units, true, &d, err);
	if (st == TG_OK)
		st = network_of(&call, ctx, &d, p, strahler, net, err);
	drainage_free(&call, &d);
	close_call(ctx, &call, t0);
	return st;
}

/*
 * Basins: every cell labelled by the first marked cell on its D8 path: a
 * pour point, a link's cell, or the path's end.
 */
typedef struct mark_job
{
	const drainage *d;
	uint32_t   *mark;
	const tg_stream_network *net;
} mark_job;

/* each link's own cells (its last vertex, a confluence, belongs to the next link) */
static tg_status
mark_links(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	mark_job   *j = arg;
	size_t		lo,
				hi;

	tg_list_range(j->net->nlinks, task, &lo, &hi);
	for (size_t k = lo; k < hi; k++)
	{
		const tg_stream_link *link = &j->net->links[k];
		const size_t own = link->downstream ? link->count - 1 : link->count;

		for (size_t v = 0; v < own; v++)
			j->mark[j->net->vertices[link->first + v]] = (uint32_t) link->id;
	}
	return TG_OK;
}

tg_status
tg_basins(const tg_ctx *ctx, const tg_band *dem, const tg_basin_params *bp, uint32_t *labels, tg_error *err)
{
	const tg_drainage_params *p = &bp->drainage;
	tg_ctx		call;
	drainage	d;
	uint32_t   *mark = NULL;
	double		t0;
	tg_status	st = check_params(dem, p, bp->outlets == TG_BASINS_LINKS, err);

	if (st != TG_OK)
		return st;
	if (bp->outlets == TG_BASINS_POINTS && bp->npoints <= 0)
		return tg_error_set(err, TG_EINVAL, "basins of pour points need at least one point");
	if (bp->outlets == TG_BASINS_POINTS && (!(bp->snap >= 0) || !isfinite(bp->snap)))
		return tg_error_set(err, TG_EINVAL, "snap must be a non-negative distance, got %g", bp->snap);
	open_call(ctx, dem, &call, &t0);
	st = drainage_streams(&call, dem, p, bp->outlets == TG_BASINS_LINKS ? p->units : TG_UNITS_CELLS,
						 bp->outlets == TG_BASINS_LINKS, &d, err);
	if (st == TG_OK && bp->outlets != TG_BASINS_OUTLETS &&
		(mark = tg_alloc(&call, (d.n ? d.n : 1) * sizeof(uint32_t))) == NULL)
		st = tg_error_set(err, TG_ENOMEM, "could not allocate the basin marks");
	if (st == TG_OK && mark)
		memset(mark, 0, d.n * sizeof(uint32_t));
	if (st == TG_OK && bp->outlets == TG_BASINS_POINTS)
	{
		/* the first of several points on one cell names it */
		for (int k = bp->npoints - 1; k >= 0 && st == TG_OK; k--)
		{
			tg_snap_params sp = {p->flow, bp->xs[k], bp->ys[k], bp->snap};
			int			col,
						row;

			/* each point searches up to the whole grid: many points take long */
			if (tg_canceled(&call))
			{
				st = tg_error_set(err, TG_ECANCELED, "snapping the pour points canceled");
				break;
			}
			st = tg_snap_choose(dem, &sp, d.acc, &col, &row, err);
			if (st == TG_OK)
				mark[(size_t) row * d.width + col] = (uint32_t) k + 1;
		}
	}
	else if (st == TG_OK && bp->outlets == TG_BASINS_LINKS)
	{
		tg_stream_network net;

		memset(&net, 0, sizeof net);
		/* the links' numbering and cells only */
		st = network_of(&call, &call, &d, p, NULL, &net, err);
		if (st == TG_OK)
		{
			mark_job	j = {&d, mark, &net};

			st = tg_parallel(&call, tg_list_tasks(net.nlinks), mark_links, &j, err);
		}
		tg_stream_network_free(&call, &net);
	}
	if (st == TG_OK)
	{
		/* marks NULL: the ends of the paths */
		label_step	s = {&d, mark, labels};

		st = tg_run_step(&call, (int64_t) d.n, label_cpu, label_gpu, &s, err);
	}
	tg_free(&call, mark);
	drainage_free(&call, &d);
	close_call(ctx, &call, t0);
	return st;
}

tg_status
tg_stream_order(const tg_ctx *ctx, const tg_band *dem, const tg_drainage_params *p, uint32_t *order,
				tg_error *err)
{
	tg_ctx		call;
	drainage	d;
	double		t0;
	tg_status	st = check_params(dem, p, true, err);

	if (st != TG_OK)
		return st;
	open_call(ctx, dem, &call, &t0);
	st = drainage_streams(&call, dem, p, p->units, true, &d, err);
	if (st == TG_OK)
		st = stream_orders(&call, &d, p->ordering == TG_ORDER_SHREVE, order, err);
	drainage_free(&call, &d);
	close_call(ctx, &call, t0);
	return st;
}

tg_status
tg_flow_length(const tg_ctx *ctx, const tg_band *dem, const tg_drainage_params *p, float *length,
			   tg_error *err)
{
	tg_ctx		call;
	drainage	d;
	double	   *value = NULL;
	double		t0;
	tg_status	st = check_params(dem, p, false, err);

	if (st != TG_OK)
		return st;
	open_call(ctx, dem, &call, &t0);
	st = drainage_streams(&call, dem, p, TG_UNITS_CELLS, false, &d, err);
	if (st == TG_OK && (value = tg_alloc(&call, (d.n ? d.n : 1) * sizeof(double))) == NULL)
		st = tg_error_set(err, TG_ENOMEM, "could not allocate the flow lengths");
	if (st == TG_OK && p->upstream)
		st = up_pass(&call, &d, UP_LENGTH, NULL, value, err);
	else if (st == TG_OK)
	{
		down_job	j = {.d = &d, .kind = DOWN_LENGTH, .value = value};

		st = down_pass(&call, &j, err);
	}
	if (st == TG_OK)
	{
		out_job		j = {.d = &d, .value = value, .out = length};

		st = tg_parallel_rows(&call, d.width, d.height, value_rows, &j, err);
	}
	tg_free(&call, value);
	drainage_free(&call, &d);
	close_call(ctx, &call, t0);
	return st;
}

tg_status
tg_hand(const tg_ctx *ctx, const tg_band *dem, const tg_drainage_params *p, float *hand,
		tg_error *err)
{
	tg_ctx		call;
	drainage	d;
	double	   *base = NULL;
	double		t0;
	tg_status	st = check_params(dem, p, true, err);

	if (st != TG_OK)
		return st;
	open_call(ctx, dem, &call, &t0);
	st = drainage_streams(&call, dem, p, p->units, true, &d, err);
	if (st == TG_OK && (base = tg_alloc(&call, (d.n ? d.n : 1) * sizeof(double))) == NULL)
		st = tg_error_set(err, TG_ENOMEM, "could not allocate the drainage heights");
	if (st == TG_OK)
	{
		base_step	s = {&d, base, NULL};

		st = tg_run_step(&call, (int64_t) d.n, base_cpu, base_gpu, &s, err);
	}
	if (st == TG_OK)
	{
		out_job		j = {.d = &d, .value = base, .out = hand, .minus_z = true};

		st = tg_parallel_rows(&call, d.width, d.height, value_rows, &j, err);
	}
	tg_free(&call, base);
	drainage_free(&call, &d);
	close_call(ctx, &call, t0);
	return st;
}

tg_status
tg_wetness_index(const tg_ctx *ctx, const tg_band *dem, const tg_drainage_params *p, float *twi,
				 tg_error *err)
{
	tg_ctx		call;
	drainage	d;
	double		t0;
	tg_status	st = check_params(dem, p, false, err);

	if (st != TG_OK)
		return st;
	if (!(p->min_slope > 0) || !isfinite(p->min_slope))
		return tg_error_set(err, TG_EINVAL, "min_slope must be a positive number, got %g", p->min_slope);
	open_call(ctx, dem, &call, &t0);
	st = drainage_open(&call, dem, p, TG_UNITS_SCA, true, &d, err);
	if (st == TG_OK)
	{
		out_job		j = {.d = &d, .out = twi, .min_slope = p->min_slope};

		st = tg_parallel_rows(&call, d.width, d.height, wetness_rows, &j, err);
	}
	drainage_free(&call, &d);
	close_call(ctx, &call, t0);
	return st;
}
