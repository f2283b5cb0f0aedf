/*
 * tg_cuda_stub.c — the CUDA side of a build made without nvcc (WITH_CUDA=0):
 * there is never a device, so `auto` runs on the CPU and `gpu` says why not.
 */
#include "dispatch/dispatch.h"

/* no device streams products: kept for the tests, which set it either way */
size_t		tg_stream_slice_bytes = 0;

static tg_status
no_cuda(tg_error *err)
{
	tg_error_set(err, TG_ENODEVICE, "no usable CUDA device");
	tg_error_detail(err, "terra_gpu was built without CUDA support (nvcc was not found at build time).");
	return TG_ENODEVICE;
}

tg_status
tg_cuda_probe(int device, tg_device_info *info, tg_error *err)
{
	return no_cuda(err);
}

void
tg_cuda_release(void)
{
}

void
tg_cuda_peak_restart(void)
{
}

size_t
tg_cuda_peak_bytes(void)
{
	return 0;
}

tg_status
tg_cuda_copy_rates(const tg_ctx *ctx, size_t bytes, tg_copy_rates *rates, tg_error *err)
{
	return no_cuda(err);
}

tg_status
tg_cuda_terrain(const tg_ctx *ctx, const tg_band *dem, const tg_terrain_params *params,
				void *const *out, tg_error *err)
{
	return no_cuda(err);
}

tg_status
tg_cuda_fill(const tg_ctx *ctx, const tg_band *dem, const tg_fill_params *params,
			 double out_nodata, void *out, tg_error *err)
{
	return no_cuda(err);
}

tg_status
tg_cuda_flow_accumulation(const tg_ctx *ctx, const tg_band *dem, const double *weight,
						  const double *row_weight, const double *row_divisor, const tg_flow_params *params,
						  tg_accum_method method, const tg_flow_products *out, tg_error *err)
{
	return no_cuda(err);
}

tg_status
tg_cuda_flow_direction(const tg_ctx *ctx, const tg_band *dem, const tg_flow_params *params,
					   uint8_t *d8, float *frac, tg_error *err)
{
	return no_cuda(err);
}

tg_status
tg_cuda_part_d8(const tg_ctx *ctx, const tg_band *z, int own0, int own_rows,
				const tg_flow_params *p, const tg_flat_masks *given, const tg_part_weights *weight,
				const tg_part_d8_out *out, tg_error *err)
{
	return no_cuda(err);
}

size_t		tg_given_masks_batch = (size_t) 1 << 20;

tg_status
tg_cuda_part_d8_rows(const tg_ctx *ctx, int W, const tg_flow_params *p, int64_t *rows, tg_error *err)
{
	return no_cuda(err);
}

tg_status
tg_cuda_crossing_flats(const tg_ctx *ctx, const tg_band *z, int y0, int nrows, tg_crossing_list *list,
					   tg_error *err)
{
	return no_cuda(err);
}

tg_status
tg_cuda_seam_flats_walk(const tg_ctx *ctx, size_t n, const uint8_t *nbr, const uint32_t *up, const uint32_t *down,
						int32_t *d0, int32_t *d1, tg_error *err)
{
	return no_cuda(err);
}

tg_status
tg_cuda_fill_scan(const tg_ctx *ctx, const double *z, int W, int count, int y0, int nrows, uint32_t top_base,
				  uint32_t bottom_base, tg_scan_edges *edges, uint32_t *first, uint32_t *last, tg_error *err)
{
	return no_cuda(err);
}

tg_status
tg_cuda_bmmq_build(const tg_ctx *ctx, const tg_band *tiles, int ntiles, const double *bounds,
				   int nbounds, tg_bmmq_tree *trees, tg_error *err)
{
	return no_cuda(err);
}

tg_status
tg_cuda_viewshed(const tg_ctx *ctx, const tg_band *dem, const tg_viewshed_params *params,
				 float *out, tg_error *err)
{
	return no_cuda(err);
}

tg_status
tg_cuda_viewshed_count(const tg_ctx *ctx, const tg_band *dem, const tg_viewshed_params *params,
					   const int *cols, const int *rows, int n, uint32_t *count, tg_error *err)
{
	return no_cuda(err);
}

tg_status
tg_cuda_rusle(const tg_ctx *ctx, const tg_band *dem, const tg_rusle_params *params,
			  const tg_cell_factor factors[4], float *ls, float *soil_loss, tg_error *err)
{
	return no_cuda(err);
}

tg_status
tg_cuda_travel_time(const tg_ctx *ctx, const tg_band *dem, const tg_travel_params *params,
					const tg_cell_factor *roughness, const tg_cell_factor *velocity, float *time,
					uint8_t *watershed, tg_error *err)
{
	return no_cuda(err);
}

tg_status
tg_cuda_drainage_labels(const tg_ctx *ctx, int width, int height, const uint8_t *down, const uint32_t *mark,
						uint32_t *labels, tg_error *err)
{
	return no_cuda(err);
}

tg_status
tg_cuda_stream_order(const tg_ctx *ctx, int width, int height, const uint8_t *down, const uint8_t *stream,
					 bool shreve, uint32_t *order, tg_error *err)
{
	return no_cuda(err);
}
