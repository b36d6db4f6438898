/* SPDX-License-Identifier: MIT */
/*
 * A managed process: its output streams read through the ring, the shared seq
 * counter for output/exited/closed (PROTOCOL.md §9), retained output for
 * process/read, exit through IORING_OP_WAITID (or the pidfd), long-poll readers
 * and stdin writes.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <sys/types.h>

#include "list.h"
#include "evidence-ring.h"
#include "ring.h"
#include "server.h"
#include "strmap.h"

struct session;
struct spawn_result;

enum proc_stream_kind {
	STREAM_STDOUT,
	STREAM_STDERR,
	STREAM_PTY,
};

/* Reference retention caps (SANDBOX.md §6.1). */
#define PROC_RETAINED_BYTES (1024 * 1024)
#define PROC_RETAINED_CHUNKS 50000
/* Accepted writeIds remembered per process. */
#define PROC_WRITE_IDS 4096

/* uexec extensions (README.md "Protocol extensions"): client-controlled ranges. */
#define PROC_PTY_MAX_ROWS 1000
#define PROC_PTY_MAX_COLS 1000
#define PROC_TIMEOUT_MAX_MS (24ULL * 3600 * 1000)
/* timeoutMs: SIGTERM to the group, then SIGKILL this long after if it is still there. */
#define PROC_TIMEOUT_GRACE_MS 1000

struct proc_stream {
	struct proc *p;
	int fd;
	enum proc_stream_kind kind;
	bool eof;
	bool paused; /* not re-armed because the client's output queue is full */
	struct uring_op op;
	struct buf_waiter bufwait;
};

struct proc_chunk {
	struct list_head link;
	uint64_t seq;
	uint32_t len;
	uint8_t stream;
	uint8_t data[];
};

struct proc {
	struct list_head link; /* session->procs_list */
	struct session *sess;
	char *id;              /* processId (may contain NUL) */
	size_t id_len;
	char *id_json;         /* processId as an escaped JSON string, for notifications */
	size_t id_json_len;

	pid_t pid;
	int pidfd;             /* -1 with IORING_OP_WAITID, which waits by pid */
	struct uring_op exit_op;
	siginfo_t siginfo;     /* filled by IORING_OP_WAITID */
	bool tty;
	bool pipe_stdin;
	bool sandboxed;
	struct sandbox_plan *plan;   /* owned; freed when the process is closed */
	struct netproxy *netproxy;   /* managed network: its proxy (owned), closed with the process */
	struct uring_timer grace;    /* sandboxed: wait for late output before judging */
	bool reaped;                 /* the child is gone; exited is published after the grace */
	int raw_exit_code;

	struct proc_stream streams[2];
	unsigned n_streams;

	uint64_t next_seq;     /* the seq the next event takes (starts at 1) */
	struct list_head chunks;
	size_t retained_bytes;
	unsigned n_chunks;

	bool exited;
	int exit_code;
	int term_signal;       /* the signal that killed it, 0 for a normal exit */
	uint64_t started_at_ms; /* CLOCK_REALTIME at spawn (process/list) */
	uint64_t started_mono_ms; /* CLOCK_MONOTONIC at spawn (the exit latency metric) */
	uint64_t exit_seq;
	bool closed;
	bool sandbox_denied;
	/* Denial evidence (evidence-ring.h): the tree, and waiting for its records at exit. */
	struct exec_ev_wait ev_wait;  /* .tree: NULL without an evidence source */
	bool ev_waiting;             /* process/exited held until the records are read */
	bool ev_exit_pending;        /* ... and it was due meanwhile */

	struct list_head waiters; /* struct proc_waiter */

	/* timeoutMs: SIGTERM when it elapses, SIGKILL PROC_TIMEOUT_GRACE_MS later */
	struct uring_timer timeout;
	bool has_timeout;
	bool timed_out;
	/*
	 * The start carried `limits`: process/exited may say oomKilled. A
	 * server default (--process-memory-max) alone does not add the member
	 * to a reference client's frame.
	 */
	bool asked_limits;

	/* stdin */
	int stdin_fd;             /* pipe write end, or the PTY master (streams[0].fd too) */
	struct list_head writes;  /* struct proc_write, head in flight */
	struct uring_op write_op;
	struct strmap write_ids;
	char **write_id_ring;     /* FIFO of remembered ids for eviction */
	size_t write_id_head, write_id_count;
	bool stdin_closed;        /* process/closeStdin: later writes answer stdinClosed */
	bool pty_wrote;           /* a PTY: something was queued for its stdin, */
	uint8_t pty_last_byte;    /* ending with this byte (closeStdin: mid-line?) */

	/* its own cgroup (proc-cgroup.c, sandbox/cgroup.h) */
	bool has_cg;
	bool cg_pending;          /* handed to the removal-once-empty watch */
	bool oom_killed;          /* its memory limit was reached (process/exited oomKilled) */
	struct sandbox_cg_leaf cg;
};

/*
 * Wraps a spawned child (takes ownership of res's fds and of plan, which may
 * be NULL) and starts watching its exit. sandboxed: classify denials at exit.
 */
int proc_new(struct session *sess, const char *id, size_t id_len, const struct spawn_result *res,
	     bool tty, bool pipe_stdin, bool sandboxed, struct sandbox_plan *plan,
	     struct proc **ret);

/* Starts reading output; call after the process/start reply is queued (§9.2 ordering). */
void proc_start_output(struct proc *p);

/* True once every op of p is idle (closed and reaped) so that it can be freed. */
bool proc_is_idle(const struct proc *p);
void proc_free(struct proc *p);

/*
 * sig to the process group (no-op once closed); SIGKILL also kills the
 * process's whole cgroup, whatever left the group (setsid, double fork),
 * closed or not.
 */
void proc_kill_group(struct proc *p, int sig);

/* proc-cgroup.c: the process's leaf killed, read at exit, removed at close or free. */
void proc_cg_kill(struct proc *p);
void proc_cg_exited(struct proc *p);
void proc_cg_closed(struct proc *p);
void proc_cg_free(struct proc *p);

/* Re-arms streams paused by backpressure (or by a live upgrade's QUIESCE). */
void proc_resume_output(struct proc *p);
/* Re-arms the exit wait a live upgrade's QUIESCE cancelled (src/upgrade/quiesce.c). */
void proc_resume_exit(struct proc *p);
/* Writes the head of the stdin queue again after a live upgrade's QUIESCE cancelled it. */
void proc_resume_stdin(struct proc *p);

/*
 * Answers every long poll of p now with what there is, as if its waitMs had
 * elapsed (a live upgrade's QUIESCE: the client polls again, on the new binary).
 */
void proc_answer_waiters(struct proc *p);

/*
 * A live upgrade's RESTORE (src/upgrade/adopt.c): a stdin write the old binary
 * had queued, data[0..len) still to write, its reply owed to (c, id) (NULL:
 * nobody); proc_resume_stdin() writes the queue. 0 or -ENOMEM.
 * proc_pending_is_write: pend is a queued write's reply (QUIESCE's blockers).
 */
int proc_adopt_write(struct proc *p, struct conn *c, json_t *id, bool fast, const uint8_t *data,
		     size_t len);
struct rpc_pending;
bool proc_pending_is_write(const struct rpc_pending *pend);

/* process/read (long poll if wait_ms > 0 and nothing to return). */
void proc_read(struct proc *p, struct conn *c, json_t *id, uint64_t after_seq, bool has_max,
	       uint64_t max_bytes, uint64_t wait_ms);

/* process/write of data[0..len) under write_id; replies to (c, id). */
void proc_write(struct proc *p, struct conn *c, json_t *id, const char *write_id,
		uint8_t *data, size_t len);

/*
 * The same by the JSON hot path (rpc-process-fast.c): replies written
 * straight into the output buffer (proc-wire.c), to the request r (whose id
 * a reply that comes later takes as a json_t).
 */
struct jrpc_fast_req;
void proc_read_fast(struct proc *p, struct conn *c, const struct jrpc_fast_req *r,
		    uint64_t after_seq, bool has_max, uint64_t max_bytes, uint64_t wait_ms);
void proc_write_fast(struct proc *p, struct conn *c, const struct jrpc_fast_req *r,
		     const char *write_id, uint8_t *data, size_t len);

/*
 * uexec extensions (README.md "Protocol extensions").
 *
 * proc_set_timeout: kill the process group msec after now (SIGTERM, then
 * SIGKILL after PROC_TIMEOUT_GRACE_MS) unless the process exits first; its
 * process/exited then says timedOut.
 */
void proc_set_timeout(struct proc *p, uint64_t msec);
/* TIOCSWINSZ on a PTY's master. Returns 0, -ENOTTY (pipes), -ESRCH (exited) or -errno. */
int proc_resize(struct proc *p, unsigned short rows, unsigned short cols);
/*
 * Ends the process's stdin after the writes already queued: closes a pipe, or
 * writes the terminal's VEOF character to a PTY. Idempotent.
 */
void proc_close_stdin(struct proc *p);
/* The process/list entry of p (NULL without memory). */
json_t *proc_describe(const struct proc *p);

/* The sink of the process's network proxy: a network/policyDecision to its session's client. */
void proc_network_decision(void *owner, const char *tail);
/* Its review: network/policyRequest to the session's client (proxy.h). */
extern const struct netproxy_reviewer proc_network_reviewer;
