/* SPDX-License-Identifier: MIT */
/*
 * One POST to the environment registry (RELAY.md §7): the credential as a
 * bearer token, the whole exchange bounded by a deadline. Bodies are JSON of
 * a few KiB; a larger answer than REMOTE_HTTP_MAX_BODY is refused.
 *
 * Connections: a registration has one of its own (Connection: close: an
 * ambiguous failure of it is never replayed, §7.1). A validate call (§7.2,
 * one per relay stream, on the path of its channel setup) reuses an idle
 * keep-alive connection when there is one, so that it costs one round trip
 * instead of a TCP (and TLS) handshake as well; the registry may close an
 * idle connection at any time, so a call whose kept connection closes before
 * any byte of an answer runs once more on a new one (validate changes nothing
 * at the registry).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
/* Idle keep-alive connections kept for validate calls, and for how long. */
#define REMOTE_HTTP_IDLE_MAX 4
#define REMOTE_HTTP_IDLE_MS 20000

/* One connection to the registry: a call's, or idle between validate calls. */
struct remote_http_link {
	struct remote *r;
	struct netconn *nc;
	struct remote_http *h;      /* the call on it; NULL while idle */
	struct list_head idle_link; /* r->http_idle */
	struct remote_deadline idle_deadline;
};

struct remote_http {
	struct remote *r;
	struct remote_http_link *link;
	bool keep;   /* a validate call: its connection may be kept after the answer */
	bool reused; /* on a kept connection: closed before an answer, it runs once more */
	bool server_keeps; /* the answer's head allows another request on the connection */
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

static void link_free(struct remote_http_link *l)
{
	list_del(&l->idle_link);
	remote_deadline_clear(&l->idle_deadline);
	if (l->nc)
		netconn_close(l->nc);
	free(l);
}

void remote_http_idle_close_all(struct remote *r)
{
	while (!list_empty(&r->http_idle))
		link_free(list_first_entry(&r->http_idle, struct remote_http_link, idle_link));
}

static void on_idle_deadline(struct remote_deadline *d)
{
	link_free(container_of(d, struct remote_http_link, idle_deadline));
}

/* After a complete answer: h's connection joins the idle ones when it may. */
static void link_park(struct remote_http *h)
{
	struct remote_http_link *l = h->link, *x;
	unsigned n = 0;

	if (!l || !l->nc || !h->keep || !h->server_keeps || !h->br.done ||
	    h->br.mode == HTTP_BODY_UNTIL_CLOSE || h->in.len)
		return;
	list_for_each_entry(x, &h->r->http_idle, idle_link)
		n++;
	if (n >= REMOTE_HTTP_IDLE_MAX)
		return;
	h->link = NULL;
	l->h = NULL;
	list_add_tail(&l->idle_link, &h->r->http_idle);
	remote_deadline_set(h->r, &l->idle_deadline, REMOTE_HTTP_IDLE_MS, on_idle_deadline);
}

static void http_free(struct remote_http *h)
{
	remote_deadline_clear(&h->deadline);
	if (h->link)
		link_free(h->link); /* a call ended before its answer: its connection goes */
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
	if (!err)
		link_park(h);
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
	struct remote_http_link *l = netconn_userdata(nc);
	struct remote_http *h = l->h;
	int q;

	if (!h)
		return;
	q = netconn_send(nc, h->request, h->request_len);
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
		{
			const struct http_header *c = http_response_header(&resp, "connection");

			h->server_keeps = resp.minor_version >= 1 &&
					  !(c && c->value_len == 5 && !strncasecmp(c->value, "close", 5));
		}
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
	struct remote_http_link *l = netconn_userdata(nc);
	struct remote_http *h = l->h;
	const char *why = NULL;
	int q;

	if (!h) { /* idle: nothing was asked */
		link_free(l);
		return;
	}
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

static int http_connect(struct remote_http *h);

static void on_closed(struct netconn *nc, int err, const char *why)
{
	struct remote_http_link *l = netconn_userdata(nc);
	struct remote_http *h = l->h;
	int q;

	l->nc = NULL; /* freed by src/net after this */
	if (!h) {
		link_free(l);
		return;
	}
	if (h->reused && !h->head_done && !h->in.len) {
		/* The registry had closed the kept connection: once more on a new one. */
		h->link = NULL;
		link_free(l);
		q = http_connect(h);
		if (q < 0)
			http_finish(h, q, "connecting to the registry failed");
		return;
	}
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
	if (op != REGISTRY_VALIDATE) /* validate keeps its connection (see above) */
		hdrs[n++] = (struct http_client_header){ "Connection", "close" };
	if (stream_id)
		hdrs[n++] = (struct http_client_header){ "x-codex-noise-stream-id", stream_id };
	req = http_client_format_request("POST", target, host, hdrs, n, body, len, ret_len, ret_err);
	explicit_bzero(auth, sizeof(auth));
	free(target);
	return req;
}

/* h on a new connection of its own. */
static int http_connect(struct remote_http *h)
{
	struct remote *r = h->r;
	struct netconn_config cfg = {
		.host = r->base.host,
		.port = r->base.port,
		.tls = r->base.tls,
		.nodelay = true,
		.connect_timeout_ms = REMOTE_CONNECT_TIMEOUT_MS, /* the call's deadline bounds it too */
		.sensitive = true, /* the credential, a harness authorization */
	};
	struct remote_http_link *l = calloc(1, sizeof(*l));
	int q;

	if (!l)
		return -ENOMEM;
	l->r = r;
	l->h = h;
	q = netconn_open(r->srv, &cfg, &http_handlers, l, &l->nc);
	if (q < 0) {
		free(l);
		return q;
	}
	h->link = l;
	h->reused = false;
	return 0;
}

struct remote_http *remote_http_post(struct remote *r, enum registry_op op, const char *stream_id,
				     const char *body, size_t len, uint64_t timeout_ms,
				     remote_http_fn fn, void *userdata, int *ret_err)
{
	struct remote_http *h = calloc(1, sizeof(*h));
	int q = -EAGAIN;

	if (!h) {
		*ret_err = -ENOMEM;
		return NULL;
	}
	h->r = r;
	h->fn = fn;
	h->userdata = userdata;
	h->keep = op == REGISTRY_VALIDATE;
	h->request = format_request(r, op, stream_id, body, len, &h->request_len, ret_err);
	if (!h->request) {
		free(h);
		return NULL;
	}
	if (h->keep && !list_empty(&r->http_idle)) {
		struct remote_http_link *l =
			list_first_entry(&r->http_idle, struct remote_http_link, idle_link);

		list_del(&l->idle_link);
		remote_deadline_clear(&l->idle_deadline);
		l->h = h;
		h->link = l;
		h->reused = true;
		q = netconn_send(l->nc, h->request, h->request_len);
		if (q < 0) {
			h->link = NULL;
			link_free(l);
		}
	}
	if (q < 0)
		q = http_connect(h);
	if (q < 0) {
		*ret_err = q;
		http_free(h);
		return NULL;
	}
	remote_deadline_set(r, &h->deadline, timeout_ms, on_deadline);
	return h;
}
