/* SPDX-License-Identifier: MIT */
/*
 * The certificate authority of credential masking's TLS interception
 * (docs/NETWORK-PROXY.md "Credential masking"): one per server, made on
 * first use. Its private key and the leaf keys live only in memory; what
 * reaches the disk is the CA certificate and a bundle (the system's roots
 * plus it) in a private directory (0700) of its own, named to the commands
 * by the CA variables (SSL_CERT_FILE, ...) and removed with the server.
 */
#pragma once

#include <stdbool.h>

struct server;
struct ssl_st;
struct ssl_ctx_st;
struct np_mitm;

/*
 * The server's CA (made now if need be: key, certificate, bundle file).
 * Returns 0 with *ret, or -errno (the bundle cannot be written, -ENOMEM).
 */
int netproxy_mitm_get(struct server *s, struct np_mitm **ret);
/* The bundle file's path. */
const char *netproxy_mitm_bundle(const struct np_mitm *m);
/* The server-side SSL_CTX of intercepted connections (TLS >= 1.2, ALPN http/1.1 only). */
struct ssl_ctx_st *netproxy_mitm_ctx(const struct np_mitm *m);
/*
 * Gives ssl the certificate for host (a normalised name or IP literal),
 * signed by the CA (cached per host). Returns 0, -EINVAL, or -ENOMEM.
 */
int netproxy_mitm_setup(struct np_mitm *m, struct ssl_st *ssl, const char *host);
/* Frees the keys and removes the files (server shutdown). NULL is fine. */
void netproxy_mitm_free(struct np_mitm *m);
