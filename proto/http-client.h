/* SPDX-License-Identifier: MIT */
/*
 * The client side of HTTP/1.1 and of the WebSocket opening handshake, for
 * everything that speaks over a netconn (remote mode's registry POSTs and
 * rendezvous WebSocket, http/request, the network proxy's upstreams):
 * request formatting with header-injection checks, the response head parser
 * (http-client.c), response body framing (Content-Length, chunked, until
 * close; http-body.c), the client handshake (key, request, answer check) and
 * ws/wss/http/https URL splitting. No I/O, no clocks, no randomness: the
 * caller supplies the nonce.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "http.h"

struct http_client_header {
	const char *name; /* NUL-terminated */
	const char *value;
};

/*
 * One request: "METHOD target HTTP/1.1\r\nHost: host_header\r\n", the given
 * headers in order, then, when body != NULL, "Content-Length: N\r\n", then
 * "\r\n" and the body. The result is malloc'd and NUL-terminated (the NUL is
 * not counted in *ret_len). Refused with NULL and *ret_errno = -EINVAL: a
 * method that is not a token; a target that is empty or holds a byte outside
 * VCHAR (space, control bytes, non-ASCII); a Host value or a header value with
 * a control byte (CR, LF, NUL, ... ; HTAB is allowed); a header name that is
 * empty or not a token; a header named Host, Content-Length or
 * Transfer-Encoding (this function writes the framing: a second one would let
 * two parsers disagree on where the message ends). -ENOMEM. ret_errno may be
 * NULL.
 */
char *http_client_format_request(const char *method, const char *target, const char *host_header,
				 const struct http_client_header *hdrs, size_t n_hdrs,
				 const void *body, size_t body_len, size_t *ret_len, int *ret_errno);

/*
 * Host header value: "host", or "host:port" unless port is the scheme's
 * default (80, or 443 when tls); an IPv6 literal (ipv6, host without
 * brackets) is written in brackets. Returns the length that the full text
 * needs, snprintf-style (truncated and NUL-terminated if >= cap), or -EINVAL:
 * empty host, port 0, a host with characters outside a reg-name (letters,
 * digits, "-._~%!$&'()*+,;=") or, for IPv6, outside hex digits, ':' and '.'.
 */
int http_client_host_header(char *buf, size_t cap, const char *host, bool ipv6, uint16_t port,
			    bool tls);

struct http_response {
	int minor_version; /* HTTP/1.<minor> */
	int status;        /* 100..999 */
	const char *reason; /* view into the caller's buffer, may be empty */
	size_t reason_len;
	size_t n_headers;
	struct http_header headers[HTTP_MAX_HEADERS]; /* views into the caller's buffer */
};

/*
 * Parses a response head (status line through the blank line) from
 * buf[0..len), with http_request_parse()'s conventions: returns bytes consumed
 * (> 0), -EAGAIN if incomplete, -EBADMSG if malformed (bad status line, status
 * not 3 digits or below 100, obs-fold, bare CR, control bytes in values or the
 * reason, a version other than HTTP/1.x), -E2BIG for more than
 * HTTP_MAX_HEADERS headers or max_bytes reached without a complete head.
 * LF-only line endings and leading empty lines are tolerated; so is a status
 * line without a reason ("HTTP/1.1 200" with or without the space). A first
 * line that cannot start "HTTP/1." is -EBADMSG before it completes.
 */
int http_response_parse(const char *buf, size_t len, size_t max_bytes, struct http_response *ret);

/* Case-insensitive header lookup: the first match, or NULL. */
const struct http_header *http_response_header(const struct http_response *r, const char *name);

/* Response body framing (RFC 9112 §6.3). */
enum http_body_mode {
	HTTP_BODY_NONE,
	HTTP_BODY_LENGTH,
	HTTP_BODY_CHUNKED,
	HTTP_BODY_UNTIL_CLOSE,
};

/* A chunk-size line (with its extensions) longer than this is -EBADMSG. */
#define HTTP_CHUNK_LINE_MAX 4096
/* The trailer section of a chunked body larger than this is -EBADMSG. */
#define HTTP_TRAILERS_MAX 16384

struct http_body_reader {
	enum http_body_mode mode;
	uint64_t left;     /* LENGTH: bytes still to come; CHUNKED: of the current chunk */
	bool done;         /* the body is complete; later bytes are not body */
	uint64_t max_body; /* cap on the decoded body */
	uint64_t total;    /* decoded bytes so far (<= max_body) */
	/* private: chunked decoding */
	uint8_t _state;
	bool _digits;      /* the chunk-size line had a digit */
	size_t _line;      /* bytes of the current chunk-size line */
	size_t _trailers;  /* bytes of the trailer section */
};

/*
 * Decides the framing from the head: 1xx, 204, 304 or an answer to HEAD ->
 * NONE (done at once); a Transfer-Encoding whose last coding (the last
 * non-empty element of the last such header) is "chunked" -> CHUNKED, any
 * other Transfer-Encoding -> UNTIL_CLOSE; else a Content-Length (digits only;
 * repeated headers must be equal; differing values, other characters or
 * overflow -> -EBADMSG) -> LENGTH; else UNTIL_CLOSE. Transfer-Encoding wins
 * over Content-Length. A Content-Length above max_body is -EMSGSIZE.
 */
int http_body_reader_init(struct http_body_reader *r, const struct http_response *resp,
			  bool head_request, uint64_t max_body);

/*
 * Consumes bytes from in[0..len) and appends the decoded body bytes to out
 * (NULL discards them). Returns bytes consumed: fewer than len once the body
 * is done (r->done; the rest is not body), else all of them (at most INT_MAX
 * per call). Errors: -EBADMSG (chunk-size line without hex digits, overflow,
 * junk after the size, control bytes in an extension, a line longer than
 * HTTP_CHUNK_LINE_MAX, data not followed by CRLF, malformed trailer lines or
 * trailers beyond HTTP_TRAILERS_MAX), -EMSGSIZE (the body would exceed
 * max_body; checked against each chunk's declared size), -ENOMEM. After an
 * error the reader is unusable. LF-only line endings are tolerated in the
 * chunk framing, as in heads. done is set after the last chunk's trailers and
 * final CRLF, or once Content-Length bytes arrived.
 */
int http_body_reader_feed(struct http_body_reader *r, const uint8_t *in, size_t len, struct buf *out);

/* The peer closed: 0 if that completes the body (UNTIL_CLOSE, or already done), else -EPIPE. */
int http_body_reader_eof(struct http_body_reader *r);

/* WebSocket client opening handshake (RFC 6455 §4.1). */
#define HTTP_WS_KEY_LEN 24 /* base64 of 16 bytes */

/* key_out (NUL-terminated) from 16 random bytes that the caller supplies. */
void http_ws_client_key(const uint8_t nonce[16], char key_out[HTTP_WS_KEY_LEN + 1]);

/*
 * "GET target HTTP/1.1", Host, "Upgrade: websocket", "Connection: Upgrade",
 * Sec-WebSocket-Key, "Sec-WebSocket-Version: 13", then the extra headers, with
 * http_client_format_request()'s checks. Extra headers may not repeat the
 * handshake's own, nor ask for a subprotocol or an extension
 * (Sec-WebSocket-Protocol/-Extensions: http_ws_client_check() accepts
 * neither): -EINVAL. malloc'd, NUL-terminated; -ENOMEM.
 */
char *http_ws_client_request(const char *target, const char *host_header, const char *key,
			     const struct http_client_header *extra, size_t n_extra, size_t *ret_len,
			     int *ret_errno);

/*
 * Checks the server's answer to http_ws_client_request(): status 101, Upgrade
 * "websocket" (case-insensitive), Connection holding the token "upgrade"
 * (comma list, case-insensitive), Sec-WebSocket-Accept equal to
 * base64(SHA-1(key + GUID)), and no Sec-WebSocket-Extensions or
 * Sec-WebSocket-Protocol (we never offer any). Returns 0 (*reason NULL),
 * -ECONNREFUSED for a status other than 101 with *reason "HTTP status N"
 * (static text; resp->status tells a 4xx, which means re-register), or
 * -EPROTO with a static *reason for the other failures. reason may be NULL.
 */
int http_ws_client_check(const struct http_response *resp, const char *key, const char **reason);

struct http_url {
	bool tls;       /* wss, https */
	char *host;     /* without brackets for IPv6; malloc'd */
	bool ipv6;
	uint16_t port;  /* the scheme's default when the URL has none */
	char *target;   /* path + query, at least "/"; malloc'd */
};

/*
 * Splits a ws, wss, http or https URL (scheme case-insensitive). Refused with
 * -EINVAL and a static *reason: another scheme, user info, an empty host,
 * host characters outside a reg-name or an IPv6 literal in brackets, an empty
 * port, port 0 or above 65535, a fragment, whitespace, control or non-ASCII
 * bytes. -ENOMEM. On failure *ret is zeroed; on success free it with
 * http_url_done(). reason may be NULL.
 */
int http_url_parse(const char *url, struct http_url *ret, const char **reason);
void http_url_done(struct http_url *u);
