/* SPDX-License-Identifier: MIT */
/*
 * bpf-tracer-bench: what the denial tracer (sandbox/bpf-tracer.c) costs a
 * syscall-heavy program. A child runs a loop of N syscalls that fail with
 * EPERM (setuid(0) as nobody) or succeed (getppid), timed in the child:
 *   none     no tracer loaded
 *   idle     tracer loaded, no cgroup watched (so not attached)
 *   outside  tracer attached, the child's cgroup not watched (what every other
 *            process of the host pays: the exit hook runs on all syscalls)
 *   inside   the child in the watched cgroup v2 leaf, the parent draining the
 *            ring with poll() + bpf_tracer_consume() meanwhile
 * for each sys_exit attachment the kernel loads. Prints one JSON line per
 * metric (ns per syscall, median of --runs) and the records and drops of the
 * inside runs. Needs root; says why and exits 77 otherwise.
 *
 * usage: bpf-tracer-bench [--calls N] [--runs R]
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bpf-tracer.h"
#include "common.h"

#define NOBODY 65534

static char leaf[4096];
static long calls = 1000000;

/* This process's cgroup v2 directory (mountinfo + /proc/self/cgroup). */
static int own_cgroup_dir(char *out, size_t outsz)
{
	char line[4096], root[1024] = "", mnt[1024] = "", rel[4096] = "";
	FILE *f = fopen("/proc/self/mountinfo", "re");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - ");

		if (sep && strncmp(sep + 3, "cgroup2 ", 8) == 0 &&
		    sscanf(line, "%*s %*s %*s %1023s %1023s", root, mnt) == 2)
			break;
		root[0] = mnt[0] = '\0';
	}
	fclose(f);
	f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "0::", 3) == 0) {
			snprintf(rel, sizeof(rel), "%s", line + 3);
			rel[strcspn(rel, "\n")] = '\0';
		}
	fclose(f);
	if (!mnt[0] || !rel[0] || strncmp(rel, root, strlen(root)) != 0)
		return -ENOENT;
	snprintf(out, outsz, "%s/%s", mnt, rel + (strcmp(root, "/") == 0 ? 0 : strlen(root)));
	return 0;
}

/* The child: optionally joins the leaf, drops to nobody, times its loop. */
static _Noreturn void child(bool join, bool fail, int out)
{
	char path[4200];
	uint64_t t0, ns;
	int fd;

	if (join) {
		snprintf(path, sizeof(path), "%s/cgroup.procs", leaf);
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, "0", 1) != 1)
			_exit(2);
		close(fd);
	}
	if (syscall(SYS_setresgid, NOBODY, NOBODY, NOBODY) < 0 ||
	    syscall(SYS_setresuid, NOBODY, NOBODY, NOBODY) < 0)
		_exit(3);
	t0 = mono_ns();
	if (fail) {
		for (long i = 0; i < calls; i++)
			if (syscall(SYS_setuid, 0) != -1)
				_exit(4);
	} else {
		for (long i = 0; i < calls; i++)
			(void)syscall(SYS_getppid);
	}
	ns = mono_ns() - t0;
	if (write(out, &ns, sizeof(ns)) != sizeof(ns))
		_exit(5);
	_exit(0);
}

static void count(void *ctx, const struct bpf_denial *d)
{
	(*(uint64_t *)ctx)++;
}

/* One run; returns ns per syscall. The tracer (if any) is drained meanwhile. */
static double run_once(struct bpf_tracer *t, bool join, bool fail, uint64_t *records)
{
	struct pollfd pfd = { .fd = t ? bpf_tracer_fd(t) : -1, .events = POLLIN };
	int p[2], st = 0;
	uint64_t ns = 0;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		abort();
	pid = fork();
	if (pid < 0)
		abort();
	if (pid == 0)
		child(join, fail, p[1]);
	close(p[1]);
	for (;;) {
		pid_t w = waitpid(pid, &st, t ? WNOHANG : 0);

		if (w == pid)
			break;
		if (poll(&pfd, 1, 10) > 0)
			(void)bpf_tracer_consume(t, count, records);
	}
	if (t)
		while (bpf_tracer_consume(t, count, records) > 0)
			;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || read(p[0], &ns, sizeof(ns)) != sizeof(ns)) {
		fprintf(stderr, "bench child failed (status %d)\n", st);
		exit(1);
	}
	close(p[0]);
	return (double)ns / (double)calls;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void scenario(const char *name, struct bpf_tracer *t, bool join, bool fail, int runs)
{
	double v[64];
	uint64_t records = 0, dropped0 = t ? bpf_tracer_dropped(t) : 0;
	char buf[128];

	for (int i = 0; i < runs; i++)
		v[i] = run_once(t, join, fail, &records);
	qsort(v, (size_t)runs, sizeof(v[0]), cmp_double);
	emit(name, "ns", v[runs / 2], (unsigned long long)calls * (unsigned long long)runs);
	if (t && join && fail) {
		snprintf(buf, sizeof(buf), "%s_records", name);
		emit(buf, "count", (double)records, (unsigned long long)runs);
		snprintf(buf, sizeof(buf), "%s_dropped", name);
		emit(buf, "count", (double)(bpf_tracer_dropped(t) - dropped0),
		     (unsigned long long)runs);
	}
}

int main(int argc, char **argv)
{
	static const char *const hooks[] = { "tp_btf", "raw_tracepoint", "tracepoint" };
	char dir[3800], err[256], name[128];
	int runs = (int)opt_num(argc, argv, "--runs", 5);
	uint64_t id;
	struct bpf_tracer *t;
	int r;

	calls = (long)opt_num(argc, argv, "--calls", 1000000);
	if (runs < 1 || runs > 64 || calls < 1) {
		fprintf(stderr, "usage: %s [--calls N] [--runs 1..64]\n", argv[0]);
		return 2;
	}
	t = bpf_tracer_open(err, sizeof(err));
	if (!t) {
		fprintf(stderr, "bpf-tracer-bench: tracer unavailable: %s\n", err);
		return 77;
	}
	bpf_tracer_close(t);
	r = own_cgroup_dir(dir, sizeof(dir));
	if (r < 0) {
		fprintf(stderr, "bpf-tracer-bench: no cgroup v2 directory: %s\n", strerror(-r));
		return 77;
	}
	snprintf(leaf, sizeof(leaf), "%s/uexec-bpf-bench-%d", dir, (int)getpid());
	if (mkdir(leaf, 0755) < 0 || bpf_tracer_cgroup_id(AT_FDCWD, leaf, &id) < 0) {
		fprintf(stderr, "bpf-tracer-bench: cgroup leaf %s: %s\n", leaf, strerror(errno));
		return 77;
	}

	scenario("bpf_none_fail", NULL, false, true, runs);
	scenario("bpf_none_ok", NULL, false, false, runs);
	for (size_t h = 0; h < sizeof(hooks) / sizeof(hooks[0]); h++) {
		t = bpf_tracer_open_hook(hooks[h], false, err, sizeof(err));
		if (!t) {
			fprintf(stderr, "# %s: %s\n", hooks[h], err);
			continue;
		}
		/* Loaded but no cgroup watched: detached, so this should match "none". */
		snprintf(name, sizeof(name), "bpf_%s_idle_ok", hooks[h]);
		scenario(name, t, false, false, runs);
		if (bpf_tracer_watch_cgroup(t, id) < 0)
			abort();
		snprintf(name, sizeof(name), "bpf_%s_outside_fail", hooks[h]);
		scenario(name, t, false, true, runs);
		snprintf(name, sizeof(name), "bpf_%s_outside_ok", hooks[h]);
		scenario(name, t, false, false, runs);
		snprintf(name, sizeof(name), "bpf_%s_inside_fail", hooks[h]);
		scenario(name, t, true, true, runs);
		snprintf(name, sizeof(name), "bpf_%s_inside_ok", hooks[h]);
		scenario(name, t, true, false, runs);
		bpf_tracer_close(t);
	}
	(void)rmdir(leaf);
	return 0;
}
