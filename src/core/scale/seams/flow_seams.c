/*
 * flow_seams.c — D8 flow across the seams between strips or parts, after
 * Barnes (2017), "Parallel non-divergent flow accumulation for trillion
 * cell digital elevation models": each strip (or part) is accumulated on its
 * own; a cell whose receiver lies in another strip is an exit, and each
 * cell of a strip's first and last rows knows the exit its own flow path
 * leaves by (or none).  Water leaving by an exit enters the other strip at
 * the receiver and follows that cell's path to its exit: over the exits
 * this is a small acyclic graph, whose totals give every entry cell the
 * water arriving from outside (tg_strips_flow).
 */
#include "scale/seams/seams.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/*
 * Of `count` records `stride` bytes apart, sorted by the cell number each
 * begins with, the first whose cell is not below `cell` (count if none).
 */
size_t
tg_first_cell_at(const void *records, size_t count, size_t stride, int64_t cell)
{
	size_t		lo = 0,
				hi = count;

	while (lo < hi)
	{
		size_t		mid = lo + (hi - lo) / 2;
		int64_t		c;

		memcpy(&c, (const char *) records + mid * stride, sizeof c);
		if (c < cell)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

_Static_assert(offsetof(tg_strip_exit, cell) == 0 && offsetof(tg_strip_inflow, cell) == 0,
			   "exits and inflows begin with their cell");

/* qsort order of records that begin with their cell number, for tg_first_cell_at. */
int
tg_cmp_leading_cell(const void *a, const void *b)
{
	int64_t		x,
				y;

	memcpy(&x, a, sizeof x);
	memcpy(&y, b, sizeof y);
	return (x > y) - (x < y);
}

bool
tg_edge_paths_alloc(const tg_ctx *ctx, int width, tg_edge_paths *edges)
{
	const size_t n = 2 * (size_t) width + 1;

	edges->d8 = tg_alloc(ctx, n);
	edges->acc = tg_alloc(ctx, n * sizeof(double));
	edges->exit = tg_alloc(ctx, n * sizeof(uint32_t));
	if (edges->d8 && edges->acc && edges->exit)
		return true;
	tg_edge_paths_free(ctx, edges);
	return false;
}

void
tg_edge_paths_free(const tg_ctx *ctx, tg_edge_paths *edges)
{
	tg_free(ctx, edges->d8);
	tg_free(ctx, edges->acc);
	tg_free(ctx, edges->exit);
	memset(edges, 0, sizeof *edges);
}

tg_status
tg_edge_paths_of(const tg_ctx *ctx, const tg_route *strip, const double *acc, const tg_edge_paths *edges,
				 tg_error *err)
{
	const int	W = strip->width,
				nrows = strip->height;
	const size_t nb = (size_t) W * nrows;
	uint32_t   *memo = tg_alloc(ctx, (nb ? nb : 1) * sizeof(uint32_t));
	uint32_t   *path = tg_alloc(ctx, (nb ? nb : 1) * sizeof(uint32_t));
	const uint32_t unknown = 0xFEFEFEFEu;	/* memset's byte four times; cell numbers stay below it */
	tg_status	st = TG_OK;

	if (memo == NULL || path == NULL || nb >= unknown)
	{
		st = memo && path ? tg_error_set(err, TG_ELIMIT, "a strip of %zu cells is too large to link", nb)
			: tg_error_set(err, TG_ENOMEM, "could not allocate a strip's links (%zu cells)", nb);
		goto done;
	}
	/* every cell's exit `unknown` until a path through it is followed to its end */
	tg_parallel_memset(ctx, memo, 0xFE, nb * sizeof(uint32_t));
	for (int side = 0; side < 2; side++)
		for (int x = 0; x < W; x++)
		{
			const uint32_t start = (uint32_t) ((side == 0 ? 0 : (size_t) (nrows - 1) * W) + x);
			uint32_t	c = start,
						result;
			size_t		len = 0;

			while (memo[c] == unknown)
			{
				int			k = strip->d8[c],
							ny;

				path[len++] = c;
				if (k == TG_NO_DIRECTION)
				{
					memo[c] = TG_NO_EXIT;
					break;
				}
				ny = (int) (c / W) + tg_nbr_dy(k);
				if (ny < 0 || ny >= nrows)
				{
					memo[c] = c;
					break;
				}
				c = (uint32_t) ((size_t) ny * W + (int) (c % W) + tg_nbr_dx(k));
			}
			result = memo[c];
			while (len > 0)
				memo[path[--len]] = result;
			edges->d8[(size_t) side * W + x] = strip->d8[start];
			edges->acc[(size_t) side * W + x] = acc[start];
			edges->exit[(size_t) side * W + x] = result;
		}
done:
	tg_free(ctx, memo);
	tg_free(ctx, path);
	return st;
}

tg_status
tg_strip_link(const tg_ctx *ctx, int W, int nrows, int row0, const tg_edge_paths *edges,
			  tg_strip_exit **exits, size_t *nexits, size_t *cap, int64_t *dest, tg_error *err)
{
	/* one row alone is its first and its last: its exits once */
	for (int side = 0; side < (nrows > 1 ? 2 : 1); side++)
		for (int x = 0; x < W; x++)
		{
			const size_t e = (size_t) side * W + x;
			const int	y = side == 0 ? 0 : nrows - 1,
						k = edges->d8[e];
			int			ny;

			if (k == TG_NO_DIRECTION)
				continue;
			ny = y + tg_nbr_dy(k);
			if (ny >= 0 && ny < nrows)
				continue;
			if (!tg_grow(ctx, (void **) exits, cap, *nexits + 1, sizeof(tg_strip_exit)))
				return tg_error_set(err, TG_ENOMEM, "could not keep the strip exits");
			(*exits)[*nexits].cell = (int64_t) (row0 + y) * W + x;
			(*exits)[*nexits].receiver = (int64_t) (row0 + ny) * W + x + tg_nbr_dx(k);
			(*exits)[*nexits].acc = edges->acc[e];
			(*nexits)++;
		}
	for (size_t e = 0; e < 2 * (size_t) W; e++)
		dest[e] = edges->exit[e] == TG_NO_EXIT ? TG_NO_CELL : (int64_t) row0 * W + edges->exit[e];
	return TG_OK;
}

/* qsort order of strips by their first row. */
int
tg_cmp_strip_rows(const void *a, const void *b)
{
	return ((const tg_strip_ends *) a)->row0 - ((const tg_strip_ends *) b)->row0;
}

/* The exit a cell of a strip's first or last row leaves by, or TG_NO_CELL. */
static int64_t
path_exit(const tg_strip_ends *strips, int nstrips, int W, int64_t cell)
{
	const int	y = (int) (cell / W),
				x = (int) (cell % W);
	int			lo = 0,
				hi = nstrips - 1;

	while (lo < hi)				/* the last strip starting at or above y */
	{
		int			mid = (lo + hi + 1) / 2;

		if (strips[mid].row0 <= y)
			lo = mid;
		else
			hi = mid - 1;
	}
	if (y == strips[lo].row0)
		return strips[lo].dest[x];
	if (y == strips[lo].row0 + strips[lo].nrows - 1)
		return strips[lo].dest[W + x];
	return TG_NO_CELL;			/* receivers of exits lie on strip edges */
}

static int64_t
exit_index(const tg_strip_exit *exits, size_t n, int64_t cell)
{
	size_t		j = tg_first_cell_at(exits, n, sizeof(tg_strip_exit), cell);

	return j < n && exits[j].cell == cell ? (int64_t) j : -1;
}

tg_status
tg_strips_flow(const tg_ctx *ctx, int W, tg_strip_exit *exits, size_t n, tg_strip_ends *strips, int nstrips,
			   tg_strip_inflow **inflows, size_t *ninflows, tg_error *err)
{
	int64_t    *next = NULL;
	uint32_t   *indeg = NULL,
			   *queue = NULL;
	size_t		head = 0,
				tail = 0;
	tg_strip_inflow *in = NULL;
	tg_status	st = TG_OK;

	*inflows = NULL;
	*ninflows = 0;
	if (n > 0)
		qsort(exits, n, sizeof(tg_strip_exit), tg_cmp_leading_cell);
	qsort(strips, (size_t) nstrips, sizeof(tg_strip_ends), tg_cmp_strip_rows);
	next = tg_alloc(ctx, (n ? n : 1) * sizeof(int64_t));
	indeg = tg_alloc(ctx, (n ? n : 1) * sizeof(uint32_t));
	queue = tg_alloc(ctx, (n ? n : 1) * sizeof(uint32_t));
	in = tg_alloc(ctx, (n ? n : 1) * sizeof(tg_strip_inflow));
	if (next == NULL || indeg == NULL || queue == NULL || in == NULL)
	{
		st = tg_error_set(err, TG_ENOMEM, "could not allocate the flow between strips (%zu exits)", n);
		goto done;
	}

	/* exit -> the exit its water leaves the next strip by */
	memset(indeg, 0, n * sizeof(uint32_t));
	for (size_t i = 0; i < n; i++)
	{
		int64_t		e = path_exit(strips, nstrips, W, exits[i].receiver);

		next[i] = e == TG_NO_CELL ? -1 : exit_index(exits, n, e);
		if (next[i] >= 0)
			indeg[next[i]]++;
	}
	for (size_t i = 0; i < n; i++)
		if (indeg[i] == 0)
			queue[tail++] = (uint32_t) i;
	while (head < tail)
	{
		uint32_t	i = queue[head++];

		if (next[i] >= 0)
		{
			exits[next[i]].acc += exits[i].acc;
			if (--indeg[next[i]] == 0)
				queue[tail++] = (uint32_t) next[i];
		}
	}
	if (tail != n)
	{
		st = tg_error_set(err, TG_EDATA, "the flow between strips has a cycle");
		goto done;
	}

	/* what each receiver gets, summed by cell */
	for (size_t i = 0; i < n; i++)
	{
		in[i].cell = exits[i].receiver;
		in[i].amount = exits[i].acc;
	}
	qsort(in, n, sizeof(tg_strip_inflow), tg_cmp_leading_cell);
	for (size_t i = 0; i < n; i++)
		if (*ninflows > 0 && in[*ninflows - 1].cell == in[i].cell)
			in[*ninflows - 1].amount += in[i].amount;
		else
			in[(*ninflows)++] = in[i];
	*inflows = in;
	in = NULL;

done:
	tg_free(ctx, next);
	tg_free(ctx, indeg);
	tg_free(ctx, queue);
	tg_free(ctx, in);
	return st;
}
