/* SPDX-License-Identifier: MIT */
/*
 * ML-KEM-768, written from FIPS 203 (final, August 2024), parameter set
 * k = 3, eta1 = eta2 = 2, du = 10, dv = 4.
 *
 * Why by hand: the relay's Noise_hybridIK_25519+MLKEM768 handshake needs
 * ML-KEM-768 and no library packaged for Debian 12 offers it (libsodium 1.0.18
 * has no ML-KEM, OpenSSL 3.0 neither: it arrived in OpenSSL 3.5). The hash
 * functions come from OpenSSL 3.0's libcrypto (SHA3-256, SHA3-512, SHAKE128,
 * SHAKE256 through EVP, in the OpenSSL module src/tls; libsodium 1.0.18 has
 * no Keccak); randomness, the constant-time compare and wiping from libsodium.
 *
 * FIPS 203 algorithms, by function:
 *   Alg. 3/4  BitsToBytes/BytesToBits   folded into byte_encode/byte_decode,
 *                                       sample_poly_cbd
 *   Alg. 5/6  ByteEncode_d/ByteDecode_d byte_encode, byte_decode
 *   §4.2.1    Compress_d/Decompress_d   compress, decompress
 *   Alg. 7    SampleNTT                 sample_ntt (gen_matrix builds Â)
 *   Alg. 8    SamplePolyCBD_eta         sample_poly_cbd (with PRF_eta)
 *   Alg. 9    NTT                       ntt
 *   Alg. 10   NTT^-1                    ntt_inverse
 *   Alg. 11   MultiplyNTTs              multiply_ntts_acc
 *   Alg. 12   BaseCaseMultiply          inside multiply_ntts_acc
 *   Alg. 13   K-PKE.KeyGen              inside mlkem768_keypair_derand
 *   Alg. 14   K-PKE.Encrypt             pke_encrypt
 *   Alg. 15   K-PKE.Decrypt             pke_decrypt
 *   Alg. 16   ML-KEM.KeyGen_internal    mlkem768_keypair_derand
 *   Alg. 17   ML-KEM.Encaps_internal    mlkem768_encaps_derand (after §7.2's check)
 *   Alg. 18   ML-KEM.Decaps_internal    mlkem768_decaps (after §7.3's check)
 *   Alg. 19   ML-KEM.KeyGen             mlkem768_keypair
 *   Alg. 20   ML-KEM.Encaps             mlkem768_encaps
 *   Alg. 21   ML-KEM.Decaps             mlkem768_decaps
 *   §4.1      H, J, G, PRF, XOF         hash_h, hash_j, hash_g, sample_poly_cbd, sample_ntt
 *
 * Constant time: no branch and no table index depends on secret data. Reduction
 * mod q is Barrett's with a multiply and a mask (reduce, csubq); Compress_d
 * divides by q with the same multiply instead of a division instruction, whose
 * latency can depend on its operands (div_q); the final choice between K' and
 * J(z ‖ c) is a mask built from sodium_memcmp's 0/-1. What may branch is public:
 * the rejection sampling of Â (SampleNTT works on the public rho), the input
 * checks on keys, and errors from libcrypto.
 *
 * Wiping: every buffer and polynomial derived from a secret (d, sigma, s, e, r,
 * y, e1, e2, m, m', K', r', J's output, the re-encryption) is zeroed with
 * sodium_memzero before returning, on every path. libcrypto clears its Keccak
 * state when the EVP_MD_CTX is freed (OPENSSL_clear_free in its SHA-3
 * provider).
 */
#include "mlkem768.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "tls-ossl.h"

#define N 256
#define Q 3329
#define K 3
#define ETA1 2
#define ETA2 2
#define DU 10
#define DV 4

#define POLY_BYTES 384			      /* ByteEncode_12 of one polynomial */
#define PKE_DK_BYTES (K * POLY_BYTES)	      /* 1152: ŝ */
#define PKE_EK_BYTES (K * POLY_BYTES + 32)    /* 1184: t̂ ‖ rho */
#define C1_BYTES (32 * DU * K)		      /* 960 */
#define C2_BYTES (32 * DV)		      /* 128 */
#define SHAKE128_RATE 168

_Static_assert(PKE_EK_BYTES == MLKEM768_EK_BYTES, "ek size");
_Static_assert(PKE_DK_BYTES + PKE_EK_BYTES + 64 == MLKEM768_DK_BYTES, "dk size");
_Static_assert(C1_BYTES + C2_BYTES == MLKEM768_CT_BYTES, "ct size");
_Static_assert(ETA1 == 2 && ETA2 == 2, "sample_poly_cbd is written for eta = 2");

/* A polynomial of R_q or T_q; every coefficient in [0, q). */
struct poly {
	uint16_t c[N];
};

struct polyvec {
	struct poly p[K];
};

/* zetas[i] = 17^BitRev7(i) mod q (FIPS 203 Appendix A), for NTT and NTT^-1. */
static const uint16_t zetas[128] = {
	1,    1729, 2580, 3289, 2642, 630,  1897, 848,  1062, 1919, 193,  797,  2786, 3260, 569,
	1746, 296,  2447, 1339, 1476, 3046, 56,	  2240, 1333, 1426, 2094, 535,	2882, 2393, 2879,
	1974, 821,  289,  331,	3253, 1756, 1197, 2304, 2277, 2055, 650,  1977, 2513, 632,  2865,
	33,   1320, 1915, 2319, 1435, 807,  452,  1438, 2868, 1534, 2402, 2647, 2617, 1481, 648,
	2474, 3110, 1227, 910,	17,   2761, 583,  2649, 1637, 723,  2288, 1100, 1409, 2662, 3281,
	233,  756,  2156, 3015, 3050, 1703, 1651, 2789, 1789, 1847, 952,  1461, 2687, 939,  2308,
	2437, 2388, 733,  2337, 268,  641,  1584, 2298, 2037, 3220, 375,  2549, 2090, 1645, 1063,
	319,  2773, 757,  2099, 561,  2466, 2594, 2804, 1092, 403,  1026, 1143, 2150, 2775, 886,
	1722, 1212, 1874, 1029, 2110, 2935, 885,  2154,
};

/* gammas[i] = 17^(2·BitRev7(i)+1) mod q (FIPS 203 Appendix A), for BaseCaseMultiply. */
static const uint16_t gammas[128] = {
	17,   3312, 2761, 568,	583,  2746, 2649, 680,	1637, 1692, 723,  2606, 2288, 1041, 1100,
	2229, 1409, 1920, 2662, 667,  3281, 48,	  233,	3096, 756,  2573, 2156, 1173, 3015, 314,
	3050, 279,  1703, 1626, 1651, 1678, 2789, 540,	1789, 1540, 1847, 1482, 952,  2377, 1461,
	1868, 2687, 642,  939,	2390, 2308, 1021, 2437, 892,  2388, 941,  733,	2596, 2337, 992,
	268,  3061, 641,  2688, 1584, 1745, 2298, 1031, 2037, 1292, 3220, 109,	375,  2954, 2549,
	780,  2090, 1239, 1645, 1684, 1063, 2266, 319,	3010, 2773, 556,  757,	2572, 2099, 1230,
	561,  2768, 2466, 863,	2594, 735,  2804, 525,	1092, 2237, 403,  2926, 1026, 2303, 1143,
	2186, 2150, 1179, 2775, 554,  886,  2443, 1722, 1607, 1212, 2117, 1874, 1455, 1029, 2300,
	2110, 1219, 2935, 394,	885,  2444, 2154, 1175,
};

/* ---- arithmetic mod q, branch-free ---- */

/* floor(2^32 / q): Barrett's constant. For any 32-bit a, t = (a·M) >> 32 is
 * floor(a/q) or one less, since a·(2^32/q − M)/2^32 < 1. */
#define BARRETT_M ((uint32_t)((UINT64_C(1) << 32) / Q))

/* a mod q for a in [0, 2q). */
static uint16_t csubq(uint32_t a)
{
	uint32_t t = a - Q;

	return (uint16_t)(t + (Q & (0u - (t >> 31))));
}

/* a mod q for any 32-bit a. */
static uint16_t reduce(uint32_t a)
{
	uint32_t t = (uint32_t)(((uint64_t)a * BARRETT_M) >> 32);

	return csubq(a - t * Q);
}

/* floor(a / q) for any 32-bit a, without a division instruction. */
static uint32_t div_q(uint32_t a)
{
	uint32_t t = (uint32_t)(((uint64_t)a * BARRETT_M) >> 32);
	uint32_t r = a - t * Q; /* in [0, 2q) */

	return t + 1 - ((r - Q) >> 31); /* +1 when r >= q */
}

static uint16_t add_q(uint16_t a, uint16_t b)
{
	return csubq((uint32_t)a + b);
}

static uint16_t sub_q(uint16_t a, uint16_t b)
{
	return csubq((uint32_t)a + Q - b);
}

static uint16_t mul_q(uint16_t a, uint16_t b)
{
	return reduce((uint32_t)a * b);
}

/*
 * ---- hash functions (§4.1), from libcrypto through the OpenSSL module
 * (src/tls/tls-ossl.h): libsodium 1.0.18 has no SHA-3 ----
 */

/* H(s) = SHA3-256(s) */
static int hash_h(uint8_t out[32], const uint8_t *s, size_t len)
{
	return tls_keccak(TLS_SHA3_256, out, 32, s, len, NULL, 0);
}

/* G(a ‖ b) = SHA3-512(a ‖ b), split by the callers into two 32-byte halves */
static int hash_g(uint8_t out[64], const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	return tls_keccak(TLS_SHA3_512, out, 64, a, alen, b, blen);
}

/* J(z ‖ c) = SHAKE256(z ‖ c, 8·32) */
static int hash_j(uint8_t out[32], const uint8_t z[32], const uint8_t c[MLKEM768_CT_BYTES])
{
	return tls_keccak(TLS_SHAKE256, out, 32, z, 32, c, MLKEM768_CT_BYTES);
}

/* ---- encoding (Algorithms 5 and 6, §4.2.1) ---- */

/* ByteEncode_d: 256 d-bit integers, least significant bit first, into 32·d bytes. */
static void byte_encode(uint8_t *out, const struct poly *f, unsigned d)
{
	uint32_t acc = 0;
	unsigned bits = 0;

	for (size_t i = 0; i < N; i++) {
		acc |= (uint32_t)f->c[i] << bits;
		bits += d;
		while (bits >= 8) {
			*out++ = (uint8_t)acc;
			acc >>= 8;
			bits -= 8;
		}
	}
}

/* ByteDecode_d: 32·d bytes into 256 integers mod 2^d, or mod q when d = 12. */
static void byte_decode(struct poly *f, const uint8_t *in, unsigned d)
{
	uint32_t acc = 0;
	unsigned bits = 0;

	for (size_t i = 0; i < N; i++) {
		while (bits < d) {
			acc |= (uint32_t)*in++ << bits;
			bits += 8;
		}
		f->c[i] = (uint16_t)(acc & ((1u << d) - 1));
		if (d == 12) /* public: d, not the data */
			f->c[i] = csubq(f->c[i]);
		acc >>= d;
		bits -= d;
	}
}

/* Compress_d(x) = round(2^d·x / q) mod 2^d = floor((2^d·x + (q−1)/2) / q) mod 2^d
 * (q is odd, so no value lies halfway). */
static void compress(struct poly *f, unsigned d)
{
	for (size_t i = 0; i < N; i++)
		f->c[i] = (uint16_t)(div_q(((uint32_t)f->c[i] << d) + (Q - 1) / 2) &
				     ((1u << d) - 1));
}

/* Decompress_d(y) = round(q·y / 2^d) = floor((q·y + 2^(d−1)) / 2^d) */
static void decompress(struct poly *f, unsigned d)
{
	for (size_t i = 0; i < N; i++)
		f->c[i] = (uint16_t)(((uint32_t)f->c[i] * Q + (1u << (d - 1))) >> d);
}

/* ---- NTT (Algorithms 9 to 12) ---- */

static void ntt(struct poly *f)
{
	unsigned k = 1;

	for (unsigned len = 128; len >= 2; len /= 2)
		for (unsigned start = 0; start < N; start += 2 * len) {
			uint16_t zeta = zetas[k++];

			for (unsigned j = start; j < start + len; j++) {
				uint16_t t = mul_q(zeta, f->c[j + len]);

				f->c[j + len] = sub_q(f->c[j], t);
				f->c[j] = add_q(f->c[j], t);
			}
		}
}

static void ntt_inverse(struct poly *f)
{
	unsigned k = 127;

	for (unsigned len = 2; len <= 128; len *= 2)
		for (unsigned start = 0; start < N; start += 2 * len) {
			uint16_t zeta = zetas[k--];

			for (unsigned j = start; j < start + len; j++) {
				uint16_t t = f->c[j];

				f->c[j] = add_q(t, f->c[j + len]);
				f->c[j + len] = mul_q(zeta, sub_q(f->c[j + len], t));
			}
		}
	for (size_t j = 0; j < N; j++)
		f->c[j] = mul_q(f->c[j], 3303); /* 128^-1 mod q */
}

/* h += f × g in T_q: MultiplyNTTs with BaseCaseMultiply on each pair,
 * (a0 + a1·X)(b0 + b1·X) mod (X² − gamma). */
static void multiply_ntts_acc(struct poly *h, const struct poly *f, const struct poly *g)
{
	for (size_t i = 0; i < N / 2; i++) {
		uint16_t a0 = f->c[2 * i], a1 = f->c[2 * i + 1];
		uint16_t b0 = g->c[2 * i], b1 = g->c[2 * i + 1];
		uint16_t c0 = add_q(mul_q(a0, b0), mul_q(mul_q(a1, b1), gammas[i]));
		uint16_t c1 = add_q(mul_q(a0, b1), mul_q(a1, b0));

		h->c[2 * i] = add_q(h->c[2 * i], c0);
		h->c[2 * i + 1] = add_q(h->c[2 * i + 1], c1);
	}
}

static void poly_add(struct poly *f, const struct poly *g)
{
	for (size_t i = 0; i < N; i++)
		f->c[i] = add_q(f->c[i], g->c[i]);
}

/* ---- sampling (Algorithms 7 and 8) ---- */

/* SampleNTT(rho ‖ j ‖ i) by rejection from XOF = SHAKE128. OpenSSL 3.0 cannot
 * squeeze incrementally (EVP_DigestSqueeze is 3.3), so the XOF is run once for
 * 3 blocks (504 bytes: 336 candidates for 256 coefficients). They fall short
 * for about 0.8 % of the matrix entries; then the XOF is run again with twice
 * the output length and parsing resumes where it stopped. SHAKE's output for a
 * longer length starts with the shorter output, so this reads exactly the
 * stream FIPS 203 describes (with 672 candidates the shortfall is < 2^-400).
 * Everything here is public. */
static int sample_ntt(struct poly *a, const uint8_t rho[32], uint8_t j, uint8_t i)
{
	uint8_t seed[34], first[3 * SHAKE128_RATE];
	uint8_t *buf = first, *heap = NULL;
	size_t len = sizeof(first), pos = 0;
	unsigned n = 0;
	int r;

	memcpy(seed, rho, 32);
	seed[32] = j;
	seed[33] = i;
	r = tls_keccak(TLS_SHAKE128, buf, len, seed, sizeof(seed), NULL, 0);
	while (r == 0) {
		for (; n < N && pos + 3 <= len; pos += 3) {
			uint16_t d1 = (uint16_t)(buf[pos] | (buf[pos + 1] & 0x0f) << 8);
			uint16_t d2 = (uint16_t)(buf[pos + 1] >> 4 | buf[pos + 2] << 4);

			if (d1 < Q)
				a->c[n++] = d1;
			if (d2 < Q && n < N)
				a->c[n++] = d2;
		}
		if (n == N)
			break;
		uint8_t *more = realloc(heap, 2 * len);
		if (!more) {
			r = -ENOMEM;
			break;
		}
		heap = buf = more;
		len *= 2;
		r = tls_keccak(TLS_SHAKE128, buf, len, seed, sizeof(seed), NULL, 0);
	}
	free(heap);
	return r;
}

/* Â with Â[i][j] = SampleNTT(rho ‖ j ‖ i) (Algorithm 13 line 6, Algorithm 14 line 6). */
static int gen_matrix(struct polyvec a[K], const uint8_t rho[32])
{
	for (uint8_t i = 0; i < K; i++)
		for (uint8_t j = 0; j < K; j++) {
			int r = sample_ntt(&a[i].p[j], rho, j, i);
			if (r < 0)
				return r;
		}
	return 0;
}

/* SamplePolyCBD_2(PRF_2(sigma, nonce)), PRF_eta(s, b) = SHAKE256(s ‖ b, 8·64·eta).
 * Coefficient i takes bits 4i..4i+3: (b0 + b1) − (b2 + b3). */
static int sample_poly_cbd(struct poly *f, const uint8_t sigma[32], uint8_t nonce)
{
	uint8_t buf[64 * ETA1];
	int r = tls_keccak(TLS_SHAKE256, buf, sizeof(buf), sigma, 32, &nonce, 1);

	if (r == 0)
		for (size_t i = 0; i < N; i++) {
			uint32_t b = (uint32_t)buf[i / 2] >> (4 * (i & 1));
			uint32_t x = (b & 1) + (b >> 1 & 1), y = (b >> 2 & 1) + (b >> 3 & 1);

			f->c[i] = csubq(x + Q - y);
		}
	sodium_memzero(buf, sizeof(buf));
	return r;
}

/* ---- K-PKE (Algorithms 14 and 15; 13 is inside mlkem768_keypair_derand) ---- */

/* K-PKE.Encrypt(ek_PKE, m, r) into ct. */
static int pke_encrypt(uint8_t ct[MLKEM768_CT_BYTES], const uint8_t ek[PKE_EK_BYTES],
		       const uint8_t m[32], const uint8_t coins[32])
{
	struct polyvec a[K], t, y, e1, u;
	struct poly e2, mu, v;
	uint8_t nonce = 0;
	int r;

	for (size_t i = 0; i < K; i++)
		byte_decode(&t.p[i], ek + i * POLY_BYTES, 12);
	r = gen_matrix(a, ek + K * POLY_BYTES);
	for (size_t i = 0; i < K && r == 0; i++)
		r = sample_poly_cbd(&y.p[i], coins, nonce++);
	for (size_t i = 0; i < K && r == 0; i++)
		r = sample_poly_cbd(&e1.p[i], coins, nonce++);
	if (r == 0)
		r = sample_poly_cbd(&e2, coins, nonce);
	if (r < 0)
		goto out;

	for (size_t i = 0; i < K; i++)
		ntt(&y.p[i]);
	/* u = NTT^-1(Âᵀ ∘ ŷ) + e1 */
	for (size_t i = 0; i < K; i++) {
		memset(&u.p[i], 0, sizeof(u.p[i]));
		for (size_t j = 0; j < K; j++)
			multiply_ntts_acc(&u.p[i], &a[j].p[i], &y.p[j]);
		ntt_inverse(&u.p[i]);
		poly_add(&u.p[i], &e1.p[i]);
	}
	/* mu = Decompress_1(ByteDecode_1(m)); v = NTT^-1(t̂ᵀ ∘ ŷ) + e2 + mu */
	byte_decode(&mu, m, 1);
	decompress(&mu, 1);
	memset(&v, 0, sizeof(v));
	for (size_t j = 0; j < K; j++)
		multiply_ntts_acc(&v, &t.p[j], &y.p[j]);
	ntt_inverse(&v);
	poly_add(&v, &e2);
	poly_add(&v, &mu);

	for (size_t i = 0; i < K; i++) {
		compress(&u.p[i], DU);
		byte_encode(ct + i * 32 * DU, &u.p[i], DU);
	}
	compress(&v, DV);
	byte_encode(ct + C1_BYTES, &v, DV);
out:
	sodium_memzero(&y, sizeof(y));
	sodium_memzero(&e1, sizeof(e1));
	sodium_memzero(&e2, sizeof(e2));
	sodium_memzero(&u, sizeof(u));
	sodium_memzero(&v, sizeof(v));
	sodium_memzero(&mu, sizeof(mu));
	return r;
}

/* K-PKE.Decrypt(dk_PKE, c) into m. */
static void pke_decrypt(uint8_t m[32], const uint8_t dk[PKE_DK_BYTES],
			const uint8_t ct[MLKEM768_CT_BYTES])
{
	struct polyvec u, s;
	struct poly v, w;

	for (size_t i = 0; i < K; i++) {
		byte_decode(&u.p[i], ct + i * 32 * DU, DU);
		decompress(&u.p[i], DU);
		ntt(&u.p[i]);
		byte_decode(&s.p[i], dk + i * POLY_BYTES, 12);
	}
	byte_decode(&v, ct + C1_BYTES, DV);
	decompress(&v, DV);
	/* w = v' − NTT^-1(ŝᵀ ∘ NTT(u')) */
	memset(&w, 0, sizeof(w));
	for (size_t j = 0; j < K; j++)
		multiply_ntts_acc(&w, &s.p[j], &u.p[j]);
	ntt_inverse(&w);
	for (size_t i = 0; i < N; i++)
		w.c[i] = sub_q(v.c[i], w.c[i]);
	compress(&w, 1);
	byte_encode(m, &w, 1);

	sodium_memzero(&s, sizeof(s));
	sodium_memzero(&u, sizeof(u));
	sodium_memzero(&w, sizeof(w));
}

/* ---- ML-KEM ---- */

int mlkem768_keypair_derand(uint8_t ek[MLKEM768_EK_BYTES], uint8_t dk[MLKEM768_DK_BYTES],
			    const uint8_t d[MLKEM768_SEED_BYTES], const uint8_t z[MLKEM768_SEED_BYTES])
{
	struct polyvec a[K], s, e, t;
	uint8_t dk_in[33], rho_sigma[64]; /* (rho, sigma) = G(d ‖ k) */
	const uint8_t *rho = rho_sigma, *sigma = rho_sigma + 32;
	uint8_t nonce = 0;
	int r;

	/* K-PKE.KeyGen(d) (Algorithm 13) */
	memcpy(dk_in, d, 32);
	dk_in[32] = K;
	r = hash_g(rho_sigma, dk_in, sizeof(dk_in), NULL, 0);
	if (r == 0)
		r = gen_matrix(a, rho);
	for (size_t i = 0; i < K && r == 0; i++)
		r = sample_poly_cbd(&s.p[i], sigma, nonce++);
	for (size_t i = 0; i < K && r == 0; i++)
		r = sample_poly_cbd(&e.p[i], sigma, nonce++);
	if (r < 0)
		goto out;
	for (size_t i = 0; i < K; i++) {
		ntt(&s.p[i]);
		ntt(&e.p[i]);
	}
	/* t̂ = Â ∘ ŝ + ê */
	for (size_t i = 0; i < K; i++) {
		t.p[i] = e.p[i];
		for (size_t j = 0; j < K; j++)
			multiply_ntts_acc(&t.p[i], &a[i].p[j], &s.p[j]);
	}
	/* ek = ByteEncode_12(t̂) ‖ rho; dk = ByteEncode_12(ŝ) ‖ ek ‖ H(ek) ‖ z (Algorithm 16) */
	for (size_t i = 0; i < K; i++) {
		byte_encode(ek + i * POLY_BYTES, &t.p[i], 12);
		byte_encode(dk + i * POLY_BYTES, &s.p[i], 12);
	}
	memcpy(ek + K * POLY_BYTES, rho, 32);
	memcpy(dk + PKE_DK_BYTES, ek, MLKEM768_EK_BYTES);
	r = hash_h(dk + PKE_DK_BYTES + MLKEM768_EK_BYTES, ek, MLKEM768_EK_BYTES);
	memcpy(dk + PKE_DK_BYTES + MLKEM768_EK_BYTES + 32, z, 32);
out:
	if (r < 0)
		sodium_memzero(dk, MLKEM768_DK_BYTES);
	sodium_memzero(dk_in, sizeof(dk_in));
	sodium_memzero(rho_sigma, sizeof(rho_sigma));
	sodium_memzero(&s, sizeof(s));
	sodium_memzero(&e, sizeof(e));
	return r;
}

int mlkem768_keypair(uint8_t ek[MLKEM768_EK_BYTES], uint8_t dk[MLKEM768_DK_BYTES])
{
	uint8_t dz[64];
	int r;

	if (sodium_init() < 0) {
		sodium_memzero(dk, MLKEM768_DK_BYTES);
		return -EIO;
	}
	randombytes_buf(dz, sizeof(dz));
	r = mlkem768_keypair_derand(ek, dk, dz, dz + 32);
	sodium_memzero(dz, sizeof(dz));
	return r;
}

/* §7.2 modulus check: ByteEncode_12(ByteDecode_12(t̂ bytes)) must give them back,
 * i.e. no 12-bit coefficient is >= q. ek is public, so memcmp may branch. */
static bool ek_modulus_ok(const uint8_t ek[MLKEM768_EK_BYTES])
{
	for (size_t i = 0; i < K; i++) {
		struct poly f;
		uint8_t again[POLY_BYTES];

		byte_decode(&f, ek + i * POLY_BYTES, 12);
		byte_encode(again, &f, 12);
		if (memcmp(again, ek + i * POLY_BYTES, POLY_BYTES) != 0)
			return false;
	}
	return true;
}

int mlkem768_encaps_derand(uint8_t ct[MLKEM768_CT_BYTES], uint8_t ss[MLKEM768_SS_BYTES],
			   const uint8_t ek[MLKEM768_EK_BYTES], const uint8_t m[MLKEM768_SEED_BYTES])
{
	uint8_t h[32], kr[64]; /* (K, r) = G(m ‖ H(ek)) */
	int r;

	if (!ek_modulus_ok(ek)) {
		sodium_memzero(ss, MLKEM768_SS_BYTES);
		return -EINVAL;
	}
	r = hash_h(h, ek, MLKEM768_EK_BYTES);
	if (r == 0)
		r = hash_g(kr, m, 32, h, sizeof(h));
	if (r == 0)
		r = pke_encrypt(ct, ek, m, kr + 32);
	if (r == 0)
		memcpy(ss, kr, MLKEM768_SS_BYTES);
	else
		sodium_memzero(ss, MLKEM768_SS_BYTES);
	sodium_memzero(kr, sizeof(kr));
	return r;
}

int mlkem768_encaps(uint8_t ct[MLKEM768_CT_BYTES], uint8_t ss[MLKEM768_SS_BYTES],
		    const uint8_t ek[MLKEM768_EK_BYTES])
{
	uint8_t m[32];
	int r;

	if (sodium_init() < 0) {
		sodium_memzero(ss, MLKEM768_SS_BYTES);
		return -EIO;
	}
	randombytes_buf(m, sizeof(m));
	r = mlkem768_encaps_derand(ct, ss, ek, m);
	sodium_memzero(m, sizeof(m));
	return r;
}

int mlkem768_decaps(uint8_t ss[MLKEM768_SS_BYTES], const uint8_t ct[MLKEM768_CT_BYTES],
		    const uint8_t dk[MLKEM768_DK_BYTES])
{
	const uint8_t *dk_pke = dk, *ek = dk + PKE_DK_BYTES;
	const uint8_t *h = ek + MLKEM768_EK_BYTES, *z = h + 32;
	uint8_t hek[32], m[32], kr[64], kbar[32], ct2[MLKEM768_CT_BYTES];
	uint8_t mask;
	int r;

	/* §7.3 hash check: H(ek) == h (the ciphertext and key types are the array sizes) */
	r = hash_h(hek, ek, MLKEM768_EK_BYTES);
	if (r == 0 && sodium_memcmp(hek, h, 32) != 0)
		r = -EINVAL;
	if (r < 0)
		goto out;

	/* Algorithm 18: m' = Decrypt(c); (K', r') = G(m' ‖ h); K̄ = J(z ‖ c);
	 * c' = Encrypt(ek, m', r'); K' unless c != c', then K̄. */
	pke_decrypt(m, dk_pke, ct);
	r = hash_g(kr, m, sizeof(m), h, 32);
	if (r == 0)
		r = hash_j(kbar, z, ct);
	if (r == 0)
		r = pke_encrypt(ct2, ek, m, kr + 32);
	if (r < 0)
		goto out;
	/* sodium_memcmp: 0 when equal, -1 otherwise, in constant time; as a byte
	 * that is the mask selecting K̄. The empty asm keeps the compiler from
	 * turning the selection back into a branch on it. */
	mask = (uint8_t)sodium_memcmp(ct, ct2, MLKEM768_CT_BYTES);
	__asm__("" : "+r"(mask));
	for (size_t i = 0; i < MLKEM768_SS_BYTES; i++)
		ss[i] = (uint8_t)(kr[i] ^ (mask & (kr[i] ^ kbar[i])));
out:
	if (r < 0)
		sodium_memzero(ss, MLKEM768_SS_BYTES);
	sodium_memzero(m, sizeof(m));
	sodium_memzero(kr, sizeof(kr));
	sodium_memzero(kbar, sizeof(kbar));
	sodium_memzero(ct2, sizeof(ct2));
	sodium_memzero(&mask, sizeof(mask));
	return r;
}
