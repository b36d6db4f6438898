/* SPDX-License-Identifier: MIT */
/*
 * Hash map from byte-string keys (may contain NUL) to pointers. Keys are
 * copied; values are borrowed. Open hashing with chains; grows by doubling.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct strmap_entry;

struct strmap {
	struct strmap_entry **buckets;
	size_t n_buckets;
	size_t size;
};

/* Returns the value for key, or NULL. */
void *strmap_get(const struct strmap *m, const char *key, size_t len);
/* Inserts key -> value. Returns 0, -EEXIST if present (value unchanged), or -ENOMEM. */
int strmap_put(struct strmap *m, const char *key, size_t len, void *value);
/* Removes key; returns its value or NULL. */
void *strmap_remove(struct strmap *m, const char *key, size_t len);
/* Calls fn for each entry (fn must not modify the map). */
void strmap_foreach(const struct strmap *m, void (*fn)(void *value, void *ctx), void *ctx);
/* Frees the map's storage (not the values). */
void strmap_done(struct strmap *m);
