/*
 * flats.h — flats drained by Barnes, Lehman & Mulla (2014) (hydro/flats/):
 * on a routing surface, a flat (the flat cells of one elevation,
 * 8-connected; flat: valid, no lower neighbour, not an outlet) drains down
 * the mask M = 2 T + (H - A), T the breadth-first distance towards its
 * draining edge, A the one away from higher ground and H the flat's largest
 * A; M strictly decreases to the draining edge, so every flat that touches
 * a draining cell drains, and flats with no draining edge (only on an
 * unfilled DEM) keep M = 0.  Labels (flat_labels.c), distances
 * (flat_distances.c), masks and the flats that cross a strip's or a part's
 * edges (flat_masks.c).  Internal to the core.
 */
#ifndef TG_FLATS_H
#define TG_FLATS_H

#include "hydro/fill/fill.h"

/*
 * The flat mask M of a surface z (W x H, NaN = nodata) whose flat cells
 * flat[] marks: mask[i] (0 off flats and on undrained flats).
 */
tg_status	tg_flat_mask(const tg_ctx *ctx, const double *z, const uint8_t *flat, int W, int H,
						 int32_t *mask, tg_error *err);

/*
 * Flat-mask values decided elsewhere (the seams: flats that extend beyond a
 * strip or a part): mask[j] replaces the local value of cell cell[j].
 */
typedef struct tg_flat_masks
{
	size_t		count;
	const size_t *cell;
	const int32_t *mask;
} tg_flat_masks;

/*
 * Flats of at least this many cells are resolved in blocks of rows on the
 * call's threads, smaller ones each by a walk on one thread: the two ways
 * give the same distances, which the tests check by sending every flat
 * down each.
 */
extern int64_t tg_flat_large_cells;
/* Rows of a flat per block, at least (tests set fewer to cut small flats in many blocks). */
extern int	tg_flat_block_rows;

/*
 * Flats that reach over the edges of rows [y0, y0 + nrows) of a surface z
 * (W x count, NaN = nodata, with rows around them), as those rows alone join
 * them: their cells in those rows, in raster order, each with its index in
 * those rows, its seeds (next to a draining cell of equal elevation, next to
 * a higher one) and its flat's number among them (0, 1, ... in the order of
 * their first cells), listed on the call's threads (flat_masks.c; free the
 * list with tg_crossing_list_free; dispatch.h's tg_crossing_flats gives the
 * same list on the backend the call chooses).  Their masks, once the
 * breadth-first distances over the whole flats are known (towards the
 * drains, away from higher ground, and the flat's greatest distance away),
 * are tg_flat_mask's M = 2 T + (H - A), 0 where undrained.
 */
#define TG_SEED_DRAINS 1
#define TG_SEED_HIGHER 2
typedef struct tg_crossing_list
{
	size_t		n;				/* cells */
	uint32_t   *cell;			/* per cell: (row - y0) * W + column */
	uint8_t    *seed;
	int32_t    *flat;
	int64_t		nflats;
} tg_crossing_list;
tg_status	tg_cpu_crossing_flats(const tg_ctx *ctx, const double *z, int W, int count, int y0, int nrows,
								  tg_crossing_list *list, tg_error *err);
void		tg_crossing_list_free(const tg_ctx *ctx, tg_crossing_list *list);

/*
 * The neighbours of crossing cell c on its flat (at most 8) where the
 * crossing cells of many rows are linked (scale/seams/): bit k of nbr[c] is
 * set where neighbour k (ESRI) is a crossing cell too; west and east are
 * c - 1 and c + 1; north-west, north and north-east follow one another from
 * up[c] on, south-west, south and south-east from down[c] on.
 */
TG_HD int
tg_crossing_neighbours(const uint8_t *nbr, const uint32_t *up, const uint32_t *down, uint32_t c, uint32_t nb[8])
{
	const uint8_t bits = nbr[c];
	int			count = 0;
	uint32_t	j;

	if (bits & (1u << 4))
		nb[count++] = c - 1;
	if (bits & (1u << 0))
		nb[count++] = c + 1;
	j = up[c];
	for (int k = 5; k <= 7; k++)
		if (bits & (1u << k))
			nb[count++] = j++;
	j = down[c];
	for (int k = 3; k >= 1; k--)
		if (bits & (1u << k))
			nb[count++] = j++;
	return count;
}

/*
 * The two breadth-first distances over flats (towards the drains, away from
 * higher ground), in place, on the call's threads (flat_distances.c).  A cell
 * joins its 8 neighbours of the same flat number.  Every cell of the flats
 * taken in columns [x0, x1] and rows [y0, y1] (flat `only`, or every flat
 * when it is negative) holds where each distance starts (TG_FLAT_FAR where
 * it does not) and is left with min over the cells c' of its flat of
 * start(c') + steps(c', c), TG_FLAT_FAR where none reaches it.  queued[]
 * must be 0 on those cells and is left so.
 */
#define TG_FLAT_FAR INT32_MAX
typedef struct tg_flat_grid
{
	int			W,
				H;
	const int32_t *id;			/* per cell: its flat's number; negative off the flats */
	int32_t    *d[2];			/* per cell: towards the drains, away from higher ground */
	uint8_t    *queued[2];		/* per cell and distance: FIFO marks */
} tg_flat_grid;
tg_status	tg_flat_steps(const tg_ctx *ctx, const tg_flat_grid *g, int32_t only, int x0, int x1, int y0,
						  int y1, tg_error *err);

/* Cells whose distances fell (by distance: towards the drains, away from higher ground), to walk on from. */
typedef struct tg_flat_lowered
{
	const uint32_t *cells[2];
	size_t		n[2];
} tg_flat_lowered;

/* In 64 bits and clamped: a part's neighbours' distances arrive as bytes from another server. */
static inline int32_t
tg_flat_mask_value(int32_t towards, int32_t away, int32_t height)
{
	const int64_t v = towards > 0 ? 2 * (int64_t) towards + (away > 0 ? (int64_t) height - away : 0) : 0;

	return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t) v;
}

#endif							/* TG_FLATS_H */
