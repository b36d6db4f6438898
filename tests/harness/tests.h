/* SPDX-License-Identifier: MIT */
/*
 * Minimal TAP test harness. TEST(name) { ... } registers a test; ASSERT_*
 * print expected and actual and abort the current test. A test binary's
 * main is TEST_MAIN(). `test-x NAME` runs only the test called NAME (the others
 * are reported as "# SKIP not selected"). Exit 0 all passed, 1 some failed,
 * 77 every test that ran skipped; 1 with "Bail out!" when no test ran at all:
 * NAME matches no test, or the binary registered none.
 */
#pragma once

#include <inttypes.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct test_case {
	const char *name;
	void (*fn)(void);
};

void tests_register(const char *name, void (*fn)(void));
int tests_run(int argc, char **argv);
void tests_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));
void tests_skip(const char *why) __attribute__((noreturn));

#define TEST(n)                                                                  \
	static void test_##n(void);                                              \
	__attribute__((constructor)) static void test_register_##n(void)         \
	{                                                                        \
		tests_register(#n, test_##n);                                    \
	}                                                                        \
	static void test_##n(void)

#define TEST_MAIN()                                 \
	int main(int argc, char **argv)             \
	{                                           \
		return tests_run(argc, argv);       \
	}

#define ASSERT_TRUE(x)                                                                   \
	do {                                                                             \
		if (!(x))                                                                \
			tests_fail(__FILE__, __LINE__, "expected true: %s", #x);         \
	} while (0)

#define ASSERT_EQ(expected, actual)                                                       \
	do {                                                                              \
		intmax_t _e_ = (intmax_t)(expected), _a_ = (intmax_t)(actual);            \
		if (_e_ != _a_)                                                           \
			tests_fail(__FILE__, __LINE__, "%s == %s: expected %jd, got %jd", \
				   #expected, #actual, _e_, _a_);                         \
	} while (0)

#define ASSERT_NE(a, b)                                                                  \
	do {                                                                             \
		intmax_t _x_ = (intmax_t)(a), _y_ = (intmax_t)(b);                       \
		if (_x_ == _y_)                                                          \
			tests_fail(__FILE__, __LINE__, "%s != %s: both %jd", #a, #b, _x_);  \
	} while (0)

#define ASSERT_STREQ(expected, actual)                                                    \
	do {                                                                              \
		const char *_e_ = (expected), *_a_ = (actual);                            \
		if (!_e_ || !_a_ || strcmp(_e_, _a_) != 0)                                \
			tests_fail(__FILE__, __LINE__, "%s: expected \"%s\", got \"%s\"", \
				   #actual, _e_ ? _e_ : "(null)", _a_ ? _a_ : "(null)");  \
	} while (0)

#define ASSERT_MEMEQ(expected, actual, n)                                                \
	do {                                                                             \
		/* n == 0: equal, whatever the pointers (memcmp wants non-NULL). */  \
		if ((n) != 0 && memcmp((expected), (actual), (n)) != 0)                 \
			tests_fail(__FILE__, __LINE__, "%s: %zu bytes differ", #actual,  \
				   (size_t)(n));                                         \
	} while (0)

#define ASSERT_OK(r) ASSERT_TRUE((r) >= 0)
