/* SPDX-License-Identifier: MIT */
/*
 * What process/start reports besides its reply: a failed spawn's error (the
 * reference's texts and kinds, or the sandbox step that failed in the child)
 * and the audit log's process.start / process.startFailed line.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "conn.h"
#include "log.h"
#include "os-error.h"
#include "params.h"
#include "plan.h"
#include "rpc-process.h"
#include "rpc.h"
#include "sandbox.h"
#include "session.h"

/*
 * A spawn's errno as 0.171 reports it: the OS error's text, and in data the
 * kind of io::Error it is (NotFound, PermissionDenied, anything else).
 */
void exec_reply_spawn_errno(struct conn *c, json_t *id, int r)
{
	char text[256];

	rpc_reply_error_kind(c, id, RPC_INTERNAL_ERROR,
			     r == -ENOENT ? "spawnNotFound"
			     : r == -EACCES || r == -EPERM ? "spawnPermissionDenied"
							   : "spawnFailed",
			     "%s", rpc_os_error(-r, text, sizeof(text)));
}

/* Replies to a failed spawn_process(): a sandbox step that failed in the child, or exec's errno. */
void exec_reply_spawn_error(struct conn *c, json_t *id, json_t *argv0, int r, const char *step)
{
	if (step) {
		/* The sandbox could not be set up in the child: fail closed, say where. */
		log_error_errno_ratelimited(r, "Session %s: sandbox setup failed at %s", c->sess->id,
					    step);
		rpc_reply_error(c, id, RPC_INTERNAL_ERROR, "sandbox setup failed at %s: %s (os error %d)",
				step, os_error_text(-r), -r);
		return;
	}
	{
		struct log_ctx ctx = { .session = c->sess->id };
		struct log_field lf[] = { LOG_STR("program", json_string_value(argv0)),
					  LOG_STR("error", strerror(-r)) };

		log_event_ratelimited(LOG_INFO, "process.spawnFailed", &ctx, lf, ELEMENTSOF(lf),
				      "Session %s: spawning '%s' failed: %s", c->sess->id,
				      json_string_value(argv0), strerror(-r));
	}
	exec_reply_spawn_errno(c, id, r);
}

/* Audit lines carry at most this many bytes of argv (a request may hold 64 MiB). */
#define AUDIT_ARGV_MAX_BYTES 65536

/*
 * The audit log's process.start (pid > 0) or process.startFailed line: who
 * asked (session, client address), what (argv, cwd, tty) and under which
 * sandbox. Never the environment: its values may hold secrets.
 */
void exec_audit_start(struct conn *c, json_t **f, char **argv, const char *cwd,
		      const struct sandbox_plan *plan, const struct sandbox_cg_limits *limits,
		      pid_t pid, int err)
{
	size_t argc = json_array_size(f[F_ARGV]), k = 0, bytes = 0;
	char cwdbuf[PATH_MAX];
	const char *type = "none";
	struct log_field sb[6], lim[3], fl[13];
	size_t nsb = 0, nlim = 0, n = 0;

	if (!log_audit_enabled())
		return;
	/* Each argument costs its quotes and comma too: 10^5 empty ones are no free ride. */
	while (argv && k < argc && bytes + strlen(argv[k]) + 3 <= AUDIT_ARGV_MAX_BYTES)
		bytes += strlen(argv[k++]) + 3;
	if (f[F_SANDBOX])
		type = plan ? "restricted" : "unrestricted";
	sb[nsb++] = LOG_STR("type", type);
	if (plan) {
		sb[nsb++] = LOG_BOOL("restrictFs", plan->restrict_fs);
		sb[nsb++] = LOG_BOOL("network", !plan->restrict_net);
		sb[nsb++] = LOG_STRV("writableRoots", (const char *const *)plan->rw, plan->n_rw);
		sb[nsb++] = LOG_BOOL("pidNamespace", plan->pid_ns);
		sb[nsb++] = LOG_INT("landlockAbi", plan->landlock_abi);
	}
	if (!cwd)
		cwd = getcwd(cwdbuf, sizeof(cwdbuf));
	fl[n++] = LOG_STR("session", c->sess->id);
	fl[n++] = LOG_STRN("process", json_string_value(f[F_PROCESS_ID]),
			   json_string_length(f[F_PROCESS_ID]));
	fl[n++] = LOG_STR("client", c->peer);
	fl[n++] = LOG_STRV("argv", (const char *const *)argv, argv ? k : 0);
	fl[n++] = LOG_INT("argc", argc);
	if (argv && k < argc)
		fl[n++] = LOG_BOOL("argvTruncated", true);
	fl[n++] = LOG_STR("cwd", cwd);
	fl[n++] = LOG_BOOL("tty", params_bool(f[F_TTY], false));
	fl[n++] = LOG_OBJ("sandbox", sb, nsb);
	/* The limits its cgroup enforces (server defaults lowered by the request), those set. */
	if (limits) {
		if (limits->pids_max)
			lim[nlim++] = LOG_INT("pidsMax", limits->pids_max);
		if (limits->memory_max)
			lim[nlim++] = LOG_INT("memoryMaxBytes", limits->memory_max);
		if (limits->cpu_milli)
			lim[nlim++] = LOG_INT("cpuMaxMillicpu", limits->cpu_milli);
		if (nlim)
			fl[n++] = LOG_OBJ("limits", lim, nlim);
	}
	if (pid > 0) {
		fl[n++] = LOG_INT("pid", pid);
		log_audit("process.start", fl, n);
	} else {
		fl[n++] = LOG_STR("error", strerror(err < 0 ? -err : err));
		log_audit("process.startFailed", fl, n);
	}
}
