/* SPDX-License-Identifier: MIT */
/*
 * The credential broker's parts (credentials.h): providers and credentials
 * (credentials.c), patterns and destinations (cred-match.c), the command's
 * environment and the request headers (cred-apply.c).
 */
#pragma once

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BR_MAX_CREDS 64 /* credentials one process's broker holds */

enum {
	BR_AUTH_BEARER = 1, /* Authorization: Bearer <value> */
	BR_AUTH_TOKEN = 2,  /* Authorization: token <value> */
	BR_AUTH_BASIC = 4,  /* Authorization: Basic base64(user:password), the value either part */
	BR_AUTH_HEADER = 8, /* <header>: <prefix><value> */
};

/* Where a credential may go: scheme, host (or a *.suffix), port, path prefix. */
struct br_dest {
	bool https;
	bool wildcard;	/* host holds ".suffix": any name below it */
	char host[256]; /* normalised */
	uint16_t port;
	char *path; /* "" (any) or the prefix, from its leading '/' */
};

/* A custom provider's pattern: POSIX ERE of the Rust regex, anchored both ends. */
struct br_pattern {
	regex_t re;
	char *src;  /* as the client wrote it: placeholders are drawn from it (cred-gen.c) */
	bool icase; /* a leading (?i) */
};

struct br_provider {
	char *id;
	bool builtin;
	size_t bi; /* builtin: its row */
	char **env;
	size_t n_env;
	struct br_pattern *pats;
	size_t n_pats;
	struct br_dest *dests;
	size_t n_dests;
	char *dest_env; /* a variable naming one more destination, or NULL */
	unsigned auth;	/* BR_AUTH_* */
	char *header, *hprefix;
};

struct br_cred {
	const struct br_provider *p;
	char *env;	    /* the variable it came from */
	char *real;	    /* wiped when freed */
	char *dummy;	    /* the placeholder the command sees */
	struct br_dest dyn; /* the destination from dest_env, when has_dyn */
	bool has_dyn;
};

struct np_broker {
	struct br_provider *prov;
	size_t n_prov;
	struct br_cred creds[BR_MAX_CREDS];
	size_t n_creds;
};

void netproxy_cred_strv_free(char **v, size_t n);

/* credentials.c */
bool netproxy_cred_recognised(const struct br_provider *p, const char *v);
bool netproxy_cred_is_dummy(const struct np_broker *b, const char *v);
const char *netproxy_cred_register(struct np_broker *b, const struct br_provider *p,
				   const char *key, const char *real, const struct br_dest *dyn);

/* cred-match.c */
/*
 * A destination: "http(s)://host[:port][/path]" or a bare host[:port]
 * (loopback: http, else https). wildcard allows a leading "*." host.
 * Returns 0, -EINVAL, or -ENOMEM.
 */
int netproxy_cred_dest_parse(const char *s, bool wildcard, struct br_dest *d);
/* path NULL: any path. */
bool netproxy_cred_dest_match(const struct br_dest *d, bool https, const char *host, uint16_t port,
			      const char *path, size_t path_len);
/*
 * Compiles a pattern (Rust regex syntax, the subset POSIX ERE can say) and
 * makes sure a placeholder can be drawn from it. 0, -EINVAL, -ENOMEM; freed by
 * netproxy_cred_pattern_done().
 */
int netproxy_cred_pattern_compile(const char *pattern, struct br_pattern *p);
bool netproxy_cred_pattern_full_match(const struct br_pattern *p, const char *v);
void netproxy_cred_pattern_done(struct br_pattern *p);
/* A placeholder drawn from p into out (cap bytes): 0, or -EINVAL after the draws allowed. */
int netproxy_cred_pattern_draw(const struct br_pattern *p, char *out, size_t cap);

/* cred-gen.c */
/*
 * A random value drawn from pattern alone (Rust syntax, the subset above) into
 * out (cap bytes, NUL-terminated); the caller checks it against the compiled
 * pattern. Returns 0, -EINVAL (cannot draw), or -E2BIG (longer than cap).
 */
int netproxy_cred_generate(const char *pattern, char *out, size_t cap);
