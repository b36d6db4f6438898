/* SPDX-License-Identifier: MIT */
/*
 * In-memory ring for the session fuzz target (see fake-ring.h). The timer
 * functions follow uring/ring.c's contract: one callback per arming, fired
 * = false after a cancel, re-arming an in-flight timer replaces it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fake-ring.h"

static struct fake_sqe *q;
static unsigned q_len, q_cap;

void fake_ring_reset(void)
{
	free(q);
	q = NULL;
	q_len = q_cap = 0;
}

unsigned fake_ring_count(void)
{
	return q_len;
}

struct fake_sqe *fake_ring_get(unsigned i)
{
	return &q[i];
}

static struct io_uring_sqe *queue(struct uring_op *op)
{
	struct fake_sqe *e;

	if (q_len == q_cap) {
		struct fake_sqe *n = realloc(q, (q_cap = q_cap ? q_cap * 2 : 64) * sizeof(*n));

		if (!n)
			abort();
		q = n;
	}
	e = &q[q_len++];
	memset(e, 0, sizeof(*e));
	e->op = op;
	e->sqe.user_data = (uint64_t)(uintptr_t)op;
	return &e->sqe;
}

void fake_ring_complete(unsigned i, int res, uint32_t flags)
{
	struct uring_op *op = q[i].op;

	q[i].done = true;
	if (!op)
		return;
	if (!(flags & IORING_CQE_F_MORE))
		op->busy = false;
	op->fn(op, res, flags); /* may queue SQEs: q can move */
}

int fake_ring_find(const struct uring_op *op)
{
	for (unsigned i = 0; i < q_len; i++)
		if (!q[i].done && q[i].op == op)
			return (int)i;
	return -1;
}

void fake_ring_compact(void)
{
	unsigned k = 0;

	for (unsigned i = 0; i < q_len; i++)
		if (!q[i].done)
			q[k++] = q[i];
	q_len = k;
}

/* ---- ring.h ---- */

int uring_init(struct uring *u, unsigned entries)
{
	memset(u, 0, sizeof(*u));
	return 0;
}

void uring_done(struct uring *u)
{
}

struct io_uring_sqe *uring_get_sqe(struct uring *u, struct uring_op *op, uring_op_fn fn)
{
	op->fn = fn;
	op->busy = true;
	return queue(op);
}

struct io_uring_sqe *uring_get_sqe_nocb(struct uring *u)
{
	return queue(NULL);
}

int uring_run_once(struct uring *u)
{
	abort(); /* the harness drives completions itself */
}

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
	t->u = u;
	t->ts.tv_sec = (long long)(msec / 1000);
	t->ts.tv_nsec = (long long)(msec % 1000) * 1000000;
	t->fn = fn;
	if (t->op.busy) {
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

int uring_bufs_init(struct uring *u, struct uring_bufs *b, unsigned short bgid, unsigned count,
		    unsigned size)
{
	abort(); /* the harness sets the buffer ring up itself */
}

void uring_bufs_done(struct uring *u, struct uring_bufs *b)
{
}

void uring_bufs_recycle(struct uring_bufs *b, unsigned bid)
{
	abort(); /* server_recycle_buf is faked one level up */
}
