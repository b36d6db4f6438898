/* SPDX-License-Identifier: MIT */
/*
 * The lead byte of a UTF-8 sequence (RFC 3629 §4), shared by the validators
 * of proto/utf8.c and the log's escaping (base/log.c).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/*
 * The length of the sequence c leads (1 for ASCII, 0 when c cannot lead one)
 * and the range of its second byte, which excludes overlong forms, UTF-16
 * surrogates and code points above U+10FFFF; any further byte is 0x80..0xBF.
 */
static inline size_t utf8_lead(uint8_t c, uint8_t *ret_lo, uint8_t *ret_hi)
{
	*ret_lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
	*ret_hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		return 2;
	if (c >= 0xE0 && c <= 0xEF)
		return 3;
	return c >= 0xF0 && c <= 0xF4 ? 4 : 0;
}
