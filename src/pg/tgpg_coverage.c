/*
 * tgpg_coverage.c — a tiled raster table as one grid, and results back as
 * tiles with exactly the input tiles' extents.
 *
 * Reading takes two passes over an SPI cursor, never ST_Union:
 *   1. headers only (a 64-byte slice of each value): every tile's place on
 *      one grid, with SRID, pixel size, skew and alignment checked against
 *      the first tile and overlaps refused;
 *   2. the band of each tile, copied row by row into the grid, which starts
 *      as nodata so that missing tiles read as nodata.
 * The operation then runs once on the whole grid, so flow crosses tile edges
 * as if the coverage were one raster, and the rows are cut back into tiles.
 */
#include "tgpg.h"

#include <math.h>
#include <unistd.h>

#include "executor/spi.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "storage/fd.h"
#include "utils/wait_event.h"
#include "utils/timestamp.h"

#define PROGRESS_EVERY_MS 5000

/*
 * Grids this large announce every phase: the computing phase itself runs in
 * the core, which cannot send messages, so its start and end are what a log
 * shows of it.
 */
#define PHASE_NOTICE_CELLS (16 * 1024 * 1024)

/* Offsets closer than this (in pixels) to a whole number are aligned. */
#define ALIGN_TOLERANCE 1e-3

typedef struct read_context
{
	const tgpg_mosaic *m;
	const char *relname;
	int64		tile;			/* the tile being read, for the error context */
	bool		have_tile;
} read_context;

static void
read_error_context(void *arg)
{
	read_context *c = arg;

	if (c->have_tile)
		errcontext("tile %lld of %s", (long long) c->tile, c->relname);
}

/* Progress at most every PROGRESS_EVERY_MS, and once at the end of a phase. */
void
tgpg_progress(tgpg_mosaic *m, const char *phase, int64 done, int64 total, bool last)
{
	TimestampTz now = GetCurrentTimestamp();

	if (!last && !TimestampDifferenceExceeds(m->last_progress, now, PROGRESS_EVERY_MS))
		return;
	if (last && !m->progress_shown && (int64) m->width * m->height < PHASE_NOTICE_CELLS)
		return;					/* a short job stays quiet */
	ereport(NOTICE,
			(errmsg("%s: %s %lld of %lld tiles (%.1f s)", m->function, phase,
					(long long) done, (long long) total,
					TimestampDifferenceMilliseconds(m->started, now) / 1000.0)));
	m->last_progress = now;
	m->progress_shown = true;
}

/* The start of a phase, worth a line once the job has run a while. */
void
tgpg_phase(tgpg_mosaic *m, const char *phase)
{
	TimestampTz now = GetCurrentTimestamp();

	if (!m->progress_shown && (int64) m->width * m->height < PHASE_NOTICE_CELLS &&
		!TimestampDifferenceExceeds(m->started, now, PROGRESS_EVERY_MS))
		return;
	ereport(NOTICE,
			(errmsg("%s: %s %d x %d cells (%.1f s)", m->function, phase, m->width, m->height,
					TimestampDifferenceMilliseconds(m->started, now) / 1000.0)));
	m->last_progress = now;
	m->progress_shown = true;
}

/* The relation's name as regclass prints it: qualified only when not visible. */
static char *
relation_name(Oid relid)
{
	if (get_rel_name(relid) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	return DatumGetCString(DirectFunctionCall1(regclassout, ObjectIdGetDatum(relid)));
}

/* Refuse a column the table lacks before building a query on it. */
static void
check_column(Oid relid, const char *relname, const char *column, const char *argument)
{
	if (get_attnum(relid, column) == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of %s does not exist", column, relname),
				 errhint("Name the column with %s =>.", argument)));
}

/* Grid position of a tile whose upper-left corner is (x, y), or false. */
static bool
grid_offset(const tg_georef *g, double x, double y, double *col, double *row)
{
	double		dx = x - g->upperleft_x,
				dy = y - g->upperleft_y,
				det = g->scale_x * g->scale_y - g->skew_x * g->skew_y;

	*col = (dx * g->scale_y - dy * g->skew_x) / det;
	*row = (dy * g->scale_x - dx * g->skew_y) / det;
	return fabs(*col - rint(*col)) <= ALIGN_TOLERANCE && fabs(*row - rint(*row)) <= ALIGN_TOLERANCE;
}

static bool
same_value(double a, double b)
{
	return fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b));
}

/* Refuse a tile that is not on the grid of `ref`, naming it and saying how. */
static void
check_on_grid(const char *relname, int64 rid, const tg_georef *ref, const tg_georef *t,
			  const char *what)
{
	double		col,
				row;

	if (t->srid != ref->srid)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tile %lld of %s has SRID %d, %s has SRID %d", (long long) rid, relname,
						t->srid, what, ref->srid),
				 errhint("Every tile of a coverage must share SRID, pixel size and grid alignment (AddRasterConstraints checks this).")));
	if (!same_value(t->scale_x, ref->scale_x) || !same_value(t->scale_y, ref->scale_y) ||
		!same_value(t->skew_x, ref->skew_x) || !same_value(t->skew_y, ref->skew_y))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tile %lld of %s has pixel size %g x %g (skew %g, %g), %s %g x %g (skew %g, %g)",
						(long long) rid, relname, t->scale_x, t->scale_y, t->skew_x, t->skew_y,
						what, ref->scale_x, ref->scale_y, ref->skew_x, ref->skew_y),
				 errhint("Resample the tiles to one grid (ST_Resample or gdalwarp) before loading.")));
	if (!grid_offset(ref, t->upperleft_x, t->upperleft_y, &col, &row))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tile %lld of %s is not aligned with %s", (long long) rid, relname, what),
				 errdetail("Its upper-left corner (%.10g, %.10g) lies %.4f columns and %.4f rows from the grid origin (%.10g, %.10g).",
						   t->upperleft_x, t->upperleft_y, col, row, ref->upperleft_x,
						   ref->upperleft_y),
				 errhint("Every tile of a coverage must share SRID, pixel size and grid alignment (AddRasterConstraints checks this).")));
}

static int
tile_order(const void *a, const void *b)
{
	const tgpg_tile *x = a,
			   *y = b;

	if (x->row0 != y->row0)
		return x->row0 < y->row0 ? -1 : 1;
	if (x->col0 != y->col0)
		return x->col0 < y->col0 ? -1 : 1;
	return 0;
}

/* Two tiles covering the same cell would make the result ambiguous. */
static void
check_no_overlap(const tgpg_mosaic *m)
{
	for (int i = 0; i < m->ntiles; i++)
	{
		const tgpg_tile *a = &m->tiles[i];

		for (int j = i + 1; j < m->ntiles && m->tiles[j].row0 < a->row0 + a->height; j++)
		{
			const tgpg_tile *b = &m->tiles[j];

			if (b->col0 < a->col0 + a->width && a->col0 < b->col0 + b->width)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("tiles %lld and %lld of %s overlap", (long long) a->rid,
								(long long) b->rid, m->relname),
						 errhint("A coverage holds each cell once: load it with raster2pgsql -t, or cut it with ST_Tile.")));
		}
	}
}

/* Host memory a coverage job may hold: the setting, else half the RAM. */
static size_t
memory_budget(void)
{
	long		pages,
				page_size;

	if (tgpg_max_memory_mb > 0)
		return (size_t) tgpg_max_memory_mb << 20;
	pages = sysconf(_SC_PHYS_PAGES);
	page_size = sysconf(_SC_PAGESIZE);
	if (pages <= 0 || page_size <= 0)
		return (size_t) 4 << 30;
	return (size_t) pages * (size_t) page_size / 2;
}

static char *
cursor_query(const char *relname, const char *id_col, const char *rast_col)
{
	return psprintf("SELECT %s::bigint, %s FROM %s WHERE %s IS NOT NULL",
					id_col ? quote_identifier(id_col) : "NULL", quote_identifier(rast_col), relname,
					quote_identifier(rast_col));
}

/* A read-only cursor over (id, raster) of every tile; the columns are checked before. */
static Portal
open_tile_cursor(const char *relname, const char *id_col, const char *rast_col)
{
	char	   *query = cursor_query(relname, id_col, rast_col);
	SPIPlanPtr	plan = SPI_prepare(query, 0, NULL);

	if (plan == NULL)
		elog(ERROR, "could not prepare \"%s\": %s", query, SPI_result_code_string(SPI_result));
	return SPI_cursor_open(NULL, plan, NULL, NULL, true);
}

/* Pass 1: every tile's place on one grid. */
static void
read_layout(tgpg_mosaic *m, const char *id_col)
{
	read_context rc = {m, m->relname, 0, false};
	ErrorContextCallback errcb = {error_context_stack, read_error_context, &rc};
	int			capacity = 256;
	int64		min_col = 0,
				min_row = 0,
				max_col = 0,
				max_row = 0;
	tg_georef	ref;
	Portal		portal;

	m->tiles = MemoryContextAlloc(m->cxt, sizeof(tgpg_tile) * capacity);
	m->ntiles = 0;
	error_context_stack = &errcb;
	portal = open_tile_cursor(m->relname, id_col, m->rast_column);
	for (;;)
	{
		tg_raster_info info;
		tgpg_tile  *t;
		bool		isnull;
		double		col,
					row;

		CHECK_FOR_INTERRUPTS();
		SPI_cursor_fetch(portal, true, 1000);
		if (SPI_processed == 0)
			break;
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			HeapTuple	tup = SPI_tuptable->vals[i];
			Datum		id = SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull);

			if (isnull)
				ereport(ERROR,
						(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						 errmsg("tile id column \"%s\" of %s is NULL for a tile", id_col, m->relname)));
			rc.tile = DatumGetInt64(id);
			rc.have_tile = true;
			tgpg_raster_header(SPI_getbinval(tup, SPI_tuptable->tupdesc, 2, &isnull), &info);
			if (m->band < 1 || m->band > info.num_bands)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("band %d does not exist: tile %lld of %s has %d band(s)", m->band,
								(long long) rc.tile, m->relname, info.num_bands)));
			if (m->ntiles == 0)
				ref = info.geo;
			else
				check_on_grid(m->relname, rc.tile, &ref, &info.geo, "the first tile");
			if (info.width == 0 || info.height == 0)
				continue;		/* an empty tile holds no cell */
			grid_offset(&ref, info.geo.upperleft_x, info.geo.upperleft_y, &col, &row);
			if (m->ntiles == capacity)
			{
				capacity *= 2;
				m->tiles = repalloc_huge(m->tiles, sizeof(tgpg_tile) * capacity);
			}
			t = &m->tiles[m->ntiles++];
			t->rid = rc.tile;
			t->col0 = (int64) rint(col);
			t->row0 = (int64) rint(row);
			t->width = info.width;
			t->height = info.height;
			t->geo = info.geo;
			if (m->ntiles == 1)
			{
				min_col = t->col0;
				min_row = t->row0;
				max_col = t->col0 + t->width;
				max_row = t->row0 + t->height;
			}
			min_col = Min(min_col, t->col0);
			min_row = Min(min_row, t->row0);
			max_col = Max(max_col, t->col0 + t->width);
			max_row = Max(max_row, t->row0 + t->height);
		}
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	error_context_stack = errcb.previous;

	if (m->ntiles == 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("%s has no tiles in column \"%s\"", m->relname, m->rast_column)));
	if (max_col - min_col > INT_MAX / 2 || max_row - min_row > INT_MAX / 2)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s spans %lld x %lld pixels, more than a grid can address", m->relname,
						(long long) (max_col - min_col), (long long) (max_row - min_row))));

	/* the grid's origin: the first tile's grid moved to the top-left tile */
	m->width = (int) (max_col - min_col);
	m->height = (int) (max_row - min_row);
	m->geo = ref;
	m->geo.upperleft_x = ref.upperleft_x + min_col * ref.scale_x + min_row * ref.skew_x;
	m->geo.upperleft_y = ref.upperleft_y + min_col * ref.skew_y + min_row * ref.scale_y;
	for (int i = 0; i < m->ntiles; i++)
	{
		m->tiles[i].col0 -= min_col;
		m->tiles[i].row0 -= min_row;
	}
	qsort(m->tiles, m->ntiles, sizeof(tgpg_tile), tile_order);
	check_no_overlap(m);
}

/* Copy one tile's band into the grid; a foreign nodata marker is translated. */
static void
place_tile(const tg_band *grid, const tg_band *src, int64 col0, int64 row0, int width)
{
	const int	size = tg_pixtype_size(grid->pixtype);
	const bool	raw = src->pixtype == grid->pixtype &&
		(!src->has_nodata || src->nodata == grid->nodata);

	for (int y = 0; y < src->height; y++)
	{
		size_t		dst0 = (size_t) (row0 + y) * width + col0;

		if (src->is_nodata)
			for (int x = 0; x < src->width; x++)
				tg_pixel_store(grid->pixtype, (void *) grid->data, dst0 + x, grid->nodata);
		else if (raw)
			memcpy((uint8_t *) grid->data + dst0 * size,
				   (const uint8_t *) src->data + (size_t) y * src->width * size,
				   (size_t) src->width * size);
		else
			for (int x = 0; x < src->width; x++)
			{
				double		v = tg_band_get(src, (size_t) y * src->width + x);

				tg_pixel_store(grid->pixtype, (void *) grid->data, dst0 + x,
							   tg_band_value_is_nodata(src, v) ? grid->nodata : v);
			}
	}
}

/* What read_tiles hands each non-empty tile to, with its place on m's grid. */
typedef void (*tile_fn) (tgpg_mosaic *m, const tg_band *src, int64 col0, int64 row0, void *arg);

/*
 * Every tile the cursor returns, checked: band band_no exists, the tile lies
 * on m's grid (called grid_name in errors) and within it, and its pixel type
 * is the one of the first tile read.  `type` has width 0 until a first tile
 * gives it its pixel type, nodata (its own, else the type's minimum) and the
 * grid's size.  Progress under `phase` unless NULL.
 */
static void
read_tiles(tgpg_mosaic *m, Portal portal, const char *relname, int band_no,
		   const char *grid_name, const char *phase, tg_band *type, tile_fn fn, void *arg)
{
	read_context rc = {m, relname, 0, false};
	ErrorContextCallback errcb = {error_context_stack, read_error_context, &rc};
	int64		done = 0;

	error_context_stack = &errcb;
	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		SPI_cursor_fetch(portal, true, 16);
		if (SPI_processed == 0)
			break;
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			HeapTuple	tup = SPI_tuptable->vals[i];
			Datum		d;
			bool		isnull;
			tgpg_raster r;
			tg_band		src;
			double		col,
						row;

			rc.tile = DatumGetInt64(SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull));
			rc.have_tile = !isnull;
			d = SPI_getbinval(tup, SPI_tuptable->tupdesc, 2, &isnull);
			tgpg_raster_open(d, &r);
			if (band_no < 1 || band_no > r.info.num_bands)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("band %d does not exist: tile %lld of %s has %d band(s)", band_no,
								(long long) rc.tile, relname, r.info.num_bands)));
			tgpg_raster_band(&r, band_no, &src);
			if (r.info.width > 0 && r.info.height > 0)
			{
				check_on_grid(relname, rc.tile, &m->geo, &r.info.geo, grid_name);
				grid_offset(&m->geo, r.info.geo.upperleft_x, r.info.geo.upperleft_y, &col, &row);
				if (col < 0 || row < 0 || rint(col) + r.info.width > m->width ||
					rint(row) + r.info.height > m->height)
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("tile %lld of %s reaches beyond %s", (long long) rc.tile,
									relname, grid_name)));
				if (type->width == 0)
				{
					type->pixtype = src.pixtype;
					type->has_nodata = true;
					type->nodata = src.has_nodata ? src.nodata : tg_pixtype_min_value(src.pixtype);
					type->width = m->width;
					type->height = m->height;
				}
				else if (src.pixtype != type->pixtype)
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("tile %lld of %s is %s, the first tile read is %s",
									(long long) rc.tile, relname, tg_pixtype_name(src.pixtype),
									tg_pixtype_name(type->pixtype)),
							 errhint("Every tile of a coverage must share the band's pixel type.")));
				fn(m, &src, (int64) rint(col), (int64) rint(row), arg);
			}
			tgpg_raster_close(&r, d);
			done++;
		}
		SPI_freetuptable(SPI_tuptable);
		if (phase)
			tgpg_progress(m, phase, done, m->ntiles, false);
	}
	SPI_cursor_close(portal);
	error_context_stack = errcb.previous;
}

/* read_band's tile_fn: the grid allocated (all nodata) at the first tile, then the tile placed */
typedef struct grid_target
{
	tg_band    *out;
	const char *relname;
} grid_target;

static void
place_in_grid(tgpg_mosaic *m, const tg_band *src, int64 col0, int64 row0, void *arg)
{
	grid_target *g = arg;
	tg_band    *out = g->out;

	if (out->data == NULL)
	{
		const size_t n = (size_t) m->width * m->height;

		out->data = MemoryContextAllocExtended(m->cxt, n * tg_pixtype_size(out->pixtype) + 1,
											   MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
		if (out->data == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory reading %s into one grid of %d x %d cells",
							g->relname, m->width, m->height)));
		for (size_t c = 0; c < n; c++)
			tg_pixel_store(out->pixtype, (void *) out->data, c, out->nodata);
	}
	place_tile(out, src, col0, row0, m->width);
}

/*
 * Pass 2: the band of every tile of `relid` into out, a band on m's grid.
 * The first tile decides the pixel type (all must share it) and the nodata
 * value (its own, else the type's minimum); cells no tile covers are nodata.
 */
static void
read_band(tgpg_mosaic *m, const char *relname, const char *rast_col, const char *id_col,
		  int band_no, const char *what, const char *grid_name, const char *phase, tg_band *out)
{
	grid_target g = {out, relname};

	memset(out, 0, sizeof *out);
	read_tiles(m, open_tile_cursor(relname, id_col, rast_col), relname, band_no, grid_name, phase,
			   out, place_in_grid, &g);
	if (out->data == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("%s has no tiles in column \"%s\"", relname, rast_col)));
}

void
tgpg_mosaic_open(tgpg_mosaic *m, FunctionCallInfo fcinfo, const char *function,
				 int band_arg, size_t bytes_per_cell)
{
	tgpg_mosaic_layout(m, fcinfo, function, band_arg);
	tgpg_mosaic_read(m, bytes_per_cell);
}

bool
tgpg_mosaic_fits(const tgpg_mosaic *m, size_t bytes_per_cell)
{
	return (size_t) m->width * m->height * bytes_per_cell <= memory_budget();
}

void
tgpg_mosaic_read(tgpg_mosaic *m, size_t bytes_per_cell)
{
	size_t		need = (size_t) m->width * m->height * bytes_per_cell,
				budget = memory_budget();

	/* the whole grid and everything the operation keeps beside it */
	if (need > budget)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s over %s needs about %zu MB, more than the %zu MB a coverage job may use",
						m->function, m->relname, need >> 20, budget >> 20),
				 errdetail("The coverage spans %d x %d cells and is processed as one grid.",
						   m->width, m->height),
				 errhint("Raise terra_gpu.max_memory_mb if the server has the memory.")));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "could not connect to SPI");
	read_band(m, m->relname, m->rast_column, m->id_column, m->band, "the coverage", "the first tile",
			  "read", &m->dem);
	SPI_finish();
	tgpg_progress(m, "read", m->ntiles, m->ntiles, true);
}

void
tgpg_mosaic_layout(tgpg_mosaic *m, FunctionCallInfo fcinfo, const char *function, int band_arg)
{
	Oid			relid;
	const char *id_col;

	memset(m, 0, sizeof *m);
	m->cxt = CurrentMemoryContext;	/* what outlives SPI_finish goes here */
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("coverage must not be NULL")));
	relid = PG_GETARG_OID(0);
	m->function = function;
	m->relname = relation_name(relid);
	m->rast_column = PG_ARGISNULL(1) ? "rast" : pstrdup(NameStr(*PG_GETARG_NAME(1)));
	id_col = PG_ARGISNULL(2) ? "rid" : pstrdup(NameStr(*PG_GETARG_NAME(2)));
	check_column(relid, m->relname, m->rast_column, "rast_column");
	check_column(relid, m->relname, id_col, "id_column");
	m->band = tgpg_arg_int32(fcinfo, band_arg, "band");
	m->started = m->last_progress = GetCurrentTimestamp();

	m->id_column = id_col;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "could not connect to SPI");
	read_layout(m, id_col);
	SPI_finish();
}

void
tgpg_mosaic_read_aligned(tgpg_mosaic *m, Oid relid, const char *rast_col, const char *id_col,
						 int band, const char *what, const char *column_argument, tg_band *out)
{
	char	   *relname = relation_name(relid);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "could not connect to SPI");
	check_column(relid, relname, rast_col, column_argument);
	read_band(m, relname, rast_col, id_col, band, what, psprintf("the grid of %s", m->relname),
			  psprintf("read %s of", what), out);
	SPI_finish();
}

/*
 * Another coverage on m's grid, laid out but not read (its bands are read
 * in rows with tgpg_mosaic_read_halo): its tiles must lie on m's grid and
 * within it.
 */
void
tgpg_mosaic_layout_aligned(const tgpg_mosaic *m, Oid relid, const char *rast_col,
						   const char *id_col, int band, const char *column_argument,
						   tgpg_mosaic *w)
{
	double		col,
				row;

	memset(w, 0, sizeof *w);
	w->cxt = CurrentMemoryContext;
	w->function = m->function;
	w->relname = relation_name(relid);
	w->rast_column = rast_col;
	w->id_column = id_col;
	w->band = band;
	w->started = w->last_progress = GetCurrentTimestamp();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "could not connect to SPI");
	check_column(relid, w->relname, rast_col, column_argument);
	read_layout(w, id_col);
	SPI_finish();
	check_on_grid(w->relname, w->tiles[0].rid, &m->geo, &w->tiles[0].geo, psprintf("the grid of %s", m->relname));
	grid_offset(&m->geo, w->geo.upperleft_x, w->geo.upperleft_y, &col, &row);
	for (int i = 0; i < w->ntiles; i++)
	{
		tgpg_tile  *t = &w->tiles[i];

		t->col0 += (int64) rint(col);
		t->row0 += (int64) rint(row);
		if (t->col0 < 0 || t->row0 < 0 || t->col0 + t->width > m->width || t->row0 + t->height > m->height)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("tile %lld of %s reaches beyond the grid of %s", (long long) t->rid,
							w->relname, m->relname)));
	}
	w->width = m->width;
	w->height = m->height;
	w->geo = m->geo;
}

tgpg_grid
tgpg_mosaic_grid(const tgpg_mosaic *m)
{
	tgpg_grid	g = {m->width, m->height, m->geo};

	return g;
}

/* Whole-grid buffers for the bands of `out` (its specs are set). */
void
tgpg_grid_raster_alloc(const tgpg_grid *g, tgpg_grid_raster *out)
{
	const size_t n = (size_t) g->width * g->height;

	for (int b = 0; b < out->nbands; b++)
	{
		out->data[b] = palloc_extended(n * tg_pixtype_size(out->specs[b].pixtype) + 1,
									   MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
		if (out->data[b] == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory allocating a result of %d x %d cells", g->width,
							g->height)));
	}
}

/* One tile of a whole-grid result, with the tile's own georeference. */
Datum
tgpg_mosaic_tile(const tgpg_mosaic *m, int index, const tgpg_grid_raster *out)
{
	const tgpg_tile *t = &m->tiles[index];
	tg_raster_info info;
	void	   *data[TGPG_MAX_BANDS];
	struct varlena *v;

	info.num_bands = out->nbands;
	info.width = t->width;
	info.height = t->height;
	info.geo = t->geo;
	v = tgpg_raster_create(&info, out->specs, data);
	for (int b = 0; b < out->nbands; b++)
	{
		const int	size = tg_pixtype_size(out->specs[b].pixtype);

		for (int y = 0; y < t->height; y++)
			memcpy((uint8_t *) data[b] + (size_t) y * t->width * size,
				   (const uint8_t *) out->data[b] +
				   ((size_t) (t->row0 + y) * m->width + t->col0) * size,
				   (size_t) t->width * size);
	}
	return PointerGetDatum(v);
}

/*
 * Return (rid, raster, ...) rows, one per input tile, in grid order: each
 * of the `nout` whole-grid results cut to the tile's extent.
 */
void
tgpg_mosaic_emit(tgpg_mosaic *m, FunctionCallInfo fcinfo, const tgpg_grid_raster *outs, int nout)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext tile_cxt;

	tgpg_phase(m, "computed; writing the tiles of");
	InitMaterializedSRF(fcinfo, 0);
	if (rsinfo->setDesc->natts != 1 + nout)
		elog(ERROR, "%s: the result has %d columns, expected %d", m->function,
			 rsinfo->setDesc->natts, 1 + nout);
	tile_cxt = AllocSetContextCreate(CurrentMemoryContext, "terra_gpu tile",
									 ALLOCSET_DEFAULT_SIZES);
	for (int i = 0; i < m->ntiles; i++)
	{
		Datum		values[1 + TGPG_MAX_OUTPUTS];
		bool		nulls[1 + TGPG_MAX_OUTPUTS] = {false};
		MemoryContext old;

		CHECK_FOR_INTERRUPTS();
		old = MemoryContextSwitchTo(tile_cxt);
		values[0] = Int64GetDatum(m->tiles[i].rid);
		for (int k = 0; k < nout; k++)
			values[1 + k] = tgpg_mosaic_tile(m, i, &outs[k]);
		MemoryContextSwitchTo(old);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		MemoryContextReset(tile_cxt);
		tgpg_progress(m, "wrote", i + 1, m->ntiles, false);
	}
	MemoryContextDelete(tile_cxt);
	tgpg_progress(m, "wrote", m->ntiles, m->ntiles, true);
}

/* ------------------------------------------------------------------------
 * Coverages larger than the memory budget, in bands of rows
 * ------------------------------------------------------------------------ */

/*
 * Bands of whole tile rows for an operation holding bytes_per_cell per cell
 * of a band and its two halo rows within terra_gpu.max_memory_mb: a band
 * boundary may only fall where no tile straddles it.  Returns the number of
 * bands; *row0s and *nrows are palloc'd; *max_rows (may be NULL) is the
 * most rows a band could have had.
 */
size_t
tgpg_memory_budget(void)
{
	return memory_budget();
}

int
tgpg_mosaic_bands(const tgpg_mosaic *m, size_t bytes_per_cell, int **row0s, int **nrows,
				  int *max_rows)
{
	const size_t budget = memory_budget();
	const size_t fit = budget / ((size_t) m->width * bytes_per_cell);
	const int	most = (int) Min(fit > 2 ? fit - 2 : 0, (size_t) INT_MAX);
	bool	   *cut;
	int			nb = 0,
				r0 = 0;

	if (most < 1)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s over %s: not even 3 rows of %d cells fit in %zu MB", m->function,
						m->relname, m->width, budget >> 20),
				 errhint("Raise terra_gpu.max_memory_mb.")));
	if (max_rows)
		*max_rows = most;
	/* a boundary at row r is allowed unless some tile covers rows r - 1 and r */
	cut = palloc_extended((size_t) m->height + 1, MCXT_ALLOC_HUGE);
	for (int r = 0; r <= m->height; r++)
		cut[r] = true;
	for (int i = 0; i < m->ntiles; i++)
		for (int64 r = m->tiles[i].row0 + 1; r < m->tiles[i].row0 + m->tiles[i].height; r++)
			cut[r] = false;
	*row0s = palloc(sizeof(int) * (m->height + 1));
	*nrows = palloc(sizeof(int) * (m->height + 1));
	while (r0 < m->height)
	{
		int			best = -1;

		for (int r = r0 + 1; r <= m->height && r - r0 <= most; r++)
			if (cut[r])
				best = r;
		if (best < 0)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("%s: %s cannot be cut into bands of at most %d rows at tile boundaries",
							m->function, m->relname, most),
					 errhint("Raise terra_gpu.max_memory_mb.")));
		(*row0s)[nb] = r0;
		(*nrows)[nb++] = best - r0;
		r0 = best;
	}
	pfree(cut);
	return nb;
}

/* read_rows' tile_fn: the tile's rows that fall in the band, as doubles */
typedef struct rows_target
{
	double	   *z;
	int			row0;
	int			nrows;
	double	   *row;			/* one decoded tile row */
} rows_target;

static void
copy_rows(tgpg_mosaic *m, const tg_band *src, int64 col0, int64 row0, void *arg)
{
	rows_target *t = arg;

	if (src->is_nodata)
		return;
	for (int y = (int) Max(0, t->row0 - row0); y < src->height && row0 + y < t->row0 + t->nrows; y++)
	{
		tg_band_row_to_f64(src, y, t->row);
		memcpy(t->z + (size_t) (row0 + y - t->row0) * m->width + col0, t->row,
			   sizeof(double) * src->width);
	}
}

/*
 * Rows [row0, row0 + nrows) of the coverage's band as doubles (NaN for
 * nodata and for cells no tile covers).  The first tile read decides the
 * pixel type, as for a whole grid; m->dem gets that type and nodata (no data).
 */
static void
read_rows(tgpg_mosaic *m, int row0, int nrows, double *z)
{
	const size_t n = (size_t) m->width * nrows;
	Datum	   *ids;
	int			nids = 0;
	Oid			argtype = INT8ARRAYOID;
	Datum		arg;
	char	   *query;
	SPIPlanPtr	plan;
	rows_target t = {z, row0, nrows, NULL};

	for (size_t i = 0; i < n; i++)
		z[i] = NAN;
	ids = palloc(sizeof(Datum) * Max(m->ntiles, 1));
	for (int i = 0; i < m->ntiles; i++)
		if (m->tiles[i].row0 < row0 + nrows && m->tiles[i].row0 + m->tiles[i].height > row0)
			ids[nids++] = Int64GetDatum(m->tiles[i].rid);
	if (nids == 0)
		return;
	arg = PointerGetDatum(construct_array(ids, nids, INT8OID, 8, true, TYPALIGN_DOUBLE));
	query = psprintf("SELECT %s::bigint, %s FROM %s WHERE %s = ANY($1) AND %s IS NOT NULL",
					 quote_identifier(m->id_column), quote_identifier(m->rast_column), m->relname,
					 quote_identifier(m->id_column), quote_identifier(m->rast_column));
	t.row = palloc(sizeof(double) * Max(m->width, 1));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "could not connect to SPI");
	plan = SPI_prepare(query, 1, &argtype);
	if (plan == NULL)
		elog(ERROR, "could not prepare \"%s\": %s", query, SPI_result_code_string(SPI_result));
	read_tiles(m, SPI_cursor_open(NULL, plan, &arg, NULL, true), m->relname, m->band,
			   "the first tile", NULL, &m->dem, copy_rows, &t);
	SPI_finish();
	pfree(t.row);
	pfree(ids);
	pfree(DatumGetPointer(arg));
}

/*
 * A band's rows [row0, row0 + nrows) with the row above and below where the
 * grid has them, as doubles (NaN = nodata): *first is the first row read,
 * *count how many.
 */
double *
tgpg_mosaic_read_halo(tgpg_mosaic *m, int row0, int nrows, int *first, int *count)
{
	double	   *z;

	*first = row0 > 0 ? row0 - 1 : 0;
	*count = Min(row0 + nrows + 1, m->height) - *first;
	z = palloc_extended(sizeof(double) * (size_t) m->width * *count + 1, MCXT_ALLOC_HUGE);
	read_rows(m, *first, *count, z);
	return z;
}

/*
 * Return the tiles that lie in rows [row0, row0 + nrows) (bands never cut a
 * tile) from planes[b], that band's values of output band b as doubles
 * (NaN = nodata), converted to specs[b].  The first call sets up the result
 * set.
 */
void
tgpg_mosaic_emit_rows(tgpg_mosaic *m, FunctionCallInfo fcinfo, const tg_band_spec *specs,
					  int nbands, int row0, int nrows, const double *const *planes, int64 *written)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext tile_cxt;

	if (rsinfo->setResult == NULL)
		InitMaterializedSRF(fcinfo, 0);
	tile_cxt = AllocSetContextCreate(CurrentMemoryContext, "terra_gpu tile", ALLOCSET_DEFAULT_SIZES);
	for (int i = 0; i < m->ntiles; i++)
	{
		const tgpg_tile *t = &m->tiles[i];
		tg_raster_info info;
		void	   *data[TGPG_MAX_BANDS];
		Datum		values[2];
		bool		nulls[2] = {false, false};
		MemoryContext old;

		if (t->row0 < row0 || t->row0 >= row0 + nrows)
			continue;
		CHECK_FOR_INTERRUPTS();
		old = MemoryContextSwitchTo(tile_cxt);
		info.num_bands = nbands;
		info.width = t->width;
		info.height = t->height;
		info.geo = t->geo;
		values[0] = Int64GetDatum(t->rid);
		values[1] = PointerGetDatum(tgpg_raster_create(&info, specs, data));
		for (int b = 0; b < nbands; b++)
			for (int y = 0; y < t->height; y++)
				for (int x = 0; x < t->width; x++)
				{
					double		v = planes[b][(size_t) (t->row0 - row0 + y) * m->width + t->col0 + x];

					tg_pixel_store(specs[b].pixtype, data[b], (size_t) y * t->width + x,
								   isnan(v) ? specs[b].nodata : v);
				}
		MemoryContextSwitchTo(old);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		MemoryContextReset(tile_cxt);
		(*written)++;
		tgpg_progress(m, "wrote", *written, m->ntiles, false);
	}
	MemoryContextDelete(tile_cxt);
}

/*
 * Rows of doubles in a temporary file, for grids that do not fit the budget
 * and must be read more than once (the filled surface of a banded routing),
 * stored as floats where every value is exact in one (single).  The file is
 * removed when closed or at the end of the transaction.
 */
#define ROWS_FILE_CHUNK (1 << 30)

void
tgpg_rows_file_open(tgpg_rows_file *f, int width, int height, bool single)
{
	f->width = width;
	f->height = height;
	f->single = single;
	f->file = OpenTemporaryFile(false);
}

static void
rows_file_io(tgpg_rows_file *f, bool write, off_t offset, size_t bytes, char *p)
{
	while (bytes > 0)
	{
		int			amount = (int) Min(bytes, (size_t) ROWS_FILE_CHUNK);
		int			done;

		CHECK_FOR_INTERRUPTS();
		done = write ? FileWrite(f->file, p, amount, offset, WAIT_EVENT_BUFFILE_WRITE)
			: FileRead(f->file, p, amount, offset, WAIT_EVENT_BUFFILE_READ);
		if (done < 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not %s temporary file \"%s\": %m", write ? "write" : "read",
							FilePathName(f->file))));
		if (done != amount)
			ereport(ERROR,
					(errcode(write ? ERRCODE_DISK_FULL : ERRCODE_DATA_CORRUPTED),
					 errmsg("could not %s temporary file \"%s\": %d of %d bytes",
							write ? "write" : "read", FilePathName(f->file), done, amount),
					 write ? errhint("Check free disk space.") : 0));
		bytes -= (size_t) amount;
		offset += amount;
		p += amount;
	}
}

void
tgpg_rows_file_write(tgpg_rows_file *f, int row0, int nrows, const double *rows)
{
	const size_t n = (size_t) f->width * nrows;
	const size_t size = f->single ? sizeof(float) : sizeof(double);
	float	   *chunk;

	if (!f->single)
	{
		rows_file_io(f, true, (off_t) size * f->width * row0, n * size, (char *) rows);
		return;
	}
	chunk = palloc(sizeof(float) * (1 << 20));
	for (size_t i = 0; i < n; i += 1 << 20)
	{
		size_t		m = Min(n - i, (size_t) 1 << 20);

		for (size_t j = 0; j < m; j++)
			chunk[j] = (float) rows[i + j];
		rows_file_io(f, true, (off_t) size * ((size_t) f->width * row0 + i), m * size, (char *) chunk);
	}
	pfree(chunk);
}

/* Rows [row0 - halo, row0 + nrows + halo) clipped to the grid, palloc'd. */
double *
tgpg_rows_file_read(tgpg_rows_file *f, int row0, int nrows, int halo, int *first, int *count)
{
	const size_t size = f->single ? sizeof(float) : sizeof(double);
	double	   *rows;
	size_t		n;

	*first = Max(row0 - halo, 0);
	*count = Min(row0 + nrows + halo, f->height) - *first;
	n = (size_t) f->width * *count;
	rows = palloc_extended(sizeof(double) * n + 1, MCXT_ALLOC_HUGE);
	if (!f->single)
		rows_file_io(f, false, (off_t) size * f->width * *first, n * size, (char *) rows);
	else
	{
		/* the floats into the buffer's upper half, widened in place from the front */
		float	   *in = (float *) (rows + n) - n;

		rows_file_io(f, false, (off_t) size * f->width * *first, n * size, (char *) in);
		for (size_t i = 0; i < n; i++)
			rows[i] = in[i];
	}
	return rows;
}

void
tgpg_rows_file_close(tgpg_rows_file *f)
{
	FileClose(f->file);
}
