/* SPDX-License-Identifier: MIT */
/* The denial evidence sources on the ring: audit records in, barriers, the tick (evidence-ring.h). */
#include <errno.h>
#include <linux/audit.h>
#include <linux/netlink.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "evidence-ring.h"
#include "log.h"
#include "macro.h"
#include "ring.h"
#include "server.h"

#define EV_RECV_SIZE (64 * 1024)
#define EV_WAIT_MS 500 /* a barrier not back by then: the evidence is incomplete */
#define EV_TICK_MS 100

/*
 * Module state (docs/ARCHITECTURE.md "Global state"): one audit socket and
 * one store per server, like the ring they are read on.
 */
static struct {
	struct server *srv;
	struct sandbox_evidence *store;
	int fd;
	bool enabled_by_us;
	bool stopping;
	struct uring_op recv_op;
	uint8_t *buf;
	uint32_t next_seq;
	uint32_t lost;        /* audit's "lost" counter as last read */
	struct list_head waits;
	struct uring_timer tick;
	const char *source;
} ev = { .fd = -1, .source = "none" };

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void arm_recv(void);

static void wait_finish(struct exec_ev_wait *w, bool complete)
{
	list_del(&w->link);
	if (!complete)
		sandbox_evidence_set_incomplete(w->tree);
	w->done(w);
}

/* Barrier seq came back: every record queued before it was sent has been read. */
static void barrier_reached(uint32_t seq)
{
	struct exec_ev_wait *w, *n;

	sandbox_evidence_flush(ev.store);
	list_for_each_entry_safe(w, n, &ev.waits, link)
		if ((int32_t)(seq - w->seq) >= 0)
			wait_finish(w, true);
}

static void barrier_failed(uint32_t seq)
{
	struct exec_ev_wait *w, *n;

	list_for_each_entry_safe(w, n, &ev.waits, link)
		if (w->seq == seq)
			wait_finish(w, false);
}

static void on_tick(struct uring_timer *t, bool fired)
{
	struct exec_ev_wait *w, *n;
	uint64_t now = now_ms();

	if (!fired)
		return;
	list_for_each_entry_safe(w, n, &ev.waits, link)
		if (w->deadline_ms <= now) {
			log_warning_ratelimited("Denial evidence: no audit barrier within %d ms; "
						"sandboxDenied falls back to the heuristic for this process",
						EV_WAIT_MS);
			sandbox_evidence_flush(ev.store);
			wait_finish(w, false);
		}
	if (!list_empty(&ev.waits) && !ev.stopping)
		uring_timer_arm(&ev.srv->ring, &ev.tick, EV_TICK_MS, on_tick);
}

static void on_status(const struct sandbox_audit_status *st)
{
	if (st->lost != ev.lost) {
		log_warning_ratelimited("Audit lost %u records (backlog limit %u, rate limit %u): "
					"denial evidence of the running sandboxes is incomplete",
					st->lost - ev.lost, st->backlog_limit, st->rate_limit);
		sandbox_evidence_mark_lost(ev.store);
		ev.lost = st->lost;
	}
}

static void on_message(const struct nlmsghdr *h)
{
	const char *text = NLMSG_DATA(h);
	size_t len = h->nlmsg_len - NLMSG_HDRLEN;
	uint32_t seq;

	if (h->nlmsg_type == NLMSG_ERROR) {
		const struct nlmsgerr *e = NLMSG_DATA(h);

		if (len >= sizeof(*e) && e->error) {
			log_warning_errno_ratelimited(e->error, "Audit refused uexec's barrier %u",
						      h->nlmsg_seq);
			barrier_failed(h->nlmsg_seq);
		}
		return;
	}
	if (h->nlmsg_type == AUDIT_GET) {
		struct sandbox_audit_status st;

		if (sandbox_audit_parse_status(text, len, &st) == 0)
			on_status(&st);
		return;
	}
	if (sandbox_audit_is_barrier(h->nlmsg_type, text, len, getpid(), &seq)) {
		barrier_reached(seq);
		return;
	}
	sandbox_evidence_feed_audit(ev.store, h->nlmsg_type, text, len);
}

static void on_recv(struct uring_op *op, int res, uint32_t flags)
{
	if (ev.stopping || res == -ECANCELED)
		return;
	if (res == -ENOBUFS) {
		/* The socket's queue overflowed: records were dropped for us. */
		log_warning_ratelimited("The audit socket overflowed: denial evidence of the running "
					"sandboxes is incomplete");
		sandbox_evidence_mark_lost(ev.store);
	} else if (res < 0 && res != -EINTR && res != -EAGAIN) {
		log_warning_errno(res, "Reading audit records failed; sandboxDenied falls back to "
				       "the heuristic from now on");
		sandbox_evidence_mark_lost(ev.store);
		ev.stopping = true;
		/* New sandboxes are built without the logging flags; waiting exits go on. */
		ev.srv->sandbox.audit_log = false;
		while (!list_empty(&ev.waits))
			wait_finish(list_first_entry(&ev.waits, struct exec_ev_wait, link), false);
		return;
	} else if (res > 0) {
		size_t off = 0, n = (size_t)res;

		/* Usually one record per datagram; a length past the datagram is clamped to it. */
		while (off < n && n - off >= NLMSG_HDRLEN) {
			struct nlmsghdr *h = (struct nlmsghdr *)(ev.buf + off);
			size_t len = h->nlmsg_len;

			if (len < NLMSG_HDRLEN || len > n - off)
				h->nlmsg_len = (uint32_t)(len = n - off);
			on_message(h);
			off += NLMSG_ALIGN(len);
		}
	}
	arm_recv();
}

static void arm_recv(void)
{
	struct io_uring_sqe *sqe = uring_get_sqe(&ev.srv->ring, &ev.recv_op, on_recv);

	io_uring_prep_recv(sqe, ev.fd, ev.buf, EV_RECV_SIZE, 0);
}

void exec_evidence_init(struct server *s, enum exec_evidence_mode mode, bool enable_audit)
{
	struct sandbox_audit_status st = { 0 };
	char err[200];
	int fd;

	ev.srv = s;
	s->denial_evidence = ev.source;
	list_init(&ev.waits);
	if (s->sandbox.missing[0])
		return; /* no sandboxes: nothing to judge */
	if (mode == EXEC_EVIDENCE_NONE) {
		log_info("Denial evidence: none (--denial-evidence none); sandboxDenied uses the "
			 "reference heuristic");
		return;
	}
	fd = sandbox_audit_open(enable_audit, &st, &ev.enabled_by_us, err, sizeof(err));
	if (fd < 0) {
		log_info("Denial evidence: none, %s; sandboxDenied uses the reference heuristic", err);
		return;
	}
	ev.buf = malloc(EV_RECV_SIZE);
	if (!ev.buf || sandbox_evidence_new(SANDBOX_EVIDENCE_AUDIT, &ev.store) < 0) {
		log_warning("Denial evidence: none (out of memory)");
		free(ev.buf);
		ev.buf = NULL;
		if (ev.enabled_by_us)
			(void)sandbox_audit_disable(fd);
		close(fd);
		return;
	}
	ev.fd = fd;
	ev.lost = st.lost;
	ev.source = "audit";
	s->denial_evidence = ev.source;
	s->sandbox.audit_log = true;
	log_info("Denial evidence: audit records (Landlock%s, seccomp)%s; a write refused by a "
		 "read-only mount leaves none (docs/SECURITY.md)",
		 s->sandbox.landlock_abi >= 7 ? "" : " not logged below ABI 7",
		 ev.enabled_by_us ? ", auditing turned on by --enable-audit" : "");
	arm_recv();
}

void exec_evidence_stop(void)
{
	struct exec_ev_wait *w, *n;

	/* Never initialised (start-up failed before it): nothing to stop. */
	if (ev.stopping || !ev.srv)
		return;
	ev.stopping = true;
	list_for_each_entry_safe(w, n, &ev.waits, link)
		wait_finish(w, false);
	if (ev.recv_op.busy)
		uring_cancel(&ev.srv->ring, &ev.recv_op);
	uring_timer_cancel(&ev.tick);
}

bool exec_evidence_idle(void)
{
	return !ev.recv_op.busy && uring_op_idle(&ev.tick.op);
}

void exec_evidence_done(void)
{
	if (ev.fd >= 0) {
		if (ev.enabled_by_us)
			(void)sandbox_audit_disable(ev.fd);
		close(ev.fd);
	}
	ev.fd = -1;
	sandbox_evidence_free(ev.store);
	ev.store = NULL;
	free(ev.buf);
	ev.buf = NULL;
	ev.source = "none";
}

const char *exec_evidence_source(void)
{
	return ev.source;
}

struct sandbox_evidence *exec_evidence_store(void)
{
	return ev.store;
}

struct sandbox_ev_tree *exec_evidence_track(pid_t pid)
{
	return ev.store && !ev.stopping ? sandbox_evidence_track(ev.store, pid) : NULL;
}

void exec_evidence_untrack(struct sandbox_ev_tree *t)
{
	if (t && ev.store)
		sandbox_evidence_untrack(ev.store, t);
}

bool exec_evidence_wait(struct exec_ev_wait *w, void (*done)(struct exec_ev_wait *w))
{
	uint32_t seq;
	int r;

	if (!w->tree || ev.fd < 0 || ev.stopping)
		return false;
	seq = ++ev.next_seq;
	/* The status first (the reply is queued at once): the lost counter. Then the barrier. */
	r = sandbox_audit_request_status(ev.fd, seq);
	if (r >= 0)
		r = sandbox_audit_barrier(ev.fd, getpid(), seq);
	if (r < 0) {
		log_warning_errno_ratelimited(r, "Sending the audit barrier failed");
		sandbox_evidence_set_incomplete(w->tree);
		return false;
	}
	w->seq = seq;
	w->deadline_ms = now_ms() + EV_WAIT_MS;
	w->done = done;
	list_add_tail(&w->link, &ev.waits);
	if (!ev.tick.armed)
		uring_timer_arm(&ev.srv->ring, &ev.tick, EV_TICK_MS, on_tick);
	return true;
}

void exec_evidence_cancel(struct exec_ev_wait *w)
{
	if (list_linked(&w->link))
		list_del(&w->link);
}
