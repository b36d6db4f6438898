/* SPDX-License-Identifier: MIT */
/*
 * The transport-independent part of a connection: the output queue, its
 * flush, backpressure, the TLS pump, reads and closing. What differs per
 * transport is in its operations table (conn-ops.h: conn-ws.c, conn-stdio.c,
 * conn-carried.c). Reads use the server's provided-buffer ring so an idle
 * connection holds no read buffer.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn-ops.h"
#include "jsonrpc.h"
#include "log.h"
#include "tls-mem.h"

/*
 * What the layers above want to hear (conn_set_handlers, once at start by
 * the executable's wiring): module state, like the server it serves.
 */
static const struct conn_handlers *handlers;

void conn_set_handlers(const struct conn_handlers *h)
{
	handlers = h;
}

int conn_metrics(struct server *s, struct buf *out)
{
	return handlers && handlers->metrics ? handlers->metrics(s, out) : -EOPNOTSUPP;
}

/* The layers above: the JSON-RPC message and the end of the connection. */
void conn_deliver_rpc(struct conn *c, const char *data, size_t len)
{
	if (handlers && handlers->message)
		handlers->message(c, data, len);
}

void conn_deliver(struct conn *c, const char *data, size_t len)
{
	if (c->ops->deliver)
		c->ops->deliver(c, data, len);
	else
		conn_deliver_rpc(c, data, len);
}

static void conn_closed(struct conn *c)
{
	if (handlers && handlers->closed)
		handlers->closed(c);
	c->srv->mem_dirty = true; /* its requests waiting for budget must wind up (conn-mem.c) */
}

/*
 * Dead connections sit on server->dead_conns until their ops are idle; they
 * are freed by conn_reap() between loop iterations, never under a caller.
 */
static void conn_free(struct conn *c)
{
	struct outchunk *o, *n;

	if (handlers && handlers->freed)
		handlers->freed(c);
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

struct conn *conn_alloc(struct server *s, enum conn_transport t, const struct conn_ops *ops)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->srv = s;
	c->transport = t;
	c->ops = ops;
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

void conn_send_raw(struct conn *c, const void *p, size_t n)
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

struct outchunk *conn_alloc_msg(struct conn *c, size_t payload_len, uint8_t **ret_payload)
{
	size_t hdr = c->ops->hdr_len(payload_len);
	size_t trailer = c->ops->trailer;
	struct outchunk *o = malloc(sizeof(*o) + hdr + payload_len + trailer);

	if (!o)
		return NULL;
	o->off = 0;
	o->len = hdr + payload_len + trailer;
	c->ops->frame(o, payload_len);
	*ret_payload = o->data + hdr;
	return o;
}

struct outchunk *conn_realloc_msg(struct conn *c, struct outchunk *o, size_t payload_len,
				  uint8_t **ret_payload)
{
	size_t trailer = c->ops->trailer, old_hdr = c->ops->framed_hdr_len(o), hdr, old_len, keep;
	struct outchunk *n;

	old_len = o->len - old_hdr - trailer;
	hdr = c->ops->hdr_len(payload_len);
	keep = MIN(old_len, payload_len);
	/* A shorter header: move the payload down while the block is still large enough. */
	if (hdr < old_hdr)
		memmove(o->data + hdr, o->data + old_hdr, keep);
	n = realloc(o, sizeof(*o) + hdr + payload_len + trailer);
	if (!n) {
		if (hdr < old_hdr) {
			memmove(o->data + old_hdr, o->data + hdr, keep);
			c->ops->frame(o, old_len);
		}
		return NULL;
	}
	if (hdr > old_hdr)
		memmove(n->data + hdr, n->data + old_hdr, keep);
	n->len = hdr + payload_len + trailer;
	c->ops->frame(n, payload_len);
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

/*
 * n bytes of the output queue went out: free what is done, lift the
 * backpressure below half the mark, finish a closing connection. Returns
 * false when the connection is gone or closed.
 */
bool conn_out_written(struct conn *c, size_t left)
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
		if (handlers && handlers->drained)
			handlers->drained(c);
		if (c->ops->drained)
			c->ops->drained(c);
		if (c->state == CONN_DEAD)
			return false;
	}

	if (list_empty(&c->outq)) {
		if (c->state == CONN_CLOSING) {
			/* Everything flushed: let the peer see FIN after our last frame. */
			if (c->ops->socket)
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
	/* A live upgrade's pause: nothing was written, the queue stays whole (conn_flush after). */
	if (res == -ECANCELED && c->srv->quiescing)
		return;
	if (res < 0) {
		log_debug_errno(res, "Write to %s failed", c->peer);
		conn_kill(c);
		return;
	}
	if (conn_out_written(c, (size_t)res))
		conn_flush(c);
}

void conn_flush(struct conn *c)
{
	struct io_uring_sqe *sqe;
	struct outchunk *o;
	unsigned n = 0;

	if (c->ops->flush) {
		c->ops->flush(c);
		return;
	}
	if (c->write_op.busy || list_empty(&c->outq) || c->fd_out < 0 || c->srv->quiescing)
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

void conn_kill(struct conn *c)
{
	if (c->state == CONN_DEAD)
		return;
	conn_closed(c);
	c->state = CONN_DEAD;
	c->srv->n_conns--;
	list_del(&c->slot_link);
	uring_cancel(&c->srv->ring, &c->read_op);
	uring_cancel(&c->srv->ring, &c->write_op);
	if (c->ops->socket)
		safe_close(c->fd_in);
	c->fd_in = c->fd_out = -1;
	if (c->ops->ended)
		c->ops->ended(c);
	if (c->ops->stops_server) {
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
	if (c->ops->close_frame && c->state == CONN_OPEN && ws_code)
		c->ops->close_frame(c, ws_code);
	conn_closed(c);
	if (!list_empty(&c->outq) &&
	    (c->ops->flush_on_close || ws_code || c->state == CONN_HTTP)) {
		c->state = CONN_CLOSING;
		c->closing_mark = c->out_bytes;
		c->closing_acked = c->ops->peer_acked ? c->ops->peer_acked(c) : 0;
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
		if (c->ops->ended)
			c->ops->ended(c);
		if (c->ops->socket)
			safe_close(c->fd_in);
		c->state = CONN_DEAD;
		s->n_conns--;
		conn_free(c);
	}
	list_for_each_entry_safe(c, n, &s->dead_conns, link)
		conn_free(c);
}

/* ---- input ---- */

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
	if (res == -ECANCELED && c->srv->quiescing)
		return; /* a live upgrade's pause, not the end: conn_arm_read() after */
	if (res <= 0) {
		if (has_buf)
			server_recycle_buf(c->srv, bid);
		if (res < 0 && res != -ECONNRESET && res != -ECANCELED)
			log_debug_errno(res, "Read from %s failed", c->peer);
		if (res == 0 && c->ops->answer_after_eof && !list_empty(&c->pending)) {
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

	if (c->state == CONN_HTTP && c->in.len > 0 && c->ops->handshake)
		c->ops->handshake(c);
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
	if (c->state == CONN_OPEN)
		c->ops->input(c);
	c->in_input = false;
	if (c->state == CONN_DEAD)
		return;
	/* Idle connections keep no input buffer. */
	if (c->in.len == 0 && c->in.cap > 0)
		buf_done(&c->in);
	conn_arm_read(c);
}

void conn_hold(struct conn *c)
{
	c->held++;
}

void conn_release(struct conn *c)
{
	if (c->held == 0 || --c->held > 0 || c->state != CONN_OPEN)
		return;
	/* What arrived meanwhile is dispatched; reading goes on either way. */
	if (c->in.len > 0)
		conn_input_resume(c);
	else
		conn_arm_read(c);
}

void conn_arm_read(struct conn *c)
{
	struct io_uring_sqe *sqe;

	if (c->read_op.busy || c->read_blocked || c->mem_paused || c->held || c->fd_in < 0 ||
	    c->srv->quiescing || (c->state != CONN_OPEN && c->state != CONN_HTTP))
		return;
	sqe = uring_get_sqe(&c->srv->ring, &c->read_op, on_read);
	if (c->ops->socket)
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
static void closing_tick(struct conn *c)
{
	uint64_t acked = c->ops->peer_acked ? c->ops->peer_acked(c) : 0;

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
		if (c->ops->closing_watched && c->state == CONN_CLOSING) {
			closing_tick(c);
			continue;
		}
		if (c->ops->ping && c->state == CONN_OPEN)
			c->ops->ping(c);
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
