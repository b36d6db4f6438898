/* SPDX-License-Identifier: MIT */
/*
 * The denial evidence sources across a live upgrade (docs/UPGRADE.md
 * "Denial evidence"): SERIALIZE hands the BPF tracer (its programs and maps,
 * and while attached its attachments, so that the programs stay attached
 * across the execve and keep writing records into the ring) and the audit
 * socket (records wait in its receive buffer) to the new binary, with what
 * user space keeps of them (the evidence record) and each tree's counts
 * (a process's evidenceLost, evidenceAmbiguous). RESTORE offers them to
 * exec_evidence_init(), which adopts them instead of loading the tracer
 * and opening a socket, or falls back to that (logged); a tree is marked
 * incomplete only where a source it used has a gap. QUIESCE stops the
 * sources' reads last: an exit being published waits for its audit barrier.
 */
#include <string.h>

#include "conn.h"
#include "evidence-ring.h"
#include "evidence.h"
#include "proc.h"
#include "session.h"
#include "state.h"
#include "upgrade-internal.h"
#include "view.h"


unsigned upgrade_put_evidence(struct upgrade_writer *w)
{
	struct exec_evidence_handover h;
	const struct bpf_tracer_loaded *l = &h.bpf.obj;
	unsigned n = 0;

	if (!exec_evidence_export(&h))
		return 0;
	upgrade_writer_begin(w, UPGRADE_REC_EVIDENCE);
	if (h.has_bpf) {
		upgrade_writer_u64(w, UPGRADE_EVIDENCE_BPF_HOOK, (uint64_t)l->hook);
		if (l->hook == BPF_HOOK_TP)
			upgrade_writer_u64(w, UPGRADE_EVIDENCE_BPF_TP_ID, (uint64_t)l->tp_id);
		upgrade_writer_u64(w, UPGRADE_EVIDENCE_BPF_BSS_SIZE, l->bss_size);
		upgrade_writer_u64(w, UPGRADE_EVIDENCE_BPF_DROPPED_OFF, l->dropped_off);
		upgrade_writer_bool(w, UPGRADE_EVIDENCE_BPF_ATTACHED, h.bpf.attached);
		upgrade_writer_u64(w, UPGRADE_EVIDENCE_BPF_DROPPED, h.bpf_dropped);
	}
	if (h.audit_fd >= 0) {
		upgrade_writer_u64(w, UPGRADE_EVIDENCE_AUDIT_LOST, h.audit_lost);
		upgrade_writer_u64(w, UPGRADE_EVIDENCE_AUDIT_SEQ, h.audit_seq);
		upgrade_writer_bool(w, UPGRADE_EVIDENCE_AUDIT_ENABLED, h.audit_enabled_by_us);
	}
	upgrade_writer_end(w);
	if (h.has_bpf) {
		n += upgrade_writer_held(w, UPGRADE_HELD_BPF_EXIT_PROG, l->exit_prog, -1);
		n += upgrade_writer_held(w, UPGRADE_HELD_BPF_LANDLOCK_PROG, l->landlock_prog, -1);
		n += upgrade_writer_held(w, UPGRADE_HELD_BPF_RING, l->ring_fd, -1);
		n += upgrade_writer_held(w, UPGRADE_HELD_BPF_WATCHED, l->watched_fd, -1);
		n += upgrade_writer_held(w, UPGRADE_HELD_BPF_BSS, l->bss_fd, -1);
		if (h.bpf.attached) {
			n += upgrade_writer_held(w, UPGRADE_HELD_BPF_ATTACH, h.bpf.links[0], 0);
			n += upgrade_writer_held(w, UPGRADE_HELD_BPF_ATTACH, h.bpf.links[1], 1);
			n += upgrade_writer_held(w, UPGRADE_HELD_BPF_ATTACH, h.bpf.perf_fd, 2);
		}
	}
	n += upgrade_writer_held(w, UPGRADE_HELD_AUDIT_SOCKET, h.audit_fd, -1);
	if (h.audit_fd >= 0)
		n += upgrade_writer_held(w, UPGRADE_HELD_AUDIT_HOLD, h.audit_hold_fd, -1);
	return n;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static size_t put_str(uint8_t *p, const char *s, size_t max)
{
	size_t n = strnlen(s, max);

	p[0] = (uint8_t)n;
	memcpy(p + 1, s, n);
	return 1 + n;
}

/* The denials the tree kept (listed at exit), in state.h's evidenceKept framing. */
static void put_kept(struct upgrade_writer *w, const struct sandbox_ev_tree *t)
{
	enum { ENTRY = UPGRADE_EV_KEPT_FIXED + UPGRADE_EV_KEPT_OBJECT + UPGRADE_EV_KEPT_ACCESS +
		       UPGRADE_EV_KEPT_COMM };
	uint8_t buf[UPGRADE_EV_KEPT_MAX * ENTRY];
	uint64_t total;
	size_t n, off = 0;
	const struct sandbox_denial *d = sandbox_evidence_denials(t, &n, &total);

	_Static_assert(SANDBOX_EVIDENCE_KEEP <= UPGRADE_EV_KEPT_MAX, "kept denials");
	_Static_assert(SANDBOX_DENIAL_SYSCALL + 1 == UPGRADE_EV_KEPT_KINDS, "denial kinds");
	for (size_t i = 0; i < n; i++) {
		buf[off++] = (uint8_t)d[i].kind;
		buf[off++] = d[i].decisive;
		put_le32(buf + off, (uint32_t)d[i].pid);
		put_le32(buf + off + 4, (uint32_t)d[i].syscall);
		put_le32(buf + off + 8, (uint32_t)d[i].err);
		off += 12;
		off += put_str(buf + off, d[i].object, UPGRADE_EV_KEPT_OBJECT);
		off += put_str(buf + off, d[i].access, UPGRADE_EV_KEPT_ACCESS);
		off += put_str(buf + off, d[i].comm, UPGRADE_EV_KEPT_COMM);
	}
	if (off)
		upgrade_writer_bytes(w, UPGRADE_PROC_EV_KEPT, buf, off);
}

void upgrade_put_proc_evidence(struct upgrade_writer *w, const struct proc *p)
{
	const struct sandbox_ev_tree *t = p->reaped ? NULL : p->ev_wait.tree;
	uint64_t ambiguous = sandbox_evidence_ambiguous(t);

	if (!t)
		return;
	if (!sandbox_evidence_complete(t))
		upgrade_writer_bool(w, UPGRADE_PROC_EV_LOST, true);
	if (ambiguous)
		upgrade_writer_u64(w, UPGRADE_PROC_EV_AMBIGUOUS, ambiguous);
	put_kept(w, t);
}

const char *upgrade_evidence_pending(const struct server *s)
{
	const struct session *ss;
	const struct proc *p;

	/* An exit being published waits for its audit barrier's reply: read on (transient). */
	list_for_each_entry(ss, &s->sessions, link)
		list_for_each_entry(p, &ss->procs_list, link)
			if (p->ev_waiting)
				return NULL;
	exec_evidence_quiesce();
	return exec_evidence_quiesced() ? NULL : "the denial evidence's reads";
}

void upgrade_restore_evidence(const struct upgrade_view *v)
{
	const struct upgrade_view_evidence *e = &v->evidence;
	struct exec_evidence_handover h = {
		.has_bpf = e->has_bpf,
		.bpf = {
			.obj = {
				.hook = e->bpf_hook,
				.exit_prog = e->exit_prog,
				.landlock_prog = e->landlock_prog,
				.tp_id = e->bpf_tp_id,
				.ring_fd = e->ring,
				.watched_fd = e->watched,
				.bss_fd = e->bss,
				.bss_size = (size_t)e->bpf_bss_size,
				.dropped_off = (size_t)e->bpf_dropped_off,
			},
			.links = { e->links[0], e->links[1] },
			.perf_fd = e->perf,
			.attached = e->bpf_attached,
		},
		.bpf_dropped = e->bpf_dropped,
		.audit_fd = e->audit_socket,
		.audit_hold_fd = e->audit_hold,
		.audit_enabled_by_us = e->audit_enabled_by_us,
		.audit_lost = e->audit_lost,
		.audit_seq = e->audit_seq,
	};

	/* The enums agree (state.h's copy of bpf-tracer-int.h's, for a parser without it). */
	_Static_assert((int)UPGRADE_EV_HOOK_TP == (int)BPF_HOOK_TP, "hook numbers");
	_Static_assert((int)_UPGRADE_EV_HOOK_MAX == (int)_BPF_HOOK_MAX, "hook numbers");
	if (e->present)
		exec_evidence_offer(&h);
}

void upgrade_restore_evidence_end(void)
{
	exec_evidence_offer_end();
}

void upgrade_evidence_carry(struct sandbox_ev_tree *t, const struct upgrade_view_proc *vp)
{
	bool gap = !exec_evidence_gapless(sandbox_evidence_cgroup(t));

	const struct upgrade_field *f = vp->ev_kept;
	size_t off = 0;

	sandbox_evidence_carry_whole(t, vp->ev_denied, vp->ev_ambiguous, vp->ev_lost, gap);
	/* The view checked the framing (view-evidence.c). */
	while (t && f && off < f->len) {
		struct sandbox_denial d = { .kind = (enum sandbox_denial_kind)f->val[off],
					    .decisive = f->val[off + 1] };
		char *strs[] = { d.object, d.access, d.comm };

		d.pid = (int32_t)le32(f->val + off + 2);
		d.syscall = (int32_t)le32(f->val + off + 6);
		d.err = (int32_t)le32(f->val + off + 10);
		off += 14;
		for (size_t i = 0; i < 3; i++) {
			size_t len = f->val[off++];

			memcpy(strs[i], f->val + off, len); /* each within its array (view bounds) */
			strs[i][len] = '\0';
			off += len;
		}
		sandbox_evidence_keep(t, &d);
	}
}
