/*
 * slope_cpu.c — reference CPU implementation of Horn slope.
 *
 * Rows are decoded to doubles (nodata as NaN) into three rolling buffers
 * padded with a NaN column on each side, so the inner loop has no bounds
 * checks and works for every pixel type alike.  Each task of rows rolls its
 * own buffers, starting from the row above its first.
 */
#include "terrain/terrain.h"

#include <math.h>

typedef struct slope_job
{
	const tg_band *dem;
	const tg_slope_params *params;
	tg_horn_factors factors;
	float	   *out;
} slope_job;

/* Row y of the DEM into buf[1 .. W] (NaN outside the raster). */
static void
load_row(const tg_band *dem, int y, double *buf)
{
	if (y >= 0 && y < dem->height)
		tg_band_row_to_f64(dem, y, buf + 1);
	else
		for (int x = 1; x <= dem->width; x++)
			buf[x] = NAN;
}

static tg_status
slope_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const slope_job *j = arg;
	const int	W = j->dem->width;
	const size_t padded = (size_t) W + 2;
	double	   *buf = tg_alloc(ctx, 3 * padded * sizeof(double));
	double	   *rows[3];

	if (buf == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate %zu bytes of row buffers for slope",
							3 * padded * sizeof(double));
	/* rows[0] = y-1, rows[1] = y, rows[2] = y+1; each row's cell x at [x+1] */
	for (int k = 0; k < 3; k++)
	{
		rows[k] = buf + k * padded;
		rows[k][0] = rows[k][padded - 1] = NAN;
	}
	load_row(j->dem, y0 - 1, rows[0]);
	load_row(j->dem, y0, rows[1]);
	for (int y = y0; y < y1; y++)
	{
		double	   *up = rows[0],
				   *mid = rows[1],
				   *down = rows[2];
		float	   *dst = j->out + (size_t) y * W;

		load_row(j->dem, y + 1, down);
		for (int x = 1; x <= W; x++)
		{
			double		w[9];

			if (isnan(mid[x]))
			{
				dst[x - 1] = j->params->out_nodata;
				continue;
			}
			w[0] = up[x - 1];
			w[1] = up[x];
			w[2] = up[x + 1];
			w[3] = mid[x - 1];
			w[4] = mid[x];
			w[5] = mid[x + 1];
			w[6] = down[x - 1];
			w[7] = down[x];
			w[8] = down[x + 1];
			dst[x - 1] = tg_horn_slope(w, j->factors);
		}
		/* roll: the old top row becomes the next bottom row */
		rows[0] = mid;
		rows[1] = down;
		rows[2] = up;
	}
	tg_free(ctx, buf);
	return TG_OK;
}

tg_status
tg_cpu_slope(const tg_ctx *ctx, const tg_band *dem,
			 const tg_slope_params *params, float *out, tg_error *err)
{
	slope_job	j = {dem, params, tg_horn_factors_for(*params), out};

	return tg_parallel_rows(ctx, dem->width, dem->height, slope_rows, &j, err);
}
