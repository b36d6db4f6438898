/* SPDX-License-Identifier: MIT */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
/*
 * kernel-spawn: the kernel's own floor for "start a process and learn that it
 * exited": posix_spawn(/bin/true) in a new session with stdout/stderr on a
 * pipe (like an exec-server child), pidfd_open, poll(pidfd), waitid(P_PIDFD).
 *   kernel-spawn [--threads T] [--seconds S]
 * Prints kernel_spawn_wait_{p50,p99} (spawn to reaped, 1 thread),
 * kernel_spawn_call_{p50,p99} (posix_spawn() alone: returns once the child
 * exec'd, the floor for a process/start reply), kernel_spawn_cpu (the
 * spawner's own CPU per spawn) and kernel_spawn_per_sec_<T>t.
 */
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

struct worker {
	pthread_t th;
	double seconds;
	long done;
	struct samples lat, call;
};

static int spawn_wait(struct samples *call)
{
	uint64_t t0 = mono_ns();
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_adddup2(&fa, p[1], 2);
	posix_spawnattr_t at;
	posix_spawnattr_init(&at);
#ifdef POSIX_SPAWN_SETSID
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID);
#endif
	char *argv[] = { "/bin/true", NULL };
	pid_t pid;
	int e = posix_spawn(&pid, "/bin/true", &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (call)
		samples_add(call, mono_ns() - t0);
	close(p[1]);
	if (e) {
		close(p[0]);
		errno = e;
		return -1;
	}
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd < 0)
		return -1;
	struct pollfd q = { .fd = pfd, .events = POLLIN };
	while (poll(&q, 1, -1) < 0 && errno == EINTR)
		;
	siginfo_t si;
	waitid((idtype_t)P_PIDFD, (id_t)pfd, &si, WEXITED);
	close(pfd);
	char b[64];
	while (read(p[0], b, sizeof(b)) > 0) /* EOF, as a server would see it */
		;
	close(p[0]);
	return 0;
}

static void *run(void *arg)
{
	struct worker *w = arg;
	uint64_t end = mono_ns() + (uint64_t)(w->seconds * 1e9);
	for (;;) {
		uint64_t t0 = mono_ns();
		if (t0 >= end)
			break;
		if (spawn_wait(&w->call) < 0) {
			perror("spawn");
			exit(1);
		}
		samples_add(&w->lat, mono_ns() - t0);
		w->done++;
	}
	return NULL;
}

static double run_threads(int n, double seconds, struct samples *lat, struct samples *call)
{
	struct worker *w = calloc((size_t)n, sizeof(*w));
	uint64_t t0 = mono_ns();
	for (int i = 0; i < n; i++) {
		w[i].seconds = seconds;
		pthread_create(&w[i].th, NULL, run, &w[i]);
	}
	long done = 0;
	for (int i = 0; i < n; i++) {
		pthread_join(w[i].th, NULL);
		done += w[i].done;
	}
	double el = (double)(mono_ns() - t0) / 1e9;
	if (lat)
		*lat = w[0].lat;
	if (call)
		*call = w[0].call;
	return (double)done / el;
}

int main(int argc, char **argv)
{
	double secs = opt_num(argc, argv, "--seconds", 2);
	int threads = (int)opt_num(argc, argv, "--threads", 8);
	struct samples lat = { 0 }, call = { 0 };
	run_threads(1, 0.2, NULL, NULL);
	struct rusage ru0, ru1;
	getrusage(RUSAGE_SELF, &ru0);
	double r1 = run_threads(1, secs, &lat, &call);
	getrusage(RUSAGE_SELF, &ru1);
	double cpu_ms = ((double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec) + (double)(ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec)) * 1e3 +
			((double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec) + (double)(ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec)) / 1e3;
	emit("kernel_spawn_per_sec_1t", "1/s", r1, lat.n);
	/* the spawning process's own CPU (children excluded), as server CPU per spawn */
	emit("kernel_spawn_cpu", "ms", lat.n ? cpu_ms / (double)lat.n : 0, lat.n);
	emit_lat("kernel_spawn_wait", &lat);
	emit_lat("kernel_spawn_call", &call);
	double rn = run_threads(threads, secs, NULL, NULL);
	char name[64];
	snprintf(name, sizeof(name), "kernel_spawn_per_sec_%dt", threads);
	emit(name, "1/s", rn, 0);
	return 0;
}
