/* SPDX-License-Identifier: MIT */
/*
 * The netconn tests' kit (netconn-kit.c): the loop, the recording client, the
 * peers and the in-memory certificates shared by test-netconn.c (TCP, DNS,
 * closes, the worker pool) and test-netconn-tls.c (TLS over the same).
 */
#pragma once

#include <openssl/ssl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "netconn.h"
#include "ring.h"
#include "server.h"
#include "tests.h"

#define GUARD_MS 20000
#define ECHO_BYTES (1u << 20)

/* What the client's handlers saw (cl_handlers; netconn_userdata is the struct client). */
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

/* cl_has_rx: at least n bytes received. */
struct want_rx {
	struct client *c;
	size_t n;
};

/* ---- peers: threads of the test with blocking sockets ---- */

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

/* A temporary trust store and two server contexts (good and wrong names). */
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

/* The loop (a real ring and a worker pool of 2; setup() skips without io_uring). */
extern struct server srv;
void setup(void);
void teardown(void);
/* Runs the loop until cond(arg) holds (true) or guard_ms pass (false). */
bool run_until(bool (*cond)(void *), void *arg, uint64_t guard_ms);
bool never(void *arg);
/* Runs the loop for about ms (only to give something the chance to go wrong). */
void run_for(uint64_t ms);
bool no_netconns(void *arg);
/* The host resolves "localhost" for IPv4 (the cases that need it skip otherwise). */
bool localhost_v4(void);

/* The client. */
extern const struct netconn_handlers cl_handlers;
void cl_data(struct netconn *nc, const uint8_t *p, size_t n);
void cl_closed(struct netconn *nc, int err, const char *why);
bool cl_up_or_closed(void *arg);
bool cl_closed_once(void *arg);
bool cl_has_rx(void *arg);
void cl_open(struct client *c, const char *host, uint16_t port, bool tls, uint64_t timeout_ms);
void cl_wait_up(struct client *c);

/* Peers. */
int listen_on(int family, uint16_t *port);
void peer_start(struct peer *p, int family, enum peer_mode mode, SSL_CTX *sctx);
void peer_join(struct peer *p);

/* Certificates. */
void tls_env_init(struct tls_env *e);
void tls_env_done(struct tls_env *e);

/* Cases run plain and over TLS (sctx NULL: plain). */
/* 1 MiB in sends of 1..4096 bytes, echoed back and compared; then an orderly shutdown. */
void echo_big(const char *host, int family, bool tls, SSL_CTX *sctx);
/* A small echo, and the server name the peer saw. */
void echo_small(const char *host, int family, bool tls, SSL_CTX *sctx, char *sni, size_t sni_n);
/* A peer that says hello and closes: the bytes, then one close with 0. */
void peer_eof(bool tls, SSL_CTX *sctx);
/* netconn_set_reading(false) holds the data back until reading resumes. */
void pause_reading(bool tls, SSL_CTX *sctx);
