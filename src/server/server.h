/* SPDX-License-Identifier: MIT */
/*
 * The server object: configuration (CLI arg_* values), the ring, the listener,
 * the signalfd, and the lists of connections and sessions. State that only
 * one layer above uses goes into that layer's module (docs/ARCHITECTURE.md
 * "Global state"), not here; every function declared here is implemented in
 * src/server (the executable's are in src/main/uexec.h).
 */
#pragma once

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "audit.h"
#include "list.h"
#include "ring.h"
#include "metrics.h"
#include "cgroup.h"
#include "sandbox.h"
#include "secrets.h"

struct server_conf_args;
struct np_mitm;
struct config {
	const char *listen;          /* "ws://IP:PORT" or "stdio" */
	uint64_t resume_window_ms;   /* detached-session lifetime */
	unsigned max_sessions;
	unsigned max_connections;
	unsigned max_processes;      /* per session */
	uint64_t max_frame_bytes;
	uint64_t max_message_bytes;
	unsigned max_json_depth;
	uint64_t max_queued_bytes;   /* per-connection output queue before backpressure */
	uint64_t max_inflight_bytes_per_conn; /* reply bytes in flight per connection (conn-mem.h) */
	uint64_t max_inflight_bytes; /* the same for the whole server */
	uint64_t ping_interval_ms;
	uint64_t handshake_timeout_ms; /* accept to WebSocket upgrade; 0: no deadline */
	const char *executor_version;
	bool no_sandbox;             /* refuse every restricting sandbox */
	bool enable_audit;           /* --enable-audit: turn auditing on for denial evidence */
	unsigned denial_evidence;    /* --denial-evidence: 0 auto, 1 none, 2 audit only, 3 bpf only
				      * (enum exec_evidence_mode) */
	bool fs_helper;              /* running as the sandboxed fs helper (--fs-helper) */
	unsigned sandbox_max_ptys;   /* PTYs per sandbox (its devpts's max=) */
	unsigned sandbox_uid;        /* --sandbox-uid: host uid of sandboxed processes (0: not given) */
	unsigned sandbox_gid;        /* with it: their host gid */
	unsigned landlock_abi_max;   /* testing only: caps the probed Landlock ABI (> 7: no cap) */
	bool process_cgroups_off;    /* --process-cgroups=off: no per-process cgroup */
	/* --process-{pids,memory,cpu}-max: every process's limits and the ceiling of `limits` */
	struct sandbox_cg_limits process_limits;
	/* Remote mode (src/remote/remote.h): set when --remote is given. */
	const char *remote_url;
	const char *environment_id;
	const char *remote_name;
	const char *forward_connect; /* forward --connect */
	const char *remote_credential; /* never logged */
	const char *remote_credential_source;
	/* Operations (README "Running in production") */
	const char *config_file;     /* --config, or NULL */
	int log_level;               /* LOG_* (syslog.h) */
	int log_format;              /* enum log_format (log.h) */
	const char *audit_log;       /* --audit-log PATH or "-" (stdout), or NULL */
	uint64_t audit_log_max_queued_bytes; /* audit lines queued unwritten before they are dropped */
	uint64_t drain_timeout_ms;   /* SIGTERM: let processes finish this long; 0: stop at once */
	uint64_t http_max_response_bytes; /* http/request: buffered bodies per connection */
	/*
	 * Reads the configuration again, as at start (the file, then the command
	 * line), into *out; *arena then owns out's strings (server_conf_args_done).
	 * Returns 0, or -EINVAL after logging why (SIGHUP, server.c). NULL: no reload.
	 */
	int (*reload)(struct config *out, struct server_conf_args *arena);
	/* WebSocket listener auth (--ws-*, RELAY.md §9; src/transport/conn-auth.c). */
	unsigned ws_auth_mode;         /* enum ws_auth_mode (proto/ws-auth.h); 0: none */
	const char *ws_token_file;
	const char *ws_token_sha256;
	const char *ws_shared_secret_file;
	const char *ws_issuer;         /* NULL or blank: any */
	const char *ws_audience;       /* NULL or blank: any */
	uint64_t ws_max_clock_skew_s;
	bool allow_unauthenticated;    /* a non-loopback --listen without --ws-auth */
	/* TLS on the listener (--listen wss://; src/transport/conn-tls.c). */
	const char *tls_cert;          /* PEM certificate chain file */
	const char *tls_key;           /* PEM private key file */
};

/*
 * uexec's defaults (the command line changes them; the session fuzzer starts
 * from them). main() passes 0 for max_sessions, max_connections and
 * max_processes unless given: server_init() (src/main) derives them from the fd budget.
 */
#define CONFIG_DEFAULTS                                                                        \
	{                                                                                      \
		.listen = "ws://127.0.0.1:0", .resume_window_ms = 80000, .max_sessions = 256,  \
		.max_connections = 1024, .max_processes = 1024, .max_frame_bytes = 16u << 20,  \
		.max_message_bytes = 64u << 20, .max_json_depth = 128,                         \
		.max_queued_bytes = 8u << 20, .ping_interval_ms = 30000,                       \
		.max_inflight_bytes_per_conn = 64u << 20, .max_inflight_bytes = 2ull << 30,    \
		.handshake_timeout_ms = 10000,                                                 \
		.executor_version = "0.171.0", .sandbox_max_ptys = 64,                         \
		.landlock_abi_max = UINT32_MAX, .log_level = 6 /* LOG_INFO */,                \
		.ws_max_clock_skew_s = 30, .http_max_response_bytes = 64u << 20,                \
		.audit_log_max_queued_bytes = SERVER_AUDIT_MAX_QUEUED_DEFAULT,                  \
	}

/* Provided-buffer group ids. */
enum {
	BGID_IO = 1,
};

#define IO_BUF_SIZE (64 * 1024)
#define IO_BUF_COUNT 64

struct server {
	struct config cfg;
	struct uring ring;
	struct uring_bufs bufs;

	int listen_fd;
	struct uring_op accept_op;
	struct uring_timer accept_timer; /* re-arms accept after EMFILE/ENFILE */
	unsigned accept_paused_conns;    /* n_conns when accept paused for lack of fds */
	bool accept_paused;
	int signal_fd;
	struct uring_op signal_op;
	uint8_t siginfo[128];
	struct uring_timer ping_timer;

	struct list_head conns;
	struct list_head dead_conns;
	struct list_head handshaking;   /* struct conn before the upgrade, oldest first */
	struct list_head uninitialized; /* struct conn upgraded, not initialized, oldest first */
	struct uring_timer handshake_timer;
	struct list_head sessions;
	unsigned n_conns;               /* connections not dead (dead ones hold no fd) */
	unsigned n_sessions;

	struct list_head netconns;            /* outbound connections (src/net/netconn.h) */
	struct ssl_ctx_st *tls_client_ctx;    /* their client SSL_CTX, made on first use */
	struct np_mitm *mitm;                 /* credential masking's CA (src/netproxy/mitm.h), or NULL */

	/* Ops waiting for a provided buffer (ENOBUFS), re-armed on recycle. */
	struct list_head buf_waiters;

	/* In-flight memory (transport/conn-mem.h) */
	size_t mem_total;            /* queued output + charges, every connection */
	struct list_head mem_waiters; /* struct conn_mem waiting for admission, oldest first */
	struct list_head mem_paused; /* struct conn paused over its budget */
	bool mem_dirty;              /* something was released: conn_mem_run() has work */
	unsigned mem_pass;

	struct rlimit nofile_orig; /* RLIMIT_NOFILE at start, restored in children */
	struct worker_pool *workers;
	struct sandbox_features sandbox; /* probed once at start */
	struct secret_cache secrets;     /* its secret files' identities (secrets.h) */
	struct netguard *guard;          /* keeps sandboxes off our own port, or NULL */
	const char *denial_evidence;     /* the evidence source in use ("audit", "none"; exec) */
	struct sandbox_cg cgroups;       /* per-process cgroups and limits (sandbox/cgroup.h) */
	struct server_metrics metrics; /* counters for GET /metrics (metrics.h) */
	bool stopping;
	int exit_code;

	/* Graceful drain (SIGTERM with --drain-timeout-ms): no new connections, sessions or processes. */
	bool draining;
	/*
	 * Starts that drain (src/main/server.c sets it): the live upgrade's
	 * fallback (src/upgrade/fallback.c) drains too, and a library cannot call
	 * into src/main. why leads the log line ("Received SIGTERM").
	 */
	void (*drain_start)(struct server *s, const char *why);
	/*
	 * Live upgrade (src/upgrade, docs/UPGRADE.md): reads of connections and
	 * processes are not re-armed, and a read cancelled meanwhile is a pause,
	 * not the end of its connection or stream.
	 */
	bool quiescing;
	struct uring_timer drain_timer;   /* the drain timeout, then the grace after killing */
	bool drain_killed;                /* the timeout passed: what was left got SIGKILL */
	struct server_audit audit;        /* --audit-log's queue and fd (audit.h) */
	char *audit_path;                 /* what audit.fd was opened from (owned) */
};

/* Empties every list of s (connections, sessions, waiters): set-up, and the fuzzers' resets. */
void server_lists_init(struct server *s);

/* Ends the loop after this iteration; the server exits with exit_code. */
void server_stop(struct server *s, int exit_code);

/* Gives a provided buffer back and wakes one op waiting for buffers. */
void server_recycle_buf(struct server *s, unsigned bid);

/* A reader that got -ENOBUFS; rearm() is called once buffers are available again. */
struct buf_waiter {
	struct list_head link;
	void (*rearm)(struct buf_waiter *w);
};
void server_wait_for_buf(struct server *s, struct buf_waiter *w);
/* Re-arms every waiting reader (the loop calls it between iterations). */
void server_rearm_buf_waiters(struct server *s);
