/*
 * tg_codec.h — decompressing stored tiles and compressing result tiles,
 * and the zlib streams and varints of the messages between servers
 * (tile_codec.c).
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

/*
 * Varints (7 bits a byte, the low ones first, at most 10 bytes): v into
 * out, its length; from the n bytes at p into *v, the bytes read (0: cut
 * short or longer than 10 bytes).
 */
size_t		tg_varint_put(uint64_t v, uint8_t out[10]);
size_t		tg_varint_get(const uint8_t *p, size_t n, uint64_t *v);

#endif							/* TG_CODEC_H */
