/* SPDX-License-Identifier: MIT */
/*
 * The JSON hot path of process/read, process/write, process/signal and
 * process/terminate: the request as jsonrpc-fast.h read it from the frame,
 * the reply written straight into the output buffer (proc-wire.c). Each
 * handler takes only requests the general handler (rpc-process.c) answers
 * without an error, with params it would decode to the same values: every
 * field known, the required ones present, each of its type (null only where
 * it means absent), and then only outcomes that are no error (a known
 * process for a read, valid base64 and a non-empty writeId for a write, the
 * "interrupt" string for a signal). Anything else returns false before any
 * effect, and the general path answers it, errors included.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "conn.h"
#include "exec.h"
#include "proc-internal.h"
#include "proc.h"
#include "rpc-process.h"
#include "rpc.h"
#include "session.h"

/* A required string member. */
static bool is_string(const struct jrpc_fast_value *v)
{
	return v && v->type == JRPC_FAST_STRING;
}

/* An optional u64 member: absent, null (= absent), or an integer. */
static bool opt_u64(const struct jrpc_fast_value *v)
{
	return !v || v->type == JRPC_FAST_NULL || v->type == JRPC_FAST_UINT;
}

static bool has_u64(const struct jrpc_fast_value *v)
{
	return v && v->type == JRPC_FAST_UINT;
}

static struct proc *lookup(struct conn *c, const struct jrpc_fast_value *pid)
{
	return strmap_get(&c->sess->procs, pid->s, pid->n);
}

bool exec_fast_read(struct conn *c, const struct jrpc_fast_req *r)
{
	static const char *const names[] = { "processId", "afterSeq", "maxBytes", "waitMs", NULL };
	const struct jrpc_fast_value *pid = jrpc_fast_param(r, "processId");
	const struct jrpc_fast_value *after = jrpc_fast_param(r, "afterSeq");
	const struct jrpc_fast_value *max = jrpc_fast_param(r, "maxBytes");
	const struct jrpc_fast_value *wait = jrpc_fast_param(r, "waitMs");
	struct proc *p;

	if (!jrpc_fast_params_only(r, names) || !is_string(pid) || !opt_u64(after) || !opt_u64(max) ||
	    !opt_u64(wait))
		return false;
	p = lookup(c, pid);
	if (!p)
		return false; /* "unknown process id": the general path's error */
	proc_read_fast(p, c, r, has_u64(after) ? after->u : 0, has_u64(max),
		       has_u64(max) ? max->u : 0, has_u64(wait) ? wait->u : 0);
	return true;
}

/* writeIds longer than this go the general way (the real client's are "1", "2", ...). */
#define FAST_WRITE_ID_MAX 64

bool exec_fast_write(struct conn *c, const struct jrpc_fast_req *r)
{
	static const char *const names[] = { "processId", "chunk", "writeId", NULL };
	const struct jrpc_fast_value *pid = jrpc_fast_param(r, "processId");
	const struct jrpc_fast_value *chunk = jrpc_fast_param(r, "chunk");
	const struct jrpc_fast_value *wid = jrpc_fast_param(r, "writeId");
	char write_id[FAST_WRITE_ID_MAX + 1];
	uint8_t *data;
	struct proc *p;
	ssize_t n;

	if (!jrpc_fast_params_only(r, names) || !is_string(pid) || !is_string(chunk) ||
	    !is_string(wid) || wid->n == 0 || wid->n > FAST_WRITE_ID_MAX)
		return false;
	data = malloc(base64_decoded_max(chunk->n) + 1);
	if (!data)
		return false; /* the general path reports the ENOMEM */
	n = base64_decode(chunk->s, chunk->n, data, NULL, 0);
	if (n < 0) {
		free(data);
		return false; /* the base64 error, in the general path's words */
	}
	p = lookup(c, pid);
	if (!p) {
		free(data);
		proc_wire_literal_reply(c, r, "{\"status\":\"unknownProcess\"}");
		return true;
	}
	memcpy(write_id, wid->s, wid->n);
	write_id[wid->n] = 0;
	proc_write_fast(p, c, r, write_id, data, (size_t)n);
	return true;
}

bool exec_fast_signal(struct conn *c, const struct jrpc_fast_req *r)
{
	static const char *const names[] = { "processId", "signal", NULL };
	const struct jrpc_fast_value *pid = jrpc_fast_param(r, "processId");
	const struct jrpc_fast_value *sig = jrpc_fast_param(r, "signal");

	if (!jrpc_fast_params_only(r, names) || !is_string(pid) || !is_string(sig) ||
	    sig->n != strlen("interrupt") || memcmp(sig->s, "interrupt", sig->n) != 0)
		return false;
	exec_signal_interrupt(lookup(c, pid));
	proc_wire_literal_reply(c, r, "{}");
	return true;
}

bool exec_fast_terminate(struct conn *c, const struct jrpc_fast_req *r)
{
	static const char *const names[] = { "processId", NULL };
	const struct jrpc_fast_value *pid = jrpc_fast_param(r, "processId");

	if (!jrpc_fast_params_only(r, names) || !is_string(pid))
		return false;
	proc_wire_literal_reply(c, r, exec_terminate(lookup(c, pid)) ? "{\"running\":true}"
								       : "{\"running\":false}");
	return true;
}
