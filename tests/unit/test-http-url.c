/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for proto/http-url: the URLs http/request takes, normalised as
 * the reference's URL parser does (cases recorded from 0.171.0: request
 * targets, Host values and error texts), and redirect Locations resolved.
 */
#include <errno.h>
#include <stdlib.h>

#include "http-url.h"
#include "tests.h"

static void parses(const char *in, bool tls, const char *host, unsigned port, const char *target,
		   const char *href)
{
	struct http_url_parts u;
	const char *reason = NULL;

	ASSERT_EQ(0, http_url_parts_parse(in, strlen(in), &u, &reason, NULL, 0));
	ASSERT_EQ(tls, u.tls);
	ASSERT_STREQ(host, u.host);
	ASSERT_EQ(port, (unsigned)u.port);
	ASSERT_STREQ(target, u.target);
	ASSERT_STREQ(href, u.href);
	http_url_parts_done(&u);
}

static void refused(const char *in, const char *reason_want)
{
	struct http_url_parts u;
	const char *reason = NULL;

	ASSERT_EQ(-EINVAL, http_url_parts_parse(in, strlen(in), &u, &reason, NULL, 0));
	ASSERT_STREQ(reason_want, reason);
	ASSERT_TRUE(u.host == NULL && u.href == NULL);
}

TEST(plain_urls)
{
	parses("http://127.0.0.1:8841/echo", false, "127.0.0.1", 8841, "/echo",
	       "http://127.0.0.1:8841/echo");
	parses("https://Example.COM/a?b=c#d", true, "example.com", 443, "/a?b=c",
	       "https://example.com/a?b=c#d");
	parses("http://h", false, "h", 80, "/", "http://h/");
	parses("http://h:80/x", false, "h", 80, "/x", "http://h/x");   /* default port dropped */
	parses("http://h:/x", false, "h", 80, "/x", "http://h/x");     /* empty port */
	parses("http://h?q", false, "h", 80, "/?q", "http://h/?q");
	parses("  http://h/x  ", false, "h", 80, "/x", "http://h/x");  /* outer spaces */
	parses("ht\ttp://h/\nx", false, "h", 80, "/x", "http://h/x");   /* inner tabs, newlines */
}

TEST(whatwg_normalisation)
{
	/* slashes after the scheme, backslashes, dot segments, encodings */
	parses("HTTP:127.0.0.1:8841/echo", false, "127.0.0.1", 8841, "/echo",
	       "http://127.0.0.1:8841/echo");
	parses("http:/x", false, "x", 80, "/", "http://x/");
	parses("http:///h\\a\\b", false, "h", 80, "/a/b", "http://h/a/b");
	parses("http://h/echo/%7e/../x/./y", false, "h", 80, "/echo/x/y", "http://h/echo/x/y");
	parses("http://h/a/%2e%2E/b/.", false, "h", 80, "/b/", "http://h/b/");
	parses("http://h/a/..", false, "h", 80, "/", "http://h/");
	parses("http://h/echo/a b?x=y z|'", false, "h", 80, "/echo/a%20b?x=y%20z|%27",
	       "http://h/echo/a%20b?x=y%20z|%27");
	parses("http://h/\xc3\xa9#f g", false, "h", 80, "/%C3%A9", "http://h/%C3%A9#f%20g");
	/* IPv4 forms, IPv6 */
	parses("http://127.1:8841/", false, "127.0.0.1", 8841, "/", "http://127.0.0.1:8841/");
	parses("http://0x7f.1/", false, "127.0.0.1", 80, "/", "http://127.0.0.1/");
	parses("http://0177.0.0.1./", false, "127.0.0.1", 80, "/", "http://127.0.0.1/");
	parses("http://[0:0::1]:8080/", false, "::1", 8080, "/", "http://[::1]:8080/");
	parses("http://[::ffff:1.2.3.4]/", false, "::ffff:102:304", 80, "/", "http://[::ffff:102:304]/");
	parses("http://[1:0:0:2:0:0:0:3]/", false, "1:0:0:2::3", 80, "/", "http://[1:0:0:2::3]/");
	parses("http://[1:0:0:2:0:0:3:4]/", false, "1::2:0:0:3:4", 80, "/", "http://[1::2:0:0:3:4]/");
	parses("http://[::]/", false, "::", 80, "/", "http://[::]/");
	parses("http://[1:2:3:4:5:6:7:0]/", false, "1:2:3:4:5:6:7:0", 80, "/",
	       "http://[1:2:3:4:5:6:7:0]/");
	parses("http://[ABCD::]/", false, "abcd::", 80, "/", "http://[abcd::]/");
	parses("http://h%2Dx.example/", false, "h-x.example", 80, "/", "http://h-x.example/");
}

TEST(userinfo)
{
	struct http_url_parts u;

	ASSERT_EQ(0, http_url_parts_parse("http://us%20er:p%40ss@h/", 24, &u, NULL, NULL, 0));
	ASSERT_STREQ("us er", u.user);
	ASSERT_STREQ("p@ss", u.password);
	ASSERT_STREQ("http://us%20er:p%40ss@h/", u.href);
	http_url_parts_done(&u);
	ASSERT_EQ(0, http_url_parts_parse("http://user@h/", 14, &u, NULL, NULL, 0));
	ASSERT_STREQ("user", u.user);
	ASSERT_TRUE(u.password == NULL);
	http_url_parts_done(&u);
	/* escapes in userinfo are kept as written (found by the fuzzer: href must parse to itself) */
	ASSERT_EQ(0, http_url_parts_parse("http://%eB:a@b:c@h/", 19, &u, NULL, NULL, 0));
	ASSERT_STREQ("\xeb", u.user);
	ASSERT_STREQ("a@b:c", u.password);
	ASSERT_STREQ("http://%eB:a%40b%3Ac@h/", u.href);
	http_url_parts_done(&u);
	ASSERT_EQ(0, http_url_parts_parse("http://@h/", 10, &u, NULL, NULL, 0));
	ASSERT_TRUE(u.user == NULL && u.password == NULL);
	ASSERT_STREQ("http://h/", u.href);
	http_url_parts_done(&u);
}

TEST(errors)
{
	char scheme[8];
	struct http_url_parts u;

	refused("", "relative URL without a base");
	refused("not a url", "relative URL without a base");
	refused("/echo", "relative URL without a base");
	refused("http://", "empty host");
	refused("http://:8841/echo", "empty host");
	refused("http://[::1", "invalid IPv6 address");
	refused("http://[::g]/", "invalid IPv6 address");
	refused("http://127.0.0.1:99999/", "invalid port number");
	refused("http://h:8a/", "invalid port number");
	refused("http://a b/", "invalid international domain name");
	refused("http://h\xc3\xa9/", "invalid international domain name");
	refused("http://1.2.3.256/", "invalid IPv4 address");
	refused("http://1.2.3.4.5/", "invalid IPv4 address");
	refused("http://h.09/", "invalid IPv4 address");
	ASSERT_EQ(-EPROTONOSUPPORT,
		  http_url_parts_parse("FILE:///etc/hostname", 20, &u, NULL, scheme, sizeof(scheme)));
	ASSERT_STREQ("file", scheme);
	ASSERT_EQ(-EPROTONOSUPPORT,
		  http_url_parts_parse("verylongscheme:x", 16, &u, NULL, scheme, sizeof(scheme)));
	ASSERT_STREQ("verylon", scheme); /* cut to the buffer */
}

static void joins(const char *base, const char *loc, const char *href)
{
	struct http_url_parts b, u;

	ASSERT_EQ(0, http_url_parts_parse(base, strlen(base), &b, NULL, NULL, 0));
	ASSERT_EQ(0, http_url_parts_join(&b, loc, strlen(loc), &u, NULL, NULL, 0));
	ASSERT_STREQ(href, u.href);
	http_url_parts_done(&u);
	http_url_parts_done(&b);
}

TEST(redirect_locations)
{
	joins("http://h:81/a/b?q#f", "/echo", "http://h:81/echo");
	joins("http://h:81/a/b?q#f", "c", "http://h:81/a/c");
	joins("http://h:81/a/b?q#f", "../c", "http://h:81/c");
	joins("http://h:81/a/b?q#f", "?x", "http://h:81/a/b?x");
	joins("http://h:81/a/b?q#f", "#g", "http://h:81/a/b?q#g");
	joins("http://h:81/a/b?q#f", "", "http://h:81/a/b?q");
	joins("http://h:81/a/b", "//other/x", "http://other/x");
	joins("https://h/a", "\\\\other\\x", "https://other/x");
	joins("http://u:p@h/a", "/b", "http://u:p@h/b");
	joins("http://h/a", "https://o:8443/z", "https://o:8443/z");
	joins("http://h/a", "/echo#frag", "http://h/echo#frag");
	{
		struct http_url_parts b, u;
		char scheme[16];
		const char *reason;

		ASSERT_EQ(0, http_url_parts_parse("http://h/a", 10, &b, NULL, NULL, 0));
		ASSERT_EQ(-EPROTONOSUPPORT,
			  http_url_parts_join(&b, "file:///etc/passwd", 18, &u, NULL, scheme,
					      sizeof(scheme)));
		ASSERT_STREQ("file", scheme);
		ASSERT_EQ(-EINVAL, http_url_parts_join(&b, "//", 2, &u, &reason, NULL, 0));
		ASSERT_STREQ("empty host", reason);
		ASSERT_EQ(-EINVAL, http_url_parts_join(&b, "http://[", 8, &u, &reason, NULL, 0));
		http_url_parts_done(&b);
	}
}

TEST(same_origin)
{
	struct http_url_parts a, b, c;

	ASSERT_EQ(0, http_url_parts_parse("http://H:80/x", 13, &a, NULL, NULL, 0));
	ASSERT_EQ(0, http_url_parts_parse("http://h/y", 10, &b, NULL, NULL, 0));
	ASSERT_EQ(0, http_url_parts_parse("https://h:80/", 13, &c, NULL, NULL, 0));
	ASSERT_TRUE(http_url_same_origin(&a, &b));
	ASSERT_TRUE(!http_url_same_origin(&a, &c));
	http_url_parts_done(&a);
	http_url_parts_done(&b);
	http_url_parts_done(&c);
}

TEST_MAIN()
