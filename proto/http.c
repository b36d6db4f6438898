/* SPDX-License-Identifier: MIT */
/*
 * HTTP/1.x request-head parser (views into the caller's buffer) and the
 * WebSocket upgrade decision with the reference's (axum 0.8) order and texts.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sha1.h> /* libmd */


#include "base64.h"
#include "http.h"
#include "http-internal.h"

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

/* RFC 9110 tchar */
bool http_is_tchar(unsigned char c)
{
	if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
		return true;
	return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* Header value octets: HTAB, SP, VCHAR, obs-text. */
bool http_is_value_char(unsigned char c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7F);
}

static bool is_ws(char c)
{
	return c == ' ' || c == '\t';
}

/*
 * Finds the end of the line starting at p: returns the index of '\n' or -1.
 * A CR anywhere but right before the LF makes the line malformed (-2).
 */
static ssize_t find_eol(const char *buf, size_t p, size_t n)
{
	for (size_t i = p; i < n; i++) {
		if (buf[i] == '\n')
			return (ssize_t)i;
		if (buf[i] == '\r' && i + 1 < n && buf[i + 1] != '\n')
			return -2;
	}
	return -1;
}

static int parse_request_line(const char *l, size_t n, void *userdata)
{
	struct http_request *ret = userdata;
	size_t i = 0, s;

	s = i;
	while (i < n && http_is_tchar((unsigned char)l[i]))
		i++;
	if (i == s || i >= n || l[i] != ' ')
		return -EBADMSG;
	ret->method = l + s;
	ret->method_len = i - s;
	while (i < n && l[i] == ' ')
		i++;

	s = i;
	while (i < n && (unsigned char)l[i] > 0x20 && l[i] != 0x7F)
		i++;
	if (i == s || i >= n || l[i] != ' ')
		return -EBADMSG;
	ret->path = l + s;
	ret->path_len = i - s;
	while (i < n && l[i] == ' ')
		i++;

	if (n - i != 8 || memcmp(l + i, "HTTP/1.", 7) != 0 || l[i + 7] < '0' || l[i + 7] > '9')
		return -EBADMSG;
	ret->minor_version = l[i + 7] - '0';
	return 0;
}

/* Refuse non-HTTP garbage (e.g. a TLS hello) before the request line completes. */
static bool request_line_start_ok(const char *l, size_t n)
{
	for (size_t i = 0; i < n && l[i] != ' '; i++)
		if (!http_is_tchar((unsigned char)l[i]))
			return false;
	return true;
}

static int parse_header_line(const char *l, size_t n, struct http_header *hdrs, size_t *n_hdrs)
{
	struct http_header *h;
	size_t i = 0, vs, ve;

	while (i < n && http_is_tchar((unsigned char)l[i]))
		i++;
	/* empty name, obs-fold continuation, or whitespace before the colon */
	if (i == 0 || i >= n || l[i] != ':')
		return -EBADMSG;
	if (*n_hdrs >= HTTP_MAX_HEADERS)
		return -E2BIG;
	vs = i + 1;
	ve = n;
	while (vs < ve && is_ws(l[vs]))
		vs++;
	while (ve > vs && is_ws(l[ve - 1]))
		ve--;
	for (size_t k = vs; k < ve; k++)
		if (!http_is_value_char((unsigned char)l[k]))
			return -EBADMSG;

	h = &hdrs[(*n_hdrs)++];
	h->name = l;
	h->name_len = i;
	h->value = l + vs;
	h->value_len = ve - vs;
	return 0;
}

static int parse_head(const char *buf, size_t n, const struct http_head_parser *hp)
{
	size_t p = 0;
	bool first = true;
	int r;

	/* RFC 9112 §2.2: ignore empty lines received before the first line. */
	while (p < n && (buf[p] == '\r' || buf[p] == '\n')) {
		if (buf[p] == '\r') {
			if (p + 1 >= n)
				return -EAGAIN;
			if (buf[p + 1] != '\n')
				return -EBADMSG;
			p++;
		}
		p++;
	}

	for (;;) {
		ssize_t eol = find_eol(buf, p, n);
		size_t le;

		if (eol == -2)
			return -EBADMSG;
		if (eol < 0) {
			if (first && !hp->first_line_start_ok(buf + p, n - p))
				return -EBADMSG;
			return -EAGAIN;
		}
		le = (size_t)eol;
		if (le > p && buf[le - 1] == '\r')
			le--;
		if (first) {
			r = hp->first_line(buf + p, le - p, hp->userdata);
			first = false;
		} else if (le == p) {
			return (int)(eol + 1);
		} else {
			r = parse_header_line(buf + p, le - p, hp->headers, hp->n_headers);
		}
		if (r < 0)
			return r;
		p = (size_t)eol + 1;
	}
}

int http_head_parse(const char *buf, size_t len, size_t max_bytes, const struct http_head_parser *hp)
{
	size_t lim = len < max_bytes ? len : max_bytes;
	int r;

	if (lim > INT_MAX)
		lim = INT_MAX;
	*hp->n_headers = 0;
	r = parse_head(buf, lim, hp);
	if (r == -EAGAIN && len >= max_bytes)
		return -E2BIG;
	return r;
}

int http_request_parse(const char *buf, size_t len, size_t max_bytes, struct http_request *ret)
{
	const struct http_head_parser hp = {
		.first_line = parse_request_line,
		.first_line_start_ok = request_line_start_ok,
		.userdata = ret,
		.headers = ret->headers,
		.n_headers = &ret->n_headers,
	};

	memset(ret, 0, sizeof(*ret));
	return http_head_parse(buf, len, max_bytes, &hp);
}

bool http_mem_eq_nocase(const char *a, size_t an, const char *b, size_t bn)
{
	if (an != bn)
		return false;
	for (size_t i = 0; i < an; i++) {
		char x = a[i], y = b[i];

		if (x >= 'A' && x <= 'Z')
			x = (char)(x - 'A' + 'a');
		if (y >= 'A' && y <= 'Z')
			y = (char)(y - 'A' + 'a');
		if (x != y)
			return false;
	}
	return true;
}

const struct http_header *http_request_header(const struct http_request *req, const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < req->n_headers; i++)
		if (http_mem_eq_nocase(req->headers[i].name, req->headers[i].name_len, name, n))
			return &req->headers[i];
	return NULL;
}

/* axum's header_contains(): lower-cased value contains the needle as a substring. */
static bool value_contains_nocase(const struct http_header *h, const char *needle)
{
	size_t nl = strlen(needle);

	for (size_t i = 0; h && i + nl <= h->value_len; i++)
		if (http_mem_eq_nocase(h->value + i, nl, needle, nl))
			return true;
	return false;
}

static bool value_eq_nocase(const struct http_header *h, const char *v)
{
	return h && http_mem_eq_nocase(h->value, h->value_len, v, strlen(v));
}

static bool method_is(const struct http_request *req, const char *m)
{
	return req->method_len == strlen(m) && memcmp(req->method, m, req->method_len) == 0;
}

static int respond(struct http_upgrade *ret, int status, const char *body)
{
	ret->verdict = HTTP_VERDICT_RESPOND;
	ret->status = status;
	ret->body = body;
	return 0;
}

/*
 * SHA-1 from libmd, not OpenSSL: OpenSSL 3's SHA1() goes through EVP, whose
 * first use initialises the library (configuration, providers, algorithm
 * tables) and leaves 2.3 MB more resident after the first connection
 * (bench/README.md, "Footprint"); libsodium has no SHA-1. libmd (47 KB, the
 * message digests of the BSDs) is on every Debian system already (dpkg needs
 * it). The handshake's check needs no collision resistance, which SHA-1 no
 * longer has.
 */
int http_ws_accept(const char *key, size_t key_len, char out[29])
{
	uint8_t digest[SHA1_DIGEST_LENGTH];
	SHA1_CTX ctx;

	SHA1Init(&ctx);
	SHA1Update(&ctx, (const uint8_t *)key, key_len);
	SHA1Update(&ctx, (const uint8_t *)WS_GUID, strlen(WS_GUID));
	SHA1Final(digest, &ctx);
	out[base64_encode(digest, sizeof(digest), out)] = '\0';
	return 0;
}

int http_upgrade_check(const struct http_request *req, struct http_upgrade *ret)
{
	const struct http_header *key;
	size_t plen = 0;

	memset(ret, 0, sizeof(*ret));
	ret->verdict = HTTP_VERDICT_RESPOND;
	ret->body = "";

	/* A middleware layer in front of the router: runs before routing, /readyz included. */
	if (http_request_header(req, "Origin"))
		return respond(ret, 403, "");

	while (plen < req->path_len && req->path[plen] != '?')
		plen++;
	if (plen == 7 && memcmp(req->path, "/readyz", 7) == 0) {
		/* axum get(): GET and HEAD; other methods get an empty 405 */
		if (method_is(req, "GET") || method_is(req, "HEAD"))
			return respond(ret, 200, "");
		return respond(ret, 405, "");
	}
	if (plen == 8 && memcmp(req->path, "/metrics", 8) == 0) {
		if (!method_is(req, "GET"))
			return respond(ret, 405, "");
		ret->verdict = HTTP_VERDICT_METRICS;
		ret->status = 200;
		return 0;
	}
	if (plen != 1 || req->path[0] != '/')
		return respond(ret, 404, "");

	/* The WebSocketUpgrade extractor's checks, in its order. */
	if (!method_is(req, "GET"))
		return respond(ret, 405, "Request method must be `GET`");
	if (!value_contains_nocase(http_request_header(req, "Connection"), "upgrade"))
		return respond(ret, 400, "Connection header did not include 'upgrade'");
	if (!value_eq_nocase(http_request_header(req, "Upgrade"), "websocket"))
		return respond(ret, 400, "`Upgrade` header did not include 'websocket'");
	key = http_request_header(req, "Sec-WebSocket-Key");
	if (!key)
		return respond(ret, 400, "`Sec-WebSocket-Key` header missing");
	if (!value_eq_nocase(http_request_header(req, "Sec-WebSocket-Version"), "13"))
		return respond(ret, 400, "`Sec-WebSocket-Version` header did not include '13'");
	if (req->minor_version == 0)
		return respond(ret, 426,
			       "WebSocket request couldn't be upgraded since no upgrade state was present");

	if (http_ws_accept(key->value, key->value_len, ret->accept) < 0) {
		/* still a safe verdict for callers that ignore the return value */
		(void)respond(ret, 500, "");
		return -ENOMEM;
	}
	ret->verdict = HTTP_VERDICT_UPGRADE;
	ret->status = 101;
	return 0;
}

static const char *reason_phrase(int status)
{
	switch (status) {
	case 101:
		return "Switching Protocols";
	case 200:
		return "OK";
	case 400:
		return "Bad Request";
	case 401:
		return "Unauthorized";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 426:
		return "Upgrade Required";
	case 500:
		return "Internal Server Error";
	case 503:
		return "Service Unavailable";
	default:
		return "Unknown";
	}
}

/* RFC 1123 / IMF-fixdate, locale-independent: "Sun, 22 Nov 2026 04:54:26 GMT". */
int http_format_date(time_t now, char *buf, size_t cap)
{
	static const char days[7][4] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };
	static const char months[12][4] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
					    "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
	struct tm tm;

	if (!gmtime_r(&now, &tm) || tm.tm_wday < 0 || tm.tm_wday > 6 || tm.tm_mon < 0 ||
	    tm.tm_mon > 11)
		return -EINVAL;
	return snprintf(buf, cap, "%s, %02d %s %04d %02d:%02d:%02d GMT", days[tm.tm_wday], tm.tm_mday,
			months[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

static int finish(int k, size_t cap)
{
	if (k < 0 || (size_t)k >= cap)
		return -ENOBUFS;
	return k;
}

int http_upgrade_format(const struct http_upgrade *u, time_t now, char *buf, size_t cap)
{
	char date[64];
	size_t blen = u->body ? strlen(u->body) : 0;
	int k;

	if (cap > INT_MAX)
		cap = INT_MAX;
	if (http_format_date(now, date, sizeof(date)) < 0)
		return -EINVAL;

	if (u->verdict == HTTP_VERDICT_UPGRADE)
		k = snprintf(buf, cap,
			     "HTTP/1.1 101 Switching Protocols\r\n"
			     "connection: upgrade\r\n"
			     "upgrade: websocket\r\n"
			     "sec-websocket-accept: %s\r\n"
			     "date: %s\r\n"
			     "\r\n",
			     u->accept, date);
	else
		k = snprintf(buf, cap,
			     "HTTP/1.%d %d %s\r\n"
			     "%s%s%s"
			     "content-length: %zu\r\n"
			     "connection: close\r\n"
			     "date: %s\r\n"
			     "\r\n"
			     "%s",
			     u->status == 426 ? 0 : 1, u->status, reason_phrase(u->status),
			     blen ? "content-type: " : "",
			     !blen ? "" : u->content_type ? u->content_type : "text/plain; charset=utf-8",
			     blen ? "\r\n" : "", blen, date,
			     blen ? u->body : "");
	return finish(k, cap);
}

int http_format_bad_request(time_t now, char *buf, size_t cap)
{
	char date[64];

	if (cap > INT_MAX)
		cap = INT_MAX;
	if (http_format_date(now, date, sizeof(date)) < 0)
		return -EINVAL;
	return finish(snprintf(buf, cap,
			       "HTTP/1.1 400 Bad Request\r\n"
			       "connection: close\r\n"
			       "content-length: 0\r\n"
			       "date: %s\r\n"
			       "\r\n",
			       date),
		      cap);
}
