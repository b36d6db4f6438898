/* SPDX-License-Identifier: MIT */
/*
 * Remote mode's primitives from libcrypto (tls-ossl.h): SHA-3/SHAKE and
 * AES-256-GCM. The algorithms are fetched once from the default provider:
 * OpenSSL 3.0's EVP_sha3_256() & co. and EVP_aes_256_gcm() are looked up
 * again (under a lock) at every init, which a handshake's ~40 Keccak calls
 * and a relay stream's records paid each time. pthread_once: the relay's
 * msg2 and the next ephemeral key are computed on a worker thread.
 */
#include <errno.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <string.h>

#include "tls-ossl.h"

enum { ALG_SHA3_256, ALG_SHA3_512, ALG_SHAKE128, ALG_SHAKE256, ALG_MD_COUNT };
static EVP_MD *mds[ALG_MD_COUNT];
static EVP_CIPHER *aes_gcm;
static pthread_once_t algs_once = PTHREAD_ONCE_INIT;

/* A NULL left here (a provider without the algorithm) makes its users fail with -EIO. */
static void algs_fetch(void)
{
	static const char *const names[ALG_MD_COUNT] = { "SHA3-256", "SHA3-512", "SHAKE128",
							 "SHAKE256" };

	for (int i = 0; i < ALG_MD_COUNT; i++)
		mds[i] = EVP_MD_fetch(NULL, names[i], NULL);
	aes_gcm = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL);
}

int tls_keccak(enum tls_keccak_kind kind, uint8_t *out, size_t outlen, const void *a, size_t alen,
	       const void *b, size_t blen)
{
	const EVP_MD *md;
	bool xof = kind == TLS_SHAKE128 || kind == TLS_SHAKE256;
	EVP_MD_CTX *ctx;
	int ok;

	pthread_once(&algs_once, algs_fetch);
	md = mds[kind == TLS_SHA3_256 ? ALG_SHA3_256
		 : kind == TLS_SHA3_512 ? ALG_SHA3_512
		 : kind == TLS_SHAKE128 ? ALG_SHAKE128
					: ALG_SHAKE256];
	if (!md)
		return -EIO;
	if (!xof && outlen != (size_t)EVP_MD_get_size(md))
		return -EINVAL;
	ctx = EVP_MD_CTX_new();
	if (!ctx)
		return -ENOMEM;
	ok = EVP_DigestInit_ex(ctx, md, NULL) && EVP_DigestUpdate(ctx, a, alen) &&
	     (blen == 0 || EVP_DigestUpdate(ctx, b, blen)) &&
	     (xof ? EVP_DigestFinalXOF(ctx, out, outlen) : EVP_DigestFinal_ex(ctx, out, NULL));
	EVP_MD_CTX_free(ctx); /* clears the Keccak state (OPENSSL_clear_free) */
	return ok ? 0 : -EIO;
}

/* struct tls_gcm is an EVP_CIPHER_CTX keyed for one direction. */
int tls_gcm_new(const uint8_t key[32], bool seal, struct tls_gcm **ret)
{
	EVP_CIPHER_CTX *ctx;

	*ret = NULL;
	pthread_once(&algs_once, algs_fetch);
	if (!aes_gcm)
		return -EIO;
	ctx = EVP_CIPHER_CTX_new();
	if (!ctx)
		return -ENOMEM;
	if ((seal ? EVP_EncryptInit_ex(ctx, aes_gcm, NULL, key, NULL)
		  : EVP_DecryptInit_ex(ctx, aes_gcm, NULL, key, NULL)) != 1) {
		EVP_CIPHER_CTX_free(ctx);
		return -EIO;
	}
	*ret = (struct tls_gcm *)ctx;
	return 0;
}

int tls_gcm_seal(struct tls_gcm *g, const uint8_t nonce[12], const uint8_t *ad, size_t adlen,
		 const uint8_t *pt, size_t len, uint8_t *out)
{
	EVP_CIPHER_CTX *ctx = (EVP_CIPHER_CTX *)g;
	int ok, la = 0, l1 = 0, l2 = 0;

	ok = EVP_EncryptInit_ex(ctx, NULL, NULL, NULL, nonce) == 1 &&
	     (adlen == 0 || EVP_EncryptUpdate(ctx, NULL, &la, ad, (int)adlen) == 1) &&
	     (len == 0 || EVP_EncryptUpdate(ctx, out, &l1, pt, (int)len) == 1) &&
	     EVP_EncryptFinal_ex(ctx, out + l1, &l2) == 1 &&
	     EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, out + len) == 1;
	return ok ? 0 : -EIO;
}

int tls_gcm_open(struct tls_gcm *g, const uint8_t nonce[12], const uint8_t *ad, size_t adlen,
		 const uint8_t *ct, size_t len, uint8_t *out)
{
	EVP_CIPHER_CTX *ctx = (EVP_CIPHER_CTX *)g;
	size_t plen = len - 16;
	uint8_t tag[16];
	int ok, la = 0, l1 = 0, l2 = 0;

	if (len < 16)
		return -EBADMSG;
	memcpy(tag, ct + plen, 16);
	ok = EVP_DecryptInit_ex(ctx, NULL, NULL, NULL, nonce) == 1 &&
	     (adlen == 0 || EVP_DecryptUpdate(ctx, NULL, &la, ad, (int)adlen) == 1) &&
	     (plen == 0 || EVP_DecryptUpdate(ctx, out, &l1, ct, (int)plen) == 1) &&
	     EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, 16, tag) == 1 &&
	     EVP_DecryptFinal_ex(ctx, out + l1, &l2) == 1;
	return ok ? 0 : -EBADMSG;
}

void tls_gcm_free(struct tls_gcm *g)
{
	EVP_CIPHER_CTX_free((EVP_CIPHER_CTX *)g); /* clears the key schedule */
}
