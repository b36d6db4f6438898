/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for src/net/netconn.c: outbound TCP and TLS connections on a real
 * ring with the worker pool. Peers are threads of this test with blocking
 * sockets: a TCP echo server, a peer that says hello and closes, and the same
 * over TLS with an EC key and self-signed certificates made in memory (the
 * trust store is a temporary file named by SSL_CERT_FILE, SSL_CERT_DIR an
 * empty temporary directory). Needs io_uring (skips otherwise); the IPv6 and
 * "localhost" cases skip when the host has no ::1 or no such name. Waits are
 * bounded by a generous wall-clock guard, never asserted on.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "netconn.h"
#include "ring.h"
#include "server.h"
#include "tests.h"
#include "worker.h"

#define GUARD_MS 20000
#define ECHO_BYTES (1u << 20)

/* ---- the loop ---- */

static struct server srv;
static struct uring_timer tick;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void on_tick(struct uring_timer *t, bool fired)
{
}

/* Runs the loop until cond(arg) holds (true) or guard_ms pass (false). A tick keeps it waking. */
static bool run_until(bool (*cond)(void *), void *arg, uint64_t guard_ms)
{
	uint64_t deadline = now_ms() + guard_ms;

	while (!cond(arg)) {
		if (now_ms() > deadline)
			return false;
		if (!tick.armed && uring_op_idle(&tick.op))
			uring_timer_arm(&srv.ring, &tick, 20, on_tick);
		if (uring_run_once(&srv.ring) < 0)
			return false;
	}
	return true;
}

static bool never(void *arg)
{
	return false;
}

/* Runs the loop for about ms (used only to give something the chance to go wrong). */
static void run_for(uint64_t ms)
{
	(void)run_until(never, NULL, ms);
}

static void setup(void)
{
	int r;

	memset(&srv, 0, sizeof(srv));
	memset(&tick, 0, sizeof(tick));
	list_init(&srv.netconns);
	r = uring_init(&srv.ring, 256);
	if (r < 0)
		tests_skip("io_uring unavailable (kernel, sysctl or seccomp)");
	ASSERT_OK(worker_pool_init(&srv, 2));
}

static void teardown(void)
{
	srv.stopping = true;
	worker_pool_done(&srv);
	uring_done(&srv.ring);
	netconn_free_all(&srv);
}

static bool no_netconns(void *arg)
{
	return netconn_count(&srv) == 0 && worker_pending(&srv) == 0;
}

/* ---- the client side ---- */

struct client {
	struct netconn *nc;
	bool connected;
	int closed_calls;
	int err;
	char why[256];
	uint8_t *rx;
	size_t rxlen, rxcap;
	unsigned drained_calls;
	bool close_in_data;
	bool started_tls; /* tls_started_on_open_connection: netconn_start_tls() called */
};

static void cl_connected(struct netconn *nc)
{
	struct client *c = netconn_userdata(nc);

	c->connected = true;
}

static void cl_data(struct netconn *nc, const uint8_t *p, size_t n)
{
	struct client *c = netconn_userdata(nc);

	if (c->rxlen + n > c->rxcap) {
		c->rxcap = MAX(c->rxcap * 2, c->rxlen + n);
		c->rx = realloc(c->rx, c->rxcap);
		if (!c->rx)
			abort();
	}
	memcpy(c->rx + c->rxlen, p, n);
	c->rxlen += n;
	if (c->close_in_data) {
		netconn_close(nc);
		netconn_close(nc); /* idempotent */
		c->nc = NULL;
	}
}

static void cl_drained(struct netconn *nc)
{
	struct client *c = netconn_userdata(nc);

	c->drained_calls++;
}

static void cl_closed(struct netconn *nc, int err, const char *why)
{
	struct client *c = netconn_userdata(nc);

	c->closed_calls++;
	c->err = err;
	snprintf(c->why, sizeof(c->why), "%s", why ? why : "(null)");
	c->nc = NULL;
}

static const struct netconn_handlers cl_handlers = {
	.connected = cl_connected,
	.data = cl_data,
	.drained = cl_drained,
	.closed = cl_closed,
};

static bool cl_up_or_closed(void *arg)
{
	struct client *c = arg;

	return c->connected || c->closed_calls > 0;
}

static bool cl_closed_once(void *arg)
{
	return ((struct client *)arg)->closed_calls > 0;
}

struct want_rx {
	struct client *c;
	size_t n;
};

static bool cl_has_rx(void *arg)
{
	struct want_rx *w = arg;

	return w->c->rxlen >= w->n || w->c->closed_calls > 0;
}

static void cl_open(struct client *c, const char *host, uint16_t port, bool tls, uint64_t timeout_ms)
{
	struct netconn_config cfg = {
		.host = host, .port = port, .tls = tls, .nodelay = true, .connect_timeout_ms = timeout_ms,
	};

	memset(c, 0, sizeof(*c));
	ASSERT_EQ(0, netconn_open(&srv, &cfg, &cl_handlers, c, &c->nc));
	ASSERT_TRUE(c->nc != NULL);
	/* Nothing runs inside open. */
	ASSERT_TRUE(!c->connected && c->closed_calls == 0);
}

static void cl_wait_up(struct client *c)
{
	ASSERT_TRUE(run_until(cl_up_or_closed, c, GUARD_MS));
	if (!c->connected)
		tests_fail(__FILE__, __LINE__, "not connected: %d %s", c->err, c->why);
}

/* ---- peers ---- */

enum peer_mode {
	PEER_ECHO,        /* echoes until EOF (TLS: close_notify answered) */
	PEER_HELLO_CLOSE, /* sends "hello" and closes (TLS: with close_notify) */
	PEER_HOLD,        /* reads until EOF, then keeps the connection until released (plain) */
};

struct peer {
	int lfd;
	uint16_t port;
	pthread_t th;
	bool started;
	enum peer_mode mode;
	SSL_CTX *sctx; /* TLS when set */
	atomic_size_t echoed;
	char sni[256];  /* the server name the client sent, "" for none */
	bool handshake_ok;
	atomic_bool release; /* PEER_HOLD: close now */
};

static int listen_on(int family, uint16_t *port)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len;
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	struct timeval tv = { .tv_sec = GUARD_MS / 1000 };

	if (fd < 0)
		return -errno;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)); /* accept() guard */
	if (family == AF_INET6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_addr = in6addr_loopback;
		len = sizeof(*in6);
	} else {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;

		in->sin_family = AF_INET;
		in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*in);
	}
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 16) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	*port = ntohs(family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
					 : ((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

static void peer_plain(struct peer *p, int fd)
{
	uint8_t buf[16384];

	if (p->mode == PEER_HELLO_CLOSE) {
		(void)!write(fd, "hello", 5);
		return;
	}
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf)), off = 0;

		if (n <= 0) {
			for (int i = 0; p->mode == PEER_HOLD && !p->release && i < GUARD_MS; i++)
				usleep(1000);
			return;
		}
		while (off < n) {
			ssize_t w = write(fd, buf + off, (size_t)(n - off));

			if (w <= 0)
				return;
			off += w;
		}
		p->echoed += (size_t)n;
	}
}

static void peer_tls(struct peer *p, int fd)
{
	SSL *ssl = SSL_new(p->sctx);
	uint8_t buf[16384];
	const char *sni;

	if (!ssl)
		return;
	SSL_set_fd(ssl, fd);
	if (SSL_accept(ssl) != 1)
		goto out;
	p->handshake_ok = true;
	sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
	snprintf(p->sni, sizeof(p->sni), "%s", sni ? sni : "");
	if (p->mode == PEER_HELLO_CLOSE) {
		(void)SSL_write(ssl, "hello", 5);
		(void)SSL_shutdown(ssl);
		goto out;
	}
	for (;;) {
		int n = SSL_read(ssl, buf, sizeof(buf));

		if (n <= 0) {
			if (SSL_get_error(ssl, n) == SSL_ERROR_ZERO_RETURN)
				(void)SSL_shutdown(ssl);
			break;
		}
		if (SSL_write(ssl, buf, n) != n)
			break;
		p->echoed += (size_t)n;
	}
out:
	SSL_free(ssl);
}

static void *peer_main(void *arg)
{
	struct peer *p = arg;
	int fd = accept4(p->lfd, NULL, NULL, SOCK_CLOEXEC);
	struct timeval tv = { .tv_sec = GUARD_MS / 1000 };

	if (fd < 0)
		return NULL;
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (p->sctx)
		peer_tls(p, fd);
	else
		peer_plain(p, fd);
	close(fd);
	return NULL;
}

static void peer_start(struct peer *p, int family, enum peer_mode mode, SSL_CTX *sctx)
{
	memset(p, 0, sizeof(*p));
	p->mode = mode;
	p->sctx = sctx;
	p->lfd = listen_on(family, &p->port);
	ASSERT_OK(p->lfd);
	ASSERT_EQ(0, pthread_create(&p->th, NULL, peer_main, p));
	p->started = true;
}

static void peer_join(struct peer *p)
{
	if (p->started)
		pthread_join(p->th, NULL);
	p->started = false;
	close(p->lfd);
}

/* ---- certificates ---- */

struct tls_env {
	char dir[256];
	char good_pem[300];   /* CN localhost, SAN DNS:localhost, IP:127.0.0.1 */
	char wrong_pem[300];  /* SAN DNS:wrong.example only */
	char both_pem[300];   /* the trust store with both */
	char empty_dir[300];
	EVP_PKEY *key;
	X509 *good, *wrong;
	SSL_CTX *good_ctx, *wrong_ctx;
};

static X509 *make_cert(EVP_PKEY *key, const char *cn, const char *san, long serial)
{
	X509 *x = X509_new();
	X509_NAME *name;
	X509V3_CTX v3;
	X509_EXTENSION *ext;

	if (!x)
		return NULL;
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), serial);
	X509_gmtime_adj(X509_getm_notBefore(x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(x), 86400);
	X509_set_pubkey(x, key);
	name = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(x, name);
	X509V3_set_ctx_nodb(&v3);
	X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &v3, NID_subject_alt_name, san);
	if (!ext)
		goto fail;
	X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	ext = X509V3_EXT_conf_nid(NULL, &v3, NID_basic_constraints, "critical,CA:TRUE");
	if (!ext)
		goto fail;
	X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	if (!X509_sign(x, key, EVP_sha256()))
		goto fail;
	return x;
fail:
	X509_free(x);
	return NULL;
}

static bool write_pem(const char *path, X509 *a, X509 *b)
{
	FILE *f = fopen(path, "w");
	bool ok;

	if (!f)
		return false;
	ok = PEM_write_X509(f, a) == 1 && (!b || PEM_write_X509(f, b) == 1);
	return fclose(f) == 0 && ok;
}

static SSL_CTX *server_ctx(EVP_PKEY *key, X509 *cert)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

	if (!ctx)
		return NULL;
	if (SSL_CTX_use_certificate(ctx, cert) != 1 || SSL_CTX_use_PrivateKey(ctx, key) != 1) {
		SSL_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

static void tls_env_init(struct tls_env *e)
{
	const char *tmp = getenv("TMPDIR");

	memset(e, 0, sizeof(*e));
	snprintf(e->dir, sizeof(e->dir), "%s/test-netconn-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	ASSERT_TRUE(mkdtemp(e->dir) != NULL);
	snprintf(e->good_pem, sizeof(e->good_pem), "%s/good.pem", e->dir);
	snprintf(e->wrong_pem, sizeof(e->wrong_pem), "%s/wrong.pem", e->dir);
	snprintf(e->both_pem, sizeof(e->both_pem), "%s/both.pem", e->dir);
	snprintf(e->empty_dir, sizeof(e->empty_dir), "%s/certs", e->dir);
	ASSERT_EQ(0, mkdir(e->empty_dir, 0700));
	e->key = EVP_EC_gen("P-256");
	ASSERT_TRUE(e->key != NULL);
	e->good = make_cert(e->key, "localhost", "DNS:localhost,IP:127.0.0.1", 1);
	e->wrong = make_cert(e->key, "wrong.example", "DNS:wrong.example", 2);
	ASSERT_TRUE(e->good && e->wrong);
	ASSERT_TRUE(write_pem(e->good_pem, e->good, NULL));
	ASSERT_TRUE(write_pem(e->wrong_pem, e->wrong, NULL));
	ASSERT_TRUE(write_pem(e->both_pem, e->good, e->wrong));
	e->good_ctx = server_ctx(e->key, e->good);
	e->wrong_ctx = server_ctx(e->key, e->wrong);
	ASSERT_TRUE(e->good_ctx && e->wrong_ctx);
	/* Read when the server's client SSL_CTX is made (its first TLS netconn_open). */
	setenv("SSL_CERT_FILE", e->both_pem, 1);
	setenv("SSL_CERT_DIR", e->empty_dir, 1);
}

static void tls_env_done(struct tls_env *e)
{
	unlink(e->good_pem);
	unlink(e->wrong_pem);
	unlink(e->both_pem);
	rmdir(e->empty_dir);
	rmdir(e->dir);
	SSL_CTX_free(e->good_ctx);
	SSL_CTX_free(e->wrong_ctx);
	X509_free(e->good);
	X509_free(e->wrong);
	EVP_PKEY_free(e->key);
}

/* ---- helpers for the echo cases ---- */

/* 1 MiB in sends of 1..4096 bytes, echoed back and compared; then an orderly shutdown. */
static void echo_big(const char *host, int family, bool tls, SSL_CTX *sctx)
{
	struct client c;
	struct peer p;
	uint8_t *tx = malloc(ECHO_BYTES);
	struct want_rx w = { &c, ECHO_BYTES };
	uint32_t x = 2463534242u;
	size_t off = 0, sends = 0;

	ASSERT_TRUE(tx != NULL);
	for (size_t i = 0; i < ECHO_BYTES; i++) {
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		tx[i] = (uint8_t)x;
	}
	peer_start(&p, family, PEER_ECHO, sctx);
	cl_open(&c, host, p.port, tls, 10000);
	ASSERT_EQ(-ENOTCONN, netconn_send(c.nc, "x", 1));
	cl_wait_up(&c);
	while (off < ECHO_BYTES) {
		size_t n;

		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		n = MIN((size_t)(x % 4096) + 1, ECHO_BYTES - off);
		ASSERT_EQ(0, netconn_send(c.nc, tx + off, n));
		off += n;
		sends++;
	}
	ASSERT_TRUE(sends > 256);
	ASSERT_TRUE(netconn_queued(c.nc) > 0);
	ASSERT_TRUE(run_until(cl_has_rx, &w, GUARD_MS));
	ASSERT_EQ(0, c.closed_calls);
	ASSERT_EQ(ECHO_BYTES, c.rxlen);
	ASSERT_MEMEQ(tx, c.rx, ECHO_BYTES);
	ASSERT_EQ(0, netconn_queued(c.nc));
	ASSERT_TRUE(c.drained_calls > 0);

	netconn_shutdown(c.nc);
	ASSERT_EQ(-ENOTCONN, netconn_send(c.nc, "x", 1));
	ASSERT_TRUE(run_until(cl_closed_once, &c, GUARD_MS));
	if (c.err != 0)
		tests_fail(__FILE__, __LINE__, "closed with %d: %s", c.err, c.why);
	ASSERT_TRUE(run_until(no_netconns, NULL, GUARD_MS));
	peer_join(&p);
	ASSERT_EQ(ECHO_BYTES, p.echoed);
	free(tx);
	free(c.rx);
}

/* A small echo, and the server name the peer saw. */
static void echo_small(const char *host, int family, bool tls, SSL_CTX *sctx, char *sni, size_t sni_n)
{
	struct client c;
	struct peer p;
	struct want_rx w = { &c, 4 };

	peer_start(&p, family, PEER_ECHO, sctx);
	cl_open(&c, host, p.port, tls, 10000);
	cl_wait_up(&c);
	ASSERT_EQ(0, netconn_send(c.nc, "ping", 4));
	ASSERT_TRUE(run_until(cl_has_rx, &w, GUARD_MS));
	ASSERT_EQ(4, c.rxlen);
	ASSERT_MEMEQ("ping", c.rx, 4);
	netconn_close(c.nc);
	ASSERT_TRUE(run_until(no_netconns, NULL, GUARD_MS));
	ASSERT_EQ(0, c.closed_calls);
	peer_join(&p);
	if (sni)
		snprintf(sni, sni_n, "%s", p.sni);
	free(c.rx);
}

/* ---- tests ---- */

static bool localhost_v4(void)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai = NULL;

	if (getaddrinfo("localhost", "80", &hints, &ai) != 0)
		return false;
	freeaddrinfo(ai);
	return true;
}

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

TEST(tls_echo_1mib)
{
	struct tls_env e;

	tls_env_init(&e);
	setup();
	echo_big("127.0.0.1", AF_INET, true, e.good_ctx);
	teardown();
	tls_env_done(&e);
}

TEST(tls_sni_for_names_only)
{
	struct tls_env e;
	char sni[256];

	tls_env_init(&e);
	setup();
	echo_small("127.0.0.1", AF_INET, true, e.good_ctx, sni, sizeof(sni));
	ASSERT_STREQ("", sni);
	if (localhost_v4()) {
		echo_small("localhost", AF_INET, true, e.good_ctx, sni, sizeof(sni));
		ASSERT_STREQ("localhost", sni);
	}
	teardown();
	tls_env_done(&e);
}

/* connected() of a plain netconn that starts TLS at once (a proxy's tunnel, as http/request does). */
static void st_connected(struct netconn *nc)
{
	struct client *c = netconn_userdata(nc);

	if (!c->started_tls) {
		/* The first connected(): TCP is up; the second comes after the handshake. */
		c->started_tls = true;
		ASSERT_EQ(0, netconn_start_tls(nc, c->why));
		ASSERT_EQ(-EINVAL, netconn_start_tls(nc, c->why)); /* once */
		return;
	}
	c->connected = true;
}

static const struct netconn_handlers st_handlers = {
	.connected = st_connected,
	.data = cl_data,
	.closed = cl_closed,
};

TEST(tls_started_on_open_connection)
{
	struct netconn_config cfg = { .host = "127.0.0.1", .nodelay = true, .connect_timeout_ms = 10000 };
	struct tls_env e;
	struct client c;
	struct peer p;
	struct want_rx w = { &c, 4 };
	char sni[256];

	tls_env_init(&e);
	setup();
	peer_start(&p, AF_INET, PEER_ECHO, e.good_ctx);
	memset(&c, 0, sizeof(c));
	snprintf(c.why, sizeof(c.why), "127.0.0.1"); /* the name TLS verifies */
	cfg.port = p.port;
	ASSERT_EQ(0, netconn_open(&srv, &cfg, &st_handlers, &c, &c.nc));
	ASSERT_TRUE(run_until(cl_up_or_closed, &c, GUARD_MS));
	if (!c.connected)
		tests_fail(__FILE__, __LINE__, "not connected: %d %s", c.err, c.why);
	ASSERT_EQ(0, netconn_send(c.nc, "ping", 4));
	ASSERT_TRUE(run_until(cl_has_rx, &w, GUARD_MS));
	ASSERT_MEMEQ("ping", c.rx, 4);
	netconn_close(c.nc);
	ASSERT_TRUE(run_until(no_netconns, NULL, GUARD_MS));
	peer_join(&p);
	ASSERT_TRUE(p.handshake_ok);
	snprintf(sni, sizeof(sni), "%s", p.sni);
	ASSERT_STREQ("", sni); /* an IP literal: no SNI */
	free(c.rx);
	teardown();
	tls_env_done(&e);
}

static void tls_expect_reject(const char *host, SSL_CTX *sctx, const char *why_part)
{
	struct client c;
	struct peer p;

	peer_start(&p, AF_INET, PEER_ECHO, sctx);
	cl_open(&c, host, p.port, true, 10000);
	ASSERT_TRUE(run_until(cl_closed_once, &c, GUARD_MS));
	ASSERT_TRUE(!c.connected);
	ASSERT_EQ(0, c.rxlen);
	if (c.err != -EKEYREJECTED || !strstr(c.why, why_part))
		tests_fail(__FILE__, __LINE__, "closed with %d: %s", c.err, c.why);
	ASSERT_TRUE(run_until(no_netconns, NULL, GUARD_MS));
	peer_join(&p);
	ASSERT_TRUE(!p.handshake_ok);
}

TEST(tls_wrong_host)
{
	struct tls_env e;

	tls_env_init(&e);
	setup();
	/* Trusted, but issued for wrong.example only: neither the IP nor the name matches. */
	tls_expect_reject("127.0.0.1", e.wrong_ctx, "IP address mismatch");
	if (localhost_v4())
		tls_expect_reject("localhost", e.wrong_ctx, "hostname mismatch");
	teardown();
	tls_env_done(&e);
}

TEST(tls_untrusted)
{
	struct tls_env e;

	tls_env_init(&e);
	setenv("SSL_CERT_FILE", e.wrong_pem, 1); /* the peer's certificate is not in it */
	setup();
	tls_expect_reject("127.0.0.1", e.good_ctx, "certificate verify failed");
	teardown();
	tls_env_done(&e);
}

static void peer_eof(bool tls, SSL_CTX *sctx)
{
	struct client c;
	struct peer p;

	peer_start(&p, AF_INET, PEER_HELLO_CLOSE, sctx);
	cl_open(&c, "127.0.0.1", p.port, tls, 10000);
	ASSERT_TRUE(run_until(cl_closed_once, &c, GUARD_MS));
	ASSERT_TRUE(c.connected);
	ASSERT_EQ(5, c.rxlen);
	ASSERT_MEMEQ("hello", c.rx, 5);
	if (c.err != 0)
		tests_fail(__FILE__, __LINE__, "closed with %d: %s", c.err, c.why);
	if (tls)
		ASSERT_TRUE(strstr(c.why, "close_notify") != NULL);
	ASSERT_TRUE(run_until(no_netconns, NULL, GUARD_MS));
	ASSERT_EQ(1, c.closed_calls);
	peer_join(&p);
	free(c.rx);
}

TEST(peer_eof_plain)
{
	setup();
	peer_eof(false, NULL);
	teardown();
}

TEST(peer_eof_tls)
{
	struct tls_env e;

	tls_env_init(&e);
	setup();
	peer_eof(true, e.good_ctx);
	teardown();
	tls_env_done(&e);
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

static void pause_reading(bool tls, SSL_CTX *sctx)
{
	struct client c;
	struct peer p;
	struct want_rx w = { &c, 100 };
	uint8_t a[100], b[100];
	uint64_t deadline;

	memset(a, 'a', sizeof(a));
	memset(b, 'b', sizeof(b));
	peer_start(&p, AF_INET, PEER_ECHO, sctx);
	cl_open(&c, "127.0.0.1", p.port, tls, 10000);
	cl_wait_up(&c);
	ASSERT_EQ(0, netconn_send(c.nc, a, sizeof(a)));
	ASSERT_TRUE(run_until(cl_has_rx, &w, GUARD_MS));
	ASSERT_EQ(100, c.rxlen);

	netconn_set_reading(c.nc, false);
	ASSERT_EQ(0, netconn_send(c.nc, b, sizeof(b)));
	/* The peer echoes; nothing may be delivered meanwhile. */
	deadline = now_ms() + GUARD_MS;
	while (p.echoed < 200 && now_ms() < deadline)
		run_for(10);
	ASSERT_EQ(200, p.echoed);
	run_for(200);
	ASSERT_EQ(100, c.rxlen);
	ASSERT_EQ(0, c.closed_calls);

	netconn_set_reading(c.nc, true);
	ASSERT_EQ(100, c.rxlen); /* not inside the call */
	w.n = 200;
	ASSERT_TRUE(run_until(cl_has_rx, &w, GUARD_MS));
	ASSERT_EQ(200, c.rxlen);
	ASSERT_MEMEQ(a, c.rx, 100);
	ASSERT_MEMEQ(b, c.rx + 100, 100);
	netconn_shutdown(c.nc);
	ASSERT_TRUE(run_until(cl_closed_once, &c, GUARD_MS));
	ASSERT_EQ(0, c.err);
	ASSERT_TRUE(run_until(no_netconns, NULL, GUARD_MS));
	peer_join(&p);
	free(c.rx);
}

TEST(set_reading_plain)
{
	setup();
	pause_reading(false, NULL);
	teardown();
}

TEST(set_reading_tls)
{
	struct tls_env e;

	tls_env_init(&e);
	setup();
	pause_reading(true, e.good_ctx);
	teardown();
	tls_env_done(&e);
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
