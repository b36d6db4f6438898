/* SPDX-License-Identifier: MIT */
/*
 * The relay's Noise channel (src/remote/codec/noise.h): both roles through both
 * messages and the transport, with every message and record tampered,
 * replayed or reordered, the wrong prologue or pinned key, and AES-256-GCM
 * checked against the GCM specification's test cases 13 and 14. Run once
 * with OpenSSL's AES (a context kept per direction) and once with
 * UEXEC_NOISE_AEAD=sodium (libsodium's).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "channel.h"
#include "macro.h"
#include "noise.h"
#include "tests.h"

static const uint8_t prologue[] = "codex-exec-server-relay-noise/v1 env registration stream";

struct pair {
	struct noise_keypair is, rs;
	struct noise_public rs_pub;
	struct noise_handshake *init, *resp;
	uint8_t msg1[8192], msg2[4096];
	ssize_t len1, len2;
};

static void pair_start(struct pair *p, enum noise_msg2_order io, enum noise_msg2_order ro,
		       const uint8_t *rprologue, size_t rplen)
{
	memset(p, 0, sizeof(*p));
	ASSERT_EQ(0, noise_keypair_generate(&p->is));
	ASSERT_EQ(0, noise_keypair_generate(&p->rs));
	noise_keypair_public(&p->rs, &p->rs_pub);
	ASSERT_EQ(0, noise_handshake_new(&p->init, NOISE_INITIATOR, &p->is, &p->rs_pub, prologue,
					 sizeof(prologue), io));
	ASSERT_EQ(0, noise_handshake_new(&p->resp, NOISE_RESPONDER, &p->rs, NULL, rprologue, rplen, ro));
}

static void pair_done(struct pair *p)
{
	noise_handshake_free(p->init);
	noise_handshake_free(p->resp);
	noise_keypair_wipe(&p->is);
	noise_keypair_wipe(&p->rs);
}

static const char auth[] = "registry-token-for-this-harness";

/* msg1 written and read back by the responder; returns what the read returned. */
static ssize_t exchange1(struct pair *p)
{
	uint8_t payload[4096];
	ssize_t n;

	p->len1 = noise_handshake_write(p->init, (const uint8_t *)auth, strlen(auth), p->msg1,
					sizeof(p->msg1));
	ASSERT_EQ((ssize_t)(NOISE_MSG1_OVERHEAD + strlen(auth)), p->len1);
	n = noise_handshake_read(p->resp, p->msg1, (size_t)p->len1, payload, sizeof(payload));
	if (n >= 0) {
		ASSERT_EQ((ssize_t)strlen(auth), n);
		ASSERT_MEMEQ(auth, payload, strlen(auth));
	}
	return n;
}

static ssize_t exchange2(struct pair *p)
{
	uint8_t payload[64];

	p->len2 = noise_handshake_write(p->resp, NULL, 0, p->msg2, sizeof(p->msg2));
	ASSERT_EQ((ssize_t)NOISE_MSG2_BYTES, p->len2);
	return noise_handshake_read(p->init, p->msg2, (size_t)p->len2, payload, sizeof(payload));
}

static void check_transport(struct pair *p)
{
	struct noise_transport ti, tr;
	uint8_t ct[256], pt[256];
	ssize_t n;

	ASSERT_EQ(0, noise_handshake_split(p->init, &ti));
	ASSERT_EQ(0, noise_handshake_split(p->resp, &tr));
	ASSERT_MEMEQ(ti.handshake_hash, tr.handshake_hash, 32);
	{
		/* Once only: a second split would derive keys from the wiped chaining key. */
		struct noise_transport again;

		ASSERT_EQ(-EPROTO, noise_handshake_split(p->init, &again));
		ASSERT_EQ(-EPROTO, noise_handshake_split(p->resp, &again));
	}
	for (int i = 0; i < 3; i++) {
		n = noise_encrypt(&ti, (const uint8_t *)"ping", 4, ct, sizeof(ct));
		ASSERT_EQ(20, n);
		ASSERT_EQ(4, noise_decrypt(&tr, ct, (size_t)n, pt, sizeof(pt)));
		ASSERT_MEMEQ("ping", pt, 4);
		n = noise_encrypt(&tr, (const uint8_t *)"pong!", 5, ct, sizeof(ct));
		ASSERT_EQ(21, n);
		ASSERT_EQ(5, noise_decrypt(&ti, ct, (size_t)n, pt, sizeof(pt)));
		ASSERT_MEMEQ("pong!", pt, 5);
	}
	noise_transport_wipe(&ti);
	noise_transport_wipe(&tr);
}

TEST(handshake_kem_first)
{
	struct pair p;

	pair_start(&p, NOISE_MSG2_KEM_FIRST, NOISE_MSG2_KEM_FIRST, prologue, sizeof(prologue));
	ASSERT_TRUE(noise_handshake_remote(p.resp) == NULL);
	ASSERT_EQ((ssize_t)strlen(auth), exchange1(&p));
	/* The responder learnt the initiator's static key from msg1. */
	ASSERT_MEMEQ(p.is.dh_pk, noise_handshake_remote(p.resp)->dh_pk, 32);
	ASSERT_MEMEQ(p.is.kem_pk, noise_handshake_remote(p.resp)->kem_pk, MLKEM768_EK_BYTES);
	ASSERT_EQ(0, exchange2(&p));
	ASSERT_TRUE(noise_handshake_done(p.init) && noise_handshake_done(p.resp));
	check_transport(&p);
	pair_done(&p);
}

/*
 * msg2 prepared ahead (the executor runs its tokens while the registry
 * validates): the same message as written in one go, for an empty payload
 * and for the 401 payload alike; not before msg1, not twice, not for the
 * initiator's turn.
 */
TEST(handshake_prepared_msg2)
{
	static const char rejected[] = "codex-registry-authentication-rejected/v1";
	uint8_t payload[64];
	struct pair p;

	for (int order = 0; order < 2; order++) {
		enum noise_msg2_order o = order ? NOISE_MSG2_KEM_LAST : NOISE_MSG2_KEM_FIRST;

		pair_start(&p, o, o, prologue, sizeof(prologue));
		ASSERT_EQ(-EPROTO, noise_handshake_prepare(p.resp)); /* msg1 not read yet */
		ASSERT_EQ((ssize_t)strlen(auth), exchange1(&p));
		ASSERT_EQ(-EPROTO, noise_handshake_prepare(p.init)); /* not its turn */
		ASSERT_EQ(0, noise_handshake_prepare(p.resp));
		ASSERT_EQ(-EPROTO, noise_handshake_prepare(p.resp)); /* once */
		ASSERT_EQ(0, exchange2(&p));
		check_transport(&p);
		pair_done(&p);
	}
	/* The payload sealed after prepared tokens reads back. */
	pair_start(&p, NOISE_MSG2_DEFAULT, NOISE_MSG2_DEFAULT, prologue, sizeof(prologue));
	ASSERT_EQ((ssize_t)strlen(auth), exchange1(&p));
	ASSERT_EQ(0, noise_handshake_prepare(p.resp));
	p.len2 = noise_handshake_write(p.resp, (const uint8_t *)rejected, strlen(rejected), p.msg2,
				       sizeof(p.msg2));
	ASSERT_EQ((ssize_t)(NOISE_MSG2_BYTES + strlen(rejected)), p.len2);
	ASSERT_EQ((ssize_t)strlen(rejected),
		  noise_handshake_read(p.init, p.msg2, (size_t)p.len2, payload, sizeof(payload)));
	ASSERT_MEMEQ(rejected, payload, strlen(rejected));
	pair_done(&p);
}

/*
 * An ephemeral keypair generated ahead: msg2 carries its public keys (after
 * ekem and skem), the caller's copy is wiped, it serves once, and the
 * handshake completes as with one generated in place.
 */
TEST(handshake_given_ephemeral)
{
	static const uint8_t zero[sizeof(struct noise_keypair)];
	struct noise_keypair e, copy;
	struct pair p;
	size_t at = MLKEM768_CT_BYTES + MLKEM768_CT_BYTES + NOISE_TAG_BYTES;

	pair_start(&p, NOISE_MSG2_KEM_FIRST, NOISE_MSG2_KEM_FIRST, prologue, sizeof(prologue));
	ASSERT_EQ((ssize_t)strlen(auth), exchange1(&p));
	ASSERT_EQ(0, noise_keypair_generate(&e));
	copy = e;
	ASSERT_EQ(0, noise_handshake_use_ephemeral(p.resp, &e));
	ASSERT_MEMEQ(zero, &e, sizeof(e));
	e = copy;
	ASSERT_EQ(-EPROTO, noise_handshake_use_ephemeral(p.resp, &e)); /* once */
	ASSERT_MEMEQ(zero, &e, sizeof(e));
	ASSERT_EQ(0, noise_handshake_prepare(p.resp));
	ASSERT_EQ(0, exchange2(&p));
	ASSERT_MEMEQ(copy.dh_pk, p.msg2 + at, NOISE_DH_BYTES);
	ASSERT_MEMEQ(copy.kem_pk, p.msg2 + at + NOISE_DH_BYTES, MLKEM768_EK_BYTES);
	check_transport(&p);
	noise_keypair_wipe(&copy);
	pair_done(&p);
}

TEST(handshake_kem_last)
{
	struct pair p;

	pair_start(&p, NOISE_MSG2_KEM_LAST, NOISE_MSG2_KEM_LAST, prologue, sizeof(prologue));
	ASSERT_EQ((ssize_t)strlen(auth), exchange1(&p));
	ASSERT_EQ(0, exchange2(&p));
	check_transport(&p);
	pair_done(&p);
}

TEST(msg2_token_order_must_agree)
{
	struct pair p;

	pair_start(&p, NOISE_MSG2_KEM_FIRST, NOISE_MSG2_KEM_LAST, prologue, sizeof(prologue));
	ASSERT_EQ((ssize_t)strlen(auth), exchange1(&p));
	ASSERT_EQ(-EBADMSG, exchange2(&p));
	pair_done(&p);
}

TEST(wrong_prologue_fails_msg1)
{
	static const uint8_t other[] = "another registration";
	struct pair p;

	pair_start(&p, NOISE_MSG2_KEM_FIRST, NOISE_MSG2_KEM_FIRST, other, sizeof(other));
	ASSERT_EQ(-EBADMSG, exchange1(&p));
	/* A failed handshake stays failed. */
	ASSERT_EQ(-EPROTO, noise_handshake_write(p.resp, NULL, 0, p.msg2, sizeof(p.msg2)));
	pair_done(&p);
}

TEST(wrong_pinned_key_fails_msg1)
{
	struct noise_keypair other;
	struct noise_public other_pub;
	struct pair p;
	uint8_t payload[4096];
	ssize_t n;

	pair_start(&p, NOISE_MSG2_KEM_FIRST, NOISE_MSG2_KEM_FIRST, prologue, sizeof(prologue));
	noise_handshake_free(p.init);
	ASSERT_EQ(0, noise_keypair_generate(&other));
	noise_keypair_public(&other, &other_pub);
	ASSERT_EQ(0, noise_handshake_new(&p.init, NOISE_INITIATOR, &p.is, &other_pub, prologue,
					 sizeof(prologue), NOISE_MSG2_KEM_FIRST));
	n = noise_handshake_write(p.init, (const uint8_t *)auth, strlen(auth), p.msg1, sizeof(p.msg1));
	ASSERT_TRUE(n > 0);
	ASSERT_EQ(-EBADMSG, noise_handshake_read(p.resp, p.msg1, (size_t)n, payload, sizeof(payload)));
	noise_keypair_wipe(&other);
	pair_done(&p);
}

/* Offsets inside each region of msg1: skem ct, e (DH, KEM), s (DH, KEM), payload. */
static const size_t msg1_spots[] = { 0, 1087, 1088, 1119, 1120, 2303, 2304, 2351, 2352, 3551,
				     3552, 3568, 3568 + sizeof(auth) - 2 };

TEST(tampered_msg1_fails)
{
	for (size_t i = 0; i < ELEMENTSOF(msg1_spots); i++) {
		struct pair p;
		uint8_t payload[4096];

		pair_start(&p, NOISE_MSG2_KEM_FIRST, NOISE_MSG2_KEM_FIRST, prologue, sizeof(prologue));
		p.len1 = noise_handshake_write(p.init, (const uint8_t *)auth, strlen(auth), p.msg1,
					       sizeof(p.msg1));
		ASSERT_TRUE(msg1_spots[i] < (size_t)p.len1);
		p.msg1[msg1_spots[i]] ^= 0x01;
		if (noise_handshake_read(p.resp, p.msg1, (size_t)p.len1, payload, sizeof(payload)) !=
		    -EBADMSG)
			tests_fail(__FILE__, __LINE__, "msg1 with byte %zu flipped was accepted",
				   msg1_spots[i]);
		pair_done(&p);
	}
}

TEST(tampered_msg2_fails)
{
	/* ekem ct (clear), skem ct (sealed), e DH, e KEM, payload tag. */
	static const size_t spots[] = { 0, 1087, 1088, 2191, 2192, 2223, 2224, 3407, 3408, 3423 };

	for (size_t i = 0; i < ELEMENTSOF(spots); i++) {
		struct pair p;
		uint8_t payload[64];

		pair_start(&p, NOISE_MSG2_KEM_FIRST, NOISE_MSG2_KEM_FIRST, prologue, sizeof(prologue));
		ASSERT_TRUE(exchange1(&p) >= 0);
		p.len2 = noise_handshake_write(p.resp, NULL, 0, p.msg2, sizeof(p.msg2));
		p.msg2[spots[i]] ^= 0x80;
		if (noise_handshake_read(p.init, p.msg2, (size_t)p.len2, payload, sizeof(payload)) !=
		    -EBADMSG)
			tests_fail(__FILE__, __LINE__, "msg2 with byte %zu flipped was accepted", spots[i]);
		pair_done(&p);
	}
}

TEST(truncated_and_extended_messages_fail)
{
	struct pair p;
	uint8_t payload[4096];

	pair_start(&p, NOISE_MSG2_KEM_FIRST, NOISE_MSG2_KEM_FIRST, prologue, sizeof(prologue));
	p.len1 = noise_handshake_write(p.init, NULL, 0, p.msg1, sizeof(p.msg1));
	ASSERT_EQ((ssize_t)NOISE_MSG1_OVERHEAD, p.len1);
	ASSERT_EQ(-EBADMSG, noise_handshake_read(p.resp, p.msg1, (size_t)p.len1 - 1, payload,
						 sizeof(payload)));
	pair_done(&p);
	pair_start(&p, NOISE_MSG2_KEM_FIRST, NOISE_MSG2_KEM_FIRST, prologue, sizeof(prologue));
	ASSERT_TRUE(exchange1(&p) >= 0);
	p.len2 = noise_handshake_write(p.resp, NULL, 0, p.msg2, sizeof(p.msg2));
	p.msg2[p.len2] = 0;
	ASSERT_EQ(-EBADMSG, noise_handshake_read(p.init, p.msg2, (size_t)p.len2 + 1, payload,
						 sizeof(payload)));
	pair_done(&p);
}

TEST(turns_are_enforced)
{
	struct pair p;
	uint8_t buf[8192];

	pair_start(&p, NOISE_MSG2_KEM_FIRST, NOISE_MSG2_KEM_FIRST, prologue, sizeof(prologue));
	ASSERT_EQ(-EPROTO, noise_handshake_write(p.resp, NULL, 0, buf, sizeof(buf)));
	ASSERT_EQ(-EPROTO, noise_handshake_read(p.init, buf, 100, buf, sizeof(buf)));
	ASSERT_TRUE(exchange1(&p) >= 0);
	/* A second msg1 on the same handshake is not accepted. */
	ASSERT_EQ(-EPROTO, noise_handshake_read(p.resp, p.msg1, (size_t)p.len1, buf, sizeof(buf)));
	ASSERT_EQ(0, exchange2(&p));
	ASSERT_EQ(-EPROTO, noise_handshake_write(p.init, NULL, 0, buf, sizeof(buf)));
	pair_done(&p);
}

TEST(handshake_payload_too_large)
{
	struct pair p;
	static uint8_t big[NOISE_MAX_MESSAGE], out[NOISE_MAX_MESSAGE];

	pair_start(&p, NOISE_MSG2_KEM_FIRST, NOISE_MSG2_KEM_FIRST, prologue, sizeof(prologue));
	ASSERT_EQ(-EMSGSIZE, noise_handshake_write(p.init, big, NOISE_MAX_MESSAGE - NOISE_MSG1_OVERHEAD + 1,
						   out, sizeof(out)));
	ASSERT_EQ(-EMSGSIZE, noise_handshake_write(p.init, big, SIZE_MAX - 8, out, sizeof(out)));
	/* Too small a buffer changes nothing: the same handshake still completes. */
	ASSERT_EQ(-EMSGSIZE, noise_handshake_write(p.init, NULL, 0, out, NOISE_MSG1_OVERHEAD - 1));
	ASSERT_EQ((ssize_t)strlen(auth), exchange1(&p));
	ASSERT_EQ(0, exchange2(&p));
	pair_done(&p);
}

static void handshake_to_transport(struct noise_transport *ti, struct noise_transport *tr)
{
	struct pair p;

	pair_start(&p, NOISE_MSG2_KEM_FIRST, NOISE_MSG2_KEM_FIRST, prologue, sizeof(prologue));
	ASSERT_TRUE(exchange1(&p) >= 0);
	ASSERT_EQ(0, exchange2(&p));
	ASSERT_EQ(0, noise_handshake_split(p.init, ti));
	ASSERT_EQ(0, noise_handshake_split(p.resp, tr));
	pair_done(&p);
}

TEST(records_tampered_replayed_reordered)
{
	struct noise_transport ti, tr;
	uint8_t r1[64], r2[64], pt[64];
	ssize_t n1, n2;

	handshake_to_transport(&ti, &tr);
	n1 = noise_encrypt(&ti, (const uint8_t *)"first", 5, r1, sizeof(r1));
	n2 = noise_encrypt(&ti, (const uint8_t *)"second", 6, r2, sizeof(r2));
	/* Reordered: record 2 first does not authenticate with counter 0. */
	ASSERT_EQ(-EBADMSG, noise_decrypt(&tr, r2, (size_t)n2, pt, sizeof(pt)));
	/* Tampered. */
	r1[2] ^= 1;
	ASSERT_EQ(-EBADMSG, noise_decrypt(&tr, r1, (size_t)n1, pt, sizeof(pt)));
	r1[2] ^= 1;
	ASSERT_EQ(5, noise_decrypt(&tr, r1, (size_t)n1, pt, sizeof(pt)));
	/* Replayed. */
	ASSERT_EQ(-EBADMSG, noise_decrypt(&tr, r1, (size_t)n1, pt, sizeof(pt)));
	ASSERT_EQ(6, noise_decrypt(&tr, r2, (size_t)n2, pt, sizeof(pt)));
	/* The other direction's key does not open this one's records. */
	n1 = noise_encrypt(&ti, (const uint8_t *)"third", 5, r1, sizeof(r1));
	ASSERT_EQ(-EBADMSG, noise_decrypt(&ti, r1, (size_t)n1, pt, sizeof(pt)));
	/* Shorter than a tag. */
	ASSERT_EQ(-EBADMSG, noise_decrypt(&tr, r1, 15, pt, sizeof(pt)));
	noise_transport_wipe(&ti);
	noise_transport_wipe(&tr);
}

TEST(record_limits)
{
	struct noise_transport ti, tr;
	static uint8_t pt[NOISE_MAX_MESSAGE + 16], ct[NOISE_MAX_MESSAGE + 32];

	handshake_to_transport(&ti, &tr);
	ASSERT_EQ((ssize_t)NOISE_MAX_MESSAGE,
		  noise_encrypt(&ti, pt, NOISE_MAX_MESSAGE - 16, ct, sizeof(ct)));
	ASSERT_EQ((ssize_t)NOISE_MAX_MESSAGE - 16, noise_decrypt(&tr, ct, NOISE_MAX_MESSAGE, pt, sizeof(pt)));
	ASSERT_EQ(-EMSGSIZE, noise_encrypt(&ti, pt, NOISE_MAX_MESSAGE - 15, ct, sizeof(ct)));
	ASSERT_EQ(-EMSGSIZE, noise_encrypt(&ti, pt, SIZE_MAX - 8, ct, sizeof(ct)));
	ASSERT_EQ(-EMSGSIZE, noise_encrypt(&ti, pt, 1, ct, 16));
	ASSERT_EQ(-EMSGSIZE, noise_decrypt(&tr, ct, NOISE_MAX_MESSAGE + 1, pt, sizeof(pt)));
	/* The counters stop at u32::MAX records per direction. */
	ti.send.n = NOISE_MAX_RECORDS;
	ASSERT_EQ(-ERANGE, noise_encrypt(&ti, pt, 1, ct, sizeof(ct)));
	tr.recv.n = NOISE_MAX_RECORDS;
	ASSERT_EQ(-ERANGE, noise_decrypt(&tr, ct, 17, pt, sizeof(pt)));
	ti.send.n = NOISE_MAX_RECORDS - 1;
	ASSERT_EQ(17, noise_encrypt(&ti, pt, 1, ct, sizeof(ct)));
	noise_transport_wipe(&ti);
	noise_transport_wipe(&tr);
}

static void unhex(const char *h, uint8_t *out)
{
	for (size_t i = 0; h[2 * i]; i++) {
		unsigned v;

		sscanf(h + 2 * i, "%2x", &v);
		out[i] = (uint8_t)v;
	}
}

TEST(aes256gcm_known_answers)
{
	/* GCM specification (McGrew/Viega), test cases 13 and 14: K = 0^256, IV = 0^96. */
	struct noise_transport t;
	uint8_t ct[32], want[32], zero[16] = { 0 };

	memset(&t, 0, sizeof(t));
	t.send.has_key = true; /* key 0, counter 0: nonce 0^96 */
	ASSERT_EQ(16, noise_encrypt(&t, zero, 0, ct, sizeof(ct)));
	unhex("530f8afbc74536b9a963b4f1c4cb738b", want);
	ASSERT_MEMEQ(want, ct, 16);
	t.send.n = 0;
	ASSERT_EQ(32, noise_encrypt(&t, zero, 16, ct, sizeof(ct)));
	unhex("cea7403d4d606b6e074ec5d3baf39d18d0d1c8a799996bf0265b98b5d48ab919", want);
	ASSERT_MEMEQ(want, ct, 32);
	/* The direction's kept context opens what it sealed (record 0 again). */
	t.recv.has_key = true;
	ASSERT_EQ(16, noise_decrypt(&t, ct, 32, zero, sizeof(zero)));
	ASSERT_EQ(1u, t.recv.n);
	printf("# AES-256-GCM: %s\n", noise_aead_impl());
	noise_transport_wipe(&t);
}

TEST(public_key_json_round_trip)
{
	struct noise_keypair kp;
	struct noise_public pub, back;
	char err[128];
	json_t *j;

	ASSERT_EQ(0, noise_keypair_generate(&kp));
	noise_keypair_public(&kp, &pub);
	j = channel_public_key_json(&pub);
	ASSERT_TRUE(j != NULL);
	ASSERT_STREQ(CHANNEL_SUITE, json_string_value(json_object_get(j, "suite")));
	/* Padded standard base64: 44 characters for 32 bytes, 1580 for 1184. */
	ASSERT_EQ(44, (int)json_string_length(json_object_get(j, "x25519_public_key")));
	ASSERT_EQ(1580, (int)json_string_length(json_object_get(j, "mlkem768_public_key")));
	ASSERT_EQ(0, channel_public_key_parse(j, &back, err, sizeof(err)));
	ASSERT_MEMEQ(&pub, &back, sizeof(pub));
	json_decref(j);
	noise_keypair_wipe(&kp);
}

static int parse_mutated(const char *member, json_t *value, char *err, size_t n)
{
	struct noise_keypair kp;
	struct noise_public pub;
	json_t *j;
	int r;

	ASSERT_EQ(0, noise_keypair_generate(&kp));
	noise_keypair_public(&kp, &pub);
	j = channel_public_key_json(&pub);
	if (value)
		json_object_set_new(j, member, value);
	else
		json_object_del(j, member);
	r = channel_public_key_parse(j, &pub, err, n);
	json_decref(j);
	noise_keypair_wipe(&kp);
	return r;
}

TEST(public_key_json_rejections)
{
	char err[128];

	ASSERT_EQ(-EINVAL, parse_mutated("suite", json_string("Noise_IK_25519_AESGCM_SHA256"), err,
					  sizeof(err)));
	ASSERT_EQ(-EINVAL, parse_mutated("suite", NULL, err, sizeof(err)));
	ASSERT_EQ(-EINVAL, parse_mutated("extra", json_true(), err, sizeof(err)));
	ASSERT_STREQ("unknown field in public key", err);
	ASSERT_EQ(-EINVAL, parse_mutated("x25519_public_key", json_string("AAAA"), err, sizeof(err)));
	ASSERT_EQ(-EINVAL, parse_mutated("x25519_public_key", json_string("not base64!"), err,
					  sizeof(err)));
	ASSERT_EQ(-EINVAL, parse_mutated("x25519_public_key", json_integer(1), err, sizeof(err)));
	ASSERT_EQ(-EINVAL, parse_mutated("mlkem768_public_key", NULL, err, sizeof(err)));
	/* Unpadded base64 of 32 bytes is refused (standard, padded). */
	ASSERT_EQ(-EINVAL, parse_mutated("x25519_public_key",
					  json_string("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"), err,
					  sizeof(err)));
	ASSERT_EQ(0, parse_mutated("x25519_public_key",
				   json_string("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="), err,
				   sizeof(err)));
}

TEST(prologue_bytes)
{
	/* u64 lengths: what the reference executor accepts (RELAY.md §6.4 says u32). */
	static const uint8_t want[] = "\x00\x00\x00\x00\x00\x00\x00\x20" "codex-exec-server-relay-noise/v1"
				      "\x00\x00\x00\x00\x00\x00\x00\x03" "env"
				      "\x00\x00\x00\x00\x00\x00\x00\x00"
				      "\x00\x00\x00\x00\x00\x00\x00\x02" "s1";
	size_t n;
	uint8_t *p = channel_prologue("env", "", "s1", &n);

	ASSERT_TRUE(p != NULL);
	ASSERT_EQ(sizeof(want) - 1, n);
	ASSERT_MEMEQ(want, p, n);
	free(p);
}

TEST_MAIN()
