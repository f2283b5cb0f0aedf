/*
 * tgpg_context.c — build a core tg_ctx for one call: backend and limits from
 * the settings (or the call's `backend` argument), palloc as the allocator,
 * cancellation read from PostgreSQL's interrupt flags, and the statistics
 * that tg_last_run() reports.
 */
#include "tgpg.h"

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

/* The last call in this backend, for tg_last_run(). */
static char last_function[NAMEDATALEN];
static tg_run_stats last_stats;

static void *
pg_alloc(size_t size, void *arg)
{
	(void) arg;
	if (!AllocHugeSizeIsValid(size))
		return NULL;
	return palloc_extended(size, MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
}

static void
pg_free(void *ptr, void *arg)
{
	(void) arg;
	pfree(ptr);
}

/* Polled by the core between rows, sweeps and kernel batches; never throws. */
static bool
pg_interrupt_pending(void *arg)
{
	(void) arg;
	return QueryCancelPending || ProcDiePending;
}

static const tgpg_name backends[] = {
	{"auto", TG_BACKEND_AUTO},
	{"cpu", TG_BACKEND_CPU},
	{"gpu", TG_BACKEND_GPU},
};

void
tgpg_ctx_init(tg_ctx *ctx, const char *function, FunctionCallInfo fcinfo,
			  int backend_argno)
{
	tg_ctx_init(ctx);
	ctx->backend = (tg_backend) tgpg_backend;
	if (backend_argno >= 0 && backend_argno < PG_NARGS() && !PG_ARGISNULL(backend_argno))
		ctx->backend = (tg_backend) TGPG_ARG_LOOKUP("backend", fcinfo, backend_argno, backends);
	ctx->min_cells_for_gpu = tgpg_min_cells_for_gpu;
	ctx->device = tgpg_device;
	ctx->device_memory_limit = (size_t) tgpg_max_device_memory_mb * 1024 * 1024;
	ctx->route_cache_limit = (size_t) tgpg_route_cache_mb * 1024 * 1024;
	ctx->threads = tgpg_threads;
	ctx->cancel = pg_interrupt_pending;
	ctx->allocator.alloc = pg_alloc;
	ctx->allocator.free = pg_free;

	strlcpy(last_function, function, sizeof last_function);
	memset(&last_stats, 0, sizeof last_stats);
	ctx->stats = &last_stats;
}

/* The function name and statistics of this backend's last call, or NULL. */
const tg_run_stats *
tgpg_last_run_stats(const char **function)
{
	*function = last_function;
	return last_function[0] ? &last_stats : NULL;
}
