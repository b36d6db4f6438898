/* SPDX-License-Identifier: MIT */
/*
 * What the files of the process methods share (rpc-process.c: the method
 * table, process/read, write, signal and terminate; rpc-process-params.c:
 * process/start's parameters decoded with serde's errors;
 * rpc-process-start.c: process/start itself, from the checks to the reply).
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "params.h"

#define ERRSZ 512

struct conn;
struct netproxy_config;
struct proc;

/* process/start's fields (WireExecParams), as exec_start_fields[] holds them. */
enum {
	F_PROCESS_ID, F_METADATA, F_ARGV, F_CWD, F_ENV_POLICY, F_SHELL_SNAPSHOT, F_ENV, F_TTY,
	F_PIPE_STDIN, F_ARG0, F_SANDBOX, F_ENFORCE_NET, F_MANAGED_NET, F_NET_PROXY, F_SIZE,
	F_TIMEOUT_MS, F_LIMITS, _F_START_MAX
};
extern const struct pfield exec_start_fields[_F_START_MAX];

/* rpc-process.c: the session's process of that id, or NULL. */
struct proc *exec_lookup_process(struct conn *c, json_t *pid);
/* process/signal's and process/terminate's effect on p (may be NULL); terminate: `running`. */
void exec_signal_interrupt(struct proc *p);
bool exec_terminate(struct proc *p);

/* rpc-process-fast.c: the hot path of process/read, write, signal, terminate (rpc.h's fast). */
struct jrpc_fast_req;
bool exec_fast_read(struct conn *c, const struct jrpc_fast_req *r);
bool exec_fast_write(struct conn *c, const struct jrpc_fast_req *r);
bool exec_fast_signal(struct conn *c, const struct jrpc_fast_req *r);
bool exec_fast_terminate(struct conn *c, const struct jrpc_fast_req *r);

/* rpc-process-params.c */
/*
 * The nested objects of a decoded start (f: exec_start_fields): envPolicy,
 * metadata, managedNetwork, networkProxy (*npc), shellSnapshot and sandbox,
 * in serde's words (err: ERRSZ bytes). Returns 0, -EINVAL or -ENOMEM.
 */
int exec_check_start_nested(json_t *start[], struct netproxy_config **npc, bool *mn_ttcp,
			    char *err);
int exec_decode_cwd(struct conn *c, json_t *id, json_t *v, char **ret);
int exec_build_argv(json_t **f, char ***ret);

/* rpc-process-start.c */
void exec_rpc_process_start(struct conn *c, json_t *id, json_t *params);
/* rpc-process-report.c: a spawn's errno as 0.171 reports it (the OS error's text, its kind in data). */
void exec_reply_spawn_errno(struct conn *c, json_t *id, int r);
/* rpc-process-report.c: a failed spawn_process()'s reply: the sandbox step that failed, or exec's errno. */
void exec_reply_spawn_error(struct conn *c, json_t *id, json_t *argv0, int r, const char *step);
/*
 * rpc-process-report.c: the audit log's process.start (pid > 0) or
 * process.startFailed line (never the environment: its values may hold secrets).
 */
struct sandbox_plan;
struct sandbox_cg_limits;
void exec_audit_start(struct conn *c, json_t **f, char **argv, const char *cwd,
		      const struct sandbox_plan *plan, const struct sandbox_cg_limits *limits,
		      pid_t pid, int err);
