/*
 * route_cache.c — the last routing the CPU built, and its topological order,
 * kept between calls.
 *
 * Routing (fill, flat resolution, directions) is most of the CPU's work for
 * an accumulation, and the topological order depends only on the routing
 * (Sten et al. 2016, §3.3), so a second call on the same DEM — another
 * weight, LS then RUSLE, directions then accumulation — can start from them.
 * One entry per process, in malloc'ed memory, at most ctx->route_cache_limit
 * bytes (0: nothing is kept).  The key is a 128-bit hash of everything the
 * routing depends on: the band's stored pixels, type, size and nodata, the
 * grid geometry, and the routing, exponent and fill flag.
 */
#include "hydro/route/route.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct route_key
{
	uint64_t	h[2];
} route_key;

static struct
{
	bool		valid;
	route_key	key;
	tg_route	route;
	size_t		route_bytes;
	uint32_t   *order;			/* NULL until a topological accumulation asks */
	uint32_t   *level_start;	/* levels + 1 */
	size_t		order_len;
	int			levels;
} cache;

/* ------------------------------------------------------------------------
 * Hashing: two 64-bit lanes over 8-byte words, each finalised with an
 * avalanche step; the lanes use different multipliers and rotations.
 * ------------------------------------------------------------------------ */
typedef struct hasher
{
	uint64_t	a,
				b,
				len;
} hasher;

static inline uint64_t
rotl64(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static inline void
hash_word(hasher *h, uint64_t w)
{
	h->a = rotl64(h->a ^ (w * 0x9E3779B97F4A7C15ull), 29) * 0xBF58476D1CE4E5B9ull;
	h->b = rotl64(h->b + (w ^ 0x94D049BB133111EBull), 37) * 0xD6E8FEB86659FD93ull;
	h->len += 8;
}

static void
hash_bytes(hasher *h, const void *data, size_t size)
{
	const unsigned char *p = data;
	uint64_t	w;

	for (; size >= 8; p += 8, size -= 8)
	{
		memcpy(&w, p, 8);
		hash_word(h, w);
	}
	if (size > 0)
	{
		w = 0;
		memcpy(&w, p, size);
		hash_word(h, w ^ ((uint64_t) size << 56));
	}
}

static void
hash_double(hasher *h, double v)
{
	uint64_t	w;

	memcpy(&w, &v, 8);
	hash_word(h, w);
}

static inline uint64_t
avalanche(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xBF58476D1CE4E5B9ull;
	x ^= x >> 27;
	x *= 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

static route_key
key_of(const tg_band *dem, const tg_flow_params *p)
{
	hasher		h = {0x243F6A8885A308D3ull, 0x13198A2E03707344ull, 0};
	route_key	k;
	const tg_grid_geometry *g = &p->geom;

	hash_word(&h, (uint64_t) dem->pixtype | (uint64_t) dem->has_nodata << 8 |
			  (uint64_t) dem->is_nodata << 9 | (uint64_t) p->routing << 16 |
			  (uint64_t) p->fill << 24 | (uint64_t) g->geographic << 25);
	hash_word(&h, (uint64_t) (uint32_t) dem->width << 32 | (uint32_t) dem->height);
	hash_word(&h, (uint64_t) (uint32_t) g->row0);
	hash_double(&h, dem->has_nodata ? dem->nodata : 0);
	hash_double(&h, p->exponent);
	hash_double(&h, g->cell_x);
	hash_double(&h, g->cell_y);
	hash_double(&h, g->lat_top);
	hash_double(&h, g->lat_step);
	hash_double(&h, g->lon_step);
	if (!dem->is_nodata)
		hash_bytes(&h, dem->data, (size_t) dem->width * dem->height * tg_pixtype_size(dem->pixtype));
	k.h[0] = avalanche(h.a ^ h.len);
	k.h[1] = avalanche(h.b + avalanche(h.a));
	return k;
}

/* ------------------------------------------------------------------------ */

static tg_ctx
malloc_ctx(const tg_ctx *ctx)
{
	tg_ctx		own = *ctx,
				plain;

	tg_ctx_init(&plain);
	own.allocator = plain.allocator;
	return own;
}

static void
drop_entry(void)
{
	tg_ctx		plain;

	if (!cache.valid)
		return;
	tg_ctx_init(&plain);
	tg_route_free(&plain, &cache.route);
	tg_free(&plain, cache.order);
	tg_free(&plain, cache.level_start);
	memset(&cache, 0, sizeof cache);
}

static size_t
route_bytes(const tg_band *dem, const tg_flow_params *p)
{
	const size_t n = (size_t) dem->width * dem->height;

	return n * (sizeof(double) + 1 + (p->routing == TG_ROUTE_D8 ? 0 : 8 * sizeof(float)));
}

tg_status
tg_cpu_route_get(const tg_ctx *ctx, const tg_band *dem, const tg_flow_params *p, tg_route *r,
				 bool *kept, tg_error *err)
{
	const size_t bytes = route_bytes(dem, p);
	route_key	key;
	tg_ctx		own;
	tg_status	st;

	*kept = false;
	if (ctx->route_cache_limit == 0 || bytes > ctx->route_cache_limit)
	{
		if (cache.valid && cache.route_bytes > ctx->route_cache_limit)
			drop_entry();
		return tg_cpu_route_build(ctx, dem, p, r, err);
	}
	key = key_of(dem, p);
	if (cache.valid && memcmp(&key, &cache.key, sizeof key) == 0)
	{
		*r = cache.route;
		*kept = true;
		if (ctx->stats)
		{
			/* after what the dispatcher said (a fallback to the CPU, say) */
			char	   *note = ctx->stats->note;
			size_t		len = strlen(note);

			snprintf(note + len, sizeof ctx->stats->note - len, "%s%s", len ? "; " : "",
					 "routing of this DEM kept from an earlier call");
		}
		return TG_OK;
	}
	drop_entry();
	own = malloc_ctx(ctx);
	st = tg_cpu_route_build(&own, dem, p, r, err);
	if (st != TG_OK)
		return st;
	cache.valid = true;
	cache.key = key;
	cache.route = *r;
	cache.route_bytes = bytes;
	*kept = true;
	return TG_OK;
}

void
tg_cpu_route_put(const tg_ctx *ctx, tg_route *r, bool kept)
{
	if (!kept)
		tg_route_free(ctx, r);
	memset(r, 0, sizeof *r);
}

const uint32_t *
tg_cpu_route_order(const tg_route *r, size_t *len, int *levels, const uint32_t **level_start)
{
	if (!cache.valid || cache.order == NULL || r->d8 != cache.route.d8)
		return NULL;
	*len = cache.order_len;
	*levels = cache.levels;
	*level_start = cache.level_start;
	return cache.order;
}

void
tg_cpu_route_keep_order(const tg_ctx *ctx, const tg_route *r, const uint32_t *order,
						const uint32_t *level_start, size_t len, int levels)
{
	const size_t bytes = (len + levels + 1) * sizeof(uint32_t);
	tg_ctx		plain;
	uint32_t   *copy,
			   *starts;

	if (!cache.valid || r->d8 != cache.route.d8 || cache.order != NULL ||
		cache.route_bytes + bytes > ctx->route_cache_limit)
		return;
	tg_ctx_init(&plain);
	copy = tg_alloc(&plain, (len ? len : 1) * sizeof(uint32_t));
	starts = tg_alloc(&plain, ((size_t) levels + 1) * sizeof(uint32_t));
	if (copy == NULL || starts == NULL)
	{
		/* keeping it is an optimisation only */
		tg_free(&plain, copy);
		tg_free(&plain, starts);
		return;
	}
	memcpy(copy, order, len * sizeof(uint32_t));
	memcpy(starts, level_start, ((size_t) levels + 1) * sizeof(uint32_t));
	cache.order = copy;
	cache.level_start = starts;
	cache.order_len = len;
	cache.levels = levels;
}

void
tg_route_cache_clear(void)
{
	drop_entry();
}
