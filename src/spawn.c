/* SPDX-License-Identifier: MIT */
/*
 * clone3 + exec with pipes or a PTY. See spawn.h.
 *
 * CLONE_VFORK suspends the parent until the child has exec'd or exited, so
 * when clone3 returns the error pipe holds either the child's errno or EOF:
 * the parent reads it without blocking and knows whether exec succeeded.
 * The child gets a copy of the address space (no CLONE_VM), so it may not
 * corrupt the parent, but it still only calls async-signal-safe functions
 * because the parent may be in the middle of anything (malloc locks).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "macro.h"
#include "sandbox.h"
#include "spawn.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

struct child_err {
	int err;
	const char *step; /* a static string: the same address in parent and child */
};

struct child_fds {
	int in, out, err; /* become 0, 1, 2 */
	int ctty;         /* PTY slave to make the controlling terminal, or -1 */
	int errpipe;
};

static _noreturn_ void child_fail_step(int errpipe, int err, const char *step)
{
	struct child_err ce = { err, step };
	ssize_t _unused_ n = write(errpipe, &ce, sizeof(ce));
	_exit(127);
}

static _noreturn_ void child_fail(int errpipe, int err)
{
	child_fail_step(errpipe, err, NULL);
}

/* Moves fd to target without clobbering others still needed. */
static int child_dup2(int fd, int target)
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

static _noreturn_ void child_main(const struct spawn_args *a, struct child_fds *f)
{
	struct sigaction sa = { .sa_handler = SIG_DFL };
	sigset_t all;
	int err = ENOENT, r;

	if (setsid() < 0)
		child_fail(f->errpipe, errno);
	if (f->ctty >= 0 && ioctl(f->ctty, TIOCSCTTY, 0) < 0)
		child_fail(f->errpipe, errno);

	/*
	 * Move the three fds out of the 0..2 range first if needed, so that
	 * dup2 onto 0, 1, 2 never closes one we still need.
	 */
	int *fds[3] = { &f->in, &f->out, &f->err };
	for (int i = 0; i < 3; i++) {
		if (*fds[i] >= 0 && *fds[i] < 3) {
			int n = fcntl(*fds[i], F_DUPFD_CLOEXEC, 3);
			if (n < 0)
				child_fail(f->errpipe, errno);
			*fds[i] = n;
		}
	}
	for (int i = 0; i < 3; i++) {
		r = child_dup2(*fds[i], i);
		if (r < 0)
			child_fail(f->errpipe, -r);
	}
	/* Nothing else is inherited: mark every other fd close-on-exec. */
	if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		child_fail(f->errpipe, errno);

	if (a->nofile && setrlimit(RLIMIT_NOFILE, a->nofile) < 0)
		child_fail(f->errpipe, errno);

	/* Before chdir: the mounts replace the directories cwd may lie in. */
	if (a->sandbox) {
		const char *step = "sandbox";

		r = sandbox_plan_apply(a->sandbox, a->tty ? 0 : -1, &step);
		if (r < 0)
			child_fail_step(f->errpipe, -r, step);
	}

	if (a->cwd && chdir(a->cwd) < 0)
		child_fail(f->errpipe, errno);

	/* Ignored signals survive exec: reset every disposition, then unblock. */
	for (int sig = 1; sig < NSIG; sig++)
		(void)sigaction(sig, &sa, NULL);
	sigemptyset(&all);
	(void)sigprocmask(SIG_SETMASK, &all, NULL);

	for (const char *const *c = a->candidates; *c; c++) {
		execve(*c, a->argv, a->envp);
		if (a->explicit_path)
			child_fail(f->errpipe, errno);
		/* execvp's rule: remember EACCES, keep looking past ENOENT-like errors. */
		if (errno == EACCES)
			err = EACCES;
		else if (errno != ENOENT && errno != ENOTDIR && errno != ESTALE && errno != ENODEV &&
			 errno != ETIMEDOUT && err != EACCES)
			err = errno;
	}
	child_fail(f->errpipe, err);
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

int spawn_process(const struct spawn_args *a, struct spawn_result *ret, const char **ret_step)
{
	_cleanup_close_ int in_r = -1, in_w = -1, out_r = -1, out_w = -1, err_r = -1, err_w = -1;
	_cleanup_close_ int master = -1, slave = -1, ep_r = -1, ep_w = -1, pidfd = -1, stdin_dup = -1;
	struct clone_args ca = { 0 };
	struct child_err ce = { 0 };
	struct child_fds cf;
	sigset_t all, old;
	int p[2], r;
	long pid;
	ssize_t n;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	ep_r = p[0];
	ep_w = p[1];

	if (a->tty) {
		r = open_pty(a->rows, a->cols, &master, &slave);
		if (r < 0)
			return r;
		stdin_dup = fcntl(master, F_DUPFD_CLOEXEC, 3);
		if (stdin_dup < 0)
			return -errno;
		cf = (struct child_fds){ .in = slave, .out = slave, .err = slave, .ctty = slave };
	} else {
		if (a->pipe_stdin) {
			if (pipe2(p, O_CLOEXEC) < 0)
				return -errno;
			in_r = p[0];
			in_w = p[1];
		} else {
			in_r = open("/dev/null", O_RDONLY | O_CLOEXEC);
			if (in_r < 0)
				return -errno;
		}
		if (pipe2(p, O_CLOEXEC) < 0)
			return -errno;
		out_r = p[0];
		out_w = p[1];
		if (a->stderr_fd >= 0) {
			err_w = fcntl(a->stderr_fd, F_DUPFD_CLOEXEC, 3);
			if (err_w < 0)
				return -errno;
		} else {
			if (pipe2(p, O_CLOEXEC) < 0)
				return -errno;
			err_r = p[0];
			err_w = p[1];
		}
		cf = (struct child_fds){ .in = in_r, .out = out_w, .err = err_w, .ctty = -1 };
	}
	cf.errpipe = ep_w;

	ca.flags = CLONE_PIDFD | CLONE_VFORK;
	ca.pidfd = (uint64_t)(uintptr_t)&pidfd;
	ca.exit_signal = SIGCHLD;

	/* No signal handler may run in the child before it resets them. */
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0)
		child_main(a, &cf);
	r = pid < 0 ? -errno : 0;
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (r < 0)
		return r;

	ep_w = safe_close(ep_w);
	do
		n = read(ep_r, &ce, sizeof(ce));
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)sizeof(ce)) {
		siginfo_t si;

		/* The child has exited (CLONE_VFORK); reap it. */
		(void)waitid((idtype_t)P_PIDFD, (id_t)pidfd, &si, WEXITED);
		if (ret_step)
			*ret_step = ce.step;
		return -ce.err;
	}

	ret->pid = (pid_t)pid;
	ret->pidfd = TAKE_FD(pidfd);
	if (a->tty) {
		ret->stdin_fd = TAKE_FD(stdin_dup);
		ret->out_fd = TAKE_FD(master);
		ret->err_fd = -1;
	} else {
		ret->stdin_fd = TAKE_FD(in_w);
		ret->out_fd = TAKE_FD(out_r);
		ret->err_fd = TAKE_FD(err_r);
	}
	return 0;
}
