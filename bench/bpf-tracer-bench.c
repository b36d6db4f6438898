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
 * metric (the child's CPU ns per syscall, median of --runs; the scenarios
 * alternate within each round) and, for the inside runs, the records, the
 * drops and this process's CPU ns per record drained. Needs root; says why and exits 77 otherwise.
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
#include "cgroup-dir.h"
#include "common.h"

#define NOBODY 65534

static char leaf[4096];
static long calls = 1000000;
static long child_calls; /* this run's */

/* The child: optionally joins the leaf, drops to nobody, times its loop (CPU time). */
static _Noreturn void child(bool join, bool fail, int out)
{
	char path[4200];
	struct timespec a, b;
	uint64_t ns;
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
	/* CPU time, user + system: the hook runs in the syscall, and time spent
	 * descheduled (this VM is shared) does not count. */
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	if (fail) {
		for (long i = 0; i < child_calls; i++)
			if (syscall(SYS_setuid, 0) != -1)
				_exit(4);
	} else {
		for (long i = 0; i < child_calls; i++)
			(void)syscall(SYS_getppid);
	}
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	ns = (uint64_t)(b.tv_sec - a.tv_sec) * 1000000000ull + (uint64_t)b.tv_nsec -
	     (uint64_t)a.tv_nsec;
	if (write(out, &ns, sizeof(ns)) != sizeof(ns))
		_exit(5);
	_exit(0);
}

static void count(void *ctx, const struct bpf_denial *d)
{
	(*(uint64_t *)ctx)++;
}

static uint64_t self_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * One run; returns the child's CPU ns per syscall. The tracer (if any) is
 * drained meanwhile; *consumer_ns gets the CPU time this process spent.
 */
static double run_once(struct bpf_tracer *t, bool join, bool fail, uint64_t *records,
		       uint64_t *consumer_ns)
{
	struct pollfd pfd = { .fd = t ? bpf_tracer_fd(t) : -1, .events = POLLIN };
	uint64_t ns = 0, cpu0 = self_cpu_ns();
	int p[2], st = 0;
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
	*consumer_ns += self_cpu_ns() - cpu0;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || read(p[0], &ns, sizeof(ns)) != sizeof(ns)) {
		fprintf(stderr, "bench child failed (status %d)\n", st);
		exit(1);
	}
	close(p[0]);
	return (double)ns / (double)child_calls;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

enum where { NONE, IDLE, OUTSIDE, INSIDE };

struct scenario {
	char name[64];
	struct bpf_tracer *t;	/* NULL: no tracer at all */
	enum where where;
	bool fail;
	long calls;		/* per run */
	double v[64];
	uint64_t records, dropped, consumer_ns;
};

#define MAX_SCEN 40
#define FILLERS 8

static void count_only(void *ctx, const struct bpf_denial *d)
{
	(*(uint64_t *)ctx)++;
}

/*
 * The reader's own cost: 8 cgroups fill the ring (5461 records) while nobody
 * reads, then one drain is timed. Returns CPU ns per record.
 */
static double drain_cost(struct bpf_tracer *t, const char *dir, uint64_t *ret_records)
{
	char leaves[FILLERS][sizeof(leaf)];
	uint64_t ids[FILLERS], rec = 0, t0, t1;
	int r;

	for (int i = 0; i < FILLERS; i++) {
		snprintf(leaves[i], sizeof(leaves[i]), "%s/uexec-bpf-bench-%d-%d", dir, (int)getpid(), i);
		if (mkdir(leaves[i], 0755) < 0 || bpf_tracer_cgroup_id(AT_FDCWD, leaves[i], &ids[i]) < 0 ||
		    bpf_tracer_watch_cgroup(t, ids[i]) < 0)
			abort();
	}
	child_calls = BPF_TRACER_MAX_PER_CGROUP;
	for (int i = 0; i < FILLERS; i++) {
		int st;
		pid_t pid;

		snprintf(leaf, sizeof(leaf), "%.4000s", leaves[i]);
		pid = fork();
		if (pid == 0) {
			int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);

			child(true, true, devnull);
		}
		if (pid < 0 || waitpid(pid, &st, 0) != pid)
			abort();
	}
	t0 = self_cpu_ns();
	do
		r = bpf_tracer_consume(t, count_only, &rec);
	while (r > 0);
	t1 = self_cpu_ns();
	for (int i = 0; i < FILLERS; i++) {
		(void)bpf_tracer_unwatch_cgroup(t, ids[i]);
		(void)rmdir(leaves[i]);
	}
	*ret_records = rec;
	return rec ? (double)(t1 - t0) / (double)rec : 0;
}

int main(int argc, char **argv)
{
	static const char *const hooks[] = { "tp_btf", "raw_tracepoint", "tracepoint" };
	static const char *const where_names[] = { "none", "idle", "outside", "inside" };
	static struct scenario sc[MAX_SCEN];
	struct bpf_tracer *tracers[3] = { NULL };
	char dir[3800], err[256];
	int runs = (int)opt_num(argc, argv, "--runs", 5);
	size_t n = 0;
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
	r = tests_own_cgroup_dir(dir, sizeof(dir));
	if (r < 0) {
		fprintf(stderr, "bpf-tracer-bench: no cgroup v2 directory: %s\n", strerror(-r));
		return 77;
	}
	snprintf(leaf, sizeof(leaf), "%s/uexec-bpf-bench-%d", dir, (int)getpid());
	if (mkdir(leaf, 0755) < 0 || bpf_tracer_cgroup_id(AT_FDCWD, leaf, &id) < 0) {
		fprintf(stderr, "bpf-tracer-bench: cgroup leaf %s: %s\n", leaf, strerror(errno));
		return 77;
	}

	for (int fail = 1; fail >= 0; fail--) {
		sc[n] = (struct scenario){ .where = NONE, .fail = fail, .calls = calls };
		snprintf(sc[n].name, sizeof(sc[n].name), "bpf_none_%s", fail ? "fail" : "ok");
		n++;
	}
	for (size_t h = 0; h < sizeof(hooks) / sizeof(hooks[0]); h++) {
		tracers[h] = bpf_tracer_open_hook(hooks[h], false, err, sizeof(err));
		if (!tracers[h]) {
			fprintf(stderr, "# %s: %s\n", hooks[h], err);
			continue;
		}
		for (int w = IDLE; w <= INSIDE; w++)
			for (int fail = 1; fail >= 0; fail--) {
				sc[n] = (struct scenario){ .t = tracers[h], .where = w, .fail = fail,
							   .calls = calls };
				snprintf(sc[n].name, sizeof(sc[n].name), "bpf_%s_%s_%s", hooks[h],
					 where_names[w], fail ? "fail" : "ok");
				n++;
			}
		/* Within the budget every failing call makes a record. */
		sc[n] = (struct scenario){ .t = tracers[h], .where = INSIDE, .fail = true,
					   .calls = BPF_TRACER_MAX_PER_CGROUP };
		snprintf(sc[n].name, sizeof(sc[n].name), "bpf_%s_inside_budget_fail", hooks[h]);
		n++;
	}

	/* Rounds of every scenario in turn, so that the host's noise hits all alike. */
	for (int i = 0; i < runs; i++)
		for (size_t k = 0; k < n; k++) {
			struct scenario *s = &sc[k];
			uint64_t d0 = s->t ? bpf_tracer_dropped(s->t) : 0;

			if (s->where >= OUTSIDE && bpf_tracer_watch_cgroup(s->t, id) < 0)
				abort();
			child_calls = s->calls;
			s->v[i] = run_once(s->t, s->where == INSIDE, s->fail, &s->records,
					   &s->consumer_ns);
			if (s->where >= OUTSIDE && bpf_tracer_unwatch_cgroup(s->t, id) < 0)
				abort();
			if (s->t)
				s->dropped += bpf_tracer_dropped(s->t) - d0;
		}

	for (size_t k = 0; k < n; k++) {
		struct scenario *s = &sc[k];
		unsigned long long iters = (unsigned long long)s->calls * (unsigned long long)runs;
		char name[96];

		qsort(s->v, (size_t)runs, sizeof(s->v[0]), cmp_double);
		emit(s->name, "ns", s->v[runs / 2], iters);
		if (s->where == INSIDE && s->fail) {
			snprintf(name, sizeof(name), "%.63s_records", s->name);
			emit(name, "count", (double)s->records, (unsigned long long)runs);
			snprintf(name, sizeof(name), "%.63s_dropped", s->name);
			emit(name, "count", (double)s->dropped, (unsigned long long)runs);
			snprintf(name, sizeof(name), "%.63s_reader_cpu_per_run", s->name);
			emit(name, "us", (double)s->consumer_ns / 1e3 / runs, (unsigned long long)runs);
		}
	}
	{
		char saved[sizeof(leaf)];
		double v[64];
		uint64_t rec = 0;

		snprintf(saved, sizeof(saved), "%s", leaf);
		struct bpf_tracer *any = tracers[0] ? tracers[0] : tracers[1] ? tracers[1] : tracers[2];

		for (int i = 0; any && i < runs; i++)
			v[i] = drain_cost(any, dir, &rec);
		if (any) {
			qsort(v, (size_t)runs, sizeof(v[0]), cmp_double);
			emit("bpf_drain_full_ring_per_record", "ns", v[runs / 2], rec);
		}
		snprintf(leaf, sizeof(leaf), "%s", saved);
	}
	for (size_t h = 0; h < 3; h++)
		bpf_tracer_close(tracers[h]);
	(void)rmdir(leaf);
	return 0;
}
