/* SPDX-License-Identifier: MIT */
/*
 * FALLBACK (docs/UPGRADE.md): the new binary's --check-upgrade said it cannot
 * read our state version (exit 1), so nothing can be handed over. The server
 * drains as SIGTERM's drain does (server.c: no new connections, sessions or
 * processes; what runs finishes up to --drain-timeout-ms, then is killed and
 * reported), shuts down as at any stop (the cgroup bases and the listener
 * guard purged, every fd closed), and main() then execs the new binary fresh
 * in this pid with the saved argv: no state, nothing open but stdio.
 *
 * The cgroup supervisor is ended first, by SIGKILL: it would purge
 * `uexec-<pid>.procs` and `uexec-<pid>.sandbox` when the pipe closes, names
 * the fresh binary makes again for itself (same pid), and its purge could come
 * after them. Killed while it waits in read() on a pipe still open, it never
 * runs another instruction; the server purges its own bases at shutdown as
 * always, and the fresh binary starts its own supervisor. Nothing of the old
 * server runs in the gap (the drain is over, its processes reaped).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "server.h"
#include "upgrade-internal.h"
#include "upgrade.h"

extern char **environ;

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* How long the drain's end waits for the listener's accept to be reaped (stop_when_released). */
#define RELEASE_TIMEOUT_MS 2000

static struct {
	char *exe;       /* the new binary (owned) */
	char **argv;     /* main()'s, borrowed: valid until main() returns */
	bool draining;   /* the fallback's drain runs */
	bool ending;     /* the drain is over, the listener's socket is being released */
	bool exec;       /* the server stopped: exec fresh once the loop has ended */
	struct server *srv;
	struct uring_timer timer;
	unsigned waited_ms;
} fb;

int upgrade_fallback_start(struct server *s, const char *exe, char **argv)
{
	if (!argv || !s->drain_start)
		return -EINVAL;
	free(fb.exe);
	fb.exe = strdup(exe);
	if (!fb.exe)
		return -ENOMEM;
	fb.argv = argv;
	fb.draining = true;
	s->drain_start(s, "Upgrade fallback");
	return 0;
}

/*
 * The supervisor, if this server has one: SIGKILL through a pidfd, once its
 * name says it is still ours (a pid of a supervisor killed by someone else
 * could have been reused). Its pipe is closed after: it cannot read the EOF.
 */
static void supervisor_end(struct sandbox_cg *cg)
{
	char path[64], comm[32] = "";
	pid_t pid = cg->supervisor;
	int pidfd, fd;
	ssize_t n = -1;

	if (pid <= 0 || cg->supervisor_fd < 0)
		return;
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd >= 0) {
		snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			n = read(fd, comm, sizeof(comm) - 1);
			close(fd);
		}
		if (n > 0 && strncmp(comm, "uexec-reaper\n", 13) == 0 &&
		    syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) == 0)
			log_info("Upgrade: the cgroup supervisor (pid %d) ended; the new binary starts "
				 "its own", (int)pid);
		close(pidfd);
	}
	cg->supervisor_fd = safe_close(cg->supervisor_fd);
	cg->supervisor = 0;
}

/*
 * The drain closed the listening socket, but its multishot accept's
 * cancellation may still be in flight: a ring closed at shutdown with an op
 * on a socket keeps that socket (here: LISTEN on the address) until the
 * kernel's asynchronous teardown of the ring ends, and the fresh binary's
 * bind failed with EADDRINUSE. So the loop runs until the accept is reaped
 * (a few milliseconds), bounded.
 */
static void stop_when_released(struct uring_timer *t, bool fired)
{
	struct server *s = fb.srv;

	(void)t;
	if (!fired || s->stopping || !fb.ending)
		return;
	if (s->accept_op.busy && fb.waited_ms < RELEASE_TIMEOUT_MS) {
		fb.waited_ms++;
		uring_timer_arm(&s->ring, &fb.timer, 1, stop_when_released);
		return;
	}
	fb.ending = fb.draining = false;
	supervisor_end(&s->cgroups);
	fb.exec = true;
	server_stop(s, 0);
}

bool upgrade_drained(struct server *s)
{
	if (!fb.draining || s->stopping)
		return false;
	if (!fb.ending) {
		fb.ending = true;
		fb.srv = s;
		fb.waited_ms = 0;
		uring_timer_cancel(&s->drain_timer); /* nothing is left for it to kill */
		log_info("Upgrade fallback: drain complete%s; starting the new binary",
			 s->drain_killed ? " (processes left at the timeout were killed)" : "");
		uring_timer_arm(&s->ring, &fb.timer, 0, stop_when_released);
	}
	return true;
}

/* Every fd above stderr closed at the execve (close_range; by /proc/self/fd before Linux 5.11). */
static void cloexec_all(void)
{
	if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) == 0)
		return;
	for (int fd = 3; fd < 65536; fd++)
		(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
}

int upgrade_fallback_exec(int r)
{
	if (!fb.exec) {
		fb.exe = (free(fb.exe), NULL); /* a fallback stopped by SIGTERM, or none */
		return r;
	}
	fb.exec = false;
	{
		struct log_field f[] = { LOG_STR("binary", fb.exe) };

		log_event(LOG_INFO, "upgrade.fallback", NULL, f, ELEMENTSOF(f),
			  "Upgrade: drained; starting %s fresh in this pid (no state)", fb.exe);
	}
	(void)unsetenv("UEXEC_UPGRADE_STATE_FD");
	(void)unsetenv("UEXEC_UPGRADE_ROLLBACK");
	(void)unsetenv("UEXEC_UPGRADE_ROLLED_BACK");
	cloexec_all();
	/* The mask of a server's start (this thread, the spawner, had every signal blocked). */
	upgrade_start_mask(NULL);
	fflush(NULL);
	upgrade_env_secret_put(true); /* remote mode's credential, read again as at a start */
	(void)execve(fb.exe, fb.argv, environ);
	r = -errno;
	upgrade_env_secret_put(false);
	log_error_errno(r, "Upgrade: execve %s after the drain failed; exiting (the service manager "
			   "restarts uexec)", fb.exe);
	fb.exe = (free(fb.exe), NULL);
	return 1;
}
