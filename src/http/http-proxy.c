/* SPDX-License-Identifier: MIT */
/*
 * The proxy an http/request goes through, from the server's environment as
 * the reference's HTTP client (reqwest) reads it: ALL_PROXY (else all_proxy)
 * for both schemes, overridden per scheme by HTTP_PROXY (else http_proxy)
 * and HTTPS_PROXY (else https_proxy); a value that is no http:// proxy URL
 * ("host:port" is one) counts as unset. NO_PROXY (else no_proxy): a
 * comma-separated list of "*", host names (which match the name and its
 * subdomains; a leading "." or "*." too) and IP addresses or CIDR blocks.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base64.h"
#include "http-req.h"

/* The first set variable of names (a NULL-terminated list), or NULL. */
static const char *first_env(const char *const *names)
{
	for (; *names; names++) {
		const char *v = getenv(*names);

		if (v && *v)
			return v;
	}
	return NULL;
}

/* Parses a proxy URL: "http://[user[:pw]@]host[:port]" or "host[:port]". 0, -EINVAL, -ENOMEM. */
static int parse_proxy(const char *v, struct http_proxy *p)
{
	struct http_url_parts u;
	char *url = NULL;
	int q;

	if (!strstr(v, "://")) {
		if (asprintf(&url, "http://%s", v) < 0)
			return -ENOMEM;
		v = url;
	}
	q = http_url_parts_parse(v, strlen(v), &u, NULL, NULL, 0);
	free(url);
	if (q < 0)
		return q == -ENOMEM ? q : -EINVAL;
	if (u.tls) {
		/* A TLS hop to the proxy itself: not made (the request goes direct). */
		http_url_parts_done(&u);
		return -EINVAL;
	}
	p->host = u.host;
	u.host = NULL;
	p->ipv6 = u.ipv6;
	p->port = u.port;
	if (u.user) {
		const char *pw = u.password ? u.password : "";
		size_t ul = strlen(u.user), pl = strlen(pw);
		char *plain = malloc(ul + 1 + pl);

		p->auth = malloc(6 + base64_encoded_len(ul + 1 + pl) + 1);
		if (!plain || !p->auth) {
			free(plain);
			http_url_parts_done(&u);
			return -ENOMEM;
		}
		memcpy(plain, u.user, ul);
		plain[ul] = ':';
		memcpy(plain + ul + 1, pw, pl);
		memcpy(p->auth, "Basic ", 6);
		p->auth[6 + base64_encode((const uint8_t *)plain, ul + 1 + pl, p->auth + 6)] = '\0';
		explicit_bzero(plain, ul + 1 + pl);
		free(plain);
	}
	http_url_parts_done(&u);
	return 0;
}

/* host (lower case, an IP literal or a name) against one NO_PROXY entry e[0..n). */
static bool no_proxy_entry(const char *host, bool ipv6, const char *e, size_t n)
{
	char buf[128];
	uint8_t want[16], have[16];
	int af = ipv6 ? AF_INET6 : AF_INET, bits = -1, len = ipv6 ? 16 : 4;
	char *slash;

	if (n == 1 && e[0] == '*')
		return true;
	if (n == 0 || n >= sizeof(buf))
		return false;
	memcpy(buf, e, n);
	buf[n] = '\0';
	slash = strchr(buf, '/');
	if (slash) {
		*slash = '\0';
		bits = atoi(slash + 1);
	}
	if (inet_pton(af, host, have) == 1) {
		if (inet_pton(af, buf[0] == '[' ? buf + 1 : buf, want) != 1) {
			/* "[::1]" written with brackets */
			char *rb = strchr(buf, ']');

			if (!rb)
				return false;
			*rb = '\0';
			if (inet_pton(af, buf + 1, want) != 1)
				return false;
		}
		if (bits < 0 || bits > len * 8)
			bits = len * 8;
		for (int i = 0; i < len && bits > 0; i++, bits -= 8) {
			uint8_t mask = bits >= 8 ? 0xff : (uint8_t)(0xff << (8 - bits));

			if ((have[i] & mask) != (want[i] & mask))
				return false;
		}
		return true;
	}
	if (slash)
		return false;
	/* A name: itself or a subdomain; ".example.com" and "*.example.com" too. */
	{
		const char *d = buf;
		size_t hl = strlen(host), dl;

		if (d[0] == '*' && d[1] == '.')
			d++;
		if (d[0] == '.')
			d++;
		dl = strlen(d);
		if (dl == 0 || dl > hl)
			return false;
		if (strcasecmp(host + hl - dl, d) != 0)
			return false;
		return hl == dl || host[hl - dl - 1] == '.';
	}
}

static bool no_proxy(const struct http_url_parts *u)
{
	static const char *const names[] = { "NO_PROXY", "no_proxy", NULL };
	const char *v = first_env(names);

	while (v && *v) {
		size_t n = strcspn(v, ","), a = 0, b = n;

		while (a < b && (v[a] == ' ' || v[a] == '\t'))
			a++;
		while (b > a && (v[b - 1] == ' ' || v[b - 1] == '\t'))
			b--;
		if (no_proxy_entry(u->host, u->ipv6, v + a, b - a))
			return true;
		v += n;
		if (*v == ',')
			v++;
	}
	return false;
}

int http_proxy_for(const struct http_url_parts *u, struct http_proxy *ret)
{
	static const char *const all[] = { "ALL_PROXY", "all_proxy", NULL };
	static const char *const http[] = { "HTTP_PROXY", "http_proxy", NULL };
	static const char *const https[] = { "HTTPS_PROXY", "https_proxy", NULL };
	const char *v;
	int q = -EINVAL;

	*ret = (struct http_proxy){ 0 };
	v = first_env(u->tls ? https : http);
	if (v)
		q = parse_proxy(v, ret);
	if (q == -EINVAL) {
		http_proxy_done(ret);
		v = first_env(all);
		if (v)
			q = parse_proxy(v, ret);
	}
	if (q < 0) {
		http_proxy_done(ret);
		return q == -ENOMEM ? q : 0;
	}
	if (no_proxy(u)) {
		http_proxy_done(ret);
		return 0;
	}
	return 1;
}

void http_proxy_done(struct http_proxy *p)
{
	free(p->host);
	if (p->auth)
		explicit_bzero(p->auth, strlen(p->auth));
	free(p->auth);
	*p = (struct http_proxy){ 0 };
}
