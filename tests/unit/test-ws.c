/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for proto/ws: header codec, masking, 7/16/64-bit lengths,
 * fragmentation with interleaved control frames, every violation, limits,
 * byte-by-byte feeding, and a truncation/bit-flip sweep.
 */
#include <errno.h>
#include <stdlib.h>

#include "tests.h"
#include "ws.h"

static const uint8_t MASK[4] = { 0x37, 0xfa, 0x21, 0x3d };

/* Appends one client frame to dst; returns its length. len_bytes forces 2/4/10-byte length forms. */
static size_t frame_ex(uint8_t *dst, uint8_t b0, bool masked, const void *payload, size_t n,
		       int len_form)
{
	size_t h = 2;

	dst[0] = b0;
	if (len_form == 0)
		len_form = n < 126 ? 1 : n <= 0xFFFF ? 2 : 8;
	if (len_form == 1) {
		dst[1] = (uint8_t)n;
	} else if (len_form == 2) {
		dst[1] = 126;
		dst[2] = (uint8_t)(n >> 8);
		dst[3] = (uint8_t)n;
		h = 4;
	} else {
		dst[1] = 127;
		for (int i = 0; i < 8; i++)
			dst[2 + i] = (uint8_t)((uint64_t)n >> (56 - 8 * i));
		h = 10;
	}
	if (masked) {
		dst[1] |= 0x80;
		memcpy(dst + h, MASK, 4);
		h += 4;
	}
	memcpy(dst + h, payload, n);
	if (masked)
		for (size_t i = 0; i < n; i++)
			dst[h + i] ^= MASK[i & 3];
	return h + n;
}

static size_t frame(uint8_t *dst, bool fin, uint8_t op, const void *payload, size_t n)
{
	return frame_ex(dst, (uint8_t)((fin ? 0x80 : 0) | op), true, payload, n, 0);
}

static struct ws_parser parser(uint64_t max_frame, uint64_t max_msg)
{
	struct ws_parser p = { .limits = { .max_frame_bytes = max_frame, .max_message_bytes = max_msg } };

	return p;
}

TEST(hdr_parse_lengths)
{
	struct ws_frame_hdr h;
	uint8_t b[32];

	/* RFC 6455 §5.7: a single-frame masked text message "Hello" */
	static const uint8_t hello[] = { 0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58 };

	ASSERT_EQ(6, ws_frame_hdr_parse(hello, sizeof(hello), &h));
	ASSERT_TRUE(h.fin && h.masked);
	ASSERT_EQ(WS_OP_TEXT, h.opcode);
	ASSERT_EQ(0, h.rsv);
	ASSERT_EQ(5, h.payload_len);
	ASSERT_MEMEQ(MASK, h.mask, 4);

	memset(b, 0, sizeof(b));
	b[0] = 0x82;
	b[1] = 0x80 | 126;
	b[3] = 126;
	ASSERT_EQ(8, ws_frame_hdr_parse(b, 8, &h));
	ASSERT_EQ(126, h.payload_len);
	b[3] = 125; /* non-minimal 16-bit form */
	ASSERT_EQ(-EBADMSG, ws_frame_hdr_parse(b, 8, &h));

	memset(b, 0, sizeof(b));
	b[0] = 0x82;
	b[1] = 0x80 | 127;
	b[7] = 0x01; /* 65536 */
	ASSERT_EQ(14, ws_frame_hdr_parse(b, 14, &h));
	ASSERT_EQ(65536, h.payload_len);
	b[7] = 0;
	b[8] = 0xFF;
	b[9] = 0xFF; /* 65535 in the 64-bit form: non-minimal */
	ASSERT_EQ(-EBADMSG, ws_frame_hdr_parse(b, 14, &h));
	b[2] = 0x80; /* top bit set */
	ASSERT_EQ(-EBADMSG, ws_frame_hdr_parse(b, 14, &h));
	b[2] = 0x7F;
	ASSERT_EQ(14, ws_frame_hdr_parse(b, 14, &h));
	ASSERT_EQ(UINT64_C(0x7F0000000000FFFF), h.payload_len);

	/* every prefix of a header is -EAGAIN */
	for (size_t i = 0; i < 14; i++)
		ASSERT_EQ(-EAGAIN, ws_frame_hdr_parse(b, i, &h));
}

TEST(hdr_encode_round_trip)
{
	static const uint64_t lens[] = { 0, 1, 125, 126, 127, 65535, 65536, UINT64_C(1) << 40 };

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		uint8_t b[WS_MAX_HDR];
		struct ws_frame_hdr h;
		size_t n = ws_frame_hdr_encode(b, WS_OP_TEXT, lens[i]);

		ASSERT_EQ(lens[i] < 126 ? 2 : lens[i] <= 0xFFFF ? 4 : 10, n);
		ASSERT_EQ((int)n, ws_frame_hdr_parse(b, n, &h));
		ASSERT_TRUE(h.fin && !h.masked && h.rsv == 0);
		ASSERT_EQ(WS_OP_TEXT, h.opcode);
		ASSERT_EQ(lens[i], h.payload_len);
	}
	{
		uint8_t b[WS_MAX_HDR];

		ASSERT_EQ(2, ws_frame_hdr_encode(b, WS_OP_PONG, 10));
		ASSERT_EQ(0x8A, b[0]);
		ASSERT_EQ(10, b[1]);
	}
}

TEST(hdr_encode_masked_round_trip)
{
	static const uint64_t lens[] = { 0, 5, 125, 126, 65535, 65536, UINT64_C(1) << 40 };
	static const uint8_t key[4] = { 0xde, 0xad, 0xbe, 0xef };

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		uint8_t b[WS_MAX_CLIENT_HDR];
		struct ws_frame_hdr h;
		size_t n = ws_frame_hdr_encode_masked(b, WS_OP_BINARY, lens[i], key);

		ASSERT_EQ(lens[i] < 126 ? 6 : lens[i] <= 0xFFFF ? 8 : 14, n);
		ASSERT_EQ((int)n, ws_frame_hdr_parse(b, n, &h));
		ASSERT_TRUE(h.fin && h.masked && h.rsv == 0);
		ASSERT_EQ(WS_OP_BINARY, h.opcode);
		ASSERT_EQ(lens[i], h.payload_len);
		ASSERT_MEMEQ(key, h.mask, 4);
		ASSERT_MEMEQ(key, b + n - 4, 4);
		/* a strict prefix (the key cut short) is incomplete */
		ASSERT_EQ(-EAGAIN, ws_frame_hdr_parse(b, n - 1, &h));
	}
	{
		/* RFC 6455 §5.7: the masked "Hello" a client sends */
		static const uint8_t hello[] = { 0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d,
						 0x7f, 0x9f, 0x4d, 0x51, 0x58 };
		uint8_t b[sizeof(hello)];
		size_t n = ws_frame_hdr_encode_masked(b, WS_OP_TEXT, 5, MASK);

		memcpy(b + n, "Hello", 5);
		ws_unmask(b + n, 5, MASK, 0);
		ASSERT_EQ(sizeof(hello), n + 5);
		ASSERT_MEMEQ(hello, b, sizeof(hello));
	}
}

/* Feeds one frame to a fresh client-mode parser. */
static int feed_client(uint8_t *b, size_t n, struct ws_event *ev)
{
	struct ws_parser p = parser(1 << 20, 1 << 22);
	int r;

	p.client = true;
	r = ws_parser_feed(&p, b, n, ev);
	ws_parser_done(&p);
	return r;
}

TEST(client_mode_refuses_masked_frames)
{
	struct ws_event ev;
	uint8_t b[64];
	size_t n;

	n = frame(b, true, WS_OP_TEXT, "hi", 2);
	ASSERT_EQ(-EPROTO, feed_client(b, n, &ev));
	/* from the first two bytes, before the key or the payload */
	ASSERT_EQ(-EPROTO, feed_client(b, 2, &ev));
	n = frame(b, true, WS_OP_PING, "p", 1);
	ASSERT_EQ(-EPROTO, feed_client(b, n, &ev));
	n = frame(b, true, WS_OP_CLOSE, "\x03\xe8", 2);
	ASSERT_EQ(-EPROTO, feed_client(b, n, &ev));
	/* and the other rules still hold */
	n = frame_ex(b, 0xC1, false, "hi", 2, 0); /* RSV1 */
	ASSERT_EQ(-EPROTO, feed_client(b, n, &ev));
	n = frame_ex(b, 0x80, false, "x", 1, 0); /* continuation without a start */
	ASSERT_EQ(-EPROTO, feed_client(b, n, &ev));
	n = frame_ex(b, 0x81, false, "a\xc3(", 3, 0);
	ASSERT_EQ(-EILSEQ, feed_client(b, n, &ev));
	n = frame_ex(b, 0x81, false, "hi", 2, 2); /* non-minimal length */
	ASSERT_EQ(-EPROTO, feed_client(b, n, &ev));
}

TEST(client_mode_reads_server_frames)
{
	struct ws_parser p = parser(1 << 20, 1 << 22);
	struct ws_event ev;
	uint8_t b[256], big[300];
	size_t n;

	p.client = true;
	n = frame_ex(b, 0x81, false, "Hello", 5, 0);
	ASSERT_EQ((int)n, ws_parser_feed(&p, b, n, &ev));
	ASSERT_EQ(WS_EV_MESSAGE, ev.type);
	ASSERT_TRUE(!ev.binary);
	ASSERT_EQ(5, ev.len);
	ASSERT_TRUE(ev.data == b + 2);
	ASSERT_MEMEQ("Hello", ev.data, 5);

	n = frame_ex(b, 0x82, false, "\xff\x00\xfe", 3, 0);
	ASSERT_EQ((int)n, ws_parser_feed(&p, b, n, &ev));
	ASSERT_EQ(WS_EV_MESSAGE, ev.type);
	ASSERT_TRUE(ev.binary);
	ASSERT_EQ(3, ev.len);
	ASSERT_MEMEQ("\xff\x00\xfe", ev.data, 3);

	/* fragmented binary with a ping in between */
	n = frame_ex(b, WS_OP_BINARY, false, "ab", 2, 0);
	ASSERT_EQ((int)n, ws_parser_feed(&p, b, n, &ev));
	ASSERT_EQ(WS_EV_NONE, ev.type);
	n = frame_ex(b, 0x80 | WS_OP_PING, false, "pp", 2, 0);
	ASSERT_EQ((int)n, ws_parser_feed(&p, b, n, &ev));
	ASSERT_EQ(WS_EV_PING, ev.type);
	ASSERT_MEMEQ("pp", ev.data, 2);
	n = frame_ex(b, WS_OP_CONT, false, "\x00", 1, 0);
	ASSERT_EQ((int)n, ws_parser_feed(&p, b, n, &ev));
	ASSERT_EQ(WS_EV_NONE, ev.type);
	n = frame_ex(b, 0x80 | WS_OP_CONT, false, "cd", 2, 0);
	ASSERT_EQ((int)n, ws_parser_feed(&p, b, n, &ev));
	ASSERT_EQ(WS_EV_MESSAGE, ev.type);
	ASSERT_TRUE(ev.binary);
	ASSERT_EQ(5, ev.len);
	ASSERT_MEMEQ("ab\x00" "cd", ev.data, 5);

	/* fragmented text */
	n = frame_ex(b, WS_OP_TEXT, false, "caf", 3, 0);
	ASSERT_EQ((int)n, ws_parser_feed(&p, b, n, &ev));
	n = frame_ex(b, 0x80 | WS_OP_CONT, false, "\xc3\xa9", 2, 0);
	ASSERT_EQ((int)n, ws_parser_feed(&p, b, n, &ev));
	ASSERT_EQ(WS_EV_MESSAGE, ev.type);
	ASSERT_TRUE(!ev.binary);
	ASSERT_MEMEQ("caf\xc3\xa9", ev.data, 5);

	/* a 16-bit length, unmasked */
	memset(big, 'z', sizeof(big));
	{
		uint8_t *f = malloc(sizeof(big) + 4);

		n = frame_ex(f, 0x82, false, big, sizeof(big), 0);
		ASSERT_EQ(sizeof(big) + 4, n);
		ASSERT_EQ(n, ws_parser_frame_need(f, n));
		ASSERT_EQ(0, ws_parser_feed(&p, f, n - 1, &ev));
		ASSERT_EQ((int)n, ws_parser_feed(&p, f, n, &ev));
		ASSERT_EQ(sizeof(big), ev.len);
		ASSERT_MEMEQ(big, ev.data, sizeof(big));
		free(f);
	}

	n = frame_ex(b, 0x8A, false, "", 0, 0);
	ASSERT_EQ((int)n, ws_parser_feed(&p, b, n, &ev));
	ASSERT_EQ(WS_EV_PONG, ev.type);

	n = frame_ex(b, 0x88, false, "\x03\xe9" "bye", 5, 0);
	ASSERT_EQ((int)n, ws_parser_feed(&p, b, n, &ev));
	ASSERT_EQ(WS_EV_CLOSE, ev.type);
	ASSERT_EQ(1001, ev.close_code);
	ASSERT_EQ(3, ev.len);
	ASSERT_MEMEQ("bye", ev.data, 3);
	n = frame_ex(b, 0x88, false, "\x03", 1, 0);
	ASSERT_EQ(-EPROTO, ws_parser_feed(&p, b, n, &ev));
	ws_parser_done(&p);
}

TEST(client_mode_limits)
{
	struct ws_parser p = parser(4, 6);
	struct ws_event ev;
	uint8_t b[64];
	size_t n;

	p.client = true;
	n = frame_ex(b, 0x82, false, "12345", 5, 0);
	ASSERT_EQ(-EMSGSIZE, ws_parser_feed(&p, b, 2, &ev)); /* from the length alone */
	n = frame_ex(b, 0x02, false, "1234", 4, 0);
	ASSERT_EQ((int)n, ws_parser_feed(&p, b, n, &ev));
	n = frame_ex(b, 0x80, false, "567", 3, 0);
	ASSERT_EQ(-EMSGSIZE, ws_parser_feed(&p, b, n, &ev));
	ws_parser_done(&p);
}

TEST(unmask_matches_naive)
{
	uint8_t a[64], b[64];

	for (size_t n = 0; n <= sizeof(a); n++) {
		for (uint64_t off = 0; off < 8; off++) {
			for (size_t i = 0; i < n; i++)
				a[i] = b[i] = (uint8_t)(i * 7 + 3);
			ws_unmask(a, n, MASK, off);
			for (size_t i = 0; i < n; i++)
				b[i] ^= MASK[(i + off) & 3];
			ASSERT_MEMEQ(b, a, n);
		}
	}
}

TEST(single_frames)
{
	struct ws_parser p = parser(1 << 20, 1 << 22);
	struct ws_event ev;
	uint8_t b[256];
	size_t n;

	n = frame(b, true, WS_OP_TEXT, "Hello", 5);
	ASSERT_EQ((int)n, ws_parser_feed(&p, b, n, &ev));
	ASSERT_EQ(WS_EV_MESSAGE, ev.type);
	ASSERT_TRUE(!ev.binary);
	ASSERT_EQ(5, ev.len);
	ASSERT_MEMEQ("Hello", ev.data, 5);
	ASSERT_TRUE(ev.data == b + 6); /* a view into the caller's buffer, unmasked in place */

	n = frame(b, true, WS_OP_BINARY, "\xff\x00\xfe", 3);
	ASSERT_EQ((int)n, ws_parser_feed(&p, b, n, &ev));
	ASSERT_EQ(WS_EV_MESSAGE, ev.type);
	ASSERT_TRUE(ev.binary);
	ASSERT_MEMEQ("\xff\x00\xfe", ev.data, 3);

	n = frame(b, true, WS_OP_TEXT, "", 0);
	ASSERT_EQ((int)n, ws_parser_feed(&p, b, n, &ev));
	ASSERT_EQ(WS_EV_MESSAGE, ev.type);
	ASSERT_EQ(0, ev.len);

	n = frame(b, true, WS_OP_PING, "hello-ping", 10);
	ASSERT_EQ((int)n, ws_parser_feed(&p, b, n, &ev));
	ASSERT_EQ(WS_EV_PING, ev.type);
	ASSERT_MEMEQ("hello-ping", ev.data, 10);

	n = frame(b, true, WS_OP_PONG, "", 0);
	ASSERT_EQ((int)n, ws_parser_feed(&p, b, n, &ev));
	ASSERT_EQ(WS_EV_PONG, ev.type);
	ASSERT_EQ(0, ev.len);
	ws_parser_done(&p);
}

TEST(extended_lengths)
{
	struct ws_parser p = parser(1 << 20, 1 << 22);
	struct ws_event ev;
	size_t sizes[] = { 125, 126, 200, 65535, 65536, 70000 };

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t sz = sizes[k], n;
		uint8_t *pl = malloc(sz), *b = malloc(sz + 14);

		for (size_t i = 0; i < sz; i++)
			pl[i] = (uint8_t)('a' + i % 26);
		n = frame(b, true, WS_OP_TEXT, pl, sz);
		ASSERT_EQ(sz + (sz < 126 ? 6 : sz <= 0xFFFF ? 8 : 14), n);
		ASSERT_EQ(n, ws_parser_frame_need(b, n));
		ASSERT_EQ(0, ws_parser_feed(&p, b, n - 1, &ev));
		ASSERT_EQ(WS_EV_NONE, ev.type);
		ASSERT_EQ((int)n, ws_parser_feed(&p, b, n, &ev));
		ASSERT_EQ(WS_EV_MESSAGE, ev.type);
		ASSERT_EQ(sz, ev.len);
		ASSERT_MEMEQ(pl, ev.data, sz);
		free(pl);
		free(b);
	}
	ws_parser_done(&p);
}

TEST(frame_need)
{
	uint8_t b[32];
	size_t n = frame(b, true, WS_OP_TEXT, "abc", 3);

	for (size_t i = 0; i < 6; i++)
		ASSERT_EQ(0, ws_parser_frame_need(b, i));
	ASSERT_EQ(n, ws_parser_frame_need(b, 6));
	memset(b, 0, sizeof(b));
	b[0] = 0x81;
	b[1] = 0x80 | 127;
	b[4] = 0x01; /* 2^40 */
	ASSERT_EQ(0, ws_parser_frame_need(b, 13));
	ASSERT_EQ((UINT64_C(1) << 40) + 14, ws_parser_frame_need(b, 14));
}

static int feed_one(const void *bytes, size_t n, struct ws_event *ev)
{
	struct ws_parser p = parser(1 << 20, 1 << 22);
	uint8_t b[512];
	int r;

	memcpy(b, bytes, n);
	r = ws_parser_feed(&p, b, n, ev);
	ws_parser_done(&p);
	return r;
}

TEST(violations)
{
	struct ws_event ev;
	uint8_t b[512], big[200];
	size_t n;

	memset(big, 'x', sizeof(big));
	/* unmasked client frame */
	n = frame_ex(b, 0x81, false, "hi", 2, 0);
	ASSERT_EQ(-EPROTO, feed_one(b, n, &ev));
	/* RSV1, RSV2, RSV3 */
	for (uint8_t rsv = 1; rsv < 8; rsv++) {
		n = frame_ex(b, (uint8_t)(0x81 | rsv << 4), true, "hi", 2, 0);
		ASSERT_EQ(-EPROTO, feed_one(b, n, &ev));
	}
	/* unknown opcodes */
	for (uint8_t op = 3; op < 16; op++) {
		if (op >= 8 && op <= 10)
			continue;
		n = frame_ex(b, (uint8_t)(0x80 | op), true, "hi", 2, 0);
		ASSERT_EQ(-EPROTO, feed_one(b, n, &ev));
	}
	/* control frames: > 125 bytes, fragmented */
	n = frame(b, true, WS_OP_PING, big, 126);
	ASSERT_EQ(-EPROTO, feed_one(b, n, &ev));
	n = frame(b, true, WS_OP_PING, big, 125);
	ASSERT_EQ((int)n, feed_one(b, n, &ev));
	n = frame(b, false, WS_OP_PING, "p", 1);
	ASSERT_EQ(-EPROTO, feed_one(b, n, &ev));
	n = frame(b, false, WS_OP_CLOSE, "", 0);
	ASSERT_EQ(-EPROTO, feed_one(b, n, &ev));
	n = frame(b, true, WS_OP_PONG, big, 126);
	ASSERT_EQ(-EPROTO, feed_one(b, n, &ev));
	/* continuation without a start */
	n = frame(b, true, WS_OP_CONT, "x", 1);
	ASSERT_EQ(-EPROTO, feed_one(b, n, &ev));
	/* non-minimal length */
	n = frame_ex(b, 0x81, true, "hi", 2, 2);
	ASSERT_EQ(-EPROTO, feed_one(b, n, &ev));
	n = frame_ex(b, 0x81, true, "hi", 2, 8);
	ASSERT_EQ(-EPROTO, feed_one(b, n, &ev));
	/* invalid UTF-8 text; binary is not checked */
	n = frame(b, true, WS_OP_TEXT, "a\xc3(", 3);
	ASSERT_EQ(-EILSEQ, feed_one(b, n, &ev));
	n = frame(b, true, WS_OP_TEXT, "\xed\xa0\x80", 3);
	ASSERT_EQ(-EILSEQ, feed_one(b, n, &ev));
	n = frame(b, true, WS_OP_BINARY, "a\xc3(", 3);
	ASSERT_EQ((int)n, feed_one(b, n, &ev));
}

TEST(violations_refused_from_the_header_alone)
{
	struct ws_event ev;
	uint8_t b[16];

	/* only the first two bytes: no length extension, no mask key, no payload yet */
	b[0] = 0x81;
	b[1] = 0x05; /* unmasked */
	ASSERT_EQ(-EPROTO, feed_one(b, 2, &ev));
	b[0] = 0xC1; /* RSV1 */
	b[1] = 0x85;
	ASSERT_EQ(-EPROTO, feed_one(b, 2, &ev));
	b[0] = 0x83; /* opcode 3 */
	ASSERT_EQ(-EPROTO, feed_one(b, 2, &ev));
	b[0] = 0x89; /* ping with a 16-bit length */
	b[1] = 0x80 | 126;
	ASSERT_EQ(-EPROTO, feed_one(b, 2, &ev));
	b[0] = 0x09; /* fragmented ping */
	b[1] = 0x80;
	ASSERT_EQ(-EPROTO, feed_one(b, 2, &ev));
	b[0] = 0x80; /* continuation without a start */
	ASSERT_EQ(-EPROTO, feed_one(b, 2, &ev));
	/* a valid start needs more bytes */
	b[0] = 0x81;
	b[1] = 0x85;
	ASSERT_EQ(0, feed_one(b, 2, &ev));
	ASSERT_EQ(0, feed_one(b, 1, &ev));
	ASSERT_EQ(0, feed_one(b, 0, &ev));
	/* non-minimal 16-bit length, refused once the length is complete */
	b[1] = 0x80 | 126;
	b[2] = 0;
	b[3] = 5;
	ASSERT_EQ(0, feed_one(b, 3, &ev));
	ASSERT_EQ(-EPROTO, feed_one(b, 4, &ev));
}

TEST(close_frames)
{
	struct ws_event ev;
	uint8_t b[256], pl[130];
	size_t n;

	n = frame(b, true, WS_OP_CLOSE, "", 0);
	ASSERT_EQ((int)n, feed_one(b, n, &ev));
	ASSERT_EQ(WS_EV_CLOSE, ev.type);
	ASSERT_EQ(1005, ev.close_code);
	ASSERT_EQ(0, ev.len);

	n = frame(b, true, WS_OP_CLOSE, "\x03\xe8" "bye", 5);
	ASSERT_EQ((int)n, feed_one(b, n, &ev));
	ASSERT_EQ(WS_EV_CLOSE, ev.type);
	ASSERT_EQ(1000, ev.close_code);
	ASSERT_EQ(3, ev.len);
	ASSERT_MEMEQ("bye", ev.data, 3);

	n = frame(b, true, WS_OP_CLOSE, "\x03", 1);
	ASSERT_EQ(-EPROTO, feed_one(b, n, &ev));

	static const uint16_t bad[] = { 0, 999, 1004, 1005, 1006, 1015, 1016, 2999, 5000, 65535 };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint8_t c[2] = { (uint8_t)(bad[i] >> 8), (uint8_t)bad[i] };

		n = frame(b, true, WS_OP_CLOSE, c, 2);
		ASSERT_EQ(-EPROTO, feed_one(b, n, &ev));
	}
	static const uint16_t good[] = { 1000, 1001, 1002, 1003, 1007, 1011, 1014, 3000, 4999 };
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		uint8_t c[2] = { (uint8_t)(good[i] >> 8), (uint8_t)good[i] };

		n = frame(b, true, WS_OP_CLOSE, c, 2);
		ASSERT_EQ((int)n, feed_one(b, n, &ev));
		ASSERT_EQ(good[i], ev.close_code);
	}

	n = frame(b, true, WS_OP_CLOSE, "\x03\xe8\xff", 3);
	ASSERT_EQ(-EILSEQ, feed_one(b, n, &ev));

	pl[0] = 0x03;
	pl[1] = 0xe8;
	memset(pl + 2, 'r', 124);
	n = frame(b, true, WS_OP_CLOSE, pl, 126);
	ASSERT_EQ(-EPROTO, feed_one(b, n, &ev));
}

TEST(fragmented_with_interleaved_control)
{
	struct ws_parser p = parser(1 << 20, 1 << 22);
	struct ws_event ev;
	uint8_t b[1024];
	size_t n = 0, off = 0;
	int r;

	/* "Hé" split inside the two-byte sequence, then a ping, more, a pong, the end */
	n += frame(b + n, false, WS_OP_TEXT, "H\xc3", 2);
	n += frame(b + n, true, WS_OP_PING, "ping-between-fragments", 22);
	n += frame(b + n, false, WS_OP_CONT, "\xa9llo ", 5);
	n += frame(b + n, true, WS_OP_PONG, "", 0);
	n += frame(b + n, false, WS_OP_CONT, "", 0);
	n += frame(b + n, true, WS_OP_CONT, "world", 5);
	n += frame(b + n, true, WS_OP_BINARY, "next", 4);

	static const enum ws_event_type want[] = { WS_EV_NONE, WS_EV_PING,    WS_EV_NONE,
						   WS_EV_PONG, WS_EV_NONE,    WS_EV_MESSAGE,
						   WS_EV_MESSAGE };
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		r = ws_parser_feed(&p, b + off, n - off, &ev);
		ASSERT_TRUE(r > 0);
		ASSERT_EQ(want[i], ev.type);
		if (i == 1)
			ASSERT_MEMEQ("ping-between-fragments", ev.data, 22);
		if (i == 5) {
			ASSERT_TRUE(!ev.binary);
			ASSERT_EQ(12, ev.len);
			ASSERT_MEMEQ("H\xc3\xa9llo world", ev.data, 12);
		}
		if (i == 6) {
			ASSERT_TRUE(ev.binary);
			ASSERT_MEMEQ("next", ev.data, 4);
		}
		off += (size_t)r;
	}
	ASSERT_EQ(n, off);
	ASSERT_EQ(0, ws_parser_feed(&p, b + off, 0, &ev));
	ws_parser_done(&p);
	ws_parser_done(&p);
}

TEST(fragmentation_violations)
{
	struct ws_parser p = parser(1 << 20, 1 << 22);
	struct ws_event ev;
	uint8_t b[256];
	size_t n, m;

	/* a new data frame inside a fragmented message */
	n = frame(b, false, WS_OP_TEXT, "a", 1);
	ASSERT_EQ((int)n, ws_parser_feed(&p, b, n, &ev));
	m = frame(b, true, WS_OP_TEXT, "b", 1);
	ASSERT_EQ(-EPROTO, ws_parser_feed(&p, b, m, &ev));
	m = frame(b, true, WS_OP_BINARY, "b", 1);
	ASSERT_EQ(-EPROTO, ws_parser_feed(&p, b, m, &ev));
	ws_parser_done(&p);

	/* invalid UTF-8 only visible once the message is complete */
	p = parser(1 << 20, 1 << 22);
	n = frame(b, false, WS_OP_TEXT, "a\xc3", 2);
	ASSERT_EQ((int)n, ws_parser_feed(&p, b, n, &ev));
	n = frame(b, true, WS_OP_CONT, "(", 1);
	ASSERT_EQ(-EILSEQ, ws_parser_feed(&p, b, n, &ev));
	ws_parser_done(&p);

	/* a fragmented binary message is not UTF-8 checked */
	p = parser(1 << 20, 1 << 22);
	n = frame(b, false, WS_OP_BINARY, "a\xc3", 2);
	ASSERT_EQ((int)n, ws_parser_feed(&p, b, n, &ev));
	n = frame(b, true, WS_OP_CONT, "(", 1);
	ASSERT_EQ((int)n, ws_parser_feed(&p, b, n, &ev));
	ASSERT_EQ(WS_EV_MESSAGE, ev.type);
	ASSERT_TRUE(ev.binary);
	ws_parser_done(&p);
}

TEST(limits)
{
	struct ws_parser p = parser(100, 250);
	struct ws_event ev;
	uint8_t b[512], pl[128];
	size_t n;

	memset(pl, 'x', sizeof(pl));
	n = frame(b, true, WS_OP_TEXT, pl, 100);
	ASSERT_EQ((int)n, ws_parser_feed(&p, b, n, &ev));
	n = frame(b, true, WS_OP_TEXT, pl, 101);
	ASSERT_EQ(-EMSGSIZE, ws_parser_feed(&p, b, n, &ev));
	/* refused as soon as the length is known, without mask key or payload */
	ASSERT_EQ(-EMSGSIZE, ws_parser_feed(&p, b, 2, &ev));
	ASSERT_EQ(0, ws_parser_feed(&p, b, 1, &ev));
	ws_parser_done(&p);

	/* a huge declared length is refused from its length field (17 MiB, 16 MiB limit) */
	memset(b, 0, 14);
	b[0] = 0x82;
	b[1] = 0x80 | 127;
	b[6] = 0x01;
	b[7] = 0x10;
	p = parser(16 << 20, 64 << 20);
	ASSERT_EQ(0, ws_parser_feed(&p, b, 9, &ev));
	ASSERT_EQ(-EMSGSIZE, ws_parser_feed(&p, b, 10, &ev));
	b[6] = 0x00; /* 1 MiB: fine, waits for the payload */
	ASSERT_EQ(0, ws_parser_feed(&p, b, 14, &ev));
	ASSERT_EQ((UINT64_C(1) << 20) + 14, ws_parser_frame_need(b, 14));
	ws_parser_done(&p);

	/* message limit across fragments: 100 + 100 + 50 fits, one more byte does not */
	p = parser(100, 250);
	n = frame(b, false, WS_OP_TEXT, pl, 100);
	ASSERT_EQ((int)n, ws_parser_feed(&p, b, n, &ev));
	n = frame(b, false, WS_OP_CONT, pl, 100);
	ASSERT_EQ((int)n, ws_parser_feed(&p, b, n, &ev));
	n = frame(b, true, WS_OP_CONT, pl, 50);
	ASSERT_EQ((int)n, ws_parser_feed(&p, b, n, &ev));
	ASSERT_EQ(WS_EV_MESSAGE, ev.type);
	ASSERT_EQ(250, ev.len);

	n = frame(b, false, WS_OP_TEXT, pl, 100);
	ASSERT_EQ((int)n, ws_parser_feed(&p, b, n, &ev));
	n = frame(b, false, WS_OP_CONT, pl, 100);
	ASSERT_EQ((int)n, ws_parser_feed(&p, b, n, &ev));
	n = frame(b, true, WS_OP_CONT, pl, 51);
	ASSERT_EQ(-EMSGSIZE, ws_parser_feed(&p, b, 8, &ev));
	ws_parser_done(&p);

	/* an unfragmented frame above the message limit */
	p = parser(1000, 50);
	n = frame(b, true, WS_OP_BINARY, pl, 51);
	ASSERT_EQ(-EMSGSIZE, ws_parser_feed(&p, b, n, &ev));
	ws_parser_done(&p);
}

TEST(close_code_for_error)
{
	ASSERT_EQ(1002, ws_close_code_for_error(-EPROTO));
	ASSERT_EQ(1009, ws_close_code_for_error(-EMSGSIZE));
	ASSERT_EQ(1007, ws_close_code_for_error(-EILSEQ));
	ASSERT_EQ(1011, ws_close_code_for_error(-ENOMEM));
}

/* A valid stream of frames and the events it must produce. */
static size_t build_stream(uint8_t *b, char *events)
{
	static uint8_t big[300];
	size_t n = 0;

	memset(big, 'z', sizeof(big));
	n += frame(b + n, true, WS_OP_TEXT, "{\"id\":1}", 8);
	n += frame(b + n, false, WS_OP_TEXT, "{\"id\":", 6);
	n += frame(b + n, true, WS_OP_PING, "pp", 2);
	n += frame(b + n, true, WS_OP_CONT, "2}", 2);
	n += frame(b + n, true, WS_OP_BINARY, big, sizeof(big));
	n += frame(b + n, true, WS_OP_PONG, "", 0);
	n += frame(b + n, true, WS_OP_CLOSE, "\x03\xe8ok", 4);
	strcpy(events, "MPMMOC");
	return n;
}

static char ev_letter(const struct ws_event *ev)
{
	switch (ev->type) {
	case WS_EV_MESSAGE:
		return 'M';
	case WS_EV_PING:
		return 'P';
	case WS_EV_PONG:
		return 'O';
	case WS_EV_CLOSE:
		return 'C';
	default:
		return 0;
	}
}

TEST(byte_by_byte)
{
	struct ws_parser p = parser(1 << 20, 1 << 22);
	uint8_t b[1024];
	char want[16], got[16] = "";
	size_t n = build_stream(b, want), off = 0, ng = 0;

	for (size_t have = 0; have <= n; have++) {
		for (;;) {
			struct ws_event ev;
			int r = ws_parser_feed(&p, b + off, have - off, &ev);

			ASSERT_TRUE(r >= 0);
			if (r == 0) {
				ASSERT_EQ(WS_EV_NONE, ev.type);
				break;
			}
			off += (size_t)r;
			if (ev_letter(&ev))
				got[ng++] = ev_letter(&ev);
			if (ev.type == WS_EV_MESSAGE && ng == 3)
				ASSERT_MEMEQ("{\"id\":2}", ev.data, 8);
		}
	}
	ASSERT_EQ(n, off);
	ASSERT_STREQ(want, got);
	ws_parser_done(&p);
}

/* Runs a whole buffer through a fresh parser; every outcome must be a defined one. */
static void run_mutant(const uint8_t *src, size_t n)
{
	struct ws_parser p = parser(4096, 8192);
	uint8_t b[1024];
	size_t off = 0;

	memcpy(b, src, n);
	for (;;) {
		struct ws_event ev;
		int r = ws_parser_feed(&p, b + off, n - off, &ev);

		if (r < 0) {
			ASSERT_TRUE(r == -EPROTO || r == -EMSGSIZE || r == -EILSEQ);
			ASSERT_NE(1011, ws_close_code_for_error(r));
			break;
		}
		if (r == 0)
			break;
		ASSERT_TRUE((size_t)r <= n - off);
		if (ev.len > 0) {
			bool in_buf = ev.data >= b + off && ev.data + ev.len <= b + off + (size_t)r;
			bool in_msg = ev.data == p._msg && ev.len <= p._msg_cap;

			ASSERT_TRUE(in_buf || in_msg);
		}
		off += (size_t)r;
	}
	ws_parser_done(&p);
}

TEST(truncation_and_bitflip_sweep)
{
	uint8_t b[1024], m[1024];
	char want[16];
	size_t n = build_stream(b, want);

	for (size_t len = 0; len <= n; len++)
		run_mutant(b, len);
	for (size_t i = 0; i < n; i++) {
		for (int bit = 0; bit < 8; bit++) {
			memcpy(m, b, n);
			m[i] ^= (uint8_t)(1u << bit);
			run_mutant(m, n);
		}
	}
}

TEST_MAIN()
