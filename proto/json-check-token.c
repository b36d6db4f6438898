/* SPDX-License-Identifier: MIT */
/*
 * The JSON check's tokens (json-check-internal.h): strings (escapes,
 * surrogate pairs, control characters, UTF-8 checked at the closing
 * quote), numbers (serde_json's f64_from_parts range without
 * float_roundtrip; any magnitude in message mode) and the literals true,
 * false and null, each failing with serde_json's code and position
 * (json-check.c has the rules).
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "hex.h"
#include "json-check-internal.h"
#include "utf8.h"

static bool is_digit(uint8_t c)
{
	return c >= '0' && c <= '9';
}

/*
 * Four hex digits at *i. serde_json takes all four bytes before checking
 * them, so a bad digit is reported after the fourth; fewer than four bytes
 * left is EOF.
 */
static bool hex4(struct jc *s, size_t *i, unsigned *ret)
{
	unsigned v = 0;
	bool ok = true;

	if (s->len - *i < 4)
		return jc_fail(s, JC_EOF_STRING, s->len);
	for (int k = 0; k < 4; k++) {
		int h = unhexchar(s->p[*i + (size_t)k]);

		if (h < 0)
			ok = false;
		else
			v = v << 4 | (unsigned)h;
	}
	*i += 4;
	if (!ok)
		return jc_fail(s, JC_INVALID_ESCAPE, *i);
	*ret = v;
	return true;
}

/* \u escape; *i is just past the 'u'. */
static bool unicode_escape(struct jc *s, size_t *i)
{
	unsigned n, n2;

	if (!hex4(s, i, &n))
		return false;
	if (n >= 0xDC00 && n <= 0xDFFF)
		return jc_fail(s, JC_LONE_LEADING_SURROGATE, *i);
	if (n < 0xD800 || n > 0xDBFF)
		return true;
	/* Leading surrogate: a \u trailing one must follow. */
	if (*i == s->len)
		return jc_fail(s, JC_EOF_STRING, s->len);
	if (s->p[*i] != '\\')
		return jc_fail(s, JC_UNEXPECTED_END_OF_HEX, *i + 1);
	(*i)++;
	if (*i == s->len)
		return jc_fail(s, JC_EOF_STRING, s->len);
	if (s->p[*i] != 'u')
		return jc_fail(s, JC_UNEXPECTED_END_OF_HEX, *i + 1);
	(*i)++;
	if (!hex4(s, i, &n2))
		return false;
	if (n2 < 0xDC00 || n2 > 0xDFFF)
		return jc_fail(s, JC_LONE_LEADING_SURROGATE, *i);
	return true;
}

bool jcheck_scan_string(struct jc *s, size_t *i)
{
	const uint8_t *p = s->p;
	size_t j = *i, seg = j;
	bool utf8_ok = true;

	for (;;) {
		uint8_t c;

		while (j < s->len && p[j] != '"' && p[j] != '\\' && p[j] >= 0x20)
			j++;
		if (j == s->len)
			return jc_fail(s, JC_EOF_STRING, s->len);
		c = p[j];
		if (c < 0x20)
			return jc_fail(s, JC_CONTROL_CHAR, j + 1);
		/*
		 * Escapes always decode to whole valid characters, so the string
		 * is valid UTF-8 iff every raw run between escapes is.
		 */
		if (utf8_ok && !utf8_is_valid(p + seg, j - seg))
			utf8_ok = false;
		j++;
		if (c == '"') {
			*i = j;
			if (!utf8_ok)
				return jc_fail(s, JC_INVALID_UNICODE, j);
			return true;
		}
		/* Backslash. */
		if (j == s->len)
			return jc_fail(s, JC_EOF_STRING, s->len);
		c = p[j++];
		switch (c) {
		case '"':
		case '\\':
		case '/':
		case 'b':
		case 'f':
		case 'n':
		case 'r':
		case 't':
			break;
		case 'u':
			if (!unicode_escape(s, &j))
				return false;
			break;
		default:
			return jc_fail(s, JC_INVALID_ESCAPE, j);
		}
		seg = j;
	}
}

/* 1e289..1e308 as the compiler rounds the literals, like serde_json's POW10 table. */
static const double pow10_hi[] = {
	1e289, 1e290, 1e291, 1e292, 1e293, 1e294, 1e295, 1e296, 1e297, 1e298,
	1e299, 1e300, 1e301, 1e302, 1e303, 1e304, 1e305, 1e306, 1e307, 1e308,
};

/*
 * serde_json's f64_from_parts without float_roundtrip: (double)significand,
 * then multiplied by 10^exponent (or divided); infinity is out of range.
 * Below 1e289 even u64::MAX cannot overflow; above 1e308 anything nonzero does.
 */
static bool float_in_range(uint64_t significand, int32_t exponent)
{
	if (significand == 0 || exponent < 289)
		return true;
	if (exponent > 308)
		return false;
	return !isinf((double)significand * pow10_hi[exponent - 289]);
}

static bool u64_overflows(uint64_t v, unsigned digit)
{
	return v >= UINT64_MAX / 10 && (v > UINT64_MAX / 10 || digit > UINT64_MAX % 10);
}

static bool i32_overflows(int32_t v, int32_t digit)
{
	return v >= INT32_MAX / 10 && (v > INT32_MAX / 10 || digit > INT32_MAX % 10);
}

static int32_t sat_add(int32_t a, int64_t b)
{
	int64_t r = (int64_t)a + b;

	return r > INT32_MAX ? INT32_MAX : r < INT32_MIN ? INT32_MIN : (int32_t)r;
}

/* A number that is infinity as an f64: an error, except in message mode. */
static bool range_fail(struct jc *s, size_t at)
{
	return s->lax_numbers ? true : jc_fail(s, JC_NUMBER_OUT_OF_RANGE, at);
}

/* Exponent part; *i is at the 'e' or 'E'. */
static bool scan_exponent(struct jc *s, size_t *i, uint64_t significand, int32_t start)
{
	const uint8_t *p = s->p;
	bool positive = true;
	int32_t exp;
	uint8_t c;

	(*i)++;
	if (*i < s->len && (p[*i] == '+' || p[*i] == '-')) {
		positive = p[*i] == '+';
		(*i)++;
	}
	if (*i == s->len)
		return jc_fail(s, JC_EOF_VALUE, s->len);
	c = p[(*i)++];
	if (!is_digit(c))
		return jc_fail(s, JC_INVALID_NUMBER, *i);
	exp = c - '0';
	while (*i < s->len && is_digit(p[*i])) {
		int32_t d = p[(*i)++] - '0';

		if (i32_overflows(exp, d)) {
			/* Infinity is an error, zero is not; the rest is skipped. */
			if (significand != 0 && positive && !s->lax_numbers)
				return jc_fail(s, JC_NUMBER_OUT_OF_RANGE, *i);
			while (*i < s->len && is_digit(p[*i]))
				(*i)++;
			return true;
		}
		exp = exp * 10 + d;
	}
	if (!float_in_range(significand, sat_add(start, positive ? (int64_t)exp : -(int64_t)exp)))
		return range_fail(s, *i);
	return true;
}

/* Fraction part; *i is at the '.'. exponent counts integer digits dropped. */
static bool scan_decimal(struct jc *s, size_t *i, uint64_t significand, int32_t exponent)
{
	const uint8_t *p = s->p;
	bool any = false, dropping = false;

	(*i)++;
	while (*i < s->len && is_digit(p[*i])) {
		unsigned d = p[*i] - '0';

		any = true;
		if (!dropping && u64_overflows(significand, d))
			dropping = true; /* further digits are ignored */
		if (!dropping) {
			significand = significand * 10 + d;
			exponent = sat_add(exponent, -1);
		}
		(*i)++;
	}
	if (!any)
		return jc_fail(s, *i < s->len ? JC_INVALID_NUMBER : JC_EOF_VALUE, *i + 1);
	if (*i < s->len && (p[*i] == 'e' || p[*i] == 'E'))
		return scan_exponent(s, i, significand, exponent);
	if (!float_in_range(significand, exponent))
		return range_fail(s, *i);
	return true;
}

bool jcheck_scan_number(struct jc *s, size_t *i)
{
	const uint8_t *p = s->p;
	uint64_t significand;
	int32_t exponent = 0;
	uint8_t c;

	if (p[*i] == '-')
		(*i)++;
	if (*i == s->len)
		return jc_fail(s, JC_EOF_VALUE, s->len);
	c = p[(*i)++];
	if (c == '0') {
		if (*i < s->len && is_digit(p[*i]))
			return jc_fail(s, JC_INVALID_NUMBER, *i + 1);
		significand = 0;
	} else if (c >= '1' && c <= '9') {
		significand = c - '0';
		while (*i < s->len && is_digit(p[*i])) {
			unsigned d = p[*i] - '0';

			if (u64_overflows(significand, d)) {
				/* Long integer: keep the digits so far, count the rest. */
				while (*i < s->len && is_digit(p[*i])) {
					exponent = sat_add(exponent, 1);
					(*i)++;
				}
				if (*i < s->len && p[*i] == '.')
					return scan_decimal(s, i, significand, exponent);
				if (*i < s->len && (p[*i] == 'e' || p[*i] == 'E'))
					return scan_exponent(s, i, significand, exponent);
				if (!float_in_range(significand, exponent))
					return range_fail(s, *i);
				return true;
			}
			significand = significand * 10 + d;
			(*i)++;
		}
	} else {
		return jc_fail(s, JC_INVALID_NUMBER, *i);
	}
	if (*i < s->len && p[*i] == '.')
		return scan_decimal(s, i, significand, 0);
	if (*i < s->len && (p[*i] == 'e' || p[*i] == 'E'))
		return scan_exponent(s, i, significand, 0);
	return true; /* u64 or i64 (or -0 / below i64::MIN as a float): never out of range */
}

bool jcheck_scan_ident(struct jc *s, size_t *i, const char *rest)
{
	(*i)++;
	for (; *rest; rest++, (*i)++) {
		if (*i == s->len)
			return jc_fail(s, JC_EOF_VALUE, s->len);
		if (s->p[*i] != (uint8_t)*rest)
			return jc_fail(s, JC_EXPECTED_IDENT, *i + 1);
	}
	return true;
}
