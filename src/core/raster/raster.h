/*
 * raster.h — PostGIS raster values and the grids made of them (raster/):
 * the serialized format read and written in place (raster.c), the
 * compressed forms tiles travel in (tile_codec.c), each row's cell spacing
 * (geometry.c), and tiles read into grids and result tiles cut from planes
 * (tile_io.c).  Internal to the core and cuda/.
 *
 * A grid holds one input's band over the whole DEM grid (in memory) or a
 * strip of its rows as doubles (beyond memory); planes hold what an
 * operation computed, one per output band, over the same rows; tiles are
 * cut from the planes, each with its input tile's extent.
 */
#ifndef TG_RASTER_H
#define TG_RASTER_H

#include <float.h>
#include <math.h>

#include "runtime/runtime.h"

#ifdef __cplusplus
extern "C"
{
#endif

/* ------------------------------------------------------------------------
 * Pixel types, values and bands (raster.c)
 * ------------------------------------------------------------------------ */
bool		tg_pixtype_valid(int code);
int			tg_pixtype_size(tg_pixtype pt); /* bytes per stored pixel */
const char *tg_pixtype_name(tg_pixtype pt);
bool		tg_pixtype_is_float(tg_pixtype pt);
double		tg_pixtype_min_value(tg_pixtype pt);

/* Bytes a serialized raster of this shape takes, or TG_ELIMIT on overflow. */
tg_status	tg_raster_size(const tg_raster_info *info, const tg_band_spec *bands,
						   size_t *size, tg_error *err);

/*
 * Write header and band headers into buf (len bytes, from tg_raster_size) and
 * return in band_data[i] where band i's pixels go; the caller fills them.
 * The 4-byte length word is written as a plain uint32 `len`: a PostgreSQL
 * caller then sets its varlena header.  Padding bytes are zeroed.
 */
tg_status	tg_raster_write(uint8_t *buf, size_t len, const tg_raster_info *info,
							const tg_band_spec *bands, void **band_data,
							tg_error *err);

/*
 * Pixel `index` of a row-major array of stored pixels, as double (sub-byte
 * types masked to their bits), and the reverse (converted as C converts).
 */
double		tg_pixel_load(tg_pixtype pt, const void *pixels, size_t index);
void		tg_pixel_store(tg_pixtype pt, void *pixels, size_t index, double value);

/*
 * Pixels [from, from + count) of an array of `type` into pixels [to, to +
 * count) of a band of `spec`: NaN and, with has_marker, the marker become
 * the band's nodata; every other value is stored as tg_pixel_store stores it.
 */
void		tg_pixels_to_band(tg_pixtype type, const void *pixels, size_t from, bool has_marker,
							  double marker, const tg_band_spec *spec, void *dst, size_t to, int count);

/* Decode one row into doubles (or floats), nodata (and NaN) as NaN. */
void		tg_band_row_to_f64(const tg_band *band, int row, double *dst);
void		tg_band_row_to_f32(const tg_band *band, int row, float *dst);
/* The same for pixels [x0, x1) of the row, into dst[0 .. x1 - x0). */
void		tg_band_span_to_f64(const tg_band *band, int row, int x0, int x1, double *dst);

/* Does a float hold every value of this type exactly? */
bool		tg_pixtype_exact_in_f32(tg_pixtype pt);

/* The band as doubles, nodata (and NaN) as NaN; *z from ctx's allocator. */
tg_status	tg_band_decode(const tg_ctx *ctx, const tg_band *band, double **z, tg_error *err);

/*
 * Is a stored value nodata?  NaN always is.  Float types match the nodata
 * value within FLT_EPSILON (PostGIS' FLT_EQ), integer types exactly; a band
 * flagged "all nodata" has no valid cell.
 */
TG_HD bool
tg_is_nodata(double v, bool has_nodata, bool all_nodata, bool is_float,
			 double nodata)
{
	if (isnan(v))
		return true;
	if (!has_nodata)
		return false;
	if (all_nodata)
		return true;
	return is_float ? fabs(v - nodata) <= FLT_EPSILON : v == nodata;
}

/* ------------------------------------------------------------------------
 * Cell spacing (geometry.c)
 * ------------------------------------------------------------------------ */
/* East-west and north-south spacing of row `row`, and a cell's area. */
void		tg_row_spacing(const tg_grid_geometry *g, int row, double *dx, double *dy);

/* ------------------------------------------------------------------------
 * Compressed tiles (tile_codec.c)
 * ------------------------------------------------------------------------ */
/* dst receives exactly dst_size bytes; false on corrupt input. */
bool		tg_pglz_decompress(const uint8_t *src, size_t src_size, uint8_t *dst, size_t dst_size);
bool		tg_lz4_decompress(const uint8_t *src, size_t src_size, uint8_t *dst, size_t dst_size);

/* Room LZ4 may need for size bytes (0: too large), and the compressed size (0: failed). */
size_t		tg_lz4_bound(size_t size);
size_t		tg_lz4_compress(const uint8_t *src, size_t src_size, uint8_t *dst, size_t dst_capacity);

/* ------------------------------------------------------------------------
 * Tiles into grids, result tiles out (tile_io.c)
 * ------------------------------------------------------------------------ */
/* Largest operation output: tg_terrain writes 8 rasters, direction shares 8 bands. */
/* Neighbour k (ESRI order, clockwise from east): column and row offsets. */
TG_HD int
tg_nbr_dx(int k)
{
	return (k == 0 || k == 1 || k == 7) ? 1 : (k >= 3 && k <= 5) ? -1 : 0;
}

TG_HD int
tg_nbr_dy(int k)
{
	return (k >= 1 && k <= 3) ? 1 : (k >= 5 && k <= 7) ? -1 : 0;
}

#define TG_MAX_OUTPUTS 8
#define TG_MAX_OUTPUT_BANDS 8

/*
 * One input's values over the grid, or over rows [row0, row0 + nrows) as
 * doubles: every column, or (ncols > 0) columns [col0, col0 + ncols) only,
 * each row then ncols long.
 */
typedef struct tg_grid_band
{
	tg_band		band;			/* the grid's own band: the pixel type and nodata of the first
								 * tile read (its own nodata, else the type's minimum) */
	bool		typed;			/* a first tile gave the type */
	bool		as_rows;		/* strip of doubles (NaN = nodata) in rows */
	double	   *rows;
	int			row0;
	int			nrows;
	int			col0;
	int			ncols;
} tg_grid_band;

/*
 * Read every tile of `in` meeting rows [row0, row0 + nrows) into g: the whole
 * band (g->as_rows false: g->band.data is allocated here, cells no tile
 * covers are nodata) or the rows as doubles into g->rows (allocated by the
 * caller; the type is still decided by the first tile ever read).
 */
tg_status	tg_read_input(const tg_ctx *ctx, const tg_layout *grid, const tg_input *in,
						  tg_grid_band *g, int row0, int nrows, tg_error *err);

/* The height of a layout's tallest tile (0 without tiles). */
static inline int
tg_layout_tallest(const tg_layout *l)
{
	int			tallest = 0;

	for (int t = 0; t < l->ntiles; t++)
		tallest = l->tiles[t].height > tallest ? l->tiles[t].height : tallest;
	return tallest;
}
void		tg_grid_band_free(const tg_ctx *ctx, tg_grid_band *g);

/*
 * What an operation computed for one output band: values over rows
 * [row0, ...) of the grid, of type `type`; NaN (float planes) or `marker`
 * (integer planes with has_marker) stand for nodata.
 */
typedef struct tg_plane
{
	const void *data;
	tg_pixtype	type;
	bool		has_marker;
	double		marker;
} tg_plane;

typedef struct tg_output
{
	int			nbands;
	tg_band_spec specs[TG_MAX_OUTPUT_BANDS];
	tg_plane	planes[TG_MAX_OUTPUT_BANDS];
} tg_output;

/*
 * Cut the tiles lying in rows [row0, row0 + nrows) (all of them: 0 and the
 * grid's height) out of planes starting at row `row0`, encode them on the
 * call's threads and hand them to the writer in tile order.
 */
tg_status	tg_write_tiles(const tg_ctx *ctx, const tg_job *job, const tg_output *outs, int nout,
						   int row0, int nrows, tg_error *err);

/*
 * The same from planes of `width` columns starting at column col0: every
 * tile it writes (those of the rows the job wants) lies within them.
 */
tg_status	tg_write_window(const tg_ctx *ctx, const tg_job *job, const tg_output *outs, int nout,
							int row0, int nrows, int col0, int width, tg_error *err);

/* Say something about the run (job->notice), printf-style. */
void		tg_job_notice(const tg_job *job, const char *fmt,...) __attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif

#endif							/* TG_RASTER_H */
