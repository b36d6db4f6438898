/* SPDX-License-Identifier: MIT */
/*
 * fs/readFile, fs/writeFile, fs/getMetadata, fs/createDirectory
 * (PROTOCOL.md §6.11-§6.15). Every disk access is an io_uring op (STATX,
 * OPENAT, READ, WRITE, MKDIRAT, CLOSE), so a slow disk never stalls the loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base64.h"
#include "conn.h"
#include "fs-req.h"
#include "fs.h"
#include "log.h"
#include "params.h"
#include "rpc-fs.h"
#include "rpc.h"

/* ---- fs/getMetadata ---- */

static void metadata_done(struct fs_req *r)
{
	const struct statx *l = &r->stx[0], *t = &r->stx[1];
	bool is_link;
	json_t *res;

	if (r->ops[0].res < 0) {
		r->err = r->ops[0].res;
		fs_req_finish(r, NULL);
		return;
	}
	is_link = S_ISLNK(l->stx_mode);
	if (is_link && !r->follow) {
		fs_req_finish_error(r, RPC_INVALID_REQUEST, "path contains a symbolic link");
		return;
	}
	if (r->ops[1].res < 0) {
		r->err = r->ops[1].res; /* a dangling link: ENOENT */
		fs_req_finish(r, NULL);
		return;
	}
	res = json_object();
	json_object_set_new(res, "isDirectory", json_boolean(S_ISDIR(t->stx_mode)));
	json_object_set_new(res, "isFile", json_boolean(S_ISREG(t->stx_mode)));
	json_object_set_new(res, "isSymlink", json_boolean(is_link));
	json_object_set_new(res, "size", json_integer((json_int_t)t->stx_size));
	/* The reference always says 0 here; a real birth time is tolerated and more useful. */
	json_object_set_new(res, "createdAtMs",
			    json_integer((t->stx_mask & STATX_BTIME) ? (json_int_t)fs_ms_of(&t->stx_btime)
								     : 0));
	json_object_set_new(res, "modifiedAtMs", json_integer((json_int_t)fs_ms_of(&t->stx_mtime)));
	fs_req_finish(r, res);
}

static void metadata_stat(struct fs_req *r)
{
	/* lstat and stat in one round trip: isSymlink is about the path itself. */
	fs_req_statx(r, 0, AT_SYMLINK_NOFOLLOW, &r->stx[0], metadata_done);
	fs_req_statx(r, 1, 0, &r->stx[1], metadata_done);
}

/*
 * The request of a method whose params are {path, sandbox?,
 * followSymlinks?} (struct_name: serde's name for them), with n_ops ring
 * operations. Returns it, or NULL with the reply sent.
 */
static struct fs_req *path_params_req(struct conn *c, json_t *id, json_t *params,
				      const char *struct_name, unsigned n_ops)
{
	static const struct pfield fields[] = {
		{ "path", P_STRING, true, NULL },
		{ "sandbox", P_STRUCT, false, "struct WireFileSystemSandboxContext" },
		{ "followSymlinks", P_BOOL, false, NULL },
	};
	json_t *f[ELEMENTSOF(fields)];

	if (!params_decode_or_reply(c, id, params, struct_name, fields, ELEMENTSOF(fields), f))
		return NULL;
	return fs_path_req(c, id, f[0], f[1], f[2], n_ops);
}

void fs_rpc_get_metadata(struct conn *c, json_t *id, json_t *params)
{
	struct fs_req *r = path_params_req(c, id, params, "WireFsGetMetadataParams", 2);

	if (!r)
		return;
	fs_req_nofollow_check(r, false, metadata_stat);
}

/*
 * An open's completion (err: its result, or the errno to report): a
 * failure finishes r; else the descriptor is kept and a statx of it
 * (mask) queued, which calls next.
 */
static void opened_statx(struct fs_req *r, int err, void (*next)(struct fs_req *), unsigned mask)
{
	struct io_uring_sqe *sqe;

	if (err < 0) {
		r->err = err;
		fs_req_finish(r, NULL);
		return;
	}
	r->fd = r->ops[0].res;
	sqe = fs_req_sqe(r, 0, next);
	io_uring_prep_statx(sqe, r->fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT, mask, &r->stx[0]);
}

/* ---- fs/readFile ---- */

/*
 * The file is read in slices of READ_CHUNK bytes into r->data, and each slice
 * is base64-encoded straight into the reply frame, which is sized from the
 * file's size (and resized if the file turns out longer or shorter): a reply
 * holds its frame and one slice, never the whole file besides, and no slice
 * stalls the loop for long. READ_CHUNK is a multiple of 3, so the encodings of
 * the slices concatenate to the whole file's. Frame and slice are charged to
 * the in-flight budgets (conn-mem.h) before they are allocated.
 */
#define READ_CHUNK (3u << 20)

static const char read_pre[] = "{\"id\":";
static const char read_mid[] = ",\"result\":{\"dataBase64\":\"";
static const char read_post[] = "\"}}";

/* Slice buffer for a file of n bytes: n + 1 (EOF without a second read), 64 KiB to 3 MiB. */
static size_t read_file_slice(uint64_t n)
{
	return n + 1 >= READ_CHUNK ? READ_CHUNK : MAX((size_t)n + 1, (size_t)65536);
}

/* Bytes a reply with room for b64 base64 bytes holds at most: frame (with header) and slice. */
static size_t read_file_cost(const struct fs_req *r, size_t b64)
{
	return WS_MAX_HDR + 1 + r->msg_head + b64 + sizeof(read_post) - 1 + r->cap;
}

/* The largest file readable: the reference's 512 MiB, or less if the budgets are smaller. */
static uint64_t read_file_max(const struct fs_req *r)
{
	size_t limit = conn_mem_limit(r->srv), fixed = r->msg_head + 16 + READ_CHUNK;
	uint64_t fit = limit > fixed ? (uint64_t)(limit - fixed) / 4 * 3 : 0;

	return MIN(fit, READ_FILE_LIMIT);
}

/*
 * A large frame is filled page by page as it is encoded: with 4 KiB pages a
 * 700 MB reply takes 170,000 page faults, which cost more than the encoding
 * on a virtual machine (0.5 s instead of 4 s for 200 MiB here). Transparent
 * huge pages where the system allows them (THP "madvise" or "always").
 */
static void read_file_hugepages(uint8_t *p, size_t n)
{
	const uintptr_t huge = 2u << 20;
	uintptr_t lo = ((uintptr_t)p + huge - 1) & ~(huge - 1), hi = ((uintptr_t)p + n) & ~(huge - 1);

	if (n >= 4 * huge && hi > lo)
		(void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
}

static void read_file_too_large(struct fs_req *r)
{
	r->fd = safe_close(r->fd);
	fs_req_finish_error(r, RPC_INVALID_REQUEST, "file is too large to read: limit is %llu bytes",
			    (unsigned long long)read_file_max(r));
}

static void read_file_next(struct fs_req *r);
static void read_file_encode(struct fs_req *r);

static void read_file_reply(struct fs_req *r)
{
	size_t payload = r->msg_head + r->msg_b64 + sizeof(read_post) - 1;
	struct outchunk *o = r->msg;
	uint8_t *w = r->msg_payload;

	if (r->msg_b64 != r->msg_cap) {
		/* The file was shorter than its size said (or grew): fit the frame. */
		o = conn_realloc_msg(r->conn, r->msg, payload, &w);
		if (!o) {
			r->err = -ENOMEM;
			fs_req_close_and_finish(r);
			return;
		}
	}
	memcpy(w + r->msg_head + r->msg_b64, read_post, sizeof(read_post) - 1);
	r->msg = NULL;
	free(r->data);
	r->data = NULL;
	conn_commit(r->conn, o);
	/* The frame is queued output now, counted as such. */
	conn_mem_set(&r->mem, 0);
	rpc_pending_end(&r->pend);
	r->orphaned = true; /* replied: finishing must not reply again */
	fs_req_close_and_finish(r);
}

/* Admitted (or orphaned): allocate the slice and the frame, or grow the frame; go on. */
static void read_file_admitted(struct conn_mem *m)
{
	struct fs_req *r = container_of(m, struct fs_req, mem);
	size_t payload = r->msg_head + r->msg_cap + sizeof(read_post) - 1;
	char *ids;

	if (r->orphaned) {
		fs_req_close_and_finish(r);
		return;
	}
	if (r->msg) {
		struct outchunk *o = conn_realloc_msg(r->conn, r->msg, payload, &r->msg_payload);

		if (!o) {
			r->err = -ENOMEM;
			fs_req_close_and_finish(r);
			return;
		}
		r->msg = o;
		read_file_encode(r);
		return;
	}
	ids = json_dumps(r->pend.id, JSON_ENCODE_ANY | JSON_COMPACT);
	r->data = malloc(r->cap);
	r->msg = ids && r->data ? conn_alloc_msg(r->conn, payload, &r->msg_payload) : NULL;
	if (!r->msg) {
		free(ids);
		r->err = -ENOMEM;
		fs_req_close_and_finish(r);
		return;
	}
	read_file_hugepages(r->msg_payload, payload);
	memcpy(r->msg_payload, read_pre, sizeof(read_pre) - 1);
	memcpy(r->msg_payload + sizeof(read_pre) - 1, ids, strlen(ids));
	memcpy(r->msg_payload + r->msg_head - (sizeof(read_mid) - 1), read_mid, sizeof(read_mid) - 1);
	free(ids);
	read_file_next(r);
}

/*
 * Encodes the whole 3-byte groups in the slice (all of it at EOF) into the
 * frame, growing the frame first if the file is longer than its size said.
 */
static void read_file_encode(struct fs_req *r)
{
	size_t n = r->msg_eof ? r->len : r->len / 3 * 3, need = r->msg_b64 + base64_encoded_len(n);

	if (need > r->msg_cap) {
		/* /proc files say 0 bytes, other files grow: double, within the limit. */
		size_t cap = MAX(need + base64_encoded_len(r->cap), r->msg_cap * 2);
		int k;

		cap = MIN(cap, base64_encoded_len(read_file_max(r)));
		if (cap < need) {
			read_file_too_large(r);
			return;
		}
		r->msg_cap = cap;
		k = conn_mem_acquire(&r->mem, read_file_cost(r, cap), read_file_admitted);
		if (k < 0) {
			read_file_too_large(r);
			return;
		}
		if (k > 0)
			read_file_admitted(&r->mem);
		return; /* read_file_admitted() grows the frame and comes back */
	}
	r->msg_b64 += base64_encode(r->data, n, (char *)r->msg_payload + r->msg_head + r->msg_b64);
	memmove(r->data, r->data + n, r->len - n);
	r->len -= n;
	if (r->msg_eof)
		read_file_reply(r);
	else
		read_file_next(r);
}

static void read_file_chunk_done(struct fs_req *r)
{
	int res = r->ops[0].res;

	if (res < 0) {
		r->err = res;
		fs_req_close_and_finish(r);
		return;
	}
	if (r->orphaned) {
		fs_req_close_and_finish(r);
		return;
	}
	if (res == 0) {
		r->msg_eof = true;
		read_file_encode(r);
		return;
	}
	r->off += (size_t)res;
	r->len += (size_t)res;
	if (r->off > read_file_max(r)) {
		read_file_too_large(r);
		return;
	}
	read_file_encode(r);
}

static void read_file_next(struct fs_req *r)
{
	struct io_uring_sqe *sqe = fs_req_sqe(r, 0, read_file_chunk_done);

	io_uring_prep_read(sqe, r->fd, r->data + r->len, (unsigned)(r->cap - r->len), r->off);
}

static void read_file_stat_done(struct fs_req *r)
{
	const struct statx *st = &r->stx[0];
	char *ids;
	int k;

	if (r->ops[0].res < 0) {
		r->err = r->ops[0].res;
		fs_req_close_and_finish(r);
		return;
	}
	/* Checked on the opened file: nothing can be swapped in after the check. */
	if (S_ISREG(st->stx_mode) && fs_req_is_server_secret(r, st, "fs/readFile")) {
		r->err = -EACCES;
		fs_req_close_and_finish(r);
		return;
	}
	if (!S_ISREG(st->stx_mode)) {
		r->fd = safe_close(r->fd);
		/* The reference's no-follow open has its own wording. */
		if (r->follow)
			fs_req_finish_error(r, RPC_INVALID_REQUEST, "path `%s` is not a file", r->path);
		else
			fs_req_finish_error(r, RPC_INVALID_REQUEST, "path is not a regular file");
		return;
	}
	if (r->orphaned) {
		fs_req_close_and_finish(r);
		return;
	}
	ids = json_dumps(r->pend.id, JSON_ENCODE_ANY | JSON_COMPACT);
	if (!ids) {
		r->err = -ENOMEM;
		fs_req_close_and_finish(r);
		return;
	}
	r->msg_head = sizeof(read_pre) - 1 + strlen(ids) + sizeof(read_mid) - 1;
	free(ids);
	if (st->stx_size > read_file_max(r)) {
		read_file_too_large(r);
		return;
	}
	r->cap = read_file_slice(st->stx_size);
	r->msg_cap = base64_encoded_len(st->stx_size);
	/* Until admitted, the request holds the estimate it was charged on arrival. */
	k = conn_mem_acquire(&r->mem, read_file_cost(r, r->msg_cap), read_file_admitted);
	if (k < 0)
		read_file_too_large(r);
	else if (k > 0)
		read_file_admitted(&r->mem);
}

static void read_file_opened(struct fs_req *r)
{
	opened_statx(r, r->ops[0].res, read_file_stat_done, STATX_TYPE | STATX_SIZE | STATX_INO);
}

static void read_file_open(struct fs_req *r)
{
	struct io_uring_sqe *sqe = fs_req_sqe(r, 0, read_file_opened);

	/*
	 * O_NONBLOCK: a FIFO opens without waiting for a writer and is then
	 * refused as "not a file"; O_NOFOLLOW gives the reference's ELOOP.
	 */
	io_uring_prep_openat(sqe, r->at_fd, r->at_name,
			     O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (r->follow ? 0 : O_NOFOLLOW),
			     0);
}

void fs_rpc_read_file(struct conn *c, json_t *id, json_t *params)
{
	struct fs_req *r = path_params_req(c, id, params, "WireFsReadFileParams", 1);

	if (!r)
		return;
	/* Its size is not known yet: an estimate, so that pipelined requests pause the connection. */
	conn_mem_set(&r->mem, FS_ESTIMATE);
	fs_req_nofollow_check(r, false, read_file_open);
}

/* ---- fs/writeFile ---- */

static void write_file_next(struct fs_req *r);

static void write_file_chunk_done(struct fs_req *r)
{
	int res = r->ops[0].res;

	if (res < 0) {
		r->err = res;
		fs_req_close_and_finish(r);
		return;
	}
	r->off += (size_t)res;
	if (res == 0 && r->off < r->len) {
		r->err = -EIO;
		fs_req_close_and_finish(r);
		return;
	}
	write_file_next(r);
}

static void write_file_next(struct fs_req *r)
{
	struct io_uring_sqe *sqe;

	if (r->off == r->len) {
		fs_req_close_and_finish(r);
		return;
	}
	sqe = fs_req_sqe(r, 0, write_file_chunk_done);
	io_uring_prep_write(sqe, r->fd, r->data + r->off, (unsigned)MIN(r->len - r->off, IO_CHUNK),
			    r->off);
}

static void write_file_ready(struct fs_req *r)
{
	if (r->err) {
		fs_req_close_and_finish(r);
		return;
	}
	write_file_next(r);
}

static void write_file_stat_done(struct fs_req *r)
{
	if (r->ops[0].res < 0) {
		r->err = r->ops[0].res;
		fs_req_close_and_finish(r);
		return;
	}
	if (!r->follow && !S_ISREG(r->stx[0].stx_mode)) {
		/* The reference's no-follow write takes regular files only. */
		r->fd = safe_close(r->fd);
		fs_req_finish_error(r, RPC_INVALID_REQUEST, "path is not a regular file");
		return;
	}
	fs_req_rewrite_start(r, r->fd, &r->stx[0], "fs/writeFile", write_file_ready);
}

static void write_file_opened(struct fs_req *r)
{
	int err = r->ops[0].res;

	if (err < 0)
		err = fs_trunc_open_errno(r->at_fd, r->at_name, r->follow, err);
	/* What was opened, before anything is written or truncated (fs_req_rewrite_start). */
	opened_statx(r, err, write_file_stat_done, STATX_TYPE | STATX_MODE | STATX_INO);
}

static void write_file_open(struct fs_req *r)
{
	struct io_uring_sqe *sqe = fs_req_sqe(r, 0, write_file_opened);

	/*
	 * Rewritten in place (same inode: hard links keep sharing, the
	 * permission bits stay), as the reference does; but not opened with
	 * O_TRUNC: the file is truncated only once the descriptor is known not
	 * to be one of the server's secret files (a link planted in the
	 * workspace), and without set-id bits (fs_req_rewrite_start). A dangling
	 * symlink is followed and its target created. O_NONBLOCK: a FIFO
	 * without reader fails at once.
	 */
	io_uring_prep_openat(sqe, r->at_fd, r->at_name,
			     O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK |
				     (r->follow ? 0 : O_NOFOLLOW),
			     0666);
}

void fs_rpc_write_file(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{ "path", P_STRING, true, NULL },
		{ "dataBase64", P_STRING, true, NULL },
		{ "sandbox", P_STRUCT, false, "struct WireFileSystemSandboxContext" },
		{ "followSymlinks", P_BOOL, false, NULL },
	};
	json_t *f[ELEMENTSOF(fields)];
	struct fs_req *r;
	uint8_t *data;
	size_t n;

	if (!params_decode_or_reply(c, id, params, "WireFsWriteFileParams", fields,
				    ELEMENTSOF(fields), f))
		return;
	if (params_base64_or_reply(c, id, f[1], RPC_INVALID_REQUEST,
				   "fs/writeFile requires valid base64 dataBase64: ", &data, &n) < 0)
		return;
	r = fs_path_req(c, id, f[0], f[2], f[3], 1);
	if (!r) {
		free(data);
		return;
	}
	r->data = data;
	r->len = n;
	conn_mem_set(&r->mem, r->len); /* held until written */
	fs_req_nofollow_check(r, false, write_file_open);
}

/* ---- fs/createDirectory ---- */

static void mkdir_done(struct fs_req *r)
{
	unsigned last = r->n_prefixes - 1;

	/* Ancestors: EEXIST is fine; the first other error explains the failure. */
	for (unsigned i = 0; i < last; i++) {
		if (r->ops[i].res < 0 && r->ops[i].res != -EEXIST) {
			r->err = r->ops[i].res;
			fs_req_finish(r, NULL);
			return;
		}
	}
	if (r->ops[last].res == -EEXIST && r->recursive) {
		/* create_dir_all: an existing directory (or a link to one) is success. */
		if (r->ops[last + 1].res == 0 && S_ISDIR(r->stx[0].stx_mode)) {
			fs_req_finish(r, NULL);
			return;
		}
		/* Without following, what exists is opened as a directory: ENOTDIR. */
		if (!r->follow && r->ops[last + 1].res == 0) {
			r->err = -ENOTDIR;
			fs_req_finish(r, NULL);
			return;
		}
	}
	r->err = r->ops[last].res < 0 ? r->ops[last].res : 0;
	fs_req_finish(r, NULL);
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

static void mkdir_chain(struct fs_req *r)
{
	struct io_uring_sqe *sqe;

	/*
	 * Every ancestor top-down, then the path, then a stat of it, as one
	 * hard-linked chain: one round trip, and a failing mkdir (EEXIST) does
	 * not cut the chain.
	 */
	if (r->at_fd >= 0 && r->n_prefixes > 1) {
		/*
		 * The parent exists and was opened without symlinks: only the last
		 * name is made, from it (a mkdir of an ancestor by its path would
		 * follow a symlink swapped in meanwhile, and create there).
		 */
		for (unsigned i = 0; i + 1 < r->n_prefixes; i++)
			free(r->prefixes[i]);
		r->prefixes[0] = r->prefixes[r->n_prefixes - 1];
		r->n_prefixes = 1;
	}
	for (unsigned i = 0; i < r->n_prefixes; i++) {
		bool last = i + 1 == r->n_prefixes;

		sqe = fs_req_sqe(r, i, mkdir_done);
		io_uring_prep_mkdirat(sqe, last ? r->at_fd : AT_FDCWD,
				      last ? r->at_name : r->prefixes[i], 0777);
		sqe->flags |= IOSQE_IO_HARDLINK;
	}
	sqe = fs_req_sqe(r, r->n_prefixes, mkdir_done);
	io_uring_prep_statx(sqe, r->at_fd, r->at_name,
			    AT_STATX_SYNC_AS_STAT | (r->follow ? 0 : AT_SYMLINK_NOFOLLOW), STATX_TYPE,
			    &r->stx[0]);
}

void fs_rpc_create_directory(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{ "path", P_STRING, true, NULL },
		{ "recursive", P_BOOL, false, NULL },
		{ "sandbox", P_STRUCT, false, "struct WireFileSystemSandboxContext" },
		{ "followSymlinks", P_BOOL, false, NULL },
	};
	json_t *f[ELEMENTSOF(fields)];
	struct fs_req *r;
	int err;

	if (!params_decode_or_reply(c, id, params, "WireFsCreateDirectoryParams", fields,
				    ELEMENTSOF(fields), f))
		return;
	r = fs_path_req(c, id, f[0], f[2], f[3], MKDIR_MAX_DEPTH + 1);
	if (!r)
		return;
	r->recursive = params_bool(f[1], true);
	if (strcmp(r->path, "/") == 0) {
		r->err = r->recursive ? 0 : -EEXIST;
		fs_req_finish(r, NULL);
		return;
	}
	err = split_prefixes(r, r->recursive);
	if (err < 0) {
		r->err = err;
		fs_req_finish(r, NULL);
		return;
	}
	/* A missing parent is for the mkdirs to create (or to report). */
	fs_req_nofollow_check(r, true, mkdir_chain);
}

