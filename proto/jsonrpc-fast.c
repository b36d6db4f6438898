/* SPDX-License-Identifier: MIT */
/*
 * The hot path's strict request decoder (see jsonrpc-fast.h). Every branch
 * that meets something outside the subset returns false: the general path
 * then reads the message, errors and all.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "jsonrpc-fast.h"

struct jf {
	const char *p;
	size_t len, i;
};

static void skip_ws(struct jf *s)
{
	while (s->i < s->len &&
	       (s->p[s->i] == ' ' || s->p[s->i] == '\n' || s->p[s->i] == '\t' || s->p[s->i] == '\r'))
		s->i++;
}

/* Expects byte c after whitespace. */
static bool expect(struct jf *s, char c)
{
	skip_ws(s);
	if (s->i == s->len || s->p[s->i] != c)
		return false;
	s->i++;
	return true;
}

/*
 * A string of printable ASCII without escapes; s->i at the opening quote.
 * *ret, *ret_n: the bytes between the quotes.
 */
static bool string(struct jf *s, const char **ret, size_t *ret_n)
{
	size_t start;

	if (s->i == s->len || s->p[s->i] != '"')
		return false;
	start = ++s->i;
	for (; s->i < s->len; s->i++) {
		unsigned char c = (unsigned char)s->p[s->i];

		if (c == '"') {
			*ret = s->p + start;
			*ret_n = s->i - start;
			s->i++;
			return true;
		}
		if (c < 0x20 || c > 0x7e || c == '\\')
			return false;
	}
	return false;
}

/*
 * An integer of at most JRPC_FAST_MAX_DIGITS digits, optionally negative, with
 * no fraction or exponent; s->i at its first byte.
 */
static bool integer(struct jf *s, bool allow_neg, bool *ret_neg, uint64_t *ret)
{
	size_t start;
	uint64_t v = 0;
	bool neg = false;

	if (allow_neg && s->i < s->len && s->p[s->i] == '-') {
		neg = true;
		s->i++;
	}
	start = s->i;
	while (s->i < s->len && s->p[s->i] >= '0' && s->p[s->i] <= '9') {
		v = v * 10 + (uint64_t)(s->p[s->i] - '0');
		s->i++;
		if (s->i - start > JRPC_FAST_MAX_DIGITS)
			return false;
	}
	if (s->i == start)
		return false;
	/* A leading zero (invalid JSON, or -0 which jansson reads as 0): not sure. */
	if (s->p[start] == '0' && (s->i - start > 1 || neg))
		return false;
	/* A fraction or exponent follows: a float, not this subset. */
	if (s->i < s->len && (s->p[s->i] == '.' || s->p[s->i] == 'e' || s->p[s->i] == 'E'))
		return false;
	*ret_neg = neg;
	*ret = v;
	return true;
}

/* A literal: true, false, null. */
static bool literal(struct jf *s, const char *word)
{
	size_t n = strlen(word);

	if (s->len - s->i < n || memcmp(s->p + s->i, word, n) != 0)
		return false;
	s->i += n;
	return true;
}

/* A params value (a scalar of the subset). */
static bool value(struct jf *s, struct jrpc_fast_value *v)
{
	bool neg;

	skip_ws(s);
	if (s->i == s->len)
		return false;
	switch (s->p[s->i]) {
	case '"':
		v->type = JRPC_FAST_STRING;
		return string(s, &v->s, &v->n);
	case 'n':
		v->type = JRPC_FAST_NULL;
		return literal(s, "null");
	case 't':
		v->type = JRPC_FAST_TRUE;
		return literal(s, "true");
	case 'f':
		v->type = JRPC_FAST_FALSE;
		return literal(s, "false");
	default:
		v->type = JRPC_FAST_UINT;
		return integer(s, false, &neg, &v->u);
	}
}

static bool key_is(const char *k, size_t n, const char *name)
{
	return strlen(name) == n && memcmp(k, name, n) == 0;
}

/* The params object; s->i at its '{'. Keys repeated: not sure. */
static bool params(struct jf *s, struct jrpc_fast_req *r)
{
	s->i++;
	skip_ws(s);
	if (s->i < s->len && s->p[s->i] == '}') {
		s->i++;
		return true;
	}
	for (;;) {
		struct jrpc_fast_member *m;

		if (r->n_params == JRPC_FAST_MAX_MEMBERS)
			return false;
		m = &r->params[r->n_params];
		skip_ws(s);
		if (!string(s, &m->key, &m->key_len) || !expect(s, ':') || !value(s, &m->v))
			return false;
		for (size_t k = 0; k < r->n_params; k++)
			if (r->params[k].key_len == m->key_len &&
			    memcmp(r->params[k].key, m->key, m->key_len) == 0)
				return false;
		r->n_params++;
		skip_ws(s);
		if (s->i == s->len)
			return false;
		if (s->p[s->i] == '}') {
			s->i++;
			return true;
		}
		if (s->p[s->i] != ',')
			return false;
		s->i++;
	}
}

/* The id; s->i at its first byte. */
static bool id(struct jf *s, struct jrpc_fast_req *r)
{
	size_t start = s->i;
	uint64_t v;
	bool neg;

	if (s->i < s->len && s->p[s->i] == '"') {
		if (!string(s, &r->id_str, &r->id_str_len))
			return false;
		r->id_is_string = true;
		r->id_json = s->p + start;
		r->id_json_len = s->i - start;
		return true;
	}
	if (!integer(s, true, &neg, &v))
		return false;
	r->id_int = neg ? -(int64_t)v : (int64_t)v;
	r->id_json_len = (size_t)snprintf(r->id_text, sizeof(r->id_text), "%" PRId64, r->id_int);
	r->id_json = r->id_text;
	return true;
}

enum { K_ID = 1, K_METHOD = 2, K_PARAMS = 4, K_JSONRPC = 8 };

bool jrpc_fast_parse(const char *buf, size_t len, unsigned max_depth, struct jrpc_fast_req *ret)
{
	struct jf s = { .p = buf, .len = len };
	unsigned seen = 0;

	/* The general path refuses the params object below depth 3 (json-check.c). */
	if (max_depth < 3)
		return false;
	memset(ret, 0, sizeof(*ret));
	if (!expect(&s, '{'))
		return false;
	for (;;) {
		const char *k, *ignored;
		size_t kn, in;
		unsigned bit;

		skip_ws(&s);
		if (!string(&s, &k, &kn) || !expect(&s, ':'))
			return false;
		bit = key_is(k, kn, "id") ? K_ID : key_is(k, kn, "method") ? K_METHOD
		    : key_is(k, kn, "params") ? K_PARAMS : key_is(k, kn, "jsonrpc") ? K_JSONRPC : 0;
		if (!bit || (seen & bit))
			return false;
		seen |= bit;
		skip_ws(&s);
		switch (bit) {
		case K_ID:
			if (!id(&s, ret))
				return false;
			break;
		case K_METHOD:
			if (!string(&s, &ret->method, &ret->method_len))
				return false;
			break;
		case K_PARAMS:
			if (s.i == s.len || s.p[s.i] != '{' || !params(&s, ret))
				return false;
			break;
		default:
			if (!string(&s, &ignored, &in))
				return false;
		}
		skip_ws(&s);
		if (s.i == s.len)
			return false;
		if (s.p[s.i] == '}')
			break;
		if (s.p[s.i] != ',')
			return false;
		s.i++;
	}
	s.i++;
	skip_ws(&s);
	/* Trailing bytes, or a message that is no request with params: not sure. */
	return s.i == s.len && (seen & (K_ID | K_METHOD | K_PARAMS)) == (K_ID | K_METHOD | K_PARAMS);
}

const struct jrpc_fast_value *jrpc_fast_param(const struct jrpc_fast_req *r, const char *name)
{
	for (size_t i = 0; i < r->n_params; i++)
		if (key_is(r->params[i].key, r->params[i].key_len, name))
			return &r->params[i].v;
	return NULL;
}

bool jrpc_fast_params_only(const struct jrpc_fast_req *r, const char *const *names)
{
	for (size_t i = 0; i < r->n_params; i++) {
		const char *const *n = names;

		while (*n && !key_is(r->params[i].key, r->params[i].key_len, *n))
			n++;
		if (!*n)
			return false;
	}
	return true;
}
