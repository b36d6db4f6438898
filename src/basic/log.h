/* SPDX-License-Identifier: MIT */
/*
 * Logging to stderr. proto/ and uring/ never log; sandbox/ logs only what an
 * operator must act on (docs/ARCHITECTURE.md, "Rules").
 * log_*_errno() return -abs(r) so that `return log_error_errno(r, "...");` works.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
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

/*
 * Rate-limited logging for lines a client can trigger over and over: each
 * call site writes at most LOG_RATELIMIT_BURST lines per
 * LOG_RATELIMIT_INTERVAL_MS; the first line written after some were dropped
 * is preceded by "Suppressed N messages like the next one".
 */
#define LOG_RATELIMIT_INTERVAL_MS 5000
#define LOG_RATELIMIT_BURST 10

struct log_ratelimit {
	uint64_t begin_ms;   /* start of the current interval (CLOCK_MONOTONIC + 1), 0: none yet */
	unsigned n;          /* lines written in it */
	unsigned suppressed; /* lines dropped since the last one written */
};

/* log_internal() unless rl's budget for the current interval is spent. */
int log_internal_ratelimited(struct log_ratelimit *rl, int level, int error, const char *func,
			     const char *fmt, ...) _printf_(5, 6);

#define log_full_errno_ratelimited(level, error, ...)                                          \
	({                                                                                     \
		static struct log_ratelimit _rl_; /* one per call site */                      \
		int _l_ = (level), _e_ = (error);                                              \
		(_l_ <= log_get_max_level())                                                   \
			? log_internal_ratelimited(&_rl_, _l_, _e_, __func__, __VA_ARGS__)     \
			: -(_e_ < 0 ? -_e_ : _e_);                                             \
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

#define log_info_ratelimited(...) log_full_errno_ratelimited(LOG_INFO, 0, __VA_ARGS__)
#define log_warning_ratelimited(...) log_full_errno_ratelimited(LOG_WARNING, 0, __VA_ARGS__)
#define log_error_ratelimited(...) log_full_errno_ratelimited(LOG_ERR, 0, __VA_ARGS__)
#define log_info_errno_ratelimited(e, ...) log_full_errno_ratelimited(LOG_INFO, e, __VA_ARGS__)
#define log_warning_errno_ratelimited(e, ...) log_full_errno_ratelimited(LOG_WARNING, e, __VA_ARGS__)
#define log_error_errno_ratelimited(e, ...) log_full_errno_ratelimited(LOG_ERR, e, __VA_ARGS__)
