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

/*
 * The local terrain derivatives (tg_terrain): their per-cell formulas, shared
 * by the CPU (terrain_cpu.c) and CUDA (cuda/terrain.cu) code, so both
 * evaluate the same expressions in the same order.  What a call's cells
 * share is computed once on the host (tg_terrain_prepare).
 *
 * Conventions: a cell's 3 x 3 window is tg_window's (above), a missing
 * neighbour taking the centre's value.  Horn's gx is dz/dx eastwards, gy
 * dz/dy southwards; the Evans-Young p, q are dz/dx and dz/dy northwards.  The
 * formulas are written with comparisons and ternaries rather than branches,
 * fmin or fmax, so that the CPU's row loops vectorise; an option that picks a
 * formula (hillshade method, TRI algorithm, curvature type) is an argument,
 * a constant in each of the CPU's loops.
 */
#define TG_TERRAIN_PI 3.14159265358979323846

/* What every cell of a call shares. */
typedef struct tg_terrain_consts
{
	int			nproducts;
	tg_terrain_product products[TG_TERRAIN_PRODUCTS];
	tg_pixtype	types[TG_TERRAIN_PRODUCTS];
	double		nodata[TG_TERRAIN_PRODUCTS];
	/* slope and aspect: Horn's 1 / (8 scale dx), 1 / (8 scale dy) */
	double		kx,
				ky;
	tg_slope_units slope_units;
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
	static const double multidirectional[4] = {225, 270, 315, 360};

	memset(c, 0, sizeof *c);
	c->nproducts = p->nproducts;
	for (int k = 0; k < p->nproducts; k++)
	{
		c->products[k] = p->products[k];
		c->types[k] = p->types[k];
		c->nodata[k] = p->nodata[k];
	}
	c->kx = 1.0 / (8.0 * p->scale * p->pixel_width);
	c->ky = 1.0 / (8.0 * p->scale * p->pixel_height);
	c->slope_units = p->slope_units;
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

/* Does any product read Horn's differences (tg_horn_sums)? */
static inline bool
tg_terrain_reads_horn(const tg_terrain_consts *c)
{
	for (int k = 0; k < c->nproducts; k++)
		if (c->products[k] == TG_TERRAIN_SLOPE || c->products[k] == TG_TERRAIN_ASPECT ||
			c->products[k] == TG_TERRAIN_HILLSHADE)
			return true;
	return false;
}

/* tan of the slope from Horn's differences (tg_slope_in_units makes it the slope). */
TG_HD double
tg_terrain_slope_tan(const tg_terrain_consts *c, double dzx, double dzy)
{
	const double gx = dzx * c->kx,
				gy = dzy * c->ky;

	return sqrt(gx * gx + gy * gy);
}

/*
 * Clockwise from north of the steepest descent (-1: flat), radians or
 * degrees: atan2(east, north) of the descent, reduced to one atan of a
 * ratio no greater than 1 (within an ulp of atan2, at half its cost).
 */
TG_HD double
tg_terrain_aspect(const tg_terrain_consts *c, double dzx, double dzy)
{
	const double gx = dzx * c->kx,
				gy = dzy * c->ky;
	const double east = -gx,	/* the descent */
				north = gy,
				ax = fabs(east),
				ay = fabs(north);
	double		a;

	if (gx == 0 && gy == 0)
		return -1;
	a = ax <= ay ? atan(ax / ay) : 0.5 * TG_TERRAIN_PI - atan(ay / ax);
	if (north < 0)
		a = TG_TERRAIN_PI - a;
	if (east < 0)
		a = 2 * TG_TERRAIN_PI - a;
	if (a >= 2 * TG_TERRAIN_PI)
		a = 0;
	return a * c->aspect_factor;
}

/*
 * Light on the surface, 0..1, by the given method (the call's, or a constant
 * the CPU's loops are specialised on).
 */
TG_HD double
tg_terrain_light(const tg_terrain_consts *c, tg_hillshade_method method, double dzx, double dzy)
{
	const double gx = dzx * c->hx,
				gy = dzy * c->hy;
	const double ss = gx * gx + gy * gy;
	const double norm = sqrt(1.0 + ss);
	double		light;

	if (method == TG_HILLSHADE_MULTIDIRECTIONAL)
	{
		/* each light weighted by the gradient's square along its axis */
		const double weight[4] = {0.5 * (gx - gy) * (gx - gy), gx * gx, 0.5 * (gx + gy) * (gx + gy), gy * gy};
		double		sum = 0;

		for (int k = 0; k < 4; k++)
		{
			const double lit = c->sin_altitude - gx * c->light_x[k] + gy * c->light_y[k];

			sum += weight[k] * (lit > 0 ? lit : 0.0);
		}
		return ss == 0 ? c->sin_altitude : sum / (2.0 * ss) / norm;
	}
	light = (c->sin_altitude - gx * c->light_x[0] + gy * c->light_y[0]) / norm;
	if (method == TG_HILLSHADE_COMBINED)
	{
		/* the angle to the light, darkened by the slope: (pi/2)^2 at the darkest */
		const double angle = acos(light < -1.0 ? -1.0 : light > 1.0 ? 1.0 : light);

		light = 1.0 - angle * atan(sqrt(ss)) / (0.25 * TG_TERRAIN_PI * TG_TERRAIN_PI);
	}
	return light > 0 ? light : 0.0;
}

/* The hillshade stored: max_bright times the light for floats, gdaldem's 1..255 for bytes. */
TG_HD double
tg_terrain_shade(const tg_terrain_consts *c, double light, bool bytes)
{
	return bytes ? 1.0 + floor(254.0 * light + 0.5) : c->max_bright * light;
}

/* TPI, TRI and roughness: sums in PostGIS' order (a d g b h c f i). */
TG_HD double
tg_terrain_tpi(const tg_window *w)
{
	return w->e - (w->a + w->d + w->g + w->b + w->h + w->c + w->f + w->i) / 8.0;
}

TG_HD double
tg_terrain_tri(tg_tri_algorithm algorithm, const tg_window *w)
{
	const double a = w->a - w->e,
				d = w->d - w->e,
				g = w->g - w->e,
				b = w->b - w->e,
				h = w->h - w->e,
				c = w->c - w->e,
				f = w->f - w->e,
				i = w->i - w->e;

	if (algorithm == TG_TRI_RILEY)
		return sqrt(a * a + d * d + g * g + b * b + h * h + c * c + f * f + i * i);
	return (fabs(a) + fabs(d) + fabs(g) + fabs(b) + fabs(h) + fabs(c) + fabs(f) + fabs(i)) / 8.0;
}

TG_HD double
tg_terrain_roughness(const tg_window *w)
{
	const double v[8] = {w->b, w->c, w->d, w->e, w->f, w->g, w->h, w->i};
	double		lo = w->a,
				hi = w->a;

	for (int k = 0; k < 8; k++)
	{
		lo = v[k] < lo ? v[k] : lo;
		hi = v[k] > hi ? v[k] : hi;
	}
	return hi - lo;
}

/*
 * Curvature from Evans-Young's quadratic fit (Evans 1979; Florinsky 2016,
 * eqs. 4.9-4.13 for the derivatives and chapter 2 for the definitions and
 * signs: convex is positive).  Where the gradient vanishes the curvatures
 * along and across it are undefined: 0.  The type is the call's, or a
 * constant the CPU's loops are specialised on.
 */
TG_HD double
tg_terrain_curvature(const tg_terrain_consts *c, tg_curvature_type type, const tg_window *w)
{
	const double p = (w->c + w->f + w->i - w->a - w->d - w->g) * c->ex;
	const double q = (w->a + w->b + w->c - w->g - w->h - w->i) * c->ey;
	const double r = (w->a + w->c + w->d + w->f + w->g + w->i - 2.0 * (w->b + w->e + w->h)) * c->exx;
	const double t = (w->a + w->b + w->c + w->g + w->h + w->i - 2.0 * (w->d + w->e + w->f)) * c->eyy;
	const double s = (w->c + w->g - w->a - w->i) * c->exy;
	const double p2 = p * p,
				q2 = q * q,
				g2 = p2 + q2,
				ww = 1.0 + g2;
	double		mean,
				gauss,
				spread;

	switch (type)
	{
		case TG_CURVATURE_PROFILE:
			return g2 == 0 ? 0 : -(p2 * r + 2.0 * p * q * s + q2 * t) / (g2 * ww * sqrt(ww));
		case TG_CURVATURE_PLAN:
			return g2 == 0 ? 0 : -(q2 * r - 2.0 * p * q * s + p2 * t) / (g2 * sqrt(g2));
		case TG_CURVATURE_TANGENTIAL:
			return g2 == 0 ? 0 : -(q2 * r - 2.0 * p * q * s + p2 * t) / (g2 * sqrt(ww));
		case TG_CURVATURE_TOTAL:
			return r * r + 2.0 * s * s + t * t;
		default:
			break;
	}
	mean = -((1.0 + q2) * r - 2.0 * p * q * s + (1.0 + p2) * t) / (2.0 * ww * sqrt(ww));
	gauss = (r * t - s * s) / (ww * ww);
	spread = mean * mean - gauss;
	spread = spread > 0 ? spread : 0.0;
	switch (type)
	{
		case TG_CURVATURE_MEAN:
			return mean;
		case TG_CURVATURE_GAUSSIAN:
			return gauss;
		case TG_CURVATURE_MINIMAL:
			return mean - sqrt(spread);
		default:
			return mean + sqrt(spread);
	}
}

/*
 * Geomorphons (Jasiewicz and Stepinski 2013).  Along each direction the
 * steepest rise and the steepest drop seen decide: higher where the rise
 * exceeds the flat threshold and the drop, lower where the drop exceeds the
 * threshold and the rise, else level.  That is GRASS r.geomorphon's rule
 * (comparison=anglev2: a threshold on each angle, then the steeper wins,
 * rather than the paper's threshold on their difference), so that maps
 * compare with the authors' own tool, but on signed slopes: where the rise
 * and the drop are equally steep, a line that only descends is lower, one
 * that only rises higher, one that does both level (anglev2 says higher,
 * anglev1 level).  Slopes along a direction are compared as fractions
 * dz / n (the step's length is common to them) by cross-multiplying, so
 * equal slopes stay equal: exact for integer elevations.  Nodata cells on
 * the way are passed over; a direction with none valid is level.
 *
 * One step along a line of sight: dz at n steps from the centre against the
 * steepest rise (*rise over *rise_n steps) and drop so far (n = 0: none yet).
 */
TG_HD void
tg_geomorphon_step(double dz, double n, double *rise, double *rise_n, double *drop, double *drop_n)
{
	/* read once, and & and | rather than && and ||: no branches, so the CPU's loops vectorise */
	const double r = *rise,
				rn = *rise_n,
				d = *drop,
				dn = *drop_n;
	const bool	valid = !isnan(dz);
	const bool	steeper_rise = valid & ((rn == 0) | (dz * rn > r * n));
	const bool	steeper_drop = valid & ((dn == 0) | (-dz * dn > d * n));

	*rise = steeper_rise ? dz : r;
	*rise_n = steeper_rise ? n : rn;
	*drop = steeper_drop ? -dz : d;
	*drop_n = steeper_drop ? n : dn;
}

/* A direction's verdict from its line of sight: 1 higher, -1 lower, 0 level. */
TG_HD int
tg_geomorphon_vote(double rise, double rise_n, double drop, double drop_n, double flat_rise)
{
	const bool	seen = rise_n != 0;
	const bool	higher = seen & (rise > flat_rise * rise_n) & (rise * drop_n > drop * rise_n);
	const bool	lower = seen & !higher & (drop > flat_rise * drop_n) & (drop * rise_n > rise * drop_n);

	return (int) higher - (int) lower;
}

/*
 * The landform by the number of lower (rows) and higher (columns)
 * directions; impossible counts are 0.
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
 * search_radius cells of it on every side).
 */
TG_HD int
tg_terrain_geomorphon(const tg_terrain_consts *c, const double *centre, ptrdiff_t stride)
{
	int			lower = 0,
				higher = 0;

	for (int k = 0; k < 8; k++)
	{
		const ptrdiff_t step = tg_nbr_dy(k) * stride + tg_nbr_dx(k);
		double		rise = 0,
					rise_n = 0,
					drop = 0,
					drop_n = 0;
		int			vote;

		for (int n = c->first_step[k]; n <= c->last_step[k]; n++)
			tg_geomorphon_step(centre[n * step] - centre[0], n, &rise, &rise_n, &drop, &drop_n);
		vote = tg_geomorphon_vote(rise, rise_n, drop, drop_n, c->flat_rise[k]);
		higher += vote > 0;
		lower += vote < 0;
	}
	return tg_geomorphon_form(lower, higher);
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
 * Every product of cell i, the cell at `centre` in a block of rows (stride
 * apart), or its nodata where the centre is: the window read once, Horn's
 * differences formed once for the products that share them.
 */
TG_HD void
tg_terrain_cell(const tg_terrain_consts *c, const double *centre, ptrdiff_t stride, void *const *out, size_t i)
{
	tg_window	w;
	double		dzx,
				dzy;

	if (isnan(centre[0]))
	{
		for (int k = 0; k < c->nproducts; k++)
			tg_terrain_store(out[k], c->types[k], i, c->nodata[k]);
		return;
	}
	w = tg_window_at(centre, stride);
	tg_horn_sums(&w, &dzx, &dzy);
	for (int k = 0; k < c->nproducts; k++)
	{
		double		v;

		switch (c->products[k])
		{
			case TG_TERRAIN_SLOPE:
				v = tg_slope_in_units(tg_terrain_slope_tan(c, dzx, dzy), c->slope_units);
				break;
			case TG_TERRAIN_ASPECT:
				v = tg_terrain_aspect(c, dzx, dzy);
				break;
			case TG_TERRAIN_HILLSHADE:
				v = tg_terrain_shade(c, tg_terrain_light(c, c->hillshade, dzx, dzy), c->types[k] == TG_PT_8BUI);
				break;
			case TG_TERRAIN_TPI:
				v = tg_terrain_tpi(&w);
				break;
			case TG_TERRAIN_TRI:
				v = tg_terrain_tri(c->tri, &w);
				break;
			case TG_TERRAIN_ROUGHNESS:
				v = tg_terrain_roughness(&w);
				break;
			case TG_TERRAIN_CURVATURE:
				v = tg_terrain_curvature(c, c->curvature, &w);
				break;
			case TG_TERRAIN_GEOMORPHONS:
			default:
				v = tg_terrain_geomorphon(c, centre, stride);
				break;
		}
		tg_terrain_store(out[k], c->types[k], i, v);
	}
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
