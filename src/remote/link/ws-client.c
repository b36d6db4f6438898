/* SPDX-License-Identifier: MIT */
/*
 * The WebSocket client of remote mode (RFC 6455 §4.1, §5): the rendezvous
 * link and forward's destinations. Upgrade request and check, masked frames
 * out, unmasked frames in (proto/ws.c in client mode), Ping/Pong, Close, and
 * the keepalive of RELAY.md §4.5: a Ping every 30 s unless one is
 * outstanding, the connection ends ("pong_timeout") when its Pong does not
 * come within 60 s.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "buf.h"
#include "http-client.h"
#include "http.h"
#include "log.h"
#include "netconn.h"
#include "remote-internal.h"
#include "server.h"
#include "ws.h"

#define WS_KEEPALIVE_MS 30000
#define WS_PONG_TIMEOUT_MS 60000
#define WS_MAX_HEAD 16384

struct remote_ws {
	struct remote *r;
	struct netconn *nc;
	const struct remote_ws_handlers *h;
	void *userdata;
	struct remote_ws_config cfg;
	char key[HTTP_WS_KEY_LEN + 1];
	char *request;
	size_t request_len;
	bool upgraded, closing, reading;
	struct buf in;
	struct ws_parser parser;
	struct remote_deadline connect_deadline, ping_deadline, pong_deadline;
	bool ping_outstanding;
	/* remote_ws_send_reserve()'s frame, until its commit */
	uint8_t *res_payload, res_mask[4];
	/* masking keys, drawn 64 at a time (one getrandom() per frame was ~1% of the relay's CPU) */
	uint8_t mask_pool[256];
	size_t mask_left;
	size_t res_len, res_hl;
	/* Inside on_data(): a handler's remote_ws_close() only marks w dead, on_data() frees it. */
	bool dispatching, dead;
};

void *remote_ws_userdata(const struct remote_ws *w)
{
	return w->userdata;
}

static void ws_free(struct remote_ws *w)
{
	remote_deadline_clear(&w->connect_deadline);
	remote_deadline_clear(&w->ping_deadline);
	remote_deadline_clear(&w->pong_deadline);
	if (w->nc)
		netconn_close(w->nc);
	free(w->request);
	buf_done(&w->in);
	ws_parser_done(&w->parser);
	free(w);
}

void remote_ws_close(struct remote_ws *w)
{
	if (!w || w->dead)
		return;
	if (w->dispatching) {
		w->dead = true;
		remote_deadline_clear(&w->connect_deadline);
		remote_deadline_clear(&w->ping_deadline);
		remote_deadline_clear(&w->pong_deadline);
		if (w->nc)
			netconn_close(TAKE_PTR(w->nc));
		return;
	}
	ws_free(w);
}

/* Ends w and tells the owner (once); w is gone after. */
static void ws_end(struct remote_ws *w, int err, int status, const char *why)
{
	const struct remote_ws_handlers *h = w->h;

	if (w->dead)
		return;
	w->dead = true;
	h->closed(w, err, status, why);
	if (!w->dispatching)
		ws_free(w);
	else if (w->nc)
		netconn_close(TAKE_PTR(w->nc));
}

/* A fresh, unpredictable masking key (RFC 6455 §5.3), from libsodium's CSPRNG. */
static void ws_mask_key(struct remote_ws *w, uint8_t mask[4])
{
	if (w->mask_left < 4) {
		randombytes_buf(w->mask_pool, sizeof(w->mask_pool));
		w->mask_left = sizeof(w->mask_pool);
	}
	w->mask_left -= 4;
	memcpy(mask, w->mask_pool + w->mask_left, 4);
	sodium_memzero(w->mask_pool + w->mask_left, 4); /* each key used once */
}

static int ws_send_frame(struct remote_ws *w, enum ws_opcode op, bool fin, const uint8_t *p,
			 size_t n)
{
	uint8_t *frame, mask[4];
	size_t hl;
	int q;

	frame = malloc(WS_MAX_CLIENT_HDR + n);
	if (!frame)
		return -ENOMEM;
	ws_mask_key(w, mask);
	hl = ws_frame_hdr_encode_masked(frame, op, n, mask);
	if (!fin)
		frame[0] &= 0x7f;
	if (n) /* p is NULL for an empty Ping: memcpy's arguments must not be */
		memcpy(frame + hl, p, n);
	ws_unmask(frame + hl, n, mask, 0);
	q = netconn_send(w->nc, frame, hl + n);
	free(frame);
	return q;
}

int remote_ws_send(struct remote_ws *w, bool binary, const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t frag = w->cfg.fragment ? w->cfg.fragment : n;
	enum ws_opcode op = binary ? WS_OP_BINARY : WS_OP_TEXT;
	int q;

	if (!w->upgraded || w->closing)
		return -ENOTCONN;
	do {
		size_t k = n > frag ? frag : n;

		q = ws_send_frame(w, op, k == n, b, k);
		if (q < 0)
			return q;
		op = WS_OP_CONT;
		b += k;
		n -= k;
	} while (n > 0);
	return 0;
}

uint8_t *remote_ws_send_reserve(struct remote_ws *w, size_t n)
{
	size_t hl = n < 126 ? 6 : n <= 0xffff ? 8 : 14;
	uint8_t *b;

	if (!w->upgraded || w->closing || !w->nc || n == 0)
		return NULL;
	b = netconn_send_reserve(w->nc, hl + n);
	if (!b)
		return NULL;
	ws_mask_key(w, w->res_mask);
	(void)ws_frame_hdr_encode_masked(b, WS_OP_BINARY, n, w->res_mask);
	w->res_payload = b + hl;
	w->res_len = n;
	w->res_hl = hl;
	return w->res_payload;
}

int remote_ws_send_commit(struct remote_ws *w)
{
	ws_unmask(w->res_payload, w->res_len, w->res_mask, 0); /* masking, in place */
	w->res_payload = NULL;
	return netconn_send_commit(w->nc, w->res_hl + w->res_len);
}

size_t remote_ws_queued(const struct remote_ws *w)
{
	return w->nc ? netconn_queued(w->nc) : 0;
}

void remote_ws_set_reading(struct remote_ws *w, bool on)
{
	w->reading = on;
	if (w->nc)
		netconn_set_reading(w->nc, on);
}

void remote_ws_shutdown(struct remote_ws *w, uint16_t code)
{
	uint8_t payload[2] = { (uint8_t)(code >> 8), (uint8_t)code };

	if (!w->upgraded || w->closing) {
		ws_end(w, 0, 0, "local_shutdown");
		return;
	}
	(void)ws_send_frame(w, WS_OP_CLOSE, true, payload, sizeof(payload));
	w->closing = true;
	netconn_shutdown(w->nc);
}

/* ---- keepalive ---- */

static void on_pong_deadline(struct remote_deadline *d)
{
	struct remote_ws *w = container_of(d, struct remote_ws, pong_deadline);

	ws_end(w, -ETIMEDOUT, 0, "pong_timeout");
}

static void on_ping_deadline(struct remote_deadline *d)
{
	struct remote_ws *w = container_of(d, struct remote_ws, ping_deadline);

	remote_deadline_set(w->r, &w->ping_deadline, WS_KEEPALIVE_MS, on_ping_deadline);
	if (w->ping_outstanding)
		return; /* no new Ping while one waits (missed ticks are skipped) */
	if (ws_send_frame(w, WS_OP_PING, true, NULL, 0) < 0) {
		ws_end(w, -ENOMEM, 0, "write_error");
		return;
	}
	w->ping_outstanding = true;
	remote_deadline_set(w->r, &w->pong_deadline, WS_PONG_TIMEOUT_MS, on_pong_deadline);
}

/* ---- input ---- */

static void on_connect_deadline(struct remote_deadline *d)
{
	struct remote_ws *w = container_of(d, struct remote_ws, connect_deadline);

	ws_end(w, -ETIMEDOUT, 0, "connect timed out");
}

static void on_connected(struct netconn *nc)
{
	struct remote_ws *w = netconn_userdata(nc);
	int q = netconn_send(nc, w->request, w->request_len);

	if (q < 0)
		ws_end(w, q, 0, "write_error");
}

/* The upgrade answer; returns 1 when upgraded, 0 for more bytes, -1 when w ended. */
static int ws_handle_upgrade(struct remote_ws *w)
{
	struct http_response resp;
	const char *reason = NULL;
	int q;

	q = http_response_parse((const char *)w->in.data, w->in.len, WS_MAX_HEAD, &resp);
	if (q == -EAGAIN)
		return 0;
	if (q < 0) {
		ws_end(w, -EPROTO, 0, "malformed upgrade response");
		return -1;
	}
	if (http_ws_client_check(&resp, w->key, &reason) < 0) {
		ws_end(w, -ECONNREFUSED, resp.status != 101 ? resp.status : 0,
		       reason ? reason : "upgrade refused");
		return -1;
	}
	buf_consume(&w->in, (size_t)q);
	w->upgraded = true;
	free(w->request);
	w->request = NULL;
	remote_deadline_clear(&w->connect_deadline);
	if (w->cfg.keepalive)
		remote_deadline_set(w->r, &w->ping_deadline, WS_KEEPALIVE_MS, on_ping_deadline);
	w->h->open(w);
	return 1;
}

/* Frames in w->in; returns false when w ended. */
static bool ws_handle_frames(struct remote_ws *w)
{
	size_t off = 0;

	while (off < w->in.len) {
		struct ws_event ev = { 0 };
		int q = ws_parser_feed(&w->parser, w->in.data + off, w->in.len - off, &ev);

		if (q < 0) {
			ws_end(w, q, 0, q == -EMSGSIZE ? "message too large" : "read_error");
			return false;
		}
		off += (size_t)q;
		if (ev.type == WS_EV_NONE && q == 0)
			break;
		switch (ev.type) {
		case WS_EV_MESSAGE:
			w->h->message(w, ev.binary, ev.data, ev.len);
			if (w->dead)
				return false;
			break;
		case WS_EV_PING:
			(void)ws_send_frame(w, WS_OP_PONG, true, ev.data, ev.len);
			break;
		case WS_EV_PONG:
			w->ping_outstanding = false;
			remote_deadline_clear(&w->pong_deadline);
			break;
		case WS_EV_CLOSE:
			ws_end(w, 0, 0, "peer_close");
			return false;
		case WS_EV_NONE:
			break;
		}
	}
	buf_consume(&w->in, off);
	return true;
}

static void ws_input(struct remote_ws *w)
{
	if (!w->upgraded) {
		if (w->in.len > WS_MAX_HEAD + 65536) {
			ws_end(w, -EPROTO, 0, "upgrade response too large");
			return;
		}
		if (ws_handle_upgrade(w) <= 0 || w->dead)
			return;
	}
	(void)ws_handle_frames(w);
}

static void on_data(struct netconn *nc, const uint8_t *p, size_t n)
{
	struct remote_ws *w = netconn_userdata(nc);

	if (buf_append(&w->in, p, n) < 0) {
		ws_end(w, -ENOMEM, 0, "read_error");
		return;
	}
	w->dispatching = true;
	ws_input(w);
	w->dispatching = false;
	if (w->dead)
		ws_free(w);
}

static void on_drained(struct netconn *nc)
{
	struct remote_ws *w = netconn_userdata(nc);

	if (w->upgraded && w->h->drained)
		w->h->drained(w);
}

static void on_closed(struct netconn *nc, int err, const char *why)
{
	struct remote_ws *w = netconn_userdata(nc);

	w->nc = NULL;
	if (!w->upgraded)
		ws_end(w, err ? err : -ECONNRESET, 0, why ? why : "connect failed");
	else
		ws_end(w, err, 0, err ? "read_error" : "peer_close");
}

static const struct netconn_handlers ws_net_handlers = {
	.connected = on_connected,
	.data = on_data,
	.drained = on_drained,
	.closed = on_closed,
};

static int ws_build_request(struct remote_ws *w, const struct http_url *u)
{
	struct http_client_header extra[8];
	char host[300];
	uint8_t nonce[16];
	size_t n = 0;
	int q, err = 0;

	q = http_client_host_header(host, sizeof(host), u->host, u->ipv6, u->port, u->tls);
	if (q < 0 || (size_t)q >= sizeof(host))
		return -EINVAL;
	randombytes_buf(nonce, sizeof(nonce));
	http_ws_client_key(nonce, w->key);
	for (const char *const *hh = w->cfg.headers; hh && hh[0] && n < 8; hh += 2)
		extra[n++] = (struct http_client_header){ hh[0], hh[1] };
	w->request = http_ws_client_request(u->target, host, w->key, extra, n, &w->request_len, &err);
	return w->request ? 0 : (err ? err : -ENOMEM);
}

int remote_ws_open(struct remote *r, const struct remote_ws_config *cfg,
		   const struct remote_ws_handlers *h, void *userdata, struct remote_ws **ret)
{
	struct http_url u = { 0 };
	struct netconn_config nc = { 0 };
	const char *reason = NULL;
	struct remote_ws *w;
	int q;

	q = http_url_parse(cfg->url, &u, &reason);
	if (q < 0)
		return q;
	w = calloc(1, sizeof(*w));
	if (!w) {
		http_url_done(&u);
		return -ENOMEM;
	}
	w->r = r;
	w->h = h;
	w->userdata = userdata;
	w->cfg = *cfg;
	w->cfg.url = NULL;
	w->cfg.headers = NULL;
	w->reading = true;
	w->parser.client = true;
	w->parser.limits.max_frame_bytes = cfg->max_frame;
	w->parser.limits.max_message_bytes = cfg->max_message;
	w->cfg.headers = cfg->headers;
	q = ws_build_request(w, &u);
	w->cfg.headers = NULL;
	if (q < 0)
		goto fail;
	nc.host = u.host;
	nc.port = u.port;
	nc.tls = u.tls;
	nc.nodelay = cfg->nodelay;
	nc.connect_timeout_ms = cfg->connect_timeout_ms;
	q = netconn_open(r->srv, &nc, &ws_net_handlers, w, &w->nc);
	if (q < 0) {
		w->nc = NULL;
		goto fail;
	}
	http_url_done(&u);
	if (cfg->connect_timeout_ms)
		remote_deadline_set(r, &w->connect_deadline, cfg->connect_timeout_ms,
				    on_connect_deadline);
	*ret = w;
	return 0;
fail:
	http_url_done(&u);
	ws_free(w);
	return q;
}
