/* SPDX-License-Identifier: MIT */
/*
 * serde-compatible parameter decoding (see params.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "jsonrpc.h"
#include "params.h"
#include "rpc.h"

size_t params_debug_char(unsigned char ch, char *out)
{
	switch (ch) {
	case '"':
	case '\\':
		out[0] = '\\';
		out[1] = (char)ch;
		return 2;
	case '\n':
		out[0] = '\\';
		out[1] = 'n';
		return 2;
	case '\t':
		out[0] = '\\';
		out[1] = 't';
		return 2;
	case '\r':
		out[0] = '\\';
		out[1] = 'r';
		return 2;
	default:
		if (ch < 0x20 || ch == 0x7f)
			return (size_t)sprintf(out, "\\u{%x}", ch);
		out[0] = (char)ch;
		return 1;
	}
}

int params_check_strings(const json_t *arr, char *err, size_t errsz)
{
	size_t i;
	json_t *e;

	json_array_foreach(arr, i, e) {
		if (!json_is_string(e)) {
			params_type_error(e, "a string", err, errsz);
			return -EINVAL;
		}
	}
	return 0;
}

/* Rust Debug-style quoting of a string for "invalid type: string \"...\"". */
static void debug_str(const char *s, size_t n, char *out, size_t size)
{
	size_t o = 0;

	if (size < 4)
		return;
	out[o++] = '"';
	for (size_t i = 0; i < n && o + 8 < size; i++)
		o += params_debug_char((unsigned char)s[i], out + o);
	out[o++] = '"';
	out[o] = 0;
}

/* Shortest representation that round-trips, with a decimal point like serde prints. */
static void float_str(double d, char *out, size_t size)
{
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(out, size, "%.*g", prec, d);
		if (strtod(out, NULL) == d)
			break;
	}
	if (!strpbrk(out, ".eEn"))
		strncat(out, ".0", size - strlen(out) - 1);
}

static void type_error(const json_t *v, const char *what, bool plain_numbers, char *err,
		       size_t errsz)
{
	char u[200];

	if (plain_numbers && json_is_number(v) && strncmp(what, "internally tagged", 17) != 0) {
		/*
		 * serde_json's Value deserializer reports numbers without their
		 * value; only internally tagged enums (decoded through serde's
		 * Content) print "integer `1`" (p06_nested_schema.out).
		 */
		snprintf(err, errsz, "invalid type: number, expected %s", what);
		return;
	}
	switch (json_typeof(v)) {
	case JSON_NULL:
		snprintf(u, sizeof(u), "null");
		break;
	case JSON_TRUE:
		snprintf(u, sizeof(u), "boolean `true`");
		break;
	case JSON_FALSE:
		snprintf(u, sizeof(u), "boolean `false`");
		break;
	case JSON_INTEGER: {
		char n[32];

		jrpc_integer_text(v, n, sizeof(n));
		snprintf(u, sizeof(u), "integer `%s`", n);
		break;
	}
	case JSON_REAL: {
		char f[64];

		float_str(json_real_value(v), f, sizeof(f));
		snprintf(u, sizeof(u), "floating point `%s`", f);
		break;
	}
	case JSON_STRING: {
		char q[160];

		debug_str(json_string_value(v), json_string_length(v), q, sizeof(q));
		snprintf(u, sizeof(u), "string %s", q);
		break;
	}
	case JSON_ARRAY:
		snprintf(u, sizeof(u), "sequence");
		break;
	case JSON_OBJECT:
		snprintf(u, sizeof(u), "map");
		break;
	}
	snprintf(err, errsz, "invalid type: %s, expected %s", u, what);
}

void params_type_error(const json_t *v, const char *what, char *err, size_t errsz)
{
	type_error(v, what, true, err, errsz);
}

void params_type_error_valued(const json_t *v, const char *what, char *err, size_t errsz)
{
	type_error(v, what, false, err, errsz);
}

static int check_u64(const json_t *v, const char *what, bool top, char *err, size_t errsz)
{
	uint64_t u;

	/*
	 * The reference answers "invalid number" for every JSON number that is
	 * no u64: negative, fractional, or beyond 2^64 (read as a double).
	 */
	if (json_is_number(v)) {
		if (jrpc_u64(v, &u) < 0) {
			snprintf(err, errsz, "invalid number");
			return -EINVAL;
		}
		return 0;
	}
	type_error(v, what, top, err, errsz);
	return -EINVAL;
}

/*
 * Nested structs a client may send as a sequence (serde reads a struct from
 * one positionally): the number of fields of those whose first field is
 * required, SEQ_ALL_DEFAULT for those whose fields all have defaults (an
 * empty sequence is then the default struct), 0 when not known.
 */
#define SEQ_ALL_DEFAULT (-1)

static int struct_seq_fields(const char *what)
{
	static const struct {
		const char *what;
		int n;
	} known[] = {
		{ "struct WireFileSystemSandboxContext", 10 },
		{ "struct ExecEnvPolicy", 5 },
		{ "struct ShellSnapshotRequest", 2 },
		{ "struct ShellInfo", 2 },
		{ "struct ExecMetadata", SEQ_ALL_DEFAULT },
		{ "struct ManagedNetworkSandboxContext", SEQ_ALL_DEFAULT },
	};

	for (size_t i = 0; what && i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(what, known[i].what) == 0)
			return known[i].n;
	return 0;
}

/* A struct field's value that is no object: 0 if serde takes it anyway, else -EINVAL. */
static int struct_error(const json_t *v, const char *what, bool top, char *err, size_t errsz)
{
	if (json_is_array(v) && json_array_size(v) == 0) {
		/* serde's visit_seq with no element: defaults, or the first field missing. */
		int n = struct_seq_fields(what);

		if (n == SEQ_ALL_DEFAULT)
			return 0;
		if (n > 0) {
			snprintf(err, errsz, "invalid length 0, expected %s with %d element%s", what, n,
				 n == 1 ? "" : "s");
			return -EINVAL;
		}
	}
	type_error(v, what, top, err, errsz);
	return -EINVAL;
}

int params_struct_error(const json_t *v, const char *what, char *err, size_t errsz)
{
	return struct_error(v, what, true, err, errsz);
}

static int check_value(const struct pfield *f, json_t *v, bool top, char *err, size_t errsz)
{
	const char *k;
	json_t *e;

	switch (f->type) {
	case P_STRING:
		if (json_is_string(v))
			return 0;
		type_error(v, "a string", top, err, errsz);
		return -EINVAL;
	case P_BOOL:
	case P_BOOL_DEFAULT:
		if (json_is_boolean(v))
			return 0;
		type_error(v, "a boolean", top, err, errsz);
		return -EINVAL;
	case P_U64:
		return check_u64(v, "u64", top, err, errsz);
	case P_USIZE:
		return check_u64(v, "usize", top, err, errsz);
	case P_STRING_SEQ:
		if (!json_is_array(v)) {
			type_error(v, "a sequence", top, err, errsz);
			return -EINVAL;
		}
		return params_check_strings(v, err, errsz);
	case P_SEQ:
		if (json_is_array(v))
			return 0;
		type_error(v, "a sequence", top, err, errsz);
		return -EINVAL;
	case P_STRING_MAP:
		if (!json_is_object(v)) {
			type_error(v, "a map", top, err, errsz);
			return -EINVAL;
		}
		json_object_foreach(v, k, e) {
			if (!json_is_string(e)) {
				params_type_error(e, "a string", err, errsz);
				return -EINVAL;
			}
		}
		return 0;
	case P_STRUCT:
		if (json_is_object(v))
			return 0;
		return struct_error(v, f->what, top, err, errsz);
	case P_ENUM_STR:
		if (json_is_string(v))
			return 0;
		type_error(v, f->what ? f->what : "a string", top, err, errsz);
		return -EINVAL;
	case P_ANY:
		return 0;
	}
	return 0;
}

/* The decoded value of a field, or NULL for null and for the empty sequence of a default struct. */
static json_t *absent_if_default(const struct pfield *f, json_t *v)
{
	if (json_is_null(v))
		return NULL;
	if (f->type == P_STRUCT && json_is_array(v))
		return NULL; /* check_value accepted it: an empty sequence of an all-default struct */
	return v;
}

static int decode(json_t *params, const char *struct_name, const struct pfield *f, size_t n,
		  json_t **out, bool top, char *err, size_t errsz)
{
	const char *key;
	json_t *v;
	char what[128];

	for (size_t i = 0; i < n; i++)
		out[i] = NULL;

	if (!params || json_is_null(params)) {
		snprintf(what, sizeof(what), "struct %s", struct_name);
		params_type_error(json_null(), what, err, errsz);
		return -EINVAL;
	}
	if (json_is_array(params)) {
		/* serde's visit_seq: fields in declaration order, every one needed. */
		for (size_t i = 0; i < n; i++) {
			if (i >= json_array_size(params) && f[i].seq_default)
				continue; /* serde fills in the default */
			if (i >= json_array_size(params)) {
				snprintf(err, errsz,
					 "invalid length %zu, expected struct %s with %zu element%s", i,
					 struct_name, n, n == 1 ? "" : "s");
				return -EINVAL;
			}
			v = json_array_get(params, i);
			if (json_is_null(v) && !f[i].required && f[i].type != P_BOOL_DEFAULT)
				continue;
			if (check_value(&f[i], v, top, err, errsz) < 0)
				return -EINVAL;
			out[i] = absent_if_default(&f[i], v);
		}
		if (json_array_size(params) > n) {
			snprintf(err, errsz, "invalid length %zu, expected fewer elements in array",
				 json_array_size(params));
			return -EINVAL;
		}
		return 0;
	}
	if (!json_is_object(params)) {
		snprintf(what, sizeof(what), "struct %s", struct_name);
		params_type_error(params, what, err, errsz);
		return -EINVAL;
	}

	json_object_foreach(params, key, v) {
		for (size_t i = 0; i < n; i++) {
			if (!jrpc_key_is(key, f[i].name))
				continue;
			/* Option<T>: null is "absent" unless the field is required. */
			if (json_is_null(v) && !f[i].required && f[i].type != P_BOOL_DEFAULT)
				break;
			if (check_value(&f[i], v, top, err, errsz) < 0)
				return -EINVAL;
			out[i] = absent_if_default(&f[i], v);
			break;
		}
	}

	for (size_t i = 0; i < n; i++) {
		if (f[i].required && !json_object_get(params, f[i].name)) {
			snprintf(err, errsz, "missing field `%s`", f[i].name);
			return -EINVAL;
		}
	}
	return 0;
}

int params_decode(json_t *params, const char *struct_name, const struct pfield *f, size_t n,
		  json_t **out, char *err, size_t errsz)
{
	return decode(params, struct_name, f, n, out, true, err, errsz);
}

int params_decode_nested(json_t *obj, const char *struct_name, const struct pfield *f, size_t n,
			 json_t **out, char *err, size_t errsz)
{
	return decode(obj, struct_name, f, n, out, true, err, errsz);
}

uint64_t params_u64(const json_t *v, uint64_t def)
{
	uint64_t u;

	return v && jrpc_u64(v, &u) == 0 ? u : def;
}

bool params_bool(const json_t *v, bool def)
{
	return v ? json_is_true(v) : def;
}

int params_unit_enum(json_t *v, const char *const *variants, char *err, size_t errsz,
		     size_t *ret_errlen)
{
	const char *k;
	size_t klen, n = 0, o, q;
	json_t *val = NULL;

	if (!v)
		v = json_null(); /* a required field sent as null (decoded as absent) */
	if (json_is_string(v)) {
		k = json_string_value(v);
		klen = json_string_length(v);
	} else if (json_is_object(v)) {
		void *it = json_object_iter(v);

		if (json_object_size(v) != 1) {
			snprintf(err, errsz, "invalid value: map, expected map with a single key");
			*ret_errlen = strlen(err);
			return -EINVAL;
		}
		k = json_object_iter_key(it);
		klen = jrpc_key_len(k);
		val = json_object_iter_value(it);
	} else {
		type_error(v, "string or map", true, err, errsz);
		*ret_errlen = strlen(err);
		return -EINVAL;
	}
	for (size_t i = 0; variants[i]; i++) {
		if (strlen(variants[i]) == klen && memcmp(variants[i], k, klen) == 0) {
			if (val && !json_is_null(val)) {
				type_error(val, "unit", true, err, errsz);
				*ret_errlen = strlen(err);
				return -EINVAL;
			}
			return (int)i;
		}
	}
	while (variants[n])
		n++;
	o = (size_t)snprintf(err, errsz, "unknown variant `");
	q = klen < errsz - o - 1 ? klen : errsz - o - 1;
	memcpy(err + o, k, q); /* the name as sent, NULs included */
	o += q;
	o += (size_t)snprintf(err + o, errsz - o, "`, expected ");
	for (size_t i = 0; i < n && o < errsz; i++) {
		const char *sep = i == 0 ? (n > 2 ? "one of " : "") : n == 2 ? " or " : ", ";

		o += (size_t)snprintf(err + o, errsz - o, "%s`%s`", sep, variants[i]);
	}
	*ret_errlen = o < errsz ? o : errsz - 1;
	return -EINVAL;
}

int params_base64(const json_t *s, uint8_t **ret, size_t *ret_len, char *err, size_t errsz)
{
	uint8_t *data = malloc(base64_decoded_max(json_string_length(s)) + 1);
	ssize_t n;

	if (!data)
		return -ENOMEM;
	n = base64_decode(json_string_value(s), json_string_length(s), data, err, errsz);
	if (n < 0) {
		free(data);
		return -EINVAL;
	}
	*ret = data;
	*ret_len = (size_t)n;
	return 0;
}

int params_base64_or_reply(struct conn *c, json_t *id, const json_t *s, int code, const char *what,
			   uint8_t **ret, size_t *ret_len)
{
	char err[512]; /* the callers' ERRSZ */
	int r = params_base64(s, ret, ret_len, err, sizeof(err));

	if (r == -ENOMEM)
		rpc_reply_errno_internal(c, id, ENOMEM);
	else if (r < 0)
		rpc_reply_error(c, id, code, "%s%s", what, err);
	return r < 0 ? -EINVAL : 0;
}

bool params_decode_or_reply(struct conn *c, json_t *id, json_t *params, const char *name,
			    const struct pfield *f, size_t n, json_t **out)
{
	char err[512]; /* the callers' ERRSZ */

	if (params_decode(params, name, f, n, out, err, sizeof(err)) < 0) {
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "%s", err);
		return false;
	}
	return true;
}
