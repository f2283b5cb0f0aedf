/*
 * tgpg_recipe.c — what the coverage calls of a backend read, for the recipe
 * tg_create_result records of a product (tg_refresh).
 */
#include "tgpg.h"

#include "funcapi.h"
#include "utils/builtins.h"
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
} coverage_read;

static List *coverage_reads = NIL;	/* in TopMemoryContext */

void
tgpg_remember_read(Oid relid, const char *rast_column, const char *id_column, const char *function, int halo)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
	coverage_read *r = palloc0(sizeof *r);

	r->relid = relid;
	namestrcpy(&r->rast_column, rast_column);
	namestrcpy(&r->id_column, id_column ? id_column : "");
	strlcpy(r->function, function, sizeof r->function);
	r->halo = halo;
	coverage_reads = lappend(coverage_reads, r);
	MemoryContextSwitchTo(old);
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
		Datum		values[5];
		bool		nulls[5] = {false, false, false, false, false};

		values[0] = ObjectIdGetDatum(r->relid);
		values[1] = NameGetDatum(&r->rast_column);
		values[2] = NameGetDatum(&r->id_column);
		nulls[2] = NameStr(r->id_column)[0] == '\0';
		values[3] = CStringGetTextDatum(r->function);
		values[4] = Int32GetDatum(r->halo);
		nulls[4] = r->halo < 0;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	if (PG_GETARG_BOOL(0))
	{
		list_free_deep(coverage_reads);
		coverage_reads = NIL;
	}
	return (Datum) 0;
}

