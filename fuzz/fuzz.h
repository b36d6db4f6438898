/* SPDX-License-Identifier: MIT */
/*
 * The libFuzzer entry points every fuzz/fuzz-<target>.c defines, declared so
 * that -Wmissing-prototypes holds, plus small helpers shared by the targets.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Optional one-time setup; fuzz-replay.c calls it when a target defines it. */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

/*
 * An invariant of the code under test does not hold. Unlike assert() this
 * also works in builds with NDEBUG, and it names the broken rule.
 */
#define FUZZ_CHECK(expr)                                                                   \
	do {                                                                               \
		if (!(expr)) {                                                             \
			fprintf(stderr, "%s:%d: invariant violated: %s\n", __FILE__, __LINE__, \
				#expr);                                                    \
			abort();                                                           \
		}                                                                          \
	} while (0)

/* An absolute path in normal form: no empty, "." or ".." segment, no trailing slash. */
static inline void fuzz_check_normal_path(const char *path)
{
	size_t n = strlen(path);

	FUZZ_CHECK(path[0] == '/');
	FUZZ_CHECK(strstr(path, "//") == NULL);
	FUZZ_CHECK(strstr(path, "/./") == NULL && strstr(path, "/../") == NULL);
	FUZZ_CHECK(n == 1 || path[n - 1] != '/');
	FUZZ_CHECK(!(n >= 2 && strcmp(path + n - 2, "/.") == 0));
	FUZZ_CHECK(!(n >= 3 && strcmp(path + n - 3, "/..") == 0));
}
