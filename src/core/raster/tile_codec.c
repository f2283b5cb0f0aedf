/*
 * tile_codec.c — the compressed forms a tile travels in: PostgreSQL's own
 * (pglz) and LZ4, decompressed on worker threads when tiles are read, and
 * LZ4 made on them when result tiles are written; and zlib's, for the
 * messages between the servers of a partitioned coverage, where bytes
 * count more than time, with the varints their numbers and sizes travel
 * as.  Pure functions: no state, no allocation.
 *
 * pglz's format: a control byte, then up to eight items, each a literal
 * byte (control bit 0, lowest bit first) or a back-reference (bit 1) of two
 * bytes, low nibble of the first = length - 3, its high nibble and the
 * second byte = the offset back into the output (12 bits); a length nibble
 * of 15 means a third byte adds up to 255 more.  A copy may overlap its
 * source (a run repeats what it has just written): those go byte by byte.
 */
#include "raster/raster.h"

#include <string.h>

/* liblz4's block API (stable since 1.7) */
extern int	LZ4_compressBound(int inputSize);
extern int	LZ4_compress_default(const char *src, char *dst, int srcSize, int dstCapacity);
extern int	LZ4_decompress_safe(const char *src, char *dst, int compressedSize, int dstCapacity);

/* zlib's one-shot API (uncompress2 since 1.2.9) */
extern unsigned long compressBound(unsigned long sourceLen);
extern int	compress2(uint8_t *dest, unsigned long *destLen, const uint8_t *source, unsigned long sourceLen, int level);
extern int	uncompress2(uint8_t *dest, unsigned long *destLen, const uint8_t *source, unsigned long *sourceLen);

#define ZLIB_OK 0
#define ZLIB_BEST_COMPRESSION 9

bool
tg_pglz_decompress(const uint8_t *src, size_t src_size, uint8_t *dst, size_t dst_size)
{
	const uint8_t *sp = src,
			   *send = src + src_size;
	uint8_t    *dp = dst,
			   *dend = dst + dst_size;

	while (sp < send && dp < dend)
	{
		unsigned	control = *sp++;

		/* eight literals at once (the common case in rasters' noisy low bytes) */
		if (control == 0 && send - sp >= 8 && dend - dp >= 8)
		{
			memcpy(dp, sp, 8);
			dp += 8;
			sp += 8;
			continue;
		}
		for (int item = 0; item < 8 && sp < send && dp < dend; item++, control >>= 1)
		{
			size_t		length,
						offset;

			if (!(control & 1))
			{
				*dp++ = *sp++;
				continue;
			}
			if (send - sp < 2)
				return false;
			length = (size_t) (sp[0] & 0x0f) + 3;
			offset = (size_t) (sp[0] & 0xf0) << 4 | sp[1];
			sp += 2;
			if (length == 18)
			{
				if (sp >= send)
					return false;
				length += *sp++;
			}
			if (offset == 0 || offset > (size_t) (dp - dst) || length > (size_t) (dend - dp))
				return false;
			if (offset >= length)
				memcpy(dp, dp - offset, length);
			else if (offset == 1)
				memset(dp, dp[-1], length);
			else
				for (size_t i = 0; i < length; i++)
					dp[i] = (dp - offset)[i];
			dp += length;
		}
	}
	/* every byte decoded, no input left over */
	return dp == dend && sp == send;
}

bool
tg_lz4_decompress(const uint8_t *src, size_t src_size, uint8_t *dst, size_t dst_size)
{
	if (src_size > INT32_MAX || dst_size > INT32_MAX)
		return false;
	return LZ4_decompress_safe((const char *) src, (char *) dst, (int) src_size, (int) dst_size) ==
		(int) dst_size;
}

size_t
tg_lz4_bound(size_t size)
{
	return size > INT32_MAX / 2 ? 0 : (size_t) LZ4_compressBound((int) size);
}

size_t
tg_lz4_compress(const uint8_t *src, size_t src_size, uint8_t *dst, size_t dst_capacity)
{
	int			n;

	if (src_size > INT32_MAX || dst_capacity > INT32_MAX)
		return 0;
	n = LZ4_compress_default((const char *) src, (char *) dst, (int) src_size, (int) dst_capacity);
	return n > 0 ? (size_t) n : 0;
}

size_t
tg_zlib_bound(size_t size)
{
	return size > SIZE_MAX / 2 ? 0 : (size_t) compressBound(size);
}

size_t
tg_zlib_compress(const uint8_t *src, size_t src_size, uint8_t *dst, size_t dst_capacity, int level)
{
	unsigned long n = dst_capacity;

	if (level < 1 || level > ZLIB_BEST_COMPRESSION)
		return 0;
	return compress2(dst, &n, src, src_size, level) == ZLIB_OK ? (size_t) n : 0;
}

bool
tg_zlib_decompress(const uint8_t *src, size_t src_size, uint8_t *dst, size_t dst_size)
{
	unsigned long n = dst_size,
				used = src_size;

	/* the whole stream, its checksum right, and exactly dst_size bytes out of it */
	return uncompress2(dst, &n, src, &used) == ZLIB_OK && n == dst_size && used == src_size;
}

size_t
tg_varint_put(uint64_t v, uint8_t out[10])
{
	size_t		k = 0;

	for (; v >= 0x80; v >>= 7)
		out[k++] = (uint8_t) (v | 0x80);
	out[k++] = (uint8_t) v;
	return k;
}

size_t
tg_varint_get(const uint8_t *p, size_t n, uint64_t *v)
{
	*v = 0;
	for (size_t k = 0; k < n && k < 10; k++)
	{
		*v |= (uint64_t) (p[k] & 0x7f) << (7 * k);
		if (!(p[k] & 0x80))
			return k + 1;
	}
	*v = 0;
	return 0;
}
