/*
 * tg_codec.h — decompressing stored tiles and compressing result tiles
 * (tile_codec.c).  Internal to the core.
 */
#ifndef TG_CODEC_H
#define TG_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* dst receives exactly dst_size bytes; false on corrupt input. */
bool		tg_pglz_decompress(const uint8_t *src, size_t src_size, uint8_t *dst, size_t dst_size);
bool		tg_lz4_decompress(const uint8_t *src, size_t src_size, uint8_t *dst, size_t dst_size);

/* Room LZ4 may need for size bytes (0: too large), and the compressed size (0: failed). */
size_t		tg_lz4_bound(size_t size);
size_t		tg_lz4_compress(const uint8_t *src, size_t src_size, uint8_t *dst, size_t dst_capacity);

#endif							/* TG_CODEC_H */
