/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for uring/ring.c submission: a CQ overflowed by unreaped NOPs,
 * a kernel that refuses submission (-EBUSY/-EAGAIN) until completions are
 * reaped or for good, and a ring in a bad state. Needs io_uring (skips
 * otherwise). Linked with -Wl,--wrap=io_uring_submit{,_and_wait} (meson.build):
 * the wrappers below play the kernels that answer -EBUSY/-EAGAIN, which the
 * test machine's kernel does not do on demand. A watchdog turns a hang
 * (a submit loop that never gives up) into a TAP bail-out.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ring.h"
#include "tests.h"

#define WATCHDOG_SEC 5
#define FLOOD 2000
#define SQ_ENTRIES 4 /* uring_init() gives a CQ of 4 × 4 = 16 entries */

/* ---- io_uring_submit*() wrappers ---- */

enum refuse_mode {
	REFUSE_NEVER,
	REFUSE_WHILE_CQ_READY, /* a pre-5.11-style kernel: no submission while CQEs wait */
	REFUSE_ALWAYS,
};

static enum refuse_mode refuse_mode;
static int refuse_err;
static unsigned submit_calls, submit_refused;

int __real_io_uring_submit(struct io_uring *ring);
int __real_io_uring_submit_and_wait(struct io_uring *ring, unsigned wait_nr);
int __wrap_io_uring_submit(struct io_uring *ring);
int __wrap_io_uring_submit_and_wait(struct io_uring *ring, unsigned wait_nr);

static bool refuse(struct io_uring *ring)
{
	submit_calls++;
	if (refuse_mode == REFUSE_ALWAYS ||
	    (refuse_mode == REFUSE_WHILE_CQ_READY && io_uring_cq_ready(ring) > 0)) {
		submit_refused++;
		return true;
	}
	return false;
}

int __wrap_io_uring_submit(struct io_uring *ring)
{
	return refuse(ring) ? refuse_err : __real_io_uring_submit(ring);
}

int __wrap_io_uring_submit_and_wait(struct io_uring *ring, unsigned wait_nr)
{
	return refuse(ring) ? refuse_err : __real_io_uring_submit_and_wait(ring, wait_nr);
}

static void refuse_set(enum refuse_mode mode, int err)
{
	refuse_mode = mode;
	refuse_err = err;
	submit_calls = submit_refused = 0;
}

/* ---- watchdog ---- */

static const char *watchdog_test;

static void on_alarm(int sig)
{
	static const char msg[] = " did not return in time (a submit loop that never gives up?)\n";

	/* write() and strlen() only: async-signal-safe. */
	(void)!write(STDOUT_FILENO, "Bail out! ", 10);
	(void)!write(STDOUT_FILENO, watchdog_test, strlen(watchdog_test));
	(void)!write(STDOUT_FILENO, msg, sizeof(msg) - 1);
	_exit(1);
}

static void watchdog(const char *test)
{
	watchdog_test = test;
	signal(SIGALRM, on_alarm);
	alarm(WATCHDOG_SEC);
}

/* ---- NOP ops ---- */

struct nop {
	struct uring_op op; /* first: the handler casts back */
	unsigned idx;
};

static struct nop nops[FLOOD];
static unsigned dispatched, dispatch_errors;
/* When set, the handler of NOP i queues NOP i + chain_step: handlers that submit. */
static struct uring *chain_ring;
static unsigned chain_step;

static void on_nop(struct uring_op *op, int res, uint32_t flags);

static void queue_nop_in_handler(unsigned i)
{
	struct io_uring_sqe *sqe = uring_get_sqe(chain_ring, &nops[i].op, on_nop);

	io_uring_prep_nop(sqe);
	nops[i].idx = i;
}

static void on_nop(struct uring_op *op, int res, uint32_t flags)
{
	struct nop *n = (struct nop *)op;

	/* No ASSERT here: a longjmp out of uring_run_once() would hide the cause. */
	if (res != 0 || n->idx != dispatched || !uring_op_idle(op))
		dispatch_errors++;
	dispatched++;
	if (chain_ring && n->idx + chain_step < FLOOD)
		queue_nop_in_handler(n->idx + chain_step);
}

static void ring_init(struct uring *u)
{
	int r = uring_init(u, SQ_ENTRIES);

	if (r == -ENOSYS || r == -EPERM)
		tests_skip("io_uring unavailable (kernel.io_uring_disabled or seccomp)");
	ASSERT_EQ(0, r);
	dispatched = dispatch_errors = 0;
}

static struct io_uring_sqe *queue_nop(struct uring *u, unsigned i)
{
	struct io_uring_sqe *sqe = uring_get_sqe(u, &nops[i].op, on_nop);

	ASSERT_TRUE(sqe);
	io_uring_prep_nop(sqe);
	nops[i].idx = i;
	return sqe;
}

/* Runs the loop until count NOPs were dispatched; each exactly once, in order, with res 0. */
static void drain(struct uring *u, unsigned count)
{
	for (unsigned i = 0; dispatched < count; i++) {
		int r;

		ASSERT_TRUE(i < 10 * FLOOD);
		r = uring_run_once(u);
		ASSERT_EQ(0, r < 0 ? r : 0);
	}
	ASSERT_EQ(count, dispatched);
	ASSERT_EQ(0, dispatch_errors);
	ASSERT_EQ(0, uring_error(u));
}

/* Checks: the kernel's CQ overflows (16 slots, 2000 NOPs unreaped); nothing is lost or reordered. */
TEST(cq_overflow_all_dispatched)
{
	struct uring u;

	watchdog(__func__);
	ring_init(&u);
	for (unsigned i = 0; i < FLOOD; i++)
		queue_nop(&u, i);
	ASSERT_EQ(0, dispatched); /* uring_get_sqe() never runs handlers */
	ASSERT_EQ(0, uring_error(&u));
	drain(&u, FLOOD);
	uring_done(&u);
}

/*
 * Checks: a kernel that refuses submission (err) while CQEs wait in the CQ
 * gets them reaped, and the flood makes progress: uring_get_sqe() does not
 * spin, runs no handler, and every completion is dispatched once, in order.
 */
static void check_refused_until_reaped(int err)
{
	struct uring u;

	ring_init(&u);
	refuse_set(REFUSE_WHILE_CQ_READY, err);
	for (unsigned i = 0; i < FLOOD; i++)
		queue_nop(&u, i);
	ASSERT_TRUE(submit_refused > 0); /* the scenario happened */
	ASSERT_EQ(0, dispatched);
	ASSERT_EQ(0, uring_error(&u));
	drain(&u, FLOOD);
	ASSERT_TRUE(submit_calls < 4 * FLOOD);
	refuse_set(REFUSE_NEVER, 0);
	uring_done(&u);
}

TEST(ebusy_until_reaped_makes_progress)
{
	watchdog(__func__);
	check_refused_until_reaped(-EBUSY);
}

TEST(eagain_until_reaped_makes_progress)
{
	watchdog(__func__);
	check_refused_until_reaped(-EAGAIN);
}

/*
 * Checks: handlers that queue more NOPs while the kernel refuses until the CQ
 * is reaped: the reaping they cause (during dispatch) keeps completion order.
 */
TEST(handlers_submitting_keep_order)
{
	struct uring u;

	watchdog(__func__);
	ring_init(&u);
	refuse_set(REFUSE_WHILE_CQ_READY, -EBUSY);
	chain_ring = &u;
	chain_step = 3 * SQ_ENTRIES;
	for (unsigned i = 0; i < chain_step; i++)
		queue_nop(&u, i);
	drain(&u, FLOOD);
	chain_ring = NULL;
	ASSERT_TRUE(submit_refused > 0);
	refuse_set(REFUSE_NEVER, 0);
	uring_done(&u);
}

/*
 * Checks: when the kernel keeps refusing (err) although the CQ was reaped,
 * uring_get_sqe() gives up after a few tries: it hands out an SQE that is
 * never submitted (its op stays idle), the ring reports err from then on,
 * and no later call submits again.
 */
static void check_refused_for_good(int err)
{
	struct uring u;
	struct io_uring_sqe *sqe;
	unsigned calls;

	ring_init(&u);
	/* SQ_ENTRIES NOPs completed in the CQ (unreaped), SQ_ENTRIES more queued: the SQ is full. */
	for (unsigned i = 0; i < 2 * SQ_ENTRIES; i++)
		queue_nop(&u, i);
	ASSERT_EQ(SQ_ENTRIES, io_uring_cq_ready(&u.ring));
	refuse_set(REFUSE_ALWAYS, err);

	sqe = queue_nop(&u, 2 * SQ_ENTRIES);
	ASSERT_TRUE(sqe != NULL);
	ASSERT_TRUE(uring_op_idle(&nops[2 * SQ_ENTRIES].op));
	ASSERT_EQ(err, uring_error(&u));
	ASSERT_TRUE(submit_calls >= 2 && submit_calls <= 16); /* reaped, retried, gave up */
	ASSERT_EQ(0, io_uring_cq_ready(&u.ring));             /* the CQ was reaped... */
	ASSERT_EQ(0, dispatched);                             /* ...without running handlers */

	calls = submit_calls;
	ASSERT_EQ(err, uring_run_once(&u));
	queue_nop(&u, 2 * SQ_ENTRIES + 1);
	ASSERT_TRUE(uring_op_idle(&nops[2 * SQ_ENTRIES + 1].op));
	ASSERT_EQ(err, uring_run_once(&u));
	ASSERT_EQ(calls, submit_calls);
	ASSERT_EQ(0, dispatched);
	refuse_set(REFUSE_NEVER, 0);
	uring_done(&u);
}

TEST(ebusy_for_good_is_returned)
{
	watchdog(__func__);
	check_refused_for_good(-EBUSY);
}

TEST(eagain_for_good_is_returned)
{
	watchdog(__func__);
	check_refused_for_good(-EAGAIN);
}

/*
 * Checks: uring_run_once() on a kernel that refuses with nothing to reap
 * returns the error instead of 0 (which would make the caller's loop spin),
 * and the ring still works once the kernel accepts again.
 */
TEST(run_once_without_progress_returns_error)
{
	struct uring u;

	watchdog(__func__);
	ring_init(&u);
	queue_nop(&u, 0);
	queue_nop(&u, 1);
	refuse_set(REFUSE_ALWAYS, -EAGAIN);
	ASSERT_EQ(-EAGAIN, uring_run_once(&u));
	ASSERT_TRUE(submit_calls >= 1 && submit_calls <= 8);
	ASSERT_EQ(0, uring_error(&u)); /* nothing was lost: not sticky */
	refuse_set(REFUSE_NEVER, 0);
	drain(&u, 2);
	uring_done(&u);
}

/* Checks: a ring fd that no longer is an io_uring fails the ring with -EOPNOTSUPP, no abort(). */
TEST(hard_error_is_returned)
{
	struct uring u;
	int fd;

	watchdog(__func__);
	ring_init(&u);
	for (unsigned i = 0; i < SQ_ENTRIES; i++)
		queue_nop(&u, i);
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	ASSERT_TRUE(fd >= 0);
	/* The ring stays mapped; only io_uring_enter() now reaches /dev/null. */
	ASSERT_EQ(u.ring.ring_fd, dup3(fd, u.ring.ring_fd, O_CLOEXEC));
	(void)close(fd);

	ASSERT_TRUE(queue_nop(&u, SQ_ENTRIES) != NULL);
	ASSERT_TRUE(uring_op_idle(&nops[SQ_ENTRIES].op));
	ASSERT_EQ(-EOPNOTSUPP, uring_error(&u));
	ASSERT_EQ(-EOPNOTSUPP, uring_run_once(&u));
	ASSERT_EQ(0, dispatched);
	uring_done(&u);
}

/*
 * Checks: a ring in a bad state (created disabled) gives -EBADFD from
 * uring_run_once() and fails the ring when the SQ fills, no abort(). Built
 * by hand: uring_init() takes no setup flags.
 */
TEST(disabled_ring_is_ebadfd)
{
	struct uring u;
	int r;

	watchdog(__func__);
	memset(&u, 0, sizeof(u));
	r = io_uring_queue_init(SQ_ENTRIES, &u.ring, IORING_SETUP_R_DISABLED);
	if (r == -ENOSYS || r == -EPERM || r == -EINVAL)
		tests_skip("io_uring or IORING_SETUP_R_DISABLED unavailable");
	ASSERT_EQ(0, r);
	dispatched = dispatch_errors = 0;

	queue_nop(&u, 0);
	ASSERT_EQ(-EBADFD, uring_run_once(&u));
	ASSERT_EQ(0, uring_error(&u));
	for (unsigned i = 1; i <= SQ_ENTRIES; i++)
		queue_nop(&u, i);
	ASSERT_EQ(-EBADFD, uring_error(&u));
	ASSERT_TRUE(uring_op_idle(&nops[SQ_ENTRIES].op));
	ASSERT_EQ(-EBADFD, uring_run_once(&u));
	ASSERT_EQ(0, dispatched);
	uring_done(&u);
}

TEST_MAIN()
