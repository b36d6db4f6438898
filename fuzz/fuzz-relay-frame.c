/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: relay frames (src/remote/codec/relay-frame.h). The input is one binary
 * WebSocket message. A frame that decodes passes relay_frame_check, re-encodes
 * (canonically: no longer than the input), and the encoding decodes to the
 * same frame and re-encodes to the same bytes. A refused input reports a
 * reason that matches its errno and leaves the frame empty.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "relay-frame.h"
#include "utf8.h"

static bool same_bytes(const void *a, size_t alen, const void *b, size_t blen)
{
	return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

static void check_same(const struct relay_frame *a, const struct relay_frame *b)
{
	FUZZ_CHECK(a->version == b->version && a->ack == b->ack && a->ack_bits == b->ack_bits);
	FUZZ_CHECK(same_bytes(a->stream_id, a->stream_id_len, b->stream_id, b->stream_id_len));
	FUZZ_CHECK(a->kind == b->kind);
	switch (a->kind) {
	case RELAY_FRAME_DATA:
		FUZZ_CHECK(a->data.seq == b->data.seq);
		FUZZ_CHECK(a->data.segment_index == b->data.segment_index);
		FUZZ_CHECK(a->data.segment_count == b->data.segment_count);
		FUZZ_CHECK(same_bytes(a->data.payload, a->data.payload_len, b->data.payload,
				      b->data.payload_len));
		break;
	case RELAY_FRAME_RESUME:
		FUZZ_CHECK(a->resume.next_seq == b->resume.next_seq);
		break;
	case RELAY_FRAME_RESET:
		FUZZ_CHECK(same_bytes(a->reset.reason, a->reset.reason_len, b->reset.reason,
				      b->reset.reason_len));
		break;
	case RELAY_FRAME_HANDSHAKE:
		FUZZ_CHECK(same_bytes(a->handshake.payload, a->handshake.payload_len, b->handshake.payload,
				      b->handshake.payload_len));
		break;
	default:
		break;
	}
	FUZZ_CHECK(a->has_traceparent == b->has_traceparent && a->has_tracestate == b->has_tracestate);
	FUZZ_CHECK(same_bytes(a->traceparent, a->traceparent_len, b->traceparent, b->traceparent_len));
	FUZZ_CHECK(same_bytes(a->tracestate, a->tracestate_len, b->tracestate, b->tracestate_len));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum relay_frame_error e = RELAY_FRAME_ERR_MAX, e2 = RELAY_FRAME_ERR_MAX;
	struct relay_frame f, g;
	uint8_t *enc = NULL, *enc2 = NULL;
	size_t len = 0, len2 = 0;
	ssize_t n;
	int r;

	r = relay_frame_decode(data, size, &f, &e);
	FUZZ_CHECK(e < RELAY_FRAME_ERR_MAX && strlen(relay_frame_error_str(e)) > 0);
	if (r < 0) {
		FUZZ_CHECK(e != RELAY_FRAME_OK && f.mem == NULL && f.stream_id == NULL);
		switch (e) {
		case RELAY_FRAME_ERR_TOO_BIG:
			FUZZ_CHECK(r == -EMSGSIZE && size > RELAY_FRAME_MAX_MESSAGE);
			break;
		case RELAY_FRAME_ERR_MALFORMED:
		case RELAY_FRAME_ERR_NOT_UTF8:
			FUZZ_CHECK(r == -EBADMSG);
			break;
		case RELAY_FRAME_ERR_NOMEM:
			/* The budget is meant to fit every input of the maximal size. */
			FUZZ_CHECK(!"unpack budget exceeded");
			break;
		default:
			FUZZ_CHECK(r == -EPROTO);
		}
		return 0;
	}
	FUZZ_CHECK(r == 0 && e == RELAY_FRAME_OK);
	FUZZ_CHECK(relay_frame_check(&f) == RELAY_FRAME_OK);
	FUZZ_CHECK(f.version == RELAY_FRAME_VERSION);
	FUZZ_CHECK(f.stream_id_len > 0 && f.stream_id_len <= RELAY_FRAME_MAX_STREAM_ID);
	FUZZ_CHECK(f.stream_id[f.stream_id_len] == 0);
	FUZZ_CHECK(utf8_is_valid((const uint8_t *)f.stream_id, f.stream_id_len));
	if (f.kind == RELAY_FRAME_DATA)
		FUZZ_CHECK(f.data.segment_index == 0 && f.data.segment_count == 1 && f.data.payload_len > 0);
	if (f.kind == RELAY_FRAME_RESET)
		FUZZ_CHECK(f.reset.reason_len > 0 && f.reset.reason_len <= RELAY_FRAME_MAX_RESET_REASON);

	n = relay_frame_encoded_size(&f);
	FUZZ_CHECK(n > 0 && (size_t)n <= size);
	FUZZ_CHECK(relay_frame_encode_alloc(&f, &enc, &len) == 0 && len == (size_t)n);
	if (len > 0)
		FUZZ_CHECK(relay_frame_encode(&f, enc, len - 1) == -ENOBUFS);
	FUZZ_CHECK(relay_frame_decode(enc, len, &g, &e2) == 0 && e2 == RELAY_FRAME_OK);
	check_same(&f, &g);
	FUZZ_CHECK(relay_frame_encode_alloc(&g, &enc2, &len2) == 0);
	FUZZ_CHECK(same_bytes(enc, len, enc2, len2));
	relay_frame_done(&g);
	relay_frame_done(&f);
	free(enc);
	free(enc2);
	return 0;
}
