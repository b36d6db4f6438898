/* SPDX-License-Identifier: MIT */
/*
 * Noise_hybridIK_25519+MLKEM768_AESGCM_SHA256 (see noise.h), written from the
 * Noise specification (revision 34: CipherState, SymmetricState,
 * HandshakeState) and the KEM token rules of RELAY.md §6.1. No packaged
 * library implements the hybrid pattern (Debian 12 has no Noise library with
 * KEM tokens), so the state machine is here; every primitive comes from a
 * library: X25519, SHA-256, HMAC-SHA-256 and random bytes from libsodium,
 * AES-256-GCM from OpenSSL's EVP through the OpenSSL module (src/tls/tls-ossl.h;
 * libsodium's when asked for, see aead_sodium()), and ML-KEM-768 from mlkem768.c.
 */
#include <errno.h>
#include <pthread.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "noise.h"
#include "tls-ossl.h"

enum token {
	T_E,
	T_S,
	T_EE,
	T_ES,
	T_SE,
	T_SS,
	T_EKEM,
	T_SKEM,
	T_END,
};

static const enum token msg1_tokens[] = { T_SKEM, T_E, T_ES, T_S, T_SS, T_END };
static const enum token msg2_kem_first[] = { T_EKEM, T_SKEM, T_E, T_EE, T_SE, T_END };
static const enum token msg2_kem_last[] = { T_E, T_EE, T_SE, T_EKEM, T_SKEM, T_END };

struct noise_handshake {
	enum noise_role role;
	enum noise_msg2_order order;
	int step; /* messages done: 0, 1, 2; -1 after a failure */
	uint8_t ck[32], h[32];
	struct noise_cipher c;
	struct noise_keypair s, e;
	struct noise_public rs, re;
	bool e_given; /* noise_handshake_use_ephemeral(): e is set, the e token uses it */
	/* noise_handshake_prepare(): our next message's tokens, written ahead */
	bool prepared;
	size_t pre_len;
	uint8_t pre[NOISE_MSG1_OVERHEAD];
};

/* ---- primitives ---- */

/*
 * AES-256-GCM is OpenSSL's EVP: on this kind of CPU it seals 60 KiB records
 * about 5x faster than libsodium 1.0.18's AES-NI code (4.5 against 0.8 GB/s
 * in bench/noise-bench), and a transport direction keeps its EVP context (the
 * key schedule) for every record. UEXEC_NOISE_AEAD=sodium selects libsodium's
 * instead where the CPU has AES-NI and CLMUL (tests run both and check the
 * same known answers). Read once (pthread_once: msg2 is prepared on a worker).
 */
static bool use_sodium;
static pthread_once_t use_sodium_once = PTHREAD_ONCE_INIT;

static void aead_choose(void)
{
	const char *force = getenv("UEXEC_NOISE_AEAD");

	use_sodium = force && strcmp(force, "sodium") == 0 && sodium_init() >= 0 &&
		     crypto_aead_aes256gcm_is_available();
}

static bool aead_sodium(void)
{
	pthread_once(&use_sodium_once, aead_choose);
	return use_sodium;
}

const char *noise_aead_impl(void)
{
	return aead_sodium() ? "libsodium (AES-NI)" : "OpenSSL EVP";
}

static void nonce_of(uint64_t n, uint8_t nonce[12])
{
	memset(nonce, 0, 4);
	for (int i = 0; i < 8; i++)
		nonce[4 + i] = (uint8_t)(n >> (56 - 8 * i));
}

/*
 * The cipher's AES-GCM context, keyed once for its direction (seal or open);
 * each record then only sets its nonce. 0, -ENOMEM, -EIO, -ELIBACC.
 */
static int cipher_ctx(struct noise_cipher *c, bool seal)
{
	return c->gcm ? 0 : tls_gcm_new(c->key, seal, &c->gcm);
}

static void cipher_ctx_free(struct noise_cipher *c)
{
	tls_gcm_free(c->gcm); /* clears the key schedule */
	c->gcm = NULL;
}

/*
 * AES-256-GCM seal with c's key and record number n: out = ct || tag (len +
 * 16 bytes). keep: c's context stays for the next record (the transport);
 * the handshake's key changes after a message or two, its context does not.
 */
static int aead_seal(struct noise_cipher *c, uint64_t n, const uint8_t *ad, size_t adlen,
		     const uint8_t *pt, size_t len, uint8_t *out, bool keep)
{
	uint8_t nonce[12];
	int r;

	nonce_of(n, nonce);
	if (aead_sodium()) {
		unsigned long long clen;

		return crypto_aead_aes256gcm_encrypt(out, &clen, pt, len, ad, adlen, NULL, nonce,
						     c->key) == 0
			       ? 0
			       : -EIO;
	}
	r = cipher_ctx(c, true);
	if (r < 0)
		return r;
	r = tls_gcm_seal(c->gcm, nonce, ad, adlen, pt, len, out);
	if (!keep)
		cipher_ctx_free(c);
	return r;
}

/* AES-256-GCM open of ct || tag (len bytes, >= 16) into out (len - 16 bytes). */
static int aead_open(struct noise_cipher *c, uint64_t n, const uint8_t *ad, size_t adlen,
		     const uint8_t *ct, size_t len, uint8_t *out, bool keep)
{
	uint8_t nonce[12];
	int r;

	nonce_of(n, nonce);
	if (aead_sodium()) {
		unsigned long long mlen;

		return crypto_aead_aes256gcm_decrypt(out, &mlen, NULL, ct, len, ad, adlen, nonce,
						     c->key) == 0
			       ? 0
			       : -EBADMSG;
	}
	r = cipher_ctx(c, false);
	if (r < 0)
		return r == -EIO ? -EBADMSG : r;
	r = tls_gcm_open(c->gcm, nonce, ad, adlen, ct, len, out);
	if (!keep)
		cipher_ctx_free(c);
	if (r < 0)
		sodium_memzero(out, len - 16);
	return r < 0 ? -EBADMSG : 0;
}

static void hmac(const uint8_t key[32], const uint8_t *a, size_t alen, const uint8_t *b, size_t blen,
		 uint8_t out[32])
{
	crypto_auth_hmacsha256_state st;

	crypto_auth_hmacsha256_init(&st, key, 32);
	crypto_auth_hmacsha256_update(&st, a, alen);
	if (blen)
		crypto_auth_hmacsha256_update(&st, b, blen);
	crypto_auth_hmacsha256_final(&st, out);
	sodium_memzero(&st, sizeof(st));
}

/* Noise's HKDF with 2 or 3 outputs (o3 may be NULL). */
static void hkdf(const uint8_t ck[32], const uint8_t *ikm, size_t ikm_len, uint8_t o1[32],
		 uint8_t o2[32], uint8_t o3[32])
{
	static const uint8_t one = 1, two = 2, three = 3;
	uint8_t temp[32], t1[32], t2[32];

	hmac(ck, ikm, ikm_len, NULL, 0, temp);
	hmac(temp, &one, 1, NULL, 0, t1);
	hmac(temp, t1, 32, &two, 1, t2);
	if (o3)
		hmac(temp, t2, 32, &three, 1, o3);
	memcpy(o1, t1, 32);
	memcpy(o2, t2, 32);
	sodium_memzero(temp, sizeof(temp));
	sodium_memzero(t1, sizeof(t1));
	sodium_memzero(t2, sizeof(t2));
}

/* ---- SymmetricState ---- */

static void mix_hash(struct noise_handshake *hs, const uint8_t *data, size_t len)
{
	crypto_hash_sha256_state st;

	crypto_hash_sha256_init(&st);
	crypto_hash_sha256_update(&st, hs->h, 32);
	crypto_hash_sha256_update(&st, data, len);
	crypto_hash_sha256_final(&st, hs->h);
}

static void mix_key(struct noise_handshake *hs, const uint8_t *ikm, size_t len)
{
	uint8_t k[32];

	hkdf(hs->ck, ikm, len, hs->ck, k, NULL);
	memcpy(hs->c.key, k, 32);
	hs->c.n = 0;
	hs->c.has_key = true;
	sodium_memzero(k, sizeof(k));
}

static void mix_key_and_hash(struct noise_handshake *hs, const uint8_t *ikm, size_t len)
{
	uint8_t th[32], k[32];

	hkdf(hs->ck, ikm, len, hs->ck, th, k);
	mix_hash(hs, th, 32);
	memcpy(hs->c.key, k, 32);
	hs->c.n = 0;
	hs->c.has_key = true;
	sodium_memzero(th, sizeof(th));
	sodium_memzero(k, sizeof(k));
}

/* EncryptAndHash into out: len (+16 with a key) bytes. */
static int encrypt_and_hash(struct noise_handshake *hs, const uint8_t *pt, size_t len, uint8_t *out)
{
	int r;

	if (!hs->c.has_key) {
		memmove(out, pt, len);
		mix_hash(hs, out, len);
		return 0;
	}
	r = aead_seal(&hs->c, hs->c.n, hs->h, 32, pt, len, out, false);
	if (r < 0)
		return r;
	hs->c.n++;
	mix_hash(hs, out, len + NOISE_TAG_BYTES);
	return 0;
}

/* DecryptAndHash of in (len bytes, tag included with a key) into out. */
static int decrypt_and_hash(struct noise_handshake *hs, const uint8_t *in, size_t len, uint8_t *out)
{
	int r;

	if (!hs->c.has_key) {
		memmove(out, in, len);
		mix_hash(hs, in, len);
		return 0;
	}
	if (len < NOISE_TAG_BYTES)
		return -EBADMSG;
	r = aead_open(&hs->c, hs->c.n, hs->h, 32, in, len, out, false);
	if (r < 0)
		return r;
	hs->c.n++;
	mix_hash(hs, in, len);
	return 0;
}

static size_t sealed(const struct noise_handshake *hs, size_t len)
{
	return len + (hs->c.has_key ? NOISE_TAG_BYTES : 0);
}

/* ---- keys ---- */

int noise_keypair_generate(struct noise_keypair *kp)
{
	if (sodium_init() < 0)
		return -EIO;
	randombytes_buf(kp->dh_sk, sizeof(kp->dh_sk));
	if (crypto_scalarmult_base(kp->dh_pk, kp->dh_sk) != 0)
		return -EIO;
	return mlkem768_keypair(kp->kem_pk, kp->kem_sk) < 0 ? -EIO : 0;
}

void noise_keypair_public(const struct noise_keypair *kp, struct noise_public *ret)
{
	memcpy(ret->dh_pk, kp->dh_pk, sizeof(ret->dh_pk));
	memcpy(ret->kem_pk, kp->kem_pk, sizeof(ret->kem_pk));
}

void noise_keypair_wipe(struct noise_keypair *kp)
{
	sodium_memzero(kp, sizeof(*kp));
}

/* DH(ours, theirs) mixed into the key; an all-zero result (a low-order point) fails. */
static int mix_dh(struct noise_handshake *hs, const uint8_t sk[32], const uint8_t pk[32])
{
	uint8_t shared[32];
	int r = crypto_scalarmult(shared, sk, pk);

	if (r == 0)
		mix_key(hs, shared, sizeof(shared));
	sodium_memzero(shared, sizeof(shared));
	return r == 0 ? 0 : -EBADMSG;
}

/* ---- HandshakeState ---- */

int noise_handshake_new(struct noise_handshake **ret, enum noise_role role,
			const struct noise_keypair *s, const struct noise_public *rs,
			const uint8_t *prologue, size_t prologue_len, enum noise_msg2_order order)
{
	struct noise_handshake *hs;

	if (!s || (role == NOISE_INITIATOR) != (rs != NULL) ||
	    (order != NOISE_MSG2_KEM_FIRST && order != NOISE_MSG2_KEM_LAST) || sodium_init() < 0)
		return -EINVAL;
	/*
	 * Plain heap, wiped by noise_handshake_free(): sodium_malloc's guard
	 * pages (mmap + mprotect) cost 35 us per handshake here, as much as an
	 * X25519 operation; the identity it copies lives on the plain heap anyway
	 * (struct remote), and nothing here is kept past the handshake.
	 */
	hs = calloc(1, sizeof(*hs));
	if (!hs)
		return -ENOMEM;
	hs->role = role;
	hs->order = order;
	hs->s = *s;
	/* InitializeSymmetric: the name is longer than 32 bytes, so h = SHA-256(name). */
	crypto_hash_sha256(hs->h, (const uint8_t *)NOISE_PROTOCOL_NAME, strlen(NOISE_PROTOCOL_NAME));
	memcpy(hs->ck, hs->h, 32);
	mix_hash(hs, prologue, prologue_len);
	/* The pre-message `<- s`: the responder's static keys, DH then KEM. */
	if (role == NOISE_INITIATOR)
		hs->rs = *rs;
	{
		const struct noise_public *pre = role == NOISE_INITIATOR ? &hs->rs : NULL;
		struct noise_public mine;

		if (!pre) {
			noise_keypair_public(&hs->s, &mine);
			pre = &mine;
		}
		mix_hash(hs, pre->dh_pk, sizeof(pre->dh_pk));
		mix_hash(hs, pre->kem_pk, sizeof(pre->kem_pk));
	}
	*ret = hs;
	return 0;
}

void noise_handshake_free(struct noise_handshake *hs)
{
	if (hs) {
		sodium_memzero(hs, sizeof(*hs));
		free(hs);
	}
}

bool noise_handshake_done(const struct noise_handshake *hs)
{
	return hs->step >= 2;
}

const struct noise_public *noise_handshake_remote(const struct noise_handshake *hs)
{
	/* The responder learns it from msg1; nothing is known after a failure. */
	if (hs->step < 0 || (hs->role == NOISE_RESPONDER && hs->step < 1))
		return NULL;
	return &hs->rs;
}

static const enum token *tokens_of(const struct noise_handshake *hs)
{
	if (hs->step == 0)
		return msg1_tokens;
	return hs->order == NOISE_MSG2_KEM_FIRST ? msg2_kem_first : msg2_kem_last;
}

/* Our secret and the peer's public key for a DH token, by role. */
static int dh_token(struct noise_handshake *hs, enum token t)
{
	bool init = hs->role == NOISE_INITIATOR;

	switch (t) {
	case T_EE:
		return mix_dh(hs, hs->e.dh_sk, hs->re.dh_pk);
	case T_SS:
		return mix_dh(hs, hs->s.dh_sk, hs->rs.dh_pk);
	case T_ES: /* initiator's e with responder's s */
		return init ? mix_dh(hs, hs->e.dh_sk, hs->rs.dh_pk) : mix_dh(hs, hs->s.dh_sk, hs->re.dh_pk);
	case T_SE: /* initiator's s with responder's e */
		return init ? mix_dh(hs, hs->s.dh_sk, hs->re.dh_pk) : mix_dh(hs, hs->e.dh_sk, hs->rs.dh_pk);
	default:
		return -EINVAL;
	}
}

static int write_token(struct noise_handshake *hs, enum token t, uint8_t *out, size_t cap, size_t *pos)
{
	uint8_t ct[MLKEM768_CT_BYTES], ss[MLKEM768_SS_BYTES];
	size_t need;
	int r;

	switch (t) {
	case T_E:
		if (*pos + NOISE_DH_BYTES + MLKEM768_EK_BYTES > cap)
			return -EMSGSIZE;
		if (!hs->e_given) {
			r = noise_keypair_generate(&hs->e);
			if (r < 0)
				return r;
		}
		hs->e_given = false;
		memcpy(out + *pos, hs->e.dh_pk, NOISE_DH_BYTES);
		mix_hash(hs, hs->e.dh_pk, NOISE_DH_BYTES);
		*pos += NOISE_DH_BYTES;
		memcpy(out + *pos, hs->e.kem_pk, MLKEM768_EK_BYTES);
		mix_hash(hs, hs->e.kem_pk, MLKEM768_EK_BYTES);
		*pos += MLKEM768_EK_BYTES;
		return 0;
	case T_S:
		need = sealed(hs, NOISE_DH_BYTES);
		if (*pos + need + MLKEM768_EK_BYTES + NOISE_TAG_BYTES > cap)
			return -EMSGSIZE;
		r = encrypt_and_hash(hs, hs->s.dh_pk, NOISE_DH_BYTES, out + *pos);
		if (r < 0)
			return r;
		*pos += need;
		need = sealed(hs, MLKEM768_EK_BYTES);
		r = encrypt_and_hash(hs, hs->s.kem_pk, MLKEM768_EK_BYTES, out + *pos);
		*pos += need;
		return r;
	case T_EKEM:
	case T_SKEM:
		need = t == T_EKEM ? MLKEM768_CT_BYTES : sealed(hs, MLKEM768_CT_BYTES);
		if (*pos + need > cap)
			return -EMSGSIZE;
		r = mlkem768_encaps(ct, ss, t == T_EKEM ? hs->re.kem_pk : hs->rs.kem_pk);
		if (r < 0)
			return -EBADMSG; /* the peer's KEM key fails FIPS 203's input check */
		if (t == T_EKEM) {
			/* Sent in clear and hashed, then the secret keys the state. */
			memcpy(out + *pos, ct, MLKEM768_CT_BYTES);
			mix_hash(hs, ct, MLKEM768_CT_BYTES);
			mix_key(hs, ss, sizeof(ss));
		} else {
			r = encrypt_and_hash(hs, ct, MLKEM768_CT_BYTES, out + *pos);
			if (r == 0)
				mix_key_and_hash(hs, ss, sizeof(ss));
		}
		sodium_memzero(ss, sizeof(ss));
		*pos += need;
		return r;
	default:
		return dh_token(hs, t);
	}
}

static int read_token(struct noise_handshake *hs, enum token t, const uint8_t *in, size_t len,
		      size_t *pos)
{
	uint8_t ct[MLKEM768_CT_BYTES], ss[MLKEM768_SS_BYTES];
	size_t need;
	int r;

	switch (t) {
	case T_E:
		if (*pos + NOISE_DH_BYTES + MLKEM768_EK_BYTES > len)
			return -EBADMSG;
		memcpy(hs->re.dh_pk, in + *pos, NOISE_DH_BYTES);
		mix_hash(hs, hs->re.dh_pk, NOISE_DH_BYTES);
		*pos += NOISE_DH_BYTES;
		memcpy(hs->re.kem_pk, in + *pos, MLKEM768_EK_BYTES);
		mix_hash(hs, hs->re.kem_pk, MLKEM768_EK_BYTES);
		*pos += MLKEM768_EK_BYTES;
		return 0;
	case T_S:
		need = sealed(hs, NOISE_DH_BYTES);
		if (*pos + need + MLKEM768_EK_BYTES + NOISE_TAG_BYTES > len)
			return -EBADMSG;
		r = decrypt_and_hash(hs, in + *pos, need, hs->rs.dh_pk);
		if (r < 0)
			return r;
		*pos += need;
		need = sealed(hs, MLKEM768_EK_BYTES);
		r = decrypt_and_hash(hs, in + *pos, need, hs->rs.kem_pk);
		*pos += need;
		return r;
	case T_EKEM:
	case T_SKEM:
		need = t == T_EKEM ? MLKEM768_CT_BYTES : sealed(hs, MLKEM768_CT_BYTES);
		if (*pos + need > len)
			return -EBADMSG;
		if (t == T_EKEM) {
			memcpy(ct, in + *pos, MLKEM768_CT_BYTES);
			mix_hash(hs, ct, MLKEM768_CT_BYTES);
		} else {
			r = decrypt_and_hash(hs, in + *pos, need, ct);
			if (r < 0)
				return r;
		}
		*pos += need;
		/* Implicit rejection: a bad ciphertext gives a secret the peer does not have. */
		r = mlkem768_decaps(ss, ct, t == T_EKEM ? hs->e.kem_sk : hs->s.kem_sk);
		if (r == 0) {
			if (t == T_EKEM)
				mix_key(hs, ss, sizeof(ss));
			else
				mix_key_and_hash(hs, ss, sizeof(ss));
		}
		sodium_memzero(ss, sizeof(ss));
		return r < 0 ? -EBADMSG : 0;
	default:
		return dh_token(hs, t);
	}
}

static bool our_turn(const struct noise_handshake *hs)
{
	return (hs->step == 0 && hs->role == NOISE_INITIATOR) ||
	       (hs->step == 1 && hs->role == NOISE_RESPONDER);
}

static ssize_t fail(struct noise_handshake *hs, int r)
{
	hs->step = -1;
	sodium_memzero(hs->ck, sizeof(hs->ck));
	sodium_memzero(&hs->c, sizeof(hs->c));
	sodium_memzero(&hs->e, sizeof(hs->e));
	return r;
}

/* Our next message's tokens into out (cap bytes, the whole message's size checked); *pos after them. */
static int write_tokens(struct noise_handshake *hs, uint8_t *out, size_t cap, size_t *pos)
{
	for (const enum token *t = tokens_of(hs); *t != T_END; t++) {
		int r = write_token(hs, *t, out, cap, pos);

		if (r < 0)
			return r;
	}
	return 0;
}

int noise_handshake_use_ephemeral(struct noise_handshake *hs, struct noise_keypair *e)
{
	if (hs->step < 0 || hs->step > 1 || !our_turn(hs) || hs->prepared || hs->e_given) {
		noise_keypair_wipe(e);
		return -EPROTO;
	}
	hs->e = *e;
	hs->e_given = true;
	noise_keypair_wipe(e);
	return 0;
}

int noise_handshake_prepare(struct noise_handshake *hs)
{
	size_t pos = 0;
	int r;

	if (hs->step < 0 || hs->step > 1 || !our_turn(hs) || hs->prepared)
		return -EPROTO;
	r = write_tokens(hs, hs->pre, sizeof(hs->pre), &pos);
	if (r < 0)
		return (int)fail(hs, r);
	hs->prepared = true;
	hs->pre_len = pos;
	return 0;
}

ssize_t noise_handshake_write(struct noise_handshake *hs, const uint8_t *payload, size_t payload_len,
			      uint8_t *out, size_t cap)
{
	size_t pos = 0;
	int r;

	if (hs->step < 0 || hs->step > 1 || !our_turn(hs))
		return -EPROTO;
	if (cap > NOISE_MAX_MESSAGE)
		cap = NOISE_MAX_MESSAGE;
	/* The whole size first, so that a small buffer changes no state (and nothing wraps). */
	{
		size_t fixed = hs->step == 0 ? NOISE_MSG1_OVERHEAD : NOISE_MSG2_BYTES;

		if (payload_len > cap || cap - payload_len < fixed)
			return -EMSGSIZE;
	}
	if (hs->prepared) {
		memcpy(out, hs->pre, hs->pre_len);
		pos = hs->pre_len;
		hs->prepared = false;
		sodium_memzero(hs->pre, sizeof(hs->pre));
	} else {
		r = write_tokens(hs, out, cap, &pos);
		if (r < 0)
			return fail(hs, r);
	}
	if (pos + sealed(hs, payload_len) > cap)
		return fail(hs, -EMSGSIZE);
	r = encrypt_and_hash(hs, payload, payload_len, out + pos);
	if (r < 0)
		return fail(hs, r);
	pos += sealed(hs, payload_len);
	hs->step++;
	return (ssize_t)pos;
}

ssize_t noise_handshake_read(struct noise_handshake *hs, const uint8_t *in, size_t len,
			     uint8_t *payload, size_t cap)
{
	size_t pos = 0, plen;
	int r;

	if (hs->step < 0 || hs->step > 1 || our_turn(hs))
		return -EPROTO;
	if (len > NOISE_MAX_MESSAGE)
		return fail(hs, -EBADMSG);
	for (const enum token *t = tokens_of(hs); *t != T_END; t++) {
		r = read_token(hs, *t, in, len, &pos);
		if (r < 0)
			return fail(hs, r);
	}
	if (len - pos < (hs->c.has_key ? NOISE_TAG_BYTES : 0))
		return fail(hs, -EBADMSG);
	plen = len - pos - (hs->c.has_key ? NOISE_TAG_BYTES : 0);
	if (plen > cap)
		return fail(hs, -EMSGSIZE);
	r = decrypt_and_hash(hs, in + pos, len - pos, payload);
	if (r < 0)
		return fail(hs, r);
	hs->step++;
	return (ssize_t)plen;
}

int noise_handshake_split(struct noise_handshake *hs, struct noise_transport *ret)
{
	uint8_t k1[32], k2[32];

	if (hs->step != 2)
		return -EPROTO;
	hs->step = 3; /* once: a second split would derive keys from the wiped ck */
	hkdf(hs->ck, NULL, 0, k1, k2, NULL);
	memset(ret, 0, sizeof(*ret));
	memcpy(ret->send.key, hs->role == NOISE_INITIATOR ? k1 : k2, 32);
	memcpy(ret->recv.key, hs->role == NOISE_INITIATOR ? k2 : k1, 32);
	ret->send.has_key = ret->recv.has_key = true;
	memcpy(ret->handshake_hash, hs->h, 32);
	sodium_memzero(k1, sizeof(k1));
	sodium_memzero(k2, sizeof(k2));
	sodium_memzero(hs->ck, sizeof(hs->ck));
	sodium_memzero(&hs->c, sizeof(hs->c));
	sodium_memzero(&hs->e, sizeof(hs->e));
	return 0;
}

/* ---- transport ---- */

ssize_t noise_encrypt(struct noise_transport *t, const uint8_t *pt, size_t len, uint8_t *out,
		      size_t cap)
{
	int r;

	if (len > NOISE_MAX_MESSAGE - NOISE_TAG_BYTES || cap < NOISE_TAG_BYTES ||
	    len > cap - NOISE_TAG_BYTES)
		return -EMSGSIZE;
	if (!t->send.has_key || t->send.n >= NOISE_MAX_RECORDS)
		return -ERANGE;
	r = aead_seal(&t->send, t->send.n, NULL, 0, pt, len, out, true);
	if (r < 0)
		return r;
	t->send.n++;
	return (ssize_t)(len + NOISE_TAG_BYTES);
}

ssize_t noise_decrypt(struct noise_transport *t, const uint8_t *ct, size_t len, uint8_t *out,
		      size_t cap)
{
	int r;

	if (len < NOISE_TAG_BYTES)
		return -EBADMSG;
	if (len > NOISE_MAX_MESSAGE || len - NOISE_TAG_BYTES > cap)
		return -EMSGSIZE;
	if (!t->recv.has_key || t->recv.n >= NOISE_MAX_RECORDS)
		return -ERANGE;
	r = aead_open(&t->recv, t->recv.n, NULL, 0, ct, len, out, true);
	if (r < 0)
		return r;
	t->recv.n++;
	return (ssize_t)(len - NOISE_TAG_BYTES);
}

void noise_transport_wipe(struct noise_transport *t)
{
	cipher_ctx_free(&t->send);
	cipher_ctx_free(&t->recv);
	sodium_memzero(t, sizeof(*t));
}
