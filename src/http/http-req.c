/* SPDX-License-Identifier: MIT */
/*
 * Runs one http/request (http-req.h): a netconn per hop, redirects as the
 * reference follows them, one deadline over the whole exchange, the buffered
 * or streamed body. Every reply and notification texts are the reference's
 * (PROTOCOL.md §6.23, §7.5).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base64.h"
#include "conn.h"
#include "http-decode.h"
#include "http-req.h"
#include "log.h"
#include "netconn.h"
#include "rpc.h"
#include "server.h"

static struct list_head reqs = LIST_HEAD_INIT(reqs);
/* Freed requests whose timer's cancel has not completed yet (see http_req_free). */
static struct list_head dead_reqs = LIST_HEAD_INIT(dead_reqs);

static const struct netconn_handlers handlers;

/* ---- bookkeeping ---- */

unsigned http_req_count(const struct conn *c)
{
	struct http_req *r;
	unsigned n = 0;

	list_for_each_entry(r, &reqs, link)
		n += !c || r->conn == c;
	return n;
}

uint64_t http_req_bodies(const struct conn *c)
{
	struct http_req *r;
	uint64_t n = 0;

	list_for_each_entry(r, &reqs, link)
		if (r->conn == c)
			n += r->body_len;
	return n;
}

bool http_req_stream_active(const struct conn *c, const char *rid, size_t len)
{
	struct http_req *r;

	list_for_each_entry(r, &reqs, link)
		if (r->conn == c && r->stream && r->rid_len == len && memcmp(r->rid, rid, len) == 0)
			return true;
	return false;
}

/* Buffered body bytes held for c's requests: their sum is bounded, not only each one. */
static uint64_t conn_buffered(const struct conn *c)
{
	struct http_req *r;
	uint64_t n = 0;

	list_for_each_entry(r, &reqs, link)
		if (r->conn == c && !r->stream)
			n += r->body_out.len;
	return n;
}

static void wipe_buf(struct buf *b)
{
	if (b->data)
		explicit_bzero(b->data, b->cap);
	buf_done(b);
}

static void headers_free(struct http_req *r)
{
	for (size_t i = 0; i < r->n_hdrs; i++) {
		/* Values may hold a secret (valueEnvVar, Authorization). */
		explicit_bzero(r->hdrs[i].value, r->hdrs[i].value_len);
		free(r->hdrs[i].name);
		free(r->hdrs[i].value);
	}
	free(r->hdrs);
	r->hdrs = NULL;
	r->n_hdrs = 0;
}

static void req_release(struct http_req *r)
{
	headers_free(r);
	if (r->body)
		explicit_bzero(r->body, r->body_len);
	free(r->body);
	free(r->method);
	free(r->rid);
	free(r->rid_json);
	http_url_parts_done(&r->url);
	http_proxy_done(&r->proxy);
	json_decref(r->resp_headers);
	http_decoder_free(r->dec);
	wipe_buf(&r->pending);
	wipe_buf(&r->in);
	wipe_buf(&r->body_out);
	free(r);
}

void http_req_free(struct http_req *r)
{
	if (list_linked(&r->link))
		list_del(&r->link);
	if (r->nc)
		netconn_close(r->nc);
	r->nc = NULL;
	json_decref(r->id);
	r->id = NULL;
	r->conn = NULL;
	if (r->timer_armed && !r->srv->stopping) {
		/* The timer's op points into r: free once its cancel completes (on_timer). */
		r->dead = true;
		list_add_tail(&r->link, &dead_reqs);
		uring_timer_cancel(&r->timer);
		return;
	}
	req_release(r);
}

/* ---- replies ---- */

/* Replies -32603 with prefix + arg (when the request is still unanswered) and frees r. */
static void fail2(struct http_req *r, const char *prefix, const char *arg, const char *suffix)
{
	if (r->conn && r->id)
		rpc_reply_error(r->conn, r->id, RPC_INTERNAL_ERROR, "%s%s%s", prefix, arg, suffix);
	http_req_free(r);
}

static void fail(struct http_req *r, const char *msg)
{
	fail2(r, msg, "", "");
}

/* Connect, TLS, DNS, a malformed head, the deadline before the head: the reference's one text. */
static void fail_send(struct http_req *r)
{
	/* The URL as the reference shows it: without userinfo, with the fragment. */
	char origin[600];
	int n = http_url_origin(&r->url, origin, sizeof(origin));
	char *shown = NULL;

	if (n > 0 && (size_t)n < sizeof(origin) &&
	    asprintf(&shown, "%s%s", origin, r->url.href + r->url.href_origin_len) < 0)
		shown = NULL;
	fail2(r, "http/request failed: error sending request for url (", shown ? shown : r->url.href,
	      ")");
	free(shown);
}

/*
 * A delta that could not be queued (out of memory): the client would see a
 * gap, so its connection ends, after r is freed (closing it frees the
 * connection's requests).
 */
static void delta_lost(struct http_req *r)
{
	struct conn *c = r->conn;

	http_req_free(r);
	if (c)
		conn_close(c, 1011, "out of memory");
}

/* A body that could not be read whole: a reply (buffered) or the terminal delta (streamed). */
static void fail_body(struct http_req *r)
{
	if (r->stream) {
		if (http_msg_delta(r, NULL, 0, true, "error decoding response body") < 0) {
			delta_lost(r);
			return;
		}
		http_req_free(r);
		return;
	}
	fail(r, "failed to read http/request response body: error decoding response body");
}

static void complete(struct http_req *r)
{
	if (r->stream && http_msg_delta(r, NULL, 0, true, NULL) < 0) {
		delta_lost(r);
		return;
	}
	if (!r->stream && r->conn && r->id)
		(void)http_msg_result(r, r->status, r->resp_headers);
	http_req_free(r);
}

/* ---- the body ---- */

static void fail_too_large(struct http_req *r)
{
	char msg[160];

	snprintf(msg, sizeof(msg),
		 "failed to read http/request response body: the response body exceeds this "
		 "server's limit of %" PRIu64 " bytes (--http-max-response-bytes)",
		 r->srv->cfg.http_max_response_bytes);
	fail(r, msg);
}

/*
 * Body bytes as the client gets them (decoded): a delta, or appended to the
 * buffered body within the connection's limit. Returns false once r is gone.
 */
static bool emit(struct http_req *r, const uint8_t *p, size_t n)
{
	if (n == 0)
		return true;
	if (r->stream) {
		if (http_msg_delta(r, p, n, false, NULL) < 0) {
			delta_lost(r);
			return false;
		}
		return true;
	}
	if (buf_append(&r->body_out, p, n) < 0) {
		fail(r, "http/request failed: out of memory");
		return false;
	}
	if (conn_buffered(r->conn) > r->srv->cfg.http_max_response_bytes) {
		fail_too_large(r);
		return false;
	}
	return true;
}

/* Stops reading the upstream until the client's output queue drained (http_conn_drained). */
static void pause_reading(struct http_req *r)
{
	if (r->paused)
		return;
	r->paused = true;
	if (r->nc)
		netconn_set_reading(r->nc, false);
}

/*
 * Delivers r->pending (body bytes with their framing removed, still in their
 * content coding) in pieces, stopping while the client's output queue is
 * congested (a stream), and ends r once the body ended and all of it went
 * out. Returns false once r is gone.
 */
static bool drain_pending(struct http_req *r)
{
	static uint8_t piece[65536]; /* the loop thread's */

	while (r->pending.len > 0) {
		if (r->stream && r->conn && conn_congested(r->conn)) {
			pause_reading(r);
			return true;
		}
		if (!r->dec) {
			if (!emit(r, r->pending.data, r->pending.len))
				return false;
			r->pending.len = 0;
		} else {
			const uint8_t *in = r->pending.data;
			size_t left = r->pending.len, used;
			ssize_t got = http_decoder_run(r->dec, &in, &left, piece, sizeof(piece));

			if (got < 0) {
				fail_body(r);
				return false;
			}
			used = r->pending.len - left;
			buf_consume(&r->pending, used);
			if (!emit(r, piece, (size_t)got))
				return false;
			if (got == 0 && used == 0)
				break; /* no progress (cannot happen with room for output): do not spin */
		}
	}
	/* A decoder may still hold output when its input is used up. */
	while (r->dec && r->body_end && !r->body_err) {
		const uint8_t *in = NULL;
		size_t left = 0;
		ssize_t got;

		if (r->stream && r->conn && conn_congested(r->conn)) {
			pause_reading(r);
			return true;
		}
		got = http_decoder_run(r->dec, &in, &left, piece, sizeof(piece));
		if (got < 0) {
			fail_body(r);
			return false;
		}
		if (got == 0)
			break;
		if (!emit(r, piece, (size_t)got))
			return false;
	}
	if (r->body_end) {
		if (r->body_err || (r->dec && http_decoder_finish(r->dec) < 0))
			fail_body(r);
		else
			complete(r);
		return false;
	}
	if (r->stream && r->conn && conn_congested(r->conn))
		pause_reading(r);
	return true;
}

/* Removes the framing of received body bytes, then delivers them. Returns false once r is gone. */
static bool body_feed(struct http_req *r, const uint8_t *p, size_t n)
{
	while (n > 0 && !r->br.done) {
		int q = http_body_reader_feed(&r->br, p, n, &r->pending);

		if (q == -EMSGSIZE && !r->stream) {
			fail_too_large(r);
			return false;
		}
		if (q < 0) {
			/* What came before the error still goes out, as the reference's. */
			r->body_err = true;
			r->body_end = true;
			break;
		}
		p += q;
		n -= (size_t)q;
	}
	if (r->br.done)
		r->body_end = true;
	return drain_pending(r);
}

/* ---- redirects ---- */

static bool is_redirect(int status)
{
	return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

static int start_hop(struct http_req *r);
static void on_tunnel(struct http_req *r);

/*
 * Follows a redirect to next (owned from here): the method and body as the
 * reference changes them, credentials dropped across origins, the Referer of
 * the URL that answered.
 */
static void follow(struct http_req *r, int status, struct http_url_parts *next)
{
	static const char *const body_headers[] = { "content-type", "content-length", "content-encoding",
						    "transfer-encoding", NULL };
	static const char *const credentials[] = { "authorization", "cookie", "cookie2",
						   "proxy-authorization", "www-authenticate", NULL };
	static const char *const referer[] = { "referer", NULL };
	bool to_get = ((status == 301 || status == 302) && strcmp(r->method, "POST") == 0) ||
		      (status == 303 && strcmp(r->method, "HEAD") != 0);
	bool same = http_url_same_origin(&r->url, next);
	char ref[600];
	int q = 0, rl = -1;

	if (to_get) {
		char *m = strdup("GET");

		if (!m)
			goto oom;
		free(r->method);
		r->method = m;
		if (r->body)
			explicit_bzero(r->body, r->body_len);
		free(r->body);
		r->body = NULL;
		r->body_len = 0;
		http_req_drop_headers(r, body_headers);
	}
	if (!same)
		http_req_drop_headers(r, credentials);
	http_req_drop_headers(r, referer);
	/* No Referer from https to http; across origins only the origin. */
	if (!(r->url.tls && !next->tls)) {
		if (same) {
			rl = http_url_origin(&r->url, ref, sizeof(ref));
			if (rl > 0 && (size_t)rl < sizeof(ref))
				rl += snprintf(ref + rl, sizeof(ref) - (size_t)rl, "%s", r->url.target);
		} else {
			rl = http_url_origin(&r->url, ref, sizeof(ref) - 1);
			if (rl > 0 && (size_t)rl < sizeof(ref) - 1) {
				ref[rl++] = '/';
				ref[rl] = '\0';
			}
		}
		/* A Referer longer than the buffer is left out rather than cut. */
		if (rl > 0 && (size_t)rl < sizeof(ref) - 1)
			q = http_req_add_header(r, "referer", ref, (size_t)rl);
	}
	http_url_parts_done(&r->url);
	r->url = *next;
	*next = (struct http_url_parts){ 0 };
	if (q < 0 || http_req_add_basic_auth(r) < 0)
		goto oom;
	r->redirects++;
	netconn_close(r->nc);
	r->nc = NULL;
	r->in.len = 0;
	(void)start_hop(r);
	return;
oom:
	http_url_parts_done(next);
	fail(r, "http/request failed: out of memory");
}

/* ---- the response head ---- */

/* Handles a complete head at r->in (head_len bytes). Returns false once r is gone. */
static bool on_head(struct http_req *r, const struct http_response *resp, size_t head_len)
{
	const struct http_header *loc = http_response_header(resp, "location");
	uint64_t max = r->stream ? UINT64_MAX : r->srv->cfg.http_max_response_bytes;
	enum http_coding coding;
	int q;

	if (r->follow && is_redirect(resp->status) && loc) {
		struct http_url_parts next;
		char scheme[32];

		q = http_url_parts_join(&r->url, loc->value, loc->value_len, &next, NULL, scheme,
					sizeof(scheme));
		if (q == -EPROTONOSUPPORT) {
			fail2(r, "http/request failed: redirect target uses unsupported URL scheme: ",
			      scheme, "");
			return false;
		}
		if (q == -ENOMEM) {
			fail(r, "http/request failed: out of memory");
			return false;
		}
		if (q == 0) {
			if (r->redirects >= HTTP_REQ_MAX_REDIRECTS) {
				http_url_parts_done(&next);
				fail(r, "http/request failed: too many redirects");
				return false;
			}
			follow(r, resp->status, &next);
			return false;
		}
		/* A Location that is no URL: the 3xx is the answer, as the reference's. */
	}
	q = http_body_reader_init(&r->br, resp, strcmp(r->method, "HEAD") == 0, max);
	if (q == -EMSGSIZE) {
		fail_too_large(r);
		return false;
	}
	if (q < 0) {
		fail_send(r);
		return false;
	}
	r->status = resp->status;
	coding = http_msg_coding(resp);
	r->resp_headers = http_msg_headers_json(resp, coding != HTTP_CODING_NONE);
	/* No decoder for a body known to be empty (the reference's client makes none either). */
	if (coding != HTTP_CODING_NONE && !r->br.done)
		r->dec = http_decoder_new(coding);
	if (!r->resp_headers || (coding != HTTP_CODING_NONE && !r->br.done && !r->dec)) {
		fail(r, "http/request failed: out of memory");
		return false;
	}
	r->head_done = true;
	if (r->stream) {
		if (http_msg_result(r, r->status, r->resp_headers) < 0) {
			http_req_free(r);
			return false;
		}
	}
	return body_feed(r, r->in.data + head_len, r->in.len - head_len);
}

static void on_data(struct netconn *nc, const uint8_t *p, size_t n)
{
	struct http_req *r = netconn_userdata(nc);

	if (r->head_done) {
		(void)body_feed(r, p, n);
		return;
	}
	if (buf_append(&r->in, p, n) < 0) {
		fail(r, "http/request failed: out of memory");
		return;
	}
	if (r->proxy.host && r->url.tls && !r->tunnel_up) {
		on_tunnel(r);
		return;
	}
	for (;;) {
		struct http_response resp;
		int q = http_response_parse((const char *)r->in.data, r->in.len, HTTP_REQ_MAX_HEAD, &resp);

		if (q == -EAGAIN)
			return;
		if (q < 0) {
			fail_send(r);
			return;
		}
		if (resp.status >= 600) {
			/* Not a status the reference's client takes. */
			fail_send(r);
			return;
		}
		if (resp.status >= 100 && resp.status < 200 && resp.status != 101) {
			/* An interim answer (100 Continue, 103): the real one follows. */
			buf_consume(&r->in, (size_t)q);
			continue;
		}
		(void)on_head(r, &resp, (size_t)q);
		return;
	}
}

/* ---- the connection ---- */

/* https through a proxy: "CONNECT host:port", then TLS in the tunnel (on_tunnel). */
static void send_connect(struct http_req *r)
{
	char hp[320], *req = NULL;
	int hl = http_client_host_header(hp, sizeof(hp), r->url.host, r->url.ipv6, r->url.port, false);
	int n, q;

	/* host:port always, as the authority form wants. */
	if (hl > 0 && (size_t)hl < sizeof(hp) && !strchr(r->url.ipv6 ? strrchr(hp, ']') : hp, ':'))
		snprintf(hp + hl, sizeof(hp) - (size_t)hl, ":%u", r->url.port);
	n = asprintf(&req, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s%s%s\r\n", hp, hp,
		     r->proxy.auth ? "Proxy-Authorization: " : "", r->proxy.auth ? r->proxy.auth : "",
		     r->proxy.auth ? "\r\n" : "");
	if (hl <= 0 || (size_t)hl >= sizeof(hp) || n < 0) {
		free(req);
		fail_send(r);
		return;
	}
	q = netconn_send(r->nc, req, (size_t)n);
	explicit_bzero(req, (size_t)n);
	free(req);
	if (q < 0)
		fail_send(r);
}

/* The proxy's answer to CONNECT (at r->in): 2xx and nothing after it starts TLS. */
static void on_tunnel(struct http_req *r)
{
	struct http_response resp;
	int q = http_response_parse((const char *)r->in.data, r->in.len, HTTP_REQ_MAX_HEAD, &resp);

	if (q == -EAGAIN)
		return;
	if (q < 0 || resp.status < 200 || resp.status > 299 || (size_t)q != r->in.len ||
	    netconn_start_tls(r->nc, r->url.host) < 0) {
		fail_send(r);
		return;
	}
	r->in.len = 0;
	r->tunnel_up = true; /* connected() comes again once TLS is up: the request goes then */
}

static void on_connected(struct netconn *nc)
{
	struct http_req *r = netconn_userdata(nc);
	struct buf w = { 0 };
	char host[320];
	int q, hl;

	hl = http_client_host_header(host, sizeof(host), r->url.host, r->url.ipv6, r->url.port,
				     r->url.tls);
	if (hl < 0 || (size_t)hl >= sizeof(host)) {
		fail_send(r);
		return;
	}
	if (r->proxy.host && r->url.tls && !r->tunnel_up) {
		send_connect(r);
		return;
	}
	q = buf_append(&w, r->method, strlen(r->method));
	if (q >= 0)
		q = buf_append(&w, " ", 1);
	if (q >= 0 && r->proxy.host && !r->url.tls) {
		/* Through a proxy, plain http: the absolute form. */
		char origin[600];
		int ol = http_url_origin(&r->url, origin, sizeof(origin));

		q = ol > 0 && (size_t)ol < sizeof(origin) ? buf_append(&w, origin, (size_t)ol) : -EINVAL;
	}
	if (q >= 0)
		q = buf_append(&w, r->url.target, strlen(r->url.target));
	if (q >= 0)
		q = buf_append(&w, " HTTP/1.1\r\n", 11);
	for (size_t i = 0; q >= 0 && i < r->n_hdrs; i++) {
		q = buf_append(&w, r->hdrs[i].name, strlen(r->hdrs[i].name));
		if (q >= 0)
			q = buf_append(&w, ": ", 2);
		if (q >= 0)
			q = buf_append(&w, r->hdrs[i].value, r->hdrs[i].value_len);
		if (q >= 0)
			q = buf_append(&w, "\r\n", 2);
	}
	/* What the reference's client adds, in its order, unless the client gave them. */
	if (q >= 0 && !http_req_has_header(r, "accept"))
		q = buf_append(&w, "accept: */*\r\n", 13);
	/* The proxy's credential, where the reference's client puts it. */
	if (q >= 0 && r->proxy.host && !r->url.tls && r->proxy.auth &&
	    !http_req_has_header(r, "proxy-authorization")) {
		q = buf_append(&w, "proxy-authorization: ", 21);
		if (q >= 0)
			q = buf_append(&w, r->proxy.auth, strlen(r->proxy.auth));
		if (q >= 0)
			q = buf_append(&w, "\r\n", 2);
	}
	if (q >= 0 && !http_req_has_header(r, "accept-encoding"))
		q = buf_append(&w, "accept-encoding: zstd,gzip\r\n", 28);
	if (q >= 0 && !http_req_has_header(r, "host")) {
		q = buf_append(&w, "host: ", 6);
		if (q >= 0)
			q = buf_append(&w, host, (size_t)hl);
		if (q >= 0)
			q = buf_append(&w, "\r\n", 2);
	}
	if (q >= 0 && r->body_len > 0 && !http_req_has_header(r, "content-length")) {
		char cl[48];
		int n = snprintf(cl, sizeof(cl), "content-length: %zu\r\n", r->body_len);

		q = buf_append(&w, cl, (size_t)n);
	}
	if (q >= 0)
		q = buf_append(&w, "\r\n", 2);
	if (q >= 0 && r->body_len > 0)
		q = buf_append(&w, r->body, r->body_len);
	if (q >= 0)
		q = netconn_send(nc, w.data, w.len);
	wipe_buf(&w);
	if (q < 0)
		fail_send(r);
}

static void on_closed(struct netconn *nc, int err, const char *why)
{
	struct http_req *r = netconn_userdata(nc);

	(void)why; /* the reference says no more than "error sending request" */
	r->nc = NULL; /* freed by src/net after this */
	if (!r->head_done) {
		fail_send(r);
		return;
	}
	/* The body ends here; what waits for the client still goes out first. */
	r->body_err = r->body_err || err != 0 || http_body_reader_eof(&r->br) < 0;
	r->body_end = true;
	(void)drain_pending(r);
}

static const struct netconn_handlers handlers = {
	.connected = on_connected,
	.data = on_data,
	.closed = on_closed,
};

static int start_hop(struct http_req *r)
{
	struct netconn_config cfg = {
		.host = r->url.host,
		.port = r->url.port,
		.tls = r->url.tls,
		.nodelay = true,
		.sensitive = true, /* headers may carry credentials (valueEnvVar, Authorization) */
	};
	int q;

	r->head_done = false;
	r->tunnel_up = false;
	http_proxy_done(&r->proxy);
	q = http_proxy_for(&r->url, &r->proxy);
	if (q < 0) {
		fail(r, "http/request failed: out of memory");
		return q;
	}
	if (q > 0) {
		/* Plain to the proxy; https goes through a CONNECT tunnel, TLS started in it. */
		cfg.host = r->proxy.host;
		cfg.port = r->proxy.port;
		cfg.tls = false;
	}
	q = netconn_open(r->srv, &cfg, &handlers, r, &r->nc);
	if (q < 0) {
		r->nc = NULL;
		fail_send(r);
	}
	return q;
}

static void on_timer(struct uring_timer *t, bool fired)
{
	struct http_req *r = container_of(t, struct http_req, timer);

	r->timer_armed = false;
	if (r->dead) {
		list_del(&r->link);
		req_release(r);
		return;
	}
	if (!fired)
		return;
	/* The deadline covers the whole exchange, body included (the reference's timeout). */
	if (r->head_done)
		fail_body(r);
	else
		fail_send(r);
}

void http_req_start(struct http_req *r)
{
	list_add_tail(&r->link, &reqs);
	if (http_req_add_basic_auth(r) < 0) {
		fail(r, "http/request failed: out of memory");
		return;
	}
	if (r->timeout_ms) {
		r->timer_armed = true;
		uring_timer_arm(&r->srv->ring, &r->timer, r->timeout_ms, on_timer);
	}
	(void)start_hop(r);
}

/* ---- the client connection ---- */

void http_conn_closed(struct conn *c)
{
	struct http_req *r, *n;

	list_for_each_entry_safe(r, n, &reqs, link)
		if (r->conn == c)
			http_req_free(r);
}

void http_conn_drained(struct conn *c)
{
	struct http_req *r, *n;

	if (conn_congested(c))
		return;
	list_for_each_entry_safe(r, n, &reqs, link) {
		if (r->conn != c || !r->paused)
			continue;
		r->paused = false;
		if (!drain_pending(r))
			continue; /* r ended */
		if (!r->paused && r->nc)
			netconn_set_reading(r->nc, true);
	}
}

void http_req_free_all(void)
{
	struct http_req *r, *n;

	/* None should be left (the connections ended first); their netconns go with netconn_free_all. */
	list_for_each_entry_safe(r, n, &reqs, link) {
		r->nc = NULL;
		r->timer_armed = false;
		http_req_free(r);
	}
	list_for_each_entry_safe(r, n, &dead_reqs, link) {
		list_del(&r->link);
		req_release(r);
	}
}
