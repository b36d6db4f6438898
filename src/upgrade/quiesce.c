/* SPDX-License-Identifier: MIT */
/*
 * QUIESCE and its reversal (docs/UPGRADE.md): no read of a connection or a
 * process stays in flight, so that no byte taken from a socket or a pipe can
 * be lost by an execve, and the state the blob records is the whole state.
 * server->quiescing keeps reads from being re-armed and makes a cancelled
 * read a pause rather than the end of its connection or stream (conn.c,
 * proc.c); resuming re-arms them. Writes, exits, timers and the listener are
 * not quiesced yet (docs/UPGRADE.md, "Every ring op and timer").
 */
#include "conn-ops.h" /* conn_arm_read(): arms, dispatches nothing (no list changes) */
#include "conn.h"
#include "proc.h"
#include "session.h"
#include "upgrade-internal.h"

unsigned upgrade_quiesce_start(struct server *s)
{
	struct session *ss;
	struct conn *c;
	struct proc *p;
	unsigned n = 0;

	s->quiescing = true;
	list_for_each_entry(c, &s->conns, link)
		if (c->read_op.busy) {
			uring_cancel(&s->ring, &c->read_op);
			n++;
		}
	list_for_each_entry(ss, &s->sessions, link)
		list_for_each_entry(p, &ss->procs_list, link)
			for (unsigned i = 0; i < p->n_streams; i++)
				if (p->streams[i].op.busy) {
					uring_cancel(&s->ring, &p->streams[i].op);
					n++;
				}
	return n;
}

bool upgrade_quiesced(const struct server *s)
{
	const struct session *ss;
	const struct conn *c;
	const struct proc *p;

	list_for_each_entry(c, &s->conns, link)
		if (c->read_op.busy)
			return false;
	list_for_each_entry(ss, &s->sessions, link)
		list_for_each_entry(p, &ss->procs_list, link)
			for (unsigned i = 0; i < p->n_streams; i++)
				if (p->streams[i].op.busy)
					return false;
	return true;
}

void upgrade_resume(struct server *s)
{
	struct session *ss;
	struct conn *c;
	struct proc *p;

	if (!s->quiescing)
		return;
	s->quiescing = false;
	list_for_each_entry(c, &s->conns, link)
		conn_arm_read(c);
	list_for_each_entry(ss, &s->sessions, link)
		list_for_each_entry(p, &ss->procs_list, link)
			proc_resume_output(p);
}
