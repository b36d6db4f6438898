/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for proto/json-check: serde_json's error texts and positions for
 * every syntax ErrorCode, multi-line positions, valid documents, the nesting
 * limit and a truncation sweep. Expected values follow serde_json's de.rs /
 * read.rs rules (see json-check.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json-check.h"
#include "tests.h"

static char errbuf[512];

static const char *chk_depth(const char *s, size_t n, unsigned depth)
{
	int r;

	snprintf(errbuf, sizeof(errbuf), "(unset)");
	r = jcheck_validate(s, n, depth, errbuf, sizeof(errbuf));
	if (r == 0)
		return "OK";
	if (r != -EBADMSG)
		return "(bad return code)";
	return errbuf;
}

/* String literals (may hold NUL bytes): length from sizeof. */
#define CHECK(expected, lit) ASSERT_STREQ(expected, chk_depth(lit, sizeof(lit) - 1, 128))
#define OK(lit) CHECK("OK", lit)

TEST(eof_errors)
{
	CHECK("EOF while parsing a value at line 1 column 0", "");
	CHECK("EOF while parsing a value at line 1 column 3", "   ");
	CHECK("EOF while parsing a list at line 1 column 1", "[");
	CHECK("EOF while parsing a list at line 1 column 2", "[1");
	CHECK("EOF while parsing a list at line 1 column 4", "[1  ");
	CHECK("EOF while parsing a value at line 1 column 3", "[1,");
	CHECK("EOF while parsing an object at line 1 column 1", "{");
	CHECK("EOF while parsing an object at line 1 column 4", "{\"a\"");
	CHECK("EOF while parsing a value at line 1 column 5", "{\"a\":");
	CHECK("EOF while parsing an object at line 1 column 6", "{\"a\":1");
	CHECK("EOF while parsing an object at line 1 column 9", "{\"id\":12 ");
	CHECK("EOF while parsing a value at line 1 column 7", "{\"a\":1,");
	CHECK("EOF while parsing a string at line 1 column 4", "\"abc");
	CHECK("EOF while parsing a string at line 1 column 3", "{\"a");
	CHECK("EOF while parsing a string at line 1 column 2", "\"\\");
	CHECK("EOF while parsing a string at line 1 column 5", "\"\\u12");
	CHECK("EOF while parsing a string at line 1 column 7", "\"\\ud83d");
	CHECK("EOF while parsing a string at line 1 column 8", "\"\\ud83d\\");
	CHECK("EOF while parsing a string at line 1 column 9", "\"\\ud83d\\u");
	CHECK("EOF while parsing a string at line 1 column 12", "\"\\ud83d\\ude0");
	CHECK("EOF while parsing a value at line 1 column 2", "tr");
	CHECK("EOF while parsing a value at line 1 column 3", "nul");
	CHECK("EOF while parsing a value at line 1 column 4", "fals");
	CHECK("EOF while parsing a value at line 1 column 1", "-");
	CHECK("EOF while parsing a value at line 1 column 2", "1.");
	CHECK("EOF while parsing a value at line 1 column 2", "1e");
	CHECK("EOF while parsing a value at line 1 column 3", "1e-");
	CHECK("EOF while parsing a value at line 1 column 5", "1.5E+");
}

TEST(expected_colon)
{
	CHECK("expected `:` at line 1 column 6", "{\"a\" 1}");
	CHECK("expected `:` at line 1 column 5", "{\"a\"}");
	CHECK("expected `:` at line 1 column 5", "{\"a\",\"b\"}");
}

TEST(expected_list_comma_or_end)
{
	CHECK("expected `,` or `]` at line 1 column 4", "[1 2]");
	CHECK("expected `,` or `]` at line 1 column 3", "[1}");
	CHECK("expected `,` or `]` at line 1 column 5", "[\"a\":1]");
}

TEST(expected_object_comma_or_end)
{
	CHECK("expected `,` or `}` at line 1 column 8", "{\"a\":1 \"b\":2}");
	CHECK("expected `,` or `}` at line 1 column 7", "{\"a\":1]");
	CHECK("expected `,` or `}` at line 1 column 7", "{\"a\":1:");
}

TEST(expected_ident)
{
	CHECK("expected ident at line 1 column 3", "trUe");
	CHECK("expected ident at line 1 column 4", "nulL");
	CHECK("expected ident at line 1 column 5", "fals3");
	CHECK("expected ident at line 1 column 5", "[nul]");
	CHECK("expected ident at line 1 column 2", "nan");
	CHECK("expected ident at line 1 column 2", "t}");
}

TEST(expected_value)
{
	CHECK("expected value at line 1 column 2", "[,1]");
	CHECK("expected value at line 1 column 6", "{\"a\":}");
	CHECK("expected value at line 1 column 4", "[1,,2]");
	CHECK("expected value at line 1 column 1", "x");
	CHECK("expected value at line 1 column 1", "+1");
	CHECK("expected value at line 1 column 1", ".5");
	CHECK("expected value at line 1 column 1", "'a'");
	CHECK("expected value at line 1 column 1", "]");
	CHECK("expected value at line 1 column 1", "\x00");
	CHECK("expected value at line 1 column 2", " \x0b1"); /* \v is not whitespace */
	/* A UTF-8 BOM is not skipped. */
	CHECK("expected value at line 1 column 1", "\xef\xbb\xbf{}");
	CHECK("expected value at line 1 column 1", "\xc2\xa0{}"); /* NBSP */
}

TEST(invalid_escape)
{
	CHECK("invalid escape at line 1 column 3", "\"\\x\"");
	CHECK("invalid escape at line 1 column 3", "\"\\U0041\"");
	CHECK("invalid escape at line 1 column 3", "\"\\'\"");
	/* All four hex bytes are taken before any is checked. */
	CHECK("invalid escape at line 1 column 7", "\"\\u12G4\"");
	CHECK("invalid escape at line 1 column 7", "\"\\uG234\"");
	CHECK("invalid escape at line 1 column 7", "\"\\u12\"}");
	CHECK("invalid escape at line 1 column 13", "\"\\ud83d\\uzzzz\"");
}

TEST(invalid_number)
{
	CHECK("invalid number at line 1 column 2", "01");
	CHECK("invalid number at line 1 column 3", "-01");
	CHECK("invalid number at line 1 column 2", "00");
	CHECK("invalid number at line 1 column 2", "-a");
	CHECK("invalid number at line 1 column 2", "- 1");
	CHECK("invalid number at line 1 column 3", "[-]");
	CHECK("invalid number at line 1 column 3", "1.a");
	CHECK("invalid number at line 1 column 3", "1.e5");
	CHECK("invalid number at line 1 column 4", "[1.]");
	CHECK("invalid number at line 1 column 3", "1ea");
	CHECK("invalid number at line 1 column 4", "1e+a");
	CHECK("invalid number at line 1 column 2", "-.5");
}

TEST(number_out_of_range)
{
	CHECK("number out of range at line 1 column 5", "1e400");
	CHECK("number out of range at line 1 column 6", "-1e400");
	CHECK("number out of range at line 1 column 6", "[1e309]");
	CHECK("number out of range at line 1 column 7", "1.8e308");
	CHECK("number out of range at line 1 column 10", "{\"x\":9E999}");
	CHECK("number out of range at line 1 column 7", "0.1e310");
	OK("1e308");
	OK("1.7e308");
	OK("-1.7976931348623157e308");
	OK("1e-400");
	OK("-1e-99999");
	OK("0e999999999999");
	OK("0.0e2147483648");
	OK("1e-2147483648999");
	/* Exponent beyond i32: fails at the digit that overflows, not at the end. */
	CHECK("number out of range at line 1 column 12", "1e2147483648");
	CHECK("number out of range at line 1 column 12", "1e99999999999999");
	CHECK("number out of range at line 1 column 12", "1e2147483647");
	/*
	 * serde_json without float_roundtrip multiplies (double)significand by
	 * 1eN: 17976931348623158e292 overflows although the correctly rounded
	 * value is f64::MAX. (With float_roundtrip this one would be accepted.)
	 */
	CHECK("number out of range at line 1 column 22", "1.7976931348623158e308");
	CHECK("number out of range at line 1 column 21", "17976931348623158e292");
}

TEST(long_integers_are_floats)
{
	char buf[400];

	OK("18446744073709551615");
	OK("18446744073709551616");
	OK("-9223372036854775808");
	OK("-9223372036854775809");
	OK("1000000000000000000000000000000");
	OK("123456789012345678901234567890.5e10");

	/* 1e308 written out (309 digits) is finite, 1e309 (310 digits) is not. */
	buf[0] = '1';
	memset(buf + 1, '0', 308);
	ASSERT_STREQ("OK", chk_depth(buf, 309, 128));
	buf[309] = '0';
	ASSERT_STREQ("number out of range at line 1 column 310", chk_depth(buf, 310, 128));
	/* Digits after the point no longer count; an exponent still does. */
	buf[310] = '.';
	buf[311] = '5';
	ASSERT_STREQ("number out of range at line 1 column 312", chk_depth(buf, 312, 128));
	buf[312] = 'e';
	buf[313] = '-';
	buf[314] = '2';
	ASSERT_STREQ("OK", chk_depth(buf, 315, 128));
	buf[312] = ']';
	ASSERT_STREQ("number out of range at line 1 column 312", chk_depth(buf, 313, 128));
}

TEST(invalid_unicode_code_point)
{
	/* from_slice checks UTF-8 when the string closes: reported at the quote. */
	CHECK("invalid unicode code point at line 1 column 3", "\"\xff\"");
	CHECK("invalid unicode code point at line 1 column 5", "{\"a\xc3\":1}");
	CHECK("invalid unicode code point at line 1 column 5", "\"\xed\xa0\x80\"");
	CHECK("invalid unicode code point at line 1 column 6", "\"\xf4\x90\x80\x80\"");
	CHECK("invalid unicode code point at line 1 column 4", "\"\xc0\xaf\"");
	CHECK("invalid unicode code point at line 1 column 9", "\"\xc3\\u00e9\"");
	CHECK("invalid unicode code point at line 1 column 9", "[\"\\n\xa9xyz\"]");
	/* Later errors in the same string win: EOF, control characters. */
	CHECK("EOF while parsing a string at line 1 column 2", "\"\xff");
	CHECK("control character (\\u0000-\\u001F) found while parsing a string at line 1 column 3",
	      "\"\xff\x01\"");
	OK("\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"");
	OK("\"\xf4\x8f\xbf\xbf\"");
	/* Outside strings a non-ASCII byte is just an unexpected byte. */
	CHECK("trailing characters at line 1 column 3", "{}\xff");
}

TEST(control_character)
{
	CHECK("control character (\\u0000-\\u001F) found while parsing a string at line 1 column 3",
	      "\"a\tb\"");
	CHECK("control character (\\u0000-\\u001F) found while parsing a string at line 1 column 2",
	      "\"\x01\"");
	CHECK("control character (\\u0000-\\u001F) found while parsing a string at line 1 column 2",
	      "\"\x00\"");
	CHECK("control character (\\u0000-\\u001F) found while parsing a string at line 1 column 5",
	      "{\"ab\x1f\":1}");
	/* The newline is consumed first: next line, column 0. */
	CHECK("control character (\\u0000-\\u001F) found while parsing a string at line 2 column 0",
	      "\"a\nb\"");
	OK("\"\x7f\"");
	OK("\"\\u0000\\u001f\"");
}

TEST(key_must_be_a_string)
{
	CHECK("key must be a string at line 1 column 2", "{not json");
	CHECK("key must be a string at line 1 column 2", "{1:2}");
	CHECK("key must be a string at line 1 column 8", "{\"a\":1,2:3}");
	CHECK("key must be a string at line 1 column 2", "{,}");
	CHECK("key must be a string at line 1 column 3", "{ 'a':1}");
	CHECK("key must be a string at line 1 column 2", "{]");
}

TEST(lone_leading_surrogate)
{
	CHECK("lone leading surrogate in hex escape at line 1 column 7", "\"\\udc00\"");
	CHECK("lone leading surrogate in hex escape at line 1 column 7", "\"\\uDFFF\"");
	CHECK("lone leading surrogate in hex escape at line 1 column 13", "\"\\ud800\\u0041\"");
	CHECK("lone leading surrogate in hex escape at line 1 column 13", "\"\\ud800\\ud800\"");
	OK("\"\\ud83d\\ude00\"");
	OK("\"\\uDBFF\\uDFFF\"");
	OK("\"\\ud7ff\\ue000\\uffff\"");
}

TEST(unexpected_end_of_hex_escape)
{
	CHECK("unexpected end of hex escape at line 1 column 8", "\"\\ud800\"");
	CHECK("unexpected end of hex escape at line 1 column 8", "\"\\ud800x\"");
	CHECK("unexpected end of hex escape at line 1 column 9", "\"\\ud800\\n\"");
	CHECK("unexpected end of hex escape at line 1 column 9", "\"\\ud800\\\"\"");
}

TEST(trailing_comma)
{
	CHECK("trailing comma at line 1 column 4", "[1,]");
	CHECK("trailing comma at line 1 column 5", "[1, ]");
	CHECK("trailing comma at line 1 column 8", "{\"a\":1,}");
	CHECK("trailing comma at line 1 column 10", "{\"a\":1 , }");
	CHECK("trailing comma at line 2 column 1", "[[],\n]");
}

TEST(trailing_characters)
{
	CHECK("trailing characters at line 1 column 5", "true1");
	CHECK("trailing characters at line 1 column 3", "1 2");
	CHECK("trailing characters at line 1 column 3", "{}x");
	CHECK("trailing characters at line 1 column 5", "[1] ]");
	CHECK("trailing characters at line 1 column 4", "\"a\"b");
	CHECK("trailing characters at line 1 column 2", "0x10");
	CHECK("trailing characters at line 1 column 3", "-0-");
	CHECK("trailing characters at line 3 column 1", "{\"id\":1}\n\n}");
	CHECK("trailing characters at line 1 column 10", "{\"a\":1}  {}");
}

TEST(recursion_limit)
{
	char buf[5 * 200 + 400];
	size_t n;

	/* serde_json: 127 levels parse, the 128th bracket fails. */
	memset(buf, '[', 127);
	memset(buf + 127, ']', 127);
	ASSERT_STREQ("OK", chk_depth(buf, 254, 128));
	memset(buf, '[', 128);
	memset(buf + 128, ']', 128);
	ASSERT_STREQ("recursion limit exceeded at line 1 column 128", chk_depth(buf, 256, 128));
	/* Before the EOF error, too. */
	ASSERT_STREQ("recursion limit exceeded at line 1 column 128", chk_depth(buf, 200, 128));
	ASSERT_STREQ("EOF while parsing a list at line 1 column 127", chk_depth(buf, 127, 128));

	/* Objects: {"a": repeated, the 128th '{' is at column 127 * 5 + 1. */
	n = 0;
	for (int k = 0; k < 128; k++) {
		memcpy(buf + n, "{\"a\":", 5);
		n += 5;
	}
	ASSERT_STREQ("recursion limit exceeded at line 1 column 636", chk_depth(buf, n, 128));
	ASSERT_STREQ("EOF while parsing a value at line 1 column 635", chk_depth(buf, n - 5, 128));

	/* Mixed, on a second line, with a smaller limit. */
	ASSERT_STREQ("OK", chk_depth("[{\"a\":[]}]", 10, 4));
	ASSERT_STREQ("recursion limit exceeded at line 2 column 7",
		     chk_depth("[\n {\"a\":[[]]}]", 14, 3));
	ASSERT_STREQ("recursion limit exceeded at line 2 column 2",
		     chk_depth("[\n {\"a\":[[]]}]", 14, 2));
	ASSERT_STREQ("OK", chk_depth("[]", 2, 2));
	ASSERT_STREQ("recursion limit exceeded at line 1 column 2", chk_depth("[[]]", 4, 2));
	/* Scalars have no depth. */
	ASSERT_STREQ("OK", chk_depth("1", 1, 1));
	ASSERT_STREQ("recursion limit exceeded at line 1 column 1", chk_depth("{}", 2, 1));
}

TEST(depth_clamped_to_bitset)
{
	size_t levels = JSON_CHECK_DEPTH_MAX;
	char *buf = malloc(2 * levels);

	ASSERT_TRUE(buf != NULL);
	memset(buf, '[', levels - 1);
	memset(buf + levels - 1, ']', levels - 1);
	ASSERT_STREQ("OK", chk_depth(buf, 2 * (levels - 1), 1000000));
	memset(buf, '[', levels);
	memset(buf + levels, ']', levels);
	ASSERT_STREQ("recursion limit exceeded at line 1 column 4096",
		     chk_depth(buf, 2 * levels, 1000000));
	/* Alternating kinds deep down: the bitset must remember each level. */
	{
		size_t n = 0, z;
		char want[128];
		char *d = malloc(20000);

		ASSERT_TRUE(d != NULL);
		for (size_t k = 0; k < 2000; k++) {
			if (k % 3 == 0) {
				memcpy(d + n, "{\"k\":", 5);
				n += 5;
			} else {
				d[n++] = '[';
			}
		}
		z = n;
		d[n++] = '0';
		for (size_t k = 2000; k-- > 0;)
			d[n++] = k % 3 == 0 ? '}' : ']';
		ASSERT_STREQ("OK", chk_depth(d, n, 4096));
		/* Innermost is a list (k = 1999), the next one out an object (k = 1998). */
		d[z + 1] = '}';
		snprintf(want, sizeof(want), "expected `,` or `]` at line 1 column %zu", z + 2);
		ASSERT_STREQ(want, chk_depth(d, n, 4096));
		d[z + 1] = ']';
		d[z + 2] = ']';
		snprintf(want, sizeof(want), "expected `,` or `}` at line 1 column %zu", z + 3);
		ASSERT_STREQ(want, chk_depth(d, n, 4096));
		free(d);
	}
	free(buf);
}

TEST(multi_line_positions)
{
	CHECK("expected `:` at line 3 column 7", "{\n  \"a\": 1,\n  \"b\" 2\n}");
	CHECK("expected value at line 2 column 5", "{\r\n\"a\":x}");
	CHECK("EOF while parsing a value at line 2 column 0", "[1,\n");
	CHECK("EOF while parsing a value at line 3 column 0", "\n\n");
	CHECK("EOF while parsing an object at line 2 column 2", "{\"a\":1\n\t ");
	/* Hex digits are taken four at a time, across a newline. */
	CHECK("invalid escape at line 2 column 1", "\"\\u12\n4\"");
	/* Columns count bytes, not characters. */
	CHECK("expected `,` or `]` at line 1 column 9", "[\"\xc3\xa9\xc3\xa9\" 1]");
}

TEST(valid_documents)
{
	OK("0");
	OK("-0");
	OK("-0.0");
	OK("1e5");
	OK("1E+5");
	OK("1e-5");
	OK("123.456e-7");
	OK("0.5");
	OK("true");
	OK("false");
	OK("null");
	OK("\"\"");
	OK("[]");
	OK("{}");
	OK(" \t\r\n true \t\r\n ");
	OK("[1,[2,[3,{}]],{\"a\":[]}]");
	OK("{\"\":\"\",\"a\":1,\"a\":2}");
	OK("\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u0041 \\u00e9 \\u20AC \\ud83d\\ude00\"");
	OK("\"\\u0000\"");
	OK("{\"id\":1,\"method\":\"initialize\",\"params\":{\"clientName\":\"x\"}}");
	OK("{\n  \"id\": \"abc\",\n  \"result\": {\"a\": [1, 2.5, -3e-2, true, false, null]}\n}\n");
	OK("[\"a\\u0000b\", {\"k\\nk\": [[], {}]}]");
}

TEST(error_buffer)
{
	char small[8];

	ASSERT_EQ(-EBADMSG, jcheck_validate("{x", 2, 128, small, sizeof(small)));
	ASSERT_STREQ("key mus", small);
	ASSERT_EQ(-EBADMSG, jcheck_validate("{x", 2, 128, NULL, 0));
	ASSERT_EQ(0, jcheck_validate("{}", 2, 128, NULL, 0));
	ASSERT_EQ(-EBADMSG, jcheck_validate(NULL, 0, 128, NULL, 0));
}

/* Expected position for an EOF error on buf[0..n): serde_json reports len. */
static void eof_position(const char *buf, size_t n, char *out, size_t outsz)
{
	size_t line = 1, start = 0;

	for (size_t k = 0; k < n; k++) {
		if (buf[k] == '\n') {
			line++;
			start = k + 1;
		}
	}
	snprintf(out, outsz, " at line %zu column %zu", line, n - start);
}

TEST(truncation_sweep)
{
	static const char msg[] =
		"{\"id\":12,\"method\":\"process/start\",\n"
		" \"params\":{\"argv\":[\"sh\",\"-c\",\"echo \\\"hi\\\"\\n\"],\r\n"
		"  \"env\":{\"K\":\"v\\u00e9\\ud83d\\ude00\xc3\xa9\xf0\x9f\x98\x80\"},\n"
		"  \"n\":-1.5e+3,\"m\":0.25E-2,\"big\":123456789012345678901234,\n"
		"  \"t\":true,\"f\":false,\"z\":null,\"a\":[ ],\"o\":{ },\"s\":\"\"}}\n";
	size_t len = sizeof(msg) - 1;
	char want[64];

	ASSERT_STREQ("OK", chk_depth(msg, len, 128));
	for (size_t n = 0; n < len; n++) {
		const char *got = chk_depth(msg, n, 128);
		const char *at;

		if (strcmp(got, "OK") == 0) {
			/* Only the message minus trailing whitespace is complete. */
			ASSERT_EQ(len - 1, n);
			continue;
		}
		if (strncmp(got, "EOF while parsing ", 18) != 0)
			tests_fail(__FILE__, __LINE__, "prefix %zu: %s", n, got);
		eof_position(msg, n, want, sizeof(want));
		at = strstr(got, " at line ");
		ASSERT_TRUE(at != NULL);
		ASSERT_STREQ(want, at);
	}
}

/* ---- message mode: repeated keys, numbers of any size */

static const char *chk_msg(const char *s, size_t n, size_t *ret_len)
{
	int r;

	snprintf(errbuf, sizeof(errbuf), "(unset)");
	*ret_len = 12345;
	r = jcheck_validate_message(s, n, 128, errbuf, sizeof(errbuf), ret_len);
	if (r == 0)
		return "OK";
	if (r != -EBADMSG)
		return "(bad return code)";
	return errbuf;
}

#define MSG(expected, lit)                                                     \
	do {                                                                   \
		size_t l_;                                                     \
		ASSERT_STREQ(expected, chk_msg(lit, sizeof(lit) - 1, &l_));     \
	} while (0)

TEST(message_mode_repeated_keys)
{
	size_t len;

	/* empty keys first: no scratch buffer yet (UBSan: memcmp with NULL) */
	MSG("duplicate JSON object key `` at line 1 column 8", "{\"\":1,\"\":2}");
	MSG("OK", "{\"\":{\"\":1},\"a\":2}");
	MSG("duplicate JSON object key `a` at line 1 column 10", "{\"a\":1,\"a\":2}");
	MSG("duplicate JSON object key `a` at line 1 column 15", "{\"a\":1,\"\\u0061\":2}");
	MSG("duplicate JSON object key `\xc3\xa9` at line 1 column 16",
	    "{\"\\u00e9\":1,\"\xc3\xa9\":2}");
	MSG("duplicate JSON object key `\xf0\x9f\x98\x80` at line 1 column 32",
	    "{\"\\ud83d\\ude00\":1,\"\\ud83d\\ude00\":2}");
	MSG("duplicate JSON object key `q` at line 2 column 10", "{\"z\":{\"q\":1,\n\"x\":[],\"q\":2}}");
	/* the first repeat wins over a later syntax error, and a later repeat */
	MSG("duplicate JSON object key `a` at line 1 column 10", "{\"a\":1,\"a\":2,}");
	MSG("duplicate JSON object key `b` at line 1 column 15", "{\"a\":{\"b\":1,\"b\":2},\"a\":3}");
	/* but not over an earlier one */
	MSG("trailing comma at line 1 column 9", "{\"a\":[1,],\"a\":2}");
	/* the same names in other objects are no repeat */
	MSG("OK", "{\"a\":{\"a\":{\"a\":1}},\"b\":[{\"a\":1},{\"a\":2}],\"c\":{\"b\":1,\"c\":2}}");
	MSG("OK", "[{\"a\":1},{\"a\":1}]");
	MSG("OK", "{\"a\":1,\"A\":2,\"a \":3,\"\":4}");
	/* a NUL in the key is kept: the length says where the text ends */
	ASSERT_EQ(-EBADMSG, jcheck_validate_message("{\"\\u0000\":1,\"\\u0000\":2}", 24, 128,
						     errbuf, sizeof(errbuf), &len));
	ASSERT_EQ(sizeof("duplicate JSON object key `\0` at line 1 column 20") - 1, len);
	ASSERT_EQ(0, memcmp(errbuf, "duplicate JSON object key `\0` at line 1 column 20", len + 1));
	/* the plain check keeps serde_json::from_slice's behaviour */
	OK("{\"a\":1,\"a\":2}");
}

TEST(message_mode_many_keys)
{
	/* enough keys to rehash the chains several times, the repeat last */
	size_t n = 5000, o = 0, len;
	char *buf = malloc(n * 16 + 64);

	ASSERT_TRUE(buf != NULL);
	buf[o++] = '{';
	for (size_t i = 0; i < n; i++)
		o += (size_t)sprintf(buf + o, "\"k%zu\":%zu,", i, i);
	o += (size_t)sprintf(buf + o, "\"k4321\":0}");
	ASSERT_EQ(-EBADMSG, jcheck_validate_message(buf, o, 128, errbuf, sizeof(errbuf), &len));
	ASSERT_TRUE(strncmp(errbuf, "duplicate JSON object key `k4321` at line 1 column ", 51) == 0);
	o -= strlen("\"k4321\":0}");
	o += (size_t)sprintf(buf + o, "\"k54321\":0}"); /* a new name: no repeat */
	ASSERT_EQ(0, jcheck_validate_message(buf, o, 128, errbuf, sizeof(errbuf), &len));
	free(buf);
}

TEST(message_mode_numbers)
{
	size_t len;

	CHECK("number out of range at line 1 column 5", "1e999");
	ASSERT_EQ(0, jcheck_validate_message("1e999", 5, 128, errbuf, sizeof(errbuf), &len));
	{
		static const char big[] = "[-1e400,1.5e999999999999,123456789012345678901234567890e300]";

		ASSERT_EQ(0, jcheck_validate_message(big, sizeof(big) - 1, 128, errbuf, sizeof(errbuf),
						     &len));
	}
	/* the other number errors stay */
	MSG("invalid number at line 1 column 4", "[1.]");
	MSG("invalid number at line 1 column 2", "-a");
}

TEST_MAIN()
