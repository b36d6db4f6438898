/* SPDX-License-Identifier: MIT */
/*
 * The denial evidence sources on the ring (sandbox/evidence.h holds the
 * store and the decision): the audit netlink socket, read with
 * IORING_OP_RECV, and a barrier so that sandboxDenied is decided only once
 * every record of an exited process has been read; the optional BPF sys_exit
 * tracer (sandbox/bpf-tracer.h), its ring buffer polled with a one-shot
 * IORING_OP_POLL_ADD and drained when a watched process exits.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf-tracer-int.h"
#include "list.h"
#include "evidence.h"

struct server;

/* What the command line chose (--denial-evidence, --enable-audit); struct config's values. */
enum exec_evidence_mode {
	EXEC_EVIDENCE_AUTO,  /* audit if the host has it on (or --enable-audit), and bpf where it loads */
	EXEC_EVIDENCE_NONE,  /* the reference heuristic only */
	EXEC_EVIDENCE_AUDIT, /* audit records only (the tracer is not loaded) */
	EXEC_EVIDENCE_BPF,   /* the BPF tracer only (sandboxes are built without audit's flags) */
};

/* A process waiting for its evidence to be complete (embedded in struct proc). */
struct exec_ev_wait {
	struct list_head link;
	uint32_t seq;
	uint64_t deadline_ms;
	struct sandbox_ev_tree *tree;
	void (*done)(struct exec_ev_wait *w);
};

/*
 * Probes the sources once at start-up (after the sandbox probe; sets
 * s->sandbox.audit_log), logs the one in use, starts reading. Never fails:
 * without a source sandboxDenied stays the reference heuristic.
 */
void exec_evidence_init(struct server *s, enum exec_evidence_mode mode, bool enable_audit);
/* Stops reading (cancels the receive); audit turned on by uexec is turned off again. */
void exec_evidence_stop(void);
/* True once the receive op is idle (the loop may end). */
bool exec_evidence_idle(void);
void exec_evidence_done(void);

/* "audit", "audit+bpf", "bpf" or "none" (environment/info, the log). */
const char *exec_evidence_source(void);
/* The store, or NULL without a source. */
struct sandbox_evidence *exec_evidence_store(void);

/*
 * Before the clone of a sandboxed process: has the BPF tracer report the
 * tasks of its own (new, still empty) cgroup, the directory cg_fd. Returns
 * the cgroup id to pass to exec_evidence_track(), or 0 when the tracer is
 * not in use or refused (the tree then has no BPF evidence; logged once).
 */
uint64_t exec_evidence_watch(int cg_fd);
/* Stops watching a cgroup that exec_evidence_watch() returned (a failed spawn); 0 is a no-op. */
void exec_evidence_unwatch(uint64_t cgroup_id);

/* Tracks a sandboxed child (host pid), or NULL without a source. */
struct sandbox_ev_tree *exec_evidence_track(pid_t pid);
/*
 * The tree t (may be NULL) takes over the watch of cgroup_id (0: none) from
 * exec_evidence_watch(): its records are attributed to t, and
 * exec_evidence_untrack() ends the watch. Without a tree it ends now.
 */
void exec_evidence_adopt_cgroup(struct sandbox_ev_tree *t, uint64_t cgroup_id);
/* Forgets t; ends the watch of its cgroup (the last watch detaches the programs). */
void exec_evidence_untrack(struct sandbox_ev_tree *t);

/*
 * The child of w->tree was reaped: drains the BPF tracer's ring now (its
 * records are in before the exit can be seen; a budget overflow or a drop
 * marks the tree incomplete), then calls w->done once every audit record
 * queued before now has been read (a barrier through the kernel's audit
 * queue), or after 500 ms (the tree is then marked incomplete). Returns
 * false (and never calls back) when there is nothing to wait for.
 */
bool exec_evidence_wait(struct exec_ev_wait *w, void (*done)(struct exec_ev_wait *w));
void exec_evidence_cancel(struct exec_ev_wait *w);

/*
 * A live upgrade (src/upgrade/adopt-evidence.c, docs/UPGRADE.md "Denial
 * evidence"): the sources handed to the new binary instead of opened again.
 * The BPF tracer with its attachments (its programs keep writing records
 * into the ring during the gap; the new binary reads on from where the old
 * one stopped) and the audit socket (records wait in its receive buffer).
 */
struct exec_evidence_handover {
	bool has_bpf;
	struct bpf_tracer_handover bpf;
	uint64_t bpf_dropped;   /* bpf_tracer_dropped() as last read */
	int audit_fd;           /* the NETLINK_AUDIT socket, or -1 */
	int audit_hold_fd;      /* the shared hold on SANDBOX_AUDIT_USERS_PATH, or -1 */
	bool audit_enabled_by_us;
	uint32_t audit_lost;    /* audit's "lost" counter as last read */
	uint32_t audit_seq;     /* the last barrier's sequence number */
};
/*
 * SERIALIZE: the sources in use (fds borrowed; they stay the server's if the
 * execve fails); audit records still waiting for their event's end are filed
 * first. False when there is none to hand over.
 */
bool exec_evidence_export(struct exec_evidence_handover *h);
/*
 * RESTORE, before exec_evidence_init(): what the old binary handed over
 * (copied). exec_evidence_init() adopts it instead of opening its own, or,
 * when it cannot (a refused fd, another --denial-evidence), opens its own
 * and logs why.
 */
void exec_evidence_offer(const struct exec_evidence_handover *h);
/*
 * RESTORE, once the processes are adopted (no way back after): the handed
 * fds nothing adopted are closed (the old tracer's programs detach), and the
 * cgroups the adopted tracer still watches that no tree claimed are dropped.
 */
void exec_evidence_offer_end(void);
/*
 * Whether an adopted tree whose cgroup is cgroup_id (0: none) has no gap:
 * every source in use was handed over, its cgroup watched throughout.
 */
bool exec_evidence_gapless(uint64_t cgroup_id);
/* QUIESCE: the audit receive and the tracer's poll cancelled (busy until they land). */
void exec_evidence_quiesce(void);
bool exec_evidence_quiesced(void);
/* The upgrade did not happen: reading goes on. */
void exec_evidence_resume(void);
