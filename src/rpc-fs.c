/* SPDX-License-Identifier: MIT */
/*
 * fs/readFile, fs/writeFile, fs/getMetadata, fs/createDirectory and the
 * streaming fs/open, fs/readBlock, fs/writeBlock, fs/close (PROTOCOL.md
 * §6.11-§6.15, §6.20). Every disk access is an io_uring op (STATX, OPENAT,
 * READ, WRITE, MKDIRAT, CLOSE), so a slow disk never stalls the loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base64.h"
#include "conn.h"
#include "fs.h"
#include "log.h"
#include "params.h"
#include "rpc-fs.h"
#include "rpc.h"

#define ERRSZ 512
#define READ_FILE_LIMIT (512ull << 20) /* the reference's fs/readFile cap */
#define BLOCK_LIMIT (1u << 20)         /* fs/readBlock len */
#define MAX_HANDLES 128                /* per connection, as the reference */
#define MAX_HANDLE_ID 32               /* bytes */
#define MKDIR_MAX_DEPTH 256            /* path components fs/createDirectory creates */
#define IO_CHUNK (1u << 30)            /* largest single READ/WRITE submitted */

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
};

static void handle_unref(struct fs_handle *h)
{
	if (h && --h->refs == 0) {
		safe_close(h->fd);
		free(h);
	}
}

static void req_free(struct fs_req *r)
{
	for (unsigned i = 0; i < r->n_prefixes; i++)
		free(r->prefixes[i]);
	free(r->prefixes);
	handle_unref(r->h);
	json_decref(r->result);
	safe_close(r->fd);
	free(r->ops);
	free(r->path);
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

static struct fs_req *req_new(struct conn *c, json_t *id, unsigned n_ops)
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
	rpc_pending_start(&r->pend, c, id, req_cancel);
	return r;
}

/* Replies r->err (if set) or result, and frees the request. */
static void req_finish(struct fs_req *r, json_t *result)
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
	req_free(r);
}

static void req_finish_error(struct fs_req *r, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void req_finish_error(struct fs_req *r, int code, const char *fmt, ...)
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
	req_free(r);
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
static struct io_uring_sqe *req_sqe(struct fs_req *r, unsigned i, void (*next)(struct fs_req *))
{
	r->inflight++;
	r->next = next;
	r->ops[i].res = 0;
	return uring_get_sqe(&r->srv->ring, &r->ops[i].op, on_op);
}

static void sqe_statx(struct fs_req *r, unsigned i, int flags, struct statx *stx,
		      void (*next)(struct fs_req *))
{
	struct io_uring_sqe *sqe = req_sqe(r, i, next);

	io_uring_prep_statx(sqe, AT_FDCWD, r->path, flags | AT_STATX_SYNC_AS_STAT,
			    STATX_TYPE | STATX_MODE | STATX_SIZE | STATX_MTIME | STATX_BTIME, stx);
}

/* Closes r->fd on the ring, then replies: the result waits in r->result. */
static void finish_after_close(struct fs_req *r);

static void close_and_finish(struct fs_req *r)
{
	struct io_uring_sqe *sqe;

	if (r->fd < 0) {
		finish_after_close(r);
		return;
	}
	sqe = req_sqe(r, 0, finish_after_close);
	io_uring_prep_close(sqe, r->fd);
	r->fd = -1;
}

static void finish_after_close(struct fs_req *r)
{
	json_t *res = r->result;

	r->result = NULL;
	req_finish(r, res);
}

static bool decode(struct conn *c, json_t *id, json_t *params, const char *name,
		   const struct pfield *f, size_t n, json_t **out)
{
	char err[ERRSZ];

	if (params_decode(params, name, f, n, out, err, sizeof(err)) < 0) {
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "%s", err);
		return false;
	}
	return true;
}

static uint64_t ms_of(const struct statx_timestamp *t)
{
	return (uint64_t)t->tv_sec * 1000 + t->tv_nsec / 1000000;
}

/* Common start of a path-based request: decode path, refuse sandboxes. */
static struct fs_req *path_req(struct conn *c, json_t *id, json_t *path, json_t *sandbox,
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
	r = req_new(c, id, n_ops);
	if (!r) {
		free(native);
		return NULL;
	}
	r->path = native;
	r->follow = params_bool(follow, true);
	return r;
}

/* ---- fs/getMetadata ---- */

static void metadata_done(struct fs_req *r)
{
	const struct statx *l = &r->stx[0], *t = &r->stx[1];
	bool is_link;
	json_t *res;

	if (r->ops[0].res < 0) {
		r->err = r->ops[0].res;
		req_finish(r, NULL);
		return;
	}
	is_link = S_ISLNK(l->stx_mode);
	if (is_link && !r->follow) {
		req_finish_error(r, RPC_INVALID_REQUEST, "path contains a symbolic link");
		return;
	}
	if (r->ops[1].res < 0) {
		r->err = r->ops[1].res; /* a dangling link: ENOENT */
		req_finish(r, NULL);
		return;
	}
	res = json_object();
	json_object_set_new(res, "isDirectory", json_boolean(S_ISDIR(t->stx_mode)));
	json_object_set_new(res, "isFile", json_boolean(S_ISREG(t->stx_mode)));
	json_object_set_new(res, "isSymlink", json_boolean(is_link));
	json_object_set_new(res, "size", json_integer((json_int_t)t->stx_size));
	/* The reference always says 0 here; a real birth time is tolerated and more useful. */
	json_object_set_new(res, "createdAtMs",
			    json_integer((t->stx_mask & STATX_BTIME) ? (json_int_t)ms_of(&t->stx_btime)
								     : 0));
	json_object_set_new(res, "modifiedAtMs", json_integer((json_int_t)ms_of(&t->stx_mtime)));
	req_finish(r, res);
}

static void rpc_fs_get_metadata(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{ "path", P_STRING, true, NULL },
		{ "sandbox", P_STRUCT, false, "struct WireFileSystemSandboxContext" },
		{ "followSymlinks", P_BOOL, false, NULL },
	};
	json_t *f[ELEMENTSOF(fields)];
	struct fs_req *r;

	if (!decode(c, id, params, "GetMetadataParams", fields, ELEMENTSOF(fields), f))
		return;
	r = path_req(c, id, f[0], f[1], f[2], 2);
	if (!r)
		return;
	/* lstat and stat in one round trip: isSymlink is about the path itself. */
	sqe_statx(r, 0, AT_SYMLINK_NOFOLLOW, &r->stx[0], metadata_done);
	sqe_statx(r, 1, 0, &r->stx[1], metadata_done);
}
RPC_METHOD("fs/getMetadata", "filesystem", rpc_fs_get_metadata)

/* ---- fs/readFile ---- */

static void read_file_next(struct fs_req *r);

static void read_file_reply(struct fs_req *r)
{
	static const char pre[] = "{\"id\":";
	static const char mid[] = ",\"result\":{\"dataBase64\":\"";
	size_t idlen, total;
	struct outchunk *o;
	char *ids;
	uint8_t *w;

	if (r->orphaned) {
		close_and_finish(r);
		return;
	}
	/*
	 * Formatted straight into the output frame: the file bytes and one
	 * base64 copy are the only large buffers, never a JSON tree of them.
	 */
	ids = json_dumps(r->pend.id, JSON_ENCODE_ANY | JSON_COMPACT);
	idlen = ids ? strlen(ids) : 0;
	total = sizeof(pre) - 1 + idlen + sizeof(mid) - 1 + base64_encoded_len(r->len) + 3;
	o = ids ? conn_alloc_msg(r->conn, total, &w) : NULL;
	if (!o) {
		free(ids);
		r->err = -ENOMEM;
		close_and_finish(r);
		return;
	}
	memcpy(w, pre, sizeof(pre) - 1);
	w += sizeof(pre) - 1;
	memcpy(w, ids, idlen);
	w += idlen;
	memcpy(w, mid, sizeof(mid) - 1);
	w += sizeof(mid) - 1;
	w += base64_encode(r->data, r->len, (char *)w);
	memcpy(w, "\"}}", 3);
	free(ids);
	free(r->data);
	r->data = NULL;
	conn_commit(r->conn, o);
	rpc_pending_end(&r->pend);
	r->orphaned = true; /* replied: finishing must not reply again */
	close_and_finish(r);
}

static void read_file_chunk_done(struct fs_req *r)
{
	int res = r->ops[0].res;

	if (res < 0) {
		r->err = res;
		close_and_finish(r);
		return;
	}
	if (res == 0) {
		read_file_reply(r);
		return;
	}
	r->len += (size_t)res;
	read_file_next(r);
}

static void read_file_next(struct fs_req *r)
{
	struct io_uring_sqe *sqe;

	if (r->len == r->cap) {
		/* /proc files report size 0 and files grow: extend, up to the limit. */
		size_t cap = r->cap ? r->cap * 2 : 65536;
		uint8_t *p;

		if (r->cap >= READ_FILE_LIMIT) {
			safe_close(r->fd);
			r->fd = -1;
			req_finish_error(r, RPC_INVALID_REQUEST,
					 "file is too large to read: limit is %llu bytes",
					 (unsigned long long)READ_FILE_LIMIT);
			return;
		}
		cap = MIN(cap, (size_t)READ_FILE_LIMIT + 1);
		p = realloc(r->data, cap);
		if (!p) {
			r->err = -ENOMEM;
			close_and_finish(r);
			return;
		}
		r->data = p;
		r->cap = cap;
	}
	sqe = req_sqe(r, 0, read_file_chunk_done);
	io_uring_prep_read(sqe, r->fd, r->data + r->len, (unsigned)MIN(r->cap - r->len, IO_CHUNK),
			   r->len);
}

static void read_file_stat_done(struct fs_req *r)
{
	const struct statx *st = &r->stx[0];

	if (r->ops[0].res < 0) {
		r->err = r->ops[0].res;
		close_and_finish(r);
		return;
	}
	/* Checked on the opened file: nothing can be swapped in after the check. */
	if (!S_ISREG(st->stx_mode)) {
		r->fd = safe_close(r->fd);
		req_finish_error(r, RPC_INVALID_REQUEST, "path `%s` is not a file", r->path);
		return;
	}
	if (st->stx_size > READ_FILE_LIMIT) {
		r->fd = safe_close(r->fd);
		req_finish_error(r, RPC_INVALID_REQUEST, "file is too large to read: limit is %llu bytes",
				 (unsigned long long)READ_FILE_LIMIT);
		return;
	}
	/* One byte more than the size, so EOF is seen without a second read. */
	r->cap = (size_t)st->stx_size + 1;
	r->data = malloc(r->cap);
	if (!r->data) {
		r->err = -ENOMEM;
		close_and_finish(r);
		return;
	}
	read_file_next(r);
}

static void read_file_opened(struct fs_req *r)
{
	struct io_uring_sqe *sqe;

	if (r->ops[0].res < 0) {
		r->err = r->ops[0].res;
		req_finish(r, NULL);
		return;
	}
	r->fd = r->ops[0].res;
	sqe = req_sqe(r, 0, read_file_stat_done);
	io_uring_prep_statx(sqe, r->fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT,
			    STATX_TYPE | STATX_SIZE, &r->stx[0]);
}

static void rpc_fs_read_file(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{ "path", P_STRING, true, NULL },
		{ "sandbox", P_STRUCT, false, "struct WireFileSystemSandboxContext" },
		{ "followSymlinks", P_BOOL, false, NULL },
	};
	json_t *f[ELEMENTSOF(fields)];
	struct io_uring_sqe *sqe;
	struct fs_req *r;

	if (!decode(c, id, params, "ReadFileParams", fields, ELEMENTSOF(fields), f))
		return;
	r = path_req(c, id, f[0], f[1], f[2], 1);
	if (!r)
		return;
	/*
	 * O_NONBLOCK: a FIFO opens without waiting for a writer and is then
	 * refused as "not a file"; O_NOFOLLOW gives the reference's ELOOP.
	 */
	sqe = req_sqe(r, 0, read_file_opened);
	io_uring_prep_openat(sqe, AT_FDCWD, r->path,
			     O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (r->follow ? 0 : O_NOFOLLOW),
			     0);
}
RPC_METHOD("fs/readFile", "filesystem", rpc_fs_read_file)

/* ---- fs/writeFile ---- */

static void write_file_next(struct fs_req *r);

static void write_file_chunk_done(struct fs_req *r)
{
	int res = r->ops[0].res;

	if (res < 0) {
		r->err = res;
		close_and_finish(r);
		return;
	}
	r->off += (size_t)res;
	if (res == 0 && r->off < r->len) {
		r->err = -EIO;
		close_and_finish(r);
		return;
	}
	write_file_next(r);
}

static void write_file_next(struct fs_req *r)
{
	struct io_uring_sqe *sqe;

	if (r->off == r->len) {
		close_and_finish(r);
		return;
	}
	sqe = req_sqe(r, 0, write_file_chunk_done);
	io_uring_prep_write(sqe, r->fd, r->data + r->off, (unsigned)MIN(r->len - r->off, IO_CHUNK),
			    r->off);
}

static void write_file_opened(struct fs_req *r)
{
	if (r->ops[0].res < 0) {
		r->err = r->ops[0].res;
		req_finish(r, NULL);
		return;
	}
	r->fd = r->ops[0].res;
	write_file_next(r);
}

static void rpc_fs_write_file(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{ "path", P_STRING, true, NULL },
		{ "dataBase64", P_STRING, true, NULL },
		{ "sandbox", P_STRUCT, false, "struct WireFileSystemSandboxContext" },
		{ "followSymlinks", P_BOOL, false, NULL },
	};
	json_t *f[ELEMENTSOF(fields)];
	struct io_uring_sqe *sqe;
	struct fs_req *r;
	char err[ERRSZ];
	uint8_t *data;
	ssize_t n;

	if (!decode(c, id, params, "WriteFileParams", fields, ELEMENTSOF(fields), f))
		return;
	data = malloc(base64_decoded_max(json_string_length(f[1])) + 1);
	if (!data) {
		rpc_reply_errno_internal(c, id, ENOMEM);
		return;
	}
	n = base64_decode(json_string_value(f[1]), json_string_length(f[1]), data, err, sizeof(err));
	if (n < 0) {
		free(data);
		rpc_reply_error(c, id, RPC_INVALID_REQUEST,
				"fs/writeFile requires valid base64 dataBase64: %s", err);
		return;
	}
	r = path_req(c, id, f[0], f[2], f[3], 1);
	if (!r) {
		free(data);
		return;
	}
	r->data = data;
	r->len = (size_t)n;
	/*
	 * Truncate and rewrite in place (same inode: hard links keep sharing,
	 * the mode stays), as the reference does. A dangling symlink is followed
	 * and its target created. O_NONBLOCK: a FIFO without reader fails at once.
	 */
	sqe = req_sqe(r, 0, write_file_opened);
	io_uring_prep_openat(sqe, AT_FDCWD, r->path,
			     O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY | O_NONBLOCK |
				     (r->follow ? 0 : O_NOFOLLOW),
			     0666);
}
RPC_METHOD("fs/writeFile", "filesystem", rpc_fs_write_file)

/* ---- fs/createDirectory ---- */

static void mkdir_done(struct fs_req *r)
{
	unsigned last = r->n_prefixes - 1;

	/* Ancestors: EEXIST is fine; the first other error explains the failure. */
	for (unsigned i = 0; i < last; i++) {
		if (r->ops[i].res < 0 && r->ops[i].res != -EEXIST) {
			r->err = r->ops[i].res;
			req_finish(r, NULL);
			return;
		}
	}
	if (r->ops[last].res == -EEXIST && r->recursive) {
		/* create_dir_all: an existing directory (or a link to one) is success. */
		if (r->ops[last + 1].res == 0 && S_ISDIR(r->stx[0].stx_mode)) {
			req_finish(r, NULL);
			return;
		}
	}
	r->err = r->ops[last].res < 0 ? r->ops[last].res : 0;
	req_finish(r, NULL);
}

static int split_prefixes(struct fs_req *r, bool recursive)
{
	unsigned n = 0;
	char *p = r->path;

	r->prefixes = calloc(MKDIR_MAX_DEPTH, sizeof(char *));
	if (!r->prefixes)
		return -ENOMEM;
	if (recursive) {
		for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
			if (n + 1 >= MKDIR_MAX_DEPTH)
				return -ENAMETOOLONG;
			r->prefixes[n] = strndup(p, (size_t)(s - p));
			if (!r->prefixes[n])
				return -ENOMEM;
			r->n_prefixes = ++n;
		}
	}
	r->prefixes[n] = strdup(p);
	if (!r->prefixes[n])
		return -ENOMEM;
	r->n_prefixes = n + 1;
	return 0;
}

static void rpc_fs_create_directory(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{ "path", P_STRING, true, NULL },
		{ "recursive", P_BOOL, false, NULL },
		{ "sandbox", P_STRUCT, false, "struct WireFileSystemSandboxContext" },
		{ "followSymlinks", P_BOOL, false, NULL },
	};
	json_t *f[ELEMENTSOF(fields)];
	struct io_uring_sqe *sqe;
	struct fs_req *r;
	int err;

	if (!decode(c, id, params, "CreateDirectoryParams", fields, ELEMENTSOF(fields), f))
		return;
	r = path_req(c, id, f[0], f[2], f[3], MKDIR_MAX_DEPTH + 1);
	if (!r)
		return;
	r->recursive = params_bool(f[1], true);
	if (strcmp(r->path, "/") == 0) {
		r->err = r->recursive ? 0 : -EEXIST;
		req_finish(r, NULL);
		return;
	}
	err = split_prefixes(r, r->recursive);
	if (err < 0) {
		r->err = err;
		req_finish(r, NULL);
		return;
	}
	/*
	 * Every ancestor top-down, then the path, then a stat of it, as one
	 * hard-linked chain: one round trip, and a failing mkdir (EEXIST) does
	 * not cut the chain.
	 */
	for (unsigned i = 0; i < r->n_prefixes; i++) {
		sqe = req_sqe(r, i, mkdir_done);
		io_uring_prep_mkdirat(sqe, AT_FDCWD, r->prefixes[i], 0777);
		sqe->flags |= IOSQE_IO_HARDLINK;
	}
	sqe = req_sqe(r, r->n_prefixes, mkdir_done);
	io_uring_prep_statx(sqe, AT_FDCWD, r->path, AT_STATX_SYNC_AS_STAT, STATX_TYPE, &r->stx[0]);
}
RPC_METHOD("fs/createDirectory", "filesystem", rpc_fs_create_directory)

/* ---- fs/open, fs/readBlock, fs/writeBlock, fs/close ---- */

static struct fs_handle *handle_get(struct conn *c, json_t *hid)
{
	struct fs_handle *h = strmap_get(&c->fs_handles, json_string_value(hid),
					 json_string_length(hid));

	return h && h->ready ? h : NULL;
}

static bool handle_id_ok(struct conn *c, json_t *id, json_t *hid)
{
	if (json_string_length(hid) > MAX_HANDLE_ID) {
		rpc_reply_error(c, id, RPC_INVALID_REQUEST, "file handle ID must not exceed %d bytes",
				MAX_HANDLE_ID);
		return false;
	}
	return true;
}

static void open_done(struct fs_req *r)
{
	struct fs_handle *h = r->h;
	json_t *res;

	if (r->ops[0].res < 0 || (r->ops[1].res < 0 && !h->writable)) {
		r->err = r->ops[0].res < 0 ? r->ops[0].res : r->ops[1].res;
		goto fail;
	}
	h->fd = r->ops[0].res;
	if (!h->writable && !S_ISREG(r->stx[0].stx_mode)) {
		h->fd = safe_close(h->fd);
		if (!r->orphaned) {
			strmap_remove(&r->conn->fs_handles, h->id, h->id_len);
			handle_unref(h);
		}
		req_finish_error(r, RPC_INVALID_REQUEST, "path `%s` is not a file", r->path);
		return;
	}
	h->ready = true;
	res = json_object();
	json_object_set_new(res, "handleId", json_stringn(h->id, h->id_len));
	req_finish(r, res);
	return;
fail:
	if (!r->orphaned) {
		strmap_remove(&r->conn->fs_handles, h->id, h->id_len);
		handle_unref(h);
	}
	req_finish(r, NULL);
}

static void open_opened(struct fs_req *r)
{
	struct io_uring_sqe *sqe;

	if (r->ops[0].res < 0 || r->h->writable) {
		r->ops[1].res = 0;
		open_done(r);
		return;
	}
	r->h->fd = r->ops[0].res;
	sqe = req_sqe(r, 1, open_done);
	io_uring_prep_statx(sqe, r->h->fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT, STATX_TYPE,
			    &r->stx[0]);
}

static void rpc_fs_open(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{ "handleId", P_STRING, true, NULL },
		{ "path", P_STRING, true, NULL },
		{ "mode", P_ENUM_STR, false, "string or map" },
		{ "sandbox", P_STRUCT, false, "struct WireFileSystemSandboxContext" },
	};
	json_t *f[ELEMENTSOF(fields)];
	struct io_uring_sqe *sqe;
	struct fs_handle *h;
	struct fs_req *r;
	const char *mode;

	if (!decode(c, id, params, "OpenParams", fields, ELEMENTSOF(fields), f))
		return;
	mode = f[2] ? json_string_value(f[2]) : "read";
	if (strcmp(mode, "read") != 0 && strcmp(mode, "replace") != 0) {
		rpc_reply_error_quoted(c, id, RPC_INVALID_PARAMS, "unknown variant `", f[2],
				       "`, expected `read` or `replace`");
		return;
	}
	if (!handle_id_ok(c, id, f[0]))
		return;
	if (strmap_get(&c->fs_handles, json_string_value(f[0]), json_string_length(f[0]))) {
		rpc_reply_error_quoted(c, id, RPC_INVALID_REQUEST, "file handle `", f[0],
				       "` already exists");
		return;
	}
	if (c->fs_handles.size >= MAX_HANDLES) {
		rpc_reply_error(c, id, RPC_INVALID_REQUEST,
				"at most %d file handles may be open per connection", MAX_HANDLES);
		return;
	}
	r = path_req(c, id, f[1], f[3], NULL, 2);
	if (!r)
		return;
	h = calloc(1, sizeof(*h));
	if (!h || strmap_put(&c->fs_handles, json_string_value(f[0]), json_string_length(f[0]), h) < 0) {
		free(h);
		r->err = -ENOMEM;
		req_finish(r, NULL);
		return;
	}
	h->fd = -1;
	h->refs = 2; /* the map and this request */
	h->writable = strcmp(mode, "replace") == 0;
	h->id_len = json_string_length(f[0]);
	memcpy(h->id, json_string_value(f[0]), h->id_len);
	r->h = h;
	sqe = req_sqe(r, 0, open_opened);
	io_uring_prep_openat(sqe, AT_FDCWD, r->path,
			     h->writable ? O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY | O_NONBLOCK
					 : O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
			     0666);
}
RPC_METHOD("fs/open", "filesystem", rpc_fs_open)

static void block_read_done(struct fs_req *r)
{
	int res = r->ops[0].res;
	json_t *out;
	char *b;

	if (res < 0) {
		r->err = res;
		req_finish(r, NULL);
		return;
	}
	b = malloc(base64_encoded_len((size_t)res) + 1);
	if (!b) {
		r->err = -ENOMEM;
		req_finish(r, NULL);
		return;
	}
	b[base64_encode(r->data, (size_t)res, b)] = 0;
	out = json_object();
	json_object_set_new(out, "chunk", json_string_nocheck(b));
	/* A short read means the end of the file was reached. */
	json_object_set_new(out, "eof", json_boolean((size_t)res < r->len));
	free(b);
	req_finish(r, out);
}

static void rpc_fs_read_block(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{ "handleId", P_STRING, true, NULL },
		{ "offset", P_U64, true, NULL },
		{ "len", P_USIZE, false, NULL },
	};
	json_t *f[ELEMENTSOF(fields)];
	struct io_uring_sqe *sqe;
	struct fs_handle *h;
	struct fs_req *r;
	uint64_t len;

	if (!decode(c, id, params, "ReadBlockParams", fields, ELEMENTSOF(fields), f))
		return;
	len = params_u64(f[2], 0);
	if (len < 1 || len > BLOCK_LIMIT) {
		rpc_reply_error(c, id, RPC_INVALID_REQUEST,
				"file read block length must be between 1 and %u", BLOCK_LIMIT);
		return;
	}
	h = handle_get(c, f[0]);
	if (!h) {
		rpc_reply_error_quoted(c, id, RPC_NOT_FOUND, "unknown file handle `", f[0], "`");
		return;
	}
	if (h->writable) {
		rpc_reply_errno(c, id, -EBADF);
		return;
	}
	r = req_new(c, id, 1);
	if (!r)
		return;
	r->h = h;
	h->refs++;
	r->len = (size_t)len;
	r->data = malloc(r->len);
	if (!r->data) {
		r->err = -ENOMEM;
		req_finish(r, NULL);
		return;
	}
	sqe = req_sqe(r, 0, block_read_done);
	io_uring_prep_read(sqe, h->fd, r->data, (unsigned)r->len, params_u64(f[1], 0));
}
RPC_METHOD("fs/readBlock", "filesystem", rpc_fs_read_block)

static void block_write_next(struct fs_req *r);

static void block_write_done(struct fs_req *r)
{
	int res = r->ops[0].res;

	if (res < 0) {
		r->err = res;
		req_finish(r, NULL);
		return;
	}
	r->off += (size_t)res;
	if (res == 0 && r->off < r->len) {
		r->err = -EIO;
		req_finish(r, NULL);
		return;
	}
	block_write_next(r);
}

static void block_write_next(struct fs_req *r)
{
	struct io_uring_sqe *sqe;

	if (r->off == r->len) {
		req_finish(r, NULL);
		return;
	}
	sqe = req_sqe(r, 0, block_write_done);
	io_uring_prep_write(sqe, r->h->fd, r->data + r->off, (unsigned)(r->len - r->off),
			    r->offset + r->off);
}

static void rpc_fs_write_block(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{ "handleId", P_STRING, true, NULL },
		{ "offset", P_U64, true, NULL },
		{ "chunk", P_STRING, false, NULL },
	};
	json_t *f[ELEMENTSOF(fields)];
	struct fs_handle *h;
	struct fs_req *r;
	char err[ERRSZ];
	uint8_t *data;
	ssize_t n = 0;

	if (!decode(c, id, params, "WriteBlockParams", fields, ELEMENTSOF(fields), f))
		return;
	data = malloc(base64_decoded_max(f[2] ? json_string_length(f[2]) : 0) + 1);
	if (!data) {
		rpc_reply_errno_internal(c, id, ENOMEM);
		return;
	}
	if (f[2])
		n = base64_decode(json_string_value(f[2]), json_string_length(f[2]), data, err,
				  sizeof(err));
	if (n < 0) {
		free(data);
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "%s", err);
		return;
	}
	h = handle_get(c, f[0]);
	if (!h) {
		free(data);
		rpc_reply_error_quoted(c, id, RPC_NOT_FOUND, "unknown file handle `", f[0], "`");
		return;
	}
	if (!h->writable) {
		free(data);
		rpc_reply_errno(c, id, -EBADF);
		return;
	}
	r = req_new(c, id, 1);
	if (!r) {
		free(data);
		return;
	}
	r->h = h;
	h->refs++;
	r->data = data;
	r->len = (size_t)n;
	r->offset = params_u64(f[1], 0);
	block_write_next(r);
}
RPC_METHOD("fs/writeBlock", "filesystem", rpc_fs_write_block)

static void rpc_fs_close(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{ "handleId", P_STRING, true, NULL },
	};
	json_t *f[ELEMENTSOF(fields)];
	struct fs_handle *h;

	if (!decode(c, id, params, "CloseParams", fields, ELEMENTSOF(fields), f))
		return;
	if (!handle_id_ok(c, id, f[0]))
		return;
	h = strmap_get(&c->fs_handles, json_string_value(f[0]), json_string_length(f[0]));
	if (h && h->ready) {
		strmap_remove(&c->fs_handles, json_string_value(f[0]), json_string_length(f[0]));
		/* The fd closes when the last request using it completes. */
		handle_unref(h);
	}
	rpc_reply(c, id, json_object());
}
RPC_METHOD("fs/close", "filesystem", rpc_fs_close)

static void unref_cb(void *value, void *ctx)
{
	handle_unref(value);
}

void fs_handles_release(struct conn *c)
{
	strmap_foreach(&c->fs_handles, unref_cb, NULL);
	strmap_done(&c->fs_handles);
}
