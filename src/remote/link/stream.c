/* SPDX-License-Identifier: MIT */
/*
 * The executor's Noise relay streams (RELAY.md §4.2-§4.4, §5.1, §6): each
 * harness stream is authenticated (hybrid IK msg1, then the registry's
 * validate of its key and authorization), then carries one connection
 * (CONN_CARRIED) for the JSON-RPC layer, or, in forward mode, a bridge to the
 * destination exec-server. Every failure resets the stream with
 * "noise_relay_protocol_error"; handshake failures are charged to the
 * physical link, which is closed after the eighth.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "channel.h"
#include "conn.h"
#include "log.h"
#include "relay-frame.h"
#include "remote-internal.h"
#include "server.h"
#include "utf8.h"

/* One encoded Data frame: a record (60 KiB + tag) and the frame's own fields. */
static uint8_t frame_buf[RELAY_FRAME_NOISE_MAX_MESSAGE + 1024];

static void send_frame(struct remote *r, const struct relay_frame *f)
{
	ssize_t n = relay_frame_encode(f, frame_buf, sizeof(frame_buf));

	if (n < 0) {
		log_error("Relay: encoding a frame failed: %s", strerror((int)-n));
		return;
	}
	(void)remote_link_send_frame(r, frame_buf, (size_t)n);
}

static void send_reset(struct remote *r, const char *id, size_t id_len)
{
	struct relay_frame f;

	relay_frame_init_reset(&f, id, id_len, REMOTE_RESET_REASON, strlen(REMOTE_RESET_REASON));
	send_frame(r, &f);
}

static void stream_free(struct remote_stream *s, const char *why)
{
	struct remote *r = s->r;

	if (s->busy) {
		s->doomed = true; /* freed by whoever holds it busy */
		return;
	}
	strmap_remove(&r->by_id, s->id, s->id_len);
	list_del(&s->link);
	list_del(&s->ready_link);
	if (s->active)
		r->n_active--;
	else
		r->n_pending--;
	if (s->validation)
		remote_http_cancel(s->validation);
	remote_deadline_clear(&s->validation_deadline);
	remote_prep_orphan(s); /* a preparation running frees the handshake it holds */
	noise_handshake_free(s->hs);
	noise_transport_wipe(&s->t);
	relay_order_done(&s->order);
	if (s->conn) {
		struct conn *c = s->conn;

		s->conn = NULL;
		c->carrier_owner = NULL; /* no ended() for what we close ourselves */
		conn_close(c, 0, why);
	}
	if (s->fwd)
		remote_ws_close(s->fwd);
	if (s->active)
		log_info("Relay stream %s closed: %s", s->id, why);
	free(s->id);
	free(s);
}

/* Ends a busy section; frees s if it was ended meanwhile. Returns false then. */
static bool stream_unbusy(struct remote_stream *s, const char *why)
{
	if (--s->busy == 0 && s->doomed) {
		stream_free(s, why);
		return false;
	}
	return !s->doomed;
}

static void stream_reset(struct remote_stream *s, const char *why)
{
	if (!s->doomed) {
		log_info("Relay stream %s reset: %s", s->id, why);
		send_reset(s->r, s->id, s->id_len);
	}
	stream_free(s, why);
}

/*
 * A failed handshake on this link: eight are answered with a reset each; the
 * ninth closes the link instead (§4.2: the budget is 8 per physical
 * connection), which ends every stream on it. s is gone after.
 */
static void stream_fail_as(struct remote_stream *s, const char *why, bool reset)
{
	struct remote *r = s->r;

	if (++r->failures > REMOTE_MAX_FAILURES) {
		log_info("Relay stream %s failed: %s", s->id, why);
		stream_free(s, why);
		remote_link_drop(r, "too many failed Noise handshakes");
		return;
	}
	if (reset) {
		stream_reset(s, why);
		return;
	}
	log_info("Relay stream %s failed: %s", s->id, why);
	stream_free(s, why);
}

static void stream_fail(struct remote_stream *s, const char *why)
{
	stream_fail_as(s, why, true);
}

void remote_stream_free_all(struct remote *r, const char *why)
{
	while (!list_empty(&r->streams)) {
		struct remote_stream *s = list_first_entry(&r->streams, struct remote_stream, link);

		if (s->busy) {
			/* Inside its own input: unlink it now, its holder frees it. */
			s->doomed = true;
			list_del(&s->link);
			continue;
		}
		stream_free(s, why);
	}
}

/* ---- output: the carried connection's messages as records ---- */

static void carrier_flush(struct conn *c)
{
	struct remote_stream *s = c->carrier_owner;

	if (!s->active)
		return;
	if (!s->ready_link.next)
		list_add_tail(&s->ready_link, &s->r->ready);
	remote_stream_pump(s->r);
}

/*
 * One record: the frame's prefix and the record encrypted right after it, in
 * place in the socket's output queue (no copy of the output but the
 * encryption itself; with TLS, SSL_write's).
 */
static bool stream_send_one(struct remote_stream *s)
{
	const uint8_t *p;
	uint8_t *frame;
	uint32_t seq;
	ssize_t n, pre;
	size_t len;
	bool more;

	if (!s->conn || !s->active || s->doomed)
		return false;
	len = conn_out_peek(s->conn, &p, RELAY_RECORD_MAX);
	if (len == 0)
		return false;
	if (relay_seq_take(&s->send_seq, &seq) < 0) {
		stream_reset(s, "sequence numbers exhausted");
		return false;
	}
	pre = relay_frame_data_prefix(s->id, s->id_len, seq, len + NOISE_TAG_BYTES, NULL, 0);
	if (pre < 0) {
		stream_reset(s, "encoding a frame failed");
		return false;
	}
	frame = remote_link_frame_reserve(s->r, (size_t)pre + len + NOISE_TAG_BYTES);
	if (!frame)
		return false; /* no link (streams end with it) or out of memory: it ends */
	(void)relay_frame_data_prefix(s->id, s->id_len, seq, len + NOISE_TAG_BYTES, frame,
				      (size_t)pre);
	n = noise_encrypt(&s->t, p, len, frame + pre, len + NOISE_TAG_BYTES);
	if (n < 0) {
		/* The counter limit (checked with seq above): the reservation stays unused. */
		stream_reset(s, "encrypting a record failed");
		return false;
	}
	if (!remote_link_frame_commit(s->r))
		return false;
	s->busy++;
	conn_out_advance(s->conn, len); /* may resume input, which may end the stream */
	if (!stream_unbusy(s, "connection closed"))
		return false;
	more = s->conn && conn_out_peek(s->conn, &p, 1) > 0;
	return more;
}

/*
 * Sending is fair between streams: a stream with output joins the ready list,
 * and while the link has room (its queue below REMOTE_LINK_HIGH_WATER) each
 * ready stream in turn sends one record (at most 60 KiB), so one stream's
 * large output never holds another's small answer for long. Runs when a
 * stream gets output and when the link drains (its room hook).
 */
void remote_stream_pump(struct remote *r)
{
	if (r->pumping)
		return;
	r->pumping = true;
	while (!list_empty(&r->ready) && remote_link_has_room(r)) {
		struct remote_stream *s = list_first_entry(&r->ready, struct remote_stream, ready_link);

		list_del(&s->ready_link);
		/* send_one() may run held requests whose answers put s back (carrier_flush) */
		if (stream_send_one(s) && !s->ready_link.next)
			list_add_tail(&s->ready_link, &r->ready);
	}
	r->pumping = false;
}

static void carrier_ended(struct conn *c)
{
	struct remote_stream *s = c->carrier_owner;

	s->conn = NULL;
	stream_reset(s, "connection ended");
}

static const struct conn_carrier exec_carrier = {
	.flush = carrier_flush,
	.ended = carrier_ended,
};

/* ---- forward mode: the destination exec-server (RELAY.md §8) ---- */

#define FORWARD_MAX_MESSAGE (64u << 20)
#define FORWARD_FRAGMENT (8u << 20) /* listeners take 64 MiB messages but 16 MiB frames */

static void fwd_message_in(struct conn *c, const char *data, size_t len)
{
	struct remote_stream *s = c->carrier_owner;

	if (remote_ws_send(s->fwd, true, data, len) < 0) {
		stream_reset(s, "forwarding to the destination failed");
		return;
	}
	/* A destination that does not read: the harness's messages wait (bounded) in c->in. */
	if (remote_ws_queued(s->fwd) > s->r->srv->cfg.max_queued_bytes)
		conn_carried_pause(c, true);
}

/* The destination took everything: the harness's messages flow again. */
static void fwd_to_dest_drained(struct remote_ws *w)
{
	struct remote_stream *s = remote_ws_userdata(w);

	if (s->conn)
		conn_carried_pause(s->conn, false);
}

static void fwd_drained(struct conn *c)
{
	struct remote_stream *s = c->carrier_owner;

	if (s->fwd)
		remote_ws_set_reading(s->fwd, true);
}

static const struct conn_carrier fwd_carrier = {
	.flush = carrier_flush,
	.ended = carrier_ended,
	.message = fwd_message_in,
	.drained = fwd_drained,
};

static void fwd_open(struct remote_ws *w)
{
	struct remote_stream *s = remote_ws_userdata(w);

	s->fwd_open = true;
	/* What the harness sent meanwhile waited in the connection's input. */
	if (s->conn)
		conn_carried_pause(s->conn, false);
}

static void fwd_from_dest(struct remote_ws *w, bool binary, const uint8_t *p, size_t n)
{
	struct remote_stream *s = remote_ws_userdata(w);

	if (n == 0 || n > RELAY_MESSAGE_MAX) {
		stream_reset(s, "destination message size out of range");
		return;
	}
	s->busy++;
	conn_send_text(s->conn, (const char *)p, n); /* may end the stream (out of memory) */
	if (!stream_unbusy(s, "connection closed"))
		return;
	if (s->conn && conn_congested(s->conn))
		remote_ws_set_reading(w, false);
}

static void fwd_closed(struct remote_ws *w, int err, int http_status, const char *why)
{
	struct remote_stream *s = remote_ws_userdata(w);

	s->fwd = NULL;
	if (http_status)
		log_warning("Relay stream %s: the destination refused the upgrade (HTTP %d)", s->id,
			    http_status);
	else if (!s->fwd_open)
		log_warning("Relay stream %s: cannot reach the destination: %s", s->id, why);
	/* Send back what the destination said first (§8), then end the stream. */
	if (s->conn)
		conn_close(s->conn, WS_CLOSE_NORMAL, "destination closed");
	else
		stream_reset(s, "destination closed");
}

static const struct remote_ws_handlers fwd_handlers = {
	.open = fwd_open,
	.message = fwd_from_dest,
	.drained = fwd_to_dest_drained,
	.closed = fwd_closed,
};

/* ---- activation ---- */

static int stream_activate(struct remote_stream *s)
{
	struct remote *r = s->r;
	char peer[64];
	int q;

	snprintf(peer, sizeof(peer), "relay stream %.36s", s->id);
	q = conn_new_carried(r->srv, peer, r->opt.forward ? &fwd_carrier : &exec_carrier, s,
			     &s->conn);
	if (q < 0)
		return q;
	if (r->opt.forward) {
		/* Until the destination is open, the harness's messages wait. */
		conn_carried_pause(s->conn, true);
		struct remote_ws_config cfg = {
			.url = r->opt.forward,
			.max_frame = FORWARD_MAX_MESSAGE,
			.max_message = FORWARD_MAX_MESSAGE,
			.connect_timeout_ms = REMOTE_CONNECT_TIMEOUT_MS,
			.fragment = FORWARD_FRAGMENT,
			.nodelay = true,
		};

		q = remote_ws_open(r, &cfg, &fwd_handlers, s, &s->fwd);
		if (q < 0) {
			s->fwd = NULL;
			return q;
		}
	}
	return 0;
}

/*
 * The registry's verdict and msg2's prepared tokens both in: msg2 goes out
 * (RELAY.md §4.2 step 8), or, for a 401, the handshake completes with the
 * rejection payload and the stream is never activated (as the reference).
 */
void remote_stream_finish_handshake(struct remote_stream *s)
{
	struct remote *r = s->r;
	uint8_t msg2[NOISE_MSG2_BYTES + sizeof(REMOTE_AUTH_REJECTED)];
	struct relay_frame f;
	ssize_t n;
	int q;

	if (s->verdict == STREAM_VERDICT_REJECTED) {
		n = noise_handshake_write(s->hs, (const uint8_t *)REMOTE_AUTH_REJECTED,
					  strlen(REMOTE_AUTH_REJECTED), msg2, sizeof(msg2));
		if (n <= 0) {
			stream_fail(s, "harness key not validated");
			return;
		}
		relay_frame_init_handshake(&f, s->id, s->id_len, msg2, (size_t)n);
		send_frame(r, &f);
		stream_fail_as(s, "harness authorization rejected by the registry", false);
		return;
	}
	if (r->n_active >= REMOTE_MAX_ACTIVE_STREAMS) {
		stream_reset(s, "too many active streams");
		return;
	}
	n = noise_handshake_write(s->hs, NULL, 0, msg2, sizeof(msg2));
	if (n < 0 || noise_handshake_split(s->hs, &s->t) < 0) {
		stream_reset(s, "writing the handshake answer failed");
		return;
	}
	noise_handshake_free(s->hs);
	s->hs = NULL;
	relay_frame_init_handshake(&f, s->id, s->id_len, msg2, (size_t)n);
	send_frame(r, &f);
	remote_spare_fill(r); /* the next handshake's ephemeral keys, now that this one is out */
	r->n_pending--;
	r->n_active++;
	s->active = true;
	q = stream_activate(s);
	if (q < 0) {
		stream_reset(s, "out of resources");
		return;
	}
	log_info("Relay stream %s open (%u active)", s->id, r->n_active);
}

static void on_validated(void *userdata, int err, const char *why, int status, const char *body,
			 size_t len)
{
	struct remote_stream *s = userdata;
	const char *reason = NULL;
	int q;

	s->validation = NULL;
	remote_deadline_clear(&s->validation_deadline);
	if (err < 0) {
		log_info("Relay stream %s: harness key validation failed: %s", s->id, why);
		goto fail;
	}
	if (status < 200 || status > 299) {
		struct registry_error e;

		/* Redacted: the body may echo the authorization (§7.2). */
		registry_error_parse_redacted(status, body, len, &e);
		log_info("Relay stream %s: harness key validation failed: HTTP %d%s%s%s", s->id,
			 status, e.auth ? " (authentication failed)" : "", e.code[0] ? " " : "",
			 e.code);
		if (status != 401)
			goto fail;
		/*
		 * As the reference: the handshake completes with this payload in msg2,
		 * so that the harness can tell the user its authorization was refused.
		 */
		s->verdict = STREAM_VERDICT_REJECTED;
	} else {
		q = registry_parse_validation(body, len, &reason);
		if (q < 0) {
			log_info("Relay stream %s: harness key rejected: %s", s->id,
				 q == -EKEYREJECTED ? "the registry says it is not valid" : reason);
			goto fail;
		}
		s->verdict = STREAM_VERDICT_VALID;
	}
	if (!s->prep) /* else the preparation's end finishes */
		remote_stream_finish_handshake(s);
	return;
fail:
	stream_fail(s, "harness key not validated");
}

static void on_validation_deadline(struct remote_deadline *d)
{
	struct remote_stream *s = container_of(d, struct remote_stream, validation_deadline);

	log_info("Relay stream %s: harness key validation timed out", s->id);
	stream_fail(s, "validation timed out");
}

/* ---- input ---- */

/* msg1 read; starts the validation. Returns 0, or < 0 to reset and charge. */
static int stream_start_validation(struct remote_stream *s, const uint8_t *auth, size_t len)
{
	struct remote *r = s->r;
	char *body;
	int err = 0;

	if (len > REGISTRY_AUTHORIZATION_MAX || !utf8_is_valid(auth, len))
		return -EBADMSG;
	body = registry_validate_body(r->reg.executor_registration_id,
				      noise_handshake_remote(s->hs), (const char *)auth, len, &err);
	if (!body)
		return err ? err : -ENOMEM;
	s->validation = remote_http_post(r, REGISTRY_VALIDATE, s->id, body, strlen(body),
					 REMOTE_VALIDATION_TIMEOUT_MS, on_validated, s, &err);
	sodium_memzero(body, strlen(body)); /* it holds the authorization */
	free(body);
	if (!s->validation)
		return err;
	remote_deadline_set(r, &s->validation_deadline, REMOTE_VALIDATION_TIMEOUT_MS,
			    on_validation_deadline);
	remote_prep_msg2(s);
	return 0;
}

static struct remote_stream *stream_new(struct remote *r, const struct relay_frame *f)
{
	struct remote_stream *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->r = r;
	s->id = strndup(f->stream_id, f->stream_id_len);
	s->id_len = f->stream_id_len;
	s->instance = ++r->next_instance;
	if (!s->id || strmap_put(&r->by_id, s->id, s->id_len, s) < 0) {
		free(s->id);
		free(s);
		return NULL;
	}
	list_add_tail(&s->link, &r->streams);
	r->n_pending++;
	return s;
}

static void on_handshake(struct remote *r, const struct relay_frame *f)
{
	struct remote_stream *s = strmap_get(&r->by_id, f->stream_id, f->stream_id_len);
	uint8_t auth[REGISTRY_AUTHORIZATION_MAX + 1], *prologue;
	size_t prologue_len;
	ssize_t n;
	int q;

	if (s && s->active) {
		stream_reset(s, "second handshake on an active stream");
		return;
	}
	if (s) {
		stream_fail(s, "second handshake on a pending stream");
		return;
	}
	if (r->n_active >= REMOTE_MAX_ACTIVE_STREAMS || r->n_pending >= REMOTE_MAX_PENDING) {
		log_warning_ratelimited("Relay: refusing stream %.*s: %u active, %u pending",
					(int)f->stream_id_len, f->stream_id, r->n_active,
					r->n_pending);
		send_reset(r, f->stream_id, f->stream_id_len);
		return;
	}
	s = stream_new(r, f);
	if (!s) {
		send_reset(r, f->stream_id, f->stream_id_len);
		return;
	}
	prologue = channel_prologue(r->environment_id, r->reg.executor_registration_id, s->id,
				    &prologue_len);
	q = prologue ? noise_handshake_new(&s->hs, NOISE_RESPONDER, &r->identity, NULL, prologue,
					   prologue_len, NOISE_MSG2_DEFAULT)
		     : -ENOMEM;
	free(prologue);
	if (q < 0) {
		stream_reset(s, "out of memory");
		return;
	}
	n = noise_handshake_read(s->hs, f->handshake.payload, f->handshake.payload_len, auth,
				 sizeof(auth));
	q = n < 0 ? (int)n : stream_start_validation(s, auth, (size_t)n);
	sodium_memzero(auth, sizeof(auth));
	if (q < 0)
		stream_fail(s, q == -EMSGSIZE || q == -EBADMSG ? "bad handshake message"
							       : "handshake failed");
}

static int on_record(void *ctx, const uint8_t *ct, size_t len)
{
	struct remote_stream *s = ctx;
	uint8_t pt[NOISE_MAX_MESSAGE];
	ssize_t n = noise_decrypt(&s->t, ct, len, pt, sizeof(pt));
	int q;

	if (n < 0)
		return (int)n;
	if (n > RELAY_RECORD_MAX)
		return -EMSGSIZE;
	if (s->doomed)
		return -ECANCELED;
	q = conn_carried_input(s->conn, pt, (size_t)n);
	sodium_memzero(pt, (size_t)n);
	return q;
}

static void on_data(struct remote *r, const struct relay_frame *f)
{
	struct remote_stream *s = strmap_get(&r->by_id, f->stream_id, f->stream_id_len);
	int q;

	if (!s) {
		send_reset(r, f->stream_id, f->stream_id_len);
		return;
	}
	if (!s->active) {
		stream_fail(s, "data before the handshake completed");
		return;
	}
	s->busy++;
	q = relay_order_push(&s->order, f->data.seq, f->data.payload, f->data.payload_len,
			     on_record, s);
	if (!stream_unbusy(s, "connection closed"))
		return;
	if (q < 0)
		stream_reset(s, q == -EBADMSG ? "a record failed to authenticate"
			     : q == -ENOBUFS ? "input over the limit"
					     : "records out of order beyond the window");
}

void remote_stream_frame(struct remote *r, const uint8_t *buf, size_t len)
{
	struct relay_frame f;
	enum relay_frame_error e;
	int q;

	q = relay_frame_decode(buf, len, &f, &e);
	if (q < 0) {
		/* §2.1: the executor logs and drops a malformed frame. */
		log_warning_ratelimited("Relay: dropping an invalid frame: %s",
					relay_frame_error_str(e));
		return;
	}
	switch (f.kind) {
	case RELAY_FRAME_HANDSHAKE:
		on_handshake(r, &f);
		break;
	case RELAY_FRAME_DATA:
		on_data(r, &f);
		break;
	case RELAY_FRAME_RESET: {
		/* The reason is unauthenticated: not logged. */
		struct remote_stream *s = strmap_get(&r->by_id, f.stream_id, f.stream_id_len);

		if (s)
			stream_free(s, "reset by the harness");
		break;
	}
	case RELAY_FRAME_ACK:
	case RELAY_FRAME_RESUME:
	case RELAY_FRAME_HEARTBEAT:
		break;
	}
	relay_frame_done(&f);
}
