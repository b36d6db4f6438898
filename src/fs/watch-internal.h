/* SPDX-License-Identifier: MIT */
/*
 * What watch.c (fs/watchMissing, the inotify instance and its reader) and
 * watch-tree.c (fs/watch, fs/unwatch, fs/changed) share: one inotify
 * instance for the server, read through the ring, whose kernel watches (one
 * wd per inode) are refcounted entries used by both kinds of watch.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/inotify.h>

#include "list.h"

struct conn;
struct missing_watch;
struct server;

/* One kernel watch (wd), shared by every target or directory node on its inode. */
struct wd_entry {
	struct list_head hash_link; /* the wd table; unlinked once the kernel dropped the wd */
	struct list_head targets;   /* fs/watchMissing: struct target.wd_link */
	struct list_head nodes;     /* fs/watch: struct tnode.wd_link */
	int wd;
	unsigned refs; /* targets and nodes attached, plus pins while an event is dispatched */
	bool dead;     /* IN_IGNORED seen: the kernel watch is gone already */
};

/* Per-connection state, c->watch (NULL until the first watch request). */
struct fs_watch {
	bool have_id;
	uint64_t last_id;	      /* largest fs/watchMissing watchId registered */
	struct missing_watch *active; /* NULL after it fired or failed to install */
	struct list_head changes;     /* fs/watch: struct change_watch.link */
	unsigned n_changes;
	uint64_t next_change_id;      /* the watchId fs/watch hands out next, from 1 */
};

/* c->watch, allocated on first use (NULL on OOM). */
struct fs_watch *fs_watch_state(struct conn *c);

/* Opens the instance and arms its read (once). Returns 0 or -errno. */
int fs_ino_open(struct server *s);
/*
 * inotify_add_watch(path, mask | IN_MASK_ADD) and a reference on its entry
 * (created, or shared with the other users of that inode). Returns 0 or -errno.
 */
int fs_ino_attach(const char *path, uint32_t mask, struct wd_entry **ret);
/* The entry of a live wd, or NULL. */
struct wd_entry *fs_ino_lookup(int wd);
/* Drops a reference; the last one removes the kernel watch (unless the kernel did). */
void fs_ino_put(struct wd_entry *e);

/* A live upgrade's fs/watchMissing side (fs-upgrade.h): c's active watch to fn; made again. */
struct fs_upg_watch;
int fs_watch_missing_export(struct conn *c, int (*fn)(void *ctx, const struct fs_upg_watch *w),
			    void *ctx);
int fs_watch_missing_adopt(struct conn *c, const struct fs_upg_watch *u);

/*
 * The reader's calls into watch-tree.c. Every event, in order: e is its
 * wd's entry, or NULL for a wd nobody uses (it still ends a pending rename).
 * An IN_Q_OVERFLOW comes with e NULL. batch_end at the end of each read (a
 * rename's second half may come in the next one).
 */
void fs_tree_watch_event(struct wd_entry *e, const struct inotify_event *ev);
void fs_tree_watch_batch_end(void);
/* Frees every fs/watch watch of st (the connection ends). */
void fs_tree_watch_release(struct fs_watch *st);
