/* SPDX-License-Identifier: MIT */
/*
 * Standard base64 (RFC 4648 §4, '=' padding). No I/O.
 *
 * Hand-written rather than taken from OpenSSL/nettle because (a) decoding must
 * be strict in exactly the way the reference server (Rust `base64` crate,
 * STANDARD engine) is, with its exact error texts, which clients see; and
 * (b) encoding sits on the output hot path and must write straight into a
 * caller-provided frame buffer without intermediate copies.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Encoded length of n input bytes (with padding). */
static inline size_t base64_encoded_len(size_t n)
{
	return (n + 2) / 3 * 4;
}

/* Upper bound of the decoded length of an n-character input. */
static inline size_t base64_decoded_max(size_t n)
{
	return n / 4 * 3 + 3;
}

/* Encodes src[0..n) into dst (room for base64_encoded_len(n)); no NUL. Returns bytes written. */
size_t base64_encode(const uint8_t *src, size_t n, char *dst);

/*
 * The same output without SIMD: 6 bytes per step through a table (what
 * base64_encode uses without AVX2, and for the tail), and 3 bytes per step
 * (the table's tail and the tests' reference).
 */
size_t base64_encode_table(const uint8_t *src, size_t n, char *dst);
size_t base64_encode_simple(const uint8_t *src, size_t n, char *dst);

/*
 * Strict decode of src[0..n) into dst (room for base64_decoded_max(n)).
 * Returns the decoded length (>= 0), or -EINVAL with a NUL-terminated message
 * in reterr (if reterr_size > 0) matching the Rust base64 crate's Display text:
 *   "Invalid symbol <byte>, offset <n>."   (byte as decimal)
 *   "Invalid input length: <n>"  "Invalid padding"
 *   "Invalid last symbol <byte>, offset <n>."
 * Empty input decodes to zero bytes.
 */
ssize_t base64_decode(const char *src, size_t n, uint8_t *dst, char *reterr, size_t reterr_size);
