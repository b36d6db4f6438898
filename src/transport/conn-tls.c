/* SPDX-License-Identifier: MIT */
/* The listener's server SSL_CTX (conn-tls.h). Files are read with blocking calls, at start-up and on reload. */
#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>

#include "conn-tls.h"
#include "log.h"

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

int conn_tls_load(const struct config *cfg, SSL_CTX **ret, char *err, size_t err_size)
{
	SSL_CTX *ctx;

	*ret = NULL;
	if (!cfg->tls_cert)
		return 0;
	ERR_clear_error();
	ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx)
		return fail(NULL, err, err_size, "cannot make a TLS context", NULL);
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1)
		return fail(ctx, err, err_size, "cannot require TLS 1.2", NULL);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
	/* Idle connections keep no record buffers. */
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	if (SSL_CTX_use_certificate_chain_file(ctx, cfg->tls_cert) != 1)
		return fail(ctx, err, err_size, "cannot load --tls-cert", cfg->tls_cert);
	if (SSL_CTX_use_PrivateKey_file(ctx, cfg->tls_key, SSL_FILETYPE_PEM) != 1)
		return fail(ctx, err, err_size, "cannot load --tls-key", cfg->tls_key);
	if (SSL_CTX_check_private_key(ctx) != 1)
		return fail(ctx, err, err_size, "--tls-key does not match --tls-cert", cfg->tls_key);
	*ret = ctx;
	return 0;
}

void conn_tls_free(SSL_CTX *ctx)
{
	SSL_CTX_free(ctx);
}

/* The listener's server context in force (module state: one listener per process), or NULL. */
static SSL_CTX *listener_ctx;

void conn_tls_install(SSL_CTX *ctx)
{
	/* Connections hold their own reference to the context they were made from. */
	SSL_CTX_free(listener_ctx);
	listener_ctx = ctx;
}

SSL_CTX *conn_tls_current(void)
{
	return listener_ctx;
}

int conn_tls_reload(struct server *s, const struct config *cfg)
{
	SSL_CTX *ctx;
	char err[512];
	int r;

	/* wss:// comes with --listen, which takes a restart: both or neither. */
	if (!s->cfg.tls_cert || !cfg->tls_cert)
		return 0;
	r = conn_tls_load(cfg, &ctx, err, sizeof(err));
	if (r < 0) {
		log_warning("Reloading the TLS certificate failed, keeping the previous one: %s", err);
		return r;
	}
	conn_tls_install(ctx);
	log_info("Reloaded the TLS certificate");
	return 0;
}
