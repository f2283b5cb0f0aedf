/*
 * tgpg_args.c — read scalar arguments of non-strict functions.  A NULL where
 * a value is required is 22004 (null_value_not_allowed), naming the argument.
 */
#include "tgpg.h"

#include "lib/stringinfo.h"
#include "utils/builtins.h"

static void
require(FunctionCallInfo fcinfo, int argno, const char *name)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be NULL", name)));
}

int32
tgpg_arg_int32(FunctionCallInfo fcinfo, int argno, const char *name)
{
	require(fcinfo, argno, name);
	return PG_GETARG_INT32(argno);
}

double
tgpg_arg_float8(FunctionCallInfo fcinfo, int argno, const char *name)
{
	require(fcinfo, argno, name);
	return PG_GETARG_FLOAT8(argno);
}

char *
tgpg_arg_cstring(FunctionCallInfo fcinfo, int argno, const char *name)
{
	require(fcinfo, argno, name);
	return text_to_cstring(PG_GETARG_TEXT_PP(argno));
}

/* Look a name up (case-insensitively) or raise 22023 listing the valid ones. */
int
tgpg_lookup(const char *what, const char *given, const tgpg_name *names, int count)
{
	StringInfoData valid;
	int			i;

	for (i = 0; i < count; i++)
		if (pg_strcasecmp(given, names[i].name) == 0)
			return names[i].value;
	initStringInfo(&valid);
	for (i = 0; i < count; i++)
		appendStringInfo(&valid, "%s%s", i == 0 ? "" : i == count - 1 ? " and " : ", ", names[i].name);
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid %s \"%s\"", what, given),
			 errdetail("Valid values are %s.", valid.data)));
	pg_unreachable();
}
