/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdlib.h>

#include "tests.h"

#define MAX_TESTS 512

static struct test_case cases[MAX_TESTS];
static size_t n_cases;
static jmp_buf fail_jmp;
static const char *skip_reason;

void tests_register(const char *name, void (*fn)(void))
{
	if (n_cases >= MAX_TESTS) {
		fprintf(stderr, "too many tests\n");
		exit(99);
	}
	cases[n_cases].name = name;
	cases[n_cases].fn = fn;
	n_cases++;
}

void tests_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	printf("# %s:%d: ", file, line);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	longjmp(fail_jmp, 1);
}

void tests_skip(const char *why)
{
	skip_reason = why;
	longjmp(fail_jmp, 2);
}

/*
 * A run that executes no test is a failure, never a silent pass: a binary
 * with no registered tests (broken registration), or a name filter (argv[1])
 * that matches no test (a typo, a renamed test). TAP "Bail out!" makes meson
 * report the binary as an error.
 */
static int bail_out(const char *why, const char *what)
{
	printf("TAP version 13\n# %s%s\nBail out! %s%s\n", why, what, why, what);
	fflush(stdout);
	return 1;
}

int tests_run(int argc, char **argv)
{
	volatile size_t failed = 0, skipped = 0;
	const char *only = argc > 1 ? argv[1] : NULL;
	volatile size_t selected = 0; /* read after longjmp */

	for (size_t i = 0; i < n_cases; i++)
		if (!only || strcmp(only, cases[i].name) == 0)
			selected++;
	if (n_cases == 0)
		return bail_out("no tests registered", "");
	if (selected == 0)
		return bail_out("no test matches ", only);

	printf("TAP version 13\n1..%zu\n", n_cases);
	for (size_t i = 0; i < n_cases; i++) {
		int j;

		if (only && strcmp(only, cases[i].name) != 0) {
			printf("ok %zu - %s # SKIP not selected\n", i + 1, cases[i].name);
			continue;
		}
		fflush(stdout);
		j = setjmp(fail_jmp);
		if (j == 0) {
			cases[i].fn();
			printf("ok %zu - %s\n", i + 1, cases[i].name);
		} else if (j == 2) {
			skipped++;
			printf("ok %zu - %s # SKIP %s\n", i + 1, cases[i].name, skip_reason);
		} else {
			failed++;
			printf("not ok %zu - %s\n", i + 1, cases[i].name);
		}
		fflush(stdout);
	}
	if (skipped == selected)
		return 77; /* every test that ran skipped: nothing was asserted */
	return failed ? 1 : 0;
}
