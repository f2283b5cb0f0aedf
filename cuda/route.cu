/*
 * route.cu — the routing of every cell on the GPU, as hydro/route/ computes it:
 * the (filled) surface, D8 receivers and multiple-flow shares from its
 * gradients, and flats drained by Barnes, Lehman & Mulla (2014)'s combined
 * gradient.  The breadth-first distances towards lower and away from higher
 * terrain are the minimal fixed points of d(c) <- min(d(c), d(n) + 1) over
 * neighbouring flat cells, so hydro.cuh's tiled relaxation computes exactly
 * what the CPU's queues do (the two distances together, packed); the flats
 * themselves are labelled by union-find.
 */
#include <thrust/binary_search.h>
#include <thrust/execution_policy.h>

#include "hydro.cuh"
#include "route.cuh"

namespace
{
constexpr int32_t FAR = 1 << 30;		/* "not reached" distance */
constexpr uint32_t NO_LABEL = 0xFFFFFFFFu;

/*
 * Both breadth-first distances over flat cells at once, d <- min(d, d(n) + 1)
 * for each: towards lower terrain in the high 32 bits, away from higher in the
 * low 32.  Each half only decreases, so the packed value decreases exactly
 * when a half does, as the relaxation requires.
 */
__device__ __forceinline__ uint64_t
pack(int32_t towards, int32_t away)
{
	return ((uint64_t) (uint32_t) towards << 32) | (uint32_t) away;
}

struct distances_op
{
	using value_t = uint64_t;
	const uint8_t *flat;

	__device__ uint64_t outside() const
	{
		return pack(FAR, FAR);
	}
	__device__ bool updatable(size_t i) const
	{
		return flat[i] != 0;
	}
	__device__ uint64_t relax(size_t, uint64_t cur, const uint64_t nb[8]) const
	{
		int32_t		t = (int32_t) (cur >> 32),
					a = (int32_t) (uint32_t) cur;

#pragma unroll
		for (int k = 0; k < 8; k++)
		{
			int32_t		nt = (int32_t) (nb[k] >> 32),
						na = (int32_t) (uint32_t) nb[k];

			if (nt < FAR && nt + 1 < t)
				t = nt + 1;
			if (na < FAR && na + 1 < a)
				a = na + 1;
		}
		return pack(t, a);
	}
};

}								/* namespace */

/*
 * Flat labels: the smallest cell index of each flat (8-connected flat cells),
 * by lock-free union-find (as Playne & Hawick 2018 label components).
 * Relaxing labels tile by tile would need as many rounds as a flat is wide
 * (an ocean plateau: thousands of cells); a union links the larger root
 * under the smaller, so parents only point at smaller indices, the root of a
 * component is its smallest index, and every cell needs one merge pass and
 * one find.  Finds do not compress paths: with compression during the merge
 * (plain stores racing with the links), a few flats of the 57.6 M-cell SRTM
 * DEM came out split into two labels in about one run in three, so their
 * directions changed from run to run.
 */
namespace
{
__device__ __forceinline__ uint32_t
flat_root(const uint32_t *parent, uint32_t x)
{
	uint32_t	p;

	while ((p = parent[x]) != x)
		x = p;
	return x;
}

__device__ void
flat_union(uint32_t *parent, uint32_t a, uint32_t b)
{
	for (;;)
	{
		uint32_t	old;

		a = flat_root(parent, a);
		b = flat_root(parent, b);
		if (a == b)
			return;
		if (a < b)
		{
			uint32_t	t = a;

			a = b;
			b = t;
		}
		/* link root a under b, unless another thread linked a meanwhile */
		old = atomicMin(&parent[a], b);
		if (old == a)
			return;
		a = old;				/* a had been linked to old: merge old and b */
	}
}

}								/* namespace */

/*
 * Merge each flat cell with the flat neighbours it is not already joined to
 * through another cell's merge: with the north neighbour flat, that one
 * alone (its own merges take in north-west and north-east; west joins it
 * through west's north-east); otherwise west, else north-west, and
 * north-east.  Flat cells are never in the first or last column; the
 * first row's cells have no north (a strip's own rows: flats are joined
 * within them only).
 */
__global__ void
tgk_flat_merge(const uint8_t *__restrict__ flat, int W, int H, uint32_t *parent)
{
	TG_GRID_STRIDE(i, (size_t) W * H)
	{
		if (!flat[i])
			continue;
		const bool	north = i >= (size_t) W;
		const size_t up = i - (size_t) W;

		if (north && flat[up])
			flat_union(parent, (uint32_t) i, (uint32_t) up);
		else
		{
			if (flat[i - 1])
				flat_union(parent, (uint32_t) i, (uint32_t) (i - 1));
			else if (north && flat[up - 1])
				flat_union(parent, (uint32_t) i, (uint32_t) (up - 1));
			if (north && flat[up + 1])
				flat_union(parent, (uint32_t) i, (uint32_t) (up + 1));
		}
	}
}

/* Every flat cell's label becomes its root. */
__global__ void
tgk_flat_resolve(const uint8_t *__restrict__ flat, size_t n, uint32_t *label)
{
	TG_GRID_STRIDE(i, n)
	{
		if (flat[i])
			label[i] = flat_root(label, (uint32_t) i);
	}
}

namespace
{
/* Receivers and shares from the surface's gradients; flags the flat cells. */
template <typename V>
__global__ void
tgk_gradients(const V *__restrict__ z, const uint8_t *__restrict__ kind, int W, int H,
			  const double *__restrict__ row_dist, tg_routing routing, double exponent,
			  uint8_t *__restrict__ d8, float *__restrict__ frac, uint8_t *__restrict__ flat)
{
	const size_t n = (size_t) W * H;

	TG_GRID_STRIDE(i, n)
	{
		const int	x = (int) (i % W),
					y = (int) (i / W);
		double		g[8],
					drop[8];
		bool		lower = false;

		d8[i] = TG_NO_DIRECTION;
		flat[i] = 0;
		if (frac)
			for (int k = 0; k < 8; k++)
				frac[(size_t) k * n + i] = 0.0f;
		if (kind[i] == KIND_NODATA)
			continue;
		for (int k = 0; k < 8; k++)
		{
			int			nx = x + tg_nbr_dx(k),
						ny = y + tg_nbr_dy(k);
			double		zn;

			g[k] = 0.0;
			drop[k] = 0.0;
			if (nx < 0 || ny < 0 || nx >= W || ny >= H)
				continue;
			zn = (double) z[(size_t) ny * W + nx];
			if (isnan(zn))
				continue;
			drop[k] = (double) z[i] - zn;
			g[k] = drop[k] / row_dist[(size_t) y * 8 + k];
			lower |= g[k] > 0;
		}
		if (!lower)
		{
			flat[i] = kind[i] == KIND_INTERIOR;
			continue;
		}
		d8[i] = (uint8_t) tg_d8_choose(g);
		if (frac)
		{
			float		share[8];

			tg_flow_shares(routing, exponent, false, drop, &row_dist[(size_t) y * 8], share);
			for (int k = 0; k < 8; k++)
				frac[(size_t) k * n + i] = share[k];
		}
	}
}

/* Seeds of the two gradients (1) and the starting labels of flat cells. */
template <typename V>
__global__ void
tgk_flat_seeds(const V *__restrict__ z, const uint8_t *__restrict__ flat, int W, int H,
			   uint64_t *__restrict__ dist, uint32_t *__restrict__ label)
{
	TG_GRID_STRIDE(i, (size_t) W * H)
	{
		const int	x = (int) (i % W),
					y = (int) (i / W);
		bool		to_lower = false,
					from_higher = false;

		dist[i] = pack(FAR, FAR);
		label[i] = NO_LABEL;
		if (!flat[i])
			continue;
		for (int k = 0; k < 8; k++)
		{
			/* flat cells are interior: every neighbour is inside */
			size_t		ni = (size_t) (y + tg_nbr_dy(k)) * W + x + tg_nbr_dx(k);

			to_lower |= !flat[ni] && z[ni] == z[i];
			from_higher |= z[ni] > z[i];
		}
		dist[i] = pack(to_lower ? 1 : FAR, from_higher ? 1 : FAR);
		label[i] = (uint32_t) i;
	}
}

/*
 * Height of each flat: the largest distance away from higher terrain.  A
 * plateau is one label over millions of cells, so the lanes of a warp that
 * share a label combine first and one of them updates it.
 */
__global__ void
tgk_flat_height(const uint8_t *__restrict__ flat, size_t n, const uint64_t *__restrict__ dist,
				const uint32_t *__restrict__ label, int32_t *__restrict__ height)
{
	const size_t stride = (size_t) gridDim.x * blockDim.x;

	/* whole warps step together, lanes past n taking part with no label */
	for (size_t i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i - threadIdx.x % 32 < n; i += stride)
	{
		uint32_t	lab = NO_LABEL;
		int32_t		a = -1;

		if (i < n && flat[i])
		{
			a = (int32_t) (uint32_t) dist[i];
			if (a < FAR)
				lab = label[i];
		}
		const unsigned same = __match_any_sync(0xFFFFFFFFu, lab);
		const int32_t top = __reduce_max_sync(same, a);

		if (lab != NO_LABEL && (threadIdx.x % 32) == __ffs(same) - 1)
			atomicMax(&height[lab], top);
	}
}

/* M = 2 T + (H - A); 0 off flats and on flats that do not drain. */
__global__ void
tgk_flat_mask(const uint8_t *__restrict__ flat, size_t n, const uint64_t *__restrict__ dist,
			  const uint32_t *__restrict__ label, const int32_t *__restrict__ height,
			  int32_t *__restrict__ mask)
{
	TG_GRID_STRIDE(i, n)
	{
		int32_t		t = (int32_t) (dist[i] >> 32),
					a = (int32_t) (uint32_t) dist[i];

		if (!flat[i] || t >= FAR)
			mask[i] = 0;
		else
			mask[i] = 2 * t + (a < FAR ? height[label[i]] - a : 0);
	}
}

/* Receivers and shares of flat cells, down the mask. */
template <typename V>
__global__ void
tgk_flat_route(const V *__restrict__ z, const uint8_t *__restrict__ flat,
			   const int32_t *__restrict__ mask, int W, int H, tg_routing routing,
			   double flat_exponent, uint8_t *__restrict__ d8, float *__restrict__ frac)
{
	const size_t n = (size_t) W * H;

	TG_GRID_STRIDE(i, n)
	{
		const int	x = (int) (i % W),
					y = (int) (i / W);
		double		g[8],
					drop[8],
					dist[8];

		if (!flat[i] || mask[i] == 0)
			continue;
		tg_flat_distances(dist);
		for (int k = 0; k < 8; k++)
		{
			size_t		ni = (size_t) (y + tg_nbr_dy(k)) * W + x + tg_nbr_dx(k);
			int32_t		m;

			g[k] = 0;
			drop[k] = 0;
			if (z[ni] != z[i])
				continue;
			m = flat[ni] ? mask[ni] : 0;
			if (flat[ni] && m == 0)
				continue;
			drop[k] = (double) (mask[i] - m);
			g[k] = drop[k] / dist[k];
		}
		d8[i] = (uint8_t) tg_d8_choose(g);
		if (frac)
		{
			float		share[8];

			tg_flow_shares(routing, flat_exponent, true, drop, dist, share);
			for (int k = 0; k < 8; k++)
				frac[(size_t) k * n + i] = share[k];
		}
	}
}

/* Flat-mask values decided elsewhere replace the local ones (tg_flat_masks). */
__global__ void
tgk_given_masks(const size_t *__restrict__ cell, const int32_t *__restrict__ value, size_t count,
				int32_t *__restrict__ mask)
{
	TG_GRID_STRIDE(g, count)
		mask[cell[g]] = value[g];
}

template <typename V>
tg_status
drain_flats(const tg_ctx *ctx, device_route<V> &r, double flat_exponent, const tg_flat_masks *given,
			size_t given_batch, int *rounds, tg_error *err)
{
	const size_t n = r.n;
	dbuf<uint64_t> dist;
	dbuf<uint32_t> label;
	dbuf<int32_t> height,
				mask;
	int			k;
	tg_status	st;

	TG_CUDA_CHECK(dist.alloc(n), "allocating flat gradients");
	TG_CUDA_CHECK(label.alloc(n), "allocating flat labels");
	TG_CUDA_CHECK(height.alloc(n), "allocating flat heights");
	TG_CUDA_CHECK(mask.alloc(n), "allocating the flat mask");
	tgk_flat_seeds<V><<<grid_for(n), 256>>>(r.z.p, r.flat.p, r.width, r.height, dist.p, label.p);
	TG_CUDA_CHECK(cudaGetLastError(), "seeding flat gradients");
	if ((st = relax_tiles(ctx, distances_op{r.flat.p}, dist.p, r.width, r.height, &k, err)) != TG_OK)
		return st;
	*rounds += k;
	tgk_flat_merge<<<grid_for(n), 256>>>(r.flat.p, r.width, r.height, label.p);
	TG_CUDA_CHECK(cudaGetLastError(), "joining flats");
	tgk_flat_resolve<<<grid_for(n), 256>>>(r.flat.p, n, label.p);
	TG_CUDA_CHECK(cudaGetLastError(), "labelling flats");
	TG_CUDA_CHECK(cudaMemset(height.p, 0, n * sizeof(int32_t)), "clearing flat heights");
	tgk_flat_height<<<grid_for(n), 256>>>(r.flat.p, n, dist.p, label.p, height.p);
	TG_CUDA_CHECK(cudaGetLastError(), "measuring flats");
	tgk_flat_mask<<<grid_for(n), 256>>>(r.flat.p, n, dist.p, label.p, height.p, mask.p);
	TG_CUDA_CHECK(cudaGetLastError(), "combining flat gradients");
	if (given && given->count > 0)
	{
		const size_t batch = given_batch > 0 ? std::min(given->count, given_batch) : given->count;
		dbuf<size_t> cell;
		dbuf<int32_t> value;

		TG_CUDA_CHECK(cell.alloc(batch), "allocating given flat masks");
		TG_CUDA_CHECK(value.alloc(batch), "allocating given flat masks");
		/* a copy waits for the work queued before it: the previous batch's kernel is done with the buffers */
		for (size_t off = 0; off < given->count; off += batch)
		{
			const size_t m = std::min(batch, given->count - off);

			TG_CUDA_CHECK(tg_cuda_copy_to_device(ctx, cell.p, given->cell + off, m * sizeof(size_t)),
						  "copying given flat masks to the GPU");
			TG_CUDA_CHECK(tg_cuda_copy_to_device(ctx, value.p, given->mask + off, m * sizeof(int32_t)),
						  "copying given flat masks to the GPU");
			tgk_given_masks<<<grid_for(m), 256>>>(cell.p, value.p, m, mask.p);
			TG_CUDA_CHECK(cudaGetLastError(), "setting given flat masks");
		}
	}
	tgk_flat_route<V><<<grid_for(n), 256>>>(r.z.p, r.flat.p, mask.p, r.width, r.height,
											 r.routing, flat_exponent, r.d8.p,
											 r.routing == TG_ROUTE_D8 ? nullptr : r.frac.p);
	TG_CUDA_CHECK(cudaGetLastError(), "routing over flats");
	return TG_OK;
}
}								/* namespace */

size_t
route_kept_bytes_per_cell(const tg_flow_params *p, size_t value_size)
{
	/* surface, kinds, receivers, flat flags, shares */
	return value_size + 3 + (p->routing == TG_ROUTE_D8 ? 0 : 8 * sizeof(float));
}

size_t		tg_given_masks_batch = (size_t) 1 << 20;

size_t
route_bytes_per_cell(const tg_flow_params *p, size_t value_size)
{
	/* the raw band (at most 8) while it is decoded, the fill's copy (value_size) */
	static_assert(ROUTE_SCRATCH_BYTES_PER_CELL >= 8, "the flats' scratch bounds the other phases'");
	return route_kept_bytes_per_cell(p, value_size) + ROUTE_SCRATCH_BYTES_PER_CELL;
}

template <typename V>
tg_status
build_route(const tg_ctx *ctx, const tg_band *dem, const tg_flow_params *p, device_route<V> &r,
			double *transfer_ms, int *rounds, tg_error *err, const tg_flat_masks *given, size_t given_batch)
{
	const int	W = dem->width,
				H = dem->height;
	const size_t n = (size_t) W * H;
	dbuf<double> row_dist;
	tg_status	st;

	r.width = W;
	r.height = H;
	r.n = n;
	r.routing = p->routing;
	*rounds = 0;
	st = upload_dem<V>(ctx, dem, r.z, transfer_ms, err);
	if (st != TG_OK)
		return st;
	TG_CUDA_CHECK(r.kind.alloc(n), "allocating cell kinds");
	tgk_classify<V><<<grid_for(n), 256>>>(r.z.p, W, H, 0, H, KIND_INTERIOR, r.kind.p);
	TG_CUDA_CHECK(cudaGetLastError(), "classifying cells");
	if (p->fill)
	{
		dbuf<V>		w;
		int			k = 0;

		TG_CUDA_CHECK(w.alloc(n), "allocating the filled DEM");
		st = fill_surface<V>(ctx, r.z.p, r.kind.p, W, H, TG_FILL_PRIORITY_FLOOD, 0, w.p, &k, err);
		if (st != TG_OK)
			return st;
		*rounds += k;
		std::swap(r.z.p, w.p);	/* the old surface is freed with w */
	}

	/* per-row neighbour distances, as the CPU computes them */
	{
		hbuf<double> host_dist(ctx);

		if (!host_dist.alloc((size_t) H * 8))
			return tg_error_set(err, TG_ENOMEM, "could not allocate row distances");
		for (int y = 0; y < H; y++)
		{
			double		dx,
						dy;

			tg_row_spacing(&p->geom, y, &dx, &dy);
			tg_nbr_distances(dx, dy, host_dist.p + (size_t) y * 8);
		}
		TG_CUDA_CHECK(row_dist.alloc((size_t) H * 8), "copying row distances to the GPU");
		TG_CUDA_CHECK(cudaMemcpy(row_dist.p, host_dist.p, (size_t) H * 8 * sizeof(double),
								 cudaMemcpyHostToDevice), "copying row distances to the GPU");
	}

	TG_CUDA_CHECK(r.d8.alloc(n), "allocating receivers");
	TG_CUDA_CHECK(r.flat.alloc(n), "allocating flat flags");
	if (p->routing != TG_ROUTE_D8)
		TG_CUDA_CHECK(r.frac.alloc(8 * n), "allocating flow shares");
	tgk_gradients<V><<<grid_for(n), 256>>>(r.z.p, r.kind.p, W, H, row_dist.p, p->routing,
											p->exponent, r.d8.p,
											p->routing == TG_ROUTE_D8 ? nullptr : r.frac.p,
											r.flat.p);
	TG_CUDA_CHECK(cudaGetLastError(), "computing flow directions");
	return drain_flats<V>(ctx, r, p->routing == TG_ROUTE_MFD_MD ? 1.1 : p->exponent, given, given_batch, rounds,
						  err);
}

template tg_status build_route<float>(const tg_ctx *, const tg_band *, const tg_flow_params *,
									  device_route<float> &, double *, int *, tg_error *,
									  const tg_flat_masks *, size_t);
template tg_status build_route<double>(const tg_ctx *, const tg_band *, const tg_flow_params *,
									   device_route<double> &, double *, int *, tg_error *,
									   const tg_flat_masks *, size_t);

/* ------------------------------------------------------------------------
 * The flats that cross the edges of a strip's own rows, as
 * tg_cpu_crossing_flats lists them (hydro/flats/flat_masks.c)
 * ------------------------------------------------------------------------ */
namespace
{
/*
 * Flat cells of the window z (count rows): valid, every neighbour at least as
 * high (a comparison with NaN is false), not on the window's edge.
 */
template <typename V>
__global__ void
tgk_window_flats(const V *__restrict__ z, int W, int count, uint8_t *__restrict__ flat)
{
	TG_GRID_STRIDE(i, (size_t) W * count)
	{
		const int	x = (int) (i % W),
					y = (int) (i / W);
		uint8_t		f = 0;

		if (x > 0 && x < W - 1 && y > 0 && y < count - 1)
		{
			const V    *up = z + i - W,
					   *down = z + i + W,
						v = z[i];

			f = (up[-1] >= v) & (up[0] >= v) & (up[1] >= v) & (z[i - 1] >= v) & (z[i + 1] >= v) &
				(down[-1] >= v) & (down[0] >= v) & (down[1] >= v);
		}
		flat[i] = f;
	}
}

__global__ void
tgk_crossing_start(size_t n, uint32_t *__restrict__ parent, uint8_t *__restrict__ crosses)
{
	TG_GRID_STRIDE(i, n)
	{
		parent[i] = (uint32_t) i;
		crosses[i] = 0;
	}
}

/*
 * A flat crosses where a cell of it in the own rows' first or last row has
 * a flat neighbour of equal elevation in a row beyond them: its root marked.
 * own: the flags from own row 0 (window row y0) on; label: roots.
 */
template <typename V>
__global__ void
tgk_crossing_mark(const V *__restrict__ z, const uint8_t *__restrict__ flat, int W, int count, int y0,
				  int nrows, const uint32_t *__restrict__ label, uint8_t *__restrict__ crosses)
{
	TG_GRID_STRIDE(t, (size_t) 2 * W)
	{
		const int	x = (int) (t % W),
					y = t < (size_t) W ? 0 : nrows - 1;	/* own row */
		const size_t i = (size_t) (y0 + y) * W + x;

		if ((t >= (size_t) W && nrows == 1) || !flat[i])
			continue;
		for (int k = 0; k < 8; k++)
		{
			const int	nx = x + tg_nbr_dx(k),
						ny = y0 + y + tg_nbr_dy(k);

			if (nx < 0 || nx >= W || ny < 0 || ny >= count || (ny >= y0 && ny < y0 + nrows))
				continue;
			const size_t ni = (size_t) ny * W + nx;

			if (flat[ni] && z[ni] == z[i])
				crosses[label[(size_t) y * W + x]] = 1;
		}
	}
}

/* An own cell listed: flat, in a crossing flat. */
struct crossing_cell
{
	const uint8_t *flat;		/* from own row 0 */
	const uint32_t *label;
	const uint8_t *crosses;

	__device__ bool operator()(uint32_t i) const
	{
		return flat[i] && crosses[label[i]];
	}
};

/* A crossing flat's root: the flats are numbered in the order of these. */
struct crossing_root
{
	const uint8_t *flat;
	const uint32_t *label;
	const uint8_t *crosses;

	__device__ bool operator()(uint32_t i) const
	{
		return flat[i] && label[i] == i && crosses[i];
	}
};

/* Each listed cell's seeds and its flat's number (the rank of its root among the crossing roots). */
template <typename V>
__global__ void
tgk_crossing_describe(const V *__restrict__ z, const uint8_t *__restrict__ flat, int W, int y0,
					  const uint32_t *__restrict__ label, const uint32_t *__restrict__ cell, const uint32_t *count,
					  const uint32_t *__restrict__ root, const uint32_t *nroots, uint8_t *__restrict__ seed,
					  int32_t *__restrict__ number)
{
	TG_GRID_STRIDE(g, (size_t) *count)
	{
		const uint32_t c = cell[g],
					r = label[c];
		const size_t i = (size_t) y0 * W + c;		/* in the window */
		uint8_t		s = 0;

		number[g] = (int32_t) (thrust::lower_bound(thrust::seq, root, root + *nroots, r) - root);
		/* flat cells are inside the window's edges: every neighbour is in it */
		for (int k = 0; k < 8; k++)
		{
			const size_t ni = (size_t) ((ptrdiff_t) i + (ptrdiff_t) tg_nbr_dy(k) * W + tg_nbr_dx(k));

			if (!flat[ni] && z[ni] == z[i])
				s |= TG_SEED_DRAINS;
			if (z[ni] > z[i])
				s |= TG_SEED_HIGHER;
		}
		seed[g] = s;
	}
}

template <typename V>
tg_status
crossing_impl(const tg_ctx *ctx, const tg_band *z, int y0, int nrows, tg_crossing_list *list, tg_error *err)
{
	const int	W = z->width,
				count = z->height;
	const size_t n = (size_t) W * count,
				own = (size_t) W * nrows,
				off = (size_t) W * y0;
	dbuf<V>		d_z;
	dbuf<uint8_t> flat,
				crosses,
				d_seed;
	dbuf<uint32_t> label,
				cells,
				roots,
				counts;
	dbuf<int32_t> d_number;
	event_timer up,
				compute,
				down;
	uint32_t	found[2];
	tg_status	st;

	memset(list, 0, sizeof *list);
	if (own > INT32_MAX || y0 < 0 || y0 + nrows > count || nrows < 1)
		return tg_error_set(err, TG_EINVAL, "a strip's crossing flats take at most %d own cells, within the window",
							INT32_MAX);
	/* window and flags; labels, marks, the listed cells and their roots; the list */
	st = tg_cuda_check_budget(ctx, n * (sizeof(V) + 1) + own * (4 + 1 + 4 + 4 + 1 + 4),
							  "a strip's crossing flats", err);
	if (st != TG_OK)
		return st;
	TG_CUDA_CHECK(up.init(), "creating timing events");
	TG_CUDA_CHECK(compute.init(), "creating timing events");
	TG_CUDA_CHECK(down.init(), "creating timing events");
	TG_CUDA_CHECK(d_z.alloc(n), "allocating a strip's surface");
	TG_CUDA_CHECK(flat.alloc(n), "allocating flat flags");
	TG_CUDA_CHECK(label.alloc(own), "allocating flat labels");
	TG_CUDA_CHECK(crosses.alloc(own), "allocating crossing marks");
	TG_CUDA_CHECK(cells.alloc(own), "allocating the crossing cells");
	TG_CUDA_CHECK(counts.alloc(2), "allocating counts");
	TG_CUDA_CHECK(cudaEventRecord(up.start), "recording an event");
	TG_CUDA_CHECK(tg_cuda_copy_to_device(ctx, d_z.p, z->data, n * sizeof(V)), "copying a strip to the GPU");
	TG_CUDA_CHECK(cudaEventRecord(up.stop), "recording an event");
	TG_CUDA_CHECK(cudaEventRecord(compute.start), "recording an event");
	tgk_window_flats<<<grid_for(n), 256>>>(d_z.p, W, count, flat.p);
	TG_CUDA_CHECK(cudaGetLastError(), "finding flat cells");
	tgk_crossing_start<<<grid_for(own), 256>>>(own, label.p, crosses.p);
	TG_CUDA_CHECK(cudaGetLastError(), "starting flat labels");
	tgk_flat_merge<<<grid_for(own), 256>>>(flat.p + off, W, nrows, label.p);
	TG_CUDA_CHECK(cudaGetLastError(), "joining flats");
	tgk_flat_resolve<<<grid_for(own), 256>>>(flat.p + off, own, label.p);
	TG_CUDA_CHECK(cudaGetLastError(), "labelling flats");
	tgk_crossing_mark<<<grid_for((size_t) 2 * W), 256>>>(d_z.p, flat.p, W, count, y0, nrows, label.p, crosses.p);
	TG_CUDA_CHECK(cudaGetLastError(), "marking crossing flats");
	st = select_cells(thrust::make_transform_iterator(thrust::counting_iterator<uint32_t>(0),
													  crossing_cell{flat.p + off, label.p, crosses.p}),
					  own, cells.p, counts.p, err);
	if (st != TG_OK)
		return st;
	TG_CUDA_CHECK(cudaMemcpy(&found[0], counts.p, sizeof(uint32_t), cudaMemcpyDeviceToHost),
				  "counting crossing cells");
	TG_CUDA_CHECK(roots.alloc(found[0]), "allocating crossing flats");
	st = select_cells(thrust::make_transform_iterator(thrust::counting_iterator<uint32_t>(0),
													  crossing_root{flat.p + off, label.p, crosses.p}),
					  own, roots.p, counts.p + 1, err);
	if (st != TG_OK)
		return st;
	TG_CUDA_CHECK(cudaMemcpy(&found[1], counts.p + 1, sizeof(uint32_t), cudaMemcpyDeviceToHost),
				  "counting crossing flats");
	TG_CUDA_CHECK(d_seed.alloc(found[0]), "allocating crossing seeds");
	TG_CUDA_CHECK(d_number.alloc(found[0]), "allocating crossing flat numbers");
	tgk_crossing_describe<<<grid_for(found[0]), 256>>>(d_z.p, flat.p, W, y0, label.p, cells.p, counts.p, roots.p,
														counts.p + 1, d_seed.p, d_number.p);
	TG_CUDA_CHECK(cudaGetLastError(), "describing crossing cells");
	TG_CUDA_CHECK(cudaEventRecord(compute.stop), "recording an event");

	/* on an error from here on the caller frees the list (dispatch.c) */
	list->cell = static_cast<uint32_t *>(tg_alloc(ctx, (found[0] ? found[0] : 1) * sizeof(uint32_t)));
	list->seed = static_cast<uint8_t *>(tg_alloc(ctx, found[0] ? found[0] : 1));
	list->flat = static_cast<int32_t *>(tg_alloc(ctx, (found[0] ? found[0] : 1) * sizeof(int32_t)));
	if (list->cell == NULL || list->seed == NULL || list->flat == NULL)
		return tg_cuda_host_oom(err, "a strip's crossing flats");
	TG_CUDA_CHECK(cudaEventRecord(down.start), "recording an event");
	TG_CUDA_CHECK(tg_cuda_copy_to_host(ctx, list->cell, cells.p, found[0] * sizeof(uint32_t)),
				  "copying crossing cells back from the GPU");
	TG_CUDA_CHECK(tg_cuda_copy_to_host(ctx, list->seed, d_seed.p, found[0]), "copying crossing seeds back from the GPU");
	TG_CUDA_CHECK(tg_cuda_copy_to_host(ctx, list->flat, d_number.p, found[0] * sizeof(int32_t)),
				  "copying crossing flat numbers back from the GPU");
	TG_CUDA_CHECK(cudaEventRecord(down.stop), "recording an event");
	TG_CUDA_CHECK(cudaEventSynchronize(down.stop), "listing crossing flats");
	list->n = found[0];
	list->nflats = found[1];
	charge_device_time(ctx, compute.elapsed(), up.elapsed() + down.elapsed());
	return TG_OK;
}
}								/* namespace */

extern "C" tg_status
tg_cuda_crossing_flats(const tg_ctx *ctx, const tg_band *z, int y0, int nrows, tg_crossing_list *list,
					   tg_error *err)
{
	return tg_cuda_catch_all(err, [&] {
		if (z->pixtype == TG_PT_32BF)
			return crossing_impl<float>(ctx, z, y0, nrows, list, err);
		return crossing_impl<double>(ctx, z, y0, nrows, list, err);
	});
}
