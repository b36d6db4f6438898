/* SPDX-License-Identifier: MIT */
/*
 * A small pool of worker threads for filesystem work that has no io_uring
 * operation (directory listing, tree walks, recursive copy/remove, realpath).
 * Jobs run off the loop thread; their completion comes back through the ring
 * (an eventfd read), and done() runs on the loop thread. Workers never touch
 * server state, log, or call back into the loop.
 */
#pragma once

#include <stdbool.h>

#include "list.h"

struct server;
struct work;

struct work {
	struct list_head link;
	/* Runs in a worker thread: blocking syscalls only on the job's own data. */
	void (*run)(struct work *w);
	/* Runs on the loop thread after run() returned. */
	void (*done)(struct work *w);
};

/* Starts n threads. Returns 0 or -errno. */
int worker_pool_init(struct server *s, unsigned n);
/* Queues w; done() is called later on the loop thread. */
void worker_submit(struct server *s, struct work *w);
/* Jobs queued or running (for limits). */
unsigned worker_pending(const struct server *s);
/* Stops the threads after their current job; jobs not started are completed with done(). */
void worker_pool_done(struct server *s);
