/* SPDX-License-Identifier: MIT */
/*
 * Inside the remote mode (remote.h), shared by the files of src/remote/link
 * only. Its layers, each calling only those below it (what goes up is a hook:
 * remote_link_hooks, remote_ws_handlers, a registry call's callback, a
 * deadline's fn, the transport's conn_carrier):
 *
 *   remote.c         the mode: options, identity, start and stop; register,
 *                    dial, serve, back off (enum remote_state)
 *   stream.c         the Noise streams and their round-robin output
 *   handshake-prep.c msg2's tokens and ephemeral keys on the worker pool
 *   rendezvous.c     the physical link: one WebSocket, frames out, its queue
 *   ws-client.c      a WebSocket client over a netconn (the link, forward)
 *   registry-http.c  one POST to the registry over a netconn
 *   deadline.c       one ring timer for every deadline of the mode
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "list.h"
#include "noise.h"
#include "records.h"
#include "registry.h"
#include "remote.h"
#include "ring.h"
#include "strmap.h"

struct conn;
struct netconn;
struct server;

/* ---- deadlines: one ring timer serves every deadline of the remote mode ---- */

struct remote_deadline {
	struct list_head link; /* remote->deadlines, earliest first; unlinked when idle */
	uint64_t at_ms;        /* CLOCK_MONOTONIC */
	void (*fn)(struct remote_deadline *d);
};

uint64_t remote_now_ms(void);
/* (Re)arms d to run fn in ms milliseconds. */
void remote_deadline_set(struct remote *r, struct remote_deadline *d, uint64_t ms,
			 void (*fn)(struct remote_deadline *d));
void remote_deadline_clear(struct remote_deadline *d);
/* Clears every deadline and cancels the timer (remote_stop). */
void remote_deadlines_stop(struct remote *r);
static inline bool remote_deadline_armed(const struct remote_deadline *d)
{
	return d->link.next != NULL;
}

/* ---- one HTTP request to the registry (registry-http.c) ---- */

struct remote_http;
/*
 * The answer: err 0 and the status and body, or err < 0 (no answer: connect,
 * TLS, timeout, a malformed response) with why, a short text without any
 * response byte. Runs once, unless the call was cancelled.
 */
typedef void (*remote_http_fn)(void *userdata, int err, const char *why, int status,
			       const char *body, size_t len);

/*
 * POSTs body (JSON) to the registry path for op, with the credential (and
 * x-codex-noise-stream-id when stream_id is not NULL), bounded by timeout_ms
 * for connect + request + response. Returns NULL with *ret_err on a failure
 * to start.
 */
struct remote_http *remote_http_post(struct remote *r, enum registry_op op, const char *stream_id,
				     const char *body, size_t len, uint64_t timeout_ms,
				     remote_http_fn fn, void *userdata, int *ret_err);
/* No callback runs after this. */
void remote_http_cancel(struct remote_http *h);
/* Closes the idle keep-alive connections of validate calls (remote_stop). */
void remote_http_idle_close_all(struct remote *r);

/* ---- the WebSocket client (ws-client.c) ---- */

struct remote_ws;

struct remote_ws_handlers {
	void (*open)(struct remote_ws *w);
	void (*message)(struct remote_ws *w, bool binary, const uint8_t *p, size_t n);
	/* Everything queued went to the socket. */
	void (*drained)(struct remote_ws *w);
	/*
	 * Once, unless remote_ws_close() came first; the client is freed after
	 * it. http_status is the refused upgrade's status (0 otherwise); why
	 * is one of the disconnect reasons of RELAY.md §4.5 or a short text.
	 */
	void (*closed)(struct remote_ws *w, int err, int http_status, const char *why);
};

struct remote_ws_config {
	const char *url; /* ws:// or wss:// */
	uint64_t max_frame, max_message;
	uint64_t connect_timeout_ms;
	uint64_t fragment; /* outgoing messages larger than this go as continuation frames; 0: never */
	bool nodelay;
	bool keepalive; /* Ping every 30 s, the connection ends without a Pong within 60 s */
	/* Extra upgrade headers (name, value pairs), NULL-terminated; may be NULL. */
	const char *const *headers;
};

int remote_ws_open(struct remote *r, const struct remote_ws_config *cfg,
		   const struct remote_ws_handlers *h, void *userdata, struct remote_ws **ret);
void *remote_ws_userdata(const struct remote_ws *w);
/* Queues one message (masked, copied). 0, -ENOTCONN, -ENOMEM. */
int remote_ws_send(struct remote_ws *w, bool binary, const void *p, size_t n);
/*
 * The hot path's binary message without copies: room for its n payload bytes
 * in the socket's queue (header and mask key written), then
 * remote_ws_send_commit() masks them in place and queues the frame. Nothing
 * else may be called on w in between. NULL when not open or out of memory.
 */
uint8_t *remote_ws_send_reserve(struct remote_ws *w, size_t n);
int remote_ws_send_commit(struct remote_ws *w);
/* Bytes queued and not yet written to the socket. */
size_t remote_ws_queued(const struct remote_ws *w);
/* Stops (false) or resumes reading from the peer. */
void remote_ws_set_reading(struct remote_ws *w, bool on);
/* Sends a Close frame after what is queued, then ends; closed() runs. */
void remote_ws_shutdown(struct remote_ws *w, uint16_t code);
/* Aborts; no handler runs after it returns. */
void remote_ws_close(struct remote_ws *w);

/* ---- the physical rendezvous link and its streams (rendezvous.c, stream.c) ---- */

#define REMOTE_MAX_ACTIVE_STREAMS 128   /* MAX_ACTIVE_NOISE_RELAY_STREAMS */
#define REMOTE_MAX_PENDING 32           /* MAX_PENDING_HANDSHAKE_VALIDATIONS */
#define REMOTE_MAX_FAILURES 8           /* MAX_FAILED_NOISE_HANDSHAKES */
#define REMOTE_VALIDATION_TIMEOUT_MS 10000
#define REMOTE_CONNECT_TIMEOUT_MS 10000 /* DEFAULT_REMOTE_EXEC_SERVER_CONNECT_TIMEOUT */
#define REMOTE_RESET_REASON "noise_relay_protocol_error"
/* msg2's payload when the registry answers validate with 401 (the reference's, 0.169.0). */
#define REMOTE_AUTH_REJECTED "codex-registry-authentication-rejected/v1"
/* The link's send queue above which streams wait their turn (round robin). */
#define REMOTE_LINK_HIGH_WATER (1u << 20)
/* The link's send queue above which it is closed (control frames bypass the high water). */
#define REMOTE_LINK_MAX_QUEUED (16u << 20)

enum remote_state {
	REMOTE_REGISTERING,
	REMOTE_CONNECTING,
	REMOTE_SERVING,
	REMOTE_BACKOFF,
	REMOTE_STOPPED,
};

enum stream_verdict {
	STREAM_VERDICT_NONE,     /* the registry has not answered yet */
	STREAM_VERDICT_VALID,    /* msg2 with an empty payload, then the stream opens */
	STREAM_VERDICT_REJECTED, /* 401: msg2 carries REMOTE_AUTH_REJECTED, no stream */
};

struct stream_prep;
struct remote_spare;

struct remote_stream {
	struct list_head link;       /* remote->streams */
	struct list_head ready_link; /* remote->ready: has output to send */
	struct remote *r;
	char *id; /* stream_id, NUL-terminated */
	size_t id_len;
	uint64_t instance; /* which activation: a late validation never meets a newer stream */
	bool active;       /* handshake done and validated */
	struct noise_handshake *hs;
	struct noise_transport t;
	uint32_t send_seq;
	struct relay_order order;
	/* pending: the registry validation and its deadline */
	struct remote_http *validation;
	struct remote_deadline validation_deadline;
	/* pending: msg2's tokens on a worker (hs is NULL meanwhile), and the verdict */
	struct stream_prep *prep;
	enum stream_verdict verdict;
	/* active: the connection it carries */
	struct conn *conn;
	/* forward mode: the destination */
	struct remote_ws *fwd;
	bool fwd_open;
	/* Inside a call that may end the stream: freeing waits for its end. */
	unsigned busy;
	bool doomed;
};

/* What the link tells the layer above it (remote.c wires them; called from the loop). */
struct remote_link_hooks {
	/* One binary relay frame from the rendezvous. */
	void (*frame)(struct remote *r, const uint8_t *frame, size_t len);
	/* The link's queue drained: streams may send. */
	void (*room)(struct remote *r);
	/* The link ended (the WebSocket closed, failed to open or was dropped);
	 * refused: the rendezvous answered the upgrade with a 4xx. */
	void (*down)(struct remote *r, const char *why, bool refused);
};

struct remote {
	struct server *srv;
	struct remote_options opt;
	char *base_url;       /* normalised --remote */
	char *environment_id; /* trimmed */
	struct registry_url base;
	struct noise_keypair identity; /* the process identity, kept across reconnects */
	struct noise_public identity_pub;
	struct registry_conflict_retry conflict;
	struct registry_backoff backoff;
	enum remote_state state;
	bool registered_once;
	bool reregister; /* the backoff ends in a registration, not a dial */

	struct remote_http *register_call;
	struct list_head http_idle; /* kept registry connections (registry-http.c) */
	struct remote_spare *spare; /* the next ephemeral keypair (handshake-prep.c) */
	struct registry_registration reg;

	struct remote_ws *ws;
	const struct remote_link_hooks *link_hooks;
	bool suspended; /* a live upgrade's QUIESCE closed the link (remote_upgrade_pause) */
	unsigned failures;
	struct list_head streams;
	struct strmap by_id;
	unsigned n_active, n_pending;
	uint64_t next_instance;
	struct list_head ready;
	bool pumping;

	struct uring_timer timer;
	struct list_head deadlines;
	struct remote_deadline backoff_deadline;
	struct remote_deadline drop_deadline; /* a send failed: end the link from the loop */
	const char *drop_why;
};

/* rendezvous.c: the physical link */
/* Dials the registration's rendezvous URL; -errno (logged) when it cannot start. */
int remote_link_connect(struct remote *r, const struct remote_link_hooks *hooks);
/* Sends one frame on the physical link (best effort; false when there is no link). */
bool remote_link_send_frame(struct remote *r, const void *frame, size_t len);
/* The same without a copy (remote_ws_send_reserve); NULL when there is no link. */
uint8_t *remote_link_frame_reserve(struct remote *r, size_t len);
bool remote_link_frame_commit(struct remote *r);
/* The link is up and its queue below REMOTE_LINK_HIGH_WATER: a stream may send a record. */
bool remote_link_has_room(const struct remote *r);
/* Ends the physical link (reason for the log); its down hook runs. */
void remote_link_drop(struct remote *r, const char *why);
/* Closes the link at shutdown; no hook runs. */
void remote_link_close(struct remote *r);

/* handshake-prep.c: msg2's tokens on the worker pool during the validation */
/* Hands s->hs (msg1 read) to a worker, with the ephemeral keypair generated ahead if ready
 * (the caller starts the next one once msg2 is out: remote_spare_fill). */
void remote_prep_msg2(struct remote_stream *s);
/* s is going: a running preparation frees the handshake it holds. */
void remote_prep_orphan(struct remote_stream *s);
/* Starts generating one ephemeral keypair ahead (if none is there or on its way). */
void remote_spare_fill(struct remote *r);
/* Drops it (remote_stop); one still being generated is freed when its job ends. */
void remote_spare_drop(struct remote *r);

/* stream.c: the Noise streams */
/* The verdict and msg2's tokens both in: sends msg2 and opens the stream, or ends it. */
void remote_stream_finish_handshake(struct remote_stream *s);
/* One relay frame from the link (the link's frame hook). */
void remote_stream_frame(struct remote *r, const uint8_t *frame, size_t len);
/* Lets streams with output send, round robin, while the link has room (its room hook). */
void remote_stream_pump(struct remote *r);
void remote_stream_free_all(struct remote *r, const char *why);
