/* SPDX-License-Identifier: MIT */
/*
 * The managed network's proxy (proxy-internal.h): heads on the way through.
 * A request's target (authority, default ports), the head for the origin
 * (origin form, hop-by-hop headers dropped, a credential put back where
 * credential masking binds one) and the response's head for the client.
 */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "credentials.h"
#include "http.h"
#include "log.h"
#include "netproxy-config.h"
#include "proxy-internal.h"

uint16_t netproxy_default_port(const char *scheme, size_t n)
{
	if ((n == 4 && !strncasecmp(scheme, "http", 4)) || (n == 2 && !strncasecmp(scheme, "ws", 2)))
		return 80;
	if ((n == 5 && !strncasecmp(scheme, "https", 5)) || (n == 3 && !strncasecmp(scheme, "wss", 3)))
		return 443;
	return 0;
}

/* "host[:port]" (brackets for IPv6) into c->host/c->port; def when no port. 0 or -EINVAL. */
int netproxy_set_authority(struct npc *c, const char *a, size_t n, uint16_t def)
{
	const char *colon = NULL;
	unsigned long port = def;

	if (n && a[0] == '[') {
		const char *close = memchr(a, ']', n);

		if (!close)
			return -EINVAL;
		if ((size_t)(close - a) + 1 < n) {
			if (close[1] != ':')
				return -EINVAL;
			colon = close + 1;
		}
	} else {
		colon = memchr(a, ':', n);
	}
	if (colon) {
		char *end;
		char num[8];
		size_t k = (size_t)(a + n - colon - 1);

		if (k == 0 || k >= sizeof(num))
			return -EINVAL;
		memcpy(num, colon + 1, k);
		num[k] = 0;
		port = strtoul(num, &end, 10);
		if (*end || port == 0 || port > 65535)
			return -EINVAL;
	}
	if (!netproxy_normalize_host(a, n, c->host, sizeof(c->host)))
		return -EINVAL;
	c->port = (uint16_t)port;
	return 0;
}

static bool name_is(const struct http_header *h, const char *name)
{
	return h->name_len == strlen(name) && !strncasecmp(h->name, name, h->name_len);
}

/* True when the Connection header conn (may be NULL) lists token t[0..n) (case-insensitive). */
static bool conn_names(const struct http_header *conn, const char *t, size_t n)
{
	const char *v, *e;

	if (!conn)
		return false;
	for (v = conn->value, e = v + conn->value_len; v < e;) {
		const char *comma = memchr(v, ',', (size_t)(e - v));
		const char *end = comma ? comma : e;

		while (v < end && (*v == ' ' || *v == '\t'))
			v++;
		while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
			end--;
		if ((size_t)(end - v) == n && !strncasecmp(v, t, n))
			return true;
		v = comma ? comma + 1 : e;
	}
	return false;
}

/*
 * Hop-by-hop headers, dropped on the way through (RFC 9110 §7.6.1): the
 * request's and, for a response (its body is passed as it came, framing
 * included), the same but Transfer-Encoding, Content-Length and Trailer.
 */
static bool hop_by_hop_of(const struct http_header *h, const struct http_header *conn, bool response)
{
	static const char *const names[] = { "connection", "keep-alive", "proxy-connection",
					     "proxy-authorization", "te", "trailer", "upgrade", NULL };
	static const char *const resp_names[] = { "connection", "keep-alive", "proxy-connection",
						  "proxy-authenticate", "te", "upgrade", NULL };

	if (response && (name_is(h, "transfer-encoding") || name_is(h, "content-length") ||
			 name_is(h, "trailer")))
		return false;
	for (size_t i = 0; response && resp_names[i]; i++)
		if (name_is(h, resp_names[i]))
			return true;
	for (size_t i = 0; !response && names[i]; i++)
		if (name_is(h, names[i]))
			return true;
	/* every header Connection names */
	return conn_names(conn, h->name, h->name_len);
}

static bool hop_by_hop(const struct http_header *h, const struct http_header *conn)
{
	return hop_by_hop_of(h, conn, false);
}

/* True when a Connection header holds the token "close". */
bool netproxy_wants_close(const struct http_header *conn)
{
	return conn_names(conn, "close", 5);
}

/*
 * The request head for the origin: origin-form target, hop-by-hop headers
 * dropped, close. With credential masking, a header holding a placeholder of
 * a credential bound to c's target (plain http, origin path opath) carries
 * the real value instead (credentials.h); nothing else changes.
 */
int netproxy_rewrite_head(const struct npc *c, const struct http_request *req, const char *path,
			  size_t path_len, const char *opath, size_t opath_len, const char *auth,
			  struct buf *out)
{
	const struct http_header *conn = http_request_header(req, "connection");
	const struct np_broker *br = c->np->cfg->broker;
	char line[64];

	/* room for the head and the credentials put back at once: no realloc leaves a copy behind */
	if (netproxy_broker_count(br)) {
		size_t est = req->method_len + path_len + 128 + 16384;

		for (size_t i = 0; i < req->n_headers; i++)
			est += req->headers[i].name_len + req->headers[i].value_len + 4;
		if (buf_reserve(out, est) < 0)
			return -ENOMEM;
	}

	if (buf_append(out, req->method, req->method_len) < 0 || buf_append(out, " ", 1) < 0 ||
	    buf_append(out, path, path_len) < 0)
		return -ENOMEM;
	snprintf(line, sizeof(line), " HTTP/1.%d\r\n", req->minor_version);
	if (buf_append(out, line, strlen(line)) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < req->n_headers; i++) {
		const struct http_header *h = &req->headers[i];

		char *real = NULL;
		int r;

		if (hop_by_hop(h, conn))
			continue;
		r = netproxy_broker_translate(br, c->mitm_tls, c->host, c->port, opath, opath_len, h->name,
					      h->name_len, h->value, h->value_len, &real);
		if (r < 0)
			return r;
		if (r > 0)
			log_debug("Network proxy: credential put back in %.*s toward %s:%u",
				  (int)h->name_len, h->name, c->host, (unsigned)c->port);
		r = buf_append(out, h->name, h->name_len) < 0 || buf_append(out, ": ", 2) < 0 ||
		    (real ? buf_append(out, real, strlen(real)) : buf_append(out, h->value, h->value_len)) < 0 ||
		    buf_append(out, "\r\n", 2) < 0;
		if (real) {
			sodium_memzero(real, strlen(real));
			free(real);
		}
		if (r)
			return -ENOMEM;
	}
	/* toward an upstream proxy: its own credential (never the client's) */
	if (auth && (buf_append(out, "proxy-authorization: ", 21) < 0 ||
		     buf_append(out, auth, strlen(auth)) < 0 || buf_append(out, "\r\n", 2) < 0))
		return -ENOMEM;
	return buf_append(out, "connection: close\r\n\r\n", 21);
}

/*
 * The response head for the client: hop-by-hop headers dropped (the
 * origin's Connection: close too), a date added when the origin sent none,
 * and Connection: close when this connection ends with the response.
 */
int netproxy_response_head(struct npc *c, const struct http_response *resp, struct buf *out)
{
	const struct http_header *conn = http_response_header(resp, "connection");
	char line[64], date[64];
	/* in the origin's version, as the reference's (an HTTP/1.0 answer: clients reconnect) */
	int n = snprintf(line, sizeof(line), "HTTP/1.%d %03d ", resp->minor_version, resp->status);

	if (buf_append(out, line, (size_t)n) < 0 || buf_append(out, resp->reason, resp->reason_len) < 0 ||
	    buf_append(out, "\r\n", 2) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < resp->n_headers; i++) {
		const struct http_header *h = &resp->headers[i];

		if (hop_by_hop_of(h, conn, true))
			continue;
		if (buf_append(out, h->name, h->name_len) < 0 || buf_append(out, ": ", 2) < 0 ||
		    buf_append(out, h->value, h->value_len) < 0 || buf_append(out, "\r\n", 2) < 0)
			return -ENOMEM;
	}
	if (!http_response_header(resp, "date") && http_format_date(time(NULL), date, sizeof(date)) >= 0 &&
	    (buf_append(out, "date: ", 6) < 0 || buf_append(out, date, strlen(date)) < 0 ||
	     buf_append(out, "\r\n", 2) < 0))
		return -ENOMEM;
	/* (an HTTP/1.0 client expects the close without being told, and the reference tells it nothing) */
	if (!c->keep && c->minor >= 1 && buf_append(out, "connection: close\r\n", 19) < 0)
		return -ENOMEM;
	return buf_append(out, "\r\n", 2);
}
