/*
 * pool.c — the threads of one core call, its phases and statistics, and its
 * memory (the context's allocator, with the large blocks a call reuses).
 *
 * POSIX threads rather than OpenMP: the threads must start and stop inside
 * one call (OpenMP keeps an idle team alive in the process after a parallel
 * region, which a database backend must not have), must not take signals
 * meant for the backend, and must be steered by a calling thread that polls
 * for cancellation while they work.  The pool is small: one job at a time,
 * tasks handed out by an atomic counter.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE				/* sched_getaffinity, CPU_COUNT */
#endif
#include "runtime/runtime.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 256

/* How often the calling thread looks at cancellation and progress. */
#define POLL_MS 20

typedef struct job
{
	const tg_ctx *ctx;			/* the region's context, as the workers copy it */
	tg_task_fn	fn;
	void	   *arg;
	int64_t		ntasks;
	atomic_int_fast64_t next;	/* next task to hand out */
	atomic_int_fast64_t done;	/* tasks finished */
	atomic_int_fast64_t limit;	/* tasks at or above the lowest failed one are skipped */
	atomic_bool stop;			/* canceled: every task should return soon */
	int			workers;		/* workers taking part */
	int			finished;		/* workers that left the job (under the lock) */
	tg_error	error;			/* of the lowest failed task (under the lock) */
	int64_t		error_task;
} job;

/* A large block allocated on the calling thread during the call (see tg_block_*) */
typedef struct block
{
	void	   *p;
	size_t		size;
	tg_allocator allocator;		/* it came from, and goes back to */
	bool		kept;			/* freed by the call, waiting to be handed out again */
} block;

#define MAX_BLOCKS 64
#define MAX_HELD 1024			/* beyond, a call's further allocations go uncounted */

typedef struct held_block
{
	void	   *p;
	size_t		size;
} held_block;
#define KEPT_LARGEST_TIMES 4	/* kept bytes at most: this many of the largest block */

struct tg_pool
{
	const tg_ctx *owner;		/* the scope that opened the pool and closes it */
	block		blocks[MAX_BLOCKS];
	int			nblocks;
	size_t		largest;
	size_t		kept_bytes;
	size_t		keep_within;	/* 0, or the budget the call plans to fill: blocks kept only within it */
	/* the call's live allocations of tg_tracked_bytes or more, for its peak (any thread) */
	pthread_mutex_t held_lock;
	held_block	held[MAX_HELD];
	int			nheld;
	size_t		held_bytes;
	size_t		peak_bytes;
	pthread_mutex_t lock;
	pthread_cond_t work;		/* a job or the end was posted */
	pthread_cond_t idle;		/* a worker left the job */
	pthread_t	threads[MAX_THREADS];
	int			started;
	int			most_busy;		/* the most workers one job used */
	uint64_t	generation;		/* bumped for every job */
	job		   *current;
	bool		closing;
	/* phases of the call (tg_phase) */
	char		phase[32];
	double		phase_start;
	/* progress: what a task list's fraction spans of the phase, and the most reported so far */
	double		span_lo,
				span_hi,
				reported;
	/* the phase a step of which runs the phases now told (tg_phase_within), and its progress */
	char		outer[32];
	int			outer_done,
				outer_total;
	double		outer_reported;
};

typedef struct worker_start
{
	tg_pool    *pool;
	int			index;			/* 1-based */
} worker_start;

double
tg_clock_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int
tg_cores_available(void)
{
	cpu_set_t	set;
	int			n = 0;

	if (sched_getaffinity(0, sizeof set, &set) == 0)
		n = CPU_COUNT(&set);
	if (n < 1)
		n = (int) sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : n;
}

int
tg_threads_wanted(const tg_ctx *ctx)
{
	int			n = ctx->threads > 0 ? ctx->threads : tg_cores_available();

	return n > MAX_THREADS ? MAX_THREADS : n;
}

/* ------------------------------------------------------------------------
 * Workers
 * ------------------------------------------------------------------------ */
static void *
worker_alloc(size_t size, void *arg)
{
	(void) arg;
	return malloc(size);
}

static void
worker_free(void *ptr, void *arg)
{
	(void) arg;
	free(ptr);
}

static bool
worker_stop_requested(void *arg)
{
	return atomic_load_explicit(&((job *) arg)->stop, memory_order_relaxed);
}

/* Take tasks of the job until none is left (or the job stops). */
static void
run_tasks(tg_pool *pool, job *j, int index)
{
	tg_ctx		wctx = *j->ctx;
	tg_error	err;

	wctx.allocator.alloc = worker_alloc;
	wctx.allocator.free = worker_free;
	wctx.allocator.arg = NULL;
	wctx.cancel = worker_stop_requested;
	wctx.cancel_arg = j;
	wctx.stats = NULL;
	wctx.progress = NULL;
	wctx.progress_arg = NULL;
	wctx.pool = NULL;
	wctx.worker = index;
	for (;;)
	{
		int64_t		t;
		tg_status	st;

		if (atomic_load_explicit(&j->stop, memory_order_relaxed))
			break;
		t = atomic_fetch_add(&j->next, 1);
		if (t >= j->ntasks || t >= atomic_load(&j->limit))
			break;
		tg_error_clear(&err);
		st = j->fn(&wctx, j->arg, t, &err);
		if (st != TG_OK)
		{
			pthread_mutex_lock(&pool->lock);
			if (t < j->error_task)
			{
				j->error_task = t;
				j->error = err;
				j->error.code = st;
			}
			pthread_mutex_unlock(&pool->lock);
			/* tasks below t were handed out already and still finish */
			for (int64_t lim = atomic_load(&j->limit); t < lim;)
				if (atomic_compare_exchange_weak(&j->limit, &lim, t))
					break;
		}
		atomic_fetch_add(&j->done, 1);
	}
}

static void *
worker_main(void *arg)
{
	worker_start *ws = arg;
	tg_pool    *pool = ws->pool;
	const int	index = ws->index;
	uint64_t	seen = 0;

	free(ws);
	pthread_mutex_lock(&pool->lock);
	for (;;)
	{
		job		   *j;

		while (!pool->closing && (pool->current == NULL || pool->generation == seen))
			pthread_cond_wait(&pool->work, &pool->lock);
		if (pool->closing)
			break;
		seen = pool->generation;
		j = pool->current;
		if (index > j->workers)
			continue;			/* this job wants fewer workers */
		pthread_mutex_unlock(&pool->lock);
		run_tasks(pool, j, index);
		pthread_mutex_lock(&pool->lock);
		j->finished++;
		pthread_cond_signal(&pool->idle);
	}
	pthread_mutex_unlock(&pool->lock);
	return NULL;
}

/* Start workers up to `want`; returns how many run.  Workers take no signals. */
static int
start_workers(tg_pool *pool, int want)
{
	sigset_t	all,
				old;

	if (want > MAX_THREADS)
		want = MAX_THREADS;
	if (pool->started >= want)
		return pool->started;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	while (pool->started < want)
	{
		worker_start *ws = malloc(sizeof *ws);

		if (ws == NULL)
			break;
		ws->pool = pool;
		ws->index = pool->started + 1;
		if (pthread_create(&pool->threads[pool->started], NULL, worker_main, ws) != 0)
		{
			free(ws);
			break;				/* run with the threads we have */
		}
		pool->started++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return pool->started;
}

/* ------------------------------------------------------------------------
 * Call scopes
 * ------------------------------------------------------------------------ */
static tg_pool *
pool_create(const tg_ctx *owner)
{
	tg_pool    *pool = calloc(1, sizeof *pool);

	if (pool == NULL)
		return NULL;
	pool->owner = owner;
	pthread_mutex_init(&pool->lock, NULL);
	pthread_mutex_init(&pool->held_lock, NULL);
	pthread_cond_init(&pool->work, NULL);
	pthread_cond_init(&pool->idle, NULL);
	return pool;
}

/* The pool of the call running on this thread, on its calling thread only */
static _Thread_local tg_pool *calling_pool;

static void give_back_kept(tg_pool *pool);

static void
pool_destroy(tg_pool *pool)
{
	if (pool == NULL)
		return;
	give_back_kept(pool);
	calling_pool = NULL;
	pthread_mutex_lock(&pool->lock);
	pool->closing = true;
	pthread_cond_broadcast(&pool->work);
	pthread_mutex_unlock(&pool->lock);
	for (int i = 0; i < pool->started; i++)
		pthread_join(pool->threads[i], NULL);
	pthread_mutex_destroy(&pool->lock);
	pthread_mutex_destroy(&pool->held_lock);
	pthread_cond_destroy(&pool->work);
	pthread_cond_destroy(&pool->idle);
	free(pool);
}

static void
record_threads(const tg_ctx *ctx, int threads)
{
	if (ctx->stats && threads > ctx->stats->threads)
		ctx->stats->threads = threads;
}

/*
 * A scope opened inside another (a core entry point calling another) shares
 * the outer one's pool.  Without a pool (no memory, or inside a task),
 * regions run inline.
 */
void
tg_call_open(const tg_ctx *ctx, tg_ctx *call)
{
	*call = *ctx;
	if (ctx->pool == NULL && ctx->worker == 0)
	{
		call->pool = pool_create(call);
		calling_pool = call->pool;
	}
	record_threads(call, 1);
}

void
tg_call_close(tg_ctx *call)
{
	if (call->pool && call->pool->owner == call)
	{
		tg_phase_end(call);
		record_threads(call, call->pool->most_busy);
		if (call->stats && call->pool->peak_bytes > call->stats->peak_host_bytes)
			call->stats->peak_host_bytes = call->pool->peak_bytes;
		pool_destroy(call->pool);
	}
	call->pool = NULL;
}

double
tg_stats_begin(const tg_ctx *ctx, int64_t cells)
{
	if (ctx->stats && ctx->pool == NULL)
	{
		memset(ctx->stats, 0, sizeof *ctx->stats);
		ctx->stats->cells = cells;
	}
	return tg_clock_ms();
}

void
tg_stats_end(const tg_ctx *ctx, double t0)
{
	if (ctx->stats && ctx->pool == NULL)
		ctx->stats->core_ms = tg_clock_ms() - t0;
}

/* ------------------------------------------------------------------------
 * Phases and progress
 * ------------------------------------------------------------------------ */
/* A phase met again adds to its time. */
static void
add_phase_time(tg_run_stats *s, const char *name, double ms)
{
	int			k;

	for (k = 0; k < s->nphases && strcmp(s->phases[k].name, name) != 0; k++)
		;
	if (k == s->nphases && k < TG_MAX_PHASES)
	{
		snprintf(s->phases[k].name, sizeof s->phases[k].name, "%s", name);
		s->phases[k].ms = 0;
		s->nphases++;
	}
	if (k < s->nphases)
		s->phases[k].ms += ms;
}

void
tg_phase_end(const tg_ctx *ctx)
{
	tg_pool    *pool = ctx->pool;

	if (pool == NULL || pool->phase[0] == '\0')
		return;
	if (ctx->stats)
		add_phase_time(ctx->stats, pool->phase, tg_clock_ms() - pool->phase_start);
	pool->phase[0] = '\0';
}

void
tg_phase_charge(const tg_ctx *ctx, const char *name, double ms)
{
	tg_pool    *pool = ctx->pool;

	if (ctx->worker != 0 || pool == NULL || pool->phase[0] == '\0' || ctx->stats == NULL)
		return;
	add_phase_time(ctx->stats, pool->phase, 0);	/* listed before what it hands on */
	add_phase_time(ctx->stats, name, ms);
	pool->phase_start += ms;
}

void
tg_phase_running(const tg_ctx *ctx, char *name, size_t size)
{
	snprintf(name, size, "%s", ctx->pool && ctx->worker == 0 ? ctx->pool->phase : "");
}

/*
 * What the progress callback hears: the phase as it is, or, within a step of
 * an outer phase (a strip), the outer phase's progress with the step and
 * the phase running in it named, never going back.
 */
static void
tell(const tg_ctx *ctx, const char *phase, double fraction)
{
	tg_pool    *pool = ctx->pool;
	char		name[128];
	double		f;

	if (ctx->progress == NULL)
		return;
	if (pool == NULL || pool->outer_total == 0)
	{
		ctx->progress(ctx->progress_arg, phase, fraction);
		return;
	}
	f = (pool->outer_done + fraction) / pool->outer_total;
	pool->outer_reported = f > pool->outer_reported ? f : pool->outer_reported;
	if (strcmp(phase, pool->outer) == 0)
		snprintf(name, sizeof name, "%s", pool->outer);
	else
		snprintf(name, sizeof name, "%s (strip %d of %d: %s)", pool->outer, pool->outer_done + 1,
				 pool->outer_total, phase);
	ctx->progress(ctx->progress_arg, name, pool->outer_reported);
}

void
tg_phase_within(const tg_ctx *ctx, const char *outer, int done, int total)
{
	tg_pool    *pool = ctx->pool;

	if (ctx->worker != 0 || pool == NULL)
		return;
	pool->outer_total = outer != NULL && total > 0 ? total : 0;
	pool->outer_done = done;
	snprintf(pool->outer, sizeof pool->outer, "%s", outer ? outer : "");
	pool->outer_reported = pool->outer_total > 0 ? (double) done / total : 0;
}

void
tg_phase(const tg_ctx *ctx, const char *name)
{
	tg_pool    *pool = ctx->pool;

	if (ctx->worker != 0)
		return;
	if (pool)
	{
		tg_phase_end(ctx);
		snprintf(pool->phase, sizeof pool->phase, "%s", name);
		pool->phase_start = tg_clock_ms();
		pool->span_lo = pool->reported = 0;
		pool->span_hi = 1;
	}
	tell(ctx, name, 0.0);
}

/*
 * A task list's fraction as the phase's: within the span the phase gave it
 * (tg_phase_span), never below what was reported before, so that a phase of
 * several task lists (a viewshed per observer) counts up once.
 */
static void
report(const tg_ctx *ctx, double fraction)
{
	tg_pool    *pool = ctx->pool;
	double		f;

	if (ctx->progress == NULL || pool == NULL || pool->phase[0] == '\0')
		return;
	f = pool->span_lo + fraction * (pool->span_hi - pool->span_lo);
	pool->reported = f > pool->reported ? f : pool->reported;
	tell(ctx, pool->phase, pool->reported);
}

void
tg_phase_span(const tg_ctx *ctx, double lo, double hi)
{
	if (ctx->worker == 0 && ctx->pool)
	{
		ctx->pool->span_lo = ctx->pool->reported = lo;
		ctx->pool->span_hi = hi;
	}
}

void
tg_phase_progress(const tg_ctx *ctx, double fraction)
{
	if (ctx->worker == 0)
		report(ctx, fraction);
}

/* ------------------------------------------------------------------------
 * Parallel regions
 * ------------------------------------------------------------------------ */
static tg_status
run_inline(const tg_ctx *ctx, int64_t ntasks, tg_task_fn fn, void *arg, tg_error *err)
{
	for (int64_t t = 0; t < ntasks; t++)
	{
		tg_status	st;

		if (tg_canceled(ctx))
			return tg_error_set(err, TG_ECANCELED, "canceled");
		st = fn(ctx, arg, t, err);
		if (st != TG_OK)
			return st;
		if (ctx->worker == 0)
			report(ctx, (double) (t + 1) / ntasks);
	}
	return TG_OK;
}

/* The calling thread's work beside a region (tg_parallel_beside): step by step until done. */
typedef struct beside_work
{
	tg_beside_fn fn;
	void	   *arg;
	bool		more;
	tg_status	status;
	tg_error	error;
} beside_work;

static void
beside_step(const tg_ctx *ctx, beside_work *b)
{
	tg_error_clear(&b->error);
	b->status = b->fn(ctx, b->arg, &b->more, &b->error);
	if (b->status != TG_OK)
		b->more = false;
}

static tg_status
parallel(const tg_ctx *ctx, int64_t ntasks, tg_task_fn fn, void *arg, beside_work *beside, tg_error *err)
{
	tg_pool    *pool = ctx->pool;
	job			j;
	int			want,
				workers;
	bool		canceled = false;
	double		polled = tg_clock_ms();

	if (ntasks <= 0)
		return TG_OK;
	want = tg_threads_wanted(ctx);
	if (want > ntasks)
		want = (int) ntasks;
	workers = ctx->worker != 0 || pool == NULL || want <= 1 ? 1 : start_workers(pool, want);
	if (workers > want)
		workers = want;
	if (workers <= 1)
		return run_inline(ctx, ntasks, fn, arg, err);

	memset(&j, 0, sizeof j);
	j.ctx = ctx;
	j.fn = fn;
	j.arg = arg;
	j.ntasks = ntasks;
	atomic_init(&j.next, 0);
	atomic_init(&j.done, 0);
	atomic_init(&j.limit, ntasks);
	atomic_init(&j.stop, false);
	j.workers = workers;
	j.error_task = ntasks;

	pthread_mutex_lock(&pool->lock);
	pool->current = &j;
	pool->generation++;
	pthread_cond_broadcast(&pool->work);
	while (j.finished < workers)
	{
		if (beside && beside->more)
		{
			/* a step of the calling thread's own work, then the polls when they are due */
			pthread_mutex_unlock(&pool->lock);
			beside_step(ctx, beside);
			if (beside->status != TG_OK)
				atomic_store(&j.stop, true);
			if (tg_clock_ms() - polled < POLL_MS)
			{
				pthread_mutex_lock(&pool->lock);
				continue;
			}
		}
		else
		{
			struct timespec until;

			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_nsec += POLL_MS * 1000000L;
			if (until.tv_nsec >= 1000000000L)
			{
				until.tv_sec++;
				until.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&pool->idle, &pool->lock, &until);
			if (j.finished >= workers)
				break;
			/* the callbacks may take a while: not under the lock */
			pthread_mutex_unlock(&pool->lock);
		}
		polled = tg_clock_ms();
		if (!canceled && tg_canceled(ctx))
		{
			canceled = true;
			atomic_store(&j.stop, true);
			if (beside)
				beside->more = false;
		}
		report(ctx, (double) atomic_load(&j.done) / ntasks);
		pthread_mutex_lock(&pool->lock);
	}
	pool->current = NULL;
	pthread_mutex_unlock(&pool->lock);
	if (workers > pool->most_busy)
		pool->most_busy = workers;

	if (canceled)
		return tg_error_set(err, TG_ECANCELED, "canceled");
	if (beside && beside->status != TG_OK)
		return TG_OK;			/* the caller reports it */
	if (j.error_task < ntasks)
	{
		if (err)
			*err = j.error;
		return j.error.code;
	}
	report(ctx, 1.0);
	return TG_OK;
}

tg_status
tg_parallel(const tg_ctx *ctx, int64_t ntasks, tg_task_fn fn, void *arg, tg_error *err)
{
	return parallel(ctx, ntasks, fn, arg, NULL, err);
}

tg_status
tg_parallel_beside(const tg_ctx *ctx, int64_t ntasks, tg_task_fn fn, void *arg, tg_beside_fn beside,
				   void *beside_arg, tg_error *err)
{
	beside_work b = {.fn = beside, .arg = beside_arg, .more = true, .status = TG_OK};
	tg_status	st = parallel(ctx, ntasks, fn, arg, &b, err);

	/* what is left of it once the tasks are done (or all of it, run inline) */
	while (st == TG_OK && b.more)
	{
		if (tg_canceled(ctx))
			return tg_error_set(err, TG_ECANCELED, "canceled");
		beside_step(ctx, &b);
	}
	if (st == TG_OK && b.status != TG_OK)
	{
		if (err)
			*err = b.error;
		return b.status;
	}
	return st;
}

/* ------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------ */
typedef struct rows_job
{
	tg_rows_fn	fn;
	void	   *arg;
	int			height;
	int			rows;			/* per task */
} rows_job;

static tg_status
rows_task(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	const rows_job *r = arg;
	int			y0 = (int) (task * r->rows);
	int			y1 = y0 + r->rows < r->height ? y0 + r->rows : r->height;

	return r->fn(ctx, r->arg, y0, y1, err);
}

tg_status
tg_parallel_rows(const tg_ctx *ctx, int width, int height, tg_rows_fn fn, void *arg, tg_error *err)
{
	rows_job	r = {fn, arg, height, 1};

	if (height <= 0)
		return TG_OK;
	if (width > 0 && width < TG_TASK_CELLS)
		r.rows = TG_TASK_CELLS / width;
	return tg_parallel(ctx, (height + r.rows - 1) / r.rows, rows_task, &r, err);
}

/*
 * A copy is cut into one part per thread or more (a staging slot is only a
 * few parts of MEMCPY_MAX_PART, and one thread alone copies well below the
 * memory's rate, fresh pages most of all), none under MEMCPY_MIN_PART.
 */
#define MEMCPY_MIN_PART ((size_t) 1 << 20)
#define MEMCPY_MAX_PART ((size_t) 8 << 20)

typedef enum bytes_how
{
	BYTES_COPY,
	BYTES_SET,					/* every byte to `value` */
	BYTES_NARROW				/* doubles to floats: `bytes` counts the doubles' */
} bytes_how;

typedef struct bytes_job
{
	char	   *dst;
	const char *src;
	bytes_how	how;
	int			value;
	size_t		bytes;
	size_t		part;			/* a multiple of the page size: parts of doubles hold whole cells */
} bytes_job;

static tg_status
bytes_task(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	const bytes_job *m = arg;
	size_t		off = (size_t) task * m->part;
	size_t		len = m->bytes - off < m->part ? m->bytes - off : m->part;

	if (m->how == BYTES_COPY)
		memcpy(m->dst + off, m->src + off, len);
	else if (m->how == BYTES_SET)
		memset(m->dst + off, m->value, len);
	else
		for (size_t i = 0; i < len / sizeof(double); i++)
			((float *) (m->dst + off / 2))[i] = (float) ((const double *) (m->src + off))[i];
	return TG_OK;
}

static void
parallel_bytes(const tg_ctx *ctx, bytes_job *m)
{
	tg_ctx		quiet = *ctx;
	size_t		part = m->bytes / (size_t) tg_threads_wanted(ctx);

	part = (part + 4095) & ~(size_t) 4095;	/* a multiple of the page size */
	m->part = part < MEMCPY_MIN_PART ? MEMCPY_MIN_PART : part > MEMCPY_MAX_PART ? MEMCPY_MAX_PART : part;
	/* a copy is not canceled half-way */
	quiet.cancel = NULL;
	quiet.progress = NULL;
	if (m->bytes < 2 * MEMCPY_MIN_PART ||
		tg_parallel(&quiet, (int64_t) ((m->bytes + m->part - 1) / m->part), bytes_task, m, NULL) != TG_OK)
	{
		m->part = m->bytes;
		bytes_task(ctx, m, 0, NULL);
	}
}

void
tg_parallel_memcpy(const tg_ctx *ctx, void *dst, const void *src, size_t bytes)
{
	bytes_job	m = {dst, src, BYTES_COPY, 0, bytes, 0};

	parallel_bytes(ctx, &m);
}

void
tg_parallel_memset(const tg_ctx *ctx, void *dst, int value, size_t bytes)
{
	bytes_job	m = {dst, NULL, BYTES_SET, value, bytes, 0};

	parallel_bytes(ctx, &m);
}

void
tg_parallel_narrow(const tg_ctx *ctx, float *dst, const double *src, size_t n)
{
	bytes_job	m = {(char *) dst, (const char *) src, BYTES_NARROW, 0, n * sizeof(double), 0};

	parallel_bytes(ctx, &m);
}

/* ------------------------------------------------------------------------
 * The call's peak of host memory: its large allocations, counted from the
 * allocator's view (a kept block still counts), on any thread.
 * ------------------------------------------------------------------------ */
size_t		tg_tracked_bytes = (size_t) 1 << 20;	/* smaller buffers are noise per cell */

static void
held_add(tg_pool *pool, void *p, size_t size)
{
	if (pool == NULL || size < tg_tracked_bytes)
		return;
	pthread_mutex_lock(&pool->held_lock);
	if (pool->nheld < MAX_HELD)
	{
		pool->held[pool->nheld++] = (held_block) {p, size};
		pool->held_bytes += size;
		if (pool->held_bytes > pool->peak_bytes)
			pool->peak_bytes = pool->held_bytes;
	}
	pthread_mutex_unlock(&pool->held_lock);
}

/* p goes back to its allocator: no longer held (if the call counted it) */
static void
held_drop(tg_pool *pool, void *p)
{
	if (pool == NULL)
		return;
	pthread_mutex_lock(&pool->held_lock);
	for (int k = pool->nheld - 1; k >= 0; k--)
		if (pool->held[k].p == p)
		{
			pool->held_bytes -= pool->held[k].size;
			pool->held[k] = pool->held[--pool->nheld];
			break;
		}
	pthread_mutex_unlock(&pool->held_lock);
}

/* ------------------------------------------------------------------------
 * Large blocks kept for reuse within a call
 *
 * A chain allocates and frees grid-sized buffers phase after phase, and
 * memory fresh from the system costs a page fault and the zeroing of each
 * page on first touch: a good part of a pass over a fresh grid.  So during
 * a call, large blocks that the calling thread frees are kept and handed to
 * its later allocations that they fit (at most twice the size asked for);
 * what is still kept when the call ends goes back then.  Only the calling
 * thread's allocations take part: the workers allocate with malloc, and
 * nothing here needs a lock.
 * ------------------------------------------------------------------------ */
size_t		tg_kept_block_bytes = (size_t) 16 << 20;

static bool
same_allocator(const tg_allocator *a, const tg_allocator *b)
{
	return a->alloc == b->alloc && a->free == b->free && a->arg == b->arg;
}

/* ctx's pool, when its blocks take part: the call running on this thread */
static tg_pool *
blocks_of(const tg_ctx *ctx)
{
	return ctx->worker == 0 && ctx->pool != NULL && ctx->pool == calling_pool ? ctx->pool : NULL;
}

static void
forget_block(tg_pool *pool, int k)
{
	pool->blocks[k] = pool->blocks[--pool->nblocks];
}

/* What the call holds now, kept blocks included. */
static size_t
held_bytes(tg_pool *pool)
{
	size_t		n;

	pthread_mutex_lock(&pool->held_lock);
	n = pool->held_bytes;
	pthread_mutex_unlock(&pool->held_lock);
	return n;
}

/* The smallest kept block goes back to its allocator (there is one). */
static void
give_back_smallest(tg_pool *pool)
{
	int			smallest = -1;

	for (int j = 0; j < pool->nblocks; j++)
		if (pool->blocks[j].kept && (smallest < 0 || pool->blocks[j].size < pool->blocks[smallest].size))
			smallest = j;
	pool->kept_bytes -= pool->blocks[smallest].size;
	held_drop(pool, pool->blocks[smallest].p);
	pool->blocks[smallest].allocator.free(pool->blocks[smallest].p, pool->blocks[smallest].allocator.arg);
	forget_block(pool, smallest);
}

void *
tg_block_take(const tg_ctx *ctx, size_t size)
{
	tg_pool    *pool = blocks_of(ctx);
	int			best = -1;

	if (pool == NULL || size < tg_tracked_bytes)
		return NULL;
	for (int k = 0; k < pool->nblocks && size >= tg_kept_block_bytes; k++)
	{
		const block *b = &pool->blocks[k];

		if (b->kept && b->size >= size && b->size / 2 <= size &&
			same_allocator(&b->allocator, &ctx->allocator) &&
			(best < 0 || b->size < pool->blocks[best].size))
			best = k;
	}
	if (best < 0)
	{
		/* a fresh block (of any size the peak counts) beside the kept ones would pass the budget: they go back first */
		while (pool->keep_within > 0 && pool->kept_bytes > 0 && held_bytes(pool) + size > pool->keep_within)
			give_back_smallest(pool);
		return NULL;
	}
	pool->blocks[best].kept = false;
	pool->kept_bytes -= pool->blocks[best].size;
	return pool->blocks[best].p;
}

void
tg_block_track(const tg_ctx *ctx, void *p, size_t size)
{
	tg_pool    *pool = blocks_of(ctx);

	if (pool == NULL || size < tg_kept_block_bytes || pool->nblocks == MAX_BLOCKS)
		return;
	pool->blocks[pool->nblocks++] = (block) {p, size, ctx->allocator, false};
	if (size > pool->largest)
		pool->largest = size;
}

bool
tg_block_keep(const tg_ctx *ctx, void *p)
{
	tg_pool    *pool = calling_pool;
	int			k;

	if (pool == NULL || ctx->worker != 0)
		return false;
	for (k = 0; k < pool->nblocks && !(pool->blocks[k].p == p && !pool->blocks[k].kept); k++)
		;
	if (k == pool->nblocks)
		return false;
	/* freed by a context outside the call, or another allocator's: it goes back now */
	if (blocks_of(ctx) != pool || !same_allocator(&pool->blocks[k].allocator, &ctx->allocator))
	{
		forget_block(pool, k);
		return false;
	}
	pool->blocks[k].kept = true;
	pool->kept_bytes += pool->blocks[k].size;
	/* beyond the cap, the smallest kept blocks go back */
	while (pool->kept_bytes > KEPT_LARGEST_TIMES * pool->largest)
		give_back_smallest(pool);
	return true;
}

void
tg_blocks_keep_within(const tg_ctx *ctx, size_t budget)
{
	tg_pool    *pool = blocks_of(ctx);

	if (pool == NULL)
		return;
	pool->keep_within = budget > 0 ? budget : 1;
	while (pool->kept_bytes > 0 && held_bytes(pool) > pool->keep_within)
		give_back_smallest(pool);
}

/* At the end of the call: what is kept goes back; blocks in use are the caller's. */
static void
give_back_kept(tg_pool *pool)
{
	for (int k = 0; k < pool->nblocks; k++)
		if (pool->blocks[k].kept)
		{
			held_drop(pool, pool->blocks[k].p);
			pool->blocks[k].allocator.free(pool->blocks[k].p, pool->blocks[k].allocator.arg);
		}
	pool->nblocks = 0;
	pool->kept_bytes = 0;
}

/* ------------------------------------------------------------------------
 * The call's memory: the context's allocator, with the blocks above
 * ------------------------------------------------------------------------ */

static void *
malloc_alloc(size_t size, void *arg)
{
	(void) arg;
	return malloc(size);
}

static void
malloc_free(void *ptr, void *arg)
{
	(void) arg;
	free(ptr);
}

void
tg_ctx_init(tg_ctx *ctx)
{
	memset(ctx, 0, sizeof *ctx);
	ctx->backend = TG_BACKEND_AUTO;
	ctx->min_cells_for_gpu = 0;
	ctx->allocator.alloc = malloc_alloc;
	ctx->allocator.free = malloc_free;
}

/*
 * Grids are touched once each, in full: with 4 kB pages most of a pass's
 * time can go to the kernel faulting pages in.  Large buffers ask for huge
 * pages where the system leaves it to the program (transparent huge pages
 * in "madvise" mode); the advice covers whole huge pages inside the buffer.
 */
#define HUGE_PAGE ((size_t) 2 << 20)

static void
advise_huge_pages(void *p, size_t size)
{
#ifdef MADV_HUGEPAGE
	uintptr_t	start = ((uintptr_t) p + HUGE_PAGE - 1) & ~(uintptr_t) (HUGE_PAGE - 1);
	uintptr_t	end = ((uintptr_t) p + size) & ~(uintptr_t) (HUGE_PAGE - 1);

	if (end > start)
		(void) madvise((void *) start, end - start, MADV_HUGEPAGE);
#endif
}

void *
tg_alloc(const tg_ctx *ctx, size_t size)
{
	void	   *p = tg_block_take(ctx, size);	/* one the call freed: its pages are in */

	if (p != NULL)
		return p;
	p = ctx->allocator.alloc(size, ctx->allocator.arg);
	if (p != NULL && size >= 2 * HUGE_PAGE)
		advise_huge_pages(p, size);
	if (p != NULL)
	{
		tg_block_track(ctx, p, size);
		held_add(ctx->pool, p, size);
	}
	return p;
}

void
tg_free(const tg_ctx *ctx, void *ptr)
{
	if (ptr != NULL && !tg_block_keep(ctx, ptr))
	{
		held_drop(ctx->pool, ptr);
		ctx->allocator.free(ptr, ctx->allocator.arg);
	}
}

bool
tg_grow(const tg_ctx *ctx, void **p, size_t *cap, size_t need, size_t size)
{
	size_t		cap2;
	void	   *q;

	if (need <= *cap)
		return true;
	cap2 = *cap ? *cap : 4096;
	while (cap2 < need)
		cap2 *= 2;
	q = tg_alloc(ctx, cap2 * size);
	if (q == NULL)
		return false;
	if (*p)
		memcpy(q, *p, *cap * size);
	tg_free(ctx, *p);
	*p = q;
	*cap = cap2;
	return true;
}
