/* SPDX-License-Identifier: MIT */
/*
 * JSON-RPC session layer: envelope handling, handshake gating, method dispatch,
 * errno -> JSON-RPC error mapping, and requests answered later (long polls,
 * writes). Independent of the transport (conn.c) that carries the messages.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jsonrpc-fast.h"
#include "list.h"

struct server;

struct conn;
struct outchunk;

/* JSON-RPC error codes used by the reference (PROTOCOL.md §4). */
enum {
	RPC_INVALID_REQUEST = -32600,
	RPC_METHOD_NOT_FOUND = -32601,
	RPC_INVALID_PARAMS = -32602,
	RPC_INTERNAL_ERROR = -32603,
	RPC_NOT_FOUND = -32004,
	RPC_SESSION_ATTACHED = -32010,
	/* uexec: the server is draining for shutdown (SIGTERM, --drain-timeout-ms); no new work. */
	RPC_SERVER_DRAINING = -32050,
};

/* Handles one complete message from c (text, not NUL-terminated). */
void rpc_on_message(struct conn *c, const char *data, size_t len);

/* Replies. id is borrowed; result is stolen (json_decref'd). */
void rpc_reply(struct conn *c, json_t *id, json_t *result);
/* A result already serialised as compact JSON (result[0..len)), e.g. by a worker thread. */
void rpc_reply_serialized(struct conn *c, json_t *id, const char *result, size_t len);
/*
 * A reply whose result (len bytes of compact JSON) the caller writes at
 * *ret_result, then queues with conn_commit(). Replies ENOMEM and returns NULL
 * when it cannot be allocated.
 */
struct outchunk *rpc_reply_begin(struct conn *c, json_t *id, size_t len, uint8_t **ret_result);
void rpc_reply_error(struct conn *c, json_t *id, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* An error whose message is prefix + the client's string str (NULs kept) + suffix. */
/* An error whose message is text[0..len), which may hold a NUL. */
void rpc_reply_error_text(struct conn *c, json_t *id, int code, const char *text, size_t len);
/*
 * An error with "data":{"kind":kind} between code and message, as 0.171's
 * process/start errors (spawnNotFound, spawnPermissionDenied, spawnFailed).
 */
void rpc_reply_error_kind(struct conn *c, json_t *id, int code, const char *kind, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
void rpc_reply_error_quoted(struct conn *c, json_t *id, int code, const char *prefix,
			    json_t *str, const char *suffix);
/*
 * Replies with the reference's mapping of an OS error: ENOENT -> -32004,
 * EACCES/EPERM/EINVAL -> -32600, others -> -32603; message "<strerror> (os error N)".
 */
void rpc_reply_errno(struct conn *c, json_t *id, int err);
/* Same, but every errno is -32603 (process/start spawn failures). */
void rpc_reply_errno_internal(struct conn *c, json_t *id, int err);
/* "<strerror> (os error N)" into buf. */
const char *rpc_os_error(int err, char *buf, size_t size);

/*
 * A request whose reply comes later. Linked into the connection so that a
 * closing connection cancels it: cancel() must unlink and free it (without
 * replying). id holds a reference.
 */
struct rpc_pending {
	struct list_head link; /* conn->pending */
	struct conn *conn;
	json_t *id;
	void (*cancel)(struct rpc_pending *p);
	int stat; /* the method's slot in rpc_stats() (its errors are counted there) */
};

void rpc_pending_start(struct rpc_pending *p, struct conn *c, json_t *id,
		       void (*cancel)(struct rpc_pending *p));
/* Unlinks and drops the id reference (call before freeing, after replying or on cancel). */
void rpc_pending_end(struct rpc_pending *p);
/* Cancels every pending request of c. */
void rpc_cancel_pending(struct conn *c);

/*
 * A request of the server's to the client (network/policyRequest): ids are
 * integers from 1 per connection. The caller embeds the call; done() runs
 * once with the reply's result, or with NULL for an error reply or when the
 * connection closes first (the call is then no longer linked). A reply to an
 * id that was issued but is no longer pending (cancelled, answered) is
 * ignored; one to an id never issued ends the connection, as the
 * reference's.
 */
struct rpc_call {
	struct list_head link; /* conn->calls while pending */
	struct conn *conn;     /* NULL when not pending */
	int64_t id;
	void (*done)(struct rpc_call *call, json_t *result);
};

/* Sends {"id":N,"method":method,"params":params_json}. Returns 0 or -ENOMEM. */
int rpc_call_start(struct rpc_call *call, struct conn *c, const char *method,
		   const char *params_json, void (*done)(struct rpc_call *call, json_t *result));
/* Stops waiting (done() will not run). A call that is not pending is fine. */
void rpc_call_cancel(struct rpc_call *call);
/* c is closing: every pending call's done(NULL). */
void rpc_calls_fail(struct conn *c);

/*
 * A method: name, family (names the handshake-gating message "client must
 * call initialize before using <family> methods"; NULL for initialize), the
 * handler (params may be NULL when absent; a NULL handler answers -32601
 * after gating), and an optional forward() tried first, which returns true
 * when it took the request (sandboxed fs requests go to the fs helper).
 *
 * fast (optional, the hot path of rpc-fast.c): the request as the strict
 * decoder read it from the frame (jsonrpc-fast.h), after the handshake
 * gating passed. It returns false when it is not sure it answers exactly as
 * fn would (an error to report, a value outside what it handles); it must
 * then have done nothing, and the message goes the general way.
 */
struct rpc_method {
	const char *name;
	const char *family;
	void (*fn)(struct conn *c, json_t *id, json_t *params);
	bool (*forward)(struct conn *c, json_t *id, const char *method, json_t *params);
	bool (*fast)(struct conn *c, const struct jrpc_fast_req *r);
};

/*
 * The hot path (rpc-fast.c). rpc_fast_enabled: on unless UEXEC_JSON_FAST=0
 * in the environment at start; tests turn it off to get the general path's
 * answer to compare with.
 */
extern bool rpc_fast_enabled;
/* Tried by rpc_on_message first: true when a method's fast() answered. */
bool rpc_fast_dispatch(struct conn *c, const char *data, size_t len);
/* The request's id as a json_t (a new reference), for a reply that comes later; NULL on OOM. */
json_t *rpc_fast_id(const struct jrpc_fast_req *r);
/*
 * rpc_reply_begin() for the id of r: {"id":<id>,"result": then len bytes the
 * caller writes at *ret_result, then '}'; queue it with conn_commit(). NULL on
 * OOM (the connection is then closed, as a failed serialisation closes it).
 */
struct outchunk *rpc_fast_reply_begin(struct conn *c, const struct jrpc_fast_req *r, size_t len,
				      uint8_t **ret_result);

/*
 * Registers a module's table (kept by reference; registering it again is a
 * no-op). Later lookups see every registered table before the built-in list
 * of unimplemented methods. Returns 0 or -ENOSPC.
 */
int rpc_methods_register(const struct rpc_method *m, size_t n);

/*
 * Requests and error replies per method, for GET /metrics. One slot per
 * registered or known method (in table order), then "(unknown)" for names no
 * table has (client-chosen names never become labels) and "(none)" for
 * errors that answer no method (unparsable messages). Error codes beyond
 * RPC_STATS_CODES distinct ones per method are counted under code 0.
 */
#define RPC_STATS_CODES 8
struct rpc_method_stats {
	const char *name;
	uint64_t requests;
	struct {
		int code;
		uint64_t n;
	} errors[RPC_STATS_CODES];
};
/* Every slot (*ret_n of them); slots without a name are unused. */
const struct rpc_method_stats *rpc_stats(size_t *ret_n);
