/* SPDX-License-Identifier: MIT */
/* The registry client's delays (see registry.h): reconnect backoff and the conflict retry. */
#include <errno.h>
#include <sodium.h>
#include <string.h>

#include "registry.h"

/* ---- delays ---- */

void registry_backoff_init(struct registry_backoff *b)
{
	b->next_ms = REGISTRY_BACKOFF_INITIAL_MS;
}

uint32_t registry_backoff_next(struct registry_backoff *b)
{
	uint32_t d = b->next_ms;

	b->next_ms = d >= REGISTRY_BACKOFF_MAX_MS / 2 ? REGISTRY_BACKOFF_MAX_MS : 2 * d;
	return d;
}

void registry_backoff_reset(struct registry_backoff *b)
{
	registry_backoff_init(b);
}

int registry_conflict_retry_init(struct registry_conflict_retry *r)
{
	if (sodium_init() < 0)
		return -EIO;
	randombytes_buf(r->key, sizeof(r->key));
	r->attempt = 0;
	return 0;
}

/*
 * Upstream hashes (random UUID, attempt) with Rust's DefaultHasher; we key
 * SipHash-2-4 (crypto_shorthash) with 16 random bytes per run and hash the
 * attempt (4 bytes, little endian): the same bounds, the same per-run spread.
 */
uint32_t registry_conflict_retry_delay_ms(const uint8_t key[REGISTRY_CONFLICT_KEY_BYTES],
					  uint32_t attempt)
{
	_Static_assert(REGISTRY_CONFLICT_KEY_BYTES == crypto_shorthash_KEYBYTES, "SipHash key size");
	uint8_t in[4] = { (uint8_t)attempt, (uint8_t)(attempt >> 8), (uint8_t)(attempt >> 16),
			  (uint8_t)(attempt >> 24) };
	uint8_t h[crypto_shorthash_BYTES];
	uint32_t base = REGISTRY_CONFLICT_INITIAL_MS << (attempt < 4 ? attempt : 4);
	uint64_t v = 0;

	if (base > REGISTRY_CONFLICT_MAX_MS)
		base = REGISTRY_CONFLICT_MAX_MS;
	crypto_shorthash(h, in, sizeof(in), key);
	for (size_t i = 0; i < sizeof(h); i++)
		v |= (uint64_t)h[i] << (8 * i);
	return base + (uint32_t)(v % (base / 2 + 1));
}

uint32_t registry_conflict_retry_next(struct registry_conflict_retry *r)
{
	uint32_t d = registry_conflict_retry_delay_ms(r->key, r->attempt);

	if (r->attempt < UINT32_MAX)
		r->attempt++;
	return d;
}
