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
 *                 memory in order where a priority queue jumps about, on the
 *                 call's threads (fill_recon.h); beyond memory, the flood of
 *                 fill_flood.c strip by strip (scale/seams/).  The surface
 *                 is unique: every way gives the same bits.  With
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
#include "hydro/fill/fill.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * Without epsilon: reconstruction by erosion (fill_recon.h), in float where
 * that holds every DEM value, in double otherwise
 * ------------------------------------------------------------------------ */

/* Fewest rows of a block: thinner ones cost more rounds than they save. */
#define MIN_BLOCK_ROWS 64
#define MANY_THREADS 8
#define BLOCKS_PER_THREAD 8

#define RECON_T float
#define RECON_PT TG_PT_32BF
#define RECON_DECODE tg_band_row_to_f32
#define RECON(name) name##_f32
#include "hydro/fill/fill_recon.h"
#undef RECON_T
#undef RECON_PT
#undef RECON_DECODE
#undef RECON

#define RECON_T double
#define RECON_PT TG_PT_64BF
#define RECON_DECODE tg_band_row_to_f64
#define RECON(name) name##_f64
#include "hydro/fill/fill_recon.h"
#undef RECON_T
#undef RECON_PT
#undef RECON_DECODE
#undef RECON

/* ------------------------------------------------------------------------
 * Shared helpers
 * ------------------------------------------------------------------------ */

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

		if (++processed % TG_CANCEL_EVERY == 0 && tg_canceled(ctx))
		{
			st = tg_error_set(err, TG_ECANCELED, "fill canceled");
			goto done;
		}

		level = tg_fill_inc(w[c], eps, single);
		cx = (int) (c % W);
		cy = (int) (c / W);
		for (k = 0; k < 8; k++)
		{
			const int64_t ni = tg_nbr_cell(W, H, cx, cy, k);

			if (ni < 0)
				continue;
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

		if (++processed % TG_CANCEL_EVERY == 0 && tg_canceled(ctx))
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
			const int64_t ni = tg_nbr_cell(W, H, cx, cy, k);

			if (ni < 0)
				continue;
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

/* The surface of the methods that work in doubles (all but the fill without epsilon). */
static tg_status
fill_surface(const tg_ctx *ctx, const double *z, int W, int H, tg_fill_method method,
			 double eps, bool single, double *w, tg_error *err)
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
	else
		st = fill_priority_flood(ctx, z, W, H, eps, single, w, err);
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

	if (params->method == TG_FILL_PRIORITY_FLOOD && params->epsilon == 0)
		return tg_pixtype_exact_in_f32(dem->pixtype)
			? fill_band_f32(ctx, dem, params->out_type, out_nodata, out, err)
			: fill_band_f64(ctx, dem, params->out_type, out_nodata, out, err);
	st = tg_band_decode(ctx, dem, &z, err);
	if (st != TG_OK)
		return st;
	w = tg_alloc(ctx, (n ? n : 1) * sizeof(double));
	if (w == NULL)
	{
		tg_free(ctx, z);
		return tg_error_set(err, TG_ENOMEM, "could not allocate %zu bytes for the filled DEM",
							n * sizeof(double));
	}
	st = fill_surface(ctx, z, dem->width, dem->height, params->method, params->epsilon,
					  single, w, err);
	if (st == TG_OK)
	{
		band_job_f64 o = {.dem = dem, .w = w, .out = out, .out_single = single, .out_nodata = out_nodata};

		st = tg_parallel_rows(ctx, dem->width, dem->height, output_rows_f64, &o, err);
	}
	tg_free(ctx, z);
	tg_free(ctx, w);
	return st;
}
