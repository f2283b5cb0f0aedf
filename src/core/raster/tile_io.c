/*
 * tile_io.c — tiles into grids and result tiles out, in batches: the
 * calling thread fetches a batch of tiles from the reader (and allocates
 * what each needs), the call's threads decompress, check and place them;
 * on the way out the threads cut, convert, serialize and compress a batch
 * of result tiles, and the calling thread hands them to the writer in tile
 * order while they encode the next batch.  Only the calling thread touches
 * the callbacks and the caller's allocator.
 */
#include "raster/raster.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Tiles a batch holds per thread, and at least. */
#define BATCH_PER_THREAD 4
#define MIN_BATCH 8

static int
batch_size(const tg_ctx *ctx)
{
	const int	n = BATCH_PER_THREAD * tg_threads_wanted(ctx);

	return n < MIN_BATCH ? MIN_BATCH : n;
}

/* The batch regions report their own progress, by tiles, not by task. */
static tg_ctx
quiet(const tg_ctx *ctx)
{
	tg_ctx		q = *ctx;

	q.progress = NULL;
	return q;
}

static void
report(const tg_ctx *ctx, const char *phase, double fraction)
{
	if (ctx->progress)
		ctx->progress(ctx->progress_arg, phase, fraction);
}

void
tg_job_notice(const tg_job *job, const char *fmt,...)
{
	char		message[512];
	va_list		ap;

	if (job->notice == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(message, sizeof message, fmt, ap);
	va_end(ap);
	job->notice(job->notice_arg, message);
}

/* ------------------------------------------------------------------------
 * Reading
 * ------------------------------------------------------------------------ */
typedef struct fetched
{
	tg_tile_bytes bytes;
	uint8_t    *plain;			/* the decompressed raster, when it came compressed */
	size_t		plain_size;
} fetched;

typedef struct read_job
{
	const tg_layout *grid;
	const tg_input *in;
	tg_grid_band *g;
	fetched    *batch;
} read_job;

/* The tile's serialized raster, decompressed first if it came compressed. */
static tg_status
tile_raster(const tg_layout *grid, const tg_input *in, fetched *f, const uint8_t **raster,
			size_t *len, tg_error *err)
{
	const tg_tile_bytes *b = &f->bytes;
	bool		ok = true;

	if (b->compression == TG_TILE_PLAIN)
	{
		*raster = b->data;
		*len = b->size;
		return TG_OK;
	}
	if (f->plain_size == 0)
	{
		/* the payload after the 4-byte length word */
		ok = b->compression == TG_TILE_LZ4
			? tg_lz4_decompress(b->data, b->size, f->plain + 4, b->raw_size)
			: tg_pglz_decompress(b->data, b->size, f->plain + 4, b->raw_size);
		f->plain_size = ok ? b->raw_size + 4 : 0;
	}
	if (!ok)
		return tg_error_set(err, TG_EDATA, "a tile of %s is not a valid %s-compressed value",
							in->layout->name, b->compression == TG_TILE_LZ4 ? "LZ4" : "pglz");
	*raster = f->plain;
	*len = f->plain_size;
	return TG_OK;
}

/* The layout's tile at (col0, row0), by binary search over the grid order. */
static int
find_tile(const tg_layout *l, int64_t col0, int64_t row0)
{
	int			lo = 0,
				hi = l->ntiles - 1;

	while (lo <= hi)
	{
		const int	mid = lo + (hi - lo) / 2;
		const tg_tile_place *t = &l->tiles[mid];

		if (t->row0 == row0 && t->col0 == col0)
			return mid;
		if (t->row0 < row0 || (t->row0 == row0 && t->col0 < col0))
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

/* How messages name a tile: "the raster" for a raster form, else "tile N of table". */
static const char *
tile_name(const tg_layout *l, const tg_tile_place *t, char *buf, size_t size)
{
	if (l->ntiles == 1 && t->id == 0)
		snprintf(buf, size, "%s", l->name);
	else
		snprintf(buf, size, "tile %lld of %s", (long long) t->id, l->name);
	return buf;
}

/* Band `in->band` of a tile, its place on the grid, every check made. */
static tg_status
open_tile(const tg_layout *grid, const tg_input *in, const uint8_t *raster, size_t len,
		  tg_band *band, const tg_tile_place **place, tg_error *err)
{
	const tg_layout *l = in->layout;
	tg_raster_info info;
	double		col,
				row;
	int			k;
	char		name[160];
	tg_status	st;

	*place = NULL;
	st = tg_raster_read_info(raster, len, &info, err);
	if (st != TG_OK || info.width == 0 || info.height == 0)
		return st;				/* an empty tile holds no cell */
	if (!tg_georef_offset(&grid->geo, info.geo.upperleft_x, info.geo.upperleft_y, &col, &row) ||
		(k = find_tile(l, (int64_t) rint(col), (int64_t) rint(row))) < 0 ||
		l->tiles[k].width != info.width || l->tiles[k].height != info.height)
		return tg_error_set(err, TG_EDATA, "a tile of %s is not where its header was read", l->name);
	*place = &l->tiles[k];
	if (in->band < 1 || in->band > info.num_bands)
		return tg_error_set(err, TG_EINVAL, "band %d does not exist: %s has %d band%s", in->band,
							tile_name(l, *place, name, sizeof name), info.num_bands,
							info.num_bands == 1 ? "" : "s");
	st = tg_raster_read_band(raster, len, in->band - 1, band, err);
	if (st == TG_OK && band->offdb)
	{
		tg_error_set(err, TG_EUNSUPPORTED, "band %d of %s is an out-db band", in->band,
					 tile_name(l, *place, name, sizeof name));
		tg_error_detail(err, "Its pixels live in a file outside the database, which terra_gpu does not read.");
		tg_error_hint(err, "Load the raster in-db: raster2pgsql without -R.");
		return TG_EUNSUPPORTED;
	}
	return st;
}

/*
 * The first tile read gives the grid its pixel type and nodata: its own,
 * else the type's minimum where other tiles (or cells no tile covers) may
 * need a marker; a single tile without one stays without.
 */
static void
set_type(tg_grid_band *g, const tg_band *src, const tg_layout *grid, bool marker_needed)
{
	g->band.pixtype = src->pixtype;
	g->band.has_nodata = src->has_nodata || marker_needed;
	g->band.nodata = src->has_nodata ? src->nodata : tg_pixtype_min_value(src->pixtype);
	g->band.width = grid->width;
	g->band.height = grid->height;
	g->typed = true;
}

/* Rows y0 .. y1 of the grid as nodata. */
static tg_status
nodata_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	tg_grid_band *g = arg;
	const size_t size = (size_t) tg_pixtype_size(g->band.pixtype),
				n = (size_t) (y1 - y0) * g->band.width;
	uint8_t    *at = (uint8_t *) g->band.data + (size_t) y0 * g->band.width * size;

	if (n == 0)
		return TG_OK;
	/* one pixel stored, then copied onto the rest in doubling runs */
	tg_pixel_store(g->band.pixtype, at, 0, g->band.nodata);
	for (size_t have = 1; have < n; have *= 2)
		memcpy(at + have * size, at, (have < n - have ? have : n - have) * size);
	return TG_OK;
}

/* Rows of doubles to set to nodata (NaN) on the threads, where their fresh pages are touched first. */
typedef struct nan_job
{
	double	   *rows;
	size_t		width;
} nan_job;

static tg_status
nan_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const nan_job *j = arg;

	for (size_t i = (size_t) y0 * j->width; i < (size_t) y1 * j->width; i++)
		j->rows[i] = NAN;
	return TG_OK;
}

/* The length of a row of g->rows (those of a grid `width` wide): the columns held. */
static int
rows_width(const tg_grid_band *g, int width)
{
	return g->ncols > 0 ? g->ncols : width;
}

/* Does the tile meet the rows (and columns) g holds? */
static bool
meets_rows(const tg_grid_band *g, const tg_tile_place *t)
{
	return t->row0 < g->row0 + g->nrows && t->row0 + t->height > g->row0 &&
		(g->ncols == 0 || (t->col0 < g->col0 + g->ncols && t->col0 + t->width > g->col0));
}

/* Copy a tile's band into the grid or the rows; a foreign nodata marker is translated. */
static void
place_tile(tg_grid_band *g, const tg_band *src, const tg_tile_place *t)
{
	const tg_band *dst = &g->band;
	const int	size = tg_pixtype_size(dst->pixtype);
	const bool	raw = src->pixtype == dst->pixtype && (!src->has_nodata || src->nodata == dst->nodata);
	const int	y0 = g->as_rows ? (int) (g->row0 > t->row0 ? g->row0 - t->row0 : 0) : 0;
	const int	y1 = g->as_rows ? (int) (g->row0 + g->nrows - t->row0 < src->height ?
										 g->row0 + g->nrows - t->row0 : src->height) : src->height;
	/* as rows: the grid's columns they hold, and the tile's columns among them */
	const int64_t left = g->ncols > 0 ? g->col0 : 0,
				right = left + rows_width(g, dst->width);
	const int	x0 = left > t->col0 ? (int) (left - t->col0) : 0,
				x1 = right - t->col0 < src->width ? (int) (right - t->col0) : src->width;

	for (int y = y0; y < y1; y++)
	{
		if (g->as_rows)
		{
			double	   *row = g->rows + (size_t) (t->row0 + y - g->row0) * (right - left) + (t->col0 + x0 - left);

			tg_band_span_to_f64(src, y, x0, x1, row);
			continue;
		}
		{
			const size_t dst0 = (size_t) (t->row0 + y) * dst->width + t->col0;

			if (src->is_nodata)
				for (int x = 0; x < src->width; x++)
					tg_pixel_store(dst->pixtype, (void *) dst->data, dst0 + x, dst->nodata);
			else if (raw)
				memcpy((uint8_t *) dst->data + dst0 * size,
					   (const uint8_t *) src->data + (size_t) y * src->width * size,
					   (size_t) src->width * size);
			else
				for (int x = 0; x < src->width; x++)
				{
					double		v = tg_band_get(src, (size_t) y * src->width + x);

					tg_pixel_store(dst->pixtype, (void *) dst->data, dst0 + x,
								   tg_band_value_is_nodata(src, v) ? dst->nodata : v);
				}
		}
	}
}

static tg_status
decode_task(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	read_job   *j = arg;
	fetched    *f = &j->batch[task];
	const uint8_t *raster;
	size_t		len;
	tg_band		src;
	const tg_tile_place *t;
	tg_status	st;

	st = tile_raster(j->grid, j->in, f, &raster, &len, err);
	if (st == TG_OK)
		st = open_tile(j->grid, j->in, raster, len, &src, &t, err);
	if (st != TG_OK || t == NULL)
		return st;
	if (src.pixtype != j->g->band.pixtype)
	{
		char		name[160];

		tg_error_set(err, TG_EINVAL, "%s is %s, the first tile read is %s",
					 tile_name(j->in->layout, t, name, sizeof name), tg_pixtype_name(src.pixtype),
					 tg_pixtype_name(j->g->band.pixtype));
		tg_error_hint(err, "Every tile of a coverage must share the band's pixel type.");
		return TG_EINVAL;
	}
	if (!j->g->as_rows || meets_rows(j->g, t))
		place_tile(j->g, &src, t);
	return TG_OK;
}

/* Whether the layout's tiles leave cells of the grid uncovered. */
static bool
has_gaps(const tg_layout *grid, const tg_layout *l)
{
	int64_t		covered = 0;

	for (int k = 0; k < l->ntiles; k++)
		covered += (int64_t) l->tiles[k].width * l->tiles[k].height;
	return covered < (int64_t) grid->width * grid->height;
}

/*
 * The first tile ever read (on the calling thread): its type becomes the
 * grid's, and a grid in memory is allocated, nodata where no tile lies.
 */
static tg_status
first_tile(const tg_ctx *ctx, const tg_layout *grid, const tg_input *in, tg_grid_band *g,
		   fetched *f, tg_error *err)
{
	const uint8_t *raster;
	size_t		len;
	tg_band		src;
	const tg_tile_place *t;
	tg_status	st;

	st = tile_raster(grid, in, f, &raster, &len, err);
	if (st == TG_OK)
		st = open_tile(grid, in, raster, len, &src, &t, err);
	if (st != TG_OK || t == NULL)
		return st;
	set_type(g, &src, grid, in->layout->ntiles > 1 || has_gaps(grid, in->layout));
	if (g->as_rows)
		return TG_OK;
	g->band.data = tg_alloc(ctx, (size_t) grid->width * grid->height * tg_pixtype_size(src.pixtype) + 1);
	if (g->band.data == NULL)
		return tg_error_set(err, TG_ENOMEM, "out of memory reading %s into one grid of %d x %d cells",
							in->layout->name, grid->width, grid->height);
	if (has_gaps(grid, in->layout))
		return tg_parallel_rows(ctx, grid->width, grid->height, nodata_rows, g, err);
	return TG_OK;
}

tg_status
tg_read_input(const tg_ctx *ctx, const tg_layout *grid, const tg_input *in, tg_grid_band *g,
			  int row0, int nrows, tg_error *err)
{
	const int	most = batch_size(ctx);
	const tg_ctx q = quiet(ctx);
	fetched    *batch = tg_alloc(ctx, most * sizeof(fetched));
	read_job	j = {grid, in, g, batch};
	int64_t		done = 0;
	bool		end = false;
	double		t0;
	tg_status	st;

	if (batch == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate a batch of tiles");
	if (g->as_rows &&
		(st = tg_parallel_rows(&q, rows_width(g, grid->width), nrows, nan_rows,
							   &(nan_job) {g->rows, (size_t) rows_width(g, grid->width)},
							   err)) != TG_OK)
	{
		tg_free(ctx, batch);
		return st;
	}
	t0 = tg_clock_ms();
	st = in->reader.start(in->reader.arg, row0, nrows, err);
	tg_phase_charge(ctx, "fetch", tg_clock_ms() - t0);
	while (st == TG_OK && !end)
	{
		int			n = 0;
		bool		callback_failed = false;

		/* fetch a batch; whatever needs decompressing gets its room */
		while (n < most)
		{
			fetched    *f = &batch[n];

			memset(f, 0, sizeof *f);
			t0 = tg_clock_ms();
			st = in->reader.next(in->reader.arg, &f->bytes, err);
			tg_phase_charge(ctx, "fetch", tg_clock_ms() - t0);
			if (st != TG_OK)
			{
				callback_failed = true;
				break;
			}
			if (f->bytes.data == NULL)
			{
				end = true;
				break;
			}
			n++;
			if (f->bytes.compression != TG_TILE_PLAIN &&
				(f->plain = tg_alloc(ctx, f->bytes.raw_size + 4)) == NULL)
			{
				st = tg_error_set(err, TG_ENOMEM, "could not allocate %zu bytes for a tile",
								  f->bytes.raw_size + 4);
				break;
			}
			if (!g->typed && (st = first_tile(ctx, grid, in, g, f, err)) != TG_OK)
				break;
		}
		if (st == TG_OK && n > 0)
			st = tg_parallel(&q, n, decode_task, &j, err);
		for (int k = 0; k < n; k++)
		{
			if (!callback_failed)
				in->reader.release(in->reader.arg, &batch[k].bytes);
			tg_free(ctx, batch[k].plain);
		}
		done += n;
		if (st == TG_OK && in->layout->ntiles > 0)
			report(ctx, "read", (double) done / in->layout->ntiles);
	}
	tg_free(ctx, batch);
	if (st == TG_OK && !g->typed)
		st = tg_error_set(err, TG_EDATA, "%s has no tile to read", in->layout->name);
	return st;
}

void
tg_grid_band_free(const tg_ctx *ctx, tg_grid_band *g)
{
	if (!g->as_rows)
		tg_free(ctx, (void *) g->band.data);
	g->band.data = NULL;
}

/* ------------------------------------------------------------------------
 * Writing
 * ------------------------------------------------------------------------ */
typedef struct encoded
{
	int			tile;
	tg_tile_value values[TG_MAX_OUTPUTS];
	uint8_t    *raw[TG_MAX_OUTPUTS];	/* the serialized rasters */
	size_t		raw_size[TG_MAX_OUTPUTS];
	uint8_t    *packed[TG_MAX_OUTPUTS];	/* room for their LZ4 form */
	size_t		packed_room[TG_MAX_OUTPUTS];
} encoded;

typedef struct write_job
{
	const tg_job *job;
	const tg_output *outs;
	int			nout;
	int			row0;			/* the planes' first row */
	int			col0;			/* and first column */
	int			width;			/* their width */
	encoded    *batch;
	/*
	 * Compressing, each thread serializes a tile into a scratch buffer of its
	 * own (reused from tile to tile) and only what is handed over is written
	 * to fresh memory: the compressed form, or the raw one where it saves no
	 * room.
	 */
	uint8_t    *scratch;		/* threads x scratch_size */
	size_t		scratch_size;
} write_job;

/* Plane values of one tile row into a band row; nodata markers become the band's. */
static void
convert_row(const tg_plane *p, size_t from, const tg_band_spec *spec, void *dst, size_t to, int count)
{
	const int	size = tg_pixtype_size(spec->pixtype);
	uint8_t    *d = (uint8_t *) dst + to * size;

	/* another type, or integers whose marker is not the band's nodata: converted */
	if (p->type != spec->pixtype ||
		(!tg_pixtype_is_float(spec->pixtype) && p->has_marker && p->marker != spec->nodata))
	{
		tg_pixels_to_band(p->type, p->data, from, p->has_marker, p->marker, spec, dst, to, count);
		return;
	}
	/* the band's own type: copied, a float's NaN replaced */
	memcpy(d, (const uint8_t *) p->data + from * size, (size_t) count * size);
	if (spec->pixtype == TG_PT_32BF)
		for (int x = 0; x < count; x++)
			if (isnan(((float *) d)[x]))
				((float *) d)[x] = (float) spec->nodata;
	if (spec->pixtype == TG_PT_64BF)
		for (int x = 0; x < count; x++)
			if (isnan(((double *) d)[x]))
				((double *) d)[x] = spec->nodata;
}

/* Task i * nout + o: output o of the batch's tile i (a task per raster, so that a row of tiles balances). */
static tg_status
encode_task(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	const write_job *j = arg;
	const int	o = (int) (task % j->nout);
	encoded    *e = &j->batch[task / j->nout];
	const tg_layout *l = j->job->layout;
	const tg_tile_place *t = &l->tiles[e->tile];
	const tg_tile_writer *w = &j->job->writer;
	const tg_output *out = &j->outs[o];
	tg_raster_info info = {(uint16_t) out->nbands, (uint16_t) t->width, (uint16_t) t->height, t->geo};
	void	   *band_data[TG_MAX_OUTPUT_BANDS];
	uint8_t    *raster = e->packed[o] ? j->scratch + (size_t) tg_worker_index(ctx) * j->scratch_size
		: e->raw[o];
	tg_status	st = tg_raster_write(raster, e->raw_size[o], &info, out->specs, band_data, err);
	size_t		packed = 0;

	if (st != TG_OK)
		return st;
	for (int b = 0; b < out->nbands; b++)
		for (int y = 0; y < t->height; y++)
			convert_row(&out->planes[b], (size_t) (t->row0 + y - j->row0) * j->width + (t->col0 - j->col0),
						&out->specs[b], band_data[b], (size_t) y * t->width, t->width);
	/* the payload after the length word, kept only where it saves room */
	if (e->packed[o])
		packed = tg_lz4_compress(raster + 4, e->raw_size[o] - 4, e->packed[o] + w->header_room,
								 e->packed_room[o] - w->header_room);
	if (packed > 0 && w->header_room + packed < e->raw_size[o])
	{
		e->values[o].data = e->packed[o];
		e->values[o].size = w->header_room + packed;
		e->values[o].compressed = true;
		e->values[o].raw_size = e->raw_size[o] - 4;
		return TG_OK;
	}
	if (raster != e->raw[o])
		memcpy(e->raw[o], raster, e->raw_size[o]);
	e->values[o].data = e->raw[o];
	e->values[o].size = e->raw_size[o];
	e->values[o].compressed = false;
	return TG_OK;
}

/* Room for tile `tile`'s results; TG_ELIMIT for a raster the writer cannot take. */
static tg_status
prepare_tile(const tg_ctx *ctx, const write_job *j, encoded *e, int tile, tg_error *err)
{
	const tg_tile_place *t = &j->job->layout->tiles[tile];
	const tg_tile_writer *w = &j->job->writer;

	memset(e, 0, sizeof *e);
	e->tile = tile;
	for (int o = 0; o < j->nout; o++)
	{
		tg_raster_info info = {(uint16_t) j->outs[o].nbands, (uint16_t) t->width, (uint16_t) t->height, t->geo};
		tg_status	st = tg_raster_size(&info, j->outs[o].specs, &e->raw_size[o], err);

		if (st == TG_OK && w->max_value_size && e->raw_size[o] > w->max_value_size)
		{
			tg_error_set(err, TG_ELIMIT, "result raster of %d x %d pixels would exceed the %g GB a raster value can hold",
						 t->width, t->height, (w->max_value_size + 1) / 1073741824.0);
			tg_error_hint(err, "Tile the raster (raster2pgsql -t 256x256) and process the tiles.");
			return TG_ELIMIT;
		}
		if (st != TG_OK)
			return st;
		e->raw[o] = tg_alloc(ctx, e->raw_size[o]);
		if (w->compress && e->raw[o])
		{
			e->packed_room[o] = w->header_room + tg_lz4_bound(e->raw_size[o]);
			e->packed[o] = tg_alloc(ctx, e->packed_room[o]);
		}
		if (e->raw[o] == NULL || (w->compress && e->packed[o] == NULL))
			return tg_error_set(err, TG_ENOMEM, "could not allocate %zu bytes for a result tile",
								e->raw_size[o]);
	}
	return TG_OK;
}

/* Free what the writer did not keep (kept: it took every value's buffer). */
static void
finish_tile(const tg_ctx *ctx, encoded *e, int nout, bool kept)
{
	for (int o = 0; o < nout; o++)
	{
		if (!(kept && e->values[o].data == e->raw[o]))
			tg_free(ctx, e->raw[o]);
		if (!(kept && e->values[o].data == e->packed[o]))
			tg_free(ctx, e->packed[o]);
	}
}

/* Scratch room for the largest raster of the first n tiles of the batch, on every thread. */
static tg_status
ensure_scratch(const tg_ctx *ctx, write_job *j, const encoded *batch, int n, tg_error *err)
{
	size_t		most = 0;

	for (int i = 0; i < n; i++)
		for (int o = 0; o < j->nout; o++)
			if (batch[i].packed[o] && batch[i].raw_size[o] > most)
				most = batch[i].raw_size[o];
	if (most <= j->scratch_size)
		return TG_OK;
	tg_free(ctx, j->scratch);
	j->scratch_size = (most + 63) & ~(size_t) 63;
	j->scratch = tg_alloc(ctx, (size_t) tg_threads_wanted(ctx) * j->scratch_size);
	if (j->scratch == NULL)
	{
		j->scratch_size = 0;
		return tg_error_set(err, TG_ENOMEM, "could not allocate the tiles' scratch room");
	}
	return TG_OK;
}

/* A batch encoded before, handed to the writer tile by tile beside the next one's encoding. */
typedef struct handing
{
	const tg_ctx *ctx;
	const tg_job *job;
	encoded    *batch;
	int			n;
	int			written;
	int			nout;
} handing;

static tg_status
hand_one(const tg_ctx *ctx, void *arg, bool *more, tg_error *err)
{
	handing    *h = arg;
	encoded    *e;
	bool		kept = false;
	const double t0 = tg_clock_ms();
	tg_status	st;

	if (h->written >= h->n)
	{
		*more = false;
		return TG_OK;
	}
	e = &h->batch[h->written];
	st = h->job->writer.write(h->job->writer.arg, e->tile, e->values, h->nout, &kept, err);
	tg_phase_charge(ctx, "store", tg_clock_ms() - t0);
	finish_tile(h->ctx, e, h->nout, st == TG_OK && kept);
	h->written++;
	*more = h->written < h->n;
	return st;
}

/* Free what the writer has not been handed of a batch. */
static void
drop_unwritten(handing *h)
{
	for (; h->written < h->n; h->written++)
		finish_tile(h->ctx, &h->batch[h->written], h->nout, false);
	h->n = h->written = 0;
}

/*
 * Batches of tiles are encoded by the threads while the calling thread hands
 * the batch before to the writer (tg_parallel_beside): the writer's copies
 * overlap the compression instead of following it.
 */
tg_status
tg_write_tiles(const tg_ctx *ctx, const tg_job *job, const tg_output *outs, int nout, int row0,
			   int nrows, tg_error *err)
{
	return tg_write_window(ctx, job, outs, nout, row0, nrows, 0, job->layout->width, err);
}

tg_status
tg_write_window(const tg_ctx *ctx, const tg_job *job, const tg_output *outs, int nout, int row0,
				int nrows, int col0, int width, tg_error *err)
{
	const tg_layout *l = job->layout;
	const tg_ctx q = quiet(ctx);
	write_job	j = {job, outs, nout, row0, col0, width, NULL, NULL, 0};
	handing		before = {ctx, job, NULL, 0, 0, nout};
	encoded    *batches;
	int			most = 0,
				next = 0,
				done = 0,
				current = 0;
	tg_status	st = TG_OK;

	/* progress is the whole grid's: a band written alone counts from the tiles above it */
	for (int k = 0; k < l->ntiles; k++)
	{
		done += l->tiles[k].row0 < row0;
		most += l->tiles[k].row0 >= row0 && l->tiles[k].row0 < row0 + nrows;
	}
	if (most > batch_size(ctx))
		most = batch_size(ctx);
	batches = tg_alloc(ctx, 2 * (size_t) (most ? most : 1) * sizeof(encoded));
	if (batches == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate a batch of tiles");
	while (st == TG_OK && (next < l->ntiles || before.written < before.n))
	{
		encoded    *batch = batches + (size_t) current * most;
		int			n = 0;

		/* the next tiles lying in the rows, in grid order */
		for (; next < l->ntiles && n < most; next++)
		{
			if (l->tiles[next].row0 < row0 || l->tiles[next].row0 >= row0 + nrows)
				continue;
			if (job->wanted && !job->wanted[next])
			{
				done++;			/* not asked for: counts as written */
				continue;
			}
			if (l->tiles[next].col0 < col0 || l->tiles[next].col0 + l->tiles[next].width > col0 + width)
			{
				st = tg_error_set(err, TG_EINVAL, "tile %d lies outside the columns %d to %d written", next,
								  col0, col0 + width - 1);
				break;
			}
			st = prepare_tile(ctx, &j, &batch[n], next, err);
			n++;
			if (st != TG_OK)
				break;
		}
		if (st == TG_OK && n > 0)
			st = ensure_scratch(ctx, &j, batch, n, err);
		j.batch = batch;
		if (st == TG_OK)
			st = tg_parallel_beside(&q, (int64_t) n * nout, encode_task, &j, hand_one, &before, err);
		done += before.n;
		drop_unwritten(&before);
		if (st == TG_OK)
			report(ctx, "write", (double) done / l->ntiles);
		/* this batch is handed over beside the next one's encoding (or alone, after the last) */
		before.batch = batch;
		before.n = n;
		before.written = 0;
		current ^= 1;
	}
	drop_unwritten(&before);
	tg_free(ctx, batches);
	tg_free(ctx, j.scratch);
	return st;
}
