/*
 * tg_hydro.h — per-cell hydrology formulas shared by the CPU and CUDA code
 * (fill increment, neighbour geometry, D8 choice, multiple-flow shares), so
 * both backends evaluate the same expressions in the same order.
 * Internal to the core and cuda/; not part of the public API.
 */
#ifndef TG_HYDRO_H
#define TG_HYDRO_H

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "tg_terrain.h"

/*
 * Arithmetic that must round the same on both backends: on the device, no
 * fused multiply-add may merge a product into a sum the CPU rounds twice.
 */
#ifdef __CUDA_ARCH__
#define TG_DADD(a, b) __dadd_rn((a), (b))
#define TG_DMUL(a, b) __dmul_rn((a), (b))
/* values other blocks of a running kernel may have written: read from L2 */
#define TG_LOAD_SHARED(p) __ldcg(p)
#else
#define TG_DADD(a, b) ((a) + (b))
#define TG_DMUL(a, b) ((a) * (b))
#define TG_LOAD_SHARED(p) (*(p))
#endif

/* Neighbour k (ESRI order, clockwise from east): column and row offsets. */
TG_HD int
tg_nbr_dx(int k)
{
	return (k == 0 || k == 1 || k == 7) ? 1 : (k >= 3 && k <= 5) ? -1 : 0;
}

TG_HD int
tg_nbr_dy(int k)
{
	return (k >= 1 && k <= 3) ? 1 : (k >= 5 && k <= 7) ? -1 : 0;
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
 * A routing as the accumulation reads it (tg_backends.h's tg_route, or its
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
 * acc(i) = w(i) + sum over donors n (bits of `donors`, tg_route_donors), in
 * neighbour order k = 0..7, of acc(n) share(n -> i).  Donors must be final.
 * weight NULL: every cell weighs 1.
 * gathered (NULL: read the routing's planes): the shares of fixed-share
 * routings gathered per receiving cell, share(neighbour k -> i) at
 * gathered[8 i + k], so a pull reads 32 contiguous bytes; the same values,
 * hence the same sum.  Every load is issued before the sum uses any: on the
 * GPU the eight neighbours' loads then overlap instead of following one
 * another.
 */
TG_HD double
tg_route_pull_from(const tg_route_view *r, const double *weight, const double *acc, size_t i,
				   unsigned donors, const float *gathered)
{
	const int	W = r->width;
	const int	x = (int) (i % W),
				y = (int) (i / W);
	double		a[8];
	float		g[8] = {0, 0, 0, 0, 0, 0, 0, 0};
	double		sum = weight ? weight[i] : 1.0;
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

#endif							/* TG_HYDRO_H */
