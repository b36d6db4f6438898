/* SPDX-License-Identifier: MIT */
/*
 * The JSON hot path's part in the rpc layer: the switch, the request's id,
 * and replies written straight into the output buffer. The dispatch itself
 * (rpc_fast_dispatch) is in rpc.c, next to the method table and counters it
 * shares with the general path.
 */
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "log.h"
#include "rpc.h"

static bool fast_default(void)
{
	const char *e = getenv("UEXEC_JSON_FAST");

	return !e || strcmp(e, "0") != 0;
}

bool rpc_fast_enabled;

/* Read once at start-up (before main's argument parsing), like the other defaults. */
__attribute__((constructor)) static void rpc_fast_init(void)
{
	rpc_fast_enabled = fast_default();
}

json_t *rpc_fast_id(const struct jrpc_fast_req *r)
{
	return r->id_is_string ? json_stringn(r->id_str, r->id_str_len) : json_integer(r->id_int);
}

struct outchunk *rpc_fast_reply_begin(struct conn *c, const struct jrpc_fast_req *r, size_t len,
				      uint8_t **ret_result)
{
	static const char pre[] = "{\"id\":", mid[] = ",\"result\":";
	struct outchunk *o;
	uint8_t *w;

	o = conn_alloc_msg(c, sizeof(pre) - 1 + r->id_json_len + sizeof(mid) - 1 + len + 1, &w);
	if (!o) {
		log_error_ratelimited("Out of memory queueing a reply for %s, closing", c->peer);
		conn_close(c, WS_CLOSE_INTERNAL, "out of memory");
		return NULL;
	}
	memcpy(w, pre, sizeof(pre) - 1);
	w += sizeof(pre) - 1;
	memcpy(w, r->id_json, r->id_json_len);
	w += r->id_json_len;
	memcpy(w, mid, sizeof(mid) - 1);
	w += sizeof(mid) - 1;
	w[len] = '}';
	*ret_result = w;
	return o;
}
