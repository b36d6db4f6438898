/* SPDX-License-Identifier: MIT */
/*
 * Decoding of JSON-RPC params objects with the reference's (serde's) error
 * texts: "missing field `x`", "invalid type: boolean `true`, expected a
 * string", ... Entries are checked in the order the client sent them, then
 * missing required fields in declaration order, as serde's derive does.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum ptype {
	P_STRING,      /* String */
	P_BOOL,        /* bool */
	P_BOOL_DEFAULT, /* bool with #[serde(default)]: absent is false, null is a type error */
	P_U64,         /* u64 */
	P_USIZE,       /* usize */
	P_STRING_SEQ,  /* Vec<String> */
	P_SEQ,         /* Vec<T> of structs: a sequence, its elements validated by the caller */
	P_STRING_MAP,  /* HashMap<String, String> */
	P_STRUCT,      /* a nested struct (object), validated by the caller; name in .what */
	P_ENUM_STR,    /* a unit enum variant as a string, validated by the caller */
	P_ANY,         /* anything (ignored fields) */
};

struct pfield {
	const char *name;
	enum ptype type;
	bool required;     /* absent -> "missing field" (null is then a type error) */
	const char *what;  /* P_STRUCT: "struct ExecEnvPolicy"; P_ENUM_STR: "string or map" */
	bool seq_default;  /* #[serde(default)]: a params array may end before it */
};

/*
 * Decodes params (may be NULL = absent) as struct `struct_name` with fields f[0..n).
 * On success returns 0 and sets out[i] to the field's value (borrowed) or NULL
 * when absent or null. On failure returns -EINVAL with the message in err.
 */
int params_decode(json_t *params, const char *struct_name, const struct pfield *f, size_t n,
		  json_t **out, char *err, size_t errsz);

/* Same for a struct nested inside params (numbers are then printed with their value). */
int params_decode_nested(json_t *obj, const char *struct_name, const struct pfield *f, size_t n,
			 json_t **out, char *err, size_t errsz);

/*
 * For the value v of a struct-typed field (what: "struct X") that is no
 * object: 0 when serde takes it anyway (an empty sequence for a struct whose
 * fields all have defaults, then absent), else -EINVAL with serde's message
 * ("invalid length 0, expected struct X with N elements", "invalid type: ...").
 */
int params_struct_error(const json_t *v, const char *what, char *err, size_t errsz);

/* serde's "invalid type: <unexpected>, expected <what>" for value v. */
void params_type_error(const json_t *v, const char *what, char *err, size_t errsz);
/*
 * Every element of the array arr is a string, else serde's "invalid type: ..., expected a
 * string" in err and -EINVAL.
 */
int params_check_strings(const json_t *arr, char *err, size_t errsz);
/* The same where serde decodes through its Content buffer: numbers with their value. */
void params_type_error_valued(const json_t *v, const char *what, char *err, size_t errsz);

/* Reads a P_U64/P_USIZE value decoded by params_decode (NULL -> def). */
uint64_t params_u64(const json_t *v, uint64_t def);
/* Reads a P_BOOL value (NULL -> def). */
bool params_bool(const json_t *v, bool def);

/*
 * A base64 string (a decoded P_STRING) into a new buffer: *ret (malloc'd,
 * with a spare byte) and *ret_len. Returns 0, -ENOMEM, or -EINVAL with the
 * decoder's text in err.
 */
int params_base64(const json_t *s, uint8_t **ret, size_t *ret_len, char *err, size_t errsz);

/*
 * One byte of a string in Rust's Debug form (serde's and the reference's
 * quoting: \" \\ \n \t \r, \u{..} for other controls) into out, which has
 * room for 7 bytes (the escape and a NUL). Returns the bytes written, NUL not
 * counted.
 */
size_t params_debug_char(unsigned char ch, char *out);

struct conn;
/*
 * params_decode for a request's handler: an error is replied to (-32602
 * with serde's text). Returns true when out holds the fields.
 */
bool params_decode_or_reply(struct conn *c, json_t *id, json_t *params, const char *name,
			    const struct pfield *f, size_t n, json_t **out);

/*
 * params_base64 for a request's handler: an invalid string is replied to
 * with code and what (a text before the decoder's message, "" for none),
 * no memory with an internal error. Returns 0, or -EINVAL once replied.
 */
int params_base64_or_reply(struct conn *c, json_t *id, const json_t *s, int code, const char *what,
			   uint8_t **ret, size_t *ret_len);

/*
 * A serde externally tagged enum of unit variants (NULL-terminated names;
 * v NULL is a null):
 * the string "v", or the map {"v": null}. Returns the variant's index, or
 * -EINVAL with serde's message in err ("unknown variant `x`, expected
 * `interrupt`", "invalid value: map, expected map with a single key",
 * "invalid type: number, expected unit", ...). Variant names are compared
 * with their length, so a name holding a NUL matches none and is quoted
 * whole: *ret_errlen gets the length of the message (it may hold a NUL).
 */
int params_unit_enum(json_t *v, const char *const *variants, char *err, size_t errsz,
		     size_t *ret_errlen);
