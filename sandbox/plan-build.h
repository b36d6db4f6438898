/* SPDX-License-Identifier: MIT */
/*
 * What the files that build a sandbox plan share (sandbox.c: the plan's
 * phases; plan-mounts.c: masks, protected names, mount phases, pins and
 * deny globs; identity.c: --sandbox-uid's user namespaces and idmaps, and
 * the writable roots its uid must reach; probe.c: the host's features).
 * Internal to sandbox/.
 */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plan.h"
#include "policy.h"
#include "sandbox.h"

/* plan-mounts.c */
int sandbox_strv_push(char ***v, size_t *n, const char *s);
void sandbox_strv_clear(char **v, size_t n);
int sandbox_ll_push(struct sandbox_plan *pl, const char *path, uint64_t access);
bool sandbox_beneath(const char *path, const char *root);
size_t sandbox_path_depth(const char *p);
int sandbox_cmp_depth(const void *a, const void *b);
bool sandbox_strv_has(char *const *v, size_t n, const char *s);
int sandbox_plan_secrets(struct sandbox_plan *pl, const struct sandbox_features *f);
int sandbox_plan_protect(struct sandbox_plan *pl, const char *path, bool create_if_missing,
			 char *err, size_t errsz);
int sandbox_root_protect(struct sandbox_plan *pl, bool root, const char *path, char *err,
			 size_t errsz);
bool sandbox_root_name(const char *path);
int sandbox_first_missing(const char *path, char ret[PATH_MAX]);
int sandbox_plan_phases(struct sandbox_plan *pl);
int sandbox_plan_pins(struct sandbox_plan *pl, char *err, size_t errsz);
int sandbox_plan_deny_globs(struct sandbox_plan *pl, const struct sandbox_policy *p, char *err,
			    size_t errsz);

/* identity.c */
int sandbox_idmap_get(const struct sandbox_features *f, unsigned uid, unsigned gid,
		      const char **what);
int sandbox_idmap_check(const char *path, int userns_fd);
int sandbox_plan_reach_roots(struct sandbox_plan *pl, const char *cwd, char *err, size_t errsz);
