/* SPDX-License-Identifier: MIT */
/* Unit tests for proto/base64: RFC 4648 vectors, strictness and the Rust crate's error texts. */
#include <errno.h>
#include <stdlib.h>

#include "base64.h"
#include "tests.h"

static void check_encode(const char *in, const char *out)
{
	char buf[128];
	size_t n = base64_encode((const uint8_t *)in, strlen(in), buf);

	ASSERT_EQ(strlen(out), n);
	ASSERT_EQ(base64_encoded_len(strlen(in)), n);
	ASSERT_MEMEQ(out, buf, n);
}

static void check_decode_ok(const char *in, const void *out, size_t out_len)
{
	uint8_t buf[128];
	char err[128] = "";
	ssize_t n = base64_decode(in, strlen(in), buf, err, sizeof(err));

	ASSERT_STREQ("", err);
	ASSERT_EQ(out_len, n);
	ASSERT_TRUE((size_t)n <= base64_decoded_max(strlen(in)));
	ASSERT_MEMEQ(out, buf, out_len);
}

static void check_decode_err(const char *in, const char *msg)
{
	uint8_t buf[128];
	char err[128] = "";

	ASSERT_EQ(-EINVAL, base64_decode(in, strlen(in), buf, err, sizeof(err)));
	ASSERT_STREQ(msg, err);
}

TEST(rfc4648_encode)
{
	check_encode("", "");
	check_encode("f", "Zg==");
	check_encode("fo", "Zm8=");
	check_encode("foo", "Zm9v");
	check_encode("foob", "Zm9vYg==");
	check_encode("fooba", "Zm9vYmE=");
	check_encode("foobar", "Zm9vYmFy");
}

TEST(rfc4648_decode)
{
	check_decode_ok("", "", 0);
	check_decode_ok("Zg==", "f", 1);
	check_decode_ok("Zm8=", "fo", 2);
	check_decode_ok("Zm9v", "foo", 3);
	check_decode_ok("Zm9vYg==", "foob", 4);
	check_decode_ok("Zm9vYmE=", "fooba", 5);
	check_decode_ok("Zm9vYmFy", "foobar", 6);
	check_decode_ok("aGVsbG8K", "hello\n", 6);
}

TEST(all_bytes_round_trip)
{
	uint8_t in[256], out[256 + 3];
	char enc[400], err[64];

	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)i;
	for (size_t n = 0; n <= sizeof(in); n++) {
		size_t e = base64_encode(in, n, enc);
		ssize_t d = base64_decode(enc, e, out, err, sizeof(err));

		ASSERT_EQ(base64_encoded_len(n), e);
		ASSERT_EQ(n, d);
		ASSERT_MEMEQ(in, out, n);
	}
	/* the reference's fs/readFile of bytes 0..255 */
	ASSERT_EQ(344, base64_encode(in, 256, enc));
	ASSERT_MEMEQ("AAECAwQFBgcICQoLDA0ODxAREhMU", enc, 28);
	ASSERT_MEMEQ("/w==", enc + 340, 4);
}

TEST(fast_encoder_matches_simple)
{
	/* Every length up to 2 KiB and every source alignment of the 8-byte loads, random bytes. */
	static uint8_t in[2048 + 8];
	static char fast[2800 + 8], table[2800 + 8], simple[2800 + 8];
	uint32_t x = 2463534242u;

	for (size_t i = 0; i < sizeof(in); i++) {
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		in[i] = (uint8_t)x;
	}
	for (size_t off = 0; off < 8; off++)
		for (size_t n = 0; n <= 2048; n++) {
			size_t a, t, b;

			memset(fast, '#', sizeof(fast));
			memset(table, '#', sizeof(table));
			a = base64_encode(in + off, n, fast); /* AVX2 where the CPU has it */
			t = base64_encode_table(in + off, n, table);
			b = base64_encode_simple(in + off, n, simple);
			ASSERT_EQ(base64_encoded_len(n), a);
			ASSERT_EQ(b, a);
			ASSERT_EQ(b, t);
			ASSERT_MEMEQ(simple, fast, a);
			ASSERT_MEMEQ(simple, table, t);
			/* nothing written past the encoded length */
			ASSERT_EQ('#', fast[a]);
			ASSERT_EQ('#', table[t]);
		}
}

TEST(reference_error_texts)
{
	/* PROTOCOL.md §5.2 and p07_fs.out */
	check_decode_err("!!!", "Invalid symbol 33, offset 0.");
	check_decode_err("aGVsbG8", "Invalid padding");
	check_decode_err("aGVs\nbG8=", "Invalid symbol 10, offset 4.");
	check_decode_err("a", "Invalid input length: 1");
	check_decode_err("file:///root/x.txt", "Invalid symbol 58, offset 4.");
}

TEST(symbol_errors)
{
	check_decode_err("Zm9v!", "Invalid symbol 33, offset 4.");      /* trailing invalid byte */
	check_decode_err("Zm9v\n", "Invalid symbol 10, offset 4.");
	check_decode_err("Zm9vYmFy\n", "Invalid symbol 10, offset 8.");
	check_decode_err(" Zm9v", "Invalid symbol 32, offset 0.");
	check_decode_err("Zm-v", "Invalid symbol 45, offset 2.");      /* URL-safe alphabet */
	check_decode_err("Zm_vYmFy", "Invalid symbol 95, offset 2.");
	check_decode_err("Zm9vYm_y", "Invalid symbol 95, offset 6.");
	check_decode_err("Zg==Zg==", "Invalid symbol 61, offset 2.");  /* padding mid-stream */
	check_decode_err("Z===", "Invalid symbol 61, offset 1.");
	check_decode_err("====", "Invalid symbol 61, offset 0.");
	check_decode_err("=", "Invalid symbol 61, offset 0.");
	check_decode_err("Zm9v=", "Invalid symbol 61, offset 4.");
	check_decode_err("Zm9vZ=", "Invalid symbol 61, offset 5.");
	check_decode_err("Zg=a", "Invalid symbol 61, offset 2.");     /* symbol after padding */
	check_decode_err("Zm\x80v", "Invalid symbol 128, offset 2.");
}

TEST(length_and_padding_errors)
{
	check_decode_err("Zm9vY", "Invalid input length: 5");
	check_decode_err("Zm9vYmFyZ", "Invalid input length: 9");
	check_decode_err("Zg", "Invalid padding");
	check_decode_err("Zm8", "Invalid padding");
	check_decode_err("Zg=", "Invalid padding");
	check_decode_err("Zg===", "Invalid symbol 61, offset 2.");
	check_decode_err("Zm9vZg", "Invalid padding");
	check_decode_err("Zm8==", "Invalid symbol 61, offset 3.");
}

TEST(non_canonical_trailing_bits)
{
	/* "Zh==" decodes to 'f' with leftover bits set in 'h' */
	check_decode_err("Zh==", "Invalid last symbol 104, offset 1.");
	check_decode_err("Zm9=", "Invalid last symbol 57, offset 2.");
	check_decode_err("Zm9vZh==", "Invalid last symbol 104, offset 5.");
	check_decode_ok("/w==", "\xff", 1);
	check_decode_err("/x==", "Invalid last symbol 120, offset 1.");
}

TEST(reterr_is_optional_and_truncated)
{
	uint8_t buf[8];
	char small[8];

	ASSERT_EQ(-EINVAL, base64_decode("!!!", 3, buf, NULL, 0));
	ASSERT_EQ(-EINVAL, base64_decode("!!!", 3, buf, small, sizeof(small)));
	ASSERT_STREQ("Invalid", small);
}

TEST(decoded_max_bound)
{
	uint8_t buf[64];
	char err[64];

	/* the whole output must fit base64_decoded_max() for every accepted length */
	for (size_t n = 0; n <= 40; n++) {
		char in[48];
		ssize_t r;

		memset(in, 'A', n);
		r = base64_decode(in, n, buf, err, sizeof(err));
		if (r >= 0)
			ASSERT_TRUE((size_t)r <= base64_decoded_max(n));
	}
}

TEST_MAIN()
