/* SPDX-License-Identifier: MIT */
/*
 * A client connection: its transport (WebSocket over TCP, or newline-delimited
 * JSON on stdio), input parsing, and the output queue with backpressure. The
 * JSON-RPC layer (rpc.c) sees only whole messages and conn_send_*().
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "buf.h"
#include "conn-mem.h"
#include "list.h"
#include "ring.h"
#include "server.h"
#include "strmap.h"
#include "ws.h"

enum conn_transport {
	CONN_WS,
	CONN_STDIO,
	CONN_CARRIED, /* bytes moved by an owner above the transport (a relay stream) */
};

struct conn;

/*
 * The owner of a carried connection (a remote relay stream): it feeds the
 * application byte stream in with conn_carried_input() and takes the output
 * with conn_out_peek() / conn_out_advance(). Messages travel as a 4-byte
 * big-endian length and the JSON text (RELAY.md §4.3).
 */
struct conn_carrier {
	/* Output was queued: pull it now or when the carrier has room again. */
	void (*flush)(struct conn *c);
	/* The connection ended (from either side); runs once, the owner forgets c. */
	void (*ended)(struct conn *c);
	/* Optional: messages go here instead of the JSON-RPC layer (forward mode). */
	void (*message)(struct conn *c, const char *data, size_t len);
	/* Optional: the output queue drained below the backpressure mark. */
	void (*drained)(struct conn *c);
};

enum conn_state {
	CONN_HTTP,    /* waiting for the upgrade request */
	CONN_OPEN,    /* messages flow */
	CONN_CLOSING, /* flushing the last frames, then close */
	CONN_DEAD,    /* fds closed; freed once no op is in flight */
};

#define CONN_MAX_IOV 32

struct outchunk {
	struct list_head link;
	size_t len, off;
	uint8_t data[];
};

struct conn_ops;
struct session;
struct tls_mem;

struct conn {
	struct list_head link; /* server->conns */
	struct server *srv;
	enum conn_transport transport;
	const struct conn_ops *ops; /* what differs per transport (conn-ops.h) */
	enum conn_state state;
	int fd_in, fd_out;
	char peer[64];
	/*
	 * WebSocket slot keeping: in server->handshaking from accept until the
	 * upgrade, then in server->uninitialized until initialize succeeds
	 * (both oldest first: eviction and the handshake deadline take the head).
	 */
	struct list_head slot_link;
	uint64_t accepted_ns;      /* CLOCK_MONOTONIC at accept: the handshake deadline runs from it */
	unsigned pings_unanswered; /* pings sent since the peer last sent anything */
	/*
	 * CONN_CLOSING (a WebSocket): out_bytes and the bytes the peer acknowledged
	 * at the last ping tick, and the ticks in a row at which neither had moved
	 * (conn_send_ping_all).
	 */
	size_t closing_mark;
	uint64_t closing_acked;
	unsigned closing_stalled;

	struct buf in;
	struct ws_parser ws;
	struct uring_op read_op;
	struct buf_waiter bufwait;
	bool read_armed;
	bool read_blocked; /* output over the limit: stop reading requests */
	bool input_eof;    /* stdio: input ended while requests were in flight */
	bool in_input;     /* conn_input_resume() is running (no nesting) */

	struct list_head outq;
	size_t out_bytes;  /* queued and not yet written (backpressure) */
	size_t out_alloc;  /* held by queued chunks until freed (the memory budget) */
	struct uring_op write_op;
	struct iovec iov[CONN_MAX_IOV];
	unsigned n_iov;

	/* In-flight memory (conn-mem.h) */
	struct list_head mem_charges;     /* struct conn_mem held by this connection's requests */
	size_t mem_charged;               /* their bytes */
	size_t mem_waiting;               /* bytes of those waiting for admission */
	unsigned mem_n_waiting;
	unsigned mem_pass;                /* admission pass that skipped a waiter of c */
	bool mem_paused;                  /* over budget: requests wait unparsed in c->in */
	unsigned held;                    /* conn_hold(): requests wait unparsed in c->in */
	struct list_head mem_paused_link; /* server->mem_paused while paused */

	/* JSON-RPC state */
	bool initialize_done;
	bool initialized;
	struct session *sess;
	struct list_head pending; /* struct rpc_pending: requests answered later */
	struct list_head calls;   /* struct rpc_call: the server's requests awaiting the client's reply */
	int64_t next_call_id;     /* the next of them: ids from 1 per connection (the reference's) */
	struct fs_watch *watch; /* fs/watchMissing state (watch.c) */

	/* fs/open handles of this connection (rpc-fs.c) */
	struct strmap fs_handles;

	/* --listen wss://: the connection's TLS (src/tls/tls-mem.h), or NULL. */
	struct tls_mem *tls;

	/* CONN_CARRIED: the owner and its calls (NULL once it let go). */
	const struct conn_carrier *carrier;
	void *carrier_owner;
	bool carrier_paused; /* conn_carried_pause() */
};

/*
 * What the transport calls in the layers above it (set once at start with
 * conn_set_handlers() by the executable's wiring; any member may be NULL).
 */
struct conn_handlers {
	/* One complete message (text, not NUL-terminated). */
	void (*message)(struct conn *c, const char *data, size_t len);
	/* The connection ends: detach its session, cancel what it waits for. May run twice. */
	void (*closed)(struct conn *c);
	/* The output queue drained below the backpressure mark. */
	void (*drained)(struct conn *c);
	/* Just before the connection is freed. */
	void (*freed)(struct conn *c);
	/* GET /metrics: appends the Prometheus text exposition to out. Returns 0 or -ENOMEM. */
	int (*metrics)(struct server *s, struct buf *out);
};
/* h (static, or living as long as the transport is used) replaces the handlers; NULL: none. */
void conn_set_handlers(const struct conn_handlers *h);

/* Takes ownership of fd (a connected TCP socket). Returns 0 or -errno. */
int conn_new_ws(struct server *s, int fd, const char *peer);
/*
 * A live upgrade's RESTORE (src/upgrade/adopt.c): a WebSocket connection
 * handed over (fd owned from now on, past its HTTP upgrade), with the frames
 * the old binary had queued (already framed, sent first). Nothing is read
 * until conn_adopt_start(), which the caller runs once the session is
 * attached: it keeps in[0..in_len) (read, not parsed: the start of a frame)
 * before what is read next, and arms the read. Returns 0 or -ENOMEM (fd not
 * taken).
 */
int conn_adopt_ws(struct server *s, int fd, const char *peer, bool initialize_done,
		  bool initialized, const uint8_t *out, size_t out_len, struct conn **ret);
void conn_adopt_start(struct conn *c, const uint8_t *in, size_t in_len);
/* The same for the stdio connection (fds 0 and 1, not owned). */
int conn_adopt_stdio(struct server *s, bool initialize_done, bool initialized,
		     const uint8_t *out, size_t out_len, struct conn **ret);
/* Serves JSON-RPC on fds 0/1. */
int conn_new_stdio(struct server *s);

/*
 * A connection without fds whose bytes an owner carries (a relay stream).
 * Returns 0 or -ENOMEM; *ret is the open connection.
 */
int conn_new_carried(struct server *s, const char *peer, const struct conn_carrier *cr,
		     void *owner, struct conn **ret);
/*
 * Received bytes of a carried connection's application stream (any cut).
 * Complete messages are dispatched unless the connection is paused (its
 * in-flight budget or its output backpressure); the rest waits. Returns 0,
 * -EBADMSG for a length of 0 or over --max-message-bytes, -ENOBUFS when
 * input waiting to be dispatched would pass --max-message-bytes + 4 plus
 * CONN_CARRIED_SLACK (the owner resets the stream: a peer that does not wait
 * for answers must not grow memory without bound), -ENOMEM. After an error
 * the connection is still open: the owner closes it.
 */
#define CONN_CARRIED_SLACK (8u << 20)
int conn_carried_input(struct conn *c, const uint8_t *p, size_t n);
/*
 * The owner stops (true) or resumes (false) the dispatch of a carried
 * connection's input, e.g. while the place messages go is full; input keeps
 * being accepted up to conn_carried_input()'s bound meanwhile.
 */
void conn_carried_pause(struct conn *c, bool paused);
/*
 * The next output of a carried connection: up to max bytes of the first
 * queued message, never bytes of two messages (upstream senders cut each
 * message on its own). Returns the length (0: nothing queued).
 */
size_t conn_out_peek(struct conn *c, const uint8_t **ret, size_t max);
/* n bytes of what conn_out_peek() gave are sent (or handed on): drop them. */
void conn_out_advance(struct conn *c, size_t n);

/* Queues one JSON-RPC message (text). Copies the bytes. */
void conn_send_text(struct conn *c, const char *json, size_t len);
/* Serialises and queues msg (borrowed). */
void conn_send_json(struct conn *c, const json_t *msg);

/*
 * Hot path: reserves a message of exactly payload_len bytes and returns where
 * to write it; the message is queued by conn_commit(). Returns NULL on OOM.
 */
struct outchunk *conn_alloc_msg(struct conn *c, size_t payload_len, uint8_t **ret_payload);
/*
 * Resizes a message from conn_alloc_msg() that is not committed yet to
 * payload_len bytes, keeping its payload (up to the shorter length). Returns
 * the new chunk, or NULL on OOM (o is then unchanged and still owned).
 */
struct outchunk *conn_realloc_msg(struct conn *c, struct outchunk *o, size_t payload_len,
				  uint8_t **ret_payload);
void conn_commit(struct conn *c, struct outchunk *o);

/*
 * A request answered later that later requests must not overtake (a
 * process/start whose spawn runs on the spawner thread): the connection's
 * further requests wait unparsed, as with --concurrent-requests 1, until
 * conn_release(), which dispatches them. Holds nest.
 */
void conn_hold(struct conn *c);
void conn_release(struct conn *c);

/* Parses and dispatches what waits in c's input buffer, then reads on (for conn-mem.c). */
void conn_input_resume(struct conn *c);

/* True while the output queue is above the backpressure limit. */
bool conn_congested(const struct conn *c);

/*
 * Ends the connection. With a WebSocket in CONN_OPEN and code != 0 a Close
 * frame with that code is sent first and the socket is closed once flushed.
 * The session is detached.
 */
void conn_close(struct conn *c, uint16_t ws_code, const char *why);

/*
 * Sends an empty Ping to every open WebSocket connection, after closing those
 * that sent nothing since the last CONN_MAX_MISSED_PINGS pings (only pings
 * that could reach the peer count: none while its output queue is not empty
 * or no read is pending on it).
 */
#define CONN_MAX_MISSED_PINGS 2
void conn_send_ping_all(struct server *s);

/* initialize succeeded on c: it is no longer a candidate for eviction. */
void conn_initialize_done(struct conn *c);

/*
 * Makes room at --max-connections: closes the oldest WebSocket connection
 * still before its HTTP upgrade, else the oldest that has not initialized.
 * Returns false when every connection is initialized (nothing is closed).
 */
bool conn_evict_one(struct server *s);

/* Frees dead connections whose ops have completed (called between loop iterations). */
void conn_reap(struct server *s);

/* Frees every connection immediately (server shutdown, after the ring is gone). */
void conn_free_all(struct server *s);
