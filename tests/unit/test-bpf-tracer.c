/* SPDX-License-Identifier: MIT */
/*
 * The denial tracer (sandbox/bpf-tracer.c) on the running kernel: a child in a
 * watched cgroup v2 leaf fails syscalls with EROFS (read-only bind mount),
 * EXDEV, EACCES and EPERM, and exactly those records arrive (number, errno,
 * pid, cgroup, comm); the same child outside the cgroup, or after unwatch,
 * yields none; a flood of 10^6 failing calls yields the cgroup's budget of
 * records and a count of the rest; spread over 8 cgroups it overflows the
 * ring, and the drop count accounts for every record lost; memory is bounded.
 * Needs root and a kernel that loads the program: skips with the reason
 * otherwise (UEXEC_REQUIRE_BPF=1 turns that skip into a failure).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <liburing.h>

#include "bpf-config.h"
#include "bpf-tracer.h"
#include "cgroup-dir.h"
#include "tests.h"

#if UEXEC_HAVE_BPF
#include <bpf/bpf.h>
#endif

#define CHILD_COMM "denial-child"
#define FLOOD_CALLS 1000000
#define NOBODY 65534

static char skip_why[4400];

/* A tracer, or the test skips with bpf_tracer_open()'s reason. */
static struct bpf_tracer *open_or_skip(void)
{
	char err[256] = "";
	struct bpf_tracer *t = bpf_tracer_open(err, sizeof(err));

	if (t)
		return t;
	ASSERT_TRUE(err[0] != '\0');
	if (getenv("UEXEC_REQUIRE_BPF") && strcmp(getenv("UEXEC_REQUIRE_BPF"), "1") == 0)
		tests_fail(__FILE__, __LINE__, "UEXEC_REQUIRE_BPF=1 but: %s", err);
	snprintf(skip_why, sizeof(skip_why), "tracer unavailable: %s", err);
	tests_skip(skip_why);
}

struct fixture {
	char cgroup[4096];	/* our leaf */
	uint64_t cgroup_id;
	char tmp[256];		/* holds ro/, rw/, file, secret */
};

static struct fixture fx;

#define FLOODERS 8

/* Removes the leaf (and the flood test's), and the tree; no-op when done. */
static void fixture_teardown(void)
{
	char cmd[600], extra[4200];

	if (fx.cgroup[0]) {
		for (int i = 0; i < FLOODERS; i++) {
			snprintf(extra, sizeof(extra), "%.4000s-%d", fx.cgroup, i);
			(void)rmdir(extra);
		}
		(void)rmdir(fx.cgroup);
	}
	if (fx.tmp[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx.tmp);
		if (system(cmd) != 0)
			fprintf(stderr, "# could not remove %s\n", fx.tmp);
	}
	memset(&fx, 0, sizeof(fx));
}

/*
 * A cgroup v2 leaf and a temporary tree, or the test skips. A failed
 * assertion skips the test's own teardown: the next setup, or exit, does it.
 */
static void fixture_setup(void)
{
	static int serial;
	static bool at_exit;
	char dir[3800], path[512];
	const char *tmpdir = getenv("TMPDIR");
	int r, fd;

	fixture_teardown();
	if (!at_exit && atexit(fixture_teardown) == 0)
		at_exit = true;

	if (geteuid() != 0)
		tests_skip("needs root (cgroup leaf, bind mounts)");
	r = tests_own_cgroup_dir(dir, sizeof(dir));
	if (r < 0)
		tests_skip("no cgroup v2 hierarchy for this process");
	snprintf(fx.cgroup, sizeof(fx.cgroup), "%s/uexec-test-bpf-%d-%d", dir, (int)getpid(),
		 serial++);
	if (mkdir(fx.cgroup, 0755) < 0) {
		snprintf(skip_why, sizeof(skip_why), "cannot create a cgroup v2 leaf under %s: %s",
			 dir, strerror(errno));
		tests_skip(skip_why);
	}
	ASSERT_EQ(0, bpf_tracer_cgroup_id(AT_FDCWD, fx.cgroup, &fx.cgroup_id));
	ASSERT_TRUE(fx.cgroup_id != 0);

	snprintf(fx.tmp, sizeof(fx.tmp), "%s/uexec-bpf-XXXXXX", tmpdir ? tmpdir : "/tmp");
	ASSERT_TRUE(mkdtemp(fx.tmp) != NULL);
	ASSERT_EQ(0, chmod(fx.tmp, 0755)); /* nobody must reach secret to get EACCES */
	snprintf(path, sizeof(path), "%s/ro", fx.tmp);
	ASSERT_EQ(0, mkdir(path, 0777));
	snprintf(path, sizeof(path), "%s/rw", fx.tmp);
	ASSERT_EQ(0, mkdir(path, 0777));
	snprintf(path, sizeof(path), "%s/file", fx.tmp);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	ASSERT_OK(fd);
	close(fd);
	snprintf(path, sizeof(path), "%s/secret", fx.tmp);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	ASSERT_OK(fd);
	close(fd);
}

/* The cgroup a child joins: the fixture's leaf unless set. */
static const char *join_path;

/* In the child: moves itself into the cgroup. */
static void join_cgroup(void)
{
	char path[4200];
	int fd;

	snprintf(path, sizeof(path), "%s/cgroup.procs", join_path ? join_path : fx.cgroup);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "0", 1) != 1)
		_exit(90);
	close(fd);
}

static void drop_to_nobody(void)
{
	if (syscall(SYS_setresgid, NOBODY, NOBODY, NOBODY) < 0 ||
	    syscall(SYS_setresuid, NOBODY, NOBODY, NOBODY) < 0)
		_exit(91);
}

/*
 * The child's script, with raw syscalls so the numbers are exact. Reported
 * (in this order): openat -EROFS, renameat -EXDEV, openat -EACCES, setuid
 * -EPERM. Not reported: getpid, openat -ENOENT, the mounts and id changes.
 */
static _Noreturn void denials_child(bool in_cgroup)
{
	char ro[300], rw[300], path[400], path2[400];

	prctl(PR_SET_NAME, CHILD_COMM);
	if (in_cgroup)
		join_cgroup();
	snprintf(ro, sizeof(ro), "%s/ro", fx.tmp);
	snprintf(rw, sizeof(rw), "%s/rw", fx.tmp);
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount(ro, ro, NULL, MS_BIND, NULL) < 0 ||
	    mount(NULL, ro, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) < 0 ||
	    mount(rw, rw, NULL, MS_BIND, NULL) < 0)
		_exit(92);

	snprintf(path, sizeof(path), "%s/new", ro);
	if (syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600) != -1 ||
	    errno != EROFS)
		_exit(93);
	snprintf(path, sizeof(path), "%s/file", fx.tmp);
	snprintf(path2, sizeof(path2), "%s/file", rw);
	if (syscall(SYS_renameat, AT_FDCWD, path, AT_FDCWD, path2) != -1 || errno != EXDEV)
		_exit(94);
	if (syscall(SYS_getpid) != getpid())
		_exit(95);
	snprintf(path, sizeof(path), "%s/missing", fx.tmp);
	if (syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC) != -1 || errno != ENOENT)
		_exit(96);
	drop_to_nobody();
	snprintf(path, sizeof(path), "%s/secret", fx.tmp);
	if (syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC) != -1 || errno != EACCES)
		_exit(97);
	if (syscall(SYS_setuid, 0) != -1 || errno != EPERM)
		_exit(98);
	_exit(0);
}

static long flood_calls = FLOOD_CALLS;

static _Noreturn void flood_child(void)
{
	join_cgroup();
	drop_to_nobody();
	for (long i = 0; i < flood_calls; i++)
		if (syscall(SYS_setuid, 0) != -1)
			_exit(99);
	_exit(0);
}

/* Runs fn in a child and returns its pid once it exited 0. */
static pid_t run_child(void (*fn)(bool), bool arg)
{
	int st;
	pid_t pid = fork();

	ASSERT_OK(pid);
	if (pid == 0)
		fn(arg);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_TRUE(WIFEXITED(st));
	ASSERT_EQ(0, WEXITSTATUS(st));
	return pid;
}

static void run_flood(bool unused)
{
	flood_child();
}

#define MAX_SEEN 64

struct seen {
	struct bpf_denial d[MAX_SEEN];
	size_t n;	/* records passed to the callback */
};

static void collect(void *ctx, const struct bpf_denial *d)
{
	struct seen *s = ctx;

	if (s->n < MAX_SEEN)
		s->d[s->n] = *d;
	s->n++;
}

static void count_only(void *ctx, const struct bpf_denial *d)
{
	(*(size_t *)ctx)++;
}

/* Drains everything waiting; returns the number of records. */
static size_t drain(struct bpf_tracer *t, struct seen *s)
{
	int r;

	memset(s, 0, sizeof(*s));
	do {
		r = bpf_tracer_consume(t, collect, s);
		ASSERT_OK(r);
	} while (r > 0);
	return s->n;
}

static void expect(const struct bpf_denial *d, pid_t pid, int nr, int err)
{
	ASSERT_EQ(pid, d->tgid);
	ASSERT_EQ(pid, d->pid);
	ASSERT_EQ(fx.cgroup_id, d->cgroup_id);
	ASSERT_EQ(nr, d->syscall_nr);
	ASSERT_EQ(err, d->err);
	ASSERT_STREQ(CHILD_COMM, d->comm);
}

static long rss_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

/* One attachment, or skip when this kernel refuses it. */
static struct bpf_tracer *open_hook_or_skip(const char *hook)
{
	char err[256] = "";
	struct bpf_tracer *t;

	t = open_or_skip(); /* skips (or fails) when no attachment loads at all */
	bpf_tracer_close(t);
	t = bpf_tracer_open_hook(hook, false, err, sizeof(err));
	if (t) {
		ASSERT_STREQ(hook, bpf_tracer_source(t));
		return t;
	}
	ASSERT_TRUE(err[0] != '\0');
	snprintf(skip_why, sizeof(skip_why), "%s unavailable: %s", hook, err);
	tests_skip(skip_why);
}

static void check_exact_denials(struct bpf_tracer *t)
{
	struct pollfd pfd = { .fd = bpf_tracer_fd(t), .events = POLLIN };
	struct seen s;
	pid_t pid;

	fixture_setup();
	ASSERT_TRUE(bpf_tracer_source(t) != NULL);
	printf("# source: %s\n", bpf_tracer_source(t));
	ASSERT_EQ(0, bpf_tracer_watch_cgroup(t, fx.cgroup_id));
	ASSERT_EQ(0, bpf_tracer_watch_cgroup(t, fx.cgroup_id)); /* idempotent */
	drain(t, &s);
	ASSERT_EQ(0, poll(&pfd, 1, 0));

	/* Inside the watched cgroup: the four denials, in order, nothing else. */
	pid = run_child(denials_child, true);
	ASSERT_EQ(1, poll(&pfd, 1, 5000));
	ASSERT_TRUE(pfd.revents & POLLIN);
	ASSERT_EQ(4, drain(t, &s));
	expect(&s.d[0], pid, SYS_openat, -EROFS);
	expect(&s.d[1], pid, SYS_renameat, -EXDEV);
	expect(&s.d[2], pid, SYS_openat, -EACCES);
	expect(&s.d[3], pid, SYS_setuid, -EPERM);
	ASSERT_EQ(0, poll(&pfd, 1, 0)); /* drained: not readable any more */

	/* The same script outside the cgroup leaves nothing. */
	run_child(denials_child, false);
	ASSERT_EQ(0, poll(&pfd, 1, 200));
	ASSERT_EQ(0, drain(t, &s));

	/* Unwatched, the cgroup's denials are not reported; watched again, they are. */
	ASSERT_EQ(0, bpf_tracer_unwatch_cgroup(t, fx.cgroup_id));
	ASSERT_EQ(-ENOENT, bpf_tracer_unwatch_cgroup(t, fx.cgroup_id));
	run_child(denials_child, true);
	ASSERT_EQ(0, poll(&pfd, 1, 200));
	ASSERT_EQ(0, drain(t, &s));
	ASSERT_EQ(0, bpf_tracer_watch_cgroup(t, fx.cgroup_id));
	pid = run_child(denials_child, true);
	ASSERT_EQ(4, drain(t, &s));
	expect(&s.d[3], pid, SYS_setuid, -EPERM);

	ASSERT_EQ(0, bpf_tracer_dropped(t));
	bpf_tracer_close(t);
	fixture_teardown();
}

/* What bpf_tracer_open() picks (the first attachment the kernel accepts). */
TEST(reports_exact_denials_of_watched_cgroup_only)
{
	check_exact_denials(open_or_skip());
}

/*
 * A task in a cgroup below the watched one (a sandbox that made a child
 * cgroup of its leaf and moved there) is reported, under the watched id.
 */
TEST(descendant_cgroups_are_watched_too)
{
	struct bpf_tracer *t = open_or_skip();
	char sub[4200];
	struct seen s;
	pid_t pid;

	fixture_setup();
	snprintf(sub, sizeof(sub), "%s/sub", fx.cgroup);
	ASSERT_EQ(0, mkdir(sub, 0755));
	ASSERT_EQ(0, bpf_tracer_watch_cgroup(t, fx.cgroup_id));
	drain(t, &s);
	join_path = sub;
	pid = run_child(denials_child, true);
	join_path = NULL;
	ASSERT_EQ(4, drain(t, &s));
	expect(&s.d[0], pid, SYS_openat, -EROFS); /* with the watched leaf's id */
	expect(&s.d[3], pid, SYS_setuid, -EPERM);
	ASSERT_EQ(0, rmdir(sub));
	bpf_tracer_close(t);
	fixture_teardown();
}

/* In the child: as nobody, connect() to the root-only socket fx.tmp/sock (EACCES). */
static _Noreturn void connect_child(bool unused)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd;

	prctl(PR_SET_NAME, CHILD_COMM);
	join_cgroup();
	drop_to_nobody();
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%.100s/sock", fx.tmp);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		_exit(80);
	if (syscall(SYS_connect, fd, &sun, sizeof(sun)) != -1 || errno != EACCES)
		_exit(81);
	_exit(0);
}

/*
 * A refused connect() carries the address it was given (read at the exit from
 * the caller's memory): the consumer can tell a probe of an absent socket from
 * a connection the program needed. Not in the perf-tracepoint variant.
 */
static void check_connect_address(struct bpf_tracer *t)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct sockaddr_un got;
	struct seen s;
	pid_t pid;
	int fd;

	fixture_setup();
	if (strlen(fx.tmp) > 100)
		tests_skip("TMPDIR too long for a unix socket path");
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%.100s/sock", fx.tmp);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_OK(fd);
	ASSERT_EQ(0, bind(fd, (struct sockaddr *)&sun, sizeof(sun)));
	ASSERT_EQ(0, chmod(sun.sun_path, 0600));
	ASSERT_EQ(0, bpf_tracer_watch_cgroup(t, fx.cgroup_id));
	drain(t, &s);
	pid = run_child(connect_child, false);
	ASSERT_EQ(1, drain(t, &s));
	expect(&s.d[0], pid, SYS_connect, -EACCES);
	if (strncmp(bpf_tracer_source(t), "tracepoint", 10) == 0) {
		ASSERT_EQ(0, s.d[0].addr_len);
	} else {
		ASSERT_EQ(sizeof(sun), s.d[0].addr_len);
		memcpy(&got, s.d[0].addr, sizeof(got));
		ASSERT_EQ(AF_UNIX, got.sun_family);
		ASSERT_STREQ(sun.sun_path, got.sun_path);
	}
	close(fd);
	bpf_tracer_close(t);
	fixture_teardown();
}

TEST(refused_connect_carries_its_address)
{
	check_connect_address(open_or_skip());
}

TEST(refused_connect_address_through_raw_tracepoint)
{
	check_connect_address(open_hook_or_skip("raw_tracepoint"));
}

/* Each fallback on its own, where this kernel has it. */
TEST(exact_denials_through_tp_btf)
{
	check_exact_denials(open_hook_or_skip("tp_btf"));
}

TEST(exact_denials_through_raw_tracepoint)
{
	check_exact_denials(open_hook_or_skip("raw_tracepoint"));
}

/*
 * The perf tracepoint attaches through tracefs: where it is not mounted, this
 * process mounts it in a mount namespace of its own (the host is untouched).
 */
TEST(exact_denials_through_tracepoint)
{
	struct statfs sfs;

	if (geteuid() == 0 &&
	    (statfs("/sys/kernel/tracing", &sfs) < 0 || sfs.f_type != TRACEFS_MAGIC) &&
	    unshare(CLONE_NEWNS) == 0) {
		ASSERT_EQ(0, mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
		if (mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL) < 0)
			printf("# cannot mount tracefs: %s\n", strerror(errno));
	}
	check_exact_denials(open_hook_or_skip("tracepoint"));
}

/*
 * Landlock's hook either loads beside the exit hook (and is named in the
 * source), or is refused with a reason while bpf_tracer_open() still works.
 */
TEST(landlock_hook_is_optional)
{
	struct bpf_tracer *t = open_or_skip();
	bool with_ll = strstr(bpf_tracer_source(t), "+landlock") != NULL;
	char err[256] = "";
	struct bpf_tracer *t2;

	t2 = bpf_tracer_open_hook("tp_btf", true, err, sizeof(err));
	printf("# open: %s; tp_btf+landlock: %s\n", bpf_tracer_source(t), t2 ? "loads" : err);
	if (t2) {
		ASSERT_STREQ("tp_btf+landlock", bpf_tracer_source(t2));
		ASSERT_TRUE(with_ll || strncmp(bpf_tracer_source(t), "tp_btf", 6) != 0);
	} else {
		ASSERT_TRUE(strstr(err, "BPF refused: tp_btf") != NULL);
		ASSERT_TRUE(!with_ll || strncmp(bpf_tracer_source(t), "tp_btf", 6) != 0);
	}
	bpf_tracer_close(t2);
	bpf_tracer_close(t);
	ASSERT_TRUE(bpf_tracer_open_hook("kprobe", false, err, sizeof(err)) == NULL);
	ASSERT_STREQ("unknown sys_exit attachment 'kprobe'", err);
}

/* Drains with a counting callback; checks each call's bound. */
static size_t drain_count(struct bpf_tracer *t, size_t *ret_calls)
{
	size_t total = 0, calls = 0;
	int r;

	do {
		size_t n = 0;

		r = bpf_tracer_consume(t, count_only, &n);
		ASSERT_OK(r);
		ASSERT_EQ(r, n);
		ASSERT_TRUE(r <= BPF_TRACER_RING_RECORDS);
		calls++;
		total += n;
	} while (r > 0);
	*ret_calls = calls;
	return total;
}

/* One process tree failing 10^6 times: its budget of records, the rest counted. */
TEST(flood_of_one_cgroup_is_capped)
{
	struct bpf_tracer *t = open_or_skip();
	uint64_t offered, suppressed;
	size_t total, calls;
	struct seen s;

	fixture_setup();
	ASSERT_EQ(0, bpf_tracer_watch_cgroup(t, fx.cgroup_id));
	ASSERT_EQ(0, bpf_tracer_cgroup_counts(t, fx.cgroup_id, &offered, &suppressed));
	ASSERT_EQ(0, offered);
	ASSERT_EQ(0, suppressed);
	flood_calls = FLOOD_CALLS;
	run_child(run_flood, false);
	total = drain_count(t, &calls);
	ASSERT_EQ(0, bpf_tracer_cgroup_counts(t, fx.cgroup_id, &offered, &suppressed));
	printf("# %zu records, %ju offered, %ju suppressed, %ju dropped\n", total,
	       (uintmax_t)offered, (uintmax_t)suppressed, (uintmax_t)bpf_tracer_dropped(t));
	ASSERT_EQ(BPF_TRACER_MAX_PER_CGROUP, total);
	ASSERT_EQ(BPF_TRACER_MAX_PER_CGROUP, offered);
	ASSERT_EQ(FLOOD_CALLS - BPF_TRACER_MAX_PER_CGROUP, suppressed);
	ASSERT_EQ(0, bpf_tracer_dropped(t)); /* a quarter of the ring: no drop */
	ASSERT_EQ(0, bpf_tracer_unwatch_cgroup(t, fx.cgroup_id));
	ASSERT_EQ(-ENOENT, bpf_tracer_cgroup_counts(t, fx.cgroup_id, &offered, &suppressed));
	/* Watched again, the budget starts afresh. */
	ASSERT_EQ(0, bpf_tracer_watch_cgroup(t, fx.cgroup_id));
	run_child(denials_child, true);
	ASSERT_EQ(4, drain(t, &s));
	bpf_tracer_close(t);
	fixture_teardown();
}

/*
 * 10^6 failing calls spread over 8 cgroups while nobody reads: the ring fills,
 * the drop counter accounts for every record that did not fit, and memory
 * stays what the ring's mapping is.
 */
TEST(flood_over_the_ring_is_bounded_and_drops_are_counted)
{
	struct bpf_tracer *t = open_or_skip();
	char leaves[FLOODERS][4200];
	uint64_t ids[FLOODERS], offered, suppressed, sum_offered = 0, sum_suppressed = 0;
	uint64_t dropped;
	long rss_before, rss_after;
	size_t total, calls;
	struct seen s;

	fixture_setup();
	for (int i = 0; i < FLOODERS; i++) {
		snprintf(leaves[i], sizeof(leaves[i]), "%s-%d", fx.cgroup, i);
		ASSERT_EQ(0, mkdir(leaves[i], 0755));
		ASSERT_EQ(0, bpf_tracer_cgroup_id(AT_FDCWD, leaves[i], &ids[i]));
		ASSERT_EQ(0, bpf_tracer_watch_cgroup(t, ids[i]));
	}
	drain(t, &s);
	rss_before = rss_kib();
	flood_calls = FLOOD_CALLS / FLOODERS;
	for (int i = 0; i < FLOODERS; i++) {
		join_path = leaves[i];
		run_child(run_flood, false);
	}
	join_path = NULL;
	dropped = bpf_tracer_dropped(t);
	total = drain_count(t, &calls);
	rss_after = rss_kib();
	for (int i = 0; i < FLOODERS; i++) {
		ASSERT_EQ(0, bpf_tracer_cgroup_counts(t, ids[i], &offered, &suppressed));
		ASSERT_EQ(BPF_TRACER_MAX_PER_CGROUP, offered);
		sum_offered += offered;
		sum_suppressed += suppressed;
		ASSERT_EQ(0, bpf_tracer_unwatch_cgroup(t, ids[i]));
		ASSERT_EQ(0, rmdir(leaves[i]));
	}
	printf("# %zu records in %zu calls, %ju dropped, %ju suppressed, RSS %ld -> %ld KiB\n",
	       total, calls, (uintmax_t)dropped, (uintmax_t)sum_suppressed, rss_before, rss_after);

	ASSERT_EQ(BPF_TRACER_RING_RECORDS, total); /* the ring was full */
	ASSERT_TRUE(dropped > 0);
	/* Every offered record was either kept or dropped; every call is accounted for. */
	ASSERT_EQ(sum_offered, total + dropped);
	ASSERT_EQ(FLOOD_CALLS, sum_offered + sum_suppressed);
	/* The records sit in the ring's fixed mapping: no growth beyond it. */
	ASSERT_TRUE(rss_after - rss_before < 2048);

	/* With room again, records flow and the counter stays put. */
	ASSERT_EQ(0, bpf_tracer_watch_cgroup(t, fx.cgroup_id));
	run_child(denials_child, true);
	ASSERT_EQ(4, drain(t, &s));
	ASSERT_EQ(dropped, bpf_tracer_dropped(t));
	bpf_tracer_close(t);
	fixture_teardown();
}

/*
 * The ring buffer's fd on io_uring, as the server polls it: a one-shot
 * IORING_OP_POLL_ADD completes when records arrive, not before, and a poll
 * re-armed after draining waits again.
 */
TEST(ring_fd_completes_a_poll_add)
{
	struct bpf_tracer *t = open_or_skip();
	struct __kernel_timespec ts = { .tv_sec = 5 };
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	struct seen s;
	pid_t pid;

	fixture_setup();
	if (io_uring_queue_init(4, &ring, 0) < 0)
		tests_skip("io_uring unavailable (kernel, sysctl or seccomp)");
	ASSERT_EQ(0, bpf_tracer_watch_cgroup(t, fx.cgroup_id));
	for (int round = 0; round < 2; round++) {
		io_uring_prep_poll_add(io_uring_get_sqe(&ring), bpf_tracer_fd(t), POLLIN);
		ASSERT_EQ(1, io_uring_submit(&ring));
		ASSERT_EQ(-EAGAIN, io_uring_peek_cqe(&ring, &cqe)); /* nothing yet */
		pid = run_child(denials_child, true);
		ASSERT_EQ(0, io_uring_wait_cqe_timeout(&ring, &cqe, &ts));
		ASSERT_TRUE(cqe->res & POLLIN);
		io_uring_cqe_seen(&ring, cqe);
		ASSERT_EQ(4, drain(t, &s));
		expect(&s.d[0], pid, SYS_openat, -EROFS);
	}
	/* Armed on an empty ring, it stays pending. */
	io_uring_prep_poll_add(io_uring_get_sqe(&ring), bpf_tracer_fd(t), POLLIN);
	ASSERT_EQ(1, io_uring_submit(&ring));
	ts.tv_sec = 0;
	ts.tv_nsec = 100 * 1000 * 1000;
	ASSERT_EQ(-ETIME, io_uring_wait_cqe_timeout(&ring, &cqe, &ts));
	io_uring_queue_exit(&ring);
	bpf_tracer_close(t);
	fixture_teardown();
}

/* The kernel's BPF links to this program (needs root to enumerate). */
static int links_of_prog(uint32_t prog_id)
{
	int n = 0;
#if UEXEC_HAVE_BPF
	__u32 id = 0;

	while (bpf_link_get_next_id(id, &id) == 0) {
		struct bpf_link_info info;
		__u32 len = sizeof(info);
		int fd = bpf_link_get_fd_by_id(id);

		if (fd < 0)
			continue; /* gone meanwhile */
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && info.prog_id == prog_id)
			n++;
		close(fd);
	}
#endif
	return n;
}

/* Attached only while a cgroup is watched: no cost for the host otherwise. */
TEST(attached_only_while_watching)
{
	struct bpf_tracer *t = open_or_skip();
	uint32_t prog = bpf_tracer_prog_id(t);

	fixture_setup();
	ASSERT_NE(0, prog);
	ASSERT_EQ(0, links_of_prog(prog));
	ASSERT_EQ(0, bpf_tracer_watch_cgroup(t, fx.cgroup_id));
	ASSERT_EQ(1, links_of_prog(prog));
	ASSERT_EQ(0, bpf_tracer_watch_cgroup(t, 7));
	ASSERT_EQ(0, bpf_tracer_watch_cgroup(t, 7));
	ASSERT_EQ(1, links_of_prog(prog));
	ASSERT_EQ(0, bpf_tracer_unwatch_cgroup(t, fx.cgroup_id));
	ASSERT_EQ(1, links_of_prog(prog)); /* 7 is still watched */
	ASSERT_EQ(0, bpf_tracer_unwatch_cgroup(t, 7));
	ASSERT_EQ(0, links_of_prog(prog));
	ASSERT_EQ(-ENOENT, bpf_tracer_unwatch_cgroup(t, 7));
	ASSERT_EQ(0, links_of_prog(prog));
	/* Attached again, it reports again. */
	ASSERT_EQ(0, bpf_tracer_watch_cgroup(t, fx.cgroup_id));
	ASSERT_EQ(1, links_of_prog(prog));
	run_child(denials_child, true);
	{
		struct seen s;

		ASSERT_EQ(4, drain(t, &s));
	}
	bpf_tracer_close(t);
	ASSERT_EQ(0, links_of_prog(prog));
	fixture_teardown();
}

/* This process's mappings of the ring (a BPF map of more than 1 MiB: its data twice). */
static int ring_mappings(void)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (strstr(line, "anon_inode:bpf-map") && sscanf(line, "%lx-%lx", &lo, &hi) == 2 &&
		    hi - lo > (1ul << 20))
			n++;
	}
	fclose(f);
	return n;
}

/*
 * The ring is mapped only while attached (idle, it is 1 MB of the server's
 * resident set); a detach that leaves records keeps it until they are read.
 */
TEST(ring_mapped_only_while_attached)
{
	struct bpf_tracer *t = open_or_skip();
	struct seen s;

	fixture_setup();
	ASSERT_EQ(0, ring_mappings());
	ASSERT_EQ(0, bpf_tracer_watch_cgroup(t, fx.cgroup_id));
	ASSERT_EQ(1, ring_mappings());
	run_child(denials_child, true);
	ASSERT_EQ(0, bpf_tracer_unwatch_cgroup(t, fx.cgroup_id)); /* detaches: not lingering */
	ASSERT_EQ(1, ring_mappings());                           /* the records are still there */
	ASSERT_EQ(4, drain(t, &s));
	ASSERT_EQ(0, ring_mappings()); /* read, detached: unmapped */
	ASSERT_EQ(0, bpf_tracer_watch_cgroup(t, fx.cgroup_id));
	ASSERT_EQ(0, bpf_tracer_unwatch_cgroup(t, fx.cgroup_id));
	ASSERT_EQ(0, ring_mappings());
	ASSERT_EQ(0, drain(t, &s)); /* unmapped: nothing to read, no crash */
	/* Lingering: still mapped after the last unwatch, unmapped with the detach. */
	bpf_tracer_set_linger(t, true);
	ASSERT_EQ(0, bpf_tracer_watch_cgroup(t, fx.cgroup_id));
	ASSERT_EQ(0, bpf_tracer_unwatch_cgroup(t, fx.cgroup_id));
	ASSERT_EQ(1, ring_mappings());
	ASSERT_TRUE(bpf_tracer_detach_if_idle(t));
	ASSERT_EQ(0, ring_mappings());
	bpf_tracer_close(t);
	fixture_teardown();
}

/* Cgroup ids need no BPF: a leaf's differs from its parent's; other dirs have none. */
TEST(cgroup_ids)
{
	uint64_t parent_id;
	char parent[4096];

	fixture_setup();
	snprintf(parent, sizeof(parent), "%s", fx.cgroup);
	*strrchr(parent, '/') = '\0';
	ASSERT_EQ(0, bpf_tracer_cgroup_id(AT_FDCWD, parent, &parent_id));
	ASSERT_NE(parent_id, fx.cgroup_id);
	ASSERT_EQ(-EOPNOTSUPP, bpf_tracer_cgroup_id(AT_FDCWD, fx.tmp, &parent_id));
	ASSERT_EQ(-ENOENT, bpf_tracer_cgroup_id(AT_FDCWD, "/nonexistent-uexec-cgroup", &parent_id));
	fixture_teardown();
}

TEST(watch_limits)
{
	struct bpf_tracer *t = open_or_skip();

	fixture_setup();
	/* The map has a fixed size: the cgroup after the last slot is refused. */
	for (uint64_t id = 1; id <= BPF_TRACER_MAX_CGROUPS; id++)
		ASSERT_EQ(0, bpf_tracer_watch_cgroup(t, id << 40));
	ASSERT_EQ(-ENOSPC, bpf_tracer_watch_cgroup(t, fx.cgroup_id));
	ASSERT_EQ(0, bpf_tracer_unwatch_cgroup(t, 1ull << 40));
	ASSERT_EQ(0, bpf_tracer_watch_cgroup(t, fx.cgroup_id));
	bpf_tracer_close(t);
	fixture_teardown();
}

/* Without privileges (or without BPF in the build) open fails with a reason. */
TEST(open_fails_cleanly_without_privileges)
{
	char err[256] = "";
	int pfd[2], st;
	ssize_t n;
	pid_t pid;

	ASSERT_EQ(0, pipe2(pfd, O_CLOEXEC));
	pid = fork();
	ASSERT_OK(pid);
	if (pid == 0) {
		struct bpf_tracer *t;

		/* Root loses every capability on the switch to another uid. */
		if (geteuid() == 0)
			drop_to_nobody();
		t = bpf_tracer_open(err, sizeof(err));
		if (t)
			_exit(1);
		if (write(pfd[1], err, strlen(err)) < 0)
			_exit(2);
		_exit(0);
	}
	close(pfd[1]);
	n = read(pfd[0], err, sizeof(err) - 1);
	close(pfd[0]);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_TRUE(WIFEXITED(st));
	ASSERT_EQ(0, WEXITSTATUS(st));
	ASSERT_TRUE(n > 0);
	err[n] = '\0';
	printf("# reason: %s\n", err);
	if (UEXEC_HAVE_BPF)
		ASSERT_TRUE(strstr(err, "not privileged") != NULL);
	else
		ASSERT_TRUE(strstr(err, "built without BPF") != NULL);
}

TEST_MAIN()
