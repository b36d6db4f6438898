/* SPDX-License-Identifier: MIT */
/*
 * The server: listener (multishot accept), signals through a signalfd read on
 * the ring, the ping timer, the loop, and shutdown. The audit log's file and
 * SIGHUP's reload are reload.c.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conf.h"
#include "conn-auth.h"
#include "conn-tls.h"
#include "conn.h"
#include "env.h"
#include "discovery.h"
#include "exec.h"
#include "fs-sandbox.h"
#include "host-setup.h"
#include "kill-tree.h"
#include "listener.h"
#include "http-req.h"
#include "log.h"
#include "mitm.h"
#include "netconn.h"
#include "netguard.h"
#include "proc.h"
#include "remote.h"
#include "rpc-fs.h"
#include "rpc.h"
#include "server.h"
#include "session.h"
#include "spawn.h"
#include "spawner.h"
#include "tls-mem.h"
#include "tls-load.h"
#include "toml-load.h"
#include "uexec.h"
#include "upgrade.h"
#include "watch.h"
#include "worker.h"

/* ---- signals and timers ---- */

static void arm_signal(struct server *s);

/* Processes not closed yet (running, or exited with output still to read), every session. */
static unsigned live_processes(struct server *s)
{
	struct session *ss;
	unsigned n = 0;

	list_for_each_entry(ss, &s->sessions, link)
		n += ss->n_live;
	return n;
}

/* After the drain timeout's kill: how long the killed processes get to be reaped and reported. */
#define DRAIN_KILL_GRACE_MS 3000

static void on_drain_timer(struct uring_timer *t, bool fired)
{
	struct server *s = container_of(t, struct server, drain_timer);
	unsigned live, walked, cgroups = 0;
	struct log_field f[4];
	struct session *ss;
	struct proc *p;

	if (!fired || s->stopping)
		return;
	if (s->drain_killed) {
		unsigned not_reaped = 0, not_closed = 0, unsent = 0;
		struct conn *c;

		/*
		 * Say what is left: a process killed but not reaped is another thing
		 * than one whose last output a client that stopped reading never took
		 * (its paused pipe never reaches EOF), or a reply still queued.
		 */
		list_for_each_entry(ss, &s->sessions, link)
			list_for_each_entry(p, &ss->procs_list, link)
				if (!p->closed) {
					not_closed++;
					if (!p->reaped)
						not_reaped++;
				}
		list_for_each_entry(c, &s->conns, link)
			if (c->out_bytes > 0)
				unsent++;
		log_warning("Drain: stopping %d ms after the SIGKILL with %u processes not reaped, "
			    "%u not closed (output not read) and %u connections with output unsent",
			    DRAIN_KILL_GRACE_MS, not_reaped, not_closed - not_reaped, unsent);
		/* An upgrade's fallback stops by itself, the new binary next (docs/UPGRADE.md). */
		if (!upgrade_drained(s))
			server_stop(s, 0);
		return;
	}
	/*
	 * The whole tree. A process with its own cgroup: the cgroup is killed
	 * (what process/terminate does), closed or not, so whatever it left
	 * running goes too (setsid daemons, orphans with their output elsewhere).
	 * Without one (no cgroups on this host, --process-cgroups off): the
	 * descendants that left the group first, through /proc (their parents
	 * must be alive to be found), then each group (a sandboxed process's PID
	 * namespace dies with its init).
	 */
	live = live_processes(s);
	walked = server_kill_descendants(s);
	list_for_each_entry(ss, &s->sessions, link)
		list_for_each_entry(p, &ss->procs_list, link) {
			if (p->has_cg && p->cg.live)
				cgroups++;
			if (!p->closed)
				proc_kill_group(p, SIGKILL); /* with its cgroup (proc.h) */
			else
				proc_cg_kill(p);
		}
	f[0] = LOG_INT("timeoutMs", s->cfg.drain_timeout_ms);
	f[1] = LOG_INT("processes", live);
	f[2] = LOG_INT("cgroups", cgroups);
	f[3] = LOG_INT("walked", walked);
	log_event(LOG_WARNING, "drain.timeout", NULL, f, ELEMENTSOF(f),
		  "Drain: %" PRIu64 " ms passed, killing the %u processes left (%u cgroups killed, "
		  "%u trees walked in /proc)", s->cfg.drain_timeout_ms, live, cgroups, walked);
	s->drain_killed = true;
	uring_timer_arm(&s->ring, &s->drain_timer, DRAIN_KILL_GRACE_MS, on_drain_timer);
}

/*
 * SIGTERM with --drain-timeout-ms (and the live upgrade's fallback, why
 * saying which): stop accepting (the listener is closed, so new connections
 * are refused), refuse new sessions and processes (exec.h), let what runs
 * finish; server_drain_check() stops once nothing is left. With a timeout of
 * 0 (the fallback without --drain-timeout-ms) the timer fires at once: what
 * runs is killed and reported.
 */
static void drain_start(struct server *s, const char *why)
{
	struct log_field f[2] = { LOG_INT("timeoutMs", s->cfg.drain_timeout_ms),
				  LOG_INT("processes", live_processes(s)) };

	s->draining = true;
	log_event(LOG_INFO, "drain.start", NULL, f, ELEMENTSOF(f),
		  "%s: draining (%u processes running, up to %" PRIu64 " ms); "
		  "a%s SIGTERM stops at once", why, live_processes(s), s->cfg.drain_timeout_ms,
		  strcmp(why, "Received SIGTERM") == 0 ? " second" : "");
	if (s->listen_fd >= 0) {
		if (s->accept_op.busy)
			uring_cancel(&s->ring, &s->accept_op);
		uring_timer_cancel(&s->accept_timer);
		s->listen_fd = safe_close(s->listen_fd);
	}
	uring_timer_arm(&s->ring, &s->drain_timer, s->cfg.drain_timeout_ms, on_drain_timer);
}

/* Between loop iterations: a drain ends once no process is left and every reply is written. */
static void drain_check(struct server *s)
{
	struct conn *c;

	if (!s->draining || s->stopping || live_processes(s) > 0)
		return;
	list_for_each_entry(c, &s->conns, link)
		if (c->out_bytes > 0)
			return; /* exit notifications on their way */
	/* An upgrade's fallback stops by itself, the new binary next (docs/UPGRADE.md). */
	if (upgrade_drained(s))
		return;
	log_event(LOG_INFO, "drain.done", NULL, NULL, 0, "Drain complete%s, stopping",
		  s->drain_killed ? " (processes left at the timeout were killed)" : "");
	server_stop(s, 0);
}

static void on_signal(struct uring_op *op, int res, uint32_t flags)
{
	struct server *s = container_of(op, struct server, signal_op);
	struct signalfd_siginfo *si = (struct signalfd_siginfo *)s->siginfo;

	if (res == (int)sizeof(*si)) {
		int sig = (int)si->ssi_signo;
		struct log_field f[] = { LOG_STR("signal", sigabbrev_np(sig)) };

		if (sig == SIGHUP) {
			server_reload(s);
		} else if (sig == SIGUSR2) {
			upgrade_on_signal(s); /* live upgrade (docs/UPGRADE.md) */
		} else if (sig == SIGTERM && s->cfg.drain_timeout_ms > 0 && !s->draining &&
			   !s->cfg.fs_helper) {
			drain_start(s, "Received SIGTERM");
		} else {
			log_event(LOG_INFO, "server.stop", NULL, f, ELEMENTSOF(f),
				  "Received %s%s, shutting down", strsignal(sig),
				  s->draining ? " while draining" : "");
			server_stop(s, 0);
			return;
		}
	}
	if (!s->stopping)
		arm_signal(s);
}

static void arm_signal(struct server *s)
{
	struct io_uring_sqe *sqe = uring_get_sqe(&s->ring, &s->signal_op, on_signal);

	io_uring_prep_read(sqe, s->signal_fd, s->siginfo, sizeof(struct signalfd_siginfo), 0);
}

static void on_ping(struct uring_timer *t, bool fired)
{
	struct server *s = container_of(t, struct server, ping_timer);

	if (!fired || s->stopping)
		return;
	conn_send_ping_all(s);
	uring_timer_arm(&s->ring, &s->ping_timer, s->cfg.ping_interval_ms, on_ping);
}

/* ---- wiring the modules ---- */

/* The transport's calls into the layers above it (conn.h). */
static void conn_on_closed(struct conn *c)
{
	exec_conn_closed(c);
	fs_watch_conn_closed(c);
	http_conn_closed(c);
}

static void conn_on_drained(struct conn *c)
{
	exec_conn_drained(c);
	fs_watch_conn_drained(c);
	http_conn_drained(c);
}

static const struct conn_handlers conn_handlers = {
	.message = rpc_on_message,
	.closed = conn_on_closed,
	.drained = conn_on_drained,
	.freed = fs_handles_release,
	.metrics = server_metrics_render,
};

static int register_methods(void)
{
	int r;

	r = exec_methods_register();
	if (r >= 0)
		r = fs_methods_register();
	if (r >= 0)
		r = env_methods_register();
	if (r >= 0)
		r = discovery_methods_register();
	if (r >= 0)
		r = http_methods_register();
	return r;
}

/* ---- lifecycle ---- */

/* Kept for what the server opens for a moment: spawn pipes, fs requests, helpers. */
#define FD_RESERVE 64
/* The count limits' ceiling (as on the command line). */
#define LIMIT_MAX (1u << 20)

static unsigned open_fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	unsigned n = 0;

	if (!d)
		return 32; /* a generous guess */
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n > 0 ? n - 1 : 0; /* not the directory's own fd */
}

static unsigned clamp_limit(uint64_t v)
{
	return v < 1 ? 1 : v > LIMIT_MAX ? LIMIT_MAX : (unsigned)v;
}

/*
 * Defaults of the limits not given on the command line (0 in cfg), from the
 * fd budget at start-up (see --help): H is RLIMIT_NOFILE (raised to the hard
 * limit), F the fds open now. Every fd left can hold a connection, which is
 * at least what the reference can hold (its soft limit is at most H and it
 * holds fds at start too); processes get what is left after the reserve, at
 * their cheapest (2 fds: stdout and stderr pipes; one more for the pidfd
 * without IORING_OP_WAITID), and at most RAM / 1 MiB (the output each may
 * retain).
 */
static void derive_limits(struct server *s)
{
	struct rlimit rl = { 1024, 1024 };
	uint64_t nofile, budget, procs, mem = 0;
	/* A live upgrade's processes and connections are not overhead: they hold their own. */
	unsigned open = open_fd_count(), adopted = upgrade_restored_fds();
	unsigned used = open > adopted ? open - adopted : 0, proc_fds = s->ring.has_waitid ? 2 : 3;
	long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);

	(void)getrlimit(RLIMIT_NOFILE, &rl);
	nofile = rl.rlim_cur == RLIM_INFINITY ? LIMIT_MAX : (uint64_t)rl.rlim_cur;
	budget = nofile > used ? nofile - used : 1;
	if (pages > 0 && page_size > 0)
		mem = (uint64_t)pages * (uint64_t)page_size;

	if (!s->cfg.max_connections)
		s->cfg.max_connections = clamp_limit(budget);
	if (!s->cfg.max_sessions)
		s->cfg.max_sessions = clamp_limit(2 * (uint64_t)s->cfg.max_connections);
	if (!s->cfg.max_processes) {
		procs = budget > FD_RESERVE ? (budget - FD_RESERVE) / proc_fds : 1;
		if (mem && procs > mem / PROC_RETAINED_BYTES)
			procs = mem / PROC_RETAINED_BYTES;
		s->cfg.max_processes = clamp_limit(procs);
	}
	{
		struct log_field f[] = {
			LOG_INT("maxConnections", s->cfg.max_connections),
			LOG_INT("maxSessions", s->cfg.max_sessions),
			LOG_INT("maxProcesses", s->cfg.max_processes),
			LOG_INT("nofile", nofile), LOG_INT("fdsAtStart", used),
			LOG_INT("fdsPerProcess", proc_fds), LOG_INT("memoryMiB", mem >> 20),
		};

		log_event(LOG_INFO, "server.limits", NULL, f, ELEMENTSOF(f),
			  "Limits: %u connections, %u sessions, %u running processes per session "
			  "(RLIMIT_NOFILE %" PRIu64 ", %u fds open at start, %u fds per process, %" PRIu64
			  " MiB of memory)",
			  s->cfg.max_connections, s->cfg.max_sessions, s->cfg.max_processes, nofile,
			  used, proc_fds, mem >> 20);
	}
}

/*
 * Each process costs fds: raise the soft fd limit to the hard one (children
 * get the original soft limit back, spawn.c), as systemd does.
 */
static void raise_fd_limit(struct server *s)
{
	if (getrlimit(RLIMIT_NOFILE, &s->nofile_orig) == 0 && s->nofile_orig.rlim_cur < s->nofile_orig.rlim_max) {
		struct rlimit rl = { s->nofile_orig.rlim_max, s->nofile_orig.rlim_max };

		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			log_warning("Raising the fd limit failed: %m, continuing");
	}
}

/*
 * SIGPIPE ignored (EPIPE instead of death when a peer or a child's stdin goes
 * away); SIGINT, SIGTERM, SIGHUP and SIGUSR2 (upgrade) through a signalfd.
 */
static int setup_signals(struct server *s)
{
	struct sigaction sa = { .sa_handler = SIG_IGN };
	sigset_t mask;

	sigaction(SIGPIPE, &sa, NULL);
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGUSR2);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	s->signal_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (s->signal_fd < 0)
		return log_error_errno(errno, "signalfd failed");
	return 0;
}

/* The ring and its provided buffers; 0 or -errno (logged, with what to change on the host). */
static int setup_ring(struct server *s)
{
	int r;

	/*
	 * The sandboxed fs helper serves one request over stdio without
	 * CAP_IPC_LOCK, so its ring's pages count against RLIMIT_MEMLOCK (8 MiB
	 * per user by default), shared by every helper running at once: 64
	 * concurrent fs/open helpers with the server's ring failed with ENOMEM.
	 * A small ring and four buffers keep hundreds of helpers within it.
	 */
	r = uring_init(&s->ring, s->cfg.fs_helper ? 16 : 1024);
	if (r == -EPERM || r == -ENOSYS || r == -EACCES)
		/* Docker's default seccomp profile answers EPERM (ENOSYS: a kernel without io_uring). */
		return log_error_errno(r, "io_uring is refused on this host (io_uring_setup failed); "
					  "uexec cannot run without it. In a container: allow "
					  "io_uring_setup, io_uring_enter and io_uring_register in its "
					  "seccomp profile (docker run --security-opt "
					  "seccomp=uexec-seccomp.json, see dist/docker/README.md). On "
					  "the host: sysctl kernel.io_uring_disabled must be 0 (or 1 with "
					  "uexec's group in kernel.io_uring_group); ENOSYS: a kernel built "
					  "without CONFIG_IO_URING");
	if (r < 0)
		return log_error_errno(r, "io_uring setup failed (is io_uring disabled by sysctl "
					  "kernel.io_uring_disabled or a seccomp policy?)");
	r = uring_bufs_init(&s->ring, &s->bufs, BGID_IO, s->cfg.fs_helper ? 4 : IO_BUF_COUNT,
			    IO_BUF_SIZE);
	if (r < 0)
		return log_error_errno(r, "Registering provided buffers failed (kernel >= 5.19 needed)");
	return 0;
}

/* Where clients come from: the relay (--remote), stdio, or the listener; 0 or -errno (logged). */
static int start_front(struct server *s)
{
	int r;

	if (s->cfg.remote_url) {
		struct remote_options o = {
			.url = s->cfg.remote_url,
			.environment_id = s->cfg.environment_id,
			.name = s->cfg.remote_name,
			.forward = s->cfg.forward_connect,
			.credential = s->cfg.remote_credential,
			.credential_source = s->cfg.remote_credential_source,
			.after_upgrade = upgrade_remote_after_upgrade(),
		};

		o.identity = upgrade_remote_identity(&o.identity_len); /* kept across an upgrade */
		r = remote_start(s, &o);
		if (r < 0)
			return r;
	} else if (strcmp(s->cfg.listen, "stdio") == 0 || strcmp(s->cfg.listen, "stdio://") == 0) {
		/* A live upgrade hands the stdio connection over (adopted at the end of RESTORE). */
		r = upgrade_restore_stdio(s);
		if (r == 0)
			r = conn_new_stdio(s);
		if (r < 0)
			return log_error_errno(r, "Setting up stdio failed");
		/* No pings on stdio; the ticks end a close whose output is never read. */
		uring_timer_arm(&s->ring, &s->ping_timer, s->cfg.ping_interval_ms, on_ping);
	} else {
		/* A live upgrade hands the listening socket over (docs/UPGRADE.md). */
		r = upgrade_restore_listener(s);
		if (r == 0)
			r = server_listen_on(s);
		if (r < 0)
			return r;
		server_arm_accept(s);
		uring_timer_arm(&s->ring, &s->ping_timer, s->cfg.ping_interval_ms, on_ping);
	}
	return 0;
}

/* The server object empty, with cfg (nothing opened yet: server_done() copes with any exit). */
static void server_state_init(struct server *s, const struct config *cfg)
{
	struct timespec now;

	memset(s, 0, sizeof(*s));
	s->cfg = *cfg;
	s->listen_fd = s->signal_fd = -1;
	server_audit_init(&s->audit, &s->ring, s->cfg.audit_log_max_queued_bytes);
	(void)clock_gettime(CLOCK_REALTIME, &now);
	s->metrics.start_time_ms = (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000;
	s->sandbox.uid_userns_fd = -1;
	server_lists_init(s);
}

int server_init(struct server *s, const struct config *cfg)
{
	bool restored;
	int r;

	server_state_init(s, cfg);
	s->drain_start = drain_start;
	conn_set_handlers(&conn_handlers);
	/* After a live upgrade's execve: the state handed over (docs/UPGRADE.md). */
	r = upgrade_restore_begin(s);
	if (r < 0)
		return r;
	restored = r > 0;
	r = register_methods();
	if (r < 0)
		return log_error_errno(r, "Registering the JSON-RPC methods failed");

	if (server_audit_stdout_clash(s->cfg.audit_log, s->cfg.listen))
		return log_error_errno(EINVAL, "--audit-log - writes to stdout, which --listen stdio "
					       "uses for the protocol");
	r = server_audit_log_open(s, s->cfg.audit_log);
	if (r < 0)
		return r;
	s->cfg.audit_log = NULL; /* the path lives in s->audit_path */
	raise_fd_limit(s);
	r = setup_signals(s);
	if (r < 0)
		return r;
	r = setup_ring(s);
	if (r < 0)
		return r;
	log_debug("io_uring ready (waitid op: %s)", s->ring.has_waitid ? "yes" : "no");
	r = server_setup_sandbox(s);
	if (r < 0)
		return r;
	/* Before any thread: the supervisor is forked, uexec may move itself to another cgroup. */
	server_setup_cgroups(s);

	r = worker_pool_init(s, 2);
	if (r < 0)
		return log_error_errno(r, "Starting the filesystem worker threads failed");

	/* Every child is spawned on its thread (src/exec/spawner.h): the loop never waits in vfork. */
	if (!s->cfg.fs_helper) {
		r = spawn_thread_init(s);
		if (r < 0)
			return log_error_errno(r, "Starting the spawner thread failed");
		r = spawn_open_devnull();
		if (r < 0)
			return log_error_errno(r, "Opening /dev/null failed");
	}

	/* The sandboxed fs helper is this binary, re-executed through an fd opened now. */
	if (!s->cfg.fs_helper) {
		fs_sandbox_init(s);
		/*
		 * Found now, loaded on first use (environmentConfig/read; TLS, remote
		 * mode, the proxy's interception): never planted later.
		 */
		(void)toml_module_open();
		(void)tls_module_open();
		exec_evidence_init(s, (enum exec_evidence_mode)s->cfg.denial_evidence,
				   s->cfg.enable_audit);
	}

	r = env_init(s, env_login_shell_lookup());
	if (r < 0)
		return log_error_errno(r, "Building environment info failed");
	exec_set_environment(env_login_shell(), env_info());

	r = start_front(s);
	if (r < 0)
		return r;
	/* Before upgrade.done is logged: a SIGUSR2 sent after it is a new upgrade. */
	if (restored)
		upgrade_refuse_pending();
	upgrade_restore_end(s); /* before the fds are counted */
	derive_limits(s);
	arm_signal(s);
	return 0;
}

int server_run(struct server *s)
{
	while (!s->stopping) {
		int r = uring_run_once(&s->ring);

		if (r < 0)
			return log_error_errno(r, "io_uring wait failed");
		server_rearm_buf_waiters(s);
		conn_mem_run(s);
		conn_reap(s);
		session_reap(s);
		drain_check(s);
		/* A connection ended: its fd may take a waiting peer. */
		if (s->accept_paused && s->n_conns < s->accept_paused_conns)
			server_accept_resume(s);
		/* Last: the lines of this whole iteration go in one write. */
		server_audit_run(&s->audit);
	}
	return s->exit_code;
}

static void say_goodbye(struct server *s)
{
	struct conn *c;

	/* Best effort, synchronous: the loop is over. Tell clients we are going away. */
	list_for_each_entry(c, &s->conns, link) {
		static const uint8_t close_frame[] = { 0x88, 0x02, 0x03, 0xe9 }; /* 1001 */
		uint8_t rec[256];
		size_t n = sizeof(close_frame);
		const uint8_t *p = close_frame;

		if (c->transport != CONN_WS || c->state != CONN_OPEN || c->out_bytes != 0)
			continue;
		/* TLS: the frame goes in a record (a few dozen bytes). */
		if (c->tls) {
			if (tls_mem_write(c->tls, close_frame, n) < 0 ||
			    tls_mem_pending(c->tls) > sizeof(rec))
				continue;
			n = tls_mem_take(c->tls, rec, sizeof(rec));
			p = rec;
		}
		(void)!send(c->fd_out, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	}
}

void server_done(struct server *s)
{
	s->stopping = true;
	upgrade_done(s);
	remote_stop(s);
	worker_pool_done(s);
	spawn_thread_done(); /* spawns in flight answered nowhere: their children killed and reaped */
	session_destroy_all(s);
	say_goodbye(s);
	conn_free_all(s);
	/*
	 * No audit line comes after the sessions: write what is queued, for a
	 * bounded time, while the provided buffers are still mapped (reads in
	 * flight may complete into them meanwhile, undispatched).
	 */
	log_audit_set_sink(NULL, NULL);
	if (s->ring.ring.ring_fd > 0)
		server_audit_flush(&s->audit, SERVER_AUDIT_EXIT_FLUSH_MS);
	uring_bufs_done(&s->ring, &s->bufs);
	exec_evidence_stop();
	if (s->ring.ring.ring_fd > 0)
		uring_done(&s->ring);
	server_audit_done(&s->audit); /* after the ring: a write it still held keeps its lines */
	exec_evidence_done(); /* after the ring: its receive buffer */
	http_req_free_all(); /* after the ring: a timer's cancel may still be in flight */
	netconn_free_all(s); /* after the ring: a recv may still target a netconn's buffer */
	netproxy_mitm_free(s->mitm); /* credential masking's CA: its files go with the server */
	s->mitm = NULL;
	remote_free(s);
	safe_close(s->listen_fd);
	safe_close(s->signal_fd);
	free(s->audit_path);
	exec_set_environment(NULL, NULL);
	env_done();
	sandbox_features_done(&s->sandbox);
	exec_cg_pending_free(); /* after the ring: their polls are gone with it */
	sandbox_cg_done(&s->cgroups);
	netguard_free(s->guard); /* after the processes: it kills what is left in the cgroup */
	s->guard = NULL;
	conn_auth_install(NULL);
	conn_set_handlers(NULL);
	conn_tls_install(NULL);
}
