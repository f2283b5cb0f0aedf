/*
 * bmmq_cpu.c — BMMQ-tree construction on the CPU, the reference the GPU
 * builder is tested against.  Per tile: bin every cell into Z order, build
 * the min/max pyramid bottom up, then emit the kept nodes breadth first.
 * The breadth-first walk uses an explicit list per level, an independent
 * derivation of the positions the GPU computes with a prefix sum.
 */
#include "bmmq/bmmq.h"

#include <string.h>

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

/*
 * One tile's pyramid: Z-ordered leaf codes and the min/max of every upper
 * quadrant, then how many nodes its tree keeps.
 */
typedef struct pyramid
{
	int			levels;
	uint16_t   *zbin;			/* 4^L leaf codes */
	uint16_t   *lmin;			/* levels 0 .. L - 1, level l from tg_bmmq_level_start(l) */
	uint16_t   *lmax;
	uint64_t   *keys;			/* scratch of the breadth-first walk: a key per node */
} pyramid;

static void
build_pyramid(const tg_band *b, const double *bounds, int nbounds, pyramid *p, tg_bmmq_tree *tree)
{
	const int	L = p->levels;
	int64_t		nonuniform = 0;

	bin_cells(b, L, bounds, nbounds, p->zbin);
	/* the pyramid, finest upper level first */
	for (int l = L - 1; l >= 0; l--)
	{
		const int64_t start = tg_bmmq_level_start(l);
		const int64_t child_start = tg_bmmq_level_start(l + 1);
		const int64_t count = (int64_t) 1 << (2 * l);

		for (int64_t k = 0; k < count; k++)
		{
			uint16_t	mn = 0xFFFF,
						mx = 0;

			for (int c = 0; c < 4; c++)
			{
				int64_t		child = 4 * k + c;
				uint16_t	cmin = l + 1 == L ? p->zbin[child] : p->lmin[child_start + child];
				uint16_t	cmax = l + 1 == L ? p->zbin[child] : p->lmax[child_start + child];

				mn = cmin < mn ? cmin : mn;
				mx = cmax > mx ? cmax : mx;
			}
			p->lmin[start + k] = mn;
			p->lmax[start + k] = mx;
			nonuniform += mn != mx;
		}
	}
	/* every non-uniform node is kept and has four kept children */
	tree->levels = L;
	tree->count = 1 + 4 * nonuniform;
}

/* The kept nodes, breadth first: those of level l are [level_begin, level_end). */
static void
emit_nodes(const pyramid *p, tg_bmmq_tree *tree)
{
	const int	L = p->levels;
	uint64_t   *keys = p->keys;
	int64_t		next = 1,
				level_begin = 0,
				level_end = 1;

	keys[0] = 0;
	for (int l = 0; l <= L; l++)
	{
		const int64_t start = tg_bmmq_level_start(l);

		for (int64_t i = level_begin; i < level_end; i++)
		{
			tg_bmmq_node *node = &tree->nodes[i];
			uint64_t	k = keys[i];

			node->min_bin = l == L ? p->zbin[k] : p->lmin[start + k];
			node->max_bin = l == L ? p->zbin[k] : p->lmax[start + k];
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
}

/*
 * Tiles go in groups: the pyramids of a group are built at once, then the
 * calling thread allocates each tree's nodes (their number is known only
 * now, and the caller's allocator may serve the calling thread alone), then
 * the nodes are emitted at once.
 */
#define GROUP_TILES 64

typedef struct bmmq_job
{
	const tg_band *tiles;
	const double *bounds;
	int			nbounds;
	tg_bmmq_tree *trees;
	pyramid    *pyr;			/* the group's */
	int			first;			/* the group's first tile */
} bmmq_job;

static tg_status
pyramid_task(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	const bmmq_job *j = arg;
	const int	t = j->first + (int) task;

	build_pyramid(&j->tiles[t], j->bounds, j->nbounds, &j->pyr[task], &j->trees[t]);
	return TG_OK;
}

static tg_status
emit_task(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	const bmmq_job *j = arg;

	emit_nodes(&j->pyr[task], &j->trees[j->first + task]);
	return TG_OK;
}

static void
pyramids_free(const tg_ctx *ctx, pyramid *pyr, int n)
{
	for (int k = 0; k < n; k++)
	{
		tg_free(ctx, pyr[k].zbin);
		tg_free(ctx, pyr[k].lmin);
		tg_free(ctx, pyr[k].lmax);
		tg_free(ctx, pyr[k].keys);
		memset(&pyr[k], 0, sizeof pyr[k]);
	}
}

tg_status
tg_cpu_bmmq_build(const tg_ctx *ctx, const tg_band *tiles, int ntiles,
				  const double *bounds, int nbounds, tg_bmmq_tree *trees, tg_error *err)
{
	pyramid		pyr[GROUP_TILES];
	bmmq_job	j = {tiles, bounds, nbounds, trees, pyr, 0};
	tg_status	st = TG_OK;

	memset(pyr, 0, sizeof pyr);
	for (int i = 0; i < ntiles; i++)
	{
		trees[i].nodes = NULL;
		trees[i].count = 0;
	}
	for (j.first = 0; j.first < ntiles && st == TG_OK; j.first += GROUP_TILES)
	{
		const int	n = ntiles - j.first < GROUP_TILES ? ntiles - j.first : GROUP_TILES;

		for (int k = 0; k < n && st == TG_OK; k++)
		{
			const tg_band *b = &tiles[j.first + k];
			const int	L = tg_bmmq_levels(b->width, b->height);

			pyr[k].levels = L;
			pyr[k].zbin = tg_alloc(ctx, ((size_t) 1 << (2 * L)) * sizeof(uint16_t));
			pyr[k].lmin = tg_alloc(ctx, (tg_bmmq_level_start(L) + 1) * sizeof(uint16_t));
			pyr[k].lmax = tg_alloc(ctx, (tg_bmmq_level_start(L) + 1) * sizeof(uint16_t));
			if (!pyr[k].zbin || !pyr[k].lmin || !pyr[k].lmax)
				st = tg_error_set(err, TG_ENOMEM, "out of memory for a %d x %d quadtree", 1 << L, 1 << L);
		}
		if (st == TG_OK)
			st = tg_parallel(ctx, n, pyramid_task, &j, err);
		for (int k = 0; k < n && st == TG_OK; k++)
		{
			tg_bmmq_tree *tree = &trees[j.first + k];

			tree->nodes = tg_alloc(ctx, tree->count * sizeof *tree->nodes);
			pyr[k].keys = tg_alloc(ctx, tree->count * sizeof(uint64_t));
			if (!tree->nodes || !pyr[k].keys)
				st = tg_error_set(err, TG_ENOMEM, "out of memory for %lld quadtree nodes",
								  (long long) tree->count);
		}
		if (st == TG_OK)
			st = tg_parallel(ctx, n, emit_task, &j, err);
		pyramids_free(ctx, pyr, n);
	}
	return st;
}
