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

static bool is_proxy_var(const char *entry)
{
	for (size_t i = 0; i < ELEMENTSOF(vars); i++) {
		size_t n = strlen(vars[i].name);

		if (strncmp(entry, vars[i].name, n) == 0 && entry[n] == '=')
			return true;
	}
	return false;
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
	char http[40], socks[40], **old = *envp, **v;
	size_t n = 0, k = 0;

	snprintf(http, sizeof(http), "http://127.0.0.1:%u", (unsigned)http_port);
	if (cfg->enable_socks5)
		snprintf(socks, sizeof(socks), "socks5h://127.0.0.1:%u", (unsigned)socks_port);
	else
		memcpy(socks, http, sizeof(http)); /* the reference points them at the HTTP proxy */
	while (old && old[n])
		n++;
	v = calloc(n + ELEMENTSOF(vars) + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < ELEMENTSOF(vars); i++) {
		const char *val = vars[i].val == V_HTTP	    ? http
				  : vars[i].val == V_SOCKS  ? socks
				  : vars[i].val == V_NO_PROXY ? (cfg->allow_local_binding ? LOCAL_NO_PROXY : "")
				  : vars[i].val == V_LOCAL  ? (cfg->allow_local_binding ? "1" : "0")
				  : vars[i].val == V_ONE    ? "1"
							    : "true";

		if (asprintf(&v[k], "%s=%s", vars[i].name, val) < 0) {
			v[k] = NULL;
			goto fail;
		}
		k++;
	}
	for (size_t i = 0; i < n; i++) {
		if (is_proxy_var(old[i])) {
			free(old[i]);
			continue;
		}
		v[k++] = old[i];
	}
	free(old);
	*envp = v;
	if (!cfg->credential_masking)
		return 0;
	/* the broker also says "intercept" to the proxy (limited mode), masking or not */
	if (!cfg->broker && netproxy_broker_new(cfg->providers, &cfg->broker) < 0)
		return -ENOMEM;
	return maskable ? netproxy_broker_mask_env(cfg->broker, envp) : 0;
fail:
	for (size_t i = 0; i < k; i++)
		free(v[i]);
	free(v);
	return -ENOMEM;
}

static const char *const ca_vars[] = {
	"BUNDLE_SSL_CA_CERT", "CARGO_HTTP_CAINFO", "CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE",
	"CODEX_CA_CERTIFICATE", "CURL_CA_BUNDLE", "DENO_CERT", "GIT_SSL_CAINFO",
	"NODE_EXTRA_CA_CERTS", "NPM_CONFIG_CAFILE", "PIP_CERT", "REQUESTS_CA_BUNDLE",
	"SSL_CERT_FILE", "npm_config_cafile",
};

static bool is_ca_var(const char *entry)
{
	for (size_t i = 0; i < ELEMENTSOF(ca_vars); i++) {
		size_t n = strlen(ca_vars[i]);

		if (strncmp(entry, ca_vars[i], n) == 0 && entry[n] == '=')
			return true;
	}
	return false;
}

int netproxy_env_ca(const char *bundle, char ***envp)
{
	char **old = *envp, **v;
	size_t n = 0, k = 0;

	while (old && old[n])
		n++;
	v = calloc(n + ELEMENTSOF(ca_vars) + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < ELEMENTSOF(ca_vars); i++) {
		if (asprintf(&v[k], "%s=%s", ca_vars[i], bundle) < 0) {
			for (size_t j = 0; j < k; j++)
				free(v[j]);
			free(v);
			return -ENOMEM;
		}
		k++;
	}
	for (size_t i = 0; i < n; i++) {
		if (is_ca_var(old[i])) {
			free(old[i]);
			continue;
		}
		v[k++] = old[i];
	}
	free(old);
	*envp = v;
	return 0;
}
