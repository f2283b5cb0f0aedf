/*
 * fuzz_raster.c — fuzz the raster decoder.
 *
 * Built two ways:
 *   - default (make check-core): a self-contained randomized mutation test,
 *     run under AddressSanitizer and UndefinedBehaviorSanitizer.  It makes
 *     valid seed rasters (random shapes, 1-4 bands of random pixel types,
 *     nodata flags, out-db bands), mutates them (bit flips, interesting
 *     bytes, header field overwrites, truncation, extension, splicing) and
 *     feeds every result, in a buffer of exactly its size, to the decoder,
 *     then reads every pixel of every band it accepts and runs every CPU
 *     terrain derivative on it.  Any out-of-bounds read, UB or crash aborts the run.
 *         build/fuzz_raster [iterations] [seed]
 *   - with -DTG_LIBFUZZER and clang -fsanitize=fuzzer,address: a libFuzzer
 *     target over the same harness (make fuzz-libfuzzer).
 */
#include "terrain/terrain.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Decode everything decodable in buf; touch every pixel that is claimed. */
static int
exercise(const uint8_t *buf, size_t len)
{
	tg_raster_info info;
	tg_error	err;
	int			accepted = 0;
	int			k;

	tg_error_clear(&err);
	if (tg_raster_read_info(buf, len, &info, &err) != TG_OK)
		return 0;

	/* the first band's header alone: never read past len, agrees with the full read */
	{
		tg_band		head,
					full;

		tg_error_clear(&err);
		if (tg_raster_read_band_header(buf, len, &head, &err) == TG_OK &&
			tg_raster_read_band(buf, len, 0, &full, &err) == TG_OK &&
			(head.pixtype != full.pixtype || head.has_nodata != full.has_nodata || head.offdb != full.offdb))
			abort();
	}

	/* one past the last band too: must be refused, not read */
	for (k = 0; k <= info.num_bands && k < 8; k++)
	{
		tg_band		band;
		size_t		n;
		size_t		i;
		double		sum = 0;

		tg_error_clear(&err);
		if (tg_raster_read_band(buf, len, k, &band, &err) != TG_OK)
			continue;
		accepted++;
		if (band.offdb)
			continue;
		n = (size_t) band.width * band.height;
		for (i = 0; i < n; i++)
			sum += tg_band_get(&band, i) * (tg_band_value_is_nodata(&band, tg_band_get(&band, i)) ? 0 : 1);
		if (n > 0 && n <= 4096)
		{
			/* every local derivative at once, each plane of doubles */
			double	   *out = malloc(TG_TERRAIN_PRODUCTS * n * sizeof(double));
			void	   *planes[TG_TERRAIN_PRODUCTS];
			tg_terrain_params p;
			tg_ctx		ctx;

			tg_terrain_defaults(&p);
			p.pixel_width = p.pixel_height = 1.0;
			p.nproducts = TG_TERRAIN_PRODUCTS;
			for (int k = 0; k < TG_TERRAIN_PRODUCTS; k++)
			{
				p.products[k] = (tg_terrain_product) k;
				p.types[k] = k == TG_TERRAIN_GEOMORPHONS ? TG_PT_8BUI : TG_PT_64BF;
				p.nodata[k] = -9999;
				planes[k] = out + (size_t) k * n;
			}
			tg_ctx_init(&ctx);
			ctx.backend = TG_BACKEND_CPU;
			tg_error_clear(&err);
			if (tg_cpu_terrain(&ctx, &band, &p, planes, &err) != TG_OK)
				abort();
			free(out);
		}
		/* keep the sum alive so the reads are not optimised away */
		if (sum == 1234567.891)
			accepted++;
	}
	return accepted;
}

#ifdef TG_LIBFUZZER

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	exercise(data, size);
	return 0;
}

#else

static uint64_t rng_state;

static uint64_t
rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

static const tg_pixtype pixtypes[] = {
	TG_PT_1BB, TG_PT_2BUI, TG_PT_4BUI, TG_PT_8BSI, TG_PT_8BUI, TG_PT_16BSI,
	TG_PT_16BUI, TG_PT_32BSI, TG_PT_32BUI, TG_PT_32BF, TG_PT_64BF
};

/*
 * A valid raster: random shape and bands; with probability 1/4 the last band
 * is rewritten as out-db (band number + path), as raster2pgsql -R makes.
 */
static uint8_t *
make_seed(size_t *len)
{
	tg_raster_info info;
	tg_band_spec specs[4];
	void	   *data[4];
	size_t		size = 0;
	uint8_t    *buf;
	int			i;

	memset(&info, 0, sizeof info);
	info.num_bands = 1 + rnd() % 4;
	info.width = rnd() % 24;
	info.height = rnd() % 24;
	info.geo.scale_x = 1 + rnd() % 30;
	info.geo.scale_y = -info.geo.scale_x;
	info.geo.srid = 4326;
	for (i = 0; i < info.num_bands; i++)
	{
		specs[i].pixtype = pixtypes[rnd() % (sizeof pixtypes / sizeof pixtypes[0])];
		specs[i].has_nodata = rnd() % 2;
		specs[i].nodata = (double) (rnd() % 4);
	}
	tg_raster_size(&info, specs, &size, NULL);
	buf = malloc(size + 64);
	tg_raster_write(buf, size, &info, specs, data, NULL);
	for (i = 0; i < info.num_bands; i++)
	{
		size_t		bytes = (size_t) info.width * info.height * tg_pixtype_size(specs[i].pixtype);
		size_t		b;

		for (b = 0; b < bytes; b++)
			((uint8_t *) data[i])[b] = (uint8_t) rnd();
	}
	if (rnd() % 4 == 0)
	{
		/* turn the last band out-db: flag, band number, path, padding */
		uint8_t    *band = (uint8_t *) data[info.num_bands - 1] -
			2 * tg_pixtype_size(specs[info.num_bands - 1].pixtype);
		size_t		at = (size_t) ((uint8_t *) data[info.num_bands - 1] - buf);
		const char *path = "/data/dem/tile.tif";

		band[0] |= 0x80;
		buf[at] = 1;
		memcpy(buf + at + 1, path, strlen(path) + 1);
		size = (at + 1 + strlen(path) + 1 + 7) & ~(size_t) 7;
	}
	*len = size;
	return buf;
}

static void
mutate(uint8_t **bufp, size_t *lenp, const uint8_t *other, size_t other_len)
{
	static const uint8_t interesting[] = {0x00, 0x01, 0x7f, 0x80, 0xff, 0xfe, 0x40, 0x20, 0x0b, 0x0c};
	uint8_t    *buf = *bufp;
	size_t		len = *lenp;
	int			rounds = 1 + rnd() % 4;
	int			r;

	for (r = 0; r < rounds; r++)
	{
		switch (rnd() % 8)
		{
			case 0:				/* bit flip */
				if (len)
					buf[rnd() % len] ^= (uint8_t) (1u << (rnd() % 8));
				break;
			case 1:				/* interesting byte */
				if (len)
					buf[rnd() % len] = interesting[rnd() % sizeof interesting];
				break;
			case 2:				/* header field: band count, width or height */
				if (len >= 64)
				{
					static const int fields[] = {4, 6, 60, 62};
					uint16_t	v = (uint16_t) (rnd() % 3 == 0 ? 0xffff : rnd() % 300);

					memcpy(buf + fields[rnd() % 4], &v, 2);
				}
				break;
			case 3:				/* band type byte of the first band */
				if (len > 64)
					buf[64] = (uint8_t) rnd();
				break;
			case 4:				/* truncate */
				if (len)
					len = rnd() % len;
				break;
			case 5:				/* extend with random bytes */
				{
					size_t		extra = rnd() % 64;
					size_t		i;

					buf = realloc(buf, len + extra + 1);
					for (i = 0; i < extra; i++)
						buf[len + i] = (uint8_t) rnd();
					len += extra;
					break;
				}
			case 6:				/* splice a piece of another seed */
				if (len && other_len)
				{
					size_t		at = rnd() % len;
					size_t		from = rnd() % other_len;
					size_t		n = rnd() % 32;

					if (n > len - at)
						n = len - at;
					if (n > other_len - from)
						n = other_len - from;
					memcpy(buf + at, other + from, n);
				}
				break;
			case 7:				/* random byte */
				if (len)
					buf[rnd() % len] = (uint8_t) rnd();
				break;
		}
	}
	*bufp = buf;
	*lenp = len;
}

int
main(int argc, char **argv)
{
	long		iterations = argc > 1 ? atol(argv[1]) : 100000;
	uint64_t	seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 0x5eed5eedull;
	long		accepted = 0;
	long		refused = 0;
	long		it;

	rng_state = seed | 1;
	for (it = 0; it < iterations; it++)
	{
		size_t		len,
					other_len;
		uint8_t    *work = make_seed(&len);
		uint8_t    *other = make_seed(&other_len);
		uint8_t    *exact;

		/* every 8th input goes in unmutated: valid values must be accepted */
		if (it % 8 != 0)
			mutate(&work, &len, other, other_len);

		/* an exact-size copy so the sanitizer catches any read past the end */
		exact = malloc(len ? len : 1);
		memcpy(exact, work, len);
		if (exercise(exact, len) > 0)
			accepted++;
		else
			refused++;
		if (it % 8 == 0 && exercise(exact, len) == 0)
		{
			fprintf(stderr, "FAIL: valid seed %ld refused\n", it);
			return 1;
		}
		free(exact);
		free(work);
		free(other);
	}
	printf("fuzz_raster: %ld inputs (seed 0x%llx), %ld decoded, %ld refused, no crash\n",
		   iterations, (unsigned long long) seed, accepted, refused);
	return 0;
}

#endif							/* TG_LIBFUZZER */
