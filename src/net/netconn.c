/* SPDX-License-Identifier: MIT */
/*
 * Outbound TCP (+TLS) connections on the ring. See netconn.h.
 *
 * Lifetime: a netconn ends once (nc_end: handlers off, ops cancelled, fd
 * closed through the ring) and is freed from the completion of its last
 * op: every completion on an ended netconn checks whether anything of it is
 * still in flight, and nc_end submits a NOP (the kick op) so that at least
 * one such completion comes. The ring clears op->busy at dispatch, so when
 * all ops are idle no CQE of the netconn is left to dispatch.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "list.h"
#include "log.h"
#include "netconn-int.h"
#include "server.h"
#include "tls-mem.h"
#include "worker.h"

static void nc_flush(struct netconn *nc);
static void nc_arm_read(struct netconn *nc);

/* ---- freeing ---- */

static bool nc_idle(const struct netconn *nc)
{
	return !nc->dns_busy && uring_op_idle(&nc->connect_op) && uring_op_idle(&nc->read_op) &&
	       uring_op_idle(&nc->write_op) && uring_op_idle(&nc->kick_op) &&
	       uring_op_idle(&nc->timer.op);
}

/* Frees a chunk of the output queue, wiped first when it may hold a secret. */
static void nc_chunk_free(struct netconn *nc, struct nc_chunk *c)
{
	if (nc->sensitive)
		explicit_bzero(c->data, c->cap);
	free(c);
}

static void nc_free(struct netconn *nc)
{
	struct nc_chunk *c, *n;

	list_del(&nc->link);
	list_for_each_entry_safe(c, n, &nc->outq, link)
		nc_chunk_free(nc, c);
	if (nc->ai)
		freeaddrinfo(nc->ai);
	tls_mem_done(&nc->tm);
	safe_close(nc->fd);
	free(nc->rbuf);
	free(nc->pbuf);
	if (nc->scratch && nc->sensitive)
		explicit_bzero(nc->scratch, nc->scratch_cap);
	free(nc->scratch);
	free(nc->host);
	free(nc);
}

/* From a completion of nc's own: frees an ended netconn whose ops are all done. */
static bool nc_reap(struct netconn *nc)
{
	if (!nc->ended)
		return false;
	if (nc_idle(nc))
		nc_free(nc);
	return true;
}

/*
 * Whether a completion must stop here: the netconn ended (freed when this was
 * its last op), or an end is already decided (the kick delivers it; no other
 * handler runs before).
 */
bool netconn_quiet(struct netconn *nc)
{
	return nc_reap(nc) || nc->fail_pending;
}

static void on_kick(struct uring_op *op, int res, uint32_t flags);

/* A NOP through the ring: work that must not run inside the caller (see on_kick). */
static void nc_kick(struct netconn *nc)
{
	struct io_uring_sqe *sqe;

	if (nc->kick_op.busy)
		return;
	sqe = uring_get_sqe(&nc->srv->ring, &nc->kick_op, on_kick);
	io_uring_prep_nop(sqe);
}

/*
 * The end: once. Cancels every op, closes the fd through the ring (after the
 * cancels, so that no prepared SQE meets a reused fd number), calls closed()
 * unless the owner closed it, and makes sure a completion comes to free it.
 */
static void nc_end(struct netconn *nc, int err, const char *why)
{
	struct uring *u = &nc->srv->ring;

	if (nc->ended)
		return;
	nc->ended = true;
	uring_cancel(u, &nc->connect_op);
	uring_cancel(u, &nc->read_op);
	uring_cancel(u, &nc->write_op);
	uring_timer_cancel(&nc->timer);
	if (nc->fd >= 0) {
		struct io_uring_sqe *sqe = uring_get_sqe_nocb(u);

		io_uring_prep_close(sqe, nc->fd);
		nc->fd = -1;
	}
	nc_kick(nc);
	if (!nc->owner_closed) {
		if (err < 0)
			log_debug("Connection to %s ended: %s", nc->peer, why);
		if (nc->h.closed)
			nc->h.closed(nc, err, why);
	}
}

/* Formats why into nc->why and ends the connection. */
void _printf_(3, 4) netconn_fail(struct netconn *nc, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(nc->why, sizeof(nc->why), fmt, ap);
	va_end(ap);
	nc_end(nc, err, nc->why);
}

/* As netconn_fail, from an API call: the end (and closed()) comes from the loop. */
static void _printf_(3, 4) nc_fail_later(struct netconn *nc, int err, const char *fmt, ...)
{
	va_list ap;

	if (nc->ended || nc->fail_pending)
		return;
	va_start(ap, fmt);
	vsnprintf(nc->why, sizeof(nc->why), fmt, ap);
	va_end(ap);
	nc->fail_pending = true;
	nc->fail_err = err;
	nc_kick(nc);
}

/* ---- TLS ---- */

static SSL_CTX *tls_ctx(struct server *s)
{
	SSL_CTX *ctx;

	if (s->tls_client_ctx)
		return s->tls_client_ctx;
	ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx)
		return NULL;
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
	    SSL_CTX_set_default_verify_paths(ctx) != 1) {
		SSL_CTX_free(ctx);
		return NULL;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	s->tls_client_ctx = ctx;
	return ctx;
}

static int tls_setup(struct netconn *nc)
{
	SSL_CTX *ctx = tls_ctx(nc->srv);

	if (!ctx)
		return -ENOMEM;
	if (tls_mem_init(&nc->tm, ctx, false) < 0)
		return -ENOMEM;
	if (nc->is_ip) {
		if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(nc->tm.ssl), nc->host) != 1)
			return -EINVAL;
	} else {
		SSL_set_hostflags(nc->tm.ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
		if (SSL_set1_host(nc->tm.ssl, nc->host) != 1 ||
		    SSL_set_tlsext_host_name(nc->tm.ssl, nc->host) != 1)
			return -ENOMEM;
	}
	return 0;
}

/* Room for n more bytes at the tail of the output queue (appending never moves a chunk). */
static struct nc_chunk *nc_tail_room(struct netconn *nc, size_t n)
{
	struct nc_chunk *c;

	if (!list_empty(&nc->outq)) {
		c = list_entry(nc->outq.prev, struct nc_chunk, link);
		if (c->cap - c->len >= n)
			return c;
	}
	c = malloc(sizeof(*c) + MAX(n, (size_t)NC_CHUNK_MIN));
	if (!c)
		return NULL;
	c->len = c->off = c->app = 0;
	c->cap = MAX(n, (size_t)NC_CHUNK_MIN);
	list_add_tail(&c->link, &nc->outq);
	return c;
}

static int nc_queue(struct netconn *nc, const void *p, size_t n)
{
	struct nc_chunk *c = nc_tail_room(nc, n);

	if (!c)
		return -ENOMEM;
	memcpy(c->data + c->len, p, n);
	c->len += n;
	nc->out_bytes += n;
	return 0;
}

/* Moves what the SSL wrote into the output queue; app: the plaintext bytes it carries. */
static int tls_drain_wbio(struct netconn *nc, size_t app)
{
	struct nc_chunk *c = NULL;
	size_t pending;

	while ((pending = tls_mem_pending(&nc->tm)) > 0) {
		size_t r;

		c = nc_tail_room(nc, pending);
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

void netconn_connected(struct netconn *nc)
{
	nc->state = NC_OPEN;
	uring_timer_cancel(&nc->timer);
	if (nc->h.connected)
		nc->h.connected(nc);
}

/*
 * Runs the handshake, then reads plaintext while delivery is on. Returns
 * true when everything received was consumed (the SSL wants more bytes).
 */
static bool tls_process(struct netconn *nc)
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
		if (tls_drain_wbio(nc, 0) < 0) {
			netconn_fail(nc, -ENOMEM, "out of memory queueing TLS records for %s", nc->peer);
			return false;
		}
		nc_flush(nc);
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

/* ---- input ---- */

/*
 * Delivers what is buffered while delivery is on, acts on a pending EOF,
 * then reads on. Called from completions only.
 */
void netconn_input(struct netconn *nc)
{
	bool consumed;

	if (nc->ended || nc->state < NC_HANDSHAKE)
		return;
	if (nc->tm.ssl) {
		consumed = tls_process(nc);
	} else {
		if (nc->rlen > 0 && (nc->reading || nc->shutting)) {
			size_t n = nc->rlen;

			nc->rlen = 0;
			if (nc->h.data)
				nc->h.data(nc, nc->rbuf, n);
		}
		consumed = nc->rlen == 0;
	}
	if (nc->ended)
		return;
	if (nc->peer_eof) {
		if (nc->state == NC_HANDSHAKE)
			netconn_fail(nc, -ECONNRESET, "%s closed the connection during the TLS handshake",
				nc->peer);
		else if (consumed && (nc->reading || nc->shutting))
			netconn_fail(nc, 0, "%s closed the connection", nc->peer);
		return;
	}
	nc_arm_read(nc);
}

static void on_read(struct uring_op *op, int res, uint32_t flags)
{
	struct netconn *nc = container_of(op, struct netconn, read_op);

	if (netconn_quiet(nc))
		return;
	if (res < 0) {
		netconn_fail(nc, res, "receiving from %s failed: %s", nc->peer, strerror(-res));
		return;
	}
	if (res == 0) {
		nc->peer_eof = true;
	} else if (nc->tm.ssl) {
		if (tls_mem_feed(&nc->tm, nc->rbuf, (size_t)res) < 0) {
			netconn_fail(nc, -ENOMEM, "out of memory buffering TLS input from %s", nc->peer);
			return;
		}
	} else {
		nc->rlen = (size_t)res;
	}
	netconn_input(nc);
}

static void nc_arm_read(struct netconn *nc)
{
	struct io_uring_sqe *sqe;

	if (nc->ended || nc->fd < 0 || nc->read_op.busy || nc->peer_eof || nc->rlen > 0 ||
	    nc->state < NC_HANDSHAKE)
		return;
	if (!nc->reading && !nc->shutting && nc->state != NC_HANDSHAKE)
		return;
	sqe = uring_get_sqe(&nc->srv->ring, &nc->read_op, on_read);
	io_uring_prep_recv(sqe, nc->fd, nc->rbuf, NC_RBUF_SIZE, 0);
}

/* ---- output ---- */

/*
 * The FIN once everything queued is written. shutdown(2) is called here,
 * not submitted as IORING_OP_SHUTDOWN: the kernel always hands that op to an
 * io-wq worker thread (a thread switch per connection: 14% of the proxy's
 * CPU in bench/run.sh --only proxy), while the call itself only queues the
 * FIN and never blocks. Now the peer's EOF (netconn_input) or the grace timer
 * ends the connection.
 */
static void nc_send_fin(struct netconn *nc)
{
	nc->fin_sent = true;
	if (shutdown(nc->fd, SHUT_WR) < 0 && errno != ENOTCONN)
		nc_fail_later(nc, -errno, "shutting down the connection to %s failed: %s", nc->peer,
			      strerror(errno));
}

static void on_write(struct uring_op *op, int res, uint32_t flags)
{
	struct netconn *nc = container_of(op, struct netconn, write_op);
	size_t left;

	if (netconn_quiet(nc))
		return;
	if (res < 0) {
		netconn_fail(nc, res, "sending to %s failed: %s", nc->peer, strerror(-res));
		return;
	}
	left = (size_t)res;
	nc->out_bytes -= left;
	while (left > 0 && !list_empty(&nc->outq)) {
		struct nc_chunk *c = list_first_entry(&nc->outq, struct nc_chunk, link);
		size_t n = MIN(left, c->len - c->off);

		c->off += n;
		left -= n;
		if (!nc->tm.ssl)
			nc->app_queued -= n;
		if (c->off == c->len) {
			nc->app_queued -= nc->tm.ssl ? c->app : 0;
			list_del(&c->link);
			nc_chunk_free(nc, c);
		}
	}
	if (!list_empty(&nc->outq)) {
		nc_flush(nc);
		return;
	}
	if (nc->shutting) {
		if (!nc->fin_sent)
			nc_send_fin(nc);
		return;
	}
	if (nc->h.drained && nc->state == NC_OPEN)
		nc->h.drained(nc);
}

static void nc_flush(struct netconn *nc)
{
	struct io_uring_sqe *sqe;
	struct nc_chunk *c;
	unsigned n = 0;

	if (nc->ended || nc->fin_sent || nc->write_op.busy || list_empty(&nc->outq) || nc->fd < 0 ||
	    nc->state < NC_HANDSHAKE)
		return;
	list_for_each_entry(c, &nc->outq, link) {
		if (n == NC_MAX_IOV)
			break;
		nc->iov[n].iov_base = c->data + c->off;
		nc->iov[n].iov_len = c->len - c->off;
		n++;
	}
	memset(&nc->msg, 0, sizeof(nc->msg));
	nc->msg.msg_iov = nc->iov;
	nc->msg.msg_iovlen = n;
	sqe = uring_get_sqe(&nc->srv->ring, &nc->write_op, on_write);
	io_uring_prep_sendmsg(sqe, nc->fd, &nc->msg, MSG_NOSIGNAL);
}

static void on_timer(struct uring_timer *t, bool fired)
{
	struct netconn *nc = container_of(t, struct netconn, timer);

	if (netconn_quiet(nc) || !fired)
		return;
	if (nc->shutting) {
		netconn_fail(nc, 0, "%s did not close within %d ms of our shutdown", nc->peer,
			NETCONN_SHUTDOWN_GRACE_MS);
		return;
	}
	if (nc->state != NC_OPEN)
		netconn_fail(nc, -ETIMEDOUT, "connecting to %s timed out after %" PRIu64 " ms",
			nc->peer, nc->timeout_ms);
}

/* The loop's turn for what API calls must not do inline: a deferred end, buffered input. */
static void on_kick(struct uring_op *op, int res, uint32_t flags)
{
	struct netconn *nc = container_of(op, struct netconn, kick_op);

	if (nc_reap(nc))
		return;
	if (nc->fail_pending) {
		nc_end(nc, nc->fail_err, nc->why);
		return;
	}
	netconn_input(nc);
}

/* ---- API ---- */

int netconn_open(struct server *s, const struct netconn_config *cfg, const struct netconn_handlers *h,
		 void *userdata, struct netconn **ret)
{
	struct netconn *nc;
	struct in6_addr a6;
	struct in_addr a4;
	int r;

	if (!cfg->host || !cfg->host[0] || !h || !ret)
		return -EINVAL;
	nc = calloc(1, sizeof(*nc));
	if (!nc)
		return -ENOMEM;
	nc->srv = s;
	nc->fd = -1;
	nc->h = *h;
	nc->userdata = userdata;
	nc->tls = cfg->tls;
	nc->nodelay = cfg->nodelay;
	nc->sensitive = cfg->sensitive;
	nc->timeout_ms = cfg->connect_timeout_ms;
	nc->reading = true;
	list_init(&nc->outq);
	list_init(&nc->link);
	nc->host = strdup(cfg->host);
	nc->rbuf = malloc(NC_RBUF_SIZE);
	if (!nc->host || !nc->rbuf) {
		r = -ENOMEM;
		goto fail;
	}
	snprintf(nc->port_str, sizeof(nc->port_str), "%u", (unsigned)cfg->port);
	if (inet_pton(AF_INET, cfg->host, &a4) == 1) {
		struct sockaddr_in *in = (struct sockaddr_in *)&nc->addr;

		in->sin_family = AF_INET;
		in->sin_port = htons(cfg->port);
		in->sin_addr = a4;
		nc->addrlen = sizeof(*in);
		nc->is_ip = true;
		snprintf(nc->peer, sizeof(nc->peer), "%s:%u", cfg->host, (unsigned)cfg->port);
	} else if (inet_pton(AF_INET6, cfg->host, &a6) == 1) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&nc->addr;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(cfg->port);
		in6->sin6_addr = a6;
		nc->addrlen = sizeof(*in6);
		nc->is_ip = true;
		snprintf(nc->peer, sizeof(nc->peer), "[%s]:%u", cfg->host, (unsigned)cfg->port);
	} else {
		if (!s->workers) {
			r = -ENOSYS;
			goto fail;
		}
		snprintf(nc->peer, sizeof(nc->peer), "%s:%u", cfg->host, (unsigned)cfg->port);
	}
	if (nc->tls) {
		nc->pbuf = malloc(NC_RBUF_SIZE);
		r = nc->pbuf ? tls_setup(nc) : -ENOMEM;
		if (r < 0)
			goto fail;
	}

	/* A literal's socket() error is this call's; the connect's result comes from the loop. */
	if (nc->is_ip) {
		r = netconn_socket(nc);
		if (r < 0)
			goto fail;
	}
	list_add_tail(&nc->link, &s->netconns);
	if (nc->timeout_ms)
		uring_timer_arm(&s->ring, &nc->timer, nc->timeout_ms, on_timer);
	if (nc->is_ip) {
		netconn_start_connect(nc);
	} else {
		nc->state = NC_RESOLVING;
		nc->dns.run = netconn_dns_run;
		nc->dns.done = netconn_dns_done;
		nc->dns_busy = true;
		worker_submit(s, &nc->dns);
	}
	*ret = nc;
	return 0;
fail:
	nc_free(nc);
	return r;
}

int netconn_adopt(struct server *s, int fd, const char *peer, const struct netconn_handlers *h,
		  void *userdata, struct netconn **ret)
{
	struct netconn *nc = calloc(1, sizeof(*nc));

	if (!nc || !(nc->rbuf = malloc(NC_RBUF_SIZE)) || fcntl(fd, F_SETFL, O_NONBLOCK) < 0) {
		int r = nc && nc->rbuf ? -errno : -ENOMEM;

		if (nc)
			free(nc->rbuf);
		free(nc);
		safe_close(fd);
		return r;
	}
	nc->srv = s;
	nc->fd = fd;
	nc->h = *h;
	nc->userdata = userdata;
	nc->reading = true;
	nc->state = NC_OPEN;
	list_init(&nc->outq);
	snprintf(nc->peer, sizeof(nc->peer), "%s", peer);
	list_add_tail(&nc->link, &s->netconns);
	nc_arm_read(nc);
	*ret = nc;
	return 0;
}

void *netconn_userdata(const struct netconn *nc)
{
	return nc->userdata;
}

int netconn_local_address(const struct netconn *nc, struct sockaddr_storage *ss)
{
	socklen_t len = sizeof(*ss);

	if (nc->fd < 0 || nc->state == NC_RESOLVING || nc->state == NC_CONNECTING)
		return -ENOTCONN;
	return getsockname(nc->fd, (struct sockaddr *)ss, &len) < 0 ? -errno : 0;
}

const char *netconn_peer(const struct netconn *nc)
{
	return nc->peer;
}

size_t netconn_queued(const struct netconn *nc)
{
	return nc->app_queued;
}

size_t netconn_count(const struct server *s)
{
	const struct netconn *nc;
	size_t n = 0;

	list_for_each_entry(nc, &s->netconns, link)
		n++;
	return n;
}

int netconn_send(struct netconn *nc, const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t left = n;
	int r;

	if (nc->ended || nc->fail_pending || nc->shutting || nc->state != NC_OPEN)
		return -ENOTCONN;
	if (n == 0)
		return 0;
	if (!nc->tm.ssl) {
		r = nc_queue(nc, p, n);
		if (r < 0)
			return r;
		nc->app_queued += n;
		nc_flush(nc);
		return 0;
	}
	while (left > 0) {
		size_t done = MIN(left, (size_t)1 << 20);

		if (tls_mem_write(&nc->tm, b, done) < 0) {
			/* Memory BIOs never ask to retry: the SSL is out of memory or broken. */
			nc_fail_later(nc, -ENOMEM, "TLS write to %s failed", nc->peer);
			return -ENOMEM;
		}
		nc->app_queued += done;
		if (tls_drain_wbio(nc, done) < 0) {
			nc_fail_later(nc, -ENOMEM, "out of memory queueing TLS records for %s",
				      nc->peer);
			return -ENOMEM;
		}
		b += done;
		left -= done;
	}
	nc_flush(nc);
	return 0;
}

void *netconn_send_reserve(struct netconn *nc, size_t n)
{
	struct nc_chunk *c;

	if (nc->ended || nc->fail_pending || nc->shutting || nc->state != NC_OPEN || n == 0)
		return NULL;
	if (nc->tm.ssl) {
		/* SSL_write copies into its records anyway: a buffer of our own will do. */
		if (nc->scratch_cap < n) {
			uint8_t *b = realloc(nc->scratch, n);

			if (!b)
				return NULL;
			nc->scratch = b;
			nc->scratch_cap = n;
		}
		return nc->scratch;
	}
	c = nc_tail_room(nc, n);
	return c ? c->data + c->len : NULL;
}

int netconn_send_commit(struct netconn *nc, size_t n)
{
	struct nc_chunk *c;

	if (nc->tm.ssl)
		return netconn_send(nc, nc->scratch, n);
	c = list_entry(nc->outq.prev, struct nc_chunk, link);
	c->len += n;
	nc->out_bytes += n;
	nc->app_queued += n;
	nc_flush(nc);
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
	nc_kick(nc); /* the handshake runs from the loop, not inside the caller */
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
	r = nc->pbuf ? tls_setup(nc) : -ENOMEM;
	if (r < 0)
		return r;
	nc->tls = true;
	nc->state = NC_HANDSHAKE;
	nc_kick(nc); /* the ClientHello goes out from the loop; connected() follows the handshake */
	return 0;
}

void netconn_set_reading(struct netconn *nc, bool on)
{
	if (nc->ended || nc->reading == on)
		return;
	nc->reading = on;
	/* Buffered input and a recv to arm: from the loop, not inside the caller. */
	if (on && nc->state >= NC_HANDSHAKE)
		nc_kick(nc);
}

void netconn_shutdown(struct netconn *nc)
{
	if (nc->ended || nc->shutting || nc->fail_pending)
		return;
	if (nc->state != NC_OPEN) {
		nc_fail_later(nc, -ECANCELED, "shut down before the connection to %s was up",
			      nc->peer);
		return;
	}
	nc->shutting = true;
	if (nc->tm.ssl) {
		tls_mem_shutdown(&nc->tm); /* queues close_notify; the peer's comes as input */
		if (tls_drain_wbio(nc, 0) < 0) {
			nc_fail_later(nc, -ENOMEM, "out of memory queueing TLS records for %s",
				      nc->peer);
			return;
		}
	}
	uring_timer_arm(&nc->srv->ring, &nc->timer, NETCONN_SHUTDOWN_GRACE_MS, on_timer);
	if (list_empty(&nc->outq) && !nc->write_op.busy)
		nc_send_fin(nc);
	else
		nc_flush(nc);
	nc_kick(nc); /* reads even if delivery was paused, to see the peer's end */
}

void netconn_close(struct netconn *nc)
{
	if (nc->ended)
		return;
	nc->owner_closed = true;
	nc_end(nc, -ECANCELED, "closed by its owner");
}

void netconn_free_all(struct server *s)
{
	struct netconn *nc, *n;

	list_for_each_entry_safe(nc, n, &s->netconns, link)
		nc_free(nc);
	SSL_CTX_free(s->tls_client_ctx);
	s->tls_client_ctx = NULL;
}
