/* SPDX-License-Identifier: MIT */
/*
 * The request object of the ring-based file methods (see fs-req.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "conn.h"
#include "fs-req.h"
#include "fs.h"
#include "log.h"
#include "server.h"

void fs_handle_unref(struct fs_handle *h)
{
	if (h && --h->refs == 0) {
		safe_close(h->fd);
		free(h);
	}
}

static void fs_req_free(struct fs_req *r)
{
	for (unsigned i = 0; i < r->n_prefixes; i++)
		free(r->prefixes[i]);
	free(r->prefixes);
	fs_handle_unref(r->h);
	conn_mem_done(&r->mem);
	free(r->msg);
	json_decref(r->result);
	safe_close(r->fd);
	if (r->at_fd >= 0)
		close(r->at_fd);
	free(r->ops);
	free(r->path);
	free(r->parent);
	free(r->data);
	free(r);
}

static void req_cancel(struct rpc_pending *p)
{
	struct fs_req *r = container_of(p, struct fs_req, pend);

	rpc_pending_end(&r->pend);
	r->orphaned = true;
	r->conn = NULL;
}

struct fs_req *fs_req_new(struct conn *c, json_t *id, unsigned n_ops)
{
	struct fs_req *r = calloc(1, sizeof(*r));

	if (r)
		r->ops = calloc(n_ops, sizeof(*r->ops));
	if (!r || !r->ops) {
		free(r);
		rpc_reply_errno_internal(c, id, ENOMEM);
		return NULL;
	}
	r->n_ops = n_ops;
	for (unsigned i = 0; i < n_ops; i++)
		r->ops[i].r = r;
	r->conn = c;
	r->srv = c->srv;
	r->fd = -1;
	r->at_fd = AT_FDCWD;
	conn_mem_init(&r->mem, c);
	rpc_pending_start(&r->pend, c, id, req_cancel);
	return r;
}

/* Replies r->err (if set) or result, and frees the request. */
void fs_req_finish(struct fs_req *r, json_t *result)
{
	if (!r->orphaned) {
		if (r->err)
			rpc_reply_errno(r->conn, r->pend.id, r->err);
		else
			rpc_reply(r->conn, r->pend.id, result ? result : json_object());
		rpc_pending_end(&r->pend);
	} else {
		json_decref(result);
	}
	fs_req_free(r);
}

void fs_req_finish_error(struct fs_req *r, int code, const char *fmt, ...)
{
	char text[ERRSZ];
	va_list ap;

	if (!r->orphaned) {
		va_start(ap, fmt);
		vsnprintf(text, sizeof(text), fmt, ap);
		va_end(ap);
		rpc_reply_error(r->conn, r->pend.id, code, "%s", text);
		rpc_pending_end(&r->pend);
	}
	fs_req_free(r);
}

static void on_op(struct uring_op *op, int res, uint32_t flags)
{
	struct fs_op *fo = container_of(op, struct fs_op, op);
	struct fs_req *r = fo->r;

	fo->res = res;
	if (--r->inflight == 0)
		r->next(r);
}

/* An SQE for op slot i of r; when every submitted op has completed, next(r) runs. */
struct io_uring_sqe *fs_req_sqe(struct fs_req *r, unsigned i, void (*next)(struct fs_req *))
{
	r->inflight++;
	r->next = next;
	r->ops[i].res = 0;
	return uring_get_sqe(&r->srv->ring, &r->ops[i].op, on_op);
}

void fs_req_statx(struct fs_req *r, unsigned i, int flags, struct statx *stx,
		      void (*next)(struct fs_req *))
{
	struct io_uring_sqe *sqe = fs_req_sqe(r, i, next);

	io_uring_prep_statx(sqe, r->at_fd, r->at_name, flags | AT_STATX_SYNC_AS_STAT,
			    STATX_TYPE | STATX_MODE | STATX_SIZE | STATX_MTIME | STATX_BTIME, stx);
}

/* Closes r->fd on the ring, then replies: the result waits in r->result. */
static void finish_after_close(struct fs_req *r);

void fs_req_close_and_finish(struct fs_req *r)
{
	struct io_uring_sqe *sqe;

	if (r->fd < 0) {
		finish_after_close(r);
		return;
	}
	sqe = fs_req_sqe(r, 0, finish_after_close);
	io_uring_prep_close(sqe, r->fd);
	r->fd = -1;
}

static void finish_after_close(struct fs_req *r)
{
	json_t *res = r->result;

	r->result = NULL;
	fs_req_finish(r, res);
}

uint64_t fs_ms_of(const struct statx_timestamp *t)
{
	return (uint64_t)t->tv_sec * 1000 + t->tv_nsec / 1000000;
}

/* Common start of a path-based request: decode path, refuse sandboxes. */
struct fs_req *fs_path_req(struct conn *c, json_t *id, json_t *path, json_t *sandbox,
			       json_t *follow, unsigned n_ops)
{
	struct fs_req *r;
	char *native = NULL;

	if (fs_param_path(c, id, path, &native) < 0)
		return NULL;
	if (fs_refuse_sandbox(c, id, sandbox)) {
		free(native);
		return NULL;
	}
	r = fs_req_new(c, id, n_ops);
	if (!r) {
		free(native);
		return NULL;
	}
	r->path = native;
	r->at_name = native;
	r->follow = params_bool(follow, true);
	return r;
}


static void nofollow_checked(struct fs_req *r)
{
	int res = r->ops[0].res;

	if (res >= 0) {
		/* The operation starts from the directory checked, with the last name. */
		r->at_fd = res;
		r->at_name = strrchr(r->path, '/') + 1;
	} else if (!(res == -ENOENT && r->parent_missing_ok) && res != -ENOSYS) {
		/* (-ENOSYS: a kernel before openat2, 5.6: the last component is still checked) */
		r->err = res == -ELOOP ? -ENOTDIR : res;
		fs_req_finish(r, NULL);
		return;
	}
	r->after_check(r);
}

void fs_req_nofollow_check(struct fs_req *r, bool missing_ok, void (*next)(struct fs_req *r))
{
	struct io_uring_sqe *sqe;
	const char *slash = strrchr(r->path, '/');

	/* fs_param_path normalised the path: absolute, no "." / "..", no trailing slash. */
	if (r->follow || !slash || strcmp(r->path, "/") == 0) {
		next(r);
		return;
	}
	r->parent = slash == r->path ? strdup("/") : strndup(r->path, (size_t)(slash - r->path));
	if (!r->parent) {
		r->err = -ENOMEM;
		fs_req_finish(r, NULL);
		return;
	}
	r->how = (struct open_how){ .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
				    .resolve = RESOLVE_NO_SYMLINKS };
	r->after_check = next;
	r->parent_missing_ok = missing_ok;
	sqe = fs_req_sqe(r, 0, nofollow_checked);
	io_uring_prep_openat2(sqe, AT_FDCWD, r->parent, &r->how);
}

bool fs_req_is_server_secret(struct fs_req *r, const struct statx *st, const char *method)
{
	/* The cached identities (secrets.h): stat'ed again at most once a second. */
	const struct secret_ids *ids = server_secret_ids(r->srv);

	if (!ids->all && ids->n == 0)
		return false;
	/* A file statx cannot identify cannot be told from a secret (fail closed). */
	if ((st->stx_mask & STATX_INO) &&
	    !server_secret_ids_has(ids, makedev(st->stx_dev_major, st->stx_dev_minor), st->stx_ino))
		return false;
	log_warning("Refusing %s of %s: it is one of the server's own secret files (token, key, "
		    "audit log or configuration), which no request may read or write",
		    method, r->path);
	return true;
}

/* Whether this thread's effective set holds CAP_FSETID (true when it cannot tell). */
static bool have_fsetid(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = { 0 };

	if (syscall(SYS_capget, &h, d) < 0)
		return true;
	return d[CAP_TO_INDEX(CAP_FSETID)].effective & CAP_TO_MASK(CAP_FSETID);
}

int fs_trunc_open_errno(int dirfd, const char *name, bool follow, int err)
{
	_cleanup_close_ int fd = -1;
	struct statvfs vfs;
	struct stat st;

	if (err != -EACCES && err != -EPERM)
		return err;
	fd = openat(dirfd, name, O_PATH | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || fstatvfs(fd, &vfs) < 0)
		return err;
	return vfs.f_flag & ST_RDONLY ? -EROFS : err;
}

int fs_drop_setid(int fd, mode_t mode)
{
	if (!(mode & (S_ISUID | S_ISGID)))
		return 0;
	if (fchmod(fd, mode & 01777) == 0)
		return 0;
	/*
	 * Not ours to chmod (another owner's file, the sandboxed helper with
	 * --sandbox-uid): without CAP_FSETID the truncation that follows drops
	 * the bits itself (the kernel's file_remove_privs rule), so the write
	 * may go on; with it, refused.
	 */
	if (errno == EPERM && !have_fsetid())
		return 0;
	return -errno;
}

static void rewrite_truncated(struct fs_req *r)
{
	if (r->ops[0].res < 0)
		r->err = r->ops[0].res;
	r->after_rewrite(r);
}

void fs_req_rewrite_start(struct fs_req *r, int fd, const struct statx *st, const char *method,
			  void (*next)(struct fs_req *r))
{
	struct io_uring_sqe *sqe;
	int e;

	if (fs_req_is_server_secret(r, st, method)) {
		r->err = -EACCES;
		next(r);
		return;
	}
	/* A FIFO, a terminal, /dev/null: written as they are, as O_TRUNC would leave them. */
	if (!S_ISREG(st->stx_mode)) {
		next(r);
		return;
	}
	/* Metadata only, rare (set-id files): on the loop. */
	e = fs_drop_setid(fd, st->stx_mode);
	if (e < 0) {
		r->err = e;
		next(r);
		return;
	}
	if (!r->srv->ring.has_ftruncate) {
		/* Before Linux 6.9: here (a large file's blocks are freed on the loop). */
		if (ftruncate(fd, 0) < 0)
			r->err = -errno;
		next(r);
		return;
	}
	r->after_rewrite = next;
	sqe = fs_req_sqe(r, 0, rewrite_truncated);
	io_uring_prep_rw(UEXEC_IORING_OP_FTRUNCATE, sqe, fd, NULL, 0, 0);
}
