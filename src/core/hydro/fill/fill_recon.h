/*
 * fill_recon.h — the fill without epsilon as a reconstruction by erosion, in
 * blocks of rows on the call's threads, written once for a working type T.
 * fill_cpu.c includes it twice: with float where every DEM value is a float
 * (tg_pixtype_exact_in_f32: integers up to 16 bits, 32BF), with double
 * otherwise.  Every value the surface takes is one of the DEM's, so both
 * give the same surface, bit for bit; float moves half the bytes.
 *
 * Before including: RECON_T (the type), RECON_PT (its tg_pixtype),
 * RECON_DECODE (tg_band_row_to_f32 or _f64), RECON(name) (name with a
 * suffix).  Internal to fill_cpu.c.
 *
 * w starts at +inf on the inner cells, at z on the edge (outlets), at -inf
 * on nodata (so that a cell beside nodata falls to its own height: an
 * outlet too), and falls to max(z, min of the neighbours) everywhere.  That
 * surface is the greatest fixed point under the start, which any order of
 * lowering reaches.  Vincent (1993)'s hybrid algorithm: a raster scan down,
 * one up, then a FIFO over the cells still able to fall.
 *
 * On threads, the two scans are the same scans as on one thread, cell for
 * cell (tg_wavefront).  The FIFO then runs in blocks of rows, each block
 * lowering its own rows and reading its neighbours' facing rows from a copy
 * taken between rounds; blocks whose facing rows fell since run again from
 * there, until none fell.  Scanning block by block instead would start
 * every block from walls of +inf at its top and bottom, and its FIFO would
 * lower whole basins to the passes of the block before the true levels came
 * in, round after round.  The result depends neither on the scans' blocks
 * nor on the FIFO's, hence not on the threads.
 */

typedef struct RECON(recon)
{
	const RECON_T *z;
	RECON_T    *w;
	int			width;
	int			height;
	int			nblocks;
	uint64_t   *queued;			/* per row, a bit per column: cells the scan up left to the FIFO */
	size_t		queued_words;	/* words per row */
	RECON_T    *facing;			/* per block: the row above it and the row below, as last copied */
	int64_t    *todo;			/* the blocks of this round */
	bool	   *fell;			/* per block: its facing rows fell since the last copy */
	bool		first;			/* the first round: the FIFO starts from the scans' queued cells */
} RECON(recon);

static inline RECON_T
RECON(min3)(RECON_T a, RECON_T b, RECON_T c)
{
	const RECON_T ab = a < b ? a : b;

	return ab < c ? ab : c;
}

static void
RECON(block_rows)(const RECON(recon) *r, int64_t k, int *r0, int *r1)
{
	*r0 = (int) ((int64_t) r->height * k / r->nblocks);
	*r1 = (int) ((int64_t) r->height * (k + 1) / r->nblocks);
}

/* Lower cell c to max(z, level) if that is lower, and queue it. */
static inline bool
RECON(lower)(const tg_ctx *ctx, const RECON(recon) *r, cell_fifo *q, size_t c, RECON_T level)
{
	const RECON_T *z = r->z;
	RECON_T    *w = r->w;

	if (w[c] > level && w[c] > z[c])
	{
		w[c] = level > z[c] ? level : z[c];
		return fifo_push(ctx, q, (uint32_t) c);
	}
	return true;
}

/* The scan down over block b of chunk c (inner cells only). */
static void
RECON(scan_down)(void *arg, const tg_wave *wave, int b, int c)
{
	const RECON(recon) *r = arg;
	const ptrdiff_t R = r->width;
	int			y0,
				y1;

	tg_wave_rows(wave, c, &y0, &y1);
	for (int y = y0; y < y1; y++)
	{
		const RECON_T *zr = r->z + y * R;
		RECON_T    *row = r->w + y * R;
		const RECON_T *up = row - R;
		int			x0,
					x1;

		tg_wave_cols(wave, b, y0, y1, y, &x0, &x1);
		for (int x = x0; x < x1; x++)
		{
			RECON_T		v;

			if (isnan(zr[x]))
				continue;
			v = RECON(min3)(up[x - 1], up[x], up[x + 1]);
			v = v < row[x - 1] ? v : row[x - 1];
			v = v < row[x] ? v : row[x];
			row[x] = v > zr[x] ? v : zr[x];
		}
	}
}

/*
 * The scan up over block b of chunk c, marking in `queued` the cells with a
 * neighbour scanned before them (right, below) that may still fall to their
 * value: the FIFO starts from those.
 */
static void
RECON(scan_up)(void *arg, const tg_wave *wave, int b, int c)
{
	const RECON(recon) *r = arg;
	const ptrdiff_t R = r->width;
	int			y0,
				y1;

	tg_wave_rows(wave, c, &y0, &y1);
	for (int y = y1 - 1; y >= y0; y--)
	{
		const RECON_T *zr = r->z + y * R;
		RECON_T    *row = r->w + y * R;
		const RECON_T *down = row + R;
		const RECON_T *zd = zr + R;
		uint64_t   *mark = r->queued + (size_t) y * r->queued_words;
		int			x0,
					x1;

		tg_wave_cols(wave, b, y0, y1, y, &x0, &x1);
		for (int x = x1 - 1; x >= x0; x--)
		{
			RECON_T		v;

			if (isnan(zr[x]))
				continue;
			v = RECON(min3)(down[x - 1], down[x], down[x + 1]);
			v = v < row[x + 1] ? v : row[x + 1];
			v = v < row[x] ? v : row[x];
			v = v > zr[x] ? v : zr[x];
			row[x] = v;
			if ((row[x + 1] > v && row[x + 1] > zr[x + 1]) ||
				(down[x - 1] > v && down[x - 1] > zd[x - 1]) ||
				(down[x] > v && down[x] > zd[x]) ||
				(down[x + 1] > v && down[x + 1] > zd[x + 1]))
				mark[x >> 6] |= (uint64_t) 1 << (x & 63);
		}
	}
}

/* Strip rows [r0, r1): queue the cells the scan up marked, in the scan's order. */
static bool
RECON(queue_marked)(const tg_ctx *ctx, const RECON(recon) *r, int r0, int r1, cell_fifo *q)
{
	for (int y = r1 - 1; y >= r0; y--)
	{
		const uint64_t *mark = r->queued + (size_t) y * r->queued_words;

		for (size_t k = r->queued_words; k-- > 0;)
			for (uint64_t bits = mark[k]; bits != 0;)
			{
				const int	bit = 63 - __builtin_clzll(bits);

				bits &= ~((uint64_t) 1 << bit);
				if (!fifo_push(ctx, q, (uint32_t) ((size_t) y * r->width + k * 64 + bit)))
					return false;
			}
	}
	return true;
}

/* Cells of row y falling to a facing row's values (the neighbour block's). */
static bool
RECON(seed_from)(const tg_ctx *ctx, const RECON(recon) *r, int y, const RECON_T *facing, cell_fifo *q)
{
	const size_t R = (size_t) r->width;

	if (y < 1 || y > r->height - 2)
		return true;
	for (int x = 1; x < r->width - 1; x++)
		if (!RECON(lower)(ctx, r, q, y * R + x, RECON(min3)(facing[x - 1], facing[x], facing[x + 1])))
			return false;
	return true;
}

static tg_status
RECON(recon_block)(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	const RECON(recon) *r = arg;
	const int64_t k = r->todo[task];
	const ptrdiff_t R = r->width;
	const ptrdiff_t nbr[8] = {-R - 1, -R, -R + 1, -1, 1, R - 1, R, R + 1};
	const RECON_T *above = r->facing + (size_t) 2 * k * R,
			   *below = above + R;
	cell_fifo	q = {NULL, 0, 0, 0};
	size_t		lo,
				hi,
				steps = 0;
	int			r0,
				r1;
	bool		ok;

	RECON(block_rows)(r, k, &r0, &r1);
	lo = (size_t) r0 * R;
	hi = (size_t) r1 * R;
	ok = (!r->first || RECON(queue_marked)(ctx, r, r0, r1, &q)) &&
		(r0 == 0 || RECON(seed_from)(ctx, r, r0, above, &q)) &&
		(r1 == r->height || RECON(seed_from)(ctx, r, r1 - 1, below, &q));
	/* the FIFO, within the block: the facing rows are the neighbours' to lower */
	while (ok && q.len > 0)
	{
		const uint32_t c = fifo_pop(&q);
		const RECON_T v = r->w[c];

		if (++steps % TG_CANCEL_EVERY == 0 && tg_canceled(ctx))
		{
			fifo_free(ctx, &q);
			return tg_error_set(err, TG_ECANCELED, "fill canceled");
		}
		for (int n = 0; n < 8 && ok; n++)
		{
			const size_t m = c + nbr[n];

			if (m >= lo && m < hi)
				ok = RECON(lower)(ctx, r, &q, m, v);
		}
	}
	fifo_free(ctx, &q);
	return ok ? TG_OK : tg_error_set(err, TG_ENOMEM, "could not grow the fill's queue");
}

/* Strip k's copy of its facing rows brought up to date; fell[k]: whether they fell. */
static tg_status
RECON(facing_block)(const tg_ctx *ctx, void *arg, int64_t k, tg_error *err)
{
	const RECON(recon) *r = arg;
	const size_t R = (size_t) r->width;
	RECON_T    *f = r->facing + 2 * k * R;
	int			r0,
				r1;
	bool		fell;

	RECON(block_rows)(r, k, &r0, &r1);
	fell = facing_row_refresh(f, r0 > 0 ? r->w + (r0 - 1) * R : NULL, R * sizeof(RECON_T));
	fell |= facing_row_refresh(f + R, r1 < r->height ? r->w + r1 * R : NULL, R * sizeof(RECON_T));
	r->fell[k] = fell;
	return TG_OK;
}

/* Copy every block's facing rows; list the blocks whose facing rows fell (in order). */
static tg_status
RECON(recon_facing)(const tg_ctx *ctx, RECON(recon) *r, int *n, tg_error *err)
{
	tg_status	st = tg_parallel(ctx, r->nblocks, RECON(facing_block), r, err);

	*n = 0;
	for (int k = 0; st == TG_OK && k < r->nblocks; k++)
		if (r->fell[k])
			r->todo[(*n)++] = k;
	return st;
}

static tg_status
RECON(start_rows)(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const RECON(recon) *r = arg;
	const int	W = r->width,
				H = r->height;

	memset(r->queued + (size_t) y0 * r->queued_words, 0,
		   (size_t) (y1 - y0) * r->queued_words * sizeof(uint64_t));
	for (int y = y0; y < y1; y++)
		for (int x = 0; x < W; x++)
		{
			const size_t i = (size_t) y * W + x;

			r->w[i] = isnan(r->z[i]) ? -INFINITY
				: (x == 0 || y == 0 || x == W - 1 || y == H - 1) ? r->z[i] : INFINITY;
		}
	return TG_OK;
}

/* w: the filled surface, -inf at nodata. */
static tg_status
RECON(reconstruct)(const tg_ctx *ctx, const RECON_T *z, int W, int H, RECON_T *w, tg_error *err)
{
	RECON(recon) r = {.z = z, .w = w, .width = W, .height = H, .nblocks = 1};
	const int	threads = tg_threads_wanted(ctx);
	int			blocks = threads,
				rounds = 0,
				n;
	tg_status	st;

	/*
	 * The FIFO's blocks: how much a block has to lower in later rounds
	 * depends on where its edges fall, so on many threads, many thin blocks
	 * spread that uneven work; on a few, the extra rounds would cost more
	 * than they balance.
	 */
	if (blocks >= MANY_THREADS)
		blocks *= BLOCKS_PER_THREAD;
	if (blocks > H / MIN_BLOCK_ROWS)
		blocks = H / MIN_BLOCK_ROWS;
	r.nblocks = blocks > 1 ? blocks : 1;
	r.first = true;
	r.queued_words = ((size_t) W + 63) / 64;
	r.queued = tg_alloc(ctx, (size_t) H * r.queued_words * sizeof(uint64_t));
	r.facing = tg_alloc(ctx, (size_t) 2 * r.nblocks * W * sizeof(RECON_T));
	r.todo = tg_alloc(ctx, r.nblocks * sizeof(int64_t));
	r.fell = tg_alloc(ctx, r.nblocks * sizeof(bool));
	if (r.queued == NULL || r.facing == NULL || r.todo == NULL || r.fell == NULL)
	{
		st = tg_error_set(err, TG_ENOMEM, "could not allocate the fill's blocks");
		goto done;
	}
	st = tg_parallel_rows(ctx, W, H, RECON(start_rows), &r, err);
	if (st != TG_OK || W < 3 || H < 3)
		goto done;
	{
		tg_wave	wave;

		tg_wave_plan(ctx, &wave, 1, W - 1, 1, H - 1);
		st = tg_wavefront(ctx, &wave, RECON(scan_down), &r, err);
		wave.backward = true;
		if (st == TG_OK)
			st = tg_wavefront(ctx, &wave, RECON(scan_up), &r, err);
	}
	if (st == TG_OK)
		st = RECON(recon_facing)(ctx, &r, &n, err);
	for (int k = 0; k < r.nblocks; k++)
		r.todo[k] = k;
	for (n = r.nblocks; st == TG_OK && n > 0; rounds++)
	{
		st = tg_parallel(ctx, n, RECON(recon_block), &r, err);
		r.first = false;
		if (st == TG_OK)
			st = RECON(recon_facing)(ctx, &r, &n, err);
	}
	if (ctx->stats)
		ctx->stats->iterations = rounds;
done:
	tg_free(ctx, r.queued);
	tg_free(ctx, r.facing);
	tg_free(ctx, r.todo);
	tg_free(ctx, r.fell);
	return st;
}

/*
 * A band decoded into T (decode_rows), or a surface in T written into the
 * output's type (output_rows): fill_cpu.c's other fills use the double
 * ones too.
 */
typedef struct RECON(band_job)
{
	const tg_band *dem;
	RECON_T    *z;
	const RECON_T *w;
	void	   *out;
	bool		out_single;
	double		out_nodata;
} RECON(band_job);

static tg_status
RECON(decode_rows)(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const RECON(band_job) *j = arg;

	for (int y = y0; y < y1; y++)
		RECON_DECODE(j->dem, y, j->z + (size_t) y * j->dem->width);
	return TG_OK;
}

/* The surface into the output's type, nodata (-inf or NaN in w) as out_nodata; w may be out itself. */
static tg_status
RECON(output_rows)(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const RECON(band_job) *j = arg;
	const size_t W = (size_t) j->dem->width;

	for (size_t i = (size_t) y0 * W; i < (size_t) y1 * W; i++)
	{
		const double v = j->w[i] > -INFINITY ? (double) j->w[i] : j->out_nodata;

		if (j->out_single)
			((float *) j->out)[i] = (float) v;
		else
			((double *) j->out)[i] = v;
	}
	return TG_OK;
}

/* The fill without epsilon of a band in T, into out (out_type, out_nodata). */
static tg_status
RECON(fill_band)(const tg_ctx *ctx, const tg_band *dem, tg_pixtype out_type, double out_nodata,
				 void *out, tg_error *err)
{
	const size_t n = (size_t) dem->width * dem->height;
	const bool	in_place = out_type == RECON_PT;
	RECON(band_job) j = {dem, NULL, NULL, out, out_type == TG_PT_32BF, out_nodata};
	RECON_T    *w;
	tg_status	st;

	j.z = tg_alloc(ctx, (n ? n : 1) * sizeof(RECON_T));
	w = in_place ? out : tg_alloc(ctx, (n ? n : 1) * sizeof(RECON_T));
	j.w = w;
	if (j.z == NULL || w == NULL)
		st = tg_error_set(err, TG_ENOMEM, "could not allocate %zu bytes for the fill",
						  2 * n * sizeof(RECON_T));
	else
		st = tg_parallel_rows(ctx, dem->width, dem->height, RECON(decode_rows), &j, err);
	if (st == TG_OK)
		st = RECON(reconstruct)(ctx, j.z, dem->width, dem->height, w, err);
	if (st == TG_OK)
		st = tg_parallel_rows(ctx, dem->width, dem->height, RECON(output_rows), &j, err);
	tg_free(ctx, j.z);
	if (!in_place)
		tg_free(ctx, w);
	return st;
}
