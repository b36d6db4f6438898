/* SPDX-License-Identifier: MIT */
/*
 * The exec module: initialize and sessions, process/start, read, write,
 * signal and terminate (PROTOCOL.md §6.1, §6.5-§6.9), and uexec's process
 * extensions (README.md "Protocol extensions").
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct conn;

/* Adds the module's methods to the dispatcher (rpc.h). Returns 0 or -errno. */
int exec_methods_register(void);

/*
 * The serde decoding errors of a `sandbox` object's shape, shared by
 * process/start and the fs requests. err has room for 512 bytes.
 * Returns 0 or -EINVAL.
 */
int exec_check_sandbox_shape(json_t *sb, char *err);

struct sandbox_plan;

/*
 * Warns (once per server) when a request's plan can write uexec's own binary
 * (spawn_self_path()): a sandbox could leave a program there for the next
 * start. what names the request. Shared by process/start and the fs requests.
 */
void exec_warn_self_writable(const struct sandbox_plan *plan, const char *what);

/*
 * process/start's extension fields (rpc-process-ext.c): `size` (NULL: keep
 * *rows and *cols) and `timeoutMs` (*timeout_ms 0 when absent), range-checked.
 * Returns 0 or -EINVAL with the message in err (512 bytes).
 */
int exec_decode_start_ext(json_t *size, json_t *timeout, bool tty, unsigned short *rows,
			  unsigned short *cols, uint64_t *timeout_ms, char *err);
/* process/resize, process/closeStdin, process/list (rpc-process-ext.c). */
void exec_rpc_process_resize(struct conn *c, json_t *id, json_t *params);
void exec_rpc_process_close_stdin(struct conn *c, json_t *id, json_t *params);
void exec_rpc_process_list(struct conn *c, json_t *id, json_t *params);

struct server;
struct sandbox_cg_limits;
struct sandbox_cg_leaf;

/*
 * process/start's `limits` (proc-cgroup.c): the server's limits, lowered by
 * the request's (never above them; a kind the host cannot enforce is
 * refused). Returns 0 or -EINVAL with the message in err (512 bytes).
 */
int exec_decode_limits(const struct server *s, json_t *limits, struct sandbox_cg_limits *ret,
		       char *err);
/*
 * Makes the process's cgroup leaf (below the listener guard for a guarded
 * plan). Returns 1 and *ret, 0 when the host has no per-process cgroups and
 * no limit applies, or -errno.
 */
int exec_cg_leaf(struct server *s, const struct sandbox_plan *plan,
		 const struct sandbox_cg_limits *l, struct sandbox_cg_leaf *ret);
/* A leaf no process got (the spawn failed and its child is reaped): removed now. */
void exec_cg_leaf_discard(struct server *s, struct sandbox_cg_leaf *leaf);
/* At shutdown, after the ring: frees the leaves still waiting to be empty. */
void exec_cg_pending_free(void);

/*
 * What the env layer built at start (both borrowed, living until shutdown):
 * the server user's login shell (a PTY's SHELL) and initialize's
 * environmentInfo. The executable's wiring hands them down (rpc-session.c).
 */
void exec_set_environment(const char *login_shell, json_t *info);
const char *exec_login_shell(void);

/* initialize (rpc-session.c). */
void exec_rpc_initialize(struct conn *c, json_t *id, json_t *params);

/*
 * For the transport's conn_handlers: a closing connection detaches its session
 * and cancels its pending requests (idempotent); drained output resumes the
 * session's readers.
 */
void exec_conn_closed(struct conn *c);
void exec_conn_drained(struct conn *c);
