/* SPDX-License-Identifier: MIT */
/* sandbox/evidence.c: audit record parsing, event assembly, attribution, bounds, the decision. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "evidence.h"
#include "filter.h"
#include "macro.h"
#include "tests.h"

/* A child that sleeps until killed; new_session: it writes its loginuid first (root). */
static pid_t sleeper(bool new_session, int *ret_ok)
{
	int p[2];
	char ok = 0;
	pid_t pid;

	if (pipe(p) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		char c = 1;

		if (new_session) {
			int fd = open("/proc/self/loginuid", O_WRONLY);

			c = fd >= 0 && write(fd, "0", 1) == 1;
		}
		(void)!write(p[1], &c, 1);
		pause();
		_exit(0);
	}
	(void)!read(p[0], &ok, 1);
	close(p[0]);
	close(p[1]);
	*ret_ok = ok;
	return pid;
}

static void stop(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void feed(struct sandbox_evidence *ev, unsigned type, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void feed(struct sandbox_evidence *ev, unsigned type, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	sandbox_evidence_feed_audit(ev, type, buf, (size_t)n);
}

/* A sleeping child tracked by evidence of the given sources (tests that need a process). */
struct tracked {
	struct sandbox_evidence *ev;
	struct sandbox_ev_tree *t;
	pid_t pid;
};

/* audit_session: the child gets an audit session of its own (root; else the test skips). */
static void track_sleeper(struct tracked *k, unsigned sources, bool audit_session)
{
	int ok = 0;

	k->pid = sleeper(audit_session, &ok);
	if (audit_session && !ok) {
		stop(k->pid);
		tests_skip("cannot start an audit session (not root, or no audit in the kernel)");
	}
	ASSERT_EQ(0, sandbox_evidence_new(sources, &k->ev));
	k->t = sandbox_evidence_track(k->ev, k->pid);
	ASSERT_TRUE(k->t != NULL);
}

static void untrack_sleeper(struct tracked *k)
{
	sandbox_evidence_untrack(k->ev, k->t);
	sandbox_evidence_free(k->ev);
	stop(k->pid);
}

static bool decide(struct sandbox_evidence *ev, struct sandbox_ev_tree *t, int code, const char *out)
{
	const char *texts[1] = { out };
	size_t lens[1] = { strlen(out) };

	return sandbox_evidence_decide(ev, t, code, texts, lens, 1, NULL);
}

TEST(landlock_event_by_pid)
{
	struct tracked k;
	const struct sandbox_denial *d;
	size_t n;
	uint64_t total;

	track_sleeper(&k, SANDBOX_EVIDENCE_AUDIT, false);
	/* the path hex-encoded (a space in it), as audit writes untrusted strings */
	feed(k.ev, 1423, "audit(1.2:40): domain=1a2b blockers=fs.make_reg path=2F746D702F6120620A dev=\"vda\" ino=5");
	feed(k.ev, 1424, "audit(1.2:40): domain=1a2b status=allocated mode=enforcing pid=%d uid=0", k.pid);
	d = sandbox_evidence_denials(k.t, &n, &total);
	ASSERT_EQ(0, n); /* waits for its SYSCALL record */
	feed(k.ev, 1300, "audit(1.2:40): arch=c000003e syscall=257 success=no exit=-13 ppid=1 pid=%d "
		       "auid=0 ses=4294967295 comm=\"touch\" exe=\"/usr/bin/touch\"", k.pid);
	d = sandbox_evidence_denials(k.t, &n, &total);
	ASSERT_EQ(1, n);
	ASSERT_EQ(SANDBOX_DENIAL_FS, d[0].kind);
	ASSERT_STREQ("/tmp/a b\n", d[0].object);
	ASSERT_STREQ("fs.make_reg", d[0].access);
	ASSERT_EQ(257, d[0].syscall);
	ASSERT_EQ(EACCES, d[0].err);
	ASSERT_EQ(k.pid, d[0].pid);
	ASSERT_STREQ("touch", d[0].comm);
	/* another record of the same domain, from a process already gone: the domain attributes */
	feed(k.ev, 1423, "audit(1.3:41): domain=1a2b blockers=net.connect_tcp daddr=10.0.0.1 dest=80");
	feed(k.ev, 1320, "audit(1.3:41): ");
	d = sandbox_evidence_denials(k.t, &n, &total);
	ASSERT_EQ(2, n);
	ASSERT_EQ(SANDBOX_DENIAL_NET, d[1].kind);
	ASSERT_STREQ("10.0.0.1:80", d[1].object);
	/* without an audit session of its own the evidence is not complete: heuristic */
	ASSERT_TRUE(!sandbox_evidence_complete(k.t));
	ASSERT_TRUE(decide(k.ev, k.t, 1, ""));
	ASSERT_TRUE(!decide(k.ev, k.t, 0, "permission denied"));
	untrack_sleeper(&k);
}

TEST(unknown_and_fallbacks_dropped)
{
	struct tracked k;
	size_t n;
	uint64_t total;

	track_sleeper(&k, SANDBOX_EVIDENCE_AUDIT, false);
	/* k.pid 1's record: not ours */
	feed(k.ev, 1326, "audit(1.0:7): auid=0 uid=0 ses=4294967295 pid=1 comm=\"x\" sig=0 syscall=41 code=0x50000");
	/* clone3's ENOSYS rule makes libc fall back: not a denial */
	feed(k.ev, 1326, "audit(1.0:8): auid=0 uid=0 ses=4294967295 pid=%d comm=\"x\" sig=0 syscall=435 code=0x50000", k.pid);
	/* garbage */
	feed(k.ev, 1326, "nonsense");
	feed(k.ev, 1423, "audit(");
	/* a header cut short right after the serial: nothing is read past the record */
	{
		static const char cut[] = "audit(1.2:12345";
		char *exact = malloc(sizeof(cut) - 1);

		ASSERT_TRUE(exact != NULL);
		memcpy(exact, cut, sizeof(cut) - 1);
		sandbox_evidence_feed_audit(k.ev, 1423, exact, sizeof(cut) - 1);
		free(exact);
	}
	sandbox_evidence_flush(k.ev);
	sandbox_evidence_denials(k.t, &n, &total);
	ASSERT_EQ(0, n);
	ASSERT_EQ(0, total);
	untrack_sleeper(&k);
}

TEST(bounded_and_decisive)
{
	struct tracked k;
	const struct sandbox_denial *d;
	size_t n;
	uint64_t total;

	track_sleeper(&k, SANDBOX_EVIDENCE_AUDIT, true);
	ASSERT_TRUE(sandbox_evidence_complete(k.t));
	/* libc's nscd connect: kept, not decisive; audit alone then trusts only the EROFS text */
	feed(k.ev, 1326, "audit(1.0:9): auid=0 uid=0 ses=4294967295 pid=%d comm=\"bash\" syscall=42 code=0x50000", k.pid);
	d = sandbox_evidence_denials(k.t, &n, &total);
	ASSERT_EQ(1, n);
	ASSERT_TRUE(!d[0].decisive);
	ASSERT_TRUE(!decide(k.ev, k.t, 1, "x: Permission denied"));
	ASSERT_TRUE(decide(k.ev, k.t, 1, "touch: cannot touch '/etc/x': Read-only file system"));
	/* an unknown k.pid with a malformed session: dropped */
	feed(k.ev, 1326, "audit(1.0:10): auid=0 uid=0 ses=x pid=99999999 comm=\"p\" syscall=41 code=0x50000");
	sandbox_evidence_denials(k.t, &n, &total);
	ASSERT_EQ(1, total);
	/* a flood from a grandchild known only by its session: 16 kept, all counted */
	{
		char path[64], buf[32];
		int fd;
		ssize_t r;

		snprintf(path, sizeof(path), "/proc/%d/sessionid", k.pid);
		fd = open(path, O_RDONLY);
		r = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[r > 0 ? r : 0] = 0;
		for (int i = 0; i < 1000; i++)
			feed(k.ev, 1326, "audit(1.0:%d): auid=0 uid=0 ses=%s pid=99999999 comm=\"p\" syscall=%d code=0x50000",
			     2000 + i, buf, i);
	}
	d = sandbox_evidence_denials(k.t, &n, &total);
	ASSERT_EQ(SANDBOX_EVIDENCE_KEEP, n);
	ASSERT_EQ(1 + 1000 - 3, total); /* clone3, openat2, fchmodat2: libc fallbacks */
	ASSERT_TRUE(decide(k.ev, k.t, 1, ""));
	ASSERT_TRUE(!decide(k.ev, k.t, 0, ""));
	/* records lost: incomplete, and without decisive evidence the heuristic decides */
	sandbox_evidence_mark_lost(k.ev);
	ASSERT_TRUE(!sandbox_evidence_complete(k.t));
	untrack_sleeper(&k);
}

/*
 * Records read before their tree was tracked (the spawner thread runs a command
 * while the loop reads): kept, and claimed by the tree they name once it is
 * tracked whole; records of other processes are not.
 */
TEST(records_before_tracking_are_claimed)
{
	struct sandbox_evidence *ev;
	struct sandbox_ev_tree *t;
	const struct sandbox_denial *d;
	pid_t pid;
	int ok = 0;
	size_t n;
	uint64_t total;

	pid = sleeper(false, &ok);
	ASSERT_EQ(0, sandbox_evidence_new(SANDBOX_EVIDENCE_AUDIT | SANDBOX_EVIDENCE_BPF, &ev));
	/* its seccomp record, another process's, and the tracer's EROFS from its cgroup */
	feed(ev, 1326, "audit(1.0:7): auid=0 uid=0 ses=4294967295 pid=%d comm=\"chmod\" sig=0 "
		       "syscall=90 code=0x50000", pid);
	feed(ev, 1326, "audit(1.0:8): auid=0 uid=0 ses=4294967295 pid=99999998 comm=\"x\" sig=0 "
		       "syscall=90 code=0x50000");
	ASSERT_TRUE(!sandbox_evidence_feed_bpf(ev, 99999997, 4343, 257, -EROFS, "touch", NULL, 0,
					       NULL, 0));
	sandbox_evidence_flush(ev);
	t = sandbox_evidence_track(ev, pid);
	ASSERT_TRUE(t != NULL);
	d = sandbox_evidence_denials(t, &n, &total);
	ASSERT_EQ(0, n); /* not before the claim */
	sandbox_evidence_set_cgroup(t, 4343);
	sandbox_evidence_claim(ev, t);
	d = sandbox_evidence_denials(t, &n, &total);
	ASSERT_EQ(2, n);
	ASSERT_EQ(2, total);
	ASSERT_EQ(SANDBOX_DENIAL_SECCOMP, d[0].kind);
	ASSERT_EQ(90, d[0].syscall);
	ASSERT_EQ(pid, d[0].pid);
	ASSERT_EQ(SANDBOX_DENIAL_MOUNT, d[1].kind);
	ASSERT_TRUE(d[0].decisive && d[1].decisive);
	/* claimed once: a second claim adds nothing */
	sandbox_evidence_claim(ev, t);
	sandbox_evidence_denials(t, &n, &total);
	ASSERT_EQ(2, total);
	sandbox_evidence_untrack(ev, t);
	sandbox_evidence_free(ev);
	stop(pid);
}

TEST(bpf_records_by_cgroup)
{
	struct tracked k;
	const struct sandbox_denial *d;
	size_t n;
	uint64_t total;

	track_sleeper(&k, SANDBOX_EVIDENCE_AUDIT | SANDBOX_EVIDENCE_BPF, true);
	sandbox_evidence_set_cgroup(k.t, 4242);
	/* another cgroup, a k.pid that is not ours: dropped */
	ASSERT_TRUE(!sandbox_evidence_feed_bpf(k.ev, 99999999, 17, 2, -EROFS, "touch", NULL, 0, NULL, 0));
	/* with both sources complete and nothing recorded: false, whatever the output says */
	ASSERT_TRUE(!decide(k.ev, k.t, 1, "Read-only file system"));
	/* permission bits and capabilities fail with EACCES/EPERM too: kept, not decisive */
	ASSERT_TRUE(sandbox_evidence_feed_bpf(k.ev, 99999999, 4242, 2, -EACCES, "cat", NULL, 0, NULL, 0));
	ASSERT_TRUE(!decide(k.ev, k.t, 1, ""));
	/* a read-only mount's EROFS, from a process known only by its cgroup */
	ASSERT_TRUE(sandbox_evidence_feed_bpf(k.ev, 99999999, 4242, 257, -EROFS, "touch", NULL, 0, NULL, 0));
	d = sandbox_evidence_denials(k.t, &n, &total);
	ASSERT_EQ(2, n);
	ASSERT_EQ(SANDBOX_DENIAL_SYSCALL, d[0].kind);
	ASSERT_EQ(SANDBOX_DENIAL_MOUNT, d[1].kind);
	ASSERT_EQ(EROFS, d[1].err);
	ASSERT_STREQ("erofs", d[1].access);
	ASSERT_TRUE(d[1].decisive && !d[0].decisive);
	ASSERT_TRUE(decide(k.ev, k.t, 1, ""));
	untrack_sleeper(&k);
}

/* A refused connect()'s address: a tree of its own per case (cgroup 100 + i), the tracer alone. */
static bool connect_case(struct sandbox_evidence *ev, uint64_t cg, const void *addr, size_t len,
			 const char *out, const char **ret_object)
{
	struct sandbox_ev_tree *t = sandbox_evidence_track(ev, getpid());
	const struct sandbox_denial *d;
	size_t n;
	uint64_t total;
	bool r;

	sandbox_evidence_set_cgroup(t, cg);
	ASSERT_TRUE(sandbox_evidence_feed_bpf(ev, 99999999, cg, SYS_connect, -EPERM, "prog", addr, len, NULL, 0));
	d = sandbox_evidence_denials(t, &n, &total);
	ASSERT_EQ(1, n);
	ASSERT_STREQ("connect.eperm", d[0].access);
	*ret_object = strdup(d[0].object);
	r = decide(ev, t, 1, out);
	sandbox_evidence_untrack(ev, t);
	return r;
}

TEST(bpf_alone_connect_and_seccomp)
{
	struct sandbox_evidence *ev;
	struct sandbox_ev_tree *t;
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char dir[] = "/tmp/uexec-ev-XXXXXX";
	const char *obj;
	int fd;

	ASSERT_EQ(0, sandbox_evidence_new(SANDBOX_EVIDENCE_BPF, &ev));
	/* nothing refused at all: false, whatever the output says */
	t = sandbox_evidence_track(ev, getpid());
	sandbox_evidence_set_cgroup(t, 99);
	ASSERT_TRUE(!decide(ev, t, 1, "permission denied"));
	/* EPERM from a call only the sandbox refuses: evidence, kind seccomp */
	ASSERT_TRUE(sandbox_evidence_feed_bpf(ev, 1, 99, SYS_keyctl, -EPERM, "py", NULL, 0, NULL, 0));
	ASSERT_TRUE(decide(ev, t, 1, ""));
	sandbox_evidence_untrack(ev, t);
	/* EACCES of an open: permission bits or Landlock, cannot tell: the heuristic */
	t = sandbox_evidence_track(ev, getpid());
	sandbox_evidence_set_cgroup(t, 98);
	ASSERT_TRUE(sandbox_evidence_feed_bpf(ev, 1, 98, SYS_openat, -EACCES, "cat", NULL, 0, NULL, 0));
	ASSERT_TRUE(!decide(ev, t, 1, "exit"));
	ASSERT_TRUE(decide(ev, t, 1, "cat: m: Permission denied"));
	sandbox_evidence_untrack(ev, t);

	/* a probe of an absent unix socket (libc's nscd one) would have failed anyway */
	snprintf(sun.sun_path, sizeof(sun.sun_path), "/nonexistent-uexec/nscd/socket");
	ASSERT_TRUE(!connect_case(ev, 101, &sun, sizeof(sun), "permission denied", &obj));
	ASSERT_STREQ("/nonexistent-uexec/nscd/socket", obj);
	free((void *)obj);
	/* a socket that is there: the sandbox kept the program from it */
	ASSERT_TRUE(mkdtemp(dir) != NULL);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/s", dir);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_EQ(0, bind(fd, (struct sockaddr *)&sun, sizeof(sun)));
	ASSERT_TRUE(connect_case(ev, 102, &sun, sizeof(sun), "", &obj));
	free((void *)obj);
	close(fd);
	unlink(sun.sun_path);
	rmdir(dir);
	/* an abstract name: evidence, shown with '@' (odd bytes as '?') */
	memset(sun.sun_path, 0, sizeof(sun.sun_path));
	memcpy(sun.sun_path + 1, "uexec\x01x", 7);
	ASSERT_TRUE(connect_case(ev, 103, &sun, offsetof(struct sockaddr_un, sun_path) + 8, "", &obj));
	ASSERT_STREQ("@uexec?x", obj);
	free((void *)obj);
	/* a relative path cannot be looked up: incomplete, so the heuristic */
	snprintf(sun.sun_path, sizeof(sun.sun_path), "rel.sock");
	ASSERT_TRUE(!connect_case(ev, 104, &sun, sizeof(sun), "", &obj));
	free((void *)obj);
	ASSERT_TRUE(connect_case(ev, 105, &sun, sizeof(sun), "Operation not permitted", &obj));
	free((void *)obj);
	/* an unnamed address (family only): nothing it could reach */
	ASSERT_TRUE(!connect_case(ev, 106, &sun, sizeof(sa_family_t), "permission denied", &obj));
	free((void *)obj);
	sandbox_evidence_free(ev);
}

TEST(bpf_eperm_judged_by_the_trees_filter)
{
	static const uint64_t setgid[6] = { (uint64_t)AT_FDCWD, 0x1000, 02755 };
	static const uint64_t plain[6] = { (uint64_t)AT_FDCWD, 0x1000, 0755 };
	static const struct {
		const uint64_t *args;
		unsigned n_args; /* 0: the perf tracepoint, which has none */
		bool filter;     /* the tree's seccomp program is known */
		bool denied;
	} cases[] = {
		/* a set-id chmod's EPERM: the tree's filter refuses exactly that call */
		{ setgid, 5, true, true },
		/* a plain chmod's EPERM (not the owner): the filter allows it, so not evidence */
		{ plain, 5, true, false },
		/* without the arguments or without the filter: cannot tell */
		{ setgid, 0, true, false },
		{ setgid, 5, false, false },
	};
	struct sandbox_evidence *ev;
	struct sandbox_seccomp f;

	ASSERT_EQ(0, sandbox_seccomp_build(&f));
	ASSERT_EQ(0, sandbox_evidence_new(SANDBOX_EVIDENCE_BPF, &ev));
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct sandbox_ev_tree *t = sandbox_evidence_track(ev, getpid());
		uint64_t cg = 77 + i;

		sandbox_evidence_set_cgroup(t, cg);
		if (cases[i].filter)
			sandbox_evidence_set_filter(t, &f.restricted);
		ASSERT_TRUE(sandbox_evidence_feed_bpf(ev, 1, cg, SYS_fchmodat, -EPERM, "chmod", NULL,
						      0, cases[i].args, cases[i].n_args));
		ASSERT_EQ(cases[i].denied, decide(ev, t, 1, cases[i].denied ? "" : "exit"));
		sandbox_evidence_untrack(ev, t);
	}
	sandbox_evidence_free(ev);
	sandbox_seccomp_done(&f);
}

TEST(no_source_is_the_heuristic)
{
	ASSERT_TRUE(decide(NULL, NULL, 1, "permission denied"));
	ASSERT_TRUE(!decide(NULL, NULL, 1, "nothing"));
}

TEST(barrier_and_status)
{
	uint32_t seq = 0;
	const char rec[] = "audit(1.0:5): pid=1234 uid=0 msg='uexec-evidence-barrier=1234:77 exe=\"/x\"'";
	/* sent by another process (pid 7), naming our pid and a sequence: forged */
	const char forged[] = "audit(1.0:6): pid=7 uid=0 msg='x pid=1234 uexec-evidence-barrier=1234:78'";
	uint32_t raw[11] = { 0, 1, 0, 0, 0, 64, 3, 0 };
	struct sandbox_audit_status st;

	ASSERT_TRUE(sandbox_audit_is_barrier(1121, rec, sizeof(rec) - 1, 1234, &seq));
	ASSERT_EQ(77, seq);
	ASSERT_TRUE(!sandbox_audit_is_barrier(1121, rec, sizeof(rec) - 1, 1235, &seq));
	ASSERT_TRUE(!sandbox_audit_is_barrier(1326, rec, sizeof(rec) - 1, 1234, &seq));
	ASSERT_TRUE(!sandbox_audit_is_barrier(1121, forged, sizeof(forged) - 1, 1234, &seq));
	ASSERT_EQ(77, seq);
	ASSERT_EQ(0, sandbox_audit_parse_status(raw, sizeof(raw), &st));
	ASSERT_TRUE(st.enabled);
	ASSERT_EQ(3, st.lost);
	ASSERT_EQ(64, st.backlog_limit);
	ASSERT_EQ(-EINVAL, sandbox_audit_parse_status(raw, 8, &st));
}

TEST_MAIN()
