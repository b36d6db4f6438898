/* SPDX-License-Identifier: MIT */
/*
 * Small macros used everywhere: cleanup attributes, ownership hand-over,
 * array sizes. Leaf header: depends on libc only.
 */
#pragma once

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define _unused_ __attribute__((unused))
#define _noreturn_ __attribute__((noreturn))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _warn_unused_result_ __attribute__((warn_unused_result))
#define _likely_(x) __builtin_expect(!!(x), 1)
#define _unlikely_(x) __builtin_expect(!!(x), 0)

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - __builtin_offsetof(type, member)))

/* Hand over ownership of a pointer or fd held by a cleanup-guarded local. */
#define TAKE_PTR(p)                             \
	({                                      \
		__typeof__(p) _tp_ = (p);       \
		(p) = NULL;                     \
		_tp_;                           \
	})
#define TAKE_FD(fd)                             \
	({                                      \
		int _tf_ = (fd);                \
		(fd) = -1;                      \
		_tf_;                           \
	})

static inline void freep(void *p)
{
	free(*(void **)p);
}

/* Closes fd if >= 0, preserving errno. Always returns -1 so callers can write fd = safe_close(fd). */
static inline int safe_close(int fd)
{
	if (fd >= 0) {
		int saved = errno;
		(void)close(fd);
		errno = saved;
	}
	return -1;
}

static inline void closep(int *fd)
{
	safe_close(*fd);
}

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)

/* Declares foo_freep() for a foo_free() that accepts NULL. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)   \
	static inline void func##p(type *p)       \
	{                                         \
		if (*p)                           \
			func(*p);                 \
	}
