/*
 * test_bmmq.c — BMMQ-tree suites: a hand-worked tree, every tree of many
 * random tiles checked node by node against a brute-force scan of its
 * quadrant, and GPU node arrays equal to the CPU's.
 */
#include "test.h"

static tg_ctx
ctx_for(tg_backend backend)
{
	tg_ctx		ctx;

	tg_ctx_init(&ctx);
	ctx.backend = backend;
	ctx.min_cells_for_gpu = 0;
	return ctx;
}

/* The code a cell of the padded 2^L square gets. */
static int
cell_code(const tg_band *b, uint32_t x, uint32_t y, const double *bounds, int nbounds)
{
	if (x >= (uint32_t) b->width || y >= (uint32_t) b->height)
		return TG_BMMQ_PAD_CODE(nbounds);
	return tg_bmmq_code(b, tg_band_get(b, (size_t) y * b->width + x), bounds, nbounds);
}

/*
 * Walk the tree from the root through first_child and check every node
 * against its quadrant's cells: min/max, leaf iff uniform or a cell, children
 * consecutive, breadth-first order (levels never decrease with position, and
 * within a level Morton keys increase), and every node reached exactly once.
 */
static bool
tree_matches_brute_force(const tg_band *b, const tg_bmmq_tree *t, const double *bounds,
						 int nbounds, const char *what)
{
	const int	L = t->levels;
	int64_t    *level = calloc(t->count, sizeof *level);
	int64_t    *key = calloc(t->count, sizeof *key);
	char	   *seen = calloc(t->count, 1);
	bool		ok = L == tg_bmmq_levels(b->width, b->height) && t->count >= 1;

	for (int64_t i = 0; i < t->count && ok; i++)
		level[i] = -1;
	if (ok)
	{
		level[0] = 0;
		key[0] = 0;
		seen[0] = 1;
	}
	for (int64_t i = 0; i < t->count && ok; i++)
	{
		const tg_bmmq_node *n = &t->nodes[i];
		const int	l = (int) level[i];
		const uint32_t side = 1u << (L - l);
		uint32_t	qx,
					qy;
		int			mn = 1 << 30,
					mx = -1;

		if (l < 0)
		{
			check(false, "%s: node %lld never reached", what, (long long) i);
			ok = false;
			break;
		}
		if (i > 0 && (level[i] < level[i - 1] ||
					  (level[i] == level[i - 1] && key[i] <= key[i - 1])))
		{
			check(false, "%s: node %lld out of breadth-first order", what, (long long) i);
			ok = false;
			break;
		}
		tg_morton_decode(key[i], &qx, &qy);
		for (uint32_t y = qy * side; y < (qy + 1) * side; y++)
			for (uint32_t x = qx * side; x < (qx + 1) * side; x++)
			{
				int			c = cell_code(b, x, y, bounds, nbounds);

				mn = c < mn ? c : mn;
				mx = c > mx ? c : mx;
			}
		if (n->min_bin != mn || n->max_bin != mx)
		{
			check(false, "%s: node %lld (level %d key %lld) has bins %d..%d, cells %d..%d",
				  what, (long long) i, l, (long long) key[i], n->min_bin, n->max_bin, mn, mx);
			ok = false;
			break;
		}
		if ((n->first_child < 0) != (mn == mx))
		{
			check(false, "%s: node %lld: first_child %d for bins %d..%d", what, (long long) i,
				  n->first_child, mn, mx);
			ok = false;
			break;
		}
		if (n->first_child >= 0)
		{
			if (n->first_child <= i || n->first_child + 4 > t->count)
			{
				check(false, "%s: node %lld: first_child %d out of range", what, (long long) i,
					  n->first_child);
				ok = false;
				break;
			}
			for (int c = 0; c < 4; c++)
			{
				int64_t		ch = n->first_child + c;

				if (seen[ch])
				{
					check(false, "%s: node %lld reached twice", what, (long long) ch);
					ok = false;
					break;
				}
				seen[ch] = 1;
				level[ch] = l + 1;
				key[ch] = 4 * key[i] + c;
			}
		}
	}
	free(level);
	free(key);
	free(seen);
	check(ok, "%s: tree matches a brute-force scan", what);
	return ok;
}

static void
test_bmmq_hand_worked(void)
{
	static const int16_t cells[16] = {
		1, 1, 2, 2,
		1, 1, 2, 2,
		3, 3, 4, 5,
		3, 3, 4, 4,
	};
	static const double bounds[] = {2, 3, 4, 5};
	static const tg_bmmq_node want[] = {
		{0, 4, 1},
		{0, 0, -1}, {1, 1, -1}, {2, 2, -1}, {3, 4, 5},
		{3, 3, -1}, {4, 4, -1}, {3, 3, -1}, {3, 3, -1},
	};
	tg_band		b = test_band(TG_PT_16BSI, cells, 4, 4, false, 0);
	tg_ctx		ctx = ctx_for(TG_BACKEND_CPU);
	tg_bmmq_tree t;
	tg_error	err;

	tg_error_clear(&err);
	check(tg_bmmq_build(&ctx, &b, 1, bounds, 4, &t, &err) == TG_OK, "bmmq hand: build");
	check(t.levels == 2 && t.count == 9, "bmmq hand: %lld nodes over %d levels", (long long) t.count,
		  t.levels);
	for (int i = 0; i < 9 && t.count == 9; i++)
		check(t.nodes[i].min_bin == want[i].min_bin && t.nodes[i].max_bin == want[i].max_bin &&
			  t.nodes[i].first_child == want[i].first_child,
			  "bmmq hand: node %d is (%d, %d, %d), want (%d, %d, %d)", i, t.nodes[i].min_bin,
			  t.nodes[i].max_bin, t.nodes[i].first_child, want[i].min_bin, want[i].max_bin,
			  want[i].first_child);
	tg_bmmq_tree_free(&ctx, &t);

	/* 3 x 3 with a nodata cell: padded to 4 x 4, pad and nodata codes above every bin */
	{
		static const int16_t c3[9] = {1, 1, 7, 1, -9, 7, 7, 7, 7};
		static const double b1[] = {5};
		tg_band		b3 = test_band(TG_PT_16BSI, c3, 3, 3, true, -9);

		check(tg_bmmq_build(&ctx, &b3, 1, b1, 1, &t, &err) == TG_OK, "bmmq 3x3: build");
		check(t.levels == 2 && t.nodes[0].min_bin == 0 && t.nodes[0].max_bin == TG_BMMQ_PAD_CODE(1),
			  "bmmq 3x3: root spans code 0 to the pad code");
		/* NW quadrant {1,1,1,nodata}: codes 0 and 2 */
		check(t.nodes[1].min_bin == 0 && t.nodes[1].max_bin == TG_BMMQ_NODATA_CODE(1),
			  "bmmq 3x3: NW quadrant holds the nodata code");
		tree_matches_brute_force(&b3, &t, b1, 1, "bmmq 3x3");
		tg_bmmq_tree_free(&ctx, &t);
	}

	/* bad boundaries are refused */
	{
		static const double bad[] = {1, 1};

		tg_error_clear(&err);
		check(tg_bmmq_build(&ctx, &b, 1, bad, 2, &t, &err) == TG_EINVAL,
			  "bmmq: equal boundaries refused");
		tg_error_clear(&err);
		check(tg_bmmq_build(&ctx, &b, 1, bounds, 0, &t, &err) == TG_EINVAL,
			  "bmmq: no boundaries refused");
	}
}

/* A smooth random field (so quadrants are often uniform) with optional holes. */
typedef struct bmmq_case
{
	tg_band		band;
	void	   *data;
} bmmq_case;

static bmmq_case
bmmq_case_make(tg_pixtype pt, int W, int H, bool holes)
{
	bmmq_case	c;
	const int	size = tg_pixtype_size(pt);
	const double fx = 0.02 + 0.1 * rng_uniform(),
				fy = 0.02 + 0.1 * rng_uniform(),
				ph = 6.28 * rng_uniform();

	c.data = malloc((size_t) W * H * size + 8);
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++)
		{
			double		v = 50 + 40 * sin(fx * x + ph) * cos(fy * y) + (rng_next() % 1000 == 0 ? 30 : 0);

			if (holes && rng_next() % 97 == 0)
				v = pt == TG_PT_32BF ? NAN : -1;
			tg_pixel_store(pt, c.data, (size_t) y * W + x, v);
		}
	c.band = test_band(pt, c.data, W, H, holes && pt != TG_PT_32BF, -1);
	return c;
}

static void
test_bmmq_random_vs_brute_force(void)
{
	static const int shapes[][2] = {{1, 1}, {1, 9}, {9, 1}, {2, 2}, {17, 33}, {64, 64}, {100, 37}, {256, 256}};
	static const tg_pixtype types[] = {TG_PT_8BUI, TG_PT_16BSI, TG_PT_32BF};
	static const double bounds[] = {20, 35, 50, 65, 80};
	tg_ctx		ctx = ctx_for(TG_BACKEND_CPU);

	for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
		for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
		{
			bmmq_case	c = bmmq_case_make(types[t], shapes[s][0], shapes[s][1], s % 2 == 1);
			tg_bmmq_tree tree;
			tg_error	err;
			char		what[96];

			snprintf(what, sizeof what, "bmmq %s %dx%d", tg_pixtype_name(types[t]), shapes[s][0],
					 shapes[s][1]);
			tg_error_clear(&err);
			check(tg_bmmq_build(&ctx, &c.band, 1, bounds, 5, &tree, &err) == TG_OK, "%s: build", what);
			tree_matches_brute_force(&c.band, &tree, bounds, 5, what);
			tg_bmmq_tree_free(&ctx, &tree);
			free(c.data);
		}
}

/* One batch of mixed sizes and types on both backends: identical node arrays. */
static void
test_bmmq_cuda_parity(void)
{
	static const int shapes[][2] = {{1, 1}, {3, 3}, {31, 17}, {32, 32}, {33, 33}, {256, 256},
	{256, 100}, {1000, 700}, {2048, 2048}};
	static const tg_pixtype types[] = {TG_PT_16BSI, TG_PT_32BF, TG_PT_8BUI};
	static const double bounds[] = {0, 4, 11, 18, 27, 40, 77, 190, 1004};
	enum
	{
		NT = 3 * 9
	};
	tg_band		bands[NT];
	void	   *data[NT];
	tg_bmmq_tree cpu[NT],
				gpu[NT];
	tg_ctx		cctx = ctx_for(TG_BACKEND_CPU),
				gctx = ctx_for(TG_BACKEND_GPU);
	tg_device_info info;
	tg_error	err;
	int			n = 0;

	tg_device_query(0, &info);
	if (!info.available)
	{
		printf("skipped: BMMQ CUDA parity (no GPU: %s)\n", info.reason);
		return;
	}
	for (size_t t = 0; t < 3; t++)
		for (size_t s = 0; s < 9; s++, n++)
		{
			bmmq_case	c = bmmq_case_make(types[t], shapes[s][0], shapes[s][1], s % 2 == 0);

			bands[n] = c.band;
			data[n] = c.data;
		}
	tg_error_clear(&err);
	check(tg_bmmq_build(&cctx, bands, NT, bounds, 9, cpu, &err) == TG_OK, "bmmq parity: CPU build");
	tg_error_clear(&err);
	check(tg_bmmq_build(&gctx, bands, NT, bounds, 9, gpu, &err) == TG_OK, "bmmq parity: GPU build: %s",
		  err.message);
	for (int i = 0; i < NT && err.code == TG_OK; i++)
	{
		check(cpu[i].levels == gpu[i].levels && cpu[i].count == gpu[i].count &&
			  memcmp(cpu[i].nodes, gpu[i].nodes, cpu[i].count * sizeof(tg_bmmq_node)) == 0,
			  "bmmq parity: tile %d (%s %dx%d): GPU %lld nodes, CPU %lld, arrays %s", i,
			  tg_pixtype_name(bands[i].pixtype), bands[i].width, bands[i].height,
			  (long long) gpu[i].count, (long long) cpu[i].count,
			  cpu[i].count == gpu[i].count &&
			  memcmp(cpu[i].nodes, gpu[i].nodes, cpu[i].count * sizeof(tg_bmmq_node)) == 0
			  ? "equal" : "differ");
		tg_bmmq_tree_free(&cctx, &cpu[i]);
		tg_bmmq_tree_free(&gctx, &gpu[i]);
	}

	/* a memory cap that forces small batches gives the same trees */
	gctx.device_memory_limit = 96u << 20;
	tg_error_clear(&err);
	check(tg_bmmq_build(&gctx, bands, NT, bounds, 9, gpu, &err) == TG_OK,
		  "bmmq parity: small batches: %s", err.message);
	check(tg_bmmq_build(&cctx, bands, NT, bounds, 9, cpu, &err) == TG_OK, "bmmq parity: CPU again");
	for (int i = 0; i < NT && err.code == TG_OK; i++)
	{
		check(cpu[i].count == gpu[i].count &&
			  memcmp(cpu[i].nodes, gpu[i].nodes, cpu[i].count * sizeof(tg_bmmq_node)) == 0,
			  "bmmq parity, small batches: tile %d equal", i);
		tg_bmmq_tree_free(&cctx, &cpu[i]);
		tg_bmmq_tree_free(&gctx, &gpu[i]);
	}
	for (int i = 0; i < NT; i++)
		free(data[i]);
}

void
test_bmmq(void)
{
	test_bmmq_hand_worked();
	test_bmmq_random_vs_brute_force();
	test_bmmq_cuda_parity();
}
