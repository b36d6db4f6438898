/* SPDX-License-Identifier: MIT */
/*
 * The netconn tests' kit (test-netconn.c, test-netconn-tls.c): a real ring and
 * worker pool driven until a condition holds, a client whose handlers record
 * what the connection did, peers in threads of the test with blocking sockets
 * (an echo server, a peer that says hello and closes, one that holds), and TLS
 * certificates made in memory. Waits are bounded by a wall-clock guard, never
 * asserted on.
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

#include "netconn-kit.h"
#include "worker.h"

/* ---- the loop ---- */

struct server srv;
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
bool run_until(bool (*cond)(void *), void *arg, uint64_t guard_ms)
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

bool never(void *arg)
{
	return false;
}

/* Runs the loop for about ms (used only to give something the chance to go wrong). */
void run_for(uint64_t ms)
{
	(void)run_until(never, NULL, ms);
}

void setup(void)
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

void teardown(void)
{
	srv.stopping = true;
	worker_pool_done(&srv);
	uring_done(&srv.ring);
	netconn_free_all(&srv);
}

bool no_netconns(void *arg)
{
	return netconn_count(&srv) == 0 && worker_pending(&srv) == 0;
}

/* ---- the client side ---- */

static void cl_connected(struct netconn *nc)
{
	struct client *c = netconn_userdata(nc);

	c->connected = true;
}

void cl_data(struct netconn *nc, const uint8_t *p, size_t n)
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

void cl_closed(struct netconn *nc, int err, const char *why)
{
	struct client *c = netconn_userdata(nc);

	c->closed_calls++;
	c->err = err;
	snprintf(c->why, sizeof(c->why), "%s", why ? why : "(null)");
	c->nc = NULL;
}

const struct netconn_handlers cl_handlers = {
	.connected = cl_connected,
	.data = cl_data,
	.drained = cl_drained,
	.closed = cl_closed,
};

bool cl_up_or_closed(void *arg)
{
	struct client *c = arg;

	return c->connected || c->closed_calls > 0;
}

bool cl_closed_once(void *arg)
{
	return ((struct client *)arg)->closed_calls > 0;
}

bool cl_has_rx(void *arg)
{
	struct want_rx *w = arg;

	return w->c->rxlen >= w->n || w->c->closed_calls > 0;
}

void cl_open(struct client *c, const char *host, uint16_t port, bool tls, uint64_t timeout_ms)
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

void cl_wait_up(struct client *c)
{
	ASSERT_TRUE(run_until(cl_up_or_closed, c, GUARD_MS));
	if (!c->connected)
		tests_fail(__FILE__, __LINE__, "not connected: %d %s", c->err, c->why);
}

/* ---- peers ---- */

int listen_on(int family, uint16_t *port)
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

void peer_start(struct peer *p, int family, enum peer_mode mode, SSL_CTX *sctx)
{
	memset(p, 0, sizeof(*p));
	p->mode = mode;
	p->sctx = sctx;
	p->lfd = listen_on(family, &p->port);
	ASSERT_OK(p->lfd);
	ASSERT_EQ(0, pthread_create(&p->th, NULL, peer_main, p));
	p->started = true;
}

void peer_join(struct peer *p)
{
	if (p->started)
		pthread_join(p->th, NULL);
	p->started = false;
	close(p->lfd);
}

/* ---- certificates ---- */

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

void tls_env_init(struct tls_env *e)
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

void tls_env_done(struct tls_env *e)
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
void echo_big(const char *host, int family, bool tls, SSL_CTX *sctx)
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
void echo_small(const char *host, int family, bool tls, SSL_CTX *sctx, char *sni, size_t sni_n)
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


void peer_eof(bool tls, SSL_CTX *sctx)
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

void pause_reading(bool tls, SSL_CTX *sctx)
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

bool localhost_v4(void)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai = NULL;

	if (getaddrinfo("localhost", "80", &hints, &ai) != 0)
		return false;
	freeaddrinfo(ai);
	return true;
}
