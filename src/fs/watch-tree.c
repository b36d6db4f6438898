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
	struct list_head all_link;   /* tw.all */
	struct list_head dirty_link; /* tw.dirty while events wait to be sent */
	struct conn *conn;
	uint64_t id;
	struct tnode *root;
	char *only; /* a file watch: the name watched in root's directory */
	bool recursive;
	bool dropping; /* over the queue bound: events are dropped until the queue is sent */
	bool lost;     /* dropped for want of memory: the send adds the overflow event */
	bool ended;    /* the root went: freed once its last events are sent */
	bool installing; /* the initial scan runs: the fs/watch request waits (pend) */
	struct rpc_pending pend;
	struct list_head scan_queue;   /* struct tnode.scan_link, breadth first */
	struct list_head scanning_link; /* tw.scanning while scan_queue is not empty */
	size_t scan_seen;	       /* entries read since scan_queue was last empty */
	unsigned n_dirs, max_dirs;
	unsigned n_events, max_events;
	struct buf q;	 /* queued events: JSON objects, each followed by ',' */
	size_t last_off; /* where the last queued event starts (coalescing) */
};

/* The module's state (a process singleton, as watch.c's instance). */
static struct {
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
} tw = {
	.all = LIST_HEAD_INIT(tw.all),
	.dirty = LIST_HEAD_INIT(tw.dirty),
	.scanning = LIST_HEAD_INIT(tw.scanning),
};

/* ---- events ---- */

static void mark_dirty(struct change_watch *w)
{
	if (!list_linked(&w->dirty_link))
		list_add_tail(&w->dirty_link, &tw.dirty);
}

/*
 * Queues one event. force: overflow and ended, which pass the bound (once).
 * A modification identical to the one queued last is not queued again.
 */
static void queue_event(struct change_watch *w, json_t *ev, bool force, bool coalesce)
{
	char *text;
	size_t n;

	if (!ev)
		return;
	if (w->dropping && !force) {
		json_decref(ev);
		return;
	}
	text = json_dumps(ev, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(ev);
	if (!text)
		return;
	n = strlen(text);
	if (w->q.len > w->last_off && w->q.len - w->last_off == n + 1 &&
	    coalesce && memcmp(w->q.data + w->last_off, text, n) == 0) {
		free(text);
		return;
	}
	/*
	 * maxQueuedEvents counts while the client does not read (its connection
	 * congested); QUEUE_BYTES always, as one read of the kernel's queue or a
	 * tree moved in can bring many events at once.
	 */
	if (!force && (w->q.len + n + 1 > QUEUE_BYTES ||
		       (w->n_events >= w->max_events && conn_congested(w->conn)))) {
		free(text);
		w->dropping = true;
		queue_event(w, json_pack("{s:s,s:s}", "kind", "overflow", "reason", "queue"), true,
			    false);
		return;
	}
	if (buf_reserve(&w->q, n + 1) == 0) {
		w->last_off = w->q.len;
		memcpy(w->q.data + w->q.len, text, n);
		w->q.data[w->q.len + n] = ',';
		w->q.len += n + 1;
		w->n_events++;
		mark_dirty(w);
	} else {
		w->dropping = true;
		w->lost = true;
		mark_dirty(w);
	}
	free(text);
}

/* An event about path (and old for renamed). */
static void queue_path_event(struct change_watch *w, const char *kind, const char *path,
			     const char *old, bool is_dir)
{
	json_t *ev = json_object();

	if (!ev)
		return;
	json_object_set_new(ev, "kind", json_string(kind));
	if (old)
		json_object_set_new(ev, "oldPath", fs_uri_json(old));
	json_object_set_new(ev, "path", fs_uri_json(path));
	json_object_set_new(ev, "isDirectory", json_boolean(is_dir));
	queue_event(w, ev, false, strcmp(kind, "modified") == 0);
}

static void queue_overflow(struct change_watch *w, const char *reason, const char *path)
{
	json_t *ev = json_pack("{s:s,s:s}", "kind", "overflow", "reason", reason);

	if (ev && path)
		json_object_set_new(ev, "path", fs_uri_json(path));
	queue_event(w, ev, true, false);
}

/*
 * Sends w's queued events as one fs/changed unless its connection is
 * congested; w is off the dirty list when called and back on it when its
 * events wait. Returns false when they wait. An ended watch is freed.
 */
static bool flush_watch(struct change_watch *w);

/* ---- nodes ---- */

/* The path of n's entry name, or of n itself (name NULL), into buf (PATH_MAX bytes). */
static int node_path(const struct tnode *n, const char *name, char *buf)
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

static void node_free(struct tnode *n)
{
	struct tnode *c, *tmp;

	if (!n)
		return;
	list_for_each_entry_safe(c, tmp, &n->children, sibling) {
		node_free(c);
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

static struct tnode *find_child(struct tnode *n, const char *name)
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
static int node_open(const struct tnode *n)
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
 * parent is NULL); pfd is the parent's directory fd (node_open), unused for
 * the root. Returns 1 and *ret when watched, 0 when it is not to be
 * watched (gone, not a directory, a symlink, already held), or -errno:
 * -EDQUOT for maxDirectories, -ENOSPC for the host's inotify limit.
 */
static int node_add(struct change_watch *w, struct tnode *parent, int pfd, const char *name,
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

static void arm_step(void);

/* Queues n's directory to be scanned (the scan runs in steps, from the loop). */
static void scan_enqueue(struct tnode *n, enum scan_mode mode)
{
	struct change_watch *w = n->w;

	if (mode > n->scan)
		n->scan = mode;
	if (!list_linked(&n->scan_link))
		list_add_tail(&n->scan_link, &w->scan_queue);
	if (!list_linked(&w->scanning_link))
		list_add_tail(&w->scanning_link, &tw.scanning);
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
static int scan_dir(struct change_watch *w, struct tnode *cur, enum scan_mode mode,
		    size_t *budget)
{
	char path[PATH_MAX], sub[PATH_MAX];
	struct tnode *child, *tmp;
	struct dirent *de;
	int fd, ret = 0;
	DIR *d;

	if (node_path(cur, NULL, path) < 0)
		return 0;
	fd = node_open(cur);
	if (fd < 0) {
		cur->resume = 0;
		return 0; /* gone or replaced meanwhile: its parent's events say so */
	}
	if (mode == SCAN_RESYNC && cur->resume == 0) {
		/* Children whose directory went (or was replaced) while the kernel's events were lost. */
		list_for_each_entry_safe(child, tmp, &cur->children, sibling) {
			struct stat st;

			if (fstatat(fd, child->name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
			    !S_ISDIR(st.st_mode) || st.st_dev != child->dev || st.st_ino != child->ino)
				node_free(child);
		}
	}
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
		bool is_dir;
		struct tnode *c = NULL;
		int r;

		if (*budget == 0 && telldir(d) != -1) {
			/* The rest at the watch's next turn, before any other directory of it. */
			long pos = telldir(d);

			if (readdir(d)) {
				cur->resume = pos + 1;
				if (mode > cur->scan)
					cur->scan = mode;
				if (!list_linked(&cur->scan_link))
					list_add_tail(&cur->scan_link, w->scan_queue.next);
				if (!list_linked(&w->scanning_link))
					list_add_tail(&w->scanning_link, &tw.scanning);
				arm_step();
			}
			break;
		}
		de = readdir(d); /* without telldir (never seen), the directory is read to its end */
		if (!de)
			break;
		is_dir = de->d_type == DT_DIR;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (*budget > 0)
			(*budget)--;
		if (++w->scan_seen > SCAN_ENTRIES_MAX) {
			if (w->installing) {
				ret = -EFBIG;
				break;
			}
			queue_overflow(w, "scanLimit", path);
			scan_clear(w);
			break;
		}
		if (de->d_type == DT_UNKNOWN) {
			struct stat st;

			is_dir = fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
				 S_ISDIR(st.st_mode);
		}
		if (node_path(cur, de->d_name, sub) < 0)
			continue;
		if (mode == SCAN_REPORT)
			queue_path_event(w, "created", sub, NULL, is_dir);
		if (!is_dir || !w->recursive)
			continue;
		c = find_child(cur, de->d_name);
		if (c) {
			if (mode == SCAN_RESYNC)
				scan_enqueue(c, SCAN_RESYNC);
			continue;
		}
		r = node_add(w, cur, dirfd(d), de->d_name, sub, &c);
		if (r < 0 && w->installing) {
			ret = r;
			break;
		}
		if (r < 0)
			queue_overflow(w, r == -ENOSPC ? "watchLimit" : "directoryLimit", sub);
		else if (r > 0)
			scan_enqueue(c, mode == SCAN_REPORT ? SCAN_REPORT : SCAN_SILENT);
	}
	closedir(d);
	return ret;
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
static void subtree_appeared(struct change_watch *w, struct tnode *n, const char *name,
			     const char *path, bool report)
{
	struct tnode *c = find_child(n, name);
	int pfd, r;

	if (c)
		node_free(c); /* a stale node of a name replaced meanwhile */
	pfd = node_open(n);
	if (pfd < 0)
		return; /* n itself went or was replaced: its own events follow */
	r = node_add(w, n, pfd, name, path, &c);
	safe_close(pfd);
	if (r < 0) {
		queue_overflow(w, r == -ENOSPC ? "watchLimit" : "directoryLimit", path);
		return;
	}
	if (r > 0) {
		size_t budget = SCAN_STEP_ENTRIES;

		r = scan_dir(w, c, report ? SCAN_REPORT : SCAN_SILENT, &budget);
		if (r < 0) /* only while the watch is being installed: not fatal here */
			queue_overflow(w, r == -ENOSPC ? "watchLimit" : r == -EFBIG ? "scanLimit"
									: "directoryLimit",
				       path);
	}
}

/* The root went: the last event, then nothing. The watch is freed once it is sent. */
static void install_end(struct change_watch *w, int r);

static void watch_end(struct change_watch *w, const char *reason)
{
	if (w->ended)
		return;
	if (w->installing) {
		install_end(w, -ENOENT); /* the root went before the reply: as if never there */
		return;
	}
	w->ended = true;
	node_free(TAKE_PTR(w->root));
	queue_event(w, json_pack("{s:s,s:s}", "kind", "ended", "reason", reason), true, false);
	/* Even over the bound: the client must learn the end. */
	mark_dirty(w);
}

static void watch_free(struct change_watch *w)
{
	if (!w)
		return;
	node_free(w->root);
	if (list_linked(&w->link))
		w->conn->watch->n_changes--;
	/* A request still waiting: its connection is going (else install_end replied). */
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
				node_free(n);
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
	if (!name_matches(w, ev->name) || node_path(n, ev->name, path) < 0)
		return;
	if (ev->mask & (IN_CREATE | IN_MOVED_TO)) {
		queue_path_event(w, "created", path, NULL, is_dir);
		if (is_dir && w->recursive)
			subtree_appeared(w, n, ev->name, path, true);
	}
	if (ev->mask & (IN_MODIFY | IN_ATTRIB))
		queue_path_event(w, "modified", path, NULL, is_dir);
	if (ev->mask & (IN_DELETE | IN_MOVED_FROM)) {
		queue_path_event(w, "deleted", path, NULL, is_dir);
		if (is_dir)
			node_free(find_child(n, ev->name));
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

	if (!tw.have_from)
		return;
	tw.have_from = false;
	e = fs_ino_lookup(tw.from_wd);
	if (!e)
		return;
	memset(&u.ev, 0, sizeof(u.ev));
	u.ev.wd = tw.from_wd;
	u.ev.mask = tw.from_mask;
	u.ev.len = (uint32_t)sizeof(u.name);
	memcpy(u.name, tw.from_name, sizeof(u.name));
	each_node(e, &u.ev);
}

/* Both halves of a rename: from (stashed) and to. */
static void move_pair(struct wd_entry *te, const struct inotify_event *to)
{
	struct wd_entry *fe = fs_ino_lookup(tw.from_wd);
	bool is_dir = to->mask & IN_ISDIR;
	char from_path[PATH_MAX], to_path[PATH_MAX];
	struct tnode *nf, *nt, *next;

	tw.have_from = false;
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
				if (!name_matches(w, tw.from_name) ||
				    node_path(nf, tw.from_name, from_path) < 0)
					continue;
				queue_path_event(w, "deleted", from_path, NULL, is_dir);
				if (is_dir)
					node_free(find_child(nf, tw.from_name));
				continue;
			}
			if ((!name_matches(w, tw.from_name) && !name_matches(w, to->name)) ||
			    node_path(nf, tw.from_name, from_path) < 0 ||
			    node_path(nt, to->name, to_path) < 0)
				continue;
			queue_path_event(w, "renamed", to_path, from_path, is_dir);
			if (!is_dir || !w->recursive)
				continue;
			child = find_child(nf, tw.from_name);
			if (child) {
				char *nn = strdup(to->name);
				struct tnode *old = find_child(nt, to->name);

				if (!nn) {
					node_free(child);
					continue;
				}
				if (old && old != child)
					node_free(old); /* an empty directory the move replaced */
				list_del(&child->sibling);
				free(child->name);
				child->name = nn;
				child->parent = nt;
				list_add_tail(&child->sibling, &nt->children);
			} else {
				subtree_appeared(w, nt, to->name, to_path, false);
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

	if (tw.have_from) {
		if ((ev->mask & IN_MOVED_TO) && ev->cookie == tw.from_cookie) {
			move_pair(e, ev);
			return;
		}
		from_alone();
	}
	if (ev->mask & IN_Q_OVERFLOW) {
		log_debug("inotify queue overflow: fs/watch watches get an overflow event");
		list_for_each_entry(w, &tw.all, all_link) {
			if (w->ended || !w->root)
				continue;
			queue_overflow(w, "kernel", NULL);
			if (w->recursive)
				scan_enqueue(w->root, SCAN_RESYNC);
		}
		return;
	}
	if (!e)
		return;
	if ((ev->mask & IN_MOVED_FROM) && ev->len > 0 && !list_empty(&e->nodes)) {
		tw.have_from = true;
		tw.from_wd = ev->wd;
		tw.from_cookie = ev->cookie;
		tw.from_mask = ev->mask;
		snprintf(tw.from_name, sizeof(tw.from_name), "%s", ev->name);
		return;
	}
	each_node(e, ev);
}

static void flush_dirty(void);

/* How long a rename's first half waits for its second before it is a move out. */
#define FROM_WAIT_MS 20

/* A first half kept across reads whose second half did not come: a move out of the watch. */
static void on_from_timer(struct uring_timer *t, bool fired)
{
	if (!fired || !tw.have_from)
		return;
	if (tw.from_cookie != tw.timer_cookie) {
		/* armed for a first half since paired: this one gets its own wait */
		tw.timer_cookie = tw.from_cookie;
		uring_timer_arm(&tw.srv->ring, &tw.from_timer, FROM_WAIT_MS, on_from_timer);
		return;
	}
	from_alone();
	flush_dirty();
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
	if (tw.have_from && !tw.srv)
		from_alone();
	else if (tw.have_from && !tw.from_timer.armed) {
		tw.timer_cookie = tw.from_cookie;
		uring_timer_arm(&tw.srv->ring, &tw.from_timer, FROM_WAIT_MS, on_from_timer);
	}
	flush_dirty();
}

static void flush_dirty(void)
{
	struct list_head todo;

	/* Taken one at a time from a list of our own: a send may end a connection and its watches. */
	list_init(&todo);
	list_splice_tail(&tw.dirty, &todo);
	while (!list_empty(&todo)) {
		struct change_watch *w = list_first_entry(&todo, struct change_watch, dirty_link);

		list_del(&w->dirty_link);
		(void)flush_watch(w);
	}
}

/* ---- sending ---- */

static bool flush_watch(struct change_watch *w)
{
	static const char tail[] = "]}}";
	static const char lost[] = "{\"kind\":\"overflow\",\"reason\":\"queue\"}";
	struct conn *c = w->conn;
	char head[96];
	struct outchunk *o;
	size_t body, extra;
	uint8_t *p;
	int hn;

	if (w->q.len == 0 && !w->lost) {
		if (w->ended)
			watch_free(w);
		return true;
	}
	if (w->installing || conn_congested(c)) {
		mark_dirty(w); /* install_end() or fs_watch_conn_drained() sends it */
		return false;
	}
	hn = snprintf(head, sizeof(head),
		      "{\"method\":\"fs/changed\",\"params\":{\"watchId\":%" PRIu64 ",\"events\":[",
		      w->id);
	body = w->q.len ? w->q.len - 1 : 0; /* without the last ',' */
	extra = w->lost ? (body ? 1 : 0) + sizeof(lost) - 1 : 0;
	o = conn_alloc_msg(c, (size_t)hn + body + extra + sizeof(tail) - 1, &p);
	if (!o) {
		mark_dirty(w); /* kept; the next read or drain retries */
		return false;
	}
	memcpy(p, head, (size_t)hn);
	memcpy(p + hn, w->q.data, body);
	if (w->lost) {
		if (body)
			p[hn + body] = ',';
		memcpy(p + hn + body + (body ? 1 : 0), lost, sizeof(lost) - 1);
	}
	memcpy(p + hn + body + extra, tail, sizeof(tail) - 1);
	w->q.len = 0;
	w->last_off = 0;
	w->n_events = 0;
	w->dropping = false;
	w->lost = false;
	if (w->ended)
		watch_free(w);
	/* Last: a failed send may close c, which frees its watches. */
	conn_commit(c, o);
	return true;
}

void fs_watch_conn_drained(struct conn *c)
{
	for (;;) {
		struct change_watch *w, *found = NULL;

		if (!c->watch || c->state != CONN_OPEN)
			return;
		list_for_each_entry(w, &c->watch->changes, link) {
			if (list_linked(&w->dirty_link) && !w->installing) {
				found = w;
				break;
			}
		}
		if (!found)
			return;
		list_del(&found->dirty_link);
		if (!flush_watch(found))
			return;
	}
}

void fs_tree_watch_release(struct fs_watch *st)
{
	while (!list_empty(&st->changes))
		watch_free(list_first_entry(&st->changes, struct change_watch, link));
}

/* ---- scanning in steps ---- */

static void reply_install_error(struct conn *c, json_t *id, int r, const char *path,
				unsigned max_dirs);

/* The initial scan ended: the fs/watch request gets the watchId, or r's error (w freed). */
static void install_end(struct change_watch *w, int r)
{
	struct conn *c = w->pend.conn;
	char path[PATH_MAX];

	w->installing = false;
	if (r < 0) {
		if (c) {
			if (!w->root || node_path(w->root, w->only, path) < 0)
				snprintf(path, sizeof(path), "?");
			reply_install_error(c, w->pend.id, r, path, w->max_dirs);
		}
		watch_free(w);
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
		(void)flush_watch(w);
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

	if (tw.srv->stopping)
		return;
	while (budget > 0 && !list_empty(&tw.scanning)) {
		struct change_watch *w =
			list_first_entry(&tw.scanning, struct change_watch, scanning_link);
		int r = 0;

		if (!list_empty(&w->scan_queue))
			r = scan_one(w, &budget);
		list_del(&w->scanning_link);
		if (r < 0) {
			install_end(w, r);
			continue;
		}
		if (!list_empty(&w->scan_queue)) {
			list_add_tail(&w->scanning_link, &tw.scanning); /* its turn again later */
			continue;
		}
		w->scan_seen = 0;
		if (w->installing)
			install_end(w, 0);
	}
	if (!list_empty(&tw.scanning))
		arm_step();
	flush_dirty(); /* what the scans reported */
}

static void arm_step(void)
{
	struct io_uring_sqe *sqe;

	if (tw.step_op.busy || !tw.srv)
		return;
	sqe = uring_get_sqe(&tw.srv->ring, &tw.step_op, on_step);
	io_uring_prep_nop(sqe);
}

/* ---- requests ---- */

static int limit_param(json_t *v, const char *what, uint64_t def, uint64_t max, unsigned *ret,
		       char *err)
{
	uint64_t n = params_u64(v, def);

	if (n < 1 || n > max) {
		snprintf(err, ERRSZ, "invalid value: integer `%" PRIu64 "`, expected %s between 1 "
			 "and %" PRIu64, n, what, max);
		return -EINVAL;
	}
	*ret = (unsigned)n;
	return 0;
}

static void reply_install_error(struct conn *c, json_t *id, int r, const char *path,
				unsigned max_dirs)
{
	if (r == -EDQUOT)
		rpc_reply_error(c, id, RPC_INVALID_REQUEST,
				"fs/watch: `%s` holds more than %u directories (maxDirectories)",
				path, max_dirs);
	else if (r == -EFBIG)
		rpc_reply_error(c, id, RPC_INVALID_REQUEST,
				"fs/watch: `%s` holds more than %d entries, more than a watch scans",
				path, SCAN_ENTRIES_MAX);
	else if (r == -ENOSPC)
		rpc_reply_error(c, id, RPC_INTERNAL_ERROR,
				"fs/watch: the host's inotify watch limit is reached "
				"(fs.inotify.max_user_watches)");
	else
		rpc_reply_errno(c, id, r);
}

/* The connection of a waiting fs/watch goes: nobody to answer; the watch is freed with it. */
static void install_cancel(struct rpc_pending *p)
{
	rpc_pending_end(p);
}

void fs_rpc_watch(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{ "path", P_STRING, true, NULL },
		{ "recursive", P_BOOL, false, NULL },
		{ "maxDirectories", P_U64, false, NULL },
		{ "maxQueuedEvents", P_U64, false, NULL },
		{ "sandbox", P_STRUCT, false, "struct WireFileSystemSandboxContext" },
	};
	_cleanup_free_ char *path = NULL, *dir = NULL;
	json_t *f[ELEMENTSOF(fields)];
	struct change_watch *w;
	struct fs_watch *st;
	char err[ERRSZ];
	struct stat sb;
	int r;

	if (!fs_decode_params(c, id, params, "FsWatchParams", fields, ELEMENTSOF(fields), f))
		return;
	if (fs_param_path(c, id, f[0], &path) < 0)
		return;
	/* A watch outlives the request: a sandbox could not follow it; refused, not ignored. */
	if (fs_refuse_sandbox(c, id, f[4]))
		return;
	w = calloc(1, sizeof(*w));
	if (!w) {
		rpc_reply_errno_internal(c, id, ENOMEM);
		return;
	}
	list_init(&w->link);
	list_init(&w->all_link);
	list_init(&w->dirty_link);
	list_init(&w->scanning_link);
	list_init(&w->scan_queue);
	w->conn = c;
	w->recursive = params_bool(f[1], false);
	if (limit_param(f[2], "maxDirectories", DIRS_DEFAULT, DIRS_MAX, &w->max_dirs, err) < 0 ||
	    limit_param(f[3], "maxQueuedEvents", EVENTS_DEFAULT, EVENTS_MAX, &w->max_events,
			err) < 0) {
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "%s", err);
		free(w);
		return;
	}
	st = fs_watch_state(c);
	if (!st) {
		free(w);
		rpc_reply_errno_internal(c, id, ENOMEM);
		return;
	}
	if (st->n_changes >= WATCHES_PER_CONN) {
		free(w);
		rpc_reply_error(c, id, RPC_INVALID_REQUEST,
				"fs/watch: at most %d watches per connection; fs/unwatch one first",
				WATCHES_PER_CONN);
		return;
	}
	r = stat(path, &sb) < 0 ? -errno : fs_ino_open(c->srv);
	if (r < 0) {
		free(w);
		reply_install_error(c, id, r, path, 0);
		return;
	}
	tw.srv = c->srv;
	if (S_ISDIR(sb.st_mode)) {
		r = node_add(w, NULL, -1, path, path, &w->root);
	} else if (strcmp(path, "/") != 0) {
		/* A file: its directory, filtered by its name. */
		char *slash = strrchr(path, '/');

		w->recursive = false;
		w->only = strdup(slash + 1);
		dir = slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
		r = !w->only || !dir ? -ENOMEM : node_add(w, NULL, -1, dir, dir, &w->root);
	}
	if (r == 0)
		r = -ENOENT; /* gone, or swapped, between the stat and the watch */
	if (r < 0) {
		reply_install_error(c, id, r, path, w->max_dirs);
		watch_free(w);
		return;
	}
	w->id = ++st->next_change_id;
	list_add_tail(&w->link, &st->changes);
	list_add_tail(&w->all_link, &tw.all);
	st->n_changes++;
	if (w->recursive) {
		/* The tree is scanned in steps; the reply comes at its end (install_end). */
		w->installing = true;
		rpc_pending_start(&w->pend, c, id, install_cancel);
		scan_enqueue(w->root, SCAN_SILENT);
		return;
	}
	log_debug("fs/watch %" PRIu64 " on %s: %s", w->id, c->peer, path);
	rpc_reply(c, id, json_pack("{s:I}", "watchId", (json_int_t)w->id));
}

void fs_rpc_unwatch(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{ "watchId", P_U64, true, NULL },
	};
	json_t *f[ELEMENTSOF(fields)];
	struct change_watch *w;
	uint64_t wid;

	if (!fs_decode_params(c, id, params, "FsUnwatchParams", fields, ELEMENTSOF(fields), f))
		return;
	wid = params_u64(f[0], 0);
	if (c->watch) {
		list_for_each_entry(w, &c->watch->changes, link) {
			if (w->id != wid || w->installing)
				continue; /* an id not answered yet is not known to the client */
			watch_free(w);
			rpc_reply(c, id, json_object());
			return;
		}
	}
	rpc_reply_error(c, id, RPC_INVALID_REQUEST, "unknown watch id %" PRIu64, wid);
}
