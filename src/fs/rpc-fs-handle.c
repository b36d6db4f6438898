/* SPDX-License-Identifier: MIT */
/*
 * The streaming methods fs/open, fs/readBlock, fs/writeBlock, fs/close
 * (PROTOCOL.md §6.20): connection-scoped handles, positional I/O on the ring.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base64.h"
#include "conn.h"
#include "fs-req.h"
#include "fs-sandbox.h"
#include "jsonrpc.h"
#include "rpc-fs.h"
#include "server.h"

/* ---- fs/open, fs/readBlock, fs/writeBlock, fs/close ---- */

static struct fs_handle *handle_get(struct conn *c, json_t *hid)
{
	struct fs_handle *h = strmap_get(&c->fs_handles, json_string_value(hid),
					 json_string_length(hid));

	return h && h->ready ? h : NULL;
}

void fs_handle_open_end(struct conn *c, struct fs_handle *h, int fd)
{
	if (fd >= 0) {
		h->fd = fd; /* closed by the unref below when nobody is left to use it */
		h->ready = c != NULL;
	} else if (c) {
		/* Still h: fs/close ignores a handle that is not ready, fs/open refuses its id. */
		strmap_remove(&c->fs_handles, h->id, h->id_len);
		fs_handle_unref(h);
	}
	fs_handle_unref(h);
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

	if (r->err)
		goto fail;
	/* The sandboxed helper's open: the server takes the fd (fs-sandbox.h). */
	if (r->srv->cfg.fs_helper) {
		int e = fs_sandbox_pass_fd(h->fd);

		if (e < 0) {
			r->err = e;
			goto fail;
		}
	}
	h->ready = true;
	res = json_object();
	json_object_set_new(res, "handleId", json_stringn(h->id, h->id_len));
	fs_req_finish(r, res);
	return;
fail:
	h->fd = safe_close(h->fd);
	if (!r->orphaned) {
		strmap_remove(&r->conn->fs_handles, h->id, h->id_len);
		fs_handle_unref(h);
	}
	fs_req_finish(r, NULL);
}

static void open_stat_done(struct fs_req *r)
{
	struct fs_handle *h = r->h;

	if (r->ops[1].res < 0) {
		r->err = r->ops[1].res;
		open_done(r);
		return;
	}
	/* "replace": checked and truncated through the very fd the handle writes with. */
	if (h->writable) {
		fs_req_rewrite_start(r, h->fd, &r->stx[0], "fs/open", open_done);
		return;
	}
	if (S_ISREG(r->stx[0].stx_mode) && fs_req_is_server_secret(r, &r->stx[0], "fs/open")) {
		r->err = -EACCES;
		open_done(r);
		return;
	}
	if (!S_ISREG(r->stx[0].stx_mode)) {
		h->fd = safe_close(h->fd);
		if (!r->orphaned) {
			strmap_remove(&r->conn->fs_handles, h->id, h->id_len);
			fs_handle_unref(h);
		}
		fs_req_finish_error(r, RPC_INVALID_REQUEST, "path `%s` is not a file", r->path);
		return;
	}
	open_done(r);
}

static void open_opened(struct fs_req *r)
{
	struct io_uring_sqe *sqe;

	if (r->ops[0].res < 0) {
		r->err = r->h->writable ? fs_trunc_open_errno(AT_FDCWD, r->path, true, r->ops[0].res)
					: r->ops[0].res;
		open_done(r);
		return;
	}
	r->h->fd = r->ops[0].res;
	sqe = fs_req_sqe(r, 1, open_stat_done);
	io_uring_prep_statx(sqe, r->h->fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT,
			    STATX_TYPE | STATX_MODE | STATX_INO, &r->stx[0]);
}

/*
 * `mode` is serde's externally tagged unit enum: "read" | "replace", or the
 * map form {"replace": null}; null itself is not "absent" here (p07 stream).
 */
static bool open_mode(struct conn *c, json_t *id, json_t *v, const char **ret)
{
	static const char *const modes[] = { "read", "replace", NULL };
	char err[256];
	size_t errlen;
	int i;

	*ret = "read";
	if (!v)
		return true;
	i = params_unit_enum(v, modes, err, sizeof(err), &errlen);
	if (i < 0) {
		rpc_reply_error_text(c, id, RPC_INVALID_PARAMS, err, errlen);
		return false;
	}
	*ret = modes[i];
	return true;
}

void fs_rpc_open(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{ "handleId", P_STRING, true, NULL },
		{ "path", P_STRING, true, NULL },
		{ "mode", P_ANY, false, NULL }, /* an externally tagged enum: open_mode() */
		{ "sandbox", P_STRUCT, false, "struct WireFileSystemSandboxContext" },
	};
	json_t *f[ELEMENTSOF(fields)];
	struct io_uring_sqe *sqe;
	struct fs_handle *h;
	struct fs_req *r;
	const char *mode;

	if (!params_decode_or_reply(c, id, params, "WireFsOpenParams", fields,
				    ELEMENTSOF(fields), f))
		return;
	if (!open_mode(c, id, json_is_object(params) ? json_object_get(params, "mode") : f[2], &mode))
		return;
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
	/* In the map from now on, not ready: its id is taken until the open ends. */
	h = calloc(1, sizeof(*h));
	if (!h || strmap_put(&c->fs_handles, json_string_value(f[0]), json_string_length(f[0]), h) < 0) {
		free(h);
		rpc_reply_errno_internal(c, id, ENOMEM);
		return;
	}
	h->fd = -1;
	h->refs = 2; /* the map and the open */
	h->writable = strcmp(mode, "replace") == 0;
	h->id_len = json_string_length(f[0]);
	memcpy(h->id, json_string_value(f[0]), h->id_len);
	if (fs_sandbox_open(c, id, params, h))
		return;
	r = fs_path_req(c, id, f[1], f[3], NULL, 2);
	if (!r) {
		fs_handle_open_end(c, h, -1);
		return;
	}
	r->h = h;
	sqe = fs_req_sqe(r, 0, open_opened);
	/* "replace" truncates only after its checks (fs_req_rewrite_start): no O_TRUNC here. */
	io_uring_prep_openat(sqe, AT_FDCWD, r->path,
			     h->writable ? O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK
					 : O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
			     0666);
}

/*
 * A failed read drops the handle, as the reference does (it is then an
 * unknown handle, and its id can be opened again); a failed write does not.
 */
static void handle_drop(struct conn *c, struct fs_handle *h)
{
	if (strmap_get(&c->fs_handles, h->id, h->id_len) != h)
		return; /* closed (and maybe reopened) meanwhile */
	strmap_remove(&c->fs_handles, h->id, h->id_len);
	fs_handle_unref(h);
}

static void block_read_done(struct fs_req *r)
{
	int res = r->ops[0].res;
	json_t *out;
	char *b;

	if (res < 0) {
		if (!r->orphaned)
			handle_drop(r->conn, r->h);
		r->err = res;
		fs_req_finish(r, NULL);
		return;
	}
	b = malloc(base64_encoded_len((size_t)res) + 1);
	if (!b) {
		r->err = -ENOMEM;
		fs_req_finish(r, NULL);
		return;
	}
	b[base64_encode(r->data, (size_t)res, b)] = 0;
	out = json_object();
	json_object_set_new(out, "chunk", json_string_nocheck(b));
	/* A short read means the end of the file was reached. */
	json_object_set_new(out, "eof", json_boolean((size_t)res < r->len));
	free(b);
	fs_req_finish(r, out);
}

void fs_rpc_read_block(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{ "handleId", P_STRING, true, NULL },
		{ "offset", P_U64, true, NULL },
		{ "len", P_USIZE, true, NULL },
	};
	json_t *f[ELEMENTSOF(fields)];
	struct io_uring_sqe *sqe;
	struct fs_handle *h;
	struct fs_req *r;
	uint64_t len;

	if (!params_decode_or_reply(c, id, params, "FsReadBlockParams", fields,
				    ELEMENTSOF(fields), f))
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
	/* pread(2)'s refusals: a write-only descriptor, an offset beyond loff_t (io_uring
	 * would read an offset of -1 at the file position). */
	if (h->writable || params_u64(f[1], 0) > (uint64_t)INT64_MAX) {
		int e = h->writable ? -EBADF : -EINVAL;

		handle_drop(c, h);
		rpc_reply_errno(c, id, e);
		return;
	}
	r = fs_req_new(c, id, 1);
	if (!r)
		return;
	r->h = h;
	h->refs++;
	r->len = (size_t)len;
	/* The block and its base64 (pipelined reads pause the connection, conn-mem.h). */
	conn_mem_set(&r->mem, r->len + base64_encoded_len(r->len));
	r->data = malloc(r->len);
	if (!r->data) {
		r->err = -ENOMEM;
		fs_req_finish(r, NULL);
		return;
	}
	sqe = fs_req_sqe(r, 0, block_read_done);
	io_uring_prep_read(sqe, h->fd, r->data, (unsigned)r->len, params_u64(f[1], 0));
}

static void block_write_next(struct fs_req *r);

static void block_write_done(struct fs_req *r)
{
	int res = r->ops[0].res;

	if (res < 0) {
		r->err = res;
		fs_req_finish(r, NULL);
		return;
	}
	r->off += (size_t)res;
	if (res == 0 && r->off < r->len) {
		r->err = -EIO;
		fs_req_finish(r, NULL);
		return;
	}
	block_write_next(r);
}

static void block_write_next(struct fs_req *r)
{
	struct io_uring_sqe *sqe;

	if (r->off == r->len) {
		fs_req_finish(r, NULL);
		return;
	}
	sqe = fs_req_sqe(r, 0, block_write_done);
	io_uring_prep_write(sqe, r->h->fd, r->data + r->off, (unsigned)(r->len - r->off),
			    r->offset + r->off);
}

void fs_rpc_write_block(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{ "handleId", P_STRING, true, NULL },
		{ "offset", P_U64, true, NULL },
		{ "chunk", P_STRING, true, NULL },
	};
	json_t *f[ELEMENTSOF(fields)];
	struct fs_handle *h;
	struct fs_req *r;
	uint8_t *data;
	size_t n = 0;

	if (!params_decode_or_reply(c, id, params, "FsWriteBlockParams", fields,
				    ELEMENTSOF(fields), f))
		return;
	if (params_base64_or_reply(c, id, f[2], RPC_INVALID_PARAMS, "", &data, &n) < 0)
		return;
	/* The reference's checks of the block, before the handle is looked up. */
	if (n == 0 || n > BLOCK_LIMIT) {
		free(data);
		rpc_reply_error(c, id, RPC_INVALID_REQUEST,
				"file write block length must be between 1 and %u", BLOCK_LIMIT);
		return;
	}
	if (params_u64(f[1], 0) > (uint64_t)INT64_MAX - (uint64_t)n) {
		free(data);
		rpc_reply_error(c, id, RPC_INVALID_REQUEST,
				"file write range exceeds the signed 64-bit file offset limit");
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
	r = fs_req_new(c, id, 1);
	if (!r) {
		free(data);
		return;
	}
	r->h = h;
	h->refs++;
	r->data = data;
	r->len = n;
	conn_mem_set(&r->mem, r->len); /* held until written */
	r->offset = params_u64(f[1], 0);
	block_write_next(r);
}

void fs_rpc_close(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{ "handleId", P_STRING, true, NULL },
	};
	json_t *f[ELEMENTSOF(fields)];
	struct fs_handle *h;

	if (!params_decode_or_reply(c, id, params, "FsCloseParams", fields, ELEMENTSOF(fields), f))
		return;
	if (!handle_id_ok(c, id, f[0]))
		return;
	h = strmap_get(&c->fs_handles, json_string_value(f[0]), json_string_length(f[0]));
	if (h && h->ready) {
		strmap_remove(&c->fs_handles, json_string_value(f[0]), json_string_length(f[0]));
		/* The fd closes when the last request using it completes. */
		fs_handle_unref(h);
	}
	rpc_reply(c, id, json_object());
}

static void unref_cb(void *value, void *ctx)
{
	fs_handle_unref(value);
}

void fs_handles_release(struct conn *c)
{
	strmap_foreach(&c->fs_handles, unref_cb, NULL);
	strmap_done(&c->fs_handles);
}
