/* SPDX-License-Identifier: MIT */
/*
 * Sandboxed filesystem requests through a helper process (see fs-sandbox.h).
 *
 * The helper gets: initialize, initialized and the request without its
 * sandbox member, one line each on stdin, then EOF; it answers on stdout and
 * exits. The reply for id 2 is relayed to the client under the client's id.
 * Costs one exec per request (the reference pays 40-50 ms for the same).
 *
 * fs/open is the exception: its helper's stdin is a unix socket, over which
 * the helper sends the descriptor it opened (SCM_RIGHTS) before answering;
 * the handle then holds that descriptor and fs/readBlock, fs/writeBlock run
 * on the ring like an unsandboxed handle's. Whatever the sandbox's mount
 * view, Landlock and seccomp refuse is refused at that open, exactly as for
 * fs/readFile and fs/writeFile (docs/ARCHITECTURE.md, "Sandboxed fs/open").
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buf.h"
#include "conn.h"
#include "exec.h"
#include "fs-req.h"
#include "fs-sandbox.h"
#include "json-check.h"
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
#define HELPER_ESTIMATE (1u << 20)    /* charged on arrival, until the output is read */
#define HELPER_SMALL_LINE (1u << 20)  /* longer lines can only be results */
#define RELAY_SLICE (16u << 20)

struct helper_job {
	struct rpc_pending pend;
	bool orphaned;
	struct server *srv;
	struct sandbox_plan *plan;
	struct conn *conn;   /* valid while !orphaned */
	struct fs_handle *h; /* fs/open: the handle being opened (a reference), else NULL */
	pid_t pid;
	int pidfd, in_fd, out_fd; /* fs/open: in_fd is a socket, kept to receive the fd */
	unsigned inflight;
	char *req;
	size_t req_len, req_off;
	struct buf out;
	bool out_eof, reaped;
	int status;
	siginfo_t si;
	struct uring_op wop, rop, xop;
	struct conn_mem mem; /* the output collected, against the in-flight budgets (conn-mem.h) */
	/* fs_sandbox_call: the answer goes to done(arg, ...), not to a client (NULL otherwise) */
	fs_sandbox_done_fn call_done;
	void *call_arg;
	char *const *env_extra; /* "NAME=value" strings added to the helper's environment */
};

static void job_free(struct helper_job *j)
{
	/* An fd the helper sent and nobody received is closed with the socket. */
	if (j->h)
		fs_handle_open_end(j->orphaned ? NULL : j->conn, j->h, -1);
	safe_close(j->pidfd);
	safe_close(j->in_fd);
	safe_close(j->out_fd);
	sandbox_plan_free(j->plan);
	conn_mem_done(&j->mem);
	buf_done(&j->out);
	free(j->req);
	free(j);
}

static void job_cancel(struct rpc_pending *p)
{
	struct helper_job *j = container_of(p, struct helper_job, pend);

	rpc_pending_end(&j->pend);
	j->orphaned = true;
	j->conn = NULL;
}

/*
 * Relays res[0..n), a result text inside j->out, as the reply: copied into
 * the frame slice by slice, each slice's pages of j->out going back to the
 * kernel at once, so that a 700 MB fs/readFile result is never held twice.
 */
static void relay_result(struct helper_job *j, const char *res, size_t n)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), given = 0;
	size_t done = 0;
	struct outchunk *o;
	uint8_t *w;

	o = rpc_reply_begin(j->pend.conn, j->pend.id, n, &w);
	if (!o)
		return;
	given = ((uintptr_t)res + page - 1) & ~(page - 1);
	while (done < n) {
		size_t k = MIN(n - done, (size_t)RELAY_SLICE);
		uintptr_t upto;

		memcpy(w + done, res + done, k);
		done += k;
		/* Whole pages of res[0..done) only: the rest of the block is malloc's. */
		upto = ((uintptr_t)res + done) & ~(page - 1);
		if (upto > given) {
			(void)madvise((void *)given, upto - given, MADV_DONTNEED);
			given = upto;
		}
	}
	conn_commit(j->pend.conn, o);
}

/*
 * The descriptor the fs/open helper sent: exactly one, opened for what the
 * handle does (read-only, or write-only for "replace"), and a regular file
 * for reading. Anything else is closed. Returns the fd or -errno.
 */
static int receive_fd(struct helper_job *j, const struct fs_handle *h)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(4 * sizeof(int))];
	} u;
	char byte;
	struct iovec iov = { &byte, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm;
	int fd = -1, n = 0, fl;
	struct stat st;
	ssize_t k;

	if (j->in_fd < 0)
		return -EPIPE;
	k = recvmsg(j->in_fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (k < 0)
		return -errno;
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int x;

			memcpy(&x, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (n++ == 0)
				fd = x;
			else
				close(x);
		}
	}
	if (n != 1 || (mh.msg_flags & MSG_CTRUNC)) {
		safe_close(fd);
		return -EPROTO;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || (fl & O_ACCMODE) != (h->writable ? O_WRONLY : O_RDONLY) ||
	    fstat(fd, &st) < 0 || (!h->writable && !S_ISREG(st.st_mode))) {
		safe_close(fd);
		return -EPROTO;
	}
	return fd;
}

/* fs/open's end: the handle gets the helper's fd, or the helper's error is relayed. */
static void open_finish(struct helper_job *j, bool ok, json_t *found)
{
	struct fs_handle *h = TAKE_PTR(j->h);
	int fd = -1;

	if (ok) {
		fd = receive_fd(j, h);
		if (fd < 0)
			log_error_errno(fd, "The sandboxed filesystem helper (pid %d) opened the file "
					    "but sent no usable descriptor", (int)j->pid);
	}
	if (j->orphaned) {
		fs_handle_open_end(NULL, h, fd);
		return;
	}
	if (fd >= 0) {
		json_t *res = json_object();

		json_object_set_new(res, "handleId", json_stringn(h->id, h->id_len));
		fs_handle_open_end(j->conn, h, fd);
		rpc_reply(j->conn, j->pend.id, res);
	} else {
		json_t *e = found ? json_object_get(found, "error") : NULL;

		fs_handle_open_end(j->conn, h, -1);
		if (e && !ok) {
			rpc_reply_error(j->conn, j->pend.id, (int)json_integer_value(json_object_get(e, "code")),
					"%s", json_string_value(json_object_get(e, "message")));
		} else {
			if (!ok)
				log_error("The sandboxed filesystem helper (pid %d) gave no answer "
					  "(status %d)", (int)j->pid, j->status);
			rpc_reply_error(j->conn, j->pend.id, RPC_INTERNAL_ERROR,
					"sandboxed filesystem helper failed");
		}
	}
	rpc_pending_end(&j->pend);
}

/* All ops done: find the helper's answer to id 2 and relay it. */
static void job_finish(struct helper_job *j)
{
	static const char ok[] = "{\"id\":2,\"result\":";
	char *line = (char *)j->out.data, *end = line + j->out.len, *res = NULL;
	json_t *found = NULL;
	size_t res_len = 0;

	while (line < end && !found && !res) {
		char *nl = memchr(line, '\n', (size_t)(end - line));
		size_t n = nl ? (size_t)(nl - line) : (size_t)(end - line);
		json_t *m;

		/*
		 * A result (uexec's own compact output) is relayed as text, checked
		 * without building it: an fs/readFile result is the whole file.
		 */
		if (nl && n > sizeof(ok) && memcmp(line, ok, sizeof(ok) - 1) == 0 && line[n - 1] == '}' &&
		    jcheck_validate(line, n, JSON_CHECK_DEPTH_MAX, NULL, 0) == 0) {
			res = line + sizeof(ok) - 1;
			res_len = n - (sizeof(ok) - 1) - 1;
			break;
		}
		m = n <= HELPER_SMALL_LINE ? json_loadb(line, n, 0, NULL) : NULL;
		if (m && json_integer_value(json_object_get(m, "id")) == 2 &&
		    (json_object_get(m, "result") || json_object_get(m, "error")))
			found = m;
		else
			json_decref(m);
		line += n + 1;
	}
	if (j->h) {
		open_finish(j, res || (found && json_object_get(found, "result")), found);
		json_decref(found);
		job_free(j);
		return;
	}
	if (j->call_done) {
		json_t *reply = found;

		if (res) {
			json_t *v = json_loadb(res, res_len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);

			reply = v ? json_pack("{s:o}", "result", v) : NULL;
		} else if (!found) {
			log_error("The sandboxed filesystem helper (pid %d) gave no answer (status %d)",
				  (int)j->pid, j->status);
		}
		j->call_done(j->call_arg, reply);
		if (reply != found)
			json_decref(reply);
		json_decref(found);
		job_free(j);
		return;
	}
	if (!j->orphaned) {
		if (res) {
			relay_result(j, res, res_len);
		} else if (found && json_object_get(found, "result")) {
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
	/*
	 * Done (or the helper died): EOF tells it to answer and exit. fs/open's
	 * socket stays open for the descriptor coming back.
	 */
	if (j->h && res > 0)
		(void)shutdown(j->in_fd, SHUT_WR);
	else
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
		/* Nobody to answer: drain the helper so that it can exit, keep nothing. */
		j->out.len = j->orphaned ? 0 : j->out.len + (size_t)res;
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

static void arm_read_now(struct helper_job *j)
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

static void read_admitted(struct conn_mem *m)
{
	arm_read_now(container_of(m, struct helper_job, mem));
}

/*
 * The next read's room is charged first; while the budgets have none, the
 * helper waits on its full pipe.
 */
static void arm_read(struct helper_job *j)
{
	int k = conn_mem_acquire(&j->mem, j->out.len + HELPER_READ_CHUNK, read_admitted);

	if (k < 0) {
		log_error("The sandboxed filesystem helper's output would exceed %zu bytes, stopping it",
			  conn_mem_limit(j->srv));
		kill(j->pid, SIGKILL);
		j->out_fd = safe_close(j->out_fd);
		job_op_done(j);
	} else if (k > 0) {
		arm_read_now(j);
	}
}

static void on_helper_exit(struct uring_op *op, int res, uint32_t flags)
{
	struct helper_job *j = container_of(op, struct helper_job, xop);

	if (!j->srv->ring.has_waitid)
		(void)waitid((idtype_t)P_PIDFD, (id_t)j->pidfd, &j->si, WEXITED);
	j->status = res < 0 ? res : j->si.si_status;
	job_op_done(j);
}

/* path is dir or lies beneath it (both canonical). */
static bool path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return strncmp(path, dir, n) == 0 && (path[n] == 0 || path[n] == '/' || dir[n - 1] == '/');
}

void fs_sandbox_init(struct server *s)
{
	const char *tmps[] = { "/tmp", getenv("TMPDIR") }, *exe;
	int r = spawn_self_init();

	if (r < 0) {
		log_warning_errno(r, "Cannot open uexec's own binary: sandboxed filesystem "
				     "requests will be refused");
		return;
	}
	if (s->sandbox.missing[0])
		return; /* no sandboxes at all */
	exe = spawn_self_path();
	for (size_t i = 0; i < ELEMENTSOF(tmps); i++) {
		char root[PATH_MAX];

		if (!tmps[i] || tmps[i][0] != '/' || !realpath(tmps[i], root) ||
		    !path_under(exe, root))
			continue;
		log_warning("The uexec binary %s lies under %s, which workspace-write sandbox "
			    "policies make writable (/tmp, $TMPDIR): a sandboxed process could "
			    "replace it, and the replacement would run as the server at its next "
			    "start; install uexec elsewhere",
			    exe, tmps[i]);
		break;
	}
}

static char *build_request(const char *method, json_t *params, size_t *ret_len)
{
	/* u64 limits from 2^63 up (fs/walk's) are forwarded as i64::MAX: as unbounded. */
	json_t *p = jrpc_copy_clamped(params), *req;
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

/*
 * The request's `sandbox` as a policy. Returns 1 with *ret when it restricts,
 * 0 when the request runs in the server (absent, null or disabled), or -1
 * after replying with the error.
 */
static int helper_policy(struct conn *c, json_t *id, json_t *sb, struct sandbox_policy **ret)
{
	struct sandbox_context ctx = { .tmpdir = getenv("TMPDIR") };
	struct sandbox_policy *pol = NULL;
	char err[512];
	int r;

	if (!sb || json_is_null(sb))
		return 0;
	if (!json_is_object(sb)) {
		/* never 0: a sandbox context has required fields */
		(void)params_struct_error(sb, "struct WireFileSystemSandboxContext", err, sizeof(err));
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "%s", err);
		return -1;
	}
	if (exec_check_sandbox_shape(sb, err) < 0) {
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "%s", err);
		return -1;
	}
	r = sandbox_policy_parse(sb, &ctx, &pol, err, sizeof(err));
	if (r < 0) {
		rpc_reply_error(c, id, r == -ENOMEM ? RPC_INTERNAL_ERROR : RPC_INVALID_PARAMS, "%s",
				r == -ENOMEM ? "out of memory" : err);
		return -1;
	}
	if (pol->kind == SANDBOX_DISABLED) {
		sandbox_policy_free(pol);
		return 0;
	}
	if (!json_is_string(json_object_get(sb, "cwd"))) {
		sandbox_policy_free(pol);
		rpc_reply_error(c, id, RPC_INVALID_PARAMS,
				"file system sandbox context with dynamic permissions requires cwd");
		return -1;
	}
	*ret = pol;
	return 1;
}

/* Spawns the helper under j->plan. */
static int helper_spawn(struct helper_job *j, struct conn *c, const char **step)
{
	/* Its rare log lines join ours on stderr: in our format (--log-format). */
	char *argv[] = { "uexec", "--fs-helper", "--log-format",
			 log_get_format() == LOG_FORMAT_JSON ? "json" : "text", NULL };
	char *envp[8] = { "PATH=/usr/bin:/bin", NULL };
	struct spawn_args sa = { 0 };
	struct spawn_result res;
	size_t n = 1;
	int r;

	for (size_t i = 0; j->env_extra && j->env_extra[i] && n + 1 < ELEMENTSOF(envp); i++)
		envp[n++] = j->env_extra[i];
	envp[n] = NULL;

	sa.exec_self = true; /* the binary opened at start, whatever the path holds now */
	sa.explicit_path = true;
	sa.argv = argv;
	sa.envp = envp;
	sa.cwd = "/";
	sa.pipe_stdin = true;
	sa.stdin_socket = j->h != NULL; /* fs/open: the fd comes back over it */
	sa.sandbox = j->plan;
	sa.nofile = &c->srv->nofile_orig;
	sa.stderr_fd = STDERR_FILENO; /* the helper's rare log lines join ours */
	r = spawn_process(&sa, &res, step);
	if (r < 0)
		return r;
	j->pid = res.pid;
	j->pidfd = res.pidfd;
	j->in_fd = res.stdin_fd;
	j->out_fd = res.out_fd;
	return 0;
}

/* Arms the helper's stdin write, output read and exit ops. */
static void helper_arm(struct helper_job *j)
{
	struct io_uring_sqe *sqe;

	j->inflight = 3;
	arm_write(j);
	arm_read(j);
	sqe = uring_get_sqe(&j->srv->ring, &j->xop, on_helper_exit);
	if (j->srv->ring.has_waitid) {
		io_uring_prep_rw(UEXEC_IORING_OP_WAITID, sqe, j->pidfd, NULL, P_PIDFD, 0);
		sqe->file_index = WEXITED;
		sqe->addr2 = (uint64_t)(uintptr_t)&j->si;
	} else {
		/* Without WAITID: the helper exits right after its output EOF; poll then reap. */
		io_uring_prep_poll_add(sqe, j->pidfd, POLLIN);
	}
}

/* For fs_sandbox_call: where the answer goes instead of a client. */
struct helper_call {
	fs_sandbox_done_fn done;
	void *arg;
	char *const *env;
};

/*
 * Starts method in a helper under pol (taken). Replying mode (call NULL):
 * errors are replied to c/id and 0 returned; with call: nothing is replied,
 * 0 when done() will run later, -errno when the helper could not start.
 */
static int helper_launch(struct conn *c, json_t *id, const char *method, json_t *params,
			 struct sandbox_policy *pol, struct fs_handle *h,
			 const struct helper_call *call)
{
	struct helper_job *j;
	const char *step = NULL;
	char err[512];
	int r;

	j = calloc(1, sizeof(*j));
	if (!j || spawn_self_fd() < 0) {
		free(j);
		sandbox_policy_free(pol);
		if (h)
			fs_handle_open_end(c, h, -1);
		if (call)
			return -EPERM;
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "sandbox intent cannot be enforced on this executor");
		return 0;
	}
	j->srv = c->srv;
	j->conn = c;
	j->h = h;
	if (call) {
		j->call_done = call->done;
		j->call_arg = call->arg;
		j->env_extra = call->env;
	}
	conn_mem_init(&j->mem, c);
	j->pidfd = j->in_fd = j->out_fd = -1;
	r = sandbox_plan_new(pol, &c->srv->sandbox, spawn_self_fd(), &j->plan, err, sizeof(err));
	sandbox_policy_free(pol);
	if (r < 0) {
		log_warning("Refusing a sandboxed %s: %s", method, err[0] ? err : strerror(-r));
		j->call_done = NULL;
		job_free(j);
		if (call)
			return -EPERM;
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "sandbox intent cannot be enforced on this executor");
		return 0;
	}
	exec_warn_self_writable(j->plan, method);
	j->req = build_request(method, params, &j->req_len);
	if (!j->req) {
		job_free(j);
		if (call)
			return -ENOMEM;
		rpc_reply_errno_internal(c, id, ENOMEM);
		return 0;
	}
	r = helper_spawn(j, c, &step);
	if (r < 0) {
		log_error_errno(r, "Starting the sandboxed filesystem helper failed%s%s",
				step ? " at " : "", step ? step : "");
		job_free(j);
		if (call)
			return r;
		rpc_reply_error(c, id, RPC_INTERNAL_ERROR, "sandboxed filesystem helper failed to start");
		return 0;
	}
	if (!call)
		rpc_pending_start(&j->pend, c, id, job_cancel);
	conn_mem_set(&j->mem, HELPER_ESTIMATE);
	helper_arm(j);
	return 0;
}

/*
 * Runs method through a helper when params carries a restricting sandbox.
 * h: fs/open's handle (its reference is taken over in every case once this
 * returns true), or NULL. Returns false when the request runs in the server.
 */
static bool helper_start(struct conn *c, json_t *id, const char *method, json_t *params,
			 struct fs_handle *h)
{
	json_t *sb = json_is_object(params) ? json_object_get(params, "sandbox") : NULL;
	struct sandbox_policy *pol = NULL;
	int r;

	r = helper_policy(c, id, sb, &pol);
	if (r <= 0) {
		if (r < 0 && h)
			fs_handle_open_end(c, h, -1);
		return r < 0;
	}
	(void)helper_launch(c, id, method, params, pol, h, NULL);
	return true;
}

int fs_sandbox_check(struct conn *c, json_t *id, json_t *sandbox)
{
	struct sandbox_policy *pol = NULL;
	int r = helper_policy(c, id, sandbox, &pol);

	sandbox_policy_free(pol);
	return r;
}

int fs_sandbox_call(struct conn *c, const char *method, json_t *params, json_t *sandbox,
		    char *const *env, fs_sandbox_done_fn done, void *arg)
{
	struct helper_call call = { done, arg, env };
	struct sandbox_policy *pol = NULL;
	struct sandbox_context ctx = { .tmpdir = getenv("TMPDIR") };
	char err[512];
	int r;

	/* Checked by fs_sandbox_check when the request arrived: only the policy is wanted here. */
	r = sandbox_policy_parse(sandbox, &ctx, &pol, err, sizeof(err));
	if (r < 0)
		return r;
	return helper_launch(c, NULL, method, params, pol, NULL, &call);
}

bool fs_sandbox_forward(struct conn *c, json_t *id, const char *method, json_t *params)
{
	return helper_start(c, id, method, params, NULL);
}

bool fs_sandbox_open(struct conn *c, json_t *id, json_t *params, struct fs_handle *h)
{
	return helper_start(c, id, "fs/open", params, h);
}

int fs_sandbox_pass_fd(int fd)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	char byte = 0;
	struct iovec iov = { &byte, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

	memset(u.buf, 0, sizeof(u.buf));
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(STDIN_FILENO, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) == 1 ? 0 : -errno;
}
