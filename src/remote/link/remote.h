/* SPDX-License-Identifier: MIT */
/*
 * Remote mode (RELAY.md §1-§8): uexec registers with an environment registry,
 * dials out to the rendezvous WebSocket it names and serves every harness
 * stream routed to it there, each encrypted end to end with Noise, as a
 * connection of its own (transport CONN_CARRIED) on the same session and
 * process code as the direct listener. With --forward, each stream is
 * bridged to another exec-server's WebSocket instead.
 *
 * Everything runs on the server's ring: sockets and TLS through src/net,
 * timers through one ring timer, DNS on the worker pool.
 */
#pragma once

#include <stdbool.h>

struct server;
struct remote;

struct remote_options {
	const char *url;            /* --remote */
	const char *environment_id; /* --environment-id */
	const char *name;           /* --name (not sent: RELAY.md §7.6) */
	const char *forward;        /* forward --connect URL, or NULL */
	const char *credential;     /* the bearer token (from the environment), never logged */
	const char *credential_source; /* the variable it came from, for messages */
	/*
	 * Started by a live upgrade (docs/UPGRADE.md): processes run, so the first
	 * registration's failure is retried with the backoff instead of ending
	 * the server.
	 */
	bool after_upgrade;
	/*
	 * The identity (struct noise_keypair) the process had before a live
	 * upgrade, identity_len bytes, or NULL: a new one is generated. Copied.
	 * Harnesses pin the executor's key across a reconnection ("executor key
	 * changed during session recovery"), so an upgrade keeps it.
	 */
	const void *identity;
	size_t identity_len;
};

/*
 * Checks the options (prints a one-line error and returns -EINVAL), builds
 * the identity and starts registering. The first registration's failure
 * stops the server with exit status 1, as the reference exits; later link
 * failures reconnect with backoff.
 */
int remote_start(struct server *s, const struct remote_options *o);
/* The server is stopping: end the link (local_shutdown) and every stream. */
void remote_stop(struct server *s);
/* After the ring is gone: frees everything. */
void remote_free(struct server *s);
/*
 * A live upgrade's QUIESCE (docs/UPGRADE.md): pause (true) closes the relay
 * link, its streams (their carried connections end, their sessions stay
 * resumable) and the registry calls, so that no harness request comes in
 * while the state is built and no socket is left to the execve; the new
 * binary registers again and harnesses resume. false (the upgrade did not
 * go on): dials the rendezvous again (or registers).
 */
void remote_upgrade_pause(struct server *s, bool pause);
/* The identity (struct noise_keypair) into out (len bytes, exactly its size); -ENOENT without remote mode. */
int remote_upgrade_identity(const struct server *s, void *out, size_t len);
