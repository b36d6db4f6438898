/* SPDX-License-Identifier: MIT */
/*
 * fs/watch's directory scans (watch-tree.c): a tree is read in steps of
 * SCAN_STEP_ENTRIES entries from a NOP's completion, so that a large tree
 * never holds the loop for long; the end of the initial scan answers the
 * fs/watch request.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "conn.h"
#include "fs.h"
#include "fs-req.h"
#include "log.h"
#include "macro.h"
#include "params.h"
#include "rpc-fs.h"
#include "rpc.h"
#include "watch-internal.h"
#include "watch.h"
#include "watch-tree-internal.h"

static void arm_step(void);

/* Queues n's directory to be scanned (the scan runs in steps, from the loop). */
void fs_tw_scan_enqueue(struct tnode *n, enum scan_mode mode)
{
	struct change_watch *w = n->w;

	if (mode > n->scan)
		n->scan = mode;
	if (!list_linked(&n->scan_link))
		list_add_tail(&n->scan_link, &w->scan_queue);
	if (!list_linked(&w->scanning_link))
		list_add_tail(&w->scanning_link, &fs_tw.scanning);
	arm_step();
}

/* Forgets w's pending scans (a scan limit was hit). */
static void scan_clear(struct change_watch *w)
{
	while (!list_empty(&w->scan_queue)) {
		struct tnode *n = list_first_entry(&w->scan_queue, struct tnode, scan_link);

		list_del(&n->scan_link);
		n->scan = SCAN_NONE;
	}
}

/*
 * Scans the directory cur (mode: see enum scan_mode): its subdirectories get nodes and
 * join the queue (a recursive watch), and in SCAN_REPORT mode every entry is
 * reported as created. At most *budget entries are read (counted down): a
 * larger directory goes back to the head of the queue and goes on from
 * there at the watch's next turn, so that no directory, however large,
 * holds the loop for more than one step. Returns 0, or during
 * the initial scan -EDQUOT (maxDirectories), -ENOSPC (the host's inotify
 * limit), -EFBIG (SCAN_ENTRIES_MAX entries), -ENOMEM, which fail the
 * request; later those are overflow events naming the directory.
 */
/* Resync: drops the children whose directory went (or was replaced) while events were lost. */
static void drop_stale_children(struct tnode *cur, int fd)
{
	struct tnode *child, *tmp;

	list_for_each_entry_safe(child, tmp, &cur->children, sibling) {
		struct stat st;

		if (fstatat(fd, child->name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode) || st.st_dev != child->dev || st.st_ino != child->ino)
			fs_tw_node_free(child);
	}
}

/* The budget is spent: the rest (from pos) at the watch's next turn, before its other directories. */
static void scan_later(struct change_watch *w, struct tnode *cur, enum scan_mode mode, long pos)
{
	cur->resume = pos + 1;
	if (mode > cur->scan)
		cur->scan = mode;
	if (!list_linked(&cur->scan_link))
		list_add_tail(&cur->scan_link, w->scan_queue.next);
	if (!list_linked(&w->scanning_link))
		list_add_tail(&w->scanning_link, &fs_tw.scanning);
	arm_step();
}

/*
 * One entry of cur (path) read: counted (against the step's budget too),
 * reported (SCAN_REPORT), and a subdirectory of a recursive watch added
 * and queued for its own scan.
 * Returns 0 to read on, 1 to stop the scan (the watch overflowed), or a
 * -errno that fails an installing watch.
 */
static int scan_entry(struct change_watch *w, struct tnode *cur, DIR *d, const struct dirent *de,
		      enum scan_mode mode, const char *path, size_t *budget)
{
	char sub[PATH_MAX];
	struct tnode *c = NULL;
	bool is_dir = de->d_type == DT_DIR;
	int r;

	if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
		return 0;
	if (*budget > 0)
		(*budget)--;
	if (++w->scan_seen > SCAN_ENTRIES_MAX) {
		if (w->installing)
			return -EFBIG;
		fs_tw_queue_overflow(w, "scanLimit", path);
		scan_clear(w);
		return 1;
	}
	if (de->d_type == DT_UNKNOWN) {
		struct stat st;

		is_dir = fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			 S_ISDIR(st.st_mode);
	}
	if (fs_tw_node_path(cur, de->d_name, sub) < 0)
		return 0;
	if (mode == SCAN_REPORT)
		fs_tw_queue_path_event(w, "created", sub, NULL, is_dir);
	if (!is_dir || !w->recursive)
		return 0;
	c = fs_tw_find_child(cur, de->d_name);
	if (c) {
		if (mode == SCAN_RESYNC)
			fs_tw_scan_enqueue(c, SCAN_RESYNC);
		return 0;
	}
	r = fs_tw_node_add(w, cur, dirfd(d), de->d_name, sub, &c);
	if (r < 0 && w->installing)
		return r;
	if (r < 0)
		fs_tw_queue_overflow(w, r == -ENOSPC ? "watchLimit" : "directoryLimit", sub);
	else if (r > 0)
		fs_tw_scan_enqueue(c, mode == SCAN_REPORT ? SCAN_REPORT : SCAN_SILENT);
	return 0;
}

static int scan_dir(struct change_watch *w, struct tnode *cur, enum scan_mode mode,
		    size_t *budget)
{
	char path[PATH_MAX];
	struct dirent *de;
	int fd, ret = 0;
	DIR *d;

	if (fs_tw_node_path(cur, NULL, path) < 0)
		return 0;
	fd = fs_tw_node_open(cur);
	if (fd < 0) {
		cur->resume = 0;
		return 0; /* gone or replaced meanwhile: its parent's events say so */
	}
	if (mode == SCAN_RESYNC && cur->resume == 0)
		drop_stale_children(cur, fd);
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		cur->resume = 0;
		return 0;
	}
	if (cur->resume)
		seekdir(d, cur->resume - 1);
	cur->resume = 0;
	for (;;) {
		if (*budget == 0 && telldir(d) != -1) {
			long pos = telldir(d);

			if (readdir(d))
				scan_later(w, cur, mode, pos);
			break;
		}
		de = readdir(d); /* without telldir (never seen), the directory is read to its end */
		if (!de)
			break;
		ret = scan_entry(w, cur, d, de, mode, path, budget);
		if (ret != 0)
			break;
	}
	closedir(d);
	return ret < 0 ? ret : 0;
}

static int scan_one(struct change_watch *w, size_t *budget)
{
	struct tnode *cur = list_first_entry(&w->scan_queue, struct tnode, scan_link);
	enum scan_mode mode = cur->scan;

	list_del(&cur->scan_link);
	cur->scan = SCAN_NONE;
	return scan_dir(w, cur, mode, budget);
}

/*
 * A new directory name in n (created or moved in): watched, with what it
 * holds. Its own entries (up to one step's worth) are read at once, before
 * anything else is read from the kernel (so an entry made after its creation
 * was reported comes once); the rest of a large one and the directories below
 * it are scanned in steps (an entry made meanwhile may come twice).
 */
void fs_tw_subtree_appeared(struct change_watch *w, struct tnode *n, const char *name,
			    const char *path, bool report)
{
	struct tnode *c = fs_tw_find_child(n, name);
	int pfd, r;

	if (c)
		fs_tw_node_free(c); /* a stale node of a name replaced meanwhile */
	pfd = fs_tw_node_open(n);
	if (pfd < 0)
		return; /* n itself went or was replaced: its own events follow */
	r = fs_tw_node_add(w, n, pfd, name, path, &c);
	safe_close(pfd);
	if (r < 0) {
		fs_tw_queue_overflow(w, r == -ENOSPC ? "watchLimit" : "directoryLimit", path);
		return;
	}
	if (r > 0) {
		size_t budget = SCAN_STEP_ENTRIES;

		r = scan_dir(w, c, report ? SCAN_REPORT : SCAN_SILENT, &budget);
		if (r < 0) /* only while the watch is being installed: not fatal here */
			fs_tw_queue_overflow(w, r == -ENOSPC ? "watchLimit" : r == -EFBIG ? "scanLimit"
									: "directoryLimit",
				       path);
	}
}

/* The initial scan ended: the fs/watch request gets the watchId, or r's error (w freed). */
void fs_tw_install_end(struct change_watch *w, int r)
{
	struct conn *c = w->pend.conn;
	char path[PATH_MAX];

	w->installing = false;
	if (r < 0) {
		if (c) {
			if (!w->root || fs_tw_node_path(w->root, w->only, path) < 0)
				snprintf(path, sizeof(path), "?");
			fs_tw_reply_install_error(c, w->pend.id, r, path, w->max_dirs);
		}
		fs_tw_watch_free(w);
		return;
	}
	if (c) {
		log_debug("fs/watch %" PRIu64 " on %s: %u directories", w->id, c->peer, w->n_dirs);
		rpc_reply(c, w->pend.id, json_pack("{s:I}", "watchId", (json_int_t)w->id));
		rpc_pending_end(&w->pend);
	}
	/* Events of the scan's time wait for the reply; now they may go. */
	if (list_linked(&w->dirty_link)) {
		list_del(&w->dirty_link);
		(void)fs_tw_flush_watch(w);
	}
}

/*
 * One step: directories of the scanning watches, in turn, until
 * SCAN_STEP_ENTRIES entries were read; the next step runs from the next
 * loop iteration, so that a large tree never holds the loop for long.
 */
static void on_step(struct uring_op *op, int res, uint32_t flags)
{
	size_t budget = SCAN_STEP_ENTRIES;

	if (fs_tw.srv->stopping)
		return;
	while (budget > 0 && !list_empty(&fs_tw.scanning)) {
		struct change_watch *w =
			list_first_entry(&fs_tw.scanning, struct change_watch, scanning_link);
		int r = 0;

		if (!list_empty(&w->scan_queue))
			r = scan_one(w, &budget);
		list_del(&w->scanning_link);
		if (r < 0) {
			fs_tw_install_end(w, r);
			continue;
		}
		if (!list_empty(&w->scan_queue)) {
			list_add_tail(&w->scanning_link, &fs_tw.scanning); /* its turn again later */
			continue;
		}
		w->scan_seen = 0;
		if (w->installing)
			fs_tw_install_end(w, 0);
	}
	if (!list_empty(&fs_tw.scanning))
		arm_step();
	fs_tw_flush_dirty(); /* what the scans reported */
}

static void arm_step(void)
{
	struct io_uring_sqe *sqe;

	if (fs_tw.step_op.busy || !fs_tw.srv)
		return;
	sqe = uring_get_sqe(&fs_tw.srv->ring, &fs_tw.step_op, on_step);
	io_uring_prep_nop(sqe);
}
