/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: HTTP/1.x request-head parsing and the WebSocket upgrade
 * decision + response formatting (proto/http.h), the path conn.c takes for
 * the first bytes of every TCP connection, and the --ws-auth check of the
 * request (proto/ws-auth.h) under a capability token and an HS256 JWT.
 */
#include <errno.h>
#include <string.h>

#include "base64.h"
#include "fuzz.h"
#include "http.h"
#include "ws-auth.h"

/* conn.c's limit on a request head and its response buffer. */
#define MAX_HEAD 16384
#define OUT_CAP 1024
/* A fixed clock: runs must not depend on the time of day. */
#define NOW ((time_t)1700000000)

static bool inside(const char *p, size_t n, const uint8_t *buf, size_t len)
{
	return (const uint8_t *)p >= buf && (const uint8_t *)p + n <= buf + len;
}

static void check_response(const struct http_upgrade *up)
{
	char out[OUT_CAP];
	int n = http_upgrade_format(up, NOW, out, sizeof(out));

	FUZZ_CHECK(n > 0 && (size_t)n < sizeof(out));
	FUZZ_CHECK(out[n] == '\0' && strlen(out) == (size_t)n);
	FUZZ_CHECK(strncmp(out, "HTTP/1.", 7) == 0);
	FUZZ_CHECK(strstr(out, "\r\n\r\n") != NULL);
	if (up->verdict == HTTP_VERDICT_METRICS) {
		FUZZ_CHECK(up->status == 200 && strcmp(up->body, "") == 0);
	} else if (up->verdict == HTTP_VERDICT_UPGRADE) {
		uint8_t digest[32]; /* >= base64_decoded_max(28) */

		FUZZ_CHECK(up->status == 101);
		FUZZ_CHECK(strlen(up->accept) == 28);
		FUZZ_CHECK(base64_decode(up->accept, 28, digest, NULL, 0) == 20);
		FUZZ_CHECK(strstr(out, up->accept) != NULL);
	} else {
		static const int statuses[] = { 200, 400, 403, 404, 405, 426, 500 };
		bool known = false;

		for (size_t i = 0; i < sizeof(statuses) / sizeof(*statuses); i++)
			known |= up->status == statuses[i];
		FUZZ_CHECK(known);
		/* The body is the last thing in the response. */
		FUZZ_CHECK(strlen(up->body) <= (size_t)n &&
			   strcmp(out + n - strlen(up->body), up->body) == 0);
	}
}

/* The token "fuzz-token" (seeds carry it) and a 32-byte HS256 key. */
#define FUZZ_TOKEN "fuzz-token"

static bool known_auth_error(const char *e)
{
	static const char *const texts[] = {
		WS_AUTH_ERR_MISSING, WS_AUTH_ERR_HEADER,  WS_AUTH_ERR_TOKEN,  WS_AUTH_ERR_JWT,
		WS_AUTH_ERR_EXPIRED, WS_AUTH_ERR_NOT_YET, WS_AUTH_ERR_ISSUER, WS_AUTH_ERR_AUDIENCE,
	};

	for (size_t i = 0; i < sizeof(texts) / sizeof(*texts); i++)
		if (strcmp(e, texts[i]) == 0)
			return true;
	return false;
}

static void check_auth(const struct http_request *req)
{
	static uint8_t key[] = "0123456789abcdef0123456789abcdef";
	struct ws_auth cap = { .mode = WS_AUTH_CAPABILITY_TOKEN };
	struct ws_auth hs = { .mode = WS_AUTH_SIGNED_BEARER_TOKEN, .secret = key, .secret_len = 32,
			      .issuer = "i", .audience = "a", .max_skew_s = 30 };
	const struct http_header *h = http_request_header(req, "Authorization");
	const char *e;

	FUZZ_CHECK(ws_auth_init() == 0);
	ws_auth_sha256((const uint8_t *)FUZZ_TOKEN, strlen(FUZZ_TOKEN), cap.token_sha256);
	e = ws_auth_check(&cap, req, NOW);
	FUZZ_CHECK(e == NULL || known_auth_error(e));
	/* (the texts are compared: a literal's address may differ between files) */
	FUZZ_CHECK(!e || (strcmp(e, WS_AUTH_ERR_JWT) != 0 && strcmp(e, WS_AUTH_ERR_EXPIRED) != 0 &&
			  strcmp(e, WS_AUTH_ERR_ISSUER) != 0));
	FUZZ_CHECK((e && strcmp(e, WS_AUTH_ERR_MISSING) == 0) == (h == NULL));
	/* Accepted: the header holds exactly the token after the scheme and spaces. */
	if (!e) {
		const char *t = memmem(h->value, h->value_len, FUZZ_TOKEN, strlen(FUZZ_TOKEN));

		FUZZ_CHECK(t && t + strlen(FUZZ_TOKEN) == h->value + h->value_len);
	}
	e = ws_auth_check(&hs, req, NOW);
	FUZZ_CHECK(e == NULL || known_auth_error(e));
	FUZZ_CHECK(!e || strcmp(e, WS_AUTH_ERR_TOKEN) != 0);
	FUZZ_CHECK(ws_auth_check(&hs, req, NOW) == e); /* deterministic */
	/* No auth configured: anything passes. */
	FUZZ_CHECK(ws_auth_check(&(struct ws_auth){ .mode = WS_AUTH_NONE }, req, NOW) == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct http_request req, again;
	struct http_upgrade up;
	int r;

	if (size > 4 * MAX_HEAD)
		return 0;

	r = http_request_parse(buf, size, MAX_HEAD, &req);
	FUZZ_CHECK(r > 0 || r == -EAGAIN || r == -EBADMSG || r == -E2BIG);
	if (r < 0) {
		char out[OUT_CAP];
		int n = http_format_bad_request(NOW, out, sizeof(out));

		FUZZ_CHECK(n > 0 && (size_t)n < sizeof(out));
		return 0;
	}

	/* Views stay inside the consumed head. */
	FUZZ_CHECK((size_t)r <= size && (size_t)r <= MAX_HEAD);
	FUZZ_CHECK(req.method_len > 0 && inside(req.method, req.method_len, data, (size_t)r));
	FUZZ_CHECK(req.path_len > 0 && inside(req.path, req.path_len, data, (size_t)r));
	FUZZ_CHECK(req.minor_version >= 0 && req.minor_version <= 9);
	FUZZ_CHECK(req.n_headers <= HTTP_MAX_HEADERS);
	for (size_t i = 0; i < req.n_headers; i++) {
		const struct http_header *h = &req.headers[i];

		FUZZ_CHECK(h->name_len > 0 && inside(h->name, h->name_len, data, (size_t)r));
		FUZZ_CHECK(inside(h->value, h->value_len, data, (size_t)r));
		if (h->value_len > 0) {
			FUZZ_CHECK(h->value[0] != ' ' && h->value[0] != '\t');
			FUZZ_CHECK(h->value[h->value_len - 1] != ' ' &&
				   h->value[h->value_len - 1] != '\t');
		}
		for (size_t k = 0; k < h->value_len; k++)
			FUZZ_CHECK(h->value[k] != '\r' && h->value[k] != '\n' && h->value[k] != '\0');
	}

	/* The head ends where it ends: trailing bytes and a tight limit change nothing... */
	FUZZ_CHECK(http_request_parse(buf, (size_t)r, MAX_HEAD, &again) == r);
	FUZZ_CHECK(again.n_headers == req.n_headers && again.path_len == req.path_len);
	if ((size_t)r < MAX_HEAD)
		FUZZ_CHECK(http_request_parse(buf, size, (size_t)r + 1, &again) == r);
	/* ...and no strict prefix of it is complete or malformed: it needs more bytes. */
	FUZZ_CHECK(http_request_parse(buf, (size_t)r - 1, MAX_HEAD, &again) == -EAGAIN);
	FUZZ_CHECK(http_request_parse(buf, (size_t)r / 2, MAX_HEAD, &again) == -EAGAIN);

	/* The first header of each name is the one looked up. */
	for (size_t i = 0; i < req.n_headers && i < 4; i++) {
		char name[64];
		const struct http_header *h;

		if (req.headers[i].name_len >= sizeof(name) ||
		    memchr(req.headers[i].name, '\0', req.headers[i].name_len))
			continue;
		memcpy(name, req.headers[i].name, req.headers[i].name_len);
		name[req.headers[i].name_len] = '\0';
		h = http_request_header(&req, name);
		FUZZ_CHECK(h && h <= &req.headers[i]);
	}

	r = http_upgrade_check(&req, &up);
	FUZZ_CHECK(r == 0 || r == -ENOMEM);
	if (r == 0)
		check_response(&up);
	check_auth(&req);
	return 0;
}
