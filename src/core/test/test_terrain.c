/*
 * test_terrain.c — the local terrain derivatives (tg_terrain).
 *
 *   window        a hand-worked 3 x 3 window (the README's): every product
 *                 against values worked out by hand from the formulas
 *   surfaces      planes and quadratic surfaces, where the exact answer is
 *                 known: aspect of a plane, curvatures of a dome and of a
 *                 cylinder (Evans-Young is exact on quadratics)
 *   edges         missing neighbours take the centre's value; a nodata
 *                 centre gives each product's nodata; 1 x 1 and thin strips
 *   geomorphons   a cone, a pit, a ridge, a valley, a plane and a flat
 *   errors        refused products, types and parameters
 *   parity        CPU and GPU identical on a random DEM (skipped without one)
 */
#include "test.h"
#include "terrain/terrain.h"

static tg_status
run_terrain(tg_backend backend, const tg_band *b, const tg_terrain_params *p, void *const *out)
{
	tg_ctx		ctx;
	tg_error	err;

	tg_ctx_init(&ctx);
	ctx.backend = backend;
	tg_error_clear(&err);
	return tg_terrain(&ctx, b, p, out, &err);
}

/* All products of the test parameters on a band (cell metres wide): planes into out. */
static double *
all_products(const tg_band *b, double cell, void (*adjust) (tg_terrain_params *), double *planes[])
{
	const size_t n = (size_t) b->width * b->height;
	double	   *out = malloc(TG_TERRAIN_PRODUCTS * n * sizeof(double) + 1);
	void	   *vp[TG_TERRAIN_PRODUCTS];
	tg_terrain_params p;

	test_terrain_params(&p, cell);
	if (adjust)
		adjust(&p);
	for (int k = 0; k < TG_TERRAIN_PRODUCTS; k++)
		vp[k] = planes[k] = out + (size_t) k * n;
	check(run_terrain(TG_BACKEND_CPU, b, &p, vp) == TG_OK, "terrain: run");
	return out;
}

/* The README's window on 10 m cells (gx = 0.35, gy = 0.25 by Horn): all products at its centre, planes[k][4]. */
static const double readme_window[9] = {10, 12, 15, 11, 14, 18, 13, 17, 22};

static double *
readme_window_products(void (*adjust) (tg_terrain_params *), double *planes[])
{
	tg_band		b = test_band(TG_PT_64BF, readme_window, 3, 3, false, 0);

	return all_products(&b, 10, adjust, planes);
}

static uint8_t
form_at(double *planes[], size_t i)
{
	return ((uint8_t *) planes[TG_TERRAIN_GEOMORPHONS])[i];
}

static void
test_window(void)
{
	double	   *planes[TG_TERRAIN_PRODUCTS];
	double	   *out = readme_window_products(NULL, planes);
	const double slope = atan(sqrt(0.35 * 0.35 + 0.25 * 0.25)) * TG_DEGREES_PER_RADIAN;

	check(fabs(planes[TG_TERRAIN_SLOPE][4] - slope) < 1e-12, "slope %.15g, expected %.15g",
		  planes[TG_TERRAIN_SLOPE][4], slope);
	/* descent to the north-west: 360 - atan(0.35 / 0.25) */
	check(fabs(planes[TG_TERRAIN_ASPECT][4] - 305.5376777919744) < 1e-9, "aspect %.15g",
		  planes[TG_TERRAIN_ASPECT][4]);
	/* 255 (sin 45 + 0.35 sin 45 cos 45 + 0.25 cos 45 cos 45) / sqrt(1.185) */
	check(fabs(planes[TG_TERRAIN_HILLSHADE][4] - 235.91552709043353) < 1e-9, "hillshade %.15g",
		  planes[TG_TERRAIN_HILLSHADE][4]);
	check(planes[TG_TERRAIN_TPI][4] == -0.75, "tpi %.15g, expected 14 - 118 / 8", planes[TG_TERRAIN_TPI][4]);
	check(planes[TG_TERRAIN_TRI][4] == 3.25, "tri (wilson) %.15g, expected 26 / 8", planes[TG_TERRAIN_TRI][4]);
	check(planes[TG_TERRAIN_ROUGHNESS][4] == 12, "roughness %.15g", planes[TG_TERRAIN_ROUGHNESS][4]);
	/* Evans-Young: p = 0.35, q = -0.25, r = t = 0.01, s = -0.01 */
	check(fabs(planes[TG_TERRAIN_CURVATURE][4] - -0.015085275528143698) < 1e-15, "profile curvature %.17g",
		  planes[TG_TERRAIN_CURVATURE][4]);
	free(out);
}

static void
set_riley_byte_hillshade(tg_terrain_params *p)
{
	p->tri = TG_TRI_RILEY;
	p->types[TG_TERRAIN_HILLSHADE] = TG_PT_8BUI;
	p->curvature = TG_CURVATURE_PLAN;
}

static void
test_window_variants(void)
{
	double	   *planes[TG_TERRAIN_PRODUCTS];
	double	   *out = readme_window_products(set_riley_byte_hillshade, planes);
	static const tg_curvature_type types[] = {TG_CURVATURE_PLAN, TG_CURVATURE_MEAN, TG_CURVATURE_GAUSSIAN,
	TG_CURVATURE_TOTAL};
	static const double expect[] = {-0.0012567312296629146, -0.007790916257139214, 0, 0.0004};

	check(fabs(planes[TG_TERRAIN_TRI][4] - sqrt(120)) < 1e-12, "tri (riley) %.15g, expected sqrt 120",
		  planes[TG_TERRAIN_TRI][4]);
	/* gdaldem's byte: 1 + round(254 * 0.92516) */
	check(((uint8_t *) planes[TG_TERRAIN_HILLSHADE])[4] == 236, "hillshade byte %d",
		  ((uint8_t *) planes[TG_TERRAIN_HILLSHADE])[4]);
	free(out);
	for (int t = 0; t < 4; t++)
	{
		tg_terrain_params p;
		tg_band		one = test_band(TG_PT_64BF, readme_window, 3, 3, false, 0);
		double		cells[9];
		void	   *cp[1] = {cells};

		test_terrain_params(&p, 10);
		p.nproducts = 1;
		p.products[0] = TG_TERRAIN_CURVATURE;
		p.types[0] = TG_PT_64BF;
		p.curvature = types[t];
		check(run_terrain(TG_BACKEND_CPU, &one, &p, cp) == TG_OK, "curvature %d: run", t);
		check(fabs(cells[4] - expect[t]) < 1e-15, "curvature %d: %.17g, expected %.17g", t, cells[4], expect[t]);
	}
}

/* z = f(x, y) on a W x H grid of `cell` metres, x east and y north of the centre */
static void
surface(double *z, int W, int H, double cell, double (*f) (double, double))
{
	for (int r = 0; r < H; r++)
		for (int c = 0; c < W; c++)
			z[(size_t) r * W + c] = f((c - W / 2) * cell, (H / 2 - r) * cell);
}

static double
plane_nw(double x, double y)
{
	/* rises to the south-east: descends to the north-west at 45 degrees of azimuth 315 */
	return 100 + 0.3 * x - 0.3 * y;
}

static double
dome(double x, double y)
{
	return 500 - (x * x + y * y) / (2 * 200.0);	/* radius of curvature 200 m at the top */
}

static double
cylinder(double x, double y)
{
	return 500 - x * x / (2 * 200.0);
}

static void
set_curvature_mean(tg_terrain_params *p)
{
	p->curvature = TG_CURVATURE_MEAN;
}

static void
set_curvature_gauss(tg_terrain_params *p)
{
	p->curvature = TG_CURVATURE_GAUSSIAN;
}

static void
set_curvature_profile(tg_terrain_params *p)
{
	p->curvature = TG_CURVATURE_PROFILE;
}

/* Surfaces on a grid of SIDE x SIDE cells of 10 m */
enum
{
	SIDE = 21
};

/* All products (adjusted) of the surface f, its elevations into z[SIDE * SIDE]. */
static double *
surface_products(double (*f) (double, double), double *z, void (*adjust) (tg_terrain_params *), double *planes[])
{
	tg_band		b = test_band(TG_PT_64BF, z, SIDE, SIDE, false, 0);

	surface(z, SIDE, SIDE, 10, f);
	return all_products(&b, 10, adjust, planes);
}

static void
test_surfaces(void)
{
	enum
	{
		W = SIDE, H = SIDE
	};
	double		z[W * H];
	double	   *planes[TG_TERRAIN_PRODUCTS];
	double	   *out;
	const size_t centre = (size_t) (H / 2) * W + W / 2;
	double		worst = 0;

	out = surface_products(plane_nw, z, NULL, planes);
	for (int r = 1; r < H - 1; r++)
		for (int c = 1; c < W - 1; c++)
		{
			const size_t i = (size_t) r * W + c;

			worst = fmax(worst, fabs(planes[TG_TERRAIN_ASPECT][i] - 315));
			worst = fmax(worst, fabs(planes[TG_TERRAIN_TPI][i]));
			worst = fmax(worst, fabs(planes[TG_TERRAIN_CURVATURE][i]));
		}
	check(worst < 1e-9, "plane: aspect 315, tpi and curvature 0 inside (worst %g)", worst);
	check(form_at(planes, centre) == TG_FORM_SLOPE, "plane: geomorphon slope, got %d", form_at(planes, centre));
	free(out);

	/* a dome: mean curvature 1/200 and gaussian 1/200^2 at the top (convex: positive) */
	out = surface_products(dome, z, set_curvature_mean, planes);
	check(fabs(planes[TG_TERRAIN_CURVATURE][centre] - 1 / 200.0) < 1e-12, "dome: mean curvature %.15g",
		  planes[TG_TERRAIN_CURVATURE][centre]);
	check(planes[TG_TERRAIN_ASPECT][centre] == -1, "dome top: aspect -1 (flat), got %g",
		  planes[TG_TERRAIN_ASPECT][centre]);
	check(form_at(planes, centre) == TG_FORM_PEAK, "dome top: geomorphon peak, got %d", form_at(planes, centre));
	free(out);
	out = surface_products(dome, z, set_curvature_gauss, planes);
	check(fabs(planes[TG_TERRAIN_CURVATURE][centre] - 1 / 40000.0) < 1e-15, "dome: gaussian curvature %.15g",
		  planes[TG_TERRAIN_CURVATURE][centre]);
	free(out);

	/* a cylinder: profile curvature (1/200) / (1 + p^2)^1.5 with p = -x / 200 */
	out = surface_products(cylinder, z, set_curvature_profile, planes);
	{
		const size_t i = centre + 3;	/* x = 30 m */
		const double p = -30 / 200.0,
					expect = (1 / 200.0) / pow(1 + p * p, 1.5);

		check(fabs(planes[TG_TERRAIN_CURVATURE][i] - expect) < 1e-12, "cylinder: profile curvature %.15g, expected %.15g",
			  planes[TG_TERRAIN_CURVATURE][i], expect);
		check(form_at(planes, centre) == TG_FORM_RIDGE, "cylinder crest: geomorphon ridge, got %d",
			  form_at(planes, centre));
	}
	free(out);
}

static void
test_edges_and_nodata(void)
{
	/* a 3 x 3 with nodata (-1) in the corner: it takes the centre's value */
	const double z[9] = {-1, 12, 15, 11, 14, 18, 13, 17, 22};
	const double zc[9] = {14, 12, 15, 11, 14, 18, 13, 17, 22};
	tg_band		b = test_band(TG_PT_64BF, z, 3, 3, true, -1),
				bc = test_band(TG_PT_64BF, zc, 3, 3, false, 0);
	double	   *planes[TG_TERRAIN_PRODUCTS],
			   *same[TG_TERRAIN_PRODUCTS];
	double	   *out = all_products(&b, 10, NULL, planes),
			   *ref = all_products(&bc, 10, NULL, same);
	const int16_t one = 7;
	tg_band		single = test_band(TG_PT_16BSI, &one, 1, 1, false, 0);

	for (int k = 0; k < TG_TERRAIN_PRODUCTS; k++)
	{
		if (k == TG_TERRAIN_GEOMORPHONS)
			continue;
		check(planes[k][4] == same[k][4], "product %d: a nodata neighbour reads as the centre (%g vs %g)", k,
			  planes[k][4], same[k][4]);
		check(planes[k][0] == -9999, "product %d: a nodata centre gives nodata, got %g", k, planes[k][0]);
	}
	check(form_at(planes, 0) == 0, "geomorphons: nodata centre gives 0");
	free(out);
	free(ref);

	/* a single cell: every neighbour missing, so flat */
	out = all_products(&single, 30, NULL, planes);
	check(planes[TG_TERRAIN_SLOPE][0] == 0 && planes[TG_TERRAIN_ASPECT][0] == -1 &&
		  planes[TG_TERRAIN_TPI][0] == 0 && planes[TG_TERRAIN_ROUGHNESS][0] == 0 &&
		  planes[TG_TERRAIN_CURVATURE][0] == 0 && form_at(planes, 0) == TG_FORM_FLAT,
		  "1 x 1: flat everywhere");
	check(fabs(planes[TG_TERRAIN_HILLSHADE][0] - 255 * sin(TG_TERRAIN_PI / 4)) < 1e-9,
		  "1 x 1: hillshade 255 sin 45, got %g", planes[TG_TERRAIN_HILLSHADE][0]);
	free(out);
}

/* geomorphon of the centre of the surface f */
static int
centre_form(double (*f) (double, double))
{
	double		z[SIDE * SIDE];
	double	   *planes[TG_TERRAIN_PRODUCTS];
	double	   *out = surface_products(f, z, NULL, planes);
	int			form;

	form = form_at(planes, (size_t) (SIDE / 2) * SIDE + SIDE / 2);
	free(out);
	return form;
}

static double
cone_pit(double x, double y)
{
	return sqrt(x * x + y * y);
}

static double
valley(double x, double y)
{
	return fabs(x) + 0.001 * y;
}

static double
level(double x, double y)
{
	return 50 + 0.001 * x;		/* under the 1 degree threshold */
}

static void
test_geomorphons(void)
{
	check(centre_form(cone_pit) == TG_FORM_PIT, "pit: %d", centre_form(cone_pit));
	check(centre_form(valley) == TG_FORM_VALLEY, "valley: %d", centre_form(valley));
	check(centre_form(level) == TG_FORM_FLAT, "flat: %d", centre_form(level));
	/* the lookup table: every count of lower and higher that can happen has a form */
	for (int lower = 0; lower <= 8; lower++)
		for (int higher = 0; lower + higher <= 8; higher++)
			check(tg_geomorphon_form(lower, higher) >= TG_FORM_FLAT &&
				  tg_geomorphon_form(lower, higher) <= TG_FORM_PIT, "form of %d lower, %d higher", lower, higher);
}

static void
test_errors(void)
{
	const double z[4] = {1, 2, 3, 4};
	tg_band		b = test_band(TG_PT_64BF, z, 2, 2, false, 0);
	double		out[4];
	void	   *vp[1] = {out};
	tg_terrain_params p;

	test_terrain_params(&p, 10);
	p.nproducts = 1;
	p.products[0] = TG_TERRAIN_ASPECT;
	p.types[0] = TG_PT_8BUI;
	check(run_terrain(TG_BACKEND_CPU, &b, &p, vp) == TG_EINVAL, "aspect as 8BUI is refused");
	p.products[0] = TG_TERRAIN_GEOMORPHONS;
	p.search_radius = 3;
	p.skip = 3;
	check(run_terrain(TG_BACKEND_CPU, &b, &p, vp) == TG_EINVAL, "skip >= search_radius is refused");
	p.skip = 0;
	p.search_radius = TG_GEOMORPHON_MAX_RADIUS + 1;
	check(run_terrain(TG_BACKEND_CPU, &b, &p, vp) == TG_EINVAL, "a search radius beyond the limit is refused");
	test_terrain_params(&p, 10);
	p.nproducts = 2;
	p.products[1] = p.products[0];
	check(run_terrain(TG_BACKEND_CPU, &b, &p, vp) == TG_EINVAL, "a product twice is refused");
	test_terrain_params(&p, 10);
	p.altitude = 91;
	check(run_terrain(TG_BACKEND_CPU, &b, &p, vp) == TG_EINVAL, "altitude 91 is refused");
	test_terrain_params(&p, 0);
	check(run_terrain(TG_BACKEND_CPU, &b, &p, vp) == TG_EINVAL, "a zero pixel size is refused");
}

static void
test_parity(void)
{
	enum
	{
		W = 613, H = 407
	};
	tg_device_info info;
	int16_t    *z = malloc(sizeof(int16_t) * W * H);
	tg_band		b = test_band(TG_PT_16BSI, z, W, H, true, -32768);
	static const tg_hillshade_method methods[] = {TG_HILLSHADE_STANDARD, TG_HILLSHADE_MULTIDIRECTIONAL,
	TG_HILLSHADE_COMBINED};

	tg_device_query(0, &info);
	if (!info.available)
	{
		printf("skipped: CUDA parity of the terrain derivatives (no GPU: %s)\n", info.reason);
		free(z);
		return;
	}
	for (size_t i = 0; i < (size_t) W * H; i++)
		z[i] = rng_uniform() < 0.002 ? -32768 : (int16_t) (800 + 300 * sin(i % W / 23.0) * cos(i / W / 17.0) +
															 20 * rng_uniform());
	for (int m = 0; m < 3; m++)
		for (int c = 0; c <= TG_CURVATURE_TOTAL; c++)
		{
			const size_t n = (size_t) W * H;
			double	   *cpu = malloc(TG_TERRAIN_PRODUCTS * n * sizeof(double)),
					   *gpu = malloc(TG_TERRAIN_PRODUCTS * n * sizeof(double));
			void	   *pc[TG_TERRAIN_PRODUCTS],
					   *pg[TG_TERRAIN_PRODUCTS];
			tg_terrain_params p;
			size_t		differ = 0,
						beyond = 0;

			test_terrain_params(&p, 30);
			p.hillshade = methods[m];
			p.curvature = (tg_curvature_type) c;
			p.tri = (tg_tri_algorithm) (c % 2);
			for (int k = 0; k < TG_TERRAIN_PRODUCTS; k++)
			{
				pc[k] = cpu + (size_t) k * n;
				pg[k] = gpu + (size_t) k * n;
			}
			/* alike where a plane of a narrower type leaves its slot unwritten */
			memset(cpu, 0xff, TG_TERRAIN_PRODUCTS * n * sizeof(double));
			memset(gpu, 0xff, TG_TERRAIN_PRODUCTS * n * sizeof(double));
			check(run_terrain(TG_BACKEND_CPU, &b, &p, pc) == TG_OK, "parity: cpu run");
			check(run_terrain(TG_BACKEND_GPU, &b, &p, pg) == TG_OK, "parity: gpu run");
			for (size_t i = 0; i < TG_TERRAIN_PRODUCTS * n; i++)
				if (memcmp(&cpu[i], &gpu[i], sizeof(double)) != 0)
				{
					differ++;
					/* atan, atan2 and acos (slope, aspect, combined hillshade) may round apart by 2 ulp */
					if (!(fabs(cpu[i] - gpu[i]) <= 1e-13 * fmax(1.0, fabs(cpu[i]))))
						beyond++;
				}
			check(beyond == 0, "parity (hillshade %d, curvature %d): %zu values differ beyond 1e-13, %zu at all",
				  m, c, beyond, differ);
			free(cpu);
			free(gpu);
		}
	free(z);
}

void
test_terrain(void)
{
	test_window();
	test_window_variants();
	test_surfaces();
	test_edges_and_nodata();
	test_geomorphons();
	test_errors();
	test_parity();
}
