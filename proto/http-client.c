/* SPDX-License-Identifier: MIT */
/*
 * HTTP/1.1 client codec: request formatting, the response head parser (on
 * http.c's head parser), comma-separated header lists, the WebSocket client
 * handshake and URL splitting. The response body's framing is http-body.c's.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "hex.h"
#include "http-client.h"
#include "http-internal.h"

/* ---- requests ---- */

static bool is_token(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!http_is_tchar((unsigned char)*s))
			return false;
	return true;
}

/* HTAB, SP, VCHAR, obs-text: no CR, LF or other control byte (a NUL ends the string). */
static bool is_field_value(const char *s)
{
	for (; *s; s++)
		if (!http_is_value_char((unsigned char)*s))
			return false;
	return true;
}

/* A request target: visible ASCII only (no space, no control byte, no obs-text). */
static bool is_target(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7F)
			return false;
	return true;
}

static bool name_is(const char *name, const char *what)
{
	return http_mem_eq_nocase(name, strlen(name), what, strlen(what));
}

static bool name_in(const char *name, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (name_is(name, list[i]))
			return true;
	return false;
}

/* The framing headers that http_client_format_request() writes itself. */
static const char *const framing_headers[] = { "Host", "Content-Length", "Transfer-Encoding" };

static bool headers_ok(const struct http_client_header *hdrs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!hdrs[i].name || !hdrs[i].value || !is_token(hdrs[i].name) ||
		    !is_field_value(hdrs[i].value) ||
		    name_in(hdrs[i].name, framing_headers, sizeof(framing_headers) / sizeof(*framing_headers)))
			return false;
	return true;
}

static char *fail(int *ret_errno, int err)
{
	if (ret_errno)
		*ret_errno = err;
	return NULL;
}

static char *put(char *p, const char *s)
{
	size_t n = strlen(s);

	memcpy(p, s, n);
	return p + n;
}

char *http_client_format_request(const char *method, const char *target, const char *host_header,
				 const struct http_client_header *hdrs, size_t n_hdrs,
				 const void *body, size_t body_len, size_t *ret_len, int *ret_errno)
{
	char clen[32] = "";
	size_t need;
	char *out, *p;

	if (!method || !target || !host_header || (n_hdrs && !hdrs) || (!body && body_len) ||
	    !is_token(method) || !is_target(target) || !is_field_value(host_header) ||
	    !headers_ok(hdrs, n_hdrs))
		return fail(ret_errno, -EINVAL);
	if (body)
		(void)snprintf(clen, sizeof(clen), "Content-Length: %zu\r\n", body_len);

	/* Each string fits in memory; only the body length can make the sum wrap. */
	need = strlen(method) + 1 + strlen(target) + strlen(" HTTP/1.1\r\nHost: ") +
	       strlen(host_header) + 2 + strlen(clen) + 2 + 1;
	for (size_t i = 0; i < n_hdrs; i++)
		need += strlen(hdrs[i].name) + 2 + strlen(hdrs[i].value) + 2;
	if (body_len > SIZE_MAX - need)
		return fail(ret_errno, -ENOMEM);
	out = malloc(need + body_len);
	if (!out)
		return fail(ret_errno, -ENOMEM);

	p = put(out, method);
	p = put(p, " ");
	p = put(p, target);
	p = put(p, " HTTP/1.1\r\nHost: ");
	p = put(p, host_header);
	p = put(p, "\r\n");
	for (size_t i = 0; i < n_hdrs; i++) {
		p = put(p, hdrs[i].name);
		p = put(p, ": ");
		p = put(p, hdrs[i].value);
		p = put(p, "\r\n");
	}
	p = put(p, clen);
	p = put(p, "\r\n");
	if (body_len)
		memcpy(p, body, body_len);
	p += body_len;
	*p = '\0';
	*ret_len = (size_t)(p - out);
	if (ret_errno)
		*ret_errno = 0;
	return out;
}

/* RFC 3986 reg-name without percent-decoding: unreserved, '%', sub-delims. */
static bool is_reg_name_char(unsigned char c)
{
	if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
		return true;
	return c != '\0' && strchr("-._~%!$&'()*+,;=", c) != NULL;
}

static bool is_ipv6_char(unsigned char c)
{
	return unhexchar(c) >= 0 || c == ':' || c == '.';
}

static bool host_ok(const char *h, size_t n, bool ipv6)
{
	bool colon = false;

	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (ipv6 ? !is_ipv6_char((unsigned char)h[i]) : !is_reg_name_char((unsigned char)h[i]))
			return false;
		colon |= h[i] == ':';
	}
	return !ipv6 || colon;
}

int http_client_host_header(char *buf, size_t cap, const char *host, bool ipv6, uint16_t port,
			    bool tls)
{
	int k;

	if (!host || !host_ok(host, strlen(host), ipv6) || port == 0)
		return -EINVAL;
	if (cap > INT_MAX)
		cap = INT_MAX;
	if (port == (tls ? 443 : 80))
		k = snprintf(buf, cap, ipv6 ? "[%s]" : "%s", host);
	else
		k = snprintf(buf, cap, ipv6 ? "[%s]:%u" : "%s:%u", host, (unsigned)port);
	return k < 0 ? -EINVAL : k;
}

/* ---- response heads ---- */

/* status-line = HTTP-version SP 3DIGIT SP [ reason-phrase ]; the last SP may be missing. */
static int parse_status_line(const char *l, size_t n, void *userdata)
{
	struct http_response *ret = userdata;

	if (n < 12 || memcmp(l, "HTTP/1.", 7) != 0 || !http_is_digit(l[7]) || l[8] != ' ' ||
	    !http_is_digit(l[9]) || !http_is_digit(l[10]) || !http_is_digit(l[11]) || l[9] == '0')
		return -EBADMSG;
	if (n > 12 && l[12] != ' ')
		return -EBADMSG; /* a fourth digit, or junk */
	for (size_t i = 13; i < n; i++)
		if (!http_is_value_char((unsigned char)l[i]))
			return -EBADMSG;
	ret->minor_version = l[7] - '0';
	ret->status = (l[9] - '0') * 100 + (l[10] - '0') * 10 + (l[11] - '0');
	ret->reason = l + (n > 12 ? 13 : 12);
	ret->reason_len = n > 12 ? n - 13 : 0;
	return 0;
}

/* Anything that cannot become "HTTP/1." is refused before its line completes. */
static bool status_line_start_ok(const char *l, size_t n)
{
	return memcmp(l, "HTTP/1.", n < 7 ? n : 7) == 0;
}

int http_response_parse(const char *buf, size_t len, size_t max_bytes, struct http_response *ret)
{
	const struct http_head_parser hp = {
		.first_line = parse_status_line,
		.first_line_start_ok = status_line_start_ok,
		.userdata = ret,
		.headers = ret->headers,
		.n_headers = &ret->n_headers,
	};

	memset(ret, 0, sizeof(*ret));
	return http_head_parse(buf, len, max_bytes, &hp);
}

bool http_header_is(const struct http_header *h, const char *name)
{
	return http_mem_eq_nocase(h->name, h->name_len, name, strlen(name));
}

const struct http_header *http_response_header(const struct http_response *r, const char *name)
{
	for (size_t i = 0; i < r->n_headers; i++)
		if (http_header_is(&r->headers[i], name))
			return &r->headers[i];
	return NULL;
}

/* ---- comma-separated header lists (RFC 9110 §5.6.1) ---- */

bool http_list_any(const struct http_header *h, bool (*fn)(const char *e, size_t n, void *ud),
		   void *ud)
{
	size_t i = 0, n = h->value_len;
	const char *v = h->value;

	while (i < n) {
		size_t s = i, e;

		while (i < n && v[i] != ',')
			i++;
		e = i++;
		while (s < e && http_is_ows(v[s]))
			s++;
		while (e > s && http_is_ows(v[e - 1]))
			e--;
		if (e > s && fn(v + s, e - s, ud))
			return true;
	}
	return false;
}

static bool is_upgrade_token(const char *e, size_t n, void *ud)
{
	return http_mem_eq_nocase(e, n, "upgrade", 7);
}

/* ---- WebSocket client handshake ---- */

void http_ws_client_key(const uint8_t nonce[16], char key_out[HTTP_WS_KEY_LEN + 1])
{
	key_out[base64_encode(nonce, 16, key_out)] = '\0';
}

/* The handshake's own headers, and the negotiations we never offer. */
static const char *const ws_own_headers[] = {
	"Upgrade", "Connection", "Sec-WebSocket-Key", "Sec-WebSocket-Version",
	"Sec-WebSocket-Protocol", "Sec-WebSocket-Extensions",
};

char *http_ws_client_request(const char *target, const char *host_header, const char *key,
			     const struct http_client_header *extra, size_t n_extra, size_t *ret_len,
			     int *ret_errno)
{
	struct http_client_header *all;
	char *out;

	if (!key || !*key || (n_extra && !extra) || n_extra > SIZE_MAX / sizeof(*all) - 4)
		return fail(ret_errno, -EINVAL);
	for (size_t i = 0; i < n_extra; i++)
		if (!extra[i].name ||
		    name_in(extra[i].name, ws_own_headers, sizeof(ws_own_headers) / sizeof(*ws_own_headers)))
			return fail(ret_errno, -EINVAL);

	all = malloc((n_extra + 4) * sizeof(*all));
	if (!all)
		return fail(ret_errno, -ENOMEM);
	all[0] = (struct http_client_header){ "Upgrade", "websocket" };
	all[1] = (struct http_client_header){ "Connection", "Upgrade" };
	all[2] = (struct http_client_header){ "Sec-WebSocket-Key", key };
	all[3] = (struct http_client_header){ "Sec-WebSocket-Version", "13" };
	if (n_extra)
		memcpy(all + 4, extra, n_extra * sizeof(*all));
	out = http_client_format_request("GET", target, host_header, all, n_extra + 4, NULL, 0,
					 ret_len, ret_errno);
	free(all);
	return out;
}

/* "HTTP status 100" .. "HTTP status 999": static texts for -ECONNREFUSED. */
#define STATUS_TEXT(h, t, u) "HTTP status " #h #t #u
#define STATUS_TENS(h, t)                                                                   \
	STATUS_TEXT(h, t, 0), STATUS_TEXT(h, t, 1), STATUS_TEXT(h, t, 2), STATUS_TEXT(h, t, 3), \
		STATUS_TEXT(h, t, 4), STATUS_TEXT(h, t, 5), STATUS_TEXT(h, t, 6),               \
		STATUS_TEXT(h, t, 7), STATUS_TEXT(h, t, 8), STATUS_TEXT(h, t, 9)
#define STATUS_HUNDREDS(h)                                                                  \
	STATUS_TENS(h, 0), STATUS_TENS(h, 1), STATUS_TENS(h, 2), STATUS_TENS(h, 3),             \
		STATUS_TENS(h, 4), STATUS_TENS(h, 5), STATUS_TENS(h, 6), STATUS_TENS(h, 7),     \
		STATUS_TENS(h, 8), STATUS_TENS(h, 9)
static const char status_texts[900][16] = {
	STATUS_HUNDREDS(1), STATUS_HUNDREDS(2), STATUS_HUNDREDS(3),
	STATUS_HUNDREDS(4), STATUS_HUNDREDS(5), STATUS_HUNDREDS(6),
	STATUS_HUNDREDS(7), STATUS_HUNDREDS(8), STATUS_HUNDREDS(9),
};

static int refuse(const char **reason, int err, const char *why)
{
	if (reason)
		*reason = why;
	return err;
}

static bool value_is(const struct http_header *h, const char *v)
{
	return h && http_mem_eq_nocase(h->value, h->value_len, v, strlen(v));
}

int http_ws_client_check(const struct http_response *resp, const char *key, const char **reason)
{
	const struct http_header *accept;
	char want[29];
	bool upgrade = false;

	if (resp->status != 101)
		return refuse(reason, -ECONNREFUSED,
			      resp->status >= 100 && resp->status <= 999 ? status_texts[resp->status - 100]
									 : "HTTP status not 101");
	if (!value_is(http_response_header(resp, "Upgrade"), "websocket"))
		return refuse(reason, -EPROTO, "the server's Upgrade header is not websocket");
	for (size_t i = 0; i < resp->n_headers && !upgrade; i++)
		if (http_header_is(&resp->headers[i], "Connection"))
			upgrade = http_list_any(&resp->headers[i], is_upgrade_token, NULL);
	if (!upgrade)
		return refuse(reason, -EPROTO, "the server's Connection header lacks upgrade");

	accept = http_response_header(resp, "Sec-WebSocket-Accept");
	if (!accept)
		return refuse(reason, -EPROTO, "the server sent no Sec-WebSocket-Accept");
	if (!key || strlen(key) != HTTP_WS_KEY_LEN || http_ws_accept(key, HTTP_WS_KEY_LEN, want) < 0)
		return refuse(reason, -EPROTO, "the handshake key is not 24 characters");
	if (accept->value_len != 28 || memcmp(accept->value, want, 28) != 0)
		return refuse(reason, -EPROTO, "the server's Sec-WebSocket-Accept does not match the key");

	if (http_response_header(resp, "Sec-WebSocket-Extensions"))
		return refuse(reason, -EPROTO, "the server chose an extension we did not offer");
	if (http_response_header(resp, "Sec-WebSocket-Protocol"))
		return refuse(reason, -EPROTO, "the server chose a subprotocol we did not offer");
	return refuse(reason, 0, NULL);
}

/* ---- URLs ---- */

static int url_fail(struct http_url *u, const char **reason, int err, const char *why)
{
	http_url_done(u);
	return refuse(reason, err, why);
}

/* scheme "://": sets tls and the default port; returns the length of the prefix or 0. */
static size_t url_scheme(const char *url, struct http_url *u)
{
	static const struct {
		const char *prefix;
		bool tls;
	} schemes[] = { { "ws://", false }, { "wss://", true }, { "http://", false }, { "https://", true } };

	for (size_t i = 0; i < sizeof(schemes) / sizeof(*schemes); i++) {
		size_t n = strlen(schemes[i].prefix);

		if (strlen(url) >= n && http_mem_eq_nocase(url, n, schemes[i].prefix, n)) {
			u->tls = schemes[i].tls;
			u->port = u->tls ? 443 : 80;
			return n;
		}
	}
	return 0;
}

/* ":port" (p at the colon, end past the authority): 0 or a static reason. */
static const char *url_port(const char *p, const char *end, struct http_url *u)
{
	unsigned v = 0;

	if (++p == end)
		return "empty port";
	for (; p < end; p++) {
		if (!http_is_digit(*p))
			return "port is not a number";
		v = v * 10 + (unsigned)(*p - '0');
		if (v > 65535)
			return "port above 65535";
	}
	if (v == 0)
		return "port 0";
	u->port = (uint16_t)v;
	return NULL;
}

/* The authority a[0..n): host (an IPv6 literal in brackets) and optional port. */
static const char *url_authority(const char *a, size_t n, struct http_url *u)
{
	const char *end = a + n, *hs = a, *he, *port;

	if (memchr(a, '@', n))
		return "user info is not allowed";
	if (n > 0 && a[0] == '[') {
		hs = a + 1;
		he = memchr(hs, ']', n - 1);
		if (!he)
			return "unterminated IPv6 literal";
		port = he + 1;
		if (port < end && *port != ':')
			return "junk after the IPv6 literal";
		u->ipv6 = true;
	} else {
		he = memchr(a, ':', n);
		if (!he)
			he = end;
		port = he;
	}
	if (he == hs)
		return "empty host";
	if (!host_ok(hs, (size_t)(he - hs), u->ipv6))
		return u->ipv6 ? "bad IPv6 literal" : "bad character in the host";
	if (port < end) {
		const char *why = url_port(port, end, u);

		if (why)
			return why;
	}
	u->host = strndup(hs, (size_t)(he - hs));
	return u->host ? NULL : "";
}

int http_url_parse(const char *url, struct http_url *ret, const char **reason)
{
	size_t s, a;
	const char *why;

	memset(ret, 0, sizeof(*ret));
	if (!url)
		return url_fail(ret, reason, -EINVAL, "no URL");
	for (const char *p = url; *p; p++)
		if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7F)
			return url_fail(ret, reason, -EINVAL,
					"whitespace, control or non-ASCII byte in the URL");
	if (strchr(url, '#'))
		return url_fail(ret, reason, -EINVAL, "fragments are not allowed");
	s = url_scheme(url, ret);
	if (s == 0)
		return url_fail(ret, reason, -EINVAL, "scheme is not ws, wss, http or https");

	a = strcspn(url + s, "/?");
	why = url_authority(url + s, a, ret);
	if (why)
		return url_fail(ret, reason, *why ? -EINVAL : -ENOMEM, *why ? why : "out of memory");

	/* The target: path and query, "/" when the URL has no path. */
	if (asprintf(&ret->target, "%s%s", url[s + a] == '/' ? "" : "/", url + s + a) < 0) {
		ret->target = NULL;
		return url_fail(ret, reason, -ENOMEM, "out of memory");
	}
	return refuse(reason, 0, NULL);
}

void http_url_done(struct http_url *u)
{
	free(u->host);
	free(u->target);
	memset(u, 0, sizeof(*u));
}
