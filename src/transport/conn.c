/* SPDX-License-Identifier: MIT */
/*
 * Connection transport: HTTP upgrade, WebSocket framing, stdio lines, and the
 * per-connection output queue. Reads use the server's provided-buffer ring so
 * an idle connection holds no read buffer.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "conn.h"
#include "http.h"
#include "jsonrpc.h"
#include "log.h"
#include "tls-mem.h"
#include "ws-auth.h"

#define HTTP_MAX_HEAD 16384

static void conn_arm_read(struct conn *c);

/* The layers above: the JSON-RPC message and the end of the connection. */
static void conn_deliver(struct conn *c, const char *data, size_t len)
{
	if (c->transport == CONN_CARRIED && c->carrier->message) {
		if (c->carrier_owner)
			c->carrier->message(c, data, len);
		return;
	}
	if (c->srv->conn_handlers && c->srv->conn_handlers->message)
		c->srv->conn_handlers->message(c, data, len);
}

static void conn_closed(struct conn *c)
{
	if (c->srv->conn_handlers && c->srv->conn_handlers->closed)
		c->srv->conn_handlers->closed(c);
	c->srv->mem_dirty = true; /* its requests waiting for budget must wind up (conn-mem.c) */
}
static void conn_flush(struct conn *c);
static void conn_kill(struct conn *c);
static uint64_t peer_acked(const struct conn *c);

/*
 * Dead connections sit on server->dead_conns until their ops are idle; they
 * are freed by conn_reap() between loop iterations, never under a caller.
 */
static void conn_free(struct conn *c)
{
	struct outchunk *o, *n;

	if (c->srv->conn_handlers && c->srv->conn_handlers->freed)
		c->srv->conn_handlers->freed(c);
	list_del(&c->bufwait.link);
	list_del(&c->slot_link);
	list_del(&c->link);
	list_for_each_entry_safe(o, n, &c->outq, link)
		free(o);
	conn_mem_conn_freed(c);
	buf_done(&c->in);
	ws_parser_done(&c->ws);
	if (c->tls) {
		tls_mem_done(c->tls);
		free(c->tls);
	}
	free(c);
}

void conn_reap(struct server *s)
{
	struct conn *c, *n;

	list_for_each_entry_safe(c, n, &s->dead_conns, link)
		if (!c->read_op.busy && !c->write_op.busy)
			conn_free(c);
}

static void on_bufs_available(struct buf_waiter *w)
{
	struct conn *c = container_of(w, struct conn, bufwait);

	conn_arm_read(c);
}

static struct conn *conn_alloc(struct server *s, enum conn_transport t)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->srv = s;
	c->transport = t;
	c->fd_in = c->fd_out = -1;
	list_init(&c->outq);
	list_init(&c->pending);
	list_init(&c->calls);
	c->next_call_id = 1;
	list_init(&c->mem_charges);
	c->bufwait.rearm = on_bufs_available;
	c->ws.limits.max_frame_bytes = s->cfg.max_frame_bytes;
	c->ws.limits.max_message_bytes = s->cfg.max_message_bytes;
	list_add_tail(&c->link, &s->conns);
	s->n_conns++;
	return c;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

/*
 * The handshake deadline: connections that have not upgraded within
 * --handshake-timeout-ms of their accept are closed. They sit in
 * s->handshaking in accept order, so the head has the earliest deadline and
 * one timer, armed for it, serves them all.
 */
static void on_handshake_deadline(struct uring_timer *t, bool fired)
{
	struct server *s = container_of(t, struct server, handshake_timer);
	uint64_t now = now_ns();

	/* A reload turned the deadline off (0): those handshaking now get none either. */
	if (!fired || s->stopping || !s->cfg.handshake_timeout_ms)
		return;
	while (!list_empty(&s->handshaking)) {
		struct conn *c = list_first_entry(&s->handshaking, struct conn, slot_link);
		uint64_t deadline = c->accepted_ns + s->cfg.handshake_timeout_ms * 1000000;

		/* Nanoseconds, and the wait rounded up: a deadline never fires early. */
		if (deadline > now) {
			uring_timer_arm(&s->ring, t, (deadline - now + 999999) / 1000000,
					on_handshake_deadline);
			return;
		}
		log_info_ratelimited("Closing connection %s: no WebSocket upgrade within %" PRIu64
				     " ms", c->peer, s->cfg.handshake_timeout_ms);
		conn_kill(c); /* unlinks it */
	}
}

int conn_new_ws(struct server *s, int fd, const char *peer)
{
	struct tls_mem *tls = NULL;
	struct conn *c;
	int one = 1;

	if (s->tls_server_ctx) {
		tls = calloc(1, sizeof(*tls));
		if (!tls || tls_mem_init(tls, s->tls_server_ctx, true) < 0) {
			free(tls);
			safe_close(fd);
			return -ENOMEM;
		}
	}
	c = conn_alloc(s, CONN_WS);
	if (!c) {
		if (tls) {
			tls_mem_done(tls);
			free(tls);
		}
		safe_close(fd);
		return -ENOMEM;
	}
	/* Small frames must not wait for the peer's delayed ACK (the reference's 40 ms). */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->fd_in = c->fd_out = fd;
	c->state = CONN_HTTP;
	snprintf(c->peer, sizeof(c->peer), "%s", peer);
	c->tls = TAKE_PTR(tls);
	c->accepted_ns = now_ns();
	list_add_tail(&c->slot_link, &s->handshaking);
	if (s->cfg.handshake_timeout_ms && !s->handshake_timer.armed)
		uring_timer_arm(&s->ring, &s->handshake_timer, s->cfg.handshake_timeout_ms,
				on_handshake_deadline);
	conn_arm_read(c);
	return 0;
}

int conn_new_carried(struct server *s, const char *peer, const struct conn_carrier *cr,
		     void *owner, struct conn **ret)
{
	struct conn *c = conn_alloc(s, CONN_CARRIED);

	if (!c)
		return -ENOMEM;
	c->state = CONN_OPEN;
	c->carrier = cr;
	c->carrier_owner = owner;
	snprintf(c->peer, sizeof(c->peer), "%s", peer);
	*ret = c;
	return 0;
}

int conn_new_stdio(struct server *s)
{
	struct conn *c = conn_alloc(s, CONN_STDIO);

	if (!c)
		return -ENOMEM;
	c->fd_in = STDIN_FILENO;
	c->fd_out = STDOUT_FILENO;
	c->state = CONN_OPEN;
	snprintf(c->peer, sizeof(c->peer), "stdio");
	conn_arm_read(c);
	return 0;
}

bool conn_congested(const struct conn *c)
{
	return c->out_bytes > c->srv->cfg.max_queued_bytes;
}

/* ---- output ---- */

/* Queues bytes as they go on the wire (with TLS: records). */
static void queue_chunk(struct conn *c, struct outchunk *o)
{
	list_add_tail(&o->link, &c->outq);
	c->out_bytes += o->len;
	c->out_alloc += o->len;
	conn_mem_out(c, (long long)o->len);
	if (!c->read_blocked && conn_congested(c))
		c->read_blocked = true;
	conn_flush(c);
}

/*
 * Moves the TLS records waiting in c's pump to the output queue, as one
 * chunk. Returns false when the connection was killed (out of memory).
 */
static bool tls_flush_out(struct conn *c)
{
	size_t n = tls_mem_pending(c->tls);
	struct outchunk *o;

	if (n == 0)
		return true;
	o = malloc(sizeof(*o) + n);
	if (!o) {
		log_error_ratelimited("Out of memory queueing TLS records for %s, closing", c->peer);
		conn_kill(c);
		return false;
	}
	o->off = 0;
	o->len = tls_mem_take(c->tls, o->data, n);
	queue_chunk(c, o);
	return true;
}

/* Plaintext encrypted per step: the output BIO never holds more than about this. */
#define TLS_WRITE_PIECE (256u << 10)

/*
 * Queues a message. With TLS its bytes become records at once (SSL_write
 * copies them; the plaintext chunk is freed): the queue, its backpressure
 * and the memory budget then count what goes on the wire. A large message is
 * encrypted piece by piece, so that it is held at most twice (plaintext and
 * records), not three times (plus the whole of it in the BIO).
 */
static void conn_queue(struct conn *c, struct outchunk *o)
{
	if (!c->tls) {
		queue_chunk(c, o);
		return;
	}
	while (o->off < o->len) {
		size_t n = MIN(o->len - o->off, (size_t)TLS_WRITE_PIECE);

		if (tls_mem_write(c->tls, o->data + o->off, n) < 0) {
			free(o);
			log_info_ratelimited("Closing connection %s: TLS write failed", c->peer);
			conn_kill(c);
			return;
		}
		o->off += n;
		if (!tls_flush_out(c)) {
			free(o);
			return;
		}
	}
	free(o);
}

static void conn_send_raw(struct conn *c, const void *p, size_t n)
{
	struct outchunk *o = malloc(sizeof(*o) + n);

	if (!o) {
		log_error_ratelimited("Out of memory queueing %zu bytes for %s, closing", n, c->peer);
		conn_kill(c);
		return;
	}
	o->len = n;
	o->off = 0;
	memcpy(o->data, p, n);
	conn_queue(c, o);
}

/* The frame header length of a message from conn_alloc_msg() with this payload. */
static size_t msg_hdr_len(const struct conn *c, size_t payload_len)
{
	if (c->transport == CONN_CARRIED)
		return 4;
	if (c->transport != CONN_WS)
		return 0;
	return payload_len < 126 ? 2 : payload_len <= 0xffff ? 4 : 10;
}

/* Writes a message's header (and stdio's newline) around payload_len bytes at o->data. */
static void msg_frame(const struct conn *c, struct outchunk *o, size_t payload_len)
{
	switch (c->transport) {
	case CONN_WS:
		ws_frame_hdr_encode(o->data, WS_OP_TEXT, payload_len);
		break;
	case CONN_STDIO:
		o->data[payload_len] = '\n';
		break;
	case CONN_CARRIED:
		o->data[0] = (uint8_t)(payload_len >> 24);
		o->data[1] = (uint8_t)(payload_len >> 16);
		o->data[2] = (uint8_t)(payload_len >> 8);
		o->data[3] = (uint8_t)payload_len;
		break;
	}
}

struct outchunk *conn_alloc_msg(struct conn *c, size_t payload_len, uint8_t **ret_payload)
{
	size_t hdr = msg_hdr_len(c, payload_len);
	size_t trailer = c->transport == CONN_STDIO ? 1 : 0;
	struct outchunk *o = malloc(sizeof(*o) + hdr + payload_len + trailer);

	if (!o)
		return NULL;
	o->off = 0;
	o->len = hdr + payload_len + trailer;
	msg_frame(c, o, payload_len);
	*ret_payload = o->data + hdr;
	return o;
}

struct outchunk *conn_realloc_msg(struct conn *c, struct outchunk *o, size_t payload_len,
				  uint8_t **ret_payload)
{
	size_t trailer = c->transport == CONN_STDIO ? 1 : 0, old_hdr = 0, hdr, old_len, keep;
	struct outchunk *n;

	if (c->transport == CONN_WS) {
		uint8_t code = o->data[1] & 0x7f;

		old_hdr = code == 127 ? 10 : code == 126 ? 4 : 2;
	} else if (c->transport == CONN_CARRIED) {
		old_hdr = 4;
	}
	old_len = o->len - old_hdr - trailer;
	hdr = msg_hdr_len(c, payload_len);
	keep = MIN(old_len, payload_len);
	/* A shorter header: move the payload down while the block is still large enough. */
	if (hdr < old_hdr)
		memmove(o->data + hdr, o->data + old_hdr, keep);
	n = realloc(o, sizeof(*o) + hdr + payload_len + trailer);
	if (!n) {
		if (hdr < old_hdr) {
			memmove(o->data + old_hdr, o->data + hdr, keep);
			msg_frame(c, o, old_len);
		}
		return NULL;
	}
	if (hdr > old_hdr)
		memmove(n->data + hdr, n->data + old_hdr, keep);
	n->len = hdr + payload_len + trailer;
	msg_frame(c, n, payload_len);
	*ret_payload = n->data + hdr;
	return n;
}

void conn_commit(struct conn *c, struct outchunk *o)
{
	if (c->state != CONN_OPEN) {
		free(o);
		return;
	}
	conn_queue(c, o);
}

void conn_send_text(struct conn *c, const char *json, size_t len)
{
	uint8_t *p;
	struct outchunk *o;

	if (c->state != CONN_OPEN)
		return;
	o = conn_alloc_msg(c, len, &p);
	if (!o) {
		log_error_ratelimited("Out of memory queueing a %zu byte message for %s, closing",
				      len, c->peer);
		conn_kill(c);
		return;
	}
	memcpy(p, json, len);
	conn_commit(c, o);
}

void conn_send_json(struct conn *c, const json_t *msg)
{
	size_t len;
	char *s = jrpc_dump(msg, &len);

	if (!s) {
		log_error_ratelimited("Out of memory serialising a message for %s, closing", c->peer);
		conn_kill(c);
		return;
	}
	conn_send_text(c, s, len);
	free(s);
}

static void send_control(struct conn *c, enum ws_opcode op, const void *payload, size_t n)
{
	uint8_t frame[WS_MAX_HDR + 125];
	size_t h;

	if (n > 125)
		n = 125;
	h = ws_frame_hdr_encode(frame, op, n);
	if (n)
		memcpy(frame + h, payload, n);
	conn_send_raw(c, frame, h + n);
}

/*
 * n bytes of the output queue went out: free what is done, lift the
 * backpressure below half the mark, finish a closing connection. Returns
 * false when the connection is gone or closed.
 */
static bool out_written(struct conn *c, size_t left)
{
	c->out_bytes -= left;
	while (left > 0 && !list_empty(&c->outq)) {
		struct outchunk *o = list_first_entry(&c->outq, struct outchunk, link);
		size_t n = MIN(left, o->len - o->off);

		o->off += n;
		left -= n;
		if (o->off == o->len) {
			/* The budget counts a chunk's memory until it is freed, not what is unsent. */
			c->out_alloc -= o->len;
			conn_mem_out(c, -(long long)o->len);
			list_del(&o->link);
			free(o);
		}
	}

	if (c->read_blocked && c->out_bytes <= c->srv->cfg.max_queued_bytes / 2) {
		c->read_blocked = false;
		if (c->state == CONN_OPEN || c->state == CONN_HTTP)
			conn_arm_read(c);
		if (c->srv->conn_handlers && c->srv->conn_handlers->drained)
			c->srv->conn_handlers->drained(c);
		if (c->transport == CONN_CARRIED && c->carrier_owner && c->carrier->drained)
			c->carrier->drained(c);
		/* A carried connection's requests waited in c->in meanwhile. */
		if (c->transport == CONN_CARRIED && c->state == CONN_OPEN)
			conn_input_resume(c);
		if (c->state == CONN_DEAD)
			return false;
	}

	if (list_empty(&c->outq)) {
		if (c->state == CONN_CLOSING) {
			/* Everything flushed: let the peer see FIN after our last frame. */
			if (c->transport == CONN_WS)
				(void)shutdown(c->fd_out, SHUT_WR);
			conn_kill(c);
		}
		return false;
	}
	return c->state != CONN_DEAD;
}

static void on_write(struct uring_op *op, int res, uint32_t flags)
{
	struct conn *c = container_of(op, struct conn, write_op);

	if (c->state == CONN_DEAD)
		return;
	if (res < 0) {
		log_debug_errno(res, "Write to %s failed", c->peer);
		conn_kill(c);
		return;
	}
	if (out_written(c, (size_t)res))
		conn_flush(c);
}

size_t conn_out_peek(struct conn *c, const uint8_t **ret, size_t max)
{
	struct outchunk *o;
	size_t n;

	if (c->state == CONN_DEAD || list_empty(&c->outq))
		return 0;
	o = list_first_entry(&c->outq, struct outchunk, link);
	n = MIN(max, o->len - o->off);
	*ret = o->data + o->off;
	return n;
}

void conn_out_advance(struct conn *c, size_t n)
{
	if (c->state == CONN_DEAD || n == 0)
		return;
	(void)out_written(c, n);
}

static void conn_flush(struct conn *c)
{
	struct io_uring_sqe *sqe;
	struct outchunk *o;
	unsigned n = 0;

	if (c->transport == CONN_CARRIED) {
		if (c->carrier_owner && c->carrier->flush && !list_empty(&c->outq))
			c->carrier->flush(c);
		return;
	}
	if (c->write_op.busy || list_empty(&c->outq) || c->fd_out < 0)
		return;
	list_for_each_entry(o, &c->outq, link) {
		if (n == CONN_MAX_IOV)
			break;
		c->iov[n].iov_base = o->data + o->off;
		c->iov[n].iov_len = o->len - o->off;
		n++;
	}
	c->n_iov = n;
	sqe = uring_get_sqe(&c->srv->ring, &c->write_op, on_write);
	io_uring_prep_writev(sqe, c->fd_out, c->iov, n, (__u64)-1);
}

/* ---- closing ---- */

/* Tells a carried connection's owner, once, that it ended. */
static void carrier_ended(struct conn *c)
{
	if (c->transport == CONN_CARRIED && c->carrier_owner) {
		/* ended() finds its owner in c->carrier_owner; cleared after, so no other call
		 * reaches the owner (c is CONN_DEAD already, a conn_close() from ended() returns). */
		if (c->carrier->ended)
			c->carrier->ended(c);
		c->carrier_owner = NULL;
	}
}

static void conn_kill(struct conn *c)
{
	if (c->state == CONN_DEAD)
		return;
	conn_closed(c);
	c->state = CONN_DEAD;
	c->srv->n_conns--;
	list_del(&c->slot_link);
	uring_cancel(&c->srv->ring, &c->read_op);
	uring_cancel(&c->srv->ring, &c->write_op);
	if (c->transport == CONN_WS)
		safe_close(c->fd_in);
	c->fd_in = c->fd_out = -1;
	carrier_ended(c);
	if (c->transport == CONN_STDIO) {
		/* The stdio transport is the whole server: end it like the reference (exit 0). */
		server_stop(c->srv, 0);
	}
	list_del(&c->link);
	list_add_tail(&c->link, &c->srv->dead_conns);
}

void conn_close(struct conn *c, uint16_t ws_code, const char *why)
{
	if (c->state == CONN_DEAD)
		return;
	log_debug("Closing connection %s: %s", c->peer, why);
	if (c->state == CONN_CLOSING) {
		if (!ws_code)
			conn_kill(c);
		return;
	}
	if (c->transport == CONN_WS && c->state == CONN_OPEN && ws_code) {
		uint8_t payload[2] = { (uint8_t)(ws_code >> 8), (uint8_t)ws_code };

		send_control(c, WS_OP_CLOSE, payload, 2);
	}
	conn_closed(c);
	if (!list_empty(&c->outq) &&
	    (c->transport == CONN_STDIO || ws_code || c->state == CONN_HTTP)) {
		c->state = CONN_CLOSING;
		c->closing_mark = c->out_bytes;
		c->closing_acked = peer_acked(c);
		c->closing_stalled = 0;
		list_del(&c->slot_link);
		uring_cancel(&c->srv->ring, &c->read_op);
		/* TLS: close_notify after the last record, before our FIN. */
		if (c->tls && tls_mem_ready(c->tls)) {
			tls_mem_shutdown(c->tls);
			if (!tls_flush_out(c))
				return;
		}
		conn_flush(c);
		return;
	}
	conn_kill(c);
}

void conn_free_all(struct server *s)
{
	struct conn *c, *n;

	list_for_each_entry_safe(c, n, &s->conns, link) {
		conn_closed(c);
		carrier_ended(c);
		if (c->transport == CONN_WS)
			safe_close(c->fd_in);
		c->state = CONN_DEAD;
		s->n_conns--;
		conn_free(c);
	}
	list_for_each_entry_safe(c, n, &s->dead_conns, link)
		conn_free(c);
}

/* ---- input ---- */

/* GET /metrics: the body from the server's renderer (Prometheus text format 0.0.4). */
static void send_metrics(struct conn *c, struct http_upgrade *up)
{
	struct buf body = { 0 };
	char *out;
	int n;

	if (!c->srv->conn_handlers || !c->srv->conn_handlers->metrics ||
	    c->srv->conn_handlers->metrics(c->srv, &body) < 0 || buf_append(&body, "", 1) < 0) {
		up->verdict = HTTP_VERDICT_RESPOND;
		up->status = 500;
		up->body = "";
		buf_done(&body);
		body = (struct buf){ 0 };
	} else {
		up->verdict = HTTP_VERDICT_RESPOND; /* formatted as a response with a body */
		up->body = (const char *)body.data;
		up->content_type = "text/plain; version=0.0.4; charset=utf-8";
	}
	out = malloc(body.len + 512);
	n = out ? http_upgrade_format(up, time(NULL), out, body.len + 512) : -ENOMEM;
	if (n > 0)
		conn_send_raw(c, out, (size_t)n);
	free(out);
	buf_done(&body);
}

static void handle_http(struct conn *c)
{
	struct http_request req;
	struct http_upgrade up;
	char out[1024];
	int r, n;

	r = http_request_parse((const char *)c->in.data, c->in.len, HTTP_MAX_HEAD, &req);
	if (r == -EAGAIN) {
		if (c->in.len <= HTTP_MAX_HEAD)
			return;
		r = -E2BIG;
	}
	if (r < 0) {
		n = http_format_bad_request(time(NULL), out, sizeof(out));
		if (n > 0)
			conn_send_raw(c, out, (size_t)n);
		conn_close(c, 0, "bad HTTP request");
		return;
	}
	/* req views point into c->in: build the answer before consuming the head. */
	(void)http_upgrade_check(&req, &up);
	/* The upgrade (after the extractor's checks, as the reference) and /metrics need auth. */
	if (up.verdict != HTTP_VERDICT_RESPOND && c->srv->ws_auth) {
		const char *why = ws_auth_check(c->srv->ws_auth, &req, (int64_t)time(NULL));

		if (why) {
			c->srv->metrics.auth_failures++;
			log_info_ratelimited("Refusing %s from %s: %s",
					     up.verdict == HTTP_VERDICT_METRICS ? "/metrics"
										: "a WebSocket upgrade",
					     c->peer, why);
			up.verdict = HTTP_VERDICT_RESPOND;
			up.status = 401;
			up.body = why;
		}
	}
	buf_consume(&c->in, (size_t)r);
	if (up.verdict == HTTP_VERDICT_METRICS) {
		send_metrics(c, &up);
		c->srv->metrics.http_responses++;
		conn_close(c, 0, "metrics answered");
		return;
	}
	n = http_upgrade_format(&up, time(NULL), out, sizeof(out));
	if (n < 0) {
		conn_kill(c);
		return;
	}
	conn_send_raw(c, out, (size_t)n);
	if (up.verdict != HTTP_VERDICT_UPGRADE) {
		log_debug("HTTP %d for %s", up.status, c->peer);
		c->srv->metrics.http_responses++;
		conn_close(c, 0, "HTTP request answered");
		return;
	}
	c->srv->metrics.ws_upgrades++;
	c->state = CONN_OPEN;
	list_del(&c->slot_link);
	list_add_tail(&c->slot_link, &c->srv->uninitialized);
	log_debug("WebSocket connection from %s", c->peer);
}

static void handle_ws(struct conn *c)
{
	size_t off = 0;

	while (c->state == CONN_OPEN && off < c->in.len) {
		struct ws_event ev = { 0 };
		int r;

		/* Over its in-flight budget: the rest waits in c->in (conn-mem.h). */
		if (conn_mem_pause_check(c))
			break;
		r = ws_parser_feed(&c->ws, c->in.data + off, c->in.len - off, &ev);
		if (r < 0) {
			log_info_ratelimited("Closing connection %s: WebSocket protocol error (%s)",
					     c->peer, strerror(-r));
			conn_close(c, ws_close_code_for_error(r), "protocol error");
			return;
		}
		off += (size_t)r;
		switch (ev.type) {
		case WS_EV_NONE:
			if (r == 0)
				goto out;
			break;
		case WS_EV_MESSAGE:
			conn_deliver(c, (const char *)ev.data, ev.len);
			break;
		case WS_EV_PING:
			send_control(c, WS_OP_PONG, ev.data, ev.len);
			break;
		case WS_EV_PONG:
			break;
		case WS_EV_CLOSE: {
			uint16_t code = ev.close_code == 1005 ? WS_CLOSE_NORMAL : ev.close_code;

			conn_close(c, code, "client sent Close");
			goto out;
		}
		}
	}
out:
	if (c->state != CONN_DEAD)
		buf_consume(&c->in, off);
}

static void handle_stdio(struct conn *c)
{
	size_t off = 0;

	while (c->state == CONN_OPEN) {
		uint8_t *nl = memchr(c->in.data + off, '\n', c->in.len - off);
		size_t n;

		if (!nl || conn_mem_pause_check(c))
			break;
		n = (size_t)(nl - (c->in.data + off));
		if (n > 0 && !(n == 1 && c->in.data[off] == '\r'))
			conn_deliver(c, (const char *)c->in.data + off, n);
		off += n + 1;
	}
	if (c->state == CONN_DEAD)
		return;
	buf_consume(&c->in, off);
	if (!c->mem_paused && c->in.len > c->srv->cfg.max_message_bytes) {
		log_error("stdio message larger than %" PRIu64 " bytes, closing",
			  c->srv->cfg.max_message_bytes);
		conn_kill(c);
	}
}

/*
 * A carried connection's input: 4-byte big-endian lengths and messages. Waits
 * (leaving the bytes in c->in) while the output is over the backpressure
 * mark, as a socket's requests wait unread in the kernel.
 */
static void handle_carried(struct conn *c)
{
	size_t off = 0;

	while (c->state == CONN_OPEN && !c->read_blocked && !c->carrier_paused &&
	       c->in.len - off >= 4) {
		const uint8_t *p = c->in.data + off;
		uint32_t n = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];

		if (n == 0 || n > c->srv->cfg.max_message_bytes) {
			log_info_ratelimited("Closing connection %s: message length %" PRIu32
					     " out of range", c->peer, n);
			conn_close(c, 0, "bad message length");
			return;
		}
		if (c->in.len - off - 4 < n || conn_mem_pause_check(c))
			break;
		conn_deliver(c, (const char *)p + 4, n);
		off += 4 + (size_t)n;
	}
	if (c->state != CONN_DEAD)
		buf_consume(&c->in, off);
}

void conn_carried_pause(struct conn *c, bool paused)
{
	if (c->carrier_paused == paused)
		return;
	c->carrier_paused = paused;
	if (!paused && c->state == CONN_OPEN)
		conn_input_resume(c);
}

int conn_carried_input(struct conn *c, const uint8_t *p, size_t n)
{
	if (c->state != CONN_OPEN)
		return 0; /* closing: what arrives now has no one to answer it */
	if (c->in.len + n > c->srv->cfg.max_message_bytes + 4 + CONN_CARRIED_SLACK)
		return -ENOBUFS;
	if (buf_append(&c->in, p, n) < 0)
		return -ENOMEM;
	conn_input_resume(c);
	return 0;
}

/*
 * TLS: runs the handshake and decrypts what was fed into c->in (one read's
 * worth: the same bound as without TLS), queueing the records the pump
 * produced (handshake, alerts, tickets). Returns false when c ended.
 */
static bool tls_input(struct conn *c)
{
	uint8_t plain[16384]; /* one record's payload at most */
	char why[200];
	bool verify;

	for (;;) {
		size_t n;
		enum tls_mem_result e = tls_mem_step(c->tls, plain, sizeof(plain), &n);

		if (!tls_flush_out(c))
			return false;
		switch (e) {
		case TLS_MEM_DONE:
			if (n > 0 && buf_append(&c->in, plain, n) < 0) {
				log_error_ratelimited("Out of memory buffering input from %s, closing",
						      c->peer);
				conn_kill(c);
				return false;
			}
			continue;
		case TLS_MEM_WANT_READ:
			return true;
		case TLS_MEM_CLOSED:
			conn_close(c, 0, "TLS close_notify");
			return false;
		case TLS_MEM_FAILED:
			break;
		}
		tls_mem_error_text(c->tls, why, sizeof(why), &verify);
		log_info_ratelimited("Closing connection %s: TLS %s failed: %s", c->peer,
				     tls_mem_ready(c->tls) ? "read" : "handshake", why);
		conn_kill(c);
		return false;
	}
}

static void on_read(struct uring_op *op, int res, uint32_t flags)
{
	struct conn *c = container_of(op, struct conn, read_op);
	bool has_buf = flags & IORING_CQE_F_BUFFER;
	unsigned bid = has_buf ? uring_cqe_bid(flags) : 0;

	c->read_armed = false;
	if (c->state == CONN_DEAD || c->state == CONN_CLOSING) {
		if (has_buf)
			server_recycle_buf(c->srv, bid);
		return;
	}
	if (res == -ENOBUFS) {
		server_wait_for_buf(c->srv, &c->bufwait);
		return;
	}
	if (res <= 0) {
		if (has_buf)
			server_recycle_buf(c->srv, bid);
		if (res < 0 && res != -ECONNRESET && res != -ECANCELED)
			log_debug_errno(res, "Read from %s failed", c->peer);
		if (res == 0 && c->transport == CONN_STDIO && !list_empty(&c->pending)) {
			/* End of input on stdio: answer what is in flight, then exit (rpc.c). */
			c->input_eof = true;
			return;
		}
		conn_close(c, 0, res == 0 ? "end of input" : "read error");
		return;
	}

	c->pings_unanswered = 0; /* anything from the peer shows it is there */
	if (c->tls) {
		int r = tls_mem_feed(c->tls, uring_bufs_get(&c->srv->bufs, bid), (size_t)res);

		server_recycle_buf(c->srv, bid);
		if (r < 0) {
			log_error_ratelimited("Out of memory buffering TLS input from %s, closing",
					      c->peer);
			conn_kill(c);
			return;
		}
		if (!tls_input(c))
			return;
	} else if (buf_append(&c->in, uring_bufs_get(&c->srv->bufs, bid), (size_t)res) < 0) {
		server_recycle_buf(c->srv, bid);
		log_error_ratelimited("Out of memory buffering input from %s, closing", c->peer);
		conn_kill(c);
		return;
	} else {
		server_recycle_buf(c->srv, bid);
	}

	if (c->state == CONN_HTTP && c->in.len > 0)
		handle_http(c);
	conn_input_resume(c);
}

/* Also where a connection paused over its in-flight budget picks up again (conn-mem.c). */
void conn_input_resume(struct conn *c)
{
	/*
	 * Not again from inside a message's dispatch (a carried connection's
	 * output can drain synchronously and lift its backpressure there): the
	 * running loop goes on with the next message itself.
	 */
	if (c->in_input)
		return;
	c->in_input = true;
	if (c->state == CONN_OPEN) {
		if (c->transport == CONN_WS)
			handle_ws(c);
		else if (c->transport == CONN_CARRIED)
			handle_carried(c);
		else
			handle_stdio(c);
	}
	c->in_input = false;
	if (c->state == CONN_DEAD)
		return;
	/* Idle connections keep no input buffer. */
	if (c->in.len == 0 && c->in.cap > 0)
		buf_done(&c->in);
	conn_arm_read(c);
}

static void conn_arm_read(struct conn *c)
{
	struct io_uring_sqe *sqe;

	if (c->read_op.busy || c->read_blocked || c->mem_paused || c->fd_in < 0 ||
	    (c->state != CONN_OPEN && c->state != CONN_HTTP))
		return;
	sqe = uring_get_sqe(&c->srv->ring, &c->read_op, on_read);
	if (c->transport == CONN_WS)
		io_uring_prep_recv(sqe, c->fd_in, NULL, IO_BUF_SIZE, 0);
	else
		io_uring_prep_read(sqe, c->fd_in, NULL, IO_BUF_SIZE, (__u64)-1);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = BGID_IO;
	c->read_armed = true;
}

/*
 * A WebSocket that is closing (the peer's Close echoed, or ours after a
 * protocol error) is no longer read, pinged or evicted: it only flushes what
 * was queued before the Close. A peer that stopped reading would hold it, its
 * fd, its queue (up to --max-queued-bytes and more) and its connection slot
 * for ever. It is ended at the third ping tick in a row at which nothing more
 * of it had been written (so after two whole ping intervals at least, the
 * first tick coming any time after the Close); a slow peer that still reads
 * keeps it.
 */
/*
 * Bytes of c's socket the peer has acknowledged (TCP_INFO's tcpi_bytes_acked,
 * Linux 4.1; glibc's struct tcp_info stops before it), or 0 where unknown. A
 * queued writev completes only once all of it is in the socket, so a slow
 * reader can take longer than a ping interval to move out_bytes; the ACKs
 * show that it reads.
 */
static uint64_t peer_acked(const struct conn *c)
{
	struct {
		struct tcp_info base;
		uint64_t pacing_rate, max_pacing_rate, bytes_acked;
	} ti;
	socklen_t len = sizeof(ti);

	if (c->transport != CONN_WS)
		return 0;
	memset(&ti, 0, sizeof(ti));
	if (getsockopt(c->fd_out, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0 ||
	    len < offsetof(__typeof__(ti), bytes_acked) + sizeof(ti.bytes_acked))
		return 0;
	return ti.bytes_acked;
}

static void closing_tick(struct conn *c)
{
	uint64_t acked = peer_acked(c);

	if (c->out_bytes == 0 || c->out_bytes < c->closing_mark || acked != c->closing_acked) {
		c->closing_mark = c->out_bytes;
		c->closing_acked = acked;
		c->closing_stalled = 0;
		return;
	}
	if (++c->closing_stalled <= CONN_MAX_MISSED_PINGS)
		return;
	log_info_ratelimited("Closing connection %s: it stopped reading while closing (%zu bytes "
			     "left unsent)", c->peer, c->out_bytes);
	conn_kill(c);
}

void conn_send_ping_all(struct server *s)
{
	struct conn *c, *n;

	list_for_each_entry_safe(c, n, &s->conns, link) {
		/* stdio at end of input whose stdout is not read: the same rule */
		if ((c->transport == CONN_WS || c->transport == CONN_STDIO) &&
		    c->state == CONN_CLOSING) {
			closing_tick(c);
			continue;
		}
		if (c->transport != CONN_WS || c->state != CONN_OPEN)
			continue;
		if (c->pings_unanswered >= CONN_MAX_MISSED_PINGS) {
			/* A plain TCP close, as every server-side close of the reference's. */
			log_info_ratelimited("Closing connection %s: nothing received in answer to %u "
					     "pings", c->peer, c->pings_unanswered);
			conn_kill(c);
			continue;
		}
		/*
		 * A ping queued behind output, or whose answer is not read (no read
		 * pending: backpressure, the memory budget, no buffer), may not count.
		 */
		if (c->out_bytes == 0 && c->read_op.busy)
			c->pings_unanswered++;
		send_control(c, WS_OP_PING, NULL, 0);
	}
}

void conn_initialize_done(struct conn *c)
{
	c->initialize_done = true;
	list_del(&c->slot_link);
}

bool conn_evict_one(struct server *s)
{
	struct conn *c;
	const char *why;

	if (!list_empty(&s->handshaking)) {
		c = list_first_entry(&s->handshaking, struct conn, slot_link);
		why = "the oldest without a WebSocket upgrade";
	} else if (!list_empty(&s->uninitialized)) {
		c = list_first_entry(&s->uninitialized, struct conn, slot_link);
		why = "the oldest without initialize";
	} else {
		return false;
	}
	log_info_ratelimited("Closing connection %s to make room for a new one (%u connections, "
			     "%s)", c->peer, s->n_conns, why);
	conn_kill(c);
	return true;
}
