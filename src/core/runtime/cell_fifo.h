/*
 * cell_fifo.h — for the passes that lower values until nothing changes (the
 * fill's reconstruction, the flats' distances), in strips of rows on the
 * threads: a FIFO of cells, which starts small and doubles (a pass's front
 * is usually far smaller than the cells it may visit, and room never written
 * is never faulted in); and the copy of a strip's facing rows taken between
 * rounds.  Internal to the core.
 */
#ifndef TG_CELL_FIFO_H
#define TG_CELL_FIFO_H

#include "tg_core.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

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
		uint32_t   *more = tg_alloc(ctx, room * sizeof(uint32_t));

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
 * A strip reads its neighbours' facing rows from a copy: bring the copy of
 * one facing row up to date (row NULL: the strip has no neighbour there);
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

#endif							/* TG_CELL_FIFO_H */
