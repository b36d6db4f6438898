/* SPDX-License-Identifier: MIT */
/*
 * What http/request sends and answers (http-req.h): the request's header
 * list as redirects change it, the result object, bodyDelta notifications,
 * and the response headers as the reference lists them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base64.h"
#include "conn.h"
#include "http-req.h"
#include "log.h"
#include "rpc.h"

int http_msg_delta(struct http_req *r, const uint8_t *p, size_t n, bool done, const char *error)
{
	char head[64], tail[96];
	int hl, tl;
	size_t b64 = base64_encoded_len(n), len;
	struct outchunk *o;
	uint8_t *w;

	if (!r->conn)
		return 0;
	r->seq++;
	hl = snprintf(head, sizeof(head), ",\"seq\":%" PRIu64 ",\"deltaBase64\":\"", r->seq);
	tl = snprintf(tail, sizeof(tail), "\",\"done\":%s,\"error\":%s%s%s}}", done ? "true" : "false",
		      error ? "\"" : "", error ? error : "null", error ? "\"" : "");
	static const char pre[] = "{\"method\":\"http/request/bodyDelta\",\"params\":{\"requestId\":";
	len = sizeof(pre) - 1 + strlen(r->rid_json) + (size_t)hl + b64 + (size_t)tl;
	o = conn_alloc_msg(r->conn, len, &w);
	if (!o) {
		log_error_ratelimited("Out of memory sending http/request/bodyDelta to %s", r->conn->peer);
		return -ENOMEM;
	}
	memcpy(w, pre, sizeof(pre) - 1);
	w += sizeof(pre) - 1;
	memcpy(w, r->rid_json, strlen(r->rid_json));
	w += strlen(r->rid_json);
	memcpy(w, head, (size_t)hl);
	w += hl;
	w += base64_encode(p, n, (char *)w);
	memcpy(w, tail, (size_t)tl);
	conn_commit(r->conn, o);
	return 0;
}


/*
 * {"status":N,"headers":[...],"bodyBase64":"..."} with the body r->body_out
 * (empty for a stream). Returns 0 or -ENOMEM (replied with an error then).
 */
int http_msg_result(struct http_req *r, int status, json_t *headers)
{
	char *hj = json_dumps(headers, JSON_COMPACT);
	size_t body = r->stream ? 0 : r->body_out.len, len;
	char pre[32];
	int pl;
	struct outchunk *o;
	uint8_t *w;

	if (!hj) {
		rpc_reply_errno_internal(r->conn, r->id, ENOMEM);
		return -ENOMEM;
	}
	pl = snprintf(pre, sizeof(pre), "{\"status\":%d,\"headers\":", status);
	len = (size_t)pl + strlen(hj) + sizeof(",\"bodyBase64\":\"\"}") - 1 + base64_encoded_len(body);
	o = rpc_reply_begin(r->conn, r->id, len, &w);
	if (!o) {
		free(hj);
		return -ENOMEM;
	}
	memcpy(w, pre, (size_t)pl);
	w += pl;
	memcpy(w, hj, strlen(hj));
	w += strlen(hj);
	memcpy(w, ",\"bodyBase64\":\"", 15);
	w += 15;
	w += base64_encode(r->body_out.data, body, (char *)w);
	memcpy(w, "\"}", 2);
	conn_commit(r->conn, o);
	free(hj);
	json_decref(r->id);
	r->id = NULL;
	return 0;
}

static bool header_is(const struct http_header *h, const char *name)
{
	return h->name_len == strlen(name) && strncasecmp(h->name, name, h->name_len) == 0;
}

/* The coding the reference's client decodes: a Content-Encoding exactly "gzip", else "zstd". */
enum http_coding http_msg_coding(const struct http_response *resp)
{
	enum http_coding c = HTTP_CODING_NONE;

	for (size_t i = 0; i < resp->n_headers; i++) {
		const struct http_header *h = &resp->headers[i];

		if (!header_is(h, "content-encoding"))
			continue;
		if (h->value_len == 4 && memcmp(h->value, "gzip", 4) == 0)
			return HTTP_CODING_GZIP;
		if (h->value_len == 4 && memcmp(h->value, "zstd", 4) == 0)
			c = HTTP_CODING_ZSTD;
	}
	return c;
}

/*
 * The head's headers as the reference lists them: lower-case names, wire
 * order, visible-ASCII values only; without Content-Encoding and
 * Content-Length when the body is decoded (decoded: they no longer hold).
 */
json_t *http_msg_headers_json(const struct http_response *resp, bool decoded)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < resp->n_headers; i++) {
		const struct http_header *h = &resp->headers[i];
		char name[256];
		bool ok = h->name_len < sizeof(name);
		json_t *o;

		if (decoded && (header_is(h, "content-encoding") || header_is(h, "content-length")))
			continue;

		for (size_t k = 0; ok && k < h->value_len; k++) {
			unsigned char ch = (unsigned char)h->value[k];

			ok = ch == '\t' || (ch >= 0x20 && ch < 0x7f);
		}
		if (!ok)
			continue; /* the reference drops values that are not visible ASCII */
		for (size_t k = 0; k < h->name_len; k++)
			name[k] = (char)(h->name[k] >= 'A' && h->name[k] <= 'Z' ? h->name[k] + 32 : h->name[k]);
		o = json_object();
		if (!o || json_array_append_new(a, o) < 0 ||
		    json_object_set_new(o, "name", json_stringn(name, h->name_len)) < 0 ||
		    json_object_set_new(o, "value", json_stringn(h->value, h->value_len)) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}


void http_req_drop_headers(struct http_req *r, const char *const *names)
{
	size_t k = 0;

	for (size_t i = 0; i < r->n_hdrs; i++) {
		bool drop = false;

		for (const char *const *n = names; *n && !drop; n++)
			drop = strcmp(r->hdrs[i].name, *n) == 0;
		if (drop) {
			explicit_bzero(r->hdrs[i].value, r->hdrs[i].value_len);
			free(r->hdrs[i].name);
			free(r->hdrs[i].value);
		} else {
			r->hdrs[k++] = r->hdrs[i];
		}
	}
	r->n_hdrs = k;
}

bool http_req_has_header(const struct http_req *r, const char *name)
{
	for (size_t i = 0; i < r->n_hdrs; i++)
		if (strcmp(r->hdrs[i].name, name) == 0)
			return true;
	return false;
}

/* Appends a header (copies). 0 or -ENOMEM. */
int http_req_add_header(struct http_req *r, const char *name, const char *value, size_t len)
{
	struct http_req_header *h = realloc(r->hdrs, (r->n_hdrs + 1) * sizeof(*h));
	char *n, *v;

	if (!h)
		return -ENOMEM;
	r->hdrs = h;
	n = strdup(name);
	v = malloc(len + 1);
	if (!n || !v) {
		free(n);
		free(v);
		return -ENOMEM;
	}
	memcpy(v, value, len);
	v[len] = '\0';
	r->hdrs[r->n_hdrs++] = (struct http_req_header){ n, v, len };
	return 0;
}

/* "Basic base64(user:password)" from the URL's userinfo, unless an Authorization header is there. */
int http_req_add_basic_auth(struct http_req *r)
{
	const char *user = r->url.user, *pw = r->url.password ? r->url.password : "";
	size_t ul, pwl, n;
	char *plain, *val;
	int q;

	if (!user || http_req_has_header(r, "authorization"))
		return 0;
	ul = strlen(user);
	pwl = strlen(pw);
	plain = malloc(ul + 1 + pwl);
	val = malloc(6 + base64_encoded_len(ul + 1 + pwl) + 1);
	if (!plain || !val) {
		free(plain);
		free(val);
		return -ENOMEM;
	}
	memcpy(plain, user, ul);
	plain[ul] = ':';
	memcpy(plain + ul + 1, pw, pwl);
	memcpy(val, "Basic ", 6);
	n = 6 + base64_encode((const uint8_t *)plain, ul + 1 + pwl, val + 6);
	q = http_req_add_header(r, "authorization", val, n);
	explicit_bzero(plain, ul + 1 + pwl);
	explicit_bzero(val, n);
	free(plain);
	free(val);
	return q;
}

/* scheme://host[:port] without userinfo. */
int http_url_origin(const struct http_url_parts *u, char *out, size_t cap)
{
	char port[8] = "";

	if (u->port != (u->tls ? 443 : 80))
		snprintf(port, sizeof(port), ":%u", u->port);
	return snprintf(out, cap, "%s://%s%s%s%s", u->tls ? "https" : "http", u->ipv6 ? "[" : "",
			u->host, u->ipv6 ? "]" : "", port);
}
