/* SPDX-License-Identifier: MIT */
/*
 * uexec's process extensions (README.md "Protocol extensions"; the reference
 * answers -32601 for these methods and ignores these fields):
 * process/start's `size` and `timeoutMs`, process/resize, process/closeStdin
 * and process/list. Each is advertised by a uexec* capability (rpc-env.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "conn.h"
#include "exec.h"
#include "params.h"
#include "proc.h"
#include "rpc.h"
#include "session.h"

#define ERRSZ 512

/* One PTY dimension: an integer in [1, max] (serde's "invalid value" wording). */
static int check_dim(json_t *v, const char *what, uint64_t max, unsigned short *ret, char *err)
{
	uint64_t n = params_u64(v, 0);

	if (n < 1 || n > max) {
		snprintf(err, ERRSZ, "invalid value: integer `%" PRIu64 "`, expected %s between 1 and %" PRIu64,
			 n, what, max);
		return -EINVAL;
	}
	*ret = (unsigned short)n;
	return 0;
}

int exec_decode_start_ext(json_t *size, json_t *timeout, bool tty, unsigned short *rows,
			  unsigned short *cols, uint64_t *timeout_ms, char *err)
{
	static const struct pfield fields[] = {
		{ "rows", P_U64, true, NULL },
		{ "cols", P_U64, true, NULL },
	};
	json_t *f[ELEMENTSOF(fields)];

	if (size) {
		if (params_decode_nested(size, "PtySize", fields, ELEMENTSOF(fields), f, err, ERRSZ) < 0 ||
		    check_dim(f[0], "rows", PROC_PTY_MAX_ROWS, rows, err) < 0 ||
		    check_dim(f[1], "cols", PROC_PTY_MAX_COLS, cols, err) < 0)
			return -EINVAL;
		/* Refused rather than ignored: a client sending it expects a terminal. */
		if (!tty) {
			snprintf(err, ERRSZ, "size is only valid with tty: true");
			return -EINVAL;
		}
	}
	*timeout_ms = params_u64(timeout, 0);
	if (timeout && (*timeout_ms < 1 || *timeout_ms > PROC_TIMEOUT_MAX_MS)) {
		snprintf(err, ERRSZ,
			 "invalid value: integer `%" PRIu64 "`, expected timeoutMs between 1 and %llu",
			 *timeout_ms, (unsigned long long)PROC_TIMEOUT_MAX_MS);
		return -EINVAL;
	}
	return 0;
}

static struct proc *lookup(struct conn *c, json_t *pid)
{
	return strmap_get(&c->sess->procs, json_string_value(pid), json_string_length(pid));
}

static void reply_status(struct conn *c, json_t *id, const char *status)
{
	json_t *r = json_object();

	json_object_set_new(r, "status", json_string(status));
	rpc_reply(c, id, r);
}

/*
 * process/resize {processId, rows, cols} -> {}. Errors are -32600 with the
 * texts of the other process methods (process/read's "unknown process id <id>").
 */
void exec_rpc_process_resize(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{ "processId", P_STRING, true, NULL },
		{ "rows", P_U64, true, NULL },
		{ "cols", P_U64, true, NULL },
	};
	json_t *f[ELEMENTSOF(fields)];
	unsigned short rows, cols;
	char err[ERRSZ];
	struct proc *p;
	int r;

	if (!params_decode_or_reply(c, id, params, "ResizeParams", fields, ELEMENTSOF(fields), f))
		return;
	if (check_dim(f[1], "rows", PROC_PTY_MAX_ROWS, &rows, err) < 0 ||
	    check_dim(f[2], "cols", PROC_PTY_MAX_COLS, &cols, err) < 0) {
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "%s", err);
		return;
	}
	p = lookup(c, f[0]);
	if (!p) {
		rpc_reply_error_quoted(c, id, RPC_INVALID_REQUEST, "unknown process id ", f[0], "");
		return;
	}
	r = proc_resize(p, rows, cols);
	if (r == -ENOTTY)
		rpc_reply_error_quoted(c, id, RPC_INVALID_REQUEST, "process ", f[0],
				       " has no PTY (started without tty: true)");
	else if (r == -ESRCH)
		rpc_reply_error_quoted(c, id, RPC_INVALID_REQUEST, "process ", f[0], " has exited");
	else if (r < 0)
		rpc_reply_errno_internal(c, id, r);
	else
		rpc_reply(c, id, json_object());
}

/*
 * process/closeStdin {processId} -> {"status": "closed" | "unknownProcess"},
 * the statuses of process/write, whose sibling it is. Idempotent.
 */
void exec_rpc_process_close_stdin(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{ "processId", P_STRING, true, NULL },
	};
	json_t *f[ELEMENTSOF(fields)];
	struct proc *p;

	if (!params_decode_or_reply(c, id, params, "CloseStdinParams", fields,
				    ELEMENTSOF(fields), f))
		return;
	p = lookup(c, f[0]);
	if (!p) {
		reply_status(c, id, "unknownProcess");
		return;
	}
	proc_close_stdin(p);
	reply_status(c, id, "closed");
}

/* process/list (params absent, null or {}) -> {"processes": [...]}, in start order. */
void exec_rpc_process_list(struct conn *c, json_t *id, json_t *params)
{
	json_t *res, *list;
	struct proc *p;

	if (params && !json_is_null(params) &&
	    !params_decode_or_reply(c, id, params, "ListParams", NULL, 0, NULL))
		return;
	res = json_object();
	list = json_array();
	if (!res || !list) {
		json_decref(res);
		json_decref(list);
		rpc_reply_errno_internal(c, id, ENOMEM);
		return;
	}
	list_for_each_entry(p, &c->sess->procs_list, link) {
		json_t *o = proc_describe(p);

		if (!o || json_array_append_new(list, o) < 0) {
			json_decref(list);
			json_decref(res);
			rpc_reply_errno_internal(c, id, ENOMEM);
			return;
		}
	}
	json_object_set_new(res, "processes", list);
	rpc_reply(c, id, res);
}
