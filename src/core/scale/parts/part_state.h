/*
 * part_state.h — what the files of scale/parts/ share: the part's header
 * and the state it keeps between phases, the coordinator's state, the
 * small helpers over them, and each phase's functions.  Private to
 * scale/parts/.
 */
#ifndef TG_PART_STATE_H
#define TG_PART_STATE_H

#include "scale/parts/part_wire.h"

#define MAX_ROUNDS 100000		/* of the flats or the flow */

/* ------------------------------------------------------------------------
 * A part's run
 * ------------------------------------------------------------------------ */

/* What every message but the edges' tells a part. */
typedef struct part_message
{
	int			index;
	int			count;
	int			width;			/* of the grid */
	int			col0;			/* of the grid: the part's first column (its tiles may not span the width) */
	int			row0;			/* of the grid: the part's first row */
	double		lat_top;		/* of the grid: its first row's latitude (geographic grids) */
} part_message;

/* What an accumulating part keeps between phases. */
typedef struct part_state
{
	int			W;
	int			H;
	int			index;
	int			count;
	int			row0;
	tg_band		dem;			/* the DEM's type and nodata (no pixels): tg_hydrology's filled DEM has them */
	double	   *z;				/* (2 + H + 2) * W: the routing surface with two rows around (NaN: none) */
	/* its own cells of flats that cross its edges */
	size_t		nflat;
	uint32_t   *cell;			/* y * W + x over its own rows, raster order */
	uint8_t    *seed;
	int32_t    *at;				/* H * W: the index in cell[] of each own cell, -1 */
	int32_t    *comp;			/* the flat each belongs to, as far as the part sees it */
	int64_t    *comp_least;		/* each such flat's label from its own cells: ncomp */
	int64_t    *least;			/* and with its neighbours': ncomp; a cell's label (1 + the smallest
								 * grid cell number of its flat) is its flat's */
	/* until the masks: the crossing cells walked over (scale/seams/), the same order as cell[] */
	tg_seam_flats flats;
	size_t		ncomp;
	uint32_t   *edge;			/* the crossing cells of the part's first and last rows (indices) */
	size_t		nedge;
	int32_t    *mask;
	/* the same of the row above (the neighbour's last) and the row below (its first): 2 * W */
	int32_t    *nb_towards;
	int32_t    *nb_away;
	int64_t    *nb_label;
	int32_t    *nb_mask;
	uint8_t    *sent;			/* our first and last rows' values as last handed over (32 * W bytes) */
	uint8_t    *d8;				/* after the link: the part's directions (H * W) */
	double	   *acc;			/* and its accumulation alone; the finish adds the inflows */
	/*
	 * Multiple-flow accumulation: the part's routing with flow_halo rows of
	 * each neighbour's around it, which it computes too (their routing as
	 * the neighbour handed it over), and around those one row taken in,
	 * whose cells weigh what the neighbour last handed over of their
	 * accumulation.  (H + 2 (flow_halo + 1)) * W cells, the part's own from
	 * row flow_halo + 1; flow_z is the own rows' z (NaN: nodata), 0 around.
	 */
	int			flow_halo;
	double	   *flow_z;
	uint8_t    *flow_d8;
	float	   *flow_frac;		/* 8 planes */
	double	   *flow_w;
	double	   *flow_acc;
	uint8_t    *flow_wait;		/* computed cells: donors not yet final; cells taken in: 1 until their value comes */
	uint32_t   *flow_stack;		/* cells final, their receivers not yet told */
	size_t		nstack;
	size_t		npending;		/* cells taken in still waiting for their value */
	uint8_t    *taken_reach;	/* of the rows the neighbours take in, the cells that route into theirs: 2 * W */
	uint32_t   *ready[2];		/* cells of those rows final since last handed over */
	size_t		nready[2];
} part_state;

/* ------------------------------------------------------------------------
 * The coordinator
 * ------------------------------------------------------------------------ */

/* The phases whose replies the coordinator keeps, in its state. */
#define SLOTS (TG_PART_FLOW + 1)

typedef struct coordinator
{
	const tg_ctx *ctx;
	tg_op_kind	kind;
	int			n;
	const char *const *names;
	tg_part_phase last;			/* the phase whose replies come next */
	int			round;			/* of the flats or the flow */
	tg_part_bytes *slot[SLOTS]; /* n replies of each phase kept, or NULL */
	/* from the edges */
	int			W;
	double		lat_top;		/* the grid's first row's latitude, as the top part's georeference gives it */
	bool		fill;
	bool		multiple;		/* multiple-flow accumulation: flow rounds */
	int		   *order;			/* order[k]: the part k-th from the top */
	int		   *row0;			/* each part's first row on the grid */
	int		   *col0;			/* and first column (where its rows of tiles begin) */
	int		   *height;
	double	  **dem_first;		/* each part's first and last DEM rows, the grid's width */
	double	  **dem_last;
} coordinator;

/* ------------------------------------------------------------------------
 * Multiple-flow accumulation: the flow between parts in rounds
 * ------------------------------------------------------------------------ */

/*
 * A flow reply holds four sections (begin_section), empty where there is
 * nothing to say: the routing of the part's rows that the neighbour above
 * and the one below compute too (round 0), then the values of the row each
 * takes in that became final since last handed over.  A flow message
 * holds, after its round, the sections of the neighbour above (its last
 * rows') and then below (its first rows'): routing, values.
 */
enum
{
	ROUTING_FIRST, ROUTING_LAST, VALUES_FIRST, VALUES_LAST
};

/* Rows of the DEM a part needs of each neighbour's: the seams' rows of halo (0: not over parts). */
static inline int
dem_halo(tg_op_kind kind)
{
	return tg_op_seams_of(kind) != TG_SEAMS_NONE ? 1 : 0;
}

/* Does op accumulate (tg_flow_accumulation, tg_hydrology)? */
static inline bool
accumulates(tg_op_kind kind)
{
	return tg_op_seams_of(kind) == TG_SEAMS_FLOW;
}

/* Does op route, keeping its surface between the phases? */
static inline bool
routes(tg_op_kind kind)
{
	return tg_op_seams_of(kind) >= TG_SEAMS_ROUTE;
}

/* The fewest rows a part may have. */
static inline int
min_rows(tg_op_kind kind)
{
	return routes(kind) ? 2 : 1;
}

/* Does op accumulate by a routing that splits the water (flow rounds instead of D8's link)? */
static inline bool
multiple_flow(const tg_op *op)
{
	return accumulates(op->kind) && op->flow.routing != TG_ROUTE_D8;
}

/* Does op fill the DEM first? */
static inline bool
op_fills(const tg_op *op)
{
	return op->kind == TG_OP_FILL || (routes(op->kind) && op->flow.fill);
}
static inline void *
keep_alloc(const tg_part *part, size_t size)
{
	return part->keep.alloc(size ? size : 1, part->keep.arg);
}

/* The routing surface's rows a part routes: its own with those of its neighbours around them. */
static inline void
routed_rows(const part_state *s, int *first, int *count)
{
	*first = s->index > 0 ? 0 : 2;
	*count = s->H + (s->index > 0 ? 2 : 0) + (s->index + 1 < s->count ? 2 : 0);
}

/* Own crossing cell c's distance p (0: towards the drains, 1: away from higher ground); 0: none reaches it. */
static inline int32_t
flat_dist(const part_state *s, int p, size_t c)
{
	return tg_seam_flats_dist(&s->flats, p, c);
}

/* A D8 routing's own rows (tg_part_route) as a routing of their own, pointing into it. */
static inline tg_route
own_rows_d8(const part_state *s, const tg_route *sub, size_t own)
{
	return (tg_route) {s->W, s->H, sub->routing, sub->z + own, sub->d8 + own, NULL};
}
/* The computed rows' first (the part's own first row) and their count (rows around included). */
static inline size_t
flow_own0(const part_state *s)
{
	return (size_t) s->flow_halo + 1;
}

static inline size_t
flow_rows(const part_state *s)
{
	return (size_t) s->H + 2 * flow_own0(s);
}

/* Has the part a neighbour on `side` (0: above, 1: below)? */
static inline bool
has_neighbour(const part_state *s, int side)
{
	return side == 0 ? s->index > 0 : s->index + 1 < s->count;
}

/* The flow's rows as a routing (its z tells cells from nodata). */
static inline tg_route
flow_route(const tg_op *op, const part_state *s)
{
	return (tg_route) {s->W, (int) flow_rows(s), op->flow.routing, s->flow_z, s->flow_d8, s->flow_frac};
}

/*
 * Row j of the part's own rows that the neighbour on `side` (0: above, 1:
 * below) computes too, nearest the boundary first; row flow_halo is the one
 * it takes in.
 */
static inline size_t
halo_row(const part_state *s, int side, int j)
{
	return side == 0 ? flow_own0(s) + j : flow_own0(s) + s->H - 1 - j;
}

/* Row j of the rows around the part on `side` that are the neighbour's, nearest the boundary first. */
static inline size_t
around_row(const part_state *s, int side, int j)
{
	return side == 0 ? flow_own0(s) - 1 - j : flow_own0(s) + s->H + j;
}

/* Part i's neighbour above (k - 1) or below (k + 1), or -1. */
static inline int
neighbour(const coordinator *c, int i, int side)
{
	int			k = 0;

	while (c->order[k] != i)
		k++;
	k += side == 0 ? -1 : 1;
	return k >= 0 && k < c->n ? c->order[k] : -1;
}

/* part_state.c */
tg_status	tg_part_read_halos(const tg_ctx *ctx, reader *r, const part_message *m, int halo, double **above,
						double **below, tg_error *err);
tg_status	tg_part_read(const tg_ctx *ctx, const tg_job *job, tg_grid_band *g, int row0, int nrows,
						int above, int below, double **z, tg_error *err);
tg_status	tg_part_read_with_halos(const tg_ctx *ctx, const tg_job *job, tg_grid_band *g,
						const double *above, const double *below, double **z, tg_error *err);

/* part_edges.c */
tg_status	tg_part_edges(const tg_ctx *ctx, const tg_op *op, const tg_job *job, tg_grid_band *g,
						tg_part_bytes *reply, tg_error *err);
tg_status	tg_parts_place(coordinator *c, tg_error *err);
tg_status	tg_parts_dem_rows(coordinator *c, tg_error *err);
void	tg_parts_put_dem_halos(writer *w, const coordinator *c, int i);

/* part_fill.c */
tg_status	tg_part_scan(const tg_ctx *ctx, const tg_op *op, const tg_job *job, reader *r,
						const part_message *m, tg_grid_band *g, tg_part_bytes *reply, tg_error *err);
tg_status	tg_part_surface(const tg_ctx *ctx, const tg_op *op, const tg_job *job, tg_part *part, reader *r,
						const part_message *m, tg_grid_band *g, tg_error *err);
tg_status	tg_part_surface_of(const tg_ctx *ctx, const tg_op *op, const tg_job *job, reader *r,
						const part_message *m, tg_grid_band *g, double **out, tg_error *err);
tg_status	tg_parts_solve_fill(coordinator *c, double **levels, tg_error *err);

/* part_flats.c */
tg_status	tg_part_flats(const tg_ctx *ctx, const tg_op *op, tg_part *part, reader *r, tg_error *err);
tg_status	tg_part_heights(const tg_ctx *ctx, const tg_op *op, tg_part *part, tg_error *err);
tg_status	tg_parts_put_flats(writer *w, const coordinator *c, int i, tg_error *err);
tg_status	tg_parts_put_heights(writer *w, const coordinator *c, tg_error *err);
tg_status	tg_part_read_heights(const tg_ctx *ctx, tg_part *part, reader *r, tg_error *err);

/* part_link.c */
tg_status	tg_part_finish_accumulation(const tg_ctx *ctx, const tg_op *op, tg_part *part, reader *r,
						double **acc, tg_error *err);
tg_status	tg_part_link(const tg_ctx *ctx, const tg_op *op, tg_part *part, reader *r, tg_error *err);
void	tg_parts_put_inflows(writer *w, const coordinator *c, int i, const tg_strip_inflow *in, size_t n);
tg_status	tg_part_route(const tg_ctx *ctx, const tg_op *op, const part_state *s, tg_route *sub,
						size_t *own, tg_error *err);
tg_status	tg_parts_solve_flow(const coordinator *c, tg_strip_inflow **inflows, size_t *ninflows,
						tg_error *err);

/* part_halo.c */
tg_status	tg_part_get_halo_routing(const tg_ctx *ctx, const tg_op *op, reader *sec, part_state *s,
						int side, tg_error *err);
void	tg_part_put_halo_routing(writer *w, const tg_op *op, const part_state *s, int side, uint8_t *taken);

/* part_flow.c */
bool	tg_parts_flow_idle(const coordinator *c, int i);
tg_status	tg_parts_flow_settled(const coordinator *c, const tg_part_bytes *replies, bool *settled,
						tg_error *err);
tg_status	tg_part_flow(const tg_ctx *ctx, const tg_op *op, tg_part *part, reader *r, tg_error *err);
tg_status	tg_parts_put_flow(writer *w, const coordinator *c, int i, tg_error *err);

/* part_finish.c */
tg_status	tg_part_finish(const tg_ctx *ctx, const tg_op *op, const tg_job *job, tg_part *part, reader *r,
						const part_message *m, tg_grid_band *g, tg_error *err);

#endif							/* TG_PART_STATE_H */
