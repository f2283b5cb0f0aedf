/*
 * tgpg_raster.c — raster Datums in and out of the core codec.
 *
 * A serialized raster is a varlena whose 4-byte length word is the format's
 * "size" field, so the detoasted pointer and VARSIZE are exactly what the
 * core reader takes.
 */
#include "tgpg.h"

#include <math.h>

#include "executor/spi.h"
#include "utils/memutils.h"

/* Header only: a 64-byte slice, no full detoast of a large value. */
void
tgpg_raster_header(Datum datum, tg_raster_info *info)
{
	struct varlena *slice = PG_DETOAST_DATUM_SLICE(datum, 0, TG_RASTER_HEADER_SIZE - VARHDRSZ);
	tg_error	err;

	tg_error_clear(&err);
	tgpg_check(tg_raster_read_info((const uint8_t *) slice, VARSIZE_ANY(slice), info, &err), &err);
}

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

/* Refuse, before any work, a result that could not be a raster value. */
void
tgpg_check_result_size(const tg_raster_info *info, const tg_band_spec *bands)
{
	tg_error	err;
	size_t		size = 0;

	tg_error_clear(&err);
	if (tg_raster_size(info, bands, &size, &err) == TG_ELIMIT || size > MaxAllocSize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("result raster of %u x %u pixels would exceed the 1 GB a raster value can hold",
						info->width, info->height),
				 errhint("Tile the raster (raster2pgsql -t 256x256) and process the tiles.")));
	tgpg_check(err.code, &err);
}

/*
 * A new raster value with this header and these band types; band_data[i]
 * receives where band i's pixels are to be written.
 */
struct varlena *
tgpg_raster_create(const tg_raster_info *info, const tg_band_spec *bands,
				   void **band_data)
{
	struct varlena *result;
	tg_error	err;
	size_t		size = 0;

	tgpg_check_result_size(info, bands);
	tg_error_clear(&err);
	tgpg_check(tg_raster_size(info, bands, &size, &err), &err);

	result = palloc_extended(size, MCXT_ALLOC_NO_OOM);
	if (result == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory"),
				 errdetail("Failed on a request of size %zu for the result raster.", size)));

	tgpg_check(tg_raster_write((uint8_t *) result, size, info, bands, band_data, &err), &err);
	SET_VARSIZE(result, size);
	return result;
}

tgpg_grid
tgpg_raster_grid(const tg_raster_info *info)
{
	tgpg_grid	g = {info->width, info->height, info->geo};

	return g;
}

/*
 * The result value of a value-form call: the input's header with out's
 * bands; out->data then points at the value's pixels for the compute.
 */
struct varlena *
tgpg_raster_result(const tg_raster_info *in, tgpg_grid_raster *out)
{
	tg_raster_info info = *in;

	info.num_bands = out->nbands;
	return tgpg_raster_create(&info, out->specs, out->data);
}

/* Refuse a raster (`what`, e.g. "weight raster") not on the DEM's grid, saying how. */
void
tgpg_check_aligned(const tg_raster_info *dem, const tg_raster_info *w, const char *what)
{
	const tg_georef *a = &dem->geo,
			   *b = &w->geo;
	double		tol = 1e-9 * fmax(fabs(a->scale_x), fabs(a->scale_y));

	if (w->width != dem->width || w->height != dem->height)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s is not aligned with the DEM", what),
				 errdetail("The %s is %u x %u pixels, the DEM %u x %u.", what,
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

/*
 * The cell (0-based column, row) of a point on a grid: 22023 when it is not a
 * point, has another SRID or lies outside the grid.  type: the geometry
 * type's OID (PostGIS' types have no fixed OIDs).
 */
void
tgpg_point_cell(Datum point, Oid type, const tgpg_grid *grid, const char *what, int *col, int *row)
{
	const tg_georef *g = &grid->geo;
	Datum		values[1] = {point};
	char	   *gtype;
	int32		srid;
	double		x,
				y,
				det,
				dx,
				dy,
				fc,
				fr;
	bool		isnull;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "could not connect to SPI");
	/* CASE, not WHERE: ST_X of a non-point raises even in a branch not taken */
	if (SPI_execute_with_args("SELECT GeometryType($1), ST_SRID($1), "
							  "CASE WHEN GeometryType($1) = 'POINT' AND NOT ST_IsEmpty($1) THEN ST_X($1) END, "
							  "CASE WHEN GeometryType($1) = 'POINT' AND NOT ST_IsEmpty($1) THEN ST_Y($1) END",
							  1, &type, values, NULL, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not read the %s", what);
	gtype = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	srid = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	x = DatumGetFloat8(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull));
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be a point, got %s%s", what, gtype ? gtype : "NULL",
						gtype && strcmp(gtype, "POINT") == 0 ? " EMPTY" : "")));
	y = DatumGetFloat8(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 4, &isnull));
	SPI_finish();
	if (srid != g->srid)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s has SRID %d, the raster %d", what, srid, g->srid),
				 errhint("ST_Transform the %s to the raster's SRID.", what)));
	/* the inverse of the affine georeference */
	det = g->scale_x * g->scale_y - g->skew_x * g->skew_y;
	dx = x - g->upperleft_x;
	dy = y - g->upperleft_y;
	fc = floor((dx * g->scale_y - dy * g->skew_x) / det);
	fr = floor((dy * g->scale_x - dx * g->skew_y) / det);
	if (!(fc >= 0 && fc < grid->width && fr >= 0 && fr < grid->height))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s POINT(%.10g %.10g) is outside the raster", what, x, y)));
	*col = (int) fc;
	*row = (int) fr;
}
