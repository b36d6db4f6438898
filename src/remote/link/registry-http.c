/* SPDX-License-Identifier: MIT */
/*
 * One POST to the environment registry (RELAY.md §7): a connection of its own
 * (Connection: close), the credential as a bearer token, the whole exchange
 * bounded by a deadline. Bodies are JSON of a few KiB; a larger answer than
 * REMOTE_HTTP_MAX_BODY is refused.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "config.h"
#include "http-client.h"
#include "http.h"
#include "log.h"
#include "netconn.h"
#include "remote-internal.h"
#include "server.h"

#define REMOTE_HTTP_MAX_HEAD 16384
#define REMOTE_HTTP_MAX_BODY (1u << 20)

struct remote_http {
	struct remote *r;
	struct netconn *nc;
	char *request;
	size_t request_len;
	struct buf in;   /* the response as received */
	struct buf body; /* the decoded body */
	bool head_done;
	int status;
	struct http_body_reader br;
	struct remote_deadline deadline;
	remote_http_fn fn;
	void *userdata;
};

static void http_free(struct remote_http *h)
{
	remote_deadline_clear(&h->deadline);
	if (h->nc)
		netconn_close(h->nc);
	if (h->request)
		explicit_bzero(h->request, h->request_len); /* it holds the credential */
	free(h->request);
	/* A validate answer may echo the authorization. */
	if (h->in.data)
		explicit_bzero(h->in.data, h->in.cap);
	if (h->body.data)
		explicit_bzero(h->body.data, h->body.cap);
	buf_done(&h->in);
	buf_done(&h->body);
	free(h);
}

void remote_http_cancel(struct remote_http *h)
{
	if (h)
		http_free(h);
}

/* Ends the call with an answer or an error; the callback may start another call. */
static void http_finish(struct remote_http *h, int err, const char *why)
{
	remote_http_fn fn = h->fn;
	void *ud = h->userdata;
	int status = h->status;
	struct buf body = h->body;

	h->body = (struct buf){ 0 };
	http_free(h);
	/* NUL-terminated for the JSON parsers' convenience. */
	if (!err && buf_append(&body, "", 1) < 0) {
		err = -ENOMEM;
		why = "out of memory";
	}
	fn(ud, err, why, status, err ? NULL : (const char *)body.data,
	   err || !body.len ? 0 : body.len - 1);
	if (body.data)
		explicit_bzero(body.data, body.cap);
	buf_done(&body);
}

static void on_deadline(struct remote_deadline *d)
{
	struct remote_http *h = container_of(d, struct remote_http, deadline);

	http_finish(h, -ETIMEDOUT, "timed out");
}

static void on_connected(struct netconn *nc)
{
	struct remote_http *h = netconn_userdata(nc);
	int q = netconn_send(nc, h->request, h->request_len);

	if (q < 0)
		http_finish(h, q, "sending the request failed");
}

/* Parses what arrived; returns 1 when the answer is complete, 0 for more, < 0 on error. */
static int http_parse(struct remote_http *h, const char **why)
{
	size_t head_len;
	int q;

	if (!h->head_done) {
		struct http_response resp;

		q = http_response_parse((const char *)h->in.data, h->in.len, REMOTE_HTTP_MAX_HEAD, &resp);
		if (q == -EAGAIN)
			return 0;
		if (q < 0) {
			*why = "malformed HTTP response";
			return q;
		}
		h->status = resp.status;
		if (resp.status >= 100 && resp.status < 200) {
			/* An interim answer (100 Continue): the real one follows. */
			buf_consume(&h->in, (size_t)q);
			return http_parse(h, why);
		}
		head_len = (size_t)q;
		q = http_body_reader_init(&h->br, &resp, false, REMOTE_HTTP_MAX_BODY);
		if (q < 0) {
			*why = "malformed HTTP response framing";
			return q;
		}
		buf_consume(&h->in, head_len); /* resp's views are dead from here */
		h->head_done = true;
	}
	if (!h->br.done && h->in.len) {
		q = http_body_reader_feed(&h->br, h->in.data, h->in.len, &h->body);
		if (q < 0) {
			*why = q == -EMSGSIZE ? "HTTP response body too large" : "malformed HTTP body";
			return q;
		}
		buf_consume(&h->in, (size_t)q);
	}
	return h->br.done ? 1 : 0;
}

static void on_data(struct netconn *nc, const uint8_t *p, size_t n)
{
	struct remote_http *h = netconn_userdata(nc);
	const char *why = NULL;
	int q;

	if (h->in.len + n > REMOTE_HTTP_MAX_HEAD + REMOTE_HTTP_MAX_BODY + 65536) {
		http_finish(h, -EMSGSIZE, "HTTP response too large");
		return;
	}
	if (buf_append(&h->in, p, n) < 0) {
		http_finish(h, -ENOMEM, "out of memory");
		return;
	}
	q = http_parse(h, &why);
	if (q < 0)
		http_finish(h, q, why);
	else if (q > 0)
		http_finish(h, 0, NULL);
}

static void on_closed(struct netconn *nc, int err, const char *why)
{
	struct remote_http *h = netconn_userdata(nc);

	h->nc = NULL; /* freed by src/net after this */
	if (err < 0) {
		http_finish(h, err, why);
		return;
	}
	if (h->head_done && http_body_reader_eof(&h->br) == 0) {
		http_finish(h, 0, NULL);
		return;
	}
	http_finish(h, -EPIPE, h->head_done ? "connection closed before the end of the body"
					    : "connection closed before an HTTP response");
}

static const struct netconn_handlers http_handlers = {
	.connected = on_connected,
	.data = on_data,
	.closed = on_closed,
};

static char *format_request(struct remote *r, enum registry_op op, const char *stream_id,
			    const char *body, size_t len, size_t *ret_len, int *ret_err)
{
	char host[300], auth[64 + 4096], *path, *target, *req;
	struct http_client_header hdrs[6];
	size_t n = 0;
	int q;
	q = http_client_host_header(host, sizeof(host), r->base.host, r->base.ipv6, r->base.port,
				    r->base.tls);
	if (q < 0 || (size_t)q >= sizeof(host)) {
		*ret_err = -EINVAL;
		return NULL;
	}
	if (snprintf(auth, sizeof(auth), "Bearer %s", r->opt.credential) >= (int)sizeof(auth)) {
		*ret_err = -E2BIG;
		return NULL;
	}
	path = registry_request_path(r->environment_id, op);
	if (!path || asprintf(&target, "%s%s", r->base.path, path) < 0) {
		free(path);
		*ret_err = -ENOMEM;
		return NULL;
	}
	free(path);
	hdrs[n++] = (struct http_client_header){ "Authorization", auth };
	hdrs[n++] = (struct http_client_header){ "Content-Type", "application/json" };
	hdrs[n++] = (struct http_client_header){ "Accept", "application/json" };
	hdrs[n++] = (struct http_client_header){ "User-Agent", "uexec/" UEXEC_VERSION };
	hdrs[n++] = (struct http_client_header){ "Connection", "close" };
	if (stream_id)
		hdrs[n++] = (struct http_client_header){ "x-codex-noise-stream-id", stream_id };
	req = http_client_format_request("POST", target, host, hdrs, n, body, len, ret_len, ret_err);
	explicit_bzero(auth, sizeof(auth));
	free(target);
	return req;
}

struct remote_http *remote_http_post(struct remote *r, enum registry_op op, const char *stream_id,
				     const char *body, size_t len, uint64_t timeout_ms,
				     remote_http_fn fn, void *userdata, int *ret_err)
{
	struct netconn_config cfg = {
		.host = r->base.host,
		.port = r->base.port,
		.tls = r->base.tls,
		.nodelay = true,
		.connect_timeout_ms = timeout_ms,
		.sensitive = true, /* the credential, a harness authorization */
	};
	struct remote_http *h = calloc(1, sizeof(*h));
	int q;

	if (!h) {
		*ret_err = -ENOMEM;
		return NULL;
	}
	h->r = r;
	h->fn = fn;
	h->userdata = userdata;
	h->request = format_request(r, op, stream_id, body, len, &h->request_len, ret_err);
	if (!h->request) {
		free(h);
		return NULL;
	}
	q = netconn_open(r->srv, &cfg, &http_handlers, h, &h->nc);
	if (q < 0) {
		*ret_err = q;
		h->nc = NULL;
		http_free(h);
		return NULL;
	}
	remote_deadline_set(r, &h->deadline, timeout_ms, on_deadline);
	return h;
}
