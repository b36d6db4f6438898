/* SPDX-License-Identifier: MIT */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
/*
 * uexec-proxybench: the managed network proxy against a direct connection
 * (bench.py's `proxy` scenario). One program is the origin and the client, so
 * uexec's proxy and the reference's are driven by the same code.
 *
 *   uexec-proxybench origin
 *       Listens on 127.0.0.1:0, prints "tcp://127.0.0.1:PORT", one thread per
 *       connection. A connection that starts with "SRC <n>\n" gets n bytes and
 *       is closed; one that starts with "SINK <n>\n" sends n bytes and gets
 *       "OK\n"; anything else is read as an HTTP request head and answered
 *       "HTTP/1.1 200 OK", Content-Length: 2, "ok", Connection: close.
 *
 *   uexec-proxybench MODE --origin PORT [--proxy 127.0.0.1:PORT] [options]
 *     Without --proxy: direct to the origin. With it: through the HTTP proxy
 *     (CONNECT 127.0.0.1:PORT for connect/tput/upload, absolute-form GET).
 *     connect [--iters N] [--seconds S] [--warmup W]
 *         px_connect_p50/p99: connect() start -> (proxy) the CONNECT's 200 head
 *         read completely, (direct) connect() returned. A new connection each.
 *     get [--iters N] [--seconds S] [--warmup W]
 *         px_get_p50/p99: connect() start -> the whole 2-byte response read.
 *         A new connection per request, "Connection: close".
 *     tput [--bytes N]      px_tput (MB/s, origin -> client, one stream) and
 *     upload [--bytes N]    px_upload (MB/s, client -> origin, one stream):
 *         from connect() start (including the CONNECT) to the last byte
 *         (upload: the origin's "OK"). px_client_cpu_per_mb: this client's CPU.
 *   connect/get also print _count (iterations measured + warmup), so bench.py
 *   can divide the server's CPU across the run.
 */
#include "common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define CHUNK (256 * 1024)

static int g_origin_port, g_proxy_port = -1;

static void die(const char *what)
{
	fprintf(stderr, "proxybench: %s: %s\n", what, errno ? strerror(errno) : "failed");
	exit(1);
}

static void nodelay(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int tcp_connect(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket");
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		die("connect");
	struct timeval tv = {.tv_sec = 30};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	nodelay(fd);
	return fd;
}

/* The origin's write: -1 on failure, never exits the process. */
static int send_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t k = write(fd, c, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

/* The clients' write: a failure ends the benchmark. */
static void write_all(int fd, const void *p, size_t n)
{
	if (send_all(fd, p, n) < 0)
		die("write");
}

/* Reads until "\r\n\r\n"; returns the head's length, with buf holding *got bytes (head + any more). */
static size_t read_head(int fd, char *buf, size_t cap, size_t *got)
{
	size_t n = 0;
	for (;;) {
		ssize_t k = read(fd, buf + n, cap - 1 - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			die(k == 0 ? "EOF before the end of a response head" : "read (head)");
		n += (size_t)k;
		buf[n] = 0;
		char *e = strstr(buf, "\r\n\r\n");
		if (e) {
			*got = n;
			return (size_t)(e - buf) + 4;
		}
		if (n >= cap - 1)
			die("response head too long");
	}
}

static void expect_200(const char *buf, const char *what)
{
	if (strncmp(buf, "HTTP/1.1 200", 12) != 0 && strncmp(buf, "HTTP/1.0 200", 12) != 0) {
		fprintf(stderr, "proxybench: %s answered: %.300s\n", what, buf);
		exit(1);
	}
}

/* Proxied: CONNECT to the origin through the proxy; the fd is then a tunnel to it. */
static int open_stream(void)
{
	if (g_proxy_port < 0)
		return tcp_connect(g_origin_port);
	int fd = tcp_connect(g_proxy_port);
	char req[160], buf[4096];
	int n = snprintf(req, sizeof(req), "CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n",
			 g_origin_port, g_origin_port);
	write_all(fd, req, (size_t)n);
	size_t got, head = read_head(fd, buf, sizeof(buf), &got);
	expect_200(buf, "CONNECT");
	if (got != head)
		die("bytes after the CONNECT reply before any request");
	return fd;
}

/* ------------------------------------------------------------------ origin */

static char g_data[CHUNK];

static void *origin_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	nodelay(fd);
	struct timeval tv = {.tv_sec = 10};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	char buf[8192];
	size_t n = 0;
	for (;;) {
		ssize_t k = read(fd, buf + n, sizeof(buf) - 1 - n);
		if (k <= 0)
			goto out;
		n += (size_t)k;
		buf[n] = 0;
		char *nl = strchr(buf, '\n');
		if (nl && (strncmp(buf, "SRC ", 4) == 0 || strncmp(buf, "SINK ", 5) == 0))
			break;
		if (strstr(buf, "\r\n\r\n"))
			break;
		if (n >= sizeof(buf) - 1)
			goto out;
	}
	if (strncmp(buf, "SRC ", 4) == 0) {
		unsigned long long left = strtoull(buf + 4, NULL, 10);
		while (left) {
			size_t w = left < CHUNK ? (size_t)left : CHUNK;
			ssize_t k = write(fd, g_data, w);
			if (k <= 0)
				goto out;
			left -= (unsigned long long)k;
		}
	} else if (strncmp(buf, "SINK ", 5) == 0) {
		unsigned long long left = strtoull(buf + 5, NULL, 10);
		size_t extra = n - (size_t)(strchr(buf, '\n') + 1 - buf);
		left -= extra < left ? extra : left;
		char *sink = malloc(CHUNK);
		while (sink && left) {
			ssize_t k = read(fd, sink, CHUNK);
			if (k <= 0)
				break;
			left -= (unsigned long long)k < left ? (unsigned long long)k : left;
		}
		free(sink);
		if (!left)
			send_all(fd, "OK\n", 3);
	} else {
		static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
		if (send_all(fd, resp, sizeof(resp) - 1) < 0)
			goto out;
		shutdown(fd, SHUT_WR);
		/* let the peer close first (its TIME_WAIT, not ours) */
		while (read(fd, buf, sizeof(buf)) > 0)
			;
	}
out:
	close(fd);
	return NULL;
}

static _Noreturn void origin(void)
{
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in a = {.sin_family = AF_INET};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t al = sizeof(a);
	if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(ls, 4096) < 0 ||
	    getsockname(ls, (struct sockaddr *)&a, &al) < 0)
		die("listen");
	memset(g_data, 'x', sizeof(g_data));
	printf("tcp://127.0.0.1:%d\n", ntohs(a.sin_port));
	fflush(stdout);
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, 128 * 1024);
	for (;;) {
		int fd = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE)
				continue;
			die("accept");
		}
		pthread_t t;
		if (pthread_create(&t, &at, origin_conn, (void *)(intptr_t)fd) != 0)
			close(fd);
	}
}

/* ----------------------------------------------------------------- clients */

/* One timed operation; returns its duration in ns. */
static uint64_t one_connect(void)
{
	uint64_t t0 = mono_ns();
	int fd = open_stream();
	uint64_t t = mono_ns() - t0;
	close(fd);
	return t;
}

static uint64_t one_get(void)
{
	char req[256], buf[4096];
	int n;
	uint64_t t0 = mono_ns();
	int fd;
	if (g_proxy_port < 0) {
		fd = tcp_connect(g_origin_port);
		n = snprintf(req, sizeof(req),
			     "GET /x HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n", g_origin_port);
	} else {
		fd = tcp_connect(g_proxy_port);
		n = snprintf(req, sizeof(req),
			     "GET http://127.0.0.1:%d/x HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n",
			     g_origin_port, g_origin_port);
	}
	write_all(fd, req, (size_t)n);
	size_t got, head = read_head(fd, buf, sizeof(buf), &got);
	expect_200(buf, "GET");
	const char *cl = strcasestr(buf, "\ncontent-length:");
	if (!cl || cl > buf + head)
		die("no Content-Length in the response");
	size_t want = head + strtoul(cl + 16, NULL, 10);
	while (got < want) {
		ssize_t k = read(fd, buf + got, sizeof(buf) - got);
		if (k <= 0)
			die("read (body)");
		got += (size_t)k;
	}
	uint64_t t = mono_ns() - t0;
	close(fd);
	return t;
}

static double cpu_ms(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static int latency(const char *name, uint64_t (*op)(void), int argc, char **argv)
{
	long iters = (long)opt_num(argc, argv, "--iters", 2000);
	double secs = opt_num(argc, argv, "--seconds", 5);
	long warm = (long)opt_num(argc, argv, "--warmup", 50);
	for (long i = 0; i < warm; i++)
		op();
	struct samples s = {0};
	uint64_t end = mono_ns() + (uint64_t)(secs * 1e9);
	for (long i = 0; i < iters && mono_ns() < end; i++)
		samples_add(&s, op());
	char buf[64];
	snprintf(buf, sizeof(buf), "px_%s", name);
	emit_lat(buf, &s);
	snprintf(buf, sizeof(buf), "_count_%s", name);
	emit(buf, "n", (double)(s.n + (size_t)warm), s.n + (size_t)warm);
	return 0;
}

static int tput(int upload, int argc, char **argv)
{
	unsigned long long bytes = (unsigned long long)opt_num(argc, argv, "--bytes", 256.0 * 1024 * 1024);
	static char buf[CHUNK];
	memset(buf, 'y', sizeof(buf));
	double c0 = cpu_ms();
	uint64_t t0 = mono_ns();
	int fd = open_stream();
	char cmd[64];
	int n = snprintf(cmd, sizeof(cmd), "%s %llu\n", upload ? "SINK" : "SRC", bytes);
	write_all(fd, cmd, (size_t)n);
	unsigned long long left = bytes;
	if (upload) {
		while (left) {
			size_t w = left < CHUNK ? (size_t)left : CHUNK;
			write_all(fd, buf, w);
			left -= w;
		}
		char ok[4];
		size_t got = 0;
		while (got < 3) {
			ssize_t k = read(fd, ok + got, 3 - got);
			if (k <= 0)
				die("read (upload OK)");
			got += (size_t)k;
		}
	} else {
		while (left) {
			ssize_t k = read(fd, buf, sizeof(buf));
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				die(k == 0 ? "EOF before the whole stream" : "read (stream)");
			left -= (unsigned long long)k < left ? (unsigned long long)k : left;
		}
	}
	uint64_t t = mono_ns() - t0;
	double c1 = cpu_ms();
	close(fd);
	double mb = (double)bytes / 1e6;
	emit(upload ? "px_upload" : "px_tput", "MB/s", mb / ((double)t / 1e9), (unsigned long long)mb);
	emit(upload ? "px_client_cpu_per_mb_up" : "px_client_cpu_per_mb", "ms", (c1 - c0) / mb,
	     (unsigned long long)mb);
	return 0;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2) {
		fprintf(stderr, "usage: uexec-proxybench origin | {connect|get|tput|upload} --origin PORT "
				"[--proxy 127.0.0.1:PORT] [--iters N] [--seconds S] [--warmup W] [--bytes N]\n");
		return 2;
	}
	const char *mode = argv[1];
	if (strcmp(mode, "origin") == 0)
		origin();
	g_origin_port = (int)opt_num(argc, argv, "--origin", 0);
	const char *px = opt_str(argc, argv, "--proxy", NULL);
	if (px) {
		const char *c = strrchr(px, ':');
		g_proxy_port = atoi(c ? c + 1 : px);
	}
	if (g_origin_port <= 0 || (px && g_proxy_port <= 0)) {
		fprintf(stderr, "proxybench: --origin PORT (and --proxy HOST:PORT) needed\n");
		return 2;
	}
	if (strcmp(mode, "connect") == 0)
		return latency("connect", one_connect, argc, argv);
	if (strcmp(mode, "get") == 0)
		return latency("get", one_get, argc, argv);
	if (strcmp(mode, "tput") == 0)
		return tput(0, argc, argv);
	if (strcmp(mode, "upload") == 0)
		return tput(1, argc, argv);
	fprintf(stderr, "proxybench: unknown mode %s\n", mode);
	return 2;
}
