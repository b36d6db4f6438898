/* SPDX-License-Identifier: MIT */
/*
 * Ring setup, probing, submission and completion dispatch.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ring.h"


#define CQE_BATCH 128

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
		io_uring_free_probe(probe);
	}
	return 0;
}

void uring_done(struct uring *u)
{
	io_uring_queue_exit(&u->ring);
}

static struct io_uring_sqe *get_sqe_raw(struct uring *u)
{
	struct io_uring_sqe *sqe;

	while (!(sqe = io_uring_get_sqe(&u->ring))) {
		int r = io_uring_submit(&u->ring);
		if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY)
			abort(); /* the ring is unusable: nothing sane left to do */
		u->pending = 0;
	}
	u->pending++;
	return sqe;
}

struct io_uring_sqe *uring_get_sqe(struct uring *u, struct uring_op *op, uring_op_fn fn)
{
	struct io_uring_sqe *sqe = get_sqe_raw(u);

	op->fn = fn;
	op->busy = true;
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
	struct {
		struct uring_op *op;
		int res;
		uint32_t flags;
	} done[CQE_BATCH];
	struct io_uring_cqe *cqe;
	unsigned head, n = 0;
	int r;

	r = io_uring_submit_and_wait(&u->ring, 1);
	u->pending = 0;
	if (r < 0 && r != -EINTR && r != -ETIME && r != -EBUSY && r != -EAGAIN)
		return r;

	/* Collect first, dispatch after the walk: handlers may submit and reap nothing. */
	io_uring_for_each_cqe(&u->ring, head, cqe)
	{
		struct uring_op *op = io_uring_cqe_get_data(cqe);

		if (n == CQE_BATCH)
			break;
		if (op) {
			done[n].op = op;
			done[n].res = cqe->res;
			done[n].flags = cqe->flags;
			n++;
		}
		io_uring_cq_advance(&u->ring, 1);
	}

	for (unsigned i = 0; i < n; i++) {
		struct uring_op *op = done[i].op;

		if (!(done[i].flags & IORING_CQE_F_MORE))
			op->busy = false;
		op->fn(op, done[i].res, done[i].flags);
	}
	return (int)n;
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
