/* SPDX-License-Identifier: MIT */
/*
 * Where a chunked request body ends (RFC 9112 §7.1), found while its bytes
 * pass through unchanged: the proxy forwards exactly the body and no byte
 * of what the client sends after it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct np_chunked {
	int state;
	uint64_t left; /* data bytes left in the current chunk */
	unsigned digits;
	bool line_empty; /* trailer: the current line has no byte yet */
};

/*
 * Scans p[0..n) from where the last call stopped. Returns how many of those
 * bytes belong to the body (all n unless it ends inside them), or -EBADMSG
 * for a malformed body. netproxy_chunked_done() says whether it has ended.
 */
long netproxy_chunked_scan(struct np_chunked *st, const uint8_t *p, size_t n);
bool netproxy_chunked_done(const struct np_chunked *st);
