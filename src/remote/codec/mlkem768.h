/* SPDX-License-Identifier: MIT */
/*
 * ML-KEM-768 (FIPS 203, August 2024): the KEM half of the relay's
 * Noise_hybridIK_25519+MLKEM768_AESGCM_SHA256 handshake (spec/RELAY.md §6).
 *
 * Every function returns 0 or a negative errno:
 *   -EINVAL  an input check of FIPS 203 §7.2 (encapsulation key modulus check)
 *            or §7.3 (decapsulation key hash check) failed;
 *   -ENOMEM, -EIO  libcrypto failed to hash, or libsodium to initialise.
 * On failure the secret outputs (dk, ss) are zeroed. The byte arrays have the
 * fixed sizes below, which is FIPS 203's "type check" on every input.
 */
#pragma once

#include <stdint.h>

#define MLKEM768_EK_BYTES 1184 /* encapsulation (public) key */
#define MLKEM768_DK_BYTES 2400 /* decapsulation (secret) key */
#define MLKEM768_CT_BYTES 1088 /* ciphertext */
#define MLKEM768_SS_BYTES 32   /* shared secret */
#define MLKEM768_SEED_BYTES 32 /* d, z and m */

/* ML-KEM.KeyGen_internal (Algorithm 16) from the seeds d and z. */
int mlkem768_keypair_derand(uint8_t ek[MLKEM768_EK_BYTES], uint8_t dk[MLKEM768_DK_BYTES],
			    const uint8_t d[MLKEM768_SEED_BYTES], const uint8_t z[MLKEM768_SEED_BYTES])
	__attribute__((warn_unused_result));

/* ML-KEM.KeyGen (Algorithm 19): d and z from libsodium's randombytes_buf. */
int mlkem768_keypair(uint8_t ek[MLKEM768_EK_BYTES], uint8_t dk[MLKEM768_DK_BYTES])
	__attribute__((warn_unused_result));

/* ML-KEM.Encaps_internal (Algorithm 17) with the message m, after the modulus
 * check of §7.2 (-EINVAL). */
int mlkem768_encaps_derand(uint8_t ct[MLKEM768_CT_BYTES], uint8_t ss[MLKEM768_SS_BYTES],
			   const uint8_t ek[MLKEM768_EK_BYTES], const uint8_t m[MLKEM768_SEED_BYTES])
	__attribute__((warn_unused_result));

/* ML-KEM.Encaps (Algorithm 20): m from libsodium's randombytes_buf. */
int mlkem768_encaps(uint8_t ct[MLKEM768_CT_BYTES], uint8_t ss[MLKEM768_SS_BYTES],
		    const uint8_t ek[MLKEM768_EK_BYTES]) __attribute__((warn_unused_result));

/* ML-KEM.Decaps (Algorithm 21): the hash check of §7.3 (-EINVAL), then
 * Decaps_internal (Algorithm 18). A ciphertext that does not re-encrypt to
 * itself yields the implicit-rejection secret J(z ‖ ct), returned as success:
 * the caller learns nothing, the peers' keys simply differ. */
int mlkem768_decaps(uint8_t ss[MLKEM768_SS_BYTES], const uint8_t ct[MLKEM768_CT_BYTES],
		    const uint8_t dk[MLKEM768_DK_BYTES]) __attribute__((warn_unused_result));
