/*
 * test_run.c — tg_run over tiles: a DEM cut into tiles (edge tiles smaller,
 * one missing, some arriving LZ4- or pglz-compressed) gives, for every
 * operation, the tiles of the same operation over the one-tile mosaic;
 * strips (a small memory budget) give the tiles of the run in memory; LZ4
 * result tiles decompress to the plain ones; 1 and 4 threads agree; the
 * codecs refuse corrupt input; fill, slope, D8 directions and accumulation
 * over the coverage split in parts of rows of tiles, phase by phase, give
 * the whole run's tiles (D8 in areas: those of the run in strips of the
 * parts' rows).
 */
#include "tiles.h"
static double
cell_of(const coverage *c, const results *r, int o, int b, int x, int y, bool *found)
{
	for (int t = 0; t < c->layout.ntiles; t++)
	{
		const tg_tile_place *p = &c->places[t];
		tg_band		band;
		tg_error	err;

		if (x < p->col0 || y < p->row0 || x >= p->col0 + p->width || y >= p->row0 + p->height)
			continue;
		tg_error_clear(&err);
		*found = r->tile[t][o] != NULL &&
			tg_raster_read_band(r->tile[t][o], r->size[t][o], b, &band, &err) == TG_OK;
		return *found ? tg_band_get(&band, (size_t) (y - p->row0) * p->width + (x - p->col0)) : NAN;
	}
	*found = false;
	return NAN;
}

/* The tiles' cells equal the mosaic's, bit for bit (NaN = NaN). */
static bool
same_cells(const coverage *tiles, const results *rt, const coverage *whole, const results *rw,
		   int nout, int nbands)
{
	for (int o = 0; o < nout; o++)
		for (int b = 0; b < nbands; b++)
			for (int y = 0; y < GH; y++)
				for (int x = 0; x < GW; x++)
				{
					bool		f1,
								f2;
					double		a = cell_of(tiles, rt, o, b, x, y, &f1),
								w = cell_of(whole, rw, o, b, x, y, &f2);

					if (!f1)
						continue;	/* where the tiles lack one */
					if (!f2 || (a != w && !(isnan(a) && isnan(w))))
						return false;
				}
	return true;
}

/* Outputs [o0, o1) of every tile are byte-identical. */
static bool
same_outputs(const coverage *c, const results *a, const results *b, int o0, int o1)
{
	for (int t = 0; t < c->layout.ntiles; t++)
		for (int o = o0; o < o1; o++)
			if (a->size[t][o] != b->size[t][o] ||
				memcmp(a->tile[t][o] + 4, b->tile[t][o] + 4, a->size[t][o] - 4) != 0)
				return false;
	return true;
}

static bool
same_tiles(const coverage *c, const results *a, const results *b, int nout)
{
	return same_outputs(c, a, b, 0, nout);
}

/* The largest relative difference between the cells of two runs over the same tiles (NaN = NaN). */
static double
cells_apart(const coverage *c, const results *a, const results *b, int o)
{
	double		most = 0;

	for (int y = 0; y < GH; y++)
		for (int x = 0; x < GW; x++)
		{
			bool		f1,
						f2;
			double		u = cell_of(c, a, o, 1, x, y, &f1),
						v = cell_of(c, b, o, 1, x, y, &f2);

			if (f1 != f2 || isnan(u) != isnan(v))
				return INFINITY;
			if (f1 && !isnan(u) && u != v)
				most = fmax(most, fabs(u - v) / fmax(fabs(u), 1e-300));
		}
	return most;
}

typedef enum strips_check
{
	NO_STRIPS,
	STRIPS_SAME,				/* the tiles of the run in memory */
	STRIPS_ROUNDING				/* its accumulation (the last output) to rounding (sums in another
								 * order), any other output's tiles */
} strips_check;

static void
check_op(const char *name, const tg_op *op, coverage *tiles, coverage *whole, coverage *weights,
		 strips_check strips)
{
	results		rt,
				rw,
				r4,
				rs;
	tg_run_stats stats;
	tg_error	err;
	const int	nout = tg_op_outputs(op);
	const int	nbands = op->kind == TG_OP_DIRECTIONS && op->directions == TG_DIRECTIONS_SHARES ? 8 : 1;
	check(run_on(tiles, weights, op, 1, SIZE_MAX, false, false, &rt, &stats, &err) == TG_OK,
		  "%s over tiles: %s", name, err.message);
	check(rt.written == tiles->layout.ntiles && rt.in_order, "%s: %d tiles written in order", name,
		  rt.written);
	/* the weights are a coverage on the same grid for both */
	check(run_on(whole, weights, op, 1, SIZE_MAX, false, true, &rw, &stats, &err) == TG_OK,
		  "%s over the mosaic: %s", name, err.message);
	check(same_cells(tiles, &rt, whole, &rw, nout, nbands), "%s: the tiles hold the mosaic's cells", name);
	check(run_on(tiles, weights, op, 4, SIZE_MAX, true, true, &r4, &stats, &err) == TG_OK,
		  "%s on 4 threads: %s", name, err.message);
	check(same_tiles(tiles, &rt, &r4, nout) && r4.saw_compressed,
		  "%s: 4 threads and LZ4 tiles give the same tiles", name);
	check(stats.threads > 1, "%s: 4 threads asked, %d ran", name, stats.threads);
	if (strips != NO_STRIPS)
	{
		/* a third of the grid in memory */
		const size_t budget = (size_t) GW * GH * tg_op_bytes_per_cell(op, false) / 3;

		check(run_on(tiles, weights, op, 3, budget, false, false, &rs, &stats, &err) == TG_OK,
			  "%s in strips: %s", name, err.message);
		/* each strip writes its own tiles; the progress is the whole grid's */
		check(!write_went_back && write_last == 1.0, "%s: the write's progress over %d strips counts up once, to %g",
			  name, stats.chunks, write_last);
		check(!strip_went_back && (op->kind != TG_OP_HYDROLOGY || strip_reports > 0),
			  "%s: the %d phases within strips are told as their strips' phase, which never goes back", name,
			  strip_reports);
		if (strips == STRIPS_SAME)
			check(stats.chunks > 1 && same_tiles(tiles, &rt, &rs, nout),
				  "%s: %d strips give the tiles of the run in memory", name, stats.chunks);
		else
		{
			results		r1;
			double		apart = cells_apart(tiles, &rt, &rs, nout - 1);

			check(stats.chunks > 1 && apart < 1e-12 && same_outputs(tiles, &rt, &rs, 0, nout - 1),
				  "%s: %d strips give the cells of the run in memory to rounding (%g apart)", name,
				  stats.chunks, apart);
			check(run_on(tiles, weights, op, 1, budget, false, false, &r1, &stats, &err) == TG_OK &&
				  same_tiles(tiles, &rs, &r1, nout),
				  "%s: strips on 1 and 3 threads give the same tiles", name);
			res_free(&r1);
		}
		res_free(&rs);
	}
	res_free(&rt);
	res_free(&rw);
	res_free(&r4);
}

static bool
parts_match(const coverage *tiles, const coverage *parts, results *r, const results *whole, const tg_op *op)
{
	bool		same = true;
	int			t0 = 0;

	for (int k = 0; k < NPARTS; k++)
	{
		for (int t = 0; t < parts[k].layout.ntiles; t++)
			for (int o = 0; o < tg_op_outputs(op); o++)
				same = same && r[k].size[t][o] == whole->size[t0 + t][o] &&
					memcmp(r[k].tile[t][o] + 4, whole->tile[t0 + t][o] + 4, r[k].size[t][o] - 4) == 0;
		same = same && r[k].written == parts[k].layout.ntiles;
		t0 += parts[k].layout.ntiles;
		res_free(&r[k]);
	}
	return same && t0 == tiles->layout.ntiles;
}

/*
 * op over the coverage's 3 parts, given to the coordinator out of order,
 * against `reference` (one server's tiles, freed; `against` names it):
 * every tile equal.  The rounds of the flats and of the flow into rounds[];
 * false where the parts failed.
 */
static bool
parts_equal(const char *name, const tg_op *op, coverage *tiles, results *reference, const char *against,
			int rounds[2])
{
	static const int order[NPARTS] = {2, 0, 1};
	coverage   *parts = malloc(NPARTS * sizeof(coverage));
	results		r[NPARTS];
	tg_error	err;
	tg_status	ran;

	for (int k = 0; k < NPARTS; k++)
		make_part(tiles, k, &parts[k]);
	ran = run_parts(parts, order, NPARTS, op, r, rounds, NULL, &err);
	check(ran == TG_OK, "%s over %d parts: %s", name, NPARTS, err.message);
	if (ran == TG_OK)
		check(parts_match(tiles, parts, r, reference, op),
			  "%s over %d parts given out of order: every tile equals %s", name, NPARTS, against);
	res_free(reference);
	free(parts);
	return ran == TG_OK;
}

/* Against the whole coverage in memory; the rounds of the flow (multiple-flow accumulation), -1 where the parts failed. */
static int
check_parts(const char *name, const tg_op *op, coverage *tiles)
{
	results		whole;
	tg_error	err;
	int			rounds[2];

	check(run_on(tiles, NULL, op, 1, SIZE_MAX, false, false, &whole, NULL, &err) == TG_OK,
		  "%s over the whole coverage: %s", name, err.message);
	if (!parts_equal(name, op, tiles, &whole, "the whole run's", rounds))
		return -1;
	/* the flats that cross the parts (a lake over their boundaries) take more than one round */
	check((op->kind != TG_OP_ACCUMULATION && op->kind != TG_OP_DIRECTIONS) || rounds[0] > 1,
		  "%s: the flats across parts settled in %d rounds", name, rounds[0]);
	return rounds[1];
}

/*
 * D8 over the parts against one server in strips of the parts' rows: its
 * strips take in the water entering them as the parts do, so where the sums
 * round (areas), every tile still agrees bit for bit, which the run in
 * memory, adding in another order, does not.
 */
static void
check_parts_in_strips(const char *name, const tg_op *op, coverage *tiles)
{
	results		strips;
	tg_run_stats stats;
	tg_error	err;
	int			rounds[2],
				nstrips = 0,
				most = 0;
	size_t		budget = (size_t) GW * GH * tg_op_bytes_per_cell(op, false) / 3;

	/* strips of at most about 72 rows: the parts' 64, 64 and 62 (whole rows of tiles) */
	check(run_on(tiles, NULL, op, 1, budget, false, false, &strips, &stats, &err) == TG_OK &&
		  sscanf(stats.note, "%d strips of at most %d rows", &nstrips, &most) == 2,
		  "%s in strips: %s (%s)", name, err.message, stats.note);
	res_free(&strips);
	budget = (size_t) ((double) budget * 73 / (most + 2));
	check(run_on(tiles, NULL, op, 1, budget, false, false, &strips, &stats, &err) == TG_OK &&
		  sscanf(stats.note, "%d strips of at most %d rows", &nstrips, &most) == 2 &&
		  nstrips == NPARTS && most >= 64 && most < 80,
		  "%s in strips as the parts: %s (%s)", name, err.message, stats.note);
	parts_equal(name, op, tiles, &strips, "the run in strips of the parts' rows", rounds);
}

/*
 * A geographic grid (the test tiles' georeference read as degrees, as the
 * parts read their first row's latitude from it: about 25 N), for weights
 * that differ by row and round when summed.
 */
static void
geographic(tg_op *op)
{
	op->flow.geom.geographic = true;
	op->flow.geom.lat_top = 4000000 - 15;
	op->flow.geom.lat_step = -1.0 / 1200;
	op->flow.geom.lon_step = 1.0 / 1200;
}

/*
 * The D8 operations over the parts (their link: routing with the crossing
 * flats' masks and D8 accumulation) on parts_backend: in cells against the
 * whole run in memory; in areas, which round, against the run in strips of
 * the parts' rows, which adds the water entering each part in the same
 * order.  `where` ends the names.
 */
static void
check_d8_parts(coverage *tiles, const char *where)
{
	tg_op		op = base_op(TG_OP_ACCUMULATION);
	char		name[128];

	snprintf(name, sizeof name, "d8 accumulation of the filled DEM%s", where);
	check_parts(name, &op, tiles);
	op.flow.fill = false;
	snprintf(name, sizeof name, "d8 accumulation of the DEM as it is%s", where);
	check_parts(name, &op, tiles);
	op = base_op(TG_OP_HYDROLOGY);
	snprintf(name, sizeof name, "d8 hydrology%s", where);
	check_parts(name, &op, tiles);
	op = base_op(TG_OP_ACCUMULATION);
	op.units = TG_UNITS_AREA;
	geographic(&op);
	snprintf(name, sizeof name, "d8 accumulation in areas of a geographic grid%s", where);
	check_parts_in_strips(name, &op, tiles);
	op.units = TG_UNITS_SCA;
	op.flow.fill = false;
	snprintf(name, sizeof name, "d8 accumulation in sca of a geographic grid, the DEM as it is%s", where);
	check_parts_in_strips(name, &op, tiles);
	op = base_op(TG_OP_HYDROLOGY);
	op.units = TG_UNITS_AREA;
	geographic(&op);
	snprintf(name, sizeof name, "d8 hydrology in areas of a geographic grid%s", where);
	check_parts_in_strips(name, &op, tiles);
}

/*
 * A tamper hook: the first link reply with an exit has that exit's receiver
 * moved a whole grid above it (outside every part), its cells as they were.
 */
static void
receiver_off_grid(void *arg, int step, parts_bytes_kind kind, int part, tg_part_bytes *b)
{
	/* a reply: magic (4), type (its phase | 0x80), operation; then the count of exits and their cells */
	const size_t header = 6,
				cells = header + sizeof(uint64_t);
	bool	   *done = arg;
	uint64_t	nexits,
				v;
	size_t		at = cells,
				old,
				len;
	uint8_t		off[10];
	uint8_t    *out;

	if (*done || kind != PARTS_REPLY || b->size < cells || b->data[4] != (TG_PART_LINK | 0x80))
		return;
	memcpy(&nexits, b->data + header, sizeof nexits);
	if (nexits == 0)
		return;
	for (uint64_t e = 0; e < nexits; e++)
		at += tg_varint_get(b->data + at, b->size - at, &v);
	/* the first receiver, as its difference from its exit: zigzag of -2^40 */
	old = tg_varint_get(b->data + at, b->size - at, &v);
	len = tg_varint_put(((uint64_t) 1 << 41) - 1, off);
	out = malloc(b->size - old + len);
	memcpy(out, b->data, at);
	memcpy(out + at, off, len);
	memcpy(out + at + len, b->data + at + old, b->size - at - old);
	b->size = b->size - old + len;
	free(b->data);
	b->data = out;
	*done = true;
}

/* A link reply naming a receiver outside the grid is refused, not followed. */
static void
test_parts_link_off_grid(coverage *tiles)
{
	static const int given[NPARTS] = {0, 1, 2};
	coverage   *parts = malloc(NPARTS * sizeof(coverage));
	const tg_op op = base_op(TG_OP_ACCUMULATION);
	bool		done = false;
	const parts_tamper off_grid = {receiver_off_grid, &done};
	results		r[NPARTS];
	tg_error	err;
	int			rounds[2];

	for (int k = 0; k < NPARTS; k++)
		make_part(tiles, k, &parts[k]);
	memset(r, 0, sizeof r);
	check(run_parts(parts, given, NPARTS, &op, r, rounds, &off_grid, &err) == TG_EDATA && done &&
		  strstr(err.message, "link reply") != NULL,
		  "a link reply whose exit drains off the grid is refused: %s", err.message);
	for (int k = 0; k < NPARTS; k++)
		res_free(&r[k]);
	free(parts);
}

static void
test_parts(coverage *tiles)
{
	static const int gap[2] = {0, 2};
	const size_t usual_bulk = tg_seam_flat_bulk_cells;
	const int	usual_scan = tg_part_scan_rows;
	coverage   *parts = malloc(NPARTS * sizeof(coverage));
	tg_op		op = base_op(TG_OP_FILL);
	tg_part		part = {{(uint8_t *) "TGP1", 4}, {NULL, 0}, {test_alloc, test_free, NULL}, NULL};
	results		r[NPARTS],
				none;
	tg_error	err;
	int			rounds[2];

	/* parts scanned in sub-strips of 3 rows (their labels cut down before they leave), their crossing flats' distances in strips of 3 */
	tg_part_scan_rows = 3;
	tg_flat_block_rows = 3;
	check_parts("fill", &op, tiles);
	op = base_op(TG_OP_SLOPE);
	op.slope_units = TG_SLOPE_PERCENT;
	check_parts("slope", &op, tiles);
	op = base_op(TG_OP_DIRECTIONS);
	op.directions = TG_DIRECTIONS_CODES;
	check_parts("d8 directions of the filled DEM", &op, tiles);
	/* the parts' crossing flats scanned and walked level by level instead of searched one by one */
	tg_seam_flat_bulk_cells = 1;
	check_parts("d8 directions of the filled DEM, crossing flats scanned", &op, tiles);
	tg_seam_flat_bulk_cells = usual_bulk;
	check_d8_parts(tiles, "");
	/* the splitting routings: flow rounds instead of D8's link */
	parts_left_out = 0;
	for (int k = 0; k < 5; k++)
	{
		static const tg_routing routings[5] = {TG_ROUTE_MFD_MD, TG_ROUTE_FD8, TG_ROUTE_FDD8, TG_ROUTE_DINF,
		TG_ROUTE_ANISOTROPIC};
		static const char *const names[5] = {"mfd-md", "fd8", "fdd8", "dinf (sca)", "anisotropic"};
		char		name[96];
		int			shallow,
					deep;

		op = base_op(TG_OP_ACCUMULATION);
		op.flow.routing = routings[k];
		op.flow.threshold = 40;
		op.flow.fill = k != 1;
		op.units = k == 3 ? TG_UNITS_SCA : TG_UNITS_CELLS;
		/* each part computing one row of each neighbour's, then the default's */
		tg_part_flow_halo = 1;
		snprintf(name, sizeof name, "%s accumulation of the %s, halo of 1 row", names[k],
				 op.flow.fill ? "filled DEM" : "DEM as it is");
		shallow = check_parts(name, &op, tiles);
		tg_part_flow_halo = 4;
		snprintf(name, sizeof name, "%s accumulation of the %s", names[k],
				 op.flow.fill ? "filled DEM" : "DEM as it is");
		deep = check_parts(name, &op, tiles);
		/*
		 * water that crosses a boundary back and forth: more rounds than the
		 * routing's, the first sums' and the settled one; fewer where the
		 * crossings stay within the halo
		 */
		check(shallow > 3 && deep < shallow, "%s: %d rounds with a halo of 4 rows, %d with 1", name, deep, shallow);
	}
	/* a part whose neighbours handed it nothing in a round sits the next one out */
	check(parts_left_out > 0, "the splitting routings: %d parts left out of a flow round", parts_left_out);
	/* areas that differ by row (the rows around each part weigh as the grid's rows there) */
	op = base_op(TG_OP_ACCUMULATION);
	op.flow.routing = TG_ROUTE_MFD_MD;
	op.units = TG_UNITS_AREA;
	geographic(&op);
	check_parts("mfd-md accumulation in areas of a geographic grid", &op, tiles);
	/* a halo deeper than a part: as deep as the shortest part allows */
	tg_part_flow_halo = 1000;
	op = base_op(TG_OP_ACCUMULATION);
	op.flow.routing = TG_ROUTE_MFD_MD;
	/* every crossing within it: nothing waits for a value after the sums (routing, sums) */
	check(check_parts("mfd-md accumulation, halo deeper than the parts", &op, tiles) == 2,
		  "a halo as deep as the parts: the flow settles in 2 rounds");
	tg_part_flow_halo = 4;
	/* fill, directions and accumulation in one call: three outputs per tile */
	op = base_op(TG_OP_HYDROLOGY);
	op.flow.routing = TG_ROUTE_FDD8;
	op.flow.threshold = 40;
	op.units = TG_UNITS_SCA;
	check_parts("fdd8 hydrology in sca", &op, tiles);
	/* and each part flooded whole */
	tg_part_scan_rows = 1 << 20;
	op = base_op(TG_OP_FILL);
	check_parts("fill, parts scanned whole", &op, tiles);
	op = base_op(TG_OP_HYDROLOGY);
	check_parts("d8 hydrology, parts scanned whole", &op, tiles);
	tg_part_scan_rows = usual_scan;
	tg_flat_block_rows = 64;

	/*
	 * Parts whose rows of tiles do not span the grid, as raster2pgsql leaves
	 * out tiles of nodata alone: the first part lacks the first column of
	 * tiles, the last part the last; each describes only its own columns.
	 */
	{
		coverage   *ragged = malloc(sizeof *ragged);
		int			n = 0;

		*ragged = *tiles;
		for (int t = 0; t < tiles->layout.ntiles; t++)
		{
			const tg_tile_place *p = &tiles->places[t];

			if ((p->col0 == 0 && p->row0 < 4 * TILE_H) || (p->col0 + p->width == GW && p->row0 >= 8 * TILE_H))
				continue;
			ragged->places[n] = *p;
			ragged->tiles[n++] = tiles->tiles[t];
		}
		ragged->layout.ntiles = n;
		ragged->layout.tiles = ragged->places;
		op = base_op(TG_OP_FILL);
		check_parts("fill of ragged parts", &op, ragged);
		op = base_op(TG_OP_ACCUMULATION);
		check_parts("d8 accumulation of ragged parts", &op, ragged);
		op.flow.routing = TG_ROUTE_MFD_MD;
		op.flow.threshold = 40;
		check_parts("mfd-md accumulation of ragged parts", &op, ragged);
		op = base_op(TG_OP_HYDROLOGY);
		check_parts("d8 hydrology of ragged parts", &op, ragged);
		op = base_op(TG_OP_SLOPE);
		check_parts("slope of ragged parts", &op, ragged);
		free(ragged);
	}

	for (int k = 0; k < NPARTS; k++)
		make_part(tiles, k, &parts[k]);
	/* a part missing in the middle: the others do not meet */
	op = base_op(TG_OP_FILL);
	check(run_parts(parts, gap, 2, &op, r, rounds, NULL, &err) == TG_EDATA && strstr(err.message, "do not meet") != NULL,
		  "parts with a gap between them are refused: %s", err.message);
	/* what cannot run over parts says so; a truncated message is refused */
	op = base_op(TG_OP_ACCUMULATION);
	op.flow.routing = TG_ROUTE_MFD_MD;
	op.weight_input = 1;
	check(run_job(&parts[0], NULL, &op, 1, SIZE_MAX, false, false, &part, &none, NULL, &err) == TG_EUNSUPPORTED &&
		  strstr(err.message, "no weight") != NULL, "weighted accumulation over parts: %s", err.message);
	res_free(&none);
	op = base_op(TG_OP_FILL);
	check(run_job(&parts[0], NULL, &op, 1, SIZE_MAX, false, false, &part, &none, NULL, &err) == TG_EDATA,
		  "a truncated part message is refused: %s", err.message);
	res_free(&none);
	op.epsilon = 0.01;
	check(run_job(&parts[0], NULL, &op, 1, SIZE_MAX, false, false, &part, &none, NULL, &err) == TG_EUNSUPPORTED,
		  "a fill with epsilon over parts: %s", err.message);
	res_free(&none);
	free(parts);
}

/*
 * On a GPU, the flow products written as tiles while they come back in bands
 * of two rows of tiles equal, tile for tile, the same call's products copied
 * back whole first (a room too small for one row of tiles), and D8's equal
 * the CPU's.
 */
/*
 * The parts on the GPU (their link: routing with the crossing flats' masks
 * and D8 accumulation on the device) against the CPU's runs: in memory in
 * cells, in strips of the parts' rows in areas.
 */
static void
test_parts_on_gpu(coverage *tiles)
{
	const int	usual_scan = tg_part_scan_rows;
	tg_device_info info;

	tg_device_query(0, &info);
	if (!info.available)
	{
		printf("skipped: parts linked on the GPU (no GPU)\n");
		return;
	}
	parts_backend = TG_BACKEND_GPU;
	tg_part_scan_rows = 3;
	tg_flat_block_rows = 3;
	check_d8_parts(tiles, ", parts on the GPU");
	tg_part_scan_rows = usual_scan;
	tg_flat_block_rows = 64;
	parts_backend = TG_BACKEND_CPU;
}

/*
 * The strips' routing surface between their passes: kept in memory where the
 * tallest strip leaves room for it in the budget, moved to the spill once the
 * flats that cross strips need that room (and back once they are solved,
 * where it fits beside what they keep), in the spill from the start where
 * there is none; the solved crossing flats parked in the spill where they do
 * not fit beside a strip (multiple flow: after the shares spread there).
 * Over budgets from 8 % to 60 % of the one grid's, each way is taken at
 * least once and every run's tiles equal the one grid's (multiple flow's
 * accumulation to rounding).
 */
static void
test_strips_surface(coverage *tiles)
{
	for (int routing = 0; routing < 2; routing++)
	{
		tg_op		op = base_op(TG_OP_HYDROLOGY);
		size_t		full;
		results		ref,
					r;
		tg_run_stats stats;
		tg_error	err;
		int			kept = 0,
					moved = 0,
					back = 0,
					spilled = 0,
					parked = 0,
					differ = 0;

		op.flow.routing = routing ? TG_ROUTE_MFD_MD : TG_ROUTE_D8;
		full = (size_t) GW * GH * tg_op_bytes_per_cell(&op, false);
		check(run_on(tiles, NULL, &op, 2, SIZE_MAX, false, false, &ref, NULL, &err) == TG_OK, "reference: %s",
			  err.message);
		for (int percent = 8; percent <= 60; percent++)
		{
			if (run_on(tiles, NULL, &op, 2, full * percent / 100, false, false, &r, &stats, &err) != TG_OK)
				continue;		/* not even a row of tiles fits */
			parked += strstr(stats.note, "crossing flats between strips in the temporary file") != NULL;
			back += strstr(stats.note, "while the crossing flats were solved") != NULL;
			if (strstr(stats.note, "moved to the temporary file") || strstr(stats.note, "while the crossing flats"))
				moved++;
			else if (strstr(stats.note, "kept in memory"))
				kept++;
			else if (strstr(stats.note, "strips of at most"))
				spilled++;
			/* multiple flow sums in another order: to rounding */
			differ += routing ? !same_outputs(tiles, &ref, &r, 0, tg_op_outputs(&op) - 1) ||
				cells_apart(tiles, &ref, &r, tg_op_outputs(&op) - 1) >= 1e-12
				: !same_tiles(tiles, &ref, &r, tg_op_outputs(&op));
			res_free(&r);
		}
		check(differ == 0 && (routing || (kept > 0 && moved > 0 && back > 0)) && spilled > 0 && parked > 0,
			  "routing %s: the strips' surface kept in memory in %d runs, moved to the spill in %d (back after "
			  "the crossing flats' solve in %d), spilled from the start in %d; the crossing flats parked in the "
			  "spill in %d: %d runs' tiles differ from the one grid's", routing ? "mfd-md" : "d8", kept, moved, back,
			  spilled, parked, differ);
		res_free(&ref);
	}
}

/*
 * Strips sized to the device (strips.c): where the device takes fewer rows
 * than the host budget gives a strip, the GPU still takes every strip's D8
 * step, in more strips, the surface between the passes held in the room the
 * budget leaves (until the crossing flats need it), and the tiles equal the
 * CPU's in memory.  Where the GPU takes the steps the host holds less of a
 * strip: the surface is kept in memory (until the crossing flats need the
 * room) at budgets where the CPU's steps leave no room for it (a step the device could not hold run again on the
 * CPU once the surface moved out), the tiles again the one grid's.
 */
static void
test_strips_on_small_device(coverage *tiles)
{
	const tg_op op = base_op(TG_OP_HYDROLOGY);
	const size_t budget = (size_t) GW * GH * tg_op_bytes_per_cell(&op, false) / 3;
	tg_flow_params p = op.flow;
	tg_device_info info;
	results		ref,
				host,
				small;
	tg_run_stats stats;
	tg_error	err;
	tg_ctx		probe;
	int64_t		rows = 0;
	int			host_strips = 0,
				host_rows = 0,
				small_strips = 0,
				small_rows = 0,
				kept[2] = {0, 0},
				again = 0,
				differ = 0;

	tg_device_query(0, &info);
	if (!info.available)
	{
		printf("skipped: strips sized to the device (no GPU)\n");
		return;
	}
	check(run_on(tiles, NULL, &op, 2, SIZE_MAX, false, false, &ref, NULL, &err) == TG_OK, "reference: %s",
		  err.message);
	/* the CPU's strips within the budget */
	check(run_on(tiles, NULL, &op, 2, budget, false, false, &host, &stats, &err) == TG_OK &&
		  sscanf(stats.note, "%d strips of at most %d rows", &host_strips, &host_rows) == 2,
		  "strips within the budget: %s (%s)", stats.note, err.message);
	/* the smallest limit that takes a row of tiles: the one grid does not fit it, a strip of a tile row does */
	tg_ctx_init(&probe);
	p.fill = false;
	for (probe.device_memory_limit = 1 << 16; rows < TILE_H && probe.device_memory_limit < (1u << 30);
		 probe.device_memory_limit *= 2)
		check(tg_cuda_part_d8_rows(&probe, GW, &p, &rows, &err) == TG_OK, "rows on the device: %s", err.message);
	run_device_limit = probe.device_memory_limit / 2;
	run_backend = TG_BACKEND_GPU;
	check(run_on(tiles, NULL, &op, 2, budget, false, false, &small, &stats, &err) == TG_OK &&
		  sscanf(stats.note, "%d strips of at most %d rows", &small_strips, &small_rows) == 2 &&
		  strstr(stats.note, "within the GPU's memory; each strip's fill, crossing flats, D8 routing and accumulation "
				 "on the GPU") &&
		  (strstr(stats.note, "the surface between passes kept in memory") ||
		   strstr(stats.note, "the surface between passes moved to the temporary file")) &&
		  small_rows == rows && small_rows < host_rows && small_strips > host_strips &&
		  same_tiles(tiles, &ref, &small, tg_op_outputs(&op)) && same_tiles(tiles, &ref, &host, tg_op_outputs(&op)),
		  "strips sized to a device of %zu bytes: %s (%d rows there; the CPU's within the budget: %d strips of %d rows)",
		  run_device_limit, stats.note, (int) rows, host_strips, host_rows);
	run_device_limit = 0;
	res_free(&small);
	for (int percent = 4; percent <= 40; percent++)
	{
		bool		in_memory[2] = {false, false},
					in_strips = true;

		for (int gpu = 0; gpu < 2; gpu++)
		{
			run_backend = gpu ? TG_BACKEND_AUTO : TG_BACKEND_CPU;
			if (run_on(tiles, NULL, &op, 2, budget * percent / 33, false, false, &small, &stats, &err) != TG_OK)
			{
				in_strips = false;	/* not even a row of tiles fits */
				continue;
			}
			in_strips &= strstr(stats.note, "strips of at most") != NULL;
			in_memory[gpu] = strstr(stats.note, "kept in memory") || strstr(stats.note, "moved to the temporary file");
			again += strstr(stats.note, "for a step the device could not hold") != NULL;
			differ += !same_tiles(tiles, &ref, &small, tg_op_outputs(&op));
			res_free(&small);
		}
		kept[0] += in_strips && in_memory[1] && !in_memory[0];
		kept[1] += in_strips && in_memory[0] && !in_memory[1];
	}
	check(differ == 0 && kept[0] > 0 && kept[1] == 0,
		  "budgets where both run in strips: the surface in memory after the fill with the GPU's steps alone in %d, "
		  "on the CPU alone in %d (%d steps run again after it moved out); %d runs' tiles differ from the one "
		  "grid's", kept[0], kept[1], again, differ);
	run_backend = TG_BACKEND_CPU;
	res_free(&ref);
	res_free(&host);
}

/*
 * A viewshed within max_distance reads only the tiles tg_op_reach names:
 * its tiles are those of the squares around its observers, and a DEM
 * raised everywhere else gives the same result tiles, byte for byte, while
 * a raise within the reach changes some.  Without max_distance any tile
 * may matter.
 */
static void
test_viewshed_reach(const int16_t *dem)
{
	static const int cols[2] = {40, 180},
				rows[2] = {30, 150};
	coverage   *c = malloc(sizeof *c),
			   *raised = malloc(sizeof *raised);
	int16_t    *z = malloc(sizeof(int16_t) * GW * GH);
	tg_op		op = base_op(TG_OP_VIEWSHED_COUNT);
	bool		in_reach[128];
	results		before,
				after;
	tg_error	err;

	op.nobservers = 2;
	op.observer_cols = cols;
	op.observer_rows = rows;
	op.view.max_distance = 200;	/* 7 cells of 30 */
	make_coverage(c, dem, true);
	check(tg_op_reach(&op, &c->layout, in_reach), "a cumulative viewshed within max_distance has a reach");
	for (int t = 0; t < c->layout.ntiles; t++)
	{
		const tg_tile_place *pl = &c->layout.tiles[t];
		bool		near = false;

		for (int k = 0; k < 2; k++)
			near |= pl->col0 <= cols[k] + 7 && cols[k] - 7 < pl->col0 + pl->width &&
				pl->row0 <= rows[k] + 7 && rows[k] - 7 < pl->row0 + pl->height;
		check(in_reach[t] == near, "tile %d (%lld, %lld): in reach %d, within 7 cells of an observer %d", t,
			  (long long) pl->col0, (long long) pl->row0, in_reach[t], near);
	}
	for (int inside = 0; inside < 2; inside++)
	{
		size_t		raised_cells = 0;

		memcpy(z, dem, sizeof(int16_t) * GW * GH);
		for (int t = 0; t < c->layout.ntiles; t++)
			if (in_reach[t] == (inside == 1))
				for (int y = (int) c->layout.tiles[t].row0; y < c->layout.tiles[t].row0 + c->layout.tiles[t].height; y++)
					for (int x = (int) c->layout.tiles[t].col0; x < c->layout.tiles[t].col0 + c->layout.tiles[t].width; x++)
						if (z[(size_t) y * GW + x] != ND && (x != cols[0] || y != rows[0]) && (x != cols[1] || y != rows[1]))
						{
							z[(size_t) y * GW + x] += 400;
							raised_cells++;
						}
		make_coverage(raised, z, true);
		check(run_on(c, NULL, &op, 2, SIZE_MAX, false, false, &before, NULL, &err) == TG_OK &&
			  run_on(raised, NULL, &op, 2, SIZE_MAX, false, false, &after, NULL, &err) == TG_OK &&
			  same_tiles(c, &before, &after, 1) == (inside == 0),
			  "cumulative viewshed, %zu cells raised %s its reach: the same tiles %s", raised_cells,
			  inside ? "within" : "beyond", inside ? "no more" : "as before");
		res_free(&before);
		res_free(&after);
		for (int t = 0; t < raised->layout.ntiles; t++)
			free(raised->tiles[t].bytes);
	}
	op.view.max_distance = 0;
	check(!tg_op_reach(&op, &c->layout, in_reach), "an unlimited viewshed has no reach");
	op = base_op(TG_OP_SLOPE);
	check(!tg_op_reach(&op, &c->layout, in_reach), "slope has no reach (a halo)");
	for (int t = 0; t < c->layout.ntiles; t++)
		free(c->tiles[t].bytes);
	free(c);
	free(raised);
	free(z);
}

/*
 * The memory check's table (ops.c): a call whose estimate fits the budget
 * exactly runs as one grid, never refused nor sent to strips, and the host
 * memory it measured at its peak (tg_last_run's peak_host_bytes) stays
 * within that estimate, on 1 and 4 threads, over the tiles and over the
 * one-tile mosaic; the GPU's one-grid path holds less on the host.
 */
static void
test_memory_estimates(coverage *tiles, coverage *whole)
{
	static const tg_op_kind kinds[] = {TG_OP_SLOPE, TG_OP_FILL, TG_OP_DIRECTIONS, TG_OP_ACCUMULATION,
	TG_OP_HYDROLOGY};
	const size_t cells = (size_t) GW * GH,
				tracked = tg_tracked_bytes;

	tg_tracked_bytes = 4096;	/* the test grid's planes are under a megabyte */
	for (int k = 0; k < (int) (sizeof kinds / sizeof kinds[0]); k++)
		for (int r = 0; r < 2; r++)
		{
			tg_op		op = base_op(kinds[k]);
			tg_op_memory m;
			size_t		estimate;

			op.flow.routing = r ? TG_ROUTE_MFD_MD : TG_ROUTE_D8;
			m = tg_op_memory_of(&op);
			estimate = cells * m.cpu;
			for (int pass = 0; pass < 4; pass++)
			{
				coverage   *c = pass < 2 ? tiles : whole;
				const int	threads = pass % 2 ? 4 : 1;
				results		res;
				tg_run_stats stats;
				tg_error	err;
				tg_status	st = run_on(c, NULL, &op, threads, estimate, false, c == whole, &res, &stats, &err);

				check(st == TG_OK && res.written == c->layout.ntiles && strstr(stats.note, "strips") == NULL,
					  "op %d routing %d pass %d: a call whose estimate (%zu bytes) fits is run as one grid: %s %s",
					  (int) kinds[k], r, pass, estimate, err.message, stats.note);
				check(stats.peak_host_bytes > cells && stats.peak_host_bytes <= estimate,
					  "op %d routing %d, %d threads: measured peak %zu bytes (%.1f a cell) within the estimate %zu (%zu a cell)",
					  (int) kinds[k], r, threads, stats.peak_host_bytes,
					  (double) stats.peak_host_bytes / cells, estimate, m.cpu);
				if (pass == 1)
					printf("memory: op %d routing %s on 4 threads: peak %.1f host bytes a cell, estimate %zu\n",
						   (int) kinds[k], r ? "mfd-md" : "d8", (double) stats.peak_host_bytes / cells, m.cpu);
				res_free(&res);
			}
			check(m.gpu_host < m.cpu && m.gpu_device > 0,
				  "op %d: the GPU path holds %zu bytes a cell on the host (CPU %zu), %zu on the device",
				  (int) kinds[k], m.gpu_host, m.cpu, m.gpu_device);
		}
	/* the target of the one-grid GPU path: 2 x 10^9 cells of tg_hydrology D8 in 64 GB of host memory */
	{
		tg_op		op = base_op(TG_OP_HYDROLOGY);

		check(tg_op_bytes_per_cell(&op, true) <= 24 && tg_op_bytes_per_cell(&op, false) == tg_op_memory_of(&op).cpu,
			  "tg_hydrology d8 on the GPU: %zu host bytes a cell", tg_op_bytes_per_cell(&op, true));
	}
	tg_tracked_bytes = tracked;
}

/*
 * On the GPU, the flow products streamed into the tiles band by band: two
 * rows of tiles a band in the shared staging, one a band in staging of the
 * call's own (the last band short), the same tiles, the CPU's for D8; no
 * product plane held on the host.
 */
static void
test_streamed_tiles(coverage *tiles, coverage *weights)
{
	tg_device_info info;
	tg_op		ops[4];
	static const char *const names[4] = {"hydrology d8", "hydrology mfd-md", "accumulation d8 sca",
	"accumulation mfd-md weighted"};
	const size_t tracked = tg_tracked_bytes;

	tg_device_query(0, &info);
	if (!info.available)
	{
		printf("skipped: tiles written as the GPU's products come back (no GPU)\n");
		return;
	}
	ops[0] = base_op(TG_OP_HYDROLOGY);
	ops[1] = ops[0];
	ops[1].flow.routing = TG_ROUTE_MFD_MD;
	ops[2] = base_op(TG_OP_ACCUMULATION);
	ops[2].units = TG_UNITS_SCA;
	ops[3] = base_op(TG_OP_ACCUMULATION);
	ops[3].flow.routing = TG_ROUTE_MFD_MD;
	ops[3].weight_input = 1;
	ops[3].weight_band = 1;
	ops[3].units = TG_UNITS_AREA;
	tg_tracked_bytes = 4096;	/* the test grid's planes are under a megabyte */
	for (int k = 0; k < 4; k++)
	{
		const bool	d8 = ops[k].flow.routing == TG_ROUTE_D8;
		const size_t cells = (size_t) GW * GH,
					held = cells * tg_op_bytes_per_cell(&ops[k], true);
		coverage   *w = ops[k].weight_input ? weights : NULL;
		results		shared,
					own,
					cpu;
		tg_run_stats stats;
		tg_error	err;
		bool		same = true;
		int			bands_shared,
					bands_own;
		tg_status	st1,
					st2,
					st3 = TG_OK;

		run_backend = TG_BACKEND_GPU;
		memset(&stats, 0, sizeof stats);
		/* two rows of tiles of the products in the shared block: the filled int16 DEM as 32BF, receivers, accumulation */
		tg_stream_slice_bytes = (size_t) 2 * TILE_H * GW * (ops[k].kind == TG_OP_HYDROLOGY ? 4 + 2 + 8 : 8) + 3 * 64;
		encode_starts = 0;
		st1 = run_on(tiles, w, &ops[k], 0, SIZE_MAX, true, false, &shared, &stats, &err);
		bands_shared = encode_starts;
		/* not one row of tiles in the shared block: staging of the call's own, a row of tiles a band */
		tg_stream_slice_bytes = 1;
		encode_starts = 0;
		st2 = run_on(tiles, w, &ops[k], 0, SIZE_MAX, true, false, &own, NULL, &err);
		bands_own = encode_starts;
		check(!write_went_back && write_last == 1.0,
			  "cuda %s: the write's progress over %d bands counts up once, to %g", names[k], bands_own, write_last);
		run_backend = TG_BACKEND_CPU;
		tg_stream_slice_bytes = 0;
		if (d8)
			st3 = run_on(tiles, w, &ops[k], 0, SIZE_MAX, true, false, &cpu, NULL, &err);
		for (int t = 0; t < tiles->layout.ntiles; t++)
			for (int o = 0; o < tg_op_outputs(&ops[k]); o++)
				same = same && shared.size[t][o] == own.size[t][o] &&
					memcmp(shared.tile[t][o] + 4, own.tile[t][o] + 4, own.size[t][o] - 4) == 0 &&
					(!d8 || (shared.size[t][o] == cpu.size[t][o] &&
							 memcmp(shared.tile[t][o] + 4, cpu.tile[t][o] + 4, cpu.size[t][o] - 4) == 0));
		check(st1 == TG_OK && st2 == TG_OK && st3 == TG_OK && shared.in_order && own.in_order &&
			  shared.written == tiles->layout.ntiles && own.written == tiles->layout.ntiles &&
			  stats.backend == TG_BACKEND_GPU && bands_shared == (GH + 2 * TILE_H - 1) / (2 * TILE_H) &&
			  bands_own == (GH + TILE_H - 1) / TILE_H && same,
			  "cuda %s: tiles written as the products come back in %d bands of the shared staging equal those of %d bands of the call's own (the last %d rows)%s",
			  names[k], bands_shared, bands_own, GH - (GH - 1) / TILE_H * TILE_H, d8 ? " and the CPU's" : "");
		/* no product plane on the host: the DEM (int16 here) and the weights alone */
		check(stats.peak_host_bytes > 0 && stats.peak_host_bytes <= held,
			  "cuda %s: the streamed call's host peak %zu bytes (%.1f a cell) within the table's %zu a cell",
			  names[k], stats.peak_host_bytes, (double) stats.peak_host_bytes / cells,
			  tg_op_bytes_per_cell(&ops[k], true));
		res_free(&shared);
		res_free(&own);
		if (d8)
			res_free(&cpu);
	}
	tg_tracked_bytes = tracked;
}

/*
 * A writer failing on a tile: the batch after it is being encoded while the
 * calling thread hands the tiles over; the call stops with the writer's
 * error, nothing is handed after it, nothing leaks.
 */
static void
test_writer_failing(coverage *tiles)
{
	tg_op		op;

	for (int threads = 1; threads <= 4; threads *= 2)
		for (int at = 1; at <= 21; at += 10)
			for (int keep = 0; keep <= 1; keep++)
			{
				results		r;
				tg_error	err;
				tg_status	st;

				op = base_op(TG_OP_HYDROLOGY);
				writer_fails_at = at;
				st = run_on(tiles, NULL, &op, threads, (size_t) 1 << 30, true, keep, &r, NULL, &err);
				writer_fails_at = 0;
				check(st == TG_ECALLBACK && r.written == at - 1 && r.in_order &&
					  strstr(err.message, "the writer failed") != NULL,
					  "writer failing on tile %d, %d threads, keep %d: status %d, %d handed over (%s)", at,
					  threads, keep, st, r.written, err.message);
				res_free(&r);
			}
}

/*
 * A local operation asked for some tiles only (a refresh) computes the
 * window of those tiles: each tile written equals the full run's byte for
 * byte, no other is written, on the CPU and, where built, the GPU; for the
 * slope (a halo of one cell) and the geomorphons (of their search radius,
 * more than a tile's height).
 */
static void
test_wanted_window(coverage *tiles)
{
	const tg_layout *l = &tiles->layout;
	const int	cols = (GW + TILE_W - 1) / TILE_W;
	/* a 2 x 2 block, one tile, the first row, the last (shorter) row, all but one, the last (narrower) column, the left edge */
	const char *names[] = {"a block", "one tile", "the first row", "the last row", "all but one", "the last column",
	"a tile at the left edge"};
	tg_device_info info;
	tg_error	err;

	tg_device_query(0, &info);
	for (int o = 0; o < 2; o++)
	{
		tg_op		op = base_op(o == 0 ? TG_OP_SLOPE : TG_OP_TERRAIN);
		results		full;

		if (o == 1)
		{
			op.terrain.nproducts = 1;
			op.terrain.products[0] = TG_TERRAIN_GEOMORPHONS;
			op.terrain.types[0] = TG_PT_8BUI;
			op.terrain.scale = 1;
			op.terrain.search_radius = 21;
			op.terrain.flat_threshold = 1;
		}
		run_backend = TG_BACKEND_CPU;
		check(run_on(tiles, NULL, &op, 2, SIZE_MAX, true, false, &full, NULL, &err) == TG_OK,
			  "wanted window: the full run: %s", err.message);
		for (int c = 0; c < 7; c++)
			for (int b = 0; b < 2; b++)
			{
				bool		wanted[128];
				results		r;
				tg_run_stats stats;
				int			asked = 0,
							same = 0,
							extra = 0;

				for (int t = 0; t < l->ntiles; t++)
				{
					const int	row = l->tiles[t].row0 / TILE_H,
								col = l->tiles[t].col0 / TILE_W;

					wanted[t] = c == 0 ? (row == 4 || row == 5) && (col == 1 || col == 2)
						: c == 1 ? t == cols * 6 + 3
						: c == 2 ? row == 0 : c == 3 ? row == (GH - 1) / TILE_H
						: c == 4 ? t != 17 : c == 5 ? col == cols - 1 : row == 7 && col == 0;
					asked += wanted[t];
				}
				run_backend = b ? TG_BACKEND_GPU : TG_BACKEND_CPU;
				if (b && !info.available)
					continue;
				run_wanted = wanted;
				memset(&stats, 0, sizeof stats);
				check(run_on(tiles, NULL, &op, 2, SIZE_MAX, true, false, &r, &stats, &err) == TG_OK,
					  "wanted window, %s: %s", names[c], err.message);
				run_wanted = NULL;
				for (int t = 0; t < l->ntiles; t++)
					if (!wanted[t])
						extra += r.tile[t][0] != NULL;
					else
						same += r.tile[t][0] && r.size[t][0] == full.size[t][0] &&
							memcmp(r.tile[t][0] + 4, full.tile[t][0] + 4, full.size[t][0] - 4) == 0;
				check(r.written == asked && same == asked && extra == 0 && r.in_order &&
					  (c == 4 || strstr(stats.note, "those of the tiles asked for") != NULL),
					  "wanted window, %s of the %s on the %s: %d of %d tiles equal the full run's, %d not asked for written (%s)",
					  names[c], o ? "geomorphons" : "slope", b ? "GPU" : "CPU", same, asked, extra, stats.note);
				res_free(&r);
			}
		res_free(&full);
	}
	run_backend = TG_BACKEND_CPU;
}

void
test_run(void)
{
	int16_t    *dem = malloc(sizeof(int16_t) * GW * GH);
	coverage   *tiles = malloc(sizeof *tiles),
			   *whole = malloc(sizeof *whole),
			   *weights = malloc(sizeof *weights);
	tg_op		op;
	static const int obs_cols[2] = {40, 180},
				obs_rows[2] = {30, 150};

	rng_state = 4242;
	for (int y = 0; y < GH; y++)
		for (int x = 0; x < GW; x++)
		{
			double		v = 500 + 120 * sin(x / 19.0) * cos(y / 23.0) + 0.3 * y + 30 * rng_uniform();

			if (x < 40 && y > 150)
				v = 100;		/* a lake: a flat crossing strips */
			if (x >= 150 && x < 200 && y >= 50 && y < 140)
				v = 120;		/* a pit: once filled, a flat crossing two part boundaries */
			if (x >= 150 && x < 200 && ((y == 65 && x >= 152) || y == 126))
				v = 1000;		/* and within the middle part, walled in but for one gap, */
			if (x >= 153 && x < 198 && (x - 153) % 3 == 0 && y > 65 && y < 126 &&
				(((x - 153) / 3) % 2 == 0 ? y < 123 : y > 68))
				v = 1000;		/* a serpentine that no few raster scans resolve */
			if ((x * 13 + y * 7) % 211 == 0 && !(x >= 150 && x < 200 && y >= 65 && y <= 126))
				v = ND;
			dem[(size_t) y * GW + x] = (int16_t) v;
		}
	make_coverage(tiles, dem, true);
	/* the mosaic holds nodata where the tiles lack one */
	for (int y = TILE_H; y < 2 * TILE_H; y++)
		for (int x = 2 * TILE_W; x < 3 * TILE_W; x++)
			dem[(size_t) y * GW + x] = (int16_t) ND;
	make_coverage(whole, dem, false);
	/* the weights: the DEM's own tiles (another coverage on the same grid) */
	make_coverage(weights, dem, true);

	op = base_op(TG_OP_SLOPE);
	check_op("slope", &op, tiles, whole, NULL, STRIPS_SAME);
	op = base_op(TG_OP_FILL);
	check_op("fill", &op, tiles, whole, NULL, STRIPS_SAME);
	op = base_op(TG_OP_DIRECTIONS);
	op.directions = TG_DIRECTIONS_CODES;
	check_op("directions d8", &op, tiles, whole, NULL, STRIPS_SAME);
	op.flow.routing = TG_ROUTE_MFD_MD;
	op.directions = TG_DIRECTIONS_MASK;
	check_op("directions mfd-md mask", &op, tiles, whole, NULL, STRIPS_SAME);
	op.directions = TG_DIRECTIONS_SHARES;
	check_op("directions mfd-md shares", &op, tiles, whole, NULL, STRIPS_SAME);
	op = base_op(TG_OP_ACCUMULATION);
	check_op("accumulation d8", &op, tiles, whole, NULL, STRIPS_SAME);
	op.weight_input = 1;
	op.weight_band = 1;
	op.units = TG_UNITS_AREA;
	check_op("accumulation d8 weighted", &op, tiles, whole, weights, NO_STRIPS);
	op.flow.routing = TG_ROUTE_MFD_MD;
	check_op("accumulation mfd-md weighted", &op, tiles, whole, weights, STRIPS_ROUNDING);
	op = base_op(TG_OP_ACCUMULATION);
	op.flow.routing = TG_ROUTE_MFD_MD;
	check_op("accumulation mfd-md", &op, tiles, whole, NULL, STRIPS_ROUNDING);
	op.flow.routing = TG_ROUTE_DINF;
	op.units = TG_UNITS_SCA;
	check_op("accumulation dinf sca", &op, tiles, whole, NULL, STRIPS_ROUNDING);
	op = base_op(TG_OP_HYDROLOGY);
	check_op("hydrology d8", &op, tiles, whole, NULL, STRIPS_SAME);
	op.flow.routing = TG_ROUTE_MFD_MD;
	check_op("hydrology mfd-md", &op, tiles, whole, NULL, STRIPS_ROUNDING);
	op = base_op(TG_OP_RUSLE);
	op.flow.routing = TG_ROUTE_MFD_MD;
	check_op("rusle", &op, tiles, whole, NULL, NO_STRIPS);
	op = base_op(TG_OP_TRAVEL_TIME);
	check_op("travel time", &op, tiles, whole, NULL, NO_STRIPS);
	op = base_op(TG_OP_ISOCHRONE_BANDS);
	op.has_outlet = true;
	op.outlet_col = 5;
	op.outlet_row = 100;
	check_op("isochrone bands", &op, tiles, whole, NULL, NO_STRIPS);
	op.kind = TG_OP_WATERSHED;
	check_op("watershed", &op, tiles, whole, NULL, NO_STRIPS);
	op = base_op(TG_OP_VIEWSHED);
	op.view.observer_col = 60;
	op.view.observer_row = 130;
	op.view.output = TG_VIEW_ANGLE;
	check_op("viewshed", &op, tiles, whole, NULL, NO_STRIPS);
	op = base_op(TG_OP_VIEWSHED_COUNT);
	op.nobservers = 2;
	op.observer_cols = obs_cols;
	op.observer_rows = obs_rows;
	check_op("cumulative viewshed", &op, tiles, whole, NULL, NO_STRIPS);
	test_parts(tiles);
	test_parts_link_off_grid(tiles);
	test_parts_on_gpu(tiles);
	test_strips_surface(tiles);
	test_strips_on_small_device(tiles);
	test_streamed_tiles(tiles, weights);
	test_memory_estimates(tiles, whole);
	test_viewshed_reach(dem);

	/* what cannot run in strips says so, before reading a pixel */
	{
		results		r;
		tg_error	err;

		op = base_op(TG_OP_ACCUMULATION);
		op.flow.routing = TG_ROUTE_FDD8;
		check(run_on(tiles, NULL, &op, 1, 1 << 20, false, false, &r, NULL, &err) == TG_ELIMIT &&
			  strstr(err.detail, "routing d8, fd8") != NULL && r.written == 0,
			  "fdd8 accumulation beyond the budget: %s / %s", err.message, err.detail);
		res_free(&r);
	}
	/* a run in memory tells the writer what it leaves of the budget, before any tile; strips tell nothing */
	{
		results		r;
		tg_error	err;
		size_t		need;

		op = base_op(TG_OP_HYDROLOGY);
		need = (size_t) GW * GH * tg_op_bytes_per_cell(&op, false);
		check(run_on(tiles, NULL, &op, 2, need + 12345, false, false, &r, NULL, &err) == TG_OK &&
			  r.room_calls == 1 && r.room == 12345 && r.written_at_room == 0 && r.written == tiles->layout.ntiles,
			  "room in memory: %d calls, %zu bytes, %d tiles before, %d written (%s)", r.room_calls, r.room,
			  r.written_at_room, r.written, err.message);
		res_free(&r);
		check(run_on(tiles, NULL, &op, 2, need / 3, false, false, &r, NULL, &err) == TG_OK &&
			  r.room_calls == 0 && r.written == tiles->layout.ntiles,
			  "room in strips: %d calls, %d written (%s)", r.room_calls, r.written, err.message);
		res_free(&r);
	}
	test_writer_failing(tiles);
	test_wanted_window(tiles);
	for (int t = 0; t < tiles->layout.ntiles; t++)
	{
		free(tiles->tiles[t].bytes);
		free(weights->tiles[t].bytes);
	}
	free(whole->tiles[0].bytes);
	free(tiles);
	free(whole);
	free(weights);
	free(dem);
}
