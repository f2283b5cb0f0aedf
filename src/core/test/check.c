/*
 * check.c — the test framework's counted checks and random state (test.h),
 * shared by the core test programs.
 */
#include "test.h"

int			n_pass;
int			n_fail;
uint64_t	rng_state = 0x9E3779B97F4A7C15ull;

void
check(bool ok, const char *fmt,...)
{
	va_list		ap;

	if (ok)
	{
		n_pass++;
		return;
	}
	n_fail++;
	fprintf(stderr, "FAIL: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
