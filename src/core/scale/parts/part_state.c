/*
 * part_state.c — what a part keeps between phases, freed when it is done
 * (tg_part_forget), and the part's rows read as doubles with the rows
 * around it that its neighbours hand over.
 */
#include "scale/parts/part_state.h"

#include <string.h>

static void
state_free(const tg_part *part, part_state *s)
{
	void	   *bufs[] = {s->z, s->cell, s->seed, s->at, s->comp, s->comp_least, s->least, s->edge, s->mask,
		s->nb_towards, s->nb_away, s->nb_label, s->nb_mask, s->sent, s->d8, s->acc,
		s->flow_z, s->flow_d8, s->flow_frac, s->flow_w, s->flow_acc, s->flow_wait, s->flow_stack, s->taken_reach,
		s->ready[0], s->ready[1]};

	for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
		if (bufs[i])
			part->keep.free(bufs[i], part->keep.arg);
	tg_seam_flats_free(&s->flats);
	part->keep.free(s, part->keep.arg);
}

void
tg_part_forget(tg_part *part)
{
	if (part->state)
		state_free(part, part->state);
	part->state = NULL;
}

/* n rows of the DEM from the part above (where there is one) and below, each `halo` rows. */
tg_status
tg_part_read_halos(const tg_ctx *ctx, reader *r, const part_message *m, int halo, double **above, double **below,
		   tg_error *err)
{
	const size_t n = (size_t) m->width * halo;

	*above = *below = NULL;
	if (m->index > 0 && (*above = tg_alloc(ctx, n * sizeof(double))) != NULL)
		get_values(r, *above, n);
	if (m->index + 1 < m->count && (*below = tg_alloc(ctx, n * sizeof(double))) != NULL)
		get_values(r, *below, n);
	if ((m->index > 0 && !*above) || (m->index + 1 < m->count && !*below))
		return tg_error_set(err, TG_ENOMEM, "could not allocate a part message");
	return TG_OK;
}

/*
 * The part's rows as doubles (NaN = nodata) with `above` rows before them
 * and `below` after; *g keeps the DEM's type.
 */
tg_status
tg_part_read(const tg_ctx *ctx, const tg_job *job, tg_grid_band *g, int row0, int nrows, int above,
		  int below, double **z, tg_error *err)
{
	const size_t W = (size_t) job->layout->width;

	*z = tg_alloc(ctx, sizeof(double) * W * ((size_t) nrows + above + below) + 1);
	if (*z == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate a part of %d rows", nrows);
	g->as_rows = true;
	g->rows = *z + W * above;
	g->row0 = row0;
	g->nrows = nrows;
	g->ncols = 0;				/* every column */
	return tg_read_input(ctx, job->layout, &job->inputs[0], g, row0, nrows, err);
}

/* The part's DEM with the rows of its neighbours around it (one each side where given). */
tg_status
tg_part_read_with_halos(const tg_ctx *ctx, const tg_job *job, tg_grid_band *g, const double *above,
				const double *below, double **z, tg_error *err)
{
	const tg_layout *l = job->layout;
	const size_t W = (size_t) l->width;
	tg_status	st = tg_part_read(ctx, job, g, 0, l->height, above ? 1 : 0, below ? 1 : 0, z, err);

	if (st == TG_OK && above)
		memcpy(*z, above, W * sizeof(double));
	if (st == TG_OK && below)
		memcpy(*z + W * ((above ? 1 : 0) + l->height), below, W * sizeof(double));
	return st;
}
