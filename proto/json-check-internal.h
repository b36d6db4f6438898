/* SPDX-License-Identifier: MIT */
/*
 * What the files of the JSON check share (json-check.c: the structure
 * scanner, the error texts and positions, the API; json-check-token.c:
 * strings, numbers and literals; json-check-keys.c: the duplicate-key check
 * of the message mode).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* Records a failure at byte index at (capped at len). Returns false, for `return jc_fail(...)`. */
static inline bool jc_fail(struct jc *s, enum jc_code code, size_t at)
{
	s->code = code;
	s->at = at < s->len ? at : s->len;
	return false;
}

/*
 * json-check-token.c. Each returns true with *i just past the token, or
 * false with the failure recorded. A string: *i is just past the opening
 * quote. A number: *i is at the '-' or first digit. A literal: *i is at its
 * first letter, rest the letters that must follow ("rue" for true).
 */
bool jcheck_scan_string(struct jc *s, size_t *i);
bool jcheck_scan_number(struct jc *s, size_t *i);
bool jcheck_scan_ident(struct jc *s, size_t *i, const char *rest);

/*
 * json-check-keys.c. The keys of the open objects (message mode), kept in
 * insertion order and hashed into chains.
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

void jcheck_keys_free(struct jc_keys *k);
/* Makes room in k->scratch for a decoded key of up to n bytes, twice. Returns false on OOM. */
bool jcheck_keys_scratch(struct jc_keys *k, size_t n);
/*
 * Records the key p[start..end) of object `object`. Returns 1 if the object
 * already has that key, 0 if not, -1 on OOM.
 */
int jcheck_keys_add(struct jc_keys *k, const uint8_t *p, size_t start, size_t end, size_t object);
/* Drops the keys of the object that closes (the top of the stack). */
void jcheck_keys_close(struct jc_keys *k, size_t object);
/*
 * Decodes the validated string body p[start..end) into out (at least
 * end - start bytes: no escape decodes to more bytes than it takes).
 * Returns the decoded length.
 */
size_t jcheck_decode_string(const uint8_t *p, size_t start, size_t end, uint8_t *out);
