/* SPDX-License-Identifier: MIT */
/*
 * What the files of fs/watch share (watch-tree.c: the tree of directory
 * nodes and the dispatch of inotify events; watch-tree-scan.c: the scans in
 * steps; watch-tree-send.c: the per-watch event queue and fs/changed;
 * watch-tree-rpc.c: fs/watch and fs/unwatch). The module's state is one
 * process singleton, fs_tw.
 */
#pragma once

#include <dirent.h>
#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "buf.h"
#include "list.h"
#include "rpc.h"
#include "ring.h"
#include "watch-internal.h"


#define WATCHES_PER_CONN 16
#define DIRS_DEFAULT 1024
#define DIRS_MAX 8192
#define EVENTS_DEFAULT 1024
#define EVENTS_MAX 16384
#define QUEUE_BYTES (256u << 10) /* queued event text per watch */
#define SCAN_ENTRIES_MAX 500000  /* directory entries one scan of a tree reads */
#define SCAN_STEP_ENTRIES 1024   /* entries read per loop iteration, over every watch */

/* Subdirectories: never follow a symlink swapped in for one. */
#define TREE_MASK                                                                             \
	(IN_CREATE | IN_DELETE | IN_MODIFY | IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO |        \
	 IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

struct change_watch;

enum scan_mode {
	SCAN_NONE,
	SCAN_SILENT, /* the initial scan, or a directory found by a resync: nothing reported */
	SCAN_REPORT, /* a new directory: what it holds is reported as created */
	SCAN_RESYNC, /* after a kernel overflow: child nodes are checked and walked too */
};

struct tnode {
	struct list_head wd_link;   /* wd_entry.nodes */
	struct list_head scan_link; /* w->scan_queue while waiting to be scanned */
	enum scan_mode scan;
	struct list_head sibling; /* parent->children */
	struct list_head children;
	struct wd_entry *wd;
	struct change_watch *w;
	struct tnode *parent; /* NULL for the root */
	char *name;	      /* the root: its whole path */
	dev_t dev;	      /* the directory's identity when it was added */
	ino_t ino;
	long resume; /* a scan stopped at its step's budget goes on at telldir() resume - 1; 0: none */
};

struct change_watch {
	struct list_head link;	     /* fs_watch.changes */
	struct list_head all_link;   /* fs_tw.all */
	struct list_head dirty_link; /* fs_tw.dirty while events wait to be sent */
	struct conn *conn;
	uint64_t id;
	struct tnode *root;
	char *only; /* a file watch: the name watched in root's directory */
	bool recursive;
	bool dropping; /* over the queue bound: events are dropped until the queue is sent */
	bool lost;     /* dropped for want of memory: the send adds the overflow event */
	bool ended;    /* the root went: freed once its last events are sent */
	const char *end_reason; /* its ended event's reason (a live upgrade carries it) */
	bool installing; /* the initial scan runs: the fs/watch request waits (pend) */
	struct rpc_pending pend;
	struct list_head scan_queue;   /* struct tnode.scan_link, breadth first */
	struct list_head scanning_link; /* fs_tw.scanning while scan_queue is not empty */
	size_t scan_seen;	       /* entries read since scan_queue was last empty */
	unsigned n_dirs, max_dirs;
	unsigned n_events, max_events;
	struct buf q;	 /* queued events: JSON objects, each followed by ',' */
	size_t last_off; /* where the last queued event starts (coalescing) */
};


/* The module's state (a process singleton, as watch.c's instance). */
struct tree_state {
	struct server *srv;
	struct list_head all;	   /* every struct change_watch (kernel overflows) */
	struct list_head dirty;	   /* watches with queued events */
	struct list_head scanning; /* watches with directories to scan, served in turn */
	struct uring_op step_op;   /* a NOP: the next scan step runs from its completion */
	/* A rename's first half waiting for its second (IN_MOVED_FROM, then IN_MOVED_TO). */
	bool have_from;
	int from_wd;
	uint32_t from_cookie, from_mask;
	char from_name[NAME_MAX + 1];
	struct uring_timer from_timer; /* a first half kept after a full read waits this long */
	uint32_t timer_cookie;
};
extern struct tree_state fs_tw;


/* watch-tree-send.c */
void fs_tw_mark_dirty(struct change_watch *w);
void fs_tw_queue_event(struct change_watch *w, json_t *ev, bool force, bool coalesce);
void fs_tw_queue_path_event(struct change_watch *w, const char *kind, const char *path,
			    const char *old, bool is_dir);
void fs_tw_queue_overflow(struct change_watch *w, const char *reason, const char *path);
bool fs_tw_flush_watch(struct change_watch *w);

/* watch-tree.c */
int fs_tw_node_path(const struct tnode *n, const char *name, char *buf);
void fs_tw_node_free(struct tnode *n);
struct tnode *fs_tw_find_child(struct tnode *n, const char *name);
int fs_tw_node_open(const struct tnode *n);
int fs_tw_node_add(struct change_watch *w, struct tnode *parent, int pfd, const char *name,
		   const char *path, struct tnode **ret);
void fs_tw_watch_free(struct change_watch *w);
void fs_tw_flush_dirty(void);

/* watch-tree-scan.c */
void fs_tw_scan_enqueue(struct tnode *n, enum scan_mode mode);
void fs_tw_subtree_appeared(struct change_watch *w, struct tnode *n, const char *name,
			    const char *path, bool report);
void fs_tw_install_end(struct change_watch *w, int r);

/* watch-tree-rpc.c */
void fs_tw_reply_install_error(struct conn *c, json_t *id, int r, const char *path,
			       unsigned max_dirs);
