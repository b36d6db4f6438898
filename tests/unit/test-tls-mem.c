/* SPDX-License-Identifier: MIT */
/*
 * src/tls/tls-mem.c: a client pump and a server pump talking to each other in
 * memory (no sockets): the handshake with a verified certificate, data both
 * ways (records larger than one read), close_notify, a wrong host name, and
 * bytes that are not TLS.
 */
#include <errno.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <string.h>

#include "tests.h"
#include "tls-mem.h"

static EVP_PKEY *key;
static X509 *cert;

static void make_cert(void)
{
	X509_NAME *name;
	X509V3_CTX v3;
	X509_EXTENSION *ext;

	if (cert)
		return;
	key = EVP_EC_gen("P-256");
	cert = X509_new();
	ASSERT_TRUE(key && cert);
	X509_set_version(cert, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
	X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
	X509_gmtime_adj(X509_getm_notAfter(cert), 86400);
	X509_set_pubkey(cert, key);
	name = X509_get_subject_name(cert);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"localhost", -1,
				   -1, 0);
	X509_set_issuer_name(cert, name);
	X509V3_set_ctx_nodb(&v3);
	X509V3_set_ctx(&v3, cert, cert, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &v3, NID_subject_alt_name, "DNS:localhost");
	ASSERT_TRUE(ext != NULL);
	X509_add_ext(cert, ext, -1);
	X509_EXTENSION_free(ext);
	ASSERT_TRUE(X509_sign(cert, key, EVP_sha256()) > 0);
}

static SSL_CTX *server_ctx(void)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

	make_cert();
	ASSERT_TRUE(ctx != NULL);
	ASSERT_EQ(1, SSL_CTX_use_certificate(ctx, cert));
	ASSERT_EQ(1, SSL_CTX_use_PrivateKey(ctx, key));
	return ctx;
}

/* A client that trusts the certificate and checks host. */
static SSL_CTX *client_ctx(void)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

	make_cert();
	ASSERT_TRUE(ctx != NULL);
	ASSERT_EQ(1, X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), cert));
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	return ctx;
}

/* Moves what a has to send into b. Returns the bytes moved. */
static size_t shuttle(struct tls_mem *a, struct tls_mem *b)
{
	uint8_t buf[4096];
	size_t total = 0, n;

	while ((n = tls_mem_take(a, buf, sizeof(buf))) > 0) {
		ASSERT_EQ(0, tls_mem_feed(b, buf, n));
		total += n;
	}
	ASSERT_EQ(0, tls_mem_pending(a));
	return total;
}

/*
 * Steps a until it wants more input (or ends); plaintext goes to out[*len..cap)
 * (a scratch buffer, discarded, when out is NULL). Stops early when out is full.
 */
static enum tls_mem_result drain(struct tls_mem *a, uint8_t *out, size_t cap, size_t *len)
{
	uint8_t scratch[256];
	size_t dummy = 0;

	if (!out) {
		out = scratch;
		cap = sizeof(scratch);
		len = &dummy;
	}
	for (;;) {
		size_t n = 0;
		enum tls_mem_result e = tls_mem_step(a, out + *len, cap - *len, &n);

		if (e != TLS_MEM_DONE)
			return e;
		*len += n;
		if (*len == cap) {
			if (out != scratch)
				return e;
			*len = 0;
		}
	}
}

static void handshake(struct tls_mem *c, struct tls_mem *s)
{
	for (int i = 0; i < 10 && !(tls_mem_ready(c) && tls_mem_ready(s)); i++) {
		ASSERT_TRUE(drain(c, NULL, 0, NULL) != TLS_MEM_FAILED);
		shuttle(c, s);
		ASSERT_TRUE(drain(s, NULL, 0, NULL) != TLS_MEM_FAILED);
		shuttle(s, c);
	}
	ASSERT_TRUE(tls_mem_ready(c) && tls_mem_ready(s));
}

TEST(handshake_data_close)
{
	SSL_CTX *sctx = server_ctx(), *cctx = client_ctx();
	struct tls_mem c, s;
	size_t big = 200000, got = 0;
	uint8_t *data = malloc(big), *out = malloc(big + 16);

	ASSERT_TRUE(data && out);
	for (size_t i = 0; i < big; i++)
		data[i] = (uint8_t)(i * 7 + 3);
	ASSERT_EQ(0, tls_mem_init(&s, sctx, true));
	ASSERT_EQ(0, tls_mem_init(&c, cctx, false));
	ASSERT_EQ(1, SSL_set1_host(c.ssl, "localhost"));
	ASSERT_TRUE(!tls_mem_ready(&c) && !tls_mem_ready(&s));
	handshake(&c, &s);

	/* Server to client: more than one record (16 KiB) and more than one feed. */
	ASSERT_EQ(0, tls_mem_write(&s, data, big));
	ASSERT_TRUE(shuttle(&s, &c) > big);
	ASSERT_EQ(TLS_MEM_WANT_READ, drain(&c, out, big + 16, &got));
	ASSERT_EQ(big, got);
	ASSERT_TRUE(memcmp(out, data, big) == 0);

	/* Client to server. */
	got = 0;
	ASSERT_EQ(0, tls_mem_write(&c, "hello", 5));
	shuttle(&c, &s);
	ASSERT_EQ(TLS_MEM_WANT_READ, drain(&s, out, big + 16, &got));
	ASSERT_EQ(5, got);
	ASSERT_TRUE(memcmp(out, "hello", 5) == 0);

	/* close_notify: the other side sees TLS_MEM_CLOSED. */
	tls_mem_shutdown(&s);
	ASSERT_TRUE(shuttle(&s, &c) > 0);
	got = 0;
	ASSERT_EQ(TLS_MEM_CLOSED, drain(&c, out, big + 16, &got));

	tls_mem_done(&c);
	tls_mem_done(&s);
	tls_mem_done(&s); /* idempotent */
	ASSERT_TRUE(c.ssl == NULL && s.ssl == NULL);
	SSL_CTX_free(sctx);
	SSL_CTX_free(cctx);
	free(data);
	free(out);
}

TEST(wrong_host_is_a_verify_failure)
{
	SSL_CTX *sctx = server_ctx(), *cctx = client_ctx();
	struct tls_mem c, s;
	enum tls_mem_result e = TLS_MEM_WANT_READ;
	char why[200];
	bool verify = false;

	ASSERT_EQ(0, tls_mem_init(&s, sctx, true));
	ASSERT_EQ(0, tls_mem_init(&c, cctx, false));
	ASSERT_EQ(1, SSL_set1_host(c.ssl, "other.example"));
	for (int i = 0; i < 10 && e != TLS_MEM_FAILED; i++) {
		e = drain(&c, NULL, 0, NULL);
		shuttle(&c, &s);
		(void)drain(&s, NULL, 0, NULL);
		shuttle(&s, &c);
	}
	ASSERT_EQ(TLS_MEM_FAILED, e);
	tls_mem_error_text(&c, why, sizeof(why), &verify);
	ASSERT_TRUE(verify);
	ASSERT_TRUE(strstr(why, "hostname mismatch") != NULL);
	ASSERT_EQ(-EPROTO, tls_mem_write(&c, "x", 1));
	tls_mem_done(&c);
	tls_mem_done(&s);
	SSL_CTX_free(sctx);
	SSL_CTX_free(cctx);
}

TEST(plain_text_is_a_handshake_failure)
{
	SSL_CTX *sctx = server_ctx();
	struct tls_mem s;
	static const char req[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
	char why[200];
	bool verify = true;

	ASSERT_EQ(0, tls_mem_init(&s, sctx, true));
	ASSERT_EQ(0, tls_mem_feed(&s, req, sizeof(req) - 1));
	ASSERT_EQ(TLS_MEM_FAILED, drain(&s, NULL, 0, NULL));
	tls_mem_error_text(&s, why, sizeof(why), &verify);
	ASSERT_TRUE(!verify);
	ASSERT_TRUE(strstr(why, "http request") != NULL);
	ASSERT_TRUE(!tls_mem_ready(&s));
	tls_mem_done(&s);
	SSL_CTX_free(sctx);
}

TEST_MAIN()
