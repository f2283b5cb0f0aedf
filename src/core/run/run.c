/*
 * run.c — tg_run: an operation over tiles, in memory when its grid fits the
 * budget (read every input, compute on the backend the dispatcher picks,
 * write the tiles), else in strips where the operation allows it, or one
 * part's phase of a partitioned coverage (scale/parts/); all in one call
 * scope, so the threads are joined before it returns.
 */
#include "scale/strips/strips.h"
#include "scale/parts/parts.h"

#include <stdio.h>
#include <string.h>

/* TG_ELIMIT for a grid beyond the budget that cannot run in strips. */
static tg_status
beyond_budget(const tg_ctx *ctx, const tg_op *op, const tg_job *job, bool on_gpu, const char *why_not,
			  tg_error *err)
{
	const tg_layout *l = job->layout;

	if ((uint64_t) l->width * l->height > TG_MAX_GRID_CELLS)
	{
		tg_error_set(err, TG_ELIMIT, "%s over %s: %d x %d cells are more than one grid holds (%u)",
					 job->function, l->name, l->width, l->height, (unsigned) TG_MAX_GRID_CELLS);
		if (why_not)
			tg_error_detail(err, "Beyond one grid, %s runs in strips of rows on the CPU only with %s.",
							job->function, why_not);
		tg_error_hint(err, "Process the coverage in parts (by extent).");
		return TG_ELIMIT;
	}
	tg_error_set(err, TG_ELIMIT, "%s over %s needs about %zu MB as one grid%s, more than the %zu MB a call may use",
				 job->function, l->name,
				 (on_gpu ? tg_op_gpu_host_bytes(op, job)
				  : (size_t) l->width * l->height * tg_op_bytes_per_cell(op, false)) >> 20,
				 on_gpu ? " on the GPU" : "", job->memory_budget >> 20);
	if (why_not)
	{
		tg_error_detail(err, "Beyond %s, %s runs in strips of rows on the CPU only with %s.",
						job->budget_name, job->function, why_not);
		tg_error_hint(err, "Raise %s, or call it as the detail says.", job->budget_name);
	}
	else if (job->whole)
	{
		tg_error_detail(err, "The raster is %d x %d cells, processed as one grid.", l->width, l->height);
		tg_error_hint(err, "Raise %s if the server has the memory, or tile the raster (ST_Tile) and call the coverage form, which runs in strips where the operation allows.",
					  job->budget_name);
	}
	else
	{
		tg_error_detail(err, "The coverage spans %d x %d cells and is processed as one grid.", l->width,
						l->height);
		tg_error_hint(err, "Raise %s if the server has the memory.", job->budget_name);
	}
	return TG_ELIMIT;
}

/* A result raster the writer cannot take is refused before any work on the pixels. */
static tg_status
check_results(const tg_op *op, const tg_job *job, const tg_band *dem, tg_error *err)
{
	tg_output	outs[TG_MAX_OUTPUTS];
	tg_status	st = tg_op_plan(op, dem, outs, err);

	for (int t = 0; st == TG_OK && job->writer.max_value_size && t < job->layout->ntiles; t++)
		for (int o = 0; st == TG_OK && o < tg_op_outputs(op); o++)
		{
			const tg_tile_place *p = &job->layout->tiles[t];
			tg_raster_info info = {(uint16_t) outs[o].nbands, (uint16_t) p->width, (uint16_t) p->height, p->geo};
			size_t		size = 0;

			st = tg_raster_size(&info, outs[o].specs, &size, err);
			if (st == TG_ELIMIT || (st == TG_OK && size > job->writer.max_value_size))
			{
				tg_error_clear(err);
				tg_error_set(err, TG_ELIMIT, "result raster of %u x %u pixels would exceed the %g GB a raster value can hold",
							 p->width, p->height, (job->writer.max_value_size + 1) / 1073741824.0);
				tg_error_hint(err, "Tile the raster (raster2pgsql -t 256x256) and process the tiles.");
				st = TG_ELIMIT;
			}
		}
	return st;
}

/*
 * The window of the tiles a job wants, where a local operation asks for
 * fewer than the grid's.  False where every cell is wanted, or where a tile
 * reaches over the window's edge (each tile in the window is then whole).
 */
static bool
wanted_window(const tg_op *op, const tg_job *job, tg_grid_window *w)
{
	const tg_layout *l = job->layout;
	int64_t		r0 = l->height,
				r1 = 0,
				c0 = l->width,
				c1 = 0;

	if (job->wanted == NULL || job->whole || job->ninputs != 1 || tg_op_seams_of(op->kind) != TG_SEAMS_WINDOW)
		return false;
	for (int t = 0; t < l->ntiles; t++)
		if (job->wanted[t])
		{
			const tg_tile_place *p = &l->tiles[t];

			r0 = p->row0 < r0 ? p->row0 : r0;
			r1 = p->row0 + p->height > r1 ? p->row0 + p->height : r1;
			c0 = p->col0 < c0 ? p->col0 : c0;
			c1 = p->col0 + p->width > c1 ? p->col0 + p->width : c1;
		}
	for (int t = 0; t < l->ntiles; t++)
	{
		const tg_tile_place *p = &l->tiles[t];
		const bool	meets = p->row0 < r1 && p->row0 + p->height > r0 && p->col0 < c1 && p->col0 + p->width > c0,
					within = p->row0 >= r0 && p->row0 + p->height <= r1 && p->col0 >= c0 && p->col0 + p->width <= c1;

		if (meets && !within)
			return false;
	}
	*w = (tg_grid_window) {(int) r0, (int) (r1 - r0), (int) c0, (int) (c1 - c0)};
	return r1 > r0 && (r1 - r0 < l->height || c1 - c0 < l->width);
}

static tg_status
run_in_memory(const tg_ctx *ctx, const tg_op *op, const tg_job *job, tg_error *err)
{
	tg_grid_band grids[8];
	tg_op_result r;
	tg_status	st = TG_OK;
	tg_grid_window	w;

	memset(grids, 0, sizeof grids);
	memset(&r, 0, sizeof r);
	if (job->ninputs < 1 || job->ninputs > 8)
		return tg_error_set(err, TG_EINVAL, "an operation takes 1 to 8 inputs, got %d", job->ninputs);
	if (wanted_window(op, job, &w))
		return tg_run_local_window(ctx, op, job, &w, err);
	tg_phase(ctx, "decode");
	for (int k = 0; k < job->ninputs && st == TG_OK; k++)
		st = tg_read_input(ctx, job->layout, &job->inputs[k], &grids[k], 0, job->layout->height, err);
	if (st == TG_OK)
		st = check_results(op, job, &grids[0].band, err);
	if (st == TG_OK)
		st = tg_op_compute(ctx, op, job->layout, grids, job, &r, err);
	for (int k = 0; k < job->ninputs; k++)
		tg_grid_band_free(ctx, &grids[k]);
	if (st == TG_OK && !r.written)
	{
		tg_phase(ctx, "encode");
		st = tg_write_tiles(ctx, job, r.outs, r.nout, 0, job->layout->height, err);
	}
	tg_op_free(ctx, &r);
	return st;
}

/*
 * The one grid on the GPU, chosen because the host holds less there than the
 * CPU path would: the call stays on the GPU (no CPU fallback over the
 * budget).  Where the device then lacks the memory, it has written nothing
 * yet (the device's need is checked before the first kernel), so the call
 * goes on in strips where the operation runs in them: slower, but it
 * completes, as it would have had the budget been smaller to begin with.
 * Otherwise the error says which settings to change.
 */
static tg_status
run_on_gpu(const tg_ctx *call, const tg_op *op, const tg_job *job, tg_error *err)
{
	tg_ctx		gpu = *call;
	const char *why_not = NULL;
	tg_status	st;

	gpu.backend = TG_BACKEND_GPU;
	st = run_in_memory(&gpu, op, job, err);
	if (st == TG_ENOMEM && err->on_device && !job->whole && tg_op_in_strips(op, call, &why_not))
	{
		if (call->stats)
			snprintf(call->stats->note, sizeof call->stats->note, "GPU out of memory, ran in strips: %s",
					 err->message);
		tg_error_clear(err);
		tg_phase(call, "one grid refused: to strips");
		return tg_run_strips(call, op, job, err);
	}
	if ((st == TG_ENOMEM && err->on_device) || st == TG_ENODEVICE)
	{
		tg_error_detail(err, "The grid fits %s on the GPU path only: the CPU path needs about %zu MB.",
						job->budget_name, (job->layout->width * (size_t) job->layout->height *
										   tg_op_bytes_per_cell(op, false)) >> 20);
		tg_error_hint(err, "Set terra_gpu.backend = 'cpu' to run on the CPU%s, or raise terra_gpu.max_device_memory_mb where it caps the device below its free memory.",
					  job->whole ? "" : " (in strips where the operation runs in them)");
	}
	return st;
}

/* Tell the writer what the run leaves of the budget, planning to hold `planned` bytes. */
static tg_status
tell_room(const tg_job *job, size_t planned, tg_error *err)
{
	if (job->writer.room == NULL)
		return TG_OK;
	return job->writer.room(job->writer.arg, planned < job->memory_budget ? job->memory_budget - planned : 0,
							err);
}

tg_status
tg_run(const tg_ctx *ctx, const tg_op *op, const tg_job *job, tg_error *err)
{
	const tg_layout *l = job->layout;
	const double t0 = tg_stats_begin(ctx, (int64_t) l->width * l->height);
	const char *why_not = NULL;
	const tg_band smallest = {.pixtype = TG_PT_8BUI};	/* whatever the DEM's type */
	const size_t cells = (size_t) l->width * l->height,
				in_memory = cells * tg_op_bytes_per_cell(op, false),	/* host bytes of each one-grid path */
				gpu_host = tg_op_gpu_host_bytes(op, job);
	bool		on_gpu = false;
	tg_ctx		call;
	tg_status	st;

	if (l->ntiles < 1 || l->width < 1 || l->height < 1)
		return tg_error_set(err, TG_EDATA, "%s has no tiles", l->name);
	tg_call_open(ctx, &call);
	if (job->part != NULL)
		st = tg_run_part(&call, op, job, err);
	else if ((st = check_results(op, job, &smallest, err)) != TG_OK)
		;						/* refused from the tiles' sizes alone, before any pixel is read */
	else if (cells > TG_MAX_GRID_CELLS)
		st = !job->whole && tg_op_in_strips(op, ctx, &why_not) ? tg_run_strips(&call, op, job, err)
			: beyond_budget(ctx, op, job, false, why_not, err);
	else if (in_memory <= job->memory_budget)
	{
		if ((st = tell_room(job, in_memory, err)) == TG_OK)
			st = run_in_memory(&call, op, job, err);
	}
	else if ((on_gpu = tg_gpu_chosen(ctx, (int64_t) cells)) && gpu_host <= job->memory_budget)
	{
		if ((st = tell_room(job, gpu_host, err)) == TG_OK)
			st = run_on_gpu(&call, op, job, err);
	}
	else if (!job->whole && tg_op_in_strips(op, ctx, &why_not))
		st = tg_run_strips(&call, op, job, err);
	else
		st = beyond_budget(ctx, op, job, on_gpu, why_not, err);
	tg_call_close(&call);
	tg_stats_end(ctx, t0);
	return st;
}
