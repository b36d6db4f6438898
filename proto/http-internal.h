/* SPDX-License-Identifier: MIT */
/*
 * What proto/http.c, http-client.c and http-body.c share: character classes,
 * the head parser both the request and the response parser run (the first
 * line is theirs, the header lines and the framing rules are common), header
 * names and comma-separated lists, and the WebSocket accept key. Not an
 * interface for other folders.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "http.h"

/* RFC 9110 tchar. */
bool http_is_tchar(unsigned char c);
/* Header value octets: HTAB, SP, VCHAR, obs-text. */
bool http_is_value_char(unsigned char c);
/* ASCII case-insensitive equality of two byte strings. */
bool http_mem_eq_nocase(const char *a, size_t an, const char *b, size_t bn);

static inline bool http_is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static inline bool http_is_ows(char c)
{
	return c == ' ' || c == '\t';
}

/* h is named name (ASCII case-insensitive; http-client.c). */
bool http_header_is(const struct http_header *h, const char *name);
/*
 * Calls fn on every non-empty element of h's value (RFC 9110 §5.6.1), trimmed
 * of OWS, until fn returns true; returns whether one did (http-client.c).
 */
bool http_list_any(const struct http_header *h, bool (*fn)(const char *e, size_t n, void *ud),
		   void *ud);

struct http_head_parser {
	/* The first line (without its line ending): 0 or -EBADMSG. */
	int (*first_line)(const char *l, size_t n, void *userdata);
	/* An incomplete first line l[0..n): false refuses it early (-EBADMSG). */
	bool (*first_line_start_ok)(const char *l, size_t n);
	void *userdata;
	struct http_header *headers; /* HTTP_MAX_HEADERS entries */
	size_t *n_headers;
};

/*
 * http_request_parse()'s conventions for any head: bytes consumed, -EAGAIN,
 * -EBADMSG, -E2BIG (more than HTTP_MAX_HEADERS headers, or max_bytes reached).
 */
int http_head_parse(const char *buf, size_t len, size_t max_bytes, const struct http_head_parser *hp);

/* Sec-WebSocket-Accept for a key: base64(SHA-1(key + GUID)), NUL-terminated. Returns 0. */
int http_ws_accept(const char *key, size_t key_len, char out[29]);
