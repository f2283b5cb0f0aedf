/*
 * wavefront.c — raster scans on the call's threads (tg_wavefront, runtime.h).
 */
#include "runtime/runtime.h"

#include <sched.h>
#include <stdatomic.h>

/* Fewest columns of a block: narrower ones cost more waiting than they spread. */
#define MIN_BLOCK_COLUMNS 16
/* Blocks per thread: a thread waiting for a block finds another ready. */
#define BLOCKS_PER_THREAD 4
/* Chunks per block, at least: the wavefront fills and drains in few of them. */
#define CHUNKS_PER_BLOCK 4

void
tg_wave_plan(const tg_ctx *ctx, tg_wave *w, int x0, int x1, int y0, int y1)
{
	const int	threads = tg_threads_wanted(ctx),
				X = x1 - x0,
				Y = y1 - y0;

	w->x0 = x0;
	w->x1 = x1;
	w->y0 = y0;
	w->y1 = y1;
	w->backward = false;
	w->blocks = threads > 1 ? BLOCKS_PER_THREAD * threads : 1;
	if (w->blocks > X / MIN_BLOCK_COLUMNS)
		w->blocks = X / MIN_BLOCK_COLUMNS;
	w->blocks = w->blocks > 1 ? w->blocks : 1;
	w->chunks = 1;
	if (w->blocks > 1)
	{
		/* a chunk has no more rows than a block has columns: its edges move a column per row */
		const int	rows = X / w->blocks,
					least = (Y + rows - 1) / rows;

		w->chunks = CHUNKS_PER_BLOCK * w->blocks > least ? CHUNKS_PER_BLOCK * w->blocks : least;
		w->chunks = w->chunks < Y ? w->chunks : Y;
		w->chunks = w->chunks > 1 ? w->chunks : 1;
	}
}

void
tg_wave_rows(const tg_wave *w, int c, int *r0, int *r1)
{
	const int64_t Y = w->y1 - w->y0;
	const int	cc = w->backward ? w->chunks - 1 - c : c;

	*r0 = w->y0 + (int) (Y * cc / w->chunks);
	*r1 = w->y0 + (int) (Y * (cc + 1) / w->chunks);
}

void
tg_wave_cols(const tg_wave *w, int b, int r0, int r1, int y, int *c0, int *c1)
{
	const int64_t X = w->x1 - w->x0;
	const int	shift = w->backward ? r1 - 1 - y : y - r0;
	const int	s0 = b == 0 ? 0 : (int) (X * b / w->blocks) - shift,
				s1 = b == w->blocks - 1 ? (int) X : (int) (X * (b + 1) / w->blocks) - shift;

	*c0 = w->backward ? w->x1 - s1 : w->x0 + s0;
	*c1 = w->backward ? w->x1 - s0 : w->x0 + s1;
}

typedef struct wavefront
{
	const tg_wave *w;
	tg_wave_fn	fn;
	void	   *arg;
	int32_t    *order;			/* the blocks (c * blocks + b) in the order threads take them */
	atomic_int	next;			/* the next of them to take */
	atomic_bool stop;			/* a thread was canceled: the others stop waiting */
	atomic_uchar *done;			/* per block: scanned */
} wavefront;

/* Has block (b, c) been scanned?  Blocks off the region have. */
static inline bool
block_done(const wavefront *s, int b, int c)
{
	return b < 0 || c < 0 || b >= s->w->blocks ||
		atomic_load_explicit(&s->done[(size_t) c * s->w->blocks + b], memory_order_acquire);
}

/*
 * One thread: blocks in wave order, each once the blocks it reads are
 * done.  Every block a thread waits for was taken before by a thread that
 * is running it, so the wait ends, whatever the number of threads.
 */
static tg_status
wave_thread(const tg_ctx *ctx, void *arg, int64_t t, tg_error *err)
{
	wavefront  *s = arg;
	const int	nblocks = s->w->blocks * s->w->chunks;
	int			i;

	while (!atomic_load(&s->stop) && (i = atomic_fetch_add(&s->next, 1)) < nblocks)
	{
		const int	b = s->order[i] % s->w->blocks,
					c = s->order[i] / s->w->blocks;

		if (tg_canceled(ctx))
		{
			atomic_store(&s->stop, true);
			return tg_error_set(err, TG_ECANCELED, "canceled");
		}
		for (unsigned spins = 0;
			 !block_done(s, b - 1, c) || !block_done(s, b, c - 1) || !block_done(s, b + 1, c - 1);
			 spins++)
		{
			if (atomic_load(&s->stop))
				return TG_OK;
			if (spins % 1024 == 1023)
				sched_yield();
		}
		s->fn(s->arg, s->w, b, c);
		atomic_store_explicit(&s->done[s->order[i]], 1, memory_order_release);
	}
	return TG_OK;
}

tg_status
tg_wavefront(const tg_ctx *ctx, const tg_wave *w, tg_wave_fn fn, void *arg, tg_error *err)
{
	const int	nblocks = w->blocks * w->chunks;
	wavefront	s = {w, fn, arg, tg_alloc(ctx, (size_t) nblocks * sizeof(int32_t)),
	0, false, tg_alloc(ctx, (size_t) nblocks * sizeof(atomic_uchar))};
	tg_status	st = TG_OK;
	int			k = 0;

	if (s.order == NULL || s.done == NULL)
		st = tg_error_set(err, TG_ENOMEM, "could not allocate a scan's %d blocks", nblocks);
	else
	{
		for (int wave = 0; wave < 2 * (w->chunks - 1) + w->blocks; wave++)
			for (int b = wave & 1; b < w->blocks && b <= wave; b += 2)
				if ((wave - b) / 2 < w->chunks)
					s.order[k++] = (wave - b) / 2 * w->blocks + b;
		for (int i = 0; i < nblocks; i++)
			atomic_init(&s.done[i], 0);
		st = tg_parallel(ctx, tg_threads_wanted(ctx), wave_thread, &s, err);
	}
	tg_free(ctx, s.order);
	tg_free(ctx, (void *) s.done);
	return st;
}
