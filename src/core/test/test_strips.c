/*
 * test_strips.c — filling, routing and accumulating in strips of rows
 * against the same on the whole grid: every routing, strips of one row, of
 * the whole grid and of random heights, flats and depressions that cross
 * strip boundaries, weights and units; and the seams' adversaries (a
 * plateau that crosses every boundary back and forth, a depression over
 * every strip, nodata islands in it) on one and four threads.
 */
#include "test_hydro.h"

#include "hydro/fill/fill.h"

/*
 * H rows cut into strips for the tests in strips: split 0 one row each, 1 one
 * strip, 2 three rows each, 3 random heights of 1 to 9; returns the count.
 */
static int
split_rows(int H, int split, int *rows)
{
	int			nb = 0,
				left = H;

	while (left > 0)
	{
		int			r = split == 0 ? 1 : split == 1 ? H : split == 2 ? 3 : 1 + (int) (rng_uniform() * 9);

		r = r > left ? left : r;
		rows[nb++] = r;
		left -= r;
	}
	return nb;
}

/* Fill in strips (scale/seams/fill_seams.c) against the in-memory priority-flood. */
static bool
fill_in_strips(const double *z, int W, int H, const int *rows, int nb, tg_backend backend, double *out)
{
	tg_ctx		ctx = cpu_ctx(NULL);
	tg_error	err;
	tg_fill_strips *fb;
	double	   *buf = malloc(sizeof(double) * (size_t) W * (H + 2));
	bool		ok;
	int			r0;

	tg_error_clear(&err);
	ctx.backend = backend;
	ok = tg_fill_strips_begin(&ctx, W, H, &fb, &err) == TG_OK;
	for (int pass = 0; pass < 2 && ok; pass++)
	{
		r0 = 0;
		for (int k = 0; k < nb && ok; k++)
		{
			/* the strip with its halo rows, as a reader would hand it over */
			int			a = r0 > 0 ? r0 - 1 : r0,
						b = r0 + rows[k] < H ? r0 + rows[k] + 1 : r0 + rows[k];

			for (size_t i = 0; i < (size_t) (b - a) * W; i++)
			{
				double		v = z[(size_t) a * W + i];

				buf[i] = v == ND ? NAN : v;
			}
			if (pass == 0)
				ok = tg_fill_strips_scan(&ctx, fb, r0, rows[k], buf, &err) == TG_OK;
			else
				ok = tg_fill_strips_finish(&ctx, fb, r0, rows[k], buf, out + (size_t) r0 * W, &err) == TG_OK;
			r0 += rows[k];
		}
		if (pass == 0 && ok)
			ok = tg_fill_strips_solve(&ctx, fb, &err) == TG_OK;
	}
	if (!ok)
		printf("fill in strips: %s\n", err.message);
	tg_fill_strips_end(&ctx, fb);
	free(buf);
	return ok;
}

static void
test_fill_strips(void)
{
	static const int shapes[][2] = {{1, 1}, {7, 1}, {1, 9}, {12, 10}, {40, 33}, {160, 97}};
	const int	usual_scan = tg_part_scan_rows;

	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
		for (int terrain = 0; terrain < 3; terrain++)
		{
			const int	W = shapes[s][0],
						H = shapes[s][1];
			const size_t n = (size_t) W * H;
			double	   *z = terrain == 0 ? random_terrain(W, H, 5, 0.05)
				: terrain == 1 ? random_terrain(W, H, 40, 0.0) : malloc(sizeof(double) * n);
			double	   *ref = malloc(sizeof(double) * n);
			double	   *got = malloc(sizeof(double) * n);
			int		   *rows = malloc(sizeof(int) * H);

			if (terrain == 2)	/* noise: pits everywhere, flats of equal values */
				for (size_t i = 0; i < n; i++)
					z[i] = rng_uniform() < 0.03 ? ND : floor(rng_uniform() * 12);
			check(fill64(TG_BACKEND_CPU, z, W, H, TG_FILL_PRIORITY_FLOOD, 0, ref) == TG_OK,
				  "fill in strips %dx%d: reference", W, H);
			/* random strips and one strip again, each scanned in sub-strips of 2 rows */
			for (int split = 0; split < 6; split++)
			{
				int			nb = split_rows(H, split < 4 ? split : split == 4 ? 3 : 1, rows);
				bool		same = true,
							ran;

				tg_part_scan_rows = split < 4 ? usual_scan : 2;
				ran = fill_in_strips(z, W, H, rows, nb, TG_BACKEND_CPU, got);
				tg_part_scan_rows = usual_scan;
				if (!ran)
				{
					check(false, "fill %dx%d in %d strips ran", W, H, nb);
					continue;
				}
				for (size_t i = 0; i < n; i++)
				{
					double		r = ref[i] == ND ? NAN : ref[i];

					same &= (isnan(r) && isnan(got[i])) || r == got[i];
				}
				check(same, "fill %dx%d (terrain %d) in %d strips%s equals the in-memory fill",
					  W, H, terrain, nb, split < 4 ? "" : " of sub-strips");
			}
			free(z);
			free(ref);
			free(got);
			free(rows);
		}
}

static const char *
routing_label(tg_routing r)
{
	static const char *const names[] = {"d8", "fd8", "mfd-md", "fdd8", "dinf", "anisotropic"};

	return r >= 0 && r < (int) (sizeof names / sizeof names[0]) ? names[r] : "?";
}

/* A spill in memory. */
static tg_status
memory_spill_write(void *arg, size_t offset, const void *data, size_t bytes, tg_error *err)
{
	memcpy((uint8_t *) arg + offset, data, bytes);
	return TG_OK;
}

static tg_status
memory_spill_read(void *arg, size_t offset, void *data, size_t bytes, tg_error *err)
{
	memcpy(data, (const uint8_t *) arg + offset, bytes);
	return TG_OK;
}

/*
 * Directions and accumulation in strips (route_strips.c) of surface `surf`
 * (NaN = nodata; handed over as floats where `single`: its values must be
 * floats), with the strip sizes `rows`, on `threads` threads, each strip's
 * D8 routing and accumulation on `backend`.  d8: ESRI codes, frac: 8 planes
 * of the whole grid, acc: the accumulation, receivers (where given): the
 * receiver masks.
 */
static bool
route_in_strips(const double *surf, bool single, const tg_flow_params *p, tg_accum_units units,
			   const double *weight, const int *rows, int nb, int threads, tg_backend backend, uint8_t *d8,
			   float *frac, double *acc, uint16_t *receivers, size_t *flat_cells)
{
	const int	W = p->geom.width,
				H = p->geom.height;
	const size_t n = (size_t) W * H;
	tg_ctx		ctx = cpu_ctx(NULL);
	tg_error	err;
	tg_route_strips *rb = NULL;
	float	   *bfrac = malloc(sizeof(float) * 8 * n + 1),
			   *surf32 = malloc(sizeof(float) * n + 1);
	tg_spill	spill = {memory_spill_write, memory_spill_read, malloc(40 * n + 1)};
	bool		ok;

	for (size_t i = 0; i < n; i++)
		surf32[i] = (float) surf[i];

	ctx.threads = threads;
	ctx.backend = backend;
	tg_error_clear(&err);
	ok = tg_route_strips_begin(&ctx, p, units, &rb, &err) == TG_OK;
	for (int pass = 0; pass < 4 && ok; pass++)
	{
		int			r0 = 0;

		for (int k = 0; k < nb && ok; k++)
		{
			/* the strip with two halo rows each side, as the strips hand it over */
			const int	first = r0 >= 2 ? r0 - 2 : 0,
						count = (r0 + rows[k] + 2 < H ? r0 + rows[k] + 2 : H) - first;
			tg_band		z = band_f64(surf + (size_t) first * W, W, count),
						wb = band_f64(weight ? weight + (size_t) r0 * W : surf, W, rows[k]);

			if (single)
			{
				z.pixtype = TG_PT_32BF;
				z.data = surf32 + (size_t) first * W;
			}
			if (pass == 0)
				ok = tg_route_strips_scan(&ctx, rb, r0, rows[k], &z, &err) == TG_OK;
			else if (pass == 1)
			{
				ok = tg_route_strips_directions(&ctx, rb, r0, rows[k], &z, d8 + (size_t) r0 * W,
												bfrac, &err) == TG_OK;
				for (int j = 0; j < 8 && ok; j++)
					memcpy(frac + (size_t) j * n + (size_t) r0 * W, bfrac + (size_t) j * rows[k] * W,
						   sizeof(float) * rows[k] * W);
			}
			else if (pass == 2 && p->routing == TG_ROUTE_D8)
				ok = tg_route_strips_link(&ctx, rb, r0, rows[k], &z, weight ? &wb : NULL, &err) == TG_OK;
			else if (pass == 2)
				ok = tg_route_strips_spread(&ctx, rb, r0, rows[k], &z, weight ? &wb : NULL, &spill, 0,
											&err) == TG_OK;
			else if (pass == 3 && p->routing == TG_ROUTE_D8)
				ok = tg_route_strips_accumulate(&ctx, rb, r0, rows[k], &z, weight ? &wb : NULL,
												acc + (size_t) r0 * W, receivers ? receivers + (size_t) r0 * W : NULL,
												&err) == TG_OK;
			else if (pass == 3)
				ok = tg_route_strips_flow_result(&ctx, rb, r0, rows[k], &spill, 0, acc + (size_t) r0 * W,
												 receivers ? receivers + (size_t) r0 * W : NULL, &err) == TG_OK;
			r0 += rows[k];
		}
		if (pass == 0 && ok)
			ok = tg_route_strips_solve_flats(&ctx, rb, &err) == TG_OK;
		if (pass == 2 && ok && p->routing == TG_ROUTE_D8)
			ok = tg_route_strips_solve_flow(&ctx, rb, &err) == TG_OK;
		else if (pass == 2 && ok)
			ok = tg_route_strips_settle(&ctx, rb, &spill, 0, &err) == TG_OK;
	}
	if (!ok)
		printf("routing in strips: %s\n", err.message);
	*flat_cells = rb ? tg_route_strips_flat_cells(rb) : 0;
	tg_route_strips_end(&ctx, rb);
	free(bfrac);
	free(surf32);
	free(spill.arg);
	return ok;
}

/* Terraces: long flats of a few levels that cross any strip boundary. */
static double *
terraced_terrain(int W, int H)
{
	double	   *z = malloc(sizeof(double) * (W * H > 0 ? W * H : 1));

	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++)
			z[(size_t) y * W + x] = rng_uniform() < 0.01 ? ND :
				floor(((3 * x + 2 * y) % 61) / 12.0) + (rng_uniform() < 0.02 ? 1 : 0);
	return z;
}

static void
test_route_strips(void)
{
	static const int shapes[][2] = {{1, 1}, {7, 1}, {1, 9}, {12, 10}, {40, 33}, {160, 97}};
	size_t		crossing = 0;

	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
		for (int terrain = 0; terrain < 3; terrain++)
		{
			const int	W = shapes[s][0],
						H = shapes[s][1];
			const size_t n = (size_t) W * H;
			double	   *z = terrain == 0 ? random_terrain(W, H, 4, 0.03)
				: terrain == 1 ? terraced_terrain(W, H) : random_terrain(W, H, 40, 0.0);
			double	   *filled = malloc(sizeof(double) * n + 1),
					   *surf = malloc(sizeof(double) * n + 1),
					   *ref_acc = malloc(sizeof(double) * n + 1),
					   *acc = malloc(sizeof(double) * n + 1);
			uint8_t    *ref_d8 = malloc(n + 1),
					   *d8 = malloc(n + 1);
			float	   *ref_frac = malloc(sizeof(float) * 8 * n + 1),
					   *frac = malloc(sizeof(float) * 8 * n + 1);
			int		   *rows = malloc(sizeof(int) * H);
			double	   *weight = malloc(sizeof(double) * n + 1);

			/* weights: fractions, some nodata (counting 0) */
			for (size_t i = 0; i < n; i++)
				weight[i] = rng_uniform() < 0.05 ? ND : 0.25 + rng_uniform();
			fill64(TG_BACKEND_CPU, z, W, H, TG_FILL_PRIORITY_FLOOD, 0, filled);
			for (int c = 0; c < 9; c++)
			{
				/*
				 * D8 filled / raw, MFD-md filled / raw, D8 geographic in area and
				 * sca, D8 weighted, FD8 weighted, D-infinity geographic in sca
				 */
				const tg_routing routing = c == 2 || c == 3 ? TG_ROUTE_MFD_MD : c == 7 ? TG_ROUTE_FD8
					: c == 8 ? TG_ROUTE_DINF : TG_ROUTE_D8;
				const bool	fill = c != 1 && c != 3;
				const bool	weighted = c == 6 || c == 7;
				const tg_accum_units units = c == 4 ? TG_UNITS_AREA : c == 5 || c == 8 ? TG_UNITS_SCA
					: TG_UNITS_CELLS;
				tg_flow_params p = flow_params(routing, W, H, 1, fill);
				tg_band		b = band_f64(z, W, H);
				tg_band		wb = band_f64(weight, W, H);
				tg_ctx		ctx = cpu_ctx(NULL);
				tg_error	err;

				if (c == 4 || c == 5 || c == 8)
				{
					p.geom.geographic = true;
					p.geom.lat_top = 47.25;
					p.geom.lat_step = -0.01;
					p.geom.lon_step = 0.01;
				}
				for (size_t i = 0; i < n; i++)
				{
					double		v = fill ? filled[i] : z[i];

					surf[i] = v == ND ? NAN : v;
				}
				tg_error_clear(&err);
				check(tg_flow_direction(&ctx, &b, &p, routing == TG_ROUTE_D8 ? ref_d8 : NULL,
										routing == TG_ROUTE_D8 ? NULL : ref_frac, &err) == TG_OK,
					  "routing in strips %dx%d: reference directions", W, H);
				check(tg_flow_accumulation(&ctx, &b, weighted ? &wb : NULL, &p, TG_ACC_INDEGREE, units,
										   ref_acc, &err) == TG_OK,
					  "routing in strips %dx%d: reference accumulation", W, H);
				for (int split = 0; split < 4; split++)
				{
					int			nb = split_rows(H, split, rows);
					size_t		flats = 0,
								d8_diff = 0,
								frac_diff = 0;
					double		acc_diff = 0;

					if (!route_in_strips(surf, false, &p, units, weighted ? weight : NULL, rows, nb, 1, TG_BACKEND_CPU,
										 d8, frac, acc, NULL, &flats))
					{
						check(false, "routing in strips %dx%d in %d strips ran", W, H, nb);
						continue;
					}
					crossing += flats;
					for (size_t i = 0; i < n; i++)
					{
						double		r = ref_acc[i],
									g = acc[i];

						if (isnan(r) != isnan(g))
							acc_diff = INFINITY;
						else if (!isnan(r))
							acc_diff = fmax(acc_diff, fabs(r - g) / fmax(fabs(r), 1e-300));
						if (routing == TG_ROUTE_D8)
							d8_diff += d8[i] != ref_d8[i];
						else
							for (int k = 0; k < 8; k++)
							{
								float		r = ref_frac[(size_t) k * n + i],
											g = frac[(size_t) k * n + i];

								frac_diff += !((isnan(r) && isnan(g)) || r == g);
							}
					}
					check(d8_diff == 0 && frac_diff == 0,
						  "routing in strips %dx%d (terrain %d, case %d) in %d strips: directions equal the "
						  "in-memory ones (%zu codes, %zu shares differ)", W, H, terrain, c, nb,
						  d8_diff, frac_diff);
					check(routing == TG_ROUTE_D8 && units == TG_UNITS_CELLS && !weighted ? acc_diff == 0
						  : acc_diff < 1e-12,
						  "%s accumulation in strips %dx%d (terrain %d, case %d) in %d strips: "
						  "equals the in-memory one (max relative difference %g)",
						  routing_label(routing), W, H, terrain, c, nb, acc_diff);
					if (routing != TG_ROUTE_D8 && split == 3)
					{
						/* the water between strips is carried the same way on any number of threads */
						double	   *acc3 = malloc(sizeof(double) * n + 1);

						check(route_in_strips(surf, false, &p, units, weighted ? weight : NULL, rows, nb, 3,
											  TG_BACKEND_CPU, d8, frac, acc3, NULL, &flats) &&
							  memcmp(acc, acc3, sizeof(double) * n) == 0,
							  "%s accumulation in strips %dx%d (terrain %d): 3 threads give 1 thread's",
							  routing_label(routing), W, H, terrain);
						free(acc3);
					}
				}
			}
			free(z);
			free(filled);
			free(surf);
			free(ref_acc);
			free(acc);
			free(ref_d8);
			free(d8);
			free(ref_frac);
			free(frac);
			free(rows);
			free(weight);
		}
	check(crossing > 1000, "routing in strips: the tests had flats across strips (%zu cells)", crossing);
}

/*
 * Adversarial DEMs for the seams (W x H, ND = nodata): 0, a snake of a
 * plateau crossing every strip boundary back and forth, walls around it,
 * draining only at its far end on the grid's edge, so that its distances
 * cross each seam many times; 1, a bowl whose pit spans every strip (after
 * the fill one lake over the whole grid's middle); 2, a plain of one
 * elevation over every strip with a hill in it and islands of nodata (each
 * a drain of its own); 3, left unfilled, a floor walled in on every side
 * that crosses every strip and drains nowhere (its mask stays 0).
 */
static double *
seam_terrain(int kind, int W, int H)
{
	double	   *z = malloc(sizeof(double) * (size_t) W * H);

	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++)
		{
			double	   *c = &z[(size_t) y * W + x];

			if (kind == 0)
			{
				const int	lane = x / 6,
							inside = x % 6 >= 1 && x % 6 <= 4;
				/* lanes joined alternately at the top and at the bottom */
				const bool	join = (x % 6 == 5 || x % 6 == 0) &&
					((lane % 2 == 0 && y >= H - 3 && y <= H - 2 && x % 6 == 5) ||
					 (lane % 2 == 1 && y >= 1 && y <= 2 && x % 6 == 5) ||
					 (lane % 2 == 1 && y >= H - 3 && y <= H - 2 && x % 6 == 0 && lane > 0 && (lane - 1) % 2 == 0) ||
					 (lane % 2 == 0 && lane > 0 && y >= 1 && y <= 2 && x % 6 == 0));

				*c = (inside && y >= 1 && y <= H - 2) || join ? 10 : 20 + (x + y) % 3;
				if (x >= 1 && x <= 4 && y == 0)
					*c = 10;	/* the snake's only way out: the first lane's top, on the edge */
			}
			else if (kind == 1)
			{
				const double dx = x - W / 2.0,
							dy = (y - H / 2.0) * W / H;

				*c = 50 + sqrt(dx * dx + dy * dy) - (x == 0 && y == H / 3 ? 40 : 0);
			}
			else if (kind == 2)
				*c = x % 9 == 4 && y % 11 == 5 ? ND : abs(x - W / 2) < 3 && abs(y - H / 2) < 5 ? 9 : 7;
			else
				*c = x < 2 || x >= W - 2 || y < 2 || y >= H - 2 ? 30 : 5;
		}
	return z;
}

/*
 * The seams' adversaries routed in strips of every split on 1, 2 and 7
 * threads, against one grid, every joined flat searched on its own and every
 * one scanned and walked level by level (tg_seam_flat_bulk_cells).
 */
static void
test_seams_adversarial(void)
{
	static const int shapes[][2] = {{31, 47}, {64, 90}};
	static const int thread_counts[] = {1, 2, 7};
	const size_t usual_bulk = tg_seam_flat_bulk_cells;

	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
		for (int kind = 0; kind < 4; kind++)
		{
			const int	W = shapes[s][0],
						H = shapes[s][1];
			const size_t n = (size_t) W * H;
			double	   *z = seam_terrain(kind, W, H),
					   *filled = malloc(sizeof(double) * n),
					   *surf = malloc(sizeof(double) * n),
					   *ref_acc = malloc(sizeof(double) * n),
					   *acc = malloc(sizeof(double) * n),
					   *got = malloc(sizeof(double) * n);
			uint8_t    *ref_d8 = malloc(n),
					   *d8 = malloc(n);
			float	   *ref_frac = malloc(sizeof(float) * 8 * n),
					   *frac = malloc(sizeof(float) * 8 * n);
			int		   *rows = malloc(sizeof(int) * H);
			size_t		flats = 0;

			/* the routing surface: filled, or the walled floor as it is */
			const double *routed = kind == 3 ? z : filled;

			fill64(TG_BACKEND_CPU, z, W, H, TG_FILL_PRIORITY_FLOOD, 0, filled);
			for (size_t i = 0; i < n; i++)
				surf[i] = routed[i] == ND ? NAN : routed[i];
			for (int split = 0; split < 4; split++)
			{
				const int	nb = split_rows(H, split, rows);
				bool		same = fill_in_strips(z, W, H, rows, nb, TG_BACKEND_CPU, got);

				for (size_t i = 0; same && i < n; i++)
					same = filled[i] == ND ? isnan(got[i]) : got[i] == filled[i];
				check(same, "seams %dx%d (kind %d) in %d strips: the fill equals one grid's", W, H, kind, nb);
				for (int m = 0; m < 2; m++)
				{
					const tg_routing routing = m == 0 ? TG_ROUTE_D8 : TG_ROUTE_MFD_MD;
					tg_flow_params p = flow_params(routing, W, H, 1, false);
					tg_band		b = band_f64(routed, W, H);
					tg_ctx		ctx = cpu_ctx(NULL);
					tg_error	err;

					tg_error_clear(&err);
					check(tg_flow_direction(&ctx, &b, &p, m == 0 ? ref_d8 : NULL, m == 0 ? NULL : ref_frac, &err) ==
						  TG_OK && tg_flow_accumulation(&ctx, &b, NULL, &p, TG_ACC_INDEGREE, TG_UNITS_CELLS, ref_acc,
														&err) == TG_OK,
						  "seams %dx%d (kind %d): one grid's routing", W, H, kind);
					for (int run = 0; run < 6; run++)
					{
						const int	threads = thread_counts[run % 3];
						bool		ran;
						size_t		differ = 0;
						double		worst = 0;

						tg_seam_flat_bulk_cells = run < 3 ? SIZE_MAX : 1;
						ran = route_in_strips(surf, false, &p, TG_UNITS_CELLS, NULL, rows, nb, threads,
											  TG_BACKEND_CPU, d8, frac, acc, NULL, &flats);
						tg_seam_flat_bulk_cells = usual_bulk;

						for (size_t i = 0; ran && i < n; i++)
						{
							differ += m == 0 ? d8[i] != ref_d8[i] : 0;
							for (int k = 0; m == 1 && k < 8; k++)
								differ += !(frac[(size_t) k * n + i] == ref_frac[(size_t) k * n + i] ||
											(isnan(frac[(size_t) k * n + i]) && isnan(ref_frac[(size_t) k * n + i])));
							if (isnan(acc[i]) != isnan(ref_acc[i]))
								worst = INFINITY;
							else if (!isnan(acc[i]))
								worst = fmax(worst, fabs(acc[i] - ref_acc[i]) / fmax(fabs(ref_acc[i]), 1e-300));
						}
						check(ran && differ == 0 && (m == 0 ? worst == 0 : worst < 1e-12),
							  "seams %dx%d (kind %d) %s in %d strips on %d threads, flats %s: directions and "
							  "accumulation equal one grid's (%zu directions differ, accumulation %g apart; %zu cells "
							  "of crossing flats)", W, H, kind, routing_label(routing), nb, threads,
							  run < 3 ? "searched" : "scanned and walked", differ, worst, flats);
					}
				}
			}
			if (kind == 0 || kind == 3)
				check(flats > (size_t) H, "seams %dx%d (kind %d): the flat crosses the strips (%zu crossing cells)",
					  W, H, kind, flats);
			free(z);
			free(filled);
			free(surf);
			free(ref_acc);
			free(acc);
			free(got);
			free(ref_d8);
			free(d8);
			free(ref_frac);
			free(frac);
			free(rows);
		}
}

/* Do two runs in strips give the same routing, receivers and accumulation, bit for bit? */
static size_t
strips_differ(size_t n, const uint8_t *d8_a, const uint8_t *d8_b, const uint16_t *recv_a, const uint16_t *recv_b,
			  const double *acc_a, const double *acc_b)
{
	size_t		differ = 0;

	for (size_t i = 0; i < n; i++)
		differ += d8_a[i] != d8_b[i] || recv_a[i] != recv_b[i] || memcmp(&acc_a[i], &acc_b[i], sizeof(double)) != 0;
	return differ;
}

/*
 * Each strip's D8 routing and accumulation on the GPU (as a part's link):
 * directions, accumulations and receivers equal the CPU strips' bit for
 * bit, in cells, in areas of a geographic grid and with fractional weights,
 * on the seams' adversarial DEMs and terraces whose flats cross every
 * boundary, the surface handed over as floats (routed in floats on the
 * device) or doubles.  The surfaces are rounded to floats first, so that
 * both forms hold them: the CPU's strips too give the same bits from
 * either.  Multiple flow with the GPU asked for runs each strip on the
 * threads (the device's step routes D8 alone): the same bits again.
 */
static void
test_route_strips_gpu(void)
{
	const int	W = 150,
				H = 120;
	const size_t n = (size_t) W * H;
	tg_device_info info;
	double	   *surf = malloc(sizeof(double) * n),
			   *weight = malloc(sizeof(double) * n),
			   *acc_cpu = malloc(sizeof(double) * n),
			   *acc_other = malloc(sizeof(double) * n);
	uint8_t    *d8_cpu = malloc(n),
			   *d8_other = malloc(n);
	uint16_t   *recv_cpu = malloc(sizeof(uint16_t) * n),
			   *recv_other = malloc(sizeof(uint16_t) * n);
	float	   *frac = malloc(sizeof(float) * 8 * n);
	int			rows[120];

	tg_device_query(0, &info);
	for (size_t i = 0; i < n; i++)
		weight[i] = 0.25 + rng_uniform();
	/* the seams' adversaries, terraces, then the plain again in multiple flow */
	for (int t = 0; t < 6; t++)
	{
		double	   *z = t < 4 ? seam_terrain(t, W, H) : t == 4 ? terraced_terrain(W, H) : seam_terrain(2, W, H);
		const bool	fill = t != 3;
		tg_flow_params p = flow_params(t == 5 ? TG_ROUTE_MFD_MD : TG_ROUTE_D8, W, H, 1, fill);

		fill64(TG_BACKEND_CPU, z, W, H, TG_FILL_PRIORITY_FLOOD, 0, surf);
		for (size_t i = 0; i < n; i++)
		{
			const double v = fill ? surf[i] : z[i];

			/* rounding keeps the order of heights: a filled surface stays filled */
			surf[i] = v == ND ? NAN : (float) v;
		}
		for (int c = 0; c < 3; c++)
		{
			const int	nb = split_rows(H, c == 0 ? 2 : c == 1 ? 3 : 0, rows);	/* 3 rows, 1-9, 1 */
			const tg_accum_units units = c == 1 ? TG_UNITS_AREA : TG_UNITS_CELLS;
			const double *w = c == 2 ? weight : NULL;
			const bool	single = c != 1;
			size_t		flats = 0,
						differ;
			bool		ran;

			p.geom.geographic = c == 1;
			p.geom.lat_top = 47.25;
			p.geom.lat_step = -0.01;
			p.geom.lon_step = 0.01;
			ran = route_in_strips(surf, false, &p, units, w, rows, nb, 2, TG_BACKEND_CPU, d8_cpu, frac, acc_cpu,
								  recv_cpu, &flats) &&
				route_in_strips(surf, true, &p, units, w, rows, nb, 2, TG_BACKEND_CPU, d8_other, frac, acc_other,
								recv_other, &flats);
			differ = ran ? strips_differ(n, d8_cpu, d8_other, recv_cpu, recv_other, acc_cpu, acc_other) : 0;
			check(ran && differ == 0, "strips %dx%d (terrain %d, case %d, %s) in %d strips: the surface as floats "
				  "gives the doubles' routing, receivers and accumulation bit for bit (%zu cells differ)", W, H, t, c,
				  t == 5 ? "mfd-md" : "d8", nb, differ);
			if (!info.available)
				continue;
			ran = route_in_strips(surf, single, &p, units, w, rows, nb, 2, TG_BACKEND_GPU, d8_other, frac,
								  acc_other, recv_other, &flats);
			differ = ran ? strips_differ(n, d8_cpu, d8_other, recv_cpu, recv_other, acc_cpu, acc_other) : 0;
			check(ran && differ == 0, "cuda strips %dx%d (terrain %d, case %d, %s, %s) in %d strips: with the GPU, "
				  "routing, receivers and accumulation equal the CPU's bit for bit (%zu cells differ, %zu crossing "
				  "flat cells)", W, H, t, c, t == 5 ? "mfd-md" : "d8", single ? "floats" : "doubles", nb, differ,
				  flats);
			if (t != 4)
				continue;
			/* the crossing flats' masks sent to the device a few at a time */
			tg_given_masks_batch = 7;
			ran = route_in_strips(surf, single, &p, units, w, rows, nb, 2, TG_BACKEND_GPU, d8_other, frac,
								  acc_other, recv_other, &flats);
			tg_given_masks_batch = (size_t) 1 << 20;
			differ = ran ? strips_differ(n, d8_cpu, d8_other, recv_cpu, recv_other, acc_cpu, acc_other) : 0;
			check(ran && differ == 0 && flats > 7, "cuda strips %dx%d (terraces, case %d) in %d strips, the masks of "
				  "%zu crossing flat cells sent 7 at a time: the CPU's D8 routing and accumulation bit for bit "
				  "(%zu cells differ)", W, H, c, nb, flats, differ);
		}
		free(z);
	}
	if (!info.available)
		printf("skipped: CUDA strips (no GPU)\n");
	free(surf);
	free(weight);
	free(acc_cpu);
	free(acc_other);
	free(d8_cpu);
	free(d8_other);
	free(recv_cpu);
	free(recv_other);
	free(frac);
}

/*
 * The paths out of a part's own rows on the device (pointer jumping) on a
 * snake: lanes on even rows joined by a gap at alternate ends of the walls
 * between them, descending all the way, so that every path from the first
 * own row runs through every lane (thousands of cells: a dozen rounds)
 * and leaves by the last lane's gap.  The exits are known; the edge rows'
 * directions and accumulation equal the full planes of the same call, and
 * the threads' walk (tg_edge_paths_of) gives the same paths.
 */
static void
test_edge_paths_gpu(void)
{
	const int	W = 150,
				H = 120,
				own0 = 2,
				own_rows = H - 4;
	const size_t n = (size_t) W * H,
				own = (size_t) W * own_rows;
	tg_device_info info;
	tg_ctx		ctx = cpu_ctx(NULL);
	tg_error	err;
	double	   *z = malloc(sizeof(double) * n),
			   *row_w = malloc(sizeof(double) * own_rows),
			   *acc = malloc(sizeof(double) * own);
	uint8_t    *d8 = malloc(own);
	tg_edge_paths dev = {0},
				host = {0};
	const tg_band zb = band_f64(z, W, H);
	tg_flow_params p = flow_params(TG_ROUTE_D8, W, H, 1, false);
	const tg_flat_masks none = {0};
	const tg_part_weights w = {NULL, row_w, NULL, 0, 0};
	tg_part_d8_out out = {d8, acc, NULL, {0}};
	size_t		wrong = 0,
				differ = 0;
	bool		ran;

	tg_device_query(0, &info);
	if (!info.available)
	{
		printf("skipped: CUDA paths out of a part (no GPU)\n");
		goto done;
	}
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++)
		{
			const int	lane = y / 2;
			const bool	rightwards = lane % 2 == 0;
			const double start = (double) lane * (W + 1);

			if (y % 2 == 0)
				z[(size_t) y * W + x] = -(start + (rightwards ? x : W - 1 - x));
			else
				z[(size_t) y * W + x] = x == (rightwards ? W - 1 : 0) ? -(start + W) : 1e6;
		}
	for (int y = 0; y < own_rows; y++)
		row_w[y] = 1;
	tg_error_clear(&err);
	ctx.backend = TG_BACKEND_GPU;
	ran = tg_edge_paths_alloc(&ctx, W, &dev) && tg_edge_paths_alloc(&ctx, W, &host);
	out.edges = dev;
	ran = ran && tg_cuda_part_d8(&ctx, &zb, own0, own_rows, &p, &none, &w, &out, &err) == TG_OK;
	if (ran)
	{
		const tg_route strip = {W, own_rows, TG_ROUTE_D8, NULL, d8, NULL};

		ran = tg_edge_paths_of(&ctx, &strip, acc, &host, &err) == TG_OK;
	}
	for (int e = 0; ran && e < 2 * W; e++)
	{
		const int	x = e % W,
					y = e < W ? 0 : own_rows - 1;
		const size_t i = (size_t) y * W + x;
		/* the last own row (a wall) drains into the halo below; the first row down the snake to its gap */
		const uint32_t expect = e < W ? (uint32_t) ((own_rows - 1) * W + W - 1) : (uint32_t) i;

		wrong += dev.exit[e] != expect || dev.d8[e] != d8[i] || memcmp(&dev.acc[e], &acc[i], sizeof(double)) != 0;
		differ += dev.exit[e] != host.exit[e] || dev.d8[e] != host.d8[e] ||
			memcmp(&dev.acc[e], &host.acc[e], sizeof(double)) != 0;
	}
	if (!ran)
		printf("paths out on the device: %s\n", err.message);
	/* every own cell but the last row's walls (which drain into the halo) reaches the last gap */
	check(ran && wrong == 0 && differ == 0 && dev.acc[2 * W - 1] == (double) (own - (W - 1)),
		  "cuda paths out of %d own rows of a %dx%d snake: every first-row path leaves by the last lane's gap "
		  "(which gathers %g cells), the edges' directions and accumulation are the planes', the threads' walk "
		  "agrees (%zu wrong, %zu differ)", own_rows, W, H, ran ? dev.acc[2 * W - 1] : 0.0, wrong, differ);
done:
	tg_edge_paths_free(&ctx, &dev);
	tg_edge_paths_free(&ctx, &host);
	free(z);
	free(row_w);
	free(acc);
	free(d8);
}

/*
 * The device's tests in strips: the seams' adversaries (a flat snaking
 * through every strip, one lake over all of them, nodata islands in a
 * plain, a walled floor), terraces with nodata, random plains with nodata,
 * random hills, noise; on a grid of 150 x 120, grids of one to three columns and
 * one of 41 x 37.
 */
static const int gpu_shapes[][2] = {{150, 120}, {1, 9}, {2, 11}, {3, 14}, {41, 37}};

#define GPU_SHAPES (sizeof gpu_shapes / sizeof gpu_shapes[0])
#define GPU_TERRAINS 8

static double *
gpu_terrain(int t, int W, int H)
{
	double	   *z;

	if (t < 7)
		return t < 4 ? seam_terrain(t, W, H) : t == 4 ? terraced_terrain(W, H)
			: random_terrain(W, H, t == 5 ? 4 : 40, t == 5 ? 0.03 : 0.0);
	/* noise: pits everywhere, flats of equal values, nodata */
	z = malloc(sizeof(double) * ((size_t) W * H + 1));
	for (size_t i = 0; i < (size_t) W * H; i++)
		z[i] = rng_uniform() < 0.03 ? ND : floor(rng_uniform() * 12);
	return z;
}

/*
 * A device test case: shape s of gpu_shapes, terrain t, its heights z (ND
 * = nodata) and its routing surface surf (filled, but for the walled
 * floor; NaN = nodata).
 */
typedef void (*gpu_case_fn) (size_t s, int t, int W, int H, const double *z, const double *surf);

/* Every device test case through fn; false, running none, without a device. */
static bool
each_gpu_case(gpu_case_fn fn)
{
	tg_device_info info;

	tg_device_query(0, &info);
	for (size_t s = 0; info.available && s < GPU_SHAPES; s++)
		for (int t = 0; t < GPU_TERRAINS; t++)
		{
			const int	W = gpu_shapes[s][0],
						H = gpu_shapes[s][1];
			const size_t n = (size_t) W * H;
			double	   *z = gpu_terrain(t, W, H),
					   *surf = malloc(sizeof(double) * (n + 1));

			fill64(TG_BACKEND_CPU, z, W, H, TG_FILL_PRIORITY_FLOOD, 0, surf);
			for (size_t i = 0; i < n; i++)
			{
				const double v = t == 3 ? z[i] : surf[i];

				surf[i] = v == ND ? NAN : v;
			}
			fn(s, t, W, H, z, surf);
			free(z);
			free(surf);
		}
	return info.available;
}

/*
 * The flats across strips of z (NaN = nodata) in strips of `rows`, linked,
 * then walked once on `backend`: d (2 * n, both distances of every crossing
 * cell in order); false where a step failed.
 */
static bool
walk_seam_flats(const double *z, int W, int H, const int *rows, int nb, tg_backend backend, int32_t **d,
				size_t *n)
{
	tg_ctx		ctx = cpu_ctx(NULL);
	tg_error	err;
	tg_seam_flats f;
	bool		ok = true;

	tg_error_clear(&err);
	ctx.backend = backend;
	tg_seam_flats_init(&f, &ctx.allocator, W);
	for (int k = 0, r0 = 0; ok && k < nb; r0 += rows[k++])
	{
		const int	first = r0 >= 2 ? r0 - 2 : 0,
					end = r0 + rows[k] + 2 <= H ? r0 + rows[k] + 2 : H;
		tg_crossing_list list = {0};

		ok = tg_cpu_crossing_flats(&ctx, z + (size_t) first * W, W, end - first, r0 - first, rows[k], &list,
								   &err) == TG_OK &&
			tg_seam_flats_append(&ctx, &f, r0, &list, &err) == TG_OK &&
			(r0 == 0 || tg_seam_flats_seam(&ctx, &f, r0, &err) == TG_OK);
		tg_crossing_list_free(&ctx, &list);
	}
	ok = ok && tg_seam_flats_link(&ctx, &f, H, &err) == TG_OK && tg_seam_flats_walk(&ctx, &f, NULL, &err) == TG_OK;
	*n = f.n;
	*d = malloc(2 * (f.n + 1) * sizeof(int32_t));
	if (ok)
	{
		memcpy(*d, f.d[0], f.n * sizeof(int32_t));
		memcpy(*d + f.n, f.d[1], f.n * sizeof(int32_t));
	}
	else
		printf("flats across strips: %s\n", err.message);
	tg_seam_flats_free(&f);
	return ok;
}

/*
 * The first walk of the flats across strips on the device gives every
 * crossing cell the distances the threads give it, on every test terrain
 * (filled, but the walled floor) in strips of three rows, random heights,
 * one row and one strip.
 */
static void
seam_walk_case(size_t s, int t, int W, int H, const double *z, const double *surf)
{
	int		   *rows = malloc(sizeof(int) * H);
	size_t		cells = 0,
				differ = 0;

	for (int split = 0; split < 4; split++)
	{
		const int	nb = split_rows(H, (split + 2) % 4, rows);
		int32_t    *cpu = NULL,
				   *gpu = NULL;
		size_t		nc = 0,
					ng = 0;
		const bool	ran = walk_seam_flats(surf, W, H, rows, nb, TG_BACKEND_CPU, &cpu, &nc) &&
			walk_seam_flats(surf, W, H, rows, nb, TG_BACKEND_GPU, &gpu, &ng);

		differ += !ran || nc != ng || memcmp(cpu, gpu, 2 * nc * sizeof(int32_t)) != 0;
		cells += nc;
		free(cpu);
		free(gpu);
	}
	check(differ == 0 && (s > 0 || t > 4 || cells > 0),
		  "cuda walk of flats across strips %dx%d (terrain %d): 4 splits' distances equal the CPU's "
		  "(%zu differ, %zu cells)", W, H, t, differ, cells);
	free(rows);
}

static void
test_seam_walk_gpu(void)
{
	if (!each_gpu_case(seam_walk_case))
		printf("skipped: CUDA walk of flats across strips (no GPU)\n");
}

/*
 * The fill in strips with every strip scanned (and finished) on the device,
 * whose labels are not the CPU flood's: the filled surface is the in-memory
 * fill's, bit for bit, on every test terrain in strips of three rows,
 * random heights, one row and one strip.
 */
static void
fill_scan_case(size_t s, int t, int W, int H, const double *z, const double *surf)
{
	const size_t n = (size_t) W * H;
	double	   *ref = malloc(sizeof(double) * n),
			   *got = malloc(sizeof(double) * n);
	int		   *rows = malloc(sizeof(int) * H);
	size_t		differ = 0,
				raised = 0;
	int			runs = 0;

	fill64(TG_BACKEND_CPU, z, W, H, TG_FILL_PRIORITY_FLOOD, 0, ref);
	for (size_t i = 0; i < n; i++)
		raised += ref[i] != z[i];
	for (int split = 0; split < 4; split++)
	{
		const int	nb = split_rows(H, (split + 2) % 4, rows);

		if (!fill_in_strips(z, W, H, rows, nb, TG_BACKEND_GPU, got))
		{
			differ += n;
			continue;
		}
		runs++;
		for (size_t i = 0; i < n; i++)
		{
			const double r = ref[i] == ND ? NAN : ref[i];

			differ += !((isnan(r) && isnan(got[i])) || r == got[i]);
		}
	}
	/* the bowl, the walled floor and the noise hold water */
	check(differ == 0 && runs == 4 && (s > 0 || (t != 1 && t != 3 && t != 7) || raised > 0),
		  "cuda fill scan %dx%d (terrain %d): 4 splits filled as in memory (%zu cells differ, %zu raised)",
		  W, H, t, differ, raised);
	free(ref);
	free(got);
	free(rows);
}

static void
test_fill_strips_gpu(void)
{
	if (!each_gpu_case(fill_scan_case))
		printf("skipped: CUDA fill scan (no GPU)\n");
}

/*
 * A strip's crossing flats listed on the device equal the CPU's list (cells
 * in raster order, seeds, flat numbers) for every strip of every split: the
 * seams' adversaries filled, terraces with nodata, random plains, and grids
 * of one to three columns; the first and last strips have no rows beyond on
 * one side, one-row strips both edges in one row.  One split hands the
 * device the surface rounded to floats, the CPU the same values as doubles.
 */
static bool
same_crossing(const tg_crossing_list *a, const tg_crossing_list *b)
{
	return a->n == b->n && a->nflats == b->nflats && memcmp(a->cell, b->cell, a->n * sizeof(uint32_t)) == 0 &&
		memcmp(a->seed, b->seed, a->n) == 0 && memcmp(a->flat, b->flat, a->n * sizeof(int32_t)) == 0;
}

static void
crossing_flats_case(size_t s, int t, int W, int H, const double *z, const double *surf)
{
	int			rows[150];
	const size_t n = (size_t) W * H;
	size_t		cells = 0,
				differ = 0,
				windows = 0;
	float	   *surf32 = malloc(sizeof(float) * n + 1);
	double	   *rounded = malloc(sizeof(double) * n + 1);

	for (size_t i = 0; i < n; i++)
		rounded[i] = surf32[i] = (float) surf[i];
	for (int c = 0; c < 3; c++)
	{
		const int	nb = split_rows(H, c == 0 ? 2 : c == 1 ? 3 : 0, rows);
		const bool	single = c == 1;
		const double *cpu_z = single ? rounded : surf;

		for (int k = 0, r0 = 0; k < nb; r0 += rows[k++])
		{
			const int	first = r0 >= 2 ? r0 - 2 : 0,
						end = r0 + rows[k] + 2 <= H ? r0 + rows[k] + 2 : H;
			tg_ctx		ctx = cpu_ctx(NULL);
			tg_crossing_list cpu = {0},
						gpu = {0};
			tg_error	err;
			bool		ran;

			tg_band		zb = band_f64(surf + (size_t) first * W, W, end - first);

			if (single)
			{
				zb.pixtype = TG_PT_32BF;
				zb.data = surf32 + (size_t) first * W;
			}
			tg_error_clear(&err);
			ran = tg_cpu_crossing_flats(&ctx, cpu_z + (size_t) first * W, W, end - first, r0 - first, rows[k],
										&cpu, &err) == TG_OK;
			ran = ran && tg_cuda_crossing_flats(&ctx, &zb, r0 - first, rows[k], &gpu, &err) == TG_OK;
			if (!ran)
				printf("crossing flats: %s\n", err.message);
			differ += !ran || !same_crossing(&cpu, &gpu);
			cells += ran ? cpu.n : 0;
			windows++;
			tg_crossing_list_free(&ctx, &cpu);
			tg_crossing_list_free(&ctx, &gpu);
		}
	}
	check(differ == 0 && (s > 0 || t > 4 || cells > 0),
		  "cuda crossing flats %dx%d (terrain %d): %zu strips' lists equal the CPU's, from doubles and floats "
		  "(%zu differ, %zu cells)", W, H, t, windows, differ, cells);
	free(surf32);
	free(rounded);
}

static void
test_crossing_flats_gpu(void)
{
	if (!each_gpu_case(crossing_flats_case))
		printf("skipped: CUDA crossing flats (no GPU)\n");
}

/*
 * The label graph's two kinds: looked up (a pair once, at its lowest
 * height) and listed (every pair as added); the solve takes the lower of
 * a repeated pair either way, and over both kinds at once.
 */
static void
test_label_graphs(void)
{
	/* 0 is where water leaves; 1 spills to 0 at 5; 2 to 1 at 8, or at 6; 3 to 2 at 4, or to 0 at 9 */
	static const uint32_t a[] = {0, 1, 2, 2, 3};
	static const uint32_t b[] = {1, 2, 1, 3, 0};
	static const double h[] = {5, 8, 6, 4, 9};
	static const double want[] = {-INFINITY, 5, 6, 6};
	tg_ctx		ctx = cpu_ctx(NULL);
	tg_error	err;
	tg_label_graph *looked = NULL,
			   *listed = NULL,
			   *first = NULL,
			   *rest = NULL;
	bool		ok;

	tg_error_clear(&err);
	ok = tg_label_graph_create(&ctx, &looked, &err) == TG_OK && tg_label_graph_create_list(&ctx, &listed, &err) == TG_OK &&
		tg_label_graph_create_list(&ctx, &first, &err) == TG_OK && tg_label_graph_create(&ctx, &rest, &err) == TG_OK;
	for (int e = 0; ok && e < 5; e++)
		ok = tg_label_graph_add(&ctx, looked, a[e], b[e], h[e], &err) == TG_OK &&
			tg_label_graph_add(&ctx, listed, a[e], b[e], h[e], &err) == TG_OK &&
			tg_label_graph_add(&ctx, e < 2 ? first : rest, a[e], b[e], h[e], &err) == TG_OK;
	check(ok, "label graphs built");
	check(ok && tg_label_graph_edges(looked) == 4 && tg_label_graph_edges(listed) == 5,
		  "a looked-up graph keeps the pair 1-2 once, a listed one twice");
	for (int kind = 0; ok && kind < 3; kind++)
	{
		tg_label_graph *const both[2] = {first, rest};
		tg_label_graph *const *graphs = kind == 0 ? &looked : kind == 1 ? &listed : both;
		double	   *level = NULL;
		bool		same;

		ok = tg_label_graph_solve(&ctx, graphs, kind == 2 ? 2 : 1, 4, &level, &err) == TG_OK;
		same = ok;
		for (int l = 0; same && l < 4; l++)
			same = level[l] == want[l];
		check(same, "the %s graph solves to the lowest spill levels", kind == 0 ? "looked-up" : kind == 1 ? "listed" : "split");
		tg_free(&ctx, level);
	}
	tg_label_graph_free(&ctx, looked);
	tg_label_graph_free(&ctx, listed);
	tg_label_graph_free(&ctx, first);
	tg_label_graph_free(&ctx, rest);
}

void
test_strips(void)
{
	test_label_graphs();
	test_fill_strips();
	test_route_strips();
	test_seams_adversarial();
	test_route_strips_gpu();
	test_edge_paths_gpu();
	test_fill_strips_gpu();
	test_crossing_flats_gpu();
	test_seam_walk_gpu();
}
