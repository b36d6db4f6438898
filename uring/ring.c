/* SPDX-License-Identifier: MIT */
/*
 * Ring setup, probing, submission and completion dispatch.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ring.h"

#define CQE_BATCH 128
/* Submit attempts on -EBUSY/-EAGAIN, each after reaping at least one CQE. */
#define SUBMIT_TRIES 8

int uring_init(struct uring *u, unsigned entries)
{
	struct io_uring_params p = { 0 };
	struct io_uring_probe *probe;
	int r;

	memset(u, 0, sizeof(*u));
	/*
	 * One thread submits and reaps; let the kernel skip cross-thread
	 * machinery. Fall back if the kernel refuses the flags.
	 */
	p.flags = IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER |
		  IORING_SETUP_DEFER_TASKRUN;
	p.cq_entries = entries * 4;
	p.flags |= IORING_SETUP_CQSIZE;
	r = io_uring_queue_init_params(entries, &u->ring, &p);
	if (r == -EINVAL) {
		memset(&p, 0, sizeof(p));
		p.flags = IORING_SETUP_CQSIZE;
		p.cq_entries = entries * 4;
		r = io_uring_queue_init_params(entries, &u->ring, &p);
	}
	if (r < 0)
		return r;

	probe = io_uring_get_probe_ring(&u->ring);
	if (probe) {
		u->has_waitid = probe->last_op >= UEXEC_IORING_OP_WAITID &&
				(probe->ops[UEXEC_IORING_OP_WAITID].flags & IO_URING_OP_SUPPORTED);
		u->has_read_mshot = probe->last_op >= UEXEC_IORING_OP_READ_MULTISHOT &&
				    (probe->ops[UEXEC_IORING_OP_READ_MULTISHOT].flags &
				     IO_URING_OP_SUPPORTED);
		u->has_renameat = probe->last_op >= IORING_OP_RENAMEAT &&
				  (probe->ops[IORING_OP_RENAMEAT].flags & IO_URING_OP_SUPPORTED);
		u->has_unlinkat = probe->last_op >= IORING_OP_UNLINKAT &&
				  (probe->ops[IORING_OP_UNLINKAT].flags & IO_URING_OP_SUPPORTED);
		u->has_ftruncate = probe->last_op >= UEXEC_IORING_OP_FTRUNCATE &&
				   (probe->ops[UEXEC_IORING_OP_FTRUNCATE].flags &
				    IO_URING_OP_SUPPORTED);
		io_uring_free_probe(probe);
	}
	return 0;
}

void uring_done(struct uring *u)
{
	io_uring_queue_exit(&u->ring);
	free(u->_done);
	u->_done = NULL;
	u->_done_head = u->_done_len = u->_done_cap = 0;
}

/* Makes room for n more reaped completions at the tail of the deferred list. */
static int done_reserve(struct uring *u, unsigned n)
{
	struct uring_cqe_copy *d;
	size_t cap;

	if (u->_done_head > 0 && u->_done_cap - u->_done_len < n) {
		memmove(u->_done, u->_done + u->_done_head,
			(size_t)(u->_done_len - u->_done_head) * sizeof(*u->_done));
		u->_done_len -= u->_done_head;
		u->_done_head = 0;
	}
	if (u->_done_cap - u->_done_len >= n)
		return 0;
	cap = u->_done_cap ? u->_done_cap : CQE_BATCH;
	while (cap - u->_done_len < n)
		cap *= 2;
	if (cap > UINT_MAX)
		return -ENOMEM;
	d = reallocarray(u->_done, cap, sizeof(*d));
	if (!d)
		return -ENOMEM;
	u->_done = d;
	u->_done_cap = (unsigned)cap;
	return 0;
}

/*
 * Moves up to max ready CQEs to the tail of the deferred list, so the kernel
 * has CQ room again. Handlers run only from uring_run_once(). Returns the
 * number of CQEs consumed or -ENOMEM.
 */
static int reap(struct uring *u, unsigned max)
{
	struct io_uring_cqe *cqe;
	unsigned head, n = 0, ready = io_uring_cq_ready(&u->ring);
	int r;

	if (ready > max)
		ready = max;
	if (ready == 0)
		return 0;
	r = done_reserve(u, ready);
	if (r < 0)
		return r;
	io_uring_for_each_cqe(&u->ring, head, cqe)
	{
		struct uring_op *op = io_uring_cqe_get_data(cqe);

		if (n == ready)
			break;
		n++;
		if (op)
			u->_done[u->_done_len++] = (struct uring_cqe_copy){
				.op = op, .res = cqe->res, .flags = cqe->flags
			};
	}
	io_uring_cq_advance(&u->ring, n);
	return (int)n;
}

/*
 * Submits the SQ, waiting for wait_nr completions. -EBUSY (old kernels: CQ
 * overflow backlog) and -EAGAIN (no memory for requests) mean the kernel
 * needs completions consumed before it can go on: reap what is there and
 * retry, but only while that reaps something and at most SUBMIT_TRIES times,
 * so a kernel that cannot make progress gets its error back instead of a
 * busy loop. Returns what the last submit returned, or -ENOMEM.
 */
static int submit(struct uring *u, unsigned wait_nr)
{
	int r;

	for (unsigned i = 1;; i++) {
		int k;

		r = wait_nr ? io_uring_submit_and_wait(&u->ring, wait_nr) : io_uring_submit(&u->ring);
		u->n_submit_calls++;
		if (r > 0)
			u->n_sqes_submitted += (unsigned)r;
		if (r == -EINTR && wait_nr == 0 && i < SUBMIT_TRIES)
			continue; /* a wait's -EINTR goes to the caller: it has a signal to handle */
		if ((r != -EBUSY && r != -EAGAIN) || i == SUBMIT_TRIES)
			break;
		k = reap(u, UINT_MAX);
		if (k < 0)
			r = k;
		if (k <= 0)
			break;
		wait_nr = 0; /* there are completions to dispatch: do not block */
	}
	u->pending = io_uring_sq_ready(&u->ring);
	return r;
}

static struct io_uring_sqe *get_sqe_raw(struct uring *u)
{
	struct io_uring_sqe *sqe = NULL;

	if (u->_error == 0) {
		sqe = io_uring_get_sqe(&u->ring);
		if (!sqe) {
			int r = submit(u, 0);

			sqe = io_uring_get_sqe(&u->ring);
			if (!sqe)
				u->_error = r < 0 ? r : -EBUSY;
		}
	}
	if (!sqe) {
		/* The ring failed: callers still get somewhere to write, uring_run_once() reports it. */
		memset(&u->_scratch, 0, sizeof(u->_scratch));
		return &u->_scratch;
	}
	u->pending++;
	return sqe;
}

struct io_uring_sqe *uring_get_sqe(struct uring *u, struct uring_op *op, uring_op_fn fn)
{
	struct io_uring_sqe *sqe = get_sqe_raw(u);

	op->fn = fn;
	op->busy = sqe != &u->_scratch; /* no CQE will ever come for the scratch SQE */
	io_uring_sqe_set_data(sqe, op);
	return sqe;
}

struct io_uring_sqe *uring_get_sqe_nocb(struct uring *u)
{
	struct io_uring_sqe *sqe = get_sqe_raw(u);

	io_uring_sqe_set_data(sqe, NULL);
	return sqe;
}

int uring_run_once(struct uring *u)
{
	unsigned n;
	int r, k;

	if (u->_error)
		return u->_error;

	/* Completions reaped by uring_get_sqe() are waiting: submit without blocking. */
	r = submit(u, u->_done_len > u->_done_head ? 0 : 1);
	if (r < 0 && r != -EINTR && r != -EBUSY && r != -EAGAIN)
		return r;

	/*
	 * Collect first, dispatch after the walk, in completion order: the
	 * deferred list holds older completions than the CQ. Handlers may get
	 * SQEs and so reap more: those go to the tail and wait for the next call.
	 */
	k = reap(u, CQE_BATCH);
	n = u->_done_len - u->_done_head;
	if (n == 0 && k < 0)
		return k;
	if (n == 0 && (r == -EBUSY || r == -EAGAIN))
		return r; /* nothing to reap and submit() already retried: no progress */

	for (unsigned i = 0; i < n; i++) {
		struct uring_cqe_copy c = u->_done[u->_done_head++];

		if (u->_done_head == u->_done_len)
			u->_done_head = u->_done_len = 0;
		if (!(c.flags & IORING_CQE_F_MORE))
			c.op->busy = false;
		c.op->fn(c.op, c.res, c.flags);
	}
	return (int)n;
}

/*
 * Teardown: SQEs the kernel has not taken yet whose op (or, for a cancel,
 * whose target) mine() rejects become NOPs without a handler. They were
 * prepared by owners being freed and were never going to be submitted (the
 * loop stopped first): submitting them now could hand the kernel freed
 * memory.
 */
static void neuter_pending(struct uring *u, bool (*mine)(const struct uring_op *op, void *userdata),
			   void *userdata)
{
	struct io_uring_sq *sq = &u->ring.sq;

	for (unsigned i = *sq->khead; i != sq->sqe_tail; i++) {
		struct io_uring_sqe *sqe = &sq->sqes[i & sq->ring_mask];
		const struct uring_op *op = (const struct uring_op *)(uintptr_t)sqe->user_data;

		if (sqe->opcode == IORING_OP_ASYNC_CANCEL)
			op = (const struct uring_op *)(uintptr_t)sqe->addr;
		if (op && mine(op, userdata))
			continue;
		io_uring_prep_nop(sqe);
		io_uring_sqe_set_data(sqe, NULL);
	}
}

int uring_run_teardown(struct uring *u, bool (*mine)(const struct uring_op *op, void *userdata),
		       void *userdata, uint64_t timeout_ms)
{
	struct __kernel_timespec ts = { .tv_sec = (long long)(timeout_ms / 1000),
					.tv_nsec = (long long)(timeout_ms % 1000) * 1000000 };
	struct io_uring_cqe *cqe;
	int r, n = 0;

	if (u->_error)
		return u->_error;
	neuter_pending(u, mine, userdata);
	/* Completions reaped by uring_get_sqe() may be the ones: do not block past them. */
	if (u->_done_len == u->_done_head) {
		r = io_uring_submit_and_wait_timeout(&u->ring, &cqe, 1, &ts, NULL);
		u->n_submit_calls++;
		u->pending = io_uring_sq_ready(&u->ring);
		if (r < 0 && r != -ETIME && r != -EINTR)
			return r;
	}
	r = reap(u, UINT_MAX);
	if (r < 0)
		return r;
	/* A handler's submission may reap more into the list: it is read afresh each time. */
	while (u->_done_head < u->_done_len) {
		struct uring_cqe_copy c = u->_done[u->_done_head++];

		if (u->_done_head == u->_done_len)
			u->_done_head = u->_done_len = 0;
		if (!mine(c.op, userdata))
			continue;
		if (!(c.flags & IORING_CQE_F_MORE))
			c.op->busy = false;
		c.op->fn(c.op, c.res, c.flags);
		n++;
	}
	return n;
}

int uring_bufs_init(struct uring *u, struct uring_bufs *b, unsigned short bgid, unsigned count,
		    unsigned size)
{
	struct io_uring_buf_reg reg = { 0 };
	size_t ring_bytes = (size_t)count * sizeof(struct io_uring_buf);
	void *mem;
	int r;

	memset(b, 0, sizeof(*b));
	if (count == 0 || (count & (count - 1)) || count > 32768)
		return -EINVAL;
	mem = mmap(NULL, ring_bytes, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
	if (mem == MAP_FAILED)
		return -errno;
	b->br = mem;
	b->base = mmap(NULL, (size_t)count * size, PROT_READ | PROT_WRITE,
		       MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
	if (b->base == MAP_FAILED) {
		r = -errno;
		munmap(mem, ring_bytes);
		return r;
	}
	/*
	 * Not inherited by fork-style children (the PID-namespace init lives
	 * as long as its command): they never touch these, and the kernel
	 * would otherwise keep copy-on-write versions of them alive there.
	 */
	(void)madvise(mem, ring_bytes, MADV_DONTFORK);
	(void)madvise(b->base, (size_t)count * size, MADV_DONTFORK);
	b->count = count;
	b->size = size;
	b->bgid = bgid;

	reg.ring_addr = (unsigned long)b->br;
	reg.ring_entries = count;
	reg.bgid = bgid;
	r = io_uring_register_buf_ring(&u->ring, &reg, 0);
	if (r < 0) {
		munmap(b->base, (size_t)count * size);
		munmap(mem, ring_bytes);
		memset(b, 0, sizeof(*b));
		return r;
	}
	io_uring_buf_ring_init(b->br);
	for (unsigned i = 0; i < count; i++)
		io_uring_buf_ring_add(b->br, uring_bufs_get(b, i), size, (unsigned short)i,
				      io_uring_buf_ring_mask(count), (int)i);
	io_uring_buf_ring_advance(b->br, (int)count);
	return 0;
}

void uring_bufs_done(struct uring *u, struct uring_bufs *b)
{
	if (!b->br)
		return;
	(void)io_uring_unregister_buf_ring(&u->ring, b->bgid);
	munmap(b->base, (size_t)b->count * b->size);
	munmap(b->br, (size_t)b->count * sizeof(struct io_uring_buf));
	memset(b, 0, sizeof(*b));
}

void uring_bufs_recycle(struct uring_bufs *b, unsigned bid)
{
	io_uring_buf_ring_add(b->br, uring_bufs_get(b, bid), b->size, (unsigned short)bid,
			      io_uring_buf_ring_mask(b->count), 0);
	io_uring_buf_ring_advance(b->br, 1);
}
