/* SPDX-License-Identifier: MIT */
/*
 * process/start (PROTOCOL.md §6.6): the checks in the reference's order,
 * the sandbox plan, the environment (proxy variables and CA included), the
 * program, a shell snapshot, the process's cgroup, the spawn, the network
 * proxy, the audit line, and the process filed in its session.
 */
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conn.h"
#include "environ.h"
#include "exec.h"
#include "log.h"
#include "mitm.h"
#include "netproxy-config.h"
#include "netproxy-env.h"
#include "os-error.h"
#include "params.h"
#include "plan.h"
#include "policy.h"
#include "proc.h"
#include "proxy.h"
#include "rpc-process.h"
#include "rpc.h"
#include "sandbox.h"
#include "session.h"
#include "shell-snapshot.h"
#include "spawn.h"
#include "spawner.h"

void exec_warn_self_writable(const struct sandbox_plan *plan, const char *what)
{
	static bool warned;
	const char *exe = spawn_self_path(), *root = sandbox_plan_writable_root(plan, exe);

	if (!root || warned)
		return;
	warned = true;
	log_warning("A sandboxed %s can write the uexec binary %s (writable root %s): a file put "
		    "there would run as the server at its next start (the fs helper is executed "
		    "through a descriptor and is not affected); install uexec outside the roots "
		    "clients make writable (logged once)",
		    what, exe, root);
}

/*
 * Turns the request's sandbox object into a plan. Returns 0 with *ret (NULL
 * when nothing is restricted: "disabled"), or replies and returns < 0. Fails
 * closed: a policy this host cannot enforce is refused, never run unsandboxed.
 */
static int build_sandbox(struct conn *c, json_t *id, json_t **f, const char *cwd,
			 const struct netproxy_config *managed, struct sandbox_plan **ret)
{
	struct sandbox_context ctx = { .cwd = cwd, .tmpdir = getenv("TMPDIR") };
	struct sandbox_policy *pol = NULL;
	char err[ERRSZ], cwdbuf[PATH_MAX];
	int r;

	if (!ctx.cwd)
		ctx.cwd = getcwd(cwdbuf, sizeof(cwdbuf));
	r = sandbox_policy_parse(f[F_SANDBOX], &ctx, &pol, err, sizeof(err));
	if (r == -ENOMEM) {
		rpc_reply_errno_internal(c, id, ENOMEM);
		return r;
	}
	if (r < 0) {
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "%s", err);
		return r;
	}
	*ret = NULL;
	pol->managed_network = managed != NULL;
	pol->managed_all_unix = managed && managed->dangerously_allow_all_unix_sockets;
	if (pol->kind == SANDBOX_DISABLED && managed) {
		/*
		 * Enforced managed network without a sandbox (the reference still
		 * gives such a command a network namespace of its own): the plan of
		 * an unrestricted filesystem with network access, whose namespace
		 * holds only the proxy.
		 */
		pol->kind = SANDBOX_EXTERNAL;
		pol->full_read = pol->full_write = true;
		pol->network = true;
	}
	if (pol->kind == SANDBOX_DISABLED) {
		sandbox_policy_free(pol);
		return 0;
	}
	r = sandbox_plan_new(pol, &c->srv->sandbox, -1, ret, err, sizeof(err));
	sandbox_policy_free(pol);
	if (r < 0) {
		log_warning_ratelimited("Session %s: refusing a sandboxed process/start: %s", c->sess->id,
			    err[0] ? err : strerror(-r));
		rpc_reply_error(c, id, RPC_INVALID_PARAMS,
				"sandbox intent cannot be enforced on this executor");
		return r;
	}
	exec_warn_self_writable(*ret, "process/start");
	return 0;
}

/*
 * For an unsandboxed PTY start: *cwd becomes the directory the child starts
 * in (environ_pty_dir) and *ret the one program to exec. Returns 0, a
 * negative errno, or -ENOENT after replying with the library's text.
 */
static int pty_program(struct conn *c, json_t *id, const char *argv0, char *const *envp,
		       char **cwd, char ***ret)
{
	char dirbuf[PATH_MAX], *dir, *prog = NULL, *msg = NULL, **v;
	int r;

	if (!environ_pty_dir(*cwd, envp, dirbuf, sizeof(dirbuf)))
		return -ENAMETOOLONG;
	dir = strdup(dirbuf);
	if (!dir)
		return -ENOMEM;
	free(*cwd);
	*cwd = dir;
	r = environ_pty_resolve(argv0, envp, dir, &prog, &msg);
	if (r == -ENOENT) {
		rpc_reply_error_kind(c, id, RPC_INTERNAL_ERROR, "spawnFailed", "%s", msg);
		free(msg);
		return r;
	}
	if (r < 0)
		return r;
	v = calloc(2, sizeof(char *));
	if (!v) {
		free(prog);
		return -ENOMEM;
	}
	v[0] = prog;
	*ret = v;
	return 0;
}

/*
 * Makes a struct proc of a spawned child and files it in the session (taking
 * *plan). On failure the child is killed and reaped: no orphan is left.
 */
static int track_process(struct session *ss, json_t *process_id, const struct spawn_result *res,
			 const struct spawn_args *sa, bool sandboxed, uint64_t ev_cgroup,
			 struct sandbox_plan **plan, struct proc **ret)
{
	struct sandbox_cg_leaf *leaf = (struct sandbox_cg_leaf *)sa->cgroup;
	struct proc *p = NULL;
	int r;

	r = proc_new(ss, json_string_value(process_id), json_string_length(process_id), res,
		     sa->tty, sa->pipe_stdin, sandboxed, *plan, &p);
	if (r >= 0)
		*plan = NULL; /* owned by p now */
	/* Its evidence tree owns the tracer's watch of its cgroup from now on. */
	if (r >= 0)
		exec_evidence_adopt_cgroup(p->ev_wait.tree, ev_cgroup);
	else
		exec_evidence_unwatch(ev_cgroup);
	if (r >= 0 && leaf) {
		p->cg = *leaf; /* owned by p now: killed and removed with it */
		p->has_cg = true;
	}
	if (r >= 0)
		r = strmap_put(&ss->procs, p->id, p->id_len, p);
	if (r < 0) {
		kill(-res->pid, SIGKILL);
		if (p) {
			proc_free(p);
		} else {
			siginfo_t si;

			if (leaf)
				(void)sandbox_cg_leaf_kill(&ss->srv->cgroups, leaf);
			(void)waitid((idtype_t)P_PIDFD, (id_t)res->pidfd, &si, WEXITED);
			if (leaf)
				exec_cg_leaf_discard(ss->srv, leaf);
			safe_close(res->pidfd);
			safe_close(res->stdin_fd);
			safe_close(res->out_fd);
			safe_close(res->err_fd);
		}
		return r;
	}
	list_add_tail(&p->link, &ss->procs_list);
	ss->n_live++;
	*ret = p;
	return 0;
}

/*
 * Unenforced: the proxy's listeners on the host's loopback, HTTP and SOCKS5
 * TCP on ports of their own, and the SOCKS5 UDP relay (UDP ASSOCIATE's
 * reply names it) on the SOCKS5 port when free, else on one of its own.
 */
static int host_listeners(int fds[3], uint16_t ports[2])
{
	struct sockaddr_in udp = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	for (int i = 0; i < 2; i++) {
		struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t len = sizeof(sin);

		fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fds[i] < 0 || bind(fds[i], (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
		    listen(fds[i], SOMAXCONN) < 0 || getsockname(fds[i], (struct sockaddr *)&sin, &len) < 0)
			return -errno;
		ports[i] = ntohs(sin.sin_port);
	}
	fds[2] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fds[2] < 0)
		return -errno;
	udp.sin_port = htons(ports[1]);
	if (bind(fds[2], (struct sockaddr *)&udp, sizeof(udp)) == 0)
		return 0;
	udp.sin_port = 0;
	return bind(fds[2], (struct sockaddr *)&udp, sizeof(udp)) < 0 ? -errno : 0;
}

static void start_process(struct conn *c, json_t *id, json_t *params, bool resumed);

/* A new process id, and room for one more process. Returns 0, or -1 after replying. */
static int check_room(struct conn *c, json_t *id, json_t **f)
{
	struct session *ss = c->sess;

	if (exec_lookup_process(c, f[F_PROCESS_ID])) {
		rpc_reply_error_quoted(c, id, RPC_INVALID_REQUEST, "process ", f[F_PROCESS_ID],
				       " already exists");
		return -1;
	}
	if (ss->n_live >= c->srv->cfg.max_processes) {
		log_warning_ratelimited("Session %s: process limit (%u) reached", ss->id,
					c->srv->cfg.max_processes);
		rpc_reply_error(c, id, RPC_INVALID_REQUEST,
				"process limit reached: at most %u running processes per session",
				c->srv->cfg.max_processes);
		return -1;
	}
	return 0;
}

/* A request parked for a shell snapshot capture goes on (shell-snapshot.h). */
static void resume_start(struct conn *c, json_t *id, json_t *params)
{
	start_process(c, id, params, true);
}

void exec_rpc_process_start(struct conn *c, json_t *id, json_t *params)
{
	start_process(c, id, params, false);
}

/*
 * One process/start under way: what its steps share. A step returns 0 to go
 * on, START_ANSWERED once the request was answered (an error reply, or
 * parked for a shell snapshot), or -errno for start_process to answer as a
 * spawn's failure.
 */
#define START_ANSWERED 1

struct start {
	struct conn *c;
	json_t *id, *params;
	bool resumed;
	json_t *f[_F_START_MAX], *argv0;
	char err[ERRSZ], *cwd, **envp, **cands, **argv;
	struct snap_launch snap;
	bool snap_first;
	struct spawn_result res;
	struct spawn_args sa;
	struct sandbox_plan *plan;
	unsigned short rows, cols;
	struct sandbox_cg_limits limits;
	struct sandbox_cg_leaf leaf;
	uint64_t timeout_ms, ev_cgroup;
	int has_leaf, psock[2];
	struct netproxy_config *npc;
	struct netproxy *np;
	bool managed, mn_ttcp;
	int nr, hfds[3];
	uint16_t hports[2];
	/* On the spawner thread (spawner.h): the job, and the request answered when it is done. */
	struct spawn_job job;
	struct rpc_pending pend;
	struct session *ss;
	struct server *srv;
};

/* Every decoding step, in the reference's order. 0, or -1 after replying. */
static int start_decode(struct start *st)
{
	json_t **f = st->f;
	char *err = st->err;
	int r = 0;

	if (params_decode(st->params, "WireExecParams", exec_start_fields, _F_START_MAX, f, err,
			  sizeof(st->err)) < 0 ||
	    (r = exec_check_start_nested(f, &st->npc, &st->mn_ttcp, err)) < 0 ||
	    exec_decode_start_ext(f[F_SIZE], f[F_TIMEOUT_MS], params_bool(f[F_TTY], false), &st->rows,
				  &st->cols, &st->timeout_ms, err) < 0 ||
	    exec_decode_limits(st->c->srv, f[F_LIMITS], &st->limits, err) < 0 ||
	    /* After every decoding error, before the other checks (the reference's order). */
	    netproxy_config_check(st->npc, st->mn_ttcp, err, sizeof(st->err)) < 0) {
		if (r == -ENOMEM)
			rpc_reply_errno_internal(st->c, st->id, ENOMEM);
		else
			rpc_reply_error(st->c, st->id, RPC_INVALID_PARAMS, "%s", err);
		return -1;
	}
	return 0;
}

/* The checks before anything is built: argv, draining, cwd, the sandbox's plan, the process id. */
static int start_check(struct start *st)
{
	struct conn *c = st->c;
	json_t *id = st->id, **f = st->f;

	if (json_array_size(f[F_ARGV]) == 0) {
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "argv must not be empty");
		return START_ANSWERED;
	}
	if (c->srv->draining) {
		rpc_reply_error(c, id, RPC_SERVER_DRAINING,
				"exec-server is shutting down: no new processes are started");
		return START_ANSWERED;
	}
	st->argv0 = json_array_get(f[F_ARGV], 0);
	if (exec_decode_cwd(c, id, f[F_CWD], &st->cwd) < 0)
		return START_ANSWERED;
	/* Enforced (the reference's rule): a proxy, enforceManagedNetwork, and any sandbox object. */
	st->managed = st->npc && params_bool(f[F_ENFORCE_NET], false) && f[F_SANDBOX];
	if (f[F_SANDBOX] &&
	    build_sandbox(c, id, f, st->cwd, st->managed ? st->npc : NULL, &st->plan) < 0)
		return START_ANSWERED;
	if (f[F_SHELL_SNAPSHOT] && snap_check_scope(f[F_SHELL_SNAPSHOT], st->err, sizeof(st->err)) < 0) {
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "%s", st->err);
		return START_ANSWERED;
	}
	/*
	 * The reference prepares a shell snapshot (and captures it) before it
	 * looks at the process id: with one, the first pass checks it after.
	 */
	st->snap_first = f[F_SHELL_SNAPSHOT] && !st->resumed;
	if (!st->snap_first && check_room(c, id, f) < 0)
		return START_ANSWERED;

	if (json_string_length(st->argv0) == 0) {
		/* The reference's spawner refuses an empty program before looking for it. */
		rpc_reply_error_kind(c, id, RPC_INTERNAL_ERROR, "spawnFailed", "missing program for %s spawn",
				params_bool(f[F_TTY], false) ? "PTY" : "pipe");
		return START_ANSWERED;
	}
	return 0;
}

/* The child's environment (the proxies' variables and CA included), argv and program. */
static int start_environment(struct start *st)
{
	struct conn *c = st->c;
	json_t *id = st->id, **f = st->f;
	struct netproxy_config *npc = st->npc;
	int r;

	r = environ_build(f[F_ENV], f[F_ENV_POLICY], f[F_METADATA], params_bool(f[F_TTY], false),
			  exec_login_shell(), &st->envp);
	if (r == -EILSEQ) {
		rpc_reply_error_kind(c, id, RPC_INTERNAL_ERROR, "spawnFailed",
				     "data provided contains a nul byte");
		return START_ANSWERED;
	}
	/*
	 * The proxies' ports: fixed in the command's own namespace (sandbox.h);
	 * not enforced (no sandbox, or enforceManagedNetwork false), listeners
	 * of the server's own on the host's loopback, as the reference does.
	 */
	if (r >= 0 && npc && !st->managed) {
		r = host_listeners(st->hfds, st->hports);
		if (r < 0)
			return r;
	}
	if (r >= 0 && npc) {
		const char *av[3] = { NULL };
		size_t argc = json_array_size(f[F_ARGV]);

		for (size_t i = 0; i < argc && i < 3; i++)
			av[i] = json_string_value(json_array_get(f[F_ARGV], i));
		r = netproxy_env_apply(npc, st->managed ? SANDBOX_PROXY_HTTP_PORT : st->hports[0],
				       st->managed ? SANDBOX_PROXY_SOCKS_PORT : st->hports[1],
				       netproxy_env_maskable(av, argc), &st->envp);
	}
	if (r >= 0 && npc && npc->credential_masking) {
		struct np_mitm *m;

		/* the interception CA the command is told to trust (without it: no interception) */
		if (netproxy_mitm_get(c->srv, &m) == 0)
			r = netproxy_env_ca(netproxy_mitm_bundle(m), &st->envp);
	}
	if (r >= 0)
		r = exec_build_argv(f, &st->argv);
	if (r == -EILSEQ) {
		/* A NUL in argv or arg0: std::process::Command's own wording. */
		rpc_reply_error_kind(c, id, RPC_INTERNAL_ERROR, "spawnFailed",
				     "nul byte found in provided data");
		return START_ANSWERED;
	}
	st->sa.explicit_path = strchr(json_string_value(st->argv0), '/') != NULL;
	if (r >= 0 && params_bool(f[F_TTY], false) && !st->plan) {
		/* A PTY child: the reference's PTY library picks its directory and program. */
		r = pty_program(c, id, json_string_value(st->argv0), st->envp, &st->cwd, &st->cands);
		if (r == -ENOENT) {
			c->srv->metrics.spawn_failures++;
			return START_ANSWERED; /* replied */
		}
		st->sa.explicit_path = true;
	} else if (r >= 0) {
		r = environ_exec_candidates(json_string_value(st->argv0), st->envp, &st->cands);
	}
	return r < 0 ? r : 0;
}

/* What spawn_process() is given, and the shell snapshot's part in it. */
static int start_spawn_args(struct start *st)
{
	struct spawn_args *sa = &st->sa;
	json_t **f = st->f;

	sa->candidates = (const char *const *)st->cands;
	sa->argv = st->argv;
	sa->envp = st->envp;
	sa->cwd = st->cwd;
	sa->tty = params_bool(f[F_TTY], false);
	sa->pipe_stdin = params_bool(f[F_PIPE_STDIN], false);
	sa->nofile = &st->c->srv->nofile_orig;
	sa->sandbox = st->plan;
	sa->stderr_fd = -1;
	sa->rows = st->rows; /* the reference's fixed 24x80 unless `size` says otherwise */
	sa->cols = st->cols;
	if (f[F_SHELL_SNAPSHOT]) {
		struct snap_start req = { f[F_SHELL_SNAPSHOT], f[F_ARGV], f[F_ENV], f[F_ENV_POLICY],
					  f[F_CWD], f[F_SANDBOX], st->params };

		enum snap_result sr = snap_prepare(st->c, st->id, &req, sa, !st->resumed, resume_start,
						   &st->snap);

		/* SNAP_PARKED: started again once the capture is over. */
		if (sr == SNAP_ERROR || sr == SNAP_PARKED)
			return START_ANSWERED;
		if (sr == SNAP_APPLY)
			snap_apply(&st->snap, st->argv, &st->envp, sa);
		if (st->snap_first && check_room(st->c, st->id, f) < 0)
			return START_ANSWERED;
	}
	return 0;
}

/* The proxy's socket (an enforced managed network) and the process's own cgroup. */
static int start_cgroup(struct start *st)
{
	struct session *ss = st->c->sess;

	/* The capture above ran without it: the proxy's socket is the command's alone. */
	if (st->managed && st->plan) {
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, st->psock) < 0)
			return -errno;
		sandbox_plan_set_proxy(st->plan, st->psock[1], st->npc->enable_socks5);
	}
	/* Its own cgroup, made before the clone (proc-cgroup.c). */
	st->has_leaf = exec_cg_leaf(st->c->srv, st->plan, &st->limits, &st->leaf);
	if (st->has_leaf < 0 &&
	    (st->limits.pids_max || st->limits.memory_max || st->limits.cpu_milli)) {
		/* Limits are promised: no process without them. */
		log_warning_errno_ratelimited(st->has_leaf, "Session %s: cannot create a cgroup for "
					      "process '%s'", ss->id,
					      json_string_value(st->f[F_PROCESS_ID]));
		rpc_reply_error_kind(st->c, st->id, RPC_INTERNAL_ERROR, "spawnFailed",
				     "cannot create the process's cgroup for its limits: %s",
				     strerror(-st->has_leaf));
		return START_ANSWERED;
	}
	if (st->has_leaf < 0) {
		log_warning_errno_ratelimited(st->has_leaf, "Session %s: cannot create a cgroup for "
					      "process '%s'; it starts in the server's",
					      ss->id, json_string_value(st->f[F_PROCESS_ID]));
		st->has_leaf = 0;
	}
	st->sa.cgroup = st->has_leaf ? &st->leaf : NULL;
	return 0;
}

/* After the spawn: the enforced proxy's listeners from the child, and the audit line. */
static int start_spawned(struct start *st, int r, const char *step)
{
	struct conn *c = st->c;
	struct session *ss = c->sess;

	st->psock[1] = safe_close(st->psock[1]);
	if (r >= 0 && st->psock[0] >= 0) {
		int pfds[SANDBOX_PROXY_NFDS];

		st->nr = sandbox_proxy_receive(st->psock[0], pfds);
		if (st->nr == 0)
			st->nr = netproxy_new(c->srv, TAKE_PTR(st->npc), pfds[SANDBOX_PROXY_HTTP],
					      pfds[SANDBOX_PROXY_SOCKS], pfds[SANDBOX_PROXY_SOCKS_UDP],
					      &st->np, st->err, sizeof(st->err));
		if (st->nr < 0)
			/* The command runs without a way out; it is ended below (fail closed). */
			log_warning_errno(st->nr, "Session %s: cannot start the network proxy of '%s': %s",
					  ss->id, json_string_value(st->f[F_PROCESS_ID]),
					  st->nr == -EINVAL ? st->err : "");
	}
	if (st->has_leaf)
		sandbox_cg_leaf_spawned(&st->leaf);
	exec_audit_start(c, st->f, st->argv, st->cwd, st->plan, st->has_leaf ? &st->limits : NULL,
			 r < 0 ? 0 : st->res.pid, r);
	if (r < 0) {
		c->srv->metrics.spawn_failures++;
		if (st->has_leaf)
			exec_cg_leaf_discard(c->srv, &st->leaf); /* the child is reaped */
		exec_evidence_unwatch(st->ev_cgroup);
		exec_reply_spawn_error(c, st->id, st->argv0, r, step);
		return START_ANSWERED;
	}
	return 0;
}

/* The spawned process filed in its session with its proxy, then the reply and its output. */
static int start_track(struct start *st)
{
	struct conn *c = st->c;
	struct session *ss = c->sess;
	json_t **f = st->f, *result;
	struct proc *p = NULL;
	int r;

	if (st->npc && !st->managed) {
		st->nr = netproxy_new(c->srv, TAKE_PTR(st->npc), TAKE_FD(st->hfds[0]),
				      TAKE_FD(st->hfds[1]), TAKE_FD(st->hfds[2]), &st->np, st->err,
				      sizeof(st->err));
		if (st->nr < 0)
			log_warning_errno(st->nr, "Session %s: cannot start the network proxy of '%s': %s",
					  ss->id, json_string_value(f[F_PROCESS_ID]),
					  st->nr == -EINVAL ? st->err : "");
	}
	r = track_process(ss, f[F_PROCESS_ID], &st->res, &st->sa, f[F_SANDBOX] != NULL,
			  st->ev_cgroup, &st->plan, &p);
	if (r < 0) {
		netproxy_free(st->np);
		c->srv->metrics.spawn_failures++;
		return r;
	}
	p->netproxy = TAKE_PTR(st->np);
	if (p->netproxy) {
		netproxy_set_decision_sink(p->netproxy, proc_network_decision, p, ss->id, p->id);
		netproxy_set_reviewer(p->netproxy, &proc_network_reviewer);
	}
	if (st->nr < 0)
		proc_kill_group(p, SIGKILL);
	c->srv->metrics.spawns++;
	if (f[F_SANDBOX])
		c->srv->metrics.sandboxed_spawns++;
	if (st->timeout_ms)
		proc_set_timeout(p, st->timeout_ms);
	p->asked_limits = f[F_LIMITS] != NULL;
	{
		struct log_ctx ctx = { .session = ss->id, .process = p->id, .process_len = p->id_len };
		struct log_field lf[] = { LOG_INT("pid", p->pid), LOG_BOOL("tty", st->sa.tty),
					  LOG_BOOL("sandboxed", f[F_SANDBOX] != NULL) };

		log_event(LOG_DEBUG, "process.started", &ctx, lf, ELEMENTSOF(lf),
			  "Session %s: started '%s' as pid %d (%s)", ss->id, p->id, (int)p->pid,
			  st->sa.tty ? "pty" : "pipes");
	}

	result = json_object();
	json_object_set(result, "processId", f[F_PROCESS_ID]);
	json_object_set_new(result, "sandboxType", json_string(f[F_SANDBOX] ? "linuxSeccomp" : "none"));
	rpc_reply(c, st->id, result);
	proc_start_output(p);
	return 0;
}

static void start_free(struct start *st)
{
	safe_close(st->hfds[0]);
	safe_close(st->hfds[1]);
	safe_close(st->hfds[2]);
	netproxy_config_free(st->npc);
	safe_close(st->psock[0]);
	safe_close(st->psock[1]);
	sandbox_plan_free(st->plan);
	free(st->cwd);
	free(st->argv);
	environ_strv_free(st->envp);
	environ_strv_free(st->cands);
	snap_launch_done(&st->snap);
	free(st);
}

/* The steps after the spawn (r: its result) and the reply. */
static void start_finish(struct start *st, int r, const char *step)
{
	r = start_spawned(st, r, step);
	if (r == 0)
		r = start_track(st);
	if (r < 0)
		exec_reply_spawn_errno(st->c, st->id, r);
}

/*
 * A spawn the connection no longer waits for (it closed, or the server is
 * stopping): the child is killed and reaped, its cgroup removed, nothing
 * answered.
 */
static void start_abandon(struct start *st)
{
	struct server *s = st->srv;

	if (st->job.r >= 0) {
		siginfo_t si;

		kill(-st->res.pid, SIGKILL);
		(void)syscall(SYS_pidfd_send_signal, st->res.pidfd, SIGKILL, NULL, 0);
		if (st->has_leaf)
			(void)sandbox_cg_leaf_kill(&s->cgroups, &st->leaf);
		(void)waitid((idtype_t)P_PIDFD, (id_t)st->res.pidfd, &si, WEXITED);
		safe_close(st->res.pidfd);
		safe_close(st->res.stdin_fd);
		safe_close(st->res.out_fd);
		safe_close(st->res.err_fd);
	}
	if (st->has_leaf)
		exec_cg_leaf_discard(s, &st->leaf);
	exec_evidence_unwatch(st->ev_cgroup);
	json_decref(st->params);
	start_free(st);
}

/*
 * The connection closed while the spawner thread runs the spawn:
 * on_spawned() cleans up. Its hold stays: nothing more of it is dispatched.
 */
static void start_cancel(struct rpc_pending *pend)
{
	struct start *st = container_of(pend, struct start, pend);

	rpc_pending_end(pend);
	st->c = NULL;
}

/* On the loop thread once the spawner thread has spawned (or refused to). */
static void on_spawned(struct spawn_job *j)
{
	struct start *st = container_of(j, struct start, job);
	struct conn *c = st->c;

	if (!c || c->srv->stopping || c->sess != st->ss) {
		/* Stopping: nothing more is dispatched (its hold stays, as on a close). */
		if (c)
			rpc_pending_end(&st->pend);
		start_abandon(st);
		return;
	}
	start_finish(st, j->r < 0 ? j->r : 0, j->step);
	/* Answered: the requests that came after it go on (conn_hold()). */
	rpc_pending_end(&st->pend);
	json_decref(st->params);
	start_free(st);
	conn_release(c);
}

/*
 * The spawn itself: handed to the spawner thread, the connection's later
 * requests held until it is answered (the reference answers in order, and
 * one of them may name this process); without the thread, here.
 */
static int start_spawn(struct start *st)
{
	/* The denial tracer watches the leaf before the child enters it (evidence-ring.h). */
	if (st->plan && st->has_leaf)
		st->ev_cgroup = exec_evidence_watch(st->leaf.fd);
	if (!spawn_thread_running()) {
		const char *step = NULL;
		int r = spawn_process(&st->sa, &st->res, &step);

		start_finish(st, r < 0 ? r : 0, step);
		start_free(st);
		return 0;
	}
	st->ss = st->c->sess;
	st->srv = st->c->srv;
	st->job = (struct spawn_job){ .args = &st->sa, .res = &st->res, .done = on_spawned };
	st->params = json_incref(st->params); /* st->f points into it */
	rpc_pending_start(&st->pend, st->c, st->id, start_cancel);
	st->id = st->pend.id;
	conn_hold(st->c);
	spawn_thread_submit(&st->job);
	return 0;
}

/*
 * process/start as its steps (struct start): decoding, checks, environment
 * and program, spawn arguments (and a shell snapshot), the cgroup, the
 * spawn, the process filed; then what is left is freed.
 */
static void start_process(struct conn *c, json_t *id, json_t *params, bool resumed)
{
	struct start *st = calloc(1, sizeof(*st));
	int r;

	if (!st) {
		rpc_reply_errno_internal(c, id, ENOMEM);
		return;
	}
	*st = (struct start){ .c = c, .id = id, .params = params, .resumed = resumed,
			      .snap = { .fd = -1 }, .rows = 24, .cols = 80,
			      .psock = { -1, -1 }, .hfds = { -1, -1, -1 } };
	if (start_decode(st) < 0) {
		netproxy_config_free(st->npc);
		free(st);
		return;
	}
	r = start_check(st);
	if (r == 0)
		r = start_environment(st);
	if (r == 0)
		r = start_spawn_args(st);
	if (r == 0)
		r = start_cgroup(st);
	if (r == 0) {
		start_spawn(st); /* answers and frees st, now or from the spawner's completion */
		return;
	}
	if (r < 0)
		exec_reply_spawn_errno(c, id, r);
	start_free(st);
}
