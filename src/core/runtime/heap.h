/*
 * tg_heap.h — the binary min-heap of (elevation, cell) the CPU fills use
 * (fill_cpu.c, fill_strips.c; also labels in the blocked fill's graph).
 * Ties go to the smaller index, so a flood's order is deterministic.  The
 * caller allocates a[] for as many items as it will ever hold.
 */
#ifndef TG_HEAP_H
#define TG_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

#endif							/* TG_HEAP_H */
