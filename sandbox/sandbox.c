/* SPDX-License-Identifier: MIT */
/*
 * Sandbox enforcement: the per-process plan (parent side), built here from
 * the host's features (probe.c), the mount side (plan-mounts.c) and
 * --sandbox-uid's identity (identity.c); apply.c applies it between clone
 * and exec, denied.c holds the denial heuristic. See sandbox.h for the order.
 *
 * Why a mount namespace and Landlock both: Landlock cannot keep `.git` under
 * a writable root read-only (its grants are hierarchical) nor hide a denied
 * path under a readable one, and its refusals read "Permission denied" where
 * the reference's bubblewrap gives "Read-only file system". The mount
 * namespace does those; Landlock is the second wall for what mounts do not
 * cover: paths reached through /proc/<pid>/root, writes to /proc/sys and /sys
 * (uid 0 may write 0644 sysctls without any capability), raw device nodes,
 * TCP, and signals to processes outside the sandbox (scoping, ABI 6).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/openat2.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "glob.h"
#include "landlock.h"
#include "evidence.h"
#include "netguard.h"
#include "list.h"
#include "log.h"
#include "macro.h"
#include "plan.h"
#include "sandbox.h"
#include "synth.h"
#include "plan-build.h"


/* Platform read roots of the "minimal" special path (SANDBOX.md §3.3). */
static const char *const minimal_roots[] = {
	"/bin", "/sbin", "/usr", "/etc", "/lib", "/lib64", "/nix/store", "/run/current-system/sw",
};


/* Device paths every sandboxed process may open for reading and writing. */
static const char *const rw_devices[] = {
	"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty",
	"/dev/console", "/dev/ptmx", "/dev/pts", "/dev/shm",
};

/* Kept by full-disk-write sandboxes: file access as root, nothing else. */
#define FULL_WRITE_CAPS                                                                        \
	((1ULL << CAP_CHOWN) | (1ULL << CAP_DAC_OVERRIDE) | (1ULL << CAP_DAC_READ_SEARCH) |      \
	 (1ULL << CAP_FOWNER))



static int sort_deny_files(struct sandbox_plan *pl)
{
	size_t n = pl->n_deny_file, k = 0;
	char **v;
	unsigned *ph;

	if (n < 2)
		return 0;
	v = malloc(n * sizeof(*v));
	ph = malloc(n * sizeof(*ph));
	if (!v || !ph) {
		free(v);
		free(ph);
		return -ENOMEM;
	}
	for (unsigned p = 0; p <= pl->max_phase; p++)
		for (size_t i = 0; i < n; i++)
			if (pl->deny_file_phase[i] == p) {
				v[k] = pl->deny_file[i];
				ph[k++] = p;
			}
	memcpy(pl->deny_file, v, n * sizeof(*v));
	memcpy(pl->deny_file_phase, ph, n * sizeof(*ph));
	free(v);
	free(ph);
	return 0;
}

int sandbox_plan_cgroup_fd(const struct sandbox_plan *plan)
{
	return plan ? plan->cgroup_fd : -1;
}

/* The deepest of v[0..n) at or above path: its number of components + 1 ("/": 1), or 0. */
static size_t deepest_at_or_above(const char *path, char *const *v, size_t n)
{
	size_t best = 0;

	for (size_t i = 0; i < n; i++)
		if (strcmp(path, v[i]) == 0 || sandbox_beneath(path, v[i]))
			best = MAX(best, strcmp(v[i], "/") ? sandbox_path_depth(v[i]) + 1 : 1);
	return best;
}

const char *sandbox_plan_writable_root(const struct sandbox_plan *plan, const char *path)
{
	size_t masked, best = 0;
	const char *root = NULL;

	if (!plan || !plan->restrict_fs || !path)
		return NULL;
	for (size_t i = 0; i < plan->n_rw; i++) {
		size_t d = deepest_at_or_above(path, &plan->rw[i], 1);

		if (d > best) {
			best = d;
			root = plan->rw[i];
		}
	}
	/* A mount at least as deep as that root covers path: read-only there. */
	masked = MAX(deepest_at_or_above(path, plan->ro, plan->n_ro),
		     deepest_at_or_above(path, plan->synth, plan->n_synth));
	masked = MAX(masked, deepest_at_or_above(path, plan->deny_dir, plan->n_deny_dir));
	masked = MAX(masked, deepest_at_or_above(path, plan->deny_file, plan->n_deny_file));
	return root && masked < best ? root : NULL;
}

bool sandbox_root_write_supported(const struct sandbox_features *f)
{
	return !f->missing[0] && f->seccomp && f->mount_ns &&
	       (f->landlock_abi >= SANDBOX_LANDLOCK_ABI_SCOPE || f->pid_ns);
}

/* What this host must offer for p at all (-EOPNOTSUPP with err set, or 0). */
static int plan_check_host(const struct sandbox_policy *p, const struct sandbox_features *f,
			   bool fs_helper, bool root_write, char *err, size_t errsz)
{
	if (f->missing[0] || !f->seccomp || ((!p->full_write || root_write) && !f->mount_ns)) {
		snprintf(err, errsz, "this host lacks %s", f->missing[0] ? f->missing : "mount namespaces");
		return -EOPNOTSUPP;
	}
	/*
	 * Below ABI 6 nothing but a PID namespace keeps uid 0 from signalling
	 * the server and every other root process. The fs helper is uexec's
	 * own code running one request: it signals no one.
	 */
	if (!fs_helper && f->landlock_abi < SANDBOX_LANDLOCK_ABI_SCOPE && !f->pid_ns) {
		snprintf(err, errsz,
			 "signal scoping needs Landlock ABI %d or a PID namespace: this kernel offers "
			 "Landlock ABI %d and uexec-init was not found",
			 SANDBOX_LANDLOCK_ABI_SCOPE, f->landlock_abi);
		return -EOPNOTSUPP;
	}
	/* The mount view binds everything readable: only Landlock narrows reads. */
	if (!p->full_read && !p->full_write && f->landlock_abi < 1) {
		snprintf(err, errsz,
			 "restricted read access (minimal or explicit read entries without root) needs "
			 "Landlock filesystem rules: this kernel offers none (Landlock ABI 0)");
		return -EOPNOTSUPP;
	}
	/*
	 * Without the listener guard (root only), a sandbox with network access
	 * could connect to this server and start an unsandboxed process.
	 */
	if (p->network && !p->managed_network && !fs_helper && f->network_refused[0]) {
		snprintf(err, errsz, "%s", f->network_refused);
		return -EOPNOTSUPP;
	}
	return 0;
}

/* The parts of every plan: identity, network, seccomp, Landlock's scopes. */
static int plan_common(struct sandbox_plan *pl, const struct sandbox_policy *p,
		       const struct sandbox_features *f, int fs_helper_fd, char *err, size_t errsz)
{
	bool fs_helper = fs_helper_fd >= 0;
	int r;

	pl->exe_fd = fs_helper_fd;
	pl->userns = f->userns;
	pl->uid_userns_fd = f->uid_userns_fd;
	pl->sandbox_uid = f->sandbox_uid;
	pl->sandbox_gid = f->sandbox_gid;
	pl->uid = (unsigned)geteuid();
	pl->gid = (unsigned)getegid();
	pl->proxy_sock = -1;
	/*
	 * An enforced managed network replaces the network policy: its
	 * namespace holds only the proxy, whatever `network` says (the
	 * reference's proxy is reachable with `restricted` too), so the
	 * command gets the proxied filter, never the one without sockets.
	 */
	pl->restrict_net = (!p->network && !p->managed_network) || fs_helper;
	/* A managed network's namespace does not reach this server: no listener guard needed. */
	pl->cgroup_fd = pl->restrict_net || p->managed_network || !f->mount_ns
				? -1 : netguard_cgroup_fd(f->guard);
	/* Every sandbox: its process stays in its cgroup (netguard.h), guarded or not. */
	if (f->mount_ns && (r = netguard_cgroup_mounts(&pl->cg_mounts, &pl->n_cg_mounts)) < 0) {
		snprintf(err, errsz, "listing cgroup mounts: %s", strerror(-r));
		return r;
	}
	pl->seccomp = fs_helper		 ? &f->filters.fs_helper
		      : pl->restrict_net	 ? &f->filters.restricted
		      : !p->managed_network	 ? &f->filters.open_net
		      : p->managed_all_unix ? &f->filters.proxied_all_unix
					 : &f->filters.proxied;
	pl->landlock_abi = f->landlock_abi;
	pl->audit_log = f->audit_log && !fs_helper;
	pl->cap_last_cap = f->cap_last_cap;
	/*
	 * Abstract unix sockets are per network namespace: below ABI 6 a
	 * private one is their only scope (seccomp leaves sendmsg), and it
	 * backs TCP too (as bubblewrap --unshare-net). Not for the helper.
	 */
	pl->net_ns = (pl->restrict_net && !fs_helper && f->landlock_abi < SANDBOX_LANDLOCK_ABI_SCOPE) ||
		     (p->managed_network && !fs_helper);
	if (f->landlock_abi >= 4 && pl->restrict_net)
		pl->ll_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
	if (f->landlock_abi >= SANDBOX_LANDLOCK_ABI_SCOPE)
		pl->ll_scoped = LL_SCOPE_SIGNAL | (pl->restrict_net ? LL_SCOPE_ABSTRACT_UNIX_SOCKET : 0);
	return 0;
}

/*
 * Full-disk write (SANDBOX.md §3.1 stage 1): no filesystem view, but
 * still no capabilities beyond file access (root's other powers would
 * reach /proc/<server>/mem or load BPF), Landlock scoping against
 * signals and TCP, and seccomp. With carve-outs (deny or read
 * entries, deny globs) plan_view builds a view instead.
 */
static int plan_full_write(struct sandbox_plan *pl, const struct sandbox_features *f,
			   bool fs_helper, char *err, size_t errsz)
{
	int r;

	pl->drop_caps = true;
	/*
	 * Non-root, or --sandbox-uid: root's file access is not ours to
	 * keep (caps of the user namespace only); it writes what its uid may.
	 */
	pl->keep_caps = f->userns || f->uid_userns_fd >= 0 ? 0 : FULL_WRITE_CAPS;
	/* Below ABI 6 its signals are scoped by a PID namespace only. */
	pl->pid_ns = f->landlock_abi < SANDBOX_LANDLOCK_ABI_SCOPE && !fs_helper;
	/*
	 * Host uid 0 writes root's 0644 kernel files by mode alone, no
	 * capability: /proc/sys/kernel/core_pattern (`|prog` runs prog as
	 * full root), sysrq, another root process's /proc/<pid>/oom_score_adj
	 * (the server's), /sys, cgroup.procs and limits of any cgroup.
	 * As its own uid (non-root uexec: the server's), /proc/<server>'s
	 * oom_score_adj and coredump_filter open by mode too from ABI 6.
	 * Read-only in a mount namespace of its own, or refused.
	 */
	pl->ro_kernel = true;
	if (!f->mount_ns) {
		snprintf(err, errsz, "full-disk write needs a mount namespace to keep /proc, "
			 "/sys and the cgroup mounts read-only");
		return -EOPNOTSUPP;
	}
	if (!pl->n_cg_mounts &&
	    (r = netguard_cgroup_mounts(&pl->cg_mounts, &pl->n_cg_mounts)) < 0) {
		snprintf(err, errsz, "listing cgroup mounts: %s", strerror(-r));
		return r;
	}
	return 0;
}

/* Writable roots: existing ones, canonical (a symlinked root binds its target). */
static int plan_writable_roots(struct sandbox_plan *pl, const struct sandbox_policy *p,
			       bool root_write)
{
	char canon[PATH_MAX];
	struct stat st;
	int r = 0;

	for (size_t i = 0; i < p->n_rules && r >= 0; i++) {
		const struct sandbox_rule *ru = &p->rules[i];

		if (ru->access != SANDBOX_WRITE || sandbox_policy_access(p, ru->path) != SANDBOX_WRITE)
			continue;
		/*
		 * /.git and the other names granted with a root write are the
		 * root's, writable with it: no root of their own, whose bind
		 * would follow a symlink there to a denied target and re-open it.
		 */
		if (root_write && sandbox_root_name(ru->path))
			continue;
		if (!realpath(ru->path, canon) || stat(canon, &st) < 0)
			continue; /* missing writable roots are skipped, as the reference does */
		r = sandbox_strv_push(&pl->rw, &pl->n_rw, canon);
	}
	if (r < 0)
		return r;
	if (pl->n_rw > 1)
		qsort(pl->rw, pl->n_rw, sizeof(char *), sandbox_cmp_depth);
	pl->rw_fds = calloc(pl->n_rw ? pl->n_rw : 1, sizeof(int));
	pl->rw_idmap = malloc((pl->n_rw ? pl->n_rw : 1) * sizeof(int));
	for (size_t w = 0; pl->rw_idmap && w < pl->n_rw; w++)
		pl->rw_idmap[w] = -1;
	return !pl->rw_fds || !pl->rw_idmap ? -ENOMEM : 0;
}

/*
 * --sandbox-uid: each writable root idmapped to its owner, so that what
 * the command creates there is the owner's on disk (and the owner's
 * files are the command's). Not a sticky world-writable directory
 * (/tmp): anyone creates there, and its owner's (root's) files must
 * stay foreign; files created there are the sandbox uid's.
 */
static int plan_idmaps(struct sandbox_plan *pl, const struct sandbox_features *f, char *err,
		       size_t errsz)
{
	struct stat st;
	int r;

	for (size_t w = 0; w < pl->n_rw; w++) {
		const char *what = "";

		if (stat(pl->rw[w], &st) < 0) {
			r = -errno;
			snprintf(err, errsz, "--sandbox-uid: stat %s: %s", pl->rw[w], strerror(-r));
			return r;
		}
		if (S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX) && (st.st_mode & S_IWOTH))
			continue;
		/* Nor the root: every host file would become its owner's (root's). */
		if (strcmp(pl->rw[w], "/") == 0)
			continue;
		r = sandbox_idmap_get(f, (unsigned)st.st_uid, (unsigned)st.st_gid, &what);
		if (r < 0) {
			snprintf(err, errsz,
				 "--sandbox-uid: a user namespace to idmap the writable root %s to its "
				 "owner %u:%u: %s: %s",
				 pl->rw[w], (unsigned)st.st_uid, (unsigned)st.st_gid, what, strerror(-r));
			return r;
		}
		pl->rw_idmap[w] = r;
		r = sandbox_idmap_check(pl->rw[w], pl->rw_idmap[w]);
		if (r < 0) {
			snprintf(err, errsz,
				 "--sandbox-uid: the writable root %s cannot be idmapped to its owner "
				 "(mount_setattr MOUNT_ATTR_IDMAP: %s; does its filesystem support "
				 "idmapped mounts?)",
				 pl->rw[w], strerror(-r));
			r = -EOPNOTSUPP;
			return r;
		}
	}
	return 0;
}

/* Under each writable root: .git/.agents/.codex and every read entry stay read-only. */
static int plan_protected(struct sandbox_plan *pl, const struct sandbox_policy *p, char *err,
			  size_t errsz)
{
	char canon[PATH_MAX];
	struct stat st;
	int r = 0;

	for (size_t w = 0; w < pl->n_rw && r >= 0; w++) {
		if (stat(pl->rw[w], &st) < 0 || !S_ISDIR(st.st_mode))
			continue; /* a writable file has no metadata names under it */
		bool root = strcmp(pl->rw[w], "/") == 0;

		for (size_t k = 0; k < ELEMENTSOF(sandbox_protected_names) && r >= 0; k++) {
			char path[PATH_MAX];

			if (root && sandbox_policy_grants_root_name(p, sandbox_protected_names[k]))
				continue;
			snprintf(path, sizeof(path), "%s/%s", root ? "" : pl->rw[w],
				 sandbox_protected_names[k]);
			r = sandbox_root_protect(pl, root, path, err, errsz);
		}
	}
	for (size_t i = 0; i < p->n_rules && r >= 0; i++) {
		const struct sandbox_rule *ru = &p->rules[i];
		const char *path = ru->path;
		bool inside = false;

		if (ru->access == SANDBOX_WRITE || sandbox_policy_access(p, ru->path) != ru->access)
			continue;
		/* Compare and bind the real location: the workspace may be reached through a link. */
		if (realpath(ru->path, canon))
			path = canon;
		for (size_t w = 0; w < pl->n_rw; w++)
			inside |= sandbox_beneath(path, pl->rw[w]);
		if (!ru->skip_if_missing && lstat(path, &st) < 0 && errno == ENOENT &&
		    sandbox_first_missing(path, canon) == 0) {
			/*
			 * A missing read-only or deny path inside a writable root: mask
			 * its first missing component with an empty read-only directory,
			 * so the command cannot create it (SANDBOX.md §3.3 steps 4-5).
			 */
			for (size_t w = 0; w < pl->n_rw; w++)
				if (sandbox_beneath(canon, pl->rw[w])) {
					r = sandbox_root_protect(pl, strcmp(pl->rw[w], "/") == 0, canon, err, errsz);
					break;
				}
			continue;
		}
		if (ru->access == SANDBOX_READ && inside)
			r = sandbox_plan_protect(pl, path, false, err, errsz);
		/*
		 * Denied "/" (ties: deny wins over a root grant): no mask, a mount
		 * on "/" would not cover the process's root; nothing but narrower
		 * entries grants reads (Landlock, refused without it), the tree
		 * is read-only.
		 */
		else if (ru->access == SANDBOX_DENY && strcmp(path, "/") != 0 && lstat(path, &st) == 0)
			r = S_ISDIR(st.st_mode) ? sandbox_strv_push(&pl->deny_dir, &pl->n_deny_dir, path)
						: sandbox_strv_push(&pl->deny_file, &pl->n_deny_file, path);
	}
	return r;
}

/* Devices: a private /dev, and a devpts of its own, bounded. */
static void plan_devices(struct sandbox_plan *pl, const struct sandbox_features *f)
{
	struct stat st;

	pl->private_dev = stat("/dev", &st) == 0 && S_ISDIR(st.st_mode);
	/* max=: one sandbox must not drain the host's PTY pool (kernel.pty.max). */
	if (f->max_ptys)
		snprintf(pl->devpts_opts, sizeof(pl->devpts_opts),
			 "newinstance,ptmxmode=0666,mode=0620,max=%u", f->max_ptys);
	else
		snprintf(pl->devpts_opts, sizeof(pl->devpts_opts),
			 "newinstance,ptmxmode=0666,mode=0620");
}

/* Landlock: read where the policy reads, everything under writable roots, devices. */
static int plan_landlock(struct sandbox_plan *pl, const struct sandbox_policy *p, bool fs_helper)
{
	int r = 0;

	if (p->full_read) {
		r = sandbox_ll_push(pl, "/", LL_FS_READ);
	} else {
		/* Read entries in effect only: one a deny at the same path overrides grants nothing. */
		for (size_t i = 0; i < p->n_rules && r >= 0; i++)
			if (p->rules[i].access == SANDBOX_READ &&
			    sandbox_policy_access(p, p->rules[i].path) == SANDBOX_READ)
				r = sandbox_ll_push(pl, p->rules[i].path, LL_FS_READ);
		/* The helper must load itself and its libraries whatever the policy reads. */
		for (size_t i = 0; (p->minimal_read || fs_helper) && i < ELEMENTSOF(minimal_roots) &&
				   r >= 0;
		     i++)
			r = sandbox_ll_push(pl, minimal_roots[i], LL_FS_READ);
		/* The helper's binary itself: granted through exe_fd in the child (apply.c). */
	}
	for (size_t w = 0; w < pl->n_rw && r >= 0; w++)
		r = sandbox_ll_push(pl, pl->rw[w], ll_fs_all(pl->landlock_abi));
	for (size_t i = 0; i < ELEMENTSOF(rw_devices) && r >= 0; i++)
		r = sandbox_ll_push(pl, rw_devices[i],
				    LL_FS_READ_FILE | LL_FS_WRITE_FILE | LL_FS_READ_DIR |
					    (pl->landlock_abi >= 3 ? LL_FS_TRUNCATE : 0) |
					    (pl->landlock_abi >= 5 ? LL_FS_IOCTL_DEV : 0) |
					    (strcmp(rw_devices[i], "/dev/shm") == 0
						     ? ll_fs_all(pl->landlock_abi)
						     : 0));
	return r;
}

/* A filesystem view: the roots, their carve-outs, the mount phases, Landlock. */
static int plan_view(struct sandbox_plan *pl, const struct sandbox_policy *p,
		     const struct sandbox_features *f, bool fs_helper, bool root_write, char *err,
		     size_t errsz)
{
	int r;

	pl->restrict_fs = true;
	pl->drop_caps = true;
	/*
	 * A root write with carve-outs (an approved command's policy,
	 * SECURITY.md "Write on the root"): every capability dropped as in
	 * any view (the reference's bubblewrap drops them all), and the
	 * kernel's files kept read-only as for a bare root write: the tree
	 * is not.
	 */
	pl->root_rw = root_write;
	pl->ro_kernel = root_write;
	/* Not for the fs helper: one short request, nothing to hide from it. */
	pl->pid_ns = f->pid_ns && !fs_helper;
	/*
	 * Landlock on the filesystem from ABI 2 on; at ABI 1 only where reads are
	 * restricted (it is the only way to narrow them): an ABI 1 domain
	 * refuses every cross-directory rename or link (EXDEV), which breaks git.
	 */
	if (f->landlock_abi >= 2 || (f->landlock_abi == 1 && !p->full_read))
		pl->ll_fs = ll_fs_all(f->landlock_abi);

	r = plan_writable_roots(pl, p, root_write);
	if (r >= 0 && f->uid_userns_fd >= 0)
		r = plan_idmaps(pl, f, err, errsz);
	if (r >= 0)
		r = plan_protected(pl, p, err, errsz);
	if (r >= 0)
		r = sandbox_plan_secrets(pl, f);
	if (r >= 0)
		r = sandbox_plan_deny_globs(pl, p, err, errsz);
	if (r >= 0 && f->uid_userns_fd >= 0)
		r = sandbox_plan_reach_roots(pl, p->cwd, err, errsz);
	if (r >= 0)
		r = sandbox_plan_phases(pl);
	if (r >= 0)
		r = sort_deny_files(pl);
	if (r >= 0)
		r = sandbox_plan_pins(pl, err, errsz);
	if (r < 0)
		return r;
	plan_devices(pl, f);
	return plan_landlock(pl, p, fs_helper);
}

int sandbox_plan_new(const struct sandbox_policy *p, const struct sandbox_features *f,
		     int fs_helper_fd, struct sandbox_plan **ret, char *err, size_t errsz)
{
	bool fs_helper = fs_helper_fd >= 0;
	/* A root write with carve-outs: a filesystem view whose root is writable. */
	bool root_write = sandbox_policy_root_write_restricted(p);
	struct sandbox_plan *pl;
	int r;

	err[0] = 0;
	r = plan_check_host(p, f, fs_helper, root_write, err, errsz);
	if (r < 0)
		return r;
	pl = calloc(1, sizeof(*pl));
	if (!pl)
		return -ENOMEM;
	r = plan_common(pl, p, f, fs_helper_fd, err, errsz);
	if (r >= 0)
		r = p->full_write && !root_write ? plan_full_write(pl, f, fs_helper, err, errsz)
						 : plan_view(pl, p, f, fs_helper, root_write, err, errsz);
	if (r < 0) {
		sandbox_plan_free(pl);
		return r;
	}
	*ret = pl;
	return 0;
}

void sandbox_plan_set_proxy(struct sandbox_plan *plan, int sock, bool socks)
{
	plan->proxy_sock = sock;
	plan->proxy_socks = socks;
}

int sandbox_proxy_receive(int sock, int fds[SANDBOX_PROXY_NFDS])
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(SANDBOX_PROXY_NFDS * sizeof(int))];
	} cm;
	char tag;
	struct iovec iov = { &tag, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
			     .msg_controllen = sizeof(cm.buf) };
	struct cmsghdr *h;
	size_t k;
	ssize_t n;
	bool ok;

	/* Sent before the child's exec, which the spawn waited for (CLONE_VFORK): never blocks. */
	do
		n = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN ? -EPROTO : -errno;
	h = CMSG_FIRSTHDR(&mh);
	if (!h || h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
		return -EPROTO;
	k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
	ok = n == 1 && tag == 'P' && k == SANDBOX_PROXY_NFDS && !(mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC));
	for (size_t i = 0; i < k && i < SANDBOX_PROXY_NFDS; i++) {
		memcpy(&fds[i], CMSG_DATA(h) + i * sizeof(int), sizeof(int));
		if (fcntl(fds[i], F_SETFL, O_NONBLOCK) < 0)
			ok = false;
	}
	if (!ok) {
		/* Only our own child writes here; still, nothing received stays open. */
		for (size_t i = 0; i < k && i < SANDBOX_PROXY_NFDS; i++)
			close(fds[i]);
		return -EPROTO;
	}
	return 0;
}

void sandbox_plan_free(struct sandbox_plan *pl)
{
	if (!pl)
		return;
	for (size_t i = 0; i < pl->n_synth; i++)
		sandbox_synth_put(pl->synth[i]);
	for (size_t i = 0; pl->rw_idmap && i < pl->n_rw; i++)
		if (pl->rw_idmap[i] >= 0)
			close(pl->rw_idmap[i]);
	free(pl->rw_idmap);
	sandbox_strv_clear(pl->rw, pl->n_rw);
	free(pl->rw_fds);
	sandbox_strv_clear(pl->ro, pl->n_ro);
	sandbox_strv_clear(pl->synth, pl->n_synth);
	sandbox_strv_clear(pl->deny_dir, pl->n_deny_dir);
	sandbox_strv_clear(pl->deny_file, pl->n_deny_file);
	sandbox_strv_clear(pl->cg_mounts, pl->n_cg_mounts);
	sandbox_strv_clear(pl->reach, pl->n_reach);
	free(pl->rw_phase);
	free(pl->ro_phase);
	free(pl->synth_phase);
	free(pl->deny_dir_phase);
	free(pl->deny_file_phase);
	sandbox_strv_clear(pl->pin, pl->n_pin);
	free(pl->pin_phase);
	free(pl->rw_mkbase);
	free(pl->deny_reopen);
	for (size_t i = 0; i < pl->n_ll; i++)
		free(pl->ll[i].path);
	free(pl->ll);
	free(pl);
}
