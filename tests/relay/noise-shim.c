/* SPDX-License-Identifier: MIT */
/*
 * A flat C API over src/remote/codec's Noise channel for Python's ctypes
 * (tests/relay/harness.py): Python's standard library has no X25519,
 * ML-KEM-768 or AES-256-GCM, so the test harness borrows the project's own.
 * Test code only: nothing here is linked into uexec. Every object is an
 * opaque heap pointer; sizes go in and out as plain integers. Returns follow
 * noise.h (a length, or -errno).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <jansson.h>

#include "channel.h"
#include "noise.h"

#define SHIM_EXPORT __attribute__((visibility("default")))

/* ctypes' view of the module (no header: only harness.py calls these). */
SHIM_EXPORT int noise_shim_dh_bytes(void);
SHIM_EXPORT int noise_shim_kem_bytes(void);
SHIM_EXPORT struct noise_keypair *noise_shim_keypair_new(void);
SHIM_EXPORT void noise_shim_keypair_free(struct noise_keypair *kp);
SHIM_EXPORT void noise_shim_keypair_public(const struct noise_keypair *kp, uint8_t *dh,
					   uint8_t *kem);
SHIM_EXPORT ssize_t noise_shim_keypair_json(const struct noise_keypair *kp, char *out, size_t cap);
SHIM_EXPORT struct noise_handshake *
noise_shim_handshake_new(int initiator, const struct noise_keypair *s, const uint8_t *rs_dh,
			 const uint8_t *rs_kem, const uint8_t *prologue, size_t prologue_len,
			 int order);
SHIM_EXPORT void noise_shim_handshake_free(struct noise_handshake *hs);
SHIM_EXPORT ssize_t noise_shim_handshake_write(struct noise_handshake *hs, const uint8_t *payload,
					       size_t payload_len, uint8_t *out, size_t cap);
SHIM_EXPORT ssize_t noise_shim_handshake_read(struct noise_handshake *hs, const uint8_t *in,
					      size_t len, uint8_t *payload, size_t cap);
SHIM_EXPORT int noise_shim_handshake_done(const struct noise_handshake *hs);
SHIM_EXPORT int noise_shim_handshake_remote(const struct noise_handshake *hs, uint8_t *dh,
					    uint8_t *kem);
SHIM_EXPORT struct noise_transport *noise_shim_handshake_split(struct noise_handshake *hs);
SHIM_EXPORT void noise_shim_transport_free(struct noise_transport *t);
SHIM_EXPORT ssize_t noise_shim_encrypt(struct noise_transport *t, const uint8_t *pt, size_t len,
				       uint8_t *out, size_t cap);
SHIM_EXPORT ssize_t noise_shim_decrypt(struct noise_transport *t, const uint8_t *ct, size_t len,
				       uint8_t *out, size_t cap);
SHIM_EXPORT uint64_t noise_shim_send_counter(const struct noise_transport *t);
SHIM_EXPORT uint64_t noise_shim_recv_counter(const struct noise_transport *t);
SHIM_EXPORT void noise_shim_set_send_counter(struct noise_transport *t, uint64_t n);

SHIM_EXPORT int noise_shim_dh_bytes(void)
{
	return NOISE_DH_BYTES;
}

SHIM_EXPORT int noise_shim_kem_bytes(void)
{
	return MLKEM768_EK_BYTES;
}

/* A fresh static identity, or NULL. */
SHIM_EXPORT struct noise_keypair *noise_shim_keypair_new(void)
{
	struct noise_keypair *kp = calloc(1, sizeof(*kp));

	if (!kp)
		return NULL;
	if (noise_keypair_generate(kp) < 0) {
		free(kp);
		return NULL;
	}
	return kp;
}

SHIM_EXPORT void noise_shim_keypair_free(struct noise_keypair *kp)
{
	if (!kp)
		return;
	noise_keypair_wipe(kp);
	free(kp);
}

/* The public halves: dh (32 bytes) and kem (1184 bytes). */
SHIM_EXPORT void noise_shim_keypair_public(const struct noise_keypair *kp, uint8_t *dh,
					   uint8_t *kem)
{
	memcpy(dh, kp->dh_pk, NOISE_DH_BYTES);
	memcpy(kem, kp->kem_pk, MLKEM768_EK_BYTES);
}

/* The public key JSON (RELAY.md §6.3) into out (cap bytes, NUL-terminated); its length or -errno. */
SHIM_EXPORT ssize_t noise_shim_keypair_json(const struct noise_keypair *kp, char *out, size_t cap)
{
	struct noise_public pub;
	json_t *v;
	char *s;
	size_t n;

	noise_keypair_public(kp, &pub);
	v = channel_public_key_json(&pub);
	if (!v)
		return -ENOMEM;
	s = json_dumps(v, JSON_COMPACT);
	json_decref(v);
	if (!s)
		return -ENOMEM;
	n = strlen(s);
	if (n + 1 > cap) {
		free(s);
		return -ENOBUFS;
	}
	memcpy(out, s, n + 1);
	free(s);
	return (ssize_t)n;
}

/*
 * A handshake. initiator: 1 for the harness (rs_dh/rs_kem: the pinned
 * executor key), 0 for a responder (rs_* NULL). order: NOISE_MSG2_KEM_FIRST
 * (0) or NOISE_MSG2_KEM_LAST (1). NULL on failure.
 */
SHIM_EXPORT struct noise_handshake *
noise_shim_handshake_new(int initiator, const struct noise_keypair *s, const uint8_t *rs_dh,
			 const uint8_t *rs_kem, const uint8_t *prologue, size_t prologue_len,
			 int order)
{
	struct noise_handshake *hs = NULL;
	struct noise_public rs;

	if (initiator) {
		if (!rs_dh || !rs_kem)
			return NULL;
		memcpy(rs.dh_pk, rs_dh, NOISE_DH_BYTES);
		memcpy(rs.kem_pk, rs_kem, MLKEM768_EK_BYTES);
	}
	if (noise_handshake_new(&hs, initiator ? NOISE_INITIATOR : NOISE_RESPONDER, s,
				initiator ? &rs : NULL, prologue, prologue_len,
				order ? NOISE_MSG2_KEM_LAST : NOISE_MSG2_KEM_FIRST) < 0)
		return NULL;
	return hs;
}

SHIM_EXPORT void noise_shim_handshake_free(struct noise_handshake *hs)
{
	noise_handshake_free(hs);
}

SHIM_EXPORT ssize_t noise_shim_handshake_write(struct noise_handshake *hs, const uint8_t *payload,
					       size_t payload_len, uint8_t *out, size_t cap)
{
	return noise_handshake_write(hs, payload, payload_len, out, cap);
}

SHIM_EXPORT ssize_t noise_shim_handshake_read(struct noise_handshake *hs, const uint8_t *in,
					      size_t len, uint8_t *payload, size_t cap)
{
	return noise_handshake_read(hs, in, len, payload, cap);
}

SHIM_EXPORT int noise_shim_handshake_done(const struct noise_handshake *hs)
{
	return noise_handshake_done(hs);
}

/* The peer's static public key (after msg1 on a responder); 0, or -ENOENT. */
SHIM_EXPORT int noise_shim_handshake_remote(const struct noise_handshake *hs, uint8_t *dh,
					    uint8_t *kem)
{
	const struct noise_public *p = noise_handshake_remote(hs);

	if (!p)
		return -ENOENT;
	memcpy(dh, p->dh_pk, NOISE_DH_BYTES);
	memcpy(kem, p->kem_pk, MLKEM768_EK_BYTES);
	return 0;
}

/* The transport after both messages; NULL before (or on a second call). */
SHIM_EXPORT struct noise_transport *noise_shim_handshake_split(struct noise_handshake *hs)
{
	struct noise_transport *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	if (noise_handshake_split(hs, t) < 0) {
		free(t);
		return NULL;
	}
	return t;
}

SHIM_EXPORT void noise_shim_transport_free(struct noise_transport *t)
{
	if (!t)
		return;
	noise_transport_wipe(t);
	free(t);
}

SHIM_EXPORT ssize_t noise_shim_encrypt(struct noise_transport *t, const uint8_t *pt, size_t len,
				       uint8_t *out, size_t cap)
{
	return noise_encrypt(t, pt, len, out, cap);
}

SHIM_EXPORT ssize_t noise_shim_decrypt(struct noise_transport *t, const uint8_t *ct, size_t len,
				       uint8_t *out, size_t cap)
{
	return noise_decrypt(t, ct, len, out, cap);
}

/* The record counters (the next nonce of each direction). */
SHIM_EXPORT uint64_t noise_shim_send_counter(const struct noise_transport *t)
{
	return t->send.n;
}

SHIM_EXPORT uint64_t noise_shim_recv_counter(const struct noise_transport *t)
{
	return t->recv.n;
}

/* For negative tests: move the send counter (a nonce reused or skipped). */
SHIM_EXPORT void noise_shim_set_send_counter(struct noise_transport *t, uint64_t n)
{
	t->send.n = n;
}
