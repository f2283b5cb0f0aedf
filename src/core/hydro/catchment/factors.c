/*
 * factors.c — per-cell factors (RUSLE's R, K, C, P; travel time's n and K)
 * decoded for the backends, on row tasks.
 */
#include "hydro/catchment/catchment.h"

#include <math.h>

typedef struct factor_job
{
	const tg_band *band;
	const char *name;
	bool		positive;
	double	   *v;
} factor_job;

/* Decode rows; the first bad value in raster order is reported (the lowest failing task wins). */
static tg_status
factor_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const factor_job *j = arg;
	const int	W = j->band->width;

	for (int y = y0; y < y1; y++)
	{
		double	   *row = j->v + (size_t) y * W;

		tg_band_row_to_f64(j->band, y, row);
		for (int x = 0; x < W; x++)
			if (!isnan(row[x]) && (j->positive ? !(row[x] > 0) : !(row[x] >= 0)))
				return tg_error_set(err, TG_EINVAL,
									"%s must be %s, got %g at column %d, row %d of its raster",
									j->name, j->positive ? "positive" : "non-negative", row[x],
									x + 1, y + 1);
	}
	return TG_OK;
}

/*
 * A factor decoded for the backends: a band becomes n doubles (NaN for
 * nodata), a constant stays one.  positive: refuse values <= 0 (by name).
 */
tg_status
tg_factor_decode(const tg_ctx *ctx, const tg_band *dem, const tg_factor *f, const char *name,
				 bool positive, tg_cell_factor *out, tg_error *err)
{
	const size_t n = (size_t) dem->width * dem->height;
	factor_job	j = {f->band, name, positive, NULL};
	tg_status	st;

	out->values = NULL;
	out->value = f->value;
	if (f->band == NULL)
	{
		if (!isfinite(f->value) || (positive ? !(f->value > 0) : !(f->value >= 0)))
			return tg_error_set(err, TG_EINVAL, "%s must be a %s number, got %g", name,
								positive ? "positive" : "non-negative", f->value);
		return TG_OK;
	}
	if (f->band->width != dem->width || f->band->height != dem->height)
		return tg_error_set(err, TG_EINVAL, "the %s raster is %d x %d, the DEM %d x %d", name,
							f->band->width, f->band->height, dem->width, dem->height);
	if (f->band->data == NULL)
		return tg_error_set(err, TG_EUNSUPPORTED, "the %s raster needs an in-db band", name);
	j.v = tg_alloc(ctx, (n ? n : 1) * sizeof(double));
	if (j.v == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate the %s factor", name);
	st = tg_parallel_rows(ctx, dem->width, dem->height, factor_rows, &j, err);
	if (st != TG_OK)
		tg_free(ctx, j.v);
	else
		out->values = j.v;
	return st;
}
