/*
 * hydro.h — what the hydrology folders (hydro/fill, flats, route, accum,
 * catchment, drainage) and cuda/ share: the per-cell formulas (fill
 * increment, neighbour geometry, D8 choice, multiple-flow shares, the pull
 * of an accumulation), so both backends evaluate the same expressions in the
 * same order.  Internal to the core and cuda/.
 */
#ifndef TG_HYDRO_H
#define TG_HYDRO_H

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "terrain/terrain.h"

#define TG_NO_DIRECTION 0xFF	/* internal D8 index: no receiver */

/* The name of an accumulation method, as tg_last_run() reports it. */
static inline const char *
tg_accum_method_name(tg_accum_method m)
{
	switch (m)
	{
		case TG_ACC_AUTO:
			return "auto";
		case TG_ACC_FLOW_TRANSFER:
			return "flow-transfer";
		case TG_ACC_DEPENDENCY_TRANSFER:
			return "dependency-transfer";
		case TG_ACC_INDEGREE:
			return "indegree";
		case TG_ACC_TOPOLOGICAL:
			return "topological";
		case TG_ACC_TILED:
			return "tiled (d8)";
	}
	return "unknown";
}

/* Neighbour k of cell (x, y) of a W x H grid, or -1 outside it. */
static inline int64_t
tg_nbr_cell(int W, int H, int x, int y, int k)
{
	int			nx = x + tg_nbr_dx(k),
				ny = y + tg_nbr_dy(k);

	return (nx < 0 || ny < 0 || nx >= W || ny >= H) ? -1 : (int64_t) ny * W + nx;
}

/* The neighbour of a cell's neighbour k that points back at the cell. */
TG_HD int
tg_nbr_opposite(int k)
{
	return (k + 4) & 7;
}

/*
 * Effective contour length of each direction, in cell widths (Quinn et al.
 * 1991, as Qin et al. 2007 use it): 1/2 across a side, sqrt(2)/4 diagonally.
 */
TG_HD double
tg_contour_length(int k)
{
	return (k & 1) ? 0.35355339059327373 : 0.5;
}

/*
 * The fill increment: inc(w) = w without epsilon; otherwise the larger of
 * w + epsilon and the next value above w in the output precision, so the
 * rise survives rounding (single: the output is 32BF and w is exact in float).
 */
TG_HD double
tg_fill_inc(double w, double epsilon, bool single)
{
	if (!(epsilon > 0))
		return w;
	if (single)
	{
		float		f = (float) w;
		float		up = f + (float) epsilon;
		float		next = nextafterf(f, HUGE_VALF);

		return (double) (up > next ? up : next);
	}
	else
	{
		double		up = w + epsilon;
		double		next = nextafter(w, HUGE_VAL);

		return up > next ? up : next;
	}
}

/* The breach decrement (tg_fill, TG_FILL_BREACH): the mirror of tg_fill_inc. */
TG_HD double
tg_fill_dec(double w, double epsilon, bool single)
{
	if (!(epsilon > 0))
		return w;
	if (single)
	{
		float		f = (float) w;
		float		down = f - (float) epsilon;
		float		next = nextafterf(f, -HUGE_VALF);

		return (double) (down < next ? down : next);
	}
	else
	{
		double		down = w - epsilon;
		double		next = nextafter(w, -HUGE_VAL);

		return down < next ? down : next;
	}
}

/* Distances to the 8 neighbours for a row with spacing dx, dy. */
TG_HD void
tg_nbr_distances(double dx, double dy, double d[8])
{
	double		diag = sqrt(dx * dx + dy * dy);

	d[0] = dx;
	d[1] = diag;
	d[2] = dy;
	d[3] = diag;
	d[4] = dx;
	d[5] = diag;
	d[6] = dy;
	d[7] = diag;
}

/*
 * D8 choice: the neighbour with the largest positive gradient g[k]; ties go
 * to the first in ESRI order.  TG_NO_DIRECTION when no gradient is positive.
 */
TG_HD int
tg_d8_choose(const double g[8])
{
	int			best = TG_NO_DIRECTION;
	double		best_g = 0;
	int			k;

	for (k = 0; k < 8; k++)
		if (g[k] > best_g)
		{
			best_g = g[k];
			best = k;
		}
	return best;
}

/* The neighbour at column and row offsets (dx, dy), each -1, 0 or 1 (not both 0). */
TG_HD int
tg_nbr_index(int dx, int dy)
{
	/* rows north to south, columns west to east */
	const int	k[9] = {5, 6, 7, 4, -1, 0, 3, 2, 1};

	return k[(dy + 1) * 3 + dx + 1];
}

/*
 * Multiple-flow shares from the gradients g[k] (tan of the slope towards
 * neighbour k; <= 0 where it is not downslope): share_k proportional to
 * L_k tan(b_k)^p.  mfd-md (Qin et al. 2007) adapts p to the steepest
 * downslope gradient e: p = 8.9 min(e, 1) + 1.1; fd8 and fdd8 use `exponent`.
 */
TG_HD void
tg_mfd_shares(const double g[8], bool adaptive, double exponent, float share[8])
{
	double		raw[8];
	double		e = 0;
	double		sum = 0;
	double		p;
	int			k;

	for (k = 0; k < 8; k++)
		if (g[k] > e)
			e = g[k];
	p = adaptive ? TG_DADD(TG_DMUL(8.9, e < 1.0 ? e : 1.0), 1.1) : exponent;
	for (k = 0; k < 8; k++)
	{
		raw[k] = g[k] > 0 ? TG_DMUL(tg_contour_length(k), pow(g[k], p)) : 0.0;
		sum = TG_DADD(sum, raw[k]);
	}
	for (k = 0; k < 8; k++)
		share[k] = sum > 0 ? (float) (raw[k] / sum) : 0.0f;
}

/*
 * atan(y / x) for y >= 0, x > 0 from additions, products and quotients only,
 * so the CPU and the device (whose atan differs from libm's in the last bits)
 * round it alike: reduced to [0, tan(pi/8)] by atan(t) = pi/2 - atan(1/t) and
 * atan(t) = pi/4 + atan((t - 1)/(t + 1)), then 24 terms of the Taylor series
 * (the first one dropped below 1e-19 there), summed by Horner's rule.
 */
TG_HD double
tg_atan_ratio(double y, double x)
{
	double		t = y / x,
				base = 0,
				u,
				sum = 0;
	bool		flip = t > 1.0;
	int			n;

	if (flip)
		t = x / y;
	if (t > 0.41421356237309503)
	{
		t = TG_DADD(t, -1.0) / TG_DADD(t, 1.0);
		base = 0.78539816339744831;
	}
	u = TG_DMUL(t, t);
	for (n = 23; n >= 0; n--)
		sum = TG_DADD((n & 1 ? -1.0 : 1.0) / (double) (2 * n + 1), TG_DMUL(u, sum));
	sum = TG_DADD(base, TG_DMUL(t, sum));
	return flip ? TG_DADD(1.5707963267948966, -sum) : sum;
}

/*
 * D-infinity (Tarboton 1997, "A new method for the determination of flow
 * directions and upslope areas in grid digital elevation models", Water
 * Resources Research 33(2): 309-319).  The 3 x 3 window is cut into 8
 * triangular facets, each spanned by the centre (e0), a side neighbour (e1)
 * and the corner next to it (e2).  On a facet, s1 = (e0 - e1) / d1 and
 * s2 = (e1 - e2) / d2 (d1 towards e1, d2 from e1 to e2); the steepest descent
 * leaves at angle r = atan(s2 / s1) from the side direction with slope
 * sqrt(s1^2 + s2^2); where r falls outside [0, atan(d2 / d1)] it is held to
 * the facet's nearer edge, with that edge's slope (s1 <= 0 < s2 counts as
 * beyond the corner, as atan2 places it).  The steepest facet wins (ties: the
 * first, in Tarboton's order, counter-clockwise from east) and splits the
 * water between e1 and e2 by angle: e2 gets r / atan(d2 / d1).
 * drop[k]: how much lower neighbour k is, 0 where it is outside the raster or
 * nodata: such a neighbour ranks as level ground and never receives, so a
 * facet missing a vertex drains to its other one only.  Every receiver is
 * strictly lower than the cell.  Edges are decided by exact comparisons and
 * the angles by tg_atan_ratio, so both backends give the same shares.
 * Returns the flow angle in radians counter-clockwise from east, in
 * [0, 2 pi), as Tarboton's paper and TauDEM define it; -1 where no neighbour
 * is lower.
 */
TG_HD double
tg_dinf_shares(const double drop[8], const double dist[8], float share[8])
{
	/* (side, corner) of each facet: E-NE, N-NE, N-NW, W-NW, W-SW, S-SW, S-SE, E-SE */
	const int	side[8] = {0, 6, 6, 4, 4, 2, 2, 0};
	const int	corner[8] = {7, 7, 5, 5, 3, 3, 1, 1};
	double		best = 0,
				best_f = 0,
				best_max = 0,
				angle;
	int			best_facet = -1,
				f,
				k;

	for (f = 0; f < 8; f++)
	{
		const int	c = side[f],
					g = corner[f];
		const double d1 = dist[c],
					d2 = dist[c == 0 || c == 4 ? 2 : 0];
		const double s1 = drop[c] / d1,
					s2 = TG_DADD(drop[g], -drop[c]) / d2;
		double		s,
					f2;

		if (!(s2 > 0))
			s = s1, f2 = 0;		/* r <= 0: along the side */
		else if (!(s1 > 0) || TG_DMUL(s2, d1) >= TG_DMUL(s1, d2))
			s = drop[g] / dist[g], f2 = 1;	/* r >= atan(d2 / d1): along the diagonal */
		else
		{
			s = sqrt(TG_DADD(TG_DMUL(s1, s1), TG_DMUL(s2, s2)));
			f2 = tg_atan_ratio(s2, s1) / tg_atan_ratio(d2, d1);
			f2 = f2 < 0 ? 0 : f2 > 1 ? 1 : f2;
		}
		if (s > best)
		{
			best = s;
			best_f = f2;
			best_facet = f;
			best_max = tg_atan_ratio(d2, d1);
		}
	}
	for (k = 0; k < 8; k++)
		share[k] = 0.0f;
	if (best_facet < 0)
		return -1.0;
	share[side[best_facet]] = (float) TG_DADD(1.0, -best_f);
	share[corner[best_facet]] = (float) best_f;
	/* Tarboton's a_c pi/2 + a_f r: odd facets are measured back from the next axis */
	{
		const double r = TG_DMUL(best_f, best_max);
		const double ac = (double) ((best_facet + 1) / 2) * 1.5707963267948966;

		angle = (best_facet & 1) ? TG_DADD(ac, -r) : TG_DADD(ac, r);
	}
	return angle >= 6.283185307179586 ? TG_DADD(angle, -6.283185307179586) : angle;
}

/*
 * The D-infinity flow angle back from a cell's shares (tg_dinf_shares: one
 * receiver, or a side and its corner): the side's direction turned towards
 * the corner by the corner's share of the facet angle atan(d2 / d1); -1
 * where no share is positive.  All the water on a corner points along the
 * facet's diagonal, atan2(dy, dx) from the east-west axis as TauDEM has it,
 * which is 45 degrees only on square cells.  dist as for tg_dinf_shares.
 */
TG_HD double
tg_dinf_angle(const float share[8], const double dist[8])
{
	int			side = -1,
				corner = -1,
				k;
	double		base,
				r,
				angle;

	for (k = 0; k < 8; k++)
		if (share[k] > 0)
		{
			if (k & 1)
				corner = k;
			else
				side = k;
		}
	if (side < 0 && corner < 0)
		return -1.0;
	if (side < 0)
		side = corner == 1 || corner == 7 ? 0 : 4;	/* measured from east or west */
	base = (double) ((8 - side) & 7) * 0.78539816339744831;	/* ESRI order runs clockwise */
	if (corner < 0)
		return base;
	r = TG_DMUL((double) share[corner],
				side == 0 || side == 4 ? tg_atan_ratio(dist[2], dist[0]) : tg_atan_ratio(dist[0], dist[2]));
	/* the corner lies counter-clockwise of the side when it is the next one back in ESRI order */
	angle = corner == ((side + 7) & 7) ? TG_DADD(base, r) : TG_DADD(base, -r);
	return angle < 0 ? TG_DADD(angle, 6.283185307179586) : angle;
}

/*
 * The anisotropic routing, after Hyvaluoma, Lilja & Turtola (2013), "An
 * anisotropic flow-routing algorithm for digital elevation models",
 * Computers & Geosciences 60: 81-87: a multiple-flow partition whose
 * result does not depend on how the grid is turned against the slope.  The
 * partition below is derived from that stated principle (the same mean
 * displacement and the same lateral spread at every flow angle), not
 * transcribed from the paper's equations.  The flow direction
 * is the steepest descent of the isotropic lattice gradient (the 3 x 3
 * stencil with the D2Q9 weights 4 : 1 of side to corner neighbours, exact on
 * planes).  Folded into the first octant (angle t in [0, 45] degrees from the
 * main side neighbour E towards the next side neighbour N, with the corners
 * NE between them and SE on E's other side), the shares are those that move
 * the water, on average, exactly one cell width along the flow and spread
 * it across the flow with the same variance v at every angle:
 *     N = 1 - cos t,  SE = q,  NE = sin t + cos t - 1 + q,  E = 1 - sin t - 2 q,
 *     q = (v - sin t cos t (2 - sin t - cos t)) / (2 cos^2 t),  v = 1 - 1/sqrt(2),
 * v being the only variance both ends of the octant allow (E, NE, SE at 0
 * degrees; E, NE, N at 45).  Choices the formulation leaves to us: the
 * octant is taken in cell units (for cells that are not square, the flow
 * direction in rows and columns); a share towards a neighbour that is not
 * lower (curved ground, the raster's edge, nodata) is dropped and the rest
 * scaled up to one; where none is left, or the gradient vanishes, all the
 * water goes to the steepest lower neighbour (D8).
 */
TG_HD void
tg_anisotropic_shares(const double drop[8], const double dist[8], float share[8])
{
	const double v = 1.0 - M_SQRT1_2;
	double		a = 0,
				b = 0,
				raw[8] = {0, 0, 0, 0, 0, 0, 0, 0},
				sum = 0;
	int			k;

	for (k = 0; k < 8; k++)
	{
		const double w = (k & 1) ? 1.0 : 4.0;

		a = TG_DADD(a, TG_DMUL(w * tg_nbr_dx(k), drop[k]));
		b = TG_DADD(b, TG_DMUL(w * tg_nbr_dy(k), drop[k]));
	}
	/* the flow direction in cell units */
	a = a / TG_DMUL(dist[0], dist[0]);
	b = b / TG_DMUL(dist[2], dist[2]);
	if (a != 0 || b != 0)
	{
		const int	sx = a < 0 ? -1 : 1,
					sy = b < 0 ? -1 : 1;
		const bool	swap = fabs(b) > fabs(a);
		const double major = swap ? fabs(b) : fabs(a),
					minor = swap ? fabs(a) : fabs(b),
					h = sqrt(TG_DADD(TG_DMUL(major, major), TG_DMUL(minor, minor))),
					c = major / h,
					s = minor / h;
		double		q = TG_DADD(v, -TG_DMUL(TG_DMUL(s, c), TG_DADD(TG_DADD(2.0, -s), -c))) /
			TG_DMUL(2.0, TG_DMUL(c, c));
		/* E along the major axis, N along the minor one */
		const int	ex = swap ? 0 : sx,
					ey = swap ? sy : 0,
					nx = swap ? sx : 0,
					ny = swap ? 0 : sy;
		const int	to[4] = {tg_nbr_index(ex, ey), tg_nbr_index(ex + nx, ey + ny),
		tg_nbr_index(nx, ny), tg_nbr_index(ex - nx, ey - ny)};
		double		p[4];

		q = q < 0 ? 0 : q;
		q = TG_DMUL(2.0, q) > TG_DADD(1.0, -s) ? TG_DMUL(0.5, TG_DADD(1.0, -s)) : q;
		p[0] = TG_DADD(TG_DADD(1.0, -s), -TG_DMUL(2.0, q));
		p[1] = TG_DADD(TG_DADD(TG_DADD(s, c), -1.0), q);
		p[2] = TG_DADD(1.0, -c);
		p[3] = q;
		for (k = 0; k < 4; k++)
			if (drop[to[k]] > 0 && p[k] > 0)
			{
				raw[to[k]] = p[k];
				sum = TG_DADD(sum, p[k]);
			}
	}
	if (!(sum > 0))
	{
		double		g[8];

		for (k = 0; k < 8; k++)
			g[k] = drop[k] / dist[k];
		k = tg_d8_choose(g);
		if (k != TG_NO_DIRECTION)
		{
			raw[k] = 1.0;
			sum = 1.0;
		}
	}
	for (k = 0; k < 8; k++)
		share[k] = sum > 0 ? (float) (raw[k] / sum) : 0.0f;
}

/* Distances to the neighbours across a flat, in cells (its mask's units). */
TG_HD void
tg_flat_distances(double d[8])
{
	for (int k = 0; k < 8; k++)
		d[k] = (k & 1) ? M_SQRT2 : 1.0;
}

/*
 * The shares of a cell's water among its neighbours under a multiple-flow
 * routing.  drop[k]: how much lower neighbour k is (0 where it is outside the
 * raster or nodata); dist: tg_nbr_distances of the row (dist[0] and dist[2]
 * are the cell's width and height).  on_flat: drop is the flat mask's
 * (Barnes et al. 2014) in cell units, where mfd-md uses exponent 1.1.
 * Shares are positive towards lower neighbours only and sum to 1 where any
 * neighbour is lower.
 */
TG_HD void
tg_flow_shares(tg_routing routing, double exponent, bool on_flat, const double drop[8],
			   const double dist[8], float share[8])
{
	double		g[8];

	if (routing == TG_ROUTE_DINF)
		(void) tg_dinf_shares(drop, dist, share);
	else if (routing == TG_ROUTE_ANISOTROPIC)
		tg_anisotropic_shares(drop, dist, share);
	else
	{
		for (int k = 0; k < 8; k++)
			g[k] = drop[k] / dist[k];
		tg_mfd_shares(g, routing == TG_ROUTE_MFD_MD && !on_flat,
					  routing == TG_ROUTE_MFD_MD ? 1.1 : exponent, share);
	}
}

/*
 * A routing as the accumulation reads it (route.h's tg_route, or its
 * device copy): d8 = steepest receiver index; frac = 8 planes of shares
 * (multiple-flow routings only).
 */
typedef struct tg_route_view
{
	int			width;
	int			height;
	tg_routing	routing;
	double		threshold;		/* fdd8 */
	const uint8_t *d8;
	const float *frac;
} tg_route_view;

/* The share of cell i's outflow that goes to its neighbour k, given acc(i). */
TG_HD double
tg_route_share(const tg_route_view *r, size_t i, int k, double acc_i)
{
	const size_t n = (size_t) r->width * r->height;

	if (r->routing == TG_ROUTE_D8 || (r->routing == TG_ROUTE_FDD8 && acc_i >= r->threshold))
		return r->d8[i] == k ? 1.0 : 0.0;
	return (double) r->frac[(size_t) k * n + i];
}

/* Does cell i send water to its neighbour k (under any accumulation)? */
TG_HD bool
tg_route_drains_to(const tg_route_view *r, size_t i, int k)
{
	const size_t n = (size_t) r->width * r->height;

	if (r->routing == TG_ROUTE_D8)
		return r->d8[i] == k;
	return r->frac[(size_t) k * n + i] > 0;
}

/* Bit k set: neighbour k of cell i (inside the grid) drains into i. */
TG_HD unsigned
tg_route_donors(const tg_route_view *r, size_t i)
{
	const int	W = r->width,
				H = r->height;
	const int	x = (int) (i % W),
				y = (int) (i / W);
	unsigned	mask = 0;
	int			k;

	for (k = 0; k < 8; k++)
	{
		int			nx = x + tg_nbr_dx(k),
					ny = y + tg_nbr_dy(k);

		if (nx >= 0 && ny >= 0 && nx < W && ny < H &&
			tg_route_drains_to(r, (size_t) ny * W + nx, tg_nbr_opposite(k)))
			mask |= 1u << k;
	}
	return mask;
}

/*
 * acc(i) = own + sum over donors n (bits of `donors`, tg_route_donors), in
 * neighbour order k = 0..7, of acc(n) share(n -> i), own being cell i's
 * weight.  Donors must be final.
 * gathered (NULL: read the routing's planes): the shares of fixed-share
 * routings gathered per receiving cell, share(neighbour k -> i) at
 * gathered[8 i + k], so a pull reads 32 contiguous bytes; the same values,
 * hence the same sum.  Every load is issued before the sum uses any: on the
 * GPU the eight neighbours' loads then overlap instead of following one
 * another.
 */
TG_HD double
tg_route_pull_own(const tg_route_view *r, double own, const double *acc, size_t i, unsigned donors,
				  const float *gathered)
{
	const int	W = r->width;
	const int	x = (int) (i % W),
				y = (int) (i / W);
	double		a[8];
	float		g[8] = {0, 0, 0, 0, 0, 0, 0, 0};
	double		sum = own;
	int			k;

	if (gathered)
	{
#ifdef __CUDA_ARCH__
		/* two 16-byte loads (the gathering kernel writes them aligned) */
		const float4 g0 = __ldg((const float4 *) gathered + 2 * i),
					g1 = __ldg((const float4 *) gathered + 2 * i + 1);

		g[0] = g0.x, g[1] = g0.y, g[2] = g0.z, g[3] = g0.w;
		g[4] = g1.x, g[5] = g1.y, g[6] = g1.z, g[7] = g1.w;
#else
		for (k = 0; k < 8; k++)
			g[k] = gathered[8 * i + k];
#endif
	}
	for (k = 0; k < 8; k++)
		a[k] = (donors >> k) & 1u ? TG_LOAD_SHARED(&acc[(size_t) (y + tg_nbr_dy(k)) * W + x + tg_nbr_dx(k)]) : 0.0;
	for (k = 0; k < 8; k++)
		if ((donors >> k) & 1u)
		{
			size_t		ni = (size_t) (y + tg_nbr_dy(k)) * W + x + tg_nbr_dx(k);
			double		s = gathered ? (double) g[k] : tg_route_share(r, ni, tg_nbr_opposite(k), a[k]);

			if (s > 0)
				sum = TG_DADD(sum, TG_DMUL(a[k], s));
		}
	return sum;
}

/* The same with cell i's weight from `weight` (NULL: every cell weighs 1). */
TG_HD double
tg_route_pull_from(const tg_route_view *r, const double *weight, const double *acc, size_t i,
				   unsigned donors, const float *gathered)
{
	return tg_route_pull_own(r, weight ? weight[i] : 1.0, acc, i, donors, gathered);
}

/* The same, finding the donors first. */
TG_HD double
tg_route_pull(const tg_route_view *r, const double *weight, const double *acc, size_t i)
{
	return tg_route_pull_from(r, weight, acc, i, tg_route_donors(r, i), NULL);
}

/* ------------------------------------------------------------------------
 * Soil loss and travel time
 * ------------------------------------------------------------------------ */

/* A decoded per-cell factor: values (NaN = nodata), or `value` everywhere. */
typedef struct tg_cell_factor
{
	const double *values;
	double		value;
} tg_cell_factor;

TG_HD double
tg_factor_at(const tg_cell_factor *f, size_t i)
{
	return f->values ? f->values[i] : f->value;
}

/*
 * Mitasova et al. (1996) LS from the accumulation in cells, the cell width
 * (metres) and tan of the slope: (m + 1) (A s / a0)^m (sin b / b0)^n.
 */
TG_HD double
tg_ls_value(double acc_cells, double width, double tan_b, double m, double n,
			double a0, double b0)
{
	double		sin_b = tan_b / sqrt(TG_DADD(1.0, TG_DMUL(tan_b, tan_b)));
	double		area = pow(TG_DMUL(acc_cells, width) / a0, m);

	return TG_DMUL(TG_DMUL(m + 1.0, area), pow(sin_b / b0, n));
}

/*
 * Zhao et al. (2010)'s time of one D8 step: n L / (K S^b), S the drop over
 * the step's length L, at least min_slope (flats and filled depressions).
 */
TG_HD double
tg_step_time(double drop, double length, double roughness, double velocity, double b,
			 double min_slope)
{
	double		s = drop / length;

	if (!(s >= min_slope))
		s = min_slope;
	return TG_DMUL(roughness, length) / TG_DMUL(velocity, pow(s, b));
}

/*
 * Products taken in slices of rows as the device hands them back, for a
 * caller that only encodes them: the slices are read from pinned staging
 * memory (room for two slices, so the copy of the next overlaps the sink's
 * work on this one).  A slice begins and ends at one of `cuts` (increasing
 * rows from 0 to the height: rows that no tile straddles); it may span
 * several.  planes[k]: rows [row0, row0 + nrows) of product k (surface,
 * receivers, accumulation; NULL where not asked), valid during the call
 * alone.  `used` is set once the first slice went to rows(): the caller then
 * must not read the planes.  A rows() failure ends the computation with its
 * status.
 *
 * With `planes` set, the caller leaves the product planes NULL (deferred[k]
 * says which it wants): they are allocated by planes() only where the
 * products come back whole (the CPU path, a GPU that cannot stream them), so
 * a streamed call never holds them.  planes() may be called more than once
 * (a GPU call falling back to the CPU); it hands back the same planes.
 */
#define TG_SINK_PLANES 3

struct tg_flow_products;

typedef struct tg_rows_sink
{
	const int  *cuts;
	int			ncuts;
	tg_status	(*rows) (const tg_ctx *ctx, void *arg, int row0, int nrows,
						 void *const planes[TG_SINK_PLANES], tg_error *err);
	void	   *arg;
	bool		used;
	bool		deferred[TG_SINK_PLANES];
	tg_status	(*planes) (const tg_ctx *ctx, void *arg, struct tg_flow_products *out, tg_error *err);
} tg_rows_sink;

/*
 * What the chain fill -> directions -> accumulation produces, for callers
 * that want more than the accumulation (the chained call keeps the data on
 * the device from DEM to accumulation).  acc is required, the rest optional
 * (a plane given, or deferred to the sink: tg_flow_wants).
 */
typedef struct tg_flow_products
{
	double	   *acc;			/* width * height, NaN where the DEM is nodata */
	void	   *surface;		/* the routing surface (the filled DEM when params->fill) */
	tg_pixtype	surface_type;	/* of surface: TG_PT_32BF or TG_PT_64BF */
	double		surface_nodata;
	uint16_t   *receivers;		/* OR of the ESRI codes of the neighbours receiving flow
								 * (D8: one code); 0 none; TG_NODATA_RECEIVERS for nodata */
	tg_rows_sink *sink;			/* or NULL: on the GPU, the products go there instead */
} tg_flow_products;

/* Whether product k (surface, receivers, accumulation) is asked for: its plane given or deferred. */
static inline bool
tg_flow_wants(const tg_flow_products *out, int k)
{
	const void *plane = k == 0 ? out->surface : k == 1 ? (void *) out->receivers : (void *) out->acc;

	return plane != NULL || (out->sink != NULL && out->sink->planes != NULL && out->sink->deferred[k]);
}

/* *out = *in with every plane there: the deferred ones allocated by the sink, for products coming back whole. */
static inline tg_status
tg_flow_planes(const tg_ctx *ctx, const tg_flow_products *in, tg_flow_products *out, tg_error *err)
{
	*out = *in;
	if (in->sink == NULL || in->sink->planes == NULL)
		return TG_OK;
	return in->sink->planes(ctx, in->sink->arg, out, err);
}

#define TG_NODATA_RECEIVERS 0xFFFF

#endif							/* TG_HYDRO_H */
