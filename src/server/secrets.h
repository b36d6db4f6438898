/* SPDX-License-Identifier: MIT */
/*
 * The server's own secret files by identity (device and inode): the files
 * sandboxes never see (sandbox_set_secrets: --ws-token-file,
 * --ws-shared-secret-file, --tls-key, --audit-log, --config), which
 * unsandboxed file requests refuse to read or write too (EACCES, fs-req.h):
 * a sandboxed command can plant a link to one in the workspace for the
 * client to read back or write through (the Codex CLI reads and writes
 * apply_patch targets without a sandbox).
 *
 * The identities are cached, not looked up per request: taken at start and
 * at each SIGHUP reload, and again, lazily, by the first request that comes
 * a second or more after the last pass. A file replaced by rename (how tools
 * rotate tokens and keys) without a SIGHUP is thus covered within a second.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SECRET_IDS_MAX 64                   /* existing files told apart; more: all refused */
#define SECRET_IDS_MAX_AGE_NS 1000000000ull /* a pass older than this is redone on use */

struct secret_ids {
	size_t n;
	/*
	 * The set is unknown (a path that cannot be stat'ed, more than
	 * SECRET_IDS_MAX files, a path list known to be incomplete): every
	 * file counts as a secret. Failing closed.
	 */
	bool all;
	struct {
		dev_t dev;
		ino_t ino;
	} id[SECRET_IDS_MAX];
};

struct secret_cache {
	struct secret_ids ids;
	uint64_t taken_ns; /* CLOCK_MONOTONIC of the last pass; 0: none yet */
	bool incomplete;   /* the path list lacks a file the configuration names */
};

/* Stats every path now (start, SIGHUP), newest (last) first. now_ns: CLOCK_MONOTONIC. */
void server_secret_cache_refresh(struct secret_cache *c, char *const *paths, size_t n,
				 uint64_t now_ns);
/* The set, after a new pass if the last one is SECRET_IDS_MAX_AGE_NS old or more. */
const struct secret_ids *server_secret_cache_get(struct secret_cache *c, char *const *paths,
						 size_t n, uint64_t now_ns);
bool server_secret_ids_has(const struct secret_ids *ids, dev_t dev, ino_t ino);

struct server;
/* The server's cache over its secret paths (s->sandbox.secrets), refreshed now. */
void server_secrets_refresh(struct server *s);
/* The server's set, as server_secret_cache_get gives it (loop thread only: workers copy it). */
const struct secret_ids *server_secret_ids(struct server *s);
