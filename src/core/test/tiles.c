/*
 * tiles.c — the core tests' coverage of tiles in memory (tiles.h).
 */
#include "tiles.h"

/* ------------------------------------------------------------------------
 * Serialized tiles and the callbacks over them
 * ------------------------------------------------------------------------ */


/* A raster of w x h int16 cells (rows y0.., columns x0.. of dem) georeferenced at its corner. */
static uint8_t *
serialize(const int16_t *dem, int x0, int y0, int w, int h, size_t *size)
{
	tg_raster_info info = {1, (uint16_t) w, (uint16_t) h,
	{30, -30, 500000 + 30.0 * x0, 4000000 - 30.0 * y0, 0, 0, 32611}};
	tg_band_spec spec = {TG_PT_16BSI, true, ND};
	void	   *data;
	uint8_t    *buf;
	tg_error	err;

	tg_error_clear(&err);
	tg_raster_size(&info, &spec, size, &err);
	buf = malloc(*size);
	tg_raster_write(buf, *size, &info, &spec, &data, &err);
	for (int y = 0; y < h; y++)
		memcpy((int16_t *) data + (size_t) y * w, dem + (size_t) (y0 + y) * GW + x0, w * sizeof(int16_t));
	return buf;
}

/* pglz of only literals: control byte 0, then eight bytes (valid, if no smaller) */
static uint8_t *
pglz_literals(const uint8_t *src, size_t n, size_t *size)
{
	uint8_t    *out = malloc(n + n / 8 + 2),
			   *p = out;

	for (size_t i = 0; i < n; i += 8)
	{
		*p++ = 0;
		for (size_t k = i; k < i + 8 && k < n; k++)
			*p++ = src[k];
	}
	*size = (size_t) (p - out);
	return out;
}

void
make_coverage(coverage *c, const int16_t *dem, bool tiled)
{
	int			n = 0;

	memset(c, 0, sizeof *c);
	c->layout.name = tiled ? "tiles" : "the raster";
	c->layout.width = GW;
	c->layout.height = GH;
	c->layout.geo = (tg_georef) {30, -30, 500000, 4000000, 0, 0, 32611};
	for (int y0 = 0; y0 < GH; y0 += tiled ? TILE_H : GH)
		for (int x0 = 0; x0 < GW; x0 += tiled ? TILE_W : GW)
		{
			const int	w = tiled && x0 + TILE_W < GW ? TILE_W : GW - x0,
						h = tiled && y0 + TILE_H < GH ? TILE_H : GH - y0;
			tg_tile_place *p = &c->places[n];
			stored	   *s = &c->tiles[n];
			uint8_t    *raw;
			size_t		size;

			p->id = 100 + n;
			p->col0 = x0;
			p->row0 = y0;
			p->width = w;
			p->height = h;
			p->geo = (tg_georef) {30, -30, 500000 + 30.0 * x0, 4000000 - 30.0 * y0, 0, 0, 32611};
			raw = serialize(dem, x0, y0, w, h, &size);
			s->compression = n % 3 == 1 ? TG_TILE_LZ4 : n % 3 == 2 ? TG_TILE_PGLZ : TG_TILE_PLAIN;
			if (!tiled)
				s->compression = TG_TILE_PLAIN;
			if (s->compression == TG_TILE_PLAIN)
			{
				s->bytes = raw;
				s->size = size;
			}
			else if (s->compression == TG_TILE_LZ4)
			{
				s->bytes = malloc(tg_lz4_bound(size));
				s->size = tg_lz4_compress(raw + 4, size - 4, s->bytes, tg_lz4_bound(size));
				s->raw_size = size - 4;
				free(raw);
			}
			else
			{
				s->bytes = pglz_literals(raw + 4, size - 4, &s->size);
				s->raw_size = size - 4;
				free(raw);
			}
			n++;
		}
	/* tile MISSING is not in the table: its cells are nodata */
	if (tiled)
	{
		free(c->tiles[MISSING].bytes);
		memmove(&c->places[MISSING], &c->places[MISSING + 1], (n - MISSING - 1) * sizeof c->places[0]);
		memmove(&c->tiles[MISSING], &c->tiles[MISSING + 1], (n - MISSING - 1) * sizeof c->tiles[0]);
		n--;
	}
	c->layout.ntiles = n;
	c->layout.tiles = c->places;
}

static tg_status
cov_start(void *arg, int row0, int nrows, tg_error *err)
{
	coverage   *c = arg;

	c->next = 0;
	c->row0 = row0;
	c->nrows = nrows;
	return TG_OK;
}

static tg_status
cov_next(void *arg, tg_tile_bytes *t, tg_error *err)
{
	coverage   *c = arg;

	memset(t, 0, sizeof *t);
	while (c->next < c->layout.ntiles)
	{
		const int	k = c->next++;
		const tg_tile_place *p = &c->places[k];

		if (p->row0 < c->row0 + c->nrows && p->row0 + p->height > c->row0)
		{
			t->data = c->tiles[k].bytes;
			t->size = c->tiles[k].size;
			t->compression = c->tiles[k].compression;
			t->raw_size = c->tiles[k].raw_size;
			return TG_OK;
		}
	}
	return TG_OK;
}

static void
cov_release(void *arg, tg_tile_bytes *t)
{
}


/* A result tile's plain bytes (malloc'ed; NULL if it does not decompress). */
uint8_t *
plain_copy(const tg_tile_value *v, size_t *size)
{
	uint8_t    *copy;

	*size = v->compressed ? v->raw_size + 4 : v->size;
	copy = malloc(*size);
	if (!v->compressed)
	{
		memcpy(copy, v->data, *size);
		return copy;
	}
	if (!tg_lz4_decompress(v->data + 8, v->size - 8, copy + 4, v->raw_size))
	{
		free(copy);
		return NULL;
	}
	/* the length word of the plain form, as tg_raster_write leaves it */
	*(uint32_t *) copy = (uint32_t) *size;
	return copy;
}

static tg_status
res_write(void *arg, int tile, tg_tile_value *v, int n, bool *kept, tg_error *err)
{
	results    *r = arg;

	if (writer_fails_at && r->written + 1 == writer_fails_at)
		return tg_error_set(err, TG_ECALLBACK, "the writer failed on its tile %d", writer_fails_at);
	r->in_order = r->in_order && tile > r->last;
	r->last = tile;
	for (int o = 0; o < n; o++)
	{
		size_t		size;
		uint8_t    *copy = plain_copy(&v[o], &size);

		if (copy == NULL)
			return tg_error_set(err, TG_EDATA, "a result tile does not decompress");
		r->saw_compressed |= v[o].compressed;
		r->tile[tile][o] = copy;
		r->size[tile][o] = size;
		if (r->keep)
			r->kept[tile][o] = v[o];
	}
	*kept = r->keep;
	r->written++;
	return TG_OK;
}

void
res_free(results *r)
{
	for (int t = 0; t < 128; t++)
		for (int o = 0; o < 3; o++)
		{
			/* what the writer kept is intact: the run freed none of it */
			if (r->kept[t][o].data)
			{
				size_t		size;
				uint8_t    *again = plain_copy(&r->kept[t][o], &size);

				check(again && size == r->size[t][o] && memcmp(again + 4, r->tile[t][o] + 4, size - 4) == 0,
					  "tile %d output %d kept by the writer is intact", t, o);
				free(again);
				free((void *) r->kept[t][o].data);
			}
			free(r->tile[t][o]);
		}
	memset(r, 0, sizeof *r);
}

/*
 * The surface (8 bytes per cell), multiple flow's shares and accumulation
 * (40) and the crossing flats parked (8 per crossing cell at most)
 */
static uint8_t spill_space[GW * GH * 56];

static tg_status
spill_write(void *arg, size_t offset, const void *data, size_t bytes, tg_error *err)
{
	if (offset > sizeof spill_space || bytes > sizeof spill_space - offset)
		return tg_error_set(err, TG_ELIMIT, "spill write of %zu bytes at %zu, past the test's spill", bytes, offset);
	memcpy(spill_space + offset, data, bytes);
	return TG_OK;
}

static tg_status
spill_read(void *arg, size_t offset, void *data, size_t bytes, tg_error *err)
{
	if (offset > sizeof spill_space || bytes > sizeof spill_space - offset)
		return tg_error_set(err, TG_ELIMIT, "spill read of %zu bytes at %zu, past the test's spill", bytes, offset);
	memcpy(data, spill_space + offset, bytes);
	return TG_OK;
}

tg_backend run_backend = TG_BACKEND_CPU;
size_t		run_device_limit = 0;
int			writer_fails_at = 0;
const bool *run_wanted = NULL;
tg_backend parts_backend = TG_BACKEND_CPU;
int			encode_starts;
bool		write_went_back;
double		write_last;
int			strip_reports;
bool		strip_went_back;
static char strip_outer[64];
static double strip_last;

static void
log_progress(void *arg, const char *phase, double fraction)
{
	if (fraction == 0.0 && strcmp(phase, "encode") == 0)
		encode_starts++;
	if (strcmp(phase, "write") == 0)
	{
		write_went_back |= fraction < write_last;
		write_last = fraction;
	}
	else if (strstr(phase, " (strip ") != NULL)
	{
		/* a phase within a strip, told as its strips' phase: that one's progress */
		const size_t outer = strstr(phase, " (strip ") - phase;

		strip_went_back |= outer == strlen(strip_outer) && strncmp(phase, strip_outer, outer) == 0 &&
			fraction < strip_last;
		snprintf(strip_outer, sizeof strip_outer, "%.*s", (int) outer, phase);
		strip_last = fraction;
		strip_reports++;
	}
}

static tg_status
res_room(void *arg, size_t bytes, tg_error *err)
{
	results    *r = arg;

	(void) err;
	r->room_calls++;
	r->room = bytes;
	r->written_at_room = r->written;
	return TG_OK;
}

tg_status
run_job(coverage *c, coverage *weights, const tg_op *op, int threads, size_t budget, bool compress,
		bool keep, tg_part *part, results *r, tg_run_stats *stats, tg_error *err)
{
	tg_input	in[2] = {{"the DEM", &c->layout, {cov_start, cov_next, cov_release, c}, 1},
	{"the weights", weights ? &weights->layout : NULL, {cov_start, cov_next, cov_release, weights}, 1}};
	tg_job		job;
	tg_ctx		ctx;

	memset(&job, 0, sizeof job);
	job.function = "tg_test";
	job.budget_name = "the budget";
	job.layout = &c->layout;
	job.inputs = in;
	job.ninputs = weights ? 2 : 1;
	job.writer.write = res_write;
	job.writer.arg = r;
	job.writer.room = res_room;
	job.writer.compress = compress;
	job.writer.header_room = 8;
	job.spill.write = spill_write;
	job.spill.read = spill_read;
	job.memory_budget = budget;
	job.part = part;
	job.wanted = run_wanted;
	tg_ctx_init(&ctx);
	ctx.backend = run_backend;
	ctx.device_memory_limit = run_device_limit;
	ctx.progress = log_progress;
	write_went_back = false;
	write_last = 0;
	strip_reports = 0;
	strip_went_back = false;
	strip_outer[0] = '\0';
	ctx.threads = threads;
	ctx.stats = stats;
	memset(r, 0, sizeof *r);
	r->keep = keep;
	r->in_order = true;
	r->last = -1;
	tg_error_clear(err);
	return tg_run(&ctx, op, &job, err);
}

tg_status
run_on(coverage *c, coverage *weights, const tg_op *op, int threads, size_t budget, bool compress,
	   bool keep, results *r, tg_run_stats *stats, tg_error *err)
{
	return run_job(c, weights, op, threads, budget, compress, keep, NULL, r, stats, err);
}

/* Cell (x, y) of output o, band b, as double, from the written tiles of a coverage. */
tg_op
base_op(tg_op_kind kind)
{
	tg_op		op;

	memset(&op, 0, sizeof op);
	op.kind = kind;
	op.band = 1;
	op.slope_scale = 1;
	op.flow = flow_params(TG_ROUTE_D8, GW, GH, 30, true);
	op.flow.threshold = 30;
	op.accumulation_type = TG_PT_64BF;
	op.m = 0.4;
	op.n = 1.3;
	op.a0 = 22.1;
	op.b0 = 0.0896;
	for (int f = 0; f < 4; f++)
		op.rusle[f].value = 1;
	op.roughness.value = 0.05;
	op.velocity.value = 2;
	op.b = 0.5;
	op.min_slope = 0.001;
	op.interval = 600;
	op.view.observer_height = 10;
	op.view.earth_radius = 6370997;
	op.view.refraction = 1.0 / 7;
	op.view.cell_x = op.view.cell_y = 30;
	op.view.geom = op.flow.geom;
	return op;
}

/* ------------------------------------------------------------------------
 * A coverage partitioned by rows of tiles: each part on its own, the
 * coordinator's messages between the phases
 * ------------------------------------------------------------------------ */

/* Part k of NPARTS of c: its rows of tiles, as a coverage of its own (the tiles' bytes shared). */
void
make_part(const coverage *c, int k, coverage *p)
{
	const int	tile_rows = (GH + TILE_H - 1) / TILE_H,
				r0 = k * tile_rows / NPARTS * TILE_H,
				r1 = (k + 1) * tile_rows / NPARTS * TILE_H < GH ? (k + 1) * tile_rows / NPARTS * TILE_H : GH;

	int64_t		c0 = GW,
				c1 = 0;

	memset(p, 0, sizeof *p);
	p->layout.name = "a part";
	p->layout.height = r1 - r0;
	p->layout.geo = c->layout.geo;
	p->layout.geo.upperleft_y += r0 * c->layout.geo.scale_y;
	for (int t = 0; t < c->layout.ntiles; t++)
		if (c->places[t].row0 >= r0 && c->places[t].row0 < r1)
		{
			p->places[p->layout.ntiles] = c->places[t];
			p->places[p->layout.ntiles].row0 -= r0;
			p->tiles[p->layout.ntiles++] = c->tiles[t];
			c0 = c->places[t].col0 < c0 ? c->places[t].col0 : c0;
			c1 = c->places[t].col0 + c->places[t].width > c1 ? c->places[t].col0 + c->places[t].width : c1;
		}
	/* as a server's table of the part describes it: over the columns its tiles span */
	p->layout.width = (int) (c1 - c0);
	p->layout.geo.upperleft_x += c0 * c->layout.geo.scale_x;
	for (int t = 0; t < p->layout.ntiles; t++)
		p->places[t].col0 -= c0;
	p->layout.tiles = p->places;
}

void *
test_alloc(size_t size, void *arg)
{
	(void) arg;
	return malloc(size);
}

void
test_free(void *ptr, void *arg)
{
	(void) arg;
	free(ptr);
}

int			parts_left_out;
int			parts_threads = 2;

/*
 * Run op over the parts (given to the coordinator in the order `given`),
 * phase by phase as the coordinator says; the finished parts' tiles into
 * r[k], the rounds of the flats and of the flow into rounds[].  The status of the first
 * failure, its message in err.
 */
/* A server's max_memory_mb for its part: the part of the tests' grid needs a few MB */
#define PART_BUDGET ((size_t) 256 << 20)

tg_status
run_parts(coverage *parts, const int *given, int n, const tg_op *op, results *r, int rounds[2],
		  const parts_tamper *tamper, tg_error *err)
{
	static const char *const names[NPARTS] = {"p0", "p1", "p2"};
	const char *gnames[NPARTS];
	tg_part		part[NPARTS];
	tg_part_bytes replies[NPARTS],
				msgs[NPARTS],
				state = {NULL, 0},
				next;
	bool		replied = false;
	tg_part_phase phase = TG_PART_EDGES;
	tg_ctx		ctx;
	tg_status	st = TG_OK;

	tg_ctx_init(&ctx);
	memset(part, 0, sizeof part);
	memset(replies, 0, sizeof replies);
	rounds[0] = rounds[1] = 0;
	for (int i = 0; i < n; i++)
	{
		gnames[i] = names[given[i]];
		part[i].keep = (tg_allocator) {test_alloc, test_free, NULL};
	}
	for (int step = 0; st == TG_OK; step++)
	{
		int			round;

		if (tamper)
		{
			for (int i = 0; replied && i < n; i++)
				tamper->bytes(tamper->arg, step, PARTS_REPLY, i, &replies[i]);
			if (state.data)
				tamper->bytes(tamper->arg, step, PARTS_STATE, -1, &state);
		}
		tg_error_clear(err);
		st = tg_parts_step(&ctx, op->kind, n, gnames, replied ? replies : NULL, state.data ? &state : NULL,
						   &phase, &round, msgs, &next, err);
		free(state.data);
		state = next;
		for (int i = 0; i < n; i++)
		{
			free(replies[i].data);
			replies[i].data = NULL;
		}
		if (st != TG_OK || phase == TG_PART_DONE)
			break;
		if (phase == TG_PART_FLATS || phase == TG_PART_FLOW)
			rounds[phase == TG_PART_FLOW] = round + 1;
		for (int i = 0; i < n; i++)
		{
			results		none;

			if (tamper && msgs[i].size > 0)
				tamper->bytes(tamper->arg, step, PARTS_MESSAGE, i, &msgs[i]);
			part[i].message = msgs[i];
			/* after a part failed, the others are not run (their replies would be stale); a part left out of a round gets no message and replies nothing */
			part[i].reply = (tg_part_bytes) {NULL, 0};
			parts_left_out += st == TG_OK && msgs[i].size == 0;
			if (st == TG_OK && msgs[i].size > 0)
			{
				/* as on a server: the call's grid is the part's own */
				tg_op		own = *op;
				tg_backend	saved;

				own.flow.geom.width = parts[given[i]].layout.width;
				own.flow.geom.height = parts[given[i]].layout.height;
				saved = run_backend;
				run_backend = parts_backend;
				st = run_job(&parts[given[i]], NULL, &own, parts_threads, PART_BUDGET, false, false, &part[i],
							 phase == TG_PART_FINISH ? &r[given[i]] : &none, NULL, err);
				run_backend = saved;
				if (phase != TG_PART_FINISH)
					res_free(&none);
			}
			replies[i] = part[i].reply;
			free(msgs[i].data);
		}
		replied = true;
	}
	for (int i = 0; i < n; i++)
	{
		tg_part_forget(&part[i]);
		free(replies[i].data);
	}
	free(state.data);
	return st;
}

/* The parts' tiles (r[k], freed) are those of one run over the coverage, in the parts' order. */
