/*
 * tgpg_args.c — read scalar arguments of non-strict functions.  A NULL where
 * a value is required is 22004 (null_value_not_allowed), naming the argument.
 */
#include "tgpg.h"

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
