/* SPDX-License-Identifier: MIT */
/* src/netproxy/upstream.c: upstream proxy URLs and the reference's variable order. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tests.h"
#include "upstream.h"

static void ok(const char *url, const char *host, unsigned port, const char *auth)
{
	struct np_upstream u;

	ASSERT_EQ(0, netproxy_upstream_parse(url, &u));
	ASSERT_STREQ(host, u.host);
	ASSERT_EQ(port, (unsigned)u.port);
	if (auth)
		ASSERT_STREQ(auth, u.auth);
	else
		ASSERT_TRUE(u.auth == NULL);
	netproxy_upstream_done(&u);
}

static void bad(const char *url, int err)
{
	struct np_upstream u;

	ASSERT_EQ(err, netproxy_upstream_parse(url, &u));
	ASSERT_TRUE(u.auth == NULL);
}

TEST(urls)
{
	ok("http://proxy.corp:3128", "proxy.corp", 3128, NULL);
	ok("HTTP://proxy.corp:3128/", "proxy.corp", 3128, NULL);
	ok("http://proxy.corp", "proxy.corp", 80, NULL);
	ok("proxy.corp:8080", "proxy.corp", 8080, NULL);
	ok("http://[fd00::1]:3128", "fd00::1", 3128, NULL);
	ok("http://[::1]", "::1", 80, NULL);
	/* "Basic " + base64("user:p@ss") after percent-decoding */
	ok("http://user:p%40ss@10.0.0.1:3128", "10.0.0.1", 3128, "Basic dXNlcjpwQHNz");
	ok("http://user@h:1", "h", 1, "Basic dXNlcjo=");
}

TEST(refused)
{
	bad("socks5://h:1080", -EPROTONOSUPPORT);
	bad("socks5h://h:1080", -EPROTONOSUPPORT);
	bad("https://h:443", -EPROTONOSUPPORT);
	bad("http://", -EINVAL);
	bad("http://h:", -EINVAL);
	bad("http://h:0", -EINVAL);
	bad("http://h:65536", -EINVAL);
	bad("http://h:12x", -EINVAL);
	bad("http://[::1", -EINVAL);
	bad("http://[::1]x", -EINVAL);
	bad("http://u:%zz@h:1", -EINVAL);
}

TEST(order)
{
	const char *name;

	unsetenv("HTTPS_PROXY");
	unsetenv("https_proxy");
	unsetenv("HTTP_PROXY");
	unsetenv("http_proxy");
	unsetenv("ALL_PROXY");
	unsetenv("all_proxy");
	ASSERT_TRUE(netproxy_upstream_env(true, &name) == NULL);
	setenv("all_proxy", "a:1", 1);
	ASSERT_STREQ("a:1", netproxy_upstream_env(false, &name));
	ASSERT_STREQ("all_proxy", name);
	setenv("http_proxy", "h:1", 1);
	setenv("HTTPS_PROXY", "", 1); /* empty: skipped */
	ASSERT_STREQ("h:1", netproxy_upstream_env(true, &name));
	setenv("https_proxy", "s:1", 1);
	ASSERT_STREQ("s:1", netproxy_upstream_env(true, &name));
	ASSERT_STREQ("h:1", netproxy_upstream_env(false, &name));
	ASSERT_STREQ("http_proxy", name);
}

TEST_MAIN()
