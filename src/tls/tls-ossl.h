/* SPDX-License-Identifier: MIT */
/*
 * What uexec asks of OpenSSL besides the memory-BIO pump (tls-mem.h): TLS
 * contexts (the listener's, the outbound client's), the peer name an
 * outbound connection checks, the managed proxy's interception CA, and the
 * primitives remote mode takes from libcrypto (SHA-3/SHAKE for ML-KEM,
 * AES-256-GCM where libsodium's needs AES-NI the CPU lacks).
 *
 * All of it lives in the OpenSSL module (tls-module.h), which uexec loads
 * on first use (tls-load.c), so that a server without TLS maps neither
 * libssl nor libcrypto. Tests link these functions directly
 * (tls_ossl_dep). Errors are -errno; a module that cannot be loaded is
 * -ELIBACC (the loader logs why, once).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ssl_st;
struct ssl_ctx_st;
struct tls_mem;

/*
 * A server context: TLS >= 1.2, no renegotiation, the server's cipher
 * order, the certificate chain and key of these PEM files (blocking file
 * reads). 0, or -EINVAL with the reason in err ("cannot load --tls-cert
 * PATH: ..."), or -ELIBACC.
 */
int tls_ctx_server_new(const char *cert, const char *key, struct ssl_ctx_st **ret, char *err,
		       size_t err_size);
/* A client context: TLS >= 1.2, the peer verified against the default trust store. 0 or -errno. */
int tls_ctx_client_new(struct ssl_ctx_st **ret);
/* Drops a reference (SSLs made from it keep their own). NULL is fine. */
void tls_ctx_free(struct ssl_ctx_st *ctx);
/*
 * The name a client SSL checks the certificate against (an IP address, or a
 * host name without partial wildcards, also sent as SNI). 0, -EINVAL, -ENOMEM.
 */
int tls_mem_set_peer(struct tls_mem *t, const char *host, bool is_ip);

/* ---- remote mode's primitives ---- */
enum tls_keccak_kind { TLS_SHA3_256, TLS_SHA3_512, TLS_SHAKE128, TLS_SHAKE256 };
/*
 * The hash of a ‖ b (b may be NULL with blen 0): the digest's size for
 * SHA-3 (outlen must match it), outlen bytes squeezed for SHAKE. The
 * Keccak state is cleared. 0, -ENOMEM, -EIO.
 */
int tls_keccak(enum tls_keccak_kind kind, uint8_t *out, size_t outlen, const void *a, size_t alen,
	       const void *b, size_t blen);
/*
 * AES-256-GCM keyed once for one direction (seal or open): each record then
 * sets only its nonce, so a relay stream pays the key schedule once, not per
 * record. The key schedule is cleared at free. 0, -ENOMEM, -EIO.
 */
struct tls_gcm;
int tls_gcm_new(const uint8_t key[32], bool seal, struct tls_gcm **ret);
/* out = ct ‖ tag (len + 16 bytes). 0, -EIO. */
int tls_gcm_seal(struct tls_gcm *g, const uint8_t nonce[12], const uint8_t *ad, size_t adlen,
		 const uint8_t *pt, size_t len, uint8_t *out);
/* Opens ct ‖ tag (len >= 16 bytes) into out (len - 16). 0, -EBADMSG. */
int tls_gcm_open(struct tls_gcm *g, const uint8_t nonce[12], const uint8_t *ad, size_t adlen,
		 const uint8_t *ct, size_t len, uint8_t *out);
/* NULL is fine. */
void tls_gcm_free(struct tls_gcm *g);

/* ---- the network proxy's interception CA (src/netproxy/mitm.c) ---- */
struct tls_mitm;
/*
 * A fresh CA (ECDSA P-256, 10 years, CA:TRUE pathlen 0), the leaf key, and
 * the server context of intercepted connections (TLS >= 1.2, ALPN
 * http/1.1 only, no tickets). 0 or -errno.
 */
int tls_mitm_new(struct tls_mitm **ret);
struct ssl_ctx_st *tls_mitm_ctx(const struct tls_mitm *m);
/* The CA certificate as PEM (malloc'd, *ret_len bytes). 0 or -ENOMEM. */
int tls_mitm_ca_pem(const struct tls_mitm *m, char **ret, size_t *ret_len);
/* Gives ssl a leaf certificate for host (cached, a small ring) and the CA as its chain. */
int tls_mitm_setup(struct tls_mitm *m, struct ssl_st *ssl, const char *host);
void tls_mitm_free(struct tls_mitm *m);
/* The roots file the server trusts: $SSL_CERT_FILE, else OpenSSL's default file. */
const char *tls_default_cert_file(void);
