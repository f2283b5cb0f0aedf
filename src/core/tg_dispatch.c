/*
 * tg_dispatch.c — backend selection and the public operation entry points.
 *
 * One policy for every operation:
 *   cpu   always the CPU;
 *   gpu   the GPU, or TG_ENODEVICE with the reason;
 *   auto  the GPU when one is ready and the input has at least
 *         min_cells_for_gpu cells, else the CPU; a GPU that runs out of
 *         device memory falls back to the CPU.
 * What ran, and how long it took, goes to ctx->stats.
 */
#include "tg_backends.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

typedef tg_status (*op_fn) (const tg_ctx *ctx, const void *args, tg_error *err);

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void
note(const tg_ctx *ctx, const char *fmt, const char *arg)
{
	if (ctx->stats)
		snprintf(ctx->stats->note, sizeof ctx->stats->note, fmt, arg);
}

static tg_status
choose_backend(const tg_ctx *ctx, int64_t cells, tg_backend *use, tg_error *err)
{
	tg_error	probe_err;

	switch (ctx->backend)
	{
		case TG_BACKEND_CPU:
			*use = TG_BACKEND_CPU;
			return TG_OK;
		case TG_BACKEND_GPU:
			if (tg_cuda_probe(ctx->device, NULL, err) != TG_OK)
			{
				tg_error_hint(err, "Set terra_gpu.backend to 'auto' or 'cpu' to run on the CPU.");
				return err->code;
			}
			*use = TG_BACKEND_GPU;
			return TG_OK;
		case TG_BACKEND_AUTO:
			break;
	}

	*use = TG_BACKEND_CPU;
	if (cells < ctx->min_cells_for_gpu)
	{
		note(ctx, "%s", "input smaller than terra_gpu.min_cells_for_gpu");
		return TG_OK;
	}
	tg_error_clear(&probe_err);
	if (tg_cuda_probe(ctx->device, NULL, &probe_err) != TG_OK)
	{
		note(ctx, "no GPU: %s", probe_err.message);
		return TG_OK;
	}
	*use = TG_BACKEND_GPU;
	return TG_OK;
}

static tg_status
run(const tg_ctx *ctx, int64_t cells, op_fn cpu, op_fn gpu, const void *args,
	tg_error *err)
{
	double		t0 = now_ms();
	tg_backend	use;
	tg_status	st;

	if (ctx->stats)
	{
		memset(ctx->stats, 0, sizeof *ctx->stats);
		ctx->stats->cells = cells;
	}

	st = choose_backend(ctx, cells, &use, err);
	if (st != TG_OK)
		return st;

	if (use == TG_BACKEND_GPU)
	{
		tg_error	gpu_err;

		tg_error_clear(&gpu_err);
		st = gpu(ctx, args, &gpu_err);
		if (st == TG_ENOMEM && gpu_err.on_device && ctx->backend == TG_BACKEND_AUTO)
		{
			note(ctx, "GPU out of memory, ran on the CPU: %s", gpu_err.message);
			use = TG_BACKEND_CPU;
		}
		else if (st != TG_OK)
		{
			*err = gpu_err;
			return st;
		}
	}
	if (use == TG_BACKEND_CPU)
		st = cpu(ctx, args, err);

	if (ctx->stats)
	{
		ctx->stats->backend = use;
		ctx->stats->core_ms = now_ms() - t0;
	}
	return st;
}

void
tg_device_query(int device, tg_device_info *info)
{
	tg_error	err;

	tg_error_clear(&err);
	memset(info, 0, sizeof *info);
	if (tg_cuda_probe(device, info, &err) != TG_OK)
	{
		info->available = false;
		snprintf(info->reason, sizeof info->reason, "%s%s%s", err.message,
				 err.detail[0] ? ": " : "", err.detail);
	}
}

/* ------------------------------------------------------------------------
 * Slope
 * ------------------------------------------------------------------------ */
typedef struct slope_args
{
	const tg_band *dem;
	const tg_slope_params *params;
	float	   *out;
} slope_args;

static tg_status
slope_cpu(const tg_ctx *ctx, const void *a, tg_error *err)
{
	const slope_args *s = a;

	return tg_cpu_slope(ctx, s->dem, s->params, s->out, err);
}

static tg_status
slope_gpu(const tg_ctx *ctx, const void *a, tg_error *err)
{
	const slope_args *s = a;

	return tg_cuda_slope(ctx, s->dem, s->params, s->out, err);
}

tg_status
tg_slope(const tg_ctx *ctx, const tg_band *dem, const tg_slope_params *params,
		 float *out, tg_error *err)
{
	slope_args	args = {dem, params, out};

	if (dem->data == NULL)
		return tg_error_set(err, TG_EUNSUPPORTED, "slope needs an in-db band");
	if (!(params->pixel_width > 0) || !(params->pixel_height > 0))
		return tg_error_set(err, TG_EINVAL,
							"pixel size must be positive, got %g x %g",
							params->pixel_width, params->pixel_height);
	if (!(params->scale > 0))
		return tg_error_set(err, TG_EINVAL, "scale must be positive, got %g",
							params->scale);

	return run(ctx, (int64_t) dem->width * dem->height, slope_cpu, slope_gpu,
			   &args, err);
}
