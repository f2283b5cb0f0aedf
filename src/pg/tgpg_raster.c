/*
 * tgpg_raster.c — a raster Datum opened for the core codec (the BMMQ
 * functions read tiles this way; the terrain functions go through
 * tgpg_tiles.c), and the headers of tiles that tg_create_result's raster
 * constraints are computed from.
 *
 * A serialized raster is a varlena whose 4-byte length word is the format's
 * "size" field, so the detoasted pointer and VARSIZE are exactly what the
 * core reader takes.
 */
#include "tgpg.h"

#include "lib/stringinfo.h"
#include "utils/builtins.h"


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


/* ------------------------------------------------------------------------
 * What the raster constraints of a product are computed from (see
 * terra_gpu._add_raster_constraints), each read from the first bytes of a
 * value: a tile just written, held compressed, is decompressed only that far.
 * ------------------------------------------------------------------------ */

/* The value's first bytes, at most `bytes` of it, length word included. */
static struct varlena *
raster_prefix(Datum datum, int32 bytes)
{
	return PG_DETOAST_DATUM_SLICE(datum, 0, bytes - VARHDRSZ);
}

/* terra_gpu._raster_header(raster): the tile with its bands left out. */
PG_FUNCTION_INFO_V1(tgpg_raster_header);
Datum
tgpg_raster_header(PG_FUNCTION_ARGS)
{
	struct varlena *head = raster_prefix(PG_GETARG_DATUM(0), TG_RASTER_HEADER_SIZE);
	struct varlena *out = palloc(TG_RASTER_HEADER_SIZE);
	tg_error	err;

	tg_error_clear(&err);
	tgpg_check(tg_raster_empty_like((const uint8_t *) head, VARSIZE(head), (uint8_t *) out, &err), &err);
	SET_VARSIZE(out, TG_RASTER_HEADER_SIZE);
	PG_RETURN_POINTER(out);
}

/* The bands' three properties, a list each: "types|nodata values|storage". */
typedef struct band_lists
{
	StringInfoData types;
	StringInfoData nodata;
	StringInfoData storage;
} band_lists;

static void
append_band(band_lists *l, const tg_band *band)
{
	if (l->types.len > 0)
	{
		appendStringInfoChar(&l->types, ',');
		appendStringInfoChar(&l->nodata, ',');
		appendStringInfoChar(&l->storage, ',');
	}
	appendStringInfo(&l->types, "%d", (int) band->pixtype);
	if (band->has_nodata)
		appendStringInfo(&l->nodata, "%.17g", band->nodata);
	else
		appendStringInfoChar(&l->nodata, '-');
	appendStringInfoString(&l->storage, band->offdb ? "outdb" : "indb");
}

/*
 * terra_gpu._raster_bands(raster): the bands' pixel type codes, nodata values
 * and storage, ',' between bands and '|' between the three lists: tiles with
 * the same list have bands alike in that.  A one-band tile is read as far as
 * its band header, others in full.
 */
PG_FUNCTION_INFO_V1(tgpg_raster_bands);
Datum
tgpg_raster_bands(PG_FUNCTION_ARGS)
{
	Datum		datum = PG_GETARG_DATUM(0);
	struct varlena *head = raster_prefix(datum, TG_RASTER_BAND1_HEADER_END);
	tg_raster_info info;
	tg_band		band;
	tg_error	err;
	band_lists	l;

	tg_error_clear(&err);
	initStringInfo(&l.types);
	initStringInfo(&l.nodata);
	initStringInfo(&l.storage);
	tgpg_check(tg_raster_read_info((const uint8_t *) head, VARSIZE(head), &info, &err), &err);
	if (info.num_bands == 1)
	{
		tgpg_check(tg_raster_read_band_header((const uint8_t *) head, VARSIZE(head), &band, &err), &err);
		append_band(&l, &band);
	}
	else if (info.num_bands > 1)
	{
		struct varlena *whole = PG_DETOAST_DATUM(datum);

		for (int i = 0; i < info.num_bands; i++)
		{
			tgpg_check(tg_raster_read_band((const uint8_t *) whole, VARSIZE(whole), i, &band, &err), &err);
			append_band(&l, &band);
		}
	}
	appendStringInfo(&l.types, "|%s|%s", l.nodata.data, l.storage.data);
	PG_RETURN_TEXT_P(cstring_to_text_with_len(l.types.data, l.types.len));
}
