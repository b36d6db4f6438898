/* SPDX-License-Identifier: MIT */
/*
 * http/request (PROTOCOL.md §6.23, §7.5): an HTTP(S) request made by the
 * server for a client, on the ring. rpc-http.c decodes and checks the params
 * (the reference's error texts) and builds a struct http_req; http-req.c runs
 * it: one connection per hop (src/net/netconn: DNS on the worker pool, TLS
 * verified against the system store), redirects, the deadline, the response
 * head and body (proto/http-client's parser and framing), then one reply, or
 * with streamResponse the reply at the head and the body as
 * http/request/bodyDelta notifications, paced by the client connection's
 * output queue.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "http-decode.h"
#include "http-client.h"
#include "http-url.h"
#include "list.h"
#include "ring.h"

struct conn;
struct netconn;
struct server;

/* Redirects followed before "too many redirects" (the reference's 10). */
#define HTTP_REQ_MAX_REDIRECTS 10
/*
 * Requests in flight (streams included) per client connection (an MCP client
 * keeps an event stream open per server), and in the whole server: each holds
 * a socket, beyond the fd budget the connection limits are derived from.
 */
#define HTTP_REQ_MAX_PER_CONN 64
#define HTTP_REQ_MAX_TOTAL 1024
/* Request headers per request, and the bytes of one name + value. */
#define HTTP_REQ_MAX_HEADERS 256
#define HTTP_REQ_MAX_HEADER_BYTES 65536
/* The request headers together (names and values). */
#define HTTP_REQ_MAX_HEADERS_TOTAL (256 * 1024)
/* The response head (status line and headers; at most HTTP_MAX_HEADERS headers). */
#define HTTP_REQ_MAX_HEAD 65536

/* An HTTP proxy from the server's environment (http-proxy.c). */
struct http_proxy {
	char *host;    /* NULL: none */
	bool ipv6;
	uint16_t port;
	char *auth;    /* "Basic ..." from its userinfo, or NULL */
};

/*
 * The proxy of a request to u, as the reference's client picks it from the
 * server's environment: 1 (*ret set; free with http_proxy_done), 0 (direct),
 * -ENOMEM.
 */
int http_proxy_for(const struct http_url_parts *u, struct http_proxy *ret);
void http_proxy_done(struct http_proxy *p);

struct http_req_header {
	char *name; /* lower case */
	char *value;
	size_t value_len;
};

struct http_req {
	struct list_head link; /* the module's list of requests */
	struct server *srv;
	struct conn *conn;     /* NULL once the connection ended */
	json_t *id;            /* the request's id until it is answered */

	/* What to send (the current hop's). */
	char *method;
	struct http_req_header *hdrs;
	size_t n_hdrs;
	uint8_t *body;         /* NULL: none */
	size_t body_len;
	bool follow;           /* redirectPolicy follow */
	bool stream;           /* streamResponse */
	char *rid;             /* requestId, and as a JSON string (quotes included) */
	size_t rid_len;
	char *rid_json;
	uint64_t timeout_ms;   /* 0: none */
	struct http_url_parts url;
	unsigned redirects;

	/* The exchange. */
	struct http_proxy proxy; /* the current hop's, or none */
	bool tunnel_up;        /* https through the proxy: CONNECT answered, TLS started */
	struct netconn *nc;
	struct buf in;         /* the response head as it arrives */
	bool head_done;
	int status;            /* the final head's */
	json_t *resp_headers;  /* and its headers as the result lists them */
	struct http_body_reader br;
	struct http_decoder *dec; /* gzip or zstd content coding, or NULL */
	struct buf pending;    /* body bytes unframed, not yet decoded and delivered */
	bool body_end;         /* no more body bytes will come (its end, EOF, an error) */
	bool body_err;         /* and the body ended badly (the terminal error once pending is out) */
	struct buf body_out;   /* the buffered body */
	uint64_t seq;          /* the last bodyDelta's */
	bool paused;           /* not reading: the client's output queue is over its mark */
	struct uring_timer timer;
	bool timer_armed;
	bool dead;             /* freed when the timer's cancel completes */
};

/* http-msg.c: what is sent and answered. */
/* A bodyDelta of r (the next seq): 0, or -ENOMEM (nothing queued; the caller ends the connection). */
int http_msg_delta(struct http_req *r, const uint8_t *p, size_t n, bool done, const char *error);
/*
 * Answers r's request with {"status","headers","bodyBase64"} (the buffered
 * body, or "" for a stream); r->id is dropped. 0, or -ENOMEM (answered with
 * an error then).
 */
int http_msg_result(struct http_req *r, int status, json_t *headers);
/* The coding the reference's client decodes: a Content-Encoding exactly "gzip", else "zstd". */
enum http_coding http_msg_coding(const struct http_response *resp);
/*
 * The response headers as the result lists them: lower-case names, wire
 * order, visible-ASCII values only; without Content-Encoding and
 * Content-Length when decoded. NULL when out of memory.
 */
json_t *http_msg_headers_json(const struct http_response *resp, bool decoded);
/* The request's header list: drop every one named in names (NULL-terminated), look up, append a copy. */
void http_req_drop_headers(struct http_req *r, const char *const *names);
bool http_req_has_header(const struct http_req *r, const char *name);
int http_req_add_header(struct http_req *r, const char *name, const char *value, size_t len);
/* authorization: Basic from the URL's userinfo, unless the list has an Authorization. 0 or -ENOMEM. */
int http_req_add_basic_auth(struct http_req *r);
/* "scheme://host[:port]" of u (no userinfo), snprintf-style. */
int http_url_origin(const struct http_url_parts *u, char *out, size_t cap);

/* Starts r (linked, owned by this module from now on). */
void http_req_start(struct http_req *r);

/* Requests of c in flight (of every connection for NULL); whether a stream of c with this requestId is. */
unsigned http_req_count(const struct conn *c);
/* Request body bytes held by c's requests in flight (kept for 307/308 redirects). */
uint64_t http_req_bodies(const struct conn *c);
bool http_req_stream_active(const struct conn *c, const char *rid, size_t len);

/* Frees r, which may be unstarted (not linked). */
void http_req_free(struct http_req *r);

/* c ends: its requests are abandoned (no reply, no notification). */
void http_conn_closed(struct conn *c);
/* c's output queue drained: paused streams of c read on. */
void http_conn_drained(struct conn *c);

/*
 * Server shutdown, after the ring is gone (no completion can reach a
 * request): frees every request, also those waiting for their timer's cancel.
 */
void http_req_free_all(void);

int http_methods_register(void);
