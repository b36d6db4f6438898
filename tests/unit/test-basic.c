/* SPDX-License-Identifier: MIT */
/*
 * base/: the byte-string map (keys with NUL bytes, duplicates refused,
 * removal, growth past many doublings, iteration) and the growable buffer
 * (append, consume from the front, reserve's overflow refusal, done).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "strmap.h"
#include "tests.h"

/* Keys that differ only past a NUL, by length, or by one byte: all distinct. */
static const struct {
	const char *key;
	size_t len;
} keys[] = {
	{ "", 0 }, { "a", 1 }, { "a\0", 2 }, { "a\0b", 3 }, { "a\0c", 3 }, { "ab", 2 }, { "ba", 2 },
	{ "abc", 3 },
};

#define N_KEYS (sizeof(keys) / sizeof(keys[0]))

TEST(strmap_distinct_keys_and_duplicates)
{
	struct strmap m = { 0 };
	int values[N_KEYS];

	ASSERT_TRUE(strmap_get(&m, "a", 1) == NULL); /* empty: no buckets yet */
	for (size_t i = 0; i < N_KEYS; i++)
		ASSERT_EQ(0, strmap_put(&m, keys[i].key, keys[i].len, &values[i]));
	ASSERT_EQ(N_KEYS, m.size);
	for (size_t i = 0; i < N_KEYS; i++) {
		ASSERT_TRUE(strmap_get(&m, keys[i].key, keys[i].len) == &values[i]);
		/* a second put of the same key is refused and keeps the first value */
		ASSERT_EQ(-EEXIST, strmap_put(&m, keys[i].key, keys[i].len, &values[0]));
		ASSERT_TRUE(strmap_get(&m, keys[i].key, keys[i].len) == &values[i]);
	}
	ASSERT_EQ(N_KEYS, m.size);
	ASSERT_TRUE(strmap_get(&m, "a\0d", 3) == NULL);
	ASSERT_TRUE(strmap_get(&m, "abcd", 3) == &values[7]); /* only len bytes count */
	strmap_done(&m);
	ASSERT_EQ(0, m.size);
	ASSERT_TRUE(m.buckets == NULL);
}

TEST(strmap_remove)
{
	struct strmap m = { 0 };
	int a, b;

	ASSERT_TRUE(strmap_remove(&m, "x", 1) == NULL);
	ASSERT_EQ(0, strmap_put(&m, "x", 1, &a));
	ASSERT_EQ(0, strmap_put(&m, "y", 1, &b));
	ASSERT_TRUE(strmap_remove(&m, "x", 1) == &a);
	ASSERT_EQ(1, m.size);
	ASSERT_TRUE(strmap_get(&m, "x", 1) == NULL);
	ASSERT_TRUE(strmap_remove(&m, "x", 1) == NULL);
	ASSERT_TRUE(strmap_get(&m, "y", 1) == &b);
	/* a removed key can be put again */
	ASSERT_EQ(0, strmap_put(&m, "x", 1, &b));
	ASSERT_TRUE(strmap_get(&m, "x", 1) == &b);
	strmap_done(&m);
}

static void count(void *value, void *ctx)
{
	size_t *seen = ctx;

	seen[*(int *)value]++;
}

TEST(strmap_grows_and_iterates_each_entry_once)
{
	enum { N = 5000 };
	static int values[N];
	static size_t seen[N];
	struct strmap m = { 0 };
	char key[32];

	for (int i = 0; i < N; i++) {
		values[i] = i;
		ASSERT_EQ(0, strmap_put(&m, key, (size_t)snprintf(key, sizeof(key), "k%d", i),
					&values[i]));
	}
	ASSERT_EQ(N, m.size);
	ASSERT_TRUE(m.n_buckets >= N); /* grown, a power of two */
	ASSERT_EQ(0, m.n_buckets & (m.n_buckets - 1));
	for (int i = 0; i < N; i++)
		ASSERT_TRUE(strmap_get(&m, key, (size_t)snprintf(key, sizeof(key), "k%d", i)) ==
			    &values[i]);
	memset(seen, 0, sizeof(seen));
	strmap_foreach(&m, count, seen);
	for (int i = 0; i < N; i++)
		ASSERT_EQ(1, seen[i]);
	for (int i = 0; i < N; i += 2)
		ASSERT_TRUE(strmap_remove(&m, key, (size_t)snprintf(key, sizeof(key), "k%d", i)) ==
			    &values[i]);
	ASSERT_EQ(N / 2, m.size);
	memset(seen, 0, sizeof(seen));
	strmap_foreach(&m, count, seen);
	for (int i = 0; i < N; i++)
		ASSERT_EQ(i % 2, seen[i]);
	strmap_done(&m);
}

TEST(buf_append_and_consume)
{
	struct buf b = { 0 };

	ASSERT_EQ(0, buf_append(&b, "", 0)); /* nothing: no storage either */
	ASSERT_TRUE(b.data == NULL);
	ASSERT_EQ(0, buf_append(&b, "hello ", 6));
	ASSERT_EQ(0, buf_append(&b, "world", 5));
	ASSERT_EQ(11, b.len);
	ASSERT_TRUE(b.cap >= b.len);
	ASSERT_MEMEQ("hello world", b.data, 11);
	buf_consume(&b, 6);
	ASSERT_EQ(5, b.len);
	ASSERT_MEMEQ("world", b.data, 5);
	buf_consume(&b, 0);
	ASSERT_MEMEQ("world", b.data, 5);
	buf_consume(&b, 99); /* more than held: empties it */
	ASSERT_EQ(0, b.len);
	ASSERT_EQ(0, buf_append(&b, "x", 1));
	ASSERT_MEMEQ("x", b.data, 1);
	buf_done(&b);
	ASSERT_TRUE(b.data == NULL);
	ASSERT_EQ(0, b.len);
	ASSERT_EQ(0, b.cap);
}

TEST(buf_grows_keeping_content)
{
	struct buf b = { 0 };
	uint8_t chunk[1000];
	size_t cap;

	for (int i = 0; i < 100; i++) {
		memset(chunk, i, sizeof(chunk));
		ASSERT_EQ(0, buf_append(&b, chunk, sizeof(chunk)));
	}
	ASSERT_EQ(100000, b.len);
	for (int i = 0; i < 100; i++)
		for (size_t j = 0; j < sizeof(chunk); j++)
			ASSERT_EQ(i, b.data[(size_t)i * sizeof(chunk) + j]);
	/* reserve within capacity does not move the data */
	cap = b.cap;
	ASSERT_EQ(0, buf_reserve(&b, cap - b.len));
	ASSERT_EQ(cap, b.cap);
	buf_done(&b);
}

TEST(buf_reserve_refuses_overflow)
{
	struct buf b = { 0 };

	ASSERT_EQ(0, buf_append(&b, "abc", 3));
	ASSERT_EQ(-ENOMEM, buf_reserve(&b, SIZE_MAX - 2)); /* len + extra would wrap */
	ASSERT_EQ(-ENOMEM, buf_reserve(&b, SIZE_MAX));
	ASSERT_EQ(3, b.len); /* unchanged */
	ASSERT_MEMEQ("abc", b.data, 3);
	buf_done(&b);
}

TEST_MAIN()
