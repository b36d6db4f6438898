/* SPDX-License-Identifier: MIT */
/*
 * Logging to stderr. Only src/ logs above debug (see docs/ARCHITECTURE.md).
 * log_*_errno() return -abs(r) so that `return log_error_errno(r, "...");` works.
 */
#pragma once

#include <stdbool.h>
#include <syslog.h>

#include "macro.h"

void log_set_max_level(int level);
int log_get_max_level(void);
/* Writes one line "uexec[pid]: <level>: msg" to stderr. Returns -abs(error) (0 if error == 0). */
int log_internal(int level, int error, const char *func, const char *fmt, ...) _printf_(4, 5);

#define log_full_errno(level, error, ...)                                                      \
	({                                                                                     \
		int _l_ = (level), _e_ = (error);                                              \
		(_l_ <= log_get_max_level()) ? log_internal(_l_, _e_, __func__, __VA_ARGS__)   \
					     : -(_e_ < 0 ? -_e_ : _e_);                        \
	})

#define log_debug(...) log_full_errno(LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...) log_full_errno(LOG_INFO, 0, __VA_ARGS__)
#define log_notice(...) log_full_errno(LOG_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) log_full_errno(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...) log_full_errno(LOG_ERR, 0, __VA_ARGS__)
#define log_debug_errno(e, ...) log_full_errno(LOG_DEBUG, e, __VA_ARGS__)
#define log_info_errno(e, ...) log_full_errno(LOG_INFO, e, __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_WARNING, e, __VA_ARGS__)
#define log_error_errno(e, ...) log_full_errno(LOG_ERR, e, __VA_ARGS__)
