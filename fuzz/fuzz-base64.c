/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: strict base64 (proto/base64.h). Decoding is canonical, so
 * whatever decodes re-encodes to the very same text; and encode -> decode is
 * the identity for any bytes; the AVX2, table and simple encoders write
 * the same text.
 */
#include <errno.h>
#include <string.h>
#include <sys/types.h>

#include "base64.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[128], *enc, *text;
	uint8_t *dec;
	ssize_t n;
	size_t m;

	if (size > 1 << 20)
		return 0;

	/* The input as base64 text. */
	text = (char *)data;
	dec = malloc(base64_decoded_max(size));
	FUZZ_CHECK(dec);
	n = base64_decode(text, size, dec, err, sizeof(err));
	if (n < 0) {
		FUZZ_CHECK(n == -EINVAL);
		FUZZ_CHECK(strncmp(err, "Invalid ", 8) == 0);
	} else {
		FUZZ_CHECK((size_t)n <= base64_decoded_max(size));
		FUZZ_CHECK(size % 4 == 0 && (size_t)n == size / 4 * 3 - (size_t)(size && text[size - 1] == '=') -
									     (size_t)(size > 1 && text[size - 2] == '='));
		enc = malloc(base64_encoded_len((size_t)n) + 1);
		FUZZ_CHECK(enc);
		m = base64_encode(dec, (size_t)n, enc);
		FUZZ_CHECK(m == size && memcmp(enc, text, size) == 0);
		free(enc);
	}
	free(dec);

	/* The input as bytes. */
	enc = malloc(base64_encoded_len(size) + 1);
	FUZZ_CHECK(enc);
	m = base64_encode(data, size, enc);
	FUZZ_CHECK(m == base64_encoded_len(size));
	text = malloc(m + 1);
	FUZZ_CHECK(text);
	FUZZ_CHECK(base64_encode_simple(data, size, text) == m && memcmp(text, enc, m) == 0);
	FUZZ_CHECK(base64_encode_table(data, size, text) == m && memcmp(text, enc, m) == 0);
	free(text);
	dec = malloc(base64_decoded_max(m));
	FUZZ_CHECK(dec);
	n = base64_decode(enc, m, dec, err, sizeof(err));
	FUZZ_CHECK(n >= 0 && (size_t)n == size && memcmp(dec, data, size) == 0);
	free(dec);
	free(enc);
	return 0;
}
