/* SPDX-License-Identifier: MIT */
/*
 * UTF-8 validation per RFC 3629 (the table in §4): rejects overlong forms,
 * UTF-16 surrogates, code points above U+10FFFF and truncated sequences.
 */
#include <string.h>

#include "utf8.h"

bool utf8_is_valid(const uint8_t *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		uint8_t c = s[i];

		if (c < 0x80) {
			/* ASCII fast path: 8 bytes at a time while none has the top bit set. */
			while (i + 8 <= n) {
				uint64_t w;

				memcpy(&w, s + i, sizeof(w));
				if (w & UINT64_C(0x8080808080808080))
					break;
				i += 8;
			}
			while (i < n && s[i] < 0x80)
				i++;
			continue;
		}

		if (c >= 0xC2 && c <= 0xDF) {
			if (n - i < 2 || (s[i + 1] & 0xC0) != 0x80)
				return false;
			i += 2;
		} else if (c >= 0xE0 && c <= 0xEF) {
			uint8_t lo = 0x80, hi = 0xBF;

			if (c == 0xE0)
				lo = 0xA0; /* overlong */
			else if (c == 0xED)
				hi = 0x9F; /* surrogates U+D800..U+DFFF */
			if (n - i < 3 || s[i + 1] < lo || s[i + 1] > hi || (s[i + 2] & 0xC0) != 0x80)
				return false;
			i += 3;
		} else if (c >= 0xF0 && c <= 0xF4) {
			uint8_t lo = 0x80, hi = 0xBF;

			if (c == 0xF0)
				lo = 0x90; /* overlong */
			else if (c == 0xF4)
				hi = 0x8F; /* above U+10FFFF */
			if (n - i < 4 || s[i + 1] < lo || s[i + 1] > hi ||
			    (s[i + 2] & 0xC0) != 0x80 || (s[i + 3] & 0xC0) != 0x80)
				return false;
			i += 4;
		} else {
			/* 0x80..0xC1 (continuation or overlong lead), 0xF5..0xFF */
			return false;
		}
	}
	return true;
}

size_t utf8_next(const uint8_t *s, size_t n, size_t i, size_t *ret_invalid, bool *ret_truncated)
{
	uint8_t c = s[i], lo = 0x80, hi = 0xBF;
	size_t w, k;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		w = 2;
	else if (c >= 0xE0 && c <= 0xEF)
		w = 3;
	else if (c >= 0xF0 && c <= 0xF4)
		w = 4;
	else
		w = 0;
	/* The second byte's range excludes overlongs, surrogates and > U+10FFFF. */
	if (c == 0xE0)
		lo = 0xA0;
	else if (c == 0xED)
		hi = 0x9F;
	else if (c == 0xF0)
		lo = 0x90;
	else if (c == 0xF4)
		hi = 0x8F;
	for (k = 1; k < w && i + k < n; k++) {
		uint8_t b = s[i + k];

		if (k == 1 ? (b < lo || b > hi) : (b & 0xC0) != 0x80)
			break;
	}
	if (w && k == w)
		return w;
	*ret_invalid = k;
	*ret_truncated = w && i + k == n;
	return 0;
}
