/*
 * tg_codec.h — decompressing stored tiles and compressing result tiles,
 * and the zlib streams of the messages between servers (tile_codec.c).
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

/* zlib streams (header and checksum included): the room, the size made (0: failed), all of src into dst_size bytes */
size_t		tg_zlib_bound(size_t size);
size_t		tg_zlib_compress(const uint8_t *src, size_t src_size, uint8_t *dst, size_t dst_capacity);
bool		tg_zlib_decompress(const uint8_t *src, size_t src_size, uint8_t *dst, size_t dst_size);

#endif							/* TG_CODEC_H */
