/* SPDX-License-Identifier: MIT */
/*
 * Outbound TCP (+TLS) connections on the ring (netconn.h): a netconn's
 * lifetime, input, the output queue and the API; resolving and connecting
 * are netconn-connect.c's, the TLS side netconn-tls.c's.
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
#include "tls-ossl.h"
#include "worker.h"

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
void netconn_kick(struct netconn *nc)
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
	netconn_kick(nc);
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
void _printf_(3, 4) netconn_fail_later(struct netconn *nc, int err, const char *fmt, ...)
{
	va_list ap;

	if (nc->ended || nc->fail_pending)
		return;
	va_start(ap, fmt);
	vsnprintf(nc->why, sizeof(nc->why), fmt, ap);
	va_end(ap);
	nc->fail_pending = true;
	nc->fail_err = err;
	netconn_kick(nc);
}

/* ---- output queue ---- */

/* Room for n more bytes at the tail of the output queue (appending never moves a chunk). */
struct nc_chunk *netconn_tail_room(struct netconn *nc, size_t n)
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
	struct nc_chunk *c = netconn_tail_room(nc, n);

	if (!c)
		return -ENOMEM;
	memcpy(c->data + c->len, p, n);
	c->len += n;
	nc->out_bytes += n;
	return 0;
}

void netconn_connected(struct netconn *nc)
{
	nc->state = NC_OPEN;
	uring_timer_cancel(&nc->timer);
	if (nc->h.connected)
		nc->h.connected(nc);
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
		consumed = netconn_tls_process(nc);
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
		netconn_fail_later(nc, -errno, "shutting down the connection to %s failed: %s",
				   nc->peer, strerror(errno));
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
		netconn_flush(nc);
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

void netconn_flush(struct netconn *nc)
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
	r = netconn_set_address(nc, cfg->host, cfg->port);
	if (r < 0)
		goto fail;
	if (nc->tls) {
		nc->pbuf = malloc(NC_RBUF_SIZE);
		r = nc->pbuf ? netconn_tls_setup(nc) : -ENOMEM;
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
	netconn_resolve_or_connect(nc);
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

bool netconn_any_closing(const struct server *s)
{
	const struct netconn *nc;

	list_for_each_entry(nc, &s->netconns, link)
		if (nc->ended)
			return true;
	return false;
}

int netconn_send(struct netconn *nc, const void *p, size_t n)
{
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
		netconn_flush(nc);
		return 0;
	}
	r = netconn_tls_send(nc, p, n);
	if (r < 0)
		return r;
	netconn_flush(nc);
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
	c = netconn_tail_room(nc, n);
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
	netconn_flush(nc);
	return 0;
}

void netconn_set_reading(struct netconn *nc, bool on)
{
	if (nc->ended || nc->reading == on)
		return;
	nc->reading = on;
	/* Buffered input and a recv to arm: from the loop, not inside the caller. */
	if (on && nc->state >= NC_HANDSHAKE)
		netconn_kick(nc);
}

void netconn_shutdown(struct netconn *nc)
{
	if (nc->ended || nc->shutting || nc->fail_pending)
		return;
	if (nc->state != NC_OPEN) {
		netconn_fail_later(nc, -ECANCELED, "shut down before the connection to %s was up",
				   nc->peer);
		return;
	}
	nc->shutting = true;
	if (nc->tm.ssl) {
		tls_mem_shutdown(&nc->tm); /* queues close_notify; the peer's comes as input */
		if (netconn_tls_drain(nc, 0) < 0) {
			netconn_fail_later(nc, -ENOMEM, "out of memory queueing TLS records for %s",
					   nc->peer);
			return;
		}
	}
	uring_timer_arm(&nc->srv->ring, &nc->timer, NETCONN_SHUTDOWN_GRACE_MS, on_timer);
	if (list_empty(&nc->outq) && !nc->write_op.busy)
		nc_send_fin(nc);
	else
		netconn_flush(nc);
	netconn_kick(nc); /* reads even if delivery was paused, to see the peer's end */
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
	tls_ctx_free(s->tls_client_ctx);
	s->tls_client_ctx = NULL;
}
