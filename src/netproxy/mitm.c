/* SPDX-License-Identifier: MIT */
/*
 * The interception CA (mitm.h). ECDSA P-256 keys from OpenSSL's generator,
 * serial numbers from libsodium's randombytes. Leaf certificates name the
 * target only (SAN DNS or IP), are good until the CA expires, and are
 * cached per host (a small ring: a command talks to few bound hosts).
 *
 * The bundle holds the roots the server itself trusts (SSL_CERT_FILE, else
 * OpenSSL's default file) and the CA, so that a command's TLS to hosts that
 * are not intercepted keeps verifying as before. Writing it is the one
 * blocking file operation here; it happens once per server, on the first
 * process/start that needs it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "mitm.h"
#include "server.h"

#define MITM_CACHE 32 /* leaf certificates kept */
#define MITM_CA_DAYS 3650
#define MITM_ROOTS_MAX (16 * 1024 * 1024) /* a larger roots file is not copied */

struct np_mitm {
	EVP_PKEY *ca_key, *leaf_key;
	X509 *ca;
	SSL_CTX *ctx;
	char dir[PATH_MAX], ca_path[PATH_MAX + 16], bundle[PATH_MAX + 16];
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

	randombytes_buf(serial, sizeof(serial));
	serial[0] &= 0x7f; /* positive */
	if (!x || X509_set_version(x, 2) != 1 || !(bn = BN_bin2bn(serial, sizeof(serial), NULL)) ||
	    !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) ||
	    !X509_gmtime_adj(X509_getm_notBefore(x), -3600) ||
	    !(not_after ? X509_set1_notAfter(x, not_after)
			: X509_time_adj_ex(X509_getm_notAfter(x), (int)days, 0, NULL) != NULL) ||
	    X509_set_pubkey(x, key) != 1 || !(name = X509_get_subject_name(x)) ||
	    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1,
				       0) != 1) {
		BN_free(bn);
		X509_free(x);
		return NULL;
	}
	BN_free(bn);
	return x;
}

static int make_ca(struct np_mitm *m)
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

static int make_ctx(struct np_mitm *m)
{
	m->ctx = SSL_CTX_new(TLS_server_method());
	if (!m->ctx || SSL_CTX_set_min_proto_version(m->ctx, TLS1_2_VERSION) != 1)
		return -ENOMEM;
	SSL_CTX_set_mode(m->ctx, SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_options(m->ctx, SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_alpn_select_cb(m->ctx, alpn_select, NULL);
	return 0;
}

/* Appends the file at path to out (at most MITM_ROOTS_MAX bytes); a missing file adds nothing. */
static int copy_roots(const char *path, FILE *out)
{
	char buf[65536];
	size_t n, total = 0;
	FILE *in = path ? fopen(path, "re") : NULL;

	if (!in)
		return 0;
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0 && total < MITM_ROOTS_MAX) {
		total += n;
		if (fwrite(buf, 1, n, out) != n) {
			fclose(in);
			return -EIO;
		}
	}
	fclose(in);
	if (total && buf[(n ? n : 1) - 1] != '\n')
		fputc('\n', out);
	return 0;
}

static int write_pem(const char *path, X509 *ca, const char *roots)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	int r = 0;

	if (!f) {
		r = -errno;
		if (fd >= 0)
			close(fd);
		return r;
	}
	if (roots)
		r = copy_roots(roots, f);
	if (r == 0 && PEM_write_X509(f, ca) != 1)
		r = -EIO;
	if (fclose(f) != 0 && r == 0)
		r = -errno;
	return r;
}

static int write_files(struct np_mitm *m)
{
	const char *tmp = getenv("TMPDIR"), *roots = getenv(X509_get_default_cert_file_env());
	int r;

	snprintf(m->dir, sizeof(m->dir), "%s/uexec-mitm-XXXXXX", tmp && *tmp == '/' ? tmp : "/tmp");
	if (!mkdtemp(m->dir)) { /* 0700 */
		r = -errno;
		m->dir[0] = 0;
		return r;
	}
	snprintf(m->ca_path, sizeof(m->ca_path), "%s/ca.pem", m->dir);
	snprintf(m->bundle, sizeof(m->bundle), "%s/ca-bundle.pem", m->dir);
	r = write_pem(m->ca_path, m->ca, NULL);
	if (r == 0)
		r = write_pem(m->bundle, m->ca,
			      roots && *roots ? roots : X509_get_default_cert_file());
	return r;
}

int netproxy_mitm_get(struct server *s, struct np_mitm **ret)
{
	struct np_mitm *m;
	int r;

	if (s->mitm) {
		*ret = s->mitm;
		return 0;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	r = make_ca(m);
	if (r == 0)
		r = make_ctx(m);
	if (r == 0)
		r = write_files(m);
	if (r < 0) {
		log_warning_errno(r, "Network proxy: cannot set up the credential masking CA: %m");
		netproxy_mitm_free(m);
		return r;
	}
	log_info("Network proxy: credential masking CA made; its bundle is %s", m->bundle);
	s->mitm = m;
	*ret = m;
	return 0;
}

const char *netproxy_mitm_bundle(const struct np_mitm *m)
{
	return m->bundle;
}

struct ssl_ctx_st *netproxy_mitm_ctx(const struct np_mitm *m)
{
	return m->ctx;
}

static X509 *leaf_for(struct np_mitm *m, const char *host)
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

int netproxy_mitm_setup(struct np_mitm *m, struct ssl_st *ssl, const char *host)
{
	X509 *x = leaf_for(m, host);

	if (!x)
		return -EINVAL;
	if (SSL_use_certificate(ssl, x) != 1 || SSL_use_PrivateKey(ssl, m->leaf_key) != 1 ||
	    SSL_add1_chain_cert(ssl, m->ca) != 1)
		return -ENOMEM;
	return 0;
}

void netproxy_mitm_free(struct np_mitm *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < MITM_CACHE; i++)
		X509_free(m->cache[i].cert);
	if (m->dir[0]) {
		(void)unlink(m->ca_path);
		(void)unlink(m->bundle);
		(void)rmdir(m->dir);
	}
	SSL_CTX_free(m->ctx);
	X509_free(m->ca);
	EVP_PKEY_free(m->ca_key);
	EVP_PKEY_free(m->leaf_key);
	free(m);
}
