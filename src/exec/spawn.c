/* SPDX-License-Identifier: MIT */
/*
 * clone + exec with pipes or a PTY. See spawn.h.
 *
 * CLONE_VM | CLONE_VFORK, as glibc's posix_spawn does: the child runs on its
 * own stack in the parent's address space until exec, so no page table is
 * copied (a full fork of the server was 40% of its CPU per spawn), and the
 * parent (the spawner thread, spawner.h) is suspended until the child has
 * exec'd or exited. When clone returns, the child's error is in spawn_shared_err (spawn-child.c)
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
#include "spawn-internal.h"
#include "spawner.h"

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
	pid = spawn_clone3_vm(&ca, sizeof(ca), spawn_child_entry, ctx);
	if (pid < 0) {
		errno = (int)-pid;
		pid = -1;
	}
#else
	(void)ctx;
	(void)stack;
	pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0)
		spawn_child_main(a, cf);
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
		pid = clone(spawn_child_entry, stack,
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

	r = spawn_child_prepare(a);
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
	spawn_shared_err = (struct child_err){ 0 };
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
		ce = *(volatile struct child_err *)&spawn_shared_err;
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
