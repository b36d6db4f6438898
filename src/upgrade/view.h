/* SPDX-License-Identifier: MIT */
/*
 * The state blob read into plain structs for RESTORE (docs/UPGRADE.md), with
 * the rules that span fields and records checked first: what the schema
 * cannot say (a process's chunks below its next seq, an exit only once
 * reaped, a closed process without streams, a PTY's streams, one connection
 * per session, unique session and process ids and pids). RESTORE adopts
 * nothing until upgrade_view_build() has accepted the whole blob, so a bad
 * blob costs no half-restored server. No I/O.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "state.h"

struct upgrade_view_held {
	enum upgrade_held_role role;
	int fd;
	int index;                  /* a v1 hierarchy (CG_V1_BASE), else -1 */
};

struct upgrade_view_session {
	char id[37];
	uint64_t expiry_ns;         /* CLOCK_MONOTONIC; 0: attached */
	int conn;                   /* index into conns, or -1 (detached) */
	uint32_t n_procs;
};

struct upgrade_view_proc {
	uint32_t session;           /* index into sessions */
	const uint8_t *id;          /* processId (may hold NUL) */
	uint32_t id_len;
	int pid;
	int pidfd, out_fd, err_fd, stdin_fd; /* -1: none */
	bool tty, pipe_stdin, reaped, exited, closed, stdin_closed, sandboxed, timed_out;
	bool has_cg, cg_guard;
	bool has_timeout, asked_limits, mem_limited, oom_killed;
	int pty_last;               /* a PTY's last byte queued for stdin, -1: none */
	const struct upgrade_field *writes; /* queued stdin writes (state.h's framing), or NULL */
	uint32_t n_writes;
	uint64_t cg_num;
	uint64_t next_seq, exit_seq, started_ms, timeout_ns;
	int exit_code, term_signal;
	const struct upgrade_field *retained; /* CHUNKS, or NULL */
	const struct upgrade_field *write_ids; /* (u32 len, bytes)*, oldest first, or NULL */
	uint32_t n_write_ids;
	uint64_t retained_bytes;
	uint32_t n_chunks;
	/* A sandboxed process (view-sandbox.c): */
	const struct upgrade_field *synth; /* its synthesized mount points, (u32 len, path)*, or NULL */
	uint32_t n_synth;
	unsigned filter;            /* sandbox-handover.h's enum sandbox_filter_id, 0: none */
	uint64_t ev_denied;         /* decisive denials its evidence held before the upgrade */
	bool ev_lost;               /* its evidence was incomplete before (view-evidence.c) */
	uint64_t ev_ambiguous;      /* the tracer's EPERM/EACCES nothing explained */
	const struct upgrade_field *ev_kept; /* the denials it kept (state.h's framing), or NULL */
	uint32_t n_ev_kept;
	/* A managed network's proxy (view-netproxy.c): */
	const uint8_t *np_config;   /* networkProxy as JSON text (an object), or NULL: no proxy */
	uint32_t np_config_len;
	int np_http_fd, np_socks_fd, np_udp_fd; /* -1: none */
};

/* A synthesized sandbox mount point of the registry (sandbox/synth.c). */
struct upgrade_view_synth {
	const uint8_t *path;        /* absolute, not NUL-terminated */
	uint32_t path_len;
	uint32_t refs;              /* exactly the processes that name it */
	int fd;
};

struct upgrade_view_conn {
	enum upgrade_conn_transport transport;
	int fd_in, fd_out;          /* fd_out -1: the same as fd_in */
	int session;                /* index into sessions, or -1 */
	const uint8_t *input, *output;
	size_t input_len, output_len;
	bool initialized, upgraded;
	bool has_missing_id;        /* fs/watchMissing's largest watchId seen: missing_id */
	uint64_t missing_id, change_id; /* change_id: the last fs/watch watchId handed out */
	uint32_t n_missing, n_changes, n_handles; /* its watches and fs/open handles */
};

/* A watch (state.h: UPGRADE_WATCH_*); paths are views, not NUL-terminated. */
struct upgrade_view_watch {
	uint32_t conn;              /* index into conns */
	uint64_t id;
	const uint8_t *path;
	uint32_t path_len;
	bool recursive, missing;
	/* fs/watchMissing: the other missing paths ((u32 len, path)*, n_others) and present */
	const struct upgrade_field *others;
	uint32_t n_others;
	const uint8_t *present, *only; /* only: fs/watch of a file, its name */
	uint32_t present_len, only_len;
	/* fs/watch */
	uint32_t max_dirs, max_events; /* 0: absent (the defaults) */
	bool has_ident;             /* the root's dev and ino */
	uint64_t dev, ino;
	enum upgrade_watch_end ended; /* 0: not ended */
	const uint8_t *queued;      /* fs/watch's events not sent yet ("{...},"*), or NULL */
	uint32_t queued_len;
};

/* An fs/open handle. */
struct upgrade_view_fs_handle {
	uint32_t conn;              /* index into conns */
	const uint8_t *id;
	uint32_t id_len;
	int fd;
	bool writable;
};

struct upgrade_view_metric {
	const uint8_t *name;
	uint32_t name_len;
	uint64_t value;
};

/* struct sandbox_cg's state (sandbox/cgroup.h), paths as views (not NUL-terminated). */
struct upgrade_view_cgroups {
	bool present, enabled, has_kill;
	const uint8_t *base;
	uint32_t base_len;
	enum upgrade_cg_where where[UPGRADE_CG_KINDS];
	const uint8_t *v1_base[UPGRADE_CG_KINDS];
	uint32_t v1_base_len[UPGRADE_CG_KINDS];
	const uint8_t *server_cg;
	uint32_t server_cg_len;
	uint64_t seq;
	int supervisor_pid;         /* 0: none */
};

/* The denial evidence sources handed over (view-evidence.c); fds are -1 when absent. */
struct upgrade_view_evidence {
	bool present;
	bool has_bpf;               /* the tracer's objects (then every value below bpf_*) */
	int bpf_hook;               /* enum upgrade_evidence_hook */
	int bpf_tp_id;              /* the tracepoint hook's perf id, else 0 */
	uint64_t bpf_bss_size, bpf_dropped_off, bpf_dropped;
	bool bpf_attached;
	int exit_prog, landlock_prog, ring, watched, bss;
	int links[2], perf;         /* attachments (while attached) */
	int audit_socket, audit_hold;
	uint32_t audit_lost, audit_seq;
	bool audit_enabled_by_us;
};

struct upgrade_view {
	const uint8_t *sender_version;
	uint32_t sender_version_len;
	uint64_t start_ms, upgrades, next_cg;
	uint64_t quiesce_ns;        /* the sender's CLOCK_MONOTONIC at QUIESCE; 0: not given */
	const uint8_t *relay_identity; /* remote mode's Noise identity (UPGRADE_RELAY_IDENTITY_BYTES), or NULL */
	bool has_listener, listener_tls;
	int listener_fd;
	const uint8_t *listener_url;
	uint32_t listener_url_len;
	struct upgrade_view_held *held;
	uint32_t n_held;
	struct upgrade_view_session *sessions;
	uint32_t n_sessions;
	struct upgrade_view_proc *procs;   /* in blob order */
	uint32_t n_procs;
	struct upgrade_view_conn *conns;
	uint32_t n_conns;
	struct upgrade_view_watch *watches;
	uint32_t n_watches;
	struct upgrade_view_fs_handle *fs_handles;
	uint32_t n_fs_handles;
	struct upgrade_view_metric *metrics;
	uint32_t n_metrics;
	struct upgrade_view_cgroups cgroups;
	struct upgrade_view_synth *synth;
	uint32_t n_synth;
	struct upgrade_view_evidence evidence;
};

/*
 * Reads a parsed blob (views into its buffer: valid while it is). Returns 0,
 * -EBADMSG with err saying which rule and record, or -ENOMEM. *ret is
 * untouched on failure.
 */
int upgrade_view_build(const struct upgrade_state *st, struct upgrade_view *ret, char *err,
		       size_t err_size);
void upgrade_view_done(struct upgrade_view *v);
/* Writes the refusal's text into err (as snprintf) and returns -EBADMSG: the view's rules' answer. */
int upgrade_view_fail(char *err, size_t err_size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The held fd of role (and index for CG_V1_BASE), or -1. */
int upgrade_view_held_fd(const struct upgrade_view *v, enum upgrade_held_role role, int index);

/*
 * view-sandbox.c, called by view.c: a synth record; a process's sandbox
 * fields; once every record is read, each process's mount points against
 * the records (each named once per process, by exactly refs processes).
 * 0, -EBADMSG with err, or -ENOMEM.
 */
int upgrade_view_read_synth(const struct upgrade_state *st, uint32_t rec, struct upgrade_view *v,
			    char *err, size_t err_size);
int upgrade_view_proc_sandbox(const struct upgrade_state *st, uint32_t rec,
			      struct upgrade_view_proc *p, char *err, size_t err_size);
/*
 * view-netproxy.c, called by view.c: a process's managed-network proxy
 * (configuration and listeners). 0 or -EBADMSG with err.
 */
int upgrade_view_proc_netproxy(const struct upgrade_state *st, uint32_t rec,
			       struct upgrade_view_proc *p, char *err, size_t err_size);
int upgrade_view_check_synth(const struct upgrade_state *st, const struct upgrade_view *v,
			     char *err, size_t err_size);

/*
 * view-evidence.c, called by view.c: the evidence record; once every record
 * is read, the evidence fds (heldFd roles 16..23) against it: the tracer's
 * objects all or none, its values exactly with them, attachments exactly
 * those of its hook while attached, the audit socket's values with it.
 * 0, -EBADMSG with err.
 */
int upgrade_view_read_evidence(const struct upgrade_state *st, uint32_t rec,
			       struct upgrade_view *v, char *err, size_t err_size);
int upgrade_view_check_evidence(struct upgrade_view *v, char *err, size_t err_size);
/* A process's evidence fields (evidenceLost, evidenceAmbiguous). */
int upgrade_view_proc_evidence(const struct upgrade_state *st, uint32_t rec,
			       struct upgrade_view_proc *p, char *err, size_t err_size);
