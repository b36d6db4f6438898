/* SPDX-License-Identifier: MIT */
/*
 * Sandbox enforcement: kernel probe and the per-process plan (parent side);
 * apply.c applies it between clone and exec, denied.c holds the denial
 * heuristic. See sandbox.h for the order.
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
 * Non-root: can this uid build a sandbox in a user namespace of its own?
 * Fills why (empty when it can) with the setting that stops it: Debian's
 * and Ubuntu's kernel.unprivileged_userns_clone, user.max_user_namespaces,
 * Ubuntu's AppArmor restriction (the namespace is made but holds no
 * capability), or a /proc too hidden to be mounted again (containers).
 */
static void probe_userns(char *why, size_t size)
{
	const char *restrict_clone = "/proc/sys/kernel/unprivileged_userns_clone";
	const char *apparmor = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns";
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

/* ---- --sandbox-uid: user namespaces made by the (root) server ---- */

/* Writes s to path (a /proc file of another process). Returns 0 or -errno. */
static int write_file(const char *path, const char *s)
{
	size_t n = strlen(s);
	int fd = open(path, O_WRONLY | O_CLOEXEC), r = 0;
	ssize_t w;

	if (fd < 0)
		return -errno;
	w = write(fd, s, n);
	if (w < 0)
		r = -errno;
	else if ((size_t)w != n)
		r = -EIO;
	close(fd);
	return r;
}

/*
 * A user namespace with these uid_map and gid_map lines (setgroups denied),
 * as an fd. Only a process with
 * CAP_SETUID over the parent namespace may write such maps, so the server
 * writes them for a short-lived child that made the namespace; the fd keeps
 * it alive. Returns the fd or -errno (*what: the failing step).
 */
static int make_userns(const char *uid_map, const char *gid_map, const char **what)
{
	int ready[2], hold[2], fd = -1, r = 0, e = 0, st;
	char path[64];
	pid_t pid;
	ssize_t n;

	*what = "pipe";
	if (pipe2(ready, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(hold, O_CLOEXEC) < 0) {
		r = -errno;
		close(ready[0]);
		close(ready[1]);
		return r;
	}
	*what = "fork";
	pid = fork();
	if (pid < 0) {
		r = -errno;
		goto out;
	}
	if (pid == 0) {
		char c;

		e = unshare(CLONE_NEWUSER) < 0 ? errno : 0;
		n = write(ready[1], &e, sizeof(e));
		close(hold[1]);
		/* Until the server has the namespace's fd (it closes its end). */
		n = read(hold[0], &c, 1);
		_exit(n < 0);
	}
	close(ready[1]);
	ready[1] = -1;
	close(hold[0]);
	hold[0] = -1;
	n = read(ready[0], &e, sizeof(e));
	*what = "unshare(CLONE_NEWUSER)";
	if (n != (ssize_t)sizeof(e) || e) {
		r = -(e ? e : EIO);
		goto reap;
	}
	*what = "writing setgroups, uid_map, gid_map";
	snprintf(path, sizeof(path), "/proc/%d/setgroups", (int)pid);
	r = write_file(path, "deny");
	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
	if (r >= 0)
		r = write_file(path, uid_map);
	snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
	if (r >= 0)
		r = write_file(path, gid_map);
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	*what = "opening the user namespace";
	if (r >= 0 && (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		r = -errno;
reap:
	close(hold[1]);
	hold[1] = -1;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
out:
	if (ready[1] >= 0)
		close(ready[1]);
	if (hold[0] >= 0)
		close(hold[0]);
	if (hold[1] >= 0)
		close(hold[1]);
	close(ready[0]);
	return r < 0 ? r : fd;
}

/*
 * An idmapping's map: the owner's id on disk is the sandbox's id (so what
 * the command creates is the owner's, and the owner's files are the
 * command's), the sandbox's id on disk is the owner's (a swap: each id once),
 * every other id itself (root's and other users' files keep their owners,
 * foreign to the command, but mapped: the kernel refuses renaming or removing
 * an unmapped owner's file with EOVERFLOW even where the directory allows it).
 */
static void swap_map(char *buf, size_t size, unsigned owner, unsigned sbx)
{
	unsigned a = MIN(owner, sbx), b = MAX(owner, sbx);
	size_t n = 0;

	buf[0] = 0;
	if (owner == sbx) {
		snprintf(buf, size, "0 0 4294967295\n");
		return;
	}
	if (a > 0)
		n += (size_t)snprintf(buf + n, size - n, "0 0 %u\n", a);
	n += (size_t)snprintf(buf + n, size - n, "%u %u 1\n%u %u 1\n", owner, sbx, sbx, owner);
	if (b - a > 1)
		n += (size_t)snprintf(buf + n, size - n, "%u %u %u\n", a + 1, a + 1, b - a - 1);
	if (b < 4294967294u)
		snprintf(buf + n, size - n, "%u %u %u\n", b + 1, b + 1, 4294967294u - b);
}

/*
 * Idmapping namespaces by writable root owner. A few owners in practice;
 * the oldest entry is replaced past the bound (plans hold their own dups).
 */
#define IDMAP_CACHE 16

static struct idmap_entry {
	unsigned uid, gid;
	int fd;
} idmap_cache[IDMAP_CACHE];
static unsigned idmap_n, idmap_next;

/* A dup of the idmapping namespace for owner uid:gid. Returns the fd or -errno. */
static int idmap_get(const struct sandbox_features *f, unsigned uid, unsigned gid,
		     const char **what)
{
	struct idmap_entry *e = NULL;
	int fd;

	for (unsigned i = 0; i < idmap_n; i++)
		if (idmap_cache[i].uid == uid && idmap_cache[i].gid == gid)
			e = &idmap_cache[i];
	if (!e) {
		char um[160], gm[160];

		swap_map(um, sizeof(um), uid, f->sandbox_uid);
		swap_map(gm, sizeof(gm), gid, f->sandbox_gid);
		fd = make_userns(um, gm, what);
		if (fd < 0)
			return fd;
		if (idmap_n < IDMAP_CACHE) {
			e = &idmap_cache[idmap_n++];
		} else {
			e = &idmap_cache[idmap_next];
			idmap_next = (idmap_next + 1) % IDMAP_CACHE;
			close(e->fd);
		}
		*e = (struct idmap_entry){ uid, gid, fd };
	}
	*what = "dup";
	fd = fcntl(e->fd, F_DUPFD_CLOEXEC, 3);
	return fd < 0 ? -errno : fd;
}

/*
 * Parent side, before any child: can path's mount be idmapped with userns_fd
 * here (its filesystem supports it)? A detached clone, dropped at once.
 */
static int idmap_check(const char *path, int userns_fd)
{
	struct mount_attr a = { .attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t)userns_fd };
	int t = open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC), r = 0;

	if (t < 0)
		return -errno;
	if (mount_setattr(t, "", AT_EMPTY_PATH, &a, sizeof(a)) < 0)
		r = -errno;
	close(t);
	return r;
}

int sandbox_set_uid(struct sandbox_features *f, unsigned uid, unsigned gid, char *err,
		    size_t errsz)
{
	const char *what = "";
	char um[48], gm[48];
	int fd;

	err[0] = 0;
	if (geteuid() != 0) {
		snprintf(err, errsz,
			 "--sandbox-uid needs uexec to run as root (uexec runs as uid %u: its "
			 "sandboxes already run as that uid, in a user namespace of their own)",
			 (unsigned)geteuid());
		return -EPERM;
	}
	/* Only uid and gid 0 inside: every other host id is nobody there. */
	snprintf(um, sizeof(um), "0 %u 1\n", uid);
	snprintf(gm, sizeof(gm), "0 %u 1\n", gid);
	fd = make_userns(um, gm, &what);
	if (fd < 0) {
		snprintf(err, errsz, "--sandbox-uid %u: a user namespace mapping uid 0 to %u and gid 0 "
			 "to %u: %s: %s", uid, uid, gid, what, strerror(-fd));
		return fd;
	}
	f->uid_userns_fd = fd;
	f->sandbox_uid = uid;
	f->sandbox_gid = gid;
	return 0;
}

void sandbox_features_done(struct sandbox_features *f)
{
	for (size_t i = 0; i < f->n_secrets; i++)
		free(f->secrets[i]);
	free(f->secrets);
	f->secrets = NULL;
	f->n_secrets = 0;
	sandbox_seccomp_done(&f->filters);
	if (f->uid_userns_fd >= 0)
		close(f->uid_userns_fd);
	f->uid_userns_fd = -1;
	for (unsigned i = 0; i < idmap_n; i++)
		close(idmap_cache[i].fd);
	idmap_n = idmap_next = 0;
}

/* ---- plan ---- */

static int strv_push(char ***v, size_t *n, const char *s)
{
	char **nv = realloc(*v, (*n + 1) * sizeof(char *));

	if (!nv)
		return -ENOMEM;
	*v = nv;
	nv[*n] = strdup(s);
	if (!nv[*n])
		return -ENOMEM;
	(*n)++;
	return 0;
}

static void strv_clear(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static int ll_push(struct sandbox_plan *pl, const char *path, uint64_t access)
{
	struct ll_rule *nr = realloc(pl->ll, (pl->n_ll + 1) * sizeof(*nr));

	if (!nr)
		return -ENOMEM;
	pl->ll = nr;
	nr[pl->n_ll].path = strdup(path);
	if (!nr[pl->n_ll].path)
		return -ENOMEM;
	nr[pl->n_ll].access = access;
	pl->n_ll++;
	return 0;
}

static bool beneath(const char *path, const char *root)
{
	size_t n = strlen(root);

	if (strcmp(root, "/") == 0)
		return path[0] == '/' && path[1] != 0;
	return strncmp(path, root, n) == 0 && path[n] == '/';
}

static size_t depth(const char *p)
{
	size_t d = 0;

	for (; *p; p++)
		d += *p == '/';
	return d;
}

static int cmp_depth(const void *a, const void *b)
{
	size_t da = depth(*(char *const *)a), db = depth(*(char *const *)b);

	return da < db ? -1 : da > db;
}

static bool strv_has(char *const *v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], s) == 0)
			return true;
	return false;
}

int sandbox_set_secrets(struct sandbox_features *f, const char *const *paths, size_t n)
{
	char canon[PATH_MAX];
	struct stat st;

	for (size_t i = 0; i < n; i++) {
		if (!paths[i] || !realpath(paths[i], canon) || stat(canon, &st) < 0 ||
		    S_ISDIR(st.st_mode) || strv_has(f->secrets, f->n_secrets, canon))
			continue;
		if (strv_push(&f->secrets, &f->n_secrets, canon) < 0)
			return -ENOMEM;
	}
	return 0;
}

/*
 * One file the plan hides as a deny file, but where a deny directory or file
 * already covers it. A path gone (or renamed) since the start is skipped
 * (hide_files needs it to exist).
 */
static int plan_hide(struct sandbox_plan *pl, const char *path)
{
	bool covered = strv_has(pl->deny_file, pl->n_deny_file, path);
	struct stat st;

	for (size_t d = 0; d < pl->n_deny_dir && !covered; d++) {
		covered = beneath(path, pl->deny_dir[d]);
		/* ...unless a writable root beneath that directory opens it again. */
		for (size_t w = 0; w < pl->n_rw && covered; w++)
			covered = !(beneath(pl->rw[w], pl->deny_dir[d]) && beneath(path, pl->rw[w]));
	}
	if (covered || lstat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return 0;
	return strv_push(&pl->deny_file, &pl->n_deny_file, path);
}

/*
 * The server's secrets (sandbox_set_secrets) and uexec's host-wide locks
 * (netguard.h, evidence.h; whichever uexec made them) join the plan's deny
 * files: a sandbox holding one would stall servers starting or stopping.
 */
static int plan_secrets(struct sandbox_plan *pl, const struct sandbox_features *f)
{
	int r = plan_hide(pl, NETGUARD_LOCK_PATH);

	if (r >= 0)
		r = plan_hide(pl, SANDBOX_AUDIT_USERS_PATH);

	for (size_t i = 0; i < f->n_secrets && r >= 0; i++)
		r = plan_hide(pl, f->secrets[i]);
	return r;
}

/*
 * A reference to the synthetic directory at path, listed in the plan (which
 * drops it when freed); on failure nothing is held: a reference taken and
 * not listed would keep the directory on the host after the plan is gone.
 */
static int plan_synth(struct sandbox_plan *pl, const char *path)
{
	int r = sandbox_synth_get(path);

	if (r < 0)
		return r;
	r = strv_push(&pl->synth, &pl->n_synth, path);
	if (r < 0)
		sandbox_synth_put(path);
	return r;
}

/* A read-only path inside writable root w: bind it read-only, or a synthetic dir if missing. */
static int plan_protect(struct sandbox_plan *pl, const char *path, bool create_if_missing,
			char *err, size_t errsz)
{
	struct stat st;
	int r, marked;

	/* Named twice (a protected name and a read entry such as project_roots/.git): once. */
	if (strv_has(pl->ro, pl->n_ro, path) || strv_has(pl->synth, pl->n_synth, path))
		return 0;

	if (lstat(path, &st) == 0) {
		if (S_ISLNK(st.st_mode)) {
			/* The link itself is writable: replacing it would escape a bind on its target. */
			snprintf(err, errsz,
				 "cannot enforce sandbox read-only path %s: it is a symbolic link inside a writable root",
				 path);
			return -EINVAL;
		}
		/*
		 * A mount point this server made, or another server's (marked):
		 * shared, so that it is not removed under this sandbox.
		 */
		marked = sandbox_synth_known(path, S_ISDIR(st.st_mode));
		if (marked == -ENOENT && !create_if_missing)
			return 0; /* gone since the lstat: as a missing path */
		if (marked != 0) {
			/* (marked, or gone since the lstat: then made anew) */
			r = plan_synth(pl, path);
			if (r != -EEXIST) /* (-EEXIST: no longer marked, the user's own) */
				return r;
		}
		return strv_push(&pl->ro, &pl->n_ro, path);
	}
	if (errno != ENOENT || !create_if_missing)
		return errno == ENOENT ? 0 : -errno;
	r = plan_synth(pl, path);
	if (r == -EEXIST) /* raced with the user making the directory: bind theirs */
		return strv_push(&pl->ro, &pl->n_ro, path);
	if (r < 0)
		snprintf(err, errsz, "cannot create the read-only mount point %s: %s", path,
			 strerror(-r));
	return r;
}

/*
 * plan_protect() with creation, for a path inside the writable root root
 * ("/" when root is true). Under "/" the mount point may lie where the
 * server cannot create it (a non-root server: /.git; a read-only host
 * mount): there the command, which has at most the server's access and no
 * capabilities, cannot create it either, so nothing needs masking.
 */
static int root_protect(struct sandbox_plan *pl, bool root, const char *path, char *err,
			size_t errsz)
{
	int r = plan_protect(pl, path, true, err, errsz);

	if (root && (r == -EACCES || r == -EPERM || r == -EROFS)) {
		err[0] = 0;
		return 0;
	}
	return r;
}

/* "/<name>" for one of the protected names. */
static bool root_name(const char *path)
{
	for (size_t k = 0; k < ELEMENTSOF(sandbox_protected_names); k++)
		if (path[0] == '/' && strcmp(path + 1, sandbox_protected_names[k]) == 0)
			return true;
	return false;
}

/*
 * For a missing path: the canonical form of its first missing component (the
 * longest existing ancestor resolved, plus the next name). Returns 0 or -errno.
 */
static int first_missing(const char *path, char ret[PATH_MAX])
{
	char parent[PATH_MAX], real[PATH_MAX];
	const char *slash;
	struct stat st;

	snprintf(parent, sizeof(parent), "%s", path);
	for (;;) {
		char *s = strrchr(parent, '/');

		if (!s || s == parent)
			return -ENOENT;
		*s = 0;
		if (lstat(parent, &st) == 0)
			break;
	}
	if (!S_ISDIR(st.st_mode) || !realpath(parent, real))
		return -ENOTDIR;
	slash = path + strlen(parent) + 1;
	{
		size_t rl = strcmp(real, "/") ? strlen(real) : 0, nl = strcspn(slash, "/");

		if (rl + 1 + nl >= PATH_MAX)
			return -ENAMETOOLONG;
		memcpy(ret, real, rl);
		ret[rl] = '/';
		memcpy(ret + rl + 1, slash, nl);
		ret[rl + 1 + nl] = 0;
	}
	return 0;
}

/* Highest phase among the masks of list v (phases ph) strictly above path. */
static bool mask_above(const char *path, char *const *v, const unsigned *ph, size_t n,
		       unsigned *max)
{
	bool any = false;

	for (size_t i = 0; i < n; i++)
		if (beneath(path, v[i])) {
			if (!any || ph[i] > *max)
				*max = ph[i];
			any = true;
		}
	return any;
}

static unsigned rw_phase_above(const struct sandbox_plan *pl, const char *path)
{
	unsigned ph = 0;
	size_t best = 0;

	/* The deepest writable root strictly above path (rw is sorted by depth). */
	for (size_t i = 0; i < pl->n_rw; i++)
		if (beneath(path, pl->rw[i]) && depth(pl->rw[i]) >= best) {
			best = depth(pl->rw[i]);
			ph = pl->rw_phase[i];
		}
	return ph;
}

/* The masks of list v at depth d take the phase of the writable root above them. */
static void mask_phases(const struct sandbox_plan *pl, size_t d, char *const *v, size_t n,
			unsigned *ph)
{
	for (size_t i = 0; i < n; i++)
		if (depth(v[i]) == d)
			ph[i] = rw_phase_above(pl, v[i]);
}

static int plan_phases(struct sandbox_plan *pl)
{
	size_t n_rw = pl->n_rw ? pl->n_rw : 1;

	pl->rw_phase = calloc(n_rw, sizeof(unsigned));
	pl->rw_mkbase = calloc(n_rw, sizeof(int));
	pl->ro_phase = calloc(pl->n_ro + 1, sizeof(unsigned));
	pl->synth_phase = calloc(pl->n_synth + 1, sizeof(unsigned));
	pl->deny_dir_phase = calloc(pl->n_deny_dir + 1, sizeof(unsigned));
	pl->deny_file_phase = calloc(pl->n_deny_file + 1, sizeof(unsigned));
	pl->deny_reopen = calloc(pl->n_deny_dir + 1, sizeof(bool));
	if (!pl->rw_phase || !pl->rw_mkbase || !pl->ro_phase || !pl->synth_phase ||
	    !pl->deny_dir_phase || !pl->deny_file_phase || !pl->deny_reopen)
		return -ENOMEM;

	/*
	 * Depth by depth: a path's phase depends only on strictly shallower
	 * paths, which are done by then.
	 */
	size_t maxd = 0;

	for (size_t i = 0; i < pl->n_rw; i++)
		maxd = MAX(maxd, depth(pl->rw[i]));
	for (size_t i = 0; i < pl->n_ro; i++)
		maxd = MAX(maxd, depth(pl->ro[i]));
	for (size_t i = 0; i < pl->n_synth; i++)
		maxd = MAX(maxd, depth(pl->synth[i]));
	for (size_t i = 0; i < pl->n_deny_dir; i++)
		maxd = MAX(maxd, depth(pl->deny_dir[i]));
	for (size_t i = 0; i < pl->n_deny_file; i++)
		maxd = MAX(maxd, depth(pl->deny_file[i]));

	for (size_t d = 0; d <= maxd; d++) {
		for (size_t i = 0; i < pl->n_rw; i++) {
			unsigned m = 0, best = 0;
			bool any = false;

			if (depth(pl->rw[i]) != d)
				continue;
			any |= mask_above(pl->rw[i], pl->ro, pl->ro_phase, pl->n_ro, &m);
			best = MAX(best, m);
			m = 0;
			any |= mask_above(pl->rw[i], pl->synth, pl->synth_phase, pl->n_synth, &m);
			best = MAX(best, m);
			m = 0;
			any |= mask_above(pl->rw[i], pl->deny_dir, pl->deny_dir_phase, pl->n_deny_dir,
					  &m);
			best = MAX(best, m);
			pl->rw_phase[i] = any ? best + 1 : 0;
			pl->max_phase = MAX(pl->max_phase, pl->rw_phase[i]);
			pl->rw_mkbase[i] = -1;
			for (size_t k = 0; k < pl->n_deny_dir; k++)
				if (beneath(pl->rw[i], pl->deny_dir[k]) &&
				    (pl->rw_mkbase[i] < 0 ||
				     depth(pl->deny_dir[k]) > depth(pl->deny_dir[pl->rw_mkbase[i]]))) {
					pl->rw_mkbase[i] = (int)k;
					pl->deny_reopen[k] = true;
				}
		}
		mask_phases(pl, d, pl->ro, pl->n_ro, pl->ro_phase);
		mask_phases(pl, d, pl->synth, pl->n_synth, pl->synth_phase);
		mask_phases(pl, d, pl->deny_dir, pl->n_deny_dir, pl->deny_dir_phase);
		mask_phases(pl, d, pl->deny_file, pl->n_deny_file, pl->deny_file_phase);
	}
	return 0;
}

/* ---- pins: the directories leading from a writable root to a mask ---- */

static int cmp_depth_name(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	int d = cmp_depth(a, b);

	return d ? d : strcmp(x, y);
}

/* Sorts the pins shallowest first and drops repeats; -E2BIG past SANDBOX_MAX_PINS. */
static int pins_dedup(struct sandbox_plan *pl)
{
	size_t k = 0;

	if (pl->n_pin > 1)
		qsort(pl->pin, pl->n_pin, sizeof(char *), cmp_depth_name);
	for (size_t i = 0; i < pl->n_pin; i++) {
		if (k && strcmp(pl->pin[k - 1], pl->pin[i]) == 0) {
			free(pl->pin[i]);
			continue;
		}
		pl->pin[k++] = pl->pin[i];
	}
	pl->n_pin = k;
	return k > SANDBOX_MAX_PINS ? -E2BIG : 0;
}

/*
 * Pushes each directory strictly between the deepest writable root above
 * path and path (repeats dropped whenever the list doubles the limit).
 */
static int pin_ancestors(struct sandbox_plan *pl, const char *path)
{
	char a[PATH_MAX];
	size_t best = 0, rl = 0;
	bool found = false;
	int r;

	for (size_t i = 0; i < pl->n_rw; i++)
		if (beneath(path, pl->rw[i]) && (!found || depth(pl->rw[i]) >= best)) {
			found = true;
			best = depth(pl->rw[i]);
			rl = strcmp(pl->rw[i], "/") ? strlen(pl->rw[i]) : 0;
		}
	if (!found)
		return 0;
	for (const char *c = path + rl + 1; (c = strchr(c, '/')); c++) {
		snprintf(a, sizeof(a), "%.*s", (int)(c - path), path);
		if (pl->n_pin >= 2 * SANDBOX_MAX_PINS && (r = pins_dedup(pl)) < 0)
			return r;
		if (strv_push(&pl->pin, &pl->n_pin, a) < 0)
			return -ENOMEM;
	}
	return 0;
}

/*
 * A mask covers a path, not the directories leading to it: renamed in one
 * process (`mv cfg cfg2`: a mount point's ancestors may move), a denied
 * file or a read-only entry inside a writable root would sit at a path the
 * next start no longer masks. Each such directory is pinned (bound onto
 * itself in the child, apply.c): rename and rmdir answer EBUSY.
 */
static int plan_pins(struct sandbox_plan *pl, char *err, size_t errsz)
{
	int r = 0;

	for (size_t i = 0; i < pl->n_deny_file && r >= 0; i++)
		r = pin_ancestors(pl, pl->deny_file[i]);
	for (size_t i = 0; i < pl->n_deny_dir && r >= 0; i++)
		r = pin_ancestors(pl, pl->deny_dir[i]);
	for (size_t i = 0; i < pl->n_ro && r >= 0; i++)
		r = pin_ancestors(pl, pl->ro[i]);
	/*
	 * And the empty directory masking a missing read or deny entry: moved
	 * with its parent (`mv x x2` of x/y), it no longer covered the path,
	 * which the process then created; and uexec's removal at the end went
	 * through the link left at x (sandbox_synth_put).
	 */
	for (size_t i = 0; i < pl->n_synth && r >= 0; i++)
		r = pin_ancestors(pl, pl->synth[i]);
	if (r >= 0)
		r = pins_dedup(pl);
	if (r == -E2BIG)
		snprintf(err, errsz,
			 "the masks inside writable roots lie in more than %d directories (each is "
			 "pinned against renames): deny fewer paths or narrower globs",
			 SANDBOX_MAX_PINS);
	if (r < 0 || pl->n_pin == 0)
		return r;
	pl->pin_phase = calloc(pl->n_pin, sizeof(unsigned));
	if (!pl->pin_phase)
		return -ENOMEM;
	for (size_t i = 0; i < pl->n_pin; i++)
		pl->pin_phase[i] = rw_phase_above(pl, pl->pin[i]);
	return 0;
}

/* ---- deny globs (glob.c): what they match now, masked as denied paths ---- */

struct glob_ctx {
	struct sandbox_plan *pl;
	const struct sandbox_policy *p;
	size_t matches;
};

/* Already hidden (a deny entry above it, or nothing grants it): no mount of its own. */
static bool glob_hidden(const struct glob_ctx *g, const char *path)
{
	return sandbox_policy_access(g->p, path) == SANDBOX_DENY ||
	       strv_has(g->pl->deny_file, g->pl->n_deny_file, path) ||
	       strv_has(g->pl->deny_dir, g->pl->n_deny_dir, path);
}

static int glob_add(void *ctx, const char *path)
{
	struct glob_ctx *g = ctx;

	if (glob_hidden(g, path))
		return 0;
	if (++g->matches > SANDBOX_GLOB_MAX_MATCHES)
		return -E2BIG;
	return strv_push(&g->pl->deny_file, &g->pl->n_deny_file, path);
}

static int glob_add_literal(void *ctx, const char *path, bool is_dir)
{
	struct glob_ctx *g = ctx;
	char canon[PATH_MAX];

	if (!realpath(path, canon) || glob_hidden(g, canon))
		return 0;
	if (++g->matches > SANDBOX_GLOB_MAX_MATCHES)
		return -E2BIG;
	return is_dir ? strv_push(&g->pl->deny_dir, &g->pl->n_deny_dir, canon)
		      : strv_push(&g->pl->deny_file, &g->pl->n_deny_file, canon);
}

static int plan_deny_globs(struct sandbox_plan *pl, const struct sandbox_policy *p, char *err,
			   size_t errsz)
{
	struct glob_ctx g = { .pl = pl, .p = p };
	struct sandbox_glob_out out = { &g, glob_add, glob_add_literal };
	struct sandbox_glob_budget budget = { 0 };
	int r = 0;

	for (size_t i = 0; i < p->n_deny_globs && r >= 0; i++)
		r = sandbox_glob_expand(p->deny_globs[i], p->glob_scan_max_depth, &budget, &out, err,
					errsz);
	/* Every refusal names the pattern: the policy cannot be enforced as written. */
	return r < 0 && r != -ENOMEM ? -EINVAL : r;
}

/* ---- --sandbox-uid: writable roots reachable through directories closed to its uid ---- */

static bool searchable_by(const struct stat *st, unsigned uid, unsigned gid)
{
	if (st->st_uid == uid)
		return st->st_mode & S_IXUSR;
	if (st->st_gid == gid)
		return st->st_mode & S_IXGRP;
	return st->st_mode & S_IXOTH;
}

/*
 * A writable root or the cwd below a directory the sandbox uid cannot search
 * (a 0700 home of another user: /root/project) would be unreachable: the
 * process could not even chdir there. Such directories (outside every
 * writable root: inside one the idmap makes the owner's directories the
 * command's; not at or below a denied directory, whose mask already leads to
 * the roots) are rebuilt in the child as a 0711 tmpfs holding a read-only
 * bind of each entry (apply.c): as if the directory were searchable, not
 * listable. Its entries keep their own owners and modes (a 0600 file of
 * root's stays closed, a world-readable one opens).
 */
static int reach_add(struct sandbox_plan *pl, const char *target, char *err, size_t errsz)
{
	char a[PATH_MAX];

	for (const char *c = target + 1; (c = strchr(c, '/')); c++) {
		struct stat st;
		bool covered = false;

		snprintf(a, sizeof(a), "%.*s", (int)(c - target), target);
		for (size_t i = 0; i < pl->n_rw; i++)
			covered |= strcmp(a, pl->rw[i]) == 0 || beneath(a, pl->rw[i]);
		if (covered)
			return 0;
		for (size_t i = 0; i < pl->n_deny_dir; i++)
			covered |= strcmp(a, pl->deny_dir[i]) == 0 || beneath(a, pl->deny_dir[i]);
		if (covered)
			return 0;
		if (lstat(a, &st) < 0 || !S_ISDIR(st.st_mode) ||
		    searchable_by(&st, pl->sandbox_uid, pl->sandbox_gid) ||
		    strv_has(pl->reach, pl->n_reach, a))
			continue;
		{
			DIR *d = opendir(a);
			size_t n = 0;

			if (!d) {
				snprintf(err, errsz, "--sandbox-uid: %s is closed to uid %u and cannot be "
					 "read: %s", a, pl->sandbox_uid, strerror(errno));
				return -EOPNOTSUPP;
			}
			while (readdir(d))
				n++;
			closedir(d);
			if (n > SANDBOX_REACH_MAX_ENTRIES + 2) {
				snprintf(err, errsz,
					 "--sandbox-uid: %s is closed to uid %u and holds more than %d "
					 "entries to re-bind: make it searchable by that uid (chmod o+x)",
					 a, pl->sandbox_uid, SANDBOX_REACH_MAX_ENTRIES);
				return -EOPNOTSUPP;
			}
		}
		if (strv_push(&pl->reach, &pl->n_reach, a) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int plan_reach_roots(struct sandbox_plan *pl, const char *cwd, char *err, size_t errsz)
{
	int r = 0;

	for (size_t w = 0; w < pl->n_rw && r >= 0; w++)
		r = reach_add(pl, pl->rw[w], err, errsz);
	if (r >= 0 && cwd) {
		char canon[PATH_MAX];

		r = reach_add(pl, realpath(cwd, canon) ? canon : cwd, err, errsz);
	}
	/* Outer directories first: a deeper one is rebuilt inside the outer's binds. */
	if (r >= 0 && pl->n_reach > 1)
		qsort(pl->reach, pl->n_reach, sizeof(char *), cmp_depth);
	return r;
}

/*
 * Denied files ordered by phase, so that apply.c hides each phase's files
 * with one tmpfs (thousands of glob matches must not mean thousands of
 * superblocks).
 */
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
		if (strcmp(path, v[i]) == 0 || beneath(path, v[i]))
			best = MAX(best, strcmp(v[i], "/") ? depth(v[i]) + 1 : 1);
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

int sandbox_plan_new(const struct sandbox_policy *p, const struct sandbox_features *f,
		     int fs_helper_fd, struct sandbox_plan **ret, char *err, size_t errsz)
{
	bool fs_helper = fs_helper_fd >= 0;
	struct sandbox_plan *pl;
	char canon[PATH_MAX];
	struct stat st;
	int r = 0;

	/* A root write with carve-outs: a filesystem view whose root is writable. */
	bool root_write = sandbox_policy_root_write_restricted(p);

	err[0] = 0;
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
	pl = calloc(1, sizeof(*pl));
	if (!pl)
		return -ENOMEM;
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
		goto fail;
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

	if (p->full_write && !root_write) {
		/*
		 * Full-disk write (SANDBOX.md §3.1 stage 1): no filesystem view, but
		 * still no capabilities beyond file access (root's other powers would
		 * reach /proc/<server>/mem or load BPF), Landlock scoping against
		 * signals and TCP, and seccomp. With carve-outs (deny or read
		 * entries, deny globs) the restricted path below builds a view.
		 */
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
			sandbox_plan_free(pl);
			return -EOPNOTSUPP;
		}
		if (!pl->n_cg_mounts &&
		    (r = netguard_cgroup_mounts(&pl->cg_mounts, &pl->n_cg_mounts)) < 0) {
			snprintf(err, errsz, "listing cgroup mounts: %s", strerror(-r));
			sandbox_plan_free(pl);
			return r;
		}
		*ret = pl;
		return 0;
	}

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

	/* Writable roots: existing ones, canonical (a symlinked root binds its target). */
	for (size_t i = 0; i < p->n_rules && r >= 0; i++) {
		const struct sandbox_rule *ru = &p->rules[i];

		if (ru->access != SANDBOX_WRITE || sandbox_policy_access(p, ru->path) != SANDBOX_WRITE)
			continue;
		/*
		 * /.git and the other names granted with a root write are the
		 * root's, writable with it: no root of their own, whose bind
		 * would follow a symlink there to a denied target and re-open it.
		 */
		if (root_write && root_name(ru->path))
			continue;
		if (!realpath(ru->path, canon) || stat(canon, &st) < 0)
			continue; /* missing writable roots are skipped, as the reference does */
		r = strv_push(&pl->rw, &pl->n_rw, canon);
	}
	if (r < 0)
		goto fail;
	if (pl->n_rw > 1)
		qsort(pl->rw, pl->n_rw, sizeof(char *), cmp_depth);
	pl->rw_fds = calloc(pl->n_rw ? pl->n_rw : 1, sizeof(int));
	pl->rw_idmap = malloc((pl->n_rw ? pl->n_rw : 1) * sizeof(int));
	for (size_t w = 0; pl->rw_idmap && w < pl->n_rw; w++)
		pl->rw_idmap[w] = -1;
	if (!pl->rw_fds || !pl->rw_idmap) {
		r = -ENOMEM;
		goto fail;
	}
	/*
	 * --sandbox-uid: each writable root idmapped to its owner, so that what
	 * the command creates there is the owner's on disk (and the owner's
	 * files are the command's). Not a sticky world-writable directory
	 * (/tmp): anyone creates there, and its owner's (root's) files must
	 * stay foreign; files created there are the sandbox uid's.
	 */
	for (size_t w = 0; w < pl->n_rw && f->uid_userns_fd >= 0; w++) {
		const char *what = "";

		if (stat(pl->rw[w], &st) < 0) {
			r = -errno;
			snprintf(err, errsz, "--sandbox-uid: stat %s: %s", pl->rw[w], strerror(-r));
			goto fail;
		}
		if (S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX) && (st.st_mode & S_IWOTH))
			continue;
		/* Nor the root: every host file would become its owner's (root's). */
		if (strcmp(pl->rw[w], "/") == 0)
			continue;
		r = idmap_get(f, (unsigned)st.st_uid, (unsigned)st.st_gid, &what);
		if (r < 0) {
			snprintf(err, errsz,
				 "--sandbox-uid: a user namespace to idmap the writable root %s to its "
				 "owner %u:%u: %s: %s",
				 pl->rw[w], (unsigned)st.st_uid, (unsigned)st.st_gid, what, strerror(-r));
			goto fail;
		}
		pl->rw_idmap[w] = r;
		r = idmap_check(pl->rw[w], pl->rw_idmap[w]);
		if (r < 0) {
			snprintf(err, errsz,
				 "--sandbox-uid: the writable root %s cannot be idmapped to its owner "
				 "(mount_setattr MOUNT_ATTR_IDMAP: %s; does its filesystem support "
				 "idmapped mounts?)",
				 pl->rw[w], strerror(-r));
			r = -EOPNOTSUPP;
			goto fail;
		}
	}

	/* Under each writable root: .git/.agents/.codex and every read entry stay read-only. */
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
			r = root_protect(pl, root, path, err, errsz);
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
			inside |= beneath(path, pl->rw[w]);
		if (!ru->skip_if_missing && lstat(path, &st) < 0 && errno == ENOENT &&
		    first_missing(path, canon) == 0) {
			/*
			 * A missing read-only or deny path inside a writable root: mask
			 * its first missing component with an empty read-only directory,
			 * so the command cannot create it (SANDBOX.md §3.3 steps 4-5).
			 */
			for (size_t w = 0; w < pl->n_rw; w++)
				if (beneath(canon, pl->rw[w])) {
					r = root_protect(pl, strcmp(pl->rw[w], "/") == 0, canon, err, errsz);
					break;
				}
			continue;
		}
		if (ru->access == SANDBOX_READ && inside)
			r = plan_protect(pl, path, false, err, errsz);
		/*
		 * Denied "/" (ties: deny wins over a root grant): no mask, a mount
		 * on "/" would not cover the process's root; nothing but narrower
		 * entries grants reads (Landlock, refused without it), the tree
		 * is read-only.
		 */
		else if (ru->access == SANDBOX_DENY && strcmp(path, "/") != 0 && lstat(path, &st) == 0)
			r = S_ISDIR(st.st_mode) ? strv_push(&pl->deny_dir, &pl->n_deny_dir, path)
						: strv_push(&pl->deny_file, &pl->n_deny_file, path);
	}
	if (r < 0)
		goto fail;
	r = plan_secrets(pl, f);
	if (r >= 0)
		r = plan_deny_globs(pl, p, err, errsz);
	if (r >= 0 && f->uid_userns_fd >= 0)
		r = plan_reach_roots(pl, p->cwd, err, errsz);
	if (r < 0)
		goto fail;
	r = plan_phases(pl);
	if (r >= 0)
		r = sort_deny_files(pl);
	if (r >= 0)
		r = plan_pins(pl, err, errsz);
	if (r < 0)
		goto fail;
	pl->private_dev = stat("/dev", &st) == 0 && S_ISDIR(st.st_mode);
	/* max=: one sandbox must not drain the host's PTY pool (kernel.pty.max). */
	if (f->max_ptys)
		snprintf(pl->devpts_opts, sizeof(pl->devpts_opts),
			 "newinstance,ptmxmode=0666,mode=0620,max=%u", f->max_ptys);
	else
		snprintf(pl->devpts_opts, sizeof(pl->devpts_opts),
			 "newinstance,ptmxmode=0666,mode=0620");

	/* Landlock: read where the policy reads, everything under writable roots, devices. */
	if (p->full_read) {
		r = ll_push(pl, "/", LL_FS_READ);
	} else {
		/* Read entries in effect only: one a deny at the same path overrides grants nothing. */
		for (size_t i = 0; i < p->n_rules && r >= 0; i++)
			if (p->rules[i].access == SANDBOX_READ &&
			    sandbox_policy_access(p, p->rules[i].path) == SANDBOX_READ)
				r = ll_push(pl, p->rules[i].path, LL_FS_READ);
		/* The helper must load itself and its libraries whatever the policy reads. */
		for (size_t i = 0; (p->minimal_read || fs_helper) && i < ELEMENTSOF(minimal_roots) &&
				   r >= 0;
		     i++)
			r = ll_push(pl, minimal_roots[i], LL_FS_READ);
		/* The helper's binary itself: granted through exe_fd in the child (apply.c). */
	}
	for (size_t w = 0; w < pl->n_rw && r >= 0; w++)
		r = ll_push(pl, pl->rw[w], ll_fs_all(pl->landlock_abi));
	for (size_t i = 0; i < ELEMENTSOF(rw_devices) && r >= 0; i++)
		r = ll_push(pl, rw_devices[i],
			    LL_FS_READ_FILE | LL_FS_WRITE_FILE | LL_FS_READ_DIR |
				    (pl->landlock_abi >= 3 ? LL_FS_TRUNCATE : 0) |
				    (pl->landlock_abi >= 5 ? LL_FS_IOCTL_DEV : 0) |
				    (strcmp(rw_devices[i], "/dev/shm") == 0 ? ll_fs_all(pl->landlock_abi) : 0));
	if (r < 0)
		goto fail;
	*ret = pl;
	return 0;
fail:
	sandbox_plan_free(pl);
	return r;
}

void sandbox_plan_set_proxy(struct sandbox_plan *plan, int sock)
{
	plan->proxy_sock = sock;
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
	strv_clear(pl->rw, pl->n_rw);
	free(pl->rw_fds);
	strv_clear(pl->ro, pl->n_ro);
	strv_clear(pl->synth, pl->n_synth);
	strv_clear(pl->deny_dir, pl->n_deny_dir);
	strv_clear(pl->deny_file, pl->n_deny_file);
	strv_clear(pl->cg_mounts, pl->n_cg_mounts);
	strv_clear(pl->reach, pl->n_reach);
	free(pl->rw_phase);
	free(pl->ro_phase);
	free(pl->synth_phase);
	free(pl->deny_dir_phase);
	free(pl->deny_file_phase);
	strv_clear(pl->pin, pl->n_pin);
	free(pl->pin_phase);
	free(pl->rw_mkbase);
	free(pl->deny_reopen);
	for (size_t i = 0; i < pl->n_ll; i++)
		free(pl->ll[i].path);
	free(pl->ll);
	free(pl);
}
