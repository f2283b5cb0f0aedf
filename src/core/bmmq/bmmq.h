/*
 * bmmq.h — BMMQ-trees (bmmq/): the pieces the CPU and CUDA builders share,
 * so both bin, order and lay out cells in exactly the same way, and the CPU
 * builder (bmmq_cpu.c).  Internal to the core and cuda/; the trees are
 * described in tg_core.h.
 */
#ifndef TG_BMMQ_H
#define TG_BMMQ_H

#include "raster/raster.h"

/* Number of boundaries <= v (binary search; bounds strictly increasing). */
TG_HD int
tg_bmmq_bin(double v, const double *bounds, int nbounds)
{
	int			lo = 0,
				hi = nbounds;

	while (lo < hi)
	{
		int			mid = (lo + hi) >> 1;

		if (bounds[mid] <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Spread the low 32 bits of x to the even bits of a 64-bit word. */
TG_HD uint64_t
tg_morton_spread(uint32_t x)
{
	uint64_t	v = x;

	v = (v | (v << 16)) & 0x0000FFFF0000FFFFull;
	v = (v | (v << 8)) & 0x00FF00FF00FF00FFull;
	v = (v | (v << 4)) & 0x0F0F0F0F0F0F0F0Full;
	v = (v | (v << 2)) & 0x3333333333333333ull;
	v = (v | (v << 1)) & 0x5555555555555555ull;
	return v;
}

TG_HD uint32_t
tg_morton_compact(uint64_t v)
{
	v &= 0x5555555555555555ull;
	v = (v | (v >> 1)) & 0x3333333333333333ull;
	v = (v | (v >> 2)) & 0x0F0F0F0F0F0F0F0Full;
	v = (v | (v >> 4)) & 0x00FF00FF00FF00FFull;
	v = (v | (v >> 8)) & 0x0000FFFF0000FFFFull;
	v = (v | (v >> 16)) & 0x00000000FFFFFFFFull;
	return (uint32_t) v;
}

/*
 * Index of level l's first entry in a tile's table of levels 0..levels-1
 * stored one after another: (4^l - 1) / 3.
 */
TG_HD int64_t
tg_bmmq_level_start(int l)
{
	return (((int64_t) 1 << (2 * l)) - 1) / 3;
}

#ifdef __cplusplus
extern "C"
{
#endif

/* Bin code of a stored value (the band's nodata rules apply). */
int			tg_bmmq_code(const tg_band *band, double value, const double *bounds, int nbounds);

/* tg_bmmq_build's CPU side. */
tg_status	tg_cpu_bmmq_build(const tg_ctx *ctx, const tg_band *tiles, int ntiles,
							  const double *bounds, int nbounds, tg_bmmq_tree *trees,
							  tg_error *err);

#ifdef __cplusplus
}
#endif

#endif							/* TG_BMMQ_H */
