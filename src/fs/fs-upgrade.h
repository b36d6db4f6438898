/* SPDX-License-Identifier: MIT */
/*
 * What a live upgrade (docs/UPGRADE.md, src/upgrade/adopt-fs.c) reads of a
 * connection's fs state and re-makes in the new binary: its watches
 * (fs/watchMissing's active one and its fs/watch ones), the watch ids it has
 * handed out or seen, and its fs/open handles. Plain values, so that the
 * upgrade's blob stays the upgrade's business (fs-upgrade.c, watch.c).
 *
 * The watches are not handed over as kernel watches: the new binary adds
 * them again on an inotify instance of its own, from their paths. What
 * changed meanwhile is told the way lost events are: an fs/watchMissing
 * watch is checked again and fires if a missing path appeared or the
 * present one went (as after a kernel queue overflow), and every fs/watch
 * watch gets an `overflow` event (reason `upgrade`), its tree scanned again.
 * The events an fs/watch watch had queued for a congested connection travel
 * as their text and come first.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct conn;

/* How an fs/watch watch ended (its `ended` event not sent yet); 0: it has not. */
enum fs_upg_end {
	FS_UPG_END_NONE,
	FS_UPG_END_DELETED,
	FS_UPG_END_MOVED,
	FS_UPG_END_UNMOUNTED,
};

struct fs_upg_watch {
	uint64_t id;
	bool missing;	  /* fs/watchMissing (else fs/watch) */
	const char *path; /* fs/watchMissing: its first missing path; fs/watch: the root directory */
	/* fs/watchMissing */
	const char *const *others; /* the other missing paths */
	size_t n_others;
	const char *present; /* or NULL */
	/* fs/watch */
	const char *only; /* a file watch: the file's name in path, or NULL */
	bool recursive;
	unsigned max_dirs, max_events;
	bool has_ident; /* the root directory's identity (not once ended) */
	uint64_t dev, ino;
	enum fs_upg_end ended;
	/* Its events not sent yet (a congested connection): JSON objects, each and a ','. */
	const char *queued;
	size_t queued_len;
};

/* The ids a connection has seen or handed out (limits on the next requests). */
struct fs_upg_ids {
	bool have_missing;    /* fs/watchMissing registered one: the next must be larger */
	uint64_t missing;     /* the largest fs/watchMissing watchId seen */
	uint64_t change;      /* the last watchId fs/watch handed out (0: none) */
};

typedef int (*fs_upg_watch_fn)(void *ctx, const struct fs_upg_watch *w);
typedef int (*fs_upg_handle_fn)(void *ctx, const char *id, size_t id_len, int fd, bool writable);

/* c's watch ids. */
void fs_upg_watch_ids(const struct conn *c, struct fs_upg_ids *ret);
/*
 * fn for each of c's watches: fs/watchMissing's first, then fs/watch's in
 * the order they were made. Stops at fn's first nonzero return, which it
 * returns. A watch whose install is still answered later (a recursive
 * fs/watch scanning) is not one yet: the request holds the upgrade.
 */
int fs_upg_each_watch(struct conn *c, fs_upg_watch_fn fn, void *ctx);
/* fn for each of c's handles that fs/open has answered; the same. */
int fs_upg_each_handle(struct conn *c, fs_upg_handle_fn fn, void *ctx);

/* In the new binary, before c reads: its ids. 0 or -ENOMEM. */
int fs_upg_adopt_ids(struct conn *c, const struct fs_upg_ids *ids);
/*
 * A watch of c made again (the ids adopted first). What happened meanwhile
 * is queued for c (fs/missingChanged, or fs/changed's overflow; ended when
 * the root is gone or is another directory now). 0 or -errno (out of memory
 * or inotify refused: the caller logs; the client's watch is then gone).
 */
int fs_upg_adopt_watch(struct conn *c, const struct fs_upg_watch *w);
/* An fs/open handle of c around fd (c owns it from now on, or it is closed on error). */
int fs_upg_adopt_handle(struct conn *c, const void *id, size_t id_len, int fd, bool writable);
/* Sends what the adopted watches queued (fs/changed). */
void fs_upg_adopt_flush(void);
