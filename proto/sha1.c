/* SPDX-License-Identifier: MIT */
/* SHA-1 from FIPS 180-4 section 6.1 (sha1.h). */
#include <string.h>

#include "sha1.h"

static uint32_t rol(uint32_t x, unsigned n)
{
	return (x << n) | (x >> (32 - n));
}

/* One 64-byte block into the state (6.1.2). */
static void sha1_block(uint32_t h[5], const uint8_t *p)
{
	uint32_t w[80], a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];

	for (unsigned i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
	for (unsigned i = 16; i < 80; i++)
		w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	for (unsigned i = 0; i < 80; i++) {
		uint32_t f, k, t;

		if (i < 20) {
			f = (b & c) | (~b & d);
			k = 0x5a827999;
		} else if (i < 40) {
			f = b ^ c ^ d;
			k = 0x6ed9eba1;
		} else if (i < 60) {
			f = (b & c) | (b & d) | (c & d);
			k = 0x8f1bbcdc;
		} else {
			f = b ^ c ^ d;
			k = 0xca62c1d6;
		}
		t = rol(a, 5) + f + e + k + w[i];
		e = d;
		d = c;
		c = rol(b, 30);
		b = a;
		a = t;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
}

void sha1_digest(const void *data, size_t len, uint8_t out[SHA1_BYTES])
{
	uint32_t h[5] = { 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0 };
	uint64_t bits = (uint64_t)len * 8;
	const uint8_t *p = data;
	uint8_t tail[128] = { 0 };
	size_t n = len, tail_len;

	for (; n >= 64; n -= 64, p += 64)
		sha1_block(h, p);
	/* Padding (5.1.1): 0x80, zeros, the length in bits as 64-bit big-endian. */
	if (n)
		memcpy(tail, p, n);
	tail[n] = 0x80;
	tail_len = n + 1 + 8 <= 64 ? 64 : 128;
	for (unsigned i = 0; i < 8; i++)
		tail[tail_len - 1 - i] = (uint8_t)(bits >> (8 * i));
	sha1_block(h, tail);
	if (tail_len == 128)
		sha1_block(h, tail + 64);
	for (unsigned i = 0; i < 5; i++) {
		out[4 * i] = (uint8_t)(h[i] >> 24);
		out[4 * i + 1] = (uint8_t)(h[i] >> 16);
		out[4 * i + 2] = (uint8_t)(h[i] >> 8);
		out[4 * i + 3] = (uint8_t)h[i];
	}
}
