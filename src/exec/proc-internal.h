/* SPDX-License-Identifier: MIT */
/* What proc.c, proc-rw.c, proc-review.c and proc-exit-report.c share (not part of proc.h). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "conn.h"
#include "proc.h"
#include "rpc.h"
#include "session.h"

struct proc_waiter {
	struct rpc_pending pend;
	struct list_head plink; /* proc->waiters */
	struct proc *p;
	uint64_t after_seq, max_bytes;
	bool has_max;
	bool fast;              /* came by the hot path: reply with proc-wire.c's writer */
	struct uring_timer timer;
};

struct proc_write {
	struct rpc_pending pend;
	struct list_head plink; /* proc->writes */
	struct proc *p;
	bool orphaned;          /* connection gone: finish the write, reply to nobody */
	bool fast;              /* came by the hot path: reply with proc-wire.c's writer */
	size_t len, off;
	uint8_t *data;
};

static inline const char *proc_stream_name(uint8_t k)
{
	return k == STREAM_STDOUT ? "stdout" : k == STREAM_STDERR ? "stderr" : "pty";
}

static inline struct server *proc_srv(const struct proc *p)
{
	return p->sess->srv;
}

/* The connection that holds p's session now, if it is open (else NULL). */
static inline struct conn *proc_conn(const struct proc *p)
{
	struct conn *c = p->sess->conn;

	return c && c->state == CONN_OPEN ? c : NULL;
}

/* Appends a retained chunk to p's output, without trimming (proc.c). Returns 0 or -ENOMEM. */
int proc_chunk_append(struct proc *p, uint64_t seq, uint8_t stream, const void *data, size_t len);
/* Answers every long poll of p that can be answered now (proc-rw.c). */
void proc_wake_waiters(struct proc *p);
/* Frees a queued stdin write (proc-rw.c); proc_free drops those left. */
void proc_write_free(struct proc_write *w);
/* Logs the denials of p's tree and returns process/exited's additive member, or NULL (proc-exit-report.c). */
json_t *proc_denials_json(struct proc *p);
/* sandboxDenied for p: the evidence store's decision, else the reference's heuristic (proc-exit-report.c). */
bool proc_classify_denial(struct proc *p);
/* The audit log's process.exit line (proc-exit-report.c). */
void proc_audit_exit(const struct proc *p);

/*
 * Notifications (proc-wire.c): process/output of data[0..len) to c, and
 * {"method":<method>,"params":{"processId":<id><tail>}} to the session's
 * connection (tail: the members after processId, each led by a comma).
 */
void proc_wire_output(struct proc *p, struct conn *c, uint64_t seq, uint8_t stream,
		      const uint8_t *data, size_t len);
void proc_wire_event(struct proc *p, const char *method, const char *tail);

/*
 * The hot path's replies (proc-wire.c), the same bytes as the general path's
 * jansson objects: to the request r as the fast decoder read it, or, with r
 * NULL, to id (a reply that came later). process/read's result (read_result's
 * selection), {"status":status}, and a fixed result text.
 */
void proc_wire_read_reply(struct proc *p, struct conn *c, json_t *id,
			  const struct jrpc_fast_req *r, uint64_t after_seq, bool has_max,
			  uint64_t max_bytes);
void proc_wire_status_reply(struct conn *c, json_t *id, const struct jrpc_fast_req *r,
			    const char *status);
void proc_wire_literal_reply(struct conn *c, const struct jrpc_fast_req *r,
			     const char *result);
