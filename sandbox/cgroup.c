/* SPDX-License-Identifier: MIT */
/*
 * A cgroup per process. See cgroup.h. The start-up sweep of what dead
 * servers left is cgroup-sweep.c.
 *
 * Everything here runs on the server's thread between requests and costs a
 * few syscalls on small kernfs files: mkdir + open of a v2 leaf measured
 * ~40 us, its rmdir ~20 us, the v1 cgroup.procs write of a limited child
 * ~0.2 ms (in the child, before exec).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup-internal.h"
#include "cgroup.h"
#include "log.h"
#include "macro.h"
#include "netguard.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

static const char *const kind_names[_SANDBOX_CG_KIND_MAX] = { "pids", "memory", "cpu" };

const char *sandbox_cg_kind_name(enum sandbox_cg_kind k)
{
	return k < _SANDBOX_CG_KIND_MAX ? kind_names[k] : "?";
}

/* Writes s to dirfd/file. Returns 0 or -errno. */
static int write_at(int dirfd, const char *file, const char *s)
{
	size_t len = strlen(s);
	ssize_t n;
	int fd = openat(dirfd, file, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = write(fd, s, len);
	n = n < 0 ? -errno : n == (ssize_t)len ? 0 : -EIO;
	close(fd);
	return (int)n;
}

/* Reads dirfd/file (NUL-terminated, truncated to bufsz - 1). Returns its length or -errno. */
ssize_t sandbox_cg_read_at(int dirfd, const char *file, char *buf, size_t bufsz)
{
	ssize_t n, total = 0;
	int fd = openat(dirfd, file, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while ((size_t)total < bufsz - 1 && (n = read(fd, buf + total, bufsz - 1 - (size_t)total)) > 0)
		total += n;
	close(fd);
	buf[total] = 0;
	return total;
}

/* True when the space-separated list has the word. */
static bool has_word(const char *list, const char *word)
{
	size_t wl = strlen(word);

	for (const char *p = list; (p = strstr(p, word)); p += wl)
		if ((p == list || p[-1] == ' ' || p[-1] == '\n' || p[-1] == ',') &&
		    (p[wl] == 0 || p[wl] == ' ' || p[wl] == '\n' || p[wl] == ','))
			return true;
	return false;
}

/* SIGKILL to every pid listed in dirfd's cgroup.procs. Returns how many were signalled. */
static int kill_listed(int dirfd)
{
	char buf[65536], *p, *end;
	int n = 0;

	if (sandbox_cg_read_at(dirfd, "cgroup.procs", buf, sizeof(buf)) <= 0)
		return 0;
	for (p = buf; *p; p = end) {
		long pid = strtol(p, &end, 10);

		if (end == p)
			break;
		if (pid > 0 && kill((pid_t)pid, SIGKILL) == 0)
			n++;
		while (*end == '\n')
			end++;
	}
	return n;
}

/*
 * SIGKILL to everything in the cgroup dirfd (and below, with cgroup.kill).
 * Without cgroup.kill: freeze (v2) so that nothing forks while the members
 * are listed, kill each, thaw (a frozen task still dies of SIGKILL), and go
 * round again while members remain (v1 cannot freeze without the freezer
 * hierarchy: a fork bomb is bounded by pids.max).
 */
static int kill_cgroup(int dirfd, bool v2)
{
	int frozen;

	if (v2 && write_at(dirfd, "cgroup.kill", "1") == 0)
		return 0;
	frozen = v2 && write_at(dirfd, "cgroup.freeze", "1") == 0;
	for (int i = 0; i < 64 && kill_listed(dirfd) > 0; i++)
		;
	if (frozen)
		(void)write_at(dirfd, "cgroup.freeze", "0");
	return 0;
}

/* Kills then removes dirfd/name and its subtree, depth first. */
static int purge_at(int dirfd, const char *name, bool v2, int depth)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC), r = 0;
	DIR *d;
	struct dirent *de;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	kill_cgroup(fd, v2);
	d = depth < 16 ? fdopendir(dup(fd)) : NULL;
	while (d && (de = readdir(d))) {
		if (de->d_type == DT_DIR && strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
			int q = purge_at(fd, de->d_name, v2, depth + 1);

			if (q < 0 && r == 0)
				r = q;
		}
	}
	if (d)
		closedir(d);
	close(fd);
	/* The killed processes leave the cgroup as they exit: give them up to ~1 s. */
	for (int i = 0; i < 200; i++) {
		if (unlinkat(dirfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
			return r;
		if (errno != EBUSY)
			break;
		usleep(5000);
	}
	return r ? r : -errno;
}

int sandbox_cg_purge(const char *path)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	int dfd, r;
	bool v2;

	if (!slash || (size_t)(slash - path) >= sizeof(dir))
		return -EINVAL;
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = 0;
	dfd = open(dir[0] ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	v2 = faccessat(dfd, "cgroup.controllers", F_OK, 0) == 0;
	r = purge_at(dfd, slash + 1, v2, 0);
	close(dfd);
	return r;
}

/* ---- v1 hierarchies ---- */

/* The v1 mount of a controller and this process's directory in it. */
static int v1_own_dir(const char *ctrl, char *out, size_t outsz)
{
	char line[8192], rel[4096] = "", mnt[4096] = "", root[4096] = "";
	bool found = false;
	FILE *f;

	f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return -errno;
	while (!found && fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

		if (!c2)
			continue;
		*c2 = 0;
		if (has_word(c1 + 1, ctrl)) {
			c2[1 + strcspn(c2 + 1, "\n")] = 0;
			snprintf(rel, sizeof(rel), "%s", c2 + 1);
			found = true;
		}
	}
	fclose(f);
	if (!found)
		return -ENOENT;
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	while (!mnt[0] && fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - "), *fields[6], *save = NULL, *tok, *opts;
		int n = 0;

		if (!sep || strncmp(sep + 3, "cgroup ", 7) != 0)
			continue;
		opts = strrchr(sep + 3, ' ');
		if (!opts)
			continue;
		opts[strcspn(opts, "\n")] = 0;
		if (!has_word(opts + 1, ctrl))
			continue;
		*sep = 0;
		for (tok = strtok_r(line, " ", &save); tok && n < 6; tok = strtok_r(NULL, " ", &save))
			fields[n++] = tok;
		if (n < 5 || strchr(fields[4], '\\'))
			continue;
		snprintf(root, sizeof(root), "%s", fields[3]);
		snprintf(mnt, sizeof(mnt), "%s", fields[4]);
	}
	fclose(f);
	if (!mnt[0])
		return -ENOENT;
	size_t rl = strcmp(root, "/") == 0 ? 0 : strlen(root);

	if (rl && (strncmp(rel, root, rl) != 0 || (rel[rl] && rel[rl] != '/')))
		return -ENOENT;
	if ((size_t)snprintf(out, outsz, "%s%s", mnt, strcmp(rel + rl, "/") == 0 ? "" : rel + rl) >=
	    outsz)
		return -ENAMETOOLONG;
	return 0;
}

/* ---- set-up ---- */

/*
 * Enables the v2 controllers of the kinds in O's cgroup.controllers for the
 * base. O may hold processes (uexec): a pure v2 host then refuses with
 * EBUSY, so uexec moves itself to O/uexec-<pid>.server first (once, at
 * start, before any thread or child).
 */
static void enable_v2(struct sandbox_cg *cg, int own_fd, const char *own)
{
	char avail[1024], want[128] = "", path[4096 + 64];
	int r;

	if (sandbox_cg_read_at(own_fd, "cgroup.controllers", avail, sizeof(avail)) < 0)
		return;
	for (int k = 0; k < _SANDBOX_CG_KIND_MAX; k++)
		if (has_word(avail, kind_names[k]))
			snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s+%s",
				 want[0] ? " " : "", kind_names[k]);
	if (!want[0])
		return;
	r = write_at(own_fd, "cgroup.subtree_control", want);
	if (r == -EBUSY) {
		if ((size_t)snprintf(path, sizeof(path), "%s/uexec-%d.server", own, (int)getpid()) <
			    sizeof(cg->server_cg) &&
		    (mkdir(path, 0755) == 0 || errno == EEXIST)) {
			int sfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

			if (sfd >= 0 && write_at(sfd, "cgroup.procs", "0") == 0) {
				memcpy(cg->server_cg, path, strlen(path) + 1); /* fits: checked above */
				r = write_at(own_fd, "cgroup.subtree_control", want);
			}
			safe_close(sfd);
		}
	}
	if (r < 0) {
		/* Other processes share O (a container's root cgroup): back where uexec was. */
		if (cg->server_cg[0] && write_at(own_fd, "cgroup.procs", "0") == 0 &&
		    rmdir(cg->server_cg) == 0)
			cg->server_cg[0] = 0;
		return;
	}
	if (write_at(cg->base_fd, "cgroup.subtree_control", want) < 0)
		return;
	for (int k = 0; k < _SANDBOX_CG_KIND_MAX; k++)
		if (has_word(want, kind_names[k]))
			cg->where[k] = SANDBOX_CG_V2;
}

static void init_v1(struct sandbox_cg *cg)
{
	for (int k = 0; k < _SANDBOX_CG_KIND_MAX; k++) {
		char own[4096], *base = cg->v1_base[k];

		if (cg->where[k] != SANDBOX_CG_NONE || v1_own_dir(kind_names[k], own, sizeof(own)) < 0)
			continue;
		sandbox_cg_sweep(own);
		if ((size_t)snprintf(base, sizeof(cg->v1_base[k]), "%s/uexec-%d.procs", own,
				     (int)getpid()) >= sizeof(cg->v1_base[k]))
			continue;
		if (mkdir(base, 0755) < 0 && errno != EEXIST)
			continue;
		cg->v1_fd[k] = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (cg->v1_fd[k] >= 0 && sandbox_cg_own_lock(cg->v1_fd[k]) < 0)
			cg->v1_fd[k] = safe_close(cg->v1_fd[k]); /* another live uexec's */
		if (cg->v1_fd[k] >= 0)
			cg->where[k] = SANDBOX_CG_V1;
		else
			(void)rmdir(base);
	}
}

/*
 * This server's base below its own cgroup (own): made, opened and locked
 * (a held one is the base of a live uexec with our pid in another PID
 * namespace). Returns 0 or -errno with err.
 */
static int make_base(struct sandbox_cg *cg, const char *own, char *err, size_t errsz)
{
	int r;

	if ((size_t)snprintf(cg->base, sizeof(cg->base), "%s/uexec-%d.procs", own, (int)getpid()) >=
	    sizeof(cg->base)) {
		snprintf(err, errsz, "cgroup path too long");
		cg->base[0] = 0;
		return -ENAMETOOLONG;
	}
	if (mkdir(cg->base, 0755) < 0 && errno != EEXIST) {
		r = -errno;
		snprintf(err, errsz, "cannot create %s: %s%s", cg->base, strerror(errno),
			 errno == EACCES || errno == EPERM || errno == EROFS
				 ? " (not root and no delegated cgroup)" : "");
		return r;
	}
	cg->base_fd = open(cg->base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg->base_fd < 0) {
		r = -errno;
		snprintf(err, errsz, "%s: %s", cg->base, strerror(errno));
		(void)rmdir(cg->base);
		return r;
	}
	r = sandbox_cg_own_lock(cg->base_fd);
	if (r < 0) {
		snprintf(err, errsz, "%s is held by another uexec: %s", cg->base, strerror(-r));
		cg->base_fd = safe_close(cg->base_fd);
	}
	return r;
}

/* The start-up line: where the leaves go, how a tree is killed, which limits work (or why none). */
static void describe(const struct sandbox_cg *cg, const char *err, char *desc, size_t descsz)
{
	char lim[256] = "";

	for (int k = 0; k < _SANDBOX_CG_KIND_MAX; k++)
		snprintf(lim + strlen(lim), sizeof(lim) - strlen(lim), "%s%s %s", k ? ", " : "",
			 kind_names[k],
			 cg->where[k] == SANDBOX_CG_V2 ? "(v2)" :
			 cg->where[k] == SANDBOX_CG_V1 ? "(v1 hierarchy)" : "unavailable");
	if (cg->enabled)
		snprintf(desc, descsz,
			 "Per-process cgroups: v2 leaves under %s, whole-tree kill by %s%s%s; limits: %s",
			 cg->base, cg->has_kill ? "cgroup.kill" : "freeze + SIGKILL (no cgroup.kill)",
			 cg->server_cg[0] ? "; uexec moved itself to " : "", cg->server_cg, lim);
	else
		snprintf(desc, descsz,
			 "Per-process cgroups unavailable (%s): process/terminate, timeouts and session "
			 "expiry kill process groups only (a setsid descendant escapes them); limits: %s",
			 err[0] ? err : "no writable cgroup v2", lim);
}

void sandbox_cg_init(struct sandbox_cg *cg, bool want, char *desc, size_t descsz)
{
	char own[4096], err[4400] = "";
	_cleanup_close_ int own_fd = -1;
	int r;

	memset(cg, 0, sizeof(*cg));
	cg->base_fd = cg->supervisor_fd = -1;
	for (int k = 0; k < _SANDBOX_CG_KIND_MAX; k++)
		cg->v1_fd[k] = -1;

	r = netguard_own_cgroup_dir(own, sizeof(own), err, sizeof(err));
	if (r >= 0) {
		sandbox_cg_sweep(own);
		own_fd = open(own, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (!want) {
		/* What an earlier instance left is still swept. */
		for (int k = 0; k < _SANDBOX_CG_KIND_MAX; k++) {
			char v1[4096];

			if (v1_own_dir(kind_names[k], v1, sizeof(v1)) == 0)
				sandbox_cg_sweep(v1);
		}
		snprintf(desc, descsz, "Per-process cgroups: off (--process-cgroups=off): "
			 "process/terminate, timeouts and session expiry kill process groups only; "
			 "no limits");
		return;
	}
	if (r >= 0 && own_fd < 0) {
		snprintf(err, sizeof(err), "%s: %s", own, strerror(errno));
		r = -errno;
	}
	if (r >= 0)
		r = make_base(cg, own, err, sizeof(err));
	if (r >= 0) {
		cg->enabled = true;
		cg->has_kill = faccessat(cg->base_fd, "cgroup.kill", F_OK, 0) == 0;
		enable_v2(cg, own_fd, own);
	}
	init_v1(cg);
	describe(cg, err, desc, descsz);
}

/* ---- leaves ---- */

/* A guard below the base's parent gets the base's v2 controllers for its leaves (once). */
static int enable_in_parent(struct sandbox_cg *cg, int parent_fd)
{
	char want[128] = "", have[256];

	for (int k = 0; k < _SANDBOX_CG_KIND_MAX; k++)
		if (cg->where[k] == SANDBOX_CG_V2)
			snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s+%s",
				 want[0] ? " " : "", kind_names[k]);
	if (!want[0])
		return 0;
	if (sandbox_cg_read_at(parent_fd, "cgroup.subtree_control", have, sizeof(have)) >= 0) {
		bool all = true;

		for (int k = 0; k < _SANDBOX_CG_KIND_MAX; k++)
			if (cg->where[k] == SANDBOX_CG_V2 && !has_word(have, kind_names[k]))
				all = false;
		if (all)
			return 0;
	}
	return write_at(parent_fd, "cgroup.subtree_control", want);
}

static int write_u64_at(int dirfd, const char *file, uint64_t v)
{
	char num[32];

	snprintf(num, sizeof(num), "%" PRIu64, v);
	return write_at(dirfd, file, num);
}

/* The limits of the kinds enforced in this hierarchy (v2: the leaf; v1: each kind's own). */
static int set_limits(const struct sandbox_cg *cg, int fd, enum sandbox_cg_where where, int kind,
		      const struct sandbox_cg_limits *l)
{
	char cpu[64];
	int r = 0;

	if (cg->where[kind] != where)
		return 0;
	switch (kind) {
	case SANDBOX_CG_PIDS:
		if (l->pids_max)
			r = write_u64_at(fd, "pids.max", l->pids_max);
		break;
	case SANDBOX_CG_MEMORY:
		if (!l->memory_max)
			break;
		if (where == SANDBOX_CG_V2) {
			r = write_u64_at(fd, "memory.max", l->memory_max);
			/* Reached, the limit kills rather than swaps (no file: no swap accounting). */
			if (r == 0 && (r = write_at(fd, "memory.swap.max", "0")) == -ENOENT)
				r = 0;
		} else {
			r = write_u64_at(fd, "memory.limit_in_bytes", l->memory_max);
			if (r == 0 && (r = write_u64_at(fd, "memory.memsw.limit_in_bytes",
							l->memory_max)) == -ENOENT)
				r = 0;
		}
		break;
	case SANDBOX_CG_CPU:
		if (!l->cpu_milli)
			break;
		/* quota per 100 ms period: 1000 milli-CPUs = 100 ms */
		if (where == SANDBOX_CG_V2) {
			snprintf(cpu, sizeof(cpu), "%" PRIu64 " 100000", l->cpu_milli * 100);
			r = write_at(fd, "cpu.max", cpu);
		} else {
			r = write_u64_at(fd, "cpu.cfs_period_us", 100000);
			if (r == 0)
				r = write_u64_at(fd, "cpu.cfs_quota_us", l->cpu_milli * 100);
		}
		break;
	}
	return r;
}

static bool wants(const struct sandbox_cg_limits *l, int kind)
{
	return kind == SANDBOX_CG_PIDS ? l->pids_max : kind == SANDBOX_CG_MEMORY ? l->memory_max :
									     l->cpu_milli;
}

int sandbox_cg_leaf_new(struct sandbox_cg *cg, int parent_fd, const struct sandbox_cg_limits *l,
			struct sandbox_cg_leaf *ret)
{
	static const struct sandbox_cg_limits none = { 0 };
	struct sandbox_cg_leaf lf = { .parent_fd = -1, .fd = -1 };
	bool any_v1 = false;
	int r = 0;

	if (!l)
		l = &none;
	for (int k = 0; k < _SANDBOX_CG_KIND_MAX; k++) {
		lf.v1_procs[k] = -1;
		if (wants(l, k) && cg->where[k] == SANDBOX_CG_NONE)
			return -ENOTSUP;
		any_v1 |= wants(l, k) && cg->where[k] == SANDBOX_CG_V1;
	}
	if (!cg->enabled && !any_v1)
		return -ENOTSUP;
	snprintf(lf.name, sizeof(lf.name), "p%" PRIu64, ++cg->seq);
	lf.memory_limited = l->memory_max != 0;
	if (cg->enabled) {
		lf.parent_fd = parent_fd >= 0 ? parent_fd : cg->base_fd;
		if (parent_fd >= 0 && parent_fd != cg->base_fd && (r = enable_in_parent(cg, parent_fd)) < 0)
			return r;
		if (mkdirat(lf.parent_fd, lf.name, 0755) < 0)
			return -errno;
		lf.live = true;
		lf.fd = openat(lf.parent_fd, lf.name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (lf.fd < 0)
			r = -errno;
		for (int k = 0; r == 0 && k < _SANDBOX_CG_KIND_MAX; k++)
			r = set_limits(cg, lf.fd, SANDBOX_CG_V2, k, l);
	}
	for (int k = 0; r == 0 && k < _SANDBOX_CG_KIND_MAX; k++) {
		char procs[64];
		int fd;

		if (!wants(l, k) || cg->where[k] != SANDBOX_CG_V1)
			continue;
		if (mkdirat(cg->v1_fd[k], lf.name, 0755) < 0) {
			r = -errno;
			break;
		}
		lf.live = true;
		lf.v1_mask |= 1u << k;
		fd = openat(cg->v1_fd[k], lf.name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			r = -errno;
			break;
		}
		r = set_limits(cg, fd, SANDBOX_CG_V1, k, l);
		close(fd);
		snprintf(procs, sizeof(procs), "%s/cgroup.procs", lf.name);
		if (r == 0 && (lf.v1_procs[k] = openat(cg->v1_fd[k], procs, O_WRONLY | O_CLOEXEC)) < 0)
			r = -errno;
	}
	if (r < 0) {
		sandbox_cg_leaf_spawned(&lf);
		(void)sandbox_cg_leaf_remove(cg, &lf);
		return r;
	}
	*ret = lf;
	return 0;
}

void sandbox_cg_leaf_spawned(struct sandbox_cg_leaf *leaf)
{
	leaf->fd = safe_close(leaf->fd);
	for (int k = 0; k < _SANDBOX_CG_KIND_MAX; k++)
		leaf->v1_procs[k] = safe_close(leaf->v1_procs[k]);
}

int sandbox_cg_leaf_kill(const struct sandbox_cg *cg, const struct sandbox_cg_leaf *leaf)
{
	int fd;

	if (!leaf->live)
		return 0;
	if (leaf->parent_fd >= 0) {
		fd = openat(leaf->parent_fd, leaf->name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return errno == ENOENT ? 0 : -errno;
		kill_cgroup(fd, true);
		close(fd);
		return 0;
	}
	/* No v2 leaf: the v1 directories list the tree (all of it: they were entered before exec). */
	for (int k = 0; k < _SANDBOX_CG_KIND_MAX; k++) {
		if (!(leaf->v1_mask & (1u << k)))
			continue;
		fd = openat(cg->v1_fd[k], leaf->name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			continue;
		kill_cgroup(fd, false);
		close(fd);
		break;
	}
	return 0;
}

static uint64_t field_u64(const char *text, const char *key)
{
	size_t kl = strlen(key);

	for (const char *p = text; (p = strstr(p, key)); p += kl)
		if ((p == text || p[-1] == '\n') && p[kl] == ' ')
			return strtoull(p + kl + 1, NULL, 10);
	return 0;
}

uint64_t sandbox_cg_leaf_oom_kills(const struct sandbox_cg *cg, const struct sandbox_cg_leaf *leaf)
{
	char path[64], buf[1024];

	if (!leaf->live || !leaf->memory_limited)
		return 0;
	if (cg->where[SANDBOX_CG_MEMORY] == SANDBOX_CG_V2 && leaf->parent_fd >= 0) {
		snprintf(path, sizeof(path), "%s/memory.events", leaf->name);
		if (sandbox_cg_read_at(leaf->parent_fd, path, buf, sizeof(buf)) > 0)
			return field_u64(buf, "oom_kill");
	} else if (leaf->v1_mask & (1u << SANDBOX_CG_MEMORY)) {
		snprintf(path, sizeof(path), "%s/memory.oom_control", leaf->name);
		if (sandbox_cg_read_at(cg->v1_fd[SANDBOX_CG_MEMORY], path, buf, sizeof(buf)) > 0)
			return field_u64(buf, "oom_kill");
	}
	return 0;
}

bool sandbox_cg_leaf_dir(const struct sandbox_cg_leaf *leaf, int *ret_parent_fd,
			 const char **ret_name)
{
	if (!leaf->live || leaf->parent_fd < 0)
		return false;
	*ret_parent_fd = leaf->parent_fd;
	*ret_name = leaf->name;
	return true;
}

void sandbox_cg_leaf_removed(struct sandbox_cg_leaf *leaf)
{
	leaf->parent_fd = -1;
	leaf->live = leaf->v1_mask != 0;
}

int sandbox_cg_leaf_remove(struct sandbox_cg *cg, struct sandbox_cg_leaf *leaf)
{
	int r = 0;

	if (!leaf->live)
		return 0;
	if (leaf->parent_fd >= 0) {
		if (unlinkat(leaf->parent_fd, leaf->name, AT_REMOVEDIR) < 0 && errno != ENOENT)
			return -errno;
		leaf->parent_fd = -1;
	}
	for (int k = 0; k < _SANDBOX_CG_KIND_MAX; k++) {
		if (!(leaf->v1_mask & (1u << k)))
			continue;
		if (unlinkat(cg->v1_fd[k], leaf->name, AT_REMOVEDIR) < 0 && errno != ENOENT) {
			if (r == 0)
				r = -errno;
			continue;
		}
		leaf->v1_mask &= ~(1u << k);
	}
	if (r == 0)
		leaf->live = false;
	return r;
}

void sandbox_cg_done(struct sandbox_cg *cg)
{
	int r;

	if (cg->base_fd >= 0) {
		cg->base_fd = safe_close(cg->base_fd);
		r = sandbox_cg_purge(cg->base);
		if (r < 0)
			log_warning_errno(r, "Cannot remove the per-process cgroups under %s", cg->base);
	}
	for (int k = 0; k < _SANDBOX_CG_KIND_MAX; k++) {
		if (cg->v1_fd[k] < 0)
			continue;
		cg->v1_fd[k] = safe_close(cg->v1_fd[k]);
		r = sandbox_cg_purge(cg->v1_base[k]);
		if (r < 0)
			log_warning_errno(r, "Cannot remove the cgroups under %s", cg->v1_base[k]);
	}
	/* The supervisor sees EOF and exits (finding nothing left to purge). */
	cg->supervisor_fd = safe_close(cg->supervisor_fd);
	cg->supervisor = 0;
	/* uexec's own cgroup (pure v2) stays: it is in it until it exits; the next start sweeps it. */
}
