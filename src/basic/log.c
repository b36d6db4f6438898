/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
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

int log_internal(int level, int error, const char *func, const char *fmt, ...)
{
	char msg[1024];
	int saved = errno, e = error < 0 ? -error : error;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (e)
		fprintf(stderr, "uexec[%d]: %s: %s: %s\n", (int)getpid(), level_name(level), msg,
			strerror(e));
	else
		fprintf(stderr, "uexec[%d]: %s: %s\n", (int)getpid(), level_name(level), msg);
	errno = saved;
	return -e;
}
