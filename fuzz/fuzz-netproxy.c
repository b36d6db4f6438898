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
 *   a byte at a time, and never past the input;
 * - exactly 3 (checked first; other values keep the mapping above): a
 *   SOCKS5 UDP request header parsed: never past the input, the host a
 *   string of its field, and an IP header rebuilt from the parsed address
 *   (the reply's form) is the input's own bytes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "chunked.h"
#include "fuzz.h"
#include "netproxy-config.h"
#include "policy.h"
#include "socks-udp.h"

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

static void udp_header(const uint8_t *p, size_t n)
{
	struct np_udp_header h;
	struct sockaddr_storage ss = { 0 };
	uint8_t out[22];
	size_t k;

	if (netproxy_udp_parse(p, n, &h) < 0)
		return;
	FUZZ_CHECK(h.len <= n && h.port && memchr(h.host, 0, sizeof(h.host)));
	if (h.atyp == 3) {
		FUZZ_CHECK(strlen(h.host) == p[4] && h.len == 7u + p[4]);
		return;
	}
	FUZZ_CHECK(h.atyp == 1 || h.atyp == 4);
	if (h.atyp == 1) {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;

		in->sin_family = AF_INET;
		memcpy(&in->sin_addr, p + 4, 4);
		in->sin_port = htons(h.port);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

		in6->sin6_family = AF_INET6;
		memcpy(&in6->sin6_addr, p + 4, 16);
		in6->sin6_port = htons(h.port);
	}
	k = netproxy_udp_reply_header((struct sockaddr *)&ss, out);
	FUZZ_CHECK(k == h.len && !memcmp(out + 3, p + 3, k - 3) && (h.frag || !memcmp(out, p, 3)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s, a[256], b[256], err[512];

	if (size < 1 || size > 4096)
		return 0;
	if (!fixed)
		fixed = make("*.example.com", "bad.example.com");
	FUZZ_CHECK(fixed);
	if (data[0] == 3) {
		udp_header(data + 1, size - 1);
		return 0;
	}
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
