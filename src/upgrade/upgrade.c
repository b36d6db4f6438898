/* SPDX-License-Identifier: MIT */
/*
 * The live upgrade's trigger (docs/UPGRADE.md): SIGUSR2 runs the binary at the
 * path uexec was started from as `--check-upgrade VERSION`, on the ring (its
 * pidfd polled, a deadline), and logs its answer. One upgrade at a time: a
 * SIGUSR2 while one runs is refused with a log line. A successful check is
 * followed by QUIESCE (quiesce.c) and the state blob built and validated as
 * the hand-over will (collect.c). An idle server (a listener, no session or
 * connection) is then handed over: execve of the start path in this pid with
 * the blob (RESTORE: restore.c). Any other server RESUMEs and keeps serving,
 * until the hand-over of sessions, processes and connections is built.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "server.h"
#include "state.h"
#include "upgrade-internal.h"
#include "upgrade.h"
#include "view.h"

extern char **environ;

/* How long the new binary gets to answer --check-upgrade before it is killed. */
#define CHECK_TIMEOUT_MS 10000
/* What is kept of its answer (one line is expected). */
#define CHECK_OUTPUT_MAX 512
/* QUIESCE: how long cancelled reads get to complete, and how often that is looked at. */
#define QUIESCE_TIMEOUT_MS 2000
#define QUIESCE_POLL_MS 1

enum upgrade_phase {
	UPGRADE_IDLE,
	UPGRADE_CHECKING,  /* --check-upgrade runs */
	UPGRADE_QUIESCING, /* reads cancelled, waiting for their completions */
};

/* One upgrade per server at a time, so one state per process (like the ring). */
static struct {
	char *exe;              /* the path uexec was started from (owned) */
	char **argv;            /* main()'s, borrowed: the new binary gets the same arguments */
	enum upgrade_phase phase;
	struct server *srv;
	pid_t pid;
	int pidfd;
	int out_fd;             /* the read end of the check's stdout and stderr */
	struct uring_op exit_op;
	struct uring_timer timer;
	bool timed_out;
	uint64_t started_ns;
	uint64_t quiesce_ns;    /* CLOCK_MONOTONIC when QUIESCE began */
	unsigned cancelled;     /* ops QUIESCE cancelled */
	uint64_t upgrades;      /* upgrades this process went through (none yet: no hand-over) */
	bool dry_run;           /* UEXEC_UPGRADE_DRY_RUN=1: never exec */
	bool waited;            /* QUIESCE waited for something the loop finishes (transient) */
} upg = { .pidfd = -1, .out_fd = -1 };

static uint64_t now_ns(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * The path to exec: argv[0] when it names a file (absolute, or relative to
 * the directory uexec started in: systemd's ExecStart= is absolute), so that
 * a symlink the upgrade re-points is followed; a bare name was found on PATH,
 * and then /proc/self/exe says which file that was. NULL without memory.
 */
static char *exe_path(const char *argv0)
{
	char buf[PATH_MAX], cwd[PATH_MAX];
	ssize_t n;

	if (argv0 && argv0[0] == '/')
		return strdup(argv0);
	if (argv0 && strchr(argv0, '/') && getcwd(cwd, sizeof(cwd))) {
		char *p = NULL;

		return asprintf(&p, "%s/%s", cwd, argv0) < 0 ? NULL : p;
	}
	n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	return strdup(buf);
}

int upgrade_main_hook(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "--check-upgrade") == 0)
		return upgrade_check_main(argc, argv);
	free(upg.exe);
	upg.exe = exe_path(argc > 0 ? argv[0] : NULL);
	upg.argv = argc > 0 ? argv : NULL;
	upg.dry_run = getenv("UEXEC_UPGRADE_DRY_RUN") && strcmp(getenv("UEXEC_UPGRADE_DRY_RUN"), "1") == 0;
	/* The sandboxed fs helper (this binary again) is never upgraded: no way back to keep. */
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--fs-helper") == 0)
			return -1;
	upgrade_rollback_init(upg.argv);
	return -1;
}

static void check_end(void)
{
	upg.pidfd = safe_close(upg.pidfd);
	upg.out_fd = safe_close(upg.out_fd);
	upg.pid = 0;
	upg.phase = UPGRADE_IDLE;
}

/* The end of an upgrade that did not hand over: everything reads again, the server goes on. */
static void unsupported(struct server *s, const char *why)
{
	struct log_field f[] = { LOG_STR("binary", upg.exe), LOG_STR("reason", why) };

	upgrade_resume(s);
	upg.phase = UPGRADE_IDLE;
	log_event(LOG_WARNING, "upgrade.unsupported", NULL, f, ELEMENTSOF(f),
		  "Upgrade: no hand-over (%s); keeping serving", why);
}

/* The check's answer: its one line, control characters made visible. */
static void check_output(char *out, size_t size)
{
	char raw[CHECK_OUTPUT_MAX];
	ssize_t n = read(upg.out_fd, raw, sizeof(raw) - 1);

	if (n < 0)
		n = 0;
	while (n > 0 && (raw[n - 1] == '\n' || raw[n - 1] == '\r'))
		n--;
	raw[n] = '\0';
	log_text_escape(raw, out, size);
}

/* The blob of one upgrade: its memfd, mapped read-only, and parsed. */
struct built {
	struct upgrade_collected c;
	struct upgrade_state st;
	void *map;
	int fd;
	bool parsed;
};

static void built_done(struct built *b)
{
	if (b->parsed)
		upgrade_state_done(&b->st);
	if (b->map != MAP_FAILED)
		munmap(b->map, b->c.bytes);
	b->fd = safe_close(b->fd);
	b->parsed = false;
	b->map = MAP_FAILED;
}

/*
 * SERIALIZE: the blob made from the live server into a sealed memfd and
 * checked as RESTORE will check it (mapped, parsed, its fds open and of their
 * kinds, the cross-record rules of view.h), its size and cost logged. The
 * hand-over then execs with this same memfd (it is built once). It runs on
 * the loop: the loop pauses for the blob's cost (about a millisecond per MB
 * of retained output, bench/README.md). 0, or -errno with b released.
 */
static int state_build(struct server *s, struct built *b)
{
	char err[256] = "";
	uint64_t t0 = now_ns(), us;
	int r;

	*b = (struct built){ .map = MAP_FAILED, .fd = -1 };
	b->fd = r = upgrade_collect(s, upgrade_restored_upgrades(), upg.quiesce_ns, &b->c);
	if (r < 0) {
		b->fd = -1;
		snprintf(err, sizeof(err), "building it failed: %s", strerror(-r));
	} else {
		/* What RESTORE does: map it read-only, parse, check its fds against our table. */
		b->map = mmap(NULL, b->c.bytes, PROT_READ, MAP_PRIVATE, b->fd, 0);
		r = b->map == MAP_FAILED ? -errno : 0;
		if (r < 0)
			snprintf(err, sizeof(err), "mapping it failed: %s", strerror(-r));
		else
			r = upgrade_state_parse(b->map, b->c.bytes, NULL, &b->st, err, sizeof(err));
		if (r >= 0) {
			struct upgrade_view v;

			b->parsed = true;
			r = upgrade_state_check_fds(&b->st, b->fd, err, sizeof(err));
			if (r >= 0)
				r = upgrade_view_build(&b->st, &v, err, sizeof(err));
			if (r >= 0)
				upgrade_view_done(&v);
		}
	}
	us = (now_ns() - t0) / 1000u;
	if (r < 0) {
		struct log_field f[] = { LOG_STR("error", err) };

		built_done(b);
		/* A bug of the writer or the schema: the hand-over would refuse to go on. */
		log_event(LOG_ERR, "upgrade.state", NULL, f, ELEMENTSOF(f),
			  "Upgrade: the state does not validate: %s", err);
		return r;
	}
	{
		const struct upgrade_collected *c = &b->c;
		struct log_field f[] = {
			LOG_INT("records", c->records), LOG_INT("fds", c->fds), LOG_INT("bytes", c->bytes),
			LOG_INT("sessions", c->sessions), LOG_INT("processes", c->procs),
			LOG_INT("connections", c->conns), LOG_INT("connectionsClosed", c->conns_closed),
			LOG_INT("retainedBytes", c->retained_bytes), LOG_INT("queuedBytes", c->queued_bytes),
			LOG_INT("watches", c->watches), LOG_INT("fsHandles", c->fs_handles),
			LOG_INT("watchQueuedBytes", c->watch_queued_bytes),
			LOG_INT("netproxies", c->netproxies),
			LOG_INT("us", us),
		};

		log_event(LOG_INFO, "upgrade.state", NULL, f, ELEMENTSOF(f),
			  "Upgrade: the state would be %" PRIu64 " records (%" PRIu64 " sessions, %"
			  PRIu64 " processes with %" PRIu64 " bytes of output, %" PRIu64 " connections "
			  "with %" PRIu64 " bytes queued, %" PRIu64 " to close and resume), %" PRIu64
			  " fds, %" PRIu64 " bytes; built, sealed and checked in %" PRIu64 " us",
			  c->records, c->sessions, c->procs, c->retained_bytes, c->conns, c->queued_bytes,
			  c->conns_closed, c->fds, c->bytes, us);
	}
	return 0;
}

/*
 * What keeps this version from handing over (docs/UPGRADE.md, "Next"): it
 * execs an idle server only, a listener and no sessions or connections;
 * anything else resumes and keeps serving. NULL: none.
 */
static const char *handover_blocker(const struct server *s)
{
	const char *why;
	bool transient;

	/*
	 * UEXEC_UPGRADE_DRY_RUN=1: everything but the execve (the check, QUIESCE,
	 * the state built and validated, RESUME): to see on a live server that an
	 * upgrade would go through, and what it would carry, without doing it.
	 */
	if (upg.dry_run)
		return "UEXEC_UPGRADE_DRY_RUN is set";
	why = upgrade_sessions_blocker(s, &transient);
	if (why)
		return why;
	if (!upg.argv)
		return "no argv";
	return NULL;
}

static void set_cloexec(const struct upgrade_state *st, int memfd, bool on)
{
	for (uint32_t i = 0; i < st->n_fds; i++)
		if (st->fds[i] > STDERR_FILENO) /* stdio's 0 and 1 stay as they are */
			(void)fcntl((int)st->fds[i], F_SETFD, on ? FD_CLOEXEC : 0);
	(void)fcntl(memfd, F_SETFD, on ? FD_CLOEXEC : 0);
}

/*
 * EXECVE (docs/UPGRADE.md): FD_CLOEXEC cleared on the blob's memfd and on
 * exactly the fds it names, and the binary at the start path exec'd in this
 * pid with the same argv and UEXEC_UPGRADE_STATE_FD. Returns only if that
 * failed, everything as before.
 */
static void handover(struct built *b)
{
	char num[16], back[48];
	int self = upgrade_rollback_self_fd(), argv_fd = -1, r;

	{
		struct log_field f[] = { LOG_STR("binary", upg.exe), LOG_INT("fds", b->st.n_fds),
					 LOG_INT("bytes", b->c.bytes) };

		log_event(LOG_INFO, "upgrade.exec", NULL, f, ELEMENTSOF(f),
			  "Upgrade: handing %u fds over to %s", b->st.n_fds, upg.exe);
	}
	snprintf(num, sizeof(num), "%d", b->fd);
	upgrade_sandbox_before_exec(upg.srv);
	upgrade_netproxy_before_exec(upg.srv);
	set_cloexec(&b->st, b->fd, false);
	/*
	 * The way back (rollback.c), if the new binary cannot take over: this
	 * binary's file and its argv. Without them the hand-over still goes on.
	 */
	if (self >= 0)
		argv_fd = upgrade_rollback_argv_fd();
	if (argv_fd >= 0) {
		snprintf(back, sizeof(back), "%d:%d:%d", self, b->fd, argv_fd);
		(void)fcntl(self, F_SETFD, 0);
		(void)fcntl(argv_fd, F_SETFD, 0);
	}
	fflush(NULL);
	upgrade_env_secret_put(true); /* remote mode's credential, read again as at a start */
	if (setenv("UEXEC_UPGRADE_STATE_FD", num, 1) < 0 ||
	    (argv_fd >= 0 && setenv("UEXEC_UPGRADE_ROLLBACK", back, 1) < 0))
		r = -errno;
	else
		r = upgrade_exec_main(upg.exe, upg.argv); /* on the main thread (exec-main.c) */
	upgrade_env_secret_put(false);
	(void)unsetenv("UEXEC_UPGRADE_STATE_FD");
	(void)unsetenv("UEXEC_UPGRADE_ROLLBACK");
	if (self >= 0)
		(void)fcntl(self, F_SETFD, FD_CLOEXEC);
	safe_close(argv_fd);
	set_cloexec(&b->st, b->fd, true);
	log_error_errno(r, "Upgrade: execve %s failed; keeping serving", upg.exe);
}

static void on_quiesce_tick(struct uring_timer *t, bool fired)
{
	struct server *s = upg.srv;
	uint64_t us = (now_ns() - upg.quiesce_ns) / 1000u;
	const char *pending;

	if (!fired || upg.phase != UPGRADE_QUIESCING || s->stopping)
		return;
	pending = upgrade_quiesce_pending(s);
	if (!pending && !upg.dry_run && us < QUIESCE_TIMEOUT_MS * 1000u) {
		bool transient;

		/* Something the loop finishes by itself (a worker's job, an exit's grace): wait. */
		if (upgrade_sessions_blocker(s, &transient) && transient) {
			upg.waited = true;
			uring_timer_arm(&s->ring, &upg.timer, QUIESCE_POLL_MS, on_quiesce_tick);
			return;
		}
	}
	if (!pending) {
		struct log_field f[] = { LOG_INT("us", us), LOG_INT("opsCancelled", upg.cancelled) };

		log_event(LOG_INFO, "upgrade.quiesce", NULL, f, ELEMENTSOF(f),
			  "Upgrade: quiesced in %" PRIu64 " us (%u ops cancelled: reads, writes, "
			  "exit waits, stdin writes, accept)", us, upg.cancelled);
		struct built b;
		const char *why = state_build(s, &b) < 0 ? "the state does not validate"
							 : handover_blocker(s);

		if (!why) {
			handover(&b); /* returns only if the execve failed */
			why = "the execve failed";
		}
		built_done(&b);
		unsupported(s, why);
		return;
	}
	if (us >= QUIESCE_TIMEOUT_MS * 1000u) {
		struct log_field f[] = { LOG_INT("us", us), LOG_INT("opsCancelled", upg.cancelled),
					 LOG_STR("pending", pending) };

		log_event(LOG_WARNING, "upgrade.quiesce", NULL, f, ELEMENTSOF(f),
			  "Upgrade: %s still in flight %d ms after QUIESCE began; resuming",
			  pending, QUIESCE_TIMEOUT_MS);
		unsupported(s, "QUIESCE did not finish");
		return;
	}
	/* Waiting on a request let the loop arm new ops (a process it started): cancel those too. */
	if (pending && upg.waited)
		upgrade_quiesce_again(s);
	uring_timer_arm(&s->ring, &upg.timer, QUIESCE_POLL_MS, on_quiesce_tick);
}

/*
 * QUIESCE (docs/UPGRADE.md): no read, write, exit wait or accept re-armed,
 * those in flight cancelled; their completions (bytes read or written and
 * exits reaped meanwhile go through as usual) are waited for on the loop, a
 * millisecond at a time.
 */
static void quiesce_start(struct server *s)
{
	upg.phase = UPGRADE_QUIESCING;
	upg.quiesce_ns = now_ns();
	upg.waited = false;
	upg.cancelled = upgrade_quiesce_start(s);
	uring_timer_arm(&s->ring, &upg.timer, QUIESCE_POLL_MS, on_quiesce_tick);
}

static void on_check_timer(struct uring_timer *t, bool fired)
{
	if (!fired || upg.phase != UPGRADE_CHECKING)
		return;
	upg.timed_out = true;
	(void)syscall(SYS_pidfd_send_signal, upg.pidfd, SIGKILL, NULL, 0);
}

/*
 * What keeps a new binary that cannot read our state from the fallback (a
 * drain, then the new binary started fresh in this pid); NULL: nothing.
 * Under UEXEC_UPGRADE_DRY_RUN nothing is exec'd, so nothing is drained.
 */
static const char *fallback_blocker(const struct server *s)
{
	if (upg.dry_run)
		return "UEXEC_UPGRADE_DRY_RUN is set";
	if (s->draining || s->stopping)
		return "the server is stopping";
	if (!upg.argv)
		return "no argv";
	return NULL;
}

static void on_check_exit(struct uring_op *op, int res, uint32_t flags)
{
	struct server *s = upg.srv;
	siginfo_t si = { 0 };
	char out[CHECK_OUTPUT_MAX], why[64];
	uint64_t ms;
	int status;

	(void)flags;
	if (res < 0 || waitid((idtype_t)P_PIDFD, (id_t)upg.pidfd, &si, WEXITED | WNOHANG) < 0 ||
	    si.si_pid == 0) {
		/* Not gone yet (a spurious wake-up): wait on, so that it is reaped. */
		if (!s->stopping) {
			struct io_uring_sqe *sqe = uring_get_sqe(&s->ring, op, on_check_exit);

			io_uring_prep_poll_add(sqe, upg.pidfd, POLLIN);
		}
		return;
	}
	uring_timer_cancel(&upg.timer);
	ms = (now_ns() - upg.started_ns) / 1000000u;
	check_output(out, sizeof(out));
	status = si.si_code == CLD_EXITED ? si.si_status : -1;
	if (upg.timed_out)
		snprintf(why, sizeof(why), "no answer within %d ms", CHECK_TIMEOUT_MS);
	else if (si.si_code == CLD_EXITED)
		snprintf(why, sizeof(why), "exit status %d", si.si_status);
	else
		snprintf(why, sizeof(why), "killed by %s", sigabbrev_np(si.si_status) ?: "a signal");
	{
		struct log_field f[] = { LOG_STR("binary", upg.exe), LOG_INT("status", status),
					 LOG_STR("answer", out), LOG_INT("ms", ms),
					 LOG_INT("stateVersion", UPGRADE_STATE_VERSION) };

		if (status == 0) {
			log_event(LOG_INFO, "upgrade.check", NULL, f, ELEMENTSOF(f),
				  "Upgrade: %s can take over (%s)", upg.exe, out);
		} else if (status == 1 && fallback_blocker(s)) {
			log_event(LOG_WARNING, "upgrade.check", NULL, f, ELEMENTSOF(f),
				  "Upgrade refused: %s cannot take over (%s); no fallback drain (%s); "
				  "keeping serving", upg.exe, out, fallback_blocker(s));
		} else if (status == 1) {
			log_event(LOG_WARNING, "upgrade.check", NULL, f, ELEMENTSOF(f),
				  "Upgrade: %s cannot take over (%s); falling back to a graceful "
				  "drain, then starting it fresh in this pid", upg.exe, out);
		} else {
			log_event(LOG_WARNING, "upgrade.check", NULL, f, ELEMENTSOF(f),
				  "Upgrade refused: checking %s failed (%s%s%s); keeping serving",
				  upg.exe, why, out[0] ? ": " : "", out);
		}
	}
	check_end();
	if (status == 0 && !s->stopping)
		quiesce_start(s);
	else if (status == 1 && !fallback_blocker(s) &&
		 upgrade_fallback_start(s, upg.exe, upg.argv) < 0)
		log_error("Upgrade: the fallback drain could not start; keeping serving");
}

/* Starts `EXE --check-upgrade VERSION` with its output into a pipe. 0 or -errno (logged). */
static int check_start(struct server *s)
{
	char version[16], *args[4];
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, defaults;
	int pipes[2] = { -1, -1 }, r;
	pid_t pid;

	if (pipe2(pipes, O_CLOEXEC) < 0)
		return log_warning_errno(errno, "Upgrade refused: cannot make a pipe for the check");
	(void)fcntl(pipes[0], F_SETFL, O_NONBLOCK);
	snprintf(version, sizeof(version), "%u", UPGRADE_STATE_VERSION);
	args[0] = upg.exe;
	args[1] = (char *)"--check-upgrade";
	args[2] = version;
	args[3] = NULL;
	/* The server blocks its signals (signalfd) and ignores SIGPIPE: the check gets neither. */
	sigemptyset(&none);
	sigfillset(&defaults);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&attr);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, pipes[1], 1);
	posix_spawn_file_actions_adddup2(&fa, pipes[1], 2);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &defaults);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	r = posix_spawn(&pid, upg.exe, &fa, &attr, args, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	safe_close(pipes[1]);
	if (r != 0) {
		safe_close(pipes[0]);
		return log_warning_errno(r, "Upgrade refused: cannot run %s --check-upgrade; keeping "
					    "serving", upg.exe);
	}
	upg.pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (upg.pidfd < 0) {
		r = -errno;
		(void)kill(pid, SIGKILL);
		(void)waitpid(pid, NULL, 0); /* just killed: returns at once */
		safe_close(pipes[0]);
		return log_warning_errno(r, "Upgrade refused: pidfd_open failed; keeping serving");
	}
	(void)fcntl(upg.pidfd, F_SETFD, FD_CLOEXEC);
	upg.pid = pid;
	upg.out_fd = pipes[0];
	upg.srv = s;
	upg.timed_out = false;
	upg.phase = UPGRADE_CHECKING;
	io_uring_prep_poll_add(uring_get_sqe(&s->ring, &upg.exit_op, on_check_exit), upg.pidfd,
			       POLLIN);
	uring_timer_arm(&s->ring, &upg.timer, CHECK_TIMEOUT_MS, on_check_timer);
	return 0;
}

void upgrade_on_signal(struct server *s)
{
	const char *why = NULL;

	if (s->cfg.fs_helper)
		return; /* a one-request helper has nothing to upgrade */
	if (upg.phase != UPGRADE_IDLE)
		why = "an upgrade is already in progress";
	else if (s->draining)
		why = "the server is draining";
	else if (s->stopping)
		why = "the server is stopping";
	else if (!upg.exe)
		why = "the path uexec was started from is unknown";
	if (why) {
		struct log_field f[] = { LOG_STR("reason", why) };

		log_event(LOG_WARNING, "upgrade.refused", NULL, f, ELEMENTSOF(f),
			  "Received SIGUSR2: upgrade refused, %s", why);
		return;
	}
	{
		struct log_field f[] = { LOG_STR("binary", upg.exe),
					 LOG_INT("stateVersion", UPGRADE_STATE_VERSION) };

		log_event(LOG_INFO, "upgrade.start", NULL, f, ELEMENTSOF(f),
			  "Received SIGUSR2: checking whether %s can take over (state version %u)",
			  upg.exe, UPGRADE_STATE_VERSION);
	}
	upg.started_ns = now_ns();
	(void)check_start(s);
}

void upgrade_done(struct server *s)
{
	siginfo_t si;

	/* Shutting down: a cancelled read is the end of its object again (teardown's meaning). */
	s->quiescing = false;
	if (upg.phase == UPGRADE_CHECKING && upg.pidfd >= 0) {
		(void)syscall(SYS_pidfd_send_signal, upg.pidfd, SIGKILL, NULL, 0);
		(void)waitid((idtype_t)P_PIDFD, (id_t)upg.pidfd, &si, WEXITED); /* killed: at once */
	}
	check_end();
	upg.exe = (free(upg.exe), NULL);
}

/*
 * SIGUSR2 is blocked across the execve, so one sent while the state was
 * being handed over waits pending for the new binary; read from the
 * signalfd it would start a second upgrade as soon as this one ended. It
 * arrived during this upgrade: refused, with the same log line as a second
 * SIGUSR2 during the check.
 */
void upgrade_refuse_pending(void)
{
	const struct timespec now = { 0 };
	sigset_t usr2;

	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	while (sigtimedwait(&usr2, NULL, &now) == SIGUSR2) {
		struct log_field f[] = { LOG_STR("reason", "an upgrade is already in progress") };

		log_event(LOG_WARNING, "upgrade.refused", NULL, f, ELEMENTSOF(f),
			  "Received SIGUSR2 during the hand-over: upgrade refused, an upgrade is "
			  "already in progress");
	}
}
