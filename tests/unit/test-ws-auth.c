/* SPDX-License-Identifier: MIT */
/*
 * proto/ws-auth.c: the Authorization header split, capability digests, and
 * HS256 JWTs made by Python's hmac (an independent implementation).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tests.h"
#include "ws-auth.h"

/* {"alg":"HS256","typ":"JWT"} . {"iss":"i","aud":["a","b"],"exp":1000,"nbf":900} */
static const char jwt_ok[] =
	"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJpIiwiYXVkIjpbImEiLCJiIl0sImV4cCI6MTAwMCw"
	"ibmJmIjo5MDB9.ty-qYDPNkVhapXlneRsWzZUVsImwp3OEBUaSLbZycgM";
/* {"alg":"none"} . {"exp":1000}, signed with the key all the same */
static const char jwt_none[] =
	"eyJhbGciOiJub25lIn0.eyJleHAiOjEwMDB9.JLdu16kX-P5V8wUbFeG6qskzh-KhrB_PY9WS_BT3o70";

static void jwt_auth(struct ws_auth *a, const char *iss, const char *aud, uint64_t skew)
{
	memset(a, 0, sizeof(*a));
	a->mode = WS_AUTH_SIGNED_BEARER_TOKEN;
	a->secret = (uint8_t *)strdup("0123456789abcdef0123456789abcdef");
	a->secret_len = 32;
	a->issuer = iss ? strdup(iss) : NULL;
	a->audience = aud ? strdup(aud) : NULL;
	a->max_skew_s = skew;
}

static const char *check_header(const struct ws_auth *a, const char *value)
{
	struct http_request req = { 0 };

	if (value) {
		req.n_headers = 1;
		req.headers[0] = (struct http_header){ "authorization", 13, value, strlen(value) };
	}
	return ws_auth_check(a, &req, 950);
}

static void expect(const char *want, const char *got)
{
	if (want == NULL || got == NULL)
		ASSERT_TRUE(want == got);
	else
		ASSERT_STREQ(want, got);
}

TEST(header_split)
{
	struct ws_auth a = { .mode = WS_AUTH_CAPABILITY_TOKEN };

	ASSERT_EQ(0, ws_auth_init());
	ws_auth_sha256((const uint8_t *)"tok", 3, a.token_sha256);
	expect(WS_AUTH_ERR_MISSING, check_header(&a, NULL));
	expect(WS_AUTH_ERR_HEADER, check_header(&a, ""));
	expect(WS_AUTH_ERR_HEADER, check_header(&a, "Bearer"));
	expect(WS_AUTH_ERR_HEADER, check_header(&a, "Basic tok"));
	expect(WS_AUTH_ERR_HEADER, check_header(&a, "Bearer\ttok"));
	expect(WS_AUTH_ERR_HEADER, check_header(&a, "Bearer \xc3\xa9"));
	expect(WS_AUTH_ERR_TOKEN, check_header(&a, "Bearer tok2"));
	expect(WS_AUTH_ERR_TOKEN, check_header(&a, "Bearer tok x"));
	expect(NULL, check_header(&a, "Bearer tok"));
	expect(NULL, check_header(&a, "bEARER   tok"));
	ws_auth_done(&a);
	/* No auth: anything goes. */
	expect(NULL, check_header(&a, NULL));
}

TEST(sha256_hex)
{
	uint8_t d[32], want[32];

	ws_auth_sha256((const uint8_t *)"tok", 3, want);
	ASSERT_EQ(0, ws_auth_parse_sha256_hex(
			     "1a7674eb4ee78df7e1ac439a93c3fa8e3c945784d4dec9fd8e3011738b2f1d62", d));
	ASSERT_TRUE(memcmp(d, want, 32) == 0);
	ASSERT_EQ(0, ws_auth_parse_sha256_hex(
			     "1A7674EB4EE78DF7E1AC439A93C3FA8E3C945784D4DEC9FD8E3011738B2F1D62", d));
	ASSERT_TRUE(memcmp(d, want, 32) == 0);
	ASSERT_EQ(-EINVAL, ws_auth_parse_sha256_hex("00", d));
	ASSERT_EQ(-EINVAL, ws_auth_parse_sha256_hex(
				   "1a7674eb4ee78df7e1ac439a93c3fa8e3c945784d4dec9fd8e3011738b2f1d6g", d));
	ASSERT_EQ(-EINVAL, ws_auth_parse_sha256_hex(
				   "1a7674eb4ee78df7e1ac439a93c3fa8e3c945784d4dec9fd8e3011738b2f1d620", d));
}

TEST(trim)
{
	const uint8_t s[] = " \t tok\r\n";
	size_t n = sizeof(s) - 1;
	const uint8_t *t = ws_auth_trim(s, &n);

	ASSERT_EQ(3, n);
	ASSERT_TRUE(memcmp(t, "tok", 3) == 0);
	n = 3;
	ws_auth_trim((const uint8_t *)"  \n", &n);
	ASSERT_EQ(0, n);
}

TEST(jwt_claims)
{
	struct ws_auth a;
	char bad[sizeof(jwt_ok)];

	ASSERT_EQ(0, ws_auth_init());
	jwt_auth(&a, "i", "b", 0);
	expect(NULL, ws_auth_check_token(&a, jwt_ok, strlen(jwt_ok), 950));
	/* exp 1000, nbf 900: the edges are inclusive, then the skew widens them. */
	expect(NULL, ws_auth_check_token(&a, jwt_ok, strlen(jwt_ok), 1000));
	expect(WS_AUTH_ERR_EXPIRED, ws_auth_check_token(&a, jwt_ok, strlen(jwt_ok), 1001));
	expect(NULL, ws_auth_check_token(&a, jwt_ok, strlen(jwt_ok), 900));
	expect(WS_AUTH_ERR_NOT_YET, ws_auth_check_token(&a, jwt_ok, strlen(jwt_ok), 899));
	a.max_skew_s = 10;
	expect(NULL, ws_auth_check_token(&a, jwt_ok, strlen(jwt_ok), 1010));
	expect(WS_AUTH_ERR_EXPIRED, ws_auth_check_token(&a, jwt_ok, strlen(jwt_ok), 1011));
	expect(NULL, ws_auth_check_token(&a, jwt_ok, strlen(jwt_ok), 890));
	expect(WS_AUTH_ERR_NOT_YET, ws_auth_check_token(&a, jwt_ok, strlen(jwt_ok), 889));
	/* A huge skew saturates instead of wrapping. */
	a.max_skew_s = UINT64_MAX;
	expect(NULL, ws_auth_check_token(&a, jwt_ok, strlen(jwt_ok), INT64_MAX));
	ws_auth_done(&a);

	jwt_auth(&a, "other", NULL, 0);
	expect(WS_AUTH_ERR_ISSUER, ws_auth_check_token(&a, jwt_ok, strlen(jwt_ok), 950));
	ws_auth_done(&a);
	jwt_auth(&a, NULL, "c", 0);
	expect(WS_AUTH_ERR_AUDIENCE, ws_auth_check_token(&a, jwt_ok, strlen(jwt_ok), 950));
	ws_auth_done(&a);

	/* alg none is refused even with a valid HMAC; a flipped signature bit is refused. */
	jwt_auth(&a, NULL, NULL, 0);
	expect(WS_AUTH_ERR_JWT, ws_auth_check_token(&a, jwt_none, strlen(jwt_none), 950));
	memcpy(bad, jwt_ok, sizeof(jwt_ok));
	bad[strlen(bad) - 2] = bad[strlen(bad) - 2] == 'A' ? 'B' : 'A';
	expect(WS_AUTH_ERR_JWT, ws_auth_check_token(&a, bad, strlen(bad), 950));
	/* Truncated, extra part, padding. */
	expect(WS_AUTH_ERR_JWT, ws_auth_check_token(&a, jwt_ok, strlen(jwt_ok) - 1, 950));
	expect(WS_AUTH_ERR_JWT, ws_auth_check_token(&a, "a.b", 3, 950));
	expect(WS_AUTH_ERR_JWT, ws_auth_check_token(&a, "a.b.c.d", 7, 950));
	snprintf(bad, sizeof(bad), "%.*s=", (int)strlen(jwt_ok) - 1, jwt_ok);
	expect(WS_AUTH_ERR_JWT, ws_auth_check_token(&a, bad, strlen(bad), 950));
	/* Another key. */
	a.secret[0] ^= 1;
	expect(WS_AUTH_ERR_JWT, ws_auth_check_token(&a, jwt_ok, strlen(jwt_ok), 950));
	ws_auth_done(&a);
}

TEST_MAIN()
