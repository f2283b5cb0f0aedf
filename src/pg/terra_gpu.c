/*
 * terra_gpu.c — module entry: settings, and the functions that describe the
 * GPU and the last call.
 *
 * _PG_init defines settings and nothing else.  It may run in the postmaster
 * (shared_preload_libraries), and CUDA does not survive fork(), so CUDA is
 * started lazily by the first call in a backend that wants the GPU.
 */
#include "tgpg.h"

#include "access/htup_details.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/guc.h"

PG_MODULE_MAGIC;

int			tgpg_backend = TG_BACKEND_AUTO;
int			tgpg_min_cells_for_gpu = 1000000;
int			tgpg_device = 0;
int			tgpg_max_device_memory_mb = 0;
int			tgpg_max_memory_mb = 0;
int			tgpg_route_cache_mb = 256;
int			tgpg_threads = 0;
char	   *tgpg_coverage_tiles = NULL;
#ifdef USE_LZ4
int			tgpg_tile_compression = TGPG_COMPRESSION_LZ4;
#else
int			tgpg_tile_compression = TGPG_COMPRESSION_NONE;
#endif

static const struct config_enum_entry backend_options[] = {
	{"auto", TG_BACKEND_AUTO, false},
	{"cpu", TG_BACKEND_CPU, false},
	{"gpu", TG_BACKEND_GPU, false},
	{NULL, 0, false}
};

static const struct config_enum_entry compression_options[] = {
	{"none", TGPG_COMPRESSION_NONE, false},
#ifdef USE_LZ4
	{"lz4", TGPG_COMPRESSION_LZ4, false},
#endif
	{NULL, 0, false}
};

void		_PG_init(void);

/* A new limit takes effect at once: what was kept is dropped. */
static void
route_cache_assign(int newval, void *extra)
{
	if (newval != tgpg_route_cache_mb)
		tg_route_cache_clear();
}

void
_PG_init(void)
{
	DefineCustomEnumVariable("terra_gpu.backend",
							 "Where terra_gpu functions run: auto, cpu or gpu.",
							 "auto uses the GPU when one is ready and the input has at least "
							 "terra_gpu.min_cells_for_gpu cells; gpu fails without a GPU.",
							 &tgpg_backend, TG_BACKEND_AUTO, backend_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("terra_gpu.min_cells_for_gpu",
							"Smallest input (in cells) that backend auto sends to the GPU.",
							NULL, &tgpg_min_cells_for_gpu, 1000000, 0, INT_MAX,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("terra_gpu.device",
							"CUDA device ordinal this backend uses.",
							NULL, &tgpg_device, 0, 0, 63,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("terra_gpu.max_device_memory_mb",
							"GPU memory one call may use, in megabytes (0 = no limit of its own).",
							"Work that needs more is cut into passes where the operation allows, "
							"else it runs on the CPU (backend auto) or fails. The CUDA context of "
							"each backend comes on top.",
							&tgpg_max_device_memory_mb, 0, 0, INT_MAX,
							PGC_SUSET, GUC_UNIT_MB, NULL, NULL, NULL);
	DefineCustomIntVariable("terra_gpu.max_memory_mb",
							"Host memory one coverage call may use, in megabytes (0 = half the RAM).",
							"A coverage is processed as one grid; a call that would need more "
							"fails before reading its tiles.",
							&tgpg_max_memory_mb, 0, 0, INT_MAX,
							PGC_SUSET, GUC_UNIT_MB, NULL, NULL, NULL);
	DefineCustomIntVariable("terra_gpu.route_cache_mb",
							"Host memory each backend may keep of the last CPU flow routing, in megabytes (0 = none).",
							"A later CPU call on the same DEM with the same routing parameters "
							"(another weight, LS then RUSLE, directions then accumulation) starts "
							"from the kept fill, flats and directions, and the topological order.",
							&tgpg_route_cache_mb, 256, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_MB, NULL, route_cache_assign, NULL);
	DefineCustomIntVariable("terra_gpu.threads",
							"Threads one terra_gpu call may use (0 = every core this server process may run on).",
							"The threads live only during a call.  With many concurrent sessions, "
							"a lower value keeps them from competing for the same cores.",
							&tgpg_threads, 0, 0, 256,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomEnumVariable("terra_gpu.tile_compression",
							 "How the coverage forms hand back their result tiles: lz4 or none.",
							 "lz4 compresses each tile on the call's threads as PostgreSQL would when "
							 "storing it; a table then stores it without compressing it again.",
							 &tgpg_tile_compression, tgpg_tile_compression, compression_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomStringVariable("terra_gpu.coverage_tiles",
							   "Internal (tg_refresh): the tiles a coverage form reads of one table.",
							   "RELID:ID,ID,...[/ID,ID,...]: a coverage form over the table with that "
							   "OID reads only the tiles with those ids and, where ids follow a slash, "
							   "gives the results of those tiles only; empty: every tile.",
							   &tgpg_coverage_tiles, "",
							   PGC_USERSET, GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE | GUC_DISALLOW_IN_FILE,
							   NULL, NULL, NULL);
	MarkGUCPrefixReserved("terra_gpu");
}

PG_FUNCTION_INFO_V1(tgpg_version);
Datum
tgpg_version(PG_FUNCTION_ARGS)
{
	PG_RETURN_TEXT_P(cstring_to_text(TG_VERSION));
}

static Datum
text_or_null(const char *s, bool *isnull)
{
	*isnull = s == NULL || s[0] == '\0';
	return *isnull ? (Datum) 0 : CStringGetTextDatum(s);
}

static char *
cuda_version_string(int v)
{
	return v > 0 ? psprintf("%d.%d", v / 1000, (v % 1000) / 10) : NULL;
}

/* Which device would be used, or why there is none.  Starts CUDA here. */
PG_FUNCTION_INFO_V1(tgpg_gpu_info);
Datum
tgpg_gpu_info(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	tg_device_info info;
	Datum		values[10];
	bool		nulls[10];

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);

	tg_device_query(tgpg_device, &info);
	memset(nulls, 0, sizeof nulls);
	values[0] = BoolGetDatum(info.available);
	values[1] = Int32GetDatum(tgpg_device);
	values[2] = text_or_null(info.available ? info.name : NULL, &nulls[2]);
	values[3] = text_or_null(info.available ? psprintf("%d.%d", info.cc_major, info.cc_minor) : NULL,
							 &nulls[3]);
	values[4] = Int64GetDatum((int64) (info.total_memory >> 20));
	nulls[4] = !info.available;
	values[5] = Int64GetDatum((int64) (info.free_memory >> 20));
	nulls[5] = !info.available;
	values[6] = Int32GetDatum(info.multiprocessors);
	nulls[6] = !info.available;
	values[7] = text_or_null(cuda_version_string(info.driver_version), &nulls[7]);
	values[8] = text_or_null(cuda_version_string(info.runtime_version), &nulls[8]);
	values[9] = text_or_null(info.reason, &nulls[9]);

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/*
 * Whether a call of the given cells would run on the GPU under this
 * backend's settings (terra_gpu.backend, min_cells_for_gpu, device): the
 * dispatcher's own policy.  Starts CUDA here where it asks a device; the last
 * call's statistics stay as they were.
 */
PG_FUNCTION_INFO_V1(tgpg_gpu_chosen);
Datum
tgpg_gpu_chosen(PG_FUNCTION_ARGS)
{
	tg_ctx		ctx;

	tgpg_ctx_settings(&ctx, tgpg_backend);
	PG_RETURN_BOOL(tg_gpu_chosen(&ctx, PG_GETARG_INT64(0)));
}

/* What this backend's last terra_gpu call ran on and how long it took. */
PG_FUNCTION_INFO_V1(tgpg_last_run);
Datum
tgpg_last_run(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	const tg_run_stats *stats;
	const char *function;
	StringInfoData phases;
	Datum		values[15];
	bool		nulls[15];

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);

	stats = tgpg_last_run_stats(&function);
	if (stats == NULL)
		PG_RETURN_NULL();

	memset(nulls, 0, sizeof nulls);
	values[0] = CStringGetTextDatum(function);
	values[1] = CStringGetTextDatum(tg_backend_name(stats->backend));
	values[2] = Int64GetDatum(stats->cells);
	values[3] = Float8GetDatum(stats->kernel_ms);
	nulls[3] = stats->backend != TG_BACKEND_GPU;
	values[4] = Float8GetDatum(stats->transfer_ms);
	nulls[4] = stats->backend != TG_BACKEND_GPU;
	values[5] = Float8GetDatum(stats->core_ms);
	values[6] = Int32GetDatum(stats->chunks);
	nulls[6] = stats->backend != TG_BACKEND_GPU;
	values[7] = text_or_null(stats->note, &nulls[7]);
	values[8] = text_or_null(stats->method, &nulls[8]);
	values[9] = Int32GetDatum(stats->iterations);
	nulls[9] = stats->iterations == 0;
	values[10] = Float8GetDatum(stats->prep_ms);
	nulls[10] = stats->prep_ms == 0;
	values[11] = Int32GetDatum(stats->threads > 0 ? stats->threads : 1);
	initStringInfo(&phases);
	for (int k = 0; k < stats->nphases; k++)
		appendStringInfo(&phases, "%s%s %.1f ms", k ? ", " : "", stats->phases[k].name,
						 stats->phases[k].ms);
	values[12] = text_or_null(phases.data, &nulls[12]);
	values[13] = Int64GetDatum((int64) stats->peak_host_bytes);
	values[14] = Int64GetDatum((int64) stats->peak_device_bytes);
	nulls[14] = stats->backend != TG_BACKEND_GPU;

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
