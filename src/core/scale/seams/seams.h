/*
 * seams.h — what strips (one server, beyond memory: scale/strips/) and
 * parts (several servers: scale/parts/) share at the seams between their
 * rows: the fill's label graph assembled across them (fill_seams.c, Barnes
 * 2016) and the D8 flow carried across them (flow_seams.c, Barnes 2017).
 * Internal to the core.
 */
#ifndef TG_SEAMS_H
#define TG_SEAMS_H

#include "ops/ops.h"
#include "dispatch/dispatch.h"
#include "hydro/accum/accum.h"

/*
 * Depression filling (epsilon 0) of a grid larger than memory, in strips
 * of rows (fill_seams.c: the scans on the CPU's threads, each strip
 * finished by tg_fill): the same surface as tg_fill's priority-flood.
 * Scan every strip, top to bottom, then solve, then finish each strip (in
 * any order) to get its filled rows.  z: the strip's rows as doubles (NaN =
 * nodata), preceded by the row above and followed by the row below where
 * those exist; w: nrows * width filled values.  Memory: about
 * tg_fill_strips_bytes_per_cell() per cell of the strip being processed, plus
 * 8 bytes per column per strip.
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
 * coverage, scale/parts/): part k of `count`, top to bottom, is scanned where it
 * lives (z as for tg_fill_strips_scan, the rows above and below coming from
 * the neighbouring parts); the scans meet where the parts are solved
 * together, which gives every part its levels (1 + 2 * width: the outlets',
 * then those of its first and last rows' labels); each part is then
 * finished where it lives.
 */
typedef struct tg_fill_part
{
	size_t		nedges;			/* label edges inside the part: a, b, height */
	uint32_t   *a;
	uint32_t   *b;
	double	   *height;
	uint32_t   *first;			/* labels of its first row (width) */
	uint32_t   *last;			/* and of its last row */
} tg_fill_part;

tg_status	tg_fill_part_scan(const tg_ctx *ctx, int width, int k, int count, int nrows, const double *z,
							  tg_fill_part *out, tg_error *err);
/* Rows of a part's sub-strips, scanned at once (at most 64 of them; the tests change it). */
extern int	tg_part_scan_rows;
void		tg_fill_part_free(const tg_ctx *ctx, tg_fill_part *p);
/* first_rows[k], last_rows[k]: part k's first and last rows of the DEM (width each). */
tg_status	tg_fill_part_solve(const tg_ctx *ctx, int width, int count, const tg_fill_part *parts,
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

typedef struct tg_strip_inflow
{
	int64_t		cell;
	double		amount;
} tg_strip_inflow;

typedef struct tg_strip_ends
{
	int			row0;
	int			nrows;
	int64_t    *dest;			/* 2 * width: the first row's exits, then the last row's */
} tg_strip_ends;

tg_status	tg_strip_link(const tg_ctx *ctx, const tg_route *strip, const double *acc, int row0,
						  tg_strip_exit **exits, size_t *nexits, size_t *cap, int64_t *dest, tg_error *err);
/* qsort order of tg_strip_ends by their first row. */
int			tg_cmp_strip_rows(const void *a, const void *b);
tg_status	tg_strips_flow(const tg_ctx *ctx, int W, tg_strip_exit *exits, size_t n, tg_strip_ends *strips,
						   int nstrips, tg_strip_inflow **inflows, size_t *ninflows, tg_error *err);

/*
 * Of `count` records `stride` bytes apart, sorted by the cell number each
 * begins with (an int64_t), the first whose cell is not below `cell` (count
 * if none); tg_cmp_leading_cell is their qsort order.
 */
size_t		tg_first_cell_at(const void *records, size_t count, size_t stride, int64_t cell);
int			tg_cmp_leading_cell(const void *a, const void *b);

#endif							/* TG_SEAMS_H */
