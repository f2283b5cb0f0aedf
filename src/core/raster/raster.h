/*
 * tg_tiles.h — what tg_run's parts share (tile_io.c, ops.c, strips.c,
 * run.c).  Internal to the core.
 *
 * A grid holds one input's band over the whole DEM grid (in memory) or a
 * strip of its rows as doubles (beyond memory); planes hold what an
 * operation computed, one per output band, over the same rows; tiles are
 * cut from the planes, each with its input tile's extent.
 */
#ifndef TG_TILES_H
#define TG_TILES_H

#include "tg_core.h"

/* Largest operation output: hydrology writes 3 rasters, direction shares 8 bands. */
#define TG_MAX_OUTPUTS 3
#define TG_MAX_OUTPUT_BANDS 8

/* One input's values over the grid, or over rows [row0, row0 + nrows) as doubles. */
typedef struct tg_grid_band
{
	tg_band		band;			/* the grid's own band: the pixel type and nodata of the first
								 * tile read (its own nodata, else the type's minimum) */
	bool		typed;			/* a first tile gave the type */
	bool		as_rows;		/* strip of doubles (NaN = nodata) in rows */
	double	   *rows;
	int			row0;
	int			nrows;
} tg_grid_band;

/*
 * Read every tile of `in` meeting rows [row0, row0 + nrows) into g: the whole
 * band (g->as_rows false: g->band.data is allocated here, cells no tile
 * covers are nodata) or the rows as doubles into g->rows (allocated by the
 * caller; the type is still decided by the first tile ever read).
 */
tg_status	tg_read_input(const tg_ctx *ctx, const tg_layout *grid, const tg_input *in,
						  tg_grid_band *g, int row0, int nrows, tg_error *err);
void		tg_grid_band_free(const tg_ctx *ctx, tg_grid_band *g);

/*
 * What an operation computed for one output band: values over rows
 * [row0, ...) of the grid, of type `type`; NaN (float planes) or `marker`
 * (integer planes with has_marker) stand for nodata.
 */
typedef struct tg_plane
{
	const void *data;
	tg_pixtype	type;
	bool		has_marker;
	double		marker;
} tg_plane;

typedef struct tg_output
{
	int			nbands;
	tg_band_spec specs[TG_MAX_OUTPUT_BANDS];
	tg_plane	planes[TG_MAX_OUTPUT_BANDS];
} tg_output;

/*
 * Cut the tiles lying in rows [row0, row0 + nrows) (all of them: 0 and the
 * grid's height) out of planes starting at row `row0`, encode them on the
 * call's threads and hand them to the writer in tile order.
 */
tg_status	tg_write_tiles(const tg_ctx *ctx, const tg_job *job, const tg_output *outs, int nout,
						   int row0, int nrows, tg_error *err);

/* The outputs' bands (planes not set) of an operation on a DEM band. */
tg_status	tg_op_plan(const tg_op *op, const tg_band *dem, tg_output *outs, tg_error *err);

/* Bytes per cell an operation holds in memory, input and outputs included. */
size_t		tg_op_bytes_per_cell(const tg_op *op);

/*
 * Compute op in memory on the DEM and auxiliary grids (grids[0] the DEM);
 * fills the planes of outs (allocated here, freed by tg_op_free).
 */
typedef struct tg_op_result
{
	tg_output	outs[TG_MAX_OUTPUTS];
	int			nout;
	void	   *buffers[TG_MAX_OUTPUTS * TG_MAX_OUTPUT_BANDS];
	int			nbuffers;
	bool		written;		/* the tiles went to the job while computed: the planes hold nothing */
} tg_op_result;

/*
 * op over the grids into r's planes.  writing (or NULL): a job whose tiles
 * may be written during the computation, where results come back from the
 * device in bands (the flow products); r->written says whether they were.
 */
tg_status	tg_op_compute(const tg_ctx *ctx, const tg_op *op, const tg_layout *layout,
						  const tg_grid_band *grids, const tg_job *writing, tg_op_result *r,
						  tg_error *err);
void		tg_op_free(const tg_ctx *ctx, tg_op_result *r);

/* Strips beyond the memory budget (strips.c): whether op can, and the run. */
bool		tg_op_in_strips(const tg_op *op, const tg_ctx *ctx, const char **why_not);
tg_status	tg_run_strips(const tg_ctx *ctx, const tg_op *op, const tg_job *job, tg_error *err);

/* One part's phase of a partitioned coverage (parts.c): job->part set. */
tg_status	tg_run_part(const tg_ctx *ctx, const tg_op *op, const tg_job *job, tg_error *err);

/* Say something about the run (job->notice), printf-style. */
void		tg_job_notice(const tg_job *job, const char *fmt,...) __attribute__((format(printf, 2, 3)));

#endif							/* TG_TILES_H */
