/*
 * tg_viewshed.h — the R2 viewshed's geometry shared by the CPU walk and the
 * CUDA kernel: the analysis window, its rays, the nearest-ray rule, the
 * terrain samples and the per-cell decision, in the same arithmetic on both
 * backends (exact integer tests, no fused multiply-add), so both decide
 * every cell identically.  Internal to the core and cuda/.
 */
#ifndef TG_VIEWSHED_H
#define TG_VIEWSHED_H

#include "tg_hydro.h"

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

#ifdef __cplusplus
extern "C"
{
#endif
/*
 * The window, rays and eye of a call (z: the decoded DEM, or NULL to read the
 * observer's cell from the band), and the host-side finish both backends
 * share: the observer's own cell, slopes to degrees for `angle`.
 */
tg_status	tg_view_prepare(const tg_band *dem, const tg_viewshed_params *p, const double *z,
							tg_view_setup *s, tg_error *err);
void		tg_view_finish(const tg_view_setup *s, float *out);
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
	/* far edge along the major axis, side edges along the minor one, in 1/f cells */
	const int64_t f = s->density;
	const int64_t E = f * (xmajor ? (sgn > 0 ? s->x1 - s->ox : s->ox - s->x0)
						   : (sgn > 0 ? s->y1 - s->oy : s->oy - s->y0));
	const int64_t Lneg = f * (xmajor ? s->oy - s->y0 : s->ox - s->x0);
	const int64_t Lpos = f * (xmajor ? s->y1 - s->oy : s->x1 - s->ox);
	/* y-major rays keep |minor| < major: the diagonals are x-major */
	const int64_t lim = xmajor ? E : E - 1;
	const int64_t jmin = -(Lneg < lim ? Lneg : lim);
	const int64_t jmax = Lpos < lim ? Lpos : lim;
	int64_t		bi = E,
				bj;
	int64_t		j = tg_floor_div(n * E, m);

	/* far edge: minor offsets j and j + 1 around n E / m */
	bj = j < jmin ? jmin : j > jmax ? jmax : j;
	if (j + 1 >= jmin && j + 1 <= jmax && tg_view_closer(m, n, E, j + 1, bi, bj))
		bj = j + 1;

	/* a side edge at minor distance L: rays (i, +-L) for i in [imin, E - 1] */
	for (int side = -1; side <= 1; side += 2)
	{
		const int64_t L = side < 0 ? Lneg : Lpos;
		const int64_t imin = (xmajor ? L : L + 1) > 1 ? (xmajor ? L : L + 1) : 1;
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

/* Slope from the eye to elevation z at squared distance d2. */
TG_HD double
tg_view_slope(const tg_view_setup *s, double z, double d2)
{
	return TG_DADD(TG_DADD(z, -tg_view_curvature(d2, s->re)), -s->eye) / sqrt(d2);
}

/*
 * The calculation point of ray (i steps along its major axis, minor offset j
 * at the end) at step k: the terrain interpolated between the two cells the
 * ray passes between, and its squared distance.  False where one of them is
 * nodata.  z: the DEM with NaN for nodata.
 */
TG_HD bool
tg_view_point(const tg_view_setup *s, const double *z, bool xmajor, int sgn, int64_t i,
			  int64_t j, int64_t k, double *zp, double *d2)
{
	const int64_t num = k * j;
	const int64_t q = tg_floor_div(num, i);
	const int64_t rem = num - q * i;
	const int64_t maj = xmajor ? s->ox + sgn * k : s->oy + sgn * k;
	const int64_t mn = (xmajor ? s->oy : s->ox) + q;
	const double dmaj = TG_DMUL((double) k, xmajor ? s->cx : s->cy);
	const double dmin = TG_DMUL((double) num / (double) i, xmajor ? s->cy : s->cx);
	double		zv;

	*d2 = TG_DADD(TG_DMUL(dmaj, dmaj), TG_DMUL(dmin, dmin));
	zv = xmajor ? z[mn * s->width + maj] : z[maj * s->width + mn];
	if (rem != 0)
	{
		const double z1 = xmajor ? z[(mn + 1) * s->width + maj] : z[maj * s->width + mn + 1];
		const double f = (double) rem / (double) i;
		const double g = (double) (i - rem) / (double) i;

		zv = TG_DADD(TG_DMUL(zv, g), TG_DMUL(z1, f));
	}
	*zp = zv;
	return !isnan(zv);
}

/* The horizon contribution of a calculation point (-INFINITY: nodata does not block). */
TG_HD double
tg_view_sample(const tg_view_setup *s, const double *z, bool xmajor, int sgn, int64_t i,
			   int64_t j, int64_t k)
{
	double		zp,
				d2;

	return tg_view_point(s, z, xmajor, sgn, i, j, k, &zp, &d2) ? tg_view_slope(s, zp, d2) : -INFINITY;
}

/*
 * Output value of cell (x, y) at offset (a, b) seen at terrain zp and squared
 * distance d2 (its calculation point on R2's ray, its centre for R3), given
 * the horizon before it.  Nodata cells and cells whose centre is beyond
 * range give NaN.
 */
TG_HD float
tg_view_decide(const tg_view_setup *s, const double *z, int x, int y, int a, int b,
			   double zp, double d2, double horizon)
{
	const double zc = z[(int64_t) y * s->width + x];
	const double da = TG_DMUL((double) a, s->cx);
	const double db = TG_DMUL((double) b, s->cy);
	const double dc2 = TG_DADD(TG_DMUL(da, da), TG_DMUL(db, db));
	double		st;

	if (isnan(zc) || dc2 > s->max_d2)
		return NAN;
	if (isnan(zp))
	{
		/* a calculation point next to nodata: the cell's own centre */
		zp = zc;
		d2 = dc2;
	}
	st = tg_view_slope(s, TG_DADD(zp, s->target), d2);
	switch (s->output)
	{
		case TG_VIEW_VISIBLE:
			return st >= horizon ? 1.0f : 0.0f;
		case TG_VIEW_ANGLE:
			return (float) st;	/* slope; degrees on the host */
		case TG_VIEW_HEIGHT:
			return st >= horizon ? 0.0f
				: (float) TG_DMUL(TG_DADD(horizon, -st), sqrt(d2));
	}
	return NAN;
}

/*
 * One step k of R2's ray (xmajor, sgn, i, j): its calculation point (zp, d2;
 * zp NaN next to nodata) and the horizon contribution of that point.
 */
TG_HD double
tg_view_step(const tg_view_setup *s, const double *z, bool xmajor, int sgn, int64_t i, int64_t j,
			 int64_t k, double *zp, double *d2)
{
	if (!tg_view_point(s, z, xmajor, sgn, i, j, k, zp, d2))
	{
		*zp = NAN;
		return -INFINITY;
	}
	return tg_view_slope(s, *zp, *d2);
}

/*
 * Does ray (dx, dy) decide the cell at (a, b)?  The same answer as comparing
 * with tg_view_owner(), faster: the rays of an octant, in order of their
 * slope, are the near side edge's, the far edge's, the far side edge's, and
 * a cell's distance to them falls then rises along that order (never equal
 * for more than two, bar collinear rays that the tie rule orders by length),
 * so the nearest is the one no closer than neither neighbour.
 */
TG_HD bool
tg_view_owns(const tg_view_setup *s, int dx, int dy, int a, int b)
{
	const bool	xmajor = (a < 0 ? -a : a) >= (b < 0 ? -b : b);
	const int	sgn = xmajor ? (a > 0 ? 1 : -1) : (b > 0 ? 1 : -1);
	const bool	ray_xmajor = (dx < 0 ? -dx : dx) >= (dy < 0 ? -dy : dy);
	const int	ray_sgn = ray_xmajor ? (dx > 0 ? 1 : -1) : (dy > 0 ? 1 : -1);

	if (xmajor != ray_xmajor || sgn != ray_sgn)
		return false;

	{
		const int64_t m = xmajor ? (int64_t) a * sgn : (int64_t) b * sgn;
		const int64_t n = xmajor ? b : a;
		const int64_t I = xmajor ? (int64_t) dx * sgn : (int64_t) dy * sgn;
		const int64_t J = xmajor ? dy : dx;
		const int64_t f = s->density;
		const int64_t E = f * (xmajor ? (sgn > 0 ? s->x1 - s->ox : s->ox - s->x0)
							   : (sgn > 0 ? s->y1 - s->oy : s->oy - s->y0));
		const int64_t Lneg = f * (xmajor ? s->oy - s->y0 : s->ox - s->x0);
		const int64_t Lpos = f * (xmajor ? s->y1 - s->oy : s->x1 - s->ox);
		const int64_t lim = xmajor ? E : E - 1;
		const int64_t jmin = -(Lneg < lim ? Lneg : lim);
		const int64_t jmax = Lpos < lim ? Lpos : lim;
		const int64_t imin_neg = (xmajor ? Lneg : Lneg + 1) > 1 ? (xmajor ? Lneg : Lneg + 1) : 1;
		const int64_t imin_pos = (xmajor ? Lpos : Lpos + 1) > 1 ? (xmajor ? Lpos : Lpos + 1) : 1;
		int64_t		pi = 0,
					pj = 0,
					ni = 0,
					nj = 0;		/* neighbours by slope; i = 0: none */

		if (I == E)
		{
			/* far edge; past its ends, the side edges' rays nearest the corners */
			if (J > jmin)
				pi = E, pj = J - 1;
			else if (imin_neg <= E - 1)
				pi = E - 1, pj = -Lneg;
			if (J < jmax)
				ni = E, nj = J + 1;
			else if (imin_pos <= E - 1)
				ni = E - 1, nj = Lpos;
		}
		else if (J == -Lneg && J < 0)
		{
			/* near side edge: slope -L / i rises with i */
			if (I - 1 >= imin_neg)
				pi = I - 1, pj = J;
			ni = I + 1, nj = J;
		}
		else if (J == -Lneg && J == 0)
		{
			/* collinear with the far edge's ray (E, 0), which is longer */
			return false;
		}
		else
		{
			/* far side edge: slope L / i falls with i */
			pi = I + 1, pj = J;
			if (I - 1 >= imin_pos)
				ni = I - 1, nj = J;
		}
		return (pi == 0 || tg_view_closer(m, n, I, J, pi, pj)) &&
			(ni == 0 || tg_view_closer(m, n, I, J, ni, nj));
	}
}

#endif							/* TG_VIEWSHED_H */
