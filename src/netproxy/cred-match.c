/* SPDX-License-Identifier: MIT */
/*
 * Destinations and patterns of credential providers (cred-internal.h).
 * Patterns are written in Rust's regex syntax (the reference's); the subset
 * real token patterns use (literals, classes, \d \w \s, repetition,
 * groups, alternation, anchors) is translated to POSIX ERE for regcomp and
 * anything else makes the pattern invalid, which drops its provider as the
 * reference drops one with a pattern it cannot compile.
 */
#include <ctype.h>
#include <errno.h>
#include <sodium.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cred-internal.h"
#include "macro.h"
#include "policy.h"

static bool loopback(const char *host)
{
	return !strcmp(host, "localhost") || !strncmp(host, "127.", 4) || !strcmp(host, "::1");
}

int netproxy_cred_dest_parse(const char *s, bool wildcard, struct br_dest *d)
{
	const char *rest = s, *auth_end, *host, *colon = NULL, *slash;
	size_t host_len;
	bool bare = false;
	long port = 0;
	char raw[256];

	memset(d, 0, sizeof(*d));
	if (!strncmp(s, "https://", 8)) {
		d->https = true;
		rest = s + 8;
	} else if (!strncmp(s, "http://", 7)) {
		rest = s + 7;
	} else if (strstr(s, "://")) {
		return -EINVAL;
	} else {
		bare = true;
	}
	slash = strchr(rest, '/');
	auth_end = slash ? slash : rest + strlen(rest);
	for (const char *q = rest; *q; q++)
		if (*q == '?' || *q == '#' || *q == '@' || isspace((unsigned char)*q) ||
		    (unsigned char)*q < 0x20)
			return -EINVAL;
	host = rest;
	if (*host == '[') {
		const char *e = memchr(host, ']', (size_t)(auth_end - host));

		if (!e)
			return -EINVAL;
		if (e + 1 < auth_end) {
			if (e[1] != ':')
				return -EINVAL;
			colon = e + 1;
		}
		host_len = (size_t)(e + 1 - host);
	} else {
		colon = memchr(host, ':', (size_t)(auth_end - host));
		if (colon && memchr(colon + 1, ':', (size_t)(auth_end - colon - 1)))
			return -EINVAL; /* an unbracketed IPv6 address */
		host_len = colon ? (size_t)(colon - host) : (size_t)(auth_end - host);
	}
	if (colon) {
		char *end;

		if (colon + 1 == auth_end || !isdigit((unsigned char)colon[1]))
			return -EINVAL;
		port = strtol(colon + 1, &end, 10);
		if (end != auth_end || port < 1 || port > 65535)
			return -EINVAL;
	}
	if (host_len == 0 || host_len >= sizeof(raw))
		return -EINVAL;
	if (wildcard && host_len > 2 && host[0] == '*' && host[1] == '.') {
		d->wildcard = true;
		host++;
		host_len--;
	}
	memcpy(raw, host, host_len);
	raw[host_len] = 0;
	if (strchr(raw + (d->wildcard ? 1 : 0), '*') ||
	    !netproxy_normalize_host(raw, host_len, d->host, sizeof(d->host)))
		return -EINVAL;
	if (bare)
		d->https = !loopback(d->host);
	d->port = port ? (uint16_t)port : d->https ? 443 : 80;
	d->path = strdup(slash ? slash : "");
	return d->path ? 0 : -ENOMEM;
}

bool netproxy_cred_dest_match(const struct br_dest *d, bool https, const char *host, uint16_t port,
			      const char *path, size_t path_len)
{
	size_t n = strlen(d->path), hl = strlen(host), sl = strlen(d->host);

	if (d->https != https || d->port != port)
		return false;
	if (d->wildcard ? !(hl > sl && !strcmp(host + hl - sl, d->host)) : strcmp(host, d->host))
		return false;
	if (!n || !path)
		return true; /* no path prefix, or any path asked for */
	if (path_len < n || memcmp(path, d->path, n))
		return false;
	/* a prefix ends at a segment: /v1 covers /v1 and /v1/x, not /v1x */
	return d->path[n - 1] == '/' || path_len == n || path[n] == '/' || path[n] == '?' ||
	       path[n] == '#';
}

/* Appends s to out (room checked by the caller's sizing). */
static size_t put(char *out, size_t o, const char *s)
{
	size_t n = strlen(s);

	memcpy(out + o, s, n);
	return o + n;
}

/* Rust regex -> POSIX ERE; -EINVAL for what cannot be said. out has 8 * strlen(in) + 16 bytes. */
static int translate(const char *in, char *out)
{
	size_t o = put(out, 0, "^(");
	bool cls = false;

	for (const char *p = in; *p; p++) {
		char c = *p;

		if (cls) {
			if (c == ']') {
				cls = false;
				out[o++] = c;
			} else if (c == '[' && p[1] == ':') {
				const char *e = strstr(p, ":]");

				if (!e)
					return -EINVAL;
				memcpy(out + o, p, (size_t)(e + 2 - p));
				o += (size_t)(e + 2 - p);
				p = e + 1;
			} else if (c == '\\') {
				c = *++p;
				if (c == 'd')
					o = put(out, o, "0-9");
				else if (c == 'w')
					o = put(out, o, "A-Za-z0-9_");
				else if (c == 's')
					o = put(out, o, " \t\n\r\f\v");
				else if (c && ispunct((unsigned char)c) && !strchr("]-^\\[", c))
					out[o++] = c;
				else
					return -EINVAL;
			} else {
				out[o++] = c;
			}
			continue;
		}
		if (c == '\\') {
			c = *++p;
			if (c == 'd')
				o = put(out, o, "[0-9]");
			else if (c == 'D')
				o = put(out, o, "[^0-9]");
			else if (c && strchr("wWsSbB", c))
				out[o++] = '\\', out[o++] = c; /* glibc's GNU operators */
			else if (c == 'A')
				out[o++] = '^';
			else if (c == 'z')
				out[o++] = '$';
			else if (c && ispunct((unsigned char)c))
				out[o++] = '\\', out[o++] = c;
			else
				return -EINVAL;
		} else if (c == '(' && p[1] == '?') {
			return -EINVAL; /* flags, non-capturing and named groups */
		} else if (c == '[') {
			cls = true;
			out[o++] = c;
			if (p[1] == '^')
				out[o++] = *++p;
			if (p[1] == ']')
				out[o++] = *++p;
		} else if ((c == '*' || c == '+' || c == '?' || c == '}') && p[1] == '?') {
			return -EINVAL; /* lazy repetition */
		} else {
			out[o++] = c;
		}
	}
	if (cls)
		return -EINVAL;
	o = put(out, o, ")$");
	out[o] = 0;
	return 0;
}

/*
 * regcomp unrolls counted repetitions: a client's pattern is bounded by the
 * size it unrolls to (atoms, each repetition multiplying what it repeats;
 * bounds at most 64 as the reference's), its nesting by PAT_DEPTH.
 */
#define PAT_COST_MAX 10000
#define PAT_REPEAT_MAX 64
#define PAT_DEPTH 32
#define PAT_DRAWS 64	  /* placeholders drawn before a pattern is given up on */
#define PAT_DRAW_MAX 2048 /* a placeholder's bytes at most (the reference's) */

static size_t cost_alt(const char **p, int depth);

static size_t cost_atom(const char **p, int depth)
{
	size_t c;

	switch (**p) {
	case '(':
		(*p)++;
		if (depth >= PAT_DEPTH)
			return SIZE_MAX;
		c = cost_alt(p, depth + 1);
		if (**p != ')')
			return SIZE_MAX;
		(*p)++;
		return c;
	case '[':
		(*p)++;
		if (**p == '^')
			(*p)++;
		if (**p == ']')
			(*p)++;
		while (**p && **p != ']') {
			const char *e = (*p)[0] == '[' && (*p)[1] == ':' ? strstr(*p, ":]") : NULL;

			*p = e ? e + 2 : (*p)[0] == '\\' && (*p)[1] ? *p + 2 : *p + 1;
		}
		if (**p == ']')
			(*p)++;
		return 1;
	case '\\':
		*p += (*p)[1] ? 2 : 1;
		return 1;
	default:
		(*p)++;
		return 1;
	}
}

static size_t cost_seq(const char **p, int depth)
{
	size_t total = 0;

	while (**p && **p != '|' && **p != ')') {
		size_t a = cost_atom(p, depth);

		while (a <= PAT_COST_MAX) {
			if (**p == '*' || **p == '+' || **p == '?') {
				a *= 2;
				(*p)++;
			} else if (**p == '{' && isdigit((unsigned char)(*p)[1])) {
				char *end;
				unsigned long n = strtoul(*p + 1, &end, 10), m = n + 1;

				if (*end == ',' && isdigit((unsigned char)end[1]))
					m = strtoul(end + 1, &end, 10);
				else if (*end == ',')
					end++;
				if (*end != '}' || n > PAT_REPEAT_MAX || m > PAT_REPEAT_MAX + 1)
					return SIZE_MAX;
				a *= MAX(m, 1ul);
				*p = end + 1;
			} else {
				break;
			}
		}
		if (a > PAT_COST_MAX || (total += a) > PAT_COST_MAX)
			return SIZE_MAX;
	}
	return total;
}

static size_t cost_alt(const char **p, int depth)
{
	size_t total = cost_seq(p, depth);

	while (**p == '|' && total <= PAT_COST_MAX) {
		size_t c;

		(*p)++;
		c = cost_seq(p, depth);
		total = c > PAT_COST_MAX ? SIZE_MAX : total + c;
	}
	return total;
}

/* Whether the pattern is small enough to compile: balanced, bounded nesting and size. */
static bool pattern_bounded(const char *pattern)
{
	const char *p = pattern;

	return cost_alt(&p, 0) <= PAT_COST_MAX && *p == 0;
}

int netproxy_cred_pattern_compile(const char *pattern, struct br_pattern *p)
{
	size_t n = strlen(pattern);
	char *ere = malloc(8 * n + 16);
	int r, flags = REG_EXTENDED | REG_NOSUB;

	p->icase = false;
	p->src = NULL;
	if (!ere)
		return -ENOMEM;
	/* a leading (?i): the whole pattern ignores case (the one flag group said in POSIX) */
	if (!strncmp(pattern, "(?i)", 4)) {
		pattern += 4;
		flags |= REG_ICASE;
		p->icase = true;
	}
	r = pattern_bounded(pattern) ? translate(pattern, ere) : -EINVAL;
	if (r == 0 && regcomp(&p->re, ere, flags) != 0)
		r = -EINVAL;
	free(ere);
	if (r < 0)
		return r;
	/* the reference's rule: a pattern that matches an empty value is refused */
	if (regexec(&p->re, "", 0, NULL, 0) == 0) {
		regfree(&p->re);
		return -EINVAL;
	}
	p->src = strdup(pattern - (p->icase ? 4 : 0));
	if (!p->src) {
		regfree(&p->re);
		return -ENOMEM;
	}
	/* the reference's rule: a pattern no placeholder can be drawn from is refused */
	{
		char probe[PAT_DRAW_MAX + 1];

		if (netproxy_cred_pattern_draw(p, probe, sizeof(probe)) < 0) {
			netproxy_cred_pattern_done(p);
			return -EINVAL;
		}
		sodium_memzero(probe, sizeof(probe));
	}
	return 0;
}

void netproxy_cred_pattern_done(struct br_pattern *p)
{
	if (!p->src)
		return;
	regfree(&p->re);
	free(p->src);
	p->src = NULL;
}

int netproxy_cred_pattern_draw(const struct br_pattern *p, char *out, size_t cap)
{
	for (int t = 0; t < PAT_DRAWS; t++)
		if (netproxy_cred_generate(p->src, out, cap) == 0 &&
		    netproxy_cred_pattern_full_match(p, out))
			return 0;
	return -EINVAL;
}

bool netproxy_cred_pattern_full_match(const struct br_pattern *p, const char *v)
{
	return regexec(&p->re, v, 0, NULL, 0) == 0;
}
