/* SPDX-License-Identifier: MIT */
/*
 * The client's response body framing (http-client.h): Content-Length,
 * chunked (a byte-wise decoder that copies data runs in bulk, trailers
 * checked and dropped) or until close, with the body bound.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "hex.h"
#include "http-client.h"
#include "http-internal.h"

/* Remembers the element it is called with; never stops the walk. */
static bool remember_last(const char *e, size_t n, void *ud)
{
	struct http_header *last = ud;

	last->value = e;
	last->value_len = n;
	return false;
}

enum {
	CH_SIZE,     /* hex digits of a chunk size */
	CH_SIZE_WS,  /* BWS after the digits */
	CH_EXT,      /* a chunk extension, to the end of the line */
	CH_SIZE_LF,  /* the LF after the size line's CR */
	CH_DATA,
	CH_DATA_CR,  /* the CRLF after a chunk's data */
	CH_DATA_LF,
	CH_TR_START, /* the start of a trailer line, or of the final CRLF */
	CH_TR_NAME,
	CH_TR_VALUE,
	CH_TR_LF,
	CH_END_LF,   /* the LF of the final CRLF */
};

/* Content-Length: digits only; repeated headers must agree. *found false if absent. */
static int content_length(const struct http_response *resp, bool *found, uint64_t *ret)
{
	*found = false;
	for (size_t i = 0; i < resp->n_headers; i++) {
		const struct http_header *h = &resp->headers[i];
		uint64_t v = 0;

		if (!http_header_is(h, "Content-Length"))
			continue;
		if (h->value_len == 0)
			return -EBADMSG;
		for (size_t k = 0; k < h->value_len; k++) {
			uint64_t d = (uint64_t)(h->value[k] - '0');

			if (!http_is_digit(h->value[k]) || v > (UINT64_MAX - d) / 10)
				return -EBADMSG; /* not a digit, or overflow */
			v = v * 10 + d;
		}
		if (*found && v != *ret)
			return -EBADMSG;
		*found = true;
		*ret = v;
	}
	return 0;
}

int http_body_reader_init(struct http_body_reader *r, const struct http_response *resp,
			  bool head_request, uint64_t max_body)
{
	struct http_header last = { 0 };
	bool te = false, found;
	uint64_t cl = 0;
	int k;

	memset(r, 0, sizeof(*r));
	r->max_body = max_body;
	if (head_request || resp->status < 200 || resp->status == 204 || resp->status == 304) {
		r->mode = HTTP_BODY_NONE;
		r->done = true;
		return 0;
	}

	for (size_t i = 0; i < resp->n_headers; i++)
		if (http_header_is(&resp->headers[i], "Transfer-Encoding")) {
			te = true;
			(void)http_list_any(&resp->headers[i], remember_last, &last);
		}
	if (te) {
		bool chunked = last.value && http_mem_eq_nocase(last.value, last.value_len, "chunked", 7);

		r->mode = chunked ? HTTP_BODY_CHUNKED : HTTP_BODY_UNTIL_CLOSE;
		r->_state = CH_SIZE;
		return 0;
	}

	k = content_length(resp, &found, &cl);
	if (k < 0)
		return k;
	if (!found) {
		r->mode = HTTP_BODY_UNTIL_CLOSE;
		return 0;
	}
	if (cl > max_body)
		return -EMSGSIZE;
	r->mode = HTTP_BODY_LENGTH;
	r->left = cl;
	r->done = cl == 0;
	return 0;
}

static int emit(struct http_body_reader *r, struct buf *out, const uint8_t *p, size_t n)
{
	if (out && n && buf_append(out, p, n) < 0)
		return -ENOMEM;
	r->total += n;
	return 0;
}

/* The size line ended: a last chunk starts the trailers, others their data. */
static int size_line_done(struct http_body_reader *r)
{
	if (!r->_digits)
		return -EBADMSG;
	if (r->left == 0) {
		r->_state = CH_TR_START;
		return 0;
	}
	if (r->left > r->max_body - r->total)
		return -EMSGSIZE;
	r->_state = CH_DATA;
	return 0;
}

static void size_line_start(struct http_body_reader *r)
{
	r->_state = CH_SIZE;
	r->left = 0;
	r->_digits = false;
	r->_line = 0;
}

/* One byte of a chunk-size line or of the CRLF after a chunk's data. */
static int chunk_size_byte(struct http_body_reader *r, unsigned char c)
{
	int d;

	if (r->_state <= CH_SIZE_LF && ++r->_line > HTTP_CHUNK_LINE_MAX)
		return -EBADMSG;
	switch (r->_state) {
	case CH_SIZE:
		d = unhexchar(c);
		if (d >= 0) {
			if (r->left > UINT64_MAX >> 4)
				return -EBADMSG; /* overflow */
			r->left = r->left << 4 | (uint64_t)d;
			r->_digits = true;
			return 0;
		}
		if (!r->_digits)
			return -EBADMSG;
		r->_state = CH_SIZE_WS;
		/* fall through */
	case CH_SIZE_WS:
		if (http_is_ows((char)c))
			return 0;
		if (c == ';') {
			r->_state = CH_EXT;
			return 0;
		}
		break;
	case CH_EXT:
		if (c != '\r' && c != '\n')
			return http_is_value_char(c) ? 0 : -EBADMSG;
		break;
	case CH_SIZE_LF:
		return c == '\n' ? size_line_done(r) : -EBADMSG;
	case CH_DATA_CR:
		/* CRLF, or a bare LF (tolerated as in heads) */
		if (c == '\r') {
			r->_state = CH_DATA_LF;
			return 0;
		}
		/* fall through */
	case CH_DATA_LF:
		if (c != '\n')
			return -EBADMSG; /* chunk data not followed by CRLF */
		size_line_start(r);
		return 0;
	default:
		return -EBADMSG;
	}
	/* The end of the size line (CH_SIZE_WS, CH_EXT). */
	if (c == '\r') {
		r->_state = CH_SIZE_LF;
		return 0;
	}
	return c == '\n' ? size_line_done(r) : -EBADMSG;
}

/* One byte of the trailer section (field lines, then the final CRLF). */
static int chunk_trailer_byte(struct http_body_reader *r, unsigned char c)
{
	if (++r->_trailers > HTTP_TRAILERS_MAX)
		return -EBADMSG;
	switch (r->_state) {
	case CH_TR_START:
		if (c == '\r')
			r->_state = CH_END_LF;
		else if (c == '\n')
			r->done = true;
		else if (http_is_tchar(c))
			r->_state = CH_TR_NAME;
		else
			return -EBADMSG; /* obs-fold, or garbage */
		return 0;
	case CH_TR_NAME:
		if (c == ':')
			r->_state = CH_TR_VALUE;
		else if (!http_is_tchar(c))
			return -EBADMSG;
		return 0;
	case CH_TR_VALUE:
		if (c == '\r')
			r->_state = CH_TR_LF;
		else if (c == '\n')
			r->_state = CH_TR_START;
		else if (!http_is_value_char(c))
			return -EBADMSG;
		return 0;
	case CH_TR_LF:
		if (c != '\n')
			return -EBADMSG;
		r->_state = CH_TR_START;
		return 0;
	case CH_END_LF:
		if (c != '\n')
			return -EBADMSG;
		r->done = true;
		return 0;
	default:
		return -EBADMSG;
	}
}

static int chunked_feed(struct http_body_reader *r, const uint8_t *in, size_t len, struct buf *out)
{
	size_t i = 0;
	int k;

	while (i < len && !r->done) {
		if (r->_state == CH_DATA) {
			size_t n = len - i < r->left ? len - i : (size_t)r->left;

			k = emit(r, out, in + i, n);
			if (k < 0)
				return k;
			r->left -= n;
			i += n;
			if (r->left == 0)
				r->_state = CH_DATA_CR;
			continue;
		}
		if (r->_state >= CH_TR_START)
			k = chunk_trailer_byte(r, in[i]);
		else
			k = chunk_size_byte(r, in[i]);
		if (k < 0)
			return k;
		i++;
	}
	return (int)i;
}

int http_body_reader_feed(struct http_body_reader *r, const uint8_t *in, size_t len, struct buf *out)
{
	size_t n;
	int k;

	if (len > INT_MAX)
		len = INT_MAX;
	if (r->done || len == 0)
		return 0;
	switch (r->mode) {
	case HTTP_BODY_LENGTH:
		n = len < r->left ? len : (size_t)r->left;
		k = emit(r, out, in, n);
		if (k < 0)
			return k;
		r->left -= n;
		r->done = r->left == 0;
		return (int)n;
	case HTTP_BODY_UNTIL_CLOSE:
		if (len > r->max_body - r->total)
			return -EMSGSIZE;
		k = emit(r, out, in, len);
		return k < 0 ? k : (int)len;
	case HTTP_BODY_CHUNKED:
		return chunked_feed(r, in, len, out);
	case HTTP_BODY_NONE:
	default:
		return 0;
	}
}

int http_body_reader_eof(struct http_body_reader *r)
{
	if (r->done)
		return 0;
	if (r->mode == HTTP_BODY_UNTIL_CLOSE) {
		r->done = true;
		return 0;
	}
	return -EPIPE;
}

