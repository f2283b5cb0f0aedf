/*
 * tgpg.h — shared declarations of the fmgr glue (src/pg).
 *
 * Only this layer includes PostgreSQL headers or calls ereport, and never
 * while the core runs: what the core calls back is guarded (an error there
 * is kept and raised once the core has returned), so no longjmp ever
 * crosses core, CUDA or worker-thread frames.
 */
#ifndef TGPG_H
#define TGPG_H

#include "postgres.h"

#include "fmgr.h"
#include "nodes/pg_list.h"
#include "utils/elog.h"

#include "tg_core.h"

/* Settings (terra_gpu.c) */
extern int	tgpg_backend;
extern int	tgpg_min_cells_for_gpu;
extern int	tgpg_device;
extern int	tgpg_max_device_memory_mb;
extern int	tgpg_max_memory_mb;
extern int	tgpg_route_cache_mb;
extern int	tgpg_threads;
extern int	tgpg_tile_compression;
extern char *tgpg_coverage_tiles;

enum tgpg_compression
{
	TGPG_COMPRESSION_NONE = 0,
	TGPG_COMPRESSION_LZ4
};

/* tgpg_error.c: the one place a tg_error becomes an SQLSTATE */
void		tgpg_raise(const tg_error *err) pg_attribute_noreturn();

static inline void
tgpg_check(tg_status st, const tg_error *err)
{
	if (st != TG_OK)
		tgpg_raise(err);
}

/*
 * tgpg_context.c: what guards a call.  Code the core calls back runs inside
 * TGPG_GUARDED: an error there is kept (and makes the core stop) instead of
 * unwinding through the core; tgpg_finish raises it, or the core's own
 * error, once the core has returned.
 */
typedef struct tgpg_guard
{
	const char *function;
	ErrorData  *error;			/* a callback's error, raised by tgpg_finish */
	MemoryContext cxt;			/* where it is kept */
	int64		started;		/* TimestampTz */
	int64		last_notice;
} tgpg_guard;

void		tgpg_guard_init(tgpg_guard *g, const char *function);
/* In PG_CATCH: keep the error (the first one) and clear the error state. */
void		tgpg_guard_catch(tgpg_guard *g);
void		tgpg_finish(tgpg_guard *g, tg_status st, const tg_error *err);

#define TGPG_GUARDED(g, code) \
	do { \
		PG_TRY(); \
		{ \
			code; \
		} \
		PG_CATCH(); \
		{ \
			tgpg_guard_catch(g); \
		} \
		PG_END_TRY(); \
	} while (0)

/*
 * A core context from the settings and the call's backend: palloc as the
 * allocator, cancellation from PostgreSQL's interrupt flags (and the
 * guard), NOTICEs of progress, the statistics tg_last_run() reports.
 */
void		tgpg_ctx_init(tg_ctx *ctx, tgpg_guard *g, int backend);
/* Only the settings (backend, GPU threshold and device, memory, threads): a context that runs nothing. */
void		tgpg_ctx_settings(tg_ctx *ctx, int backend);
const tg_run_stats *tgpg_last_run_stats(const char **function);
/* Host memory one coverage call may hold: terra_gpu.max_memory_mb, else half the RAM. */
size_t		tgpg_memory_budget(void);

/*
 * tgpg_args.c: the arguments of a terra_gpu function, by name.  Each SQL
 * function has one description of its arguments (name, kind, check),
 * shared by its raster and coverage forms: both declare the same arguments
 * in the same order with the same defaults, the coverage form with its
 * table first (coverage) and its columns last (rast_column, id_column,
 * weight_column).  Arguments are found by the names the function declares,
 * never by position.
 */
typedef struct tgpg_word
{
	const char *name;
	int			value;
} tgpg_word;

typedef enum tgpg_kind
{
	TGPG_INT,
	TGPG_FLOAT,
	TGPG_BOOL,
	TGPG_WORD,					/* text from a vocabulary (case-insensitive) */
	TGPG_POINT,					/* geometry: a point in the raster's SRID */
	TGPG_POINTS,				/* geometry[] */
	TGPG_FACTOR,				/* "any": a number, or a raster / table on the DEM's grid */
	TGPG_WEIGHT,				/* a raster / table on the DEM's grid */
	TGPG_WORD_LIST				/* text[] of distinct words from a vocabulary */
} tgpg_kind;

/* checks */
#define TGPG_OPTIONAL	0x01	/* NULL means "not given" */
#define TGPG_POSITIVE	0x02	/* > 0 and finite */
#define TGPG_NONNEGATIVE 0x04	/* >= 0 and finite */
#define TGPG_FRACTION	0x08	/* in [0, 1) */
#define TGPG_PREFIX		0x10	/* words match by three or more leading letters too (as ST_Slope's units) */

typedef struct tgpg_param
{
	const char *name;
	tgpg_kind	kind;
	int			checks;
	const tgpg_word *words;		/* TGPG_WORD */
	int			nwords;
	const char *hint;			/* for a value a check refuses */
} tgpg_param;

#define TGPG_WORDS(w) (w), lengthof(w)

typedef struct tgpg_args
{
	FunctionCallInfo fcinfo;
	const char *function;
	const tgpg_param *params;	/* ends with a NULL name */
	bool		coverage;		/* the table form */
	int			nargs;
	char	  **names;			/* as the SQL function declares them */
} tgpg_args;

void		tgpg_args_open(tgpg_args *a, FunctionCallInfo fcinfo, const char *function,
						   const tgpg_param *params);
int			tgpg_arg_index(const tgpg_args *a, const char *name);	/* -1: not declared */
bool		tgpg_given(const tgpg_args *a, const char *name);
int32		tgpg_int(const tgpg_args *a, const char *name);
double		tgpg_float(const tgpg_args *a, const char *name);
bool		tgpg_bool(const tgpg_args *a, const char *name);
int			tgpg_word_value(const tgpg_args *a, const char *name);
/* The words of a TGPG_WORD_LIST argument as their values, in the given order; returns how many. */
int			tgpg_word_list(const tgpg_args *a, const char *name, int *values, int max);
char	   *tgpg_text(const tgpg_args *a, const char *name);
Datum		tgpg_datum(const tgpg_args *a, const char *name);
Oid			tgpg_type(const tgpg_args *a, const char *name);
/* The backend argument (auto, cpu, gpu), or the setting where NULL. */
extern const tgpg_word tgpg_backends[3];
int			tgpg_backend_arg(const tgpg_args *a);
int			tgpg_backend_word(const char *given);
/* Raise 22023 naming the valid words unless `given` is one of them. */
int			tgpg_lookup(const char *what, const char *given, const tgpg_word *words, int count);

/*
 * tgpg_tiles.c: a call over tiles.  The DEM (and auxiliary inputs) are a
 * raster value (one tile) or a table of tiles read through SPI; results go
 * back as the raster value, or as rows (rid, raster...), or into a list of
 * tiles for more SQL (polygons).  Every callback the core calls is guarded.
 */
typedef struct tgpg_source tgpg_source;

typedef enum tgpg_result
{
	TGPG_RESULT_VALUE,			/* the raster value a raster form returns */
	TGPG_RESULT_ROWS,			/* one row (rid, raster...) per input tile */
	TGPG_RESULT_TILES			/* the tiles, kept for the caller */
} tgpg_result;

typedef struct tgpg_call
{
	const tgpg_args *args;
	const char *function;
	MemoryContext cxt;			/* the function's: what outlives the run lives here */
	tgpg_source *inputs[8];		/* [0] the DEM */
	int			ninputs;
	tg_layout  *layout;			/* the DEM's */
	bool		geographic;		/* its SRID is geographic (longitude, latitude) */
	/* TGPG_RESULT_TILES: the result rasters of each tile (Datums, in tile order) */
	List	   *tiles;
	/*
	 * NULL, or the result column of each output (1 is the first after the
	 * id): the columns no output fills are NULL (tg_terrain's products)
	 */
	const int  *columns;
} tgpg_call;

/*
 * A column named by an argument: it exists and has the type its role needs
 * (42703, 42804), checked before a query is built on it.
 */
typedef enum tgpg_column_kind
{
	TGPG_COLUMN_RASTER,			/* raster (or a domain over it), a user column */
	TGPG_COLUMN_ID				/* smallint, integer or bigint */
} tgpg_column_kind;

void		tgpg_check_column(Oid relid, const char *column, tgpg_column_kind kind, const char *argument);
Oid			tgpg_raster_type(void);

/* The DEM: the first argument, a raster (one tile) or a table (coverage, rast_column, id_column). */
void		tgpg_call_open(tgpg_call *c, const tgpg_args *args, const char *function);
/* An auxiliary input on the DEM's grid: a raster aligned with it, or a table of tiles on its grid. */
int			tgpg_call_input(tgpg_call *c, Datum value, Oid type, const char *what, int band,
							const char *column_argument, const char *rast_column);
/* The grid's cell spacing: metric per row for geographic SRIDs (WGS84), else the pixel size. */
tg_grid_geometry tgpg_call_geometry(const tgpg_call *c);
/* The cell of a point on the grid (22023: not a point, another SRID, outside). */
void		tgpg_call_point(const tgpg_call *c, Datum point, Oid type, const char *what, int *col, int *row);
void		tgpg_call_point_at(const tgpg_call *c, Datum point, Oid type, const char *what,
							   double *col, double *row);
/* Many points at once (a geometry[] of n, none NULL): "item k" in messages. */
void		tgpg_call_points_at(const tgpg_call *c, Datum points, Oid array_type, int n, const char *what,
								const char *item, double *cols, double *rows);
Datum		tgpg_call_run(tgpg_call *c, const tg_op *op, tgpg_result result);

/*
 * tgpg_parts.c: the part a running terra_gpu._part_exec hands to the first coverage
 * call of its query (NULL when none), and that call's reply kept for it.
 */
tg_part    *tgpg_part_take(void);
void		tgpg_part_keep_reply(tg_part *part);

/*
 * The layout of a part's table as its first phase read it, for the later
 * phases of the transaction (NULL: none kept, or no part's phase running),
 * and keeping it.
 */
const tg_layout *tgpg_part_layout(Oid relid, const char *rast_column, const char *id_column, int band);
void		tgpg_part_keep_layout(Oid relid, const char *rast_column, const char *id_column, int band,
								  const tg_layout *layout);

/* tgpg_raster.c: a raster value opened for the core codec (BMMQ reads tiles this way) */
typedef struct tgpg_raster
{
	struct varlena *value;		/* detoasted */
	const uint8_t *buf;
	size_t		len;
	tg_raster_info info;
} tgpg_raster;

void		tgpg_raster_open(Datum datum, tgpg_raster *r);
void		tgpg_raster_band(const tgpg_raster *r, int band, tg_band *out);
void		tgpg_raster_close(tgpg_raster *r, Datum datum);

/*
 * terra_gpu.coverage_tiles for the table relid (tgpg_recipe.c): the condition
 * that keeps its tiles to those a refresh reads ("" for every tile), and per
 * tile of its layout whether the refresh asks for its result (NULL: all).
 */
char	   *tgpg_refresh_scope(Oid relid, const char *relname, const char *id_column);
bool	   *tgpg_refresh_wanted(Oid relid, const char *relname, const char *id_column, const tg_layout *l);

/*
 * A table a finished coverage call over layout l read (tgpg_recipe.c): op
 * for the DEM (input 0), whose halo and reach the recipe keeps; NULL for the
 * others.
 */
void		tgpg_remember_read(Oid relid, const char *rast_column, const char *id_column,
							   const char *function, const tg_op *op, const tg_layout *l);

#endif							/* TGPG_H */
