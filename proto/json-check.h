/* SPDX-License-Identifier: MIT */
/*
 * Validating JSON scanner that fails where serde_json::from_slice would, with
 * serde_json's error text and "at line L column C" position. No I/O, no
 * recursion, linear time; jcheck_validate allocates nothing, the message mode
 * holds the keys of the open objects (chained hash, per-process seed).
 */
#pragma once

#include <stddef.h>

/* Nesting is tracked in a fixed bitset: larger max_depth values are clamped to this. */
#define JSON_CHECK_DEPTH_MAX 4096u

/*
 * Validates buf[0..len) as one JSON value the way serde_json::from_slice does.
 * Returns 0 if valid, or -EBADMSG with serde_json's message in err, e.g.
 * "key must be a string at line 1 column 2", "EOF while parsing an object at line 1 column 9",
 * "trailing characters at line 1 column 5", "recursion limit exceeded at line 1 column 128".
 * max_depth: nesting limit with serde_json's meaning (its default is 128): opening the
 * max_depth-th nested array/object fails, so 128 accepts at most 127 levels.
 * err may be NULL when errsz is 0.
 */
int jcheck_validate(const char *buf, size_t len, unsigned max_depth, char *err, size_t errsz);

/*
 * The same check the way the reference reads a WebSocket message: numbers of
 * any magnitude are accepted (they are values, read later as the parameter
 * they fill), and the first key repeated within one object, in text order,
 * fails with "duplicate JSON object key `K` at line L column C" (C: its
 * closing quote), before any later syntax error. Returns 0, -EBADMSG, or
 * -ENOMEM. *ret_len gets the length of err's text, which may hold a NUL
 * (the key is quoted as decoded).
 */
int jcheck_validate_message(const char *buf, size_t len, unsigned max_depth, char *err,
			    size_t errsz, size_t *ret_len);
