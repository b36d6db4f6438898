/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The listener guard: keeps sandboxed processes that have network access
 * from connecting to uexec's own TCP listener (which would let them start an
 * unsandboxed process), and from binding its port at another address (a
 * listener on [::1]:P next to uexec's 127.0.0.1:P takes the connections of
 * clients that say `localhost`, and their bearer tokens).
 *
 * Landlock can only allow-list TCP ports, and seccomp cannot read connect()'s
 * address, so the guard is a cgroup (v2) of its own with six tiny programs
 * (BPF_PROG_TYPE_CGROUP_SOCK_ADDR on inet4/inet6 connect and bind,
 * BPF_PROG_TYPE_CGROUP_SOCK on inet4/inet6 post_bind, which sees a port the
 * kernel chose) that refuse the listener's port with EPERM, and every port in a host-wide BPF hash map
 * ("uexec_ports", found by name, created under /run/uexec-netguard.lock by the
 * first server) where each uexec registers its ports: so no uexec on the
 * host is reachable from any uexec's sandboxes, including servers started
 * later. Entries of dead servers are pruned at each start. Sandboxed
 * processes are cloned straight
 * into that cgroup (clone3 CLONE_INTO_CGROUP: writing cgroup.procs costs a
 * ~15 ms RCU grace period per process) and enter a cgroup namespace rooted
 * there, which confines any later migration to the subtree (and with it the
 * inherited programs). A listen() on an unbound socket is bound by the kernel
 * without any hook: the server's ports are held at the wildcard addresses by
 * sockets that never listen, so the kernel cannot choose them.
 */
#include <stddef.h>
#include <stdint.h>

/*
 * The host-wide lock every guarded uexec takes (blocking) to join the port
 * map at start. flock needs no write access, so it is hidden from every
 * sandbox's view (sandbox.c, plan_secrets): a sandbox holding it would hang
 * every uexec starting on the host.
 */
#define NETGUARD_LOCK_PATH "/run/uexec-netguard.lock"

struct netguard;

/*
 * Sets the guard up for the given TCP ports (host byte order). Returns 0 and
 * *ret, or -errno with err saying what is missing (no cgroup2 mount, BPF
 * refused, ...); the caller decides whether to go on without it.
 */
int netguard_new(const uint16_t *ports, size_t n_ports, struct netguard **ret, char *err,
		 size_t errsz);

/*
 * After a live upgrade's execve (docs/UPGRADE.md): the guard of the server
 * this process was, from its cgroup's fd (taken: its flock and the programs
 * attached to the cgroup survive execve). The port map is joined again. held: the sockets that held the ports (netguard_held_fds()),
 * taken; none (n_held 0): they are held again. Returns 0 and *ret, or
 * -errno with err.
 */
int netguard_adopt(int cgroup_fd, const uint16_t *ports, size_t n_ports, const int *held,
		   size_t n_held, struct netguard **ret, char *err, size_t errsz);

/*
 * The sockets holding the guarded ports at the wildcard addresses (a live
 * upgrade hands them over): up to max fds into fds; returns how many.
 */
size_t netguard_held_fds(const struct netguard *g, int *fds, size_t max);

/* The cgroup directory fd for clone3's CLONE_INTO_CGROUP; -1 when g is NULL. */
int netguard_cgroup_fd(const struct netguard *g);

/*
 * The mount points of every cgroup mount, v2 and v1 hierarchies (a
 * NULL-terminated strv), which every sandbox with a mount namespace makes
 * read-only: else a sandboxed root process could write its pid into a
 * cgroup.procs outside its leaf (and out of its limits and the whole-tree
 * kill, or out of the listener guard); the cgroup namespace only confines
 * migrations when the hierarchy is mounted with nsdelegate.
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
