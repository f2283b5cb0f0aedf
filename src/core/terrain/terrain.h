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
 * Horn's gradient factors: tan(slope) = sqrt((kx dz_x)^2 + (ky dz_y)^2) with
 * kx = 1 / (8 scale pixel_width), ky = 1 / (8 scale pixel_height).  Computed
 * once per call so the per-cell work has no division.
 */
typedef struct tg_horn_factors
{
	double		kx;
	double		ky;
	tg_slope_units units;
} tg_horn_factors;

TG_HD tg_horn_factors
tg_horn_factors_for(const tg_slope_params p)
{
	tg_horn_factors f;

	f.kx = 1.0 / (8.0 * p.scale * p.pixel_width);
	f.ky = 1.0 / (8.0 * p.scale * p.pixel_height);
	f.units = p.units;
	return f;
}

/*
 * tan of the Horn slope of a 3x3 window
 *     a b c
 *     d e f
 *     g h i
 * given as w[0..8], NaN for a missing neighbour (outside the raster or
 * nodata), which takes the centre's value as in PostGIS' _st_slope4ma.
 * The centre must be valid.  Sums are formed in PostGIS' order.
 * kx = 1 / (8 scale dx), ky = 1 / (8 scale dy).
 */
TG_HD double
tg_horn_tan(const double w[9], double kx, double ky)
{
	double		e = w[4];
	double		a = isnan(w[0]) ? e : w[0];
	double		b = isnan(w[1]) ? e : w[1];
	double		c = isnan(w[2]) ? e : w[2];
	double		d = isnan(w[3]) ? e : w[3];
	double		r = isnan(w[5]) ? e : w[5];
	double		g = isnan(w[6]) ? e : w[6];
	double		h = isnan(w[7]) ? e : w[7];
	double		i = isnan(w[8]) ? e : w[8];
	double		gy = ((g + h + h + i) - (a + b + b + c)) * ky;
	double		gx = ((c + r + r + i) - (a + d + d + g)) * kx;

	return sqrt(gx * gx + gy * gy);
}

TG_HD float
tg_horn_slope(const double w[9], const tg_horn_factors f)
{
	double		tan_slope = tg_horn_tan(w, f.kx, f.ky);

	switch (f.units)
	{
		case TG_SLOPE_PERCENT:
			return (float) (100.0 * tan_slope);
		case TG_SLOPE_RADIANS:
			return (float) atan(tan_slope);
		case TG_SLOPE_DEGREES:
		default:
			return (float) (atan(tan_slope) * TG_DEGREES_PER_RADIAN);
	}
}

#endif							/* TG_TERRAIN_H */
