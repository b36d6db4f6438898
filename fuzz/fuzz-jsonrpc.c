/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: JSON-RPC decoding (proto/jsonrpc.h over proto/json-check.h).
 * decode -> validate -> re-encode: whatever parses must re-encode (jrpc_dump)
 * to text that jcheck_validate accepts and that decodes to an equal tree with the
 * same classification, and a second encode gives the same bytes.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "json-check.h"
#include "jsonrpc.h"

/* uexec's default --max-json-depth (serde_json's recursion limit). */
#define MAX_DEPTH 128

/*
 * json_equal() looks keys up with strlen(), so two objects whose keys hold
 * NUL bytes (see jsonrpc.c) never compare equal; compare by key length.
 */
static bool equal(const json_t *a, const json_t *b)
{
	const char *k;
	size_t klen, i;
	json_t *v;

	if (json_typeof(a) != json_typeof(b))
		return false;
	if (json_is_array(a)) {
		if (json_array_size(a) != json_array_size(b))
			return false;
		json_array_foreach(a, i, v)
			if (!equal(v, json_array_get(b, i)))
				return false;
		return true;
	}
	if (json_is_object(a)) {
		if (json_object_size(a) != json_object_size(b))
			return false;
		json_object_keylen_foreach((json_t *)a, k, klen, v) {
			const json_t *w = json_object_getn(b, k, klen);

			if (!w || !equal(v, w))
				return false;
		}
		return true;
	}
	return json_equal(a, b);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	/* jansson seeds its hash function from /dev/urandom: make runs repeatable. */
	json_object_seed(0x5eed);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct jrpc_msg m, m2;
	char err[256], *dump, *dump2;
	size_t dump_len, dump2_len, col = 0, err_len = 0;
	int valid;

	if (size > 1 << 20)
		return 0;

	/* The message mode jrpc_parse uses (repeated keys refused, numbers of any size). */
	valid = jcheck_validate_message(buf, size, MAX_DEPTH, err, sizeof(err), &err_len);
	if (valid == -ENOMEM)
		return 0;
	FUZZ_CHECK(valid == 0 || valid == -EBADMSG);
	/* by length: a repeated key holding U+0000 is quoted with its NUL */
	if (valid < 0)
		FUZZ_CHECK(err_len < sizeof(err) && memmem(err, err_len, " at line ", 9) != NULL);
	else
		FUZZ_CHECK(jrpc_nesting_depth(buf, size, 4 * MAX_DEPTH, &col) < MAX_DEPTH);

	if (jrpc_parse(buf, size, MAX_DEPTH, &m) < 0)
		return 0; /* -ENOMEM */
	if (valid < 0) {
		/* The validator's verdict wins, with its text. */
		FUZZ_CHECK(m.kind == JRPC_INVALID && m.root == NULL);
		FUZZ_CHECK(memcmp(m.error, err, err_len + 1) == 0);
	} else {
		/* Text serde_json accepts, jansson must load too (numbers included). */
		FUZZ_CHECK(m.root != NULL);
	}
	switch (m.kind) {
	case JRPC_INVALID:
		FUZZ_CHECK(m.error[0] != '\0');
		break;
	case JRPC_REQUEST:
		FUZZ_CHECK(m.method && (json_is_integer(m.id) || json_is_string(m.id)));
		break;
	case JRPC_NOTIFICATION:
		FUZZ_CHECK(m.method && !m.id);
		break;
	case JRPC_RESPONSE:
		FUZZ_CHECK(m.root && json_is_object(m.root));
		break;
	}
	if (!m.root) {
		jrpc_msg_done(&m);
		return 0;
	}

	if (jrpc_had_big_numbers()) {
		/*
		 * Integers beyond i64 are held as a u64's bits (jrpc_u64 reads
		 * them) or as doubles, numbers beyond f64 as 1e308: a dump cannot
		 * write them as they were, so the message does not round-trip.
		 * What uexec forwards is the clamped copy: valid JSON that parses
		 * again, to the same values.
		 */
		json_t *c = jrpc_copy_clamped(m.root);

		FUZZ_CHECK(c != NULL);
		jrpc_msg_done(&m);
		dump = jrpc_dump(c, &dump_len);
		FUZZ_CHECK(dump && jcheck_validate(dump, dump_len, MAX_DEPTH, err, sizeof(err)) == 0);
		FUZZ_CHECK(jrpc_parse(dump, dump_len, MAX_DEPTH, &m2) == 0);
		FUZZ_CHECK(m2.root && equal(c, m2.root));
		jrpc_msg_done(&m2);
		json_decref(c);
		free(dump);
		return 0;
	}
	dump = jrpc_dump(m.root, &dump_len);
	FUZZ_CHECK(dump && strlen(dump) == dump_len);
	/* What uexec writes is JSON that the reference's parser accepts. */
	FUZZ_CHECK(jcheck_validate(dump, dump_len, MAX_DEPTH, err, sizeof(err)) == 0);

	FUZZ_CHECK(jrpc_parse(dump, dump_len, MAX_DEPTH, &m2) == 0);
	FUZZ_CHECK(m2.root && equal(m.root, m2.root));
	FUZZ_CHECK(m2.kind == m.kind);
	FUZZ_CHECK(strcmp(m2.error, m.error) == 0);
	if (m.method)
		FUZZ_CHECK(m2.method && strcmp(m.method, m2.method) == 0);
	if (m.id)
		FUZZ_CHECK(m2.id && equal(m.id, m2.id));
	FUZZ_CHECK(!m.params == !m2.params);
	if (m.params)
		FUZZ_CHECK(equal(m.params, m2.params));

	dump2 = jrpc_dump(m2.root, &dump2_len);
	FUZZ_CHECK(dump2 && dump2_len == dump_len && memcmp(dump, dump2, dump_len) == 0);

	free(dump);
	free(dump2);
	jrpc_msg_done(&m2);
	jrpc_msg_done(&m);
	return 0;
}
