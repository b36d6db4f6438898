/* SPDX-License-Identifier: MIT */
/*
 * Loading the listener's auth secrets. The files are small and read with
 * plain blocking calls: once at start-up, and on SIGHUP (a rare operator
 * action, a few hundred bytes).
 */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conn-auth.h"
#include "log.h"
#include "macro.h"

/* A secret file larger than this is surely the wrong file. */
#define SECRET_MAX_BYTES (64 * 1024)

/*
 * Reads path whole into a fresh buffer and trims it into *ret and *ret_len (caller
 * wipes and frees *ret_buf). Returns 0 or -errno with the message in err.
 */
static int read_secret(const char *path, uint8_t **ret_buf, const uint8_t **ret,
		       size_t *ret_len, char *err, size_t err_size)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	struct stat st;
	int fd, r = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 || fstat(fd, &st) < 0) {
		r = -errno;
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		r = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		goto fail;
	}
	if (st.st_size > SECRET_MAX_BYTES) {
		r = -EFBIG;
		goto fail;
	}
	buf = malloc(SECRET_MAX_BYTES + 1);
	if (!buf) {
		r = -ENOMEM;
		goto fail;
	}
	for (;;) {
		ssize_t n = read(fd, buf + len, SECRET_MAX_BYTES + 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			goto fail;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > SECRET_MAX_BYTES) {
			r = -EFBIG;
			goto fail;
		}
	}
	safe_close(fd);
	*ret = ws_auth_trim(buf, &len);
	*ret_len = len;
	*ret_buf = buf;
	if (len == 0) {
		snprintf(err, err_size, "websocket auth secret %s must not be empty", path);
		return -EINVAL;
	}
	return 0;
fail:
	if (fd >= 0)
		safe_close(fd);
	if (buf) {
		sodium_memzero(buf, SECRET_MAX_BYTES + 1);
		free(buf);
	}
	*ret_buf = NULL;
	snprintf(err, err_size, "failed to read websocket auth secret %s: %s (os error %d)", path,
		 strerror(-r), -r);
	return r;
}

static void wipe(uint8_t *buf)
{
	if (buf) {
		sodium_memzero(buf, SECRET_MAX_BYTES + 1);
		free(buf);
	}
}

/* A blank --ws-issuer / --ws-audience is ignored (the reference's rule). */
static int dup_claim(const char *v, char **ret)
{
	size_t n = v ? strlen(v) : 0;
	const uint8_t *t = v ? ws_auth_trim((const uint8_t *)v, &n) : NULL;

	*ret = NULL;
	if (n == 0)
		return 0;
	*ret = strndup((const char *)t, n);
	return *ret ? 0 : -ENOMEM;
}

void conn_auth_free(struct ws_auth *a)
{
	if (a) {
		ws_auth_done(a);
		free(a);
	}
}

int conn_auth_load(const struct config *cfg, struct ws_auth **ret, char *err, size_t err_size)
{
	_cleanup_free_ struct ws_auth *a = NULL;
	const uint8_t *secret;
	uint8_t *buf = NULL;
	size_t len;
	int r;

	*ret = NULL;
	if (cfg->ws_auth_mode == WS_AUTH_NONE)
		return 0;
	r = ws_auth_init();
	if (r < 0) {
		snprintf(err, err_size, "libsodium could not be initialised");
		return r;
	}
	a = calloc(1, sizeof(*a));
	if (!a) {
		snprintf(err, err_size, "out of memory");
		return -ENOMEM;
	}
	a->mode = cfg->ws_auth_mode;
	a->max_skew_s = cfg->ws_max_clock_skew_s;
	if (a->mode == WS_AUTH_CAPABILITY_TOKEN) {
		if (cfg->ws_token_sha256) {
			if (ws_auth_parse_sha256_hex(cfg->ws_token_sha256, a->token_sha256) < 0) {
				snprintf(err, err_size, "--ws-token-sha256 must be a 64-character hex "
							"SHA-256 digest");
				return -EINVAL;
			}
		} else {
			r = read_secret(cfg->ws_token_file, &buf, &secret, &len, err, err_size);
			if (r >= 0)
				ws_auth_sha256(secret, len, a->token_sha256);
			wipe(buf);
			if (r < 0)
				return r;
		}
	} else {
		r = read_secret(cfg->ws_shared_secret_file, &buf, &secret, &len, err, err_size);
		if (r >= 0 && len < WS_AUTH_MIN_SECRET_BYTES) {
			snprintf(err, err_size,
				 "signed websocket bearer secret %s must be at least %d bytes",
				 cfg->ws_shared_secret_file, WS_AUTH_MIN_SECRET_BYTES);
			r = -EINVAL;
		}
		if (r >= 0) {
			a->secret = malloc(len);
			if (a->secret) {
				memcpy(a->secret, secret, len);
				a->secret_len = len;
			} else {
				r = -ENOMEM;
				snprintf(err, err_size, "out of memory");
			}
		}
		wipe(buf);
		if (r >= 0 && (dup_claim(cfg->ws_issuer, &a->issuer) < 0 ||
			       dup_claim(cfg->ws_audience, &a->audience) < 0)) {
			r = -ENOMEM;
			snprintf(err, err_size, "out of memory");
		}
		if (r < 0) {
			ws_auth_done(a);
			return r;
		}
	}
	*ret = TAKE_PTR(a);
	return 0;
}

/* The listener's auth in force (module state: one listener per process), or NULL. */
static struct ws_auth *listener_auth;

void conn_auth_install(struct ws_auth *a)
{
	conn_auth_free(listener_auth);
	listener_auth = a;
}

const struct ws_auth *conn_auth_current(void)
{
	return listener_auth;
}

int conn_auth_reload(struct server *s, const struct config *cfg)
{
	struct ws_auth *a;
	char err[512];
	int r;

	if (s->cfg.ws_auth_mode == WS_AUTH_NONE)
		return 0;
	/* Turning auth on or off, or changing its kind, takes a restart (server.c's reload). */
	if (cfg->ws_auth_mode != s->cfg.ws_auth_mode)
		return -EINVAL;
	r = conn_auth_load(cfg, &a, err, sizeof(err));
	if (r < 0) {
		log_warning("Reloading the websocket auth secrets failed, keeping the previous "
			    "ones: %s", err);
		return r;
	}
	conn_auth_install(a);
	log_info("Reloaded the websocket auth secrets");
	return 0;
}
