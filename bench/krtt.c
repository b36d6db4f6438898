/* SPDX-License-Identifier: MIT */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
/*
 * kernel-rtt: the floor for a JSON-RPC round trip on loopback TCP. A
 * single-threaded poll() echo server (separate process) and a closed-loop
 * client with C connections, one 128-byte message outstanding on each.
 *   kernel-rtt [--conns C] [--seconds S]
 * Prints kernel_tcp_rtt_{p50,p99}_<C>c and kernel_tcp_rtt_per_sec_<C>c.
 */
#include "common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MSG 128

static void nodelay(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void serve(int ls, int n)
{
	struct pollfd p[n];
	for (int i = 0; i < n; i++) {
		p[i].fd = accept(ls, NULL, NULL);
		nodelay(p[i].fd);
		p[i].events = POLLIN;
	}
	char buf[65536];
	int open = n;
	while (open) {
		if (poll(p, (nfds_t)n, -1) < 0)
			continue;
		for (int i = 0; i < n; i++) {
			if (!p[i].revents)
				continue;
			ssize_t k = read(p[i].fd, buf, sizeof(buf));
			if (k <= 0) {
				close(p[i].fd);
				p[i].fd = -1;
				open--;
				continue;
			}
			if (write(p[i].fd, buf, (size_t)k) != k)
				_exit(1);
		}
	}
	_exit(0);
}

int main(int argc, char **argv)
{
	int n = (int)opt_num(argc, argv, "--conns", 1);
	double secs = opt_num(argc, argv, "--seconds", 2);
	signal(SIGPIPE, SIG_IGN);
	int ls = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(ls, 128) < 0 ||
	    getsockname(ls, (struct sockaddr *)&sa, &sl) < 0) {
		perror("listen");
		return 1;
	}
	pid_t srv = fork();
	if (srv == 0)
		serve(ls, n);
	close(ls);
	struct pollfd p[n];
	uint64_t sent[n];
	size_t have[n];
	for (int i = 0; i < n; i++) {
		p[i].fd = socket(AF_INET, SOCK_STREAM, 0);
		nodelay(p[i].fd);
		if (connect(p[i].fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			perror("connect");
			return 1;
		}
		p[i].events = POLLIN;
	}
	char msg[MSG], buf[4096];
	memset(msg, 'x', sizeof(msg));
	struct samples lat = { 0 };
	long done = 0;
	uint64_t t0 = 0, warm_end = mono_ns() + 200000000ull, end = warm_end + (uint64_t)(secs * 1e9);
	for (int i = 0; i < n; i++) {
		sent[i] = mono_ns();
		have[i] = 0;
		if (write(p[i].fd, msg, MSG) != MSG)
			return 1;
	}
	int active = n;
	while (active) {
		poll(p, (nfds_t)n, -1);
		for (int i = 0; i < n; i++) {
			if (!p[i].revents || p[i].fd < 0)
				continue;
			ssize_t k = read(p[i].fd, buf, sizeof(buf));
			if (k <= 0)
				return 1;
			have[i] += (size_t)k;
			if (have[i] < MSG)
				continue;
			have[i] = 0;
			uint64_t t = mono_ns();
			if (t >= warm_end) {
				if (!t0)
					t0 = t;
				samples_add(&lat, t - sent[i]);
				done++;
			}
			if (t >= end) {
				shutdown(p[i].fd, SHUT_WR);
				p[i].fd = -p[i].fd - 1; /* poll ignores negative fds */
				active--;
				continue;
			}
			sent[i] = t;
			if (write(p[i].fd, msg, MSG) != MSG)
				return 1;
		}
	}
	double el = (double)(mono_ns() - t0) / 1e9;
	for (int i = 0; i < n; i++)
		close(-p[i].fd - 1);
	waitpid(srv, NULL, 0);
	char name[64];
	snprintf(name, sizeof(name), "kernel_tcp_rtt_per_sec_%dc", n);
	emit(name, "1/s", (double)done / el, (unsigned long long)done);
	snprintf(name, sizeof(name), "kernel_tcp_rtt_%dc", n);
	emit_lat(name, &lat);
	return 0;
}
