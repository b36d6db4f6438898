/* SPDX-License-Identifier: MIT */
/*
 * What the harnesses on the fake ring (fuzz-session.c, fast-diff.c) share: the
 * server's state as server.c sets it up, less the ring, the listener and the
 * file methods, and the "kernel" loop over the queued SQEs.
 */
#pragma once

#include <stdbool.h>

#include "fake-ring.h"

struct config;
struct server;

/*
 * Empties s's lists and counters, sets its configuration and wires
 * connections to the exec/env dispatch as server.c does (the fs module is
 * not linked: its methods answer -32601). Nothing may be in flight.
 */
void fake_server_reset(struct server *s, const struct config *cfg);

/*
 * Plays "kernel" until nothing moves: a pending ASYNC_CANCEL or
 * TIMEOUT_REMOVE completes (0) and so does its target (-ECANCELED); every
 * other pending entry i goes to step, which completes it and returns true,
 * leaves it waiting and returns false, or aborts on an opcode it does not
 * expect.
 */
void fake_kernel_run(bool (*step)(unsigned i, struct fake_sqe *e, void *ctx), void *ctx);
