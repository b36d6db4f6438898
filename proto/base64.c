/* SPDX-License-Identifier: MIT */
/*
 * Standard base64. The decoder reproduces the acceptance rules, the error
 * precedence and the error offsets of the Rust `base64` crate 0.22 STANDARD
 * engine (canonical padding required, trailing bits must be zero).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "base64.h"

#define INVALID 0xFF
#define PAD '='

static const char enc_table[64] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Symbol values; X marks bytes outside the alphabet ('=' included). */
#define X INVALID
/* clang-format off */
static const uint8_t dec_table[256] = {
	  X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,
	  X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,
	  X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,  62,   X,   X,   X,  63,
	 52,  53,  54,  55,  56,  57,  58,  59,  60,  61,   X,   X,   X,   X,   X,   X,
	  X,   0,   1,   2,   3,   4,   5,   6,   7,   8,   9,  10,  11,  12,  13,  14,
	 15,  16,  17,  18,  19,  20,  21,  22,  23,  24,  25,   X,   X,   X,   X,   X,
	  X,  26,  27,  28,  29,  30,  31,  32,  33,  34,  35,  36,  37,  38,  39,  40,
	 41,  42,  43,  44,  45,  46,  47,  48,  49,  50,  51,   X,   X,   X,   X,   X,
	  X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,
	  X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,
	  X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,
	  X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,
	  X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,
	  X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,
	  X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,
	  X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,
};
/* clang-format on */
#undef X

size_t base64_encode(const uint8_t *src, size_t n, char *dst)
{
	char *d = dst;
	size_t i = 0;

	for (; n - i >= 3; i += 3) {
		uint32_t v = (uint32_t)src[i] << 16 | (uint32_t)src[i + 1] << 8 | src[i + 2];

		d[0] = enc_table[v >> 18];
		d[1] = enc_table[(v >> 12) & 0x3F];
		d[2] = enc_table[(v >> 6) & 0x3F];
		d[3] = enc_table[v & 0x3F];
		d += 4;
	}
	if (n - i == 1) {
		uint32_t v = (uint32_t)src[i] << 16;

		d[0] = enc_table[v >> 18];
		d[1] = enc_table[(v >> 12) & 0x3F];
		d[2] = PAD;
		d[3] = PAD;
		d += 4;
	} else if (n - i == 2) {
		uint32_t v = (uint32_t)src[i] << 16 | (uint32_t)src[i + 1] << 8;

		d[0] = enc_table[v >> 18];
		d[1] = enc_table[(v >> 12) & 0x3F];
		d[2] = enc_table[(v >> 6) & 0x3F];
		d[3] = PAD;
		d += 4;
	}
	return (size_t)(d - dst);
}

static ssize_t fail(char *reterr, size_t reterr_size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static ssize_t fail(char *reterr, size_t reterr_size, const char *fmt, ...)
{
	va_list ap;

	if (reterr && reterr_size > 0) {
		va_start(ap, fmt);
		(void)vsnprintf(reterr, reterr_size, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

#define FAIL_SYMBOL(off, b) \
	fail(reterr, reterr_size, "Invalid symbol %u, offset %zu.", (unsigned)(uint8_t)(b), (size_t)(off))

ssize_t base64_decode(const char *src, size_t n, uint8_t *dst, char *reterr, size_t reterr_size)
{
	const uint8_t *s = (const uint8_t *)src;
	size_t rem = n % 4, body, i, o = 0;
	unsigned morsels = 0, pads = 0;
	size_t first_pad = 0;
	uint8_t m[4] = { 0 }, last = 0;
	uint32_t acc;
	unsigned nbytes;

	if (n == 0)
		return 0;

	/* A lone trailing invalid byte (typically a newline) is reported before the length. */
	if (rem == 1 && s[n - 1] != PAD && dec_table[s[n - 1]] == INVALID)
		return FAIL_SYMBOL(n - 1, s[n - 1]);

	/* Every complete quad except the last one (which may carry padding). */
	body = n - rem;
	if (rem == 0)
		body -= 4;

	for (i = 0; i < body; i += 4) {
		uint8_t a = dec_table[s[i]], b = dec_table[s[i + 1]];
		uint8_t c = dec_table[s[i + 2]], d = dec_table[s[i + 3]];

		if ((a | b | c | d) & 0x80) {
			for (size_t k = 0; k < 4; k++)
				if (dec_table[s[i + k]] == INVALID)
					return FAIL_SYMBOL(i + k, s[i + k]);
		}
		acc = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6 | d;
		dst[o++] = (uint8_t)(acc >> 16);
		dst[o++] = (uint8_t)(acc >> 8);
		dst[o++] = (uint8_t)acc;
	}

	/* The final 1..4 symbols. */
	for (i = body; i < n; i++) {
		size_t k = i - body;

		if (s[i] == PAD) {
			if (k < 2)
				return FAIL_SYMBOL(i, PAD);
			if (pads == 0)
				first_pad = i;
			pads++;
			continue;
		}
		if (pads > 0)
			return FAIL_SYMBOL(first_pad, PAD);
		if (dec_table[s[i]] == INVALID)
			return FAIL_SYMBOL(i, s[i]);
		last = s[i];
		m[morsels++] = dec_table[s[i]];
	}

	if (morsels < 2)
		return fail(reterr, reterr_size, "Invalid input length: %zu", body + morsels);
	if ((pads + morsels) % 4 != 0)
		return fail(reterr, reterr_size, "Invalid padding");

	acc = (uint32_t)m[0] << 26 | (uint32_t)m[1] << 20 | (uint32_t)m[2] << 14 | (uint32_t)m[3] << 8;
	nbytes = morsels * 6 / 8;
	if (acc & (UINT32_MAX >> (nbytes * 8)))
		return fail(reterr, reterr_size, "Invalid last symbol %u, offset %zu.", (unsigned)last,
			    body + morsels - 1);

	for (unsigned k = 0; k < nbytes; k++)
		dst[o++] = (uint8_t)(acc >> (24 - 8 * k));

	return (ssize_t)o;
}
