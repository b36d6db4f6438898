/* SPDX-License-Identifier: MIT */
/*
 * Relay frame codec over the protobuf-c code generated from relay.v1.proto
 * (see relay-frame.h; the rules are RELAY.md §2.1's, cited at each check).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "relay-frame.h"
#include "relay.v1.pb-c.h"
#include "utf8.h"

/* Short names for the generated types. */
typedef Codex__ExecServer__Relay__V1__RelayMessageFrame pb_frame;
typedef Codex__ExecServer__Relay__V1__RelayData pb_data;
typedef Codex__ExecServer__Relay__V1__RelayAck pb_ack;
typedef Codex__ExecServer__Relay__V1__RelayResume pb_resume;
typedef Codex__ExecServer__Relay__V1__RelayReset pb_reset;
typedef Codex__ExecServer__Relay__V1__RelayHeartbeat pb_heartbeat;
typedef Codex__ExecServer__Relay__V1__RelayHandshake pb_handshake;
#define PB_FRAME_DESC codex__exec_server__relay__v1__relay_message_frame__descriptor

_Static_assert((int)RELAY_FRAME_DATA == (int)CODEX__EXEC_SERVER__RELAY__V1__RELAY_MESSAGE_FRAME__BODY_DATA &&
		       (int)RELAY_FRAME_ACK == (int)CODEX__EXEC_SERVER__RELAY__V1__RELAY_MESSAGE_FRAME__BODY_ACK_FRAME &&
		       (int)RELAY_FRAME_RESUME == (int)CODEX__EXEC_SERVER__RELAY__V1__RELAY_MESSAGE_FRAME__BODY_RESUME &&
		       (int)RELAY_FRAME_RESET == (int)CODEX__EXEC_SERVER__RELAY__V1__RELAY_MESSAGE_FRAME__BODY_RESET &&
		       (int)RELAY_FRAME_HEARTBEAT == (int)CODEX__EXEC_SERVER__RELAY__V1__RELAY_MESSAGE_FRAME__BODY_HEARTBEAT &&
		       (int)RELAY_FRAME_HANDSHAKE == (int)CODEX__EXEC_SERVER__RELAY__V1__RELAY_MESSAGE_FRAME__BODY_HANDSHAKE,
	       "enum relay_frame_kind is the oneof's tag numbers");

static const char *const error_text[RELAY_FRAME_ERR_MAX] = {
	[RELAY_FRAME_OK] = "ok",
	[RELAY_FRAME_ERR_TOO_BIG] = "relay message frame is larger than 256 KiB",
	[RELAY_FRAME_ERR_MALFORMED] = "relay message frame is not a valid protobuf RelayMessageFrame",
	[RELAY_FRAME_ERR_NOT_UTF8] = "relay message frame has a string field that is not UTF-8",
	[RELAY_FRAME_ERR_VERSION] = "unsupported relay message frame version",
	[RELAY_FRAME_ERR_NO_STREAM_ID] = "relay message frame is missing stream_id",
	[RELAY_FRAME_ERR_STREAM_ID_SPACE] = "relay message frame stream_id has surrounding white space",
	[RELAY_FRAME_ERR_STREAM_ID_LONG] = "relay message frame stream_id is longer than 128 bytes",
	[RELAY_FRAME_ERR_NO_BODY] = "relay message frame is missing body",
	[RELAY_FRAME_ERR_DATA_FIELDS] = "relay data message frame is missing required fields",
	[RELAY_FRAME_ERR_NO_RESET_REASON] = "relay reset message frame is missing reason",
	[RELAY_FRAME_ERR_RESET_REASON_LONG] = "relay reset message frame reason is longer than 256 bytes",
	[RELAY_FRAME_ERR_NO_HANDSHAKE] = "relay handshake message frame is missing payload",
	[RELAY_FRAME_ERR_NOMEM] = "out of memory decoding a relay message frame",
};

const char *relay_frame_error_str(enum relay_frame_error e)
{
	if ((unsigned)e >= RELAY_FRAME_ERR_MAX)
		return "unknown relay message frame error";
	return error_text[e];
}

static int error_errno(enum relay_frame_error e)
{
	switch (e) {
	case RELAY_FRAME_OK:
		return 0;
	case RELAY_FRAME_ERR_TOO_BIG:
		return -EMSGSIZE;
	case RELAY_FRAME_ERR_MALFORMED:
	case RELAY_FRAME_ERR_NOT_UTF8:
		return -EBADMSG;
	case RELAY_FRAME_ERR_NOMEM:
		return -ENOMEM;
	default:
		return -EPROTO;
	}
}

/*
 * The code point that starts at s[0] of valid UTF-8, its length in *n.
 */
static uint32_t utf8_first(const uint8_t *s, size_t *n)
{
	if (s[0] < 0x80) {
		*n = 1;
		return s[0];
	}
	if (s[0] < 0xE0) {
		*n = 2;
		return (uint32_t)(s[0] & 0x1F) << 6 | (s[1] & 0x3Fu);
	}
	if (s[0] < 0xF0) {
		*n = 3;
		return (uint32_t)(s[0] & 0x0F) << 12 | (uint32_t)(s[1] & 0x3F) << 6 | (s[2] & 0x3Fu);
	}
	*n = 4;
	return (uint32_t)(s[0] & 0x07) << 18 | (uint32_t)(s[1] & 0x3F) << 12 |
	       (uint32_t)(s[2] & 0x3F) << 6 | (s[3] & 0x3Fu);
}

/* The last code point of valid, non-empty UTF-8 s[0..len). */
static uint32_t utf8_last(const uint8_t *s, size_t len)
{
	size_t i = len - 1, n;

	while (i > 0 && (s[i] & 0xC0) == 0x80)
		i--;
	return utf8_first(s + i, &n);
}

/* Unicode White_Space, what Rust's str::trim() strips. */
static bool is_white_space(uint32_t c)
{
	return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
	       (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
	       c == 0x205F || c == 0x3000;
}

/* stream_id.trim().is_empty() on valid UTF-8. */
static bool trims_to_empty(const uint8_t *s, size_t len)
{
	size_t i = 0, n;

	while (i < len) {
		if (!is_white_space(utf8_first(s + i, &n)))
			return false;
		i += n;
	}
	return true;
}

static bool str_ok(const char *s, size_t len)
{
	return len == 0 || (s && utf8_is_valid((const uint8_t *)s, len));
}

enum relay_frame_error relay_frame_check(const struct relay_frame *f)
{
	const uint8_t *sid = (const uint8_t *)f->stream_id;

	/* prost refuses a `string` that is not UTF-8 while decoding. */
	if (!str_ok(f->stream_id, f->stream_id_len) ||
	    (f->kind == RELAY_FRAME_RESET && !str_ok(f->reset.reason, f->reset.reason_len)) ||
	    (f->has_traceparent && !str_ok(f->traceparent, f->traceparent_len)) ||
	    (f->has_tracestate && !str_ok(f->tracestate, f->tracestate_len)))
		return RELAY_FRAME_ERR_NOT_UTF8;
	/* §2.1 rule 1: `version != 1`. */
	if (f->version != RELAY_FRAME_VERSION)
		return RELAY_FRAME_ERR_VERSION;
	/* Rule 2: `stream_id.trim()` empty. */
	if (trims_to_empty(sid, f->stream_id_len))
		return RELAY_FRAME_ERR_NO_STREAM_ID;
	/* Stricter revision: canonical (`trim(s) == s`) and at most 128 bytes. */
	if (is_white_space(utf8_last(sid, f->stream_id_len)) ||
	    is_white_space(utf8_first(sid, &(size_t){ 0 })))
		return RELAY_FRAME_ERR_STREAM_ID_SPACE;
	if (f->stream_id_len > RELAY_FRAME_MAX_STREAM_ID)
		return RELAY_FRAME_ERR_STREAM_ID_LONG;
	switch (f->kind) {
	case RELAY_FRAME_DATA:
		/* Rule 4. */
		if (f->data.segment_index != 0 || f->data.segment_count != 1 ||
		    f->data.payload_len == 0 || !f->data.payload)
			return RELAY_FRAME_ERR_DATA_FIELDS;
		return RELAY_FRAME_OK;
	case RELAY_FRAME_RESET:
		/* Rule 5; the stricter revision's 256 bytes. */
		if (f->reset.reason_len == 0)
			return RELAY_FRAME_ERR_NO_RESET_REASON;
		if (f->reset.reason_len > RELAY_FRAME_MAX_RESET_REASON)
			return RELAY_FRAME_ERR_RESET_REASON_LONG;
		return RELAY_FRAME_OK;
	case RELAY_FRAME_HANDSHAKE:
		/* Rule 6. */
		if (f->handshake.payload_len == 0 || !f->handshake.payload)
			return RELAY_FRAME_ERR_NO_HANDSHAKE;
		return RELAY_FRAME_OK;
	case RELAY_FRAME_ACK:
	case RELAY_FRAME_RESUME:
	case RELAY_FRAME_HEARTBEAT:
		/* Rule 7: no further checks. */
		return RELAY_FRAME_OK;
	}
	/* Rule 3: no body (or, encoding, a kind that is none of the six). */
	return RELAY_FRAME_ERR_NO_BODY;
}

/*
 * protobuf-c's allocations during one unpack, bounded: each block carries its
 * size so that frees give the budget back.
 */
struct bounded_alloc {
	size_t live, budget;
	bool over;
};

#define ALLOC_HDR 16

static void *bounded_alloc_fn(void *data, size_t size)
{
	struct bounded_alloc *a = data;
	unsigned char *p;

	if (size > a->budget - a->live || ALLOC_HDR > a->budget - a->live - size) {
		a->over = true;
		return NULL;
	}
	p = malloc(size + ALLOC_HDR);
	if (!p) {
		a->over = true;
		return NULL;
	}
	memcpy(p, &size, sizeof(size));
	a->live += size + ALLOC_HDR;
	return p + ALLOC_HDR;
}

static void bounded_free_fn(void *data, void *ptr)
{
	struct bounded_alloc *a = data;
	unsigned char *p = ptr;
	size_t size;

	if (!p)
		return;
	p -= ALLOC_HDR;
	memcpy(&size, p, sizeof(size));
	a->live -= size + ALLOC_HDR;
	free(p);
}

/*
 * The budget: protobuf-c's scan array (32 bytes per field, doubling slabs) and
 * unknown-field records (24 bytes + data) cost at most ~55 bytes per input
 * byte when every field is 2 bytes long; twice that, plus a floor.
 */
#define DECODE_BYTES_PER_INPUT_BYTE 100
#define DECODE_BYTES_FLOOR (64 * 1024)

/* A view of the unpacked message's fields, before anything is copied. */
static void view_of(const pb_frame *m, struct relay_frame *f)
{
	memset(f, 0, sizeof(*f));
	f->version = m->version;
	f->stream_id = (const char *)m->stream_id.data;
	f->stream_id_len = m->stream_id.len;
	f->ack = m->ack;
	f->ack_bits = m->ack_bits;
	f->kind = (enum relay_frame_kind)m->body_case;
	switch (m->body_case) {
	case CODEX__EXEC_SERVER__RELAY__V1__RELAY_MESSAGE_FRAME__BODY_DATA:
		f->data.seq = m->data->seq;
		f->data.segment_index = m->data->segment_index;
		f->data.segment_count = m->data->segment_count;
		f->data.payload = m->data->payload.data;
		f->data.payload_len = m->data->payload.len;
		break;
	case CODEX__EXEC_SERVER__RELAY__V1__RELAY_MESSAGE_FRAME__BODY_RESUME:
		f->resume.next_seq = m->resume->next_seq;
		break;
	case CODEX__EXEC_SERVER__RELAY__V1__RELAY_MESSAGE_FRAME__BODY_RESET:
		f->reset.reason = (const char *)m->reset->reason.data;
		f->reset.reason_len = m->reset->reason.len;
		break;
	case CODEX__EXEC_SERVER__RELAY__V1__RELAY_MESSAGE_FRAME__BODY_HANDSHAKE:
		f->handshake.payload = m->handshake->payload.data;
		f->handshake.payload_len = m->handshake->payload.len;
		break;
	default:
		break;
	}
	if (m->_traceparent_case == CODEX__EXEC_SERVER__RELAY__V1__RELAY_MESSAGE_FRAME___TRACEPARENT_TRACEPARENT) {
		f->has_traceparent = true;
		f->traceparent = (const char *)m->traceparent.data;
		f->traceparent_len = m->traceparent.len;
	}
	if (m->_tracestate_case == CODEX__EXEC_SERVER__RELAY__V1__RELAY_MESSAGE_FRAME___TRACESTATE_TRACESTATE) {
		f->has_tracestate = true;
		f->tracestate = (const char *)m->tracestate.data;
		f->tracestate_len = m->tracestate.len;
	}
}

/* Copies src[0..len) and a NUL to *at; returns the copy. */
static void *copy_out(unsigned char **at, const void *src, size_t len)
{
	unsigned char *p = *at;

	if (len)
		memcpy(p, src, len);
	p[len] = 0;
	*at = p + len + 1;
	return p;
}

/* The body's variable field (a view), if it has one. */
static size_t body_bytes(const struct relay_frame *f, const void **ret)
{
	switch (f->kind) {
	case RELAY_FRAME_DATA:
		*ret = f->data.payload;
		return f->data.payload_len;
	case RELAY_FRAME_HANDSHAKE:
		*ret = f->handshake.payload;
		return f->handshake.payload_len;
	case RELAY_FRAME_RESET:
		*ret = f->reset.reason;
		return f->reset.reason_len;
	default:
		*ret = NULL;
		return 0;
	}
}

/* Gives f its own copy of every variable field (one block, f->mem). */
static int own_fields(struct relay_frame *f)
{
	const void *body;
	size_t body_len = body_bytes(f, &body), total;
	unsigned char *mem, *at;
	void *copy;

	/* Each length is below RELAY_FRAME_MAX_MESSAGE: no overflow. */
	total = f->stream_id_len + 1 + body_len + 1 + f->traceparent_len + 1 + f->tracestate_len + 1;
	mem = at = malloc(total);
	if (!mem)
		return -ENOMEM;
	f->stream_id = copy_out(&at, f->stream_id, f->stream_id_len);
	copy = copy_out(&at, body, body_len);
	if (f->kind == RELAY_FRAME_DATA)
		f->data.payload = copy;
	else if (f->kind == RELAY_FRAME_HANDSHAKE)
		f->handshake.payload = copy;
	else if (f->kind == RELAY_FRAME_RESET)
		f->reset.reason = copy;
	if (f->has_traceparent)
		f->traceparent = copy_out(&at, f->traceparent, f->traceparent_len);
	if (f->has_tracestate)
		f->tracestate = copy_out(&at, f->tracestate, f->tracestate_len);
	f->mem = mem;
	return 0;
}

int relay_frame_decode(const uint8_t *buf, size_t len, struct relay_frame *ret,
		       enum relay_frame_error *reterr)
{
	struct bounded_alloc budget = {
		.budget = len * DECODE_BYTES_PER_INPUT_BYTE + DECODE_BYTES_FLOOR,
	};
	ProtobufCAllocator alloc = {
		.alloc = bounded_alloc_fn,
		.free = bounded_free_fn,
		.allocator_data = &budget,
	};
	enum relay_frame_error e;
	struct relay_frame f;
	pb_frame *m;

	memset(ret, 0, sizeof(*ret));
	if (len > RELAY_FRAME_MAX_MESSAGE) {
		e = RELAY_FRAME_ERR_TOO_BIG;
		goto out;
	}
	m = (pb_frame *)protobuf_c_message_unpack(&PB_FRAME_DESC, &alloc, len, buf);
	if (!m) {
		e = budget.over ? RELAY_FRAME_ERR_NOMEM : RELAY_FRAME_ERR_MALFORMED;
		goto out;
	}
	view_of(m, &f);
	e = relay_frame_check(&f);
	if (e == RELAY_FRAME_OK && own_fields(&f) < 0)
		e = RELAY_FRAME_ERR_NOMEM;
	protobuf_c_message_free_unpacked(&m->base, &alloc);
	if (e == RELAY_FRAME_OK)
		*ret = f;
out:
	if (reterr)
		*reterr = e;
	return error_errno(e);
}

void relay_frame_done(struct relay_frame *f)
{
	if (!f)
		return;
	free(f->mem);
	memset(f, 0, sizeof(*f));
}

void relay_frame_init(struct relay_frame *f, enum relay_frame_kind kind, const char *stream_id,
		      size_t stream_id_len)
{
	memset(f, 0, sizeof(*f));
	f->version = RELAY_FRAME_VERSION;
	f->stream_id = stream_id;
	f->stream_id_len = stream_id_len;
	f->kind = kind;
	if (kind == RELAY_FRAME_DATA)
		f->data.segment_count = 1;
}

void relay_frame_init_data(struct relay_frame *f, const char *stream_id, size_t stream_id_len,
			   uint32_t seq, const uint8_t *payload, size_t payload_len)
{
	relay_frame_init(f, RELAY_FRAME_DATA, stream_id, stream_id_len);
	f->data.seq = seq;
	f->data.payload = payload;
	f->data.payload_len = payload_len;
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static uint8_t *put_varint(uint8_t *w, uint64_t v)
{
	while (v >= 0x80) {
		*w++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*w++ = (uint8_t)v;
	return w;
}

/*
 * Field by field as prost writes a Data frame (tag order, defaults left out):
 * version (1) = 1, stream_id (2), data (5) { seq (1) when not 0,
 * segment_count (3) = 1, payload (4) }.
 */
ssize_t relay_frame_data_prefix(const char *stream_id, size_t stream_id_len, uint32_t seq,
				size_t payload_len, uint8_t *buf, size_t cap)
{
	size_t body, n;
	uint8_t *w = buf;

	if (!stream_id_len || stream_id_len > RELAY_FRAME_MAX_STREAM_ID || !payload_len ||
	    payload_len > RELAY_FRAME_MAX_MESSAGE)
		return -EINVAL;
	body = (seq ? 1 + varint_len(seq) : 0) + 2 + 1 + varint_len(payload_len) + payload_len;
	n = 2 + 1 + varint_len(stream_id_len) + stream_id_len + 1 + varint_len(body);
	if (n + body > RELAY_FRAME_MAX_MESSAGE)
		return -EMSGSIZE;
	if (!buf)
		return (ssize_t)(n + body - payload_len);
	if (cap < n + body - payload_len)
		return -ENOBUFS;
	*w++ = 0x08; /* version */
	*w++ = RELAY_FRAME_VERSION;
	*w++ = 0x12; /* stream_id */
	w = put_varint(w, stream_id_len);
	memcpy(w, stream_id, stream_id_len);
	w += stream_id_len;
	*w++ = 0x2a; /* data */
	w = put_varint(w, body);
	if (seq) {
		*w++ = 0x08;
		w = put_varint(w, seq);
	}
	*w++ = 0x18; /* segment_count */
	*w++ = 1;
	*w++ = 0x22; /* payload */
	w = put_varint(w, payload_len);
	return w - buf;
}

void relay_frame_init_handshake(struct relay_frame *f, const char *stream_id, size_t stream_id_len,
				const uint8_t *payload, size_t payload_len)
{
	relay_frame_init(f, RELAY_FRAME_HANDSHAKE, stream_id, stream_id_len);
	f->handshake.payload = payload;
	f->handshake.payload_len = payload_len;
}

void relay_frame_init_reset(struct relay_frame *f, const char *stream_id, size_t stream_id_len,
			    const char *reason, size_t reason_len)
{
	relay_frame_init(f, RELAY_FRAME_RESET, stream_id, stream_id_len);
	f->reset.reason = reason;
	f->reset.reason_len = reason_len;
}

/* The generated structs for f, pointing at f's memory (protobuf-c packs without writing). */
struct pb_all {
	pb_frame m;
	pb_data data;
	pb_ack ack;
	pb_resume resume;
	pb_reset reset;
	pb_heartbeat heartbeat;
	pb_handshake handshake;
};

static ProtobufCBinaryData bin(const void *p, size_t len)
{
	return (ProtobufCBinaryData){ .len = len, .data = (uint8_t *)(uintptr_t)p };
}

/* Fills *pb from a frame that passed relay_frame_check; returns the packed size. */
static size_t to_pb(const struct relay_frame *f, struct pb_all *pb)
{
	codex__exec_server__relay__v1__relay_message_frame__init(&pb->m);
	codex__exec_server__relay__v1__relay_data__init(&pb->data);
	codex__exec_server__relay__v1__relay_ack__init(&pb->ack);
	codex__exec_server__relay__v1__relay_resume__init(&pb->resume);
	codex__exec_server__relay__v1__relay_reset__init(&pb->reset);
	codex__exec_server__relay__v1__relay_heartbeat__init(&pb->heartbeat);
	codex__exec_server__relay__v1__relay_handshake__init(&pb->handshake);
	pb->m.version = f->version;
	pb->m.stream_id = bin(f->stream_id, f->stream_id_len);
	pb->m.ack = f->ack;
	pb->m.ack_bits = f->ack_bits;
	pb->m.body_case = (Codex__ExecServer__Relay__V1__RelayMessageFrame__BodyCase)f->kind;
	switch (f->kind) {
	case RELAY_FRAME_DATA:
		pb->data.seq = f->data.seq;
		pb->data.segment_index = f->data.segment_index;
		pb->data.segment_count = f->data.segment_count;
		pb->data.payload = bin(f->data.payload, f->data.payload_len);
		pb->m.data = &pb->data;
		break;
	case RELAY_FRAME_ACK:
		pb->m.ack_frame = &pb->ack;
		break;
	case RELAY_FRAME_RESUME:
		pb->resume.next_seq = f->resume.next_seq;
		pb->m.resume = &pb->resume;
		break;
	case RELAY_FRAME_RESET:
		pb->reset.reason = bin(f->reset.reason, f->reset.reason_len);
		pb->m.reset = &pb->reset;
		break;
	case RELAY_FRAME_HEARTBEAT:
		pb->m.heartbeat = &pb->heartbeat;
		break;
	case RELAY_FRAME_HANDSHAKE:
		pb->handshake.payload = bin(f->handshake.payload, f->handshake.payload_len);
		pb->m.handshake = &pb->handshake;
		break;
	}
	if (f->has_traceparent) {
		pb->m._traceparent_case =
			CODEX__EXEC_SERVER__RELAY__V1__RELAY_MESSAGE_FRAME___TRACEPARENT_TRACEPARENT;
		pb->m.traceparent = bin(f->traceparent, f->traceparent_len);
	}
	if (f->has_tracestate) {
		pb->m._tracestate_case =
			CODEX__EXEC_SERVER__RELAY__V1__RELAY_MESSAGE_FRAME___TRACESTATE_TRACESTATE;
		pb->m.tracestate = bin(f->tracestate, f->tracestate_len);
	}
	return protobuf_c_message_get_packed_size(&pb->m.base);
}

/*
 * Checks f and fills *pb; the packed size, or -EINVAL / -EMSGSIZE. Lengths
 * are capped before protobuf-c adds them up, so the size cannot wrap.
 */
static ssize_t prepare(const struct relay_frame *f, struct pb_all *pb)
{
	size_t n;

	if (relay_frame_check(f) != RELAY_FRAME_OK)
		return -EINVAL;
	if (f->traceparent_len > RELAY_FRAME_MAX_MESSAGE || f->tracestate_len > RELAY_FRAME_MAX_MESSAGE ||
	    (f->kind == RELAY_FRAME_DATA && f->data.payload_len > RELAY_FRAME_MAX_MESSAGE) ||
	    (f->kind == RELAY_FRAME_HANDSHAKE && f->handshake.payload_len > RELAY_FRAME_MAX_MESSAGE))
		return -EMSGSIZE;
	n = to_pb(f, pb);
	if (n > RELAY_FRAME_MAX_MESSAGE)
		return -EMSGSIZE;
	return (ssize_t)n;
}

ssize_t relay_frame_encoded_size(const struct relay_frame *f)
{
	struct pb_all pb;

	return prepare(f, &pb);
}

ssize_t relay_frame_encode(const struct relay_frame *f, uint8_t *buf, size_t cap)
{
	struct pb_all pb;
	ssize_t n = prepare(f, &pb);

	if (n < 0)
		return n;
	if ((size_t)n > cap)
		return -ENOBUFS;
	return (ssize_t)protobuf_c_message_pack(&pb.m.base, buf);
}

int relay_frame_encode_alloc(const struct relay_frame *f, uint8_t **ret, size_t *ret_len)
{
	struct pb_all pb;
	ssize_t n = prepare(f, &pb);
	uint8_t *buf;

	if (n < 0)
		return (int)n;
	/* malloc(0) may return NULL; a frame is never empty anyway (version is 1). */
	buf = malloc((size_t)n);
	if (!buf)
		return -ENOMEM;
	*ret_len = protobuf_c_message_pack(&pb.m.base, buf);
	*ret = buf;
	return 0;
}
