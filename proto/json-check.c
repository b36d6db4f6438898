/* SPDX-License-Identifier: MIT */
/*
 * JSON syntax check with serde_json's error codes and positions (1.0.125 and
 * later, from_slice/from_str, without float_roundtrip/arbitrary_precision;
 * cross-checked against serde_json 1.0.140 on ~500k mutated inputs). Rules:
 *
 *  - A position is a byte index i: line = 1 + newlines in buf[0..i), column =
 *    bytes between the last newline before i and i. An error on a byte that
 *    was consumed uses the index just past it (its 1-based column); an error on
 *    a peeked byte uses the same (index + 1, capped at len); an EOF error uses
 *    len. A control character is consumed first, so a raw newline in a string
 *    reports "line N+1 column 0".
 *  - Whitespace is space, \t, \n, \r only. A UTF-8 BOM is not whitespace.
 *  - Strings are checked for UTF-8 once the closing quote is read (error at
 *    the quote); escapes, control characters and EOF are found first.
 *  - Integers that overflow u64 become floats; a float is out of range when
 *    serde_json's f64_from_parts (without float_roundtrip) gives infinity:
 *    (double)significand * 1eN with at most 19-20 significant digits kept.
 *  - Nesting: serde_json starts with remaining_depth = 128 and fails when it
 *    reaches 0, i.e. on the 128th nested '[' or '{' (at that bracket).
 *
 * The message mode (jcheck_validate_message) is how the reference reads a
 * WebSocket message, observed against 0.169.0: numbers of any size pass (as
 * with arbitrary_precision), and a key repeated in one object fails at its
 * closing quote (tests/reference/steps.py envelope_keys_numbers).
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "hex.h"
#include "json-check.h"
#include "utf8.h"

enum jc_code {
	JC_EOF_LIST,
	JC_EOF_OBJECT,
	JC_EOF_STRING,
	JC_EOF_VALUE,
	JC_EXPECTED_COLON,
	JC_EXPECTED_LIST_COMMA_OR_END,
	JC_EXPECTED_OBJECT_COMMA_OR_END,
	JC_EXPECTED_IDENT,
	JC_EXPECTED_VALUE,
	JC_INVALID_ESCAPE,
	JC_INVALID_NUMBER,
	JC_NUMBER_OUT_OF_RANGE,
	JC_INVALID_UNICODE,
	JC_CONTROL_CHAR,
	JC_KEY_MUST_BE_STRING,
	JC_LONE_LEADING_SURROGATE,
	JC_TRAILING_COMMA,
	JC_TRAILING_CHARACTERS,
	JC_UNEXPECTED_END_OF_HEX,
	JC_RECURSION_LIMIT,
	JC_DUPLICATE_KEY,
	JC_OUT_OF_MEMORY,
};

/* serde_json's ErrorCode Display texts. */
static const char *const jc_text[] = {
	[JC_EOF_LIST] = "EOF while parsing a list",
	[JC_EOF_OBJECT] = "EOF while parsing an object",
	[JC_EOF_STRING] = "EOF while parsing a string",
	[JC_EOF_VALUE] = "EOF while parsing a value",
	[JC_EXPECTED_COLON] = "expected `:`",
	[JC_EXPECTED_LIST_COMMA_OR_END] = "expected `,` or `]`",
	[JC_EXPECTED_OBJECT_COMMA_OR_END] = "expected `,` or `}`",
	[JC_EXPECTED_IDENT] = "expected ident",
	[JC_EXPECTED_VALUE] = "expected value",
	[JC_INVALID_ESCAPE] = "invalid escape",
	[JC_INVALID_NUMBER] = "invalid number",
	[JC_NUMBER_OUT_OF_RANGE] = "number out of range",
	[JC_INVALID_UNICODE] = "invalid unicode code point",
	[JC_CONTROL_CHAR] = "control character (\\u0000-\\u001F) found while parsing a string",
	[JC_KEY_MUST_BE_STRING] = "key must be a string",
	[JC_LONE_LEADING_SURROGATE] = "lone leading surrogate in hex escape",
	[JC_TRAILING_COMMA] = "trailing comma",
	[JC_TRAILING_CHARACTERS] = "trailing characters",
	[JC_UNEXPECTED_END_OF_HEX] = "unexpected end of hex escape",
	[JC_RECURSION_LIMIT] = "recursion limit exceeded",
	[JC_DUPLICATE_KEY] = "duplicate JSON object key",
	[JC_OUT_OF_MEMORY] = "out of memory",
};

struct jc_keys;

struct jc {
	const uint8_t *p;
	size_t len;
	enum jc_code code; /* set with at when a check fails */
	size_t at;	   /* byte index the error position is computed from */
	bool lax_numbers;  /* message mode: numbers of any magnitude are accepted */
	struct jc_keys *keys; /* message mode: the keys of the open objects */
	size_t dup_start, dup_end; /* JC_DUPLICATE_KEY: the raw key between its quotes */
};

static bool jc_fail(struct jc *s, enum jc_code code, size_t at)
{
	s->code = code;
	s->at = at < s->len ? at : s->len;
	return false;
}

static bool is_ws(uint8_t c)
{
	return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

static size_t skip_ws(const struct jc *s, size_t i)
{
	while (i < s->len && is_ws(s->p[i]))
		i++;
	return i;
}

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

/* String body; *i is just past the opening quote, and ends past the closing one. */
static bool scan_string(struct jc *s, size_t *i)
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

/* Number; *i is at the '-' or first digit. */
static bool scan_number(struct jc *s, size_t *i)
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

/* The rest of "true", "false" or "null"; *i is at the first letter. */
static bool scan_ident(struct jc *s, size_t *i, const char *rest)
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


/*
 * Duplicate keys (message mode). The reference reads a message with a map
 * that refuses a repeated key, streaming: the first repeat in text order
 * fails, at its closing quote, before any later syntax error. The keys of the
 * open objects are kept in insertion order (a stack: an object's keys are on
 * top while it is open and are dropped when it closes) and hashed, decoded,
 * into chains, so the check is linear and its memory bounded by the keys of
 * the open objects, which the JSON tree holds anyway.
 */
struct jc_key {
	uint64_t hash;
	size_t start, end; /* raw text between the quotes */
	size_t object;     /* serial number of the object the key belongs to */
	size_t next;       /* next entry in the chain, or SIZE_MAX */
};

struct jc_keys {
	struct jc_key *v;
	size_t n, cap;
	size_t *heads; /* n_heads chain heads (a power of two), SIZE_MAX = empty */
	size_t n_heads;
	uint8_t *scratch; /* decoded keys for comparisons */
	size_t scratch_cap;
	uint64_t seed;
};

/* Appends the UTF-8 of code point cp at out; returns the length. */
static size_t put_utf8(uint8_t *out, unsigned cp)
{
	if (cp < 0x80) {
		out[0] = (uint8_t)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (uint8_t)(0xC0 | cp >> 6);
		out[1] = (uint8_t)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (uint8_t)(0xE0 | cp >> 12);
		out[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
		out[2] = (uint8_t)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (uint8_t)(0xF0 | cp >> 18);
	out[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3F));
	out[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
	out[3] = (uint8_t)(0x80 | (cp & 0x3F));
	return 4;
}

static unsigned hex4_value(const uint8_t *p)
{
	unsigned v = 0;

	for (int k = 0; k < 4; k++)
		v = v << 4 | (unsigned)unhexchar(p[k]);
	return v;
}

/*
 * Decodes the validated string body p[start..end) into out (at least
 * end - start bytes: no escape decodes to more bytes than it takes).
 */
static size_t decode_string(const uint8_t *p, size_t start, size_t end, uint8_t *out)
{
	size_t o = 0;

	for (size_t i = start; i < end;) {
		unsigned cp;

		if (p[i] != '\\') {
			out[o++] = p[i++];
			continue;
		}
		i++;
		switch (p[i++]) {
		case 'b':
			out[o++] = '\b';
			break;
		case 'f':
			out[o++] = '\f';
			break;
		case 'n':
			out[o++] = '\n';
			break;
		case 'r':
			out[o++] = '\r';
			break;
		case 't':
			out[o++] = '\t';
			break;
		case 'u':
			cp = hex4_value(p + i);
			i += 4;
			if (cp >= 0xD800 && cp <= 0xDBFF && i + 6 <= end && p[i] == '\\' && p[i + 1] == 'u') {
				unsigned lo = hex4_value(p + i + 2);

				if (lo >= 0xDC00 && lo <= 0xDFFF) {
					cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
					i += 6;
				}
			}
			o += put_utf8(out + o, cp);
			break;
		default: /* " \ / */
			out[o++] = p[i - 1];
		}
	}
	return o;
}

static uint64_t key_hash(uint64_t seed, const uint8_t *k, size_t n)
{
	uint64_t h = seed ^ UINT64_C(0xcbf29ce484222325);

	for (size_t i = 0; i < n; i++) {
		h ^= k[i];
		h *= UINT64_C(0x100000001b3);
		h ^= h >> 29;
	}
	return h ^ (uint64_t)n;
}

static void keys_free(struct jc_keys *k)
{
	free(k->v);
	free(k->heads);
	free(k->scratch);
}

/* Makes room for a decoded key of up to n bytes, twice (a comparison). */
static bool keys_scratch(struct jc_keys *k, size_t n)
{
	uint8_t *b;

	/* Always a buffer, even for empty keys: memcmp and friends never get NULL. */
	if (k->scratch && n <= SIZE_MAX / 2 && 2 * n <= k->scratch_cap)
		return true;
	if (n > SIZE_MAX / 2)
		return false;
	b = realloc(k->scratch, 2 * n + 16);
	if (!b)
		return false;
	k->scratch = b;
	k->scratch_cap = 2 * n + 16;
	return true;
}

static bool keys_rehash(struct jc_keys *k, size_t n_heads)
{
	size_t *h = malloc(n_heads * sizeof(*h));

	if (!h)
		return false;
	for (size_t i = 0; i < n_heads; i++)
		h[i] = SIZE_MAX;
	for (size_t i = 0; i < k->n; i++) {
		size_t b = (size_t)(k->v[i].hash & (n_heads - 1));

		k->v[i].next = h[b];
		h[b] = i;
	}
	free(k->heads);
	k->heads = h;
	k->n_heads = n_heads;
	return true;
}

/*
 * Records the key p[start..end) of object `object`. Returns 1 if the object
 * already has that key, 0 if not, -1 on OOM.
 */
static int keys_add(struct jc_keys *k, const uint8_t *p, size_t start, size_t end, size_t object)
{
	size_t n, b;
	uint64_t h;

	if (!keys_scratch(k, end - start))
		return -1;
	n = decode_string(p, start, end, k->scratch);
	h = key_hash(k->seed, k->scratch, n);
	if (k->n_heads) {
		for (size_t e = k->heads[h & (k->n_heads - 1)]; e != SIZE_MAX; e = k->v[e].next) {
			const struct jc_key *o = &k->v[e];
			size_t on;

			if (o->object != object)
				break; /* older entries of the chain belong to enclosing objects */
			if (o->hash != h)
				continue;
			on = decode_string(p, o->start, o->end, k->scratch + n);
			if (on == n && memcmp(k->scratch, k->scratch + n, n) == 0)
				return 1;
		}
	}
	if (k->n == k->cap) {
		size_t cap = k->cap ? 2 * k->cap : 16;
		struct jc_key *v = reallocarray(k->v, cap, sizeof(*v));

		if (!v)
			return -1;
		k->v = v;
		k->cap = cap;
	}
	if (k->n >= k->n_heads && !keys_rehash(k, k->n_heads ? 2 * k->n_heads : 16))
		return -1;
	b = (size_t)(h & (k->n_heads - 1));
	k->v[k->n] = (struct jc_key){ .hash = h, .start = start, .end = end, .object = object,
				      .next = k->heads[b] };
	k->heads[b] = k->n++;
	return 0;
}

/* Drops the keys of the object that closes (the top of the stack). */
static void keys_close(struct jc_keys *k, size_t object)
{
	while (k->n && k->v[k->n - 1].object == object) {
		struct jc_key *e = &k->v[--k->n];

		k->heads[e->hash & (k->n_heads - 1)] = e->next;
	}
}

/* Bit d-1 set: the container at depth d is an object. */
struct jc_stack {
	uint64_t obj[JSON_CHECK_DEPTH_MAX / 64];
	unsigned depth;
	size_t serial[JSON_CHECK_DEPTH_MAX]; /* message mode: each open object's number */
	size_t n_objects;
};

static bool top_is_object(const struct jc_stack *st)
{
	unsigned b = st->depth - 1;

	return st->obj[b / 64] >> (b % 64) & 1;
}

static bool scan(struct jc *s, unsigned max_depth)
{
	const uint8_t *p = s->p;
	struct jc_stack st;
	size_t i = 0, kstart;

	st.depth = 0;
	st.n_objects = 0;

value:
	i = skip_ws(s, i);
	if (i == s->len)
		return jc_fail(s, JC_EOF_VALUE, s->len);
	switch (p[i]) {
	case '[':
	case '{': {
		bool obj = p[i] == '{';
		unsigned b = st.depth;

		/* serde_json: --remaining_depth == 0 fails, at the bracket. */
		if (st.depth + 1 >= max_depth)
			return jc_fail(s, JC_RECURSION_LIMIT, i + 1);
		if (obj) {
			st.obj[b / 64] |= UINT64_C(1) << (b % 64);
			st.serial[b] = ++st.n_objects;
		} else
			st.obj[b / 64] &= ~(UINT64_C(1) << (b % 64));
		st.depth++;
		i = skip_ws(s, i + 1);
		if (i == s->len)
			return jc_fail(s, obj ? JC_EOF_OBJECT : JC_EOF_LIST, s->len);
		if (p[i] == (obj ? '}' : ']')) {
			i++;
			st.depth--;
			goto after_value;
		}
		if (!obj)
			goto value;
		if (p[i] != '"')
			return jc_fail(s, JC_KEY_MUST_BE_STRING, i + 1);
		goto key;
	}
	case '"':
		i++;
		if (!scan_string(s, &i))
			return false;
		goto after_value;
	case 't':
		if (!scan_ident(s, &i, "rue"))
			return false;
		goto after_value;
	case 'f':
		if (!scan_ident(s, &i, "alse"))
			return false;
		goto after_value;
	case 'n':
		if (!scan_ident(s, &i, "ull"))
			return false;
		goto after_value;
	case '-':
	case '0':
	case '1':
	case '2':
	case '3':
	case '4':
	case '5':
	case '6':
	case '7':
	case '8':
	case '9':
		if (!scan_number(s, &i))
			return false;
		goto after_value;
	default:
		return jc_fail(s, JC_EXPECTED_VALUE, i + 1);
	}

key:
	/* p[i] is the key's opening quote. */
	kstart = ++i;
	if (!scan_string(s, &i))
		return false;
	if (s->keys) {
		size_t start = kstart;
		int r = keys_add(s->keys, p, start, i - 1, st.serial[st.depth - 1]);

		if (r < 0)
			return jc_fail(s, JC_OUT_OF_MEMORY, i);
		if (r > 0) {
			s->dup_start = start;
			s->dup_end = i - 1;
			return jc_fail(s, JC_DUPLICATE_KEY, i);
		}
	}
	i = skip_ws(s, i);
	if (i == s->len)
		return jc_fail(s, JC_EOF_OBJECT, s->len);
	if (p[i] != ':')
		return jc_fail(s, JC_EXPECTED_COLON, i + 1);
	i++;
	goto value;

after_value:
	i = skip_ws(s, i);
	if (st.depth == 0) {
		if (i < s->len)
			return jc_fail(s, JC_TRAILING_CHARACTERS, i + 1);
		return true;
	}
	if (!top_is_object(&st)) {
		if (i == s->len)
			return jc_fail(s, JC_EOF_LIST, s->len);
		if (p[i] == ']') {
			i++;
			st.depth--;
			goto after_value;
		}
		if (p[i] != ',')
			return jc_fail(s, JC_EXPECTED_LIST_COMMA_OR_END, i + 1);
		i = skip_ws(s, i + 1);
		if (i == s->len)
			return jc_fail(s, JC_EOF_VALUE, s->len);
		if (p[i] == ']')
			return jc_fail(s, JC_TRAILING_COMMA, i + 1);
		goto value;
	}
	if (i == s->len)
		return jc_fail(s, JC_EOF_OBJECT, s->len);
	if (p[i] == '}') {
		i++;
		st.depth--;
		if (s->keys)
			keys_close(s->keys, st.serial[st.depth]);
		goto after_value;
	}
	if (p[i] != ',')
		return jc_fail(s, JC_EXPECTED_OBJECT_COMMA_OR_END, i + 1);
	i = skip_ws(s, i + 1);
	if (i == s->len)
		return jc_fail(s, JC_EOF_VALUE, s->len);
	if (p[i] == '"')
		goto key;
	if (p[i] == '}')
		return jc_fail(s, JC_TRAILING_COMMA, i + 1);
	return jc_fail(s, JC_KEY_MUST_BE_STRING, i + 1);
}

static int validate(struct jc *s, unsigned max_depth, char *err, size_t errsz, size_t *ret_len)
{
	size_t line = 1, line_start = 0;

	if (max_depth > JSON_CHECK_DEPTH_MAX)
		max_depth = JSON_CHECK_DEPTH_MAX;
	if (scan(s, max_depth))
		return 0;
	if (s->code == JC_OUT_OF_MEMORY)
		return -ENOMEM;

	for (size_t k = 0; k < s->at; k++) {
		if (s->p[k] == '\n') {
			line++;
			line_start = k + 1;
		}
	}
	if (!errsz)
		return -EBADMSG;
	if (s->code == JC_DUPLICATE_KEY) {
		/* The key as decoded; cut (never mid-character) where err is too short. */
		char pos[64];
		size_t n, o, room;

		snprintf(pos, sizeof(pos), "` at line %zu column %zu", line, s->at - line_start);
		o = (size_t)snprintf(err, errsz, "%s `", jc_text[s->code]);
		if (o >= errsz || !keys_scratch(s->keys, s->dup_end - s->dup_start))
			return -EBADMSG;
		n = decode_string(s->p, s->dup_start, s->dup_end, s->keys->scratch);
		room = errsz - o - 1 > strlen(pos) ? errsz - o - 1 - strlen(pos) : 0;
		if (n > room) {
			n = room;
			while (n && (s->keys->scratch[n] & 0xC0) == 0x80)
				n--;
		}
		memcpy(err + o, s->keys->scratch, n);
		o += n;
		o += (size_t)snprintf(err + o, errsz - o, "%s", pos);
		if (ret_len)
			*ret_len = o < errsz ? o : errsz - 1;
		return -EBADMSG;
	}
	snprintf(err, errsz, "%s at line %zu column %zu", jc_text[s->code], line,
		 s->at - line_start);
	if (ret_len)
		*ret_len = strlen(err);
	return -EBADMSG;
}

int jcheck_validate(const char *buf, size_t len, unsigned max_depth, char *err, size_t errsz)
{
	struct jc s = {.p = (const uint8_t *)buf, .len = len};

	return validate(&s, max_depth, err, errsz, NULL);
}

int jcheck_validate_message(const char *buf, size_t len, unsigned max_depth, char *err,
			    size_t errsz, size_t *ret_len)
{
	static uint64_t seed;
	struct jc_keys keys = {0};
	struct jc s = {.p = (const uint8_t *)buf, .len = len, .lax_numbers = true, .keys = &keys};
	int r;

	/* A per-process seed: chains cannot be stuffed with keys chosen offline. */
	if (!seed && getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != sizeof(seed))
		seed = (uint64_t)(uintptr_t)&seed ^ UINT64_C(0x9e3779b97f4a7c15);
	keys.seed = seed;
	if (ret_len)
		*ret_len = 0;
	r = validate(&s, max_depth, err, errsz, ret_len);
	keys_free(&keys);
	return r;
}
