/*
 * tgpg_op.h — what the files of the terrain functions' glue share
 * (tgpg_ops.c, tgpg_drainage.c): the arguments every function describes
 * alike, the vocabularies of the flow options, and the steps that turn
 * arguments into a tg_op and run it.  Internal to src/pg.
 */
#ifndef TGPG_OP_H
#define TGPG_OP_H

#include "tgpg.h"

#define TGPG_ROUTINGS 6
#define TGPG_ACCUM_METHODS 5
extern const tgpg_word tgpg_routings[TGPG_ROUTINGS];
extern const tgpg_word tgpg_accum_methods[TGPG_ACCUM_METHODS];

/* Argument descriptions every function spells the same */
#define BAND			{"band", TGPG_INT}
#define BACKEND			{"backend", TGPG_WORD, TGPG_OPTIONAL, TGPG_WORDS(tgpg_backends)}
#define NODATA			{"nodata", TGPG_FLOAT, TGPG_OPTIONAL}
#define ROUTING			{"routing", TGPG_WORD, 0, TGPG_WORDS(tgpg_routings)}
#define FILL			{"fill", TGPG_BOOL}
#define EXPONENT		{"exponent", TGPG_FLOAT, TGPG_POSITIVE}
#define THRESHOLD		{"threshold", TGPG_FLOAT, TGPG_NONNEGATIVE}
#define ACCUM_METHOD	{"method", TGPG_WORD, 0, TGPG_WORDS(tgpg_accum_methods)}
#define SNAP			{"snap", TGPG_FLOAT, TGPG_NONNEGATIVE}

/* A raster form with a NULL raster returns NULL (the coverage form refuses a NULL table). */
#define NULL_RASTER_GIVES_NULL(a) \
	do { \
		if (!(a)->coverage && PG_ARGISNULL(0)) \
			PG_RETURN_NULL(); \
	} while (0)

/* An operation from the arguments every function shares (band, nodata). */
void		tgpg_op_init(tg_op *op, const tgpg_args *a);
/* Routing, fill, exponent and threshold where the function takes them (d8, filled, otherwise). */
void		tgpg_flow_args(const tgpg_args *a, const tgpg_call *c, tg_op *op);
/* A geometry[] argument of points on the grid (fractional columns and rows); returns how many. */
int			tgpg_points_arg(const tgpg_args *a, const tgpg_call *c, const char *name, const char *item,
							const char *hint, double **xs, double **ys);
/* The operation over the call: a raster value, or the coverage form's rows. */
Datum		tgpg_run_op(tgpg_call *c, const tg_op *op);

#endif							/* TGPG_OP_H */
