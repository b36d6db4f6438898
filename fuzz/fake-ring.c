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
#include "session-fakes.h"

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
	/* One provided buffer (bid 0); it must come back exactly once per read. */
	if (bid != 0 || !fake_stats.buf_lent)
		abort();
	fake_stats.buf_lent = false;
}
