/*
 * fill.h — depression filling on the CPU (hydro/fill/): the fill of a grid
 * in memory (fill_cpu.c: tg_fill's CPU side), and the priority-flood of a
 * region of rows with the label graph in which the floods of strips or
 * parts meet (fill_flood.c; scale/seams/ runs them beyond memory).
 * Internal to the core.
 *
 * A region of rows is flooded inwards from its seeds: its outlets (valid
 * cells on the grid's edge or next to nodata) and, for a strip of a larger
 * grid (Barnes 2016), its top and bottom rows, each seeded cell with a label
 * of its own.  The flood gives every valid cell lf, the lowest possible
 * highest elevation on a path from it to a seed (the filled DEM when the
 * seeds are the outlets alone), and with labels the seed that path reaches;
 * where two labels meet, the height at which water crosses between them
 * goes to a label graph, whose solution (minimax distance of every label to
 * label 0, the outlets) completes the fill:  W = max(lf, level(label)).
 */
#ifndef TG_FILL_H
#define TG_FILL_H

#include "hydro/hydro.h"

/* tg_fill's CPU side. */
tg_status	tg_cpu_fill(const tg_ctx *ctx, const tg_band *dem, const tg_fill_params *params,
						double out_nodata, void *out, tg_error *err);
/* A valid cell on the edge or next to a nodata cell (z: NaN = nodata): water leaves here. */
bool		tg_cpu_is_outlet(const double *z, int W, int H, int x, int y);

/* Label pairs and the lowest height at which water crosses between them. */
typedef struct tg_label_graph tg_label_graph;

typedef struct tg_flood
{
	int			width;
	int			nrows;
	const double *z;			/* nrows * width, NaN = nodata */
	bool		above;			/* z[-width .. -1] is the row above, else the grid's top edge */
	bool		below;			/* z[nrows * width ..] is the row below, else the bottom edge */
	double	   *lf;				/* out: nrows * width (NaN where z is) */
	/* A strip of a larger grid: labels for its cells, seeds in its top and
	 * bottom rows (labels top_base + x and bottom_base + x; the row is not
	 * seeded where its base is 0), edges where labels meet (graph NULL: not
	 * recorded).  All NULL / 0 for a plain fill. */
	uint32_t   *label;
	uint32_t	top_base;
	uint32_t	bottom_base;
	tg_label_graph *graph;
} tg_flood;

tg_status	tg_flood_run(const tg_ctx *ctx, const tg_flood *f, tg_error *err);

tg_status	tg_label_graph_create(const tg_ctx *ctx, tg_label_graph **g, tg_error *err);
/*
 * A graph of pairs already unique (a strip's edges, exported from its own
 * graph): each add appends, a repeated pair is kept as another edge (the
 * solve takes the lower), and nothing is looked up.
 */
tg_status	tg_label_graph_create_list(const tg_ctx *ctx, tg_label_graph **g, tg_error *err);
void		tg_label_graph_free(const tg_ctx *ctx, tg_label_graph *g);
tg_status	tg_label_graph_add(const tg_ctx *ctx, tg_label_graph *g, uint32_t a, uint32_t b,
							   double height, tg_error *err);

/*
 * Where the facing rows of two strips meet: `upper_labels`/`upper_z` are the
 * last row of the strip above, `lower_labels`/`lower_z` the first row of the
 * strip below; water crosses at the higher of two adjacent valid cells.
 * meet() is told each such pair (the lower cell's label first); its error
 * stops the walk.
 */
typedef tg_status (*tg_label_meet_fn) (void *arg, uint32_t lower, uint32_t upper, double height, tg_error *err);
tg_status	tg_label_rows_meet(int width, const uint32_t *upper_labels, const double *upper_z,
							   const uint32_t *lower_labels, const double *lower_z, tg_label_meet_fn meet,
							   void *arg, tg_error *err);

/* The same pairs as edges of the graph. */
tg_status	tg_label_graph_join_rows(const tg_ctx *ctx, tg_label_graph *g, int width,
									 const uint32_t *upper_labels, const double *upper_z,
									 const uint32_t *lower_labels, const double *lower_z,
									 tg_error *err);

/*
 * level[0 .. nlabels) (allocated with ctx): minimax distance of each label
 * to label 0 over the edges of all the graphs.
 */
tg_status	tg_label_graph_solve(const tg_ctx *ctx, tg_label_graph *const *graphs, int ngraphs,
								 size_t nlabels, double **level, tg_error *err);
size_t		tg_label_graph_edges(const tg_label_graph *g);
/* Its tg_label_graph_edges() edges into a, b, height (in no particular order). */
void		tg_label_graph_export(const tg_label_graph *g, uint32_t *a, uint32_t *b, double *height);

#endif							/* TG_FILL_H */
