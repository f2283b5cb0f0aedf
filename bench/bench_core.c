/*
 * bench_core.c — time the core's slope on a real DEM without a server: CPU
 * path, GPU path (device kernel time from CUDA events, transfers, wall time in
 * the core) and the GPU/CPU agreement.  bench/run_bench.py drives it; the DEM
 * comes as raw pixels (gdal_translate -of ENVI).
 *
 *   bench_core FILE WIDTH HEIGHT PIXTYPE NODATA|none PIXEL_W PIXEL_H SCALE REPS
 *
 * Prints one line of key=value pairs.
 */
#include "tg_core.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* Run slope `reps` times on a backend; medians into *wall, *kernel, *transfer. */
static int
time_slope(tg_backend backend, const tg_band *b, const tg_slope_params *p, float *out,
		   int reps, double *wall, double *kernel, double *transfer)
{
	double	   *w = calloc(reps, sizeof(double));
	double	   *k = calloc(reps, sizeof(double));
	double	   *t = calloc(reps, sizeof(double));
	int			i;

	for (i = -1; i < reps; i++)	/* one warm-up run (CUDA start, caches) */
	{
		tg_ctx		ctx;
		tg_error	err;
		tg_run_stats stats;
		double		t0;

		tg_ctx_init(&ctx);
		ctx.backend = backend;
		ctx.stats = &stats;
		tg_error_clear(&err);
		t0 = now_ms();
		if (tg_slope(&ctx, b, p, out, &err) != TG_OK)
		{
			fprintf(stderr, "slope on %s failed: %s %s\n", tg_backend_name(backend),
					err.message, err.detail);
			return 1;
		}
		if (i >= 0)
		{
			w[i] = now_ms() - t0;
			k[i] = stats.kernel_ms;
			t[i] = stats.transfer_ms;
		}
	}
	*wall = median(w, reps);
	*kernel = median(k, reps);
	*transfer = median(t, reps);
	free(w);
	free(k);
	free(t);
	return 0;
}

int
main(int argc, char **argv)
{
	tg_band		b;
	tg_slope_params p;
	tg_device_info info;
	FILE	   *f;
	size_t		n,
				bytes;
	void	   *data;
	float	   *cpu,
			   *gpu;
	int			reps,
				code;
	double		cpu_wall,
				k,
				t,
				gpu_wall,
				gpu_kernel,
				gpu_transfer;

	if (argc != 10)
	{
		fprintf(stderr, "usage: %s FILE WIDTH HEIGHT PIXTYPE NODATA|none PIXEL_W PIXEL_H SCALE REPS\n", argv[0]);
		return 2;
	}
	memset(&b, 0, sizeof b);
	b.width = atoi(argv[2]);
	b.height = atoi(argv[3]);
	code = parse_pixtype(argv[4]);
	if (code < 0)
	{
		fprintf(stderr, "unknown pixel type %s\n", argv[4]);
		return 2;
	}
	b.pixtype = (tg_pixtype) code;
	b.has_nodata = strcmp(argv[5], "none") != 0;
	b.nodata = b.has_nodata ? atof(argv[5]) : 0;
	p.pixel_width = atof(argv[6]);
	p.pixel_height = atof(argv[7]);
	p.scale = atof(argv[8]);
	p.units = TG_SLOPE_DEGREES;
	p.out_nodata = -9999.0f;
	reps = atoi(argv[9]);

	n = (size_t) b.width * b.height;
	bytes = n * tg_pixtype_size(b.pixtype);
	data = malloc(bytes);
	f = fopen(argv[1], "rb");
	if (!f || fread(data, 1, bytes, f) != bytes)
	{
		fprintf(stderr, "cannot read %zu bytes from %s\n", bytes, argv[1]);
		return 1;
	}
	fclose(f);
	b.data = data;
	cpu = malloc(n * sizeof(float));
	gpu = malloc(n * sizeof(float));

	if (time_slope(TG_BACKEND_CPU, &b, &p, cpu, reps, &cpu_wall, &k, &t))
		return 1;
	printf("cells=%zu cpu_ms=%.3f cpu_gcells=%.4f", n, cpu_wall, n / cpu_wall / 1e6);

	tg_device_query(0, &info);
	if (info.available)
	{
		double		worst = 0;
		size_t		i,
					differing = 0;

		if (time_slope(TG_BACKEND_GPU, &b, &p, gpu, reps, &gpu_wall, &gpu_kernel, &gpu_transfer))
			return 1;
		for (i = 0; i < n; i++)
		{
			double		d = fabs((double) gpu[i] - cpu[i]) / fmax(1.0, fabs(cpu[i]));

			if (isnan(d) || d > worst)
				worst = isnan(d) ? INFINITY : d;
			differing += gpu[i] != cpu[i];
		}
		printf(" gpu_ms=%.3f gpu_kernel_ms=%.4f gpu_transfer_ms=%.3f kernel_gcells=%.1f"
			   " max_rel_diff=%.3g cells_differing=%zu device=\"%s\"",
			   gpu_wall, gpu_kernel, gpu_transfer, n / gpu_kernel / 1e6, worst, differing,
			   info.name);
	}
	else
		printf(" gpu=none");
	printf("\n");
	free(data);
	free(cpu);
	free(gpu);
	return 0;
}
