/*
 * error.c — status and backend names, error recording.
 */
#include "tg_core.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *
tg_status_name(tg_status code)
{
	switch (code)
	{
		case TG_OK:
			return "ok";
		case TG_EINVAL:
			return "invalid argument";
		case TG_EDATA:
			return "bad data";
		case TG_ENOMEM:
			return "out of memory";
		case TG_ELIMIT:
			return "size limit exceeded";
		case TG_EUNSUPPORTED:
			return "not supported";
		case TG_ENODEVICE:
			return "no GPU device";
		case TG_EDEVICE:
			return "GPU failure";
		case TG_ECANCELED:
			return "canceled";
		case TG_ECALLBACK:
			return "the caller's callback failed";
	}
	return "unknown status";
}

const char *
tg_backend_name(tg_backend b)
{
	switch (b)
	{
		case TG_BACKEND_AUTO:
			return "auto";
		case TG_BACKEND_CPU:
			return "cpu";
		case TG_BACKEND_GPU:
			return "gpu";
	}
	return "unknown";
}

tg_status
tg_error_set(tg_error *err, tg_status code, const char *fmt,...)
{
	va_list		ap;

	if (err == NULL || err->code != TG_OK)
		return code;			/* the first error wins */
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof err->message, fmt, ap);
	va_end(ap);
	return code;
}

/* Fill an optional text field once; later calls keep the first text. */
static void set_once(char *field, size_t size, const char *fmt, va_list ap)
			__attribute__((format(printf, 3, 0)));

static void
set_once(char *field, size_t size, const char *fmt, va_list ap)
{
	if (field[0] == '\0')
		vsnprintf(field, size, fmt, ap);
}

void
tg_error_detail(tg_error *err, const char *fmt,...)
{
	va_list		ap;

	if (err == NULL)
		return;
	va_start(ap, fmt);
	set_once(err->detail, sizeof err->detail, fmt, ap);
	va_end(ap);
}

void
tg_error_hint(tg_error *err, const char *fmt,...)
{
	va_list		ap;

	if (err == NULL)
		return;
	va_start(ap, fmt);
	set_once(err->hint, sizeof err->hint, fmt, ap);
	va_end(ap);
}

void
tg_error_clear(tg_error *err)
{
	memset(err, 0, sizeof *err);
}
