/* SPDX-License-Identifier: MIT */
/* TLS contexts and the client's peer name (tls-ossl.h). */
#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>

#include "tls-mem.h"
#include "tls-ossl.h"

static int fail(SSL_CTX *ctx, char *err, size_t err_size, const char *what, const char *path)
{
	char reason[256] = "unknown error";
	unsigned long e = ERR_peek_last_error();

	if (e)
		ERR_error_string_n(e, reason, sizeof(reason));
	snprintf(err, err_size, "%s%s%s: %s", what, path ? " " : "", path ? path : "", reason);
	ERR_clear_error();
	SSL_CTX_free(ctx);
	return -EINVAL;
}

int tls_ctx_server_new(const char *cert, const char *key, SSL_CTX **ret, char *err,
		       size_t err_size)
{
	SSL_CTX *ctx;

	*ret = NULL;
	ERR_clear_error();
	ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx)
		return fail(NULL, err, err_size, "cannot make a TLS context", NULL);
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1)
		return fail(ctx, err, err_size, "cannot require TLS 1.2", NULL);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
	/* Idle connections keep no record buffers. */
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1)
		return fail(ctx, err, err_size, "cannot load --tls-cert", cert);
	if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1)
		return fail(ctx, err, err_size, "cannot load --tls-key", key);
	if (SSL_CTX_check_private_key(ctx) != 1)
		return fail(ctx, err, err_size, "--tls-key does not match --tls-cert", key);
	*ret = ctx;
	return 0;
}

int tls_ctx_client_new(SSL_CTX **ret)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

	*ret = NULL;
	if (!ctx)
		return -ENOMEM;
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
	    SSL_CTX_set_default_verify_paths(ctx) != 1) {
		SSL_CTX_free(ctx);
		return -ENOMEM;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	*ret = ctx;
	return 0;
}

void tls_ctx_free(SSL_CTX *ctx)
{
	SSL_CTX_free(ctx);
}

int tls_mem_set_peer(struct tls_mem *t, const char *host, bool is_ip)
{
	if (is_ip)
		return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(t->ssl), host) == 1 ? 0 : -EINVAL;
	SSL_set_hostflags(t->ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	if (SSL_set1_host(t->ssl, host) != 1 || SSL_set_tlsext_host_name(t->ssl, host) != 1)
		return -ENOMEM;
	return 0;
}
