/* SPDX-License-Identifier: MIT */
/*
 * The managed network's host policy (docs/netproxy-semantics-notes.md §2-3):
 * patterns with the reference's syntax and errors, host normalisation,
 * denylist precedence, explicit local literals, and the non-public address
 * ranges. Pure: no I/O; the proxy resolves names itself and hands the
 * answers to np_addrs_public().
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

struct netproxy_config;
struct np_policy;

enum np_verdict {
	NP_ALLOW,             /* allowlisted (a local literal explicitly, or a public literal) */
	NP_ALLOW_IF_PUBLIC,   /* allowlisted name: allowed if every address it resolves to is public */
	NP_DENIED,            /* "denied": a denylist match */
	NP_NOT_ALLOWED,       /* "not_allowed": not in the allowlist (the client may be asked) */
	NP_NOT_ALLOWED_LOCAL, /* "not_allowed_local": a local or private target */
};

/*
 * Compiles cfg's domains. Returns 0 with *ret, -EINVAL with the reference's
 * message (without the "invalid network proxy config: " prefix) in err, or
 * -ENOMEM.
 */
int netproxy_policy_new(const struct netproxy_config *cfg, struct np_policy **ret, char *err, size_t errsz);
void netproxy_policy_free(struct np_policy *p);

/* One pattern's syntax (either list; deny refuses the global wildcards too). */
int netproxy_pattern_check(const char *pattern, bool deny, char *err, size_t errsz);

/*
 * The reference's host normalisation: whitespace trimmed, [v6] unbracketed
 * (what follows dropped), a single ":port" dropped, ASCII lower case,
 * trailing dots stripped; IP literals (strict dotted quad, IPv6) printed
 * canonically as Rust does. Returns the length written to out (NUL
 * terminated), or 0 when empty or it does not fit.
 */
size_t netproxy_normalize_host(const char *in, size_t len, char *out, size_t size);

/* The decision for a normalised host, before any DNS. */
enum np_verdict netproxy_policy_decide(const struct np_policy *p, const char *host);

/* True when the address is public (none of the reference's local/private ranges). */
bool netproxy_addr_public(const struct sockaddr *sa);

/* The wire texts: reason, x-proxy-error and message of a refusal verdict. */
const char *netproxy_verdict_reason(enum np_verdict v);
const char *netproxy_verdict_header(enum np_verdict v);
const char *netproxy_verdict_message(enum np_verdict v);
