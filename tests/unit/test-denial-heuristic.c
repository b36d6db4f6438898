/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for the denial heuristic of SANDBOX.md §1
 * (sandbox_likely_denied, sandbox/policy.c): keywords, exit codes, texts.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox.h"
#include "tests.h"

static bool denied3(int code, const char *out, const char *errt)
{
	size_t lo = strlen(out), le = strlen(errt), la = lo + le;
	char *agg = malloc(la + 1);
	const char *texts[3];
	size_t lens[3];
	bool r;

	memcpy(agg, out, lo);
	memcpy(agg + lo, errt, le + 1);
	texts[0] = out;
	texts[1] = errt;
	texts[2] = agg;
	lens[0] = lo;
	lens[1] = le;
	lens[2] = la;
	r = sandbox_likely_denied(code, texts, lens, 3);
	free(agg);
	return r;
}

TEST(heuristic_keywords)
{
	static const char *const kw[] = {
		"operation not permitted", "permission denied", "read-only file system", "seccomp",
		"sandbox", "landlock", "failed to write file",
	};
	static const char *const upper[] = {
		"touch: x: Operation not permitted", "bash: /etc/x: Permission denied",
		"cp: cannot create 'x': Read-only file system", "SECCOMP", "blocked by the SandBox",
		"LANDLOCK says no", "error: Failed To Write File foo",
	};

	for (size_t i = 0; i < sizeof(kw) / sizeof(kw[0]); i++) {
		ASSERT_TRUE(denied3(1, kw[i], ""));
		ASSERT_TRUE(denied3(1, "", kw[i]));
		ASSERT_TRUE(denied3(1, upper[i], ""));
		ASSERT_TRUE(denied3(137, "", upper[i]));
		ASSERT_TRUE(!denied3(0, upper[i], upper[i])); /* exit 0: never */
	}
}

TEST(heuristic_exit_codes)
{
	static const struct {
		int code;
		const char *out, *err;
		bool denied;
	} cases[] = {
		/* no keywords */
		{ 1, "", "", false },
		{ 3, "boom", "failed", false },
		{ 2, "", "", false },
		{ 126, "", "", false },
		{ 127, "", "bash: x: command not found", false },
		{ 137, "", "", false },
		{ -1, "", "", false },
		{ 0, "", "", false },
		{ 128 + SIGSYS, "", "", true },
		{ 159, "", "", true },
		{ 158, "", "", false },
		{ 160, "", "", false },
		/* keywords come before the 2/126/127 exclusions */
		{ 2, "", "Read-only file system", true },
		{ 126, "", "bash: ./x: Permission denied", true },
		{ 127, "sandbox", "", true },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (denied3(cases[i].code, cases[i].out, cases[i].err) != cases[i].denied)
			tests_fail(__FILE__, __LINE__, "exit %d, \"%s\", \"%s\": expected %s", cases[i].code,
				   cases[i].out, cases[i].err, cases[i].denied ? "denied" : "not denied");
}

TEST(heuristic_texts)
{
	const char *texts[1];
	size_t lens[1];

	/* only the given length is searched: a keyword past it does not count */
	texts[0] = "xxPermission denied";
	lens[0] = 10;
	ASSERT_TRUE(!sandbox_likely_denied(1, texts, lens, 1));
	lens[0] = strlen(texts[0]);
	ASSERT_TRUE(sandbox_likely_denied(1, texts, lens, 1));
	/* embedded NUL bytes do not stop the search */
	texts[0] = "\0\0permission denied";
	lens[0] = 19;
	ASSERT_TRUE(sandbox_likely_denied(1, texts, lens, 1));
	/* a keyword split across two texts is not found */
	{
		const char *t2[2] = { "permission ", "denied" };
		size_t l2[2] = { 11, 6 };

		ASSERT_TRUE(!sandbox_likely_denied(1, t2, l2, 2));
	}
	/* no texts at all: exit code only */
	ASSERT_TRUE(!sandbox_likely_denied(1, NULL, NULL, 0));
	ASSERT_TRUE(sandbox_likely_denied(159, NULL, NULL, 0));
	/* a keyword exactly at the end, and a prefix of one at the end */
	texts[0] = "..sandbo";
	lens[0] = 8;
	ASSERT_TRUE(!sandbox_likely_denied(1, texts, lens, 1));
	texts[0] = "..sandbox";
	lens[0] = 9;
	ASSERT_TRUE(sandbox_likely_denied(1, texts, lens, 1));
	/* non-ASCII bytes (lossy UTF-8 in the reference) around a keyword */
	texts[0] = "\xff\xfeSECCOMP\x80";
	lens[0] = strlen(texts[0]);
	ASSERT_TRUE(sandbox_likely_denied(1, texts, lens, 1));
}

TEST_MAIN()
