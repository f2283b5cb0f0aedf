/*
 * part_halo.c — multiple flow across parts, round 0: the routing of the
 * rows of a part that its neighbour computes too, handed over once
 * (tg_part_put_halo_routing) and taken in (tg_part_get_halo_routing), only
 * where a cell whose water can come back reads it.
 */
#include "scale/parts/part_state.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The nonzero shares of a row (8 planes n apart, W cells) in raster order,
 * byte plane by byte plane from the most significant: shares lie in (0, 1],
 * so their sign and exponent bytes compress to runs.
 */
static void
put_share_planes(writer *w, const float *row, size_t n, size_t W)
{
	uint32_t   *bits = w->failed ? NULL : tg_alloc(w->ctx, 8 * W * sizeof(uint32_t) + 1);
	size_t		m = 0;

	if (bits == NULL)
	{
		w->failed = true;
		return;
	}
	for (size_t x = 0; x < W; x++)
		for (int k = 0; k < 8; k++)
			if (row[(size_t) k * n + x] != 0)
				memcpy(&bits[m++], &row[(size_t) k * n + x], sizeof(uint32_t));
	for (int b = 3; b >= 0; b--)
		for (size_t j = 0; j < m; j++)
			put_u8(w, (uint8_t) (bits[j] >> (8 * b)));
	tg_free(w->ctx, bits);
}

/* m shares of put_share_planes into out. */
static void
get_share_planes(reader *r, uint32_t *out, size_t m)
{
	if (r->bad || m > r->left / 4)
	{
		r->bad = true;
		return;
	}
	for (size_t j = 0; j < m; j++)
		out[j] = 0;
	for (int b = 3; b >= 0; b--)
		for (size_t j = 0; j < m; j++)
			out[j] |= (uint32_t) r->p[(size_t) (3 - b) * m + j] << (8 * b);
	r->p += 4 * m;
	r->left -= 4 * m;
}

/*
 * Of the part's rows that the neighbour on `side` computes too (rows j = 0
 * .. flow_halo, halo_row), mark in reach the cells whose water reaches the
 * neighbour's rows without leaving them: the halo's, and of the row the
 * neighbour takes in those that drain into such cells.  The routing of the
 * others changes nothing of the neighbour's own values.
 */
static bool
halo_reach(const tg_ctx *ctx, const tg_op *op, const part_state *s, int side, uint8_t *reach)
{
	const size_t W = (size_t) s->W,
				cells = W * (s->flow_halo + 1);
	const int	toward = side == 0 ? -1 : 1;
	const tg_route route = flow_route(op, s);
	const tg_route_view v = tg_cpu_route_view(&route, op->flow.threshold);
	uint32_t   *queue = tg_alloc(ctx, cells * sizeof(uint32_t));
	size_t		head = 0,
				tail = 0;

	if (queue == NULL)
		return false;
	memset(reach, 0, cells);
	for (size_t x = 0; x < W; x++)
		for (int k = 0; k < 8; k++)
		{
			const long	nx = (long) x + tg_nbr_dx(k);

			if (tg_nbr_dy(k) == toward && nx >= 0 && nx < (long) W &&
				tg_route_drains_to(&v, halo_row(s, side, 0) * W + x, k) && !reach[x])
			{
				reach[x] = 1;
				queue[tail++] = (uint32_t) x;
			}
		}
	while (head < tail)
	{
		const uint32_t q = queue[head++];
		const int	j = (int) (q / W);
		const size_t x = q % W,
					i = halo_row(s, side, j) * W + x;
		const unsigned donors = j < s->flow_halo ? tg_route_donors(&v, i) : 0;

		for (int k = 0; k < 8; k++)
			if ((donors >> k) & 1u)
			{
				const int	dj = j - toward * tg_nbr_dy(k);
				const size_t at = (size_t) dj * W + x + tg_nbr_dx(k);

				if (dj >= 0 && dj <= s->flow_halo && !reach[at])
				{
					reach[at] = 1;
					queue[tail++] = (uint32_t) at;
				}
			}
	}
	tg_free(ctx, queue);
	return true;
}

/*
 * The mask of the cell of the part's row y (-1 and H: the neighbours' rows
 * next to it), column x, where it is a cell of a flat that crosses a part
 * boundary: false where it is not.
 */
static bool
crossing_mask(const part_state *s, int y, size_t x, int32_t *m)
{
	const size_t W = (size_t) s->W;

	if (y >= 0 && y < s->H)
	{
		const int32_t at = s->at[(size_t) y * W + x];

		if (at >= 0)
			*m = s->mask[at];
		return at >= 0;
	}
	if ((y == -1 || y == s->H) && has_neighbour(s, y == -1 ? 0 : 1))
	{
		const size_t o = (y == -1 ? 0 : W) + x;

		if (s->nb_label[o] > 0)
			*m = s->nb_mask[o];
		return s->nb_label[o] > 0;
	}
	return false;
}

/* The neighbour distances of grid row `row` (the op's geometry is the part's). */
static void
row_distances(const tg_op *op, int row, double dist[8])
{
	double		dx,
				dy;

	tg_row_spacing(&op->flow.geom, row - op->flow.geom.row0, &dx, &dy);
	tg_nbr_distances(dx, dy, dist);
}

/*
 * Of depths 0 .. h + 1 from the boundary (rows of W), the cells a reached
 * cell (reach: depths 0 .. h) reads to be routed: itself and its
 * neighbours.
 */
static void
halo_need(const uint8_t *reach, size_t W, size_t h, uint8_t *need)
{
	memset(need, 0, (h + 2) * W);
	for (size_t j = 0; j <= h; j++)
		for (size_t x = 0; x < W; x++)
			if (reach[j * W + x])
				for (size_t d = j > 0 ? j - 1 : 0; d <= j + 1; d++)
					for (size_t c = x > 0 ? x - 1 : 0; c <= x + 1 && c < W; c++)
						need[d * W + c] = 1;
}

/* n flags as a bitmap. */
static void
put_bits(writer *w, const uint8_t *flag, size_t n)
{
	for (size_t x = 0; x < n; x += 8)
	{
		uint8_t		b = 0;

		for (size_t e = 0; e < 8 && x + e < n; e++)
			b |= (uint8_t) ((flag[x + e] != 0) << e);
		put_u8(w, b);
	}
}

static void
get_bits(reader *r, uint8_t *flag, size_t n)
{
	for (size_t x = 0; x < n && !r->bad; x += 8)
	{
		const uint8_t b = get_u8(r);

		for (size_t e = 0; e < 8 && x + e < n; e++)
			flag[x + e] = (b >> e) & 1u;
	}
}

/*
 * The routing of the part's rows that the neighbour on `side` computes too
 * (halo_reach), as the neighbour can route them itself: per row j the
 * cells reached, as bitmaps; of the cells those read (halo_need), the
 * surface where the neighbour lacks it (depths 2 .. flow_halo + 1: it holds
 * the two rows next to it), then which are cells of flats that cross part
 * boundaries, as a bitmap, and their masks; then per row j the reached
 * cells on flats that do not cross: their count, codes, bytes of the
 * neighbours that get a share, and those shares (put_share_planes).  The
 * cells reached of the row it takes in into taken (W).
 */
void
tg_part_put_halo_routing(writer *w, const tg_op *op, const part_state *s, int side, uint8_t *taken)
{
	const size_t W = (size_t) s->W,
				n = W * flow_rows(s),
				h = (size_t) s->flow_halo;
	uint8_t    *reach = w->failed ? NULL : tg_alloc(w->ctx, W * (h + 1));
	uint8_t    *need = w->failed ? NULL : tg_alloc(w->ctx, W * (h + 2));
	uint8_t    *crossing = w->failed ? NULL : tg_alloc(w->ctx, W * (h + 2));
	int32_t    *masks = w->failed ? NULL : tg_alloc(w->ctx, W * (h + 2) * sizeof(int32_t));
	float	   *row = w->failed ? NULL : tg_alloc(w->ctx, 8 * W * sizeof(float));
	double	   *beyond = w->failed ? NULL : tg_alloc(w->ctx, h * W * sizeof(double) + 1);
	size_t		nz = 0,
				nc = 0,
				nm = 0;
	int64_t		prev = 0;

	if (reach == NULL || need == NULL || crossing == NULL || masks == NULL || row == NULL || beyond == NULL ||
		!halo_reach(w->ctx, op, s, side, reach))
	{
		w->failed = true;
		goto done;
	}
	memcpy(taken, reach + h * W, W);
	put_bits(w, reach, (h + 1) * W);
	halo_need(reach, W, h, need);
	/* depth d is own row d (side 0) or H - 1 - d (row 2 + that of s->z; -1 and H: the rows around) */
	for (size_t d = 0; d <= h + 1; d++)
	{
		const int	y = side == 0 ? (int) d : s->H - 1 - (int) d;

		for (size_t x = 0; x < W; x++)
		{
			if (!need[d * W + x])
				continue;
			if (d >= 2)
				beyond[nz++] = s->z[(size_t) (y + 2) * W + x];
			crossing[nc] = crossing_mask(s, y, x, &masks[nm]);
			nm += crossing[nc++];
		}
	}
	put_values(w, beyond, nz);
	put_bits(w, crossing, nc);
	for (size_t j = 0; j < nm; j++)
	{
		put_varint(w, zigzag(masks[j] - prev));
		prev = masks[j];
	}
	for (size_t j = 0; j <= h; j++)
	{
		const size_t y = halo_row(s, side, (int) j),
					zy = y + 2 - flow_own0(s);	/* its row in s->z */
		uint8_t    *in = reach + j * W;
		double		dist[8];
		size_t		m = 0,
					flat = 0;

		row_distances(op, s->row0 + (int) y - (int) flow_own0(s), dist);
		/* the reached cells on flats that do not cross (whose masks go with them), marked in `in` as 2 */
		for (size_t x = 0; x < W; x++)
		{
			uint8_t		d8;
			int32_t		mask;

			if (in[x] && !crossing_mask(s, (int) zy - 2, x, &mask) &&
				tg_cpu_route_cell(s->z, s->W, s->H + 4, (int) x, (int) zy, &op->flow, dist, &d8, NULL) ==
				TG_CELL_FLAT)
			{
				in[x] = 2;
				flat++;
			}
		}
		put_varint(w, flat);
		for (size_t x = 0; x < W; x++)
			if (in[x] == 2)
				put_u8(w, s->flow_d8[y * W + x]);
		for (size_t x = 0; x < W; x++)
			if (in[x] == 2)
			{
				uint8_t		bits = 0;

				for (int k = 0; k < 8; k++)
				{
					const float f = s->flow_frac[(size_t) k * n + y * W + x];

					row[(size_t) k * W + m] = f;
					bits |= (uint8_t) ((f != 0) << k);
				}
				m++;
				put_u8(w, bits);
			}
		put_share_planes(w, row, W, m);
	}
done:
	tg_free(w->ctx, reach);
	tg_free(w->ctx, need);
	tg_free(w->ctx, crossing);
	tg_free(w->ctx, masks);
	tg_free(w->ctx, row);
	tg_free(w->ctx, beyond);
}

/*
 * A neighbour's routing (tg_part_put_halo_routing) into the rows around the part on
 * `side`: each reached cell routed from the surface (the two rows the part
 * holds and the cells handed over) as the neighbour routes it: on a slope
 * by its gradient, on a flat that crosses part boundaries down that flat's
 * mask, on another flat as handed over; cells not reached route nothing.
 * (The row taken in is never pulled, only set: what its routing says
 * beyond the computed rows, or the halo's into it, changes nothing; nor
 * does a cell of nodata there, which sends and receives no water.)
 */
tg_status
tg_part_get_halo_routing(const tg_ctx *ctx, const tg_op *op, reader *sec, part_state *s, int side, tg_error *err)
{
	const size_t W = (size_t) s->W,
				H = (size_t) s->H,
				n = W * flow_rows(s),
				h = (size_t) s->flow_halo;
	uint8_t    *reach = tg_alloc(ctx, (h + 1) * W),
			   *need = tg_alloc(ctx, (h + 2) * W),
			   *crossing = tg_alloc(ctx, (h + 2) * W),
			   *flats = tg_alloc(ctx, (h + 3) * W);
	uint32_t   *shares = tg_alloc(ctx, 8 * W * sizeof(uint32_t));
	int32_t    *masks = tg_alloc(ctx, (h + 3) * W * sizeof(int32_t));
	double	   *z = tg_alloc(ctx, (h + 3) * W * sizeof(double)),
			   *beyond = tg_alloc(ctx, h * W * sizeof(double) + 1);
	const bool	oom = !reach || !need || !crossing || !flats || !shares || !masks || !z || !beyond;
	size_t		nz = 0,
				nc = 0,
				at = 0;
	int64_t		prev = 0;

	if (oom)
		sec->bad = true;
	else if (sec->left > 0)
	{
		/*
		 * The surface, flats and masks from the part's edge row to depth
		 * h + 1 of the neighbour's, in raster order: depth d at row
		 * h + 1 - d above the part's first row (side 0), at row d + 1 below
		 * its last (side 1).  Depths 0 and 1 are the rows around the part
		 * it holds; cells no reached cell reads stay 0.
		 */
		get_bits(sec, reach, (h + 1) * W);
		halo_need(reach, W, h, need);
		for (size_t i = 0; i < (h + 2) * W; i++)
		{
			nz += i >= 2 * W && need[i];
			nc += need[i];
		}
		get_values(sec, beyond, nz);
		get_bits(sec, crossing, nc);
		memset(z, 0, (h + 3) * W * sizeof(double));
		memset(flats, 0, (h + 3) * W);
		memset(masks, 0, (h + 3) * W * sizeof(int32_t));
		memcpy(z + (side == 0 ? h + 2 : 0) * W, s->z + (side == 0 ? 2 : H + 1) * W, W * sizeof(double));
		for (size_t x = 0; x < W; x++)
		{
			const size_t edge = (side == 0 ? h + 2 : 0) * W + x;

			flats[edge] = crossing_mask(s, side == 0 ? 0 : (int) H - 1, x, &masks[edge]);
		}
		for (size_t d = 0, c = 0, b = 0; d <= h + 1 && !sec->bad; d++)
		{
			const size_t row = (side == 0 ? h + 1 - d : d + 1) * W;

			if (d < 2)
				memcpy(z + row, s->z + (side == 0 ? 1 - d : H + 2 + d) * W, W * sizeof(double));
			for (size_t x = 0; x < W && !sec->bad; x++)
			{
				if (!need[d * W + x])
					continue;
				if (d >= 2)
					z[row + x] = beyond[b++];
				if (crossing[c++])
				{
					prev += unzigzag(get_varint(sec));
					if (prev < INT32_MIN || prev > INT32_MAX)
						sec->bad = true;
					flats[row + x] = 1;
					masks[row + x] = (int32_t) prev;
				}
			}
		}
	}
	for (size_t j = 0; j <= h && !sec->bad && sec->left > 0; j++)
	{
		const size_t y = around_row(s, side, (int) j),
					zy = side == 0 ? h + 1 - j : j + 1;
		const uint64_t flat = get_varint(sec);
		size_t		m = 0;
		const uint8_t *codes,
				   *bits;
		double		dist[8];

		row_distances(op, s->row0 + (int) y - (int) flow_own0(s), dist);
		if (sec->bad || flat > W || 2 * flat > sec->left)
		{
			sec->bad = true;
			break;
		}
		codes = sec->p;
		bits = sec->p + flat;
		sec->p += 2 * flat;
		sec->left -= 2 * flat;
		for (size_t c = 0; c < flat; c++)
			m += (size_t) __builtin_popcount(bits[c]);
		get_share_planes(sec, shares, m);
		m = 0;
		at = 0;
		for (size_t x = 0; x < W && !sec->bad; x++)
		{
			uint8_t		d = TG_NO_DIRECTION;
			float		share[8] = {0, 0, 0, 0, 0, 0, 0, 0};
			const tg_cell_kind kind = reach[j * W + x] ?
				tg_cpu_route_cell(z, s->W, (int) h + 3, (int) x, (int) zy, &op->flow, dist, &d, share) :
				TG_CELL_NODATA;

			if (kind == TG_CELL_FLAT && flats[zy * W + x])
			{
				/* a flat that crosses: down its mask, as the neighbour routes it */
				if (masks[zy * W + x] != 0)
					tg_cpu_flat_route_cell(z, flats, masks, s->W, (int) h + 3, (int) x, (int) zy, &op->flow, &d, share);
			}
			else if (kind == TG_CELL_FLAT)
			{
				if (at == flat || (codes[at] != TG_NO_DIRECTION && codes[at] > 7))
				{
					sec->bad = true;
					break;
				}
				d = codes[at];
				for (int k = 0; k < 8; k++)
					if ((bits[at] >> k) & 1u)
					{
						memcpy(&share[k], &shares[m++], sizeof(float));
						if (!(share[k] > 0 && share[k] <= 1))
							sec->bad = true;
					}
				at++;
			}
			s->flow_d8[y * W + x] = d;
			for (int k = 0; k < 8; k++)
				s->flow_frac[(size_t) k * n + y * W + x] = share[k];
		}
		if (at != flat)
			sec->bad = true;
	}
	tg_free(ctx, reach);
	tg_free(ctx, need);
	tg_free(ctx, crossing);
	tg_free(ctx, flats);
	tg_free(ctx, shares);
	tg_free(ctx, masks);
	tg_free(ctx, z);
	tg_free(ctx, beyond);
	if (oom)
		return tg_error_set(err, TG_ENOMEM, "could not allocate a part's routing rows");
	return sec->bad || sec->left != 0 ? tg_error_set(err, TG_EDATA, "a flow message's routing rows are malformed")
		: TG_OK;
}
