/* SPDX-License-Identifier: MIT */
/*
 * The managed network's proxy (proxy-internal.h): what the client is told
 * here (plain-text and JSON refusals in the reference's words, 502) and the
 * decisions: each one a network/policyDecision for the decision sink, an
 * audit line and the metrics' counters.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "http.h"
#include "log.h"
#include "macro.h"
#include "netconn.h"
#include "proxy-internal.h"
#include "server.h"
#include "socks-udp.h"

/* ---- answers ---- */

void netproxy_send_text(struct npc *c, const char *status, const char *header, const char *body)
{
	char date[64], out[1024];
	int n;

	if (!c->client || http_format_date(time(NULL), date, sizeof(date)) < 0)
		return;
	n = snprintf(out, sizeof(out),
		     "HTTP/1.1 %s\r\ncontent-type: text/plain\r\n%s%s%scontent-length: %zu\r\n"
		     "date: %s\r\n\r\n%s",
		     status, header ? "x-proxy-error: " : "", header ? header : "", header ? "\r\n" : "",
		     strlen(body), date, body);
	if (n > 0 && (size_t)n < sizeof(out))
		(void)netconn_send(c->client, out, (size_t)n);
}

/* The reference's JSON refusal of a plain request (keys in its order, no newline). */
/* The target cannot be reached (inside an intercepted tunnel the reference words it so). */
void netproxy_send_bad_gateway(struct npc *c)
{
	netproxy_send_text(c, "502 Bad Gateway", NULL,
			   c->mitm ? "mitm upstream error" : "upstream failure");
}

void netproxy_send_refusal_json(struct npc *c, const char *reason, const char *header,
				const char *message, const char *source, const char *decision)
{
	struct buf body = { 0 }, out = { 0 };
	char date[64], port[16];

	if (!c->client || http_format_date(time(NULL), date, sizeof(date)) < 0)
		return;
	snprintf(port, sizeof(port), "%u", (unsigned)c->port);
	if (buf_append(&body, "{\"status\":\"blocked\",\"host\":", 27) < 0 ||
	    log_json_string(&body, c->host, strlen(c->host)) < 0 ||
	    buf_append(&body, ",\"reason\":", 10) < 0 ||
	    log_json_string(&body, reason, strlen(reason)) < 0 ||
	    buf_append(&body, ",\"decision\":\"", 13) < 0 ||
	    buf_append(&body, decision, strlen(decision)) < 0 ||
	    buf_append(&body, "\",\"source\":", 11) < 0 ||
	    log_json_string(&body, source, strlen(source)) < 0 ||
	    buf_append(&body, ",\"protocol\":\"http\",\"port\":", 26) < 0 ||
	    buf_append(&body, port, strlen(port)) < 0 ||
	    buf_append(&body, ",\"message\":", 11) < 0 ||
	    log_json_string(&body, message, strlen(message)) < 0 || buf_append(&body, "}", 1) < 0)
		goto out;
	{
		char hdr[512];
		int n = snprintf(hdr, sizeof(hdr),
				 "HTTP/1.1 403 Forbidden\r\ncontent-type: application/json\r\n"
				 "x-proxy-error: %s\r\ncontent-length: %zu\r\ndate: %s\r\n\r\n",
				 header, body.len, date);

		if (n > 0 && (size_t)n < sizeof(hdr) && buf_append(&out, hdr, (size_t)n) == 0 &&
		    buf_append(&out, body.data, body.len) == 0)
			(void)netconn_send(c->client, out.data, out.len);
	}
out:
	buf_done(&body);
	buf_done(&out);
}

const char *netproxy_protocol(const struct npc *c)
{
	return c->udp ? "socks5_udp" : c->socks ? "socks5_tcp" : c->connect ? "https_connect" : "http";
}

/* One network/policyDecision (the reference's members, in its order). */
void netproxy_emit_decision(struct npc *c, bool domain, const char *decision, const char *source,
			    const char *reason)
{
	bool allow = strcmp(decision, "allow") == 0;
	struct netproxy *np = c->np;
	struct buf b = { 0 };
	char ts[32], num[64];

	if (allow && domain) {
		np->srv->metrics.proxy_allowed++;
	} else if (!allow) {
		static const char *const reasons[] = SERVER_METRICS_PROXY_REASONS;

		for (int i = 0; i < SERVER_METRICS_N_PROXY_REASONS; i++)
			if (strcmp(reasons[i], reason) == 0)
				np->srv->metrics.proxy_refused[i]++;
	}
	if (log_audit_enabled()) {
		/* One line per decision: where, what, why; never a body or a header's value. */
		struct log_field fl[] = {
			LOG_STR("session", np->session ? np->session : ""),
			LOG_STR("process", np->process ? np->process : ""),
			LOG_STR("protocol", netproxy_protocol(c)),
			LOG_STR("host", c->host),
			LOG_INT("port", c->port),
			LOG_STR("decision", decision),
			LOG_STR("reason", reason),
			LOG_STR("source", source),
			LOG_STR("method", c->method ? c->method : ""),
		};

		log_audit("network.decision", fl, ELEMENTSOF(fl));
	}
	if (!np->sink)
		return;
	log_format_time(ts);
	snprintf(num, sizeof(num), ",\"port\":%u", (unsigned)c->port);
	if (buf_append(&b, ",\"timestamp\":\"", 14) < 0 || buf_append(&b, ts, strlen(ts)) < 0 ||
	    buf_append(&b, "\",\"scope\":\"", 11) < 0 ||
	    buf_append(&b, domain ? "domain" : "non_domain", domain ? 6 : 10) < 0 ||
	    buf_append(&b, "\",\"decision\":\"", 14) < 0 ||
	    buf_append(&b, decision, strlen(decision)) < 0 ||
	    buf_append(&b, "\",\"source\":", 11) < 0 || log_json_string(&b, source, strlen(source)) < 0 ||
	    buf_append(&b, ",\"reason\":", 10) < 0 || log_json_string(&b, reason, strlen(reason)) < 0 ||
	    buf_append(&b, ",\"protocol\":\"", 13) < 0)
		goto out;
	{
		const char *proto = netproxy_protocol(c);

		if (buf_append(&b, proto, strlen(proto)) < 0 || buf_append(&b, "\",\"host\":", 9) < 0 ||
		    log_json_string(&b, c->host, strlen(c->host)) < 0 ||
		    buf_append(&b, num, strlen(num)) < 0)
			goto out;
	}
	if (c->method && (buf_append(&b, ",\"method\":", 10) < 0 ||
			  log_json_string(&b, c->method, strlen(c->method)) < 0))
		goto out;
	if (buf_append(&b, ",\"client\":", 10) < 0 || log_json_string(&b, c->peer, strlen(c->peer)) < 0 ||
	    buf_append(&b, ",\"policyOverride\":", 18) < 0 ||
	    buf_append(&b, allow && c->override ? "true" : "false", allow && c->override ? 4 : 5) < 0 ||
	    buf_append(&b, "", 1) < 0)
		goto out;
	np->sink(np->owner, (const char *)b.data);
out:
	buf_done(&b);
}

void netproxy_emit(struct npc *c, bool domain, bool allow, const char *source, const char *reason)
{
	netproxy_emit_decision(c, domain, allow ? "allow" : "deny", source, reason);
}

void netproxy_refuse(struct npc *c, enum np_verdict v)
{
	if (c->connect)
		netproxy_send_text(c, "403 Forbidden", netproxy_verdict_header(v),
				   netproxy_verdict_message(v));
	else
		netproxy_send_refusal_json(c, netproxy_verdict_reason(v),
					   netproxy_verdict_header(v), netproxy_verdict_message(v),
					   "baseline_policy", "deny");
}

/* The refusal of a target that resolves to a local address, or never resolves. */
void netproxy_refuse_local(struct npc *c)
{
	netproxy_emit(c, true, false, "baseline_policy", "not_allowed_local");
	c->decided = true;
	if (c->socks)
		netproxy_socks_send(c, 2);
	else
		netproxy_refuse(c, NP_NOT_ALLOWED_LOCAL);
}

/* socks-udp.h: a decision about a datagram's destination. */
void netproxy_udp_decision(struct npc *c, const char *host, uint16_t port, bool domain, bool allow,
			   const char *source, const char *reason)
{
	snprintf(c->host, sizeof(c->host), "%s", host);
	c->port = port;
	c->method = NULL;
	netproxy_emit(c, domain, allow, source, reason);
}
