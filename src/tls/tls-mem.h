/* SPDX-License-Identifier: MIT */
/*
 * TLS over two OpenSSL memory BIOs: the pump shared by the outbound
 * connections (src/net/netconn.c, client side) and the listener
 * (src/transport/conn.c, server side). SSL never touches a file descriptor:
 * the owner feeds the ciphertext it received, steps the engine (handshake,
 * then plaintext reads), writes plaintext, and takes the ciphertext to send.
 * No I/O, no ring, no logging; single-threaded like its owners.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct ssl_st;
struct ssl_ctx_st;

struct tls_mem {
	struct ssl_st *ssl; /* owns both BIOs */
	void *rbio, *wbio;  /* BIO *: ciphertext in (we write), ciphertext out (we read) */
};

/* What tls_mem_step() did (SSL_get_error()'s answers, folded). */
enum tls_mem_result {
	TLS_MEM_DONE,      /* the handshake completed (first time), or *ret_n plaintext bytes read */
	TLS_MEM_WANT_READ, /* everything fed is consumed: feed more ciphertext */
	TLS_MEM_CLOSED,    /* the peer sent close_notify */
	TLS_MEM_FAILED,    /* protocol error, bad certificate, ...: tls_mem_error_text() says */
};

/*
 * Makes the SSL of ctx with two memory BIOs, in the connect (client) or
 * accept (server) state. An empty input BIO means "retry", never EOF.
 * Returns 0 or -ENOMEM (t is then empty).
 */
int tls_mem_init(struct tls_mem *t, struct ssl_ctx_st *ctx, bool server);
/* Frees the SSL and its BIOs; t is then empty (NULL-safe, idempotent). */
void tls_mem_done(struct tls_mem *t);

/* Ciphertext received from the peer. Returns 0 or -ENOMEM. */
int tls_mem_feed(struct tls_mem *t, const void *p, size_t n);

/*
 * Runs the handshake until it completes, then reads up to cap plaintext
 * bytes into buf (*ret_n; 0 for a handshake step). Either may leave
 * ciphertext to send (handshake messages, alerts, session tickets): take it
 * after every call.
 */
enum tls_mem_result tls_mem_step(struct tls_mem *t, void *buf, size_t cap, size_t *ret_n);

/* True once the handshake has completed. */
bool tls_mem_ready(const struct tls_mem *t);

/*
 * Encrypts n plaintext bytes (after the handshake) into records waiting in the
 * output BIO. Returns 0, or -EPROTO (the SSL refused: failed or closed).
 */
int tls_mem_write(struct tls_mem *t, const void *p, size_t n);

/* Queues close_notify (then take the ciphertext). */
void tls_mem_shutdown(struct tls_mem *t);

/* Ciphertext waiting to be sent. */
size_t tls_mem_pending(const struct tls_mem *t);
/* Moves up to n bytes of it into dst; returns how many. */
size_t tls_mem_take(struct tls_mem *t, void *dst, size_t n);

/*
 * Why the last failure happened, for a log line: the certificate
 * verification error if there was one (*ret_verify true), else OpenSSL's
 * error text.
 */
void tls_mem_error_text(const struct tls_mem *t, char *out, size_t n, bool *ret_verify);
