/*
 * part_flats.c — flats that cross part boundaries: each part's crossing
 * cells and their distances walked (scale/seams/) in rounds
 * (tg_part_flats), each from what the boundary values the coordinator hands
 * round (tg_parts_put_flats) lowered, then
 * each flat's greatest distance away (tg_part_heights, tg_parts_put_heights,
 * tg_part_read_heights), which its masks need.
 */
#include "scale/parts/part_state.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The part's crossing cells kept (their places in its rows, seeds and flats) for the rounds to come. */
static tg_status
keep_crossing(const tg_part *part, const tg_crossing_list *list, tg_error *err)
{
	part_state *s = part->state;

	s->cell = keep_alloc(part, (list->n ? list->n : 1) * sizeof(uint32_t));
	s->seed = keep_alloc(part, list->n ? list->n : 1);
	s->comp = keep_alloc(part, (list->n ? list->n : 1) * sizeof(int32_t));
	if (s->cell == NULL || s->seed == NULL || s->comp == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not keep %zu cells of flats across parts", list->n);
	memcpy(s->cell, list->cell, list->n * sizeof(uint32_t));
	memcpy(s->seed, list->seed, list->n);
	memcpy(s->comp, list->flat, list->n * sizeof(int32_t));
	s->nflat = list->n;
	s->ncomp = (size_t) list->nflats;
	return TG_OK;
}

/* Each flat's label from its own cells: 1 + the grid cell number of its first (cells are in raster order). */
static tg_status
flats_least(tg_part *part, tg_error *err)
{
	part_state *s = part->state;

	s->comp_least = keep_alloc(part, s->ncomp * sizeof(int64_t));
	s->least = keep_alloc(part, s->ncomp * sizeof(int64_t));
	if (s->comp_least == NULL || s->least == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not keep a part's %zu flats", s->ncomp);
	for (size_t f = 0; f < s->ncomp; f++)
		s->comp_least[f] = 0;
	for (size_t c = 0; c < s->nflat; c++)
		if (s->comp_least[s->comp[c]] == 0)
			s->comp_least[s->comp[c]] = 1 + (int64_t) (s->row0 + s->cell[c] / s->W) * s->W + s->cell[c] % s->W;
	return TG_OK;
}

/* Round 0 of the flats: the neighbours' rows around the surface, the crossing flats' cells. */
static tg_status
flats_begin(const tg_ctx *ctx, tg_part *part, reader *r, tg_error *err)
{
	part_state *s = part->state;
	const size_t W = (size_t) s->W,
				n = W * s->H;
	int			first,
				count;
	tg_crossing_list list;
	tg_band		z;
	tg_status	st;

	if (s->index > 0)
		get_values(r, s->z, 2 * W);
	if (s->index + 1 < s->count)
		get_values(r, s->z + 2 * W + n, 2 * W);
	if (r->bad)
		return tg_error_set(err, TG_EDATA, "a flats message's neighbour rows do not decode");
	routed_rows(s, &first, &count);
	z = (tg_band) {TG_PT_64BF, false, false, false, 0, s->W, count, s->z + (size_t) first * W};
	st = tg_crossing_flats(ctx, &z, 2 - first, s->H, &list, err);
	if (st != TG_OK)
		return st;
	st = keep_crossing(part, &list, err);
	if (st == TG_OK)
	{
		/* the crossing cells to walk over, the distances at their seeds */
		tg_seam_flats_init(&s->flats, &part->keep, s->W);
		st = tg_seam_flats_append(ctx, &s->flats, 0, &list, err);
	}
	tg_crossing_list_free(ctx, &list);
	if (st != TG_OK)
		return st;
	s->at = keep_alloc(part, n * sizeof(int32_t));
	s->mask = keep_alloc(part, s->nflat * sizeof(int32_t));
	s->nb_towards = keep_alloc(part, 2 * W * sizeof(int32_t));
	s->nb_away = keep_alloc(part, 2 * W * sizeof(int32_t));
	s->nb_label = keep_alloc(part, 2 * W * sizeof(int64_t));
	s->nb_mask = keep_alloc(part, 2 * W * sizeof(int32_t));
	s->sent = keep_alloc(part, 32 * W);
	s->edge = keep_alloc(part, s->nflat * sizeof(uint32_t));
	if (!s->at || !s->mask || !s->nb_towards || !s->nb_away || !s->nb_label || !s->nb_mask || !s->sent || !s->edge)
		return tg_error_set(err, TG_ENOMEM, "could not keep the flats of a part of %zu cells", n);
	tg_parallel_memset(ctx, s->at, 0xff, n * sizeof(int32_t));
	for (size_t j = 0; j < s->nflat; j++)
		if (s->cell[j] < W || s->cell[j] >= n - W)
			s->edge[s->nedge++] = (uint32_t) j;
	memset(s->nb_towards, 0, 2 * W * sizeof(int32_t));
	memset(s->nb_away, 0, 2 * W * sizeof(int32_t));
	memset(s->nb_label, 0, 2 * W * sizeof(int64_t));
	memset(s->sent, 0, 32 * W);
	for (size_t j = 0; j < s->nflat; j++)
		s->at[s->cell[j]] = (int32_t) j;
	st = flats_least(part, err);
	return st == TG_OK ? tg_seam_flats_link(ctx, &s->flats, s->H, err) : st;
}

/*
 * Crossing-flat neighbour j of own cell c (index in cell[]) at offset k, or
 * -1; *nb: the neighbour lies in the row above (0) or below (1) at column
 * *col instead, where its values are the neighbours'.
 */
static int64_t
flat_neighbour(const part_state *s, size_t c, int k, int *nb, int *col)
{
	const int	x = (int) (s->cell[c] % s->W) + tg_nbr_dx(k),
				y = (int) (s->cell[c] / s->W) + tg_nbr_dy(k);
	const double zc = s->z[2 * (size_t) s->W + s->cell[c]];

	*nb = -1;
	if (x < 0 || x >= s->W || s->z[(size_t) (y + 2) * s->W + x] != zc)
		return -1;
	if (y < 0 || y >= s->H)
	{
		*nb = y < 0 ? 0 : 1;
		*col = x;
		return -1;
	}
	return s->at[(size_t) y * s->W + x];
}

/*
 * The edge cells' distances lowered by what the neighbours hold across the
 * boundary (their value + 1), those lowered listed (their indices in cell[];
 * room for nedge each); the walk carries it on over the flats.
 */
static void
flats_lower_edges(const part_state *s, uint32_t *lowered[2], size_t n[2])
{
	n[0] = n[1] = 0;
	for (size_t e = 0; e < s->nedge; e++)
	{
		const uint32_t c = s->edge[e];
		bool		fell[2] = {false, false};

		for (int k = 0; k < 8; k++)
		{
			int			side,
						col;

			(void) flat_neighbour(s, c, k, &side, &col);
			for (int p = 0; side >= 0 && p < 2; p++)
			{
				const int32_t v = (p == 0 ? s->nb_towards : s->nb_away)[(size_t) side * s->W + col];
				int32_t    *d = &s->flats.d[p][c];

				if (v > 0 && v + 1 < *d)
				{
					*d = v + 1;
					fell[p] = true;
				}
			}
		}
		for (int p = 0; p < 2; p++)
			if (fell[p])
				lowered[p][n[p]++] = c;
	}
}

/*
 * Each flat's label: 1 + the smallest grid cell number among its cells,
 * here and, through the boundary, beyond (least[]).
 */
static void
flats_label(const part_state *s)
{
	memcpy(s->least, s->comp_least, s->ncomp * sizeof(int64_t));
	for (size_t e = 0; e < s->nedge; e++)
	{
		const uint32_t c = s->edge[e];

		for (int k = 0; k < 8; k++)
		{
			int			side,
						col;
			int64_t		v;

			(void) flat_neighbour(s, c, k, &side, &col);
			v = side >= 0 ? s->nb_label[(size_t) side * s->W + col] : 0;
			if (v > 0 && v < s->least[s->comp[c]])
				s->least[s->comp[c]] = v;
		}
	}
}

/*
 * The values of own row y's crossing cells (towards, away, label; 0
 * elsewhere) into out (16 * W bytes): W int32, W int32, W int64.
 */
static void
row_values(const part_state *s, int y, uint8_t *out)
{
	const int32_t *at = s->at + (size_t) y * s->W;
	const size_t W = (size_t) s->W;

	for (size_t x = 0; x < W; x++)
	{
		const int32_t t = at[x] < 0 ? 0 : flat_dist(s, 0, (size_t) at[x]),
					a = at[x] < 0 ? 0 : flat_dist(s, 1, (size_t) at[x]);
		const int64_t l = at[x] < 0 ? 0 : s->least[s->comp[at[x]]];

		memcpy(out + 4 * x, &t, 4);
		memcpy(out + 4 * (W + x), &a, 4);
		memcpy(out + 8 * (W + x), &l, 8);
	}
}

/*
 * A row block's change since it was last sent (row_values' layout: W
 * uint32, W uint32, W uint64), written over `now` as the difference of each
 * cell's change from its left neighbour's (mod 2^32, 2^64): distances and
 * labels along a boundary run smoothly, so that mostly small numbers and
 * zeros travel; `sent` becomes now.
 */
static void
encode_change(uint8_t *now, uint8_t *sent, size_t W)
{
	for (int which = 0; which < 3; which++)
	{
		const size_t size = which < 2 ? 4 : 8,
					base = which < 2 ? which * 4 * W : 8 * W;
		uint64_t	before = 0;

		for (size_t x = 0; x < W; x++)
		{
			uint64_t	v = 0,
						old = 0,
						change,
						out;

			memcpy(&v, now + base + size * x, size);
			memcpy(&old, sent + base + size * x, size);
			memcpy(sent + base + size * x, &v, size);
			change = v - old;
			out = change - before;
			before = change;
			memcpy(now + base + size * x, &out, size);
		}
	}
}

/* Apply a neighbour row block's change (encode_change) to what the part holds of it. */
static void
apply_row_change(const uint8_t *change, size_t W, int32_t *towards, int32_t *away, int64_t *label)
{
	uint32_t	ct = 0,
				ca = 0;
	uint64_t	cl = 0;

	for (size_t x = 0; x < W; x++)
	{
		uint32_t	t,
					a;
		uint64_t	l;

		memcpy(&t, change + 4 * x, 4);
		memcpy(&a, change + 4 * (W + x), 4);
		memcpy(&l, change + 8 * (W + x), 8);
		ct += t;
		ca += a;
		cl += l;
		towards[x] = (int32_t) ((uint32_t) towards[x] + ct);
		away[x] = (int32_t) ((uint32_t) away[x] + ca);
		label[x] = (int64_t) ((uint64_t) label[x] + cl);
	}
}

/*
 * A row block's change (encode_change) as a section: its 3 W numbers as
 * zigzagged varints, nothing where every one is zero.
 */
static void
put_change_block(writer *w, const uint8_t *change, size_t W)
{
	const size_t at = begin_section(w);
	bool		any = false;

	for (size_t b = 0; b < 16 * W && !any; b++)
		any = change[b] != 0;
	for (size_t x = 0; any && x < 2 * W; x++)
	{
		uint32_t	v;

		memcpy(&v, change + 4 * x, 4);
		put_varint(w, zigzag((int32_t) v));
	}
	for (size_t x = 0; any && x < W; x++)
	{
		uint64_t	v;

		memcpy(&v, change + 8 * (W + x), 8);
		put_varint(w, zigzag((int64_t) v));
	}
	end_section(w, at);
}

/* A put_change_block into change (16 W bytes, encode_change's layout). */
static void
get_change_block(reader *r, uint8_t *change, size_t W)
{
	reader		sec = get_section(r);

	memset(change, 0, 16 * W);
	for (size_t x = 0; sec.left > 0 && x < 2 * W; x++)
	{
		const uint32_t v = (uint32_t) unzigzag(get_varint(&sec));

		memcpy(change + 4 * x, &v, 4);
	}
	for (size_t x = 0; sec.left > 0 && x < W; x++)
	{
		const uint64_t v = (uint64_t) unzigzag(get_varint(&sec));

		memcpy(change + 8 * (W + x), &v, 8);
	}
	if (sec.bad || sec.left != 0)
		r->bad = true;
}

/* A round of the flats: the neighbours' boundary values in, ours out. */
tg_status
tg_part_flats(const tg_ctx *ctx, const tg_op *op, tg_part *part, reader *r, tg_error *err)
{
	part_state *s = part->state;
	const int	round = get_i32(r);
	writer		w = {.ctx = ctx};
	tg_status	st = TG_OK;

	/* round 0 keeps the neighbours' rows, then links the walk (d[0]): a later round needs both */
	if (s == NULL || round < 0 || (round > 0 && s->flats.d[0] == NULL))
		return tg_error_set(err, TG_EDATA, "a flats message reached a part that kept no flats");
	if (round == 0)
		st = flats_begin(ctx, part, r, err);
	if (st != TG_OK)
		return st;
	/* the neighbours' rows: each round their change since the last (encode_change) */
	for (int side = 0; side < 2; side++)
	{
		uint8_t    *change = tg_alloc(ctx, 16 * (size_t) s->W);

		if (change == NULL)
			return tg_error_set(err, TG_ENOMEM, "could not allocate a part's flat values");
		get_change_block(r, change, (size_t) s->W);
		if (!r->bad)
			apply_row_change(change, s->W, s->nb_towards + (size_t) side * s->W, s->nb_away + (size_t) side * s->W,
							 s->nb_label + (size_t) side * s->W);
		tg_free(ctx, change);
	}
	st = reader_done(r, "a flats message", err);
	if (st == TG_OK)
	{
		uint32_t   *lowered[2] = {tg_alloc(ctx, (s->nedge ? s->nedge : 1) * sizeof(uint32_t)),
			tg_alloc(ctx, (s->nedge ? s->nedge : 1) * sizeof(uint32_t))};
		tg_flat_lowered low = {{lowered[0], lowered[1]}, {0, 0}};

		if (lowered[0] == NULL || lowered[1] == NULL)
			st = tg_error_set(err, TG_ENOMEM, "could not allocate a part's %zu edge cells of flats", s->nedge);
		if (st == TG_OK)
		{
			/* the first round from the seeds over every cell; later ones from what the boundary lowered */
			flats_lower_edges(s, lowered, low.n);
			st = tg_seam_flats_walk(ctx, &s->flats, round == 0 ? NULL : &low, err);
		}
		tg_free(ctx, lowered[0]);
		tg_free(ctx, lowered[1]);
	}
	if (st == TG_OK)
		flats_label(s);
	if (st == TG_OK)
	{
		/* our first and last rows' change since the last round */
		const size_t bytes = 32 * (size_t) s->W;
		uint8_t    *now = tg_alloc(ctx, bytes);

		if (now == NULL)
			return tg_error_set(err, TG_ENOMEM, "could not allocate a part's flat values");
		row_values(s, 0, now);
		row_values(s, s->H - 1, now + bytes / 2);
		encode_change(now, s->sent, s->W);
		encode_change(now + bytes / 2, s->sent + bytes / 2, s->W);
		put_header(&w, TG_PART_FLATS | REPLY, op->kind);
		put_change_block(&w, now, (size_t) s->W);
		put_change_block(&w, now + bytes / 2, (size_t) s->W);
		tg_free(ctx, now);
		st = writer_done(&w, &part->reply, err);
	}
	return st;
}

/* Each crossing flat's greatest distance from higher ground, over the part's cells. */
static int
cmp_label_height(const void *a, const void *b)
{
	int64_t		x,
				y;

	memcpy(&x, a, sizeof x);
	memcpy(&y, b, sizeof y);
	return (x > y) - (x < y);
}

typedef struct label_height
{
	int64_t		label;
	int32_t		height;
} label_height;

tg_status
tg_part_heights(const tg_ctx *ctx, const tg_op *op, tg_part *part, tg_error *err)
{
	const part_state *s = part->state;
	label_height *lh = tg_alloc(ctx, (s->ncomp ? s->ncomp : 1) * sizeof(label_height));
	size_t		m = 0;
	writer		w = {.ctx = ctx};
	tg_status	st;

	if (lh == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate a part's flat heights");
	for (size_t f = 0; f < s->ncomp; f++)
		lh[f] = (label_height) {s->least[f], 0};
	for (size_t c = 0; c < s->nflat; c++)
	{
		const int32_t a = flat_dist(s, 1, c);
		label_height *h = &lh[s->comp[c]];

		h->height = a > h->height ? a : h->height;
	}
	/* the part's flats of one label (joined beyond the part) as one */
	qsort(lh, s->ncomp, sizeof *lh, cmp_label_height);
	for (size_t f = 0; f < s->ncomp; f++)
		if (m > 0 && lh[m - 1].label == lh[f].label)
			lh[m - 1].height = lh[f].height > lh[m - 1].height ? lh[f].height : lh[m - 1].height;
		else
			lh[m++] = lh[f];
	put_header(&w, TG_PART_HEIGHTS | REPLY, op->kind);
	put(&w, &m, sizeof m);
	for (size_t i = 0; i < m; i++)
	{
		put(&w, &lh[i].label, sizeof lh[i].label);
		put(&w, &lh[i].height, sizeof lh[i].height);
	}
	st = writer_done(&w, &part->reply, err);
	tg_free(ctx, lh);
	return st;
}

static int32_t
height_of(const label_height *lh, size_t m, int64_t label)
{
	size_t		lo = 0,
				hi = m;

	while (lo < hi)
	{
		size_t		mid = lo + (hi - lo) / 2;

		if (lh[mid].label < label)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < m && lh[lo].label == label ? lh[lo].height : 0;
}

/* Every crossing flat's height (from the coordinator), and from them the masks of the part's crossing cells and its neighbours'. */
tg_status
tg_part_read_heights(const tg_ctx *ctx, tg_part *part, reader *r, tg_error *err)
{
	part_state *s = part->state;
	const size_t W = (size_t) s->W;
	size_t		m = 0;
	label_height *lh;
	int32_t    *height;			/* of each of the part's flats */

	get(r, &m, sizeof m);
	if (r->bad || m > r->left / (sizeof(int64_t) + sizeof(int32_t)))
		return tg_error_set(err, TG_EDATA, "a part message's flat heights are truncated");
	if ((lh = tg_alloc(ctx, (m ? m : 1) * sizeof(label_height))) == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate %zu flat heights", m);
	for (size_t i = 0; i < m; i++)
	{
		get(r, &lh[i].label, sizeof lh[i].label);
		get(r, &lh[i].height, sizeof lh[i].height);
	}
	/* the own masks once (the distances are then let go) */
	if (s->flats.d[0] != NULL)
	{
		if ((height = tg_alloc(ctx, (s->ncomp ? s->ncomp : 1) * sizeof(int32_t))) == NULL)
		{
			tg_free(ctx, lh);
			return tg_error_set(err, TG_ENOMEM, "could not allocate %zu flat heights", s->ncomp);
		}
		for (size_t f = 0; f < s->ncomp; f++)
			height[f] = height_of(lh, m, s->least[f]);
		for (size_t c = 0; c < s->nflat; c++)
			s->mask[c] = tg_flat_mask_value(flat_dist(s, 0, c), flat_dist(s, 1, c), height[s->comp[c]]);
		tg_free(ctx, height);
	}
	for (size_t i = 0; i < 2 * W; i++)
		s->nb_mask[i] = s->nb_label[i] > 0 ?
			tg_flat_mask_value(s->nb_towards[i], s->nb_away[i], height_of(lh, m, s->nb_label[i])) : 0;
	tg_free(ctx, lh);
	tg_seam_flats_free(&s->flats);
	return TG_OK;
}

/*
 * Round 0: the neighbours' surface rows; every round: the change of their
 * boundary values in the round before (none before the first).
 */
tg_status
tg_parts_put_flats(writer *w, const coordinator *c, int i, tg_error *err)
{
	const size_t W = (size_t) c->W;

	put_i32(w, c->round);
	for (int side = 0; side < 2 && c->round == 0; side++)
	{
		const int	j = neighbour(c, i, side);
		reader		r;
		tg_op_kind	k;
		double	   *rows;
		tg_status	st;

		if (j < 0)
			continue;
		st = open_reader(&r, &c->slot[TG_PART_SURFACE][j], TG_PART_SURFACE | REPLY, &k, "a surface reply", err);
		rows = tg_alloc(c->ctx, 2 * W * sizeof(double));
		if (st == TG_OK && rows == NULL)
			st = tg_error_set(err, TG_ENOMEM, "could not allocate a part's surface rows");
		/*
		 * The part above: its last two rows, after its first two (sent
		 * unless it is the top part); the part below: its first two.
		 */
		if (st == TG_OK && side == 0)
		{
			if (neighbour(c, j, 0) >= 0)
				get_values(&r, rows, 2 * W);
			get_values(&r, rows, 2 * W);
			st = reader_done(&r, "a surface reply", err);
		}
		else if (st == TG_OK)
		{
			get_values(&r, rows, 2 * W);
			if (r.bad)
				st = tg_error_set(err, TG_EDATA, "the surface reply of %s is truncated", c->names[j]);
		}
		if (st == TG_OK)
			put_values(w, rows, 2 * W);
		tg_free(c->ctx, rows);
		if (st != TG_OK)
			return st;
	}
	for (int side = 0; side < 2; side++)
	{
		const int	j = neighbour(c, i, side);
		reader		sec = {NULL, 0, false};

		if (j >= 0 && c->round > 0)
		{
			/* the part above: its last row's block, after its first row's; the part below: its first row's */
			const tg_part_bytes *b = &c->slot[TG_PART_FLATS][j];
			reader		r = {b->data + 6, b->size - 6, b->size < 6};

			sec = get_section(&r);
			if (side == 0)
				sec = get_section(&r);
			if (sec.bad)
				return tg_error_set(err, TG_EDATA, "the flats reply of %s is truncated", c->names[j]);
		}
		put_section(w, sec.p, sec.left);
	}
	return TG_OK;
}

/* Every crossing flat's height: the greatest over the parts' replies. */
tg_status
tg_parts_put_heights(writer *w, const coordinator *c, tg_error *err)
{
	label_height *all = NULL;
	size_t		total = 0,
				m = 0;

	for (int i = 0; i < c->n; i++)
	{
		reader		r;
		tg_op_kind	k;
		size_t		count;
		label_height *grown;
		tg_status	st = open_reader(&r, &c->slot[TG_PART_HEIGHTS][i], TG_PART_HEIGHTS | REPLY, &k, "a heights reply",
									 err);

		if (st != TG_OK)
		{
			tg_free(c->ctx, all);
			return st;
		}
		get(&r, &count, sizeof count);
		if (r.bad || count > r.left / (sizeof(int64_t) + sizeof(int32_t)))
		{
			tg_free(c->ctx, all);
			return tg_error_set(err, TG_EDATA, "the heights reply of %s is truncated", c->names[i]);
		}
		grown = tg_alloc(c->ctx, (total + count + 1) * sizeof(label_height));
		if (grown == NULL)
		{
			tg_free(c->ctx, all);
			return tg_error_set(err, TG_ENOMEM, "could not allocate the flats' heights");
		}
		if (total)
			memcpy(grown, all, total * sizeof(label_height));
		tg_free(c->ctx, all);
		all = grown;
		for (size_t j = 0; j < count; j++, total++)
		{
			get(&r, &all[total].label, sizeof all[total].label);
			get(&r, &all[total].height, sizeof all[total].height);
		}
	}
	qsort(all, total, sizeof *all, cmp_label_height);
	for (size_t j = 0; j < total; j++)
		if (m > 0 && all[m - 1].label == all[j].label)
			all[m - 1].height = all[j].height > all[m - 1].height ? all[j].height : all[m - 1].height;
		else
			all[m++] = all[j];
	put(w, &m, sizeof m);
	for (size_t j = 0; j < m; j++)
	{
		put(w, &all[j].label, sizeof all[j].label);
		put(w, &all[j].height, sizeof all[j].height);
	}
	tg_free(c->ctx, all);
	return TG_OK;
}
