/* SPDX-License-Identifier: MIT */
/*
 * The denial evidence store's insides, shared by evidence.c (trees,
 * attribution, the decision), evidence-audit.c's callers and evidence-bpf.c
 * (the tracer's records and the records no tree claimed yet).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "evidence.h"

#define HASH_SIZE 256u
#define DOMAIN_CACHE 256u
#define PENDING 64u
#define PROC_WALK_MAX 32

#define AUDIT_SYSCALL 1300
#define AUDIT_EOE 1320
#define AUDIT_SECCOMP 1326
#define AUDIT_LANDLOCK_ACCESS 1423
#define AUDIT_LANDLOCK_DOMAIN 1424

struct sandbox_ev_tree {
	struct sandbox_ev_tree *ses_next, *pid_next;
	pid_t pid;
	uint32_t ses;     /* its own audit session, or 0 */
	uint64_t cgroup;  /* its own cgroup v2 id, or 0 */
	const struct sock_fprog *filter; /* the seccomp program its processes run under, or NULL */
	bool reaped;      /* pid no longer ours: only ses and domains attribute */
	bool lost;        /* a source dropped records while it was tracked */
	unsigned probes;  /* unix socket paths looked up (SANDBOX_EVIDENCE_PROBES) */
	uint64_t ambiguous; /* tracer records of EPERM/EACCES that nothing explains */
	uint64_t total;
	uint64_t decisive; /* denials that count for sandboxDenied (not libc's nscd probe) */
	size_t n;
	struct sandbox_denial kept[SANDBOX_EVIDENCE_KEEP];
};

struct pending {
	bool used, have_syscall;
	uint64_t serial;
	struct sandbox_denial d;
	struct sandbox_denial_origin o;
	int32_t creator; /* 1424's pid: the process that created the domain */
};

/*
 * A record that no tracked tree attributes, kept a while: the spawner thread
 * (src/exec/spawner.c) clones and execs while the loop reads the sources, so
 * a command that is denied at once can be read before its tree is tracked.
 * sandbox_evidence_claim() feeds a new tree what is its own. The audit ones
 * as they were fed; the tracer's as the record, judged against the tree's
 * filter when claimed.
 */
#define ORPHANS 32u
#define ORPHAN_MS 5000u
struct evidence_orphan {
	bool used, bpf;
	uint64_t at_ms;
	struct sandbox_denial d;         /* audit */
	struct sandbox_denial_origin o;  /* pid and cgroup for the tracer's */
	int32_t syscall_nr, err;         /* the tracer's record */
	char comm[16];
	uint8_t addr[128];
	size_t addr_len;
	uint64_t args[6];
	unsigned nargs;
};

struct sandbox_evidence {
	unsigned sources;
	uint32_t own_ses; /* the server's session: a child still in it has none of its own */
	struct sandbox_ev_tree *by_ses[HASH_SIZE], *by_pid[HASH_SIZE];
	struct {
		uint64_t domain;
		struct sandbox_ev_tree *t;
	} domains[DOMAIN_CACHE];
	unsigned domain_next;
	struct pending pend[PENDING];
	/* Records no tree claimed yet (evidence-bpf.c): a ring, the oldest replaced. */
	struct evidence_orphan orphans[ORPHANS];
	unsigned orphan_next;
	bool replaying;
};

/* The tree a record belongs to, or NULL. */
struct sandbox_ev_tree *sandbox_ev_attribute(struct sandbox_evidence *ev,
					  const struct sandbox_denial_origin *o);
/* Files d in t; verdict: 1 decisive, 0 not, -1 the default rule for its kind. */
bool sandbox_ev_feed_tree(struct sandbox_evidence *ev, struct sandbox_ev_tree *t,
			const struct sandbox_denial *d, const struct sandbox_denial_origin *o,
			int verdict);
/* Keep a record no tree attributes (evidence-bpf.c). */
void sandbox_ev_orphan_audit(struct sandbox_evidence *ev, const struct sandbox_denial *d,
			   const struct sandbox_denial_origin *o);
void sandbox_ev_orphan_bpf(struct sandbox_evidence *ev, uint32_t tgid, uint64_t cgroup_id,
			 int32_t syscall_nr, int32_t err, const char *comm, const void *addr,
			 size_t addr_len, const uint64_t *args, unsigned nargs);
