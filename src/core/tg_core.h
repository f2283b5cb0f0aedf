/*
 * tg_core.h — what the fmgr glue (src/pg/) uses of terra_gpu's core: the
 * context and errors, raster values, the parameters of every operation,
 * tg_run over tiles, BMMQ-tree builds and the messages of a partitioned
 * coverage.  The core's own interfaces are its folders' headers
 * (docs/ARCHITECTURE.md); the glue includes none of them.
 *
 * Everything here is plain C: no PostgreSQL and no CUDA headers, so the core
 * builds with a bare C compiler, runs in unit tests and benchmarks without a
 * server.
 *
 * Conventions
 *   - Functions return a tg_status; on failure the tg_error says what and why.
 *     The core never longjmps, never prints, never exits.
 *   - The caller allocates outputs.  Scratch memory goes through the
 *     allocator in tg_ctx (palloc without OOM errors in a backend).
 *   - Every operation has a CPU implementation (the reference) and, where a
 *     GPU is ready, a CUDA one with the same signature; tg_ctx.backend picks.
 */
#ifndef TG_CORE_H
#define TG_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C"
{
#endif

#define TG_VERSION "0.2.0"

/* ------------------------------------------------------------------------
 * Status and errors
 * ------------------------------------------------------------------------ */
typedef enum tg_status
{
	TG_OK = 0,
	TG_EINVAL,					/* bad argument value */
	TG_EDATA,					/* malformed or inconsistent raster data */
	TG_ENOMEM,					/* out of host or device memory */
	TG_ELIMIT,					/* a size limit would be exceeded */
	TG_EUNSUPPORTED,			/* valid input we do not handle (out-db band) */
	TG_ENODEVICE,				/* GPU requested but none is usable */
	TG_EDEVICE,					/* the GPU or CUDA runtime failed */
	TG_ECANCELED,				/* the cancel callback asked us to stop */
	TG_ECALLBACK				/* a caller's callback failed; its own error stands */
} tg_status;

typedef struct tg_error
{
	tg_status	code;
	bool		on_device;		/* TG_ENOMEM: device (true) or host memory */
	char		message[256];	/* one line, lower case, no trailing period */
	char		detail[512];	/* optional full sentence(s) */
	char		hint[256];		/* optional full sentence */
} tg_error;

const char *tg_status_name(tg_status code);

/* Record an error (the first one wins) and return its code. */
tg_status	tg_error_set(tg_error *err, tg_status code, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));
void		tg_error_detail(tg_error *err, const char *fmt,...)
			__attribute__((format(printf, 2, 3)));
void		tg_error_hint(tg_error *err, const char *fmt,...)
			__attribute__((format(printf, 2, 3)));
void		tg_error_clear(tg_error *err);

/* ------------------------------------------------------------------------
 * Execution context
 * ------------------------------------------------------------------------ */
typedef enum tg_backend
{
	TG_BACKEND_AUTO = 0,		/* GPU if ready and the input is large enough */
	TG_BACKEND_CPU,
	TG_BACKEND_GPU
} tg_backend;

const char *tg_backend_name(tg_backend b);

/* Returns true when the running operation should stop (polled, never blocks). */
typedef bool (*tg_cancel_fn) (void *arg);

typedef struct tg_allocator
{
	void	   *(*alloc) (size_t size, void *arg);	/* NULL on failure, never throws */
	void		(*free) (void *ptr, void *arg);
	void	   *arg;
} tg_allocator;

/*
 * Progress of a long call, reported on the calling thread only: the phase
 * running and the part of it done (0 to 1).
 */
typedef void (*tg_progress_fn) (void *arg, const char *phase, double fraction);

#define TG_MAX_PHASES 24

/* One phase of a call and its wall time. */
typedef struct tg_phase_time
{
	char		name[32];
	double		ms;
} tg_phase_time;

/* What one call did: filled in by the dispatcher, read by tg_last_run(). */
typedef struct tg_run_stats
{
	tg_backend	backend;		/* the backend that actually ran (CPU or GPU) */
	int64_t		cells;
	double		kernel_ms;		/* device time in kernels (events), GPU only */
	double		prep_ms;		/* time spent preparing (fill, routing): device time of
								 * kernel_ms on the GPU, host time on the CPU */
	double		transfer_ms;	/* host<->device copies (events), GPU only */
	double		core_ms;		/* wall time inside the core, host clock */
	int			chunks;			/* device passes (strips, sweeps, rounds) */
	int			iterations;		/* fill sweeps or accumulation rounds, where it applies */
	int			gpu_fallbacks;	/* steps auto sent to the CPU when the device could not hold them */
	char		method[32];		/* the algorithm that ran, where there is a choice */
	char		note[320];		/* why auto chose the CPU, or empty */
	int			threads;		/* the most threads that ran at once (1: the calling thread) */
	size_t		peak_host_bytes;	/* the most host memory the call's buffers of a megabyte
									 * or more held at once (tg_alloc) */
	size_t		peak_device_bytes;	/* the most device memory its buffers held at once */
	int			nphases;
	tg_phase_time phases[TG_MAX_PHASES];	/* in the order they ran */
} tg_run_stats;

typedef struct tg_ctx
{
	tg_backend	backend;
	int64_t		min_cells_for_gpu;	/* auto: smaller inputs stay on the CPU */
	int			device;			/* CUDA device ordinal */
	size_t		device_memory_limit;	/* bytes this call may hold; 0 = no cap */
	size_t		route_cache_limit;	/* bytes of the last CPU routing kept for the next call; 0 = none */
	tg_cancel_fn cancel;		/* may be NULL */
	void	   *cancel_arg;
	tg_allocator allocator;
	tg_run_stats *stats;		/* may be NULL */
	int			threads;		/* threads a call may use; 0 = every core it may run on */
	tg_progress_fn progress;	/* may be NULL; called on the calling thread only */
	void	   *progress_arg;
	/* set by the core (runtime/runtime.h): the call's threads, and which one this is */
	struct tg_pool *pool;
	int			worker;			/* 0: the calling thread; k > 0: worker k */
} tg_ctx;

/* The most cells one grid in memory may have: cells are numbered in 32 bits. */
#define TG_MAX_GRID_CELLS ((uint64_t) UINT32_MAX - 1)

/* Defaults: auto backend, malloc allocator, no cancel callback, no cap, every core. */
void		tg_ctx_init(tg_ctx *ctx);

/* Drop the routing the CPU kept from an earlier call (ctx->route_cache_limit). */
void		tg_route_cache_clear(void);

/* ------------------------------------------------------------------------
 * GPU device information (probing initialises CUDA in the calling process)
 * ------------------------------------------------------------------------ */
typedef struct tg_device_info
{
	bool		available;
	int			device;			/* ordinal that would be used */
	int			device_count;
	char		name[256];
	int			cc_major;
	int			cc_minor;
	size_t		total_memory;
	size_t		free_memory;
	int			multiprocessors;
	int			driver_version; /* CUDA encoding: 1000*major + 10*minor */
	int			runtime_version;
	char		reason[1024];	/* why no device is available, else empty */
} tg_device_info;

void		tg_device_query(int device, tg_device_info *info);

/*
 * Whether the dispatcher's policy sends a call of `cells` cells to the GPU
 * (backend gpu: always; auto: a device ready and enough cells): for the
 * memory check of a whole call (run/run.c), which estimates from the path
 * taken, and for a refresh choosing between bands and the whole product.
 */
bool		tg_gpu_chosen(const tg_ctx *ctx, int64_t cells);

/* ------------------------------------------------------------------------
 * PostGIS raster values (serialized format RFC1, version 0)
 * ------------------------------------------------------------------------ */
typedef enum tg_pixtype
{
	TG_PT_1BB = 0,
	TG_PT_2BUI = 1,
	TG_PT_4BUI = 2,
	TG_PT_8BSI = 3,
	TG_PT_8BUI = 4,
	TG_PT_16BSI = 5,
	TG_PT_16BUI = 6,
	TG_PT_32BSI = 7,
	TG_PT_32BUI = 8,
	/* 9 was a 16-bit float in early drafts; never valid */
	TG_PT_32BF = 10,
	TG_PT_64BF = 11
} tg_pixtype;

#define TG_RASTER_HEADER_SIZE 64
#define TG_RASTER_MAX_SIDE 65535

typedef struct tg_georef
{
	double		scale_x;		/* pixel width (signed) */
	double		scale_y;		/* pixel height (signed, usually negative) */
	double		upperleft_x;
	double		upperleft_y;
	double		skew_x;
	double		skew_y;
	int32_t		srid;
} tg_georef;

typedef struct tg_raster_info
{
	uint16_t	num_bands;
	uint16_t	width;
	uint16_t	height;
	tg_georef	geo;
} tg_raster_info;

/* One band, read in place: data points into the serialized buffer. */
typedef struct tg_band
{
	tg_pixtype	pixtype;
	bool		has_nodata;
	bool		is_nodata;		/* flag: every pixel is nodata */
	bool		offdb;
	double		nodata;
	int			width;
	int			height;
	const void *data;			/* row-major, host byte order, pixtype aligned */
} tg_band;

/* What a band of a raster to be written looks like. */
typedef struct tg_band_spec
{
	tg_pixtype	pixtype;
	bool		has_nodata;
	double		nodata;
} tg_band_spec;

/* Geometric pixel size, as PostGIS' ST_PixelWidth / ST_PixelHeight. */
double		tg_georef_pixel_width(const tg_georef *g);
double		tg_georef_pixel_height(const tg_georef *g);

/* Offsets closer than this (in pixels) to a whole number are aligned. */
#define TG_ALIGN_TOLERANCE 1e-3

/*
 * Where a tile whose upper-left corner is (x, y) starts on grid g, in
 * (fractional) columns and rows; true when both are whole numbers within
 * TG_ALIGN_TOLERANCE.
 */
bool		tg_georef_offset(const tg_georef *g, double x, double y, double *col, double *row);

/*
 * Read the 64-byte header.  buf/len is the whole value (or at least its first
 * 64 bytes), the 4-byte length word included; the length word is not read:
 * len is authoritative.
 */
tg_status	tg_raster_read_info(const uint8_t *buf, size_t len,
								tg_raster_info *info, tg_error *err);

/*
 * Locate band `index` (0-based), checking every offset of it and of the bands
 * before it against len.  Out-db bands are described (offdb = true, data =
 * NULL) but their pixels cannot be read.
 */
tg_status	tg_raster_read_band(const uint8_t *buf, size_t len, int index,
								tg_band *band, tg_error *err);

/*
 * An empty raster (no band) with the size and georeference of the value in
 * buf, of which the header alone is read.
 */
tg_status	tg_raster_empty_like(const uint8_t *buf, size_t len,
								 uint8_t out[TG_RASTER_HEADER_SIZE], tg_error *err);

/*
 * The first band's header alone (pixel type, flags, nodata; data = NULL), from
 * a value that may stop after it: TG_RASTER_BAND1_HEADER_END bytes at most.
 */
#define TG_RASTER_BAND1_HEADER_END (TG_RASTER_HEADER_SIZE + 16)
tg_status	tg_raster_read_band_header(const uint8_t *buf, size_t len,
									   tg_band *band, tg_error *err);

/* Is this stored value nodata (flag, value match, or NaN)?  PostGIS matches
 * float nodata within FLT_EPSILON; so do we. */
bool		tg_band_value_is_nodata(const tg_band *band, double value);

/* Value of pixel i (row-major index) as double; sub-byte types masked. */
double		tg_band_get(const tg_band *band, size_t i);

/* ------------------------------------------------------------------------
 * Terrain operations
 * ------------------------------------------------------------------------ */
typedef enum tg_slope_units
{
	TG_SLOPE_DEGREES = 0,
	TG_SLOPE_RADIANS,
	TG_SLOPE_PERCENT
} tg_slope_units;

typedef struct tg_slope_params
{
	double		pixel_width;	/* map units, > 0 */
	double		pixel_height;	/* map units, > 0 */
	double		scale;			/* vertical units per horizontal unit ratio, > 0 */
	tg_slope_units units;
	float		out_nodata;
} tg_slope_params;

/*
 * Local terrain derivatives (terrain/terrain_cpu.c, cuda/terrain.cu): any of them
 * from one pass over the DEM, each into a plane of its own.  Every product
 * but the geomorphons reads the 3 x 3 window of a cell, a neighbour outside
 * the raster or nodata taking the centre's value (as tg_slope and PostGIS'
 * ST_Aspect, ST_TPI, ST_TRI, ST_Roughness do); a nodata centre gives the
 * product's nodata.  The horizontal spacing is the pixel size times scale.
 */
typedef enum tg_terrain_product
{
	TG_TERRAIN_SLOPE = 0,		/* Horn (1981), tg_slope's arithmetic */
	TG_TERRAIN_ASPECT,			/* Horn; clockwise from north, flat -1 */
	TG_TERRAIN_HILLSHADE,		/* Horn; as ST_HillShade / gdaldem hillshade */
	TG_TERRAIN_TPI,				/* centre minus the mean of the 8 neighbours */
	TG_TERRAIN_TRI,				/* Riley 1999 or Wilson 2007 */
	TG_TERRAIN_ROUGHNESS,		/* largest minus smallest of the 9 cells */
	TG_TERRAIN_CURVATURE,		/* Evans-Young derivatives, Florinsky (2016) definitions */
	TG_TERRAIN_GEOMORPHONS		/* Jasiewicz and Stepinski (2013): landform 1..10 */
} tg_terrain_product;

#define TG_TERRAIN_PRODUCTS 8

typedef enum tg_hillshade_method
{
	TG_HILLSHADE_STANDARD = 0,	/* one light at azimuth, altitude */
	TG_HILLSHADE_MULTIDIRECTIONAL,	/* gdaldem's: lights at 225, 270, 315, 360 weighted by aspect */
	TG_HILLSHADE_COMBINED		/* gdaldem's: the standard one darkened by the slope */
} tg_hillshade_method;

typedef enum tg_tri_algorithm
{
	TG_TRI_WILSON = 0,			/* mean absolute difference to the centre (ST_TRI) */
	TG_TRI_RILEY				/* root of the summed squared differences (gdaldem's default) */
} tg_tri_algorithm;

typedef enum tg_curvature_type
{
	TG_CURVATURE_PROFILE = 0,	/* vertical (normal) curvature along the gradient, kv */
	TG_CURVATURE_PLAN,			/* curvature of the contour line, kp */
	TG_CURVATURE_TANGENTIAL,	/* horizontal (normal) curvature across the gradient, kh */
	TG_CURVATURE_MEAN,			/* H */
	TG_CURVATURE_GAUSSIAN,		/* K */
	TG_CURVATURE_MINIMAL,		/* kmin = H - sqrt(H^2 - K) */
	TG_CURVATURE_MAXIMAL,		/* kmax = H + sqrt(H^2 - K) */
	TG_CURVATURE_TOTAL			/* r^2 + 2 s^2 + t^2 */
} tg_curvature_type;

/* Geomorphon landforms, r.geomorphon's codes (0 is the output's nodata). */
enum
{
	TG_FORM_FLAT = 1, TG_FORM_PEAK, TG_FORM_RIDGE, TG_FORM_SHOULDER, TG_FORM_SPUR,
	TG_FORM_SLOPE, TG_FORM_HOLLOW, TG_FORM_FOOTSLOPE, TG_FORM_VALLEY, TG_FORM_PIT
};

#define TG_GEOMORPHON_MAX_RADIUS 1024

typedef struct tg_terrain_params
{
	double		pixel_width;	/* map units, > 0 */
	double		pixel_height;
	double		scale;			/* vertical units per horizontal unit, as tg_slope's */
	tg_slope_units slope_units;
	tg_slope_units aspect_units;	/* degrees or radians */
	/* hillshade: azimuth clockwise from north and altitude in degrees,
	 * max_bright the value of full light (32BF/64BF), z_factor an
	 * exaggeration of the relief; an 8BUI hillshade is gdaldem's bytes */
	tg_hillshade_method hillshade;
	double		azimuth;
	double		altitude;
	double		max_bright;
	double		z_factor;
	tg_tri_algorithm tri;
	tg_curvature_type curvature;
	/* geomorphons: lines of sight of up to search_radius cells (a diagonal
	 * step counts sqrt 2), the first skip cells left out, flat_threshold in
	 * degrees */
	int			search_radius;
	int			skip;
	double		flat_threshold;
	/* the products, each with its output type (32BF, 64BF; 8BUI for the
	 * hillshade and the geomorphons) and nodata value */
	int			nproducts;
	tg_terrain_product products[TG_TERRAIN_PRODUCTS];
	tg_pixtype	types[TG_TERRAIN_PRODUCTS];
	double		nodata[TG_TERRAIN_PRODUCTS];
} tg_terrain_params;

/*
 * The defaults of every option (as the SQL functions have them: scale 1,
 * degrees, light from 315 degrees at 45, 255 for full light, z factor 1,
 * the standard hillshade, Wilson's TRI, the profile curvature, geomorphons
 * of radius 3, skip 0, flat below 1 degree); no pixel size, no product.
 */
void		tg_terrain_defaults(tg_terrain_params *params);

/* ------------------------------------------------------------------------
 * Hydrology
 *
 * Neighbours are numbered 0..7 in ESRI order, clockwise from east:
 *
 *     5 6 7          32  64 128
 *     4 . 0    code  16   .   1      code = 1 << index
 *     3 2 1           8   4   2
 *
 * Outlets: valid cells on the raster edge or next to a nodata cell.  Water
 * reaching an outlet leaves the raster; a depression fill never raises one.
 * ------------------------------------------------------------------------ */

/*
 * Cell spacing in metres (or map units) per row.  Projected rasters have a
 * constant spacing; geographic ones (degrees) get metric spacing from the
 * WGS84 ellipsoid at each row's latitude.
 */
typedef struct tg_grid_geometry
{
	int			width;
	int			height;
	bool		geographic;
	double		cell_x;			/* projected: pixel width, map units */
	double		cell_y;			/* projected: pixel height, map units */
	double		lat_top;		/* geographic: latitude of row 0's centre, degrees */
	double		lat_step;		/* geographic: degrees per row (signed) */
	double		lon_step;		/* geographic: degrees per column (> 0) */
	int			row0;			/* row 0 of this grid is row `row0` of the raster
								 * (a strip of a larger grid); 0 otherwise */
} tg_grid_geometry;

typedef enum tg_fill_method
{
	TG_FILL_PRIORITY_FLOOD = 0,
	TG_FILL_PLANCHON_DARBOUX,
	TG_FILL_BREACH				/* not a fill: depressions breached (below) */
} tg_fill_method;

typedef struct tg_fill_params
{
	tg_fill_method method;
	double		epsilon;		/* >= 0: minimum rise per cell along drainage */
	tg_pixtype	out_type;		/* TG_PT_32BF or TG_PT_64BF */
} tg_fill_params;

typedef enum tg_routing
{
	TG_ROUTE_D8 = 0,			/* O'Callaghan & Mark 1984: steepest descent */
	TG_ROUTE_FD8,				/* Quinn 1991 / Freeman 1991: L_i tan(b_i)^p, fixed p */
	TG_ROUTE_MFD_MD,			/* Qin 2007: p = 8.9 min(e, 1) + 1.1 */
	TG_ROUTE_FDD8,				/* FD8 on hillslopes, D8 from `threshold` cells upslope */
	TG_ROUTE_DINF,				/* Tarboton 1997: steepest of 8 triangular facets, split
								 * between its two cells by angle */
	TG_ROUTE_ANISOTROPIC		/* Hyvaluoma, Lilja & Turtola 2013: shares whose mean
								 * and spread follow the gradient at any angle */
} tg_routing;

typedef struct tg_flow_params
{
	tg_routing	routing;
	bool		fill;			/* route on the depression-filled surface */
	double		exponent;		/* p of fd8 and fdd8 */
	double		threshold;		/* fdd8: upslope cells at which flow turns D8 */
	tg_grid_geometry geom;
} tg_flow_params;

typedef enum tg_accum_method
{
	TG_ACC_AUTO = 0,
	TG_ACC_FLOW_TRANSFER,		/* Sten 2016: iterate, pass flow one cell per step */
	TG_ACC_DEPENDENCY_TRANSFER, /* Sten 2016: a cell completes when its donors have */
	TG_ACC_INDEGREE,			/* Kahn / graph: frontier of cells with no pending donor */
	TG_ACC_TOPOLOGICAL,			/* Sten 2016: cells sorted by level, level by level */
	TG_ACC_TILED				/* GPU, D8 with integer weights: two-level tiles (only
								 * `auto` chooses it) */
} tg_accum_method;

typedef enum tg_accum_units
{
	TG_UNITS_CELLS = 0,			/* weighted cell count (each cell counts itself) */
	TG_UNITS_AREA,				/* map units squared (square metres if geographic) */
	TG_UNITS_SCA				/* specific catchment area: area per unit contour width */
} tg_accum_units;

/* Temporary storage for surfaces read more than once beyond memory. */
typedef struct tg_spill
{
	tg_status	(*write) (void *arg, size_t offset, const void *data, size_t bytes, tg_error *err);
	tg_status	(*read) (void *arg, size_t offset, void *data, size_t bytes, tg_error *err);
	void	   *arg;
} tg_spill;

/* ------------------------------------------------------------------------
 * Soil loss and travel time, on top of the flow chain
 * ------------------------------------------------------------------------ */

/* A per-cell factor: a band on the DEM's grid, or `value` where band is NULL. */
typedef struct tg_factor
{
	const tg_band *band;		/* its nodata cells make the result nodata */
	double		value;
} tg_factor;

typedef struct tg_rusle_params
{
	tg_flow_params flow;		/* routing, fill and geometry of the accumulation */
	tg_accum_method method;
	double		m;				/* exponent of the contributing area (0.4) */
	double		n;				/* exponent of the slope (1.3) */
	double		a0;				/* length of the unit plot, 22.1 m */
	double		b0;				/* sine of the unit plot's slope, 0.0896 */
	tg_factor	r;				/* rainfall erosivity */
	tg_factor	k;				/* soil erodibility */
	tg_factor	c;				/* cover management */
	tg_factor	p;				/* support practice */
} tg_rusle_params;

typedef struct tg_travel_params
{
	tg_flow_params flow;		/* routing must be D8 */
	bool		has_outlet;
	int			outlet_col;
	int			outlet_row;
	tg_factor	roughness;		/* n, > 0 */
	tg_factor	velocity;		/* K, > 0 */
	double		b;				/* exponent of the slope, >= 0 */
	double		min_slope;		/* S below this (flats) counts as this, > 0 */
	/* > 0: the outlet snaps first (tg_snap_pour_point) from the point at
	 * (outlet_x, outlet_y), in columns and rows from the grid's upper-left
	 * corner, within this distance; outlet_col and outlet_row are ignored */
	double		snap;
	double		outlet_x;
	double		outlet_y;
} tg_travel_params;

typedef struct tg_snap_params
{
	tg_flow_params flow;		/* routing must be D8; fill as the caller's function */
	double		x;				/* the point, in columns and rows from the */
	double		y;				/* grid's upper-left corner (fractional) */
	double		distance;		/* >= 0, map units; metres on geographic grids */
} tg_snap_params;

/* ------------------------------------------------------------------------
 * After the accumulation (hydro/drainage/): streams, flow lengths, height
 * above the nearest drainage, wetness.
 * ------------------------------------------------------------------------ */
typedef enum tg_stream_ordering
{
	TG_ORDER_STRAHLER = 0,		/* Strahler 1957: one more where two of the highest meet */
	TG_ORDER_SHREVE				/* Shreve 1966: the number of sources upstream */
} tg_stream_ordering;

typedef struct tg_drainage_params
{
	tg_flow_params flow;		/* fill and geometry; routing: the wetness index's only */
	tg_accum_method method;
	/* streams: the cells whose D8 accumulation, in units (cells or area), is
	 * at least threshold (> 0) */
	tg_accum_units units;
	double		threshold;
	tg_stream_ordering ordering;
	bool		upstream;		/* flow length from the divide, else down to the path's end */
	double		min_slope;		/* wetness index: tan of the slope counts at least this, > 0 */
} tg_drainage_params;

/*
 * The stream network as links (TauDEM's StreamNet): a link starts at a
 * source or at a confluence (a stream cell with no or several stream donors)
 * and runs down to the next confluence, which ends it as its last vertex, or
 * to the end of the stream.  Links are numbered from 1 in row-major order of
 * their first cells.  Vertices are cell indices; length sums the steps
 * between them (as tg_flow_length); cells and area are the upstream count
 * and area (map units squared) at the link's last cell above the confluence.
 */
typedef struct tg_stream_link
{
	int64_t		id;
	int64_t		downstream;		/* the link this one flows into; 0: none */
	uint32_t	strahler;
	uint32_t	shreve;
	double		length;
	double		cells;
	double		area;
	size_t		first;			/* vertices[first .. first + count) */
	size_t		count;
} tg_stream_link;

typedef struct tg_stream_network
{
	tg_stream_link *links;
	size_t		nlinks;
	uint32_t   *vertices;
	size_t		nvertices;
} tg_stream_network;

/*
 * Basins: every cell labelled by the first outlet on its D8 path, 0 (the
 * output's nodata) where the path meets none and on nodata.
 *   TG_BASINS_OUTLETS  every path's end (an outlet, a pit, the raster's edge),
 *                      numbered from 1 in row-major order;
 *   TG_BASINS_POINTS   pour points k = 1 .. npoints, each snapped as by
 *                      tg_snap_pour_point within snap: nested gauges, each
 *                      cell goes to its nearest downstream point (of points
 *                      on one cell, the first);
 *   TG_BASINS_LINKS    sub-basins: the stream link (tg_stream_network_build's
 *                      id) whose cells the path meets first.
 */
typedef enum tg_basin_outlets
{
	TG_BASINS_OUTLETS = 0,
	TG_BASINS_POINTS,
	TG_BASINS_LINKS
} tg_basin_outlets;

typedef struct tg_basin_params
{
	tg_drainage_params drainage;	/* fill, geometry; links: the stream threshold */
	tg_basin_outlets outlets;
	int			npoints;
	const double *xs;			/* the points in columns and rows from the grid's */
	const double *ys;			/* upper-left corner (fractional) */
	double		snap;			/* >= 0 */
} tg_basin_params;

/* ------------------------------------------------------------------------
 * Viewshed (R2 ray casting, Franklin & Ray 1994 / Osterman et al. 2014)
 *
 * Rays run from the observer's cell to every cell on the edge of the
 * analysis window (the raster, clipped to a square of max_distance around
 * the observer).  Each ray steps one column (or row) at a time along its
 * major axis; at each step the terrain is interpolated linearly between the
 * two cells the ray passes between, and the horizon is the steepest such
 * sample so far.  A cell is decided by exactly one ray, the one passing
 * closest to its centre (the nearest-ray rule): visible when the slope from
 * the observer's eye to its centre (plus target_height) is at least the
 * horizon of the samples before it.  Elevations drop by the Earth's
 * curvature, d^2 / (sqrt(d^2 + Re^2) + Re) with Re = earth_radius /
 * (1 - refraction).  R3 (the reference) samples the line of sight to every
 * cell centre at every grid line it crosses.
 * ------------------------------------------------------------------------ */
typedef enum tg_view_output
{
	TG_VIEW_VISIBLE = 0,		/* 1 visible, 0 hidden */
	TG_VIEW_ANGLE,				/* elevation angle of the target, degrees */
	TG_VIEW_HEIGHT				/* how much higher the target would have to be */
} tg_view_output;

typedef enum tg_view_algorithm
{
	TG_VIEW_R2 = 0,
	TG_VIEW_R3					/* exact reference, CPU only */
} tg_view_algorithm;

typedef struct tg_viewshed_params
{
	int			observer_col;
	int			observer_row;
	double		observer_height;	/* above the ground at the observer, >= 0 */
	double		target_height;	/* above the ground at each cell, >= 0 */
	double		max_distance;	/* metres (map units); 0 = unlimited */
	double		earth_radius;	/* 0 = a flat Earth */
	double		refraction;		/* coefficient in [0, 1) */
	double		cell_x;			/* metres (map units) per column, > 0 */
	double		cell_y;			/* metres (map units) per row, > 0 */
	tg_view_output output;
	tg_view_algorithm algorithm;
	/*
	 * Geographic rasters (geom.geographic): cell_x/cell_y are replaced by the
	 * metric spacing at the observer's latitude (WGS84), a local
	 * equirectangular approximation around each observer.
	 */
	tg_grid_geometry geom;
} tg_viewshed_params;

/* ------------------------------------------------------------------------
 * BMMQ-tree: binned min-max quadtree (Zhang & You 2013)
 *
 * Each cell gets a bin code from `nbounds` strictly increasing boundaries
 * B[0] < ... < B[n-1]: the number of boundaries <= its value, so code 0 is
 * below B[0], code k (1..n-1) is [B[k-1], B[k]) and code n is >= B[n-1].
 * Nodata (and NaN) cells get TG_BMMQ_NODATA_CODE(n), the cells that pad a
 * tile to the next power of two TG_BMMQ_PAD_CODE(n): both above every value
 * code, so no value range ever matches them.
 *
 * The tree of a W x H tile covers S x S cells, S = 2^levels the smallest
 * power of two >= max(W, H).  Level 0 is the root, level `levels` single
 * cells; a quadrant at level l is S >> l cells on a side and its Morton key
 * interleaves its column (even bits) and row (odd bits) at that level, so
 * the four children of key m are 4m (north-west), 4m+1 (north-east), 4m+2
 * (south-west), 4m+3 (south-east).  Nodes are stored breadth first, level by
 * level in Morton order, and only those whose parent is not uniform are kept:
 * node 0 is the root; first_child is the position of a node's first child
 * (its four children are consecutive) or -1 for a leaf (a uniform quadrant
 * or a single cell).
 * ------------------------------------------------------------------------ */
#define TG_BMMQ_MAX_BOUNDS 65533
#define TG_BMMQ_NODATA_CODE(nbounds) ((nbounds) + 1)
#define TG_BMMQ_PAD_CODE(nbounds) ((nbounds) + 2)
#define TG_BMMQ_MAX_LEVELS 16

typedef struct tg_bmmq_node
{
	uint16_t	min_bin;
	uint16_t	max_bin;
	int32_t		first_child;
} tg_bmmq_node;

typedef struct tg_bmmq_tree
{
	int			levels;			/* the tree covers 2^levels x 2^levels cells */
	int64_t		count;			/* nodes */
	tg_bmmq_node *nodes;		/* allocated by tg_bmmq_build with ctx's allocator */
} tg_bmmq_tree;

/* Smallest L with 2^L >= max(width, height). */
static inline int
tg_bmmq_levels(int width, int height)
{
	int			side = width > height ? width : height;
	int			levels = 0;

	while ((1 << levels) < side)
		levels++;
	return levels;
}

/*
 * Build the trees of `ntiles` bands at once (a batch keeps the GPU busy on
 * small tiles).  trees[i] receives tile i's tree; its node array is allocated
 * here with ctx's allocator (its size is known only once built) and freed by
 * tg_bmmq_tree_free.  CPU and GPU produce identical node arrays.
 */
tg_status	tg_bmmq_build(const tg_ctx *ctx, const tg_band *tiles, int ntiles,
						  const double *bounds, int nbounds, tg_bmmq_tree *trees,
						  tg_error *err);
void		tg_bmmq_tree_free(const tg_ctx *ctx, tg_bmmq_tree *tree);

/* Column and row (at its level) of a Morton key. */
void		tg_morton_decode(uint64_t key, uint32_t *col, uint32_t *row);
uint64_t	tg_morton_encode(uint32_t col, uint32_t row);

/* ------------------------------------------------------------------------
 * Operations over tiles: one raster (a single tile) or a whole tiled
 * coverage, read as one grid and written back tile by tile
 *
 * The caller lays the tiles out on one grid (their headers are enough),
 * supplies readers of their bytes and a writer of the result tiles, and
 * describes the operation; tg_run reads the tiles into the grid (decoding
 * and decompressing them on the call's threads), computes on the backend
 * the dispatcher chooses, and encodes each result tile with exactly its
 * input tile's extent.  A grid larger than the memory budget runs in strips
 * of whole tile rows where the operation allows it (slope, fill, directions
 * and D8 accumulation), else fails with TG_ELIMIT before reading a pixel.
 * Every callback is called on the calling thread only, never while it
 * could be left unanswered: after one fails, none is called again.
 * ------------------------------------------------------------------------ */
typedef enum tg_op_kind
{
	TG_OP_SLOPE = 0,
	TG_OP_FILL,
	TG_OP_DIRECTIONS,
	TG_OP_ACCUMULATION,
	TG_OP_HYDROLOGY,			/* filled DEM, receivers, accumulation */
	TG_OP_LS_FACTOR,
	TG_OP_RUSLE,
	TG_OP_TRAVEL_TIME,
	TG_OP_ISOCHRONE_BANDS,
	TG_OP_WATERSHED,
	TG_OP_SNAP_POUR_POINT,		/* 8BUI: 1 at the snapped cell; the cell also in snapped[] */
	TG_OP_VIEWSHED,
	TG_OP_VIEWSHED_COUNT,
	TG_OP_STREAM_ORDER,			/* 32BUI: the order of stream cells, 0 (nodata) elsewhere */
	TG_OP_STREAM_LINKS,			/* the Strahler order as TG_OP_STREAM_ORDER; the links in *network */
	TG_OP_BASINS,				/* 32BUI basin labels (tg_basins), 0 (nodata) outside */
	TG_OP_FLOW_LENGTH,
	TG_OP_HAND,
	TG_OP_WETNESS_INDEX,
	TG_OP_TERRAIN				/* local derivatives (tg_terrain): one output per product */
} tg_op_kind;

typedef enum tg_direction_output
{
	TG_DIRECTIONS_CODES = 0,	/* 8BUI ESRI codes (d8) */
	TG_DIRECTIONS_MASK,			/* 16BUI: the receivers' codes or-ed */
	TG_DIRECTIONS_SHARES,		/* 8 x 32BF: the share going to each neighbour */
	TG_DIRECTIONS_ANGLE			/* 32BF: the dinf flow angle, radians counter-clockwise
								 * from east; -1 (nodata) where no flow */
} tg_direction_output;

/* A per-cell factor of an operation: a constant, or band 1 of input `input` (> 0). */
typedef struct tg_op_factor
{
	int			input;			/* 0: the constant */
	double		value;
} tg_op_factor;

typedef struct tg_op
{
	tg_op_kind	kind;
	int			band;			/* of the DEM (input 0), 1-based */
	/* the output's nodata: `nodata` where has_nodata, else the operation's own */
	bool		has_nodata;
	double		nodata;

	/* slope: pixel size is the grid's */
	tg_slope_units slope_units;
	double		slope_scale;
	/* fill */
	tg_fill_method fill_method;
	double		epsilon;
	/* directions, accumulation, hydrology, LS, RUSLE, travel times (geometry: the caller's) */
	tg_flow_params flow;
	tg_direction_output directions;
	tg_accum_method method;
	tg_accum_units units;
	tg_pixtype	accumulation_type;	/* TG_PT_64BF or TG_PT_32BF */
	int			weight_input;	/* > 0: a weight coverage, its band weight_band */
	int			weight_band;
	/* LS and RUSLE */
	double		m,
				n,
				a0,
				b0;
	tg_op_factor rusle[4];		/* R, K, C, P */
	/* travel time, isochrone bands, watershed */
	bool		has_outlet;
	int			outlet_col;
	int			outlet_row;
	tg_op_factor roughness;
	tg_op_factor velocity;
	double		b;
	double		min_slope;
	double		interval;		/* isochrone bands */
	/* pour point snapping (tg_travel_params' snap, outlet_x and outlet_y);
	 * TG_OP_SNAP_POUR_POINT writes the chosen column and row to snapped[] */
	double		snap;
	double		outlet_x;
	double		outlet_y;
	int		   *snapped;
	/* streams, flow length, HAND, wetness index (with units, method, min_slope) */
	double		stream_threshold;
	tg_stream_ordering ordering;
	bool		upstream;
	tg_stream_network *network;	/* TG_OP_STREAM_LINKS: filled from ctx's allocator */
	/* basins: outlets, and the pour points (columns and rows) snapped within snap */
	tg_basin_outlets basin_outlets;
	int			npoints;
	const double *point_xs;
	const double *point_ys;
	/* viewshed: params' observer for one; cols and rows for a cumulative one */
	tg_viewshed_params view;
	int			nobservers;
	const int  *observer_cols;
	const int  *observer_rows;
	/* local derivatives: the pixel size is the grid's */
	tg_terrain_params terrain;
} tg_op;

/* A tile's place on the grid and its own georeference (given back to its result). */
typedef struct tg_tile_place
{
	int64_t		id;				/* the caller's, for messages */
	int64_t		col0;
	int64_t		row0;
	int			width;
	int			height;
	tg_georef	geo;
} tg_tile_place;

/* Tiles on one grid (of the DEM, and of the auxiliary inputs: in the DEM's places). */
typedef struct tg_layout
{
	const char *name;			/* for messages: the table, or "the raster" */
	int			width;
	int			height;
	tg_georef	geo;			/* of the grid's upper-left cell */
	int			ntiles;
	const tg_tile_place *tiles;	/* in grid order */
} tg_layout;

typedef enum tg_tile_compression
{
	TG_TILE_PLAIN = 0,
	TG_TILE_PGLZ,				/* PostgreSQL's own compression, as stored */
	TG_TILE_LZ4
} tg_tile_compression;

/* The bytes of one input tile: a serialized raster, or its compressed form. */
typedef struct tg_tile_bytes
{
	int			tile;			/* index in the layout */
	const uint8_t *data;
	size_t		size;
	tg_tile_compression compression;
	size_t		raw_size;		/* the raster's size, when compressed */
	void	   *handle;			/* the reader's own, given back by release */
} tg_tile_bytes;

typedef struct tg_tile_reader
{
	/* Start on the tiles meeting rows [row0, row0 + nrows). */
	tg_status	(*start) (void *arg, int row0, int nrows, tg_error *err);
	/* The next tile (t->tile = -1 after the last). */
	tg_status	(*next) (void *arg, tg_tile_bytes *t, tg_error *err);
	/* The core is done with a tile's bytes. */
	void		(*release) (void *arg, tg_tile_bytes *t);
	void	   *arg;
} tg_tile_reader;

/* An input: the DEM (input 0) or an auxiliary coverage on its grid. */
typedef struct tg_input
{
	const char *what;			/* for messages: "the weight coverage" */
	const tg_layout *layout;	/* tiles placed on the DEM's grid */
	tg_tile_reader reader;
	int			band;			/* 1-based */
} tg_input;

/* One result raster of a tile, serialized (4-byte length word first). */
typedef struct tg_tile_value
{
	uint8_t    *data;			/* compressed: header_room bytes, then the LZ4 block */
	size_t		size;			/* of data */
	bool		compressed;
	size_t		raw_size;		/* the raster's size, when compressed */
} tg_tile_value;

typedef struct tg_tile_writer
{
	/*
	 * The results of tile `tile` (one per output of the operation), in tile
	 * order.  *kept: the writer keeps the memory of every value (allocated
	 * with the call's allocator); otherwise it copies what it needs.
	 */
	tg_status	(*write) (void *arg, int tile, tg_tile_value *values, int nvalues, bool *kept,
						  tg_error *err);
	void	   *arg;

	/*
	 * May be NULL.  Called once before the first tile when the run holds the
	 * grid in memory (CPU or GPU path): the bytes of memory_budget it leaves
	 * unused, which the writer may fill with the tiles it keeps.
	 */
	tg_status	(*room) (void *arg, size_t bytes, tg_error *err);
	bool		compress;		/* LZ4-compress the tiles (on the call's threads) */
	size_t		header_room;	/* bytes before compressed data the writer fills in */
	size_t		max_value_size;	/* a result raster larger than this is refused (TG_ELIMIT) */
} tg_tile_writer;

/*
 * A coverage partitioned by rows of tiles over several servers (scale/parts/):
 * the coordinator (tg_parts_step) sends each part a message per phase and
 * reads back its reply; a part runs the phase as tg_run with job->part set,
 * its job's layout being the part's own tiles.  Phases: edges (the reply
 * gives the part's place on the grid and its first and last rows), scan
 * (the fill's label edges), surface, flats, heights and link (D8
 * accumulation: the routing surface kept, flats across parts resolved in
 * rounds, the flow between parts) or flow (multiple-flow accumulation: the
 * flow between parts in rounds), finish (the part writes its tiles).
 */
typedef enum tg_part_phase
{
	TG_PART_DONE = 0,
	TG_PART_EDGES,
	TG_PART_SCAN,
	TG_PART_SURFACE,
	TG_PART_FLATS,
	TG_PART_HEIGHTS,
	TG_PART_LINK,
	TG_PART_FLOW,
	TG_PART_FINISH
} tg_part_phase;

const char *tg_part_phase_name(tg_part_phase phase);

typedef struct tg_part_bytes
{
	uint8_t    *data;
	size_t		size;
} tg_part_bytes;

typedef struct tg_part
{
	tg_part_bytes message;
	tg_part_bytes reply;		/* out: allocated with the call's allocator */
	/* what the part keeps from one phase to the next: allocated with keep, which outlives the calls */
	tg_allocator keep;
	void	   *state;
} tg_part;

/* Free what a part kept (its last phase does; a caller ending early, or starting it afresh, should). */
void		tg_part_forget(tg_part *part);

/* The phase a part's message is for, from its header (TG_PART_DONE: not a part message). */
tg_part_phase tg_part_message_phase(const tg_part_bytes *message);

typedef struct tg_job
{
	const char *function;		/* for messages: the SQL function */
	const char *budget_name;	/* for messages: what sets memory_budget */
	const tg_layout *layout;	/* the DEM's */
	const tg_input *inputs;		/* [0] the DEM, then auxiliary coverages */
	int			ninputs;
	tg_tile_writer writer;
	tg_spill	spill;			/* may be empty: strips that need one are then refused */
	size_t		memory_budget;	/* bytes of host memory the job may hold */
	bool		whole;			/* one raster value: read whole, never in strips */
	/* say why a call runs as it does (strips), on the calling thread */
	void		(*notice) (void *arg, const char *message);
	void	   *notice_arg;
	tg_part    *part;			/* NULL, or one part's phase of a partitioned coverage */
	const bool *wanted;			/* per tile of the layout: whether its result is written (NULL: every tile's) */
} tg_job;

/* Outputs (result rasters per tile) an operation writes, and the bands of each. */
int			tg_op_outputs(const tg_op *op);

/*
 * The cells around a cell that a local operation reads to compute it (slope
 * and the terrain derivatives: 1, or the geomorphons' search radius); -1 for
 * an operation whose result at a cell may depend on any cell of the grid.
 */
int			tg_op_halo(const tg_op *op);

/*
 * Where an operation's result reads only some tiles (a viewshed within
 * max_distance: its observers' windows), true, with in_reach[t] (one per
 * tile of l) set for the tiles that may change it; a change elsewhere
 * leaves every result tile as it is.  False where any tile may.
 */
bool		tg_op_reach(const tg_op *op, const tg_layout *l, bool *in_reach);

tg_status	tg_run(const tg_ctx *ctx, const tg_op *op, const tg_job *job, tg_error *err);

/*
 * The coordinator: from the replies of the phase just run (none at first)
 * and the state it keeps between calls (NULL at first), the next phase
 * (TG_PART_DONE when finished; *round counts the rounds of the flats) and
 * its message for each of parts 0 .. n-1 (given in any order: their edges
 * replies place them on the grid).  names: the parts' names, for messages.
 * Messages and state are allocated with ctx's allocator.
 */
tg_status	tg_parts_step(const tg_ctx *ctx, tg_op_kind kind, int n, const char *const *names,
						  const tg_part_bytes *replies, const tg_part_bytes *state_in, tg_part_phase *phase,
						  int *round, tg_part_bytes *messages, tg_part_bytes *state_out, tg_error *err);

/* ------------------------------------------------------------------------
 * The bytes of the messages between servers (raster/tile_codec.c)
 * ------------------------------------------------------------------------ */
/*
 * zlib streams (header and checksum included): the room, the size made at
 * level 1 (fastest) to 9 (smallest) (0: failed), all of src into dst_size bytes
 */
size_t		tg_zlib_bound(size_t size);
size_t		tg_zlib_compress(const uint8_t *src, size_t src_size, uint8_t *dst, size_t dst_capacity, int level);
bool		tg_zlib_decompress(const uint8_t *src, size_t src_size, uint8_t *dst, size_t dst_size);

/*
 * Varints (7 bits a byte, the low ones first, at most 10 bytes): v into
 * out, its length; from the n bytes at p into *v, the bytes read (0: cut
 * short or longer than 10 bytes).
 */
size_t		tg_varint_put(uint64_t v, uint8_t out[10]);
size_t		tg_varint_get(const uint8_t *p, size_t n, uint64_t *v);

#ifdef __cplusplus
}
#endif

#endif							/* TG_CORE_H */
