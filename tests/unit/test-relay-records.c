/* SPDX-License-Identifier: MIT */
/*
 * A relay stream's plaintext side (src/remote/codec/records.h): framing into 60 KiB
 * records and back, across every boundary; the 0 and 64 MiB limits; sequence
 * numbers that never wrap; ordering with duplicates, gaps and its bounds.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "records.h"
#include "tests.h"

struct sink {
	size_t n;
	size_t lens[64];
	uint8_t *all;
	size_t all_len;
};

static int collect(void *ctx, const uint8_t *msg, size_t len)
{
	struct sink *s = ctx;

	s->lens[s->n++] = len;
	s->all = realloc(s->all, s->all_len + len);
	memcpy(s->all + s->all_len, msg, len);
	s->all_len += len;
	return 0;
}

static uint8_t *pattern(size_t n, unsigned seed)
{
	uint8_t *p = malloc(n ? n : 1);

	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 31 + seed);
	return p;
}

/* Frames msg, feeds the records (optionally re-cut into pieces of `piece`) and checks the result. */
static void round_trip(size_t len, size_t piece)
{
	static uint8_t rec[RELAY_RECORD_MAX];
	struct relay_msg_writer w;
	struct relay_msg_reader r = { 0 };
	struct sink s = { 0 };
	uint8_t *msg = pattern(len, 7);
	size_t n, records = 0;

	ASSERT_EQ(0, relay_msg_writer_init(&w, msg, len));
	while ((n = relay_msg_writer_next(&w, rec)) > 0) {
		ASSERT_TRUE(n <= RELAY_RECORD_MAX);
		records++;
		for (size_t off = 0; off < n; off += piece)
			ASSERT_EQ(0, relay_msg_reader_feed(&r, rec + off, n - off < piece ? n - off : piece,
							   collect, &s));
	}
	ASSERT_EQ((len + 4 + RELAY_RECORD_MAX - 1) / RELAY_RECORD_MAX, records);
	ASSERT_EQ(1, (int)s.n);
	ASSERT_EQ(len, s.lens[0]);
	ASSERT_MEMEQ(msg, s.all, len);
	ASSERT_EQ(0, (int)r.buf.len);
	relay_msg_reader_done(&r);
	free(s.all);
	free(msg);
}

TEST(framing_round_trips)
{
	static const size_t sizes[] = { 1, 2, RELAY_RECORD_MAX - 5, RELAY_RECORD_MAX - 4,
					RELAY_RECORD_MAX - 3, 2 * RELAY_RECORD_MAX - 4,
					2 * RELAY_RECORD_MAX, 1000000 };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		round_trip(sizes[i], RELAY_RECORD_MAX);
		round_trip(sizes[i], 3); /* the length prefix split across records too */
	}
}

TEST(first_record_bytes)
{
	uint8_t rec[RELAY_RECORD_MAX];
	struct relay_msg_writer w;

	ASSERT_EQ(0, relay_msg_writer_init(&w, (const uint8_t *)"{}", 2));
	ASSERT_EQ(6, (int)relay_msg_writer_next(&w, rec));
	ASSERT_MEMEQ("\0\0\0\2{}", rec, 6);
	ASSERT_EQ(0, (int)relay_msg_writer_next(&w, rec));
}

TEST(records_holding_two_messages)
{
	static const uint8_t two[] = "\0\0\0\3abc\0\0\0\2de\0\0";
	struct relay_msg_reader r = { 0 };
	struct sink s = { 0 };

	ASSERT_EQ(0, relay_msg_reader_feed(&r, two, sizeof(two) - 1, collect, &s));
	ASSERT_EQ(2, (int)s.n);
	ASSERT_MEMEQ("abcde", s.all, 5);
	ASSERT_EQ(2, (int)r.buf.len); /* the start of a third length */
	ASSERT_EQ(0, relay_msg_reader_feed(&r, (const uint8_t *)"\0\1z", 3, collect, &s));
	ASSERT_EQ(3, (int)s.n);
	ASSERT_MEMEQ("abcdez", s.all, 6);
	relay_msg_reader_done(&r);
	free(s.all);
}

TEST(length_limits)
{
	struct relay_msg_writer w;
	struct relay_msg_reader r = { 0 };
	struct sink s = { 0 };
	static uint8_t big[RELAY_RECORD_MAX + 1];

	ASSERT_EQ(-EMSGSIZE, relay_msg_writer_init(&w, big, 0));
	ASSERT_EQ(-EMSGSIZE, relay_msg_writer_init(&w, big, (size_t)RELAY_MESSAGE_MAX + 1));
	ASSERT_EQ(0, relay_msg_writer_init(&w, big, RELAY_MESSAGE_MAX));
	/* Receiver: a zero length, a length over 64 MiB, a record over 60 KiB. */
	ASSERT_EQ(-EBADMSG, relay_msg_reader_feed(&r, (const uint8_t *)"\0\0\0\0", 4, collect, &s));
	relay_msg_reader_done(&r);
	ASSERT_EQ(-EBADMSG, relay_msg_reader_feed(&r, (const uint8_t *)"\4\0\0\1", 4, collect, &s));
	relay_msg_reader_done(&r);
	ASSERT_EQ(-EMSGSIZE, relay_msg_reader_feed(&r, big, sizeof(big), collect, &s));
	relay_msg_reader_done(&r);
	ASSERT_EQ(0, (int)s.n);
}

/* The framer the carried transport runs (conn-carried.c): its max is --max-message-bytes. */
TEST(peek_and_prefix)
{
	static const struct {
		const char *in;
		size_t avail, max;
		int ret;
		uint32_t len; /* when the prefix is there */
	} cases[] = {
		{ "", 0, 16, 0, 0 },
		{ "\0\0\0", 3, 16, 0, 0 },
		{ "\0\0\0\2{", 5, 16, 0, 2 },    /* prefix whole, message not */
		{ "\0\0\0\2{}", 6, 16, 1, 2 },
		{ "\0\0\0\2{}\0", 7, 16, 1, 2 }, /* the next message's start is left alone */
		{ "\0\0\0\0", 4, 16, -EBADMSG, 0 },
		{ "\0\0\0\21", 4, 16, -EBADMSG, 17 }, /* over max, refused before its bytes come */
		{ "\0\0\0\20", 4, 16, 0, 16 },
	};
	uint8_t pre[RELAY_MSG_PREFIX];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint32_t n = 0;

		ASSERT_EQ(cases[i].ret,
			  relay_msg_peek((const uint8_t *)cases[i].in, cases[i].avail, cases[i].max, &n));
		ASSERT_EQ(cases[i].len, n);
	}
	relay_msg_prefix(pre, 0x01020304);
	ASSERT_MEMEQ("\1\2\3\4", pre, 4);
	relay_msg_prefix(pre, 2);
	ASSERT_MEMEQ("\0\0\0\2", pre, 4);
}

TEST(reassembly_buffer_bound)
{
	static uint8_t rec[RELAY_RECORD_MAX];
	struct relay_msg_reader r = { 0 };
	struct sink s = { 0 };
	size_t fed = 0;
	int ret = 0;

	/* A 64 MiB message fits exactly (4 + 64 MiB); one byte more does not. */
	rec[0] = 4; /* length 0x04000000 = 64 MiB */
	while (ret == 0 && fed < 4 + (size_t)RELAY_MESSAGE_MAX) {
		size_t n = 4 + (size_t)RELAY_MESSAGE_MAX - fed;

		n = n < RELAY_RECORD_MAX ? n : RELAY_RECORD_MAX;
		ret = relay_msg_reader_feed(&r, rec, n, collect, &s);
		rec[0] = 0;
		fed += n;
	}
	ASSERT_EQ(0, ret);
	ASSERT_EQ(1, (int)s.n);
	ASSERT_EQ((size_t)RELAY_MESSAGE_MAX, s.lens[0]);
	relay_msg_reader_done(&r);
	free(s.all);
}

TEST(sequence_never_wraps)
{
	uint32_t next = 0, got;

	ASSERT_EQ(0, relay_seq_take(&next, &got));
	ASSERT_EQ(0u, got);
	ASSERT_EQ(0, relay_seq_take(&next, &got));
	ASSERT_EQ(1u, got);
	next = UINT32_MAX - 1;
	ASSERT_EQ(0, relay_seq_take(&next, &got));
	ASSERT_EQ(UINT32_MAX - 1, got);
	ASSERT_EQ(-ERANGE, relay_seq_take(&next, &got));
}

struct order_sink {
	char got[256];
	size_t n;
};

static int order_collect(void *ctx, const uint8_t *data, size_t len)
{
	struct order_sink *s = ctx;

	memcpy(s->got + s->n, data, len);
	s->n += len;
	return 0;
}

TEST(ordering_gaps_and_duplicates)
{
	struct relay_order o = { 0 };
	struct order_sink s = { 0 };

	ASSERT_EQ(0, relay_order_push(&o, 2, (const uint8_t *)"c", 1, order_collect, &s));
	ASSERT_EQ(0, relay_order_push(&o, 1, (const uint8_t *)"b", 1, order_collect, &s));
	ASSERT_EQ(0, (int)s.n);
	ASSERT_EQ(0, relay_order_push(&o, 2, (const uint8_t *)"X", 1, order_collect, &s)); /* dup */
	ASSERT_EQ(0, relay_order_push(&o, 0, (const uint8_t *)"a", 1, order_collect, &s));
	ASSERT_EQ(3, (int)s.n);
	ASSERT_MEMEQ("abc", s.got, 3);
	ASSERT_EQ(0, relay_order_push(&o, 1, (const uint8_t *)"Y", 1, order_collect, &s)); /* late dup */
	ASSERT_EQ(0, relay_order_push(&o, 3, (const uint8_t *)"d", 1, order_collect, &s));
	ASSERT_MEMEQ("abcd", s.got, 4);
	ASSERT_EQ(4u, o.next_seq);
	relay_order_done(&o);
}

TEST(ordering_bounds)
{
	static uint8_t chunk[RELAY_REORDER_BYTES];
	struct relay_order o = { 0 };
	struct order_sink s = { 0 };

	/* Distance: next_seq + 64 is buffered, + 65 is fatal. */
	ASSERT_EQ(0, relay_order_push(&o, 64, (const uint8_t *)"x", 1, order_collect, &s));
	ASSERT_EQ(-ERANGE, relay_order_push(&o, 65, (const uint8_t *)"x", 1, order_collect, &s));
	relay_order_done(&o);
	/* Frames: 64 buffered at most. */
	for (uint32_t i = 1; i <= 64; i++)
		ASSERT_EQ(0, relay_order_push(&o, i, (const uint8_t *)"x", 1, order_collect, &s));
	relay_order_done(&o);
	o.next_seq = 100;
	for (uint32_t i = 101; i <= 164; i++)
		ASSERT_EQ(0, relay_order_push(&o, i, (const uint8_t *)"x", 1, order_collect, &s));
	relay_order_done(&o);
	/* Bytes: 1 MiB buffered at most. */
	ASSERT_EQ(0, relay_order_push(&o, 1, chunk, sizeof(chunk), order_collect, &s));
	ASSERT_EQ(-ENOBUFS, relay_order_push(&o, 2, chunk, 1, order_collect, &s));
	relay_order_done(&o);
	/* next_seq never wraps. */
	o.next_seq = UINT32_MAX;
	ASSERT_EQ(-EOVERFLOW, relay_order_push(&o, UINT32_MAX, (const uint8_t *)"x", 1, order_collect, &s));
	relay_order_done(&o);
}

TEST_MAIN()
