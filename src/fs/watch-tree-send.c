/* SPDX-License-Identifier: MIT */
/*
 * fs/watch's events (watch-tree.c): each watch's queue of event texts,
 * bounded (QUEUE_BYTES, maxQueuedEvents while the connection is congested,
 * then an overflow event), and its send as one fs/changed.
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

/* ---- events ---- */

void fs_tw_mark_dirty(struct change_watch *w)
{
	if (!list_linked(&w->dirty_link))
		list_add_tail(&w->dirty_link, &fs_tw.dirty);
}

/*
 * Queues one event. force: overflow and ended, which pass the bound (once).
 * A modification identical to the one queued last is not queued again.
 */
void fs_tw_queue_event(struct change_watch *w, json_t *ev, bool force, bool coalesce)
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
		fs_tw_queue_event(w, json_pack("{s:s,s:s}", "kind", "overflow", "reason", "queue"),
				  true, false);
		return;
	}
	if (buf_reserve(&w->q, n + 1) == 0) {
		w->last_off = w->q.len;
		memcpy(w->q.data + w->q.len, text, n);
		w->q.data[w->q.len + n] = ',';
		w->q.len += n + 1;
		w->n_events++;
		fs_tw_mark_dirty(w);
	} else {
		w->dropping = true;
		w->lost = true;
		fs_tw_mark_dirty(w);
	}
	free(text);
}

/* An event about path (and old for renamed). */
void fs_tw_queue_path_event(struct change_watch *w, const char *kind, const char *path,
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
	fs_tw_queue_event(w, ev, false, strcmp(kind, "modified") == 0);
}

void fs_tw_queue_overflow(struct change_watch *w, const char *reason, const char *path)
{
	json_t *ev = json_pack("{s:s,s:s}", "kind", "overflow", "reason", reason);

	if (ev && path)
		json_object_set_new(ev, "path", fs_uri_json(path));
	fs_tw_queue_event(w, ev, true, false);
}

/*
 * Sends w's queued events as one fs/changed unless its connection is
 * congested; w is off the dirty list when called and back on it when its
 * events wait. Returns false when they wait. An ended watch is freed.
 */

/* ---- sending ---- */

bool fs_tw_flush_watch(struct change_watch *w)
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
			fs_tw_watch_free(w);
		return true;
	}
	if (w->installing || conn_congested(c)) {
		fs_tw_mark_dirty(w); /* fs_tw_install_end() or fs_watch_conn_drained() sends it */
		return false;
	}
	hn = snprintf(head, sizeof(head),
		      "{\"method\":\"fs/changed\",\"params\":{\"watchId\":%" PRIu64 ",\"events\":[",
		      w->id);
	body = w->q.len ? w->q.len - 1 : 0; /* without the last ',' */
	extra = w->lost ? (body ? 1 : 0) + sizeof(lost) - 1 : 0;
	o = conn_alloc_msg(c, (size_t)hn + body + extra + sizeof(tail) - 1, &p);
	if (!o) {
		fs_tw_mark_dirty(w); /* kept; the next read or drain retries */
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
		fs_tw_watch_free(w);
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
		if (!fs_tw_flush_watch(found))
			return;
	}
}
