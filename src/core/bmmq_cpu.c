/*
 * bmmq_cpu.c — BMMQ-tree construction on the CPU, the reference the GPU
 * builder is tested against.  Per tile: bin every cell into Z order, build
 * the min/max pyramid bottom up, then emit the kept nodes breadth first.
 * The breadth-first walk uses an explicit list per level, an independent
 * derivation of the positions the GPU computes with a prefix sum.
 */
#include "tg_backends.h"
#include "tg_bmmq.h"

#include <string.h>

int
tg_bmmq_levels(int width, int height)
{
	int			side = width > height ? width : height;
	int			levels = 0;

	while ((1 << levels) < side)
		levels++;
	return levels;
}

int
tg_bmmq_code(const tg_band *band, double value, const double *bounds, int nbounds)
{
	if (tg_band_value_is_nodata(band, value))
		return TG_BMMQ_NODATA_CODE(nbounds);
	return tg_bmmq_bin(value, bounds, nbounds);
}

void
tg_morton_decode(uint64_t key, uint32_t *col, uint32_t *row)
{
	*col = tg_morton_compact(key);
	*row = tg_morton_compact(key >> 1);
}

uint64_t
tg_morton_encode(uint32_t col, uint32_t row)
{
	return tg_morton_spread(col) | (tg_morton_spread(row) << 1);
}

void
tg_bmmq_tree_free(const tg_ctx *ctx, tg_bmmq_tree *tree)
{
	if (tree->nodes)
		tg_free(ctx, tree->nodes);
	tree->nodes = NULL;
	tree->count = 0;
}

/* Leaf codes of a tile in Z order, padding included. */
static void
bin_cells(const tg_band *b, int levels, const double *bounds, int nbounds,
		  uint16_t *zbin)
{
	const uint32_t side = 1u << levels;
	const uint16_t pad = (uint16_t) TG_BMMQ_PAD_CODE(nbounds);
	const uint16_t nodata = (uint16_t) TG_BMMQ_NODATA_CODE(nbounds);

	for (uint32_t y = 0; y < side; y++)
	{
		const uint64_t ybits = tg_morton_spread(y) << 1;

		for (uint32_t x = 0; x < side; x++)
		{
			uint16_t	code = pad;

			if (x < (uint32_t) b->width && y < (uint32_t) b->height)
			{
				double		v = tg_band_get(b, (size_t) y * b->width + x);

				code = tg_band_value_is_nodata(b, v)
					? nodata : (uint16_t) tg_bmmq_bin(v, bounds, nbounds);
			}
			zbin[ybits | tg_morton_spread(x)] = code;
		}
	}
}

static tg_status
build_tile(const tg_ctx *ctx, const tg_band *b, const double *bounds, int nbounds,
		   tg_bmmq_tree *tree, tg_error *err)
{
	const int	L = tg_bmmq_levels(b->width, b->height);
	const int64_t ncells = (int64_t) 1 << (2 * L);
	const int64_t nupper = tg_bmmq_level_start(L);	/* entries of levels 0..L-1 */
	uint16_t   *zbin = NULL;
	uint16_t   *lmin = NULL;
	uint16_t   *lmax = NULL;
	uint64_t   *keys = NULL;
	int64_t		nonuniform = 0;
	int64_t		level_begin,
				level_end,
				next;

	tree->levels = L;
	tree->count = 0;
	tree->nodes = NULL;

	zbin = tg_alloc(ctx, ncells * sizeof *zbin);
	lmin = tg_alloc(ctx, (nupper + 1) * sizeof *lmin);
	lmax = tg_alloc(ctx, (nupper + 1) * sizeof *lmax);
	if (!zbin || !lmin || !lmax)
	{
		tg_error_set(err, TG_ENOMEM, "out of memory for a %d x %d quadtree", 1 << L, 1 << L);
		goto done;
	}
	bin_cells(b, L, bounds, nbounds, zbin);

	/* the pyramid, finest upper level first */
	for (int l = L - 1; l >= 0; l--)
	{
		const int64_t start = tg_bmmq_level_start(l);
		const int64_t child_start = tg_bmmq_level_start(l + 1);
		const int64_t count = (int64_t) 1 << (2 * l);

		if (tg_canceled(ctx))
		{
			tg_error_set(err, TG_ECANCELED, "quadtree build canceled");
			goto done;
		}
		for (int64_t k = 0; k < count; k++)
		{
			uint16_t	mn = 0xFFFF,
						mx = 0;

			for (int c = 0; c < 4; c++)
			{
				int64_t		child = 4 * k + c;
				uint16_t	cmin = l + 1 == L ? zbin[child] : lmin[child_start + child];
				uint16_t	cmax = l + 1 == L ? zbin[child] : lmax[child_start + child];

				mn = cmin < mn ? cmin : mn;
				mx = cmax > mx ? cmax : mx;
			}
			lmin[start + k] = mn;
			lmax[start + k] = mx;
			nonuniform += mn != mx;
		}
	}

	/* every non-uniform node is kept and has four kept children */
	tree->count = 1 + 4 * nonuniform;
	tree->nodes = tg_alloc(ctx, tree->count * sizeof *tree->nodes);
	keys = tg_alloc(ctx, tree->count * sizeof *keys);
	if (!tree->nodes || !keys)
	{
		tg_error_set(err, TG_ENOMEM, "out of memory for %lld quadtree nodes",
					 (long long) tree->count);
		goto done;
	}

	/* breadth first: the kept nodes of level l are [level_begin, level_end) */
	keys[0] = 0;
	next = 1;
	level_begin = 0;
	level_end = 1;
	for (int l = 0; l <= L; l++)
	{
		const int64_t start = tg_bmmq_level_start(l);

		for (int64_t i = level_begin; i < level_end; i++)
		{
			tg_bmmq_node *node = &tree->nodes[i];
			uint64_t	k = keys[i];

			node->min_bin = l == L ? zbin[k] : lmin[start + k];
			node->max_bin = l == L ? zbin[k] : lmax[start + k];
			node->first_child = -1;
			if (node->min_bin != node->max_bin)
			{
				node->first_child = (int32_t) next;
				for (int c = 0; c < 4; c++)
					keys[next++] = 4 * k + c;
			}
		}
		level_begin = level_end;
		level_end = next;
	}

done:
	tg_free(ctx, zbin);
	tg_free(ctx, lmin);
	tg_free(ctx, lmax);
	tg_free(ctx, keys);
	if (err->code != TG_OK)
		tg_bmmq_tree_free(ctx, tree);
	return err->code;
}

tg_status
tg_cpu_bmmq_build(const tg_ctx *ctx, const tg_band *tiles, int ntiles,
				  const double *bounds, int nbounds, tg_bmmq_tree *trees, tg_error *err)
{
	for (int i = 0; i < ntiles; i++)
		if (build_tile(ctx, &tiles[i], bounds, nbounds, &trees[i], err) != TG_OK)
		{
			for (int j = 0; j < i; j++)
				tg_bmmq_tree_free(ctx, &trees[j]);
			return err->code;
		}
	return TG_OK;
}
