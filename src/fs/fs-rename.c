/* SPDX-License-Identifier: MIT */
/*
 * uexec's fs/rename (README "Protocol extensions"; the request is
 * fs-rmcp.c's): its safety checks as a worker-pool job, each name looked up
 * in its parent as opened once, then the rename itself as an
 * IORING_OP_RENAMEAT (renameat2 in the job where the ring has none).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conn.h"
#include "fs-rmcp.h"
#include "fs-tree.h"
#include "macro.h"
#include "ring.h"
#include "rpc.h"

/*
 * The text of fs/rename's EXDEV: the kernel renames only within one mount
 * (a bind mount of the same filesystem counts as another), and in a sandbox
 * Landlock answers it too for a move that would change what the file is
 * reachable with.
 */
static int refuse_exdev(struct tree_job *j)
{
	int r = fs_refuse(j, "Cross-device link (os error 18): fs/rename cannot move `%s` to `%s`: "
			     "they are on different filesystems or mounts (or a sandbox forbids "
			     "the move); use fs/copy, then fs/remove", j->path, j->dest);

	j->code = RPC_INTERNAL_ERROR; /* the class of an OS error (PROTOCOL.md §4) */
	return r;
}

/*
 * Opens path's parent directory (O_PATH, following symlinks as any path
 * lookup does) into *ret_fd and points *ret_base at path's last name. From
 * here on the checks and the rename look the last name up in that open
 * directory only: a parent swapped for a symlink meanwhile changes nothing.
 */
static int rename_anchor(const char *path, int *ret_fd, const char **ret_base)
{
	_cleanup_free_ char *parent = NULL;
	const char *slash = strrchr(path, '/');

	if (!slash || !slash[1])
		return -EINVAL; /* not absolute, or "/" (refused before) */
	parent = slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
	if (!parent)
		return -ENOMEM;
	*ret_fd = open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (*ret_fd < 0)
		return -errno;
	*ret_base = slash + 1;
	return 0;
}

/*
 * The checks of fs/rename, in the worker: the source exists; neither the
 * source nor a directory the rename would replace is "/", the server's
 * working or home directory or one of their ancestors (fs/remove's rule: a
 * rename takes them away as surely); a directory does not move into itself
 * or below itself (fs/copy's rule; the kernel's EINVAL stays the backstop);
 * the two names are not the same file (rename(2) would do nothing and
 * succeed, leaving both names). Symlinks are moved, never followed; each
 * last name is looked up in its parent as opened by rename_anchor().
 */
static int do_rename(struct tree_job *j)
{
	struct stat ss, ds;
	int r;

	r = fs_protect_all(j);
	if (r < 0)
		return r;
	if (strcmp(j->path, "/") == 0)
		return fs_refuse(j, "fs/rename refuses to move the root directory");
	if (strcmp(j->dest, "/") == 0)
		return fs_refuse(j, "fs/rename refuses to replace the root directory");
	r = rename_anchor(j->path, &j->src_dirfd, &j->src_base);
	if (r < 0)
		return r;
	if (fstatat(j->src_dirfd, j->src_base, &ss, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	/* A secret moved into the workspace would be readable there (secrets.h). */
	r = fs_refuse_secret(j, &ss);
	if (r < 0)
		return r;
	if (S_ISDIR(ss.st_mode)) {
		r = fs_check_protected_as(j, &ss, "fs/rename", "move", j->path);
		if (r < 0)
			return r;
	}
	r = rename_anchor(j->dest, &j->dst_dirfd, &j->dst_base);
	if (r < 0)
		return r;
	if (fstatat(j->dst_dirfd, j->dst_base, &ds, AT_SYMLINK_NOFOLLOW) == 0) {
		/* ...and one replaced would be another token or key at the next reload. */
		r = fs_refuse_secret(j, &ds);
		if (r < 0)
			return r;
		if (ds.st_dev == ss.st_dev && ds.st_ino == ss.st_ino)
			return fs_refuse(j, "fs/rename source and destination are the same file");
		if (S_ISDIR(ds.st_mode) && !(j->rename_flags & RENAME_NOREPLACE)) {
			r = fs_check_protected_as(j, &ds, "fs/rename", "replace", j->dest);
			if (r < 0)
				return r;
		}
	} else if (errno != ENOENT) {
		return -errno;
	}
	if (S_ISDIR(ss.st_mode)) {
		/* The destination's directory as opened, then its ancestors through "..". */
		r = fs_ancestor_is(j->dst_dirfd, ".", &ss);
		if (r < 0)
			return r;
		if (r > 0)
			return fs_refuse(j,
					 "fs/rename cannot move a directory into itself or one of "
					 "its descendants");
	}
	if (j->rename_on_ring)
		return 0;
	/* No RENAMEAT on this ring: the rename runs here, in the same directories. */
	if (renameat2(j->src_dirfd, j->src_base, j->dst_dirfd, j->dst_base, j->rename_flags) < 0)
		return errno == EXDEV ? refuse_exdev(j) : -errno;
	return 0;
}

void fs_rename_run(struct tree_job *j)
{
	j->err = do_rename(j);
	if (j->err >= 0)
		j->result = json_object();
}

static void on_renameat(struct uring_op *op, int res, uint32_t flags)
{
	struct tree_job *j = container_of(op, struct tree_job, ring_op);

	if (!j->orphaned) {
		struct conn *c = j->pend.conn;

		if (res == -EXDEV) {
			refuse_exdev(j);
			rpc_reply_error(c, j->pend.id, j->code, "%s", j->msg ? j->msg : "");
		} else if (res < 0) {
			rpc_reply_errno(c, j->pend.id, res);
		} else {
			rpc_reply_serialized(c, j->pend.id, "{}", 2);
		}
		rpc_pending_end(&j->pend);
	}
	fs_tree_job_free(j);
}

bool fs_rename_submit(struct tree_job *j)
{
	struct io_uring_sqe *sqe;

	if (j->op != OP_RENAME || !j->rename_on_ring || j->msg || j->err < 0 || !j->result_text)
		return false;
	if (j->orphaned) {
		/* Nobody waits for it any more: the move is not made. */
		fs_tree_job_free(j);
		return true;
	}
	sqe = uring_get_sqe(&j->srv->ring, &j->ring_op, on_renameat);
	io_uring_prep_renameat(sqe, j->src_dirfd, j->src_base, j->dst_dirfd, j->dst_base,
			       j->rename_flags);
	return true;
}
