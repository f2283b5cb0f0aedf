/*
 * tgpg_args.c — the arguments of a terra_gpu function, by name.
 *
 * The names come from the function's own declaration (pg_proc), read once
 * per call site; every declared argument must have a description, and each
 * is checked against it (NULL where a value is needed: 22004; a word not in
 * its vocabulary, a number out of range: 22023) before any work.
 */
#include "tgpg.h"

#include <ctype.h>
#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/syscache.h"

/* What a call site keeps of the function's declaration. */
typedef struct declared
{
	Oid			fn_oid;
	int			nargs;
	char	  **names;
} declared;

/* Arguments a form has besides the shared ones: its input, and a table's columns. */
static bool
own_argument(int index, const char *name)
{
	return index == 0 || strcmp(name, "rast_column") == 0 || strcmp(name, "id_column") == 0 ||
		strcmp(name, "weight_column") == 0;
}

static const declared *
declaration(FunctionCallInfo fcinfo)
{
	FmgrInfo   *flinfo = fcinfo->flinfo;
	declared   *d = flinfo->fn_extra;
	HeapTuple	tup;
	Oid		   *types;
	char	  **names;
	char	   *modes;
	int			n;

	if (d != NULL && d->fn_oid == flinfo->fn_oid)
		return d;
	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(flinfo->fn_oid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for function %u", flinfo->fn_oid);
	n = get_func_arg_info(tup, &types, &names, &modes);
	d = MemoryContextAllocZero(flinfo->fn_mcxt, sizeof *d);
	d->fn_oid = flinfo->fn_oid;
	d->nargs = 0;
	d->names = MemoryContextAlloc(flinfo->fn_mcxt, sizeof(char *) * Max(n, 1));
	for (int i = 0; i < n; i++)
		if (modes == NULL || modes[i] == PROARGMODE_IN || modes[i] == PROARGMODE_INOUT ||
			modes[i] == PROARGMODE_VARIADIC)
			d->names[d->nargs++] = MemoryContextStrdup(flinfo->fn_mcxt, names ? names[i] : "");
	ReleaseSysCache(tup);
	flinfo->fn_extra = d;
	return d;
}

static const tgpg_param *
describe(const tgpg_args *a, const char *name)
{
	for (const tgpg_param *p = a->params; p->name; p++)
		if (strcmp(p->name, name) == 0)
			return p;
	return NULL;
}

int
tgpg_arg_index(const tgpg_args *a, const char *name)
{
	for (int i = 0; i < a->nargs && i < a->fcinfo->nargs; i++)
		if (strcmp(a->names[i], name) == 0)
			return i;
	return -1;
}

/* Whitespace-trimmed, case-insensitive; with `prefix`, three or more leading letters match too. */
static int
find_word(const char *given, const tgpg_word *words, int count, bool prefix)
{
	size_t		n;

	while (isspace((unsigned char) *given))
		given++;
	n = strlen(given);
	while (n > 0 && isspace((unsigned char) given[n - 1]))
		n--;
	for (int i = 0; i < count; i++)
		if ((n == strlen(words[i].name) || (prefix && n >= 3 && n < strlen(words[i].name))) &&
			pg_strncasecmp(given, words[i].name, n) == 0)
			return i;
	return -1;
}

int
tgpg_lookup(const char *what, const char *given, const tgpg_word *words, int count)
{
	StringInfoData valid;
	int			i = find_word(given, words, count, false);

	if (i >= 0)
		return words[i].value;
	initStringInfo(&valid);
	for (i = 0; i < count; i++)
		appendStringInfo(&valid, "%s%s", i == 0 ? "" : i == count - 1 ? " and " : ", ", words[i].name);
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid %s \"%s\"", what, given),
			 errdetail("Valid values are %s.", valid.data)));
	pg_unreachable();
}

static void
check_number(const tgpg_param *p, double v)
{
	const char *need = NULL;

	if ((p->checks & TGPG_POSITIVE) && (!(v > 0) || isinf(v)))
		need = "a positive number";
	else if ((p->checks & TGPG_NONNEGATIVE) && (!(v >= 0) || isinf(v)))
		need = "zero or a positive number";
	else if ((p->checks & TGPG_FRACTION) && !(v >= 0 && v < 1))
		need = "in [0, 1)";
	if (need)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be %s, got %g", p->name, need, v),
				 p->hint ? errhint("%s", p->hint) : 0));
}

/*
 * The words of a text[] (22004 for a NULL one, 22023 for none, an unknown
 * one or one given twice) as their values; returns how many.
 */
static int
word_list(const tgpg_param *p, Datum array, int *values, int max)
{
	Datum	   *items;
	bool	   *nulls;
	int			n;

	deconstruct_array(DatumGetArrayTypeP(array), TEXTOID, -1, false, TYPALIGN_INT, &items, &nulls, &n);
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must name at least one", p->name)));
	if (n > max)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s names %d, at most %d are possible", p->name, n, max)));
	for (int i = 0; i < n; i++)
	{
		const char *given;
		int			w;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s must not hold NULL", p->name)));
		given = TextDatumGetCString(items[i]);
		w = find_word(given, p->words, p->nwords, false);
		values[i] = w >= 0 ? p->words[w].value : tgpg_lookup(p->name, given, p->words, p->nwords);
		for (int q = 0; q < i; q++)
			if (values[q] == values[i])
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("%s names \"%s\" twice", p->name, given)));
	}
	return n;
}

/* The checks of one argument against its description. */
static void
check_argument(const tgpg_args *a, int i, const tgpg_param *p)
{
	FunctionCallInfo fcinfo = a->fcinfo;

	if (PG_ARGISNULL(i))
	{
		if (!(p->checks & TGPG_OPTIONAL))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s must not be NULL", p->name)));
		return;
	}
	switch (p->kind)
	{
		case TGPG_FLOAT:
			check_number(p, PG_GETARG_FLOAT8(i));
			break;
		case TGPG_WORD:
			if (find_word(TextDatumGetCString(PG_GETARG_DATUM(i)), p->words, p->nwords,
						  (p->checks & TGPG_PREFIX) != 0) < 0)
				(void) tgpg_lookup(p->name, TextDatumGetCString(PG_GETARG_DATUM(i)), p->words, p->nwords);
			break;
		case TGPG_WORD_LIST:
			{
				int		   *values = palloc(sizeof(int) * p->nwords);

				(void) word_list(p, PG_GETARG_DATUM(i), values, p->nwords);
				pfree(values);
				break;
			}
		default:
			break;
	}
}

void
tgpg_args_open(tgpg_args *a, FunctionCallInfo fcinfo, const char *function, const tgpg_param *params)
{
	const declared *d = declaration(fcinfo);

	a->fcinfo = fcinfo;
	a->function = function;
	a->params = params;
	a->nargs = d->nargs;
	a->names = d->names;
	a->coverage = get_fn_expr_argtype(fcinfo->flinfo, 0) == REGCLASSOID;
	for (int i = 0; i < a->nargs && i < PG_NARGS(); i++)
	{
		const tgpg_param *p;

		if (own_argument(i, a->names[i]))
			continue;
		p = describe(a, a->names[i]);
		if (p == NULL)
			elog(ERROR, "%s: argument \"%s\" has no description", function, a->names[i]);
		check_argument(a, i, p);
	}
}

/* The index of a described argument the function declares (an error otherwise). */
static int
index_of(const tgpg_args *a, const char *name)
{
	const int	i = tgpg_arg_index(a, name);

	if (i < 0)
		elog(ERROR, "%s: no argument \"%s\"", a->function, name);
	return i;
}

bool
tgpg_given(const tgpg_args *a, const char *name)
{
	const int	i = tgpg_arg_index(a, name);

	return i >= 0 && !a->fcinfo->args[i].isnull;
}

int32
tgpg_int(const tgpg_args *a, const char *name)
{
	return DatumGetInt32(tgpg_datum(a, name));
}

double
tgpg_float(const tgpg_args *a, const char *name)
{
	return DatumGetFloat8(tgpg_datum(a, name));
}

bool
tgpg_bool(const tgpg_args *a, const char *name)
{
	return DatumGetBool(tgpg_datum(a, name));
}

char *
tgpg_text(const tgpg_args *a, const char *name)
{
	return TextDatumGetCString(tgpg_datum(a, name));
}

int
tgpg_word_value(const tgpg_args *a, const char *name)
{
	const tgpg_param *p = describe(a, name);
	const char *given = tgpg_text(a, name);
	int			i = find_word(given, p->words, p->nwords, (p->checks & TGPG_PREFIX) != 0);

	return i >= 0 ? p->words[i].value : tgpg_lookup(name, given, p->words, p->nwords);
}

int
tgpg_word_list(const tgpg_args *a, const char *name, int *values, int max)
{
	return word_list(describe(a, name), tgpg_datum(a, name), values, max);
}

Datum
tgpg_datum(const tgpg_args *a, const char *name)
{
	const int	i = index_of(a, name);

	if (a->fcinfo->args[i].isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be NULL", name)));
	return a->fcinfo->args[i].value;
}

Oid
tgpg_type(const tgpg_args *a, const char *name)
{
	return get_fn_expr_argtype(a->fcinfo->flinfo, index_of(a, name));
}

const tgpg_word tgpg_backends[3] = {
	{"auto", TG_BACKEND_AUTO}, {"cpu", TG_BACKEND_CPU}, {"gpu", TG_BACKEND_GPU},
};

int
tgpg_backend_arg(const tgpg_args *a)
{
	return tgpg_given(a, "backend") ? tgpg_word_value(a, "backend") : tgpg_backend;
}

int
tgpg_backend_word(const char *given)
{
	return given ? tgpg_lookup("backend", given, tgpg_backends, lengthof(tgpg_backends)) : tgpg_backend;
}
