/*
 * terrain.h — slope and the local derivatives of a DEM (terrain/): the
 * per-cell formulas the CPU and CUDA code share, so both backends evaluate
 * exactly the same expression in the same order, and the CPU side
 * (slope_cpu.c).  Internal to the core and cuda/.
 */
#ifndef TG_TERRAIN_H
#define TG_TERRAIN_H

#include <float.h>
#include <math.h>
#include <stdbool.h>

#include "raster/raster.h"

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

#ifdef __cplusplus
extern "C"
{
#endif

/* Horn slope on the CPU (tg_slope's CPU side). */
tg_status	tg_cpu_slope(const tg_ctx *ctx, const tg_band *dem,
						 const tg_slope_params *params, float *out, tg_error *err);

#ifdef __cplusplus
}
#endif

#endif							/* TG_TERRAIN_H */
