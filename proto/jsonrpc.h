/* SPDX-License-Identifier: MIT */
/*
 * JSON-RPC envelope decoding as the reference server does it (PROTOCOL.md §3):
 * no "jsonrpc" member required, ids are i64 or strings, no batches. No I/O.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum jrpc_kind {
	JRPC_INVALID,      /* unparsable: answer id -1, -32600, with .error */
	JRPC_REQUEST,      /* method + id */
	JRPC_NOTIFICATION, /* method, no id */
	JRPC_RESPONSE,     /* result or error with an id: the client answered something */
};

struct jrpc_msg {
	enum jrpc_kind kind;
	json_t *root;       /* owned; NULL if the text did not parse */
	json_t *id;         /* borrowed from root (REQUEST) */
	const char *method; /* borrowed from root (REQUEST, NOTIFICATION) */
	size_t method_len;  /* its length: a method name may hold "\u0000" */
	json_t *params;     /* borrowed from root; NULL when absent */
	char error[256];    /* JRPC_INVALID: serde-like detail, e.g. "expected a JSON-RPC object" */
	size_t error_len;   /* its length when it holds a NUL (a repeated "\u0000" key), else 0 */
};

/*
 * Decodes one message. Nesting deeper than max_depth is refused before the
 * JSON parser runs ("recursion limit exceeded ..."). Always fills *ret;
 * returns 0, or -ENOMEM. Free with jrpc_msg_done().
 */
int jrpc_parse(const char *buf, size_t len, unsigned max_depth, struct jrpc_msg *ret);
void jrpc_msg_done(struct jrpc_msg *m);

/*
 * Object keys may hold NUL bytes (serde accepts "\u0000" in a key), so a key
 * from json_object_foreach() is compared with these, never with strcmp().
 * jrpc_key_len() takes only keys returned by jansson's object iteration.
 */
size_t jrpc_key_len(const char *key);

/*
 * An integer as serde reads a u64: non-negative, or one of the last parsed
 * message's integers in [2^63, 2^64) (stored as their two's-complement bits;
 * valid until jrpc_msg_done or the next jrpc_parse). Returns 0 with *ret,
 * -ERANGE for a negative integer, -EINVAL for a non-integer.
 */
int jrpc_u64(const json_t *v, uint64_t *ret);
/*
 * A deep copy in which each big u64 of the message being dispatched becomes
 * i64::MAX (jansson can hold it, and any JSON reader reads it back), e.g. for
 * params forwarded to another process. NULL on OOM.
 */
json_t *jrpc_copy_clamped(const json_t *v);
/*
 * True if the last parsed message held numbers jansson cannot hold as
 * written (integers beyond i64: a u64's bits, or a double; numbers beyond
 * f64): jrpc_dump cannot write them back, so such a message does not
 * survive a dump and parse. Reset by the next jrpc_parse.
 */
bool jrpc_had_big_numbers(void);
/* An integer's decimal text as the client wrote it (big u64s unsigned). */
void jrpc_integer_text(const json_t *v, char *buf, size_t size);
bool jrpc_key_is(const char *key, const char *name);

/*
 * Returns the nesting depth of the JSON text buf[0..len) (brackets outside
 * strings), stopping early once it exceeds limit. Tolerates invalid JSON.
 * *ret_col receives the 1-based byte column where the limit was crossed.
 */
unsigned jrpc_nesting_depth(const char *buf, size_t len, unsigned limit, size_t *ret_col);

/*
 * Serialises a whole message to compact JSON with members in insertion order
 * (malloc'd, NUL-terminated; *ret_len set). Returns NULL on OOM.
 */
char *jrpc_dump(const json_t *msg, size_t *ret_len);
