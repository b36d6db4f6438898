/* SPDX-License-Identifier: MIT */
/* The reference's denial heuristic for sandboxed processes (SANDBOX.md §1). */
#include <ctype.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "macro.h"
#include "sandbox.h"

static bool contains_ci(const char *s, size_t n, const char *needle)
{
	size_t m = strlen(needle);

	for (size_t i = 0; i + m <= n; i++) {
		size_t j = 0;

		while (j < m && tolower((unsigned char)s[i + j]) == needle[j])
			j++;
		if (j == m)
			return true;
	}
	return false;
}

bool sandbox_likely_denied(int exit_code, const char *const *texts, const size_t *lens, size_t n)
{
	static const char *const keywords[] = {
		"operation not permitted", "permission denied", "read-only file system", "seccomp",
		"sandbox", "landlock", "failed to write file",
	};

	if (exit_code == 0)
		return false;
	for (size_t t = 0; t < n; t++)
		for (size_t k = 0; k < ELEMENTSOF(keywords); k++)
			if (contains_ci(texts[t], lens[t], keywords[k]))
				return true;
	if (exit_code == 2 || exit_code == 126 || exit_code == 127)
		return false;
	return exit_code == 128 + SIGSYS;
}
