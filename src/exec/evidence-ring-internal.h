/* SPDX-License-Identifier: MIT */
/*
 * Between the denial evidence's reading side (evidence-ring.c) and its
 * live-upgrade side (evidence-upgrade.c): the module's state. Private to
 * exec.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf-tracer.h"
#include "evidence-ring.h"
#include "list.h"
#include "ring.h"
#include "sandbox.h"

struct server;

/*
 * Module state (docs/ARCHITECTURE.md "Global state"): one audit socket and
 * one store per server, like the ring they are read on.
 */
struct exec_ev_state {
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
};
extern struct exec_ev_state exec_ev;

/* An upgrade's audit socket, if it is one (evidence-upgrade.c): the socket, or -1. */
int exec_evidence_adopt_audit(struct sandbox_audit_status *st);
/* An upgrade's BPF tracer, attached as it was; NULL when none or refused (logged). */
struct bpf_tracer *exec_evidence_adopt_bpf(struct server *s, enum exec_evidence_mode mode);
