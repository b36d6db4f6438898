/* SPDX-License-Identifier: MIT */
/*
 * A link-time stand-in for uring/ring.c used by the session fuzz target: the
 * same API (ring.h), but SQEs go to an in-memory queue that the harness plays
 * "kernel" for. Nothing reaches io_uring; completions are dispatched like
 * ring.c does (busy cleared, then the handler).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "ring.h"

struct fake_sqe {
	struct uring_op *op; /* NULL for SQEs whose completion is ignored */
	struct io_uring_sqe sqe;
	bool done;
};

/* Forgets every queued SQE (between inputs, once nothing is in flight). */
void fake_ring_reset(void);
/* Number of queued SQEs, done or not; entries are valid until the next SQE is queued. */
unsigned fake_ring_count(void);
struct fake_sqe *fake_ring_get(unsigned i);
/* Completes entry i: marks it done and, if it has an op, calls its handler. */
void fake_ring_complete(unsigned i, int res, uint32_t flags);
/* The oldest pending entry for op, or -1. */
int fake_ring_find(const struct uring_op *op);
/* Drops done entries from the queue. */
void fake_ring_compact(void);
