/*
 * test_core.c — unit tests of the PostgreSQL-free core (no server needed).
 *
 *   raster codec   golden bytes written by PostGIS 3.3 itself (captured with
 *                  a byteasend cast), decoded and re-encoded bit for bit; every
 *                  truncation of them; bad versions and pixel types
 *   slope          hand-checked values (from ST_Slope), an analytic plane,
 *                  every pixel type, units, nodata/NaN, 1xN strips, a
 *                  brute-force reference on random DEMs, cancellation
 *   dispatch       gpu without a device, auto fallback
 *   CUDA vs CPU    random DEMs of every pixel type, whole and in strips
 *                  (skipped with a line saying so when no GPU is usable)
 *
 * Ends with "N passed, N failed"; exit status 1 on any failure.
 */
#include "test.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * Golden rasters: PostGIS 3.3's serialization minus the 4-byte length word.
 * All are 3 x 2 pixels, scale (2, -3), upper left (10.5, 20.25), skew
 * (0.1, 0.2), SRID 4326, one band with the pixel values listed.
 * ------------------------------------------------------------------------ */
#define GOLDEN_HEADER "00000100000000000000004000000000000008c0000000000000254000000000004034409a9999999999b93f9a9999999999c93fe610000003000200"

typedef struct golden
{
	tg_pixtype	pixtype;
	double		nodata;
	double		values[6];
	const char *band_hex;
} golden;

static const golden goldens[] = {
	{TG_PT_1BB, 0, {1, 0, 1, 0, 1, 1}, "4000010001000101"},
	{TG_PT_2BUI, 3, {0, 1, 2, 3, 2, 1}, "4103000102030201"},
	{TG_PT_4BUI, 15, {0, 7, 15, 3, 9, 1}, "420f00070f030901"},
	{TG_PT_8BSI, -128, {-128, -1, 0, 1, 100, 127}, "438080ff0001647f"},
	{TG_PT_8BUI, 255, {0, 1, 128, 200, 254, 255}, "44ff000180c8feff"},
	{TG_PT_16BSI, -32768, {-32768, -1, 0, 1, 1000, 32767},
	"450000800080ffff00000100e803ff7f"},
	{TG_PT_16BUI, 65535, {0, 1, 1000, 40000, 65534, 65535},
	"4600ffff00000100e803409cfeffffff"},
	{TG_PT_32BSI, -2147483648.0, {-2147483648.0, -1, 0, 1, 100000, 2147483647},
	"470000000000008000000080ffffffff0000000001000000a0860100ffffff7f"},
	{TG_PT_32BUI, 4294967295.0, {0, 1, 100000, 3000000000.0, 4294967294.0, 4294967295.0},
	"48000000ffffffff0000000001000000a0860100005ed0b2feffffffffffffff"},
	{TG_PT_32BF, -3.4e38f, {-3.4e38f, -1.5, 0, 1.25, 1e10f, NAN},
	"4a0000009ec97fff9ec97fff0000c0bf000000000000a03ff90215500000c07f"},
	{TG_PT_64BF, -1e300, {-1e300, -1.5, 0, 1.25, 1e100, INFINITY},
	"4b000000000000009c7500883ce437fe9c7500883ce437fe000000000000f8bf0000000000000000000000000000f43f7dc39425ad49b254000000000000f07f"},
};

/* 2x2, SRID 32632: 8BUI without nodata (7), 64BF nodata -1 (2.5), 16BSI nodata -9999 (-5) */
static const char *golden_multiband =
"00000300000000000000f03f000000000000f0bf0000000000000000000000000000000000000000000000000000000000000000787f0000020002"
"0004000707070700004b00000000000000000000000000f0bf00000000000004400000000000000440000000000000044000000000000004404500f1d8fbfffbfffbfffbff00000000";

/* 2x1 16BSI band flagged all-nodata (ISNODATA) */
static const char *golden_all_nodata =
"00000100000000000000f03f000000000000f0bf000000000000000000000000000000000000000000000000000000000000000000000000020001006500f1d8f1d8f1d8";

/* out-db 16BSI band, 367 x 359, pointing at a GeoTIFF */
static const char *golden_outdb =
"00000100fcfcf7e0b54b4b3ffcfcf7e0b54b4bbf00000000006058c0000000000080404000000000000000000000000000000000e61000006f016701c5000080002f776f726b2f7368617265642f646174612f64656d2f736d616c6c5f666f7274776f7274685f7372746d332e74696600000000";

/* Decode hex after a 4-byte length word; returns a malloc'd buffer. */
static uint8_t *
from_hex(const char *hex, size_t *len)
{
	size_t		n = strlen(hex) / 2;
	uint8_t    *buf = calloc(n + 4, 1);
	uint32_t	total = (uint32_t) (n + 4);
	size_t		i;

	memcpy(buf, &total, 4);
	for (i = 0; i < n; i++)
	{
		unsigned	byte;

		sscanf(hex + 2 * i, "%2x", &byte);
		buf[4 + i] = (uint8_t) byte;
	}
	*len = n + 4;
	return buf;
}

static uint8_t *
golden_bytes(const golden *g, size_t *len)
{
	char		hex[1024];

	snprintf(hex, sizeof hex, "%s%s", GOLDEN_HEADER, g->band_hex);
	return from_hex(hex, len);
}

static bool
same_value(double a, double b)
{
	return (isnan(a) && isnan(b)) || a == b;
}

static void
test_golden_decode(void)
{
	size_t		i;

	for (i = 0; i < sizeof goldens / sizeof goldens[0]; i++)
	{
		const golden *g = &goldens[i];
		const char *name = tg_pixtype_name(g->pixtype);
		size_t		len;
		uint8_t    *buf = golden_bytes(g, &len);
		tg_raster_info info;
		tg_band		band;
		tg_error	err;
		int			k;

		tg_error_clear(&err);
		check(tg_raster_read_info(buf, len, &info, &err) == TG_OK, "%s: header", name);
		check(info.num_bands == 1 && info.width == 3 && info.height == 2,
			  "%s: shape %dx%d, %d bands", name, info.width, info.height, info.num_bands);
		check(info.geo.scale_x == 2 && info.geo.scale_y == -3 &&
			  info.geo.upperleft_x == 10.5 && info.geo.upperleft_y == 20.25 &&
			  info.geo.skew_x == 0.1 && info.geo.skew_y == 0.2 && info.geo.srid == 4326,
			  "%s: georeference", name);
		check(tg_raster_read_band(buf, len, 0, &band, &err) == TG_OK, "%s: band: %s", name, err.message);
		check(band.pixtype == g->pixtype && band.has_nodata && !band.is_nodata && !band.offdb,
			  "%s: band flags", name);
		check(same_value(band.nodata, g->nodata), "%s: nodata %g, expected %g", name,
			  band.nodata, g->nodata);
		for (k = 0; k < 6; k++)
			check(same_value(tg_band_get(&band, k), g->values[k]),
				  "%s: pixel %d is %g, expected %g", name, k, tg_band_get(&band, k), g->values[k]);
		check(tg_band_value_is_nodata(&band, g->nodata), "%s: nodata value recognised", name);
		check(!tg_band_value_is_nodata(&band, g->values[1]) || g->values[1] == g->nodata,
			  "%s: a valid value is not nodata", name);
		free(buf);
	}
}

static void
test_golden_encode(void)
{
	size_t		i;

	for (i = 0; i < sizeof goldens / sizeof goldens[0]; i++)
	{
		const golden *g = &goldens[i];
		const char *name = tg_pixtype_name(g->pixtype);
		size_t		len;
		uint8_t    *expect = golden_bytes(g, &len);
		tg_raster_info info;
		tg_band_spec spec = {g->pixtype, true, g->nodata};
		tg_band		src;
		tg_error	err;
		size_t		size = 0;
		uint8_t    *out;
		void	   *pixels;

		tg_error_clear(&err);
		tg_raster_read_info(expect, len, &info, &err);
		tg_raster_read_band(expect, len, 0, &src, &err);
		check(tg_raster_size(&info, &spec, &size, &err) == TG_OK && size == len,
			  "%s: serialized size %zu, PostGIS wrote %zu", name, size, len);
		out = calloc(size, 1);
		check(tg_raster_write(out, size, &info, &spec, &pixels, &err) == TG_OK, "%s: write", name);
		memcpy(pixels, src.data, 6 * (size_t) tg_pixtype_size(g->pixtype));
		check(memcmp(out, expect, len) == 0, "%s: bytes differ from PostGIS'", name);
		free(out);
		free(expect);
	}
}

static void
test_multiband_and_flags(void)
{
	size_t		len;
	uint8_t    *buf = from_hex(golden_multiband, &len);
	tg_raster_info info;
	tg_band		b;
	tg_error	err;

	tg_error_clear(&err);
	check(tg_raster_read_info(buf, len, &info, &err) == TG_OK && info.num_bands == 3 &&
		  info.geo.srid == 32632, "multiband: header");
	check(tg_raster_read_band(buf, len, 0, &b, &err) == TG_OK && b.pixtype == TG_PT_8BUI &&
		  !b.has_nodata && tg_band_get(&b, 3) == 7, "multiband: band 1 8BUI without nodata");
	check(!tg_band_value_is_nodata(&b, 0), "multiband: no nodata flag, 0 is a value");
	check(tg_raster_read_band(buf, len, 1, &b, &err) == TG_OK && b.pixtype == TG_PT_64BF &&
		  b.has_nodata && b.nodata == -1 && tg_band_get(&b, 0) == 2.5,
		  "multiband: band 2 64BF");
	check(tg_raster_read_band(buf, len, 2, &b, &err) == TG_OK && b.pixtype == TG_PT_16BSI &&
		  b.nodata == -9999 && tg_band_get(&b, 2) == -5, "multiband: band 3 16BSI");
	tg_error_clear(&err);
	check(tg_raster_read_band(buf, len, 3, &b, &err) == TG_EINVAL &&
		  strstr(err.message, "band 4 does not exist") != NULL,
		  "multiband: band 4 refused (%s)", err.message);

	/* the first band's header from the value's first bytes alone */
	{
		size_t		cut = TG_RASTER_HEADER_SIZE + 2 * 1;	/* 8BUI: type byte, padding, nodata */

		tg_error_clear(&err);
		check(tg_raster_read_band_header(buf, cut, &b, &err) == TG_OK && b.pixtype == TG_PT_8BUI &&
			  !b.has_nodata && !b.offdb && b.data == NULL, "multiband: band 1's header from %zu bytes (%s)",
			  cut, err.message);
		tg_error_clear(&err);
		check(tg_raster_read_band_header(buf, cut - 1, &b, &err) == TG_EDATA,
			  "multiband: band 1's header cut short refused");
	}
	free(buf);

	buf = from_hex(golden_all_nodata, &len);
	tg_error_clear(&err);
	check(tg_raster_read_band(buf, len, 0, &b, &err) == TG_OK && b.is_nodata &&
		  tg_band_value_is_nodata(&b, 12345), "all-nodata flag honoured");
	free(buf);

	buf = from_hex(golden_outdb, &len);
	tg_error_clear(&err);
	check(tg_raster_read_band(buf, len, 0, &b, &err) == TG_OK && b.offdb && b.data == NULL &&
		  b.width == 367 && b.height == 359, "out-db band described, no pixels");
	free(buf);
}

/* Every proper prefix of a valid value must fail cleanly (or parse fully). */
static void
test_truncations(void)
{
	const char *hexes[] = {golden_multiband, golden_outdb, golden_all_nodata};
	size_t		h;
	size_t		i;
	int			bad = 0;

	for (h = 0; h < sizeof goldens / sizeof goldens[0] + 3; h++)
	{
		size_t		len;
		uint8_t    *full = h < sizeof goldens / sizeof goldens[0]
			? golden_bytes(&goldens[h], &len)
			: from_hex(hexes[h - sizeof goldens / sizeof goldens[0]], &len);
		tg_raster_info info;

		tg_raster_read_info(full, len, &info, NULL);
		for (i = 0; i < len; i++)
		{
			/* an exact-size copy, so ASan sees any read past the end */
			uint8_t    *cut = malloc(i ? i : 1);
			tg_error	err;
			tg_band		b;
			int			k;
			tg_status	st = TG_OK;

			memcpy(cut, full, i);
			for (k = 0; k < info.num_bands && st == TG_OK; k++)
			{
				tg_error_clear(&err);
				st = tg_raster_read_band(cut, i, k, &b, &err);
			}
			/* only the final band's trailing padding may be missing */
			if (st == TG_OK && i + 8 <= len)
				bad++;
			if (st != TG_OK && st != TG_EDATA)
				bad++;
			free(cut);
		}
		free(full);
	}
	check(bad == 0, "truncated values: %d prefixes were not refused with TG_EDATA", bad);
}

static void
test_bad_headers(void)
{
	size_t		len;
	uint8_t    *buf = golden_bytes(&goldens[5], &len);
	tg_error	err;
	tg_band		b;
	tg_raster_info info;
	int			code;

	buf[4] = 1;					/* version 1 */
	tg_error_clear(&err);
	check(tg_raster_read_info(buf, len, &info, &err) == TG_EDATA &&
		  strstr(err.message, "version") != NULL, "version 1 refused");
	buf[4] = 0;
	for (code = 0; code < 16; code++)
	{
		buf[TG_RASTER_HEADER_SIZE] = (uint8_t) (0x40 | code);
		tg_error_clear(&err);
		if (tg_pixtype_valid(code))
			continue;
		check(tg_raster_read_band(buf, len, 0, &b, &err) == TG_EDATA,
			  "pixel type code %d refused", code);
	}
	free(buf);
	check(tg_raster_read_info(NULL, 0, &info, NULL) == TG_EDATA, "NULL buffer refused");
}

/* ------------------------------------------------------------------------
 * Slope
 * ------------------------------------------------------------------------ */

static tg_slope_params
params_deg(double pw, double ph, double scale)
{
	tg_slope_params p = {pw, ph, scale, TG_SLOPE_DEGREES, -9999.0f};

	return p;
}

static tg_status
run_slope(tg_backend backend, const tg_band *b, const tg_slope_params *p, float *out)
{
	tg_ctx		ctx;
	tg_error	err;

	tg_ctx_init(&ctx);
	ctx.backend = backend;
	tg_error_clear(&err);
	return tg_slope(&ctx, b, p, out, &err);
}

static void
test_slope_postgis_values(void)
{
	/* the 4x3 example and the values ST_Slope (PostGIS 3.3) returns for it */
	int16_t		dem[12] = {1, 2, 4, 7, 2, -9999, 5, 9, 3, 5, 8, 12};
	const float expect[12] = {19.471220016479492f, 49.85993194580078f, 64.20562744140625f,
		45.86825180053711f, 43.590518951416016f, -9999.0f, 72.65393829345703f,
		67.99828338623047f, 29.2059326171875f, 59.05202865600586f, 63.16221237182617f,
	68.04888153076172f};
	tg_band		b = test_band(TG_PT_16BSI, dem, 4, 3, true, -9999);
	tg_slope_params p = params_deg(1, 1, 1);
	float		out[12];
	int			i;

	check(run_slope(TG_BACKEND_CPU, &b, &p, out) == TG_OK, "slope: run");
	for (i = 0; i < 12; i++)
		check(out[i] == expect[i], "slope: cell %d = %.9g, ST_Slope gives %.9g", i, out[i], expect[i]);
}

static void
test_slope_plane(void)
{
	/* z = 0.6 x + 0.8 y (x, y in metres) on 5 m cells: tan(slope) = 1 inside */
	enum
	{
	W = 7, H = 5};
	double		dem[W * H];
	float		out[W * H];
	tg_band		b;
	tg_slope_params p = params_deg(5, 5, 1);
	int			x,
				y;
	double		max_err = 0;

	for (y = 0; y < H; y++)
		for (x = 0; x < W; x++)
			dem[y * W + x] = 0.6 * 5 * x + 0.8 * 5 * y + 100;
	b = test_band(TG_PT_64BF, dem, W, H, false, 0);
	check(run_slope(TG_BACKEND_CPU, &b, &p, out) == TG_OK, "plane: run");
	for (y = 1; y < H - 1; y++)
		for (x = 1; x < W - 1; x++)
			max_err = fmax(max_err, fabs(out[y * W + x] - 45.0));
	check(max_err < 1e-5, "plane: interior slope 45 degrees, max error %g", max_err);

	p.units = TG_SLOPE_PERCENT;
	run_slope(TG_BACKEND_CPU, &b, &p, out);
	check(fabs(out[W + 1] - 100.0) < 1e-4, "plane: 100 percent, got %g", out[W + 1]);
	p.units = TG_SLOPE_RADIANS;
	run_slope(TG_BACKEND_CPU, &b, &p, out);
	check(fabs(out[W + 1] - M_PI / 4) < 1e-6, "plane: pi/4 radians, got %g", out[W + 1]);

	/* scale divides the gradient: tan(slope) = 1 / sqrt(3), 30 degrees */
	p.units = TG_SLOPE_DEGREES;
	p.scale = sqrt(3.0);
	run_slope(TG_BACKEND_CPU, &b, &p, out);
	check(fabs(out[W + 1] - 30.0) < 1e-4, "plane: scale sqrt(3) gives 30 degrees, got %g", out[W + 1]);
}

/* Independent brute-force reference: explicit bounds checks, no shared code. */
static void
reference_slope(const double *z, const bool *valid, int W, int H, double pw, double ph,
				double scale, float nodata, float *out)
{
	int			x,
				y;

	for (y = 0; y < H; y++)
		for (x = 0; x < W; x++)
		{
			double		v[3][3];
			double		e = z[y * W + x];
			int			dx,
						dy;

			if (!valid[y * W + x])
			{
				out[y * W + x] = nodata;
				continue;
			}
			for (dy = -1; dy <= 1; dy++)
				for (dx = -1; dx <= 1; dx++)
				{
					int			xx = x + dx,
								yy = y + dy;
					bool		inside = xx >= 0 && xx < W && yy >= 0 && yy < H;

					v[dy + 1][dx + 1] = inside && valid[yy * W + xx] ? z[yy * W + xx] : e;
				}
			{
				double		gy = ((v[2][0] + v[2][1] + v[2][1] + v[2][2]) -
								  (v[0][0] + v[0][1] + v[0][1] + v[0][2])) / ph;
				double		gx = ((v[0][2] + v[1][2] + v[1][2] + v[2][2]) -
								  (v[0][0] + v[1][0] + v[1][0] + v[2][0])) / pw;

				out[y * W + x] = (float) (atan(sqrt(gx * gx + gy * gy) / (8 * scale)) * 180.0 / M_PI);
			}
		}
}

/* A random DEM of a given pixel type with ~5 % nodata, as raw bytes. */
static void *
random_dem(tg_pixtype pt, int W, int H, double nodata, double **values, bool **valid)
{
	size_t		n = (size_t) W * H;
	int			pix = tg_pixtype_size(pt);
	uint8_t    *raw = calloc(n ? n : 1, pix);
	size_t		i;

	*values = calloc(n ? n : 1, sizeof(double));
	*valid = calloc(n ? n : 1, sizeof(bool));
	for (i = 0; i < n; i++)
	{
		bool		hole = rng_uniform() < 0.05;
		double		v;

		switch (pt)
		{
			case TG_PT_1BB:
				v = rng_next() & 1;
				break;
			case TG_PT_2BUI:
				v = rng_next() & 3;
				break;
			case TG_PT_4BUI:
				v = rng_next() & 15;
				break;
			case TG_PT_8BSI:
				v = (double) (int) (rng_next() % 200) - 100;
				break;
			case TG_PT_8BUI:
				v = (double) (rng_next() % 250);
				break;
			case TG_PT_32BF:
				v = (float) (rng_uniform() * 3000 - 100);
				break;
			case TG_PT_64BF:
				v = rng_uniform() * 3000 - 100;
				break;
			default:
				v = (double) (rng_next() % 3000);
				break;
		}
		if (hole || v == nodata)
			v = nodata;
		(*values)[i] = v;
		(*valid)[i] = v != nodata;
		tg_pixel_store(pt, raw, i, v);
	}
	return raw;
}

static const tg_pixtype all_pixtypes[] = {
	TG_PT_1BB, TG_PT_2BUI, TG_PT_4BUI, TG_PT_8BSI, TG_PT_8BUI, TG_PT_16BSI,
	TG_PT_16BUI, TG_PT_32BSI, TG_PT_32BUI, TG_PT_32BF, TG_PT_64BF
};

static double
nodata_for(tg_pixtype pt)
{
	return pt == TG_PT_1BB ? 0 : pt == TG_PT_2BUI ? 3 : pt == TG_PT_4BUI ? 15 :
		pt == TG_PT_8BUI ? 255 : pt == TG_PT_8BSI ? -128 : pt == TG_PT_16BUI ? 65535 :
		pt == TG_PT_32BUI ? 4294967295.0 : -9999;
}

/* A random DEM of one pixel type wrapped as a band, with its decoded values. */
typedef struct random_case
{
	tg_band		band;
	double	   *values;
	bool	   *valid;
	void	   *raw;
} random_case;

static random_case
random_case_make(tg_pixtype pt, int W, int H)
{
	random_case c;

	memset(&c, 0, sizeof c);
	c.raw = random_dem(pt, W, H, nodata_for(pt), &c.values, &c.valid);
	c.band.pixtype = pt;
	c.band.width = W;
	c.band.height = H;
	c.band.data = c.raw;
	c.band.has_nodata = true;
	c.band.nodata = nodata_for(pt);
	return c;
}

static void
random_case_free(random_case *c)
{
	free(c->raw);
	free(c->values);
	free(c->valid);
}

/*
 * tg_pixels_to_band against its definition, pixel by pixel: NaN and the
 * marker become the band's nodata, the rest is stored as tg_pixel_store
 * stores it; for every pair of types, rows longer than one chunk, offsets.
 */
static void
test_pixels_to_band(void)
{
	enum
	{
		N = 700
	};
	const size_t nt = sizeof all_pixtypes / sizeof all_pixtypes[0];
	int			differ = 0;

	for (size_t a = 0; a < nt; a++)
		for (size_t b = 0; b < nt; b++)
		{
			const tg_pixtype from = all_pixtypes[a];
			const tg_band_spec spec = {.pixtype = all_pixtypes[b], .nodata = nodata_for(all_pixtypes[b])};
			const double marker = from == TG_PT_1BB ? 1 : from == TG_PT_2BUI ? 2 : 7;
			uint8_t		src[(N + 3) * 8],
						got[(N + 5) * 8],
						want[(N + 5) * 8];

			memset(got, 0xA5, sizeof got);
			memset(want, 0xA5, sizeof want);
			for (int i = 0; i < N + 3; i++)
			{
				/* within every type's range: C's conversion of values outside is undefined */
				double		v = (double) (rng_next() % 120) + (tg_pixtype_is_float(from) ? 0.25 : 0);

				if (i % 97 == 5)
					v = marker;
				tg_pixel_store(from, src, i, i % 89 == 3 && tg_pixtype_is_float(from) ? NAN : v);
			}
			for (int m = 0; m < 2; m++)
			{
				tg_pixels_to_band(from, src, 3, m, marker, &spec, got, 5, N);
				for (int x = 0; x < N; x++)
				{
					const double v = tg_pixel_load(from, src, 3 + x);

					tg_pixel_store(spec.pixtype, want, 5 + x, isnan(v) || (m && v == marker) ? spec.nodata : v);
				}
				differ += memcmp(got, want, sizeof got) != 0;
			}
		}
	check(differ == 0, "tg_pixels_to_band: %d of %zu type pairs and markers differ from the pixel-by-pixel conversion",
		  differ, 2 * nt * nt);
	{
		/* a 16BUI plane with marker 65535 into an 8BUI band of nodata 255, by hand */
		const uint16_t plane[4] = {3, 65535, 128, 0};
		const tg_band_spec spec = {.pixtype = TG_PT_8BUI, .nodata = 255};
		uint8_t		band[4];

		tg_pixels_to_band(TG_PT_16BUI, plane, 0, true, 65535, &spec, band, 0, 4);
		check(band[0] == 3 && band[1] == 255 && band[2] == 128 && band[3] == 0,
			  "tg_pixels_to_band: 16BUI codes into 8BUI: %d %d %d %d", band[0], band[1], band[2], band[3]);
	}
}

static void
test_slope_random_vs_reference(void)
{
	static const int shapes[][2] = {{1, 1}, {1, 9}, {9, 1}, {2, 2}, {3, 3}, {17, 5}, {64, 33}, {131, 97}};
	size_t		s,
				t;

	for (t = 0; t < sizeof all_pixtypes / sizeof all_pixtypes[0]; t++)
		for (s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
		{
			tg_pixtype	pt = all_pixtypes[t];
			int			W = shapes[s][0],
						H = shapes[s][1];
			random_case c = random_case_make(pt, W, H);
			float	   *got = malloc(sizeof(float) * W * H);
			float	   *ref = malloc(sizeof(float) * W * H);
			tg_slope_params p = params_deg(30, 25, 1.5);
			double		worst = 0;
			int			i;

			check(run_slope(TG_BACKEND_CPU, &c.band, &p, got) == TG_OK, "random %s %dx%d: run",
				  tg_pixtype_name(pt), W, H);
			reference_slope(c.values, c.valid, W, H, 30, 25, 1.5, -9999.0f, ref);
			for (i = 0; i < W * H; i++)
				worst = fmax(worst, fabs((double) got[i] - ref[i]));
			check(worst <= 1e-5, "random %s %dx%d: max difference to the reference %g",
				  tg_pixtype_name(pt), W, H, worst);
			random_case_free(&c);
			free(got);
			free(ref);
		}
}

static void
test_slope_nodata_cases(void)
{
	float		f[9] = {1, 2, 3, 4, NAN, 6, 7, 8, 9};
	float		out[9];
	int16_t		d[4] = {5, 5, 5, 5};
	tg_band		b;
	tg_slope_params p = params_deg(1, 1, 1);

	/* NaN is nodata even without a nodata flag */
	b = test_band(TG_PT_32BF, f, 3, 3, false, 0);
	run_slope(TG_BACKEND_CPU, &b, &p, out);
	check(out[4] == -9999.0f && !isnan(out[0]), "NaN centre gives nodata, neighbours valid");

	/* flat: zero everywhere, including the edges */
	b = test_band(TG_PT_16BSI, d, 2, 2, false, 0);
	run_slope(TG_BACKEND_CPU, &b, &p, out);
	check(out[0] == 0 && out[3] == 0, "flat raster has zero slope");

	/* all-nodata flag: nodata everywhere */
	b = test_band(TG_PT_16BSI, d, 2, 2, true, -1);
	b.is_nodata = true;
	run_slope(TG_BACKEND_CPU, &b, &p, out);
	check(out[0] == -9999.0f && out[3] == -9999.0f, "all-nodata band gives nodata everywhere");

	/* bad parameters */
	p.pixel_width = 0;
	check(run_slope(TG_BACKEND_CPU, &b, &p, out) == TG_EINVAL, "zero pixel width refused");
	p = params_deg(1, 1, 0);
	check(run_slope(TG_BACKEND_CPU, &b, &p, out) == TG_EINVAL, "zero scale refused");
}

static bool
always_cancel(void *arg)
{
	(*(int *) arg)++;
	return true;
}

static void
test_cancel_and_dispatch(void)
{
	enum
	{
	W = 50, H = 300};
	static int16_t dem[W * H];
	static float out[W * H];
	tg_band		b = test_band(TG_PT_16BSI, dem, W, H, false, 0);
	tg_slope_params p = params_deg(1, 1, 1);
	tg_run_stats stats;
	tg_ctx		ctx;
	tg_error	err;
	int			polls = 0;
	tg_device_info info;

	tg_ctx_init(&ctx);
	ctx.backend = TG_BACKEND_CPU;
	ctx.cancel = always_cancel;
	ctx.cancel_arg = &polls;
	tg_error_clear(&err);
	check(tg_slope(&ctx, &b, &p, out, &err) == TG_ECANCELED && polls == 1,
		  "cancel callback stops the CPU slope");

	tg_device_query(0, &info);
	tg_ctx_init(&ctx);
	ctx.stats = &stats;
	ctx.backend = TG_BACKEND_AUTO;
	ctx.min_cells_for_gpu = 1000000;
	tg_error_clear(&err);
	check(tg_slope(&ctx, &b, &p, out, &err) == TG_OK && stats.backend == TG_BACKEND_CPU &&
		  strstr(stats.note, "min_cells_for_gpu") != NULL,
		  "auto keeps small inputs on the CPU (%s)", stats.note);

	if (info.available)
		return;
	ctx.backend = TG_BACKEND_GPU;
	tg_error_clear(&err);
	check(tg_slope(&ctx, &b, &p, out, &err) == TG_ENODEVICE && err.hint[0] != '\0',
		  "gpu without a device: TG_ENODEVICE with a hint");
	ctx.backend = TG_BACKEND_AUTO;
	ctx.min_cells_for_gpu = 0;
	tg_error_clear(&err);
	check(tg_slope(&ctx, &b, &p, out, &err) == TG_OK && stats.backend == TG_BACKEND_CPU &&
		  strstr(stats.note, "no GPU") != NULL, "auto without a device runs on the CPU");
}

/* ------------------------------------------------------------------------
 * CUDA against the CPU reference
 * ------------------------------------------------------------------------ */
static void
test_cuda_parity(void)
{
	static const int shapes[][2] = {{1, 1}, {1, 70}, {70, 1}, {33, 31}, {257, 129}, {1000, 777}};
	tg_device_info info;
	size_t		s,
				t;

	tg_device_query(0, &info);
	if (!info.available)
	{
		printf("skipped: CUDA parity tests (no GPU: %s)\n", info.reason);
		return;
	}
	printf("CUDA device: %s (compute capability %d.%d)\n", info.name, info.cc_major, info.cc_minor);

	for (t = 0; t < sizeof all_pixtypes / sizeof all_pixtypes[0]; t++)
		for (s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
		{
			tg_pixtype	pt = all_pixtypes[t];
			int			W = shapes[s][0],
						H = shapes[s][1];
			random_case c = random_case_make(pt, W, H);
			float	   *cpu = malloc(sizeof(float) * W * H);
			float	   *gpu = malloc(sizeof(float) * W * H);
			tg_slope_params p = params_deg(30, 25, 1.5);
			int			limit;

			run_slope(TG_BACKEND_CPU, &c.band, &p, cpu);

			/* whole raster, then strips of ~3 rows (forced by a tiny memory cap) */
			for (limit = 0; limit < 2; limit++)
			{
				tg_ctx		ctx;
				tg_error	err;
				tg_run_stats stats;
				double		worst = 0;
				int			i;

				tg_ctx_init(&ctx);
				ctx.backend = TG_BACKEND_GPU;
				ctx.stats = &stats;
				/* five rows of input and of decoded doubles, two of output: strips of two or three rows */
				ctx.device_memory_limit = limit ? 5 * ((size_t) W * tg_pixtype_size(pt) + ((size_t) W + 2) * 8) +
					8 * (size_t) W : 0;
				memset(gpu, 0xff, sizeof(float) * W * H);	/* poison */
				tg_error_clear(&err);
				check(tg_slope(&ctx, &c.band, &p, gpu, &err) == TG_OK,
					  "cuda %s %dx%d: %s %s", tg_pixtype_name(pt), W, H, err.message, err.detail);
				for (i = 0; i < W * H; i++)
				{
					double		d = fabs((double) gpu[i] - cpu[i]) / fmax(1.0, fabs(cpu[i]));

					worst = isnan(gpu[i]) ? INFINITY : fmax(worst, d);
				}
				check(worst <= 1e-5, "cuda %s %dx%d%s: max relative difference %g",
					  tg_pixtype_name(pt), W, H, limit ? " in strips" : "", worst);
				check(!limit || H < 4 || stats.chunks > 1, "cuda %s %dx%d: %d strips",
					  tg_pixtype_name(pt), W, H, stats.chunks);
			}
			random_case_free(&c);
			free(cpu);
			free(gpu);
		}
}

/* The compressed forms of tiles and messages: round trips, and corrupt input refused. */
static void
test_codecs(void)
{
	uint8_t		src[4096],
				packed[8192],
				back[4096];
	size_t		n;
	bool		refused = true;

	for (int i = 0; i < 4096; i++)
		src[i] = (uint8_t) (i % 17 == 0 ? i : i / 64);
	n = tg_lz4_compress(src, sizeof src, packed, sizeof packed);
	check(n > 0 && n < sizeof src && tg_lz4_decompress(packed, n, back, sizeof back) &&
		  memcmp(src, back, sizeof src) == 0, "lz4 round trip");
	n = tg_zlib_compress(src, sizeof src, packed, tg_zlib_bound(sizeof src), 1);
	check(n > 0 && n < sizeof src && tg_zlib_decompress(packed, n, back, sizeof back) &&
		  memcmp(src, back, sizeof src) == 0, "zlib round trip, fastest");
	check(tg_zlib_compress(src, sizeof src, packed, tg_zlib_bound(sizeof src), 0) == 0 &&
		  tg_zlib_compress(src, sizeof src, packed, tg_zlib_bound(sizeof src), 10) == 0, "zlib refuses a level outside 1 to 9");
	n = tg_zlib_compress(src, sizeof src, packed, tg_zlib_bound(sizeof src), 9);
	check(n > 0 && n < sizeof src && tg_zlib_decompress(packed, n, back, sizeof back) &&
		  memcmp(src, back, sizeof src) == 0, "zlib round trip, smallest");
	check(!tg_zlib_decompress(packed, n, back, sizeof back - 1) && !tg_zlib_decompress(packed, n - 1, back, sizeof back),
		  "zlib refuses a stream of another size or cut short");
	packed[n / 2] ^= 0x10;
	check(!tg_zlib_decompress(packed, n, back, sizeof back), "zlib refuses a changed stream");
	{
		const uint64_t v[] = {0, 127, 128, 300, UINT32_MAX, UINT64_MAX};
		const size_t len[] = {1, 1, 2, 2, 5, 10};
		const uint8_t eleven[11] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
		uint8_t		b[10];
		uint64_t	got;
		bool		ok = true;

		for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
		{
			const size_t k = tg_varint_put(v[i], b);

			ok = ok && k == len[i] && tg_varint_get(b, k, &got) == k && got == v[i] &&
				tg_varint_get(b, k - 1, &got) == 0;
		}
		check(ok, "varints round trip in 1 to 10 bytes and are refused when cut short");
		check(tg_varint_get(eleven, sizeof eleven, &got) == 0, "a varint longer than 10 bytes is refused");
	}
	/* a pglz stream with a back-reference: "abcabcabc" = 3 literals + copy of 6 at offset 3 */
	{
		const uint8_t z[] = {0x08, 'a', 'b', 'c', 0x03, 0x03};
		uint8_t		out[9];

		check(tg_pglz_decompress(z, sizeof z, out, 9) && memcmp(out, "abcabcabc", 9) == 0,
			  "pglz back-reference");
	}
	/*
	 * Random valid pglz streams, each item drawn (runs of eight literals,
	 * copies of every length at offsets shorter than, equal to and longer
	 * than the length) and the expected output written by the format's
	 * definition, one byte after the other.
	 */
	rng_state = 4242;
	{
		bool		ok = true;

		for (int trial = 0; trial < 2000 && ok; trial++)
		{
			uint8_t		z[4096],
						want[8192],
						got[8192];
			size_t		zn = 0,
						n = 0;

			while (zn + 1 + 8 * 3 <= sizeof z && n + 8 * 273 <= sizeof want)
			{
				const size_t at = zn++;
				const bool	literals = rng_next() % 4 == 0;

				z[at] = 0;
				for (int item = 0; item < 8; item++)
				{
					size_t		length = 3 + rng_next() % (rng_next() % 2 ? 16 : 271),
								offset = 1 + rng_next() % (rng_next() % 2 ? 4 : 4095);

					if (literals || n == 0 || rng_next() % 3 == 0)
					{
						z[zn++] = want[n++] = (uint8_t) rng_next();
						continue;
					}
					if (offset > n)
						offset = n;
					z[at] |= (uint8_t) (1 << item);
					z[zn++] = (uint8_t) ((offset >> 4 & 0xf0) | (length >= 18 ? 15 : length - 3));
					z[zn++] = (uint8_t) (offset & 0xff);
					if (length >= 18)
						z[zn++] = (uint8_t) (length - 18);
					for (size_t i = 0; i < length; i++, n++)
						want[n] = want[n - offset];
				}
			}
			ok = tg_pglz_decompress(z, zn, got, n) && memcmp(got, want, n) == 0 &&
				!tg_pglz_decompress(z, zn, got, n - 1) && !tg_pglz_decompress(z, zn - 1, got, n);
		}
		check(ok, "pglz: random streams of literals and (overlapping) copies decode as defined");
	}
	/* corrupt input is refused, never read or written beyond its buffers */
	rng_state = 77;
	for (int trial = 0; trial < 20000; trial++)
	{
		uint8_t		junk[64],
					out[128];
		const size_t len = 1 + rng_next() % sizeof junk;

		for (size_t i = 0; i < len; i++)
			junk[i] = (uint8_t) rng_next();
		(void) tg_pglz_decompress(junk, len, out, 1 + rng_next() % sizeof out);
		(void) tg_lz4_decompress(junk, len, out, 1 + rng_next() % sizeof out);
		(void) tg_zlib_decompress(junk, len, out, 1 + rng_next() % sizeof out);
	}
	{
		const uint8_t bad[] = {0x01, 0x0f, 0xff};	/* a copy from before the start */
		uint8_t		out[32];

		refused = !tg_pglz_decompress(bad, sizeof bad, out, sizeof out);
	}
	check(refused, "pglz refuses a reference before the output's start");
}

int
main(int argc, char **argv)
{
	/* every group, or those named on the command line (e.g. test_core run) */
	static const struct
	{
		const char *name;
		void		(*run) (void);
	}			groups[] = {
		{"golden_decode", test_golden_decode}, {"golden_encode", test_golden_encode},
		{"multiband", test_multiband_and_flags}, {"truncations", test_truncations},
		{"bad_headers", test_bad_headers}, {"slope_postgis", test_slope_postgis_values},
		{"slope_plane", test_slope_plane}, {"slope_random", test_slope_random_vs_reference},
		{"slope_nodata", test_slope_nodata_cases}, {"pixels_to_band", test_pixels_to_band}, {"codecs", test_codecs},
		{"cancel", test_cancel_and_dispatch},
		{"cuda_parity", test_cuda_parity}, {"hydro", test_hydro}, {"chain", test_hydro_chain},
		{"strips", test_strips}, {"bmmq", test_bmmq},
		{"viewshed", test_viewshed}, {"catchment", test_catchment}, {"threads", test_threads}, {"terrain", test_terrain},
		{"run", test_run},
	};

	for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++)
	{
		bool		chosen = argc < 2;

		for (int a = 1; a < argc && !chosen; a++)
			chosen = strcmp(argv[a], groups[g].name) == 0;
		if (chosen)
			groups[g].run();
	}

	printf("core tests: %d passed, %d failed\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
