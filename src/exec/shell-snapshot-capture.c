/* SPDX-License-Identifier: MIT */
/*
 * A shell snapshot's capture (shell-snapshot-internal.h): the login shell
 * run as a child on the ring, its stdout read with read ops, its exit seen
 * through a poll of its pidfd, a timer for the deadline. A capture hands
 * its output to its entry (shell-snapshot.c) once the child has exited and
 * closed its stdout, or at once when it fails; an entry that goes away
 * lets go of its capture, which is killed and frees itself once its ops
 * are over.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conn.h"
#include "log.h"
#include "macro.h"
#include "server.h"
#include "session.h"
#include "shell-snapshot-internal.h"
#include "spawn.h"

#define READ_CHUNK 65536

static unsigned n_capturing; /* captures running (SNAP_MAX_CAPTURES): their output is memory */
static struct list_head captures = { &captures, &captures };

static void capture_free(struct snap_capture *cap)
{
	n_capturing--;
	list_del(&cap->link);
	safe_close(cap->pidfd);
	safe_close(cap->out_fd);
	free(cap->buf);
	free(cap);
}

static bool capture_idle(const struct snap_capture *cap)
{
	return uring_op_idle(&cap->read_op) && uring_op_idle(&cap->exit_op) &&
	       uring_op_idle(&cap->timer.op);
}

/*
 * Moves the capture on: hands a finished one (or a failed one, at once) to
 * its entry; frees one nobody holds once its ops are over. A failed child is
 * killed with its process group, and its pipe read cancelled: a daemon a
 * startup file left behind may hold the pipe open.
 */
void snap_capture_step(struct snap_capture *cap)
{
	if (cap->failed && !cap->exited) {
		(void)kill(-cap->pid, SIGKILL);
		(void)kill(cap->pid, SIGKILL);
	}
	if (cap->failed && !uring_op_idle(&cap->read_op) && !cap->srv->stopping)
		uring_cancel(&cap->srv->ring, &cap->read_op);
	if (cap->e && (cap->failed || (cap->eof && cap->exited))) {
		struct snap_entry *e = cap->e;

		cap->e = NULL;
		e->cap = NULL;
		snap_entry_captured(e, cap);
	}
	if (!cap->e && cap->timer.armed && !cap->srv->stopping)
		uring_timer_cancel(&cap->timer);
	if (!cap->e && capture_idle(cap))
		capture_free(cap);
}

static void capture_read(struct snap_capture *cap);

static void on_read(struct uring_op *op, int res, uint32_t flags)
{
	struct snap_capture *cap = container_of(op, struct snap_capture, read_op);

	(void)flags;
	if (res > 0) {
		cap->len += (size_t)res;
		if (cap->len > SNAP_MAX_CAPTURE_BYTES)
			cap->failed = true;
	} else if (res == 0) {
		cap->eof = true;
	} else if (res != -EINTR && res != -EAGAIN) {
		cap->failed = true;
	}
	if (!cap->eof && !cap->failed && cap->e)
		capture_read(cap);
	snap_capture_step(cap);
}

static void capture_read(struct snap_capture *cap)
{
	struct io_uring_sqe *sqe;

	if (cap->cap - cap->len < READ_CHUNK) {
		size_t ncap = cap->cap ? cap->cap * 2 : 2 * READ_CHUNK;
		uint8_t *nb;

		if (ncap > SNAP_MAX_CAPTURE_BYTES + 2 * READ_CHUNK)
			ncap = SNAP_MAX_CAPTURE_BYTES + 2 * READ_CHUNK;
		nb = realloc(cap->buf, ncap);
		if (!nb) {
			cap->failed = true;
			return;
		}
		cap->buf = nb;
		cap->cap = ncap;
	}
	sqe = uring_get_sqe(&cap->srv->ring, &cap->read_op, on_read);
	io_uring_prep_read(sqe, cap->out_fd, cap->buf + cap->len, READ_CHUNK, (uint64_t)-1);
}

static void on_exit_ready(struct uring_op *op, int res, uint32_t flags)
{
	struct snap_capture *cap = container_of(op, struct snap_capture, exit_op);
	siginfo_t si = { 0 };

	(void)flags;
	if (res < 0 || waitid((idtype_t)P_PIDFD, (id_t)cap->pidfd, &si, WEXITED | WNOHANG) < 0 ||
	    si.si_pid == 0) {
		/* Not gone yet (a spurious wake-up): wait on, killed or not, so it is reaped. */
		if (res >= 0 && si.si_pid == 0 && !cap->srv->stopping) {
			struct io_uring_sqe *sqe = uring_get_sqe(&cap->srv->ring, op, on_exit_ready);

			io_uring_prep_poll_add(sqe, cap->pidfd, POLLIN);
			return;
		}
		cap->failed = true;
		cap->exited = true; /* nothing more to learn: the kill is not needed again */
	} else {
		cap->exited = true;
		cap->status = si.si_code == CLD_EXITED ? si.si_status : 128 + si.si_status;
		if (cap->status != 0)
			cap->failed = true;
	}
	snap_capture_step(cap);
}

static void on_timeout(struct uring_timer *t, bool fired)
{
	struct snap_capture *cap = container_of(t, struct snap_capture, timer);

	if (fired && cap->e) {
		log_warning_ratelimited("Session %s: shell snapshot capture timed out after %d ms",
					cap->e->ss->id, SNAP_TIMEOUT_MS);
		cap->failed = true;
	}
	snap_capture_step(cap);
}

/*
 * The audit log's shellSnapshot.capture line: a process the server ran for
 * the client (what, where, sandboxed or not), never its environment.
 */
static void audit_capture(struct conn *c, json_t *process_id, const struct spawn_args *sa, pid_t pid)
{
	struct log_field fl[] = {
		LOG_STR("session", c->sess->id),
		LOG_STRN("process", json_string_value(process_id), json_string_length(process_id)),
		LOG_STR("client", c->peer),
		LOG_STR("program", sa->argv[0]),
		LOG_STR("cwd", sa->cwd ? sa->cwd : ""),
		LOG_BOOL("sandboxed", sa->sandbox != NULL),
		LOG_INT("pid", pid),
	};

	if (log_audit_enabled())
		log_audit("shellSnapshot.capture", fl, ELEMENTSOF(fl));
}

/* A capture, counted and listed, with the random part of its markers. */
static int capture_new(struct server *srv, enum snap_shell sh, struct snap_capture **ret)
{
	struct snap_capture *cap;
	uint8_t rnd[16];

	if (n_capturing >= SNAP_MAX_CAPTURES)
		return -EBUSY;
	cap = calloc(1, sizeof(*cap));
	if (!cap)
		return -ENOMEM;
	n_capturing++;
	list_add_tail(&cap->link, &captures);
	cap->pidfd = cap->out_fd = -1;
	cap->srv = srv;
	cap->sh = sh;
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) {
		capture_free(cap);
		return -EIO;
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(cap->nonce + 2 * i, 3, "%02x", rnd[i]);
	*ret = cap;
	return 0;
}

/*
 * Starts `<argv0> -lc <capture script>` as the command would start (program,
 * arg0, environment, cwd, sandbox), with stdin and stderr on /dev/null and
 * stdout a pipe, in a process group of its own.
 */
static int capture_spawn(const struct snap_capture *cap, const struct spawn_args *sa,
			 struct spawn_result *res)
{
	struct spawn_args ca = *sa;
	char *script = NULL, **argv = NULL;
	size_t argc = 0;
	int r, probe = -1, devnull = -1;

	while (sa->argv[argc])
		argc++;
	script = snap_capture_script(cap->sh, cap->nonce);
	argv = calloc(argc + 1, sizeof(char *));
	if (!script || !argv) {
		r = -ENOMEM;
		goto out;
	}
	memcpy(argv, sa->argv, argc * sizeof(char *));
	argv[2] = script;
	/* sh cannot close fd 16: it always gets the state through the environment. */
	r = probe = cap->sh == SNAP_SH ? 0 : snap_sealed_memfd("", 0);
	if (r < 0)
		goto out;
	devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (devnull < 0) {
		r = -errno;
		goto out;
	}
	ca.argv = argv;
	ca.tty = false;
	ca.pipe_stdin = false;
	ca.stdin_socket = false;
	ca.stderr_fd = devnull;
	ca.cgroup = NULL;
	ca.exec_self = false;
	ca.extra_fd = probe > 0 ? probe : 0;
	ca.extra_fd_at = SNAP_FD;
	r = spawn_process(&ca, res, NULL);
out:
	if (probe > 0)
		safe_close(probe);
	safe_close(devnull);
	free(script);
	free(argv);
	return r;
}

int snap_capture_start(struct snap_entry *e, struct conn *c, json_t *process_id,
		       const struct spawn_args *sa)
{
	struct server *srv = c->srv;
	struct spawn_result res;
	struct snap_capture *cap;
	struct io_uring_sqe *sqe;
	int r;

	r = capture_new(srv, e->sh, &cap);
	if (r < 0)
		return r;
	r = capture_spawn(cap, sa, &res);
	if (r < 0) {
		capture_free(cap);
		return r;
	}
	audit_capture(c, process_id, sa, res.pid);
	safe_close(res.stdin_fd);
	safe_close(res.err_fd);
	cap->pid = res.pid;
	cap->pidfd = res.pidfd;
	cap->out_fd = res.out_fd;
	cap->e = e;
	e->cap = cap;
	/* Its stdout, its exit, its deadline. */
	capture_read(cap);
	sqe = uring_get_sqe(&srv->ring, &cap->exit_op, on_exit_ready);
	io_uring_prep_poll_add(sqe, cap->pidfd, POLLIN);
	uring_timer_arm(&srv->ring, &cap->timer, SNAP_TIMEOUT_MS, on_timeout);
	return 0;
}

void snap_shutdown(void)
{
	/* The ring is not run again: each capture is killed and reaped here, as processes are. */
	while (!list_empty(&captures)) {
		struct snap_capture *cap = list_first_entry(&captures, struct snap_capture, link);
		siginfo_t si;

		(void)kill(-cap->pid, SIGKILL);
		(void)kill(cap->pid, SIGKILL);
		if (!cap->exited)
			(void)waitid((idtype_t)P_PIDFD, (id_t)cap->pidfd, &si, WEXITED);
		capture_free(cap);
	}
}
