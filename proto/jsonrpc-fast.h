/* SPDX-License-Identifier: MIT */
/*
 * The JSON-RPC hot path's decoder: one request read straight from the frame
 * bytes, no jansson tree, for a strict and common subset of JSON only:
 *
 *   {"id":<id>,"method":"<name>","params":{<member>,...}}  ("jsonrpc":"<s>" allowed)
 *
 * in any key order, any JSON whitespace between tokens, where every key is
 * one of those (no escapes), each at most once; the id an integer of at most
 * 18 digits (not -0) or a string; params members have keys without escapes,
 * each at most once, and scalar values: strings, integers without sign of at
 * most 18 digits, null, true, false. Strings hold only printable ASCII and no
 * escape (bytes 0x20-0x7e but '"' and '\'), so a string's raw bytes are its
 * value and its JSON text is what jansson writes for it.
 *
 * Anything else is "not sure" and goes to the general path (jrpc_parse and
 * the handlers' params decoding), which then answers exactly as before:
 * what this decoder accepts is a message that path accepts as a request with
 * the same id, method and params values (fuzz/fuzz-jsonrpc-fast.c and
 * tests/unit/test-rpc-fast.c check it). No I/O, no allocation.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* More params members than this: not sure (the hot methods have at most four). */
#define JRPC_FAST_MAX_MEMBERS 8
/* Integers: at most this many digits, so any value fits an int64 either way. */
#define JRPC_FAST_MAX_DIGITS 18

enum jrpc_fast_type {
	JRPC_FAST_STRING, /* .s, .n: the raw bytes between the quotes (= the value) */
	JRPC_FAST_UINT,   /* .u */
	JRPC_FAST_NULL,
	JRPC_FAST_TRUE,
	JRPC_FAST_FALSE,
};

struct jrpc_fast_value {
	enum jrpc_fast_type type;
	const char *s;
	size_t n;
	uint64_t u;
};

struct jrpc_fast_member {
	const char *key; /* raw, no escapes */
	size_t key_len;
	struct jrpc_fast_value v;
};

struct jrpc_fast_req {
	/* The id: its JSON text as jansson writes it (a string's with its quotes). */
	bool id_is_string;
	int64_t id_int;
	const char *id_str; /* string id: its value (the raw bytes) */
	size_t id_str_len;
	char id_text[24];   /* integer id: its decimal text */
	const char *id_json; /* id_text, or the string's quoted text in the frame */
	size_t id_json_len;

	const char *method;
	size_t method_len;

	struct jrpc_fast_member params[JRPC_FAST_MAX_MEMBERS];
	size_t n_params;
};

/*
 * Decodes buf[0..len). max_depth is the server's nesting limit (the general
 * path refuses nesting before parsing; a request with params is 2 deep).
 * Returns true with *ret filled (pointers into buf), or false: not sure.
 */
bool jrpc_fast_parse(const char *buf, size_t len, unsigned max_depth, struct jrpc_fast_req *ret);

/* The params member named name, or NULL. */
const struct jrpc_fast_value *jrpc_fast_param(const struct jrpc_fast_req *r, const char *name);

/* True when every params key is one of names[0..n) (NULL-terminated list). */
bool jrpc_fast_params_only(const struct jrpc_fast_req *r, const char *const *names);
