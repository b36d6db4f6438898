/* SPDX-License-Identifier: MIT */
/*
 * The physical rendezvous link (RELAY.md §1, §4.5, §7.5): one WebSocket to
 * the registration's URL carrying every stream, binary relay frames only,
 * 256 KiB limits, TCP_NODELAY, the keepalive; reconnects with backoff (1 s
 * doubling to 30 s, back to 1 s after a connect), registering again when the
 * rendezvous refuses the upgrade with a 4xx. The identity (static keys) stays
 * the same for the life of the process.
 *
 * Sending is fair between streams: a stream with output joins the ready list,
 * and while the link's queue is below REMOTE_LINK_HIGH_WATER each ready
 * stream in turn sends one record (at most 60 KiB), so one stream's large
 * output never holds another's small answer for long.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "relay-frame.h"
#include "remote-internal.h"
#include "server.h"

static void on_retry(struct remote_deadline *d)
{
	struct remote *r = container_of(d, struct remote, backoff_deadline);

	if (r->state != REMOTE_BACKOFF)
		return;
	if (r->reregister)
		remote_register(r);
	else
		remote_link_connect(r);
}

void remote_link_retry(struct remote *r, bool reregister)
{
	uint32_t ms;

	if (r->state == REMOTE_STOPPED)
		return;
	r->state = REMOTE_BACKOFF;
	r->reregister = reregister;
	ms = registry_backoff_next(&r->backoff);
	log_info("Relay: %s in %" PRIu32 " ms", reregister ? "registering again" : "reconnecting",
		 ms);
	remote_deadline_set(r, &r->backoff_deadline, ms, on_retry);
}

static void on_open(struct remote_ws *w)
{
	struct remote *r = remote_ws_userdata(w);

	r->state = REMOTE_SERVING;
	r->failures = 0;
	registry_backoff_reset(&r->backoff);
	log_info("Relay link up: serving environment %s through the rendezvous",
		 r->environment_id);
}

static void on_message(struct remote_ws *w, bool binary, const uint8_t *p, size_t n)
{
	struct remote *r = remote_ws_userdata(w);

	if (!binary) {
		log_warning_ratelimited("Relay: dropping a text message from the rendezvous (relay "
					"frames are binary)");
		return;
	}
	remote_stream_frame(r, p, n);
}

static void on_drained(struct remote_ws *w)
{
	struct remote *r = remote_ws_userdata(w);

	remote_link_pump(r);
}

static void on_closed(struct remote_ws *w, int err, int http_status, const char *why)
{
	struct remote *r = remote_ws_userdata(w);
	bool refused = http_status >= 400 && http_status <= 499;

	r->ws = NULL;
	remote_deadline_clear(&r->drop_deadline);
	if (r->state == REMOTE_SERVING)
		log_warning("Relay link closed: %s", why);
	else if (http_status)
		log_warning("Relay: the rendezvous refused the WebSocket upgrade (HTTP %d)%s",
			    http_status, refused ? "; the registration is no longer valid" : "");
	else
		log_warning("Relay: connecting to the rendezvous failed: %s%s%s", why,
			    err ? ": " : "", err ? strerror(-err) : "");
	remote_stream_free_all(r, why);
	remote_link_retry(r, refused);
}

static const struct remote_ws_handlers link_handlers = {
	.open = on_open,
	.message = on_message,
	.drained = on_drained,
	.closed = on_closed,
};

void remote_link_connect(struct remote *r)
{
	static const char *const no_headers[] = { NULL };
	const char *headers[7] = { NULL };
	const char *cluster = getenv("OPENAI_CLUSTER"), *caller = getenv("DD_SERVICE");
	struct remote_ws_config cfg = {
		.url = r->reg.url,
		.max_frame = RELAY_FRAME_MAX_MESSAGE,
		.max_message = RELAY_FRAME_MAX_MESSAGE,
		.connect_timeout_ms = REMOTE_CONNECT_TIMEOUT_MS,
		.nodelay = true,
		.keepalive = true,
		.headers = no_headers,
	};
	size_t n = 0;
	int q;

	if (r->state == REMOTE_STOPPED)
		return;
	/* §7.5 step 2: the deployment's names, when set. */
	if (cluster && *cluster) {
		headers[n++] = "x-cluster-name";
		headers[n++] = cluster;
	}
	if (caller && *caller) {
		headers[n++] = "x-openai-internal-caller";
		headers[n++] = caller;
	}
	cfg.headers = headers;
	r->state = REMOTE_CONNECTING;
	q = remote_ws_open(r, &cfg, &link_handlers, r, &r->ws);
	if (q < 0) {
		r->ws = NULL;
		log_warning_errno(q, "Relay: cannot dial the rendezvous: %m");
		remote_link_retry(r, false);
	}
}

static void on_drop_deadline(struct remote_deadline *d)
{
	struct remote *r = container_of(d, struct remote, drop_deadline);

	remote_link_drop(r, r->drop_why);
}

/*
 * A failed send ends the link from the loop, not under the caller: the
 * stream that sent is still in use there (freeing every stream now would
 * free it under its own hands).
 */
static void link_drop_later(struct remote *r, const char *why)
{
	if (remote_deadline_armed(&r->drop_deadline))
		return;
	r->drop_why = why;
	remote_deadline_set(r, &r->drop_deadline, 0, on_drop_deadline);
}

/*
 * The outbound queue's bound (RELAY.md §4.2: a full outbound queue closes the
 * physical connection): Data frames wait below REMOTE_LINK_HIGH_WATER, but
 * resets, handshakes and Pongs do not, and a rendezvous that stops reading
 * must not grow them without end until the Pong deadline.
 */
static bool link_queue_full(struct remote *r)
{
	if (remote_ws_queued(r->ws) <= REMOTE_LINK_MAX_QUEUED)
		return false;
	link_drop_later(r, "write queue full");
	return true;
}

bool remote_link_send_frame(struct remote *r, const void *frame, size_t len)
{
	int q;

	if (!r->ws || r->state != REMOTE_SERVING || remote_deadline_armed(&r->drop_deadline) ||
	    link_queue_full(r))
		return false;
	q = remote_ws_send(r->ws, true, frame, len);
	if (q < 0) {
		link_drop_later(r, "write_error");
		return false;
	}
	return true;
}

uint8_t *remote_link_frame_reserve(struct remote *r, size_t len)
{
	if (!r->ws || r->state != REMOTE_SERVING || remote_deadline_armed(&r->drop_deadline))
		return NULL;
	return remote_ws_send_reserve(r->ws, len);
}

bool remote_link_frame_commit(struct remote *r)
{
	if (remote_ws_send_commit(r->ws) < 0) {
		link_drop_later(r, "write_error");
		return false;
	}
	return true;
}

void remote_link_drop(struct remote *r, const char *why)
{
	remote_deadline_clear(&r->drop_deadline);
	if (!r->ws)
		return;
	log_warning("Relay link closed: %s", why);
	remote_ws_close(TAKE_PTR(r->ws));
	remote_stream_free_all(r, why);
	remote_link_retry(r, false);
}

void remote_link_pump(struct remote *r)
{
	if (r->pumping)
		return;
	r->pumping = true;
	while (r->ws && r->state == REMOTE_SERVING && !list_empty(&r->ready) &&
	       remote_ws_queued(r->ws) < REMOTE_LINK_HIGH_WATER) {
		struct remote_stream *s = list_first_entry(&r->ready, struct remote_stream, ready_link);

		list_del(&s->ready_link);
		/* send_one() may run held requests whose answers put s back (carrier_flush) */
		if (remote_stream_send_one(s) && !s->ready_link.next)
			list_add_tail(&s->ready_link, &r->ready);
	}
	r->pumping = false;
}
