/* SPDX-License-Identifier: MIT */
/*
 * JSON-RPC envelope decoding with jansson, classified the way the reference's
 * serde untagged enum does it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "json-check.h"
#include "jsonrpc.h"

unsigned jrpc_nesting_depth(const char *buf, size_t len, unsigned limit, size_t *ret_col)
{
	unsigned depth = 0, max = 0;
	bool in_str = false, esc = false;

	for (size_t i = 0; i < len; i++) {
		char c = buf[i];

		if (in_str) {
			if (esc)
				esc = false;
			else if (c == '\\')
				esc = true;
			else if (c == '"')
				in_str = false;
			continue;
		}
		if (c == '"') {
			in_str = true;
		} else if (c == '[' || c == '{') {
			depth++;
			if (depth > max) {
				max = depth;
				if (max > limit) {
					if (ret_col)
						*ret_col = i + 1;
					return max;
				}
			}
		} else if ((c == ']' || c == '}') && depth > 0) {
			depth--;
		}
	}
	return max;
}

/* Replaces reals that hold exact integers below 2^53 by integers, recursively. */
static json_t *reals_to_ints(json_t *v)
{
	const char *k;
	json_t *e;
	size_t i;

	if (json_is_real(v)) {
		double d = json_real_value(v);

		/* Range first: casting an out-of-range double is undefined behaviour. */
		if (d > -9007199254740992.0 && d < 9007199254740992.0 && d == (double)(json_int_t)d) {
			json_decref(v);
			return json_integer((json_int_t)d);
		}
		return v;
	}
	if (json_is_array(v)) {
		json_array_foreach(v, i, e) json_array_set_new(v, i, reals_to_ints(json_incref(e)));
	} else if (json_is_object(v)) {
		json_object_foreach(v, k, e) json_object_set_new(v, k, reals_to_ints(json_incref(e)));
	}
	return v;
}

static bool id_is_valid(const json_t *id)
{
	/* jansson refuses integers beyond int64 at parse time, like serde's i64. */
	return json_is_integer(id) || json_is_string(id);
}

int jrpc_parse(const char *buf, size_t len, unsigned max_depth, struct jrpc_msg *ret)
{
	json_error_t jerr;
	json_t *root, *method, *id;

	memset(ret, 0, sizeof(*ret));
	ret->kind = JRPC_INVALID;

	/* Syntax errors (and nesting) with serde_json's text and position. */
	if (json_check(buf, len, max_depth, ret->error, sizeof(ret->error)) < 0)
		return 0;

	root = json_loadb(buf, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	if (!root && json_error_code(&jerr) == json_error_numeric_overflow) {
		/*
		 * serde_json reads an integer beyond 64 bits as a float; jansson
		 * refuses the whole text. Re-read with every number as a real and
		 * turn exact small ones back into integers, so the message is still
		 * answered (with the type error serde would give for that field).
		 */
		root = json_loadb(buf, len, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL,
				  &jerr);
		if (root)
			root = reals_to_ints(root);
	}
	if (!root) {
		snprintf(ret->error, sizeof(ret->error), "%s at line %d column %d", jerr.text,
			 jerr.line, jerr.column);
		return 0;
	}
	ret->root = root;

	if (!json_is_object(root)) {
		snprintf(ret->error, sizeof(ret->error), "expected a JSON-RPC object");
		return 0;
	}

	id = json_object_get(root, "id");
	method = json_object_get(root, "method");
	if (method) {
		if (!json_is_string(method)) {
			snprintf(ret->error, sizeof(ret->error),
				 "data did not match any variant of untagged enum JSONRPCMessage");
			return 0;
		}
		ret->method = json_string_value(method);
		ret->params = json_object_get(root, "params");
		if (!id) {
			ret->kind = JRPC_NOTIFICATION;
			return 0;
		}
		if (!id_is_valid(id)) {
			snprintf(ret->error, sizeof(ret->error),
				 "data did not match any variant of untagged enum RequestId");
			return 0;
		}
		ret->id = id;
		ret->kind = JRPC_REQUEST;
		return 0;
	}

	if (json_object_get(root, "result") || json_object_get(root, "error")) {
		ret->kind = JRPC_RESPONSE;
		return 0;
	}
	if (id) {
		snprintf(ret->error, sizeof(ret->error), "missing field `error`");
		return 0;
	}
	snprintf(ret->error, sizeof(ret->error),
		 "data did not match any variant of untagged enum JSONRPCMessage");
	return 0;
}

void jrpc_msg_done(struct jrpc_msg *m)
{
	json_decref(m->root);
	m->root = NULL;
}

char *jrpc_dump(const json_t *msg, size_t *ret_len)
{
	char *s = json_dumps(msg, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);

	if (s && ret_len)
		*ret_len = strlen(s);
	return s;
}
