/* SPDX-License-Identifier: MIT */
/*
 * fs/watchMissing and fs/missingChanged (PROTOCOL.md §6.22, §7.4) on inotify.
 *
 * A missing path cannot be watched itself. What inotify can report is the
 * creation of a name in a directory that exists, so every missing path
 * becomes a pair (anchor, name): its deepest existing ancestor directory and
 * the first missing component below it. That name being created means the
 * path or one of its missing ancestors appeared, which is exactly when the
 * reference fires (registering p/q/r and creating p fires). The present path
 * is watched through its parent (IN_DELETE/IN_MOVED_FROM of its name) and
 * through its own inode (deleted or moved: look again).
 *
 * One inotify instance serves the whole server, created on first use:
 * instances are a per-user resource (fs.inotify.max_user_instances, 128 by
 * default) while watches are cheap. The kernel hands out one wd per inode, so
 * wds are shared through a refcounted table wd -> targets and the kernel
 * watch is removed when its last target goes. Events are read through the
 * ring into a buffer owned by this module; the fd is non-blocking, so the
 * read waits in the ring's poll, not in a kernel worker.
 *
 * When a watched directory itself is deleted or moved, or the event queue
 * overflowed, the affected watches are re-checked with stat(2) and re-armed.
 * Not seen: a rename of a directory above an anchor (only the anchor itself
 * is watched); the client registers a new watch every turn anyway.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include "conn.h"
#include "fs-upgrade.h"
#include "fs.h"
#include "log.h"
#include "params.h"
#include "rpc-fs.h"
#include "rpc.h"
#include "server.h"
#include "watch-internal.h"
#include "watch.h"

/* Paths per watch (the real client sends about six): bounds the stat calls of one request. */
#define WATCH_MAX_PATHS 256
#define WD_BUCKETS 64
/* Many events per read; one event takes at most sizeof(struct inotify_event) + NAME_MAX + 1. */
#define EVBUF_SIZE 16384
/* Re-lookups while components keep appearing under a registration (each one is deeper). */
#define ARM_ATTEMPTS 64

/*
 * Anchors follow symlinks (no IN_DONT_FOLLOW): the path lookup of the missing
 * path follows them too, so the directory to watch is the target.
 */
#define ANCHOR_MASK (IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
#define PARENT_MASK (IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
#define SELF_MASK (IN_DELETE_SELF | IN_MOVE_SELF)
/* The watched inode itself changed, or the kernel dropped the watch. */
#define RECHECK_MASK (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED | IN_UNMOUNT)

enum target_kind {
	T_MISSING,	/* IN_CREATE/IN_MOVED_TO of the awaited name in the anchor */
	T_PRESENT,	/* IN_DELETE/IN_MOVED_FROM of the present name in its parent */
	T_PRESENT_SELF, /* the present path's own inode */
};

struct missing_watch;

struct target {
	struct list_head wd_link;
	struct wd_entry *wd; /* NULL while not armed */
	struct missing_watch *w;
	enum target_kind kind;
	char *path;	 /* native, normalised (no "//", "." or ".." components) */
	size_t dir_len;	 /* the watched directory is path[0, dir_len), 0 meaning "/" */
	size_t name_len; /* the awaited name starts at path[dir_len + 1] */
};

enum action {
	ACT_NONE,
	ACT_RECHECK,
	ACT_FIRE,
};

/* One registered watch (at most one per connection). */
struct missing_watch {
	struct list_head link;	   /* ino.watches */
	struct list_head act_link; /* a to-do list while events are dispatched */
	enum action act;
	struct conn *conn;
	uint64_t id;
	char *present; /* NULL when not given */
	size_t n;
	struct target t[];
};

/*
 * The inotify instance. Static because the server is a process singleton;
 * everything here belongs to it (docs/ARCHITECTURE.md "Global state").
 */
static struct {
	struct server *srv;
	int fd; /* -1 until the first watch */
	struct uring_op read_op;
	struct list_head buckets[WD_BUCKETS];
	struct list_head watches; /* every armed struct missing_watch */
	uint8_t buf[EVBUF_SIZE] __attribute__((aligned(__alignof__(struct inotify_event))));
} ino = {.fd = -1};

static void watch_free(struct missing_watch *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct missing_watch *, watch_free);

/* ---- the wd table ---- */

static struct list_head *bucket(int wd)
{
	return &ino.buckets[(unsigned)wd % WD_BUCKETS];
}

struct wd_entry *fs_ino_lookup(int wd)
{
	struct wd_entry *e;

	list_for_each_entry(e, bucket(wd), hash_link) {
		if (e->wd == wd)
			return e;
	}
	return NULL;
}

void fs_ino_put(struct wd_entry *e)
{
	if (--e->refs > 0)
		return;
	/* The kernel queues IN_IGNORED for it; events of unknown wds are skipped. */
	if (!e->dead)
		(void)inotify_rm_watch(ino.fd, e->wd);
	list_del(&e->hash_link);
	free(e);
}

int fs_ino_attach(const char *path, uint32_t mask, struct wd_entry **ret)
{
	struct wd_entry *e;
	int wd;

	/* IN_MASK_ADD: the same inode may already be watched for other users. */
	wd = inotify_add_watch(ino.fd, path, mask | IN_MASK_ADD);
	if (wd < 0)
		return -errno;
	e = fs_ino_lookup(wd);
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e) {
			(void)inotify_rm_watch(ino.fd, wd);
			return -ENOMEM;
		}
		e->wd = wd;
		list_init(&e->targets);
		list_init(&e->nodes);
		list_add_tail(&e->hash_link, bucket(wd));
	}
	e->refs++;
	*ret = e;
	return 0;
}

/* Attaches t to the kernel watch on path (added, or shared with other targets). */
static int target_attach(struct target *t, const char *path, uint32_t mask)
{
	struct wd_entry *e;
	int r = fs_ino_attach(path, mask, &e);

	if (r < 0)
		return r;
	list_add_tail(&t->wd_link, &e->targets);
	t->wd = e;
	return 0;
}

/* Detaches t and returns its old entry, still referenced (fs_ino_put() it), or NULL. */
static struct wd_entry *target_detach(struct target *t)
{
	struct wd_entry *e = t->wd;

	if (e) {
		list_del(&t->wd_link);
		t->wd = NULL;
	}
	return e;
}

static void target_disarm(struct target *t)
{
	struct wd_entry *e = target_detach(t);

	if (e)
		fs_ino_put(e);
}

/* ---- paths ---- */

static int stat_errno(const char *path)
{
	struct stat st;

	return stat(path, &st) < 0 ? -errno : 0;
}

/* path[0, len) into buf (PATH_MAX bytes), "/" for len 0. */
static int prefix(char *buf, const char *path, size_t len)
{
	if (len >= PATH_MAX)
		return -ENAMETOOLONG;
	if (len == 0) {
		strcpy(buf, "/");
		return 0;
	}
	memcpy(buf, path, len);
	buf[len] = 0;
	return 0;
}

/*
 * The deepest existing ancestor directory of path, as a prefix length (0 for
 * "/"). Only ENOENT moves up: another error (EACCES on an ancestor) means the
 * path cannot be checked.
 */
static int find_anchor(const char *path, size_t *ret_len)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);
	struct stat st;
	int r;

	r = prefix(buf, path, len);
	if (r < 0)
		return r;
	for (;;) {
		char *slash = strrchr(buf, '/');

		if (!slash || slash == buf) {
			*ret_len = 0;
			return 0;
		}
		*slash = 0;
		if (stat(buf, &st) == 0) {
			if (!S_ISDIR(st.st_mode))
				return -ENOTDIR;
			*ret_len = (size_t)(slash - buf);
			return 0;
		}
		if (errno != ENOENT)
			return -errno;
	}
}

/*
 * Watches the first missing component of t->path. Returns 0 when armed, 1
 * when the path exists, or -errno. The name is looked up again once the
 * kernel watch exists: a creation just before inotify_add_watch() would
 * otherwise go unnoticed.
 */
static int target_arm_missing(struct target *t)
{
	char buf[PATH_MAX];
	int r;

	for (unsigned attempt = 0; attempt < ARM_ATTEMPTS; attempt++) {
		r = stat_errno(t->path);
		if (r == 0)
			return 1;
		if (r != -ENOENT)
			return r;
		r = find_anchor(t->path, &t->dir_len);
		if (r < 0)
			return r;
		t->name_len = strcspn(t->path + t->dir_len + 1, "/");
		r = prefix(buf, t->path, t->dir_len);
		if (r < 0)
			return r;
		r = target_attach(t, buf, ANCHOR_MASK);
		if (r == -ENOENT || r == -ENOTDIR)
			continue; /* the anchor went away meanwhile: look again */
		if (r < 0)
			return r;
		r = prefix(buf, t->path, t->dir_len + 1 + t->name_len);
		if (r == 0)
			r = stat_errno(buf);
		if (r == -ENOENT)
			return 0;
		target_disarm(t);
		if (r < 0)
			return r;
		/* The name appeared between the lookups: the anchor is deeper now. */
	}
	return -ELOOP;
}

static int target_arm(struct target *t)
{
	char buf[PATH_MAX];
	int r;

	switch (t->kind) {
	case T_MISSING:
		return target_arm_missing(t);
	case T_PRESENT:
		t->dir_len = (size_t)(strrchr(t->path, '/') - t->path);
		t->name_len = strlen(t->path + t->dir_len + 1);
		r = prefix(buf, t->path, t->dir_len);
		return r < 0 ? r : target_attach(t, buf, PARENT_MASK);
	case T_PRESENT_SELF:
		return target_attach(t, t->path, SELF_MASK);
	}
	return -EINVAL;
}

/* ---- watches ---- */

static void watch_free(struct missing_watch *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->n; i++) {
		target_disarm(&w->t[i]);
		free(w->t[i].path);
	}
	list_del(&w->link);
	list_del(&w->act_link);
	free(w->present);
	free(w);
}

static int add_target(struct missing_watch *w, enum target_kind kind, char *path)
{
	struct target *t = &w->t[w->n];

	if (!path)
		return -ENOMEM;
	t->w = w;
	t->kind = kind;
	t->path = path;
	w->n++;
	return 0;
}

/*
 * After a watched inode changed or events were lost: true when w must fire
 * (a missing path or a missing ancestor exists now, the present path is gone,
 * or the paths cannot be checked any more). Otherwise w is re-armed on the
 * current anchors. The old wds are released only after the new ones are
 * taken, so an unchanged kernel watch is kept (with its queued events).
 */
static bool watch_recheck(struct missing_watch *w)
{
	for (size_t i = 0; i < w->n; i++) {
		struct target *t = &w->t[i];
		size_t old_len = t->dir_len;
		struct wd_entry *old = target_detach(t);
		int r;

		r = target_arm(t);
		if (old)
			fs_ino_put(old);
		if (r != 0 || (t->kind == T_MISSING && t->dir_len > old_len))
			return true;
	}
	return w->present && stat_errno(w->present) < 0;
}

static void watch_fire(struct missing_watch *w)
{
	struct conn *c = w->conn;
	char msg[96];
	int n;

	n = snprintf(msg, sizeof(msg),
		     "{\"method\":\"fs/missingChanged\",\"params\":{\"watchId\":%" PRIu64 "}}",
		     w->id);
	log_debug("fs/missingChanged for watch %" PRIu64 " on %s", w->id, c->peer);
	/* One-shot: gone before the send, which may close c (out of memory). */
	c->watch->active = NULL;
	watch_free(w);
	conn_send_text(c, msg, (size_t)n);
}

static void mark(struct list_head *todo, struct missing_watch *w, enum action a)
{
	if (a <= w->act)
		return;
	if (w->act == ACT_NONE)
		list_add_tail(&w->act_link, todo);
	w->act = a;
}

/* Fires or re-checks every watch on todo. A fired watch is freed, which only touches its own connection. */
static void run_actions(struct list_head *todo)
{
	while (!list_empty(todo)) {
		struct missing_watch *w = list_first_entry(todo, struct missing_watch, act_link);
		enum action a = w->act;

		list_del(&w->act_link);
		w->act = ACT_NONE;
		if (a == ACT_FIRE || watch_recheck(w))
			watch_fire(w);
	}
}

/* ---- events ---- */

static enum action target_event(const struct target *t, const struct inotify_event *ev)
{
	const char *name = t->path + t->dir_len + 1;
	bool named = ev->len > 0 && strnlen(ev->name, ev->len) == t->name_len &&
		     memcmp(ev->name, name, t->name_len) == 0;

	if (t->kind == T_MISSING && (ev->mask & (IN_CREATE | IN_MOVED_TO)) && named)
		return ACT_FIRE;
	if (t->kind == T_PRESENT && (ev->mask & (IN_DELETE | IN_MOVED_FROM)) && named)
		return ACT_FIRE;
	/*
	 * Also the present inode's own deletion: it may have been replaced by a
	 * rename (the path still exists), so look rather than fire.
	 */
	if (ev->mask & RECHECK_MASK)
		return ACT_RECHECK;
	return ACT_NONE;
}

static void handle_event(const struct inotify_event *ev, struct list_head *todo)
{
	struct missing_watch *w;
	struct wd_entry *e;
	struct target *t;

	if (ev->mask & IN_Q_OVERFLOW) {
		log_debug("inotify queue overflow: re-checking every fs/watchMissing watch");
		list_for_each_entry(w, &ino.watches, link) {
			mark(todo, w, ACT_RECHECK);
		}
		fs_tree_watch_event(NULL, ev);
		return;
	}
	e = fs_ino_lookup(ev->wd);
	if (!e) {
		fs_tree_watch_event(NULL, ev); /* removed by us; its last events are still queued */
		return;
	}
	/* Pinned: the fs/watch side may drop its nodes on e; the targets are marked first. */
	e->refs++;
	list_for_each_entry(t, &e->targets, wd_link) {
		mark(todo, t->w, target_event(t, ev));
	}
	if (ev->mask & IN_IGNORED) {
		/* The kernel dropped it (directory deleted, unmounted); its users re-arm elsewhere. */
		e->dead = true;
		list_del(&e->hash_link);
	}
	fs_tree_watch_event(e, ev);
	fs_ino_put(e);
}

static void arm_read(void);

static void on_inotify(struct uring_op *op, int res, uint32_t flags)
{
	struct list_head todo;
	size_t off = 0;

	if (res < 0) {
		if (res == -ECANCELED || ino.srv->stopping)
			return;
		if (res == -EINTR || res == -EAGAIN) {
			arm_read();
			return;
		}
		log_error_errno(res, "Reading inotify events failed, fs/watchMissing and fs/watch "
				     "watches stop");
		return;
	}
	list_init(&todo);
	while (off + sizeof(struct inotify_event) <= (size_t)res) {
		const struct inotify_event *ev = (const struct inotify_event *)(ino.buf + off);

		off += sizeof(*ev) + ev->len;
		if (off > (size_t)res)
			break;
		handle_event(ev, &todo);
		/* Before the next event: a re-check may free the wd entries it refers to. */
		run_actions(&todo);
	}
	fs_tree_watch_batch_end();
	if (!ino.srv->stopping)
		arm_read();
}

static void arm_read(void)
{
	struct io_uring_sqe *sqe = uring_get_sqe(&ino.srv->ring, &ino.read_op, on_inotify);

	io_uring_prep_read(sqe, ino.fd, ino.buf, sizeof(ino.buf), 0);
}

int fs_ino_open(struct server *s)
{
	int fd;

	if (ino.fd >= 0)
		return 0;
	fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (fd < 0)
		return -errno;
	ino.fd = fd;
	ino.srv = s;
	for (size_t i = 0; i < WD_BUCKETS; i++)
		list_init(&ino.buckets[i]);
	list_init(&ino.watches);
	arm_read();
	return 0;
}

/* ---- fs/watchMissing ---- */

/*
 * Checks the request and arms its targets. Returns 0 when armed, 1 for the
 * reference's watching:false cases (nothing missing, a missing path exists,
 * present absent), or -errno when a path cannot be checked (EACCES on an
 * ancestor, also watching:false) or inotify fails.
 *
 * The stat(2) and inotify_add_watch(2) calls run synchronously on the loop:
 * a handful of metadata lookups of paths the client has just probed (their
 * dentries are hot), bounded by WATCH_MAX_PATHS. inotify_add_watch has no
 * ring op anyway, and doing it off the loop would let events of new wds
 * arrive before the table knows them.
 */
static int watch_install(struct server *s, struct missing_watch *w)
{
	size_t n_missing = 0;
	int r;

	for (size_t i = 0; i < w->n; i++) {
		if (w->t[i].kind != T_MISSING)
			continue;
		n_missing++;
		r = stat_errno(w->t[i].path);
		if (r == 0)
			return 1;
		if (r != -ENOENT)
			return r;
	}
	if (n_missing == 0)
		return 1;
	if (w->present) {
		r = stat_errno(w->present);
		if (r < 0)
			return r == -ENOENT ? 1 : r;
	}
	r = fs_ino_open(s);
	if (r < 0)
		return r;
	for (size_t i = 0; i < w->n; i++) {
		r = target_arm(&w->t[i]);
		if (r != 0)
			return r;
	}
	/* The present path may have gone before its watches existed. */
	if (w->present && stat_errno(w->present) < 0)
		return 1;
	return 0;
}

static void reply_watching(struct conn *c, json_t *id, bool watching)
{
	json_t *res = json_object();

	if (res)
		json_object_set_new(res, "watching", json_boolean(watching));
	rpc_reply(c, id, res);
}

/*
 * A watch of the paths a request names (missing: an array of n_missing
 * URIs; present: one, or NULL). Paths are params too: a bad URI is an
 * error reply, before any state changes. Returns the watch, or NULL with
 * the reply sent.
 */
static struct missing_watch *watch_targets(struct conn *c, json_t *id, json_t *missing,
					   size_t n_missing, json_t *present)
{
	_cleanup_(watch_freep) struct missing_watch *w = NULL;
	int r = 0;

	w = calloc(1, sizeof(*w) + (n_missing + 2) * sizeof(struct target));
	if (!w) {
		rpc_reply_errno_internal(c, id, ENOMEM);
		return NULL;
	}
	for (size_t i = 0; i < n_missing && r == 0; i++) {
		char *path;

		r = fs_param_path(c, id, json_array_get(missing, i), &path);
		if (r == 0)
			add_target(w, T_MISSING, path);
	}
	if (r == 0 && present)
		r = fs_param_path(c, id, present, &w->present);
	if (r < 0)
		return NULL; /* fs_param_path() replied */
	/* "/" cannot go away: it needs no watch. */
	if (w->present && strcmp(w->present, "/") != 0 &&
	    (add_target(w, T_PRESENT, strdup(w->present)) < 0 ||
	     add_target(w, T_PRESENT_SELF, strdup(w->present)) < 0)) {
		rpc_reply_errno_internal(c, id, ENOMEM);
		return NULL;
	}
	return TAKE_PTR(w);
}

void fs_rpc_watch_missing(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{"watchId", P_U64, true, NULL},
		{"missing", P_STRING_SEQ, true, NULL},
		{"present", P_STRING, false, NULL},
	};
	_cleanup_(watch_freep) struct missing_watch *w = NULL;
	json_t *f[ELEMENTSOF(fields)];
	size_t n_missing;
	uint64_t watch_id;
	struct fs_watch *st;
	char err[512];
	int r;

	r = params_decode(params, "FsWatchMissingParams", fields, ELEMENTSOF(fields), f, err,
			  sizeof(err));
	if (r < 0) {
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "%s", err);
		return;
	}
	watch_id = params_u64(f[0], 0);
	n_missing = f[1] ? json_array_size(f[1]) : 0;
	if (n_missing > WATCH_MAX_PATHS) {
		rpc_reply_error(c, id, RPC_INVALID_PARAMS,
				"fs/watchMissing accepts at most %d missing paths, got %zu",
				WATCH_MAX_PATHS, n_missing);
		return;
	}

	w = watch_targets(c, id, f[1], n_missing, f[2]);
	if (!w)
		return;
	st = fs_watch_state(c);
	if (!st) {
		rpc_reply_errno_internal(c, id, ENOMEM);
		return;
	}
	/* Not newer than every id seen on this connection: ignored, the active watch stays. */
	if (st->have_id && watch_id <= st->last_id) {
		reply_watching(c, id, false);
		return;
	}
	/* Newer: it replaces the active watch even if it then fails to install. */
	st->have_id = true;
	st->last_id = watch_id;
	watch_free(TAKE_PTR(st->active));

	w->conn = c;
	w->id = watch_id;
	r = watch_install(c->srv, w);
	if (r < 0 && r != -EACCES && r != -ENOENT && r != -ENOTDIR && r != -ENAMETOOLONG &&
	    r != -ELOOP)
		log_warning_errno(r,
				  "fs/watchMissing on %s: cannot watch, answering watching:false",
				  c->peer);
	else if (r < 0)
		log_debug_errno(r, "fs/watchMissing on %s: a path cannot be checked", c->peer);
	if (r == 0) {
		list_add_tail(&w->link, &ino.watches);
		st->active = TAKE_PTR(w);
	}
	reply_watching(c, id, r == 0);
}

struct fs_watch *fs_watch_state(struct conn *c)
{
	if (!c->watch) {
		c->watch = calloc(1, sizeof(*c->watch));
		if (c->watch)
			list_init(&c->watch->changes);
	}
	return c->watch;
}

void fs_watch_conn_closed(struct conn *c)
{
	struct fs_watch *st = c->watch;

	if (!st)
		return;
	watch_free(st->active);
	fs_tree_watch_release(st);
	free(st);
	c->watch = NULL;
}

/* ---- a live upgrade (fs-upgrade.h) ---- */

int fs_watch_missing_export(struct conn *c, fs_upg_watch_fn fn, void *ctx)
{
	struct missing_watch *w = c->watch ? c->watch->active : NULL;
	const char *others[WATCH_MAX_PATHS];
	struct fs_upg_watch u = { 0 };

	if (!w)
		return 0;
	u.id = w->id;
	u.missing = true;
	u.present = w->present;
	for (size_t i = 0; i < w->n; i++) {
		if (w->t[i].kind != T_MISSING)
			continue;
		if (!u.path)
			u.path = w->t[i].path;
		else
			others[u.n_others++] = w->t[i].path;
	}
	u.others = others;
	return u.path ? fn(ctx, &u) : 0;
}

/*
 * The watch made again on this binary's instance, as fs/watchMissing makes
 * it. What happened since the old binary last read its events is found as
 * after a kernel queue overflow: a missing path (or a missing ancestor) that
 * exists now, or a present path gone, fires at once; so do paths that
 * cannot be checked any more (the client registers again).
 */
int fs_watch_missing_adopt(struct conn *c, const struct fs_upg_watch *u)
{
	struct missing_watch *w = calloc(1, sizeof(*w) + (u->n_others + 3) * sizeof(struct target));
	struct fs_watch *st = fs_watch_state(c);
	int r = 0;

	if (!w || !st) {
		free(w);
		return -ENOMEM;
	}
	r = add_target(w, T_MISSING, strdup(u->path));
	for (size_t i = 0; i < u->n_others && r == 0; i++)
		r = add_target(w, T_MISSING, strdup(u->others[i]));
	if (r == 0 && u->present) {
		w->present = strdup(u->present);
		r = !w->present ? -ENOMEM : 0;
		if (r == 0 && strcmp(u->present, "/") != 0 &&
		    (add_target(w, T_PRESENT, strdup(u->present)) < 0 ||
		     add_target(w, T_PRESENT_SELF, strdup(u->present)) < 0))
			r = -ENOMEM;
	}
	if (r < 0) {
		watch_free(w);
		return r;
	}
	w->conn = c;
	w->id = u->id;
	watch_free(TAKE_PTR(st->active));
	r = watch_install(c->srv, w);
	if (r == 0) /* armed (the instance is open only then) */
		list_add_tail(&w->link, &ino.watches);
	st->active = w;
	if (r != 0) {
		log_debug_errno(r < 0 ? r : 0, "fs/watchMissing %" PRIu64 " on %s changed during the "
				"upgrade", u->id, c->peer);
		watch_fire(w);
	}
	return 0;
}
