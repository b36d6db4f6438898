/* SPDX-License-Identifier: MIT */
/*
 * What differs between the transports of a connection (WebSocket, stdio,
 * carried), as one operations table each (conn-ws.c, conn-stdio.c,
 * conn-carried.c), and the calls of conn.c's transport-independent part
 * (output queue, flush, congestion, close) they use. Private to
 * src/transport.
 */
#pragma once

#include "conn.h"

struct conn_ops {
	/* Message framing: the header length for a payload, and the trailer's. */
	size_t (*hdr_len)(size_t payload_len);
	size_t trailer;
	/* Writes a message's header (and trailer) around payload_len bytes at o->data. */
	void (*frame)(struct outchunk *o, size_t payload_len);
	/* The header length of a message framed already (conn_realloc_msg). */
	size_t (*framed_hdr_len)(const struct outchunk *o);

	/* Optional: input before messages flow (CONN_HTTP: the WebSocket upgrade). */
	void (*handshake)(struct conn *c);
	/* Parses and dispatches the messages waiting in c->in (c is CONN_OPEN). */
	void (*input)(struct conn *c);
	/* Optional: takes a message instead of the JSON-RPC layer (conn_handlers). */
	void (*deliver)(struct conn *c, const char *data, size_t len);
	/* Optional: output was queued; instead of the ring's writev on fd_out. */
	void (*flush)(struct conn *c);
	/* Optional: the output queue drained below the backpressure mark. */
	void (*drained)(struct conn *c);
	/* Optional: the connection ended (conn_kill, conn_free_all): tell its owner. */
	void (*ended)(struct conn *c);
	/* Optional: sends a Close frame with code before a closing flush. */
	void (*close_frame)(struct conn *c, uint16_t code);
	/* Optional: one ping tick of an open connection (conn_send_ping_all). */
	void (*ping)(struct conn *c);
	/* Optional: bytes the peer acknowledged (a closing connection's progress), or 0. */
	uint64_t (*peer_acked)(const struct conn *c);

	bool socket;          /* fd_in == fd_out is a socket c owns: recv, shutdown, close */
	bool stops_server;    /* its end is the server's (stdio) */
	bool flush_on_close;  /* conn_close() flushes the queue even without a close code */
	bool closing_watched; /* a closing connection that stopped reading is ended */
	bool answer_after_eof; /* end of input: answer the requests in flight first */
};

extern const struct conn_ops conn_ws_ops;
extern const struct conn_ops conn_stdio_ops;
extern const struct conn_ops conn_carried_ops;

/* A new connection on s->conns (fds -1, CONN_HTTP), or NULL. */
struct conn *conn_alloc(struct server *s, enum conn_transport t, const struct conn_ops *ops);
/* Ends c at once (no flush); it is freed by conn_reap(). */
void conn_kill(struct conn *c);
/* Queues bytes as they are (a control frame, an HTTP response); kills c on OOM. */
void conn_send_raw(struct conn *c, const void *p, size_t n);
/* One whole message to the layers above (the transport's deliver, or the next). */
void conn_deliver(struct conn *c, const char *data, size_t len);
/* One whole message to the JSON-RPC layer (conn_set_handlers). */
void conn_deliver_rpc(struct conn *c, const char *data, size_t len);
/* GET /metrics' body from the layers above; -EOPNOTSUPP when none is set, or their error. */
int conn_metrics(struct server *s, struct buf *out);
/* Arms the ring read on fd_in, unless it may not read now. */
void conn_arm_read(struct conn *c);
/* n bytes of the output queue went out; false when c is gone or closed. */
bool conn_out_written(struct conn *c, size_t n);
