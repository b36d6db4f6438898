/* SPDX-License-Identifier: MIT */
/* src/netproxy/chunked.c: the end of a chunked body, fed whole and one byte at a time. */
#include <errno.h>
#include <string.h>

#include "chunked.h"
#include "tests.h"

/* Bytes of s that are body, fed in pieces of step bytes; -1 malformed; -2 not ended. */
static long body_len(const char *s, size_t step)
{
	struct np_chunked st = { 0 };
	size_t n = strlen(s), off = 0;

	while (off < n) {
		size_t k = n - off < step ? n - off : step;
		long r = netproxy_chunked_scan(&st, (const uint8_t *)s + off, k);

		if (r < 0)
			return -1;
		off += (size_t)r;
		if (netproxy_chunked_done(&st))
			return (long)off;
		if ((size_t)r < k)
			return -3; /* stopped early without ending: a bug */
	}
	return -2;
}

static void both(long want, const char *s)
{
	ASSERT_EQ(want, body_len(s, 1 << 20));
	ASSERT_EQ(want, body_len(s, 1));
	ASSERT_EQ(want, body_len(s, 3));
}

TEST(ends)
{
	both(5, "0\r\n\r\nGET /next HTTP/1.1\r\n");
	both(15, "5\r\nhello\r\n0\r\n\r\nPOST");
	both(29, "5;ext=1\r\nhello\r\n0\r\nX-T: 1\r\n\r\nmore");
	both(26, "A\r\n0123456789\r\n1\r\nx\r\n0\r\n\r\n");
	both(37, "1a\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\n\r\n"); /* 0x1a = 26 */
}

TEST(malformed)
{
	both(-1, "x\r\n");
	both(-1, "\r\n");
	both(-1, "5\r\nhelloX\r\n");
	both(-1, "5\nhello\r\n");
	both(-1, "11111111111111111\r\n"); /* 17 digits */
	both(-1, "0\r\nX-T: 1\n\r\n");
	both(-2, "5\r\nhel");
}

TEST_MAIN()
