/*
 * terrain_cpu.c — the local terrain derivatives on the CPU (tg_terrain).
 *
 * Each task of rows decodes its rows, with `halo` more above and below, into
 * a block of doubles (NaN for nodata and beyond the raster, `halo` columns
 * of it on either side), so that every product reads its neighbours without
 * bounds checks and for every pixel type alike; then it evaluates
 * terrain.h's per-cell formulas cell by cell.  Tasks are fixed by the grid
 * and the halo, never by the thread count.
 */
#include "runtime/runtime.h"
#include "terrain/terrain.h"

typedef struct terrain_job
{
	const tg_band *dem;
	tg_terrain_consts consts;
	int			halo;
	int			rows_per_task;
	void	   *const *out;
} terrain_job;

static tg_status
terrain_task(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	const terrain_job *j = arg;
	const int	W = j->dem->width,
				H = j->dem->height,
				R = j->halo,
				y0 = (int) task * j->rows_per_task,
				y1 = y0 + j->rows_per_task < H ? y0 + j->rows_per_task : H;
	const size_t stride = (size_t) W + 2 * (size_t) R,
				rows = (size_t) (y1 - y0) + 2 * (size_t) R;
	double	   *block = tg_alloc(ctx, stride * rows * sizeof(double));

	if (block == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate %zu bytes of rows for the terrain derivatives",
							stride * rows * sizeof(double));
	for (size_t r = 0; r < rows; r++)
	{
		double	   *row = block + r * stride;
		const int	y = y0 - R + (int) r;

		if (y >= 0 && y < H)
		{
			for (int x = 0; x < R; x++)
				row[x] = row[stride - 1 - x] = NAN;
			tg_band_row_to_f64(j->dem, y, row + R);
		}
		else
			for (size_t x = 0; x < stride; x++)
				row[x] = NAN;
	}
	for (int y = y0; y < y1; y++)
	{
		const double *centre = block + (size_t) (y - y0 + R) * stride + R;

		for (int x = 0; x < W; x++)
			tg_terrain_cell(&j->consts, centre + x, (ptrdiff_t) stride, j->out, (size_t) y * W + x);
	}
	tg_free(ctx, block);
	return TG_OK;
}

tg_status
tg_cpu_terrain(const tg_ctx *ctx, const tg_band *dem, const tg_terrain_params *params,
			   void *const *out, tg_error *err)
{
	terrain_job j;
	int64_t		tasks;

	if (dem->width == 0 || dem->height == 0)
		return TG_OK;
	j.dem = dem;
	tg_terrain_prepare(params, &j.consts);
	j.halo = tg_terrain_halo(params);
	/* about TG_TASK_CELLS cells a task, and no fewer rows than the halo adds */
	j.rows_per_task = dem->width < TG_TASK_CELLS ? TG_TASK_CELLS / dem->width : 1;
	if (j.rows_per_task < 2 * j.halo)
		j.rows_per_task = 2 * j.halo;
	j.out = out;
	tasks = (dem->height + j.rows_per_task - 1) / j.rows_per_task;
	return tg_parallel(ctx, tasks, terrain_task, &j, err);
}
