/* SPDX-License-Identifier: MIT */
/*
 * Duplicate keys (the JSON check's message mode, json-check-internal.h).
 * The reference reads a message with a map that refuses a repeated key,
 * streaming: the first repeat in text order fails, at its closing quote,
 * before any later syntax error. The keys of the open objects are kept in insertion order (a stack: an object's keys are on
 * top while it is open and are dropped when it closes) and hashed, decoded,
 * into chains, so the check is linear and its memory bounded by the keys of
 * the open objects, which the JSON tree holds anyway.
 */
#include <stdlib.h>
#include <string.h>

#include "hex.h"
#include "json-check-internal.h"

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

/* What a validated escape other than \u stands for. */
static const uint8_t unescaped[256] = {
	['"'] = '"', ['\\'] = '\\', ['/'] = '/', ['b'] = '\b',
	['f'] = '\f', ['n'] = '\n', ['r'] = '\r', ['t'] = '\t',
};

size_t jcheck_decode_string(const uint8_t *p, size_t start, size_t end, uint8_t *out)
{
	size_t o = 0;

	for (size_t i = start; i < end;) {
		unsigned cp;

		if (p[i] != '\\') {
			out[o++] = p[i++];
			continue;
		}
		i++;
		if (p[i] != 'u') {
			out[o++] = unescaped[p[i++]];
			continue;
		}
		cp = hex4_value(p + i + 1);
		i += 5;
		if (cp >= 0xD800 && cp <= 0xDBFF && i + 6 <= end && p[i] == '\\' && p[i + 1] == 'u') {
			unsigned lo = hex4_value(p + i + 2);

			if (lo >= 0xDC00 && lo <= 0xDFFF) {
				cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
				i += 6;
			}
		}
		o += put_utf8(out + o, cp);
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

void jcheck_keys_free(struct jc_keys *k)
{
	free(k->v);
	free(k->heads);
	free(k->scratch);
}

bool jcheck_keys_scratch(struct jc_keys *k, size_t n)
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

int jcheck_keys_add(struct jc_keys *k, const uint8_t *p, size_t start, size_t end, size_t object)
{
	size_t n, b;
	uint64_t h;

	if (!jcheck_keys_scratch(k, end - start))
		return -1;
	n = jcheck_decode_string(p, start, end, k->scratch);
	h = key_hash(k->seed, k->scratch, n);
	if (k->n_heads) {
		for (size_t e = k->heads[h & (k->n_heads - 1)]; e != SIZE_MAX; e = k->v[e].next) {
			const struct jc_key *o = &k->v[e];
			size_t on;

			if (o->object != object)
				break; /* older entries of the chain belong to enclosing objects */
			if (o->hash != h)
				continue;
			on = jcheck_decode_string(p, o->start, o->end, k->scratch + n);
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

void jcheck_keys_close(struct jc_keys *k, size_t object)
{
	while (k->n && k->v[k->n - 1].object == object) {
		struct jc_key *e = &k->v[--k->n];

		k->heads[e->hash & (k->n_heads - 1)] = e->next;
	}
}
