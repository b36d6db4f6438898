/* SPDX-License-Identifier: MIT */
/*
 * The audit log's writer (--audit-log): log_audit() hands each line to
 * server_audit_append(), which only queues it; the loop writes the queue
 * through the ring (server_audit_run(), one WRITEV in flight per file, so
 * lines stay in order). A stalled reader of a pipe or a slow disk therefore
 * never blocks the loop: the queue fills up to its bound, and lines that do
 * not fit, or that a write fails for (ENOSPC, EIO, EPIPE), are dropped whole,
 * counted and reported in a throttled warning. A line is never split between
 * the queue and a drop, and never written in the middle of another.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "list.h"
#include "ring.h"

/*
 * The queue's default bound (--audit-log-max-queued-bytes). A process.start
 * line is a few hundred bytes (its argv is cut at 64 KiB), so 1 MiB holds
 * thousands of lines, seconds of the fastest spawning this server does, which
 * rides out a disk hiccup, a log rotation or a reader that pauses; it costs
 * no more memory than one process's output retention.
 */
#define SERVER_AUDIT_MAX_QUEUED_DEFAULT (1u << 20)
/* At exit the queue gets this long to be written before it is given up (counted as dropped). */
#define SERVER_AUDIT_EXIT_FLUSH_MS 1000

struct audit_stream;

struct server_audit {
	struct uring *ring;
	struct audit_stream *cur; /* where new lines go, NULL: no audit log */
	/*
	 * Streams of files reopened since (SIGHUP) that still write the lines
	 * queued before, or wait for a cancelled write; struct audit_stream.
	 */
	struct list_head retiring;
	size_t queued;           /* bytes queued and not yet written, every stream (the gauge) */
	size_t max_queued;       /* a line that would take queued above it is dropped */
	uint64_t stuck_ms;       /* an old file's write pending this long gives way to new lines */
	uint64_t dropped_lines;  /* every line dropped (the counter) */
	uint64_t unreported;     /* lines dropped since the last warning */
	uint64_t warned_ms;      /* CLOCK_MONOTONIC ms of the last warning, 0: none yet */
	int last_error;          /* why the last line was dropped (0: the queue was full) */
};

/* No audit log yet; lines are written through ring (which need not be set up before the first). */
void server_audit_init(struct server_audit *a, struct uring *ring, size_t max_queued);

/*
 * New lines go to fd from now on (-1: no audit log; owned: ours to close).
 * Lines queued for the previous file are still written to it, in order, and
 * its fd is closed after the last one (log rotation: what was logged before
 * the reopen goes to the old file). fd naming the file already written to
 * (stdout again, or a path that still names the same file) changes nothing
 * and is closed. 0 or -ENOMEM (fd is then closed if owned, and the previous
 * file kept).
 */
int server_audit_set_fd(struct server_audit *a, int fd, bool owned);

/* Queues line[0..len) (one whole line ending in '\n'), or drops and counts it. log_audit's sink. */
void server_audit_append(void *userdata, const char *line, size_t len);

/* Between loop iterations: starts each file's next write, frees what is done. */
void server_audit_run(struct server_audit *a);

/*
 * Nothing queued and no write in flight, in any stream: every line logged so
 * far is in its file (a live upgrade waits for this before its execve, so
 * that no line is lost: docs/UPGRADE.md).
 */
bool server_audit_idle(const struct server_audit *a);
/*
 * At exit, with the loop stopped and before the ring goes: writes what is
 * queued for up to timeout_ms, then cancels what is left and counts it as
 * dropped. A reader that never reads cannot hold the exit longer.
 */
void server_audit_flush(struct server_audit *a, uint64_t timeout_ms);

/* Frees the queues and closes the fds (after server_audit_flush() and the ring). */
void server_audit_done(struct server_audit *a);
