/* SPDX-License-Identifier: MIT */
/*
 * fs/watch and fs/unwatch (watch-tree.c): their params, limits and
 * replies.
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

void fs_tw_reply_install_error(struct conn *c, json_t *id, int r, const char *path,
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

/* A watch for c, its limits from the params (f). Returns it, or NULL with the reply sent. */
static struct change_watch *watch_new(struct conn *c, json_t *id, json_t **f)
{
	struct change_watch *w = calloc(1, sizeof(*w));
	char err[ERRSZ];

	if (!w) {
		rpc_reply_errno_internal(c, id, ENOMEM);
		return NULL;
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
		return NULL;
	}
	return w;
}

/*
 * The watch's root node: the directory at path, or for a file its
 * directory, filtered by its name. r is what the caller's checks returned
 * (what stands for "/" when it is no directory). Returns > 0, or -errno
 * (-ENOENT: gone, or swapped, between the stat and the watch).
 */
static int watch_root(struct change_watch *w, const char *path, const struct stat *sb, int r)
{
	_cleanup_free_ char *dir = NULL;

	if (S_ISDIR(sb->st_mode)) {
		r = fs_tw_node_add(w, NULL, -1, path, path, &w->root);
	} else if (strcmp(path, "/") != 0) {
		/* A file: its directory, filtered by its name. */
		const char *slash = strrchr(path, '/');

		w->recursive = false;
		w->only = strdup(slash + 1);
		dir = slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
		r = !w->only || !dir ? -ENOMEM : fs_tw_node_add(w, NULL, -1, dir, dir, &w->root);
	}
	return r == 0 ? -ENOENT : r;
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
	_cleanup_free_ char *path = NULL;
	json_t *f[ELEMENTSOF(fields)];
	struct change_watch *w;
	struct fs_watch *st;
	struct stat sb;
	int r;

	if (!params_decode_or_reply(c, id, params, "FsWatchParams", fields, ELEMENTSOF(fields), f))
		return;
	if (fs_param_path(c, id, f[0], &path) < 0)
		return;
	/* A watch outlives the request: a sandbox could not follow it; refused, not ignored. */
	if (fs_refuse_sandbox(c, id, f[4]))
		return;
	w = watch_new(c, id, f);
	if (!w)
		return;
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
		fs_tw_reply_install_error(c, id, r, path, 0);
		return;
	}
	fs_tw.srv = c->srv;
	r = watch_root(w, path, &sb, r);
	if (r < 0) {
		fs_tw_reply_install_error(c, id, r, path, w->max_dirs);
		fs_tw_watch_free(w);
		return;
	}
	w->id = ++st->next_change_id;
	list_add_tail(&w->link, &st->changes);
	list_add_tail(&w->all_link, &fs_tw.all);
	st->n_changes++;
	if (w->recursive) {
		/* The tree is scanned in steps; the reply comes at its end (fs_tw_install_end). */
		w->installing = true;
		rpc_pending_start(&w->pend, c, id, install_cancel);
		fs_tw_scan_enqueue(w->root, SCAN_SILENT);
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

	if (!params_decode_or_reply(c, id, params, "FsUnwatchParams", fields,
				    ELEMENTSOF(fields), f))
		return;
	wid = params_u64(f[0], 0);
	if (c->watch) {
		list_for_each_entry(w, &c->watch->changes, link) {
			if (w->id != wid || w->installing)
				continue; /* an id not answered yet is not known to the client */
			fs_tw_watch_free(w);
			rpc_reply(c, id, json_object());
			return;
		}
	}
	rpc_reply_error(c, id, RPC_INVALID_REQUEST, "unknown watch id %" PRIu64, wid);
}
