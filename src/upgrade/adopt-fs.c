/* SPDX-License-Identifier: MIT */
/*
 * A connection's fs state across a live upgrade (docs/UPGRADE.md, "Watches
 * and fs/open handles"): its watches and watch ids and its fs/open handles
 * into the blob (SERIALIZE, from collect.c's put_conn), and back onto the
 * adopted connection (RESTORE, from adopt.c, before the connection reads:
 * a request in its unparsed input may name a handle or a watch).
 *
 * Handles travel as their fds: fs/readBlock and fs/writeBlock are
 * positional, so the open file description is the whole handle. Watches
 * travel as their paths and are added again on the new binary's own inotify
 * instance (src/fs/fs-upgrade.h says how what changed meanwhile is told).
 * Not the inotify fd: the old instance's wds name the old binary's tree of
 * nodes, which the new one rebuilds from paths (a directory renamed meanwhile
 * would be another wd's), and its queue may already have been read into the
 * old binary's buffer; the kernel's own answer to lost events, an overflow and
 * a rescan, is the one the protocol already has.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "fs-upgrade.h"
#include "log.h"
#include "state.h"
#include "upgrade-internal.h"
#include "view.h"

/* ---- SERIALIZE ---- */

struct put {
	struct upgrade_writer *w;
	struct upgrade_collected *c;
	uint32_t conn_rec;
};

void upgrade_put_conn_fs_ids(struct upgrade_writer *w, struct conn *cn)
{
	struct fs_upg_ids ids;

	fs_upg_watch_ids(cn, &ids);
	if (ids.have_missing)
		upgrade_writer_u64(w, UPGRADE_CONN_MISSING_ID, ids.missing);
	if (ids.change)
		upgrade_writer_u64(w, UPGRADE_CONN_CHANGE_ID, ids.change);
}

/* fs/watchMissing's other paths as (u32 len, path)*. */
static void put_others(struct upgrade_writer *w, const struct fs_upg_watch *u)
{
	struct buf b = { 0 };

	for (size_t i = 0; i < u->n_others; i++) {
		uint32_t len = (uint32_t)strlen(u->others[i]);
		uint8_t x[4] = { (uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16),
				 (uint8_t)(len >> 24) };

		if (buf_append(&b, x, 4) < 0 || buf_append(&b, u->others[i], len) < 0) {
			w->error = w->error ? w->error : -ENOMEM;
			break;
		}
	}
	if (b.len)
		upgrade_writer_bytes(w, UPGRADE_WATCH_OTHERS, b.data, b.len);
	buf_done(&b);
}

static int put_watch(void *ctx, const struct fs_upg_watch *u)
{
	struct put *p = ctx;
	struct upgrade_writer *w = p->w;

	upgrade_writer_begin(w, UPGRADE_REC_WATCH);
	upgrade_writer_ref(w, UPGRADE_WATCH_CONN, p->conn_rec);
	upgrade_writer_u64(w, UPGRADE_WATCH_ID, u->id);
	upgrade_writer_bytes(w, UPGRADE_WATCH_PATH, u->path, strlen(u->path));
	if (u->recursive)
		upgrade_writer_bool(w, UPGRADE_WATCH_RECURSIVE, true);
	if (u->missing) {
		upgrade_writer_bool(w, UPGRADE_WATCH_MISSING, true);
		put_others(w, u);
		if (u->present)
			upgrade_writer_bytes(w, UPGRADE_WATCH_PRESENT, u->present, strlen(u->present));
	} else {
		if (u->only)
			upgrade_writer_bytes(w, UPGRADE_WATCH_ONLY, u->only, strlen(u->only));
		upgrade_writer_u64(w, UPGRADE_WATCH_MAX_DIRS, u->max_dirs);
		upgrade_writer_u64(w, UPGRADE_WATCH_MAX_EVENTS, u->max_events);
		if (u->has_ident) {
			upgrade_writer_u64(w, UPGRADE_WATCH_DEV, u->dev);
			upgrade_writer_u64(w, UPGRADE_WATCH_INO, u->ino);
		}
		if (u->ended)
			upgrade_writer_u64(w, UPGRADE_WATCH_ENDED, (uint64_t)u->ended);
		if (u->queued)
			upgrade_writer_bytes(w, UPGRADE_WATCH_QUEUED, u->queued, u->queued_len);
	}
	upgrade_writer_end(w);
	p->c->watches++;
	p->c->watch_queued_bytes += u->queued_len;
	return 0;
}

static int put_handle(void *ctx, const char *id, size_t id_len, int fd, bool writable)
{
	struct put *p = ctx;
	struct upgrade_writer *w = p->w;

	upgrade_writer_begin(w, UPGRADE_REC_FS_HANDLE);
	upgrade_writer_ref(w, UPGRADE_FS_HANDLE_CONN, p->conn_rec);
	upgrade_writer_bytes(w, UPGRADE_FS_HANDLE_ID, id, id_len);
	upgrade_writer_fd(w, UPGRADE_FS_HANDLE_FD, fd);
	upgrade_writer_bool(w, UPGRADE_FS_HANDLE_WRITABLE, writable);
	upgrade_writer_end(w);
	p->c->fs_handles++;
	p->c->fds++;
	return 0;
}

void upgrade_put_conn_fs(struct upgrade_writer *w, struct upgrade_collected *c, struct conn *cn,
			 uint32_t conn_rec)
{
	struct put p = { w, c, conn_rec };
	int r = fs_upg_each_watch(cn, put_watch, &p);

	if (r < 0)
		w->error = w->error ? w->error : r;
	(void)fs_upg_each_handle(cn, put_handle, &p);
}

/* ---- RESTORE ---- */

static void note(int r, int *first, char *err, size_t err_size, const char *what,
		 const struct conn *c)
{
	if (r >= 0)
		return;
	log_warning_errno(r, "Upgrade: %s of %s could not be made again", what, c->peer);
	if (!*first) {
		*first = r;
		snprintf(err, err_size, "%s of %s: %s", what, c->peer, strerror(-r));
	}
}

/* The view's bytes as a C string (the view checked: no NUL, at most PATH_MAX - 1 bytes). */
static char *cstr(const uint8_t *p, uint32_t len)
{
	return p ? strndup((const char *)p, len) : NULL;
}

static int adopt_watch(struct conn *c, const struct upgrade_view_watch *vw)
{
	struct fs_upg_watch u = {
		.id = vw->id, .missing = vw->missing, .recursive = vw->recursive,
		.max_dirs = vw->max_dirs, .max_events = vw->max_events,
		.has_ident = vw->has_ident, .dev = vw->dev, .ino = vw->ino,
		.ended = (enum fs_upg_end)vw->ended,
		.queued = (const char *)vw->queued, .queued_len = vw->queued_len,
	};
	char *path = cstr(vw->path, vw->path_len), *present = cstr(vw->present, vw->present_len);
	char *only = cstr(vw->only, vw->only_len);
	char **others = calloc(vw->n_others + 1, sizeof(*others));
	size_t off = 0;
	int r = -ENOMEM;

	if (!path || !others || (vw->present && !present) || (vw->only && !only))
		goto out;
	for (uint32_t i = 0; i < vw->n_others; i++) {
		const uint8_t *f = vw->others->val + off;
		uint32_t len = (uint32_t)f[0] | (uint32_t)f[1] << 8 | (uint32_t)f[2] << 16 |
			       (uint32_t)f[3] << 24;

		others[i] = cstr(f + 4, len);
		if (!others[i])
			goto out;
		off += 4 + len;
	}
	u.path = path;
	u.present = present;
	u.only = only;
	u.others = (const char *const *)others;
	u.n_others = vw->n_others;
	r = fs_upg_adopt_watch(c, &u);
out:
	for (uint32_t i = 0; others && i < vw->n_others; i++)
		free(others[i]);
	free(others);
	free(path);
	free(present);
	free(only);
	return r;
}

void upgrade_adopt_fs(const struct upgrade_view *v, struct conn **conns, int *first, char *err,
		      size_t err_size)
{
	for (uint32_t i = 0; i < v->n_conns; i++) {
		const struct upgrade_view_conn *vc = &v->conns[i];
		struct fs_upg_ids ids = { vc->has_missing_id, vc->missing_id, vc->change_id };

		if (conns[i])
			note(fs_upg_adopt_ids(conns[i], &ids), first, err, err_size, "the watch ids",
			     conns[i]);
	}
	for (uint32_t i = 0; i < v->n_fs_handles; i++) {
		const struct upgrade_view_fs_handle *h = &v->fs_handles[i];
		struct conn *c = conns[h->conn];

		/* A connection not adopted: its handles close (its client reconnects). */
		if (!c)
			safe_close(h->fd);
		else
			note(fs_upg_adopt_handle(c, h->id, h->id_len, h->fd, h->writable), first, err,
			     err_size, "an fs/open handle", c);
	}
	for (uint32_t i = 0; i < v->n_watches; i++) {
		struct conn *c = conns[v->watches[i].conn];

		if (c)
			note(adopt_watch(c, &v->watches[i]), first, err, err_size, "a watch", c);
	}
	/* What the watches found changed (fs/changed's overflow, ended) goes out now. */
	fs_upg_adopt_flush();
}
