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

#include "list.h"

struct server;

struct conn;

/* JSON-RPC error codes used by the reference (PROTOCOL.md §4). */
enum {
	RPC_INVALID_REQUEST = -32600,
	RPC_METHOD_NOT_FOUND = -32601,
	RPC_INVALID_PARAMS = -32602,
	RPC_INTERNAL_ERROR = -32603,
	RPC_NOT_FOUND = -32004,
	RPC_SESSION_ATTACHED = -32010,
};

/* Handles one complete message from c (text, not NUL-terminated). */
void rpc_on_message(struct conn *c, const char *data, size_t len);

/* Replies. id is borrowed; result is stolen (json_decref'd). */
void rpc_reply(struct conn *c, json_t *id, json_t *result);
/* A result already serialised as compact JSON (result[0..len)), e.g. by a worker thread. */
void rpc_reply_serialized(struct conn *c, json_t *id, const char *result, size_t len);
void rpc_reply_error(struct conn *c, json_t *id, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* An error whose message is prefix + the client's string str (NULs kept) + suffix. */
void rpc_reply_error_quoted(struct conn *c, json_t *id, int code, const char *prefix,
			    json_t *str, const char *suffix);
/*
 * Replies with the reference's mapping of an OS error: ENOENT -> -32004,
 * EACCES/EPERM -> -32600, others -> -32603; message "<strerror> (os error N)".
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
};

void rpc_pending_start(struct rpc_pending *p, struct conn *c, json_t *id,
		       void (*cancel)(struct rpc_pending *p));
/* Unlinks and drops the id reference (call before freeing, after replying or on cancel). */
void rpc_pending_end(struct rpc_pending *p);
/* Cancels every pending request of c. */
void rpc_cancel_pending(struct conn *c);

/*
 * Registers a method handler (before main runs; see RPC_METHOD). family names
 * the handshake-gating message ("client must call initialize before using
 * <family> methods"). Registered methods take precedence over rpc.c's tables.
 */
void rpc_method_register(const char *name, const char *family,
			 void (*fn)(struct conn *c, json_t *id, json_t *params));

#define RPC_METHOD(name, family, fn)                                              \
	__attribute__((constructor)) static void rpc_register_##fn(void)          \
	{                                                                         \
		rpc_method_register(name, family, fn);                            \
	}

/*
 * The serde decoding errors of a `sandbox` object's shape (rpc-process.c),
 * shared by process/start and the fs requests. err has room for 512 bytes.
 * Returns 0 or -EINVAL.
 */
int rpc_check_sandbox_shape(json_t *sb, char *err);

/* Method handlers (rpc-*.c). params may be NULL (absent). */
void rpc_initialize(struct conn *c, json_t *id, json_t *params);
void rpc_environment_info(struct conn *c, json_t *id, json_t *params);
void rpc_environment_status(struct conn *c, json_t *id, json_t *params);
void rpc_environment_config_read(struct conn *c, json_t *id, json_t *params);
void rpc_process_start(struct conn *c, json_t *id, json_t *params);
void rpc_process_read(struct conn *c, json_t *id, json_t *params);
void rpc_process_write(struct conn *c, json_t *id, json_t *params);
void rpc_process_signal(struct conn *c, json_t *id, json_t *params);
void rpc_process_terminate(struct conn *c, json_t *id, json_t *params);

/* rpc-env.c: environmentInfo (built once at start-up) and the login shell lookup. */
json_t *env_info_build(struct server *s);
char *login_shell_lookup(void);
