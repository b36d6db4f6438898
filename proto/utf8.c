/* SPDX-License-Identifier: MIT */
/*
 * UTF-8 validation per RFC 3629 (the table in §4): rejects overlong forms,
 * UTF-16 surrogates, code points above U+10FFFF and truncated sequences.
 */
#include <string.h>

#include "utf8-lead.h"
#include "utf8.h"

bool utf8_is_valid(const uint8_t *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		uint8_t c = s[i], lo, hi;
		size_t len;

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

		len = utf8_lead(c, &lo, &hi);
		if (len == 0 || n - i < len || s[i + 1] < lo || s[i + 1] > hi)
			return false;
		for (size_t k = 2; k < len; k++)
			if ((s[i + k] & 0xC0) != 0x80)
				return false;
		i += len;
	}
	return true;
}

size_t utf8_next(const uint8_t *s, size_t n, size_t i, size_t *ret_invalid, bool *ret_truncated)
{
	uint8_t lo, hi;
	size_t w = utf8_lead(s[i], &lo, &hi), k;

	if (w == 1)
		return 1;
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
