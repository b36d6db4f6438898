/* SPDX-License-Identifier: MIT */
/*
 * The cgroup supervisor (see cgroup.h, sandbox_cg_supervise): a process
 * forked twice at start, out of uexec's process group, that waits on a pipe
 * and, when uexec is gone (even by SIGKILL), purges its per-process cgroups
 * and the listener guard's, killing what was left in them.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"
#include "macro.h"

static _noreturn_ void supervise(struct sandbox_cg *cg, int rfd, pid_t server)
{
	char buf[16], guard[4096 + 64];
	sigset_t all;
	int null;

	/* Ends when uexec ends: whatever signal its terminal or group got, uexec's death decides. */
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP && sig != SIGCHLD)
			(void)signal(sig, SIG_IGN);
	sigemptyset(&all);
	(void)sigprocmask(SIG_SETMASK, &all, NULL);
	(void)prctl(PR_SET_NAME, "uexec-reaper", 0, 0, 0);
	/* Out of uexec's process group: a SIGKILL to the group must not take it along. */
	(void)setsid();
	/* Pins no directory (uexec's cwd could be a mount to be unmounted while uexec runs). */
	(void)!chdir("/");
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		(void)dup2(null, 0);
		(void)dup2(null, 1);
		(void)dup2(null, 2);
	}
	(void)dup2(rfd, 3);
	(void)syscall(SYS_close_range, 4U, ~0U, 0U);
	for (;;) {
		ssize_t n = read(3, buf, sizeof(buf));

		if (n == 0 || (n < 0 && errno != EINTR))
			break;
	}
	/* uexec is gone (or shut down, having purged all this already). */
	if (cg->base[0])
		(void)sandbox_cg_purge(cg->base);
	for (int k = 0; k < _SANDBOX_CG_KIND_MAX; k++)
		if (cg->v1_fd[k] >= 0)
			(void)sandbox_cg_purge(cg->v1_base[k]);
	if (cg->base[0]) {
		/* The listener guard (netguard.c) is the base's sibling. */
		snprintf(guard, sizeof(guard), "%.*s/uexec-%d.sandbox",
			 (int)(strrchr(cg->base, '/') - cg->base), cg->base, (int)server);
		(void)sandbox_cg_purge(guard);
	}
	_exit(0);
}

int sandbox_cg_supervise(struct sandbox_cg *cg)
{
	int p[2], info[2], st;
	pid_t pid, sup = 0, server = getpid();

	if (!cg->enabled && cg->where[SANDBOX_CG_PIDS] != SANDBOX_CG_V1 &&
	    cg->where[SANDBOX_CG_MEMORY] != SANDBOX_CG_V1 && cg->where[SANDBOX_CG_CPU] != SANDBOX_CG_V1)
		return 0; /* nothing it could kill */
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(info, O_CLOEXEC) < 0) {
		close(p[0]);
		close(p[1]);
		return -errno;
	}
	/*
	 * Forked twice: the supervisor is not uexec's child (nothing to reap,
	 * and uexec's children are the processes it started).
	 */
	pid = fork();
	if (pid == 0) {
		pid_t g;

		close(p[1]);
		close(info[0]);
		g = fork();
		if (g == 0) {
			close(info[1]);
			supervise(cg, p[0], server);
		}
		(void)!write(info[1], &g, sizeof(g));
		_exit(g < 0);
	}
	close(p[0]);
	close(info[1]);
	if (pid > 0) {
		(void)waitpid(pid, &st, 0);
		if (read(info[0], &sup, sizeof(sup)) != (ssize_t)sizeof(sup))
			sup = 0;
	}
	close(info[0]);
	if (pid < 0 || sup <= 0) {
		close(p[1]);
		return pid < 0 ? -errno : -ECHILD;
	}
	cg->supervisor = sup;
	cg->supervisor_fd = p[1];
	return 0;
}
