/* SPDX-License-Identifier: MIT */
/*
 * The OpenSSL module: everything of uexec that calls libssl or libcrypto
 * (tls-mem.c, tls-ctx.c, tls-crypto.c, tls-mitm.c) built as uexec-openssl.so,
 * which tls-load.c opens the first time TLS, remote mode or the proxy's
 * interception needs it. A server with none of them maps neither library:
 * 1.7 MB of resident set (bench/README.md, "Footprint").
 *
 * This header is the ABI between the two: the module exports one symbol,
 * TLS_MODULE_SYMBOL, a table of the functions of tls-mem.h and tls-ossl.h;
 * everything else in it is hidden, so that its functions never interpose on
 * the loader's wrappers of the same names. A uexec and a module of different
 * builds are refused by the abi field.
 */
#pragma once

#include "tls-mem.h"
#include "tls-ossl.h"

#define TLS_MODULE_FILE "uexec-openssl.so"
#define TLS_MODULE_SYMBOL "uexec_tls_module"
/* Bump when a signature or a struct of tls-mem.h or tls-ossl.h changes. */
#define TLS_MODULE_ABI 2u

struct tls_module {
	unsigned abi; /* TLS_MODULE_ABI */
	/* tls-mem.h */
	int (*mem_init)(struct tls_mem *t, struct ssl_ctx_st *ctx, bool server);
	void (*mem_done)(struct tls_mem *t);
	int (*mem_feed)(struct tls_mem *t, const void *p, size_t n);
	enum tls_mem_result (*mem_step)(struct tls_mem *t, void *buf, size_t cap, size_t *ret_n);
	bool (*mem_ready)(const struct tls_mem *t);
	int (*mem_write)(struct tls_mem *t, const void *p, size_t n);
	void (*mem_shutdown)(struct tls_mem *t);
	size_t (*mem_pending)(const struct tls_mem *t);
	size_t (*mem_take)(struct tls_mem *t, void *dst, size_t n);
	void (*mem_error_text)(const struct tls_mem *t, char *out, size_t n, bool *ret_verify);
	int (*mem_set_peer)(struct tls_mem *t, const char *host, bool is_ip);
	/* contexts */
	int (*ctx_server_new)(const char *cert, const char *key, struct ssl_ctx_st **ret, char *err,
			      size_t err_size);
	int (*ctx_client_new)(struct ssl_ctx_st **ret);
	void (*ctx_free)(struct ssl_ctx_st *ctx);
	/* remote mode */
	int (*keccak)(enum tls_keccak_kind kind, uint8_t *out, size_t outlen, const void *a,
		      size_t alen, const void *b, size_t blen);
	int (*gcm_new)(const uint8_t key[32], bool seal, struct tls_gcm **ret);
	int (*gcm_seal)(struct tls_gcm *g, const uint8_t nonce[12], const uint8_t *ad,
			size_t adlen, const uint8_t *pt, size_t len, uint8_t *out);
	int (*gcm_open)(struct tls_gcm *g, const uint8_t nonce[12], const uint8_t *ad,
			size_t adlen, const uint8_t *ct, size_t len, uint8_t *out);
	void (*gcm_free)(struct tls_gcm *g);
	/* the interception CA */
	int (*mitm_new)(struct tls_mitm **ret);
	struct ssl_ctx_st *(*mitm_ctx)(const struct tls_mitm *m);
	int (*mitm_ca_pem)(const struct tls_mitm *m, char **ret, size_t *ret_len);
	int (*mitm_setup)(struct tls_mitm *m, struct ssl_st *ssl, const char *host);
	void (*mitm_free)(struct tls_mitm *m);
	const char *(*default_cert_file)(void);
};
