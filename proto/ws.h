/* SPDX-License-Identifier: MIT */
/*
 * WebSocket (RFC 6455) framing for both ends: frame header codec (unmasked
 * server frames, masked client frames) and a stateful message parser
 * (unmasking, fragmentation, control frames, UTF-8 checks, size limits) that
 * reads either a client's stream (the server, default) or a server's stream
 * (.client = true). No I/O: the caller feeds bytes and acts on events.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum ws_opcode {
	WS_OP_CONT = 0x0,
	WS_OP_TEXT = 0x1,
	WS_OP_BINARY = 0x2,
	WS_OP_CLOSE = 0x8,
	WS_OP_PING = 0x9,
	WS_OP_PONG = 0xA,
};

enum ws_close_code {
	WS_CLOSE_NORMAL = 1000,
	WS_CLOSE_GOING_AWAY = 1001,
	WS_CLOSE_PROTOCOL = 1002,
	WS_CLOSE_BAD_DATA = 1007,
	WS_CLOSE_TOO_BIG = 1009,
	WS_CLOSE_INTERNAL = 1011,
};

struct ws_frame_hdr {
	bool fin;
	uint8_t rsv;    /* RSV1..3 bits, shifted to 0..7 */
	uint8_t opcode;
	bool masked;
	uint8_t mask[4];
	uint64_t payload_len;
	size_t header_len;
};

/*
 * Parses a frame header from buf[0..len). Returns header length (> 0),
 * -EAGAIN if more bytes are needed, -EBADMSG for a non-minimal or >2^63 length.
 */
int ws_frame_hdr_parse(const uint8_t *buf, size_t len, struct ws_frame_hdr *ret);

/*
 * XORs p[0..n) with mask, starting at mask position `offset` (mod 4). Masking
 * and unmasking are the same operation: a client masks its payload with this.
 */
void ws_unmask(uint8_t *p, size_t n, const uint8_t mask[4], uint64_t offset);

/* Max header size of a server frame. */
#define WS_MAX_HDR 10

/* Writes an unmasked server frame header (FIN set) into dst; returns its length (2, 4 or 10). */
size_t ws_frame_hdr_encode(uint8_t *dst, enum ws_opcode op, uint64_t payload_len);

/* Max header size of a client frame (masked). */
#define WS_MAX_CLIENT_HDR 14

/*
 * Writes a masked client frame header (FIN set, MASK bit, the 4-byte key after
 * the length) into dst; returns its length (6, 8 or 14). The caller masks the
 * payload with ws_unmask(payload, n, mask, 0). RFC 6455 §5.3: the key must be
 * fresh and unpredictable for every frame (the caller supplies it: no I/O here).
 */
size_t ws_frame_hdr_encode_masked(uint8_t *dst, enum ws_opcode op, uint64_t payload_len,
				  const uint8_t mask[4]);

struct ws_limits {
	uint64_t max_frame_bytes;   /* a single frame's payload */
	uint64_t max_message_bytes; /* a reassembled message */
};

enum ws_event_type {
	WS_EV_NONE = 0,   /* bytes consumed, nothing complete yet */
	WS_EV_MESSAGE,    /* complete text/binary message */
	WS_EV_PING,
	WS_EV_PONG,
	WS_EV_CLOSE,
};

struct ws_event {
	enum ws_event_type type;
	bool binary;          /* WS_EV_MESSAGE: opcode was binary */
	const uint8_t *data;  /* payload view: valid until the next ws_parser_feed/ws_parser_done */
	size_t len;
	uint16_t close_code;  /* WS_EV_CLOSE: 1005 when the frame had no code */
};

/*
 * Message parser. Zero-fill, then set .limits (and .client) before use.
 * Server mode (client = false) reads a client's frames, which must be masked;
 * client mode reads a server's frames, which must not be (RFC 6455 §5.1).
 */
struct ws_parser {
	struct ws_limits limits;
	bool client;
	/* private */
	uint8_t *_msg;        /* reassembly buffer for fragmented messages */
	size_t _msg_len, _msg_cap;
	bool _in_message;
	bool _msg_binary;
};

/*
 * Consumes bytes from buf[0..len) (the caller's buffer; masked payloads are
 * unmasked in place). Processes at most one complete frame per call.
 * Returns bytes consumed (>= 0; 0 with WS_EV_NONE means "need more bytes") and
 * fills *ev, or a negative error meaning "close the connection":
 *   -EPROTO  protocol violation (unmasked frame in server mode, masked
 *            frame in client mode, RSV bits, unknown opcode,
 *            control frame > 125 bytes or fragmented, continuation without a
 *            start, new data frame inside a fragmented message, bad close
 *            payload)  -> close code 1002
 *   -EMSGSIZE  frame larger than max_frame_bytes, or message larger than
 *            max_message_bytes -> 1009
 *   -EILSEQ  a text message (or close reason) that is not valid UTF-8 -> 1007
 *   -ENOMEM
 * A whole frame must be present in buf before it is consumed: the caller
 * keeps unconsumed bytes and calls again with more. Violations are reported as
 * early as the header bytes allow: RSV/opcode/mask/control-frame rules from the
 * first two bytes, size limits (and frames above INT_MAX bytes, -EMSGSIZE) as
 * soon as the length field is complete, before the mask key or payload.
 */
int ws_parser_feed(struct ws_parser *p, uint8_t *buf, size_t len, struct ws_event *ev);

/*
 * Bytes the caller must have buffered to complete the frame at buf (header +
 * payload), or 0 if the header is incomplete or malformed (feed reports why).
 */
uint64_t ws_parser_frame_need(const uint8_t *buf, size_t len);

/* Frees the reassembly buffer. */
void ws_parser_done(struct ws_parser *p);

/* Close code for a ws_parser_feed error. */
uint16_t ws_close_code_for_error(int r);
