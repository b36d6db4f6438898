/* SPDX-License-Identifier: MIT */
/*
 * The child side of a sandbox plan: namespaces and mounts, capabilities,
 * no_new_privs, Landlock and seccomp, applied between clone and exec.
 * Everything here is async-signal-safe (the child may share the server's
 * memory): no malloc, no stdio beyond snprintf into stack buffers.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stddef.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "landlock.h"
#include "macro.h"
#include "plan.h"
#include "sandbox.h"
#include "apply-mounts.h"

#ifndef SECBIT_NOROOT
#include <linux/securebits.h>
#endif


static int set_caps(uint64_t eff_perm, uint64_t inh)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };

	d[0].effective = d[0].permitted = (uint32_t)eff_perm;
	d[1].effective = d[1].permitted = (uint32_t)(eff_perm >> 32);
	d[0].inheritable = (uint32_t)inh;
	d[1].inheritable = (uint32_t)(inh >> 32);
	return syscall(SYS_capset, &h, d) < 0 ? -errno : 0;
}

static int drop_capabilities(const struct sandbox_plan *pl, const char **step)
{
	unsigned long bits = SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED |
			     SECBIT_KEEP_CAPS_LOCKED;

	*step = "clearing ambient capabilities";
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -errno;
	/*
	 * For uid 0, exec grants exactly the bounding set: it is the one place
	 * that decides what survives (all gone, or the file-access set that a
	 * full-disk-write sandbox keeps).
	 */
	*step = "dropping the capability bounding set";
	for (unsigned c = 0; c <= pl->cap_last_cap; c++)
		if (!(pl->keep_caps & (1ULL << c)) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 &&
		    errno != EINVAL)
			return -errno;
	/* Nothing kept: root gets nothing back at exec nor across setuid, ever. */
	if (!pl->keep_caps)
		bits |= SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
			SECBIT_NO_SETUID_FIXUP_LOCKED;
	*step = "setting securebits";
	if (prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) < 0)
		return -errno;
	*step = "clearing capabilities";
	return set_caps(pl->keep_caps, 0);
}

/*
 * Builds the Landlock ruleset (paths opened with the caller's credentials:
 * before --sandbox-uid's switch, a path its uid cannot reach is still
 * granted as root grants it). *ret: the ruleset fd, or -1 when this level
 * handles nothing (ABI 0, or ABI 1-3 without a filesystem ruleset).
 */
static int landlock_build(const struct sandbox_plan *pl, int *ret, const char **step)
{
	struct ll_ruleset_attr attr = {
		.handled_access_fs = pl->ll_fs,
		.handled_access_net = pl->ll_net,
		.scoped = pl->ll_scoped,
	};
	/* The attribute as the plan's ABI knows it: fs only before 4, no scope before 6. */
	size_t size = pl->landlock_abi >= 6   ? sizeof(attr)
		      : pl->landlock_abi >= 4 ? offsetof(struct ll_ruleset_attr, scoped)
					      : offsetof(struct ll_ruleset_attr, handled_access_net);
	int rs, r = 0;

	*ret = -1;
	if (!attr.handled_access_fs && !attr.handled_access_net && !attr.scoped)
		return 0;
	*step = "creating the Landlock ruleset";
	rs = ll_create_ruleset(&attr, size, 0);
	if (rs < 0)
		return -errno;
	*step = "adding a Landlock rule";
	for (size_t i = 0; i < pl->n_ll && attr.handled_access_fs; i++) {
		struct ll_path_beneath_attr pb;
		int fd = open(pl->ll[i].path, O_PATH | O_CLOEXEC);

		if (fd < 0) {
			if (errno == ENOENT)
				continue; /* e.g. no /dev/shm, a minimal root this system lacks */
			r = -errno;
			break;
		}
		pb.parent_fd = fd;
		pb.allowed_access = pl->ll[i].access & attr.handled_access_fs;
		/* Directory-only rights on a file are refused: keep what applies. */
		if (ll_add_rule(rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0) {
			pb.allowed_access &= LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE |
					     LL_FS_TRUNCATE | LL_FS_IOCTL_DEV;
			if (ll_add_rule(rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
				r = -errno;
		}
		close(fd);
		if (r < 0)
			break;
	}
	/*
	 * The fs helper's binary, by the fd it is executed through: the path may
	 * hold another file by now (that one is not granted).
	 */
	if (r >= 0 && pl->exe_fd >= 0 && attr.handled_access_fs) {
		struct ll_path_beneath_attr pb = {
			.allowed_access = LL_FS_EXECUTE | LL_FS_READ_FILE,
			.parent_fd = pl->exe_fd,
		};

		*step = "adding the Landlock rule of the fs helper";
		if (ll_add_rule(rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
			r = -errno;
	}
	if (r < 0) {
		close(rs);
		return r;
	}
	*ret = rs;
	return 0;
}

/*
 * --sandbox-uid: leaves host uid 0 for the namespace the server made (uid
 * and gid 0 inside are the sandbox's ids outside). After the mounts, which
 * root built in namespaces the host's user namespace owns, so the process
 * can never change them (it holds no capability over them). Root's
 * supplementary groups go first: once inside they could not be dropped
 * (setgroups is denied there) and would still open root-group files.
 */
static int join_uid_userns(const struct sandbox_plan *pl, const char **step)
{
	if (pl->uid_userns_fd < 0)
		return 0;
	/* Raw syscalls: glibc's set*id wrappers would signal the server's threads (CLONE_VM). */
	*step = "dropping supplementary groups (--sandbox-uid)";
	if (syscall(SYS_setgroups, 0, NULL) < 0)
		return -errno;
	*step = "joining the --sandbox-uid user namespace (setns)";
	if (setns(pl->uid_userns_fd, CLONE_NEWUSER) < 0)
		return -errno;
	*step = "setresgid(0) in the --sandbox-uid user namespace";
	if (syscall(SYS_setresgid, 0, 0, 0) < 0)
		return -errno;
	*step = "setresuid(0) in the --sandbox-uid user namespace";
	if (syscall(SYS_setresuid, 0, 0, 0) < 0)
		return -errno;
	return 0;
}

/* Writes s to a /proc file of this process (no stdio: async-signal-safe). */
static int write_proc(const char *path, const char *s);

/*
 * Audit evidence: a session of its own for the sandboxed tree. Writing the
 * loginuid starts a new audit session (CAP_AUDIT_CONTROL), inherited across
 * fork and exec and never reused, which records carry as ses= (evidence.h).
 * The login uid stays what it was; an unset one becomes the server's uid.
 * Best effort: without it the server attributes by pid (and says so).
 */
static void new_audit_session(const struct sandbox_plan *pl)
{
	char buf[16], out[16];
	int fd = open("/proc/self/loginuid", O_RDONLY | O_CLOEXEC), i = (int)sizeof(out) - 1;
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	unsigned long v = 0;

	if (fd >= 0)
		close(fd);
	for (ssize_t k = 0; k < n && buf[k] >= '0' && buf[k] <= '9'; k++)
		v = v * 10 + (unsigned long)(buf[k] - '0');
	if (n <= 0 || v >= 4294967295UL)
		v = pl->uid;
	out[i] = 0;
	do {
		out[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v && i > 0);
	(void)write_proc("/proc/self/loginuid", out + i);
}

/*
 * Managed network, in the new network namespace (still with the capabilities
 * of its owner): loopback up, then the proxy's sockets on their fixed ports
 * (sandbox.h), sent to the server. They are close-on-exec here: the command
 * never holds them.
 */
static int proxy_listeners(const struct sandbox_plan *pl, const char **step)
{
	static const struct {
		int type;
		uint16_t port;
	} socks[SANDBOX_PROXY_NFDS] = {
		[SANDBOX_PROXY_HTTP] = { SOCK_STREAM, SANDBOX_PROXY_HTTP_PORT },
		[SANDBOX_PROXY_SOCKS] = { SOCK_STREAM, SANDBOX_PROXY_SOCKS_PORT },
		[SANDBOX_PROXY_SOCKS_UDP] = { SOCK_DGRAM, SANDBOX_PROXY_SOCKS_PORT },
	};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(SANDBOX_PROXY_NFDS * sizeof(int))];
	} cm = { 0 };
	char tag = 'P';
	struct iovec iov = { &tag, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
			     .msg_controllen = sizeof(cm.buf) };
	struct ifreq ifr = { 0 };
	int fds[SANDBOX_PROXY_NFDS], r = 0;

	for (size_t i = 0; i < SANDBOX_PROXY_NFDS; i++)
		fds[i] = -1;
	*step = "bringing up loopback in the network namespace";
	memcpy(ifr.ifr_name, "lo", 3);
	fds[0] = socket(AF_INET, socks[0].type | SOCK_CLOEXEC, 0);
	if (fds[0] < 0 || ioctl(fds[0], SIOCGIFFLAGS, &ifr) < 0)
		goto fail;
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(fds[0], SIOCSIFFLAGS, &ifr) < 0)
		goto fail;
	*step = "binding the proxy's sockets in the network namespace";
	for (size_t i = 0; i < SANDBOX_PROXY_NFDS; i++) {
		struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(socks[i].port),
					   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

		if (fds[i] < 0 && (fds[i] = socket(AF_INET, socks[i].type | SOCK_CLOEXEC, 0)) < 0)
			goto fail;
		if (bind(fds[i], (struct sockaddr *)&sin, sizeof(sin)) < 0)
			goto fail;
		if (socks[i].type == SOCK_STREAM && (i != SANDBOX_PROXY_SOCKS || pl->proxy_socks) &&
		    listen(fds[i], SOMAXCONN) < 0)
			goto fail;
	}
	*step = "sending the proxy's sockets to the server";
	cm.h.cmsg_level = SOL_SOCKET;
	cm.h.cmsg_type = SCM_RIGHTS;
	cm.h.cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(&cm.h), fds, sizeof(fds));
	if (sendmsg(pl->proxy_sock, &mh, MSG_NOSIGNAL) != 1)
		goto fail;
	goto out;
fail:
	r = -errno;
out:
	for (size_t i = 0; i < SANDBOX_PROXY_NFDS; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return r;
}

static int apply_mounts(const struct sandbox_plan *pl, int tty_fd, const char **step)
{
	int r;

	/* First, in the process the server cloned: it and everything it starts share it. */
	if (pl->audit_log && !pl->userns)
		new_audit_session(pl);

	/*
	 * Cloned into the listener guard's cgroup: a cgroup namespace rooted
	 * there keeps it (and its children) from migrating out of the subtree
	 * the connect filter is attached to.
	 */
	if (pl->cgroup_fd >= 0) {
		*step = "unshare(CLONE_NEWCGROUP)";
		if (unshare(CLONE_NEWCGROUP) < 0)
			return -errno;
	}
	/*
	 * Network restricted below Landlock ABI 6: a network namespace of its
	 * own (no interface but a down loopback) scopes abstract unix sockets
	 * and is a second wall behind seccomp for TCP.
	 */
	*step = "unshare(CLONE_NEWNET)";
	if (pl->net_ns && unshare(CLONE_NEWNET) < 0)
		return -errno;
	if (pl->proxy_sock >= 0 && (r = proxy_listeners(pl, step)) < 0)
		return r;
	/* Full-disk write too needs a mount namespace for the cgroup and /proc steps below. */
	*step = "unshare(CLONE_NEWNS)";
	if (!pl->restrict_fs && (pl->cgroup_fd >= 0 || pl->pid_ns || pl->n_cg_mounts || pl->ro_kernel) &&
	    (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0))
		return -errno;
	if (pl->restrict_fs && (r = sandbox_apply_tree(pl, tty_fd, step)) < 0)
		return r;
	/*
	 * Without nsdelegate the cgroup namespace is no boundary: root could
	 * still write its pid into any cgroup.procs, leaving its own cgroup
	 * (the listener guard, its leaf and limits, v1 hierarchies too).
	 * Read-only cgroup mounts stop that (clone3's CLONE_INTO_CGROUP is
	 * refused by seccomp).
	 */
	*step = "making cgroup2 read-only";
	for (size_t i = 0; i < pl->n_cg_mounts; i++)
		if ((r = sandbox_set_ro(pl->cg_mounts[i], AT_RECURSIVE)) < 0 && r != -ENOENT)
			return r;
	/*
	 * In its own PID namespace (the caller is its init): a /proc of that
	 * namespace, read-only as the rest of the tree, so host processes are
	 * not listed (their command lines are readable in the host's /proc).
	 */
	*step = "mounting /proc";
	if (pl->pid_ns && mount("proc", "/proc", "proc",
				(pl->restrict_fs ? MS_RDONLY : 0) | MS_NOSUID | MS_NODEV | MS_NOEXEC,
				NULL) < 0)
		return -errno;
	/* After /proc is mounted: its sysctls too (sandbox.c, ro_kernel). */
	*step = "making /proc and /sys read-only";
	if (pl->ro_kernel) {
		static const char *const kernel_files[] = { "/proc", "/sys" };

		for (size_t i = 0; i < ELEMENTSOF(kernel_files); i++)
			if ((r = sandbox_bind_ro(kernel_files[i])) < 0 && r != -ENOENT)
				return r;
	}
	return 0;
}

static int apply_creds(const struct sandbox_plan *pl, const char **step)
{
	int r, rs;

	/* Full-disk write too: Landlock's scoping keeps signals and TCP in check (ABI 4, 6). */
	if ((r = landlock_build(pl, &rs, step)) < 0)
		return r;
	if ((r = join_uid_userns(pl, step)) < 0)
		goto out;
	if (pl->drop_caps && (r = drop_capabilities(pl, step)) < 0)
		goto out;
	*step = "no_new_privs";
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		r = -errno;
		goto out;
	}
	*step = "landlock_restrict_self";
	/*
	 * Audit evidence: log this domain's denials after the exec too (by
	 * default only those before it are); ABI 7 knows the flag.
	 */
	if (rs >= 0 && ll_restrict_self(rs, pl->audit_log && pl->landlock_abi >= 7
						    ? LL_RESTRICT_SELF_LOG_NEW_EXEC_ON : 0) < 0) {
		r = -errno;
		goto out;
	}
	*step = "seccomp";
	r = sandbox_seccomp_apply(pl->seccomp, pl->audit_log);
out:
	if (rs >= 0)
		close(rs);
	return r;
}

/* Writes s to a /proc file of this process (no stdio: async-signal-safe). */
static int write_proc(const char *path, const char *s)
{
	size_t n = strlen(s);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t w;

	if (fd < 0)
		return -errno;
	w = write(fd, s, n);
	if (w < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	close(fd);
	return (size_t)w == n ? 0 : -EIO;
}

/*
 * First thing in a child cloned with CLONE_NEWUSER: it holds every
 * capability of its new namespace, so it may write its own maps, one line
 * each naming its own (outer) id, which the kernel allows an unprivileged
 * creator without newuidmap. setgroups must be denied before gid_map. No
 * sync with the parent is needed (it is suspended by CLONE_VFORK anyway).
 */
static int apply_userns(const struct sandbox_plan *pl, const char **step)
{
	char line[48];
	int r;

	if (!pl || !pl->userns)
		return 0;
	*step = "writing /proc/self/setgroups (deny)";
	if ((r = write_proc("/proc/self/setgroups", "deny")) < 0)
		return r;
	*step = "writing /proc/self/uid_map";
	snprintf(line, sizeof(line), "%u %u 1\n", pl->uid, pl->uid);
	if ((r = write_proc("/proc/self/uid_map", line)) < 0)
		return r;
	*step = "writing /proc/self/gid_map";
	snprintf(line, sizeof(line), "%u %u 1\n", pl->gid, pl->gid);
	return write_proc("/proc/self/gid_map", line);
}

/*
 * In a non-root server's namespace init, before it execs uexec-init: init
 * and the command have the same uid, and uexec-init makes itself
 * non-dumpable only once it runs, so for a moment after its exec nothing
 * would keep the command (already running) out of /proc/1/{mem,environ,root}.
 * An ambient capability that means nothing in a user namespace other than
 * the host's (CAP_WAKE_ALARM) survives the exec: a tracee whose permitted set
 * is not a subset of the tracer's is refused, as a root init is to a root
 * command.
 */
static int apply_init(const struct sandbox_plan *pl, const char **step)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };

	if (!pl || !pl->userns)
		return 0;
	*step = "keeping a capability in init";
	if (syscall(SYS_capget, &h, d) < 0)
		return -errno;
	d[CAP_TO_INDEX(CAP_WAKE_ALARM)].inheritable |= CAP_TO_MASK(CAP_WAKE_ALARM);
	if (syscall(SYS_capset, &h, d) < 0 ||
	    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_WAKE_ALARM, 0, 0) < 0)
		return -errno;
	return 0;
}

/* The order of the child side's phases (sandbox.h); security-relevant: keep it. */
int sandbox_child_enter(const struct sandbox_plan *pl, int tty_fd,
			const struct sandbox_child_stages *stages, void *arg, const char **step)
{
	int r;

	*step = "sandbox";
	if ((r = apply_userns(pl, step)) < 0)
		return r;
	if ((r = stages->process(arg, step)) < 0)
		return r;
	if (!pl)
		return 0;
	*step = "sandbox";
	if ((r = apply_mounts(pl, tty_fd, step)) < 0)
		return r;
	if (!pl->pid_ns)
		return apply_creds(pl, step); /* the mounts' last step stays until it names one */
	if ((r = stages->start_command(arg, step)) < 0)
		return r;
	*step = "sandbox";
	if ((r = apply_init(pl, step)) < 0)
		return r;
	return stages->exec_init(arg, step);
}

int sandbox_child_command(const struct sandbox_plan *pl, const char **step)
{
	*step = "sandbox";
	return apply_creds(pl, step);
}

bool sandbox_plan_userns(const struct sandbox_plan *plan)
{
	return plan && plan->userns;
}

bool sandbox_plan_sandbox_uid(const struct sandbox_plan *plan)
{
	return plan && plan->uid_userns_fd >= 0;
}

bool sandbox_plan_pid_ns(const struct sandbox_plan *plan)
{
	return plan && plan->pid_ns;
}
