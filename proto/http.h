/* SPDX-License-Identifier: MIT */
/*
 * HTTP/1.x request parsing and the WebSocket upgrade decision (RFC 6455 §4.2),
 * with the reference server's statuses and bodies (PROTOCOL.md §1.2). No I/O,
 * no clocks: the caller passes the current time for the Date header.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define HTTP_MAX_HEADERS 64

struct http_header {
	const char *name; /* views into the caller's buffer, not NUL-terminated */
	size_t name_len;
	const char *value; /* leading/trailing whitespace trimmed */
	size_t value_len;
};

struct http_request {
	const char *method;
	size_t method_len;
	const char *path; /* request target as sent, query included */
	size_t path_len;
	int minor_version; /* HTTP/1.<minor> */
	size_t n_headers;
	struct http_header headers[HTTP_MAX_HEADERS];
};

/*
 * Parses one request head (through the blank line) from buf[0..len).
 * Returns bytes consumed (> 0), -EAGAIN if incomplete, -EBADMSG if malformed,
 * -E2BIG if it has more than HTTP_MAX_HEADERS headers or len reaches max_bytes
 * without a complete head. Views in *ret point into buf. LF-only line endings
 * and leading empty lines are tolerated; obs-fold, a bare CR, control bytes in
 * values and versions other than HTTP/1.x are -EBADMSG. A first line that cannot
 * start a request (e.g. a TLS hello) is -EBADMSG before it completes.
 */
int http_request_parse(const char *buf, size_t len, size_t max_bytes, struct http_request *ret);

/* Case-insensitive header lookup; returns NULL if absent. */
const struct http_header *http_request_header(const struct http_request *req, const char *name);

enum http_verdict {
	HTTP_VERDICT_UPGRADE,  /* send 101; then speak WebSocket */
	HTTP_VERDICT_RESPOND,  /* send the response and close */
	HTTP_VERDICT_METRICS,  /* GET /metrics: the caller sends its body (uexec's extension) */
};

struct http_upgrade {
	enum http_verdict verdict;
	int status;             /* 101, 200 (/readyz), 400, 403, 404, 405, 426 (500 on -ENOMEM) */
	const char *body;       /* static text/plain body, "" for none */
	const char *content_type; /* with a body; NULL: "text/plain; charset=utf-8" */
	char accept[29];        /* Sec-WebSocket-Accept (NUL-terminated) when status == 101 */
};

/*
 * Decides what to answer, in the reference's order (an axum 0.8 router with an
 * Origin-rejecting layer in front, then the WebSocketUpgrade extractor):
 * Origin present -> 403 (on every path, /readyz included); /readyz (query
 * ignored) -> 200 for GET/HEAD, empty 405 otherwise; /metrics (uexec's, query
 * ignored) -> HTTP_VERDICT_METRICS for GET, empty 405 otherwise; path other than "/" (query
 * ignored) -> 404; method not GET -> 405; Connection value not containing
 * "upgrade" (case-insensitive substring, as axum checks) -> 400; Upgrade not
 * "websocket" -> 400; Sec-WebSocket-Key missing -> 400; Sec-WebSocket-Version
 * not 13 -> 400; HTTP/1.0 -> 426 (last). Only the first header of each name is
 * looked at. Bodies are the exact texts of PROTOCOL.md §1.2 / axum.
 * Returns 0, or -ENOMEM (a very long key needs a heap buffer; *ret then holds
 * a safe empty 500 response).
 */
int http_upgrade_check(const struct http_request *req, struct http_upgrade *ret);

/*
 * Formats the response for *u into buf (cap bytes, NUL-terminated): for 101 the
 * status line and the four headers of §1.2 in that order (lower-case names)
 * ending with "date: <RFC 1123 of now>"; for others "HTTP/1.1 <status> <reason>",
 * content-type text/plain; charset=utf-8 when there is a body, content-length,
 * connection: close, date, then the body. Any status works (e.g. a 401 built by
 * the caller). The 426 status line uses "HTTP/1.0". Returns bytes written
 * (without the NUL) or -ENOBUFS.
 */
int http_upgrade_format(const struct http_upgrade *u, time_t now, char *buf, size_t cap);

/* RFC 1123 / IMF-fixdate of now ("Sun, 22 Nov 2026 04:54:26 GMT"): length, or -EINVAL. */
int http_format_date(time_t now, char *buf, size_t cap);

/* "HTTP/1.1 400 Bad Request" with connection: close and an empty body (unparsable request). */
int http_format_bad_request(time_t now, char *buf, size_t cap);
