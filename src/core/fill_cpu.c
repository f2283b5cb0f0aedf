/*
 * fill_cpu.c — depression filling on the CPU.
 *
 * Both methods compute the same surface (tg_core.h, tg_fill):
 *   W(c) = max(Z(c), min_n inc(W(n)))  for valid non-outlet cells, W = Z at outlets.
 *
 * priority-flood  Without epsilon: the surface as a morphological
 *                 reconstruction by erosion (Vincent 1993's hybrid: a raster
 *                 scan down, one up, then a FIFO over the cells still able to
 *                 fall; Soille & Gratin 1994 use it for sinks), which reads
 *                 memory in order where a priority queue jumps about, in
 *                 strips of rows on the call's threads; beyond memory, the
 *                 flood of fill_flood.c strip by strip (fill_strips.c).  The
 *                 surface is unique: every way gives the same bits.  With
 *                 epsilon: Barnes, Lehman & Mulla (2014)'s priority-flood
 *                 with the rise added at each step (one thread: the rise
 *                 depends on the order cells are reached).
 * planchon-darboux  Planchon & Darboux (2001): start from W = +inf off the
 *                 outlets and lower cells in place, scanning the grid in
 *                 alternating directions until a scan changes nothing (one
 *                 thread: each scan reads the values it has just written).
 * breach          Not a fill: Lindsay (2016)'s complete breaching, cells
 *                 lowered along the priority-flood's paths from the pits
 *                 (tg_core.h, tg_fill; one thread: the paths depend on the
 *                 flood's order).
 */
#include "tg_backends.h"
#include "cell_fifo.h"
#include "tg_heap.h"
#include "tg_hydro.h"
#include "tg_pool.h"

#include <math.h>
#include <string.h>

#define CANCEL_EVERY 65536

#define MIN_STRIP_ROWS 64

/* ------------------------------------------------------------------------
 * Shared helpers
 * ------------------------------------------------------------------------ */

typedef struct decode_job
{
	const tg_band *dem;
	double	   *z;
} decode_job;

static tg_status
decode_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const decode_job *d = arg;

	for (int y = y0; y < y1; y++)
		tg_band_row_to_f64(d->dem, y, d->z + (size_t) y * d->dem->width);
	return TG_OK;
}

/* Decode the band into doubles, nodata as NaN. */
tg_status
tg_cpu_decode(const tg_ctx *ctx, const tg_band *dem, double **z, tg_error *err)
{
	size_t		n = (size_t) dem->width * dem->height;
	decode_job	d = {dem, NULL};
	tg_status	st;

	*z = tg_alloc(ctx, (n ? n : 1) * sizeof(double));
	if (*z == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate %zu bytes for the DEM",
							n * sizeof(double));
	d.z = *z;
	st = tg_parallel_rows(ctx, dem->width, dem->height, decode_rows, &d, err);
	if (st != TG_OK)
	{
		tg_free(ctx, *z);
		*z = NULL;
	}
	return st;
}

/* A valid cell on the edge or next to a nodata cell: water leaves here. */
bool
tg_cpu_is_outlet(const double *z, int W, int H, int x, int y)
{
	int			k;

	if (x == 0 || y == 0 || x == W - 1 || y == H - 1)
		return true;
	for (k = 0; k < 8; k++)
		if (isnan(z[(size_t) (y + tg_nbr_dy(k)) * W + x + tg_nbr_dx(k)]))
			return true;
	return false;
}

/* ------------------------------------------------------------------------
 * Without epsilon: reconstruction by erosion, in strips of rows
 *
 * w starts at +inf on the inner cells, at z on the edge (outlets), at -inf
 * on nodata (so that a cell beside nodata falls to its own height: an
 * outlet too), and falls to max(z, min of the neighbours) everywhere; every
 * value w takes is one of z's, so the result is exact.  That surface is the
 * greatest fixed point under the start, which any order of lowering reaches:
 * so each strip runs the hybrid algorithm on its own rows, reading its
 * neighbours' facing rows from a copy taken between rounds, and strips whose
 * facing rows fell since run again from there, until none fell.  The
 * result does not depend on the strips, hence not on the threads.
 * ------------------------------------------------------------------------ */

static inline double
min3(double a, double b, double c)
{
	const double ab = a < b ? a : b;

	return ab < c ? ab : c;
}

typedef struct recon
{
	const double *z;
	double	   *w;
	int			width;
	int			height;
	int			nstrips;
	double	   *facing;			/* per strip: the row above it and the row below, as last copied */
	int64_t    *todo;			/* the strips of this round */
	bool	   *fell;			/* per strip: its facing rows fell since the last copy */
	bool		first;			/* the first round: full scans */
} recon;

/* Fewest rows of a strip: thinner ones cost more rounds than they save. */
#define MIN_STRIP_ROWS 64
#define MANY_THREADS 8
#define STRIPS_PER_THREAD 8

static void
recon_rows(const recon *r, int64_t k, int *r0, int *r1)
{
	*r0 = (int) ((int64_t) r->height * k / r->nstrips);
	*r1 = (int) ((int64_t) r->height * (k + 1) / r->nstrips);
}

/* Lower cell c to max(z, level) if that is lower, and queue it. */
static inline bool
lower(const tg_ctx *ctx, const recon *r, cell_fifo *q, size_t c, double level)
{
	const double *z = r->z;
	double	   *w = r->w;

	if (w[c] > level && w[c] > z[c])
	{
		w[c] = level > z[c] ? level : z[c];
		return fifo_push(ctx, q, (uint32_t) c);
	}
	return true;
}

/* The raster scans of the first round: down, then up, queueing what may still fall. */
static bool
scan_strip(const tg_ctx *ctx, const recon *r, int r0, int r1, const double *above,
		  const double *below, cell_fifo *q)
{
	const ptrdiff_t R = r->width;
	const int	y0 = r0 > 1 ? r0 : 1,
				y1 = r1 < r->height - 1 ? r1 : r->height - 1;

	for (int y = y0; y < y1; y++)
	{
		const double *zr = r->z + y * R;
		double	   *row = r->w + y * R;
		const double *up = y == r0 ? above : row - R;

		for (int x = 1; x < R - 1; x++)
		{
			double		v;

			if (isnan(zr[x]))
				continue;
			v = min3(up[x - 1], up[x], up[x + 1]);
			v = v < row[x - 1] ? v : row[x - 1];
			v = v < row[x] ? v : row[x];
			row[x] = v > zr[x] ? v : zr[x];
		}
	}
	for (int y = y1 - 1; y >= y0; y--)
	{
		const double *zr = r->z + y * R;
		double	   *row = r->w + y * R;
		const bool	own_below = y + 1 < r1;
		const double *down = own_below ? row + R : below;
		const double *zd = zr + R;

		for (int x = R - 2; x >= 1; x--)
		{
			double		v;

			if (isnan(zr[x]))
				continue;
			v = min3(down[x - 1], down[x], down[x + 1]);
			v = v < row[x + 1] ? v : row[x + 1];
			v = v < row[x] ? v : row[x];
			v = v > zr[x] ? v : zr[x];
			row[x] = v;
			/* a neighbour in this strip after it in the scan, able to fall to v, waits in the FIFO */
			if ((row[x + 1] > v && row[x + 1] > zr[x + 1]) ||
				(own_below && ((down[x - 1] > v && down[x - 1] > zd[x - 1]) ||
							   (down[x] > v && down[x] > zd[x]) ||
							   (down[x + 1] > v && down[x + 1] > zd[x + 1]))))
			{
				if (!fifo_push(ctx, q, (uint32_t) (y * R + x)))
					return false;
			}
		}
	}
	return true;
}

/* Cells of row y falling to a facing row's values (the neighbour strip's). */
static bool
seed_from(const tg_ctx *ctx, const recon *r, int y, const double *facing, cell_fifo *q)
{
	const size_t R = (size_t) r->width;

	if (y < 1 || y > r->height - 2)
		return true;
	for (int x = 1; x < r->width - 1; x++)
		if (!lower(ctx, r, q, y * R + x, min3(facing[x - 1], facing[x], facing[x + 1])))
			return false;
	return true;
}

static tg_status
recon_strip(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	const recon *r = arg;
	const int64_t k = r->todo[task];
	const ptrdiff_t R = r->width;
	const ptrdiff_t nbr[8] = {-R - 1, -R, -R + 1, -1, 1, R - 1, R, R + 1};
	const double *above = r->facing + (size_t) 2 * k * R,
			   *below = above + R;
	cell_fifo	q = {NULL, 0, 0, 0};
	size_t		lo,
				hi,
				steps = 0;
	int			r0,
				r1;
	bool		ok;

	recon_rows(r, k, &r0, &r1);
	lo = (size_t) r0 * R;
	hi = (size_t) r1 * R;
	ok = r->first ? scan_strip(ctx, r, r0, r1, above, below, &q)
		: (r0 == 0 || seed_from(ctx, r, r0, above, &q)) &&
		(r1 == r->height || seed_from(ctx, r, r1 - 1, below, &q));
	/* the FIFO, within the strip: the facing rows are the neighbours' to lower */
	while (ok && q.len > 0)
	{
		const uint32_t c = fifo_pop(&q);
		const double v = r->w[c];

		if (++steps % CANCEL_EVERY == 0 && tg_canceled(ctx))
		{
			fifo_free(ctx, &q);
			return tg_error_set(err, TG_ECANCELED, "fill canceled");
		}
		for (int n = 0; n < 8 && ok; n++)
		{
			const size_t m = c + nbr[n];

			if (m >= lo && m < hi)
				ok = lower(ctx, r, &q, m, v);
		}
	}
	fifo_free(ctx, &q);
	return ok ? TG_OK : tg_error_set(err, TG_ENOMEM, "could not grow the fill's queue");
}

/* Strip k's copy of its facing rows brought up to date; fell[k]: whether they fell. */
static tg_status
facing_strip(const tg_ctx *ctx, void *arg, int64_t k, tg_error *err)
{
	const recon *r = arg;
	const size_t R = (size_t) r->width;
	double	   *f = r->facing + 2 * k * R;
	int			r0,
				r1;
	bool		fell;

	recon_rows(r, k, &r0, &r1);
	fell = facing_row_refresh(f, r0 > 0 ? r->w + (r0 - 1) * R : NULL, R * sizeof(double));
	fell |= facing_row_refresh(f + R, r1 < r->height ? r->w + r1 * R : NULL, R * sizeof(double));
	r->fell[k] = fell;
	return TG_OK;
}

/* Copy every strip's facing rows; list the strips whose facing rows fell (in order). */
static tg_status
recon_facing(const tg_ctx *ctx, recon *r, int *n, tg_error *err)
{
	tg_status	st = tg_parallel(ctx, r->nstrips, facing_strip, r, err);

	*n = 0;
	for (int k = 0; st == TG_OK && k < r->nstrips; k++)
		if (r->fell[k])
			r->todo[(*n)++] = k;
	return st;
}

static tg_status
start_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const recon *r = arg;
	const int	W = r->width,
				H = r->height;

	for (int y = y0; y < y1; y++)
		for (int x = 0; x < W; x++)
		{
			const size_t i = (size_t) y * W + x;

			r->w[i] = isnan(r->z[i]) ? -INFINITY
				: (x == 0 || y == 0 || x == W - 1 || y == H - 1) ? r->z[i] : INFINITY;
		}
	return TG_OK;
}

static tg_status
end_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const recon *r = arg;

	for (size_t i = (size_t) y0 * r->width; i < (size_t) y1 * r->width; i++)
		if (r->w[i] == -INFINITY)
			r->w[i] = NAN;
	return TG_OK;
}

static tg_status
fill_reconstruct(const tg_ctx *ctx, const double *z, int W, int H, double *w, tg_error *err)
{
	recon		r = {z, w, W, H, 1, NULL, NULL, NULL, true};
	int			threads = tg_threads_wanted(ctx);
	int			rounds = 0,
				n;
	tg_status	st;

	/*
	 * How much a strip has to lower in later rounds depends on where its
	 * edges fall, so on many threads, many thin strips spread that uneven
	 * work; on a few, the extra rounds would cost more than they balance.
	 */
	if (threads >= MANY_THREADS)
		threads *= STRIPS_PER_THREAD;
	if (threads > H / MIN_STRIP_ROWS)
		threads = H / MIN_STRIP_ROWS;
	r.nstrips = threads > 1 ? threads : 1;
	st = tg_parallel_rows(ctx, W, H, start_rows, &r, err);
	if (st != TG_OK || W < 3 || H < 3)
		goto done;
	r.facing = tg_alloc(ctx, (size_t) 2 * r.nstrips * W * sizeof(double));
	r.todo = tg_alloc(ctx, r.nstrips * sizeof(int64_t));
	r.fell = tg_alloc(ctx, r.nstrips * sizeof(bool));
	if (r.facing == NULL || r.todo == NULL || r.fell == NULL)
	{
		st = tg_error_set(err, TG_ENOMEM, "could not allocate the fill's strips");
		goto done;
	}
	st = recon_facing(ctx, &r, &n, err);
	for (int k = 0; k < r.nstrips; k++)
		r.todo[k] = k;
	for (n = r.nstrips; st == TG_OK && n > 0; rounds++)
	{
		st = tg_parallel(ctx, n, recon_strip, &r, err);
		r.first = false;
		if (st == TG_OK)
			st = recon_facing(ctx, &r, &n, err);
	}
	if (ctx->stats)
		ctx->stats->iterations = rounds;
done:
	if (st == TG_OK)
		st = tg_parallel_rows(ctx, W, H, end_rows, &r, err);
	tg_free(ctx, r.facing);
	tg_free(ctx, r.todo);
	tg_free(ctx, r.fell);
	return st;
}

/* ------------------------------------------------------------------------
 * Priority-flood with epsilon
 * ------------------------------------------------------------------------ */

/* A flood's start: every outlet (a valid cell on the edge or next to nodata) closed and queued at z. */
static void
flood_outlets(const double *z, int W, int H, uint8_t *closed, tg_heap *pq)
{
	memset(closed, 0, (size_t) W * H);
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++)
		{
			const size_t i = (size_t) y * W + x;

			if (!isnan(z[i]) && tg_cpu_is_outlet(z, W, H, x, y))
			{
				closed[i] = 1;
				tg_heap_push(pq, z[i], (uint32_t) i);
			}
		}
}

static tg_status
fill_priority_flood(const tg_ctx *ctx, const double *z, int W, int H, double eps,
					bool single, double *w, tg_error *err)
{
	const size_t n = (size_t) W * H;
	uint8_t    *closed = tg_alloc(ctx, n ? n : 1);
	tg_heap		pq = {tg_alloc(ctx, (n ? n : 1) * sizeof(tg_heap_item)), 0};
	size_t		processed = 0;
	tg_status	st = TG_OK;

	if (closed == NULL || pq.a == NULL)
	{
		st = tg_error_set(err, TG_ENOMEM, "could not allocate the priority-flood queue (%zu cells)", n);
		goto done;
	}
	memcpy(w, z, n * sizeof(double));
	flood_outlets(z, W, H, closed, &pq);

	while (pq.len > 0)
	{
		const uint32_t c = tg_heap_pop(&pq).i;
		double		level;
		int			cx,
					cy,
					k;

		if (++processed % CANCEL_EVERY == 0 && tg_canceled(ctx))
		{
			st = tg_error_set(err, TG_ECANCELED, "fill canceled");
			goto done;
		}

		level = tg_fill_inc(w[c], eps, single);
		cx = (int) (c % W);
		cy = (int) (c / W);
		for (k = 0; k < 8; k++)
		{
			int			nx = cx + tg_nbr_dx(k),
						ny = cy + tg_nbr_dy(k);
			size_t		ni;

			if (nx < 0 || ny < 0 || nx >= W || ny >= H)
				continue;
			ni = (size_t) ny * W + nx;
			if (closed[ni] || isnan(z[ni]))
				continue;
			closed[ni] = 1;
			if (z[ni] <= level)
				w[ni] = level;
			tg_heap_push(&pq, w[ni], (uint32_t) ni);
		}
	}

done:
	tg_free(ctx, closed);
	tg_free(ctx, pq.a);
	return st;
}

/* ------------------------------------------------------------------------
 * Breaching (Lindsay 2016)
 * ------------------------------------------------------------------------ */

#define NO_LINK UINT32_MAX

/* A pit: valid, not an outlet, no valid neighbour lower. */
static bool
is_pit(const double *z, int W, int H, int x, int y)
{
	const double v = z[(size_t) y * W + x];

	for (int k = 0; k < 8; k++)
	{
		const int	nx = x + tg_nbr_dx(k),
					ny = y + tg_nbr_dy(k);

		if (nx >= 0 && ny >= 0 && nx < W && ny < H && z[(size_t) ny * W + nx] < v)
			return false;
	}
	return !isnan(v) && !tg_cpu_is_outlet(z, W, H, x, y);
}

/*
 * The flood links every cell to the cell it was reached from, which the
 * flood closed before it; a pit, once closed, lowers the cells along its
 * links to its own level (stepping down by dec() with epsilon) until one is
 * already that low.  Only closed cells are lowered, so the flood's order is
 * that of the original elevations.  Every non-outlet cell then has a
 * neighbour strictly lower or, lowered or a pit, its link no higher and
 * closed before it: following those steps ends at an outlet.
 */
static tg_status
breach_depressions(const tg_ctx *ctx, const double *z, int W, int H, double eps, bool single, double *w,
				   tg_error *err)
{
	const size_t n = (size_t) W * H;
	uint32_t   *link = tg_alloc(ctx, (n ? n : 1) * sizeof(uint32_t));
	uint8_t    *closed = tg_alloc(ctx, n ? n : 1);
	tg_heap		pq = {tg_alloc(ctx, (n ? n : 1) * sizeof(tg_heap_item)), 0};
	size_t		processed = 0;
	tg_status	st = TG_OK;

	if (link == NULL || closed == NULL || pq.a == NULL)
	{
		st = tg_error_set(err, TG_ENOMEM, "could not allocate the breaching's flood (%zu cells)", n);
		goto done;
	}
	memcpy(w, z, n * sizeof(double));
	memset(link, 0xFF, n * sizeof(uint32_t));	/* NO_LINK: the outlets keep it */
	flood_outlets(z, W, H, closed, &pq);
	while (pq.len > 0)
	{
		const uint32_t c = tg_heap_pop(&pq).i;
		const int	cx = (int) (c % W),
					cy = (int) (c / W);

		if (++processed % CANCEL_EVERY == 0 && tg_canceled(ctx))
		{
			st = tg_error_set(err, TG_ECANCELED, "breaching canceled");
			goto done;
		}
		if (is_pit(z, W, H, cx, cy))
		{
			double		level = tg_fill_dec(w[c], eps, single);

			for (uint32_t p = link[c]; p != NO_LINK && w[p] > level; p = link[p])
			{
				w[p] = level;
				level = tg_fill_dec(level, eps, single);
			}
		}
		for (int k = 0; k < 8; k++)
		{
			const int	nx = cx + tg_nbr_dx(k),
						ny = cy + tg_nbr_dy(k);
			size_t		ni;

			if (nx < 0 || ny < 0 || nx >= W || ny >= H)
				continue;
			ni = (size_t) ny * W + nx;
			if (closed[ni] || isnan(z[ni]))
				continue;
			closed[ni] = 1;
			link[ni] = c;
			tg_heap_push(&pq, z[ni], (uint32_t) ni);
		}
	}

done:
	tg_free(ctx, link);
	tg_free(ctx, closed);
	tg_free(ctx, pq.a);
	return st;
}

/* ------------------------------------------------------------------------
 * Planchon-Darboux
 * ------------------------------------------------------------------------ */

/* Lower W(i) towards max(Z, min inc(W(n))); true if it changed. */
static inline bool
pd_update(const double *z, double *w, int W, int H, int x, int y, double eps, bool single)
{
	size_t		i = (size_t) y * W + x;
	double		best = w[i];
	int			k;

	for (k = 0; k < 8; k++)
	{
		int			nx = x + tg_nbr_dx(k),
					ny = y + tg_nbr_dy(k);
		double		v;

		if (nx < 0 || ny < 0 || nx >= W || ny >= H)
			continue;
		v = tg_fill_inc(w[(size_t) ny * W + nx], eps, single);
		if (v < best)
			best = v;
	}
	if (best < z[i])
		best = z[i];
	if (best < w[i])
	{
		w[i] = best;
		return true;
	}
	return false;
}

static tg_status
fill_planchon_darboux(const tg_ctx *ctx, const double *z, int W, int H, double eps,
					  bool single, double *w, int *sweeps, tg_error *err)
{
	const size_t n = (size_t) W * H;
	bool		changed = true;
	int			x,
				y;

	for (y = 0; y < H; y++)
		for (x = 0; x < W; x++)
		{
			size_t		i = (size_t) y * W + x;

			w[i] = isnan(z[i]) ? z[i] : tg_cpu_is_outlet(z, W, H, x, y) ? z[i] : INFINITY;
		}

	/* scan directions: rows down/up x columns right/left, alternating */
	for (*sweeps = 0; changed; (*sweeps)++)
	{
		const int	down = (*sweeps & 1) == 0;
		const int	right = (*sweeps & 2) == 0;

		if (tg_canceled(ctx))
			return tg_error_set(err, TG_ECANCELED, "fill canceled");
		changed = false;
		for (y = 0; y < H; y++)
		{
			const int	yy = down ? y : H - 1 - y;

			for (x = 0; x < W; x++)
			{
				const int	xx = right ? x : W - 1 - x;
				size_t		i = (size_t) yy * W + xx;

				if (w[i] > z[i] && pd_update(z, w, W, H, xx, yy, eps, single))
					changed = true;
			}
		}
	}
	(void) n;
	return TG_OK;
}

tg_status
tg_cpu_fill_surface(const tg_ctx *ctx, const double *z, int W, int H,
					tg_fill_method method, double eps, bool single, double *w,
					tg_error *err)
{
	int			sweeps = 0;
	tg_status	st;

	if (method == TG_FILL_PLANCHON_DARBOUX)
	{
		st = fill_planchon_darboux(ctx, z, W, H, eps, single, w, &sweeps, err);
		if (ctx->stats)
			ctx->stats->iterations = sweeps;
	}
	else if (method == TG_FILL_BREACH)
		st = breach_depressions(ctx, z, W, H, eps, single, w, err);
	else if (eps > 0)
		st = fill_priority_flood(ctx, z, W, H, eps, single, w, err);
	else
		st = fill_reconstruct(ctx, z, W, H, w, err);
	return st;
}

/* The filled surface into the output's type, nodata as out_nodata */
typedef struct output_job
{
	const double *w;
	void	   *out;
	bool		single;
	double		nodata;
	int			width;
} output_job;

static tg_status
output_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const output_job *o = arg;

	for (size_t i = (size_t) y0 * o->width; i < (size_t) y1 * o->width; i++)
	{
		double		v = isnan(o->w[i]) ? o->nodata : o->w[i];

		if (o->single)
			((float *) o->out)[i] = (float) v;
		else
			((double *) o->out)[i] = v;
	}
	return TG_OK;
}

tg_status
tg_cpu_fill(const tg_ctx *ctx, const tg_band *dem, const tg_fill_params *params,
			double out_nodata, void *out, tg_error *err)
{
	const size_t n = (size_t) dem->width * dem->height;
	const bool	single = params->out_type == TG_PT_32BF;
	double	   *z = NULL;
	double	   *w = NULL;
	tg_status	st;

	st = tg_cpu_decode(ctx, dem, &z, err);
	if (st != TG_OK)
		return st;
	w = tg_alloc(ctx, (n ? n : 1) * sizeof(double));
	if (w == NULL)
	{
		tg_free(ctx, z);
		return tg_error_set(err, TG_ENOMEM, "could not allocate %zu bytes for the filled DEM",
							n * sizeof(double));
	}
	st = tg_cpu_fill_surface(ctx, z, dem->width, dem->height, params->method,
							 params->epsilon, single, w, err);
	if (st == TG_OK)
	{
		output_job	o = {w, out, single, out_nodata, dem->width};

		st = tg_parallel_rows(ctx, dem->width, dem->height, output_rows, &o, err);
	}
	tg_free(ctx, z);
	tg_free(ctx, w);
	return st;
}
