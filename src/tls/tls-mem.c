/* SPDX-License-Identifier: MIT */
/* The memory-BIO TLS pump (tls-mem.h). */
#include <errno.h>
#include <limits.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>

#include "tls-mem.h"

int tls_mem_init(struct tls_mem *t, SSL_CTX *ctx, bool server)
{
	BIO *rbio, *wbio;

	t->ssl = SSL_new(ctx);
	rbio = BIO_new(BIO_s_mem());
	wbio = BIO_new(BIO_s_mem());
	if (!t->ssl || !rbio || !wbio) {
		SSL_free(t->ssl);
		BIO_free(rbio);
		BIO_free(wbio);
		t->ssl = NULL;
		t->rbio = t->wbio = NULL;
		return -ENOMEM;
	}
	/* An empty rbio means "retry later", not end of file. */
	BIO_set_mem_eof_return(rbio, -1);
	SSL_set_bio(t->ssl, rbio, wbio); /* owned by the SSL from here */
	t->rbio = rbio;
	t->wbio = wbio;
	if (server)
		SSL_set_accept_state(t->ssl);
	else
		SSL_set_connect_state(t->ssl);
	return 0;
}

void tls_mem_done(struct tls_mem *t)
{
	SSL_free(t->ssl); /* frees both BIOs */
	t->ssl = NULL;
	t->rbio = t->wbio = NULL;
}

int tls_mem_feed(struct tls_mem *t, const void *p, size_t n)
{
	while (n > 0) {
		int k = (int)(n > INT_MAX ? INT_MAX : n);

		if (BIO_write(t->rbio, p, k) != k)
			return -ENOMEM;
		p = (const char *)p + k;
		n -= (size_t)k;
	}
	return 0;
}

bool tls_mem_ready(const struct tls_mem *t)
{
	return SSL_is_init_finished(t->ssl);
}

enum tls_mem_result tls_mem_step(struct tls_mem *t, void *buf, size_t cap, size_t *ret_n)
{
	int r, e;

	*ret_n = 0;
	ERR_clear_error();
	if (!SSL_is_init_finished(t->ssl)) {
		r = SSL_do_handshake(t->ssl);
		e = r == 1 ? SSL_ERROR_NONE : SSL_get_error(t->ssl, r);
	} else {
		r = SSL_read_ex(t->ssl, buf, cap, ret_n);
		e = r == 1 ? SSL_ERROR_NONE : SSL_get_error(t->ssl, r);
	}
	switch (e) {
	case SSL_ERROR_NONE:
		return TLS_MEM_DONE;
	case SSL_ERROR_WANT_READ:
		return TLS_MEM_WANT_READ;
	case SSL_ERROR_ZERO_RETURN:
		return TLS_MEM_CLOSED;
	default:
		return TLS_MEM_FAILED;
	}
}

int tls_mem_write(struct tls_mem *t, const void *p, size_t n)
{
	while (n > 0) {
		size_t done = 0;

		ERR_clear_error();
		if (SSL_write_ex(t->ssl, p, n, &done) != 1)
			return -EPROTO;
		p = (const char *)p + done;
		n -= done;
	}
	return 0;
}

void tls_mem_shutdown(struct tls_mem *t)
{
	ERR_clear_error();
	(void)SSL_shutdown(t->ssl); /* queues close_notify; the peer's comes as input */
}

size_t tls_mem_pending(const struct tls_mem *t)
{
	return BIO_ctrl_pending(t->wbio);
}

size_t tls_mem_take(struct tls_mem *t, void *dst, size_t n)
{
	int r = BIO_read(t->wbio, dst, (int)(n > INT_MAX ? INT_MAX : n));

	return r > 0 ? (size_t)r : 0;
}

void tls_mem_error_text(const struct tls_mem *t, char *out, size_t n, bool *ret_verify)
{
	long v = t->ssl ? SSL_get_verify_result(t->ssl) : X509_V_OK;
	unsigned long e = ERR_peek_last_error();

	*ret_verify = v != X509_V_OK;
	if (*ret_verify)
		snprintf(out, n, "%s", X509_verify_cert_error_string(v));
	else if (e)
		ERR_error_string_n(e, out, n);
	else
		snprintf(out, n, "unknown error");
}
