/* SPDX-License-Identifier: MIT */
/*
 * The managed network's HTTP proxy on the ring (proxy.h). One struct npc per
 * client connection: its client side is an adopted netconn, its upstream an
 * outbound one. A request head is read whole (at most NPC_HEAD_MAX), decided
 * by the policy, then refused with the reference's answer or forwarded:
 * CONNECT as a raw tunnel (200 sent once the target is known to be
 * allowed, as the reference sends it before dialing), a plain request with
 * its head rewritten to origin form and its declared body, after which the
 * client's reading stops until the upstream ends the response (one request
 * per upstream connection, "connection: close" to the origin: nothing the
 * client pipelines reaches an upstream the policy did not see).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "chunked.h"
#include "credentials.h"
#include "http.h"
#include "http-client.h"
#include "list.h"
#include "log.h"
#include "mitm.h"
#include "macro.h"
#include "netconn.h"
#include "netproxy-config.h"
#include "policy.h"
#include "proxy.h"
#include "ring.h"
#include "server.h"
#include "upstream.h"
#include "worker.h"
#include "socks-udp.h"

#define NPC_HEAD_MAX (64 * 1024)     /* a request head larger than this: 431 */
#define NPC_MAX_CONNS 256            /* client connections per process */
#define NPC_QUEUE_HIGH (256 * 1024)  /* bytes queued toward one side before its source pauses */
#define NPC_CONNECT_TIMEOUT_MS 30000
#define NPC_ACCEPT_PAUSE_MS 100      /* accept failed for want of fds or memory: retry after */
#define NPC_HEAD_TIMEOUT_MS 30000    /* a request head (or SOCKS5 handshake) must arrive within */

struct netproxy {
	struct server *srv;
	struct netproxy_config *cfg;
	struct np_policy *pol;
	int http_fd, socks_fd, udp_fd;
	struct np_udp *udp;           /* SOCKS5 UDP ASSOCIATE's relay (socks-udp.c), when enabled */
	struct uring_op accept_op, socks_accept_op;
	struct uring_timer pause;     /* accepting paused (no fd or memory left): retried when it fires */
	bool paused[2];               /* which listener waits for it (HTTP, SOCKS5) */
	struct list_head conns;
	unsigned n_conns;
	bool freeing; /* netproxy_free() ran: freed once the accept op is back */
	void (*sink)(void *owner, const char *tail);
	void *owner;
	const struct netproxy_reviewer *reviewer; /* review: who asks the client (NULL: nobody) */
	/* allowUpstreamProxy: the server's upstream proxy for plain requests [0] and tunnels [1] */
	struct np_upstream upstream[2];
	bool has_upstream[2];
	char *session, *process; /* for the audit log's lines */
};

enum npc_state {
	NPC_HEAD,    /* reading a request head */
	NPC_UPSTREAM, /* upstream connecting */
	NPC_UP_CONNECT, /* through an upstream proxy: its answer to our CONNECT */
	NPC_TUNNEL,  /* bytes both ways (CONNECT) */
	NPC_FORWARD, /* a plain request: its body to upstream, then the response back */
	NPC_DONE,    /* ending */
	NPC_SOCKS_GREETING, /* SOCKS5: the client's methods */
	NPC_SOCKS_REQUEST,  /* SOCKS5: its request */
	NPC_SOCKS_UDP,      /* SOCKS5: the control connection of a UDP association */
	NPC_ASKING,  /* the client of the server is asked about the target (review) */
};

/* Review (networkProxy.policyDecisionTimeoutMs): the answer for the request at hand. */
enum npc_review {
	RV_NONE,
	RV_ALLOW,  /* allowed by the decider: still only if public once resolved */
	RV_DENY,   /* deny or ask with the client's reason */
	RV_ASK,
	RV_FAILED, /* nobody to ask, an error reply, a bad answer or no answer in time: not_allowed */
};

struct npc {
	struct list_head link;
	struct netproxy *np;
	struct netconn *client, *up;
	enum npc_state state;
	struct buf head;       /* request bytes not yet handled */
	bool connect;          /* CONNECT (or a SOCKS5 CONNECT: socks too) */
	bool mitm;             /* intercepted (credential masking): requests inside TLS to host:port */
	bool mitm_tls;         /* intercepted inside TLS (https), else plain HTTP (a SOCKS5 tunnel) */
	bool mitm_pending;     /* to be intercepted once its lookup is in */
	size_t mitm_head;      /* then: the CONNECT head's size */
	bool socks;            /* a SOCKS5 client */
	uint64_t body_left;    /* FORWARD: request body bytes still to pass (Content-Length) */
	bool chunked;          /* FORWARD: a chunked body, its end found by ch */
	struct np_chunked ch;
	struct buf out_head;   /* the rewritten request head, sent once upstream is up */
	struct uring_timer head_timer; /* NPC_HEAD_TIMEOUT_MS for a head (or SOCKS5 handshake) */
	bool dead;             /* freed but for its timer's last callback */
	char host[256];        /* normalised */
	uint16_t port;
	char peer[64];          /* the client's address, "127.0.0.1:PORT" */
	const char *method;     /* the request's method (static copy below), NULL for SOCKS5 */
	char method_buf[16];
	bool decided;           /* the domain decision was reported */
	struct sockaddr_storage peer_addr; /* the client's address (AF_UNSPEC if unknown) */
	struct np_udp_assoc *assoc; /* NPC_SOCKS_UDP: its association */
	bool udp;               /* decisions are about its datagrams (protocol socks5_udp) */
	bool override;          /* allowed by the decider where the baseline would deny */
	enum npc_review rv;     /* the review's answer, taken by review_refused() */
	char *rv_reason;        /* RV_DENY, RV_ASK: the client's reason */
	void *review;           /* the owner's pending question (reviewer->ask), or NULL */
	struct uring_timer review_timer; /* the question's deadline: its timeout + 5 s */
	const struct np_upstream *via; /* through this upstream proxy (allowUpstreamProxy), or NULL */
	struct buf up_head;     /* NPC_UP_CONNECT: the upstream proxy's answer so far */
	struct np_lookup *lookup; /* the policy-time lookup in flight (through an upstream proxy) */
	/* FORWARD: the response (its head in up_head until complete, then its body's framing) */
	bool keep;              /* the client's connection outlives this request */
	bool head_request;      /* HEAD: the response has no body */
	int minor;              /* the request's HTTP/1.<minor> */
	bool resp_started;      /* its head went to the client */
	struct http_body_reader body;
};

/*
 * Through an upstream proxy the target is never resolved by the connection
 * (it goes to the proxy): a name allowed only if public is looked up on its
 * own first, on the worker pool, as the reference's policy-time check.
 */
struct np_lookup {
	struct work w;
	struct npc *c;  /* NULL once the request is gone (the job frees itself) */
	char host[256];
	bool refused;   /* did not resolve, or an answer is not public */
};

static void finish_client(struct npc *c);

/* The memory goes once neither timer's op is in flight (their callbacks call this again). */
static void npc_release(struct npc *c)
{
	if (uring_op_idle(&c->head_timer.op) && uring_op_idle(&c->review_timer.op))
		free(c);
}

/* The rewritten head may hold a real credential (credential masking): wiped before it goes. */
static void out_head_done(struct npc *c)
{
	if (c->out_head.data)
		sodium_memzero(c->out_head.data, c->out_head.cap);
	buf_done(&c->out_head);
}

static void npc_free(struct npc *c)
{
	netproxy_udp_assoc_end(c->assoc); /* the association lives as long as its control connection */
	c->assoc = NULL;
	list_del(&c->link);
	c->np->n_conns--;
	buf_done(&c->head);
	out_head_done(c);
	buf_done(&c->up_head);
	if (c->lookup)
		c->lookup->c = NULL;
	free(c->rv_reason);
	c->rv_reason = NULL;
	if (c->review) {
		c->np->reviewer->cancel(c->review);
		c->review = NULL;
	}
	/* a timer's callback may still come: it must not touch the proxy, which may be gone */
	c->dead = true;
	uring_timer_cancel(&c->head_timer);
	uring_timer_cancel(&c->review_timer);
	npc_release(c);
}

static void on_head_timeout(struct uring_timer *t, bool fired)
{
	struct npc *c = container_of(t, struct npc, head_timer);

	if (c->dead) {
		npc_release(c);
		return;
	}
	if (!fired)
		return;
	if (c->state == NPC_HEAD || c->state == NPC_SOCKS_GREETING || c->state == NPC_SOCKS_REQUEST) {
		log_debug("Network proxy: closing %s: no request within %d ms", c->peer,
			  NPC_HEAD_TIMEOUT_MS);
		finish_client(c);
	}
}

/* Waiting for a request head (again): it has NPC_HEAD_TIMEOUT_MS. */
static void head_deadline(struct npc *c)
{
	uring_timer_arm(&c->np->srv->ring, &c->head_timer, NPC_HEAD_TIMEOUT_MS, on_head_timeout);
}

static void npc_maybe_free(struct npc *c)
{
	if (!c->client && !c->up)
		npc_free(c);
}

/* ---- answers ---- */

static void send_text(struct npc *c, const char *status, const char *header, const char *body)
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
static void send_bad_gateway(struct npc *c)
{
	send_text(c, "502 Bad Gateway", NULL, c->mitm ? "mitm upstream error" : "upstream failure");
}

static void send_refusal_json(struct npc *c, const char *reason, const char *header,
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

static const char *protocol(const struct npc *c)
{
	return c->udp ? "socks5_udp" : c->socks ? "socks5_tcp" : c->connect ? "https_connect" : "http";
}

/* One network/policyDecision (the reference's members, in its order). */
static void emit_decision(struct npc *c, bool domain, const char *decision, const char *source,
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
			LOG_STR("protocol", protocol(c)),
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
		const char *proto = protocol(c);

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

static void emit(struct npc *c, bool domain, bool allow, const char *source, const char *reason)
{
	emit_decision(c, domain, allow ? "allow" : "deny", source, reason);
}

static void refuse(struct npc *c, enum np_verdict v)
{
	if (c->connect)
		send_text(c, "403 Forbidden", netproxy_verdict_header(v), netproxy_verdict_message(v));
	else
		send_refusal_json(c, netproxy_verdict_reason(v), netproxy_verdict_header(v),
				  netproxy_verdict_message(v), "baseline_policy", "deny");
}

static void socks_reply(struct npc *c, uint8_t code);

/* A SOCKS5 reply without an address (ATYP 1, 0.0.0.0:0): code 2 refused, 5 failed, ... */
static void socks_send(struct npc *c, uint8_t code)
{
	const uint8_t r[10] = { 5, code, 0, 1, 0, 0, 0, 0, 0, 0 };

	if (c->client)
		(void)netconn_send(c->client, r, sizeof(r));
}

/*
 * Takes the review's answer for the request at hand: false when it allows
 * (the request goes on, as a name allowed only if public), true when it
 * refused it (reported and answered).
 */
static bool review_refused(struct npc *c)
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
			emit(c, true, true, "decider", "not_allowed");
			c->decided = true;
		}
		return false;
	}
	log_info_ratelimited("Network proxy: the client refused %s:%u (%s)", c->host,
			     (unsigned)c->port, decision);
	emit_decision(c, true, decision, "decider", reason);
	if (c->socks)
		socks_reply(c, 2);
	else if (c->connect)
		send_text(c, "403 Forbidden", header, message);
	else
		send_refusal_json(c, reason, header, message, "decider", decision);
	free(c->rv_reason);
	c->rv_reason = NULL;
	return true;
}


static void review_resume(struct npc *c);

static void on_review_timeout(struct uring_timer *t, bool fired)
{
	struct npc *c = container_of(t, struct npc, review_timer);

	if (c->dead) {
		npc_release(c);
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
static bool review_start(struct npc *c)
{
	struct netproxy *np = c->np;
	uint64_t ms = np->cfg->decision_timeout_ms;

	if (!np->cfg->review)
		return false;
	c->rv = RV_FAILED;
	/* the reference's decider never asks about such a host */
	if (strlen(c->host) > 253 || !np->reviewer)
		return false;
	c->review = np->reviewer->ask(np->owner, protocol(c), c->host, c->port, c);
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

/* Ends the client connection once what was queued is written. */
static void finish_client(struct npc *c)
{
	c->state = NPC_DONE;
	if (c->client)
		netconn_shutdown(c->client);
}

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

static void client_resume(struct npc *c);
static void pass_body(struct npc *c);
static void refuse_local(struct npc *c);

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
					emit(c, true, false, "baseline_policy", "not_allowed_local");
				c->decided = true;
				return -EACCES;
			}
	if (!c->decided)
		emit(c, true, true, c->override ? "decider" : "baseline_policy",
		     c->override ? "not_allowed" : "allow");
	c->decided = true;
	return 0;
}

static void established(struct npc *c);
/*
 * SOCKS5 CONNECT success: BND names the local address and port of the
 * proxy's outbound socket, as the reference's (ATYP 1 or 4). Returns its size.
 */
static size_t socks_bound_reply(struct netconn *nc, uint8_t out[22])
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
			finish_client(c);
			npc_maybe_free(c);
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
		socks_send(c, 5);
	else
		send_bad_gateway(c);
	netconn_close(c->up);
	c->up = NULL;
	finish_client(c);
	npc_maybe_free(c);
}

/* The target is reached (directly, or through the upstream proxy's tunnel). */
static void established(struct npc *c)
{
	struct netconn *nc = c->up;

	if (c->socks) {
		uint8_t ok[22];

		c->state = NPC_TUNNEL;
		(void)netconn_send(c->client, ok, socks_bound_reply(nc, ok));
		if (c->head.len && netconn_send(nc, c->head.data, c->head.len) == 0)
			buf_consume(&c->head, c->head.len);
		client_resume(c);
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
		client_resume(c);
		return;
	}
	c->state = NPC_FORWARD;
	if (netconn_send(nc, c->out_head.data, c->out_head.len) < 0) {
		finish_client(c);
		return;
	}
	c->np->srv->metrics.proxy_bytes_up += c->out_head.len;
	out_head_done(c);
	pass_body(c);
}

static void client_heads(struct npc *c);
static bool hop_by_hop_of(const struct http_header *h, const struct http_header *conn, bool response);

/* The response is complete: the client's connection waits for its next request, or ends. */
static void response_done(struct npc *c)
{
	bool body_sent = c->chunked ? netproxy_chunked_done(&c->ch) : c->body_left == 0;

	netconn_close(c->up);
	c->up = NULL;
	/* an answer before the request's body ended leaves the client's bytes out of step */
	if (!c->keep || !body_sent || !c->client) {
		finish_client(c);
		npc_maybe_free(c);
		return;
	}
	c->state = NPC_HEAD;
	c->resp_started = false;
	c->via = NULL;
	head_deadline(c); /* an idle connection ends 30 s after its last response, as the reference's */
	netconn_set_reading(c->client, true);
	client_heads(c);
}

/* Body bytes of the response: passed on as they came, their framing followed to the end. */
static void response_body(struct npc *c, const uint8_t *p, size_t n)
{
	long r;

	if (c->body.done || !n)
		return; /* after the end: not the response's */
	r = http_body_reader_feed(&c->body, p, n, NULL);
	if (r < 0) {
		c->keep = false;
		r = (long)n; /* malformed framing: passed on, and the connection ends with it */
	}
	c->np->srv->metrics.proxy_bytes_down += (uint64_t)r;
	if (!c->client || netconn_send(c->client, p, (size_t)r) < 0) {
		netconn_close(c->up);
		c->up = NULL;
		npc_maybe_free(c);
		return;
	}
	if (c->body.done) {
		response_done(c);
		return;
	}
	if (netconn_queued(c->client) > NPC_QUEUE_HIGH)
		netconn_set_reading(c->up, false);
}

/*
 * The response head for the client: hop-by-hop headers dropped (the
 * origin's Connection: close too), a date added when the origin sent none,
 * and Connection: close when this connection ends with the response.
 */
static int response_head(struct npc *c, const struct http_response *resp, struct buf *out)
{
	const struct http_header *conn = http_response_header(resp, "connection");
	char line[64], date[64];
	/* in the origin's version, as the reference's (an HTTP/1.0 answer: clients reconnect) */
	int n = snprintf(line, sizeof(line), "HTTP/1.%d %03d ", resp->minor_version, resp->status);

	if (buf_append(out, line, (size_t)n) < 0 || buf_append(out, resp->reason, resp->reason_len) < 0 ||
	    buf_append(out, "\r\n", 2) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < resp->n_headers; i++) {
		const struct http_header *h = &resp->headers[i];

		if (hop_by_hop_of(h, conn, true))
			continue;
		if (buf_append(out, h->name, h->name_len) < 0 || buf_append(out, ": ", 2) < 0 ||
		    buf_append(out, h->value, h->value_len) < 0 || buf_append(out, "\r\n", 2) < 0)
			return -ENOMEM;
	}
	if (!http_response_header(resp, "date") && http_format_date(time(NULL), date, sizeof(date)) >= 0 &&
	    (buf_append(out, "date: ", 6) < 0 || buf_append(out, date, strlen(date)) < 0 ||
	     buf_append(out, "\r\n", 2) < 0))
		return -ENOMEM;
	/* (an HTTP/1.0 client expects the close without being told, and the reference tells it nothing) */
	if (!c->keep && c->minor >= 1 && buf_append(out, "connection: close\r\n", 19) < 0)
		return -ENOMEM;
	return buf_append(out, "\r\n", 2);
}

/* FORWARD: what the origin (or the upstream proxy) answers. */
static void forward_response(struct npc *c, const uint8_t *p, size_t n)
{
	struct http_response resp;
	struct buf out = { 0 };
	int r;

	if (c->resp_started) {
		response_body(c, p, n);
		return;
	}
	if (buf_append(&c->up_head, p, n) < 0)
		goto fail;
	for (;;) {
		r = http_response_parse((const char *)c->up_head.data, c->up_head.len, NPC_HEAD_MAX, &resp);
		if (r == -EAGAIN)
			return;
		if (r < 0)
			goto fail;
		if (resp.status >= 200 || resp.status == 101)
			break;
		/* an interim answer (100 Continue): passed on as it is; the final one follows */
		if (c->client)
			(void)netconn_send(c->client, c->up_head.data, (size_t)r);
		buf_consume(&c->up_head, (size_t)r);
	}
	if (resp.status == 101 ||
	    http_body_reader_init(&c->body, &resp, c->head_request, UINT64_MAX) < 0)
		goto fail;
	if (c->body.mode == HTTP_BODY_UNTIL_CLOSE)
		c->keep = false; /* its end is the origin's close: so is the client's */
	if (response_head(c, &resp, &out) < 0 || !c->client || netconn_send(c->client, out.data, out.len) < 0)
		goto fail;
	buf_done(&out);
	c->resp_started = true;
	buf_consume(&c->up_head, (size_t)r);
	{
		/* the body's first bytes came with the head */
		struct buf rest = c->up_head;

		c->up_head = (struct buf){ 0 };
		if (c->body.done)
			response_done(c);
		else
			response_body(c, rest.data, rest.len);
		buf_done(&rest);
	}
	return;
fail:
	buf_done(&out);
	buf_done(&c->up_head);
	log_info_ratelimited("Network proxy: a bad response from %s:%u", c->host, (unsigned)c->port);
	if (!c->resp_started)
		send_bad_gateway(c);
	netconn_close(c->up);
	c->up = NULL;
	finish_client(c);
	npc_maybe_free(c);
}

static void up_data(struct netconn *nc, const uint8_t *p, size_t n)
{
	struct npc *c = netconn_userdata(nc);

	if (c->state == NPC_UP_CONNECT) {
		up_connect_answer(c, p, n);
		return;
	}
	if (c->state == NPC_FORWARD) {
		forward_response(c, p, n);
		return;
	}
	c->np->srv->metrics.proxy_bytes_down += n;
	if (!c->client || netconn_send(c->client, p, n) < 0) {
		netconn_close(nc);
		c->up = NULL;
		npc_maybe_free(c);
		return;
	}
	if (netconn_queued(c->client) > NPC_QUEUE_HIGH)
		netconn_set_reading(nc, false);
}

static void up_drained(struct netconn *nc)
{
	struct npc *c = netconn_userdata(nc);

	client_resume(c);
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
		refuse_local(c);
	} else if (was_connecting && c->socks) {
		socks_send(c, err == -EACCES ? 2 : err == -EHOSTUNREACH ? 4 : err == -ENETUNREACH ? 3
			   : err == -ETIMEDOUT ? 6 : 5);
	} else if (was_connecting && !c->connect) {
		if (err == -EACCES)
			refuse(c, NP_NOT_ALLOWED_LOCAL);
		else
			send_bad_gateway(c);
	} else if (was_connecting && err == -EACCES) {
		refuse(c, NP_NOT_ALLOWED_LOCAL);
	} else if (c->state == NPC_FORWARD && !c->resp_started) {
		send_bad_gateway(c);
	}
	log_debug("Network proxy: %s:%u from %s ended: %s", c->host, (unsigned)c->port, c->peer,
		  why ? why : "closed");
	finish_client(c);
	npc_maybe_free(c);
}

/* ---- client ---- */

static void client_data(struct netconn *nc, const uint8_t *p, size_t n);
static void client_drained(struct netconn *nc);
static void client_closed(struct netconn *nc, int err, const char *why);

static const struct netconn_handlers client_handlers = {
	.data = client_data,
	.drained = client_drained,
	.closed = client_closed,
};

static void client_resume(struct npc *c)
{
	if (c->client && c->up && c->state == NPC_FORWARD &&
	    netconn_queued(c->up) <= NPC_QUEUE_HIGH &&
	    (c->chunked ? !netproxy_chunked_done(&c->ch) : c->body_left > 0))
		netconn_set_reading(c->client, true);
	if (c->client && c->state == NPC_TUNNEL && (!c->up || netconn_queued(c->up) <= NPC_QUEUE_HIGH))
		netconn_set_reading(c->client, true);
	if (c->up && c->client && netconn_queued(c->client) <= NPC_QUEUE_HIGH)
		netconn_set_reading(c->up, true);
}

/* FORWARD: the declared body out of the buffer; then the client's reading stops. */
static void pass_body(struct npc *c)
{
	size_t k = c->head.len < c->body_left ? c->head.len : (size_t)c->body_left;
	bool more;

	if (c->chunked) {
		long r = netproxy_chunked_scan(&c->ch, c->head.data, c->head.len);

		if (r < 0) {
			/* a malformed body: the origin has a truncated request, the client an end */
			if (c->up)
				netconn_close(c->up);
			c->up = NULL;
			finish_client(c);
			return;
		}
		k = (size_t)r;
	}
	if (k && c->up && netconn_send(c->up, c->head.data, k) == 0) {
		c->np->srv->metrics.proxy_bytes_up += k;
		buf_consume(&c->head, k);
		if (!c->chunked)
			c->body_left -= k;
	}
	more = c->chunked ? !netproxy_chunked_done(&c->ch) : c->body_left > 0;
	if (c->client)
		netconn_set_reading(c->client, more && netconn_queued(c->up) <= NPC_QUEUE_HIGH);
}

static uint16_t default_port(const char *scheme, size_t n)
{
	if ((n == 4 && !strncasecmp(scheme, "http", 4)) || (n == 2 && !strncasecmp(scheme, "ws", 2)))
		return 80;
	if ((n == 5 && !strncasecmp(scheme, "https", 5)) || (n == 3 && !strncasecmp(scheme, "wss", 3)))
		return 443;
	return 0;
}

/* "host[:port]" (brackets for IPv6) into c->host/c->port; def when no port. 0 or -EINVAL. */
static int set_authority(struct npc *c, const char *a, size_t n, uint16_t def)
{
	const char *colon = NULL;
	unsigned long port = def;

	if (n && a[0] == '[') {
		const char *close = memchr(a, ']', n);

		if (!close)
			return -EINVAL;
		if ((size_t)(close - a) + 1 < n) {
			if (close[1] != ':')
				return -EINVAL;
			colon = close + 1;
		}
	} else {
		colon = memchr(a, ':', n);
	}
	if (colon) {
		char *end;
		char num[8];
		size_t k = (size_t)(a + n - colon - 1);

		if (k == 0 || k >= sizeof(num))
			return -EINVAL;
		memcpy(num, colon + 1, k);
		num[k] = 0;
		port = strtoul(num, &end, 10);
		if (*end || port == 0 || port > 65535)
			return -EINVAL;
	}
	if (!netproxy_normalize_host(a, n, c->host, sizeof(c->host)))
		return -EINVAL;
	c->port = (uint16_t)port;
	return 0;
}

static bool name_is(const struct http_header *h, const char *name)
{
	return h->name_len == strlen(name) && !strncasecmp(h->name, name, h->name_len);
}

/* True when the Connection header conn (may be NULL) lists token t[0..n) (case-insensitive). */
static bool conn_names(const struct http_header *conn, const char *t, size_t n)
{
	const char *v, *e;

	if (!conn)
		return false;
	for (v = conn->value, e = v + conn->value_len; v < e;) {
		const char *comma = memchr(v, ',', (size_t)(e - v));
		const char *end = comma ? comma : e;

		while (v < end && (*v == ' ' || *v == '\t'))
			v++;
		while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
			end--;
		if ((size_t)(end - v) == n && !strncasecmp(v, t, n))
			return true;
		v = comma ? comma + 1 : e;
	}
	return false;
}

/*
 * Hop-by-hop headers, dropped on the way through (RFC 9110 §7.6.1): the
 * request's and, for a response (its body is passed as it came, framing
 * included), the same but Transfer-Encoding, Content-Length and Trailer.
 */
static bool hop_by_hop_of(const struct http_header *h, const struct http_header *conn, bool response)
{
	static const char *const names[] = { "connection", "keep-alive", "proxy-connection",
					     "proxy-authorization", "te", "trailer", "upgrade", NULL };
	static const char *const resp_names[] = { "connection", "keep-alive", "proxy-connection",
						  "proxy-authenticate", "te", "upgrade", NULL };

	if (response && (name_is(h, "transfer-encoding") || name_is(h, "content-length") ||
			 name_is(h, "trailer")))
		return false;
	for (size_t i = 0; response && resp_names[i]; i++)
		if (name_is(h, resp_names[i]))
			return true;
	for (size_t i = 0; !response && names[i]; i++)
		if (name_is(h, names[i]))
			return true;
	/* every header Connection names */
	return conn_names(conn, h->name, h->name_len);
}

static bool hop_by_hop(const struct http_header *h, const struct http_header *conn)
{
	return hop_by_hop_of(h, conn, false);
}

/* True when a Connection header holds the token "close". */
static bool wants_close(const struct http_header *conn)
{
	return conn_names(conn, "close", 5);
}

/*
 * The request head for the origin: origin-form target, hop-by-hop headers
 * dropped, close. With credential masking, a header holding a placeholder of
 * a credential bound to c's target (plain http, origin path opath) carries
 * the real value instead (credentials.h); nothing else changes.
 */
static int rewrite_head(const struct npc *c, const struct http_request *req, const char *path,
			size_t path_len, const char *opath, size_t opath_len, const char *auth,
			struct buf *out)
{
	const struct http_header *conn = http_request_header(req, "connection");
	const struct np_broker *br = c->np->cfg->broker;
	char line[64];

	/* room for the head and the credentials put back at once: no realloc leaves a copy behind */
	if (netproxy_broker_count(br)) {
		size_t est = req->method_len + path_len + 128 + 16384;

		for (size_t i = 0; i < req->n_headers; i++)
			est += req->headers[i].name_len + req->headers[i].value_len + 4;
		if (buf_reserve(out, est) < 0)
			return -ENOMEM;
	}

	if (buf_append(out, req->method, req->method_len) < 0 || buf_append(out, " ", 1) < 0 ||
	    buf_append(out, path, path_len) < 0)
		return -ENOMEM;
	snprintf(line, sizeof(line), " HTTP/1.%d\r\n", req->minor_version);
	if (buf_append(out, line, strlen(line)) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < req->n_headers; i++) {
		const struct http_header *h = &req->headers[i];

		char *real = NULL;
		int r;

		if (hop_by_hop(h, conn))
			continue;
		r = netproxy_broker_translate(br, c->mitm_tls, c->host, c->port, opath, opath_len, h->name,
					h->name_len, h->value, h->value_len, &real);
		if (r < 0)
			return r;
		if (r > 0)
			log_debug("Network proxy: credential put back in %.*s toward %s:%u",
				  (int)h->name_len, h->name, c->host, (unsigned)c->port);
		r = buf_append(out, h->name, h->name_len) < 0 || buf_append(out, ": ", 2) < 0 ||
		    (real ? buf_append(out, real, strlen(real)) : buf_append(out, h->value, h->value_len)) < 0 ||
		    buf_append(out, "\r\n", 2) < 0;
		if (real) {
			sodium_memzero(real, strlen(real));
			free(real);
		}
		if (r)
			return -ENOMEM;
	}
	/* toward an upstream proxy: its own credential (never the client's) */
	if (auth && (buf_append(out, "proxy-authorization: ", 21) < 0 ||
		     buf_append(out, auth, strlen(auth)) < 0 || buf_append(out, "\r\n", 2) < 0))
		return -ENOMEM;
	return buf_append(out, "connection: close\r\n\r\n", 21);
}

/*
 * The upstream proxy for c's request, or NULL to go direct: none set, or a
 * target the reference always reaches directly (a non-public literal,
 * localhost).
 */
static const struct np_upstream *choose_upstream(const struct npc *c)
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

/* The refusal of a target that resolves to a local address, or never resolves. */
static void refuse_local(struct npc *c)
{
	emit(c, true, false, "baseline_policy", "not_allowed_local");
	c->decided = true;
	if (c->socks)
		socks_send(c, 2);
	else
		refuse(c, NP_NOT_ALLOWED_LOCAL);
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
		emit(c, true, true, c->override ? "decider" : "baseline_policy",
		     c->override ? "not_allowed" : "allow");
		c->decided = true;
	}
	return netconn_open(c->np->srv, &cfg, &up_handlers, c, &c->up);
}

static void start_mitm(struct npc *c, size_t n);

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
		refuse_local(c);
	} else if (c->mitm_pending) {
		/* an intercepted tunnel's name, public: allowed now, as the reference decides it */
		size_t n = c->mitm_head;

		c->mitm_pending = false;
		emit(c, true, true, c->override ? "decider" : "baseline_policy",
		     c->override ? "not_allowed" : "allow");
		c->decided = true;
		start_mitm(c, n);
		return;
	} else if (dial(c) == 0) {
		return;
	}
	else if (c->socks && c->client)
		socks_reply(c, 1);
	else
		send_bad_gateway(c);
	c->up = NULL;
	finish_client(c);
}

/* The policy-time lookup of c's host on the worker pool (lookup_done goes on). */
static int start_lookup(struct npc *c)
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

static int open_upstream(struct npc *c)
{
	c->state = NPC_UPSTREAM;
	uring_timer_cancel(&c->head_timer);
	netconn_set_reading(c->client, false);
	if (c->connect || c->socks)
		c->via = choose_upstream(c);
	if (c->via && !c->decided && !c->np->cfg->allow_local_binding)
		return start_lookup(c);
	return dial(c);
}

/* The request (a head of n bytes) was answered here: the next one may follow, or the end. */
static void answered(struct npc *c, size_t n)
{
	buf_consume(&c->head, n);
	if (c->keep)
		head_deadline(c); /* the connection stays open for the next request */
	else
		finish_client(c);
}

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
static void start_mitm(struct npc *c, size_t n)
{
	struct np_mitm *m = NULL;
	char date[64], out[128];
	int k;

	if (c->mitm_tls && netproxy_mitm_get(c->np->srv, &m) < 0) {
		if (c->socks) {
			socks_reply(c, 1);
			return;
		}
		send_bad_gateway(c);
		answered(c, n);
		return;
	}
	if (c->socks) {
		/* success; no outbound socket is behind it yet: BND is 0.0.0.0:0 */
		static const uint8_t ok[10] = { 5, 0, 0, 1 };

		if (netconn_send(c->client, ok, sizeof(ok)) < 0) {
			finish_client(c);
			return;
		}
	} else if (http_format_date(time(NULL), date, sizeof(date)) < 0 ||
		   (k = snprintf(out, sizeof(out), "HTTP/1.1 200 OK\r\ndate: %s\r\n\r\n", date)) <= 0 ||
		   netconn_send(c->client, out, (size_t)k) < 0) {
		finish_client(c);
		return;
	}
	buf_consume(&c->head, n);
	/* bytes behind the CONNECT head are the start of the client's handshake */
	if (c->mitm_tls) {
		if (netconn_start_tls_server(c->client, netproxy_mitm_ctx(m), mitm_setup, c,
					     c->head.data, c->head.len) < 0) {
			finish_client(c);
			return;
		}
		buf_consume(&c->head, c->head.len);
	}
	c->mitm = true;
	c->connect = false;
	c->socks = false; /* from here on, HTTP requests */
	c->keep = true;
	c->state = NPC_HEAD;
	head_deadline(c); /* the handshake and the first request: NPC_HEAD_TIMEOUT_MS */
	netconn_set_reading(c->client, true); /* paused during a lookup */
	if (!c->mitm_tls && c->head.len)
		client_heads(c); /* plain requests already read */
}

/*
 * Intercepts c's tunnel (decided allowed; tls: inside TLS) now, or once the
 * policy-time lookup of its name is in (n: the CONNECT head's size).
 */
static void intercept(struct npc *c, bool tls, size_t n)
{
	c->mitm_tls = tls;
	if (!c->decided && !c->np->cfg->allow_local_binding) {
		/* a name allowed if public: looked up before the answer (policy time) */
		c->mitm_pending = true;
		c->mitm_head = n;
		c->state = NPC_UPSTREAM;
		uring_timer_cancel(&c->head_timer);
		netconn_set_reading(c->client, false);
		if (start_lookup(c) < 0) {
			c->mitm_pending = false;
			if (c->socks) {
				socks_reply(c, 1);
				return;
			}
			send_bad_gateway(c);
			finish_client(c);
		}
		return;
	}
	if (!c->decided)
		emit(c, true, true, c->override ? "decider" : "baseline_policy",
		     c->override ? "not_allowed" : "allow");
	c->decided = true;
	start_mitm(c, n);
}

/* One complete request head in c->head (n bytes of it). */
static void handle_request(struct npc *c, const struct http_request *req, size_t n)
{
	const char *t = req->path, *path = "/";
	size_t tl = req->path_len, path_len = 1;
	enum np_verdict v;
	const struct http_header *cl, *te;
	bool limited = c->np->cfg->mode == NP_MODE_LIMITED;

	c->connect = req->method_len == 7 && !memcmp(req->method, "CONNECT", 7);
	/* HTTP/1.1 keeps the connection unless the client asks otherwise (the reference's) */
	c->keep = req->minor_version >= 1 && !wants_close(http_request_header(req, "connection"));
	snprintf(c->method_buf, sizeof(c->method_buf), "%.*s",
		 (int)MIN(req->method_len, sizeof(c->method_buf) - 1), req->method);
	c->method = c->method_buf;
	if (c->mitm) {
		/*
		 * Inside an intercepted tunnel: the target is the CONNECT's, already
		 * decided (its addresses are still checked at each dial); an
		 * origin-form request only.
		 */
		const struct http_header *h = http_request_header(req, "host");
		char hn[256];

		if (c->connect) {
			send_text(c, "405 Method Not Allowed", NULL, "CONNECT not supported inside MITM");
			answered(c, n);
			return;
		}
		/* the tunnel's target only: a Host naming another is refused (the reference's) */
		if (h && (!netproxy_normalize_host(h->value, h->value_len, hn, sizeof(hn)) ||
			  strcmp(hn, c->host))) {
			send_text(c, "400 Bad Request", NULL, "host mismatch");
			answered(c, n);
			return;
		}
		if (!tl || t[0] != '/') {
			send_text(c, "400 Bad Request", NULL, "origin-form request expected");
			goto done;
		}
		path = t;
		path_len = tl;
		goto forward;
	}
	c->decided = false;
	c->override = false;
	if (c->connect) {
		const struct http_header *h = http_request_header(req, "host");

		/* CONNECT host:port; "CONNECT /x" falls back to Host; no port is 80 */
		if (tl && t[0] == '/') {
			t = h ? h->value : "";
			tl = h ? h->value_len : 0;
		}
		if (!tl || set_authority(c, t, tl, 80) < 0) {
			send_text(c, "400 Bad Request", NULL, "missing authority");
			goto done;
		}
	} else {
		const char *sep = tl ? memchr(t, ':', tl) : NULL;

		if (sep && sep + 2 < t + tl && sep[1] == '/' && sep[2] == '/') {
			const char *auth = sep + 3, *end = auth;
			uint16_t def = default_port(t, (size_t)(sep - t));

			while (end < t + tl && *end != '/' && *end != '?' && *end != '#')
				end++;
			if (memchr(auth, '@', (size_t)(end - auth)))
				auth = (const char *)memchr(auth, '@', (size_t)(end - auth)) + 1;
			if (end == auth || set_authority(c, auth, (size_t)(end - auth), def) < 0 ||
			    !c->port) {
				send_text(c, "400 Bad Request", NULL, "missing host");
				goto done;
			}
			if (end < t + tl) {
				path = end;
				path_len = (size_t)(t + tl - end);
			}
		} else {
			const struct http_header *h = http_request_header(req, "host");

			/* origin form: the Host header is the target (the reference proxies it) */
			if (!h || set_authority(c, h->value, h->value_len, 80) < 0) {
				send_text(c, "400 Bad Request", NULL, "missing host");
				goto done;
			}
			path = t;
			path_len = tl;
		}
	}

	/* x-unix-socket (plain requests): unsupported on Linux, before any host policy */
	if (!c->connect && http_request_header(req, "x-unix-socket")) {
		snprintf(c->host, sizeof(c->host), "unix-socket");
		c->port = 0;
		emit(c, false, false, "proxy_state", "unix_socket_unsupported");
		if (limited && !((req->method_len == 3 && !memcmp(req->method, "GET", 3)) ||
				 (req->method_len == 4 && !memcmp(req->method, "HEAD", 4)) ||
				 (req->method_len == 7 && !memcmp(req->method, "OPTIONS", 7)))) {
			static const char body[] =
				"{\"status\":\"blocked\",\"host\":\"unix-socket\",\"reason\":\"method_not_allowed\"}";
			char date[64], out[512];
			int k;

			if (http_format_date(time(NULL), date, sizeof(date)) >= 0 &&
			    (k = snprintf(out, sizeof(out),
					  "HTTP/1.1 403 Forbidden\r\ncontent-type: application/json\r\n"
					  "x-proxy-error: blocked-by-method-policy\r\ncontent-length: %zu\r\n"
					  "date: %s\r\n\r\n%s", sizeof(body) - 1, date, body)) > 0 &&
			    (size_t)k < sizeof(out))
				(void)netconn_send(c->client, out, (size_t)k);
		} else {
			send_text(c, "501 Not Implemented", NULL, "unix sockets unsupported");
		}
		answered(c, n);
		return;
	}
	v = netproxy_policy_decide(c->np->pol, c->host);
	if (v == NP_NOT_ALLOWED && c->rv == RV_NONE && review_start(c))
		return; /* the head stays in c->head: handled again once answered */
	if (v == NP_NOT_ALLOWED && c->rv != RV_NONE) {
		if (review_refused(c)) {
			answered(c, n);
			return;
		}
		v = NP_ALLOW_IF_PUBLIC;
	}
	if (v == NP_DENIED || v == NP_NOT_ALLOWED || v == NP_NOT_ALLOWED_LOCAL) {
		log_info_ratelimited("Network proxy: refused %s %s:%u from %s (%s)",
				     c->connect ? "CONNECT" : "request", c->host, (unsigned)c->port,
				     c->peer, netproxy_verdict_reason(v));
		emit(c, true, false, "baseline_policy", netproxy_verdict_reason(v));
		refuse(c, v);
		answered(c, n);
		return;
	}
	if (v == NP_ALLOW || limited) {
		emit(c, true, true, "baseline_policy", "allow");
		c->decided = true;
	}
	if (c->connect && c->np->cfg->broker && !choose_upstream(c) &&
	    (limited || netproxy_broker_binds(c->np->cfg->broker, true, c->host, c->port))) {
		/*
		 * A credential is bound here: intercepted, so that it can be put
		 * back. In limited mode every tunnel is (the reference's), its
		 * requests then held to the read-only methods like plain ones.
		 */
		intercept(c, true, n);
		return;
	}
	if (limited && c->connect) {
		emit(c, false, false, "mode_guard", "mitm_required");
		send_text(c, "403 Forbidden", "blocked-by-mitm-required", "MITM required for limited HTTPS.");
		answered(c, n);
		return;
	}
forward:
	if (limited && !((req->method_len == 3 && !memcmp(req->method, "GET", 3)) ||
			 (req->method_len == 4 && !memcmp(req->method, "HEAD", 4)) ||
			 (req->method_len == 7 && !memcmp(req->method, "OPTIONS", 7)))) {
		emit(c, false, false, "mode_guard", "method_not_allowed");
		if (c->mitm) {
			/* inside an intercepted tunnel the reference answers in plain text */
			send_text(c, "403 Forbidden", "blocked-by-method-policy",
				  "Method not allowed in limited mode.");
			answered(c, n);
			return;
		}
		send_refusal_json(c, "method_not_allowed", "blocked-by-method-policy",
				  "Method not allowed in limited mode.", "mode_guard", "deny");
		answered(c, n);
		return;
	}

	if (!c->connect) {
		c->head_request = req->method_len == 4 && !memcmp(req->method, "HEAD", 4);
		c->minor = req->minor_version;
		c->resp_started = false;
		buf_done(&c->up_head);
		cl = http_request_header(req, "content-length");
		c->body_left = 0;
		if (cl) {
			char num[24], *end;

			if (cl->value_len == 0 || cl->value_len >= sizeof(num))
				goto bad;
			memcpy(num, cl->value, cl->value_len);
			num[cl->value_len] = 0;
			c->body_left = strtoull(num, &end, 10);
			if (*end)
				goto bad;
		}
		te = http_request_header(req, "transfer-encoding");
		c->chunked = false;
		if (te) {
			/* chunked last, and never beside Content-Length (RFC 9112 §6.1: smuggling) */
			size_t l = te->value_len;

			if (cl || l < 7 || strncasecmp(te->value + l - 7, "chunked", 7) ||
			    (l > 7 && te->value[l - 8] != ',' && te->value[l - 8] != ' '))
				goto bad;
			c->chunked = true;
			memset(&c->ch, 0, sizeof(c->ch));
		}
		out_head_done(c);
		c->via = c->mitm ? NULL : choose_upstream(c);
		if (c->via) {
			/* an upstream proxy takes the absolute form (the reference's) */
			char *abs = NULL;
			int k = asprintf(&abs, strchr(c->host, ':') ? "http://[%s]:%u%.*s" : "http://%s:%u%.*s",
					 c->host, (unsigned)c->port, (int)path_len, path);

			if (k < 0 || rewrite_head(c, req, abs, (size_t)k, path, path_len, c->via->auth,
						  &c->out_head) < 0) {
				if (k >= 0)
					free(abs);
				goto done;
			}
			free(abs);
		} else if (rewrite_head(c, req, path, path_len, path, path_len, NULL, &c->out_head) < 0) {
			goto done;
		}
	}
	buf_consume(&c->head, n);
	if (open_upstream(c) < 0) {
		c->up = NULL;
		send_bad_gateway(c);
		goto done;
	}
	return;
bad:
	{
		char out[256];
		int k = http_format_bad_request(time(NULL), out, sizeof(out));

		if (k > 0)
			(void)netconn_send(c->client, out, (size_t)k);
	}
done:
	finish_client(c);
}

/* A SOCKS5 reply that ends the control connection. */
static void socks_reply(struct npc *c, uint8_t code)
{
	socks_send(c, code);
	finish_client(c);
}

static void socks_decided(struct npc *c, enum np_verdict v);

/* UDP ASSOCIATE: the relay's address, then the control connection only waits for its end. */
static void socks_associate(struct npc *c, uint16_t want_port)
{
	uint8_t r[10];
	int k = 0;

	if (!c->np->udp || (k = netproxy_udp_associate(c->np->udp, c, &c->peer_addr, want_port, r, &c->assoc)) < 0) {
		c->assoc = NULL;
		log_info_ratelimited("Network proxy: UDP ASSOCIATE from %s refused (%s)", c->peer,
				     c->np->udp ? strerror(-k) : "no relay socket");
		socks_reply(c, 1);
		return;
	}
	c->state = NPC_SOCKS_UDP;
	c->udp = true;
	uring_timer_cancel(&c->head_timer);
	(void)netconn_send(c->client, r, sizeof(r));
}

/* SOCKS5 (RFC 1928), no authentication: CONNECT and UDP ASSOCIATE. */
static void socks_input(struct npc *c)
{
	const uint8_t *b = c->head.data;
	size_t len = c->head.len, need, alen;
	char raw[260];
	enum np_verdict v;

	if (c->state == NPC_SOCKS_GREETING) {
		if (len < 2)
			return;
		if (b[0] != 5) {
			finish_client(c); /* SOCKS4 or not SOCKS: closed without an answer */
			return;
		}
		if (len < 2u + b[1])
			return;
		if (!memchr(b + 2, 0, b[1])) {
			static const uint8_t none[2] = { 5, 0xff };

			(void)netconn_send(c->client, none, sizeof(none));
			finish_client(c);
			return;
		}
		{
			static const uint8_t noauth[2] = { 5, 0 };

			(void)netconn_send(c->client, noauth, sizeof(noauth));
		}
		buf_consume(&c->head, 2u + b[1]);
		c->state = NPC_SOCKS_REQUEST;
		b = c->head.data;
		len = c->head.len;
	}
	if (len < 5)
		return;
	if (b[0] != 5) {
		finish_client(c);
		return;
	}
	switch (b[3]) {
	case 1: alen = 4; need = 4 + 4 + 2; break;
	case 4: alen = 16; need = 4 + 16 + 2; break;
	case 3: alen = b[4]; need = 5 + alen + 2; break;
	default:
		finish_client(c); /* unknown address type: reset, as the reference */
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
		socks_reply(c, 7);
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
		socks_reply(c, 2);
		return;
	}
	/* limited mode: only 443 is considered (and it needs the MITM the launch lacks) */
	c->method = NULL;
	if (c->np->cfg->mode == NP_MODE_LIMITED) {
		emit(c, false, false, "mode_guard", "method_not_allowed");
		log_info_ratelimited("Network proxy: refused SOCKS5 %s:%u (limited mode)", c->host,
				     (unsigned)c->port);
		socks_reply(c, 2);
		return;
	}
	v = netproxy_policy_decide(c->np->pol, c->host);
	if (v == NP_NOT_ALLOWED && review_start(c))
		return; /* socks_decided() once answered */
	socks_decided(c, v);
}

/* The SOCKS5 CONNECT's host decision v (and the review's answer, if one was asked). */
static void socks_decided(struct npc *c, enum np_verdict v)
{
	if (v == NP_NOT_ALLOWED && c->rv != RV_NONE) {
		if (review_refused(c))
			return;
		v = NP_ALLOW_IF_PUBLIC;
	}
	if (v == NP_DENIED || v == NP_NOT_ALLOWED || v == NP_NOT_ALLOWED_LOCAL) {
		log_info_ratelimited("Network proxy: refused SOCKS5 %s:%u (%s)", c->host,
				     (unsigned)c->port, netproxy_verdict_reason(v));
		emit(c, true, false, "baseline_policy", netproxy_verdict_reason(v));
		socks_reply(c, 2);
		return;
	}
	if (v == NP_ALLOW) {
		emit(c, true, true, "baseline_policy", "allow");
		c->decided = true;
	}
	/* a credential bound here: intercepted as the reference does (https in TLS, else plain) */
	if (c->np->cfg->broker && !choose_upstream(c)) {
		bool https = netproxy_broker_binds(c->np->cfg->broker, true, c->host, c->port);

		if (https || netproxy_broker_binds(c->np->cfg->broker, false, c->host, c->port)) {
			intercept(c, https, 0);
			return;
		}
	}
	if (open_upstream(c) < 0) {
		c->up = NULL;
		socks_reply(c, 1);
	}
}

static void client_heads(struct npc *c);

static void client_data(struct netconn *nc, const uint8_t *p, size_t n)
{
	struct npc *c = netconn_userdata(nc);

	switch (c->state) {
	case NPC_TUNNEL:
		c->np->srv->metrics.proxy_bytes_up += n;
		if (!c->up || netconn_send(c->up, p, n) < 0) {
			finish_client(c);
			return;
		}
		if (netconn_queued(c->up) > NPC_QUEUE_HIGH)
			netconn_set_reading(nc, false);
		return;
	case NPC_HEAD:
	case NPC_UPSTREAM:
	case NPC_UP_CONNECT:
	case NPC_FORWARD:
		if (buf_append(&c->head, p, n) < 0) {
			finish_client(c);
			return;
		}
		if (c->state == NPC_FORWARD)
			pass_body(c);
		break;
	case NPC_ASKING:
		/* a read that was in flight when reading stopped: kept for later */
		if (buf_append(&c->head, p, n) < 0 || c->head.len > NPC_HEAD_MAX + 65536)
			finish_client(c);
		return;
	case NPC_SOCKS_GREETING:
	case NPC_SOCKS_REQUEST:
		if (buf_append(&c->head, p, n) < 0 || c->head.len > 1024) {
			finish_client(c);
			return;
		}
		socks_input(c);
		return;
	case NPC_SOCKS_UDP: /* nothing more is expected on a control connection */
	case NPC_DONE:
		return;
	}
	client_heads(c);
}

/* Refusals keep the connection: every complete head in the buffer is handled in turn. */
static void client_heads(struct npc *c)
{
	struct http_request req;
	int r;

	while (c->state == NPC_HEAD && c->head.len) {
		r = http_request_parse((const char *)c->head.data, c->head.len, NPC_HEAD_MAX, &req);
		if (r == -EAGAIN)
			return;
		if (r == -E2BIG) {
			send_text(c, "431 Request Header Fields Too Large", NULL, "");
			finish_client(c);
			return;
		}
		if (r < 0) {
			char out[256];
			int k = http_format_bad_request(time(NULL), out, sizeof(out));

			if (k > 0)
				(void)netconn_send(c->client, out, (size_t)k);
			finish_client(c);
			return;
		}
		handle_request(c, &req, (size_t)r);
	}
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
		socks_decided(c, NP_NOT_ALLOWED);
	} else {
		c->state = NPC_HEAD;
		client_heads(c);
	}
}

static void client_drained(struct netconn *nc)
{
	client_resume(netconn_userdata(nc));
}

static void client_closed(struct netconn *nc, int err, const char *why)
{
	struct npc *c = netconn_userdata(nc);

	c->client = NULL;
	if (c->up) {
		if (c->state == NPC_TUNNEL)
			netconn_shutdown(c->up); /* what is queued still reaches the target */
		else {
			netconn_close(c->up);
			c->up = NULL;
		}
	}
	npc_maybe_free(c);
}

/* ---- listener ---- */

static void arm_accept(struct netproxy *np, bool socks);

static void accepted(struct netproxy *np, int res, bool socks);
static void netproxy_maybe_release(struct netproxy *np);

static void on_pause(struct uring_timer *t, bool fired)
{
	struct netproxy *np = container_of(t, struct netproxy, pause);

	if (np->freeing) {
		netproxy_maybe_release(np);
		return;
	}
	for (int i = 0; i < 2; i++)
		if (np->paused[i]) {
			np->paused[i] = false;
			arm_accept(np, i);
		}
}

static void on_accept(struct uring_op *op, int res, uint32_t flags)
{
	accepted(container_of(op, struct netproxy, accept_op), res, false);
}

static void on_socks_accept(struct uring_op *op, int res, uint32_t flags)
{
	accepted(container_of(op, struct netproxy, socks_accept_op), res, true);
}

static void accepted(struct netproxy *np, int res, bool socks)
{
	struct npc *c;

	if (np->freeing) {
		if (res >= 0)
			close(res);
		netproxy_maybe_release(np);
		return;
	}
	if (res < 0) {
		if (res != -ECANCELED)
			log_warning_errno_ratelimited(res, "Network proxy: accept failed");
		if (res == -EMFILE || res == -ENFILE || res == -ENOMEM || res == -ENOBUFS) {
			/* the connection waits in the backlog: try again shortly */
			np->paused[socks] = true;
			if (!np->pause.armed)
				uring_timer_arm(&np->srv->ring, &np->pause, NPC_ACCEPT_PAUSE_MS, on_pause);
			return;
		}
		arm_accept(np, socks);
		return;
	}
	if (np->n_conns >= NPC_MAX_CONNS || !(c = calloc(1, sizeof(*c)))) {
		log_warning_ratelimited("Network proxy: refusing a connection (%u open)", np->n_conns);
		close(res);
		arm_accept(np, socks);
		return;
	}
	c->np = np;
	c->socks = socks;
	np->srv->metrics.proxy_connections++;
	{
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		char a[INET6_ADDRSTRLEN] = "?";

		if (getpeername(res, (struct sockaddr *)&ss, &sl) == 0 && ss.ss_family == AF_INET)
			inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, a, sizeof(a));
		else
			ss.ss_family = AF_UNSPEC;
		c->peer_addr = ss;
		snprintf(c->peer, sizeof(c->peer), "%s:%u", a,
			 ss.ss_family == AF_INET ? ntohs(((struct sockaddr_in *)&ss)->sin_port) : 0);
	}
	c->state = socks ? NPC_SOCKS_GREETING : NPC_HEAD;
	list_add_tail(&c->link, &np->conns);
	np->n_conns++;
	if (netconn_adopt(np->srv, res, c->peer, &client_handlers, c, &c->client) < 0) {
		c->client = NULL;
		npc_free(c);
	} else {
		head_deadline(c);
	}
	arm_accept(np, socks);
}

static void arm_accept(struct netproxy *np, bool socks)
{
	struct io_uring_sqe *sqe;

	if (socks) {
		sqe = uring_get_sqe(&np->srv->ring, &np->socks_accept_op, on_socks_accept);
		io_uring_prep_accept(sqe, np->socks_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	} else {
		sqe = uring_get_sqe(&np->srv->ring, &np->accept_op, on_accept);
		io_uring_prep_accept(sqe, np->http_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	}
}

int netproxy_new(struct server *s, struct netproxy_config *cfg, int http_fd, int socks_fd,
		 int udp_fd, struct netproxy **ret, char *err, size_t errsz)
{
	struct netproxy *np = calloc(1, sizeof(*np));
	int r;

	if (!np) {
		r = -ENOMEM;
		goto fail;
	}
	r = netproxy_policy_new(cfg, &np->pol, err, errsz);
	if (r < 0)
		goto fail;
	np->srv = s;
	np->cfg = cfg;
	np->http_fd = http_fd;
	np->socks_fd = socks_fd;
	np->udp_fd = udp_fd;
	list_init(&np->conns);
	for (int t = 0; cfg->allow_upstream_proxy && t < 2; t++) {
		const char *name, *url = netproxy_upstream_env(t, &name);

		if (!url)
			continue;
		r = netproxy_upstream_parse(url, &np->upstream[t]);
		if (r == -ENOMEM)
			goto fail;
		/* the value is never logged: it may hold a password */
		if (r == -EPROTONOSUPPORT)
			log_warning_ratelimited("Network proxy: %s is not an http:// proxy: connecting "
						"directly", name);
		else if (r < 0)
			log_warning_ratelimited("Network proxy: %s is not a proxy URL: connecting directly",
						name);
		np->has_upstream[t] = r == 0;
	}
	/* Without SOCKS5 nothing listens on its port: a connect there is refused at once. */
	if (!cfg->enable_socks5)
		np->socks_fd = safe_close(np->socks_fd);
	if (np->socks_fd >= 0 && cfg->enable_socks5_udp && np->udp_fd >= 0) {
		r = netproxy_udp_new(s, np->pol, cfg->mode == NP_MODE_LIMITED, cfg->allow_local_binding,
			       TAKE_FD(np->udp_fd), &np->udp);
		if (r < 0)
			log_warning_errno(r, "Network proxy: no SOCKS5 UDP relay: %m");
	}
	np->udp_fd = safe_close(np->udp_fd);
	arm_accept(np, false);
	if (np->socks_fd >= 0)
		arm_accept(np, true);
	*ret = np;
	return 0;
fail:
	if (np) {
		netproxy_policy_free(np->pol);
		netproxy_upstream_done(&np->upstream[0]);
		netproxy_upstream_done(&np->upstream[1]);
	}
	free(np);
	netproxy_config_free(cfg);
	safe_close(http_fd);
	safe_close(socks_fd);
	safe_close(udp_fd);
	return r;
}

void netproxy_set_decision_sink(struct netproxy *np, void (*fn)(void *owner, const char *tail),
				void *owner, const char *session, const char *process)
{
	np->sink = fn;
	np->owner = owner;
	free(np->session);
	free(np->process);
	np->session = session ? strdup(session) : NULL;
	np->process = process ? strdup(process) : NULL;
}

void netproxy_set_reviewer(struct netproxy *np, const struct netproxy_reviewer *r)
{
	np->reviewer = r;
}

void netproxy_free(struct netproxy *np)
{
	struct npc *c, *tmp;

	if (!np)
		return;
	list_for_each_entry_safe(c, tmp, &np->conns, link) {
		if (c->client)
			netconn_close(c->client);
		if (c->up)
			netconn_close(c->up);
		c->client = c->up = NULL;
		npc_free(c);
	}
	netproxy_udp_free(np->udp);
	np->udp = NULL;
	netproxy_policy_free(np->pol);
	netproxy_config_free(np->cfg);
	netproxy_upstream_done(&np->upstream[0]);
	netproxy_upstream_done(&np->upstream[1]);
	free(np->session);
	free(np->process);
	np->session = np->process = NULL;
	np->http_fd = safe_close(np->http_fd);
	np->socks_fd = safe_close(np->socks_fd);
	np->udp_fd = safe_close(np->udp_fd);
	np->freeing = true;
	uring_timer_cancel(&np->pause);
	if (!uring_op_idle(&np->accept_op))
		uring_cancel(&np->srv->ring, &np->accept_op);
	if (!uring_op_idle(&np->socks_accept_op))
		uring_cancel(&np->srv->ring, &np->socks_accept_op);
	netproxy_maybe_release(np);
}

/* socks-udp.h: a decision about a datagram's destination. */
void netproxy_udp_decision(struct npc *c, const char *host, uint16_t port, bool domain, bool allow,
			   const char *source, const char *reason)
{
	snprintf(c->host, sizeof(c->host), "%s", host);
	c->port = port;
	c->method = NULL;
	emit(c, domain, allow, source, reason);
}

/* socks-udp.h: a refused datagram (or an idle association) closes the control connection. */
void netproxy_udp_end(struct npc *c)
{
	finish_client(c);
}

/* After netproxy_free(): the memory goes once no op of it is in flight. */
static void netproxy_maybe_release(struct netproxy *np)
{
	if (uring_op_idle(&np->accept_op) && uring_op_idle(&np->socks_accept_op) &&
	    uring_op_idle(&np->pause.op))
		free(np);
}
