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
 *
 * This file: the listeners, a connection's life (accepted, its client
 * side's reads, its head timer, its end) and the proxy's own; the other
 * parts are named in proxy-internal.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "netconn.h"
#include "netproxy-config.h"
#include "netproxy-upgrade.h"
#include "proxy-internal.h"
#include "server.h"
#include "socks-udp.h"

/* The memory goes once neither timer's op is in flight (their callbacks call this again). */
void netproxy_npc_release(struct npc *c)
{
	if (uring_op_idle(&c->head_timer.op) && uring_op_idle(&c->review_timer.op))
		free(c);
}

/* The rewritten head may hold a real credential (credential masking): wiped before it goes. */
void netproxy_out_head_done(struct npc *c)
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
	netproxy_out_head_done(c);
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
	netproxy_npc_release(c);
}

static void on_head_timeout(struct uring_timer *t, bool fired)
{
	struct npc *c = container_of(t, struct npc, head_timer);

	if (c->dead) {
		netproxy_npc_release(c);
		return;
	}
	if (!fired)
		return;
	if (c->state == NPC_HEAD || c->state == NPC_SOCKS_GREETING || c->state == NPC_SOCKS_REQUEST) {
		log_debug("Network proxy: closing %s: no request within %d ms", c->peer,
			  NPC_HEAD_TIMEOUT_MS);
		netproxy_finish_client(c);
	}
}

/* Waiting for a request head (again): it has NPC_HEAD_TIMEOUT_MS. */
void netproxy_head_deadline(struct npc *c)
{
	uring_timer_arm(&c->np->srv->ring, &c->head_timer, NPC_HEAD_TIMEOUT_MS, on_head_timeout);
}

void netproxy_npc_maybe_free(struct npc *c)
{
	if (!c->client && !c->up)
		npc_free(c);
}

/* Ends the client connection once what was queued is written. */
void netproxy_finish_client(struct npc *c)
{
	c->state = NPC_DONE;
	if (c->client)
		netconn_shutdown(c->client);
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

void netproxy_client_resume(struct npc *c)
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

static void client_data(struct netconn *nc, const uint8_t *p, size_t n)
{
	struct npc *c = netconn_userdata(nc);

	switch (c->state) {
	case NPC_TUNNEL:
		c->np->srv->metrics.proxy_bytes_up += n;
		if (!c->up || netconn_send(c->up, p, n) < 0) {
			netproxy_finish_client(c);
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
			netproxy_finish_client(c);
			return;
		}
		if (c->state == NPC_FORWARD)
			netproxy_pass_body(c);
		break;
	case NPC_ASKING:
		/* a read that was in flight when reading stopped: kept for later */
		if (buf_append(&c->head, p, n) < 0 || c->head.len > NPC_HEAD_MAX + 65536)
			netproxy_finish_client(c);
		return;
	case NPC_SOCKS_GREETING:
	case NPC_SOCKS_REQUEST:
		if (buf_append(&c->head, p, n) < 0 || c->head.len > 1024) {
			netproxy_finish_client(c);
			return;
		}
		netproxy_socks_input(c);
		return;
	case NPC_SOCKS_UDP: /* nothing more is expected on a control connection */
	case NPC_DONE:
		return;
	}
	netproxy_client_heads(c);
}

static void client_drained(struct netconn *nc)
{
	netproxy_client_resume(netconn_userdata(nc));
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
	netproxy_npc_maybe_free(c);
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
	c->client_fd = res;
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
		netproxy_head_deadline(c);
	}
	arm_accept(np, socks);
}

static void arm_accept(struct netproxy *np, bool socks)
{
	struct io_uring_sqe *sqe;

	/* The live upgrade's QUIESCE: new connections wait in the backlog (proxy-upgrade.c). */
	if (np->srv->quiescing) {
		np->quiesced[socks] = true;
		return;
	}
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
	/*
	 * Without SOCKS5 nothing listens on its port: a connect there is refused at
	 * once (in a managed network's namespace the child never made it listen,
	 * sandbox_plan_set_proxy(): the command may run before this).
	 */
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

/* netproxy-upgrade.h: the accepts QUIESCE kept from being armed again, armed. */
void netproxy_resume(struct netproxy *np)
{
	for (int i = 0; i < 2; i++)
		if (np->quiesced[i]) {
			np->quiesced[i] = false;
			arm_accept(np, i);
		}
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

/* socks-udp.h: a refused datagram (or an idle association) closes the control connection. */
void netproxy_udp_end(struct npc *c)
{
	netproxy_finish_client(c);
}

/* After netproxy_free(): the memory goes once no op of it is in flight. */
static void netproxy_maybe_release(struct netproxy *np)
{
	if (uring_op_idle(&np->accept_op) && uring_op_idle(&np->socks_accept_op) &&
	    uring_op_idle(&np->pause.op))
		free(np);
}
