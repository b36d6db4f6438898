/* SPDX-License-Identifier: MIT */
/*
 * The managed network's proxy for one process, served from the server's ring
 * (docs/NETPROXY-PLAN.md): an HTTP proxy (absolute-form and origin-form
 * requests, CONNECT) with the reference's policy and refusal answers.
 * Upstream connections are netconns (DNS on the worker pool; names the
 * policy allows only if public are checked once resolved, before any
 * connect). SOCKS5 CONNECT here, UDP ASSOCIATE in socks-udp.c. Work in
 * progress: review (docs/NETPROXY-PLAN.md).
 */
#pragma once

#include <stdbool.h>

struct server;
struct netproxy;
struct netproxy_config;

/*
 * Starts serving the listening sockets fds (taken: closed by
 * netproxy_free, also on failure) for cfg (taken). http_fd and socks_fd
 * are listening TCP sockets, udp_fd a bound UDP socket (each -1 when
 * absent). Returns 0 with *ret, -EINVAL with err set for a bad policy, or
 * -ENOMEM.
 */
int netproxy_new(struct server *s, struct netproxy_config *cfg, int http_fd, int socks_fd,
		 int udp_fd, struct netproxy **ret, char *err, size_t errsz);
/*
 * Where decisions go (network/policyDecision, docs/netproxy-wire-notes.md
 * §9.1): fn gets the notification's params after processId, starting with a
 * comma (",\"timestamp\":...,\"policyOverride\":false"). Until set, none.
 * Each decision is also an audit log line (network.decision) naming session
 * and process (copied).
 */
void netproxy_set_decision_sink(struct netproxy *np, void (*fn)(void *owner, const char *tail),
				void *owner, const char *session, const char *process);
/* Closes the listeners and every connection (no handler runs after it). NULL is fine. */
void netproxy_free(struct netproxy *np);
