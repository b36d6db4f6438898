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
/*
 * Matching steps (pattern component x path component, per {a,b}
 * alternative) one plan's scans may spend: the scan runs on the event loop,
 * and 64 alternatives of 127 components against files 60 directories deep
 * cost about 3 ms a file. 2^24 steps are a few tenths of a second at worst;
 * `**` + a name over SANDBOX_GLOB_MAX_ENTRIES files 8 deep take 7 million.
 */
#define SANDBOX_GLOB_MAX_STEPS (1UL << 24)

/* What one plan's scans have spent (shared by its patterns). */
struct sandbox_glob_budget {
	size_t entries; /* directory entries visited */
	size_t steps;   /* matching steps */
};

struct sandbox_glob_out {
	void *ctx;
	/* A matching regular file (canonical path). 0, or -errno (-E2BIG: too many matches). */
	int (*add)(void *ctx, const char *path);
	/* A pattern without wildcards that names an existing path. */
	int (*add_literal)(void *ctx, const char *path, bool is_dir);
};

/*
 * Expands pattern (absolute, normalised) with the scan depth limit max_depth
 * (-1: none); *budget counts what the scan spends (shared by a plan's
 * patterns). Returns 0, or -errno with err naming the pattern and why it
 * cannot be enforced (-EINVAL: the pattern, -E2BIG: a limit).
 */
int sandbox_glob_expand(const char *pattern, long max_depth, struct sandbox_glob_budget *budget,
			struct sandbox_glob_out *out, char *err, size_t errsz);

/* Does glob (the part after the scan's root) match rel, a file's path below that root? */
bool sandbox_glob_match(const char *glob, const char *rel);
