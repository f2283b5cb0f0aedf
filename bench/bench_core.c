/*
 * bench_core.c — time the core's operations on a real DEM without a server:
 * the CPU path, the GPU path (device kernel time from CUDA events, transfers,
 * wall time in the core) and the GPU/CPU agreement.  bench/run_bench.py and
 * bench/hydro_bench.py drive it; the DEM comes as raw pixels
 * (gdal_translate -of ENVI).
 *
 *   bench_core FILE WIDTH HEIGHT PIXTYPE NODATA|none OPTION=VALUE...
 *
 * options: op=slope|terrain|fill|direction|accumulation|routing|rusle|bmmq|viewshed|levels|drainage (slope), reps=N (3),
 *   backends=cpu,gpu (both; gpu skipped without a device), geographic=0|1,
 *   pixel_w=, pixel_h= (projected), lat_top=, lat_step=, lon_step= (geographic),
 *   scale= (slope), method= (fill: priority-flood|planchon-darboux;
 *   accumulation: indegree|topological|dependency-transfer|flow-transfer),
 *   op=rusle: soil loss with R 300, K 0.03, C 0.2, P 1 and the default LS
 *   (m 0.4, n 1.3), as floats,
 *   routing=d8|fd8|mfd-md|fdd8, eps= (fill), fill=0|1 (routing on the filled DEM),
 *   save=FILE (the result's raw values: doubles for fill and accumulation, floats for
 *   viewsheds, the trees' nodes for bmmq),
 *   repeat_check=1 (compare every run's output with the first run's, bit for bit,
 *   and say where they differ; op=routing: the routing surface and receivers an
 *   accumulation used, to tell a routing that changes from one that holds),
 *   tile=N (bmmq: cut the DEM into N x N tiles, edge tiles smaller; default one
 *   tile), nbins=K (bmmq: K equal intervals over the valid values, 8),
 *   obs_col=, obs_row= (viewshed observer; default the centre), obs_h= (1.75),
 *   maxdist= (viewshed range in map units, 0 = unlimited), keep_blocks=0 (large blocks a
 *   call frees are not kept for its later allocations), threads=N (threads a call
 *   may use, 0 = every core; default 0), r3=1 (viewshed: also
 *   the exact R3 and R2's agreement with it), mem_mb=N (GPU memory budget; a
 *   viewshed beyond it runs in bands of rows), threshold=N (op=drainage: stream cells, D8
 *   accumulation in cells; 1000)
 *
 *   bench_core copies MB [threads=N]
 *
 * measures copies of MB megabytes between the host and GPU 0: the DMA from and
 * to pinned memory (the floor) against the staged copies of pageable memory
 * that every grid takes.
 *
 * Prints one line of key=value pairs.
 */
#include "tg_core.h"
#include "tg_backends.h"
#include "tg_hydro.h"
#include "tg_pool.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct options
{
	const char *op;
	int			reps;
	bool		cpu;
	bool		gpu;
	double		scale;
	double		eps;
	const char *method;
	const char *save;			/* write the (CPU, else GPU) result here */
	bool		repeat_check;	/* compare every run's output with the first's */
	int			tile;			/* bmmq: tile side, 0 = the whole DEM */
	int			nbins;			/* bmmq: equal-interval bins */
	int			obs_col;		/* viewshed observer, -1 = centre */
	int			obs_row;
	double		obs_h;
	double		maxdist;
	bool		r3;
	size_t		mem_mb;
	double		threshold;		/* drainage: stream cells' accumulation, in cells */
	int			threads;		/* 0 = every core */
	const char *products;		/* terrain: comma-separated product names, NULL = all */
	tg_flow_params flow;
} options;

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return (x > y) - (x < y);
}

static double
median(double *v, int n)
{
	qsort(v, n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int
parse_pixtype(const char *s)
{
	int			code;

	for (code = 0; code < 12; code++)
		if (tg_pixtype_valid(code) && strcmp(tg_pixtype_name((tg_pixtype) code), s) == 0)
			return code;
	return -1;
}

static tg_routing
parse_routing(const char *s)
{
	return strcmp(s, "fd8") == 0 ? TG_ROUTE_FD8 : strcmp(s, "mfd-md") == 0 ? TG_ROUTE_MFD_MD :
		strcmp(s, "fdd8") == 0 ? TG_ROUTE_FDD8 : TG_ROUTE_D8;
}

static tg_accum_method
parse_accum(const char *s)
{
	return strcmp(s, "flow-transfer") == 0 ? TG_ACC_FLOW_TRANSFER :
		strcmp(s, "dependency-transfer") == 0 ? TG_ACC_DEPENDENCY_TRANSFER :
		strcmp(s, "topological") == 0 ? TG_ACC_TOPOLOGICAL :
		strcmp(s, "indegree") == 0 ? TG_ACC_INDEGREE : TG_ACC_AUTO;
}

/* One run of the operation; results go to out (sized for the largest output). */
/* Is word one of the comma-separated list's? */
static bool
word_in_list(const char *word, const char *list)
{
	const size_t len = strlen(word);

	for (const char *p = list; p != NULL; p = strchr(p, ','), p = p ? p + 1 : NULL)
		if (strncmp(p, word, len) == 0 && (p[len] == ',' || p[len] == '\0'))
			return true;
	return false;
}

static tg_status
run_op(const options *o, tg_backend backend, const tg_band *b, void *out, tg_run_stats *stats,
	   tg_error *err)
{
	tg_ctx		ctx;

	tg_ctx_init(&ctx);
	ctx.backend = backend;
	ctx.stats = stats;
	ctx.threads = o->threads;
	tg_error_clear(err);
	if (strcmp(o->op, "fill") == 0)
	{
		tg_fill_params fp = {strcmp(o->method, "planchon-darboux") == 0 ? TG_FILL_PLANCHON_DARBOUX :
		TG_FILL_PRIORITY_FLOOD, o->eps, TG_PT_64BF};

		return tg_fill(&ctx, b, &fp, -9999, out, err);
	}
	if (strcmp(o->op, "direction") == 0)
		return tg_flow_direction(&ctx, b, &o->flow, o->flow.routing == TG_ROUTE_D8 ? out : NULL,
								 o->flow.routing == TG_ROUTE_D8 ? NULL : out, err);
	if (strcmp(o->op, "accumulation") == 0)
		return tg_flow_accumulation(&ctx, b, NULL, &o->flow, parse_accum(o->method),
									TG_UNITS_CELLS, out, err);
	if (strcmp(o->op, "rusle") == 0)
	{
		tg_rusle_params rp;

		memset(&rp, 0, sizeof rp);
		rp.flow = o->flow;
		rp.method = parse_accum(o->method);
		rp.m = 0.4;
		rp.n = 1.3;
		rp.a0 = 22.1;
		rp.b0 = 0.0896;
		rp.r.value = 300;
		rp.k.value = 0.03;
		rp.c.value = 0.2;
		rp.p.value = 1;
		return tg_rusle(&ctx, b, &rp, NULL, out, err);
	}
	if (strcmp(o->op, "routing") == 0)
	{
		/* the surface and receivers an accumulation used: doubles, then 16-bit masks */
		const size_t n = (size_t) b->width * b->height;
		double	   *acc = malloc(n * sizeof(double));
		tg_flow_products products = {acc, out, TG_PT_64BF, NAN, (uint16_t *) ((double *) out + n), NULL};
		tg_status	st = tg_hydrology(&ctx, b, NULL, &o->flow, parse_accum(o->method), TG_UNITS_CELLS,
									  &products, err);

		free(acc);
		return st;
	}
	if (strcmp(o->op, "terrain") == 0)
	{
		/* the products asked for (every one by default), floats but the geomorphons' bytes (search radius 10) */
		static const char *const names[TG_TERRAIN_PRODUCTS] = {"slope", "aspect", "hillshade", "tpi", "tri",
		"roughness", "curvature", "geomorphons"};
		const size_t n = (size_t) b->width * b->height;
		tg_terrain_params p;
		void	   *planes[TG_TERRAIN_PRODUCTS];

		tg_terrain_defaults(&p);
		p.pixel_width = o->flow.geom.cell_x;
		p.pixel_height = o->flow.geom.cell_y;
		p.scale = o->scale;
		p.search_radius = 10;
		for (int k = 0; k < TG_TERRAIN_PRODUCTS; k++)
		{
			const tg_terrain_product product = (tg_terrain_product) k;

			if (o->products && !word_in_list(names[k], o->products))
				continue;
			p.products[p.nproducts] = product;
			p.types[p.nproducts] = product == TG_TERRAIN_GEOMORPHONS ? TG_PT_8BUI : TG_PT_32BF;
			p.nodata[p.nproducts] = product == TG_TERRAIN_GEOMORPHONS ? 0 : -9999;
			planes[p.nproducts] = (float *) out + (size_t) k * n;
			p.nproducts++;
		}
		return tg_terrain(&ctx, b, &p, planes, err);
	}
	{
		tg_slope_params sp = {o->flow.geom.cell_x, o->flow.geom.cell_y, o->scale,
		TG_SLOPE_DEGREES, -9999.0f};

		return tg_slope(&ctx, b, &sp, out, err);
	}
}

/* Medians over reps after one warm-up run. */
/* Bytes of the operation's output for n cells. */
/* Operations whose output is one float per cell. */
static bool
single_output(const options *o)
{
	return strcmp(o->op, "slope") == 0 || strcmp(o->op, "rusle") == 0;
}

static size_t
output_bytes(const options *o, size_t n)
{
	if (strcmp(o->op, "direction") == 0)
		return o->flow.routing == TG_ROUTE_D8 ? n : n * 8 * sizeof(float);
	if (strcmp(o->op, "routing") == 0)
		return n * (sizeof(double) + sizeof(uint16_t));
	if (strcmp(o->op, "terrain") == 0)
		return n * ((TG_TERRAIN_PRODUCTS - 1) * sizeof(float) + 1);
	return single_output(o) ? n * sizeof(float) : n * sizeof(double);
}

/*
 * Where a repeated run's output differs from the first run's (stderr).  The
 * output is n values (8 n for multiple-flow shares) of one size; op=routing
 * adds n 16-bit receiver masks after its n surface values.
 */
static void
report_repeat(const options *o, int width, const void *first, const void *now, size_t n)
{
	const bool	direction = strcmp(o->op, "direction") == 0;
	const bool	d8 = direction && o->flow.routing == TG_ROUTE_D8;
	const size_t size = d8 ? 1 : direction || single_output(o) ? sizeof(float) : sizeof(double);
	const size_t values = direction && !d8 ? 8 * n : n;
	size_t		count = 0;

	for (size_t i = 0; i < values; i++)
		if (memcmp((const char *) first + i * size, (const char *) now + i * size, size) != 0 &&
			count++ < 5 && size == sizeof(double))
			fprintf(stderr, "repeat differs at cell %zu (col %zu row %zu): %.17g then %.17g\n",
					i, i % width, i / width, ((const double *) first)[i], ((const double *) now)[i]);
	fprintf(stderr, "repeat differs in %zu values\n", count);
	if (strcmp(o->op, "routing") == 0)
	{
		const uint16_t *r0 = (const uint16_t *) ((const double *) first + n),
				   *r1 = (const uint16_t *) ((const double *) now + n);
		size_t		receivers = 0;

		for (size_t i = 0; i < n; i++)
			if (r0[i] != r1[i] && receivers++ < 5)
				fprintf(stderr, "receivers differ at col %zu row %zu: %#x then %#x\n",
						i % width, i / width, r0[i], r1[i]);
		fprintf(stderr, "routing repeat: surface differs in %zu cells, receivers in %zu\n", count, receivers);
	}
}

static int
time_op(const options *o, tg_backend backend, const tg_band *b, void *out,
		double *wall, double *kernel, double *transfer, double *prep, int *iterations)
{
	double	   *w = calloc(o->reps, sizeof(double));
	double	   *k = calloc(o->reps, sizeof(double));
	double	   *t = calloc(o->reps, sizeof(double));
	double	   *pr = calloc(o->reps, sizeof(double));
	int			i;

	const size_t out_bytes = output_bytes(o, (size_t) b->width * b->height);
	void	   *first = o->repeat_check ? malloc(out_bytes) : NULL;
	int			repeats_differing = 0;
	char		method[sizeof ((tg_run_stats *) 0)->method] = "";
	int			threads = 0;

	for (i = -1; i < o->reps; i++)
	{
		tg_run_stats stats;
		tg_error	err;
		double		t0 = now_ms();

		if (run_op(o, backend, b, out, &stats, &err) != TG_OK)
		{
			fprintf(stderr, "%s on %s failed: %s %s\n", o->op, tg_backend_name(backend),
					err.message, err.detail);
			return 1;
		}
		if (i >= 0)
		{
			w[i] = now_ms() - t0;
			k[i] = stats.kernel_ms;
			t[i] = stats.transfer_ms;
			pr[i] = stats.prep_ms;
			*iterations = stats.iterations;
			threads = stats.threads;
			memcpy(method, stats.method, sizeof method);
			if (i == o->reps - 1)
				for (int p = 0; p < stats.nphases; p++)
					printf(" %s_phase_%d=\"%s:%.1f\"", tg_backend_name(backend), p, stats.phases[p].name,
						   stats.phases[p].ms);
		}
		if (first && i == -1)
			memcpy(first, out, out_bytes);
		else if (first && memcmp(first, out, out_bytes) != 0)
		{
			repeats_differing++;
			report_repeat(o, b->width, first, out, (size_t) b->width * b->height);
		}
	}
	if (first)
	{
		printf(" %s_repeats_differing=%d", tg_backend_name(backend), repeats_differing);
		free(first);
	}
	if (method[0])
		printf(" %s_method=\"%s\"", tg_backend_name(backend), method);
	printf(" %s_threads=%d", tg_backend_name(backend), threads);
	*wall = median(w, o->reps);
	*kernel = median(k, o->reps);
	*transfer = median(t, o->reps);
	*prep = median(pr, o->reps);
	free(w);
	free(k);
	free(t);
	free(pr);
	return 0;
}

/* Largest relative difference between two outputs of the operation. */
static void
compare(const options *o, const void *a, const void *b, size_t n, double *worst, size_t *differing)
{
	size_t		i;

	*worst = 0;
	*differing = 0;
	if (strcmp(o->op, "direction") == 0 && o->flow.routing == TG_ROUTE_D8)
	{
		for (i = 0; i < n; i++)
			*differing += ((const uint8_t *) a)[i] != ((const uint8_t *) b)[i];
		*worst = *differing ? 1 : 0;
		return;
	}
	if (strcmp(o->op, "terrain") == 0)
	{
		/* the geomorphons' bytes after seven planes of floats */
		const uint8_t *fa = (const uint8_t *) ((const float *) a + 7 * n),
				   *fb = (const uint8_t *) ((const float *) b + 7 * n);

		for (i = 0; i < n; i++)
			*differing += fa[i] != fb[i];
		*worst = *differing ? 1 : 0;
		n *= 7;
	}
	if (strcmp(o->op, "direction") == 0)
		n *= 8;
	for (i = 0; i < n; i++)
	{
		double		x,
					y,
					d;

		if (single_output(o) || strcmp(o->op, "direction") == 0 || strcmp(o->op, "terrain") == 0)
		{
			x = ((const float *) a)[i];
			y = ((const float *) b)[i];
		}
		else
		{
			x = ((const double *) a)[i];
			y = ((const double *) b)[i];
		}
		if (isnan(x) && isnan(y))
			continue;
		d = fabs(x - y) / fmax(1.0, fabs(y));
		if (isnan(d))
			d = INFINITY;
		if (d > *worst)
			*worst = d;
		*differing += x != y;
	}
}

/*
 * BMMQ-tree build: the DEM cut into tiles (as raster2pgsql -t does) and built
 * in one call per backend; prints node counts, timings and whether the GPU
 * node arrays equal the CPU's.
 */
static int
bench_bmmq(const options *o, const tg_band *dem)
{
	const int	side = o->tile > 0 ? o->tile : (dem->width > dem->height ? dem->width : dem->height);
	const int	tx = (dem->width + side - 1) / side,
				ty = (dem->height + side - 1) / side;
	const int	nt = tx * ty;
	const int	pix = tg_pixtype_size(dem->pixtype);
	tg_band    *tiles = calloc(nt, sizeof *tiles);
	tg_bmmq_tree *trees[2] = {calloc(nt, sizeof(tg_bmmq_tree)), calloc(nt, sizeof(tg_bmmq_tree))};
	double		lo = INFINITY,
				hi = -INFINITY,
			   *bounds = calloc(o->nbins + 1, sizeof(double));
	int64_t		cells = (int64_t) dem->width * dem->height,
				nodes = 0;
	tg_device_info info;

	for (size_t i = 0; i < (size_t) cells; i++)
	{
		double		v = tg_band_get(dem, i);

		if (!tg_band_value_is_nodata(dem, v))
		{
			lo = v < lo ? v : lo;
			hi = v > hi ? v : hi;
		}
	}
	/* K bins over [lo, hi]: K - 1 inner boundaries, the top one just above hi */
	for (int k = 1; k < o->nbins; k++)
		bounds[k - 1] = lo + (hi - lo) * k / o->nbins;
	for (int t = 0; t < nt; t++)
	{
		int			x0 = (t % tx) * side,
					y0 = (t / tx) * side;
		int			w = dem->width - x0 < side ? dem->width - x0 : side;
		int			h = dem->height - y0 < side ? dem->height - y0 : side;
		uint8_t    *data = malloc((size_t) w * h * pix);

		for (int y = 0; y < h; y++)
			memcpy(data + (size_t) y * w * pix,
				   (const uint8_t *) dem->data + ((size_t) (y0 + y) * dem->width + x0) * pix,
				   (size_t) w * pix);
		tiles[t] = *dem;
		tiles[t].width = w;
		tiles[t].height = h;
		tiles[t].data = data;
	}

	printf("op=bmmq cells=%lld tiles=%d tile=%d nbins=%d", (long long) cells, nt, side, o->nbins);
	tg_device_query(0, &info);
	for (int be = 0; be < 2; be++)
	{
		tg_backend	backend = be == 0 ? TG_BACKEND_CPU : TG_BACKEND_GPU;
		double	   *w = calloc(o->reps, sizeof(double)),
				   *k = calloc(o->reps, sizeof(double)),
				   *tr = calloc(o->reps, sizeof(double));

		if ((be == 0 && !o->cpu) || (be == 1 && (!o->gpu || !info.available)))
			continue;
		for (int r = -1; r < o->reps; r++)
		{
			tg_ctx		ctx;
			tg_run_stats stats;
			tg_error	err;
			double		t0;

			tg_ctx_init(&ctx);
			for (int t = 0; t < nt; t++)
				tg_bmmq_tree_free(&ctx, &trees[be][t]);
			ctx.backend = backend;
			ctx.min_cells_for_gpu = 0;
			ctx.stats = &stats;
			tg_error_clear(&err);
			t0 = now_ms();
			if (tg_bmmq_build(&ctx, tiles, nt, bounds, o->nbins - 1, trees[be], &err) != TG_OK)
			{
				fprintf(stderr, "bmmq on %s failed: %s %s\n", tg_backend_name(backend), err.message,
						err.detail);
				return 1;
			}
			if (r >= 0)
			{
				w[r] = now_ms() - t0;
				k[r] = stats.kernel_ms;
				tr[r] = stats.transfer_ms;
			}
		}
		if (be == 0)
			printf(" cpu_ms=%.3f cpu_gcells=%.4f", median(w, o->reps), cells / median(w, o->reps) / 1e6);
		else
			printf(" gpu_ms=%.3f gpu_kernel_ms=%.4f gpu_transfer_ms=%.3f kernel_gcells=%.2f device=\"%s\"",
				   median(w, o->reps), median(k, o->reps), median(tr, o->reps),
				   cells / median(k, o->reps) / 1e6, info.name);
		free(w);
		free(k);
		free(tr);
	}
	for (int t = 0; t < nt; t++)
		nodes += trees[o->cpu ? 0 : 1][t].count;
	printf(" nodes=%lld nodes_per_cell=%.4f", (long long) nodes, (double) nodes / cells);
	if (o->cpu && o->gpu && info.available)
	{
		int64_t		differing = 0;

		for (int t = 0; t < nt; t++)
			differing += trees[0][t].count != trees[1][t].count ||
				memcmp(trees[0][t].nodes, trees[1][t].nodes,
					   trees[0][t].count * sizeof(tg_bmmq_node)) != 0;
		printf(" tiles_differing=%lld", (long long) differing);
	}
	printf("\n");
	/* save=FILE: every tree's nodes, tile after tile (CPU, else GPU) */
	if (o->save)
	{
		FILE	   *f = fopen(o->save, "wb");

		for (int t = 0; f && t < nt; t++)
		{
			const tg_bmmq_tree *tree = &trees[o->cpu ? 0 : 1][t];

			if (fwrite(tree->nodes, sizeof(tg_bmmq_node), tree->count, f) != (size_t) tree->count)
				break;
		}
		if (!f || ferror(f) || fclose(f) != 0)
		{
			fprintf(stderr, "cannot write %s\n", o->save);
			return 1;
		}
	}
	return 0;
}

/* Flats: 8-connected components of valid cells (those with a level) of equal filled height. */
typedef struct flat_index
{
	uint32_t	count;
	uint32_t   *label;			/* per cell (UINT32_MAX off the valid cells) */
	uint32_t   *cells;			/* per flat: its size */
	uint32_t   *first;			/* per flat: its cells are members[first[f] .. first[f + 1]) */
	uint32_t   *members;
} flat_index;

static void
flat_index_build(flat_index *fi, const tg_route *r, const int32_t *level, int W, int H)
{
	const size_t n = (size_t) W * H;
	uint32_t   *stack = malloc((n ? n : 1) * sizeof(uint32_t));
	uint32_t   *at;
	size_t		valid = 0;

	fi->count = 0;
	fi->label = malloc((n ? n : 1) * sizeof(uint32_t));
	fi->cells = malloc((n ? n : 1) * sizeof(uint32_t));
	for (size_t c = 0; c < n; c++)
		fi->label[c] = UINT32_MAX;
	/* depth-first search from each cell not labelled yet */
	for (size_t s0 = 0; s0 < n; s0++)
	{
		uint32_t	depth = 0;

		if (level[s0] < 0 || fi->label[s0] != UINT32_MAX)
			continue;
		fi->label[s0] = fi->count;
		fi->cells[fi->count] = 0;
		stack[depth++] = (uint32_t) s0;
		while (depth)
		{
			const size_t c = stack[--depth];

			fi->cells[fi->count]++;
			for (int k = 0; k < 8; k++)
			{
				const int	x = (int) (c % W) + tg_nbr_dx(k),
							y = (int) (c / W) + tg_nbr_dy(k);
				const size_t m = (size_t) y * W + x;

				if (x >= 0 && y >= 0 && x < W && y < H && level[m] >= 0 &&
					fi->label[m] == UINT32_MAX && r->z[m] == r->z[c])
				{
					fi->label[m] = fi->count;
					stack[depth++] = (uint32_t) m;
				}
			}
		}
		valid += fi->cells[fi->count];
		fi->count++;
	}
	/* members grouped by flat: a counting sort of the labels */
	fi->first = calloc((size_t) fi->count + 1, sizeof(uint32_t));
	fi->members = malloc((valid ? valid : 1) * sizeof(uint32_t));
	for (uint32_t f = 0; f < fi->count; f++)
		fi->first[f + 1] = fi->first[f] + fi->cells[f];
	at = stack;					/* reused: where each flat's next member goes */
	memcpy(at, fi->first, (size_t) fi->count * sizeof(uint32_t));
	for (size_t c = 0; c < n; c++)
		if (fi->label[c] != UINT32_MAX)
			fi->members[at[fi->label[c]]++] = (uint32_t) c;
	free(stack);
}

static void
flat_index_free(flat_index *fi)
{
	free(fi->label);
	free(fi->cells);
	free(fi->first);
	free(fi->members);
}

/*
 * The graph's depth were every flat of 2..limit cells one node (crossed in
 * one step): Kahn's rounds over the condensed graph.  A node is named by a
 * cell: a condensed flat by its first member, any other cell by itself.
 */
static uint32_t
condensed_depth(const flat_index *fi, const tg_route_view *v, const uint32_t *order, size_t count,
				uint32_t limit)
{
	const int	W = v->width,
				H = v->height;
	const size_t n = (size_t) W * H;
	uint32_t   *pending = malloc((n ? n : 1) * sizeof(uint32_t)); /* per node: donor edges from other nodes left */
	uint32_t   *frontier = malloc((count ? count : 1) * sizeof(uint32_t));
	uint32_t   *after = malloc((count ? count : 1) * sizeof(uint32_t));
	size_t		width = 0;
	uint32_t	depth = 0;

#define CONDENSED(c) (fi->cells[fi->label[c]] > 1 && fi->cells[fi->label[c]] <= limit)
#define NODE(c) (CONDENSED(c) ? fi->members[fi->first[fi->label[c]]] : (uint32_t) (c))
	for (size_t j = 0; j < count; j++)
		pending[order[j]] = 0;
	for (size_t j = 0; j < count; j++)
	{
		const size_t c = order[j];
		const uint32_t node = NODE(c);
		const unsigned donors = tg_route_donors(v, c);

		for (int k = 0; k < 8; k++)
			if ((donors >> k) & 1u &&
				NODE((size_t) ((int64_t) c + (int64_t) tg_nbr_dy(k) * W + tg_nbr_dx(k))) != node)
				pending[node]++;
	}
	for (size_t j = 0; j < count; j++)
		if (NODE(order[j]) == order[j] && pending[order[j]] == 0)
			frontier[width++] = order[j];
	while (width)
	{
		size_t		next = 0;

		depth++;
		for (size_t i = 0; i < width; i++)
		{
			const uint32_t node = frontier[i];
			const bool	flat_node = CONDENSED(node);
			const uint32_t from = flat_node ? fi->first[fi->label[node]] : 0,
						to = flat_node ? fi->first[fi->label[node] + 1] : 1;

			for (uint32_t m = from; m < to; m++)
			{
				const size_t c = flat_node ? fi->members[m] : node;

				for (int k = 0; k < 8; k++)
				{
					const int	x = (int) (c % W) + tg_nbr_dx(k),
								y = (int) (c / W) + tg_nbr_dy(k);
					uint32_t	to;

					if (x < 0 || y < 0 || x >= W || y >= H || !tg_route_drains_to(v, c, k))
						continue;
					to = NODE((size_t) y * W + x);
					if (to != node && --pending[to] == 0)
						after[next++] = to;
				}
			}
		}
		memcpy(frontier, after, next * sizeof(uint32_t));
		width = next;
	}
#undef NODE
#undef CONDENSED
	free(pending);
	free(frontier);
	free(after);
	return depth;
}

/*
 * The flow graph's depth, which bounds every dependency-driven accumulation:
 * levels (longest path in cells from a cell without donors), the share of
 * the cells in levels narrower than a GPU's resident threads (132 x 256 on
 * an H100), and what the cells of one longest path are like (donors,
 * receivers, steps between cells of equal filled height, i.e. across flats).
 * A second line: the flats that path crosses, the three it spends most
 * steps in, the two largest, and how many cells it would have if each flat
 * were one cell.  A third: the whole graph's depth with flats of up to 4,096
 * cells, then all flats, each made one node.  CPU routing only.
 */
static int
bench_levels(const options *o, const tg_band *dem)
{
	const int	W = dem->width,
				H = dem->height;
	const size_t n = (size_t) W * H;
	const uint32_t resident = 132 * 256;
	tg_ctx		ctx;
	tg_route	r;
	tg_route_view v;
	tg_error	err;
	flat_index	fi;
	int32_t    *level = malloc((n ? n : 1) * sizeof(int32_t));
	uint32_t   *order = malloc((n ? n : 1) * sizeof(uint32_t));
	uint32_t   *level_start = malloc((n + 1) * sizeof(uint32_t));
	uint32_t	runs = 0,
				flat_runs = 0,
				run = 1,
				top[3][2] = {{0, 0}, {0, 0}, {0, 0}},	/* steps in a flat, its label */
				big[2] = {0, 0};	/* the two largest flats on the path, in cells */
	size_t		count = 0,
				narrow_cells = 0;
	int			levels = 0,
				narrow = 0,
				path = 0,
				one_donor = 0,
				one_receiver = 0,
				flat_steps = 0;

	tg_ctx_init(&ctx);
	ctx.backend = TG_BACKEND_CPU;
	ctx.threads = o->threads;
	if (tg_cpu_route_build(&ctx, dem, &o->flow, &r, &err) != TG_OK ||
		tg_cpu_route_levels(&ctx, &r, order, &count, level_start, &levels, &err) != TG_OK)
	{
		fprintf(stderr, "levels failed: %s %s\n", err.message, err.detail);
		return 1;
	}
	v = tg_cpu_route_view(&r, o->flow.threshold);
	for (size_t c = 0; c < n; c++)
		level[c] = -1;
	for (int l = 0; l < levels; l++)
	{
		for (uint32_t j = level_start[l]; j < level_start[l + 1]; j++)
			level[order[j]] = l;
		if (level_start[l + 1] - level_start[l] < resident)
		{
			narrow++;
			narrow_cells += level_start[l + 1] - level_start[l];
		}
	}
	flat_index_build(&fi, &r, level, W, H);
	/* one longest path, walked back from its end (the order's last cell) through donors one level up */
	for (size_t c = count ? order[count - 1] : 0; count;)
	{
		const unsigned donors = tg_route_donors(&v, c);
		const uint32_t f = fi.label[c];
		size_t		prev = n;
		int			receivers = 0;

		for (int k = 0; k < 8; k++)
		{
			const int	x = (int) (c % W) + tg_nbr_dx(k),
						y = (int) (c / W) + tg_nbr_dy(k);

			if (x < 0 || y < 0 || x >= W || y >= H)
				continue;
			receivers += tg_route_drains_to(&v, c, k);
			if (prev == n && (donors >> k & 1u) && level[(size_t) y * W + x] == level[c] - 1)
				prev = (size_t) y * W + x;
		}
		path++;
		one_donor += __builtin_popcount(donors) == 1;
		one_receiver += receivers == 1;
		if (prev == n || fi.label[prev] != f)
		{
			/* a run of the path in one flat ends: keep the three longest and the two largest flats */
			for (int t = 0; t < 3; t++)
				if (run - 1 > top[t][0])
				{
					for (int u = 2; u > t; u--)
					{
						top[u][0] = top[u - 1][0];
						top[u][1] = top[u - 1][1];
					}
					top[t][0] = run - 1;
					top[t][1] = f;
					break;
				}
			if (fi.cells[f] > big[0])
			{
				big[1] = big[0];
				big[0] = fi.cells[f];
			}
			else if (fi.cells[f] > big[1])
				big[1] = fi.cells[f];
			runs++;
			flat_runs += run > 1;
			run = 1;
		}
		else
			run++;
		if (prev == n)
			break;
		flat_steps += r.z[prev] == r.z[c];
		c = prev;
	}
	printf("op=levels cells=%zu valid=%zu levels=%d levels_under_%u_cells=%d holding_cells=%zu "
		   "path_one_donor_pct=%.1f path_one_receiver_pct=%.1f path_flat_steps_pct=%.1f\n",
		   n, count, levels, resident, narrow, narrow_cells,
		   path ? 100.0 * one_donor / path : 0.0, path ? 100.0 * one_receiver / path : 0.0,
		   path > 1 ? 100.0 * flat_steps / (path - 1) : 0.0);
	printf("op=levels path_cells=%d path_flats=%u path_cells_if_each_flat_were_one=%u", path, flat_runs, runs);
	for (int t = 0; t < 3 && top[t][0]; t++)
		printf(" flat%d_steps=%u flat%d_cells=%u", t + 1, top[t][0], t + 1, fi.cells[top[t][1]]);
	printf(" largest_cells=%u second_largest_cells=%u\n", big[0], big[1]);
	printf("op=levels levels_if_flats_up_to_4096_cells_were_one=%u levels_if_all_flats_were_one=%u\n",
		   condensed_depth(&fi, &v, order, count, 4096), condensed_depth(&fi, &v, order, count, UINT32_MAX));
	flat_index_free(&fi);
	free(level);
	free(order);
	free(level_start);
	tg_route_free(&ctx, &r);
	return 0;
}

/*
 * Viewshed: R2 on the CPU and the GPU (timed, compared cell by cell) and,
 * with r3=1, R2's agreement with the exact R3 on the valid cells in range.
 */
/*
 * op=drainage: the device's drainage passes alone (cuda/drainage.cu) on the
 * D8 receivers and stream cells (accumulation >= threshold cells) of the
 * filled DEM, against the tiled D8 accumulation's device time on the same
 * DEM, and their outputs against the CPU's full calls.
 */
static int
bench_drainage(const options *o, const tg_band *dem)
{
	const int	W = dem->width,
				H = dem->height;
	const size_t n = (size_t) W * H;
	double	   *acc = malloc(n * sizeof(double)),
			   *surface = malloc(n * sizeof(double));
	uint16_t   *receivers = malloc(n * sizeof(uint16_t));
	uint8_t    *down = malloc(n),
			   *stream = malloc(n);
	uint32_t   *gpu = malloc(n * sizeof(uint32_t)),
			   *cpu = malloc(n * sizeof(uint32_t));
	double		kernel[2][16],
				transfer[2][16],
				wall[2][16];
	const int	reps = o->reps < 16 ? o->reps : 16;
	size_t		streams = 0,
				ends = 0;
	tg_flow_params flow = o->flow;
	tg_flow_products pr = {acc, surface, TG_PT_64BF, NAN, receivers, NULL};
	tg_ctx		ctx;
	tg_run_stats stats;
	tg_error	err;

	flow.routing = TG_ROUTE_D8;
	flow.fill = true;
	tg_ctx_init(&ctx);
	ctx.threads = o->threads;
	tg_error_clear(&err);
	if (tg_hydrology(&ctx, dem, NULL, &flow, TG_ACC_AUTO, TG_UNITS_CELLS, &pr, &err) != TG_OK)
	{
		fprintf(stderr, "chain failed: %s\n", err.message);
		return 1;
	}
	for (size_t i = 0; i < n; i++)
	{
		down[i] = receivers[i] == TG_NODATA_RECEIVERS ? TG_DOWN_NODATA
			: receivers[i] == 0 ? TG_NO_DIRECTION : (uint8_t) __builtin_ctz(receivers[i]);
		stream[i] = down[i] != TG_DOWN_NODATA && acc[i] >= o->threshold;
		streams += stream[i];
		ends += down[i] == TG_NO_DIRECTION;
	}
	printf("cells=%zu stream_cells=%zu ends=%zu threshold=%g", n, streams, ends, o->threshold);

	/* the D8 accumulation's own device time (auto: the tiled strategy), routing excluded */
	ctx.backend = TG_BACKEND_GPU;
	ctx.stats = &stats;
	for (int r = -1; r < reps; r++)
	{
		if (tg_flow_accumulation(&ctx, dem, NULL, &flow, TG_ACC_AUTO, TG_UNITS_CELLS, acc, &err) != TG_OK)
		{
			fprintf(stderr, "GPU accumulation failed: %s\n", err.message);
			return 1;
		}
		if (r >= 0)
			kernel[0][r] = stats.kernel_ms - stats.prep_ms;
	}
	printf(" d8_accumulation_kernel_ms=%.3f", median(kernel[0], reps));

	for (int pass = 0; pass < 2; pass++)
	{
		for (int r = -1; r < reps; r++)
		{
			tg_ctx		call;
			tg_status	st;
			double		t0 = now_ms();

			memset(&stats, 0, sizeof stats);
			tg_call_open(&ctx, &call);
			st = pass == 0 ? tg_cuda_stream_order(&call, W, H, down, stream, false, gpu, &err)
				: tg_cuda_drainage_labels(&call, W, H, down, NULL, gpu, &err);
			tg_cuda_release();
			tg_call_close(&call);
			if (st != TG_OK)
			{
				fprintf(stderr, "GPU pass %d failed: %s\n", pass, err.message);
				return 1;
			}
			if (r >= 0)
			{
				kernel[pass][r] = stats.kernel_ms;
				transfer[pass][r] = stats.transfer_ms;
				wall[pass][r] = now_ms() - t0;
			}
		}
		printf(" %s_kernel_ms=%.3f %s_transfer_ms=%.3f %s_wall_ms=%.3f", pass ? "basins" : "strahler",
			   median(kernel[pass], reps), pass ? "basins" : "strahler", median(transfer[pass], reps),
			   pass ? "basins" : "strahler", median(wall[pass], reps));

		/* the CPU's full call on the same DEM gives the same integers */
		ctx.backend = TG_BACKEND_CPU;
		ctx.stats = NULL;
		{
			tg_basin_params bp;
			tg_status	st;

			memset(&bp, 0, sizeof bp);
			bp.drainage.flow = flow;
			bp.drainage.threshold = o->threshold;
			st = pass == 0 ? tg_stream_order(&ctx, dem, &bp.drainage, cpu, &err) : tg_basins(&ctx, dem, &bp, cpu, &err);
			if (st != TG_OK)
			{
				fprintf(stderr, "CPU pass %d failed: %s\n", pass, err.message);
				return 1;
			}
		}
		{
			size_t		differ = 0;

			for (size_t i = 0; i < n; i++)
				differ += gpu[i] != cpu[i];
			printf(" %s_cells_differing=%zu", pass ? "basins" : "strahler", differ);
		}
		ctx.backend = TG_BACKEND_GPU;
		ctx.stats = &stats;
	}
	printf("\n");
	free(acc);
	free(surface);
	free(receivers);
	free(down);
	free(stream);
	free(gpu);
	free(cpu);
	return 0;
}

static int
bench_viewshed(const options *o, const tg_band *dem)
{
	const size_t n = (size_t) dem->width * dem->height;
	tg_viewshed_params p;
	float	   *out[3] = {malloc(n * sizeof(float)), malloc(n * sizeof(float)), malloc(n * sizeof(float))};
	bool		have[3] = {false, false, false};
	tg_device_info info;
	size_t		visible = 0,
				decided = 0;

	memset(&p, 0, sizeof p);
	p.observer_col = o->obs_col >= 0 ? o->obs_col : dem->width / 2;
	p.observer_row = o->obs_row >= 0 ? o->obs_row : dem->height / 2;
	/* an observer on nodata (sea) moves to the nearest valid cell of its row */
	for (int step = 0; step < dem->width; step++)
	{
		int			c = p.observer_col + ((step & 1) ? -(step + 1) / 2 : step / 2);

		if (c >= 0 && c < dem->width &&
			!tg_band_value_is_nodata(dem, tg_band_get(dem, (size_t) p.observer_row * dem->width + c)))
		{
			p.observer_col = c;
			break;
		}
	}
	p.observer_height = o->obs_h;
	p.max_distance = o->maxdist;
	p.earth_radius = 6370997;
	p.refraction = 0.14286;
	p.cell_x = o->flow.geom.cell_x;
	p.cell_y = o->flow.geom.cell_y;
	if (o->flow.geom.geographic)
		tg_row_spacing(&o->flow.geom, p.observer_row, &p.cell_x, &p.cell_y);
	printf("op=viewshed cells=%zu observer=%d,%d obs_h=%g maxdist=%g", n, p.observer_col,
		   p.observer_row, p.observer_height, p.max_distance);
	tg_device_query(0, &info);
	for (int be = 0; be < 3; be++)
	{
		double	   *w = calloc(o->reps, sizeof(double)),
				   *k = calloc(o->reps, sizeof(double));
		int			reps = be == 2 ? 1 : o->reps;

		if ((be == 0 && !o->cpu) || (be == 1 && (!o->gpu || !info.available)) || (be == 2 && !o->r3))
			continue;
		p.algorithm = be == 2 ? TG_VIEW_R3 : TG_VIEW_R2;
		for (int r = be == 1 ? -1 : 0; r < reps; r++)
		{
			tg_ctx		ctx;
			tg_run_stats stats;
			tg_error	err;
			double		t0;

			tg_ctx_init(&ctx);
			ctx.backend = be == 1 ? TG_BACKEND_GPU : TG_BACKEND_CPU;
			ctx.threads = o->threads;
			ctx.device_memory_limit = o->mem_mb << 20;
			ctx.stats = &stats;
			tg_error_clear(&err);
			t0 = now_ms();
			if (tg_viewshed(&ctx, dem, &p, out[be], &err) != TG_OK)
			{
				fprintf(stderr, "viewshed failed: %s %s\n", err.message, err.detail);
				return 1;
			}
			if (r >= 0)
			{
				w[r] = now_ms() - t0;
				k[r] = stats.kernel_ms;
			}
		}
		have[be] = true;
		if (be == 0)
			printf(" cpu_ms=%.3f cpu_gcells=%.4f", median(w, reps), n / median(w, reps) / 1e6);
		else if (be == 1)
			printf(" gpu_ms=%.3f gpu_kernel_ms=%.4f kernel_gcells=%.2f gpu_mem_mb=%zu device=\"%s\"",
				   median(w, reps), median(k, reps), n / median(k, reps) / 1e6, o->mem_mb, info.name);
		else
			printf(" r3_ms=%.1f", w[0]);
		free(w);
		free(k);
	}
	{
		const float *r2 = have[0] ? out[0] : out[1];

		for (size_t i = 0; i < n; i++)
			if (!isnan(r2[i]))
			{
				decided++;
				visible += r2[i] == 1.0f;
			}
		printf(" decided=%zu visible=%zu", decided, visible);
		if (have[0] && have[1])
		{
			size_t		differ = 0;

			for (size_t i = 0; i < n; i++)
				differ += !(out[0][i] == out[1][i] || (isnan(out[0][i]) && isnan(out[1][i])));
			printf(" gpu_cpu_cells_differing=%zu", differ);
		}
		if (have[2])
		{
			size_t		agree = 0,
						total = 0;

			for (size_t i = 0; i < n; i++)
				if (!isnan(out[2][i]))
				{
					total++;
					agree += out[2][i] == r2[i];
				}
			printf(" r3_cells=%zu r2_r3_agreement=%.3f%%", total, 100.0 * agree / total);
		}
	}
	printf("\n");
	/* save=FILE: R2 (CPU, else GPU) as floats; FILE.r3 the exact R3 */
	for (int be = 0; o->save && be < 3; be += 2)
	{
		const float *v = be == 0 ? (have[0] ? out[0] : out[1]) : out[2];
		char		path[1024];
		FILE	   *f;

		if (be == 2 && !have[2])
			break;
		snprintf(path, sizeof path, "%s%s", o->save, be == 2 ? ".r3" : "");
		f = fopen(path, "wb");
		if (!f || fwrite(v, sizeof(float), n, f) != n)
		{
			fprintf(stderr, "cannot write %s\n", path);
			return 1;
		}
		fclose(f);
	}
	return 0;
}

/* bench_core copies MB [threads=N] */
static int
bench_copies(int argc, char **argv)
{
	size_t		bytes = (size_t) atol(argv[2]) << 20;
	tg_ctx		ctx,
				call;
	tg_error	err;
	tg_copy_rates r;
	tg_status	st;

	tg_ctx_init(&ctx);
	for (int i = 3; i < argc; i++)
		if (strncmp(argv[i], "threads=", 8) == 0)
			ctx.threads = atoi(argv[i] + 8);
	tg_error_clear(&err);
	st = tg_cuda_probe(0, NULL, &err);
	if (st == TG_OK)
	{
		tg_call_open(&ctx, &call);
		st = tg_cuda_copy_rates(&call, bytes, &r, &err);
		tg_call_close(&call);
	}
	if (st != TG_OK)
	{
		fprintf(stderr, "copies: %s\n", err.message);
		return 1;
	}
	printf("op=copies mb=%zu threads=%d pinned_up_gbs=%.2f pinned_down_gbs=%.2f staged_up_gbs=%.2f "
		   "staged_down_gbs=%.2f staged_down_fresh_gbs=%.2f staged_down_fresh_small_gbs=%.2f host_memcpy_gbs=%.2f\n",
		   bytes >> 20, tg_threads_wanted(&ctx), r.pinned_up_gbs, r.pinned_down_gbs, r.staged_up_gbs,
		   r.staged_down_gbs, r.staged_down_fresh_gbs, r.staged_down_fresh_small_gbs, r.host_memcpy_gbs);
	return 0;
}

int
main(int argc, char **argv)
{
	options		o;
	tg_band		b;
	tg_device_info info;
	FILE	   *f;
	size_t		n,
				bytes,
				out_bytes;
	void	   *data,
			   *cpu,
			   *gpu;
	int			i,
				code,
				iterations = 0;
	double		wall,
				kernel,
				transfer,
				prep;

	if (argc >= 3 && strcmp(argv[1], "copies") == 0)
		return bench_copies(argc, argv);
	if (argc < 6)
	{
		fprintf(stderr, "usage: %s FILE WIDTH HEIGHT PIXTYPE NODATA|none OPTION=VALUE...\n", argv[0]);
		return 2;
	}
	memset(&o, 0, sizeof o);
	memset(&b, 0, sizeof b);
	o.op = "slope";
	o.reps = 3;
	o.cpu = o.gpu = true;
	o.scale = 1;
	o.method = "auto";
	o.nbins = 8;
	o.obs_col = o.obs_row = -1;
	o.obs_h = 1.75;
	o.threshold = 1000;
	o.flow.exponent = 1.1;
	o.flow.threshold = 1000;
	o.flow.fill = true;
	o.flow.geom.cell_x = o.flow.geom.cell_y = 1;
	b.width = o.flow.geom.width = atoi(argv[2]);
	b.height = o.flow.geom.height = atoi(argv[3]);
	code = parse_pixtype(argv[4]);
	if (code < 0)
	{
		fprintf(stderr, "unknown pixel type %s\n", argv[4]);
		return 2;
	}
	b.pixtype = (tg_pixtype) code;
	b.has_nodata = strcmp(argv[5], "none") != 0;
	b.nodata = b.has_nodata ? atof(argv[5]) : 0;
	for (i = 6; i < argc; i++)
	{
		char	   *eq = strchr(argv[i], '=');
		const char *v;

		if (!eq)
			continue;
		*eq = '\0';
		v = eq + 1;
		if (!strcmp(argv[i], "op"))
			o.op = v;
		else if (!strcmp(argv[i], "obs_col"))
			o.obs_col = atoi(v);
		else if (!strcmp(argv[i], "obs_row"))
			o.obs_row = atoi(v);
		else if (!strcmp(argv[i], "obs_h"))
			o.obs_h = atof(v);
		else if (!strcmp(argv[i], "maxdist"))
			o.maxdist = atof(v);
		else if (!strcmp(argv[i], "r3"))
			o.r3 = atoi(v) != 0;
		else if (!strcmp(argv[i], "mem_mb"))
			o.mem_mb = (size_t) atol(v);
		else if (!strcmp(argv[i], "threshold"))
			o.threshold = atof(v);
		else if (!strcmp(argv[i], "tile"))
			o.tile = atoi(v);
		else if (!strcmp(argv[i], "nbins"))
			o.nbins = atoi(v) < 2 ? 2 : atoi(v);
		else if (!strcmp(argv[i], "reps"))
			o.reps = atoi(v);
		else if (!strcmp(argv[i], "products"))
			o.products = v;
		else if (!strcmp(argv[i], "threads"))
			o.threads = atoi(v);
		else if (!strcmp(argv[i], "keep_blocks"))
			tg_kept_block_bytes = atoi(v) ? tg_kept_block_bytes : SIZE_MAX;
		else if (!strcmp(argv[i], "backends"))
		{
			o.cpu = strstr(v, "cpu") != NULL;
			o.gpu = strstr(v, "gpu") != NULL;
		}
		else if (!strcmp(argv[i], "scale"))
			o.scale = atof(v);
		else if (!strcmp(argv[i], "eps"))
			o.eps = atof(v);
		else if (!strcmp(argv[i], "method"))
			o.method = v;
		else if (!strcmp(argv[i], "save"))
			o.save = v;
		else if (!strcmp(argv[i], "repeat_check"))
			o.repeat_check = atoi(v) != 0;
		else if (!strcmp(argv[i], "routing"))
			o.flow.routing = parse_routing(v);
		else if (!strcmp(argv[i], "fill"))
			o.flow.fill = atoi(v) != 0;
		else if (!strcmp(argv[i], "geographic"))
			o.flow.geom.geographic = atoi(v) != 0;
		else if (!strcmp(argv[i], "pixel_w"))
			o.flow.geom.cell_x = atof(v);
		else if (!strcmp(argv[i], "pixel_h"))
			o.flow.geom.cell_y = atof(v);
		else if (!strcmp(argv[i], "lat_top"))
			o.flow.geom.lat_top = atof(v);
		else if (!strcmp(argv[i], "lat_step"))
			o.flow.geom.lat_step = atof(v);
		else if (!strcmp(argv[i], "lon_step"))
			o.flow.geom.lon_step = atof(v);
	}

	n = (size_t) b.width * b.height;
	bytes = n * tg_pixtype_size(b.pixtype);
	out_bytes = n * 8 * sizeof(float) > n * sizeof(double) ? n * 8 * sizeof(float) : n * sizeof(double);
	data = malloc(bytes);
	f = fopen(argv[1], "rb");
	if (!f || fread(data, 1, bytes, f) != bytes)
	{
		fprintf(stderr, "cannot read %zu bytes from %s\n", bytes, argv[1]);
		return 1;
	}
	fclose(f);
	b.data = data;
	if (strcmp(o.op, "bmmq") == 0)
		return bench_bmmq(&o, &b);
	if (strcmp(o.op, "viewshed") == 0)
		return bench_viewshed(&o, &b);
	if (strcmp(o.op, "levels") == 0)
		return bench_levels(&o, &b);
	if (strcmp(o.op, "drainage") == 0)
		return bench_drainage(&o, &b);
	/* zeroed: the planes of products not asked for compare equal */
	cpu = calloc(1, out_bytes);
	gpu = calloc(1, out_bytes);

	printf("op=%s cells=%zu", o.op, n);
	if (o.cpu)
	{
		if (time_op(&o, TG_BACKEND_CPU, &b, cpu, &wall, &kernel, &transfer, &prep, &iterations))
			return 1;
		printf(" cpu_ms=%.3f cpu_gcells=%.4f cpu_iterations=%d", wall, n / wall / 1e6, iterations);
		if (prep > 0)
			printf(" cpu_prep_ms=%.3f cpu_own_ms=%.3f", prep, wall - prep);
	}
	tg_device_query(0, &info);
	if (o.gpu && info.available)
	{
		double		worst;
		size_t		differing;

		if (time_op(&o, TG_BACKEND_GPU, &b, gpu, &wall, &kernel, &transfer, &prep, &iterations))
			return 1;
		printf(" gpu_ms=%.3f gpu_kernel_ms=%.4f gpu_transfer_ms=%.3f kernel_gcells=%.2f gpu_iterations=%d",
			   wall, kernel, transfer, kernel > 0 ? n / kernel / 1e6 : 0.0, iterations);
		if (prep > 0)
			printf(" gpu_prep_ms=%.4f gpu_own_ms=%.4f own_gcells=%.2f", prep, kernel - prep,
				   n / (kernel - prep) / 1e6);
		if (o.cpu)
		{
			compare(&o, gpu, cpu, n, &worst, &differing);
			printf(" max_rel_diff=%.3g cells_differing=%zu", worst, differing);
		}
		printf(" device=\"%s\"", info.name);
	}
	else if (o.gpu)
		printf(" gpu=none");
	printf("\n");
	if (o.save)
	{
		FILE	   *sf = fopen(o.save, "wb");
		size_t		bytes_out = output_bytes(&o, n);

		if (!sf || fwrite(o.cpu ? cpu : gpu, 1, bytes_out, sf) != bytes_out)
		{
			fprintf(stderr, "cannot write %s\n", o.save);
			return 1;
		}
		fclose(sf);
	}
	free(data);
	free(cpu);
	free(gpu);
	return 0;
}
