/* SPDX-License-Identifier: MIT */
/*
 * The relay's Noise channel (spec/RELAY.md §6):
 * Noise_hybridIK_25519+MLKEM768_AESGCM_SHA256, as the clatter crate's
 * hybrid handshake builds it. Every static and ephemeral key is a pair, an
 * X25519 key and an ML-KEM-768 key (DH first, then KEM):
 *
 *     <- s
 *     ...
 *     -> skem, e, es, s, ss          (msg1: harness = initiator)
 *     <- ekem, skem, e, ee, se       (msg2: executor = responder)
 *
 * The order of msg2's tokens is marked unconfirmed in RELAY.md §6.1
 * (clatter 2.1.0-rc.1 sent `e, ee, se, ekem, skem`); the reference uses the
 * order above (NOISE_MSG2_DEFAULT). The other stays a parameter for tests.
 *
 * No I/O: callers hand in and take out whole Noise messages. Every secret is
 * wiped with sodium_memzero when it is no longer needed and when an object
 * is freed.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mlkem768.h"

#define NOISE_PROTOCOL_NAME "Noise_hybridIK_25519+MLKEM768_AESGCM_SHA256"
#define NOISE_DH_BYTES 32
#define NOISE_TAG_BYTES 16
#define NOISE_MAX_MESSAGE 65535 /* clatter's MAX_MESSAGE_LEN: handshake messages and records */
/* msg1 without its payload, msg2 with its empty payload (RELAY.md §6.2). */
#define NOISE_MSG1_OVERHEAD 3568
#define NOISE_MSG2_BYTES 3424
/* Transport records per direction (u32::MAX, RELAY.md §6.6). */
#define NOISE_MAX_RECORDS 0xffffffffu

/* A static or ephemeral identity: an X25519 pair and an ML-KEM-768 pair. */
struct noise_keypair {
	uint8_t dh_pk[NOISE_DH_BYTES];
	uint8_t dh_sk[NOISE_DH_BYTES];
	uint8_t kem_pk[MLKEM768_EK_BYTES];
	uint8_t kem_sk[MLKEM768_DK_BYTES];
};

/* The public half of an identity. */
struct noise_public {
	uint8_t dh_pk[NOISE_DH_BYTES];
	uint8_t kem_pk[MLKEM768_EK_BYTES];
};

enum noise_role {
	NOISE_INITIATOR, /* the harness */
	NOISE_RESPONDER, /* the executor */
};

enum noise_msg2_order {
	NOISE_MSG2_KEM_FIRST, /* ekem, skem, e, ee, se (clatter's newest token-order rule) */
	NOISE_MSG2_KEM_LAST,  /* e, ee, se, ekem, skem (clatter 2.1.0-rc.1) */
};

/*
 * What the relay uses: KEM-first, confirmed against the reference executor
 * (codex exec-server --remote 0.169.0 reads it; KEM-last fails) and the real
 * harness (codex exec completes turns with uexec): tests/relay/README.md,
 * test_msg2_order_kem_first in tests/relay/relay_cases.py.
 */
#define NOISE_MSG2_DEFAULT NOISE_MSG2_KEM_FIRST

struct noise_handshake;
struct tls_gcm;

/*
 * One direction of the transport: its key and its record counter, and the
 * AES-GCM context keyed with it (made at the first record, freed by
 * noise_transport_wipe(): a transport is not copied once it has been used).
 */
struct noise_cipher {
	uint8_t key[32];
	uint64_t n;
	bool has_key;
	struct tls_gcm *gcm;
};

struct noise_transport {
	struct noise_cipher send, recv;
	uint8_t handshake_hash[32]; /* h after the handshake (channel binding) */
};

/* A fresh identity from the kernel's random numbers. Returns 0 or -errno. */
int noise_keypair_generate(struct noise_keypair *kp);
void noise_keypair_public(const struct noise_keypair *kp, struct noise_public *ret);
void noise_keypair_wipe(struct noise_keypair *kp);

/*
 * Starts a handshake. s is our static identity (copied). The initiator passes
 * the responder's static public key rs (pinned from the registry); the
 * responder passes NULL and learns the initiator's from msg1. The prologue
 * binds the handshake to a registration and a stream (RELAY.md §6.4).
 * Returns 0 or -ENOMEM / -EINVAL.
 */
int noise_handshake_new(struct noise_handshake **ret, enum noise_role role,
			const struct noise_keypair *s, const struct noise_public *rs,
			const uint8_t *prologue, size_t prologue_len, enum noise_msg2_order order);
void noise_handshake_free(struct noise_handshake *hs);

/*
 * Writes the next handshake message with payload into out (cap bytes).
 * Returns its length, -EMSGSIZE when it would not fit cap or
 * NOISE_MAX_MESSAGE (checked before any state changes), -EPROTO when it is
 * not our turn, or another -errno.
 */
ssize_t noise_handshake_write(struct noise_handshake *hs, const uint8_t *payload, size_t payload_len,
			      uint8_t *out, size_t cap);

/*
 * Runs the tokens of our next message ahead of its payload (everything but
 * the payload's encryption: KEM encapsulations, the ephemeral keys, the
 * DHs), keeping their bytes in hs; noise_handshake_write() then only seals
 * the payload after them. Nothing depends on the payload, so the executor
 * prepares msg2 while the registry validates msg1's key (RELAY.md §4.2: msg2
 * is written, i.e. sent, only after). Touches nothing but hs: may run on a
 * worker thread while the loop leaves hs alone. Returns 0, -EPROTO when it
 * is not our turn or the message is prepared already, or another -errno (the
 * handshake then fails as a failed write does).
 */
int noise_handshake_prepare(struct noise_handshake *hs);

/*
 * Our next message's ephemeral keypair, generated ahead (the executor keeps
 * one ready on a worker, as its generation is a fifth of msg2's CPU): moved
 * into hs and wiped in *e, so that it serves one handshake only. Returns 0,
 * or -EPROTO (e wiped all the same) when it is not our turn, or the message
 * or its ephemeral key is there already.
 */
int noise_handshake_use_ephemeral(struct noise_handshake *hs, struct noise_keypair *e);

/*
 * Reads the peer's next handshake message; its payload goes to payload (cap
 * bytes; trailing bytes are payload: the caller refuses a non-empty msg2
 * payload, RELAY.md §6.5). Returns the payload length, -EBADMSG for a message that fails to
 * authenticate or has the wrong length, -EPROTO when it is not the peer's
 * turn, -EMSGSIZE when the payload does not fit. A failed handshake cannot
 * go on: every later call returns -EPROTO.
 */
ssize_t noise_handshake_read(struct noise_handshake *hs, const uint8_t *in, size_t len,
			     uint8_t *payload, size_t cap);

/* True once both messages are through. */
bool noise_handshake_done(const struct noise_handshake *hs);
/*
 * The peer's static public key: the initiator's after msg1 (responder), or
 * the pinned one; NULL before msg1 on the responder and after a failure.
 */
const struct noise_public *noise_handshake_remote(const struct noise_handshake *hs);

/*
 * After the handshake: the two transport ciphers for our role. Wipes the
 * handshake's chaining key. Once only: returns -EPROTO before the end and
 * on a second call. Free the handshake next (its static key copy is wiped then).
 */
int noise_handshake_split(struct noise_handshake *hs, struct noise_transport *ret);

/*
 * One transport record: AES-256-GCM, nonce = 4 zero bytes || the 64-bit
 * big-endian record counter, no associated data. encrypt writes len + 16
 * bytes; decrypt writes len - 16. Both refuse records beyond
 * NOISE_MAX_MESSAGE (-EMSGSIZE) and counters at NOISE_MAX_RECORDS (-ERANGE);
 * decrypt returns -EBADMSG for a record that does not authenticate (the
 * counter does not move, so a tampered, replayed or reordered record fails).
 */
ssize_t noise_encrypt(struct noise_transport *t, const uint8_t *pt, size_t len, uint8_t *out,
		      size_t cap);
ssize_t noise_decrypt(struct noise_transport *t, const uint8_t *ct, size_t len, uint8_t *out,
		      size_t cap);
void noise_transport_wipe(struct noise_transport *t);

/* Which AES-256-GCM implementation runs: "libsodium (AES-NI)" or "OpenSSL EVP". */
const char *noise_aead_impl(void);
