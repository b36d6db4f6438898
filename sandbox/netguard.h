/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The listener guard: keeps sandboxed processes that have network access
 * from connecting to uexec's own TCP listener (which would let them start an
 * unsandboxed process).
 *
 * Landlock can only allow-list TCP ports, and seccomp cannot read connect()'s
 * address, so the guard is a cgroup (v2) of its own with two tiny
 * BPF_PROG_TYPE_CGROUP_SOCK_ADDR programs (inet4/inet6 connect) that refuse
 * the listener's port with EPERM, and every port in a host-wide BPF hash map
 * ("uexec_ports", found by name, created under /run/uexec-netguard.lock by the
 * first server) where each uexec registers its ports: so no uexec on the
 * host is reachable from any uexec's sandboxes, including servers started
 * later. Entries of dead servers are pruned at each start. Sandboxed
 * processes are cloned straight
 * into that cgroup (clone3 CLONE_INTO_CGROUP: writing cgroup.procs costs a
 * ~15 ms RCU grace period per process) and enter a cgroup namespace rooted
 * there, which confines any later migration to the subtree (and with it the
 * inherited programs).
 */
#include <stddef.h>
#include <stdint.h>

struct netguard;

/*
 * Sets the guard up for the given TCP ports (host byte order). Returns 0 and
 * *ret, or -errno with err saying what is missing (no cgroup2 mount, BPF
 * refused, ...); the caller decides whether to go on without it.
 */
int netguard_new(const uint16_t *ports, size_t n_ports, struct netguard **ret, char *err,
		 size_t errsz);

/* The cgroup directory fd for clone3's CLONE_INTO_CGROUP; -1 when g is NULL. */
int netguard_cgroup_fd(const struct netguard *g);

/*
 * The mount points of every cgroup mount, v2 and v1 (a NULL-terminated
 * strv), which a guarded or full-disk-write sandbox makes read-only: the
 * cgroup namespace only confines migrations when the hierarchy is mounted
 * with nsdelegate, and v1 hierarchies (per-process limits) not at all.
 */
int netguard_cgroup_mounts(char ***ret, size_t *ret_n);

/*
 * The cgroup2 directory of this process (its parent when uexec moved itself
 * to uexec-<pid>.server, cgroup.h). Returns 0, or -errno with err filled.
 */
int netguard_own_cgroup_dir(char *out, size_t outsz, char *err, size_t errsz);

/* The cgroup's path (for logs). */
const char *netguard_path(const struct netguard *g);

/* Detaches nothing (the programs die with the cgroup); removes the cgroup if empty. */
void netguard_free(struct netguard *g);
