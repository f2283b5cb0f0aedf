/*
 * fill_cpu.c — depression filling on the CPU.
 *
 * Both methods compute the same surface (tg_core.h, tg_fill):
 *   W(c) = max(Z(c), min_n inc(W(n)))  for valid non-outlet cells, W = Z at outlets.
 *
 * priority-flood  Barnes, Lehman & Mulla (2014): grow inwards from the outlets
 *                 in order of W; a neighbour first reached from c gets
 *                 max(Z, inc(W(c))).  Without epsilon, cells raised to the
 *                 current level go through a plain FIFO queue instead of the
 *                 heap (their "improved" variant), which keeps most cells off
 *                 the heap.
 * planchon-darboux  Planchon & Darboux (2001): start from W = +inf off the
 *                 outlets and lower cells in place, scanning the grid in
 *                 alternating directions until a scan changes nothing.
 */
#include "tg_backends.h"
#include "tg_heap.h"
#include "tg_hydro.h"

#include <math.h>
#include <string.h>

#define CANCEL_EVERY 65536

/* ------------------------------------------------------------------------
 * Shared helpers
 * ------------------------------------------------------------------------ */

/* Decode the band into doubles, nodata as NaN. */
tg_status
tg_cpu_decode(const tg_ctx *ctx, const tg_band *dem, double **z, tg_error *err)
{
	size_t		n = (size_t) dem->width * dem->height;
	int			y;

	*z = tg_alloc(ctx, (n ? n : 1) * sizeof(double));
	if (*z == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate %zu bytes for the DEM",
							n * sizeof(double));
	for (y = 0; y < dem->height; y++)
		tg_band_row_to_f64(dem, y, *z + (size_t) y * dem->width);
	return TG_OK;
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
 * Priority-flood
 * ------------------------------------------------------------------------ */

static tg_status
fill_priority_flood(const tg_ctx *ctx, const double *z, int W, int H, double eps,
					bool single, double *w, tg_error *err)
{
	const size_t n = (size_t) W * H;
	uint8_t    *closed = tg_alloc(ctx, n ? n : 1);
	tg_heap		pq = {tg_alloc(ctx, (n ? n : 1) * sizeof(tg_heap_item)), 0};
	uint32_t   *pit = tg_alloc(ctx, (n ? n : 1) * sizeof(uint32_t));
	size_t		pit_head = 0,
				pit_tail = 0;
	size_t		processed = 0;
	tg_status	st = TG_OK;
	int			x,
				y;

	if (closed == NULL || pq.a == NULL || pit == NULL)
	{
		st = tg_error_set(err, TG_ENOMEM, "could not allocate the priority-flood queues (%zu cells)", n);
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

	while (pit_head < pit_tail || pq.len > 0)
	{
		uint32_t	c;
		double		level;
		int			cx,
					cy,
					k;

		if (pit_head < pit_tail)
			c = pit[pit_head++];
		else
			c = tg_heap_pop(&pq).i;
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
			{
				w[ni] = level;
				/* same level as the heap's minimum only without epsilon */
				if (eps > 0)
					tg_heap_push(&pq, level, (uint32_t) ni);
				else
					pit[pit_tail++] = (uint32_t) ni;
			}
			else
				tg_heap_push(&pq, w[ni], (uint32_t) ni);
		}
	}

done:
	tg_free(ctx, closed);
	tg_free(ctx, pq.a);
	tg_free(ctx, pit);
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
