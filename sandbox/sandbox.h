/* SPDX-License-Identifier: MIT */
/*
 * Enforcing a sandbox policy on a child between fork and exec.
 *
 * Parent side (may allocate, log nothing, do I/O): sandbox_probe() once at
 * start-up; sandbox_plan_new() per process, which checks paths, creates the
 * synthetic mount points a policy needs, and fails closed when the kernel
 * lacks a feature. Child side: sandbox_child_enter() (and, in a PID
 * namespace, sandbox_child_command() in the command), async-signal-safe
 * (plain syscalls on memory prepared by the parent), which orders every
 * phase (its comment lists them). Order of the credentials in the child:
 *   mount namespace (read-only tree, writable roots cloned back read-write,
 *   protected names and read entries re-bound read-only, deny entries hidden)
 *   -> capabilities dropped (bounding set, securebits, ambient, capset)
 *   -> no_new_privs -> Landlock (built in the child, after the mounts)
 *   -> seccomp (last: it denies the mount calls used above).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "policy.h"
#include "filter.h"

struct netguard;

struct sandbox_features {
	int landlock_abi;     /* the ABI sandboxes use: the kernel's, capped (0: no Landlock) */
	int landlock_abi_kernel; /* what the kernel offers (landlock_create_ruleset) */
	bool mount_ns;        /* unshare(CLONE_NEWNS) and mount_setattr work here */
	/*
	 * uexec is not root: every sandbox is built inside a user namespace of
	 * its own, the server's uid and gid mapped to themselves (as bubblewrap
	 * maps an unprivileged caller without --uid), setgroups denied.
	 */
	bool userns;
	/*
	 * Root server with --sandbox-uid (sandbox_set_uid): sandboxed processes
	 * join this user namespace (uid and gid 0 inside are sandbox_uid and
	 * sandbox_gid outside) once their mount view is built, and each
	 * writable root is idmapped to its owner. -1: not used.
	 */
	int uid_userns_fd;
	unsigned sandbox_uid, sandbox_gid;
	/* Set by the server: why sandboxes with network access are refused (empty: they are not). */
	char network_refused[256];
	bool seccomp;
	unsigned cap_last_cap;
	struct sandbox_seccomp filters;
	/* Set by the server: sandboxes with network access start in its cgroup (netguard.h). */
	const struct netguard *guard;
	/* Set by the server: uexec-init was found, so restricted plans get a PID namespace. */
	bool pid_ns;
	/* Set by the server: the audit evidence source reads records (plan.h audit_log). */
	bool audit_log;
	/* Set by the server: PTYs per private devpts (its max=; 0: the kernel's limit). */
	unsigned max_ptys;
	/* Set by the server (sandbox_set_secrets): its own files to hide, canonical. */
	char **secrets;
	size_t n_secrets;
	char missing[320];    /* why sandboxing is unavailable (empty when it is) */
};

/*
 * Landlock levels (docs/SECURITY.md has the whole matrix). Every level from 0
 * (no Landlock) to the newest enforces the same policies; what a missing ABI
 * gave is replaced:
 *   ABI 6 signal scoping        -> the PID namespace (uexec-init as pid 1)
 *   ABI 6 abstract-socket scope -> a private network namespace (network restricted)
 *   ABI 4 TCP bind/connect      -> seccomp (no AF_INET*) + the network namespace
 *   ABI 5 device ioctl          -> nodev mounts (only the private /dev has devices)
 *   ABI 3 truncate              -> read-only mounts
 *   ABI 2 refer (reparenting)   -> at ABI 1 a Landlock filesystem domain forbids
 *                                  every cross-directory rename and link, so it is
 *                                  only built when reads are restricted
 *   ABI 1 filesystem            -> mounts, made private (no host mount arrives
 *                                  read-write later); restricted reads need it
 *                                  (refused at 0)
 */
#define SANDBOX_LANDLOCK_ABI_SCOPE 6 /* signal and abstract-socket scoping */
#define SANDBOX_LANDLOCK_ABI_NEWEST 7

/*
 * Probes the kernel (forks a short-lived child for the mount test). The
 * Landlock ABI is capped at landlock_abi_max (testing: --landlock-abi-max;
 * negative: no cap). Returns 0; see f->missing.
 */
int sandbox_probe(struct sandbox_features *f, int landlock_abi_max);

/*
 * One or two lines for the operator: which mechanism enforces what at this
 * level (f probed, f->pid_ns set). Returns buf.
 */
/*
 * Root server, --sandbox-uid: makes the user namespace sandboxed processes
 * join (uid 0 -> uid, gid 0 -> gid, setgroups denied) and checks that an
 * idmapped mount can be made with it. Returns 0, or -errno with err saying
 * what failed.
 */
int sandbox_set_uid(struct sandbox_features *f, unsigned uid, unsigned gid, char *err,
		    size_t errsz);

/*
 * Adds files of the server's own that no sandbox may read (its
 * --ws-token-file, --ws-shared-secret-file, --tls-key, --audit-log; NULL
 * entries skipped; called again after a reload, earlier ones stay): every
 * sandbox with a filesystem view, the fs helper's included, gets each as a
 * `deny` file, whatever its policy reads. Uid 0 (and a non-root server's
 * uid) opens them by mode alone, and with the token a sandbox with network
 * access drives the server through any port that forwards to it (a TLS
 * terminator), unsandboxed. Resolved now; a path that does not exist now is
 * skipped. Returns 0 or -ENOMEM.
 */
int sandbox_set_secrets(struct sandbox_features *f, const char *const *paths, size_t n);

const char *sandbox_describe(const struct sandbox_features *f, char *buf, size_t size);

/*
 * True when this host enforces root-write policies as the reference's
 * linuxRootWritePreservesDevices and
 * linuxApprovedRootWritePreservesRestrictions promise (docs/SECURITY.md
 * "Write on the root"): a sandbox at all, seccomp, mount namespaces (the
 * view of a root write with carve-outs, read-only /proc and /sys), and
 * signal scoping (Landlock ABI 6 or the PID namespace), without which
 * sandbox_plan_new refuses every plan. f probed, f->pid_ns set.
 */
bool sandbox_root_write_supported(const struct sandbox_features *f);
void sandbox_features_done(struct sandbox_features *f);

struct sandbox_plan;

/*
 * Builds what the child will apply for policy p. fs_helper_fd: -1 for a
 * client's process; for uexec's own fs helper, an O_PATH fd of the uexec
 * binary, which the helper is executed through (kept executable whatever
 * the policy reads, granted by that fd, not by a path that may have been
 * written over since; the helper's seccomp variant lets it use io_uring, and
 * its network is always off). The fd must stay open while the plan lives.
 * Returns 0 and *ret, or:
 *   -EOPNOTSUPP  the kernel or the server's privileges cannot enforce p (err names what is missing)
 *   -EINVAL      p cannot be expressed (err says why: deny globs, a protected path crossing a
 *                writable symlink, ...)
 *   -ENOMEM, or another -errno from creating a synthetic mount point.
 * p is not referenced after the call.
 */
int sandbox_plan_new(const struct sandbox_policy *p, const struct sandbox_features *f,
		     int fs_helper_fd, struct sandbox_plan **ret, char *err, size_t errsz);

/*
 * What the spawner does at the child side's stages (sandbox_child_enter()).
 * Each returns 0 or -errno with *ret_step set (NULL: no step to name); all
 * run in the child, async-signal-safe. arg is sandbox_child_enter()'s.
 */
struct sandbox_child_stages {
	/* The process's own set-up (session, terminal, stdio, limits); with or without a plan. */
	int (*process)(void *arg, const char **ret_step);
	/*
	 * A plan with its own PID namespace (this process is its init): starts
	 * the command, which calls sandbox_child_command() and then execs;
	 * returns once it has exec'd or failed (CLONE_VFORK).
	 */
	int (*start_command)(void *arg, const char **ret_step);
	/* The same plan, last: execs the namespace's init program (returns only on failure). */
	int (*exec_init)(void *arg, const char **ret_step);
};

/*
 * Child side, between clone and exec: the one entry point, which orders
 * every phase of the plan (NULL: no sandbox; only the process's own set-up
 * runs). tty_fd: the child's terminal (shown as /dev/console inside) or -1.
 * In order:
 *   1. the user namespace's maps (a plan of a non-root server: the child was
 *      cloned with CLONE_NEWUSER, sandbox_plan_userns());
 *   2. stages->process();
 *   3. namespaces and mounts (before the caller's chdir: they replace the
 *      directories cwd may lie in);
 *   4. without a PID namespace: the credentials (capabilities,
 *      no_new_privs, Landlock, seccomp); returns 0 and the caller execs;
 *      with one: stages->start_command() (the command takes its
 *      credentials), this init's own phase (a non-root server's init keeps
 *      one inert capability), stages->exec_init(), which does not return
 *      on success.
 * Returns 0 or -errno; *ret_step names the failing step (a static string,
 * or NULL for a stage that names none).
 */
int sandbox_child_enter(const struct sandbox_plan *plan, int tty_fd,
			const struct sandbox_child_stages *stages, void *arg, const char **ret_step);
/* The command of a plan with a PID namespace (start_command's child): its credentials. */
int sandbox_child_command(const struct sandbox_plan *plan, const char **ret_step);

/* A non-root server's plan: the child is cloned with CLONE_NEWUSER (sandbox_child_enter()). */
bool sandbox_plan_userns(const struct sandbox_plan *plan);

/*
 * Managed network (NETWORK.md): the process gets a network namespace of its
 * own whose only interface is loopback, and in it, before anything of the
 * command runs, the child makes the proxy's sockets and sends them over sock
 * (one end of a SOCK_SEQPACKET pair, borrowed: the caller keeps and closes
 * it) as one message with SANDBOX_PROXY_NFDS fds (SCM_RIGHTS), in the order
 * below. Nothing else is reachable from the namespace, so every connection
 * the command makes goes through them. The ports are fixed: the namespace
 * is the command's alone, so they are always free, and the command's
 * environment names them before it starts. The parent takes the sockets
 * with sandbox_proxy_receive() once the spawn returned.
 */
#define SANDBOX_PROXY_HTTP_PORT 3128  /* HTTP proxy (absolute form and CONNECT), 127.0.0.1 */
#define SANDBOX_PROXY_SOCKS_PORT 1080 /* SOCKS5, TCP and UDP, 127.0.0.1 */
enum {
	SANDBOX_PROXY_HTTP,      /* listening TCP socket */
	SANDBOX_PROXY_SOCKS,     /* listening TCP socket */
	SANDBOX_PROXY_SOCKS_UDP, /* bound UDP socket (SOCKS5 UDP ASSOCIATE relay) */
	SANDBOX_PROXY_NFDS,
};
/*
 * The managed network's socket of plan's child (sock: the child's end). With
 * socks false the SOCKS5 TCP socket is bound but never listens, so a connect
 * to its port is refused from the command's first instruction on (a listener
 * the server closed later would take a connection and reset it).
 */
void sandbox_plan_set_proxy(struct sandbox_plan *plan, int sock, bool socks);
/* Returns 0 with the sockets (CLOEXEC, non-blocking) in fds[SANDBOX_PROXY_*], or -errno. */
int sandbox_proxy_receive(int sock, int fds[SANDBOX_PROXY_NFDS]);

/* True when the process runs as the --sandbox-uid uid on the host (sandbox_set_uid). */
bool sandbox_plan_sandbox_uid(const struct sandbox_plan *plan);

/*
 * True when the process must be cloned into a new PID namespace
 * (CLONE_NEWPID) and run as that namespace's init + the command (spawn.c).
 */
bool sandbox_plan_pid_ns(const struct sandbox_plan *plan);

/* Parent: the sandboxed process is gone; removes synthetic mount points no one else uses. */
void sandbox_plan_free(struct sandbox_plan *plan);

/*
 * The cgroup the process must be cloned into (clone3 CLONE_INTO_CGROUP), or
 * -1: the listener guard's, for a plan with network access.
 */
int sandbox_plan_cgroup_fd(const struct sandbox_plan *plan);

/*
 * For a plan that restricts the filesystem: the writable root through which
 * the process could write, replace or remove path (a canonical path at or
 * beneath that root, with no read-only, protected or denied mount nearer to
 * it), or NULL. Full-disk-write plans have no roots (they may write anywhere).
 */
const char *sandbox_plan_writable_root(const struct sandbox_plan *plan, const char *path);

/*
 * The reference's denial heuristic (SANDBOX.md §1) for a sandboxed process
 * that exited with exit_code; texts[i][0..lens[i]) are the outputs it looks at
 * (stdout, stderr and the aggregate of all chunks).
 */
bool sandbox_likely_denied(int exit_code, const char *const *texts, const size_t *lens, size_t n);
