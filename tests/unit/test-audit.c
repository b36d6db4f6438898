/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for src/server/audit.c, the audit log's queue, on a real ring
 * and real pipes: a reader that stops reading never blocks, the queue keeps
 * to its bound and drops whole lines (counted), lines come out whole and in
 * order, reopens keep each file's lines in that file (and close it after
 * them, or give it up past the limit), a closed pipe drops, the exit flush
 * is bounded. Needs io_uring (skips otherwise). The ring is stepped with
 * uring_run_teardown(), which waits with a deadline (uring_run_once() would
 * wait for ever on a stalled pipe).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "tests.h"

#define WATCHDOG_SEC 20
#define LINE_BYTES 1000

static const char *watchdog_test;

static void on_alarm(int sig)
{
	static const char msg[] = " did not return in time\n";

	(void)sig;
	(void)!write(STDOUT_FILENO, "Bail out! ", 10);
	(void)!write(STDOUT_FILENO, watchdog_test, strlen(watchdog_test));
	(void)!write(STDOUT_FILENO, msg, sizeof(msg) - 1);
	_exit(1);
}

static void setup(const char *test, struct uring *u, struct server_audit *a, size_t max_queued)
{
	int r;

	watchdog_test = test;
	signal(SIGALRM, on_alarm);
	signal(SIGPIPE, SIG_IGN); /* as the server: EPIPE instead */
	alarm(WATCHDOG_SEC);
	r = uring_init(u, 64);
	if (r == -ENOSYS || r == -EPERM)
		tests_skip("io_uring unavailable (kernel.io_uring_disabled or seccomp)");
	ASSERT_EQ(0, r);
	server_audit_init(a, u, max_queued);
}

static void teardown(struct uring *u, struct server_audit *a)
{
	server_audit_flush(a, 100);
	uring_done(u);
	server_audit_done(a);
	alarm(0);
}

static bool every_op(const struct uring_op *op, void *userdata)
{
	(void)op;
	(void)userdata;
	return true;
}

/* One loop iteration: start writes, wait up to ms for completions, dispatch them. */
static void step(struct server_audit *a, uint64_t ms)
{
	server_audit_run(a);
	ASSERT_TRUE(uring_run_teardown(a->ring, every_op, NULL, ms) >= 0);
	server_audit_run(a);
}

/* Queues line number i: "<i>:xxx...x\n", LINE_BYTES long. */
static void append(struct server_audit *a, unsigned i)
{
	char line[LINE_BYTES];
	int n = snprintf(line, sizeof(line), "%u:", i);

	memset(line + n, 'x', sizeof(line) - (size_t)n - 1);
	line[sizeof(line) - 1] = '\n';
	server_audit_append(a, line, sizeof(line));
}

static void make_pipe(int p[2])
{
	ASSERT_EQ(0, pipe2(p, O_CLOEXEC));
	ASSERT_EQ(0, fcntl(p[0], F_SETFL, O_NONBLOCK)); /* the test's reads never block */
}

/*
 * Reads the pipe (stepping the ring so that queued lines follow) until it
 * has want lines, or until EOF for want 0. Checks every line is whole
 * (cut_tail: but for the last one, in a file given up in the middle of a
 * line); returns their numbers in ret[], the count.
 */
static size_t drain_pipe(struct server_audit *a, int fd, unsigned *ret, size_t max, size_t want,
			 bool cut_tail)
{
	static char buf[1 << 22];
	size_t len = 0, n = 0;

	for (unsigned idle = 0;;) {
		ssize_t k = read(fd, buf + len, sizeof(buf) - len);
		size_t lines = 0;

		if (k == 0)
			break; /* every writer closed */
		if (k > 0)
			len += (size_t)k;
		for (size_t i = 0; i < len; i++)
			lines += buf[i] == '\n';
		if (want && lines >= want)
			break;
		if (k > 0)
			continue;
		ASSERT_EQ(EAGAIN, errno);
		ASSERT_TRUE(idle++ < 1000);
		step(a, 10);
	}
	for (size_t at = 0; at < len;) {
		char *nl = memchr(buf + at, '\n', len - at);

		if (!nl && cut_tail)
			break;
		ASSERT_TRUE(nl != NULL);                           /* no line cut short */
		ASSERT_EQ(LINE_BYTES, nl + 1 - (buf + at));        /* nor glued to another */
		ASSERT_TRUE(n < max);
		ret[n++] = (unsigned)strtoul(buf + at, NULL, 10);
		at = (size_t)(nl + 1 - buf);
	}
	return n;
}

/* Checks: a stalled reader; the queue keeps to its bound, the rest is dropped whole and counted. */
TEST(stalled_pipe_bounds_the_queue)
{
	struct server_audit a;
	struct uring u;
	unsigned got[512];
	size_t n;
	int p[2];

	setup(__func__, &u, &a, 32 * LINE_BYTES);
	make_pipe(p);
	ASSERT_EQ(0, server_audit_set_fd(&a, p[1], true));
	for (unsigned i = 0; i < 300; i++) {
		append(&a, i);
		ASSERT_TRUE(a.queued <= 32 * LINE_BYTES);
		step(&a, 0);
	}
	ASSERT_TRUE(a.dropped_lines > 0);
	ASSERT_TRUE(a.queued > 0);
	n = drain_pipe(&a, p[0], got, ELEMENTSOF(got), 300 - a.dropped_lines, false);
	ASSERT_EQ(300, n + a.dropped_lines);
	ASSERT_EQ(0, a.queued);
	for (size_t i = 1; i < n; i++)
		ASSERT_TRUE(got[i] > got[i - 1]); /* in order */
	/* room again: the next line is written */
	append(&a, 1000);
	n = drain_pipe(&a, p[0], got, ELEMENTSOF(got), 1, false);
	ASSERT_EQ(1, n);
	ASSERT_EQ(1000, got[0]);
	teardown(&u, &a);
	close(p[0]);
}

/*
 * Checks: a reopen while the old pipe is stalled; new lines go to the new
 * pipe at once, the old lines to the old one once it is read, which is then
 * closed (EOF).
 */
TEST(reopen_keeps_old_lines_for_the_old_file)
{
	struct server_audit a;
	struct uring u;
	unsigned got[512];
	size_t n;
	int p[2], q[2];

	setup(__func__, &u, &a, 1 << 20);
	make_pipe(p);
	make_pipe(q);
	ASSERT_EQ(0, server_audit_set_fd(&a, p[1], true));
	for (unsigned i = 0; i < 100; i++) /* 100 kB: more than the pipe holds */
		append(&a, i);
	step(&a, 10);
	ASSERT_TRUE(a.queued > 0);
	ASSERT_EQ(0, server_audit_set_fd(&a, q[1], true));
	for (unsigned i = 100; i < 110; i++)
		append(&a, i);
	n = drain_pipe(&a, q[0], got, ELEMENTSOF(got), 10, false);
	ASSERT_EQ(10, n);
	ASSERT_EQ(100, got[0]);
	n = drain_pipe(&a, p[0], got, ELEMENTSOF(got), 0, false); /* EOF: the old fd was closed */
	ASSERT_EQ(100, n);
	for (size_t i = 0; i < n; i++)
		ASSERT_EQ(i, got[i]);
	ASSERT_EQ(0, a.dropped_lines);
	teardown(&u, &a);
	close(p[0]);
	close(q[0]);
}

/* Checks: a reopen of the file being written (a dup of its fd) goes on with it. */
TEST(reopen_of_the_same_file_changes_nothing)
{
	struct server_audit a;
	struct uring u;
	unsigned got[512];
	size_t n;
	int p[2], dup_fd;

	setup(__func__, &u, &a, 1 << 20);
	make_pipe(p);
	ASSERT_EQ(0, server_audit_set_fd(&a, p[1], true));
	for (unsigned i = 0; i < 100; i++)
		append(&a, i);
	step(&a, 10);
	dup_fd = fcntl(p[1], F_DUPFD_CLOEXEC, 0);
	ASSERT_TRUE(dup_fd >= 0);
	ASSERT_EQ(0, server_audit_set_fd(&a, dup_fd, true));
	ASSERT_EQ(-1, fcntl(dup_fd, F_GETFD)); /* closed: the old fd goes on */
	ASSERT_TRUE(list_empty(&a.retiring));
	for (unsigned i = 100; i < 110; i++)
		append(&a, i);
	n = drain_pipe(&a, p[0], got, ELEMENTSOF(got), 110, false);
	ASSERT_EQ(110, n);
	for (size_t i = 0; i < n; i++)
		ASSERT_EQ(i, got[i]);
	teardown(&u, &a);
	close(p[0]);
}

/* Checks: reopens past the limit while every reader is stuck give up the oldest file (EOF). */
TEST(stuck_reopens_give_up_the_oldest)
{
	struct server_audit a;
	struct uring u;
	unsigned got[512];
	uint64_t lost = 0;
	int p[7][2];
	size_t n;

	setup(__func__, &u, &a, 1 << 20);
	for (unsigned k = 0; k < 7; k++) {
		make_pipe(p[k]);
		ASSERT_EQ(0, server_audit_set_fd(&a, p[k][1], true));
		for (unsigned i = 0; i < 80; i++) /* 80 kB: the pipe holds 64 */
			append(&a, k * 100 + i);
		step(&a, 10);
	}
	/* 6 retiring with lines, at most 4 kept: files 0 and 1 were given up */
	for (unsigned i = 0; i < 20; i++)
		step(&a, 5);
	ASSERT_TRUE(a.dropped_lines > 0);
	/* what each given-up file got, whole, and its rest counted as dropped */
	for (unsigned k = 0; k < 2; k++) {
		n = drain_pipe(&a, p[k][0], got, ELEMENTSOF(got), 0, true);
		ASSERT_TRUE(n < 80);
		lost += 80 - n;
	}
	ASSERT_EQ(lost, a.dropped_lines);
	for (unsigned k = 2; k < 7; k++) {
		/* EOF once written for the old files; the current one stays open */
		n = drain_pipe(&a, p[k][0], got, ELEMENTSOF(got), k < 6 ? 0 : 80, false);
		ASSERT_EQ(80, n);
		for (size_t i = 0; i < n; i++)
			ASSERT_EQ(k * 100 + i, got[i]);
	}
	teardown(&u, &a);
	for (unsigned k = 0; k < 7; k++)
		close(p[k][0]);
}

/*
 * Checks: the queue is full of a rotated-away file's lines whose reader is
 * stuck: new lines are dropped while it may still move (stuck_ms), then it
 * is given up (its fd closed) and the new file gets its lines.
 */
TEST(stuck_old_file_gives_way_to_new_lines)
{
	struct server_audit a;
	struct uring u;
	unsigned got[512];
	uint64_t before;
	size_t n;
	int p[2], q[2];

	setup(__func__, &u, &a, 32 * LINE_BYTES);
	a.stuck_ms = 60000;
	make_pipe(p);
	make_pipe(q);
	ASSERT_EQ(0, server_audit_set_fd(&a, p[1], true));
	for (unsigned i = 0; i < 120; i++) { /* the pipe's 64 KiB and the queue's 32 kB */
		append(&a, i);
		step(&a, 0);
	}
	ASSERT_TRUE(a.queued > 31 * LINE_BYTES);
	ASSERT_EQ(0, server_audit_set_fd(&a, q[1], true));
	before = a.dropped_lines;
	append(&a, 1000); /* no room, and the old file is not stuck yet */
	ASSERT_EQ(before + 1, a.dropped_lines);
	a.stuck_ms = 0; /* the old reader has taken nothing for long enough */
	append(&a, 1001);
	n = drain_pipe(&a, q[0], got, ELEMENTSOF(got), 1, false);
	ASSERT_EQ(1, n);
	ASSERT_EQ(1001, got[0]);
	n = drain_pipe(&a, p[0], got, ELEMENTSOF(got), 0, true); /* EOF: given up and closed */
	ASSERT_EQ(120 + 1, n + a.dropped_lines);                  /* and line 1000 */
	teardown(&u, &a);
	close(p[0]);
	close(q[0]);
}

/* Checks: a pipe whose reader is gone (EPIPE): its lines are dropped and counted, none held. */
TEST(closed_pipe_drops)
{
	struct server_audit a;
	struct uring u;
	int p[2];

	setup(__func__, &u, &a, 1 << 20);
	make_pipe(p);
	close(p[0]);
	ASSERT_EQ(0, server_audit_set_fd(&a, p[1], true));
	for (unsigned i = 0; i < 5; i++)
		append(&a, i);
	step(&a, 1000);
	ASSERT_EQ(5, a.dropped_lines);
	ASSERT_EQ(EPIPE, -a.last_error);
	ASSERT_EQ(0, a.queued);
	teardown(&u, &a);
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Checks: the exit flush with a reader that never reads returns in bounded time, counts the rest */
TEST(exit_flush_is_bounded)
{
	struct server_audit a;
	struct uring u;
	unsigned got[512];
	uint64_t t0;
	size_t n;
	int p[2];

	setup(__func__, &u, &a, 1 << 20);
	make_pipe(p);
	ASSERT_EQ(0, server_audit_set_fd(&a, p[1], true));
	for (unsigned i = 0; i < 200; i++)
		append(&a, i);
	step(&a, 10);
	t0 = mono_ms();
	server_audit_flush(&a, 200);
	ASSERT_TRUE(mono_ms() - t0 < 5000);
	ASSERT_EQ(0, a.queued);
	uring_done(&u);
	server_audit_done(&a); /* closes the pipe: EOF after what it holds */
	n = drain_pipe(&a, p[0], got, ELEMENTSOF(got), 0, true);
	ASSERT_TRUE(n > 0 && n < 200);
	ASSERT_EQ(200, n + a.dropped_lines);
	close(p[0]);
	alarm(0);
}

TEST_MAIN()
