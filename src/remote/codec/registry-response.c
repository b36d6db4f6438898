/* SPDX-License-Identifier: MIT */
/*
 * The registry's answers (see registry.h): register, connect and validate
 * responses with RELAY.md §7.1/§7.3's checks, and non-2xx error bodies (§7.4).
 */
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
	const char *rest = registry_ieq_prefix(u, "wss://") ? u + 6 : registry_ieq_prefix(u, "ws://") ? u + 5 : NULL;

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
	if (r >= 0 && (registry_blank(ret->url) || registry_blank(ret->executor_registration_id))) {
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
	if (registry_blank(ret->url) || registry_blank(ret->executor_registration_id) ||
	    (registry_trim(copy, &n), n == 0)) {
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
	const char *t = registry_trim(body, &tlen);

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
