/* SPDX-License-Identifier: MIT */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
/*
 * kernel-pipe: the kernel's own throughput limits for child output.
 *   kernel-pipe raw    [--pty] [--bytes N] [--runs R]   child writes N bytes, parent reads (64 KiB reads)
 *   kernel-pipe b64tcp [--pty] [--bytes N] [--chunk N] [--runs R]
 *        parent reads the child's output, base64-encodes each read into a
 *        process/output JSON text frame and writes it to a loopback TCP socket
 *        whose other end (a separate process) reads and discards: the data
 *        path of an exec-server, with no event loop and no JSON library
 *        (and the server's own base64 encoder, proto/base64.c).
 * A limit is the best of R runs (default 3): the machine is shared, and a
 * limit is what the kernel can do, not what it did once.
 */
#include "common.h"
#include "wsc.h"
#include "base64.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pty.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

static pid_t start_producer(int pty, unsigned long long bytes, int *rfd)
{
	int r, w;
	if (pty) {
		if (openpty(&r, &w, NULL, NULL, NULL) < 0) {
			perror("openpty");
			exit(1);
		}
	} else {
		int p[2];
		if (pipe(p) < 0) {
			perror("pipe");
			exit(1);
		}
		r = p[0];
		w = p[1];
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(r);
		if (pty)
			setsid();
		static char buf[65536];
		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = (char)('a' + i % 26);
		while (bytes) {
			size_t n = bytes < sizeof(buf) ? (size_t)bytes : sizeof(buf);
			ssize_t k = write(w, buf, n);
			if (k <= 0)
				_exit(1);
			bytes -= (unsigned long long)k;
		}
		_exit(0);
	}
	close(w);
	*rfd = r;
	return pid;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static double run_raw(int pty, unsigned long long bytes)
{
	int fd;
	uint64_t t0 = mono_ns();
	pid_t pid = start_producer(pty, bytes, &fd);
	static char buf[65536];
	unsigned long long got = 0;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n > 0) {
			got += (unsigned long long)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		break; /* EOF, or EIO on a PTY master once the child is gone */
	}
	double s = (double)(mono_ns() - t0) / 1e9;
	waitpid(pid, NULL, 0);
	return (double)got / s / 1e6;
}

static double run_b64tcp(int pty, unsigned long long bytes, size_t chunk)
{
	int ls = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(ls, 1) < 0 ||
	    getsockname(ls, (struct sockaddr *)&sa, &sl) < 0) {
		perror("listen");
		exit(1);
	}
	uint64_t t0 = mono_ns();
	pid_t reader = fork();
	if (reader == 0) {
		int c = socket(AF_INET, SOCK_STREAM, 0);
		int one = 1;
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (connect(c, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			_exit(1);
		static char buf[262144];
		while (read(c, buf, sizeof(buf)) > 0)
			;
		_exit(0);
	}
	int s = accept(ls, NULL, NULL);
	int one = 1;
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	int fd;
	pid_t pid = start_producer(pty, bytes, &fd);
	char *in = malloc(chunk);
	char *frame = malloc(chunk * 4 / 3 + 256);
	unsigned long long got = 0, seq = 0;
	for (;;) {
		ssize_t n = read(fd, in, chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (unsigned long long)n;
		char *j = frame + 10;
		int pre = sprintf(j, "{\"method\":\"process/output\",\"params\":{\"processId\":\"t\",\"seq\":%llu,"
				     "\"stream\":\"%s\",\"chunk\":\"", ++seq, pty ? "pty" : "stdout");
		size_t e = base64_encode((const uint8_t *)in, (size_t)n, j + pre);
		memcpy(j + pre + e, "\"}}", 3);
		size_t pl = (size_t)pre + e + 3;
		unsigned char *h;
		size_t hl;
		if (pl < 65536) {
			h = (unsigned char *)j - 4;
			h[1] = 126;
			h[2] = (unsigned char)(pl >> 8);
			h[3] = (unsigned char)pl;
			hl = 4;
		} else {
			h = (unsigned char *)j - 10;
			h[1] = 127;
			for (int i = 0; i < 8; i++)
				h[2 + i] = (unsigned char)((uint64_t)pl >> (56 - 8 * i));
			hl = 10;
		}
		h[0] = 0x81;
		if (write_all(s, (char *)h, hl + pl) < 0) {
			perror("write");
			exit(1);
		}
	}
	close(s);
	waitpid(reader, NULL, 0);
	double secs = (double)(mono_ns() - t0) / 1e9;
	waitpid(pid, NULL, 0);
	close(ls);
	free(in);
	free(frame);
	return (double)got / secs / 1e6;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2) {
		fprintf(stderr, "usage: kernel-pipe raw|b64tcp [--pty] [--bytes N] [--chunk N]\n");
		return 2;
	}
	int pty = opt_flag(argc, argv, "--pty");
	unsigned long long bytes = (unsigned long long)opt_num(argc, argv, "--bytes", 256.0 * 1024 * 1024);
	size_t chunk = (size_t)opt_num(argc, argv, "--chunk", 65536);
	int runs = (int)opt_num(argc, argv, "--runs", 3);
	int raw = !strcmp(argv[1], "raw");
	if (!raw && strcmp(argv[1], "b64tcp"))
		return 2;
	double best = 0;
	for (int i = 0; i < runs; i++) {
		double v = raw ? run_raw(pty, bytes) : run_b64tcp(pty, bytes, chunk);
		if (v > best)
			best = v;
	}
	const char *name = raw ? (pty ? "kernel_pty_read" : "kernel_pipe_read")
			       : (pty ? "kernel_pty_b64_tcp" : "kernel_pipe_b64_tcp");
	emit(name, "MB/s", best, (unsigned long long)runs * bytes);
	return 0;
}
