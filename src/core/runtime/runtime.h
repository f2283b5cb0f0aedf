/*
 * tg_pool.h — the threads of one core call (internal to the core and cuda/).
 *
 * A core entry point opens a call scope (tg_call_open): worker threads are
 * started on the first parallel region that needs them and joined when the
 * scope closes, so no thread outlives the call, whatever path it returns by.
 * Inside a region (tg_parallel), the calling thread only coordinates: it polls
 * ctx->cancel, tells the workers to stop, and reports progress; the workers
 * run the tasks.  Workers see a context of their own (tg_parallel passes it
 * to each task): a malloc allocator (the caller's may not be thread-safe:
 * palloc in a backend), a cancel flag the coordinator raises, no statistics
 * and no progress callback.  A region inside a task runs inline.
 *
 * Determinism: each task index runs exactly once, on some thread; tasks must
 * write disjoint outputs or reduce in task order afterwards, so that results
 * do not depend on the number of threads.
 */
#ifndef TG_POOL_H
#define TG_POOL_H

#include "tg_core.h"

typedef tg_status (*tg_task_fn) (const tg_ctx *ctx, void *arg, int64_t task, tg_error *err);

/* A monotonic clock, in milliseconds. */
double		tg_clock_ms(void);

/*
 * Move ms of the running phase's time to the phase called name (the time
 * spent in a caller's callback, say), so that phases stay disjoint.
 */
void		tg_phase_charge(const tg_ctx *ctx, const char *name, double ms);

/* The running phase's name ("" when none): a callback that runs a phase of its own resumes it after. */
void		tg_phase_running(const tg_ctx *ctx, char *name, size_t size);

/* Cores this process may run on (its CPU affinity), at least 1. */
int			tg_cores_available(void);

/* Threads a parallel region of this context may use: ctx->threads, 0 = every core. */
int			tg_threads_wanted(const tg_ctx *ctx);

/*
 * Open a call scope: *call is ctx with a pool of its own (no thread started
 * yet).  tg_call_close joins every thread the scope started and records in
 * ctx->stats how many ran.
 */
typedef struct tg_pool tg_pool;

void		tg_call_open(const tg_ctx *ctx, tg_ctx *call);
void		tg_call_close(tg_ctx *call);

/*
 * A core entry point's statistics: at the top level (ctx has no call scope
 * yet) ctx->stats start afresh for `cells` cells and tg_stats_end records the
 * entry point's core time; nested in another entry point's call, both leave
 * that call's statistics alone.  tg_stats_begin returns the start time.
 */
double		tg_stats_begin(const tg_ctx *ctx, int64_t cells);
void		tg_stats_end(const tg_ctx *ctx, double t0);

/*
 * Run fn(task) for every task in [0, ntasks), on up to tg_threads_wanted()
 * workers (inline when one suffices or when called from a task).  On failure
 * returns the error of the lowest-numbered failing task (tasks after it may
 * not run); TG_ECANCELED when ctx->cancel asked to stop.
 */
tg_status	tg_parallel(const tg_ctx *ctx, int64_t ntasks, tg_task_fn fn, void *arg, tg_error *err);

/*
 * Rows of a grid in tasks of whole rows, about TG_TASK_CELLS cells each (the
 * partition depends on the grid only, never on the thread count).
 */
#define TG_TASK_CELLS 65536

typedef tg_status (*tg_rows_fn) (const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err);

tg_status	tg_parallel_rows(const tg_ctx *ctx, int width, int height, tg_rows_fn fn, void *arg,
							 tg_error *err);

/* [*lo, *hi) of part `t` of `parts` equal parts of [0, n). */
static inline void
tg_part_range(int64_t n, int64_t parts, int64_t t, int64_t *lo, int64_t *hi)
{
	*lo = n * t / parts;
	*hi = n * (t + 1) / parts;
}

/*
 * Large blocks of a call (tg_alloc and tg_free use these): a block the
 * calling thread frees during a call is kept for a later allocation of the
 * same call that it fits, and given back when the call ends.
 * tg_block_take: a kept block for `size` bytes, or NULL; tg_block_track:
 * remember a block just allocated; tg_block_keep: true when the block was
 * kept (the caller must not free it).  Blocks under tg_kept_block_bytes take
 * no part (the tests lower it to make every grid take part).
 */
extern size_t tg_kept_block_bytes;
void	   *tg_block_take(const tg_ctx *ctx, size_t size);
void		tg_block_track(const tg_ctx *ctx, void *p, size_t size);
bool		tg_block_keep(const tg_ctx *ctx, void *p);
/* From now on the call keeps no block: one planned to fill a memory budget (strips). */
void		tg_blocks_keep_none(const tg_ctx *ctx);

/*
 * memcpy and memset on the call's threads (large ones only are split): into
 * fresh memory each page's fault and zeroing then happen on every thread.
 */
void		tg_parallel_memcpy(const tg_ctx *ctx, void *dst, const void *src, size_t bytes);
void		tg_parallel_memset(const tg_ctx *ctx, void *dst, int value, size_t bytes);

/* Index of the thread running a task (0 .. threads - 1); 0 on the calling thread. */
static inline int
tg_worker_index(const tg_ctx *ctx)
{
	return ctx->worker > 0 ? ctx->worker - 1 : 0;
}

#endif							/* TG_POOL_H */
