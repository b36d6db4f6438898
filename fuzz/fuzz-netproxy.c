/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the managed network proxy's parsers of client bytes
 * (src/netproxy). The first byte picks one:
 * - 0: a host (a request's authority, a SOCKS5 name) normalised, then
 *   decided against a fixed policy: normalising is idempotent, and the
 *   decision of the normalised host is the same as deciding it again;
 * - 1: a pattern checked for the allow and the deny list, and (when valid)
 *   compiled into a policy that decides a few hosts;
 * - 2: a chunked body: where it ends is the same whether it comes whole or
 *   a byte at a time, and never past the input.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "chunked.h"
#include "fuzz.h"
#include "netproxy-config.h"
#include "policy.h"

static struct np_policy *fixed;

static struct np_policy *make(const char *allow, const char *deny)
{
	struct np_domain d[2] = { { (char *)allow, NP_PERM_ALLOW }, { (char *)deny, NP_PERM_DENY } };
	struct netproxy_config cfg = { .domains = d, .n_domains = 2 };
	struct np_policy *p = NULL;
	char err[256];

	return netproxy_policy_new(&cfg, &p, err, sizeof(err)) == 0 ? p : NULL;
}

static long chunked_end(const uint8_t *p, size_t n, size_t step)
{
	struct np_chunked st = { 0 };
	size_t off = 0;

	while (off < n) {
		size_t k = n - off < step ? n - off : step;
		long r = netproxy_chunked_scan(&st, p + off, k);

		if (r < 0)
			return -1;
		FUZZ_CHECK((size_t)r <= k);
		off += (size_t)r;
		if (netproxy_chunked_done(&st))
			return (long)off;
		FUZZ_CHECK((size_t)r == k);
	}
	return -2;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s, a[256], b[256], err[512];

	if (size < 1 || size > 4096)
		return 0;
	if (!fixed)
		fixed = make("*.example.com", "bad.example.com");
	FUZZ_CHECK(fixed);
	switch (data[0] % 3) {
	case 0: {
		size_t n = netproxy_normalize_host((const char *)data + 1, size - 1, a, sizeof(a));

		if (!n)
			break;
		FUZZ_CHECK(n == strlen(a) && n < sizeof(a));
		FUZZ_CHECK(netproxy_normalize_host(a, n, b, sizeof(b)) == n && !strcmp(a, b));
		FUZZ_CHECK(netproxy_policy_decide(fixed, a) == netproxy_policy_decide(fixed, b));
		break;
	}
	case 1: {
		struct np_policy *p;

		s = strndup((const char *)data + 1, size - 1);
		FUZZ_CHECK(s);
		if (netproxy_pattern_check(s, false, err, sizeof(err)) == 0) {
			p = make(s, "never.invalid");
			FUZZ_CHECK(p);
			(void)netproxy_policy_decide(p, "a.example.com");
			(void)netproxy_policy_decide(p, "127.0.0.1");
			(void)netproxy_policy_decide(p, s);
			netproxy_policy_free(p);
		} else {
			FUZZ_CHECK(err[0]);
		}
		(void)netproxy_pattern_check(s, true, err, sizeof(err));
		free(s);
		break;
	}
	default: {
		long whole = chunked_end(data + 1, size - 1, size), bytewise = chunked_end(data + 1, size - 1, 1);

		FUZZ_CHECK(whole == bytewise);
		FUZZ_CHECK(whole < 0 || (size_t)whole <= size - 1);
		break;
	}
	}
	return 0;
}
