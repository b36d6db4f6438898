/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for src/remote/codec/relay-frame: round trips of every body, encodings
 * computed by hand (prost's: tag order, proto3 defaults omitted), and every
 * rejection of RELAY.md §2.1.
 */
#include <errno.h>
#include <stdlib.h>

#include "relay-frame.h"
#include "tests.h"

#define SID "0b5c3f2e-6a61-4d8e-9a57-3c1d2e4f5a6b"

/* Bytes written as a string literal, with their length. */
#define LIT(s) (const uint8_t *)(s), sizeof(s) - 1

static void check_encodes_to(const struct relay_frame *f, const uint8_t *want, size_t want_len)
{
	uint8_t buf[512], *heap = NULL;
	size_t heap_len = 0;

	ASSERT_EQ(want_len, relay_frame_encoded_size(f));
	ASSERT_EQ(want_len, relay_frame_encode(f, buf, sizeof(buf)));
	ASSERT_MEMEQ(want, buf, want_len);
	ASSERT_EQ(-ENOBUFS, relay_frame_encode(f, buf, want_len - 1));
	ASSERT_EQ(0, relay_frame_encode_alloc(f, &heap, &heap_len));
	ASSERT_EQ(want_len, heap_len);
	ASSERT_MEMEQ(want, heap, want_len);
	free(heap);
}

static void check_same(const struct relay_frame *a, const struct relay_frame *b)
{
	ASSERT_EQ(a->version, b->version);
	ASSERT_EQ(a->stream_id_len, b->stream_id_len);
	ASSERT_MEMEQ(a->stream_id, b->stream_id, a->stream_id_len);
	ASSERT_EQ(a->ack, b->ack);
	ASSERT_EQ(a->ack_bits, b->ack_bits);
	ASSERT_EQ(a->kind, b->kind);
	switch (a->kind) {
	case RELAY_FRAME_DATA:
		ASSERT_EQ(a->data.seq, b->data.seq);
		ASSERT_EQ(a->data.segment_index, b->data.segment_index);
		ASSERT_EQ(a->data.segment_count, b->data.segment_count);
		ASSERT_EQ(a->data.payload_len, b->data.payload_len);
		ASSERT_MEMEQ(a->data.payload, b->data.payload, a->data.payload_len);
		break;
	case RELAY_FRAME_RESUME:
		ASSERT_EQ(a->resume.next_seq, b->resume.next_seq);
		break;
	case RELAY_FRAME_RESET:
		ASSERT_EQ(a->reset.reason_len, b->reset.reason_len);
		ASSERT_MEMEQ(a->reset.reason, b->reset.reason, a->reset.reason_len);
		break;
	case RELAY_FRAME_HANDSHAKE:
		ASSERT_EQ(a->handshake.payload_len, b->handshake.payload_len);
		ASSERT_MEMEQ(a->handshake.payload, b->handshake.payload, a->handshake.payload_len);
		break;
	default:
		break;
	}
	ASSERT_EQ(a->has_traceparent, b->has_traceparent);
	ASSERT_EQ(a->has_tracestate, b->has_tracestate);
	ASSERT_EQ(a->traceparent_len, b->traceparent_len);
	ASSERT_EQ(a->tracestate_len, b->tracestate_len);
	if (a->has_traceparent)
		ASSERT_MEMEQ(a->traceparent, b->traceparent, a->traceparent_len);
	if (a->has_tracestate)
		ASSERT_MEMEQ(a->tracestate, b->tracestate, a->tracestate_len);
}

/* Encodes f, decodes the bytes, compares, and re-encodes to the same bytes. */
static void check_round_trip(const struct relay_frame *f)
{
	uint8_t *enc = NULL, *enc2 = NULL;
	size_t len = 0, len2 = 0;
	enum relay_frame_error e = RELAY_FRAME_ERR_MAX;
	struct relay_frame d;

	ASSERT_EQ(RELAY_FRAME_OK, relay_frame_check(f));
	ASSERT_EQ(0, relay_frame_encode_alloc(f, &enc, &len));
	ASSERT_EQ(0, relay_frame_decode(enc, len, &d, &e));
	ASSERT_EQ(RELAY_FRAME_OK, e);
	check_same(f, &d);
	/* Decoded strings are NUL-terminated copies. */
	ASSERT_EQ(0, d.stream_id[d.stream_id_len]);
	ASSERT_TRUE((const uint8_t *)d.stream_id < enc || (const uint8_t *)d.stream_id >= enc + len);
	ASSERT_EQ(0, relay_frame_encode_alloc(&d, &enc2, &len2));
	ASSERT_EQ(len, len2);
	ASSERT_MEMEQ(enc, enc2, len);
	relay_frame_done(&d);
	ASSERT_TRUE(d.mem == NULL);
	free(enc);
	free(enc2);
}

static void check_decode_err(const uint8_t *buf, size_t len, int want_errno, enum relay_frame_error want)
{
	enum relay_frame_error e = RELAY_FRAME_OK;
	struct relay_frame f;

	ASSERT_EQ(want_errno, relay_frame_decode(buf, len, &f, &e));
	ASSERT_EQ(want, e);
	ASSERT_TRUE(f.mem == NULL && f.stream_id == NULL);
}

static void check_decode_ok(const uint8_t *buf, size_t len, struct relay_frame *ret)
{
	enum relay_frame_error e = RELAY_FRAME_ERR_MAX;

	ASSERT_EQ(0, relay_frame_decode(buf, len, ret, &e));
	ASSERT_EQ(RELAY_FRAME_OK, e);
}

TEST(round_trip_every_body)
{
	static const uint8_t payload[] = { 0, 1, 2, 0xff, 0 };
	struct relay_frame f;

	relay_frame_init_data(&f, SID, strlen(SID), 0, payload, sizeof(payload));
	check_round_trip(&f);
	relay_frame_init_data(&f, SID, strlen(SID), UINT32_MAX - 1, payload, 1);
	f.has_traceparent = true;
	f.traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
	f.traceparent_len = strlen(f.traceparent);
	f.has_tracestate = true;
	f.tracestate = "";
	check_round_trip(&f);

	relay_frame_init(&f, RELAY_FRAME_ACK, SID, strlen(SID));
	f.ack = 7;
	f.ack_bits = 0xdeadbeef;
	check_round_trip(&f);
	relay_frame_init(&f, RELAY_FRAME_RESUME, SID, strlen(SID));
	check_round_trip(&f);
	f.resume.next_seq = 12345;
	check_round_trip(&f);
	relay_frame_init_reset(&f, SID, strlen(SID), "noise_relay_protocol_error", 26);
	check_round_trip(&f);
	relay_frame_init(&f, RELAY_FRAME_HEARTBEAT, "x", 1);
	check_round_trip(&f);
	relay_frame_init_handshake(&f, SID, strlen(SID), payload, sizeof(payload));
	check_round_trip(&f);
	/* A NUL inside a string keeps its length (protobuf-c strings would stop there). */
	relay_frame_init_reset(&f, "a\0b", 3, "x\0y", 3);
	check_round_trip(&f);
}

TEST(round_trip_large_payload)
{
	size_t n = RELAY_FRAME_MAX_MESSAGE - 64;
	uint8_t *p = malloc(n);
	struct relay_frame f;

	ASSERT_TRUE(p);
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 7);
	relay_frame_init_data(&f, SID, strlen(SID), 3, p, n);
	check_round_trip(&f);
	relay_frame_init_handshake(&f, SID, strlen(SID), p, n);
	check_round_trip(&f);
	/* Too big to send as one WebSocket message. */
	relay_frame_init_data(&f, SID, strlen(SID), 3, p, n + 64);
	ASSERT_EQ(-EMSGSIZE, relay_frame_encoded_size(&f));
	ASSERT_EQ(-EMSGSIZE, relay_frame_encode_alloc(&f, &(uint8_t *){ NULL }, &(size_t){ 0 }));
	free(p);
}

/* Bytes computed by hand: key = tag << 3 | wire type; varints little-endian base 128. */
TEST(encodings_by_hand)
{
	struct relay_frame f;

	/* version 1 (08 01), stream_id "s1" (12 02 ..), data (2a 06): segment_count 1 (18 01), payload "hi" (22 02 ..). */
	relay_frame_init_data(&f, "s1", 2, 0, LIT("hi"));
	check_encodes_to(&f, LIT("\x08\x01\x12\x02s1\x2a\x06\x18\x01\x22\x02hi"));
	/* seq 300 = ac 02. */
	relay_frame_init_data(&f, "s1", 2, 300, LIT("hi"));
	check_encodes_to(&f, LIT("\x08\x01\x12\x02s1\x2a\x09\x08\xac\x02\x18\x01\x22\x02hi"));
	/* Empty bodies are written as tag + length 0. */
	relay_frame_init(&f, RELAY_FRAME_ACK, "s1", 2);
	check_encodes_to(&f, LIT("\x08\x01\x12\x02s1\x32\x00"));
	relay_frame_init(&f, RELAY_FRAME_RESUME, "s1", 2);
	check_encodes_to(&f, LIT("\x08\x01\x12\x02s1\x3a\x00"));
	relay_frame_init(&f, RELAY_FRAME_HEARTBEAT, "s1", 2);
	check_encodes_to(&f, LIT("\x08\x01\x12\x02s1\x4a\x00"));
	/* resume next_seq 5 (08 05); ack 5 (18 05), ack_bits 2^31 (20 80 80 80 80 08). */
	relay_frame_init(&f, RELAY_FRAME_RESUME, "s1", 2);
	f.resume.next_seq = 5;
	f.ack = 5;
	f.ack_bits = 0x80000000u;
	check_encodes_to(&f, LIT("\x08\x01\x12\x02s1\x18\x05\x20\x80\x80\x80\x80\x08\x3a\x02\x08\x05"));
	relay_frame_init_reset(&f, "s1", 2, "x", 1);
	check_encodes_to(&f, LIT("\x08\x01\x12\x02s1\x42\x03\x0a\x01x"));
	relay_frame_init_handshake(&f, "s1", 2, LIT("\x01\x02\x03"));
	check_encodes_to(&f, LIT("\x08\x01\x12\x02s1\x52\x05\x0a\x03\x01\x02\x03"));
	/* A present trace field is written even when empty (5a 00); tracestate "a" (62 01 61). */
	relay_frame_init_data(&f, "s1", 2, 0, LIT("hi"));
	f.has_traceparent = true;
	f.traceparent = "";
	f.has_tracestate = true;
	f.tracestate = "a";
	f.tracestate_len = 1;
	check_encodes_to(&f, LIT("\x08\x01\x12\x02s1\x2a\x06\x18\x01\x22\x02hi\x5a\x00\x62\x01" "a"));
	/* A 128-byte stream id: length 80 01. */
	{
		char sid[RELAY_FRAME_MAX_STREAM_ID];
		uint8_t want[4 + 3 + RELAY_FRAME_MAX_STREAM_ID + 2];

		memset(sid, 'a', sizeof(sid));
		relay_frame_init(&f, RELAY_FRAME_HEARTBEAT, sid, sizeof(sid));
		memcpy(want, "\x08\x01\x12\x80\x01", 5);
		memset(want + 5, 'a', sizeof(sid));
		memcpy(want + 5 + sizeof(sid), "\x4a\x00", 2);
		check_encodes_to(&f, want, 5 + sizeof(sid) + 2);
	}
}

TEST(decode_by_hand)
{
	struct relay_frame f;

	/* Field order does not matter; unknown fields (13 varint, 15 bytes, 16 fixed32, 17 fixed64) are skipped. */
	check_decode_ok(LIT("\x2a\x06\x22\x02hi\x18\x01\x68\x07\x12\x02s1\x7a\x01\x00\x08\x01"
			    "\x85\x01\x01\x02\x03\x04\x89\x01\x01\x02\x03\x04\x05\x06\x07\x08"),
			&f);
	ASSERT_EQ(RELAY_FRAME_DATA, f.kind);
	ASSERT_EQ(2, f.stream_id_len);
	ASSERT_STREQ("s1", f.stream_id);
	ASSERT_EQ(2, f.data.payload_len);
	ASSERT_MEMEQ("hi", f.data.payload, 2);
	ASSERT_TRUE(!f.has_traceparent && !f.has_tracestate);
	relay_frame_done(&f);
	/* A later scalar wins; a later body replaces an earlier one (here: data, then reset). */
	check_decode_ok(LIT("\x08\x02\x08\x01\x12\x01q\x12\x02s1\x2a\x06\x18\x01\x22\x02hi\x42\x03\x0a\x01x"), &f);
	ASSERT_EQ(1, f.version);
	ASSERT_STREQ("s1", f.stream_id);
	ASSERT_EQ(RELAY_FRAME_RESET, f.kind);
	ASSERT_STREQ("x", f.reset.reason);
	relay_frame_done(&f);
	/* uint32 fields take a longer varint modulo 2^32, as prost's `as u32`. */
	check_decode_ok(LIT("\x08\x81\x80\x80\x80\x10\x12\x02s1\x4a\x00"), &f);
	ASSERT_EQ(1, f.version);
	relay_frame_done(&f);
	/* A resume with next_seq 0 from the harness (§4.1): 3a 00. */
	check_decode_ok(LIT("\x08\x01\x12\x02s1\x3a\x00"), &f);
	ASSERT_EQ(RELAY_FRAME_RESUME, f.kind);
	ASSERT_EQ(0, f.resume.next_seq);
	relay_frame_done(&f);
	relay_frame_done(NULL);
}

TEST(reject_size_and_malformed)
{
	uint8_t *big = calloc(1, RELAY_FRAME_MAX_MESSAGE + 1);

	ASSERT_TRUE(big);
	check_decode_err(big, RELAY_FRAME_MAX_MESSAGE + 1, -EMSGSIZE, RELAY_FRAME_ERR_TOO_BIG);
	free(big);
	/* Truncated varint, truncated length, a known field with the wrong wire type, a group, tag 0. */
	check_decode_err(LIT("\x08"), -EBADMSG, RELAY_FRAME_ERR_MALFORMED);
	check_decode_err(LIT("\x08\x01\x12\x05s1"), -EBADMSG, RELAY_FRAME_ERR_MALFORMED);
	check_decode_err(LIT("\x0a\x01\x01\x12\x02s1\x4a\x00"), -EBADMSG, RELAY_FRAME_ERR_MALFORMED);
	check_decode_err(LIT("\x08\x01\x12\x02s1\x4a\x00\x6b\x6c"), -EBADMSG, RELAY_FRAME_ERR_MALFORMED);
	check_decode_err(LIT("\x00\x00"), -EBADMSG, RELAY_FRAME_ERR_MALFORMED);
	/* A body that is not a valid message inside. */
	check_decode_err(LIT("\x08\x01\x12\x02s1\x2a\x02\x08\x80"), -EBADMSG, RELAY_FRAME_ERR_MALFORMED);
	/* Strings that are not UTF-8: stream_id, reset reason, trace fields. */
	check_decode_err(LIT("\x08\x01\x12\x02s\xff\x4a\x00"), -EBADMSG, RELAY_FRAME_ERR_NOT_UTF8);
	check_decode_err(LIT("\x08\x01\x12\x02s1\x42\x03\x0a\x01\xc0"), -EBADMSG, RELAY_FRAME_ERR_NOT_UTF8);
	check_decode_err(LIT("\x08\x01\x12\x02s1\x4a\x00\x5a\x02\xed\xa0"), -EBADMSG, RELAY_FRAME_ERR_NOT_UTF8);
	check_decode_err(LIT("\x08\x01\x12\x02s1\x4a\x00\x62\x01\x80"), -EBADMSG, RELAY_FRAME_ERR_NOT_UTF8);
	/* Non-UTF-8 bytes are fine in payloads. */
	{
		struct relay_frame f;

		check_decode_ok(LIT("\x08\x01\x12\x02s1\x52\x03\x0a\x01\xff"), &f);
		relay_frame_done(&f);
	}
}

TEST(reject_rules)
{
	char sid[RELAY_FRAME_MAX_STREAM_ID + 8], reason[RELAY_FRAME_MAX_RESET_REASON + 1];
	uint8_t *enc = NULL;
	size_t len = 0;
	struct relay_frame f, d;

	/* Rule 1: version 0 (absent) and 2. */
	check_decode_err(LIT("\x12\x02s1\x4a\x00"), -EPROTO, RELAY_FRAME_ERR_VERSION);
	check_decode_err(LIT("\x08\x02\x12\x02s1\x4a\x00"), -EPROTO, RELAY_FRAME_ERR_VERSION);
	/* Rule 2: empty, absent, Unicode white space only (U+0020, U+0009, U+3000, U+00A0, U+0085). */
	check_decode_err(LIT("\x08\x01\x12\x00\x4a\x00"), -EPROTO, RELAY_FRAME_ERR_NO_STREAM_ID);
	check_decode_err(LIT("\x08\x01\x4a\x00"), -EPROTO, RELAY_FRAME_ERR_NO_STREAM_ID);
	check_decode_err(LIT("\x08\x01\x12\x09 \t\xe3\x80\x80\xc2\xa0\xc2\x85\x4a\x00"), -EPROTO,
			 RELAY_FRAME_ERR_NO_STREAM_ID);
	/* Stricter: leading or trailing white space, longer than 128 bytes. */
	check_decode_err(LIT("\x08\x01\x12\x03 s1\x4a\x00"), -EPROTO, RELAY_FRAME_ERR_STREAM_ID_SPACE);
	check_decode_err(LIT("\x08\x01\x12\x05s1\xe2\x80\xa8\x4a\x00"), -EPROTO, RELAY_FRAME_ERR_STREAM_ID_SPACE);
	check_decode_err(LIT("\x08\x01\x12\x03s1\n\x4a\x00"), -EPROTO, RELAY_FRAME_ERR_STREAM_ID_SPACE);
	memset(sid, 'a', sizeof(sid));
	relay_frame_init(&f, RELAY_FRAME_HEARTBEAT, sid, RELAY_FRAME_MAX_STREAM_ID);
	ASSERT_EQ(RELAY_FRAME_OK, relay_frame_check(&f));
	f.stream_id_len++;
	ASSERT_EQ(RELAY_FRAME_ERR_STREAM_ID_LONG, relay_frame_check(&f));
	ASSERT_EQ(-EINVAL, relay_frame_encoded_size(&f));
	ASSERT_EQ(-EINVAL, relay_frame_encode(&f, (uint8_t[512]){ 0 }, 512));
	{
		uint8_t buf[4 + 2 + sizeof(sid) + 2];

		memcpy(buf, "\x08\x01\x12\x81\x01", 5);
		memset(buf + 5, 'a', RELAY_FRAME_MAX_STREAM_ID + 1);
		memcpy(buf + 5 + RELAY_FRAME_MAX_STREAM_ID + 1, "\x4a\x00", 2);
		check_decode_err(buf, 5 + RELAY_FRAME_MAX_STREAM_ID + 1 + 2, -EPROTO, RELAY_FRAME_ERR_STREAM_ID_LONG);
	}
	/* Inner white space is fine. */
	check_decode_ok(LIT("\x08\x01\x12\x03s 1\x4a\x00"), &d);
	relay_frame_done(&d);
	/* Rule 3: no body. */
	check_decode_err(LIT("\x08\x01\x12\x02s1"), -EPROTO, RELAY_FRAME_ERR_NO_BODY);
	check_decode_err(LIT("\x08\x01\x12\x02s1\x5a\x00"), -EPROTO, RELAY_FRAME_ERR_NO_BODY);
	relay_frame_init(&f, RELAY_FRAME_HEARTBEAT, "s1", 2);
	f.kind = (enum relay_frame_kind)4;
	ASSERT_EQ(RELAY_FRAME_ERR_NO_BODY, relay_frame_check(&f));
	/* Rule 4: segment_index 1, segment_count 0 and 2, empty payload. */
	check_decode_err(LIT("\x08\x01\x12\x02s1\x2a\x08\x10\x01\x18\x01\x22\x02hi"), -EPROTO,
			 RELAY_FRAME_ERR_DATA_FIELDS);
	check_decode_err(LIT("\x08\x01\x12\x02s1\x2a\x04\x22\x02hi"), -EPROTO, RELAY_FRAME_ERR_DATA_FIELDS);
	check_decode_err(LIT("\x08\x01\x12\x02s1\x2a\x06\x18\x02\x22\x02hi"), -EPROTO, RELAY_FRAME_ERR_DATA_FIELDS);
	check_decode_err(LIT("\x08\x01\x12\x02s1\x2a\x02\x18\x01"), -EPROTO, RELAY_FRAME_ERR_DATA_FIELDS);
	check_decode_err(LIT("\x08\x01\x12\x02s1\x2a\x00"), -EPROTO, RELAY_FRAME_ERR_DATA_FIELDS);
	relay_frame_init_data(&f, "s1", 2, 0, NULL, 0);
	ASSERT_EQ(-EINVAL, relay_frame_encoded_size(&f));
	/* Rule 5: empty reason; stricter: longer than 256 bytes. */
	check_decode_err(LIT("\x08\x01\x12\x02s1\x42\x00"), -EPROTO, RELAY_FRAME_ERR_NO_RESET_REASON);
	memset(reason, 'r', sizeof(reason));
	relay_frame_init_reset(&f, "s1", 2, reason, RELAY_FRAME_MAX_RESET_REASON);
	check_round_trip(&f);
	f.reset.reason_len++;
	ASSERT_EQ(RELAY_FRAME_ERR_RESET_REASON_LONG, relay_frame_check(&f));
	{
		uint8_t buf[16 + sizeof(reason)];

		memcpy(buf, "\x08\x01\x12\x02s1\x42\x84\x02\x0a\x81\x02", 12);
		memset(buf + 12, 'r', sizeof(reason));
		check_decode_err(buf, 12 + sizeof(reason), -EPROTO, RELAY_FRAME_ERR_RESET_REASON_LONG);
	}
	/* Rule 6: empty handshake payload. */
	check_decode_err(LIT("\x08\x01\x12\x02s1\x52\x00"), -EPROTO, RELAY_FRAME_ERR_NO_HANDSHAKE);
	relay_frame_init_handshake(&f, "s1", 2, NULL, 0);
	ASSERT_EQ(-EINVAL, relay_frame_encoded_size(&f));
	/* Rule 7: ack_frame, resume, heartbeat need nothing more (any ack, ack_bits, next_seq). */
	check_decode_ok(LIT("\x08\x01\x12\x02s1\x18\x09\x20\x03\x32\x00"), &d);
	ASSERT_EQ(RELAY_FRAME_ACK, d.kind);
	ASSERT_EQ(9, d.ack);
	ASSERT_EQ(3, d.ack_bits);
	relay_frame_done(&d);
	/* Encoding refuses what decoding refuses: a non-UTF-8 string. */
	relay_frame_init_reset(&f, "s1", 2, "\xff", 1);
	ASSERT_EQ(RELAY_FRAME_ERR_NOT_UTF8, relay_frame_check(&f));
	ASSERT_EQ(-EINVAL, relay_frame_encode_alloc(&f, &enc, &len));
	/* The first failing rule is reported, in §2.1's order. */
	check_decode_err(LIT("\x08\x02\x2a\x00"), -EPROTO, RELAY_FRAME_ERR_VERSION);
	check_decode_err(LIT("\x08\x01\x2a\x00"), -EPROTO, RELAY_FRAME_ERR_NO_STREAM_ID);
}

/* The unpack budget holds for the most allocation-hungry inputs of the maximal size. */
TEST(worst_case_allocations)
{
	size_t n = RELAY_FRAME_MAX_MESSAGE;
	uint8_t *buf = malloc(n);
	struct relay_frame f;
	size_t i;

	ASSERT_TRUE(buf);
	/* A heartbeat, then 2-byte unknown fields (tag 13, varint 0) up to 256 KiB. */
	memcpy(buf, "\x08\x01\x12\x02s1\x4a\x00", 8);
	for (i = 8; i + 2 <= n; i += 2)
		memcpy(buf + i, "\x68\x00", 2);
	check_decode_ok(buf, i, &f);
	relay_frame_done(&f);
	/* The same inside a data body (a 3-byte length), then the payload. */
	{
		size_t body = n - 16;

		memcpy(buf, "\x08\x01\x12\x02s1\x2a", 7);
		buf[7] = (uint8_t)(body | 0x80);
		buf[8] = (uint8_t)(body >> 7 | 0x80);
		buf[9] = (uint8_t)(body >> 14);
		memcpy(buf + 10, "\x18\x01\x22\x02xy", 6);
		for (i = 16; i + 2 <= 10 + body; i += 2)
			memcpy(buf + i, "\x68\x00", 2);
		ASSERT_EQ(10 + body, i);
		check_decode_ok(buf, i, &f);
		ASSERT_EQ(2, f.data.payload_len);
		relay_frame_done(&f);
	}
	/* 2-byte empty data bodies, repeated (each allocates a message), ending in a valid one. */
	memcpy(buf, "\x08\x01\x12\x02s1", 6);
	for (i = 6; i + 2 <= n - 8; i += 2)
		memcpy(buf + i, "\x2a\x00", 2);
	memcpy(buf + i, "\x2a\x05\x18\x01\x22\x01x", 7);
	check_decode_ok(buf, i + 7, &f);
	ASSERT_EQ(RELAY_FRAME_DATA, f.kind);
	relay_frame_done(&f);
	free(buf);
}

TEST(error_texts)
{
	for (int a = 0; a < RELAY_FRAME_ERR_MAX; a++) {
		ASSERT_TRUE(relay_frame_error_str(a) != NULL);
		ASSERT_TRUE(strlen(relay_frame_error_str(a)) > 0);
		for (int b = 0; b < a; b++)
			ASSERT_TRUE(strcmp(relay_frame_error_str(a), relay_frame_error_str(b)) != 0);
	}
	ASSERT_STREQ("relay message frame is missing body", relay_frame_error_str(RELAY_FRAME_ERR_NO_BODY));
	ASSERT_STREQ("unknown relay message frame error", relay_frame_error_str(RELAY_FRAME_ERR_MAX));
}

/* The hot path's prefix: byte for byte what relay_frame_encode() writes before the payload. */
TEST(data_prefix_matches_encode)
{
	static const size_t lens[] = { 1, 127, 128, 16383, 16384, 61456, 65535 };
	static const uint32_t seqs[] = { 0, 1, 127, 128, 0xffffffffu };
	static uint8_t payload[65535], enc[RELAY_FRAME_MAX_MESSAGE];
	uint8_t prefix[RELAY_FRAME_DATA_PREFIX_MAX];
	char id[RELAY_FRAME_MAX_STREAM_ID];

	memset(payload, 0xa5, sizeof(payload));
	memset(id, 'x', sizeof(id));
	for (size_t il = 1; il <= sizeof(id); il += 127)
		for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
			for (size_t k = 0; k < sizeof(seqs) / sizeof(seqs[0]); k++) {
				struct relay_frame f;
				ssize_t n, p;

				relay_frame_init_data(&f, id, il, seqs[k], payload, lens[i]);
				n = relay_frame_encode(&f, enc, sizeof(enc));
				ASSERT_TRUE(n > 0);
				p = relay_frame_data_prefix(id, il, seqs[k], lens[i], NULL, 0);
				ASSERT_EQ((ssize_t)(n - (ssize_t)lens[i]), p);
				ASSERT_EQ(p, relay_frame_data_prefix(id, il, seqs[k], lens[i], prefix,
								      sizeof(prefix)));
				ASSERT_MEMEQ(enc, prefix, (size_t)p);
				ASSERT_EQ(-ENOBUFS, relay_frame_data_prefix(id, il, seqs[k], lens[i],
									    prefix, (size_t)p - 1));
			}
	ASSERT_EQ(-EINVAL, relay_frame_data_prefix(id, 0, 0, 1, prefix, sizeof(prefix)));
	ASSERT_EQ(-EINVAL, relay_frame_data_prefix(id, 1, 0, 0, prefix, sizeof(prefix)));
	ASSERT_EQ(-EINVAL, relay_frame_data_prefix(id, RELAY_FRAME_MAX_STREAM_ID + 1, 0, 1, prefix,
						   sizeof(prefix)));
	ASSERT_EQ(-EMSGSIZE, relay_frame_data_prefix(id, 1, 0, RELAY_FRAME_MAX_MESSAGE - 8, prefix,
						     sizeof(prefix)));
}

TEST_MAIN()
