/* SPDX-License-Identifier: MIT */
/*
 * WebSocket bearer-token auth (RELAY.md §9): the reference's checks and 401
 * texts, probed against `codex exec-server` 0.169.0 (tests/integration/test_auth.py).
 */
#include <errno.h>
#include <jansson.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "http-internal.h"
#include "ws-auth.h"

/* A JWT longer than this is not worth decoding (the head is 16 KiB anyway). */
#define JWT_MAX_PART 8192

int ws_auth_init(void)
{
	return sodium_init() < 0 ? -EIO : 0;
}

void ws_auth_done(struct ws_auth *a)
{
	if (a->secret) {
		sodium_memzero(a->secret, a->secret_len);
		free(a->secret);
	}
	free(a->issuer);
	free(a->audience);
	sodium_memzero(a, sizeof(*a));
	a->mode = WS_AUTH_NONE;
}

static bool is_space(uint8_t c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

const uint8_t *ws_auth_trim(const uint8_t *s, size_t *len)
{
	size_t n = *len;

	while (n > 0 && is_space(s[0])) {
		s++;
		n--;
	}
	while (n > 0 && is_space(s[n - 1]))
		n--;
	*len = n;
	return s;
}

void ws_auth_sha256(const uint8_t *data, size_t len, uint8_t out[WS_AUTH_SHA256_BYTES])
{
	crypto_hash_sha256(out, data, len);
}

int ws_auth_parse_sha256_hex(const char *hex, uint8_t out[WS_AUTH_SHA256_BYTES])
{
	size_t bin_len = 0;

	if (strlen(hex) != 2 * WS_AUTH_SHA256_BYTES)
		return -EINVAL;
	if (sodium_hex2bin(out, WS_AUTH_SHA256_BYTES, hex, 2 * WS_AUTH_SHA256_BYTES, NULL, &bin_len,
			   NULL) != 0 || bin_len != WS_AUTH_SHA256_BYTES)
		return -EINVAL;
	return 0;
}

/*
 * base64url without padding, strict (non-zero trailing bits, '=' and any
 * other byte refused), as jsonwebtoken decodes. Returns the length or -1.
 */
static ssize_t b64url_decode(const char *s, size_t n, uint8_t *out, size_t cap)
{
	size_t len = 0;

	if (n > JWT_MAX_PART)
		return -1;
	if (sodium_base642bin(out, cap, s, n, NULL, &len, NULL,
			      sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0)
		return -1;
	return (ssize_t)len;
}

/* Decodes one part into a JSON object (duplicate keys refused, as serde does). */
static json_t *decode_part(const char *s, size_t n)
{
	uint8_t buf[JWT_MAX_PART];
	ssize_t len = b64url_decode(s, n, buf, sizeof(buf));
	json_t *j;

	if (len < 0)
		return NULL;
	j = json_loadb((const char *)buf, (size_t)len, JSON_REJECT_DUPLICATES, NULL);
	if (j && !json_is_object(j)) {
		json_decref(j);
		return NULL;
	}
	return j;
}

/* An optional string member: absent, null or a string. */
static bool opt_string(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return !v || json_is_null(v) || json_is_string(v);
}

/* The header as jsonwebtoken's Header struct reads it, and alg HS256 only. */
static bool header_ok(const json_t *h)
{
	static const char *const strings[] = { "typ", "cty", "jku", "kid", "x5u", "x5t",
					       "x5t#S256" };
	const json_t *alg = json_object_get(h, "alg"), *x5c = json_object_get(h, "x5c");
	size_t i;
	json_t *v;

	if (!json_is_string(alg) || strcmp(json_string_value(alg), "HS256") != 0)
		return false;
	for (i = 0; i < sizeof(strings) / sizeof(strings[0]); i++)
		if (!opt_string(h, strings[i]))
			return false;
	if (x5c && !json_is_null(x5c)) {
		if (!json_is_array(x5c))
			return false;
		json_array_foreach(x5c, i, v)
			if (!json_is_string(v))
				return false;
	}
	return true;
}

/* An optional integer claim (i64): absent or null -> *present false. */
static bool int_claim(const json_t *o, const char *key, bool *present, int64_t *ret)
{
	const json_t *v = json_object_get(o, key);

	*present = false;
	if (!v || json_is_null(v))
		return true;
	if (!json_is_integer(v))
		return false;
	*present = true;
	*ret = (int64_t)json_integer_value(v);
	return true;
}

/* aud: a string or an array of strings (absent/null allowed). */
static bool aud_ok(const json_t *aud)
{
	size_t i;
	json_t *v;

	if (!aud || json_is_null(aud) || json_is_string(aud))
		return true;
	if (!json_is_array(aud))
		return false;
	json_array_foreach(aud, i, v)
		if (!json_is_string(v))
			return false;
	return true;
}

static bool aud_contains(const json_t *aud, const char *want)
{
	size_t i;
	json_t *v;

	if (json_is_string(aud))
		return strcmp(json_string_value(aud), want) == 0;
	json_array_foreach(aud, i, v)
		if (strcmp(json_string_value(v), want) == 0)
			return true;
	return false;
}

/* Saturating a + b and a - b for the skew arithmetic (claims are client-controlled). */
static int64_t sat_add(int64_t a, uint64_t b)
{
	if (b > (uint64_t)INT64_MAX || a > INT64_MAX - (int64_t)b)
		return INT64_MAX;
	return a + (int64_t)b;
}

static int64_t sat_sub(int64_t a, uint64_t b)
{
	if (b > (uint64_t)INT64_MAX || a < INT64_MIN + (int64_t)b)
		return INT64_MIN;
	return a - (int64_t)b;
}

static const char *check_jwt(const struct ws_auth *a, const char *tok, size_t len, int64_t now)
{
	const char *d1 = memchr(tok, '.', len), *d2;
	uint8_t sig[crypto_auth_hmacsha256_BYTES + 3];
	crypto_auth_hmacsha256_state st;
	uint8_t mac[crypto_auth_hmacsha256_BYTES];
	json_t *hdr = NULL, *claims = NULL;
	const json_t *iss, *aud;
	const char *err = WS_AUTH_ERR_JWT;
	int64_t exp = 0, nbf = 0;
	bool has_exp, has_nbf;
	ssize_t sig_len;
	int ok;

	if (!d1)
		return err;
	d2 = memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - tok));
	if (!d2 || memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - tok)))
		return err;

	/* The header first: alg must be HS256 (none, RS256, HS384, ... are refused). */
	hdr = decode_part(tok, (size_t)(d1 - tok));
	if (!hdr || !header_ok(hdr))
		goto out;

	/* The signature over "header.payload", compared in constant time. */
	sig_len = b64url_decode(d2 + 1, len - (size_t)(d2 + 1 - tok), sig, sizeof(sig));
	if (sig_len != crypto_auth_hmacsha256_BYTES)
		goto out;
	crypto_auth_hmacsha256_init(&st, a->secret, a->secret_len);
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)tok, (size_t)(d2 - tok));
	crypto_auth_hmacsha256_final(&st, mac);
	ok = sodium_memcmp(mac, sig, sizeof(mac)) == 0;
	sodium_memzero(&st, sizeof(st));
	if (!ok)
		goto out;

	/* Claims: exp required (i64), nbf optional, iss a string, aud a string or strings. */
	claims = decode_part(d1 + 1, (size_t)(d2 - d1 - 1));
	if (!claims || !int_claim(claims, "exp", &has_exp, &exp) || !has_exp ||
	    !int_claim(claims, "nbf", &has_nbf, &nbf) || !opt_string(claims, "iss") ||
	    !aud_ok(json_object_get(claims, "aud")))
		goto out;

	if (now > sat_add(exp, a->max_skew_s)) {
		err = WS_AUTH_ERR_EXPIRED;
		goto out;
	}
	if (has_nbf && now < sat_sub(nbf, a->max_skew_s)) {
		err = WS_AUTH_ERR_NOT_YET;
		goto out;
	}
	iss = json_object_get(claims, "iss");
	if (a->issuer && (!json_is_string(iss) || strcmp(json_string_value(iss), a->issuer) != 0)) {
		err = WS_AUTH_ERR_ISSUER;
		goto out;
	}
	aud = json_object_get(claims, "aud");
	if (a->audience && (!aud || json_is_null(aud) || !aud_contains(aud, a->audience))) {
		err = WS_AUTH_ERR_AUDIENCE;
		goto out;
	}
	err = NULL;
out:
	json_decref(hdr);
	json_decref(claims);
	return err;
}

const char *ws_auth_check_token(const struct ws_auth *a, const char *token, size_t len,
				int64_t now)
{
	uint8_t digest[WS_AUTH_SHA256_BYTES];

	switch (a->mode) {
	case WS_AUTH_NONE:
		return NULL;
	case WS_AUTH_CAPABILITY_TOKEN:
		ws_auth_sha256((const uint8_t *)token, len, digest);
		return sodium_memcmp(digest, a->token_sha256, sizeof(digest)) == 0 ? NULL
										    : WS_AUTH_ERR_TOKEN;
	case WS_AUTH_SIGNED_BEARER_TOKEN:
		return check_jwt(a, token, len, now);
	}
	return WS_AUTH_ERR_TOKEN;
}

const char *ws_auth_check(const struct ws_auth *a, const struct http_request *req, int64_t now)
{
	const struct http_header *h;
	const uint8_t *tok;
	size_t sp, n;

	if (a->mode == WS_AUTH_NONE)
		return NULL;
	h = http_request_header(req, "Authorization");
	if (!h)
		return WS_AUTH_ERR_MISSING;
	/* http's HeaderValue::to_str(): visible ASCII, space and tab only. */
	for (size_t i = 0; i < h->value_len; i++) {
		uint8_t c = (uint8_t)h->value[i];

		if (c != '\t' && (c < 0x20 || c > 0x7e))
			return WS_AUTH_ERR_HEADER;
	}
	/* "<scheme> <token>": split at the first space; scheme case-insensitive. */
	for (sp = 0; sp < h->value_len && h->value[sp] != ' '; sp++)
		;
	if (sp == h->value_len || !http_mem_eq_nocase(h->value, sp, "bearer", 6))
		return WS_AUTH_ERR_HEADER;
	n = h->value_len - sp - 1;
	tok = ws_auth_trim((const uint8_t *)h->value + sp + 1, &n);
	if (n == 0)
		return WS_AUTH_ERR_HEADER;
	return ws_auth_check_token(a, (const char *)tok, n, now);
}
