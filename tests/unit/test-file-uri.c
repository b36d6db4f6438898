/* SPDX-License-Identifier: MIT */
/* Unit tests for proto/file-uri: every form and error of PROTOCOL.md §5.1, plus round trips. */
#include <errno.h>
#include <stdlib.h>

#include "file-uri.h"
#include "tests.h"

static void ok(const char *uri, bool native, const char *want)
{
	char *path = NULL, *err = NULL;
	int r = file_uri_to_path(uri, native, &path, &err);

	if (r != 0)
		tests_fail(__FILE__, __LINE__, "'%s': r=%d err=%s", uri, r, err ? err : "(null)");
	ASSERT_TRUE(err == NULL);
	ASSERT_STREQ(want, path);
	free(path);
}

static void bad(const char *uri, bool native, int want_r, const char *want_msg)
{
	char *path = NULL, *err = NULL;
	int r = file_uri_to_path(uri, native, &path, &err);

	if (r != want_r)
		tests_fail(__FILE__, __LINE__, "'%s': r=%d (want %d) path=%s err=%s", uri, r, want_r,
			   path ? path : "(null)", err ? err : "(null)");
	ASSERT_TRUE(path == NULL);
	ASSERT_STREQ(want_msg, err);
	free(err);
}

static void from(const char *path, const char *want)
{
	char *u = file_uri_from_path(path);

	ASSERT_STREQ(want, u);
	free(u);
}

#define RELATIVE "invalid URI: relative URL without a base"

TEST(accepted_spellings)
{
	/* p07_fs.out, "paths": all name /root/es-scratch/fs/a.txt */
	ok("file:///root/es-scratch/fs/a.txt", false, "/root/es-scratch/fs/a.txt");
	ok("file://localhost/root/es-scratch/fs/a.txt", false, "/root/es-scratch/fs/a.txt");
	ok("file://LocalHost/root/x", false, "/root/x");
	ok("file:/root/es-scratch/fs/a.txt", false, "/root/es-scratch/fs/a.txt");
	ok("file:////root/es-scratch/fs/a.txt", false, "/root/es-scratch/fs/a.txt");
	ok("FILE:///root/es-scratch/fs/a.txt", false, "/root/es-scratch/fs/a.txt");
	ok("File:///root/x", false, "/root/x");
	ok("file:///", false, "/");
	ok("file://", false, "/");
	ok("file:", false, "/");
	ok("file:root/x", false, "/root/x");
	ok("file://localhost", false, "/");
}

TEST(percent_decoding)
{
	ok("file:///root/es-scratch/fs/with%20space.txt", false, "/root/es-scratch/fs/with space.txt");
	ok("file:///root/es-scratch/fs/with space.txt", false, "/root/es-scratch/fs/with space.txt");
	ok("file:///root/es-scratch/fs/unicod%C3%A9.txt", false, "/root/es-scratch/fs/unicod\xc3\xa9.txt");
	ok("file:///root/es-scratch/fs/unicod\xc3\xa9.txt", false, "/root/es-scratch/fs/unicod\xc3\xa9.txt");
	ok("file:///root/es-scratch/fs/pct%2541.txt", false, "/root/es-scratch/fs/pct%41.txt");
	ok("file:///root/es-scratch/fs/a%2Etxt", false, "/root/es-scratch/fs/a.txt");
	ok("file:///root/es-scratch/fs/dir%2Fx.txt", false, "/root/es-scratch/fs/dir/x.txt");
	ok("file:///root/dir%2fx.txt", false, "/root/dir/x.txt");
	ok("file:///a%zz", false, "/a%zz");   /* not an escape: kept */
	ok("file:///a%", false, "/a%");
	ok("file:///a%4", false, "/a%4");
	ok("file:///%41%42", false, "/AB");
	ok("file:///a%23b%3Fc", false, "/a#b?c");
}

TEST(dot_segments)
{
	ok("file:///root/es-scratch/fs/dir/../a.txt", false, "/root/es-scratch/fs/a.txt");
	ok("file:///root/es-scratch/fs/dir/./x.txt", false, "/root/es-scratch/fs/dir/x.txt");
	ok("file:///root/es-scratch/fs/dir/", false, "/root/es-scratch/fs/dir");
	ok("file:///a/b/..", false, "/a");
	ok("file:///a/b/.", false, "/a/b");
	ok("file:///../../x", false, "/x");
	ok("file:///..", false, "/");
	ok("file:///a/%2e%2E/b", false, "/b");
	ok("file:///a/.%2e/b", false, "/b");
	ok("file:///a/%2E./b", false, "/b");
	ok("file:///a/%2e/b", false, "/a/b");
	ok("file:///a/...", false, "/a/...");
	ok("file:///a//b", false, "/a/b");
	/* "%2F" turns into a separator only after the URL's dot-segment pass; normalised again */
	ok("file:///a/b%2F..%2Fc", false, "/a/c");
	ok("file:///a/%2E%2E%2F%2E%2E%2Fetc", false, "/etc");
}

TEST(whatwg_preprocessing)
{
	ok("  file:///a  ", false, "/a");
	ok("file:///a\tb\nc\r", false, "/abc");
	ok("file:///a\\b\\..\\c", false, "/a/c"); /* '\' is a separator in special URLs */
	ok("file:\\\\\\a", false, "/a");
	/* drive letters (tests/reference/steps.py file_uri_edges): "C|" is a plain name... */
	ok("file:///C|/x", false, "/C|/x");
	/* ...and "C:" first is refused on Linux (TEST(drive_letters)) */
	bad("file://C:/x", false, -EREMOTE, "'file:///C:/x' is invalid on 'linux'");
	bad("file:///C:/..", false, -EREMOTE, "'file:///C:/' is invalid on 'linux'");
	ok("file:///C|/..", false, "/C|");   /* a drive letter is never popped */
	bad("file:///a/../C:", false, -EREMOTE, "'file:///C:' is invalid on 'linux'");
}

TEST(relative_errors)
{
	/* p07_fs.out: native paths, relative strings, ~, "", //root/x, ///root/x */
	bad("/root/es-scratch/fs/a.txt", false, -EINVAL, RELATIVE);
	bad("/root/es-scratch/fs/dir/", false, -EINVAL, RELATIVE);
	bad("/", false, -EINVAL, RELATIVE);
	bad("a.txt", false, -EINVAL, RELATIVE);
	bad("./a.txt", false, -EINVAL, RELATIVE);
	bad("~/x", false, -EINVAL, RELATIVE);
	bad("", false, -EINVAL, RELATIVE);
	bad("   ", false, -EINVAL, RELATIVE);
	bad("//root/x", false, -EINVAL, RELATIVE);
	bad("///root/es-scratch/fs/a.txt", false, -EINVAL, RELATIVE);
	bad("1file:///x", false, -EINVAL, RELATIVE);
	bad(":x", false, -EINVAL, RELATIVE);
}

TEST(scheme_errors)
{
	bad("http://127.0.0.1//root/es-scratch/fs/a.txt", false, -EINVAL,
	    "unsupported path URI scheme `http`");
	bad("HTTPS://example.com/x", false, -EINVAL, "unsupported path URI scheme `https`");
	bad("c:foo", false, -EINVAL, "unsupported path URI scheme `c`");
	bad("artifact://store/object-1", false, -EINVAL, "unsupported path URI scheme `artifact`");
	bad("filex:///a", false, -EINVAL, "unsupported path URI scheme `filex`");
	bad("http://", false, -EINVAL, "invalid URI: empty host");
	bad("http:///?x", false, -EINVAL, "invalid URI: empty host");
}

TEST(query_and_fragment)
{
	bad("file:///root/es-scratch/fs/a.txt?q=1", false, -EINVAL,
	    "query parameters are not allowed in path URIs");
	bad("file:///a?", false, -EINVAL, "query parameters are not allowed in path URIs");
	bad("file:///a?x#y", false, -EINVAL, "query parameters are not allowed in path URIs");
	bad("file:///root/es-scratch/fs/a.txt#frag", false, -EINVAL,
	    "fragments are not allowed in path URIs");
	bad("file:///a#", false, -EINVAL, "fragments are not allowed in path URIs");
	bad("file:///a#x?y", false, -EINVAL, "fragments are not allowed in path URIs");
	/* query/fragment are checked before the host */
	bad("file://otherhost/a?x", false, -EINVAL, "query parameters are not allowed in path URIs");
}

TEST(remote_hosts)
{
	bad("file://otherhost/root/es-scratch/fs/a.txt", false, -EREMOTE,
	    "'file://otherhost/root/es-scratch/fs/a.txt' is invalid on 'linux'");
	bad("file://server/share", false, -EREMOTE, "'file://server/share' is invalid on 'linux'");
	/* the message quotes the serialized URL, not the input */
	bad("FILE://OtherHost/a/../b c", false, -EREMOTE, "'file://otherhost/b%20c' is invalid on 'linux'");
	bad("file://host", false, -EREMOTE, "'file://host/' is invalid on 'linux'");
	bad("file://[::1]/x", false, -EREMOTE, "'file://[::1]/x' is invalid on 'linux'");
	bad("file://127.0.0.1/x", false, -EREMOTE, "'file://127.0.0.1/x' is invalid on 'linux'");
}

TEST(host_parse_errors)
{
	/* the reference 0.169.0 (tests/reference/steps.py file_uri_edges): IDNA fails first */
	bad("file://ho st/x", false, -EINVAL, "invalid URI: invalid international domain name");
	bad("file://host:80/x", false, -EINVAL, "invalid URI: invalid international domain name");
	bad("file://user@host/x", false, -EINVAL, "invalid URI: invalid international domain name");
	bad("file://h%00/x", false, -EINVAL, "invalid URI: invalid international domain name");
	bad("file://h%/x", false, -EINVAL, "invalid URI: invalid international domain name");
	bad("file://[zz]/x", false, -EINVAL, "invalid URI: invalid IPv6 address");
	bad("file://[::1/x", false, -EINVAL, "invalid URI: invalid IPv6 address");
}

TEST(nul_rejected)
{
	bad("file:///tmp/%00", false, -EINVAL, "'file:///tmp/%00' is invalid on 'linux'");
	bad("file:///tmp/a%00b/c", false, -EINVAL, "'file:///tmp/a%00b/c' is invalid on 'linux'");
}

TEST(native_paths)
{
	ok("/root/x", true, "/root/x");
	ok("/", true, "/");
	ok("/root//x/./y/../z/", true, "/root/x/z");
	ok("/..", true, "/");
	ok("/a%20b", true, "/a%20b"); /* native paths are not percent-decoded */
	ok("/a\\b", true, "/a\\b");
	ok("file:///a%20b", true, "/a b");
	bad("//root/x", true, -EINVAL, RELATIVE);
	bad("root/x", true, -EINVAL, RELATIVE);
	bad("", true, -EINVAL, RELATIVE);
}

TEST(from_path)
{
	from("/", "file:///");
	from("/root/es-scratch/fs/a.txt", "file:///root/es-scratch/fs/a.txt");
	from("/root/es-scratch/fs/unicod\xc3\xa9.txt", "file:///root/es-scratch/fs/unicod%C3%A9.txt");
	from("/a b", "file:///a%20b");
	from("/a%b", "file:///a%25b");
	from("/a\\b", "file:///a%5Cb");
	from("/q?#", "file:///q%3F%23");
	from("/\"<>`{}", "file:///%22%3C%3E%60%7B%7D");
	from("/\x01\x7f", "file:///%01%7F");
	from("/keep!$&'()*+,;=:@[]^|~", "file:///keep!$&'()*+,;=:@[]^|~");
	from("/a//b/./c/", "file:///a/b/c");
	from("/a/../b", "file:///a/../b");
	from("//", "file:///");
}

TEST(from_path_relative)
{
	errno = 0;
	ASSERT_TRUE(file_uri_from_path("relative/x") == NULL);
	ASSERT_EQ(EINVAL, errno);
	ASSERT_TRUE(file_uri_from_path("") == NULL);
}

TEST(round_trips)
{
	static const char *const paths[] = {
		"/",
		"/root",
		"/root/es-scratch/fs/with space.txt",
		"/tmp/pct%41.txt",
		"/tmp/a%2Fb",
		"/tmp/a\\b",
		"/tmp/q?x#y",
		"/tmp/\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80",
		"/tmp/\x01\x1f\x7f",
		"/tmp/\"<>`{}^|",
		"/tmp/...",
		"/tmp/..a",
		"/tmp/%2e%2e",
		"/tmp/C:",
		"/tmp/ lead and trail ",
		"/\xff\xfe",
	};

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		char *u = file_uri_from_path(paths[i]), *back = NULL, *err = NULL;

		ASSERT_TRUE(u != NULL);
		if (file_uri_to_path(u, false, &back, &err) != 0)
			tests_fail(__FILE__, __LINE__, "%s -> %s: %s", paths[i], u, err);
		ASSERT_STREQ(paths[i], back);
		free(u);
		free(back);
	}
}

TEST(ipv4_hosts)
{
	/* hosts that end in a number are IPv4 addresses, re-serialised (WHATWG) */
	bad("file://1.2.3/x", false, -EREMOTE, "'file://1.2.0.3/x' is invalid on 'linux'");
	bad("file://0x7f.1/x", false, -EREMOTE, "'file://127.0.0.1/x' is invalid on 'linux'");
	bad("file://127.0.0.1./x", false, -EREMOTE, "'file://127.0.0.1/x' is invalid on 'linux'");
	bad("file://4294967295/x", false, -EREMOTE, "'file://255.255.255.255/x' is invalid on 'linux'");
	bad("file://010.0x10.1/x", false, -EREMOTE, "'file://8.16.0.1/x' is invalid on 'linux'");
	bad("file://0x/x", false, -EREMOTE, "'file://0.0.0.0/x' is invalid on 'linux'");
	bad("file://%31.2.3.4/x", false, -EREMOTE, "'file://1.2.3.4/x' is invalid on 'linux'");
	/* not ending in a number: a domain */
	bad("file://1.a/x", false, -EREMOTE, "'file://1.a/x' is invalid on 'linux'");
	bad("file://a.0x1g/x", false, -EREMOTE, "'file://a.0x1g/x' is invalid on 'linux'");
	bad("file://1../x", false, -EREMOTE, "'file://1../x' is invalid on 'linux'");
	/* ending in a number, but no address */
	bad("file://999.1.1.1/x", false, -EINVAL, "invalid URI: invalid IPv4 address");
	bad("file://1.2.3.4.5/x", false, -EINVAL, "invalid URI: invalid IPv4 address");
	bad("file://4294967296/x", false, -EINVAL, "invalid URI: invalid IPv4 address");
	bad("file://a.1/x", false, -EINVAL, "invalid URI: invalid IPv4 address");
	bad("file://1..2/x", false, -EINVAL, "invalid URI: invalid IPv4 address");
	bad("file://09/x", false, -EINVAL, "invalid URI: invalid IPv4 address");
	bad("file://1.2.3.256/x", false, -EINVAL, "invalid URI: invalid IPv4 address");
	bad("file://0xffffffffff/x", false, -EINVAL, "invalid URI: invalid IPv4 address");
	bad("file://.1/x", false, -EINVAL, "invalid URI: invalid IPv4 address");
}

TEST(drive_letters)
{
	/* a Windows drive letter first is refused on Linux, shown upper-case */
	bad("file:///C:/x", false, -EREMOTE, "'file:///C:/x' is invalid on 'linux'");
	bad("file:///c:/x", false, -EREMOTE, "'file:///C:/x' is invalid on 'linux'");
	bad("file:///c:", false, -EREMOTE, "'file:///C:' is invalid on 'linux'");
	bad("file://C:/x", false, -EREMOTE, "'file:///C:/x' is invalid on 'linux'");
	bad("file:C:/x", false, -EREMOTE, "'file:///C:/x' is invalid on 'linux'");
	bad("file:///C:/../x", false, -EREMOTE, "'file:///C:/x' is invalid on 'linux'");
	/* not a drive letter there */
	ok("file:///C|/x", false, "/C|/x");
	ok("file:///C:x", false, "/C:x");
	ok("file:///CC:/x", false, "/CC:/x");
	ok("file:///tmp/C:/x", false, "/tmp/C:/x");
}

TEST(nul_bytes_in_the_string)
{
	char *path = NULL, *err = NULL;

	/* inside: percent-encoded, then refused like %00 */
	ASSERT_EQ(-EINVAL, file_uri_to_pathn("file:///tmp/a\0b", sizeof("file:///tmp/a\0b") - 1, false, &path, &err));
	ASSERT_STREQ("'file:///tmp/a%00b' is invalid on 'linux'", err);
	free(err);
	err = NULL;
	/* at both ends: trimmed like any C0 control */
	ASSERT_EQ(0, file_uri_to_pathn("\0file:///tmp\0", sizeof("\0file:///tmp\0") - 1, false, &path, &err));
	ASSERT_STREQ("/tmp", path);
	free(path);
	path = NULL;
	/* in a host: an IDN error */
	ASSERT_EQ(-EINVAL, file_uri_to_pathn("file://h\0/x", sizeof("file://h\0/x") - 1, false, &path, &err));
	ASSERT_STREQ("invalid URI: invalid international domain name", err);
	free(err);
	err = NULL;
	/* a native path holding one (uexec's extension) */
	ASSERT_EQ(-EINVAL, file_uri_to_pathn("/tmp/a\0b", sizeof("/tmp/a\0b") - 1, true, &path, &err));
	ASSERT_STREQ("invalid URI: path contains a NUL byte", err);
	free(err);
	ASSERT_TRUE(path == NULL);
}

TEST_MAIN()
