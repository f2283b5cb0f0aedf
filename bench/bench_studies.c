/*
 * bench_studies.c — bench_core's studies beyond one operation's timing:
 * BMMQ-tree builds over tiles, the topological levels of a routing, the
 * drainage passes, viewsheds (with R3's agreement), and the host <-> device
 * copies.
 */
#include "bench_core.h"

#include <math.h>

int
bench_bmmq(const options *o, const tg_band *dem)
{
	const int	side = o->tile > 0 ? o->tile : (dem->width > dem->height ? dem->width : dem->height);
	const int	tx = (dem->width + side - 1) / side,
				ty = (dem->height + side - 1) / side;
	const int	nt = tx * ty;
	const int	pix = tg_pixtype_size(dem->pixtype);
	tg_band    *tiles = calloc(nt, sizeof *tiles);
	tg_bmmq_tree *trees[2] = {calloc(nt, sizeof(tg_bmmq_tree)), calloc(nt, sizeof(tg_bmmq_tree))};
	double		lo = INFINITY,
				hi = -INFINITY,
			   *bounds = calloc(o->nbins + 1, sizeof(double));
	int64_t		cells = (int64_t) dem->width * dem->height,
				nodes = 0;
	tg_device_info info;

	for (size_t i = 0; i < (size_t) cells; i++)
	{
		double		v = tg_band_get(dem, i);

		if (!tg_band_value_is_nodata(dem, v))
		{
			lo = v < lo ? v : lo;
			hi = v > hi ? v : hi;
		}
	}
	/* K bins over [lo, hi]: K - 1 inner boundaries, the top one just above hi */
	for (int k = 1; k < o->nbins; k++)
		bounds[k - 1] = lo + (hi - lo) * k / o->nbins;
	for (int t = 0; t < nt; t++)
	{
		int			x0 = (t % tx) * side,
					y0 = (t / tx) * side;
		int			w = dem->width - x0 < side ? dem->width - x0 : side;
		int			h = dem->height - y0 < side ? dem->height - y0 : side;
		uint8_t    *data = malloc((size_t) w * h * pix);

		for (int y = 0; y < h; y++)
			memcpy(data + (size_t) y * w * pix,
				   (const uint8_t *) dem->data + ((size_t) (y0 + y) * dem->width + x0) * pix,
				   (size_t) w * pix);
		tiles[t] = *dem;
		tiles[t].width = w;
		tiles[t].height = h;
		tiles[t].data = data;
	}

	printf("op=bmmq cells=%lld tiles=%d tile=%d nbins=%d", (long long) cells, nt, side, o->nbins);
	tg_device_query(0, &info);
	for (int be = 0; be < 2; be++)
	{
		tg_backend	backend = be == 0 ? TG_BACKEND_CPU : TG_BACKEND_GPU;
		double	   *w = calloc(o->reps, sizeof(double)),
				   *k = calloc(o->reps, sizeof(double)),
				   *tr = calloc(o->reps, sizeof(double));

		if ((be == 0 && !o->cpu) || (be == 1 && (!o->gpu || !info.available)))
			continue;
		for (int r = -1; r < o->reps; r++)
		{
			tg_ctx		ctx;
			tg_run_stats stats;
			tg_error	err;
			double		t0;

			tg_ctx_init(&ctx);
			for (int t = 0; t < nt; t++)
				tg_bmmq_tree_free(&ctx, &trees[be][t]);
			ctx.backend = backend;
			ctx.min_cells_for_gpu = 0;
			ctx.stats = &stats;
			tg_error_clear(&err);
			t0 = now_ms();
			if (tg_bmmq_build(&ctx, tiles, nt, bounds, o->nbins - 1, trees[be], &err) != TG_OK)
			{
				fprintf(stderr, "bmmq on %s failed: %s %s\n", tg_backend_name(backend), err.message,
						err.detail);
				return 1;
			}
			if (r >= 0)
			{
				w[r] = now_ms() - t0;
				k[r] = stats.kernel_ms;
				tr[r] = stats.transfer_ms;
			}
		}
		if (be == 0)
			printf(" cpu_ms=%.3f cpu_gcells=%.4f", median(w, o->reps), cells / median(w, o->reps) / 1e6);
		else
			printf(" gpu_ms=%.3f gpu_kernel_ms=%.4f gpu_transfer_ms=%.3f kernel_gcells=%.2f device=\"%s\"",
				   median(w, o->reps), median(k, o->reps), median(tr, o->reps),
				   cells / median(k, o->reps) / 1e6, info.name);
		free(w);
		free(k);
		free(tr);
	}
	for (int t = 0; t < nt; t++)
		nodes += trees[o->cpu ? 0 : 1][t].count;
	printf(" nodes=%lld nodes_per_cell=%.4f", (long long) nodes, (double) nodes / cells);
	if (o->cpu && o->gpu && info.available)
	{
		int64_t		differing = 0;

		for (int t = 0; t < nt; t++)
			differing += trees[0][t].count != trees[1][t].count ||
				memcmp(trees[0][t].nodes, trees[1][t].nodes,
					   trees[0][t].count * sizeof(tg_bmmq_node)) != 0;
		printf(" tiles_differing=%lld", (long long) differing);
	}
	printf("\n");
	/* save=FILE: every tree's nodes, tile after tile (CPU, else GPU) */
	if (o->save)
	{
		FILE	   *f = fopen(o->save, "wb");

		for (int t = 0; f && t < nt; t++)
		{
			const tg_bmmq_tree *tree = &trees[o->cpu ? 0 : 1][t];

			if (fwrite(tree->nodes, sizeof(tg_bmmq_node), tree->count, f) != (size_t) tree->count)
				break;
		}
		if (!f || ferror(f) || fclose(f) != 0)
		{
			fprintf(stderr, "cannot write %s\n", o->save);
			return 1;
		}
	}
	return 0;
}

/* Flats: 8-connected components of valid cells (those with a level) of equal filled height. */
typedef struct flat_index
{
	uint32_t	count;
	uint32_t   *label;			/* per cell (UINT32_MAX off the valid cells) */
	uint32_t   *cells;			/* per flat: its size */
	uint32_t   *first;			/* per flat: its cells are members[first[f] .. first[f + 1]) */
	uint32_t   *members;
} flat_index;

static void
flat_index_build(flat_index *fi, const tg_route *r, const int32_t *level, int W, int H)
{
	const size_t n = (size_t) W * H;
	uint32_t   *stack = malloc((n ? n : 1) * sizeof(uint32_t));
	uint32_t   *at;
	size_t		valid = 0;

	fi->count = 0;
	fi->label = malloc((n ? n : 1) * sizeof(uint32_t));
	fi->cells = malloc((n ? n : 1) * sizeof(uint32_t));
	for (size_t c = 0; c < n; c++)
		fi->label[c] = UINT32_MAX;
	/* depth-first search from each cell not labelled yet */
	for (size_t s0 = 0; s0 < n; s0++)
	{
		uint32_t	depth = 0;

		if (level[s0] < 0 || fi->label[s0] != UINT32_MAX)
			continue;
		fi->label[s0] = fi->count;
		fi->cells[fi->count] = 0;
		stack[depth++] = (uint32_t) s0;
		while (depth)
		{
			const size_t c = stack[--depth];

			fi->cells[fi->count]++;
			for (int k = 0; k < 8; k++)
			{
				const int	x = (int) (c % W) + tg_nbr_dx(k),
							y = (int) (c / W) + tg_nbr_dy(k);
				const size_t m = (size_t) y * W + x;

				if (x >= 0 && y >= 0 && x < W && y < H && level[m] >= 0 &&
					fi->label[m] == UINT32_MAX && r->z[m] == r->z[c])
				{
					fi->label[m] = fi->count;
					stack[depth++] = (uint32_t) m;
				}
			}
		}
		valid += fi->cells[fi->count];
		fi->count++;
	}
	/* members grouped by flat: a counting sort of the labels */
	fi->first = calloc((size_t) fi->count + 1, sizeof(uint32_t));
	fi->members = malloc((valid ? valid : 1) * sizeof(uint32_t));
	for (uint32_t f = 0; f < fi->count; f++)
		fi->first[f + 1] = fi->first[f] + fi->cells[f];
	at = stack;					/* reused: where each flat's next member goes */
	memcpy(at, fi->first, (size_t) fi->count * sizeof(uint32_t));
	for (size_t c = 0; c < n; c++)
		if (fi->label[c] != UINT32_MAX)
			fi->members[at[fi->label[c]]++] = (uint32_t) c;
	free(stack);
}

static void
flat_index_free(flat_index *fi)
{
	free(fi->label);
	free(fi->cells);
	free(fi->first);
	free(fi->members);
}

/*
 * The graph's depth were every flat of 2..limit cells one node (crossed in
 * one step): Kahn's rounds over the condensed graph.  A node is named by a
 * cell: a condensed flat by its first member, any other cell by itself.
 */
static uint32_t
condensed_depth(const flat_index *fi, const tg_route_view *v, const uint32_t *order, size_t count,
				uint32_t limit)
{
	const int	W = v->width,
				H = v->height;
	const size_t n = (size_t) W * H;
	uint32_t   *pending = malloc((n ? n : 1) * sizeof(uint32_t)); /* per node: donor edges from other nodes left */
	uint32_t   *frontier = malloc((count ? count : 1) * sizeof(uint32_t));
	uint32_t   *after = malloc((count ? count : 1) * sizeof(uint32_t));
	size_t		width = 0;
	uint32_t	depth = 0;

#define CONDENSED(c) (fi->cells[fi->label[c]] > 1 && fi->cells[fi->label[c]] <= limit)
#define NODE(c) (CONDENSED(c) ? fi->members[fi->first[fi->label[c]]] : (uint32_t) (c))
	for (size_t j = 0; j < count; j++)
		pending[order[j]] = 0;
	for (size_t j = 0; j < count; j++)
	{
		const size_t c = order[j];
		const uint32_t node = NODE(c);
		const unsigned donors = tg_route_donors(v, c);

		for (int k = 0; k < 8; k++)
			if ((donors >> k) & 1u &&
				NODE((size_t) ((int64_t) c + (int64_t) tg_nbr_dy(k) * W + tg_nbr_dx(k))) != node)
				pending[node]++;
	}
	for (size_t j = 0; j < count; j++)
		if (NODE(order[j]) == order[j] && pending[order[j]] == 0)
			frontier[width++] = order[j];
	while (width)
	{
		size_t		next = 0;

		depth++;
		for (size_t i = 0; i < width; i++)
		{
			const uint32_t node = frontier[i];
			const bool	flat_node = CONDENSED(node);
			const uint32_t from = flat_node ? fi->first[fi->label[node]] : 0,
						to = flat_node ? fi->first[fi->label[node] + 1] : 1;

			for (uint32_t m = from; m < to; m++)
			{
				const size_t c = flat_node ? fi->members[m] : node;

				for (int k = 0; k < 8; k++)
				{
					const int	x = (int) (c % W) + tg_nbr_dx(k),
								y = (int) (c / W) + tg_nbr_dy(k);
					uint32_t	to;

					if (x < 0 || y < 0 || x >= W || y >= H || !tg_route_drains_to(v, c, k))
						continue;
					to = NODE((size_t) y * W + x);
					if (to != node && --pending[to] == 0)
						after[next++] = to;
				}
			}
		}
		memcpy(frontier, after, next * sizeof(uint32_t));
		width = next;
	}
#undef NODE
#undef CONDENSED
	free(pending);
	free(frontier);
	free(after);
	return depth;
}

/*
 * The flow graph's depth, which bounds every dependency-driven accumulation:
 * levels (longest path in cells from a cell without donors), the share of
 * the cells in levels narrower than a GPU's resident threads (132 x 256 on
 * an H100), and what the cells of one longest path are like (donors,
 * receivers, steps between cells of equal filled height, i.e. across flats).
 * A second line: the flats that path crosses, the three it spends most
 * steps in, the two largest, and how many cells it would have if each flat
 * were one cell.  A third: the whole graph's depth with flats of up to 4,096
 * cells, then all flats, each made one node.  CPU routing only.
 */
int
bench_levels(const options *o, const tg_band *dem)
{
	const int	W = dem->width,
				H = dem->height;
	const size_t n = (size_t) W * H;
	const uint32_t resident = 132 * 256;
	tg_ctx		ctx;
	tg_route	r;
	tg_route_view v;
	tg_error	err;
	flat_index	fi;
	int32_t    *level = malloc((n ? n : 1) * sizeof(int32_t));
	uint32_t   *order = malloc((n ? n : 1) * sizeof(uint32_t));
	uint32_t   *level_start = malloc((n + 1) * sizeof(uint32_t));
	uint32_t	runs = 0,
				flat_runs = 0,
				run = 1,
				top[3][2] = {{0, 0}, {0, 0}, {0, 0}},	/* steps in a flat, its label */
				big[2] = {0, 0};	/* the two largest flats on the path, in cells */
	size_t		count = 0,
				narrow_cells = 0;
	int			levels = 0,
				narrow = 0,
				path = 0,
				one_donor = 0,
				one_receiver = 0,
				flat_steps = 0;

	tg_ctx_init(&ctx);
	ctx.backend = TG_BACKEND_CPU;
	ctx.threads = o->threads;
	if (tg_cpu_route_build(&ctx, dem, &o->flow, &r, &err) != TG_OK ||
		tg_cpu_route_levels(&ctx, &r, order, &count, level_start, &levels, &err) != TG_OK)
	{
		fprintf(stderr, "levels failed: %s %s\n", err.message, err.detail);
		return 1;
	}
	v = tg_cpu_route_view(&r, o->flow.threshold);
	for (size_t c = 0; c < n; c++)
		level[c] = -1;
	for (int l = 0; l < levels; l++)
	{
		for (uint32_t j = level_start[l]; j < level_start[l + 1]; j++)
			level[order[j]] = l;
		if (level_start[l + 1] - level_start[l] < resident)
		{
			narrow++;
			narrow_cells += level_start[l + 1] - level_start[l];
		}
	}
	flat_index_build(&fi, &r, level, W, H);
	/* one longest path, walked back from its end (the order's last cell) through donors one level up */
	for (size_t c = count ? order[count - 1] : 0; count;)
	{
		const unsigned donors = tg_route_donors(&v, c);
		const uint32_t f = fi.label[c];
		size_t		prev = n;
		int			receivers = 0;

		for (int k = 0; k < 8; k++)
		{
			const int	x = (int) (c % W) + tg_nbr_dx(k),
						y = (int) (c / W) + tg_nbr_dy(k);

			if (x < 0 || y < 0 || x >= W || y >= H)
				continue;
			receivers += tg_route_drains_to(&v, c, k);
			if (prev == n && (donors >> k & 1u) && level[(size_t) y * W + x] == level[c] - 1)
				prev = (size_t) y * W + x;
		}
		path++;
		one_donor += __builtin_popcount(donors) == 1;
		one_receiver += receivers == 1;
		if (prev == n || fi.label[prev] != f)
		{
			/* a run of the path in one flat ends: keep the three longest and the two largest flats */
			for (int t = 0; t < 3; t++)
				if (run - 1 > top[t][0])
				{
					for (int u = 2; u > t; u--)
					{
						top[u][0] = top[u - 1][0];
						top[u][1] = top[u - 1][1];
					}
					top[t][0] = run - 1;
					top[t][1] = f;
					break;
				}
			if (fi.cells[f] > big[0])
			{
				big[1] = big[0];
				big[0] = fi.cells[f];
			}
			else if (fi.cells[f] > big[1])
				big[1] = fi.cells[f];
			runs++;
			flat_runs += run > 1;
			run = 1;
		}
		else
			run++;
		if (prev == n)
			break;
		flat_steps += r.z[prev] == r.z[c];
		c = prev;
	}
	printf("op=levels cells=%zu valid=%zu levels=%d levels_under_%u_cells=%d holding_cells=%zu "
		   "path_one_donor_pct=%.1f path_one_receiver_pct=%.1f path_flat_steps_pct=%.1f\n",
		   n, count, levels, resident, narrow, narrow_cells,
		   path ? 100.0 * one_donor / path : 0.0, path ? 100.0 * one_receiver / path : 0.0,
		   path > 1 ? 100.0 * flat_steps / (path - 1) : 0.0);
	printf("op=levels path_cells=%d path_flats=%u path_cells_if_each_flat_were_one=%u", path, flat_runs, runs);
	for (int t = 0; t < 3 && top[t][0]; t++)
		printf(" flat%d_steps=%u flat%d_cells=%u", t + 1, top[t][0], t + 1, fi.cells[top[t][1]]);
	printf(" largest_cells=%u second_largest_cells=%u\n", big[0], big[1]);
	printf("op=levels levels_if_flats_up_to_4096_cells_were_one=%u levels_if_all_flats_were_one=%u\n",
		   condensed_depth(&fi, &v, order, count, 4096), condensed_depth(&fi, &v, order, count, UINT32_MAX));
	flat_index_free(&fi);
	free(level);
	free(order);
	free(level_start);
	tg_route_free(&ctx, &r);
	return 0;
}

/*
 * Viewshed: R2 on the CPU and the GPU (timed, compared cell by cell) and,
 * with r3=1, R2's agreement with the exact R3 on the valid cells in range.
 */
/*
 * op=drainage: the device's drainage passes alone (cuda/drainage.cu) on the
 * D8 receivers and stream cells (accumulation >= threshold cells) of the
 * filled DEM, against the tiled D8 accumulation's device time on the same
 * DEM, and their outputs against the CPU's full calls.
 */
int
bench_drainage(const options *o, const tg_band *dem)
{
	const int	W = dem->width,
				H = dem->height;
	const size_t n = (size_t) W * H;
	double	   *acc = malloc(n * sizeof(double)),
			   *surface = malloc(n * sizeof(double));
	uint16_t   *receivers = malloc(n * sizeof(uint16_t));
	uint8_t    *down = malloc(n),
			   *stream = malloc(n);
	uint32_t   *gpu = malloc(n * sizeof(uint32_t)),
			   *cpu = malloc(n * sizeof(uint32_t));
	double		kernel[2][16],
				transfer[2][16],
				wall[2][16];
	const int	reps = o->reps < 16 ? o->reps : 16;
	size_t		streams = 0,
				ends = 0;
	tg_flow_params flow = o->flow;
	tg_flow_products pr = {acc, surface, TG_PT_64BF, NAN, receivers, NULL};
	tg_ctx		ctx;
	tg_run_stats stats;
	tg_error	err;

	flow.routing = TG_ROUTE_D8;
	flow.fill = true;
	tg_ctx_init(&ctx);
	ctx.threads = o->threads;
	tg_error_clear(&err);
	if (tg_hydrology(&ctx, dem, NULL, &flow, TG_ACC_AUTO, TG_UNITS_CELLS, &pr, &err) != TG_OK)
	{
		fprintf(stderr, "chain failed: %s\n", err.message);
		return 1;
	}
	for (size_t i = 0; i < n; i++)
	{
		down[i] = receivers[i] == TG_NODATA_RECEIVERS ? TG_DOWN_NODATA
			: receivers[i] == 0 ? TG_NO_DIRECTION : (uint8_t) __builtin_ctz(receivers[i]);
		stream[i] = down[i] != TG_DOWN_NODATA && acc[i] >= o->threshold;
		streams += stream[i];
		ends += down[i] == TG_NO_DIRECTION;
	}
	printf("cells=%zu stream_cells=%zu ends=%zu threshold=%g", n, streams, ends, o->threshold);

	/* the D8 accumulation's own device time (auto: the tiled strategy), routing excluded */
	ctx.backend = TG_BACKEND_GPU;
	ctx.stats = &stats;
	for (int r = -1; r < reps; r++)
	{
		if (tg_flow_accumulation(&ctx, dem, NULL, &flow, TG_ACC_AUTO, TG_UNITS_CELLS, acc, &err) != TG_OK)
		{
			fprintf(stderr, "GPU accumulation failed: %s\n", err.message);
			return 1;
		}
		if (r >= 0)
			kernel[0][r] = stats.kernel_ms - stats.prep_ms;
	}
	printf(" d8_accumulation_kernel_ms=%.3f", median(kernel[0], reps));

	for (int pass = 0; pass < 2; pass++)
	{
		for (int r = -1; r < reps; r++)
		{
			tg_ctx		call;
			tg_status	st;
			double		t0 = now_ms();

			memset(&stats, 0, sizeof stats);
			tg_call_open(&ctx, &call);
			st = pass == 0 ? tg_cuda_stream_order(&call, W, H, down, stream, false, gpu, &err)
				: tg_cuda_drainage_labels(&call, W, H, down, NULL, gpu, &err);
			tg_cuda_release();
			tg_call_close(&call);
			if (st != TG_OK)
			{
				fprintf(stderr, "GPU pass %d failed: %s\n", pass, err.message);
				return 1;
			}
			if (r >= 0)
			{
				kernel[pass][r] = stats.kernel_ms;
				transfer[pass][r] = stats.transfer_ms;
				wall[pass][r] = now_ms() - t0;
			}
		}
		printf(" %s_kernel_ms=%.3f %s_transfer_ms=%.3f %s_wall_ms=%.3f", pass ? "basins" : "strahler",
			   median(kernel[pass], reps), pass ? "basins" : "strahler", median(transfer[pass], reps),
			   pass ? "basins" : "strahler", median(wall[pass], reps));

		/* the CPU's full call on the same DEM gives the same integers */
		ctx.backend = TG_BACKEND_CPU;
		ctx.stats = NULL;
		{
			tg_basin_params bp;
			tg_status	st;

			memset(&bp, 0, sizeof bp);
			bp.drainage.flow = flow;
			bp.drainage.threshold = o->threshold;
			st = pass == 0 ? tg_stream_order(&ctx, dem, &bp.drainage, cpu, &err) : tg_basins(&ctx, dem, &bp, cpu, &err);
			if (st != TG_OK)
			{
				fprintf(stderr, "CPU pass %d failed: %s\n", pass, err.message);
				return 1;
			}
		}
		{
			size_t		differ = 0;

			for (size_t i = 0; i < n; i++)
				differ += gpu[i] != cpu[i];
			printf(" %s_cells_differing=%zu", pass ? "basins" : "strahler", differ);
		}
		ctx.backend = TG_BACKEND_GPU;
		ctx.stats = &stats;
	}
	printf("\n");
	free(acc);
	free(surface);
	free(receivers);
	free(down);
	free(stream);
	free(gpu);
	free(cpu);
	return 0;
}

int
bench_viewshed(const options *o, const tg_band *dem)
{
	const size_t n = (size_t) dem->width * dem->height;
	tg_viewshed_params p;
	float	   *out[3] = {malloc(n * sizeof(float)), malloc(n * sizeof(float)), malloc(n * sizeof(float))};
	bool		have[3] = {false, false, false};
	tg_device_info info;
	size_t		visible = 0,
				decided = 0;

	memset(&p, 0, sizeof p);
	p.observer_col = o->obs_col >= 0 ? o->obs_col : dem->width / 2;
	p.observer_row = o->obs_row >= 0 ? o->obs_row : dem->height / 2;
	/* an observer on nodata (sea) moves to the nearest valid cell of its row */
	for (int step = 0; step < dem->width; step++)
	{
		int			c = p.observer_col + ((step & 1) ? -(step + 1) / 2 : step / 2);

		if (c >= 0 && c < dem->width &&
			!tg_band_value_is_nodata(dem, tg_band_get(dem, (size_t) p.observer_row * dem->width + c)))
		{
			p.observer_col = c;
			break;
		}
	}
	p.observer_height = o->obs_h;
	p.max_distance = o->maxdist;
	p.earth_radius = 6370997;
	p.refraction = 0.14286;
	p.cell_x = o->flow.geom.cell_x;
	p.cell_y = o->flow.geom.cell_y;
	if (o->flow.geom.geographic)
		tg_row_spacing(&o->flow.geom, p.observer_row, &p.cell_x, &p.cell_y);
	printf("op=viewshed cells=%zu observer=%d,%d obs_h=%g maxdist=%g", n, p.observer_col,
		   p.observer_row, p.observer_height, p.max_distance);
	tg_device_query(0, &info);
	for (int be = 0; be < 3; be++)
	{
		double	   *w = calloc(o->reps, sizeof(double)),
				   *k = calloc(o->reps, sizeof(double));
		int			reps = be == 2 ? 1 : o->reps;

		if ((be == 0 && !o->cpu) || (be == 1 && (!o->gpu || !info.available)) || (be == 2 && !o->r3))
			continue;
		p.algorithm = be == 2 ? TG_VIEW_R3 : TG_VIEW_R2;
		for (int r = be == 1 ? -1 : 0; r < reps; r++)
		{
			tg_ctx		ctx;
			tg_run_stats stats;
			tg_error	err;
			double		t0;

			tg_ctx_init(&ctx);
			ctx.backend = be == 1 ? TG_BACKEND_GPU : TG_BACKEND_CPU;
			ctx.threads = o->threads;
			ctx.device_memory_limit = o->mem_mb << 20;
			ctx.stats = &stats;
			tg_error_clear(&err);
			t0 = now_ms();
			if (tg_viewshed(&ctx, dem, &p, out[be], &err) != TG_OK)
			{
				fprintf(stderr, "viewshed failed: %s %s\n", err.message, err.detail);
				return 1;
			}
			if (r >= 0)
			{
				w[r] = now_ms() - t0;
				k[r] = stats.kernel_ms;
			}
		}
		have[be] = true;
		if (be == 0)
			printf(" cpu_ms=%.3f cpu_gcells=%.4f", median(w, reps), n / median(w, reps) / 1e6);
		else if (be == 1)
			printf(" gpu_ms=%.3f gpu_kernel_ms=%.4f kernel_gcells=%.2f gpu_mem_mb=%zu device=\"%s\"",
				   median(w, reps), median(k, reps), n / median(k, reps) / 1e6, o->mem_mb, info.name);
		else
			printf(" r3_ms=%.1f", w[0]);
		free(w);
		free(k);
	}
	{
		const float *r2 = have[0] ? out[0] : out[1];

		for (size_t i = 0; i < n; i++)
			if (!isnan(r2[i]))
			{
				decided++;
				visible += r2[i] == 1.0f;
			}
		printf(" decided=%zu visible=%zu", decided, visible);
		if (have[0] && have[1])
		{
			size_t		differ = 0;

			for (size_t i = 0; i < n; i++)
				differ += !(out[0][i] == out[1][i] || (isnan(out[0][i]) && isnan(out[1][i])));
			printf(" gpu_cpu_cells_differing=%zu", differ);
		}
		if (have[2])
		{
			size_t		agree = 0,
						total = 0;

			for (size_t i = 0; i < n; i++)
				if (!isnan(out[2][i]))
				{
					total++;
					agree += out[2][i] == r2[i];
				}
			printf(" r3_cells=%zu r2_r3_agreement=%.3f%%", total, 100.0 * agree / total);
		}
	}
	printf("\n");
	/* save=FILE: R2 (CPU, else GPU) as floats; FILE.r3 the exact R3 */
	for (int be = 0; o->save && be < 3; be += 2)
	{
		const float *v = be == 0 ? (have[0] ? out[0] : out[1]) : out[2];
		char		path[1024];
		FILE	   *f;

		if (be == 2 && !have[2])
			break;
		snprintf(path, sizeof path, "%s%s", o->save, be == 2 ? ".r3" : "");
		f = fopen(path, "wb");
		if (!f || fwrite(v, sizeof(float), n, f) != n)
		{
			fprintf(stderr, "cannot write %s\n", path);
			return 1;
		}
		fclose(f);
	}
	return 0;
}

/* bench_core copies MB [threads=N] */
int
bench_copies(int argc, char **argv)
{
	size_t		bytes = (size_t) atol(argv[2]) << 20;
	tg_ctx		ctx,
				call;
	tg_error	err;
	tg_copy_rates r;
	tg_status	st;

	tg_ctx_init(&ctx);
	for (int i = 3; i < argc; i++)
		if (strncmp(argv[i], "threads=", 8) == 0)
			ctx.threads = atoi(argv[i] + 8);
	tg_error_clear(&err);
	st = tg_cuda_probe(0, NULL, &err);
	if (st == TG_OK)
	{
		tg_call_open(&ctx, &call);
		st = tg_cuda_copy_rates(&call, bytes, &r, &err);
		tg_call_close(&call);
	}
	if (st != TG_OK)
	{
		fprintf(stderr, "copies: %s\n", err.message);
		return 1;
	}
	printf("op=copies mb=%zu threads=%d pinned_up_gbs=%.2f pinned_down_gbs=%.2f staged_up_gbs=%.2f "
		   "staged_down_gbs=%.2f staged_down_fresh_gbs=%.2f staged_down_fresh_small_gbs=%.2f host_memcpy_gbs=%.2f\n",
		   bytes >> 20, tg_threads_wanted(&ctx), r.pinned_up_gbs, r.pinned_down_gbs, r.staged_up_gbs,
		   r.staged_down_gbs, r.staged_down_fresh_gbs, r.staged_down_fresh_small_gbs, r.host_memcpy_gbs);
	return 0;
}

/*
 * The flats that cross strip boundaries (scale/seams/): the DEM filled in
 * memory, cut into strips of strip_rows rows, each scanned for its crossing
 * flats (with the two rows of halo a reader hands over), then the walk over
 * all of them; the scans' and the walk's times and the crossing cells.
 * check=1: every strip's D8 directions against the whole grid's.
 */
int
bench_seams(const options *o, const tg_band *dem)
{
	const int	W = dem->width,
				H = dem->height,
				R = o->strip_rows > 0 ? o->strip_rows : 256;
	const size_t n = (size_t) W * H;
	double	   *z = malloc(n * sizeof(double));
	double	   *scan_ms = malloc(sizeof(double) * (o->reps > 0 ? o->reps : 1)),
			   *solve_ms = malloc(sizeof(double) * (o->reps > 0 ? o->reps : 1));
	uint8_t    *ref = o->check ? malloc(n) : NULL,
			   *got = o->check ? malloc(n) : NULL;
	tg_fill_params fp = {TG_FILL_PRIORITY_FLOOD, 0, TG_PT_64BF};
	tg_flow_params p = o->flow;
	tg_ctx		ctx;
	tg_error	err;
	size_t		crossing = 0,
				differ = 0;
	double		t0;

	tg_ctx_init(&ctx);
	ctx.backend = TG_BACKEND_CPU;
	ctx.threads = o->threads;
	tg_error_clear(&err);
	p.routing = TG_ROUTE_D8;
	p.fill = false;				/* the surface is filled already */
	t0 = now_ms();
	if (tg_fill(&ctx, dem, &fp, NAN, z, &err) != TG_OK)
	{
		fprintf(stderr, "fill failed: %s\n", err.message);
		return 1;
	}
	printf("op=seams cells=%zu strip_rows=%d strips=%d fill_ms=%.1f", n, R, (H + R - 1) / R, now_ms() - t0);
	for (int rep = 0; rep < (o->reps > 0 ? o->reps : 1); rep++)
	{
		tg_route_strips *rb = NULL;
		tg_status	st = tg_route_strips_begin(&ctx, &p, TG_UNITS_CELLS, &rb, &err);

		t0 = now_ms();
		for (int r0 = 0; st == TG_OK && r0 < H; r0 += R)
			st = tg_route_strips_scan(&ctx, rb, r0, r0 + R < H ? R : H - r0, z + (size_t) (r0 >= 2 ? r0 - 2 : 0) * W,
									  &err);
		scan_ms[rep] = now_ms() - t0;
		t0 = now_ms();
		if (st == TG_OK)
			st = tg_route_strips_solve_flats(&ctx, rb, &err);
		solve_ms[rep] = now_ms() - t0;
		crossing = st == TG_OK ? tg_route_strips_flat_cells(rb) : 0;
		if (st == TG_OK && o->check && rep == 0)
			for (int r0 = 0; st == TG_OK && r0 < H; r0 += R)
				st = tg_route_strips_directions(&ctx, rb, r0, r0 + R < H ? R : H - r0,
												z + (size_t) (r0 >= 2 ? r0 - 2 : 0) * W, got + (size_t) r0 * W,
												NULL, &err);
		tg_route_strips_end(&ctx, rb);
		if (st != TG_OK)
		{
			fprintf(stderr, "\nseams failed: %s\n", err.message);
			return 1;
		}
	}
	if (o->check)
	{
		tg_band		surface = {TG_PT_64BF, false, false, false, 0, W, H, z};

		if (tg_flow_direction(&ctx, &surface, &p, ref, NULL, &err) != TG_OK)
		{
			fprintf(stderr, "\nreference directions failed: %s\n", err.message);
			return 1;
		}
		for (size_t i = 0; i < n; i++)
			differ += ref[i] != got[i];
		printf(" directions_differing=%zu", differ);
	}
	printf(" crossing_cells=%zu scan_ms=%.1f solve_ms=%.1f threads=%d\n", crossing,
		   median(scan_ms, o->reps > 0 ? o->reps : 1), median(solve_ms, o->reps > 0 ? o->reps : 1),
		   tg_threads_wanted(&ctx));
	free(z);
	free(scan_ms);
	free(solve_ms);
	free(ref);
	free(got);
	return differ != 0;
}
