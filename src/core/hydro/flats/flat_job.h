/*
 * flat_job.h — what the files of hydro/flats/ share: the flats of a grid
 * being labelled (flat_labels.c), their distances walked (flat_distances.c)
 * and their masks made (flat_masks.c).  Private to hydro/flats/.
 *
 * A flat (the flat cells of one elevation, 8-connected) is resolved on its
 * own: its two breadth-first distances never leave it, so flats are
 * independent tasks, each a plain FIFO on one thread, with the locality of
 * its own cells; a flat too large for one thread is resolved in blocks of
 * rows by all of them.
 */
#ifndef TG_FLAT_JOB_H
#define TG_FLAT_JOB_H

#include "hydro/flats/flats.h"

#define LABEL_BLOCK_CELLS 262144	/* cells of the union-find's blocks, about (flat_labels.c) */
#define FAR TG_FLAT_FAR

typedef struct flat_job
{
	const double *z;
	const uint8_t *flat;
	int			W,
				H;
	int			above,
				below;			/* rows of z and flat beyond [0, H) that the seeds see (a strip's) */
	bool		numbers_only;	/* the flat numbers wanted, not the lists (tg_cpu_crossing_flats) */
	int32_t    *parent;			/* union-find, then each flat cell's flat number */
	int64_t    *first;			/* per flat: where its cells start in cells[] (nflats + 1) */
	uint32_t   *cells;			/* the flats' cells, flat by flat, each in row-major order */
	uint8_t    *seed;			/* TG_SEED_DRAINS: a seed of T, TG_SEED_HIGHER: of A */
	struct flat_task *tasks;
	int32_t    *mask;			/* out: M, and T on the way */
	int32_t    *away;			/* A (before: each flat cell's root, while the flats are listed) */
	uint8_t    *queued[2];		/* in a large flat's FIFO, per distance (set on its cells only) */
} flat_job;

/* A task: consecutive small flats [f0, f1). */
typedef struct flat_task
{
	int64_t		f0,
				f1;
} flat_task;

/* Number and list the flats of j (flat_labels.c; numbers_only: first[] counts each flat's cells, no cells[]). */
tg_status	tg_flat_label(const tg_ctx *ctx, flat_job *j, int64_t *nflats, tg_error *err);
void		tg_flat_job_free(const tg_ctx *ctx, flat_job *j);

/* The distances and masks of the flats (flat_distances.c): small flats in tasks, large ones alone. */
int64_t		tg_flat_plan_tasks(const tg_ctx *ctx, flat_job *j, int64_t nflats);
tg_status	tg_flat_task_run(const tg_ctx *ctx, void *arg, int64_t t, tg_error *err);
tg_status	tg_flat_resolve_large(const tg_ctx *ctx, const flat_job *j, int64_t f, tg_error *err);

#endif							/* TG_FLAT_JOB_H */
