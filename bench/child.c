/* SPDX-License-Identifier: MIT */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
/*
 * uexec-bench-child: the child processes the benchmarks spawn.
 *   exit                 print "T=<CLOCK_MONOTONIC ns>\n" and _exit(0) right away
 *   stream N US          print N such lines, one every US microseconds, then exit
 *   produce BYTES        write BYTES printable bytes (no newline) in 64 KiB writes
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void stamp(void)
{
	char b[48];
	int n = snprintf(b, sizeof(b), "T=%llu\n", (unsigned long long)now());
	if (write(1, b, (size_t)n) != n)
		_exit(1);
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "exit")) {
		stamp();
		_exit(0);
	}
	if (argc >= 4 && !strcmp(argv[1], "stream")) {
		long n = atol(argv[2]), us = atol(argv[3]);
		struct timespec d = { .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000 };
		for (long i = 0; i < n; i++) {
			stamp();
			nanosleep(&d, NULL);
		}
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[1], "produce")) {
		unsigned long long left = strtoull(argv[2], NULL, 10);
		static char buf[65536];
		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = (char)('a' + i % 26);
		while (left) {
			size_t n = left < sizeof(buf) ? (size_t)left : sizeof(buf);
			ssize_t w = write(1, buf, n);
			if (w <= 0)
				return 1;
			left -= (unsigned long long)w;
		}
		return 0;
	}
	fprintf(stderr, "usage: uexec-bench-child exit | stream N US | produce BYTES\n");
	return 2;
}
