/* SPDX-License-Identifier: MIT */
/*
 * The managed network's proxy for one process, served from the server's ring
 * (docs/NETWORK-PROXY.md): an HTTP proxy (absolute-form and origin-form
 * requests, CONNECT) and SOCKS5 with the reference's policy, refusal
 * answers, decisions and review. Upstream connections are netconns (DNS on
 * the worker pool; names the policy allows only if public are checked once
 * resolved, before any connect). SOCKS5 CONNECT here, UDP ASSOCIATE in
 * socks-udp.c.
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
/*
 * Review (networkProxy.policyDecisionTimeoutMs, docs/netproxy-wire-notes.md
 * §9.2): a target not in the allowlist is asked about (network/policyRequest)
 * by the owner of the decision sink. ask() starts asking about protocol,
 * host and port for the proxy's request ctx and returns a handle, or NULL
 * when nobody can be asked now (the request is then refused as the
 * reference's, at once). The owner answers later, never from within ask(),
 * with netproxy_review_answer(ctx, ...), after which the handle is its own
 * to free; or the proxy gives up first (its deadline: the timeout + 5 s,
 * or the request's end) with cancel(handle), after which no answer comes.
 */
enum np_answer {
	NP_ANSWER_ALLOW,
	NP_ANSWER_DENY, /* reason: the client's (empty: "policy_denied") */
	NP_ANSWER_ASK,  /* the same, with the decision "ask" */
	NP_ANSWER_NONE, /* an error reply, an answer that does not decode, no client */
};

struct netproxy_reviewer {
	void *(*ask)(void *owner, const char *protocol, const char *host, unsigned port, void *ctx);
	void (*cancel)(void *handle);
};

/* Sets who is asked (static storage); the owner is the decision sink's. */
void netproxy_set_reviewer(struct netproxy *np, const struct netproxy_reviewer *r);
void netproxy_review_answer(void *ctx, enum np_answer a, const char *reason);

/* Closes the listeners and every connection (no handler runs after it). NULL is fine. */
void netproxy_free(struct netproxy *np);
