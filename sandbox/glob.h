/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Deny glob expansion (glob.c): what a `glob_pattern` deny entry matches
 * when the plan is built. Private to the sandbox module (unit-tested).
 */
#include <stdbool.h>
#include <stddef.h>

#define SANDBOX_GLOB_MAX_MATCHES 8192    /* the reference's MAX_UNREADABLE_GLOB_MATCHES */
#define SANDBOX_GLOB_MAX_ENTRIES 262144  /* directory entries one plan's scans may visit */
#define SANDBOX_GLOB_MAX_DEPTH 64        /* directories below a scan's root */

struct sandbox_glob_out {
	void *ctx;
	/* A matching regular file (canonical path). 0, or -errno (-E2BIG: too many matches). */
	int (*add)(void *ctx, const char *path);
	/* A pattern without wildcards that names an existing path. */
	int (*add_literal)(void *ctx, const char *path, bool is_dir);
};

/*
 * Expands pattern (absolute, normalised) with the scan depth limit max_depth
 * (-1: none); *entries counts the directory entries visited (shared by a
 * plan's patterns). Returns 0, or -errno with err naming the pattern and
 * why it cannot be enforced (-EINVAL: the pattern, -E2BIG: a limit).
 */
int sandbox_glob_expand(const char *pattern, long max_depth, size_t *entries,
			struct sandbox_glob_out *out, char *err, size_t errsz);

/* Does glob (the part after the scan's root) match rel, a file's path below that root? */
bool sandbox_glob_match(const char *glob, const char *rel);
