/* SPDX-License-Identifier: MIT */
#pragma once

/* The value of one hexadecimal digit, or -1. */
static inline int unhexchar(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}
