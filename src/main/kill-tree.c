/* SPDX-License-Identifier: MIT */
/*
 * The drain timeout's fallback kill for processes without a cgroup of their
 * own: a /proc walk from each live process down its descendants. Split out of
 * server.c (issue 24).
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conn.h"
#include "kill-tree.h"
#include "proc.h"
#include "server.h"
#include "session.h"

struct pid_link {
	pid_t pid, ppid;
};

static int by_ppid(const void *a, const void *b)
{
	const struct pid_link *x = a, *y = b;

	return (x->ppid > y->ppid) - (x->ppid < y->ppid);
}

/* The first entry of all[0..n) (sorted by ppid) whose ppid is ppid, or n. */
static size_t first_child(const struct pid_link *all, size_t n, pid_t ppid)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (all[mid].ppid < ppid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The fallback without per-process cgroups: SIGKILL to every descendant of
 * the live processes that have no cgroup of their own, found through /proc's
 * parent links while the parents are still alive: a process that left its
 * group (setsid) is still in the tree. One that was orphaned before (its
 * parent gone, adopted by init) is not found: docs/ARCHITECTURE.md,
 * "Operations". Runs once, at the drain timeout, and only when such a process
 * exists, so the blocking /proc walk is acceptable; O(n log n) in the host's
 * processes. Returns the number of processes whose tree was walked.
 */
unsigned server_kill_descendants(struct server *s)
{
	struct pid_link *all = NULL, *grown;
	size_t n = 0, cap = 0, head = 0, tail = 0;
	pid_t *queue = NULL;
	struct session *ss;
	struct proc *p;
	struct dirent *de;
	unsigned roots = 0;
	DIR *d;

	list_for_each_entry(ss, &s->sessions, link)
		list_for_each_entry(p, &ss->procs_list, link)
			if (!p->closed && !p->reaped && !p->has_cg)
				roots++;
	if (roots == 0)
		return 0; /* every tree is in a cgroup: no walk */
	d = opendir("/proc");
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char path[64], buf[512], *rp;
		pid_t pid = (pid_t)atoi(de->d_name);
		ssize_t len;
		int fd;

		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, buf, sizeof(buf) - 1);
		safe_close(fd);
		if (len <= 0)
			continue;
		buf[len] = 0;
		rp = strrchr(buf, ')'); /* the name may hold anything; the fields follow the last ')' */
		if (!rp || strlen(rp) < 5)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 1024;
			grown = realloc(all, cap * sizeof(*all));
			if (!grown)
				break;
			all = grown;
		}
		all[n].pid = pid;
		all[n++].ppid = (pid_t)atoi(rp + 4); /* ") S PPID" */
	}
	closedir(d);
	/* every pid enters the queue at most once: the roots, then each child once */
	queue = calloc(n + s->n_sessions + 1, sizeof(pid_t));
	if (!queue || !all)
		goto out;
	qsort(all, n, sizeof(*all), by_ppid);
	list_for_each_entry(ss, &s->sessions, link)
		list_for_each_entry(p, &ss->procs_list, link)
			if (!p->closed && !p->reaped && !p->has_cg && tail < n)
				queue[tail++] = p->pid;
	while (head < tail) {
		pid_t parent = queue[head++];

		for (size_t i = first_child(all, n, parent); i < n && all[i].ppid == parent; i++)
			if (tail < n && all[i].pid != parent)
				queue[tail++] = all[i].pid;
	}
	for (size_t i = 0; i < tail; i++)
		(void)kill(queue[i], SIGKILL);
out:
	free(all);
	free(queue);
	return roots;
}
