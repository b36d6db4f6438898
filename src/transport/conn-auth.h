/* SPDX-License-Identifier: MIT */
/*
 * The listener's auth (--ws-auth, RELAY.md §9): reading the secret files
 * named on the command line into a struct ws_auth (proto/ws-auth.h), and
 * reading them again (SIGHUP). Checking a request is ws_auth_check().
 */
#pragma once

#include <stddef.h>

#include "server.h"
#include "ws-auth.h"

/*
 * Builds the auth that cfg describes (NULL in *ret without --ws-auth): reads
 * --ws-token-file (SHA-256 of its trimmed content is kept, not the token) or
 * parses --ws-token-sha256, or reads --ws-shared-secret-file (trimmed, at
 * least WS_AUTH_MIN_SECRET_BYTES). Returns 0, or -errno with the reference's
 * message in err (never a secret's bytes): "failed to read websocket auth
 * secret PATH: ...", "websocket auth secret PATH must not be empty", "signed
 * websocket bearer secret PATH must be at least 32 bytes", "--ws-token-sha256
 * must be a 64-character hex SHA-256 digest".
 */
int conn_auth_load(const struct config *cfg, struct ws_auth **ret, char *err, size_t err_size);

/* Wipes and frees a (NULL allowed). */
void conn_auth_free(struct ws_auth *a);

/*
 * a (owned from now on; NULL: no auth) becomes the auth the listener checks
 * on each upgrade; the previous one is freed (at shutdown: conn_auth_install(NULL)).
 */
void conn_auth_install(struct ws_auth *a);
/* The auth in force, or NULL (no --ws-auth). */
const struct ws_auth *conn_auth_current(void);

/*
 * SIGHUP: builds the auth that cfg (the configuration just re-read) describes
 * -- its token file, digest or shared secret file, issuer, audience and skew,
 * which may name other files than at start-up -- and swaps it in for
 * connections accepted from now on (those already upgraded stay, as on the
 * reference: auth is checked on the upgrade only). A different --ws-auth mode
 * is refused (-EINVAL, the caller says it takes a restart). On failure the
 * previous secrets stay in force and the reason is logged. Returns 0 or -errno.
 */
int conn_auth_reload(struct server *s, const struct config *cfg);
