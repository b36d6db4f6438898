/* SPDX-License-Identifier: MIT */
/*
 * Hand-written: a boundary scanner, not a decoder (the bytes are forwarded
 * as they came); no packaged HTTP library offers one without taking over
 * the connection.
 */
#include <errno.h>

#include "chunked.h"

enum { SIZE, EXT, SIZE_LF, DATA, DATA_CR, DATA_LF, TRAILER, TRAILER_LF, DONE };

#define MAX_DIGITS 16

static int hex(uint8_t c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
		: c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* One byte in a state that reads bytes one at a time (every state but DATA). Returns 0 or -EBADMSG. */
static int scan_byte(struct np_chunked *st, uint8_t c)
{
	switch (st->state) {
	case SIZE:
		if (hex(c) >= 0) {
			if (++st->digits > MAX_DIGITS)
				return -EBADMSG;
			st->left = st->left << 4 | (uint64_t)hex(c);
		} else if (!st->digits) {
			return -EBADMSG;
		} else if (c == ';' || c == ' ' || c == '\t') {
			st->state = EXT;
		} else if (c == '\r') {
			st->state = SIZE_LF;
		} else {
			return -EBADMSG;
		}
		return 0;
	case EXT:
		if (c == '\r')
			st->state = SIZE_LF;
		else if (c == '\n')
			return -EBADMSG;
		return 0;
	case SIZE_LF:
		if (c != '\n')
			return -EBADMSG;
		st->digits = 0;
		st->state = st->left ? DATA : TRAILER;
		st->line_empty = true;
		return 0;
	case DATA_CR:
	case DATA_LF:
		/* the CRLF after a chunk's data */
		if (c != (st->state == DATA_CR ? '\r' : '\n'))
			return -EBADMSG;
		st->state = st->state == DATA_CR ? DATA_LF : SIZE;
		return 0;
	case TRAILER:
		/* trailer fields, each ending in CRLF, then an empty line */
		if (c == '\r')
			st->state = TRAILER_LF;
		else if (c == '\n')
			return -EBADMSG;
		else
			st->line_empty = false;
		return 0;
	case TRAILER_LF:
		if (c != '\n')
			return -EBADMSG;
		if (st->line_empty)
			st->state = DONE;
		else {
			st->state = TRAILER;
			st->line_empty = true;
		}
		return 0;
	default: /* DATA and DONE are not read here */
		return -EBADMSG;
	}
}

long netproxy_chunked_scan(struct np_chunked *st, const uint8_t *p, size_t n)
{
	size_t i = 0;

	while (i < n && st->state != DONE) {
		if (st->state == DATA) {
			/* The data itself, in bulk. */
			size_t k = n - i < st->left ? n - i : (size_t)st->left;

			st->left -= k;
			i += k;
			if (!st->left)
				st->state = DATA_CR;
			continue;
		}
		if (scan_byte(st, p[i]) < 0)
			return -EBADMSG;
		i++;
	}
	return (long)i;
}

bool netproxy_chunked_done(const struct np_chunked *st)
{
	return st->state == DONE;
}
