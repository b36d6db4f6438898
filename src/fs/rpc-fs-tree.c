/* SPDX-License-Identifier: MIT */
/*
 * fs/readDirectory and fs/canonicalize (PROTOCOL.md §6.16, §6.21), and the
 * worker-pool job all the fs tree methods run as (fs-tree.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conn.h"
#include "fs-req.h"
#include "fs-tree.h"
#include "fs.h"
#include "log.h"
#include "macro.h"
#include "params.h"
#include "rpc-fs.h"
#include "rpc.h"
#include "utf8.h"
#include "worker.h"

#define MAX_PENDING_JOBS 256 /* worker jobs queued or running, server-wide */
#define FS_TREE_ESTIMATE (1u << 20) /* charged for a listing or walk until it is serialised */

/* ---- fs/readDirectory ---- */

/*
 * Rust's String::from_utf8_lossy, which the reference applies to file
 * names: every maximal invalid subsequence (not every byte: "\xE2\x82" is
 * one) becomes U+FFFD. Returns a malloc'd NUL-terminated string.
 */
static char *utf8_lossy(const char *name, size_t n)
{
	const uint8_t *s = (const uint8_t *)name;
	char *out = malloc(n * 3 + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n;) {
		size_t bad = 0, w;
		bool truncated;

		w = utf8_next(s, n, i, &bad, &truncated);
		if (w) {
			memcpy(o, s + i, w);
			o += w;
			i += w;
		} else {
			memcpy(o, "\xEF\xBF\xBD", 3);
			o += 3;
			i += bad;
		}
	}
	*o = 0;
	return out;
}

static json_t *name_json(const char *name)
{
	size_t n = strlen(name);
	char *lossy;
	json_t *j;

	if (utf8_is_valid((const uint8_t *)name, n))
		return json_stringn(name, n);
	lossy = utf8_lossy(name, n);
	j = lossy ? json_string(lossy) : NULL;
	free(lossy);
	return j;
}

static void run_read_directory(struct tree_job *j)
{
	json_t *entries;
	struct dirent *de;
	DIR *d;
	int fd;

	/* O_DIRECTORY: a FIFO fails with ENOTDIR before it could block the worker. */
	fd = open(j->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		j->err = -errno;
		return;
	}
	d = fdopendir(fd);
	if (!d) {
		j->err = -errno;
		safe_close(fd);
		return;
	}
	entries = json_array();
	for (;;) {
		bool is_dir, is_file;
		struct stat st;
		json_t *e;

		errno = 0;
		de = readdir(d);
		if (!de)
			break;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		is_dir = de->d_type == DT_DIR;
		is_file = de->d_type == DT_REG;
		if (de->d_type == DT_LNK || de->d_type == DT_UNKNOWN) {
			/* Types of the target; dangling (or looping) links are left out. */
			if (fstatat(dirfd(d), de->d_name, &st, 0) < 0)
				continue;
			is_dir = S_ISDIR(st.st_mode);
			is_file = S_ISREG(st.st_mode);
		}
		e = json_object();
		json_object_set_new(e, "fileName", name_json(de->d_name));
		json_object_set_new(e, "isDirectory", json_boolean(is_dir));
		json_object_set_new(e, "isFile", json_boolean(is_file));
		json_array_append_new(entries, e);
	}
	if (errno) {
		j->err = -errno;
		json_decref(entries);
		closedir(d);
		return;
	}
	closedir(d);
	j->result = json_object();
	json_object_set_new(j->result, "entries", entries);
}

/* ---- fs/canonicalize ---- */

static void run_canonicalize(struct tree_job *j)
{
	_cleanup_free_ char *real = realpath(j->path, NULL);
	json_t *uri;

	if (!real) {
		j->err = -errno;
		return;
	}
	uri = fs_uri_json(real);
	if (!uri) {
		j->err = -ENOMEM;
		return;
	}
	j->result = json_object();
	json_object_set_new(j->result, "path", uri);
}

/* ---- jobs ---- */

void fs_tree_job_free(struct tree_job *j)
{
	if (!j)
		return;
	conn_mem_done(&j->mem);
	for (size_t i = 0; i < j->n_errs; i++)
		free(j->errs[i].path);
	free(j->errs);
	free(j->keep);
	free(j->keep_what);
	json_decref(j->result);
	free(j->result_text);
	free(j->msg);
	free(j->path);
	free(j->dest);
	free(j->cwd);
	free(j->home);
	safe_close(j->src_dirfd);
	safe_close(j->dst_dirfd);
	free(j);
}

static void job_run(struct work *w)
{
	struct tree_job *j = container_of(w, struct tree_job, work);

	j->ran = true;
	switch (j->op) {
	case OP_READ_DIRECTORY:
		run_read_directory(j);
		break;
	case OP_WALK:
		fs_walk_run(j);
		break;
	case OP_REMOVE:
		fs_remove_run(j);
		break;
	case OP_COPY:
		fs_copy_run(j);
		break;
	case OP_CANONICALIZE:
		run_canonicalize(j);
		break;
	case OP_RENAME:
		fs_rename_run(j);
		break;
	}
	/* -ECANCELED only unwinds a refusal; anything else with msg unset is an OS error. */
	if (j->msg)
		j->err = 0;
	/*
	 * Serialise here, off the loop: a 50,000-entry walk is megabytes of JSON
	 * that would otherwise stall every other client while it is dumped.
	 */
	if (!j->msg && j->err >= 0 && j->result) {
		if (j->op == OP_WALK)
			fs_walk_finish(j);
		j->result_text = json_dumps(j->result, JSON_COMPACT | JSON_ENCODE_ANY);
		json_decref(j->result);
		j->result = NULL;
	}
}

static void job_done(struct work *w)
{
	struct tree_job *j = container_of(w, struct tree_job, work);
	struct conn *c = j->pend.conn;
	json_t *id = j->pend.id;

	if (j->secret_refused)
		/* Logged here: the worker threads do not log. Never the contents. */
		log_warning("Refusing %s of %s to %s: it would read or write one of the server's "
			    "own secret files (token, key, audit log or configuration)",
			    j->op == OP_COPY ? "fs/copy" : "fs/rename", j->path, j->dest);
	if (j->orphaned) {
		fs_tree_job_free(j);
		return;
	}
	if (j->ran && fs_rename_submit(j))
		return;
	if (!j->ran)
		rpc_reply_errno_internal(c, id, ECANCELED);
	else if (j->msg)
		rpc_reply_error(c, id, j->code, "%s", j->msg);
	else if (j->err < 0 || !j->result_text)
		rpc_reply_errno(c, id, j->err < 0 ? j->err : -ENOMEM);
	else
		rpc_reply_serialized(c, id, j->result_text, strlen(j->result_text));
	rpc_pending_end(&j->pend);
	fs_tree_job_free(j);
}

static void job_cancel(struct rpc_pending *p)
{
	struct tree_job *j = container_of(p, struct tree_job, pend);

	/* The worker may still be running it: done() frees it. */
	rpc_pending_end(&j->pend);
	j->orphaned = true;
}

struct tree_job *fs_tree_job_new(struct conn *c, json_t *id, enum tree_op op)
{
	struct tree_job *j;

	/* Each job may hold a worker for long: bound the queue rather than memory and latency. */
	if (worker_pending(c->srv) > MAX_PENDING_JOBS) {
		rpc_reply_error(c, id, RPC_INTERNAL_ERROR,
				"server busy: too many filesystem operations in progress");
		return NULL;
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		rpc_reply_errno_internal(c, id, ENOMEM);
		return NULL;
	}
	j->op = op;
	j->srv = c->srv;
	j->src_dirfd = j->dst_dirfd = -1;
	j->work.run = job_run;
	j->work.done = job_done;
	conn_mem_init(&j->mem, c);
	return j;
}

void fs_tree_job_submit(struct conn *c, json_t *id, struct tree_job *j)
{
	/*
	 * Listings and walks answer with what they find, serialised by the worker:
	 * an estimate until the reply is queued (then it counts as queued output),
	 * so that pipelined requests pause the connection.
	 */
	if (j->op == OP_READ_DIRECTORY || j->op == OP_WALK)
		conn_mem_set(&j->mem, FS_TREE_ESTIMATE);
	rpc_pending_start(&j->pend, c, id, job_cancel);
	worker_submit(c->srv, &j->work);
}

struct tree_job *fs_tree_path_job(struct conn *c, json_t *id, enum tree_op op, json_t *path,
				  json_t *sandbox)
{
	_cleanup_free_ char *native = NULL;
	struct tree_job *j;

	if (fs_param_path(c, id, path, &native) < 0)
		return NULL;
	if (fs_refuse_sandbox(c, id, sandbox))
		return NULL;
	j = fs_tree_job_new(c, id, op);
	if (j)
		j->path = TAKE_PTR(native);
	return j;
}

/* ---- requests ---- */

/* fs/readDirectory and fs/canonicalize take the same parameters: a path and a sandbox. */
static void path_method(struct conn *c, json_t *id, json_t *params, const char *type,
			enum tree_op op)
{
	static const struct pfield fields[] = {
		{ "path", P_STRING, true, NULL },
		{ "sandbox", P_STRUCT, false, "struct WireFileSystemSandboxContext" },
	};
	json_t *f[ELEMENTSOF(fields)];
	struct tree_job *j;

	if (!params_decode_or_reply(c, id, params, type, fields, ELEMENTSOF(fields), f))
		return;
	j = fs_tree_path_job(c, id, op, f[0], f[1]);
	if (j)
		fs_tree_job_submit(c, id, j);
}

void fs_rpc_read_directory(struct conn *c, json_t *id, json_t *params)
{
	path_method(c, id, params, "WireFsReadDirectoryParams", OP_READ_DIRECTORY);
}

void fs_rpc_canonicalize(struct conn *c, json_t *id, json_t *params)
{
	path_method(c, id, params, "WireFsCanonicalizeParams", OP_CANONICALIZE);
}
