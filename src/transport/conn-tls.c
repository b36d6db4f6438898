/* SPDX-License-Identifier: MIT */
/*
 * The listener's server SSL_CTX (conn-tls.h), made by the OpenSSL module
 * (src/tls). Files are read with blocking calls, at start-up and on reload.
 */
#include <errno.h>
#include <stddef.h>

#include "conn-tls.h"
#include "log.h"
#include "tls-ossl.h"

int conn_tls_load(const struct config *cfg, struct ssl_ctx_st **ret, char *err, size_t err_size)
{
	*ret = NULL;
	if (!cfg->tls_cert)
		return 0;
	return tls_ctx_server_new(cfg->tls_cert, cfg->tls_key, ret, err, err_size);
}

void conn_tls_free(struct ssl_ctx_st *ctx)
{
	tls_ctx_free(ctx);
}

/* The listener's server context in force (module state: one listener per process), or NULL. */
static struct ssl_ctx_st *listener_ctx;

void conn_tls_install(struct ssl_ctx_st *ctx)
{
	/* Connections hold their own reference to the context they were made from. */
	tls_ctx_free(listener_ctx);
	listener_ctx = ctx;
}

struct ssl_ctx_st *conn_tls_current(void)
{
	return listener_ctx;
}

int conn_tls_reload(struct server *s, const struct config *cfg)
{
	struct ssl_ctx_st *ctx;
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
