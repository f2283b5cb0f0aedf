/*
 * tiles.h — the core tests' coverage of tiles in memory (test_run.c and
 * fuzz_parts.c): a DEM cut into serialized int16 tiles (edge tiles smaller,
 * one missing, some LZ4- or pglz-compressed), the readers, writer and spill
 * tg_run takes, and a coverage split into parts run phase by phase as the
 * coordinator says.
 */
#ifndef TG_TEST_TILES_H
#define TG_TEST_TILES_H

#include "test.h"

#define GW 230
#define GH 190
#define TILE_W 48
#define TILE_H 16
#define ND (-32768.0)
#define MISSING 7				/* a tile the table lacks: row 1, column 2 */
#define NPARTS 3

typedef struct stored
{
	uint8_t    *bytes;			/* as the reader hands it */
	size_t		size;
	tg_tile_compression compression;
	size_t		raw_size;
} stored;

typedef struct coverage
{
	tg_layout	layout;
	tg_tile_place places[128];
	stored		tiles[128];		/* by place */
	int			next;
	int			row0,
				nrows;
} coverage;

/* The written tiles, decompressed, by tile index and output. */
typedef struct results
{
	uint8_t    *tile[128][3];
	size_t		size[128][3];
	int			written;
	bool		saw_compressed;
	bool		in_order;
	int			last;
	bool		keep;			/* the writer keeps every value, as a raster form does */
	tg_tile_value kept[128][3];
	int			room_calls;		/* times the run told the writer its room */
	size_t		room;			/* the last room told */
	int			written_at_room;	/* tiles written by then */
} results;

/* The backend tg_run takes (run_job), the parts' (run_parts), whatever the reference's */
extern tg_backend run_backend;
extern size_t run_device_limit;	/* tg_ctx.device_memory_limit of run_job's runs (0: none) */
extern int	writer_fails_at;	/* the writer fails on its tile of this number (1-based; 0: never) */
extern const bool *run_wanted;	/* tg_job.wanted of run_job's runs (NULL: every tile) */
extern tg_backend parts_backend;
extern int	encode_starts;		/* times a run's encode phase began */
/* the last run's "write" progress: whether it ever went back, and its last fraction */
extern bool write_went_back;
extern double write_last;
/* the last run's reports of phases within strips, and whether their strips' progress ever went back */
extern int	strip_reports;
extern bool strip_went_back;
extern int	parts_left_out;		/* parts left out of a round of the flow, over the runs so far */
extern int	parts_threads;		/* each part's threads in run_parts (2) */

void		make_coverage(coverage *c, const int16_t *dem, bool tiled);
/* A result tile's plain bytes (malloc'ed; NULL if it does not decompress). */
uint8_t    *plain_copy(const tg_tile_value *v, size_t *size);
void		res_free(results *r);
tg_status	run_job(coverage *c, coverage *weights, const tg_op *op, int threads, size_t budget, bool compress,
					bool keep, tg_part *part, results *r, tg_run_stats *stats, tg_error *err);
tg_status	run_on(coverage *c, coverage *weights, const tg_op *op, int threads, size_t budget, bool compress,
				   bool keep, results *r, tg_run_stats *stats, tg_error *err);
/* An operation of kind over the test grid, every option at a usable value. */
tg_op		base_op(tg_op_kind kind);

/* malloc and free as a part's allocator (tg_part.keep) */
void	   *test_alloc(size_t size, void *arg);
void		test_free(void *ptr, void *arg);

/* Part k of NPARTS of c: its rows of tiles, as a coverage of its own (the tiles' bytes shared). */
void		make_part(const coverage *c, int k, coverage *p);

/*
 * What run_parts hands a hook before it is read: each message to a part,
 * each reply, the coordinator's state between its steps.  The hook may
 * change the bytes (malloc'ed: it may free and replace them); step counts
 * the coordinator's steps from 0.
 */
typedef enum parts_bytes_kind
{
	PARTS_MESSAGE,
	PARTS_REPLY,
	PARTS_STATE
} parts_bytes_kind;

typedef struct parts_tamper
{
	void		(*bytes) (void *arg, int step, parts_bytes_kind kind, int part, tg_part_bytes *b);
	void	   *arg;
} parts_tamper;

/*
 * Run op over the parts (given to the coordinator in the order `given`),
 * phase by phase as the coordinator says; the finished parts' tiles into
 * r[k], the rounds of the flats and of the flow into rounds[].  The status
 * of the first failure, its message in err.  tamper: NULL, or a hook.
 */
tg_status	run_parts(coverage *parts, const int *given, int n, const tg_op *op, results *r, int rounds[2],
					  const parts_tamper *tamper, tg_error *err);

#endif							/* TG_TEST_TILES_H */
