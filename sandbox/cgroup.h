/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A cgroup per process (issue 15): every process uexec starts, and all its
 * descendants, live in a leaf cgroup of their own, made before the child is
 * cloned and entered with clone3(CLONE_INTO_CGROUP), so that the whole tree
 * can be killed at once (cgroup.kill; freeze + SIGKILL of each member on
 * kernels without it), whatever setsid or double forks did, and so that
 * pids/memory/CPU limits apply to the tree.
 *
 * Layout (probed once by sandbox_cg_init):
 *   cgroup v2, the server's own cgroup O:
 *     O/uexec-<pid>.procs/p<N>        the leaf of process N
 *     O/uexec-<pid>.sandbox/p<N>      the leaf of a guarded sandbox (netguard.h):
 *                                     below the listener guard, whose connect
 *                                     filters it inherits
 *     O/uexec-<pid>.server            uexec itself, only on a pure v2 host where
 *                                     O had to enable controllers (a cgroup with
 *                                     controllers in subtree_control holds no
 *                                     process of its own)
 *   cgroup v1 (hybrid hosts, where pids/memory/cpu are v1 controllers):
 *     <controller mount><own path>/uexec-<pid>.procs/p<N>, only for a process
 *     with a limit of that controller; the child writes itself into it
 *     between clone and exec.
 *
 * What the host does not allow is left out and said once at start-up (no
 * cgroup2 mount, not writable, controller missing); nothing else fails.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum sandbox_cg_kind {
	SANDBOX_CG_PIDS,
	SANDBOX_CG_MEMORY,
	SANDBOX_CG_CPU,
	_SANDBOX_CG_KIND_MAX,
};

/* Where a limit of a kind is enforced. */
enum sandbox_cg_where {
	SANDBOX_CG_NONE,
	SANDBOX_CG_V2,
	SANDBOX_CG_V1,
};

/* 0 = no limit. cpu_milli: thousandths of a CPU (500 = half a CPU). */
struct sandbox_cg_limits {
	uint64_t pids_max;
	uint64_t memory_max;
	uint64_t cpu_milli;
};

struct sandbox_cg {
	bool enabled;        /* per-process leaves in cgroup v2 */
	bool has_kill;       /* cgroup.kill (Linux 5.14) */
	int base_fd;         /* O/uexec-<pid>.procs, or -1 */
	char base[4096];
	enum sandbox_cg_where where[_SANDBOX_CG_KIND_MAX];
	int v1_fd[_SANDBOX_CG_KIND_MAX];    /* v1: <mount><own>/uexec-<pid>.procs, or -1 */
	char v1_base[_SANDBOX_CG_KIND_MAX][4096];
	char server_cg[4096]; /* O/uexec-<pid>.server when uexec moved itself there, else "" */
	uint64_t seq;         /* leaf names */
	pid_t supervisor;     /* the process that cleans up if uexec dies, or 0 */
	int supervisor_fd;    /* the pipe it watches (write end), or -1 */
};

/* One process's leaf. */
struct sandbox_cg_leaf {
	bool live;
	int parent_fd;        /* base_fd or the guard's cgroup (not owned) */
	char name[24];        /* p<N> */
	int fd;               /* the leaf, open until the child is cloned; -1 after */
	unsigned v1_mask;     /* kinds with a v1 directory named `name` */
	int v1_procs[_SANDBOX_CG_KIND_MAX]; /* their cgroup.procs, open until cloned, or -1 */
	bool memory_limited;
};

/*
 * Probes the host and sets the layout up: sweeps what dead uexec servers
 * left (killing their processes), makes the base cgroups, enables the
 * controllers it can. want = false: only the sweep. Fills desc with one line
 * for the log. Never fails: cg->enabled and cg->where say what works.
 */
void sandbox_cg_init(struct sandbox_cg *cg, bool want, char *desc, size_t descsz);

/*
 * Forks the supervisor: a small process that waits for uexec to die (its
 * pipe's write end is held by uexec only) and then kills and removes
 * everything below the bases, so no process outlives uexec even after a
 * SIGKILL. Call before any thread starts. Returns 0 or -errno.
 */
int sandbox_cg_supervise(struct sandbox_cg *cg);

/*
 * Makes a leaf below parent_fd (the guard's cgroup), or the base with -1,
 * with the limits, and opens what the child needs. Returns 0 or -errno
 * (-ENOTSUP: the layout has no leaves; a v1 directory that cannot be made
 * fails the whole leaf).
 */
int sandbox_cg_leaf_new(struct sandbox_cg *cg, int parent_fd, const struct sandbox_cg_limits *l,
			struct sandbox_cg_leaf *ret);

/* Closes the fds the child needed (after the clone, whatever its result). */
void sandbox_cg_leaf_spawned(struct sandbox_cg_leaf *leaf);

/* SIGKILL to every process in the leaf. Returns 0 or -errno. */
int sandbox_cg_leaf_kill(const struct sandbox_cg *cg, const struct sandbox_cg_leaf *leaf);

/* The number of OOM kills in the leaf (memory limit reached), 0 if unknown. */
uint64_t sandbox_cg_leaf_oom_kills(const struct sandbox_cg *cg, const struct sandbox_cg_leaf *leaf);

/*
 * The v2 leaf's directory (parent fd and name) for a caller that removes it
 * itself (the ring's IORING_OP_UNLINKAT); false when it has none. Then
 * sandbox_cg_leaf_removed() records that it is gone.
 */
bool sandbox_cg_leaf_dir(const struct sandbox_cg_leaf *leaf, int *ret_parent_fd,
			 const char **ret_name);
void sandbox_cg_leaf_removed(struct sandbox_cg_leaf *leaf);

/* Removes the leaf's directories. Returns 0 (or already gone), -EBUSY while populated, -errno. */
int sandbox_cg_leaf_remove(struct sandbox_cg *cg, struct sandbox_cg_leaf *leaf);

/*
 * Kills everything in the cgroup directory path and its subtree, then
 * removes the subtree (waiting up to ~1 s for the killed processes to go).
 * Returns 0 or -errno (the first directory that stayed).
 */
int sandbox_cg_purge(const char *path);

/* At shutdown: purges the bases, stops the supervisor. */
void sandbox_cg_done(struct sandbox_cg *cg);

/* "pids", "memory", "cpu". */
const char *sandbox_cg_kind_name(enum sandbox_cg_kind k);
