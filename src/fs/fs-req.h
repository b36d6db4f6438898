/* SPDX-License-Identifier: MIT */
/*
 * The request object shared by the ring-based file methods (rpc-fs.c,
 * rpc-fs-handle.c): a chain of io_uring ops with a continuation, a pending
 * JSON-RPC reply that survives its connection, and fs/open handles.
 */
#pragma once

#include <linux/openat2.h>

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <sys/types.h>

#include "conn-mem.h"
#include "params.h"
#include "ring.h"
#include "rpc.h"
#include "secrets.h"

#define ERRSZ 512
#define READ_FILE_LIMIT (512ull << 20) /* the reference's fs/readFile cap */
#define BLOCK_LIMIT (1u << 20)         /* fs/readBlock len */
#define MAX_HANDLES 128                /* per connection, as the reference */
#define MAX_HANDLE_ID 32               /* bytes */
#define MKDIR_MAX_DEPTH 256            /* path components fs/createDirectory creates */
#define IO_CHUNK (1u << 30)            /* largest single READ/WRITE submitted */
#define FS_ESTIMATE (1u << 20)         /* charged for a reply of unknown size until it is known */

struct conn;
struct outchunk;
struct server;

struct fs_handle {
	int fd;
	bool writable;
	bool ready;    /* fs/open completed */
	unsigned refs; /* the connection's map + requests using it */
	size_t id_len;
	char id[MAX_HANDLE_ID + 1];
};

struct fs_req;

struct fs_op {
	struct uring_op op;
	struct fs_req *r;
	int res;
};

struct fs_req {
	struct rpc_pending pend;
	bool orphaned;     /* the connection went away: finish, reply to nobody */
	struct conn *conn; /* valid while !orphaned */
	struct server *srv;
	unsigned inflight; /* ops submitted and not completed */
	void (*next)(struct fs_req *r); /* runs when inflight drops to 0 */

	char *path;
	char *parent;      /* followSymlinks:false: the parent checked first */
	/*
	 * Where the request's own operation starts: AT_FDCWD and path, or after
	 * the followSymlinks:false check the parent as opened (O_PATH) and the
	 * last name, so that a symlink swapped into the path after the check is
	 * not followed (at_fd is closed with the request).
	 */
	int at_fd;
	const char *at_name;
	struct open_how how;
	void (*after_check)(struct fs_req *r);
	void (*after_rewrite)(struct fs_req *r); /* fs_req_rewrite_start's continuation */
	bool parent_missing_ok;
	bool follow;
	bool recursive;
	int fd;
	int err;           /* negative errno to reply with */
	struct statx stx[2];
	struct fs_op *ops;
	unsigned n_ops;
	char **prefixes;   /* fs/createDirectory: paths to mkdir, top down */
	unsigned n_prefixes;
	uint8_t *data;     /* file contents */
	size_t len, off, cap;
	uint64_t offset;
	struct fs_handle *h;
	json_t *result;    /* reply once the fd is closed */
	struct conn_mem mem; /* bytes held against the in-flight budgets (conn-mem.h) */
	struct outchunk *msg; /* fs/readFile: the reply frame, base64 written in as read */
	uint8_t *msg_payload;
	size_t msg_cap;    /* base64 bytes the frame has room for */
	size_t msg_b64;    /* base64 bytes written */
	size_t msg_head;   /* bytes of the payload before the base64 */
	bool msg_eof;      /* the file's end was read */
};

/* Drops a reference; the last one closes the fd. */
void fs_handle_unref(struct fs_handle *h);
/*
 * The end of an fs/open that holds a reference to h: with fd >= 0 (taken
 * over) the handle becomes ready, else it leaves c's map. c is NULL when the
 * connection went away (then fd is closed). Drops the caller's reference.
 */
void fs_handle_open_end(struct conn *c, struct fs_handle *h, int fd);

/* A request with n_ops op slots, registered as pending on c. Replies ENOMEM and returns NULL on OOM. */
struct fs_req *fs_req_new(struct conn *c, json_t *id, unsigned n_ops);
/* Replies r->err (if set) or result (stolen; {} if NULL) unless orphaned, then frees r. */
void fs_req_finish(struct fs_req *r, json_t *result);
void fs_req_finish_error(struct fs_req *r, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* An SQE for op slot i; when every submitted op has completed, next(r) runs. */
struct io_uring_sqe *fs_req_sqe(struct fs_req *r, unsigned i, void (*next)(struct fs_req *));
/* STATX of r->path into stx in slot i. */
/*
 * followSymlinks:false walks the path the way the reference does, opening
 * each directory with O_NOFOLLOW: a symlink among the directories is ENOTDIR
 * (a symlink as the last component is each method's own business). With
 * !r->follow, checks r->path's parent (openat2 RESOLVE_NO_SYMLINKS; a missing
 * parent passes when missing_ok) and replies with the error; then, or at once
 * when following, runs next(r). Uses op slot 0.
 */
void fs_req_nofollow_check(struct fs_req *r, bool missing_ok, void (*next)(struct fs_req *r));

void fs_req_statx(struct fs_req *r, unsigned i, int flags, struct statx *stx,
	       void (*next)(struct fs_req *));
/* Closes r->fd on the ring, then replies with r->result (or r->err). */
void fs_req_close_and_finish(struct fs_req *r);
/*
 * True (and logged) if the file r opened, whose statx st has STATX_INO, is
 * one of the server's secret files (secrets.h): the caller refuses with
 * EACCES. A file statx cannot identify counts as one (fail closed).
 */
bool fs_req_is_server_secret(struct fs_req *r, const struct statx *st, const char *method);
/*
 * Clears S_ISUID and S_ISGID of the file open as fd, whose mode is mode, if
 * it has either. Root writes with CAP_FSETID, which keeps them (the kernel
 * clears them on a write or truncation only for writers without it): a
 * set-id file would keep its bit with content uexec wrote, a setuid-root
 * program of any content. Before the file changes; the caller truncates it
 * next (which is what clears them where fchmod is not allowed and
 * CAP_FSETID is not held). Returns 0 or -errno.
 */
int fs_drop_setid(int fd, mode_t mode);
/*
 * The error a failed open for writing without O_TRUNC (err, -errno) would
 * have been with O_TRUNC, which is how the reference opens (std::fs::write,
 * File::create): the kernel asks for a writable mount first when it is to
 * truncate an existing regular file, and checks the file's permissions
 * first otherwise. So a read-only mount where the file's permissions also
 * refuse the write (a mode-000 deny mask, bound read-only) is EROFS for the
 * reference and EACCES without O_TRUNC. Returns -EROFS for an -EACCES or
 * -EPERM whose name (at dirfd; the last link followed if follow) is an
 * existing regular file on a read-only mount, else err. A statvfs on an
 * error path only.
 */
int fs_trunc_open_errno(int dirfd, const char *name, bool follow, int err);
/*
 * The file r opened for writing as fd (without O_TRUNC), whose statx st has
 * STATX_TYPE, STATX_MODE and STATX_INO, about to be rewritten from its
 * start: refused (r->err = -EACCES, logged) when it is one of the server's
 * secret files, whatever its type; a regular file then loses its set-id
 * bits (fs_drop_setid) and is truncated (on the ring where it has
 * IORING_OP_FTRUNCATE). Nothing changes before the identity is checked on
 * the very fd the request writes through. Runs next(r), with r->err set if
 * anything failed. Uses op slot 0.
 */
void fs_req_rewrite_start(struct fs_req *r, int fd, const struct statx *st, const char *method,
			  void (*next)(struct fs_req *r));
uint64_t fs_ms_of(const struct statx_timestamp *t);
/* Decodes the path, refuses sandboxes, and creates the request (NULL: already replied). */
struct fs_req *fs_path_req(struct conn *c, json_t *id, json_t *path, json_t *sandbox, json_t *follow,
			unsigned n_ops);
