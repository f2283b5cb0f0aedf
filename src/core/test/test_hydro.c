/*
 * test_hydro.c — depression filling, flow directions and flow accumulation.
 *
 *   hand-checked grids (a pit with one spill point, epsilon gradients, a
 *   plateau that must drain through one edge cell, a small valley, MFD shares);
 *   an independent brute-force fixed point for the fill; invariants on random
 *   DEMs with flats and nodata holes (filled >= input, every cell drains, D8
 *   outlets add up to the valid count, multiple-flow routings conserve water);
 *   every fill method and every accumulation method agree; CUDA against the
 *   CPU where a GPU is usable.
 */
#include "test_hydro.h"

/* ------------------------------------------------------------------------ */

/* a pit whose only spill point is the 8 on the east edge (filled, then breached) */
static const double hand_pit[25] = {
	9, 9, 9, 9, 9,
	9, 5, 5, 5, 9,
	9, 5, 1, 5, 8,
	9, 5, 5, 5, 9,
	9, 9, 9, 9, 9};

static void
test_fill_hand(void)
{
	const double *z = hand_pit;
	const double eps0[25] = {
		9, 9, 9, 9, 9,
		9, 8, 8, 8, 9,
		9, 8, 8, 8, 8,
		9, 8, 8, 8, 9,
		9, 9, 9, 9, 9};
	/* epsilon 0.5: each cell half a metre above its way out */
	const double eps5[25] = {
		9, 9, 9, 9, 9,
		9, 9.5, 9.0, 8.5, 9,
		9, 9.5, 9.0, 8.5, 8,
		9, 9.5, 9.0, 8.5, 9,
		9, 9, 9, 9, 9};
	double		w[25];
	int			m,
				i;

	for (m = 0; m < 2; m++)
	{
		const char *name = m ? "planchon-darboux" : "priority-flood";
		bool		same0 = true,
					same5 = true;

		check(fill64(TG_BACKEND_CPU, z, 5, 5, (tg_fill_method) m, 0, w) == TG_OK, "%s: run", name);
		for (i = 0; i < 25; i++)
			same0 &= w[i] == eps0[i];
		check(same0, "%s: pit filled to its spill level 8", name);
		fill64(TG_BACKEND_CPU, z, 5, 5, (tg_fill_method) m, 0.5, w);
		for (i = 0; i < 25; i++)
			same5 &= w[i] == eps5[i];
		check(same5, "%s: epsilon 0.5 gradient towards the spill point", name);
	}
}

/* Independent reference: Jacobi iteration of the defining equation from +inf. */
static void
reference_fill(const double *z, int W, int H, double eps, bool single, double *w)
{
	bool		changed = true;
	int			x,
				y,
				k;

	for (y = 0; y < H; y++)
		for (x = 0; x < W; x++)
		{
			size_t		i = (size_t) y * W + x;
			bool		outlet = x == 0 || y == 0 || x == W - 1 || y == H - 1;

			for (k = 0; k < 8 && !outlet; k++)
				outlet = z[(y + tg_nbr_dy(k)) * W + x + tg_nbr_dx(k)] == ND;
			w[i] = z[i] == ND ? NAN : outlet ? z[i] : INFINITY;
		}
	while (changed)
	{
		double	   *next = malloc(sizeof(double) * W * H);

		changed = false;
		memcpy(next, w, sizeof(double) * W * H);
		for (y = 1; y < H - 1; y++)
			for (x = 1; x < W - 1; x++)
			{
				size_t		i = (size_t) y * W + x;
				double		lo = INFINITY;

				if (isnan(w[i]) || w[i] == z[i])
					continue;
				for (k = 0; k < 8; k++)
				{
					double		v = w[(y + tg_nbr_dy(k)) * W + x + tg_nbr_dx(k)];

					if (!isnan(v))
					{
						v = tg_fill_inc(v, eps, single);
						lo = v < lo ? v : lo;
					}
				}
				lo = lo > z[i] ? lo : z[i];
				if (lo < w[i])
				{
					next[i] = lo;
					changed = true;
				}
			}
		memcpy(w, next, sizeof(double) * W * H);
		free(next);
	}
}

static void
test_fill_random(void)
{
	static const int shapes[][2] = {{1, 1}, {1, 7}, {7, 1}, {3, 3}, {17, 9}, {40, 33}, {64, 64}};
	static const double epsilons[] = {0, 0.01, 0.5};
	size_t		s,
				e;

	for (s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
		for (e = 0; e < sizeof epsilons / sizeof epsilons[0]; e++)
		{
			int			W = shapes[s][0],
						H = shapes[s][1];
			double	   *z = random_terrain(W, H, 6, 0.04);
			double	   *pf = malloc(sizeof(double) * W * H);
			double	   *pd = malloc(sizeof(double) * W * H);
			double	   *ref = malloc(sizeof(double) * W * H);
			bool		same = true,
						above = true,
						drains = true;
			int			x,
						y,
						k;

			fill64(TG_BACKEND_CPU, z, W, H, TG_FILL_PRIORITY_FLOOD, epsilons[e], pf);
			fill64(TG_BACKEND_CPU, z, W, H, TG_FILL_PLANCHON_DARBOUX, epsilons[e], pd);
			reference_fill(z, W, H, epsilons[e], false, ref);
			for (y = 0; y < H; y++)
				for (x = 0; x < W; x++)
				{
					int			i = y * W + x;
					bool		outlet = x == 0 || y == 0 || x == W - 1 || y == H - 1;
					bool		lower = false;

					if (z[i] == ND)
					{
						same &= pf[i] == ND && pd[i] == ND;
						continue;
					}
					same &= pf[i] == pd[i] && pf[i] == ref[i];
					above &= pf[i] >= z[i];
					for (k = 0; k < 8 && !outlet; k++)
					{
						double		v = z[(y + tg_nbr_dy(k)) * W + x + tg_nbr_dx(k)];

						outlet = v == ND;
						lower |= v != ND && pf[(y + tg_nbr_dy(k)) * W + x + tg_nbr_dx(k)] < pf[i];
					}
					if (epsilons[e] > 0 && !outlet)
						drains &= lower;
					if (outlet)
						above &= pf[i] == z[i];
				}
			check(same, "fill %dx%d eps %g: priority-flood, planchon-darboux and the reference agree",
				  W, H, epsilons[e]);
			check(above, "fill %dx%d eps %g: filled >= input, outlets unchanged", W, H, epsilons[e]);
			check(drains, "fill %dx%d eps %g: every cell has a strictly lower neighbour",
				  W, H, epsilons[e]);
			free(z);
			free(pf);
			free(pd);
			free(ref);
		}
}

static void
test_fill_float32(void)
{
	/* 32BF output: the epsilon rise is at least one float step at 2000 m */
	double		z[25];
	float		out[25];
	tg_band		b;
	tg_fill_params fp = {TG_FILL_PRIORITY_FLOOD, 1e-9, TG_PT_32BF};
	tg_ctx		ctx = cpu_ctx(NULL);
	tg_error	err;
	int			i;

	for (i = 0; i < 25; i++)
		z[i] = 2000;
	z[12] = 1990;
	b = band_f64(z, 5, 5);
	tg_error_clear(&err);
	check(tg_fill(&ctx, &b, &fp, ND, out, &err) == TG_OK, "float32 fill: run");
	check(out[6] == nextafterf(2000.0f, INFINITY) &&
		  out[12] == nextafterf(nextafterf(2000.0f, INFINITY), INFINITY),
		  "float32 fill: a tiny epsilon still rises one float step per cell (%.9g, %.9g)",
		  out[6], out[12]);
	check(out[0] == 2000.0f, "float32 fill: outlets unchanged");
}

/* Breaching (Lindsay 2016): lowered along the flood's path from each pit */
static void
test_breach(void)
{
	/* the flood reaches the pit from the 5 north-west of the 8 on the east edge */
	const double *z = hand_pit;
	const double eps0[25] = {
		9, 9, 9, 9, 9,
		9, 5, 5, 1, 9,
		9, 5, 1, 5, 1,
		9, 5, 5, 5, 9,
		9, 9, 9, 9, 9};
	const double eps5[25] = {
		9, 9, 9, 9, 9,
		9, 5, 5, 0.5, 9,
		9, 5, 1, 5, 0,
		9, 5, 5, 5, 9,
		9, 9, 9, 9, 9};
	static const int shapes[][2] = {{1, 1}, {1, 7}, {3, 3}, {17, 9}, {40, 33}, {64, 64}};
	static const double epsilons[] = {0, 0.01};
	double		w[25],
				on_gpu[25];
	bool		same0 = true,
				same5 = true;

	check(fill64(TG_BACKEND_CPU, z, 5, 5, TG_FILL_BREACH, 0, w) == TG_OK, "breach: run");
	for (int i = 0; i < 25; i++)
		same0 &= w[i] == eps0[i];
	check(same0, "breach: the pit's way out cut down to its level 1, the edge cell included");
	check(fill64(TG_BACKEND_GPU, z, 5, 5, TG_FILL_BREACH, 0.5, on_gpu) == TG_OK, "breach with backend gpu: run");
	for (int i = 0; i < 25; i++)
		same5 &= on_gpu[i] == eps5[i];
	check(same5, "breach, epsilon 0.5 (asked of the GPU, run on the CPU): the cut falls 0.5 per cell");

	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
		for (size_t e = 0; e < sizeof epsilons / sizeof epsilons[0]; e++)
		{
			const int	W = shapes[s][0],
						H = shapes[s][1];
			const size_t n = (size_t) W * H;
			double	   *dem = random_terrain(W, H, 6, 0.04);
			double	   *b = malloc(sizeof(double) * n);
			double	   *fb = malloc(sizeof(double) * n);
			double	   *f = malloc(sizeof(double) * n);
			double	   *bf = malloc(sizeof(double) * n);
			bool		below = true,
						drained = true,
						kept = true;

			fill64(TG_BACKEND_CPU, dem, W, H, TG_FILL_BREACH, epsilons[e], b);
			fill64(TG_BACKEND_CPU, b, W, H, TG_FILL_PRIORITY_FLOOD, 0, fb);
			fill64(TG_BACKEND_CPU, dem, W, H, TG_FILL_PRIORITY_FLOOD, 0, f);
			fill64(TG_BACKEND_CPU, f, W, H, TG_FILL_BREACH, 0, bf);
			for (size_t i = 0; i < n; i++)
			{
				below &= dem[i] == ND ? b[i] == ND : b[i] <= dem[i];
				drained &= fb[i] == b[i];
				kept &= bf[i] == f[i];
			}
			check(below, "breach %dx%d eps %g: no cell raised, nodata kept", W, H, epsilons[e]);
			check(drained, "breach %dx%d eps %g: no depression left (filling changes nothing)", W, H, epsilons[e]);
			check(kept, "breach %dx%d: a DEM without depressions is left as it is", W, H);
			free(dem);
			free(b);
			free(fb);
			free(f);
			free(bf);
		}
}

/* ------------------------------------------------------------------------ */

static void
test_d8_hand(void)
{
	const double z[9] = {3, 2, 1, 4, 3, 2, 5, 4, 3};
	const double pit[9] = {5, 5, 5, 5, 1, 5, 5, 5, 5};
	const double nodata[9] = {ND, ND, ND, ND, 4, ND, ND, ND, ND};
	uint8_t		d8[9];

	directions(z, 3, 3, TG_ROUTE_D8, false, d8, NULL);
	check(d8[4] == 128, "d8: centre flows north-east (code %d)", d8[4]);
	check(d8[0] == 1 && d8[2] == 0, "d8: an edge cell flows east (%d); the low corner is an outlet (%d)",
		  d8[0], d8[2]);
	directions(pit, 3, 3, TG_ROUTE_D8, false, d8, NULL);
	check(d8[4] == 0, "d8: an unfilled pit has no direction");
	directions(nodata, 3, 3, TG_ROUTE_D8, true, d8, NULL);
	check(d8[0] == 255 && d8[4] == 0, "d8: nodata is 255, a lone cell an outlet");
}

/* Edge or next to nodata (the test grids mark nodata with ND). */
static bool
is_outlet(const double *z, int W, int H, int x, int y)
{
	int			k;

	if (x == 0 || y == 0 || x == W - 1 || y == H - 1)
		return true;
	for (k = 0; k < 8; k++)
		if (z[(y + tg_nbr_dy(k)) * W + x + tg_nbr_dx(k)] == ND)
			return true;
	return false;
}

/* Follow D8 codes from every cell; true if all end at an outlet. */
static bool
all_drain(const double *z, const uint8_t *d8, int W, int H)
{
	int			x,
				y;

	for (y = 0; y < H; y++)
		for (x = 0; x < W; x++)
		{
			int			cx = x,
						cy = y,
						steps = 0;

			if (z[y * W + x] == ND)
				continue;
			while (d8[cy * W + cx] != 0 && steps <= W * H)
			{
				int			k = __builtin_ctz(d8[cy * W + cx]);

				cx += tg_nbr_dx(k);
				cy += tg_nbr_dy(k);
				steps++;
			}
			if (steps > W * H || !is_outlet(z, W, H, cx, cy))
				return false;
		}
	return true;
}

static void
test_flats(void)
{
	/* a plateau at 2 that drains only through the 1 on the east edge */
	const double z[30] = {
		5, 5, 5, 5, 5, 5,
		5, 2, 2, 2, 2, 5,
		5, 2, 2, 2, 2, 1,
		5, 2, 2, 2, 2, 5,
		5, 5, 5, 5, 5, 5};
	double		acc[30];
	uint8_t		d8[30];
	tg_flow_params p = flow_params(TG_ROUTE_D8, 6, 5, 1, true);
	int			i,
				defined = 0;

	directions(z, 6, 5, TG_ROUTE_D8, true, d8, NULL);
	for (i = 0; i < 30; i++)
		defined += d8[i] != 0;
	check(defined == 29 && d8[17] == 0, "flat: every cell but the spill point has a direction");
	check(all_drain(z, d8, 6, 5), "flat: every cell drains to the spill point");
	accumulate(TG_BACKEND_CPU, z, 6, 5, &p, TG_ACC_AUTO, acc);
	check(acc[17] == 30, "flat: all 30 cells accumulate at the spill point (%g)", acc[17]);
}

static void
test_mfd_shares(void)
{
	/* centre 10; east 9 (tan 1), south 8 (tan 2), the rest higher */
	const double z[9] = {20, 20, 20, 20, 10, 9, 20, 8, 20};
	float		frac[9 * 8];
	double		fd8_e = 0.5,
				fd8_s = 0.5 * pow(2.0, 1.1);

	directions(z, 3, 3, TG_ROUTE_MFD_MD, false, NULL, frac);
	/* mfd-md: e = 2, p = 8.9 + 1.1 = 10: shares 0.5 : 0.5 * 2^10 */
	check(fabs(frac[0 * 9 + 4] - 0.5 / 512.5) < 1e-7 && fabs(frac[2 * 9 + 4] - 512.0 / 512.5) < 1e-7,
		  "mfd-md: p = 10 for a gradient of 2 (E %.7f, S %.7f)", frac[4], frac[2 * 9 + 4]);
	directions(z, 3, 3, TG_ROUTE_FD8, false, NULL, frac);
	check(fabs(frac[0 * 9 + 4] - fd8_e / (fd8_e + fd8_s)) < 1e-7 &&
		  fabs(frac[2 * 9 + 4] - fd8_s / (fd8_e + fd8_s)) < 1e-7 && frac[1 * 9 + 4] == 0,
		  "fd8: shares L tan^1.1");
	check(frac[1 * 9 + 0] == 1.0f, "fd8: the corner's only lower neighbour takes all its water");
}

/* drop[k] towards each neighbour of a unit-cell plane descending at angle t
 * (radians counter-clockwise from east; rows run south) */
static void
plane_drops(double t, double drop[8])
{
	for (int k = 0; k < 8; k++)
		drop[k] = tg_nbr_dx(k) * cos(t) - tg_nbr_dy(k) * sin(t);
}

static void
test_dinf_anisotropic_shares(void)
{
	double		dist[8],
				oblong[8],
				drop[8];
	float		share[8];
	double		angle;
	const double v = 1.0 - M_SQRT1_2;
	double		worst = 0;

	tg_flat_distances(dist);
	for (double y = 0.01; y < 50; y *= 1.7)
		for (double x = 0.02; x < 50; x *= 2.3)
			worst = fmax(worst, fabs(tg_atan_ratio(y, x) - atan2(y, x)));
	check(worst < 4e-16, "tg_atan_ratio agrees with atan2 (worst %.3g)", worst);

	/* D-infinity, hand-worked: E 1 lower, NE 2 lower: r = 45 deg, all to NE */
	memset(drop, 0, sizeof drop);
	drop[0] = 1, drop[7] = 2, drop[6] = -10;
	angle = tg_dinf_shares(drop, dist, share);
	check(share[7] == 1.0f && share[0] == 0.0f && fabs(angle - M_PI / 4) < 1e-15,
		  "dinf: s1 = s2 = 1 goes along the diagonal (NE %g, angle %.17g)", share[7], angle);
	/* E 1 lower, NE 1 + tan(30 deg): r = 30 deg, 2/3 to NE, 1/3 to E */
	drop[7] = 1 + tan(M_PI / 6);
	angle = tg_dinf_shares(drop, dist, share);
	check(fabs(share[7] - 2.0 / 3) < 1e-7 && fabs(share[0] - 1.0 / 3) < 1e-7 &&
		  fabs(angle - M_PI / 6) < 1e-14, "dinf: r = 30 deg splits 2/3 : 1/3 (%g %g, %.15g)",
		  share[7], share[0], angle);
	for (int d = 0; d < 360; d += 15)
	{
		double		t = d * M_PI / 180;

		plane_drops(t, drop);
		angle = tg_dinf_shares(drop, dist, share);
		check(fabs(angle - t) < 1e-12, "dinf: a plane at %d deg has angle %.15g", d, angle);
		check(fabs(tg_dinf_angle(share, dist) - (d == 0 ? 0 : t)) < 1e-6,
			  "dinf: the angle from the shares at %d deg (%.9g)", d, tg_dinf_angle(share, dist));
	}
	memset(drop, 0, sizeof drop);
	check(tg_dinf_shares(drop, dist, share) == -1.0 && share[0] == 0, "dinf: no lower neighbour: -1");

	/*
	 * Cells that are not square (geographic rasters): the angle read back
	 * from the shares is the one the facets chose, also where all the water
	 * goes to a corner, whose direction is atan2(dy, dx) from the east-west
	 * axis (a 573 m x 927 m cell: NE at 58.3 degrees, not 45).
	 */
	tg_nbr_distances(573, 927, oblong);
	memset(drop, 0, sizeof drop);
	drop[7] = 10, drop[0] = 1;
	angle = tg_dinf_shares(drop, oblong, share);
	check(share[7] == 1.0f && fabs(angle - atan2(927, 573)) < 1e-15 &&
		  fabs(tg_dinf_angle(share, oblong) - atan2(927, 573)) < 1e-15,
		  "dinf: all to the NE corner of a 573 x 927 cell: angle %.9g from the facets, %.9g from the shares",
		  angle, tg_dinf_angle(share, oblong));
	{
		const double cells[4][2] = {{1, 1}, {573, 927}, {927, 573}, {64.3, 92.6}};
		double		worst_gap = 0;
		int			cornered = 0;

		for (int c = 0; c < 4; c++)
		{
			tg_nbr_distances(cells[c][0], cells[c][1], oblong);
			for (int t = 0; t < 20000; t++)
			{
				double		gap;
				int			receivers = 0;

				for (int k = 0; k < 8; k++)
					drop[k] = rng_uniform() * 20 - 10;
				angle = tg_dinf_shares(drop, oblong, share);
				if (angle < 0)
					continue;
				gap = fabs(remainder(tg_dinf_angle(share, oblong) - angle, 2 * M_PI));
				worst_gap = fmax(worst_gap, gap);
				for (int k = 0; k < 8; k++)
					receivers += share[k] > 0;
				cornered += receivers == 1 && (share[1] > 0 || share[3] > 0 || share[5] > 0 || share[7] > 0);
			}
		}
		check(worst_gap < 1e-6 && cornered > 1000,
			  "dinf: the angle from the shares is the facets' angle on square and oblong cells "
			  "(worst gap %.3g rad; %d cells all to a corner)", worst_gap, cornered);
	}

	/* anisotropic: on planes at 0..45 deg the shares move the water one cell
	 * along the flow with lateral variance 1 - 1/sqrt(2) at every angle */
	for (int d = 0; d <= 360; d += 5)
	{
		double		t = d * M_PI / 180,
					mx = 0,
					my = 0,
					var = 0,
					sum = 0;

		plane_drops(t, drop);
		tg_anisotropic_shares(drop, dist, share);
		for (int k = 0; k < 8; k++)
		{
			double		ex = tg_nbr_dx(k),
						ey = -tg_nbr_dy(k),
						lat = -ex * sin(t) + ey * cos(t);

			check(share[k] >= 0 && (share[k] == 0 || drop[k] > 0), "anisotropic: shares go downhill");
			sum += share[k];
			mx += share[k] * ex;
			my += share[k] * ey;
			var += share[k] * lat * lat;
		}
		check(fabs(sum - 1) < 1e-6 && fabs(mx - cos(t)) < 1e-6 && fabs(my - sin(t)) < 1e-6 &&
			  fabs(var - v) < 1e-6, "anisotropic at %d deg: mean (%.7f, %.7f), variance %.7f",
			  d, mx, my, var);
	}
	/* hand-worked: due east, E 1 - v, NE = SE = v / 2 */
	plane_drops(0, drop);
	tg_anisotropic_shares(drop, dist, share);
	check(fabs(share[0] - M_SQRT1_2) < 1e-7 && fabs(share[7] - v / 2) < 1e-7 &&
		  fabs(share[1] - v / 2) < 1e-7 && share[6] == 0 && share[2] == 0,
		  "anisotropic east: %.7f %.7f %.7f", share[0], share[7], share[1]);
	/* due north-east: NE sqrt(2) - 1, E = N = 1 - 1/sqrt(2) */
	plane_drops(M_PI / 4, drop);
	tg_anisotropic_shares(drop, dist, share);
	check(fabs(share[7] - (M_SQRT2 - 1)) < 1e-7 && fabs(share[0] - v) < 1e-7 &&
		  fabs(share[6] - v) < 1e-7 && share[1] == 0 && share[5] == 0,
		  "anisotropic north-east: %.7f %.7f %.7f", share[7], share[0], share[6]);
	/* a cell with E the only lower neighbour sends it everything */
	memset(drop, 0, sizeof drop);
	drop[0] = 1;
	for (int k = 1; k < 8; k++)
		drop[k] = -1;
	tg_anisotropic_shares(drop, dist, share);
	check(share[0] == 1.0f, "anisotropic: one lower neighbour takes all");
}

/*
 * Isotropy of the accumulation on a cone: the coefficient of variation of the
 * accumulation over cells about equally far from the apex (on a cone every
 * direction should carry the same water) must be smaller for the anisotropic
 * routing and for D-infinity than for D8 and FD8; and on tilted planes one
 * source's water must spread across the flow by about the same amount at
 * every angle.
 */
static double
cone_cv(tg_routing routing)
{
	enum { N = 81 };
	double	   *z = malloc(sizeof(double) * N * N),
			   *acc = malloc(sizeof(double) * N * N);
	tg_flow_params p = flow_params(routing, N, N, 1, false);
	double		s = 0,
				s2 = 0;
	int			cnt = 0;

	for (int y = 0; y < N; y++)
		for (int x = 0; x < N; x++)
			z[y * N + x] = 100 - hypot(x - N / 2, y - N / 2);
	check(accumulate(TG_BACKEND_CPU, z, N, N, &p, TG_ACC_AUTO, acc) == TG_OK, "cone accumulation");
	for (int y = 0; y < N; y++)
		for (int x = 0; x < N; x++)
		{
			double		r = hypot(x - N / 2, y - N / 2);

			if (fabs(r - 30) < 0.5)
			{
				s += acc[y * N + x];
				s2 += acc[y * N + x] * acc[y * N + x];
				cnt++;
			}
		}
	free(z);
	free(acc);
	s /= cnt;
	return sqrt(fmax(s2 / cnt - s * s, 0)) / s;
}

/*
 * One source's water on a tilted plane: the accumulation with a weight of 1
 * at one cell, over the cells 20 to 21 cells downslope of it; its centroid's
 * lateral offset from the true flow line and its lateral standard deviation,
 * for the plane descending at `deg` degrees.
 */
static void
plane_spread(tg_routing routing, int deg, double *offset, double *spread)
{
	enum { N = 71 };
	const double t = deg * M_PI / 180;
	const int	sx = 10,
				sy = N - 11;
	double	   *z = malloc(sizeof(double) * N * N),
			   *w = malloc(sizeof(double) * N * N),
			   *acc = malloc(sizeof(double) * N * N);
	tg_flow_params p = flow_params(routing, N, N, 1, false);
	tg_band		b = band_f64(z, N, N),
				wb = band_f64(w, N, N);
	tg_ctx		ctx = cpu_ctx(NULL);
	tg_error	err;
	double		m = 0,
				m1 = 0,
				m2 = 0;

	for (int y = 0; y < N; y++)
		for (int x = 0; x < N; x++)
		{
			/* rows run south: north is -y */
			z[y * N + x] = 1000 - (x * cos(t) - y * sin(t));
			w[y * N + x] = (x == sx && y == sy) ? 1 : 0;
		}
	tg_error_clear(&err);
	check(tg_flow_accumulation(&ctx, &b, &wb, &p, TG_ACC_AUTO, TG_UNITS_CELLS, acc, &err) == TG_OK,
		  "plane accumulation (%s)", err.message);
	for (int y = 0; y < N; y++)
		for (int x = 0; x < N; x++)
		{
			const double ex = x - sx,
						en = sy - y,
						along = ex * cos(t) + en * sin(t),
						lat = -ex * sin(t) + en * cos(t);

			if (along >= 20 && along < 21)
			{
				m += acc[y * N + x];
				m1 += acc[y * N + x] * lat;
				m2 += acc[y * N + x] * lat * lat;
			}
		}
	free(z);
	free(w);
	free(acc);
	*offset = m1 / m;
	*spread = sqrt(fmax(m2 / m - (m1 / m) * (m1 / m), 0));
}

static void
test_plane_spread(void)
{
	static const tg_routing routings[] = {TG_ROUTE_D8, TG_ROUTE_FD8, TG_ROUTE_DINF, TG_ROUTE_ANISOTROPIC};
	static const char *const names[] = {"d8", "fd8", "dinf", "anisotropic"};
	double		worst_offset[4],
				spread_range[4];

	for (int r = 0; r < 4; r++)
	{
		double		lo = HUGE_VAL,
					hi = 0;

		worst_offset[r] = 0;
		printf("  plane, one source, 20 cells down (offset / spread):  %-11s", names[r]);
		for (int deg = 0; deg <= 45; deg += 5)
		{
			double		off,
						spr;

			plane_spread(routings[r], deg, &off, &spr);
			printf(" %d:%.2f/%.2f", deg, off, spr);
			worst_offset[r] = fmax(worst_offset[r], fabs(off));
			lo = fmin(lo, spr);
			hi = fmax(hi, spr);
		}
		spread_range[r] = hi - lo;
		printf("\n");
	}
	/* the band of cells sampled is ragged: offsets within half a cell count as on the line */
	check(worst_offset[3] < 0.5 && worst_offset[3] < worst_offset[0] && worst_offset[3] < worst_offset[2],
		  "anisotropic: the water stays on the flow line at every angle (%.3f; d8 %.3f, dinf %.3f)",
		  worst_offset[3], worst_offset[0], worst_offset[2]);
	check(spread_range[3] < spread_range[1],
		  "anisotropic: the lateral spread varies less with the angle than fd8's (%.3f vs %.3f)",
		  spread_range[3], spread_range[1]);
}

static void
test_routing_isotropy(void)
{
	const double d8 = cone_cv(TG_ROUTE_D8),
				fd8 = cone_cv(TG_ROUTE_FD8),
				dinf = cone_cv(TG_ROUTE_DINF),
				an = cone_cv(TG_ROUTE_ANISOTROPIC);

	printf("  cone, accumulation CV at r = 30: d8 %.3f, fd8 %.3f, dinf %.3f, anisotropic %.3f\n",
		   d8, fd8, dinf, an);
	check(an < d8 && an < fd8, "anisotropic is more isotropic on a cone than d8 and fd8");
	check(dinf < d8, "dinf is more isotropic on a cone than d8");
}

static void
test_accumulation_hand(void)
{
	const double strip[5] = {5, 4, 3, 2, 1};
	const double valley[9] = {9, 8, 9, 8, 7, 8, 9, 6, 9};
	double		acc[9];
	tg_flow_params p = flow_params(TG_ROUTE_D8, 5, 1, 1, true);
	int			m;

	for (m = TG_ACC_FLOW_TRANSFER; m <= TG_ACC_TOPOLOGICAL; m++)
	{
		accumulate(TG_BACKEND_CPU, strip, 5, 1, &p, (tg_accum_method) m, acc);
		check(acc[0] == 1 && acc[2] == 3 && acc[4] == 5, "%s: 1x5 strip accumulates 1..5",
			  tg_accum_method_name((tg_accum_method) m));
	}
	p = flow_params(TG_ROUTE_D8, 3, 3, 1, true);
	accumulate(TG_BACKEND_CPU, valley, 3, 3, &p, TG_ACC_AUTO, acc);
	/* the middle-row sides reach the outlet diagonally, past the centre */
	check(acc[4] == 4 && acc[7] == 9 && acc[0] == 1, "valley: centre 4, outlet 9 (%g, %g)", acc[4], acc[7]);
}

/* Outflow-free valid cells: where water leaves (D8 code 0 / no shares). */
static void
test_accumulation_random(void)
{
	static const tg_routing routings[] = {TG_ROUTE_D8, TG_ROUTE_FD8, TG_ROUTE_MFD_MD, TG_ROUTE_FDD8,
	TG_ROUTE_DINF, TG_ROUTE_ANISOTROPIC};
	static const int shapes[][2] = {{1, 1}, {1, 9}, {9, 1}, {5, 5}, {31, 17}, {60, 45}};
	size_t		r,
				s;

	for (r = 0; r < 6; r++)
		for (s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
		{
			static const char *const names[] = {"d8", "fd8", "mfd-md", "fdd8", "dinf", "anisotropic"};
			const char *rn = names[r];
			int			W = shapes[s][0],
						H = shapes[s][1];
			int			n = W * H;
			double	   *z = random_terrain(W, H, 5, 0.05);
			double	   *ref = malloc(sizeof(double) * n);
			double	   *acc = malloc(sizeof(double) * n);
			uint8_t    *d8 = malloc(n);
			float	   *frac = malloc(sizeof(float) * 8 * n);
			tg_flow_params p = flow_params(routings[r], W, H, 1, true);
			double		out_sum = 0,
						valid = 0;
			int			m,
						i,
						k;

			check(accumulate(TG_BACKEND_CPU, z, W, H, &p, TG_ACC_INDEGREE, ref) == TG_OK,
				  "%s %dx%d: accumulate", rn, W, H);
			for (m = TG_ACC_FLOW_TRANSFER; m <= TG_ACC_TOPOLOGICAL; m++)
			{
				double		worst = 0;

				if (m == TG_ACC_FLOW_TRANSFER && routings[r] == TG_ROUTE_FDD8)
				{
					check(accumulate(TG_BACKEND_CPU, z, W, H, &p, TG_ACC_FLOW_TRANSFER, acc) == TG_EINVAL,
						  "fdd8: flow-transfer refused");
					continue;
				}
				accumulate(TG_BACKEND_CPU, z, W, H, &p, (tg_accum_method) m, acc);
				for (i = 0; i < n; i++)
					worst = fmax(worst, isnan(ref[i]) != isnan(acc[i]) ? INFINITY :
								 isnan(ref[i]) ? 0 : fabs(acc[i] - ref[i]) / fmax(1, fabs(ref[i])));
				check(routings[r] == TG_ROUTE_D8 ? worst == 0 : worst <= 1e-12,
					  "%s %dx%d: %s agrees with indegree (%g)", rn, W, H,
					  tg_accum_method_name((tg_accum_method) m), worst);
			}

			/* water leaves only where a cell sends nothing on; all of it arrives */
			if (routings[r] == TG_ROUTE_D8)
				directions(z, W, H, TG_ROUTE_D8, true, d8, NULL);
			else
				directions(z, W, H, routings[r], true, NULL, frac);
			for (i = 0; i < n; i++)
			{
				bool		sends = false;

				if (z[i] == ND)
					continue;
				valid++;
				if (routings[r] == TG_ROUTE_D8)
					sends = d8[i] != 0;
				else
					for (k = 0; k < 8; k++)
						sends |= frac[k * n + i] > 0;
				if (!sends)
					out_sum += ref[i];
			}
			/* exact for D8; multiple-flow shares are float32, so to ~1e-7 */
			check(routings[r] == TG_ROUTE_D8 ? out_sum == valid : fabs(out_sum - valid) <= 1e-6 * valid,
				  "%s %dx%d: outlets receive all %g cells (%.12g)", rn, W, H, valid, out_sum);
			if (routings[r] == TG_ROUTE_D8)
				check(all_drain(z, d8, W, H), "d8 %dx%d: every valid cell drains to an outlet", W, H);
			free(z);
			free(ref);
			free(acc);
			free(d8);
			free(frac);
		}
}

static void
test_weights_units(void)
{
	const double valley[9] = {9, 8, 9, 8, 7, 8, 9, 6, 9};
	double		w2[9],
				acc[9];
	tg_band		dem = band_f64(valley, 3, 3),
				weight;
	tg_flow_params p = flow_params(TG_ROUTE_D8, 3, 3, 1, true);
	tg_ctx		ctx = cpu_ctx(NULL);
	tg_error	err;
	int			i;

	for (i = 0; i < 9; i++)
		w2[i] = 2;
	w2[0] = ND;					/* nodata weight counts 0 */
	weight = band_f64(w2, 3, 3);
	tg_error_clear(&err);
	tg_flow_accumulation(&ctx, &dem, &weight, &p, TG_ACC_AUTO, TG_UNITS_CELLS, acc, &err);
	check(acc[7] == 16 && acc[4] == 6, "weights: outlet 16, centre 6 (%g, %g)", acc[7], acc[4]);

	p.geom.cell_x = 10;
	p.geom.cell_y = 20;
	tg_flow_accumulation(&ctx, &dem, NULL, &p, TG_ACC_AUTO, TG_UNITS_AREA, acc, &err);
	check(acc[7] == 9 * 200.0, "area: 9 cells of 200 m2 (%g)", acc[7]);
	tg_flow_accumulation(&ctx, &dem, NULL, &p, TG_ACC_AUTO, TG_UNITS_SCA, acc, &err);
	check(fabs(acc[7] - 1800.0 / sqrt(200.0)) < 1e-9, "sca: area / sqrt(dx dy) (%g)", acc[7]);

	weight.width = 2;
	tg_error_clear(&err);
	check(tg_flow_accumulation(&ctx, &dem, &weight, &p, TG_ACC_AUTO, TG_UNITS_CELLS, acc, &err) == TG_EINVAL,
		  "weights: a misaligned weight raster is refused (%s)", err.message);
}

static void
test_fdd8_limits(void)
{
	int			W = 40,
				H = 30,
				n = W * H,
				i;
	double	   *z = random_terrain(W, H, 50, 0.02);
	double	   *a = malloc(sizeof(double) * n),
			   *b = malloc(sizeof(double) * n);
	tg_flow_params fdd8 = flow_params(TG_ROUTE_FDD8, W, H, 1, true);
	tg_flow_params other = flow_params(TG_ROUTE_FD8, W, H, 1, true);
	bool		same = true;

	fdd8.threshold = INFINITY;
	accumulate(TG_BACKEND_CPU, z, W, H, &fdd8, TG_ACC_AUTO, a);
	accumulate(TG_BACKEND_CPU, z, W, H, &other, TG_ACC_AUTO, b);
	for (i = 0; i < n; i++)
		same &= (isnan(a[i]) && isnan(b[i])) || a[i] == b[i];
	check(same, "fdd8 with an infinite threshold is fd8");
	fdd8.threshold = 0;
	other.routing = TG_ROUTE_D8;
	accumulate(TG_BACKEND_CPU, z, W, H, &fdd8, TG_ACC_AUTO, a);
	accumulate(TG_BACKEND_CPU, z, W, H, &other, TG_ACC_AUTO, b);
	same = true;
	for (i = 0; i < n; i++)
		same &= (isnan(a[i]) && isnan(b[i])) || a[i] == b[i];
	check(same, "fdd8 with threshold 0 is d8");
	free(z);
	free(a);
	free(b);
}

static void
test_geometry(void)
{
	tg_grid_geometry g;
	double		dx,
				dy;

	memset(&g, 0, sizeof g);
	g.geographic = true;
	g.lon_step = 1;
	g.lat_step = -1;
	g.lat_top = 0;
	tg_row_spacing(&g, 0, &dx, &dy);
	check(fabs(dx - 111319.49) < 0.01 && fabs(dy - 110574.27) < 0.01,
		  "WGS84: one degree at the equator is 111319.49 x 110574.27 m (%.2f x %.2f)", dx, dy);
	tg_row_spacing(&g, -60, &dx, &dy);
	check(fabs(dx - 55799.98) < 0.5 && fabs(dy - 111412.24) < 0.5,
		  "WGS84: one degree at 60 N is 55800 x 111412 m (%.2f x %.2f)", dx, dy);
}

static void
test_degenerate(void)
{
	const double one[1] = {7};
	const double none[4] = {ND, ND, ND, ND};
	double		flat[64],
				out[64],
				sum = 0;
	tg_flow_params p = flow_params(TG_ROUTE_MFD_MD, 1, 1, 1, true);
	int			i;

	check(fill64(TG_BACKEND_CPU, one, 1, 1, TG_FILL_PLANCHON_DARBOUX, 0.1, out) == TG_OK && out[0] == 7,
		  "1x1: fill leaves the cell");
	accumulate(TG_BACKEND_CPU, one, 1, 1, &p, TG_ACC_TOPOLOGICAL, out);
	check(out[0] == 1, "1x1: accumulation 1");
	p = flow_params(TG_ROUTE_D8, 2, 2, 1, true);
	fill64(TG_BACKEND_CPU, none, 2, 2, TG_FILL_PRIORITY_FLOOD, 0, out);
	check(out[0] == ND && out[3] == ND, "all nodata: fill gives nodata");
	accumulate(TG_BACKEND_CPU, none, 2, 2, &p, TG_ACC_INDEGREE, out);
	check(isnan(out[0]) && isnan(out[3]), "all nodata: accumulation gives nodata");

	/* a perfectly flat 8x8: the interior drains to the edges, every cell counted once */
	for (i = 0; i < 64; i++)
		flat[i] = 100;
	p = flow_params(TG_ROUTE_MFD_MD, 8, 8, 1, true);
	accumulate(TG_BACKEND_CPU, flat, 8, 8, &p, TG_ACC_INDEGREE, out);
	for (i = 0; i < 64; i++)
	{
		int			x = i % 8,
					y = i / 8;

		if (x == 0 || y == 0 || x == 7 || y == 7)
			sum += out[i];
	}
	check(fabs(sum - 64) < 64e-6, "all flat: the edges receive all 64 cells (%g)", sum);
}

void
test_hydro(void)
{
	test_fill_hand();
	test_fill_random();
	test_breach();
	test_fill_float32();
	test_d8_hand();
	test_flats();
	test_mfd_shares();
	test_dinf_anisotropic_shares();
	test_routing_isotropy();
	test_plane_spread();
	test_accumulation_hand();
	test_accumulation_random();
	test_weights_units();
	test_fdd8_limits();
	test_geometry();
	test_degenerate();
}
