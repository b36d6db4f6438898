/* SPDX-License-Identifier: MIT */
/*
 * The environment registry client's codec (see registry.h). Upstream is
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
static const char *trim(const char *s, size_t *len)
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

static bool blank(const char *s)
{
	size_t n = strlen(s);

	trim(s, &n);
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
	const char *s = trim(remote, &n);
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
	const char *s = trim(id, &n);
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

static bool ieq_prefix(const char *s, const char *prefix)
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

int registry_url_parse(const char *base, struct registry_url *ret, const char **reason)
{
	const char *p, *auth, *auth_end, *host, *host_end, *port = NULL;
	size_t plen;

	*ret = (struct registry_url){ 0 };
	for (p = base; *p; p++) {
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
	if (ieq_prefix(base, "https://")) {
		ret->tls = true;
		auth = base + 8;
	} else if (ieq_prefix(base, "http://")) {
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
	if (*auth == '[') {
		char buf[INET6_ADDRSTRLEN + 1];
		struct in6_addr a;

		host = auth + 1;
		host_end = memchr(host, ']', (size_t)(auth_end - host));
		if (!host_end || (size_t)(host_end - host) >= sizeof(buf)) {
			*reason = "registry URL has a bad IPv6 literal";
			return -EINVAL;
		}
		memcpy(buf, host, (size_t)(host_end - host));
		buf[host_end - host] = 0;
		if (inet_pton(AF_INET6, buf, &a) != 1) {
			*reason = "registry URL has a bad IPv6 literal";
			return -EINVAL;
		}
		ret->ipv6 = true;
		p = host_end + 1;
		if (p != auth_end && *p != ':') {
			*reason = "registry URL has a bad IPv6 literal";
			return -EINVAL;
		}
		if (p != auth_end)
			port = p + 1;
	} else {
		host = auth;
		host_end = memchr(auth, ':', (size_t)(auth_end - auth));
		if (host_end)
			port = host_end + 1;
		else
			host_end = auth_end;
		for (p = host; p < host_end; p++) {
			char c = *p;

			if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
			      c == '-' || c == '.' || c == '_')) {
				*reason = "registry URL host has a character outside [A-Za-z0-9._-]";
				return -EINVAL;
			}
		}
	}
	if (host_end == host) {
		*reason = "registry URL has an empty host";
		return -EINVAL;
	}
	ret->port = ret->tls ? 443 : 80;
	if (port) {
		unsigned long v = 0;

		if (port == auth_end || auth_end - port > 5) {
			*reason = "registry URL has a bad port";
			return -EINVAL;
		}
		for (p = port; p < auth_end; p++) {
			if (*p < '0' || *p > '9') {
				*reason = "registry URL has a bad port";
				return -EINVAL;
			}
			v = v * 10 + (unsigned long)(*p - '0');
		}
		if (v == 0 || v > 65535) {
			*reason = "registry URL has a bad port";
			return -EINVAL;
		}
		ret->port = (uint16_t)v;
	}
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

/* ---- responses ---- */

/*
 * Duplicate members are refused (serde refuses a duplicate known field; we
 * also refuse duplicate unknown ones). NUL is allowed in strings so that the
 * authorization may hold it; other strings holding NUL are refused. jansson
 * refuses a NUL in an object key outright, which serde would ignore as an
 * unknown member: stricter, never laxer.
 */
static json_t *load(const char *body, size_t len, const char **reason)
{
	json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);

	if (!json_is_object(root)) {
		json_decref(root);
		*reason = "registry response is not a JSON object";
		return NULL;
	}
	return root;
}

/* A required string member without NUL, copied into *ret. */
static int get_str(const json_t *o, const char *name, char **ret, const char *why,
		   const char **reason)
{
	const json_t *v = json_object_get(o, name);

	if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v)) {
		*reason = why;
		return -EBADMSG;
	}
	*ret = strdup(json_string_value(v));
	if (!*ret) {
		*reason = "out of memory";
		return -ENOMEM;
	}
	return 0;
}

/*
 * transport_policy (environment_registry.rs): absent → version 0, epoch
 * "legacy"; present → an object whose version (u32), assignment_epoch
 * (default "off") and the two booleans (default false) are optional. null,
 * another type or an out-of-range version is refused, as serde does.
 */
static int get_policy(const json_t *o, struct registry_policy *ret, const char **reason)
{
	const json_t *p = json_object_get(o, "transport_policy"), *v;
	const char *epoch = "off";

	*ret = (struct registry_policy){ 0 };
	if (!p) {
		ret->assignment_epoch = strdup("legacy");
		goto done;
	}
	if (!json_is_object(p)) {
		*reason = "transport_policy is not an object";
		return -EBADMSG;
	}
	v = json_object_get(p, "version");
	if (v) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > (json_int_t)UINT32_MAX) {
			*reason = "transport_policy.version is not a u32";
			return -EBADMSG;
		}
		ret->version = (uint32_t)json_integer_value(v);
	}
	v = json_object_get(p, "assignment_epoch");
	if (v) {
		if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v)) {
			*reason = "transport_policy.assignment_epoch is not a string";
			return -EBADMSG;
		}
		epoch = json_string_value(v);
	}
	v = json_object_get(p, "outbound_tcp_nodelay");
	if (v && !json_is_boolean(v)) {
		*reason = "transport_policy.outbound_tcp_nodelay is not a boolean";
		return -EBADMSG;
	}
	ret->outbound_tcp_nodelay = json_is_true(v);
	v = json_object_get(p, "rendezvous_accepted_tcp_nodelay");
	if (v && !json_is_boolean(v)) {
		*reason = "transport_policy.rendezvous_accepted_tcp_nodelay is not a boolean";
		return -EBADMSG;
	}
	ret->rendezvous_accepted_tcp_nodelay = json_is_true(v);
	ret->assignment_epoch = strdup(epoch);
done:
	if (!ret->assignment_epoch) {
		*reason = "out of memory";
		return -ENOMEM;
	}
	return 0;
}

enum registry_policy_state registry_policy_state(const struct registry_policy *p)
{
	if (p->version == 0)
		return REGISTRY_POLICY_LEGACY;
	if (p->version != REGISTRY_POLICY_VERSION)
		return REGISTRY_POLICY_UNKNOWN;
	return p->assignment_epoch && strcmp(p->assignment_epoch, "off") == 0 ?
		       REGISTRY_POLICY_INACTIVE :
		       REGISTRY_POLICY_ACTIVE;
}

bool registry_policy_outbound_nodelay(const struct registry_policy *p)
{
	return registry_policy_state(p) == REGISTRY_POLICY_ACTIVE && p->outbound_tcp_nodelay;
}

bool registry_policy_accepted_nodelay(const struct registry_policy *p)
{
	return registry_policy_state(p) == REGISTRY_POLICY_ACTIVE &&
	       p->rendezvous_accepted_tcp_nodelay;
}

/*
 * The rendezvous URL must be ws:// or wss:// (any case) with something after
 * the "//" that is not '/'. Upstream leaves this to its WebSocket client;
 * checking it here refuses a bad registration before any connect.
 */
static bool ws_url(const char *u)
{
	const char *rest = ieq_prefix(u, "wss://") ? u + 6 : ieq_prefix(u, "ws://") ? u + 5 : NULL;

	return rest && *rest && *rest != '/';
}

/* The members both responses share: their types first (as serde), then upstream's checks. */
static int common_types(const json_t *o, char **env, char **url, char **reg_id,
			const char **reason)
{
	int r;

	if ((r = get_str(o, "environment_id", env, "environment_id missing or not a string", reason)) < 0 ||
	    (r = get_str(o, "url", url, "url missing or not a string", reason)) < 0 ||
	    (r = get_str(o, "executor_registration_id", reg_id,
			 "executor_registration_id missing or not a string", reason)) < 0)
		return r;
	if (!json_is_string(json_object_get(o, "security_profile"))) {
		*reason = "security_profile missing or not a string";
		return -EBADMSG;
	}
	return 0;
}

static int common_checks(const json_t *o, const char *environment_id, const char *env,
			 const char **reason)
{
	const json_t *profile = json_object_get(o, "security_profile");

	if (strcmp(env, environment_id) != 0) {
		*reason = "environment registry returned a different environment id";
		return -EXDEV;
	}
	if (json_string_length(profile) != strlen(REGISTRY_SECURITY_PROFILE) ||
	    strcmp(json_string_value(profile), REGISTRY_SECURITY_PROFILE) != 0) {
		*reason = "environment registry returned an unsupported security profile";
		return -EPROTONOSUPPORT;
	}
	return 0;
}

int registry_parse_registration(const char *body, size_t len, const char *environment_id,
				struct registry_registration *ret, const char **reason)
{
	json_t *o = load(body, len, reason);
	int r;

	*ret = (struct registry_registration){ 0 };
	if (!o)
		return -EBADMSG;
	r = common_types(o, &ret->environment_id, &ret->url, &ret->executor_registration_id, reason);
	if (r >= 0)
		r = get_policy(o, &ret->policy, reason);
	if (r >= 0)
		r = common_checks(o, environment_id, ret->environment_id, reason);
	json_decref(o);
	if (r >= 0 && (blank(ret->url) || blank(ret->executor_registration_id))) {
		*reason = "environment registry returned a blank url or executor_registration_id";
		r = -ENODATA;
	}
	if (r >= 0 && !ws_url(ret->url)) {
		*reason = "rendezvous url is not ws:// or wss://";
		r = -EAFNOSUPPORT;
	}
	if (r < 0)
		registry_registration_done(ret);
	return r;
}

static void policy_done(struct registry_policy *p)
{
	free(p->assignment_epoch);
	*p = (struct registry_policy){ 0 };
}

void registry_registration_done(struct registry_registration *r)
{
	free(r->environment_id);
	free(r->url);
	free(r->executor_registration_id);
	policy_done(&r->policy);
	*r = (struct registry_registration){ 0 };
}

int registry_parse_connection(const char *body, size_t len, const char *environment_id,
			      struct registry_connection *ret, const char **reason)
{
	json_t *o = load(body, len, reason);
	const json_t *a;
	char *copy = NULL;
	size_t n;
	int r;

	*ret = (struct registry_connection){ 0 };
	if (!o)
		return -EBADMSG;
	r = common_types(o, &ret->environment_id, &ret->url, &ret->executor_registration_id, reason);
	if (r < 0)
		goto out;
	a = json_object_get(o, "harness_key_authorization");
	if (!json_is_string(a)) {
		*reason = "harness_key_authorization missing or not a string";
		r = -EBADMSG;
		goto out;
	}
	if (!json_object_get(o, "executor_public_key")) {
		*reason = "executor_public_key missing";
		r = -EBADMSG;
		goto out;
	}
	{
		char why[128]; /* names a member or a length, never a value; not passed on */

		r = channel_public_key_parse(json_object_get(o, "executor_public_key"),
					     &ret->executor_public_key, why, sizeof(why));
		if (r == -ENOMEM) {
			*reason = "out of memory";
			goto out;
		}
		if (r < 0) {
			*reason = "executor_public_key is not a valid Noise channel public key";
			r = -ENOKEY;
			goto out;
		}
	}
	r = get_policy(o, &ret->policy, reason);
	if (r < 0)
		goto out;
	n = json_string_length(a);
	copy = malloc(n + 1);
	if (!copy) {
		*reason = "out of memory";
		r = -ENOMEM;
		goto out;
	}
	memcpy(copy, json_string_value(a), n);
	copy[n] = 0;
	ret->authorization = copy;
	ret->authorization_len = n;
	r = common_checks(o, environment_id, ret->environment_id, reason);
	if (r < 0)
		goto out;
	if (blank(ret->url) || blank(ret->executor_registration_id) ||
	    (trim(copy, &n), n == 0)) {
		*reason = "environment registry returned incomplete Noise connection data";
		r = -ENODATA;
	} else if (!ws_url(ret->url)) {
		*reason = "rendezvous url is not ws:// or wss://";
		r = -EAFNOSUPPORT;
	} else if (ret->authorization_len > REGISTRY_AUTHORIZATION_MAX) {
		/* it becomes msg1's payload, which the executor caps (§4.2, §6.5) */
		*reason = "harness_key_authorization is over 4096 bytes";
		r = -EMSGSIZE;
	}
out:
	/* jansson frees its copy of the authorization without wiping it; nothing to do there */
	json_decref(o);
	if (r < 0)
		registry_connection_done(ret);
	return r;
}

void registry_connection_done(struct registry_connection *c)
{
	free(c->environment_id);
	free(c->url);
	free(c->executor_registration_id);
	if (c->authorization) {
		sodium_memzero(c->authorization, c->authorization_len);
		free(c->authorization);
	}
	policy_done(&c->policy);
	sodium_memzero(&c->executor_public_key, sizeof(c->executor_public_key));
	*c = (struct registry_connection){ 0 };
}

int registry_parse_validation(const char *body, size_t len, const char **reason)
{
	json_t *o = load(body, len, reason);
	const json_t *v;
	int r;

	if (!o)
		return -EBADMSG;
	v = json_object_get(o, "valid");
	if (!json_is_boolean(v)) {
		*reason = "valid missing or not a boolean";
		r = -EBADMSG;
	} else if (!json_is_true(v)) {
		*reason = "environment registry rejected Noise relay harness key";
		r = -EKEYREJECTED;
	} else {
		r = 0;
	}
	json_decref(o);
	return r;
}

/* ---- errors ---- */

/* Length of the valid UTF-8 character at s (n bytes left, not NUL), or 0. */
static size_t utf8_char(const unsigned char *s, size_t n)
{
	size_t k = s[0] < 0x80 ? 1 : (s[0] & 0xE0) == 0xC0 ? 2 : (s[0] & 0xF0) == 0xE0 ? 3 :
					 (s[0] & 0xF8) == 0xF0 ? 4 : 0;

	if (s[0] == 0 || k == 0 || k > n || !utf8_is_valid(s, k))
		return 0;
	return k;
}

/*
 * Copies at most cap bytes of s[0..n) into out (cap + 1 bytes), whole
 * characters only; an invalid byte or a NUL becomes U+FFFD (as upstream's
 * lossy response.text(), and so a C string cannot be cut short by it).
 */
static void sanitize(const char *s, size_t n, char *out, size_t cap, size_t max_chars)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0, chars = 0;

	while (n > 0 && chars++ < max_chars) {
		size_t k = utf8_char(p, n), emit = k ? k : 3;

		if (o + emit > cap)
			break;
		if (k)
			memcpy(out + o, p, k);
		else
			memcpy(out + o, "\xEF\xBF\xBD", 3);
		o += emit;
		p += k ? k : 1;
		n -= k ? k : 1;
	}
	out[o] = 0;
}

/* {"error":{"code"?,"message"?}} with optional (nullable) string members, as RegistryErrorBody. */
static json_t *error_object(const char *body, size_t len)
{
	json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL), *e, *m;

	if (!json_is_object(root))
		goto bad;
	e = json_object_get(root, "error");
	if (e && !json_is_null(e)) {
		if (!json_is_object(e))
			goto bad;
		m = json_object_get(e, "code");
		if (m && !json_is_null(m) && !json_is_string(m))
			goto bad;
		m = json_object_get(e, "message");
		if (m && !json_is_null(m) && !json_is_string(m))
			goto bad;
	}
	return root;
bad:
	json_decref(root);
	return NULL;
}

static const json_t *member_str(const json_t *root, const char *name)
{
	const json_t *v = json_object_get(json_object_get(root, "error"), name);

	return json_is_string(v) ? v : NULL;
}

void registry_error_parse(int status, const char *body, size_t len, struct registry_error *ret)
{
	json_t *root = error_object(body, len);
	const json_t *code = member_str(root, "code"), *msg = member_str(root, "message");
	size_t tlen = len;
	const char *t = trim(body, &tlen);

	*ret = (struct registry_error){ .status = status, .auth = status == 401 || status == 403 };
	if (code)
		sanitize(json_string_value(code), json_string_length(code), ret->code,
			 sizeof(ret->code) - 1, sizeof(ret->code) - 1);
	if (msg)
		sanitize(json_string_value(msg), json_string_length(msg), ret->message,
			 sizeof(ret->message) - 1, REGISTRY_ERROR_PREVIEW);
	else if (tlen > 0)
		sanitize(t, tlen, ret->message, sizeof(ret->message) - 1, REGISTRY_ERROR_PREVIEW);
	else
		snprintf(ret->message, sizeof(ret->message), "%s",
			 ret->auth || json_object_get(root, "error") ? "empty error body" :
								       "empty or malformed error body");
	json_decref(root);
}

void registry_error_parse_redacted(int status, const char *body, size_t len,
				   struct registry_error *ret)
{
	json_t *root = error_object(body, len);
	const json_t *code = member_str(root, "code");

	*ret = (struct registry_error){ .status = status, .auth = status == 401 || status == 403 };
	if (code && json_string_length(code) < sizeof(ret->code)) {
		const char *c = json_string_value(code);
		size_t n = json_string_length(code), i;

		for (i = 0; i < n; i++)
			if (!((c[i] >= 'A' && c[i] <= 'Z') || (c[i] >= 'a' && c[i] <= 'z') ||
			      (c[i] >= '0' && c[i] <= '9') || c[i] == '_' || c[i] == '.' || c[i] == '-'))
				break;
		if (i == n)
			memcpy(ret->code, c, n + 1);
	}
	snprintf(ret->message, sizeof(ret->message), "%s",
		 ret->auth ? "environment registry harness key validation authentication failed" :
			     "environment registry harness key validation failed");
	json_decref(root);
}

bool registry_should_retry_register(int status, const char *code)
{
	return status == 503 && code && strcmp(code, "registration_conflict") == 0;
}

/* ---- delays ---- */

void registry_backoff_init(struct registry_backoff *b)
{
	b->next_ms = REGISTRY_BACKOFF_INITIAL_MS;
}

uint32_t registry_backoff_next(struct registry_backoff *b)
{
	uint32_t d = b->next_ms;

	b->next_ms = d >= REGISTRY_BACKOFF_MAX_MS / 2 ? REGISTRY_BACKOFF_MAX_MS : 2 * d;
	return d;
}

void registry_backoff_reset(struct registry_backoff *b)
{
	registry_backoff_init(b);
}

int registry_conflict_retry_init(struct registry_conflict_retry *r)
{
	if (sodium_init() < 0)
		return -EIO;
	randombytes_buf(r->key, sizeof(r->key));
	r->attempt = 0;
	return 0;
}

/*
 * Upstream hashes (random UUID, attempt) with Rust's DefaultHasher; we key
 * SipHash-2-4 (crypto_shorthash) with 16 random bytes per run and hash the
 * attempt (4 bytes, little endian): the same bounds, the same per-run spread.
 */
uint32_t registry_conflict_retry_delay_ms(const uint8_t key[REGISTRY_CONFLICT_KEY_BYTES],
					  uint32_t attempt)
{
	_Static_assert(REGISTRY_CONFLICT_KEY_BYTES == crypto_shorthash_KEYBYTES, "SipHash key size");
	uint8_t in[4] = { (uint8_t)attempt, (uint8_t)(attempt >> 8), (uint8_t)(attempt >> 16),
			  (uint8_t)(attempt >> 24) };
	uint8_t h[crypto_shorthash_BYTES];
	uint32_t base = REGISTRY_CONFLICT_INITIAL_MS << (attempt < 4 ? attempt : 4);
	uint64_t v = 0;

	if (base > REGISTRY_CONFLICT_MAX_MS)
		base = REGISTRY_CONFLICT_MAX_MS;
	crypto_shorthash(h, in, sizeof(in), key);
	for (size_t i = 0; i < sizeof(h); i++)
		v |= (uint64_t)h[i] << (8 * i);
	return base + (uint32_t)(v % (base / 2 + 1));
}

uint32_t registry_conflict_retry_next(struct registry_conflict_retry *r)
{
	uint32_t d = registry_conflict_retry_delay_ms(r->key, r->attempt);

	if (r->attempt < UINT32_MAX)
		r->attempt++;
	return d;
}
