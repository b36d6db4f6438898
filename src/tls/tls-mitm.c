/* SPDX-License-Identifier: MIT */
/*
 * The network proxy's interception CA in OpenSSL (tls-ossl.h; its files and
 * its life are src/netproxy/mitm.c's). ECDSA P-256 keys; leaf certificates
 * name the target only (SAN DNS or IP), are good until the CA expires, and
 * are cached per host (a small ring: a command talks to few bound hosts).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tls-ossl.h"

#define MITM_CACHE 32 /* leaf certificates kept */
#define MITM_CA_DAYS 3650

struct tls_mitm {
	EVP_PKEY *ca_key, *leaf_key;
	X509 *ca;
	SSL_CTX *ctx;
	struct {
		char host[256];
		X509 *cert;
	} cache[MITM_CACHE];
	size_t next;
};

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX v3;
	X509_EXTENSION *e;
	int r;

	X509V3_set_ctx(&v3, issuer, cert, NULL, NULL, 0);
	e = X509V3_EXT_conf_nid(NULL, &v3, nid, value);
	if (!e)
		return -EINVAL;
	r = X509_add_ext(cert, e, -1) == 1 ? 0 : -ENOMEM;
	X509_EXTENSION_free(e);
	return r;
}

/* A certificate for key, named cn, valid from an hour ago to not_after (or days from now). */
static X509 *new_cert(EVP_PKEY *key, const char *cn, const ASN1_TIME *not_after, long days)
{
	unsigned char serial[16];
	X509 *x = X509_new();
	BIGNUM *bn = NULL;
	X509_NAME *name;

	if (!x || RAND_bytes(serial, sizeof(serial)) != 1)
		goto fail;
	serial[0] &= 0x7f; /* positive */
	if (X509_set_version(x, 2) != 1 || !(bn = BN_bin2bn(serial, sizeof(serial), NULL)) ||
	    !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) ||
	    !X509_gmtime_adj(X509_getm_notBefore(x), -3600) ||
	    !(not_after ? X509_set1_notAfter(x, not_after)
			: X509_time_adj_ex(X509_getm_notAfter(x), (int)days, 0, NULL) != NULL) ||
	    X509_set_pubkey(x, key) != 1 || !(name = X509_get_subject_name(x)) ||
	    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1,
				       0) != 1)
		goto fail;
	BN_free(bn);
	return x;
fail:
	BN_free(bn);
	X509_free(x);
	return NULL;
}

static int make_ca(struct tls_mitm *m)
{
	m->ca_key = EVP_EC_gen("P-256");
	m->leaf_key = EVP_EC_gen("P-256");
	if (!m->ca_key || !m->leaf_key)
		return -ENOMEM;
	m->ca = new_cert(m->ca_key, "uexec network proxy MITM CA", NULL, MITM_CA_DAYS);
	if (!m->ca || X509_set_issuer_name(m->ca, X509_get_subject_name(m->ca)) != 1 ||
	    add_ext(m->ca, m->ca, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") < 0 ||
	    add_ext(m->ca, m->ca, NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature") <
		    0 ||
	    add_ext(m->ca, m->ca, NID_subject_key_identifier, "hash") < 0 ||
	    X509_sign(m->ca, m->ca_key, EVP_sha256()) <= 0)
		return -ENOMEM;
	return 0;
}

static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
		       const unsigned char *in, unsigned inlen, void *arg)
{
	static const unsigned char h1[] = "\x08http/1.1";

	(void)ssl;
	(void)arg;
	/* HTTP/1.1 only (the requests are rewritten as text); no common protocol: none */
	if (SSL_select_next_proto((unsigned char **)out, outlen, h1, sizeof(h1) - 1, in, inlen) !=
	    OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_NOACK;
	return SSL_TLSEXT_ERR_OK;
}

static int make_ctx(struct tls_mitm *m)
{
	m->ctx = SSL_CTX_new(TLS_server_method());
	if (!m->ctx || SSL_CTX_set_min_proto_version(m->ctx, TLS1_2_VERSION) != 1)
		return -ENOMEM;
	SSL_CTX_set_mode(m->ctx, SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_options(m->ctx, SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_alpn_select_cb(m->ctx, alpn_select, NULL);
	return 0;
}

int tls_mitm_new(struct tls_mitm **ret)
{
	struct tls_mitm *m = calloc(1, sizeof(*m));
	int r;

	*ret = NULL;
	if (!m)
		return -ENOMEM;
	r = make_ca(m);
	if (r == 0)
		r = make_ctx(m);
	if (r < 0) {
		tls_mitm_free(m);
		return r;
	}
	*ret = m;
	return 0;
}

struct ssl_ctx_st *tls_mitm_ctx(const struct tls_mitm *m)
{
	return m->ctx;
}

int tls_mitm_ca_pem(const struct tls_mitm *m, char **ret, size_t *ret_len)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *data, *copy = NULL;
	long n;

	*ret = NULL;
	if (!b)
		return -ENOMEM;
	if (PEM_write_bio_X509(b, m->ca) == 1 && (n = BIO_get_mem_data(b, &data)) > 0 &&
	    (copy = malloc((size_t)n)))
		memcpy(copy, data, (size_t)n);
	BIO_free(b);
	if (!copy)
		return -ENOMEM;
	*ret = copy;
	*ret_len = (size_t)n;
	return 0;
}

static X509 *leaf_for(struct tls_mitm *m, const char *host)
{
	unsigned char bin[16];
	char san[300];
	X509 *x;

	for (size_t i = 0; i < MITM_CACHE; i++)
		if (m->cache[i].cert && !strcmp(m->cache[i].host, host))
			return m->cache[i].cert;
	if (strlen(host) >= sizeof(m->cache[0].host))
		return NULL;
	snprintf(san, sizeof(san), "%s:%s",
		 inet_pton(AF_INET, host, bin) == 1 || inet_pton(AF_INET6, host, bin) == 1 ? "IP"
											   : "DNS",
		 host);
	x = new_cert(m->leaf_key, host, X509_get0_notAfter(m->ca), 0);
	if (!x || X509_set_issuer_name(x, X509_get_subject_name(m->ca)) != 1 ||
	    add_ext(x, m->ca, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
	    add_ext(x, m->ca, NID_key_usage, "critical,digitalSignature") < 0 ||
	    add_ext(x, m->ca, NID_ext_key_usage, "serverAuth") < 0 ||
	    add_ext(x, m->ca, NID_subject_alt_name, san) < 0 ||
	    add_ext(x, m->ca, NID_authority_key_identifier, "keyid:always") < 0 ||
	    X509_sign(x, m->ca_key, EVP_sha256()) <= 0) {
		X509_free(x);
		return NULL;
	}
	X509_free(m->cache[m->next].cert);
	snprintf(m->cache[m->next].host, sizeof(m->cache[0].host), "%s", host);
	m->cache[m->next].cert = x;
	m->next = (m->next + 1) % MITM_CACHE;
	return x;
}

int tls_mitm_setup(struct tls_mitm *m, SSL *ssl, const char *host)
{
	X509 *x = leaf_for(m, host);

	if (!x)
		return -EINVAL;
	if (SSL_use_certificate(ssl, x) != 1 || SSL_use_PrivateKey(ssl, m->leaf_key) != 1 ||
	    SSL_add1_chain_cert(ssl, m->ca) != 1)
		return -ENOMEM;
	return 0;
}

void tls_mitm_free(struct tls_mitm *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < MITM_CACHE; i++)
		X509_free(m->cache[i].cert);
	SSL_CTX_free(m->ctx);
	X509_free(m->ca);
	EVP_PKEY_free(m->ca_key);
	EVP_PKEY_free(m->leaf_key);
	free(m);
}

const char *tls_default_cert_file(void)
{
	const char *env = getenv(X509_get_default_cert_file_env());

	return env && *env ? env : X509_get_default_cert_file();
}
