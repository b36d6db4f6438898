/* SPDX-License-Identifier: MIT */
/*
 * The managed network's proxy (proxy-internal.h): interception (credential
 * masking). A tunnel to a target a credential is bound to is answered here
 * and, for https, TLS is ended with the client under a leaf of the server's
 * CA (mitm.h); the requests inside are then read as plain ones
 * (proxy-http.c) and go out with the credential put back.
 */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "http.h"
#include "mitm.h"
#include "netconn.h"
#include "netproxy-config.h"
#include "proxy-internal.h"
#include "server.h"

static int mitm_setup(struct ssl_st *ssl, void *arg)
{
	struct npc *c = arg;

	return netproxy_mitm_setup(c->np->srv->mitm, ssl, c->host);
}

/*
 * CONNECT to a target a credential is bound to (head of n bytes): 200, then
 * TLS with the client under a certificate of the server's CA for the target;
 * the requests inside are read like plain ones and go to the target over TLS
 * of their own (verified), with the credential put back (rewrite_head).
 */
void netproxy_start_mitm(struct npc *c, size_t n)
{
	struct np_mitm *m = NULL;
	char date[64], out[128];
	int k;

	if (c->mitm_tls && netproxy_mitm_get(c->np->srv, &m) < 0) {
		if (c->socks) {
			netproxy_socks_reply(c, 1);
			return;
		}
		netproxy_send_bad_gateway(c);
		netproxy_answered(c, n);
		return;
	}
	if (c->socks) {
		/* success; no outbound socket is behind it yet: BND is 0.0.0.0:0 */
		static const uint8_t ok[10] = { 5, 0, 0, 1 };

		if (netconn_send(c->client, ok, sizeof(ok)) < 0) {
			netproxy_finish_client(c);
			return;
		}
	} else if (http_format_date(time(NULL), date, sizeof(date)) < 0 ||
		   (k = snprintf(out, sizeof(out), "HTTP/1.1 200 OK\r\ndate: %s\r\n\r\n", date)) <= 0 ||
		   netconn_send(c->client, out, (size_t)k) < 0) {
		netproxy_finish_client(c);
		return;
	}
	buf_consume(&c->head, n);
	/* bytes behind the CONNECT head are the start of the client's handshake */
	if (c->mitm_tls) {
		if (netconn_start_tls_server(c->client, netproxy_mitm_ctx(m), mitm_setup, c,
					     c->head.data, c->head.len) < 0) {
			netproxy_finish_client(c);
			return;
		}
		buf_consume(&c->head, c->head.len);
	}
	c->mitm = true;
	c->connect = false;
	c->socks = false; /* from here on, HTTP requests */
	c->keep = true;
	c->state = NPC_HEAD;
	netproxy_head_deadline(c); /* the handshake and the first request: NPC_HEAD_TIMEOUT_MS */
	netconn_set_reading(c->client, true); /* paused during a lookup */
	if (!c->mitm_tls && c->head.len)
		netproxy_client_heads(c); /* plain requests already read */
}

/*
 * Intercepts c's tunnel (decided allowed; tls: inside TLS) now, or once the
 * policy-time lookup of its name is in (n: the CONNECT head's size).
 */
void netproxy_intercept(struct npc *c, bool tls, size_t n)
{
	c->mitm_tls = tls;
	if (!c->decided && !c->np->cfg->allow_local_binding) {
		/* a name allowed if public: looked up before the answer (policy time) */
		c->mitm_pending = true;
		c->mitm_head = n;
		c->state = NPC_UPSTREAM;
		uring_timer_cancel(&c->head_timer);
		netconn_set_reading(c->client, false);
		if (netproxy_start_lookup(c) < 0) {
			c->mitm_pending = false;
			if (c->socks) {
				netproxy_socks_reply(c, 1);
				return;
			}
			netproxy_send_bad_gateway(c);
			netproxy_finish_client(c);
		}
		return;
	}
	if (!c->decided)
		netproxy_emit(c, true, true, c->override ? "decider" : "baseline_policy",
			      c->override ? "not_allowed" : "allow");
	c->decided = true;
	netproxy_start_mitm(c, n);
}
