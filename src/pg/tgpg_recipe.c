/*
 * tgpg_recipe.c — what the coverage calls of a backend read, for the recipe
 * tg_create_result records of a product (tg_refresh), the tiles a refresh
 * has a coverage call read and give back, and the digests of a product's
 * rows.
 */
#include "tgpg.h"

#include "access/detoast.h"
#include "access/tupmacs.h"
#include "catalog/pg_type.h"
#include "common/cryptohash.h"
#include "common/sha2.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

/* ------------------------------------------------------------------------
 * What the coverage calls of this backend read (tg_create_result records a
 * product's recipe from it): one entry per table read by a finished call.
 * ------------------------------------------------------------------------ */
typedef struct coverage_read
{
	Oid			relid;
	NameData	rast_column;
	NameData	id_column;		/* empty: none */
	char		function[NAMEDATALEN];
	int			halo;			/* of the DEM (input 0): tg_op_halo; -1 for the others */
	int64	   *reach;			/* the ids of the tiles its result reads (tg_op_reach) */
	int			nreach;			/* of them; -1: it may read any */
} coverage_read;

static List *coverage_reads = NIL;	/* in TopMemoryContext */

void
tgpg_remember_read(Oid relid, const char *rast_column, const char *id_column, const char *function,
				   const tg_op *op, const tg_layout *l)
{
	MemoryContext old;
	coverage_read *r;
	bool	   *in_reach;

	/* a recipe is of one read: a second says there were several, a third adds nothing */
	if (list_length(coverage_reads) >= 2)
		return;
	old = MemoryContextSwitchTo(TopMemoryContext);
	r = palloc0(sizeof *r);
	r->relid = relid;
	namestrcpy(&r->rast_column, rast_column);
	namestrcpy(&r->id_column, id_column ? id_column : "");
	strlcpy(r->function, function, sizeof r->function);
	r->halo = op ? tg_op_halo(op) : -1;
	r->nreach = -1;
	in_reach = palloc(sizeof(bool) * (l->ntiles + 1));
	if (op && tg_op_reach(op, l, in_reach))
	{
		r->reach = palloc(sizeof(int64) * (l->ntiles + 1));
		r->nreach = 0;
		for (int t = 0; t < l->ntiles; t++)
			if (in_reach[t])
				r->reach[r->nreach++] = l->tiles[t].id;
	}
	pfree(in_reach);
	coverage_reads = lappend(coverage_reads, r);
	MemoryContextSwitchTo(old);
}

static void
forget_reads(void)
{
	ListCell   *lc;

	foreach(lc, coverage_reads)
	{
		coverage_read *r = lfirst(lc);

		if (r->reach)
			pfree(r->reach);
	}
	list_free_deep(coverage_reads);
	coverage_reads = NIL;
}

/*
 * terra_gpu._coverage_reads(reset): the tables the coverage calls of this
 * backend read since the last reset, in the order they ran; with reset,
 * forgets them after listing.
 */
PG_FUNCTION_INFO_V1(tgpg_coverage_reads);
Datum
tgpg_coverage_reads(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, 0);
	foreach(lc, coverage_reads)
	{
		coverage_read *r = lfirst(lc);
		Datum		values[6];
		bool		nulls[6] = {false, false, false, false, false, false};

		values[0] = ObjectIdGetDatum(r->relid);
		values[1] = NameGetDatum(&r->rast_column);
		values[2] = NameGetDatum(&r->id_column);
		nulls[2] = NameStr(r->id_column)[0] == '\0';
		values[3] = CStringGetTextDatum(r->function);
		values[4] = Int32GetDatum(r->halo);
		nulls[4] = r->halo < 0;
		nulls[5] = r->nreach < 0;
		if (r->nreach >= 0)
		{
			Datum	   *ids = palloc(sizeof(Datum) * (r->nreach + 1));

			for (int k = 0; k < r->nreach; k++)
				ids[k] = Int64GetDatum(r->reach[k]);
			values[5] = PointerGetDatum(construct_array(ids, r->nreach, INT8OID, sizeof(int64), FLOAT8PASSBYVAL,
														TYPALIGN_DOUBLE));
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	if (PG_GETARG_BOOL(0))
		forget_reads();
	return (Datum) 0;
}

/* ------------------------------------------------------------------------
 * The tiles a refresh has a coverage form read and give back
 * ------------------------------------------------------------------------ */
/*
 * terra_gpu.coverage_tiles ("RELID:ID,ID,...[/ID,ID,...]", set by
 * tg_refresh): for the table RELID, the ids of the tiles a coverage form
 * reads and, after the slash, of those whose results it writes (every tile
 * it reads where none are given).  The setting is parsed as untrusted text:
 * only the integers read from it are used.  Returns whether it names the
 * table; reads gets the ids read as "1,2,3" (NULL: not wanted), writes (and
 * nwrites) those written (none: no slash).
 */
static bool
refresh_scope(Oid relid, const char *relname, const char *id_column, StringInfo reads, int64 **writes,
			  int *nwrites)
{
	const char *p = tgpg_coverage_tiles;
	char	   *end;
	unsigned long named;
	bool		writing = false;

	if (reads)
		initStringInfo(reads);
	*writes = NULL;
	*nwrites = 0;
	if (p == NULL || *p == '\0')
		return false;
	errno = 0;
	named = strtoul(p, &end, 10);
	if (errno != 0 || end == p || *end != ':' || named > PG_UINT32_MAX)
		goto bad;
	if ((Oid) named != relid)
		return false;
	if (id_column == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s has no tile id column to read some of its tiles by", relname)));
	p = end + 1;
	/* at most one id every two characters */
	*writes = palloc(sizeof(int64) * (strlen(p) / 2 + 1));
	while (*p != '\0')
	{
		long long	id;

		errno = 0;
		id = strtoll(p, &end, 10);
		if (errno != 0 || end == p || (*end != ',' && *end != '/' && *end != '\0') ||
			(*end == '/' && (writing || end[1] == '\0')))
			goto bad;
		if (writing)
			(*writes)[(*nwrites)++] = id;
		else if (reads)
			appendStringInfo(reads, "%s%lld", reads->len > 0 ? "," : "", id);
		writing |= *end == '/';
		p = *end != '\0' ? end + 1 : end;
	}
	return true;
bad:
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid value for terra_gpu.coverage_tiles"),
			 errdetail("It is RELID:ID,ID,... or RELID:ID,ID,.../ID,ID,... (integers), or empty.")));
	return false;				/* not reached */
}

char *
tgpg_refresh_scope(Oid relid, const char *relname, const char *id_column)
{
	StringInfoData reads;
	int64	   *writes;
	int			nwrites;

	if (!refresh_scope(relid, relname, id_column, &reads, &writes, &nwrites))
		return "";
	return psprintf(" AND %s = ANY ('{%s}'::pg_catalog.int8[])", quote_identifier(id_column), reads.data);
}

static int
int64_order(const void *a, const void *b)
{
	const int64 x = *(const int64 *) a,
				y = *(const int64 *) b;

	return (x > y) - (x < y);
}

bool *
tgpg_refresh_wanted(Oid relid, const char *relname, const char *id_column, const tg_layout *l)
{
	int64	   *ids;
	int			n;
	bool	   *wanted;

	if (!refresh_scope(relid, relname, id_column, NULL, &ids, &n) || n == 0)
		return NULL;
	qsort(ids, n, sizeof(int64), int64_order);
	wanted = palloc(sizeof(bool) * Max(l->ntiles, 1));
	for (int k = 0; k < l->ntiles; k++)
		wanted[k] = bsearch(&l->tiles[k].id, ids, n, sizeof(int64), int64_order) != NULL;
	pfree(ids);
	return wanted;
}

/* ------------------------------------------------------------------------
 * A digest of a product's row (its columns but the tile id), kept in the
 * product's catalog, so that a refresh finds the rows whose values changed
 * without reading the stored ones back.  A value is hashed as it is held:
 * a compressed one (the coverage forms' lz4 tiles, stored as they come) by
 * its compressed bytes, without decompressing it.  Equal digests mean equal
 * bytes, hence equal values; one value held once compressed and once not
 * gives two digests, which only makes the refresh rewrite that row.
 * ------------------------------------------------------------------------ */
static void
digest_update(pg_cryptohash_ctx *ctx, const void *data, size_t len)
{
	if (pg_cryptohash_update(ctx, data, len) < 0)
		elog(ERROR, "could not compute a row digest: %s", pg_cryptohash_error(ctx));
}

PG_FUNCTION_INFO_V1(tgpg_row_digest);
Datum
tgpg_row_digest(PG_FUNCTION_ARGS)
{
	pg_cryptohash_ctx *ctx = pg_cryptohash_create(PG_SHA256);
	uint8		out[PG_SHA256_DIGEST_LENGTH];
	bytea	   *result;

	if (ctx == NULL || pg_cryptohash_init(ctx) < 0)
		elog(ERROR, "could not start a row digest");
	for (int i = 0; i < PG_NARGS(); i++)
	{
		Oid			type = get_fn_expr_argtype(fcinfo->flinfo, i);
		int16		typlen;
		bool		byval;
		uint8		kind;		/* 0 NULL, 1 plain bytes, 2 compressed bytes */
		Datum		d;

		if (!OidIsValid(type))
			elog(ERROR, "could not determine the type of argument %d", i + 1);
		get_typlenbyval(type, &typlen, &byval);
		if (PG_ARGISNULL(i))
		{
			kind = 0;
			digest_update(ctx, &kind, 1);
			continue;
		}
		d = PG_GETARG_DATUM(i);
		if (typlen == -1)
		{
			struct varlena *v = (struct varlena *) DatumGetPointer(d);
			uint32		len;

			/* out of line: fetched, left compressed where it is */
			if (VARATT_IS_EXTERNAL(v))
				v = detoast_external_attr(v);
			kind = VARATT_IS_COMPRESSED(v) ? 2 : 1;
			len = kind == 2 ? VARSIZE(v) - VARHDRSZ : VARSIZE_ANY_EXHDR(v);
			digest_update(ctx, &kind, 1);
			digest_update(ctx, &len, sizeof len);
			digest_update(ctx, kind == 2 ? VARDATA(v) : VARDATA_ANY(v), len);
		}
		else if (typlen == -2)
		{
			const char *s = DatumGetCString(d);
			uint32		len = strlen(s);

			kind = 1;
			digest_update(ctx, &kind, 1);
			digest_update(ctx, &len, sizeof len);
			digest_update(ctx, s, len);
		}
		else
		{
			char		buf[sizeof(Datum)];
			const void *p = DatumGetPointer(d);

			if (byval)
			{
				store_att_byval(buf, d, typlen);
				p = buf;
			}
			kind = 1;
			digest_update(ctx, &kind, 1);
			digest_update(ctx, p, typlen);
		}
	}
	if (pg_cryptohash_final(ctx, out, sizeof out) < 0)
		elog(ERROR, "could not finish a row digest: %s", pg_cryptohash_error(ctx));
	pg_cryptohash_free(ctx);
	result = palloc(VARHDRSZ + sizeof out);
	SET_VARSIZE(result, VARHDRSZ + sizeof out);
	memcpy(VARDATA(result), out, sizeof out);
	PG_RETURN_BYTEA_P(result);
}
