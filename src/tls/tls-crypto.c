/* SPDX-License-Identifier: MIT */
/* Remote mode's primitives from libcrypto (tls-ossl.h): SHA-3/SHAKE and AES-256-GCM. */
#include <errno.h>
#include <openssl/evp.h>
#include <string.h>

#include "tls-ossl.h"

int tls_keccak(enum tls_keccak_kind kind, uint8_t *out, size_t outlen, const void *a, size_t alen,
	       const void *b, size_t blen)
{
	const EVP_MD *md = kind == TLS_SHA3_256 ? EVP_sha3_256()
			 : kind == TLS_SHA3_512 ? EVP_sha3_512()
			 : kind == TLS_SHAKE128 ? EVP_shake128()
						: EVP_shake256();
	bool xof = kind == TLS_SHAKE128 || kind == TLS_SHAKE256;
	EVP_MD_CTX *ctx;
	int ok;

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

int tls_aes256gcm_seal(const uint8_t key[32], const uint8_t nonce[12], const uint8_t *ad,
		       size_t adlen, const uint8_t *pt, size_t len, uint8_t *out)
{
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
	int ok, la = 0, l1 = 0, l2 = 0;

	if (!ctx)
		return -ENOMEM;
	ok = EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, nonce) == 1 &&
	     (adlen == 0 || EVP_EncryptUpdate(ctx, NULL, &la, ad, (int)adlen) == 1) &&
	     (len == 0 || EVP_EncryptUpdate(ctx, out, &l1, pt, (int)len) == 1) &&
	     EVP_EncryptFinal_ex(ctx, out + l1, &l2) == 1 &&
	     EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, out + len) == 1;
	EVP_CIPHER_CTX_free(ctx);
	return ok ? 0 : -EIO;
}

int tls_aes256gcm_open(const uint8_t key[32], const uint8_t nonce[12], const uint8_t *ad,
		       size_t adlen, const uint8_t *ct, size_t len, uint8_t *out)
{
	EVP_CIPHER_CTX *ctx;
	size_t plen = len - 16;
	uint8_t tag[16];
	int ok, la = 0, l1 = 0, l2 = 0;

	if (len < 16)
		return -EBADMSG;
	memcpy(tag, ct + plen, 16);
	ctx = EVP_CIPHER_CTX_new();
	if (!ctx)
		return -ENOMEM;
	ok = EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, nonce) == 1 &&
	     (adlen == 0 || EVP_DecryptUpdate(ctx, NULL, &la, ad, (int)adlen) == 1) &&
	     (plen == 0 || EVP_DecryptUpdate(ctx, out, &l1, ct, (int)plen) == 1) &&
	     EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, 16, tag) == 1 &&
	     EVP_DecryptFinal_ex(ctx, out + l1, &l2) == 1;
	EVP_CIPHER_CTX_free(ctx);
	return ok ? 0 : -EBADMSG;
}
