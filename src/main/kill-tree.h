/* SPDX-License-Identifier: MIT */
/* The drain timeout's fallback kill through /proc (kill-tree.c). */
#pragma once

struct server;

/*
 * SIGKILL to every descendant of the live processes without a cgroup of their
 * own; returns the number of such processes (0: no walk was needed).
 */
unsigned server_kill_descendants(struct server *s);
