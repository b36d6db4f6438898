/* SPDX-License-Identifier: MIT */
/*
 * The host probe: which sandbox mechanisms this kernel and this server
 * offer (mount and user namespaces, Landlock ABI, seccomp, the listener
 * guard, cgroups), and their one-line description for the log.
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


/* ---- probe ---- */

static int probe_mount_ns(void)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		struct mount_attr a = { .attr_set = MOUNT_ATTR_RDONLY };

		if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
			_exit(1);
		if (mount_setattr(AT_FDCWD, "/", AT_RECURSIVE, &a, sizeof(a)) < 0)
			_exit(2);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EPERM;
}

/* The first line of a /proc/sys file as an integer, or -1. */
static long read_sysctl(const char *path)
{
	FILE *fp = fopen(path, "re");
	long v = -1;

	if (!fp)
		return -1;
	if (fscanf(fp, "%ld", &v) != 1)
		v = -1;
	fclose(fp);
	return v;
}

/* What a user-namespace probe child reports: the step that failed and its errno. */
enum {
	USERNS_OK,
	USERNS_UNSHARE,  /* unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID) */
	USERNS_MAPS,     /* setgroups, uid_map, gid_map */
	USERNS_MOUNTS,   /* MS_SLAVE + mount_setattr(RDONLY), as apply_mounts begins */
	USERNS_PROC,     /* a /proc of the new PID namespace */
};

static void userns_child_fail(int fd, int step)
{
	int msg[2] = { step, errno };
	ssize_t _unused_ n = write(fd, msg, sizeof(msg));

	_exit(1);
}

static void userns_child(int fd, uid_t uid, gid_t gid)
{
	struct mount_attr a = { .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NODEV };
	char line[48];
	FILE *fp;
	pid_t pid;
	int st;

	if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID) < 0)
		userns_child_fail(fd, USERNS_UNSHARE);
	snprintf(line, sizeof(line), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	if (!(fp = fopen("/proc/self/setgroups", "we")) || fputs("deny", fp) < 0 || fclose(fp) < 0 ||
	    !(fp = fopen("/proc/self/uid_map", "we")) || fputs(line, fp) < 0 || fclose(fp) < 0)
		userns_child_fail(fd, USERNS_MAPS);
	snprintf(line, sizeof(line), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
	if (!(fp = fopen("/proc/self/gid_map", "we")) || fputs(line, fp) < 0 || fclose(fp) < 0)
		userns_child_fail(fd, USERNS_MAPS);
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0 ||
	    mount_setattr(AT_FDCWD, "/", AT_RECURSIVE, &a, sizeof(a)) < 0)
		userns_child_fail(fd, USERNS_MOUNTS);
	/* The first child is the new PID namespace's init: it mounts that /proc. */
	pid = fork();
	if (pid < 0)
		userns_child_fail(fd, USERNS_PROC);
	if (pid == 0) {
		if (mount("proc", "/proc", "proc", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
			userns_child_fail(fd, USERNS_PROC);
		_exit(0);
	}
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		_exit(1);
	_exit(0);
}

/*
 * Why the probe child failed (msg: its step, USERNS_*, and errno), with
 * the setting an operator can change, into why.
 */
static void userns_why(const int *msg, uid_t uid, char *why, size_t size)
{
	const char *restrict_clone = "/proc/sys/kernel/unprivileged_userns_clone";
	const char *apparmor = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns";

	switch (msg[0]) {
	case USERNS_UNSHARE:
		if (read_sysctl(restrict_clone) == 0)
			snprintf(why, size,
				 "unprivileged user namespaces (uexec runs as uid %u, not root): "
				 "kernel.unprivileged_userns_clone is 0; set it to 1 (sysctl -w "
				 "kernel.unprivileged_userns_clone=1) or run uexec as root",
				 (unsigned)uid);
		else if (msg[1] == ENOSPC)
			snprintf(why, size,
				 "user namespaces (uexec runs as uid %u, not root): "
				 "user.max_user_namespaces is %ld (or its limit is reached); raise it "
				 "(sysctl -w user.max_user_namespaces=15000) or run uexec as root",
				 (unsigned)uid, read_sysctl("/proc/sys/user/max_user_namespaces"));
		else if (msg[1] == EINVAL)
			snprintf(why, size,
				 "user namespaces (uexec runs as uid %u, not root): the kernel has none "
				 "(CONFIG_USER_NS); run uexec as root", (unsigned)uid);
		else
			snprintf(why, size,
				 "user namespaces (uexec runs as uid %u, not root): unshare(CLONE_NEWUSER) "
				 "failed: %s (a container's seccomp profile? check kernel.unprivileged_"
				 "userns_clone and user.max_user_namespaces) ; or run uexec as root",
				 (unsigned)uid, strerror(msg[1]));
		return;
	case USERNS_MAPS:
	case USERNS_MOUNTS:
		if (read_sysctl(apparmor) == 1) {
			snprintf(why, size,
				 "capabilities in an unprivileged user namespace (uexec runs as uid %u, "
				 "not root): AppArmor restricts them (kernel.apparmor_restrict_"
				 "unprivileged_userns=1); set it to 0, give uexec an AppArmor profile "
				 "with `userns,`, or run uexec as root",
				 (unsigned)uid);
			return;
		}
		snprintf(why, size,
			 "%s in a user namespace (uexec runs as uid %u, not root): %s; run uexec as root",
			 msg[0] == USERNS_MAPS ? "writing uid_map/gid_map" : "read-only mounts",
			 (unsigned)uid, strerror(msg[1]));
		return;
	default:
		snprintf(why, size,
			 "a /proc of its own in a user namespace (uexec runs as uid %u, not root): %s "
			 "(the host's /proc has parts covered, as in a container?); run uexec as root",
			 (unsigned)uid, strerror(msg[1]));
	}
}

/*
 * Non-root: can this uid build a sandbox in a user namespace of its own?
 * Fills why (empty when it can) with the setting that stops it: Debian's
 * and Ubuntu's kernel.unprivileged_userns_clone, user.max_user_namespaces,
 * Ubuntu's AppArmor restriction (the namespace is made but holds no
 * capability), or a /proc too hidden to be mounted again (containers).
 */
static void probe_userns(char *why, size_t size)
{
	int p[2], msg[2] = { USERNS_OK, 0 }, st;
	uid_t uid = geteuid();
	pid_t pid;
	ssize_t n;

	why[0] = 0;
	if (pipe2(p, O_CLOEXEC) < 0) {
		snprintf(why, size, "a pipe for the user namespace probe: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(why, size, "fork for the user namespace probe: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return;
	}
	if (pid == 0) {
		close(p[0]);
		userns_child(p[1], uid, getegid());
	}
	close(p[1]);
	n = read(p[0], msg, sizeof(msg));
	close(p[0]);
	if (waitpid(pid, &st, 0) < 0)
		st = -1;
	if (n != (ssize_t)sizeof(msg) && st == 0)
		return; /* it works */
	if (n != (ssize_t)sizeof(msg))
		msg[0] = USERNS_PROC, msg[1] = EIO;

	userns_why(msg, uid, why, size);
}

int sandbox_probe(struct sandbox_features *f, int landlock_abi_max)
{
	FILE *fp;
	int r;

	memset(f, 0, sizeof(*f));
	f->uid_userns_fd = -1;
	f->cap_last_cap = 40;
	fp = fopen("/proc/sys/kernel/cap_last_cap", "re");
	if (fp) {
		if (fscanf(fp, "%u", &f->cap_last_cap) != 1)
			f->cap_last_cap = 40;
		fclose(fp);
	}

	r = ll_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	f->landlock_abi_kernel = r > 0 ? r : 0;
	f->landlock_abi = f->landlock_abi_kernel;
	/* Newer ABIs only add audit flags so far: 7 is the newest this code knows. */
	if (f->landlock_abi > SANDBOX_LANDLOCK_ABI_NEWEST)
		f->landlock_abi = SANDBOX_LANDLOCK_ABI_NEWEST;
	if (landlock_abi_max >= 0 && f->landlock_abi > landlock_abi_max)
		f->landlock_abi = landlock_abi_max;
	f->seccomp = sandbox_seccomp_build(&f->filters) >= 0;
	f->userns = geteuid() != 0;
	if (f->userns) {
		char why[sizeof(f->missing)];

		probe_userns(why, sizeof(why));
		f->mount_ns = !why[0];
		if (why[0] && f->seccomp)
			snprintf(f->missing, sizeof(f->missing), "%s", why);
	} else {
		f->mount_ns = probe_mount_ns() >= 0;
	}

	if (!f->seccomp)
		snprintf(f->missing, sizeof(f->missing), "seccomp filters (libseccomp export failed)");
	else if (!f->mount_ns && !f->missing[0])
		snprintf(f->missing, sizeof(f->missing),
			 "mount namespaces (unshare(CLONE_NEWNS) or mount_setattr refused)");
	return 0;
}

const char *sandbox_describe(const struct sandbox_features *f, char *buf, size_t size)
{
	int abi = f->landlock_abi;
	bool scope = abi >= SANDBOX_LANDLOCK_ABI_SCOPE;
	const char *fs = abi >= 2 ? " + Landlock" : abi == 1 ? " + Landlock where reads are restricted" : "";

	snprintf(buf, size,
		 "Sandbox mechanisms at Landlock ABI %d: writes: read-only mounts%s; truncate: "
		 "read-only mounts%s; devices and their ioctls: nodev mounts%s; restricted reads: %s; "
		 "restricted network: seccomp%s%s; signals: %s",
		 abi, fs, abi >= 3 ? " + Landlock" : "", abi >= 5 ? " + Landlock" : "",
		 abi >= 1 ? "Landlock" : "refused (no Landlock)", abi >= 4 ? " + Landlock TCP" : "",
		 scope ? " + Landlock abstract-socket scoping" : " + a network namespace",
		 scope ? (f->pid_ns ? "Landlock scoping + PID namespace" : "Landlock scoping")
		 : f->pid_ns ? "PID namespace"
			     : "refused (below ABI 6 without uexec-init)");
	if (f->uid_userns_fd >= 0) {
		size_t n = strlen(buf);

		snprintf(buf + n, size - n,
			 "; identity (--sandbox-uid): uid 0 in a user namespace, uid %u gid %u on the "
			 "host; writable roots idmapped to their owners (sticky world-writable ones "
			 "not)",
			 f->sandbox_uid, f->sandbox_gid);
	}
	return buf;
}
