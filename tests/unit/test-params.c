/* SPDX-License-Identifier: MIT */
/*
 * src/rpc/params.c: params objects and sequences decoded with serde's error
 * texts (PROTOCOL.md §4, the p05/p06 probes), entries checked in the order
 * sent, then missing required fields; u64 edges; unit enums. Params come from
 * jrpc_parse, as the server reads them (big u64s, NUL in keys).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "jsonrpc.h"
#include "params.h"
#include "tests.h"

/* A struct of every field type (the names are the test's own). */
enum { F_ID, F_TTY, F_PIPE, F_MAX, F_ARGV, F_ENV, F_META, F_POLICY, F_ANY, F_SIZE, F_KIND, N_F };
static const struct pfield demo[N_F] = {
	[F_ID] = { "processId", P_STRING, true, NULL, false },
	[F_TTY] = { "tty", P_BOOL, false, NULL, false },
	[F_PIPE] = { "pipe", P_BOOL_DEFAULT, false, NULL, false },
	[F_MAX] = { "maxBytes", P_U64, false, NULL, false },
	[F_ARGV] = { "argv", P_STRING_SEQ, false, NULL, false },
	[F_ENV] = { "env", P_STRING_MAP, false, NULL, false },
	[F_META] = { "meta", P_STRUCT, false, "struct ExecMetadata", false },
	[F_POLICY] = { "policy", P_STRUCT, false, "struct ExecEnvPolicy", false },
	[F_ANY] = { "extra", P_ANY, false, NULL, false },
	[F_SIZE] = { "size", P_USIZE, false, NULL, true },
	[F_KIND] = { "kind", P_ENUM_STR, false, "string or map", true },
};

static struct jrpc_msg msg;

/* The params of a request carrying `params` (NULL: none). */
static json_t *parse(const char *params)
{
	char text[1024];
	int n = params ? snprintf(text, sizeof(text), "{\"id\":1,\"method\":\"m\",\"params\":%s}", params)
		       : snprintf(text, sizeof(text), "{\"id\":1,\"method\":\"m\"}");

	jrpc_msg_done(&msg);
	ASSERT_EQ(0, jrpc_parse(text, (size_t)n, 64, &msg));
	ASSERT_EQ(JRPC_REQUEST, msg.kind);
	return msg.params;
}

/* params -> NULL (decoded) or the error text. */
static const struct {
	const char *params, *error;
} decode_cases[] = {
	/* the params value itself */
	{ NULL, "invalid type: null, expected struct Demo" },
	{ "null", "invalid type: null, expected struct Demo" },
	{ "\"x\"", "invalid type: string \"x\", expected struct Demo" },
	{ "7", "invalid type: number, expected struct Demo" }, /* serde_json's Value: no value */
	{ "true", "invalid type: boolean `true`, expected struct Demo" },
	/* missing, after every entry sent is checked */
	{ "{}", "missing field `processId`" },
	{ "{\"tty\":1}", "invalid type: number, expected a boolean" },
	{ "{\"processId\\u0000\":\"p\"}", "missing field `processId`" }, /* no such key */
	{ "{\"processId\":null}", "invalid type: null, expected a string" },
	/* each type */
	{ "{\"processId\":true}", "invalid type: boolean `true`, expected a string" },
	{ "{\"processId\":\"a\\\"\\n\\t\\u0001\\u007f\",\"tty\":\"yes\"}",
	  "invalid type: string \"yes\", expected a boolean" },
	{ "{\"processId\":[]}", "invalid type: sequence, expected a string" },
	{ "{\"processId\":{}}", "invalid type: map, expected a string" },
	{ "{\"processId\":\"p\",\"pipe\":null}", "invalid type: null, expected a boolean" },
	{ "{\"processId\":\"p\",\"maxBytes\":-1}", "invalid number" },
	{ "{\"processId\":\"p\",\"maxBytes\":1.5}", "invalid number" },
	{ "{\"processId\":\"p\",\"maxBytes\":1e30}", "invalid number" },
	{ "{\"processId\":\"p\",\"maxBytes\":\"5\"}", "invalid type: string \"5\", expected u64" },
	{ "{\"processId\":\"p\",\"size\":false}", "invalid type: boolean `false`, expected usize" },
	{ "{\"processId\":\"p\",\"argv\":\"ls\"}", "invalid type: string \"ls\", expected a sequence" },
	{ "{\"processId\":\"p\",\"argv\":[\"ls\",1]}", "invalid type: number, expected a string" },
	{ "{\"processId\":\"p\",\"env\":[]}", "invalid type: sequence, expected a map" },
	{ "{\"processId\":\"p\",\"env\":{\"A\":null}}", "invalid type: null, expected a string" },
	{ "{\"processId\":\"p\",\"meta\":\"x\"}",
	  "invalid type: string \"x\", expected struct ExecMetadata" },
	{ "{\"processId\":\"p\",\"policy\":[]}",
	  "invalid length 0, expected struct ExecEnvPolicy with 5 elements" },
	{ "{\"processId\":\"p\",\"policy\":[1]}",
	  "invalid type: sequence, expected struct ExecEnvPolicy" },
	{ "{\"processId\":\"p\",\"kind\":3}", "invalid type: number, expected string or map" },
	/* the first bad entry in the order sent wins */
	{ "{\"argv\":1,\"processId\":2}", "invalid type: number, expected a sequence" },
	{ "{\"processId\":2,\"argv\":1}", "invalid type: number, expected a string" },
	/* control characters quoted as Rust's Debug does */
	{ "{\"processId\":\"p\",\"argv\":\"a\\\"b\\\\c\\nd\\te\\rf\\u0001g\\u007f\"}",
	  "invalid type: string \"a\\\"b\\\\c\\nd\\te\\rf\\u{1}g\\u{7f}\", expected a sequence" },
	/* the sequence form: fields in declaration order */
	{ "[]", "invalid length 0, expected struct Demo with 11 elements" },
	{ "[\"p\"]", "invalid length 1, expected struct Demo with 11 elements" },
	{ "[true]", "invalid type: boolean `true`, expected a string" },
	{ "[\"p\",null,false,1,[],{},null,null,null,1,\"k\",\"one too many\"]",
	  "invalid length 12, expected fewer elements in array" },
	/* decoded */
	{ "{\"processId\":\"p\"}", NULL },
	{ "{\"processId\":\"p\",\"tty\":null,\"maxBytes\":null,\"unknown\":[1]}", NULL },
	{ "{\"processId\":\"p\",\"maxBytes\":18446744073709551615,\"size\":0}", NULL },
	{ "{\"processId\":\"p\",\"meta\":[],\"extra\":{\"any\":[null]}}", NULL },
	{ "[\"p\",null,false,1,[],{},null,null,null]", NULL }, /* the rest: serde's defaults */
};

TEST(decode_errors_and_successes)
{
	json_t *out[N_F];
	char err[256];

	for (size_t i = 0; i < sizeof(decode_cases) / sizeof(decode_cases[0]); i++) {
		json_t *p = parse(decode_cases[i].params);
		int r = params_decode(p, "Demo", demo, N_F, out, err, sizeof(err));

		if (!decode_cases[i].error) {
			if (r != 0)
				tests_fail(__FILE__, __LINE__, "case %zu (%s): %s", i,
					   decode_cases[i].params, err);
			continue;
		}
		if (r != -EINVAL || strcmp(err, decode_cases[i].error) != 0)
			tests_fail(__FILE__, __LINE__, "case %zu (%s): got %d \"%s\", wanted \"%s\"", i,
				   decode_cases[i].params ? decode_cases[i].params : "(none)", r,
				   r ? err : "", decode_cases[i].error);
	}
	jrpc_msg_done(&msg);
}

TEST(decoded_values)
{
	json_t *out[N_F];
	char err[256];

	ASSERT_EQ(0, params_decode(parse("{\"extra\":1,\"processId\":\"p\",\"tty\":true,\"pipe\":false,"
					 "\"maxBytes\":18446744073709551615,\"argv\":[\"a\"],"
					 "\"env\":{\"K\":\"V\"},\"meta\":[],\"policy\":{}}"),
				   "Demo", demo, N_F, out, err, sizeof(err)));
	ASSERT_STREQ("p", json_string_value(out[F_ID]));
	ASSERT_TRUE(params_bool(out[F_TTY], false));
	ASSERT_TRUE(out[F_PIPE] != NULL && !params_bool(out[F_PIPE], true));
	ASSERT_TRUE(params_u64(out[F_MAX], 0) == UINT64_MAX); /* a big u64, as sent */
	ASSERT_EQ(1, json_array_size(out[F_ARGV]));
	ASSERT_STREQ("V", json_string_value(json_object_get(out[F_ENV], "K")));
	ASSERT_TRUE(out[F_META] == NULL); /* [] of an all-default struct: absent */
	ASSERT_TRUE(json_is_object(out[F_POLICY]));
	ASSERT_EQ(1, json_integer_value(out[F_ANY]));
	ASSERT_TRUE(out[F_SIZE] == NULL && out[F_KIND] == NULL);
	/* absent and null read as the defaults */
	ASSERT_EQ(0, params_decode(parse("{\"processId\":\"p\",\"tty\":null}"), "Demo", demo, N_F, out,
				   err, sizeof(err)));
	ASSERT_TRUE(out[F_TTY] == NULL && out[F_MAX] == NULL);
	ASSERT_TRUE(params_bool(out[F_TTY], true));
	ASSERT_EQ(42, params_u64(out[F_MAX], 42));
	/* the sequence form fills out[] by position */
	ASSERT_EQ(0, params_decode(parse("[\"q\",true,false,7,[],{},null,null,null]"), "Demo", demo,
				   N_F, out, err, sizeof(err)));
	ASSERT_STREQ("q", json_string_value(out[F_ID]));
	ASSERT_EQ(7, params_u64(out[F_MAX], 0));
	ASSERT_TRUE(params_bool(out[F_TTY], false));
	jrpc_msg_done(&msg);
}

TEST(type_error_texts)
{
	static const struct {
		const char *value, *plain, *valued;
	} cases[] = {
		{ "1", "invalid type: number, expected X", "invalid type: integer `1`, expected X" },
		{ "-2", "invalid type: number, expected X", "invalid type: integer `-2`, expected X" },
		{ "0.5", "invalid type: number, expected X",
		  "invalid type: floating point `0.5`, expected X" },
		{ "2.0", "invalid type: number, expected X",
		  "invalid type: floating point `2.0`, expected X" },
		{ "\"s\"", "invalid type: string \"s\", expected X",
		  "invalid type: string \"s\", expected X" },
		{ "null", "invalid type: null, expected X", "invalid type: null, expected X" },
		{ "[]", "invalid type: sequence, expected X", "invalid type: sequence, expected X" },
		{ "{}", "invalid type: map, expected X", "invalid type: map, expected X" },
	};
	char err[128];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[64];
		json_t *v;

		snprintf(text, sizeof(text), "{\"v\":%s}", cases[i].value);
		v = json_object_get(parse(text), "v");
		params_type_error(v, "X", err, sizeof(err));
		ASSERT_STREQ(cases[i].plain, err);
		params_type_error_valued(v, "X", err, sizeof(err));
		ASSERT_STREQ(cases[i].valued, err);
	}
	/* internally tagged enums are read through serde's Content: with the value */
	params_type_error(json_object_get(parse("{\"v\":3}"), "v"), "internally tagged enum T", err,
			  sizeof(err));
	ASSERT_STREQ("invalid type: integer `3`, expected internally tagged enum T", err);
	jrpc_msg_done(&msg);
}

TEST(struct_given_as_something_else)
{
	char err[128];

	/* all fields defaulted: an empty sequence is the default struct */
	ASSERT_EQ(0, params_struct_error(json_object_get(parse("{\"v\":[]}"), "v"),
					 "struct ManagedNetworkSandboxContext", err, sizeof(err)));
	ASSERT_EQ(-EINVAL, params_struct_error(json_object_get(parse("{\"v\":[]}"), "v"),
					       "struct ShellInfo", err, sizeof(err)));
	ASSERT_STREQ("invalid length 0, expected struct ShellInfo with 2 elements", err);
	ASSERT_EQ(-EINVAL, params_struct_error(json_object_get(parse("{\"v\":[]}"), "v"),
					       "struct Unknown", err, sizeof(err)));
	ASSERT_STREQ("invalid type: sequence, expected struct Unknown", err);
	ASSERT_EQ(-EINVAL, params_struct_error(json_object_get(parse("{\"v\":false}"), "v"),
					       "struct ShellInfo", err, sizeof(err)));
	ASSERT_STREQ("invalid type: boolean `false`, expected struct ShellInfo", err);
	jrpc_msg_done(&msg);
}

TEST(unit_enums)
{
	static const char *const three[] = { "interrupt", "terminate", "kill", NULL };
	static const char *const two[] = { "a", "b", NULL };
	static const char *const one[] = { "only", NULL };
	static const struct {
		const char *const *variants;
		const char *value; /* NULL: absent */
		int index;	   /* or -EINVAL with: */
		const char *error;
	} cases[] = {
		{ three, "\"interrupt\"", 0, NULL },
		{ three, "\"kill\"", 2, NULL },
		{ three, "{\"terminate\":null}", 1, NULL },
		{ three, "\"Kill\"", -EINVAL,
		  "unknown variant `Kill`, expected one of `interrupt`, `terminate`, `kill`" },
		{ two, "\"c\"", -EINVAL, "unknown variant `c`, expected `a` or `b`" },
		{ one, "\"c\"", -EINVAL, "unknown variant `c`, expected `only`" },
		{ three, "{\"kill\":1}", -EINVAL, "invalid type: number, expected unit" },
		{ three, "{\"kill\":[]}", -EINVAL, "invalid type: sequence, expected unit" },
		{ three, "{}", -EINVAL, "invalid value: map, expected map with a single key" },
		{ three, "{\"kill\":null,\"interrupt\":null}", -EINVAL,
		  "invalid value: map, expected map with a single key" },
		{ three, "5", -EINVAL, "invalid type: number, expected string or map" },
		{ three, NULL, -EINVAL, "invalid type: null, expected string or map" },
	};
	char err[256];
	size_t len;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *v = NULL;
		char text[128];
		int r;

		if (cases[i].value) {
			snprintf(text, sizeof(text), "{\"v\":%s}", cases[i].value);
			v = json_object_get(parse(text), "v");
		}
		r = params_unit_enum(v, cases[i].variants, err, sizeof(err), &len);
		ASSERT_EQ(cases[i].index, r);
		if (r < 0) {
			ASSERT_STREQ(cases[i].error, err);
			ASSERT_EQ(strlen(cases[i].error), len);
		}
	}
	/* a name holding a NUL matches none and is quoted whole */
	ASSERT_EQ(-EINVAL, params_unit_enum(json_object_get(parse("{\"v\":\"kill\\u0000x\"}"), "v"), three,
					    err, sizeof(err), &len));
	ASSERT_EQ(sizeof("unknown variant `kill\0x`, expected one of `interrupt`, `terminate`, `kill`") - 1,
		  len);
	ASSERT_MEMEQ("unknown variant `kill\0x`, expected one of", err, 41);
	/* a short buffer: cut, its length within it */
	ASSERT_EQ(-EINVAL, params_unit_enum(json_object_get(parse("{\"v\":\"zzz\"}"), "v"), three, err,
					    24, &len));
	ASSERT_EQ(23, len);
	ASSERT_MEMEQ("unknown variant `zzz`, e", err, 23);
	jrpc_msg_done(&msg);
}

TEST_MAIN()
