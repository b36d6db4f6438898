/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for proto/http-body.c, the client's response body framing:
 * Content-Length, chunked at every split point, until close, bodiless
 * answers, limits.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "http-client.h"
#include "tests.h"

#define MAX 16384

static void head(const char *s, struct http_response *r)
{
	int k = http_response_parse(s, strlen(s), MAX, r);

	if (k != (int)strlen(s))
		tests_fail(__FILE__, __LINE__, "head '%s': %d", s, k);
}

static int init(const char *h, bool head_request, uint64_t max_body, struct http_body_reader *br)
{
	struct http_response r;

	head(h, &r);
	return http_body_reader_init(br, &r, head_request, max_body);
}

/* Feeds s in slices of `step` bytes; returns the total consumed or the first error. */
static long feed_steps(struct http_body_reader *br, const char *s, size_t n, size_t step,
		       struct buf *out)
{
	size_t off = 0;

	while (off < n && !br->done) {
		size_t k = n - off < step ? n - off : step;
		int c = http_body_reader_feed(br, (const uint8_t *)s + off, k, out);

		if (c < 0)
			return c;
		if ((size_t)c > k)
			return -1000;
		off += (size_t)c;
		if ((size_t)c < k && !br->done)
			return -1001; /* stopped early without being done */
	}
	return (long)off;
}

#define CHUNKED "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"

static const char chunked_body[] = "5\r\nhello\r\n"
				   "6;name=value;flag\r\n world\r\n"
				   "000A ; ext = \"q;uoted\"\r\n0123456789\r\n"
				   "1\r\n!\r\n"
				   "0;last\r\n"
				   "X-Trailer: yes\r\n"
				   "X-Empty:\r\n"
				   "\r\n";

TEST(body_content_length)
{
	struct http_body_reader br;
	struct buf out = { 0 };
	static const char h[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n";

	ASSERT_EQ(0, init(h, false, 100, &br));
	ASSERT_EQ(HTTP_BODY_LENGTH, br.mode);
	ASSERT_EQ(5, br.left);
	ASSERT_TRUE(!br.done);
	ASSERT_EQ(2, http_body_reader_feed(&br, (const uint8_t *)"he", 2, &out));
	ASSERT_TRUE(!br.done);
	/* bytes after the body are not consumed */
	ASSERT_EQ(3, http_body_reader_feed(&br, (const uint8_t *)"lloHTTP/1.1", 11, &out));
	ASSERT_TRUE(br.done);
	ASSERT_EQ(5, br.total);
	ASSERT_EQ(5, out.len);
	ASSERT_MEMEQ("hello", out.data, 5);
	ASSERT_EQ(0, http_body_reader_feed(&br, (const uint8_t *)"x", 1, &out));
	ASSERT_EQ(0, http_body_reader_eof(&br));
	buf_done(&out);

	/* short, then the peer closes: truncated */
	ASSERT_EQ(0, init(h, false, 100, &br));
	ASSERT_EQ(4, http_body_reader_feed(&br, (const uint8_t *)"hell", 4, NULL));
	ASSERT_EQ(-EPIPE, http_body_reader_eof(&br));
	ASSERT_EQ(4, br.total);

	/* zero length: done at once */
	ASSERT_EQ(0, init("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false, 0, &br));
	ASSERT_TRUE(br.done);
	ASSERT_EQ(0, http_body_reader_feed(&br, (const uint8_t *)"x", 1, NULL));
	ASSERT_EQ(0, http_body_reader_eof(&br));

	/* equal duplicates */
	ASSERT_EQ(0, init("HTTP/1.1 200 OK\r\nContent-Length: 7\r\ncontent-length: 007\r\n\r\n",
			  false, 100, &br));
	ASSERT_EQ(7, br.left);
	/* the largest value, and max_body */
	ASSERT_EQ(0, init("HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551615\r\n\r\n", false,
			  UINT64_MAX, &br));
	ASSERT_EQ(UINT64_MAX, br.left);
	ASSERT_EQ(0, init("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", false, 10, &br));
	ASSERT_EQ(-EMSGSIZE, init("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n", false, 10, &br));
}

TEST(body_content_length_malformed)
{
	static const char *const bad[] = {
		"Content-Length: 5\r\nContent-Length: 6",
		"Content-Length: 5, 5",
		"Content-Length: +5",
		"Content-Length: -1",
		"Content-Length: 0x5",
		"Content-Length: 5 5",
		"Content-Length: 5.0",
		"Content-Length:",
		"Content-Length: 18446744073709551616",
		"Content-Length: 99999999999999999999999",
	};
	struct http_body_reader br;
	char h[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		snprintf(h, sizeof(h), "HTTP/1.1 200 OK\r\n%s\r\n\r\n", bad[i]);
		if (init(h, false, UINT64_MAX, &br) != -EBADMSG)
			tests_fail(__FILE__, __LINE__, "accepted %s", bad[i]);
	}
}

TEST(body_chunked)
{
	struct http_body_reader br;
	struct buf out = { 0 };
	char in[512];
	size_t n = strlen(chunked_body);

	memcpy(in, chunked_body, n);
	memcpy(in + n, "HTTP/1.1 200", 12); /* the next response: not body */

	ASSERT_EQ(0, init(CHUNKED, false, 1 << 20, &br));
	ASSERT_EQ(HTTP_BODY_CHUNKED, br.mode);
	ASSERT_EQ((int)n, http_body_reader_feed(&br, (const uint8_t *)in, n + 12, &out));
	ASSERT_TRUE(br.done);
	ASSERT_EQ(22, br.total);
	ASSERT_EQ(22, out.len);
	ASSERT_MEMEQ("hello world0123456789!", out.data, 22);
	ASSERT_EQ(0, http_body_reader_eof(&br));
	buf_done(&out);

	/* one byte at a time, and every split into two feeds: the same bytes and the same end */
	for (size_t step = 1; step <= n + 12; step = step < 8 ? step + 1 : step * 2) {
		ASSERT_EQ(0, init(CHUNKED, false, 1 << 20, &br));
		ASSERT_EQ((long)n, feed_steps(&br, in, n + 12, step, &out));
		ASSERT_TRUE(br.done);
		ASSERT_EQ(22, out.len);
		ASSERT_MEMEQ("hello world0123456789!", out.data, 22);
		buf_done(&out);
	}
	for (size_t cut = 0; cut <= n; cut++) {
		int a, b;

		ASSERT_EQ(0, init(CHUNKED, false, 1 << 20, &br));
		a = http_body_reader_feed(&br, (const uint8_t *)in, cut, &out);
		ASSERT_EQ((int)cut, a);
		ASSERT_EQ(cut == n, br.done);
		if (cut < n)
			ASSERT_EQ(-EPIPE, http_body_reader_eof(&br)); /* truncated at every point */
		b = http_body_reader_feed(&br, (const uint8_t *)in + cut, n + 12 - cut, &out);
		ASSERT_EQ((int)(n - cut), b);
		ASSERT_TRUE(br.done);
		ASSERT_EQ(22, out.len);
		ASSERT_MEMEQ("hello world0123456789!", out.data, 22);
		buf_done(&out);
	}
}

TEST(body_chunked_forms)
{
	struct http_body_reader br;
	struct buf out = { 0 };
	static const char *const good[][2] = {
		{ "0\r\n\r\n", "" },
		{ "0005\r\nhello\r\n0\r\n\r\n", "hello" },
		{ "a\r\n0123456789\r\nA\r\nabcdefghij\r\n0\r\n\r\n", "0123456789abcdefghij" },
		{ "5\nhello\n0\n\n", "hello" },        /* LF-only */
		{ "3 \r\nabc\r\n0\r\n\r\n", "abc" },    /* BWS */
		{ "3\t;x\r\nabc\r\n0\r\nT: 1\nU:2\r\n\r\n", "abc" },
		{ "0000000000000000000000000000000002\r\nab\r\n0\r\n\r\n", "ab" },
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++) {
		size_t n = strlen(good[i][0]);

		ASSERT_EQ(0, init(CHUNKED, false, 100, &br));
		if (feed_steps(&br, good[i][0], n, 1, &out) != (long)n || !br.done)
			tests_fail(__FILE__, __LINE__, "case %zu refused", i);
		ASSERT_EQ(strlen(good[i][1]), out.len);
		ASSERT_MEMEQ(good[i][1], out.data, out.len);
		buf_done(&out);
	}
}

TEST(body_chunked_malformed)
{
	static const char *const bad[] = {
		"\r\n",                          /* no digits */
		";x\r\n",
		"g\r\n",
		"-1\r\n",
		"0x5\r\n",
		"5x\r\nhello\r\n",               /* junk after the size */
		"5 5\r\nhello\r\n",
		"5\rhello",                      /* bare CR */
		"5\r\nhelloX\r\n",               /* data not followed by CRLF */
		"5\r\nhello\rX",
		"5\r\nhello\r\r\n",
		"10000000000000000\r\n",         /* 2^64: overflow */
		"5;a\x01\r\nhello\r\n",          /* control byte in an extension */
		"5;a\x7f\r\nhello\r\n",
		"0\r\n X: y\r\n\r\n",            /* obs-fold in the trailers */
		"0\r\nX: y\r\n\tz\r\n\r\n",
		"0\r\nNoColon\r\n\r\n",
		"0\r\nX : y\r\n\r\n",
		"0\r\nX: a\x01\r\n\r\n",
		"0\r\nX: y\r\rn",
		"0\r\n\rx",
	};
	struct http_body_reader br;

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		long k;

		ASSERT_EQ(0, init(CHUNKED, false, UINT64_MAX, &br));
		k = feed_steps(&br, bad[i], strlen(bad[i]), 1, NULL);
		if (k != -EBADMSG)
			tests_fail(__FILE__, __LINE__, "case %zu: expected -EBADMSG, got %ld", i, k);
		/* the same fed whole */
		ASSERT_EQ(0, init(CHUNKED, false, UINT64_MAX, &br));
		ASSERT_EQ(-EBADMSG, http_body_reader_feed(&br, (const uint8_t *)bad[i], strlen(bad[i]), NULL));
	}
}

TEST(body_chunked_limits)
{
	struct http_body_reader br;
	char *big = malloc(HTTP_TRAILERS_MAX + 64);
	size_t n;

	/* a size line of HTTP_CHUNK_LINE_MAX bytes (CRLF included) passes, one more does not */
	for (int extra = 0; extra <= 1; extra++) {
		n = (size_t)sprintf(big, "1;");
		while (n < HTTP_CHUNK_LINE_MAX - 2 + (size_t)extra)
			big[n++] = 'e';
		n += (size_t)sprintf(big + n, "\r\nx\r\n0\r\n\r\n");
		ASSERT_EQ(0, init(CHUNKED, false, 100, &br));
		ASSERT_EQ(extra ? -EBADMSG : (long)n, feed_steps(&br, big, n, 7, NULL));
	}
	/* leading zeros count toward the same limit */
	memset(big, '0', HTTP_CHUNK_LINE_MAX + 1);
	ASSERT_EQ(0, init(CHUNKED, false, 100, &br));
	ASSERT_EQ(-EBADMSG, http_body_reader_feed(&br, (const uint8_t *)big, HTTP_CHUNK_LINE_MAX + 1, NULL));

	/* trailers: the whole section, final CRLF included, up to HTTP_TRAILERS_MAX */
	for (int extra = 0; extra <= 1; extra++) {
		n = (size_t)sprintf(big, "0\r\nX: ");
		while (n < 3 + HTTP_TRAILERS_MAX - 4 + (size_t)extra)
			big[n++] = 'v';
		n += (size_t)sprintf(big + n, "\r\n\r\n");
		ASSERT_EQ(0, init(CHUNKED, false, 100, &br));
		ASSERT_EQ(extra ? -EBADMSG : (long)n, feed_steps(&br, big, n, 1000, NULL));
	}
	free(big);

	/* max_body: each chunk's declared size is checked before its data */
	ASSERT_EQ(0, init(CHUNKED, false, 10, &br));
	ASSERT_EQ(-EMSGSIZE, http_body_reader_feed(&br, (const uint8_t *)"b\r\n", 3, NULL));
	ASSERT_EQ(0, init(CHUNKED, false, 10, &br));
	ASSERT_EQ(-EMSGSIZE, feed_steps(&br, "6\r\nabcdef\r\n5\r\nghijk\r\n0\r\n\r\n", 26, 1, NULL));
	ASSERT_EQ(6, br.total);
	ASSERT_EQ(0, init(CHUNKED, false, 10, &br));
	ASSERT_EQ(25, feed_steps(&br, "6\r\nabcdef\r\n4\r\nghij\r\n0\r\n\r\n", 25, 1, NULL));
	ASSERT_EQ(10, br.total);
	ASSERT_EQ(0, init(CHUNKED, false, 10, &br));
	ASSERT_EQ(-EMSGSIZE, http_body_reader_feed(&br, (const uint8_t *)"FFFFFFFFFFFFFFFF\r\n", 18, NULL));
}

TEST(body_te_and_cl)
{
	static const struct {
		const char *headers;
		enum http_body_mode mode;
	} cases[] = {
		{ "Transfer-Encoding: chunked\r\nContent-Length: 3", HTTP_BODY_CHUNKED },
		{ "Content-Length: 3\r\nTransfer-Encoding: chunked", HTTP_BODY_CHUNKED },
		{ "Content-Length: 3\r\nContent-Length: 4\r\nTransfer-Encoding: chunked", HTTP_BODY_CHUNKED },
		{ "Transfer-Encoding: Chunked", HTTP_BODY_CHUNKED },
		{ "Transfer-Encoding: gzip, chunked", HTTP_BODY_CHUNKED },
		{ "Transfer-Encoding: gzip,chunked , ", HTTP_BODY_CHUNKED },
		{ "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked", HTTP_BODY_CHUNKED },
		{ "Transfer-Encoding: chunked\r\nTransfer-Encoding: ,", HTTP_BODY_CHUNKED },
		{ "Transfer-Encoding: chunked, gzip", HTTP_BODY_UNTIL_CLOSE },
		{ "Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip", HTTP_BODY_UNTIL_CLOSE },
		{ "Transfer-Encoding: gzip\r\nContent-Length: 3", HTTP_BODY_UNTIL_CLOSE },
		{ "Transfer-Encoding: chunkedx", HTTP_BODY_UNTIL_CLOSE },
		{ "Transfer-Encoding: chunked;q=1", HTTP_BODY_UNTIL_CLOSE },
		{ "Transfer-Encoding:", HTTP_BODY_UNTIL_CLOSE },
		{ "Content-Length: 3", HTTP_BODY_LENGTH },
		{ "X-Other: 1", HTTP_BODY_UNTIL_CLOSE },
	};
	struct http_body_reader br;
	char h[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		snprintf(h, sizeof(h), "HTTP/1.1 200 OK\r\n%s\r\n\r\n", cases[i].headers);
		ASSERT_EQ(0, init(h, false, 100, &br));
		if (br.mode != cases[i].mode)
			tests_fail(__FILE__, __LINE__, "%s: mode %d, expected %d", cases[i].headers,
				   br.mode, cases[i].mode);
	}
}

TEST(body_until_close)
{
	struct http_body_reader br;
	struct buf out = { 0 };

	ASSERT_EQ(0, init("HTTP/1.0 200 OK\r\n\r\n", false, 10, &br));
	ASSERT_EQ(HTTP_BODY_UNTIL_CLOSE, br.mode);
	ASSERT_EQ(4, http_body_reader_feed(&br, (const uint8_t *)"abcd", 4, &out));
	ASSERT_EQ(6, http_body_reader_feed(&br, (const uint8_t *)"efghij", 6, &out));
	ASSERT_TRUE(!br.done);
	ASSERT_EQ(-EMSGSIZE, http_body_reader_feed(&br, (const uint8_t *)"k", 1, &out));
	ASSERT_EQ(10, br.total);
	ASSERT_EQ(0, http_body_reader_eof(&br));
	ASSERT_TRUE(br.done);
	ASSERT_EQ(10, out.len);
	ASSERT_MEMEQ("abcdefghij", out.data, 10);
	buf_done(&out);

	/* an unknown coding is read until close too */
	ASSERT_EQ(0, init("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", false, 10, &br));
	ASSERT_EQ(3, http_body_reader_feed(&br, (const uint8_t *)"\x1f\x8b\x08", 3, NULL));
	ASSERT_EQ(0, http_body_reader_eof(&br));
}

TEST(body_none)
{
	static const char *const heads[] = {
		"HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n",
		"HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n",
		"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\n",
		"HTTP/1.1 199 Whatever\r\nContent-Length: 5\r\n\r\n",
		/* a 204 with a malformed Content-Length: no body, nothing to judge */
		"HTTP/1.1 204 No Content\r\nContent-Length: x\r\n\r\n",
	};
	struct http_body_reader br;

	for (size_t i = 0; i < sizeof(heads) / sizeof(*heads); i++) {
		ASSERT_EQ(0, init(heads[i], false, 0, &br));
		ASSERT_EQ(HTTP_BODY_NONE, br.mode);
		ASSERT_TRUE(br.done);
		ASSERT_EQ(0, http_body_reader_feed(&br, (const uint8_t *)"xyz", 3, NULL));
		ASSERT_EQ(0, http_body_reader_eof(&br));
	}
	/* the answer to HEAD has no body whatever it says */
	ASSERT_EQ(0, init("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", true, 10, &br));
	ASSERT_EQ(HTTP_BODY_NONE, br.mode);
	ASSERT_TRUE(br.done);
	ASSERT_EQ(0, init("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", true, 10, &br));
	ASSERT_EQ(HTTP_BODY_NONE, br.mode);
	/* but a 200 with nothing is read until close */
	ASSERT_EQ(0, init("HTTP/1.1 200 OK\r\n\r\n", false, 10, &br));
	ASSERT_EQ(HTTP_BODY_UNTIL_CLOSE, br.mode);
}


TEST_MAIN()
