/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base64.h"
#include "upstream.h"

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Percent-decodes s[0..n) into out (room for n + 1). Returns the length, or -1. */
static long pct_decode(const char *s, size_t n, char *out)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		if (s[i] != '%') {
			out[o++] = s[i];
			continue;
		}
		if (i + 2 >= n || hexval(s[i + 1]) < 0 || hexval(s[i + 2]) < 0)
			return -1;
		out[o++] = (char)(hexval(s[i + 1]) << 4 | hexval(s[i + 2]));
		i += 2;
	}
	out[o] = 0;
	return (long)o;
}

static int set_auth(struct np_upstream *u, const char *ui, size_t n)
{
	static const char pre[] = "Basic ";
	char *plain = malloc(n + 1);
	long len;

	if (!plain)
		return -ENOMEM;
	len = pct_decode(ui, n, plain);
	if (len < 0) {
		free(plain);
		return -EINVAL;
	}
	/* "user" alone means an empty password (user:) */
	if (!memchr(plain, ':', (size_t)len)) {
		plain[len++] = ':';
	}
	u->auth = malloc(sizeof(pre) - 1 + base64_encoded_len((size_t)len) + 1);
	if (!u->auth) {
		free(plain);
		return -ENOMEM;
	}
	memcpy(u->auth, pre, sizeof(pre) - 1);
	u->auth[sizeof(pre) - 1 + base64_encode((const uint8_t *)plain, (size_t)len,
						 u->auth + sizeof(pre) - 1)] = 0;
	explicit_bzero(plain, n + 1);
	free(plain);
	return 0;
}

int netproxy_upstream_parse(const char *url, struct np_upstream *u)
{
	const char *p = url, *at, *end, *host, *hend, *colon = NULL;
	size_t hl;
	int r;

	memset(u, 0, sizeof(*u));
	if (strstr(p, "://")) {
		if (strncasecmp(p, "http://", 7) != 0)
			return -EPROTONOSUPPORT;
		p += 7;
	}
	end = p + strcspn(p, "/?#");
	at = memrchr(p, '@', (size_t)(end - p));
	if (at && (r = set_auth(u, p, (size_t)(at - p))) < 0)
		return r;
	host = at ? at + 1 : p;
	if (*host == '[') {
		hend = memchr(host, ']', (size_t)(end - host));
		if (!hend)
			goto bad;
		host++;
		colon = hend + 1 < end && hend[1] == ':' ? hend + 1 : NULL;
		if (hend + 1 < end && !colon)
			goto bad;
	} else {
		colon = memchr(host, ':', (size_t)(end - host));
		hend = colon ? colon : end;
	}
	hl = (size_t)(hend - host);
	if (hl == 0 || hl >= sizeof(u->host) || memchr(host, ' ', hl))
		goto bad;
	memcpy(u->host, host, hl);
	u->host[hl] = 0;
	u->port = 80;
	if (colon) {
		unsigned long v = 0;
		const char *d = colon + 1;

		if (d == end)
			goto bad;
		for (; d < end; d++) {
			if (*d < '0' || *d > '9' || (v = v * 10 + (unsigned)(*d - '0')) > 65535)
				goto bad;
		}
		if (v == 0)
			goto bad;
		u->port = (uint16_t)v;
	}
	return 0;
bad:
	netproxy_upstream_done(u);
	return -EINVAL;
}

void netproxy_upstream_done(struct np_upstream *u)
{
	if (u->auth) {
		explicit_bzero(u->auth, strlen(u->auth));
		free(u->auth);
	}
	u->auth = NULL;
}

const char *netproxy_upstream_env(bool tunnel, const char **name)
{
	static const char *const tunnel_order[] = { "HTTPS_PROXY", "https_proxy", "HTTP_PROXY",
						    "http_proxy", "ALL_PROXY", "all_proxy", NULL };
	const char *const *order = tunnel ? tunnel_order : tunnel_order + 2;

	for (; *order; order++) {
		const char *v = getenv(*order);

		if (v && *v) {
			*name = *order;
			return v;
		}
	}
	*name = NULL;
	return NULL;
}
