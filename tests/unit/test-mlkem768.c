/* SPDX-License-Identifier: MIT */
/*
 * src/remote/codec/mlkem768.c against known answers from an independent FIPS 203
 * implementation (tests/unit/mlkem768-vectors.txt, made by
 * mlkem768-vectors.mjs with @noble/post-quantum), plus random round trips and
 * implicit rejection.
 *
 * usage: test-mlkem768 VECTORS [TEST]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <sodium.h>

#include "mlkem768.h"
#include "tests.h"

static const char *vectors_path;

/* One fixture line split into fields; fields point into line. */
struct vline {
	char *field[10];
	size_t n;
};

static void unhex(uint8_t *out, size_t len, const char *hex)
{
	size_t got = 0;

	if (strlen(hex) != 2 * len ||
	    sodium_hex2bin(out, len, hex, strlen(hex), NULL, &got, NULL) != 0 || got != len)
		tests_fail(__FILE__, __LINE__, "bad hex field for %zu bytes: %.16s...", len, hex);
}

/* Calls fn for every line of the fixture whose first field is kind; returns the count. */
static size_t for_each(const char *kind, void (*fn)(struct vline *v))
{
	FILE *f = fopen(vectors_path, "re");
	char *buf = NULL;
	size_t cap = 0, count = 0;

	if (!f)
		tests_fail(__FILE__, __LINE__, "cannot open %s: %s", vectors_path, strerror(errno));
	while (getline(&buf, &cap, f) > 0) {
		struct vline v = {0};
		char *save = NULL;

		if (buf[0] == '#')
			continue;
		for (char *t = strtok_r(buf, " \n", &save); t && v.n < 10;
		     t = strtok_r(NULL, " \n", &save))
			v.field[v.n++] = t;
		if (v.n == 0 || strcmp(v.field[0], kind) != 0)
			continue;
		count++;
		fn(&v);
	}
	free(buf);
	fclose(f);
	return count;
}

/* expected: the bytes in full (2·len hex digits) or their SHA-256 (64). */
static bool matches(const char *expected, const uint8_t *got, size_t len)
{
	uint8_t want[MLKEM768_DK_BYTES], digest[crypto_hash_sha256_BYTES];

	if (strlen(expected) == 2 * len) {
		unhex(want, len, expected);
		return memcmp(want, got, len) == 0;
	}
	unhex(want, sizeof(digest), expected);
	crypto_hash_sha256(digest, got, len);
	return memcmp(want, digest, sizeof(digest)) == 0;
}

static void shake256_j(uint8_t out[32], const uint8_t z[32], const uint8_t *ct)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	ASSERT_TRUE(ctx);
	ASSERT_TRUE(EVP_DigestInit_ex(ctx, EVP_shake256(), NULL));
	ASSERT_TRUE(EVP_DigestUpdate(ctx, z, 32));
	ASSERT_TRUE(EVP_DigestUpdate(ctx, ct, MLKEM768_CT_BYTES));
	ASSERT_TRUE(EVP_DigestFinalXOF(ctx, out, 32));
	EVP_MD_CTX_free(ctx);
}

static size_t n_full;

static void check_kat(struct vline *v)
{
	uint8_t d[32], z[32], m[32], ek[MLKEM768_EK_BYTES], dk[MLKEM768_DK_BYTES];
	uint8_t ct[MLKEM768_CT_BYTES], want_ct[MLKEM768_CT_BYTES], ss[32], want_ss[32];

	ASSERT_EQ(8, v->n);
	unhex(d, 32, v->field[1]);
	unhex(z, 32, v->field[2]);
	unhex(m, 32, v->field[3]);
	unhex(want_ct, sizeof(want_ct), v->field[6]);
	unhex(want_ss, sizeof(want_ss), v->field[7]);
	if (strlen(v->field[4]) == 2 * MLKEM768_EK_BYTES &&
	    strlen(v->field[5]) == 2 * MLKEM768_DK_BYTES)
		n_full++;

	ASSERT_EQ(0, mlkem768_keypair_derand(ek, dk, d, z));
	ASSERT_TRUE(matches(v->field[4], ek, sizeof(ek)));
	ASSERT_TRUE(matches(v->field[5], dk, sizeof(dk)));
	ASSERT_EQ(0, mlkem768_encaps_derand(ct, ss, ek, m));
	ASSERT_MEMEQ(want_ct, ct, sizeof(ct));
	ASSERT_MEMEQ(want_ss, ss, sizeof(ss));
	memset(ss, 0, sizeof(ss));
	ASSERT_EQ(0, mlkem768_decaps(ss, ct, dk));
	ASSERT_MEMEQ(want_ss, ss, sizeof(ss));
}

TEST(kat)
{
	n_full = 0;
	ASSERT_TRUE(for_each("kat", check_kat) >= 12);
	ASSERT_TRUE(n_full >= 2);
}

static void check_reject(struct vline *v)
{
	uint8_t d[32], z[32], m[32], ek[MLKEM768_EK_BYTES], dk[MLKEM768_DK_BYTES];
	uint8_t ct[MLKEM768_CT_BYTES], ss[32], rej[32], want[32], j[32];
	unsigned long bit;

	ASSERT_EQ(6, v->n);
	unhex(d, 32, v->field[1]);
	unhex(z, 32, v->field[2]);
	unhex(m, 32, v->field[3]);
	bit = strtoul(v->field[4], NULL, 10);
	unhex(want, 32, v->field[5]);
	ASSERT_TRUE(bit < 8 * MLKEM768_CT_BYTES);

	ASSERT_EQ(0, mlkem768_keypair_derand(ek, dk, d, z));
	ASSERT_EQ(0, mlkem768_encaps_derand(ct, ss, ek, m));
	ct[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	ASSERT_EQ(0, mlkem768_decaps(rej, ct, dk));
	ASSERT_MEMEQ(want, rej, sizeof(rej));
	ASSERT_TRUE(memcmp(rej, ss, sizeof(ss)) != 0);
	shake256_j(j, z, ct); /* K̄ = J(z ‖ c) */
	ASSERT_MEMEQ(j, rej, sizeof(rej));
}

TEST(kat_implicit_rejection)
{
	ASSERT_TRUE(for_each("reject", check_reject) >= 4);
}

static void check_badek(struct vline *v)
{
	uint8_t ek[MLKEM768_EK_BYTES], ct[MLKEM768_CT_BYTES], ss[32], m[32] = {1};

	ASSERT_EQ(2, v->n);
	unhex(ek, sizeof(ek), v->field[1]);
	memset(ss, 0xaa, sizeof(ss));
	ASSERT_EQ(-EINVAL, mlkem768_encaps_derand(ct, ss, ek, m));
	ASSERT_TRUE(sodium_is_zero(ss, sizeof(ss)));
	ASSERT_EQ(-EINVAL, mlkem768_encaps(ct, ss, ek));
}

TEST(kat_invalid_ek)
{
	ASSERT_TRUE(for_each("badek", check_badek) >= 3);
}

static void check_baddk(struct vline *v)
{
	uint8_t d[32], z[32], ek[MLKEM768_EK_BYTES], dk[MLKEM768_DK_BYTES];
	uint8_t ct[MLKEM768_CT_BYTES], ss[32];
	unsigned long off;

	ASSERT_EQ(4, v->n);
	unhex(d, 32, v->field[1]);
	unhex(z, 32, v->field[2]);
	off = strtoul(v->field[3], NULL, 10);
	ASSERT_TRUE(off < MLKEM768_DK_BYTES);
	ASSERT_EQ(0, mlkem768_keypair_derand(ek, dk, d, z));
	ASSERT_EQ(0, mlkem768_encaps(ct, ss, ek));
	dk[off] ^= 0x01;
	memset(ss, 0xaa, sizeof(ss));
	ASSERT_EQ(-EINVAL, mlkem768_decaps(ss, ct, dk));
	ASSERT_TRUE(sodium_is_zero(ss, sizeof(ss)));
}

TEST(kat_invalid_dk)
{
	ASSERT_TRUE(for_each("baddk", check_baddk) >= 3);
}

/* The largest coefficient, q − 1, passes the modulus check; q does not. */
TEST(ek_modulus_boundary)
{
	uint8_t ek[MLKEM768_EK_BYTES], dk[MLKEM768_DK_BYTES], ct[MLKEM768_CT_BYTES], ss[32];

	ASSERT_EQ(0, mlkem768_keypair(ek, dk));
	/* coefficient 0 of t̂: ek[0] and the low nibble of ek[1] */
	ek[0] = 3328 & 0xff;
	ek[1] = (uint8_t)((ek[1] & 0xf0) | 3328 >> 8);
	ASSERT_EQ(0, mlkem768_encaps(ct, ss, ek));
	ek[0] = 3329 & 0xff;
	ek[1] = (uint8_t)((ek[1] & 0xf0) | 3329 >> 8);
	ASSERT_EQ(-EINVAL, mlkem768_encaps(ct, ss, ek));
	/* rho (the last 32 bytes) is not checked: any value is valid */
	memset(ek + MLKEM768_EK_BYTES - 32, 0xff, 32);
	ek[0] = 0;
	ASSERT_EQ(0, mlkem768_encaps(ct, ss, ek));
}

TEST(round_trip_random)
{
	for (int i = 0; i < 100; i++) {
		uint8_t ek[MLKEM768_EK_BYTES], dk[MLKEM768_DK_BYTES], ct[MLKEM768_CT_BYTES];
		uint8_t ss1[32], ss2[32], j[32];

		ASSERT_EQ(0, mlkem768_keypair(ek, dk));
		ASSERT_MEMEQ(ek, dk + 1152, MLKEM768_EK_BYTES);
		ASSERT_EQ(0, mlkem768_encaps(ct, ss1, ek));
		ASSERT_EQ(0, mlkem768_decaps(ss2, ct, dk));
		ASSERT_MEMEQ(ss1, ss2, sizeof(ss1));
		ASSERT_TRUE(!sodium_is_zero(ss1, sizeof(ss1)));
		/* a valid ciphertext is not rejected */
		shake256_j(j, dk + MLKEM768_DK_BYTES - 32, ct);
		ASSERT_TRUE(memcmp(j, ss2, sizeof(j)) != 0);
	}
}

/* A random ciphertext, or one for another key, decapsulates to J(z ‖ c). */
TEST(random_ciphertext_rejected)
{
	uint8_t ek[MLKEM768_EK_BYTES], dk[MLKEM768_DK_BYTES], ek2[MLKEM768_EK_BYTES];
	uint8_t dk2[MLKEM768_DK_BYTES], ct[MLKEM768_CT_BYTES], ss[32], got[32], j[32];
	const uint8_t *z = dk + MLKEM768_DK_BYTES - 32;

	ASSERT_EQ(0, mlkem768_keypair(ek, dk));
	ASSERT_EQ(0, mlkem768_encaps(ct, ss, ek));
	for (int i = 0; i < 20; i++) {
		uint8_t rnd[MLKEM768_CT_BYTES];

		randombytes_buf(rnd, sizeof(rnd));
		ASSERT_EQ(0, mlkem768_decaps(got, rnd, dk));
		shake256_j(j, z, rnd);
		ASSERT_MEMEQ(j, got, sizeof(got));
		ASSERT_TRUE(memcmp(ss, got, sizeof(ss)) != 0);
	}
	ASSERT_EQ(0, mlkem768_keypair(ek2, dk2));
	ASSERT_EQ(0, mlkem768_decaps(got, ct, dk2));
	shake256_j(j, dk2 + MLKEM768_DK_BYTES - 32, ct);
	ASSERT_MEMEQ(j, got, sizeof(got));
	ASSERT_TRUE(memcmp(ss, got, sizeof(ss)) != 0);
}

/* keypair_derand is a function of (d, z) only; z lands at the end of dk. */
TEST(derand_deterministic)
{
	uint8_t d[32], z[32], ek1[MLKEM768_EK_BYTES], dk1[MLKEM768_DK_BYTES];
	uint8_t ek2[MLKEM768_EK_BYTES], dk2[MLKEM768_DK_BYTES];

	randombytes_buf(d, sizeof(d));
	randombytes_buf(z, sizeof(z));
	ASSERT_EQ(0, mlkem768_keypair_derand(ek1, dk1, d, z));
	ASSERT_EQ(0, mlkem768_keypair_derand(ek2, dk2, d, z));
	ASSERT_MEMEQ(ek1, ek2, sizeof(ek1));
	ASSERT_MEMEQ(dk1, dk2, sizeof(dk1));
	ASSERT_MEMEQ(z, dk1 + MLKEM768_DK_BYTES - 32, 32);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		printf("Bail out! usage: %s VECTORS [TEST]\n", argv[0]);
		return 1;
	}
	if (sodium_init() < 0) {
		printf("Bail out! sodium_init failed\n");
		return 1;
	}
	vectors_path = argv[1];
	return tests_run(argc - 1, argv + 1);
}
