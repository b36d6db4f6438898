/* SPDX-License-Identifier: MIT */
/*
 * Placeholders drawn from a provider's pattern alone (cred-internal.h): the
 * command learns nothing of the real value but the pattern it matches, as
 * the reference draws them ("independently"). A walk of the same Rust regex
 * subset cred-match.c compiles: alternatives picked at random, repetitions a
 * random count (open ones at most 8 beyond their minimum), classes a random
 * printable member; the result is then checked against the compiled pattern
 * by the caller, since anchors and the like are only approximated here.
 * Random numbers are libsodium's.
 */
#include <ctype.h>
#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "cred-internal.h"

#define GEN_OPEN_EXTRA 8 /* `*`, `+`, `{n,}`: at most this many beyond the minimum */
#define GEN_DEPTH 32

struct gen {
	char *out;
	size_t len, cap;
	int depth;
};

static int gen_range(struct gen *g, const char *s, const char *e);

static int put(struct gen *g, char c)
{
	if (g->len + 1 >= g->cap)
		return -E2BIG;
	g->out[g->len++] = c;
	g->out[g->len] = 0;
	return 0;
}

/* The end of the atom at s (before e): a group, a class, an escape or one character. */
static const char *atom_end(const char *s, const char *e)
{
	if (*s == '\\')
		return s + 1 < e ? s + 2 : e;
	if (*s == '[') {
		const char *p = s + 1;

		if (p < e && *p == '^')
			p++;
		if (p < e && *p == ']')
			p++;
		while (p < e && *p != ']') {
			if (*p == '[' && p + 1 < e && p[1] == ':') {
				const char *c = strstr(p, ":]");

				p = c && c < e ? c + 2 : e;
			} else {
				p += *p == '\\' && p + 1 < e ? 2 : 1;
			}
		}
		return p < e ? p + 1 : e;
	}
	if (*s == '(') {
		const char *p = s;
		int depth = 0;

		while (p < e) {
			if (*p == '\\' || *p == '[') {
				p = atom_end(p, e);
				continue;
			}
			if (*p == '(')
				depth++;
			else if (*p == ')' && --depth == 0)
				return p + 1;
			p++;
		}
		return e;
	}
	return s + 1;
}

static void class_add(bool set[128], int lo, int hi)
{
	for (int c = lo; c <= hi && c < 128; c++)
		if (c >= 0x20 && c < 0x7f)
			set[c] = true;
}

static void class_named(bool set[128], const char *name, size_t n)
{
	static const struct {
		const char *name;
		int (*is)(int);
	} names[] = {
		{"alnum", isalnum}, {"alpha", isalpha},	  {"digit", isdigit}, {"lower", islower},
		{"upper", isupper}, {"xdigit", isxdigit}, {"punct", ispunct}, {"space", isspace},
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i].name) == n && !memcmp(names[i].name, name, n))
			for (int c = 0x20; c < 0x7f; c++)
				if (names[i].is(c))
					set[c] = true;
}

/* \d \w \s (and upper-case complements) into set. Returns false for another letter. */
static bool class_escape(bool set[128], char c)
{
	bool tmp[128] = {false};
	bool neg = isupper((unsigned char)c);

	switch (tolower((unsigned char)c)) {
	case 'd':
		class_add(tmp, '0', '9');
		break;
	case 'w':
		class_add(tmp, '0', '9');
		class_add(tmp, 'A', 'Z');
		class_add(tmp, 'a', 'z');
		tmp['_'] = true;
		break;
	case 's':
		tmp[' '] = true;
		break;
	default:
		return false;
	}
	for (int i = 0x20; i < 0x7f; i++)
		if (tmp[i] != neg)
			set[i] = true;
	return true;
}

static int pick(struct gen *g, const bool set[128])
{
	int n = 0, k;

	for (int c = 0; c < 128; c++)
		n += set[c];
	if (!n)
		return -EINVAL;
	k = (int)randombytes_uniform((uint32_t)n);
	for (int c = 0; c < 128; c++)
		if (set[c] && k-- == 0)
			return put(g, (char)c);
	return -EINVAL;
}

static int gen_class(struct gen *g, const char *s, const char *e)
{
	bool set[128] = {false}, neg = false;
	const char *p = s + 1, *end = e - 1; /* inside the brackets */

	if (p < end && *p == '^') {
		neg = true;
		p++;
	}
	while (p < end) {
		int lo;

		if (*p == '[' && p + 1 < end && p[1] == ':') {
			const char *c = strstr(p, ":]");

			if (!c || c >= end)
				return -EINVAL;
			class_named(set, p + 2, (size_t)(c - p - 2));
			p = c + 2;
			continue;
		}
		if (*p == '\\' && p + 1 < end) {
			if (class_escape(set, p[1])) {
				p += 2;
				continue;
			}
			lo = (unsigned char)p[1];
			p += 2;
		} else {
			lo = (unsigned char)*p++;
		}
		if (p + 1 < end && *p == '-') {
			int hi = (unsigned char)p[1];

			if (p[1] == '\\' && p + 2 < end) {
				hi = (unsigned char)p[2];
				p++;
			}
			p += 2;
			class_add(set, lo, hi);
		} else {
			class_add(set, lo, lo);
		}
	}
	if (neg)
		for (int c = 0x20; c < 0x7f; c++)
			set[c] = !set[c];
	return pick(g, set);
}

static int gen_atom(struct gen *g, const char *s, const char *e)
{
	bool set[128] = {false};

	switch (*s) {
	case '(':
		return gen_range(g, s + 1, e - 1);
	case '[':
		return gen_class(g, s, e);
	case '.':
		class_add(set, '0', '9');
		class_add(set, 'a', 'z');
		class_add(set, 'A', 'Z');
		return pick(g, set);
	case '^':
	case '$':
		return 0;
	case '\\':
		if (s + 1 >= e)
			return -EINVAL;
		if (class_escape(set, s[1]))
			return pick(g, set);
		if (strchr("bBAz", s[1]))
			return 0; /* assertions: nothing to draw */
		if (ispunct((unsigned char)s[1]))
			return put(g, s[1]);
		return -EINVAL;
	default:
		return put(g, *s);
	}
}

/* A quantifier at *p (moved past it): the repetition count range. */
static void quantifier(const char **p, const char *e, unsigned *min, unsigned *max)
{
	*min = *max = 1;
	if (*p >= e)
		return;
	if (**p == '*' || **p == '+' || **p == '?') {
		*min = **p == '+';
		*max = **p == '?' ? 1 : *min + GEN_OPEN_EXTRA;
		(*p)++;
	} else if (**p == '{' && *p + 1 < e && isdigit((unsigned char)(*p)[1])) {
		char *end;
		unsigned long n = strtoul(*p + 1, &end, 10), m = n;

		if (*end == ',') {
			m = isdigit((unsigned char)end[1]) ? strtoul(end + 1, &end, 10)
							   : n + GEN_OPEN_EXTRA;
			if (*end == ',')
				end++;
		}
		if (*end == '}' && end < e) {
			*min = (unsigned)n;
			*max = (unsigned)(m < n ? n : m);
			*p = end + 1;
		}
	}
}

static int gen_seq(struct gen *g, const char *s, const char *e)
{
	for (const char *p = s; p < e;) {
		const char *ae = atom_end(p, e), *q = ae;
		unsigned min, max, reps;
		int r;

		quantifier(&q, e, &min, &max);
		reps = min + randombytes_uniform(max - min + 1);
		for (unsigned i = 0; i < reps; i++)
			if ((r = gen_atom(g, p, ae)) < 0)
				return r;
		p = q;
	}
	return 0;
}

/* One of the alternatives of [s, e) at this level, at random. */
static int gen_range(struct gen *g, const char *s, const char *e)
{
	const char *alt[64];
	size_t n = 0;
	int r;

	if (++g->depth > GEN_DEPTH)
		return -EINVAL;
	alt[n++] = s;
	for (const char *p = s; p < e;) {
		if (*p == '|') {
			if (n == sizeof(alt) / sizeof(alt[0]))
				return -EINVAL;
			alt[n++] = p + 1;
			p++;
			continue;
		}
		p = atom_end(p, e);
	}
	{
		size_t k = randombytes_uniform((uint32_t)n);
		const char *end = k + 1 < n ? alt[k + 1] - 1 : e;

		r = gen_seq(g, alt[k], end);
	}
	g->depth--;
	return r;
}

int netproxy_cred_generate(const char *pattern, char *out, size_t cap)
{
	struct gen g = {.out = out, .cap = cap};

	if (cap == 0)
		return -E2BIG;
	out[0] = 0;
	if (!strncmp(pattern, "(?i)", 4))
		pattern += 4;
	return gen_range(&g, pattern, pattern + strlen(pattern));
}
