/* SPDX-License-Identifier: MIT */
/*
 * Between cgroup.c (the layout, leaves, kills) and cgroup-sweep.c (the
 * start-up sweep of dead servers' cgroups and a base's ownership lock).
 * Nothing else includes it.
 */
#pragma once

#include <sys/types.h>

/* Reads dirfd/file (NUL-terminated, truncated to bufsz - 1). Returns its length or -errno. */
ssize_t sandbox_cg_read_at(int dirfd, const char *file, char *buf, size_t bufsz);

/* Takes the ownership lock of a base (or a v1 base) dirfd: 0, or -errno (held: a live uexec). */
int sandbox_cg_own_lock(int dirfd);

/* Purges what uexec servers that are gone left in dir (their processes killed). */
void sandbox_cg_sweep(const char *dir);
