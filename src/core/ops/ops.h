/*
 * ops.h — the operations of tg_run (ops/): what each writes (its output
 * rasters and their bands), the memory it holds per cell, where it may run
 * beyond one grid in memory, and how it computes them on a grid in memory
 * through the dispatcher's entry points (ops.c).  Internal to the core.
 */
#ifndef TG_OPS_H
#define TG_OPS_H

#include "raster/raster.h"

/* The outputs' bands (planes not set) of an operation on a DEM band. */
tg_status	tg_op_plan(const tg_op *op, const tg_band *dem, tg_output *outs, tg_error *err);

/*
 * Bytes per cell an operation holds as one grid in memory, input and outputs
 * included, on each path: the CPU's, and the GPU's in host and in device
 * memory (gpu_device 0: no GPU path of its own; gpu_host then is the CPU's).
 * gpu_planes: the product planes of a GPU path that streams its products
 * into the result tiles band by band (tg_rows_sink), held only where they
 * come back whole (the value form); the stream's pinned staging holds two
 * rows of tiles of them.
 */
typedef struct tg_op_memory
{
	size_t		cpu;
	size_t		gpu_host;
	size_t		gpu_planes;
	size_t		gpu_device;
} tg_op_memory;

tg_op_memory tg_op_memory_of(const tg_op *op);

/* The host's bytes per cell on the path the call takes (on_gpu: the GPU's one-grid path, streamed). */
size_t		tg_op_bytes_per_cell(const tg_op *op, bool on_gpu);

/* The host bytes of the job as one grid on the GPU: its cells, and the staging or planes of its products. */
size_t		tg_op_gpu_host_bytes(const tg_op *op, const tg_job *job);

/*
 * How an operation meets the rows beyond its own: what a strip or a part of
 * the grid must know of its neighbours' to compute its own rows as the whole
 * grid would (scale/seams/).
 */
typedef enum tg_op_seams
{
	TG_SEAMS_NONE = 0,			/* the whole grid at once: a path may run anywhere */
	TG_SEAMS_WINDOW,			/* slope: a row of halo */
	TG_SEAMS_FILL,				/* the fill's spill graph */
	TG_SEAMS_ROUTE,				/* and the flats that cross seams: directions */
	TG_SEAMS_FLOW				/* and the water that crosses them: accumulations */
} tg_op_seams;

tg_op_seams tg_op_seams_of(tg_op_kind kind);

/*
 * Whether op runs in strips of rows beyond the memory budget (one server),
 * or over a coverage partitioned over several servers; why_not: what can,
 * where it does not (or NULL).
 */
bool		tg_op_in_strips(const tg_op *op, const tg_ctx *ctx, const char **why_not);
bool		tg_op_in_parts(const tg_op *op, const char **why_not);

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

#endif							/* TG_OPS_H */
