/* SPDX-License-Identifier: MIT */
/*
 * Logging to stderr. proto/ and uring/ never log; sandbox/ logs only what an
 * operator must act on (docs/ARCHITECTURE.md, "Rules").
 * log_*_errno() return -abs(r) so that `return log_error_errno(r, "...");` works.
 *
 * Two formats (--log-format): text, "uexec[pid]: <level>: msg", and json, one
 * object per line: {"time","level","event","session","process","message",
 * "fields"}. Plain log_*() lines have the event "log" and no fields; the lines
 * an operator alerts on go through log_event() with an event name and
 * structured fields. The audit log (--audit-log) is a second sink of JSON
 * lines formatted by log_audit() and written by whoever set its sink.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <syslog.h>

#include "buf.h"
#include "macro.h"

enum log_format {
	LOG_FORMAT_TEXT,
	LOG_FORMAT_JSON,
};

void log_set_max_level(int level);
int log_get_max_level(void);
void log_set_format(enum log_format f);
enum log_format log_get_format(void);
/* "debug", "info", ... -> LOG_*; -EINVAL for another name. */
int log_level_from_string(const char *s);
/* Writes one line to stderr in the current format. Returns -abs(error) (0 if error == 0). */
int log_internal(int level, int error, const char *func, const char *fmt, ...) _printf_(4, 5);

/* A structured field of log_event() and log_audit(). */
enum log_field_type {
	LOG_F_STR,   /* s[0..len) (len SIZE_MAX: NUL-terminated); NULL: null */
	LOG_F_INT,
	LOG_F_BOOL,
	LOG_F_STRV,  /* v[0..n) NUL-terminated strings */
	LOG_F_OBJ,   /* sub[0..n): a nested object */
};

struct log_field {
	const char *key;
	enum log_field_type type;
	const char *s;
	size_t len;
	int64_t i;
	const char *const *v;
	const struct log_field *sub;
	size_t n;
};

#define LOG_STR(k, str) ((struct log_field){ .key = (k), .type = LOG_F_STR, .s = (str), .len = SIZE_MAX })
#define LOG_STRN(k, str, l) ((struct log_field){ .key = (k), .type = LOG_F_STR, .s = (str), .len = (l) })
#define LOG_INT(k, x) ((struct log_field){ .key = (k), .type = LOG_F_INT, .i = (int64_t)(x) })
#define LOG_BOOL(k, b) ((struct log_field){ .key = (k), .type = LOG_F_BOOL, .i = !!(b) })
#define LOG_STRV(k, vec, cnt) ((struct log_field){ .key = (k), .type = LOG_F_STRV, .v = (vec), .n = (cnt) })
#define LOG_OBJ(k, f, cnt) ((struct log_field){ .key = (k), .type = LOG_F_OBJ, .sub = (f), .n = (cnt) })

/* Who a structured line is about (either may be NULL; process may hold NUL bytes). */
struct log_ctx {
	const char *session;
	const char *process;
	size_t process_len;
};

/*
 * A line with an event name and fields: in text format the message alone (as
 * log_internal), in JSON format the event, ctx and fields too. Returns 0.
 */
int log_event_internal(int level, const char *event, const struct log_ctx *ctx,
		       const struct log_field *fields, size_t n, const char *fmt, ...) _printf_(6, 7);
#define log_event(level, event, ctx, fields, n, ...)                                           \
	((level) <= log_get_max_level() ? log_event_internal(level, event, ctx, fields, n, __VA_ARGS__) \
					: 0)

/*
 * JSON string escaping of any bytes s[0..len): the quotes, backslash and
 * control characters escaped, valid UTF-8 kept, every byte of an invalid
 * sequence written as U+FFFD. Appends the quoted string. 0 or -ENOMEM.
 */
int log_json_string(struct buf *b, const char *s, size_t len);
/* Appends {"key":value,...} for fields[0..n). 0 or -ENOMEM. */
int log_json_fields(struct buf *b, const struct log_field *fields, size_t n);
/* RFC 3339 UTC time with milliseconds ("2026-01-02T03:04:05.678Z") of now into out[32]. */
void log_format_time(char out[32]);

/*
 * A text-format log message made safe for a line of its own: newline, CR and
 * tab become \n, \r, \t, other control bytes (and DEL) \xNN; the rest is
 * copied. Truncated to fit out[size] (NUL-terminated).
 */
void log_text_escape(const char *s, char *out, size_t size);

/*
 * The audit log: log_audit() formats one JSON line {"time","event",...fields}
 * ending in a newline and hands it whole to the sink, which owns the writing
 * (src/server/audit.c queues it for the ring: this leaf does no I/O for it).
 * NULL: no audit log; log_audit_enabled() is false and log_audit() does
 * nothing.
 */
typedef void (*log_audit_sink_fn)(void *userdata, const char *line, size_t len);
void log_audit_set_sink(log_audit_sink_fn fn, void *userdata);
bool log_audit_enabled(void);
void log_audit(const char *event, const struct log_field *fields, size_t n);

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

/* True when rl's budget allows a line now (writes the "Suppressed N" line first if due). */
bool log_ratelimit_pass(struct log_ratelimit *rl, int level, const char *func);

#define log_event_ratelimited(level, event, ctx, fields, n, ...)                               \
	({                                                                                     \
		static struct log_ratelimit _rl_; /* one per call site */                      \
		int _l_ = (level);                                                             \
		(_l_ <= log_get_max_level() && log_ratelimit_pass(&_rl_, _l_, __func__))       \
			? log_event_internal(_l_, event, ctx, fields, n, __VA_ARGS__)          \
			: 0;                                                                   \
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
