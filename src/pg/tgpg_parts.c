/*
 * tgpg_parts.c — a coverage partitioned over several servers: the two C
 * functions under tg_create_partitioned_result (sql/terra_gpu.sql), which
 * moves their byte strings between the servers with dblink.
 *
 *   terra_gpu._part_exec(query, message)  on a worker: runs the query (a
 *                                         coverage function over the worker's
 *                                         own table) as one part's phase,
 *                                         returns the reply
 *   terra_gpu._parts_step(operation, ...) on the coordinator: the next phase
 *                                         and its message for every part, from
 *                                         the replies of the phase just run and
 *                                         the state it keeps between phases
 *
 * and the one under tg_refresh of a global product, which runs the parts
 * (bands of rows of tiles of the product's source) one after another in the
 * calling backend, each keeping its own state:
 *
 *   terra_gpu._product_band(product, band, tiles, message)
 *                                         one band's phase of the product's
 *                                         recipe (terra_gpu._product_band_run)
 *
 * The message reaches the coverage function through tgpg_part_take, which
 * the first coverage call of the query makes (tgpg_tiles.c).  What a part
 * keeps between phases lives in a memory context under the transaction's,
 * so that it goes when the transaction ends (or is prepared), whatever
 * happens; so does the layout of the part's table (every tile's place),
 * read once in the first phase: the transaction reads one snapshot
 * (repeatable read), and a flow of many rounds would otherwise read every
 * tile's header again in each.  Messages and replies between servers travel
 * zlib-compressed (smallest) where that makes them smaller; a band's replies,
 * kept beside its product, are compressed fastest, its messages not at all.
 */
#include "tgpg.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "miscadmin.h"
#include "utils/acl.h"

/* The part the running terra_gpu._part_exec hands to its query's coverage call. */
typedef struct pending_part
{
	tg_part		part;
	bool		taken;
	MemoryContext cxt;			/* where the reply is kept */
} pending_part;

static pending_part *pending = NULL;

/* The part's table's layout, kept between phases too. */
typedef struct kept_table
{
	Oid			relid;
	char	   *rast_column;
	char	   *id_column;		/* NULL: none */
	int			band;
	tg_layout	layout;
} kept_table;

/*
 * What each part this backend runs keeps between phases, by slot (a worker's
 * one part: 0; a product's bands: their numbers), in kept_cxt (under
 * TopTransactionContext).
 */
typedef struct kept_part
{
	void	   *state;
	kept_table *layout;
} kept_part;

static kept_part *kept = NULL;
static int	nkept = 0;
static int	kept_slot = 0;		/* the slot of the part running now */
static MemoryContext kept_cxt = NULL;

/* A product refreshed in bands has at most this many (a row of tiles each). */
#define MAX_SLOTS 1000000

static void
kept_reset(void *arg)
{
	kept = NULL;
	nkept = 0;
	kept_slot = 0;
	kept_cxt = NULL;
}

static void *
kept_alloc(size_t size, void *arg)
{
	return MemoryContextAllocExtended((MemoryContext) arg, size, MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
}

static void
kept_free(void *ptr, void *arg)
{
	pfree(ptr);
}

/* cxt (one under the transaction's), on_reset called as it goes. */
static MemoryContext
with_reset(MemoryContext cxt, MemoryContextCallbackFunction on_reset)
{
	MemoryContextCallback *cb = MemoryContextAlloc(cxt, sizeof *cb);

	cb->func = on_reset;
	cb->arg = NULL;
	MemoryContextRegisterResetCallback(cxt, cb);
	return cxt;
}

static void
keep_between_phases(tg_part *part, int slot)
{
	if (kept_cxt == NULL)
		kept_cxt = with_reset(AllocSetContextCreate(TopTransactionContext, "terra_gpu part", ALLOCSET_DEFAULT_SIZES),
							  kept_reset);
	if (slot >= nkept)
	{
		int			n = Max(slot + 1, 2 * nkept);

		kept = kept == NULL ? MemoryContextAlloc(kept_cxt, n * sizeof(kept_part))
			: repalloc(kept, n * sizeof(kept_part));
		memset(kept + nkept, 0, (n - nkept) * sizeof(kept_part));
		nkept = n;
	}
	kept_slot = slot;
	part->keep.alloc = kept_alloc;
	part->keep.free = kept_free;
	part->keep.arg = kept_cxt;
	part->state = kept[slot].state;
	/* an edges message starts a run afresh: what the slot kept from an earlier one goes */
	if (tg_part_message_phase(&part->message) == TG_PART_EDGES)
	{
		tg_part_forget(part);
		part->state = NULL;
		kept[slot].layout = NULL;
	}
}

tg_part *
tgpg_part_take(void)
{
	if (pending == NULL || pending->taken)
		return NULL;
	pending->taken = true;
	return &pending->part;
}

/* Only the coverage call that is to take the part (its query's first) reads or keeps the layout. */
static bool
part_call_opening(void)
{
	return pending != NULL && !pending->taken && kept_cxt != NULL;
}

const tg_layout *
tgpg_part_layout(Oid relid, const char *rast_column, const char *id_column, int band)
{
	const kept_table *k;

	if (!part_call_opening())
		return NULL;
	k = kept[kept_slot].layout;
	if (k == NULL || k->relid != relid || k->band != band ||
		strcmp(k->rast_column, rast_column) != 0 || (k->id_column == NULL) != (id_column == NULL) ||
		(id_column != NULL && strcmp(k->id_column, id_column) != 0))
		return NULL;
	return &k->layout;
}

void
tgpg_part_keep_layout(Oid relid, const char *rast_column, const char *id_column, int band,
					  const tg_layout *layout)
{
	kept_table *k;
	tg_tile_place *tiles;

	if (!part_call_opening())
		return;
	k = MemoryContextAllocZero(kept_cxt, sizeof *k);
	tiles = MemoryContextAllocHuge(kept_cxt, sizeof(tg_tile_place) * Max(layout->ntiles, 1));
	memcpy(tiles, layout->tiles, sizeof(tg_tile_place) * layout->ntiles);
	k->relid = relid;
	k->rast_column = MemoryContextStrdup(kept_cxt, rast_column);
	k->id_column = id_column ? MemoryContextStrdup(kept_cxt, id_column) : NULL;
	k->band = band;
	k->layout = *layout;
	k->layout.name = NULL;		/* each call names it */
	k->layout.tiles = tiles;
	kept[kept_slot].layout = k;
}

void
tgpg_part_keep_reply(tg_part *part)
{
	if (pending == NULL || part != &pending->part || part->reply.data == NULL)
		return;
	part->reply.data = memcpy(MemoryContextAllocHuge(pending->cxt, part->reply.size), part->reply.data,
							  part->reply.size);
}

/* ------------------------------------------------------------------------
 * Packing: one byte 0 and the bytes as they are, or one byte 1, the plain
 * size as a varint and the bytes as a zlib stream (its checksum guards
 * them); nothing for an empty message
 * ------------------------------------------------------------------------ */
#define PACK_HEADER 11			/* at most: the byte and a varint of 64 bits */
#define PACK_SMALL 32			/* messages shorter than this go as they are */
#define ZLIB_MAX_RATIO 1032		/* deflate's greatest expansion of plain bytes */
#define ZLIB_NONE 0				/* pack as they are */
#define ZLIB_FASTEST 1			/* a band's replies, kept beside its product */
#define ZLIB_SMALLEST 9			/* what crosses the network */

static bytea *
pack(const uint8_t *data, size_t size, int zlib_level)
{
	const size_t room = tg_zlib_bound(size);
	bytea	   *out;
	uint8_t    *p;
	size_t		n = 0,
				head = 1;

	if (room == 0 || room > MaxAllocSize - VARHDRSZ - PACK_HEADER)
		ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						errmsg("a part message of %zu bytes is too large", size)));
	out = palloc(VARHDRSZ + PACK_HEADER + room);
	p = (uint8_t *) VARDATA(out);
	/* nothing to say (a part the flow's round leaves out) stays nothing */
	if (size == 0)
	{
		SET_VARSIZE(out, VARHDRSZ);
		return out;
	}
	/* compressed: 1, the size as a varint, the stream; kept where shorter than 0 and the bytes */
	p[0] = 1;
	head += tg_varint_put(size, p + 1);
	if (zlib_level != ZLIB_NONE && size >= PACK_SMALL)
		n = tg_zlib_compress(data, size, p + head, room, zlib_level);
	if (n == 0 || head + n >= size + 1)
	{
		p[0] = 0;
		memcpy(p + 1, data, size);
		SET_VARSIZE(out, VARHDRSZ + 1 + size);
		return out;
	}
	SET_VARSIZE(out, VARHDRSZ + head + n);
	return out;
}

static tg_part_bytes
unpack(bytea *in, const char *what)
{
	const size_t n = VARSIZE_ANY_EXHDR(in);
	const uint8_t *p = (const uint8_t *) VARDATA_ANY(in);
	tg_part_bytes b = {NULL, 0};
	uint64_t	size = 0;
	size_t		head = 1;

	if (n == 0)
		return b;
	if (p[0] == 0)
	{
		b.data = palloc(n);
		b.size = n - 1;
		memcpy(b.data, p + 1, n - 1);
		return b;
	}
	if (p[0] != 1)
		ereport(ERROR, (errcode(ERRCODE_DATA_EXCEPTION), errmsg("%s is not a packed part message", what)));
	head += tg_varint_get(p + 1, n - 1, &size);
	/* deflate expands at most about 1032 to 1: a larger claim is a lie, not worth an allocation */
	if (head == 1 || head >= n || size > MaxAllocSize || size > (uint64_t) (n - head) * ZLIB_MAX_RATIO + 64)
		ereport(ERROR, (errcode(ERRCODE_DATA_EXCEPTION), errmsg("%s is not a packed part message", what)));
	b.data = palloc(size + 1);
	b.size = size;
	if (!tg_zlib_decompress(p + head, n - head, b.data, size))
		ereport(ERROR, (errcode(ERRCODE_DATA_EXCEPTION), errmsg("%s is corrupt", what)));
	return b;
}

/* ------------------------------------------------------------------------
 * A worker's phase
 * ------------------------------------------------------------------------ */
/*
 * One part's phase: the query (its parameters the n values of types) run
 * with the part pending for its first coverage call, the message (unpacked)
 * its phase's, the part's state kept in slot; the reply, packed at zlib_level.
 */
static bytea *
run_part(const char *query, int nargs, Oid *types, Datum *values, tg_part_bytes message, int slot,
		 int zlib_level)
{
	pending_part p;

	if (pending != NULL)
		ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						errmsg("a part's phase cannot run inside another")));
	memset(&p, 0, sizeof p);
	p.part.message = message;
	p.cxt = CurrentMemoryContext;
	keep_between_phases(&p.part, slot);
	/* a product's bands keep their states side by side: together, within the budget */
	if (MemoryContextMemAllocated(kept_cxt, true) > tgpg_memory_budget())
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY),
						errmsg("the parts kept in this transaction hold %zu MB, more than terra_gpu.max_memory_mb (%zu MB)",
							   MemoryContextMemAllocated(kept_cxt, true) >> 20, tgpg_memory_budget() >> 20),
						errhint("A refresh in bands keeps the state of every band it computes until the band's "
								"last phase; its first refresh computes every band.")));
	pending = &p;
	PG_TRY();
	{
		SPI_connect();
		if (SPI_execute_with_args(query, nargs, types, values, NULL, false, 0) < 0)
			elog(ERROR, "a part's query failed");
		SPI_finish();
	}
	PG_FINALLY();
	{
		pending = NULL;
		kept[slot].state = p.part.state;
	}
	PG_END_TRY();
	if (!p.taken || p.part.reply.data == NULL)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("the part's query ran no coverage function as a part"),
						errhint("The query calls a terra_gpu coverage function once, over the worker's table.")));
	return pack(p.part.reply.data, p.part.reply.size, zlib_level);
}

PG_FUNCTION_INFO_V1(tgpg_part_exec);
Datum
tgpg_part_exec(PG_FUNCTION_ARGS)
{
	PG_RETURN_BYTEA_P(run_part(text_to_cstring(PG_GETARG_TEXT_PP(0)), 0, NULL, NULL,
							   unpack(PG_GETARG_BYTEA_PP(1), "the message"), 0, ZLIB_SMALLEST));
}

/* ------------------------------------------------------------------------
 * A product's band (tg_refresh)
 * ------------------------------------------------------------------------ */
PG_FUNCTION_INFO_V1(tgpg_product_band);
Datum
tgpg_product_band(PG_FUNCTION_ARGS)
{
	Oid			product = PG_GETARG_OID(0);
	int			band = PG_GETARG_INT32(1);
	Oid			types[3] = {REGCLASSOID, INT8ARRAYOID, BOOLOID};
	Datum		values[3];
	tg_part_bytes message;

	if (!pg_class_ownercheck(product, GetUserId()))
		ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
						errmsg("must be owner of table %s",
							   DatumGetCString(DirectFunctionCall1(regclassout, ObjectIdGetDatum(product))))));
	if (band < 0 || band >= MAX_SLOTS)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("band %d is out of range (0 to %d)", band, MAX_SLOTS - 1)));
	message = unpack(PG_GETARG_BYTEA_PP(3), "the message");
	values[0] = PG_GETARG_DATUM(0);
	values[1] = PG_GETARG_DATUM(2);
	/* only the finish phase gives rows to write */
	values[2] = BoolGetDatum(tg_part_message_phase(&message) == TG_PART_FINISH);
	PG_RETURN_BYTEA_P(run_part("SELECT terra_gpu._product_band_run($1, $2, $3)", 3, types, values, message, band,
							   ZLIB_FASTEST));
}

/* ------------------------------------------------------------------------
 * The coordinator's steps
 * ------------------------------------------------------------------------ */
static const tgpg_word part_operations[] = {
	{"tg_fill", TG_OP_FILL}, {"tg_slope", TG_OP_SLOPE}, {"tg_flow_direction", TG_OP_DIRECTIONS},
	{"tg_flow_accumulation", TG_OP_ACCUMULATION}, {"tg_hydrology", TG_OP_HYDROLOGY},
};

/* The n elements of a bytea[], each unpacked; 22004 on a NULL element. */
static tg_part_bytes *
unpack_array(ArrayType *a, int n, const char *what)
{
	tg_part_bytes *out = palloc0(n * sizeof(tg_part_bytes));
	Datum	   *values;
	bool	   *nulls;
	int			count;

	deconstruct_array(a, BYTEAOID, -1, false, TYPALIGN_INT, &values, &nulls, &count);
	if (count != n)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("%s has %d elements for %d servers", what, count, n)));
	for (int i = 0; i < n; i++)
	{
		if (nulls[i])
			ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s has a NULL element", what)));
		out[i] = unpack(DatumGetByteaPP(values[i]), what);
	}
	return out;
}

/*
 * A product's bands: the coordinator's state stays in this backend between
 * steps (it grows to megabytes, and the driver would copy it several times
 * a step), under the transaction's memory; the driver holds a token, which
 * names the run the state is of.
 */
typedef struct kept_coordinator
{
	uint64		run;			/* 0: none */
	uint8_t    *data;
	size_t		size;
	MemoryContext cxt;
} kept_coordinator;

static kept_coordinator kept_coord = {0, NULL, 0, NULL};
static uint64 coordinator_runs = 0;

#define TOKEN_MAGIC 0x54474254u	/* "TGBT" */
#define TOKEN_SIZE (sizeof(uint32) + sizeof(uint64))

static void
kept_coordinator_reset(void *arg)
{
	kept_coord = (kept_coordinator) {0, NULL, 0, NULL};
}

/* The run is over: its state goes now, not with the transaction. */
static void
forget_state(void)
{
	if (kept_coord.data)
		pfree(kept_coord.data);
	kept_coord.data = NULL;
	kept_coord.size = 0;
	kept_coord.run = 0;
}

/* The state the token names; 22023 where it names no run of this transaction's. */
static tg_part_bytes
kept_state_of(bytea *token)
{
	uint32		magic;
	uint64		run;

	if (VARSIZE_ANY_EXHDR(token) != TOKEN_SIZE)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("the coordinator's state is not a token of a run in this transaction")));
	memcpy(&magic, VARDATA_ANY(token), sizeof magic);
	memcpy(&run, VARDATA_ANY(token) + sizeof magic, sizeof run);
	if (magic != TOKEN_MAGIC || run == 0 || run != kept_coord.run)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("the coordinator's state is not a token of a run in this transaction")));
	return (tg_part_bytes) {kept_coord.data, kept_coord.size};
}

/* Keep the state for the next step (state_in may be the kept one: it goes after); its token. */
static bytea *
keep_state(const tg_part_bytes *state, bool first)
{
	uint8_t    *data;
	bytea	   *token = palloc(VARHDRSZ + TOKEN_SIZE);
	const uint32 magic = TOKEN_MAGIC;

	if (kept_coord.cxt == NULL)
		kept_coord.cxt = with_reset(AllocSetContextCreate(TopTransactionContext, "terra_gpu coordinator",
														  ALLOCSET_DEFAULT_SIZES),
									kept_coordinator_reset);
	data = MemoryContextAllocHuge(kept_coord.cxt, Max(state->size, 1));
	memcpy(data, state->data, state->size);
	if (kept_coord.data)
		pfree(kept_coord.data);
	kept_coord.data = data;
	kept_coord.size = state->size;
	if (first)
		kept_coord.run = ++coordinator_runs;
	SET_VARSIZE(token, VARHDRSZ + TOKEN_SIZE);
	memcpy(VARDATA(token), &magic, sizeof magic);
	memcpy(VARDATA(token) + sizeof magic, &kept_coord.run, sizeof kept_coord.run);
	return token;
}

/*
 * The coordinator's step; bands: a product's bands in this backend, whose
 * messages go as they are (only their digests are kept) and whose state is
 * kept here (a token in and out); else parts on other servers, the messages
 * compressed and the state itself in and out.
 */
static Datum
parts_step(FunctionCallInfo fcinfo, bool bands)
{
	TupleDesc	desc;
	int			kind,
				n,
				round = 0;
	Datum	   *servers;
	bool	   *nulls;
	const char **names;
	tg_part_bytes *replies = NULL,
			   *msgs,
				state_in = {NULL, 0},
				state_out;
	tg_part_phase phase;
	Datum		values[4];
	bool		isnull[4] = {false, false, false, false};
	Datum	   *out;
	tgpg_guard	guard;
	tg_ctx		ctx;
	tg_error	err;
	tg_status	st;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "terra_gpu._parts_step must return a record");
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("operation and servers must not be NULL")));
	kind = tgpg_lookup("operation", text_to_cstring(PG_GETARG_TEXT_PP(0)), TGPG_WORDS(part_operations));
	deconstruct_array(PG_GETARG_ARRAYTYPE_P(1), TEXTOID, -1, false, TYPALIGN_INT, &servers, &nulls, &n);
	if (n < 1)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("servers must not be empty")));
	names = palloc(n * sizeof(char *));
	for (int i = 0; i < n; i++)
		names[i] = nulls[i] ? "?" : TextDatumGetCString(servers[i]);
	if (!PG_ARGISNULL(2))
		replies = unpack_array(PG_GETARG_ARRAYTYPE_P(2), n, "replies");
	if (!PG_ARGISNULL(3) && bands)
		state_in = kept_state_of(PG_GETARG_BYTEA_PP(3));
	else if (!PG_ARGISNULL(3))
	{
		bytea	   *b = PG_GETARG_BYTEA_P(3);

		state_in.data = (uint8_t *) VARDATA(b);
		state_in.size = VARSIZE(b) - VARHDRSZ;
	}
	msgs = palloc0(n * sizeof(tg_part_bytes));
	tgpg_guard_init(&guard, "tg_parts_step");
	tgpg_ctx_init(&ctx, &guard, TG_BACKEND_CPU);
	tg_error_clear(&err);
	st = tg_parts_step(&ctx, (tg_op_kind) kind, n, names, replies, PG_ARGISNULL(3) ? NULL : &state_in, &phase,
					   &round, msgs, &state_out, &err);
	tgpg_finish(&guard, st, &err);
	values[0] = CStringGetTextDatum(tg_part_phase_name(phase));
	values[1] = Int32GetDatum(round);
	if (phase == TG_PART_DONE)
	{
		isnull[2] = isnull[3] = true;
		values[2] = values[3] = (Datum) 0;
		if (bands)
			forget_state();
	}
	else
	{
		out = palloc(n * sizeof(Datum));
		for (int i = 0; i < n; i++)
			out[i] = PointerGetDatum(pack(msgs[i].data, msgs[i].size, bands ? ZLIB_NONE : ZLIB_SMALLEST));
		values[2] = PointerGetDatum(construct_array(out, n, BYTEAOID, -1, false, TYPALIGN_INT));
		if (bands)
			values[3] = PointerGetDatum(keep_state(&state_out, PG_ARGISNULL(3)));
		else
		{
			bytea	   *b = palloc(VARHDRSZ + state_out.size);

			SET_VARSIZE(b, VARHDRSZ + state_out.size);
			memcpy(VARDATA(b), state_out.data, state_out.size);
			values[3] = PointerGetDatum(b);
		}
	}
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, isnull)));
}

PG_FUNCTION_INFO_V1(tgpg_parts_step);
Datum
tgpg_parts_step(PG_FUNCTION_ARGS)
{
	return parts_step(fcinfo, false);
}

PG_FUNCTION_INFO_V1(tgpg_bands_step);
Datum
tgpg_bands_step(PG_FUNCTION_ARGS)
{
	return parts_step(fcinfo, true);
}
