/* SPDX-License-Identifier: MIT */
/*
 * fs/watch, fs/unwatch and the fs/changed notification: uexec's change
 * watches of a file or a directory tree (README "Protocol extensions",
 * capability uexecFsWatch), on fs/watchMissing's inotify instance
 * (watch-internal.h).
 *
 * A watch is a tree of directory nodes, each holding a reference on the
 * kernel watch (wd) of its directory; a node keeps its name and parent, not
 * its path, so a directory renamed inside the tree is one relink. A file is
 * watched through its parent directory, filtered by its name, so a file
 * replaced by a rename (what editors do) stays watched. A recursive watch
 * adds nodes for subdirectories as they appear (created or moved in) and
 * reports what they already hold as created: entries made before the new
 * directory's kernel watch existed are not lost (one made in between may be
 * reported twice). Symlinks are never followed below the root, and a
 * directory whose inode the watch already holds (a bind mount loop) is not
 * entered twice. A node remembers its directory's dev/ino: a scan reaches
 * it from the root one name at a time (O_NOFOLLOW, each step checked), and
 * a kernel watch is taken on the directory as opened (/proc/self/fd), so a
 * directory replaced by a symlink, or by another directory, before its
 * events are read is never scanned or watched in its place.
 *
 * Events: created, modified (data or metadata), deleted, renamed (both
 * halves of a move inside the watch, matched by inotify's cookie; a move out
 * of the watch is deleted, into it created), overflow and ended. They queue
 * per watch and are sent, one fs/changed per watch, after each read of the
 * instance; while the connection is congested (--max-queued-bytes) they
 * wait, up to the watch's maxQueuedEvents (and always up to QUEUE_BYTES of
 * text): then an overflow event takes the place of what is dropped until
 * the queue is sent. A kernel queue overflow (IN_Q_OVERFLOW) is an overflow event for
 * every watch, whose tree is then scanned again for subdirectories it
 * missed. A directory that would pass maxDirectories (or the host's inotify
 * limit) is not watched and reported as an overflow with its path. When the
 * root goes (deleted, moved, unmounted) the watch ends with an ended event.
 *
 * Directory scans (readdir, inotify_add_watch) run on the loop, bounded by
 * maxDirectories, for the reason fs/watchMissing's stat calls do: an event
 * of a new wd must never arrive before the table knows it.
 *
 * This file holds the tree of nodes and the dispatch of inotify events; the
 * scans in steps are in watch-tree-scan.c, the event queue and fs/changed in
 * watch-tree-send.c, the requests in watch-tree-rpc.c (watch-tree-internal.h).
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

struct tree_state fs_tw = {
	.all = LIST_HEAD_INIT(fs_tw.all),
	.dirty = LIST_HEAD_INIT(fs_tw.dirty),
	.scanning = LIST_HEAD_INIT(fs_tw.scanning),
};

/* ---- nodes ---- */

/* ---- nodes ---- */

/* The path of n's entry name, or of n itself (name NULL), into buf (PATH_MAX bytes). */
int fs_tw_node_path(const struct tnode *n, const char *name, char *buf)
{
	const char *parts[PATH_MAX / 2 + 1];
	size_t k = 0, len = 0;

	if (name)
		parts[k++] = name;
	for (const struct tnode *p = n; p; p = p->parent) {
		if (k == ELEMENTSOF(parts))
			return -ENAMETOOLONG;
		parts[k++] = p->name;
	}
	/* parts[k - 1] is the root's whole path; the names follow it. */
	for (size_t i = k; i-- > 0;) {
		size_t m = strlen(parts[i]);

		if (i != k - 1 && !(len == 1 && buf[0] == '/'))
			buf[len++] = '/';
		if (len + m >= PATH_MAX)
			return -ENAMETOOLONG;
		memcpy(buf + len, parts[i], m + 1);
		len += m;
	}
	return 0;
}

void fs_tw_node_free(struct tnode *n)
{
	struct tnode *c, *tmp;

	if (!n)
		return;
	list_for_each_entry_safe(c, tmp, &n->children, sibling) {
		fs_tw_node_free(c);
	}
	list_del(&n->sibling);
	list_del(&n->scan_link);
	if (n->wd) {
		list_del(&n->wd_link);
		fs_ino_put(n->wd);
		n->w->n_dirs--;
	}
	free(n->name);
	free(n);
}

struct tnode *fs_tw_find_child(struct tnode *n, const char *name)
{
	struct tnode *c;

	list_for_each_entry(c, &n->children, sibling) {
		if (strcmp(c->name, name) == 0)
			return c;
	}
	return NULL;
}

/* w's node on e, if any (a watch holds an inode once). */
static struct tnode *node_on(struct wd_entry *e, const struct change_watch *w)
{
	struct tnode *n;

	list_for_each_entry(n, &e->nodes, wd_link) {
		if (n->w == w)
			return n;
	}
	return NULL;
}

/*
 * An fd (O_RDONLY) on n's own directory, or -errno (-ESTALE when a name on
 * the way now holds another directory). The path is walked from the root
 * one name at a time with O_NOFOLLOW, each step checked against its node's
 * identity: a directory of the tree replaced by a symlink (or by another
 * directory) since its node was made never leads the scan anywhere else.
 * Only the root's own path follows symlinks, as at fs/watch.
 */
int fs_tw_node_open(const struct tnode *n)
{
	const struct tnode *chain[PATH_MAX / 2 + 1];
	size_t k = 0;
	int fd = -1;

	for (const struct tnode *p = n; p; p = p->parent) {
		if (k == ELEMENTSOF(chain))
			return -ENAMETOOLONG;
		chain[k++] = p;
	}
	while (k-- > 0) {
		const struct tnode *p = chain[k];
		struct stat st;
		int nfd;

		nfd = p->parent ? openat(fd, p->name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
				: open(p->name, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (nfd < 0) {
			int r = -errno;

			safe_close(fd);
			return r == -ELOOP ? -ENOTDIR : r;
		}
		safe_close(fd);
		fd = nfd;
		if (fstat(fd, &st) < 0 || st.st_dev != p->dev || st.st_ino != p->ino) {
			safe_close(fd);
			return -ESTALE;
		}
	}
	/* O_PATH cannot be read: the directory itself, through its fd. */
	{
		int rfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		int r = rfd < 0 ? -errno : rfd;

		safe_close(fd);
		return r;
	}
}

/*
 * inotify_add_watch on the directory dfd refers to (an O_PATH fd), through
 * its /proc/self/fd link: the kernel watch is on that very inode, whatever
 * the path names now. Without /proc, the path (last name not followed for a
 * subdirectory) is the fallback.
 */
static int attach_fd(int dfd, const char *path, bool sub, struct wd_entry **ret)
{
	char proc[64];
	int r;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", dfd);
	r = fs_ino_attach(proc, TREE_MASK, ret);
	if (r == -ENOENT && access("/proc/self/fd", F_OK) < 0)
		r = fs_ino_attach(path, TREE_MASK | (sub ? IN_DONT_FOLLOW : 0), ret);
	return r;
}

/*
 * A node for the directory path (parent's entry name, or the root when
 * parent is NULL); pfd is the parent's directory fd (fs_tw_node_open), unused for
 * the root. Returns 1 and *ret when watched, 0 when it is not to be
 * watched (gone, not a directory, a symlink, already held), or -errno:
 * -EDQUOT for maxDirectories, -ENOSPC for the host's inotify limit.
 */
int fs_tw_node_add(struct change_watch *w, struct tnode *parent, int pfd, const char *name,
		   const char *path, struct tnode **ret)
{
	_cleanup_close_ int dfd = -1;
	struct wd_entry *e;
	struct tnode *n;
	struct stat st;
	int r;

	if (w->n_dirs >= w->max_dirs)
		return -EDQUOT;
	/* Opened first, never through a symlink below the root; watched and checked as opened. */
	dfd = parent ? openat(pfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
		     : open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	r = dfd < 0 ? -errno : fstat(dfd, &st) < 0 ? -errno : attach_fd(dfd, path, parent != NULL, &e);
	if (parent && (r == -ENOENT || r == -ENOTDIR || r == -ELOOP || r == -EACCES))
		return 0; /* gone, replaced, a symlink, or unreadable: not part of the tree */
	if (r < 0)
		return r;
	if (node_on(e, w)) {
		fs_ino_put(e);
		return 0;
	}
	n = calloc(1, sizeof(*n));
	if (!n || !(n->name = strdup(name))) {
		free(n);
		fs_ino_put(e);
		return -ENOMEM;
	}
	list_init(&n->children);
	list_init(&n->sibling);
	list_init(&n->scan_link);
	n->w = w;
	n->wd = e;
	n->parent = parent;
	n->dev = st.st_dev;
	n->ino = st.st_ino;
	list_add_tail(&n->wd_link, &e->nodes);
	if (parent)
		list_add_tail(&n->sibling, &parent->children);
	w->n_dirs++;
	*ret = n;
	return 1;
}

/* The root went: the last event, then nothing. The watch is freed once it is sent. */
static void watch_end(struct change_watch *w, const char *reason)
{
	if (w->ended)
		return;
	if (w->installing) {
		fs_tw_install_end(w, -ENOENT); /* the root went before the reply: as if never there */
		return;
	}
	w->ended = true;
	w->end_reason = reason;
	fs_tw_node_free(TAKE_PTR(w->root));
	fs_tw_queue_event(w, json_pack("{s:s,s:s}", "kind", "ended", "reason", reason), true, false);
	/* Even over the bound: the client must learn the end. */
	fs_tw_mark_dirty(w);
}

void fs_tw_watch_free(struct change_watch *w)
{
	if (!w)
		return;
	fs_tw_node_free(w->root);
	if (list_linked(&w->link))
		w->conn->watch->n_changes--;
	/* A request still waiting: its connection is going (else fs_tw_install_end replied). */
	if (w->pend.conn)
		rpc_pending_end(&w->pend);
	list_del(&w->link);
	list_del(&w->all_link);
	list_del(&w->dirty_link);
	list_del(&w->scanning_link);
	buf_done(&w->q);
	free(w->only);
	free(w);
}

/* ---- dispatch ---- */

static bool name_matches(const struct change_watch *w, const char *name)
{
	return !w->only || strcmp(w->only, name) == 0;
}

/* One event on node n (not a rename pair). */
static void node_event(struct tnode *n, const struct inotify_event *ev)
{
	struct change_watch *w = n->w;
	bool is_dir = ev->mask & IN_ISDIR;
	char path[PATH_MAX];

	if (ev->len == 0 || ev->name[0] == 0) {
		/* The directory itself: its parent's watch reports it, but for the root. */
		if (n->parent) {
			if (ev->mask & IN_IGNORED)
				fs_tw_node_free(n);
			return;
		}
		if (ev->mask & IN_DELETE_SELF)
			watch_end(w, "deleted");
		else if (ev->mask & IN_MOVE_SELF)
			watch_end(w, "moved");
		else if (ev->mask & IN_UNMOUNT)
			watch_end(w, "unmounted");
		else if (ev->mask & IN_IGNORED)
			watch_end(w, "deleted");
		return;
	}
	if (!name_matches(w, ev->name) || fs_tw_node_path(n, ev->name, path) < 0)
		return;
	if (ev->mask & (IN_CREATE | IN_MOVED_TO)) {
		fs_tw_queue_path_event(w, "created", path, NULL, is_dir);
		if (is_dir && w->recursive)
			fs_tw_subtree_appeared(w, n, ev->name, path, true);
	}
	if (ev->mask & (IN_MODIFY | IN_ATTRIB))
		fs_tw_queue_path_event(w, "modified", path, NULL, is_dir);
	if (ev->mask & (IN_DELETE | IN_MOVED_FROM)) {
		fs_tw_queue_path_event(w, "deleted", path, NULL, is_dir);
		if (is_dir)
			fs_tw_node_free(fs_tw_find_child(n, ev->name));
	}
}

/* Hands ev to every node of e, e pinned: a node may be freed (its own or its watch's). */
static void each_node(struct wd_entry *e, const struct inotify_event *ev)
{
	struct tnode *n, *next;

	if (list_empty(&e->nodes))
		return;
	e->refs++;
	/* The next node is another watch's: handling one never frees another watch's nodes. */
	list_for_each_entry_safe(n, next, &e->nodes, wd_link) {
		node_event(n, ev);
	}
	fs_ino_put(e);
}

/* A rename's first half whose second half is not in the watch (or never came). */
static void from_alone(void)
{
	struct {
		struct inotify_event ev;
		char name[NAME_MAX + 1];
	} u;
	struct wd_entry *e;

	if (!fs_tw.have_from)
		return;
	fs_tw.have_from = false;
	e = fs_ino_lookup(fs_tw.from_wd);
	if (!e)
		return;
	memset(&u.ev, 0, sizeof(u.ev));
	u.ev.wd = fs_tw.from_wd;
	u.ev.mask = fs_tw.from_mask;
	u.ev.len = (uint32_t)sizeof(u.name);
	memcpy(u.name, fs_tw.from_name, sizeof(u.name));
	each_node(e, &u.ev);
}

/* Both halves of a rename: from (stashed) and to. */
static void move_pair(struct wd_entry *te, const struct inotify_event *to)
{
	struct wd_entry *fe = fs_ino_lookup(fs_tw.from_wd);
	bool is_dir = to->mask & IN_ISDIR;
	char from_path[PATH_MAX], to_path[PATH_MAX];
	struct tnode *nf, *nt, *next;

	fs_tw.have_from = false;
	if (fe)
		fe->refs++;
	if (te)
		te->refs++;
	if (fe) {
		list_for_each_entry_safe(nf, next, &fe->nodes, wd_link) {
			struct change_watch *w = nf->w;
			struct tnode *child;

			nt = te ? node_on(te, w) : NULL;
			if (!nt) {
				if (!name_matches(w, fs_tw.from_name) ||
				    fs_tw_node_path(nf, fs_tw.from_name, from_path) < 0)
					continue;
				fs_tw_queue_path_event(w, "deleted", from_path, NULL, is_dir);
				if (is_dir)
					fs_tw_node_free(fs_tw_find_child(nf, fs_tw.from_name));
				continue;
			}
			if ((!name_matches(w, fs_tw.from_name) && !name_matches(w, to->name)) ||
			    fs_tw_node_path(nf, fs_tw.from_name, from_path) < 0 ||
			    fs_tw_node_path(nt, to->name, to_path) < 0)
				continue;
			fs_tw_queue_path_event(w, "renamed", to_path, from_path, is_dir);
			if (!is_dir || !w->recursive)
				continue;
			child = fs_tw_find_child(nf, fs_tw.from_name);
			if (child) {
				char *nn = strdup(to->name);
				struct tnode *old = fs_tw_find_child(nt, to->name);

				if (!nn) {
					fs_tw_node_free(child);
					continue;
				}
				if (old && old != child)
					fs_tw_node_free(old); /* an empty directory the move replaced */
				list_del(&child->sibling);
				free(child->name);
				child->name = nn;
				child->parent = nt;
				list_add_tail(&child->sibling, &nt->children);
			} else {
				fs_tw_subtree_appeared(w, nt, to->name, to_path, false);
			}
		}
	}
	if (te) {
		list_for_each_entry_safe(nt, next, &te->nodes, wd_link) {
			if (fe && node_on(fe, nt->w))
				continue; /* handled as a pair */
			node_event(nt, to);
		}
	}
	if (te)
		fs_ino_put(te);
	if (fe)
		fs_ino_put(fe);
}

void fs_tree_watch_event(struct wd_entry *e, const struct inotify_event *ev)
{
	struct change_watch *w;

	if (fs_tw.have_from) {
		if ((ev->mask & IN_MOVED_TO) && ev->cookie == fs_tw.from_cookie) {
			move_pair(e, ev);
			return;
		}
		from_alone();
	}
	if (ev->mask & IN_Q_OVERFLOW) {
		log_debug("inotify queue overflow: fs/watch watches get an overflow event");
		list_for_each_entry(w, &fs_tw.all, all_link) {
			if (w->ended || !w->root)
				continue;
			fs_tw_queue_overflow(w, "kernel", NULL);
			if (w->recursive)
				fs_tw_scan_enqueue(w->root, SCAN_RESYNC);
		}
		return;
	}
	if (!e)
		return;
	if ((ev->mask & IN_MOVED_FROM) && ev->len > 0 && !list_empty(&e->nodes)) {
		fs_tw.have_from = true;
		fs_tw.from_wd = ev->wd;
		fs_tw.from_cookie = ev->cookie;
		fs_tw.from_mask = ev->mask;
		snprintf(fs_tw.from_name, sizeof(fs_tw.from_name), "%s", ev->name);
		return;
	}
	each_node(e, ev);
}

/* How long a rename's first half waits for its second before it is a move out. */
#define FROM_WAIT_MS 20

/* A first half kept across reads whose second half did not come: a move out of the watch. */
static void on_from_timer(struct uring_timer *t, bool fired)
{
	if (!fired || !fs_tw.have_from)
		return;
	if (fs_tw.from_cookie != fs_tw.timer_cookie) {
		/* armed for a first half since paired: this one gets its own wait */
		fs_tw.timer_cookie = fs_tw.from_cookie;
		uring_timer_arm(&fs_tw.srv->ring, &fs_tw.from_timer, FROM_WAIT_MS, on_from_timer);
		return;
	}
	from_alone();
	fs_tw_flush_dirty();
}

/*
 * The end of one read of the instance. A first half at its end waits for its
 * second in the next read, whether or not the buffer was full: rename(2)
 * queues IN_MOVED_FROM and IN_MOVED_TO one after the other, and a read can
 * come in between (inotify(7); seen under load: a rename inside the watch
 * reported as deleted + created).
 */
void fs_tree_watch_batch_end(void)
{
	if (fs_tw.have_from && !fs_tw.srv)
		from_alone();
	else if (fs_tw.have_from && !fs_tw.from_timer.armed) {
		fs_tw.timer_cookie = fs_tw.from_cookie;
		uring_timer_arm(&fs_tw.srv->ring, &fs_tw.from_timer, FROM_WAIT_MS, on_from_timer);
	}
	fs_tw_flush_dirty();
}

void fs_tw_flush_dirty(void)
{
	struct list_head todo;

	/* Taken one at a time from a list of our own: a send may end a connection and its watches. */
	list_init(&todo);
	list_splice_tail(&fs_tw.dirty, &todo);
	while (!list_empty(&todo)) {
		struct change_watch *w = list_first_entry(&todo, struct change_watch, dirty_link);

		list_del(&w->dirty_link);
		(void)fs_tw_flush_watch(w);
	}
}

void fs_tree_watch_release(struct fs_watch *st)
{
	while (!list_empty(&st->changes))
		fs_tw_watch_free(list_first_entry(&st->changes, struct change_watch, link));
}
