/* SPDX-License-Identifier: MIT */
/*
 * The review of a process's network proxy (proxy.h, netproxy_reviewer):
 * network/policyRequest to the client that holds the process's session.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "proc-internal.h"
#include "proxy.h"
#include "rpc.h"

/*
 * Review (proxy.h): network/policyRequest to the client that holds the
 * process's session now (after a resume, the new connection). Nobody
 * attached: no question, the proxy refuses at once (the reference's).
 */
struct proc_review {
	struct rpc_call call;
	void *ctx;
};

/* The reference's limit on a decider's reason; one with a control character is refused too. */
#define REVIEW_REASON_MAX 1024

static enum np_answer review_decode(json_t *result, const char **reason)
{
	json_t *d = json_object_get(result, "decision"), *t = json_object_get(d, "type");
	json_t *why = json_object_get(d, "reason");
	const char *type = json_string_value(t);

	*reason = NULL;
	if (!json_is_object(d) || !type)
		return NP_ANSWER_NONE;
	if (strcmp(type, "allow") == 0)
		return NP_ANSWER_ALLOW;
	if (strcmp(type, "deny") && strcmp(type, "ask"))
		return NP_ANSWER_NONE;
	if (!json_is_string(why) || json_string_length(why) > REVIEW_REASON_MAX)
		return NP_ANSWER_NONE;
	*reason = json_string_value(why);
	for (size_t i = 0; i < json_string_length(why); i++)
		if ((unsigned char)(*reason)[i] < 0x20 || (*reason)[i] == 0x7f)
			return NP_ANSWER_NONE;
	return type[0] == 'd' ? NP_ANSWER_DENY : NP_ANSWER_ASK;
}

static void review_done(struct rpc_call *call, json_t *result)
{
	struct proc_review *r = container_of(call, struct proc_review, call);
	void *ctx = r->ctx;
	const char *reason = NULL;
	enum np_answer a = result ? review_decode(result, &reason) : NP_ANSWER_NONE;

	free(r);
	netproxy_review_answer(ctx, a, reason);
}

static void *review_ask(void *owner, const char *protocol, const char *host, unsigned port,
			void *ctx)
{
	struct proc *p = owner;
	struct conn *c = proc_conn(p);
	struct proc_review *r;
	char *params = NULL, *hj;
	json_t *h;
	int n;

	if (!c || !(r = calloc(1, sizeof(*r))))
		return NULL;
	h = json_string(host);
	hj = h ? json_dumps(h, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
	json_decref(h);
	n = hj ? asprintf(&params,
			  "{\"processId\":%.*s,\"request\":{\"protocol\":\"%s\",\"host\":%s,\"port\":%u}}",
			  (int)p->id_json_len, p->id_json, protocol, hj, port)
	       : -1;
	free(hj);
	r->ctx = ctx;
	if (n < 0 || rpc_call_start(&r->call, c, "network/policyRequest", params, review_done) < 0) {
		if (n >= 0)
			free(params);
		free(r);
		return NULL;
	}
	free(params);
	return r;
}

static void review_cancel(void *handle)
{
	struct proc_review *r = handle;

	rpc_call_cancel(&r->call);
	free(r);
}

const struct netproxy_reviewer proc_network_reviewer = {
	.ask = review_ask,
	.cancel = review_cancel,
};

