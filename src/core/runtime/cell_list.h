/*
 * cell_list.h — lists of cells that many tasks append to at once (frontiers
 * of breadth-first passes, cells reached in a round).  A task gathers cells
 * in a batch of its own and reserves room for the whole batch with one
 * atomic addition.  The order of a list depends on the threads; what the
 * core computes from such a list never does.  Internal to the core.
 */
#ifndef TG_CELL_LIST_H
#define TG_CELL_LIST_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

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

#endif							/* TG_CELL_LIST_H */
