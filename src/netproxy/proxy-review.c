/* SPDX-License-Identifier: MIT */
/*
 * The managed network's proxy (proxy-internal.h): review
 * (networkProxy.policyDecisionTimeoutMs, docs/netproxy-wire-notes.md §9.2).
 * A target not in the allowlist is asked about (the reviewer's ask(), a
 * network/policyRequest), the request waiting with its reading stopped;
 * the answer, or its deadline, resumes it where it stopped.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "macro.h"
#include "netconn.h"
#include "netproxy-config.h"
#include "proxy-internal.h"
#include "server.h"

/*
 * Takes the review's answer for the request at hand: false when it allows
 * (the request goes on, as a name allowed only if public), true when it
 * refused it (reported and answered).
 */
bool netproxy_review_refused(struct npc *c)
{
	enum npc_review rv = c->rv;
	const char *reason = rv == RV_FAILED || !c->rv_reason ? "not_allowed" : c->rv_reason;
	const char *header = rv == RV_FAILED ? "blocked-by-allowlist" : "blocked-by-policy";
	const char *message = rv == RV_FAILED ? "Domain not in allowlist."
					      : "Request blocked by network policy.";
	const char *decision = rv == RV_ASK ? "ask" : "deny";

	c->rv = RV_NONE;
	if (rv == RV_ALLOW) {
		struct in6_addr a;

		c->override = true;
		/*
		 * A literal is never resolved (netconn connects to it as it is):
		 * reported now. A local one never got here: it is refused before
		 * anyone is asked, unless allowLocalBinding.
		 */
		if (inet_pton(AF_INET, c->host, &a) == 1 || inet_pton(AF_INET6, c->host, &a) == 1) {
			netproxy_emit(c, true, true, "decider", "not_allowed");
			c->decided = true;
		}
		return false;
	}
	log_info_ratelimited("Network proxy: the client refused %s:%u (%s)", c->host,
			     (unsigned)c->port, decision);
	netproxy_emit_decision(c, true, decision, "decider", reason);
	if (c->socks)
		netproxy_socks_reply(c, 2);
	else if (c->connect)
		netproxy_send_text(c, "403 Forbidden", header, message);
	else
		netproxy_send_refusal_json(c, reason, header, message, "decider", decision);
	free(c->rv_reason);
	c->rv_reason = NULL;
	return true;
}


static void review_resume(struct npc *c);

static void on_review_timeout(struct uring_timer *t, bool fired)
{
	struct npc *c = container_of(t, struct npc, review_timer);

	if (c->dead) {
		netproxy_npc_release(c);
		return;
	}
	if (!fired || !c->review)
		return;
	log_info_ratelimited("Network proxy: no answer about %s:%u in time: refused", c->host,
			     (unsigned)c->port);
	c->np->reviewer->cancel(c->review);
	c->review = NULL;
	c->rv = RV_FAILED;
	review_resume(c);
}

/*
 * A target the policy does not decide (not in the allowlist): asks the
 * client when the launch opted in. Returns true while asking (the request
 * waits, reading stopped); false when the answer is already in c->rv
 * (RV_FAILED: nobody to ask), or there is no review.
 */
bool netproxy_review_start(struct npc *c)
{
	struct netproxy *np = c->np;
	uint64_t ms = np->cfg->decision_timeout_ms;

	if (!np->cfg->review)
		return false;
	c->rv = RV_FAILED;
	/* the reference's decider never asks about such a host */
	if (strlen(c->host) > 253 || !np->reviewer)
		return false;
	c->review = np->reviewer->ask(np->owner, netproxy_protocol(c), c->host, c->port, c);
	if (!c->review)
		return false;
	c->rv = RV_NONE;
	c->state = NPC_ASKING;
	uring_timer_cancel(&c->head_timer);
	netconn_set_reading(c->client, false);
	/* its timeout plus the reference's 5 s for the transport */
	uring_timer_arm(&np->srv->ring, &c->review_timer, ms > UINT64_MAX - 5000 ? UINT64_MAX : ms + 5000,
			on_review_timeout);
	return true;
}

void netproxy_review_answer(void *ctx, enum np_answer a, const char *reason)
{
	struct npc *c = ctx;

	c->review = NULL;
	uring_timer_cancel(&c->review_timer);
	free(c->rv_reason);
	c->rv_reason = NULL;
	switch (a) {
	case NP_ANSWER_ALLOW: c->rv = RV_ALLOW; break;
	case NP_ANSWER_DENY: c->rv = RV_DENY; break;
	case NP_ANSWER_ASK: c->rv = RV_ASK; break;
	default: c->rv = RV_FAILED; break;
	}
	if (c->rv == RV_DENY || c->rv == RV_ASK)
		c->rv_reason = strdup(reason && *reason ? reason : "policy_denied");
	if ((c->rv == RV_DENY || c->rv == RV_ASK) && !c->rv_reason)
		c->rv = RV_FAILED;
	review_resume(c);
}

/* The review's answer is in: the request goes on where it stopped. */
static void review_resume(struct npc *c)
{
	if (!c->client) {
		/* the client left while asking: nothing more to say (freed with its upstream) */
		c->rv = RV_NONE;
		return;
	}
	netconn_set_reading(c->client, true);
	if (c->socks) {
		c->state = NPC_SOCKS_REQUEST;
		netproxy_socks_decided(c, NP_NOT_ALLOWED);
	} else {
		c->state = NPC_HEAD;
		netproxy_client_heads(c);
	}
}
