/*
 * tgpg_compat.c — the C entry points of release 0.1.0.
 *
 * 0.1.0 declared the coverage forms with their own symbols
 * (tgpg_slope_coverage ...).  A database still at 0.1.0 loads this library
 * once it is installed, before ALTER EXTENSION terra_gpu UPDATE runs, so
 * those symbols must resolve.  Arguments are read by name from the caller's
 * declaration (tgpg_args.c), so the 0.1.0 declarations, which only put the
 * column names elsewhere in the list, run the same code as 0.2.0.
 */
#include "tgpg.h"

#define TGPG_SINCE_0_2(old, current) \
	extern PGDLLEXPORT Datum current(PG_FUNCTION_ARGS); \
	PG_FUNCTION_INFO_V1(old); \
	Datum old(PG_FUNCTION_ARGS) { return current(fcinfo); }

TGPG_SINCE_0_2(tgpg_slope_coverage, tgpg_slope)
TGPG_SINCE_0_2(tgpg_fill_coverage, tgpg_fill)
TGPG_SINCE_0_2(tgpg_flow_direction_coverage, tgpg_flow_direction)
TGPG_SINCE_0_2(tgpg_flow_accumulation_coverage, tgpg_flow_accumulation)
TGPG_SINCE_0_2(tgpg_hydrology_coverage, tgpg_hydrology)
TGPG_SINCE_0_2(tgpg_ls_factor_coverage, tgpg_ls_factor)
TGPG_SINCE_0_2(tgpg_rusle_coverage, tgpg_rusle)
TGPG_SINCE_0_2(tgpg_travel_time_coverage, tgpg_travel_time)
TGPG_SINCE_0_2(tgpg_isochrone_bands_coverage, tgpg_isochrone_bands)
TGPG_SINCE_0_2(tgpg_isochrones_coverage, tgpg_isochrones)
TGPG_SINCE_0_2(tgpg_watershed_coverage, tgpg_watershed)
TGPG_SINCE_0_2(tgpg_viewshed_coverage, tgpg_viewshed)
TGPG_SINCE_0_2(tgpg_viewshed_count_coverage, tgpg_viewshed_count)
