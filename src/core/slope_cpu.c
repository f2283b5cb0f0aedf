/*
 * slope_cpu.c — reference CPU implementation of Horn slope.
 *
 * Rows are decoded to doubles (nodata as NaN) into three rolling buffers
 * padded with a NaN column on each side, so the inner loop has no bounds
 * checks and works for every pixel type alike.
 */
#include "tg_backends.h"
#include "tg_terrain.h"

#include <math.h>

#define CANCEL_CHECK_ROWS 64

tg_status
tg_cpu_slope(const tg_ctx *ctx, const tg_band *dem,
			 const tg_slope_params *params, float *out, tg_error *err)
{
	const int	W = dem->width;
	const int	H = dem->height;
	const size_t padded = (size_t) W + 2;
	const tg_horn_factors factors = tg_horn_factors_for(*params);
	double	   *buf;
	double	   *rows[3];
	int			x;
	int			y;
	int			k;

	buf = tg_alloc(ctx, 3 * padded * sizeof(double));
	if (buf == NULL)
		return tg_error_set(err, TG_ENOMEM,
							"could not allocate %zu bytes of row buffers for slope",
							3 * padded * sizeof(double));

	/* rows[0] = y-1, rows[1] = y, rows[2] = y+1; each row's cell x at [x+1] */
	for (k = 0; k < 3; k++)
	{
		rows[k] = buf + k * padded;
		for (x = 0; x < (int) padded; x++)
			rows[k][x] = NAN;
	}
	if (H > 0)
		tg_band_row_to_f64(dem, 0, rows[1] + 1);

	for (y = 0; y < H; y++)
	{
		double	   *up;
		double	   *mid;
		double	   *down;
		float	   *dst = out + (size_t) y * W;

		if (y % CANCEL_CHECK_ROWS == 0 && tg_canceled(ctx))
		{
			tg_free(ctx, buf);
			return tg_error_set(err, TG_ECANCELED, "slope canceled");
		}

		if (y + 1 < H)
			tg_band_row_to_f64(dem, y + 1, rows[2] + 1);
		else
			for (x = 1; x <= W; x++)
				rows[2][x] = NAN;

		up = rows[0];
		mid = rows[1];
		down = rows[2];
		for (x = 1; x <= W; x++)
		{
			double		w[9];

			if (isnan(mid[x]))
			{
				dst[x - 1] = params->out_nodata;
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
			dst[x - 1] = tg_horn_slope(w, factors);
		}

		/* roll: the old top row becomes the next bottom row */
		rows[0] = mid;
		rows[1] = down;
		rows[2] = up;
	}

	tg_free(ctx, buf);
	return TG_OK;
}
