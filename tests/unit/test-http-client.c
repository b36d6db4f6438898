/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for proto/http-client: request formatting and injection
 * refusals, Host values, response heads, the WebSocket client handshake
 * against RFC 6455's sample, and URL splitting (body framing, proto/http-body.c:
 * test-http-body.c).
 */
#include <errno.h>
#include <stdlib.h>

#include "http-client.h"
#include "tests.h"

#define MAX 16384

static bool view_is(const char *p, size_t n, const char *s)
{
	return p && n == strlen(s) && memcmp(p, s, n) == 0;
}

#define ASSERT_VIEW(s, p, n)                                                                 \
	do {                                                                                 \
		if (!view_is((p), (n), (s)))                                                 \
			tests_fail(__FILE__, __LINE__, "expected \"%s\", got \"%.*s\"", (s), \
				   (int)(n), (p) ? (p) : "");                                \
	} while (0)

/* ---- requests ---- */

static void assert_request(const char *want, char *got, size_t got_len, int err)
{
	ASSERT_TRUE(got != NULL);
	ASSERT_EQ(0, err);
	ASSERT_EQ(strlen(want), got_len);
	ASSERT_STREQ(want, got); /* byte-exact, and NUL-terminated */
	free(got);
}

TEST(format_request_exact)
{
	static const struct http_client_header h[] = {
		{ "Content-Type", "application/json" },
		{ "Authorization", "Bearer abc\tdef" },
	};
	size_t len = 0;
	int err = 1;
	char *out;

	out = http_client_format_request("POST", "/v1/environments?x=1", "registry.example", h, 2,
					 "{\"a\":1}", 7, &len, &err);
	assert_request("POST /v1/environments?x=1 HTTP/1.1\r\n"
		       "Host: registry.example\r\n"
		       "Content-Type: application/json\r\n"
		       "Authorization: Bearer abc\tdef\r\n"
		       "Content-Length: 7\r\n"
		       "\r\n"
		       "{\"a\":1}",
		       out, len, err);

	/* no body: no Content-Length */
	out = http_client_format_request("GET", "/", "[::1]:8080", NULL, 0, NULL, 0, &len, &err);
	assert_request("GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n", out, len, err);

	/* an empty body is a body */
	out = http_client_format_request("POST", "/x", "h", h, 1, "", 0, &len, &err);
	assert_request("POST /x HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n"
		       "Content-Length: 0\r\n\r\n",
		       out, len, err);

	/* a body with NUL bytes is copied whole; ret_errno may be NULL */
	out = http_client_format_request("PUT", "*", "h", NULL, 0, "a\0b", 3, &len, NULL);
	ASSERT_TRUE(out != NULL);
	ASSERT_EQ(strlen("PUT * HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\n") + 3, len);
	ASSERT_MEMEQ("PUT * HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\na\0b", out, len + 1);
	free(out);
}

static void assert_refused(const char *method, const char *target, const char *host,
			   const char *name, const char *value, int line)
{
	struct http_client_header h = { name, value };
	size_t len = 12345;
	int err = 0;
	char *out = http_client_format_request(method, target, host, &h, name ? 1 : 0, "b", 1, &len,
					       &err);

	if (out || err != -EINVAL)
		tests_fail(__FILE__, line, "accepted (err %d): %s %s host=%s %s: %s", err, method,
			   target, host, name ? name : "-", value ? value : "-");
}

#define REFUSED(m, t, h, n, v) assert_refused(m, t, h, n, v, __LINE__)

TEST(format_request_refuses_injection)
{
	/* method */
	REFUSED("", "/", "h", NULL, NULL);
	REFUSED("GE T", "/", "h", NULL, NULL);
	REFUSED("GET\r\nX: y", "/", "h", NULL, NULL);
	REFUSED("GET/", "/", "h", NULL, NULL);
	/* target */
	REFUSED("GET", "", "h", NULL, NULL);
	REFUSED("GET", "/a b", "h", NULL, NULL);
	REFUSED("GET", "/a\r\nX: y", "h", NULL, NULL);
	REFUSED("GET", "/a\n", "h", NULL, NULL);
	REFUSED("GET", "/\x01", "h", NULL, NULL);
	REFUSED("GET", "/\x7f", "h", NULL, NULL);
	REFUSED("GET", "/\xc3\xa9", "h", NULL, NULL);
	/* host */
	REFUSED("GET", "/", "h\r\nX: y", NULL, NULL);
	REFUSED("GET", "/", "h\n", NULL, NULL);
	/* header names */
	REFUSED("GET", "/", "h", "", "v");
	REFUSED("GET", "/", "h", "X Y", "v");
	REFUSED("GET", "/", "h", "X:", "v");
	REFUSED("GET", "/", "h", "X\r\nY", "v");
	REFUSED("GET", "/", "h", "X(", "v");
	REFUSED("GET", "/", "h", "\xc3\xa9", "v");
	/* header values */
	REFUSED("GET", "/", "h", "X", "a\r\nY: b");
	REFUSED("GET", "/", "h", "X", "a\nb");
	REFUSED("GET", "/", "h", "X", "a\rb");
	REFUSED("GET", "/", "h", "X", "a\x01");
	REFUSED("GET", "/", "h", "X", "a\x7f");
	REFUSED("GET", "/", "h", "X", NULL);
}

TEST(format_request_framing_headers_are_ours)
{
	static const char *const names[] = { "Host", "host", "Content-Length", "CONTENT-LENGTH",
					     "Transfer-Encoding", "transfer-encoding" };

	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
		struct http_client_header h = { names[i], "1" };
		size_t len;
		int err = 0;

		ASSERT_TRUE(!http_client_format_request("GET", "/", "h", &h, 1, NULL, 0, &len, &err));
		ASSERT_EQ(-EINVAL, err);
	}
	{
		/* obs-text and HTAB in values are legal field content */
		struct http_client_header h = { "X-Name", "caf\xc3\xa9\tok" };
		size_t len;
		int err = 1;
		char *out = http_client_format_request("GET", "/", "h", &h, 1, NULL, 0, &len, &err);

		assert_request("GET / HTTP/1.1\r\nHost: h\r\nX-Name: caf\xc3\xa9\tok\r\n\r\n", out, len,
			       err);
	}
}

TEST(host_header)
{
	char b[64];

	ASSERT_EQ(16, http_client_host_header(b, sizeof(b), "registry.example", false, 443, true));
	ASSERT_STREQ("registry.example", b);
	ASSERT_EQ(19, http_client_host_header(b, sizeof(b), "registry.example", false, 80, true));
	ASSERT_STREQ("registry.example:80", b);
	ASSERT_EQ(7, http_client_host_header(b, sizeof(b), "a.b", false, 443, false));
	ASSERT_STREQ("a.b:443", b);
	ASSERT_EQ(3, http_client_host_header(b, sizeof(b), "a.b", false, 80, false));
	ASSERT_STREQ("a.b", b);
	/* ':' is not a reg-name character: the port is a separate argument */
	ASSERT_EQ(-EINVAL, http_client_host_header(b, sizeof(b), "127.0.0.1:8801", false, 8801, false));
	ASSERT_EQ(14, http_client_host_header(b, sizeof(b), "127.0.0.1", false, 8801, false));
	ASSERT_STREQ("127.0.0.1:8801", b);
	ASSERT_EQ(5, http_client_host_header(b, sizeof(b), "::1", true, 443, true));
	ASSERT_STREQ("[::1]", b);
	ASSERT_EQ(18, http_client_host_header(b, sizeof(b), "2001:db8::1", true, 8080, false));
	ASSERT_STREQ("[2001:db8::1]:8080", b);
	/* snprintf-style: the needed length, the text truncated */
	ASSERT_EQ(18, http_client_host_header(b, 5, "2001:db8::1", true, 8080, false));
	ASSERT_STREQ("[200", b);

	ASSERT_EQ(-EINVAL, http_client_host_header(b, sizeof(b), "", false, 80, false));
	ASSERT_EQ(-EINVAL, http_client_host_header(b, sizeof(b), "h", false, 0, false));
	ASSERT_EQ(-EINVAL, http_client_host_header(b, sizeof(b), "h\r\nX: y", false, 80, false));
	ASSERT_EQ(-EINVAL, http_client_host_header(b, sizeof(b), "a b", false, 80, false));
	ASSERT_EQ(-EINVAL, http_client_host_header(b, sizeof(b), "a/b", false, 80, false));
	ASSERT_EQ(-EINVAL, http_client_host_header(b, sizeof(b), "u@h", false, 80, false));
	ASSERT_EQ(-EINVAL, http_client_host_header(b, sizeof(b), "[::1]", true, 80, false));
	ASSERT_EQ(-EINVAL, http_client_host_header(b, sizeof(b), "fe80::1%eth0", true, 80, false));
	ASSERT_EQ(-EINVAL, http_client_host_header(b, sizeof(b), "1.2.3.4", true, 80, false));
}

/* ---- response heads ---- */

static const char ok_head[] = "HTTP/1.1 200 OK\r\n"
			      "Content-Type: application/json\r\n"
			      "content-length:  2 \r\n"
			      "X-Empty:\r\n"
			      "\r\n";

TEST(response_parse_good)
{
	char buf[256];
	struct http_response r;
	size_t n = strlen(ok_head);

	memcpy(buf, ok_head, n);
	memcpy(buf + n, "{}", 2);
	ASSERT_EQ((int)n, http_response_parse(buf, n + 2, MAX, &r));
	ASSERT_EQ(1, r.minor_version);
	ASSERT_EQ(200, r.status);
	ASSERT_VIEW("OK", r.reason, r.reason_len);
	ASSERT_EQ(3, r.n_headers);
	ASSERT_VIEW("Content-Type", r.headers[0].name, r.headers[0].name_len);
	ASSERT_VIEW("application/json", r.headers[0].value, r.headers[0].value_len);
	ASSERT_VIEW("2", http_response_header(&r, "Content-Length")->value,
		    http_response_header(&r, "CONTENT-LENGTH")->value_len);
	ASSERT_EQ(0, http_response_header(&r, "x-empty")->value_len);
	ASSERT_TRUE(http_response_header(&r, "X-Missing") == NULL);
	ASSERT_TRUE(http_response_header(&r, "Content") == NULL);

	/* every strict prefix needs more bytes */
	for (size_t i = 0; i < n; i++)
		ASSERT_EQ(-EAGAIN, http_response_parse(ok_head, i, MAX, &r));

	/* LF-only, HTTP/1.0, a reason with spaces */
	ASSERT_EQ(44, http_response_parse("HTTP/1.0 404 Not Found Here\nA: 1\nB: 2\nA: 3\n\n", 44, MAX, &r));
	ASSERT_EQ(0, r.minor_version);
	ASSERT_EQ(404, r.status);
	ASSERT_VIEW("Not Found Here", r.reason, r.reason_len);
	ASSERT_VIEW("1", http_response_header(&r, "a")->value, http_response_header(&r, "a")->value_len);

	/* no reason phrase, with and without the space */
	ASSERT_EQ(16, http_response_parse("HTTP/1.1 204\r\n\r\n", 16, MAX, &r));
	ASSERT_EQ(204, r.status);
	ASSERT_EQ(0, r.reason_len);
	ASSERT_EQ(17, http_response_parse("HTTP/1.1 101 \r\n\r\n", 17, MAX, &r));
	ASSERT_EQ(101, r.status);
	ASSERT_EQ(0, r.reason_len);
	ASSERT_EQ(18, http_response_parse("HTTP/1.1 999 x\r\n\r\n", 18, MAX, &r));
	ASSERT_EQ(999, r.status);
	/* obs-text in the reason */
	ASSERT_EQ(22, http_response_parse("HTTP/1.1 200 \xc3\xa9t\xc3\xa9\r\n\r\n", 22, MAX, &r));
	ASSERT_VIEW("\xc3\xa9t\xc3\xa9", r.reason, r.reason_len);
}

static void assert_bad(const char *s, int line)
{
	struct http_response r;
	int k = http_response_parse(s, strlen(s), MAX, &r);

	if (k != -EBADMSG)
		tests_fail(__FILE__, line, "'%s': expected -EBADMSG, got %d", s, k);
}

#define BAD(s) assert_bad(s, __LINE__)

TEST(response_parse_malformed)
{
	struct http_response r;

	BAD("HTTP/1.1 20 OK\r\n\r\n");
	BAD("HTTP/1.1 2000 OK\r\n\r\n");
	BAD("HTTP/1.1 2x0 OK\r\n\r\n");
	BAD("HTTP/1.1 099 Low\r\n\r\n");
	BAD("HTTP/1.1 -20 OK\r\n\r\n");
	BAD("HTTP/1.1  200 OK\r\n\r\n");
	BAD("HTTP/1.1\t200 OK\r\n\r\n");
	BAD("HTTP/1.1 200\tOK\r\n\r\n");
	BAD("HTTP/1.1\r\n\r\n");
	BAD("HTTP/2 200 OK\r\n\r\n");
	BAD("HTTP/2.0 200 OK\r\n\r\n");
	BAD("HTTP/1.x 200 OK\r\n\r\n");
	BAD("HTTP/1.10 200 OK\r\n\r\n");
	BAD("http/1.1 200 OK\r\n\r\n");
	BAD("ICY 200 OK\r\n\r\n");
	BAD("HTTP/1.1 200 O\x01K\r\n\r\n");
	BAD("HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n");   /* obs-fold */
	BAD("HTTP/1.1 200 OK\r\nX: a\r\n\tb\r\n\r\n");
	BAD("HTTP/1.1 200 OK\rX: y\r\n\r\n");            /* bare CR */
	BAD("HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n");
	BAD("HTTP/1.1 200 OK\r\nX: a\x01z\r\n\r\n");     /* control byte in a value */
	BAD("HTTP/1.1 200 OK\r\nX: a\x7fz\r\n\r\n");
	BAD("HTTP/1.1 200 OK\r\nX : a\r\n\r\n");
	BAD("HTTP/1.1 200 OK\r\n: a\r\n\r\n");
	BAD("HTTP/1.1 200 OK\r\nNoColon\r\n\r\n");
	/* a NUL in a value */
	ASSERT_EQ(-EBADMSG, http_response_parse("HTTP/1.1 200 OK\r\nX: a\0b\r\n\r\n", 27, MAX, &r));
	/* something that is not HTTP is refused before its first line ends */
	ASSERT_EQ(-EBADMSG, http_response_parse("\x16\x03\x01\x02", 4, MAX, &r));
	ASSERT_EQ(-EBADMSG, http_response_parse("HTTP/2", 6, MAX, &r));
	ASSERT_EQ(-EBADMSG, http_response_parse("SSH-2.0", 7, MAX, &r));
	ASSERT_EQ(-EAGAIN, http_response_parse("HTTP/1", 6, MAX, &r));
	ASSERT_EQ(-EAGAIN, http_response_parse("", 0, MAX, &r));
}

TEST(response_parse_limits)
{
	char buf[4096];
	struct http_response r;
	size_t n = (size_t)sprintf(buf, "HTTP/1.1 200 OK\r\n");

	for (int i = 0; i < HTTP_MAX_HEADERS; i++)
		n += (size_t)sprintf(buf + n, "H%d: %d\r\n", i, i);
	memcpy(buf + n, "\r\n", 2);
	ASSERT_EQ((int)n + 2, http_response_parse(buf, n + 2, MAX, &r));
	ASSERT_EQ(HTTP_MAX_HEADERS, r.n_headers);
	ASSERT_VIEW("63", r.headers[63].value, r.headers[63].value_len);
	/* one more is too many */
	memcpy(buf + n, "X: y\r\n\r\n", 8);
	ASSERT_EQ(-E2BIG, http_response_parse(buf, n + 8, MAX, &r));

	/* max_bytes: a complete head that fits, one that does not, an incomplete one */
	n = strlen(ok_head);
	ASSERT_EQ((int)n, http_response_parse(ok_head, n, n, &r));
	ASSERT_EQ(-E2BIG, http_response_parse(ok_head, n, n - 1, &r));
	ASSERT_EQ(-E2BIG, http_response_parse(ok_head, 20, 20, &r));
	ASSERT_EQ(-EAGAIN, http_response_parse(ok_head, 20, 21, &r));
}

/* A response head that must parse whole. */
static void head(const char *s, struct http_response *r)
{
	int k = http_response_parse(s, strlen(s), MAX, r);

	if (k != (int)strlen(s))
		tests_fail(__FILE__, __LINE__, "head '%s': %d", s, k);
}

/* ---- WebSocket client handshake ---- */

#define SAMPLE_KEY "dGhlIHNhbXBsZSBub25jZQ=="
#define SAMPLE_ACCEPT "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="

TEST(ws_client_key)
{
	char key[HTTP_WS_KEY_LEN + 1];
	static const uint8_t zero[16];

	memset(key, 'X', sizeof(key));
	http_ws_client_key((const uint8_t *)"the sample nonce", key);
	ASSERT_STREQ(SAMPLE_KEY, key);
	http_ws_client_key(zero, key);
	ASSERT_STREQ("AAAAAAAAAAAAAAAAAAAAAA==", key);
}

TEST(ws_client_request)
{
	static const struct http_client_header extra[] = {
		{ "Authorization", "Bearer t" },
		{ "Origin", "https://x" },
	};
	size_t len;
	int err = 1;
	char *out;

	out = http_ws_client_request("/v1/relay?token=abc", "rendezvous.example", SAMPLE_KEY, extra, 2,
				     &len, &err);
	assert_request("GET /v1/relay?token=abc HTTP/1.1\r\n"
		       "Host: rendezvous.example\r\n"
		       "Upgrade: websocket\r\n"
		       "Connection: Upgrade\r\n"
		       "Sec-WebSocket-Key: " SAMPLE_KEY "\r\n"
		       "Sec-WebSocket-Version: 13\r\n"
		       "Authorization: Bearer t\r\n"
		       "Origin: https://x\r\n"
		       "\r\n",
		       out, len, err);

	out = http_ws_client_request("/", "h:8080", SAMPLE_KEY, NULL, 0, &len, &err);
	assert_request("GET / HTTP/1.1\r\nHost: h:8080\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
		       "Sec-WebSocket-Key: " SAMPLE_KEY "\r\nSec-WebSocket-Version: 13\r\n\r\n",
		       out, len, err);

	{
		static const char *const refused[] = { "Host", "upgrade", "Connection", "Sec-WebSocket-Key",
						       "sec-websocket-version", "Sec-WebSocket-Protocol",
						       "Sec-WebSocket-Extensions", "Content-Length",
						       "Transfer-Encoding", "X\r\nY", "" };

		for (size_t i = 0; i < sizeof(refused) / sizeof(*refused); i++) {
			struct http_client_header h = { refused[i], "v" };

			err = 0;
			ASSERT_TRUE(!http_ws_client_request("/", "h", SAMPLE_KEY, &h, 1, &len, &err));
			ASSERT_EQ(-EINVAL, err);
		}
	}
	{
		struct http_client_header h = { "X", "a\r\nInjected: 1" };

		ASSERT_TRUE(!http_ws_client_request("/", "h", SAMPLE_KEY, &h, 1, &len, &err));
		ASSERT_EQ(-EINVAL, err);
	}
	ASSERT_TRUE(!http_ws_client_request("/ x", "h", SAMPLE_KEY, NULL, 0, &len, &err));
	ASSERT_EQ(-EINVAL, err);
	ASSERT_TRUE(!http_ws_client_request("/", "h", "k\r\nX: y", NULL, 0, &len, &err));
	ASSERT_EQ(-EINVAL, err);
	ASSERT_TRUE(!http_ws_client_request("/", "h", "", NULL, 0, &len, &err));
	ASSERT_EQ(-EINVAL, err);
}

static int check(const char *h, const char **reason)
{
	struct http_response r;

	head(h, &r);
	return http_ws_client_check(&r, SAMPLE_KEY, reason);
}

#define H101 "HTTP/1.1 101 Switching Protocols\r\n"

TEST(ws_client_check_accepts)
{
	const char *reason = "unset";

	/* RFC 6455 §1.3's answer */
	ASSERT_EQ(0, check(H101 "Upgrade: websocket\r\nConnection: Upgrade\r\n"
				"Sec-WebSocket-Accept: " SAMPLE_ACCEPT "\r\n\r\n",
			   &reason));
	ASSERT_TRUE(reason == NULL);
	/* uexec's own 101 (lower-case names), and list forms */
	ASSERT_EQ(0, check(H101 "connection: upgrade\r\nupgrade: websocket\r\nsec-websocket-accept: "
				SAMPLE_ACCEPT "\r\ndate: Sun, 22 Nov 2026 04:54:26 GMT\r\n\r\n",
			   &reason));
	ASSERT_EQ(0, check(H101 "Upgrade: WebSocket\r\nConnection: keep-alive, UPGRADE\r\n"
				"Sec-WebSocket-Accept: " SAMPLE_ACCEPT "\r\n\r\n",
			   &reason));
	ASSERT_EQ(0, check(H101 "Upgrade: websocket\r\nConnection: keep-alive\r\nConnection: ,Upgrade ,\r\n"
				"Sec-WebSocket-Accept: " SAMPLE_ACCEPT "\r\n\r\n",
			   NULL));
}

TEST(ws_client_check_refuses)
{
	static const struct {
		const char *head;
		int err;
		const char *reason;
	} cases[] = {
		{ "HTTP/1.1 401 Unauthorized\r\n\r\n", -ECONNREFUSED, "HTTP status 401" },
		{ "HTTP/1.1 404 Not Found\r\n\r\n", -ECONNREFUSED, "HTTP status 404" },
		{ "HTTP/1.1 200 OK\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: "
		  SAMPLE_ACCEPT "\r\n\r\n", -ECONNREFUSED, "HTTP status 200" },
		{ "HTTP/1.1 503 Unavailable\r\n\r\n", -ECONNREFUSED, "HTTP status 503" },
		{ "HTTP/1.1 100 Continue\r\n\r\n", -ECONNREFUSED, "HTTP status 100" },
		{ "HTTP/1.1 999 Odd\r\n\r\n", -ECONNREFUSED, "HTTP status 999" },
		{ H101 "Connection: Upgrade\r\nSec-WebSocket-Accept: " SAMPLE_ACCEPT "\r\n\r\n", -EPROTO, NULL },
		{ H101 "Upgrade: h2c\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " SAMPLE_ACCEPT "\r\n\r\n",
		  -EPROTO, NULL },
		{ H101 "Upgrade: websocket, h2c\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " SAMPLE_ACCEPT
		  "\r\n\r\n", -EPROTO, NULL },
		{ H101 "Upgrade: websocket\r\nSec-WebSocket-Accept: " SAMPLE_ACCEPT "\r\n\r\n", -EPROTO, NULL },
		{ H101 "Upgrade: websocket\r\nConnection: keep-alive\r\nSec-WebSocket-Accept: " SAMPLE_ACCEPT
		  "\r\n\r\n", -EPROTO, NULL },
		{ H101 "Upgrade: websocket\r\nConnection: upgraded\r\nSec-WebSocket-Accept: " SAMPLE_ACCEPT
		  "\r\n\r\n", -EPROTO, NULL },
		{ H101 "Upgrade: websocket\r\nConnection: Upgrade\r\n\r\n", -EPROTO, NULL },
		{ H101 "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: "
		       "s3pPLMBiTxaQ9kYGzzhZRbK+xOp=\r\n\r\n", -EPROTO, NULL },
		{ H101 "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: "
		       "S3PPLMBITXAQ9KYGZZHZRBK+XOO=\r\n\r\n", -EPROTO, NULL },
		{ H101 "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " SAMPLE_ACCEPT
		  "x\r\n\r\n", -EPROTO, NULL },
		{ H101 "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " SAMPLE_ACCEPT
		  "\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n", -EPROTO, NULL },
		{ H101 "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " SAMPLE_ACCEPT
		  "\r\nSec-WebSocket-Protocol: chat\r\n\r\n", -EPROTO, NULL },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		const char *reason = NULL;
		int k = check(cases[i].head, &reason);

		if (k != cases[i].err)
			tests_fail(__FILE__, __LINE__, "case %zu: expected %d, got %d", i, cases[i].err, k);
		ASSERT_TRUE(reason != NULL && *reason != '\0');
		if (cases[i].reason)
			ASSERT_STREQ(cases[i].reason, reason);
	}
	{
		/* the accept key belongs to the key we sent */
		struct http_response r;

		head(H101 "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " SAMPLE_ACCEPT
			  "\r\n\r\n",
		     &r);
		ASSERT_EQ(-EPROTO, http_ws_client_check(&r, "AAAAAAAAAAAAAAAAAAAAAA==", NULL));
		ASSERT_EQ(-EPROTO, http_ws_client_check(&r, "short", NULL));
		ASSERT_EQ(0, http_ws_client_check(&r, SAMPLE_KEY, NULL));
	}
}

/* ---- URLs ---- */

static void url_ok(const char *s, bool tls, const char *host, bool ipv6, uint16_t port,
		   const char *target, int line)
{
	struct http_url u;
	const char *reason = "unset";
	int k = http_url_parse(s, &u, &reason);

	if (k != 0)
		tests_fail(__FILE__, line, "%s refused: %d %s", s, k, reason ? reason : "");
	if (u.tls != tls || u.ipv6 != ipv6 || u.port != port || strcmp(u.host, host) != 0 ||
	    strcmp(u.target, target) != 0 || reason != NULL)
		tests_fail(__FILE__, line, "%s: tls %d host %s ipv6 %d port %u target %s", s, u.tls,
			   u.host, u.ipv6, u.port, u.target);
	http_url_done(&u);
	ASSERT_TRUE(u.host == NULL && u.target == NULL);
}

static void url_bad(const char *s, int line)
{
	struct http_url u;
	const char *reason = NULL;
	int k = http_url_parse(s, &u, &reason);

	if (k != -EINVAL || !reason || !*reason || u.host || u.target)
		tests_fail(__FILE__, line, "%s: expected -EINVAL with a reason, got %d", s, k);
}

#define URL_OK(s, tls, host, v6, port, target) url_ok(s, tls, host, v6, port, target, __LINE__)
#define URL_BAD(s) url_bad(s, __LINE__)

TEST(url_parse)
{
	URL_OK("wss://rendezvous.example/v1/relay?token=abc", true, "rendezvous.example", false, 443,
	       "/v1/relay?token=abc");
	URL_OK("ws://h", false, "h", false, 80, "/");
	URL_OK("ws://h/", false, "h", false, 80, "/");
	URL_OK("ws://h?x=1", false, "h", false, 80, "/?x=1");
	URL_OK("WSS://H.example:8443/p", true, "H.example", false, 8443, "/p");
	URL_OK("http://127.0.0.1:8801/readyz", false, "127.0.0.1", false, 8801, "/readyz");
	URL_OK("HtTpS://registry.example", true, "registry.example", false, 443, "/");
	URL_OK("https://h:443/a/b?c=d&e=%20", true, "h", false, 443, "/a/b?c=d&e=%20");
	URL_OK("ws://[::1]:9000/x", false, "::1", true, 9000, "/x");
	URL_OK("wss://[2001:db8::1]", true, "2001:db8::1", true, 443, "/");
	URL_OK("wss://[2001:db8::1]/", true, "2001:db8::1", true, 443, "/");
	URL_OK("ws://h:65535", false, "h", false, 65535, "/");
	URL_OK("ws://h:00080", false, "h", false, 80, "/");

	URL_BAD(NULL);
	URL_BAD("");
	URL_BAD("ftp://h/");
	URL_BAD("wss:/h/");
	URL_BAD("wss:h");
	URL_BAD("h/x");
	URL_BAD("wss://");
	URL_BAD("wss:///path");
	URL_BAD("wss://:443/");
	URL_BAD("wss://?q");
	URL_BAD("wss://user@h/");
	URL_BAD("wss://user:pw@h/");
	URL_BAD("wss://h:0/");
	URL_BAD("wss://h:65536/");
	URL_BAD("wss://h:99999999999999999999/");
	URL_BAD("wss://h:/");
	URL_BAD("wss://h:-1/");
	URL_BAD("wss://h:80x/");
	URL_BAD("wss://h:80:81/");
	URL_BAD("wss://h/#frag");
	URL_BAD("wss://h#frag");
	URL_BAD("wss://h/a b");
	URL_BAD("wss://h/a\tb");
	URL_BAD("wss://h/a\r\nHost: x");
	URL_BAD(" wss://h/");
	URL_BAD("wss://h/\x7f");
	URL_BAD("wss://h\xc3\xa9/");
	URL_BAD("wss://[::1/");
	URL_BAD("wss://[]/");
	URL_BAD("wss://[::1]x/");
	URL_BAD("wss://[::1]:/");
	URL_BAD("wss://[fe80::1%25eth0]/");
	URL_BAD("wss://[1.2.3.4]/");
	URL_BAD("wss://h[1]/");
	URL_BAD("wss://h\\x/");
	{
		struct http_url u;
		const char *reason = NULL;

		ASSERT_EQ(-EINVAL, http_url_parse("wss://user@h/", &u, &reason));
		ASSERT_STREQ("user info is not allowed", reason);
		ASSERT_EQ(-EINVAL, http_url_parse("wss://h/#f", &u, &reason));
		ASSERT_STREQ("fragments are not allowed", reason);
	}
}

TEST_MAIN()
