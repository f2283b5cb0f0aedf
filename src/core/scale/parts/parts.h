/*
 * parts.h — a coverage partitioned by rows of tiles over several servers
 * (scale/parts/): every server computes on the part it holds, the
 * coordinator stitches what crosses part boundaries, and only that crosses
 * the network.  The result equals the single-grid run cell for cell.  Each
 * exchange's sending and receiving sides live in one file: part_edges.c,
 * part_fill.c, part_flats.c, part_link.c, part_halo.c and part_flow.c; a
 * part's run in part_run.c and its last phase in part_finish.c; the
 * coordinator's step in part_coordinator.c; the messages' byte strings in
 * part_wire.h.
 *
 *   slope         edges (each part's first and last rows); finish (each part
 *                 with the rows around it).
 *   fill          edges; scan: each part flooded from its own outlets and its
 *                 first and last rows (Barnes 2016, scale/seams/), its label
 *                 edges handed over and solved where they meet; finish: each
 *                 part flooded again and raised to its labels' levels.
 *   D8            [edges, scan for the fill]; surface: each part keeps its
 *   accumulation  routing surface and hands over its first and last two
 *                 rows; flats: flats that cross part boundaries get their
 *                 breadth-first distances (Barnes et al. 2014) in rounds, each
 *                 part relaxing its own cells from the values its neighbours
 *                 hold along the boundary, until no boundary value changes;
 *                 heights: each such flat's greatest distance from higher
 *                 ground; link: each part routed with those masks and
 *                 accumulated alone, its exits and the exits its edge rows
 *                 drain by handed over (Barnes 2017, scale/seams/) and
 *                 solved where they meet; finish: the water entering each
 *                 part added to its link's accumulation, the cells
 *                 downstream of where it enters pulled again (the values of
 *                 the part accumulated again with it).
 *   multiple-flow as D8 up to the heights; flow: each part routed with the
 *   accumulation  masks; its rows next to each neighbour's (the halo,
 *                 tg_part_flow_halo of them, and one more) handed over once,
 *                 as the surface's rows the neighbour lacks to route them
 *                 itself and the routing of their cells on flats; then each
 *                 part sums its rows with the halos around them and, around
 *                 those, the row taken in, whose cells hold the value its
 *                 neighbour hands over once it is final.  A cell is pulled
 *                 once every donor's value is final (Kahn's order over the
 *                 cells downstream of a row taken in), from its donors in
 *                 neighbour order as the single grid pulls it, so its value
 *                 is the single grid's bit for bit; each value crosses once,
 *                 in the round it becomes final; rounds until none does.
 *                 Water may cross a boundary several times, so a split
 *                 cannot be solved at once as D8's exits are: a round
 *                 settles water that leaves a part's halo and comes back;
 *                 water that zigzags across a boundary within the halos
 *                 costs no rounds.
 *   tg_hydrology  as the accumulation of its routing; the finish also writes
 *                 the part's routing surface and receivers (of the routing
 *                 the part kept).
 *
 * A part runs a phase as tg_run with job->part set: the coordinator's
 * message in, the reply out, and what it keeps between phases in
 * part->state (allocated with part->keep).  The coordinator
 * (tg_parts_step) keeps its own state between phases as bytes too.
 * Messages and replies are byte strings in part_wire.h's format, read
 * with every length checked.
 */
#ifndef TG_PARTS_H
#define TG_PARTS_H

#include "scale/seams/seams.h"

/* One part's phase of a partitioned coverage (part_run.c): job->part set. */
tg_status	tg_run_part(const tg_ctx *ctx, const tg_op *op, const tg_job *job, tg_error *err);

/*
 * Rows of each neighbour's that a part computes too in the multiple-flow
 * rounds (fewer where a part is shorter; the tests change it).
 */
extern int	tg_part_flow_halo;

#endif							/* TG_PARTS_H */
