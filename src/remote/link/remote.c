/* SPDX-License-Identifier: MIT */
/*
 * Remote mode, the top of src/remote/link: options, the process identity,
 * start and stop, and the mode's state machine (enum remote_state):
 *
 *   REGISTERING --registered--> CONNECTING --link up--> SERVING
 *        ^                          |                      |
 *        |                          +---- link down -------+
 *        |                          v
 *        +-- a 4xx upgrade, --- BACKOFF (1 s doubling --- otherwise ---> CONNECTING
 *            a failed             to 30 s)
 *            re-registration
 *
 * Registering (RELAY.md §7.1, §7.5): POST …/register with the process
 * identity, retry only 503 registration_conflict (jittered), then dial the
 * rendezvous. The first registration's failure ends the server with exit
 * status 1 and the reference's "Error: environment registry request failed"
 * line; a later one (the rendezvous refused the upgrade with a 4xx) is
 * retried with the reconnect backoff, so that a fleet's executors ride out a
 * registry outage. The link and the streams report up through the hooks
 * wired here (link_hooks).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "conn.h"
#include "http-client.h"
#include "log.h"
#include "noise.h"
#include "remote-internal.h"
#include "server.h"

/* The mode of this process (one server, one remote mode): set by remote_start(). */
static struct remote *remote_current;

/* ---- registering, dialling, backing off ---- */

static void remote_register(struct remote *r);
static void remote_dial(struct remote *r);

static void on_retry(struct remote_deadline *d)
{
	struct remote *r = container_of(d, struct remote, backoff_deadline);

	if (r->state != REMOTE_BACKOFF)
		return;
	if (r->reregister)
		remote_register(r);
	else
		remote_dial(r);
}

/* After the reconnect backoff: registers again (reregister) or dials. */
static void remote_retry(struct remote *r, bool reregister)
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

/* The link ended: its streams end with it; a 4xx upgrade means register again. */
static void on_link_down(struct remote *r, const char *why, bool refused)
{
	remote_stream_free_all(r, why);
	remote_retry(r, refused);
}

static const struct remote_link_hooks link_hooks = {
	.frame = remote_stream_frame,
	.room = remote_stream_pump,
	.down = on_link_down,
};

static void remote_dial(struct remote *r)
{
	if (r->state == REMOTE_STOPPED)
		return;
	if (remote_link_connect(r, &link_hooks) < 0)
		remote_retry(r, false);
}

static void register_failed(struct remote *r, const char *detail)
{
	if (!r->registered_once && !r->opt.after_upgrade) {
		/* As the reference: one line on stderr, exit status 1. */
		fprintf(stderr, "Error: environment registry request failed: %s\n", detail);
		server_stop(r->srv, 1);
		r->state = REMOTE_STOPPED;
		return;
	}
	/* detail never holds a token (registry.h) */
	log_warning("Registering again with the environment registry failed: %s", detail);
	remote_retry(r, true);
}

static void on_register_retry(struct remote_deadline *d)
{
	struct remote *r = container_of(d, struct remote, backoff_deadline);

	remote_register(r);
}

static void on_registered(void *userdata, int err, const char *why, int status, const char *body,
			  size_t len)
{
	struct remote *r = userdata;
	struct registry_registration reg = { 0 };
	struct registry_error e;
	const char *reason = NULL;
	char detail[600];
	int q;

	r->register_call = NULL;
	if (err < 0) {
		snprintf(detail, sizeof(detail), "%s (%s)", why ? why : "request failed",
			 strerror(-err));
		register_failed(r, detail);
		return;
	}
	if (status < 200 || status > 299) {
		registry_error_parse(status, body, len, &e);
		if (registry_should_retry_register(status, e.code)) {
			uint32_t ms = registry_conflict_retry_next(&r->conflict);

			log_info("Environment registry: registration conflict (HTTP 503), retrying in "
				 "%" PRIu32 " ms", ms);
			remote_deadline_set(r, &r->backoff_deadline, ms, on_register_retry);
			return;
		}
		snprintf(detail, sizeof(detail), "HTTP %d%s%s%s: %.400s", status,
			 e.auth ? " (authentication failed)" : "", e.code[0] ? " " : "", e.code,
			 e.message);
		register_failed(r, detail);
		return;
	}
	q = registry_parse_registration(body, len, r->environment_id, &reg, &reason);
	if (q < 0) {
		snprintf(detail, sizeof(detail), "invalid registration response: %s",
			 reason ? reason : strerror(-q));
		register_failed(r, detail);
		return;
	}
	registry_registration_done(&r->reg);
	r->reg = reg;
	r->registered_once = true;
	r->conflict.attempt = 0;
	log_info("Registered with the environment registry: environment %s, executor "
		 "registration %s",
		 r->environment_id, r->reg.executor_registration_id);
	r->state = REMOTE_CONNECTING;
	registry_backoff_reset(&r->backoff);
	remote_dial(r);
}

static void remote_register(struct remote *r)
{
	char *body;
	int err = 0;

	if (r->state == REMOTE_STOPPED)
		return;
	r->state = REMOTE_REGISTERING;
	body = registry_register_body(&r->identity_pub);
	if (!body) {
		register_failed(r, "out of memory");
		return;
	}
	r->register_call = remote_http_post(r, REGISTRY_REGISTER, NULL, body, strlen(body),
					    REMOTE_CONNECT_TIMEOUT_MS, on_registered, r, &err);
	free(body);
	if (!r->register_call)
		register_failed(r, strerror(-err));
}

/* ---- start and stop ---- */

/* Loopback: localhost, 127.0.0.0/8, ::1 (RELAY.md §7.6). */
static bool host_is_loopback(const struct registry_url *u)
{
	if (strcasecmp(u->host, "localhost") == 0 || strcmp(u->host, "::1") == 0)
		return true;
	return strncmp(u->host, "127.", 4) == 0 && strspn(u->host, "0123456789.") == strlen(u->host);
}

/* A host equal to or under suffix ("openai.com"). */
static bool host_under(const char *host, const char *suffix)
{
	size_t h = strlen(host), n = strlen(suffix);

	if (h == n)
		return strcasecmp(host, suffix) == 0;
	return h > n && host[h - n - 1] == '.' && strcasecmp(host + h - n, suffix) == 0;
}

/*
 * Where the credential may go. The reference sends an API key only to
 * https:// openai.com / openai.org hosts or to loopback; uexec does the same
 * for CODEX_API_KEY and CODEX_ACCESS_TOKEN (OpenAI credentials), and lets the
 * generic CODEX_EXEC_SERVER_REMOTE_BEARER_TOKEN go to any https:// registry
 * (a fleet's own), never in clear text beyond loopback.
 */
static int check_destination(const struct remote *r)
{
	bool loopback = host_is_loopback(&r->base);
	bool openai = host_under(r->base.host, "openai.com") || host_under(r->base.host, "openai.org");

	if (loopback)
		return 0;
	if (strcmp(r->opt.credential_source, "CODEX_EXEC_SERVER_REMOTE_BEARER_TOKEN") == 0) {
		if (r->base.tls)
			return 0;
		fprintf(stderr, "Error: remote exec-server bearer-token authentication needs an "
				"https:// registry URL unless the host is loopback\n");
		return -EINVAL;
	}
	if (r->base.tls && openai)
		return 0;
	fprintf(stderr, "Error: remote exec-server API-key authentication is restricted to HTTPS "
			"openai.com and openai.org hosts and subdomains or loopback hosts\n");
	return -EINVAL;
}

static int remote_parse_options(struct remote *r)
{
	const char *reason = NULL;
	int err = 0, q;

	r->base_url = registry_base_url(r->opt.url, &err, &reason);
	if (!r->base_url) {
		fprintf(stderr, "Error: invalid --remote URL: %s\n", reason ? reason : strerror(-err));
		return -EINVAL;
	}
	r->environment_id = registry_environment_id(r->opt.environment_id, &err, &reason);
	if (!r->environment_id) {
		fprintf(stderr, "Error: invalid --environment-id: %s\n",
			reason ? reason : strerror(-err));
		return -EINVAL;
	}
	q = registry_url_parse(r->base_url, &r->base, &reason);
	if (q < 0) {
		fprintf(stderr, "Error: invalid --remote URL: %s\n", reason ? reason : strerror(-q));
		return -EINVAL;
	}
	return check_destination(r);
}

/* forward's destination for the log: scheme, host and port only (a query may hold a token). */
static void log_forward_destination(const char *url)
{
	struct http_url u = { 0 };
	const char *reason = NULL;

	if (http_url_parse(url, &u, &reason) < 0) {
		log_info("Forwarding every relay stream to the --connect URL");
		return;
	}
	log_info("Forwarding every relay stream to %s://%s%s%s:%u", u.tls ? "wss" : "ws",
		 u.ipv6 ? "[" : "", u.host, u.ipv6 ? "]" : "", (unsigned)u.port);
	http_url_done(&u);
}

int remote_start(struct server *s, const struct remote_options *o)
{
	struct remote *r;
	int q;

	r = calloc(1, sizeof(*r));
	if (!r)
		return log_error_errno(ENOMEM, "Starting remote mode failed");
	remote_current = r;
	r->srv = s;
	r->opt = *o;
	r->state = REMOTE_REGISTERING;
	list_init(&r->streams);
	list_init(&r->ready);
	list_init(&r->http_idle);
	list_init(&r->deadlines);
	q = remote_parse_options(r);
	if (q < 0)
		return q;
	if (sodium_init() < 0)
		return log_error_errno(EIO, "libsodium failed to start");
	if (o->identity && o->identity_len == sizeof(r->identity)) {
		memcpy(&r->identity, o->identity, sizeof(r->identity)); /* kept across an upgrade */
		r->opt.identity = NULL;
	} else {
		q = noise_keypair_generate(&r->identity);
		if (q < 0)
			return log_error_errno(q, "Generating the relay identity failed");
	}
	noise_keypair_public(&r->identity, &r->identity_pub);
	q = registry_conflict_retry_init(&r->conflict);
	if (q < 0)
		return log_error_errno(q, "Starting the registration retry failed");
	registry_backoff_init(&r->backoff);
	log_info("Remote mode: registering with %s%s (environment %s); Noise %s with %s%s",
		 r->base.tls ? "https://" : "http://", r->base.host, r->environment_id,
		 NOISE_PROTOCOL_NAME, noise_aead_impl(),
		 r->opt.after_upgrade ? "; again after a live upgrade: harnesses resume their "
					"sessions" : "");
	if (r->opt.forward)
		log_forward_destination(r->opt.forward);
	remote_register(r);
	return 0;
}

void remote_stop(struct server *s)
{
	struct remote *r = remote_current;

	if (!r || r->srv != s || r->state == REMOTE_STOPPED)
		return;
	remote_stream_free_all(r, "local_shutdown");
	if (r->register_call)
		remote_http_cancel(TAKE_PTR(r->register_call));
	remote_http_idle_close_all(r);
	remote_spare_drop(r);
	remote_link_close(r);
	r->state = REMOTE_STOPPED;
	remote_deadlines_stop(r);
}

void remote_upgrade_pause(struct server *s, bool pause)
{
	struct remote *r = remote_current;

	if (!r || r->srv != s || r->state == REMOTE_STOPPED || pause == r->suspended)
		return;
	r->suspended = pause;
	if (pause) {
		/*
		 * As at shutdown, but for the registration: the streams and their
		 * carried connections end (their sessions detach, resumable), the
		 * registry calls and the link close. Nothing is armed meanwhile.
		 */
		log_info("Relay: closing the link for a live upgrade; harnesses resume their "
			 "sessions once the executor is back");
		remote_stream_free_all(r, "local_shutdown");
		if (r->register_call)
			remote_http_cancel(TAKE_PTR(r->register_call));
		remote_http_idle_close_all(r);
		remote_link_close(r);
		remote_deadline_clear(&r->backoff_deadline);
		r->state = REMOTE_BACKOFF;
		return;
	}
	/* The upgrade did not go on: back to the rendezvous (or the registry). */
	if (r->registered_once)
		remote_dial(r);
	else
		remote_register(r);
}

int remote_upgrade_identity(const struct server *s, void *out, size_t len)
{
	const struct remote *r = remote_current;

	if (!r || r->srv != s || r->state == REMOTE_STOPPED)
		return -ENOENT;
	if (len != sizeof(r->identity))
		return -EINVAL;
	memcpy(out, &r->identity, len);
	return 0;
}

void remote_free(struct server *s)
{
	struct remote *r = remote_current;

	if (!r || r->srv != s)
		return;
	remote_stop(s);
	strmap_done(&r->by_id);
	registry_registration_done(&r->reg);
	registry_url_done(&r->base);
	noise_keypair_wipe(&r->identity);
	free(r->base_url);
	free(r->environment_id);
	free(r);
	remote_current = NULL;
}
