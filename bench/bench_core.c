/*
 * bench_core.c — time the core's operations on a real DEM without a server:
 * the CPU path, the GPU path (device kernel time from CUDA events, transfers,
 * wall time in the core) and the GPU/CPU agreement.  bench/run_bench.py and
 * bench/hydro_bench.py drive it; the DEM comes as raw pixels
 * (gdal_translate -of ENVI).
 *
 *   bench_core FILE WIDTH HEIGHT PIXTYPE NODATA|none OPTION=VALUE...
 *
 * options: op=slope|terrain|fill|direction|accumulation|routing|rusle|bmmq|viewshed|levels|drainage|seams (slope),
 *   reps=N (3),
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
 *   strip_rows=N (op=seams: the filled DEM in strips of N rows, 256; the flats that cross
 *   them scanned and walked, timed), check=1 (op=seams: every strip's D8 directions
 *   against one grid's, bit for bit),
 *   maxdist= (viewshed range in map units, 0 = unlimited), keep_blocks=0 (large blocks a
 *   call frees are not kept for its later allocations), threads=N (threads a call
 *   may use, 0 = every core; default 0), r3=1 (viewshed: also
 *   the exact R3 and R2's agreement with it), mem_mb=N (GPU memory budget; a
 *   viewshed beyond it runs in strips of rows), threshold=N (op=drainage: stream cells, D8
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
#include "bench_core.h"

#include <math.h>
#include <time.h>

double
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

double
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

/* The options after the file (argv[2] ..) into o, the DEM's shape and type into b; false on a bad one. */
static bool
parse_options(int argc, char **argv, options *o, tg_band *b)
{
	int			code;

	memset(o, 0, sizeof *o);
	memset(b, 0, sizeof *b);
	o->op = "slope";
	o->reps = 3;
	o->cpu = o->gpu = true;
	o->scale = 1;
	o->method = "auto";
	o->nbins = 8;
	o->obs_col = o->obs_row = -1;
	o->obs_h = 1.75;
	o->threshold = 1000;
	o->flow.exponent = 1.1;
	o->flow.threshold = 1000;
	o->flow.fill = true;
	o->flow.geom.cell_x = o->flow.geom.cell_y = 1;
	b->width = o->flow.geom.width = atoi(argv[2]);
	b->height = o->flow.geom.height = atoi(argv[3]);
	code = parse_pixtype(argv[4]);
	if (code < 0)
	{
		fprintf(stderr, "unknown pixel type %s\n", argv[4]);
		return false;
	}
	b->pixtype = (tg_pixtype) code;
	b->has_nodata = strcmp(argv[5], "none") != 0;
	b->nodata = b->has_nodata ? atof(argv[5]) : 0;
	for (int i = 6; i < argc; i++)
	{
		char	   *eq = strchr(argv[i], '=');
		const char *v;

		if (!eq)
			continue;
		*eq = '\0';
		v = eq + 1;
		if (!strcmp(argv[i], "op"))
			o->op = v;
		else if (!strcmp(argv[i], "obs_col"))
			o->obs_col = atoi(v);
		else if (!strcmp(argv[i], "obs_row"))
			o->obs_row = atoi(v);
		else if (!strcmp(argv[i], "obs_h"))
			o->obs_h = atof(v);
		else if (!strcmp(argv[i], "maxdist"))
			o->maxdist = atof(v);
		else if (!strcmp(argv[i], "r3"))
			o->r3 = atoi(v) != 0;
		else if (!strcmp(argv[i], "mem_mb"))
			o->mem_mb = (size_t) atol(v);
		else if (!strcmp(argv[i], "threshold"))
			o->threshold = atof(v);
		else if (!strcmp(argv[i], "strip_rows"))
			o->strip_rows = atoi(v);
		else if (!strcmp(argv[i], "check"))
			o->check = atoi(v) != 0;
		else if (!strcmp(argv[i], "tile"))
			o->tile = atoi(v);
		else if (!strcmp(argv[i], "nbins"))
			o->nbins = atoi(v) < 2 ? 2 : atoi(v);
		else if (!strcmp(argv[i], "reps"))
			o->reps = atoi(v);
		else if (!strcmp(argv[i], "products"))
			o->products = v;
		else if (!strcmp(argv[i], "threads"))
			o->threads = atoi(v);
		else if (!strcmp(argv[i], "keep_blocks"))
			tg_kept_block_bytes = atoi(v) ? tg_kept_block_bytes : SIZE_MAX;
		else if (!strcmp(argv[i], "backends"))
		{
			o->cpu = strstr(v, "cpu") != NULL;
			o->gpu = strstr(v, "gpu") != NULL;
		}
		else if (!strcmp(argv[i], "scale"))
			o->scale = atof(v);
		else if (!strcmp(argv[i], "eps"))
			o->eps = atof(v);
		else if (!strcmp(argv[i], "method"))
			o->method = v;
		else if (!strcmp(argv[i], "save"))
			o->save = v;
		else if (!strcmp(argv[i], "repeat_check"))
			o->repeat_check = atoi(v) != 0;
		else if (!strcmp(argv[i], "routing"))
			o->flow.routing = parse_routing(v);
		else if (!strcmp(argv[i], "fill"))
			o->flow.fill = atoi(v) != 0;
		else if (!strcmp(argv[i], "geographic"))
			o->flow.geom.geographic = atoi(v) != 0;
		else if (!strcmp(argv[i], "pixel_w"))
			o->flow.geom.cell_x = atof(v);
		else if (!strcmp(argv[i], "pixel_h"))
			o->flow.geom.cell_y = atof(v);
		else if (!strcmp(argv[i], "lat_top"))
			o->flow.geom.lat_top = atof(v);
		else if (!strcmp(argv[i], "lat_step"))
			o->flow.geom.lat_step = atof(v);
		else if (!strcmp(argv[i], "lon_step"))
			o->flow.geom.lon_step = atof(v);
	}
	return true;
}

/* The operation timed on each backend asked for, the GPU's result compared with the CPU's. */
static int
time_backends(const options *o, const tg_band *b, size_t n, void *cpu, void *gpu)
{
	tg_device_info info;
	int			iterations = 0;
	double		wall,
				kernel,
				transfer,
				prep;

	printf("op=%s cells=%zu", o->op, n);
	if (o->cpu)
	{
		if (time_op(o, TG_BACKEND_CPU, b, cpu, &wall, &kernel, &transfer, &prep, &iterations))
			return 1;
		printf(" cpu_ms=%.3f cpu_gcells=%.4f cpu_iterations=%d", wall, n / wall / 1e6, iterations);
		if (prep > 0)
			printf(" cpu_prep_ms=%.3f cpu_own_ms=%.3f", prep, wall - prep);
	}
	tg_device_query(0, &info);
	if (o->gpu && info.available)
	{
		double		worst;
		size_t		differing;

		if (time_op(o, TG_BACKEND_GPU, b, gpu, &wall, &kernel, &transfer, &prep, &iterations))
			return 1;
		printf(" gpu_ms=%.3f gpu_kernel_ms=%.4f gpu_transfer_ms=%.3f kernel_gcells=%.2f gpu_iterations=%d",
			   wall, kernel, transfer, kernel > 0 ? n / kernel / 1e6 : 0.0, iterations);
		if (prep > 0)
			printf(" gpu_prep_ms=%.4f gpu_own_ms=%.4f own_gcells=%.2f", prep, kernel - prep,
				   n / (kernel - prep) / 1e6);
		if (o->cpu)
		{
			compare(o, gpu, cpu, n, &worst, &differing);
			printf(" max_rel_diff=%.3g cells_differing=%zu", worst, differing);
		}
		printf(" device=\"%s\"", info.name);
	}
	else if (o->gpu)
		printf(" gpu=none");
	printf("\n");
	return 0;
}

int
main(int argc, char **argv)
{
	options		o;
	tg_band		b;
	FILE	   *f;
	size_t		n,
				bytes,
				out_bytes;
	void	   *data,
			   *cpu,
			   *gpu;

	if (argc >= 3 && strcmp(argv[1], "copies") == 0)
		return bench_copies(argc, argv);
	if (argc < 6)
	{
		fprintf(stderr, "usage: %s FILE WIDTH HEIGHT PIXTYPE NODATA|none OPTION=VALUE...\n", argv[0]);
		return 2;
	}
	if (!parse_options(argc, argv, &o, &b))
		return 2;
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
	if (strcmp(o.op, "seams") == 0)
		return bench_seams(&o, &b);
	/* zeroed: the planes of products not asked for compare equal */
	cpu = calloc(1, out_bytes);
	gpu = calloc(1, out_bytes);

	if (time_backends(&o, &b, n, cpu, gpu) != 0)
		return 1;
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
