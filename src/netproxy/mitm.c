/* SPDX-License-Identifier: MIT */
/*
 * The interception CA (mitm.h): its keys, certificates and TLS context are
 * the OpenSSL module's (src/tls/tls-mitm.c, loaded on first use); here are
 * its files and its life.
 *
 * The bundle holds the roots the server itself trusts (SSL_CERT_FILE, else
 * OpenSSL's default file) and the CA, so that a command's TLS to hosts that
 * are not intercepted keeps verifying as before. Writing it is the one
 * blocking file operation here; it happens once per server, on the first
 * process/start that needs it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "mitm.h"
#include "server.h"
#include "tls-ossl.h"

#define MITM_ROOTS_MAX (16 * 1024 * 1024) /* a larger roots file is not copied */

struct np_mitm {
	struct tls_mitm *tls;
	char *pem; /* the CA certificate */
	size_t pem_len;
	char dir[PATH_MAX], ca_path[PATH_MAX + 16], bundle[PATH_MAX + 16];
};

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

static int write_pem(const char *path, const struct np_mitm *m, const char *roots)
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
	if (r == 0 && fwrite(m->pem, 1, m->pem_len, f) != m->pem_len)
		r = -EIO;
	if (fclose(f) != 0 && r == 0)
		r = -errno;
	return r;
}

static int write_files(struct np_mitm *m)
{
	const char *tmp = getenv("TMPDIR");
	int r;

	snprintf(m->dir, sizeof(m->dir), "%s/uexec-mitm-XXXXXX", tmp && *tmp == '/' ? tmp : "/tmp");
	if (!mkdtemp(m->dir)) { /* 0700 */
		r = -errno;
		m->dir[0] = 0;
		return r;
	}
	snprintf(m->ca_path, sizeof(m->ca_path), "%s/ca.pem", m->dir);
	snprintf(m->bundle, sizeof(m->bundle), "%s/ca-bundle.pem", m->dir);
	r = write_pem(m->ca_path, m, NULL);
	if (r == 0)
		r = write_pem(m->bundle, m, tls_default_cert_file());
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
	r = tls_mitm_new(&m->tls);
	if (r == 0)
		r = tls_mitm_ca_pem(m->tls, &m->pem, &m->pem_len);
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
	return tls_mitm_ctx(m->tls);
}

int netproxy_mitm_setup(struct np_mitm *m, struct ssl_st *ssl, const char *host)
{
	return tls_mitm_setup(m->tls, ssl, host);
}

void netproxy_mitm_free(struct np_mitm *m)
{
	if (!m)
		return;
	if (m->dir[0]) {
		(void)unlink(m->ca_path);
		(void)unlink(m->bundle);
		(void)rmdir(m->dir);
	}
	tls_mitm_free(m->tls);
	free(m->pem);
	free(m);
}
