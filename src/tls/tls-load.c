/* SPDX-License-Identifier: MIT */
/*
 * uexec's side of the OpenSSL module (tls-module.h): the functions of
 * tls-mem.h and tls-ossl.h as their callers know them, the first call that
 * needs OpenSSL loading uexec-openssl.so (an RTLD_NOW dlopen that maps
 * libssl and libcrypto: a few milliseconds, once). Functions on an object
 * the module made (an SSL, a context, the CA) only run once it is loaded;
 * freeing NULL needs no module.
 *
 * Where it is found: as the TOML module (src/toml/toml-load.c), next to the
 * binary, else in the module directory, through an fd opened once at start
 * (tls_module_open()), so that nothing planted later is loaded. It stays
 * loaded: libcrypto cannot be unloaded (it pins itself with NODELETE and
 * keeps at-exit handlers).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "own-files.h"
#include "tls-load.h"
#include "tls-module.h"

static int module_fd = -1;
static char module_path[PATH_MAX];
static bool opened, failed;
static char why[PATH_MAX + 256]; /* why loading failed, for the callers' errors */
static const struct tls_module *mod;
/*
 * The first load may come from a worker thread (remote mode prepares its
 * msg2 and next ephemeral key there, both hash with SHA-3): one loader at a
 * time, and mod published only once the module is whole.
 */
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

int tls_module_open(void)
{
	int fd;

	if (opened)
		return module_fd >= 0 ? 0 : -ENOENT;
	opened = true;
	fd = server_own_file_open(TLS_MODULE_FILE, UEXEC_MODULEDIR, O_RDONLY | O_CLOEXEC,
				  module_path, sizeof(module_path));
	if (fd < 0) {
		snprintf(why, sizeof(why), TLS_MODULE_FILE " is neither next to the uexec binary nor in "
			 UEXEC_MODULEDIR " (%s: %s)", module_path, strerror(-fd));
		return fd;
	}
	module_fd = fd;
	return 0;
}

/* 0, or -ELIBACC (why says it; logged once unless the caller reports it: quiet). */
static int load_locked(bool quiet)
{
	const struct tls_module *m;
	char fdpath[64];
	void *h;

	if (mod)
		return 0;
	if (failed)
		return -ELIBACC;
	failed = true; /* until it worked: one attempt, one log line */
	if (tls_module_open() < 0)
		goto fail;
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", module_fd);
	h = dlopen(fdpath, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(why, sizeof(why), "%s: %s", module_path, dlerror());
		goto fail;
	}
	m = dlsym(h, TLS_MODULE_SYMBOL);
	if (!m || m->abi != TLS_MODULE_ABI) {
		snprintf(why, sizeof(why), "%s: %s", module_path,
			 m ? "built for another uexec (ABI mismatch)" : "no " TLS_MODULE_SYMBOL);
		dlclose(h);
		goto fail;
	}
	failed = false;
	__atomic_store_n(&mod, m, __ATOMIC_RELEASE);
	log_debug("Loaded the OpenSSL module %s", module_path);
	return 0;
fail:
	if (!quiet)
		log_error("Cannot load the OpenSSL module (TLS, remote mode and the proxy's "
			  "interception are unavailable): %s", why);
	return -ELIBACC;
}

static int load_quiet(bool quiet)
{
	int r;

	if (__atomic_load_n(&mod, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&load_lock);
	r = load_locked(quiet);
	pthread_mutex_unlock(&load_lock);
	return r;
}

static int load(void)
{
	return load_quiet(false);
}

int tls_mem_init(struct tls_mem *t, struct ssl_ctx_st *ctx, bool server)
{
	t->ssl = NULL;
	t->rbio = t->wbio = NULL;
	return load() < 0 ? -ELIBACC : mod->mem_init(t, ctx, server);
}

void tls_mem_done(struct tls_mem *t)
{
	if (mod)
		mod->mem_done(t);
}

int tls_mem_feed(struct tls_mem *t, const void *p, size_t n)
{
	return mod->mem_feed(t, p, n);
}

enum tls_mem_result tls_mem_step(struct tls_mem *t, void *buf, size_t cap, size_t *ret_n)
{
	return mod->mem_step(t, buf, cap, ret_n);
}

bool tls_mem_ready(const struct tls_mem *t)
{
	return mod->mem_ready(t);
}

int tls_mem_write(struct tls_mem *t, const void *p, size_t n)
{
	return mod->mem_write(t, p, n);
}

void tls_mem_shutdown(struct tls_mem *t)
{
	mod->mem_shutdown(t);
}

size_t tls_mem_pending(const struct tls_mem *t)
{
	return mod->mem_pending(t);
}

size_t tls_mem_take(struct tls_mem *t, void *dst, size_t n)
{
	return mod->mem_take(t, dst, n);
}

void tls_mem_error_text(const struct tls_mem *t, char *out, size_t n, bool *ret_verify)
{
	*ret_verify = false;
	if (mod)
		mod->mem_error_text(t, out, n, ret_verify);
	else
		snprintf(out, n, "the OpenSSL module is not loaded: %s", why);
}

int tls_mem_set_peer(struct tls_mem *t, const char *host, bool is_ip)
{
	return mod->mem_set_peer(t, host, is_ip);
}

int tls_ctx_server_new(const char *cert, const char *key, struct ssl_ctx_st **ret, char *err,
		       size_t err_size)
{
	*ret = NULL;
	if (load_quiet(true) < 0) {
		snprintf(err, err_size, "cannot load the OpenSSL module: %s", why);
		return -ELIBACC;
	}
	return mod->ctx_server_new(cert, key, ret, err, err_size);
}

int tls_ctx_client_new(struct ssl_ctx_st **ret)
{
	*ret = NULL;
	return load() < 0 ? -ELIBACC : mod->ctx_client_new(ret);
}

void tls_ctx_free(struct ssl_ctx_st *ctx)
{
	if (ctx)
		mod->ctx_free(ctx);
}

int tls_keccak(enum tls_keccak_kind kind, uint8_t *out, size_t outlen, const void *a, size_t alen,
	       const void *b, size_t blen)
{
	return load() < 0 ? -ELIBACC : mod->keccak(kind, out, outlen, a, alen, b, blen);
}

int tls_gcm_new(const uint8_t key[32], bool seal, struct tls_gcm **ret)
{
	*ret = NULL;
	return load() < 0 ? -ELIBACC : mod->gcm_new(key, seal, ret);
}

int tls_gcm_seal(struct tls_gcm *g, const uint8_t nonce[12], const uint8_t *ad, size_t adlen,
		 const uint8_t *pt, size_t len, uint8_t *out)
{
	return mod->gcm_seal(g, nonce, ad, adlen, pt, len, out);
}

int tls_gcm_open(struct tls_gcm *g, const uint8_t nonce[12], const uint8_t *ad, size_t adlen,
		 const uint8_t *ct, size_t len, uint8_t *out)
{
	return mod->gcm_open(g, nonce, ad, adlen, ct, len, out);
}

void tls_gcm_free(struct tls_gcm *g)
{
	if (g)
		mod->gcm_free(g);
}

int tls_mitm_new(struct tls_mitm **ret)
{
	*ret = NULL;
	return load() < 0 ? -ELIBACC : mod->mitm_new(ret);
}

struct ssl_ctx_st *tls_mitm_ctx(const struct tls_mitm *m)
{
	return mod->mitm_ctx(m);
}

int tls_mitm_ca_pem(const struct tls_mitm *m, char **ret, size_t *ret_len)
{
	return mod->mitm_ca_pem(m, ret, ret_len);
}

int tls_mitm_setup(struct tls_mitm *m, struct ssl_st *ssl, const char *host)
{
	return mod->mitm_setup(m, ssl, host);
}

void tls_mitm_free(struct tls_mitm *m)
{
	if (m)
		mod->mitm_free(m);
}

const char *tls_default_cert_file(void)
{
	return load() < 0 ? NULL : mod->default_cert_file();
}
