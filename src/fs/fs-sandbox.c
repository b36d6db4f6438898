/* SPDX-License-Identifier: MIT */
/*
 * Sandboxed filesystem requests through a helper process (see fs-sandbox.h).
 *
 * The helper gets: initialize, initialized and the request without its
 * sandbox member, one line each on stdin, then EOF; it answers on stdout and
 * exits. The reply for id 2 is relayed to the client under the client's id.
 * Costs one exec per request (the reference pays 40-50 ms for the same).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buf.h"
#include "conn.h"
#include "exec.h"
#include "fs-sandbox.h"
#include "jsonrpc.h"
#include "log.h"
#include "params.h"
#include "policy.h"
#include "rpc.h"
#include "sandbox.h"
#include "session.h"
#include "spawn.h"

#define HELPER_OUTPUT_LIMIT (1024ull << 20) /* a 512 MiB file as base64 JSON fits */
#define HELPER_READ_CHUNK (256u << 10)

char *fs_helper_exe;

struct helper_job {
	struct rpc_pending pend;
	bool orphaned;
	struct server *srv;
	struct sandbox_plan *plan;
	pid_t pid;
	int pidfd, in_fd, out_fd;
	unsigned inflight;
	char *req;
	size_t req_len, req_off;
	struct buf out;
	bool out_eof, reaped;
	int status;
	siginfo_t si;
	struct uring_op wop, rop, xop;
};

static void job_free(struct helper_job *j)
{
	safe_close(j->pidfd);
	safe_close(j->in_fd);
	safe_close(j->out_fd);
	sandbox_plan_free(j->plan);
	buf_done(&j->out);
	free(j->req);
	free(j);
}

static void job_cancel(struct rpc_pending *p)
{
	struct helper_job *j = container_of(p, struct helper_job, pend);

	rpc_pending_end(&j->pend);
	j->orphaned = true;
}

/* All ops done: find the helper's answer to id 2 and relay it. */
static void job_finish(struct helper_job *j)
{
	char *line = (char *)j->out.data, *end = line + j->out.len;
	json_t *found = NULL;

	while (line < end && !found) {
		char *nl = memchr(line, '\n', (size_t)(end - line));
		size_t n = nl ? (size_t)(nl - line) : (size_t)(end - line);
		json_t *m = json_loadb(line, n, 0, NULL);

		if (m && json_integer_value(json_object_get(m, "id")) == 2 &&
		    (json_object_get(m, "result") || json_object_get(m, "error")))
			found = m;
		else
			json_decref(m);
		line += n + 1;
	}
	if (!j->orphaned) {
		if (found && json_object_get(found, "result")) {
			rpc_reply(j->pend.conn, j->pend.id, json_incref(json_object_get(found, "result")));
		} else if (found) {
			json_t *e = json_object_get(found, "error");

			rpc_reply_error(j->pend.conn, j->pend.id, (int)json_integer_value(json_object_get(e, "code")),
					"%s", json_string_value(json_object_get(e, "message")));
		} else {
			log_error("The sandboxed filesystem helper (pid %d) gave no answer (status %d)",
				  (int)j->pid, j->status);
			rpc_reply_error(j->pend.conn, j->pend.id, RPC_INTERNAL_ERROR,
					"sandboxed filesystem helper failed");
		}
		rpc_pending_end(&j->pend);
	}
	json_decref(found);
	job_free(j);
}

static void job_op_done(struct helper_job *j)
{
	if (--j->inflight == 0)
		job_finish(j);
}

static void arm_write(struct helper_job *j);
static void arm_read(struct helper_job *j);

static void on_write(struct uring_op *op, int res, uint32_t flags)
{
	struct helper_job *j = container_of(op, struct helper_job, wop);

	if (res > 0) {
		j->req_off += (size_t)res;
		if (j->req_off < j->req_len) {
			arm_write(j);
			return;
		}
	}
	/* Done (or the helper died): EOF tells it to answer and exit. */
	j->in_fd = safe_close(j->in_fd);
	job_op_done(j);
}

static void arm_write(struct helper_job *j)
{
	struct io_uring_sqe *sqe = uring_get_sqe(&j->srv->ring, &j->wop, on_write);

	io_uring_prep_write(sqe, j->in_fd, j->req + j->req_off, (unsigned)(j->req_len - j->req_off),
			    (__u64)-1);
}

static void on_read(struct uring_op *op, int res, uint32_t flags)
{
	struct helper_job *j = container_of(op, struct helper_job, rop);

	if (res > 0) {
		j->out.len += (size_t)res;
		if (j->out.len < HELPER_OUTPUT_LIMIT) {
			arm_read(j);
			return;
		}
		log_error("The sandboxed filesystem helper wrote more than %llu bytes, stopping it",
			  (unsigned long long)HELPER_OUTPUT_LIMIT);
		kill(j->pid, SIGKILL);
	}
	j->out_fd = safe_close(j->out_fd);
	job_op_done(j);
}

static void arm_read(struct helper_job *j)
{
	struct io_uring_sqe *sqe;

	if (buf_reserve(&j->out, HELPER_READ_CHUNK) < 0) {
		kill(j->pid, SIGKILL);
		j->out_fd = safe_close(j->out_fd);
		job_op_done(j);
		return;
	}
	sqe = uring_get_sqe(&j->srv->ring, &j->rop, on_read);
	io_uring_prep_read(sqe, j->out_fd, j->out.data + j->out.len, HELPER_READ_CHUNK, (__u64)-1);
}

static void on_helper_exit(struct uring_op *op, int res, uint32_t flags)
{
	struct helper_job *j = container_of(op, struct helper_job, xop);

	if (!j->srv->ring.has_waitid)
		(void)waitid((idtype_t)P_PIDFD, (id_t)j->pidfd, &j->si, WEXITED);
	j->status = res < 0 ? res : j->si.si_status;
	job_op_done(j);
}

static char *build_request(const char *method, json_t *params, size_t *ret_len)
{
	json_t *p = json_deep_copy(params), *req;
	char *s, *all = NULL;
	size_t n;

	if (!p)
		return NULL;
	json_object_del(p, "sandbox");
	req = json_pack("{s:i,s:s,s:o}", "id", 2, "method", method, "params", p);
	s = req ? jrpc_dump(req, &n) : NULL;
	json_decref(req);
	if (!s)
		return NULL;
	static const char hello[] =
		"{\"id\":1,\"method\":\"initialize\",\"params\":{\"clientName\":\"uexec-fs-helper\"}}\n"
		"{\"method\":\"initialized\",\"params\":{}}\n";
	all = malloc(sizeof(hello) - 1 + n + 2);
	if (all) {
		memcpy(all, hello, sizeof(hello) - 1);
		memcpy(all + sizeof(hello) - 1, s, n);
		all[sizeof(hello) - 1 + n] = '\n';
		*ret_len = sizeof(hello) + n;
	}
	free(s);
	return all;
}

bool fs_sandbox_forward(struct conn *c, json_t *id, const char *method, json_t *params)
{
	json_t *sb = json_is_object(params) ? json_object_get(params, "sandbox") : NULL;
	struct sandbox_context ctx = { .tmpdir = getenv("TMPDIR") };
	const char *cand[2] = { fs_helper_exe, NULL };
	char *argv[] = { "uexec", "--fs-helper", NULL };
	char *envp[] = { "PATH=/usr/bin:/bin", NULL };
	struct sandbox_policy *pol = NULL;
	struct spawn_args sa = { 0 };
	struct spawn_result res;
	struct helper_job *j;
	const char *step = NULL;
	char err[512];
	int r;

	if (!sb || json_is_null(sb))
		return false;
	if (!json_is_object(sb)) {
		char e2[256];

		params_type_error(sb, "struct WireFileSystemSandboxContext", e2, sizeof(e2));
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "%s", e2);
		return true;
	}
	if (exec_check_sandbox_shape(sb, err) < 0) {
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "%s", err);
		return true;
	}
	r = sandbox_policy_parse(sb, &ctx, &pol, err, sizeof(err));
	if (r < 0) {
		rpc_reply_error(c, id, r == -ENOMEM ? RPC_INTERNAL_ERROR : RPC_INVALID_PARAMS, "%s",
				r == -ENOMEM ? "out of memory" : err);
		return true;
	}
	if (pol->kind == SANDBOX_DISABLED) {
		sandbox_policy_free(pol);
		return false;
	}
	if (!json_is_string(json_object_get(sb, "cwd"))) {
		sandbox_policy_free(pol);
		rpc_reply_error(c, id, RPC_INVALID_PARAMS,
				"file system sandbox context with dynamic permissions requires cwd");
		return true;
	}
	j = calloc(1, sizeof(*j));
	if (!j || !fs_helper_exe) {
		free(j);
		sandbox_policy_free(pol);
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "sandbox intent cannot be enforced on this executor");
		return true;
	}
	j->srv = c->srv;
	j->pidfd = j->in_fd = j->out_fd = -1;
	r = sandbox_plan_new(pol, &c->srv->sandbox, fs_helper_exe, &j->plan, err, sizeof(err));
	sandbox_policy_free(pol);
	if (r < 0) {
		log_warning("Refusing a sandboxed %s: %s", method, err[0] ? err : strerror(-r));
		job_free(j);
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "sandbox intent cannot be enforced on this executor");
		return true;
	}
	j->req = build_request(method, params, &j->req_len);
	if (!j->req) {
		job_free(j);
		rpc_reply_errno_internal(c, id, ENOMEM);
		return true;
	}

	sa.candidates = cand;
	sa.explicit_path = true;
	sa.argv = argv;
	sa.envp = envp;
	sa.cwd = "/";
	sa.pipe_stdin = true;
	sa.sandbox = j->plan;
	sa.nofile = &c->srv->nofile_orig;
	sa.stderr_fd = STDERR_FILENO; /* the helper's rare log lines join ours */
	r = spawn_process(&sa, &res, &step);
	if (r < 0) {
		log_error_errno(r, "Starting the sandboxed filesystem helper failed%s%s",
				step ? " at " : "", step ? step : "");
		job_free(j);
		rpc_reply_error(c, id, RPC_INTERNAL_ERROR, "sandboxed filesystem helper failed to start");
		return true;
	}
	j->pid = res.pid;
	j->pidfd = res.pidfd;
	j->in_fd = res.stdin_fd;
	j->out_fd = res.out_fd;
	rpc_pending_start(&j->pend, c, id, job_cancel);

	j->inflight = 3;
	arm_write(j);
	arm_read(j);
	{
		struct io_uring_sqe *sqe = uring_get_sqe(&j->srv->ring, &j->xop, on_helper_exit);

		if (j->srv->ring.has_waitid) {
			io_uring_prep_rw(UEXEC_IORING_OP_WAITID, sqe, j->pidfd, NULL, P_PIDFD, 0);
			sqe->file_index = WEXITED;
			sqe->addr2 = (uint64_t)(uintptr_t)&j->si;
		} else {
			/* Without WAITID: the helper exits right after its output EOF; poll then reap. */
			io_uring_prep_poll_add(sqe, j->pidfd, POLLIN);
		}
	}
	return true;
}
