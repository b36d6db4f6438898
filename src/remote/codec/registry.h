/* SPDX-License-Identifier: MIT */
/*
 * The environment registry client's codec (RELAY.md §7), no I/O: the
 * --remote base URL and environment id, request paths and bodies, the
 * checks on every response (§7.1-§7.3), error bodies (§7.4), and the
 * reconnect backoff and registration-conflict retry delays (§7.5).
 *
 * Failures return a negative errno and, where a reason pointer is taken, a
 * short static text. Those texts never quote a response value, so they carry
 * no token, rendezvous URL or harness key authorization.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "noise.h"

#define REGISTRY_SECURITY_PROFILE "noise_hybrid_ik_v1"
/* MAX_HARNESS_KEY_AUTHORIZATION_BYTES (RELAY.md §4.2, §6.5). */
#define REGISTRY_AUTHORIZATION_MAX 4096
/* ERROR_BODY_PREVIEW_BYTES (§7.4): upstream counts characters, not bytes. */
#define REGISTRY_ERROR_PREVIEW 4096
/* The only transport_policy version understood (ENVIRONMENT_REGISTRY_TRANSPORT_POLICY_VERSION). */
#define REGISTRY_POLICY_VERSION 1

enum registry_op {
	REGISTRY_REGISTER,
	REGISTRY_VALIDATE,
	REGISTRY_CONNECT,
};

/*
 * --remote with surrounding whitespace (Unicode White_Space, as Rust's
 * str::trim) and then every trailing '/' removed. Returns a malloc'd string,
 * or NULL with *reason set: -EINVAL when nothing is left, -ENOMEM.
 */
char *registry_base_url(const char *remote, int *ret_errno, const char **reason);
/* --environment-id trimmed the same way; empty is refused (-EINVAL). */
char *registry_environment_id(const char *id, int *ret_errno, const char **reason);

/*
 * "{base}/cloud/environment/{id}/{register|validate|connect}" for a base
 * from registry_base_url() and an id from registry_environment_id(). The id
 * is percent-encoded as one path segment (see registry.c). malloc'd; NULL on
 * OOM or a bad op.
 */
char *registry_request_url(const char *base, const char *environment_id, enum registry_op op);
/* The same path without the base ("/cloud/environment/{id}/register"), for a request line. */
char *registry_request_path(const char *environment_id, enum registry_op op);

/* A base URL split for the HTTP transport. */
struct registry_url {
	bool tls;      /* https */
	char *host;    /* without the brackets of an IPv6 literal */
	bool ipv6;     /* host is an IPv6 literal: the Host header needs brackets */
	uint16_t port; /* default 80 / 443 */
	char *path;    /* the path prefix, "" or starting with '/', no trailing '/' */
};

/*
 * Splits a normalised base URL: scheme http or https (any case), a host (a
 * name, IPv4 or [IPv6]), an optional port 1-65535, an optional path. Refused
 * with -EINVAL and a reason: another scheme, user info, an empty host, a bad
 * port, a query or fragment, whitespace or control characters. -ENOMEM.
 */
int registry_url_parse(const char *base, struct registry_url *ret, const char **reason);
void registry_url_done(struct registry_url *u);

/*
 * Request bodies, compact JSON (malloc'd, NUL-terminated), members in this
 * order. NULL on OOM (*ret_errno -ENOMEM) or a refused argument.
 */
/* {"security_profile":"noise_hybrid_ik_v1","executor_public_key":{…}} */
char *registry_register_body(const struct noise_public *executor);
/*
 * {"executor_registration_id":…,"harness_public_key":{…},"harness_key_authorization":…}.
 * The authorization (msg1's payload) must be UTF-8 of at most 4096 bytes:
 * -EMSGSIZE / -EILSEQ otherwise, -ENOMEM.
 */
char *registry_validate_body(const char *registration_id, const struct noise_public *harness,
			     const char *authorization, size_t authorization_len, int *ret_errno);
/* {"harness_public_key":{…}} */
char *registry_connect_body(const struct noise_public *harness);

/* transport_policy (§7.1). */
struct registry_policy {
	uint32_t version;        /* 0 when absent */
	char *assignment_epoch;  /* "legacy" when absent, "off" when present without it */
	bool outbound_tcp_nodelay;
	bool rendezvous_accepted_tcp_nodelay;
};

enum registry_policy_state {
	REGISTRY_POLICY_LEGACY,   /* version 0 (absent) */
	REGISTRY_POLICY_INACTIVE, /* version 1, assignment_epoch "off" */
	REGISTRY_POLICY_ACTIVE,   /* version 1 */
	REGISTRY_POLICY_UNKNOWN,  /* another version: nothing applies */
};

enum registry_policy_state registry_policy_state(const struct registry_policy *p);
/* The TCP_NODELAY toggles, only while the policy is active. */
bool registry_policy_outbound_nodelay(const struct registry_policy *p);
bool registry_policy_accepted_nodelay(const struct registry_policy *p);

struct registry_registration {
	char *environment_id;
	char *url; /* the rendezvous WebSocket URL, ws:// or wss:// */
	char *executor_registration_id;
	struct registry_policy policy;
};

struct registry_connection {
	char *environment_id;
	char *url;
	char *executor_registration_id;
	struct noise_public executor_public_key;
	char *authorization; /* harness_key_authorization, wiped when done */
	size_t authorization_len;
	struct registry_policy policy;
};

/*
 * Parses a 2xx register / connect response body (len bytes) for the
 * requested environment id. Returns 0, or (with *reason):
 *   -EBADMSG     not JSON, not an object, a duplicate member, a member
 *                missing or of the wrong type, a string holding NUL
 *                (authorization excepted), a bad transport_policy;
 *   -EXDEV       environment_id differs from the requested one;
 *   -EPROTONOSUPPORT  security_profile is not noise_hybrid_ik_v1;
 *   -ENODATA     url / executor_registration_id / harness_key_authorization blank;
 *   -EAFNOSUPPORT url is not ws:// or wss://;
 *   -ENOKEY      executor_public_key refused by channel_public_key_parse;
 *   -EMSGSIZE    harness_key_authorization over 4096 bytes;
 *   -ENOMEM.
 * Members the registry adds are ignored (serde's default).
 */
int registry_parse_registration(const char *body, size_t len, const char *environment_id,
				struct registry_registration *ret, const char **reason);
void registry_registration_done(struct registry_registration *r);
int registry_parse_connection(const char *body, size_t len, const char *environment_id,
			      struct registry_connection *ret, const char **reason);
void registry_connection_done(struct registry_connection *c);

/*
 * A 2xx validate response {"valid": bool}: 0 when valid, -EKEYREJECTED when
 * the registry says false, -EBADMSG when malformed.
 */
int registry_parse_validation(const char *body, size_t len, const char **reason);

/* A non-2xx answer (§7.4). */
struct registry_error {
	int status;
	char code[64];                            /* "" when none; cut at 63 bytes */
	char message[4 * REGISTRY_ERROR_PREVIEW + 1]; /* UTF-8; "" only when the registry sent "" */
	bool auth;                                /* 401 or 403 */
};

/*
 * From the status and body: {"error":{"code","message"}} gives the code and
 * message; an error object without a message, or a body of another shape,
 * gives the trimmed body's first 4096 characters (UTF-8;
 * invalid UTF-8 and NUL become U+FFFD) as the message; a blank body gives
 * "empty error body" / "empty or malformed error body" as upstream does.
 */
void registry_error_parse(int status, const char *body, size_t len, struct registry_error *ret);
/*
 * For /validate: the body may echo the authorization, so only the status and
 * a code that is a plain identifier ([A-Za-z0-9_.-]) are kept; the message
 * is a fixed text.
 */
void registry_error_parse_redacted(int status, const char *body, size_t len,
				   struct registry_error *ret);
/* §7.1: only 503 with code "registration_conflict" is retried. */
bool registry_should_retry_register(int status, const char *code);

/* §7.5 reconnect backoff: 1 s, doubling, at most 30 s; 1 s again after a connect. */
#define REGISTRY_BACKOFF_INITIAL_MS 1000u
#define REGISTRY_BACKOFF_MAX_MS 30000u

struct registry_backoff {
	uint32_t next_ms;
};

void registry_backoff_init(struct registry_backoff *b);
/* The delay to sleep now; the one after is doubled (capped). */
uint32_t registry_backoff_next(struct registry_backoff *b);
void registry_backoff_reset(struct registry_backoff *b);

/*
 * The registration-conflict retry delay (§7.1), as upstream's
 * registry_recovery_retry_delay(): base = min(500 ms << min(attempt, 4),
 * 5 s), delay = base + hash(key, attempt) mod (base / 2 + 1) ms, so in
 * [base, 1.5 base]: 500-750, 1000-1500, 2000-3000, 4000-6000, then 5000-7500 ms.
 * The key is random per run so competing executors do not retry in lockstep.
 */
#define REGISTRY_CONFLICT_INITIAL_MS 500u
#define REGISTRY_CONFLICT_MAX_MS 5000u
#define REGISTRY_CONFLICT_KEY_BYTES 16

struct registry_conflict_retry {
	uint8_t key[REGISTRY_CONFLICT_KEY_BYTES];
	uint32_t attempt;
};

/* A fresh random key, attempt 0. Returns 0 or -EIO when libsodium cannot start. */
int registry_conflict_retry_init(struct registry_conflict_retry *r);
/* The delay before the next register attempt; counts the attempt (saturating). */
uint32_t registry_conflict_retry_next(struct registry_conflict_retry *r);
/* The pure function behind it. */
uint32_t registry_conflict_retry_delay_ms(const uint8_t key[REGISTRY_CONFLICT_KEY_BYTES],
					  uint32_t attempt);
