/* SPDX-License-Identifier: MIT */
/*
 * What the Noise channel exchanges outside the handshake (RELAY.md §6.3,
 * §6.4): the public key JSON that the registry carries, and the prologue
 * that binds a handshake to one registration and one routed stream.
 */
#pragma once

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "noise.h"

/* The suite tag carried in public keys (it names X25519; the hashed protocol name says 25519). */
#define CHANNEL_SUITE "Noise_hybridIK_X25519+MLKEM768_AESGCM_SHA256"

/* {"suite", "x25519_public_key", "mlkem768_public_key"} (padded standard base64). NULL on OOM. */
json_t *channel_public_key_json(const struct noise_public *pk);

/*
 * Decodes a NoiseChannelPublicKey object: exactly those three members (an
 * unknown one is refused), this suite, strict base64 of 32 and 1184 bytes.
 * Returns 0, or -EINVAL with a short reason in err (err_size bytes).
 */
int channel_public_key_parse(const json_t *v, struct noise_public *ret, char *err, size_t err_size);

/*
 * part("codex-exec-server-relay-noise/v1") || part(environment_id) ||
 * part(registration_id) || part(stream_id), part(x) = u64_be(len(x)) || x (as the
 * reference executor checks it; RELAY.md §6.4 says u32).
 * Returns a malloc'd buffer with its length in *ret_len, or NULL on OOM.
 */
uint8_t *channel_prologue(const char *environment_id, const char *registration_id,
			  const char *stream_id, size_t *ret_len);
