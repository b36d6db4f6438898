/* SPDX-License-Identifier: MIT */
/*
 * A netconn's TLS (netconn.h): the client SSL_CTX (made on first use: TLS >=
 * 1.2, the default trust store, the host name or IP checked, SNI), the pump
 * of src/tls/tls-mem.c run on received bytes (handshake, then plaintext to
 * the owner), SSL_write's records into the output queue, and TLS started on
 * an open netconn as a client or as the server side.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "netconn-int.h"
#include "tls-ossl.h"

int netconn_tls_setup(struct netconn *nc)
{
	struct server *s = nc->srv;
	int r;

	if (!s->tls_client_ctx && (r = tls_ctx_client_new(&s->tls_client_ctx)) < 0)
		return r;
	if (tls_mem_init(&nc->tm, s->tls_client_ctx, false) < 0)
		return -ENOMEM;
	return tls_mem_set_peer(&nc->tm, nc->host, nc->is_ip);
}

/* Moves what the SSL wrote into the output queue; app: the plaintext bytes it carries. */
int netconn_tls_drain(struct netconn *nc, size_t app)
{
	struct nc_chunk *c = NULL;
	size_t pending;

	while ((pending = tls_mem_pending(&nc->tm)) > 0) {
		size_t r;

		c = netconn_tail_room(nc, pending);
		if (!c)
			return -ENOMEM;
		r = tls_mem_take(&nc->tm, c->data + c->len, pending);
		if (r == 0)
			break;
		c->len += r;
		nc->out_bytes += r;
	}
	if (app) {
		if (!c && !list_empty(&nc->outq))
			c = list_entry(nc->outq.prev, struct nc_chunk, link);
		if (c)
			c->app += app;
		else
			return 0; /* nothing queued for it (cannot happen): nothing to count */
	}
	return 0;
}

static void tls_fail(struct netconn *nc, const char *what)
{
	char text[200];
	bool verify;

	tls_mem_error_text(&nc->tm, text, sizeof(text), &verify);
	if (verify) {
		netconn_fail(nc, -EKEYREJECTED, "TLS %s with %s: certificate verify failed: %s", what,
			nc->peer, text);
		return;
	}
	netconn_fail(nc, -EPROTO, "TLS %s with %s failed: %s", what, nc->peer, text);
}

/*
 * Runs the handshake, then reads plaintext while delivery is on. Returns
 * true when everything received was consumed (the SSL wants more bytes).
 */
bool netconn_tls_process(struct netconn *nc)
{
	for (;;) {
		enum tls_mem_result e;
		size_t n = 0;

		if (nc->ended)
			return false;
		if (nc->state != NC_HANDSHAKE && !nc->reading && !nc->shutting)
			return false;
		e = tls_mem_step(&nc->tm, nc->pbuf, NC_RBUF_SIZE, &n);
		/* Handshake messages, alerts, key update answers. */
		if (netconn_tls_drain(nc, 0) < 0) {
			netconn_fail(nc, -ENOMEM, "out of memory queueing TLS records for %s", nc->peer);
			return false;
		}
		netconn_flush(nc);
		switch (e) {
		case TLS_MEM_DONE:
			if (nc->state == NC_HANDSHAKE)
				netconn_connected(nc);
			else if (n > 0 && nc->h.data)
				nc->h.data(nc, nc->pbuf, n);
			continue;
		case TLS_MEM_WANT_READ:
			return true;
		case TLS_MEM_CLOSED:
			netconn_fail(nc, 0, "%s sent TLS close_notify", nc->peer);
			return false;
		case TLS_MEM_FAILED:
			break;
		}
		tls_fail(nc, nc->state == NC_HANDSHAKE ? "handshake" : "read");
		return false;
	}
}

/* Application bytes through SSL_write; their records join the output queue (not flushed). */
int netconn_tls_send(struct netconn *nc, const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t left = n;

	while (left > 0) {
		size_t done = MIN(left, (size_t)1 << 20);

		if (tls_mem_write(&nc->tm, b, done) < 0) {
			/* Memory BIOs never ask to retry: the SSL is out of memory or broken. */
			netconn_fail_later(nc, -ENOMEM, "TLS write to %s failed", nc->peer);
			return -ENOMEM;
		}
		nc->app_queued += done;
		if (netconn_tls_drain(nc, done) < 0) {
			netconn_fail_later(nc, -ENOMEM, "out of memory queueing TLS records for %s",
					   nc->peer);
			return -ENOMEM;
		}
		b += done;
		left -= done;
	}
	return 0;
}

int netconn_start_tls_server(struct netconn *nc, struct ssl_ctx_st *ctx,
			     int (*setup)(struct ssl_st *ssl, void *arg), void *arg, const void *early,
			     size_t n)
{
	if (nc->ended || nc->fail_pending || nc->shutting || nc->state != NC_OPEN || nc->tm.ssl)
		return -EINVAL;
	if (!nc->pbuf && !(nc->pbuf = malloc(NC_RBUF_SIZE)))
		return -ENOMEM;
	if (tls_mem_init(&nc->tm, ctx, true) < 0)
		return -ENOMEM;
	if (setup && setup(nc->tm.ssl, arg) < 0) {
		tls_mem_done(&nc->tm);
		return -EINVAL;
	}
	/* the early bytes, then any plain input not delivered yet: all of it is the handshake's */
	if ((n && tls_mem_feed(&nc->tm, early, n) < 0) ||
	    (nc->rlen && tls_mem_feed(&nc->tm, nc->rbuf, nc->rlen) < 0)) {
		tls_mem_done(&nc->tm);
		return -ENOMEM;
	}
	nc->rlen = 0;
	nc->state = NC_HANDSHAKE;
	netconn_kick(nc); /* the handshake runs from the loop, not inside the caller */
	return 0;
}

int netconn_start_tls(struct netconn *nc, const char *host)
{
	struct in6_addr a6;
	struct in_addr a4;
	char *h;
	int r;

	if (nc->ended || nc->fail_pending || nc->shutting || nc->state != NC_OPEN || nc->tm.ssl ||
	    nc->rlen > 0 || !host || !host[0])
		return -EINVAL;
	h = strdup(host);
	if (!h)
		return -ENOMEM;
	free(nc->host);
	nc->host = h;
	nc->is_ip = inet_pton(AF_INET, host, &a4) == 1 || inet_pton(AF_INET6, host, &a6) == 1;
	if (!nc->pbuf)
		nc->pbuf = malloc(NC_RBUF_SIZE);
	r = nc->pbuf ? netconn_tls_setup(nc) : -ENOMEM;
	if (r < 0)
		return r;
	nc->tls = true;
	nc->state = NC_HANDSHAKE;
	netconn_kick(nc); /* the ClientHello goes out from the loop; connected() follows the handshake */
	return 0;
}
