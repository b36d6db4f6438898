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
 *
 * This file holds the structure (arrays, objects, nesting), the error texts
 * and positions; json-check-token.c the strings, numbers and literals;
 * json-check-keys.c the duplicate-key check.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "json-check-internal.h"
#include "json-check.h"

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

/* A value that is not an array or object, at p[*i]: a string, a literal or a number. */
static bool scan_scalar(struct jc *s, size_t *i)
{
	switch (s->p[*i]) {
	case '"':
		(*i)++;
		return jcheck_scan_string(s, i);
	case 't':
		return jcheck_scan_ident(s, i, "rue");
	case 'f':
		return jcheck_scan_ident(s, i, "alse");
	case 'n':
		return jcheck_scan_ident(s, i, "ull");
	case '-':
	case '0' ... '9':
		return jcheck_scan_number(s, i);
	default:
		return jc_fail(s, JC_EXPECTED_VALUE, *i + 1);
	}
}

/* Opens an array or object at p[i] (its bracket): the nesting limit, the stack pushed. */
static bool push(struct jc *s, struct jc_stack *st, size_t i, unsigned max_depth)
{
	unsigned b = st->depth;

	/* serde_json: --remaining_depth == 0 fails, at the bracket. */
	if (st->depth + 1 >= max_depth)
		return jc_fail(s, JC_RECURSION_LIMIT, i + 1);
	if (s->p[i] == '{') {
		st->obj[b / 64] |= UINT64_C(1) << (b % 64);
		st->serial[b] = ++st->n_objects;
	} else
		st->obj[b / 64] &= ~(UINT64_C(1) << (b % 64));
	st->depth++;
	return true;
}

/* Message mode: the key p[start..end) of the innermost object, refused if repeated. */
static bool record_key(struct jc *s, const struct jc_stack *st, size_t start, size_t end)
{
	int r = jcheck_keys_add(s->keys, s->p, start, end, st->serial[st->depth - 1]);

	if (r < 0)
		return jc_fail(s, JC_OUT_OF_MEMORY, end + 1);
	if (r > 0) {
		s->dup_start = start;
		s->dup_end = end;
		return jc_fail(s, JC_DUPLICATE_KEY, end + 1);
	}
	return true;
}

/*
 * The structure, as serde_json reads it: three states (a value expected, a
 * key expected, a value just ended) that jump to each other with goto,
 * over one index and one stack of open containers. It stays one function
 * on purpose: split into functions, each state would hand the index and
 * the stack back and forth, and the error position of every branch
 * (serde_json's, byte for byte) would be harder to check against the
 * states than it is here; the tokens and the stack's push are helpers.
 * No recursion: nesting costs a bit and a serial per level (jc_stack).
 */
static bool scan(struct jc *s, unsigned max_depth)
{
	const uint8_t *p = s->p;
	struct jc_stack st;
	size_t i = 0, kstart;
	bool obj;

	st.depth = 0;
	st.n_objects = 0;

value:
	i = skip_ws(s, i);
	if (i == s->len)
		return jc_fail(s, JC_EOF_VALUE, s->len);
	if (p[i] == '[' || p[i] == '{') {
		obj = p[i] == '{';
		if (!push(s, &st, i, max_depth))
			return false;
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
	if (!scan_scalar(s, &i))
		return false;
	goto after_value;

key:
	/* p[i] is the key's opening quote. */
	kstart = ++i;
	if (!jcheck_scan_string(s, &i))
		return false;
	if (s->keys && !record_key(s, &st, kstart, i - 1))
		return false;
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
	obj = top_is_object(&st);
	if (i == s->len)
		return jc_fail(s, obj ? JC_EOF_OBJECT : JC_EOF_LIST, s->len);
	if (p[i] == (obj ? '}' : ']')) {
		i++;
		st.depth--;
		if (obj && s->keys)
			jcheck_keys_close(s->keys, st.serial[st.depth]);
		goto after_value;
	}
	if (p[i] != ',')
		return jc_fail(s, obj ? JC_EXPECTED_OBJECT_COMMA_OR_END : JC_EXPECTED_LIST_COMMA_OR_END,
			       i + 1);
	i = skip_ws(s, i + 1);
	if (i == s->len)
		return jc_fail(s, JC_EOF_VALUE, s->len);
	if (p[i] == (obj ? '}' : ']'))
		return jc_fail(s, JC_TRAILING_COMMA, i + 1);
	if (!obj)
		goto value;
	if (p[i] == '"')
		goto key;
	return jc_fail(s, JC_KEY_MUST_BE_STRING, i + 1);
}

/*
 * The duplicate key's message: the key as decoded; cut (never
 * mid-character) where err is too short. Returns the length written.
 */
static size_t dup_key_message(struct jc *s, size_t line, size_t column, char *err, size_t errsz)
{
	char pos[64];
	size_t n, o, room;

	snprintf(pos, sizeof(pos), "` at line %zu column %zu", line, column);
	o = (size_t)snprintf(err, errsz, "%s `", jc_text[s->code]);
	if (o >= errsz || !jcheck_keys_scratch(s->keys, s->dup_end - s->dup_start))
		return SIZE_MAX;
	n = jcheck_decode_string(s->p, s->dup_start, s->dup_end, s->keys->scratch);
	room = errsz - o - 1 > strlen(pos) ? errsz - o - 1 - strlen(pos) : 0;
	if (n > room) {
		n = room;
		while (n && (s->keys->scratch[n] & 0xC0) == 0x80)
			n--;
	}
	memcpy(err + o, s->keys->scratch, n);
	o += n;
	o += (size_t)snprintf(err + o, errsz - o, "%s", pos);
	return o < errsz ? o : errsz - 1;
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
		size_t n = dup_key_message(s, line, s->at - line_start, err, errsz);

		if (n != SIZE_MAX && ret_len)
			*ret_len = n;
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
	jcheck_keys_free(&keys);
	return r;
}
