/*
 * part_finish.c — the last phase: each part computes its result tiles
 * (slope, fill, directions, accumulation, tg_hydrology's products) and
 * writes them (tg_part_finish).
 */
#include "scale/parts/part_state.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The receivers of every cell of the part (as tg_hydrology exports them:
 * the ESRI codes of the neighbours that get a share, fdd8 by the cell's
 * accumulation in cells, acc), from its routing with the crossing flats'
 * masks as the part kept it: D8's codes (all a D8 routing's receivers are),
 * or the flow rounds' routing (of the own rows and the rows around them).
 */
static tg_status
part_receivers(const tg_ctx *ctx, const tg_op *op, part_state *s, const double *acc, uint16_t **out,
			   tg_error *err)
{
	const size_t W = (size_t) s->W,
				n = W * s->H;
	tg_route	route;
	tg_route_view v;
	const double *acc_of_routing;
	size_t		skip;
	uint16_t   *rec;
	tg_status	st;

	*out = NULL;
	if (s->d8 != NULL)
	{
		route = (tg_route) {s->W, s->H, TG_ROUTE_D8, s->z + 2 * W, s->d8, NULL};
		acc_of_routing = acc;
		skip = 0;
	}
	else if (s->flow_d8 != NULL)
	{
		/* the routing has rows around the part; acc is the own rows of its accumulation */
		route = flow_route(op, s);
		acc_of_routing = s->flow_acc;
		skip = flow_own0(s) * W;
	}
	else
		return tg_error_set(err, TG_EDATA, "a finish message reached a part that kept no routing");
	v = tg_cpu_route_view(&route, op->flow.threshold);
	if ((rec = tg_alloc(ctx, (skip + n) * sizeof(uint16_t) + 1)) == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate a part's receivers (%zu cells)", n);
	st = tg_route_receivers_rows(ctx, &v, acc_of_routing, skip, s->H, rec, err);
	if (st != TG_OK)
	{
		tg_free(ctx, rec);
		return st;
	}
	memmove(rec, rec + skip, n * sizeof(uint16_t));
	*out = rec;
	return TG_OK;
}

/* The part's D8 codes (ESRI; 255 where none), once every crossing flat's height is known. */
static tg_status
finish_directions(const tg_ctx *ctx, const tg_op *op, tg_part *part, reader *r, uint8_t **codes,
				  tg_error *err)
{
	part_state *s = part->state;
	tg_route	sub,
				strip;
	size_t		own;
	tg_status	st;

	if (s == NULL || s->mask == NULL)
		return tg_error_set(err, TG_EDATA, "a finish message reached a part that kept no flats");
	st = tg_part_read_heights(ctx, part, r, err);
	if (st == TG_OK)
		st = tg_part_route(ctx, op, s, &sub, &own, err);
	if (st != TG_OK)
		return st;
	strip = own_rows_d8(s, &sub, own);
	*codes = tg_alloc(ctx, (size_t) s->W * s->H + 1);
	st = *codes ? tg_cpu_export_directions(ctx, &strip, &op->flow, NULL, *codes, NULL, err)
		: tg_error_set(err, TG_ENOMEM, "could not allocate a part's directions");
	tg_route_free(ctx, &sub);
	return st;
}

tg_status
tg_part_finish(const tg_ctx *ctx, const tg_op *op, const tg_job *job, tg_part *part, reader *r,
			const part_message *m, tg_grid_band *g, tg_error *err)
{
	const tg_layout *l = job->layout;
	const size_t W = (size_t) l->width,
				n = W * l->height;
	writer		w = {.ctx = ctx};
	tg_output	out[3];
	int			nout = 1;
	double	   *values = NULL;	/* the part's own where it accumulates: freed with its state */
	float	   *slope = NULL;
	uint8_t    *codes = NULL;
	uint16_t   *receivers = NULL;
	tg_status	st = TG_OK;

	if (op->kind == TG_OP_FILL)
		st = tg_part_surface_of(ctx, op, job, r, m, g, &values, err);
	else if (op->kind == TG_OP_DIRECTIONS)
		st = finish_directions(ctx, op, part, r, &codes, err);
	else if (accumulates(op->kind))
	{
		/* tg_hydrology's receivers are exported before the units: fdd8 reads the accumulation in cells */
		st = tg_part_finish_accumulation(ctx, op, part, r, &values, err);
		if (st == TG_OK && op->kind == TG_OP_HYDROLOGY)
			st = part_receivers(ctx, op, part->state, values, &receivers, err);
		if (st == TG_OK && op->units == TG_UNITS_SCA)
			st = tg_to_sca(ctx, &op->flow.geom, values, err);
	}
	else
	{
		double	   *above,
				   *below;
		tg_band		rows;
		tg_slope_params p;

		st = tg_part_read_halos(ctx, r, m, 1, &above, &below, err);
		if (st == TG_OK)
			st = tg_part_read_with_halos(ctx, job, g, above, below, &values, err);
		if (st == TG_OK)
			st = tg_op_plan(op, &g->band, out, err);
		if (st == TG_OK)
		{
			/* the part's rows with those around it as a 64BF band, nodata NaN */
			memset(&rows, 0, sizeof rows);
			rows.pixtype = TG_PT_64BF;
			rows.width = l->width;
			rows.height = l->height + (above ? 1 : 0) + (below ? 1 : 0);
			rows.data = values;
			p.pixel_width = tg_georef_pixel_width(&l->geo);
			p.pixel_height = tg_georef_pixel_height(&l->geo);
			p.scale = op->slope_scale;
			p.units = op->slope_units;
			p.out_nodata = (float) out[0].specs[0].nodata;
			slope = tg_alloc(ctx, sizeof(float) * W * rows.height + 1);
			st = slope ? tg_slope(ctx, &rows, &p, slope, err)
				: tg_error_set(err, TG_ENOMEM, "could not allocate the slopes of a part of %zu cells", n);
		}
		if (st == TG_OK)
			memmove(slope, slope + (above ? W : 0), n * sizeof(float));
		tg_free(ctx, above);
		tg_free(ctx, below);
	}
	if (st == TG_OK)
		st = reader_done(r, "a finish message", err);
	/* a routing part's DEM was read in the surface phase */
	if (st == TG_OK)
		st = tg_op_plan(op, routes(op->kind) ? &((const part_state *) part->state)->dem : &g->band, out, err);
	if (st == TG_OK && op->kind == TG_OP_HYDROLOGY)
	{
		const part_state *s = part->state;

		out[0].planes[0] = (tg_plane) {s->z + 2 * W, TG_PT_64BF, false, 0};
		out[1].planes[0] = (tg_plane) {receivers, TG_PT_16BUI, true, TG_NODATA_RECEIVERS};
		out[2].planes[0] = (tg_plane) {values, TG_PT_64BF, false, 0};
		nout = 3;
	}
	else if (st == TG_OK)
	{
		out[0].planes[0].data = codes ? (const void *) codes : slope ? (const void *) slope : (const void *) values;
		out[0].planes[0].type = codes ? TG_PT_8BUI : slope ? TG_PT_32BF : TG_PT_64BF;
		out[0].planes[0].has_marker = codes != NULL;
		out[0].planes[0].marker = 255;
	}
	if (st == TG_OK)
	{
		tg_phase(ctx, "encode");
		st = tg_write_tiles(ctx, job, out, nout, 0, l->height, err);
	}
	if (st == TG_OK)
	{
		put_header(&w, TG_PART_FINISH | REPLY, op->kind);
		put_i32(&w, l->ntiles);
		st = writer_done(&w, &part->reply, err);
	}
	if (!accumulates(op->kind))
		tg_free(ctx, values);
	tg_free(ctx, slope);
	tg_free(ctx, codes);
	tg_free(ctx, receivers);
	if (routes(op->kind))
		tg_part_forget(part);
	return st;
}
