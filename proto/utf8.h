/* SPDX-License-Identifier: MIT */
/* UTF-8 validation (RFC 3629: no overlongs, no surrogates, <= U+10FFFF). No I/O. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

bool utf8_is_valid(const uint8_t *s, size_t n);
