/* SPDX-License-Identifier: MIT */
/*
 * The upstream proxy of a launch with allowUpstreamProxy (the reference's
 * rules, docs/netproxy-semantics-notes.md §4): taken from the server's own
 * environment, not the command's. Plain requests use HTTP_PROXY,
 * http_proxy, then ALL_PROXY, all_proxy; tunnels (CONNECT, SOCKS5) use
 * HTTPS_PROXY, https_proxy first. NO_PROXY is not honoured (as the
 * reference). Pure: no I/O.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct np_upstream {
	char host[256];  /* as in the URL, without brackets */
	uint16_t port;
	char *auth;      /* "Basic <base64 of user:password>" from the URL's userinfo, or NULL */
};

/*
 * Parses an upstream URL: "http://[user[:password]@]host[:port][/]" or
 * "host[:port]" (port 80 by default). Returns 0, -EPROTONOSUPPORT for
 * another scheme (socks5://: the reference goes direct; https://: a TLS
 * hop uexec does not make), -EINVAL when malformed, or -ENOMEM.
 */
int netproxy_upstream_parse(const char *url, struct np_upstream *u);
void netproxy_upstream_done(struct np_upstream *u);

/*
 * The first non-empty variable of the reference's order for a tunnel
 * (tunnel true) or a plain request, from getenv: NULL when none. *name is
 * the variable's name (for logs; the value may hold a password).
 */
const char *netproxy_upstream_env(bool tunnel, const char **name);
