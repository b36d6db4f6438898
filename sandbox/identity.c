/* SPDX-License-Identifier: MIT */
/*
 * --sandbox-uid: the user namespaces the (root) server makes to run
 * sandboxed processes as another uid, the idmapped mounts of writable roots
 * owned by others, and the directories that uid must be able to search to
 * reach its writable roots.
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
int sandbox_idmap_get(const struct sandbox_features *f, unsigned uid, unsigned gid,
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
int sandbox_idmap_check(const char *path, int userns_fd)
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
			covered |= strcmp(a, pl->rw[i]) == 0 || sandbox_beneath(a, pl->rw[i]);
		if (covered)
			return 0;
		for (size_t i = 0; i < pl->n_deny_dir; i++)
			covered |= strcmp(a, pl->deny_dir[i]) == 0 || sandbox_beneath(a, pl->deny_dir[i]);
		if (covered)
			return 0;
		if (lstat(a, &st) < 0 || !S_ISDIR(st.st_mode) ||
		    searchable_by(&st, pl->sandbox_uid, pl->sandbox_gid) ||
		    sandbox_strv_has(pl->reach, pl->n_reach, a))
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
		if (sandbox_strv_push(&pl->reach, &pl->n_reach, a) < 0)
			return -ENOMEM;
	}
	return 0;
}

int sandbox_plan_reach_roots(struct sandbox_plan *pl, const char *cwd, char *err, size_t errsz)
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
		qsort(pl->reach, pl->n_reach, sizeof(char *), sandbox_cmp_depth);
	return r;
}

/*
 * Denied files ordered by phase, so that apply.c hides each phase's files
 * with one tmpfs (thousands of glob matches must not mean thousands of
 * superblocks).
 */
