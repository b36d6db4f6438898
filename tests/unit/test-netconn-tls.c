/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for src/net/netconn.c over TLS: echo, SNI for names only, TLS
 * started on an open connection, wrong host and untrusted certificates
 * refused, the peer's close_notify, reading paused. The peers are threads of
 * the test with an EC key and self-signed certificates made in memory (the
 * trust store is a temporary file named by SSL_CERT_FILE, SSL_CERT_DIR an
 * empty temporary directory); the kit is netconn-kit.c. Needs io_uring.
 */
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "netconn-kit.h"

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

TEST(peer_eof_tls)
{
	struct tls_env e;

	tls_env_init(&e);
	setup();
	peer_eof(true, e.good_ctx);
	teardown();
	tls_env_done(&e);
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

TEST_MAIN()
