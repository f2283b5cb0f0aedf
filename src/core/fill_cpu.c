/*
 * fill_cpu.c — depression filling on the CPU.
 *
 * Both methods compute the same surface (tg_core.h, tg_fill):
 *   W(c) = max(Z(c), min_n inc(W(n)))  for valid non-outlet cells, W = Z at outlets.
 *
 * priority-flood  Without epsilon: the flood of fill_flood.c, over the whole
 *                 grid on one thread or, with more, in bands of rows flooded
 *                 at once and joined by their label graph (Barnes 2016, in
 *                 memory).  With epsilon: Barnes, Lehman & Mulla (2014)'s
 *                 priority-flood with the rise added at each step (one
 *                 thread: the rise depends on the order cells are reached).
 * planchon-darboux  Planchon & Darboux (2001): start from W = +inf off the
 *                 outlets and lower cells in place, scanning the grid in
 *                 alternating directions until a scan changes nothing (one
 *                 thread: each scan reads the values it has just written).
 */
#include "tg_backends.h"
#include "fill_flood.h"
#include "tg_heap.h"
#include "tg_hydro.h"
#include "tg_pool.h"

#include <math.h>
#include <string.h>

#define CANCEL_EVERY 65536

/* A band holds at least this many rows: thinner ones add more label graph than they save. */
#define MIN_BAND_ROWS 64

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
 * Priority-flood without epsilon, in bands on the call's threads
 * ------------------------------------------------------------------------ */
typedef struct band_fill
{
	const double *z;
	int			width;
	int			height;
	int			nbands;
	double	   *w;
	uint32_t   *label;			/* NULL with one band */
	tg_label_graph **graphs;	/* one per band */
	const double *level;		/* per label, once solved */
} band_fill;

static void
band_rows(const band_fill *b, int64_t k, int *r0, int *r1)
{
	*r0 = (int) ((int64_t) b->height * k / b->nbands);
	*r1 = (int) ((int64_t) b->height * (k + 1) / b->nbands);
}

static tg_status
flood_band(const tg_ctx *ctx, void *arg, int64_t k, tg_error *err)
{
	const band_fill *b = arg;
	const size_t W = (size_t) b->width;
	int			r0,
				r1;
	tg_flood	f;

	band_rows(b, k, &r0, &r1);
	memset(&f, 0, sizeof f);
	f.width = b->width;
	f.nrows = r1 - r0;
	f.z = b->z + r0 * W;
	f.above = r0 > 0;
	f.below = r1 < b->height;
	f.lf = b->w + r0 * W;
	if (b->label)
	{
		f.label = b->label + r0 * W;
		f.top_base = r0 > 0 ? (uint32_t) (1 + 2 * k * W) : 0;
		f.bottom_base = r1 < b->height ? (uint32_t) (1 + 2 * k * W + W) : 0;
		f.graph = b->graphs[k];
	}
	return tg_flood_run(ctx, &f, err);
}

/* W = max(lf, level(label)) */
static tg_status
finish_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const band_fill *b = arg;

	for (size_t i = (size_t) y0 * b->width; i < (size_t) y1 * b->width; i++)
		if (!isnan(b->w[i]) && b->w[i] < b->level[b->label[i]])
			b->w[i] = b->level[b->label[i]];
	return TG_OK;
}

/*
 * Bands of one flood each: a few per thread, so that threads done with
 * easy bands take more (the surface is unique: the number of bands changes
 * no value); one with one thread; none thinner than MIN_BAND_ROWS.
 */
#define BANDS_PER_THREAD 4

static int
fill_bands(const tg_ctx *ctx, int W, int H)
{
	const int	threads = tg_threads_wanted(ctx);
	int64_t		nb = threads > 1 ? (int64_t) BANDS_PER_THREAD * threads : 1;

	if (nb > H / MIN_BAND_ROWS)
		nb = H / MIN_BAND_ROWS;
	if ((uint64_t) (2 * nb + 1) * (uint64_t) W >= UINT32_MAX)
		nb = 1;
	return nb < 1 ? 1 : (int) nb;
}

static tg_status
fill_flooded(const tg_ctx *ctx, const double *z, int W, int H, double *w, tg_error *err)
{
	const size_t n = (size_t) W * H;
	band_fill	b = {z, W, H, fill_bands(ctx, W, H), w, NULL, NULL, NULL};
	double	   *level = NULL;
	tg_status	st = TG_OK;

	if (b.nbands == 1)
		return flood_band(ctx, &b, 0, err);
	b.label = tg_alloc(ctx, n * sizeof(uint32_t));
	b.graphs = tg_alloc(ctx, b.nbands * sizeof(tg_label_graph *));
	if (b.label == NULL || b.graphs == NULL)
		st = tg_error_set(err, TG_ENOMEM, "could not allocate the fill's labels (%zu cells)", n);
	else
		memset(b.graphs, 0, b.nbands * sizeof(tg_label_graph *));
	for (int k = 0; st == TG_OK && k < b.nbands; k++)
		st = tg_label_graph_create(ctx, &b.graphs[k], err);
	if (st == TG_OK)
		st = tg_parallel(ctx, b.nbands, flood_band, &b, err);
	/* join the bands' facing rows, then solve over every band's edges */
	for (int k = 1; st == TG_OK && k < b.nbands; k++)
	{
		int			r0,
					r1;

		band_rows(&b, k, &r0, &r1);
		st = tg_label_graph_join_rows(ctx, b.graphs[k], W, b.label + (size_t) (r0 - 1) * W,
									  z + (size_t) (r0 - 1) * W, b.label + (size_t) r0 * W,
									  z + (size_t) r0 * W, err);
	}
	if (st == TG_OK)
		st = tg_label_graph_solve(ctx, b.graphs, b.nbands, 1 + (size_t) 2 * b.nbands * W, &level, err);
	if (st == TG_OK)
	{
		b.level = level;
		st = tg_parallel_rows(ctx, W, H, finish_rows, &b, err);
	}
	for (int k = 0; b.graphs && k < b.nbands; k++)
		tg_label_graph_free(ctx, b.graphs[k]);
	tg_free(ctx, b.graphs);
	tg_free(ctx, b.label);
	tg_free(ctx, level);
	return st;
}

/* ------------------------------------------------------------------------
 * Priority-flood with epsilon
 * ------------------------------------------------------------------------ */

static tg_status
fill_priority_flood(const tg_ctx *ctx, const double *z, int W, int H, double eps,
					bool single, double *w, tg_error *err)
{
	const size_t n = (size_t) W * H;
	uint8_t    *closed = tg_alloc(ctx, n ? n : 1);
	tg_heap		pq = {tg_alloc(ctx, (n ? n : 1) * sizeof(tg_heap_item)), 0};
	size_t		processed = 0;
	tg_status	st = TG_OK;
	int			x,
				y;

	if (closed == NULL || pq.a == NULL)
	{
		st = tg_error_set(err, TG_ENOMEM, "could not allocate the priority-flood queue (%zu cells)", n);
		goto done;
	}
	memset(closed, 0, n);
	memcpy(w, z, n * sizeof(double));

	for (y = 0; y < H; y++)
		for (x = 0; x < W; x++)
		{
			size_t		i = (size_t) y * W + x;

			if (!isnan(z[i]) && tg_cpu_is_outlet(z, W, H, x, y))
			{
				closed[i] = 1;
				tg_heap_push(&pq, w[i], (uint32_t) i);
			}
		}

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
	else if (eps > 0)
		st = fill_priority_flood(ctx, z, W, H, eps, single, w, err);
	else
		st = fill_flooded(ctx, z, W, H, w, err);
	return st;
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
	size_t		i;

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
		for (i = 0; i < n; i++)
		{
			double		v = isnan(w[i]) ? out_nodata : w[i];

			if (single)
				((float *) out)[i] = (float) v;
			else
				((double *) out)[i] = v;
		}
	tg_free(ctx, z);
	tg_free(ctx, w);
	return st;
}
