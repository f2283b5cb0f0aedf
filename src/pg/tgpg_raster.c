/*
 * tgpg_raster.c — a raster Datum opened for the core codec (the BMMQ
 * functions read tiles this way; the terrain functions go through
 * tgpg_tiles.c).
 *
 * A serialized raster is a varlena whose 4-byte length word is the format's
 * "size" field, so the detoasted pointer and VARSIZE are exactly what the
 * core reader takes.
 */
#include "tgpg.h"


void
tgpg_raster_open(Datum datum, tgpg_raster *r)
{
	tg_error	err;

	r->value = PG_DETOAST_DATUM(datum);
	r->buf = (const uint8_t *) r->value;
	r->len = VARSIZE_ANY(r->value);
	tg_error_clear(&err);
	tgpg_check(tg_raster_read_info(r->buf, r->len, &r->info, &err), &err);
}

/* Band `band` (1-based) of an open raster; out-db bands are refused. */
void
tgpg_raster_band(const tgpg_raster *r, int band, tg_band *out)
{
	tg_error	err;

	tg_error_clear(&err);
	tgpg_check(tg_raster_read_band(r->buf, r->len, band - 1, out, &err), &err);
	if (out->offdb)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("band %d is an out-db band", band),
				 errdetail("Its pixels live in a file outside the database, which terra_gpu does not read."),
				 errhint("Load the raster in-db: raster2pgsql without -R.")));
}

void
tgpg_raster_close(tgpg_raster *r, Datum datum)
{
	if ((Pointer) r->value != DatumGetPointer(datum))
		pfree(r->value);
	r->value = NULL;
}

