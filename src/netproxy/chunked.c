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

long netproxy_chunked_scan(struct np_chunked *st, const uint8_t *p, size_t n)
{
	size_t i = 0;

	while (i < n && st->state != DONE) {
		uint8_t c = p[i];

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
			i++;
			break;
		case EXT:
			if (c == '\r')
				st->state = SIZE_LF;
			else if (c == '\n')
				return -EBADMSG;
			i++;
			break;
		case SIZE_LF:
			if (c != '\n')
				return -EBADMSG;
			st->digits = 0;
			st->state = st->left ? DATA : TRAILER;
			st->line_empty = true;
			i++;
			break;
		case DATA: {
			size_t k = n - i < st->left ? n - i : (size_t)st->left;

			st->left -= k;
			i += k;
			if (!st->left)
				st->state = DATA_CR;
			break;
		}
		case DATA_CR:
			if (c != '\r')
				return -EBADMSG;
			st->state = DATA_LF;
			i++;
			break;
		case DATA_LF:
			if (c != '\n')
				return -EBADMSG;
			st->state = SIZE;
			i++;
			break;
		case TRAILER:
			/* trailer fields, each ending in CRLF, then an empty line */
			if (c == '\r')
				st->state = TRAILER_LF;
			else if (c == '\n')
				return -EBADMSG;
			else
				st->line_empty = false;
			i++;
			break;
		case TRAILER_LF:
			if (c != '\n')
				return -EBADMSG;
			i++;
			if (st->line_empty)
				st->state = DONE;
			else {
				st->state = TRAILER;
				st->line_empty = true;
			}
			break;
		}
	}
	return (long)i;
}

bool netproxy_chunked_done(const struct np_chunked *st)
{
	return st->state == DONE;
}
