/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credentials.h"
#include "netproxy-config.h"
#include "macro.h"
#include "params.h"
#include "policy.h"

enum {
	L_PROXY,
	L_AUDIT,
	L_ENV_ID,
	L_EXEC_ID,
	L_TIMEOUT,
	_L_MAX,
};

static const struct pfield launch_fields[_L_MAX] = {
	[L_PROXY] = { "proxy", P_STRUCT, true, "struct RemoteNetworkProxyConfig" },
	[L_AUDIT] = { "auditMetadata", P_STRUCT, false, "struct NetworkProxyAuditMetadata" },
	[L_ENV_ID] = { "environmentId", P_STRING, false, NULL },
	[L_EXEC_ID] = { "executionId", P_STRING, false, NULL },
	[L_TIMEOUT] = { "policyDecisionTimeoutMs", P_U64, false, NULL },
};

enum {
	C_ENABLED,
	C_SOCKS5,
	C_SOCKS5_UDP,
	C_UPSTREAM,
	C_ALL_UNIX,
	C_MODE,
	C_DOMAINS,
	C_UNIX,
	C_LOCAL,
	C_TRANSPARENT,
	C_MASKING,
	C_PROVIDERS,
	_C_MAX,
};

/* Declaration order: serde's sequence form and its missing-field order follow it. */
static const struct pfield proxy_fields[_C_MAX] = {
	[C_ENABLED] = { "enabled", P_BOOL, true, NULL },
	[C_SOCKS5] = { "enableSocks5", P_BOOL, true, NULL },
	[C_SOCKS5_UDP] = { "enableSocks5Udp", P_BOOL, true, NULL },
	[C_UPSTREAM] = { "allowUpstreamProxy", P_BOOL, true, NULL },
	[C_ALL_UNIX] = { "dangerouslyAllowAllUnixSockets", P_BOOL, true, NULL },
	[C_MODE] = { "mode", P_ANY, true, NULL },
	[C_DOMAINS] = { "domains", P_ANY, false, NULL },
	[C_UNIX] = { "unixSockets", P_ANY, false, NULL },
	[C_LOCAL] = { "allowLocalBinding", P_BOOL, true, NULL },
	[C_TRANSPARENT] = { "transparentTcp", P_BOOL_DEFAULT, false, NULL },
	[C_MASKING] = { "credentialMasking", P_BOOL_DEFAULT, false, NULL },
	[C_PROVIDERS] = { "credentialProviders", P_ANY, false, NULL },
};

static const struct pfield audit_fields[] = {
	{ "conversationId", P_STRING, false, NULL }, { "appVersion", P_STRING, false, NULL },
	{ "userAccountId", P_STRING, false, NULL },  { "authMode", P_STRING, false, NULL },
	{ "originator", P_STRING, false, NULL },     { "userEmail", P_STRING, false, NULL },
	{ "terminalType", P_STRING, false, NULL },   { "model", P_STRING, false, NULL },
	{ "slug", P_STRING, false, NULL },
};

static int strdup_opt(json_t *v, char **ret)
{
	*ret = NULL;
	if (!v)
		return 0;
	*ret = strdup(json_string_value(v));
	return *ret ? 0 : -ENOMEM;
}

/* A map value (domains, unixSockets, credentialProviders): an object, else serde's type error. */
static int want_map(json_t *v, const char *what, char *err, size_t errsz)
{
	if (json_is_object(v))
		return 0;
	params_type_error(v, what, err, errsz);
	return -EINVAL;
}

static int decode_domains(json_t *v, struct netproxy_config *cfg, char *err, size_t errsz)
{
	static const char *const perms[] = { "none", "allow", "deny", NULL };
	const char *k;
	json_t *e;
	size_t len;

	if (!v)
		return 0;
	if (want_map(v, "a map", err, errsz) < 0)
		return -EINVAL;
	cfg->domains = calloc(json_object_size(v) + 1, sizeof(*cfg->domains));
	if (!cfg->domains)
		return -ENOMEM;
	json_object_foreach(v, k, e) {
		int r = params_unit_enum(e, perms, err, errsz, &len);
		struct np_domain *d = &cfg->domains[cfg->n_domains];

		if (r < 0)
			return r;
		d->pattern = strdup(k);
		if (!d->pattern)
			return -ENOMEM;
		d->perm = r == 0 ? NP_PERM_NONE : r == 1 ? NP_PERM_ALLOW : NP_PERM_DENY;
		cfg->n_domains++;
	}
	return 0;
}

static int decode_unix(json_t *v, struct netproxy_config *cfg, char *err, size_t errsz)
{
	static const char *const perms[] = { "allow", "deny", NULL };
	const char *k;
	json_t *e;
	size_t len;

	if (!v)
		return 0;
	if (want_map(v, "struct NetworkUnixSocketPermissions", err, errsz) < 0)
		return -EINVAL;
	cfg->unix_sockets = calloc(json_object_size(v) + 1, sizeof(*cfg->unix_sockets));
	if (!cfg->unix_sockets)
		return -ENOMEM;
	json_object_foreach(v, k, e) {
		int r = params_unit_enum(e, perms, err, errsz, &len);
		struct np_unix_socket *u = &cfg->unix_sockets[cfg->n_unix_sockets];

		if (r < 0)
			return r;
		u->path = strdup(k);
		if (!u->path)
			return -ENOMEM;
		u->allow = r == 0;
		cfg->n_unix_sockets++;
	}
	return 0;
}

/*
 * A provider's members in their order, as the reference decodes them (its
 * Content buffer: numbers printed with their value; the lists take no null,
 * the options do).
 */
static int provider_types(json_t *e, char *err, size_t errsz)
{
	const char *k;
	json_t *v, *x;
	size_t i;

	json_object_foreach(e, k, v) {
		bool list = !strcmp(k, "env") || !strcmp(k, "patterns") || !strcmp(k, "url_prefixes");

		if (list || !strcmp(k, "auth")) {
			if (!json_is_array(v)) {
				params_type_error_valued(v, "a sequence", err, errsz);
				return -EINVAL;
			}
			json_array_foreach(v, i, x)
				if (list && !json_is_string(x)) {
					params_type_error_valued(x, "a string", err, errsz);
					return -EINVAL;
				}
		} else if (!json_is_null(v) && !json_is_string(v)) {
			params_type_error_valued(v, "a string", err, errsz);
			return -EINVAL;
		}
	}
	return 0;
}

/* credentialProviders: name -> CredentialProviderConfig (snake_case, unknown fields refused). */
static int decode_providers(json_t *v, char *err, size_t errsz)
{
	static const char *const names[] = { "env", "patterns", "url_prefixes", "url_prefix_from_env",
					     "auth", "header", "prefix", NULL };
	static const struct pfield fields[] = {
		{ "env", P_STRING_SEQ, false, NULL },
		{ "patterns", P_STRING_SEQ, false, NULL },
		{ "url_prefixes", P_STRING_SEQ, false, NULL },
		{ "url_prefix_from_env", P_STRING, false, NULL },
		{ "auth", P_ANY, false, NULL },
		{ "header", P_STRING, false, NULL },
		{ "prefix", P_STRING, false, NULL },
	};
	static const char *const auth[] = { "bearer", "token", "basic", "header", NULL };
	const char *k, *fk;
	json_t *e, *fv, *out[ELEMENTSOF(fields)];
	size_t len, i;

	if (!v)
		return 0;
	if (want_map(v, "a map", err, errsz) < 0)
		return -EINVAL;
	json_object_foreach(v, k, e) {
		if (json_is_object(e)) {
			json_object_foreach(e, fk, fv) {
				bool known = false;

				for (size_t j = 0; names[j]; j++)
					known |= strcmp(fk, names[j]) == 0;
				if (!known) {
					size_t o = (size_t)snprintf(err, errsz,
								    "unknown field `%s`, expected one of ",
								    fk);

					for (size_t j = 0; names[j] && o < errsz; j++)
						o += (size_t)snprintf(err + o, errsz - o, "%s`%s`",
								      j ? ", " : "", names[j]);
					return -EINVAL;
				}
			}
		} else if (json_is_array(e) && json_array_size(e) > 0) {
			if (params_struct_error(e, "struct CredentialProviderConfig", err, errsz) < 0)
				return -EINVAL;
			continue;
		} else if (!json_is_array(e)) {
			params_type_error_valued(e, "struct CredentialProviderConfig", err, errsz);
			return -EINVAL;
		}
		if (!json_is_object(e))
			continue; /* an empty sequence decodes (every field has a default) */
		if (provider_types(e, err, errsz) < 0)
			return -EINVAL;
		if (params_decode_nested(e, "CredentialProviderConfig", fields, ELEMENTSOF(fields), out,
					 err, errsz) < 0)
			return -EINVAL;
		if (out[4]) {
			if (!json_is_array(out[4])) {
				params_type_error(out[4], "a sequence", err, errsz);
				return -EINVAL;
			}
			json_array_foreach(out[4], i, fv)
				if (params_unit_enum(fv, auth, err, errsz, &len) < 0)
					return -EINVAL;
		}
	}
	return 0;
}

/*
 * serde's sequence form: fields by position, the proxy required, the
 * others defaulted when the sequence ends before them; decoded as the
 * object it stands for.
 */
static int decode_sequence(json_t *network_proxy, struct netproxy_config **ret, char *err,
			   size_t errsz)
{
	size_t n = json_array_size(network_proxy);
	json_t *o;
	int r;

	if (n == 0 || n > _L_MAX) {
		if (n == 0)
			snprintf(err, errsz, "invalid length 0, expected struct "
				 "RemoteNetworkProxyLaunchConfig with %d elements", _L_MAX);
		else
			snprintf(err, errsz, "invalid length %zu, expected fewer elements in array", n);
		return -EINVAL;
	}
	o = json_object();
	if (!o)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (json_object_set(o, launch_fields[i].name, json_array_get(network_proxy, i)) < 0) {
			json_decref(o);
			return -ENOMEM;
		}
	r = netproxy_config_decode(o, ret, err, errsz);
	json_decref(o);
	return r;
}

/*
 * serde's decoding of the object form: the launch config (l), its proxy
 * config (c) and audit metadata (a, zeroed when absent), the fields that
 * are not Options refused as null. Returns 0 or -EINVAL with err.
 */
static int decode_fields(json_t *network_proxy, json_t **l, json_t **c, json_t **a, char *err,
			 size_t errsz)
{
	if (!json_is_object(network_proxy)) {
		params_type_error(network_proxy, "struct RemoteNetworkProxyLaunchConfig", err, errsz);
		return -EINVAL;
	}
	if (params_decode_nested(network_proxy, "RemoteNetworkProxyLaunchConfig", launch_fields,
				 _L_MAX, l, err, errsz) < 0 ||
	    params_decode_nested(l[L_PROXY], "RemoteNetworkProxyConfig", proxy_fields, _C_MAX, c, err,
				 errsz) < 0)
		return -EINVAL;
	if (l[L_AUDIT] && params_decode_nested(l[L_AUDIT], "NetworkProxyAuditMetadata", audit_fields,
					       ELEMENTSOF(audit_fields), a, err, errsz) < 0)
		return -EINVAL;
	if (!l[L_AUDIT]) {
		json_t *raw = json_is_object(network_proxy) ? json_object_get(network_proxy, "auditMetadata")
							    : NULL;

		/* serde: an Option-less struct with #[serde(default)]: null is a type error. */
		if (raw && json_is_null(raw)) {
			params_type_error(raw, "struct NetworkProxyAuditMetadata", err, errsz);
			return -EINVAL;
		}
		memset(a, 0, ELEMENTSOF(audit_fields) * sizeof(*a));
	}
	if (json_is_object(l[L_PROXY])) {
		json_t *raw = json_object_get(l[L_PROXY], "credentialProviders");

		/* A map with #[serde(default)], not an Option: null is a type error. */
		if (raw && json_is_null(raw)) {
			params_type_error(raw, "a map", err, errsz);
			return -EINVAL;
		}
	}
	return 0;
}

int netproxy_config_decode(json_t *network_proxy, struct netproxy_config **ret, char *err,
			   size_t errsz)
{
	static const char *const modes[] = { "limited", "full", NULL };
	json_t *l[_L_MAX], *c[_C_MAX], *a[ELEMENTSOF(audit_fields)];
	struct netproxy_config *cfg;
	size_t len;
	int r;

	*ret = NULL;
	if (!network_proxy || json_is_null(network_proxy))
		return 0;
	if (json_is_array(network_proxy))
		return decode_sequence(network_proxy, ret, err, errsz);
	if (decode_fields(network_proxy, l, c, a, err, errsz) < 0)
		return -EINVAL;
	r = params_unit_enum(c[C_MODE], modes, err, errsz, &len);
	if (r < 0)
		return r;

	cfg = calloc(1, sizeof(*cfg));
	if (!cfg)
		return -ENOMEM;
	cfg->mode = r == 0 ? NP_MODE_LIMITED : NP_MODE_FULL;
	/* enabled is checked by netproxy_config_check (a decoded false is not a decoding error). */
	cfg->review = false;
	cfg->enable_socks5 = params_bool(c[C_SOCKS5], false);
	cfg->enable_socks5_udp = params_bool(c[C_SOCKS5_UDP], false);
	cfg->allow_upstream_proxy = params_bool(c[C_UPSTREAM], false);
	cfg->dangerously_allow_all_unix_sockets = params_bool(c[C_ALL_UNIX], false);
	cfg->allow_local_binding = params_bool(c[C_LOCAL], false);
	cfg->transparent_tcp = params_bool(c[C_TRANSPARENT], false);
	cfg->credential_masking = params_bool(c[C_MASKING], false);
	if (json_is_object(c[C_PROVIDERS]))
		cfg->providers = json_incref(c[C_PROVIDERS]);
	if (l[L_TIMEOUT]) {
		cfg->review = true;
		cfg->decision_timeout_ms = params_u64(l[L_TIMEOUT], 0);
	}
	cfg->disabled = !params_bool(c[C_ENABLED], false);
	if ((r = decode_domains(c[C_DOMAINS], cfg, err, errsz)) < 0 ||
	    (r = decode_unix(c[C_UNIX], cfg, err, errsz)) < 0 ||
	    (r = decode_providers(c[C_PROVIDERS], err, errsz)) < 0 ||
	    (r = strdup_opt(l[L_ENV_ID], &cfg->environment_id)) < 0 ||
	    (r = strdup_opt(l[L_EXEC_ID], &cfg->execution_id)) < 0 ||
	    (r = strdup_opt(a[0], &cfg->conversation_id)) < 0) {
		netproxy_config_free(cfg);
		return r;
	}
	cfg->source = json_incref(network_proxy);
	*ret = cfg;
	return 0;
}

void netproxy_config_free(struct netproxy_config *cfg)
{
	if (!cfg)
		return;
	for (size_t i = 0; i < cfg->n_domains; i++)
		free(cfg->domains[i].pattern);
	free(cfg->domains);
	for (size_t i = 0; i < cfg->n_unix_sockets; i++)
		free(cfg->unix_sockets[i].path);
	free(cfg->unix_sockets);
	free(cfg->environment_id);
	free(cfg->execution_id);
	free(cfg->conversation_id);
	json_decref(cfg->providers);
	json_decref(cfg->source);
	netproxy_broker_free(cfg->broker);
	free(cfg);
}

/* Rust's {:?} of a string, as the reference's messages quote paths and patterns. */
static void debug_quote(const char *s, char *out, size_t size)
{
	size_t o = 0;

	if (size < 3)
		return;
	out[o++] = '"';
	for (; *s && o + 12 < size; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			o += (size_t)snprintf(out + o, size - o, "\\%c", ch);
		else if (ch == '\n')
			o += (size_t)snprintf(out + o, size - o, "\\n");
		else if (ch == '\r')
			o += (size_t)snprintf(out + o, size - o, "\\r");
		else if (ch == '\t')
			o += (size_t)snprintf(out + o, size - o, "\\t");
		else if (ch < 0x20 || ch == 0x7f)
			o += (size_t)snprintf(out + o, size - o, "\\u{%x}", ch);
		else
			out[o++] = (char)ch;
	}
	out[o++] = '"';
	out[o] = 0;
}

int netproxy_config_check(const struct netproxy_config *cfg, bool managed_transparent_tcp,
			  char *err, size_t errsz)
{
	char q[PATH_MAX + 64];
	int r;

	if (managed_transparent_tcp) {
		snprintf(err, errsz, "transparent TCP requires an executor-local managed proxy");
		return -EINVAL;
	}
	if (!cfg)
		return 0;
	if (cfg->review && cfg->decision_timeout_ms == 0) {
		snprintf(err, errsz, "network policy decision callback timeout must be nonzero");
		return -EINVAL;
	}
	if (cfg->disabled) {
		snprintf(err, errsz, "invalid network proxy config: executor-local network proxy launch "
			 "requires an enabled proxy");
		return -EINVAL;
	}
	for (size_t i = 0, k = 0; i < cfg->n_unix_sockets; i++) {
		const char *p = cfg->unix_sockets[i].path;

		/* network.allow_unix_sockets: the index counts the allowed entries only */
		if (!cfg->unix_sockets[i].allow)
			continue;
		if (p[0] == '/') {
			k++;
			continue;
		}
		debug_quote(p, q, sizeof(q));
		snprintf(err, errsz, "invalid network proxy config: invalid "
			 "network.allow_unix_sockets[%zu]: expected a NUL-free absolute path for "
			 "Linux, got %s", k, q);
		return -EINVAL;
	}
	for (size_t i = 0; i < cfg->n_domains; i++) {
		char perr[512];

		if (cfg->domains[i].perm == NP_PERM_NONE)
			continue;
		r = netproxy_pattern_check(cfg->domains[i].pattern, cfg->domains[i].perm == NP_PERM_DENY,
				     perr, sizeof(perr));
		if (r < 0) {
			snprintf(err, errsz, "invalid network proxy config: %s", perr);
			return r;
		}
	}
	return 0;
}

