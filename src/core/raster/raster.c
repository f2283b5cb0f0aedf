/*
 * raster.c — reader and writer for PostGIS' serialized raster (RFC1, v0).
 *
 * Layout (host byte order, as PostGIS stores it):
 *   header, 64 bytes: uint32 length word, uint16 version (0), uint16 band
 *     count, 6 doubles (scale x/y, upper-left x/y, skew x/y), int32 srid,
 *     uint16 width, uint16 height;
 *   per band: 1 byte pixtype|flags, padding to the pixel size, the nodata
 *     value (one pixel), then either width*height pixels (in-db) or a band
 *     number byte and a NUL-terminated path (out-db); padding to 8 bytes.
 * Sub-byte types (1BB, 2BUI, 4BUI) take one byte per pixel.
 *
 * Unlike PostGIS' own deserializer this one trusts nothing: every offset is
 * checked against the value's length before it is read.
 */
#include "raster/raster.h"

#include <float.h>
#include <math.h>
#include <string.h>

#define FLAG_OFFDB		0x80
#define FLAG_HASNODATA	0x40
#define FLAG_ISNODATA	0x20
#define PIXTYPE_MASK	0x0F

bool
tg_pixtype_valid(int code)
{
	return (code >= TG_PT_1BB && code <= TG_PT_32BUI) ||
		code == TG_PT_32BF || code == TG_PT_64BF;
}

int
tg_pixtype_size(tg_pixtype pt)
{
	switch (pt)
	{
		case TG_PT_1BB:
		case TG_PT_2BUI:
		case TG_PT_4BUI:
		case TG_PT_8BSI:
		case TG_PT_8BUI:
			return 1;
		case TG_PT_16BSI:
		case TG_PT_16BUI:
			return 2;
		case TG_PT_32BSI:
		case TG_PT_32BUI:
		case TG_PT_32BF:
			return 4;
		case TG_PT_64BF:
			return 8;
	}
	return 0;
}

const char *
tg_pixtype_name(tg_pixtype pt)
{
	switch (pt)
	{
		case TG_PT_1BB:
			return "1BB";
		case TG_PT_2BUI:
			return "2BUI";
		case TG_PT_4BUI:
			return "4BUI";
		case TG_PT_8BSI:
			return "8BSI";
		case TG_PT_8BUI:
			return "8BUI";
		case TG_PT_16BSI:
			return "16BSI";
		case TG_PT_16BUI:
			return "16BUI";
		case TG_PT_32BSI:
			return "32BSI";
		case TG_PT_32BUI:
			return "32BUI";
		case TG_PT_32BF:
			return "32BF";
		case TG_PT_64BF:
			return "64BF";
	}
	return "unknown";
}

bool
tg_pixtype_is_float(tg_pixtype pt)
{
	return pt == TG_PT_32BF || pt == TG_PT_64BF;
}

/* The smallest value a pixel type holds (PostGIS uses it as a default nodata). */
double
tg_pixtype_min_value(tg_pixtype pt)
{
	switch (pt)
	{
		case TG_PT_8BSI:
			return -128.0;
		case TG_PT_16BSI:
			return -32768.0;
		case TG_PT_32BSI:
			return -2147483648.0;
		case TG_PT_32BF:
			return -FLT_MAX;
		case TG_PT_64BF:
			return -DBL_MAX;
		default:
			return 0.0;
	}
}

double
tg_georef_pixel_width(const tg_georef *g)
{
	return sqrt(g->scale_x * g->scale_x + g->skew_y * g->skew_y);
}

double
tg_georef_pixel_height(const tg_georef *g)
{
	return sqrt(g->scale_y * g->scale_y + g->skew_x * g->skew_x);
}

/* ------------------------------------------------------------------------
 * Reading
 * ------------------------------------------------------------------------ */

/* Unaligned-safe loads: the buffer may come from anywhere (fuzzers, slices). */
static uint16_t
load_u16(const uint8_t *p)
{
	uint16_t	v;

	memcpy(&v, p, sizeof v);
	return v;
}

static double
load_f64(const uint8_t *p)
{
	double		v;

	memcpy(&v, p, sizeof v);
	return v;
}

/*
 * Pixels [from, from + count) as doubles, and doubles into pixels: one loop
 * per stored type, the switch outside it (result tiles convert every cell).
 */
#define LOAD_PIXELS(T, VALUE)												\
	do {																\
		const uint8_t *p_ = (const uint8_t *) pixels + from * sizeof(T);	\
		for (int x_ = 0; x_ < count; x_++)								\
		{																\
			T			raw_;											\
			memcpy(&raw_, p_ + (size_t) x_ * sizeof(T), sizeof(T));		\
			out[x_] = (double) (VALUE);									\
		}																\
	} while (0)

#define STORE_PIXELS(T, CAST)												\
	do {																\
		uint8_t    *p_ = (uint8_t *) pixels + to * sizeof(T);				\
		for (int x_ = 0; x_ < count; x_++)								\
		{																\
			const T		v_ = (T) CAST in[x_];							\
			memcpy(p_ + (size_t) x_ * sizeof(T), &v_, sizeof(T));		\
		}																\
	} while (0)

static void
load_pixels(tg_pixtype pt, const void *pixels, size_t from, int count, double *out)
{
	switch (pt)
	{
		case TG_PT_1BB: LOAD_PIXELS(uint8_t, raw_ & 0x01); return;
		case TG_PT_2BUI: LOAD_PIXELS(uint8_t, raw_ & 0x03); return;
		case TG_PT_4BUI: LOAD_PIXELS(uint8_t, raw_ & 0x0F); return;
		case TG_PT_8BSI: LOAD_PIXELS(int8_t, raw_); return;
		case TG_PT_8BUI: LOAD_PIXELS(uint8_t, raw_); return;
		case TG_PT_16BSI: LOAD_PIXELS(int16_t, raw_); return;
		case TG_PT_16BUI: LOAD_PIXELS(uint16_t, raw_); return;
		case TG_PT_32BSI: LOAD_PIXELS(int32_t, raw_); return;
		case TG_PT_32BUI: LOAD_PIXELS(uint32_t, raw_); return;
		case TG_PT_32BF: LOAD_PIXELS(float, raw_); return;
		case TG_PT_64BF: LOAD_PIXELS(double, raw_); return;
	}
	for (int x = 0; x < count; x++)
		out[x] = NAN;
}

static void
store_pixels(tg_pixtype pt, void *pixels, size_t to, int count, const double *in)
{
	switch (pt)
	{
		case TG_PT_1BB:
		case TG_PT_2BUI:
		case TG_PT_4BUI:
		case TG_PT_8BUI: STORE_PIXELS(uint8_t, ); return;
		case TG_PT_8BSI: STORE_PIXELS(uint8_t, (int8_t)); return;
		case TG_PT_16BSI: STORE_PIXELS(int16_t, ); return;
		case TG_PT_16BUI: STORE_PIXELS(uint16_t, ); return;
		case TG_PT_32BSI: STORE_PIXELS(int32_t, ); return;
		case TG_PT_32BUI: STORE_PIXELS(uint32_t, ); return;
		case TG_PT_32BF: STORE_PIXELS(float, ); return;
		case TG_PT_64BF: STORE_PIXELS(double, ); return;
	}
}

double
tg_pixel_load(tg_pixtype pt, const void *pixels, size_t index)
{
	double		v;

	load_pixels(pt, pixels, index, 1, &v);
	return v;
}

void
tg_pixel_store(tg_pixtype pt, void *pixels, size_t index, double v)
{
	store_pixels(pt, pixels, index, 1, &v);
}

void
tg_pixels_to_band(tg_pixtype type, const void *pixels, size_t from, bool has_marker, double marker,
				  const tg_band_spec *spec, void *dst, size_t to, int count)
{
	double		chunk[256];

	for (int done = 0; done < count; done += 256)
	{
		const int	n = count - done < 256 ? count - done : 256;

		load_pixels(type, pixels, from + done, n, chunk);
		for (int x = 0; x < n; x++)
			if (isnan(chunk[x]) || (has_marker && chunk[x] == marker))
				chunk[x] = spec->nodata;
		store_pixels(spec->pixtype, dst, to + done, n, chunk);
	}
}

tg_status
tg_raster_read_info(const uint8_t *buf, size_t len, tg_raster_info *info,
					tg_error *err)
{
	uint16_t	version;

	if (buf == NULL || len < TG_RASTER_HEADER_SIZE)
		return tg_error_set(err, TG_EDATA,
							"raster value is truncated: %zu bytes, the header alone takes %d",
							buf ? len : 0, TG_RASTER_HEADER_SIZE);

	version = load_u16(buf + 4);
	if (version != 0)
		return tg_error_set(err, TG_EDATA,
							"unsupported raster serialization version %u (expected 0)",
							(unsigned) version);

	memset(info, 0, sizeof *info);
	info->num_bands = load_u16(buf + 6);
	info->geo.scale_x = load_f64(buf + 8);
	info->geo.scale_y = load_f64(buf + 16);
	info->geo.upperleft_x = load_f64(buf + 24);
	info->geo.upperleft_y = load_f64(buf + 32);
	info->geo.skew_x = load_f64(buf + 40);
	info->geo.skew_y = load_f64(buf + 48);
	memcpy(&info->geo.srid, buf + 56, 4);
	info->width = load_u16(buf + 60);
	info->height = load_u16(buf + 62);
	return TG_OK;
}

/*
 * Parse the band starting at offset `at`; on success *next is the offset of
 * the following band.  Nothing beyond len is ever read.  header_only: the
 * value may end after the band's header (its pixels are not located: data is
 * NULL and *next is not set).
 */
static tg_status
parse_band(const uint8_t *buf, size_t len, const tg_raster_info *info,
		   int index, size_t at, bool header_only, tg_band *band, size_t *next,
		   tg_error *err)
{
	uint8_t		flags;
	int			code;
	int			pixbytes;
	size_t		pos = at;

	if (pos >= len)
		return tg_error_set(err, TG_EDATA,
							"raster value is truncated: band %d starts at byte %zu of %zu",
							index + 1, pos, len);

	flags = buf[pos];
	code = flags & PIXTYPE_MASK;
	if (!tg_pixtype_valid(code))
		return tg_error_set(err, TG_EDATA,
							"band %d has an invalid pixel type code %d", index + 1, code);

	memset(band, 0, sizeof *band);
	band->pixtype = (tg_pixtype) code;
	band->offdb = (flags & FLAG_OFFDB) != 0;
	band->has_nodata = (flags & FLAG_HASNODATA) != 0;
	band->is_nodata = band->has_nodata && (flags & FLAG_ISNODATA) != 0;
	band->width = info->width;
	band->height = info->height;

	/* type byte plus padding (pixbytes in all), then the nodata pixel */
	pixbytes = tg_pixtype_size(band->pixtype);
	if (len - pos < (size_t) 2 * pixbytes)
		return tg_error_set(err, TG_EDATA,
							"raster value is truncated in the header of band %d",
							index + 1);
	pos += pixbytes;
	band->nodata = tg_pixel_load(band->pixtype, buf + pos, 0);
	pos += pixbytes;
	if (header_only)
		return TG_OK;

	if (band->offdb)
	{
		const uint8_t *path;
		const uint8_t *nul;

		/* band number byte, then a NUL-terminated path inside the value */
		if (pos >= len)
			return tg_error_set(err, TG_EDATA,
								"raster value is truncated in out-db band %d", index + 1);
		pos += 1;
		path = buf + pos;
		nul = pos < len ? memchr(path, '\0', len - pos) : NULL;
		if (nul == NULL)
			return tg_error_set(err, TG_EDATA,
								"out-db band %d has an unterminated file path", index + 1);
		pos += (size_t) (nul - path) + 1;
		band->data = NULL;
	}
	else
	{
		/* width and height are uint16: the product fits size_t comfortably */
		size_t		bytes = (size_t) info->width * info->height * (size_t) pixbytes;

		if (len - pos < bytes)
			return tg_error_set(err, TG_EDATA,
								"raster value is truncated: band %d needs %zu bytes of pixels at byte %zu, the value has %zu",
								index + 1, bytes, pos, len);
		band->data = buf + pos;
		pos += bytes;
	}

	/* trailing padding to an 8-byte boundary, possibly absent at the end */
	pos = (pos + 7) & ~(size_t) 7;
	*next = pos;
	return TG_OK;
}

tg_status
tg_raster_read_band(const uint8_t *buf, size_t len, int index, tg_band *band,
					tg_error *err)
{
	tg_raster_info info;
	size_t		at = TG_RASTER_HEADER_SIZE;
	tg_status	st;
	int			i;

	st = tg_raster_read_info(buf, len, &info, err);
	if (st != TG_OK)
		return st;
	if (index < 0 || index >= info.num_bands)
		return tg_error_set(err, TG_EINVAL,
							"band %d does not exist: the raster has %d band%s",
							index + 1, info.num_bands, info.num_bands == 1 ? "" : "s");

	for (i = 0; i <= index; i++)
	{
		st = parse_band(buf, len, &info, i, at, false, band, &at, err);
		if (st != TG_OK)
			return st;
	}
	return TG_OK;
}

tg_status
tg_raster_empty_like(const uint8_t *buf, size_t len, uint8_t out[TG_RASTER_HEADER_SIZE],
					 tg_error *err)
{
	tg_raster_info info;
	tg_status	st;

	st = tg_raster_read_info(buf, len, &info, err);
	if (st != TG_OK)
		return st;
	info.num_bands = 0;
	return tg_raster_write(out, TG_RASTER_HEADER_SIZE, &info, NULL, NULL, err);
}

tg_status
tg_raster_read_band_header(const uint8_t *buf, size_t len, tg_band *band,
						   tg_error *err)
{
	tg_raster_info info;
	tg_status	st;

	st = tg_raster_read_info(buf, len, &info, err);
	if (st != TG_OK)
		return st;
	if (info.num_bands == 0)
		return tg_error_set(err, TG_EINVAL, "band 1 does not exist: the raster has 0 bands");
	return parse_band(buf, len, &info, 0, TG_RASTER_HEADER_SIZE, true, band, NULL, err);
}

bool
tg_band_value_is_nodata(const tg_band *band, double value)
{
	return tg_is_nodata(value, band->has_nodata, band->is_nodata,
						tg_pixtype_is_float(band->pixtype), band->nodata);
}

double
tg_band_get(const tg_band *band, size_t i)
{
	return tg_pixel_load(band->pixtype, band->data, i);
}

/*
 * One loop per stored type: this runs for every cell of every CPU operation,
 * so the type switch stays outside it.  Same semantics as tg_band_get() and
 * tg_band_value_is_nodata(); DST is the destination's type (double, or float
 * where tg_pixtype_exact_in_f32() says every value fits).  Pixels [x0, x1)
 * of the row go to dst[0 .. x1 - x0).
 */
#define DECODE_ROW(DST, T, VALUE)											\
	do {																\
		T			raw_;												\
		const uint8_t *p_ = (const uint8_t *) band->data + base * sizeof(T); \
		for (x = x0; x < x1; x++)										\
		{																\
			double		v_;												\
			memcpy(&raw_, p_ + (size_t) x * sizeof(T), sizeof(T));		\
			v_ = (double) (VALUE);										\
			dst[x - x0] = tg_is_nodata(v_, band->has_nodata, false, is_float, band->nodata) \
				? (DST) NAN : (DST) v_;									\
		}																\
	} while (0)

#define DECODE_BAND_ROW(DST)												\
	do {																\
		const size_t base = (size_t) row * band->width;					\
		const bool	is_float = tg_pixtype_is_float(band->pixtype);		\
		int			x;													\
																		\
		if (band->is_nodata)											\
		{																\
			for (x = x0; x < x1; x++)									\
				dst[x - x0] = (DST) NAN;								\
			return;														\
		}																\
		switch (band->pixtype)											\
		{																\
			case TG_PT_1BB: DECODE_ROW(DST, uint8_t, raw_ & 0x01); break; \
			case TG_PT_2BUI: DECODE_ROW(DST, uint8_t, raw_ & 0x03); break; \
			case TG_PT_4BUI: DECODE_ROW(DST, uint8_t, raw_ & 0x0F); break; \
			case TG_PT_8BSI: DECODE_ROW(DST, int8_t, raw_); break;		\
			case TG_PT_8BUI: DECODE_ROW(DST, uint8_t, raw_); break;		\
			case TG_PT_16BSI: DECODE_ROW(DST, int16_t, raw_); break;	\
			case TG_PT_16BUI: DECODE_ROW(DST, uint16_t, raw_); break;	\
			case TG_PT_32BSI: DECODE_ROW(DST, int32_t, raw_); break;	\
			case TG_PT_32BUI: DECODE_ROW(DST, uint32_t, raw_); break;	\
			case TG_PT_32BF: DECODE_ROW(DST, float, raw_); break;		\
			case TG_PT_64BF: DECODE_ROW(DST, double, raw_); break;		\
		}																\
	} while (0)

void
tg_band_span_to_f64(const tg_band *band, int row, int x0, int x1, double *dst)
{
	DECODE_BAND_ROW(double);
}

void
tg_band_row_to_f64(const tg_band *band, int row, double *dst)
{
	tg_band_span_to_f64(band, row, 0, band->width, dst);
}

void
tg_band_row_to_f32(const tg_band *band, int row, float *dst)
{
	const int	x0 = 0,
				x1 = band->width;

	DECODE_BAND_ROW(float);
}

bool
tg_pixtype_exact_in_f32(tg_pixtype pt)
{
	return pt != TG_PT_32BSI && pt != TG_PT_32BUI && pt != TG_PT_64BF;
}

/* ------------------------------------------------------------------------
 * Writing
 * ------------------------------------------------------------------------ */

static size_t
band_bytes(const tg_raster_info *info, const tg_band_spec *spec)
{
	size_t		pixbytes = (size_t) tg_pixtype_size(spec->pixtype);
	size_t		bytes = 2 * pixbytes + (size_t) info->width * info->height * pixbytes;

	return (bytes + 7) & ~(size_t) 7;
}

tg_status
tg_raster_size(const tg_raster_info *info, const tg_band_spec *bands,
			   size_t *size, tg_error *err)
{
	size_t		total = TG_RASTER_HEADER_SIZE;
	int			i;

	for (i = 0; i < info->num_bands; i++)
	{
		if (!tg_pixtype_valid(bands[i].pixtype))
			return tg_error_set(err, TG_EINVAL, "invalid pixel type code %d for band %d",
								(int) bands[i].pixtype, i + 1);
		/* each band is < 2^35 bytes and there are < 2^16 bands: no overflow */
		total += band_bytes(info, &bands[i]);
	}
	if (total > UINT32_MAX)
		return tg_error_set(err, TG_ELIMIT,
							"raster of %u x %u pixels in %d bands would take %zu bytes",
							info->width, info->height, info->num_bands, total);
	*size = total;
	return TG_OK;
}

tg_status
tg_raster_write(uint8_t *buf, size_t len, const tg_raster_info *info,
				const tg_band_spec *bands, void **band_data, tg_error *err)
{
	size_t		need;
	size_t		pos = TG_RASTER_HEADER_SIZE;
	uint32_t	len32;
	uint16_t	u16;
	tg_status	st;
	int			i;

	st = tg_raster_size(info, bands, &need, err);
	if (st != TG_OK)
		return st;
	if (len < need)
		return tg_error_set(err, TG_EINVAL,
							"output buffer of %zu bytes is smaller than the %zu the raster needs",
							len, need);

	memset(buf, 0, need);
	len32 = (uint32_t) need;
	memcpy(buf, &len32, 4);
	/* version 0 stays zero */
	u16 = info->num_bands;
	memcpy(buf + 6, &u16, 2);
	memcpy(buf + 8, &info->geo.scale_x, 8);
	memcpy(buf + 16, &info->geo.scale_y, 8);
	memcpy(buf + 24, &info->geo.upperleft_x, 8);
	memcpy(buf + 32, &info->geo.upperleft_y, 8);
	memcpy(buf + 40, &info->geo.skew_x, 8);
	memcpy(buf + 48, &info->geo.skew_y, 8);
	memcpy(buf + 56, &info->geo.srid, 4);
	memcpy(buf + 60, &info->width, 2);
	memcpy(buf + 62, &info->height, 2);

	for (i = 0; i < info->num_bands; i++)
	{
		const tg_band_spec *spec = &bands[i];
		size_t		pixbytes = (size_t) tg_pixtype_size(spec->pixtype);
		uint8_t		flags = (uint8_t) spec->pixtype;

		if (spec->has_nodata)
			flags |= FLAG_HASNODATA;
		buf[pos] = flags;
		tg_pixel_store(spec->pixtype, buf + pos + pixbytes, 0,
					   spec->has_nodata ? spec->nodata : 0.0);
		band_data[i] = buf + pos + 2 * pixbytes;
		pos += band_bytes(info, spec);
	}
	return TG_OK;
}

typedef struct decode_job
{
	const tg_band *band;
	double	   *z;
} decode_job;

static tg_status
decode_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const decode_job *j = arg;

	for (int y = y0; y < y1; y++)
		tg_band_row_to_f64(j->band, y, j->z + (size_t) y * j->band->width);
	return TG_OK;
}

tg_status
tg_band_decode(const tg_ctx *ctx, const tg_band *band, double **z, tg_error *err)
{
	const size_t n = (size_t) band->width * band->height;
	decode_job	j = {band, NULL};
	tg_status	st;

	*z = tg_alloc(ctx, (n ? n : 1) * sizeof(double));
	if (*z == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate %zu bytes for the DEM", n * sizeof(double));
	j.z = *z;
	st = tg_parallel_rows(ctx, band->width, band->height, decode_rows, &j, err);
	if (st != TG_OK)
	{
		tg_free(ctx, *z);
		*z = NULL;
	}
	return st;
}
