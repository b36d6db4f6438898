/* SPDX-License-Identifier: MIT */
/*
 * auth-bench: the cost of --ws-auth on connection setup.
 *
 *   auth-bench check [--iters N]
 *       proto/ws-auth.c in process: ns per ws_auth_check() of a request with
 *       no auth configured, a capability token, and an HS256 JWT with
 *       iss/aud (the work the server adds to one upgrade).
 *   auth-bench connect --url ws://IP:PORT [--header "Authorization: Bearer T"] [--iters N]
 *                      [--tls CA.pem]
 *       TCP connect (+ TLS handshake, certificate verified against CA.pem, no
 *       session resumption) + upgrade request -> 101 received, then close, N
 *       times in a row: connection setup latency as a client sees it (run
 *       against a server without and with --ws-auth or wss://; bench/auth.py).
 *
 * One JSON line per metric (bench/common.h).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/ssl.h>

#include "common.h"
#include "ws-auth.h"

static uint64_t ns_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const char *opt(int argc, char **argv, const char *name, const char *def)
{
	for (int i = 2; i + 1 < argc; i++)
		if (!strcmp(argv[i], name))
			return argv[i + 1];
	return def;
}

/* {"alg":"HS256","typ":"JWT"} . {"iss":"i","aud":["a","b"],"exp":1000,"nbf":900}, key below */
static const char jwt[] =
	"Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJpIiwiYXVkIjpbImEiLCJiIl0sImV4cCI6MT"
	"AwMCwibmJmIjo5MDB9.ty-qYDPNkVhapXlneRsWzZUVsImwp3OEBUaSLbZycgM";

static double per_check_ns(const struct ws_auth *a, const char *value, long iters)
{
	struct http_request req = { .n_headers = 1 };
	volatile const char *sink;
	uint64_t t0;

	req.headers[0] = (struct http_header){ "Authorization", 13, value, strlen(value) };
	t0 = ns_now();
	for (long i = 0; i < iters; i++) {
		sink = ws_auth_check(a, &req, 950);
		if (sink != NULL) {
			fprintf(stderr, "auth-bench: check failed: %s\n", (const char *)sink);
			exit(1);
		}
	}
	return (double)(ns_now() - t0) / (double)iters;
}

static int cmd_check(int argc, char **argv)
{
	long iters = atol(opt(argc, argv, "--iters", "200000"));
	struct ws_auth none = { .mode = WS_AUTH_NONE }, cap = { .mode = WS_AUTH_CAPABILITY_TOKEN };
	static uint8_t key[] = "0123456789abcdef0123456789abcdef";
	struct ws_auth hs = { .mode = WS_AUTH_SIGNED_BEARER_TOKEN, .secret = key, .secret_len = 32,
			      .issuer = "i", .audience = "b" };

	if (ws_auth_init() < 0)
		return 1;
	ws_auth_sha256((const uint8_t *)"cap-token-6f1d2a9c7e", 20, cap.token_sha256);
	emit("auth_check_none", "ns", per_check_ns(&none, "Bearer x", iters), (unsigned long long)iters);
	emit("auth_check_capability", "ns", per_check_ns(&cap, "Bearer cap-token-6f1d2a9c7e", iters),
	     (unsigned long long)iters);
	emit("auth_check_jwt", "ns", per_check_ns(&hs, jwt, iters / 4), (unsigned long long)iters / 4);
	return 0;
}

static int cmd_connect(int argc, char **argv)
{
	const char *url = opt(argc, argv, "--url", NULL), *hdr = opt(argc, argv, "--header", NULL);
	const char *ca = opt(argc, argv, "--tls", NULL);
	long iters = atol(opt(argc, argv, "--iters", "2000"));
	SSL_CTX *ctx = NULL;
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct samples s = { 0 };
	char host[64], req[2048], resp[1024];
	int port, n;

	if (!url || sscanf(url, "ws://%63[0-9.]:%d", host, &port) != 2 ||
	    inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		fprintf(stderr, "auth-bench connect: --url ws://IP:PORT required\n");
		return 2;
	}
	sa.sin_port = htons((uint16_t)port);
	if (ca) {
		ctx = SSL_CTX_new(TLS_client_method());
		if (!ctx || SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1) {
			fprintf(stderr, "auth-bench: cannot load %s\n", ca);
			return 1;
		}
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
		SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	}
	n = snprintf(req, sizeof(req),
		     "GET / HTTP/1.1\r\nHost: %s:%d\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
		     "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
		     "%s%s\r\n", host, port, hdr ? hdr : "", hdr ? "\r\n" : "");
	for (long i = 0; i < iters; i++) {
		uint64_t t0 = ns_now();
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
		size_t got = 0;
		SSL *ssl = NULL;

		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			perror("auth-bench connect");
			return 1;
		}
		if (ctx) {
			ssl = SSL_new(ctx);
			if (!ssl || SSL_set_fd(ssl, fd) != 1 || SSL_set1_host(ssl, host) != 1 ||
			    SSL_connect(ssl) != 1) {
				fprintf(stderr, "auth-bench: TLS handshake failed\n");
				return 1;
			}
		}
		if ((ssl ? SSL_write(ssl, req, n) : send(fd, req, (size_t)n, MSG_NOSIGNAL)) != n) {
			perror("auth-bench send");
			return 1;
		}
		while (!memmem(resp, got, "\r\n\r\n", 4)) {
			ssize_t r = ssl ? SSL_read(ssl, resp + got, (int)(sizeof(resp) - got))
					: recv(fd, resp + got, sizeof(resp) - got, 0);

			if (r <= 0) {
				fprintf(stderr, "auth-bench: connection ended during the upgrade\n");
				return 1;
			}
			got += (size_t)r;
		}
		if (got < 12 || memcmp(resp + 9, "101", 3) != 0) {
			fprintf(stderr, "auth-bench: upgrade refused: %.*s\n", (int)got, resp);
			return 1;
		}
		samples_add(&s, ns_now() - t0);
		SSL_free(ssl);
		close(fd);
	}
	SSL_CTX_free(ctx);
	emit_lat("auth_connect_upgrade", &s);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "check"))
		return cmd_check(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "connect"))
		return cmd_connect(argc, argv);
	fprintf(stderr, "usage: auth-bench check [--iters N] | connect --url ws://IP:PORT "
			"[--header H] [--iters N]\n");
	return 2;
}
