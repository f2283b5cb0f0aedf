/*
 * part_edges.c — the edges: each part says where it lies on the grid and
 * hands over its first and last rows (tg_part_edges); the coordinator
 * stacks the parts into one grid (tg_parts_place) and later hands each part
 * the rows around it (tg_parts_put_dem_halos).
 */
#include "scale/parts/part_state.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

tg_status
tg_part_edges(const tg_ctx *ctx, const tg_op *op, const tg_job *job, tg_grid_band *g, tg_part_bytes *reply,
		   tg_error *err)
{
	const tg_layout *l = job->layout;
	const int	halo = dem_halo(op->kind);
	writer		w = {.ctx = ctx};
	double	   *first = NULL,
			   *last = NULL;
	tg_status	st = TG_OK;

	if (l->height < min_rows(op->kind))
		return tg_error_set(err, TG_EDATA, "%s has %d rows, fewer than the %d a part needs", l->name, l->height,
							min_rows(op->kind));
	st = tg_part_read(ctx, job, g, 0, halo, 0, 0, &first, err);
	if (st == TG_OK)
		st = tg_part_read(ctx, job, g, l->height - halo, halo, 0, 0, &last, err);
	if (st == TG_OK)
	{
		put_header(&w, TG_PART_EDGES | REPLY, op->kind);
		put_i32(&w, l->width);
		put_i32(&w, l->height);
		put(&w, &l->geo, sizeof l->geo);
		put_u8(&w, op_fills(op));
		put_u8(&w, multiple_flow(op));
		put_values(&w, first, (size_t) l->width * halo);
		put_values(&w, last, (size_t) l->width * halo);
		st = writer_done(&w, reply, err);
	}
	tg_free(ctx, first);
	tg_free(ctx, last);
	return st;
}

static bool
near(double a, double b, double tolerance)
{
	return fabs(a - b) <= tolerance;
}

/*
 * Part i's edges reply: its width, height and georeference; with rows, its
 * first and last rows of the DEM too (only the phases that send them need
 * them, and decoding them at every step of a flow's rounds costs).
 */
static tg_status
read_edges(coordinator *c, int i, int halo, bool rows, int *width, tg_georef *geo, tg_error *err)
{
	reader		r;
	tg_op_kind	k = TG_OP_SLOPE;	/* open_reader sets it */
	size_t		cells;
	tg_status	st = open_reader(&r, &c->slot[TG_PART_EDGES][i], TG_PART_EDGES | REPLY, &k, "an edges reply", err);

	if (st != TG_OK)
		return st;
	*width = get_i32(&r);
	c->height[i] = get_i32(&r);
	get(&r, geo, sizeof *geo);
	c->fill = get_u8(&r) != 0;
	c->multiple = get_u8(&r) != 0;
	if (r.bad || k != c->kind || *width < 1 || c->height[i] < min_rows(c->kind))
		return tg_error_set(err, TG_EDATA, "the edges reply of %s does not describe a part", c->names[i]);
	cells = (size_t) *width * halo;
	/* every value takes a byte at least: a claim beyond the reply's bytes is refused before allocating */
	if (2 * cells > r.left)
		return tg_error_set(err, TG_EDATA, "the edges reply of %s is shorter than its rows", c->names[i]);
	if (!rows)
		return TG_OK;
	c->dem_first[i] = tg_alloc(c->ctx, cells * sizeof(double) + 1);
	c->dem_last[i] = tg_alloc(c->ctx, cells * sizeof(double) + 1);
	if (!c->dem_first[i] || !c->dem_last[i])
		return tg_error_set(err, TG_ENOMEM, "could not allocate the edges of %d parts", c->n);
	get_values(&r, c->dem_first[i], cells);
	get_values(&r, c->dem_last[i], cells);
	return reader_done(&r, "an edges reply", err);
}

/*
 * Every part's place on the grid from its edges reply; they must stack into
 * one grid of whole rows.  A part's rows of tiles may begin after the grid's
 * first column or end before its last (raster2pgsql leaves out tiles of
 * nodata alone): the grid spans every part's columns, and the parts read and
 * send their rows that wide.
 */
tg_status
tg_parts_place(coordinator *c, tg_error *err)
{
	const int	n = c->n,
				halo = dem_halo(c->kind);
	const char *const *names = c->names;
	int		   *width = tg_alloc(c->ctx, n * sizeof(int));
	tg_georef  *geo = tg_alloc(c->ctx, n * sizeof(tg_georef));
	bool	   *aligned = tg_alloc(c->ctx, n * sizeof(bool));
	int64_t    *offset = tg_alloc(c->ctx, n * sizeof(int64_t)),
			   *column = tg_alloc(c->ctx, n * sizeof(int64_t)),
				first_col = 0,
				end_col = 0;
	tg_status	st = TG_OK;

	c->order = tg_alloc(c->ctx, n * sizeof(int));
	c->row0 = tg_alloc(c->ctx, n * sizeof(int));
	c->col0 = tg_alloc(c->ctx, n * sizeof(int));
	c->height = tg_alloc(c->ctx, n * sizeof(int));
	if (!width || !geo || !aligned || !offset || !column || !c->order || !c->row0 || !c->col0 || !c->height)
	{
		st = tg_error_set(err, TG_ENOMEM, "could not allocate %d parts", n);
		goto done;
	}
	for (int i = 0; i < n && st == TG_OK; i++)
	{
		st = read_edges(c, i, halo, false, &width[i], &geo[i], err);
		c->order[i] = i;
	}
	/*
	 * Each part's place on the first part's grid (tg_georef_offset, as for
	 * the tiles of one coverage): its first row and column there, then top to
	 * bottom.
	 */
	for (int i = 0; i < n && st == TG_OK; i++)
	{
		double		col,
					row;

		aligned[i] = tg_georef_offset(&geo[0], geo[i].upperleft_x, geo[i].upperleft_y, &col, &row) &&
			fabs(col) < INT32_MAX && fabs(row) < INT32_MAX;
		offset[i] = aligned[i] ? (int64_t) rint(row) : 0;
		column[i] = aligned[i] ? (int64_t) rint(col) : 0;
		first_col = i == 0 || column[i] < first_col ? column[i] : first_col;
		end_col = i == 0 || column[i] + width[i] > end_col ? column[i] + width[i] : end_col;
	}
	for (int i = 1; i < n && st == TG_OK; i++)
		for (int j = i; j > 0 && offset[c->order[j]] < offset[c->order[j - 1]]; j--)
		{
			const int	t = c->order[j];

			c->order[j] = c->order[j - 1];
			c->order[j - 1] = t;
		}
	for (int k = 0; k < n && st == TG_OK; k++)
	{
		const int	p = c->order[k],
					q = k > 0 ? c->order[k - 1] : p;

		c->row0[p] = k > 0 ? c->row0[q] + c->height[q] : 0;
		c->col0[p] = (int) (column[p] - first_col);
		if (end_col - first_col > INT32_MAX / 2 || geo[p].srid != geo[q].srid || !aligned[p] ||
			!near(geo[p].scale_x, geo[q].scale_x, 1e-9 * fabs(geo[q].scale_x)) ||
			!near(geo[p].scale_y, geo[q].scale_y, 1e-9 * fabs(geo[q].scale_y)) ||
			geo[p].skew_x != geo[q].skew_x || geo[p].skew_y != geo[q].skew_y)
		{
			tg_error_set(err, TG_EDATA, "the parts on %s and %s do not lie on one grid",
						 names[q], names[p]);
			tg_error_detail(err, "%s: %d columns from x %.9g, SRID %d; %s: %d columns from x %.9g, SRID %d",
							names[q], width[q], geo[q].upperleft_x, geo[q].srid,
							names[p], width[p], geo[p].upperleft_x, geo[p].srid);
			tg_error_hint(err, "Partition one coverage by rows of tiles.");
			st = TG_EDATA;
		}
		else if (k > 0 && offset[p] != offset[q] + c->height[q])
		{
			tg_error_set(err, TG_EDATA, "the parts on %s and %s do not meet: one ends at row %lld, the next begins at row %lld",
						 names[q], names[p], (long long) (offset[q] + c->height[q]), (long long) offset[p]);
			tg_error_hint(err, "Every row of tiles must be in exactly one partition.");
			st = TG_EDATA;
		}
	}
	c->W = (int) (end_col - first_col);
	if (st == TG_OK)
		c->lat_top = geo[c->order[0]].upperleft_y + 0.5 * geo[c->order[0]].scale_y;
done:
	tg_free(c->ctx, column);
	tg_free(c->ctx, width);
	tg_free(c->ctx, geo);
	tg_free(c->ctx, aligned);
	tg_free(c->ctx, offset);
	return st;
}

/* Every part's first and last DEM rows (once placed), as wide as the grid. */
tg_status
tg_parts_dem_rows(coordinator *c, tg_error *err)
{
	const int	n = c->n,
				halo = dem_halo(c->kind);
	tg_status	st = TG_OK;

	if (c->dem_first)
		return TG_OK;
	c->dem_first = tg_alloc(c->ctx, n * sizeof(double *));
	c->dem_last = tg_alloc(c->ctx, n * sizeof(double *));
	if (!c->dem_first || !c->dem_last)
	{
		/* coordinator_free frees the rows of both arrays, or of neither */
		tg_free(c->ctx, c->dem_first);
		tg_free(c->ctx, c->dem_last);
		c->dem_first = c->dem_last = NULL;
		return tg_error_set(err, TG_ENOMEM, "could not allocate the edges of %d parts", n);
	}
	memset(c->dem_first, 0, n * sizeof(double *));
	memset(c->dem_last, 0, n * sizeof(double *));
	/* nodata where a part has no tiles */
	for (int i = 0; i < n && st == TG_OK; i++)
	{
		int			width;
		tg_georef	geo;

		st = read_edges(c, i, halo, true, &width, &geo, err);
		if (st == TG_OK && width != c->W)
		{
			double	  **rows[2] = {&c->dem_first[i], &c->dem_last[i]};

			for (int e = 0; e < 2 && st == TG_OK; e++)
			{
				double	   *wide = tg_alloc(c->ctx, (size_t) c->W * halo * sizeof(double) + 1);

				if (wide == NULL)
				{
					st = tg_error_set(err, TG_ENOMEM, "could not allocate the edges of %d parts", n);
					break;
				}
				for (size_t x = 0; x < (size_t) c->W * halo; x++)
					wide[x] = NAN;
				for (int y = 0; y < halo; y++)
					memcpy(wide + (size_t) y * c->W + c->col0[i], *rows[e] + (size_t) y * width,
						   (size_t) width * sizeof(double));
				tg_free(c->ctx, *rows[e]);
				*rows[e] = wide;
			}
		}
	}
	return st;
}

/* The DEM rows around part i. */
void
tg_parts_put_dem_halos(writer *w, const coordinator *c, int i)
{
	const int	above = neighbour(c, i, 0),
				below = neighbour(c, i, 1);

	if (above >= 0)
		put_values(w, c->dem_last[above], (size_t) c->W * dem_halo(c->kind));
	if (below >= 0)
		put_values(w, c->dem_first[below], (size_t) c->W * dem_halo(c->kind));
}
