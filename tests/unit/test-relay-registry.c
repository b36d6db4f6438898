/* SPDX-License-Identifier: MIT */
/*
 * The environment registry client's codec (src/remote/codec/registry.h, RELAY.md
 * §7): base URL and id normalisation, request paths, URL splitting, request
 * bodies byte for byte, every accept and reject rule of the register,
 * validate and connect responses, error bodies, backoff and retry delays.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "channel.h"
#include "registry.h"
#include "tests.h"

/* ---- helpers ---- */

/* n copies of c then tail, malloc'd. */
static char *rep(char c, size_t n, const char *tail)
{
	size_t t = strlen(tail);
	char *s = malloc(n + t + 1);

	memset(s, c, n);
	memcpy(s + n, tail, t + 1);
	return s;
}

/* The public key JSON of an all-zero key, as channel.c writes it. */
static char *zero_key_json(void)
{
	char *x = rep('A', 43, "="), *m = rep('A', 1579, "="), *r;

	ASSERT_TRUE(asprintf(&r,
			     "{\"suite\":\"Noise_hybridIK_X25519+MLKEM768_AESGCM_SHA256\","
			     "\"x25519_public_key\":\"%s\",\"mlkem768_public_key\":\"%s\"}",
			     x, m) > 0);
	free(x);
	free(m);
	return r;
}

/* A key with distinct bytes, and its JSON. */
static char *pattern_key(struct noise_public *pk)
{
	json_t *j;
	char *s;

	for (size_t i = 0; i < sizeof(pk->dh_pk); i++)
		pk->dh_pk[i] = (uint8_t)(i * 7 + 1);
	for (size_t i = 0; i < sizeof(pk->kem_pk); i++)
		pk->kem_pk[i] = (uint8_t)(i * 13 + 5);
	j = channel_public_key_json(pk);
	s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return s;
}

/* ---- base URL, id, paths ---- */

/*
 * A trimming check: in -> want, or (want NULL) refused with -EINVAL and why
 * (NULL: any reason).
 */
struct trim_case {
	const char *in, *want, *why;
};

static void trims_each(char *(*fn)(const char *, int *, const char **), const struct trim_case *c,
		       size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *why = NULL;
		int e = 0;
		char *s = fn(c[i].in, &e, &why);

		if (c[i].want) {
			ASSERT_STREQ(c[i].want, s);
		} else {
			ASSERT_TRUE(s == NULL);
			ASSERT_EQ(-EINVAL, e);
			if (c[i].why)
				ASSERT_STREQ(c[i].why, why);
		}
		free(s);
	}
}

TEST(base_url_trims_whitespace_and_slashes)
{
	static const struct trim_case cases[] = {
		{ "  https://r.example/api//  \n", "https://r.example/api", NULL },
		{ "https://r.example", "https://r.example", NULL },
		/* Unicode White_Space (NBSP, ideographic space, NEL) as Rust's trim */
		{ "\xC2\xA0http://h:1/\xE3\x80\x80\xC2\x85", "http://h:1", NULL },
		/* only trailing slashes go; inner ones stay */
		{ "http://h//a//", "http://h//a", NULL },
		/* a non-whitespace multibyte character at the end stays */
		{ "http://h/\xC3\xA9", "http://h/\xC3\xA9", NULL },
		{ " / ", NULL, "environment registry base URL is required" },
		{ "", NULL, NULL },
	};

	trims_each(registry_base_url, cases, sizeof(cases) / sizeof(cases[0]));
}

TEST(environment_id_trims_and_refuses_empty)
{
	static const struct trim_case cases[] = {
		{ " env-1\t\r\n", "env-1", NULL },
		{ "a b", "a b", NULL },
		{ " \t\xE2\x80\x83 ", NULL, "environment id is required for remote exec-server registration" },
		{ "", NULL, NULL },
	};

	trims_each(registry_environment_id, cases, sizeof(cases) / sizeof(cases[0]));
}

TEST(request_urls)
{
	static const struct {
		enum registry_op op;
		const char *want;
	} cases[] = {
		{ REGISTRY_REGISTER, "https://r.example/api/cloud/environment/env-1/register" },
		{ REGISTRY_VALIDATE, "https://r.example/api/cloud/environment/env-1/validate" },
		{ REGISTRY_CONNECT, "https://r.example/api/cloud/environment/env-1/connect" },
	};
	static const struct {
		const char *id;
		enum registry_op op;
		const char *want;
	} paths[] = {
		{ "env-1", REGISTRY_CONNECT, "/cloud/environment/env-1/connect" },
		/* unreserved characters stay, everything else is %XX */
		{ "Az09-._~", REGISTRY_REGISTER, "/cloud/environment/Az09-._~/register" },
		{ "a/b?c#d %\xC3\xA9:@+", REGISTRY_REGISTER,
		  "/cloud/environment/a%2Fb%3Fc%23d%20%25%C3%A9%3A%40%2B/register" },
		/* dot segments cannot be normalised away */
		{ "..", REGISTRY_VALIDATE, "/cloud/environment/%2E%2E/validate" },
		{ ".", REGISTRY_VALIDATE, "/cloud/environment/%2E/validate" },
		{ "...", REGISTRY_VALIDATE, "/cloud/environment/.../validate" },
	};
	char *s;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		s = registry_request_url("https://r.example/api", "env-1", cases[i].op);
		ASSERT_STREQ(cases[i].want, s);
		free(s);
	}
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		s = registry_request_path(paths[i].id, paths[i].op);
		ASSERT_STREQ(paths[i].want, s);
		free(s);
	}
	ASSERT_TRUE(registry_request_path("x", (enum registry_op)7) == NULL);
}

TEST(url_parse_accepts)
{
	static const struct {
		const char *url;
		bool tls, ipv6;
		const char *host;
		int port;
		const char *path;
	} cases[] = {
		{ "https://r.example", true, false, "r.example", 443, "" },
		{ "http://127.0.0.1:8080/api/v1", false, false, "127.0.0.1", 8080, "/api/v1" },
		{ "HTTP://[::1]:9/", false, true, "::1", 9, "" },
		{ "HttpS://[2001:db8::1]/p%20q", true, true, "2001:db8::1", 443, "/p%20q" },
		{ "http://my_host-1.local:65535", false, false, "my_host-1.local", 65535, "" },
	};
	struct registry_url u;
	const char *why = NULL;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ASSERT_EQ(0, registry_url_parse(cases[i].url, &u, &why));
		ASSERT_EQ(cases[i].tls, u.tls);
		ASSERT_EQ(cases[i].ipv6, u.ipv6);
		ASSERT_STREQ(cases[i].host, u.host);
		ASSERT_EQ(cases[i].port, u.port);
		ASSERT_STREQ(cases[i].path, u.path);
		registry_url_done(&u);
	}
	registry_url_done(&u); /* twice is harmless */
}

TEST(url_parse_refuses)
{
	static const struct {
		const char *url, *why;
	} cases[] = {
		{ "ftp://x", "registry URL scheme must be http or https" },
		{ "ws://x", "registry URL scheme must be http or https" },
		{ "x.example", "registry URL scheme must be http or https" },
		{ "https:/x", "registry URL scheme must be http or https" },
		{ "https://", "registry URL has an empty host" },
		{ "https:///p", "registry URL has an empty host" },
		{ "https://:80", "registry URL has an empty host" },
		{ "https://u:p@x", "registry URL may not carry user info" },
		{ "https://x:0", "registry URL has a bad port" },
		{ "https://x:65536", "registry URL has a bad port" },
		{ "https://x:123456", "registry URL has a bad port" },
		{ "https://x:", "registry URL has a bad port" },
		{ "https://x:8a", "registry URL has a bad port" },
		{ "https://x:-1", "registry URL has a bad port" },
		{ "https://x?q=1", "registry URL may not have a query or fragment" },
		{ "https://x/p#f", "registry URL may not have a query or fragment" },
		{ "https://[::1", "registry URL has a bad IPv6 literal" },
		{ "https://[zz]", "registry URL has a bad IPv6 literal" },
		{ "https://[::1]x", "registry URL has a bad IPv6 literal" },
		{ "https://[fe80::1%25eth0]", "registry URL has a bad IPv6 literal" },
		{ "https://ex ample", "registry URL holds whitespace, control or non-ASCII characters" },
		{ "https://\xC3\xA9.com", "registry URL holds whitespace, control or non-ASCII characters" },
		{ "https://x\x7F", "registry URL holds whitespace, control or non-ASCII characters" },
		{ "https://a,b", "registry URL host has a character outside [A-Za-z0-9._-]" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct registry_url u;
		const char *why = NULL;

		if (registry_url_parse(cases[i].url, &u, &why) != -EINVAL)
			tests_fail(__FILE__, __LINE__, "accepted %s", cases[i].url);
		ASSERT_STREQ(cases[i].why, why);
		ASSERT_TRUE(u.host == NULL && u.path == NULL);
	}
}

/* ---- request bodies ---- */

TEST(register_and_connect_bodies)
{
	struct noise_public zero = { 0 };
	char *key = zero_key_json(), *want, *s;

	ASSERT_TRUE(asprintf(&want, "{\"security_profile\":\"noise_hybrid_ik_v1\",\"executor_public_key\":%s}",
			     key) > 0);
	s = registry_register_body(&zero);
	ASSERT_STREQ(want, s);
	free(s);
	free(want);
	ASSERT_TRUE(asprintf(&want, "{\"harness_public_key\":%s}", key) > 0);
	s = registry_connect_body(&zero);
	ASSERT_STREQ(want, s);
	free(s);
	free(want);
	free(key);
}

TEST(validate_body)
{
	struct noise_public zero = { 0 };
	char *key = zero_key_json(), *want, *s, *big;
	int e = 0;

	ASSERT_TRUE(asprintf(&want,
			     "{\"executor_registration_id\":\"reg-1\",\"harness_public_key\":%s,"
			     "\"harness_key_authorization\":\"tok\\\"en\\\\/\xC3\xA9\"}",
			     key) > 0);
	s = registry_validate_body("reg-1", &zero, "tok\"en\\/\xC3\xA9", 10, &e);
	ASSERT_STREQ(want, s);
	free(s);
	free(want);

	/* NUL inside the authorization is carried, escaped */
	ASSERT_TRUE(asprintf(&want,
			     "{\"executor_registration_id\":\"r\",\"harness_public_key\":%s,"
			     "\"harness_key_authorization\":\"a\\u0000b\"}",
			     key) > 0);
	s = registry_validate_body("r", &zero, "a\0b", 3, &e);
	ASSERT_STREQ(want, s);
	free(s);
	free(want);

	/* 4096 bytes is the limit (RELAY.md §4.2, §6.5) */
	big = rep('a', 4097, "");
	s = registry_validate_body("r", &zero, big, 4096, &e);
	ASSERT_TRUE(s != NULL);
	ASSERT_TRUE(strstr(s, "\"harness_key_authorization\":\"aaaa") != NULL);
	ASSERT_EQ(strlen(key) + 4096 + strlen("{\"executor_registration_id\":\"r\",\"harness_public_key\":,"
					      "\"harness_key_authorization\":\"\"}"),
		  strlen(s));
	free(s);
	e = 0;
	ASSERT_TRUE(registry_validate_body("r", &zero, big, 4097, &e) == NULL);
	ASSERT_EQ(-EMSGSIZE, e);
	free(big);
	e = 0;
	ASSERT_TRUE(registry_validate_body("r", &zero, "a\xFF", 2, &e) == NULL);
	ASSERT_EQ(-EILSEQ, e);
	e = 0;
	ASSERT_TRUE(registry_validate_body("r\xC0\x80", &zero, "a", 1, &e) == NULL);
	ASSERT_EQ(-EILSEQ, e);
	free(key);
}

/* ---- register responses ---- */

static int reg(const char *body, struct registry_registration *r, const char **why)
{
	return registry_parse_registration(body, strlen(body), "env-1", r, why);
}

#define REG_OK_HEAD                                                                        \
	"{\"environment_id\":\"env-1\",\"url\":\"wss://rv.example/ws?sig=abc\","            \
	"\"security_profile\":\"noise_hybrid_ik_v1\",\"executor_registration_id\":\"reg-1\""

TEST(register_response_accepts)
{
	struct registry_registration r;
	const char *why = NULL;

	ASSERT_EQ(0, reg(REG_OK_HEAD "}", &r, &why));
	ASSERT_STREQ("env-1", r.environment_id);
	ASSERT_STREQ("wss://rv.example/ws?sig=abc", r.url);
	ASSERT_STREQ("reg-1", r.executor_registration_id);
	ASSERT_EQ(0, r.policy.version);
	ASSERT_STREQ("legacy", r.policy.assignment_epoch);
	ASSERT_EQ(REGISTRY_POLICY_LEGACY, registry_policy_state(&r.policy));
	ASSERT_TRUE(!registry_policy_outbound_nodelay(&r.policy));
	registry_registration_done(&r);

	/* unknown members are ignored; ws:// and any case of the scheme are fine */
	ASSERT_EQ(0, reg("{\"extra\":[1],\"environment_id\":\"env-1\",\"url\":\"WS://h:1\","
			 "\"security_profile\":\"noise_hybrid_ik_v1\",\"executor_registration_id\":\"r\"}",
			 &r, &why));
	ASSERT_STREQ("WS://h:1", r.url);
	registry_registration_done(&r);

	ASSERT_EQ(0, reg(REG_OK_HEAD ",\"transport_policy\":{\"version\":1,\"assignment_epoch\":\"e7\","
				     "\"outbound_tcp_nodelay\":true,\"rendezvous_accepted_tcp_nodelay\":true,"
				     "\"future\":0}}",
			 &r, &why));
	ASSERT_EQ(1, r.policy.version);
	ASSERT_STREQ("e7", r.policy.assignment_epoch);
	ASSERT_EQ(REGISTRY_POLICY_ACTIVE, registry_policy_state(&r.policy));
	ASSERT_TRUE(registry_policy_outbound_nodelay(&r.policy));
	ASSERT_TRUE(registry_policy_accepted_nodelay(&r.policy));
	registry_registration_done(&r);

	ASSERT_EQ(0, reg(REG_OK_HEAD ",\"transport_policy\":{\"version\":1,\"assignment_epoch\":\"e7\","
				     "\"outbound_tcp_nodelay\":false,\"rendezvous_accepted_tcp_nodelay\":true}}",
			 &r, &why));
	ASSERT_TRUE(!registry_policy_outbound_nodelay(&r.policy));
	ASSERT_TRUE(registry_policy_accepted_nodelay(&r.policy));
	registry_registration_done(&r);

	/* "off" turns version 1 inactive */
	ASSERT_EQ(0, reg(REG_OK_HEAD ",\"transport_policy\":{\"version\":1,\"assignment_epoch\":\"off\","
				     "\"outbound_tcp_nodelay\":true,\"rendezvous_accepted_tcp_nodelay\":true}}",
			 &r, &why));
	ASSERT_EQ(REGISTRY_POLICY_INACTIVE, registry_policy_state(&r.policy));
	ASSERT_TRUE(!registry_policy_outbound_nodelay(&r.policy));
	ASSERT_TRUE(!registry_policy_accepted_nodelay(&r.policy));
	registry_registration_done(&r);

	/* present without assignment_epoch: "off" */
	ASSERT_EQ(0, reg(REG_OK_HEAD ",\"transport_policy\":{\"version\":1,\"outbound_tcp_nodelay\":true}}",
			 &r, &why));
	ASSERT_STREQ("off", r.policy.assignment_epoch);
	ASSERT_EQ(REGISTRY_POLICY_INACTIVE, registry_policy_state(&r.policy));
	ASSERT_TRUE(!registry_policy_outbound_nodelay(&r.policy));
	registry_registration_done(&r);

	/* present and empty: version 0 */
	ASSERT_EQ(0, reg(REG_OK_HEAD ",\"transport_policy\":{}}", &r, &why));
	ASSERT_EQ(0, r.policy.version);
	ASSERT_STREQ("off", r.policy.assignment_epoch);
	ASSERT_EQ(REGISTRY_POLICY_LEGACY, registry_policy_state(&r.policy));
	ASSERT_TRUE(!r.policy.outbound_tcp_nodelay && !r.policy.rendezvous_accepted_tcp_nodelay);
	registry_registration_done(&r);

	/* another version is not understood: nothing applies */
	ASSERT_EQ(0, reg(REG_OK_HEAD ",\"transport_policy\":{\"version\":4294967295,\"assignment_epoch\":\"e\","
				     "\"outbound_tcp_nodelay\":true,\"rendezvous_accepted_tcp_nodelay\":true}}",
			 &r, &why));
	ASSERT_EQ(4294967295u, r.policy.version);
	ASSERT_EQ(REGISTRY_POLICY_UNKNOWN, registry_policy_state(&r.policy));
	ASSERT_TRUE(!registry_policy_outbound_nodelay(&r.policy));
	ASSERT_TRUE(!registry_policy_accepted_nodelay(&r.policy));
	registry_registration_done(&r);
}

TEST(register_response_refuses)
{
	static const struct {
		const char *body;
		int err;
		const char *why;
	} cases[] = {
		{ "", -EBADMSG, "registry response is not a JSON object" },
		{ "{", -EBADMSG, "registry response is not a JSON object" },
		{ "[]", -EBADMSG, "registry response is not a JSON object" },
		{ "null", -EBADMSG, "registry response is not a JSON object" },
		{ REG_OK_HEAD ",\"url\":\"wss://x\"}", -EBADMSG, "registry response is not a JSON object" },
		{ "{\"url\":\"wss://x\",\"security_profile\":\"noise_hybrid_ik_v1\",\"executor_registration_id\":\"r\"}",
		  -EBADMSG, "environment_id missing or not a string" },
		{ "{\"environment_id\":1,\"url\":\"wss://x\",\"security_profile\":\"noise_hybrid_ik_v1\","
		  "\"executor_registration_id\":\"r\"}",
		  -EBADMSG, "environment_id missing or not a string" },
		{ "{\"environment_id\":\"env-1\\u0000\",\"url\":\"wss://x\",\"security_profile\":\"noise_hybrid_ik_v1\","
		  "\"executor_registration_id\":\"r\"}",
		  -EBADMSG, "environment_id missing or not a string" },
		{ "{\"environment_id\":\"env-1\",\"url\":null,\"security_profile\":\"noise_hybrid_ik_v1\","
		  "\"executor_registration_id\":\"r\"}",
		  -EBADMSG, "url missing or not a string" },
		{ "{\"environment_id\":\"env-1\",\"url\":\"wss://x\",\"security_profile\":\"noise_hybrid_ik_v1\"}",
		  -EBADMSG, "executor_registration_id missing or not a string" },
		{ "{\"environment_id\":\"env-1\",\"url\":\"wss://x\",\"executor_registration_id\":\"r\"}",
		  -EBADMSG, "security_profile missing or not a string" },
		{ REG_OK_HEAD ",\"transport_policy\":null}", -EBADMSG, "transport_policy is not an object" },
		{ REG_OK_HEAD ",\"transport_policy\":[]}", -EBADMSG, "transport_policy is not an object" },
		{ REG_OK_HEAD ",\"transport_policy\":{\"version\":-1}}", -EBADMSG,
		  "transport_policy.version is not a u32" },
		{ REG_OK_HEAD ",\"transport_policy\":{\"version\":4294967296}}", -EBADMSG,
		  "transport_policy.version is not a u32" },
		{ REG_OK_HEAD ",\"transport_policy\":{\"version\":1.0}}", -EBADMSG,
		  "transport_policy.version is not a u32" },
		{ REG_OK_HEAD ",\"transport_policy\":{\"version\":\"1\"}}", -EBADMSG,
		  "transport_policy.version is not a u32" },
		{ REG_OK_HEAD ",\"transport_policy\":{\"assignment_epoch\":null}}", -EBADMSG,
		  "transport_policy.assignment_epoch is not a string" },
		{ REG_OK_HEAD ",\"transport_policy\":{\"outbound_tcp_nodelay\":\"true\"}}", -EBADMSG,
		  "transport_policy.outbound_tcp_nodelay is not a boolean" },
		{ REG_OK_HEAD ",\"transport_policy\":{\"rendezvous_accepted_tcp_nodelay\":1}}", -EBADMSG,
		  "transport_policy.rendezvous_accepted_tcp_nodelay is not a boolean" },
		{ "{\"environment_id\":\"env-2\",\"url\":\"wss://x\",\"security_profile\":\"noise_hybrid_ik_v1\","
		  "\"executor_registration_id\":\"r\"}",
		  -EXDEV, "environment registry returned a different environment id" },
		{ "{\"environment_id\":\"env-1 \",\"url\":\"wss://x\",\"security_profile\":\"noise_hybrid_ik_v1\","
		  "\"executor_registration_id\":\"r\"}",
		  -EXDEV, "environment registry returned a different environment id" },
		{ "{\"environment_id\":\"env-1\",\"url\":\"wss://x\",\"security_profile\":\"noise_v0\","
		  "\"executor_registration_id\":\"r\"}",
		  -EPROTONOSUPPORT, "environment registry returned an unsupported security profile" },
		{ "{\"environment_id\":\"env-1\",\"url\":\"wss://x\",\"security_profile\":\"noise_hybrid_ik_v1\\u0000\","
		  "\"executor_registration_id\":\"r\"}",
		  -EPROTONOSUPPORT, "environment registry returned an unsupported security profile" },
		{ "{\"environment_id\":\"env-1\",\"url\":\" \\t\",\"security_profile\":\"noise_hybrid_ik_v1\","
		  "\"executor_registration_id\":\"r\"}",
		  -ENODATA, "environment registry returned a blank url or executor_registration_id" },
		{ "{\"environment_id\":\"env-1\",\"url\":\"wss://x\",\"security_profile\":\"noise_hybrid_ik_v1\","
		  "\"executor_registration_id\":\"\\u00a0\"}",
		  -ENODATA, "environment registry returned a blank url or executor_registration_id" },
		{ "{\"environment_id\":\"env-1\",\"url\":\"https://x\",\"security_profile\":\"noise_hybrid_ik_v1\","
		  "\"executor_registration_id\":\"r\"}",
		  -EAFNOSUPPORT, "rendezvous url is not ws:// or wss://" },
		{ "{\"environment_id\":\"env-1\",\"url\":\"wss://\",\"security_profile\":\"noise_hybrid_ik_v1\","
		  "\"executor_registration_id\":\"r\"}",
		  -EAFNOSUPPORT, "rendezvous url is not ws:// or wss://" },
		{ "{\"environment_id\":\"env-1\",\"url\":\"ws:///p\",\"security_profile\":\"noise_hybrid_ik_v1\","
		  "\"executor_registration_id\":\"r\"}",
		  -EAFNOSUPPORT, "rendezvous url is not ws:// or wss://" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct registry_registration r;
		const char *why = NULL;
		int got = reg(cases[i].body, &r, &why);

		if (got != cases[i].err)
			tests_fail(__FILE__, __LINE__, "case %zu: expected %d, got %d", i, cases[i].err, got);
		ASSERT_STREQ(cases[i].why, why);
		ASSERT_TRUE(r.url == NULL && r.environment_id == NULL && r.policy.assignment_epoch == NULL);
	}
}

/* ---- validate responses ---- */

TEST(validate_response)
{
	const char *why = NULL;

	ASSERT_EQ(0, registry_parse_validation("{\"valid\":true}", 14, &why));
	ASSERT_EQ(0, registry_parse_validation("{\"other\":1,\"valid\":true}", 24, &why));
	ASSERT_EQ(-EKEYREJECTED, registry_parse_validation("{\"valid\":false}", 15, &why));
	ASSERT_STREQ("environment registry rejected Noise relay harness key", why);
	ASSERT_EQ(-EBADMSG, registry_parse_validation("{\"valid\":\"true\"}", 16, &why));
	ASSERT_STREQ("valid missing or not a boolean", why);
	ASSERT_EQ(-EBADMSG, registry_parse_validation("{\"valid\":1}", 11, &why));
	ASSERT_EQ(-EBADMSG, registry_parse_validation("{}", 2, &why));
	ASSERT_STREQ("valid missing or not a boolean", why);
	ASSERT_EQ(-EBADMSG, registry_parse_validation("{\"valid\":true,\"valid\":true}", 27, &why));
	ASSERT_STREQ("registry response is not a JSON object", why);
	ASSERT_EQ(-EBADMSG, registry_parse_validation("true", 4, &why));
	ASSERT_EQ(-EBADMSG, registry_parse_validation("", 0, &why));
	/* the length is honoured: the text after it is not read */
	ASSERT_EQ(-EBADMSG, registry_parse_validation("{\"valid\":true}", 13, &why));
}

/* ---- connect responses ---- */

static char *conn_body(const char *env, const char *url, const char *profile, const char *reg_id,
		       const char *key, const char *auth, const char *extra)
{
	char *s;

	ASSERT_TRUE(asprintf(&s,
			     "{\"environment_id\":%s,\"url\":%s,\"security_profile\":%s,"
			     "\"executor_registration_id\":%s,\"executor_public_key\":%s,"
			     "\"harness_key_authorization\":%s%s}",
			     env, url, profile, reg_id, key, auth, extra) > 0);
	return s;
}

#define ENV "\"env-1\""
#define URL "\"wss://rv.example/ws?role=harness&sig=abc\""
#define PROF "\"noise_hybrid_ik_v1\""
#define RID "\"reg-1\""
#define AUTH "\"secret-authorization-1\""

TEST(connect_response_accepts)
{
	struct noise_public pk;
	struct registry_connection c;
	const char *why = NULL;
	char *key = pattern_key(&pk), *b, *big, *q;

	b = conn_body(ENV, URL, PROF, RID, key, AUTH, "");
	ASSERT_EQ(0, registry_parse_connection(b, strlen(b), "env-1", &c, &why));
	ASSERT_STREQ("env-1", c.environment_id);
	ASSERT_STREQ("wss://rv.example/ws?role=harness&sig=abc", c.url);
	ASSERT_STREQ("reg-1", c.executor_registration_id);
	ASSERT_STREQ("secret-authorization-1", c.authorization);
	ASSERT_EQ(22, c.authorization_len);
	ASSERT_MEMEQ(&pk, &c.executor_public_key, sizeof(pk));
	ASSERT_EQ(REGISTRY_POLICY_LEGACY, registry_policy_state(&c.policy));
	registry_connection_done(&c);
	ASSERT_TRUE(c.authorization == NULL);
	free(b);

	/* a NUL inside the authorization is kept with its length */
	b = conn_body(ENV, URL, PROF, RID, key, "\"a\\u0000b\"",
		      ",\"transport_policy\":{\"version\":1,\"assignment_epoch\":\"e\",\"outbound_tcp_nodelay\":true}");
	ASSERT_EQ(0, registry_parse_connection(b, strlen(b), "env-1", &c, &why));
	ASSERT_EQ(3, c.authorization_len);
	ASSERT_MEMEQ("a\0b", c.authorization, 4);
	ASSERT_TRUE(registry_policy_outbound_nodelay(&c.policy));
	registry_connection_done(&c);
	free(b);

	/* exactly 4096 bytes */
	big = rep('t', 4096, "\"");
	ASSERT_TRUE(asprintf(&q, "\"%s", big) > 0);
	b = conn_body(ENV, URL, PROF, RID, key, q, "");
	ASSERT_EQ(0, registry_parse_connection(b, strlen(b), "env-1", &c, &why));
	ASSERT_EQ(4096, c.authorization_len);
	registry_connection_done(&c);
	free(b);
	free(q);
	free(big);
	free(key);
}

TEST(connect_response_refuses)
{
	struct noise_public pk;
	char *key = pattern_key(&pk), *zero = zero_key_json(), *bad_suite, *extra_member, *short_key;
	char *big, *q;

	/* keys channel_public_key_parse refuses */
	bad_suite = strdup(zero);
	memcpy(strstr(bad_suite, "X25519"), "X44800", 6);
	ASSERT_TRUE(asprintf(&extra_member, "{\"extra\":1,%s", zero + 1) > 0);
	ASSERT_TRUE(asprintf(&short_key,
			     "{\"suite\":\"Noise_hybridIK_X25519+MLKEM768_AESGCM_SHA256\","
			     "\"x25519_public_key\":\"AAAA\",\"mlkem768_public_key\":\"AAAA\"}") > 0);
	big = rep('t', 4097, "\"");
	ASSERT_TRUE(asprintf(&q, "\"%s", big) > 0);

	const struct {
		char *body;
		int err;
		const char *why;
	} cases[] = {
		{ conn_body("\"env-2\"", URL, PROF, RID, key, AUTH, ""), -EXDEV,
		  "environment registry returned a different environment id" },
		{ conn_body(ENV, URL, "\"noise\"", RID, key, AUTH, ""), -EPROTONOSUPPORT,
		  "environment registry returned an unsupported security profile" },
		{ conn_body(ENV, "\"  \"", PROF, RID, key, AUTH, ""), -ENODATA,
		  "environment registry returned incomplete Noise connection data" },
		{ conn_body(ENV, URL, PROF, "\"\"", key, AUTH, ""), -ENODATA,
		  "environment registry returned incomplete Noise connection data" },
		{ conn_body(ENV, URL, PROF, RID, key, "\" \\n\\u3000\"", ""), -ENODATA,
		  "environment registry returned incomplete Noise connection data" },
		{ conn_body(ENV, "\"http://x\"", PROF, RID, key, AUTH, ""), -EAFNOSUPPORT,
		  "rendezvous url is not ws:// or wss://" },
		{ conn_body(ENV, URL, PROF, RID, key, q, ""), -EMSGSIZE,
		  "harness_key_authorization is over 4096 bytes" },
		{ conn_body(ENV, URL, PROF, RID, key, "7", ""), -EBADMSG,
		  "harness_key_authorization missing or not a string" },
		{ conn_body(ENV, URL, PROF, RID, key, "null", ""), -EBADMSG,
		  "harness_key_authorization missing or not a string" },
		{ conn_body(ENV, URL, PROF, RID, "null", AUTH, ""), -ENOKEY,
		  "executor_public_key is not a valid Noise channel public key" },
		{ conn_body(ENV, URL, PROF, RID, bad_suite, AUTH, ""), -ENOKEY,
		  "executor_public_key is not a valid Noise channel public key" },
		{ conn_body(ENV, URL, PROF, RID, extra_member, AUTH, ""), -ENOKEY,
		  "executor_public_key is not a valid Noise channel public key" },
		{ conn_body(ENV, URL, PROF, RID, short_key, AUTH, ""), -ENOKEY,
		  "executor_public_key is not a valid Noise channel public key" },
		{ conn_body(ENV, URL, PROF, RID, key, AUTH, ",\"transport_policy\":7"), -EBADMSG,
		  "transport_policy is not an object" },
		{ conn_body("5", URL, PROF, RID, key, AUTH, ""), -EBADMSG,
		  "environment_id missing or not a string" },
		/* a type error wins over a mismatch, as serde parses before upstream checks */
		{ conn_body("\"env-2\"", URL, PROF, RID, key, "1", ""), -EBADMSG,
		  "harness_key_authorization missing or not a string" },
		{ conn_body(ENV, URL, PROF, RID, key, AUTH, ",\"url\":\"wss://y\""), -EBADMSG,
		  "registry response is not a JSON object" },
	};
	const char *missing_key =
		"{\"environment_id\":\"env-1\",\"url\":\"wss://x\",\"security_profile\":\"noise_hybrid_ik_v1\","
		"\"executor_registration_id\":\"r\",\"harness_key_authorization\":\"a\"}";
	struct registry_connection c;
	const char *why = NULL;

	ASSERT_EQ(-EBADMSG, registry_parse_connection(missing_key, strlen(missing_key), "env-1", &c, &why));
	ASSERT_STREQ("executor_public_key missing", why);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int got = registry_parse_connection(cases[i].body, strlen(cases[i].body), "env-1", &c, &why);

		if (got != cases[i].err)
			tests_fail(__FILE__, __LINE__, "case %zu: expected %d, got %d", i, cases[i].err, got);
		ASSERT_STREQ(cases[i].why, why);
		/* reasons never quote the authorization */
		ASSERT_TRUE(strstr(why, "secret") == NULL);
		ASSERT_TRUE(c.authorization == NULL && c.url == NULL);
		free(cases[i].body);
	}
	free(q);
	free(big);
	free(short_key);
	free(extra_member);
	free(bad_suite);
	free(zero);
	free(key);
}

/* ---- errors ---- */

static void err(int status, const char *body, struct registry_error *e)
{
	registry_error_parse(status, body, strlen(body), e);
}

TEST(error_bodies)
{
	struct registry_error e;
	char *big, *s;

	err(503, "{\"error\":{\"code\":\"registration_conflict\",\"message\":\"busy\"}}", &e);
	ASSERT_EQ(503, e.status);
	ASSERT_STREQ("registration_conflict", e.code);
	ASSERT_STREQ("busy", e.message);
	ASSERT_TRUE(!e.auth);
	ASSERT_TRUE(registry_should_retry_register(e.status, e.code));

	err(401, "{\"error\":{\"message\":\"bad token\"}}", &e);
	ASSERT_TRUE(e.auth);
	ASSERT_STREQ("", e.code);
	ASSERT_STREQ("bad token", e.message);
	err(403, "nope", &e);
	ASSERT_TRUE(e.auth);
	ASSERT_STREQ("nope", e.message);
	err(404, "nope", &e);
	ASSERT_TRUE(!e.auth);

	/* not the error shape: the trimmed body */
	err(500, "  plain text \n", &e);
	ASSERT_STREQ("", e.code);
	ASSERT_STREQ("plain text", e.message);
	err(500, "{\"error\":{}}", &e);
	ASSERT_STREQ("{\"error\":{}}", e.message);
	err(500, "{\"error\":{\"code\":\"c\"}}", &e);
	ASSERT_STREQ("c", e.code);
	ASSERT_STREQ("{\"error\":{\"code\":\"c\"}}", e.message);
	err(500, "{\"error\":{\"code\":5,\"message\":\"m\"}}", &e);
	ASSERT_STREQ("", e.code);
	ASSERT_STREQ("{\"error\":{\"code\":5,\"message\":\"m\"}}", e.message);
	err(500, "{\"error\":\"down\"}", &e);
	ASSERT_STREQ("{\"error\":\"down\"}", e.message);
	err(500, "{\"error\":{\"code\":null,\"message\":null}}", &e);
	ASSERT_STREQ("", e.code);
	ASSERT_STREQ("{\"error\":{\"code\":null,\"message\":null}}", e.message);
	err(500, "{\"error\":{\"code\":\"x\",\"code\":\"y\",\"message\":\"m\"}}", &e);
	ASSERT_STREQ("", e.code); /* a duplicate member: not the shape */
	err(500, "{\"error\":{\"message\":\"\"}}", &e);
	ASSERT_STREQ("", e.message); /* as upstream: the registry's own (empty) message */

	/* blank bodies */
	err(500, "", &e);
	ASSERT_STREQ("empty or malformed error body", e.message);
	err(502, " \r\n", &e);
	ASSERT_STREQ("empty or malformed error body", e.message);
	err(401, "", &e);
	ASSERT_STREQ("empty error body", e.message);

	/* 4096 characters at most (upstream's preview counts characters, not bytes) */
	big = rep('x', 5000, "");
	err(500, big, &e);
	ASSERT_EQ(4096, strlen(e.message));
	free(big);
	big = rep('x', 4095, "\xC3\xA9tail");
	err(500, big, &e);
	ASSERT_EQ(4097, strlen(e.message)); /* 4095 x and one two-byte character */
	ASSERT_STREQ("x\xC3\xA9", e.message + 4094);
	free(big);
	big = rep('x', 4094, "\xC3\xA9tail");
	err(500, big, &e);
	ASSERT_EQ(4097, strlen(e.message)); /* ... then one more character, "t" */
	ASSERT_STREQ("x\xC3\xA9t", e.message + 4093);
	free(big);
	/* a long message member is cut the same way */
	big = rep('m', 5000, "\"}}");
	ASSERT_TRUE(asprintf(&s, "{\"error\":{\"message\":\"%s", big) > 0);
	err(500, s, &e);
	ASSERT_EQ(4096, strlen(e.message));
	free(s);
	free(big);
	/* a long code is cut at 63 bytes */
	big = rep('c', 100, "\"}}");
	ASSERT_TRUE(asprintf(&s, "{\"error\":{\"code\":\"%s", big) > 0);
	err(500, s, &e);
	ASSERT_EQ(63, strlen(e.code));
	free(s);
	free(big);

	/* invalid UTF-8 and NUL become U+FFFD */
	registry_error_parse(500, "a\xFF" "b\0c", 5, &e);
	ASSERT_STREQ("a\xEF\xBF\xBD" "b\xEF\xBF\xBD" "c", e.message);
	err(503, "{\"error\":{\"code\":\"registration_conflict\\u0000\",\"message\":\"m\"}}", &e);
	ASSERT_STREQ("registration_conflict\xEF\xBF\xBD", e.code);
	ASSERT_TRUE(!registry_should_retry_register(e.status, e.code));
}

TEST(should_retry_register)
{
	ASSERT_TRUE(registry_should_retry_register(503, "registration_conflict"));
	ASSERT_TRUE(!registry_should_retry_register(503, "Registration_conflict"));
	ASSERT_TRUE(!registry_should_retry_register(503, "registration_conflict "));
	ASSERT_TRUE(!registry_should_retry_register(503, "other"));
	ASSERT_TRUE(!registry_should_retry_register(503, ""));
	ASSERT_TRUE(!registry_should_retry_register(503, NULL));
	ASSERT_TRUE(!registry_should_retry_register(502, "registration_conflict"));
	ASSERT_TRUE(!registry_should_retry_register(409, "registration_conflict"));
	ASSERT_TRUE(!registry_should_retry_register(500, "registration_conflict"));
}

static void redacted(int status, const char *body, struct registry_error *e)
{
	registry_error_parse_redacted(status, body, strlen(body), e);
}

TEST(validate_errors_are_redacted)
{
	static const char echo[] =
		"{\"error\":{\"code\":\"invalid_authorization\",\"message\":\"bad secret-authorization-1\"}}";
	struct registry_error e;

	registry_error_parse_redacted(403, echo, strlen(echo), &e);
	ASSERT_EQ(403, e.status);
	ASSERT_TRUE(e.auth);
	ASSERT_STREQ("invalid_authorization", e.code);
	ASSERT_STREQ("environment registry harness key validation authentication failed", e.message);
	redacted(500, "secret-authorization-1", &e);
	ASSERT_TRUE(!e.auth);
	ASSERT_STREQ("", e.code);
	ASSERT_STREQ("environment registry harness key validation failed", e.message);
	/* a code that is not a plain identifier may be an echo: dropped */
	redacted(400, "{\"error\":{\"code\":\"tok en\"}}", &e);
	ASSERT_STREQ("", e.code);
	redacted(400, "{\"error\":{\"code\":\"a.b-c_D9\"}}", &e);
	ASSERT_STREQ("a.b-c_D9", e.code);
	redacted(400, "{\"error\":{\"code\":\"a\\u0000\"}}", &e);
	ASSERT_STREQ("", e.code);
	{
		char *big = rep('c', 64, "\"}}"), *s;

		ASSERT_TRUE(asprintf(&s, "{\"error\":{\"code\":\"%s", big) > 0);
		registry_error_parse_redacted(400, s, strlen(s), &e);
		ASSERT_STREQ("", e.code);
		free(s);
		free(big);
	}
}

/* ---- delays ---- */

TEST(backoff)
{
	static const uint32_t want[] = { 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000 };
	struct registry_backoff b;

	registry_backoff_init(&b);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		ASSERT_EQ(want[i], registry_backoff_next(&b));
	registry_backoff_reset(&b);
	ASSERT_EQ(1000, registry_backoff_next(&b));
	ASSERT_EQ(2000, registry_backoff_next(&b));
}

TEST(conflict_retry_delay)
{
	static const uint32_t base[] = { 500, 1000, 2000, 4000, 5000, 5000, 5000 };
	uint8_t k1[REGISTRY_CONFLICT_KEY_BYTES] = { 1 }, k2[REGISTRY_CONFLICT_KEY_BYTES] = { 2 };
	struct registry_conflict_retry r;
	bool differ = false;

	for (uint32_t a = 0; a < 64; a++) {
		uint32_t b = a < 7 ? base[a] : 5000, d = registry_conflict_retry_delay_ms(k1, a);

		if (d < b || d > b + b / 2)
			tests_fail(__FILE__, __LINE__, "attempt %u: %u ms outside [%u, %u]", a, d, b, b + b / 2);
		ASSERT_EQ(d, registry_conflict_retry_delay_ms(k1, a)); /* keyed, not random */
		differ |= d != registry_conflict_retry_delay_ms(k2, a);
	}
	ASSERT_TRUE(differ); /* another run's key spreads differently */
	{
		uint32_t d = registry_conflict_retry_delay_ms(k1, UINT32_MAX);

		ASSERT_TRUE(d >= 5000 && d <= 7500);
	}

	ASSERT_EQ(0, registry_conflict_retry_init(&r));
	ASSERT_EQ(0, r.attempt);
	for (uint32_t a = 0; a < 6; a++) {
		uint32_t want = registry_conflict_retry_delay_ms(r.key, a);

		ASSERT_EQ(want, registry_conflict_retry_next(&r));
		ASSERT_EQ(a + 1, r.attempt);
	}
	r.attempt = UINT32_MAX;
	registry_conflict_retry_next(&r);
	ASSERT_EQ(UINT32_MAX, r.attempt);
}

TEST_MAIN()
