/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: what remote mode does with a server's answer
 * (proto/http-client.h): the response head, the body framing it selects, the
 * body decoded whole and in slices, the end of the stream, and for a 101 the
 * WebSocket handshake check.
 *
 * Input byte 0: bit 0 the request was HEAD; bits 1-3 the slice size (1, 2, 3,
 * 7, 16, 64, 512, everything); bits 4-5 max_body (0, 16, 1024, unlimited);
 * bit 6 a small head limit (256 bytes instead of 16 KiB). Byte 1: where the
 * first slice ends (mod the body's length). The rest: the response stream.
 */
#include <errno.h>
#include <string.h>

#include "buf.h"
#include "fuzz.h"
#include "http-client.h"

#define SAMPLE_KEY "dGhlIHNhbXBsZSBub25jZQ=="

struct run {
	int err;         /* 0, or the first error */
	size_t consumed; /* bytes taken as body */
	bool done;
	struct buf out;
};

static bool inside(const char *p, size_t n, const uint8_t *buf, size_t len)
{
	return (const uint8_t *)p >= buf && (const uint8_t *)p + n <= buf + len;
}

static void check_head(const struct http_response *resp, const uint8_t *data, size_t r)
{
	FUZZ_CHECK(resp->status >= 100 && resp->status <= 999);
	FUZZ_CHECK(resp->minor_version >= 0 && resp->minor_version <= 9);
	FUZZ_CHECK(inside(resp->reason, resp->reason_len, data, r));
	FUZZ_CHECK(resp->n_headers <= HTTP_MAX_HEADERS);
	for (size_t i = 0; i < resp->n_headers; i++) {
		const struct http_header *h = &resp->headers[i];

		FUZZ_CHECK(h->name_len > 0 && inside(h->name, h->name_len, data, r));
		FUZZ_CHECK(inside(h->value, h->value_len, data, r));
		for (size_t k = 0; k < h->value_len; k++)
			FUZZ_CHECK(h->value[k] != '\r' && h->value[k] != '\n' && h->value[k] != '\0');
	}
}

/* Feeds in[0..len) in slices: the first ends at `first`, the others are `step` long. */
static void decode(const struct http_body_reader *init, const uint8_t *in, size_t len,
		   size_t first, size_t step, struct run *ret)
{
	struct http_body_reader r = *init;
	size_t off = 0;

	memset(ret, 0, sizeof(*ret));
	while (off < len && !r.done) {
		size_t want = off == 0 && first > 0 ? first : step;
		size_t n = len - off < want ? len - off : want;
		int k = http_body_reader_feed(&r, in + off, n, &ret->out);

		FUZZ_CHECK(r.total <= r.max_body);
		if (k < 0) {
			FUZZ_CHECK(k == -EBADMSG || k == -EMSGSIZE);
			ret->err = k;
			break;
		}
		FUZZ_CHECK((size_t)k <= n);
		FUZZ_CHECK((size_t)k == n || r.done); /* only the end of the body stops short */
		FUZZ_CHECK(ret->out.len == r.total);
		off += (size_t)k;
	}
	if (!ret->err) {
		int e = http_body_reader_eof(&r);

		if (r.done || r.mode == HTTP_BODY_UNTIL_CLOSE)
			FUZZ_CHECK(e == 0 && r.done);
		else
			FUZZ_CHECK(e == -EPIPE);
		if (r.mode == HTTP_BODY_LENGTH && e == 0)
			FUZZ_CHECK(r.total == init->left);
	}
	ret->consumed = off;
	ret->done = r.done;
}

/* A chunked body's decoded bytes, re-encoded as one chunk, decode to the same bytes. */
static void check_rechunk(const struct http_body_reader *init, const struct buf *body)
{
	struct buf enc = { 0 };
	struct run again;
	char line[32];
	int n = snprintf(line, sizeof(line), "%zx\r\n", body->len);

	if (body->len == 0)
		return;
	FUZZ_CHECK(buf_append(&enc, line, (size_t)n) == 0);
	FUZZ_CHECK(buf_append(&enc, body->data, body->len) == 0);
	FUZZ_CHECK(buf_append(&enc, "\r\n0\r\n\r\n", 7) == 0);
	decode(init, enc.data, enc.len, 0, enc.len, &again);
	FUZZ_CHECK(again.err == 0 && again.done && again.consumed == enc.len);
	FUZZ_CHECK(again.out.len == body->len && memcmp(again.out.data, body->data, body->len) == 0);
	buf_done(&again.out);
	buf_done(&enc);
}

static void check_body(const struct http_response *resp, const uint8_t *in, size_t len, uint8_t flags,
		       uint8_t split)
{
	static const size_t steps[] = { 1, 2, 3, 7, 16, 64, 512, SIZE_MAX };
	static const uint64_t maxes[] = { 0, 16, 1024, UINT64_MAX };
	struct http_body_reader r;
	struct run whole, sliced;
	int k;

	k = http_body_reader_init(&r, resp, flags & 1, maxes[(flags >> 4) & 3]);
	FUZZ_CHECK(k == 0 || k == -EBADMSG || k == -EMSGSIZE);
	if (k < 0)
		return;
	FUZZ_CHECK(r.total == 0);
	FUZZ_CHECK(r.done == (r.mode == HTTP_BODY_NONE || (r.mode == HTTP_BODY_LENGTH && r.left == 0)));
	if (r.mode == HTTP_BODY_LENGTH)
		FUZZ_CHECK(r.left <= r.max_body);

	decode(&r, in, len, 0, SIZE_MAX, &whole);
	decode(&r, in, len, len ? split % len + 1 : 0, steps[(flags >> 1) & 7], &sliced);
	/* Slicing changes nothing: the same error, and on success the same bytes and end. */
	FUZZ_CHECK(whole.err == sliced.err);
	if (whole.err == 0) {
		FUZZ_CHECK(whole.consumed == sliced.consumed && whole.done == sliced.done);
		FUZZ_CHECK(whole.out.len == sliced.out.len);
		FUZZ_CHECK(whole.out.len == 0 || memcmp(whole.out.data, sliced.out.data, whole.out.len) == 0);
		if (r.mode == HTTP_BODY_CHUNKED && whole.done)
			check_rechunk(&r, &whole.out);
	}
	buf_done(&whole.out);
	buf_done(&sliced.out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_response resp, again;
	const char *reason = NULL;
	size_t max_head;
	uint8_t flags, split;
	int r;

	if (size < 2 || size > 65536)
		return 0;
	flags = data[0];
	split = data[1];
	data += 2;
	size -= 2;
	max_head = flags & 0x40 ? 256 : 16384;

	r = http_response_parse((const char *)data, size, max_head, &resp);
	FUZZ_CHECK(r > 0 || r == -EAGAIN || r == -EBADMSG || r == -E2BIG);
	if (r < 0)
		return 0;
	FUZZ_CHECK((size_t)r <= size && (size_t)r <= max_head);
	check_head(&resp, data, (size_t)r);
	/* The head ends where it ends; no strict prefix is complete. */
	FUZZ_CHECK(http_response_parse((const char *)data, (size_t)r, max_head, &again) == r);
	FUZZ_CHECK(again.status == resp.status && again.n_headers == resp.n_headers);
	FUZZ_CHECK(http_response_parse((const char *)data, (size_t)r - 1, max_head, &again) == -EAGAIN);

	r = http_ws_client_check(&resp, SAMPLE_KEY, &reason);
	if (resp.status != 101)
		FUZZ_CHECK(r == -ECONNREFUSED && reason && strncmp(reason, "HTTP status ", 12) == 0);
	else
		FUZZ_CHECK((r == 0 && !reason) || (r == -EPROTO && reason && *reason));

	r = http_response_parse((const char *)data, size, max_head, &resp);
	check_body(&resp, data + r, size - (size_t)r, flags, split);
	return 0;
}
