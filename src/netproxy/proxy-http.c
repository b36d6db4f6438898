/* SPDX-License-Identifier: MIT */
/*
 * The managed network's proxy (proxy-internal.h): HTTP. Each complete
 * request head is parsed, its target found (CONNECT authority, absolute
 * form, Host), decided by the policy (review, limited mode's method guard,
 * interception), then refused or forwarded: a CONNECT opens a tunnel, a
 * plain request goes out with its rewritten head and its declared body
 * (Content-Length or chunked), and the response comes back with its
 * framing followed to its end, after which a kept connection reads its
 * next request.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "credentials.h"
#include "http.h"
#include "log.h"
#include "macro.h"
#include "netconn.h"
#include "netproxy-config.h"
#include "proxy-internal.h"
#include "server.h"

/* The response is complete: the client's connection waits for its next request, or ends. */
static void response_done(struct npc *c)
{
	bool body_sent = c->chunked ? netproxy_chunked_done(&c->ch) : c->body_left == 0;

	netconn_close(c->up);
	c->up = NULL;
	/* an answer before the request's body ended leaves the client's bytes out of step */
	if (!c->keep || !body_sent || !c->client) {
		netproxy_finish_client(c);
		netproxy_npc_maybe_free(c);
		return;
	}
	c->state = NPC_HEAD;
	c->served = true;
	c->resp_started = false;
	c->via = NULL;
	/* an idle connection ends 30 s after its last response, as the reference's */
	netproxy_head_deadline(c);
	netconn_set_reading(c->client, true);
	netproxy_client_heads(c);
}

/* Body bytes of the response: passed on as they came, their framing followed to the end. */
static void response_body(struct npc *c, const uint8_t *p, size_t n)
{
	long r;

	if (c->body.done || !n)
		return; /* after the end: not the response's */
	r = http_body_reader_feed(&c->body, p, n, NULL);
	if (r < 0) {
		c->keep = false;
		r = (long)n; /* malformed framing: passed on, and the connection ends with it */
	}
	c->np->srv->metrics.proxy_bytes_down += (uint64_t)r;
	if (!c->client || netconn_send(c->client, p, (size_t)r) < 0) {
		netconn_close(c->up);
		c->up = NULL;
		netproxy_npc_maybe_free(c);
		return;
	}
	if (c->body.done) {
		response_done(c);
		return;
	}
	if (netconn_queued(c->client) > NPC_QUEUE_HIGH)
		netconn_set_reading(c->up, false);
}

/* FORWARD: what the origin (or the upstream proxy) answers. */
void netproxy_forward_response(struct npc *c, const uint8_t *p, size_t n)
{
	struct http_response resp;
	struct buf out = { 0 };
	int r;

	if (c->resp_started) {
		response_body(c, p, n);
		return;
	}
	if (buf_append(&c->up_head, p, n) < 0)
		goto fail;
	for (;;) {
		r = http_response_parse((const char *)c->up_head.data, c->up_head.len, NPC_HEAD_MAX, &resp);
		if (r == -EAGAIN)
			return;
		if (r < 0)
			goto fail;
		if (resp.status >= 200 || resp.status == 101)
			break;
		/* an interim answer (100 Continue): passed on as it is; the final one follows */
		if (c->client)
			(void)netconn_send(c->client, c->up_head.data, (size_t)r);
		buf_consume(&c->up_head, (size_t)r);
	}
	if (resp.status == 101 ||
	    http_body_reader_init(&c->body, &resp, c->head_request, UINT64_MAX) < 0)
		goto fail;
	if (c->body.mode == HTTP_BODY_UNTIL_CLOSE)
		c->keep = false; /* its end is the origin's close: so is the client's */
	if (netproxy_response_head(c, &resp, &out) < 0 || !c->client ||
	    netconn_send(c->client, out.data, out.len) < 0)
		goto fail;
	buf_done(&out);
	c->resp_started = true;
	buf_consume(&c->up_head, (size_t)r);
	{
		/* the body's first bytes came with the head */
		struct buf rest = c->up_head;

		c->up_head = (struct buf){ 0 };
		if (c->body.done)
			response_done(c);
		else
			response_body(c, rest.data, rest.len);
		buf_done(&rest);
	}
	return;
fail:
	buf_done(&out);
	buf_done(&c->up_head);
	log_info_ratelimited("Network proxy: a bad response from %s:%u", c->host, (unsigned)c->port);
	if (!c->resp_started)
		netproxy_send_bad_gateway(c);
	netconn_close(c->up);
	c->up = NULL;
	netproxy_finish_client(c);
	netproxy_npc_maybe_free(c);
}

/* FORWARD: the declared body out of the buffer; then the client's reading stops. */
void netproxy_pass_body(struct npc *c)
{
	size_t k = c->head.len < c->body_left ? c->head.len : (size_t)c->body_left;
	bool more;

	if (c->chunked) {
		long r = netproxy_chunked_scan(&c->ch, c->head.data, c->head.len);

		if (r < 0) {
			/* a malformed body: the origin has a truncated request, the client an end */
			if (c->up)
				netconn_close(c->up);
			c->up = NULL;
			netproxy_finish_client(c);
			return;
		}
		k = (size_t)r;
	}
	if (k && c->up && netconn_send(c->up, c->head.data, k) == 0) {
		c->np->srv->metrics.proxy_bytes_up += k;
		buf_consume(&c->head, k);
		if (!c->chunked)
			c->body_left -= k;
	}
	more = c->chunked ? !netproxy_chunked_done(&c->ch) : c->body_left > 0;
	if (c->client)
		netconn_set_reading(c->client, more && netconn_queued(c->up) <= NPC_QUEUE_HIGH);
}

/* The request (a head of n bytes) was answered here: the next one may follow, or the end. */
void netproxy_answered(struct npc *c, size_t n)
{
	buf_consume(&c->head, n);
	if (c->keep)
		netproxy_head_deadline(c); /* the connection stays open for the next request */
	else
		netproxy_finish_client(c);
}

/* An answer of 400 with the reference's body for a request that cannot be read. */
static void send_bad_request(struct npc *c)
{
	char out[256];
	int k = http_format_bad_request(time(NULL), out, sizeof(out));

	if (k > 0)
		(void)netconn_send(c->client, out, (size_t)k);
}

/* GET, HEAD and OPTIONS: what limited mode lets through. */
static bool read_only_method(const struct http_request *req)
{
	return (req->method_len == 3 && !memcmp(req->method, "GET", 3)) ||
	       (req->method_len == 4 && !memcmp(req->method, "HEAD", 4)) ||
	       (req->method_len == 7 && !memcmp(req->method, "OPTIONS", 7));
}

/*
 * Inside an intercepted tunnel: the target is the CONNECT's, already
 * decided (its addresses are still checked at each dial); an origin-form
 * request only, its path into *path. False once answered (or ended).
 */
static bool mitm_target(struct npc *c, const struct http_request *req, size_t n,
			const char **path, size_t *path_len)
{
	const char *t = req->path;
	size_t tl = req->path_len;
	const struct http_header *h = http_request_header(req, "host");
	char hn[256];

	if (c->connect) {
		netproxy_send_text(c, "405 Method Not Allowed", NULL,
				   "CONNECT not supported inside MITM");
		netproxy_answered(c, n);
		return false;
	}
	/* the tunnel's target only: a Host naming another is refused (the reference's) */
	if (h && (!netproxy_normalize_host(h->value, h->value_len, hn, sizeof(hn)) ||
		  strcmp(hn, c->host))) {
		netproxy_send_text(c, "400 Bad Request", NULL, "host mismatch");
		netproxy_answered(c, n);
		return false;
	}
	if (!tl || t[0] != '/') {
		netproxy_send_text(c, "400 Bad Request", NULL, "origin-form request expected");
		netproxy_finish_client(c);
		return false;
	}
	*path = t;
	*path_len = tl;
	return true;
}

/*
 * The request's target into c->host and c->port: a CONNECT's authority, an
 * absolute-form URL's (its path into *path), or the Host header of an
 * origin-form request. False once the client is told it has none (400).
 */
static bool request_target(struct npc *c, const struct http_request *req, const char **path,
			   size_t *path_len)
{
	const char *t = req->path;
	size_t tl = req->path_len;

	if (c->connect) {
		const struct http_header *h = http_request_header(req, "host");

		/* CONNECT host:port; "CONNECT /x" falls back to Host; no port is 80 */
		if (tl && t[0] == '/') {
			t = h ? h->value : "";
			tl = h ? h->value_len : 0;
		}
		if (!tl || netproxy_set_authority(c, t, tl, 80) < 0) {
			netproxy_send_text(c, "400 Bad Request", NULL, "missing authority");
			return false;
		}
	} else {
		const char *sep = tl ? memchr(t, ':', tl) : NULL;

		if (sep && sep + 2 < t + tl && sep[1] == '/' && sep[2] == '/') {
			const char *auth = sep + 3, *end = auth;
			uint16_t def = netproxy_default_port(t, (size_t)(sep - t));

			while (end < t + tl && *end != '/' && *end != '?' && *end != '#')
				end++;
			if (memchr(auth, '@', (size_t)(end - auth)))
				auth = (const char *)memchr(auth, '@', (size_t)(end - auth)) + 1;
			if (end == auth ||
			    netproxy_set_authority(c, auth, (size_t)(end - auth), def) < 0 ||
			    !c->port) {
				netproxy_send_text(c, "400 Bad Request", NULL, "missing host");
				return false;
			}
			if (end < t + tl) {
				*path = end;
				*path_len = (size_t)(t + tl - end);
			}
		} else {
			const struct http_header *h = http_request_header(req, "host");

			/* origin form: the Host header is the target (the reference proxies it) */
			if (!h || netproxy_set_authority(c, h->value, h->value_len, 80) < 0) {
				netproxy_send_text(c, "400 Bad Request", NULL, "missing host");
				return false;
			}
			*path = t;
			*path_len = tl;
		}
	}
	return true;
}

/* x-unix-socket (plain requests): unsupported on Linux, before any host policy. */
static void answer_unix_socket(struct npc *c, const struct http_request *req, size_t n)
{
	bool limited = c->np->cfg->mode == NP_MODE_LIMITED;

	snprintf(c->host, sizeof(c->host), "unix-socket");
	c->port = 0;
	netproxy_emit(c, false, false, "proxy_state", "unix_socket_unsupported");
	if (limited && !read_only_method(req)) {
		static const char body[] =
			"{\"status\":\"blocked\",\"host\":\"unix-socket\",\"reason\":\"method_not_allowed\"}";
		char date[64], out[512];
		int k;

		if (http_format_date(time(NULL), date, sizeof(date)) >= 0 &&
		    (k = snprintf(out, sizeof(out),
				  "HTTP/1.1 403 Forbidden\r\ncontent-type: application/json\r\n"
				  "x-proxy-error: blocked-by-method-policy\r\ncontent-length: %zu\r\n"
				  "date: %s\r\n\r\n%s", sizeof(body) - 1, date, body)) > 0 &&
		    (size_t)k < sizeof(out))
			(void)netconn_send(c->client, out, (size_t)k);
	} else {
		netproxy_send_text(c, "501 Not Implemented", NULL, "unix sockets unsupported");
	}
	netproxy_answered(c, n);
}

/*
 * The policy's word on c's target (and the review's, when asked): true when
 * the request goes on to be forwarded (or tunnelled); false when it was
 * refused, is being asked about, or was intercepted.
 */
static bool request_allowed(struct npc *c, size_t n)
{
	bool limited = c->np->cfg->mode == NP_MODE_LIMITED;
	enum np_verdict v = netproxy_policy_decide(c->np->pol, c->host);

	if (v == NP_NOT_ALLOWED && c->rv == RV_NONE && netproxy_review_start(c))
		return false; /* the head stays in c->head: handled again once answered */
	if (v == NP_NOT_ALLOWED && c->rv != RV_NONE) {
		if (netproxy_review_refused(c)) {
			netproxy_answered(c, n);
			return false;
		}
		v = NP_ALLOW_IF_PUBLIC;
	}
	if (v == NP_DENIED || v == NP_NOT_ALLOWED || v == NP_NOT_ALLOWED_LOCAL) {
		log_info_ratelimited("Network proxy: refused %s %s:%u from %s (%s)",
				     c->connect ? "CONNECT" : "request", c->host, (unsigned)c->port,
				     c->peer, netproxy_verdict_reason(v));
		netproxy_emit(c, true, false, "baseline_policy", netproxy_verdict_reason(v));
		netproxy_refuse(c, v);
		netproxy_answered(c, n);
		return false;
	}
	if (v == NP_ALLOW || limited) {
		netproxy_emit(c, true, true, "baseline_policy", "allow");
		c->decided = true;
	}
	if (c->connect && c->np->cfg->broker && !netproxy_choose_upstream(c) &&
	    (limited || netproxy_broker_binds(c->np->cfg->broker, true, c->host, c->port))) {
		/*
		 * A credential is bound here: intercepted, so that it can be put
		 * back. In limited mode every tunnel is (the reference's), its
		 * requests then held to the read-only methods like plain ones.
		 */
		netproxy_intercept(c, true, n);
		return false;
	}
	if (limited && c->connect) {
		netproxy_emit(c, false, false, "mode_guard", "mitm_required");
		netproxy_send_text(c, "403 Forbidden", "blocked-by-mitm-required",
				   "MITM required for limited HTTPS.");
		netproxy_answered(c, n);
		return false;
	}
	return true;
}

/* Limited mode: true when the request's method was refused (and answered). */
static bool method_refused(struct npc *c, const struct http_request *req, size_t n)
{
	if (c->np->cfg->mode != NP_MODE_LIMITED || read_only_method(req))
		return false;
	netproxy_emit(c, false, false, "mode_guard", "method_not_allowed");
	if (c->mitm) {
		/* inside an intercepted tunnel the reference answers in plain text */
		netproxy_send_text(c, "403 Forbidden", "blocked-by-method-policy",
				   "Method not allowed in limited mode.");
		netproxy_answered(c, n);
		return true;
	}
	netproxy_send_refusal_json(c, "method_not_allowed", "blocked-by-method-policy",
				   "Method not allowed in limited mode.", "mode_guard", "deny");
	netproxy_answered(c, n);
	return true;
}

/*
 * A plain request's body framing (Content-Length or chunked, never both)
 * and its head for the origin, or the upstream proxy, in c->out_head.
 * Returns 0, -EBADMSG for framing the proxy refuses (400), or -ENOMEM.
 */
static int prepare_forward(struct npc *c, const struct http_request *req, const char *path,
			   size_t path_len)
{
	const struct http_header *cl, *te;

	c->head_request = req->method_len == 4 && !memcmp(req->method, "HEAD", 4);
	c->minor = req->minor_version;
	c->resp_started = false;
	buf_done(&c->up_head);
	cl = http_request_header(req, "content-length");
	c->body_left = 0;
	if (cl) {
		char num[24], *end;

		if (cl->value_len == 0 || cl->value_len >= sizeof(num))
			return -EBADMSG;
		memcpy(num, cl->value, cl->value_len);
		num[cl->value_len] = 0;
		c->body_left = strtoull(num, &end, 10);
		if (*end)
			return -EBADMSG;
	}
	te = http_request_header(req, "transfer-encoding");
	c->chunked = false;
	if (te) {
		/* chunked last, and never beside Content-Length (RFC 9112 §6.1: smuggling) */
		size_t l = te->value_len;

		if (cl || l < 7 || strncasecmp(te->value + l - 7, "chunked", 7) ||
		    (l > 7 && te->value[l - 8] != ',' && te->value[l - 8] != ' '))
			return -EBADMSG;
		c->chunked = true;
		memset(&c->ch, 0, sizeof(c->ch));
	}
	netproxy_out_head_done(c);
	c->via = c->mitm ? NULL : netproxy_choose_upstream(c);
	if (c->via) {
		/* an upstream proxy takes the absolute form (the reference's) */
		char *abs = NULL;
		int k = asprintf(&abs, strchr(c->host, ':') ? "http://[%s]:%u%.*s" : "http://%s:%u%.*s",
				 c->host, (unsigned)c->port, (int)path_len, path);

		if (k < 0 || netproxy_rewrite_head(c, req, abs, (size_t)k, path, path_len,
						   c->via->auth, &c->out_head) < 0) {
			if (k >= 0)
				free(abs);
			return -ENOMEM;
		}
		free(abs);
	} else if (netproxy_rewrite_head(c, req, path, path_len, path, path_len, NULL,
					 &c->out_head) < 0) {
		return -ENOMEM;
	}
	return 0;
}

/*
 * One complete request head in c->head (n bytes of it): its target, the
 * policy's decision (not again inside an intercepted tunnel), limited
 * mode's method guard, then the upstream connection for it.
 */
static void handle_request(struct npc *c, const struct http_request *req, size_t n)
{
	const char *path = "/";
	size_t path_len = 1;
	int r;

	c->connect = req->method_len == 7 && !memcmp(req->method, "CONNECT", 7);
	/* HTTP/1.1 keeps the connection unless the client asks otherwise (the reference's) */
	c->keep = req->minor_version >= 1 &&
		  !netproxy_wants_close(http_request_header(req, "connection"));
	snprintf(c->method_buf, sizeof(c->method_buf), "%.*s",
		 (int)MIN(req->method_len, sizeof(c->method_buf) - 1), req->method);
	c->method = c->method_buf;
	if (c->mitm) {
		if (!mitm_target(c, req, n, &path, &path_len))
			return;
	} else {
		c->decided = false;
		c->override = false;
		if (!request_target(c, req, &path, &path_len)) {
			netproxy_finish_client(c);
			return;
		}
		if (!c->connect && http_request_header(req, "x-unix-socket")) {
			answer_unix_socket(c, req, n);
			return;
		}
		if (!request_allowed(c, n))
			return;
	}
	if (method_refused(c, req, n))
		return;
	if (!c->connect && (r = prepare_forward(c, req, path, path_len)) < 0) {
		if (r == -EBADMSG)
			send_bad_request(c);
		netproxy_finish_client(c);
		return;
	}
	buf_consume(&c->head, n);
	if (netproxy_open_upstream(c) < 0) {
		c->up = NULL;
		netproxy_send_bad_gateway(c);
		netproxy_finish_client(c);
	}
}

/* Refusals keep the connection: every complete head in the buffer is handled in turn. */
void netproxy_client_heads(struct npc *c)
{
	struct http_request req;
	int r;

	while (c->state == NPC_HEAD && c->head.len) {
		r = http_request_parse((const char *)c->head.data, c->head.len, NPC_HEAD_MAX, &req);
		if (r == -EAGAIN)
			return;
		if (r == -E2BIG) {
			netproxy_send_text(c, "431 Request Header Fields Too Large", NULL, "");
			netproxy_finish_client(c);
			return;
		}
		if (r < 0) {
			send_bad_request(c);
			netproxy_finish_client(c);
			return;
		}
		handle_request(c, &req, (size_t)r);
		if (c->state == NPC_HEAD)
			c->served = true; /* refused, the connection kept */
	}
}
