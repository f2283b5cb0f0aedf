/*
 * tgpg_drainage.c — the functions after the accumulation (stream order and
 * links, basins and sub-basins, flow length, HAND, wetness index): their
 * argument descriptions and the tg_op each makes of them, as tgpg_ops.c
 * does for the others.
 */
#include "tgpg_op.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

static const tgpg_word stream_units[] = {
	{"cells", TG_UNITS_CELLS}, {"area", TG_UNITS_AREA},
};
static const tgpg_word stream_orderings[] = {
	{"strahler", TG_ORDER_STRAHLER}, {"shreve", TG_ORDER_SHREVE},
};
static const tgpg_word length_directions[] = {
	{"downstream", false}, {"upstream", true},
};

/* a stream threshold, in cells or in area (map units squared; square metres if geographic) */
#define STREAMS			{"threshold", TGPG_FLOAT, TGPG_POSITIVE}, \
						{"units", TGPG_WORD, 0, TGPG_WORDS(stream_units)}
static const tgpg_param stream_order_args[] = {
	STREAMS, {"ordering", TGPG_WORD, 0, TGPG_WORDS(stream_orderings)}, FILL, BAND, BACKEND, {NULL}
};
static const tgpg_param flow_length_args[] = {
	{"direction", TGPG_WORD, 0, TGPG_WORDS(length_directions)}, FILL, BAND, NODATA, BACKEND, {NULL}
};
static const tgpg_param hand_args[] = {
	STREAMS, FILL, BAND, NODATA, BACKEND, {NULL}
};
static const tgpg_param stream_link_args[] = {
	STREAMS, FILL, BAND, BACKEND, {NULL}
};
static const tgpg_param basin_args[] = {
	{"pour_points", TGPG_POINTS, TGPG_OPTIONAL}, SNAP, FILL, BAND, BACKEND, {NULL}
};
static const tgpg_param subbasin_args[] = {
	STREAMS, FILL, BAND, BACKEND, {NULL}
};
static const tgpg_param wetness_args[] = {
	ROUTING, {"min_slope", TGPG_FLOAT, TGPG_POSITIVE}, FILL, BAND, ACCUM_METHOD, EXPONENT, THRESHOLD,
	NODATA, BACKEND, {NULL}
};

/* ------------------------------------------------------------------------
 * After the accumulation: streams, flow lengths, HAND, wetness
 * ------------------------------------------------------------------------ */

/* D8 on the filled surface unless told; the stream threshold apart from fdd8's */
static void
drainage_args(const tgpg_args *a, tgpg_call *c, tg_op *op)
{
	tgpg_flow_args(a, c, op);
	op->flow.threshold = 0;
	if (tgpg_arg_index(a, "threshold") >= 0 && tgpg_arg_index(a, "routing") < 0)
		op->stream_threshold = tgpg_float(a, "threshold");
	else if (tgpg_arg_index(a, "threshold") >= 0)
		op->flow.threshold = tgpg_float(a, "threshold");
}

PG_FUNCTION_INFO_V1(tgpg_stream_order);
Datum
tgpg_stream_order(PG_FUNCTION_ARGS)
{
	tgpg_args	a;
	tgpg_call	c;
	tg_op		op;

	tgpg_args_open(&a, fcinfo, "tg_stream_order", stream_order_args);
	NULL_RASTER_GIVES_NULL(&a);
	tgpg_call_open(&c, &a, "tg_stream_order");
	tgpg_op_init(&op, &a);
	op.kind = TG_OP_STREAM_ORDER;
	drainage_args(&a, &c, &op);
	op.ordering = tgpg_word_value(&a, "ordering");
	return tgpg_run_op(&c, &op);
}

PG_FUNCTION_INFO_V1(tgpg_flow_length);
Datum
tgpg_flow_length(PG_FUNCTION_ARGS)
{
	tgpg_args	a;
	tgpg_call	c;
	tg_op		op;

	tgpg_args_open(&a, fcinfo, "tg_flow_length", flow_length_args);
	NULL_RASTER_GIVES_NULL(&a);
	tgpg_call_open(&c, &a, "tg_flow_length");
	tgpg_op_init(&op, &a);
	op.kind = TG_OP_FLOW_LENGTH;
	drainage_args(&a, &c, &op);
	op.upstream = tgpg_word_value(&a, "direction");
	return tgpg_run_op(&c, &op);
}

PG_FUNCTION_INFO_V1(tgpg_hand);
Datum
tgpg_hand(PG_FUNCTION_ARGS)
{
	tgpg_args	a;
	tgpg_call	c;
	tg_op		op;

	tgpg_args_open(&a, fcinfo, "tg_hand", hand_args);
	NULL_RASTER_GIVES_NULL(&a);
	tgpg_call_open(&c, &a, "tg_hand");
	tgpg_op_init(&op, &a);
	op.kind = TG_OP_HAND;
	drainage_args(&a, &c, &op);
	return tgpg_run_op(&c, &op);
}

PG_FUNCTION_INFO_V1(tgpg_wetness_index);
Datum
tgpg_wetness_index(PG_FUNCTION_ARGS)
{
	tgpg_args	a;
	tgpg_call	c;
	tg_op		op;

	tgpg_args_open(&a, fcinfo, "tg_wetness_index", wetness_args);
	NULL_RASTER_GIVES_NULL(&a);
	tgpg_call_open(&c, &a, "tg_wetness_index");
	tgpg_op_init(&op, &a);
	op.kind = TG_OP_WETNESS_INDEX;
	drainage_args(&a, &c, &op);
	op.min_slope = tgpg_float(&a, "min_slope");
	return tgpg_run_op(&c, &op);
}

/*
 * Basins: of every outlet, or of pour points (nested: each cell to its
 * nearest downstream point), labelled by the point's place in the array.
 */
PG_FUNCTION_INFO_V1(tgpg_basins);
Datum
tgpg_basins(PG_FUNCTION_ARGS)
{
	tgpg_args	a;
	tgpg_call	c;
	tg_op		op;

	tgpg_args_open(&a, fcinfo, "tg_basins", basin_args);
	NULL_RASTER_GIVES_NULL(&a);
	tgpg_call_open(&c, &a, "tg_basins");
	tgpg_op_init(&op, &a);
	op.kind = TG_OP_BASINS;
	drainage_args(&a, &c, &op);
	op.basin_outlets = TG_BASINS_OUTLETS;
	op.snap = tgpg_float(&a, "snap");
	if (tgpg_given(&a, "pour_points"))
	{
		double	   *xs,
				   *ys;

		op.npoints = tgpg_points_arg(&a, &c, "pour_points", "pour point",
								"Pass NULL (the default) for the basins of every outlet.", &xs, &ys);
		op.basin_outlets = TG_BASINS_POINTS;
		op.point_xs = xs;
		op.point_ys = ys;
	}
	return tgpg_run_op(&c, &op);
}

/* Sub-basins: each cell labelled by the stream link (tg_stream_links' id) it drains into first. */
PG_FUNCTION_INFO_V1(tgpg_subbasins);
Datum
tgpg_subbasins(PG_FUNCTION_ARGS)
{
	tgpg_args	a;
	tgpg_call	c;
	tg_op		op;

	tgpg_args_open(&a, fcinfo, "tg_subbasins", subbasin_args);
	NULL_RASTER_GIVES_NULL(&a);
	tgpg_call_open(&c, &a, "tg_subbasins");
	tgpg_op_init(&op, &a);
	op.kind = TG_OP_BASINS;
	drainage_args(&a, &c, &op);
	op.basin_outlets = TG_BASINS_LINKS;
	return tgpg_run_op(&c, &op);
}

/*
 * A link's vertices (cell centres through the grid's affine georeference)
 * as a LineString of the raster's SRID, made by the geometry type's binary
 * input from EWKB.  A link of one cell (a confluence where the stream ends)
 * repeats its vertex: a line of length 0.
 */
static Datum
link_geometry(const tg_stream_network *net, const tg_stream_link *link, const tg_layout *layout,
			  Oid receive, Oid ioparam)
{
	const tg_georef *g = &layout->geo;
	const uint32 npoints = (uint32) Max(link->count, 2);
	const int64 width = layout->width;
	StringInfoData buf;
	uint32		type = 2 | (g->srid > 0 ? 0x20000000 : 0);
	uint8		order;

#ifdef WORDS_BIGENDIAN
	order = 0;
#else
	order = 1;
#endif
	initStringInfo(&buf);
	appendBinaryStringInfo(&buf, (const char *) &order, 1);
	appendBinaryStringInfo(&buf, (const char *) &type, 4);
	if (g->srid > 0)
	{
		uint32		srid = (uint32) g->srid;

		appendBinaryStringInfo(&buf, (const char *) &srid, 4);
	}
	appendBinaryStringInfo(&buf, (const char *) &npoints, 4);
	for (uint32 v = 0; v < npoints; v++)
	{
		const uint32 cell = net->vertices[link->first + Min((size_t) v, link->count - 1)];
		const double col = (double) (cell % width) + 0.5,
					row = (double) (cell / width) + 0.5;
		double		xy[2];

		xy[0] = g->upperleft_x + col * g->scale_x + row * g->skew_x;
		xy[1] = g->upperleft_y + col * g->skew_y + row * g->scale_y;
		appendBinaryStringInfo(&buf, (const char *) xy, sizeof xy);
	}
	return OidReceiveFunctionCall(receive, &buf, ioparam, -1);
}

/* The stream network as one row per link, with its LineString. */
PG_FUNCTION_INFO_V1(tgpg_stream_links);
Datum
tgpg_stream_links(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	tgpg_args	a;
	tgpg_call	c;
	tg_op		op;
	tg_stream_network net;
	Oid			receive,
				ioparam;

	tgpg_args_open(&a, fcinfo, "tg_stream_links", stream_link_args);
	InitMaterializedSRF(fcinfo, 0);
	if (!a.coverage && PG_ARGISNULL(0))
		return (Datum) 0;
	tgpg_call_open(&c, &a, "tg_stream_links");
	tgpg_op_init(&op, &a);
	op.kind = TG_OP_STREAM_LINKS;
	drainage_args(&a, &c, &op);
	memset(&net, 0, sizeof net);
	op.network = &net;
	(void) tgpg_call_run(&c, &op, TGPG_RESULT_TILES);

	getTypeBinaryInputInfo(TupleDescAttr(rsinfo->setDesc, 7)->atttypid, &receive, &ioparam);
	for (size_t k = 0; k < net.nlinks; k++)
	{
		const tg_stream_link *link = &net.links[k];
		Datum		values[8];
		bool		nulls[8] = {false, link->downstream == 0, false, false, false, false, false, false};

		CHECK_FOR_INTERRUPTS();
		values[0] = Int64GetDatum(link->id);
		values[1] = Int64GetDatum(link->downstream);
		values[2] = Int32GetDatum((int32) link->strahler);
		values[3] = Int64GetDatum((int64) link->shreve);
		values[4] = Float8GetDatum(link->length);
		values[5] = Float8GetDatum(link->cells);
		values[6] = Float8GetDatum(link->area);
		values[7] = link_geometry(&net, link, c.layout, receive, ioparam);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

