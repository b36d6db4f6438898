/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "utf8-lead.h"

static int max_level = LOG_INFO;
static enum log_format format = LOG_FORMAT_TEXT;
static log_audit_sink_fn audit_sink;
static void *audit_sink_data;

void log_set_max_level(int level)
{
	max_level = level;
}

int log_get_max_level(void)
{
	return max_level;
}

void log_set_format(enum log_format f)
{
	format = f;
}

enum log_format log_get_format(void)
{
	return format;
}

int log_level_from_string(const char *s)
{
	static const struct {
		const char *name;
		int level;
	} levels[] = {
		{ "debug", LOG_DEBUG }, { "info", LOG_INFO }, { "warning", LOG_WARNING }, { "error", LOG_ERR },
	};

	for (size_t i = 0; i < ELEMENTSOF(levels); i++)
		if (strcmp(s, levels[i].name) == 0)
			return levels[i].level;
	return -EINVAL;
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

/* Length of the valid UTF-8 sequence at s[0..len), 0 if it is not one. */
static size_t utf8_seq(const uint8_t *s, size_t len)
{
	uint8_t lo, hi;
	size_t n = utf8_lead(s[0], &lo, &hi);

	if (n <= 1)
		return n;
	if (len < n || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

int log_json_string(struct buf *b, const char *str, size_t len)
{
	const uint8_t *s = (const uint8_t *)str;
	size_t i = 0, run = 0;
	char esc[8];
	int r;

	if (buf_reserve(b, len + 2) < 0 || buf_append(b, "\"", 1) < 0)
		return -ENOMEM;
	while (i < len) {
		uint8_t c = s[i];
		size_t n = 0;
		const char *e = NULL;

		if (c >= 0x20 && c != '"' && c != '\\' && c != 0x7f) {
			n = utf8_seq(s + i, len - i);
			if (n) {
				i += n;
				run += n;
				continue;
			}
		}
		/* flush the plain run before s[i] */
		r = buf_append(b, s + i - run, run);
		if (r < 0)
			return r;
		run = 0;
		if (c == '"')
			e = "\\\"";
		else if (c == '\\')
			e = "\\\\";
		else if (c == '\n')
			e = "\\n";
		else if (c == '\r')
			e = "\\r";
		else if (c == '\t')
			e = "\\t";
		else if (c < 0x20 || c == 0x7f)
			e = (snprintf(esc, sizeof(esc), "\\u%04x", c), esc);
		else
			e = "\\ufffd"; /* a byte of no valid UTF-8 sequence */
		r = buf_append(b, e, strlen(e));
		if (r < 0)
			return r;
		i++;
	}
	if (buf_append(b, s + i - run, run) < 0 || buf_append(b, "\"", 1) < 0)
		return -ENOMEM;
	return 0;
}

void log_text_escape(const char *s, char *out, size_t size)
{
	static const char hex[] = "0123456789abcdef";
	size_t k = 0;

	if (size == 0)
		return;
	for (; *s; s++) {
		uint8_t c = (uint8_t)*s;
		char e[4];
		size_t n = 1;

		e[0] = (char)c;
		if (c == '\n' || c == '\r' || c == '\t') {
			e[0] = '\\';
			e[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
			n = 2;
		} else if (c < 0x20 || c == 0x7f) {
			e[0] = '\\';
			e[1] = 'x';
			e[2] = hex[c >> 4];
			e[3] = hex[c & 15];
			n = 4;
		}
		if (k + n >= size)
			break;
		memcpy(out + k, e, n);
		k += n;
	}
	out[k] = 0;
}

static int json_lit(struct buf *b, const char *s)
{
	return buf_append(b, s, strlen(s));
}

static int json_value(struct buf *b, const struct log_field *f)
{
	char num[32];
	int r = 0;

	switch (f->type) {
	case LOG_F_STR:
		if (!f->s)
			return json_lit(b, "null");
		return log_json_string(b, f->s, f->len == SIZE_MAX ? strlen(f->s) : f->len);
	case LOG_F_INT:
		snprintf(num, sizeof(num), "%" PRId64, f->i);
		return json_lit(b, num);
	case LOG_F_BOOL:
		return json_lit(b, f->i ? "true" : "false");
	case LOG_F_STRV:
		r = json_lit(b, "[");
		for (size_t i = 0; r >= 0 && i < f->n; i++) {
			if (i > 0)
				r = json_lit(b, ",");
			if (r >= 0)
				r = log_json_string(b, f->v[i], strlen(f->v[i]));
		}
		return r < 0 ? r : json_lit(b, "]");
	case LOG_F_OBJ:
		return log_json_fields(b, f->sub, f->n);
	}
	return json_lit(b, "null");
}

int log_json_fields(struct buf *b, const struct log_field *fields, size_t n)
{
	int r = json_lit(b, "{");

	for (size_t i = 0; r >= 0 && i < n; i++) {
		if (i > 0)
			r = json_lit(b, ",");
		if (r >= 0)
			r = log_json_string(b, fields[i].key, strlen(fields[i].key));
		if (r >= 0)
			r = json_lit(b, ":");
		if (r >= 0)
			r = json_value(b, &fields[i]);
	}
	return r < 0 ? r : json_lit(b, "}");
}

void log_format_time(char out[32])
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(out, 32, "%04u-%02u-%02uT%02u:%02u:%02u.%03uZ", (unsigned)(tm.tm_year + 1900) % 10000u,
		 (unsigned)(tm.tm_mon + 1) % 100u, (unsigned)tm.tm_mday % 100u,
		 (unsigned)tm.tm_hour % 100u, (unsigned)tm.tm_min % 100u, (unsigned)tm.tm_sec % 100u,
		 (unsigned)(ts.tv_nsec / 1000000) % 1000u);
}

/* Writes all of data to fd (one write(2) unless it is cut short). 0 or -errno. */
static int write_all(int fd, const uint8_t *data, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, data, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

/* One JSON line: time, level, event, session, process, message, fields (+ error). */
static void write_json_line(int level, int e, const char *event, const struct log_ctx *ctx,
			    const struct log_field *fields, size_t n, const char *msg)
{
	struct buf b = { 0 };
	char t[32], num[16];
	int r;

	log_format_time(t);
	r = json_lit(&b, "{\"time\":\"");
	if (r >= 0)
		r = json_lit(&b, t);
	if (r >= 0)
		r = json_lit(&b, "\",\"level\":\"");
	if (r >= 0)
		r = json_lit(&b, level_name(level));
	if (r >= 0)
		r = json_lit(&b, "\",\"event\":");
	if (r >= 0)
		r = log_json_string(&b, event, strlen(event));
	if (r >= 0)
		r = json_lit(&b, ",\"session\":");
	if (r >= 0)
		r = ctx && ctx->session ? log_json_string(&b, ctx->session, strlen(ctx->session))
					: json_lit(&b, "null");
	if (r >= 0)
		r = json_lit(&b, ",\"process\":");
	if (r >= 0)
		r = ctx && ctx->process ? log_json_string(&b, ctx->process, ctx->process_len)
					: json_lit(&b, "null");
	if (r >= 0)
		r = json_lit(&b, ",\"message\":");
	if (r >= 0)
		r = log_json_string(&b, msg, strlen(msg));
	if (r >= 0 && e) {
		snprintf(num, sizeof(num), "%d", e);
		r = json_lit(&b, ",\"errno\":");
		if (r >= 0)
			r = json_lit(&b, num);
		if (r >= 0)
			r = json_lit(&b, ",\"error\":");
		if (r >= 0)
			r = log_json_string(&b, strerror(e), strlen(strerror(e)));
	}
	if (r >= 0)
		r = json_lit(&b, ",\"fields\":");
	if (r >= 0)
		r = log_json_fields(&b, fields, n);
	if (r >= 0)
		r = json_lit(&b, "}\n");
	if (r >= 0)
		(void)write_all(STDERR_FILENO, b.data, b.len);
	buf_done(&b);
}

static int log_write_line(int level, int error, const char *event, const struct log_ctx *ctx,
			  const struct log_field *fields, size_t n, const char *fmt, va_list ap)
{
	char msg[1024];
	int saved = errno, e = error < 0 ? -error : error;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (format == LOG_FORMAT_JSON) {
		write_json_line(level, e, event, ctx, fields, n, msg);
	} else {
		char safe[sizeof(msg) * 4];

		/* Client and sandbox strings (process ids, denied paths) cannot start a line. */
		log_text_escape(msg, safe, sizeof(safe));
		if (e)
			fprintf(stderr, "uexec[%d]: %s: %s: %s\n", (int)getpid(), level_name(level),
				safe, strerror(e));
		else
			fprintf(stderr, "uexec[%d]: %s: %s\n", (int)getpid(), level_name(level), safe);
	}
	errno = saved;
	return -e;
}

static int log_writev(int level, int error, const char *fmt, va_list ap)
{
	return log_write_line(level, error, "log", NULL, NULL, 0, fmt, ap);
}

int log_event_internal(int level, const char *event, const struct log_ctx *ctx,
		       const struct log_field *fields, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)log_write_line(level, 0, event, ctx, fields, n, fmt, ap);
	va_end(ap);
	return 0;
}

void log_audit_set_sink(log_audit_sink_fn fn, void *userdata)
{
	audit_sink = fn;
	audit_sink_data = userdata;
}

bool log_audit_enabled(void)
{
	return audit_sink != NULL;
}

void log_audit(const char *event, const struct log_field *fields, size_t n)
{
	struct buf b = { 0 };
	char t[32];
	int r, saved = errno;

	if (!audit_sink)
		return;
	log_format_time(t);
	r = json_lit(&b, "{\"time\":\"");
	if (r >= 0)
		r = json_lit(&b, t);
	if (r >= 0)
		r = json_lit(&b, "\",\"event\":");
	if (r >= 0)
		r = log_json_string(&b, event, strlen(event));
	if (r >= 0 && n > 0) {
		/* splice the fields object's members after the time and event */
		size_t at = b.len;

		r = log_json_fields(&b, fields, n);
		if (r >= 0)
			b.data[at] = ',';
		else
			b.len = at;
	}
	if (r >= 0)
		r = json_lit(&b, n > 0 ? "\n" : "}\n");
	if (r >= 0)
		audit_sink(audit_sink_data, (const char *)b.data, b.len);
	else
		log_error_errno_ratelimited(r, "Formatting an audit line (%s) failed", event);
	buf_done(&b);
	errno = saved;
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

bool log_ratelimit_pass(struct log_ratelimit *rl, int level, const char *func)
{
	int saved = errno;
	struct timespec ts;
	uint64_t now;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000 + 1; /* never 0 */
	if (rl->begin_ms == 0 || now - rl->begin_ms >= LOG_RATELIMIT_INTERVAL_MS) {
		rl->begin_ms = now;
		rl->n = 0;
	}
	if (rl->n >= LOG_RATELIMIT_BURST) {
		rl->suppressed++;
		errno = saved;
		return false;
	}
	rl->n++;
	if (rl->suppressed > 0) {
		log_internal(level, 0, func, "Suppressed %u messages like the next one", rl->suppressed);
		rl->suppressed = 0;
	}
	errno = saved; /* for %m */
	return true;
}

int log_internal_ratelimited(struct log_ratelimit *rl, int level, int error, const char *func,
			     const char *fmt, ...)
{
	int e = error < 0 ? -error : error, r;
	va_list ap;

	if (!log_ratelimit_pass(rl, level, func))
		return -e;
	va_start(ap, fmt);
	r = log_writev(level, error, fmt, ap);
	va_end(ap);
	return r;
}
