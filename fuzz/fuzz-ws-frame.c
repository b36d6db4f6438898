/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: WebSocket framing (proto/ws.h). The header codec (parse, and
 * re-encode of unmasked FIN frames), then the stateful ws_parser_feed() over a
 * client byte stream with masking, fragmentation and control frames, fed once
 * as a whole and once in small chunks the way conn.c buffers socket reads:
 * both runs must see the same events and the same final error.
 *
 * Input: byte 0 picks the limits (bits 0-1) and the chunk size (bits 2-4);
 * the rest is the stream.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "utf8.h"
#include "ws.h"

#define MAX_EVENTS 4096

struct event {
	enum ws_event_type type;
	bool binary;
	size_t len;
	uint16_t close_code;
	uint64_t hash;
};

struct run {
	struct event ev[MAX_EVENTS];
	size_t n_ev;
	int error; /* 0, or the feed error that ended the stream */
};

static const struct ws_limits limit_sets[4] = {
	{ .max_frame_bytes = 125, .max_message_bytes = 1000 },
	{ .max_frame_bytes = 1 << 16, .max_message_bytes = 1 << 17 },
	{ .max_frame_bytes = 16u << 20, .max_message_bytes = 64u << 20 }, /* uexec's defaults */
	{ .max_frame_bytes = 1000, .max_message_bytes = 300 },
};
static const size_t chunk_sizes[8] = { 1, 2, 3, 7, 16, 64, 256, SIZE_MAX };

static uint64_t fnv1a(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static void check_header_codec(const uint8_t *buf, size_t len)
{
	struct ws_frame_hdr h;
	uint8_t enc[WS_MAX_HDR];
	int r = ws_frame_hdr_parse(buf, len, &h);

	FUZZ_CHECK(r > 0 || r == -EAGAIN || r == -EBADMSG);
	if (r < 0) {
		FUZZ_CHECK(ws_parser_frame_need(buf, len) == 0);
		return;
	}
	FUZZ_CHECK((size_t)r == h.header_len && h.header_len <= len);
	FUZZ_CHECK(h.header_len == 2 || h.header_len == 4 || h.header_len == 10 ||
		   h.header_len == 6 || h.header_len == 8 || h.header_len == 14);
	FUZZ_CHECK(h.masked == ((buf[1] & 0x80) != 0) && h.opcode == (buf[0] & 0x0F));
	FUZZ_CHECK(h.payload_len < (1ull << 63));
	FUZZ_CHECK(ws_parser_frame_need(buf, len) == h.header_len + h.payload_len);
	/* Lengths are minimal, so a server-style frame header re-encodes to the same bytes. */
	if (h.fin && !h.masked && h.rsv == 0) {
		size_t n = ws_frame_hdr_encode(enc, (enum ws_opcode)h.opcode, h.payload_len);

		FUZZ_CHECK(n == h.header_len && memcmp(enc, buf, n) == 0);
	}
}

static void record(struct run *run, const struct ws_parser *p, const struct ws_event *ev)
{
	struct event *e;

	switch (ev->type) {
	case WS_EV_NONE:
		return;
	case WS_EV_MESSAGE:
		FUZZ_CHECK(ev->len <= p->limits.max_message_bytes);
		if (!ev->binary)
			FUZZ_CHECK(utf8_is_valid(ev->data, ev->len));
		break;
	case WS_EV_PING:
	case WS_EV_PONG:
		FUZZ_CHECK(ev->len <= 125);
		break;
	case WS_EV_CLOSE:
		FUZZ_CHECK(ev->len <= 123 && utf8_is_valid(ev->data, ev->len));
		FUZZ_CHECK(ev->close_code == 1005 ||
			   (ev->close_code >= 1000 && ev->close_code < 5000));
		break;
	}
	FUZZ_CHECK(ev->len == 0 || ev->data != NULL);
	if (run->n_ev == MAX_EVENTS)
		return;
	e = &run->ev[run->n_ev++];
	e->type = ev->type;
	e->binary = ev->binary;
	e->len = ev->len;
	e->close_code = ev->close_code;
	e->hash = fnv1a(ev->data, ev->len);
}

/*
 * Feeds stream[0..len) in chunks of chunk bytes through a buffer that keeps
 * unconsumed bytes, as conn.c does. Stops at the first error or Close.
 */
static void feed(const struct ws_limits *lim, const uint8_t *stream, size_t len, size_t chunk,
		 struct run *run)
{
	struct ws_parser p = { .limits = *lim };
	uint8_t *buf = malloc(len ? len : 1);
	size_t have = 0, fed = 0;

	FUZZ_CHECK(buf);
	run->n_ev = 0;
	run->error = 0;
	while (fed < len) {
		size_t n = len - fed < chunk ? len - fed : chunk, off = 0;

		memcpy(buf + have, stream + fed, n);
		have += n;
		fed += n;
		while (off < have) {
			struct ws_event ev;
			uint64_t need = ws_parser_frame_need(buf + off, have - off);
			int r = ws_parser_feed(&p, buf + off, have - off, &ev);

			if (r < 0) {
				FUZZ_CHECK(r == -EPROTO || r == -EMSGSIZE || r == -EILSEQ);
				run->error = r;
				goto out;
			}
			FUZZ_CHECK((size_t)r <= have - off);
			if (r == 0) {
				FUZZ_CHECK(ev.type == WS_EV_NONE);
				/* Waiting for bytes: the frame really is incomplete. */
				FUZZ_CHECK(need == 0 || need > have - off);
				break;
			}
			FUZZ_CHECK(need == (uint64_t)r);
			record(run, &p, &ev);
			off += (size_t)r;
			if (ev.type == WS_EV_CLOSE)
				goto out;
		}
		memmove(buf, buf + off, have - off);
		have -= off;
	}
out:
	ws_parser_done(&p);
	free(buf);
}

static struct run whole, chunked;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct ws_limits *lim;
	size_t chunk;

	if (size < 1 || size > 1 << 20)
		return 0;
	lim = &limit_sets[data[0] & 3];
	chunk = chunk_sizes[(data[0] >> 2) & 7];
	data++;
	size--;

	check_header_codec(data, size);

	feed(lim, data, size, SIZE_MAX, &whole);
	feed(lim, data, size, chunk, &chunked);
	FUZZ_CHECK(whole.error == chunked.error);
	FUZZ_CHECK(whole.n_ev == chunked.n_ev);
	for (size_t i = 0; i < whole.n_ev; i++) {
		const struct event *a = &whole.ev[i], *b = &chunked.ev[i];

		FUZZ_CHECK(a->type == b->type && a->binary == b->binary && a->len == b->len &&
			   a->close_code == b->close_code && a->hash == b->hash);
	}
	/* Errors map to the close codes conn.c sends. */
	if (whole.error)
		FUZZ_CHECK(ws_close_code_for_error(whole.error) != WS_CLOSE_INTERNAL);
	return 0;
}
