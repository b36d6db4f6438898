/* SPDX-License-Identifier: MIT */
/*
 * The physical rendezvous link (RELAY.md §1, §4.5, §7.5): one WebSocket to
 * the registration's URL carrying every stream, binary relay frames only,
 * 256 KiB limits, TCP_NODELAY, the keepalive; reconnects with backoff (1 s
 * doubling to 30 s, back to 1 s after a connect), registering again when the
 * rendezvous refuses the upgrade with a 4xx (remote.c decides both, told
 * through the link's hooks). The identity (static keys) stays the same for
 * the life of the process.
 *
 * The link calls down only (the WebSocket client, the deadlines); what it
 * receives, its room to send and its end go up through struct
 * remote_link_hooks. Its queue is bounded here; which stream sends next is
 * stream.c's round robin, asking remote_link_has_room().
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "relay-frame.h"
#include "remote-internal.h"
#include "server.h"

static void on_open(struct remote_ws *w)
{
	struct remote *r = remote_ws_userdata(w);

	r->state = REMOTE_SERVING;
	r->failures = 0;
	registry_backoff_reset(&r->backoff);
	remote_spare_fill(r); /* the first handshake's ephemeral keys, ahead */
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
	r->link_hooks->frame(r, p, n);
}

static void on_drained(struct remote_ws *w)
{
	struct remote *r = remote_ws_userdata(w);

	r->link_hooks->room(r);
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
	r->link_hooks->down(r, why, refused);
}

static const struct remote_ws_handlers link_handlers = {
	.open = on_open,
	.message = on_message,
	.drained = on_drained,
	.closed = on_closed,
};

int remote_link_connect(struct remote *r, const struct remote_link_hooks *hooks)
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
	r->link_hooks = hooks;
	q = remote_ws_open(r, &cfg, &link_handlers, r, &r->ws);
	if (q < 0) {
		r->ws = NULL;
		return log_warning_errno(q, "Relay: cannot dial the rendezvous: %m");
	}
	return 0;
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
	r->link_hooks->down(r, why, false);
}

void remote_link_close(struct remote *r)
{
	remote_deadline_clear(&r->drop_deadline);
	if (!r->ws)
		return;
	log_info("Relay link closed: local_shutdown");
	remote_ws_close(TAKE_PTR(r->ws));
}

bool remote_link_has_room(const struct remote *r)
{
	return r->ws && r->state == REMOTE_SERVING && remote_ws_queued(r->ws) < REMOTE_LINK_HIGH_WATER;
}
