/*
 * tgpg_error.c — map a core tg_error to an SQLSTATE, in exactly one place.
 *
 *   TG_EINVAL        22023 invalid_parameter_value
 *   TG_EDATA         22000 data_exception (malformed or truncated raster)
 *   TG_ENOMEM        53200 out_of_memory, detail names host or GPU memory
 *   TG_ELIMIT        54000 program_limit_exceeded
 *   TG_EUNSUPPORTED  0A000 feature_not_supported
 *   TG_ENODEVICE     0A000 feature_not_supported, hint to use the CPU
 *   TG_EDEVICE       XX000 internal_error, CUDA error in the detail
 *   TG_ECANCELED     the pending cancel/terminate is processed as usual
 */
#include "tgpg.h"

#include "miscadmin.h"

static int
sqlstate_for(tg_status code)
{
	switch (code)
	{
		case TG_EINVAL:
			return ERRCODE_INVALID_PARAMETER_VALUE;
		case TG_EDATA:
			return ERRCODE_DATA_EXCEPTION;
		case TG_ENOMEM:
			return ERRCODE_OUT_OF_MEMORY;
		case TG_ELIMIT:
			return ERRCODE_PROGRAM_LIMIT_EXCEEDED;
		case TG_EUNSUPPORTED:
		case TG_ENODEVICE:
			return ERRCODE_FEATURE_NOT_SUPPORTED;
		case TG_ECANCELED:
			return ERRCODE_QUERY_CANCELED;
		case TG_OK:
		case TG_EDEVICE:
		case TG_ECALLBACK:		/* raised as the callback's own error, never here */
			break;
	}
	return ERRCODE_INTERNAL_ERROR;
}

void
tgpg_raise(const tg_error *err)
{
	const char *detail = err->detail;
	char		memory_detail[sizeof err->detail + 64];

	if (err->code == TG_ECANCELED)
	{
		/* the core stopped because an interrupt is pending: let it fire */
		CHECK_FOR_INTERRUPTS();
	}
	if (err->code == TG_ENOMEM)
	{
		snprintf(memory_detail, sizeof memory_detail, "%s%s%s",
				 err->on_device ? "GPU (device) memory is exhausted." : "Host memory is exhausted.",
				 err->detail[0] ? " " : "", err->detail);
		detail = memory_detail;
	}

	ereport(ERROR,
			(errcode(sqlstate_for(err->code)),
			 errmsg("%s", err->message[0] ? err->message : tg_status_name(err->code)),
			 detail[0] ? errdetail_internal("%s", detail) : 0,
			 err->hint[0] ? errhint("%s", err->hint) : 0));
	pg_unreachable();
}
