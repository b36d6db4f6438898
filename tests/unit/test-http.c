/* SPDX-License-Identifier: MIT */
/* Unit tests for proto/http: request parsing (all split points) and the upgrade decisions of §1.2. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>


#include "http.h"
#include "http-internal.h"
#include "base64.h"

#define WS_GUID_TEST "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#include "tests.h"

#define NOW ((time_t)1795323266) /* Sun, 22 Nov 2026 04:54:26 GMT (p14_ws.out) */
#define MAX 16384

static const char good[] = "GET / HTTP/1.1\r\n"
			   "Host: 127.0.0.1:8801\r\n"
			   "Connection: Upgrade\r\n"
			   "Upgrade: websocket\r\n"
			   "Sec-WebSocket-Version: 13\r\n"
			   "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
			   "\r\n";

static void parse_ok(const char *s, struct http_request *req)
{
	int r = http_request_parse(s, strlen(s), MAX, req);

	if (r != (int)strlen(s))
		tests_fail(__FILE__, __LINE__, "parse of '%s' returned %d", s, r);
}

/* Parses s and runs the upgrade check; returns the status. */
static int decide(const char *s, struct http_upgrade *u)
{
	struct http_request req;

	parse_ok(s, &req);
	ASSERT_EQ(0, http_upgrade_check(&req, u));
	return u->status;
}

static bool hdr_is(const struct http_header *h, const char *name, const char *value)
{
	return h && h->name_len == strlen(name) && memcmp(h->name, name, h->name_len) == 0 &&
	       h->value_len == strlen(value) && memcmp(h->value, value, h->value_len) == 0;
}

TEST(parse_basic)
{
	struct http_request req;
	const struct http_header *h;

	parse_ok(good, &req);
	ASSERT_EQ(3, req.method_len);
	ASSERT_MEMEQ("GET", req.method, 3);
	ASSERT_EQ(1, req.path_len);
	ASSERT_EQ('/', req.path[0]);
	ASSERT_EQ(1, req.minor_version);
	ASSERT_EQ(5, req.n_headers);
	ASSERT_TRUE(hdr_is(&req.headers[0], "Host", "127.0.0.1:8801"));
	h = http_request_header(&req, "sec-websocket-key");
	ASSERT_TRUE(hdr_is(h, "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="));
	ASSERT_TRUE(http_request_header(&req, "Origin") == NULL);
	/* views point into the caller's buffer */
	ASSERT_TRUE(req.method == good);
}

TEST(parse_trims_and_tolerates_lf)
{
	struct http_request req;
	const char *s = "\r\n\nPOST /a/b?x=1 HTTP/1.0\nX-A:   spaced value \t\nX-Empty:\nX-B:v\n\n";

	parse_ok(s, &req);
	ASSERT_EQ(4, req.method_len);
	ASSERT_EQ(8, req.path_len);
	ASSERT_MEMEQ("/a/b?x=1", req.path, 8);
	ASSERT_EQ(0, req.minor_version);
	ASSERT_EQ(3, req.n_headers);
	ASSERT_TRUE(hdr_is(&req.headers[0], "X-A", "spaced value"));
	ASSERT_TRUE(hdr_is(&req.headers[1], "X-Empty", ""));
	ASSERT_TRUE(hdr_is(&req.headers[2], "X-B", "v"));
}

TEST(parse_consumes_only_the_head)
{
	struct http_request req;
	char buf[512];
	size_t n = strlen(good);

	memcpy(buf, good, n);
	memcpy(buf + n, "\x81\x85garbage", 9); /* a pipelined first frame */
	ASSERT_EQ((int)n, http_request_parse(buf, n + 9, MAX, &req));
}

TEST(parse_every_split_point)
{
	static const char *const reqs[] = {
		good,
		"GET /readyz HTTP/1.1\nHost: x\n\n",
		"\r\nGET / HTTP/1.0\r\nA: b\r\n\r\n",
	};

	for (size_t k = 0; k < sizeof(reqs) / sizeof(reqs[0]); k++) {
		size_t n = strlen(reqs[k]);
		struct http_request req;

		for (size_t i = 0; i < n; i++)
			ASSERT_EQ(-EAGAIN, http_request_parse(reqs[k], i, MAX, &req));
		ASSERT_EQ((int)n, http_request_parse(reqs[k], n, MAX, &req));
	}
}

TEST(parse_malformed)
{
	static const char *const bad[] = {
		"garbage\r\n\r\n",
		"GET /\r\n\r\n",
		"GET / HTTP/2.0\r\n\r\n",
		"GET / HTTP/1.1x\r\n\r\n",
		"GET / http/1.1\r\n\r\n",
		"GET  HTTP/1.1\r\n\r\n",
		"G(T / HTTP/1.1\r\n\r\n",
		"GET /\x7f HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\nNoColon\r\n\r\n",
		"GET / HTTP/1.1\r\nName : v\r\n\r\n",
		"GET / HTTP/1.1\r\n: v\r\n\r\n",
		"GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n",
		"GET / HTTP/1.1\r\nA: b\rc\r\n\r\n",
		"GET / HTTP/1.1\r\nA: b\x01\r\n\r\n",
		"GET / HTTP/1.1\r\nA: b\x7f\r\n\r\n",
		"\r\r\n",
	};

	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		struct http_request req;
		int r = http_request_parse(bad[k], strlen(bad[k]), MAX, &req);

		if (r != -EBADMSG)
			tests_fail(__FILE__, __LINE__, "case %zu: got %d", k, r);
	}
}

TEST(parse_rejects_binary_early)
{
	struct http_request req;
	static const char tls[] = "\x16\x03\x01\x02\x00\x01";

	ASSERT_EQ(-EBADMSG, http_request_parse(tls, sizeof(tls) - 1, MAX, &req));
	ASSERT_EQ(-EBADMSG, http_request_parse("GET\x01", 4, MAX, &req));
}

TEST(parse_nul_in_value)
{
	struct http_request req;
	static const char s[] = "GET / HTTP/1.1\r\nA: x\0y\r\n\r\n";

	ASSERT_EQ(-EBADMSG, http_request_parse(s, sizeof(s) - 1, MAX, &req));
}

TEST(parse_limits)
{
	struct http_request req;
	char buf[8192];
	size_t n = 0;

	n += (size_t)sprintf(buf + n, "GET / HTTP/1.1\r\n");
	for (int i = 0; i < HTTP_MAX_HEADERS; i++)
		n += (size_t)sprintf(buf + n, "H%d: v\r\n", i);
	memcpy(buf + n, "\r\n", 2);
	ASSERT_EQ((int)n + 2, http_request_parse(buf, n + 2, sizeof(buf), &req));
	ASSERT_EQ(HTTP_MAX_HEADERS, req.n_headers);

	n += (size_t)sprintf(buf + n, "One-Too-Many: v\r\n\r\n");
	ASSERT_EQ(-E2BIG, http_request_parse(buf, n, sizeof(buf), &req));

	/* incomplete head at the byte limit */
	ASSERT_EQ(-E2BIG, http_request_parse(good, 20, 20, &req));
	ASSERT_EQ(-E2BIG, http_request_parse(good, 30, 20, &req));
	ASSERT_EQ(-EAGAIN, http_request_parse(good, 19, 20, &req));
	/* complete within the limit even though more bytes follow */
	ASSERT_EQ((int)strlen(good), http_request_parse(good, sizeof(good), strlen(good), &req));
}

TEST(upgrade_ok_rfc6455_key)
{
	struct http_upgrade u;

	ASSERT_EQ(101, decide(good, &u));
	ASSERT_EQ(HTTP_VERDICT_UPGRADE, u.verdict);
	ASSERT_STREQ("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", u.accept);
}

TEST(upgrade_tolerant_header_forms)
{
	struct http_upgrade u;

	ASSERT_EQ(101, decide("GET /?token=abc HTTP/1.1\r\nconnection: keep-alive, Upgrade\r\n"
			      "UPGRADE: WebSocket\r\nsec-websocket-version: 13\r\n"
			      "sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
			      "Sec-WebSocket-Protocol: x\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n",
			      &u));
	ASSERT_STREQ("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", u.accept);
}

TEST(upgrade_long_and_empty_keys)
{
	struct http_upgrade u;
	char buf[1024], key[301];

	memset(key, 'x', 300);
	key[300] = '\0';
	snprintf(buf, sizeof(buf),
		 "GET / HTTP/1.1\r\nConnection: upgrade\r\nUpgrade: websocket\r\n"
		 "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: %s\r\n\r\n", key);
	ASSERT_EQ(101, decide(buf, &u));
	ASSERT_STREQ("MGbcKtF4YTi8oaYjV6CuEOY86WQ=", u.accept);

	ASSERT_EQ(101, decide("GET / HTTP/1.1\r\nConnection: upgrade\r\nUpgrade: websocket\r\n"
			      "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key:\r\n\r\n", &u));
	ASSERT_STREQ("Kfh9QIsMVZcl6xEPYxPHzW8SZ8w=", u.accept);
}

/* The accept key over every key length 0..300 (each SHA-1 padding boundary
 * with the GUID appended) against OpenSSL's digest of the same bytes. */
TEST(ws_accept_every_key_length_like_openssl)
{
	char key[301], cat[301 + sizeof(WS_GUID_TEST)], want[29], got[29];
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned dlen = 0;

	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (char)(33 + (i * 131 + 7) % 90);
	for (size_t n = 0; n <= 300; n++) {
		memcpy(cat, key, n);
		memcpy(cat + n, WS_GUID_TEST, strlen(WS_GUID_TEST));
		ASSERT_TRUE(EVP_Digest(cat, n + strlen(WS_GUID_TEST), d, &dlen, EVP_sha1(), NULL) == 1);
		ASSERT_EQ(20, (int)dlen);
		want[base64_encode(d, 20, want)] = '\0';
		ASSERT_EQ(0, http_ws_accept(key, n, got));
		ASSERT_STREQ(want, got);
	}
}

TEST(readyz_and_routing)
{
	struct http_upgrade u;

	ASSERT_EQ(200, decide("GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n", &u));
	ASSERT_EQ(HTTP_VERDICT_RESPOND, u.verdict);
	ASSERT_STREQ("", u.body);
	ASSERT_EQ(200, decide("GET /readyz?probe=1 HTTP/1.0\r\n\r\n", &u));
	ASSERT_EQ(200, decide("HEAD /readyz HTTP/1.1\r\n\r\n", &u));
	ASSERT_EQ(405, decide("POST /readyz HTTP/1.1\r\n\r\n", &u));
	ASSERT_STREQ("", u.body);
	/* with upgrade headers too */
	ASSERT_EQ(200, decide("GET /readyz HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
			      "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: a\r\n\r\n", &u));
	ASSERT_EQ(404, decide("GET /healthz HTTP/1.1\r\n\r\n", &u));
	ASSERT_EQ(404, decide("GET /ws HTTP/1.1\r\n\r\n", &u));
	ASSERT_EQ(404, decide("GET /some/path?x=1 HTTP/1.1\r\n\r\n", &u));
	ASSERT_EQ(404, decide("GET // HTTP/1.1\r\n\r\n", &u));
	ASSERT_EQ(404, decide("POST /x HTTP/1.1\r\n\r\n", &u));
	ASSERT_STREQ("", u.body);
}

TEST(origin_is_forbidden_everywhere)
{
	struct http_upgrade u;

	ASSERT_EQ(403, decide("GET / HTTP/1.1\r\nOrigin: http://evil\r\nConnection: Upgrade\r\n"
			      "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
			      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n", &u));
	ASSERT_STREQ("", u.body);
	ASSERT_EQ(403, decide("GET /readyz HTTP/1.1\r\norigin: x\r\n\r\n", &u));
	ASSERT_EQ(403, decide("POST /nope HTTP/1.1\r\nOrigin: null\r\n\r\n", &u));
}

TEST(upgrade_errors_in_reference_order)
{
	struct http_upgrade u;

	ASSERT_EQ(405, decide("POST / HTTP/1.1\r\nConnection: Upgrade\r\n\r\n", &u));
	ASSERT_STREQ("Request method must be `GET`", u.body);
	ASSERT_EQ(405, decide("get / HTTP/1.1\r\n\r\n", &u));

	ASSERT_EQ(400, decide("GET / HTTP/1.1\r\nHost: x\r\n\r\n", &u));
	ASSERT_STREQ("Connection header did not include 'upgrade'", u.body);
	ASSERT_EQ(400, decide("GET / HTTP/1.1\r\nConnection: keep-alive\r\nUpgrade: websocket\r\n\r\n", &u));
	ASSERT_STREQ("Connection header did not include 'upgrade'", u.body);

	ASSERT_EQ(400, decide("GET / HTTP/1.1\r\nConnection: upgrade\r\n\r\n", &u));
	ASSERT_STREQ("`Upgrade` header did not include 'websocket'", u.body);
	ASSERT_EQ(400, decide("GET / HTTP/1.1\r\nConnection: upgrade\r\nUpgrade: websocket, h2c\r\n\r\n", &u));
	ASSERT_STREQ("`Upgrade` header did not include 'websocket'", u.body);

	/* the key is checked before the version (axum 0.8) */
	ASSERT_EQ(400, decide("GET / HTTP/1.1\r\nConnection: upgrade\r\nUpgrade: websocket\r\n"
			      "Sec-WebSocket-Version: 8\r\n\r\n", &u));
	ASSERT_STREQ("`Sec-WebSocket-Key` header missing", u.body);

	ASSERT_EQ(400, decide("GET / HTTP/1.1\r\nConnection: upgrade\r\nUpgrade: websocket\r\n"
			      "Sec-WebSocket-Version: 8\r\nSec-WebSocket-Key: a\r\n\r\n", &u));
	ASSERT_STREQ("`Sec-WebSocket-Version` header did not include '13'", u.body);
	ASSERT_EQ(400, decide("GET / HTTP/1.1\r\nConnection: upgrade\r\nUpgrade: websocket\r\n"
			      "Sec-WebSocket-Key: a\r\n\r\n", &u));
	ASSERT_STREQ("`Sec-WebSocket-Version` header did not include '13'", u.body);

	/* HTTP/1.0 is refused last, after all header checks */
	ASSERT_EQ(426, decide("GET / HTTP/1.0\r\nConnection: upgrade\r\nUpgrade: websocket\r\n"
			      "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: a\r\n\r\n", &u));
	ASSERT_STREQ("WebSocket request couldn't be upgraded since no upgrade state was present", u.body);
	ASSERT_EQ(400, decide("GET / HTTP/1.0\r\n\r\n", &u));
}

TEST(format_101)
{
	struct http_upgrade u;
	char buf[512];
	static const char want[] = "HTTP/1.1 101 Switching Protocols\r\n"
				   "connection: upgrade\r\n"
				   "upgrade: websocket\r\n"
				   "sec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
				   "date: Sun, 22 Nov 2026 04:54:26 GMT\r\n"
				   "\r\n";

	decide(good, &u);
	ASSERT_EQ((int)strlen(want), http_upgrade_format(&u, NOW, buf, sizeof(buf)));
	ASSERT_STREQ(want, buf);
	ASSERT_EQ(-ENOBUFS, http_upgrade_format(&u, NOW, buf, strlen(want)));
}

TEST(format_errors)
{
	struct http_upgrade u;
	char buf[512];
	int r;

	decide("GET / HTTP/1.1\r\n\r\n", &u);
	r = http_upgrade_format(&u, NOW, buf, sizeof(buf));
	ASSERT_STREQ("HTTP/1.1 400 Bad Request\r\n"
		     "content-type: text/plain; charset=utf-8\r\n"
		     "content-length: 43\r\n"
		     "connection: close\r\n"
		     "date: Sun, 22 Nov 2026 04:54:26 GMT\r\n"
		     "\r\n"
		     "Connection header did not include 'upgrade'", buf);
	ASSERT_EQ((int)strlen(buf), r);

	decide("GET /healthz HTTP/1.1\r\n\r\n", &u);
	http_upgrade_format(&u, NOW, buf, sizeof(buf));
	ASSERT_STREQ("HTTP/1.1 404 Not Found\r\n"
		     "content-length: 0\r\n"
		     "connection: close\r\n"
		     "date: Sun, 22 Nov 2026 04:54:26 GMT\r\n"
		     "\r\n", buf);

	decide("GET /readyz HTTP/1.1\r\n\r\n", &u);
	http_upgrade_format(&u, NOW, buf, sizeof(buf));
	ASSERT_TRUE(strncmp(buf, "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n", 35) == 0);

	decide("POST / HTTP/1.1\r\n\r\n", &u);
	http_upgrade_format(&u, NOW, buf, sizeof(buf));
	ASSERT_TRUE(strstr(buf, "HTTP/1.1 405 Method Not Allowed\r\n") == buf);
	ASSERT_TRUE(strstr(buf, "content-length: 28\r\n") != NULL);

	decide("GET / HTTP/1.1\r\nOrigin: x\r\n\r\n", &u);
	http_upgrade_format(&u, NOW, buf, sizeof(buf));
	ASSERT_TRUE(strstr(buf, "HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n") == buf);

	decide("GET / HTTP/1.0\r\nConnection: upgrade\r\nUpgrade: websocket\r\n"
	       "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: a\r\n\r\n", &u);
	http_upgrade_format(&u, NOW, buf, sizeof(buf));
	ASSERT_TRUE(strstr(buf, "HTTP/1.0 426 Upgrade Required\r\n") == buf);
	ASSERT_TRUE(strstr(buf, "content-length: 73\r\n") != NULL);

	/* a caller-built 401 (auth lives in src/) */
	u = (struct http_upgrade){ .verdict = HTTP_VERDICT_RESPOND, .status = 401,
				   .body = "missing websocket bearer token" };
	http_upgrade_format(&u, NOW, buf, sizeof(buf));
	ASSERT_TRUE(strstr(buf, "HTTP/1.1 401 Unauthorized\r\ncontent-type: text/plain; "
				"charset=utf-8\r\ncontent-length: 30\r\n") == buf);
	ASSERT_EQ(-ENOBUFS, http_upgrade_format(&u, NOW, buf, 10));
}

TEST(format_bad_request)
{
	char buf[256];
	static const char want[] = "HTTP/1.1 400 Bad Request\r\n"
				   "connection: close\r\n"
				   "content-length: 0\r\n"
				   "date: Thu, 01 Jan 1970 00:00:00 GMT\r\n"
				   "\r\n";

	ASSERT_EQ((int)strlen(want), http_format_bad_request(0, buf, sizeof(buf)));
	ASSERT_STREQ(want, buf);
	ASSERT_EQ(-ENOBUFS, http_format_bad_request(0, buf, 5));
}

TEST_MAIN()
