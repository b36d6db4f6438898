/* SPDX-License-Identifier: MIT */
/*
 * src/netproxy/policy.c: the reference proxy's host rules, from the cases
 * observed on exec-server 0.171.0 (docs/netproxy-semantics-notes.md §2-3).
 * There, allowlisted names that needed DNS ended as not_allowed_local (no
 * resolver); here that step is NP_ALLOW_IF_PUBLIC, resolved by the proxy.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "netproxy-config.h"
#include "policy.h"
#include "tests.h"

static struct np_policy *make(const char *const *allow, const char *const *deny, bool local)
{
	struct netproxy_config cfg = { .allow_local_binding = local };
	struct np_domain d[32];
	struct np_policy *p = NULL;
	char err[256];
	size_t n = 0;

	for (; allow && *allow; allow++)
		d[n++] = (struct np_domain){ (char *)*allow, NP_PERM_ALLOW };
	for (; deny && *deny; deny++)
		d[n++] = (struct np_domain){ (char *)*deny, NP_PERM_DENY };
	cfg.domains = d;
	cfg.n_domains = n;
	ASSERT_EQ(0, netproxy_policy_new(&cfg, &p, err, sizeof(err)));
	return p;
}

static enum np_verdict decide(const struct np_policy *p, const char *raw)
{
	char host[256];

	if (!netproxy_normalize_host(raw, strlen(raw), host, sizeof(host)))
		host[0] = 0;
	return netproxy_policy_decide(p, host);
}

/* What p decides for each host (a table's rows: host, verdict). */
struct verdict_case {
	const char *host;
	enum np_verdict want;
};

static void decide_each_at(const struct np_policy *p, const struct verdict_case *c, size_t n,
			   int line)
{
	for (size_t i = 0; i < n; i++) {
		enum np_verdict got = decide(p, c[i].host);

		if (got != c[i].want)
			tests_fail(__FILE__, line, "%s: verdict %d, expected %d", c[i].host, (int)got,
				   (int)c[i].want);
	}
}
#define decide_each(p, cases) decide_each_at((p), (cases), sizeof(cases) / sizeof((cases)[0]), __LINE__)

static void norm(const char *want, const char *raw)
{
	char host[256];

	ASSERT_TRUE(netproxy_normalize_host(raw, strlen(raw), host, sizeof(host)) > 0);
	ASSERT_STREQ(want, host);
}

TEST(normalisation)
{
	norm("deny.sub.test", "DENY.SUB.TEST.");
	norm("::1", "[::1]");
	norm("::1", "[0:0:0:0:0:0:0:1]:80");
	norm("::ffff:127.0.0.1", "[::FFFF:7F00:1]");
	norm("::7f00:1", "[::127.0.0.1]");
	norm("port.test", "port.test:8443");
	norm("2001:db8::1", "[2001:0db8:0:0:0:0:0:1]");
	norm("127.1", "127.1"); /* not a strict dotted quad: a name */
	norm("example.com", "  example.com  ");
}

TEST(table_of_the_reference)
{
	static const char *const allow[] = { "*.sub.test", "**.apex.test", "exact.test",
					     "Upper.Case.TEST.", "port.test:8443", "api?.q.test",
					     "region*.mid.test", "127.0.0.2", "[fd00::5]", "localhost",
					     NULL };
	static const char *const deny[] = { "deny.sub.test", "*.dsub.apex.test", "8.8.4.4", NULL };
	static const struct verdict_case cases[] = {
		{ "sub.test", NP_NOT_ALLOWED },
		{ "a.sub.test", NP_ALLOW_IF_PUBLIC },
		{ "a.b.sub.test", NP_ALLOW_IF_PUBLIC },
		{ "deny.sub.test", NP_DENIED },
		{ "DENY.SUB.TEST.", NP_DENIED },
		{ "apex.test", NP_ALLOW_IF_PUBLIC },
		{ "x.apex.test", NP_ALLOW_IF_PUBLIC },
		{ "dsub.apex.test", NP_ALLOW_IF_PUBLIC },
		{ "y.dsub.apex.test", NP_DENIED },
		{ "EXACT.TEST", NP_ALLOW_IF_PUBLIC },
		{ "exact.test.", NP_ALLOW_IF_PUBLIC },
		{ "sub.exact.test", NP_NOT_ALLOWED },
		{ "upper.case.test", NP_ALLOW_IF_PUBLIC },
		{ "port.test", NP_ALLOW_IF_PUBLIC },
		{ "api1.q.test", NP_ALLOW_IF_PUBLIC },
		{ "api12.q.test", NP_NOT_ALLOWED },
		{ "api.q.test", NP_NOT_ALLOWED },
		{ "region1.mid.test", NP_ALLOW_IF_PUBLIC },
		{ "region.mid.test", NP_ALLOW_IF_PUBLIC },
		{ "a.region1.mid.test", NP_NOT_ALLOWED },
		{ "xregion1.mid.test", NP_NOT_ALLOWED },
		{ "127.0.0.2:18080", NP_ALLOW },
		/* local and special addresses not allowlisted as such */
		{ "127.0.0.3", NP_NOT_ALLOWED_LOCAL },
		{ "[::1]:18080", NP_NOT_ALLOWED_LOCAL },
		{ "0.0.0.0", NP_NOT_ALLOWED_LOCAL },
		{ "169.254.1.1", NP_NOT_ALLOWED_LOCAL },
		{ "100.64.0.1", NP_NOT_ALLOWED_LOCAL },
		{ "192.0.0.1", NP_NOT_ALLOWED_LOCAL },
		{ "198.18.0.1", NP_NOT_ALLOWED_LOCAL },
		{ "224.0.0.1", NP_NOT_ALLOWED_LOCAL },
		{ "255.255.255.255", NP_NOT_ALLOWED_LOCAL },
		{ "240.0.0.1", NP_NOT_ALLOWED_LOCAL },
		{ "[::ffff:127.0.0.1]:80", NP_NOT_ALLOWED_LOCAL },
		{ "[fe80::1]:80", NP_NOT_ALLOWED_LOCAL },
		{ "[fc00::1]:80", NP_NOT_ALLOWED_LOCAL },
		{ "[::]:80", NP_NOT_ALLOWED_LOCAL },
		{ "[::127.0.0.1]:80", NP_NOT_ALLOWED_LOCAL },
		{ "10.255.255.1", NP_NOT_ALLOWED_LOCAL },
		{ "203.0.113.5", NP_NOT_ALLOWED_LOCAL },
		{ "8.8.4.4", NP_DENIED },
		{ "[::ffff:8.8.8.8]:80", NP_NOT_ALLOWED },
		{ "[2001:db8::1]:80", NP_NOT_ALLOWED },
		{ "localhost:18080", NP_ALLOW },
		{ "LOCALHOST.:18080", NP_ALLOW },
		{ "sub.localhost", NP_NOT_ALLOWED },
		{ "127.1", NP_NOT_ALLOWED },
		{ "2130706433", NP_NOT_ALLOWED },
		{ "127.000.000.001", NP_NOT_ALLOWED },
		{ "[fd00::5]:1", NP_ALLOW },
	};
	struct np_policy *p = make(allow, deny, false);

	decide_each(p, cases);
	netproxy_policy_free(p);
}

TEST(wildcard_allow_never_covers_local)
{
	static const char *const any[] = { "*", NULL };
	static const char *const v6[] = { "::1", NULL };
	struct np_policy *p = make(any, NULL, false);

	ASSERT_EQ(NP_NOT_ALLOWED_LOCAL, decide(p, "127.0.0.2"));
	ASSERT_EQ(NP_NOT_ALLOWED_LOCAL, decide(p, "localhost"));
	ASSERT_EQ(NP_NOT_ALLOWED_LOCAL, decide(p, "[::1]"));
	ASSERT_EQ(NP_ALLOW, decide(p, "8.8.8.8"));
	ASSERT_EQ(NP_ALLOW_IF_PUBLIC, decide(p, "example.invalid"));
	netproxy_policy_free(p);
	/* allowLocalBinding: local literals allowed when allowlisted; no DNS check */
	p = make(any, NULL, true);
	ASSERT_EQ(NP_ALLOW, decide(p, "127.0.0.2"));
	ASSERT_EQ(NP_ALLOW, decide(p, "example.invalid"));
	netproxy_policy_free(p);
	p = make(NULL, NULL, true);
	ASSERT_EQ(NP_NOT_ALLOWED, decide(p, "127.0.0.1"));
	netproxy_policy_free(p);
	p = make(v6, NULL, false);
	ASSERT_EQ(NP_ALLOW, decide(p, "[0:0:0:0:0:0:0:1]:80"));
	ASSERT_EQ(NP_NOT_ALLOWED, decide(p, ""));
	netproxy_policy_free(p);
}

static void bad(const char *want, const char *pattern, bool deny)
{
	char err[256];

	ASSERT_EQ(-EINVAL, netproxy_pattern_check(pattern, deny, err, sizeof(err)));
	ASSERT_STREQ(want, err);
}

TEST(pattern_errors)
{
	static const char *const ok[] = { "*", "*.example.com", "**.x.com", "127.0.0.1", "localhost",
					  "Example.COM", "example.com:443", "exa*mple.com", "[::1]",
					  "::1", ".example.com", "example.com.", "ex_ample.com",
					  "[*]", NULL };
	char err[256];

	for (const char *const *p = ok; *p; p++)
		ASSERT_EQ(0, netproxy_pattern_check(*p, false, err, sizeof(err)));
	bad("domain pattern is empty", "", false);
	bad("domain pattern is empty", "*.", false);
	bad("unsupported domain pattern syntax: http://example.com", "http://example.com", false);
	bad("unsupported domain pattern syntax: a b", "a b", false);
	bad("unsupported domain pattern syntax: 10.0.0.0/8", "10.0.0.0/8", false);
	bad("unsupported domain pattern syntax: {a,b}.com", "{a,b}.com", false);
	bad("unsupported repeated wildcard: **", "**", false);
	bad("unsupported repeated wildcard: a**b.com", "a**b.com", false);
	bad("brackets are only supported for IPv6 literals or [*]: [::1]suffix", "[::1]suffix", false);
	bad("invalid value for network.denied_domains: * (allowed exact hosts or scoped wildcards "
	    "like *.example.com or **.example.com)", "*", true);
	bad("invalid value for network.denied_domains: **.* (allowed exact hosts or scoped "
	    "wildcards like *.example.com or **.example.com)", "**.*", true);
	bad("invalid value for network.denied_domains: [*] (allowed exact hosts or scoped "
	    "wildcards like *.example.com or **.example.com)", "[*]", true);
}

static struct sockaddr *sa(const char *ip)
{
	static struct sockaddr_storage ss;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, ip, &((struct sockaddr_in *)&ss)->sin_addr) == 1)
		ss.ss_family = AF_INET;
	else if (inet_pton(AF_INET6, ip, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1)
		ss.ss_family = AF_INET6;
	return (struct sockaddr *)&ss;
}

TEST(address_ranges)
{
	static const char *const local[] = { "127.0.0.1", "10.1.2.3", "172.16.0.1", "172.31.255.255",
					     "192.168.1.1", "169.254.0.1", "0.0.0.0", "224.0.0.1",
					     "255.255.255.255", "100.64.0.1", "192.0.0.9", "192.0.2.1",
					     "198.18.0.1", "198.19.255.255", "198.51.100.1",
					     "203.0.113.5", "240.0.0.1", "::1", "::", "ff02::1",
					     "fc00::1", "fd12::1", "fe80::1", "::ffff:10.0.0.1",
					     "::10.0.0.1", NULL };
	static const char *const public[] = { "8.8.8.8", "172.32.0.1", "100.128.0.1", "1.1.1.1",
					      "2001:db8::1", "2606:4700::1111", "fec0::1",
					      "64:ff9b::1", "::ffff:8.8.8.8", NULL };

	for (const char *const *p = local; *p; p++)
		ASSERT_TRUE(!netproxy_addr_public(sa(*p)));
	for (const char *const *p = public; *p; p++)
		ASSERT_TRUE(netproxy_addr_public(sa(*p)));
}

TEST_MAIN()
