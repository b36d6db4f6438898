/* SPDX-License-Identifier: MIT */
/*
 * The managed network's proxy (proxy-internal.h): SOCKS5 (RFC 1928, no
 * authentication) on its own listener: the greeting, CONNECT decided like
 * a CONNECT tunnel (review and interception included), UDP ASSOCIATE's
 * control connection (the relay is socks-udp.c), and the replies.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "credentials.h"
#include "log.h"
#include "netconn.h"
#include "netproxy-config.h"
#include "proxy-internal.h"
#include "socks-udp.h"


/* A SOCKS5 reply without an address (ATYP 1, 0.0.0.0:0): code 2 refused, 5 failed, ... */
void netproxy_socks_send(struct npc *c, uint8_t code)
{
	const uint8_t r[10] = { 5, code, 0, 1, 0, 0, 0, 0, 0, 0 };

	if (c->client)
		(void)netconn_send(c->client, r, sizeof(r));
}

/*
 * SOCKS5 CONNECT success: BND names the local address and port of the
 * proxy's outbound socket, as the reference's (ATYP 1 or 4). Returns its size.
 */
size_t netproxy_socks_bound_reply(struct netconn *nc, uint8_t out[22])
{
	struct sockaddr_storage ss;

	memset(out, 0, 22);
	out[0] = 5;
	out[3] = 1;
	if (netconn_local_address(nc, &ss) < 0)
		return 10;
	if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;

		out[3] = 4;
		memcpy(out + 4, &in6->sin6_addr, 16);
		memcpy(out + 20, &in6->sin6_port, 2);
		return 22;
	}
	if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;

		memcpy(out + 4, &in->sin_addr, 4);
		memcpy(out + 8, &in->sin_port, 2);
	}
	return 10;
}

/* A SOCKS5 reply that ends the control connection. */
void netproxy_socks_reply(struct npc *c, uint8_t code)
{
	netproxy_socks_send(c, code);
	netproxy_finish_client(c);
}

/* UDP ASSOCIATE: the relay's address, then the control connection only waits for its end. */
static void socks_associate(struct npc *c, uint16_t want_port)
{
	uint8_t r[10];
	int k = 0;

	if (!c->np->udp || (k = netproxy_udp_associate(c->np->udp, c, &c->peer_addr, want_port, r, &c->assoc)) < 0) {
		c->assoc = NULL;
		log_info_ratelimited("Network proxy: UDP ASSOCIATE from %s refused (%s)", c->peer,
				     c->np->udp ? strerror(-k) : "no relay socket");
		netproxy_socks_reply(c, 1);
		return;
	}
	c->state = NPC_SOCKS_UDP;
	c->udp = true;
	uring_timer_cancel(&c->head_timer);
	(void)netconn_send(c->client, r, sizeof(r));
}

/*
 * The greeting (the methods the client offers): true once answered with
 * "no authentication" and consumed, the request next; false while it is
 * incomplete or after the connection was ended.
 */
static bool socks_greeting(struct npc *c)
{
	const uint8_t *b = c->head.data;
	size_t len = c->head.len;

	if (len < 2)
		return false;
	if (b[0] != 5) {
		/* SOCKS4 or not SOCKS: closed without an answer */
		netproxy_finish_client(c);
		return false;
	}
	if (len < 2u + b[1])
		return false;
	if (!memchr(b + 2, 0, b[1])) {
		static const uint8_t none[2] = { 5, 0xff };

		(void)netconn_send(c->client, none, sizeof(none));
		netproxy_finish_client(c);
		return false;
	}
	{
		static const uint8_t noauth[2] = { 5, 0 };

		(void)netconn_send(c->client, noauth, sizeof(noauth));
	}
	buf_consume(&c->head, 2u + b[1]);
	c->state = NPC_SOCKS_REQUEST;
	return true;
}

/* SOCKS5 (RFC 1928), no authentication: CONNECT and UDP ASSOCIATE. */
void netproxy_socks_input(struct npc *c)
{
	const uint8_t *b;
	size_t len, need, alen;
	char raw[260];
	enum np_verdict v;

	if (c->state == NPC_SOCKS_GREETING && !socks_greeting(c))
		return;
	b = c->head.data;
	len = c->head.len;
	if (len < 5)
		return;
	if (b[0] != 5) {
		netproxy_finish_client(c);
		return;
	}
	switch (b[3]) {
	case 1: alen = 4; need = 4 + 4 + 2; break;
	case 4: alen = 16; need = 4 + 16 + 2; break;
	case 3: alen = b[4]; need = 5 + alen + 2; break;
	default:
		netproxy_finish_client(c); /* unknown address type: reset, as the reference */
		return;
	}
	if (len < need)
		return;
	if (b[1] == 3 && c->np->cfg->enable_socks5_udp) {
		socks_associate(c, (uint16_t)(b[need - 2] << 8 | b[need - 1]));
		buf_consume(&c->head, need);
		return;
	}
	if (b[1] != 1) {
		/* BIND, and UDP ASSOCIATE when enableSocks5Udp is false: command not supported */
		netproxy_socks_reply(c, 7);
		return;
	}
	if (b[3] == 1)
		inet_ntop(AF_INET, b + 4, raw, sizeof(raw));
	else if (b[3] == 4)
		snprintf(raw, sizeof(raw), "[%s]", inet_ntop(AF_INET6, b + 4, raw + 200, 60));
	else {
		memcpy(raw, b + 5, alen);
		raw[alen] = 0;
	}
	c->port = (uint16_t)(b[need - 2] << 8 | b[need - 1]);
	buf_consume(&c->head, need);
	c->connect = true;
	if (!netproxy_normalize_host(raw, strlen(raw), c->host, sizeof(c->host))) {
		netproxy_socks_reply(c, 2);
		return;
	}
	/* limited mode: only 443 is considered (and it needs the MITM the launch lacks) */
	c->method = NULL;
	if (c->np->cfg->mode == NP_MODE_LIMITED) {
		netproxy_emit(c, false, false, "mode_guard", "method_not_allowed");
		log_info_ratelimited("Network proxy: refused SOCKS5 %s:%u (limited mode)", c->host,
				     (unsigned)c->port);
		netproxy_socks_reply(c, 2);
		return;
	}
	v = netproxy_policy_decide(c->np->pol, c->host);
	if (v == NP_NOT_ALLOWED && netproxy_review_start(c))
		return; /* netproxy_socks_decided() once answered */
	netproxy_socks_decided(c, v);
}

/* The SOCKS5 CONNECT's host decision v (and the review's answer, if one was asked). */
void netproxy_socks_decided(struct npc *c, enum np_verdict v)
{
	if (v == NP_NOT_ALLOWED && c->rv != RV_NONE) {
		if (netproxy_review_refused(c))
			return;
		v = NP_ALLOW_IF_PUBLIC;
	}
	if (v == NP_DENIED || v == NP_NOT_ALLOWED || v == NP_NOT_ALLOWED_LOCAL) {
		log_info_ratelimited("Network proxy: refused SOCKS5 %s:%u (%s)", c->host,
				     (unsigned)c->port, netproxy_verdict_reason(v));
		netproxy_emit(c, true, false, "baseline_policy", netproxy_verdict_reason(v));
		netproxy_socks_reply(c, 2);
		return;
	}
	if (v == NP_ALLOW) {
		netproxy_emit(c, true, true, "baseline_policy", "allow");
		c->decided = true;
	}
	/* a credential bound here: intercepted as the reference does (https in TLS, else plain) */
	if (c->np->cfg->broker && !netproxy_choose_upstream(c)) {
		bool https = netproxy_broker_binds(c->np->cfg->broker, true, c->host, c->port);

		if (https || netproxy_broker_binds(c->np->cfg->broker, false, c->host, c->port)) {
			netproxy_intercept(c, https, 0);
			return;
		}
	}
	if (netproxy_open_upstream(c) < 0) {
		c->up = NULL;
		netproxy_socks_reply(c, 1);
	}
}
