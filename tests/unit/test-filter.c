/* SPDX-License-Identifier: MIT */
/*
 * sandbox/filter.c: the seccomp programs' verdicts computed in user space
 * (sandbox_seccomp_verdict/_refuses) against the kernel's own: each call
 * runs in a child under the very program, and whether it failed with EPERM
 * must be what the interpreter says. The calls are harmless when allowed
 * (a scratch file's mode, the child's own limits and priority).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "filter.h"
#include "tests.h"

struct call {
	const char *name;
	long nr;
	uint64_t args[6];
};

/* Set in the upper half of a 32-bit argument: the kernel never sees these bits. */
#define UP (0xffffffffULL << 32)

static char scratch[64];
static struct rlimit nofile;

/* The calls; %self: replaced by the child's pid (filled in the child). */
static size_t calls(struct call *c, pid_t self)
{
	size_t n = 0;

#define CALL(nm, num, ...) c[n++] = (struct call){ nm, num, { __VA_ARGS__ } }
	CALL("fchmodat 0644", SYS_fchmodat, (uint64_t)AT_FDCWD, (uintptr_t)scratch, 0644);
	CALL("fchmodat 04755", SYS_fchmodat, (uint64_t)AT_FDCWD, (uintptr_t)scratch, 04755);
	CALL("fchmodat 02755", SYS_fchmodat, (uint64_t)AT_FDCWD, (uintptr_t)scratch, 02755);
	CALL("chmod 0600", SYS_chmod, (uintptr_t)scratch, 0600);
	CALL("chmod 06700", SYS_chmod, (uintptr_t)scratch, 06700);
	CALL("openat O_CREAT 0600", SYS_openat, (uint64_t)AT_FDCWD, (uintptr_t)scratch,
	     O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	CALL("openat O_CREAT 04700", SYS_openat, (uint64_t)AT_FDCWD, (uintptr_t)scratch,
	     O_CREAT | O_WRONLY | O_CLOEXEC, 04700);
	CALL("openat read 04700", SYS_openat, (uint64_t)AT_FDCWD, (uintptr_t)scratch,
	     O_RDONLY | O_CLOEXEC, 04700);
	/* the kernel reads modes as umode_t and flags as int: upper bits change nothing */
	CALL("chmod 04755|up", SYS_chmod, (uintptr_t)scratch, UP | 04755);
	CALL("fchmod 02755|up", SYS_fchmod, (uint64_t)-1, UP | 02755);
	CALL("creat 04700", SYS_creat, (uintptr_t)scratch, 04700);
	CALL("mknodat 02755", SYS_mknodat, (uint64_t)AT_FDCWD, (uintptr_t)scratch, S_IFREG | 02755,
	     0);
	CALL("openat O_TMPFILE|up 04700", SYS_openat, (uint64_t)AT_FDCWD, (uintptr_t)"/tmp",
	     UP | O_TMPFILE | O_RDWR | O_CLOEXEC, UP | 04700);
	CALL("socket AF_UNIX", SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CALL("socket AF_INET", SYS_socket, AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CALL("socket AF_VSOCK|1<<32", SYS_socket, (1ULL << 32) | 40, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CALL("prlimit64 self by 0", SYS_prlimit64, 0, RLIMIT_NOFILE, (uintptr_t)&nofile, 0);
	CALL("prlimit64 self by pid", SYS_prlimit64, (uint64_t)self, RLIMIT_NOFILE,
	     (uintptr_t)&nofile, 0);
	CALL("prlimit64 read by pid", SYS_prlimit64, (uint64_t)self, RLIMIT_NOFILE, 0,
	     (uintptr_t)&nofile);
	CALL("setpriority 0", SYS_setpriority, PRIO_PROCESS, 0, 0);
	CALL("setpriority pid", SYS_setpriority, PRIO_PROCESS, (uint64_t)self, 0);
	CALL("unshare", SYS_unshare, 0);
	CALL("io_uring_setup", SYS_io_uring_setup, 0, 0);
	CALL("getpid", SYS_getpid, 0);
#undef CALL
	return n;
}

/* In a child under prog (NULL: none): 1 if call i failed with EPERM, 0 if not, -1 on trouble. */
static int kernel_eperm(const struct sock_fprog *prog, size_t i)
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		struct call c[32];
		long r;

		calls(c, getpid());
		if (prog && (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
			     sandbox_seccomp_apply(prog, false) < 0))
			_exit(3);
		r = syscall(c[i].nr, c[i].args[0], c[i].args[1], c[i].args[2], c[i].args[3],
			    c[i].args[4], c[i].args[5]);
		if (r >= 0 && c[i].nr == SYS_socket)
			close((int)r);
		_exit(r < 0 && errno == EPERM ? 1 : 0);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) > 1)
		return -1;
	return WEXITSTATUS(st);
}

static void check(const struct sock_fprog *prog, const char *which, const char *const *refused)
{
	struct call c[32];
	size_t n = calls(c, getpid());

	for (size_t i = 0; i < n; i++) {
		bool want = false, got;
		uint32_t action;
		int kernel, bare;

		for (const char *const *r = refused; *r; r++)
			want |= strcmp(*r, c[i].name) == 0;
		/*
		 * The child's own pid stands in some arguments (the interpreter
		 * gets this process's: non-zero as well). A call that fails with
		 * EPERM without any filter (io_uring disabled by sysctl, say) says
		 * nothing about the filter: only the interpreter is checked then.
		 */
		bare = kernel_eperm(NULL, i);
		kernel = kernel_eperm(prog, i);
		ASSERT_TRUE(bare >= 0 && kernel >= 0);
		ASSERT_EQ(0, sandbox_seccomp_verdict(prog, c[i].nr, c[i].args, 6, &action));
		got = sandbox_seccomp_refuses(prog, c[i].nr, c[i].args, 5, EPERM);
		if ((!bare && kernel != (int)want) || got != want)
			fprintf(stderr, "# %s: %s: kernel %d (bare %d), interpreter %d, expected %d\n",
				which, c[i].name, kernel, bare, got, want);
		if (!bare)
			ASSERT_EQ((int)want, kernel);
		ASSERT_EQ(want, got);
	}
}

static void setup(struct sandbox_seccomp *s)
{
	int fd;

	snprintf(scratch, sizeof(scratch), "/tmp/uexec-test-filter-%d", (int)getpid());
	fd = open(scratch, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	ASSERT_TRUE(fd >= 0);
	close(fd);
	ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &nofile));
	ASSERT_EQ(0, sandbox_seccomp_build(s));
}

/* which: the program of struct sandbox_seccomp to check; refused: the calls it refuses. */
static void matches(const char *which, const char *const *refused)
{
	struct sandbox_seccomp s;

	setup(&s);
	check(strcmp(which, "restricted") == 0 ? &s.restricted
	      : strcmp(which, "open_net") == 0 ? &s.open_net : &s.fs_helper,
	      which, refused);
	sandbox_seccomp_done(&s);
	unlink(scratch);
}

/* Every program refuses a set-id mode by every call that sets one (|up: upper bits set too). */
#define SETID_CALLS \
	"fchmodat 04755", "fchmodat 02755", "chmod 06700", "openat O_CREAT 04700", \
	"chmod 04755|up", "fchmod 02755|up", "creat 04700", "mknodat 02755", \
	"openat O_TMPFILE|up 04700"

TEST(restricted_matches_the_kernel)
{
	static const char *const refused[] = {
		SETID_CALLS,
		"socket AF_INET", "socket AF_VSOCK|1<<32", "prlimit64 self by pid", "setpriority pid",
		"unshare", "io_uring_setup", NULL,
	};

	matches("restricted", refused);
}

TEST(open_net_matches_the_kernel)
{
	/* the network on: AF_INET allowed, VSOCK still not */
	static const char *const refused[] = {
		SETID_CALLS,
		"socket AF_VSOCK|1<<32", "prlimit64 self by pid", "setpriority pid", "unshare",
		"io_uring_setup", NULL,
	};

	matches("open_net", refused);
}

TEST(fs_helper_matches_the_kernel)
{
	/* uexec's own helper: io_uring allowed for its loop */
	static const char *const refused[] = {
		SETID_CALLS,
		"socket AF_INET", "socket AF_VSOCK|1<<32", "prlimit64 self by pid", "setpriority pid",
		"unshare", NULL,
	};

	matches("fs_helper", refused);
}

TEST(unrunnable_programs_tell_nothing)
{
	struct sock_filter bad_load[] = { BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 4096),
					  BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM) };
	struct sock_filter off_end[] = { BPF_JUMP(BPF_JMP | BPF_JA, 5, 0, 0),
					 BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
	struct sock_filter no_ret[] = { BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0) };
	struct sock_filter other_errno[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS) };
	struct sock_fprog p;
	uint64_t args[6] = { 0 };
	uint32_t action;

	p = (struct sock_fprog){ 2, bad_load };
	ASSERT_EQ(-EINVAL, sandbox_seccomp_verdict(&p, SYS_getpid, args, 6, &action));
	ASSERT_TRUE(!sandbox_seccomp_refuses(&p, SYS_getpid, args, 6, EPERM));
	p = (struct sock_fprog){ 2, off_end };
	ASSERT_EQ(-EINVAL, sandbox_seccomp_verdict(&p, SYS_getpid, args, 6, &action));
	p = (struct sock_fprog){ 1, no_ret };
	ASSERT_EQ(-EINVAL, sandbox_seccomp_verdict(&p, SYS_getpid, args, 6, &action));
	p = (struct sock_fprog){ 1, other_errno };
	ASSERT_EQ(0, sandbox_seccomp_verdict(&p, SYS_getpid, args, 6, &action));
	ASSERT_TRUE(!sandbox_seccomp_refuses(&p, SYS_getpid, args, 6, EPERM));
	ASSERT_TRUE(sandbox_seccomp_refuses(&p, SYS_getpid, args, 6, ENOSYS));
	ASSERT_EQ(-EINVAL, sandbox_seccomp_verdict(NULL, SYS_getpid, args, 6, &action));
}

TEST(unknown_arguments_tell_nothing)
{
	struct sandbox_seccomp s;
	uint64_t args[6] = { (uint64_t)AT_FDCWD, (uintptr_t)"x", 04755 };
	uint32_t action;

	ASSERT_EQ(0, sandbox_seccomp_build(&s));
	/* fchmodat's mode is its third argument: known with 3, not with 2 */
	ASSERT_TRUE(sandbox_seccomp_refuses(&s.restricted, SYS_fchmodat, args, 3, EPERM));
	ASSERT_EQ(-EINVAL, sandbox_seccomp_verdict(&s.restricted, SYS_fchmodat, args, 2, &action));
	/* the always-refused ones need no argument at all */
	ASSERT_TRUE(sandbox_seccomp_refuses(&s.restricted, SYS_unshare, NULL, 0, EPERM));
	ASSERT_TRUE(!sandbox_seccomp_refuses(&s.restricted, SYS_getpid, NULL, 0, EPERM));
	sandbox_seccomp_done(&s);
}

/*
 * sandbox_seccomp_always_refused(), the denial tracer's "an EPERM from this
 * call is the sandbox's": each call it names (but socket(), refused by
 * family) is refused with EPERM by every sandbox program, whatever its
 * arguments say; ordinary calls are not named.
 */
TEST(always_refused_is_refused_by_every_program)
{
	static const long ordinary[] = {
		SYS_read, SYS_write, SYS_openat, SYS_getpid, SYS_clone, SYS_execve, SYS_connect,
		SYS_kill, SYS_prlimit64, SYS_fchmodat,
	};
	static const long named[] = { SYS_ptrace, SYS_mount, SYS_unshare, SYS_bpf, SYS_io_uring_setup,
				      SYS_keyctl, SYS_socket };
	const uint64_t zero[6] = { 0 };
	struct sandbox_seccomp s;
	size_t n = 0;

	if (sandbox_seccomp_build(&s) < 0)
		tests_skip("libseccomp cannot build the programs here");
	for (size_t i = 0; i < sizeof(ordinary) / sizeof(ordinary[0]); i++)
		ASSERT_TRUE(!sandbox_seccomp_always_refused(ordinary[i]));
	for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
		ASSERT_TRUE(sandbox_seccomp_always_refused(named[i]));
	for (long nr = 0; nr < 512; nr++) {
		const struct sock_fprog *progs[] = { &s.restricted, &s.open_net, &s.proxied,
						     &s.proxied_all_unix };

		if (!sandbox_seccomp_always_refused(nr) || nr == SYS_socket)
			continue;
		n++;
		for (size_t k = 0; k < sizeof(progs) / sizeof(progs[0]); k++)
			if (!sandbox_seccomp_refuses(progs[k], nr, zero, 6, EPERM))
				tests_fail(__FILE__, __LINE__, "call %ld is named but program %zu allows it",
					   nr, k);
	}
	ASSERT_TRUE(n >= 30); /* the whole always-denied list was seen */
	sandbox_seccomp_done(&s);
}

TEST_MAIN()
