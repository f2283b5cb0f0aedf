/*
 * geometry.c — metric cell spacing per row.
 *
 * Geographic rasters (degrees) get their spacing from the WGS84 ellipsoid at
 * the latitude of the row's centre: east-west N(phi) cos(phi) dlon, north-south
 * M(phi) dlat, with N and M the prime-vertical and meridional radii.  Other
 * datums differ from WGS84 by well under 0.01 % in these radii.
 */
#include "raster/raster.h"

#include <math.h>

#define WGS84_A 6378137.0
#define WGS84_F (1.0 / 298.257223563)

void
tg_row_spacing(const tg_grid_geometry *g, int row, double *dx, double *dy)
{
	double		e2,
				phi,
				s,
				w;

	if (!g->geographic)
	{
		*dx = g->cell_x;
		*dy = g->cell_y;
		return;
	}
	e2 = WGS84_F * (2.0 - WGS84_F);
	phi = (g->lat_top + (g->row0 + row) * g->lat_step) * (M_PI / 180.0);
	s = sin(phi);
	w = sqrt(1.0 - e2 * s * s);
	*dx = (WGS84_A / w) * cos(phi) * fabs(g->lon_step) * (M_PI / 180.0);
	*dy = (WGS84_A * (1.0 - e2) / (w * w * w)) * fabs(g->lat_step) * (M_PI / 180.0);
}

/*
 * Where a tile whose upper-left corner is (x, y) starts on grid g, in
 * columns and rows; whether that is a whole cell within
 * TG_ALIGN_TOLERANCE of a pixel (tiles of one coverage share a grid).
 */
bool
tg_georef_offset(const tg_georef *g, double x, double y, double *col, double *row)
{
	const double dx = x - g->upperleft_x,
				dy = y - g->upperleft_y,
				det = g->scale_x * g->scale_y - g->skew_x * g->skew_y;

	*col = (dx * g->scale_y - dy * g->skew_x) / det;
	*row = (dy * g->scale_x - dx * g->skew_y) / det;
	return fabs(*col - rint(*col)) <= TG_ALIGN_TOLERANCE && fabs(*row - rint(*row)) <= TG_ALIGN_TOLERANCE;
}
