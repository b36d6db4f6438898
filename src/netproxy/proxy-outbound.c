/* SPDX-License-Identifier: MIT */
/*
 * The managed network's proxy (proxy-internal.h): the connection toward the
 * target. Dialed directly (its answers judged once resolved: only public
 * ones for a name allowed if public) or through the server's upstream proxy
 * (allowUpstreamProxy: the name looked up on the worker pool first, then a
 * CONNECT to the proxy for a tunnel); then the target's bytes back to the
 * client (a tunnel's as they come, a forwarded request's response through
 * proxy-http.c).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "http.h"
#include "log.h"
#include "macro.h"
#include "netconn.h"
#include "netproxy-config.h"
#include "proxy-internal.h"
#include "server.h"

/* ---- upstream ---- */

static void up_connected(struct netconn *nc);
static void up_data(struct netconn *nc, const uint8_t *p, size_t n);
static void up_drained(struct netconn *nc);
static void up_closed(struct netconn *nc, int err, const char *why);
static int up_resolved(struct netconn *nc, const struct addrinfo *list);

static const struct netconn_handlers up_handlers = {
	.connected = up_connected,
	.data = up_data,
	.drained = up_drained,
	.closed = up_closed,
	.resolved = up_resolved,
};

static int up_resolved(struct netconn *nc, const struct addrinfo *list)
{
	struct npc *c = netconn_userdata(nc);

	/* an upstream proxy's own addresses are the operator's: not judged */
	if (c->via)
		return 0;
	/* allowlisted names only when every answer is public (DNS rebinding); not with allowLocalBinding */
	if (!c->np->cfg->allow_local_binding)
		for (const struct addrinfo *a = list; a; a = a->ai_next)
			if (!netproxy_addr_public(a->ai_addr)) {
				if (!c->decided)
					netproxy_emit(c, true, false, "baseline_policy",
						      "not_allowed_local");
				c->decided = true;
				return -EACCES;
			}
	if (!c->decided)
		netproxy_emit(c, true, true, c->override ? "decider" : "baseline_policy",
			      c->override ? "not_allowed" : "allow");
	c->decided = true;
	return 0;
}

static void established(struct npc *c);

static void up_connected(struct netconn *nc)
{
	struct npc *c = netconn_userdata(nc);

	if (c->via && (c->connect || c->socks)) {
		/* a tunnel through the upstream proxy: ask it for one first */
		struct buf b = { 0 };
		char line[320];
		int n = snprintf(line, sizeof(line), strchr(c->host, ':') ? "[%s]:%u" : "%s:%u", c->host,
				 (unsigned)c->port);

		if (buf_append(&b, "CONNECT ", 8) < 0 || buf_append(&b, line, (size_t)n) < 0 ||
		    buf_append(&b, " HTTP/1.1\r\nhost: ", 17) < 0 || buf_append(&b, line, (size_t)n) < 0 ||
		    buf_append(&b, "\r\n", 2) < 0 ||
		    (c->via->auth && (buf_append(&b, "proxy-authorization: ", 21) < 0 ||
				      buf_append(&b, c->via->auth, strlen(c->via->auth)) < 0 ||
				      buf_append(&b, "\r\n", 2) < 0)) ||
		    buf_append(&b, "\r\n", 2) < 0 || netconn_send(nc, b.data, b.len) < 0) {
			buf_done(&b);
			netconn_close(nc);
			c->up = NULL;
			netproxy_finish_client(c);
			netproxy_npc_maybe_free(c);
			return;
		}
		buf_done(&b);
		c->state = NPC_UP_CONNECT;
		return;
	}
	established(c);
}

/* The upstream proxy's answer to our CONNECT (NPC_UP_CONNECT): 2xx opens the tunnel. */
static void up_connect_answer(struct npc *c, const uint8_t *p, size_t n)
{
	const char *h;
	uint8_t *end;
	size_t head;
	int status = 0;

	if (buf_append(&c->up_head, p, n) < 0)
		goto fail;
	end = memmem(c->up_head.data, c->up_head.len, "\r\n\r\n", 4);
	if (!end) {
		if (c->up_head.len > NPC_HEAD_MAX)
			goto fail;
		return;
	}
	head = (size_t)(end - c->up_head.data) + 4;
	h = (const char *)c->up_head.data;
	if (head > 12 && !memcmp(h, "HTTP/1.", 7) && h[8] == ' ')
		status = atoi(h + 9);
	if (status < 200 || status > 299) {
		log_info_ratelimited("Network proxy: the upstream proxy refused a tunnel to %s:%u (status %d)",
				     c->host, (unsigned)c->port, status);
		goto fail;
	}
	established(c);
	/* what the upstream proxy sent behind its answer is the target's */
	if (c->client && c->up_head.len > head)
		(void)netconn_send(c->client, c->up_head.data + head, c->up_head.len - head);
	buf_done(&c->up_head);
	return;
fail:
	buf_done(&c->up_head);
	if (c->socks)
		netproxy_socks_send(c, 5);
	else
		netproxy_send_bad_gateway(c);
	netconn_close(c->up);
	c->up = NULL;
	netproxy_finish_client(c);
	netproxy_npc_maybe_free(c);
}

/* The target is reached (directly, or through the upstream proxy's tunnel). */
static void established(struct npc *c)
{
	struct netconn *nc = c->up;

	if (c->socks) {
		uint8_t ok[22];

		c->state = NPC_TUNNEL;
		(void)netconn_send(c->client, ok, netproxy_socks_bound_reply(nc, ok));
		if (c->head.len && netconn_send(nc, c->head.data, c->head.len) == 0)
			buf_consume(&c->head, c->head.len);
		netproxy_client_resume(c);
		return;
	}
	if (c->connect) {
		char date[64], out[128];
		int n;

		c->state = NPC_TUNNEL;
		if (http_format_date(time(NULL), date, sizeof(date)) >= 0 &&
		    (n = snprintf(out, sizeof(out), "HTTP/1.1 200 OK\r\ndate: %s\r\n\r\n", date)) > 0)
			(void)netconn_send(c->client, out, (size_t)n);
		/* bytes the client sent behind its CONNECT head belong to the tunnel */
		if (c->head.len && netconn_send(nc, c->head.data, c->head.len) == 0)
			buf_consume(&c->head, c->head.len);
		netproxy_client_resume(c);
		return;
	}
	c->state = NPC_FORWARD;
	if (netconn_send(nc, c->out_head.data, c->out_head.len) < 0) {
		netproxy_finish_client(c);
		return;
	}
	c->np->srv->metrics.proxy_bytes_up += c->out_head.len;
	netproxy_out_head_done(c);
	netproxy_pass_body(c);
}

static void up_data(struct netconn *nc, const uint8_t *p, size_t n)
{
	struct npc *c = netconn_userdata(nc);

	if (c->state == NPC_UP_CONNECT) {
		up_connect_answer(c, p, n);
		return;
	}
	if (c->state == NPC_FORWARD) {
		netproxy_forward_response(c, p, n);
		return;
	}
	c->np->srv->metrics.proxy_bytes_down += n;
	if (!c->client || netconn_send(c->client, p, n) < 0) {
		netconn_close(nc);
		c->up = NULL;
		netproxy_npc_maybe_free(c);
		return;
	}
	if (netconn_queued(c->client) > NPC_QUEUE_HIGH)
		netconn_set_reading(nc, false);
}

static void up_drained(struct netconn *nc)
{
	struct npc *c = netconn_userdata(nc);

	netproxy_client_resume(c);
}

static void up_closed(struct netconn *nc, int err, const char *why)
{
	struct npc *c = netconn_userdata(nc);
	bool was_connecting = c->state == NPC_UPSTREAM || c->state == NPC_UP_CONNECT;

	c->up = NULL;
	if (was_connecting && !c->decided && !c->np->cfg->allow_local_binding) {
		/*
		 * The name never resolved: the reference's policy-time lookup
		 * fails closed (not_allowed_local), before any answer to the
		 * client (a CONNECT gets the refusal, not its 200).
		 */
		netproxy_refuse_local(c);
	} else if (was_connecting && c->socks) {
		netproxy_socks_send(c, err == -EACCES ? 2 : err == -EHOSTUNREACH ? 4
				    : err == -ENETUNREACH ? 3 : err == -ETIMEDOUT ? 6 : 5);
	} else if (was_connecting && !c->connect) {
		if (err == -EACCES)
			netproxy_refuse(c, NP_NOT_ALLOWED_LOCAL);
		else
			netproxy_send_bad_gateway(c);
	} else if (was_connecting && err == -EACCES) {
		netproxy_refuse(c, NP_NOT_ALLOWED_LOCAL);
	} else if (c->state == NPC_FORWARD && !c->resp_started) {
		netproxy_send_bad_gateway(c);
	}
	log_debug("Network proxy: %s:%u from %s ended: %s", c->host, (unsigned)c->port, c->peer,
		  why ? why : "closed");
	netproxy_finish_client(c);
	netproxy_npc_maybe_free(c);
}

/*
 * The upstream proxy for c's request, or NULL to go direct: none set, or a
 * target the reference always reaches directly (a non-public literal,
 * localhost).
 */
const struct np_upstream *netproxy_choose_upstream(const struct npc *c)
{
	bool tunnel = c->connect || c->socks;
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in a4 = { .sin_family = AF_INET };

	if (!c->np->has_upstream[tunnel] || strcmp(c->host, "localhost") == 0)
		return NULL;
	if (inet_pton(AF_INET, c->host, &a4.sin_addr) == 1 &&
	    !netproxy_addr_public((struct sockaddr *)&a4))
		return NULL;
	if (inet_pton(AF_INET6, c->host, &a6.sin6_addr) == 1 &&
	    !netproxy_addr_public((struct sockaddr *)&a6))
		return NULL;
	return &c->np->upstream[tunnel];
}

static int dial(struct npc *c)
{
	struct netconn_config cfg = { .host = c->via ? c->via->host : c->host,
				      .port = c->via ? c->via->port : c->port,
				      .nodelay = true, .connect_timeout_ms = NPC_CONNECT_TIMEOUT_MS,
				      /* intercepted: TLS again toward the target, verified as usual */
				      .tls = c->mitm_tls,
				      /* a real credential may be in what is queued: wiped when freed */
				      .sensitive = c->np->cfg->broker != NULL };

	if (c->via && !c->decided) {
		/* through an upstream proxy the policy is settled before connecting */
		netproxy_emit(c, true, true, c->override ? "decider" : "baseline_policy",
			      c->override ? "not_allowed" : "allow");
		c->decided = true;
	}
	return netconn_open(c->np->srv, &cfg, &up_handlers, c, &c->up);
}

static void lookup_run(struct work *w)
{
	struct np_lookup *l = container_of(w, struct np_lookup, w);
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai = NULL;

	l->refused = getaddrinfo(l->host, NULL, &hints, &ai) != 0 || !ai;
	for (struct addrinfo *a = ai; a && !l->refused; a = a->ai_next)
		l->refused = !netproxy_addr_public(a->ai_addr);
	if (ai)
		freeaddrinfo(ai);
}

static void lookup_done(struct work *w)
{
	struct np_lookup *l = container_of(w, struct np_lookup, w);
	struct npc *c = l->c;
	bool refused = l->refused;

	free(l);
	if (!c)
		return;
	c->lookup = NULL;
	if (refused) {
		netproxy_refuse_local(c);
	} else if (c->mitm_pending) {
		/* an intercepted tunnel's name, public: allowed now, as the reference decides it */
		size_t n = c->mitm_head;

		c->mitm_pending = false;
		netproxy_emit(c, true, true, c->override ? "decider" : "baseline_policy",
			      c->override ? "not_allowed" : "allow");
		c->decided = true;
		netproxy_start_mitm(c, n);
		return;
	} else if (dial(c) == 0) {
		return;
	}
	else if (c->socks && c->client)
		netproxy_socks_reply(c, 1);
	else
		netproxy_send_bad_gateway(c);
	c->up = NULL;
	netproxy_finish_client(c);
}

/* The policy-time lookup of c's host on the worker pool (lookup_done goes on). */
int netproxy_start_lookup(struct npc *c)
{
	struct np_lookup *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	l->c = c;
	snprintf(l->host, sizeof(l->host), "%s", c->host);
	l->w.run = lookup_run;
	l->w.done = lookup_done;
	c->lookup = l;
	worker_submit(c->np->srv, &l->w);
	return 0;
}

int netproxy_open_upstream(struct npc *c)
{
	c->state = NPC_UPSTREAM;
	uring_timer_cancel(&c->head_timer);
	netconn_set_reading(c->client, false);
	if (c->connect || c->socks)
		c->via = netproxy_choose_upstream(c);
	if (c->via && !c->decided && !c->np->cfg->allow_local_binding)
		return netproxy_start_lookup(c);
	return dial(c);
}
