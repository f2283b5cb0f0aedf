/*
 * viewshed.h — viewsheds (viewshed/): the R2 viewshed's geometry shared by
 * the CPU walk and the CUDA kernel (the analysis window, its rays, the
 * nearest-ray rule, the terrain samples and the per-cell decision, in the
 * same arithmetic on both backends: exact integer tests, no fused
 * multiply-add, so both decide every cell identically), and the CPU side
 * (viewshed_cpu.c).  Internal to the core and cuda/.
 */
#ifndef TG_VIEWSHED_H
#define TG_VIEWSHED_H

#include "raster/raster.h"

/*
 * Rays per edge cell.  Two rays a cell halve the gap between neighbouring
 * rays (the nearest ray passes within a quarter cell of a cell's centre at
 * its major coordinate) for twice the work; measured against R3 on hilltop
 * observers, see bench/RESULTS.md.
 */
#ifndef TG_VIEW_RAY_DENSITY
#define TG_VIEW_RAY_DENSITY 2
#endif

typedef struct tg_view_setup
{
	int			width;
	int			height;
	int			ox;				/* observer cell */
	int			oy;
	int			x0;				/* analysis window, inclusive */
	int			y0;
	int			x1;
	int			y1;
	int			nrays;			/* points on the window's edge, f per cell */
	int			density;		/* f: rays per edge cell */
	double		eye;			/* observer's eye elevation */
	double		target;
	double		cx;				/* spacing, metres (map units) */
	double		cy;
	double		re;				/* effective Earth radius, 0 = flat */
	double		max_d2;			/* squared range, INFINITY = unlimited */
	tg_view_output output;
} tg_view_setup;

/* The spacing at the observer, metres (map units): the grid's, or on a geographic one its row's. */
static inline void
tg_view_spacing(const tg_viewshed_params *p, double *cx, double *cy)
{
	*cx = p->cell_x;
	*cy = p->cell_y;
	if (p->geom.geographic)
		tg_row_spacing(&p->geom, p->observer_row, cx, cy);
}

/*
 * The cells an observer's rays read and decide, [x0, x1] x [y0, y1] of a W x
 * H grid: the square within max_distance (cx, cy: the spacing at the
 * observer), clipped to the grid, or the whole grid where unlimited.
 */
static inline void
tg_view_window(const tg_viewshed_params *p, int W, int H, double cx, double cy, int *x0, int *y0, int *x1,
			   int *y1)
{
	const int	ox = p->observer_col,
				oy = p->observer_row;

	*x0 = 0;
	*y0 = 0;
	*x1 = W - 1;
	*y1 = H - 1;
	if (p->max_distance > 0 && isfinite(p->max_distance))
	{
		/* the square of cells within max_distance: rays end on its edge */
		const double rx = ceil(p->max_distance / cx),
					ry = ceil(p->max_distance / cy);

		*x0 = rx < ox ? ox - (int) rx : 0;
		*y0 = ry < oy ? oy - (int) ry : 0;
		*x1 = rx < W - 1 - ox ? ox + (int) rx : W - 1;
		*y1 = ry < H - 1 - oy ? oy + (int) ry : H - 1;
	}
}

/*
 * The window, rays and eye of a call (z: the decoded DEM, or NULL to read the
 * observer's cell from the band), and the host-side finish both backends
 * share: the observer's own cell, slopes to degrees for `angle`
 * (tg_view_finish_rows: rows [y0, y1) only).
 */
static inline tg_status
tg_view_prepare(const tg_band *dem, const tg_viewshed_params *p, const double *z,
				tg_view_setup *s, tg_error *err)
{
	const int	W = dem->width,
				H = dem->height;
	double		zo,
				cx,
				cy;

	if (p->observer_col < 0 || p->observer_col >= W || p->observer_row < 0 || p->observer_row >= H)
		return tg_error_set(err, TG_EINVAL, "the observer (column %d, row %d, counting from 1) is outside the %d x %d raster",
							p->observer_col + 1, p->observer_row + 1, W, H);
	if (!(p->observer_height >= 0) || !(p->target_height >= 0) || !isfinite(p->observer_height) ||
		!isfinite(p->target_height))
		return tg_error_set(err, TG_EINVAL, "observer and target heights must be finite and >= 0, got %g and %g",
							p->observer_height, p->target_height);
	if (!(p->max_distance >= 0))
		return tg_error_set(err, TG_EINVAL, "max_distance must be positive, got %g", p->max_distance);
	if (!(p->earth_radius >= 0) || !(p->refraction >= 0 && p->refraction < 1))
		return tg_error_set(err, TG_EINVAL, "earth_radius must be >= 0 and refraction in [0, 1), got %g and %g",
							p->earth_radius, p->refraction);
	tg_view_spacing(p, &cx, &cy);
	if (!(cx > 0) || !(cy > 0) || !isfinite(cx) || !isfinite(cy))
		return tg_error_set(err, TG_EINVAL, "cell size must be positive, got %g x %g", cx, cy);

	memset(s, 0, sizeof *s);
	s->width = W;
	s->height = H;
	s->ox = p->observer_col;
	s->oy = p->observer_row;
	tg_view_window(p, W, H, cx, cy, &s->x0, &s->y0, &s->x1, &s->y1);
	s->max_d2 = p->max_distance > 0 && isfinite(p->max_distance) ? p->max_distance * p->max_distance : INFINITY;
	{
		int			w = s->x1 - s->x0 + 1,
					h = s->y1 - s->y0 + 1;

		s->density = TG_VIEW_RAY_DENSITY;
		w = s->density * (w - 1) + 1;
		h = s->density * (h - 1) + 1;
		s->nrays = (w == 1 || h == 1) ? w * h : 2 * w + 2 * h - 4;
	}
	zo = z ? z[(size_t) s->oy * W + s->ox] : tg_band_get(dem, (size_t) s->oy * W + s->ox);
	if (isnan(zo) || tg_band_value_is_nodata(dem, zo))
		return tg_error_set(err, TG_EINVAL, "the observer stands on a nodata cell (column %d, row %d, counting from 1)",
							s->ox + 1, s->oy + 1);
	s->eye = zo + p->observer_height;
	s->target = p->target_height;
	s->cx = cx;
	s->cy = cy;
	s->re = p->earth_radius > 0 ? p->earth_radius / (1.0 - p->refraction) : 0.0;
	s->output = p->output;
	return TG_OK;
}

static inline void
tg_view_finish_rows(const tg_view_setup *s, float *out, int y0, int y1)
{
	if (s->oy >= y0 && s->oy < y1)
		out[(size_t) s->oy * s->width + s->ox] = s->output == TG_VIEW_VISIBLE ? 1.0f
			: s->output == TG_VIEW_HEIGHT ? 0.0f : NAN;
	if (s->output == TG_VIEW_ANGLE)
		for (size_t i = (size_t) y0 * s->width; i < (size_t) y1 * s->width; i++)
			if (!isnan(out[i]))
				out[i] = (float) (atan((double) out[i]) * TG_DEGREES_PER_RADIAN);
}

static inline void
tg_view_finish(const tg_view_setup *s, float *out)
{
	tg_view_finish_rows(s, out, 0, s->height);
}

#ifdef __cplusplus
extern "C"
{
#endif

/* The CPU side of tg_viewshed and tg_viewshed_count. */
tg_status	tg_cpu_viewshed(const tg_ctx *ctx, const tg_band *dem, const tg_viewshed_params *p,
							float *out, tg_error *err);
tg_status	tg_cpu_viewshed_count(const tg_ctx *ctx, const tg_band *dem, const tg_viewshed_params *p,
								  const int *cols, const int *rows, int n, uint32_t *count,
								  tg_error *err);

#ifdef __cplusplus
}
#endif

/*
 * floor(n / d) for d > 0 and |n| < 2^53: a double division, corrected to the
 * exact integer (64-bit integer division is slow on the GPU).
 */
TG_HD int64_t
tg_floor_div(int64_t n, int64_t d)
{
	int64_t		q = (int64_t) floor((double) n / (double) d);

	if (q * d > n)
		q--;
	else if ((q + 1) * d <= n)
		q++;
	return q;
}

/*
 * Ray i's end point relative to the observer, in 1/f cells: the points of the
 * window's edge f per cell, clockwise from its top-left corner.
 */
TG_HD void
tg_view_ray(const tg_view_setup *s, int i, int *dx, int *dy)
{
	const int	f = s->density;
	const int	X0 = f * (s->x0 - s->ox),
				X1 = f * (s->x1 - s->ox);
	const int	Y0 = f * (s->y0 - s->oy),
				Y1 = f * (s->y1 - s->oy);
	const int	w = X1 - X0 + 1;
	const int	h = Y1 - Y0 + 1;
	int			x,
				y;

	if (i < w)
	{
		x = X0 + i;
		y = Y0;
	}
	else if ((i -= w) < h - 1)
	{
		x = X1;
		y = Y0 + 1 + i;
	}
	else if ((i -= h - 1) < w - 1)
	{
		x = X1 - 1 - i;
		y = Y1;
	}
	else
	{
		i -= w - 1;
		x = X0;
		y = Y1 - 1 - i;
	}
	*dx = x;
	*dy = y;
}

/* Is ray (i1, j1) closer to the cell at (m, n) than (i2, j2)?  Transformed
 * coordinates (major axis positive); ties go to the longer ray, then the
 * smaller minor offset. */
TG_HD bool
tg_view_closer(int64_t m, int64_t n, int64_t i1, int64_t j1, int64_t i2, int64_t j2)
{
	int64_t		e1 = m * j1 - n * i1,
				e2 = m * j2 - n * i2;

	e1 = (e1 < 0 ? -e1 : e1) * i2;
	e2 = (e2 < 0 ? -e2 : e2) * i1;
	if (e1 != e2)
		return e1 < e2;
	if (i1 != i2)
		return i1 > i2;
	return j1 < j2;
}

/*
 * The window's edges as an octant (x-major or not, sign of the major axis)
 * sees them, in 1/f cells: the far edge at major distance E, the side edges
 * at minor distances Lneg and Lpos; the far edge's rays have minor offsets
 * jmin..jmax, a side edge's rays major lengths imin..E - 1 (y-major rays
 * keep |minor| < major: the diagonals are x-major).
 */
typedef struct tg_view_edges
{
	int64_t		E,
				Lneg,
				Lpos,
				jmin,
				jmax,
				imin_neg,
				imin_pos;
} tg_view_edges;

TG_HD void
tg_view_octant_edges(const tg_view_setup *s, bool xmajor, int sgn, tg_view_edges *e)
{
	const int64_t f = s->density;
	const int64_t E = f * (xmajor ? (sgn > 0 ? s->x1 - s->ox : s->ox - s->x0)
						   : (sgn > 0 ? s->y1 - s->oy : s->oy - s->y0));
	const int64_t Lneg = f * (xmajor ? s->oy - s->y0 : s->ox - s->x0);
	const int64_t Lpos = f * (xmajor ? s->y1 - s->oy : s->x1 - s->ox);
	const int64_t lim = xmajor ? E : E - 1;

	e->E = E;
	e->Lneg = Lneg;
	e->Lpos = Lpos;
	e->jmin = -(Lneg < lim ? Lneg : lim);
	e->jmax = Lpos < lim ? Lpos : lim;
	e->imin_neg = (xmajor ? Lneg : Lneg + 1) > 1 ? (xmajor ? Lneg : Lneg + 1) : 1;
	e->imin_pos = (xmajor ? Lpos : Lpos + 1) > 1 ? (xmajor ? Lpos : Lpos + 1) : 1;
}

/*
 * The ray deciding the cell at offset (a, b) from the observer (not both 0),
 * as its end point in 1/f cells:
 * among the rays of the cell's octant (x-major when |a| >= |b|), the one whose
 * line passes closest to the cell's centre at its major coordinate.  The
 * candidates are the nearest on the far edge and on each side edge.
 */
TG_HD void
tg_view_owner(const tg_view_setup *s, int a, int b, int *dx, int *dy)
{
	const bool	xmajor = (a < 0 ? -a : a) >= (b < 0 ? -b : b);
	const int	sgn = xmajor ? (a > 0 ? 1 : -1) : (b > 0 ? 1 : -1);
	const int64_t m = xmajor ? (int64_t) a * sgn : (int64_t) b * sgn;	/* > 0 */
	const int64_t n = xmajor ? b : a;
	tg_view_edges e;
	int64_t		E,
				bi,
				bj,
				j;

	tg_view_octant_edges(s, xmajor, sgn, &e);
	E = e.E;

	/* far edge: minor offsets j and j + 1 around n E / m */
	j = tg_floor_div(n * E, m);
	bi = E;
	bj = j < e.jmin ? e.jmin : j > e.jmax ? e.jmax : j;
	if (j + 1 >= e.jmin && j + 1 <= e.jmax && tg_view_closer(m, n, E, j + 1, bi, bj))
		bj = j + 1;

	/* a side edge at minor distance L: rays (i, +-L) for i in [imin, E - 1] */
	for (int side = -1; side <= 1; side += 2)
	{
		const int64_t L = side < 0 ? e.Lneg : e.Lpos;
		const int64_t imin = side < 0 ? e.imin_neg : e.imin_pos;
		int64_t		i;

		if ((side < 0 && n >= 0) || (side > 0 && n <= 0) || imin > E - 1)
			continue;
		/* ratio side L / i nearest n / m: i around L m / |n| */
		i = tg_floor_div(L * m, side < 0 ? -n : n);
		for (int64_t c = i; c <= i + 1; c++)
		{
			int64_t		ci = c < imin ? imin : c > E - 1 ? E - 1 : c;

			if (tg_view_closer(m, n, ci, side * L, bi, bj))
			{
				bi = ci;
				bj = side * L;
			}
		}
	}
	*dx = xmajor ? (int) (sgn * bi) : (int) bj;
	*dy = xmajor ? (int) bj : (int) (sgn * bi);
}

/* Drop of the terrain at distance d below the observer's horizontal plane. */
TG_HD double
tg_view_curvature(double d2, double re)
{
	return re > 0 ? d2 / TG_DADD(sqrt(TG_DADD(d2, TG_DMUL(re, re))), re) : 0.0;
}

/*
 * Where step k of ray (i steps along its major axis, minor offset j at the
 * end) samples the terrain: between the cell at minor offset q and the one
 * at q + 1, rem / i of the way (rem = k j - q i; 0: through the first
 * cell's centre, the second is not read).
 */
typedef struct tg_view_point
{
	int64_t		q;
	int64_t		rem;
	int64_t		at0;			/* the two cells' indices */
	int64_t		at1;
	double		d2;				/* squared distance from the observer */
} tg_view_point;

/* A calculation point's terrain and the quantities its decisions share. */
typedef struct tg_view_sample
{
	double		zp;				/* interpolated terrain, NaN next to nodata */
	double		curv;			/* tg_view_curvature(d2) */
	double		dist;			/* sqrt(d2) */
	double		d2;
	double		h;				/* horizon contribution, -INFINITY next to nodata */
} tg_view_sample;

/*
 * A ray's steps k, k + stride, k + 2 stride, ... in exact integer
 * arithmetic: num = k j, q = floor(num / i), rem = num - q i and the index
 * of the cell at minor offset q advance by additions only (the GPU walks a
 * ray 256 steps apart per thread, the CPU one by one).  The advance is the
 * ray's (the same for all its walkers), the position each walker's.
 */
typedef struct tg_view_advance
{
	int64_t		k,
				num,
				q,
				rem,
				at;
	int64_t		minor_stride;	/* index step of one cell along the minor axis */
} tg_view_advance;

typedef struct tg_view_walk
{
	int64_t		k,
				num,
				q,
				rem,
				at0;
} tg_view_walk;

/* num = k j, q = floor(num / i), rem = num - q i. */
TG_HD void
tg_view_split(int64_t k, int64_t j, int64_t i, int64_t *num, int64_t *q, int64_t *rem)
{
	*num = k * j;
	*q = tg_floor_div(*num, i);
	*rem = *num - *q * i;
}

TG_HD void
tg_view_advance_init(const tg_view_setup *s, bool xmajor, int sgn, int64_t i, int64_t j,
					 int64_t stride, tg_view_advance *d)
{
	d->minor_stride = xmajor ? s->width : 1;
	d->k = stride;
	tg_view_split(stride, j, i, &d->num, &d->q, &d->rem);
	d->at = stride * (xmajor ? sgn : sgn * (int64_t) s->width) + d->q * d->minor_stride;
}

TG_HD void
tg_view_walk_start(const tg_view_setup *s, bool xmajor, int sgn, int64_t i, int64_t j, int64_t k,
				   tg_view_walk *w)
{
	const int64_t major = (xmajor ? s->ox : s->oy) + sgn * k;

	w->k = k;
	tg_view_split(k, j, i, &w->num, &w->q, &w->rem);
	w->at0 = xmajor ? (s->oy + w->q) * s->width + major : major * s->width + s->ox + w->q;
}

TG_HD void
tg_view_walk_next(tg_view_walk *w, const tg_view_advance *d, int64_t i)
{
	w->k += d->k;
	w->num += d->num;
	w->q += d->q;
	w->rem += d->rem;
	w->at0 += d->at;
	if (w->rem >= i)
	{
		w->rem -= i;
		w->q++;
		w->at0 += d->minor_stride;
	}
}

/* The calculation point at the walk's step. */
TG_HD void
tg_view_locate(const tg_view_setup *s, bool xmajor, int64_t i, const tg_view_walk *w,
			   tg_view_point *p)
{
	const double dmaj = TG_DMUL((double) w->k, xmajor ? s->cx : s->cy);
	/* times 1 / i rather than divided by i: a ray's walker computes the
	 * reciprocal once, and a double division costs a dozen instructions */
	const double dmin = TG_DMUL(TG_DMUL((double) w->num, 1.0 / (double) i), xmajor ? s->cy : s->cx);

	p->q = w->q;
	p->rem = w->rem;
	p->at0 = w->at0;
	p->at1 = w->at0 + (xmajor ? s->width : 1);
	p->d2 = TG_DADD(TG_DMUL(dmaj, dmaj), TG_DMUL(dmin, dmin));
}

/*
 * The cells a step may decide, minor offsets q + c for c in [*c0, *c1]: the
 * one within half a cell of the ray (its distance is rem / i for c = 0,
 * (i - rem) / i for c = 1), both only where the ray passes midway.
 */
TG_HD void
tg_view_candidates(const tg_view_point *p, int64_t i, int *c0, int *c1)
{
	*c0 = 2 * p->rem <= i ? 0 : 1;
	*c1 = 2 * p->rem == i ? 1 : *c0;
}

/* Slope from the eye to elevation z at a point of curvature drop curv and distance dist. */
TG_HD double
tg_view_slope(const tg_view_setup *s, double z, double curv, double dist)
{
	return TG_DADD(TG_DADD(z, -curv), -s->eye) / dist;
}

/* The sample of point p of a ray with i major steps, given its two cells' elevations. */
TG_HD void
tg_view_eval(const tg_view_setup *s, const tg_view_point *p, int64_t i, double z0, double z1,
			 tg_view_sample *e)
{
	double		zv = z0;

	if (p->rem != 0)
	{
		const double f = TG_DMUL((double) p->rem, 1.0 / (double) i);
		const double g = TG_DMUL((double) (i - p->rem), 1.0 / (double) i);

		zv = TG_DADD(TG_DMUL(z0, g), TG_DMUL(z1, f));
	}
	e->zp = zv;
	e->d2 = p->d2;
	if (isnan(zv))
	{
		e->curv = e->dist = 0;
		e->h = -INFINITY;		/* nodata does not block */
		return;
	}
	e->curv = tg_view_curvature(p->d2, s->re);
	e->dist = sqrt(p->d2);
	e->h = tg_view_slope(s, zv, e->curv, e->dist);
}

/* The horizon contribution of step k of a ray over z (NaN = nodata). */
TG_HD double
tg_view_horizon_at(const tg_view_setup *s, const double *z, bool xmajor, int sgn, int64_t i,
				   int64_t j, int64_t k)
{
	tg_view_walk w;
	tg_view_point p;
	tg_view_sample e;

	tg_view_walk_start(s, xmajor, sgn, i, j, k, &w);
	tg_view_locate(s, xmajor, i, &w, &p);
	tg_view_eval(s, &p, i, z[p.at0], p.rem != 0 ? z[p.at1] : 0.0, &e);
	return e.h;
}

/*
 * Output value of the cell at offset (a, b) with elevation zc, seen at the
 * calculation point e of R2's ray (NULL or next to nodata: at the cell's own
 * centre, as R3 does), given the horizon before it.  Nodata cells and cells
 * whose centre is beyond range give NaN.
 */
TG_HD float
tg_view_decide(const tg_view_setup *s, double zc, int a, int b, const tg_view_sample *e,
			   double horizon)
{
	const double da = TG_DMUL((double) a, s->cx);
	const double db = TG_DMUL((double) b, s->cy);
	const double dc2 = TG_DADD(TG_DMUL(da, da), TG_DMUL(db, db));
	double		zp,
				curv,
				dist,
				st;

	if (isnan(zc) || dc2 > s->max_d2)
		return NAN;
	if (e && !isnan(e->zp))
	{
		zp = e->zp;
		curv = e->curv;
		dist = e->dist;
	}
	else
	{
		zp = zc;
		curv = tg_view_curvature(dc2, s->re);
		dist = sqrt(dc2);
	}
	st = tg_view_slope(s, TG_DADD(zp, s->target), curv, dist);
	switch (s->output)
	{
		case TG_VIEW_VISIBLE:
			return st >= horizon ? 1.0f : 0.0f;
		case TG_VIEW_ANGLE:
			return (float) st;	/* slope; degrees on the host */
		case TG_VIEW_HEIGHT:
			return st >= horizon ? 0.0f
				: (float) TG_DMUL(TG_DADD(horizon, -st), dist);
	}
	return NAN;
}

/*
 * Which cells ray (dx, dy) decides (tg_view_rivals_init, once per ray;
 * tg_view_rivals_owns, per cell): the same answer as comparing with
 * tg_view_owner(), faster.  The rays of an octant, in order of their slope,
 * are the near side edge's, the far edge's, the far side edge's, and a
 * cell's distance to them falls then rises along that order (never equal for
 * more than two, bar collinear rays that the tie rule orders by length), so
 * the nearest is the one no farther than either neighbour.
 */
typedef struct tg_view_rivals
{
	bool		xmajor;			/* the ray's octant */
	int			sgn;
	bool		never;			/* collinear with a longer ray: decides nothing */
	int64_t		I,				/* the ray, transformed to its octant */
				J;
	int64_t		pi,				/* its neighbours by slope; i = 0: none */
				pj,
				ni,
				nj;
} tg_view_rivals;

TG_HD void
tg_view_rivals_init(const tg_view_setup *s, int dx, int dy, tg_view_rivals *r)
{
	const bool	xmajor = (dx < 0 ? -dx : dx) >= (dy < 0 ? -dy : dy);
	const int	sgn = xmajor ? (dx > 0 ? 1 : -1) : (dy > 0 ? 1 : -1);
	const int64_t I = xmajor ? (int64_t) dx * sgn : (int64_t) dy * sgn;
	const int64_t J = xmajor ? dy : dx;
	tg_view_edges e;

	tg_view_octant_edges(s, xmajor, sgn, &e);
	r->xmajor = xmajor;
	r->sgn = sgn;
	r->never = false;
	r->I = I;
	r->J = J;
	r->pi = r->pj = r->ni = r->nj = 0;
	if (I == e.E)
	{
		/* far edge; past its ends, the side edges' rays nearest the corners */
		if (J > e.jmin)
			r->pi = e.E, r->pj = J - 1;
		else if (e.imin_neg <= e.E - 1)
			r->pi = e.E - 1, r->pj = -e.Lneg;
		if (J < e.jmax)
			r->ni = e.E, r->nj = J + 1;
		else if (e.imin_pos <= e.E - 1)
			r->ni = e.E - 1, r->nj = e.Lpos;
	}
	else if (J == -e.Lneg && J < 0)
	{
		/* near side edge: slope -L / i rises with i */
		if (I - 1 >= e.imin_neg)
			r->pi = I - 1, r->pj = J;
		r->ni = I + 1, r->nj = J;
	}
	else if (J == -e.Lneg && J == 0)
	{
		/* collinear with the far edge's ray (E, 0), which is longer */
		r->never = true;
	}
	else
	{
		/* far side edge: slope L / i falls with i */
		r->pi = I + 1, r->pj = J;
		if (I - 1 >= e.imin_pos)
			r->ni = I - 1, r->nj = J;
	}
}

/*
 * Does the ray of r decide the cell at (m, n) of its octant (m along the
 * major axis, > 0), whose distance to it is off / I cells at major
 * coordinate m (off = |m J - n I|)?  tg_view_closer() against the two
 * neighbours, with the ray's own cross product given.
 */
TG_HD bool
tg_view_rivals_decide(const tg_view_rivals *r, int64_t m, int64_t n, int64_t off)
{
	if (r->never || (r->xmajor ? (n < 0 ? -n : n) > m : (n < 0 ? -n : n) >= m))
		return false;			/* another octant's cell */
	for (int side = 0; side < 2; side++)
	{
		const int64_t ri = side ? r->ni : r->pi,
					rj = side ? r->nj : r->pj;
		int64_t		e2;

		if (ri == 0)
			continue;
		e2 = m * rj - n * ri;
		e2 = (e2 < 0 ? -e2 : e2) * r->I;
		if (off * ri != e2 ? off * ri > e2 : r->I != ri ? r->I < ri : r->J > rj)
			return false;		/* the neighbour is closer */
	}
	return true;
}

/* Does the ray of r decide the cell at (a, b)? */
TG_HD bool
tg_view_rivals_owns(const tg_view_rivals *r, int a, int b)
{
	const bool	xmajor = (a < 0 ? -a : a) >= (b < 0 ? -b : b);
	const int	sgn = xmajor ? (a > 0 ? 1 : -1) : (b > 0 ? 1 : -1);
	const int64_t m = xmajor ? (int64_t) a * sgn : (int64_t) b * sgn;
	const int64_t n = xmajor ? b : a;
	const int64_t off = m * r->J - n * r->I;

	if (xmajor != r->xmajor || sgn != r->sgn)
		return false;
	return tg_view_rivals_decide(r, m, n, off < 0 ? -off : off);
}

/* Does ray (dx, dy) decide the cell at (a, b)? */
TG_HD bool
tg_view_owns(const tg_view_setup *s, int dx, int dy, int a, int b)
{
	tg_view_rivals r;

	tg_view_rivals_init(s, dx, dy, &r);
	return tg_view_rivals_owns(&r, a, b);
}

#endif							/* TG_VIEWSHED_H */
