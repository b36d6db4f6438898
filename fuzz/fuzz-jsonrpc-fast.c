/* SPDX-License-Identifier: MIT */
/*
 * The JSON hot path against the general path on arbitrary input: up to four
 * frames separated by NUL bytes (no valid JSON text holds one) go through
 * both paths against the same processes (fast-diff.c); replies,
 * notifications, signals, stdin bytes and counters must be equal.
 */
#include <string.h>

#include "fast-diff.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fast_diff_init();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *frames[4];
	size_t lens[4], n = 0, start = 0;

	if (size > 1 << 16)
		return 0;
	for (size_t i = 0; i <= size && n < 4; i++)
		if (i == size || data[i] == 0) {
			frames[n] = (const char *)data + start;
			lens[n++] = i - start;
			start = i + 1;
		}
	FUZZ_CHECK(fast_diff_run(frames, lens, n, NULL));
	return 0;
}
