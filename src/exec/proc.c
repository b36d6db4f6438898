/* SPDX-License-Identifier: MIT */
/*
 * Managed processes: output, retention, exit and teardown. process/read
 * (long polls) and process/write are in proc-rw.c; the denials and
 * sandboxDenied an exit reports in proc-exit-report.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "base64.h"
#include "conn.h"
#include "evidence.h"
#include "log.h"
#include "proc-internal.h"
#include "plan.h"
#include "proc.h"
#include "proxy.h"
#include "rpc.h"
#include "session.h"
#include "sandbox.h"
#include "spawn.h"

static uint8_t pty_scratch[IO_BUF_SIZE];

static void stream_arm(struct proc_stream *st);
static void proc_check_closed(struct proc *p);

/* ---- notifications (written by proc-wire.c) ---- */

/* network/policyDecision of the process's proxy (proxy.h's sink). */
void proc_network_decision(void *owner, const char *tail)
{
	proc_wire_event(owner, "network/policyDecision", tail);
}

/* ---- retention ---- */

int proc_chunk_append(struct proc *p, uint64_t seq, uint8_t stream, const void *data, size_t len)
{
	struct proc_chunk *ch = malloc(sizeof(*ch) + len);

	if (!ch)
		return -ENOMEM;
	ch->seq = seq;
	ch->len = (uint32_t)len;
	ch->stream = stream;
	memcpy(ch->data, data, len);
	list_add_tail(&ch->link, &p->chunks);
	p->retained_bytes += len;
	p->n_chunks++;
	return 0;
}

static void retain(struct proc *p, uint64_t seq, uint8_t stream, const uint8_t *data, size_t len)
{
	if (proc_chunk_append(p, seq, stream, data, len) < 0) {
		log_error_ratelimited("Out of memory retaining output of process '%s'", p->id);
		return;
	}
	while ((p->retained_bytes > PROC_RETAINED_BYTES || p->n_chunks > PROC_RETAINED_CHUNKS) &&
	       p->n_chunks > 1) {
		struct proc_chunk *old = list_first_entry(&p->chunks, struct proc_chunk, link);

		list_del(&old->link);
		p->retained_bytes -= old->len;
		p->n_chunks--;
		free(old);
	}
}

static void publish_output(struct proc *p, uint8_t stream, const uint8_t *data, size_t len)
{
	uint64_t seq = p->next_seq++;
	struct conn *c = proc_conn(p);

	proc_srv(p)->metrics.output_bytes[stream] += len;
	retain(p, seq, stream, data, len);
	if (c)
		proc_wire_output(p, c, seq, stream, data, len);
	proc_wake_waiters(p);
}

/* ---- output streams ---- */

static bool all_streams_eof(const struct proc *p)
{
	for (unsigned i = 0; i < p->n_streams; i++)
		if (!p->streams[i].eof)
			return false;
	return true;
}

static void publish_exited(struct proc *p);

static void stream_eof(struct proc_stream *st)
{
	struct proc *p = st->p;

	if (st->eof)
		return;
	st->eof = true;
	/* A PTY master is the process's stdin too: that one closes it (stdin_close_if_idle). */
	if (st->fd != p->stdin_fd)
		safe_close(st->fd);
	st->fd = -1;
	/* A sandboxed exit waiting for late output: no more output can come now. */
	if (p->reaped && !p->exited && all_streams_eof(p)) {
		uring_timer_cancel(&p->grace);
		publish_exited(p);
		return;
	}
	proc_check_closed(p);
}

static bool should_pause(struct proc_stream *st)
{
	struct conn *c = proc_conn(st->p);

	return c && conn_congested(c);
}

static void on_pipe_read(struct uring_op *op, int res, uint32_t flags)
{
	struct proc_stream *st = container_of(op, struct proc_stream, op);
	struct proc *p = st->p;
	struct server *s = proc_srv(p);

	if (flags & IORING_CQE_F_BUFFER) {
		unsigned bid = uring_cqe_bid(flags);

		if (res > 0)
			publish_output(p, (uint8_t)st->kind, uring_bufs_get(&s->bufs, bid),
				       (size_t)res);
		server_recycle_buf(s, bid);
	}
	if (res == -ENOBUFS) {
		server_wait_for_buf(s, &st->bufwait);
		return;
	}
	if (res <= 0) {
		if (res < 0 && res != -ECANCELED)
			log_debug_errno(res, "Reading output of process '%s' failed", p->id);
		stream_eof(st);
		return;
	}
	stream_arm(st);
}

static void on_pty_ready(struct uring_op *op, int res, uint32_t flags)
{
	struct proc_stream *st = container_of(op, struct proc_stream, op);
	struct proc *p = st->p;

	if (res < 0 && res != -EINTR) {
		stream_eof(st);
		return;
	}
	/* Drain a bounded amount, then let others run. */
	for (int i = 0; i < 16; i++) {
		ssize_t n = read(st->fd, pty_scratch, sizeof(pty_scratch));

		if (n > 0) {
			publish_output(p, STREAM_PTY, pty_scratch, (size_t)n);
			if (should_pause(st))
				break;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		/* EIO: every slave fd is closed; 0: same on some kernels. */
		stream_eof(st);
		return;
	}
	stream_arm(st);
}

static void on_bufs_available(struct buf_waiter *w)
{
	stream_arm(container_of(w, struct proc_stream, bufwait));
}

static void stream_arm(struct proc_stream *st)
{
	struct server *s = proc_srv(st->p);
	struct io_uring_sqe *sqe;

	if (st->eof || st->op.busy || st->fd < 0)
		return;
	if (should_pause(st)) {
		st->paused = true;
		return;
	}
	st->paused = false;
	if (st->kind == STREAM_PTY) {
		/* ttys cannot be read without blocking a kernel worker: poll, then read(2). */
		sqe = uring_get_sqe(&s->ring, &st->op, on_pty_ready);
		io_uring_prep_poll_add(sqe, st->fd, POLLIN);
		return;
	}
	sqe = uring_get_sqe(&s->ring, &st->op, on_pipe_read);
	io_uring_prep_read(sqe, st->fd, NULL, IO_BUF_SIZE, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = BGID_IO;
}

void proc_resume_output(struct proc *p)
{
	for (unsigned i = 0; i < p->n_streams; i++)
		if (p->streams[i].paused)
			stream_arm(&p->streams[i]);
}

/* ---- exit ---- */

static void stdin_close_if_idle(struct proc *p)
{
	if (list_empty(&p->writes))
		p->stdin_fd = safe_close(p->stdin_fd);
}

static void arm_exit(struct proc *p);

static void publish_exited(struct proc *p)
{
	char tail[192], *dtail = NULL;
	json_t *denials = NULL;
	int n;

	/* Its audit records are still being read: published once they are (on_evidence). */
	if (p->ev_waiting) {
		p->ev_exit_pending = true;
		return;
	}
	p->exited = true;
	p->sandbox_denied = p->sandboxed && proc_classify_denial(p);
	if (p->ev_wait.tree) {
		denials = proc_denials_json(p);
		exec_evidence_untrack(p->ev_wait.tree);
		p->ev_wait.tree = NULL;
	}
	if (p->sandbox_denied)
		proc_srv(p)->metrics.sandbox_denied++;
	n = snprintf(tail, sizeof(tail), ",\"seq\":%" PRIu64 ",\"exitCode\":%d,\"sandboxDenied\":%s",
		     p->next_seq, p->exit_code, p->sandbox_denied ? "true" : "false");
	/* Only for a start that asked for timeoutMs: the reference's frame is unchanged. */
	if (p->has_timeout)
		n += snprintf(tail + n, sizeof(tail) - (size_t)n, ",\"timedOut\":%s",
			      p->timed_out ? "true" : "false");
	/* Only for a start that asked for `limits` and got a memory limit (uexec extension). */
	if (p->asked_limits && p->has_cg && p->cg.memory_limited)
		snprintf(tail + n, sizeof(tail) - (size_t)n, ",\"oomKilled\":%s",
			 p->oom_killed ? "true" : "false");
	/* uexec's additive member (README "Protocol extensions"): only when something was denied. */
	if (denials) {
		char *js = json_dumps(denials, JSON_COMPACT);

		if (js && asprintf(&dtail, "%s,\"denials\":%s", tail, js) < 0)
			dtail = NULL;
		free(js);
		json_decref(denials);
	}
	/* Exited in time: nothing left to time out. Timed out: the SIGKILL stage stays armed. */
	if (!p->timed_out)
		uring_timer_cancel(&p->timeout);
	p->exit_seq = p->next_seq++;
	{
		struct log_ctx ctx = { .session = p->sess->id, .process = p->id, .process_len = p->id_len };
		struct log_field lf[] = { LOG_INT("pid", p->pid), LOG_INT("exitCode", p->exit_code),
					  LOG_BOOL("sandboxDenied", p->sandbox_denied) };

		log_event(LOG_DEBUG, "process.exited", &ctx, lf, ELEMENTSOF(lf),
			  "Process '%s' (pid %d) exited with %d%s", p->id, (int)p->pid, p->exit_code,
			  p->sandbox_denied ? " (likely denied by the sandbox)" : "");
	}
	proc_audit_exit(p);
	proc_wire_event(p, "process/exited", dtail ? dtail : tail);
	free(dtail);
	if (!p->tty)
		stdin_close_if_idle(p);
	proc_wake_waiters(p);
	proc_check_closed(p);
}

static void on_grace(struct uring_timer *t, bool fired)
{
	struct proc *p = container_of(t, struct proc, grace);

	if (!p->exited)
		publish_exited(p);
}

/* Every audit record of the exited tree has been read (or the wait timed out). */
static void on_evidence(struct exec_ev_wait *w)
{
	struct proc *p = container_of(w, struct proc, ev_wait);

	p->ev_waiting = false;
	if (p->ev_exit_pending && !p->exited)
		publish_exited(p);
}
static uint64_t mono_ms(void);

static void proc_exited(struct proc *p, const siginfo_t *si)
{
	uint64_t now = mono_ms();

	p->pidfd = safe_close(p->pidfd);
	p->reaped = true;
	if (p->ev_wait.tree) {
		sandbox_evidence_reaped(p->ev_wait.tree);
		p->ev_waiting = exec_evidence_wait(&p->ev_wait, on_evidence);
	}
	server_metrics_exit(&proc_srv(p)->metrics,
			    now > p->started_mono_ms ? now - p->started_mono_ms : 0);
	p->exit_code = si->si_code == CLD_EXITED ? si->si_status : 128 + si->si_status;
	p->term_signal = si->si_code == CLD_EXITED ? 0 : si->si_status;
	proc_cg_exited(p);
	if (p->sandboxed && !all_streams_eof(p)) {
		/*
		 * Like the reference, give in-flight output up to 20 ms to arrive
		 * before judging whether the sandbox denied something (SANDBOX.md
		 * §1); cut short when the last stream ends (stream_eof).
		 */
		uring_timer_arm(&proc_srv(p)->ring, &p->grace, 20, on_grace);
		return;
	}
	publish_exited(p);
}

/* IORING_OP_WAITID completion: the child is reaped and p->siginfo filled. */
static void on_waitid(struct uring_op *op, int res, uint32_t flags)
{
	struct proc *p = container_of(op, struct proc, exit_op);

	if (res < 0) {
		if (res == -EINTR || res == -EAGAIN) {
			arm_exit(p);
			return;
		}
		log_warning_errno_ratelimited(res, "waitid on process '%s' (pid %d) failed", p->id,
					      (int)p->pid);
		p->siginfo.si_code = CLD_KILLED;
		p->siginfo.si_status = SIGKILL;
	}
	proc_exited(p, &p->siginfo);
}

/* Fallback: readable pidfd, then waitid(P_PIDFD, WNOHANG). */
static void on_exit_ready(struct uring_op *op, int res, uint32_t flags)
{
	struct proc *p = container_of(op, struct proc, exit_op);
	siginfo_t si = { 0 };

	if (waitid((idtype_t)P_PIDFD, (id_t)p->pidfd, &si, WEXITED | WNOHANG) < 0) {
		log_warning_ratelimited("waitid on process '%s' (pid %d) failed: %m", p->id,
					(int)p->pid);
		si.si_code = CLD_KILLED;
		si.si_status = SIGKILL;
		si.si_pid = p->pid;
	}
	if (si.si_pid == 0) {
		arm_exit(p); /* spurious wake-up */
		return;
	}
	proc_exited(p, &si);
}

static void arm_exit(struct proc *p)
{
	struct server *s = proc_srv(p);
	struct io_uring_sqe *sqe;

	if (s->ring.has_waitid) {
		/*
		 * IORING_OP_WAITID (6.7+) reaps in the kernel: one completion, no
		 * extra syscall. liburing 2.3 has no prep helper, so fill the SQE as
		 * the kernel ABI defines it: fd = id, len = idtype, file_index =
		 * options, addr2 = siginfo. By pid, not pidfd: a child's pid cannot
		 * be reused before it is reaped, so no descriptor is held for it.
		 */
		sqe = uring_get_sqe(&s->ring, &p->exit_op, on_waitid);
		io_uring_prep_rw(UEXEC_IORING_OP_WAITID, sqe, p->pid, NULL, P_PID, 0);
		sqe->file_index = WEXITED;
		sqe->addr2 = (uint64_t)(uintptr_t)&p->siginfo;
		return;
	}
	sqe = uring_get_sqe(&s->ring, &p->exit_op, on_exit_ready);
	io_uring_prep_poll_add(sqe, p->pidfd, POLLIN);
}

static void proc_check_closed(struct proc *p)
{
	char tail[48];

	if (p->closed || !p->exited)
		return;
	for (unsigned i = 0; i < p->n_streams; i++)
		if (!p->streams[i].eof)
			return;
	p->closed = true;
	uring_timer_cancel(&p->timeout);
	snprintf(tail, sizeof(tail), ",\"seq\":%" PRIu64, p->next_seq);
	p->next_seq++;
	proc_wire_event(p, "process/closed", tail);
	if (p->tty)
		stdin_close_if_idle(p);
	/* Nothing of the sandbox is in use any more: release its mount points. */
	sandbox_plan_free(p->plan);
	p->plan = NULL;
	/* The proxy lives until the process is closed, as the reference's does. */
	netproxy_free(p->netproxy);
	p->netproxy = NULL;
	/* Timed out: what the tree left behind (a setsid daemon) goes too. */
	if (p->timed_out)
		proc_cg_kill(p);
	proc_cg_closed(p);
	proc_wake_waiters(p);
	session_proc_closed(p->sess, p);
}

void proc_kill_group(struct proc *p, int sig)
{
	if (sig == SIGKILL)
		proc_cg_kill(p);
	if (p->closed)
		return;
	/* pid == pgid: the child called setsid(). */
	if (kill(-p->pid, sig) < 0 && errno == ESRCH && p->pidfd >= 0)
		(void)syscall(SYS_pidfd_send_signal, p->pidfd, sig, NULL, 0);
}

/* ---- uexec extensions: timeoutMs, process/resize, process/list ---- */

static void on_timeout(struct uring_timer *t, bool fired)
{
	struct proc *p = container_of(t, struct proc, timeout);
	struct log_ctx ctx = { .session = p->sess->id, .process = p->id, .process_len = p->id_len };
	struct log_field f[2] = { LOG_INT("pid", p->pid) };

	if (!fired || p->closed)
		return;
	if (!p->timed_out) {
		if (p->reaped)
			return; /* exited in time; process/exited is only waiting for late output */
		p->timed_out = true;
		proc_srv(p)->metrics.timeouts++;
		f[1] = LOG_STR("signal", "SIGTERM");
		log_event_ratelimited(LOG_INFO, "process.timeout", &ctx, f, ELEMENTSOF(f),
				      "Session %s: process '%s' (pid %d) timed out: SIGTERM to its "
				      "process group", p->sess->id, p->id, (int)p->pid);
		proc_kill_group(p, SIGTERM);
		uring_timer_arm(&proc_srv(p)->ring, &p->timeout, PROC_TIMEOUT_GRACE_MS, on_timeout);
		return;
	}
	/* Still not closed PROC_TIMEOUT_GRACE_MS after SIGTERM: the group ignored it. */
	f[1] = LOG_STR("signal", "SIGKILL");
	log_event_ratelimited(LOG_INFO, "process.timeout", &ctx, f, ELEMENTSOF(f),
			      "Session %s: process '%s' (pid %d) timed out: SIGKILL to its "
			      "process group", p->sess->id, p->id, (int)p->pid);
	proc_kill_group(p, SIGKILL);
}

void proc_set_timeout(struct proc *p, uint64_t msec)
{
	p->has_timeout = true;
	uring_timer_arm(&proc_srv(p)->ring, &p->timeout, msec, on_timeout);
}

int proc_resize(struct proc *p, unsigned short rows, unsigned short cols)
{
	struct winsize ws = { .ws_row = rows, .ws_col = cols };

	if (!p->tty)
		return -ENOTTY;
	/* The master stays open until process/closed; after the exit nobody would see it. */
	if (p->exited || p->stdin_fd < 0)
		return -ESRCH;
	/* The kernel sends SIGWINCH to the terminal's foreground process group. */
	if (ioctl(p->stdin_fd, TIOCSWINSZ, &ws) < 0)
		return -errno;
	return 0;
}

json_t *proc_describe(const struct proc *p)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "processId", json_stringn(p->id, p->id_len));
	json_object_set_new(o, "state", json_string(p->closed   ? "closed"
						    : p->exited ? "exited"
								: "running"));
	json_object_set_new(o, "pid", json_integer(p->pid));
	json_object_set_new(o, "startedAtMs", json_integer((json_int_t)p->started_at_ms));
	json_object_set_new(o, "tty", json_boolean(p->tty));
	json_object_set_new(o, "exitCode", p->exited ? json_integer(p->exit_code) : json_null());
	json_object_set_new(o, "signal",
			    p->exited && p->term_signal ? json_integer(p->term_signal) : json_null());
	if (p->has_timeout)
		json_object_set_new(o, "timedOut", json_boolean(p->timed_out));
	return o;
}

/* ---- creation and teardown ---- */

static uint64_t mono_ms(void)
{
	struct timespec now;

	(void)clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000;
}

static uint64_t realtime_ms(void)
{
	struct timespec now;

	(void)clock_gettime(CLOCK_REALTIME, &now);
	return (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000;
}

static void stream_init(struct proc *p, struct proc_stream *st, int fd, enum proc_stream_kind k)
{
	st->p = p;
	st->fd = fd;
	st->kind = k;
	st->bufwait.rearm = on_bufs_available;
}

int proc_new(struct session *sess, const char *id, size_t id_len, const struct spawn_result *res,
	     bool tty, bool pipe_stdin, bool sandboxed, struct sandbox_plan *plan,
	     struct proc **ret)
{
	struct proc *p;
	json_t *js;

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->sess = sess;
	p->id = malloc(id_len + 1);
	js = json_stringn(id, id_len);
	p->id_json = js ? json_dumps(js, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
	json_decref(js);
	if (!p->id || !p->id_json) {
		free(p->id);
		free(p->id_json);
		free(p);
		return -ENOMEM;
	}
	memcpy(p->id, id, id_len);
	p->id[id_len] = 0;
	p->id_len = id_len;
	p->id_json_len = strlen(p->id_json);

	p->pid = res->pid;
	p->started_at_ms = realtime_ms();
	p->started_mono_ms = mono_ms();
	/* Only the poll fallback of arm_exit() needs the pidfd. */
	p->pidfd = sess->srv->ring.has_waitid ? safe_close(res->pidfd) : res->pidfd;
	p->tty = tty;
	p->pipe_stdin = pipe_stdin;
	p->sandboxed = sandboxed;
	p->plan = plan;
	/* After CLONE_VFORK returned: the child has its own audit session by now (apply.c). */
	if (sandboxed) {
		p->ev_wait.tree = exec_evidence_track(p->pid);
		sandbox_evidence_set_filter(p->ev_wait.tree, plan ? plan->seccomp : NULL);
	}
	/* A PTY's stdin is its master, also the output stream's fd (stream_eof()). */
	p->stdin_fd = tty ? res->out_fd : res->stdin_fd;
	p->next_seq = 1;
	list_init(&p->chunks);
	list_init(&p->waiters);
	list_init(&p->writes);
	if (tty) {
		stream_init(p, &p->streams[0], res->out_fd, STREAM_PTY);
		p->n_streams = 1;
	} else {
		stream_init(p, &p->streams[0], res->out_fd, STREAM_STDOUT);
		stream_init(p, &p->streams[1], res->err_fd, STREAM_STDERR);
		p->n_streams = 2;
	}

	arm_exit(p);
	*ret = p;
	return 0;
}

/* Starts reading output; called once the process/start reply is queued (§9.2 ordering). */
void proc_start_output(struct proc *p)
{
	for (unsigned i = 0; i < p->n_streams; i++)
		stream_arm(&p->streams[i]);
}

bool proc_is_idle(const struct proc *p)
{
	if (p->exit_op.busy || p->write_op.busy || p->grace.op.busy || p->timeout.op.busy)
		return false;
	for (unsigned i = 0; i < p->n_streams; i++)
		if (p->streams[i].op.busy)
			return false;
	return true;
}


void proc_free(struct proc *p)
{
	struct proc_chunk *ch, *n;

	if (!p)
		return;
	while (!list_empty(&p->waiters)) {
		struct proc_waiter *w = list_first_entry(&p->waiters, struct proc_waiter, plink);

		w->pend.cancel(&w->pend);
	}
	while (!list_empty(&p->writes)) {
		struct proc_write *w = list_first_entry(&p->writes, struct proc_write, plink);

		if (w->pend.conn)
			rpc_pending_end(&w->pend);
		list_del(&w->plink);
		proc_write_free(w);
	}
	list_for_each_entry_safe(ch, n, &p->chunks, link)
		free(ch);
	for (unsigned i = 0; i < p->n_streams; i++) {
		list_del(&p->streams[i].bufwait.link);
		if (p->streams[i].fd != p->stdin_fd)
			safe_close(p->streams[i].fd);
	}
	safe_close(p->pidfd);
	safe_close(p->stdin_fd);
	exec_evidence_cancel(&p->ev_wait);
	exec_evidence_untrack(p->ev_wait.tree);
	proc_cg_free(p);
	sandbox_plan_free(p->plan);
	netproxy_free(p->netproxy);
	for (size_t i = 0; i < p->write_id_count; i++)
		free(p->write_id_ring[(p->write_id_head + i) % PROC_WRITE_IDS]);
	free(p->write_id_ring);
	strmap_done(&p->write_ids);
	free(p->id);
	free(p->id_json);
	free(p);
}
