/* SPDX-License-Identifier: MIT */
/*
 * The JSON hot path against the general path (src/rpc/rpc-fast.c,
 * src/exec/rpc-process-fast.c, proc-wire.c): the same frames dispatched once
 * with the hot path off and once with it on, each time on a fresh connection
 * and session holding the same processes (fixtures in several states), then
 * the same events (new output, an exit), the "kernel" finishing the stdin
 * writes and firing the long polls' timers. What the client receives, the
 * signals sent, the bytes written to stdin and the per-method counters must
 * be the same, byte for byte. Used by tests/unit/test-rpc-fast.c (corpora and
 * generated requests) and fuzz/fuzz-jsonrpc-fast.c (arbitrary input).
 *
 * Link with the server's libraries, fuzz/fake-ring.c and uring/ring-timer.c,
 * and -Wl,--wrap=proc_kill_group,--wrap=proc_cg_kill (no signal leaves the
 * test: the fixtures' pids are not real).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Registers the methods and sets the server up; once. */
void fast_diff_init(void);

/*
 * Runs frames[0..n) (each lens[i] bytes) through both paths in every
 * variant (handshake done or not, nesting limits 128, 3 and 2). Returns
 * true when both paths gave the same; otherwise false with both transcripts
 * printed to stderr. *ret_fast (may be NULL) counts the frames the hot path
 * answered.
 */
bool fast_diff_run(const char *const *frames, const size_t *lens, size_t n, unsigned *ret_fast);

/*
 * The notifications a process sends (proc-wire.c: process/output, and
 * process/exited's envelope around its tail) against the same messages built
 * with jansson and jrpc_dump, for every fixture's id and several chunks.
 * Returns true when all are equal (else the first difference on stderr).
 */
bool fast_diff_notifications(void);
