/* SPDX-License-Identifier: MIT */
/* UTF-8 validation (RFC 3629: no overlongs, no surrogates, <= U+10FFFF). No I/O. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

bool utf8_is_valid(const uint8_t *s, size_t n);

/*
 * One step of a lossy or diagnosing scan, as Rust's from_utf8 reports it:
 * the length (1 to 4) of the valid sequence at s[i], or 0 when none starts
 * there; then *ret_invalid is the length of the maximal invalid subsequence
 * at i (at least 1: "\xE2\x82" followed by no continuation is one), and
 * *ret_truncated says it runs to the end of s and could still be completed.
 */
size_t utf8_next(const uint8_t *s, size_t n, size_t i, size_t *ret_invalid, bool *ret_truncated);
