/*
 * terrain.h — slope and the local derivatives of a DEM (terrain/): Horn's
 * gradient, which the hydrology shares, the per-cell formulas of
 * tg_terrain, which cuda/terrain.cu shares, and its CPU side
 * (terrain_cpu.c).  Internal to the core and cuda/.
 */
#ifndef TG_TERRAIN_H
#define TG_TERRAIN_H

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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
 * Horn's gradient of a 3x3 window
 *     a b c
 *     d e f
 *     g h i
 * given as w[0..8], NaN for a missing neighbour (outside the raster or
 * nodata), which takes the centre's value as in PostGIS' _st_slope4ma.
 * The centre must be valid.  Sums are formed in PostGIS' order.
 * kx = 1 / (8 scale dx), ky = 1 / (8 scale dy): *gx is dz/dx eastwards,
 * *gy dz/dy southwards (down the rows).
 */
TG_HD void
tg_horn_gradient(const double w[9], double kx, double ky, double *gx, double *gy)
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

	*gy = ((g + h + h + i) - (a + b + b + c)) * ky;
	*gx = ((c + r + r + i) - (a + d + d + g)) * kx;
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

/* The Horn slope in the call's units (tg_slope stores it as 32BF). */
TG_HD double
tg_horn_slope(const double w[9], const tg_horn_factors f)
{
	double		tan_slope = tg_horn_tan(w, f.kx, f.ky);

	switch (f.units)
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

/*
 * The local terrain derivatives (tg_terrain): their per-cell formulas, shared
 * by the CPU (terrain_cpu.c) and CUDA (cuda/terrain.cu) code, so both
 * evaluate the same expressions in the same order.  What a call's cells
 * share is computed once on the host (tg_terrain_prepare).
 *
 * Conventions: the 3 x 3 window is w[0..8], rows top to bottom,
 *     a b c
 *     d e f
 *     g h i
 * NaN for a neighbour outside the raster or nodata, which takes the centre's
 * value (tg_horn_gradient, terrain_filled).  Horn's gx is dz/dx eastwards,
 * gy dz/dy southwards; the Evans-Young p, q are dz/dx and dz/dy northwards.
 */
#define TG_TERRAIN_PI 3.14159265358979323846

/* What every cell of a call shares. */
typedef struct tg_terrain_consts
{
	int			nproducts;
	tg_terrain_product products[TG_TERRAIN_PRODUCTS];
	tg_pixtype	types[TG_TERRAIN_PRODUCTS];
	double		nodata[TG_TERRAIN_PRODUCTS];
	tg_horn_factors slope;		/* kx, ky = 1 / (8 scale dx), 1 / (8 scale dy) */
	double		aspect_factor;	/* degrees per radian, or 1 */
	/* hillshade: Horn's factors with the z factor; each light's sin(azimuth)
	 * cos(altitude) and cos(azimuth) cos(altitude) */
	tg_hillshade_method hillshade;
	double		hx,
				hy;
	double		sin_altitude;
	double		light_x[4],
				light_y[4];
	double		max_bright;
	tg_tri_algorithm tri;
	/* curvature: Evans-Young's 1/(6 dx), 1/(6 dy), 1/(3 dx^2), 1/(3 dy^2), 1/(4 dx dy) */
	tg_curvature_type curvature;
	double		ex,
				ey,
				exx,
				eyy,
				exy;
	/* geomorphons: per direction (tg_nbr_dx/dy's: E, SE, S, SW, W, NW, N, NE) the steps
	 * first..last along it, and the rise of one step at the flat threshold (its
	 * tangent times the step's length in vertical units) */
	int			first_step[8],
				last_step[8];
	double		flat_rise[8];
} tg_terrain_consts;

/* On the host: the constants of a call (parameters already checked). */
static inline void
tg_terrain_prepare(const tg_terrain_params *p, tg_terrain_consts *c)
{
	const double dx = p->scale * p->pixel_width,
				dy = p->scale * p->pixel_height,
				rad = TG_TERRAIN_PI / 180.0,
				alt = p->altitude * rad;
	tg_slope_params sp = {p->pixel_width, p->pixel_height, p->scale, p->slope_units, 0};
	static const double multidirectional[4] = {225, 270, 315, 360};

	memset(c, 0, sizeof *c);
	c->nproducts = p->nproducts;
	for (int k = 0; k < p->nproducts; k++)
	{
		c->products[k] = p->products[k];
		c->types[k] = p->types[k];
		c->nodata[k] = p->nodata[k];
	}
	c->slope = tg_horn_factors_for(sp);
	c->aspect_factor = p->aspect_units == TG_SLOPE_RADIANS ? 1.0 : TG_DEGREES_PER_RADIAN;
	c->hillshade = p->hillshade;
	c->hx = p->z_factor / (8.0 * dx);
	c->hy = p->z_factor / (8.0 * dy);
	c->sin_altitude = sin(alt);
	for (int k = 0; k < 4; k++)
	{
		const double az = (p->hillshade == TG_HILLSHADE_MULTIDIRECTIONAL ? multidirectional[k] : p->azimuth) * rad;

		c->light_x[k] = sin(az) * cos(alt);
		c->light_y[k] = cos(az) * cos(alt);
	}
	c->max_bright = p->max_bright;
	c->tri = p->tri;
	c->curvature = p->curvature;
	c->ex = 1.0 / (6.0 * dx);
	c->ey = 1.0 / (6.0 * dy);
	c->exx = 1.0 / (3.0 * dx * dx);
	c->eyy = 1.0 / (3.0 * dy * dy);
	c->exy = 1.0 / (4.0 * dx * dy);
	for (int k = 0; k < 8; k++)
	{
		/* a step's length in cells: 1 along a row or column, sqrt 2 along a diagonal */
		const double cells = (k % 2) ? sqrt(2.0) : 1.0;

		c->first_step[k] = (int) floor(p->skip / cells) + 1;
		c->last_step[k] = (int) floor(p->search_radius / cells + 1e-9);
		c->flat_rise[k] = tan(p->flat_threshold * rad) *
			sqrt((tg_nbr_dx(k) * dx) * (tg_nbr_dx(k) * dx) + (tg_nbr_dy(k) * dy) * (tg_nbr_dy(k) * dy));
	}
}

/* The window with missing neighbours set to the centre. */
TG_HD void
tg_terrain_filled(const double w[9], double f[9])
{
	for (int k = 0; k < 9; k++)
		f[k] = isnan(w[k]) ? w[4] : w[k];
}

/* Clockwise from north of the steepest descent (-1: flat), radians or degrees. */
TG_HD double
tg_terrain_aspect(const tg_terrain_consts *c, const double w[9])
{
	double		gx,
				gy,
				a;

	tg_horn_gradient(w, c->slope.kx, c->slope.ky, &gx, &gy);
	if (gx == 0 && gy == 0)
		return -1;
	/* the descent points east by -gx and north by gy */
	a = atan2(-gx, gy);
	if (a < 0)
		a += 2 * TG_TERRAIN_PI;
	if (a >= 2 * TG_TERRAIN_PI)
		a = 0;
	return (a + 0.0) * c->aspect_factor;
}

/* Light on the surface, 0..1 (max_bright times that for floats; gdaldem's 1..255 for bytes). */
TG_HD double
tg_terrain_hillshade(const tg_terrain_consts *c, const double w[9], bool bytes)
{
	double		gx,
				gy,
				ss,
				norm,
				light;

	tg_horn_gradient(w, c->hx, c->hy, &gx, &gy);
	ss = gx * gx + gy * gy;
	norm = sqrt(1.0 + ss);
	if (c->hillshade == TG_HILLSHADE_MULTIDIRECTIONAL)
	{
		/* each light weighted by the gradient's square along its axis */
		const double weight[4] = {0.5 * (gx - gy) * (gx - gy), gx * gx, 0.5 * (gx + gy) * (gx + gy), gy * gy};
		double		sum = 0;

		if (ss == 0)
			light = c->sin_altitude;
		else
		{
			for (int k = 0; k < 4; k++)
				sum += weight[k] * fmax(0.0, c->sin_altitude - gx * c->light_x[k] + gy * c->light_y[k]);
			light = sum / (2.0 * ss) / norm;
		}
	}
	else
	{
		light = (c->sin_altitude - gx * c->light_x[0] + gy * c->light_y[0]) / norm;
		if (c->hillshade == TG_HILLSHADE_COMBINED)
		{
			/* the angle to the light, darkened by the slope: (pi/2)^2 at the darkest */
			const double angle = acos(fmin(1.0, fmax(-1.0, light)));

			light = 1.0 - angle * atan(sqrt(ss)) / (0.25 * TG_TERRAIN_PI * TG_TERRAIN_PI);
		}
		light = fmax(0.0, light);
	}
	return bytes ? 1.0 + floor(254.0 * light + 0.5) : c->max_bright * light;
}

/* TPI, TRI and roughness: sums in PostGIS' order (a d g b h c f i). */
TG_HD double
tg_terrain_tpi(const double f[9])
{
	return f[4] - (f[0] + f[3] + f[6] + f[1] + f[7] + f[2] + f[5] + f[8]) / 8.0;
}

TG_HD double
tg_terrain_tri(const tg_terrain_consts *c, const double f[9])
{
	const int	order[8] = {0, 3, 6, 1, 7, 2, 5, 8};
	double		sum = 0;

	for (int k = 0; k < 8; k++)
	{
		const double d = f[order[k]] - f[4];

		sum += c->tri == TG_TRI_RILEY ? d * d : fabs(d);
	}
	return c->tri == TG_TRI_RILEY ? sqrt(sum) : sum / 8.0;
}

TG_HD double
tg_terrain_roughness(const double f[9])
{
	double		lo = f[0],
				hi = f[0];

	for (int k = 1; k < 9; k++)
	{
		lo = fmin(lo, f[k]);
		hi = fmax(hi, f[k]);
	}
	return hi - lo;
}

/*
 * Curvature from Evans-Young's quadratic fit (Evans 1979; Florinsky 2016,
 * eqs. 4.9-4.13 for the derivatives and chapter 2 for the definitions and
 * signs: convex is positive).  Where the gradient vanishes the curvatures
 * along and across it are undefined: 0.
 */
TG_HD double
tg_terrain_curvature(const tg_terrain_consts *c, const double f[9])
{
	const double a = f[0], b = f[1], cc = f[2], d = f[3], e = f[4], ff = f[5], g = f[6], h = f[7], i = f[8];
	const double p = (cc + ff + i - a - d - g) * c->ex;
	const double q = (a + b + cc - g - h - i) * c->ey;
	const double r = (a + cc + d + ff + g + i - 2.0 * (b + e + h)) * c->exx;
	const double t = (a + b + cc + g + h + i - 2.0 * (d + e + ff)) * c->eyy;
	const double s = (cc + g - a - i) * c->exy;
	const double p2 = p * p,
				q2 = q * q,
				g2 = p2 + q2,
				w = 1.0 + g2;
	double		mean,
				gauss;

	switch (c->curvature)
	{
		case TG_CURVATURE_PROFILE:
			return g2 == 0 ? 0 : -(p2 * r + 2.0 * p * q * s + q2 * t) / (g2 * w * sqrt(w));
		case TG_CURVATURE_PLAN:
			return g2 == 0 ? 0 : -(q2 * r - 2.0 * p * q * s + p2 * t) / (g2 * sqrt(g2));
		case TG_CURVATURE_TANGENTIAL:
			return g2 == 0 ? 0 : -(q2 * r - 2.0 * p * q * s + p2 * t) / (g2 * sqrt(w));
		case TG_CURVATURE_TOTAL:
			return r * r + 2.0 * s * s + t * t;
		default:
			break;
	}
	mean = -((1.0 + q2) * r - 2.0 * p * q * s + (1.0 + p2) * t) / (2.0 * w * sqrt(w));
	gauss = (r * t - s * s) / (w * w);
	switch (c->curvature)
	{
		case TG_CURVATURE_MEAN:
			return mean;
		case TG_CURVATURE_GAUSSIAN:
			return gauss;
		case TG_CURVATURE_MINIMAL:
			return mean - sqrt(fmax(0.0, mean * mean - gauss));
		default:
			return mean + sqrt(fmax(0.0, mean * mean - gauss));
	}
}

/*
 * The landform of Jasiewicz and Stepinski (2013) by the number of lower
 * (rows) and higher (columns) directions; impossible counts are 0.
 */
TG_HD int
tg_geomorphon_form(int lower, int higher)
{
	enum
	{
		FL = TG_FORM_FLAT, PK = TG_FORM_PEAK, RI = TG_FORM_RIDGE, SH = TG_FORM_SHOULDER,
		SP = TG_FORM_SPUR, SL = TG_FORM_SLOPE, HL = TG_FORM_HOLLOW, FS = TG_FORM_FOOTSLOPE,
		VL = TG_FORM_VALLEY, PT = TG_FORM_PIT
	};
	const uint8_t forms[9][9] = {
		{FL, FL, FL, FS, FS, VL, VL, VL, PT},
		{FL, FL, FS, FS, FS, VL, VL, VL, 0},
		{FL, SH, SL, SL, HL, HL, VL, 0, 0},
		{SH, SH, SL, SL, SL, HL, 0, 0, 0},
		{SH, SH, SP, SL, SL, 0, 0, 0, 0},
		{RI, RI, SP, SP, 0, 0, 0, 0, 0},
		{RI, RI, RI, 0, 0, 0, 0, 0, 0},
		{RI, RI, 0, 0, 0, 0, 0, 0, 0},
		{PK, 0, 0, 0, 0, 0, 0, 0, 0},
	};

	return forms[lower][higher];
}

/*
 * The geomorphon of the cell at `centre` in a block of decoded rows (row
 * stride `stride`, NaN for nodata and beyond the raster, at least
 * search_radius cells of it on every side).  Along each direction the
 * steepest rise and the steepest drop seen decide: higher where the rise
 * exceeds the flat threshold and the drop, lower where the drop exceeds the
 * threshold and the rise, else level (r.geomorphon's comparison=anglev2).
 * Slopes along a direction are compared as fractions dz / n (the step's
 * length is common to them) by cross-multiplying, so equal slopes stay
 * equal: exact for integer elevations.  Nodata cells on the way are passed
 * over; a direction with none valid is level.
 */
TG_HD int
tg_terrain_geomorphon(const tg_terrain_consts *c, const double *centre, ptrdiff_t stride)
{
	const double z0 = centre[0];
	int			lower = 0,
				higher = 0;

	for (int k = 0; k < 8; k++)
	{
		const ptrdiff_t step = tg_nbr_dy(k) * stride + tg_nbr_dx(k);
		double		rise = 0,
					drop = 0;	/* the steepest, as dz over rise_n and drop_n steps */
		int			rise_n = 0,
					drop_n = 0;

		for (int n = c->first_step[k]; n <= c->last_step[k]; n++)
		{
			const double dz = centre[n * step] - z0;

			if (isnan(dz))
				continue;
			if (rise_n == 0 || dz * rise_n > rise * n)
			{
				rise = dz;
				rise_n = n;
			}
			if (drop_n == 0 || -dz * drop_n > drop * n)
			{
				drop = -dz;
				drop_n = n;
			}
		}
		if (rise_n == 0)
			continue;
		if (rise > c->flat_rise[k] * rise_n && rise * drop_n > drop * rise_n)
			higher++;
		else if (drop > c->flat_rise[k] * drop_n && drop * rise_n > rise * drop_n)
			lower++;
	}
	return tg_geomorphon_form(lower, higher);
}

/* Product k of a valid cell: its 3 x 3 window, and its place in a block of rows for the geomorphons. */
TG_HD double
tg_terrain_value(const tg_terrain_consts *c, int k, const double w[9], const double *centre, ptrdiff_t stride)
{
	double		f[9];

	switch (c->products[k])
	{
		case TG_TERRAIN_SLOPE:
			return tg_horn_slope(w, c->slope);
		case TG_TERRAIN_ASPECT:
			return tg_terrain_aspect(c, w);
		case TG_TERRAIN_HILLSHADE:
			return tg_terrain_hillshade(c, w, c->types[k] == TG_PT_8BUI);
		case TG_TERRAIN_GEOMORPHONS:
			return tg_terrain_geomorphon(c, centre, stride);
		default:
			break;
	}
	tg_terrain_filled(w, f);
	switch (c->products[k])
	{
		case TG_TERRAIN_TPI:
			return tg_terrain_tpi(f);
		case TG_TERRAIN_TRI:
			return tg_terrain_tri(c, f);
		case TG_TERRAIN_ROUGHNESS:
			return tg_terrain_roughness(f);
		default:
			return tg_terrain_curvature(c, f);
	}
}

/* Value v into cell i of a plane of type t (32BF, 64BF or 8BUI). */
TG_HD void
tg_terrain_store(void *plane, tg_pixtype t, size_t i, double v)
{
	if (t == TG_PT_64BF)
		((double *) plane)[i] = v;
	else if (t == TG_PT_8BUI)
		((uint8_t *) plane)[i] = (uint8_t) v;
	else
		((float *) plane)[i] = (float) v;
}

/*
 * Every product of cell i: the window w of the cell at `centre` in a block
 * of rows (stride apart), or its nodata where the centre is.
 */
TG_HD void
tg_terrain_cell(const tg_terrain_consts *c, const double *centre, ptrdiff_t stride, void *const *out, size_t i)
{
	double		w[9];

	if (isnan(centre[0]))
	{
		for (int k = 0; k < c->nproducts; k++)
			tg_terrain_store(out[k], c->types[k], i, c->nodata[k]);
		return;
	}
	for (int r = 0; r < 3; r++)
		for (int q = 0; q < 3; q++)
			w[3 * r + q] = centre[(r - 1) * stride + (q - 1)];
	for (int k = 0; k < c->nproducts; k++)
		tg_terrain_store(out[k], c->types[k], i, tg_terrain_value(c, k, w, centre, stride));
}

/* The rows a product reads above and below a cell: 1, or search_radius for the geomorphons. */
static inline int
tg_terrain_halo(const tg_terrain_params *params)
{
	for (int k = 0; k < params->nproducts; k++)
		if (params->products[k] == TG_TERRAIN_GEOMORPHONS)
			return params->search_radius;
	return 1;
}

#ifdef __cplusplus
extern "C"
{
#endif

/* The local derivatives on the CPU (tg_terrain's CPU side, terrain_cpu.c). */
tg_status	tg_cpu_terrain(const tg_ctx *ctx, const tg_band *dem, const tg_terrain_params *params,
						   void *const *out, tg_error *err);

#ifdef __cplusplus
}
#endif

#endif							/* TG_TERRAIN_H */
