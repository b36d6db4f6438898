/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The plan built in the parent (sandbox.c) and applied in the child
 * (apply.c). Private to the sandbox module.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sock_fprog;

#define SANDBOX_REACH_MAX_ENTRIES 256 /* entries of one directory re-bound for --sandbox-uid */
#define SANDBOX_MAX_PINS 16384        /* directories pinned against renames (see pin below) */

struct ll_rule {
	char *path;
	uint64_t access;
};

struct sandbox_plan {
	bool restrict_fs;
	/*
	 * With restrict_fs: the root is a writable root (a root write with
	 * carve-outs, SECURITY.md "Write on the root"). The tree stays as the host has it
	 * (read-write where the host's is) instead of read-only; "/" in rw is
	 * neither cloned nor idmapped; ro_kernel is set.
	 */
	bool root_rw;
	bool drop_caps;
	uint64_t keep_caps;  /* capabilities kept when dropping (full-disk write) */
	bool restrict_net;
	int cgroup_fd;       /* the listener guard's cgroup (network access), or -1 */
	bool pid_ns;         /* own PID namespace, with uexec's init as pid 1 (spawn.c) */
	bool net_ns;         /* own network namespace (network restricted below Landlock ABI 6, or a managed network) */
	int proxy_sock;      /* managed network: where the child sends the listeners it made in its
	                        namespace (sandbox_plan_set_proxy), or -1 */
	bool proxy_socks;    /* with it: SOCKS5 is on, so its TCP socket listens */
	bool userns;         /* non-root server: cloned into a user namespace of its own (CLONE_NEWUSER) */
	unsigned uid, gid;   /* with it: the server's ids, mapped to themselves inside */
	int uid_userns_fd;   /* --sandbox-uid: the namespace the process joins after its mounts (borrowed), or -1 */
	unsigned sandbox_uid, sandbox_gid; /* with it: the ids outside, for the private /dev/shm */
	char **reach;        /* with it: directories closed to that uid leading to a root (by depth) */
	size_t n_reach;
	char **cg_mounts;    /* with it, or ro_kernel: cgroup mount points (v1, v2), made read-only */
	/*
	 * Full-disk write: what uid 0 (or the server's uid) writes by file mode
	 * alone, no capability needed: /proc (sysctls: core_pattern runs a
	 * helper as full root; sysrq; the server's oom_score_adj from ABI 6,
	 * which shares the host's pids), /sys and every cgroup mount are made
	 * read-only in a mount namespace.
	 */
	bool ro_kernel;
	size_t n_cg_mounts;
	const struct sock_fprog *seccomp;
	/*
	 * The audit evidence source is on (evidence.h): the child gets an audit
	 * session of its own, its Landlock domain logs after exec
	 * (LOG_NEW_EXEC_ON, ABI 7) and its seccomp filter logs its errno
	 * actions (SECCOMP_FILTER_FLAG_LOG). Off: nothing reaches the kernel log.
	 */
	bool audit_log;
	int landlock_abi;
	/* What the Landlock ruleset handles (all 0: no Landlock domain at all). */
	uint64_t ll_fs, ll_net, ll_scoped;
	unsigned cap_last_cap;

	char **rw;         /* writable roots (canonical, by depth) */
	int *rw_fds;       /* child scratch: their clones */
	int *rw_idmap;     /* --sandbox-uid: per root, the user namespace its clone is idmapped with, or -1 */
	size_t n_rw;
	char **ro;         /* existing paths re-bound read-only */
	size_t n_ro;
	char **synth;      /* synthetic empty directories (registry entries) */
	size_t n_synth;
	char **deny_dir;
	size_t n_deny_dir;
	char **deny_file;
	size_t n_deny_file;
	/*
	 * Directories strictly between a writable root and a mask beneath it
	 * (deny file or directory, read-only entry), shallowest first: each is
	 * bound onto itself so that it cannot be renamed or removed (EBUSY),
	 * or a process could move a secret to a path the next start's policy
	 * no longer names.
	 */
	char **pin;
	size_t n_pin;
	unsigned *pin_phase;
	bool private_dev;
	char devpts_opts[80]; /* the private devpts's mount options (max= from the features) */
	int exe_fd;           /* the fs helper's binary (borrowed), granted by fd; or -1 */

	/*
	 * Mount phases (SANDBOX.md §3.3 precedence): a writable root beneath a
	 * read-only, synthetic or denied path re-opens it, so it is mounted
	 * after that mask, and masks beneath it after it. Phase of a writable
	 * root: 0 without a mask above it, else 1 + the highest phase of those
	 * masks; phase of a mask: that of the deepest writable root above it.
	 */
	unsigned *rw_phase, *ro_phase, *synth_phase, *deny_dir_phase, *deny_file_phase;
	int *rw_mkbase;      /* deny dir (index) whose tmpfs gets the mount point, or -1 */
	bool *deny_reopen;   /* a deny dir with writable roots beneath: tmpfs 0111, ro at the end */
	unsigned max_phase;

	struct ll_rule *ll;
	size_t n_ll;
};
