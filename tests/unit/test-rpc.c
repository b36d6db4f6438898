/* SPDX-License-Identifier: MIT */
/*
 * src/rpc/rpc.c on a fake connection, without a socket: the transport's
 * conn_send_json, conn_alloc_msg, conn_commit and conn_close are wrapped
 * (-Wl,--wrap, tests/unit/meson.build) to record what the layer sends and
 * why it closes. Asserted: parse errors (id -1, the transport's prefix), ids
 * echoed as sent, handshake gating and its texts, dispatch to a table's
 * handler or forward(), unknown and unimplemented methods, the errno map,
 * the server's own requests and the client's replies to them, requests
 * answered later, and the per-method counters.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "jsonrpc.h"
#include "rpc.h"
#include "server.h"
#include "tests.h"

/* ---- the fake connection: what the layer sent, and whether it closed it */

#define MAX_SENT 16
static char *sent[MAX_SENT];
static size_t n_sent;
static int closed_code = -1;
static const char *closed_why;

void __wrap_conn_send_json(struct conn *c, const json_t *msg);
struct outchunk *__wrap_conn_alloc_msg(struct conn *c, size_t payload_len, uint8_t **ret_payload);
void __wrap_conn_commit(struct conn *c, struct outchunk *o);
void __wrap_conn_close(struct conn *c, uint16_t ws_code, const char *why);

static void record(char *s)
{
	if (n_sent == MAX_SENT)
		tests_fail(__FILE__, __LINE__, "more than %d messages sent", MAX_SENT);
	sent[n_sent++] = s;
}

void __wrap_conn_send_json(struct conn *c, const json_t *msg)
{
	size_t len;

	(void)c;
	record(jrpc_dump(msg, &len)); /* as conn_send_json serialises it */
}

/* A message written in place: the "chunk" is the text itself, NUL-terminated. */
struct outchunk *__wrap_conn_alloc_msg(struct conn *c, size_t payload_len, uint8_t **ret_payload)
{
	char *p = calloc(1, payload_len + 1);

	(void)c;
	*ret_payload = (uint8_t *)p;
	return (struct outchunk *)p;
}

void __wrap_conn_commit(struct conn *c, struct outchunk *o)
{
	(void)c;
	record((char *)o);
}

void __wrap_conn_close(struct conn *c, uint16_t ws_code, const char *why)
{
	(void)c;
	closed_code = ws_code;
	closed_why = why;
}

static struct server srv;
static struct conn conn;

/* A fresh WebSocket connection (or stdio), handshake state as given. */
static struct conn *fake_conn(enum conn_transport t, bool initialize_done, bool initialized)
{
	for (size_t i = 0; i < n_sent; i++)
		free(sent[i]);
	n_sent = 0;
	closed_code = -1;
	closed_why = NULL;
	memset(&conn, 0, sizeof(conn));
	srv.cfg.max_json_depth = 64;
	conn.srv = &srv;
	conn.transport = t;
	conn.state = CONN_OPEN;
	strcpy(conn.peer, "127.0.0.1:4242");
	list_init(&conn.pending);
	list_init(&conn.calls);
	conn.next_call_id = 1;
	conn.initialize_done = initialize_done;
	conn.initialized = initialized;
	return &conn;
}

static void on(struct conn *c, const char *msg)
{
	rpc_on_message(c, msg, strlen(msg));
}

#define ASSERT_SENT(k, text)                                                          \
	do {                                                                          \
		ASSERT_TRUE(n_sent > (k));                                            \
		ASSERT_STREQ((text), sent[k]);                                        \
	} while (0)

/* ---- a module's method table */

static int echo_calls, forward_calls;

static void echo(struct conn *c, json_t *id, json_t *params)
{
	echo_calls++;
	rpc_reply(c, id, json_pack("{s:O?}", "params", params));
}

static void fails(struct conn *c, json_t *id, json_t *params)
{
	(void)params;
	rpc_reply_errno(c, id, EACCES);
}

static bool take_odd(struct conn *c, json_t *id, const char *method, json_t *params)
{
	(void)method;
	if (!json_is_object(params) || !json_object_get(params, "odd"))
		return false;
	forward_calls++;
	rpc_reply(c, id, json_string("forwarded"));
	return true;
}

static const struct rpc_method table[] = {
	{ "initialize", NULL, NULL, NULL }, /* a build without the lifecycle module */
	{ "test/echo", "test", echo, take_odd },
	{ "test/fails", "test", fails, NULL },
	{ "test/stub", "test", NULL, NULL },
};

static void register_table(void)
{
	ASSERT_EQ(0, rpc_methods_register(table, sizeof(table) / sizeof(table[0])));
	ASSERT_EQ(0, rpc_methods_register(table, sizeof(table) / sizeof(table[0]))); /* no-op */
}

static bool starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

TEST(parse_errors_answer_id_minus_one_with_the_transport_prefix)
{
	struct conn *c = fake_conn(CONN_WS, true, true);

	on(c, "{not json");
	ASSERT_EQ(1, n_sent);
	ASSERT_TRUE(starts_with(sent[0], "{\"error\":{\"code\":-32600,\"message\":\"failed to parse "
					 "websocket JSON-RPC message from exec-server websocket "
					 "127.0.0.1:4242: "));
	ASSERT_TRUE(strstr(sent[0], "\"id\":-1}") != NULL);
	ASSERT_EQ(-1, closed_code); /* the connection stays open */

	c = fake_conn(CONN_STDIO, true, true);
	on(c, "[1,2]");
	ASSERT_EQ(1, n_sent);
	ASSERT_TRUE(starts_with(sent[0], "{\"error\":{\"code\":-32600,\"message\":\"failed to parse "
					 "stdio JSON-RPC message: "));
	ASSERT_EQ(-1, closed_code);
}

TEST(ids_are_echoed_as_sent)
{
	static const struct {
		const char *request, *reply;
	} cases[] = {
		{ "{\"id\":7,\"method\":\"test/echo\",\"params\":{\"a\":1}}",
		  "{\"id\":7,\"result\":{\"params\":{\"a\":1}}}" },
		{ "{\"id\":\"seven\",\"method\":\"test/echo\"}",
		  "{\"id\":\"seven\",\"result\":{\"params\":null}}" },
		{ "{\"id\":0,\"method\":\"test/echo\",\"params\":[]}",
		  "{\"id\":0,\"result\":{\"params\":[]}}" },
		{ "{\"id\":-3,\"method\":\"test/fails\",\"params\":{}}",
		  "{\"error\":{\"code\":-32600,\"message\":\"Permission denied (os error 13)\"},"
		  "\"id\":-3}" },
	};

	register_table();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct conn *c = fake_conn(CONN_WS, true, true);

		on(c, cases[i].request);
		ASSERT_EQ(1, n_sent);
		ASSERT_SENT(0, cases[i].reply);
	}
}

TEST(handshake_gating)
{
	static const struct {
		bool initialize_done, initialized;
		const char *request, *reply;
	} cases[] = {
		{ false, false, "{\"id\":1,\"method\":\"test/echo\"}",
		  "{\"error\":{\"code\":-32600,\"message\":\"client must call initialize before using "
		  "test methods\"},\"id\":1}" },
		{ true, false, "{\"id\":2,\"method\":\"test/echo\"}",
		  "{\"error\":{\"code\":-32600,\"message\":\"client must send initialized before using "
		  "test methods\"},\"id\":2}" },
		/* the built-in list of methods no module registered: gated, then -32601 */
		{ false, false, "{\"id\":3,\"method\":\"fs/readFile\"}",
		  "{\"error\":{\"code\":-32600,\"message\":\"client must call initialize before using "
		  "filesystem methods\"},\"id\":3}" },
		{ true, true, "{\"id\":4,\"method\":\"fs/readFile\"}",
		  "{\"error\":{\"code\":-32601,\"message\":\"exec-server stub does not implement "
		  "`fs/readFile` yet\"},\"id\":4}" },
		{ true, true, "{\"id\":5,\"method\":\"test/stub\"}",
		  "{\"error\":{\"code\":-32601,\"message\":\"exec-server stub does not implement "
		  "`test/stub` yet\"},\"id\":5}" },
		/* initialize without a handler: once the handshake is done, refused as a repeat */
		{ false, false, "{\"id\":6,\"method\":\"initialize\"}",
		  "{\"error\":{\"code\":-32601,\"message\":\"exec-server stub does not implement "
		  "`initialize` yet\"},\"id\":6}" },
		{ true, false, "{\"id\":7,\"method\":\"initialize\"}",
		  "{\"error\":{\"code\":-32600,\"message\":\"initialize may only be sent once per "
		  "connection\"},\"id\":7}" },
		/* a name no table has, before or after the handshake */
		{ false, false, "{\"id\":8,\"method\":\"no/such\"}",
		  "{\"error\":{\"code\":-32601,\"message\":\"exec-server stub does not implement "
		  "`no/such` yet\"},\"id\":8}" },
		/* a name holding a NUL is no method's, and comes back whole */
		{ true, true, "{\"id\":9,\"method\":\"test/echo\\u0000x\"}",
		  "{\"error\":{\"code\":-32601,\"message\":\"exec-server stub does not implement "
		  "`test/echo\\u0000x` yet\"},\"id\":9}" },
	};

	register_table();
	echo_calls = 0;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct conn *c = fake_conn(CONN_WS, cases[i].initialize_done, cases[i].initialized);

		on(c, cases[i].request);
		ASSERT_EQ(1, n_sent);
		ASSERT_SENT(0, cases[i].reply);
		ASSERT_EQ(-1, closed_code);
	}
	ASSERT_EQ(0, echo_calls); /* no handler ran */
}

TEST(initialized_notification_opens_the_gate)
{
	struct conn *c = fake_conn(CONN_WS, true, false);

	register_table();
	on(c, "{\"method\":\"initialized\",\"params\":{}}");
	ASSERT_EQ(0, n_sent); /* a notification gets no answer */
	ASSERT_TRUE(c->initialized);
	on(c, "{\"id\":1,\"method\":\"test/echo\",\"params\":{\"x\":true}}");
	ASSERT_SENT(0, "{\"id\":1,\"result\":{\"params\":{\"x\":true}}}");
}

TEST(unexpected_notifications_close_the_connection)
{
	static const struct {
		bool initialize_done;
		const char *msg;
	} cases[] = {
		{ false, "{\"method\":\"initialized\"}" }, /* before initialize */
		{ true, "{\"method\":\"test/echo\"}" },
		{ true, "{\"method\":\"initialized\\u0000\"}" },
	};

	register_table();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct conn *c = fake_conn(CONN_WS, cases[i].initialize_done, false);

		on(c, cases[i].msg);
		ASSERT_EQ(0, n_sent);
		ASSERT_EQ(1002, closed_code); /* WS_CLOSE_PROTOCOL */
		ASSERT_STREQ("unexpected notification", closed_why);
		ASSERT_TRUE(!c->initialized);
	}
}

TEST(forward_takes_a_request_before_the_handler)
{
	struct conn *c = fake_conn(CONN_WS, true, true);

	register_table();
	echo_calls = forward_calls = 0;
	on(c, "{\"id\":1,\"method\":\"test/echo\",\"params\":{\"odd\":1}}");
	on(c, "{\"id\":2,\"method\":\"test/echo\",\"params\":{\"even\":1}}");
	ASSERT_EQ(1, forward_calls);
	ASSERT_EQ(1, echo_calls);
	ASSERT_SENT(0, "{\"id\":1,\"result\":\"forwarded\"}");
	ASSERT_SENT(1, "{\"id\":2,\"result\":{\"params\":{\"even\":1}}}");
}

TEST(errno_map)
{
	static const struct {
		int err, code;
		const char *message;
	} cases[] = {
		{ ENOENT, -32004, "No such file or directory (os error 2)" },
		{ -ENOENT, -32004, "No such file or directory (os error 2)" },
		{ EACCES, -32600, "Permission denied (os error 13)" },
		{ EPERM, -32600, "Operation not permitted (os error 1)" },
		{ EINVAL, -32600, "Invalid argument (os error 22)" },
		{ EIO, -32603, "I/O error (os error 5)" }, /* musl's text, as the reference's */
		{ ENOSPC, -32603, "No space left on device (os error 28)" },
	};
	json_t *id = json_integer(3);
	char want[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct conn *c = fake_conn(CONN_WS, true, true);

		rpc_reply_errno(c, id, cases[i].err);
		snprintf(want, sizeof(want), "{\"error\":{\"code\":%d,\"message\":\"%s\"},\"id\":3}",
			 cases[i].code, cases[i].message);
		ASSERT_SENT(0, want);
		/* the internal variant: the same text, always -32603 */
		rpc_reply_errno_internal(c, id, cases[i].err);
		snprintf(want, sizeof(want), "{\"error\":{\"code\":-32603,\"message\":\"%s\"},\"id\":3}",
			 cases[i].message);
		ASSERT_SENT(1, want);
	}
	json_decref(id);
}

TEST(error_replies_keep_their_shape)
{
	struct conn *c = fake_conn(CONN_WS, true, true);
	json_t *id = json_string("x"), *s = json_stringn("a\0b", 3);

	rpc_reply_error(c, id, -32602, "bad %s %d", "thing", 5);
	rpc_reply_error_kind(c, id, -32603, "spawnNotFound", "No such file: %s", "/nope");
	rpc_reply_error_quoted(c, id, -32600, "unknown `", s, "`");
	rpc_reply_error_text(c, id, -32600, "t\0u", 3);
	rpc_reply_serialized(c, id, "{\"k\":[1,2]}", 11);
	ASSERT_SENT(0, "{\"error\":{\"code\":-32602,\"message\":\"bad thing 5\"},\"id\":\"x\"}");
	ASSERT_SENT(1, "{\"error\":{\"code\":-32603,\"data\":{\"kind\":\"spawnNotFound\"},"
		       "\"message\":\"No such file: /nope\"},\"id\":\"x\"}");
	ASSERT_SENT(2, "{\"error\":{\"code\":-32600,\"message\":\"unknown `a\\u0000b`\"},"
		       "\"id\":\"x\"}");
	ASSERT_SENT(3, "{\"error\":{\"code\":-32600,\"message\":\"t\\u0000u\"},\"id\":\"x\"}");
	ASSERT_SENT(4, "{\"id\":\"x\",\"result\":{\"k\":[1,2]}}");
	json_decref(s);
	json_decref(id);
}

/* ---- the server's own requests (network/policyRequest) and the client's replies */

struct call_log {
	struct rpc_call call;
	int done;
	char *result;
};

static void call_done(struct rpc_call *call, json_t *result)
{
	struct call_log *l = (struct call_log *)call;

	l->done++;
	l->result = result ? json_dumps(result, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
}

TEST(server_requests_and_their_replies)
{
	struct conn *c = fake_conn(CONN_WS, true, true);
	struct call_log a = { 0 }, b = { 0 }, d = { 0 };

	ASSERT_EQ(0, rpc_call_start(&a.call, c, "network/policyRequest", "{\"host\":\"h\"}", call_done));
	ASSERT_EQ(0, rpc_call_start(&b.call, c, "network/policyRequest", "{}", call_done));
	ASSERT_EQ(0, rpc_call_start(&d.call, c, "x/y", "[]", call_done));
	ASSERT_SENT(0, "{\"id\":1,\"method\":\"network/policyRequest\",\"params\":{\"host\":\"h\"}}");
	ASSERT_SENT(1, "{\"id\":2,\"method\":\"network/policyRequest\",\"params\":{}}");
	ASSERT_SENT(2, "{\"id\":3,\"method\":\"x/y\",\"params\":[]}");
	/* answered out of order: each goes to its call */
	on(c, "{\"id\":2,\"result\":{\"allow\":true}}");
	ASSERT_EQ(0, a.done);
	ASSERT_EQ(1, b.done);
	ASSERT_STREQ("{\"allow\":true}", b.result);
	/* an error reply: done with NULL */
	on(c, "{\"id\":1,\"error\":{\"code\":-1,\"message\":\"no\"}}");
	ASSERT_EQ(1, a.done);
	ASSERT_TRUE(a.result == NULL);
	/* issued but no longer awaited: ignored, the connection stays */
	on(c, "{\"id\":2,\"result\":{}}");
	ASSERT_EQ(1, b.done);
	ASSERT_EQ(-1, closed_code);
	/* a cancelled call is never done; rpc_calls_fail ends the others with NULL */
	rpc_call_cancel(&d.call);
	rpc_call_cancel(&d.call); /* twice is fine */
	ASSERT_EQ(0, rpc_call_start(&d.call, c, "x/y", "[]", call_done));
	rpc_calls_fail(c);
	ASSERT_EQ(1, d.done);
	ASSERT_TRUE(d.result == NULL);
	ASSERT_EQ(4, n_sent); /* no reply from the server to the client's replies */
	free(b.result);
}

TEST(replies_to_ids_never_issued_close_the_connection)
{
	static const char *const replies[] = {
		"{\"id\":1,\"result\":{}}",	   /* none issued yet */
		"{\"id\":\"1\",\"result\":{}}", /* not an integer */
		"{\"id\":0,\"result\":{}}",
		"{\"id\":-1,\"error\":{\"code\":1,\"message\":\"m\"}}",
	};

	for (size_t i = 0; i < sizeof(replies) / sizeof(replies[0]); i++) {
		struct conn *c = fake_conn(CONN_WS, true, true);

		on(c, replies[i]);
		ASSERT_EQ(0, n_sent);
		ASSERT_EQ(0, closed_code); /* dropped without a Close frame, as the reference */
		ASSERT_STREQ("unexpected response", closed_why);
	}
}

/* ---- requests answered later */

static int cancelled;

static void cancel(struct rpc_pending *p)
{
	cancelled++;
	rpc_pending_end(p);
}

TEST(pending_requests)
{
	struct conn *c = fake_conn(CONN_STDIO, true, true);
	struct rpc_pending p1, p2;
	json_t *id1 = json_integer(1), *id2 = json_string("two");

	rpc_pending_start(&p1, c, id1, cancel);
	rpc_pending_start(&p2, c, id2, cancel);
	json_decref(id1); /* the pending request holds its own reference */
	ASSERT_EQ(1, json_integer_value(p1.id));
	rpc_reply(c, p1.id, json_true());
	rpc_pending_end(&p1);
	ASSERT_SENT(0, "{\"id\":1,\"result\":true}");
	ASSERT_TRUE(p1.id == NULL && p1.conn == NULL);
	/* stdio input ended: the last answer out closes the connection */
	c->input_eof = true;
	rpc_reply(c, p2.id, json_false());
	ASSERT_EQ(-1, closed_code);
	rpc_pending_end(&p2);
	ASSERT_EQ(0, closed_code);
	ASSERT_STREQ("end of input", closed_why);
	ASSERT_EQ(0, cancelled);

	/* a closing connection cancels what is left, without replies */
	c = fake_conn(CONN_WS, true, true);
	rpc_pending_start(&p1, c, id2, cancel);
	rpc_pending_start(&p2, c, id2, cancel);
	rpc_cancel_pending(c);
	ASSERT_EQ(2, cancelled);
	ASSERT_TRUE(list_empty(&c->pending));
	ASSERT_EQ(0, n_sent);
	json_decref(id2);
}

static const struct rpc_method_stats *stat_of(const char *name)
{
	size_t n;
	const struct rpc_method_stats *st = rpc_stats(&n);

	for (size_t i = 0; i < n; i++)
		if (st[i].name && strcmp(st[i].name, name) == 0)
			return &st[i];
	tests_fail(__FILE__, __LINE__, "no stats slot for %s", name);
}

TEST(counters_per_method)
{
	struct conn *c = fake_conn(CONN_WS, true, true);
	uint64_t echo0, fails0, unknown0, none0;

	register_table();
	echo0 = stat_of("test/echo")->requests;
	fails0 = stat_of("test/fails")->requests;
	unknown0 = stat_of("(unknown)")->requests;
	none0 = stat_of("(none)")->errors[0].n;
	on(c, "{\"id\":1,\"method\":\"test/echo\"}");
	on(c, "{\"id\":2,\"method\":\"test/fails\"}");
	on(c, "{\"id\":3,\"method\":\"test/fails\"}");
	on(c, "{\"id\":4,\"method\":\"client-chosen/name\"}");
	on(c, "{broken");
	ASSERT_EQ(echo0 + 1, stat_of("test/echo")->requests);
	ASSERT_EQ(fails0 + 2, stat_of("test/fails")->requests);
	ASSERT_EQ(-32600, stat_of("test/fails")->errors[0].code);
	ASSERT_EQ(fails0 + 2, stat_of("test/fails")->errors[0].n);
	ASSERT_EQ(unknown0 + 1, stat_of("(unknown)")->requests);
	ASSERT_EQ(-32600, stat_of("(none)")->errors[0].code); /* the parse error */
	ASSERT_EQ(none0 + 1, stat_of("(none)")->errors[0].n);
}

TEST_MAIN()
