/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "strmap.h"

struct strmap_entry {
	struct strmap_entry *next;
	uint64_t hash;
	void *value;
	size_t len;
	char key[];
};

static uint64_t hash_bytes(const char *p, size_t n)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)p[i];
		h *= 1099511628211ULL;
	}
	return h;
}

static struct strmap_entry **find(const struct strmap *m, const char *key, size_t len, uint64_t h)
{
	struct strmap_entry **e;

	if (!m->n_buckets)
		return NULL;
	for (e = &m->buckets[h & (m->n_buckets - 1)]; *e; e = &(*e)->next)
		if ((*e)->hash == h && (*e)->len == len && memcmp((*e)->key, key, len) == 0)
			return e;
	return NULL;
}

void *strmap_get(const struct strmap *m, const char *key, size_t len)
{
	struct strmap_entry **e = find(m, key, len, hash_bytes(key, len));

	return e ? (*e)->value : NULL;
}

static int grow(struct strmap *m)
{
	size_t n = m->n_buckets ? m->n_buckets * 2 : 16;
	struct strmap_entry **b = calloc(n, sizeof(*b));

	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < m->n_buckets; i++) {
		struct strmap_entry *e = m->buckets[i], *next;

		for (; e; e = next) {
			next = e->next;
			e->next = b[e->hash & (n - 1)];
			b[e->hash & (n - 1)] = e;
		}
	}
	free(m->buckets);
	m->buckets = b;
	m->n_buckets = n;
	return 0;
}

int strmap_put(struct strmap *m, const char *key, size_t len, void *value)
{
	uint64_t h = hash_bytes(key, len);
	struct strmap_entry *e, **slot;

	if (find(m, key, len, h))
		return -EEXIST;
	if (m->size >= m->n_buckets && grow(m) < 0)
		return -ENOMEM;
	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return -ENOMEM;
	e->hash = h;
	e->value = value;
	e->len = len;
	memcpy(e->key, key, len);
	e->key[len] = 0;
	slot = &m->buckets[h & (m->n_buckets - 1)];
	e->next = *slot;
	*slot = e;
	m->size++;
	return 0;
}

void *strmap_remove(struct strmap *m, const char *key, size_t len)
{
	struct strmap_entry **slot = find(m, key, len, hash_bytes(key, len)), *e;
	void *v;

	if (!slot)
		return NULL;
	e = *slot;
	*slot = e->next;
	v = e->value;
	free(e);
	m->size--;
	return v;
}

void strmap_foreach(const struct strmap *m, void (*fn)(void *value, void *ctx), void *ctx)
{
	for (size_t i = 0; i < m->n_buckets; i++)
		for (struct strmap_entry *e = m->buckets[i]; e; e = e->next)
			fn(e->value, ctx);
}

void strmap_done(struct strmap *m)
{
	for (size_t i = 0; i < m->n_buckets; i++) {
		struct strmap_entry *e = m->buckets[i], *next;

		for (; e; e = next) {
			next = e->next;
			free(e);
		}
	}
	free(m->buckets);
	m->buckets = NULL;
	m->n_buckets = m->size = 0;
}
