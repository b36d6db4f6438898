/* SPDX-License-Identifier: MIT */
/*
 * The blob's denial evidence part into the view (docs/UPGRADE.md "Denial
 * evidence"), with its rules: the evidence record's values and the held
 * fds of roles 16..23 must describe one tracer and one audit socket the new
 * binary can adopt as a whole, or nothing. What the fds are (a program, a
 * map, a link, a perf event, a NETLINK_AUDIT socket) is checked when they
 * are adopted (sandbox/bpf-tracer.c, src/exec/evidence-ring.c), which falls
 * back to opening the sources afresh. No I/O.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "view.h"

#define bad upgrade_view_fail

int upgrade_view_read_evidence(const struct upgrade_state *st, uint32_t rec,
			       struct upgrade_view *v, char *err, size_t err_size)
{
	struct upgrade_view_evidence *e = &v->evidence;
	bool hook = upgrade_rec_field(st, rec, UPGRADE_EVIDENCE_BPF_HOOK) != NULL;
	bool bss = upgrade_rec_field(st, rec, UPGRADE_EVIDENCE_BPF_BSS_SIZE) != NULL;
	bool off = upgrade_rec_field(st, rec, UPGRADE_EVIDENCE_BPF_DROPPED_OFF) != NULL;
	bool tp = upgrade_rec_field(st, rec, UPGRADE_EVIDENCE_BPF_TP_ID) != NULL;

	e->present = true;
	e->has_bpf = hook;
	if (hook != bss || hook != off)
		return bad(err, err_size, "record %u: the tracer's hook, .bss size and drop counter's "
			   "offset come together", rec);
	e->bpf_hook = (int)upgrade_rec_u64(st, rec, UPGRADE_EVIDENCE_BPF_HOOK, 0);
	e->bpf_tp_id = (int)upgrade_rec_u64(st, rec, UPGRADE_EVIDENCE_BPF_TP_ID, 0);
	e->bpf_bss_size = upgrade_rec_u64(st, rec, UPGRADE_EVIDENCE_BPF_BSS_SIZE, 0);
	e->bpf_dropped_off = upgrade_rec_u64(st, rec, UPGRADE_EVIDENCE_BPF_DROPPED_OFF, 0);
	e->bpf_dropped = upgrade_rec_u64(st, rec, UPGRADE_EVIDENCE_BPF_DROPPED, 0);
	e->bpf_attached = upgrade_rec_bool(st, rec, UPGRADE_EVIDENCE_BPF_ATTACHED);
	if (tp != (hook && e->bpf_hook == UPGRADE_EV_HOOK_TP))
		return bad(err, err_size, "record %u: a tracepoint id exactly with the tracepoint hook",
			   rec);
	if (hook && (e->bpf_dropped_off % 8 || e->bpf_dropped_off + 8 > e->bpf_bss_size))
		return bad(err, err_size, "record %u: the drop counter is not an aligned u64 within "
			   ".bss", rec);
	if (!hook && (e->bpf_attached || upgrade_rec_field(st, rec, UPGRADE_EVIDENCE_BPF_DROPPED)))
		return bad(err, err_size, "record %u: tracer values without the tracer", rec);
	e->audit_lost = (uint32_t)upgrade_rec_u64(st, rec, UPGRADE_EVIDENCE_AUDIT_LOST, 0);
	e->audit_seq = (uint32_t)upgrade_rec_u64(st, rec, UPGRADE_EVIDENCE_AUDIT_SEQ, 0);
	e->audit_enabled_by_us = upgrade_rec_bool(st, rec, UPGRADE_EVIDENCE_AUDIT_ENABLED);
	return 0;
}

/* The audit values are read with the socket; these say whether any was given. */
static bool audit_values(const struct upgrade_view_evidence *e)
{
	return e->audit_lost || e->audit_seq || e->audit_enabled_by_us;
}

int upgrade_view_check_evidence(struct upgrade_view *v, char *err, size_t err_size)
{
	struct upgrade_view_evidence *e = &v->evidence;
	int objs[] = {
		e->exit_prog = upgrade_view_held_fd(v, UPGRADE_HELD_BPF_EXIT_PROG, -1),
		e->ring = upgrade_view_held_fd(v, UPGRADE_HELD_BPF_RING, -1),
		e->watched = upgrade_view_held_fd(v, UPGRADE_HELD_BPF_WATCHED, -1),
		e->bss = upgrade_view_held_fd(v, UPGRADE_HELD_BPF_BSS, -1),
	};
	bool tp;

	e->landlock_prog = upgrade_view_held_fd(v, UPGRADE_HELD_BPF_LANDLOCK_PROG, -1);
	e->links[0] = upgrade_view_held_fd(v, UPGRADE_HELD_BPF_ATTACH, 0);
	e->links[1] = upgrade_view_held_fd(v, UPGRADE_HELD_BPF_ATTACH, 1);
	e->perf = upgrade_view_held_fd(v, UPGRADE_HELD_BPF_ATTACH, 2);
	e->audit_socket = upgrade_view_held_fd(v, UPGRADE_HELD_AUDIT_SOCKET, -1);
	e->audit_hold = upgrade_view_held_fd(v, UPGRADE_HELD_AUDIT_HOLD, -1);
	for (size_t i = 0; i < ELEMENTSOF(objs); i++)
		if ((objs[i] >= 0) != e->has_bpf)
			return bad(err, err_size, "the tracer's programs and maps and its values do not "
				   "come together");
	if (e->landlock_prog >= 0 && !e->has_bpf)
		return bad(err, err_size, "Landlock's program without the tracer");
	tp = e->bpf_hook == UPGRADE_EV_HOOK_TP;
	if (!e->bpf_attached) {
		if (e->links[0] >= 0 || e->links[1] >= 0 || e->perf >= 0)
			return bad(err, err_size, "attachments of a tracer not attached");
	} else if ((e->links[1] >= 0) != (e->landlock_prog >= 0) || (e->perf >= 0) != tp ||
		   (!tp && e->links[0] < 0)) {
		return bad(err, err_size, "the attachments are not those of the tracer's hook");
	}
	if (e->audit_hold >= 0 && e->audit_socket < 0)
		return bad(err, err_size, "a hold on audit without its socket");
	if (audit_values(e) && e->audit_socket < 0)
		return bad(err, err_size, "audit values without its socket");
	if (!e->present && (e->has_bpf || e->audit_socket >= 0))
		return bad(err, err_size, "evidence fds without the evidence record");
	if (e->present && !e->has_bpf && e->audit_socket < 0)
		return bad(err, err_size, "an evidence record without a source");
	return 0;
}

/* One string of a kept denial at *off: u8 len (at most max), then len bytes without NUL. */
static bool kept_str(const struct upgrade_field *f, size_t *off, unsigned max)
{
	size_t len;

	if (*off >= f->len)
		return false;
	len = f->val[(*off)++];
	if (len > max || len > f->len - *off || memchr(f->val + *off, 0, len))
		return false;
	*off += len;
	return true;
}

/* evidenceKept: each entry whole, a known kind, decisive 0 or 1, its strings bounded. */
static int check_kept(const struct upgrade_field *f, uint32_t rec, uint32_t *ret_n, char *err,
		      size_t err_size)
{
	size_t off = 0;
	uint32_t n = 0;

	while (off < f->len) {
		if (n == UPGRADE_EV_KEPT_MAX)
			return bad(err, err_size, "record %u: evidenceKept: more than %u denials", rec,
				   UPGRADE_EV_KEPT_MAX);
		if (f->len - off < UPGRADE_EV_KEPT_FIXED - 3 || f->val[off] >= UPGRADE_EV_KEPT_KINDS ||
		    f->val[off + 1] > 1)
			return bad(err, err_size, "record %u: evidenceKept: denial %u is cut short or "
				   "of an unknown kind", rec, n);
		off += UPGRADE_EV_KEPT_FIXED - 3;
		if (!kept_str(f, &off, UPGRADE_EV_KEPT_OBJECT) ||
		    !kept_str(f, &off, UPGRADE_EV_KEPT_ACCESS) || !kept_str(f, &off, UPGRADE_EV_KEPT_COMM))
			return bad(err, err_size, "record %u: evidenceKept: denial %u: a string cut "
				   "short, too long or with a NUL", rec, n);
		n++;
	}
	*ret_n = n;
	return 0;
}

int upgrade_view_proc_evidence(const struct upgrade_state *st, uint32_t rec,
			       struct upgrade_view_proc *p, char *err, size_t err_size)
{
	p->ev_lost = upgrade_rec_bool(st, rec, UPGRADE_PROC_EV_LOST);
	p->ev_ambiguous = upgrade_rec_u64(st, rec, UPGRADE_PROC_EV_AMBIGUOUS, 0);
	p->ev_kept = upgrade_rec_field(st, rec, UPGRADE_PROC_EV_KEPT);
	if (p->ev_kept && check_kept(p->ev_kept, rec, &p->n_ev_kept, err, err_size) < 0)
		return -EBADMSG;
	/* As evidenceDenied: tracked until the exit is published, and only a sandboxed one. */
	if ((p->ev_lost || p->ev_ambiguous || p->ev_kept) && (!p->sandboxed || p->reaped))
		return bad(err, err_size, "record %u: denial evidence on a process %s", rec,
			   p->sandboxed ? "reaped" : "not sandboxed");
	return 0;
}
