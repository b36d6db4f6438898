/* SPDX-License-Identifier: MIT */
/*
 * The WebSocket transport: a TCP socket (with --listen wss://, TLS through
 * the connection's memory-BIO pump in conn.c), the HTTP upgrade or one plain
 * HTTP answer (/metrics, errors), WebSocket frames, pings, and the handshake
 * deadline.
 */
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "conn-auth.h"
#include "conn-ops.h"
#include "conn-tls.h"
#include "http.h"
#include "log.h"
#include "tls-mem.h"
#include "ws-auth.h"

#define HTTP_MAX_HEAD 16384

static size_t ws_hdr_len(size_t payload_len)
{
	return payload_len < 126 ? 2 : payload_len <= 0xffff ? 4 : 10;
}

static size_t ws_framed_hdr_len(const struct outchunk *o)
{
	uint8_t code = o->data[1] & 0x7f;

	return code == 127 ? 10 : code == 126 ? 4 : 2;
}

static void ws_frame(struct outchunk *o, size_t payload_len)
{
	ws_frame_hdr_encode(o->data, WS_OP_TEXT, payload_len);
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

	if (conn_tls_current()) {
		tls = calloc(1, sizeof(*tls));
		if (!tls || tls_mem_init(tls, conn_tls_current(), true) < 0) {
			free(tls);
			safe_close(fd);
			return -ENOMEM;
		}
	}
	c = conn_alloc(s, CONN_WS, &conn_ws_ops);
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

int conn_adopt_ws(struct server *s, int fd, const char *peer, bool initialize_done,
		  bool initialized, const uint8_t *out, size_t out_len, struct conn **ret)
{
	struct conn *c = conn_alloc(s, CONN_WS, &conn_ws_ops);

	if (!c)
		return -ENOMEM;
	c->fd_in = c->fd_out = fd;
	c->state = CONN_OPEN; /* upgraded before the hand-over: frames flow */
	snprintf(c->peer, sizeof(c->peer), "%s", peer);
	c->accepted_ns = now_ns();
	c->initialize_done = initialize_done;
	c->initialized = initialized;
	/* Not initialized yet: it takes a slot that eviction may reclaim, as after an upgrade. */
	if (!initialize_done)
		list_add_tail(&c->slot_link, &s->uninitialized);
	/* Frames the old binary had queued go first, as they were. */
	if (out_len)
		conn_send_raw(c, out, out_len);
	*ret = c;
	return 0;
}

void conn_adopt_start(struct conn *c, const uint8_t *in, size_t in_len)
{
	/*
	 * Bytes read and not parsed: the start of a frame (whole frames are
	 * dispatched as they are read; a connection paused over its in-flight
	 * budget is not handed over). Parsed with the rest once it comes, from
	 * the loop: nothing is dispatched before the server's limits are set.
	 */
	if (in_len && buf_append(&c->in, in, in_len) < 0) {
		conn_kill(c);
		return;
	}
	conn_arm_read(c);
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

static void ws_close_frame(struct conn *c, uint16_t code)
{
	uint8_t payload[2] = { (uint8_t)(code >> 8), (uint8_t)code };

	send_control(c, WS_OP_CLOSE, payload, 2);
}

/* GET /metrics: the body from the server's renderer (Prometheus text format 0.0.4). */
static void send_metrics(struct conn *c, struct http_upgrade *up)
{
	struct buf body = { 0 };
	char *out;
	int n;

	if (conn_metrics(c->srv, &body) < 0 || buf_append(&body, "", 1) < 0) {
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
	if (up.verdict != HTTP_VERDICT_RESPOND && conn_auth_current()) {
		const char *why = ws_auth_check(conn_auth_current(), &req, (int64_t)time(NULL));

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

	memset(&ti, 0, sizeof(ti));
	if (getsockopt(c->fd_out, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0 ||
	    len < offsetof(__typeof__(ti), bytes_acked) + sizeof(ti.bytes_acked))
		return 0;
	return ti.bytes_acked;
}

/* One ping tick of an open WebSocket (conn_send_ping_all). */
static void ws_ping(struct conn *c)
{
	if (c->pings_unanswered >= CONN_MAX_MISSED_PINGS) {
		/* A plain TCP close, as every server-side close of the reference's. */
		log_info_ratelimited("Closing connection %s: nothing received in answer to %u "
				     "pings", c->peer, c->pings_unanswered);
		conn_kill(c);
		return;
	}
	/*
	 * A ping queued behind output, or whose answer is not read (no read
	 * pending: backpressure, the memory budget, no buffer), may not count.
	 */
	if (c->out_bytes == 0 && c->read_op.busy)
		c->pings_unanswered++;
	send_control(c, WS_OP_PING, NULL, 0);
}

const struct conn_ops conn_ws_ops = {
	.hdr_len = ws_hdr_len,
	.frame = ws_frame,
	.framed_hdr_len = ws_framed_hdr_len,
	.handshake = handle_http,
	.input = handle_ws,
	.close_frame = ws_close_frame,
	.ping = ws_ping,
	.peer_acked = peer_acked,
	.socket = true,
	.closing_watched = true,
};
