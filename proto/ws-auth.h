/* SPDX-License-Identifier: MIT */
/*
 * Bearer-token auth of the WebSocket upgrade (RELAY.md §9), as the
 * reference's --ws-auth: a capability token compared by SHA-256 digest, or an
 * HS256 JWT with exp/nbf/iss/aud checked against a clock skew. No I/O and no
 * clock: the caller loads the secrets and passes the time. SHA-256, HMAC and
 * the comparisons are libsodium's, in constant time.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http.h"

enum ws_auth_mode {
	WS_AUTH_NONE,
	WS_AUTH_CAPABILITY_TOKEN,
	WS_AUTH_SIGNED_BEARER_TOKEN,
};

#define WS_AUTH_SHA256_BYTES 32
#define WS_AUTH_MIN_SECRET_BYTES 32
#define WS_AUTH_DEFAULT_SKEW_S 30

struct ws_auth {
	enum ws_auth_mode mode;
	uint8_t token_sha256[WS_AUTH_SHA256_BYTES]; /* capability-token */
	uint8_t *secret;                            /* signed-bearer-token: owned, wiped on free */
	size_t secret_len;
	char *issuer;   /* expected iss, NULL: any (owned) */
	char *audience; /* expected aud, NULL: any (owned) */
	uint64_t max_skew_s;
};

/* The reference's 401 bodies. */
#define WS_AUTH_ERR_MISSING "missing websocket bearer token"
#define WS_AUTH_ERR_HEADER "invalid authorization header"
#define WS_AUTH_ERR_TOKEN "invalid websocket bearer token"
#define WS_AUTH_ERR_JWT "invalid websocket jwt"
#define WS_AUTH_ERR_EXPIRED "expired websocket jwt"
#define WS_AUTH_ERR_NOT_YET "websocket jwt is not valid yet"
#define WS_AUTH_ERR_ISSUER "websocket jwt issuer mismatch"
#define WS_AUTH_ERR_AUDIENCE "websocket jwt audience mismatch"

/* Initialises libsodium (idempotent). Returns 0 or -EIO. */
int ws_auth_init(void);

/* Wipes the secret and frees what a holds; a is then { WS_AUTH_NONE }. */
void ws_auth_done(struct ws_auth *a);

/*
 * Trims ASCII whitespace from both ends of s[0..*len) in place (the
 * reference trims secret files): returns the new start, *len updated.
 */
const uint8_t *ws_auth_trim(const uint8_t *s, size_t *len);

/* SHA-256 of data into out. */
void ws_auth_sha256(const uint8_t *data, size_t len, uint8_t out[WS_AUTH_SHA256_BYTES]);

/* Parses 64 hex digits (either case) into out. Returns 0 or -EINVAL. */
int ws_auth_parse_sha256_hex(const char *hex, uint8_t out[WS_AUTH_SHA256_BYTES]);

/*
 * Checks the Authorization header of req against a at time now (Unix
 * seconds). Returns NULL when the request may upgrade (always with
 * WS_AUTH_NONE), else the 401 body (one of WS_AUTH_ERR_*), in the
 * reference's order: header missing, malformed (scheme not "Bearer"
 * case-insensitively, no single space after it, empty token), then the
 * token; for a JWT: HS256 only (header alg, signature over the first two
 * parts), claims with exp required, then exp, nbf, iss, aud.
 */
const char *ws_auth_check(const struct ws_auth *a, const struct http_request *req, int64_t now);

/* Checks a bare token (the part after "Bearer "); same results as ws_auth_check(). */
const char *ws_auth_check_token(const struct ws_auth *a, const char *token, size_t len,
				int64_t now);
