/* SPDX-License-Identifier: MIT */
/*
 * clone + exec with pipes or a PTY. See spawn.h.
 *
 * CLONE_VM | CLONE_VFORK, as glibc's posix_spawn does: the child runs on its
 * own stack in the parent's address space until exec, so no page table is
 * copied (a full fork of the server was 40% of its CPU per spawn), and the
 * parent (the spawner thread, spawner.h) is suspended until the child has
 * exec'd or exited. When clone returns, the child's error is in shared_err
 * (or, without CLONE_VM, the CLOEXEC error pipe holds it or EOF): exec
 * succeeded unless it is there. The child shares the
 * parent's memory: it calls only async-signal-safe functions and writes
 * nothing but its own stack (and the plan's scratch fds).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "cgroup.h"
#include "config.h"
#include "log.h"
#include "macro.h"
#include "own-files.h"
#include "sandbox.h"
#include "spawn.h"
#include "spawner.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

/* clone3's argument as of Linux 5.7 (<linux/sched.h> clashes with <sched.h>). */
struct clone3_args {
	uint64_t flags;
	uint64_t pidfd;
	uint64_t child_tid;
	uint64_t parent_tid;
	uint64_t exit_signal;
	uint64_t stack;
	uint64_t stack_size;
	uint64_t tls;
	uint64_t set_tid;
	uint64_t set_tid_size;
	uint64_t cgroup;
};

#define CHILD_STACK_SIZE (256 * 1024) /* the sandbox setup keeps a few PATH_MAX buffers */

/*
 * Sanitizer builds give the child its own (copy-on-write) memory: ASan's
 * interceptors and shadow memory assume one thread per TLS block, which a
 * CLONE_VM child sharing the parent's TLS breaks. Production builds share.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SPAWN_CLONE_VM 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SPAWN_CLONE_VM 0
#endif
#endif
#ifndef SPAWN_CLONE_VM
#define SPAWN_CLONE_VM CLONE_VM
#endif

/*
 * The code between clone and exec runs on its own stack: ASan instrumentation
 * there only produces "ignoring __asan_handle_no_return" warnings.
 */
#define _child_ __attribute__((no_sanitize("address", "undefined")))

struct child_err {
	int err;
	const char *step; /* a static string: the same address in parent and child */
};

struct child_fds {
	int in, out, err; /* become 0, 1, 2 */
	int ctty;         /* PTY slave to make the controlling terminal, or -1 */
	int errpipe;
	pid_t server;     /* getpid() of the server */
	int cg_procs;     /* cgroup.procs to join before exec (no clone3), or -1 */
};

#if defined(__x86_64__) && SPAWN_CLONE_VM
#define HAVE_CLONE3_VM 1
/*
 * clone3 with a stack of the caller's, the child calling fn(arg) and
 * exiting with its result: libc has no wrapper, and syscall() cannot be used
 * with CLONE_VM because the child would return through the parent's stack
 * frames. rdi = args, rsi = size, rdx = fn, rcx = arg; r8/r9 survive the
 * syscall (only rcx and r11 are clobbered). The kernel starts the child
 * with rsp = stack + stack_size (16-aligned), so the call leaves the ABI's
 * alignment at fn's entry.
 */
long spawn_clone3_vm(void *args, size_t size, int (*fn)(void *), void *arg);
__asm__(".text\n"
	".globl spawn_clone3_vm\n"
	".hidden spawn_clone3_vm\n"
	".type spawn_clone3_vm,@function\n"
	"spawn_clone3_vm:\n"
	"	mov %rdx, %r8\n"
	"	mov %rcx, %r9\n"
	"	mov $435, %eax\n" /* SYS_clone3 */
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jz 1f\n"
	"	ret\n"
	"1:	xor %ebp, %ebp\n"
	"	mov %r9, %rdi\n"
	"	call *%r8\n"
	"	mov %eax, %edi\n"
	"	mov $60, %eax\n" /* SYS_exit */
	"	syscall\n"
	"	hlt\n"
	".size spawn_clone3_vm, .-spawn_clone3_vm\n");
#else
#define HAVE_CLONE3_VM 0
#endif

/*
 * Where a child that shares the server's memory (CLONE_VM, x86-64 outside
 * sanitizers) leaves its error, as glibc's posix_spawn does: the parent reads
 * it once clone returns (CLONE_VFORK: the child has exec'd or exited), so no
 * error pipe is made (a pipe2, two closes and a read fewer per spawn). One
 * spawn at a time (the spawner thread); the first error written counts, as
 * the first record in the pipe did (a PID namespace's command, then its init).
 */
static struct child_err shared_err;

static _child_ _noreturn_ void child_fail_step(int errpipe, int err, const char *step)
{
	struct child_err ce = { err ? err : EIO, step };

	if (errpipe < 0) {
		volatile struct child_err *se = &shared_err;

		if (se->err == 0) {
			se->step = step;
			se->err = ce.err;
		}
	} else {
		ssize_t _unused_ n = write(errpipe, &ce, sizeof(ce));
	}
	_exit(127);
}

static _child_ _noreturn_ void child_fail(int errpipe, int err)
{
	child_fail_step(errpipe, err, NULL);
}

/* Moves fd to target without clobbering others still needed. */
static _child_ int child_dup2(int fd, int target)
{
	if (fd == target) {
		/* Clear CLOEXEC that all our fds carry. */
		int fl = fcntl(fd, F_GETFD);
		if (fl < 0 || fcntl(fd, F_SETFD, fl & ~FD_CLOEXEC) < 0)
			return -errno;
		return 0;
	}
	if (dup2(fd, target) < 0)
		return -errno;
	return 0;
}

/*
 * uexec-init (uexec-init.c), opened at start: next to this binary (a build
 * tree), else in libexecdir (an installed uexec). Executed through the fd, so
 * replacing the file later changes nothing.
 */
static int init_helper_fd = -1;

int spawn_init(char *path, size_t size)
{
	int fd = server_own_file_open("uexec-init", UEXEC_LIBEXECDIR, O_PATH | O_CLOEXEC, path, size);

	if (fd < 0)
		return fd;
	init_helper_fd = fd;
	return 0;
}

/*
 * This binary, for the sandboxed fs helper. A sandbox that can write the
 * binary's directory could put a file of its own at that path; the fd keeps
 * the inode the server was started from (CLOEXEC is fine: execveat with
 * AT_EMPTY_PATH only needs /proc/self/fd for scripts, and uexec is ELF).
 */
static int self_fd = -1;
static char self_path[PATH_MAX];

int spawn_self_init(void)
{
	if (self_fd >= 0)
		return 0;
	self_fd = open("/proc/self/exe", O_PATH | O_CLOEXEC);
	if (self_fd < 0)
		return -errno;
	/* Where it was at start: for the exposure warnings only, never executed. */
	if (!realpath("/proc/self/exe", self_path)) {
		int r = -errno;

		self_fd = safe_close(self_fd);
		return r;
	}
	return 0;
}

int spawn_self_fd(void)
{
	return self_fd;
}

const char *spawn_self_path(void)
{
	return self_fd >= 0 ? self_path : NULL;
}

/* What the sandbox's child side calls back at its stages (sandbox_child_enter()). */
struct stage_ctx {
	const struct spawn_args *a;
	struct child_fds *f;
	char num[24];  /* the command's pid, for uexec-init's argv */
	char *init_argv[3];
};

static _child_ _noreturn_ void child_exec(const struct spawn_args *a, struct child_fds *f);

/* The command (pid 2): credentials, then the common tail. */
static _child_ int command_entry(void *arg)
{
	struct stage_ctx *c = arg;
	const char *step;
	int r = sandbox_child_command(c->a->sandbox, &step);

	if (r < 0)
		child_fail_step(c->f->errpipe, -r, step);
	child_exec(c->a, c->f);
}

/* The command's stack (allocated by the server): init waits (CLONE_VFORK) until it execs. */
static uint8_t *command_stack;

/*
 * In the namespace's init, after the mounts: the command shares init's
 * memory (the server's) until it execs, exactly as the server spawns; then
 * init execs uexec-init (stage_exec_init), which releases the server. A
 * command that failed has written its error and exited; uexec-init reaps it
 * at once.
 */
static _child_ int stage_start_command(void *arg, const char **step)
{
	struct stage_ctx *c = arg;
	char *p = c->num + sizeof(c->num);
	long pid;

	/*
	 * Not dumpable before the command can run: until init execs
	 * uexec-init it holds the server's (close-on-exec) fds, and a dumpable
	 * init's /proc/1/fd would be listable by a command of the same uid (a
	 * non-root server). Non-dumpable, /proc/1 is owned by root. The flag
	 * is the shared mm's (CLONE_VM): spawn() puts the server's back, and
	 * the command's exec gives it an mm of its own.
	 */
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	pid = clone(command_entry, command_stack + CHILD_STACK_SIZE,
		    SPAWN_CLONE_VM | CLONE_VFORK | SIGCHLD, c);
	if (pid < 0) {
		*step = "starting the command in its PID namespace";
		return -errno;
	}
	*--p = 0;
	do
		*--p = (char)('0' + pid % 10);
	while ((pid /= 10) > 0);
	c->init_argv[0] = (char *)"uexec-init";
	c->init_argv[1] = p;
	c->init_argv[2] = NULL;
	return 0;
}

/* Last in the namespace's init (a non-root server's init has kept one inert capability, apply.c). */
static _child_ int stage_exec_init(void *arg, const char **step)
{
	struct stage_ctx *c = arg;
	char *envp[] = { NULL };

	/* Nothing of the command's stays open here (the error pipe closes at exec). */
	close(0);
	close(1);
	close(2);
	syscall(SYS_execveat, init_helper_fd, "", c->init_argv, envp, AT_EMPTY_PATH);
	*step = "starting uexec-init";
	return -errno;
}

/* Signals whose disposition is not SIG_DFL in the server (found once): the child resets them. */
static int changed_signals[NSIG];
static int n_changed_signals = -1;

static void find_changed_signals(void)
{
	n_changed_signals = 0;
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction old;

		if (sigaction(sig, NULL, &old) == 0 && old.sa_handler != SIG_DFL)
			changed_signals[n_changed_signals++] = sig;
	}
}

/*
 * The process's own set-up, after a non-root sandbox's user namespace maps:
 * its session and terminal, stdio on 0..2, nothing else inherited, the fd
 * limit. Errors name no step.
 */
static _child_ int stage_process(void *arg, const char **step)
{
	struct stage_ctx *c = arg;
	struct child_fds *f = c->f;
	int *fds[3] = { &f->in, &f->out, &f->err };
	int r;

	*step = NULL;
	if (setsid() < 0)
		return -errno;
	if (f->ctty >= 0 && ioctl(f->ctty, TIOCSCTTY, 0) < 0)
		return -errno;
	/*
	 * Move the three fds out of the 0..2 range first if needed, so that
	 * dup2 onto 0, 1, 2 never closes one we still need.
	 */
	for (int i = 0; i < 3; i++) {
		if (*fds[i] >= 0 && *fds[i] < 3) {
			int n = fcntl(*fds[i], F_DUPFD_CLOEXEC, 3);
			if (n < 0)
				return -errno;
			*fds[i] = n;
		}
	}
	for (int i = 0; i < 3; i++) {
		r = child_dup2(*fds[i], i);
		if (r < 0)
			return r;
	}
	/* Nothing else is inherited: mark every other fd close-on-exec. */
	if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		return -errno;
	if (c->a->nofile && setrlimit(RLIMIT_NOFILE, c->a->nofile) < 0)
		return -errno;
	return 0;
}

static const struct sandbox_child_stages stages = {
	.process = stage_process,
	.start_command = stage_start_command,
	.exec_init = stage_exec_init,
};

static _child_ _noreturn_ void child_main(const struct spawn_args *a, struct child_fds *f)
{
	struct stage_ctx ctx = { .a = a, .f = f };
	const char *step;
	pid_t ppid;
	int r;

	/*
	 * Dies with the server, however it ends (SIGKILL too). Kept across exec
	 * (not a set-user-ID program; dropping capabilities keeps it), and the
	 * command of a PID namespace dies with its init. getppid() catches a
	 * server that died before the prctl (0: the parent is outside our PID
	 * namespace).
	 */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		child_fail(f->errpipe, errno);
	ppid = getppid();
	if (ppid != f->server && ppid != 0)
		child_fail(f->errpipe, ESRCH);
	/* Its v2 cgroup where clone3 is refused (clone_child), before anything runs. */
	if (f->cg_procs >= 0 && write(f->cg_procs, "0", 1) < 0)
		child_fail_step(f->errpipe, errno, "joining its cgroup");
	/* Its v1 cgroups (limits on a hybrid host), before anything runs: descendants inherit them. */
	for (int k = 0; a->cgroup && k < _SANDBOX_CG_KIND_MAX; k++)
		if (a->cgroup->v1_procs[k] >= 0 && write(a->cgroup->v1_procs[k], "0", 1) < 0)
			child_fail_step(f->errpipe, errno, "joining its cgroup (v1)");

	/* The sandbox orders the rest (sandbox.h); with a PID namespace it never returns here. */
	r = sandbox_child_enter(a->sandbox, a->tty ? 0 : -1, &stages, &ctx, &step);
	if (r < 0)
		child_fail_step(f->errpipe, -r, step);
	child_exec(a, f);
}

/* The common tail: chdir, signals back to their defaults, exec. */
static _child_ _noreturn_ void child_exec(const struct spawn_args *a, struct child_fds *f)
{
	struct sigaction sa = { .sa_handler = SIG_DFL };
	sigset_t all;
	int err = ENOENT, errpipe = f->errpipe;

	if (a->cwd && chdir(a->cwd) < 0) {
		/* Not root on the host: the usual cause is a parent directory closed to that uid. */
		if (sandbox_plan_sandbox_uid(a->sandbox))
			child_fail_step(f->errpipe, errno,
					"chdir to the cwd as the --sandbox-uid uid (each parent directory "
					"must be searchable by that uid)");
		child_fail(f->errpipe, errno);
	}

	/* Ignored signals survive exec: reset the ones the server changed, then unblock. */
	for (int i = 0; i < n_changed_signals; i++)
		(void)sigaction(changed_signals[i], &sa, NULL);
	sigemptyset(&all);
	(void)sigprocmask(SIG_SETMASK, &all, NULL);

	/*
	 * Last, so that nothing the setup still used can sit on that number:
	 * the error pipe moves away first (the caller's copy of f is shared
	 * under CLONE_VM, hence the local).
	 */
	if (a->extra_fd > 0 && a->extra_fd != a->extra_fd_at) {
		if (errpipe == a->extra_fd_at) {
			errpipe = fcntl(errpipe, F_DUPFD_CLOEXEC, a->extra_fd_at + 1);
			if (errpipe < 0)
				child_fail(f->errpipe, errno);
		}
		if (dup2(a->extra_fd, a->extra_fd_at) < 0)
			child_fail(errpipe, errno);
	} else if (a->extra_fd > 0 && child_dup2(a->extra_fd, a->extra_fd_at) < 0) {
		child_fail(errpipe, errno);
	}

	if (a->exec_self) {
		syscall(SYS_execveat, self_fd, "", a->argv, a->envp, AT_EMPTY_PATH);
		child_fail(errpipe, errno);
	}
	for (const char *const *c = a->candidates; *c; c++) {
		execve(*c, a->argv, a->envp);
		if (a->explicit_path)
			child_fail(errpipe, errno);
		/* execvp's rule: remember EACCES, keep looking past ENOENT-like errors. */
		if (errno == EACCES)
			err = EACCES;
		else if (errno != ENOENT && errno != ENOTDIR && errno != ESTALE && errno != ENODEV &&
			 errno != ETIMEDOUT && err != EACCES)
			err = errno;
	}
	child_fail(errpipe, err);
}

static int open_pty(unsigned short rows, unsigned short cols, int *ret_master, int *ret_slave)
{
	_cleanup_close_ int m = -1, sl = -1;
	struct winsize ws = { .ws_row = rows, .ws_col = cols };
	char name[64];
	int r;

	m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
	if (m < 0)
		return -errno;
	if (grantpt(m) < 0 || unlockpt(m) < 0)
		return -errno;
	r = ptsname_r(m, name, sizeof(name));
	if (r != 0)
		return -r;
	sl = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (sl < 0)
		return -errno;
	if (ioctl(m, TIOCSWINSZ, &ws) < 0)
		return -errno;
	*ret_master = TAKE_FD(m);
	*ret_slave = TAKE_FD(sl);
	return 0;
}

struct child_ctx {
	const struct spawn_args *a;
	struct child_fds cf;
};

static _child_ int child_entry(void *arg)
{
	struct child_ctx *c = arg;

	child_main(c->a, &c->cf);
}

static void *child_stack_top(void)
{
	static uint8_t *stack;

	if (!stack) {
		/* One stack for every spawn: CLONE_VFORK keeps the parent waiting until exec. */
		stack = mmap(NULL, CHILD_STACK_SIZE, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_GROWSDOWN, -1, 0);
		if (stack == MAP_FAILED) {
			stack = NULL;
			return NULL;
		}
	}
	return stack + CHILD_STACK_SIZE;
}

/* Checks what the spawn needs up front; allocates the command's stack on first use. */
static int spawn_prepare(const struct spawn_args *a)
{
	if (n_changed_signals < 0)
		find_changed_signals();
	if (a->exec_self && self_fd < 0)
		return -ENOEXEC; /* spawn_self_init() failed or was not called */
	if (!sandbox_plan_pid_ns(a->sandbox))
		return 0;
	if (init_helper_fd < 0)
		return -ENOEXEC; /* the plan asks only when spawn_init() found the helper */
	if (!command_stack) {
		command_stack = mmap(NULL, CHILD_STACK_SIZE, PROT_READ | PROT_WRITE,
				     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_GROWSDOWN, -1, 0);
		if (command_stack == MAP_FAILED) {
			command_stack = NULL;
			return -ENOMEM;
		}
	}
	return 0;
}

/* The parent's and the child's ends of the child's stdio. */
struct stdio_fds {
	int in_r, in_w, out_r, out_w, err_r, err_w, master, slave;
};

static void stdio_fds_close(struct stdio_fds *f)
{
	safe_close(f->in_r);
	safe_close(f->in_w);
	safe_close(f->out_r);
	safe_close(f->out_w);
	safe_close(f->err_r);
	safe_close(f->err_w);
	safe_close(f->master);
	safe_close(f->slave);
}

/* /dev/null, the stdin of a process without pipeStdin (opened at start, never closed). */
static int devnull_fd = -1;

int spawn_open_devnull(void)
{
	if (devnull_fd < 0)
		devnull_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return devnull_fd < 0 ? -errno : 0;
}

/* A PTY, or pipes (stdin a pipe or /dev/null; stderr a pipe or the caller's fd). */
static int open_stdio(const struct spawn_args *a, struct stdio_fds *f, struct child_fds *cf)
{
	int p[2], r;

	if (a->tty) {
		r = open_pty(a->rows, a->cols, &f->master, &f->slave);
		if (r < 0)
			return r;
		*cf = (struct child_fds){ .in = f->slave, .out = f->slave, .err = f->slave,
					  .ctty = f->slave };
		return 0;
	}
	if (a->pipe_stdin && a->stdin_socket) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) < 0)
			return -errno;
		f->in_r = p[0];
		f->in_w = p[1];
	} else if (a->pipe_stdin) {
		if (pipe2(p, O_CLOEXEC) < 0)
			return -errno;
		f->in_r = p[0];
		f->in_w = p[1];
	} else {
		/* Kept open (spawn_open_devnull()): an openat and a close fewer per spawn. */
		r = spawn_open_devnull();
		if (r < 0)
			return r;
	}
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	f->out_r = p[0];
	f->out_w = p[1];
	if (a->stderr_fd >= 0) {
		f->err_w = fcntl(a->stderr_fd, F_DUPFD_CLOEXEC, 3);
		if (f->err_w < 0)
			return -errno;
	} else {
		if (pipe2(p, O_CLOEXEC) < 0)
			return -errno;
		f->err_r = p[0];
		f->err_w = p[1];
	}
	*cf = (struct child_fds){ .in = a->pipe_stdin ? f->in_r : devnull_fd, .out = f->out_w,
				  .err = f->err_w, .ctty = -1 };
	return 0;
}

/* getpid() of the server, found at the first spawn. */
static pid_t server_pid;

/* clone3 answered ENOSYS (seccomp, valgrind) or E2BIG (Linux 5.3-5.6: no cgroup member) once. */
static bool clone3_refused;

/*
 * Straight into its own cgroup cg (sandbox/cgroup.h; for a guarded sandbox a
 * leaf below the listener guard, netguard.h), or the guard's: writing
 * cgroup.procs later would cost an RCU grace period and leave a window. With
 * CLONE_VM on the child's own stack as clone() does (spawn_clone3_vm), else
 * (sanitizers, other architectures) with fork semantics: a copy of the
 * address space, still running only async-signal-safe code. Returns the pid,
 * or -1 with errno.
 */
static long clone3_into_cgroup(const struct spawn_args *a, struct child_ctx *ctx,
			       struct child_fds *cf, int cg, void *stack, int *pidfd)
{
	struct clone3_args ca = {
		.flags = CLONE_VFORK | CLONE_PIDFD | CLONE_INTO_CGROUP |
			 (sandbox_plan_pid_ns(a->sandbox) ? CLONE_NEWPID : 0) |
			 (sandbox_plan_userns(a->sandbox) ? CLONE_NEWUSER : 0),
		.pidfd = (uint64_t)(uintptr_t)pidfd,
		.exit_signal = SIGCHLD,
		.cgroup = (uint64_t)cg,
	};
	long pid;

#if HAVE_CLONE3_VM
	(void)cf;
	ca.flags |= CLONE_VM;
	ca.stack = (uint64_t)(uintptr_t)((uint8_t *)stack - CHILD_STACK_SIZE);
	ca.stack_size = CHILD_STACK_SIZE;
	pid = spawn_clone3_vm(&ca, sizeof(ca), child_entry, ctx);
	if (pid < 0) {
		errno = (int)-pid;
		pid = -1;
	}
#else
	(void)ctx;
	(void)stack;
	pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0)
		child_main(a, cf);
#endif
	return pid;
}

/* Clones the child with every signal blocked. Returns its pid or -errno. */
static long clone_child(const struct spawn_args *a, struct child_ctx *ctx, struct child_fds *cf,
			void *stack, int *pidfd)
{
	sigset_t all, old;
	long pid;
	int err;

	/* No signal handler may run in the child before it resets them. */
	int cg = a->cgroup && a->cgroup->fd >= 0 ? a->cgroup->fd : sandbox_plan_cgroup_fd(a->sandbox);

	/* The spawner thread blocks every signal for good: nothing to change there. */
	bool mask = !spawn_thread_is_current();

	sigfillset(&all);
	if (mask)
		sigprocmask(SIG_SETMASK, &all, &old);
	if (cg >= 0 && clone3_refused) {
		/*
		 * No clone3 here (Docker's default seccomp profile and valgrind
		 * answer ENOSYS; kernels before 5.7 have no CLONE_INTO_CGROUP): the
		 * child writes itself into the cgroup before anything runs, as on
		 * v1 (slower: the write waits for an RCU grace period).
		 */
		cf->cg_procs = openat(cg, "cgroup.procs", O_WRONLY | O_CLOEXEC);
		if (cf->cg_procs < 0) {
			err = errno;
			if (mask)
				sigprocmask(SIG_SETMASK, &old, NULL);
			return -err;
		}
		ctx->cf.cg_procs = cf->cg_procs;
		cg = -1;
	}
	if (cg >= 0) {
		pid = clone3_into_cgroup(a, ctx, cf, cg, stack, pidfd);
		if (pid < 0 && (errno == ENOSYS || errno == E2BIG) &&
		    !clone3_refused) {
			/* Said once; this spawn and the next ones take the clone() path. */
			clone3_refused = true;
			spawn_thread_defer_clone3_refused(errno); /* logged by the loop thread */
			if (mask)
				sigprocmask(SIG_SETMASK, &old, NULL);
			return clone_child(a, ctx, cf, stack, pidfd);
		}
	} else {
		/*
		 * With its own PID namespace, the child is its init
		 * (its stages: sandbox_child_enter()). A non-root server's sandbox: in a user
		 * namespace of its own too (CLONE_NEWUSER, unlike unshare, works
		 * with CLONE_VM), which owns the PID namespace cloned with it.
		 */
		pid = clone(child_entry, stack,
			    SPAWN_CLONE_VM | CLONE_VFORK | CLONE_PIDFD | SIGCHLD |
				    (sandbox_plan_pid_ns(a->sandbox) ? CLONE_NEWPID : 0) |
				    (sandbox_plan_userns(a->sandbox) ? CLONE_NEWUSER : 0),
			    ctx, pidfd);
	}
	err = errno;
	if (mask)
		sigprocmask(SIG_SETMASK, &old, NULL);
	cf->cg_procs = ctx->cf.cg_procs = safe_close(cf->cg_procs);
	return pid < 0 ? -err : pid;
}

static int spawn_here(const struct spawn_args *a, struct spawn_result *ret, const char **ret_step)
{
	_cleanup_close_ int ep_r = -1, ep_w = -1, pidfd = -1;
	struct stdio_fds f = { -1, -1, -1, -1, -1, -1, -1, -1 };
	struct child_err ce = { 0 };
	struct child_ctx ctx = { .a = a };
	struct child_fds cf;
	void *stack;
	int p[2], r, dumpable;
	long pid;
	ssize_t n;

	r = spawn_prepare(a);
	if (r < 0)
		return r;
	stack = child_stack_top();
	if (!stack)
		return -ENOMEM;
	if (!HAVE_CLONE3_VM) {
		if (pipe2(p, O_CLOEXEC) < 0)
			return -errno;
		ep_r = p[0];
		ep_w = p[1];
	}
	shared_err = (struct child_err){ 0 };
	r = open_stdio(a, &f, &cf);
	if (r < 0)
		goto out;
	if (server_pid == 0)
		server_pid = getpid(); /* the server never forks itself after start */
	cf.errpipe = ep_w;
	cf.server = server_pid;
	cf.cg_procs = -1;
	ctx.cf = cf;

	/* Only a sandboxed child changes it (its uid, or the PID namespace's init). */
	dumpable = a->sandbox ? prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) : -1;
	pid = clone_child(a, &ctx, &cf, stack, &pidfd);
	/*
	 * A child sharing this memory (CLONE_VM) that changes its uid
	 * (--sandbox-uid) makes the shared mm non-dumpable; it has exec'd or
	 * exited by now (CLONE_VFORK), so the server's own flag goes back.
	 */
	if (dumpable >= 0 && prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != dumpable)
		(void)prctl(PR_SET_DUMPABLE, dumpable, 0, 0, 0);
	if (pid < 0) {
		r = (int)pid;
		goto out;
	}
	if (HAVE_CLONE3_VM) {
		__atomic_thread_fence(__ATOMIC_SEQ_CST); /* what the child wrote (clone is a barrier too) */
		ce = *(volatile struct child_err *)&shared_err;
		n = ce.err ? (ssize_t)sizeof(ce) : 0;
	} else {
		ep_w = safe_close(ep_w);
		do
			n = read(ep_r, &ce, sizeof(ce));
		while (n < 0 && errno == EINTR);
	}
	if (n == (ssize_t)sizeof(ce)) {
		siginfo_t si;

		/* The child has exited (CLONE_VFORK); reap it. */
		(void)waitid((idtype_t)P_PIDFD, (id_t)pidfd, &si, WEXITED);
		if (ret_step)
			*ret_step = ce.step;
		r = -ce.err;
		goto out;
	}

	ret->pid = (pid_t)pid;
	ret->pidfd = TAKE_FD(pidfd);
	if (a->tty) {
		ret->stdin_fd = -1; /* the master (out_fd) takes stdin too */
		ret->out_fd = TAKE_FD(f.master);
		ret->err_fd = -1;
	} else {
		ret->stdin_fd = TAKE_FD(f.in_w);
		ret->out_fd = TAKE_FD(f.out_r);
		ret->err_fd = TAKE_FD(f.err_r);
	}
	r = 0;
out:
	stdio_fds_close(&f);
	return r;
}

struct spawn_call_args {
	const struct spawn_args *a;
	struct spawn_result *ret;
	const char **ret_step;
};

static int spawn_call_fn(void *arg)
{
	struct spawn_call_args *c = arg;

	return spawn_here(c->a, c->ret, c->ret_step);
}

int spawn_process(const struct spawn_args *a, struct spawn_result *ret, const char **ret_step)
{
	struct spawn_call_args c = { a, ret, ret_step };

	/*
	 * Every child is the spawner thread's (spawner.h): a spawn asked for on
	 * another thread waits for it there, as it waited for the vfork here.
	 */
	int r;

	if (spawn_thread_running() && !spawn_thread_is_current()) {
		r = spawn_thread_call(spawn_call_fn, &c);
		spawn_thread_log_deferred();
		return r;
	}
	r = spawn_here(a, ret, ret_step);
	if (!spawn_thread_is_current())
		spawn_thread_log_deferred();
	return r;
}
