/*
 * tgpg_context.c — a core tg_ctx for one call: backend and limits from the
 * settings (or the call's `backend`), palloc as the allocator, cancellation
 * from PostgreSQL's interrupt flags, progress as NOTICEs, and the
 * statistics tg_last_run() reports; and the guard that keeps an error
 * raised inside a callback until the core has returned.
 */
#include "tgpg.h"

#include <unistd.h>

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

/* At most one progress NOTICE this often. */
#define PROGRESS_EVERY_MS 5000

/* The last call in this backend, for tg_last_run(). */
static char last_function[NAMEDATALEN];
static tg_run_stats last_stats;

/*
 * In the memory context current when the call began: callbacks may switch
 * contexts (SPI does), and what the core allocates must outlive them.
 */
static void *
pg_alloc(size_t size, void *arg)
{
	if (!AllocHugeSizeIsValid(size))
		return NULL;
	return MemoryContextAllocExtended((MemoryContext) arg, size, MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
}

static void
pg_free(void *ptr, void *arg)
{
	(void) arg;
	pfree(ptr);
}

/* Polled by the core's calling thread; never throws.  A kept error stops the core too. */
static bool
pg_interrupt_pending(void *arg)
{
	const tgpg_guard *g = arg;

	return QueryCancelPending || ProcDiePending || (g && g->error);
}

/* A NOTICE at most every PROGRESS_EVERY_MS: the phase and how much of it is done. */
static void
pg_progress(void *arg, const char *phase, double fraction)
{
	tgpg_guard *g = arg;
	TimestampTz now = GetCurrentTimestamp();

	if (g->error || !TimestampDifferenceExceeds(g->last_notice, now, PROGRESS_EVERY_MS))
		return;
	g->last_notice = now;
	TGPG_GUARDED(g,
				 ereport(NOTICE,
						 (errmsg("%s: %s %.0f%% (%.1f s)", g->function, phase, 100 * fraction,
								 TimestampDifferenceMilliseconds(g->started, now) / 1000.0))));
}

void
tgpg_guard_init(tgpg_guard *g, const char *function)
{
	memset(g, 0, sizeof *g);
	g->function = function;
	g->cxt = CurrentMemoryContext;
	g->started = g->last_notice = GetCurrentTimestamp();
}

void
tgpg_guard_catch(tgpg_guard *g)
{
	MemoryContextSwitchTo(g->cxt);
	if (g->error == NULL)
		g->error = CopyErrorData();
	FlushErrorState();
}

void
tgpg_finish(tgpg_guard *g, tg_status st, const tg_error *err)
{
	if (g->error)
		ReThrowError(g->error);
	tgpg_check(st, err);
}

void
tgpg_ctx_settings(tg_ctx *ctx, int backend)
{
	tg_ctx_init(ctx);
	ctx->backend = (tg_backend) backend;
	ctx->min_cells_for_gpu = tgpg_min_cells_for_gpu;
	ctx->device = tgpg_device;
	ctx->device_memory_limit = (size_t) tgpg_max_device_memory_mb * 1024 * 1024;
	ctx->route_cache_limit = (size_t) tgpg_route_cache_mb * 1024 * 1024;
	ctx->threads = tgpg_threads;
}

void
tgpg_ctx_init(tg_ctx *ctx, tgpg_guard *g, int backend)
{
	tgpg_ctx_settings(ctx, backend);
	ctx->cancel = pg_interrupt_pending;
	ctx->cancel_arg = g;
	ctx->progress = pg_progress;
	ctx->progress_arg = g;
	ctx->allocator.alloc = pg_alloc;
	ctx->allocator.free = pg_free;
	ctx->allocator.arg = CurrentMemoryContext;

	strlcpy(last_function, g->function, sizeof last_function);
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

size_t
tgpg_memory_budget(void)
{
	long		pages,
				page_size;

	if (tgpg_max_memory_mb > 0)
		return (size_t) tgpg_max_memory_mb << 20;
	pages = sysconf(_SC_PHYS_PAGES);
	page_size = sysconf(_SC_PAGESIZE);
	if (pages <= 0 || page_size <= 0)
		return (size_t) 4 << 30;
	return (size_t) pages * (size_t) page_size / 2;
}
