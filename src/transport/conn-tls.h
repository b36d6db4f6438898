/* SPDX-License-Identifier: MIT */
/*
 * The listener's TLS (--listen wss://, --tls-cert, --tls-key): the server
 * SSL_CTX, made once before the server starts and again on demand. Each
 * connection's TLS runs through the memory-BIO pump (src/tls/tls-mem.h) in
 * conn.c: ciphertext read by the ring into provided buffers, records queued
 * on the connection's output queue, SSL never touching the socket.
 */
#pragma once

#include <stddef.h>

#include "server.h"

/*
 * Makes the server context cfg describes (NULL in *ret without --tls-cert):
 * TLS 1.2 or newer, the certificate chain file and the private key (PEM),
 * checked against each other, no renegotiation. Returns 0, or -EINVAL with a
 * message naming the file and OpenSSL's reason in err.
 */
int conn_tls_load(const struct config *cfg, struct ssl_ctx_st **ret, char *err, size_t err_size);

/* Frees a context from conn_tls_load() (NULL allowed). */
void conn_tls_free(struct ssl_ctx_st *ctx);

/*
 * ctx (owned from now on; NULL: no TLS) becomes the context of connections
 * accepted from now on; the previous one is freed (at shutdown:
 * conn_tls_install(NULL)). conn_tls_current(): the one in force, or NULL
 * (the listener is ws://).
 */
void conn_tls_install(struct ssl_ctx_st *ctx);
struct ssl_ctx_st *conn_tls_current(void);

/*
 * SIGHUP: reads the certificate and key that cfg (the configuration just
 * re-read; the files may differ from those at start-up) names and uses them
 * for connections accepted from now on (established ones keep their
 * session). On failure the previous ones stay and the reason is logged.
 * Returns 0 or -errno.
 */
int conn_tls_reload(struct server *s, const struct config *cfg);
