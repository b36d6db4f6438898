/* SPDX-License-Identifier: MIT */
/*
 * The carried transport: a connection without fds whose bytes an owner above
 * the transport moves (a relay stream). Messages travel as a 4-byte
 * big-endian length and the JSON text (RELAY.md §4.3), framed and split by
 * the relay's records codec (src/remote/codec/records.h), the one framer of
 * both sides; the owner cuts the framed output into records.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "conn-ops.h"
#include "log.h"
#include "records.h"

static size_t carried_hdr_len(size_t payload_len)
{
	(void)payload_len;
	return RELAY_MSG_PREFIX;
}

static size_t carried_framed_hdr_len(const struct outchunk *o)
{
	(void)o;
	return RELAY_MSG_PREFIX;
}

static void carried_frame(struct outchunk *o, size_t payload_len)
{
	relay_msg_prefix(o->data, payload_len);
}

int conn_new_carried(struct server *s, const char *peer, const struct conn_carrier *cr,
		     void *owner, struct conn **ret)
{
	struct conn *c = conn_alloc(s, CONN_CARRIED, &conn_carried_ops);

	if (!c)
		return -ENOMEM;
	c->state = CONN_OPEN;
	c->carrier = cr;
	c->carrier_owner = owner;
	snprintf(c->peer, sizeof(c->peer), "%s", peer);
	*ret = c;
	return 0;
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
	       c->in.len - off >= RELAY_MSG_PREFIX) {
		const uint8_t *p = c->in.data + off;
		uint32_t n;
		int q = relay_msg_peek(p, c->in.len - off, c->srv->cfg.max_message_bytes, &n);

		if (q < 0) {
			log_info_ratelimited("Closing connection %s: message length %" PRIu32
					     " out of range", c->peer, n);
			conn_close(c, 0, "bad message length");
			return;
		}
		if (q == 0 || conn_mem_pause_check(c))
			break;
		conn_deliver(c, (const char *)p + RELAY_MSG_PREFIX, n);
		off += RELAY_MSG_PREFIX + (size_t)n;
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
	if (c->in.len + n > c->srv->cfg.max_message_bytes + RELAY_MSG_PREFIX + CONN_CARRIED_SLACK)
		return -ENOBUFS;
	if (buf_append(&c->in, p, n) < 0)
		return -ENOMEM;
	conn_input_resume(c);
	return 0;
}

/* Forward mode: messages go to the owner instead of the JSON-RPC layer. */
static void carried_deliver(struct conn *c, const char *data, size_t len)
{
	if (!c->carrier->message) {
		conn_deliver_rpc(c, data, len);
		return;
	}
	if (c->carrier_owner)
		c->carrier->message(c, data, len);
}

static void carried_flush(struct conn *c)
{
	if (c->carrier_owner && c->carrier->flush && !list_empty(&c->outq))
		c->carrier->flush(c);
}

static void carried_drained(struct conn *c)
{
	if (c->carrier_owner && c->carrier->drained)
		c->carrier->drained(c);
	/* A carried connection's requests waited in c->in meanwhile. */
	if (c->state == CONN_OPEN)
		conn_input_resume(c);
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
	(void)conn_out_written(c, n);
}

/* Tells a carried connection's owner, once, that it ended. */
static void carrier_ended(struct conn *c)
{
	if (c->carrier_owner) {
		/* ended() finds its owner in c->carrier_owner; cleared after, so no other call
		 * reaches the owner (c is CONN_DEAD already, a conn_close() from ended() returns). */
		if (c->carrier->ended)
			c->carrier->ended(c);
		c->carrier_owner = NULL;
	}
}

const struct conn_ops conn_carried_ops = {
	.hdr_len = carried_hdr_len,
	.frame = carried_frame,
	.framed_hdr_len = carried_framed_hdr_len,
	.input = handle_carried,
	.deliver = carried_deliver,
	.flush = carried_flush,
	.drained = carried_drained,
	.ended = carrier_ended,
};
