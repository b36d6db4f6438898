/* SPDX-License-Identifier: MIT */
/*
 * The stdio transport: newline-delimited JSON on fds 0 and 1, which the
 * connection does not own. Its end is the server's.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "conn-ops.h"
#include "log.h"

static size_t stdio_hdr_len(size_t payload_len)
{
	(void)payload_len;
	return 0;
}

static size_t stdio_framed_hdr_len(const struct outchunk *o)
{
	(void)o;
	return 0;
}

static void stdio_frame(struct outchunk *o, size_t payload_len)
{
	o->data[payload_len] = '\n';
}

/* The connection over the server's stdin and stdout, open; NULL on ENOMEM. */
static struct conn *stdio_conn(struct server *s)
{
	struct conn *c = conn_alloc(s, CONN_STDIO, &conn_stdio_ops);

	if (!c)
		return NULL;
	c->fd_in = STDIN_FILENO;
	c->fd_out = STDOUT_FILENO;
	c->state = CONN_OPEN;
	snprintf(c->peer, sizeof(c->peer), "stdio");
	return c;
}

int conn_new_stdio(struct server *s)
{
	struct conn *c = stdio_conn(s);

	if (!c)
		return -ENOMEM;
	conn_arm_read(c);
	return 0;
}

int conn_adopt_stdio(struct server *s, bool initialize_done, bool initialized,
		     const uint8_t *out, size_t out_len, struct conn **ret)
{
	struct conn *c = stdio_conn(s);

	if (!c)
		return -ENOMEM;
	c->initialize_done = initialize_done;
	c->initialized = initialized;
	if (out_len)
		conn_send_raw(c, out, out_len); /* the old binary's queued lines first */
	*ret = c;
	return 0;
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
	if (!c->mem_paused && !c->held && c->in.len > c->srv->cfg.max_message_bytes) {
		log_error("stdio message larger than %" PRIu64 " bytes, closing",
			  c->srv->cfg.max_message_bytes);
		conn_kill(c);
	}
}

const struct conn_ops conn_stdio_ops = {
	.hdr_len = stdio_hdr_len,
	.trailer = 1,
	.frame = stdio_frame,
	.framed_hdr_len = stdio_framed_hdr_len,
	.input = handle_stdio,
	.stops_server = true,
	.flush_on_close = true,
	.closing_watched = true,
	.answer_after_eof = true,
};
