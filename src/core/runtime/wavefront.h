/*
 * wavefront.h — a raster scan on the call's threads that is, cell for cell,
 * the scan one thread would make (internal to the core).
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
 */
#ifndef TG_WAVEFRONT_H
#define TG_WAVEFRONT_H

#include "tg_core.h"

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

#endif							/* TG_WAVEFRONT_H */
