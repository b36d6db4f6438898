/* SPDX-License-Identifier: MIT */
/*
 * process/read, process/write, process/signal, process/terminate
 * (PROTOCOL.md §6.7-§6.10), and the method table (with process/start of
 * rpc-process-start.c and uexec's extensions of rpc-process-ext.c).
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "conn.h"
#include "exec.h"
#include "params.h"
#include "proc.h"
#include "rpc-process.h"
#include "rpc.h"
#include "session.h"

struct proc *exec_lookup_process(struct conn *c, json_t *pid)
{
	return strmap_get(&c->sess->procs, json_string_value(pid), json_string_length(pid));
}


void exec_signal_interrupt(struct proc *p)
{
	if (p && !p->exited)
		proc_kill_group(p, SIGINT);
}

bool exec_terminate(struct proc *p)
{
	/* Until process/exited is published, as the reference answers (kill-workspace-write). */
	bool running = p && !p->exited;

	if (running)
		proc_kill_group(p, SIGKILL);
	else if (p)
		proc_cg_kill(p); /* what it left running (a daemon, a background job) */
	return running;
}

static void rpc_process_read(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{ "processId", P_STRING, true, NULL },
		{ "afterSeq", P_U64, false, NULL },
		{ "maxBytes", P_USIZE, false, NULL },
		{ "waitMs", P_U64, false, NULL },
	};
	json_t *f[ELEMENTSOF(fields)];
	struct proc *p;

	if (!params_decode_or_reply(c, id, params, "ReadParams", fields, ELEMENTSOF(fields), f))
		return;
	p = exec_lookup_process(c, f[0]);
	if (!p) {
		rpc_reply_error_quoted(c, id, RPC_INVALID_REQUEST, "unknown process id ", f[0], "");
		return;
	}
	proc_read(p, c, id, params_u64(f[1], 0), f[2] != NULL, params_u64(f[2], 0),
		  params_u64(f[3], 0));
}

static void rpc_process_write(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{ "processId", P_STRING, true, NULL },
		{ "chunk", P_STRING, true, NULL },
		{ "writeId", P_STRING, true, NULL },
	};
	json_t *f[ELEMENTSOF(fields)];
	struct proc *p;
	uint8_t *data;
	size_t n;

	if (!params_decode_or_reply(c, id, params, "WriteParams", fields, ELEMENTSOF(fields), f))
		return;
	if (params_base64_or_reply(c, id, f[1], RPC_INVALID_PARAMS, "", &data, &n) < 0)
		return;
	if (json_string_length(f[2]) == 0) {
		free(data);
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "writeId must not be empty");
		return;
	}
	p = exec_lookup_process(c, f[0]);
	if (!p) {
		json_t *r = json_object();

		free(data);
		json_object_set_new(r, "status", json_string("unknownProcess"));
		rpc_reply(c, id, r);
		return;
	}
	proc_write(p, c, id, json_string_value(f[2]), data, n);
}

static void rpc_process_signal(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{ "processId", P_STRING, true, NULL },
		{ "signal", P_ANY, true, NULL },
	};
	static const char *const signals[] = { "interrupt", NULL };
	json_t *f[ELEMENTSOF(fields)];
	char err[ERRSZ];
	size_t errlen;

	if (!params_decode_or_reply(c, id, params, "SignalParams", fields, ELEMENTSOF(fields), f))
		return;
	/* {"interrupt": null} is the same variant (serde's map form). */
	if (params_unit_enum(f[1], signals, err, sizeof(err), &errlen) < 0) {
		rpc_reply_error_text(c, id, RPC_INVALID_PARAMS, err, errlen);
		return;
	}
	exec_signal_interrupt(exec_lookup_process(c, f[0]));
	rpc_reply(c, id, json_object());
}

static void rpc_process_terminate(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{ "processId", P_STRING, true, NULL },
	};
	json_t *f[ELEMENTSOF(fields)], *r;
	bool running;

	if (!params_decode_or_reply(c, id, params, "TerminateParams", fields,
				    ELEMENTSOF(fields), f))
		return;
	running = exec_terminate(exec_lookup_process(c, f[0]));
	r = json_object();
	json_object_set_new(r, "running", json_boolean(running));
	rpc_reply(c, id, r);
}

static const struct rpc_method exec_methods[] = {
	{ "initialize", NULL, exec_rpc_initialize, NULL },
	{ "process/start", "exec", exec_rpc_process_start, NULL },
	/* With the JSON hot path (rpc-process-fast.c) for the requests it is sure of. */
	{ "process/read", "exec", rpc_process_read, NULL, exec_fast_read },
	{ "process/write", "exec", rpc_process_write, NULL, exec_fast_write },
	{ "process/signal", "exec", rpc_process_signal, NULL, exec_fast_signal },
	{ "process/terminate", "exec", rpc_process_terminate, NULL, exec_fast_terminate },
	/* uexec extensions (README.md "Protocol extensions"). */
	{ "process/resize", "exec", exec_rpc_process_resize, NULL },
	{ "process/closeStdin", "exec", exec_rpc_process_close_stdin, NULL },
	{ "process/list", "exec", exec_rpc_process_list, NULL },
};

int exec_methods_register(void)
{
	return rpc_methods_register(exec_methods, ELEMENTSOF(exec_methods));
}
