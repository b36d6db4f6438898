/* SPDX-License-Identifier: MIT */
/*
 * src/netproxy/config.c: process/start.networkProxy decoded and checked with
 * the texts the reference (exec-server 0.171.0) answers, recorded in
 * docs/netproxy-wire-notes.md §2.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netproxy-config.h"
#include "netproxy-env.h"
#include "tests.h"

#define BASE_PROXY                                                                              \
	"\"enabled\":true,\"enableSocks5\":true,\"enableSocks5Udp\":true,"                      \
	"\"allowUpstreamProxy\":true,\"dangerouslyAllowAllUnixSockets\":false,\"mode\":\"full\"," \
	"\"allowLocalBinding\":false"

/* Decodes and checks {"proxy":{BASE_PROXY <extra_proxy>} <extra>}; returns the error text or "". */
static const char *run(const char *launch_json, bool managed_ttcp, struct netproxy_config **ret)
{
	static char err[1024];
	struct netproxy_config *cfg = NULL;
	json_error_t je;
	json_t *v = json_loads(launch_json, JSON_DECODE_ANY, &je);
	int r;

	ASSERT_TRUE(v != NULL);
	err[0] = 0;
	r = netproxy_config_decode(v, &cfg, err, sizeof(err));
	if (r == 0)
		r = netproxy_config_check(cfg, managed_ttcp, err, sizeof(err));
	if (r < 0)
		ASSERT_EQ(-EINVAL, r);
	else
		ASSERT_STREQ("", err);
	json_decref(v);
	if (ret && r == 0)
		*ret = cfg;
	else
		netproxy_config_free(cfg);
	return err;
}

static void expect(const char *want, const char *json)
{
	ASSERT_STREQ(want, run(json, false, NULL));
}

TEST(valid_launch_decodes)
{
	struct netproxy_config *cfg = NULL;

	ASSERT_STREQ("", run("{\"proxy\":{" BASE_PROXY ",\"domains\":{\"*.example.com\":\"allow\","
			     "\"bad.example.com\":\"deny\"}},\"environmentId\":\"remote\","
			     "\"executionId\":\"e\",\"auditMetadata\":{\"conversationId\":\"c\"}}",
			     false, &cfg));
	ASSERT_TRUE(cfg != NULL);
	ASSERT_EQ(NP_MODE_FULL, cfg->mode);
	ASSERT_EQ(2, (int)cfg->n_domains);
	ASSERT_STREQ("*.example.com", cfg->domains[0].pattern);
	ASSERT_EQ(NP_PERM_ALLOW, cfg->domains[0].perm);
	ASSERT_EQ(NP_PERM_DENY, cfg->domains[1].perm);
	ASSERT_TRUE(cfg->enable_socks5 && !cfg->allow_local_binding && !cfg->review);
	ASSERT_STREQ("remote", cfg->environment_id);
	ASSERT_STREQ("c", cfg->conversation_id);
	netproxy_config_free(cfg);
	/* absent and null: no proxy */
	cfg = (struct netproxy_config *)1;
	ASSERT_STREQ("", run("null", false, &cfg));
	ASSERT_TRUE(cfg == NULL);
}

/* The live upgrade's text: cfg->source dumped, loaded and decoded again gives the same config. */
static void same_after_text(const char *launch_json)
{
	struct netproxy_config *a = NULL, *b = NULL;
	char err[256] = "", *text;
	json_t *v;

	ASSERT_STREQ("", run(launch_json, false, &a));
	ASSERT_TRUE(a != NULL && a->source != NULL);
	text = json_dumps(a->source, JSON_COMPACT | JSON_ENCODE_ANY);
	ASSERT_TRUE(text != NULL && text[0] == '{' && text[strlen(text) - 1] == '}');
	v = json_loads(text, JSON_DECODE_ANY, NULL);
	ASSERT_TRUE(v != NULL);
	ASSERT_EQ(0, netproxy_config_decode(v, &b, err, sizeof(err)));
	json_decref(v);
	free(text);
	ASSERT_TRUE(b != NULL);
	ASSERT_EQ(0, netproxy_config_check(b, false, err, sizeof(err)));
	ASSERT_EQ(a->mode, b->mode);
	ASSERT_TRUE(a->enable_socks5 == b->enable_socks5 &&
		    a->enable_socks5_udp == b->enable_socks5_udp &&
		    a->allow_upstream_proxy == b->allow_upstream_proxy &&
		    a->dangerously_allow_all_unix_sockets == b->dangerously_allow_all_unix_sockets &&
		    a->allow_local_binding == b->allow_local_binding &&
		    a->transparent_tcp == b->transparent_tcp &&
		    a->credential_masking == b->credential_masking && a->review == b->review);
	ASSERT_EQ(a->decision_timeout_ms, b->decision_timeout_ms);
	ASSERT_EQ(a->n_domains, b->n_domains);
	for (size_t i = 0; i < a->n_domains; i++) {
		ASSERT_STREQ(a->domains[i].pattern, b->domains[i].pattern);
		ASSERT_EQ(a->domains[i].perm, b->domains[i].perm);
	}
	ASSERT_EQ(a->n_unix_sockets, b->n_unix_sockets);
	for (size_t i = 0; i < a->n_unix_sockets; i++) {
		ASSERT_STREQ(a->unix_sockets[i].path, b->unix_sockets[i].path);
		ASSERT_EQ(a->unix_sockets[i].allow, b->unix_sockets[i].allow);
	}
	ASSERT_TRUE((a->environment_id == NULL) == (b->environment_id == NULL));
	if (a->environment_id)
		ASSERT_STREQ(a->environment_id, b->environment_id);
	ASSERT_TRUE((a->execution_id == NULL) == (b->execution_id == NULL));
	if (a->execution_id)
		ASSERT_STREQ(a->execution_id, b->execution_id);
	ASSERT_TRUE((a->conversation_id == NULL) == (b->conversation_id == NULL));
	if (a->conversation_id)
		ASSERT_STREQ(a->conversation_id, b->conversation_id);
	netproxy_config_free(a);
	netproxy_config_free(b);
}

TEST(source_text_decodes_to_the_same_config)
{
	/* every field the policy reads, the review's timeout, ids and audit metadata */
	same_after_text("{\"proxy\":{" BASE_PROXY ",\"domains\":{\"*.example.com\":\"allow\","
			"\"bad.example.com\":\"deny\"},\"unixSockets\":"
			"{\"/run/a.sock\":\"allow\",\"/run/b.sock\":\"deny\"}},\"environmentId\":"
			"\"remote\",\"executionId\":\"e\",\"auditMetadata\":{\"conversationId\":\"c\"},"
			"\"policyDecisionTimeoutMs\":15000}");
	same_after_text("{\"proxy\":{"
			"\"enabled\":true,\"enableSocks5\":false,\"enableSocks5Udp\":false,"
			"\"allowUpstreamProxy\":false,\"dangerouslyAllowAllUnixSockets\":true,"
			"\"mode\":\"limited\",\"allowLocalBinding\":true}}");
	/* the sequence form: kept as the object it was turned into */
	same_after_text("[{" BASE_PROXY ",\"domains\":{\"a.test\":\"allow\"}},"
			"{\"conversationId\":\"k\"},\"env\",\"exec\",5000]");
}

TEST(launch_shape_errors)
{
	expect("missing field `proxy`", "{}");
	expect("invalid type: number, expected struct RemoteNetworkProxyLaunchConfig", "5");
	expect("invalid length 0, expected struct RemoteNetworkProxyLaunchConfig with 5 elements", "[]");
	expect("invalid type: null, expected struct RemoteNetworkProxyConfig", "{\"proxy\":null}");
	expect("invalid type: number, expected struct RemoteNetworkProxyConfig", "{\"proxy\":5}");
	expect("invalid type: sequence, expected struct RemoteNetworkProxyConfig", "{\"proxy\":[]}");
	expect("invalid type: null, expected struct NetworkProxyAuditMetadata",
	       "{\"proxy\":{" BASE_PROXY "},\"auditMetadata\":null}");
	expect("invalid type: number, expected struct NetworkProxyAuditMetadata",
	       "{\"proxy\":{" BASE_PROXY "},\"auditMetadata\":5}");
	expect("invalid type: number, expected a string",
	       "{\"proxy\":{" BASE_PROXY "},\"environmentId\":5}");
	expect("invalid type: string \"x\", expected u64",
	       "{\"proxy\":{" BASE_PROXY "},\"policyDecisionTimeoutMs\":\"x\"}");
}

TEST(proxy_field_errors)
{
	expect("missing field `enabled`", "{\"proxy\":{}}");
	expect("invalid type: string \"yes\", expected a boolean", "{\"proxy\":{\"enabled\":\"yes\"}}");
	expect("invalid type: null, expected a boolean", "{\"proxy\":{\"enabled\":null}}");
	expect("missing field `enableSocks5`", "{\"proxy\":{\"enabled\":true}}");
	expect("unknown variant `bogus`, expected `limited` or `full`",
	       "{\"proxy\":{" BASE_PROXY ",\"mode\":\"bogus\"}}");
	expect("invalid type: null, expected string or map",
	       "{\"proxy\":{" BASE_PROXY ",\"mode\":null}}");
	expect("invalid value: map, expected map with a single key",
	       "{\"proxy\":{" BASE_PROXY ",\"mode\":{}}}");
	expect("invalid type: map, expected unit",
	       "{\"proxy\":{" BASE_PROXY ",\"mode\":{\"limited\":{}}}}");
	expect("", "{\"proxy\":{" BASE_PROXY ",\"mode\":{\"full\":null}}}");
	expect("invalid type: sequence, expected a map", "{\"proxy\":{" BASE_PROXY ",\"domains\":[]}}");
	expect("invalid type: string \"x\", expected a map",
	       "{\"proxy\":{" BASE_PROXY ",\"domains\":\"x\"}}");
	expect("unknown variant `bogus`, expected one of `none`, `allow`, `deny`",
	       "{\"proxy\":{" BASE_PROXY ",\"domains\":{\"a.com\":\"bogus\"}}}");
	expect("invalid type: boolean `true`, expected string or map",
	       "{\"proxy\":{" BASE_PROXY ",\"domains\":{\"a.com\":true}}}");
	expect("invalid type: sequence, expected struct NetworkUnixSocketPermissions",
	       "{\"proxy\":{" BASE_PROXY ",\"unixSockets\":[]}}");
	expect("unknown variant `none`, expected `allow` or `deny`",
	       "{\"proxy\":{" BASE_PROXY ",\"unixSockets\":{\"/x\":\"none\"}}}");
	expect("invalid type: string \"x\", expected a boolean",
	       "{\"proxy\":{" BASE_PROXY ",\"transparentTcp\":\"x\"}}");
	expect("invalid type: null, expected a map",
	       "{\"proxy\":{" BASE_PROXY ",\"credentialProviders\":null}}");
	expect("unknown field `type`, expected one of `env`, `patterns`, `url_prefixes`, "
	       "`url_prefix_from_env`, `auth`, `header`, `prefix`",
	       "{\"proxy\":{" BASE_PROXY ",\"credentialProviders\":{\"v\":{\"type\":1}}}}");
	expect("unknown variant `s`, expected one of `bearer`, `token`, `basic`, `header`",
	       "{\"proxy\":{" BASE_PROXY ",\"credentialProviders\":{\"v\":{\"auth\":[\"s\"]}}}}");
	/* unknown members are ignored everywhere else */
	expect("", "{\"proxy\":{" BASE_PROXY ",\"bogusField\":1},\"bogusField\":2}");
}

TEST(checks_in_the_reference_order)
{
	ASSERT_STREQ("transparent TCP requires an executor-local managed proxy",
		     run("{\"proxy\":{" BASE_PROXY ",\"enabled\":false},\"policyDecisionTimeoutMs\":0}",
			 true, NULL));
	expect("network policy decision callback timeout must be nonzero",
	       "{\"proxy\":{" BASE_PROXY ",\"enabled\":false},\"policyDecisionTimeoutMs\":0}");
	expect("invalid network proxy config: executor-local network proxy launch requires an "
	       "enabled proxy",
	       "{\"proxy\":{\"enabled\":false,\"enableSocks5\":true,\"enableSocks5Udp\":true,"
	       "\"allowUpstreamProxy\":true,\"dangerouslyAllowAllUnixSockets\":false,"
	       "\"mode\":\"full\",\"allowLocalBinding\":false,\"unixSockets\":{\"rel\":\"allow\"}}}");
	expect("invalid network proxy config: invalid network.allow_unix_sockets[0]: expected a "
	       "NUL-free absolute path for Linux, got \"rel.sock\"",
	       "{\"proxy\":{" BASE_PROXY ",\"unixSockets\":{\"rel.sock\":\"allow\"},"
	       "\"domains\":{\"\":\"allow\"}}}");
	expect("invalid network proxy config: domain pattern is empty",
	       "{\"proxy\":{" BASE_PROXY ",\"domains\":{\"\":\"allow\"}}}");
	expect("invalid network proxy config: domain pattern is empty",
	       "{\"proxy\":{" BASE_PROXY ",\"domains\":{\"*.\":\"allow\"}}}");
}

static const char *get(char **env, const char *name)
{
	size_t n = strlen(name);

	for (; *env; env++)
		if (strncmp(*env, name, n) == 0 && (*env)[n] == '=')
			return *env + n + 1;
	return NULL;
}

static size_t count(char **env)
{
	size_t n = 0;

	while (env[n])
		n++;
	return n;
}

TEST(environment)
{
	struct netproxy_config cfg = { .enable_socks5 = true };
	char **env = calloc(4, sizeof(*env));

	env[0] = strdup("PLAIN=hello");
	env[1] = strdup("HTTP_PROXY=http://1.2.3.4:9");
	env[2] = strdup("no_proxy=x");
	ASSERT_EQ(0, netproxy_env_apply(&cfg, 3128, 1080, false, &env));
	ASSERT_EQ(35, (int)count(env)); /* the reference's 34 and PLAIN */
	ASSERT_STREQ("hello", get(env, "PLAIN"));
	ASSERT_STREQ("http://127.0.0.1:3128", get(env, "HTTP_PROXY"));
	ASSERT_STREQ("http://127.0.0.1:3128", get(env, "https_proxy"));
	ASSERT_STREQ("http://127.0.0.1:3128", get(env, "PIP_PROXY"));
	ASSERT_STREQ("socks5h://127.0.0.1:1080", get(env, "ALL_PROXY"));
	ASSERT_STREQ("socks5h://127.0.0.1:1080", get(env, "ftp_proxy"));
	ASSERT_STREQ("", get(env, "NO_PROXY"));
	ASSERT_STREQ("", get(env, "no_proxy"));
	ASSERT_STREQ("0", get(env, "CODEX_NETWORK_ALLOW_LOCAL_BINDING"));
	ASSERT_STREQ("1", get(env, "CODEX_NETWORK_PROXY_ACTIVE"));
	ASSERT_STREQ("1", get(env, "NODE_USE_ENV_PROXY"));
	ASSERT_STREQ("true", get(env, "ELECTRON_GET_USE_PROXY"));
	for (char **e = env; *e; e++)
		free(*e);
	free(env);

	/* no SOCKS5: the SOCKS variables name the HTTP proxy; local binding: the local list */
	cfg.enable_socks5 = false;
	cfg.allow_local_binding = true;
	env = calloc(1, sizeof(*env));
	ASSERT_EQ(0, netproxy_env_apply(&cfg, 40645, 40087, false, &env));
	ASSERT_EQ(34, (int)count(env));
	ASSERT_STREQ("http://127.0.0.1:40645", get(env, "all_proxy"));
	ASSERT_STREQ("localhost,127.0.0.1,::1,10.0.0.0/8,172.16.0.0/12,192.168.0.0/16",
		     get(env, "npm_config_noproxy"));
	ASSERT_STREQ("1", get(env, "CODEX_NETWORK_ALLOW_LOCAL_BINDING"));
	for (char **e = env; *e; e++)
		free(*e);
	free(env);
}

TEST_MAIN()
