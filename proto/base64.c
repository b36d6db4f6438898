/* SPDX-License-Identifier: MIT */
/*
 * Standard base64. The decoder reproduces the acceptance rules, the error
 * precedence and the error offsets of the Rust `base64` crate 0.22 STANDARD
 * engine (canonical padding required, trailing bits must be zero).
 */
#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

size_t base64_encode_simple(const uint8_t *src, size_t n, char *dst)
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

/*
 * The output hot path (every process/output chunk) encodes through a table
 * of the two symbols of each 12-bit value, in memory order (first symbol in
 * the low byte, as a little-endian store writes it): 6 input bytes become
 * one 8-byte store from four lookups instead of eight byte stores. It is
 * built by the preprocessor so that it is read-only data shared by every
 * thread, with no initialisation to race on. It is the whole encoder where
 * AVX2 is missing and the tail where it is not. Debian packages no SIMD
 * base64 library (libb64 is scalar and slower than this; OpenSSL's
 * EVP_EncodeBlock is scalar and brings libcrypto back to the idle
 * footprint), hence both here.
 */
#define SYM(x) ((x) < 26 ? 'A' + (x) : (x) < 52 ? 'a' + (x) - 26 : (x) < 62 ? '0' + (x) - 52 : (x) == 62 ? '+' : '/')
#define PAIR(i) (uint16_t)(SYM((i) >> 6) | SYM((i) & 63) << 8)
#define PAIR4(i) PAIR(i), PAIR((i) + 1), PAIR((i) + 2), PAIR((i) + 3)
#define PAIR16(i) PAIR4(i), PAIR4((i) + 4), PAIR4((i) + 8), PAIR4((i) + 12)
#define PAIR64(i) PAIR16(i), PAIR16((i) + 16), PAIR16((i) + 32), PAIR16((i) + 48)
#define PAIR256(i) PAIR64(i), PAIR64((i) + 64), PAIR64((i) + 128), PAIR64((i) + 192)
#define PAIR1024(i) PAIR256(i), PAIR256((i) + 256), PAIR256((i) + 512), PAIR256((i) + 768)
static const uint16_t pair_table[4096] = {
	PAIR1024(0), PAIR1024(1024), PAIR1024(2048), PAIR1024(3072),
};

#if defined(__x86_64__)
/*
 * AVX2: 24 input bytes to 32 symbols per step, the method of Muła and Lemire
 * ("Faster Base64 Encoding and Decoding Using AVX2 Instructions", 2018),
 * written from the paper: each 32-bit lane gets its 3 bytes as b1 b0 b2 b1,
 * two multiplies move the four 6-bit fields into one byte each, and a
 * 16-entry table of offsets (chosen by range) maps the values to the
 * alphabet. Two 16-byte loads, at src and src + 12, so that nothing before
 * src or past src + 28 is read. Returns the input bytes consumed.
 */
__attribute__((target("avx2"))) static size_t encode_avx2(const uint8_t *src, size_t n, char *dst)
{
	const __m256i shuf = _mm256_setr_epi8(1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10,
					      1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10);
	const __m256i offsets = _mm256_setr_epi8(65, 71, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -19, -16, 0, 0,
						 65, 71, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -19, -16, 0, 0);
	size_t i = 0;

	for (; n - i >= 28; i += 24, dst += 32) {
		__m256i in = _mm256_inserti128_si256(
			_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(src + i))),
			_mm_loadu_si128((const __m128i *)(src + i + 12)), 1);
		__m256i t, v, idx;

		in = _mm256_shuffle_epi8(in, shuf);
		/* fields 0 and 2 down by 10 and 6 bits, fields 1 and 3 up to their bytes */
		t = _mm256_mulhi_epu16(_mm256_and_si256(in, _mm256_set1_epi32(0x0fc0fc00)),
				       _mm256_set1_epi32(0x04000040));
		v = _mm256_mullo_epi16(_mm256_and_si256(in, _mm256_set1_epi32(0x003f03f0)),
				       _mm256_set1_epi32(0x01000010));
		v = _mm256_or_si256(t, v);
		/* 0..25 -> 0, 26..51 -> 1, 52..61 -> 2..11, 62 -> 12, 63 -> 13 */
		idx = _mm256_subs_epu8(v, _mm256_set1_epi8(51));
		idx = _mm256_sub_epi8(idx, _mm256_cmpgt_epi8(v, _mm256_set1_epi8(25)));
		v = _mm256_add_epi8(v, _mm256_shuffle_epi8(offsets, idx));
		_mm256_storeu_si256((__m256i *)dst, v);
	}
	return i;
}
#endif

size_t base64_encode_table(const uint8_t *src, size_t n, char *dst)
{
	char *d = dst;
	size_t i = 0;

	/* 8-byte loads of which 6 bytes are used: stop while 8 remain readable. */
	for (; n - i >= 8; i += 6) {
		uint64_t v, w;

		memcpy(&v, src + i, 8);
		v = be64toh(v);
		w = (uint64_t)pair_table[v >> 52] | (uint64_t)pair_table[(v >> 40) & 0xFFF] << 16 |
		    (uint64_t)pair_table[(v >> 28) & 0xFFF] << 32 |
		    (uint64_t)pair_table[(v >> 16) & 0xFFF] << 48;
		w = htole64(w);
		memcpy(d, &w, 8);
		d += 8;
	}
	return (size_t)(d - dst) + base64_encode_simple(src + i, n - i, d);
}

size_t base64_encode(const uint8_t *src, size_t n, char *dst)
{
	size_t i = 0;

#if defined(__x86_64__)
	if (n >= 28 && __builtin_cpu_supports("avx2"))
		i = encode_avx2(src, n, dst);
#endif
	return i / 3 * 4 + base64_encode_table(src + i, n - i, dst + i / 3 * 4);
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
