/*
 * tg_terrain.h — per-cell terrain formulas shared by the CPU and CUDA code,
 * so both backends evaluate exactly the same expression in the same order.
 * Internal to the core and cuda/; not part of the public API.
 */
#ifndef TG_TERRAIN_H
#define TG_TERRAIN_H

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>

#include "tg_core.h"

#ifdef __CUDACC__
#define TG_HD __host__ __device__ __forceinline__
#else
#define TG_HD static inline
#endif

/*
 * Is a stored value nodata?  NaN always is.  Float types match the nodata
 * value within FLT_EPSILON (PostGIS' FLT_EQ), integer types exactly; a band
 * flagged "all nodata" has no valid cell.
 */
TG_HD bool
tg_is_nodata(double v, bool has_nodata, bool all_nodata, bool is_float,
			 double nodata)
{
	if (isnan(v))
		return true;
	if (!has_nodata)
		return false;
	if (all_nodata)
		return true;
	return is_float ? fabs(v - nodata) <= FLT_EPSILON : v == nodata;
}

#define TG_DEGREES_PER_RADIAN 57.295779513082320876798

/*
 * The 3x3 window of a valid cell
 *     a b c
 *     d e f
 *     g h i
 * with each missing neighbour (outside the raster or nodata: NaN) taking the
 * centre's value, as in PostGIS' _st_slope4ma.  The ternaries are blends
 * that vectorise (terrain_cpu.c).
 */
typedef struct tg_window
{
	double		a,
				b,
				c,
				d,
				e,
				f,
				g,
				h,
				i;
} tg_window;

/* The window of the cell at `centre` in rows `stride` apart (centre valid). */
TG_HD tg_window
tg_window_at(const double *centre, ptrdiff_t stride)
{
	const double e = centre[0];
	const double *up = centre - stride,
			   *down = centre + stride;
	tg_window	w;

	w.a = isnan(up[-1]) ? e : up[-1];
	w.b = isnan(up[0]) ? e : up[0];
	w.c = isnan(up[1]) ? e : up[1];
	w.d = isnan(centre[-1]) ? e : centre[-1];
	w.e = e;
	w.f = isnan(centre[1]) ? e : centre[1];
	w.g = isnan(down[-1]) ? e : down[-1];
	w.h = isnan(down[0]) ? e : down[0];
	w.i = isnan(down[1]) ? e : down[1];
	return w;
}

/*
 * Horn's elevation differences, in PostGIS' order: *dzx = (c+2f+i) - (a+2d+g)
 * eastwards, *dzy = (g+2h+i) - (a+2b+c) southwards (down the rows).  Times
 * 1 / (8 scale dx) and 1 / (8 scale dy) they are the gradient.
 */
TG_HD void
tg_horn_sums(const tg_window *w, double *dzx, double *dzy)
{
	*dzx = (w->c + w->f + w->f + w->i) - (w->a + w->d + w->d + w->g);
	*dzy = (w->g + w->h + w->h + w->i) - (w->a + w->b + w->b + w->c);
}

/*
 * Horn's gradient of a 3x3 window given as w[0..9] (rows top to bottom,
 * NaN for a missing neighbour; the centre valid), kx = 1 / (8 scale dx),
 * ky = 1 / (8 scale dy): *gx is dz/dx eastwards, *gy dz/dy southwards.
 */
TG_HD void
tg_horn_gradient(const double w[9], double kx, double ky, double *gx, double *gy)
{
	const tg_window f = tg_window_at(w + 4, 3);
	double		dzx,
				dzy;

	tg_horn_sums(&f, &dzx, &dzy);
	*gx = dzx * kx;
	*gy = dzy * ky;
}

/* tan of the Horn slope of a 3x3 window (tg_horn_gradient's). */
TG_HD double
tg_horn_tan(const double w[9], double kx, double ky)
{
	double		gx,
				gy;

	tg_horn_gradient(w, kx, ky, &gx, &gy);
	return sqrt(gx * gx + gy * gy);
}

/* A slope of tangent tan_slope in the given units (tg_slope stores it as 32BF). */
TG_HD double
tg_slope_in_units(double tan_slope, tg_slope_units units)
{
	switch (units)
	{
		case TG_SLOPE_PERCENT:
			return 100.0 * tan_slope;
		case TG_SLOPE_RADIANS:
			return atan(tan_slope);
		case TG_SLOPE_DEGREES:
		default:
			return atan(tan_slope) * TG_DEGREES_PER_RADIAN;
	}
}

#endif							/* TG_TERRAIN_H */
