/*
 * route_cpu.c — the routing of every cell: where its water goes.
 *
 * 1. The routing surface: the DEM, depression-filled (priority-flood,
 *    epsilon 0) unless the caller routes on the raw DEM.
 * 2. Cells with a lower neighbour drain by the routing's formula on the
 *    surface's gradients (tg_hydro.h).  Outlets with no lower neighbour pass
 *    their water off the raster.
 * 3. Flat cells (no lower neighbour, not outlets) are drained over the flat
 *    by Barnes, Lehman & Mulla (2014): a breadth-first gradient towards the
 *    flat's draining edge T, and one away from higher terrain A, combined as
 *    M = 2 T + (H - A) with H the largest A of the flat; water on a flat moves
 *    down M, which strictly decreases to the draining edge, so every flat that
 *    touches a draining cell drains.  Flats with no draining edge (only in an
 *    unfilled DEM) keep no direction.
 */
#include "tg_backends.h"
#include "tg_hydro.h"

#include <math.h>
#include <string.h>

void
tg_route_free(const tg_ctx *ctx, tg_route *r)
{
	tg_free(ctx, r->z);
	tg_free(ctx, r->d8);
	tg_free(ctx, r->frac);
	memset(r, 0, sizeof *r);
}

/* Neighbour k of cell (x, y), or -1 outside the raster. */
static inline int64_t
neighbour(int W, int H, int x, int y, int k)
{
	int			nx = x + tg_nbr_dx(k),
				ny = y + tg_nbr_dy(k);

	return (nx < 0 || ny < 0 || nx >= W || ny >= H) ? -1 : (int64_t) ny * W + nx;
}

/* Cells visited between two polls of the cancel callback. */
#define CANCEL_EVERY (1u << 20)

/* Multi-source breadth-first distance over the flat cells of one elevation;
 * false when canceled. */
static bool
flat_bfs(const tg_ctx *ctx, const double *z, const uint8_t *flat, int W, int H, int32_t *dist,
		 uint32_t *queue, size_t head, size_t tail)
{
	while (head < tail)
	{
		uint32_t	c = queue[head++];
		int			cx = (int) (c % W),
					cy = (int) (c / W),
					k;

		if (head % CANCEL_EVERY == 0 && tg_canceled(ctx))
			return false;

		for (k = 0; k < 8; k++)
		{
			int64_t		ni = neighbour(W, H, cx, cy, k);

			if (ni < 0 || !flat[ni] || dist[ni] != 0 || z[ni] != z[c])
				continue;
			dist[ni] = dist[c] + 1;
			queue[tail++] = (uint32_t) ni;
		}
	}
	return true;
}

#define CHECK_CANCELED(ctx) \
	do { \
		if (tg_canceled(ctx)) \
		{ \
			st = tg_error_set(err, TG_ECANCELED, "flow routing canceled"); \
			goto done; \
		} \
	} while (0)

/*
 * The flat mask M (0 off flats).  flat[i]: i is a flat cell; a cell next to a
 * flat cell of equal elevation that is not flat itself drains.
 */
static tg_status
flat_mask(const tg_ctx *ctx, const double *z, const uint8_t *flat, int W, int H,
		  int32_t *mask, tg_error *err)
{
	const size_t n = (size_t) W * H;
	int32_t    *away = tg_alloc(ctx, (n ? n : 1) * sizeof(int32_t));
	int32_t    *label = tg_alloc(ctx, (n ? n : 1) * sizeof(int32_t));
	uint32_t   *queue = tg_alloc(ctx, (n ? n : 1) * sizeof(uint32_t));
	int32_t    *height = NULL;
	size_t		tail = 0;
	int32_t		nlabels = 0;
	tg_status	st = TG_OK;
	size_t		i;
	int			k;

	if (away == NULL || label == NULL || queue == NULL)
	{
		st = tg_error_set(err, TG_ENOMEM, "could not allocate flat-resolution buffers (%zu cells)", n);
		goto done;
	}
	memset(mask, 0, n * sizeof(int32_t));
	memset(away, 0, n * sizeof(int32_t));
	memset(label, 0, n * sizeof(int32_t));

	/* towards lower terrain: seeds next to a draining cell of equal elevation */
	for (i = 0; i < n; i++)
	{
		int			x = (int) (i % W),
					y = (int) (i / W);

		if (i % CANCEL_EVERY == 0)
			CHECK_CANCELED(ctx);
		if (!flat[i])
			continue;
		for (k = 0; k < 8; k++)
		{
			int64_t		ni = neighbour(W, H, x, y, k);

			if (ni >= 0 && !flat[ni] && z[ni] == z[i])
			{
				mask[i] = 1;
				queue[tail++] = (uint32_t) i;
				break;
			}
		}
	}
	if (!flat_bfs(ctx, z, flat, W, H, mask, queue, 0, tail))
		CHECK_CANCELED(ctx);
	CHECK_CANCELED(ctx);

	/* away from higher terrain: seeds next to a strictly higher valid cell */
	tail = 0;
	for (i = 0; i < n; i++)
	{
		int			x = (int) (i % W),
					y = (int) (i / W);

		if (i % CANCEL_EVERY == 0)
			CHECK_CANCELED(ctx);
		if (!flat[i])
			continue;
		for (k = 0; k < 8; k++)
		{
			int64_t		ni = neighbour(W, H, x, y, k);

			if (ni >= 0 && z[ni] > z[i])
			{
				away[i] = 1;
				queue[tail++] = (uint32_t) i;
				break;
			}
		}
	}
	if (!flat_bfs(ctx, z, flat, W, H, away, queue, 0, tail))
		CHECK_CANCELED(ctx);
	CHECK_CANCELED(ctx);

	/* label the flats (connected flat cells of equal elevation) */
	for (i = 0; i < n; i++)
	{
		size_t		head = 0;

		if (i % CANCEL_EVERY == 0)
			CHECK_CANCELED(ctx);
		if (!flat[i] || label[i] != 0)
			continue;
		label[i] = ++nlabels;
		tail = 0;
		queue[tail++] = (uint32_t) i;
		while (head < tail)
		{
			uint32_t	c = queue[head++];

			for (k = 0; k < 8; k++)
			{
				int64_t		ni = neighbour(W, H, (int) (c % W), (int) (c / W), k);

				if (ni >= 0 && flat[ni] && label[ni] == 0 && z[ni] == z[c])
				{
					label[ni] = nlabels;
					queue[tail++] = (uint32_t) ni;
				}
			}
		}
	}
	height = tg_alloc(ctx, ((size_t) nlabels + 1) * sizeof(int32_t));
	if (height == NULL)
	{
		st = tg_error_set(err, TG_ENOMEM, "could not allocate flat heights (%d flats)", nlabels);
		goto done;
	}
	memset(height, 0, ((size_t) nlabels + 1) * sizeof(int32_t));
	for (i = 0; i < n; i++)
		if (flat[i] && away[i] > height[label[i]])
			height[label[i]] = away[i];
	CHECK_CANCELED(ctx);

	/* combine: undrained flat cells (towards == 0) keep mask 0 */
	for (i = 0; i < n; i++)
		if (flat[i] && mask[i] > 0)
			mask[i] = 2 * mask[i] + (away[i] > 0 ? height[label[i]] - away[i] : 0);

done:
	tg_free(ctx, away);
	tg_free(ctx, label);
	tg_free(ctx, queue);
	tg_free(ctx, height);
	return st;
}

/*
 * Flat cells: valid, no valid neighbour strictly lower, not an outlet (the
 * edge or next to nodata).  tg_cpu_route_surface finds them in its gradient
 * pass by the same rule; the banded routing's tests hold the two together.
 */
void
tg_cpu_flat_cells(const double *z, int W, int H, uint8_t *flat)
{
	int			x,
				y,
				k;

	for (y = 0; y < H; y++)
		for (x = 0; x < W; x++)
		{
			size_t		i = (size_t) y * W + x;
			bool		lower = false;

			flat[i] = 0;
			if (isnan(z[i]))
				continue;
			for (k = 0; k < 8 && !lower; k++)
			{
				int64_t		ni = neighbour(W, H, x, y, k);

				lower = ni >= 0 && z[ni] < z[i];
			}
			flat[i] = !lower && !tg_cpu_is_outlet(z, W, H, x, y);
		}
}

tg_status
tg_cpu_route_build(const tg_ctx *ctx, const tg_band *dem, const tg_flow_params *p,
				   tg_route *r, tg_error *err)
{
	const size_t n = (size_t) dem->width * dem->height;
	double	   *z;
	tg_status	st;

	st = tg_cpu_decode(ctx, dem, &z, err);
	if (st != TG_OK)
		return st;
	if (p->fill)
	{
		double	   *w = tg_alloc(ctx, (n ? n : 1) * sizeof(double));

		if (w == NULL)
		{
			tg_free(ctx, z);
			return tg_error_set(err, TG_ENOMEM, "could not allocate %zu bytes for the filled DEM",
								n * sizeof(double));
		}
		st = tg_cpu_fill_surface(ctx, z, dem->width, dem->height, TG_FILL_PRIORITY_FLOOD, 0,
								 false, w, err);
		tg_free(ctx, z);
		if (st != TG_OK)
		{
			tg_free(ctx, w);
			return st;
		}
		z = w;
	}
	return tg_cpu_route_surface(ctx, z, dem->width, dem->height, p, NULL, r, err);
}

tg_status
tg_cpu_route_surface(const tg_ctx *ctx, double *z, int W, int H, const tg_flow_params *p,
					 const tg_flat_masks *given, tg_route *r, tg_error *err)
{
	const size_t n = (size_t) W * H;
	const bool	multiple = p->routing != TG_ROUTE_D8;
	const double flat_exponent = p->routing == TG_ROUTE_MFD_MD ? 1.1 : p->exponent;
	uint8_t    *flat = NULL;
	int32_t    *mask = NULL;
	tg_status	st;
	int			x,
				y,
				k;

	memset(r, 0, sizeof *r);
	r->width = W;
	r->height = H;
	r->routing = p->routing;
	r->z = z;

	r->d8 = tg_alloc(ctx, n ? n : 1);
	flat = tg_alloc(ctx, n ? n : 1);
	mask = tg_alloc(ctx, (n ? n : 1) * sizeof(int32_t));
	if (multiple)
		r->frac = tg_alloc(ctx, (n ? 8 * n : 1) * sizeof(float));
	if (r->d8 == NULL || flat == NULL || mask == NULL || (multiple && r->frac == NULL))
	{
		st = tg_error_set(err, TG_ENOMEM, "could not allocate flow-routing buffers (%zu cells)", n);
		goto fail;
	}
	if (multiple)
		memset(r->frac, 0, 8 * n * sizeof(float));

	/* slopes on the surface; flat cells as tg_cpu_flat_cells finds them */
	for (y = 0; y < H; y++)
	{
		double		dx,
					dy,
					dist[8];

		if (y % 256 == 0 && tg_canceled(ctx))
		{
			st = tg_error_set(err, TG_ECANCELED, "flow routing canceled");
			goto fail;
		}
		tg_row_spacing(&p->geom, y, &dx, &dy);
		tg_nbr_distances(dx, dy, dist);
		for (x = 0; x < W; x++)
		{
			size_t		i = (size_t) y * W + x;
			double		g[8];
			int			lower = 0;

			flat[i] = 0;
			r->d8[i] = TG_NO_DIRECTION;
			if (isnan(r->z[i]))
				continue;
			for (k = 0; k < 8; k++)
			{
				int64_t		ni = neighbour(W, H, x, y, k);

				g[k] = (ni < 0 || isnan(r->z[ni])) ? 0.0 : (r->z[i] - r->z[ni]) / dist[k];
				lower |= g[k] > 0;
			}
			if (!lower)
			{
				/* outlets pass their water off the raster */
				flat[i] = !tg_cpu_is_outlet(r->z, W, H, x, y);
				continue;
			}
			r->d8[i] = (uint8_t) tg_d8_choose(g);
			if (multiple)
			{
				float		share[8];

				tg_mfd_shares(g, p->routing == TG_ROUTE_MFD_MD, p->exponent, share);
				for (k = 0; k < 8; k++)
					r->frac[(size_t) k * n + i] = share[k];
			}
		}
	}

	/* flats: drain down the mask, in cell units */
	st = flat_mask(ctx, r->z, flat, W, H, mask, err);
	if (st != TG_OK)
		goto fail;
	if (given)
		for (size_t j = 0; j < given->count; j++)
			mask[given->cell[j]] = given->mask[j];
	for (y = 0; y < H; y++)
	{
		if (y % 256 == 0 && tg_canceled(ctx))
		{
			st = tg_error_set(err, TG_ECANCELED, "flow routing canceled");
			goto fail;
		}
		for (x = 0; x < W; x++)
		{
			size_t		i = (size_t) y * W + x;
			double		g[8];

			if (!flat[i] || mask[i] == 0)
				continue;
			for (k = 0; k < 8; k++)
			{
				int64_t		ni = neighbour(W, H, x, y, k);
				int32_t		m;

				g[k] = 0;
				if (ni < 0 || r->z[ni] != r->z[i])
					continue;
				m = flat[ni] ? mask[ni] : 0;
				if (flat[ni] && m == 0)
					continue;	/* an undrained flat cannot receive */
				g[k] = (double) (mask[i] - m) / ((k & 1) ? M_SQRT2 : 1.0);
			}
			r->d8[i] = (uint8_t) tg_d8_choose(g);
			if (multiple)
			{
				float		share[8];

				tg_mfd_shares(g, false, flat_exponent, share);
				for (k = 0; k < 8; k++)
					r->frac[(size_t) k * n + i] = share[k];
			}
		}
	}

	tg_free(ctx, flat);
	tg_free(ctx, mask);
	return TG_OK;

fail:
	tg_free(ctx, flat);
	tg_free(ctx, mask);
	tg_route_free(ctx, r);
	return st;
}
