/* SPDX-License-Identifier: MIT */
/*
 * Relay frames (../shared/spec/RELAY.md §1-§5): one protobuf
 * `codex.exec_server.relay.v1.RelayMessageFrame` per binary WebSocket message
 * of the remote relay. No I/O.
 *
 * Decoding unpacks with the protobuf-c code generated at build time from
 * src/remote/codec/relay.v1.proto (the generated types never leave relay-frame.c),
 * copies the fields out into a struct relay_frame and applies every rule of
 * RELAY.md §2.1 (the stricter revision) before returning. Encoding produces
 * the bytes prost produces for the same frame: fields in tag order, proto3
 * defaults (0, empty) omitted, a body always written (an empty message as
 * tag + length 0), a present trace field written even when empty.
 *
 * Known differences from prost's decoder, on inputs no upstream sender
 * produces: a body field that occurs twice is replaced by the second
 * occurrence (prost merges the two); unknown fields of the group wire types
 * (3, 4) are refused (prost skips them); a 10-byte varint whose last byte is
 * above 1 is taken modulo 2^32 (prost refuses it).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* RELAY_MESSAGE_FRAME_VERSION: the only version (§2). */
#define RELAY_FRAME_VERSION 1
/* MAX_NOISE_RELAY_WEBSOCKET_MESSAGE_SIZE: one frame, encoded (§1). */
#define RELAY_FRAME_MAX_MESSAGE (256 * 1024)
/* MAX_RELAY_STREAM_ID_BYTES, stricter revision of §2.1. */
#define RELAY_FRAME_MAX_STREAM_ID 128
/* MAX_RELAY_RESET_REASON_BYTES, stricter revision of §2.1. */
#define RELAY_FRAME_MAX_RESET_REASON 256
/*
 * Not frame rules (§2.1 has none on payload sizes), for the Noise layer: the
 * largest Noise message, handshake or transport record (§6.1), and the
 * largest plaintext of one transport record (§4.3).
 */
#define RELAY_FRAME_NOISE_MAX_MESSAGE 65535
#define RELAY_FRAME_NOISE_RECORD_PLAINTEXT (60 * 1024)

/* The body, numbered by its field tag in the oneof. */
enum relay_frame_kind {
	RELAY_FRAME_DATA = 5,
	RELAY_FRAME_ACK = 6, /* `ack_frame` */
	RELAY_FRAME_RESUME = 7,
	RELAY_FRAME_RESET = 8,
	RELAY_FRAME_HEARTBEAT = 9,
	RELAY_FRAME_HANDSHAKE = 10,
};

/*
 * Why a frame was refused; relay_frame_error_str() gives a short static text
 * for a log line (never any byte of the frame).
 */
enum relay_frame_error {
	RELAY_FRAME_OK = 0,
	RELAY_FRAME_ERR_TOO_BIG,          /* -EMSGSIZE: > RELAY_FRAME_MAX_MESSAGE (§1) */
	RELAY_FRAME_ERR_MALFORMED,        /* -EBADMSG: not a RelayMessageFrame (§2.1, "Malformed protobuf") */
	RELAY_FRAME_ERR_NOT_UTF8,         /* -EBADMSG: a string field is not UTF-8 (prost refuses it) */
	RELAY_FRAME_ERR_VERSION,          /* -EPROTO from here on: §2.1 rule 1 */
	RELAY_FRAME_ERR_NO_STREAM_ID,     /* rule 2: empty after trimming white space */
	RELAY_FRAME_ERR_STREAM_ID_SPACE,  /* stricter: leading or trailing white space */
	RELAY_FRAME_ERR_STREAM_ID_LONG,   /* stricter: > RELAY_FRAME_MAX_STREAM_ID bytes */
	RELAY_FRAME_ERR_NO_BODY,          /* rule 3 */
	RELAY_FRAME_ERR_DATA_FIELDS,      /* rule 4: segment_index != 0, segment_count != 1 or empty payload */
	RELAY_FRAME_ERR_NO_RESET_REASON,  /* rule 5 */
	RELAY_FRAME_ERR_RESET_REASON_LONG,/* stricter: > RELAY_FRAME_MAX_RESET_REASON bytes */
	RELAY_FRAME_ERR_NO_HANDSHAKE,     /* rule 6: empty handshake payload */
	RELAY_FRAME_ERR_NOMEM,            /* -ENOMEM */
	RELAY_FRAME_ERR_MAX,
};

/*
 * A validated frame. Strings are UTF-8 with a length (they may hold NUL
 * bytes) and are also NUL-terminated. After relay_frame_decode every view
 * points into memory the frame owns (relay_frame_done frees it); for encoding
 * the caller points the views at its own memory.
 */
struct relay_frame {
	uint32_t version; /* RELAY_FRAME_VERSION */
	const char *stream_id;
	size_t stream_id_len;
	uint32_t ack;      /* always 0 from upstream (§5.1) */
	uint32_t ack_bits; /* idem */
	enum relay_frame_kind kind;
	union {
		struct {
			uint32_t seq;
			uint32_t segment_index; /* 0 */
			uint32_t segment_count; /* 1 */
			const uint8_t *payload; /* non-empty */
			size_t payload_len;
		} data;
		struct {
			uint32_t next_seq;
		} resume;
		struct {
			const char *reason; /* non-empty, untrusted: do not log it */
			size_t reason_len;
		} reset;
		struct {
			const uint8_t *payload; /* non-empty */
			size_t payload_len;
		} handshake;
	};
	/* W3C trace carriers (§4.6); present may go with an empty string. */
	bool has_traceparent, has_tracestate;
	const char *traceparent, *tracestate;
	size_t traceparent_len, tracestate_len;
	/* private: what decode allocated */
	void *mem;
};

const char *relay_frame_error_str(enum relay_frame_error e);

/*
 * Decodes one binary WebSocket message buf[0..len) into *ret and validates it.
 * Returns 0, or -EMSGSIZE (too big), -EBADMSG (malformed protobuf or a string
 * that is not UTF-8), -EPROTO (a §2.1 rule), -ENOMEM; *reterr (if not NULL)
 * says which (RELAY_FRAME_OK on success). On failure *ret is zeroed and owns
 * nothing. Unpacking allocates at most about 100 bytes per input byte, freed
 * before returning; the frame keeps one copy of its variable fields.
 */
int relay_frame_decode(const uint8_t *buf, size_t len, struct relay_frame *ret,
		       enum relay_frame_error *reterr);

/* Frees what relay_frame_decode allocated; the frame owns nothing after. NULL is fine. */
void relay_frame_done(struct relay_frame *f);

/*
 * The checks of §2.1 on a frame in memory (decode runs them; encode too):
 * strings must be UTF-8 and the rules above hold. Returns RELAY_FRAME_OK or
 * the first rule that fails, in decode's order.
 */
enum relay_frame_error relay_frame_check(const struct relay_frame *f);

/*
 * A frame as upstream's constructors build it (§2): version 1, ack and
 * ack_bits 0, the given body with its fields zero, no trace fields; a data
 * body gets segment_index 0 and segment_count 1. The frame does not own the
 * stream id; set the body's fields afterwards, or use the helpers below.
 */
void relay_frame_init(struct relay_frame *f, enum relay_frame_kind kind, const char *stream_id,
		      size_t stream_id_len);

/* What the executor sends: Data (one record), Handshake (msg2), Reset (§4.2). */
void relay_frame_init_data(struct relay_frame *f, const char *stream_id, size_t stream_id_len,
			   uint32_t seq, const uint8_t *payload, size_t payload_len);
void relay_frame_init_handshake(struct relay_frame *f, const char *stream_id, size_t stream_id_len,
				const uint8_t *payload, size_t payload_len);
void relay_frame_init_reset(struct relay_frame *f, const char *stream_id, size_t stream_id_len,
			    const char *reason, size_t reason_len);

/*
 * Encoded size of a frame that passes relay_frame_check, or -EINVAL (it does
 * not), -EMSGSIZE (larger than RELAY_FRAME_MAX_MESSAGE).
 */
ssize_t relay_frame_encoded_size(const struct relay_frame *f);

/*
 * Encodes f into buf[0..cap). Returns the length, or -EINVAL, -EMSGSIZE as
 * relay_frame_encoded_size, -ENOBUFS when cap is too small. Any body kind is
 * encoded (the executor sends only data, handshake and reset; §4.5: nobody
 * sends heartbeats).
 */
ssize_t relay_frame_encode(const struct relay_frame *f, uint8_t *buf, size_t cap);

/*
 * The hot path's Data frame without a copy of its payload: the bytes that
 * relay_frame_encode() writes before the payload of a frame built by
 * relay_frame_init_data(stream_id, seq, payload of payload_len bytes), so
 * that the caller can write the payload (a record encrypted in place) right
 * after them. Returns the prefix length; with buf NULL only computes it.
 * -EINVAL for a stream id that fails the §2.1 rules (not checked for UTF-8:
 * the caller's ids come from decoded frames) or an empty payload, -EMSGSIZE
 * when the frame would pass RELAY_FRAME_MAX_MESSAGE, -ENOBUFS when cap is
 * too small.
 */
#define RELAY_FRAME_DATA_PREFIX_MAX (2 + 1 + 5 + RELAY_FRAME_MAX_STREAM_ID + 1 + 5 + 1 + 5 + 2 + 1 + 5)
ssize_t relay_frame_data_prefix(const char *stream_id, size_t stream_id_len, uint32_t seq,
				size_t payload_len, uint8_t *buf, size_t cap);

/* Same into a malloc'd buffer (*ret, *ret_len); 0, -EINVAL, -EMSGSIZE or -ENOMEM. */
int relay_frame_encode_alloc(const struct relay_frame *f, uint8_t **ret, size_t *ret_len);
