/* SPDX-License-Identifier: MIT */
/*
 * JSON-RPC envelope handling, handshake gating and dispatch (PROTOCOL.md §2-§4).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "jsonrpc.h"
#include "log.h"
#include "os-error.h"
#include "rpc.h"

/*
 * Methods the reference serves that no module registered: gated by the
 * handshake like the others, then answered -32601 (so a client sees the same
 * lifecycle errors on either server, and a build without a module, such as the
 * session fuzzer's, still gates its methods).
 */
static const struct rpc_method unimplemented[] = {
	{ "http/request", "http", NULL, NULL },
	{ "fs/readFile", "filesystem", NULL, NULL },
	{ "fs/writeFile", "filesystem", NULL, NULL },
	{ "fs/createDirectory", "filesystem", NULL, NULL },
	{ "fs/getMetadata", "filesystem", NULL, NULL },
	{ "fs/canonicalize", "filesystem", NULL, NULL },
	{ "fs/readDirectory", "filesystem", NULL, NULL },
	{ "fs/remove", "filesystem", NULL, NULL },
	{ "fs/copy", "filesystem", NULL, NULL },
	{ "fs/open", "filesystem", NULL, NULL },
	{ "fs/readBlock", "filesystem", NULL, NULL },
	{ "fs/writeBlock", "filesystem", NULL, NULL },
	{ "fs/close", "filesystem", NULL, NULL },
	{ "fs/walk", "filesystem", NULL, NULL },
	{ "fs/watchMissing", "filesystem", NULL, NULL },
};

/* The feature modules' tables (exec, fs, env), registered at start-up. */
#define RPC_MAX_TABLES 16
static struct {
	const struct rpc_method *m;
	size_t n;
} tables[RPC_MAX_TABLES];
static size_t n_tables;

int rpc_methods_register(const struct rpc_method *m, size_t n)
{
	for (size_t i = 0; i < n_tables; i++)
		if (tables[i].m == m)
			return 0;
	if (n_tables == RPC_MAX_TABLES)
		return -ENOSPC;
	tables[n_tables].m = m;
	tables[n_tables].n = n;
	n_tables++;
	return 0;
}

/*
 * Per-method counters: slot k is the k-th method in lookup order (the tables,
 * then the unimplemented list), then the two catch-alls. Plain increments.
 */
#define RPC_STATS_MAX 128
static struct rpc_method_stats stats[RPC_STATS_MAX + 2];
static int dispatching = -1; /* the slot of the request being dispatched, or -1 */

static int stat_unknown(void)
{
	return RPC_STATS_MAX;
}

static int stat_none(void)
{
	return RPC_STATS_MAX + 1;
}

/* Looks name up; *ret_stat gets its stats slot (stat_unknown() when not found). */
static const struct rpc_method *method_lookup(const char *name, int *ret_stat)
{
	size_t k = 0;

	for (size_t t = 0; t < n_tables; t++)
		for (size_t i = 0; i < tables[t].n; i++, k++)
			if (strcmp(tables[t].m[i].name, name) == 0) {
				*ret_stat = k < RPC_STATS_MAX ? (int)k : stat_unknown();
				return &tables[t].m[i];
			}
	for (size_t i = 0; i < ELEMENTSOF(unimplemented); i++, k++)
		if (strcmp(unimplemented[i].name, name) == 0) {
			*ret_stat = k < RPC_STATS_MAX ? (int)k : stat_unknown();
			return &unimplemented[i];
		}
	*ret_stat = stat_unknown();
	return NULL;
}

const struct rpc_method_stats *rpc_stats(size_t *ret_n)
{
	size_t k = 0;

	/* Name the slots (the tables are fixed after start-up; cheap to redo per scrape). */
	for (size_t t = 0; t < n_tables; t++)
		for (size_t i = 0; i < tables[t].n && k < RPC_STATS_MAX; i++)
			stats[k++].name = tables[t].m[i].name;
	for (size_t i = 0; i < ELEMENTSOF(unimplemented) && k < RPC_STATS_MAX; i++)
		stats[k++].name = unimplemented[i].name;
	stats[RPC_STATS_MAX].name = "(unknown)";
	stats[RPC_STATS_MAX + 1].name = "(none)";
	*ret_n = RPC_STATS_MAX + 2;
	return stats;
}

/* Counts an error reply with code to the request id answers on c. */
static void count_error(struct conn *c, json_t *id, int code)
{
	struct rpc_method_stats *st;
	struct rpc_pending *p;
	int slot = dispatching;

	if (slot < 0 && c) {
		slot = stat_none();
		list_for_each_entry(p, &c->pending, link)
			if (p->id == id) {
				slot = p->stat;
				break;
			}
	} else if (slot < 0) {
		slot = stat_none();
	}
	st = &stats[slot];
	for (size_t i = 0; i < RPC_STATS_CODES - 1; i++)
		if (st->errors[i].n == 0 || st->errors[i].code == code) {
			st->errors[i].code = code;
			st->errors[i].n++;
			return;
		}
	st->errors[RPC_STATS_CODES - 1].code = 0; /* the last slot: every other code */
	st->errors[RPC_STATS_CODES - 1].n++;
}

void rpc_reply(struct conn *c, json_t *id, json_t *result)
{
	json_t *msg = json_object();

	if (msg && result) {
		json_object_set(msg, "id", id);
		json_object_set_new(msg, "result", result);
		conn_send_json(c, msg);
	} else {
		json_decref(result);
	}
	json_decref(msg);
}

struct outchunk *rpc_reply_begin(struct conn *c, json_t *id, size_t len, uint8_t **ret_result)
{
	static const char pre[] = "{\"id\":", mid[] = ",\"result\":";
	char *ids = json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY);
	size_t il = ids ? strlen(ids) : 0;
	struct outchunk *o;
	uint8_t *w;

	o = ids ? conn_alloc_msg(c, sizeof(pre) - 1 + il + sizeof(mid) - 1 + len + 1, &w) : NULL;
	if (!o) {
		free(ids);
		rpc_reply_errno_internal(c, id, ENOMEM);
		return NULL;
	}
	memcpy(w, pre, sizeof(pre) - 1);
	w += sizeof(pre) - 1;
	memcpy(w, ids, il);
	w += il;
	memcpy(w, mid, sizeof(mid) - 1);
	w += sizeof(mid) - 1;
	w[len] = '}';
	free(ids);
	*ret_result = w;
	return o;
}

void rpc_reply_serialized(struct conn *c, json_t *id, const char *result, size_t len)
{
	uint8_t *w;
	struct outchunk *o = rpc_reply_begin(c, id, len, &w);

	if (!o)
		return;
	memcpy(w, result, len);
	conn_commit(c, o);
}

/*
 * Sends {"error": {"code", "data" (when given), "message"}, "id"}; steals
 * message and data. A NULL message (no memory) leaves the member out.
 */
static void send_error(struct conn *c, json_t *id, int code, json_t *message, json_t *data)
{
	json_t *msg = json_object(), *err = json_object();

	if (msg && err) {
		json_object_set_new(err, "code", json_integer(code));
		if (data)
			json_object_set_new(err, "data", data);
		data = NULL;
		json_object_set_new(err, "message", message);
		message = NULL;
		json_object_set_new(msg, "error", err);
		err = NULL;
		json_object_set(msg, "id", id);
		conn_send_json(c, msg);
	}
	json_decref(message);
	json_decref(data);
	json_decref(err);
	json_decref(msg);
}

static void reply_error_str(struct conn *c, json_t *id, int code, const char *text)
{
	/* json_string() refuses invalid UTF-8 (a message cut mid-character). */
	json_t *m = json_string(text);

	count_error(c, id, code);
	send_error(c, id, code, m ? m : json_string("invalid request"), NULL);
}

void rpc_reply_error_quoted(struct conn *c, json_t *id, int code, const char *prefix,
			    json_t *str, const char *suffix)
{
	size_t pl = strlen(prefix), sl = json_string_length(str), xl = strlen(suffix);
	char *text = malloc(pl + sl + xl + 1);

	count_error(c, id, code);
	if (text) {
		memcpy(text, prefix, pl);
		memcpy(text + pl, json_string_value(str), sl);
		memcpy(text + pl + sl, suffix, xl);
		/* Keeps embedded NULs: the client's own string comes back verbatim. */
		send_error(c, id, code, json_stringn(text, pl + sl + xl), NULL);
	}
	free(text);
}

void rpc_reply_error_kind(struct conn *c, json_t *id, int code, const char *kind, const char *fmt, ...)
{
	json_t *data = json_pack("{s:s}", "kind", kind), *m;
	char text[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	count_error(c, id, code);
	if (!data)
		return;
	m = json_string(text);
	send_error(c, id, code, m ? m : json_string("spawn failed"), data);
}

void rpc_reply_error_text(struct conn *c, json_t *id, int code, const char *text, size_t len)
{
	json_t *t = json_stringn(text, len);

	if (!t) {
		reply_error_str(c, id, code, text); /* invalid UTF-8: the C string's fallback */
		return;
	}
	rpc_reply_error_quoted(c, id, code, "", t, "");
	json_decref(t);
}

void rpc_reply_error(struct conn *c, json_t *id, int code, const char *fmt, ...)
{
	char text[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	reply_error_str(c, id, code, text);
}

const char *rpc_os_error(int err, char *buf, size_t size)
{
	err = err < 0 ? -err : err;
	snprintf(buf, size, "%s (os error %d)", os_error_text(err), err);
	return buf;
}

void rpc_reply_errno(struct conn *c, json_t *id, int err)
{
	char text[256];
	int code;

	err = err < 0 ? -err : err;
	if (err == ENOENT)
		code = RPC_NOT_FOUND;
	else if (err == EACCES || err == EPERM || err == EINVAL)
		code = RPC_INVALID_REQUEST; /* Rust's PermissionDenied and InvalidInput kinds */
	else
		code = RPC_INTERNAL_ERROR;
	reply_error_str(c, id, code, rpc_os_error(err, text, sizeof(text)));
}

void rpc_reply_errno_internal(struct conn *c, json_t *id, int err)
{
	char text[256];

	reply_error_str(c, id, RPC_INTERNAL_ERROR, rpc_os_error(err, text, sizeof(text)));
}

void rpc_pending_start(struct rpc_pending *p, struct conn *c, json_t *id,
		       void (*cancel)(struct rpc_pending *p))
{
	p->conn = c;
	p->id = json_incref(id);
	p->cancel = cancel;
	p->stat = dispatching >= 0 ? dispatching : stat_none();
	list_add_tail(&p->link, &c->pending);
}

void rpc_pending_end(struct rpc_pending *p)
{
	struct conn *c = p->conn;

	list_del(&p->link);
	json_decref(p->id);
	p->id = NULL;
	p->conn = NULL;
	/* stdio input ended earlier: the last answer is queued, now flush and exit. */
	if (c && c->input_eof && c->state == CONN_OPEN && list_empty(&c->pending))
		conn_close(c, 0, "end of input");
}

void rpc_cancel_pending(struct conn *c)
{
	while (!list_empty(&c->pending)) {
		struct rpc_pending *p = list_first_entry(&c->pending, struct rpc_pending, link);

		p->cancel(p);
	}
}

int rpc_call_start(struct rpc_call *call, struct conn *c, const char *method,
		   const char *params_json, void (*done)(struct rpc_call *call, json_t *result))
{
	static const char mid[] = "\",\"params\":";
	char pre[64];
	size_t ml = strlen(method), pl = strlen(params_json);
	int n = snprintf(pre, sizeof(pre), "{\"id\":%" PRId64 ",\"method\":\"", c->next_call_id);
	struct outchunk *o;
	uint8_t *w;

	o = conn_alloc_msg(c, (size_t)n + ml + sizeof(mid) - 1 + pl + 1, &w);
	if (!o)
		return -ENOMEM;
	memcpy(w, pre, (size_t)n);
	w += n;
	memcpy(w, method, ml);
	w += ml;
	memcpy(w, mid, sizeof(mid) - 1);
	w += sizeof(mid) - 1;
	memcpy(w, params_json, pl);
	w += pl;
	*w = '}';
	conn_commit(c, o);
	call->conn = c;
	call->id = c->next_call_id++;
	call->done = done;
	list_add_tail(&call->link, &c->calls);
	return 0;
}

void rpc_call_cancel(struct rpc_call *call)
{
	if (!call->conn)
		return;
	list_del(&call->link);
	call->conn = NULL;
}

void rpc_calls_fail(struct conn *c)
{
	while (!list_empty(&c->calls)) {
		struct rpc_call *call = list_first_entry(&c->calls, struct rpc_call, link);

		rpc_call_cancel(call);
		call->done(call, NULL);
	}
}

/* The client answered one of ours (rpc_call_start), or sent a reply nobody asked for. */
static void on_response(struct conn *c, json_t *root)
{
	json_t *id = json_object_get(root, "id"), *result = json_object_get(root, "result");
	struct rpc_call *call;
	json_int_t v;

	if (!json_is_integer(id) || (v = json_integer_value(id)) < 1 || v >= c->next_call_id) {
		char *txt = id ? json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;

		/* The reference drops such a connection without a Close frame. */
		log_info_ratelimited("Closing connection %s after an unexpected client response (id %s)",
				     c->peer, txt ? txt : "none");
		free(txt);
		conn_close(c, 0, "unexpected response");
		return;
	}
	list_for_each_entry(call, &c->calls, link) {
		if (call->id != v)
			continue;
		rpc_call_cancel(call);
		call->done(call, json_object_get(root, "error") ? NULL : result);
		return;
	}
	/* issued, no longer awaited (timed out, or its requester is gone): ignored */
}

/* detail[0..len) may hold a NUL (a repeated "\u0000" key is quoted as it is). */
static void parse_error(struct conn *c, const char *detail, size_t len)
{
	json_t *id = json_integer(-1), *d = json_stringn(detail, len);
	char prefix[160];

	if (c->transport == CONN_WS)
		snprintf(prefix, sizeof(prefix),
			 "failed to parse websocket JSON-RPC message from exec-server websocket %s: ",
			 c->peer);
	else
		snprintf(prefix, sizeof(prefix), "failed to parse stdio JSON-RPC message: ");
	if (d)
		rpc_reply_error_quoted(c, id, RPC_INVALID_REQUEST, prefix, d, "");
	else
		rpc_reply_error(c, id, RPC_INVALID_REQUEST, "%s%s", prefix, detail);
	json_decref(d);
	json_decref(id);
}

bool rpc_fast_dispatch(struct conn *c, const char *data, size_t len)
{
	const struct rpc_method *meth;
	struct jrpc_fast_req r;
	char name[40];
	int slot, outer = dispatching;
	bool done;

	/* Gating errors and every method without a fast() go the general way. */
	if (!c->initialize_done || !c->initialized || !c->sess ||
	    !jrpc_fast_parse(data, len, c->srv->cfg.max_json_depth, &r) || r.method_len >= sizeof(name))
		return false;
	memcpy(name, r.method, r.method_len);
	name[r.method_len] = 0;
	meth = method_lookup(name, &slot);
	if (!meth || !meth->fast || !meth->family || meth->forward)
		return false;
	dispatching = slot;
	done = meth->fast(c, &r);
	if (done)
		stats[slot].requests++;
	dispatching = outer;
	return done;
}

void rpc_on_message(struct conn *c, const char *data, size_t len)
{
	struct jrpc_msg m;
	const struct rpc_method *meth;
	int outer = dispatching; /* not expected to nest, but keep the outer slot if it does */

	if (rpc_fast_enabled && rpc_fast_dispatch(c, data, len))
		return;
	dispatching = -1;
	if (jrpc_parse(data, len, c->srv->cfg.max_json_depth, &m) < 0) {
		log_error_ratelimited("Out of memory parsing a message from %s", c->peer);
		conn_close(c, WS_CLOSE_INTERNAL, "out of memory");
		return;
	}

	switch (m.kind) {
	case JRPC_INVALID:
		log_debug("Unparsable message from %s: %s", c->peer, m.error);
		parse_error(c, m.error, m.error_len ? m.error_len : strlen(m.error));
		break;

	case JRPC_RESPONSE:
		on_response(c, m.root);
		break;

	case JRPC_NOTIFICATION:
		if (strlen(m.method) == m.method_len && strcmp(m.method, "initialized") == 0 &&
		    c->initialize_done) {
			c->initialized = true;
			break;
		}
		log_info_ratelimited("Closing connection %s: unexpected notification '%s'", c->peer,
				     m.method);
		conn_close(c, WS_CLOSE_PROTOCOL, "unexpected notification");
		break;

	case JRPC_REQUEST:
		/* A name holding a NUL is no method's, and is quoted whole. */
		meth = strlen(m.method) == m.method_len ? method_lookup(m.method, &dispatching) : NULL;
		if (!meth)
			dispatching = stat_unknown();
		stats[dispatching].requests++;
		if (!meth) {
			rpc_reply_error_quoted(c, m.id, RPC_METHOD_NOT_FOUND,
					       "exec-server stub does not implement `",
					       json_object_get(m.root, "method"), "` yet");
			break;
		}
		if (!meth->family) {
			/* initialize decodes its params first: its handler says it. */
			if (c->initialize_done && !meth->fn) {
				rpc_reply_error(c, m.id, RPC_INVALID_REQUEST,
						"initialize may only be sent once per connection");
				break;
			}
		} else if (!c->initialize_done) {
			rpc_reply_error(c, m.id, RPC_INVALID_REQUEST,
					"client must call initialize before using %s methods",
					meth->family);
			break;
		} else if (!c->initialized) {
			rpc_reply_error(c, m.id, RPC_INVALID_REQUEST,
					"client must send initialized before using %s methods",
					meth->family);
			break;
		}
		if (meth->forward && meth->forward(c, m.id, m.method, m.params))
			break;
		if (!meth->fn) {
			rpc_reply_error(c, m.id, RPC_METHOD_NOT_FOUND,
					"exec-server stub does not implement `%s` yet", m.method);
			break;
		}
		meth->fn(c, m.id, m.params);
		break;
	}
	dispatching = outer;
	jrpc_msg_done(&m);
}
