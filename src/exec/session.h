/* SPDX-License-Identifier: MIT */
/*
 * Sessions (PROTOCOL.md §2.2): processes belong to a session, which outlives
 * its connection for the resume window and can be re-attached by id.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "list.h"
#include "ring.h"
#include "strmap.h"

struct conn;
struct proc;
struct server;

struct session {
	struct list_head link; /* server->sessions */
	struct server *srv;
	char id[37];
	struct conn *conn;     /* attached connection or NULL */
	struct strmap procs;   /* processId -> proc */
	struct list_head procs_list;
	unsigned n_live;       /* processes not yet closed */
	struct uring_timer expiry;
	bool expired;          /* resume window over: id unknown, processes killed */
	struct list_head snapshots; /* shell snapshots (shell-snapshot.c), least recently used first */
};

/* Creates a session attached to c. Returns 0, -ENOMEM or -EUSERS (limit). */
int session_new(struct server *s, struct conn *c, struct session **ret);
/*
 * A live upgrade's RESTORE (src/upgrade/adopt.c): a session id handed
 * over, detached, its resume window ending window_ms from now (the caller
 * may attach it with session_attach(), which cancels that). Its processes
 * are added by the caller. Returns 0 or -ENOMEM.
 */
int session_adopt(struct server *s, const char *id, uint64_t window_ms, struct session **ret);
/* Finds a live (not expired) session by id. */
struct session *session_find(struct server *s, const char *id);
void session_attach(struct session *ss, struct conn *c);
/* c's connection is gone: keep the processes for the resume window. */
void session_detach(struct session *ss, struct conn *c);
/* The attached connection's output queue drained: resume paused output. */
void session_output_drained(struct session *ss);
/* A process of ss reached "closed". */
void session_proc_closed(struct session *ss, struct proc *p);
/* Frees what expired sessions no longer need (between loop iterations). */
void session_reap(struct server *s);
/* Shutdown: SIGKILL every process group, wait for them, free everything. */
void session_destroy_all(struct server *s);
