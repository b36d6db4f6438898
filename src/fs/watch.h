/* SPDX-License-Identifier: MIT */
/*
 * fs/watchMissing and its fs/missingChanged notification (PROTOCOL.md §6.22,
 * §7.4): a one-shot watch per connection that fires when a missing path (or
 * a missing directory on the way to it) is created, or when a present path
 * goes away; and uexec's fs/watch, fs/unwatch and fs/changed (README
 * "Protocol extensions"): change events of a file or a directory tree. Built
 * on one inotify instance for the whole server, read through the ring.
 */
#pragma once

struct conn;

/*
 * Per-connection state, owned by struct conn (c->watch, NULL until the first
 * watch request): the largest fs/watchMissing watchId seen, the active
 * fs/watchMissing watch and the fs/watch watches.
 */
struct fs_watch;

/*
 * Drops c's watch state without notifying anyone. Called when the connection
 * closes (watches are not restored on session resume); safe to call twice.
 */
void fs_watch_conn_closed(struct conn *c);

/*
 * c's output queue drained below the backpressure mark: fs/changed events
 * that waited for it are sent.
 */
void fs_watch_conn_drained(struct conn *c);
