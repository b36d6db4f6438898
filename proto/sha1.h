/* SPDX-License-Identifier: MIT */
/*
 * SHA-1 (FIPS 180-4), one shot, for the WebSocket handshake's
 * Sec-WebSocket-Accept (RFC 6455 4.2.2) and nothing else: SHA-1 is broken
 * for collision resistance, which that check does not need.
 *
 * Not OpenSSL's SHA1(): in OpenSSL 3 it goes through EVP, whose first use
 * initialises the library (configuration, providers, algorithm tables) and
 * leaves 2.3 MB more resident in the server after its first connection
 * (bench/README.md). libsodium has no SHA-1.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define SHA1_BYTES 20

void sha1_digest(const void *data, size_t len, uint8_t out[SHA1_BYTES]);
