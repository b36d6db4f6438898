/* SPDX-License-Identifier: MIT */
/*
 * The denial evidence sources across a live upgrade (docs/UPGRADE.md
 * "Denial evidence"): what the old binary hands over (the BPF tracer's
 * objects and attachments, the audit socket), and the new binary's adoption
 * of them, with what the adopted trees claim. The reading side is
 * evidence-ring.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/netlink.h>

#include "bpf-tracer-int.h"
#include "bpf-tracer.h"
#include "evidence-ring-internal.h"
#include "evidence-ring.h"
#include "log.h"
#include "macro.h"
#include "server.h"

/*
 * The audit socket an upgrade handed over, if it is one: records made in
 * between wait in its receive buffer. Its hold, counters and barrier
 * sequence go on. The socket, or -1.
 */
int exec_evidence_adopt_audit(struct sandbox_audit_status *st)
{
	int fd = exec_ev.offered ? exec_ev.offer.audit_fd : -1, dom = 0, proto = 0;
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
	exec_ev.audit_adopted = true;
	exec_ev.hold_fd = exec_ev.offer.audit_hold_fd >= 0 ? exec_ev.offer.audit_hold_fd : sandbox_audit_hold();
	exec_ev.enabled_by_us = exec_ev.offer.audit_enabled_by_us;
	exec_ev.next_seq = exec_ev.offer.audit_seq;
	st->enabled = true;
	st->lost = exec_ev.offer.audit_lost;
	log_info("Denial evidence: adopted the audit socket handed over (records made during the "
		 "upgrade are read from it)");
	return fd;
}

/*
 * The BPF tracer an upgrade handed over, attached as it was: nothing is
 * loaded (the module is not even opened). NULL when there is none, or it is
 * refused (logged: the caller loads another).
 */
struct bpf_tracer *exec_evidence_adopt_bpf(struct server *s, enum exec_evidence_mode mode)
{
	struct bpf_tracer *t;
	char err[200];
	int n;

	if (!exec_ev.offered || !exec_ev.offer.has_bpf || mode == EXEC_EVIDENCE_AUDIT || !s->cgroups.enabled)
		return NULL;
	t = bpf_tracer_adopt(&exec_ev.offer.bpf, err, sizeof(err));
	if (!t) {
		log_warning("Denial evidence: the BPF tracer handed over cannot be adopted (%s); "
			    "loading another (the running sandboxes' evidence is incomplete)", err);
		return NULL;
	}
	exec_ev.bpf_adopted = true;
	exec_ev.handed_ids = malloc(BPF_TRACER_MAX_CGROUPS * sizeof(*exec_ev.handed_ids));
	n = exec_ev.handed_ids ? bpf_tracer_watched_ids(t, exec_ev.handed_ids, BPF_TRACER_MAX_CGROUPS) : 0;
	exec_ev.n_handed = n > 0 ? (size_t)n : 0;
	bpf_tracer_set_linger(t, true);
	log_info("Denial evidence: adopted the BPF tracer handed over (%s, %s, %zu cgroups "
		 "watched); " BPF_MODULE_FILE " not loaded", bpf_tracer_source(t),
		 exec_ev.offer.bpf.attached ? "attached" : "detached", exec_ev.n_handed);
	return t;
}

/* ---- a live upgrade (docs/UPGRADE.md "Denial evidence") ---- */

bool exec_evidence_export(struct exec_evidence_handover *h)
{
	memset(h, 0, sizeof(*h));
	h->audit_fd = h->audit_hold_fd = -1;
	h->bpf.links[0] = h->bpf.links[1] = h->bpf.perf_fd = -1;
	if (!exec_ev.store || exec_ev.stopping)
		return false;
	/* Audit records waiting for their event's end are filed now: the new store starts empty. */
	sandbox_evidence_flush(exec_ev.store);
	if (exec_ev.bpf && !exec_ev.bpf_failed) {
		h->has_bpf = true;
		bpf_tracer_export(exec_ev.bpf, &h->bpf);
		h->bpf_dropped = exec_ev.bpf_dropped;
	}
	if (exec_ev.fd >= 0 && !exec_ev.audit_failed) {
		h->audit_fd = exec_ev.fd;
		h->audit_hold_fd = exec_ev.hold_fd;
		h->audit_enabled_by_us = exec_ev.enabled_by_us;
		h->audit_lost = exec_ev.lost;
		h->audit_seq = exec_ev.next_seq;
	}
	return h->has_bpf || h->audit_fd >= 0;
}

void exec_evidence_offer(const struct exec_evidence_handover *h)
{
	exec_ev.offer = *h;
	exec_ev.offered = true;
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
	bool audit = exec_ev.fd >= 0 && !exec_ev.audit_failed, bpf = exec_ev.bpf && !exec_ev.bpf_failed;

	if (!exec_ev.offered || (audit && !exec_ev.audit_adopted))
		return false;
	return !bpf || !cgroup_id || (exec_ev.bpf_adopted && has_id(exec_ev.handed_ids, exec_ev.n_handed, cgroup_id));
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

	if (!exec_ev.offered)
		return;
	if (exec_ev.bpf_adopted && exec_ev.bpf && exec_ev.handed_ids) {
		/* Watched by the old binary, claimed by no tree adopted here: not watched any more. */
		if (exec_ev.n_claimed) /* qsort's base must not be NULL, even for none */
			qsort(exec_ev.claimed, exec_ev.n_claimed, sizeof(*exec_ev.claimed), cmp_u64);
		for (size_t i = 0; i < exec_ev.n_handed; i++)
			if (!has_id(exec_ev.claimed, exec_ev.n_claimed, exec_ev.handed_ids[i])) {
				exec_evidence_unwatch(exec_ev.handed_ids[i]);
				dropped++;
			}
		if (dropped)
			log_info("Denial evidence: %zu cgroups the tracer handed over watched belong to "
				 "no process adopted; no longer watched", dropped);
	} else if (exec_ev.offer.has_bpf && !exec_ev.bpf_adopted) {
		close_bpf_handover(&exec_ev.offer.bpf);
	}
	if (exec_ev.offer.audit_fd >= 0 && !exec_ev.audit_adopted) {
		safe_close(exec_ev.offer.audit_fd);
		safe_close(exec_ev.offer.audit_hold_fd);
	}
	free(exec_ev.handed_ids);
	free(exec_ev.claimed);
	exec_ev.handed_ids = exec_ev.claimed = NULL;
	exec_ev.n_handed = exec_ev.n_claimed = exec_ev.cap_claimed = 0;
	exec_ev.offered = false;
}
