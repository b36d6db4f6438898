/* SPDX-License-Identifier: MIT */
/*
 * The environment registry client's codec (see registry.h): text helpers,
 * base URL, environment id, request paths and bodies. Responses and errors
 * are in registry-response.c, delays in registry-delay.c. Upstream is
 * codex-rs/exec-server/src/remote.rs and environment_registry.rs (RELAY.md
 * REG, REM); where it is silent or we are stricter, the comment says so.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "channel.h"
#include "registry-text.h"
#include "registry.h"
#include "utf8.h"

/* ---- Unicode whitespace (Rust's str::trim: the White_Space property) ---- */

/* Length of the White_Space character starting at s (n bytes left), or 0. */
static size_t ws_at(const unsigned char *s, size_t n)
{
	uint32_t c;

	if (n == 0)
		return 0;
	if (s[0] < 0x80)
		return (s[0] >= 0x09 && s[0] <= 0x0D) || s[0] == 0x20;
	if (n >= 2 && s[0] == 0xC2 && (s[1] == 0x85 || s[1] == 0xA0))
		return 2;
	if (n < 3 || (s[0] & 0xF0) != 0xE0 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80)
		return 0;
	c = (uint32_t)(s[0] & 0x0F) << 12 | (uint32_t)(s[1] & 0x3F) << 6 | (s[2] & 0x3F);
	if (c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
	    c == 0x202F || c == 0x205F || c == 0x3000)
		return 3;
	return 0;
}

/* Trims s[0..*len) in place of its bounds: returns the new start, updates *len. */
const char *registry_trim(const char *s, size_t *len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = *len, w;

	while ((w = ws_at(p, n)) > 0) {
		p += w;
		n -= w;
	}
	while (n > 0) {
		/* a White_Space character is 1 to 3 bytes: find where the last one starts */
		size_t back = 1;

		while (back < n && back < 3 && (p[n - back] & 0xC0) == 0x80)
			back++;
		if (ws_at(p + n - back, back) != back)
			break;
		n -= back;
	}
	*len = n;
	return (const char *)p;
}

bool registry_blank(const char *s)
{
	size_t n = strlen(s);

	registry_trim(s, &n);
	return n == 0;
}

static char *dup_n(const char *s, size_t n)
{
	char *r = malloc(n + 1);

	if (r) {
		memcpy(r, s, n);
		r[n] = 0;
	}
	return r;
}

/* ---- base URL, environment id, request paths ---- */

char *registry_base_url(const char *remote, int *ret_errno, const char **reason)
{
	size_t n = strlen(remote);
	const char *s = registry_trim(remote, &n);
	char *r;

	while (n > 0 && s[n - 1] == '/')
		n--;
	if (n == 0) {
		*ret_errno = -EINVAL;
		*reason = "environment registry base URL is required";
		return NULL;
	}
	r = dup_n(s, n);
	if (!r) {
		*ret_errno = -ENOMEM;
		*reason = "out of memory";
	}
	return r;
}

char *registry_environment_id(const char *id, int *ret_errno, const char **reason)
{
	size_t n = strlen(id);
	const char *s = registry_trim(id, &n);
	char *r;

	if (n == 0) {
		*ret_errno = -EINVAL;
		*reason = "environment id is required for remote exec-server registration";
		return NULL;
	}
	r = dup_n(s, n);
	if (!r) {
		*ret_errno = -ENOMEM;
		*reason = "out of memory";
	}
	return r;
}

static const char *op_name(enum registry_op op)
{
	switch (op) {
	case REGISTRY_REGISTER:
		return "register";
	case REGISTRY_VALIDATE:
		return "validate";
	case REGISTRY_CONNECT:
		return "connect";
	}
	return NULL;
}

/*
 * RELAY.md does not say how the id goes into the path. Upstream formats it
 * raw (format!("/cloud/environment/{environment_id}/register")) and lets the
 * url crate parse the result, so a '/', '?', '#' or '%' in an id would change
 * the request's path or add a query. We are conservative: everything but
 * RFC 3986's unreserved characters (ALPHA DIGIT - . _ ~) is percent-encoded
 * (%XX, upper case), so the id is always exactly one path segment. For the
 * ids seen in practice (letters, digits, '-', '_') this is byte-identical to
 * upstream. "." and ".." alone would still be dot segments: they are encoded
 * as %2E so no client or proxy normalises them away.
 */
static char *encode_segment(const char *id)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(id);
	bool dots = strcmp(id, ".") == 0 || strcmp(id, "..") == 0;
	char *r = malloc(3 * n + 1), *o = r;

	if (!r)
		return NULL;
	for (const unsigned char *p = (const unsigned char *)id; *p; p++) {
		unsigned char c = *p;

		if (!dots && ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			      (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~')) {
			*o++ = (char)c;
		} else {
			*o++ = '%';
			*o++ = hex[c >> 4];
			*o++ = hex[c & 15];
		}
	}
	*o = 0;
	return r;
}

char *registry_request_path(const char *environment_id, enum registry_op op)
{
	const char *name = op_name(op);
	char *seg, *r = NULL;

	if (!name)
		return NULL;
	seg = encode_segment(environment_id);
	if (seg && asprintf(&r, "/cloud/environment/%s/%s", seg, name) < 0)
		r = NULL;
	free(seg);
	return r;
}

char *registry_request_url(const char *base, const char *environment_id, enum registry_op op)
{
	char *path = registry_request_path(environment_id, op), *r = NULL;

	/* upstream's endpoint_url(): "{base}/{path without its leading '/'}" */
	if (path && asprintf(&r, "%s%s", base, path) < 0)
		r = NULL;
	free(path);
	return r;
}

bool registry_ieq_prefix(const char *s, const char *prefix)
{
	for (; *prefix; s++, prefix++) {
		char c = *s;

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c != *prefix)
			return false;
	}
	return true;
}

/* Printable ASCII only, no query or fragment. */
static int url_chars(const char *base, const char **reason)
{
	for (const char *p = base; *p; p++) {
		unsigned char c = (unsigned char)*p;

		if (c <= 0x20 || c >= 0x7F) {
			*reason = "registry URL holds whitespace, control or non-ASCII characters";
			return -EINVAL;
		}
		if (c == '?' || c == '#') {
			*reason = "registry URL may not have a query or fragment";
			return -EINVAL;
		}
	}
	return 0;
}

/* "[v6]" or "[v6]:port" of auth[0..auth_end): the host's bounds and where a port starts. */
static int url_ipv6_host(const char *auth, const char *auth_end, const char **host,
			 const char **host_end, const char **port, const char **reason)
{
	char buf[INET6_ADDRSTRLEN + 1];
	struct in6_addr a;
	const char *p;

	*host = auth + 1;
	*host_end = memchr(*host, ']', (size_t)(auth_end - *host));
	if (!*host_end || (size_t)(*host_end - *host) >= sizeof(buf))
		goto bad;
	memcpy(buf, *host, (size_t)(*host_end - *host));
	buf[*host_end - *host] = 0;
	if (inet_pton(AF_INET6, buf, &a) != 1)
		goto bad;
	p = *host_end + 1;
	if (p != auth_end && *p != ':')
		goto bad;
	if (p != auth_end)
		*port = p + 1;
	return 0;
bad:
	*reason = "registry URL has a bad IPv6 literal";
	return -EINVAL;
}

/* A name or IPv4 host ([A-Za-z0-9._-]), then optionally ":port". */
static int url_name_host(const char *auth, const char *auth_end, const char **host,
			 const char **host_end, const char **port, const char **reason)
{
	*host = auth;
	*host_end = memchr(auth, ':', (size_t)(auth_end - auth));
	if (*host_end)
		*port = *host_end + 1;
	else
		*host_end = auth_end;
	for (const char *p = *host; p < *host_end; p++) {
		char c = *p;

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '.' || c == '_')) {
			*reason = "registry URL host has a character outside [A-Za-z0-9._-]";
			return -EINVAL;
		}
	}
	return 0;
}

/* 1-5 digits, 1..65535. */
static int url_port(const char *port, const char *end, uint16_t *ret, const char **reason)
{
	unsigned long v = 0;

	if (port == end || end - port > 5)
		goto bad;
	for (const char *p = port; p < end; p++) {
		if (*p < '0' || *p > '9')
			goto bad;
		v = v * 10 + (unsigned long)(*p - '0');
	}
	if (v == 0 || v > 65535)
		goto bad;
	*ret = (uint16_t)v;
	return 0;
bad:
	*reason = "registry URL has a bad port";
	return -EINVAL;
}

int registry_url_parse(const char *base, struct registry_url *ret, const char **reason)
{
	const char *auth, *auth_end, *host, *host_end, *port = NULL;
	size_t plen;
	int q;

	*ret = (struct registry_url){ 0 };
	q = url_chars(base, reason);
	if (q < 0)
		return q;
	if (registry_ieq_prefix(base, "https://")) {
		ret->tls = true;
		auth = base + 8;
	} else if (registry_ieq_prefix(base, "http://")) {
		auth = base + 7;
	} else {
		*reason = "registry URL scheme must be http or https";
		return -EINVAL;
	}
	auth_end = strchr(auth, '/');
	if (!auth_end)
		auth_end = auth + strlen(auth);
	if (memchr(auth, '@', (size_t)(auth_end - auth))) {
		*reason = "registry URL may not carry user info";
		return -EINVAL;
	}
	ret->ipv6 = *auth == '[';
	q = ret->ipv6 ? url_ipv6_host(auth, auth_end, &host, &host_end, &port, reason)
		      : url_name_host(auth, auth_end, &host, &host_end, &port, reason);
	if (q < 0)
		return q;
	if (host_end == host) {
		*reason = "registry URL has an empty host";
		return -EINVAL;
	}
	ret->port = ret->tls ? 443 : 80;
	if (port && (q = url_port(port, auth_end, &ret->port, reason)) < 0)
		return q;
	plen = strlen(auth_end);
	while (plen > 0 && auth_end[plen - 1] == '/')
		plen--;
	ret->host = dup_n(host, (size_t)(host_end - host));
	ret->path = dup_n(auth_end, plen);
	if (!ret->host || !ret->path) {
		registry_url_done(ret);
		*reason = "out of memory";
		return -ENOMEM;
	}
	return 0;
}

void registry_url_done(struct registry_url *u)
{
	free(u->host);
	free(u->path);
	*u = (struct registry_url){ 0 };
}

/* ---- request bodies ---- */

static char *dump(json_t *o)
{
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;

	json_decref(o);
	return s;
}

/* Sets name to v (stolen); a NULL v (OOM) fails. */
static int put(json_t *o, const char *name, json_t *v)
{
	return o && v ? json_object_set_new(o, name, v) : (json_decref(v), -1);
}

char *registry_register_body(const struct noise_public *executor)
{
	json_t *o = json_object();

	if (put(o, "security_profile", json_string(REGISTRY_SECURITY_PROFILE)) < 0 ||
	    put(o, "executor_public_key", channel_public_key_json(executor)) < 0) {
		json_decref(o);
		return NULL;
	}
	return dump(o);
}

char *registry_validate_body(const char *registration_id, const struct noise_public *harness,
			     const char *authorization, size_t authorization_len, int *ret_errno)
{
	json_t *o, *id;
	char *s;

	if (authorization_len > REGISTRY_AUTHORIZATION_MAX) {
		*ret_errno = -EMSGSIZE;
		return NULL;
	}
	if (!utf8_is_valid((const uint8_t *)authorization, authorization_len)) {
		*ret_errno = -EILSEQ;
		return NULL;
	}
	if (!utf8_is_valid((const uint8_t *)registration_id, strlen(registration_id))) {
		*ret_errno = -EILSEQ;
		return NULL;
	}
	o = json_object();
	id = json_string(registration_id);
	if (put(o, "executor_registration_id", id) < 0 ||
	    put(o, "harness_public_key", channel_public_key_json(harness)) < 0 ||
	    put(o, "harness_key_authorization", json_stringn(authorization, authorization_len)) < 0) {
		json_decref(o);
		*ret_errno = -ENOMEM;
		return NULL;
	}
	s = dump(o);
	if (!s)
		*ret_errno = -ENOMEM;
	return s;
}

char *registry_connect_body(const struct noise_public *harness)
{
	json_t *o = json_object();

	if (put(o, "harness_public_key", channel_public_key_json(harness)) < 0) {
		json_decref(o);
		return NULL;
	}
	return dump(o);
}
