/*
 * runtime.h — what every core call runs on (runtime/): errors and the
 * call's memory (error.c, pool.c), its threads, phases and progress
 * (pool.c), raster scans on the threads (wavefront.c), and the queues,
 * heaps and cell lists of the passes.  Internal to the core and cuda/.
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
#ifndef TG_RUNTIME_H
#define TG_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tg_core.h"

/* ------------------------------------------------------------------------
 * Arithmetic both backends compile
 * ------------------------------------------------------------------------ */

/* A function the CPU and the device both compile (a formula they share). */
#ifdef __CUDACC__
#define TG_HD __host__ __device__ __forceinline__
#else
#define TG_HD static inline
#endif

/*
 * Arithmetic that must round the same on both backends: on the device, no
 * fused multiply-add may merge a product into a sum the CPU rounds twice.
 */
#ifdef __CUDA_ARCH__
#define TG_DADD(a, b) __dadd_rn((a), (b))
#define TG_DMUL(a, b) __dmul_rn((a), (b))
/* values other blocks of a running kernel may have written: read from L2 */
#define TG_LOAD_SHARED(p) __ldcg(p)
#else
#define TG_DADD(a, b) ((a) + (b))
#define TG_DMUL(a, b) ((a) * (b))
#define TG_LOAD_SHARED(p) (*(p))
#endif

#define TG_DEGREES_PER_RADIAN 57.295779513082320876798

#ifdef __cplusplus
extern "C"
{
#endif

/* ------------------------------------------------------------------------
 * Memory, cancellation and phases of a call
 * ------------------------------------------------------------------------ */
void	   *tg_alloc(const tg_ctx *ctx, size_t size);
void		tg_free(const tg_ctx *ctx, void *ptr);
/*
 * Room for `need` items of `size` bytes in *p (capacity *cap, doubled as
 * needed, the items kept); false when out of memory (*p left as it was).
 */
bool		tg_grow(const tg_ctx *ctx, void **p, size_t *cap, size_t need, size_t size);

/* Poll the cancel callback. */
static inline bool
tg_canceled(const tg_ctx *ctx)
{
	return ctx->cancel != NULL && ctx->cancel(ctx->cancel_arg);
}

void	   *tg_alloc(const tg_ctx *ctx, size_t size);
void		tg_free(const tg_ctx *ctx, void *ptr);
/*
 * Room for `need` items of `size` bytes in *p (capacity *cap, doubled as
 * needed, the items kept); false when out of memory (*p left as it was).
 */
bool		tg_grow(const tg_ctx *ctx, void **p, size_t *cap, size_t need, size_t size);

/* Cells a serial pass handles between two looks at the cancel callback. */
#define TG_CANCEL_EVERY 65536

/*
 * Start a named phase of the running call: the previous one's time goes to
 * ctx->stats, and the progress callback hears of it.  tg_phase_end closes
 * the last.  Calling thread only.
 */
void		tg_phase(const tg_ctx *ctx, const char *name);
void		tg_phase_end(const tg_ctx *ctx);
/* How far the running phase is (0 to 1), told from a serial loop: calling thread only. */
void		tg_phase_progress(const tg_ctx *ctx, double fraction);
/*
 * The share [lo, hi) of the phase that the task lists from here on cover
 * (the whole phase: 0, 1); progress counts on from lo.
 */
void		tg_phase_span(const tg_ctx *ctx, double lo, double hi);
/*
 * From here on the phases run are step `done` (0-based) of `total` of the
 * phase `outer` (a strip of rows of it): progress is told as the outer
 * phase's, naming the step and the phase within it.  NULL ends it.
 */
void		tg_phase_within(const tg_ctx *ctx, const char *outer, int done, int total);

/* ------------------------------------------------------------------------
 * The call's threads
 * ------------------------------------------------------------------------ */
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
 * tg_parallel while the calling thread does work of its own that only it may
 * do (a caller's callbacks), step by step: beside(ctx, beside_arg, &more)
 * runs one short step (the polls for cancellation and progress come between
 * steps) and clears *more when none is left.  Returns once both are done; a
 * failing step stops the tasks and its error is returned.
 */
typedef tg_status (*tg_beside_fn) (const tg_ctx *ctx, void *arg, bool *more, tg_error *err);

tg_status	tg_parallel_beside(const tg_ctx *ctx, int64_t ntasks, tg_task_fn fn, void *arg,
							   tg_beside_fn beside, void *beside_arg, tg_error *err);

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

/* Allocations from this size up count in a call's peak_host_bytes (lowered by the tests). */
extern size_t tg_tracked_bytes;
void	   *tg_block_take(const tg_ctx *ctx, size_t size);
void		tg_block_track(const tg_ctx *ctx, void *p, size_t size);
bool		tg_block_keep(const tg_ctx *ctx, void *p);
/*
 * From now on the call keeps freed blocks only while all it holds stays
 * within budget: a call planned to fill a memory budget (strips), whose
 * strips allocate the same buffers strip after strip.
 */
void		tg_blocks_keep_within(const tg_ctx *ctx, size_t budget);

/*
 * memcpy and memset on the call's threads (large ones only are split): into
 * fresh memory each page's fault and zeroing then happen on every thread.
 */
void		tg_parallel_memcpy(const tg_ctx *ctx, void *dst, const void *src, size_t bytes);
void		tg_parallel_memset(const tg_ctx *ctx, void *dst, int value, size_t bytes);
/* n doubles narrowed to floats, likewise (raster.h's tg_band_decode widens a band). */
void		tg_parallel_narrow(const tg_ctx *ctx, float *dst, const double *src, size_t n);

/* Index of the thread running a task (0 .. threads - 1); 0 on the calling thread. */
static inline int
tg_worker_index(const tg_ctx *ctx)
{
	return ctx->worker > 0 ? ctx->worker - 1 : 0;
}

/* ------------------------------------------------------------------------
 * Raster scans on the threads (wavefront.c): cell for cell the scan one
 * thread would make.
 *
 * A scan forward takes the cells row by row from the top, left to right
 * within a row, and each cell reads the cells before it: its left, up-left,
 * up and up-right neighbours; a scan backward is its mirror (bottom up,
 * right to left; right, down-right, down and down-left).  The region is cut
 * into chunks of rows and, within a chunk, blocks of columns; a block's inner
 * edges move one column per row against the scan (left, going down, for a
 * forward scan), so the up-right cell a block's last column reads is its own
 * or, on a chunk's first row, the chunk before's.  Block b of chunk c then
 * reads only blocks b - 1 of its chunk and b, b + 1 of the chunk before:
 * the threads take blocks in wave order (2c + b) and wait for those where
 * they must.  A block of a forward scan never reads what a later block
 * writes, so the result is the one-thread scan's whatever the threads.
 * ------------------------------------------------------------------------ */
typedef struct tg_wave
{
	int			x0,
				x1;				/* the region: columns [x0, x1) ... */
	int			y0,
				y1;				/* ... and rows [y0, y1) */
	int			blocks;			/* blocks of columns per chunk */
	int			chunks;			/* chunks of rows */
	bool		backward;		/* the scan running */
} tg_wave;

/* Cut the region for the context's threads (one block on one thread). */
void		tg_wave_plan(const tg_ctx *ctx, tg_wave *w, int x0, int x1, int y0, int y1);

/* Rows [*r0, *r1) of chunk c, counted in the scan's order. */
void		tg_wave_rows(const tg_wave *w, int c, int *r0, int *r1);

/*
 * Columns [*c0, *c1) of block b (counted in the scan's order) on row y of
 * the chunk of rows [r0, r1); a backward scan takes them from *c1 - 1 down.
 */
void		tg_wave_cols(const tg_wave *w, int b, int r0, int r1, int y, int *c0, int *c1);

/* Scan block b of chunk c (both counted in the scan's order); runs on a worker thread. */
typedef void (*tg_wave_fn) (void *arg, const tg_wave *w, int b, int c);

/* One scan (w->backward says which) over the region, by the context's threads. */
tg_status	tg_wavefront(const tg_ctx *ctx, const tg_wave *w, tg_wave_fn fn, void *arg, tg_error *err);

/* ------------------------------------------------------------------------
 * The binary min-heap of (elevation, cell) of the CPU floods.  Ties go to
 * the smaller index, so a flood's order is deterministic.  The caller
 * allocates a[] for as many items as it will ever hold.
 * ------------------------------------------------------------------------ */
typedef struct tg_heap_item
{
	double		w;
	uint32_t	i;
} tg_heap_item;

typedef struct tg_heap
{
	tg_heap_item *a;
	size_t		len;
} tg_heap;

static inline bool
tg_heap_less(const tg_heap_item *x, const tg_heap_item *y)
{
	return x->w < y->w || (x->w == y->w && x->i < y->i);
}

static inline void
tg_heap_push(tg_heap *h, double w, uint32_t i)
{
	const tg_heap_item it = {w, i};
	size_t		j = h->len++;

	while (j > 0)
	{
		size_t		parent = (j - 1) / 2;

		if (!tg_heap_less(&it, &h->a[parent]))
			break;
		h->a[j] = h->a[parent];
		j = parent;
	}
	h->a[j] = it;
}

static inline tg_heap_item
tg_heap_pop(tg_heap *h)
{
	tg_heap_item top = h->a[0];
	tg_heap_item last = h->a[--h->len];
	size_t		j = 0;

	for (;;)
	{
		size_t		c = 2 * j + 1;

		if (c >= h->len)
			break;
		if (c + 1 < h->len && tg_heap_less(&h->a[c + 1], &h->a[c]))
			c++;
		if (!tg_heap_less(&h->a[c], &last))
			break;
		h->a[j] = h->a[c];
		j = c;
	}
	if (h->len > 0)
		h->a[j] = last;
	return top;
}

/* ------------------------------------------------------------------------
 * For the passes that lower values until nothing changes (the fill's
 * reconstruction, the flats' distances), in blocks of rows on the threads:
 * a FIFO of cells, which starts small and doubles (a pass's front is
 * usually far smaller than the cells it may visit, and room never written
 * is never faulted in); and the copy of a block's facing rows taken
 * between rounds.
 * ------------------------------------------------------------------------ */
/* A FIFO of cells that grows as needed (a cell may be queued again). */
typedef struct cell_fifo
{
	uint32_t   *cell;
	size_t		room;			/* a power of two, or 0 before the first push */
	size_t		head;
	size_t		len;
} cell_fifo;

static inline bool
fifo_push(const tg_ctx *ctx, cell_fifo *q, uint32_t c)
{
	if (q->len == q->room)
	{
		const size_t room = q->room ? 2 * q->room : 4096;
		uint32_t   *more = (uint32_t *) tg_alloc(ctx, room * sizeof(uint32_t));

		if (more == NULL)
			return false;
		for (size_t k = 0; k < q->len; k++)
			more[k] = q->cell[(q->head + k) & (q->room - 1)];
		tg_free(ctx, q->cell);
		q->cell = more;
		q->room = room;
		q->head = 0;
	}
	q->cell[(q->head + q->len++) & (q->room - 1)] = c;
	return true;
}

static inline uint32_t
fifo_pop(cell_fifo *q)
{
	const uint32_t c = q->cell[q->head];

	q->head = (q->head + 1) & (q->room - 1);
	q->len--;
	return c;
}

static inline void
fifo_free(const tg_ctx *ctx, cell_fifo *q)
{
	tg_free(ctx, q->cell);
	q->cell = NULL;
	q->room = q->head = q->len = 0;
}

/*
 * A block reads its neighbours' facing rows from a copy: bring the copy of
 * one facing row up to date (row NULL: the block has no neighbour there);
 * true when it changed, i.e. the neighbour lowered it since.
 */
static inline bool
facing_row_refresh(void *copy, const void *row, size_t bytes)
{
	if (row == NULL || memcmp(copy, row, bytes) == 0)
		return false;
	memcpy(copy, row, bytes);
	return true;
}

/* ------------------------------------------------------------------------
 * Lists of cells that many tasks append to at once (frontiers of
 * breadth-first passes, cells reached in a round).  A task gathers cells in
 * a batch of its own and reserves room for the whole batch with one atomic
 * addition.  The order of a list depends on the threads; what the core
 * computes from such a list never does.
 * ------------------------------------------------------------------------ */
/* List cells handed to one task of a parallel region over a list. */
#define TG_LIST_TASK 16384
#define TG_BATCH 512

typedef struct tg_cell_batch
{
	uint32_t	cell[TG_BATCH];
	size_t		count;
	uint32_t   *list;			/* room for every cell that can be appended */
	size_t	   *len;			/* the list's length, updated atomically */
} tg_cell_batch;

static inline void
tg_batch_init(tg_cell_batch *b, uint32_t *list, size_t *len)
{
	b->count = 0;
	b->list = list;
	b->len = len;
}

static inline void
tg_batch_flush(tg_cell_batch *b)
{
	size_t		at;

	if (b->count == 0)
		return;
	at = __atomic_fetch_add(b->len, b->count, __ATOMIC_RELAXED);
	memcpy(b->list + at, b->cell, b->count * sizeof(uint32_t));
	b->count = 0;
}

static inline void
tg_batch_add(tg_cell_batch *b, uint32_t c)
{
	b->cell[b->count++] = c;
	if (b->count == TG_BATCH)
		tg_batch_flush(b);
}

/* Tasks for a list of len cells, and the part [*lo, *hi) of task `task`. */
static inline int64_t
tg_list_tasks(size_t len)
{
	return (int64_t) ((len + TG_LIST_TASK - 1) / TG_LIST_TASK);
}

static inline void
tg_list_range(size_t len, int64_t task, size_t *lo, size_t *hi)
{
	*lo = (size_t) task * TG_LIST_TASK;
	*hi = *lo + TG_LIST_TASK < len ? *lo + TG_LIST_TASK : len;
}

#ifdef __cplusplus
}
#endif

#endif							/* TG_RUNTIME_H */
