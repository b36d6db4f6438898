/* SPDX-License-Identifier: MIT */
/*
 * The event loop's ring: setup and probing, op objects dispatched after the
 * CQ walk, a provided-buffer ring for socket and pipe reads, and timers.
 * Knows nothing about protocols (docs/ARCHITECTURE.md).
 */
#pragma once

#include <liburing.h>
#include <stdbool.h>
#include <stdint.h>

/* Opcodes newer than liburing 2.3's headers (kernel ABI numbers), probed at run time. */
#define UEXEC_IORING_OP_READ_MULTISHOT 49
#define UEXEC_IORING_OP_WAITID 50
#define UEXEC_IORING_OP_FTRUNCATE 55

struct uring_op;

/* Completion handler: res is cqe->res (already -errno on failure), flags cqe->flags. */
typedef void (*uring_op_fn)(struct uring_op *op, int res, uint32_t flags);

/*
 * An in-flight operation. Embedded in its owner; the owner must stay alive
 * until the op's final CQE (for multishot ops: the first one without
 * IORING_CQE_F_MORE). user_data of the SQE is the op's address.
 */
struct uring_op {
	uring_op_fn fn;
	bool busy; /* submitted and final CQE not yet seen */
};

struct uring_timer;
/*
 * Called once per arming: fired = true when the time elapsed, false when the
 * timer was cancelled. When it runs, the timer is idle again (the owner may
 * free it or re-arm it from inside the callback).
 */
typedef void (*uring_timer_fn)(struct uring_timer *t, bool fired);

/* A one-shot relative timer. Embedded in its owner. */
struct uring_timer {
	struct uring_op op;
	struct uring *u;
	struct __kernel_timespec ts;
	uring_timer_fn fn;
	bool armed;          /* logically armed (not cancelled) */
	bool rearm_pending;  /* re-armed while the old SQE's cancel was in flight */
	uint64_t deadline_ns; /* CLOCK_MONOTONIC of the last arming's end (the live upgrade's) */
};

/* Provided-buffer ring (one buffer group). */
struct uring_bufs {
	struct io_uring_buf_ring *br;
	uint8_t *base;
	unsigned count;     /* power of two */
	unsigned size;      /* bytes per buffer */
	unsigned short bgid;
};

/* A reaped completion waiting for dispatch. */
struct uring_cqe_copy {
	struct uring_op *op;
	int32_t res;
	uint32_t flags;
};

struct uring {
	struct io_uring ring;
	bool has_waitid;    /* IORING_OP_WAITID (6.7+) */
	bool has_read_mshot;
	bool has_renameat;  /* IORING_OP_RENAMEAT (5.11+; fs/rename) */
	bool has_unlinkat;  /* IORING_OP_UNLINKAT (5.11+) */
	bool has_ftruncate; /* IORING_OP_FTRUNCATE (6.9+; fs/writeFile, fs/open) */
	unsigned pending;   /* SQEs prepared but not submitted */
	uint64_t n_submit_calls;    /* io_uring_enter submissions (metrics) */
	uint64_t n_sqes_submitted;  /* SQEs the kernel took */
	int _error;         /* first submission failure that lost an SQE (sticky), or 0 */
	/* Completions reaped but not dispatched yet, oldest first: _done[_done_head.._done_len). */
	struct uring_cqe_copy *_done;
	unsigned _done_head, _done_len, _done_cap;
	struct io_uring_sqe _scratch; /* handed out after a failure, never submitted */
};

/* Sets the ring up (entries SQ slots) and probes optional opcodes. Returns 0 or -errno. */
int uring_init(struct uring *u, unsigned entries);
void uring_done(struct uring *u);

/*
 * Returns a fresh SQE bound to op (user_data = op, op->busy set). Never NULL:
 * when the SQ is full it submits it. If the kernel is out of CQ room or
 * request memory (-EBUSY, -EAGAIN), the ready CQEs are reaped first (their
 * handlers run from the next uring_run_once(), never from here) and the
 * submission is retried a bounded number of times. If that still fails, or
 * on any other error, the ring is marked failed: this and every later call
 * return a scratch SQE that is never submitted (op stays idle and its handler
 * never runs), uring_error() reports the error and uring_run_once() returns it.
 */
struct io_uring_sqe *uring_get_sqe(struct uring *u, struct uring_op *op, uring_op_fn fn);

/* Returns an SQE whose completion is ignored (user_data 0), e.g. for cancel requests. As above. */
struct io_uring_sqe *uring_get_sqe_nocb(struct uring *u);

/*
 * Submits pending SQEs, waits for at least one CQE (not when completions reaped
 * by uring_get_sqe() are waiting), reaps the available CQEs and dispatches their
 * handlers after the walk, in completion order. Returns the number dispatched or
 * -errno: the error that failed the ring (uring_error()), a submit or wait error
 * (-EBUSY/-EAGAIN only when retrying made no progress), -ENOMEM. -EINTR is
 * returned as 0. While uring_error() is 0, -EBUSY, -EAGAIN and -ENOMEM leave
 * the ring usable (a later call retries); after any other error, or once
 * uring_error() is set, only uring_done() is left to call.
 */
int uring_run_once(struct uring *u);

/*
 * Teardown only, once the loop has stopped: submits the pending SQEs of the
 * ops that mine(op, userdata) accepts (and cancels aimed at them), and waits
 * up to timeout_ms for their completions, which are dispatched. The rest is
 * left alone as uring_done() would leave it, their owners being torn down:
 * other pending SQEs become NOPs (they were never going to be submitted, and
 * may point at freed memory by now), other completions are discarded
 * undispatched. Returns the number dispatched (0: the time ran out first) or
 * the -errno of a failed ring or wait.
 */
int uring_run_teardown(struct uring *u, bool (*mine)(const struct uring_op *op, void *userdata),
		       void *userdata, uint64_t timeout_ms);

/* 0, or the -errno that made uring_get_sqe() hand out an SQE that will never be submitted. */
static inline int uring_error(const struct uring *u)
{
	return u->_error;
}

/* Submits a cancel for an in-flight op (its CQE will arrive with -ECANCELED or its result). */
void uring_cancel(struct uring *u, struct uring_op *op);

/*
 * Arms t to fire after msec milliseconds. Re-arming an armed timer replaces
 * the old deadline; only the new arming calls back.
 */
void uring_timer_arm(struct uring *u, struct uring_timer *t, uint64_t msec, uring_timer_fn fn);
/*
 * Cancels t if armed; its callback runs later with fired = false. An owner
 * that frees itself must wait until uring_op_idle(&t->op).
 */
void uring_timer_cancel(struct uring_timer *t);

static inline bool uring_op_idle(const struct uring_op *op)
{
	return !op->busy;
}

/* Registers a buffer ring of count (power of two) buffers of size bytes as group bgid. */
int uring_bufs_init(struct uring *u, struct uring_bufs *b, unsigned short bgid, unsigned count,
		    unsigned size);
void uring_bufs_done(struct uring *u, struct uring_bufs *b);
/* The buffer the kernel picked for a CQE with IORING_CQE_F_BUFFER. */
static inline uint8_t *uring_bufs_get(struct uring_bufs *b, unsigned bid)
{
	return b->base + (size_t)bid * b->size;
}
static inline unsigned uring_cqe_bid(uint32_t flags)
{
	return flags >> IORING_CQE_BUFFER_SHIFT;
}
/* Gives buffer bid back to the kernel. */
void uring_bufs_recycle(struct uring_bufs *b, unsigned bid);
