/* SPDX-License-Identifier: MIT */
/*
 * The worker-pool job behind fs/readDirectory, fs/canonicalize
 * (rpc-fs-tree.c), fs/walk (fs-walk.c), fs/remove, fs/copy and fs/rename's
 * checks (fs-rmcp.c; the jobs fs-remove.c, fs-copy.c, fs-rename.c).
 *
 * None of these has an io_uring opcode (getdents, realpath, a tree of
 * unlinks or copies), so every request becomes a job on the worker pool
 * (worker.h): run() does the blocking syscalls in a worker thread on the
 * job's own data only, done() replies on the loop thread. A job whose
 * connection closes meanwhile is orphaned (its rpc_pending is cancelled) and
 * freed by done() without a reply.
 *
 * JSON built in run() (result trees) is private to the job until done() hands
 * it to the connection, which is safe with jansson: no object is ever shared
 * between threads. Texts that need strerror() are formatted in done().
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "conn-mem.h"
#include "fs-req.h"
#include "ring.h"
#include "rpc.h"
#include "worker.h"

struct conn;

enum tree_op {
	OP_READ_DIRECTORY,
	OP_WALK,
	OP_REMOVE,
	OP_COPY,
	OP_CANONICALIZE,
	OP_RENAME,
};

struct dev_ino {
	dev_t dev;
	ino_t ino;
};

struct walk_error {
	char *path; /* native */
	int err;    /* positive errno */
};

struct tree_job {
	struct work work;
	struct rpc_pending pend;
	struct conn_mem mem; /* the reply's bytes against the in-flight budgets (conn-mem.h) */
	bool orphaned; /* the connection went away: free in done(), reply to nobody */
	bool ran;      /* run() executed (the pool may complete unstarted jobs at shutdown) */
	enum tree_op op;

	/* request (owned) */
	char *path; /* fs/copy: sourcePath */
	char *dest; /* fs/copy, fs/rename: destinationPath */
	bool recursive;
	bool force;
	bool follow; /* fs/remove followSymlinks; fs/walk followDirectorySymlinks */
	bool prune_hidden;
	size_t max_depth, max_dirs, max_entries;
	char *cwd; /* fs/remove: directories that must survive (NULL = none) */
	char *home;
	unsigned rename_flags; /* fs/rename: RENAME_NOREPLACE for overwrite: false */
	/* fs/copy, fs/rename: files never read nor written (copied on the loop, secrets.h) */
	struct secret_ids secrets;
	bool secret_refused;   /* run() refused one of them: done() logs it (loop thread) */
	bool rename_on_ring;   /* fs/rename: run() only checks; done() submits IORING_OP_RENAMEAT */
	/*
	 * fs/rename: the parent directories of source and destination, opened
	 * (O_PATH) once by run() and their last names: the checks and the rename
	 * both resolve the last name in the same directory, so swapping a parent
	 * for a symlink in between cannot redirect the move (-1 / NULL = none).
	 */
	int src_dirfd, dst_dirfd;
	const char *src_base, *dst_base; /* point into path / dest */
	struct server *srv;
	struct uring_op ring_op; /* fs/rename's RENAMEAT */

	/* outcome, written by run() */
	int err;  /* negative errno, replied with the reference's mapping */
	int code; /* with msg: a JSON-RPC error of our own */
	char *msg;
	json_t *result;
	char *result_text; /* result serialised by the worker (run), sent by done */
	bool truncated;
	struct walk_error *errs;
	size_t n_errs;
	size_t cap_errs;

	/* fs/remove: identities of the protected directories */
	struct dev_ino *keep;
	const char **keep_what;
	size_t n_keep;
};

/*
 * A job for c/id with op, not yet submitted, or NULL after replying (server
 * busy: too many jobs queued or running; OOM). Loop thread.
 */
struct tree_job *fs_tree_job_new(struct conn *c, json_t *id, enum tree_op op);
/*
 * A job for a request's path (a file: URI or a native path, stored normalised
 * in j->path) and sandbox, or NULL after replying (bad path, a sandbox that
 * asks for restrictions, busy, OOM). Loop thread.
 */
struct tree_job *fs_tree_path_job(struct conn *c, json_t *id, enum tree_op op, json_t *path,
				  json_t *sandbox);
/*
 * Makes j pending on c/id and queues it: its run function (by j->op) runs in a
 * worker, the reply follows on the loop thread. Takes j. Loop thread.
 */
void fs_tree_job_submit(struct conn *c, json_t *id, struct tree_job *j);
/* Frees j and all it owns; NULL is fine. Only for a job never submitted (or from done()). */
void fs_tree_job_free(struct tree_job *j);

/*
 * The run functions (worker thread, j's own data only). Each sets j->result
 * on success; otherwise j->err (a negative errno) or j->msg and j->code.
 */
void fs_walk_run(struct tree_job *j);
void fs_remove_run(struct tree_job *j);
void fs_copy_run(struct tree_job *j);
void fs_rename_run(struct tree_job *j);
/*
 * fs/rename after run(), on the loop thread: submits the RENAMEAT that the
 * checks allowed, replies when it completes and frees j. Returns false (j
 * untouched) when there is nothing to submit: the reply is the usual one.
 */
bool fs_rename_submit(struct tree_job *j);
/* Adds fs/walk's "errors" and "truncated" to j->result (worker thread; pure helpers only). */
void fs_walk_finish(struct tree_job *j);
