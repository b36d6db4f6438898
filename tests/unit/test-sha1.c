/* SPDX-License-Identifier: MIT */
/* proto/sha1.c: the FIPS 180 examples, and OpenSSL's SHA-1 over every length 0..300
 * (one, two and three blocks, each padding boundary) and a million bytes. */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests.h"
#include "sha1.h"

static void hex(const uint8_t *d, char out[2 * SHA1_BYTES + 1])
{
	for (int i = 0; i < SHA1_BYTES; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void check_vector(const char *msg, const char *want)
{
	uint8_t d[SHA1_BYTES];
	char got[2 * SHA1_BYTES + 1];

	sha1_digest(msg, strlen(msg), d);
	hex(d, got);
	ASSERT_STREQ(want, got);
}

TEST(fips_examples)
{
	check_vector("", "da39a3ee5e6b4b0d3255bfef95601890afd80709");
	check_vector("abc", "a9993e364706816aba3e25717850c26c9cd0d89d");
	check_vector("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		     "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
}

static void openssl_sha1(const void *p, size_t n, uint8_t out[SHA1_BYTES])
{
	unsigned len = 0;

	ASSERT_TRUE(EVP_Digest(p, n, out, &len, EVP_sha1(), NULL) == 1 && len == SHA1_BYTES);
}

TEST(every_length_like_openssl)
{
	uint8_t buf[300], a[SHA1_BYTES], b[SHA1_BYTES];

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 131 + 7);
	for (size_t n = 0; n <= sizeof(buf); n++) {
		sha1_digest(buf, n, a);
		openssl_sha1(buf, n, b);
		ASSERT_TRUE(memcmp(a, b, SHA1_BYTES) == 0);
	}
}

TEST(a_million_a)
{
	uint8_t d[SHA1_BYTES];
	char got[2 * SHA1_BYTES + 1];
	char *m = malloc(1000000);

	ASSERT_TRUE(m != NULL);
	memset(m, 'a', 1000000);
	sha1_digest(m, 1000000, d);
	free(m);
	hex(d, got);
	ASSERT_STREQ("34aa973cd4c4daa4f61eeb2bdbad27316534016f", got);
}

TEST_MAIN()
