/*
 * test_threads.c — every CPU operation gives the same bits for 1, 2, 3 and 7
 * threads, on inputs large enough to be cut into many tasks and bands: a
 * terrain with pits, plateaus, a flat sea at 0 touching the edge, nodata
 * holes and a nodata frame piece (integer, float and wide-range DEMs, so
 * that both priority queues of the fill run); and the pool itself: tasks run
 * once each, the lowest failing task's error wins, a cancel stops a region,
 * and the threads asked for are the threads that ran.
 */
#include "test.h"

#define TW 300
#define TH 1200
#define ND (-9999.0)

static const int thread_counts[] = {2, 3, 7};

/* A rough terrain: ridges, random pits and plateaus, a sea, nodata holes. */
static void
make_terrain(double *z, int W, int H, double scale, bool integer)
{
	rng_state = 0x5EED5EEDull;
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++)
		{
			double		v = 200 + 80 * sin(x / 23.0) * cos(y / 31.0) + 0.15 * (H - y) +
				40 * rng_uniform();

			if (x < W / 4 && y > H - H / 5)
				v = 0;			/* a sea touching the west and south edges */
			if ((x / 37 + y / 41) % 5 == 0 && x % 37 < 12 && y % 41 < 9)
				v = 150;		/* plateaus */
			if ((x * 7 + y * 13) % 997 == 0)
				v = NAN;		/* scattered voids */
			if (x > W / 2 && x < W / 2 + 20 && y > H / 3 && y < H / 3 + 25)
				v = NAN;		/* a hole */
			z[(size_t) y * W + x] = isnan(v) ? ND : integer ? rint(v * scale) : v * scale;
		}
}

static tg_ctx
ctx_with(int threads, tg_run_stats *stats)
{
	tg_ctx		ctx;

	tg_ctx_init(&ctx);
	ctx.backend = TG_BACKEND_CPU;
	ctx.threads = threads;
	ctx.stats = stats;
	return ctx;
}

static tg_flow_params
flow(tg_routing routing, bool fill, bool geographic)
{
	tg_flow_params p = flow_params(routing, TW, TH, 30, fill);

	p.threshold = 50;
	if (geographic)
	{
		p.geom.geographic = true;
		p.geom.lat_top = 47.0;
		p.geom.lat_step = -1.0 / 1200;
		p.geom.lon_step = 1.0 / 1200;
	}
	return p;
}

/* One operation over a DEM into out (bytes), with the threads given. */
typedef tg_status (*op_fn) (const tg_ctx *ctx, const tg_band *dem, const void *arg, void *out,
							tg_error *err);

typedef struct op_case
{
	const char *name;
	op_fn		fn;
	const void *arg;
	size_t		bytes_per_cell;
} op_case;

static void
check_threads(const op_case *c, const tg_band *dem)
{
	const size_t n = (size_t) dem->width * dem->height;
	const size_t bytes = n * c->bytes_per_cell;
	const size_t usual_kept = tg_kept_block_bytes;
	uint8_t    *one = malloc(bytes),
			   *many = malloc(bytes);
	tg_run_stats stats;
	tg_ctx		ctx = ctx_with(1, &stats);
	tg_error	err;

	memset(one, 0xA5, bytes);	/* bytes an output leaves alone compare equal */
	tg_error_clear(&err);
	/*
	 * one thread, every buffer fresh; the others reuse every block the call
	 * freed (with what an earlier phase left in it), as large grids do
	 */
	tg_kept_block_bytes = SIZE_MAX;
	check(c->fn(&ctx, dem, c->arg, one, &err) == TG_OK, "%s, 1 thread: %s", c->name, err.message);
	check(stats.threads == 1, "%s, 1 thread: %d ran", c->name, stats.threads);
	tg_kept_block_bytes = 1;
	for (size_t k = 0; k < sizeof thread_counts / sizeof *thread_counts; k++)
	{
		const int	t = thread_counts[k];

		ctx = ctx_with(t, &stats);
		memset(many, 0xA5, bytes);
		tg_error_clear(&err);
		check(c->fn(&ctx, dem, c->arg, many, &err) == TG_OK, "%s, %d threads: %s", c->name, t,
			  err.message);
		check(memcmp(one, many, bytes) == 0, "%s: %d threads differ from 1", c->name, t);
		check(stats.threads > 1 && stats.threads <= t, "%s: %d threads asked, %d ran", c->name, t,
			  stats.threads);
	}
	tg_kept_block_bytes = usual_kept;
	free(one);
	free(many);
}

/* ------------------------------------------------------------------------
 * The operations
 * ------------------------------------------------------------------------ */
static tg_status
op_slope(const tg_ctx *ctx, const tg_band *dem, const void *arg, void *out, tg_error *err)
{
	tg_slope_params p = {30, 30, 1, TG_SLOPE_DEGREES, -9999.0f};

	return tg_slope(ctx, dem, &p, out, err);
}

/* every terrain derivative, each product's plane 8 bytes a cell apart */
static tg_status
op_terrain(const tg_ctx *ctx, const tg_band *dem, const void *arg, void *out, tg_error *err)
{
	const size_t n = (size_t) dem->width * dem->height;
	tg_terrain_params p;
	void	   *planes[TG_TERRAIN_PRODUCTS];

	test_terrain_params(&p, 30);
	for (int k = 0; k < TG_TERRAIN_PRODUCTS; k++)
		planes[k] = (double *) out + (size_t) k * n;
	return tg_terrain(ctx, dem, &p, planes, err);
}

static tg_status
op_fill(const tg_ctx *ctx, const tg_band *dem, const void *arg, void *out, tg_error *err)
{
	return tg_fill(ctx, dem, arg, ND, out, err);
}

static tg_status
op_direction(const tg_ctx *ctx, const tg_band *dem, const void *arg, void *out, tg_error *err)
{
	const tg_flow_params *p = arg;

	return tg_flow_direction(ctx, dem, p, p->routing == TG_ROUTE_D8 ? out : NULL,
							 p->routing == TG_ROUTE_D8 ? NULL : out, err);
}

typedef struct accum_arg
{
	tg_flow_params p;
	tg_accum_method method;
	tg_accum_units units;
} accum_arg;

static tg_status
op_accumulation(const tg_ctx *ctx, const tg_band *dem, const void *arg, void *out, tg_error *err)
{
	const accum_arg *a = arg;

	return tg_flow_accumulation(ctx, dem, NULL, &a->p, a->method, a->units, out, err);
}

/* the chain's three products side by side: accumulation, surface, receivers */
static tg_status
op_hydrology(const tg_ctx *ctx, const tg_band *dem, const void *arg, void *out, tg_error *err)
{
	const accum_arg *a = arg;
	const size_t n = (size_t) dem->width * dem->height;
	tg_flow_products pr = {out, (double *) out + n, TG_PT_64BF, ND, (uint16_t *) ((double *) out + 2 * n), NULL};

	return tg_hydrology(ctx, dem, NULL, &a->p, a->method, a->units, &pr, err);
}

static tg_status
op_rusle(const tg_ctx *ctx, const tg_band *dem, const void *arg, void *out, tg_error *err)
{
	tg_rusle_params rp;
	const size_t n = (size_t) dem->width * dem->height;

	rp = rusle_params(*(const tg_flow_params *) arg);
	return tg_rusle(ctx, dem, &rp, out, (float *) out + n, err);
}

static tg_status
op_travel(const tg_ctx *ctx, const tg_band *dem, const void *arg, void *out, tg_error *err)
{
	tg_travel_params tp;
	const size_t n = (size_t) dem->width * dem->height;
	tg_status	st;

	memset(&tp, 0, sizeof tp);
	tp.flow = *(const tg_flow_params *) arg;
	tp.roughness.value = 0.05;
	tp.velocity.value = 2;
	tp.b = 0.5;
	tp.min_slope = 0.001;
	st = tg_travel_time(ctx, dem, &tp, out, NULL, err);
	if (st != TG_OK)
		return st;
	/* and a watershed (with its times) through a cell in the sea's shore */
	tp.has_outlet = true;
	tp.outlet_col = TW / 4;
	tp.outlet_row = TH - TH / 5 - 1;
	return tg_travel_time(ctx, dem, &tp, (float *) out + n, (uint8_t *) ((float *) out + 2 * n), err);
}

static tg_status
op_viewshed(const tg_ctx *ctx, const tg_band *dem, const void *arg, void *out, tg_error *err)
{
	tg_viewshed_params p;

	memset(&p, 0, sizeof p);
	p.observer_col = TW / 3;
	p.observer_row = TH / 2;
	p.observer_height = 10;
	p.earth_radius = 6370997;
	p.refraction = 1.0 / 7;
	p.cell_x = p.cell_y = 30;
	p.output = TG_VIEW_ANGLE;
	p.algorithm = *(const tg_view_algorithm *) arg;
	if (p.algorithm == TG_VIEW_R3)
		p.max_distance = 3000;	/* the exact reference is slow */
	p.geom.width = dem->width;
	p.geom.height = dem->height;
	return tg_viewshed(ctx, dem, &p, out, err);
}

static tg_status
op_viewshed_count(const tg_ctx *ctx, const tg_band *dem, const void *arg, void *out, tg_error *err)
{
	static const int cols[5] = {10, 100, 200, 290, 150},
				rows[5] = {10, 300, 700, 1100, 600};
	tg_viewshed_params p;

	memset(&p, 0, sizeof p);
	p.observer_height = 5;
	p.max_distance = 9000;
	p.earth_radius = 6370997;
	p.refraction = 1.0 / 7;
	p.cell_x = p.cell_y = 30;
	p.geom.width = dem->width;
	p.geom.height = dem->height;
	return tg_viewshed_count(ctx, dem, &p, cols, rows, 5, out, err);
}

/* BMMQ over the DEM cut into 64 x 64 tiles: the node arrays, concatenated */
static tg_status
op_bmmq(const tg_ctx *ctx, const tg_band *dem, const void *arg, void *out, tg_error *err)
{
	const int	side = 64,
				tx = (dem->width + side - 1) / side,
				ty = (dem->height + side - 1) / side;
	const double bounds[4] = {100, 180, 240, 300};
	tg_band    *tiles = calloc((size_t) tx * ty, sizeof(tg_band));
	tg_bmmq_tree *trees = calloc((size_t) tx * ty, sizeof(tg_bmmq_tree));
	double	   *pix = malloc((size_t) dem->width * dem->height * sizeof(double));
	double	   *next = pix;
	uint8_t    *o = out;
	size_t		room = (size_t) dem->width * dem->height * 24;
	tg_status	st;

	memset(out, 0, room);
	for (int j = 0; j < ty; j++)
		for (int i = 0; i < tx; i++)
		{
			const int	w = i == tx - 1 ? dem->width - i * side : side,
						h = j == ty - 1 ? dem->height - j * side : side;

			for (int y = 0; y < h; y++)
				for (int x = 0; x < w; x++)
					next[(size_t) y * w + x] = tg_band_get(dem, (size_t) (j * side + y) * dem->width + i * side + x);
			tiles[j * tx + i] = test_band(TG_PT_64BF, next, w, h, true, ND);
			next += (size_t) w * h;
		}
	st = tg_bmmq_build(ctx, tiles, tx * ty, bounds, 4, trees, err);
	for (int k = 0; st == TG_OK && k < tx * ty; k++)
	{
		size_t		b = (size_t) trees[k].count * sizeof(tg_bmmq_node);

		if (b + sizeof(int64_t) <= room)
		{
			memcpy(o, &trees[k].count, sizeof(int64_t));
			memcpy(o + sizeof(int64_t), trees[k].nodes, b);
			o += b + sizeof(int64_t);
			room -= b + sizeof(int64_t);
		}
	}
	for (int k = 0; k < tx * ty; k++)
		tg_bmmq_tree_free(ctx, &trees[k]);
	free(tiles);
	free(trees);
	free(pix);
	return st;
}

/* ------------------------------------------------------------------------
 * The pool
 * ------------------------------------------------------------------------ */
typedef struct count_job
{
	int			runs[1000];
	int			fail_from;		/* tasks at or above this fail */
} count_job;

static tg_status
count_task(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	count_job  *j = arg;

	__atomic_add_fetch(&j->runs[task], 1, __ATOMIC_RELAXED);
	if (task >= j->fail_from)
		return tg_error_set(err, TG_EDATA, "task %lld failed", (long long) task);
	return TG_OK;
}

static bool
cancel_after_first(void *arg)
{
	return __atomic_load_n((int *) arg, __ATOMIC_RELAXED) > 0;
}

static tg_status
slow_task(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	int		   *started = arg;

	__atomic_add_fetch(started, 1, __ATOMIC_RELAXED);
	/* a long task that polls, as the algorithms do */
	for (int i = 0; i < 2000; i++)
	{
		struct timespec ms = {0, 1000000};

		if (tg_canceled(ctx))
			return tg_error_set(err, TG_ECANCELED, "canceled");
		nanosleep(&ms, NULL);
	}
	return TG_OK;
}

/*
 * Blocks kept within a budget (strips): a freed block serves the next
 * allocation it fits, and where a fresh one would take the call past the
 * budget, the kept blocks go back first, so the call's peak stays within it.
 */
static void
test_blocks_within(void)
{
	const size_t mb = (size_t) 1 << 20,
				tracked = tg_tracked_bytes,
				kept = tg_kept_block_bytes;
	tg_run_stats stats;
	tg_ctx		ctx = ctx_with(1, &stats),
				call;
	void	   *a,
			   *b,
			   *c,
			   *d;

	tg_tracked_bytes = tg_kept_block_bytes = 1024;
	memset(&stats, 0, sizeof stats);
	tg_call_open(&ctx, &call);
	tg_blocks_keep_within(&call, 3 * mb);
	a = tg_alloc(&call, mb);
	tg_free(&call, a);
	b = tg_alloc(&call, mb);
	check(a != NULL && b == a, "blocks within a budget: a freed block serves the next allocation it fits");
	tg_free(&call, b);
	c = tg_alloc(&call, 5 * mb / 2);	/* with the kept megabyte: 3.5 MB */
	tg_free(&call, c);
	d = tg_alloc(&call, mb);			/* with the kept 2.5 MB, which it does not fit (twice its size): 3.5 MB */
	check(c != NULL && d != NULL, "blocks within a budget: allocations");
	tg_free(&call, d);
	tg_call_close(&call);
	check(stats.peak_host_bytes == 5 * mb / 2, "blocks within a budget of 3 MB: peak %zu bytes, 2.5 MB expected",
		  stats.peak_host_bytes);

	/* blocks below the kept size are never served from the kept ones, but still counted: those go back too */
	tg_kept_block_bytes = 2 * mb;
	memset(&stats, 0, sizeof stats);
	tg_call_open(&ctx, &call);
	tg_blocks_keep_within(&call, 3 * mb);
	c = tg_alloc(&call, 5 * mb / 2);
	tg_free(&call, c);
	d = tg_alloc(&call, mb);			/* smaller than a kept block: fresh, with the kept 2.5 MB 3.5 MB */
	check(d != NULL, "blocks within a budget: a small allocation");
	tg_free(&call, d);
	tg_call_close(&call);
	check(stats.peak_host_bytes == 5 * mb / 2,
		  "blocks within a budget of 3 MB, a fresh block smaller than those kept: peak %zu bytes, 2.5 MB expected",
		  stats.peak_host_bytes);
	tg_tracked_bytes = tracked;
	tg_kept_block_bytes = kept;
}

static void
test_pool(void)
{
	count_job  *j = calloc(1, sizeof *j);
	tg_run_stats stats;
	tg_ctx		ctx = ctx_with(4, &stats),
				call;
	tg_error	err;
	tg_status	st;
	int			started = 0;
	bool		once = true;

	memset(&stats, 0, sizeof stats);
	tg_call_open(&ctx, &call);
	j->fail_from = 1000;
	tg_error_clear(&err);
	check(tg_parallel(&call, 1000, count_task, j, &err) == TG_OK, "pool: 1000 tasks run");
	for (int t = 0; t < 1000; t++)
		once = once && j->runs[t] == 1;
	check(once, "pool: every task runs exactly once");

	memset(j, 0, sizeof *j);
	j->fail_from = 600;
	tg_error_clear(&err);
	st = tg_parallel(&call, 1000, count_task, j, &err);
	check(st == TG_EDATA && strcmp(err.message, "task 600 failed") == 0,
		  "pool: the lowest failing task's error wins (got \"%s\")", err.message);
	once = true;
	for (int t = 0; t < 600; t++)
		once = once && j->runs[t] == 1;
	check(once, "pool: every task below the failing one ran");

	/* a cancel raised while tasks run stops them all */
	call.cancel = cancel_after_first;
	call.cancel_arg = &started;
	tg_error_clear(&err);
	{
		struct timespec a,
					b;

		clock_gettime(CLOCK_MONOTONIC, &a);
		st = tg_parallel(&call, 8, slow_task, &started, &err);
		clock_gettime(CLOCK_MONOTONIC, &b);
		check(st == TG_ECANCELED, "pool: canceled region returns TG_ECANCELED (%d)", st);
		check((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9 < 1.0,
			  "pool: a cancel stops 2-second tasks within a second");
	}
	call.cancel = NULL;

	/* large blocks freed in a call serve its later allocations that they fit */
	{
		const size_t usual = tg_kept_block_bytes;
		const size_t mb = (size_t) 1 << 20;
		void	   *a,
				   *b,
				   *c;

		tg_kept_block_bytes = mb;
		a = tg_alloc(&call, 32 * mb);
		memset(a, 1, 32 * mb);
		tg_free(&call, a);
		b = tg_alloc(&call, 20 * mb);
		check(b == a, "pool: a freed block serves a later allocation it fits");
		c = tg_alloc(&call, 32 * mb);
		check(c != a, "pool: a block in use serves nothing else");
		tg_free(&call, b);
		check(tg_block_take(&call, 15 * mb) == NULL, "pool: a block over twice the size asked is not handed out");
		check(tg_block_take(&call, 24 * mb) == a, "pool: a kept block is taken once");
		check(tg_block_take(&call, 24 * mb) == NULL, "pool: a taken block is not kept any more");
		tg_free(&ctx, a);		/* freed outside the call: it goes back, not kept */
		check(tg_block_take(&call, 24 * mb) == NULL, "pool: a block freed outside the call is not kept");
		tg_free(&call, c);		/* kept until the call ends (ASan: no leak) */
		tg_kept_block_bytes = usual;
	}
	/* copies and clears on the threads: every byte, split or not, odd lengths and offsets */
	{
		const size_t sizes[] = {1000, ((size_t) 2 << 20) - 1, ((size_t) 37 << 20) + 4093};

		for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
		{
			const size_t len = sizes[k];
			uint8_t    *src = malloc(len + 2),
					   *dst = malloc(len + 2);
			bool		same = true,
						set = true;

			for (size_t i = 0; i < len + 2; i++)
				src[i] = (uint8_t) (i * 2654435761u >> 13);
			memset(dst, 0x5a, len + 2);
			tg_parallel_memcpy(&call, dst + 1, src + 1, len);
			for (size_t i = 1; i <= len; i++)
				same = same && dst[i] == src[i];
			check(same && dst[0] == 0x5a && dst[len + 1] == 0x5a, "pool: a copy of %zu bytes, every byte and no more", len);
			tg_parallel_memset(&call, dst + 1, 0xc3, len);
			for (size_t i = 1; i <= len; i++)
				set = set && dst[i] == 0xc3;
			check(set && dst[0] == 0x5a && dst[len + 1] == 0x5a, "pool: a clear of %zu bytes, every byte and no more", len);
			free(src);
			free(dst);
		}
	}
	tg_call_close(&call);
	check(stats.threads == 4, "pool: 4 threads asked, %d ran", stats.threads);
	free(j);
}

/*
 * Flats resolved in strips of rows (every flat, however small) equal flats
 * walked one at a time, on any number of threads: directions and shares.
 */
static void
test_flat_strips(const tg_band *dem)
{
	const size_t bytes = (size_t) TW * TH * 8 * sizeof(float);
	const int64_t usual = tg_flat_large_cells;
	uint8_t    *walked = malloc(bytes),
			   *strips = malloc(bytes);
	tg_flow_params p = flow(TG_ROUTE_MFD_MD, true, false);
	tg_run_stats stats;
	tg_error	err;
	tg_ctx		ctx;

	tg_flat_large_cells = INT64_MAX;
	ctx = ctx_with(1, &stats);
	memset(walked, 0xA5, bytes);
	tg_error_clear(&err);
	check(op_direction(&ctx, dem, &p, walked, &err) == TG_OK, "flats walked: %s", err.message);
	tg_flat_large_cells = 1;
	for (int t = 1; t <= 7; t += 2)
	{
		ctx = ctx_with(t, &stats);
		memset(strips, 0xA5, bytes);
		tg_error_clear(&err);
		check(op_direction(&ctx, dem, &p, strips, &err) == TG_OK, "flats in strips: %s", err.message);
		check(memcmp(walked, strips, bytes) == 0, "flats in strips on %d threads equal flats walked", t);
	}
	tg_flat_large_cells = usual;
	free(walked);
	free(strips);
}

/* ------------------------------------------------------------------------ */
/*
 * The fill without epsilon works in float where every value of the DEM's
 * type is a float, in double otherwise: the same surface either way, bit
 * for bit, and the same as Planchon & Darboux's, on any number of threads.
 */
static void
check_fill_types(const double *zi, const double *zf)
{
	const size_t n = (size_t) TW * TH;
	int16_t    *i16 = malloc(n * sizeof(int16_t));
	float	   *f32 = malloc(n * sizeof(float));
	double	   *f64 = malloc(n * sizeof(double));
	double	   *got = malloc(n * sizeof(double)),
			   *want = malloc(n * sizeof(double));
	float	   *got32 = malloc(n * sizeof(float));
	const tg_fill_params pf = {TG_FILL_PRIORITY_FLOOD, 0, TG_PT_64BF},
				pf32 = {TG_FILL_PRIORITY_FLOOD, 0, TG_PT_32BF},
				pd = {TG_FILL_PLANCHON_DARBOUX, 0, TG_PT_64BF};
	tg_band		bi = test_band(TG_PT_64BF, zi, TW, TH, true, ND),
				bi16 = test_band(TG_PT_16BSI, i16, TW, TH, true, ND),
				bf32 = test_band(TG_PT_32BF, f32, TW, TH, true, ND),
				bf64 = test_band(TG_PT_64BF, f64, TW, TH, true, ND);
	tg_ctx		ctx = ctx_with(3, NULL);
	tg_error	err;
	size_t		same = 0;

	for (size_t i = 0; i < n; i++)
	{
		i16[i] = (int16_t) zi[i];
		f32[i] = (float) zf[i];
		f64[i] = f32[i];
	}
	check_threads(&(op_case) {"fill, 16-bit DEM (in float)", op_fill, &pf, sizeof(double)}, &bi16);
	check_threads(&(op_case) {"fill, float DEM into float", op_fill, &pf32, sizeof(float)}, &bf32);

	tg_error_clear(&err);
	check(tg_fill(&ctx, &bi, &pd, ND, want, &err) == TG_OK, "fill types: %s", err.message);
	check(tg_fill(&ctx, &bi16, &pf, ND, got, &err) == TG_OK, "fill types: %s", err.message);
	check(memcmp(got, want, n * sizeof(double)) == 0,
		  "fill of a 16-bit DEM (in float) equals planchon-darboux on its values as doubles");
	for (size_t i = 0; i < n; i++)
		same += got[i] == (zi[i] == ND ? ND : fmax(zi[i], got[i]));
	check(same == n, "fill of a 16-bit DEM: every cell at or above the DEM (%zu of %zu)", same, n);

	check(tg_fill(&ctx, &bf64, &pf, ND, want, &err) == TG_OK, "fill types: %s", err.message);
	check(tg_fill(&ctx, &bf32, &pf, ND, got, &err) == TG_OK, "fill types: %s", err.message);
	check(memcmp(got, want, n * sizeof(double)) == 0,
		  "fill of a float DEM (in float) equals the fill of its values as doubles");
	check(tg_fill(&ctx, &bf32, &pf32, ND, got32, &err) == TG_OK, "fill types: %s", err.message);
	same = 0;
	for (size_t i = 0; i < n; i++)
		same += got32[i] == (float) want[i];
	check(same == n, "fill of a float DEM into float: %zu of %zu cells as in double", same, n);
	free(i16);
	free(f32);
	free(f64);
	free(got);
	free(want);
	free(got32);
}

void
test_threads(void)
{
	const size_t n = (size_t) TW * TH;
	double	   *zi = malloc(n * sizeof(double)),
			   *zf = malloc(n * sizeof(double)),
			   *zw = malloc(n * sizeof(double));
	tg_band		bi = test_band(TG_PT_64BF, zi, TW, TH, true, ND),
				bf = test_band(TG_PT_64BF, zf, TW, TH, true, ND),
				bw = test_band(TG_PT_64BF, zw, TW, TH, true, ND);
	static const tg_routing routings[] = {TG_ROUTE_D8, TG_ROUTE_FD8, TG_ROUTE_MFD_MD, TG_ROUTE_FDD8,
	TG_ROUTE_DINF, TG_ROUTE_ANISOTROPIC};
	static const char *const routing_names[] = {"d8", "fd8", "mfd-md", "fdd8", "dinf", "anisotropic"};
	static const tg_accum_method methods[] = {TG_ACC_INDEGREE, TG_ACC_TOPOLOGICAL,
	TG_ACC_DEPENDENCY_TRANSFER, TG_ACC_FLOW_TRANSFER};
	const tg_fill_params pf = {TG_FILL_PRIORITY_FLOOD, 0, TG_PT_64BF},
				pd = {TG_FILL_PLANCHON_DARBOUX, 0, TG_PT_64BF},
				pe = {TG_FILL_PRIORITY_FLOOD, 0.01, TG_PT_64BF};
	const tg_view_algorithm r2 = TG_VIEW_R2,
				r3 = TG_VIEW_R3;
	char		name[96];

	test_pool();
	test_blocks_within();
	make_terrain(zi, TW, TH, 1, true);
	make_terrain(zf, TW, TH, 1.37, false);
	make_terrain(zw, TW, TH, 30000, true);	/* integer, beyond the fill's buckets */

	test_flat_strips(&bi);
	check_threads(&(op_case) {"slope", op_slope, NULL, sizeof(float)}, &bi);
	check_threads(&(op_case) {"terrain derivatives", op_terrain, NULL, TG_TERRAIN_PRODUCTS * sizeof(double)}, &bf);
	check_threads(&(op_case) {"fill, integer DEM", op_fill, &pf, sizeof(double)}, &bi);
	check_threads(&(op_case) {"fill, float DEM", op_fill, &pf, sizeof(double)}, &bf);
	check_threads(&(op_case) {"fill, wide integer DEM", op_fill, &pf, sizeof(double)}, &bw);
	check_threads(&(op_case) {"fill, planchon-darboux", op_fill, &pd, sizeof(double)}, &bf);
	check_threads(&(op_case) {"fill, epsilon", op_fill, &pe, sizeof(double)}, &bf);
	check_fill_types(zi, zf);
	for (int r = 0; r < 6; r++)
	{
		tg_flow_params p = flow(routings[r], true, r == 2 || r == 5);

		snprintf(name, sizeof name, "directions %s", routing_names[r]);
		check_threads(&(op_case) {name, op_direction, &p, 8 * sizeof(float)}, &bf);
		for (int m = 0; m < 4; m++)
		{
			accum_arg	a = {flow(routings[r], m != 1, r == 1), methods[m], (tg_accum_units) (m % 3)};

			if (methods[m] == TG_ACC_FLOW_TRANSFER && routings[r] == TG_ROUTE_FDD8)
				continue;
			snprintf(name, sizeof name, "accumulation %s %s", routing_names[r],
					 tg_accum_method_name(methods[m]));
			check_threads(&(op_case) {name, op_accumulation, &a, sizeof(double)}, &bi);
		}
		{
			accum_arg	a = {flow(routings[r], true, false), TG_ACC_AUTO, TG_UNITS_AREA};

			snprintf(name, sizeof name, "hydrology chain %s", routing_names[r]);
			check_threads(&(op_case) {name, op_hydrology, &a, 2 * sizeof(double) + sizeof(uint16_t)}, &bf);
		}
	}
	{
		tg_flow_params p = flow(TG_ROUTE_MFD_MD, true, true);
		tg_flow_params d8 = flow(TG_ROUTE_D8, true, true);

		tg_flow_params an = flow(TG_ROUTE_ANISOTROPIC, true, false);

		check_threads(&(op_case) {"rusle mfd-md", op_rusle, &p, 2 * sizeof(float)}, &bi);
		check_threads(&(op_case) {"rusle anisotropic", op_rusle, &an, 2 * sizeof(float)}, &bi);
		check_threads(&(op_case) {"travel time and watershed", op_travel, &d8, 2 * sizeof(float) + 1}, &bi);
	}
	check_threads(&(op_case) {"viewshed r2", op_viewshed, &r2, sizeof(float)}, &bi);
	check_threads(&(op_case) {"viewshed r3", op_viewshed, &r3, sizeof(float)}, &bi);
	check_threads(&(op_case) {"cumulative viewshed", op_viewshed_count, NULL, sizeof(uint32_t)}, &bi);
	check_threads(&(op_case) {"bmmq build", op_bmmq, NULL, 24}, &bi);
	free(zi);
	free(zf);
	free(zw);
}
