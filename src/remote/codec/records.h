/* SPDX-License-Identifier: MIT */
/*
 * A relay stream's plaintext side (RELAY.md §4.3-§4.4, §5.1), no I/O:
 *
 *  - each JSON-RPC message travels as a 4-byte big-endian length and the
 *    message, cut into records of at most 60 KiB (one Noise transport
 *    message, one Data frame each); lengths 0 and over 64 MiB are errors;
 *  - the receiver reassembles records into messages (a record may end one
 *    message and start the next, a message may span many records);
 *  - Data frames are numbered from 0 per direction and never wrap;
 *  - received frames are put back in order: duplicates dropped, a gap
 *    buffered within 64 frames of distance, 64 frames and 1 MiB.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define RELAY_RECORD_MAX (60 * 1024)          /* NOISE_RECORD_PLAINTEXT_LEN */
#define RELAY_MESSAGE_MAX (64u * 1024 * 1024) /* MAX_NOISE_JSONRPC_MESSAGE_LEN */
#define RELAY_REORDER_DISTANCE 64
#define RELAY_REORDER_FRAMES 64
#define RELAY_REORDER_BYTES (1024 * 1024)

/*
 * The message framing itself, shared by every side that runs it: the
 * carried transport (src/transport/conn-carried.c: the executor's streams),
 * the reader and the writer below (a harness's side: bench/relaybench.c).
 */
#define RELAY_MSG_PREFIX 4

/* Writes the 4-byte big-endian length of a len-byte message (len <= UINT32_MAX). */
void relay_msg_prefix(uint8_t out[RELAY_MSG_PREFIX], size_t len);

/*
 * The framed message at the start of p[0..avail): 1 when it is whole (4 +
 * *ret_len bytes), 0 when more bytes are needed (*ret_len is set once the
 * prefix is there), -EBADMSG for a length of 0 or over max (*ret_len holds it).
 */
int relay_msg_peek(const uint8_t *p, size_t avail, size_t max, uint32_t *ret_len);

/* Cuts one message into records. */
struct relay_msg_writer {
	const uint8_t *msg;
	size_t len, off; /* off counts the 4 prefix bytes too */
};

/* Returns 0, or -EMSGSIZE for an empty message or one over 64 MiB. */
int relay_msg_writer_init(struct relay_msg_writer *w, const uint8_t *msg, size_t len);
/* The next record into out (RELAY_RECORD_MAX bytes); its length, or 0 when done. */
size_t relay_msg_writer_next(struct relay_msg_writer *w, uint8_t *out);

/* Reassembles records into messages. */
struct relay_msg_reader {
	struct buf buf;
};

/*
 * Appends one decrypted record and calls fn for every message it completes
 * (msg valid during the call only; a negative return from fn stops and is
 * returned). Returns 0, -EMSGSIZE for a record over 60 KiB or a buffer past
 * 4 + 64 MiB, -EBADMSG for a length of 0 or over 64 MiB, -ENOMEM.
 */
int relay_msg_reader_feed(struct relay_msg_reader *r, const uint8_t *rec, size_t len,
			  int (*fn)(void *ctx, const uint8_t *msg, size_t len), void *ctx);
void relay_msg_reader_done(struct relay_msg_reader *r);

/* The next sequence number of a direction: -ERANGE once u32::MAX is reached (never wraps). */
int relay_seq_take(uint32_t *next, uint32_t *ret);

/* Receive-side ordering of one stream's Data frames (OrderedCiphertextFrames). */
struct relay_order {
	uint32_t next_seq;
	unsigned n_pending;
	size_t pending_bytes;
	struct {
		bool used;
		uint32_t seq;
		uint8_t *data;
		size_t len;
	} slot[RELAY_REORDER_FRAMES];
};

/*
 * Takes frame seq (data copied) and calls fn, in order, for it and every
 * buffered frame that is now contiguous. A duplicate (seq < next_seq or
 * already buffered) is dropped: returns 0. Returns -ERANGE for a frame too
 * far ahead, -ENOBUFS past 64 frames or 1 MiB buffered, -EOVERFLOW when
 * next_seq would wrap, -ENOMEM, or fn's negative return (all fatal for the
 * stream).
 */
int relay_order_push(struct relay_order *o, uint32_t seq, const uint8_t *data, size_t len,
		     int (*fn)(void *ctx, const uint8_t *data, size_t len), void *ctx);
void relay_order_done(struct relay_order *o);
