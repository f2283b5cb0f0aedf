/*
 * part_wire.h — the byte strings of the messages between the coordinator
 * and the parts: writers that grow as they go, readers that check every
 * length and count before they read (a bad message leaves r->bad set), and
 * the compact forms rows travel in.  Messages and replies are in native
 * byte order, which the first word checks.  Rows of values travel as
 * varints of their differences where every value is an integer (integer
 * DEMs), else as floats where each is exact in one, else as doubles;
 * labels and cell numbers as varints of differences.  Private to
 * scale/parts/.
 */
#ifndef TG_PART_WIRE_H
#define TG_PART_WIRE_H

#include "scale/parts/parts.h"

#include <math.h>
#include <string.h>

#define PART_MAGIC 0x54475031u	/* "TGP1" */
#define STATE_MAGIC 0x54475053u	/* "TGPS" */
#define REPLY 0x80				/* a reply's type: its phase | REPLY */
#define BARE 0x40				/* a message's type without the part's header (the flow's later rounds) */

/* ------------------------------------------------------------------------
 * Byte strings
 * ------------------------------------------------------------------------ */
typedef struct writer
{
	const tg_ctx *ctx;
	uint8_t    *data;
	size_t		size;
	size_t		cap;
	bool		failed;
} writer;

static inline void
put(writer *w, const void *p, size_t n)
{
	if (w->failed || n == 0)
		return;
	if (w->size + n > w->cap)
	{
		size_t		cap = w->cap ? w->cap : 256;
		uint8_t    *d;

		while (cap < w->size + n)
			cap *= 2;
		d = tg_alloc(w->ctx, cap);
		if (d == NULL)
		{
			w->failed = true;
			return;
		}
		if (w->size)
			memcpy(d, w->data, w->size);
		tg_free(w->ctx, w->data);
		w->data = d;
		w->cap = cap;
	}
	memcpy(w->data + w->size, p, n);
	w->size += n;
}

static inline void
put_i32(writer *w, int32_t v)
{
	put(w, &v, sizeof v);
}

static inline void
put_u8(writer *w, uint8_t v)
{
	put(w, &v, 1);
}

static inline void
put_varint(writer *w, uint64_t v)
{
	uint8_t		b[10];

	put(w, b, tg_varint_put(v, b));
}

/* A signed number as an unsigned one, small either side of 0 (zigzag), and back. */
static inline uint64_t
zigzag(int64_t v)
{
	return ((uint64_t) v << 1) ^ (uint64_t) -(int64_t) ((uint64_t) v >> 63);
}

static inline int64_t
unzigzag(uint64_t z)
{
	return (int64_t) ((z >> 1) ^ (uint64_t) -(int64_t) (z & 1));
}

/* How put_values writes a row of values. */
enum
{
	VALUES_DOUBLE, VALUES_FLOAT, VALUES_INTEGER
};

#define INTEGER_LIMIT 4503599627370496.0	/* 2^52: integers and their differences exact in doubles */

/* Is v an integer put_values may write as one (its sign and bits come back the same)? */
static inline bool
integer_value(double v)
{
	return fabs(v) < INTEGER_LIMIT && v == trunc(v) && !(v == 0 && signbit(v));
}

/*
 * n values: where each is NaN or an integer (a DEM of integers, its filled
 * surface, cell counts) as varints of the difference from the one before
 * (0 for NaN, else 1 + the difference zigzagged): neighbouring cells differ
 * a little; else as floats where every one is exact as a float (NaN
 * included), else as doubles.
 */
static inline void
put_values(writer *w, const double *v, size_t n)
{
	bool		integer = true,
				single = true;

	for (size_t i = 0; i < n && (integer || single); i++)
	{
		integer = integer && (isnan(v[i]) || integer_value(v[i]));
		single = single && (isnan(v[i]) || (double) (float) v[i] == v[i]);
	}
	put_u8(w, integer ? VALUES_INTEGER : single ? VALUES_FLOAT : VALUES_DOUBLE);
	if (integer)
	{
		int64_t		prev = 0;

		for (size_t i = 0; i < n; i++)
			if (isnan(v[i]))
				put_u8(w, 0);
			else
			{
				const int64_t d = (int64_t) v[i] - prev;

				put_varint(w, 1 + zigzag(d));
				prev = (int64_t) v[i];
			}
	}
	else if (single)
		for (size_t i = 0; i < n; i++)
		{
			const float f = (float) v[i];

			put(w, &f, sizeof f);
		}
	else
		put(w, v, n * sizeof(double));
}

/*
 * n labels (or sorted columns) as varints of their differences from the
 * one before plus one, zigzagged: a row's labels mostly run on by one, and
 * their zeros compress well.
 */
static inline void
put_runs(writer *w, const uint32_t *v, size_t n)
{
	uint32_t	prev = UINT32_MAX;

	for (size_t i = 0; i < n; i++)
	{
		const uint32_t d = v[i] - prev - 1;

		put_varint(w, zigzag((int32_t) d));
		prev = v[i];
	}
}

static inline void
put_header(writer *w, uint8_t type, tg_op_kind kind)
{
	put_i32(w, (int32_t) PART_MAGIC);
	put_u8(w, type);
	put_u8(w, (uint8_t) kind);
}

static inline tg_status
writer_done(writer *w, tg_part_bytes *out, tg_error *err)
{
	if (w->failed)
	{
		tg_free(w->ctx, w->data);
		return tg_error_set(err, TG_ENOMEM, "could not allocate a message of %zu bytes", w->size);
	}
	out->data = w->data;
	out->size = w->size;
	return TG_OK;
}

typedef struct reader
{
	const uint8_t *p;
	size_t		left;
	bool		bad;
} reader;

static inline void
get(reader *r, void *out, size_t n)
{
	if (r->bad || n > r->left)
	{
		r->bad = true;
		memset(out, 0, n);
		return;
	}
	memcpy(out, r->p, n);
	r->p += n;
	r->left -= n;
}

static inline int32_t
get_i32(reader *r)
{
	int32_t		v;

	get(r, &v, sizeof v);
	return v;
}

static inline uint8_t
get_u8(reader *r)
{
	uint8_t		v;

	get(r, &v, 1);
	return v;
}

static inline uint64_t
get_varint(reader *r)
{
	uint64_t	v = 0;
	const size_t k = r->bad ? 0 : tg_varint_get(r->p, r->left, &v);

	if (k == 0)
	{
		r->bad = true;
		return 0;
	}
	r->p += k;
	r->left -= k;
	return v;
}

/* n values (put_values) into v. */
static inline void
get_values(reader *r, double *v, size_t n)
{
	const uint8_t mode = get_u8(r);
	const size_t size = mode == VALUES_FLOAT ? sizeof(float) : sizeof(double);

	if (mode == VALUES_INTEGER)
	{
		int64_t		prev = 0;

		for (size_t i = 0; i < n && !r->bad; i++)
		{
			const uint64_t code = get_varint(r);
			const int64_t d = unzigzag(code - 1);

			if (code == 0)
				v[i] = NAN;
			else if (fabs((double) prev + (double) d) >= INTEGER_LIMIT)
				r->bad = true;
			else
				v[i] = (double) (prev += d);
		}
		return;
	}
	if (r->bad || mode > VALUES_INTEGER || n > r->left / size)
	{
		r->bad = true;
		return;
	}
	for (size_t i = 0; i < n; i++)
	{
		if (mode == VALUES_FLOAT)
		{
			float		f;

			memcpy(&f, r->p + i * size, size);
			v[i] = f;
		}
		else
			memcpy(&v[i], r->p + i * size, size);
	}
	r->p += n * size;
	r->left -= n * size;
}

/*
 * n cell numbers as varints of their differences from the one before,
 * zigzagged: sorted or repeated ones take a byte or two.
 */
static inline void
put_cells(writer *w, const int64_t *v, size_t n, size_t stride)
{
	uint64_t	prev = 0;

	for (size_t i = 0; i < n; i++)
	{
		int64_t		c;

		memcpy(&c, (const uint8_t *) v + i * stride, sizeof c);
		put_varint(w, zigzag((int64_t) ((uint64_t) c - prev)));
		prev = (uint64_t) c;
	}
}

static inline void
get_cells(reader *r, int64_t *v, size_t n, size_t stride)
{
	uint64_t	prev = 0;

	for (size_t i = 0; i < n && !r->bad; i++)
	{
		const int64_t c = (int64_t) (prev + (uint64_t) unzigzag(get_varint(r)));

		memcpy((uint8_t *) v + i * stride, &c, sizeof c);
		prev = (uint64_t) c;
	}
}

/* n labels (put_runs) into v. */
static inline void
get_runs(reader *r, uint32_t *v, size_t n)
{
	uint32_t	prev = UINT32_MAX;

	for (size_t i = 0; i < n && !r->bad; i++)
	{
		const int64_t d = unzigzag(get_varint(r));

		if (d < INT32_MIN || d > INT32_MAX)
			r->bad = true;
		v[i] = prev + 1 + (uint32_t) d;
		prev = v[i];
	}
}

/*
 * Sections: a length (a varint), then that many bytes.  begin_section
 * leaves a byte for the length; end_section makes room for a longer one.
 */
static inline size_t
begin_section(writer *w)
{
	const size_t at = w->size;

	put_u8(w, 0);
	return at;
}

static inline void
end_section(writer *w, size_t at)
{
	const size_t len = w->size - at - 1;
	uint8_t		head[10];
	const size_t k = tg_varint_put(len, head);

	for (size_t more = 1; more < k; more++)
		put_u8(w, 0);
	if (w->failed)
		return;
	memmove(w->data + at + k, w->data + at + 1, len);
	memcpy(w->data + at, head, k);
}

static inline void
put_section(writer *w, const uint8_t *data, size_t len)
{
	put_varint(w, len);
	if (len)
		put(w, data, len);
}

/* The next section of r as a reader of its own. */
static inline reader
get_section(reader *r)
{
	const uint64_t len = get_varint(r);
	reader		sec = {NULL, 0, false};

	if (r->bad || len > r->left)
		r->bad = sec.bad = true;
	else
	{
		sec.p = r->p;
		sec.left = len;
		r->p += len;
		r->left -= len;
	}
	return sec;
}

/* Open a message or reply of `type`; its operation into *kind. */
static inline tg_status
open_reader(reader *r, const tg_part_bytes *b, uint8_t type, tg_op_kind *kind, const char *what,
			tg_error *err)
{
	uint32_t	magic;

	r->p = b->data;
	r->left = b->data ? b->size : 0;
	r->bad = false;
	get(r, &magic, sizeof magic);
	if (!r->bad && magic == __builtin_bswap32(PART_MAGIC))
		return tg_error_set(err, TG_EUNSUPPORTED, "%s comes from a server of the other byte order", what);
	if (r->bad || magic != PART_MAGIC || get_u8(r) != type)
		return tg_error_set(err, TG_EDATA, "%s is not a part message of the expected kind", what);
	*kind = (tg_op_kind) get_u8(r);
	return TG_OK;
}

static inline tg_status
reader_done(const reader *r, const char *what, tg_error *err)
{
	if (r->bad || r->left != 0)
		return tg_error_set(err, TG_EDATA, "%s is truncated or has trailing bytes", what);
	return TG_OK;
}

#endif							/* TG_PART_WIRE_H */
