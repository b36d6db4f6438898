/* SPDX-License-Identifier: MIT */
/*
 * QUIESCE and its reversal (docs/UPGRADE.md): no read of a connection or a
 * process stays in flight, so that no byte taken from a socket or a pipe can
 * be lost by an execve, and the state the blob records is the whole state.
 * server->quiescing keeps connections' reads and writes, processes' reads,
 * exit waits and stdin writes and the listener's accept from being re-armed and makes a
 * cancelled one a pause rather than the end of its connection, stream or
 * process (conn.c, proc.c, proc-rw.c, listener.c); resuming re-arms them.
 * Timers and requests answered later are not quiesced yet (docs/UPGRADE.md,
 * "Every ring op and timer").
 */
#include <limits.h>

#include "conn-ops.h" /* conn_arm_read(), conn_flush(): arm, dispatch nothing (no list changes) */
#include "conn.h"
#include "evidence-ring.h"
#include "netconn.h"
#include "proc.h"
#include "session.h"
#include "shell-snapshot-internal.h" /* a capture in flight (struct snap_entry) */
#include "upgrade-internal.h"

/*
 * Cancels every read, write, exit wait and the accept in flight; again at
 * each tick of QUIESCE, for what the loop armed meanwhile (a process a
 * request started while QUIESCE waited for it arms its exit wait): a second
 * cancel of an op whose first is still under way is answered -EALREADY, and
 * is harmless.
 */
static unsigned cancel_all(struct server *s)
{
	struct session *ss;
	struct conn *c;
	struct proc *p;
	unsigned n = 0;

	/* New connections wait in the listening socket's backlog meanwhile. */
	if (s->accept_op.busy) {
		uring_cancel(&s->ring, &s->accept_op);
		n++;
	}
	list_for_each_entry(c, &s->conns, link) {
		if (c->read_op.busy) {
			uring_cancel(&s->ring, &c->read_op);
			n++;
		}
		/*
		 * A write waiting for room in the socket: cancelled, its bytes stay
		 * queued (a write that wrote some completes with that count instead).
		 * A relay-carried connection's owner pulls its output itself.
		 */
		if (c->write_op.busy) {
			uring_cancel(&s->ring, &c->write_op);
			n++;
		}
	}
	list_for_each_entry(ss, &s->sessions, link)
		list_for_each_entry(p, &ss->procs_list, link) {
			for (unsigned i = 0; i < p->n_streams; i++)
				if (p->streams[i].op.busy) {
					uring_cancel(&s->ring, &p->streams[i].op);
					n++;
				}
			/* A child that exits meanwhile stays a zombie until the wait is re-armed. */
			if (p->exit_op.busy) {
				uring_cancel(&s->ring, &p->exit_op);
				n++;
			}
			/* A stdin write waiting for room in the pipe or PTY: it stays queued. */
			if (p->write_op.busy) {
				uring_cancel(&s->ring, &p->write_op);
				n++;
			}
			/* Its proxy's accepts: new connections wait in the backlogs. */
			n += upgrade_quiesce_netproxy(p);
		}
	return n;
}

unsigned upgrade_quiesce_start(struct server *s)
{
	struct session *ss;
	struct proc *p;

	s->quiescing = true;
	/*
	 * Long polls (process/read with waitMs) are answered now with what there
	 * is, as at their deadline: the replies travel in their connection's
	 * queued output, and the client polls again.
	 */
	list_for_each_entry(ss, &s->sessions, link)
		list_for_each_entry(p, &ss->procs_list, link)
			proc_answer_waiters(p);
	upgrade_remote_quiesce(s, true); /* the relay link closes (remote.c) */
	return cancel_all(s);
}

void upgrade_quiesce_again(struct server *s)
{
	(void)cancel_all(s);
}

const char *upgrade_quiesce_pending(const struct server *s)
{
	const struct session *ss;
	const struct conn *c;
	const struct proc *p;

	if (s->accept_op.busy)
		return "the listener's accept";
	list_for_each_entry(c, &s->conns, link)
		if (c->read_op.busy || c->write_op.busy)
			return "a connection's read or write";
	list_for_each_entry(ss, &s->sessions, link)
		list_for_each_entry(p, &ss->procs_list, link) {
			for (unsigned i = 0; i < p->n_streams; i++)
				if (p->streams[i].op.busy)
					return "a process's output read";
			if (p->exit_op.busy)
				return "a process's exit wait";
			if (p->write_op.busy)
				return "a process's stdin write";
			if (upgrade_netproxy_pending(p))
				return "a managed network's accept";
		}
	/*
	 * Audit lines queued at the execve would be lost (the new binary reopens
	 * the file by path): the loop writes them out first (server_audit_run()
	 * at the end of each iteration; nothing new is requested meanwhile).
	 */
	if (!server_audit_idle(&s->audit))
		return "the audit log's writes";
	/* The relay link's sockets (remote.c), released once their ops are done. */
	if (netconn_any_closing(s))
		return "outbound connections closing";
	return upgrade_evidence_pending(s); /* last: see adopt-evidence.c */
}

void upgrade_resume(struct server *s)
{
	struct session *ss;
	struct conn *c;
	struct proc *p;

	if (!s->quiescing)
		return;
	s->quiescing = false;
	exec_evidence_resume();
	upgrade_remote_quiesce(s, false);
	/*
	 * The accept is re-armed by the loop (src/main/server.c), as after a
	 * pause for lack of fds: it resumes a paused accept at its next iteration
	 * once n_conns < accept_paused_conns. No library calls into src/main.
	 */
	if (s->listen_fd >= 0 && !s->accept_op.busy && !s->accept_paused && !s->draining &&
	    !s->stopping) {
		s->accept_paused = true;
		s->accept_paused_conns = UINT_MAX;
	}
	list_for_each_entry(c, &s->conns, link) {
		conn_arm_read(c);
		if (!c->ops->flush) /* a carried connection's owner pulls its output */
			conn_flush(c);
	}
	list_for_each_entry(ss, &s->sessions, link)
		list_for_each_entry(p, &ss->procs_list, link) {
			proc_resume_output(p);
			proc_resume_exit(p);
			proc_resume_stdin(p);
			upgrade_resume_netproxy(p);
		}
}

const char *upgrade_sessions_blocker(const struct server *s, bool *transient)
{
	const struct session *ss;
	const struct conn *c;
	const struct proc *p;
	const char *later = NULL;
	const struct rpc_pending *pend;

	/*
	 * What cannot change while the loop is quiesced (reads, writes and exit
	 * waits are stopped) keeps the dry run at once; what the loop finishes
	 * meanwhile (a worker's fs job, a request's network I/O, a shell snapshot
	 * capture, an exit's 20 ms grace or its evidence) is waited for, up to
	 * QUIESCE's deadline: *transient says which.
	 */
	*transient = false;
	list_for_each_entry(c, &s->conns, link) {
		/*
		 * TLS: OpenSSL's state cannot move; it closes at the execve, its
		 * session resumable. Relay-carried: QUIESCE closed the link
		 * (remote.c); the connection goes, its session resumable.
		 */
		if (c->transport == CONN_CARRIED)
			continue;
		if (c->state != CONN_OPEN)
			return "a connection in its HTTP exchange or closing";
		if (c->ws._in_message)
			return "a connection in the middle of a fragmented message";
		if (!list_empty(&c->calls) || c->mem_paused)
			return "a connection waiting for its client (a review, or over its budget)";
		if (c->mem_charged)
			later = "a connection with requests in flight";
		/* Queued stdin writes travel in the blob with their replies; anything else is waited for. */
		list_for_each_entry(pend, &c->pending, link)
			if (!proc_pending_is_write(pend))
				later = "a connection with requests in flight";
	}
	list_for_each_entry(ss, &s->sessions, link) {
		const struct snap_entry *e;

		/* Killed, its processes not all reaped yet: they would be nobody's zombies. */
		if (ss->expired)
			return "an expired session whose processes are still being reaped";
		/* Shell snapshots are a cache the new binary recaptures; a capture is a child. */
		list_for_each_entry(e, &ss->snapshots, link)
			if (e->cap)
				later = "a shell snapshot being captured";
		list_for_each_entry(p, &ss->procs_list, link) {
			bool np_transient;
			/* Its proxy travels; its connections in flight are waited for. */
			const char *np_why = upgrade_netproxy_blocker(p, &np_transient);

			if (np_why && !np_transient)
				return np_why;
			if (np_why)
				later = np_why;
			if (!list_empty(&p->waiters))
				later = "a process with a read waiting";
			if ((p->reaped && !p->exited) || p->grace.armed || p->ev_waiting)
				later = "a process whose exit is being published";
		}
	}
	/* Sandbox mount points: once the requests that may hold some are done. */
	if (!later)
		return upgrade_sandbox_blocker(s);
	*transient = true;
	return later;
}
