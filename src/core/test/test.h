/*
 * test.h — the core test programs' tiny framework: counted checks and a
 * deterministic random number generator.  Each suite is a test_*() function.
 */
#ifndef TG_TEST_H
#define TG_TEST_H

/* the tests reach into every folder of the core */
#include "bmmq/bmmq.h"
#include "hydro/catchment/catchment.h"
#include "hydro/drainage/drainage.h"
#include "scale/parts/parts.h"
#include "scale/strips/strips.h"
#include "viewshed/viewshed.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern int	n_pass;
extern int	n_fail;
extern uint64_t rng_state;

/* Count a check; print the formatted message when it fails. */
void		check(bool ok, const char *fmt,...) __attribute__((format(printf, 2, 3)));

/* A band over caller memory. */
static inline tg_band
test_band(tg_pixtype pixtype, const void *data, int width, int height, bool has_nodata, double nodata)
{
	tg_band		b;

	memset(&b, 0, sizeof b);
	b.pixtype = pixtype;
	b.width = width;
	b.height = height;
	b.data = data;
	b.has_nodata = has_nodata;
	b.nodata = nodata;
	return b;
}

/*
 * Every terrain derivative (tg_terrain) of cells `cell` wide, in planes of
 * doubles (the geomorphons in bytes): product k's plane at out + k * n.
 */
static inline void
test_terrain_params(tg_terrain_params *p, double cell)
{
	tg_terrain_defaults(p);
	p->pixel_width = p->pixel_height = cell;
	p->search_radius = 5;
	p->skip = 1;
	p->nproducts = TG_TERRAIN_PRODUCTS;
	for (int k = 0; k < TG_TERRAIN_PRODUCTS; k++)
	{
		p->products[k] = (tg_terrain_product) k;
		p->types[k] = k == TG_TERRAIN_GEOMORPHONS ? TG_PT_8BUI : TG_PT_64BF;
		p->nodata[k] = k == TG_TERRAIN_GEOMORPHONS ? 0 : -9999;
	}
}

/* xorshift64* */
static inline uint64_t
rng_next(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

static inline double
rng_uniform(void)
{
	return (rng_next() >> 11) * (1.0 / 9007199254740992.0);
}

/* The suites of the test_*.c files */
void		test_hydro(void);
void		test_hydro_chain(void);
void		test_strips(void);
void		test_bmmq(void);
void		test_viewshed(void);
void		test_catchment(void);
void		test_threads(void);
void		test_terrain(void);
void		test_run(void);

/* Flow options over a W x H grid of square cells of side `cell` (metres): exponent 1.1, threshold 10. */
static inline tg_flow_params
flow_params(tg_routing routing, int W, int H, double cell, bool fill)
{
	tg_flow_params p = {.routing = routing, .fill = fill, .exponent = 1.1, .threshold = 10};

	p.geom = (tg_grid_geometry) {.width = W, .height = H, .cell_x = cell, .cell_y = cell};
	return p;
}

/* RUSLE over flow: the SQL functions' m, n, a0, b0, the method `auto`, and R 300, K 0.03, C 0.2, P 1. */
static inline tg_rusle_params
rusle_params(tg_flow_params flow)
{
	return (tg_rusle_params) {.flow = flow, .method = TG_ACC_AUTO, .m = 0.4, .n = 1.3, .a0 = 22.1, .b0 = 0.0896,
		.r = {NULL, 300}, .k = {NULL, 0.03}, .c = {NULL, 0.2}, .p = {NULL, 1}};
}

#endif							/* TG_TEST_H */
