/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for base/log: the JSON escaping of structured log and audit
 * lines (any bytes in, valid JSON text out) and the field encoder.
 */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "tests.h"
#include "utf8.h"

static char *esc(const char *s, size_t len)
{
	struct buf b = { 0 };
	char *out;

	ASSERT_EQ(0, log_json_string(&b, s, len));
	out = malloc(b.len + 1);
	ASSERT_TRUE(out != NULL);
	memcpy(out, b.data, b.len);
	out[b.len] = 0;
	buf_done(&b);
	return out;
}

#define ESC_EQ(in, want)                                                                       \
	do {                                                                                   \
		char *_o_ = esc(in, sizeof(in) - 1);                                           \
		if (strcmp(_o_, want) != 0)                                                    \
			tests_fail(__FILE__, __LINE__, "escaped %s, want %s", _o_, want);      \
		free(_o_);                                                                     \
	} while (0)

TEST(escapes)
{
	ESC_EQ("", "\"\"");
	ESC_EQ("plain", "\"plain\"");
	ESC_EQ("a\"b\\c", "\"a\\\"b\\\\c\"");
	ESC_EQ("\n\r\t", "\"\\n\\r\\t\"");
	ESC_EQ("\x00\x01\x1f\x7f", "\"\\u0000\\u0001\\u001f\\u007f\"");
	ESC_EQ("\x1b[31m", "\"\\u001b[31m\"");
}

TEST(valid_utf8_is_kept)
{
	ESC_EQ("\xc3\xa9", "\"\xc3\xa9\"");                 /* é */
	ESC_EQ("\xe2\x82\xac", "\"\xe2\x82\xac\"");         /* € */
	ESC_EQ("\xf0\x9d\x84\x9e", "\"\xf0\x9d\x84\x9e\""); /* U+1D11E */
	ESC_EQ("\xf4\x8f\xbf\xbf", "\"\xf4\x8f\xbf\xbf\""); /* U+10FFFF */
}

TEST(invalid_utf8_becomes_replacement_characters)
{
	ESC_EQ("\x80", "\"\\ufffd\"");
	ESC_EQ("\xc0\xaf", "\"\\ufffd\\ufffd\"");              /* overlong '/' */
	ESC_EQ("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"");    /* UTF-16 surrogate */
	ESC_EQ("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""); /* above U+10FFFF */
	ESC_EQ("a\xe2\x82", "\"a\\ufffd\\ufffd\"");             /* cut short */
	ESC_EQ("\xff\"", "\"\\ufffd\\\"\"");
}

/* Every string of one or two bytes: the output is valid UTF-8 without raw control characters. */
TEST(every_two_byte_string_gives_valid_json_text)
{
	char in[2];

	for (unsigned a = 0; a < 256; a++)
		for (unsigned b = 0; b < 257; b++) {
			size_t len = b == 256 ? 1 : 2;
			char *o;

			in[0] = (char)a;
			in[1] = (char)b;
			o = esc(in, len);
			ASSERT_TRUE(utf8_is_valid((const uint8_t *)o, strlen(o)));
			for (const char *p = o; *p; p++)
				ASSERT_TRUE((unsigned char)*p >= 0x20 && *p != 0x7f);
			ASSERT_TRUE(o[0] == '"' && o[strlen(o) - 1] == '"' && strlen(o) >= 3);
			free(o);
		}
}

TEST(fields)
{
	const char *argv[] = { "a", "b\"" };
	struct log_field sub[] = { LOG_STR("type", "none") };
	struct log_field f[] = {
		LOG_STR("s", "x"), LOG_STRN("n", "a\0b", 3), LOG_INT("i", -5), LOG_BOOL("t", 1),
		LOG_STRV("v", argv, 2), LOG_OBJ("o", sub, 1), LOG_STR("null", NULL),
	};
	struct buf b = { 0 };
	const char *want = "{\"s\":\"x\",\"n\":\"a\\u0000b\",\"i\":-5,\"t\":true,\"v\":[\"a\",\"b\\\"\"],"
			   "\"o\":{\"type\":\"none\"},\"null\":null}";

	ASSERT_EQ(0, log_json_fields(&b, f, ELEMENTSOF(f)));
	ASSERT_EQ(strlen(want), b.len);
	ASSERT_TRUE(memcmp(b.data, want, b.len) == 0);
	buf_done(&b);
}

static void text_eq(const char *in, size_t size, const char *want)
{
	char out[64];

	ASSERT_TRUE(size <= sizeof(out));
	log_text_escape(in, out, size);
	if (strcmp(out, want) != 0)
		tests_fail(__FILE__, __LINE__, "text-escaped %s, want %s", out, want);
}

TEST(text_escape)
{
	text_eq("plain 'x' \"y\" \xc3\xa9", 64, "plain 'x' \"y\" \xc3\xa9");
	text_eq("id\nuexec[1]: error: forged", 64, "id\\nuexec[1]: error: forged");
	text_eq("\r\t\x01\x1b[2J\x7f", 64, "\\r\\t\\x01\\x1b[2J\\x7f");
	/* truncated at a whole escape, always terminated */
	text_eq("ab\ncd", 4, "ab");
	text_eq("ab\ncd", 5, "ab\\n");
	text_eq("abc", 1, "");
}

TEST(time_format)
{
	char t[32];

	log_format_time(t);
	ASSERT_EQ(24, strlen(t));
	ASSERT_TRUE(t[4] == '-' && t[10] == 'T' && t[19] == '.' && t[23] == 'Z');
}

TEST_MAIN()
