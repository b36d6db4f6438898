/* SPDX-License-Identifier: MIT */
/*
 * URLs for http/request (PROTOCOL.md §6.23): the subset of the WHATWG URL
 * parser that http: and https: URLs go through in the reference (its `url`
 * crate), with that crate's error texts, and the resolution of a redirect's
 * Location against the URL that answered. No I/O.
 *
 * What is normalised as the reference does: leading/trailing C0 and spaces
 * and inner tabs/newlines are dropped; the scheme and host are lower-cased;
 * any run of '/' or '\' after "http:" starts the authority ("http:host",
 * "http:///host" are "http://host/"); '\' is '/' in paths; "." and ".."
 * segments (also as %2e) are resolved; a default port is dropped; IPv4 in
 * the WHATWG forms (127.1, 0x7f.1) becomes dotted decimal, IPv6 is
 * compressed; bytes outside the WHATWG percent-encode sets are
 * percent-encoded in userinfo, path, query and fragment. Not done: IDNA (a
 * host with non-ASCII bytes is refused as "invalid international domain
 * name") and percent-decoding of hosts beyond ASCII.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct http_url_parts {
	bool tls;          /* https */
	char *host;        /* lower case; IPv6 without brackets; malloc'd */
	bool ipv6;
	uint16_t port;     /* the scheme's default when the URL has none */
	char *user;        /* percent-decoded user name, or NULL (none); malloc'd */
	char *password;    /* percent-decoded, or NULL; malloc'd */
	char *target;      /* path + "?" query: the request target, at least "/"; malloc'd */
	char *href;        /* the whole serialised URL, userinfo and fragment included */
	size_t href_origin_len; /* href[0..n) is "scheme://userinfo@host:port" */
	size_t href_fragment;   /* offset of "#..." in href, or strlen(href) */
};

/*
 * Parses an absolute URL. Returns 0 (free with http_url_parts_done), or:
 * -EINVAL with *reason the reference's text ("relative URL without a base",
 * "empty host", "invalid port number", "invalid IPv4 address", "invalid IPv6
 * address", "invalid international domain name"); -EPROTONOSUPPORT for a
 * well-formed scheme other than http/https, its lower-case name copied to
 * scheme_out (NUL-terminated, cut at scheme_cap - 1; may be NULL); -ENOMEM.
 */
int http_url_parts_parse(const char *s, size_t len, struct http_url_parts *ret, const char **reason,
			 char *scheme_out, size_t scheme_cap);

/*
 * Resolves a Location value against base (RFC 3986 reference resolution as
 * WHATWG does it for special schemes) and parses the result, with
 * http_url_parts_parse()'s returns.
 */
int http_url_parts_join(const struct http_url_parts *base, const char *loc, size_t len,
			struct http_url_parts *ret, const char **reason, char *scheme_out,
			size_t scheme_cap);

/* Same scheme, host and port. */
bool http_url_same_origin(const struct http_url_parts *a, const struct http_url_parts *b);

void http_url_parts_done(struct http_url_parts *u);
