/* SPDX-License-Identifier: MIT */
/*
 * src/netproxy/credentials.c, cred-match.c, cred-apply.c: destinations,
 * patterns, placeholders in the environment and real values back in the
 * headers (/work/notes/credmask-semantics.md, docs/NETWORK-PROXY.md).
 */
#include <errno.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "cred-internal.h"
#include "credentials.h"
#include "netproxy-env.h"
#include <sodium.h>

#include "tests.h"

#define REAL "vendor_abcdefghijklmnopqrstuvwx"

static bool dest_matches(const char *prefix, bool https, const char *host, unsigned port,
			 const char *path)
{
	struct br_dest d;
	bool m;

	ASSERT_EQ(0, netproxy_cred_dest_parse(prefix, false, &d));
	m = netproxy_cred_dest_match(&d, https, host, (uint16_t)port, path, strlen(path));
	free(d.path);
	return m;
}

TEST(destinations)
{
	struct br_dest d;

	ASSERT_TRUE(
		dest_matches("https://api.example.com/v1", true, "api.example.com", 443, "/v1"));
	ASSERT_TRUE(dest_matches("https://api.example.com/v1", true, "api.example.com", 443,
				 "/v1/x?q"));
	ASSERT_TRUE(
		!dest_matches("https://api.example.com/v1", true, "api.example.com", 443, "/v1x"));
	ASSERT_TRUE(
		!dest_matches("https://api.example.com/v1", true, "api.example.com", 443, "/v2"));
	ASSERT_TRUE(
		!dest_matches("https://api.example.com/v1", false, "api.example.com", 443, "/v1"));
	ASSERT_TRUE(
		!dest_matches("https://api.example.com/v1", true, "api.example.com", 8443, "/v1"));
	ASSERT_TRUE(!dest_matches("https://api.example.com/", true, "x.api.example.com", 443, "/"));
	ASSERT_TRUE(
		dest_matches("https://API.Example.com.:8443", true, "api.example.com", 8443, "/a"));
	ASSERT_TRUE(dest_matches("http://127.0.0.1:8080/", false, "127.0.0.1", 8080, "/anything"));
	/* bare: loopback means http:80, any other host https:443 */
	ASSERT_TRUE(dest_matches("127.0.0.1", false, "127.0.0.1", 80, "/"));
	ASSERT_TRUE(dest_matches("api.example.com", true, "api.example.com", 443, "/"));
	ASSERT_TRUE(dest_matches("[::1]:9000", false, "::1", 9000, "/"));
	ASSERT_EQ(-EINVAL, netproxy_cred_dest_parse("ftp://x.example", false, &d));
	ASSERT_EQ(-EINVAL, netproxy_cred_dest_parse("https://u:p@x.example", false, &d));
	ASSERT_EQ(-EINVAL, netproxy_cred_dest_parse("https://x.example:0", false, &d));
	ASSERT_EQ(-EINVAL, netproxy_cred_dest_parse("https://x.example:70000", false, &d));
	ASSERT_EQ(-EINVAL, netproxy_cred_dest_parse("https://*.x.example", false, &d));
	ASSERT_EQ(-EINVAL, netproxy_cred_dest_parse("https://x.example/a?b", false, &d));
	ASSERT_EQ(-EINVAL, netproxy_cred_dest_parse("", false, &d));
	/* the built-in wildcard form */
	ASSERT_EQ(0, netproxy_cred_dest_parse("https://*.ghe.com", true, &d));
	ASSERT_TRUE(netproxy_cred_dest_match(&d, true, "corp.ghe.com", 443, "/", 1));
	ASSERT_TRUE(!netproxy_cred_dest_match(&d, true, "ghe.com", 443, "/", 1));
	free(d.path);
}

static int compile(const char *pattern, struct br_pattern *p)
{
	int r = netproxy_cred_pattern_compile(pattern, p);

	if (r == 0)
		netproxy_cred_pattern_done(p);
	return r;
}

TEST(patterns)
{
	struct br_pattern p;

	ASSERT_EQ(0, netproxy_cred_pattern_compile("^vendor_[a-z]{24}$", &p));
	ASSERT_TRUE(netproxy_cred_pattern_full_match(&p, REAL));
	ASSERT_TRUE(!netproxy_cred_pattern_full_match(&p, "x" REAL));
	ASSERT_TRUE(!netproxy_cred_pattern_full_match(&p, REAL "x"));
	netproxy_cred_pattern_done(&p);
	ASSERT_EQ(0, netproxy_cred_pattern_compile("tok-\\d{4}\\w+", &p));
	ASSERT_TRUE(netproxy_cred_pattern_full_match(&p, "tok-1234abc_9"));
	ASSERT_TRUE(!netproxy_cred_pattern_full_match(&p, "tok-12a4abc"));
	netproxy_cred_pattern_done(&p);
	ASSERT_EQ(0, netproxy_cred_pattern_compile("(?i)^key_[0-9a-f]{8}$", &p));
	ASSERT_TRUE(p.icase && netproxy_cred_pattern_full_match(&p, "KEY_DEADBEEF"));
	netproxy_cred_pattern_done(&p);
	/* placeholders are drawn from the pattern alone and match it */
	ASSERT_EQ(0, netproxy_cred_pattern_compile("^(sk|pk)_(live|test)_[A-Za-z0-9]{24}$", &p));
	for (int i = 0; i < 200; i++) {
		char d[2049];

		ASSERT_EQ(0, netproxy_cred_pattern_draw(&p, d, sizeof(d)));
		ASSERT_TRUE(netproxy_cred_pattern_full_match(&p, d));
		ASSERT_EQ(32u, strlen(d));
	}
	netproxy_cred_pattern_done(&p);
	ASSERT_EQ(0, netproxy_cred_pattern_compile("^x[^a-z0-9]{3}\\.[[:digit:]]+y?$", &p));
	{
		char d[2049];

		ASSERT_EQ(0, netproxy_cred_pattern_draw(&p, d, sizeof(d)));
		ASSERT_TRUE(netproxy_cred_pattern_full_match(&p, d));
	}
	netproxy_cred_pattern_done(&p);
	/* other shapes */
	ASSERT_EQ(0, netproxy_cred_pattern_compile("^abc?d", &p));
	netproxy_cred_pattern_done(&p);
	ASSERT_EQ(0, netproxy_cred_pattern_compile("^(ab|cd)x+", &p));
	netproxy_cred_pattern_done(&p);
	/* refused: empty matches, syntax POSIX cannot say, unbounded sizes */
	ASSERT_EQ(-EINVAL, compile(".*", &p));
	ASSERT_EQ(-EINVAL, compile("a?", &p));
	ASSERT_EQ(-EINVAL, compile("([", &p));
	ASSERT_EQ(-EINVAL, compile("(?:ab)+", &p));
	ASSERT_EQ(-EINVAL, compile("a+?", &p));
	ASSERT_EQ(-EINVAL, compile("(a)\\1", &p));
	ASSERT_EQ(-EINVAL, compile("\\p{L}+", &p));
	ASSERT_EQ(-EINVAL, compile("a{65}", &p));
	ASSERT_EQ(-EINVAL, compile("((a{64}){64}){64}", &p));
	ASSERT_EQ(-EINVAL, compile("(a{64}){64}", &p)); /* 4096 bytes: over a placeholder's 2048 */
	ASSERT_EQ(0, compile("(a{32}){32}", &p));
}

/* Client-written patterns of every odd shape: compiled or refused, never out of bounds. */
TEST(random_patterns)
{
	static const char alphabet[] = "ab0_-^$.*+?{}[]()|\\:,dws1" "2";
	char pat[24];

	for (int i = 0; i < 20000; i++) {
		struct br_pattern p;
		size_t n = randombytes_uniform(sizeof(pat));
		int r;

		for (size_t j = 0; j < n; j++)
			pat[j] = alphabet[randombytes_uniform(sizeof(alphabet) - 1)];
		pat[n] = 0;
		r = netproxy_cred_pattern_compile(pat, &p);
		ASSERT_TRUE(r == 0 || r == -EINVAL);
		if (r == 0) {
			char d[2049];

			/* whatever is drawn matches (a rare shape may take more draws than allowed) */
			if (netproxy_cred_pattern_draw(&p, d, sizeof(d)) == 0)
				ASSERT_TRUE(netproxy_cred_pattern_full_match(&p, d));
			netproxy_cred_pattern_done(&p);
		}
	}
}

static json_t *providers(const char *json)
{
	json_error_t je;
	json_t *v = json_loads(json, 0, &je);

	ASSERT_TRUE(v != NULL);
	return v;
}

static const char *env_get(char **env, const char *key)
{
	size_t n = strlen(key);

	for (size_t i = 0; env[i]; i++)
		if (!strncmp(env[i], key, n) && env[i][n] == '=')
			return env[i] + n + 1;
	return NULL;
}

static char **env_of(const char *const *kv)
{
	size_t n = 0;
	char **env;

	while (kv[n])
		n++;
	env = calloc(n + 1, sizeof(*env));
	ASSERT_TRUE(env != NULL);
	for (size_t i = 0; i < n; i++)
		ASSERT_TRUE((env[i] = strdup(kv[i])) != NULL);
	return env;
}

static void env_free(char **env)
{
	for (size_t i = 0; env && env[i]; i++)
		free(env[i]);
	free(env);
}

static int translate(struct np_broker *b, bool https, const char *host, unsigned port,
		     const char *path, const char *name, const char *value, char **ret)
{
	return netproxy_broker_translate(b, https, host, (uint16_t)port, path, strlen(path), name,
					 strlen(name), value, strlen(value), ret);
}

TEST(mask_and_translate)
{
	static const char *const kv[] = {"VENDOR_TOKEN=" REAL,
					 "OTHER=x " REAL " y",
					 "GH_TOKEN=ghp_ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ",
					 "CODEX_NETWORK_PROXY_BROKERED_CREDENTIALS=forged",
					 "PLAIN=1",
					 NULL};
	json_t *p = providers(
		"{\"v\":{\"env\":[\"VENDOR_TOKEN\"],\"patterns\":[\"^vendor_[a-z]{24}$\"],"
		"\"url_prefixes\":[\"http://127.0.0.1:8080/v1\"],"
		"\"auth\":[\"bearer\",\"basic\",\"header\"],\"header\":\"X-Key\","
		"\"prefix\":\"K \"}}");
	struct np_broker *b;
	char **env = env_of(kv), *out, hdr[256], dummy[64];
	const char *d, *marker;

	ASSERT_EQ(0, netproxy_broker_new(p, &b));
	ASSERT_EQ(0, netproxy_broker_mask_env(b, &env));
	ASSERT_EQ(2u, netproxy_broker_count(b)); /* vendor and GitHub */
	d = env_get(env, "VENDOR_TOKEN");
	ASSERT_TRUE(d && strlen(d) == strlen(REAL) && strncmp(d, "vendor_", 7) == 0 &&
		    strcmp(d, REAL) != 0);
	snprintf(dummy, sizeof(dummy), "%s", d);
	snprintf(hdr, sizeof(hdr), "x %s y", dummy);
	ASSERT_STREQ(hdr, env_get(env, "OTHER"));
	ASSERT_TRUE(strncmp(env_get(env, "GH_TOKEN"), "ghp_masked", 10) == 0);
	ASSERT_STREQ("1", env_get(env, "CODEX_NETWORK_PROXY_CREDENTIAL_BROKER_ACTIVE"));
	marker = env_get(env, "CODEX_NETWORK_PROXY_BROKERED_CREDENTIALS");
	ASSERT_TRUE(marker && strstr(marker, "forged") == NULL &&
		    strncmp(marker, "[[\"@alias:GH_TOKEN\"", 19) == 0);
	for (size_t i = 0; env[i]; i++)
		ASSERT_TRUE(strstr(env[i], REAL) == NULL);

	/* bearer, any case of the scheme, toward the bound prefix only */
	snprintf(hdr, sizeof(hdr), "bearer %s", dummy);
	ASSERT_EQ(1, translate(b, false, "127.0.0.1", 8080, "/v1/x", "Authorization", hdr, &out));
	ASSERT_STREQ("bearer " REAL, out);
	free(out);
	ASSERT_EQ(0, translate(b, false, "127.0.0.1", 8080, "/v2", "Authorization", hdr, &out));
	ASSERT_EQ(0, translate(b, true, "127.0.0.1", 8080, "/v1", "Authorization", hdr, &out));
	ASSERT_EQ(0, translate(b, false, "127.0.0.2", 8080, "/v1", "Authorization", hdr, &out));
	ASSERT_EQ(0, translate(b, false, "127.0.0.1", 8080, "/v1", "X-Other", dummy, &out));
	snprintf(hdr, sizeof(hdr), "token %s", dummy);
	ASSERT_EQ(0, translate(b, false, "127.0.0.1", 8080, "/v1", "Authorization", hdr, &out));
	/* the custom header with its prefix, exactly */
	snprintf(hdr, sizeof(hdr), "K %s", dummy);
	ASSERT_EQ(1, translate(b, false, "127.0.0.1", 8080, "/v1", "x-key", hdr, &out));
	ASSERT_STREQ("K " REAL, out);
	free(out);
	ASSERT_EQ(0, translate(b, false, "127.0.0.1", 8080, "/v1", "X-Key", dummy, &out));
	/* Basic: either part */
	{
		char plain[96], b64[160];

		snprintf(plain, sizeof(plain), "user:%s", dummy);
		sodium_bin2base64(b64, sizeof(b64), (unsigned char *)plain, strlen(plain),
				  sodium_base64_VARIANT_ORIGINAL);
		snprintf(hdr, sizeof(hdr), "Basic %s", b64);
		ASSERT_EQ(1, translate(b, false, "127.0.0.1", 8080, "/v1", "Authorization", hdr,
				       &out));
		/* base64("user:" REAL) */
		ASSERT_STREQ("Basic dXNlcjp2ZW5kb3JfYWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4", out);
		free(out);
		ASSERT_EQ(0, translate(b, false, "127.0.0.1", 8080, "/v1", "Authorization",
				       "Basic !!!", &out));
	}
	/* the built-in GitHub credential: https to its hosts only */
	ASSERT_TRUE(netproxy_broker_binds(b, true, "api.github.com", 443));
	ASSERT_TRUE(!netproxy_broker_binds(b, true, "api.github.com", 8443));
	ASSERT_TRUE(!netproxy_broker_binds(b, true, "127.0.0.1", 8080)); /* http, not https */
	ASSERT_TRUE(netproxy_broker_binds(b, false, "127.0.0.1", 8080));
	snprintf(hdr, sizeof(hdr), "token %s", env_get(env, "GH_TOKEN"));
	ASSERT_EQ(1,
		  translate(b, true, "api.github.com", 443, "/user", "Authorization", hdr, &out));
	ASSERT_STREQ("token ghp_ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ", out);
	free(out);
	ASSERT_EQ(0,
		  translate(b, false, "api.github.com", 80, "/user", "Authorization", hdr, &out));
	netproxy_broker_free(b);
	json_decref(p);
	env_free(env);
}

TEST(broken_providers_are_dropped)
{
	static const char *const kv[] = {"VENDOR_TOKEN=" REAL, NULL};
	static const char *const bad[] = {
		"{\"v\":{\"env\":[]}}",
		"{\"v\":{\"env\":[\"VENDOR_TOKEN\"],\"patterns\":[\"^vendor_[a-z]{24}$\"]}}",
		"{\"v\":{\"env\":[\"1X\"],\"patterns\":[\"x+\"],\"url_prefixes\":[\"https://a.b\"]}}",
		"{\"v\":{\"env\":[\"GITHUB_TOKEN\"],\"patterns\":[\"x+\"],\"url_prefixes\":[\"https://a.b\"]}}",
		"{\"v\":{\"env\":[\"VENDOR_TOKEN\"],\"patterns\":[\"x+\"],\"url_prefixes\":[\"https://a.b\"],"
		"\"auth\":[\"header\"]}}",
		"{\"v\":{\"env\":[\"VENDOR_TOKEN\"],\"patterns\":[\"x+\"],\"url_prefixes\":[\"https://a.b\"],"
		"\"prefix\":\"K \"}}",
		"{\"v\":{\"env\":[\"VENDOR_TOKEN\"],\"patterns\":[\"x+\"],\"url_prefixes\":[\"https://a.b\"],"
		"\"url_prefix_from_env\":\"VENDOR_TOKEN\"}}",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *p = providers(bad[i]);
		struct np_broker *b;
		char **env = env_of(kv);

		ASSERT_EQ(0, netproxy_broker_new(p, &b));
		ASSERT_EQ(0, netproxy_broker_mask_env(b, &env));
		ASSERT_EQ(0u, netproxy_broker_count(b));
		ASSERT_STREQ(REAL, env_get(env, "VENDOR_TOKEN"));
		netproxy_broker_free(b);
		json_decref(p);
		env_free(env);
	}
}

TEST(control_characters_are_never_brokered)
{
	static const char *const kv[] = { "VENDOR_TOKEN=tok_abc\r\nX-Evil: 1", NULL };
	json_t *p = providers("{\"v\":{\"env\":[\"VENDOR_TOKEN\"],\"patterns\":[\"^tok_[^x]+$\"],"
			      "\"url_prefixes\":[\"https://a.example\"]}}");
	struct np_broker *b;
	char **env = env_of(kv);

	/* it would go into a header as it is: a request of its own behind it */
	ASSERT_EQ(0, netproxy_broker_new(p, &b));
	ASSERT_EQ(0, netproxy_broker_mask_env(b, &env));
	ASSERT_EQ(0u, netproxy_broker_count(b));
	netproxy_broker_free(b);
	json_decref(p);
	env_free(env);
}

TEST(maskable_forms)
{
	const char *a[] = {"/bin/bash", "-c", "x"}, *b[] = {"bash", "-c", "x"},
		   *c[] = {"/bin/sh", "-c", "x"}, *d[] = {"/bin/bash", "-lc", "x"},
		   *e[] = {"/usr/bin/env", "bash", "-c"};

	ASSERT_TRUE(netproxy_env_maskable(a, 3));
	ASSERT_TRUE(netproxy_env_maskable(b, 3));
	ASSERT_TRUE(!netproxy_env_maskable(a, 2));
	ASSERT_TRUE(!netproxy_env_maskable(c, 3));
	ASSERT_TRUE(!netproxy_env_maskable(d, 3));
	ASSERT_TRUE(!netproxy_env_maskable(e, 3));
}

TEST_MAIN()
