/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static int max_level = LOG_INFO;

void log_set_max_level(int level)
{
	max_level = level;
}

int log_get_max_level(void)
{
	return max_level;
}

static const char *level_name(int level)
{
	switch (level) {
	case LOG_DEBUG:
		return "debug";
	case LOG_INFO:
		return "info";
	case LOG_NOTICE:
		return "notice";
	case LOG_WARNING:
		return "warning";
	default:
		return "error";
	}
}

static int log_writev(int level, int error, const char *fmt, va_list ap)
{
	char msg[1024];
	int saved = errno, e = error < 0 ? -error : error;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (e)
		fprintf(stderr, "uexec[%d]: %s: %s: %s\n", (int)getpid(), level_name(level), msg,
			strerror(e));
	else
		fprintf(stderr, "uexec[%d]: %s: %s\n", (int)getpid(), level_name(level), msg);
	errno = saved;
	return -e;
}

int log_internal(int level, int error, const char *func, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = log_writev(level, error, fmt, ap);
	va_end(ap);
	return r;
}

int log_internal_ratelimited(struct log_ratelimit *rl, int level, int error, const char *func,
			     const char *fmt, ...)
{
	int saved = errno, e = error < 0 ? -error : error, r;
	struct timespec ts;
	uint64_t now;
	va_list ap;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000 + 1; /* never 0 */
	if (rl->begin_ms == 0 || now - rl->begin_ms >= LOG_RATELIMIT_INTERVAL_MS) {
		rl->begin_ms = now;
		rl->n = 0;
	}
	if (rl->n >= LOG_RATELIMIT_BURST) {
		rl->suppressed++;
		errno = saved;
		return -e;
	}
	rl->n++;
	if (rl->suppressed > 0) {
		log_internal(level, 0, func, "Suppressed %u messages like the next one", rl->suppressed);
		rl->suppressed = 0;
	}
	errno = saved; /* for %m */
	va_start(ap, fmt);
	r = log_writev(level, error, fmt, ap);
	va_end(ap);
	return r;
}
