/* SPDX-License-Identifier: MIT */
/*
 * The broker at work (credentials.h): placeholders into the command's
 * environment, real values back into the request headers of bound
 * destinations. Only the authorization forms a provider declares are
 * rewritten, and only when the header holds exactly a placeholder where the
 * form puts the credential: a placeholder anywhere else (another header, the
 * URL, the body) or toward any other destination is left as it is, so the
 * secret never leaves for a host it is not bound to.
 */
#include <errno.h>
#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cred-internal.h"
#include "credentials.h"
#include "macro.h"
#include "policy.h"

#define ACTIVE_KEY "CODEX_NETWORK_PROXY_CREDENTIAL_BROKER_ACTIVE"
#define BROKERED_KEY "CODEX_NETWORK_PROXY_BROKERED_CREDENTIALS"
#define MIN_EMBEDDED 16	      /* a credential this long is also replaced inside longer values */
#define BASIC_MAX (16 * 1024) /* a Basic header longer than this is left alone */

static bool key_is(const char *entry, const char *key)
{
	size_t n = strlen(key);

	return !strncmp(entry, key, n) && entry[n] == '=';
}

static ssize_t env_find(char **env, const char *key)
{
	for (size_t i = 0; env && env[i]; i++)
		if (key_is(env[i], key))
			return (ssize_t)i;
	return -1;
}

/* s with every from replaced by to (malloc'd), or NULL. */
static char *replace_all(const char *s, const char *from, const char *to)
{
	size_t fl = strlen(from), tl = strlen(to), n = 0, o = 0;
	char *out;

	for (const char *q = strstr(s, from); q; q = strstr(q + fl, from))
		n++;
	out = malloc(strlen(s) + n * tl + 1);
	if (!out)
		return NULL;
	for (const char *q; (q = strstr(s, from)); s = q + fl) {
		memcpy(out + o, s, (size_t)(q - s));
		o += (size_t)(q - s);
		memcpy(out + o, to, tl);
		o += tl;
	}
	strcpy(out + o, s);
	return out;
}

static int set_entry(char **slot, const char *key, size_t key_len, const char *value)
{
	char *e;

	if (asprintf(&e, "%.*s=%s", (int)key_len, key, value) < 0)
		return -ENOMEM;
	free(*slot);
	*slot = e;
	return 0;
}

/* Step 1: every provider's variables holding one of its credentials get a placeholder. */
static int mask_sources(struct np_broker *b, char **env, ssize_t *via)
{
	for (size_t i = 0; i < b->n_prov; i++) {
		const struct br_provider *p = &b->prov[i];
		struct br_dest dyn = {0};
		bool has_dyn = false;
		ssize_t k;

		if (p->dest_env && (k = env_find(env, p->dest_env)) >= 0) {
			int r = netproxy_cred_dest_parse(env[k] + strlen(p->dest_env) + 1, false,
							 &dyn);

			if (r == -ENOMEM)
				return r;
			/* the built-in destinations are https only */
			has_dyn = r == 0 && (dyn.https || !p->builtin);
		}
		if (!p->n_dests && !has_dyn) {
			free(dyn.path);
			continue;
		}
		for (size_t j = 0; j < p->n_env; j++) {
			const char *dummy, *v;
			char *real;
			size_t n;

			if ((k = env_find(env, p->env[j])) < 0)
				continue;
			v = env[k] + strlen(p->env[j]) + 1;
			while (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r')
				v++;
			n = strlen(v);
			while (n && (v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '\n' ||
				     v[n - 1] == '\r'))
				n--;
			real = strndup(v, n);
			if (!real) {
				free(dyn.path);
				return -ENOMEM;
			}
			dummy = netproxy_cred_recognised(p, real) &&
						!netproxy_cred_is_dummy(b, real)
					? netproxy_cred_register(b, p, p->env[j], real,
								 has_dyn ? &dyn : NULL)
					: NULL;
			sodium_memzero(real, n);
			free(real);
			if (dummy && set_entry(&env[k], p->env[j], strlen(p->env[j]), dummy) < 0) {
				free(dyn.path);
				return -ENOMEM;
			}
			for (size_t c = 0; dummy && c < b->n_creds; c++)
				if (b->creds[c].dummy == dummy)
					via[k] = (ssize_t)c;
		}
		free(dyn.path);
	}
	return 0;
}

/* Step 2: any other value equal to a credential, or holding a long one, gets its placeholder. */
static int mask_copies(struct np_broker *b, char **env, ssize_t *via)
{
	for (size_t i = 0; env[i]; i++) {
		char *eq = strchr(env[i], '=');

		if (!eq || key_is(env[i], ACTIVE_KEY) || key_is(env[i], BROKERED_KEY))
			continue;
		for (size_t j = 0; j < b->n_creds; j++) {
			const struct br_cred *c = &b->creds[j];
			char *v = strchr(env[i], '=') + 1, *nv;

			if (strcmp(v, c->real) &&
			    (strlen(c->real) < MIN_EMBEDDED || !strstr(v, c->real)))
				continue;
			nv = replace_all(v, c->real, c->dummy);
			if (!nv || set_entry(&env[i], env[i],
					     (size_t)(strchr(env[i], '=') - env[i]), nv) < 0) {
				free(nv);
				return -ENOMEM;
			}
			free(nv);
			via[i] = (ssize_t)j;
		}
	}
	return 0;
}

static int pair_cmp(const void *a, const void *b)
{
	const char *x = json_string_value(json_array_get(*(json_t *const *)a, 0));
	const char *y = json_string_value(json_array_get(*(json_t *const *)b, 0));

	return strcmp(x, y);
}

/*
 * The marker listing [key, placeholder] pairs: "@alias:KEY" for every
 * variable rewritten (with the placeholder put in it), "KEY" for every
 * provider variable holding a placeholder, sorted by key (the reference's
 * list).
 */
static char *brokered_marker(const struct np_broker *b, char **env, const ssize_t *via)
{
	json_t **pairs, *arr = json_array();
	size_t n = 0, cap = b->n_creds + 1;
	char *out = NULL;

	for (size_t i = 0; env[i]; i++)
		cap++;
	pairs = calloc(cap, sizeof(*pairs));
	if (!pairs || !arr)
		goto out;
	for (size_t i = 0; env[i]; i++) {
		char key[512], *eq = strchr(env[i], '=');

		if (via[i] < 0 || !eq)
			continue;
		snprintf(key, sizeof(key), "@alias:%.*s", (int)MIN((size_t)(eq - env[i]), 400),
			 env[i]);
		if (!(pairs[n] = json_pack("[ss]", key, b->creds[via[i]].dummy)))
			goto out;
		n++;
	}
	for (size_t j = 0; j < b->n_creds; j++) {
		ssize_t k = env_find(env, b->creds[j].env);
		bool dup = false;

		if (k < 0 || strcmp(env[k] + strlen(b->creds[j].env) + 1, b->creds[j].dummy))
			continue;
		for (size_t i = 0; i < j; i++)
			dup |= !strcmp(b->creds[i].env, b->creds[j].env);
		if (dup)
			continue;
		if (!(pairs[n] = json_pack("[ss]", b->creds[j].env, b->creds[j].dummy)))
			goto out;
		n++;
	}
	qsort(pairs, n, sizeof(*pairs), pair_cmp);
	for (size_t i = 0; i < n; i++)
		if (json_array_append(arr, pairs[i]) < 0)
			goto out;
	out = json_dumps(arr, JSON_COMPACT);
out:
	for (size_t i = 0; pairs && i < n; i++)
		json_decref(pairs[i]);
	free(pairs);
	json_decref(arr);
	return out;
}

int netproxy_broker_mask_env(struct np_broker *b, char ***envp)
{
	char **env = *envp, **v, *marker = NULL;
	size_t n = 0, k = 0;
	ssize_t *via; /* per variable: the credential whose placeholder went in, or -1 */
	int r = -ENOMEM;

	while (env && env[n])
		n++;
	/* the client's own markers go: only this broker's are true */
	for (size_t i = 0; i < n; i++)
		if (key_is(env[i], ACTIVE_KEY) || key_is(env[i], BROKERED_KEY)) {
			free(env[i]);
			memmove(&env[i], &env[i + 1], (n - i) * sizeof(*env));
			n--;
			i--;
		}
	via = malloc((n + 1) * sizeof(*via));
	v = calloc(n + 3, sizeof(*v));
	if (!via || !v)
		goto out;
	for (size_t i = 0; i <= n; i++)
		via[i] = -1;
	if (env) {
		if ((r = mask_sources(b, env, via)) < 0 || (r = mask_copies(b, env, via)) < 0)
			goto out;
	}
	r = -ENOMEM;
	marker = brokered_marker(b, env ? env : v, via);
	if (!marker)
		goto out;
	for (size_t i = 0; i < n; i++)
		v[k++] = env[i];
	if (asprintf(&v[k], ACTIVE_KEY "=1") < 0) {
		v[k] = NULL;
		goto undo;
	}
	k++;
	if (asprintf(&v[k], BROKERED_KEY "=%s", marker) < 0) {
		v[k] = NULL;
		goto undo;
	}
	free(env);
	*envp = v;
	v = NULL;
	r = 0;
	goto out;
undo:
	free(v[n]);
	memset(v, 0, (n + 3) * sizeof(*v));
out:
	free(v);
	free(marker);
	free(via);
	return r;
}

static bool bound(const struct br_cred *c, bool https, const char *host, uint16_t port,
		  const char *path, size_t path_len)
{
	for (size_t i = 0; i < c->p->n_dests; i++)
		if (netproxy_cred_dest_match(&c->p->dests[i], https, host, port, path, path_len))
			return true;
	return c->has_dyn && netproxy_cred_dest_match(&c->dyn, https, host, port, path, path_len);
}

bool netproxy_broker_binds(const struct np_broker *b, bool https, const char *host, uint16_t port)
{
	/* any path: the requests inside the tunnel are matched one by one */
	for (size_t i = 0; b && i < b->n_creds; i++)
		if (bound(&b->creds[i], https, host, port, NULL, 0))
			return true;
	return false;
}

static bool equals(const char *p, size_t n, const char *s)
{
	return strlen(s) == n && !memcmp(p, s, n);
}

/* Basic's user:password with the placeholder in either part put back; 1, 0 or -ENOMEM. */
static int basic(const struct br_cred *c, const char *b64, size_t len, char **ret)
{
	size_t cap = len, n = 0, dl = strlen(c->dummy);
	unsigned char *pair = malloc(cap + 1);
	char *colon, *plain = NULL, *enc = NULL;
	int r = 0;

	if (!pair)
		return -ENOMEM;
	if (len > BASIC_MAX || sodium_base642bin(pair, cap, b64, len, NULL, &n, NULL,
						 sodium_base64_VARIANT_ORIGINAL) < 0)
		goto out;
	pair[n] = 0;
	if (strlen((char *)pair) != n)
		goto out; /* a NUL inside */
	colon = strchr((char *)pair, ':');
	if (!colon) {
		if (strcmp((char *)pair, c->dummy))
			goto out;
		plain = strdup(c->real);
	} else {
		bool user = (size_t)(colon - (char *)pair) == dl && !memcmp(pair, c->dummy, dl);
		bool pass = !strcmp(colon + 1, c->dummy);

		if (!user && !pass)
			goto out;
		*colon = 0;
		if (asprintf(&plain, "%s:%s", user ? c->real : (char *)pair,
			     pass ? c->real : colon + 1) < 0)
			plain = NULL;
	}
	r = -ENOMEM;
	if (!plain)
		goto out;
	n = sodium_base64_ENCODED_LEN(strlen(plain), sodium_base64_VARIANT_ORIGINAL);
	enc = malloc(n + 6);
	if (!enc)
		goto out;
	memcpy(enc, "Basic ", 6);
	sodium_bin2base64(enc + 6, n, (unsigned char *)plain, strlen(plain),
			  sodium_base64_VARIANT_ORIGINAL);
	*ret = enc;
	enc = NULL;
	r = 1;
out:
	if (plain) {
		sodium_memzero(plain, strlen(plain));
		free(plain);
	}
	sodium_memzero(pair, cap);
	free(pair);
	free(enc);
	return r;
}

int netproxy_broker_translate(const struct np_broker *b, bool https, const char *host,
			      uint16_t port, const char *path, size_t path_len, const char *name,
			      size_t name_len, const char *value, size_t value_len, char **ret)
{
	bool authz = name_len == 13 && !strncasecmp(name, "authorization", 13);

	*ret = NULL;
	for (size_t i = 0; b && i < b->n_creds; i++) {
		const struct br_cred *c = &b->creds[i];
		const struct br_provider *p = c->p;

		if (!bound(c, https, host, port, path, path_len))
			continue;
		if (authz) {
			const char *sp = memchr(value, ' ', value_len);
			size_t sl = sp ? (size_t)(sp - value) : 0, rl = sp ? value_len - sl - 1 : 0;

			if (!sp)
				continue;
			if ((((p->auth & BR_AUTH_BEARER) && sl == 6 &&
			      !strncasecmp(value, "bearer", 6)) ||
			     ((p->auth & BR_AUTH_TOKEN) && sl == 5 &&
			      !strncasecmp(value, "token", 5))) &&
			    equals(sp + 1, rl, c->dummy))
				return asprintf(ret, "%.*s %s", (int)sl, value, c->real) < 0
					       ? -ENOMEM
					       : 1;
			if ((p->auth & BR_AUTH_BASIC) && sl == 5 &&
			    !strncasecmp(value, "basic", 5)) {
				int r = basic(c, sp + 1, rl, ret);

				if (r != 0)
					return r;
			}
		}
		if ((p->auth & BR_AUTH_HEADER) && strlen(p->header) == name_len &&
		    !strncasecmp(name, p->header, name_len)) {
			const char *pre = p->hprefix ? p->hprefix : "";
			size_t pl = strlen(pre);

			if (value_len >= pl && !memcmp(value, pre, pl) &&
			    equals(value + pl, value_len - pl, c->dummy))
				return asprintf(ret, "%s%s", pre, c->real) < 0 ? -ENOMEM : 1;
		}
	}
	return 0;
}
