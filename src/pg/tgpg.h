/*
 * tgpg.h — shared declarations of the fmgr glue (src/pg).
 *
 * Only this layer includes PostgreSQL headers or calls ereport, and only
 * after the core has returned: no longjmp ever crosses core or CUDA frames.
 */
#ifndef TGPG_H
#define TGPG_H

#include "postgres.h"

#include "fmgr.h"
#include "storage/fd.h"
#include "datatype/timestamp.h"

#include "tg_core.h"

/* Settings (terra_gpu.c) */
extern int	tgpg_backend;
extern int	tgpg_min_cells_for_gpu;
extern int	tgpg_device;
extern int	tgpg_max_device_memory_mb;
extern int	tgpg_max_memory_mb;
extern int	tgpg_route_cache_mb;
extern int	tgpg_threads;

/* tgpg_error.c: the one place a tg_error becomes an SQLSTATE */
void		tgpg_raise(const tg_error *err) pg_attribute_noreturn();

static inline void
tgpg_check(tg_status st, const tg_error *err)
{
	if (st != TG_OK)
		tgpg_raise(err);
}

/* tgpg_context.c: a core context from the settings and per-call options */
void		tgpg_ctx_init(tg_ctx *ctx, const char *function, FunctionCallInfo fcinfo,
						  int backend_argno);

const tg_run_stats *tgpg_last_run_stats(const char **function);

/* tgpg_args.c: argument helpers with proper SQLSTATEs */
int32		tgpg_arg_int32(FunctionCallInfo fcinfo, int argno, const char *name);
double		tgpg_arg_float8(FunctionCallInfo fcinfo, int argno, const char *name);
char	   *tgpg_arg_cstring(FunctionCallInfo fcinfo, int argno, const char *name);

/* A word argument's vocabulary; tgpg_lookup raises 22023 naming the valid words. */
typedef struct tgpg_name
{
	const char *name;
	int			value;
} tgpg_name;

int			tgpg_lookup(const char *what, const char *given, const tgpg_name *names, int count);

#define TGPG_ARG_LOOKUP(what, fcinfo, argno, table) \
	tgpg_lookup(what, tgpg_arg_cstring(fcinfo, argno, what), table, lengthof(table))

/* tgpg_raster.c: raster values in and out */
typedef struct tgpg_raster
{
	struct varlena *value;		/* detoasted */
	const uint8_t *buf;
	size_t		len;
	tg_raster_info info;
} tgpg_raster;

void		tgpg_raster_header(Datum datum, tg_raster_info *info);
void		tgpg_raster_open(Datum datum, tgpg_raster *r);
void		tgpg_raster_band(const tgpg_raster *r, int band, tg_band *out);
void		tgpg_raster_close(tgpg_raster *r, Datum datum);
void		tgpg_check_result_size(const tg_raster_info *info, const tg_band_spec *bands);
struct varlena *tgpg_raster_create(const tg_raster_info *info,
								   const tg_band_spec *bands, void **band_data);

/* A grid: one raster value, or a whole coverage read as one */
typedef struct tgpg_grid
{
	int			width;
	int			height;
	tg_georef	geo;
} tgpg_grid;

tgpg_grid	tgpg_raster_grid(const tg_raster_info *info);
/* 22023 unless `other` (named `what`) lies on exactly the DEM's grid */
void		tgpg_check_aligned(const tg_raster_info *dem, const tg_raster_info *other,
							   const char *what);

/* the cell of a point geometry on the grid (22023: not a point, other SRID, outside) */
void		tgpg_point_cell(Datum point, Oid type, const tgpg_grid *grid, const char *what,
							int *col, int *row);

/* tgpg_hydro.c: metric spacing per row (geographic SRIDs) or the pixel size */
tg_grid_geometry tgpg_grid_geometry(const tgpg_grid *grid);
/* routing, fill, exponent, threshold from their arguments; an argno < 0
 * gives d8, true, 1.1 and 0 */
void		tgpg_flow_params(FunctionCallInfo fcinfo, int routing_arg, int fill_arg,
							 int exponent_arg, int threshold_arg, const tgpg_grid *grid,
							 tg_flow_params *p);
tg_accum_method tgpg_accum_method_arg(FunctionCallInfo fcinfo, int argno);

/*
 * A raster an operation produces over a whole grid: its bands' types and
 * pixels.  The value form points data into the result value; the coverage
 * form into whole-grid buffers that are then cut into tiles.
 */
#define TGPG_MAX_BANDS 8
#define TGPG_MAX_OUTPUTS 3

typedef struct tgpg_grid_raster
{
	int			nbands;
	tg_band_spec specs[TGPG_MAX_BANDS];
	void	   *data[TGPG_MAX_BANDS];
} tgpg_grid_raster;

/* tgpg_raster.c: the result value of a value form, out->data set to its pixels */
struct varlena *tgpg_raster_result(const tg_raster_info *in, tgpg_grid_raster *out);

/* tgpg_coverage.c: a tiled raster table read as one grid */
typedef struct tgpg_tile
{
	int64		rid;
	int64		col0;			/* place on the grid */
	int64		row0;
	int			width;
	int			height;
	tg_georef	geo;			/* the tile's own, given back to its result */
} tgpg_tile;

typedef struct tgpg_mosaic
{
	const char *function;
	char	   *relname;
	const char *rast_column;
	const char *id_column;
	int			band;
	int			width;
	int			height;
	tg_georef	geo;			/* the grid: the first tile's, moved to the top-left */
	int			ntiles;
	tgpg_tile  *tiles;			/* in grid order (rows, then columns) */
	tg_band		dem;			/* the band over the whole grid */
	MemoryContext cxt;			/* the caller's: grid and tiles outlive SPI */
	TimestampTz started;
	TimestampTz last_progress;
	bool		progress_shown;
} tgpg_mosaic;

/*
 * Read the coverage named by arguments 0..2 (coverage, rast_column,
 * id_column) and band_arg into one grid.  bytes_per_cell: what the operation
 * holds per cell, input and results included, checked against the memory
 * budget.
 */
void		tgpg_mosaic_open(tgpg_mosaic *m, FunctionCallInfo fcinfo, const char *function,
							 int band_arg, size_t bytes_per_cell);
/* The same in steps: arguments and tile layout; whether bytes_per_cell fits
 * the budget; the band read into m->dem (54000 when it does not fit). */
void		tgpg_mosaic_layout(tgpg_mosaic *m, FunctionCallInfo fcinfo, const char *function,
							   int band_arg);
bool		tgpg_mosaic_fits(const tgpg_mosaic *m, size_t bytes_per_cell);
void		tgpg_mosaic_read(tgpg_mosaic *m, size_t bytes_per_cell);
size_t		tgpg_memory_budget(void);
/* Coverages beyond the budget, in bands of rows cut at tile boundaries */
int			tgpg_mosaic_bands(const tgpg_mosaic *m, size_t bytes_per_cell, int **row0s, int **nrows,
							  int *max_rows);
double	   *tgpg_mosaic_read_halo(tgpg_mosaic *m, int row0, int nrows, int *first, int *count);
void		tgpg_mosaic_emit_rows(tgpg_mosaic *m, FunctionCallInfo fcinfo, const tg_band_spec *specs,
								  int nbands, int row0, int nrows, const double *const *planes,
								  int64 *written);

/*
 * Rows of doubles kept in a temporary file (removed at transaction end), as
 * floats where the values are exact in them (single).
 */
typedef struct tgpg_rows_file
{
	File		file;
	int			width;
	int			height;
	bool		single;
} tgpg_rows_file;

void		tgpg_rows_file_open(tgpg_rows_file *f, int width, int height, bool single);
void		tgpg_rows_file_write(tgpg_rows_file *f, int row0, int nrows, const double *rows);
double	   *tgpg_rows_file_read(tgpg_rows_file *f, int row0, int nrows, int halo, int *first,
								int *count);
void		tgpg_rows_file_close(tgpg_rows_file *f);
/* Another coverage's band (weights, factors) onto m's grid; it must align. */
void		tgpg_mosaic_read_aligned(tgpg_mosaic *m, Oid relid, const char *rast_col,
									 const char *id_col, int band, const char *what,
									 const char *column_argument, tg_band *out);
/* The same laid out only (no pixels), for reading in rows like m itself. */
void		tgpg_mosaic_layout_aligned(const tgpg_mosaic *m, Oid relid, const char *rast_col,
									   const char *id_col, int band, const char *column_argument,
									   tgpg_mosaic *w);
/* Tile `index` of a whole-grid result, as a raster value. */
Datum		tgpg_mosaic_tile(const tgpg_mosaic *m, int index, const tgpg_grid_raster *out);
tgpg_grid	tgpg_mosaic_grid(const tgpg_mosaic *m);
void		tgpg_grid_raster_alloc(const tgpg_grid *g, tgpg_grid_raster *out);
void		tgpg_mosaic_emit(tgpg_mosaic *m, FunctionCallInfo fcinfo,
							 const tgpg_grid_raster *outs, int nout);
void		tgpg_progress(tgpg_mosaic *m, const char *phase, int64 done, int64 total, bool last);
void		tgpg_phase(tgpg_mosaic *m, const char *phase);

#endif							/* TGPG_H */
