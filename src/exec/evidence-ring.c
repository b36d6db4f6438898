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
#include "evidence-ring-internal.h"
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

/* Module state: evidence-ring-internal.h (exec_ev). */
struct exec_ev_state exec_ev = { .fd = -1, .hold_fd = -1, .source = "none" };

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

	sandbox_evidence_flush(exec_ev.store);
	/* Records of other tasks of the trees (still running) made meanwhile: read them too. */
	if (bpf_live())
		(void)bpf_consume();
	list_for_each_entry_safe(w, n, &exec_ev.waits, link)
		if ((int32_t)(seq - w->seq) >= 0)
			wait_finish(w, true);
}

static void barrier_failed(uint32_t seq)
{
	struct exec_ev_wait *w, *n;

	list_for_each_entry_safe(w, n, &exec_ev.waits, link)
		if (w->seq == seq)
			wait_finish(w, false);
}

static void on_tick(struct uring_timer *t, bool fired)
{
	struct exec_ev_wait *w, *n;
	uint64_t now = now_ms();

	if (!fired)
		return;
	list_for_each_entry_safe(w, n, &exec_ev.waits, link)
		if (w->deadline_ms <= now) {
			log_warning_ratelimited("Denial evidence: no audit barrier within %d ms; "
						"sandboxDenied falls back to the heuristic for this process",
						EV_WAIT_MS);
			sandbox_evidence_flush(exec_ev.store);
			wait_finish(w, false);
		}
	if (!list_empty(&exec_ev.waits) && !exec_ev.stopping)
		uring_timer_arm(&exec_ev.srv->ring, &exec_ev.tick, EV_TICK_MS, on_tick);
}

/* At exit: the last uexec reading audit turns it off again if a uexec turned it on. */
static void audit_release(int fd)
{
	int r = sandbox_audit_release(fd, exec_ev.hold_fd);

	exec_ev.hold_fd = -1;
	if (r == 1)
		log_info("Turned auditing off again (turned on by --enable-audit; no other uexec "
			 "on this host reads its records)");
	else if (r == 0 && exec_ev.enabled_by_us)
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
	if (st->lost != exec_ev.lost) {
		log_warning_ratelimited("Audit lost %u records (backlog limit %u, rate limit %u): "
					"denial evidence of the running sandboxes is incomplete",
					st->lost - exec_ev.lost, st->backlog_limit, st->rate_limit);
		sandbox_evidence_mark_lost(exec_ev.store);
		exec_ev.lost = st->lost;
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
	sandbox_evidence_feed_audit(exec_ev.store, h->nlmsg_type, text, len);
}

/* Audit records are no longer used (a read failed, or auditing was turned off). */
static void audit_stop(void)
{
	sandbox_evidence_mark_lost(exec_ev.store);
	exec_ev.audit_failed = true;
	/* New sandboxes are built without the logging flags; waiting exits go on. */
	exec_ev.srv->sandbox.audit_log = false;
	set_source();
	while (!list_empty(&exec_ev.waits))
		wait_finish(list_first_entry(&exec_ev.waits, struct exec_ev_wait, link), false);
}

/* Someone turned auditing off on the host (auditctl -e 0, or a server before the fix). */
static void audit_off(void)
{
	if (exec_ev.audit_failed)
		return;
	log_warning("Denial evidence: auditing was turned off on this host; audit records are "
		    "not used until uexec restarts (sandboxDenied: %s)",
		    exec_ev.bpf && !exec_ev.bpf_failed ? "the BPF tracer alone" : "the reference heuristic");
	audit_stop();
}

static void on_recv(struct uring_op *op, int res, uint32_t flags)
{
	if (exec_ev.stopping || exec_ev.audit_failed || res == -ECANCELED)
		return;
	if (res == -ENOBUFS) {
		/* The socket's queue overflowed: records were dropped for us. */
		log_warning_ratelimited("The audit socket overflowed: denial evidence of the running "
					"sandboxes is incomplete");
		sandbox_evidence_mark_lost(exec_ev.store);
	} else if (res < 0 && res != -EINTR && res != -EAGAIN) {
		log_warning_errno(res, "Reading audit records failed; audit records are not used "
				       "from now on");
		audit_stop();
		return;
	} else if (res > 0) {
		size_t off = 0, n = (size_t)res;

		/* Usually one record per datagram; a length past the datagram is clamped to it. */
		while (off < n && n - off >= NLMSG_HDRLEN) {
			struct nlmsghdr *h = (struct nlmsghdr *)(exec_ev.buf + off);
			size_t len = h->nlmsg_len;

			if (len < NLMSG_HDRLEN || len > n - off)
				h->nlmsg_len = (uint32_t)(len = n - off);
			on_message(h);
			off += NLMSG_ALIGN(len);
		}
	}
	if (!exec_ev.quiesced)
		arm_recv();
}

static void arm_recv(void)
{
	struct io_uring_sqe *sqe = uring_get_sqe(&exec_ev.srv->ring, &exec_ev.recv_op, on_recv);

	io_uring_prep_recv(sqe, exec_ev.fd, exec_ev.buf, EV_RECV_SIZE, 0);
}

/* ---- the BPF tracer ---- */

static bool bpf_live(void)
{
	return exec_ev.bpf && !exec_ev.bpf_failed && !exec_ev.stopping;
}

static void set_source(void)
{
	bool audit = exec_ev.fd >= 0 && !exec_ev.audit_failed, bpf = exec_ev.bpf && !exec_ev.bpf_failed;

	if (audit && bpf)
		snprintf(exec_ev.source_buf, sizeof(exec_ev.source_buf), "audit+bpf");
	else
		snprintf(exec_ev.source_buf, sizeof(exec_ev.source_buf), "%s", audit ? "audit" : bpf ? "bpf" : "none");
	exec_ev.source = exec_ev.source_buf;
	exec_ev.srv->denial_evidence = exec_ev.source;
}

/*
 * The tracer broke at run time: what it would have reported from now on is
 * missing, so every tracked tree counts as incomplete (the heuristic decides
 * them); new trees are not watched. Logged once.
 */
static void bpf_fail(int err, const char *what)
{
	if (exec_ev.bpf_failed)
		return;
	exec_ev.bpf_failed = true;
	log_warning_errno(err, "Denial evidence: %s failed; the BPF tracer is not used from now on "
			       "(sandboxDenied of the running sandboxes falls back to the heuristic)",
			  what);
	if (exec_ev.store)
		sandbox_evidence_mark_lost(exec_ev.store);
	set_source();
}

static void on_bpf_record(void *ctx, const struct bpf_denial *d)
{
	(void)ctx;
	(void)sandbox_evidence_feed_bpf(exec_ev.store, d->tgid, d->cgroup_id, d->syscall_nr, d->err, d->comm,
					d->addr, d->addr_len, d->args, d->nargs);
}

/* The ring's drops since the last look: every tree tracked now may have lost records. */
static void bpf_check_dropped(void)
{
	uint64_t dropped = bpf_tracer_dropped(exec_ev.bpf);

	if (dropped == exec_ev.bpf_dropped)
		return;
	log_warning_ratelimited("The denial tracer's ring was full: %llu records lost; denial "
				"evidence of the running sandboxes is incomplete",
				(unsigned long long)(dropped - exec_ev.bpf_dropped));
	sandbox_evidence_mark_lost(exec_ev.store);
	exec_ev.bpf_dropped = dropped;
}

/* One ring's worth at most. Returns what bpf_tracer_consume() returned. */
static int bpf_consume(void)
{
	int n = bpf_tracer_consume(exec_ev.bpf, on_bpf_record, NULL);

	if (n == -EBADMSG) {
		/* A record this build cannot read was skipped: treated like a drop. */
		log_warning_ratelimited("The denial tracer's ring held a record of unknown size; denial "
					"evidence of the running sandboxes is incomplete");
		sandbox_evidence_mark_lost(exec_ev.store);
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
	if (bpf_consume() >= 0 && !exec_ev.quiesced)
		arm_bpf();
}

static void arm_bpf(void)
{
	struct io_uring_sqe *sqe = uring_get_sqe(&exec_ev.srv->ring, &exec_ev.bpf_op, on_bpf_poll);

	io_uring_prep_poll_add(sqe, bpf_tracer_fd(exec_ev.bpf), POLLIN);
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
	if (bpf_tracer_cgroup_counts(exec_ev.bpf, cg, &offered, &suppressed) == 0 && suppressed > 0)
		sandbox_evidence_set_incomplete(t);
}

uint64_t exec_evidence_watch(int cg_fd)
{
	uint64_t id = 0;
	int r;

	if (!bpf_live() || !exec_ev.store || cg_fd < 0)
		return 0;
	r = bpf_tracer_cgroup_id(cg_fd, ".", &id);
	if (r < 0) {
		log_warning_errno_ratelimited(r, "Denial evidence: the id of a process's cgroup is "
					      "unknown; its tree has no BPF evidence");
		return 0;
	}
	r = bpf_tracer_watch_cgroup(exec_ev.bpf, id);
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
	if (fired && exec_ev.bpf)
		(void)bpf_tracer_detach_if_idle(exec_ev.bpf);
}

void exec_evidence_unwatch(uint64_t cgroup_id)
{
	/* After a run-time failure too: the watch (and the attached program) must go. */
	if (!exec_ev.bpf || !cgroup_id)
		return;
	(void)bpf_tracer_unwatch_cgroup(exec_ev.bpf, cgroup_id);
	/* Re-armed by each unwatch: detached once no tree was watched for the whole delay. */
	if (exec_ev.stopping)
		(void)bpf_tracer_detach_if_idle(exec_ev.bpf);
	else
		uring_timer_arm(&exec_ev.srv->ring, &exec_ev.linger, EV_BPF_LINGER_MS, on_linger);
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

	exec_ev.hold_fd = sandbox_audit_hold();
	if (exec_ev.hold_fd < 0)
		log_warning_errno(exec_ev.hold_fd, "Cannot hold %s: auditing turned on by this "
			       "server stays on at exit (other servers may rely on it)",
			       SANDBOX_AUDIT_USERS_PATH);
	fd = sandbox_audit_open(enable_audit, st, &exec_ev.enabled_by_us, err, sizeof(err));
	if (fd < 0) {
		snprintf(why, whysz, "audit: %s", err);
		exec_ev.hold_fd = safe_close(exec_ev.hold_fd);
	}
	return fd;
}

/* The start-up line that says which denial evidence the server has, and what it misses. */
static void log_sources(struct server *s, bool audit, const char *audit_why, const char *bpf_why)
{
	if (audit && exec_ev.bpf)
		log_info("Denial evidence: audit + bpf (%s): audit records of Landlock%s and seccomp, "
			 "and the sys_exit tracer for refusals of read-only mounts (EROFS, EXDEV)%s",
			 bpf_tracer_source(exec_ev.bpf), s->sandbox.landlock_abi >= 7 ? "" :
			 " (not logged below ABI 7)", exec_ev.enabled_by_us ? "; auditing turned on by "
			 "--enable-audit" : "");
	else if (audit)
		log_info("Denial evidence: audit (records of Landlock%s and seccomp%s; %s); a write "
			 "refused by a read-only mount leaves none (docs/SECURITY.md)",
			 s->sandbox.landlock_abi >= 7 ? "" : ", not logged below ABI 7",
			 exec_ev.enabled_by_us ? ", auditing turned on by --enable-audit" : "", bpf_why);
	else
		log_info("Denial evidence: bpf (%s; %s): refusals of read-only mounts (EROFS, EXDEV) "
			 "are evidence, EPERM/EACCES alone are not (docs/SECURITY.md)",
			 bpf_tracer_source(exec_ev.bpf), audit_why);
}

void exec_evidence_init(struct server *s, enum exec_evidence_mode mode, bool enable_audit)
{
	struct sandbox_audit_status st = { 0 };
	char audit_why[240] = "", bpf_why[PATH_MAX + 200] = "";
	unsigned sources = 0;
	int fd = -1;

	exec_ev.srv = s;
	s->denial_evidence = exec_ev.source;
	list_init(&exec_ev.waits);
	if (s->sandbox.missing[0])
		return; /* no sandboxes: nothing to judge */
	if (mode == EXEC_EVIDENCE_NONE) {
		log_info("Denial evidence: none (--denial-evidence none); sandboxDenied uses the "
			 "reference heuristic");
		return;
	}
	if (mode == EXEC_EVIDENCE_BPF)
		snprintf(audit_why, sizeof(audit_why), "audit: not used (--denial-evidence bpf)");
	else if ((fd = exec_evidence_adopt_audit(&st)) < 0)
		fd = open_audit(enable_audit, &st, audit_why, sizeof(audit_why));
	if (fd >= 0)
		sources |= SANDBOX_EVIDENCE_AUDIT;
	exec_ev.bpf = exec_evidence_adopt_bpf(s, mode);
	if (!exec_ev.bpf)
		exec_ev.bpf = open_bpf(s, mode, bpf_why, sizeof(bpf_why));
	if (exec_ev.bpf) {
		sources |= SANDBOX_EVIDENCE_BPF;
		bpf_tracer_set_linger(exec_ev.bpf, true);
	}
	if (!sources) {
		log_info("Denial evidence: none (%s; %s); sandboxDenied uses the reference heuristic",
			 audit_why, bpf_why);
		return;
	}
	if (sources & SANDBOX_EVIDENCE_AUDIT)
		exec_ev.buf = malloc(EV_RECV_SIZE);
	if (((sources & SANDBOX_EVIDENCE_AUDIT) && !exec_ev.buf) ||
	    sandbox_evidence_new(sources, &exec_ev.store) < 0) {
		log_warning("Denial evidence: none (out of memory)");
		free(exec_ev.buf);
		exec_ev.buf = NULL;
		if (fd >= 0) {
			audit_release(fd);
			close(fd);
		}
		bpf_tracer_close(exec_ev.bpf);
		exec_ev.bpf = NULL;
		return;
	}
	exec_ev.fd = fd;
	exec_ev.lost = st.lost;
	set_source();
	s->sandbox.audit_log = fd >= 0;
	log_sources(s, fd >= 0, audit_why, bpf_why);
	if (fd >= 0)
		arm_recv();
	if (exec_ev.bpf) {
		/* Adopted: drops during the hand-over still count against the trees. */
		exec_ev.bpf_dropped = exec_ev.bpf_adopted ? exec_ev.offer.bpf_dropped : bpf_tracer_dropped(exec_ev.bpf);
		arm_bpf();
		/* Handed over lingering (or its trees gone): detached if still idle by then. */
		if (exec_ev.bpf_adopted)
			uring_timer_arm(&exec_ev.srv->ring, &exec_ev.linger, EV_BPF_LINGER_MS, on_linger);
	}
}

void exec_evidence_stop(void)
{
	struct exec_ev_wait *w, *n;

	/* Never initialised (start-up failed before it): nothing to stop. */
	if (exec_ev.stopping || !exec_ev.srv)
		return;
	exec_ev.stopping = true;
	list_for_each_entry_safe(w, n, &exec_ev.waits, link)
		wait_finish(w, false);
	if (exec_ev.recv_op.busy)
		uring_cancel(&exec_ev.srv->ring, &exec_ev.recv_op);
	if (exec_ev.bpf_op.busy)
		uring_cancel(&exec_ev.srv->ring, &exec_ev.bpf_op);
	uring_timer_cancel(&exec_ev.tick);
	uring_timer_cancel(&exec_ev.linger);
}

bool exec_evidence_idle(void)
{
	return !exec_ev.recv_op.busy && !exec_ev.bpf_op.busy && uring_op_idle(&exec_ev.tick.op) &&
	       uring_op_idle(&exec_ev.linger.op);
}

void exec_evidence_done(void)
{
	if (exec_ev.fd >= 0) {
		audit_release(exec_ev.fd);
		close(exec_ev.fd);
	}
	exec_ev.fd = -1;
	sandbox_evidence_free(exec_ev.store);
	exec_ev.store = NULL;
	/* Detaches the programs: nothing of uexec stays in the kernel. */
	bpf_tracer_close(exec_ev.bpf);
	exec_ev.bpf = NULL;
	free(exec_ev.buf);
	exec_ev.buf = NULL;
	exec_ev.source = "none";
}

const char *exec_evidence_source(void)
{
	return exec_ev.source;
}

struct sandbox_evidence *exec_evidence_store(void)
{
	return exec_ev.store;
}

struct sandbox_ev_tree *exec_evidence_track(pid_t pid)
{
	bool live = exec_ev.store && !exec_ev.stopping && ((exec_ev.fd >= 0 && !exec_ev.audit_failed) || bpf_live());

	return live ? sandbox_evidence_track(exec_ev.store, pid) : NULL;
}

void exec_evidence_adopt_cgroup(struct sandbox_ev_tree *t, uint64_t cgroup_id)
{
	if (t && cgroup_id && exec_ev.bpf_adopted && exec_ev.offered) {
		/* RESTORE: a watch the handed tracer holds, taken over (exec_evidence_offer_end). */
		if (exec_ev.n_claimed == exec_ev.cap_claimed) {
			size_t cap = exec_ev.cap_claimed ? 2 * exec_ev.cap_claimed : 64;
			uint64_t *c = realloc(exec_ev.claimed, cap * sizeof(*c));

			if (c) {
				exec_ev.claimed = c;
				exec_ev.cap_claimed = cap;
			}
		}
		if (exec_ev.n_claimed < exec_ev.cap_claimed)
			exec_ev.claimed[exec_ev.n_claimed++] = cgroup_id;
	}
	if (t) {
		sandbox_evidence_set_cgroup(t, cgroup_id);
		/* Tracked whole now: what was read while the spawner ran it is its own. */
		sandbox_evidence_claim(exec_ev.store, t);
	} else {
		exec_evidence_unwatch(cgroup_id);
	}
}

void exec_evidence_untrack(struct sandbox_ev_tree *t)
{
	uint64_t cg;

	if (!t || !exec_ev.store)
		return;
	/* Decided (or abandoned): its cgroup is no longer watched; the last one detaches the programs. */
	cg = sandbox_evidence_cgroup(t);
	sandbox_evidence_untrack(exec_ev.store, t);
	exec_evidence_unwatch(cg);
}

bool exec_evidence_wait(struct exec_ev_wait *w, void (*done)(struct exec_ev_wait *w))
{
	uint32_t seq;
	int r;

	if (w->tree)
		bpf_drain_for(w->tree);
	if (!w->tree || exec_ev.fd < 0 || exec_ev.stopping || exec_ev.audit_failed)
		return false;
	seq = ++exec_ev.next_seq;
	/* The status first (the reply is queued at once): the lost counter. Then the barrier. */
	r = sandbox_audit_request_status(exec_ev.fd, seq);
	if (r >= 0)
		r = sandbox_audit_barrier(exec_ev.fd, getpid(), seq);
	if (r < 0) {
		log_warning_errno_ratelimited(r, "Sending the audit barrier failed");
		sandbox_evidence_set_incomplete(w->tree);
		return false;
	}
	w->seq = seq;
	w->deadline_ms = now_ms() + EV_WAIT_MS;
	w->done = done;
	list_add_tail(&w->link, &exec_ev.waits);
	if (!exec_ev.tick.armed)
		uring_timer_arm(&exec_ev.srv->ring, &exec_ev.tick, EV_TICK_MS, on_tick);
	return true;
}

void exec_evidence_cancel(struct exec_ev_wait *w)
{
	if (list_linked(&w->link))
		list_del(&w->link);
}

void exec_evidence_quiesce(void)
{
	exec_ev.quiesced = true;
	if (exec_ev.recv_op.busy)
		uring_cancel(&exec_ev.srv->ring, &exec_ev.recv_op);
	if (exec_ev.bpf_op.busy)
		uring_cancel(&exec_ev.srv->ring, &exec_ev.bpf_op);
}

bool exec_evidence_quiesced(void)
{
	return !exec_ev.recv_op.busy && !exec_ev.bpf_op.busy;
}

void exec_evidence_resume(void)
{
	if (!exec_ev.quiesced)
		return;
	exec_ev.quiesced = false;
	if (exec_ev.stopping || !exec_ev.srv)
		return;
	if (exec_ev.fd >= 0 && !exec_ev.audit_failed && !exec_ev.recv_op.busy)
		arm_recv();
	if (bpf_live() && !exec_ev.bpf_op.busy)
		arm_bpf();
}
