/*
 * tgpg_tiles.c — the PostgreSQL side of tg_run: where tiles come from and
 * where results go.
 *
 * An input is a raster value (one tile) or a table of tiles.  A table is
 * laid out from its tiles' headers only (a 64-byte slice of each value):
 * every tile's place on one grid, SRID, pixel size, skew and alignment
 * checked against the first, overlaps refused.  The core then asks for the
 * tiles' bytes (through an SPI cursor; a stored value is fetched as it is
 * stored, compressed or not, and the core's threads decompress it) and hands
 * back result tiles: the raster value of a raster form, rows (rid, raster...)
 * of a table form (LZ4-compressed on the core's threads, as
 * terra_gpu.tile_compression says), or a list for more SQL.  Every callback
 * runs guarded (tgpg_context.c).
 */
#include "tgpg.h"

#include <errno.h>
#include <math.h>

#include "access/detoast.h"
#include "access/toast_compression.h"
#include "access/toast_internals.h"
#include "catalog/pg_type.h"
#include "access/genam.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/fmgroids.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/wait_event.h"

/* Rows an SPI cursor fetch brings at a time */
#define FETCH_ROWS 64

struct tgpg_source
{
	tgpg_call  *call;
	tgpg_guard *guard;			/* of the run, while it runs */
	const char *what;			/* for messages: "the coverage", "the weight raster" */
	bool		table;
	int			band;
	tg_layout	layout;
	/* a raster value */
	Datum		value;
	/* a table */
	Oid			relid;
	char	   *relname;
	const char *rast_column;
	const char *id_column;		/* NULL: none */
	/* reading */
	MemoryContext cxt;			/* where fetched tiles live until released */
	Portal		portal;
	bool		connected;		/* SPI */
	SPITupleTable *fetched;		/* the rows of the last fetch */
	uint64		nfetched;
	uint64		pos;			/* in the fetched rows */
	int64		current;		/* the tile being read, for error context */
	bool		done;
};

static void check_geographic_grid(tgpg_call *c);

/* ------------------------------------------------------------------------
 * Layouts
 * ------------------------------------------------------------------------ */
static char *
relation_name(Oid relid)
{
	if (get_rel_name(relid) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	return DatumGetCString(DirectFunctionCall1(regclassout, ObjectIdGetDatum(relid)));
}

/* The schema an extension lives in (InvalidOid: not installed). */
static Oid
extension_namespace(const char *name)
{
	Relation	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			nsp = InvalidOid;

	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ, CStringGetDatum(name));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
		nsp = ((Form_pg_extension) GETSTRUCT(tup))->extnamespace;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return nsp;
}

/* The raster type of the postgis_raster extension (PostGIS' types have no fixed OIDs). */
Oid
tgpg_raster_type(void)
{
	Oid			nsp = extension_namespace("postgis_raster");
	Oid			type = InvalidOid;

	if (OidIsValid(nsp))
		type = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid, CStringGetDatum("raster"), ObjectIdGetDatum(nsp));
	if (!OidIsValid(type))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("type raster of extension postgis_raster not found"),
				 errhint("CREATE EXTENSION postgis_raster;")));
	return type;
}

/*
 * Refuse a column the table lacks, or one of another type than `kind` says,
 * before a query is built on it or a byte of it is read: a raster column
 * must hold rasters (a domain over raster too), an id column integers.
 */
void
tgpg_check_column(Oid relid, const char *column, tgpg_column_kind kind, const char *argument)
{
	AttrNumber	attnum = get_attnum(relid, column);
	Oid			type;
	bool		fits;

	if (attnum == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of %s does not exist", column, relation_name(relid)),
				 errhint("Name the column with %s =>.", argument)));
	type = getBaseType(get_atttype(relid, attnum));
	if (kind == TGPG_COLUMN_RASTER)
		fits = attnum > 0 && type == tgpg_raster_type();
	else
		fits = type == INT2OID || type == INT4OID || type == INT8OID;
	if (!fits)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" of %s is of type %s, not %s", column, relation_name(relid),
						format_type_be(get_atttype(relid, attnum)),
						kind == TGPG_COLUMN_RASTER ? "raster" : "an integer type"),
				 errhint("Name the %s column with %s =>.", kind == TGPG_COLUMN_RASTER ? "raster" : "tile id",
						 argument)));
}

/*
 * A georeference no grid can be built on, refused with 22023 before any
 * work: a number that is not finite, a zero pixel size or a degenerate skew.
 */
static void
check_pixel_size(const tg_georef *g)
{
	if (!isfinite(g->upperleft_x) || !isfinite(g->upperleft_y) || !isfinite(g->scale_x) ||
		!isfinite(g->scale_y) || !isfinite(g->skew_x) || !isfinite(g->skew_y))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("georeference must be finite, got upper-left (%g, %g), pixel size %g x %g, skew (%g, %g)",
						g->upperleft_x, g->upperleft_y, g->scale_x, g->scale_y, g->skew_x, g->skew_y)));
	if (g->scale_x * g->scale_y - g->skew_x * g->skew_y == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("pixel size must be positive, got %g x %g", tg_georef_pixel_width(g),
						tg_georef_pixel_height(g))));
}

static bool
same_value(double a, double b)
{
	return fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b));
}

/* Refuse a tile that is not on the grid of `ref` (called `what`), naming it and saying how. */
static void
check_on_grid(const char *relname, int64 id, const tg_georef *ref, const tg_georef *t, const char *what)
{
	double		col,
				row;

	if (t->srid != ref->srid)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tile %lld of %s has SRID %d, %s has SRID %d", (long long) id, relname,
						t->srid, what, ref->srid),
				 errhint("Every tile of a coverage must share SRID, pixel size and grid alignment (AddRasterConstraints checks this).")));
	if (!same_value(t->scale_x, ref->scale_x) || !same_value(t->scale_y, ref->scale_y) ||
		!same_value(t->skew_x, ref->skew_x) || !same_value(t->skew_y, ref->skew_y))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tile %lld of %s has pixel size %g x %g (skew %g, %g), %s %g x %g (skew %g, %g)",
						(long long) id, relname, t->scale_x, t->scale_y, t->skew_x, t->skew_y,
						what, ref->scale_x, ref->scale_y, ref->skew_x, ref->skew_y),
				 errhint("Resample the tiles to one grid (ST_Resample or gdalwarp) before loading.")));
	if (!tg_georef_offset(ref, t->upperleft_x, t->upperleft_y, &col, &row))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tile %lld of %s is not aligned with %s", (long long) id, relname, what),
				 errdetail("Its upper-left corner (%.10g, %.10g) lies %.4f columns and %.4f rows from the grid origin (%.10g, %.10g).",
						   t->upperleft_x, t->upperleft_y, col, row, ref->upperleft_x,
						   ref->upperleft_y),
				 errhint("Every tile of a coverage must share SRID, pixel size and grid alignment (AddRasterConstraints checks this).")));
}

static int
tile_order(const void *a, const void *b)
{
	const tg_tile_place *x = a,
			   *y = b;

	if (x->row0 != y->row0)
		return x->row0 < y->row0 ? -1 : 1;
	if (x->col0 != y->col0)
		return x->col0 < y->col0 ? -1 : 1;
	return 0;
}

/* Two tiles covering the same cell would make the result ambiguous. */
static void
check_no_overlap(const tg_layout *l)
{
	for (int i = 0; i < l->ntiles; i++)
	{
		const tg_tile_place *a = &l->tiles[i];

		for (int j = i + 1; j < l->ntiles && l->tiles[j].row0 < a->row0 + a->height; j++)
		{
			const tg_tile_place *b = &l->tiles[j];

			if (b->col0 < a->col0 + a->width && a->col0 < b->col0 + b->width)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("tiles %lld and %lld of %s overlap", (long long) a->id,
								(long long) b->id, l->name),
						 errhint("A coverage holds each cell once: load it with raster2pgsql -t, or cut it with ST_Tile.")));
		}
	}
}

/* "tile N of relation" on errors raised while a tile is read */
static void
tile_error_context(void *arg)
{
	const tgpg_source *s = arg;

	if (s->current != PG_INT64_MIN)
		errcontext("tile %lld of %s", (long long) s->current, s->relname);
}

static char *
tiles_query(const tgpg_source *s, const char *what, bool by_id)
{
	return psprintf("SELECT %s::bigint, %s FROM %s WHERE %s IS NOT NULL%s%s%s%s",
					s->id_column ? quote_identifier(s->id_column) : "NULL", what, s->relname,
					quote_identifier(s->rast_column), by_id ? " AND " : "",
					by_id ? quote_identifier(s->id_column) : "", by_id ? " = ANY($1)" : "",
					tgpg_refresh_scope(s->relid, s->relname, s->id_column));
}

/* The header of every tile: its place on one grid, in grid order; `onto`: another input's grid. */
static void
read_layout(tgpg_source *s, const tg_layout *onto)
{
	ErrorContextCallback errcb = {error_context_stack, tile_error_context, s};
	tg_layout  *l = &s->layout;
	tg_tile_place *tiles;
	int			capacity = 256;
	int64		min_col = 0,
				min_row = 0,
				max_col = 0,
				max_row = 0;
	tg_georef	ref;
	Portal		portal;
	SPIPlanPtr	plan;
	char	   *query = tiles_query(s, quote_identifier(s->rast_column), false);

	tiles = palloc(sizeof(tg_tile_place) * capacity);
	l->ntiles = 0;
	l->name = s->relname;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "could not connect to SPI");
	plan = SPI_prepare(query, 0, NULL);
	if (plan == NULL)
		elog(ERROR, "could not prepare \"%s\": %s", query, SPI_result_code_string(SPI_result));
	portal = SPI_cursor_open(NULL, plan, NULL, NULL, true);
	s->current = PG_INT64_MIN;
	error_context_stack = &errcb;
	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		SPI_cursor_fetch(portal, true, 1000);
		if (SPI_processed == 0)
			break;
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			HeapTuple	tup = SPI_tuptable->vals[i];
			bool		isnull;
			Datum		id = SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull);
			/* a slice: the header alone is fetched (and decompressed) */
			struct varlena *header = PG_DETOAST_DATUM_SLICE(SPI_getbinval(tup, SPI_tuptable->tupdesc, 2, &isnull),
															 0, TG_RASTER_HEADER_SIZE - VARHDRSZ);
			tg_raster_info info;
			tg_error	err;
			tg_tile_place *t;
			double		col,
						row;

			if (isnull && s->id_column)
				ereport(ERROR,
						(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						 errmsg("tile id column \"%s\" of %s is NULL for a tile", s->id_column, s->relname)));
			s->current = s->id_column ? DatumGetInt64(id) : PG_INT64_MIN;
			tg_error_clear(&err);
			tgpg_check(tg_raster_read_info((const uint8_t *) header, VARSIZE_ANY(header), &info, &err), &err);
			if (s->band < 1 || s->band > info.num_bands)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("band %d does not exist: tile %lld of %s has %d band(s)", s->band,
								(long long) s->current, s->relname, info.num_bands)));
			if (onto)
				check_on_grid(s->relname, s->current, &onto->geo, &info.geo,
							  psprintf("the grid of %s", onto->name));
			else if (l->ntiles == 0)
			{
				check_pixel_size(&info.geo);
				ref = info.geo;
			}
			else
				check_on_grid(s->relname, s->current, &ref, &info.geo, "the first tile");
			if (info.width == 0 || info.height == 0)
				continue;		/* an empty tile holds no cell */
			tg_georef_offset(onto ? &onto->geo : &ref, info.geo.upperleft_x, info.geo.upperleft_y, &col, &row);
			if (l->ntiles == capacity)
			{
				capacity *= 2;
				tiles = repalloc_huge(tiles, sizeof(tg_tile_place) * capacity);
			}
			t = &tiles[l->ntiles++];
			t->id = s->current == PG_INT64_MIN ? 0 : s->current;
			t->col0 = (int64) rint(col);
			t->row0 = (int64) rint(row);
			t->width = info.width;
			t->height = info.height;
			t->geo = info.geo;
			if (onto && (t->col0 < 0 || t->row0 < 0 || t->col0 + t->width > onto->width ||
						 t->row0 + t->height > onto->height))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("tile %lld of %s reaches beyond the grid of %s", (long long) t->id,
								s->relname, onto->name)));
			min_col = l->ntiles == 1 ? t->col0 : Min(min_col, t->col0);
			min_row = l->ntiles == 1 ? t->row0 : Min(min_row, t->row0);
			max_col = l->ntiles == 1 ? t->col0 + t->width : Max(max_col, t->col0 + t->width);
			max_row = l->ntiles == 1 ? t->row0 + t->height : Max(max_row, t->row0 + t->height);
		}
		SPI_freetuptable(SPI_tuptable);
	}
	error_context_stack = errcb.previous;
	SPI_cursor_close(portal);
	SPI_finish();

	if (l->ntiles == 0 && onto == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("%s has no tiles in column \"%s\"", s->relname, s->rast_column)));
	if (onto)
	{
		/* placed on the other input's grid already */
		l->width = onto->width;
		l->height = onto->height;
		l->geo = onto->geo;
	}
	else
	{
		if (max_col - min_col > INT_MAX / 2 || max_row - min_row > INT_MAX / 2)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("%s spans %lld x %lld pixels, more than a grid can address", s->relname,
							(long long) (max_col - min_col), (long long) (max_row - min_row))));
		/* the grid's origin: the first tile's grid moved to the top-left tile */
		l->width = (int) (max_col - min_col);
		l->height = (int) (max_row - min_row);
		l->geo = ref;
		l->geo.upperleft_x = ref.upperleft_x + min_col * ref.scale_x + min_row * ref.skew_x;
		l->geo.upperleft_y = ref.upperleft_y + min_col * ref.skew_y + min_row * ref.scale_y;
		for (int i = 0; i < l->ntiles; i++)
		{
			tiles[i].col0 -= min_col;
			tiles[i].row0 -= min_row;
		}
	}
	qsort(tiles, l->ntiles, sizeof(tg_tile_place), tile_order);
	l->tiles = tiles;
	check_no_overlap(l);
}

/* A raster value as a layout of one tile (its header only is read). */
static void
value_layout(tgpg_source *s, Datum value)
{
	struct varlena *header = PG_DETOAST_DATUM_SLICE(value, 0, TG_RASTER_HEADER_SIZE - VARHDRSZ);
	tg_tile_place *t = palloc0(sizeof *t);
	tg_raster_info info;
	tg_error	err;

	tg_error_clear(&err);
	tgpg_check(tg_raster_read_info((const uint8_t *) header, VARSIZE_ANY(header), &info, &err), &err);
	if (s->band < 1 || s->band > info.num_bands)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("band %d does not exist: the raster has %d band%s", s->band, info.num_bands,
						info.num_bands == 1 ? "" : "s")));
	check_pixel_size(&info.geo);
	s->value = value;
	t->width = info.width;
	t->height = info.height;
	t->geo = info.geo;
	s->layout.name = s->what;
	s->layout.width = info.width;
	s->layout.height = info.height;
	s->layout.geo = info.geo;
	s->layout.ntiles = info.width > 0 && info.height > 0 ? 1 : 0;
	s->layout.tiles = t;
}

/* Refuse a raster (`what`, e.g. "weight raster") not on exactly the DEM's grid, saying how. */
static void
check_aligned(const tg_layout *dem, const tg_layout *w, const char *what)
{
	const tg_georef *a = &dem->geo,
			   *b = &w->geo;
	double		tol = 1e-9 * fmax(fabs(a->scale_x), fabs(a->scale_y));

	if (w->width != dem->width || w->height != dem->height)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s is not aligned with the DEM", what),
				 errdetail("The %s is %d x %d pixels, the DEM %d x %d.", what,
						   w->width, w->height, dem->width, dem->height)));
	if (b->srid != a->srid)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s is not aligned with the DEM", what),
				 errdetail("The %s has SRID %d, the DEM %d.", what, b->srid, a->srid)));
	if (fabs(b->scale_x - a->scale_x) > tol || fabs(b->scale_y - a->scale_y) > tol ||
		fabs(b->skew_x - a->skew_x) > tol || fabs(b->skew_y - a->skew_y) > tol)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s is not aligned with the DEM", what),
				 errdetail("The %s's pixels are %g x %g (skew %g, %g), the DEM's %g x %g (skew %g, %g).",
						   what, b->scale_x, b->scale_y, b->skew_x, b->skew_y,
						   a->scale_x, a->scale_y, a->skew_x, a->skew_y)));
	if (fabs(b->upperleft_x - a->upperleft_x) > tol || fabs(b->upperleft_y - a->upperleft_y) > tol)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s is not aligned with the DEM", what),
				 errdetail("The %s's upper-left corner is (%.10g, %.10g), the DEM's (%.10g, %.10g).",
						   what, b->upperleft_x, b->upperleft_y, a->upperleft_x, a->upperleft_y)));
}

static tgpg_source *
new_source(tgpg_call *c, const char *what, int band)
{
	tgpg_source *s = palloc0(sizeof *s);

	if (c->ninputs == lengthof(c->inputs))
		elog(ERROR, "%s: too many inputs", c->function);
	s->call = c;
	s->what = what;
	s->band = band;
	s->cxt = CurrentMemoryContext;
	c->inputs[c->ninputs++] = s;
	return s;
}

/* A table of tiles; its tiles are named by id_column (required, or where it has one). */
static void
table_source(tgpg_source *s, Oid relid, const char *rast_column, const char *id_column, bool id_required,
			 const char *column_argument, const tg_layout *onto)
{
	const tg_layout *kept;

	s->table = true;
	s->relid = relid;
	s->relname = relation_name(relid);
	s->rast_column = rast_column;
	tgpg_check_column(relid, rast_column, TGPG_COLUMN_RASTER, column_argument);
	if (id_required || get_attnum(relid, id_column) != InvalidAttrNumber)
	{
		tgpg_check_column(relid, id_column, TGPG_COLUMN_ID, "id_column");
		s->id_column = id_column;
	}
	/* a part's later phases: the layout its first phase read, in the same snapshot */
	if (onto == NULL && (kept = tgpg_part_layout(relid, rast_column, s->id_column, s->band)) != NULL)
	{
		s->layout = *kept;
		s->layout.name = s->relname;
		return;
	}
	read_layout(s, onto);
	if (onto == NULL)
		tgpg_part_keep_layout(relid, rast_column, s->id_column, s->band, &s->layout);
}

/* A name argument, or its default. */
static const char *
name_arg(const tgpg_args *a, const char *name, const char *otherwise)
{
	return tgpg_given(a, name) ? pstrdup(NameStr(*DatumGetName(tgpg_datum(a, name)))) : otherwise;
}

void
tgpg_call_open(tgpg_call *c, const tgpg_args *args, const char *function)
{
	FunctionCallInfo fcinfo = args->fcinfo;
	tgpg_source *s;

	memset(c, 0, sizeof *c);
	c->args = args;
	c->function = function;
	c->cxt = CurrentMemoryContext;
	s = new_source(c, args->coverage ? "the coverage" : "the raster", tgpg_int(args, "band"));
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be NULL", args->coverage ? "coverage" : args->names[0])));
	if (args->coverage)		/* its id column names the result rows: it must exist */
		table_source(s, PG_GETARG_OID(0), name_arg(args, "rast_column", "rast"),
					 name_arg(args, "id_column", "rid"), true, "rast_column", NULL);
	else
		value_layout(s, PG_GETARG_DATUM(0));
	c->layout = &s->layout;
	if (c->layout->ntiles > 0)
		check_geographic_grid(c);
}

int
tgpg_call_input(tgpg_call *c, Datum value, Oid type, const char *what, int band,
				const char *column_argument, const char *rast_column)
{
	tgpg_source *s = new_source(c, what, band);

	if (c->args->coverage)
	{
		if (type != REGCLASSOID && type != OIDOID)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("%s must be a number or a table of tiles on the DEM's grid, got %s", what,
							format_type_be(type))));
		/* its tiles are named by rid where it has one */
		table_source(s, DatumGetObjectId(value), rast_column, "rid", false, column_argument, c->layout);
	}
	else
	{
		value_layout(s, value);
		check_aligned(c->layout, &s->layout, what);
	}
	return c->ninputs - 1;
}

/* ------------------------------------------------------------------------
 * Grid geometry and points
 * ------------------------------------------------------------------------ */

/* Is this SRID a geographic (longitude/latitude) one?  Asks spatial_ref_sys. */
static bool
srid_is_geographic(int32 srid)
{
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(srid)};
	bool		geographic = false;

	if (srid <= 0)
		return false;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "could not connect to SPI");
	if (SPI_execute_with_args("SELECT proj4text FROM spatial_ref_sys WHERE srid = $1",
							  1, argtypes, args, NULL, true, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
	{
		char	   *proj4 = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		geographic = proj4 != NULL && strstr(proj4, "+proj=longlat") != NULL;
	}
	SPI_finish();
	return geographic;
}

/*
 * The one check of a call's grid against its SRID, made when the call opens:
 * a geographic grid must lie within the poles (its cell spacing comes from
 * the latitude of each row), north-up.
 */
static void
check_geographic_grid(tgpg_call *c)
{
	const tg_layout *l = c->layout;
	const tg_georef *g = &l->geo;
	const double tolerance = 1e-9 * Max(fabs(g->scale_y), 1e-12);
	double		top = g->upperleft_y,
				bottom = g->upperleft_y + l->height * g->scale_y;

	c->geographic = srid_is_geographic(g->srid);
	if (!c->geographic)
		return;
	if (g->skew_x != 0 || g->skew_y != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("skewed rasters in a geographic SRID are not supported"),
				 errhint("Warp the raster to a north-up grid (ST_Transform) or to a projected SRID.")));
	if (Max(top, bottom) > 90 + tolerance || Min(top, bottom) < -90 - tolerance)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s reaches beyond the poles: its rows span latitudes %.10g to %.10g in SRID %d",
						l->name, Max(top, bottom), Min(top, bottom), g->srid),
				 errhint("A geographic raster's rows lie within -90 and 90 degrees of latitude: check its upper-left corner and pixel size (ST_Georeference).")));
}

tg_grid_geometry
tgpg_call_geometry(const tgpg_call *c)
{
	const tg_georef *geo = &c->layout->geo;
	tg_grid_geometry g;

	memset(&g, 0, sizeof g);
	g.width = c->layout->width;
	g.height = c->layout->height;
	g.cell_x = tg_georef_pixel_width(geo);
	g.cell_y = tg_georef_pixel_height(geo);
	if (c->geographic)
	{
		g.geographic = true;
		g.lat_top = geo->upperleft_y + 0.5 * geo->scale_y;
		g.lat_step = geo->scale_y;
		g.lon_step = fabs(geo->scale_x);
	}
	return g;
}

/*
 * The cell (0-based column, row) of a point on the grid: 22023 when it is
 * not a point, has another SRID or lies outside.  type: the geometry type's
 * OID (PostGIS' types have no fixed OIDs).
 */
void
tgpg_call_point(const tgpg_call *c, Datum point, Oid type, const char *what, int *col, int *row)
{
	double		fc,
				fr;

	tgpg_call_point_at(c, point, type, what, &fc, &fr);
	*col = (int) floor(fc);
	*row = (int) floor(fr);
}

/*
 * Points in columns and rows from the grid's upper-left corner (fractional),
 * read with one query however many there are.  points: a geometry[] of n
 * elements, none NULL; a point is named in messages as `what` where it is
 * the only one, else as "item k".
 */
void
tgpg_call_points_at(const tgpg_call *c, Datum points, Oid array_type, int n, const char *what,
					const char *item, double *cols, double *rows)
{
	const tg_georef *g = &c->layout->geo;
	const double det = g->scale_x * g->scale_y - g->skew_x * g->skew_y;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "could not connect to SPI");
	/* CASE, not WHERE: ST_X of a non-point raises even in a branch not taken */
	if (SPI_execute_with_args("SELECT GeometryType(p), ST_SRID(p), "
							  "CASE WHEN GeometryType(p) = 'POINT' AND NOT ST_IsEmpty(p) THEN ST_X(p) END, "
							  "CASE WHEN GeometryType(p) = 'POINT' AND NOT ST_IsEmpty(p) THEN ST_Y(p) END "
							  "FROM unnest($1) WITH ORDINALITY AS u(p, k) ORDER BY k",
							  1, &array_type, &points, NULL, true, 0) != SPI_OK_SELECT || SPI_processed != n)
		elog(ERROR, "could not read the %s", n == 1 ? what : psprintf("%ss", item));
	for (int k = 0; k < n; k++)
	{
		HeapTuple	tup = SPI_tuptable->vals[k];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		const char *name = n == 1 ? what : psprintf("%s %d", item, k + 1);
		char	   *gtype = SPI_getvalue(tup, desc, 1);
		bool		isnull;
		int32		srid = DatumGetInt32(SPI_getbinval(tup, desc, 2, &isnull));
		double		x = DatumGetFloat8(SPI_getbinval(tup, desc, 3, &isnull)),
					y,
					dx,
					dy;

		if (isnull)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s must be a point, got %s%s", name, gtype ? gtype : "NULL",
							gtype && strcmp(gtype, "POINT") == 0 ? " EMPTY" : "")));
		y = DatumGetFloat8(SPI_getbinval(tup, desc, 4, &isnull));
		if (srid != g->srid)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s has SRID %d, the raster %d", name, srid, g->srid),
					 errhint("ST_Transform the %s to the raster's SRID.", n == 1 ? what : psprintf("%ss", item))));
		/* the inverse of the affine georeference */
		dx = x - g->upperleft_x;
		dy = y - g->upperleft_y;
		cols[k] = (dx * g->scale_y - dy * g->skew_x) / det;
		rows[k] = (dy * g->scale_x - dx * g->skew_y) / det;
		if (!(floor(cols[k]) >= 0 && floor(cols[k]) < c->layout->width && floor(rows[k]) >= 0 &&
			  floor(rows[k]) < c->layout->height))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s POINT(%.10g %.10g) is outside the raster", name, x, y)));
	}
	SPI_finish();
}

/* One point in columns and rows from the grid's upper-left corner (fractional). */
void
tgpg_call_point_at(const tgpg_call *c, Datum point, Oid type, const char *what, double *col, double *row)
{
	int16		typlen;
	bool		typbyval;
	char		typalign;
	ArrayType  *one;

	get_typlenbyvalalign(type, &typlen, &typbyval, &typalign);
	one = construct_array(&point, 1, type, typlen, typbyval, typalign);
	tgpg_call_points_at(c, PointerGetDatum(one), get_array_type(type), 1, what, NULL, col, row);
}

/* ------------------------------------------------------------------------
 * Reading (callbacks: guarded)
 * ------------------------------------------------------------------------ */
static void
start_reading(tgpg_source *s, int row0, int nrows)
{
	const bool	all = row0 <= 0 && row0 + nrows >= s->call->layout->height;
	Datum	   *ids = NULL;
	int			nids = 0;
	Oid			argtype = INT8ARRAYOID;
	Datum		arg;
	SPIPlanPtr	plan;
	char	   *query;

	s->done = false;
	s->fetched = NULL;
	s->nfetched = 0;
	s->pos = 0;
	s->portal = NULL;
	if (!s->table)
		return;
	if (!all && s->id_column == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s has no rid column to read it in strips by", s->relname),
				 errhint("Add one (raster2pgsql makes it), or raise terra_gpu.max_memory_mb.")));
	if (!all)
	{
		ids = palloc(sizeof(Datum) * Max(s->layout.ntiles, 1));
		for (int i = 0; i < s->layout.ntiles; i++)
			if (s->layout.tiles[i].row0 < row0 + nrows && s->layout.tiles[i].row0 + s->layout.tiles[i].height > row0)
				ids[nids++] = Int64GetDatum(s->layout.tiles[i].id);
		if (nids == 0)
		{
			s->done = true;
			return;
		}
	}
	query = tiles_query(s, quote_identifier(s->rast_column), !all);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "could not connect to SPI");
	s->connected = true;
	plan = SPI_prepare(query, all ? 0 : 1, &argtype);
	if (plan == NULL)
		elog(ERROR, "could not prepare \"%s\": %s", query, SPI_result_code_string(SPI_result));
	arg = all ? (Datum) 0 : PointerGetDatum(construct_array(ids, nids, INT8OID, 8, true, TYPALIGN_DOUBLE));
	s->portal = SPI_cursor_open(NULL, plan, all ? NULL : &arg, NULL, true);
}

static void
finish_reading(tgpg_source *s)
{
	if (s->fetched)
		SPI_freetuptable(s->fetched);
	s->fetched = NULL;
	if (s->portal)
		SPI_cursor_close(s->portal);
	s->portal = NULL;
	if (s->connected)
		SPI_finish();
	s->connected = false;
	s->done = true;
}

/*
 * A stored value as the core takes it: fetched from the toast table as
 * stored (compressed or not), in the source's memory context, 4-byte
 * header.
 */
static void
stored_tile(tgpg_source *s, Datum d, tg_tile_bytes *t)
{
	MemoryContext old = MemoryContextSwitchTo(s->cxt);
	struct varlena *v = (struct varlena *) DatumGetPointer(d);

	if (VARATT_IS_EXTERNAL_ONDISK(v))
		v = detoast_external_attr(v);
	else if (VARATT_IS_COMPRESSED(v))
	{
		struct varlena *copy = palloc(VARSIZE(v));

		memcpy(copy, v, VARSIZE(v));
		v = copy;
	}
	else
		v = (struct varlena *) PG_DETOAST_DATUM_COPY(d);
	MemoryContextSwitchTo(old);
	t->handle = v;
	if (VARATT_IS_COMPRESSED(v))
	{
		t->compression = VARDATA_COMPRESSED_GET_COMPRESS_METHOD(v) == TOAST_LZ4_COMPRESSION_ID
			? TG_TILE_LZ4 : TG_TILE_PGLZ;
		t->data = (const uint8_t *) v + VARHDRSZ_COMPRESSED;
		t->size = VARSIZE(v) - VARHDRSZ_COMPRESSED;
		t->raw_size = VARDATA_COMPRESSED_GET_EXTSIZE(v);
	}
	else
	{
		t->compression = TG_TILE_PLAIN;
		t->data = (const uint8_t *) v;
		t->size = VARSIZE(v);
	}
}

static void
next_tile(tgpg_source *s, tg_tile_bytes *t)
{
	ErrorContextCallback errcb = {error_context_stack, tile_error_context, s};

	memset(t, 0, sizeof *t);
	if (s->done)
		return;
	if (!s->table)
	{
		MemoryContext old = MemoryContextSwitchTo(s->cxt);
		struct varlena *v = PG_DETOAST_DATUM(s->value);

		MemoryContextSwitchTo(old);
		t->data = (const uint8_t *) v;
		t->size = VARSIZE(v);
		t->handle = (Pointer) v != DatumGetPointer(s->value) ? v : NULL;
		s->done = true;
		return;
	}
	error_context_stack = &errcb;
	if (s->pos >= s->nfetched)
	{
		if (s->fetched)
			SPI_freetuptable(s->fetched);
		CHECK_FOR_INTERRUPTS();
		SPI_cursor_fetch(s->portal, true, FETCH_ROWS);
		s->fetched = SPI_tuptable;
		s->nfetched = SPI_processed;
		s->pos = 0;
	}
	if (s->nfetched == 0)
		finish_reading(s);
	else
	{
		HeapTuple	tup = s->fetched->vals[s->pos++];
		bool		isnull;
		Datum		id = SPI_getbinval(tup, s->fetched->tupdesc, 1, &isnull);

		s->current = isnull ? PG_INT64_MIN : DatumGetInt64(id);
		stored_tile(s, SPI_getbinval(tup, s->fetched->tupdesc, 2, &isnull), t);
	}
	error_context_stack = errcb.previous;
}

static tg_status
reader_start(void *arg, int row0, int nrows, tg_error *err)
{
	tgpg_source *s = arg;

	TGPG_GUARDED(s->guard, start_reading(s, row0, nrows));
	return s->guard->error ? TG_ECALLBACK : TG_OK;
}

static tg_status
reader_next(void *arg, tg_tile_bytes *t, tg_error *err)
{
	tgpg_source *s = arg;

	TGPG_GUARDED(s->guard, next_tile(s, t));
	return s->guard->error ? TG_ECALLBACK : TG_OK;
}

static void
reader_release(void *arg, tg_tile_bytes *t)
{
	if (t->handle)
		pfree(t->handle);
	t->handle = NULL;
}

/* ------------------------------------------------------------------------
 * Writing (callbacks: guarded)
 * ------------------------------------------------------------------------ */
typedef struct writer_state
{
	tgpg_call  *call;
	tgpg_guard *guard;
	tgpg_result result;
	FunctionCallInfo fcinfo;
	Datum		value;			/* TGPG_RESULT_VALUE */
} writer_state;

/* A result raster as a varlena: its length word set in place, or a compressed header. */
static Datum
tile_datum(tg_tile_value *v)
{
	if (v->compressed)
	{
		SET_VARSIZE_COMPRESSED(v->data, v->size);
		TOAST_COMPRESS_SET_SIZE_AND_COMPRESS_METHOD((struct varlena *) v->data, v->raw_size,
													TOAST_LZ4_COMPRESSION_ID);
	}
	else
		SET_VARSIZE(v->data, v->size);
	return PointerGetDatum(v->data);
}

static void
put_tile(writer_state *w, int tile, tg_tile_value *values, int nvalues, bool *kept)
{
	FunctionCallInfo fcinfo = w->fcinfo;
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		row[1 + TG_TERRAIN_PRODUCTS];
	bool		nulls[1 + TG_TERRAIN_PRODUCTS];

	switch (w->result)
	{
		case TGPG_RESULT_VALUE:
			w->value = tile_datum(&values[0]);
			*kept = true;
			break;
		case TGPG_RESULT_TILES:
			{
				MemoryContext old = MemoryContextSwitchTo(w->call->cxt);

				for (int k = 0; k < nvalues; k++)
					w->call->tiles = lappend(w->call->tiles, DatumGetPointer(tile_datum(&values[k])));
				MemoryContextSwitchTo(old);
				*kept = true;
				break;
			}
		case TGPG_RESULT_ROWS:
			for (int k = 0; k < rsinfo->setDesc->natts; k++)
				nulls[k] = w->call->columns != NULL;
			row[0] = Int64GetDatum(w->call->layout->tiles[tile].id);
			nulls[0] = false;
			for (int k = 0; k < nvalues; k++)
			{
				const int	column = w->call->columns ? w->call->columns[k] : 1 + k;

				row[column] = tile_datum(&values[k]);
				nulls[column] = false;
			}
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, row, nulls);
			*kept = false;
			break;
	}
}

static tg_status
writer_write(void *arg, int tile, tg_tile_value *values, int nvalues, bool *kept, tg_error *err)
{
	writer_state *w = arg;

	*kept = false;
	TGPG_GUARDED(w->guard, put_tile(w, tile, values, nvalues, kept));
	if (w->guard->error)
		*kept = false;
	return w->guard->error ? TG_ECALLBACK : TG_OK;
}

/*
 * The rows wait for the executor in the tuplestore, which PostgreSQL spills
 * to a temporary file beyond work_mem: a write and a read back of every
 * result byte.  Where the run leaves part of terra_gpu.max_memory_mb unused
 * they stay in memory up to that part instead (nothing is written yet, so
 * the empty store is replaced).
 */
static void
make_room(writer_state *w, size_t bytes)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) w->fcinfo->resultinfo;
	const size_t kbytes = Min(bytes >> 10, (size_t) INT_MAX);
	MemoryContext old;

	if (w->result != TGPG_RESULT_ROWS || kbytes <= (size_t) work_mem)
		return;
	old = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
	tuplestore_end(rsinfo->setResult);
	rsinfo->setResult = tuplestore_begin_heap((rsinfo->allowedModes & SFRM_Materialize_Random) != 0, false,
											  (int) kbytes);
	MemoryContextSwitchTo(old);
}

static tg_status
writer_room(void *arg, size_t bytes, tg_error *err)
{
	writer_state *w = arg;

	TGPG_GUARDED(w->guard, make_room(w, bytes));
	return w->guard->error ? TG_ECALLBACK : TG_OK;
}

/* ------------------------------------------------------------------------
 * Spill: a temporary file, removed when the transaction ends
 * ------------------------------------------------------------------------ */
#define SPILL_CHUNK (1 << 30)

typedef struct spill_state
{
	tgpg_guard *guard;
	File		file;
	bool		open;
} spill_state;

static void
spill_io(spill_state *sp, bool write, off_t offset, size_t bytes, char *p)
{
	if (!sp->open)
	{
		sp->file = OpenTemporaryFile(false);
		sp->open = true;
	}
	while (bytes > 0)
	{
		int			amount = (int) Min(bytes, (size_t) SPILL_CHUNK);
		int			done;

		CHECK_FOR_INTERRUPTS();
		done = write ? FileWrite(sp->file, p, amount, offset, WAIT_EVENT_BUFFILE_WRITE)
			: FileRead(sp->file, p, amount, offset, WAIT_EVENT_BUFFILE_READ);
		if (done < 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not %s temporary file \"%s\": %m", write ? "write" : "read",
							FilePathName(sp->file))));
		if (done != amount)
			ereport(ERROR,
					(errcode(write ? ERRCODE_DISK_FULL : ERRCODE_DATA_CORRUPTED),
					 errmsg("could not %s temporary file \"%s\": %d of %d bytes",
							write ? "write" : "read", FilePathName(sp->file), done, amount),
					 write ? errhint("Check free disk space.") : 0));
		bytes -= (size_t) amount;
		offset += amount;
		p += amount;
	}
}

static tg_status
spill_write(void *arg, size_t offset, const void *data, size_t bytes, tg_error *err)
{
	spill_state *sp = arg;

	TGPG_GUARDED(sp->guard, spill_io(sp, true, (off_t) offset, bytes, (char *) data));
	return sp->guard->error ? TG_ECALLBACK : TG_OK;
}

static tg_status
spill_read(void *arg, size_t offset, void *data, size_t bytes, tg_error *err)
{
	spill_state *sp = arg;

	TGPG_GUARDED(sp->guard, spill_io(sp, false, (off_t) offset, bytes, data));
	return sp->guard->error ? TG_ECALLBACK : TG_OK;
}

/* ------------------------------------------------------------------------
 * The run
 * ------------------------------------------------------------------------ */
typedef struct notice_state
{
	tgpg_guard *guard;
	const char *function;
} notice_state;

static void
job_notice(void *arg, const char *message)
{
	notice_state *n = arg;

	TGPG_GUARDED(n->guard, ereport(NOTICE, (errmsg("%s: %s", n->function, message))));
}

Datum
tgpg_call_run(tgpg_call *c, const tg_op *op, tgpg_result result)
{
	FunctionCallInfo fcinfo = c->args->fcinfo;
	tgpg_guard	guard;
	writer_state w = {c, &guard, result, fcinfo, (Datum) 0};
	spill_state sp = {&guard, -1, false};
	notice_state ns = {&guard, c->function};
	tg_input	inputs[lengthof(c->inputs)];
	tg_job		job;
	tg_ctx		ctx;
	tg_error	err;
	tg_status	st;

	tgpg_guard_init(&guard, c->function);
	tgpg_ctx_init(&ctx, &guard, tgpg_backend_arg(c->args));
	memset(&job, 0, sizeof job);
	for (int k = 0; k < c->ninputs; k++)
	{
		tgpg_source *s = c->inputs[k];

		s->guard = &guard;
		s->cxt = c->cxt;
		inputs[k].what = s->what;
		inputs[k].layout = &s->layout;
		inputs[k].reader.start = reader_start;
		inputs[k].reader.next = reader_next;
		inputs[k].reader.release = reader_release;
		inputs[k].reader.arg = s;
		inputs[k].band = s->band;
	}
	job.function = c->function;
	job.budget_name = "terra_gpu.max_memory_mb";
	job.layout = c->layout;
	job.inputs = inputs;
	job.ninputs = c->ninputs;
	job.writer.write = writer_write;
	job.writer.arg = &w;
	job.writer.room = writer_room;
	job.writer.header_room = VARHDRSZ_COMPRESSED;
	job.writer.max_value_size = MaxAllocSize;
#ifdef USE_LZ4
	job.writer.compress = result == TGPG_RESULT_ROWS && tgpg_tile_compression == TGPG_COMPRESSION_LZ4;
#endif
	job.spill.write = spill_write;
	job.spill.read = spill_read;
	job.spill.arg = &sp;
	job.memory_budget = tgpg_memory_budget();
	job.whole = !c->args->coverage;
	job.notice = job_notice;
	job.notice_arg = &ns;
	job.part = c->args->coverage ? tgpg_part_take() : NULL;
	job.wanted = c->args->coverage && c->inputs[0]->table
		? tgpg_refresh_wanted(c->inputs[0]->relid, c->inputs[0]->relname, c->inputs[0]->id_column, c->layout)
		: NULL;
	if (result == TGPG_RESULT_ROWS)
	{
		ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

		InitMaterializedSRF(fcinfo, 0);
		if (c->columns == NULL ? rsinfo->setDesc->natts != 1 + tg_op_outputs(op)
			: rsinfo->setDesc->natts != 1 + TG_TERRAIN_PRODUCTS)
			elog(ERROR, "%s: the result has %d columns, expected %d", c->function,
				 rsinfo->setDesc->natts, c->columns ? 1 + TG_TERRAIN_PRODUCTS : 1 + tg_op_outputs(op));
	}
	tg_error_clear(&err);
	st = tg_run(&ctx, op, &job, &err);
	if (job.part && st == TG_OK)
		tgpg_part_keep_reply(job.part);
	/* a part of a partitioned result is no product of its own: refreshed alone it would not be the result's */
	if (st == TG_OK && c->args->coverage && job.part == NULL)
		for (int k = 0; k < c->ninputs; k++)
			if (c->inputs[k]->table)
				tgpg_remember_read(c->inputs[k]->relid, c->inputs[k]->rast_column, c->inputs[k]->id_column,
								   c->function, k == 0 ? op : NULL, c->layout);
	for (int k = 0; k < c->ninputs; k++)
		if (c->inputs[k]->connected && guard.error == NULL)
			finish_reading(c->inputs[k]);
	if (sp.open && guard.error == NULL)
		FileClose(sp.file);
	tgpg_finish(&guard, st, &err);
	return w.value;
}
