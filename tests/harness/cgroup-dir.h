/* SPDX-License-Identifier: MIT */
/*
 * This process's cgroup v2 directory, for the tests and benchmarks that make
 * a leaf below it (the denial tracer's).
 */
#pragma once

#include <stddef.h>

/* Writes the directory (mountinfo's cgroup2 mount + /proc/self/cgroup's 0:: line) to
 * out. Returns 0, -ENOENT without a cgroup2 mount holding it, or -errno. */
int tests_own_cgroup_dir(char *out, size_t outsz);
