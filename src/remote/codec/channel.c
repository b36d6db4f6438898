/* SPDX-License-Identifier: MIT */
/* The Noise channel's public key JSON and prologue (see channel.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "channel.h"
#include "jsonrpc.h"

static json_t *b64_json(const uint8_t *p, size_t n)
{
	char *s = malloc(base64_encoded_len(n) + 1);
	json_t *j;

	if (!s)
		return NULL;
	s[base64_encode(p, n, s)] = 0;
	j = json_string(s);
	free(s);
	return j;
}

json_t *channel_public_key_json(const struct noise_public *pk)
{
	json_t *o = json_object();

	if (!o || json_object_set_new(o, "suite", json_string(CHANNEL_SUITE)) < 0 ||
	    json_object_set_new(o, "x25519_public_key", b64_json(pk->dh_pk, sizeof(pk->dh_pk))) < 0 ||
	    json_object_set_new(o, "mlkem768_public_key", b64_json(pk->kem_pk, sizeof(pk->kem_pk))) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* A base64 member of exactly n decoded bytes. */
static int b64_member(const json_t *v, const char *name, uint8_t *out, size_t n, char *err,
		      size_t err_size)
{
	const json_t *m = json_object_get(v, name);
	uint8_t *buf;
	char why[128];
	ssize_t got;

	if (!json_is_string(m)) {
		snprintf(err, err_size, "%s: expected a base64 string", name);
		return -EINVAL;
	}
	buf = malloc(base64_decoded_max(json_string_length(m)) + 1);
	if (!buf)
		return -ENOMEM;
	got = base64_decode(json_string_value(m), json_string_length(m), buf, why, sizeof(why));
	if (got < 0)
		snprintf(err, err_size, "%s: invalid base64 (%s)", name, why);
	else if ((size_t)got != n)
		snprintf(err, err_size, "%s: %zd bytes, expected %zu", name, got, n);
	else
		memcpy(out, buf, n);
	free(buf);
	return got == (ssize_t)n ? 0 : -EINVAL;
}

int channel_public_key_parse(const json_t *v, struct noise_public *ret, char *err, size_t err_size)
{
	static const char *const members[] = { "suite", "x25519_public_key", "mlkem768_public_key" };
	const json_t *suite;
	const char *k;
	json_t *e;
	int r;

	if (!json_is_object(v)) {
		snprintf(err, err_size, "expected a public key object");
		return -EINVAL;
	}
	json_object_foreach((json_t *)v, k, e) {
		bool known = false;

		for (size_t i = 0; i < sizeof(members) / sizeof(members[0]); i++)
			known |= strcmp(k, members[i]) == 0 && strlen(k) == jrpc_key_len(k);
		if (!known) {
			snprintf(err, err_size, "unknown field in public key");
			return -EINVAL;
		}
	}
	suite = json_object_get(v, "suite");
	if (!json_is_string(suite) || strcmp(json_string_value(suite), CHANNEL_SUITE) != 0 ||
	    json_string_length(suite) != strlen(CHANNEL_SUITE)) {
		snprintf(err, err_size, "unsupported suite");
		return -EINVAL;
	}
	r = b64_member(v, "x25519_public_key", ret->dh_pk, sizeof(ret->dh_pk), err, err_size);
	if (r == 0)
		r = b64_member(v, "mlkem768_public_key", ret->kem_pk, sizeof(ret->kem_pk), err, err_size);
	return r;
}

/* part(x) = u64_be(len(x)) || x: upstream writes (x.len() as u64).to_be_bytes(). */
static uint8_t *put_part(uint8_t *w, const char *s)
{
	uint64_t n = strlen(s);

	for (int i = 0; i < 8; i++)
		w[i] = (uint8_t)(n >> (56 - 8 * i));
	memcpy(w + 8, s, n);
	return w + 8 + n;
}

uint8_t *channel_prologue(const char *environment_id, const char *registration_id,
			  const char *stream_id, size_t *ret_len)
{
	static const char label[] = "codex-exec-server-relay-noise/v1";
	size_t n = 32 + strlen(label) + strlen(environment_id) + strlen(registration_id) +
		   strlen(stream_id);
	uint8_t *p = malloc(n), *w;

	if (!p)
		return NULL;
	w = put_part(p, label);
	w = put_part(w, environment_id);
	w = put_part(w, registration_id);
	put_part(w, stream_id);
	*ret_len = n;
	return p;
}
