/* SPDX-License-Identifier: MIT */
/*
 * A connection's fs state read for a live upgrade and made again in the new
 * binary (fs-upgrade.h): fs/watch watches (fs/watchMissing's are watch.c's,
 * whose types are its own), the watch ids, and fs/open handles.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "fs-req.h"
#include "fs-upgrade.h"
#include "log.h"
#include "watch-internal.h"
#include "watch-tree-internal.h"

/* ---- ids ---- */

void fs_upg_watch_ids(const struct conn *c, struct fs_upg_ids *ret)
{
	const struct fs_watch *st = c->watch;

	memset(ret, 0, sizeof(*ret));
	if (!st)
		return;
	ret->have_missing = st->have_id;
	ret->missing = st->last_id;
	ret->change = st->next_change_id;
}

int fs_upg_adopt_ids(struct conn *c, const struct fs_upg_ids *ids)
{
	struct fs_watch *st;

	if (!ids->have_missing && !ids->change)
		return 0;
	st = fs_watch_state(c);
	if (!st)
		return -ENOMEM;
	st->have_id = ids->have_missing;
	st->last_id = ids->missing;
	st->next_change_id = ids->change;
	return 0;
}

/* ---- fs/watch watches ---- */

static enum fs_upg_end end_of(const char *reason)
{
	if (reason && strcmp(reason, "moved") == 0)
		return FS_UPG_END_MOVED;
	if (reason && strcmp(reason, "unmounted") == 0)
		return FS_UPG_END_UNMOUNTED;
	return FS_UPG_END_DELETED;
}

int fs_upg_each_watch(struct conn *c, fs_upg_watch_fn fn, void *ctx)
{
	struct change_watch *w;
	char path[PATH_MAX];
	int r;

	if (!c->watch)
		return 0;
	r = fs_watch_missing_export(c, fn, ctx);
	if (r)
		return r;
	list_for_each_entry(w, &c->watch->changes, link) {
		static const char lost[] = "{\"kind\":\"overflow\",\"reason\":\"queue\"},";
		struct fs_upg_watch u = { 0 };
		struct buf text = { 0 };

		if (w->installing)
			continue; /* not the client's yet: its fs/watch request holds the upgrade */
		u.id = w->id;
		u.only = w->only;
		u.recursive = w->recursive;
		u.max_dirs = w->max_dirs;
		u.max_events = w->max_events;
		if (w->ended || !w->root) {
			/* Its ended event waits for the client to read: sent by the new binary. */
			u.ended = end_of(w->end_reason);
			u.path = "/"; /* the root is gone: nothing to watch */
		} else {
			if (fs_tw_node_path(w->root, NULL, path) < 0)
				return -ENAMETOOLONG;
			u.path = path;
			u.has_ident = true;
			u.dev = (uint64_t)w->root->dev;
			u.ino = (uint64_t)w->root->ino;
		}
		u.queued = (const char *)w->q.data;
		u.queued_len = w->q.len;
		/* Events dropped for want of memory: the overflow the send would have added. */
		if (w->lost) {
			if (buf_append(&text, w->q.data, w->q.len) < 0 ||
			    buf_append(&text, lost, sizeof(lost) - 1) < 0) {
				buf_done(&text);
				return -ENOMEM;
			}
			u.queued = (const char *)text.data;
			u.queued_len = text.len;
		}
		if (!u.queued_len)
			u.queued = NULL;
		r = fn(ctx, &u);
		buf_done(&text);
		if (r)
			return r;
	}
	return 0;
}

static const char *const end_reasons[] = {
	[FS_UPG_END_DELETED] = "deleted",
	[FS_UPG_END_MOVED] = "moved",
	[FS_UPG_END_UNMOUNTED] = "unmounted",
};

/*
 * The root made again from its path, if it is still the same directory.
 * Returns 0, or the reason the watch ended: gone, another directory there
 * now, or not watchable any more (the host's inotify limit, permissions).
 */
static const char *root_again(struct change_watch *w, const struct fs_upg_watch *u)
{
	int r = fs_tw_node_add(w, NULL, -1, u->path, u->path, &w->root);

	if (r > 0 && ((uint64_t)w->root->dev != u->dev || (uint64_t)w->root->ino != u->ino)) {
		fs_tw_node_free(TAKE_PTR(w->root));
		return "moved";
	}
	if (r > 0)
		return NULL;
	if (r == 0 || r == -ENOENT || r == -ENOTDIR)
		return "deleted";
	log_warning_errno(r, "Upgrade: fs/watch %" PRIu64 " on %s: cannot watch %s again, it ends",
			  u->id, w->conn->peer, u->path);
	return "upgrade";
}

/*
 * The events the old binary had queued, queued again (they passed the
 * bounds there). The text came through the blob: it must parse as JSON
 * objects with a kind before anything of it is queued. 0 or -EBADMSG.
 */
static int requeue(struct change_watch *w, const struct fs_upg_watch *u)
{
	char *text = malloc(u->queued_len + 1);
	json_t *arr, *e;
	size_t i;
	int r = 0;

	if (!text)
		return -ENOMEM;
	/* "{...},{...}," as the array "[{...},{...}]" */
	text[0] = '[';
	memcpy(text + 1, u->queued, u->queued_len - 1);
	text[u->queued_len] = ']';
	arr = json_loadb(text, u->queued_len + 1, JSON_REJECT_DUPLICATES, NULL);
	free(text);
	if (!json_is_array(arr))
		r = -EBADMSG;
	json_array_foreach(arr, i, e) {
		if (!json_is_object(e) || !json_is_string(json_object_get(e, "kind")))
			r = -EBADMSG;
	}
	json_array_foreach(arr, i, e) {
		if (r == 0)
			fs_tw_queue_event(w, json_incref(e), true, false);
	}
	json_decref(arr);
	return r;
}

static int change_adopt(struct conn *c, const struct fs_upg_watch *u)
{
	struct fs_watch *st = fs_watch_state(c);
	struct change_watch *w;
	const char *end;
	int r;

	if (!st)
		return -ENOMEM;
	r = fs_ino_open(c->srv);
	if (r < 0)
		return r;
	w = calloc(1, sizeof(*w));
	if (!w || (u->only && !(w->only = strdup(u->only)))) {
		free(w);
		return -ENOMEM;
	}
	list_init(&w->link);
	list_init(&w->all_link);
	list_init(&w->dirty_link);
	list_init(&w->scanning_link);
	list_init(&w->scan_queue);
	w->conn = c;
	w->id = u->id;
	w->recursive = u->recursive;
	w->max_dirs = u->max_dirs ? u->max_dirs : DIRS_DEFAULT;
	w->max_events = u->max_events ? u->max_events : EVENTS_DEFAULT;
	fs_tw.srv = c->srv;
	list_add_tail(&w->link, &st->changes);
	list_add_tail(&w->all_link, &fs_tw.all);
	st->n_changes++;
	r = u->queued ? requeue(w, u) : 0;
	if (r < 0)
		log_warning_errno(r, "Upgrade: fs/watch %" PRIu64 " on %s: the events it had queued "
				  "do not parse; an overflow stands for them", u->id, c->peer);
	if (u->ended && u->queued && r == 0) {
		/* Its last event, ended, is queued already: nothing happened to it since. */
		w->ended = true;
		w->end_reason = end_reasons[u->ended];
		fs_tw_mark_dirty(w);
		return 0;
	}
	/* What happened since the old binary last read its events is not known: rescan. */
	fs_tw_queue_overflow(w, "upgrade", NULL);
	end = u->ended ? end_reasons[u->ended] : root_again(w, u);
	if (end) {
		w->ended = true;
		w->end_reason = end;
		fs_tw_queue_event(w, json_pack("{s:s,s:s}", "kind", "ended", "reason", end), true,
				  false);
	} else if (w->recursive) {
		/* Its subdirectories as they are now, in steps; reported by nothing but the overflow. */
		fs_tw_scan_enqueue(w->root, SCAN_SILENT);
	}
	fs_tw_mark_dirty(w);
	return 0;
}

int fs_upg_adopt_watch(struct conn *c, const struct fs_upg_watch *w)
{
	return w->missing ? fs_watch_missing_adopt(c, w) : change_adopt(c, w);
}

void fs_upg_adopt_flush(void)
{
	fs_tw_flush_dirty();
}

/* ---- fs/open handles ---- */

struct each_handle {
	fs_upg_handle_fn fn;
	void *ctx;
	int r;
};

static void each_handle_cb(void *value, void *ctx)
{
	const struct fs_handle *h = value;
	struct each_handle *e = ctx;

	/* Not ready: fs/open is still under way, and its request holds the upgrade. */
	if (e->r == 0 && h->ready)
		e->r = e->fn(e->ctx, h->id, h->id_len, h->fd, h->writable);
}

int fs_upg_each_handle(struct conn *c, fs_upg_handle_fn fn, void *ctx)
{
	struct each_handle e = { fn, ctx, 0 };

	strmap_foreach(&c->fs_handles, each_handle_cb, &e);
	return e.r;
}

int fs_upg_adopt_handle(struct conn *c, const void *id, size_t id_len, int fd, bool writable)
{
	struct fs_handle *h;

	if (id_len > MAX_HANDLE_ID || strmap_get(&c->fs_handles, id, id_len) ||
	    c->fs_handles.size >= MAX_HANDLES) {
		safe_close(fd);
		return -EINVAL; /* the view refused those already */
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		safe_close(fd);
		return -ENOMEM;
	}
	h->fd = fd;
	h->writable = writable;
	h->ready = true;
	h->refs = 1; /* the map */
	h->id_len = id_len;
	memcpy(h->id, id, id_len);
	if (strmap_put(&c->fs_handles, h->id, h->id_len, h) < 0) {
		fs_handle_unref(h);
		return -ENOMEM;
	}
	return 0;
}
