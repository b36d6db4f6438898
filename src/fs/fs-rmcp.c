/* SPDX-License-Identifier: MIT */
/*
 * fs/remove and fs/copy (PROTOCOL.md §6.18, §6.19): removal and copy of
 * trees through directory fds, run as worker-pool jobs (fs-tree.h); and
 * uexec's fs/rename (README "Protocol extensions"), whose safety checks run
 * as such a job before the rename itself is an IORING_OP_RENAMEAT.
 *
 * Where uexec deliberately differs from the reference 0.169.0:
 *  - fs/copy of a file onto itself (same device and inode, whatever the
 *    names) is refused instead of truncating the file to 0 bytes (§13);
 *  - fs/copy never carries set-user-ID/set-group-ID bits over to the copy,
 *    and an existing destination loses its own before it is rewritten (the
 *    reference copies all 07777 bits, and as root keeps the destination's);
 *  - fs/copy and fs/rename refuse the server's secret files (secrets.h) as
 *    source or destination (EACCES);
 *  - fs/remove refuses `/` and any directory that is, or contains, the
 *    server's working directory or home directory (§13); a tree is removed
 *    through directory fds with O_NOFOLLOW, never following a symlink;
 *  - fs/remove with followSymlinks:false works (a symlink anywhere in the
 *    path is refused with "path contains a symbolic link"); the reference
 *    answers "recursive no-follow removal is unsupported" unless
 *    recursive:false is also given.
 *
 * This file: what the three share (fs-rmcp.h) and their requests, decoded
 * and turned into tree jobs; the jobs are fs-remove.c, fs-copy.c and
 * fs-rename.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conn.h"
#include "fs-req.h"
#include "fs-rmcp.h"
#include "fs-tree.h"
#include "fs.h"
#include "macro.h"
#include "params.h"
#include "rpc-fs.h"
#include "rpc.h"

#define ANCESTOR_MAX 4096     /* ".." steps when looking for the source above a destination */

/*
 * A refusal of our own (-32600 unless said otherwise). Returns -ECANCELED so
 * that callers deep in a tree simply unwind; done() sees msg first.
 */

int fs_refuse(struct tree_job *j, const char *fmt, ...)
{
	va_list ap;

	free(j->msg);
	va_start(ap, fmt);
	if (vasprintf(&j->msg, fmt, ap) < 0)
		j->msg = NULL;
	va_end(ap);
	j->code = RPC_INVALID_REQUEST;
	return j->msg ? -ECANCELED : -ENOMEM;
}

static bool same_id(const struct stat *st, const struct dev_ino *id)
{
	return st->st_dev == id->dev && st->st_ino == id->ino;
}

/*
 * Identities of "/", the server's working and home directories and all
 * their ancestors: removing any of them would remove the server's own
 * ground. Compared by device + inode, so other spellings (symlinks, "..",
 * bind mounts of the same directory) are caught too.
 */
static int protect_path(struct tree_job *j, const char *path, const char *what)
{
	_cleanup_free_ char *real = realpath(path, NULL);
	char *p;

	if (!real)
		return 0; /* gone: nothing to protect */
	for (p = real;; p++) {
		if (*p == '/' || *p == 0) {
			char saved = *p;
			struct dev_ino *nk;
			const char **nw;
			struct stat st;

			*p = 0;
			if (stat(p == real ? "/" : real, &st) == 0) {
				nk = realloc(j->keep, (j->n_keep + 1) * sizeof(*nk));
				if (nk)
					j->keep = nk;
				nw = realloc(j->keep_what, (j->n_keep + 1) * sizeof(*nw));
				if (nw)
					j->keep_what = nw;
				if (!nk || !nw)
					return -ENOMEM;
				j->keep[j->n_keep] = (struct dev_ino){ st.st_dev, st.st_ino };
				j->keep_what[j->n_keep++] = p == real ? NULL : what;
			}
			*p = saved;
			if (!saved)
				break;
		}
	}
	return 0;
}

/* method refuses to verb path (e.g. "fs/remove", "remove") when st is protected. */
int fs_check_protected_as(struct tree_job *j, const struct stat *st, const char *method,
			  const char *verb, const char *path)
{
	for (size_t i = 0; i < j->n_keep; i++) {
		if (!same_id(st, &j->keep[i]))
			continue;
		if (!j->keep_what[i])
			return fs_refuse(j, "%s refuses to %s the root directory", method, verb);
		return fs_refuse(j, "%s refuses to %s `%s`: it is or contains the server's %s",
				 method, verb, path, j->keep_what[i]);
	}
	return 0;
}

/* What check_protected() compares with: "/", the server's cwd and home, their ancestors. */
int fs_protect_all(struct tree_job *j)
{
	int r = protect_path(j, "/", NULL);

	if (r >= 0 && j->cwd)
		r = protect_path(j, j->cwd, "working directory");
	if (r >= 0 && j->home)
		r = protect_path(j, j->home, "home directory");
	return r;
}

/* fdopendir() that closes fd when it fails; *ret_err gets -errno then. */
DIR *fs_open_dir_fd(int fd, int *ret_err)
{
	DIR *d = fdopendir(fd);

	if (!d) {
		*ret_err = -errno;
		safe_close(fd);
	}
	return d;
}

/* The next entry other than "." and "..": 1 and *ret, 0 at the end, or -errno. */
int fs_next_entry(DIR *d, struct dirent **ret)
{
	for (;;) {
		errno = 0;
		*ret = readdir(d);
		if (!*ret)
			return -errno;
		if (strcmp((*ret)->d_name, ".") != 0 && strcmp((*ret)->d_name, "..") != 0)
			return 1;
	}
}

/* -EACCES if st is one of the server's secret files (secrets.h), noted for done() to log. */
int fs_refuse_secret(struct tree_job *j, const struct stat *st)
{
	if (!server_secret_ids_has(&j->secrets, st->st_dev, st->st_ino))
		return 0;
	j->secret_refused = true;
	return -EACCES;
}

/*
 * 1 when the directory dir, or one of its ancestors (through "..", i.e.
 * after symlinks were resolved), is src; 0 when none is; or -errno.
 */
int fs_ancestor_is(int at, const char *dir, const struct stat *src)
{
	_cleanup_close_ int fd = openat(at, dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct stat st, ust;

	if (fd < 0)
		return -errno;
	for (unsigned i = 0; i < ANCESTOR_MAX; i++) {
		int up;

		if (fstat(fd, &st) < 0)
			return -errno;
		if (st.st_dev == src->st_dev && st.st_ino == src->st_ino)
			return 1;
		up = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (up < 0)
			return -errno;
		if (fstat(up, &ust) < 0) {
			safe_close(up);
			return -errno;
		}
		safe_close(fd);
		fd = up;
		if (ust.st_dev == st.st_dev && ust.st_ino == st.st_ino)
			return 0; /* the root is its own parent */
	}
	return 0;
}

/* ---- requests ---- */

/*
 * The directories fs/remove and fs/rename protect: the same ones
 * environmentInfo reports as cwd and userHomeDir, captured here (worker
 * threads do not read the environment). 0, or -ENOMEM: the job is then not
 * run (never unprotected for want of memory).
 */
static int capture_protected(struct tree_job *j)
{
	char cwd[PATH_MAX];
	const char *home = getenv("HOME");

	if ((getcwd(cwd, sizeof(cwd)) && !(j->cwd = strdup(cwd))) ||
	    (home && home[0] == '/' && !(j->home = strdup(home))))
		return -ENOMEM;
	return 0;
}

void fs_rpc_remove(struct conn *c, json_t *id, json_t *params)
{
	/* Declaration order as the reference's (seen through positional params). */
	static const struct pfield fields[] = {
		{ "path", P_STRING, true, NULL },
		{ "recursive", P_BOOL, false, NULL },
		{ "force", P_BOOL, false, NULL },
		{ "followSymlinks", P_BOOL, false, NULL },
		{ "sandbox", P_STRUCT, false, "struct WireFileSystemSandboxContext" },
	};
	json_t *f[ELEMENTSOF(fields)];
	struct tree_job *j;

	if (!params_decode_or_reply(c, id, params, "WireFsRemoveParams", fields,
				    ELEMENTSOF(fields), f))
		return;
	j = fs_tree_path_job(c, id, OP_REMOVE, f[0], f[4]);
	if (!j)
		return;
	/* Both defaults are true: {"path": X} removes a whole tree (§6.18). */
	j->recursive = params_bool(f[1], true);
	j->force = params_bool(f[2], true);
	j->follow = params_bool(f[3], true);
	if (capture_protected(j) < 0) {
		rpc_reply_errno_internal(c, id, ENOMEM);
		fs_tree_job_free(j);
		return;
	}
	fs_tree_job_submit(c, id, j);
}

/*
 * A tree job with a source and a destination path (fs/copy, fs/rename). Source
 * first, then destination: the order the reference reports URI errors in.
 * NULL after answering the request.
 */
static struct tree_job *two_path_job(struct conn *c, json_t *id, enum tree_op op, json_t *src,
				     json_t *dst, json_t *sandbox)
{
	_cleanup_free_ char *dest = NULL;
	struct tree_job *j = fs_tree_path_job(c, id, op, src, sandbox);

	if (!j)
		return NULL;
	if (fs_param_path(c, id, dst, &dest) < 0) {
		fs_tree_job_free(j);
		return NULL;
	}
	j->dest = TAKE_PTR(dest);
	return j;
}

void fs_rpc_copy(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{ "sourcePath", P_STRING, true, NULL },
		{ "destinationPath", P_STRING, true, NULL },
		{ "recursive", P_BOOL, true, NULL },
		{ "sandbox", P_STRUCT, false, "struct WireFileSystemSandboxContext" },
	};
	json_t *f[ELEMENTSOF(fields)];
	struct tree_job *j;

	if (!params_decode_or_reply(c, id, params, "WireFsCopyParams", fields,
				    ELEMENTSOF(fields), f))
		return;
	j = two_path_job(c, id, OP_COPY, f[0], f[1], f[3]);
	if (!j)
		return;
	j->recursive = params_bool(f[2], false);
	j->secrets = *server_secret_ids(c->srv); /* the worker reads its own copy */
	fs_tree_job_submit(c, id, j);
}

void fs_rpc_rename(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{ "sourcePath", P_STRING, true, NULL },
		{ "destinationPath", P_STRING, true, NULL },
		{ "overwrite", P_BOOL, false, NULL },
		{ "sandbox", P_STRUCT, false, "struct WireFileSystemSandboxContext" },
	};
	json_t *f[ELEMENTSOF(fields)];
	struct tree_job *j;

	if (!params_decode_or_reply(c, id, params, "FsRenameParams", fields, ELEMENTSOF(fields), f))
		return;
	j = two_path_job(c, id, OP_RENAME, f[0], f[1], f[3]);
	if (!j)
		return;
	j->rename_flags = params_bool(f[2], true) ? 0 : RENAME_NOREPLACE;
	j->rename_on_ring = c->srv->ring.has_renameat;
	j->secrets = *server_secret_ids(c->srv);
	if (capture_protected(j) < 0) {
		rpc_reply_errno_internal(c, id, ENOMEM);
		fs_tree_job_free(j);
		return;
	}
	fs_tree_job_submit(c, id, j);
}
