/* SPDX-License-Identifier: MIT */
/*
 * The proxy variables a command of a managed network gets, as the reference
 * sets them (docs/netproxy-wire-notes.md §7): the HTTP proxy's URL for the
 * HTTP, WebSocket and package-manager variables, the SOCKS5 URL (socks5h:,
 * names resolved by the proxy) for ALL_PROXY and FTP_PROXY, the NO_PROXY
 * family empty unless local binding is allowed, and three markers. They
 * replace whatever the client sent under the same names.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credentials.h"
#include "macro.h"
#include "netproxy-config.h"
#include "netproxy-env.h"

enum val { V_HTTP, V_SOCKS, V_NO_PROXY, V_LOCAL, V_ONE, V_TRUE };

static const struct {
	const char *name;
	enum val val;
} vars[] = {
	{ "ALL_PROXY", V_SOCKS },
	{ "BUNDLE_HTTPS_PROXY", V_HTTP },
	{ "BUNDLE_HTTP_PROXY", V_HTTP },
	{ "BUNDLE_NO_PROXY", V_NO_PROXY },
	{ "CODEX_NETWORK_ALLOW_LOCAL_BINDING", V_LOCAL },
	{ "CODEX_NETWORK_PROXY_ACTIVE", V_ONE },
	{ "DOCKER_HTTPS_PROXY", V_HTTP },
	{ "DOCKER_HTTP_PROXY", V_HTTP },
	{ "ELECTRON_GET_USE_PROXY", V_TRUE },
	{ "FTP_PROXY", V_SOCKS },
	{ "HTTPS_PROXY", V_HTTP },
	{ "HTTP_PROXY", V_HTTP },
	{ "NODE_USE_ENV_PROXY", V_ONE },
	{ "NO_PROXY", V_NO_PROXY },
	{ "NPM_CONFIG_HTTPS_PROXY", V_HTTP },
	{ "NPM_CONFIG_HTTP_PROXY", V_HTTP },
	{ "NPM_CONFIG_NOPROXY", V_NO_PROXY },
	{ "NPM_CONFIG_PROXY", V_HTTP },
	{ "PIP_PROXY", V_HTTP },
	{ "WSS_PROXY", V_HTTP },
	{ "WS_PROXY", V_HTTP },
	{ "YARN_HTTPS_PROXY", V_HTTP },
	{ "YARN_HTTP_PROXY", V_HTTP },
	{ "all_proxy", V_SOCKS },
	{ "ftp_proxy", V_SOCKS },
	{ "http_proxy", V_HTTP },
	{ "https_proxy", V_HTTP },
	{ "no_proxy", V_NO_PROXY },
	{ "npm_config_http_proxy", V_HTTP },
	{ "npm_config_https_proxy", V_HTTP },
	{ "npm_config_noproxy", V_NO_PROXY },
	{ "npm_config_proxy", V_HTTP },
	{ "ws_proxy", V_HTTP },
	{ "wss_proxy", V_HTTP },
};

#define LOCAL_NO_PROXY "localhost,127.0.0.1,::1,10.0.0.0/8,172.16.0.0/12,192.168.0.0/16"

/* entry ("NAME=value") is the variable name. */
static bool entry_named(const char *entry, const char *name)
{
	size_t n = strlen(name);

	return strncmp(entry, name, n) == 0 && entry[n] == '=';
}

static bool is_proxy_var(const char *entry)
{
	for (size_t i = 0; i < ELEMENTSOF(vars); i++)
		if (entry_named(entry, vars[i].name))
			return true;
	return false;
}

/*
 * *envp with the n entries of news ("NAME=value", taken over) first, then
 * its own entries but those drop() matches (freed). Returns 0, or -ENOMEM
 * with news freed and *envp as it was.
 */
static int env_put_first(char ***envp, char **news, size_t n, bool (*drop)(const char *entry))
{
	char **old = *envp, **v;
	size_t n_old = 0, k = 0;

	while (old && old[n_old])
		n_old++;
	v = calloc(n_old + n + 1, sizeof(*v));
	if (!v) {
		for (size_t i = 0; i < n; i++)
			free(news[i]);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		v[k++] = news[i];
	for (size_t i = 0; i < n_old; i++) {
		if (drop(old[i])) {
			free(old[i]);
			continue;
		}
		v[k++] = old[i];
	}
	free(old);
	*envp = v;
	return 0;
}

/* "NAME=value" strings of the names (n) with their values into ret. Returns 0 or -ENOMEM. */
static int make_entries(const char *const *names, const char *const *vals, size_t n, char **ret)
{
	for (size_t i = 0; i < n; i++)
		if (asprintf(&ret[i], "%s=%s", names[i], vals[i]) < 0) {
			while (i > 0)
				free(ret[--i]);
			return -ENOMEM;
		}
	return 0;
}

bool netproxy_env_maskable(const char *const *argv, size_t argc)
{
	const char *base;

	if (argc != 3)
		return false;
	base = strrchr(argv[0], '/');
	base = base ? base + 1 : argv[0];
	return strcmp(base, "bash") == 0 && strcmp(argv[1], "-c") == 0;
}

int netproxy_env_apply(struct netproxy_config *cfg, uint16_t http_port, uint16_t socks_port,
		       bool maskable, char ***envp)
{
	const char *names[ELEMENTSOF(vars)], *vals[ELEMENTSOF(vars)];
	char http[40], socks[40], *news[ELEMENTSOF(vars)];

	snprintf(http, sizeof(http), "http://127.0.0.1:%u", (unsigned)http_port);
	if (cfg->enable_socks5)
		snprintf(socks, sizeof(socks), "socks5h://127.0.0.1:%u", (unsigned)socks_port);
	else
		memcpy(socks, http, sizeof(http)); /* the reference points them at the HTTP proxy */
	for (size_t i = 0; i < ELEMENTSOF(vars); i++) {
		names[i] = vars[i].name;
		vals[i] = vars[i].val == V_HTTP	    ? http
			  : vars[i].val == V_SOCKS  ? socks
			  : vars[i].val == V_NO_PROXY ? (cfg->allow_local_binding ? LOCAL_NO_PROXY : "")
			  : vars[i].val == V_LOCAL  ? (cfg->allow_local_binding ? "1" : "0")
			  : vars[i].val == V_ONE    ? "1"
						    : "true";
	}
	if (make_entries(names, vals, ELEMENTSOF(vars), news) < 0 ||
	    env_put_first(envp, news, ELEMENTSOF(vars), is_proxy_var) < 0)
		return -ENOMEM;
	if (!cfg->credential_masking)
		return 0;
	/* the broker also says "intercept" to the proxy (limited mode), masking or not */
	if (!cfg->broker && netproxy_broker_new(cfg->providers, &cfg->broker) < 0)
		return -ENOMEM;
	return maskable ? netproxy_broker_mask_env(cfg->broker, envp) : 0;
}

static const char *const ca_vars[] = {
	"BUNDLE_SSL_CA_CERT", "CARGO_HTTP_CAINFO", "CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE",
	"CODEX_CA_CERTIFICATE", "CURL_CA_BUNDLE", "DENO_CERT", "GIT_SSL_CAINFO",
	"NODE_EXTRA_CA_CERTS", "NPM_CONFIG_CAFILE", "PIP_CERT", "REQUESTS_CA_BUNDLE",
	"SSL_CERT_FILE", "npm_config_cafile",
};

static bool is_ca_var(const char *entry)
{
	for (size_t i = 0; i < ELEMENTSOF(ca_vars); i++)
		if (entry_named(entry, ca_vars[i]))
			return true;
	return false;
}

int netproxy_env_ca(const char *bundle, char ***envp)
{
	const char *vals[ELEMENTSOF(ca_vars)];
	char *news[ELEMENTSOF(ca_vars)];

	for (size_t i = 0; i < ELEMENTSOF(ca_vars); i++)
		vals[i] = bundle;
	if (make_entries(ca_vars, vals, ELEMENTSOF(ca_vars), news) < 0)
		return -ENOMEM;
	return env_put_first(envp, news, ELEMENTSOF(ca_vars), is_ca_var);
}
