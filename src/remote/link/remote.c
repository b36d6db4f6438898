/* SPDX-License-Identifier: MIT */
/*
 * Remote mode: options, the process identity, start and stop, and the
 * deadline list (one ring timer armed for the earliest deadline, so that the
 * many short-lived objects of the mode own no ring op and can be freed at
 * once).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "conn.h"
#include "http-client.h"
#include "log.h"
#include "noise.h"
#include "remote-internal.h"
#include "server.h"

uint64_t remote_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void on_timer(struct uring_timer *t, bool fired);

static void timer_rearm(struct remote *r)
{
	struct remote_deadline *d;
	uint64_t now;

	if (r->state == REMOTE_STOPPED || list_empty(&r->deadlines))
		return;
	d = list_first_entry(&r->deadlines, struct remote_deadline, link);
	now = remote_now_ms();
	uring_timer_arm(&r->srv->ring, &r->timer, d->at_ms > now ? d->at_ms - now : 0, on_timer);
}

static void on_timer(struct uring_timer *t, bool fired)
{
	struct remote *r = container_of(t, struct remote, timer);
	uint64_t now = remote_now_ms();

	if (!fired || r->state == REMOTE_STOPPED)
		return;
	while (!list_empty(&r->deadlines)) {
		struct remote_deadline *d = list_first_entry(&r->deadlines, struct remote_deadline, link);

		if (d->at_ms > now)
			break;
		list_del(&d->link);
		d->fn(d);
		if (r->state == REMOTE_STOPPED)
			return;
	}
	timer_rearm(r);
}

void remote_deadline_set(struct remote *r, struct remote_deadline *d, uint64_t ms,
			 void (*fn)(struct remote_deadline *d))
{
	struct remote_deadline *i;
	bool first;

	list_del(&d->link);
	d->at_ms = remote_now_ms() + ms;
	d->fn = fn;
	/* Few deadlines (a link, its keepalive, up to 32 validations): a sorted list will do. */
	list_for_each_entry(i, &r->deadlines, link)
		if (i->at_ms > d->at_ms)
			break;
	list_add_tail(&d->link, &i->link);
	first = r->deadlines.next == &d->link;
	if (first)
		timer_rearm(r);
}

void remote_deadline_clear(struct remote_deadline *d)
{
	list_del(&d->link); /* the timer may fire early for it: it then finds nothing due */
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
	s->remote = r;
	r->srv = s;
	r->opt = *o;
	r->state = REMOTE_REGISTERING;
	list_init(&r->streams);
	list_init(&r->ready);
	list_init(&r->deadlines);
	q = remote_parse_options(r);
	if (q < 0)
		return q;
	if (sodium_init() < 0)
		return log_error_errno(EIO, "libsodium failed to start");
	q = noise_keypair_generate(&r->identity);
	if (q < 0)
		return log_error_errno(q, "Generating the relay identity failed");
	noise_keypair_public(&r->identity, &r->identity_pub);
	q = registry_conflict_retry_init(&r->conflict);
	if (q < 0)
		return log_error_errno(q, "Starting the registration retry failed");
	registry_backoff_init(&r->backoff);
	log_info("Remote mode: registering with %s%s (environment %s); Noise %s with %s",
		 r->base.tls ? "https://" : "http://", r->base.host, r->environment_id,
		 NOISE_PROTOCOL_NAME, noise_aead_impl());
	if (r->opt.forward)
		log_forward_destination(r->opt.forward);
	remote_register(r);
	return 0;
}

void remote_stop(struct server *s)
{
	struct remote *r = s->remote;

	if (!r || r->state == REMOTE_STOPPED)
		return;
	remote_stream_free_all(r, "local_shutdown");
	if (r->register_call)
		remote_http_cancel(TAKE_PTR(r->register_call));
	if (r->ws) {
		log_info("Relay link closed: local_shutdown");
		remote_ws_close(TAKE_PTR(r->ws));
	}
	r->state = REMOTE_STOPPED;
	while (!list_empty(&r->deadlines))
		list_del(r->deadlines.next);
	uring_timer_cancel(&r->timer);
}

void remote_free(struct server *s)
{
	struct remote *r = s->remote;

	if (!r)
		return;
	remote_stop(s);
	strmap_done(&r->by_id);
	registry_registration_done(&r->reg);
	registry_url_done(&r->base);
	noise_keypair_wipe(&r->identity);
	free(r->base_url);
	free(r->environment_id);
	free(r);
	s->remote = NULL;
}
