/* SPDX-License-Identifier: MIT */
/*
 * Registering the executor (RELAY.md §7.1, §7.5): POST …/register with the
 * process identity, retry only 503 registration_conflict (jittered), then
 * dial the rendezvous. The first registration's failure ends the server with
 * exit status 1 and the reference's "Error: environment registry request
 * failed" line; a later one (the rendezvous refused the upgrade with a 4xx)
 * is retried with the reconnect backoff, so that a fleet's executors ride
 * out a registry outage.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "remote-internal.h"
#include "server.h"

static void register_failed(struct remote *r, const char *detail)
{
	if (!r->registered_once) {
		/* As the reference: one line on stderr, exit status 1. */
		fprintf(stderr, "Error: environment registry request failed: %s\n", detail);
		server_stop(r->srv, 1);
		r->state = REMOTE_STOPPED;
		return;
	}
	/* detail never holds a token (registry.h) */
	log_warning("Registering again with the environment registry failed: %s", detail);
	remote_link_retry(r, true);
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
	remote_link_connect(r);
}

void remote_register(struct remote *r)
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
