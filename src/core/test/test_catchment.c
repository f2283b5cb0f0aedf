/*
 * test_catchment.c — RUSLE soil loss and D8 travel time.
 *
 *   a V-shaped catchment whose travel times are known in closed form (with
 *   and without the min_slope floor, with and without an outlet);
 *   random terrain against independent references: LS and soil loss from
 *   the public fill/accumulation results and a Horn slope written out here,
 *   travel times and watersheds by walking every cell's D8 path;
 *   pour point snapping on a hand-worked valley (the snapped cell, its ties,
 *   geographic distances, a point with no valid cell in reach, the snapped
 *   watershed);
 *   bad input; CUDA against the CPU where a GPU is usable.
 */
#include "test.h"

#define ND (-9999.0)

static tg_ctx
ctx_for(tg_backend backend)
{
	tg_ctx		ctx;

	tg_ctx_init(&ctx);
	ctx.backend = backend;
	return ctx;
}

static bool
close_rel(double a, double b, double tol)
{
	if (isnan(a) || isnan(b))
		return isnan(a) && isnan(b);
	return fabs(a - b) <= tol * fmax(fabs(a), fabs(b)) + 1e-300;
}

static tg_travel_params
travel_params(int W, int H, double cell, int ocol, int orow)
{
	tg_travel_params tp;

	memset(&tp, 0, sizeof tp);
	tp.flow = flow_params(TG_ROUTE_D8, W, H, cell, true);
	tp.has_outlet = ocol >= 0;
	tp.outlet_col = ocol;
	tp.outlet_row = orow;
	tp.roughness.value = 0.05;
	tp.velocity.value = 2.0;
	tp.b = 0.5;
	tp.min_slope = 0.001;
	return tp;
}

/*
 * Hillsides falling at gx towards a channel in column c that falls at gy
 * towards the bottom edge: cells flow across to the channel, then down it to
 * its foot, the only cell without a receiver:
 *     T(x, y) = |x - c| n d / (K gx^b) + (H - 1 - y) n d / (K max(gy, min_slope)^b)
 */
static void
test_v_catchment(void)
{
	const int	W = 21,
				H = 30,
				c = 10;
	const double d = 5.0;
	const double gys[2] = {0.02, 0.0004};	/* the second is below min_slope */
	double	   *z = malloc(sizeof(double) * W * H);
	float	   *t = malloc(sizeof(float) * W * H);
	uint8_t    *shed = malloc((size_t) W * H);

	for (int g = 0; g < 2; g++)
		for (int with_outlet = 0; with_outlet < 2; with_outlet++)
		{
			const double gx = 0.3,
						gy = gys[g];
			tg_band		b = test_band(TG_PT_64BF, z, W, H, true, ND);
			tg_travel_params tp = travel_params(W, H, d, with_outlet ? c : -1, H - 1);
			tg_ctx		ctx = ctx_for(TG_BACKEND_CPU);
			tg_error	err;
			double		n = tp.roughness.value,
						K = tp.velocity.value;
			double		t_across = n * d / (K * sqrt(gx));
			double		t_down = n * d / (K * sqrt(fmax(gy, tp.min_slope)));
			bool		ok = true,
						shed_ok = true;
			tg_status	st;

			for (int y = 0; y < H; y++)
				for (int x = 0; x < W; x++)
					z[y * W + x] = 100 + gx * d * abs(x - c) + gy * d * (H - 1 - y);
			tg_error_clear(&err);
			st = tg_travel_time(&ctx, &b, &tp, t, with_outlet ? shed : NULL, &err);
			check(st == TG_OK, "V catchment: %s", err.message);
			for (int y = 0; y < H; y++)
				for (int x = 0; x < W; x++)
				{
					/* edge cells drain inwards too; only the channel's foot has no receiver */
					const bool	in = true;
					double		expect = abs(x - c) * t_across + (H - 1 - y) * t_down;
					if (!close_rel(t[y * W + x], expect, 1e-6))
					{
						if (ok)
							printf("  V catchment (gy %g, outlet %d) at (%d, %d): %.9g, expected %.9g\n",
								   gy, with_outlet, x, y, t[y * W + x], expect);
						ok = false;
					}
					if (with_outlet && shed[y * W + x] != (in ? 1 : 0))
						shed_ok = false;
				}
			check(ok, "V catchment travel times (gy %g, outlet %d) match the closed form", gy, with_outlet);
			if (with_outlet)
				check(shed_ok, "V catchment watershed is the whole raster (gy %g)", gy);
		}
	free(z);
	free(t);
	free(shed);
}

/* A random rough surface on a tilted plane (pits and flats included). */
static double *
rough_terrain(int W, int H, double holes)
{
	double	   *z = malloc(sizeof(double) * (W * H > 0 ? W * H : 1));

	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++)
			z[y * W + x] = rng_uniform() < holes ? ND :
				floor(0.3 * x + 0.2 * y + 4 * rng_uniform());
	return z;
}

/* Walk each cell's D8 path (codes of tg_flow_direction) and sum its steps. */
static void
travel_reference(const double *w, const uint8_t *codes, int W, int H, double cell,
				 const tg_travel_params *tp, const double *rough, double *ref, uint8_t *shed)
{
	const size_t outlet = tp->has_outlet ? (size_t) tp->outlet_row * W + tp->outlet_col : (size_t) -1;

	for (int y0 = 0; y0 < H; y0++)
		for (int x0 = 0; x0 < W; x0++)
		{
			size_t		i = (size_t) y0 * W + x0;
			double		sum = 0;
			int			x = x0,
						y = y0,
						steps = 0;

			if (codes[i] == 255)
			{
				ref[i] = NAN;
				shed[i] = 255;
				continue;
			}
			while (codes[(size_t) y * W + x] != 0 && (size_t) y * W + x != outlet && steps <= W * H)
			{
				size_t		c = (size_t) y * W + x;
				int			k = __builtin_ctz(codes[c]);
				int			nx = x + tg_nbr_dx(k),
							ny = y + tg_nbr_dy(k);
				double		len = (k & 1) ? cell * sqrt(2.0) : cell;
				double		s = (w[c] - w[(size_t) ny * W + nx]) / len;

				if (!(s >= tp->min_slope))
					s = tp->min_slope;
				sum += rough[c] * len / (tp->velocity.value * pow(s, tp->b));
				x = nx;
				y = ny;
				steps++;
			}
			shed[i] = (size_t) y * W + x == outlet ? 1 : 0;
			ref[i] = tp->has_outlet && !shed[i] ? NAN : sum;
		}
}

static void
test_travel_random(void)
{
	static const int shapes[][2] = {{1, 1}, {37, 1}, {33, 31}, {120, 90}};

	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
	{
		const int	W = shapes[s][0],
					H = shapes[s][1];
		const size_t n = (size_t) W * H;
		const double cell = 10;
		double	   *z = rough_terrain(W, H, 0.03);
		double	   *w = malloc(sizeof(double) * n);
		double	   *rough = malloc(sizeof(double) * n);
		double	   *ref = malloc(sizeof(double) * n);
		float	   *t = malloc(sizeof(float) * n);
		uint8_t    *codes = malloc(n);
		uint8_t    *shed = malloc(n);
		uint8_t    *ref_shed = malloc(n);
		tg_band		b = test_band(TG_PT_64BF, z, W, H, true, ND);
		tg_band		rb = test_band(TG_PT_64BF, rough, W, H, false, 0);
		tg_ctx		ctx = ctx_for(TG_BACKEND_CPU);
		tg_fill_params fp = {TG_FILL_PRIORITY_FLOOD, 0, TG_PT_64BF};
		tg_error	err;
		int			ocol = -1,
					orow = -1;

		/* the outlet: the valid cell with the largest D8 accumulation */
		{
			double	   *acc = malloc(sizeof(double) * n);
			tg_flow_params fpar = flow_params(TG_ROUTE_D8, W, H, cell, true);
			double		best = -1;

			tg_error_clear(&err);
			tg_flow_accumulation(&ctx, &b, NULL, &fpar, TG_ACC_AUTO, TG_UNITS_CELLS, acc, &err);
			for (size_t i = 0; i < n; i++)
				if (!isnan(acc[i]) && acc[i] > best)
				{
					best = acc[i];
					ocol = (int) (i % W);
					orow = (int) (i / W);
				}
			free(acc);
		}
		for (size_t i = 0; i < n; i++)
			rough[i] = 0.02 + 0.01 * (double) (i % 7);
		tg_error_clear(&err);
		check(tg_fill(&ctx, &b, &fp, ND, w, &err) == TG_OK, "travel reference fill: %s", err.message);
		for (size_t i = 0; i < n; i++)
			if (w[i] == ND)
				w[i] = NAN;
		{
			tg_flow_params fpar = flow_params(TG_ROUTE_D8, W, H, cell, true);

			check(tg_flow_direction(&ctx, &b, &fpar, codes, NULL, &err) == TG_OK,
				  "travel reference directions: %s", err.message);
		}
		for (int with_outlet = 0; with_outlet < 2; with_outlet++)
		{
			tg_travel_params tp = travel_params(W, H, cell, with_outlet ? ocol : -1, orow);
			bool		ok = true,
						shed_ok = true;
			size_t		members = 0;

			tp.roughness.band = &rb;
			travel_reference(w, codes, W, H, cell, &tp, rough, ref, ref_shed);
			tg_error_clear(&err);
			check(tg_travel_time(&ctx, &b, &tp, t, with_outlet ? shed : NULL, &err) == TG_OK,
				  "travel time %dx%d: %s", W, H, err.message);
			for (size_t i = 0; i < n; i++)
			{
				if (!close_rel(t[i], ref[i], 1e-6))
				{
					if (ok)
						printf("  travel %dx%d cell %zu: %.9g, path walk %.9g\n", W, H, i, t[i], ref[i]);
					ok = false;
				}
				if (with_outlet)
				{
					shed_ok &= shed[i] == ref_shed[i];
					members += shed[i] == 1;
				}
			}
			check(ok, "travel times %dx%d (outlet %d) equal the path walk", W, H, with_outlet);
			if (with_outlet)
				check(shed_ok && members >= 1, "watershed %dx%d equals the cells whose path reaches the outlet (%zu cells)",
					  W, H, members);
		}
		free(z);
		free(w);
		free(rough);
		free(ref);
		free(t);
		free(codes);
		free(shed);
		free(ref_shed);
	}
}

/* LS and soil loss from the public accumulation and fill, slope written out. */
static void
test_rusle_reference(void)
{
	const int	W = 64,
				H = 48;
	const size_t n = (size_t) W * H;
	const double cell = 30;
	static const tg_routing routings[] = {TG_ROUTE_D8, TG_ROUTE_MFD_MD};

	for (int r = 0; r < 2; r++)
		for (int fill = 0; fill < 2; fill++)
		{
			double	   *z = rough_terrain(W, H, 0.02);
			double	   *surface = malloc(sizeof(double) * n);
			double	   *acc = malloc(sizeof(double) * n);
			double	   *kf = malloc(sizeof(double) * n);
			float	   *ls = malloc(sizeof(float) * n);
			float	   *soil = malloc(sizeof(float) * n);
			tg_band		b = test_band(TG_PT_64BF, z, W, H, true, ND);
			tg_band		kb = test_band(TG_PT_64BF, kf, W, H, true, -1);
			tg_ctx		ctx = ctx_for(TG_BACKEND_CPU);
			tg_rusle_params rp;
			tg_error	err;
			bool		ls_ok = true,
						soil_ok = true;

			for (size_t i = 0; i < n; i++)
				kf[i] = i % 97 == 5 ? -1 : 0.02 + 0.001 * (double) (i % 13);
			rp = rusle_params(flow_params(routings[r], W, H, cell, fill));
			rp.k.band = &kb;
			rp.p.value = 0.9;
			tg_error_clear(&err);
			check(tg_flow_accumulation(&ctx, &b, NULL, &rp.flow, TG_ACC_AUTO, TG_UNITS_CELLS, acc, &err) == TG_OK,
				  "rusle reference accumulation: %s", err.message);
			if (fill)
			{
				tg_fill_params fp = {TG_FILL_PRIORITY_FLOOD, 0, TG_PT_64BF};

				tg_fill(&ctx, &b, &fp, ND, surface, &err);
			}
			else
				memcpy(surface, z, sizeof(double) * n);
			check(tg_rusle(&ctx, &b, &rp, ls, soil, &err) == TG_OK, "rusle: %s", err.message);
			for (int y = 0; y < H; y++)
				for (int x = 0; x < W; x++)
				{
					size_t		i = (size_t) y * W + x;
					double		e = surface[i],
								v[3][3],
								expect_ls = NAN,
								expect_soil;

					if (z[i] != ND)
					{
						double		dzdx,
									dzdy,
									beta;

						for (int dy = -1; dy <= 1; dy++)
							for (int dx = -1; dx <= 1; dx++)
							{
								int			nx = x + dx,
											ny = y + dy;
								bool		in = nx >= 0 && ny >= 0 && nx < W && ny < H &&
									z[(size_t) ny * W + nx] != ND;

								v[dy + 1][dx + 1] = in ? surface[(size_t) ny * W + nx] : e;
							}
						dzdx = ((v[0][2] + 2 * v[1][2] + v[2][2]) - (v[0][0] + 2 * v[1][0] + v[2][0])) / (8 * cell);
						dzdy = ((v[2][0] + 2 * v[2][1] + v[2][2]) - (v[0][0] + 2 * v[0][1] + v[0][2])) / (8 * cell);
						beta = atan(sqrt(dzdx * dzdx + dzdy * dzdy));

						expect_ls = 1.4 * pow(acc[i] * cell / 22.1, 0.4) * pow(sin(beta) / 0.0896, 1.3);
					}
					expect_soil = kf[i] < 0 ? NAN : expect_ls * 300 * kf[i] * 0.2 * 0.9;
					if (!close_rel(ls[i], expect_ls, 1e-5))
					{
						if (ls_ok)
							printf("  LS at (%d, %d): %.9g, expected %.9g\n", x, y, ls[i], expect_ls);
						ls_ok = false;
					}
					if (!close_rel(soil[i], expect_soil, 1e-5))
					{
						if (soil_ok)
							printf("  soil loss at (%d, %d): %.9g, expected %.9g\n", x, y, soil[i], expect_soil);
						soil_ok = false;
					}
				}
			check(ls_ok, "LS (%s, fill %d) equals the formula over the accumulation within 1e-5",
				  r ? "mfd-md" : "d8", fill);
			check(soil_ok, "soil loss (%s, fill %d) equals R K LS C P within 1e-5 (nodata K -> nodata)",
				  r ? "mfd-md" : "d8", fill);
			free(z);
			free(surface);
			free(acc);
			free(kf);
			free(ls);
			free(soil);
		}
}

/*
 * Pour point snapping on a 7 x 5 valley of 10 m cells: hillsides falling 1
 * per metre towards the channel in column 3, which falls 0.1 per metre to
 * the bottom edge.  Every hillside cell drains straight across, so the D8
 * accumulation (cells) is 1, 2, 3 going in from either edge, and 7 (y + 1)
 * on the channel, whose foot (3, 4) drains the whole grid.
 */
static void
valley(double *z)
{
	for (int y = 0; y < 5; y++)
		for (int x = 0; x < 7; x++)
			z[y * 7 + x] = 100 + 10.0 * abs(x - 3) + (4 - y);
}

static tg_status
snap_at(const tg_ctx *ctx, const tg_band *b, const tg_flow_params *flow, double x, double y,
		double distance, int *col, int *row, tg_error *err)
{
	tg_snap_params sp;

	memset(&sp, 0, sizeof sp);
	sp.flow = *flow;
	sp.x = x;
	sp.y = y;
	sp.distance = distance;
	*col = *row = -1;
	tg_error_clear(err);
	return tg_snap_pour_point(ctx, b, &sp, col, row, err);
}

static void
test_snap(void)
{
	double		z[35];
	double		acc[35];
	uint8_t		shed[35];
	tg_band		b = test_band(TG_PT_64BF, z, 7, 5, true, ND);
	tg_ctx		ctx = ctx_for(TG_BACKEND_CPU);
	tg_flow_params flow = flow_params(TG_ROUTE_D8, 7, 5, 10, true);
	tg_travel_params tp = travel_params(7, 5, 10, 0, 2);
	tg_error	err;
	int			col,
				row,
				cells = 0;
	bool		ok = true;
	double		dx,
				dy;

	valley(z);
	tg_error_clear(&err);
	check(tg_flow_accumulation(&ctx, &b, NULL, &flow, TG_ACC_AUTO, TG_UNITS_CELLS, acc, &err) == TG_OK,
		  "valley accumulation: %s", err.message);
	for (int y = 0; y < 5; y++)
		for (int x = 0; x < 7; x++)
			ok &= acc[y * 7 + x] == (x == 3 ? 7.0 * (y + 1) : 4.0 - abs(x - 3));
	check(ok, "the valley's accumulation is 1, 2, 3 across and 7 (y + 1) on the channel");

	/* from the centre of (0, 2): the channel cell (3, 2) lies exactly 30 m away */
	check(snap_at(&ctx, &b, &flow, 0.5, 2.5, 30, &col, &row, &err) == TG_OK && col == 3 && row == 2,
		  "30 m reaches the channel: (%d, %d) %s", col, row, err.message);
	/* 25 m: (2, 1), (2, 2) and (2, 3) hold 3 cells each; the nearest, (2, 2), wins */
	check(snap_at(&ctx, &b, &flow, 0.5, 2.5, 25, &col, &row, &err) == TG_OK && col == 2 && row == 2,
		  "a tie in accumulation goes to the nearest centre: (%d, %d)", col, row);
	/* halfway between the centres of (2, 2) and (2, 3), both 5 m away: row-major order */
	check(snap_at(&ctx, &b, &flow, 2.5, 3.0, 5, &col, &row, &err) == TG_OK && col == 2 && row == 2,
		  "a tie in accumulation and distance goes to the first cell in row-major order: (%d, %d)", col, row);
	/* 0 keeps the cell under the point; a distance shorter than any centre's too */
	check(snap_at(&ctx, &b, &flow, 0.9, 2.1, 0, &col, &row, &err) == TG_OK && col == 0 && row == 2,
		  "distance 0 keeps the cell under the point: (%d, %d)", col, row);
	check(snap_at(&ctx, &b, &flow, 0.9, 2.1, 1, &col, &row, &err) == TG_OK && col == 0 && row == 2,
		  "1 m reaches no other centre: (%d, %d)", col, row);
	/* a large distance finds the foot of the channel, which drains everything */
	check(snap_at(&ctx, &b, &flow, 0.5, 0.5, 1000, &col, &row, &err) == TG_OK && col == 3 && row == 4,
		  "1 km reaches the outlet of the valley: (%d, %d)", col, row);
	check(snap_at(&ctx, &b, &flow, 0.5, 2.5, -1, &col, &row, &err) == TG_EINVAL,
		  "a negative distance is refused: %s", err.message);
	check(snap_at(&ctx, &b, &flow, 0.5, 2.5, NAN, &col, &row, &err) == TG_EINVAL,
		  "a NaN distance is refused");
	check(snap_at(&ctx, &b, &flow, 0.5, 2.5, INFINITY, &col, &row, &err) == TG_EINVAL,
		  "an infinite distance is refused");
	check(snap_at(&ctx, &b, &flow, 7.5, 2.5, 10, &col, &row, &err) == TG_EINVAL,
		  "a point outside the raster is refused");

	/* geographic: 3 arc-second cells at 46 degrees N are about 64 m wide and 93 m high */
	flow.geom.geographic = true;
	flow.geom.lat_top = 46;
	flow.geom.lat_step = -1.0 / 1200;
	flow.geom.lon_step = 1.0 / 1200;
	tg_row_spacing(&flow.geom, 2, &dx, &dy);
	check(dx > 60 && dx < 68 && dy > 90 && dy < 95, "3\" cells at 46 N: %.2f x %.2f m", dx, dy);
	check(snap_at(&ctx, &b, &flow, 0.5, 2.5, 3 * dx, &col, &row, &err) == TG_OK && col == 3 && row == 2,
		  "geographic: 3 cell widths in metres reach the channel: (%d, %d)", col, row);
	check(snap_at(&ctx, &b, &flow, 0.5, 2.5, 3 * dx - 1, &col, &row, &err) == TG_OK && col == 2 && row == 2,
		  "geographic: a metre less does not: (%d, %d)", col, row);

	/* the watershed of a snapped outlet: the channel at row 2 drains rows 0 to 2 */
	tp.outlet_x = 0.5;
	tp.outlet_y = 2.5;
	tp.snap = 30;
	tg_error_clear(&err);
	check(tg_travel_time(&ctx, &b, &tp, NULL, shed, &err) == TG_OK, "snapped watershed: %s", err.message);
	for (int i = 0; i < 35; i++)
		cells += shed[i] == 1;
	check(cells == 21 && shed[2 * 7 + 3] == 1 && shed[3 * 7 + 3] == 0,
		  "the snapped outlet's watershed holds rows 0 to 2 (21 cells), got %d", cells);
	tp.snap = 0;
	tg_error_clear(&err);
	cells = 0;
	check(tg_travel_time(&ctx, &b, &tp, NULL, shed, &err) == TG_OK, "unsnapped watershed");
	for (int i = 0; i < 35; i++)
		cells += shed[i] == 1;
	check(cells == 1, "without snapping the hillside cell's watershed is itself, got %d cells", cells);
	tp.snap = -5;
	tg_error_clear(&err);
	check(tg_travel_time(&ctx, &b, &tp, NULL, shed, &err) == TG_EINVAL, "a negative snap is refused: %s",
		  err.message);
}

/* No valid cell in reach: the point on nodata, every centre within reach nodata. */
static void
test_snap_nodata(void)
{
	double		z[12] = {5, 4, 3, 5, 3, 2, 5, 2, 1, ND, ND, ND};
	tg_band		b = test_band(TG_PT_64BF, z, 3, 4, true, ND);
	tg_ctx		ctx = ctx_for(TG_BACKEND_CPU);
	tg_flow_params flow = flow_params(TG_ROUTE_D8, 3, 4, 1, true);
	tg_travel_params tp = travel_params(3, 4, 1, 1, 3);
	uint8_t		shed[12];
	tg_error	err;
	int			col,
				row;

	check(snap_at(&ctx, &b, &flow, 1.5, 3.5, 0.9, &col, &row, &err) == TG_EDATA,
		  "no valid cell within 0.9 of a nodata cell: %s", err.message);
	check(snap_at(&ctx, &b, &flow, 1.5, 3.5, 0, &col, &row, &err) == TG_EDATA,
		  "distance 0 on a nodata cell is refused");
	/* (1, 2) is 1 away, (0, 2) and (2, 2) sqrt(2): the corner (2, 2) drains most */
	check(snap_at(&ctx, &b, &flow, 1.5, 3.5, 1, &col, &row, &err) == TG_OK && col == 1 && row == 2,
		  "1 reaches only (1, 2): (%d, %d)", col, row);
	check(snap_at(&ctx, &b, &flow, 1.5, 3.5, 1.5, &col, &row, &err) == TG_OK && col == 2 && row == 2,
		  "1.5 reaches the corner (2, 2), which drains most: (%d, %d)", col, row);
	/* a travel time's outlet snaps off the nodata row */
	tp.outlet_x = 1.5;
	tp.outlet_y = 3.5;
	tp.snap = 1;
	tg_error_clear(&err);
	check(tg_travel_time(&ctx, &b, &tp, NULL, shed, &err) == TG_OK && shed[7] == 1,
		  "an outlet on nodata snaps onto a valid cell: %s", err.message);
	tp.snap = 0.5;
	tg_error_clear(&err);
	check(tg_travel_time(&ctx, &b, &tp, NULL, shed, &err) == TG_EDATA, "out of reach: %s", err.message);
}

static void
test_catchment_errors(void)
{
	double		z[12] = {5, 4, 3, 5, 3, 2, 5, 2, 1, ND, ND, ND};
	float		t[12];
	uint8_t		shed[12];
	tg_band		b = test_band(TG_PT_64BF, z, 3, 4, true, ND);
	tg_ctx		ctx = ctx_for(TG_BACKEND_CPU);
	tg_travel_params tp = travel_params(3, 4, 1, 1, 1);
	tg_rusle_params rp;
	tg_error	err;

	tg_error_clear(&err);
	tp.outlet_col = 3;
	check(tg_travel_time(&ctx, &b, &tp, t, NULL, &err) == TG_EINVAL, "outlet outside is refused");
	tg_error_clear(&err);
	tp.outlet_col = 0;
	tp.outlet_row = 3;
	check(tg_travel_time(&ctx, &b, &tp, t, NULL, &err) == TG_EDATA, "outlet on nodata is refused: %s", err.message);
	tp = travel_params(3, 4, 1, 1, 1);
	tp.roughness.value = 0;
	tg_error_clear(&err);
	check(tg_travel_time(&ctx, &b, &tp, t, NULL, &err) == TG_EINVAL && strstr(err.message, "n must be"),
		  "n = 0 is refused: %s", err.message);
	tp = travel_params(3, 4, 1, 1, 1);
	tp.velocity.value = -1;
	tg_error_clear(&err);
	check(tg_travel_time(&ctx, &b, &tp, t, NULL, &err) == TG_EINVAL, "K < 0 is refused");
	tp = travel_params(3, 4, 1, -1, 0);
	tg_error_clear(&err);
	check(tg_travel_time(&ctx, &b, &tp, NULL, shed, &err) == TG_EINVAL, "a watershed without outlet is refused");
	tp = travel_params(3, 4, 1, 1, 1);
	tp.flow.routing = TG_ROUTE_MFD_MD;
	tg_error_clear(&err);
	check(tg_travel_time(&ctx, &b, &tp, t, NULL, &err) == TG_EINVAL, "travel time needs d8");

	memset(&rp, 0, sizeof rp);
	rp.flow = flow_params(TG_ROUTE_D8, 3, 4, 1, false);
	rp.m = 0.4;
	rp.n = 1.3;
	rp.a0 = 22.1;
	rp.b0 = 0;
	rp.r.value = rp.k.value = rp.c.value = rp.p.value = 1;
	tg_error_clear(&err);
	check(tg_rusle(&ctx, &b, &rp, t, NULL, &err) == TG_EINVAL, "b0 = 0 is refused");
	rp.b0 = 0.0896;
	rp.c.value = -0.1;
	tg_error_clear(&err);
	check(tg_rusle(&ctx, &b, &rp, NULL, t, &err) == TG_EINVAL && strstr(err.message, "C must"),
		  "a negative C is refused: %s", err.message);
}

/* The GPU against the CPU: LS, soil loss and times within 1e-6, watersheds exactly. */
static void
test_cuda_catchment(void)
{
	static const int shapes[][2] = {{1, 1}, {40, 1}, {33, 31}, {257, 130}, {600, 450}};
	tg_device_info info;

	tg_device_query(0, &info);
	if (!info.available)
	{
		printf("skipped: CUDA RUSLE and travel-time parity tests (no GPU)\n");
		return;
	}
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
		for (int ty = 0; ty < 2; ty++)
		{
			const int	W = shapes[s][0],
						H = shapes[s][1];
			const size_t n = (size_t) W * H;
			double	   *z = rough_terrain(W, H, 0.02);
			int16_t    *z16 = malloc(sizeof(int16_t) * n);
			double	   *kf = malloc(sizeof(double) * n);
			float	   *a[2],
					   *b2[2];
			uint8_t    *sh[2];
			tg_band		b = test_band(TG_PT_64BF, z, W, H, true, ND);
			tg_band		kb = test_band(TG_PT_64BF, kf, W, H, false, 0);
			const char *tyname = ty ? "int16" : "64BF";

			for (size_t i = 0; i < n; i++)
			{
				z16[i] = (int16_t) z[i];
				kf[i] = 0.01 + 0.001 * (double) (i % 11) + 1e-9 * (double) (i % 3);	/* not float-exact */
			}
			if (ty)
			{
				b.pixtype = TG_PT_16BSI;
				b.data = z16;
			}
			for (int k = 0; k < 2; k++)
			{
				a[k] = malloc(sizeof(float) * n);
				b2[k] = malloc(sizeof(float) * n);
				sh[k] = malloc(n);
			}
			for (int r = 0; r < 4; r++)
			{
				tg_rusle_params rp;
				bool		ok = true;

				rp = rusle_params(flow_params((tg_routing) r, W, H, 25, r % 2 == 0));
				rp.r.value = 250;
				rp.k.band = &kb;
				rp.c.value = 0.3;
				for (int be = 0; be < 2; be++)
				{
					tg_ctx		ctx = ctx_for(be ? TG_BACKEND_GPU : TG_BACKEND_CPU);
					tg_error	err;

					tg_error_clear(&err);
					check(tg_rusle(&ctx, &b, &rp, a[be], b2[be], &err) == TG_OK, "rusle %s: %s",
						  be ? "gpu" : "cpu", err.message);
				}
				for (size_t i = 0; i < n; i++)
					ok &= close_rel(a[0][i], a[1][i], 1e-6) && close_rel(b2[0][i], b2[1][i], 1e-6);
				check(ok, "GPU RUSLE = CPU (%dx%d %s, routing %d)", W, H, tyname, r);
			}
			for (int with_outlet = 0; with_outlet < 2; with_outlet++)
			{
				tg_travel_params tp = travel_params(W, H, 25, with_outlet ? W / 2 : -1, H / 2);
				bool		ok = true,
							same_shed = true;

				if (with_outlet && z[(size_t) (H / 2) * W + W / 2] == ND)
					z[(size_t) (H / 2) * W + W / 2] = z16[(size_t) (H / 2) * W + W / 2] = 1;
				tp.velocity.band = &kb;
				for (int be = 0; be < 2; be++)
				{
					tg_ctx		ctx = ctx_for(be ? TG_BACKEND_GPU : TG_BACKEND_CPU);
					tg_error	err;

					tg_error_clear(&err);
					check(tg_travel_time(&ctx, &b, &tp, a[be], with_outlet ? sh[be] : NULL, &err) == TG_OK,
						  "travel time %s: %s", be ? "gpu" : "cpu", err.message);
				}
				for (size_t i = 0; i < n; i++)
				{
					ok &= close_rel(a[0][i], a[1][i], 1e-6);
					if (with_outlet)
						same_shed &= sh[0][i] == sh[1][i];
				}
				check(ok, "GPU travel time = CPU within 1e-6 (%dx%d %s, outlet %d)", W, H, tyname, with_outlet);
				if (with_outlet)
					check(same_shed, "GPU watershed = CPU (%dx%d %s)", W, H, tyname);
			}
			for (int k = 0; k < 2; k++)
			{
				free(a[k]);
				free(b2[k]);
				free(sh[k]);
			}
			free(z);
			free(z16);
			free(kf);
		}
}

/* The GPU's accumulation snaps every point to the CPU's cell. */
static void
test_cuda_snap(void)
{
	const int	W = 257,
				H = 130;
	static const double distances[] = {0, 15, 40, 100, 1e6};
	tg_device_info info;
	double	   *z;
	bool		same = true;

	tg_device_query(0, &info);
	if (!info.available)
	{
		printf("skipped: CUDA pour point snapping parity test (no GPU)\n");
		return;
	}
	z = rough_terrain(W, H, 0.02);
	for (int fill = 0; fill < 2; fill++)
		for (int k = 0; k < 40; k++)
			for (size_t d = 0; d < sizeof distances / sizeof distances[0]; d++)
			{
				tg_band		b = test_band(TG_PT_64BF, z, W, H, true, ND);
				tg_flow_params flow = flow_params(TG_ROUTE_D8, W, H, 5, fill);
				tg_ctx		cpu = ctx_for(TG_BACKEND_CPU),
							gpu = ctx_for(TG_BACKEND_GPU);
				const double x = (k * 37 % W) + 0.25 * (k % 4),
							y = (k * 53 % H) + 0.2 * (k % 5);
				tg_error	err;
				int			c[2],
							r[2];
				tg_status	st[2];

				st[0] = snap_at(&cpu, &b, &flow, x, y, distances[d], &c[0], &r[0], &err);
				st[1] = snap_at(&gpu, &b, &flow, x, y, distances[d], &c[1], &r[1], &err);
				same &= st[0] == st[1] && (st[0] != TG_OK || (c[0] == c[1] && r[0] == r[1]));
			}
	check(same, "GPU snapping = CPU on 80 points x 5 distances (filled and not)");
	free(z);
}

/*
 * After the accumulation, on the V valley of the SQL suite (7 x 6 cells of
 * 10 m, sides 5 m a column above a channel in column 3 falling 1 m a row to
 * the top edge): values worked by hand.
 */
static void
test_drainage_v(void)
{
	const int	W = 7,
				H = 6;
	double		z[42];
	uint32_t	order[42];
	float		out[42];
	tg_band		b = test_band(TG_PT_64BF, z, W, H, true, ND);
	tg_ctx		ctx = ctx_for(TG_BACKEND_CPU);
	tg_drainage_params p;
	tg_error	err;
	bool		strahler = true,
				shreve = true,
				down = true,
				up = true,
				hand = true;

	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++)
			z[y * W + x] = abs(x - 3) * 5 + y;
	memset(&p, 0, sizeof p);
	p.flow = flow_params(TG_ROUTE_D8, W, H, 10, true);
	p.threshold = 2;
	p.min_slope = 0.001;
	tg_error_clear(&err);
	check(tg_stream_order(&ctx, &b, &p, order, &err) == TG_OK, "stream order: %s", err.message);
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++)
			strahler &= order[y * W + x] == (x == 3 ? 2u : x == 0 || x == 6 ? 0u : 1u);
	check(strahler, "V valley: Strahler 1 on the sides' streams, 2 down the channel");
	p.ordering = TG_ORDER_SHREVE;
	check(tg_stream_order(&ctx, &b, &p, order, &err) == TG_OK, "Shreve order: %s", err.message);
	for (int y = 0; y < H; y++)
		shreve &= order[y * W + 3] == (uint32_t) (2 * (H - y)) && order[y * W + 2] == 1;
	check(shreve, "V valley: Shreve magnitude 2 per row down the channel");

	check(tg_flow_length(&ctx, &b, &p, out, &err) == TG_OK, "flow length: %s", err.message);
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++)
			down &= out[y * W + x] == (float) (10 * (abs(x - 3) + y));
	check(down, "V valley: flow length downstream across, then along the channel");
	p.upstream = true;
	check(tg_flow_length(&ctx, &b, &p, out, &err) == TG_OK, "flow length up: %s", err.message);
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++)
			up &= out[y * W + x] == (float) (x == 3 ? 30 + 10 * (H - 1 - y) : 10 * (3 - abs(x - 3)));
	check(up, "V valley: longest upstream path from the far edge of the channel's head");

	p.threshold = 5;
	check(tg_hand(&ctx, &b, &p, out, &err) == TG_OK, "HAND: %s", err.message);
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++)
			hand &= out[y * W + x] == (float) (5 * abs(x - 3));
	check(hand, "V valley: HAND is the height above the channel cell of the same row");
	p.threshold = 100;
	check(tg_hand(&ctx, &b, &p, out, &err) == TG_OK && isnan(out[0]) && isnan(out[3]),
		  "no stream: HAND is NaN everywhere");

	p.flow.routing = TG_ROUTE_D8;
	check(tg_wetness_index(&ctx, &b, &p, out, &err) == TG_OK &&
		  fabs(out[2 * W + 3] - log(280 / 0.1)) < 1e-5,
		  "V valley: wetness index of a channel cell ln(280 m / 0.1) (%g)", out[2 * W + 3]);

	/* links at 2 cells: per row, two side links of 2 cells ending at the channel cell, and the channel's */
	{
		tg_stream_network net;
		const tg_stream_link *l;

		p.threshold = 2;
		p.ordering = TG_ORDER_STRAHLER;
		p.upstream = false;
		tg_error_clear(&err);
		check(tg_stream_network_build(&ctx, &b, &p, order, &net, &err) == TG_OK && net.nlinks == 18,
			  "V valley: 18 links (%zu): %s", net.nlinks, err.message);
		if (net.nlinks == 18)
		{
			l = &net.links[0];
			check(l->id == 1 && l->downstream == 2 && l->strahler == 1 && l->shreve == 1 && l->count == 3 &&
				  l->length == 20 && l->cells == 3 && l->area == 300 && net.vertices[l->first] == 1 &&
				  net.vertices[l->first + 2] == 3,
				  "V valley: a side link runs 2 cells to the channel, which ends it");
			l = &net.links[1];
			check(l->downstream == 0 && l->strahler == 2 && l->shreve == 12 && l->count == 1 && l->length == 0 &&
				  l->cells == 42, "V valley: the outlet's link is its one cell");
			l = &net.links[4];
			check(l->downstream == 2 && l->shreve == 10 && l->count == 2 && l->length == 10 && l->cells == 35 &&
				  net.vertices[l->first] == (uint32_t) W + 3 && net.vertices[l->first + 1] == 3,
				  "V valley: a channel link is one step to the next confluence");
			check(net.nvertices == 12 * 3 + 5 * 2 + 1, "V valley: %zu vertices", net.nvertices);
		}
		tg_stream_network_free(&ctx, &net);
	}

	/* basins: of the outlet, of nested gauges, of the links */
	{
		tg_basin_params bp;
		const double xs[2] = {3.5, 1.5},
					ys[2] = {2.5, 4.5};
		bool		outlets = true,
					gauges = true,
					links = true;

		memset(&bp, 0, sizeof bp);
		bp.drainage = p;
		bp.drainage.threshold = 2;
		tg_error_clear(&err);
		check(tg_basins(&ctx, &b, &bp, order, &err) == TG_OK, "basins: %s", err.message);
		for (int i = 0; i < W * H; i++)
			outlets &= order[i] == 1;
		check(outlets, "V valley: one outlet, one basin");
		bp.outlets = TG_BASINS_POINTS;
		bp.npoints = 2;
		bp.xs = xs;
		bp.ys = ys;
		check(tg_basins(&ctx, &b, &bp, order, &err) == TG_OK, "gauges: %s", err.message);
		for (int y = 0; y < H; y++)
			for (int x = 0; x < W; x++)
				gauges &= order[y * W + x] == (y < 2 ? 0u : y == 4 && x < 2 ? 2u : 1u);
		check(gauges, "V valley: nested gauges, each cell to its nearest gauge downstream");
		bp.outlets = TG_BASINS_LINKS;
		check(tg_basins(&ctx, &b, &bp, order, &err) == TG_OK, "sub-basins: %s", err.message);
		for (int y = 0; y < H; y++)
			for (int x = 0; x < W; x++)
				links &= order[y * W + x] == (uint32_t) (3 * y + (x < 3 ? 1 : x == 3 ? 2 : 3));
		check(links, "V valley: sub-basins of the links, three per row");
		bp.outlets = TG_BASINS_POINTS;
		bp.npoints = 0;
		tg_error_clear(&err);
		check(tg_basins(&ctx, &b, &bp, order, &err) == TG_EINVAL, "basins of no pour point are refused");
	}

	p.threshold = 0;
	tg_error_clear(&err);
	check(tg_stream_order(&ctx, &b, &p, order, &err) == TG_EINVAL, "threshold 0 is refused");
	p.threshold = 2;
	p.units = TG_UNITS_SCA;
	tg_error_clear(&err);
	check(tg_hand(&ctx, &b, &p, out, &err) == TG_EINVAL, "a threshold in sca is refused");
	p.units = TG_UNITS_CELLS;
	p.min_slope = 0;
	tg_error_clear(&err);
	check(tg_wetness_index(&ctx, &b, &p, out, &err) == TG_EINVAL, "min_slope 0 is refused");
}

/* Random terrain: one thread, three threads and (where usable) the GPU agree exactly. */
static void
test_drainage_threads(void)
{
	const int	W = 311,
				H = 203;
	const size_t n = (size_t) W * H;
	double	   *z = rough_terrain(W, H, 0.01);
	tg_band		b = test_band(TG_PT_64BF, z, W, H, true, ND);
	tg_device_info info;
	uint32_t   *o[3];
	float	   *f[3];
	bool		same[5] = {true, true, true, true, true};
	int			runs;

	tg_device_query(0, &info);
	runs = info.available ? 3 : 2;
	for (int r = 0; r < 3; r++)
	{
		o[r] = malloc(n * sizeof(uint32_t));
		f[r] = malloc(n * sizeof(float));
	}
	for (int what = 0; what < 5; what++)
	{
		for (int r = 0; r < runs; r++)
		{
			tg_ctx		ctx = ctx_for(r == 2 ? TG_BACKEND_GPU : TG_BACKEND_CPU);
			tg_drainage_params p;
			tg_error	err;
			tg_status	st;

			ctx.threads = r == 0 ? 1 : 3;
			memset(&p, 0, sizeof p);
			p.flow = flow_params(TG_ROUTE_D8, W, H, 5, true);
			p.threshold = 40;
			p.ordering = what == 1 ? TG_ORDER_SHREVE : TG_ORDER_STRAHLER;
			p.upstream = what == 3;
			p.min_slope = 0.001;
			tg_error_clear(&err);
			st = what < 2 ? tg_stream_order(&ctx, &b, &p, o[r], &err)
				: what < 4 ? tg_flow_length(&ctx, &b, &p, f[r], &err)
				: tg_hand(&ctx, &b, &p, f[r], &err);
			check(st == TG_OK, "drainage pass %d, run %d: %s", what, r, err.message);
		}
		for (int r = 1; r < runs; r++)
			same[what] &= what < 2 ? memcmp(o[0], o[r], n * sizeof(uint32_t)) == 0
				: memcmp(f[0], f[r], n * sizeof(float)) == 0;
	}
	check(same[0] && same[1], "stream orders: 1 thread = 3 threads%s", runs == 3 ? " = GPU" : "");
	check(same[2] && same[3], "flow lengths: 1 thread = 3 threads%s", runs == 3 ? " = GPU" : "");
	check(same[4], "HAND: 1 thread = 3 threads%s", runs == 3 ? " = GPU" : "");
	if (runs == 2)
		printf("skipped: GPU drainage parity (no GPU)\n");
	for (int r = 0; r < 3; r++)
	{
		free(o[r]);
		free(f[r]);
	}
	free(z);
}

/*
 * A snake of channels: even rows fall along the row, odd rows are walls
 * with a gap at alternate ends, so one path runs through every channel
 * cell and crosses tile edges again and again.
 */
static double *
snake_terrain(int W, int H)
{
	double	   *z = malloc(sizeof(double) * (size_t) W * H);
	double		along = 0;

	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++)
			z[(size_t) y * W + x] = 1e6;
	for (int y = H - 1 - (H - 1) % 2; y >= 0; y -= 2)
	{
		const bool	east = (y / 2) % 2 == 0;

		for (int k = 0; k < W; k++)
			z[(size_t) y * W + (east ? W - 1 - k : k)] = along++;
		/* the gap to the next channel up, at the end this one starts from */
		if (y >= 2)
			z[(size_t) (y - 1) * W + (east ? W - 1 : 0)] = along++;
	}
	return z;
}

static bool
has_phase(const tg_run_stats *s, const char *name)
{
	for (int k = 0; k < s->nphases; k++)
		if (strcmp(s->phases[k].name, name) == 0)
			return true;
	return false;
}

/*
 * The device's passes against the threads': stream orders, basins of
 * every kind and HAND, equal cell for cell, on terrains whose paths cross many of
 * the device's 32 x 32 tiles (one path through the whole snake).
 */
static void
test_drainage_gpu(void)
{
	static const int shapes[][3] = {{2, 1, 0}, {37, 1, 0}, {1, 50, 0}, {33, 31, 0}, {311, 203, 0},
	{1100, 700, 0}, {97, 95, 1}, {600, 301, 1}};
	tg_device_info info;
	bool		same[6] = {true, true, true, true, true, true},
				ran = true;

	tg_device_query(0, &info);
	if (!info.available)
	{
		printf("skipped: GPU drainage passes (no GPU)\n");
		return;
	}
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
	{
		const int	W = shapes[s][0],
					H = shapes[s][1];
		const size_t n = (size_t) W * H;
		double	   *z = shapes[s][2] ? snake_terrain(W, H) : rough_terrain(W, H, 0.01);
		tg_band		b = test_band(TG_PT_64BF, z, W, H, true, ND);
		uint32_t   *out[2] = {malloc(n * sizeof(uint32_t)), malloc(n * sizeof(uint32_t))};
		double		xs[12],
					ys[12];

		/* gauges on valid cells (the snap looks 2 cells around them) */
		for (int k = 0; k < 12; k++)
		{
			size_t		c = (size_t) (rng_uniform() * n);

			for (size_t tries = 0; z[c] == ND && tries < n; tries++)
				c = (c + 1) % n;
			xs[k] = (double) (c % W) + 0.5;
			ys[k] = (double) (c / W) + 0.5;
		}
		for (int what = 0; what < 6; what++)
		{
			for (int r = 0; r < 2; r++)
			{
				tg_ctx		ctx = ctx_for(r ? TG_BACKEND_GPU : TG_BACKEND_CPU);
				tg_run_stats stats;
				tg_basin_params bp;
				tg_error	err;
				tg_status	st;

				ctx.threads = 2;
				ctx.stats = &stats;
				memset(&bp, 0, sizeof bp);
				bp.drainage.flow = flow_params(TG_ROUTE_D8, W, H, 5, true);
				bp.drainage.threshold = 20;
				bp.drainage.ordering = what == 1 ? TG_ORDER_SHREVE : TG_ORDER_STRAHLER;
				bp.outlets = what == 3 ? TG_BASINS_POINTS : what == 4 ? TG_BASINS_LINKS : TG_BASINS_OUTLETS;
				bp.npoints = 12;
				bp.xs = xs;
				bp.ys = ys;
				bp.snap = 2;
				tg_error_clear(&err);
				st = what < 2 ? tg_stream_order(&ctx, &b, &bp.drainage, out[r], &err)
					: what < 5 ? tg_basins(&ctx, &b, &bp, out[r], &err)
					: tg_hand(&ctx, &b, &bp.drainage, (float *) out[r], &err);
				check(st == TG_OK, "GPU drainage %dx%d, pass %d, run %d: %s", W, H, what, r, err.message);
				if (r == 1)
					ran &= has_phase(&stats, "drainage passes on the GPU");
			}
			same[what] &= memcmp(out[0], out[1], n * sizeof(uint32_t)) == 0;
		}
		free(out[0]);
		free(out[1]);
		free(z);
	}
	check(ran, "the drainage passes ran on the GPU");
	check(same[0] && same[1], "GPU stream orders (Strahler, Shreve) = CPU on %zu terrains",
		  sizeof shapes / sizeof shapes[0]);
	check(same[2], "GPU basins of every outlet = CPU");
	check(same[3], "GPU basins of snapped gauges = CPU");
	check(same[4], "GPU sub-basins of the stream links = CPU");
	check(same[5], "GPU HAND = CPU");
}

void
test_catchment(void)
{
	test_drainage_v();
	test_drainage_threads();
	test_drainage_gpu();
	test_v_catchment();
	test_travel_random();
	test_rusle_reference();
	test_catchment_errors();
	test_snap();
	test_snap_nodata();
	test_cuda_catchment();
	test_cuda_snap();
}
