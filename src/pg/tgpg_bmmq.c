/*
 * tgpg_bmmq.c — BMMQ-tree glue: the build over a coverage (SPI cursor in,
 * node rows out), the value form, and the small helpers the SQL query
 * functions use (quadrant decompositions, Morton keys, exact cells).
 * The catalog, triggers and queries themselves are SQL (sql/terra_gpu.sql).
 */
#include "tgpg.h"

#include "catalog/catalog.h"
#include "catalog/pg_class.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/rls.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

/* Tiles per build call: enough cells to keep a GPU busy, bounded host memory. */
#define BATCH_CELLS (16 * 1024 * 1024)
#define BATCH_TILES 4096
#define PROGRESS_EVERY_MS 5000

/* Bin boundaries from a float8[] argument (the core checks their order). */
static double *
bounds_arg(FunctionCallInfo fcinfo, int argno, int *n)
{
	ArrayType  *a;
	Datum	   *elems;
	bool	   *nulls;
	double	   *out;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("bin boundaries must not be NULL")));
	a = PG_GETARG_ARRAYTYPE_P(argno);
	if (ARR_NDIM(a) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("bin boundaries must be a one-dimensional array")));
	deconstruct_array(a, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &elems, &nulls, n);
	out = palloc(sizeof(double) * Max(*n, 1));
	for (int i = 0; i < *n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("bin boundary %d is NULL", i + 1)));
		out[i] = DatumGetFloat8(elems[i]);
	}
	if (*n > PG_INT16_MAX - 3)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("at most %d bin boundaries are supported, got %d", PG_INT16_MAX - 3, *n),
				 errdetail("Bin codes are stored as smallint, with two codes for nodata and padding.")));
	return out;
}

/*
 * Level, Morton key and parent bins of every node of a tree, from the
 * breadth-first layout: node i's children first_child..+3 sit one level down
 * with keys 4 key(i) + c.  The root's parent bins are -1.
 */
typedef struct node_place
{
	int16		level;
	int16		parent_min;
	int16		parent_max;
	uint64		key;
} node_place;

static node_place *
place_nodes(const tg_bmmq_tree *t)
{
	node_place *p = palloc_extended(sizeof(node_place) * t->count, MCXT_ALLOC_HUGE);

	p[0].level = 0;
	p[0].key = 0;
	p[0].parent_min = p[0].parent_max = -1;
	for (int64 i = 0; i < t->count; i++)
	{
		const tg_bmmq_node *n = &t->nodes[i];

		for (int c = 0; n->first_child >= 0 && c < 4; c++)
		{
			node_place *ch = &p[n->first_child + c];

			ch->level = p[i].level + 1;
			ch->key = 4 * p[i].key + c;
			ch->parent_min = n->min_bin;
			ch->parent_max = n->max_bin;
		}
	}
	return p;
}

/* An integer argument that must not be NULL (22004). */
static int32
int_arg(FunctionCallInfo fcinfo, int argno, const char *name)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be NULL", name)));
	return PG_GETARG_INT32(argno);
}

/* ------------------------------------------------------------------------
 * Value form: the node array of one raster
 * ------------------------------------------------------------------------ */
PG_FUNCTION_INFO_V1(tgpg_bmmq_value);
Datum
tgpg_bmmq_value(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	tgpg_raster rast;
	tg_band		band;
	tg_bmmq_tree tree;
	tgpg_guard	guard;
	tg_ctx		ctx;
	tg_error	err;
	node_place *place;
	double	   *bounds;
	int			nbounds;

	InitMaterializedSRF(fcinfo, 0);
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	bounds = bounds_arg(fcinfo, 2, &nbounds);
	tgpg_raster_open(PG_GETARG_DATUM(0), &rast);
	tgpg_raster_band(&rast, int_arg(fcinfo, 1, "band"), &band);
	if (band.width < 1 || band.height < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot build a quadtree of an empty raster")));

	tgpg_guard_init(&guard, "tg_bmmq");
	tgpg_ctx_init(&ctx, &guard, tgpg_backend_word(PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3))));
	tg_error_clear(&err);
	tgpg_check(tg_bmmq_build(&ctx, &band, 1, bounds, nbounds, &tree, &err), &err);

	place = place_nodes(&tree);
	for (int64 i = 0; i < tree.count; i++)
	{
		Datum		values[6];
		bool		nulls[6] = {false};

		values[0] = Int32GetDatum((int32) i);
		values[1] = Int32GetDatum(place[i].level);
		values[2] = Int64GetDatum((int64) place[i].key);
		values[3] = Int32GetDatum(tree.nodes[i].min_bin);
		values[4] = Int32GetDatum(tree.nodes[i].max_bin);
		values[5] = Int32GetDatum(tree.nodes[i].first_child);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	tg_bmmq_tree_free(&ctx, &tree);
	return (Datum) 0;
}

/* ------------------------------------------------------------------------
 * Coverage build: node rows of every tile
 * ------------------------------------------------------------------------ */
typedef struct build_batch
{
	int			n;
	int64		cells;
	int64		ids[BATCH_TILES];
	tgpg_raster rasters[BATCH_TILES];
	tg_band		bands[BATCH_TILES];
} build_batch;

typedef struct build_state
{
	ReturnSetInfo *rsinfo;
	FunctionCallInfo fcinfo;
	const double *bounds;
	int			nbounds;
	int			tiles_done;
	int64		nodes;
	tg_run_stats total;
	TimestampTz last_progress;
	int64		current_tile;	/* for the error context */
	const char *coverage;
} build_state;

static void
build_error_context(void *arg)
{
	build_state *s = arg;

	if (s->current_tile != PG_INT64_MIN)
		errcontext("tile %lld of %s", (long long) s->current_tile, s->coverage);
}

static void
build_and_emit(build_state *s, build_batch *b)
{
	tg_bmmq_tree *trees = palloc0(sizeof(tg_bmmq_tree) * b->n);
	tgpg_guard	guard;
	tg_ctx		ctx;
	tg_error	err;

	tgpg_guard_init(&guard, "tg_bmmq_build");
	tgpg_ctx_init(&ctx, &guard, tgpg_backend_word(s->fcinfo->args[5].isnull ? NULL
												  : text_to_cstring(DatumGetTextPP(s->fcinfo->args[5].value))));
	tg_error_clear(&err);
	s->current_tile = PG_INT64_MIN;
	tgpg_check(tg_bmmq_build(&ctx, b->bands, b->n, s->bounds, s->nbounds, trees, &err), &err);

	s->total.backend = ctx.stats->backend;
	s->total.cells += ctx.stats->cells;
	s->total.kernel_ms += ctx.stats->kernel_ms;
	s->total.transfer_ms += ctx.stats->transfer_ms;
	s->total.core_ms += ctx.stats->core_ms;
	s->total.chunks += Max(ctx.stats->chunks, 1);
	if (ctx.stats->note[0])
		memcpy(s->total.note, ctx.stats->note, sizeof s->total.note);

	for (int t = 0; t < b->n; t++)
	{
		node_place *place = place_nodes(&trees[t]);

		for (int64 i = 0; i < trees[t].count; i++)
		{
			const tg_bmmq_node *n = &trees[t].nodes[i];
			Datum		values[9];
			bool		nulls[9] = {false};

			values[0] = Int64GetDatum(b->ids[t]);
			values[1] = Int32GetDatum((int32) i);
			values[2] = Int16GetDatum(place[i].level);
			values[3] = Int64GetDatum((int64) place[i].key);
			values[4] = Int16GetDatum((int16) n->min_bin);
			values[5] = Int16GetDatum((int16) n->max_bin);
			values[6] = Int32GetDatum(n->first_child);
			values[7] = Int16GetDatum(place[i].parent_min);
			values[8] = Int16GetDatum(place[i].parent_max);
			tuplestore_putvalues(s->rsinfo->setResult, s->rsinfo->setDesc, values, nulls);
		}
		s->nodes += trees[t].count;
		pfree(place);
		tg_bmmq_tree_free(&ctx, &trees[t]);
	}
	s->tiles_done += b->n;
	b->n = 0;
	b->cells = 0;
}

/*
 * The nodes of every tile of a coverage, or (tiles, argument 6, not NULL)
 * of the tiles with those ids: a refresh.  0.1.0's declaration, in place
 * until ALTER EXTENSION UPDATE, has no such argument.
 */
PG_FUNCTION_INFO_V1(tgpg_bmmq_build_nodes);
Datum
tgpg_bmmq_build_nodes(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			coverage;
	const char *rast_col;
	const char *id_col;
	int			band_no = int_arg(fcinfo, 3, "band");
	MemoryContext outer = CurrentMemoryContext;
	MemoryContext batch_cxt;
	ErrorContextCallback errcb;
	build_state s;
	build_batch *b;
	char	   *relname;
	char	   *query;
	Portal		portal;
	SPIPlanPtr	plan;
	int64		total_tiles;
	bool		some_tiles = PG_NARGS() > 6 && !PG_ARGISNULL(6);
	const char *tile_filter;
	Datum		tiles = some_tiles ? PG_GETARG_DATUM(6) : (Datum) 0;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("coverage, rast_column and id_column must not be NULL")));
	coverage = PG_GETARG_OID(0);
	rast_col = NameStr(*PG_GETARG_NAME(1));
	id_col = NameStr(*PG_GETARG_NAME(2));
	InitMaterializedSRF(fcinfo, 0);
	memset(&s, 0, sizeof s);
	s.rsinfo = rsinfo;
	s.fcinfo = fcinfo;
	s.bounds = bounds_arg(fcinfo, 4, &s.nbounds);
	s.last_progress = GetCurrentTimestamp();
	s.current_tile = PG_INT64_MIN;

	if (get_rel_name(coverage) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", coverage)));
	tgpg_check_column(coverage, rast_col, TGPG_COLUMN_RASTER, "rast_column");
	tgpg_check_column(coverage, id_col, TGPG_COLUMN_ID, "id_column");
	relname = quote_qualified_identifier(get_namespace_name(get_rel_namespace(coverage)),
										 get_rel_name(coverage));
	s.coverage = relname;
	tile_filter = some_tiles ? psprintf(" AND %s = ANY ($1)", quote_identifier(id_col)) : "";
	query = psprintf("SELECT %s::bigint, %s FROM %s WHERE %s IS NOT NULL%s",
					 quote_identifier(id_col), quote_identifier(rast_col), relname,
					 quote_identifier(rast_col), tile_filter);

	batch_cxt = AllocSetContextCreate(outer, "tg_bmmq_build batch", ALLOCSET_DEFAULT_SIZES);
	b = MemoryContextAllocZero(outer, sizeof(build_batch));

	errcb.callback = build_error_context;
	errcb.arg = &s;
	errcb.previous = error_context_stack;
	error_context_stack = &errcb;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "could not connect to SPI");
	if (SPI_execute_with_args(psprintf("SELECT count(*) FROM %s WHERE %s IS NOT NULL%s", relname,
									   quote_identifier(rast_col), tile_filter),
							  some_tiles ? 1 : 0, &(Oid) {INT8ARRAYOID}, &tiles, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not count the tiles of %s", relname);
	total_tiles = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
											  &(bool) {false}));
	plan = SPI_prepare(query, some_tiles ? 1 : 0, &(Oid) {INT8ARRAYOID});
	if (plan == NULL)
		elog(ERROR, "could not prepare \"%s\": %s", query, SPI_result_code_string(SPI_result));
	portal = SPI_cursor_open(NULL, plan, &tiles, NULL, true);

	for (;;)
	{
		bool		isnull;
		Datum		d;
		MemoryContext old;
		tgpg_raster *r;

		CHECK_FOR_INTERRUPTS();
		SPI_cursor_fetch(portal, true, 1);
		if (SPI_processed == 0)
			break;

		/* keep the tile beyond this fetch: a detoasted copy in the batch context */
		s.current_tile = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		if (isnull)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("tile id column \"%s\" of %s is NULL for a tile", id_col, relname)));
		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
		old = MemoryContextSwitchTo(batch_cxt);
		r = &b->rasters[b->n];
		tgpg_raster_open(PointerGetDatum(PG_DETOAST_DATUM_COPY(d)), r);
		if (band_no < 1 || band_no > r->info.num_bands)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("band %d does not exist: the tile has %d band(s)", band_no,
							r->info.num_bands)));
		tgpg_raster_band(r, band_no, &b->bands[b->n]);
		if (b->bands[b->n].width < 1 || b->bands[b->n].height < 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("cannot build a quadtree of an empty tile")));
		MemoryContextSwitchTo(old);
		b->ids[b->n] = s.current_tile;
		b->cells += (int64) b->bands[b->n].width * b->bands[b->n].height;
		b->n++;
		SPI_freetuptable(SPI_tuptable);

		if (b->n == BATCH_TILES || b->cells >= BATCH_CELLS)
		{
			old = MemoryContextSwitchTo(batch_cxt);
			build_and_emit(&s, b);
			MemoryContextSwitchTo(old);
			MemoryContextReset(batch_cxt);
			if (TimestampDifferenceExceeds(s.last_progress, GetCurrentTimestamp(), PROGRESS_EVERY_MS))
			{
				ereport(NOTICE,
						(errmsg("tg_bmmq_build: %d of %lld tiles, %lld nodes", s.tiles_done,
								(long long) total_tiles, (long long) s.nodes)));
				s.last_progress = GetCurrentTimestamp();
			}
		}
	}
	if (b->n > 0)
	{
		MemoryContext old = MemoryContextSwitchTo(batch_cxt);

		build_and_emit(&s, b);
		MemoryContextSwitchTo(old);
	}
	if (s.tiles_done == 0 && !some_tiles)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("%s has no tiles in column \"%s\"", relname, rast_col)));
	SPI_cursor_close(portal);
	SPI_finish();
	error_context_stack = errcb.previous;
	MemoryContextDelete(batch_cxt);

	/* tg_last_run() reports the whole build, not its last batch */
	{
		const char *fn;
		tg_run_stats *last = (tg_run_stats *) tgpg_last_run_stats(&fn);

		if (last)
			*last = s.total;
	}
	return (Datum) 0;
}

/* ------------------------------------------------------------------------
 * Helpers of the SQL query functions
 * ------------------------------------------------------------------------ */
PG_FUNCTION_INFO_V1(tgpg_morton_col);
Datum
tgpg_morton_col(PG_FUNCTION_ARGS)
{
	uint32		col,
				row;

	tg_morton_decode((uint64) PG_GETARG_INT64(0), &col, &row);
	PG_RETURN_INT32((int32) col);
}

PG_FUNCTION_INFO_V1(tgpg_morton_row);
Datum
tgpg_morton_row(PG_FUNCTION_ARGS)
{
	uint32		col,
				row;

	tg_morton_decode((uint64) PG_GETARG_INT64(0), &col, &row);
	PG_RETURN_INT32((int32) row);
}

static void
check_levels(int levels, int level)
{
	if (levels < 0 || levels > TG_BMMQ_MAX_LEVELS || level < 0 || level > levels)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("quadrant level %d outside a tree of %d levels", level, levels)));
}

static void
put_quadrant(ReturnSetInfo *rsinfo, int level, uint64 key)
{
	Datum		values[2] = {Int32GetDatum(level), Int64GetDatum((int64) key)};
	bool		nulls[2] = {false, false};

	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* Quadrant (level, key) of a 2^levels tree restricted to [c0,c1) x [r0,r1). */
static void
rect_quadrants(ReturnSetInfo *rsinfo, int levels, int level, uint64 key,
			   int64 c0, int64 r0, int64 c1, int64 r1)
{
	const int64 side = (int64) 1 << (levels - level);
	uint32		col,
				row;
	int64		qc,
				qr;

	tg_morton_decode(key, &col, &row);
	qc = (int64) col * side;
	qr = (int64) row * side;
	if (qc >= c1 || qc + side <= c0 || qr >= r1 || qr + side <= r0)
		return;
	if (qc >= c0 && qc + side <= c1 && qr >= r0 && qr + side <= r1)
	{
		put_quadrant(rsinfo, level, key);
		return;
	}
	for (int c = 0; c < 4; c++)
		rect_quadrants(rsinfo, levels, level + 1, 4 * key + c, c0, r0, c1, r1);
}

PG_FUNCTION_INFO_V1(tgpg_bmmq_rect_quadrants);
Datum
tgpg_bmmq_rect_quadrants(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			levels = PG_GETARG_INT32(0);
	int			level = PG_GETARG_INT32(1);

	InitMaterializedSRF(fcinfo, 0);
	check_levels(levels, level);
	rect_quadrants(rsinfo, levels, level, (uint64) PG_GETARG_INT64(2), PG_GETARG_INT32(3),
				   PG_GETARG_INT32(4), PG_GETARG_INT32(5), PG_GETARG_INT32(6));
	return (Datum) 0;
}

/* The Z-order cell interval [zlo, zhi) as maximal aligned quadrants. */
PG_FUNCTION_INFO_V1(tgpg_bmmq_z_quadrants);
Datum
tgpg_bmmq_z_quadrants(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			levels = PG_GETARG_INT32(0);
	uint64		lo = (uint64) PG_GETARG_INT64(1);
	uint64		hi = (uint64) PG_GETARG_INT64(2);

	InitMaterializedSRF(fcinfo, 0);
	check_levels(levels, 0);
	if (PG_GETARG_INT64(1) < 0 || hi > ((uint64) 1 << (2 * levels)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cell interval [%lld, %lld) outside a tree of %d levels",
						(long long) PG_GETARG_INT64(1), (long long) PG_GETARG_INT64(2), levels)));
	while (lo < hi)
	{
		int			k = 0;

		/* the largest 4^k block starting at lo (aligned) that fits */
		while (k < levels && (lo & (((uint64) 4 << (2 * k)) - 1)) == 0 &&
			   lo + ((uint64) 4 << (2 * k)) <= hi)
			k++;
		put_quadrant(rsinfo, levels - k, lo >> (2 * k));
		lo += (uint64) 1 << (2 * k);
	}
	return (Datum) 0;
}

/*
 * Cells of the given quadrants of one tile whose valid value lies in
 * [lo, hi): the exact refinement of boundary quadrants.
 */
PG_FUNCTION_INFO_V1(tgpg_bmmq_cells_in_range);
Datum
tgpg_bmmq_cells_in_range(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			levels = PG_GETARG_INT32(2);
	double		lo = PG_GETARG_FLOAT8(5);
	double		hi = PG_GETARG_FLOAT8(6);
	tgpg_raster rast;
	tg_band		band;
	Datum	   *lv,
			   *keys;
	bool	   *nulls;
	int			n,
				nk;

	InitMaterializedSRF(fcinfo, 0);
	tgpg_raster_open(PG_GETARG_DATUM(0), &rast);
	tgpg_raster_band(&rast, int_arg(fcinfo, 1, "band"), &band);
	if (tg_bmmq_levels(band.width, band.height) != levels)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the tile is %d x %d pixels, not what its quadtree was built on",
						band.width, band.height),
				 errhint("Rebuild the index with tg_bmmq_refresh().")));
	deconstruct_array(PG_GETARG_ARRAYTYPE_P(3), INT4OID, 4, true, TYPALIGN_INT, &lv, &nulls, &n);
	deconstruct_array(PG_GETARG_ARRAYTYPE_P(4), INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
					  &keys, &nulls, &nk);
	if (n != nk)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("%d quadrant levels but %d keys", n, nk)));
	for (int q = 0; q < n; q++)
	{
		const int	level = DatumGetInt32(lv[q]);
		const uint64 key = (uint64) DatumGetInt64(keys[q]);
		uint32		col,
					row;
		int64		side,
					qc,
					qr;

		check_levels(levels, level);
		side = (int64) 1 << (levels - level);
		tg_morton_decode(key, &col, &row);
		qc = (int64) col * side;
		qr = (int64) row * side;
		for (int64 y = qr; y < Min(qr + side, band.height); y++)
			for (int64 x = qc; x < Min(qc + side, band.width); x++)
			{
				double		v = tg_band_get(&band, (size_t) y * band.width + x);

				if (!tg_band_value_is_nodata(&band, v) && v >= lo && v < hi)
					put_quadrant(rsinfo, levels, tg_morton_encode((uint32) x, (uint32) y));
			}
	}
	return (Datum) 0;
}

/* ------------------------------------------------------------------------
 * The source table's side of an index: its lock and its stale triggers
 * ------------------------------------------------------------------------ */

/*
 * Statement triggers that mark a source's indexes stale, only when rows
 * changed: a transition table tells (one event per trigger, as PostgreSQL
 * requires of triggers with transition tables); TRUNCATE has none.
 */
static const char *const stale_triggers[][2] = {
	{"tg_bmmq_stale_insert", "AFTER INSERT ON %s REFERENCING NEW TABLE AS changed"},
	{"tg_bmmq_stale_update", "AFTER UPDATE ON %s REFERENCING NEW TABLE AS changed"},
	{"tg_bmmq_stale_delete", "AFTER DELETE ON %s REFERENCING OLD TABLE AS changed"},
	{"tg_bmmq_stale_truncate", "AFTER TRUNCATE ON %s"},
};

static bool
has_trigger(Oid rel, const char *name)
{
	Datum		args[2] = {ObjectIdGetDatum(rel), CStringGetDatum(name)};
	Oid			types[2] = {OIDOID, CSTRINGOID};

	if (SPI_execute_with_args("SELECT 1 FROM pg_catalog.pg_trigger WHERE tgrelid = $1 AND tgname = $2::pg_catalog.name",
							  2, types, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not look up trigger %s", name);
	return SPI_processed > 0;
}

/*
 * A statement trigger fires only for the table a statement names, so a
 * partitioned or inheritance parent's indexes need the triggers on every
 * partition and child too (bmmq_mark_stale marks the indexes of the table
 * and of its ancestors).  Foreign tables cannot have transition tables.
 */
#define TABLES_UNDER_SQL \
	"WITH RECURSIVE d(oid) AS (SELECT $1 UNION SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN d ON i.inhparent = d.oid) " \
	"SELECT d.oid FROM d JOIN pg_catalog.pg_class c ON c.oid = d.oid WHERE c.relkind IN ('r', 'p') ORDER BY 1"
/* ... every relation under it, whatever its kind (checked before any is locked) */
#define TABLES_UNDER_ALL_SQL \
	"WITH RECURSIVE d(oid) AS (SELECT $1 UNION SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN d ON i.inhparent = d.oid) " \
	"SELECT d.oid FROM d WHERE d.oid <> $1 ORDER BY 1"
/* ... and those of them that no index or product uses any more, through itself or an ancestor */
#define TABLES_UNWATCHED_SQL \
	"WITH RECURSIVE d(oid) AS (SELECT $1 UNION SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN d ON i.inhparent = d.oid), " \
	"a(leaf, oid) AS (SELECT oid, oid FROM d UNION SELECT a.leaf, i.inhparent FROM pg_catalog.pg_inherits i JOIN a ON i.inhrelid = a.oid) " \
	"SELECT d.oid FROM d WHERE NOT EXISTS (SELECT 1 FROM a JOIN terra_gpu.bmmq_index x ON x.source::pg_catalog.oid = a.oid " \
	"WHERE a.leaf = d.oid) AND NOT EXISTS (SELECT 1 FROM a JOIN terra_gpu.product p ON p.source::pg_catalog.oid = a.oid " \
	"WHERE a.leaf = d.oid AND p.captured) ORDER BY 1"

static List *
tables_to_watch(Oid rel, const char *sql)
{
	Datum		arg = ObjectIdGetDatum(rel);
	Oid			type = OIDOID;
	List	   *out = NIL;

	if (SPI_execute_with_args(sql, 1, &type, &arg, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not list the tables under %u", rel);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;

		out = lappend_oid(out, DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
																SPI_tuptable->tupdesc, 1, &isnull)));
	}
	return out;
}

static void
run_command(const char *sql)
{
	int			rc = SPI_execute(sql, false, 0);

	if (rc < 0)
		elog(ERROR, "could not run \"%s\": %s", sql, SPI_result_code_string(rc));
}

/*
 * A source and every table under it, checked before anything is locked: a
 * plain, partitioned or foreign table (the first two get the stale
 * triggers), not a system catalog, owned by the caller (as CREATE INDEX
 * requires).
 */
static void
check_watchable(Oid rel, Oid caller, const char *relname)
{
	char		kind = get_rel_relkind(rel);

	if (kind != RELKIND_RELATION && kind != RELKIND_PARTITIONED_TABLE && kind != RELKIND_FOREIGN_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("%s is not a table", relname),
				 errhint("A BMMQ index is built on a table of tiles (plain, partitioned or foreign).")));
	if (IsCatalogRelationOid(rel) || IsToastNamespace(get_rel_namespace(rel)))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("%s is a system catalog", relname)));
	if (!pg_class_ownercheck(rel, caller))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of table %s", relname),
				 errhint("A BMMQ index is built by the owner of its table, as CREATE INDEX is: ask them to build it, or build it on a copy you own.")));
}

/*
 * terra_gpu._bmmq_watch(source, watch): with watch, lock the source of an
 * index being built in SHARE mode (no writes until the caller's transaction
 * ends) and make sure its stale triggers exist (on every partition and child
 * too); without, drop those triggers once no index uses the table.
 *
 * Only for tables the caller owns, checked with the caller's identity before
 * anything is locked (a table the caller does not own keeps its triggers on
 * unwatch: they mark nothing once no index uses it).  The fixed commands then
 * run as the owner of this function (the role that installed the extension),
 * with a fixed search_path, because CREATE TRIGGER needs EXECUTE on the
 * trigger function, which PUBLIC does not have.  A SECURITY DEFINER function
 * could not do this: it cannot see who called it.
 */
PG_FUNCTION_INFO_V1(tgpg_bmmq_watch);
Datum
tgpg_bmmq_watch(PG_FUNCTION_ARGS)
{
	Oid			rel = PG_GETARG_OID(0);
	bool		watch = PG_GETARG_BOOL(1);
	Oid			caller = GetUserId();
	Oid			owner;
	Oid			save_user;
	int			save_sec;
	int			save_nest;
	char	   *nsp;
	char	   *relname;
	const char *qualified;
	HeapTuple	tup;

	relname = get_rel_name(rel);
	nsp = relname ? get_namespace_name(get_rel_namespace(rel)) : NULL;
	if (relname == NULL || nsp == NULL)
	{
		if (watch)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_TABLE),
					 errmsg("the source table (OID %u) of this BMMQ index no longer exists", rel)));
		PG_RETURN_VOID();		/* dropped: its triggers went with it */
	}
	qualified = quote_qualified_identifier(nsp, relname);
	if (watch)
	{
		List	   *under;
		ListCell   *lc;

		check_watchable(rel, caller, qualified);
		/* a lock on a parent covers its partitions and children: check them first */
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		under = tables_to_watch(rel, TABLES_UNDER_ALL_SQL);
		foreach(lc, under)
			check_watchable(lfirst_oid(lc), caller,
							quote_qualified_identifier(get_namespace_name(get_rel_namespace(lfirst_oid(lc))),
													   get_rel_name(lfirst_oid(lc))));
		SPI_finish();
	}

	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(fcinfo->flinfo->fn_oid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for function %u", fcinfo->flinfo->fn_oid);
	owner = ((Form_pg_proc) GETSTRUCT(tup))->proowner;
	ReleaseSysCache(tup);

	GetUserIdAndSecContext(&save_user, &save_sec);
	SetUserIdAndSecContext(owner, save_sec | SECURITY_LOCAL_USERID_CHANGE);
	save_nest = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	PG_TRY();
	{
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		if (watch)
		{
			List	   *tables;
			ListCell   *lc;

			/* a parent's lock covers its partitions and children too */
			run_command(psprintf("LOCK TABLE %s IN SHARE MODE", qualified));
			tables = tables_to_watch(rel, TABLES_UNDER_SQL);
			foreach(lc, tables)
			{
				Oid			t = lfirst_oid(lc);
				const char *name = quote_qualified_identifier(get_namespace_name(get_rel_namespace(t)),
															  get_rel_name(t));

				/* the one statement trigger of 0.1.0 marked no-op statements stale too */
				if (has_trigger(t, "tg_bmmq_stale"))
					run_command(psprintf("DROP TRIGGER tg_bmmq_stale ON %s", name));
				for (int i = 0; i < lengthof(stale_triggers); i++)
					if (!has_trigger(t, stale_triggers[i][0]))
						run_command(psprintf("CREATE TRIGGER %s %s FOR EACH STATEMENT "
											 "EXECUTE FUNCTION terra_gpu.bmmq_mark_stale()",
											 stale_triggers[i][0],
											 psprintf(stale_triggers[i][1], name)));
			}
		}
		else
		{
			List	   *tables = tables_to_watch(rel, TABLES_UNWATCHED_SQL);
			ListCell   *lc;

			foreach(lc, tables)
			{
				Oid			t = lfirst_oid(lc);
				const char *name = quote_qualified_identifier(get_namespace_name(get_rel_namespace(t)),
															  get_rel_name(t));

				if (!pg_class_ownercheck(t, caller))
					continue;
				for (int i = 0; i < lengthof(stale_triggers); i++)
					if (has_trigger(t, stale_triggers[i][0]))
						run_command(psprintf("DROP TRIGGER %s ON %s", stale_triggers[i][0], name));
			}
		}
		SPI_finish();
	}
	PG_FINALLY();
	{
		AtEOXact_GUC(true, save_nest);
		SetUserIdAndSecContext(save_user, save_sec);
	}
	PG_END_TRY();
	PG_RETURN_VOID();
}

/* ------------------------------------------------------------------------
 * Row security of the index tables: what of an index a role may see
 * ------------------------------------------------------------------------ */

/*
 * terra_gpu._bmmq_readable(source, rast_column, id_column): may the caller
 * read the tiles an index was built from, i.e. SELECT both columns (a table
 * grant or column grants)?  NULL when the table or a column is gone.
 */
PG_FUNCTION_INFO_V1(tgpg_bmmq_readable);
Datum
tgpg_bmmq_readable(PG_FUNCTION_ARGS)
{
	Oid			rel = PG_GETARG_OID(0);
	Oid			caller = GetUserId();
	AttrNumber	rast;
	AttrNumber	id;

	if (get_rel_name(rel) == NULL)
		PG_RETURN_NULL();
	rast = get_attnum(rel, NameStr(*PG_GETARG_NAME(1)));
	id = get_attnum(rel, NameStr(*PG_GETARG_NAME(2)));
	if (rast == InvalidAttrNumber || id == InvalidAttrNumber)
		PG_RETURN_NULL();
	PG_RETURN_BOOL(pg_class_aclcheck(rel, caller, ACL_SELECT) == ACLCHECK_OK ||
				   (pg_attribute_aclcheck(rel, rast, caller, ACL_SELECT) == ACLCHECK_OK &&
					pg_attribute_aclcheck(rel, id, caller, ACL_SELECT) == ACLCHECK_OK));
}

/*
 * What one statement has learnt of an index: whether the caller sees none of
 * its tiles, all of them, or those whose ids the source table shows it
 * under its row security policies.
 */
typedef enum
{
	TILES_NONE,
	TILES_ALL,
	TILES_LISTED
} tiles_seen;

typedef struct index_view
{
	int64		index_id;
	tiles_seen	seen;
	HTAB	   *ids;			/* TILES_LISTED: the visible tile ids */
} index_view;

typedef struct index_views
{
	int			n;
	index_view	views[8];		/* a statement reads few indexes; beyond, the oldest is forgotten */
} index_views;

static void
learn_index_view(index_view *v, MemoryContext cxt)
{
	Datum		arg = Int64GetDatum(v->index_id);
	Oid			type = INT8OID;
	Oid			source;
	char	   *rast_col;
	char	   *id_col;
	bool		isnull;

	v->seen = TILES_NONE;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	/* as the caller: the catalog's own policy hides indexes of tables the caller may not read */
	if (SPI_execute_with_args("SELECT source::pg_catalog.oid, rast_column::pg_catalog.text, id_column::pg_catalog.text "
							  "FROM terra_gpu.bmmq_index WHERE id = $1",
							  1, &type, &arg, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read BMMQ index %lld", (long long) v->index_id);
	if (SPI_processed == 1)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;

		source = DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull));
		rast_col = SPI_getvalue(tup, desc, 2);
		id_col = SPI_getvalue(tup, desc, 3);
		if (get_rel_name(source) == NULL)
			v->seen = TILES_ALL;	/* the source is gone: only its owner sees the index, to drop it */
		else if (check_enable_rls(source, InvalidOid, true) != RLS_ENABLED)
			v->seen = TILES_ALL;
		else
		{
			/* the source's policies decide, through a query of the caller's */
			char	   *query;
			HASHCTL		ctl;

			tgpg_check_column(source, id_col, TGPG_COLUMN_ID, "id_column");
			query = psprintf("SELECT %s::pg_catalog.int8 FROM %s WHERE %s IS NOT NULL",
							 quote_identifier(id_col),
							 quote_qualified_identifier(get_namespace_name(get_rel_namespace(source)),
														get_rel_name(source)),
							 quote_identifier(rast_col));
			if (SPI_execute(query, true, 0) != SPI_OK_SELECT)
				elog(ERROR, "could not read the tile ids of BMMQ index %lld", (long long) v->index_id);
			memset(&ctl, 0, sizeof ctl);
			ctl.keysize = sizeof(int64);
			ctl.entrysize = sizeof(int64);
			ctl.hcxt = cxt;
			v->ids = hash_create("terra_gpu visible tiles", Max(SPI_processed, 16), &ctl,
								 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
			for (uint64 i = 0; i < SPI_processed; i++)
			{
				int64		id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1,
															 &isnull));

				if (!isnull)
					(void) hash_search(v->ids, &id, HASH_ENTER, NULL);
			}
			v->seen = TILES_LISTED;
		}
	}
	SPI_finish();
}

/*
 * terra_gpu._bmmq_tile_visible(index_id, tile_id): the row security policy
 * of the index's tiles and nodes.  A role sees the quadrants of a tile only
 * if it sees the index and may read the tile itself: where the source table
 * has row security that applies to the caller, the tile ids it shows the
 * caller are read once per statement.
 */
PG_FUNCTION_INFO_V1(tgpg_bmmq_tile_visible);
Datum
tgpg_bmmq_tile_visible(PG_FUNCTION_ARGS)
{
	int64		index_id = PG_GETARG_INT64(0);
	int64		tile_id = PG_GETARG_INT64(1);
	index_views *views = fcinfo->flinfo->fn_extra;
	index_view *v = NULL;

	if (views == NULL)
		views = fcinfo->flinfo->fn_extra = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(index_views));
	for (int i = 0; i < views->n && v == NULL; i++)
		if (views->views[i].index_id == index_id)
			v = &views->views[i];
	if (v == NULL)
	{
		if (views->n == lengthof(views->views))
		{
			if (views->views[0].ids)
				hash_destroy(views->views[0].ids);
			memmove(&views->views[0], &views->views[1], sizeof(index_view) * (views->n - 1));
			views->n--;
		}
		v = &views->views[views->n];
		memset(v, 0, sizeof *v);
		v->index_id = index_id;
		learn_index_view(v, fcinfo->flinfo->fn_mcxt);
		views->n++;
	}
	switch (v->seen)
	{
		case TILES_ALL:
			PG_RETURN_BOOL(true);
		case TILES_LISTED:
			PG_RETURN_BOOL(hash_search(v->ids, &tile_id, HASH_FIND, NULL) != NULL);
		default:
			PG_RETURN_BOOL(false);
	}
}
