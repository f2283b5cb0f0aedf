/*
 * seams.h — what strips (one server, beyond memory: scale/strips/) and
 * parts (several servers: scale/parts/) share at the seams between their
 * rows: the fill's spill graph assembled across them (fill_seams.c, Barnes
 * 2016), the flats that cross them (flat_seams.c) and the D8 flow carried
 * across them (flow_seams.c, Barnes 2017).  Internal to the core.
 */
#ifndef TG_SEAMS_H
#define TG_SEAMS_H

#include "ops/ops.h"
#include "dispatch/dispatch.h"
#include "hydro/accum/accum.h"

/*
 * What a strip's (or a part's) scan hands over (fill_seams.c): the label
 * edges inside it (a, b, height: the lowest level at which water crosses
 * between two labels) and the labels of its first and last rows.  Labels
 * are numbered for the strip's place k: 0 the outlets, then its first
 * row's and its last row's (tg_spill_graph_labels).
 */
typedef struct tg_fill_scan
{
	size_t		nedges;
	uint32_t   *a;
	uint32_t   *b;
	double	   *height;
	uint32_t   *first;			/* labels of its first row (width) */
	uint32_t   *last;			/* and of its last row */
} tg_fill_scan;

void		tg_fill_scan_free(const tg_ctx *ctx, tg_fill_scan *p);

/*
 * The fill's spill graph (Barnes 2016), one for strips and parts: each
 * strip's scan added from the top (row_above: the row above its first,
 * NULL for the first strip), the rows facing each other across every seam
 * joined at the higher cell; solved, every label's level, the minimax
 * distance to the outlets (level[0]).  Strip k's first and last rows'
 * labels begin at level + tg_spill_graph_labels(width, k).
 */
typedef struct tg_spill_graph tg_spill_graph;

tg_status	tg_spill_graph_begin(const tg_ctx *ctx, int width, tg_spill_graph **g, tg_error *err);
tg_status	tg_spill_graph_add(const tg_ctx *ctx, tg_spill_graph *g, const tg_fill_scan *scan,
							   const double *row_above, const double *first_row, tg_error *err);
tg_status	tg_spill_graph_solve(const tg_ctx *ctx, tg_spill_graph *g, double **level, tg_error *err);
size_t		tg_spill_graph_labels(int width, int k);
void		tg_spill_graph_end(const tg_ctx *ctx, tg_spill_graph *g);

/*
 * Depression filling (epsilon 0) of a grid larger than memory, in strips
 * of rows (each strip scanned on the call's backend, as a step of it, and
 * finished by tg_fill):
 * the same surface as tg_fill's priority-flood.  Scan every strip, top to
 * bottom, then solve, then finish each strip (in any order) to get its
 * filled rows.  z: the strip's rows as doubles (NaN = nodata), preceded by
 * the row above and followed by the row below where those exist; w: nrows *
 * width filled values.  Memory: about tg_fill_strips_bytes_per_cell() per
 * cell of the strip being processed, plus 8 bytes per column per strip.
 */
typedef struct tg_fill_strips tg_fill_strips;

size_t		tg_fill_strips_bytes_per_cell(void);
tg_status	tg_fill_strips_begin(const tg_ctx *ctx, int width, int height, tg_fill_strips **fb,
								 tg_error *err);
tg_status	tg_fill_strips_scan(const tg_ctx *ctx, tg_fill_strips *fb, int row0, int nrows,
								const double *z, tg_error *err);
tg_status	tg_fill_strips_solve(const tg_ctx *ctx, tg_fill_strips *fb, tg_error *err);
/* z as for the scan; its strip's first and last rows are raised in place (spent) */
tg_status	tg_fill_strips_finish(const tg_ctx *ctx, tg_fill_strips *fb, int row0, int nrows,
								  double *z, double *w, tg_error *err);
void		tg_fill_strips_end(const tg_ctx *ctx, tg_fill_strips *fb);

/*
 * The same fill when the strips live on several servers (a partitioned
 * coverage, scale/parts/): part k of `count`, top to bottom, is scanned
 * where it lives (z as for tg_fill_strips_scan, the rows above and below
 * coming from the neighbouring parts); the scans meet in the spill graph
 * where the parts are solved together, which gives every part its levels
 * (1 + 2 * width: the outlets', then those of its first and last rows'
 * labels); each part is then finished where it lives.
 */
tg_status	tg_fill_part_scan(const tg_ctx *ctx, int width, int k, int count, int nrows, const double *z,
							  tg_fill_scan *out, tg_error *err);
/* Rows of a part's sub-strips, scanned at once (at most 64 of them; the tests change it). */
extern int	tg_part_scan_rows;
/* first_rows[k], last_rows[k]: part k's first and last rows of the DEM (width each). */
tg_status	tg_fill_part_solve(const tg_ctx *ctx, int width, int count, const tg_fill_scan *parts,
							   const double *const *first_rows, const double *const *last_rows,
							   double *const *levels, tg_error *err);
/* z as for the scan, raised in place (spent) */
tg_status	tg_fill_part_finish(const tg_ctx *ctx, int width, int k, int count, int nrows,
								double *z, const double *levels, double *w, tg_error *err);

/*
 * D8 flow across strips of rows, after Barnes (2017) (flow_seams.c; the
 * strips of one server and the parts of several alike).  Cells are numbered
 * row * width + column over the whole grid.  An exit is a cell whose
 * receiver lies in another strip, with the water leaving by it; a strip's
 * ends tell for each cell of its first and last rows the exit its path
 * leaves by.  tg_strips_flow carries the water of every exit along the
 * strips' paths (sorting exits and strips) and gives what enters each
 * receiver, by cell.
 */
#define TG_NO_CELL (-1)

typedef struct tg_strip_exit
{
	int64_t		cell;
	int64_t		receiver;
	double		acc;			/* the strip's own accumulation, then the total leaving */
} tg_strip_exit;

/* water entering a strip or part at a cell: what its accumulation adds to the cell's weight */
typedef tg_cell_amount tg_strip_inflow;

typedef struct tg_strip_ends
{
	int			row0;
	int			nrows;
	int64_t    *dest;			/* 2 * width: the first row's exits, then the last row's */
} tg_strip_ends;

/*
 * The paths out of a strip's own rows (tg_edge_paths, each array 2 * width
 * given) from its D8 routing and its accumulation alone, as the device's
 * step gives them.
 */
tg_status	tg_edge_paths_of(const tg_ctx *ctx, const tg_route *strip, const double *acc,
							 const tg_edge_paths *edges, tg_error *err);
/* Room for a strip's paths out of width cells a row (false: out of memory, none kept); and freed. */
bool		tg_edge_paths_alloc(const tg_ctx *ctx, int width, tg_edge_paths *edges);
void		tg_edge_paths_free(const tg_ctx *ctx, tg_edge_paths *edges);
/*
 * A strip's exits (its first row row0 of the grid), from the paths out of
 * its first and last rows, appended to *exits in raster order; and into
 * dest (2 * width) the exit each of those cells drains by, TG_NO_CELL where
 * none.
 */
tg_status	tg_strip_link(const tg_ctx *ctx, int W, int nrows, int row0, const tg_edge_paths *edges,
						  tg_strip_exit **exits, size_t *nexits, size_t *cap, int64_t *dest, tg_error *err);
/* qsort order of tg_strip_ends by their first row. */
int			tg_cmp_strip_rows(const void *a, const void *b);
tg_status	tg_strips_flow(const tg_ctx *ctx, int W, tg_strip_exit *exits, size_t n, tg_strip_ends *strips,
						   int nstrips, tg_strip_inflow **inflows, size_t *ninflows, tg_error *err);

/*
 * Flats that cross seams (flat_seams.c), one algorithm for strips and
 * parts: their cells kept compact (raster order: appended strip by strip
 * as tg_crossing_flats lists them, with their seeds and a flat
 * number each, cells of one number being one flat), linked to their
 * neighbours, and their breadth-first distances (towards the drains, away
 * from higher ground) walked on the call's threads, from the
 * seeds or, later, from the cells a seam lowered (their indices in cells;
 * the caller lowers their distances first).  Memory and work are bounded by
 * the crossing cells.  The strips of one server give every crossing cell
 * and their seams (tg_seam_flats_seam: the row below each), so that one
 * walk and tg_seam_flats_masks give each cell its mask (M = 2 T + (H - A),
 * H the whole flat's greatest A); a part walks its own cells again each
 * round of its neighbours' values (scale/parts/).
 */
typedef struct tg_seam_flats
{
	tg_allocator mem;			/* of its arrays (a part keeps them between phases) */
	int			W;
	int			H;				/* rows the cells lie in (tg_seam_flats_link) */
	size_t		n;				/* cells */
	size_t		cap;
	int32_t    *row;			/* per cell: its row (until linked), its column, its seeds (until */
	int32_t    *col;			/* linked), its flat */
	uint8_t    *seed;
	int32_t    *flat;
	size_t		nflats;
	uint32_t   *joined;			/* per flat number: the smallest joined to it across the seams (linked) */
	int32_t    *seams;			/* rows whose row above lies across a seam */
	size_t		nseams;
	size_t		seam_cap;
	uint32_t   *row_start;		/* H + 1: each row's first cell */
	uint8_t    *nbr;			/* per cell: bit k, its neighbour k (ESRI) is a cell too */
	uint32_t   *up;				/* per cell: the first cell of the row above (below) whose column */
	uint32_t   *down;			/* is at least its own less one */
	int32_t    *d[2];			/* per cell: towards the drains, away from higher ground (TG_FLAT_FAR) */
} tg_seam_flats;

void		tg_seam_flats_init(tg_seam_flats *f, const tg_allocator *mem, int W);
/* A strip's or a part's crossing cells, rows from row0 on, their flats numbered after those kept. */
tg_status	tg_seam_flats_append(const tg_ctx *ctx, tg_seam_flats *f, int row0, const tg_crossing_list *list,
								 tg_error *err);
tg_status	tg_seam_flats_seam(const tg_ctx *ctx, tg_seam_flats *f, int row, tg_error *err);
/* Every cell added: rows [0, H), the links, the distances at the seeds. */
tg_status	tg_seam_flats_link(const tg_ctx *ctx, tg_seam_flats *f, int H, tg_error *err);
/*
 * Both distances walked from every cell they reached (lowered NULL: the seeds the link set, as a step
 * of the call, on the GPU where its policy sends one) or from the cells lowered.  On the threads, joined
 * flats of at least tg_seam_flat_bulk_cells cells are scanned, then walked level by level; smaller ones
 * each by a search on one thread: the two give the same distances (the tests send every flat down each
 * way), and so does the device.
 */
extern size_t tg_seam_flat_bulk_cells;
tg_status	tg_seam_flats_walk(const tg_ctx *ctx, tg_seam_flats *f, const tg_flat_lowered *lowered, tg_error *err);
/* Every cell's mask (n), its flat joined across the seams. */
tg_status	tg_seam_flats_masks(const tg_ctx *ctx, const tg_seam_flats *f, int32_t *mask, tg_error *err);
/* The distances and links let go (the rows and columns stay). */
void		tg_seam_flats_forget_walk(tg_seam_flats *f);
/* The columns let go (row_start stays: the caller keeps the columns elsewhere). */
void		tg_seam_flats_forget_columns(tg_seam_flats *f);
/* Everything let go. */
void		tg_seam_flats_free(tg_seam_flats *f);

/* Cell c's distance p (0 towards the drains, 1 away from higher ground); 0 where none reached it. */
static inline int32_t
tg_seam_flats_dist(const tg_seam_flats *f, int p, size_t c)
{
	const int32_t d = f->d[p][c];

	return d == TG_FLAT_FAR ? 0 : d;
}

/*
 * Of `count` records `stride` bytes apart, sorted by the cell number each
 * begins with (an int64_t), the first whose cell is not below `cell` (count
 * if none); tg_cmp_leading_cell is their qsort order.
 */
size_t		tg_first_cell_at(const void *records, size_t count, size_t stride, int64_t cell);
int			tg_cmp_leading_cell(const void *a, const void *b);

#endif							/* TG_SEAMS_H */
