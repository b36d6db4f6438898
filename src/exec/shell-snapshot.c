/* SPDX-License-Identifier: MIT */
/*
 * Shell snapshots (shell-snapshot.h): the per-session cache, the capture as a
 * child process on the ring (its stdout read with read ops, its exit through
 * a poll of its pidfd, a timer for the deadline), and the launch of a command
 * that replays a snapshot.
 *
 * A request that needs a capture is parked (an rpc_pending) and started
 * again, from the top, once the capture is over: whatever happened meanwhile
 * (a process of the same id, a draining server) is checked again, and the
 * second pass never parks, it takes what the cache holds.
 *
 * The state reaches the command as a sealed memfd opened read-only at
 * SNAP_FD: no file on disk to clean up or to let a sandbox read, no path
 * another process could swap. Landlock does not restrict such an internal
 * file (it is not in any mounted hierarchy); a shell that cannot open
 * /dev/fd/N at all (no /proc in its view) gets the state through the
 * environment instead, as POSIX sh always does (it cannot close a
 * descriptor above 9).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "conn.h"
#include "environ.h"
#include "log.h"
#include "macro.h"
#include "params.h"
#include "rpc.h"
#include "server.h"
#include "session.h"
#include "shell-snapshot.h"
#include "spawn.h"

#define READ_CHUNK 65536

enum entry_state { E_CAPTURING, E_READY, E_FAILED };

struct snap_entry;

struct snap_capture {
	struct list_head link; /* captures: every one, so that shutdown finds those let go of */
	struct snap_entry *e; /* NULL once the entry let go of it (it frees itself when idle) */
	struct server *srv;
	enum snap_shell sh;
	char nonce[33];
	pid_t pid;
	int pidfd, out_fd;
	struct uring_op read_op, exit_op;
	struct uring_timer timer;
	uint8_t *buf;
	size_t len, cap;
	bool eof, exited, failed;
	int status; /* waitid's: exit code, or 128 + signal */
};

struct snap_waiter {
	struct rpc_pending pend;
	struct list_head link; /* entry->waiters */
	json_t *params;
	snap_resume_fn resume;
};

struct snap_entry {
	struct list_head link; /* session->snapshots, least recently used first */
	struct session *ss;
	char *key;
	enum entry_state status;
	enum snap_shell sh;
	unsigned attempts;
	uint64_t retry_at_ms;
	struct snap_capture *cap;
	struct list_head waiters;
	/* E_READY */
	char *state;  /* the script to source */
	size_t state_len;
	int memfd;    /* sealed: "close SNAP_FD" + state; -1: replay through the environment */
	char **env;   /* the captured environment, after the request's envPolicy */
};

static unsigned n_total;     /* entries in the whole server (SNAP_MAX_TOTAL) */
static unsigned n_capturing; /* captures running (SNAP_MAX_CAPTURES): their output is memory */
static struct list_head captures = { &captures, &captures };

static uint64_t now_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int snap_check_scope(json_t *snap, char *err, size_t size)
{
	size_t n = json_string_length(json_object_get(snap, "scopeId"));

	if (n == 0 || n > SNAP_MAX_SCOPE_BYTES) {
		snprintf(err, size, "shell snapshot scope must be non-empty and at most %d bytes",
			 SNAP_MAX_SCOPE_BYTES);
		return -EINVAL;
	}
	return 0;
}

int snap_check_shape(json_t *snap, char *err, size_t size)
{
	static const struct pfield req[] = {
		{ "scopeId", P_STRING, true, NULL },
		{ "shell", P_STRUCT, true, "struct ShellInfo" },
	};
	static const struct pfield shell[] = {
		{ "name", P_STRING, true, NULL },
		{ "path", P_STRING, true, NULL },
	};
	json_t *f[2];

	if (params_decode_nested(snap, "ShellSnapshotRequest", req, ELEMENTSOF(req), f, err, size) < 0 ||
	    params_decode_nested(f[1], "ShellInfo", shell, ELEMENTSOF(shell), f, err, size) < 0)
		return -EINVAL;
	return 0;
}

void snap_apply(struct snap_launch *l, char **argv, char ***envp, struct spawn_args *sa)
{
	argv[1] = (char *)l->flag;
	argv[2] = l->script;
	environ_strv_free(*envp);
	sa->envp = *envp = TAKE_PTR(l->env);
	sa->extra_fd = l->fd > 0 ? l->fd : 0;
	sa->extra_fd_at = SNAP_FD;
}

void snap_launch_done(struct snap_launch *l)
{
	free(l->script);
	l->script = NULL;
	environ_strv_free(l->env);
	l->env = NULL;
	l->fd = safe_close(l->fd);
}

/* ---- the capture child ---- */

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

static void entry_captured(struct snap_entry *e, struct snap_capture *cap);

/*
 * Moves the capture on: hands a finished one (or a failed one, at once) to
 * its entry; frees one nobody holds once its ops are over. A failed child is
 * killed with its process group, and its pipe read cancelled: a daemon a
 * startup file left behind may hold the pipe open.
 */
static void capture_step(struct snap_capture *cap)
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
		entry_captured(e, cap);
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
	capture_step(cap);
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
	capture_step(cap);
}

static void on_timeout(struct uring_timer *t, bool fired)
{
	struct snap_capture *cap = container_of(t, struct snap_capture, timer);

	if (fired && cap->e) {
		log_warning_ratelimited("Session %s: shell snapshot capture timed out after %d ms",
					cap->e->ss->id, SNAP_TIMEOUT_MS);
		cap->failed = true;
	}
	capture_step(cap);
}

/* A sealed memfd holding data: a snapshot, or (empty) the probe a capture opens through /dev/fd. */
static int sealed_memfd(const char *data, size_t len)
{
	_cleanup_close_ int fd = memfd_create("uexec-shell-snapshot", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	size_t off = 0;

	if (fd < 0)
		return -errno;
	while (off < len) {
		ssize_t n = write(fd, data + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		off += (size_t)n;
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0)
		return -errno;
	return TAKE_FD(fd);
}

/* A read-only open file description of its own (the command must not share an offset). */
static int reopen_ro(int fd)
{
	char path[64];
	int r;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	r = open(path, O_RDONLY | O_CLOEXEC);
	return r < 0 ? -errno : r;
}

/*
 * Starts `<argv0> -lc <capture script>` as the command would start (program,
 * arg0, environment, cwd, sandbox), with stdin and stderr on /dev/null and
 * stdout a pipe, in a process group of its own.
 */
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

static int capture_start(struct snap_entry *e, struct conn *c, json_t *process_id,
			 const struct spawn_args *sa)
{
	struct server *srv = c->srv;
	struct spawn_args ca = *sa;
	struct spawn_result res;
	struct snap_capture *cap;
	uint8_t rnd[16];
	char *script = NULL, **argv = NULL;
	size_t argc = 0;
	int r, probe = -1, devnull = -1;

	if (n_capturing >= SNAP_MAX_CAPTURES)
		return -EBUSY;
	cap = calloc(1, sizeof(*cap));
	if (!cap)
		return -ENOMEM;
	n_capturing++;
	list_add_tail(&cap->link, &captures);
	cap->pidfd = cap->out_fd = -1;
	cap->srv = srv;
	cap->sh = e->sh;
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) {
		r = -EIO;
		goto fail;
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(cap->nonce + 2 * i, 3, "%02x", rnd[i]);
	while (sa->argv[argc])
		argc++;
	script = snap_capture_script(e->sh, cap->nonce);
	argv = calloc(argc + 1, sizeof(char *));
	if (!script || !argv) {
		r = -ENOMEM;
		goto fail;
	}
	memcpy(argv, sa->argv, argc * sizeof(char *));
	argv[2] = script;
	/* sh cannot close fd 16: it always gets the state through the environment. */
	r = probe = e->sh == SNAP_SH ? 0 : sealed_memfd("", 0);
	if (r < 0)
		goto fail;
	devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (devnull < 0) {
		r = -errno;
		goto fail;
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
	r = spawn_process(&ca, &res, NULL);
	if (r < 0)
		goto fail;
	audit_capture(c, process_id, sa, res.pid);
	safe_close(res.stdin_fd);
	safe_close(res.err_fd);
	cap->pid = res.pid;
	cap->pidfd = res.pidfd;
	cap->out_fd = res.out_fd;
	cap->e = e;
	e->cap = cap;
	capture_read(cap);
	{
		struct io_uring_sqe *sqe = uring_get_sqe(&srv->ring, &cap->exit_op, on_exit_ready);

		io_uring_prep_poll_add(sqe, cap->pidfd, POLLIN);
	}
	uring_timer_arm(&srv->ring, &cap->timer, SNAP_TIMEOUT_MS, on_timeout);
	r = 0;
	cap = NULL;
fail:
	if (probe > 0)
		safe_close(probe);
	safe_close(devnull);
	free(script);
	free(argv);
	if (cap)
		capture_free(cap);
	return r;
}

/* ---- the cache ---- */

static void waiter_free(struct snap_waiter *w)
{
	json_decref(w->params);
	free(w);
}

static void waiter_cancel(struct rpc_pending *pend)
{
	struct snap_waiter *w = container_of(pend, struct snap_waiter, pend);

	list_del(&w->link);
	rpc_pending_end(&w->pend);
	waiter_free(w);
}

/* The connection closed while its request was being started again: end it, free it later. */
static void waiter_cancel_waking(struct rpc_pending *pend)
{
	rpc_pending_end(pend);
}

/* Hands each parked request back to process/start (which will not park it again). */
static void entry_wake(struct snap_entry *e)
{
	struct list_head todo;

	list_init(&todo);
	list_splice_tail(&e->waiters, &todo);
	while (!list_empty(&todo)) {
		struct snap_waiter *w = list_first_entry(&todo, struct snap_waiter, link);
		json_t *id = json_incref(w->pend.id);

		list_del(&w->link);
		w->pend.cancel = waiter_cancel_waking;
		/* Replied while still pending: its errors count for process/start. */
		w->resume(w->pend.conn, id, w->params);
		if (w->pend.conn)
			rpc_pending_end(&w->pend);
		json_decref(id);
		waiter_free(w);
	}
}

/* Splits env -0 output into a strv of NAME=value entries, dropping what is not one. */
static int parse_env(const char *s, size_t n, char ***ret)
{
	size_t count = 0, k = 0;
	char **v;

	for (size_t i = 0; i < n; i++)
		count += s[i] == 0;
	v = calloc(count + 2, sizeof(char *));
	if (!v)
		return -ENOMEM;
	while (n > 0) {
		const char *z = memchr(s, 0, n);
		size_t ln = z ? (size_t)(z - s) : n;
		const char *eq = memchr(s, '=', ln);

		/* PWD and OLDPWD are the capture's, not the command's. */
		if (eq && eq != s && !(eq - s == 3 && memcmp(s, "PWD", 3) == 0) &&
		    !(eq - s == 6 && memcmp(s, "OLDPWD", 6) == 0)) {
			v[k] = strndup(s, ln);
			if (!v[k]) {
				environ_strv_free(v);
				return -ENOMEM;
			}
			k++;
		}
		s += ln + (z ? 1 : 0);
		n -= ln + (z ? 1 : 0);
	}
	*ret = v;
	return 0;
}

static int entry_fill(struct snap_entry *e, struct snap_capture *cap, json_t *env_policy)
{
	struct snap_sections sec;
	char **env = NULL;
	int r;

	r = snap_parse_sections(cap->sh, (const char *)cap->buf, cap->len, cap->nonce, &sec);
	if (r < 0)
		return r;
	e->state = snap_render_state(cap->sh, &sec, &e->state_len);
	if (!e->state)
		return -ENOMEM;
	if (e->state_len + sec.len[SNAP_SEC_ENV] > SNAP_MAX_BYTES)
		return -E2BIG;
	r = parse_env(sec.part[SNAP_SEC_ENV], sec.len[SNAP_SEC_ENV], &env);
	if (r >= 0)
		r = environ_filter_policy(env, env_policy, &e->env);
	environ_strv_free(env);
	if (r < 0)
		return r;
	e->memfd = -1;
	if (sec.fd_ok && cap->sh != SNAP_SH) {
		char head[96];
		/* zsh reads only one digit before a redirection: its {var} form for fd 16. */
		int n = cap->sh == SNAP_ZSH
				? snprintf(head, sizeof(head), "__uexec_snapshot_fd=%d\nexec "
					   "{__uexec_snapshot_fd}<&-\nunset __uexec_snapshot_fd\n", SNAP_FD)
				: snprintf(head, sizeof(head), "\\exec %d<&-\n", SNAP_FD);
		char *all = malloc((size_t)n + e->state_len);

		if (!all)
			return -ENOMEM;
		memcpy(all, head, (size_t)n);
		memcpy(all + n, e->state, e->state_len);
		e->memfd = sealed_memfd(all, (size_t)n + e->state_len);
		free(all);
		if (e->memfd < 0)
			e->memfd = -1; /* replayed through the environment */
	}
	return 0;
}

/* A capture is over: the entry holds a snapshot, or a failure to retry later. */
static void entry_captured(struct snap_entry *e, struct snap_capture *cap)
{
	/* The key is [scope, shell, path, cwd, envPolicy, sandbox]: the policy filters the env. */
	json_t *key = json_loads(e->key, 0, NULL);
	int r = -EBADMSG;

	if (!cap->failed && key)
		r = entry_fill(e, cap, json_array_get(key, 4));
	json_decref(key);
	if (r >= 0) {
		e->status = E_READY;
	} else {
		struct log_ctx ctx = { .session = e->ss->id };
		struct log_field lf[] = { LOG_INT("attempt", e->attempts), LOG_INT("status", cap->status),
					  LOG_INT("bytes", cap->len) };

		free(e->state);
		e->state = NULL;
		e->state_len = 0;
		environ_strv_free(e->env);
		e->env = NULL;
		e->memfd = safe_close(e->memfd);
		e->status = E_FAILED;
		e->retry_at_ms = now_ms() + SNAP_RETRY_MS;
		log_event_ratelimited(LOG_INFO, "shellSnapshot.captureFailed", &ctx, lf, ELEMENTSOF(lf),
				      "Session %s: shell snapshot capture failed (attempt %u, status %d, "
				      "%zu bytes): its commands run without one",
				      e->ss->id, e->attempts, cap->status, cap->len);
	}
	entry_wake(e);
}

static void entry_free(struct snap_entry *e)
{
	struct snap_waiter *w, *n;

	list_for_each_entry_safe(w, n, &e->waiters, link)
		waiter_cancel(&w->pend);
	if (e->cap && e->cap->srv->stopping) {
		e->cap->e = NULL; /* snap_shutdown() reaps it */
	} else if (e->cap) {
		/* Killed; it frees itself once its ops are over. */
		e->cap->e = NULL;
		e->cap->failed = true;
		capture_step(e->cap);
	}
	list_del(&e->link);
	n_total--;
	free(e->key);
	free(e->state);
	safe_close(e->memfd);
	environ_strv_free(e->env);
	free(e);
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

void snap_session_free(struct session *ss)
{
	while (!list_empty(&ss->snapshots))
		entry_free(list_first_entry(&ss->snapshots, struct snap_entry, link));
}

/*
 * Room for one more entry: the least recently used one that no capture
 * holds goes. Returns false when every entry is busy capturing.
 */
static bool make_room(struct session *ss)
{
	struct snap_entry *e;
	unsigned n = 0;

	list_for_each_entry(e, &ss->snapshots, link)
		n++;
	if (n < SNAP_MAX_ENTRIES && n_total < SNAP_MAX_TOTAL)
		return true;
	list_for_each_entry(e, &ss->snapshots, link)
		if (e->status != E_CAPTURING) {
			entry_free(e);
			return true;
		}
	return false;
}

/* What identifies a snapshot: the scope, the shell, and what the capture ran under. */
static char *make_key(const struct snap_start *st)
{
	json_t *shell = json_object_get(st->snap, "shell"), *a;
	char *k;

	a = json_pack("[OOOOOO]", json_object_get(st->snap, "scopeId"), json_object_get(shell, "name"),
		      json_object_get(shell, "path"), st->cwd ? st->cwd : json_null(),
		      st->env_policy ? st->env_policy : json_null(),
		      st->sandbox ? st->sandbox : json_null());
	if (!a)
		return NULL;
	k = json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	json_decref(a);
	return k;
}

static const char *const restore_flags[] = { [SNAP_BASH] = "-pc", [SNAP_ZSH] = "-fc", [SNAP_SH] = "-c" };
/* Startup files the flag skipped stay skipped; what the flag changed is put back. */
static const char *const restore_prefix[] = {
	[SNAP_BASH] = "set +o privileged\n", [SNAP_ZSH] = "setopt RCS\n", [SNAP_SH] = "",
};

static int add_env(char ***envp, const char *name, const char *val, size_t len)
{
	size_t n = 0, nl = strlen(name);
	char **v, *s;

	while ((*envp)[n])
		n++;
	s = malloc(nl + 1 + len + 1);
	v = s ? realloc(*envp, (n + 2) * sizeof(char *)) : NULL;
	if (!v) {
		free(s);
		return -ENOMEM;
	}
	memcpy(s, name, nl);
	s[nl] = '=';
	memcpy(s + nl + 1, val, len);
	s[nl + 1 + len] = 0;
	v[n] = s;
	v[n + 1] = NULL;
	*envp = v;
	return 0;
}

/*
 * The launch of a command with a ready snapshot: the request's environment
 * under the captured one (the request's own names win), and a script that
 * restores the state, then runs the command.
 */
static int build_launch(struct snap_entry *e, const struct snap_start *st,
			const struct spawn_args *sa, struct snap_launch *l)
{
	char restore[4096], name[64];
	const char *cmd = json_string_value(json_array_get(st->argv, 2));
	size_t cl = json_string_length(json_array_get(st->argv, 2));
	int r, n;

	*l = (struct snap_launch){ .fd = -1, .flag = restore_flags[e->sh] };
	r = environ_overlay(sa->envp, e->env, st->env, &l->env);
	if (r < 0)
		return r;
	if (e->memfd >= 0)
		l->fd = reopen_ro(e->memfd);
	if (l->fd >= 0) {
		snprintf(restore, sizeof(restore), ". /dev/fd/%d", SNAP_FD);
	} else {
		/* Through the environment, in chunks under the kernel's limit on one string. */
		size_t nchunks = (e->state_len + SNAP_ENV_CHUNK - 1) / SNAP_ENV_CHUNK, o;

		o = (size_t)snprintf(restore, sizeof(restore), "eval \"unset");
		for (size_t i = 0; i < nchunks && o < sizeof(restore); i++)
			o += (size_t)snprintf(restore + o, sizeof(restore) - o,
					      " __CODEX_SHELL_SNAPSHOT_STATE_%zu", i);
		o += (size_t)snprintf(restore + o, o < sizeof(restore) ? sizeof(restore) - o : 0, "\n");
		for (size_t i = 0; i < nchunks && o < sizeof(restore); i++)
			o += (size_t)snprintf(restore + o, sizeof(restore) - o,
					      "${__CODEX_SHELL_SNAPSHOT_STATE_%zu}", i);
		o += (size_t)snprintf(restore + o, o < sizeof(restore) ? sizeof(restore) - o : 0, "\"");
		if (o >= sizeof(restore))
			return -E2BIG;
		for (size_t i = 0; i < nchunks; i++) {
			size_t off = i * SNAP_ENV_CHUNK, len = e->state_len - off;

			snprintf(name, sizeof(name), "__CODEX_SHELL_SNAPSHOT_STATE_%zu", i);
			r = add_env(&l->env, name, e->state + off, len < SNAP_ENV_CHUNK ? len : SNAP_ENV_CHUNK);
			if (r < 0)
				return r;
		}
	}
	n = snprintf(NULL, 0, "%sif ! %s >/dev/null; then printf 'failed to restore shell snapshot\\n' >&2; fi\n",
		     restore_prefix[e->sh], restore);
	l->script = malloc((size_t)n + cl + 1);
	if (!l->script)
		return -ENOMEM;
	snprintf(l->script, (size_t)n + 1,
		 "%sif ! %s >/dev/null; then printf 'failed to restore shell snapshot\\n' >&2; fi\n",
		 restore_prefix[e->sh], restore);
	memcpy(l->script + n, cmd, cl);
	l->script[(size_t)n + cl] = 0;
	return 0;
}

static int park(struct conn *c, json_t *id, struct snap_entry *e, json_t *params, snap_resume_fn resume)
{
	struct snap_waiter *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->params = json_incref(params);
	w->resume = resume;
	list_add_tail(&w->link, &e->waiters);
	rpc_pending_start(&w->pend, c, id, waiter_cancel);
	return 0;
}

static bool str_is(json_t *v, const char *s)
{
	return json_is_string(v) && json_string_length(v) == strlen(s) && strcmp(json_string_value(v), s) == 0;
}

enum snap_result snap_prepare(struct conn *c, json_t *id, const struct snap_start *st,
			      const struct spawn_args *sa, bool may_park, snap_resume_fn resume,
			      struct snap_launch *ret)
{
	static const char *const names[] = { [SNAP_BASH] = "bash", [SNAP_ZSH] = "zsh", [SNAP_SH] = "sh" };
	struct session *ss = c->sess;
	json_t *shell = json_object_get(st->snap, "shell"), *name = json_object_get(shell, "name");
	json_t *path = json_object_get(shell, "path");
	struct snap_entry *e, *found = NULL;
	enum snap_shell sh = SNAP_BASH;
	char *key;
	size_t i;
	int r;

	/* Only `<shell.path> -lc <command> [args]`: anything else runs as it is. */
	if (json_array_size(st->argv) < 3 || !json_equal(json_array_get(st->argv, 0), path) ||
	    !str_is(json_array_get(st->argv, 1), "-lc"))
		return SNAP_NONE;
	for (i = 0; i < ELEMENTSOF(names) && !str_is(name, names[i]); i++)
		;
	if (i == ELEMENTSOF(names)) {
		rpc_reply_error_quoted(c, id, RPC_INVALID_PARAMS, "shell snapshots are unsupported for shell `",
				       name, "`");
		return SNAP_ERROR;
	}
	sh = (enum snap_shell)i;
	key = make_key(st);
	if (!key || strlen(key) > SNAP_MAX_KEY_BYTES) {
		free(key);
		return SNAP_NONE;
	}
	list_for_each_entry(e, &ss->snapshots, link)
		if (strcmp(e->key, key) == 0) {
			found = e;
			break;
		}
	if (found) {
		free(key);
		/* Most recently used last. */
		list_del(&found->link);
		list_add_tail(&found->link, &ss->snapshots);
		if (found->status == E_READY) {
			r = build_launch(found, st, sa, ret);
			if (r < 0) {
				snap_launch_done(ret);
				return SNAP_NONE;
			}
			return SNAP_APPLY;
		}
		if (!may_park)
			return SNAP_NONE;
		if (found->status == E_FAILED) {
			if (found->attempts >= SNAP_MAX_ATTEMPTS || now_ms() < found->retry_at_ms)
				return SNAP_NONE;
			found->attempts++;
			r = capture_start(found, c, json_object_get(st->params, "processId"), sa);
			if (r == -EBUSY)
				found->attempts--; /* too many captures at once: not this key's fault */
			if (r < 0) {
				found->retry_at_ms = now_ms() + SNAP_RETRY_MS;
				return SNAP_NONE;
			}
			found->status = E_CAPTURING;
		}
		return park(c, id, found, st->params, resume) < 0 ? SNAP_NONE : SNAP_PARKED;
	}
	if (!may_park || !make_room(ss)) {
		free(key);
		return SNAP_NONE;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		free(key);
		return SNAP_NONE;
	}
	e->ss = ss;
	e->key = key;
	e->sh = sh;
	e->memfd = -1;
	e->attempts = 1;
	e->status = E_CAPTURING;
	list_init(&e->waiters);
	list_add_tail(&e->link, &ss->snapshots);
	n_total++;
	r = capture_start(e, c, json_object_get(st->params, "processId"), sa);
	if (r == -EBUSY) {
		/* Too many captures at once: this command runs as asked, a later one captures. */
		entry_free(e);
		return SNAP_NONE;
	}
	if (r < 0) {
		/* Cannot even start (the program is missing?): the command itself will say so. */
		e->status = E_FAILED;
		e->retry_at_ms = now_ms() + SNAP_RETRY_MS;
		return SNAP_NONE;
	}
	if (park(c, id, e, st->params, resume) < 0)
		return SNAP_NONE;
	return SNAP_PARKED;
}
