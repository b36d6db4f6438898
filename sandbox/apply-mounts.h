/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The mount side of the child's plan (apply-mounts.c), shared with apply.c.
 * Private to the sandbox module; every function is async-signal-safe.
 */
struct sandbox_plan;

/* The restrict_fs mount namespace: unshared, the tree made read-only, the plan's mounts. */
int sandbox_apply_tree(const struct sandbox_plan *pl, int tty_fd, const char **step);
/* path read-only (mount_setattr; flags as its, e.g. AT_RECURSIVE). */
int sandbox_set_ro(const char *path, unsigned flags);
/* A recursive bind of path over itself, then read-only. */
int sandbox_bind_ro(const char *path);
