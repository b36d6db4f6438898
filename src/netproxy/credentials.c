/* SPDX-License-Identifier: MIT */
/*
 * The credential broker (credentials.h; what the reference does is in
 * docs/NETWORK-PROXY.md "Credential masking"). Providers say which
 * environment variables hold a credential, what one looks like, where it may
 * be sent and in which header form. The built-in ones (OpenAI, GitHub) are
 * a table; custom ones come from credentialProviders and are compiled with
 * the reference's rules (a broken one is dropped, not refused). Placeholders
 * are drawn from libsodium's randombytes, never derived from the real value:
 * a placeholder says nothing about the secret but its shape.
 */
#include <ctype.h>
#include <errno.h>
#include <regex.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cred-internal.h"
#include "credentials.h"
#include "log.h"
#include "macro.h"

#define BR_MAX_PROVIDERS 16 /* custom providers kept; the rest are dropped (logged) */
#define BR_MAX_LIST 16	    /* env keys, patterns, url prefixes of one provider */
#define BR_MAX_VALUE 4096   /* a credential longer than this is not brokered */
#define BR_PATTERN_MAX 2048 /* the reference's limit on a pattern's bytes */
#define BR_DUMMY_TRIES 64   /* placeholders drawn before a value is given up on */

#define ACTIVE_KEY "CODEX_NETWORK_PROXY_CREDENTIAL_BROKER_ACTIVE"
#define BROKERED_KEY "CODEX_NETWORK_PROXY_BROKERED_CREDENTIALS"

static const char *const openai_env[] = {"OPENAI_API_KEY", NULL};
static const char *const openai_prefixes[] = {"sk-proj-", "sk-svcacct-", "sk-admin-", "sk-", NULL};
static const char *const openai_hosts[] = {"api.openai.com", NULL};
static const char *const github_env[] = {"GH_TOKEN", "GITHUB_TOKEN", NULL};
static const char *const ghe_env[] = {"GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN", NULL};
static const char *const github_prefixes[] = {"github_pat_", "ghp_", "gho_", "ghu_",
					      "ghs_",	     "ghr_", NULL};
static const char *const github_hosts[] = {"api.github.com", "github.com", "uploads.github.com",
					   "*.ghe.com", NULL};
static const char *const no_hosts[] = {NULL};

/* The built-in providers: https only, Authorization as Bearer, token or Basic. */
static const struct {
	const char *id;
	const char *const *env, *const *prefixes, *const *hosts;
	const char *host_env; /* a variable naming one more destination (https) */
	size_t min_len;	      /* a placeholder is at least this long */
} builtins[] = {
	{"openai", openai_env, openai_prefixes, openai_hosts, "OPENAI_BASE_URL", 51},
	{"github", github_env, github_prefixes, github_hosts, NULL, 40},
	{"github_enterprise", ghe_env, github_prefixes, no_hosts, "GH_HOST", 40},
};

static bool env_key_valid(const char *k)
{
	if (!(*k == '_' || isalpha((unsigned char)*k)))
		return false;
	for (k++; *k; k++)
		if (!(*k == '_' || isalnum((unsigned char)*k)))
			return false;
	return true;
}

/* A variable a built-in provider reads (its sources and its destination's). */
static bool builtin_key(const char *k)
{
	for (size_t i = 0; i < ELEMENTSOF(builtins); i++) {
		for (size_t j = 0; builtins[i].env[j]; j++)
			if (!strcmp(k, builtins[i].env[j]))
				return true;
		if (builtins[i].host_env && !strcmp(k, builtins[i].host_env))
			return true;
	}
	return false;
}

static void provider_done(struct br_provider *p)
{
	free(p->id);
	netproxy_cred_strv_free(p->env, p->n_env);
	for (size_t i = 0; i < p->n_pats; i++)
		netproxy_cred_pattern_done(&p->pats[i]);
	free(p->pats);
	for (size_t i = 0; i < p->n_dests; i++)
		free(p->dests[i].path);
	free(p->dests);
	free(p->dest_env);
	free(p->header);
	free(p->hprefix);
}

void netproxy_cred_strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static int builtin_provider(size_t i, struct br_provider *p)
{
	p->builtin = true;
	p->bi = i;
	p->auth = BR_AUTH_BEARER | BR_AUTH_TOKEN | BR_AUTH_BASIC;
	p->id = strdup(builtins[i].id);
	if (!p->id)
		return -ENOMEM;
	for (size_t j = 0; builtins[i].env[j]; j++)
		p->n_env++;
	p->env = calloc(p->n_env, sizeof(*p->env));
	if (!p->env)
		return -ENOMEM;
	for (size_t j = 0; j < p->n_env; j++)
		if (!(p->env[j] = strdup(builtins[i].env[j])))
			return -ENOMEM;
	for (size_t j = 0; builtins[i].hosts[j]; j++)
		p->n_dests++;
	p->dests = calloc(p->n_dests + 1, sizeof(*p->dests));
	if (!p->dests)
		return -ENOMEM;
	for (size_t j = 0; j < p->n_dests; j++) {
		struct br_dest *d = &p->dests[j];
		const char *h = builtins[i].hosts[j];

		d->https = true;
		d->port = 443;
		d->wildcard = h[0] == '*';
		snprintf(d->host, sizeof(d->host), "%s", d->wildcard ? h + 1 : h);
		if (!(d->path = strdup("")))
			return -ENOMEM;
	}
	if (builtins[i].host_env && !(p->dest_env = strdup(builtins[i].host_env)))
		return -ENOMEM;
	return 0;
}

/* A JSON array of strings (decoded, so typed already) into a vector; NULL member: absent. */
static int strings_of(json_t *a, char ***ret, size_t *n)
{
	size_t i;
	json_t *v;

	*ret = NULL;
	*n = 0;
	if (!json_is_array(a) || json_array_size(a) == 0)
		return 0;
	if (json_array_size(a) > BR_MAX_LIST)
		return -E2BIG;
	*ret = calloc(json_array_size(a), sizeof(**ret));
	if (!*ret)
		return -ENOMEM;
	json_array_foreach(a, i, v)
	{
		(*ret)[i] = strdup(json_string_value(v));
		if (!(*ret)[i])
			return -ENOMEM;
		(*n)++;
	}
	return 0;
}

static const char *opt_string(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* A header name: an RFC 9110 token. */
static bool header_name_valid(const char *h)
{
	if (!*h)
		return false;
	for (; *h; h++)
		if (!isalnum((unsigned char)*h) && !strchr("!#$%&'*+-.^_`|~", *h))
			return false;
	return true;
}

/*
 * A custom provider's environment keys and where its destination comes
 * from, checked in the reference's order (url_prefix_from_env: the host
 * variable, or NULL). Returns 0, -EINVAL with why, or -ENOMEM.
 */
static int provider_keys(const char *id, struct br_provider *p, size_t n_patterns,
			 size_t n_prefixes, const char *from_env, char *why, size_t whysz)
{
	size_t i;

	if (!*id) {
		snprintf(why, whysz, "credential provider name must not be empty");
		return -EINVAL;
	}
	if (!p->n_env) {
		snprintf(why, whysz, "credential provider `%s` has no environment keys", id);
		return -EINVAL;
	}
	if (!n_patterns) {
		snprintf(why, whysz, "credential provider `%s` has no credential patterns", id);
		return -EINVAL;
	}
	if (!n_prefixes && !from_env) {
		snprintf(why, whysz, "credential provider `%s` has no destination URL prefixes",
			 id);
		return -EINVAL;
	}
	for (i = 0; i < p->n_env; i++)
		if (!env_key_valid(p->env[i])) {
			snprintf(why, whysz,
				 "credential provider `%s` has an invalid environment key", id);
			return -EINVAL;
		}
	for (i = 0; i < p->n_env; i++)
		if (builtin_key(p->env[i])) {
			snprintf(why, whysz,
				 "credential provider `%s` overlaps a built-in credential source",
				 id);
			return -EINVAL;
		}
	if (from_env) {
		bool clash = false;

		for (i = 0; i < p->n_env; i++)
			clash |= !strcmp(p->env[i], from_env);
		if (!env_key_valid(from_env) || clash) {
			snprintf(why, whysz,
				 "credential provider `%s` has an invalid host environment key",
				 id);
			return -EINVAL;
		}
		if (!(p->dest_env = strdup(from_env)))
			return -ENOMEM;
	}
	return 0;
}

/* The url_prefixes parsed into p->dests. Returns 0, -EINVAL with why, or -ENOMEM. */
static int provider_dests(const char *id, struct br_provider *p, char **prefixes,
			  size_t n_prefixes, char *why, size_t whysz)
{
	p->dests = calloc(n_prefixes + 1, sizeof(*p->dests));
	if (!p->dests)
		return -ENOMEM;
	for (size_t i = 0; i < n_prefixes; i++) {
		int k = netproxy_cred_dest_parse(prefixes[i], false, &p->dests[p->n_dests]);

		if (k == -ENOMEM)
			return k;
		if (k < 0) {
			snprintf(why, whysz, "invalid destination for credential provider `%s`",
				 id);
			return -EINVAL;
		}
		p->n_dests++;
	}
	return 0;
}

/*
 * How the credential is sent: the auth schemes (bearer by default), the
 * header and its prefix. Returns 0, -EINVAL with why, or -ENOMEM.
 */
static int provider_auth(const char *id, json_t *o, struct br_provider *p, char *why,
			 size_t whysz)
{
	json_t *v = o ? json_object_get(o, "auth") : NULL;
	const char *s;

	if (json_is_array(v)) {
		static const char *const names[] = {"bearer", "token", "basic", "header"};
		json_t *e;
		size_t i;

		json_array_foreach(v, i, e) for (size_t j = 0; j < ELEMENTSOF(names);
						 j++) if (json_is_string(e) &&
							  !strcmp(json_string_value(e), names[j]))
			p->auth |= 1u << j;
	}
	if (!p->auth)
		p->auth = BR_AUTH_BEARER;
	s = o ? opt_string(o, "header") : NULL;
	if (s && !header_name_valid(s)) {
		snprintf(why, whysz, "invalid header for credential provider `%s`", id);
		return -EINVAL;
	}
	if (!!(p->auth & BR_AUTH_HEADER) != !!s) {
		snprintf(why, whysz,
			 "credential provider `%s` requires a header name exactly when "
			 "using header authentication",
			 id);
		return -EINVAL;
	}
	if (s && !(p->header = strdup(s)))
		return -ENOMEM;
	s = o ? opt_string(o, "prefix") : NULL;
	if (s && !p->header) {
		snprintf(why, whysz,
			 "credential provider `%s` requires header authentication to use a "
			 "header prefix",
			 id);
		return -EINVAL;
	}
	if (s && !(p->hprefix = strdup(s)))
		return -ENOMEM;
	return 0;
}

/* The credential patterns compiled into p->pats. Returns 0, -EINVAL with why, or -ENOMEM. */
static int provider_patterns(const char *id, struct br_provider *p, char **patterns,
			     size_t n_patterns, char *why, size_t whysz)
{
	p->pats = calloc(n_patterns, sizeof(*p->pats));
	if (!p->pats)
		return -ENOMEM;
	for (size_t i = 0; i < n_patterns; i++) {
		int k = strlen(patterns[i]) > BR_PATTERN_MAX
				? -EINVAL
				: netproxy_cred_pattern_compile(patterns[i], &p->pats[i]);

		if (k == -ENOMEM)
			return k;
		if (k < 0) {
			snprintf(why, whysz, "invalid credential pattern for provider `%s`", id);
			return -EINVAL;
		}
		p->n_pats++;
	}
	return 0;
}

/*
 * One custom provider, or why it is dropped (the reference's wording, which
 * its log line quotes). Returns 0, -EINVAL with why set, or -ENOMEM.
 */
static int custom_provider(const char *id, json_t *o, struct br_provider *p, char *why,
			   size_t whysz)
{
	char **patterns = NULL, **prefixes = NULL;
	size_t n_patterns = 0, n_prefixes = 0;
	int r;

	if (!(p->id = strdup(id)))
		return -ENOMEM;
	if (!json_is_object(o))
		o = NULL; /* [] decodes as every field defaulted */
	if ((r = strings_of(o ? json_object_get(o, "env") : NULL, &p->env, &p->n_env)) < 0 ||
	    (r = strings_of(o ? json_object_get(o, "patterns") : NULL, &patterns, &n_patterns)) <
		    0 ||
	    (r = strings_of(o ? json_object_get(o, "url_prefixes") : NULL, &prefixes,
			    &n_prefixes)) < 0) {
		if (r == -E2BIG)
			snprintf(why, whysz,
				 "credential provider `%s` has more than %d entries in a list", id,
				 BR_MAX_LIST);
		goto out;
	}
	r = provider_keys(id, p, n_patterns, n_prefixes,
			  o ? opt_string(o, "url_prefix_from_env") : NULL, why, whysz);
	if (r >= 0)
		r = provider_dests(id, p, prefixes, n_prefixes, why, whysz);
	if (r >= 0)
		r = provider_auth(id, o, p, why, whysz);
	if (r >= 0)
		r = provider_patterns(id, p, patterns, n_patterns, why, whysz);
out:
	netproxy_cred_strv_free(patterns, n_patterns);
	netproxy_cred_strv_free(prefixes, n_prefixes);
	return r;
}

int netproxy_broker_new(json_t *providers, struct np_broker **ret)
{
	struct np_broker *b;
	const char *id;
	json_t *o;
	int r;

	*ret = NULL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->prov = calloc(ELEMENTSOF(builtins) + BR_MAX_PROVIDERS, sizeof(*b->prov));
	if (!b->prov) {
		free(b);
		return -ENOMEM;
	}
	for (size_t i = 0; i < ELEMENTSOF(builtins); i++) {
		r = builtin_provider(i, &b->prov[b->n_prov++]);
		if (r < 0)
			goto fail;
	}
	json_object_foreach(json_is_object(providers) ? providers : NULL, id, o)
	{
		struct br_provider *p = &b->prov[b->n_prov];
		char why[256];

		if (b->n_prov == ELEMENTSOF(builtins) + BR_MAX_PROVIDERS) {
			log_warning_ratelimited(
				"Network proxy: more than %d credential providers; the "
				"rest are ignored",
				BR_MAX_PROVIDERS);
			break;
		}
		why[0] = 0;
		r = custom_provider(id, o, p, why, sizeof(why));
		if (r == -ENOMEM) {
			b->n_prov++; /* freed below */
			goto fail;
		}
		if (r < 0) {
			/* the reference's warning; the provider's values are never in it */
			log_warning_ratelimited(
				"Network proxy: ignoring invalid credential provider: %s", why);
			provider_done(p);
			memset(p, 0, sizeof(*p));
			continue;
		}
		b->n_prov++;
	}
	*ret = b;
	return 0;
fail:
	netproxy_broker_free(b);
	return -ENOMEM;
}

void netproxy_broker_free(struct np_broker *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->n_creds; i++) {
		struct br_cred *c = &b->creds[i];

		sodium_memzero(c->real, strlen(c->real));
		free(c->real);
		free(c->dummy);
		free(c->env);
		free(c->dyn.path);
	}
	for (size_t i = 0; i < b->n_prov; i++)
		provider_done(&b->prov[i]);
	free(b->prov);
	free(b);
}

size_t netproxy_broker_count(const struct np_broker *b)
{
	return b ? b->n_creds : 0;
}

/* A built-in provider's credential: one of its prefixes, then token characters. */
static const char *builtin_prefix(const struct br_provider *p, const char *v)
{
	size_t n = strlen(v);

	for (size_t i = 0; builtins[p->bi].prefixes[i]; i++) {
		const char *pre = builtins[p->bi].prefixes[i];
		size_t k = strlen(pre);

		if (n < k + 8 || strncmp(v, pre, k))
			continue;
		for (size_t j = k; j < n; j++)
			if (!isalnum((unsigned char)v[j]) && v[j] != '-' && v[j] != '_')
				return NULL;
		return pre;
	}
	return NULL;
}

static const struct br_pattern *custom_match(const struct br_provider *p, const char *v)
{
	for (size_t i = 0; i < p->n_pats; i++)
		if (netproxy_cred_pattern_full_match(&p->pats[i], v))
			return &p->pats[i];
	return NULL;
}

bool netproxy_cred_is_dummy(const struct np_broker *b, const char *v)
{
	for (size_t i = 0; i < b->n_creds; i++)
		if (!strcmp(b->creds[i].dummy, v))
			return true;
	return false;
}

static const char alnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/*
 * A placeholder for real, or NULL (no memory, or none could be drawn).
 * Built-in: the provider's prefix, "masked", then random letters and digits
 * (the real value's other characters kept in place), at least min_len long.
 * Custom: drawn from the matching pattern alone (cred-gen.c), so that it
 * tells nothing of the real value but the pattern.
 */
static char *make_dummy(const struct np_broker *b, const struct br_provider *p, const char *real)
{
	size_t n = strlen(real);

	for (int t = 0; t < BR_DUMMY_TRIES; t++) {
		char *d;

		if (p->builtin) {
			const char *pre = builtin_prefix(p, real);
			size_t k = strlen(pre), len = MAX(n, MAX(builtins[p->bi].min_len, k + 16));

			d = malloc(len + 1);
			if (!d)
				return NULL;
			memcpy(d, pre, k);
			memcpy(d + k, "masked", 6);
			for (size_t j = k + 6; j < len; j++)
				d[j] = j < n && !isalnum((unsigned char)real[j])
					       ? real[j]
					       : alnum[randombytes_uniform(62)];
			d[len] = 0;
		} else {
			const struct br_pattern *pat = custom_match(p, real);

			if (!pat || !(d = malloc(2049)))
				return NULL;
			/* drawn from the pattern alone; Basic keeps whether a ':' splits it */
			if (netproxy_cred_pattern_draw(pat, d, 2049) < 0 ||
			    ((p->auth & BR_AUTH_BASIC) && !strchr(real, ':') != !strchr(d, ':'))) {
				free(d);
				continue;
			}
		}
		if (strcmp(d, real) && !netproxy_cred_is_dummy(b, d))
			return d;
		free(d);
	}
	return NULL;
}

/* Registers real (from env key) for p: its placeholder, or NULL (no room, memory or draw). */
const char *netproxy_cred_register(struct np_broker *b, const struct br_provider *p,
				   const char *key, const char *real, const struct br_dest *dyn)
{
	struct br_cred *c;

	for (size_t i = 0; i < b->n_creds; i++)
		if (b->creds[i].p == p && !strcmp(b->creds[i].real, real))
			return b->creds[i].dummy;
	if (b->n_creds == BR_MAX_CREDS || strlen(real) > BR_MAX_VALUE)
		return NULL;
	c = &b->creds[b->n_creds];
	memset(c, 0, sizeof(*c));
	c->p = p;
	c->real = strdup(real);
	c->env = strdup(key);
	c->dummy = c->real && c->env ? make_dummy(b, p, real) : NULL;
	if (dyn) {
		c->dyn = *dyn;
		c->has_dyn = true;
		c->dyn.path = strdup(dyn->path);
	}
	if (!c->real || !c->env || !c->dummy || (dyn && !c->dyn.path)) {
		if (c->real)
			sodium_memzero(c->real, strlen(c->real));
		free(c->real);
		free(c->env);
		free(c->dummy);
		free(c->dyn.path);
		return NULL;
	}
	b->n_creds++;
	return c->dummy;
}

/* Whether v is a credential p brokers. */
bool netproxy_cred_recognised(const struct br_provider *p, const char *v)
{
	if (!*v || strlen(v) > BR_MAX_VALUE)
		return false;
	/* it goes into a header as it is: no control character may (the reference's HeaderValue) */
	for (const char *q = v; *q; q++)
		if ((unsigned char)*q < 0x20 || *q == 0x7f)
			return false;
	return p->builtin ? builtin_prefix(p, v) != NULL : custom_match(p, v) != NULL;
}
