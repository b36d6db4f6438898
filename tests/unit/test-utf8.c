/* SPDX-License-Identifier: MIT */
/* Unit tests for proto/utf8: RFC 3629 boundaries, overlongs, surrogates, truncation. */
#include "tests.h"
#include "utf8.h"

#define VALID(s) ASSERT_TRUE(utf8_is_valid((const uint8_t *)(s), sizeof(s) - 1))
#define INVALID(s) ASSERT_TRUE(!utf8_is_valid((const uint8_t *)(s), sizeof(s) - 1))

TEST(ascii_and_empty)
{
	ASSERT_TRUE(utf8_is_valid(NULL, 0));
	VALID("");
	VALID("hello, world");
	VALID("\x00\x7f");
	VALID("a long ASCII string that exercises the eight-byte fast path twice over");
}

TEST(boundaries)
{
	VALID("\xc2\x80");             /* U+0080 */
	VALID("\xdf\xbf");             /* U+07FF */
	VALID("\xe0\xa0\x80");         /* U+0800 */
	VALID("\xed\x9f\xbf");         /* U+D7FF */
	VALID("\xee\x80\x80");         /* U+E000 */
	VALID("\xef\xbf\xbf");         /* U+FFFF */
	VALID("\xf0\x90\x80\x80");     /* U+10000 */
	VALID("\xf4\x8f\xbf\xbf");     /* U+10FFFF */
	VALID("unicod\xc3\xa9.txt");
	VALID("\xe2\x82\xac\xf0\x9f\x98\x80 mixed");
}

TEST(overlongs)
{
	INVALID("\xc0\x80");
	INVALID("\xc1\xbf");
	INVALID("\xe0\x80\x80");
	INVALID("\xe0\x9f\xbf");
	INVALID("\xf0\x80\x80\x80");
	INVALID("\xf0\x8f\xbf\xbf");
}

TEST(surrogates)
{
	INVALID("\xed\xa0\x80");         /* U+D800 */
	INVALID("\xed\xbf\xbf");         /* U+DFFF */
	INVALID("\xed\xa0\xbd\xed\xb8\x80"); /* CESU-8 pair */
}

TEST(above_max)
{
	INVALID("\xf4\x90\x80\x80"); /* U+110000 */
	INVALID("\xf5\x80\x80\x80");
	INVALID("\xf8\x88\x80\x80\x80");
	INVALID("\xfe");
	INVALID("\xff");
}

TEST(bad_continuations_and_truncation)
{
	INVALID("\x80");
	INVALID("\xbf");
	INVALID("a\x80" "b");
	INVALID("\xc3");
	INVALID("\xc3(");
	INVALID("\xe2\x82");
	INVALID("\xe2\x82(");
	INVALID("\xe2(\xac");
	INVALID("\xf0\x9f\x98");
	INVALID("\xf0\x9f\x98(");
	INVALID("\xf0(\x98\x80");
	INVALID("12345678\xc3"); /* truncated right after the fast path */
}

TEST(every_prefix_of_multibyte_is_invalid)
{
	static const uint8_t s[] = { 0xf0, 0x9f, 0x98, 0x80 };

	for (size_t n = 1; n < sizeof(s); n++)
		ASSERT_TRUE(!utf8_is_valid(s, n));
	ASSERT_TRUE(utf8_is_valid(s, sizeof(s)));
}

TEST(exhaustive_two_byte)
{
	/* Every two-byte sequence agrees with a direct reading of the RFC 3629 table. */
	for (unsigned a = 0; a < 256; a++) {
		for (unsigned b = 0; b < 256; b++) {
			uint8_t s[2] = { (uint8_t)a, (uint8_t)b };
			bool exp;

			exp = (a < 0x80 && b < 0x80) ||
			      (a >= 0xc2 && a <= 0xdf && b >= 0x80 && b <= 0xbf);
			ASSERT_EQ(exp, utf8_is_valid(s, 2));
		}
	}
}

TEST_MAIN()
