/* SPDX-License-Identifier: MIT */
/*
 * Evidence of sandbox denials, per sandboxed process tree (issue 14).
 *
 * Sources feed denials in; sandboxDenied is then decided from them
 * (sandbox_evidence_decide) instead of from the words a command printed.
 * This module holds no ring: its readers live in src/ (exec's
 * evidence-ring.c) and hand it what they read.
 *
 *  - audit (evidence-audit.c): a NETLINK_AUDIT socket in the read-only
 *    multicast group; Landlock (1423/1424) and seccomp (1326) records,
 *    with the SYSCALL (1300) record of the same event for the pid and the
 *    audit session. Sees what an LSM or seccomp refused; not EROFS from a
 *    read-only mount (no hook runs), so for that class it is not complete.
 *  - bpf (sandbox/bpf-tracer.[ch], read in evidence-ring.c): sys_exit
 *    errors of the tasks in a tree's own cgroup v2 leaf; fed through
 *    sandbox_evidence_feed_bpf() with the cgroup id and the pid.
 *
 * Attribution (docs/ARCHITECTURE.md "Denial evidence"): each sandboxed
 * command gets an audit session of its own (apply.c writes its loginuid),
 * inherited by every descendant across fork and exec and never reused, so a
 * record's ses= names the tree even after the process is reaped. Without a
 * session: the Landlock domain id of a tree already seen, then the pid or
 * parent pid of a tracked process, then the /proc parent chain.
 *
 * Everything is bounded: SANDBOX_EVIDENCE_KEEP denials kept per tree (the
 * rest counted), a fixed table of events being assembled, a bounded domain
 * cache; records of unknown processes are dropped.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SANDBOX_EVIDENCE_KEEP 16 /* denials kept per process tree */

enum sandbox_denial_kind {
	SANDBOX_DENIAL_FS,      /* Landlock filesystem access */
	SANDBOX_DENIAL_NET,     /* Landlock TCP bind/connect */
	SANDBOX_DENIAL_SCOPE,   /* Landlock scoping (signal, abstract unix socket) */
	SANDBOX_DENIAL_SECCOMP, /* a seccomp filter's action */
	SANDBOX_DENIAL_MOUNT,   /* a read-only mount's refusal (EROFS, EXDEV): bpf */
	SANDBOX_DENIAL_SYSCALL, /* a call that failed with EPERM/EACCES, mechanism unknown: bpf */
};

/* The sources a store was told about (bit mask). */
#define SANDBOX_EVIDENCE_AUDIT (1u << 0)
#define SANDBOX_EVIDENCE_BPF (1u << 1)

struct sandbox_denial {
	enum sandbox_denial_kind kind;
	int32_t pid;      /* host pid, 0 unknown */
	int32_t syscall;  /* -1 unknown */
	int32_t err;      /* the errno returned, 0 unknown */
	char object[256]; /* path, address (daddr:dport), or "" */
	char access[96];  /* what was refused: Landlock blockers ("fs.write_file"), "errno" ... */
	char comm[16];
	bool decisive;    /* counts for sandboxDenied (set by the store) */
};

/* What a source knows about who did it; 0 for what it does not know. */
struct sandbox_denial_origin {
	int32_t pid, ppid;
	uint32_t ses;     /* audit session; 0 or UINT32_MAX unknown */
	uint64_t domain;  /* Landlock domain id */
	uint64_t cgroup;  /* cgroup v2 id (the bpf tracer's records), 0 unknown */
};

struct sandbox_evidence;
struct sandbox_ev_tree;

/* sources: SANDBOX_EVIDENCE_* active in this store. Returns 0 or -ENOMEM. */
int sandbox_evidence_new(unsigned sources, struct sandbox_evidence **ret);
void sandbox_evidence_free(struct sandbox_evidence *ev);
unsigned sandbox_evidence_sources(const struct sandbox_evidence *ev);

/*
 * Starts collecting for the process the server spawned (host pid; the
 * namespace's init when there is one). Reads its audit session now (the
 * child exists until it is reaped). Returns NULL on ENOMEM.
 */
struct sandbox_ev_tree *sandbox_evidence_track(struct sandbox_evidence *ev, pid_t pid);
void sandbox_evidence_untrack(struct sandbox_evidence *ev, struct sandbox_ev_tree *t);
/*
 * The tree's own cgroup v2 id (a per-sandbox cgroup, when the server makes
 * one): the bpf tracer's records carry it and attribute by it.
 */
void sandbox_evidence_set_cgroup(struct sandbox_ev_tree *t, uint64_t cgroup_id);
/* That id, or 0 (none, or t is NULL). */
uint64_t sandbox_evidence_cgroup(const struct sandbox_ev_tree *t);
/*
 * The seccomp program the tree's processes run under (the plan's; it lives
 * as long as the server): the tracer's EPERM for a call it refuses, run on
 * the recorded arguments (filter.h's sandbox_seccomp_refuses), is decisive.
 */
struct sock_fprog;
void sandbox_evidence_set_filter(struct sandbox_ev_tree *t, const struct sock_fprog *prog);

/*
 * One record of the bpf sys_exit tracer (sandbox/bpf-tracer.h's struct
 * bpf_denial, passed field by field so this module does not depend on it):
 * err is the negative errno the call returned, 0 for a record of Landlock's
 * own hook; addr/addr_len the address of a refused connect() (NULL, 0
 * otherwise). EROFS and EXDEV (the read-only mounts) and Landlock's hook are
 * decisive; EACCES and EPERM alone are not (permission bits and missing
 * capabilities fail the same way) and are only logged, except a refused
 * connect() to a socket that exists: an abstract unix name, another family,
 * or a unix path where a socket is (a probe of an absent one, like libc's
 * nscd socket, would have failed anyway), and EPERM from a call the tree's
 * seccomp program refuses with these arguments (args: the first nargs, 0
 * when the hook had none; kind "seccomp"), or, without them, from a call only
 * the sandbox refuses whatever its arguments (sandbox_seccomp_always_refused()).
 * The connect check looks the path up in
 * the server's mount namespace, at most SANDBOX_EVIDENCE_PROBES times per
 * tree; past that, or for a relative path, the tree counts as incomplete.
 */
bool sandbox_evidence_feed_bpf(struct sandbox_evidence *ev, uint32_t tgid, uint64_t cgroup_id,
			       int32_t syscall_nr, int32_t err, const char *comm, const void *addr,
			       size_t addr_len, const uint64_t *args, unsigned nargs);
#define SANDBOX_EVIDENCE_PROBES 8 /* unix socket paths looked up per tree */

/*
 * t is tracked whole (its session, cgroup and filter set): it takes the
 * records that came before it was (kept for a few seconds, a bounded ring),
 * those that name its pid, its parent pid, its session or its cgroup. The
 * spawner thread lets a command run, and be denied, before the loop tracks it.
 */
void sandbox_evidence_claim(struct sandbox_evidence *ev, struct sandbox_ev_tree *t);
/* The tracked child was reaped: its pid may be reused, so it no longer attributes records. */
void sandbox_evidence_reaped(struct sandbox_ev_tree *t);
/* A source could not confirm it delivered everything for t (e.g. no barrier in time). */
void sandbox_evidence_set_incomplete(struct sandbox_ev_tree *t);
/*
 * A live upgrade (src/upgrade/adopt-sandbox.c): the decisive denials the old
 * binary's store held for the tree, and the same tree tracked again in the
 * new one: it carries them (sandboxDenied counts them; the `denials` listed
 * at exit are those seen since) and is marked incomplete, as records made
 * during the hand-over reached no reader.
 */
uint64_t sandbox_evidence_decisive(const struct sandbox_ev_tree *t);
void sandbox_evidence_carry(struct sandbox_ev_tree *t, uint64_t decisive);
/*
 * The same when the sources were handed over instead (src/upgrade/adopt-evidence.c:
 * the records of the gap are read by the new binary): the tree's counts carried
 * (ambiguous: the tracer's EPERM/EACCES that nothing explained), and marked
 * incomplete only if it was before (lost) or a source it used has a gap (gap).
 */
uint64_t sandbox_evidence_ambiguous(const struct sandbox_ev_tree *t);
void sandbox_evidence_carry_whole(struct sandbox_ev_tree *t, uint64_t decisive,
				  uint64_t ambiguous, bool lost, bool gap);
/* A denial the old binary kept for the tree, kept again (not counted: the counts travel). */
void sandbox_evidence_keep(struct sandbox_ev_tree *t, const struct sandbox_denial *d);

/* One denial from any source: attributed to a tracked tree or dropped. Returns true if kept. */
bool sandbox_evidence_feed(struct sandbox_evidence *ev, const struct sandbox_denial *d,
			   const struct sandbox_denial_origin *o);

/*
 * One audit record (netlink message type and its text, not NUL-terminated).
 * Records of one event (same serial) are assembled; a Landlock denial is
 * fed once its SYSCALL record (pid, ses, syscall, exit) or the end of the
 * event arrives, or when the assembly table needs its slot.
 */
void sandbox_evidence_feed_audit(struct sandbox_evidence *ev, unsigned type, const char *text,
				 size_t len);
/* Feeds the Landlock denials still waiting for their SYSCALL record (before a decision). */
void sandbox_evidence_flush(struct sandbox_evidence *ev);

/*
 * A source may have dropped records (audit "lost" grew, the socket
 * overflowed): every tree tracked now is marked incomplete.
 */
void sandbox_evidence_mark_lost(struct sandbox_evidence *ev);

/*
 * sandboxDenied for tree t, whose command exited with exit_code; texts as
 * for sandbox_likely_denied (used where evidence cannot decide):
 *   - a denial recorded and a non-zero exit: true;
 *   - exit 0: false;
 *   - no denial while the tree's sources stayed complete: audit (the tree
 *     has its own audit session) and bpf (its cgroup was watched): false;
 *     audit alone: mount-made refusals (EROFS) have no record, so true only
 *     if the output names that error ("read-only file system"); bpf alone:
 *     Landlock's and most seccomp refusals are EPERM/EACCES, which it
 *     cannot tell from permission bits, so false only if the tree made no
 *     such refusal left unexplained (a probe of an absent unix socket is
 *     explained), else the heuristic;
 *   - incomplete evidence (records lost, a budget overflowed, neither an
 *     audit session nor a watched cgroup): the reference heuristic.
 * *ret_basis (may be NULL) names what decided (static string, for the log).
 */
bool sandbox_evidence_decide(const struct sandbox_evidence *ev, const struct sandbox_ev_tree *t,
			     int exit_code, const char *const *texts, const size_t *lens, size_t n,
			     const char **ret_basis);

/* The denials kept for t (*ret_n of them) and how many were seen in all. */
const struct sandbox_denial *sandbox_evidence_denials(const struct sandbox_ev_tree *t, size_t *ret_n,
						      uint64_t *ret_total);
bool sandbox_evidence_complete(const struct sandbox_ev_tree *t);

/* "fs", "net", "scope", "seccomp", "mount", "syscall". */
const char *sandbox_denial_kind_name(enum sandbox_denial_kind k);

/* Audit through netlink (evidence-audit.c). */
struct sandbox_audit_status {
	bool enabled;
	uint32_t lost, backlog, backlog_limit, rate_limit;
};

/*
 * Opens a NETLINK_AUDIT socket (CLOEXEC, non-blocking for reads through
 * the ring) and reads the audit status. enable: turn auditing on if it is
 * off (the --enable-audit flag); *ret_enabled_by_us says it was. Joins
 * AUDIT_NLGRP_READLOG (CAP_AUDIT_READ). Returns the fd or -errno; err says
 * why in one phrase.
 */
int sandbox_audit_open(bool enable, struct sandbox_audit_status *st, bool *ret_enabled_by_us,
		       char *err, size_t errsz);
/* Sends AUDIT_GET with sequence seq (the reply comes on fd). Returns 0 or -errno. */
int sandbox_audit_request_status(int fd, uint32_t seq);
/* Parses an AUDIT_GET reply's payload. Returns 0 or -EINVAL. */
int sandbox_audit_parse_status(const void *payload, size_t len, struct sandbox_audit_status *st);
/*
 * Sends a user record (AUDIT_TRUSTED_APP "uexec-evidence-barrier=PID:SEQ", needs
 * CAP_AUDIT_WRITE) that goes through the kernel's audit queue behind every
 * record already queued: once it is read back, so is everything a process
 * that has exited did. Returns 0 or -errno.
 */
int sandbox_audit_barrier(int fd, pid_t pid, uint32_t seq);
/*
 * True if this record is the barrier of server pid, sent by it (the kernel's
 * pid= leading the record is pid: another sender's text does not count);
 * *ret_seq its sequence.
 */
bool sandbox_audit_is_barrier(unsigned type, const char *text, size_t len, pid_t pid,
			      uint32_t *ret_seq);
/* Turns auditing off again (the server enabled it). Returns 0 or -errno. */
int sandbox_audit_disable(int fd);

/*
 * Every uexec that reads audit records holds a shared flock on this file for
 * as long as it does (sandbox_audit_hold). A server that turns auditing on
 * (--enable-audit) leaves a mark beside it; the last holder to leave turns
 * auditing off again if the mark is there (sandbox_audit_release). Before,
 * the server that had turned it on turned it off at its exit, and a server
 * started meanwhile, relying on the records, lost them all.
 */
#define SANDBOX_AUDIT_USERS_PATH "/run/uexec-audit.users"
#define SANDBOX_AUDIT_ENABLED_PATH "/run/uexec-audit.enabled"
/* The shared hold: an fd to keep, or -errno (then nothing is held). */
int sandbox_audit_hold(void);
/*
 * At exit of any server that read audit: when no other holder is left and a
 * uexec turned auditing on, turns it off (1); else leaves it as it is (0);
 * -errno on failure. Closes hold_fd (if >= 0) either way.
 */
int sandbox_audit_release(int fd, int hold_fd);
