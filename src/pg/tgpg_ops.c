/*
 * tgpg_ops.c — the terrain functions: for each, the one description of its
 * arguments (shared by the raster form and the coverage form, which take
 * the same arguments), and the tg_op it makes of them.  One C function
 * serves both forms; tgpg_tiles.c tells them apart by their first argument.
 */
#include "tgpg_op.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"

/* ------------------------------------------------------------------------
 * Vocabularies
 * ------------------------------------------------------------------------ */
static const tgpg_word slope_units[] = {
	{"DEGREES", TG_SLOPE_DEGREES}, {"RADIANS", TG_SLOPE_RADIANS}, {"PERCENT", TG_SLOPE_PERCENT},
};
static const tgpg_word fill_methods[] = {
	{"priority-flood", TG_FILL_PRIORITY_FLOOD}, {"planchon-darboux", TG_FILL_PLANCHON_DARBOUX},
	{"breach", TG_FILL_BREACH},
};
const tgpg_word tgpg_routings[TGPG_ROUTINGS] = {
	{"d8", TG_ROUTE_D8}, {"fd8", TG_ROUTE_FD8}, {"mfd-md", TG_ROUTE_MFD_MD}, {"fdd8", TG_ROUTE_FDD8},
	{"dinf", TG_ROUTE_DINF}, {"anisotropic", TG_ROUTE_ANISOTROPIC},
};
const tgpg_word tgpg_accum_methods[TGPG_ACCUM_METHODS] = {
	{"auto", TG_ACC_AUTO}, {"flow-transfer", TG_ACC_FLOW_TRANSFER},
	{"dependency-transfer", TG_ACC_DEPENDENCY_TRANSFER}, {"indegree", TG_ACC_INDEGREE},
	{"topological", TG_ACC_TOPOLOGICAL},
};
static const tgpg_word units_names[] = {
	{"cells", TG_UNITS_CELLS}, {"area", TG_UNITS_AREA}, {"sca", TG_UNITS_SCA},
};

#define OUTPUT_AUTO (-1)
static const tgpg_word direction_outputs[] = {
	{"auto", OUTPUT_AUTO}, {"codes", TG_DIRECTIONS_CODES}, {"mask", TG_DIRECTIONS_MASK},
	{"shares", TG_DIRECTIONS_SHARES}, {"angle", TG_DIRECTIONS_ANGLE},
};
static const tgpg_word pixeltypes[] = {
	{"64BF", TG_PT_64BF}, {"32BF", TG_PT_32BF},
};
static const tgpg_word view_outputs[] = {
	{"visible", TG_VIEW_VISIBLE}, {"angle", TG_VIEW_ANGLE}, {"height", TG_VIEW_HEIGHT},
};
static const tgpg_word aspect_units[] = {
	{"DEGREES", TG_SLOPE_DEGREES}, {"RADIANS", TG_SLOPE_RADIANS},
};
static const tgpg_word hillshade_methods[] = {
	{"standard", TG_HILLSHADE_STANDARD}, {"multidirectional", TG_HILLSHADE_MULTIDIRECTIONAL},
	{"combined", TG_HILLSHADE_COMBINED},
};
static const tgpg_word hillshade_pixeltypes[] = {
	{"32BF", TG_PT_32BF}, {"64BF", TG_PT_64BF}, {"8BUI", TG_PT_8BUI},
};
static const tgpg_word tri_algorithms[] = {
	{"wilson", TG_TRI_WILSON}, {"riley", TG_TRI_RILEY},
};
static const tgpg_word curvature_types[] = {
	{"profile", TG_CURVATURE_PROFILE}, {"plan", TG_CURVATURE_PLAN}, {"tangential", TG_CURVATURE_TANGENTIAL},
	{"mean", TG_CURVATURE_MEAN}, {"gaussian", TG_CURVATURE_GAUSSIAN}, {"minimal", TG_CURVATURE_MINIMAL},
	{"maximal", TG_CURVATURE_MAXIMAL}, {"total", TG_CURVATURE_TOTAL},
};
/* in the order of tg_terrain's result columns */
static const tgpg_word terrain_products[] = {
	{"slope", TG_TERRAIN_SLOPE}, {"aspect", TG_TERRAIN_ASPECT}, {"hillshade", TG_TERRAIN_HILLSHADE},
	{"tpi", TG_TERRAIN_TPI}, {"tri", TG_TERRAIN_TRI}, {"roughness", TG_TERRAIN_ROUGHNESS},
	{"curvature", TG_TERRAIN_CURVATURE}, {"geomorphons", TG_TERRAIN_GEOMORPHONS},
};

/* r2: ray casting, GPU or CPU; r3: exact, CPU */
static const tgpg_word view_algorithms[] = {
	{"r2", TG_VIEW_R2}, {"r3", TG_VIEW_R3},
};

/* ------------------------------------------------------------------------
 * Argument descriptions, one per SQL function
 * ------------------------------------------------------------------------ */
#define UNITS			{"units", TGPG_WORD, 0, TGPG_WORDS(units_names)}
#define WEIGHT			{"weight", TGPG_WEIGHT, TGPG_OPTIONAL}, {"weight_band", TGPG_INT}
#define LS_ARGS			{"m", TGPG_FLOAT, TGPG_NONNEGATIVE}, {"n", TGPG_FLOAT, TGPG_NONNEGATIVE}, \
						{"a0", TGPG_FLOAT, TGPG_POSITIVE}, {"b0", TGPG_FLOAT, TGPG_POSITIVE}
#define TRAVEL_ARGS		{"n", TGPG_FACTOR}, {"k", TGPG_FACTOR}, {"b", TGPG_FLOAT, TGPG_NONNEGATIVE}, \
						{"min_slope", TGPG_FLOAT, TGPG_POSITIVE}
#define VIEW_ARGS		{"observer_height", TGPG_FLOAT, TGPG_NONNEGATIVE}, \
						{"target_height", TGPG_FLOAT, TGPG_NONNEGATIVE}, \
						{"max_distance", TGPG_FLOAT, TGPG_OPTIONAL | TGPG_POSITIVE, NULL, 0, \
						 "Pass NULL (the default) for an unlimited range."}, \
						{"earth_radius", TGPG_FLOAT, TGPG_NONNEGATIVE}, \
						{"refraction", TGPG_FLOAT, TGPG_FRACTION}

static const tgpg_param slope_args[] = {
	BAND,
	{"units", TGPG_WORD, TGPG_PREFIX, TGPG_WORDS(slope_units)},
	{"scale", TGPG_FLOAT, TGPG_POSITIVE, NULL, 0,
	"For a DEM in degrees with elevations in metres use scale => 111120."},
	NODATA, BACKEND, {NULL}
};
/* the local derivatives: PostGIS' argument names (ST_Aspect, ST_HillShade, ST_TPI, ST_TRI, ST_Roughness) */
#define SCALE			{"scale", TGPG_FLOAT, TGPG_POSITIVE, NULL, 0, \
						 "For a DEM in degrees with elevations in metres use scale => 111120."}
#define FLOAT_PIXELTYPE {"pixeltype", TGPG_WORD, 0, TGPG_WORDS(pixeltypes)}
#define LIGHT			{"azimuth", TGPG_FLOAT}, {"altitude", TGPG_FLOAT}, \
						{"max_bright", TGPG_FLOAT, TGPG_NONNEGATIVE}
#define LOOKUP			{"search_radius", TGPG_INT}, {"skip", TGPG_INT}, \
						{"flat_threshold", TGPG_FLOAT, TGPG_NONNEGATIVE}
static const tgpg_param aspect_args[] = {
	BAND, {"units", TGPG_WORD, TGPG_PREFIX, TGPG_WORDS(aspect_units)}, FLOAT_PIXELTYPE, NODATA, BACKEND, {NULL}
};
static const tgpg_param hillshade_args[] = {
	BAND, LIGHT, SCALE, {"z_factor", TGPG_FLOAT, TGPG_POSITIVE},
	{"method", TGPG_WORD, 0, TGPG_WORDS(hillshade_methods)},
	{"pixeltype", TGPG_WORD, 0, TGPG_WORDS(hillshade_pixeltypes)}, NODATA, BACKEND, {NULL}
};
static const tgpg_param window_args[] = {
	BAND, FLOAT_PIXELTYPE, NODATA, BACKEND, {NULL}
};
static const tgpg_param tri_args[] = {
	BAND, {"algorithm", TGPG_WORD, 0, TGPG_WORDS(tri_algorithms)}, FLOAT_PIXELTYPE, NODATA, BACKEND, {NULL}
};
static const tgpg_param curvature_args[] = {
	BAND, {"type", TGPG_WORD, 0, TGPG_WORDS(curvature_types)}, SCALE, FLOAT_PIXELTYPE, NODATA, BACKEND, {NULL}
};
static const tgpg_param geomorphon_args[] = {
	BAND, LOOKUP, SCALE, BACKEND, {NULL}
};
static const tgpg_param terrain_args[] = {
	{"products", TGPG_WORD_LIST, 0, TGPG_WORDS(terrain_products)}, BAND, SCALE,
	{"units", TGPG_WORD, TGPG_PREFIX, TGPG_WORDS(slope_units)},
	{"aspect_units", TGPG_WORD, TGPG_PREFIX, TGPG_WORDS(aspect_units)},
	LIGHT, {"z_factor", TGPG_FLOAT, TGPG_POSITIVE},
	{"hillshade_method", TGPG_WORD, 0, TGPG_WORDS(hillshade_methods)},
	{"tri_algorithm", TGPG_WORD, 0, TGPG_WORDS(tri_algorithms)},
	{"curvature_type", TGPG_WORD, 0, TGPG_WORDS(curvature_types)},
	LOOKUP, NODATA, BACKEND, {NULL}
};
static const tgpg_param fill_args[] = {
	BAND, {"method", TGPG_WORD, 0, TGPG_WORDS(fill_methods)},
	{"epsilon", TGPG_FLOAT, TGPG_NONNEGATIVE}, NODATA, BACKEND, {NULL}
};
static const tgpg_param direction_args[] = {
	BAND, ROUTING, FILL, EXPONENT, THRESHOLD,
	{"output", TGPG_WORD, 0, TGPG_WORDS(direction_outputs)}, BACKEND, {NULL}
};
static const tgpg_param accumulation_args[] = {
	BAND, ROUTING, ACCUM_METHOD, WEIGHT, UNITS, FILL, EXPONENT, THRESHOLD,
	{"pixeltype", TGPG_WORD, 0, TGPG_WORDS(pixeltypes)}, NODATA, BACKEND, {NULL}
};
static const tgpg_param hydrology_args[] = {
	BAND, ROUTING, ACCUM_METHOD, WEIGHT, UNITS, EXPONENT, THRESHOLD, NODATA, BACKEND, {NULL}
};
static const tgpg_param ls_args[] = {
	ROUTING, LS_ARGS, FILL, BAND, ACCUM_METHOD, EXPONENT, THRESHOLD, NODATA, BACKEND, {NULL}
};
static const tgpg_param rusle_args[] = {
	{"r", TGPG_FACTOR}, {"k", TGPG_FACTOR}, {"c", TGPG_FACTOR}, {"p", TGPG_FACTOR},
	ROUTING, LS_ARGS, FILL, BAND, ACCUM_METHOD, EXPONENT, THRESHOLD, NODATA, BACKEND, {NULL}
};
/* after backend: calls that pass the earlier arguments by position keep working */
static const tgpg_param travel_args[] = {
	{"outlet", TGPG_POINT, TGPG_OPTIONAL}, TRAVEL_ARGS, FILL, BAND, NODATA, BACKEND, SNAP, {NULL}
};
static const tgpg_param isochrone_args[] = {
	{"outlet", TGPG_POINT}, {"interval", TGPG_FLOAT, TGPG_POSITIVE}, TRAVEL_ARGS, FILL, BAND,
	BACKEND, SNAP, {NULL}
};
static const tgpg_param watershed_args[] = {
	{"outlet", TGPG_POINT}, FILL, BAND, BACKEND, SNAP, {NULL}
};
static const tgpg_param snap_args[] = {
	{"point", TGPG_POINT}, {"distance", TGPG_FLOAT, TGPG_NONNEGATIVE}, BAND, FILL, BACKEND, {NULL}
};
static const tgpg_param viewshed_args[] = {
	{"observer", TGPG_POINT}, VIEW_ARGS, {"output", TGPG_WORD, 0, TGPG_WORDS(view_outputs)}, BAND,
	BACKEND, {"algorithm", TGPG_WORD, 0, TGPG_WORDS(view_algorithms)}, {NULL}
};
static const tgpg_param viewshed_count_args[] = {
	{"observers", TGPG_POINTS}, VIEW_ARGS, BAND, BACKEND, {NULL}
};

/* ------------------------------------------------------------------------
 * Shared pieces
 * ------------------------------------------------------------------------ */
void
tgpg_op_init(tg_op *op, const tgpg_args *a)
{
	memset(op, 0, sizeof *op);
	op->band = tgpg_int(a, "band");
	op->accumulation_type = TG_PT_64BF;
	if (tgpg_arg_index(a, "nodata") >= 0 && tgpg_given(a, "nodata"))
	{
		op->has_nodata = true;
		op->nodata = tgpg_float(a, "nodata");
	}
}

/* Routing, fill, exponent and threshold where the function takes them (d8, filled, otherwise). */
void
tgpg_flow_args(const tgpg_args *a, const tgpg_call *c, tg_op *op)
{
	op->flow.routing = tgpg_arg_index(a, "routing") >= 0 ? tgpg_word_value(a, "routing") : TG_ROUTE_D8;
	op->flow.fill = tgpg_arg_index(a, "fill") >= 0 ? tgpg_bool(a, "fill") : true;
	op->flow.exponent = tgpg_arg_index(a, "exponent") >= 0 ? tgpg_float(a, "exponent") : 1.1;
	op->flow.threshold = tgpg_arg_index(a, "threshold") >= 0 ? tgpg_float(a, "threshold") : 0;
	op->flow.geom = tgpg_call_geometry(c);
	if (tgpg_arg_index(a, "method") >= 0)
		op->method = tgpg_word_value(a, "method");
	if (tgpg_arg_index(a, "units") >= 0)
		op->units = tgpg_word_value(a, "units");
}

/* The weight: a raster on the DEM's grid, or a table of tiles on it. */
static void
weight_arg(const tgpg_args *a, tgpg_call *c, tg_op *op)
{
	if (!tgpg_given(a, "weight"))
		return;
	op->weight_band = tgpg_int(a, "weight_band");
	op->weight_input = tgpg_call_input(c, tgpg_datum(a, "weight"), tgpg_type(a, "weight"),
									   a->coverage ? "the weight coverage" : "weight raster",
									   op->weight_band, "weight_column",
									   a->coverage && tgpg_given(a, "weight_column")
									   ? pstrdup(NameStr(*DatumGetName(tgpg_datum(a, "weight_column"))))
									   : "rast");
}

/*
 * A factor: a number (any numeric type, or text holding one), a raster on
 * the DEM's grid (raster form, band 1) or a table on the same grid
 * (coverage form, column rast, band 1).
 */
static tg_op_factor
factor_arg(const tgpg_args *a, tgpg_call *c, const char *name, const char *label)
{
	const Oid	type = tgpg_type(a, name);
	const Datum d = tgpg_datum(a, name);
	tg_op_factor f = {0, 0};

	switch (type)
	{
		case INT2OID:
			f.value = DatumGetInt16(d);
			return f;
		case INT4OID:
			f.value = DatumGetInt32(d);
			return f;
		case INT8OID:
			f.value = (double) DatumGetInt64(d);
			return f;
		case FLOAT4OID:
			f.value = DatumGetFloat4(d);
			return f;
		case FLOAT8OID:
			f.value = DatumGetFloat8(d);
			return f;
		case NUMERICOID:
			f.value = DatumGetFloat8(DirectFunctionCall1(numeric_float8, d));
			return f;
		case TEXTOID:
			f.value = DatumGetFloat8(DirectFunctionCall1(float8in, CStringGetDatum(TextDatumGetCString(d))));
			return f;
		case UNKNOWNOID:
			f.value = DatumGetFloat8(DirectFunctionCall1(float8in, d));
			return f;
		default:
			break;
	}
	if ((a->coverage && (type == REGCLASSOID || type == OIDOID)) ||
		(!a->coverage && type == get_fn_expr_argtype(a->fcinfo->flinfo, 0)))
	{
		f.input = tgpg_call_input(c, d, type, psprintf(a->coverage ? "the %s coverage" : "the %s raster", label),
								  1, label, "rast");
		return f;
	}
	ereport(ERROR,
			(errcode(ERRCODE_DATATYPE_MISMATCH),
			 errmsg("factor %s must be a number or %s, got %s", label,
					a->coverage ? "a coverage table on the DEM's grid" : "a raster aligned with the DEM",
					format_type_be(type))));
	pg_unreachable();
}

/* The outlet and how far it may snap (0 where the declaration has no snap: 0.1.0's). */
static void
outlet_arg(const tgpg_args *a, const tgpg_call *c, tg_op *op)
{
	if (!tgpg_given(a, "outlet"))
		return;
	op->has_outlet = true;
	tgpg_call_point_at(c, tgpg_datum(a, "outlet"), tgpg_type(a, "outlet"), "outlet", &op->outlet_x,
					   &op->outlet_y);
	op->outlet_col = (int) floor(op->outlet_x);
	op->outlet_row = (int) floor(op->outlet_y);
	op->snap = tgpg_arg_index(a, "snap") >= 0 ? tgpg_float(a, "snap") : 0;
}

static void
travel_args_to_op(const tgpg_args *a, tgpg_call *c, tg_op *op)
{
	tgpg_flow_args(a, c, op);
	op->flow.routing = TG_ROUTE_D8;
	outlet_arg(a, c, op);
	op->roughness = factor_arg(a, c, "n", "n");
	op->velocity = factor_arg(a, c, "k", "K");
	op->b = tgpg_float(a, "b");
	op->min_slope = tgpg_float(a, "min_slope");
}

static void
ls_args_to_op(const tgpg_args *a, tgpg_call *c, tg_op *op)
{
	tgpg_flow_args(a, c, op);
	op->m = tgpg_float(a, "m");
	op->n = tgpg_float(a, "n");
	op->a0 = tgpg_float(a, "a0");
	op->b0 = tgpg_float(a, "b0");
	for (int f = 0; f < 4; f++)
		op->rusle[f].value = 1;
}

/*
 * A geometry[] argument of points: each point's column and row on the grid
 * (fractional), in *xs and *ys; returns how many.  An empty array: 22023
 * (with hint, if any); a NULL element: 22004; a point that is not one of
 * the grid's: tgpg_call_point_at's error.  item names one point in messages.
 */
int
tgpg_points_arg(const tgpg_args *a, const tgpg_call *c, const char *name, const char *item, const char *hint,
		   double **xs, double **ys)
{
	ArrayType  *points = DatumGetArrayTypeP(tgpg_datum(a, name));
	const Oid	elem_type = ARR_ELEMTYPE(points);
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Datum	   *pd;
	bool	   *pn;
	int			n;

	get_typlenbyvalalign(elem_type, &typlen, &typbyval, &typalign);
	deconstruct_array(points, elem_type, typlen, typbyval, typalign, &pd, &pn, &n);	/* for the NULLs */
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must hold at least one point", name),
				 hint ? errhint("%s", hint) : 0));
	*xs = palloc(sizeof(double) * n);
	*ys = palloc(sizeof(double) * n);
	for (int k = 0; k < n; k++)
		if (pn[k])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s %d is NULL", item, k + 1)));
	tgpg_call_points_at(c, PointerGetDatum(points), get_array_type(elem_type), n, psprintf("%s 1", item), item,
						*xs, *ys);
	return n;
}

Datum
tgpg_run_op(tgpg_call *c, const tg_op *op)
{
	return tgpg_call_run(c, op, c->args->coverage ? TGPG_RESULT_ROWS : TGPG_RESULT_VALUE);
}

/* ------------------------------------------------------------------------
 * The functions
 * ------------------------------------------------------------------------ */
PG_FUNCTION_INFO_V1(tgpg_slope);
Datum
tgpg_slope(PG_FUNCTION_ARGS)
{
	tgpg_args	a;
	tgpg_call	c;
	tg_op		op;

	tgpg_args_open(&a, fcinfo, "tg_slope", slope_args);
	NULL_RASTER_GIVES_NULL(&a);
	tgpg_call_open(&c, &a, "tg_slope");
	tgpg_op_init(&op, &a);
	op.kind = TG_OP_SLOPE;
	op.slope_units = tgpg_word_value(&a, "units");
	op.slope_scale = tgpg_float(&a, "scale");
	return tgpg_run_op(&c, &op);
}

/* ------------------------------------------------------------------------
 * The local derivatives beside the slope: one product each, or several
 * (tg_terrain) from one pass over the DEM
 * ------------------------------------------------------------------------ */

/* The derivatives' options the function declares (the core's defaults otherwise). */
static void
terrain_options(const tgpg_args *a, tg_terrain_params *t)
{
#define OPTION(field, name, get) \
	do { \
		if (tgpg_arg_index(a, name) >= 0) \
			t->field = get(a, name); \
	} while (0)
	tg_terrain_defaults(t);
	OPTION(scale, "scale", tgpg_float);
	OPTION(slope_units, "units", tgpg_word_value);
	OPTION(aspect_units, "aspect_units", tgpg_word_value);
	OPTION(azimuth, "azimuth", tgpg_float);
	OPTION(altitude, "altitude", tgpg_float);
	OPTION(max_bright, "max_bright", tgpg_float);
	OPTION(z_factor, "z_factor", tgpg_float);
	OPTION(hillshade, "hillshade_method", tgpg_word_value);
	OPTION(tri, "tri_algorithm", tgpg_word_value);
	OPTION(curvature, "curvature_type", tgpg_word_value);
	OPTION(search_radius, "search_radius", tgpg_int);
	OPTION(skip, "skip", tgpg_int);
	OPTION(flat_threshold, "flat_threshold", tgpg_float);
#undef OPTION
}

/* Each product in its type: floats 32BF, the geomorphons 8BUI, or the function's pixeltype. */
static void
add_product(const tgpg_args *a, tg_terrain_params *t, tg_terrain_product product)
{
	t->products[t->nproducts] = product;
	t->types[t->nproducts] = product == TG_TERRAIN_GEOMORPHONS ? TG_PT_8BUI
		: tgpg_arg_index(a, "pixeltype") >= 0 ? (tg_pixtype) tgpg_word_value(a, "pixeltype") : TG_PT_32BF;
	t->nproducts++;
}

/* tg_aspect, tg_hillshade, ...: one product (the function's own words name its options) */
static Datum
one_product(FunctionCallInfo fcinfo, const char *function, const tgpg_param *params, tg_terrain_product product)
{
	tgpg_args	a;
	tgpg_call	c;
	tg_op		op;

	tgpg_args_open(&a, fcinfo, function, params);
	NULL_RASTER_GIVES_NULL(&a);
	tgpg_call_open(&c, &a, function);
	tgpg_op_init(&op, &a);
	op.kind = TG_OP_TERRAIN;
	terrain_options(&a, &op.terrain);
	if (product == TG_TERRAIN_ASPECT)
		op.terrain.aspect_units = tgpg_word_value(&a, "units");
	if (product == TG_TERRAIN_HILLSHADE)
		op.terrain.hillshade = tgpg_word_value(&a, "method");
	if (product == TG_TERRAIN_TRI)
		op.terrain.tri = tgpg_word_value(&a, "algorithm");
	if (product == TG_TERRAIN_CURVATURE)
		op.terrain.curvature = tgpg_word_value(&a, "type");
	add_product(&a, &op.terrain, product);
	return tgpg_run_op(&c, &op);
}

/* The SQL function `name`'s C entry `fn`: one product with its own arguments. */
#define ONE_PRODUCT_FUNCTION(fn, name, params, product) \
	PG_FUNCTION_INFO_V1(fn); \
	Datum \
	fn(PG_FUNCTION_ARGS) \
	{ \
		return one_product(fcinfo, name, params, product); \
	}

ONE_PRODUCT_FUNCTION(tgpg_aspect, "tg_aspect", aspect_args, TG_TERRAIN_ASPECT)
ONE_PRODUCT_FUNCTION(tgpg_hillshade, "tg_hillshade", hillshade_args, TG_TERRAIN_HILLSHADE)
ONE_PRODUCT_FUNCTION(tgpg_tpi, "tg_tpi", window_args, TG_TERRAIN_TPI)
ONE_PRODUCT_FUNCTION(tgpg_tri, "tg_tri", tri_args, TG_TERRAIN_TRI)
ONE_PRODUCT_FUNCTION(tgpg_roughness, "tg_roughness", window_args, TG_TERRAIN_ROUGHNESS)
ONE_PRODUCT_FUNCTION(tgpg_curvature, "tg_curvature", curvature_args, TG_TERRAIN_CURVATURE)
ONE_PRODUCT_FUNCTION(tgpg_geomorphons, "tg_geomorphons", geomorphon_args, TG_TERRAIN_GEOMORPHONS)

/*
 * Several products from one pass: a column for every product (in
 * terrain_products' order), NULL for those not asked for.
 */
PG_FUNCTION_INFO_V1(tgpg_terrain);
Datum
tgpg_terrain(PG_FUNCTION_ARGS)
{
	tgpg_args	a;
	tgpg_call	c;
	tg_op		op;
	int			wanted[TG_TERRAIN_PRODUCTS];
	int		   *columns = palloc(sizeof(int) * TG_TERRAIN_PRODUCTS);
	int			n;

	tgpg_args_open(&a, fcinfo, "tg_terrain", terrain_args);
	NULL_RASTER_GIVES_NULL(&a);
	tgpg_call_open(&c, &a, "tg_terrain");
	tgpg_op_init(&op, &a);
	op.kind = TG_OP_TERRAIN;
	terrain_options(&a, &op.terrain);
	n = tgpg_word_list(&a, "products", wanted, TG_TERRAIN_PRODUCTS);
	for (int k = 0; k < n; k++)
	{
		add_product(&a, &op.terrain, (tg_terrain_product) wanted[k]);
		columns[k] = 1 + wanted[k];
	}
	c.columns = columns;
	if (a.coverage)
		return tgpg_run_op(&c, &op);
	/* the raster form returns one raster per product, NULL for the others */
	{
		TupleDesc	tupdesc;
		Datum		values[TG_TERRAIN_PRODUCTS];
		bool		nulls[TG_TERRAIN_PRODUCTS];
		ListCell   *lc;
		int			k = 0;

		if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE ||
			tupdesc->natts != TG_TERRAIN_PRODUCTS)
			elog(ERROR, "tg_terrain must return a row of %d rasters", TG_TERRAIN_PRODUCTS);
		for (int q = 0; q < TG_TERRAIN_PRODUCTS; q++)
			nulls[q] = true;
		(void) tgpg_call_run(&c, &op, TGPG_RESULT_TILES);
		foreach(lc, c.tiles)
		{
			values[columns[k] - 1] = PointerGetDatum(lfirst(lc));
			nulls[columns[k] - 1] = false;
			k++;
		}
		PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
	}
}

PG_FUNCTION_INFO_V1(tgpg_fill);
Datum
tgpg_fill(PG_FUNCTION_ARGS)
{
	tgpg_args	a;
	tgpg_call	c;
	tg_op		op;

	tgpg_args_open(&a, fcinfo, "tg_fill", fill_args);
	NULL_RASTER_GIVES_NULL(&a);
	tgpg_call_open(&c, &a, "tg_fill");
	tgpg_op_init(&op, &a);
	op.kind = TG_OP_FILL;
	op.fill_method = tgpg_word_value(&a, "method");
	op.epsilon = tgpg_float(&a, "epsilon");
	return tgpg_run_op(&c, &op);
}

PG_FUNCTION_INFO_V1(tgpg_flow_direction);
Datum
tgpg_flow_direction(PG_FUNCTION_ARGS)
{
	tgpg_args	a;
	tgpg_call	c;
	tg_op		op;
	int			output;

	tgpg_args_open(&a, fcinfo, "tg_flow_direction", direction_args);
	NULL_RASTER_GIVES_NULL(&a);
	tgpg_call_open(&c, &a, "tg_flow_direction");
	tgpg_op_init(&op, &a);
	op.kind = TG_OP_DIRECTIONS;
	tgpg_flow_args(&a, &c, &op);
	output = tgpg_word_value(&a, "output");
	if (output == OUTPUT_AUTO)
		output = op.flow.routing == TG_ROUTE_D8 ? TG_DIRECTIONS_CODES : TG_DIRECTIONS_SHARES;
	if (output == TG_DIRECTIONS_CODES && op.flow.routing != TG_ROUTE_D8)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("output 'codes' needs routing 'd8'"),
				 errhint("A multiple-flow routing has several receivers: use output => 'mask' or 'shares'.")));
	if (output == TG_DIRECTIONS_ANGLE && op.flow.routing != TG_ROUTE_DINF)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("output 'angle' needs routing 'dinf'")));
	op.directions = output;
	return tgpg_run_op(&c, &op);
}

PG_FUNCTION_INFO_V1(tgpg_flow_accumulation);
Datum
tgpg_flow_accumulation(PG_FUNCTION_ARGS)
{
	tgpg_args	a;
	tgpg_call	c;
	tg_op		op;

	tgpg_args_open(&a, fcinfo, "tg_flow_accumulation", accumulation_args);
	NULL_RASTER_GIVES_NULL(&a);
	tgpg_call_open(&c, &a, "tg_flow_accumulation");
	tgpg_op_init(&op, &a);
	op.kind = TG_OP_ACCUMULATION;
	tgpg_flow_args(&a, &c, &op);
	op.accumulation_type = tgpg_word_value(&a, "pixeltype");
	weight_arg(&a, &c, &op);
	return tgpg_run_op(&c, &op);
}

PG_FUNCTION_INFO_V1(tgpg_hydrology);
Datum
tgpg_hydrology(PG_FUNCTION_ARGS)
{
	tgpg_args	a;
	tgpg_call	c;
	tg_op		op;

	tgpg_args_open(&a, fcinfo, "tg_hydrology", hydrology_args);
	NULL_RASTER_GIVES_NULL(&a);
	tgpg_call_open(&c, &a, "tg_hydrology");
	tgpg_op_init(&op, &a);
	op.kind = TG_OP_HYDROLOGY;
	tgpg_flow_args(&a, &c, &op);
	weight_arg(&a, &c, &op);
	if (a.coverage)
		return tgpg_run_op(&c, &op);
	/* the raster form returns (filled, direction, accumulation) */
	{
		TupleDesc	tupdesc;
		Datum		values[3];
		bool		nulls[3] = {false, false, false};
		ListCell   *lc;
		int			k = 0;

		if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
			elog(ERROR, "return type must be a row type");
		(void) tgpg_call_run(&c, &op, TGPG_RESULT_TILES);
		foreach(lc, c.tiles)
			values[k++] = PointerGetDatum(lfirst(lc));
		PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
	}
}

PG_FUNCTION_INFO_V1(tgpg_ls_factor);
Datum
tgpg_ls_factor(PG_FUNCTION_ARGS)
{
	tgpg_args	a;
	tgpg_call	c;
	tg_op		op;

	tgpg_args_open(&a, fcinfo, "tg_ls_factor", ls_args);
	NULL_RASTER_GIVES_NULL(&a);
	tgpg_call_open(&c, &a, "tg_ls_factor");
	tgpg_op_init(&op, &a);
	op.kind = TG_OP_LS_FACTOR;
	ls_args_to_op(&a, &c, &op);
	return tgpg_run_op(&c, &op);
}

PG_FUNCTION_INFO_V1(tgpg_rusle);
Datum
tgpg_rusle(PG_FUNCTION_ARGS)
{
	static const char *const factors[4][2] = {{"r", "R"}, {"k", "K"}, {"c", "C"}, {"p", "P"}};
	tgpg_args	a;
	tgpg_call	c;
	tg_op		op;

	tgpg_args_open(&a, fcinfo, "tg_rusle", rusle_args);
	NULL_RASTER_GIVES_NULL(&a);
	tgpg_call_open(&c, &a, "tg_rusle");
	tgpg_op_init(&op, &a);
	op.kind = TG_OP_RUSLE;
	ls_args_to_op(&a, &c, &op);
	for (int f = 0; f < 4; f++)
		op.rusle[f] = factor_arg(&a, &c, factors[f][0], factors[f][1]);
	return tgpg_run_op(&c, &op);
}

PG_FUNCTION_INFO_V1(tgpg_travel_time);
Datum
tgpg_travel_time(PG_FUNCTION_ARGS)
{
	tgpg_args	a;
	tgpg_call	c;
	tg_op		op;

	tgpg_args_open(&a, fcinfo, "tg_travel_time", travel_args);
	NULL_RASTER_GIVES_NULL(&a);
	tgpg_call_open(&c, &a, "tg_travel_time");
	tgpg_op_init(&op, &a);
	op.kind = TG_OP_TRAVEL_TIME;
	travel_args_to_op(&a, &c, &op);
	return tgpg_run_op(&c, &op);
}

PG_FUNCTION_INFO_V1(tgpg_isochrone_bands);
Datum
tgpg_isochrone_bands(PG_FUNCTION_ARGS)
{
	tgpg_args	a;
	tgpg_call	c;
	tg_op		op;

	tgpg_args_open(&a, fcinfo, "tg_isochrone_bands", isochrone_args);
	NULL_RASTER_GIVES_NULL(&a);
	tgpg_call_open(&c, &a, "tg_isochrone_bands");
	tgpg_op_init(&op, &a);
	op.kind = TG_OP_ISOCHRONE_BANDS;
	travel_args_to_op(&a, &c, &op);
	op.interval = tgpg_float(&a, "interval");
	return tgpg_run_op(&c, &op);
}

PG_FUNCTION_INFO_V1(tgpg_watershed);
Datum
tgpg_watershed(PG_FUNCTION_ARGS)
{
	tgpg_args	a;
	tgpg_call	c;
	tg_op		op;

	tgpg_args_open(&a, fcinfo, "tg_watershed", watershed_args);
	NULL_RASTER_GIVES_NULL(&a);
	tgpg_call_open(&c, &a, "tg_watershed");
	tgpg_op_init(&op, &a);
	op.kind = TG_OP_WATERSHED;
	tgpg_flow_args(&a, &c, &op);
	outlet_arg(&a, &c, &op);
	return tgpg_run_op(&c, &op);
}

/*
 * The pour point moved to the cell of highest D8 accumulation within
 * `distance` (tg_snap_pour_point), as the centre of that cell.
 */
PG_FUNCTION_INFO_V1(tgpg_snap_pour_point);
Datum
tgpg_snap_pour_point(PG_FUNCTION_ARGS)
{
	tgpg_args	a;
	tgpg_call	c;
	tg_op		op;
	int			snapped[2] = {-1, -1};
	const tg_georef *g;
	double		x,
				y;
	Oid			types[3] = {FLOAT8OID, FLOAT8OID, INT4OID};
	Datum		values[3];
	Datum		result;
	bool		isnull;

	tgpg_args_open(&a, fcinfo, "tg_snap_pour_point", snap_args);
	NULL_RASTER_GIVES_NULL(&a);
	tgpg_call_open(&c, &a, "tg_snap_pour_point");
	tgpg_op_init(&op, &a);
	op.kind = TG_OP_SNAP_POUR_POINT;
	tgpg_flow_args(&a, &c, &op);
	tgpg_call_point_at(&c, tgpg_datum(&a, "point"), tgpg_type(&a, "point"), "point", &op.outlet_x,
					   &op.outlet_y);
	op.snap = tgpg_float(&a, "distance");
	op.snapped = snapped;
	(void) tgpg_call_run(&c, &op, TGPG_RESULT_TILES);
	if (snapped[0] < 0)
		elog(ERROR, "the pour point was not snapped");

	/* the cell's centre through the grid's affine georeference */
	g = &c.layout->geo;
	x = g->upperleft_x + (snapped[0] + 0.5) * g->scale_x + (snapped[1] + 0.5) * g->skew_x;
	y = g->upperleft_y + (snapped[0] + 0.5) * g->skew_y + (snapped[1] + 0.5) * g->scale_y;
	values[0] = Float8GetDatum(x);
	values[1] = Float8GetDatum(y);
	values[2] = Int32GetDatum(g->srid);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "could not connect to SPI");
	if (SPI_execute_with_args("SELECT ST_SetSRID(ST_MakePoint($1, $2), $3)", 3, types, values, NULL,
							  true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not make the snapped point");
	result = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	result = SPI_datumTransfer(result, false, -1);
	SPI_finish();
	PG_RETURN_DATUM(result);
}

/* ------------------------------------------------------------------------
 * Polygons: the band rasters' tiles polygonized, merged across tiles
 * ------------------------------------------------------------------------ */

/* Does a result tile hold any cell other than its nodata (0)? */
static bool
tile_has_cells(struct varlena *v)
{
	tg_band		b;
	tg_error	err;

	tg_error_clear(&err);
	if (tg_raster_read_band((const uint8_t *) v, VARSIZE(v), 0, &b, &err) != TG_OK || b.is_nodata)
		return false;
	for (size_t i = 0; i < (size_t) b.width * b.height; i++)
		if (tg_band_get(&b, i) != 0)
			return true;
	return false;
}

/* The tiles (as a raster[] of the DEM's raster type) that hold any cell. */
static Datum
tiles_array(const tgpg_call *c, Oid raster_type, int *n)
{
	Datum	   *items = palloc(sizeof(Datum) * Max(list_length(c->tiles), 1));
	ListCell   *lc;
	int16		typlen;
	bool		typbyval;
	char		typalign;

	*n = 0;
	foreach(lc, c->tiles)
		if (tile_has_cells(lfirst(lc)))
			items[(*n)++] = PointerGetDatum(lfirst(lc));
	get_typlenbyvalalign(raster_type, &typlen, &typbyval, &typalign);
	return PointerGetDatum(construct_array(items, *n, raster_type, typlen, typbyval, typalign));
}

/*
 * The polygons of result tiles on the grid's own vertices, so that those of
 * neighbouring tiles share theirs exactly and merge into one (each tile's
 * corner is its own sum of the origin and pixel sizes, a few units in the
 * last place off its neighbour's): geom snapped to the grid when it is
 * north-up, as SQL.
 */
static char *
on_grid_vertices(const tgpg_call *c, const char *geom)
{
	const tg_georef *g = &c->layout->geo;

	if (g->skew_x != 0 || g->skew_y != 0)
		return pstrdup(geom);
	return psprintf("ST_SnapToGrid(%s, %.17g, %.17g, %.17g, %.17g)", geom, g->upperleft_x, g->upperleft_y,
					fabs(g->scale_x), fabs(g->scale_y));
}

/*
 * Isochrones: each band of times [(k - 1) interval, k interval) as one
 * multipolygon, from every tile's band raster (ST_DumpAsPolygons), merged
 * per band across tiles.
 */
PG_FUNCTION_INFO_V1(tgpg_isochrones);
Datum
tgpg_isochrones(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	tgpg_args	a;
	tgpg_call	c;
	tg_op		op;
	Oid			types[1];
	Datum		args[1];
	int			n;

	tgpg_args_open(&a, fcinfo, "tg_isochrones", isochrone_args);
	InitMaterializedSRF(fcinfo, 0);
	if (!a.coverage && PG_ARGISNULL(0))
		return (Datum) 0;
	tgpg_call_open(&c, &a, "tg_isochrones");
	tgpg_op_init(&op, &a);
	op.kind = TG_OP_ISOCHRONE_BANDS;
	travel_args_to_op(&a, &c, &op);
	op.interval = tgpg_float(&a, "interval");
	(void) tgpg_call_run(&c, &op, TGPG_RESULT_TILES);

	types[0] = get_array_type(tgpg_raster_type());
	args[0] = tiles_array(&c, tgpg_raster_type(), &n);
	if (n == 0)
		return (Datum) 0;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "could not connect to SPI");
	if (SPI_execute_with_args(psprintf("SELECT d.val::int8, ST_Multi(ST_Union(%s)) "
									   "FROM unnest($1) AS t(r), ST_DumpAsPolygons(t.r, 1, true) AS d "
									   "GROUP BY d.val ORDER BY d.val", on_grid_vertices(&c, "d.geom")),
							  1, types, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not polygonize isochrone bands");
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		bool		isnull;
		int64		band = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1, &isnull));
		Datum		geom = SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 2, &isnull);
		Datum		values[3];
		bool		nulls[3] = {false, false, false};

		values[0] = Float8GetDatum((double) (band - 1) * op.interval);
		values[1] = Float8GetDatum((double) band * op.interval);
		values[2] = geom;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	SPI_finish();
	return (Datum) 0;
}

/* The catchment of a pour point as one multipolygon, merged across tiles. */
PG_FUNCTION_INFO_V1(tgpg_watershed_polygon);
Datum
tgpg_watershed_polygon(PG_FUNCTION_ARGS)
{
	tgpg_args	a;
	tgpg_call	c;
	tg_op		op;
	Oid			types[1];
	Datum		args[1];
	Datum		result;
	bool		isnull;
	int			n;

	tgpg_args_open(&a, fcinfo, "tg_watershed_polygon", watershed_args);
	NULL_RASTER_GIVES_NULL(&a);
	tgpg_call_open(&c, &a, "tg_watershed_polygon");
	tgpg_op_init(&op, &a);
	op.kind = TG_OP_WATERSHED;
	tgpg_flow_args(&a, &c, &op);
	outlet_arg(&a, &c, &op);
	(void) tgpg_call_run(&c, &op, TGPG_RESULT_TILES);

	types[0] = get_array_type(tgpg_raster_type());
	args[0] = tiles_array(&c, tgpg_raster_type(), &n);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "could not connect to SPI");
	if (SPI_execute_with_args(psprintf("SELECT ST_Multi(ST_Union(%s)) FROM unnest($1) AS t(r)",
									   on_grid_vertices(&c, "ST_Polygon(t.r)")),
							  1, types, args, NULL, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not polygonize the watershed");
	result = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (!isnull)
		result = SPI_datumTransfer(result, false, -1);
	SPI_finish();
	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(result);
}

/* ------------------------------------------------------------------------
 * Viewsheds
 * ------------------------------------------------------------------------ */
static void
view_args_to_op(const tgpg_args *a, const tgpg_call *c, tg_op *op)
{
	const tg_georef *geo = &c->layout->geo;

	op->view.observer_height = tgpg_float(a, "observer_height");
	op->view.target_height = tgpg_float(a, "target_height");
	op->view.max_distance = tgpg_given(a, "max_distance") ? tgpg_float(a, "max_distance") : 0;
	op->view.earth_radius = tgpg_float(a, "earth_radius");
	op->view.refraction = tgpg_float(a, "refraction");
	if (geo->skew_x != 0 || geo->skew_y != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("viewsheds of skewed rasters are not supported"),
				 errhint("Warp the raster to a north-up grid first.")));
	op->view.geom = tgpg_call_geometry(c);
	op->view.cell_x = op->view.geom.cell_x;
	op->view.cell_y = op->view.geom.cell_y;
}

PG_FUNCTION_INFO_V1(tgpg_viewshed);
Datum
tgpg_viewshed(PG_FUNCTION_ARGS)
{
	tgpg_args	a;
	tgpg_call	c;
	tg_op		op;

	tgpg_args_open(&a, fcinfo, "tg_viewshed", viewshed_args);
	NULL_RASTER_GIVES_NULL(&a);
	tgpg_call_open(&c, &a, "tg_viewshed");
	tgpg_op_init(&op, &a);
	op.kind = TG_OP_VIEWSHED;
	view_args_to_op(&a, &c, &op);
	tgpg_call_point(&c, tgpg_datum(&a, "observer"), tgpg_type(&a, "observer"), "observer",
					&op.view.observer_col, &op.view.observer_row);
	op.view.output = tgpg_word_value(&a, "output");
	op.view.algorithm = tgpg_word_value(&a, "algorithm");
	return tgpg_run_op(&c, &op);
}

PG_FUNCTION_INFO_V1(tgpg_viewshed_count);
Datum
tgpg_viewshed_count(PG_FUNCTION_ARGS)
{
	tgpg_args	a;
	tgpg_call	c;
	tg_op		op;
	double	   *xs,
			   *ys;
	int			nobs;
	int		   *cols,
			   *rows;

	tgpg_args_open(&a, fcinfo, "tg_viewshed_count", viewshed_count_args);
	NULL_RASTER_GIVES_NULL(&a);
	tgpg_call_open(&c, &a, "tg_viewshed_count");
	tgpg_op_init(&op, &a);
	op.kind = TG_OP_VIEWSHED_COUNT;
	view_args_to_op(&a, &c, &op);
	nobs = tgpg_points_arg(&a, &c, "observers", "observer", NULL, &xs, &ys);
	cols = palloc(sizeof(int) * nobs);
	rows = palloc(sizeof(int) * nobs);
	for (int k = 0; k < nobs; k++)
	{
		cols[k] = (int) floor(xs[k]);
		rows[k] = (int) floor(ys[k]);
	}
	op.nobservers = nobs;
	op.observer_cols = cols;
	op.observer_rows = rows;
	return tgpg_run_op(&c, &op);
}
