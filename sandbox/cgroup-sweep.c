/* SPDX-License-Identifier: MIT */
/*
 * The start-up sweep of the cgroups that dead uexec servers left
 * (uexec-<pid>.procs, uexec-<pid>.server; see cgroup.h, sandbox_cg_init),
 * and the lock by which a live server owns its base so that no sweep takes
 * it. sandbox_cg_init() (cgroup.c) sweeps its own cgroup and each v1
 * hierarchy's before it makes its bases.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "cgroup-internal.h"
#include "cgroup.h"
#include "log.h"
#include "macro.h"

/*
 * Ownership of a base: its uexec holds a flock on the directory for its whole
 * life (sandbox_cg_own_lock). The kernel drops it when that uexec dies,
 * however it dies, and it is seen from every PID namespace (one kernfs
 * inode), where a pid is not: a uexec in another PID namespace sharing this
 * cgroup has a pid that means nothing here (kill(pid, 0) fails, or names
 * another process).
 */
int sandbox_cg_own_lock(int dirfd)
{
	return flock(dirfd, LOCK_EX | LOCK_NB) < 0 ? -errno : 0;
}

/*
 * True when dir/uexec-<pid>.procs exists and a live uexec holds its lock.
 * The lock is taken (and kept on *ret_fd) when free, so that two starting
 * servers do not sweep the same leftover at once.
 */
static bool owned(const char *dir, unsigned long pid, int *ret_fd)
{
	char path[4096 + 64];
	int fd;

	*ret_fd = -1;
	snprintf(path, sizeof(path), "%s/uexec-%lu.procs", dir, pid);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return false; /* no base: nothing of a live server's to protect */
	if (sandbox_cg_own_lock(fd) < 0) {
		close(fd);
		return true;
	}
	*ret_fd = fd;
	return false;
}

/*
 * True for uexec-<our pid>.server when this process is in it: a binary
 * exec'd fresh in the same pid (the live upgrade's fallback, docs/UPGRADE.md)
 * starts where the old one moved itself, and purging it would kill itself.
 */
static bool holds_self(unsigned long pid, const char *suffix, const char *path)
{
	char buf[4096], *p, *end;
	int dfd;

	if ((pid_t)pid != getpid() || strcmp(suffix, "server") != 0)
		return false;
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return false;
	if (sandbox_cg_read_at(dfd, "cgroup.procs", buf, sizeof(buf)) <= 0) {
		close(dfd);
		return false;
	}
	close(dfd);
	for (p = buf; *p; p = end) {
		long v = strtol(p, &end, 10);

		if (end == p)
			break;
		if (v == (long)getpid())
			return true;
		while (*end == '\n')
			end++;
	}
	return false;
}

/*
 * Purges what uexec servers that are gone left in dir: uexec-<pid>.procs
 * (their processes' leaves), uexec-<pid>.server (empty once they died).
 * Left alone: a base whose lock a live uexec holds (any PID namespace), and,
 * for servers of versions before the lock, a pid that is alive here.
 */
void sandbox_cg_sweep(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		char path[4096 + 256], suffix[16];
		unsigned long pid;
		int end = 0, lock_fd;

		if (sscanf(de->d_name, "uexec-%lu.%15[a-z]%n", &pid, suffix, &end) != 2 ||
		    de->d_name[end] != 0 || pid == 0 || pid > INT32_MAX ||
		    (strcmp(suffix, "procs") != 0 && strcmp(suffix, "server") != 0))
			continue;
		if (owned(dir, pid, &lock_fd))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (holds_self(pid, suffix, path) ||
		    ((pid_t)pid != getpid() && (kill((pid_t)pid, 0) == 0 || errno != ESRCH))) {
			safe_close(lock_fd);
			continue;
		}
		if (sandbox_cg_purge(path) == 0)
			log_info("Removed the cgroup %s left by uexec %lu (its processes killed)", path,
				 pid);
		else
			log_warning("Cannot remove the cgroup %s left by uexec %lu", path, pid);
		safe_close(lock_fd);
	}
	closedir(d);
}
