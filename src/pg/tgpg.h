/*
 * tgpg.h — shared declarations of the fmgr glue (src/pg).
 *
 * Only this layer includes PostgreSQL headers or calls ereport, and only
 * after the core has returned: no longjmp ever crosses core or CUDA frames.
 */
#ifndef TGPG_H
#define TGPG_H

#include "postgres.h"

#include "fmgr.h"

#include "tg_core.h"

/* Settings (terra_gpu.c) */
extern int	tgpg_backend;
extern int	tgpg_min_cells_for_gpu;
extern int	tgpg_device;
extern int	tgpg_max_device_memory_mb;

/* tgpg_error.c: the one place a tg_error becomes an SQLSTATE */
void		tgpg_raise(const tg_error *err) pg_attribute_noreturn();

static inline void
tgpg_check(tg_status st, const tg_error *err)
{
	if (st != TG_OK)
		tgpg_raise(err);
}

/* tgpg_context.c: a core context from the settings and per-call options */
void		tgpg_ctx_init(tg_ctx *ctx, const char *function, FunctionCallInfo fcinfo,
						  int backend_argno);

const tg_run_stats *tgpg_last_run_stats(const char **function);

/* tgpg_args.c: argument helpers with proper SQLSTATEs */
int32		tgpg_arg_int32(FunctionCallInfo fcinfo, int argno, const char *name);
double		tgpg_arg_float8(FunctionCallInfo fcinfo, int argno, const char *name);
char	   *tgpg_arg_cstring(FunctionCallInfo fcinfo, int argno, const char *name);

/* tgpg_raster.c: raster values in and out */
typedef struct tgpg_raster
{
	struct varlena *value;		/* detoasted */
	const uint8_t *buf;
	size_t		len;
	tg_raster_info info;
} tgpg_raster;

void		tgpg_raster_header(Datum datum, tg_raster_info *info);
void		tgpg_raster_open(Datum datum, tgpg_raster *r);
void		tgpg_raster_band(const tgpg_raster *r, int band, tg_band *out);
void		tgpg_raster_close(tgpg_raster *r, Datum datum);
void		tgpg_check_result_size(const tg_raster_info *info, const tg_band_spec *bands);
struct varlena *tgpg_raster_create(const tg_raster_info *info,
								   const tg_band_spec *bands, void **band_data);

/* tgpg_hydro.c: metric spacing per row (geographic SRIDs) or the pixel size */
tg_grid_geometry tgpg_grid_geometry(const tg_raster_info *info);

#endif							/* TGPG_H */
