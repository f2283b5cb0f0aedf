/*
 * bench_core.h — what bench_core.c and bench_studies.c share: the options
 * of a run, and the studies other than one operation's timing.
 */
#ifndef TG_BENCH_CORE_H
#define TG_BENCH_CORE_H

#include "bmmq/bmmq.h"
#include "hydro/accum/accum.h"
#include "hydro/drainage/drainage.h"
#include "scale/strips/strips.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct options
{
	const char *op;
	int			reps;
	bool		cpu;
	bool		gpu;
	double		scale;
	double		eps;
	const char *method;
	const char *save;			/* write the (CPU, else GPU) result here */
	bool		repeat_check;	/* compare every run's output with the first's */
	int			tile;			/* bmmq: tile side, 0 = the whole DEM */
	int			nbins;			/* bmmq: equal-interval bins */
	int			obs_col;		/* viewshed observer, -1 = centre */
	int			obs_row;
	double		obs_h;
	double		maxdist;
	bool		r3;
	size_t		mem_mb;
	double		threshold;		/* drainage: stream cells' accumulation, in cells */
	int			threads;		/* 0 = every core */
	const char *products;		/* terrain: comma-separated product names, NULL = all */
	int			strip_rows;		/* seams: rows of each strip */
	bool		check;			/* seams: the directions in strips against one grid's */
	tg_flow_params flow;
} options;

double		now_ms(void);
double		median(double *v, int n);

int			bench_bmmq(const options *o, const tg_band *dem);
int			bench_levels(const options *o, const tg_band *dem);
int			bench_drainage(const options *o, const tg_band *dem);
int			bench_viewshed(const options *o, const tg_band *dem);
int			bench_seams(const options *o, const tg_band *dem);
int			bench_copies(int argc, char **argv);

#endif							/* TG_BENCH_CORE_H */
