/* SPDX-License-Identifier: MIT */
/*
 * In-flight memory budgets (issue 11). Bytes held for replies that are not
 * written yet are counted per connection and for the whole server:
 *
 *   - the connection's queued output (conn->out_alloc: chunks count until freed), and
 *   - charges (struct conn_mem) that requests hold for what they build: file
 *     contents being read and their reply frame, a tree reply serialised by a
 *     worker, the output of a sandboxed fs helper, decoded write data.
 *
 * A connection above --max-inflight-bytes-per-conn, or holding anything while
 * the server is above --max-inflight-bytes, stops having its requests parsed
 * (they wait, in order, in its input buffer; its socket is not read); it
 * resumes once below half its budget. Requests that allocate large buffers
 * ask first (conn_mem_acquire): they are admitted in arrival order as budget
 * frees, a connection's own requests never overtaking each other, and one
 * that has to wait never holds up another connection's. A charge larger than
 * the per-connection budget (a 500 MiB fs/readFile) is admitted only while its
 * connection has nothing else in flight and the server stays within half its
 * global budget: the other half is always left to normal-sized requests.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "list.h"

struct conn;
struct server;

struct conn_mem {
	struct list_head link;      /* conn->mem_charges, until the connection is freed */
	struct list_head wait_link; /* server->mem_waiters while waiting */
	struct conn *conn;          /* NULL once the connection is freed (bytes stay counted) */
	struct server *srv;
	size_t bytes;               /* charged */
	size_t want;                /* while waiting: the total asked for */
	bool waiting;
	/* The wait is over: admitted, or the connection closed (the owner checks). */
	void (*ready)(struct conn_mem *m);
};

/* Binds m (zeroed or done) to c with nothing charged. */
void conn_mem_init(struct conn_mem *m, struct conn *c);
/*
 * Sets the charge to total bytes at once, whatever the budgets: for memory
 * that already exists or a small estimate taken when a request arrives.
 */
void conn_mem_set(struct conn_mem *m, size_t total);
/*
 * Asks for the charge to become total bytes (lowering it always succeeds).
 * Returns 1 when granted now, 0 when queued (ready() runs later, between loop
 * iterations, once granted or once the connection is closing), -E2BIG when
 * total can never be granted (more than conn_mem_limit()).
 */
int conn_mem_acquire(struct conn_mem *m, size_t total, void (*ready)(struct conn_mem *m));
/* Releases everything and stops waiting; m may be freed afterwards. No-op on a zeroed m. */
void conn_mem_done(struct conn_mem *m);

/* The largest charge one request can ever be granted. */
size_t conn_mem_limit(const struct server *s);

/*
 * Transport side (conn.c). True when c must stop dispatching requests (checked
 * before each message); marks it paused until conn_mem_run() resumes it.
 */
bool conn_mem_pause_check(struct conn *c);
/* Queued output grew (n > 0) or was written or dropped (n < 0). */
void conn_mem_out(struct conn *c, long long n);
/* c is being freed: its charges stay counted for the server only. */
void conn_mem_conn_freed(struct conn *c);

/*
 * Between loop iterations: admits waiting charges as budget allows (and wakes
 * those of closed connections), and resumes paused connections below their
 * low-water mark. Cheap when nothing changed.
 */
void conn_mem_run(struct server *s);
