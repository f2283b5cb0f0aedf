/*
 * tg_error.c — status names, error recording, execution context defaults.
 */
#include "tg_core.h"
#include "runtime/runtime.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
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

static void *
malloc_alloc(size_t size, void *arg)
{
	(void) arg;
	return malloc(size);
}

static void
malloc_free(void *ptr, void *arg)
{
	(void) arg;
	free(ptr);
}

void
tg_ctx_init(tg_ctx *ctx)
{
	memset(ctx, 0, sizeof *ctx);
	ctx->backend = TG_BACKEND_AUTO;
	ctx->min_cells_for_gpu = 0;
	ctx->allocator.alloc = malloc_alloc;
	ctx->allocator.free = malloc_free;
}

/*
 * Grids are touched once each, in full: with 4 kB pages most of a pass's
 * time can go to the kernel faulting pages in.  Large buffers ask for huge
 * pages where the system leaves it to the program (transparent huge pages
 * in "madvise" mode); the advice covers whole huge pages inside the buffer.
 */
#define HUGE_PAGE ((size_t) 2 << 20)

static void
advise_huge_pages(void *p, size_t size)
{
#ifdef MADV_HUGEPAGE
	uintptr_t	start = ((uintptr_t) p + HUGE_PAGE - 1) & ~(uintptr_t) (HUGE_PAGE - 1);
	uintptr_t	end = ((uintptr_t) p + size) & ~(uintptr_t) (HUGE_PAGE - 1);

	if (end > start)
		(void) madvise((void *) start, end - start, MADV_HUGEPAGE);
#endif
}

void *
tg_alloc(const tg_ctx *ctx, size_t size)
{
	void	   *p = tg_block_take(ctx, size);	/* one the call freed: its pages are in */

	if (p != NULL)
		return p;
	p = ctx->allocator.alloc(size, ctx->allocator.arg);
	if (p != NULL && size >= 2 * HUGE_PAGE)
		advise_huge_pages(p, size);
	if (p != NULL)
		tg_block_track(ctx, p, size);
	return p;
}

void
tg_free(const tg_ctx *ctx, void *ptr)
{
	if (ptr != NULL && !tg_block_keep(ctx, ptr))
		ctx->allocator.free(ptr, ctx->allocator.arg);
}
