/*
 * cell_weights.c — what each cell puts into a flow accumulation, and the
 * conversion of accumulated area into specific catchment area, on row tasks.
 */
#include "hydro/accum/accum.h"

#include <math.h>

typedef struct weights_job
{
	const tg_band *weight;
	const tg_grid_geometry *g;
	tg_accum_units units;
	double	   *w;
} weights_job;

static tg_status
weight_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const weights_job *j = arg;
	const int	W = j->g->width;

	for (int y = y0; y < y1; y++)
	{
		double	   *row = j->w + (size_t) y * W;
		double		dx,
					dy;

		tg_row_spacing(j->g, y, &dx, &dy);
		if (j->weight)
		{
			tg_band_row_to_f64(j->weight, y, row);
			for (int x = 0; x < W; x++)
				if (isnan(row[x]))
					row[x] = 0;
		}
		else
			for (int x = 0; x < W; x++)
				row[x] = 1.0;
		if (j->units != TG_UNITS_CELLS)
			for (int x = 0; x < W; x++)
				row[x] *= dx * dy;
	}
	return TG_OK;
}

tg_status
tg_row_weights(const tg_ctx *ctx, const tg_grid_geometry *g, tg_accum_units units, double **out,
			   tg_error *err)
{
	double	   *w = tg_alloc(ctx, (g->height > 0 ? g->height : 1) * sizeof(double));

	*out = NULL;
	if (w == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate row weights");
	for (int y = 0; y < g->height; y++)
	{
		double		dx,
					dy;

		tg_row_spacing(g, y, &dx, &dy);
		/* as tg_cell_weights computes a cell of no weight raster: 1, times the area */
		w[y] = units != TG_UNITS_CELLS ? 1.0 * (dx * dy) : 1.0;
	}
	*out = w;
	return TG_OK;
}

/* Per-cell weights: the weight band (nodata counts 0) times the cell's area. */
tg_status
tg_cell_weights(const tg_ctx *ctx, const tg_band *weight, const tg_grid_geometry *g,
				tg_accum_units units, double **out, tg_error *err)
{
	const size_t n = (size_t) g->width * g->height;
	weights_job j = {weight, g, units, tg_alloc(ctx, (n > 0 ? n : 1) * sizeof(double))};
	tg_status	st;

	*out = NULL;
	if (j.w == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate cell weights");
	st = tg_parallel_rows(ctx, g->width, g->height, weight_rows, &j, err);
	if (st != TG_OK)
		tg_free(ctx, j.w);
	else
		*out = j.w;
	return st;
}

/* The contour width of row y (sqrt(dx dy)): what an accumulated area is divided by to be specific. */
static double
contour_width(const tg_grid_geometry *g, int y)
{
	double		dx,
				dy;

	tg_row_spacing(g, y, &dx, &dy);
	return sqrt(dx * dy);
}

tg_status
tg_row_contour_widths(const tg_ctx *ctx, const tg_grid_geometry *g, double **out, tg_error *err)
{
	double	   *w = tg_alloc(ctx, (g->height > 0 ? g->height : 1) * sizeof(double));

	*out = NULL;
	if (w == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate contour widths");
	for (int y = 0; y < g->height; y++)
		w[y] = contour_width(g, y);
	*out = w;
	return TG_OK;
}

typedef struct sca_job
{
	const tg_grid_geometry *g;
	double	   *acc;
} sca_job;

static tg_status
sca_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const sca_job *j = arg;

	for (int y = y0; y < y1; y++)
	{
		const double width = contour_width(j->g, y);

		for (int x = 0; x < j->g->width; x++)
			j->acc[(size_t) y * j->g->width + x] /= width;
	}
	return TG_OK;
}

/* Specific catchment area: divide by the contour width sqrt(dx dy) per row. */
tg_status
tg_to_sca(const tg_ctx *ctx, const tg_grid_geometry *g, double *acc, tg_error *err)
{
	sca_job		j = {g, acc};

	return tg_parallel_rows(ctx, g->width, g->height, sca_rows, &j, err);
}
