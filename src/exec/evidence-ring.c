/* SPDX-License-Identifier: MIT */
/*
 * The denial evidence sources on the ring (evidence-ring.h): audit records
 * in, barriers, the tick; the BPF tracer's ring buffer, its watched cgroups
 * and its drain at exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/audit.h>
#include <linux/netlink.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bpf-tracer-int.h"
#include "bpf-tracer.h"
#include "config.h"
#include "evidence-ring.h"
#include "log.h"
#include "macro.h"
#include "own-files.h"
#include "ring.h"
#include "server.h"

#define EV_RECV_SIZE (64 * 1024)
#define EV_WAIT_MS 500 /* a barrier not back by then: the evidence is incomplete */
#define EV_TICK_MS 100
/*
 * The tracer stays attached this long after the last sandboxed tree is
 * decided: attaching the sys_exit hook again costs the next spawn ~6-8 ms
 * (tracepoint registration waits for RCU), being attached costs every
 * syscall of the host ~60 ns (bench/README.md).
 */
#define EV_BPF_LINGER_MS 2000
#define EV_BPF_DRAIN_ROUNDS 4 /* ring-fulls read at an exit before the tree counts as incomplete */

/*
 * Module state (docs/ARCHITECTURE.md "Global state"): one audit socket and
 * one store per server, like the ring they are read on.
 */
static struct {
	struct server *srv;
	struct sandbox_evidence *store;
	int fd;
	bool enabled_by_us;
	int hold_fd; /* the shared hold on SANDBOX_AUDIT_USERS_PATH while audit is read, or -1 */
	bool stopping;
	bool audit_failed; /* reading records failed at run time: audit is not used since */
	struct uring_op recv_op;
	uint8_t *buf;
	uint32_t next_seq;
	uint32_t lost;        /* audit's "lost" counter as last read */
	struct list_head waits;
	struct uring_timer tick;
	struct uring_timer linger; /* detaches the idle tracer (EV_BPF_LINGER_MS) */
	const char *source;
	/* The BPF sys_exit tracer, or NULL; bpf_failed: it broke at run time (not used since). */
	struct bpf_tracer *bpf;
	bool bpf_failed;
	struct uring_op bpf_op;
	uint64_t bpf_dropped; /* bpf_tracer_dropped() as last read */
	char source_buf[48];
	bool quiesced; /* a live upgrade's QUIESCE: nothing re-armed */
	/* What an upgrade handed over (exec_evidence_offer), until exec_evidence_offer_end(). */
	bool offered, bpf_adopted, audit_adopted;
	struct exec_evidence_handover offer;
	uint64_t *handed_ids; /* the cgroups the adopted tracer watched throughout, ascending */
	size_t n_handed;
	uint64_t *claimed;    /* those the adopted trees took over */
	size_t n_claimed, cap_claimed;
} ev = { .fd = -1, .hold_fd = -1, .source = "none" };

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void arm_recv(void);
static bool bpf_live(void);
static int bpf_consume(void);
static void set_source(void);

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
	/* Records of other tasks of the trees (still running) made meanwhile: read them too. */
	if (bpf_live())
		(void)bpf_consume();
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

/* At exit: the last uexec reading audit turns it off again if a uexec turned it on. */
static void audit_release(int fd)
{
	int r = sandbox_audit_release(fd, ev.hold_fd);

	ev.hold_fd = -1;
	if (r == 1)
		log_info("Turned auditing off again (turned on by --enable-audit; no other uexec "
			 "on this host reads its records)");
	else if (r == 0 && ev.enabled_by_us)
		log_info("Leaving auditing on: another uexec on this host reads its records (the "
			 "last one turns it off)");
	else if (r < 0)
		log_warning_errno(r, "Cannot turn auditing off again");
}

static void audit_off(void);

static void on_status(const struct sandbox_audit_status *st)
{
	if (!st->enabled) {
		audit_off();
		return;
	}
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

/* Audit records are no longer used (a read failed, or auditing was turned off). */
static void audit_stop(void)
{
	sandbox_evidence_mark_lost(ev.store);
	ev.audit_failed = true;
	/* New sandboxes are built without the logging flags; waiting exits go on. */
	ev.srv->sandbox.audit_log = false;
	set_source();
	while (!list_empty(&ev.waits))
		wait_finish(list_first_entry(&ev.waits, struct exec_ev_wait, link), false);
}

/* Someone turned auditing off on the host (auditctl -e 0, or a server before the fix). */
static void audit_off(void)
{
	if (ev.audit_failed)
		return;
	log_warning("Denial evidence: auditing was turned off on this host; audit records are "
		    "not used until uexec restarts (sandboxDenied: %s)",
		    ev.bpf && !ev.bpf_failed ? "the BPF tracer alone" : "the reference heuristic");
	audit_stop();
}

static void on_recv(struct uring_op *op, int res, uint32_t flags)
{
	if (ev.stopping || ev.audit_failed || res == -ECANCELED)
		return;
	if (res == -ENOBUFS) {
		/* The socket's queue overflowed: records were dropped for us. */
		log_warning_ratelimited("The audit socket overflowed: denial evidence of the running "
					"sandboxes is incomplete");
		sandbox_evidence_mark_lost(ev.store);
	} else if (res < 0 && res != -EINTR && res != -EAGAIN) {
		log_warning_errno(res, "Reading audit records failed; audit records are not used "
				       "from now on");
		audit_stop();
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
	if (!ev.quiesced)
		arm_recv();
}

static void arm_recv(void)
{
	struct io_uring_sqe *sqe = uring_get_sqe(&ev.srv->ring, &ev.recv_op, on_recv);

	io_uring_prep_recv(sqe, ev.fd, ev.buf, EV_RECV_SIZE, 0);
}

/* ---- the BPF tracer ---- */

static bool bpf_live(void)
{
	return ev.bpf && !ev.bpf_failed && !ev.stopping;
}

static void set_source(void)
{
	bool audit = ev.fd >= 0 && !ev.audit_failed, bpf = ev.bpf && !ev.bpf_failed;

	if (audit && bpf)
		snprintf(ev.source_buf, sizeof(ev.source_buf), "audit+bpf");
	else
		snprintf(ev.source_buf, sizeof(ev.source_buf), "%s", audit ? "audit" : bpf ? "bpf" : "none");
	ev.source = ev.source_buf;
	ev.srv->denial_evidence = ev.source;
}

/*
 * The tracer broke at run time: what it would have reported from now on is
 * missing, so every tracked tree counts as incomplete (the heuristic decides
 * them); new trees are not watched. Logged once.
 */
static void bpf_fail(int err, const char *what)
{
	if (ev.bpf_failed)
		return;
	ev.bpf_failed = true;
	log_warning_errno(err, "Denial evidence: %s failed; the BPF tracer is not used from now on "
			       "(sandboxDenied of the running sandboxes falls back to the heuristic)",
			  what);
	if (ev.store)
		sandbox_evidence_mark_lost(ev.store);
	set_source();
}

static void on_bpf_record(void *ctx, const struct bpf_denial *d)
{
	(void)ctx;
	(void)sandbox_evidence_feed_bpf(ev.store, d->tgid, d->cgroup_id, d->syscall_nr, d->err, d->comm,
					d->addr, d->addr_len, d->args, d->nargs);
}

/* The ring's drops since the last look: every tree tracked now may have lost records. */
static void bpf_check_dropped(void)
{
	uint64_t dropped = bpf_tracer_dropped(ev.bpf);

	if (dropped == ev.bpf_dropped)
		return;
	log_warning_ratelimited("The denial tracer's ring was full: %llu records lost; denial "
				"evidence of the running sandboxes is incomplete",
				(unsigned long long)(dropped - ev.bpf_dropped));
	sandbox_evidence_mark_lost(ev.store);
	ev.bpf_dropped = dropped;
}

/* One ring's worth at most. Returns what bpf_tracer_consume() returned. */
static int bpf_consume(void)
{
	int n = bpf_tracer_consume(ev.bpf, on_bpf_record, NULL);

	if (n == -EBADMSG) {
		/* A record this build cannot read was skipped: treated like a drop. */
		log_warning_ratelimited("The denial tracer's ring held a record of unknown size; denial "
					"evidence of the running sandboxes is incomplete");
		sandbox_evidence_mark_lost(ev.store);
	} else if (n < 0) {
		bpf_fail(n, "reading the BPF tracer's ring");
		return n;
	}
	bpf_check_dropped();
	return n;
}

static void arm_bpf(void);

/* The ring became readable (one-shot poll): read one ring's worth, poll again. */
static void on_bpf_poll(struct uring_op *op, int res, uint32_t flags)
{
	(void)op;
	(void)flags;
	if (!bpf_live() || res == -ECANCELED)
		return;
	if (res < 0) {
		bpf_fail(res, "polling the BPF tracer's ring");
		return;
	}
	/* More than a ring's worth waiting: the fd is still readable and the poll fires again. */
	if (bpf_consume() >= 0 && !ev.quiesced)
		arm_bpf();
}

static void arm_bpf(void)
{
	struct io_uring_sqe *sqe = uring_get_sqe(&ev.srv->ring, &ev.bpf_op, on_bpf_poll);

	io_uring_prep_poll_add(sqe, bpf_tracer_fd(ev.bpf), POLLIN);
}

/*
 * t's command was reaped: every record its tasks made is in the ring by now
 * (a record is written before the syscall that made it returns). Reads them
 * before anything is decided; a ring still full after a few rounds, a drop,
 * or the cgroup past its budget (its later denials were only counted) make
 * the tree incomplete.
 */
static void bpf_drain_for(struct sandbox_ev_tree *t)
{
	uint64_t cg = sandbox_evidence_cgroup(t), offered = 0, suppressed = 0;
	int n = 0;

	if (!bpf_live() || !cg)
		return;
	for (int i = 0; i < EV_BPF_DRAIN_ROUNDS; i++) {
		n = bpf_consume();
		if (n < BPF_TRACER_RING_RECORDS)
			break;
	}
	if (n < 0)
		return; /* bpf_fail() marked every tree */
	if (n == BPF_TRACER_RING_RECORDS) {
		log_warning_ratelimited("The denial tracer's ring is still full after %d rounds; "
					"sandboxDenied of this process falls back to the heuristic",
					EV_BPF_DRAIN_ROUNDS);
		sandbox_evidence_set_incomplete(t);
	}
	if (bpf_tracer_cgroup_counts(ev.bpf, cg, &offered, &suppressed) == 0 && suppressed > 0)
		sandbox_evidence_set_incomplete(t);
}

uint64_t exec_evidence_watch(int cg_fd)
{
	uint64_t id = 0;
	int r;

	if (!bpf_live() || !ev.store || cg_fd < 0)
		return 0;
	r = bpf_tracer_cgroup_id(cg_fd, ".", &id);
	if (r < 0) {
		log_warning_errno_ratelimited(r, "Denial evidence: the id of a process's cgroup is "
					      "unknown; its tree has no BPF evidence");
		return 0;
	}
	r = bpf_tracer_watch_cgroup(ev.bpf, id);
	if (r == -ENOSPC) {
		log_warning_ratelimited("Denial evidence: the tracer watches %d cgroups already; a new "
					"process's tree has no BPF evidence", BPF_TRACER_MAX_CGROUPS);
		return 0;
	}
	if (r < 0) {
		bpf_fail(r, "attaching the BPF tracer");
		return 0;
	}
	return id;
}

static void on_linger(struct uring_timer *t, bool fired)
{
	if (fired && ev.bpf)
		(void)bpf_tracer_detach_if_idle(ev.bpf);
}

void exec_evidence_unwatch(uint64_t cgroup_id)
{
	/* After a run-time failure too: the watch (and the attached program) must go. */
	if (!ev.bpf || !cgroup_id)
		return;
	(void)bpf_tracer_unwatch_cgroup(ev.bpf, cgroup_id);
	/* Re-armed by each unwatch: detached once no tree was watched for the whole delay. */
	if (ev.stopping)
		(void)bpf_tracer_detach_if_idle(ev.bpf);
	else
		uring_timer_arm(&ev.srv->ring, &ev.linger, EV_BPF_LINGER_MS, on_linger);
}

/* Which sources to try: audit unless bpf only, bpf unless audit only. */
static struct bpf_tracer *open_bpf(struct server *s, enum exec_evidence_mode mode, char *why,
				   size_t whysz)
{
	struct bpf_tracer *t;
	char err[200], path[PATH_MAX];
	int fd;

	if (mode == EXEC_EVIDENCE_AUDIT) {
		snprintf(why, whysz, "bpf: not used (--denial-evidence audit)");
		return NULL;
	}
	/* It reports by cgroup v2 id: without a cgroup per process it could attribute nothing. */
	if (!s->cgroups.enabled) {
		snprintf(why, whysz, "bpf: no per-process cgroup v2 leaves (see the cgroup line)");
		return NULL;
	}
	if (!bpf_tracer_built()) {
		snprintf(why, whysz, "bpf: built without BPF (meson option bpf)");
		return NULL;
	}
	/* The load runs in the module (libbpf), unloaded once the tracer has its fds. */
	fd = server_own_file_open(BPF_MODULE_FILE, UEXEC_MODULEDIR, O_RDONLY | O_CLOEXEC, path,
				  sizeof(path));
	if (fd < 0) {
		snprintf(why, whysz, "bpf: " BPF_MODULE_FILE " is neither next to the uexec binary nor "
			 "in " UEXEC_MODULEDIR " (%s: %s)", path, strerror(-fd));
		return NULL;
	}
	t = bpf_tracer_open_module(fd, err, sizeof(err));
	close(fd);
	if (!t)
		snprintf(why, whysz, "bpf: %s", err);
	return t;
}

/*
 * The audit socket (and the hold on auditing, taken before the status is
 * read: a server turning auditing off waits for it). Returns the socket,
 * or -errno with why.
 */
static int open_audit(bool enable_audit, struct sandbox_audit_status *st, char *why, size_t whysz)
{
	char err[200];
	int fd;

	ev.hold_fd = sandbox_audit_hold();
	if (ev.hold_fd < 0)
		log_warning_errno(ev.hold_fd, "Cannot hold %s: auditing turned on by this "
			       "server stays on at exit (other servers may rely on it)",
			       SANDBOX_AUDIT_USERS_PATH);
	fd = sandbox_audit_open(enable_audit, st, &ev.enabled_by_us, err, sizeof(err));
	if (fd < 0) {
		snprintf(why, whysz, "audit: %s", err);
		ev.hold_fd = safe_close(ev.hold_fd);
	}
	return fd;
}

/*
 * The audit socket an upgrade handed over, if it is one: records made in
 * between wait in its receive buffer. Its hold, counters and barrier
 * sequence go on. The socket, or -1.
 */
static int adopt_audit(struct sandbox_audit_status *st)
{
	int fd = ev.offered ? ev.offer.audit_fd : -1, dom = 0, proto = 0;
	socklen_t l1 = sizeof(dom), l2 = sizeof(proto);

	if (fd < 0)
		return -1;
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &l1) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &l2) < 0 || dom != AF_NETLINK ||
	    proto != NETLINK_AUDIT) {
		log_warning("Denial evidence: the audit socket handed over is not a NETLINK_AUDIT "
			    "socket; opening another (the running sandboxes' evidence is incomplete)");
		return -1;
	}
	ev.audit_adopted = true;
	ev.hold_fd = ev.offer.audit_hold_fd >= 0 ? ev.offer.audit_hold_fd : sandbox_audit_hold();
	ev.enabled_by_us = ev.offer.audit_enabled_by_us;
	ev.next_seq = ev.offer.audit_seq;
	st->enabled = true;
	st->lost = ev.offer.audit_lost;
	log_info("Denial evidence: adopted the audit socket handed over (records made during the "
		 "upgrade are read from it)");
	return fd;
}

/*
 * The BPF tracer an upgrade handed over, attached as it was: nothing is
 * loaded (the module is not even opened). NULL when there is none, or it is
 * refused (logged: the caller loads another).
 */
static struct bpf_tracer *adopt_bpf(struct server *s, enum exec_evidence_mode mode)
{
	struct bpf_tracer *t;
	char err[200];
	int n;

	if (!ev.offered || !ev.offer.has_bpf || mode == EXEC_EVIDENCE_AUDIT || !s->cgroups.enabled)
		return NULL;
	t = bpf_tracer_adopt(&ev.offer.bpf, err, sizeof(err));
	if (!t) {
		log_warning("Denial evidence: the BPF tracer handed over cannot be adopted (%s); "
			    "loading another (the running sandboxes' evidence is incomplete)", err);
		return NULL;
	}
	ev.bpf_adopted = true;
	ev.handed_ids = malloc(BPF_TRACER_MAX_CGROUPS * sizeof(*ev.handed_ids));
	n = ev.handed_ids ? bpf_tracer_watched_ids(t, ev.handed_ids, BPF_TRACER_MAX_CGROUPS) : 0;
	ev.n_handed = n > 0 ? (size_t)n : 0;
	bpf_tracer_set_linger(t, true);
	log_info("Denial evidence: adopted the BPF tracer handed over (%s, %s, %zu cgroups "
		 "watched); " BPF_MODULE_FILE " not loaded", bpf_tracer_source(t),
		 ev.offer.bpf.attached ? "attached" : "detached", ev.n_handed);
	return t;
}

/* The start-up line that says which denial evidence the server has, and what it misses. */
static void log_sources(struct server *s, bool audit, const char *audit_why, const char *bpf_why)
{
	if (audit && ev.bpf)
		log_info("Denial evidence: audit + bpf (%s): audit records of Landlock%s and seccomp, "
			 "and the sys_exit tracer for refusals of read-only mounts (EROFS, EXDEV)%s",
			 bpf_tracer_source(ev.bpf), s->sandbox.landlock_abi >= 7 ? "" :
			 " (not logged below ABI 7)", ev.enabled_by_us ? "; auditing turned on by "
			 "--enable-audit" : "");
	else if (audit)
		log_info("Denial evidence: audit (records of Landlock%s and seccomp%s; %s); a write "
			 "refused by a read-only mount leaves none (docs/SECURITY.md)",
			 s->sandbox.landlock_abi >= 7 ? "" : ", not logged below ABI 7",
			 ev.enabled_by_us ? ", auditing turned on by --enable-audit" : "", bpf_why);
	else
		log_info("Denial evidence: bpf (%s; %s): refusals of read-only mounts (EROFS, EXDEV) "
			 "are evidence, EPERM/EACCES alone are not (docs/SECURITY.md)",
			 bpf_tracer_source(ev.bpf), audit_why);
}

void exec_evidence_init(struct server *s, enum exec_evidence_mode mode, bool enable_audit)
{
	struct sandbox_audit_status st = { 0 };
	char audit_why[240] = "", bpf_why[PATH_MAX + 200] = "";
	unsigned sources = 0;
	int fd = -1;

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
	if (mode == EXEC_EVIDENCE_BPF)
		snprintf(audit_why, sizeof(audit_why), "audit: not used (--denial-evidence bpf)");
	else if ((fd = adopt_audit(&st)) < 0)
		fd = open_audit(enable_audit, &st, audit_why, sizeof(audit_why));
	if (fd >= 0)
		sources |= SANDBOX_EVIDENCE_AUDIT;
	ev.bpf = adopt_bpf(s, mode);
	if (!ev.bpf)
		ev.bpf = open_bpf(s, mode, bpf_why, sizeof(bpf_why));
	if (ev.bpf) {
		sources |= SANDBOX_EVIDENCE_BPF;
		bpf_tracer_set_linger(ev.bpf, true);
	}
	if (!sources) {
		log_info("Denial evidence: none (%s; %s); sandboxDenied uses the reference heuristic",
			 audit_why, bpf_why);
		return;
	}
	if (sources & SANDBOX_EVIDENCE_AUDIT)
		ev.buf = malloc(EV_RECV_SIZE);
	if (((sources & SANDBOX_EVIDENCE_AUDIT) && !ev.buf) ||
	    sandbox_evidence_new(sources, &ev.store) < 0) {
		log_warning("Denial evidence: none (out of memory)");
		free(ev.buf);
		ev.buf = NULL;
		if (fd >= 0) {
			audit_release(fd);
			close(fd);
		}
		bpf_tracer_close(ev.bpf);
		ev.bpf = NULL;
		return;
	}
	ev.fd = fd;
	ev.lost = st.lost;
	set_source();
	s->sandbox.audit_log = fd >= 0;
	log_sources(s, fd >= 0, audit_why, bpf_why);
	if (fd >= 0)
		arm_recv();
	if (ev.bpf) {
		/* Adopted: drops during the hand-over still count against the trees. */
		ev.bpf_dropped = ev.bpf_adopted ? ev.offer.bpf_dropped : bpf_tracer_dropped(ev.bpf);
		arm_bpf();
		/* Handed over lingering (or its trees gone): detached if still idle by then. */
		if (ev.bpf_adopted)
			uring_timer_arm(&ev.srv->ring, &ev.linger, EV_BPF_LINGER_MS, on_linger);
	}
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
	if (ev.bpf_op.busy)
		uring_cancel(&ev.srv->ring, &ev.bpf_op);
	uring_timer_cancel(&ev.tick);
	uring_timer_cancel(&ev.linger);
}

bool exec_evidence_idle(void)
{
	return !ev.recv_op.busy && !ev.bpf_op.busy && uring_op_idle(&ev.tick.op) &&
	       uring_op_idle(&ev.linger.op);
}

void exec_evidence_done(void)
{
	if (ev.fd >= 0) {
		audit_release(ev.fd);
		close(ev.fd);
	}
	ev.fd = -1;
	sandbox_evidence_free(ev.store);
	ev.store = NULL;
	/* Detaches the programs: nothing of uexec stays in the kernel. */
	bpf_tracer_close(ev.bpf);
	ev.bpf = NULL;
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
	bool live = ev.store && !ev.stopping && ((ev.fd >= 0 && !ev.audit_failed) || bpf_live());

	return live ? sandbox_evidence_track(ev.store, pid) : NULL;
}

void exec_evidence_adopt_cgroup(struct sandbox_ev_tree *t, uint64_t cgroup_id)
{
	if (t && cgroup_id && ev.bpf_adopted && ev.offered) {
		/* RESTORE: a watch the handed tracer holds, taken over (exec_evidence_offer_end). */
		if (ev.n_claimed == ev.cap_claimed) {
			size_t cap = ev.cap_claimed ? 2 * ev.cap_claimed : 64;
			uint64_t *c = realloc(ev.claimed, cap * sizeof(*c));

			if (c) {
				ev.claimed = c;
				ev.cap_claimed = cap;
			}
		}
		if (ev.n_claimed < ev.cap_claimed)
			ev.claimed[ev.n_claimed++] = cgroup_id;
	}
	if (t) {
		sandbox_evidence_set_cgroup(t, cgroup_id);
		/* Tracked whole now: what was read while the spawner ran it is its own. */
		sandbox_evidence_claim(ev.store, t);
	} else {
		exec_evidence_unwatch(cgroup_id);
	}
}

void exec_evidence_untrack(struct sandbox_ev_tree *t)
{
	uint64_t cg;

	if (!t || !ev.store)
		return;
	/* Decided (or abandoned): its cgroup is no longer watched; the last one detaches the programs. */
	cg = sandbox_evidence_cgroup(t);
	sandbox_evidence_untrack(ev.store, t);
	exec_evidence_unwatch(cg);
}

bool exec_evidence_wait(struct exec_ev_wait *w, void (*done)(struct exec_ev_wait *w))
{
	uint32_t seq;
	int r;

	if (w->tree)
		bpf_drain_for(w->tree);
	if (!w->tree || ev.fd < 0 || ev.stopping || ev.audit_failed)
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

/* ---- a live upgrade (docs/UPGRADE.md "Denial evidence") ---- */

bool exec_evidence_export(struct exec_evidence_handover *h)
{
	memset(h, 0, sizeof(*h));
	h->audit_fd = h->audit_hold_fd = -1;
	h->bpf.links[0] = h->bpf.links[1] = h->bpf.perf_fd = -1;
	if (!ev.store || ev.stopping)
		return false;
	/* Audit records waiting for their event's end are filed now: the new store starts empty. */
	sandbox_evidence_flush(ev.store);
	if (ev.bpf && !ev.bpf_failed) {
		h->has_bpf = true;
		bpf_tracer_export(ev.bpf, &h->bpf);
		h->bpf_dropped = ev.bpf_dropped;
	}
	if (ev.fd >= 0 && !ev.audit_failed) {
		h->audit_fd = ev.fd;
		h->audit_hold_fd = ev.hold_fd;
		h->audit_enabled_by_us = ev.enabled_by_us;
		h->audit_lost = ev.lost;
		h->audit_seq = ev.next_seq;
	}
	return h->has_bpf || h->audit_fd >= 0;
}

void exec_evidence_offer(const struct exec_evidence_handover *h)
{
	ev.offer = *h;
	ev.offered = true;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static bool has_id(const uint64_t *ids, size_t n, uint64_t id)
{
	return n && bsearch(&id, ids, n, sizeof(*ids), cmp_u64);
}

bool exec_evidence_gapless(uint64_t cgroup_id)
{
	bool audit = ev.fd >= 0 && !ev.audit_failed, bpf = ev.bpf && !ev.bpf_failed;

	if (!ev.offered || (audit && !ev.audit_adopted))
		return false;
	return !bpf || !cgroup_id || (ev.bpf_adopted && has_id(ev.handed_ids, ev.n_handed, cgroup_id));
}

static void close_bpf_handover(struct bpf_tracer_handover *b)
{
	/* The links first: the old programs detach. */
	safe_close(b->links[0]);
	safe_close(b->links[1]);
	safe_close(b->perf_fd);
	safe_close(b->obj.exit_prog);
	safe_close(b->obj.landlock_prog);
	safe_close(b->obj.ring_fd);
	safe_close(b->obj.watched_fd);
	safe_close(b->obj.bss_fd);
}

void exec_evidence_offer_end(void)
{
	size_t dropped = 0;

	if (!ev.offered)
		return;
	if (ev.bpf_adopted && ev.bpf && ev.handed_ids) {
		/* Watched by the old binary, claimed by no tree adopted here: not watched any more. */
		if (ev.n_claimed) /* qsort's base must not be NULL, even for none */
			qsort(ev.claimed, ev.n_claimed, sizeof(*ev.claimed), cmp_u64);
		for (size_t i = 0; i < ev.n_handed; i++)
			if (!has_id(ev.claimed, ev.n_claimed, ev.handed_ids[i])) {
				exec_evidence_unwatch(ev.handed_ids[i]);
				dropped++;
			}
		if (dropped)
			log_info("Denial evidence: %zu cgroups the tracer handed over watched belong to "
				 "no process adopted; no longer watched", dropped);
	} else if (ev.offer.has_bpf && !ev.bpf_adopted) {
		close_bpf_handover(&ev.offer.bpf);
	}
	if (ev.offer.audit_fd >= 0 && !ev.audit_adopted) {
		safe_close(ev.offer.audit_fd);
		safe_close(ev.offer.audit_hold_fd);
	}
	free(ev.handed_ids);
	free(ev.claimed);
	ev.handed_ids = ev.claimed = NULL;
	ev.n_handed = ev.n_claimed = ev.cap_claimed = 0;
	ev.offered = false;
}

void exec_evidence_quiesce(void)
{
	ev.quiesced = true;
	if (ev.recv_op.busy)
		uring_cancel(&ev.srv->ring, &ev.recv_op);
	if (ev.bpf_op.busy)
		uring_cancel(&ev.srv->ring, &ev.bpf_op);
}

bool exec_evidence_quiesced(void)
{
	return !ev.recv_op.busy && !ev.bpf_op.busy;
}

void exec_evidence_resume(void)
{
	if (!ev.quiesced)
		return;
	ev.quiesced = false;
	if (ev.stopping || !ev.srv)
		return;
	if (ev.fd >= 0 && !ev.audit_failed && !ev.recv_op.busy)
		arm_recv();
	if (bpf_live() && !ev.bpf_op.busy)
		arm_bpf();
}
