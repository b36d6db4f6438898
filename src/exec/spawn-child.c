/* SPDX-License-Identifier: MIT */
/*
 * The child's side of a spawn (spawn.c is the parent's): everything that
 * runs between clone and exec, on the child's own stack and, with CLONE_VM,
 * in the server's memory. Only async-signal-safe calls; nothing written but
 * the child's stack, the plan's scratch fds and spawn_shared_err.
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
#include "spawn-internal.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
/*
 * Where a child that shares the server's memory (CLONE_VM, x86-64 outside
 * sanitizers) leaves its error, as glibc's posix_spawn does: the parent reads
 * it once clone returns (CLONE_VFORK: the child has exec'd or exited), so no
 * error pipe is made (a pipe2, two closes and a read fewer per spawn). One
 * spawn at a time (the spawner thread); the first error written counts, as
 * the first record in the pipe did (a PID namespace's command, then its init).
 */
struct child_err spawn_shared_err;

static _child_ _noreturn_ void child_fail_step(int errpipe, int err, const char *step)
{
	struct child_err ce = { err ? err : EIO, step };

	if (errpipe < 0) {
		volatile struct child_err *se = &spawn_shared_err;

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

_child_ _noreturn_ void spawn_child_main(const struct spawn_args *a, struct child_fds *f)
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

_child_ int spawn_child_entry(void *arg)
{
	struct child_ctx *c = arg;

	spawn_child_main(c->a, &c->cf);
}

/* Checks what the spawn needs up front; allocates the command's stack on first use. */
int spawn_child_prepare(const struct spawn_args *a)
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
