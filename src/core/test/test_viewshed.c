/*
 * test_viewshed.c — viewshed suites: analytic cases (a wall's shadow and the
 * height a target needs behind it, the horizon of a curved Earth), every cell
 * decided by exactly one ray, R2 against the exact R3, GPU against CPU.
 */
#include "test.h"

#define RE_DEFAULT 6370997.0
#define REFRACTION_DEFAULT 0.14286

static tg_viewshed_params
view_params(int col, int row, double h, tg_view_output output)
{
	tg_viewshed_params p;

	memset(&p, 0, sizeof p);
	p.observer_col = col;
	p.observer_row = row;
	p.observer_height = h;
	p.cell_x = p.cell_y = 1;
	p.output = output;
	return p;
}

static tg_status
run_view_capped(tg_backend backend, const tg_band *b, const tg_viewshed_params *p, float *out,
				size_t device_memory_limit)
{
	tg_ctx		ctx;
	tg_error	err;

	tg_ctx_init(&ctx);
	ctx.backend = backend;
	ctx.device_memory_limit = device_memory_limit;
	ctx.min_cells_for_gpu = 0;
	tg_error_clear(&err);
	return tg_viewshed(&ctx, b, p, out, &err);
}

static tg_status
run_view(tg_backend backend, const tg_band *b, const tg_viewshed_params *p, float *out)
{
	return run_view_capped(backend, b, p, out, 0);
}

static void
test_viewshed_wall(void)
{
	/* one row: observer at x = 0 (ground 0, eye 2), a 10 m wall at x = 5 */
	double		z[12] = {0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0};
	tg_band		b = test_band(TG_PT_64BF, z, 12, 1, false, 0);
	tg_viewshed_params p = view_params(0, 0, 2, TG_VIEW_VISIBLE);
	float		out[12];

	check(run_view(TG_BACKEND_CPU, &b, &p, out) == TG_OK, "wall: run");
	for (int x = 0; x < 12; x++)
		check(out[x] == (x <= 5 ? 1.0f : 0.0f), "wall: cell %d is %g", x, out[x]);
	/* behind the wall at x = 10 a target needs 2 + 8 * 10 / 5 = 18 m */
	p.output = TG_VIEW_HEIGHT;
	run_view(TG_BACKEND_CPU, &b, &p, out);
	check(fabsf(out[10] - 18.0f) < 1e-5f && out[3] == 0.0f, "wall: height needed at x = 10 is %g", out[10]);
	p.output = TG_VIEW_ANGLE;
	run_view(TG_BACKEND_CPU, &b, &p, out);
	check(fabsf(out[5] - (float) (atan(8.0 / 5.0) * 180 / M_PI)) < 1e-4f && isnan(out[0]),
		  "wall: angle to the wall top is %g", out[5]);
	/* the same raster with a target 18 m tall: just visible */
	p.output = TG_VIEW_VISIBLE;
	p.target_height = 18;
	run_view(TG_BACKEND_CPU, &b, &p, out);
	check(out[10] == 1.0f && out[11] == 0.0f, "wall: an 18 m target at x = 10 is visible");
}

static void
test_viewshed_curvature(void)
{
	/* a flat sea 300 cells of 100 m; eye 10 m: the horizon near sqrt(2 Re h) */
	enum
	{
		N = 300
	};
	double	   *z = calloc(N, sizeof(double));
	tg_band		b = test_band(TG_PT_64BF, z, N, 1, false, 0);
	tg_viewshed_params p = view_params(0, 0, 10, TG_VIEW_VISIBLE);
	float		out[N];
	double		re = RE_DEFAULT / (1 - REFRACTION_DEFAULT);
	int			first_hidden = -1;

	p.cell_x = p.cell_y = 100;
	p.earth_radius = RE_DEFAULT;
	p.refraction = REFRACTION_DEFAULT;
	check(run_view(TG_BACKEND_CPU, &b, &p, out) == TG_OK, "curvature: run");
	for (int x = 1; x < N && first_hidden < 0; x++)
		if (out[x] == 0.0f)
			first_hidden = x;
	/*
	 * The sea at distance d is seen under the slope -(h + d^2 / (2 Re)) / d,
	 * which rises up to d = sqrt(2 Re h) and falls after: the first hidden
	 * cell is the first whose slope is below an earlier cell's.
	 */
	{
		int			want = -1;
		double		best = -INFINITY;

		for (int x = 1; x < N && want < 0; x++)
		{
			double		d = 100.0 * x;
			double		slope = -(10 + d * d / (sqrt(d * d + re * re) + re)) / d;

			if (slope < best)
				want = x;
			best = slope > best ? slope : best;
		}
		check(first_hidden == want && abs(want * 100 - (int) sqrt(2 * re * 10)) <= 200,
			  "curvature: first hidden cell %d, want %d (horizon at %.0f m)", first_hidden, want,
			  sqrt(2 * re * 10));
	}
	for (int x = first_hidden; x < N; x++)
		if (out[x] != 0.0f)
		{
			check(false, "curvature: cell %d beyond the horizon is visible", x);
			break;
		}
	/* geometric (no Earth curvature): the whole flat sea is visible */
	p.earth_radius = 0;
	run_view(TG_BACKEND_CPU, &b, &p, out);
	for (int x = 0; x < N; x++)
		if (out[x] != 1.0f)
		{
			check(false, "flat Earth: cell %d hidden", x);
			break;
		}
	free(z);
}

/* Rolling random terrain with a few nodata holes. */
static double *
terrain(int W, int H, bool holes)
{
	double	   *z = malloc(sizeof(double) * W * H);
	double		fx = 0.05 + 0.1 * rng_uniform(),
				fy = 0.05 + 0.1 * rng_uniform();

	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++)
			z[(size_t) y * W + x] = holes && rng_next() % 61 == 0 ? -9999
				: 100 + 40 * sin(fx * x) * cos(fy * y) + 5 * rng_uniform();
	return z;
}

static void
test_viewshed_coverage_and_r3(void)
{
	static const int shapes[][2] = {{1, 1}, {1, 40}, {37, 1}, {2, 2}, {31, 17}, {64, 64}, {120, 77}};
	int64_t		cells = 0,
				agree = 0;

	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
		for (int trial = 0; trial < 6; trial++)
		{
			const int	W = shapes[s][0],
						H = shapes[s][1];
			double	   *z = terrain(W, H, trial % 2 == 1);
			tg_band		b = test_band(TG_PT_64BF, z, W, H, true, -9999);
			int			ox = trial == 0 ? 0 : trial == 1 ? W - 1 : (int) (rng_next() % W);
			int			oy = trial == 0 ? 0 : trial == 1 ? H - 1 : (int) (rng_next() % H);
			tg_viewshed_params p = view_params(ox, oy, 5, TG_VIEW_VISIBLE);
			float	   *r2 = malloc(sizeof(float) * W * H);
			float	   *r3 = malloc(sizeof(float) * W * H);
			bool		complete = true;

			z[(size_t) oy * W + ox] = 100;
			if (trial >= 4)
				p.max_distance = 0.3 * (W > H ? W : H) + 1;
			p.earth_radius = trial % 3 == 0 ? 0 : 500;	/* a small planet: curvature that matters */
			check(run_view(TG_BACKEND_CPU, &b, &p, r2) == TG_OK, "r2 %dx%d: run", W, H);
			p.algorithm = TG_VIEW_R3;
			check(run_view(TG_BACKEND_CPU, &b, &p, r3) == TG_OK, "r3 %dx%d: run", W, H);
			for (int y = 0; y < H; y++)
				for (int x = 0; x < W; x++)
				{
					size_t		i = (size_t) y * W + x;
					double		d2 = (double) (x - ox) * (x - ox) + (double) (y - oy) * (y - oy);
					bool		in_range = p.max_distance == 0 || d2 <= p.max_distance * p.max_distance;
					bool		valid = z[i] != -9999 && in_range;

					/* every valid cell in range is decided (by exactly one ray) */
					complete &= valid ? (r2[i] == 0.0f || r2[i] == 1.0f) : isnan(r2[i]);
					if (valid && (x != ox || y != oy))
					{
						cells++;
						agree += r2[i] == r3[i];
					}
				}
			check(complete, "r2 %dx%d observer (%d, %d): every valid cell in range decided, nothing else",
				  W, H, ox, oy);
			free(z);
			free(r2);
			free(r3);
		}
	check(agree >= 0.97 * cells, "R2 agrees with R3 on %lld of %lld cells (%.2f %%)",
		  (long long) agree, (long long) cells, 100.0 * agree / cells);
	printf("viewshed: R2 = R3 on %.2f %% of %lld random-terrain cells\n", 100.0 * agree / cells,
		   (long long) cells);
}

static void
test_viewshed_errors(void)
{
	double		z[4] = {1, 2, -9999, 4};
	tg_band		b = test_band(TG_PT_64BF, z, 2, 2, true, -9999);
	tg_viewshed_params p = view_params(2, 0, 1, TG_VIEW_VISIBLE);
	float		out[4];

	check(run_view(TG_BACKEND_CPU, &b, &p, out) == TG_EINVAL, "viewshed: observer outside refused");
	p = view_params(0, 1, 1, TG_VIEW_VISIBLE);
	check(run_view(TG_BACKEND_CPU, &b, &p, out) == TG_EINVAL, "viewshed: observer on nodata refused");
	p = view_params(0, 0, -1, TG_VIEW_VISIBLE);
	check(run_view(TG_BACKEND_CPU, &b, &p, out) == TG_EINVAL, "viewshed: negative height refused");
	p = view_params(0, 0, 1, TG_VIEW_VISIBLE);
	p.refraction = 1;
	check(run_view(TG_BACKEND_CPU, &b, &p, out) == TG_EINVAL, "viewshed: refraction 1 refused");
}

static void
test_viewshed_cuda_parity(void)
{
	static const int shapes[][2] = {{1, 1}, {1, 300}, {300, 1}, {257, 129}, {700, 600}};
	tg_device_info info;

	tg_device_query(0, &info);
	if (!info.available)
	{
		printf("skipped: viewshed CUDA parity (no GPU)\n");
		return;
	}
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
		for (int o = 0; o < 3; o++)
			for (int out_kind = 0; out_kind < 3; out_kind++)
			{
				const int	W = shapes[s][0],
							H = shapes[s][1];
				double	   *z = terrain(W, H, true);
				tg_band		b = test_band(TG_PT_64BF, z, W, H, true, -9999);
				int			ox = o == 0 ? 0 : o == 1 ? W / 2 : W - 1,
							oy = o == 0 ? H - 1 : o == 1 ? H / 3 : 0;
				tg_viewshed_params p = view_params(ox, oy, 3, (tg_view_output) out_kind);
				float	   *cpu = malloc(sizeof(float) * W * H);
				float	   *gpu = malloc(sizeof(float) * W * H);
				size_t		differ = 0;

				z[(size_t) oy * W + ox] = 120;
				p.cell_x = 30;
				p.cell_y = 25;
				p.earth_radius = RE_DEFAULT;
				p.refraction = REFRACTION_DEFAULT;
				p.target_height = o;
				if (o == 2)
					p.max_distance = 30.0 * W / 3;
				run_view(TG_BACKEND_CPU, &b, &p, cpu);
				check(run_view(TG_BACKEND_GPU, &b, &p, gpu) == TG_OK, "viewshed GPU %dx%d: run", W, H);
				for (size_t i = 0; i < (size_t) W * H; i++)
					differ += !(cpu[i] == gpu[i] || (isnan(cpu[i]) && isnan(gpu[i])));
				check(differ == 0, "viewshed GPU = CPU, %dx%d observer (%d, %d) output %d: %zu cells differ",
					  W, H, ox, oy, out_kind, differ);
				/* beyond a (tiny) device budget: strips of rows, same output */
				if (W * H > 1000)
				{
					differ = 0;
					check(run_view_capped(TG_BACKEND_GPU, &b, &p, gpu, (size_t) W * H * 4) == TG_OK,
						  "viewshed GPU in segments %dx%d: run", W, H);
					for (size_t i = 0; i < (size_t) W * H; i++)
						differ += !(cpu[i] == gpu[i] || (isnan(cpu[i]) && isnan(gpu[i])));
					check(differ == 0, "viewshed GPU in segments = CPU, %dx%d observer (%d, %d) output %d: %zu cells differ",
						  W, H, ox, oy, out_kind, differ);
				}
				free(z);
				free(cpu);
				free(gpu);
			}
}

/* The cumulative count equals the sum of single viewsheds; GPU = CPU. */
/* The progress a call reports: whether it never went back within a phase, and the last fraction. */
typedef struct progress_log
{
	char		phase[32];
	double		last;
	bool		backwards;
	int			calls;
} progress_log;

static void
log_progress(void *arg, const char *phase, double fraction)
{
	progress_log *l = arg;

	if (strcmp(phase, l->phase) == 0 && fraction < l->last)
		l->backwards = true;
	snprintf(l->phase, sizeof l->phase, "%s", phase);
	l->last = fraction;
	l->calls++;
}

static void
test_viewshed_count(void)
{
	const int	W = 150,
				H = 90,
				n = 7;
	double	   *z = terrain(W, H, true);
	tg_band		b = test_band(TG_PT_64BF, z, W, H, true, -9999);
	tg_viewshed_params p = view_params(0, 0, 2, TG_VIEW_VISIBLE);
	int			cols[7],
				rows[7];
	uint32_t   *count = malloc(sizeof(uint32_t) * W * H);
	uint32_t   *sum = calloc((size_t) W * H, sizeof(uint32_t));
	float	   *one = malloc(sizeof(float) * W * H);
	tg_ctx		ctx;
	tg_error	err;
	tg_device_info info;
	progress_log progress = {"", 0, false, 0};
	bool		same = true;

	p.cell_x = p.cell_y = 20;
	p.earth_radius = RE_DEFAULT;
	p.refraction = REFRACTION_DEFAULT;
	p.max_distance = 1500;
	for (int k = 0; k < n; k++)
	{
		cols[k] = (int) (rng_next() % W);
		rows[k] = (int) (rng_next() % H);
		z[(size_t) rows[k] * W + cols[k]] = 150;
	}
	for (int k = 0; k < n; k++)
	{
		p.observer_col = cols[k];
		p.observer_row = rows[k];
		run_view(TG_BACKEND_CPU, &b, &p, one);
		for (size_t i = 0; i < (size_t) W * H; i++)
			sum[i] += one[i] == 1.0f;
	}
	tg_ctx_init(&ctx);
	ctx.backend = TG_BACKEND_CPU;
	ctx.progress = log_progress;
	ctx.progress_arg = &progress;
	tg_error_clear(&err);
	check(tg_viewshed_count(&ctx, &b, &p, cols, rows, n, count, &err) == TG_OK, "count: CPU run");
	check(memcmp(count, sum, sizeof(uint32_t) * W * H) == 0, "count: CPU = sum of single viewsheds");
	/* one phase over every observer: its progress counts up once, to the end */
	check(progress.calls > n && !progress.backwards && strcmp(progress.phase, "on the CPU") == 0 &&
		  progress.last == 1.0, "count: progress in \"%s\" counts up to %g over %d reports",
		  progress.phase, progress.last, progress.calls);
	ctx.progress = NULL;

	tg_device_query(0, &info);
	if (info.available)
	{
		uint32_t   *gpu = malloc(sizeof(uint32_t) * W * H);

		ctx.backend = TG_BACKEND_GPU;
		ctx.min_cells_for_gpu = 0;
		check(tg_viewshed_count(&ctx, &b, &p, cols, rows, n, gpu, &err) == TG_OK, "count: GPU run");
		check(memcmp(count, gpu, sizeof(uint32_t) * W * H) == 0, "count: GPU = CPU");
		free(gpu);
	}
	/* an observer on nodata is refused and named */
	z[5] = -9999;
	cols[3] = 5;
	rows[3] = 0;
	tg_error_clear(&err);
	ctx.backend = TG_BACKEND_CPU;
	same = tg_viewshed_count(&ctx, &b, &p, cols, rows, n, count, &err) == TG_EINVAL &&
		strstr(err.detail, "Observer 4") != NULL;
	check(same, "count: an observer on nodata refused, named (%s)", err.detail);
	free(z);
	free(count);
	free(sum);
	free(one);
}

/*
 * The quick ownership test (neighbouring rays only) against the full search
 * for the nearest ray, for every ray and every cell it passes, on windows of
 * many shapes and observer positions (edges and corners included).
 */
static void
test_viewshed_ownership(void)
{
	int64_t		checked = 0,
				wrong = 0;

	for (int trial = 0; trial < 60; trial++)
	{
		tg_view_setup s;
		int			W = 1 + (int) (rng_next() % 40),
					H = 1 + (int) (rng_next() % 40);

		memset(&s, 0, sizeof s);
		s.width = W;
		s.height = H;
		s.ox = trial % 5 == 0 ? 0 : trial % 5 == 1 ? W - 1 : (int) (rng_next() % W);
		s.oy = trial % 3 == 0 ? 0 : trial % 3 == 1 ? H - 1 : (int) (rng_next() % H);
		s.x0 = s.ox - (int) (rng_next() % (s.ox + 1));
		s.y0 = s.oy - (int) (rng_next() % (s.oy + 1));
		s.x1 = s.ox + (int) (rng_next() % (W - s.ox));
		s.y1 = s.oy + (int) (rng_next() % (H - s.oy));
		s.density = 1 + trial % 3;
		{
			int			w = s.density * (s.x1 - s.x0) + 1,
						h = s.density * (s.y1 - s.y0) + 1;

			s.nrays = (w == 1 || h == 1) ? w * h : 2 * w + 2 * h - 4;
		}
		for (int r = 0; r < s.nrays; r++)
		{
			int			dx,
						dy;

			tg_view_ray(&s, r, &dx, &dy);
			for (int y = s.y0; y <= s.y1; y++)
				for (int x = s.x0; x <= s.x1; x++)
				{
					int			a = x - s.ox,
								b = y - s.oy,
								wx,
								wy;

					if ((a == 0 && b == 0) || (dx == 0 && dy == 0))
						continue;
					tg_view_owner(&s, a, b, &wx, &wy);
					checked++;
					wrong += tg_view_owns(&s, dx, dy, a, b) != (wx == dx && wy == dy);
				}
		}
	}
	check(wrong == 0, "viewshed: quick ownership test = nearest-ray search on %lld (ray, cell) pairs, %lld differ",
		  (long long) checked, (long long) wrong);
}

void
test_viewshed(void)
{
	test_viewshed_ownership();
	test_viewshed_count();
	test_viewshed_wall();
	test_viewshed_curvature();
	test_viewshed_coverage_and_r3();
	test_viewshed_errors();
	test_viewshed_cuda_parity();
}
