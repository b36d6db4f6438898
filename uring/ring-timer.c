/* SPDX-License-Identifier: MIT */
/*
 * Cancellation and timers on top of uring_get_sqe(): no ring state of their
 * own, so the session fuzzer links this file against its fake ring
 * (fuzz/fake-ring.c) and exercises the same timer code as the server.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "ring.h"

void uring_cancel(struct uring *u, struct uring_op *op)
{
	struct io_uring_sqe *sqe;

	if (!op->busy)
		return;
	sqe = uring_get_sqe_nocb(u);
	io_uring_prep_cancel(sqe, op, 0);
}

static void timer_submit(struct uring_timer *t);

static void timer_on_complete(struct uring_op *op, int res, uint32_t flags)
{
	struct uring_timer *t = (struct uring_timer *)op;
	bool fired = res == -ETIME && t->armed && !t->rearm_pending;

	if (fired)
		t->armed = false;
	if (t->rearm_pending) {
		t->rearm_pending = false;
		timer_submit(t);
		return;
	}
	if (t->fn)
		t->fn(t, fired);
}

static void timer_submit(struct uring_timer *t)
{
	struct io_uring_sqe *sqe = uring_get_sqe(t->u, &t->op, timer_on_complete);

	io_uring_prep_timeout(sqe, &t->ts, 0, 0);
}

void uring_timer_arm(struct uring *u, struct uring_timer *t, uint64_t msec, uring_timer_fn fn)
{
	struct timespec now;

	t->u = u;
	t->ts.tv_sec = (long long)(msec / 1000);
	t->ts.tv_nsec = (long long)(msec % 1000) * 1000000;
	t->fn = fn;
	/* The clock relative io_uring timeouts count on; a live upgrade re-arms from it. */
	(void)clock_gettime(CLOCK_MONOTONIC, &now);
	t->deadline_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec +
			 (msec > UINT64_MAX / 1000000u ? UINT64_MAX / 2 : msec * 1000000u);
	if (t->op.busy) {
		/* Old SQE still in flight: cancel it, submit the new one on its CQE. */
		if (t->armed) {
			struct io_uring_sqe *sqe = uring_get_sqe_nocb(u);
			io_uring_prep_timeout_remove(sqe, (__u64)(uintptr_t)&t->op, 0);
		}
		t->armed = true;
		t->rearm_pending = true;
		return;
	}
	t->armed = true;
	timer_submit(t);
}

void uring_timer_cancel(struct uring_timer *t)
{
	struct io_uring_sqe *sqe;

	t->rearm_pending = false;
	if (!t->armed)
		return;
	t->armed = false;
	if (!t->op.busy)
		return;
	sqe = uring_get_sqe_nocb(t->u);
	io_uring_prep_timeout_remove(sqe, (__u64)(uintptr_t)&t->op, 0);
}
