/* SPDX-License-Identifier: MIT */
/*
 * http/request's params (PROTOCOL.md §6.23): decoded and checked with the
 * reference's texts and codes, in its order (serde's decoding first, then
 * the method, the URL, the headers), then handed to http-req.c.
 *
 * valueEnvVar appends the value of an environment variable of the server
 * process to a header's value, as the reference does: the server runs the
 * request outside any sandbox (docs/SECURITY.md, "http/request").
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "conn.h"
#include "http-req.h"
#include "macro.h"
#include "params.h"
#include "rpc.h"
#include "server.h"

#define ERRSZ 512

/* RFC 9110 token characters (methods and header names). */
static bool is_token(const char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (!((ch >= '0' && ch <= '9') || ((ch | 32) >= 'a' && (ch | 32) <= 'z') ||
		      (ch && strchr("!#$%&'*+-.^_`|~", ch))))
			return false;
	}
	return true;
}

/* A header value hyper takes: no control bytes but HTAB, no DEL. */
static bool value_ok(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
			return false;
	}
	return true;
}

/* serde's checks of the headers list: a sequence of {name, value, valueEnvVar?}. */
static int decode_headers(json_t *v, char *err, size_t errsz)
{
	static const struct pfield fields[] = {
		{ "name", P_STRING, true, NULL },
		{ "value", P_STRING, true, NULL },
		{ "valueEnvVar", P_STRING, false, NULL },
	};
	json_t *f[ELEMENTSOF(fields)], *e;
	size_t i;

	if (!json_is_array(v)) {
		params_type_error(v, "a sequence", err, errsz);
		return -EINVAL;
	}
	json_array_foreach(v, i, e)
		if (params_decode_nested(e, "HttpHeader", fields, ELEMENTSOF(fields), f, err, errsz) < 0)
			return -EINVAL;
	return 0;
}

/*
 * One header as it will be sent (h): its name lower-cased, valueEnvVar's
 * value appended, total counting the bytes of the headers so far. Replies
 * and returns -EINVAL on a refusal; -ENOMEM is not replied.
 */
static int build_header(struct conn *c, json_t *id, json_t *e, struct http_req_header *h,
			size_t *total)
{
	json_t *name = json_object_get(e, "name"), *value = json_object_get(e, "value");
	json_t *env = json_object_get(e, "valueEnvVar");
	const char *n = json_string_value(name), *extra = NULL;
	size_t nl = json_string_length(name), vl = json_string_length(value), xl = 0;

	if (!is_token(n, nl)) {
		rpc_reply_error(c, id, RPC_INVALID_PARAMS,
				"http/request header name is invalid: invalid HTTP header name");
		return -EINVAL;
	}
	if (env && !json_is_null(env)) {
		/* A name with a NUL or '=' names no variable. */
		const char *en = json_string_value(env);

		if (strlen(en) == json_string_length(env) && !strchr(en, '='))
			extra = getenv(en);
		if (!extra || !*en) {
			rpc_reply_error(c, id, RPC_INVALID_PARAMS,
					"http/request header %s requires executor environment "
					"variable %s",
					n, en);
			return -EINVAL;
		}
		xl = strlen(extra);
	}
	if (nl + vl + xl > HTTP_REQ_MAX_HEADER_BYTES) {
		rpc_reply_error(c, id, RPC_INVALID_PARAMS,
				"http/request header %s is too large (at most %d bytes)", n,
				HTTP_REQ_MAX_HEADER_BYTES);
		return -EINVAL;
	}
	*total += nl + vl + xl;
	if (*total > HTTP_REQ_MAX_HEADERS_TOTAL) {
		rpc_reply_error(c, id, RPC_INVALID_PARAMS,
				"http/request headers are too large (at most %d bytes together)",
				HTTP_REQ_MAX_HEADERS_TOTAL);
		return -EINVAL;
	}
	h->name = malloc(nl + 1);
	h->value = malloc(vl + xl + 1);
	if (!h->name || !h->value) {
		free(h->name);
		free(h->value);
		return -ENOMEM;
	}
	for (size_t k = 0; k <= nl; k++)
		h->name[k] = (char)(n[k] >= 'A' && n[k] <= 'Z' ? n[k] + 32 : n[k]);
	memcpy(h->value, json_string_value(value), vl);
	if (xl)
		memcpy(h->value + vl, extra, xl);
	h->value[vl + xl] = '\0';
	h->value_len = vl + xl;
	return 0;
}

/*
 * The headers as they will be sent (build_header). Replies and returns
 * -EINVAL (or -ENOMEM) on a refusal.
 */
static int build_headers(struct conn *c, json_t *id, json_t *list, struct http_req *r)
{
	size_t i, total = 0;
	json_t *e;
	int q;

	if (!list)
		return 0;
	if (json_array_size(list) > HTTP_REQ_MAX_HEADERS) {
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "http/request has too many headers (at most %d)",
				HTTP_REQ_MAX_HEADERS);
		return -EINVAL;
	}
	r->hdrs = calloc(json_array_size(list) + 1, sizeof(*r->hdrs));
	if (!r->hdrs)
		goto oom;
	json_array_foreach(list, i, e) {
		struct http_req_header *h = &r->hdrs[r->n_hdrs];

		q = build_header(c, id, e, h, &total);
		if (q == -ENOMEM)
			goto oom;
		if (q < 0)
			return q;
		r->n_hdrs++;
		if (!value_ok(h->value, h->value_len)) {
			rpc_reply_error(c, id, RPC_INVALID_PARAMS,
					"http/request header value is invalid for %s: failed to parse "
					"header value",
					json_string_value(json_object_get(e, "name")));
			return -EINVAL;
		}
	}
	return 0;
oom:
	rpc_reply_errno_internal(c, id, ENOMEM);
	return -ENOMEM;
}

/* A field as sent, null included: by name, or by position in serde's sequence form. */
static json_t *raw_field(json_t *params, const char *name, size_t index)
{
	if (json_is_object(params))
		return json_object_get(params, name);
	return json_is_array(params) ? json_array_get(params, index) : NULL;
}

enum { F_METHOD, F_URL, F_HEADERS, F_BODY, F_TIMEOUT, F_REDIRECT, F_REQUEST_ID, F_STREAM, F_N };

/*
 * serde's decoding: the fields (f), the headers as sent (*ret_headers) and
 * whether redirects are followed. Replies and returns -EINVAL on an error.
 */
static int decode_request(struct conn *c, json_t *id, json_t *params, json_t **f,
			  json_t **ret_headers, bool *ret_follow)
{
	static const struct pfield fields[F_N] = {
		/* The reference's declaration order (its sequence form and missing-field order). */
		[F_METHOD] = { "method", P_STRING, true, NULL },
		[F_URL] = { "url", P_STRING, true, NULL },
		[F_HEADERS] = { "headers", P_SEQ, false, NULL },
		[F_BODY] = { "bodyBase64", P_STRING, false, NULL },
		[F_TIMEOUT] = { "timeoutMs", P_U64, false, NULL },
		/* a unit enum: "follow" or {"follow": null} */
		[F_REDIRECT] = { "redirectPolicy", P_ANY, false, NULL },
		[F_REQUEST_ID] = { "requestId", P_STRING, true, NULL },
		[F_STREAM] = { "streamResponse", P_BOOL_DEFAULT, false, NULL },
	};
	static const char *const policies[] = { "follow", "stop", NULL };
	char err[ERRSZ];
	size_t errlen;
	json_t *v;
	int q;

	if (!params_decode_or_reply(c, id, params, "HttpRequestParams", fields, F_N, f))
		return -EINVAL;
	/* Not Option<>s: null is a type error there. */
	*ret_headers = raw_field(params, "headers", F_HEADERS);
	if (*ret_headers && decode_headers(*ret_headers, err, sizeof(err)) < 0) {
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "%s", err);
		return -EINVAL;
	}
	v = raw_field(params, "redirectPolicy", F_REDIRECT);
	q = v ? params_unit_enum(v, policies, err, sizeof(err), &errlen) : 0;
	if (q < 0) {
		rpc_reply_error_text(c, id, RPC_INVALID_PARAMS, err, errlen);
		return -EINVAL;
	}
	*ret_follow = q == 0;
	return 0;
}

/*
 * The body, the method and the URL, checked in the reference's order.
 * Replies and returns -EINVAL on a refusal; -ENOMEM is not replied.
 */
static int request_target(struct conn *c, json_t *id, json_t **f, struct http_req *r)
{
	char scheme[64];
	const char *reason = NULL;
	int q;

	/* (its -ENOMEM is replied to as well) */
	if (f[F_BODY] && params_base64_or_reply(c, id, f[F_BODY], RPC_INVALID_PARAMS, "", &r->body,
						&r->body_len) < 0)
		return -EINVAL;
	if (!is_token(json_string_value(f[F_METHOD]), json_string_length(f[F_METHOD]))) {
		rpc_reply_error(c, id, RPC_INVALID_PARAMS,
				"http/request method is invalid: invalid HTTP method");
		return -EINVAL;
	}
	q = http_url_parts_parse(json_string_value(f[F_URL]), json_string_length(f[F_URL]), &r->url,
				 &reason, scheme, sizeof(scheme));
	if (q == -EPROTONOSUPPORT) {
		rpc_reply_error(c, id, RPC_INVALID_PARAMS,
				"http/request only supports http and https URLs, got %s", scheme);
		return -EINVAL;
	}
	if (q == -EINVAL) {
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "http/request url is invalid: %s", reason);
		return -EINVAL;
	}
	return q < 0 ? -ENOMEM : 0;
}

/*
 * Room for the request: its stream id free, the limits on requests and
 * bodies in flight, a timeout that is not zero. Replies and returns
 * -EINVAL on a refusal.
 */
static int request_admit(struct conn *c, json_t *id, json_t **f, struct http_req *r)
{
	json_t *rid = f[F_REQUEST_ID];

	if (r->stream && http_req_stream_active(c, json_string_value(rid), json_string_length(rid))) {
		rpc_reply_error(c, id, RPC_INVALID_PARAMS,
				"http/request streamResponse requestId `%s` is already active",
				json_string_value(rid));
		return -EINVAL;
	}
	if (http_req_count(c) >= HTTP_REQ_MAX_PER_CONN) {
		rpc_reply_error(c, id, RPC_INTERNAL_ERROR,
				"http/request failed: too many requests in flight on this connection "
				"(at most %d)",
				HTTP_REQ_MAX_PER_CONN);
		return -EINVAL;
	}
	/* Bodies wait for their connection (and stay for 307/308): one message's worth per client. */
	if (http_req_bodies(c) + r->body_len > c->srv->cfg.max_message_bytes) {
		rpc_reply_error(c, id, RPC_INTERNAL_ERROR,
				"http/request failed: request bodies in flight on this connection would "
				"exceed %" PRIu64 " bytes (--max-message-bytes)",
				c->srv->cfg.max_message_bytes);
		return -EINVAL;
	}
	if (http_req_count(NULL) >= HTTP_REQ_MAX_TOTAL) {
		rpc_reply_error(c, id, RPC_INTERNAL_ERROR,
				"http/request failed: too many requests in flight on this server "
				"(at most %d)",
				HTTP_REQ_MAX_TOTAL);
		return -EINVAL;
	}
	r->timeout_ms = params_u64(f[F_TIMEOUT], 0);
	if (f[F_TIMEOUT] && r->timeout_ms == 0) {
		/* The reference's answer to a zero timeout, before anything is sent. */
		rpc_reply_error(c, id, RPC_INTERNAL_ERROR,
				"http/request failed: route-aware request timed out");
		return -EINVAL;
	}
	return 0;
}

static void rpc_http_request(struct conn *c, json_t *id, json_t *params)
{
	json_t *f[F_N], *headers;
	struct http_req *r = NULL;
	bool follow;
	int q;

	if (decode_request(c, id, params, f, &headers, &follow) < 0)
		return;
	r = calloc(1, sizeof(*r));
	if (!r) {
		rpc_reply_errno_internal(c, id, ENOMEM);
		return;
	}
	list_init(&r->link);
	r->srv = c->srv;
	r->follow = follow;
	r->stream = params_bool(f[F_STREAM], false);
	q = request_target(c, id, f, r);
	if (q == -ENOMEM)
		goto oom;
	/* build_headers replies to its -ENOMEM too. */
	if (q < 0 || build_headers(c, id, headers, r) < 0 || request_admit(c, id, f, r) < 0)
		goto out;
	r->method = strdup(json_string_value(f[F_METHOD]));
	r->rid_len = json_string_length(f[F_REQUEST_ID]);
	r->rid = malloc(r->rid_len + 1);
	r->rid_json = json_dumps(f[F_REQUEST_ID], JSON_ENCODE_ANY | JSON_COMPACT);
	if (!r->method || !r->rid || !r->rid_json)
		goto oom;
	memcpy(r->rid, json_string_value(f[F_REQUEST_ID]), r->rid_len + 1);
	r->conn = c;
	r->id = json_incref(id);
	http_req_start(r);
	return;
oom:
	rpc_reply_errno_internal(c, id, ENOMEM);
out:
	http_req_free(r);
}

static const struct rpc_method http_methods[] = {
	{ "http/request", "http", rpc_http_request, NULL },
};

int http_methods_register(void)
{
	return rpc_methods_register(http_methods, ELEMENTSOF(http_methods));
}
