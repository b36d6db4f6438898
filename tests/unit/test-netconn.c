/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for src/net/netconn.c: outbound TCP connections on a real ring
 * with the worker pool (DNS, refusals, timeouts, closes from every side, the
 * resolved hook, adopted sockets); the TLS cases are in test-netconn-tls.c,
 * the loop, client and peers in netconn-kit.c. Needs io_uring (skips
 * otherwise); the IPv6 and "localhost" cases skip when the host has no ::1 or
 * no such name.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "netconn-kit.h"
#include "worker.h"

TEST(plain_echo_1mib)
{
	setup();
	echo_big("127.0.0.1", AF_INET, false, NULL);
	teardown();
}

TEST(dns_localhost)
{
	if (!localhost_v4())
		tests_skip("the name localhost does not resolve to IPv4 here");
	setup();
	/* Whatever order the addresses come in (::1 first is refused), 127.0.0.1 answers. */
	echo_small("localhost", AF_INET, false, NULL, NULL, 0);
	teardown();
}

TEST(ipv6_literal)
{
	uint16_t port;
	int fd = listen_on(AF_INET6, &port);

	if (fd < 0)
		tests_skip("no IPv6 loopback (::1) on this host");
	close(fd);
	setup();
	echo_small("::1", AF_INET6, false, NULL, NULL, 0);
	teardown();
}

TEST(dns_failure)
{
	struct client c;

	/* Fail fast where no resolver answers (read by each worker's first lookup). */
	setenv("RES_OPTIONS", "timeout:1 attempts:1", 1);
	setup();
	/* RFC 6761: .invalid never resolves. */
	cl_open(&c, "no-such-host.invalid", 80, false, 0);
	ASSERT_TRUE(run_until(cl_closed_once, &c, GUARD_MS));
	ASSERT_TRUE(!c.connected);
	ASSERT_TRUE(c.err == -ENOENT || c.err == -EAGAIN || c.err == -EIO);
	ASSERT_TRUE(strstr(c.why, "no-such-host.invalid") != NULL);
	ASSERT_TRUE(run_until(no_netconns, NULL, GUARD_MS));
	teardown();
}

TEST(connection_refused)
{
	struct sockaddr_in in = { .sin_family = AF_INET };
	socklen_t len = sizeof(in);
	struct client c;
	int fd;

	setup();
	/* Bound, not listening: a connect to it is refused. */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_OK(fd);
	in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ASSERT_EQ(0, bind(fd, (struct sockaddr *)&in, sizeof(in)));
	ASSERT_EQ(0, getsockname(fd, (struct sockaddr *)&in, &len));
	cl_open(&c, "127.0.0.1", ntohs(in.sin_port), false, 10000);
	ASSERT_TRUE(run_until(cl_closed_once, &c, GUARD_MS));
	ASSERT_TRUE(!c.connected);
	ASSERT_EQ(-ECONNREFUSED, c.err);
	ASSERT_EQ(1, c.closed_calls);
	ASSERT_TRUE(run_until(no_netconns, NULL, GUARD_MS));
	ASSERT_EQ(1, c.closed_calls);
	close(fd);
	teardown();
}

TEST(connect_timeout)
{
	struct sockaddr_in in = { .sin_family = AF_INET };
	socklen_t len = sizeof(in);
	int lfd, filler[2] = { -1, -1 };
	struct client c;

	setup();
	/*
	 * A listener with backlog 0 whose one queue slot is taken and never
	 * accepted: Linux drops further SYNs, so a connect hangs in SYN_SENT.
	 */
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_OK(lfd);
	in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ASSERT_EQ(0, bind(lfd, (struct sockaddr *)&in, sizeof(in)));
	ASSERT_EQ(0, listen(lfd, 0));
	ASSERT_EQ(0, getsockname(lfd, (struct sockaddr *)&in, &len));
	for (int i = 0; i < 2; i++) {
		filler[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		ASSERT_OK(filler[i]);
		(void)!connect(filler[i], (struct sockaddr *)&in, sizeof(in));
	}
	run_for(100);
	cl_open(&c, "127.0.0.1", ntohs(in.sin_port), false, 200);
	ASSERT_TRUE(run_until(cl_up_or_closed, &c, GUARD_MS));
	if (c.connected) {
		netconn_close(c.nc);
		ASSERT_TRUE(run_until(no_netconns, NULL, GUARD_MS));
		for (int i = 0; i < 2; i++)
			close(filler[i]);
		close(lfd);
		teardown();
		tests_skip("this kernel accepted a SYN beyond a full listen backlog");
	}
	if (c.err != -ETIMEDOUT)
		tests_fail(__FILE__, __LINE__, "closed with %d: %s", c.err, c.why);
	ASSERT_TRUE(strstr(c.why, "timed out") != NULL);
	ASSERT_TRUE(run_until(no_netconns, NULL, GUARD_MS));
	ASSERT_EQ(1, c.closed_calls);
	for (int i = 0; i < 2; i++)
		close(filler[i]);
	close(lfd);
	teardown();
}

TEST(peer_eof_plain)
{
	setup();
	peer_eof(false, NULL);
	teardown();
}

TEST(close_inside_data)
{
	struct client c;
	struct peer p;
	struct want_rx w = { &c, 1 };

	setup();
	peer_start(&p, AF_INET, PEER_ECHO, NULL);
	cl_open(&c, "127.0.0.1", p.port, false, 10000);
	cl_wait_up(&c);
	c.close_in_data = true;
	ASSERT_EQ(0, netconn_send(c.nc, "abc", 3));
	ASSERT_TRUE(run_until(cl_has_rx, &w, GUARD_MS));
	ASSERT_TRUE(c.nc == NULL);
	/* Freed once its ops completed; no handler ran after the close. */
	ASSERT_TRUE(run_until(no_netconns, NULL, GUARD_MS));
	run_for(50);
	ASSERT_EQ(0, c.closed_calls);
	ASSERT_EQ(3, c.rxlen);
	peer_join(&p); /* the peer saw our end */
	teardown();
	free(c.rx);
}

/* Holds a worker until released, so that DNS jobs queue behind it. */
struct blocker {
	struct work w;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool release, done;
};

static void blocker_run(struct work *w)
{
	struct blocker *b = container_of(w, struct blocker, w);

	pthread_mutex_lock(&b->lock);
	while (!b->release)
		pthread_cond_wait(&b->cond, &b->lock);
	pthread_mutex_unlock(&b->lock);
}

static void blocker_done(struct work *w)
{
	container_of(w, struct blocker, w)->done = true;
}

static bool blockers_done(void *arg)
{
	struct blocker *b = arg;

	return b[0].done && b[1].done;
}

TEST(close_while_dns_pending)
{
	struct blocker b[2];
	struct client c, d;

	setup();
	for (int i = 0; i < 2; i++) {
		memset(&b[i], 0, sizeof(b[i]));
		pthread_mutex_init(&b[i].lock, NULL);
		pthread_cond_init(&b[i].cond, NULL);
		b[i].w.run = blocker_run;
		b[i].w.done = blocker_done;
		worker_submit(&srv, &b[i].w);
	}
	/* Queued behind the blockers: certainly pending when closed. */
	cl_open(&c, "localhost", 9, false, 10000);
	netconn_close(c.nc);
	netconn_close(c.nc);
	run_for(50);
	ASSERT_EQ(1, netconn_count(&srv)); /* its job has not run: not freed */
	for (int i = 0; i < 2; i++) {
		pthread_mutex_lock(&b[i].lock);
		b[i].release = true;
		pthread_cond_broadcast(&b[i].cond);
		pthread_mutex_unlock(&b[i].lock);
	}
	ASSERT_TRUE(run_until(blockers_done, b, GUARD_MS));
	ASSERT_TRUE(run_until(no_netconns, NULL, GUARD_MS));
	/* Closed right away: the job is queued or running. */
	cl_open(&d, "localhost", 9, false, 10000);
	netconn_close(d.nc);
	ASSERT_TRUE(run_until(no_netconns, NULL, GUARD_MS));
	run_for(50);
	ASSERT_TRUE(!c.connected && c.closed_calls == 0 && !d.connected && d.closed_calls == 0);
	teardown();
}

TEST(open_at_teardown)
{
	struct client c;

	setup();
	/* Left open for netconn_free_all(): its DNS job completes in worker_pool_done(). */
	cl_open(&c, "localhost", 9, false, 0);
	teardown();
	ASSERT_EQ(0, c.closed_calls);
}

TEST(set_reading_plain)
{
	setup();
	pause_reading(false, NULL);
	teardown();
}

TEST(shutdown_grace)
{
	struct client c;
	struct peer p;

	setup();
	/* The peer never closes after our FIN: the grace ends it, as an orderly close. */
	peer_start(&p, AF_INET, PEER_HOLD, NULL);
	cl_open(&c, "127.0.0.1", p.port, false, 10000);
	cl_wait_up(&c);
	ASSERT_EQ(0, netconn_send(c.nc, "bye", 3));
	netconn_shutdown(c.nc);
	ASSERT_TRUE(run_until(cl_closed_once, &c, GUARD_MS));
	if (c.err != 0 || !strstr(c.why, "did not close"))
		tests_fail(__FILE__, __LINE__, "closed with %d: %s", c.err, c.why);
	ASSERT_EQ(3, c.rxlen); /* echoed before the peer saw our FIN */
	ASSERT_TRUE(run_until(no_netconns, NULL, GUARD_MS));
	p.release = true;
	peer_join(&p);
	ASSERT_EQ(3, p.echoed);
	teardown();
	free(c.rx);
}

TEST(shutdown_before_connected)
{
	struct client c;
	struct peer p;

	setup();
	peer_start(&p, AF_INET, PEER_ECHO, NULL);
	cl_open(&c, "127.0.0.1", p.port, false, 10000);
	netconn_shutdown(c.nc);
	ASSERT_EQ(0, c.closed_calls); /* not inside the call */
	ASSERT_TRUE(run_until(cl_closed_once, &c, GUARD_MS));
	ASSERT_EQ(-ECANCELED, c.err);
	ASSERT_TRUE(!c.connected);
	ASSERT_TRUE(run_until(no_netconns, NULL, GUARD_MS));
	ASSERT_EQ(1, c.closed_calls);
	peer_join(&p);
	teardown();
}

static int resolved_calls;

static int veto_loopback(struct netconn *nc, const struct addrinfo *list)
{
	resolved_calls++;
	for (const struct addrinfo *a = list; a; a = a->ai_next)
		if (a->ai_family == AF_INET &&
		    ntohl(((const struct sockaddr_in *)a->ai_addr)->sin_addr.s_addr) >> 24 == 127)
			return -EACCES;
	return 0;
}

/* resolved(): the addresses of a name before any connect, and a veto that ends it with its errno. */
TEST(resolved_hook_vetoes_before_connect)
{
	struct netconn_handlers h = cl_handlers;
	struct netconn_config cfg = { .host = "localhost", .connect_timeout_ms = 10000 };
	struct peer p = { 0 };
	struct client c = { 0 };

	if (!localhost_v4())
		tests_skip("the name localhost does not resolve to IPv4 here");
	setup();
	peer_start(&p, AF_INET, PEER_ECHO, NULL);
	cfg.port = p.port;
	h.resolved = veto_loopback;
	resolved_calls = 0;
	ASSERT_EQ(0, netconn_open(&srv, &cfg, &h, &c, &c.nc));
	ASSERT_TRUE(run_until(cl_closed_once, &c, GUARD_MS));
	ASSERT_EQ(1, resolved_calls);
	ASSERT_TRUE(!c.connected);
	ASSERT_EQ(-EACCES, c.err);
	ASSERT_TRUE(strstr(c.why, "localhost") != NULL);
	ASSERT_TRUE(run_until(no_netconns, NULL, GUARD_MS));
	/* the peer never saw a connection: a plain connect now is its first */
	echo_small("127.0.0.1", AF_INET, false, NULL, NULL, 0);
	peer_join(&p);
	teardown();
}

static int pair_fd;
static char pair_buf[64];
static size_t pair_len;

/* Reads what has come on pair_fd (non-blocking); true at its EOF. */
static bool pair_eof(void *arg)
{
	for (;;) {
		ssize_t n = recv(pair_fd, pair_buf + pair_len, sizeof(pair_buf) - pair_len, MSG_DONTWAIT);

		if (n == 0)
			return true;
		if (n < 0)
			return false;
		pair_len += (size_t)n;
	}
}

/* netconn_adopt(): an accepted socket as a netconn, bytes both ways, EOF, shutdown. */
TEST(adopt_connected_socket)
{
	struct client c = { 0 };
	struct want_rx w = { &c, 5 };
	int sv[2];

	setup();
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	ASSERT_EQ(0, netconn_adopt(&srv, sv[0], "pair", &cl_handlers, &c, &c.nc));
	ASSERT_TRUE(!c.connected); /* connected() is not called */
	ASSERT_EQ(5, (int)write(sv[1], "hello", 5));
	ASSERT_TRUE(run_until(cl_has_rx, &w, GUARD_MS));
	ASSERT_MEMEQ("hello", c.rx, 5);
	ASSERT_EQ(0, netconn_send(c.nc, "back", 4));
	netconn_shutdown(c.nc);
	/* the peer reads "back", then EOF (our FIN); its close ends ours with 0 */
	pair_fd = sv[1];
	pair_len = 0;
	ASSERT_TRUE(run_until(pair_eof, NULL, GUARD_MS));
	ASSERT_EQ(4, (int)pair_len);
	ASSERT_MEMEQ("back", pair_buf, 4);
	close(sv[1]);
	ASSERT_TRUE(run_until(cl_closed_once, &c, GUARD_MS));
	ASSERT_EQ(0, c.err);
	ASSERT_TRUE(run_until(no_netconns, NULL, GUARD_MS));
	free(c.rx);
	teardown();
}

TEST_MAIN()
