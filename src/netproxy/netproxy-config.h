/* SPDX-License-Identifier: MIT */
/*
 * process/start.networkProxy (RemoteNetworkProxyLaunchConfig): decoded and
 * checked with the reference's texts and in its order (docs/NETWORK-PROXY.md).
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum np_mode {
	NP_MODE_LIMITED, /* read-only HTTP methods; no SOCKS5 */
	NP_MODE_FULL,
};

enum np_perm {
	NP_PERM_NONE,
	NP_PERM_ALLOW,
	NP_PERM_DENY,
};

struct np_domain {
	char *pattern; /* as sent */
	enum np_perm perm;
};

struct np_broker;

struct np_unix_socket {
	char *path;
	bool allow;
};

struct netproxy_config {
	bool enable_socks5, enable_socks5_udp, allow_upstream_proxy;
	bool dangerously_allow_all_unix_sockets, allow_local_binding;
	bool transparent_tcp, credential_masking;
	enum np_mode mode;
	struct np_domain *domains;
	size_t n_domains;
	struct np_unix_socket *unix_sockets;
	size_t n_unix_sockets;
	bool disabled;               /* enabled: false (refused by netproxy_config_check) */
	bool review;                 /* policyDecisionTimeoutMs given: ask the client */
	uint64_t decision_timeout_ms;
	char *environment_id, *execution_id; /* or NULL */
	char *conversation_id;       /* auditMetadata.conversationId, for the audit log, or NULL */
	json_t *providers;           /* credentialProviders (decoded, an object), or NULL */
	struct np_broker *broker;    /* credentialMasking: made by netproxy_env_apply (credentials.h) */
	/*
	 * The value it was decoded from (a reference): the live upgrade hands it
	 * to the new binary as JSON text, decoded there again by this same code.
	 */
	json_t *source;
};

/*
 * Decodes process/start's networkProxy value (NULL: absent or null) with
 * serde's type errors: returns 0 (*ret NULL when absent), -EINVAL with the
 * message in err, or -ENOMEM. managedNetwork's own fields are decoded by
 * the caller; its transparentTcp is passed here for the checks.
 */
int netproxy_config_decode(json_t *network_proxy, struct netproxy_config **ret, char *err,
			   size_t errsz);

/*
 * The reference's checks after decoding, in its order: managedNetwork's
 * transparentTcp, a zero decision timeout, then the proxy config (enabled,
 * unix socket paths, domain patterns). cfg may be NULL. Returns 0 or -EINVAL.
 */
int netproxy_config_check(const struct netproxy_config *cfg, bool managed_transparent_tcp,
			  char *err, size_t errsz);

void netproxy_config_free(struct netproxy_config *cfg);
