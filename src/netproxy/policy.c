/* SPDX-License-Identifier: MIT */
/*
 * Host policy of the managed network's proxy. Hand-written: the rules are
 * the reference's own (a glob dialect, its normalisation and its address
 * ranges), which no library implements; fnmatch(3) differs on dots,
 * brackets and case.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "netproxy-config.h"
#include "policy.h"

#define HOST_MAX 256

struct np_pattern {
	char *glob;     /* normalised; '*' any run, '?' one character */
	bool any;       /* "*": every host */
	bool apex;      /* "**.D": D itself too (glob holds "?*.D") */
	bool literal;   /* no wildcard: an explicit host (local literals need one) */
};

struct np_policy {
	struct np_pattern *allow, *deny;
	size_t n_allow, n_deny;
	bool allow_local_binding;
};

/* ---- normalisation ---- */

/* Rust's Ipv6Addr Display: RFC 5952, dotted quad only for IPv4-mapped addresses. */
static void format_v6(const struct in6_addr *a, char *out, size_t size)
{
	uint16_t w[8];
	int best = -1, best_len = 0, o = 0;

	for (int i = 0; i < 8; i++)
		w[i] = (uint16_t)(a->s6_addr[2 * i] << 8 | a->s6_addr[2 * i + 1]);
	if (!w[0] && !w[1] && !w[2] && !w[3] && !w[4] && w[5] == 0xffff) {
		snprintf(out, size, "::ffff:%u.%u.%u.%u", a->s6_addr[12], a->s6_addr[13],
			 a->s6_addr[14], a->s6_addr[15]);
		return;
	}
	for (int i = 0; i < 8;) {
		int j = i;

		while (j < 8 && !w[j])
			j++;
		if (j - i > best_len && j - i >= 2) {
			best = i;
			best_len = j - i;
		}
		i = j > i ? j : i + 1;
	}
	out[0] = 0;
	for (int i = 0; i < 8; i++) {
		if (i == best) {
			o += snprintf(out + o, size - (size_t)o, "::");
			i += best_len - 1;
			continue;
		}
		o += snprintf(out + o, size - (size_t)o, "%s%x",
			      o && out[o - 1] != ':' ? ":" : "", w[i]);
	}
}

/* A strict dotted quad (four decimal parts 0-255, no leading zeros but "0"). */
static bool strict_v4(const char *s, struct in_addr *a)
{
	unsigned part = 0, digits = 0, parts = 0;

	for (const char *p = s;; p++) {
		if (*p >= '0' && *p <= '9') {
			if (digits && part == 0)
				return false; /* leading zero */
			part = part * 10 + (unsigned)(*p - '0');
			if (++digits > 3 || part > 255)
				return false;
		} else if (*p == '.' || !*p) {
			if (!digits || ++parts > 4)
				return false;
			digits = part = 0;
			if (!*p)
				break;
		} else {
			return false;
		}
	}
	return parts == 4 && inet_pton(AF_INET, s, a) == 1;
}

size_t netproxy_normalize_host(const char *in, size_t len, char *out, size_t size)
{
	char buf[HOST_MAX];
	const char *s = in, *e = in + len, *colon;
	size_t n;
	struct in6_addr a6;
	struct in_addr a4;

	while (s < e && isspace((unsigned char)*s))
		s++;
	while (e > s && isspace((unsigned char)e[-1]))
		e--;
	if (s < e && *s == '[') {
		const char *close = memchr(s, ']', (size_t)(e - s));

		if (close) {
			char v6[INET6_ADDRSTRLEN + 1];
			const char *zone = memchr(s + 1, '%', (size_t)(close - s - 1));
			size_t k = (size_t)((zone ? zone : close) - s - 1);

			s++;
			e = close;
			/* only an IPv6 literal (or the pattern "[*]") may be bracketed */
			if (!(close - s == 1 && *s == '*')) {
				if (k >= sizeof(v6))
					return 0;
				memcpy(v6, s, k);
				v6[k] = 0;
				if (inet_pton(AF_INET6, v6, &a6) != 1)
					return 0;
			}
		}
	} else if ((colon = memchr(s, ':', (size_t)(e - s))) &&
		   !memchr(colon + 1, ':', (size_t)(e - colon - 1))) {
		e = colon; /* exactly one ':': a port */
	}
	n = (size_t)(e - s);
	if (n == 0 || n >= sizeof(buf))
		return 0;
	for (size_t i = 0; i < n; i++) {
		/* no host holds a control byte, a space or a NUL (nor does the reference ask about one) */
		if ((unsigned char)s[i] <= 0x20 || s[i] == 0x7f)
			return 0;
		buf[i] = (char)tolower((unsigned char)s[i]);
	}
	while (n && buf[n - 1] == '.')
		n--;
	buf[n] = 0;
	if (n == 0)
		return 0;
	if (strchr(buf, ':') && !strchr(buf, '%') && inet_pton(AF_INET6, buf, &a6) == 1)
		format_v6(&a6, buf, sizeof(buf));
	else if (strict_v4(buf, &a4))
		inet_ntop(AF_INET, &a4, buf, sizeof(buf));
	n = strlen(buf);
	if (n >= size)
		return 0;
	memcpy(out, buf, n + 1);
	return n;
}

/* ---- patterns ---- */

static int pattern_error(char *err, size_t errsz, const char *what, const char *p)
{
	snprintf(err, errsz, "%s%s", what, p);
	return -EINVAL;
}

int netproxy_pattern_check(const char *p, bool deny, char *err, size_t errsz)
{
	const char *rep;

	for (const char *c = p; *c; c++)
		if (strchr("{}\\/", *c) || isspace((unsigned char)*c))
			return pattern_error(err, errsz, "unsupported domain pattern syntax: ", p);
	if (p[0] == '[') {
		const char *close = strchr(p, ']');

		/* [IPv6] or [*], optionally followed by ":port" or dots */
		if (!close || (close[1] && close[1] != ':' && close[1] != '.'))
			return pattern_error(err, errsz,
					     "brackets are only supported for IPv6 literals or [*]: ", p);
	}
	rep = strstr(p, "**");
	if (rep && !(rep == p && strncmp(p, "**.", 3) == 0 && !strstr(p + 2, "**")))
		return pattern_error(err, errsz, "unsupported repeated wildcard: ", p);
	{
		char norm[HOST_MAX];
		const char *body = p;

		if (strncmp(body, "**.", 3) == 0)
			body += 3;
		else if (strncmp(body, "*.", 2) == 0)
			body += 2;
		if (!netproxy_normalize_host(body, strlen(body), norm, sizeof(norm)))
			return pattern_error(err, errsz, "domain pattern is empty", "");
		if (deny && body == p && strcmp(norm, "*") == 0)
			goto global;
		if (deny && body != p && p[1] == '*' && strcmp(norm, "*") == 0)
			goto global; /* "**.*" */
	}
	return 0;
global:
	snprintf(err, errsz, "invalid value for network.denied_domains: %s (allowed exact hosts or "
		 "scoped wildcards like *.example.com or **.example.com)", p);
	return -EINVAL;
}

static int compile(const char *p, struct np_pattern *ret)
{
	char norm[HOST_MAX];
	const char *body = p;
	bool sub = false;

	memset(ret, 0, sizeof(*ret));
	if (strncmp(body, "**.", 3) == 0) {
		body += 3;
		sub = ret->apex = true;
	} else if (strncmp(body, "*.", 2) == 0) {
		body += 2;
		sub = true;
	}
	if (!netproxy_normalize_host(body, strlen(body), norm, sizeof(norm)))
		return -EINVAL;
	if (!sub && strcmp(norm, "*") == 0) {
		ret->any = true;
		return 0;
	}
	ret->literal = !sub && !strpbrk(norm, "*?");
	if (sub) {
		if (asprintf(&ret->glob, "?*.%s", norm) < 0)
			return -ENOMEM;
	} else if (!(ret->glob = strdup(norm))) {
		return -ENOMEM;
	}
	return 0;
}

/* Whole-string glob: '*' any run (dots included), '?' one character (a UTF-8 sequence). */
static bool glob_match(const char *g, const char *s)
{
	const char *star = NULL, *back = NULL;

	while (*s) {
		if (*g == '*') {
			star = g++;
			back = s;
		} else if (*g == '?' || *g == *s) {
			if (*g == '?')
				while (((unsigned char)s[1] & 0xc0) == 0x80)
					s++;
			g++;
			s++;
		} else if (star) {
			g = star + 1;
			s = ++back;
		} else {
			return false;
		}
	}
	while (*g == '*')
		g++;
	return !*g;
}

static bool pattern_match(const struct np_pattern *p, const char *host)
{
	if (p->any)
		return true;
	if (p->apex && strcmp(p->glob + 3, host) == 0)
		return true;
	return glob_match(p->glob, host);
}

int netproxy_policy_new(const struct netproxy_config *cfg, struct np_policy **ret, char *err, size_t errsz)
{
	struct np_policy *p = calloc(1, sizeof(*p));
	int r = -ENOMEM;

	if (!p)
		return -ENOMEM;
	p->allow_local_binding = cfg->allow_local_binding;
	p->allow = calloc(cfg->n_domains + 1, sizeof(*p->allow));
	p->deny = calloc(cfg->n_domains + 1, sizeof(*p->deny));
	if (!p->allow || !p->deny)
		goto fail;
	for (size_t i = 0; i < cfg->n_domains; i++) {
		const struct np_domain *d = &cfg->domains[i];

		if (d->perm == NP_PERM_NONE)
			continue;
		r = netproxy_pattern_check(d->pattern, d->perm == NP_PERM_DENY, err, errsz);
		if (r < 0)
			goto fail;
		if (d->perm == NP_PERM_DENY)
			r = compile(d->pattern, &p->deny[p->n_deny++]);
		else
			r = compile(d->pattern, &p->allow[p->n_allow++]);
		if (r < 0)
			goto fail;
	}
	*ret = p;
	return 0;
fail:
	netproxy_policy_free(p);
	return r;
}

void netproxy_policy_free(struct np_policy *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n_allow; i++)
		free(p->allow[i].glob);
	for (size_t i = 0; i < p->n_deny; i++)
		free(p->deny[i].glob);
	free(p->allow);
	free(p->deny);
	free(p);
}

/* ---- addresses ---- */

static bool v4_public(uint32_t a)
{
	static const struct {
		uint32_t net;
		int bits;
	} local[] = {
		{ 0x7f000000, 8 },  { 0x0a000000, 8 },  { 0xac100000, 12 }, { 0xc0a80000, 16 },
		{ 0xa9fe0000, 16 }, { 0x00000000, 8 },  { 0xe0000000, 4 },  { 0xffffffff, 32 },
		{ 0x64400000, 10 }, { 0xc0000000, 24 }, { 0xc0000200, 24 }, { 0xc6120000, 15 },
		{ 0xc6336400, 24 }, { 0xcb007100, 24 }, { 0xf0000000, 4 },
	};

	for (size_t i = 0; i < ELEMENTSOF(local); i++)
		if ((a & (uint32_t)(0xffffffffu << (32 - local[i].bits))) == local[i].net)
			return false;
	return true;
}

static bool v6_public(const struct in6_addr *a)
{
	const uint8_t *b = a->s6_addr;
	static const uint8_t zero[10];

	/* IPv4-mapped ::ffff:a.b.c.d and IPv4-compatible ::a.b.c.d: the IPv4 rule (Rust's to_ipv4) */
	if (!memcmp(b, zero, 10) && ((b[10] == 0xff && b[11] == 0xff) || (!b[10] && !b[11]))) {
		bool unspecified_or_loopback = !b[10] && !b[12] && !b[13] && !b[14] && b[15] <= 1;

		if (!unspecified_or_loopback)
			return v4_public((uint32_t)b[12] << 24 | (uint32_t)b[13] << 16 |
					 (uint32_t)b[14] << 8 | b[15]);
		return false; /* :: and ::1 */
	}
	if (b[0] == 0xff)                        /* ff00::/8 */
		return false;
	if ((b[0] & 0xfe) == 0xfc)               /* fc00::/7 */
		return false;
	if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) /* fe80::/10 */
		return false;
	return true;
}

bool netproxy_addr_public(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return v4_public(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
	if (sa->sa_family == AF_INET6)
		return v6_public(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return false;
}

/* A host that is "local" as a literal: localhost, or a non-public IP literal. */
static bool local_literal(const char *host)
{
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in s4 = { .sin_family = AF_INET };

	if (strcmp(host, "localhost") == 0)
		return true;
	if (inet_pton(AF_INET, host, &s4.sin_addr) == 1)
		return !netproxy_addr_public((struct sockaddr *)&s4);
	if (inet_pton(AF_INET6, host, &s6.sin6_addr) == 1)
		return !netproxy_addr_public((struct sockaddr *)&s6);
	return false;
}

static bool ip_literal(const char *host)
{
	uint8_t a[16];

	return inet_pton(AF_INET, host, a) == 1 || inet_pton(AF_INET6, host, a) == 1;
}

enum np_verdict netproxy_policy_decide(const struct np_policy *p, const char *host)
{
	bool allowed = false;

	if (!host[0])
		return NP_NOT_ALLOWED;
	for (size_t i = 0; i < p->n_deny; i++)
		if (pattern_match(&p->deny[i], host))
			return NP_DENIED;
	if (!p->allow_local_binding && local_literal(host)) {
		for (size_t i = 0; i < p->n_allow; i++)
			if (p->allow[i].literal && strcmp(p->allow[i].glob, host) == 0)
				return NP_ALLOW;
		return NP_NOT_ALLOWED_LOCAL;
	}
	for (size_t i = 0; i < p->n_allow && !allowed; i++)
		allowed = pattern_match(&p->allow[i], host);
	if (!allowed)
		return NP_NOT_ALLOWED;
	return p->allow_local_binding || ip_literal(host) ? NP_ALLOW : NP_ALLOW_IF_PUBLIC;
}

const char *netproxy_verdict_reason(enum np_verdict v)
{
	return v == NP_DENIED ? "denied" : v == NP_NOT_ALLOWED_LOCAL ? "not_allowed_local"
		: v == NP_NOT_ALLOWED ? "not_allowed" : "allow";
}

const char *netproxy_verdict_header(enum np_verdict v)
{
	return v == NP_DENIED ? "blocked-by-denylist" : "blocked-by-allowlist";
}

const char *netproxy_verdict_message(enum np_verdict v)
{
	return v == NP_DENIED ? "Domain denied by the sandbox policy."
	       : v == NP_NOT_ALLOWED_LOCAL ? "Sandbox policy blocks local/private network addresses."
					   : "Domain not in allowlist.";
}
