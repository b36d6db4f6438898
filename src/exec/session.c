/* SPDX-License-Identifier: MIT */
/*
 * Sessions: creation, attach/detach, the resume window, and teardown.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conn.h"
#include "log.h"
#include "proc.h"
#include "session.h"
#include "shell-snapshot.h"

static void uuid_v4(char out[37])
{
	uint8_t b[16];
	size_t got = 0;

	while (got < sizeof(b)) {
		ssize_t n = getrandom(b + got, sizeof(b) - got, 0);
		if (n > 0)
			got += (size_t)n;
		else if (n < 0 && errno != EINTR)
			abort(); /* no entropy source at all: never hand out guessable ids */
	}
	b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
	b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
	snprintf(out, 37,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
		 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
		 b[14], b[15]);
}

static void on_expiry(struct uring_timer *t, bool fired);

int session_new(struct server *s, struct conn *c, struct session **ret)
{
	struct session *ss;

	if (s->n_sessions >= s->cfg.max_sessions)
		return -EUSERS;
	ss = calloc(1, sizeof(*ss));
	if (!ss)
		return -ENOMEM;
	ss->srv = s;
	uuid_v4(ss->id);
	list_init(&ss->procs_list);
	list_init(&ss->snapshots);
	list_add_tail(&ss->link, &s->sessions);
	s->n_sessions++;
	session_attach(ss, c);
	{
		struct log_ctx ctx = { .session = ss->id };
		struct log_field lf[] = { LOG_STR("client", c->peer) };

		log_event_ratelimited(LOG_INFO, "session.opened", &ctx, lf, ELEMENTSOF(lf),
				      "Session %s opened for %s", ss->id, c->peer);
	}
	*ret = ss;
	return 0;
}

int session_adopt(struct server *s, const char *id, uint64_t window_ms, struct session **ret)
{
	struct session *ss = calloc(1, sizeof(*ss));

	if (!ss)
		return -ENOMEM;
	ss->srv = s;
	snprintf(ss->id, sizeof(ss->id), "%s", id);
	list_init(&ss->procs_list);
	list_init(&ss->snapshots);
	list_add_tail(&ss->link, &s->sessions);
	s->n_sessions++;
	/* What was left of its resume window when the old binary quiesced. */
	uring_timer_arm(&s->ring, &ss->expiry, window_ms, on_expiry);
	*ret = ss;
	return 0;
}

struct session *session_find(struct server *s, const char *id)
{
	struct session *ss;

	list_for_each_entry(ss, &s->sessions, link)
		if (!ss->expired && strcmp(ss->id, id) == 0)
			return ss;
	return NULL;
}

void session_attach(struct session *ss, struct conn *c)
{
	struct proc *p;

	uring_timer_cancel(&ss->expiry);
	ss->conn = c;
	c->sess = ss;
	/* Output read while detached went to retention only; resume normal flow. */
	list_for_each_entry(p, &ss->procs_list, link)
		proc_resume_output(p);
}

static void on_expiry(struct uring_timer *t, bool fired)
{
	struct session *ss = container_of(t, struct session, expiry);
	struct proc *p;

	if (!fired || ss->conn)
		return;
	{
		struct log_ctx ctx = { .session = ss->id };
		struct log_field lf[] = { LOG_INT("resumeWindowMs", ss->srv->cfg.resume_window_ms),
					  LOG_INT("processes", ss->n_live) };

		log_event_ratelimited(LOG_INFO, "session.expired", &ctx, lf, ELEMENTSOF(lf),
				      "Session %s expired after %llu ms detached: killing %u running "
				      "process(es)", ss->id,
				      (unsigned long long)ss->srv->cfg.resume_window_ms, ss->n_live);
	}
	ss->expired = true;
	list_for_each_entry(p, &ss->procs_list, link)
		proc_kill_group(p, SIGKILL);
}

void session_detach(struct session *ss, struct conn *c)
{
	struct proc *p;

	if (ss->conn != c)
		return;
	ss->conn = NULL;
	/*
	 * Readers paused because this connection's queue was over --max-queued-bytes
	 * must go on into retention: nothing would re-arm them (no connection drains
	 * any more), the children would block on full pipes, and after the expiry's
	 * kill the paused pipe would never see EOF, so the process never closed and
	 * its fd and session stayed for the server's life.
	 */
	list_for_each_entry(p, &ss->procs_list, link)
		proc_resume_output(p);
	{
		struct log_ctx ctx = { .session = ss->id };
		struct log_field lf[] = { LOG_STR("client", c->peer),
					  LOG_INT("resumeWindowMs", ss->srv->cfg.resume_window_ms) };

		log_event_ratelimited(LOG_INFO, "session.detached", &ctx, lf, ELEMENTSOF(lf),
				      "Session %s detached from %s; resumable for %llu ms", ss->id,
				      c->peer, (unsigned long long)ss->srv->cfg.resume_window_ms);
	}
	uring_timer_arm(&ss->srv->ring, &ss->expiry, ss->srv->cfg.resume_window_ms, on_expiry);
}

void session_output_drained(struct session *ss)
{
	struct proc *p;

	list_for_each_entry(p, &ss->procs_list, link)
		proc_resume_output(p);
}

void session_proc_closed(struct session *ss, struct proc *p)
{
	if (ss->n_live)
		ss->n_live--;
}

static void session_free(struct session *ss)
{
	struct proc *p, *n;

	snap_session_free(ss);
	list_for_each_entry_safe(p, n, &ss->procs_list, link) {
		list_del(&p->link);
		proc_free(p);
	}
	strmap_done(&ss->procs);
	list_del(&ss->link);
	ss->srv->n_sessions--;
	/* At shutdown a connection may still be attached (e.g. one paused over its budget). */
	if (ss->conn)
		ss->conn->sess = NULL;
	free(ss);
}

void session_reap(struct server *s)
{
	struct session *ss, *n;
	bool freed = false;

	list_for_each_entry_safe(ss, n, &s->sessions, link) {
		struct proc *p;
		bool idle = ss->expired && !ss->expiry.op.busy;

		if (!ss->expired)
			continue;
		list_for_each_entry(p, &ss->procs_list, link)
			if (!p->closed || !proc_is_idle(p))
				idle = false;
		if (idle) {
			log_debug("Session %s freed", ss->id);
			session_free(ss);
			freed = true;
		}
	}
	/*
	 * The last session gone, the server is idle again: give back the heap its
	 * processes' records and output grew. glibc keeps free memory below the
	 * heap's top resident (0.8 MB after 1000 processes, bench/README.md);
	 * malloc_trim() releases it. CPU only, in proportion to the heap.
	 */
	if (freed && list_empty(&s->sessions))
		malloc_trim(0);
}

void session_destroy_all(struct server *s)
{
	struct session *ss, *n;
	struct proc *p;

	/*
	 * Also groups whose leader exited: grandchildren may still hold the
	 * pipes; and every process's cgroup, closed or not (what left the group).
	 */
	list_for_each_entry(ss, &s->sessions, link)
		list_for_each_entry(p, &ss->procs_list, link)
			proc_kill_group(p, SIGKILL);
	/* Reap every child not reaped yet (the pid stays ours until then); SIGKILL cannot be refused. */
	list_for_each_entry(ss, &s->sessions, link)
		list_for_each_entry(p, &ss->procs_list, link)
			if (!p->reaped) {
				siginfo_t si;
				(void)waitid(P_PID, (id_t)p->pid, &si, WEXITED);
			}
	list_for_each_entry_safe(ss, n, &s->sessions, link)
		session_free(ss);
	snap_shutdown();
}
