/* SPDX-License-Identifier: MIT */
/*
 * Credential masking for the managed network proxy
 * (networkProxy.proxy.credentialMasking / credentialProviders,
 * docs/NETWORK-PROXY.md "Credential masking"): the command gets
 * placeholders instead of recognised credentials in its environment, and the
 * proxy puts the real value back only into the request headers of the
 * destinations the credential is bound to. One broker per process; the real
 * values live only in its memory (wiped when it is freed) and are never
 * logged. Pure: no I/O.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct np_broker;

/*
 * Compiles the built-in providers and the custom ones of providers (the
 * decoded credentialProviders object, or NULL). A custom provider that
 * breaks a rule is dropped with a log line naming its id and the rule, as
 * the reference does (never an RPC error). Returns 0 with *ret or -ENOMEM.
 */
int netproxy_broker_new(json_t *providers, struct np_broker **ret);
void netproxy_broker_free(struct np_broker *b);

/*
 * Replaces the recognised credentials in *envp (a NULL-terminated malloc'd
 * "NAME=value" vector) by placeholders, and sets the two broker markers
 * (CODEX_NETWORK_PROXY_CREDENTIAL_BROKER_ACTIVE,
 * CODEX_NETWORK_PROXY_BROKERED_CREDENTIALS). Returns 0 or -ENOMEM.
 */
int netproxy_broker_mask_env(struct np_broker *b, char ***envp);

/* How many credentials were registered by netproxy_broker_mask_env(). */
size_t netproxy_broker_count(const struct np_broker *b);

/*
 * True when some credential is bound to host:port over https (or plain
 * http): a tunnel there must be intercepted for the credential to be put back.
 */
bool netproxy_broker_binds(const struct np_broker *b, bool https, const char *host, uint16_t port);

/*
 * The value a request header should carry toward https?/host:port/path:
 * when name/value hold a placeholder in one of the bound credential's
 * authorization forms, *ret is a malloc'd value with the real credential and
 * 1 is returned; 0 when the header stays as it is; -ENOMEM. host is the
 * proxy's normalised host; path the request target (origin form).
 */
int netproxy_broker_translate(const struct np_broker *b, bool https, const char *host,
			      uint16_t port, const char *path, size_t path_len, const char *name,
			      size_t name_len, const char *value, size_t value_len, char **ret);
