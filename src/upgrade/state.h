/* SPDX-License-Identifier: MIT */
/*
 * The live upgrade's state blob (docs/UPGRADE.md): what the old binary hands
 * the new one across execve, in a memfd. A versioned, self-describing byte
 * format (header, then records of tagged, typed fields) with a writer and a
 * strict parser. No I/O: the parser reads bytes, checks every length, count,
 * enum, range, reference and fd number against the schema of the version the
 * blob declares, and hands out views into the caller's buffer.
 *
 * Layout (little-endian):
 *   header  magic "uexecUPG" (8), u32 version, u32 header_len (32),
 *           u64 body_len (bytes after the header, exactly), u32 n_records,
 *           u32 reserved (0)
 *   record  u16 kind, u16 n_fields, u32 len (bytes of its fields, exactly)
 *   field   u16 tag, u8 type, u8 reserved (0), u32 len, then len bytes
 * Fields of a record come in strictly ascending tag order (so the encoding
 * of a given state is unique: parse -> write gives the same bytes), every tag
 * is one the record's kind knows in this version with that type, and no
 * required field is missing. A reference names an earlier record by index;
 * every fd number appears once in the whole blob (one owner per fd).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define UPGRADE_STATE_MAGIC "uexecUPG"
/* The versions this binary writes (the newest) and reads (MIN..VERSION). */
#define UPGRADE_STATE_VERSION 1
#define UPGRADE_STATE_VERSION_MIN 1
#define UPGRADE_STATE_HEADER_LEN 32
#define UPGRADE_RECORD_HEADER_LEN 8
#define UPGRADE_FIELD_HEADER_LEN 8
/* One retained-output entry in a CHUNKS field: u64 seq, u8 stream, u32 len, then the bytes. */
#define UPGRADE_CHUNK_HEADER_LEN 13

enum upgrade_type {
	UPGRADE_T_U64 = 1,  /* 8 bytes, within the field's [min, max] */
	UPGRADE_T_BOOL,     /* 1 byte, 0 or 1 */
	UPGRADE_T_BYTES,    /* any bytes, length within [min, max] */
	UPGRADE_T_STR,      /* bytes without NUL, length within [min, max] */
	UPGRADE_T_FD,       /* u32 fd number (< the limits' fd bound), unique in the blob */
	UPGRADE_T_REF,      /* u32 index of an earlier record of the field's kind */
	UPGRADE_T_CHUNKS,   /* retained output: entries with strictly ascending seqs */
	_UPGRADE_T_MAX,
};

/* Record kinds. Their fields are below; docs/UPGRADE.md says what each one carries. */
enum upgrade_kind {
	UPGRADE_REC_SERVER = 1, /* exactly one, first */
	UPGRADE_REC_METRIC,     /* a counter by its Prometheus name */
	UPGRADE_REC_HELD_FD,    /* a server-wide fd: the supervisor's pipe, cgroup bases, ... */
	UPGRADE_REC_LISTENER,
	UPGRADE_REC_SESSION,
	UPGRADE_REC_PROC,
	UPGRADE_REC_CONN,
	UPGRADE_REC_WATCH,
	UPGRADE_REC_CGROUPS,    /* the per-process cgroups' layout (struct sandbox_cg), at most one */
	UPGRADE_REC_SYNTH = 10, /* a synthesized sandbox mount point (sandbox/synth.c's registry) */
	UPGRADE_REC_FS_HANDLE = 11, /* an fs/open handle of a connection */
	UPGRADE_REC_EVIDENCE = 13, /* the denial evidence sources' values (fds: heldFd), at most one */
	_UPGRADE_REC_MAX,
};

/* What fstat must say of an fd field (checked after execve, upgrade_state_check_fds). */
enum upgrade_fd_kind {
	UPGRADE_FD_ANY,
	UPGRADE_FD_SOCKET,
	UPGRADE_FD_FIFO,   /* a pipe end */
	UPGRADE_FD_CHR,    /* a character device (a PTY master) */
	UPGRADE_FD_DIR,    /* a directory (a cgroup) */
	UPGRADE_FD_FILE,   /* a regular file (cgroup.events, a lock) */
	UPGRADE_FD_ANON,   /* an anonymous inode (a pidfd) */
	UPGRADE_FD_STREAM, /* a socket, a pipe end or a character device (stdio) */
};

/* Field tags per kind. */
enum {
	UPGRADE_SERVER_VERSION = 1,   /* STR: the sender's UEXEC_VERSION */
	UPGRADE_SERVER_START_MS,      /* U64: CLOCK_REALTIME ms at the first start */
	UPGRADE_SERVER_UPGRADES,      /* U64: upgrades before this one */
	UPGRADE_SERVER_NEXT_CG,       /* U64: the next per-process cgroup's number */
	UPGRADE_SERVER_QUIESCE_NS,    /* U64: CLOCK_MONOTONIC ns when QUIESCE began (the pause's start) */
	/* BYTES: remote mode's Noise identity (struct noise_keypair, private keys included) */
	UPGRADE_SERVER_RELAY_IDENTITY = 6,
};
/* Its length: X25519 public and secret keys, ML-KEM-768 encapsulation and decapsulation keys. */
#define UPGRADE_RELAY_IDENTITY_BYTES (32 + 32 + 1184 + 2400)
enum {
	UPGRADE_METRIC_NAME = 1,      /* STR */
	UPGRADE_METRIC_VALUE,         /* U64 */
};
enum upgrade_held_role {
	UPGRADE_HELD_SUPERVISOR = 1,  /* the supervisor's pipe, write end */
	UPGRADE_HELD_CG_BASE,         /* uexec-<pid>.procs (v2), with its flock */
	UPGRADE_HELD_CG_V1_BASE,      /* a v1 hierarchy's uexec-<pid>.procs */
	UPGRADE_HELD_GUARD,           /* the listener guard's cgroup */
	UPGRADE_HELD_INOTIFY,
	UPGRADE_HELD_AUDIT_LOG,
	UPGRADE_HELD_GUARD_PORT,      /* a socket holding the listener's port at a wildcard address (index) */
	/* The denial evidence sources (docs/UPGRADE.md "Denial evidence"; values: evidence record): */
	UPGRADE_HELD_BPF_EXIT_PROG = 16, /* the tracer's sys_exit program */
	UPGRADE_HELD_BPF_LANDLOCK_PROG = 17, /* its Landlock hook's program */
	UPGRADE_HELD_BPF_RING = 18,   /* its ring buffer map */
	UPGRADE_HELD_BPF_WATCHED = 19, /* its watched-cgroup map */
	UPGRADE_HELD_BPF_BSS = 20,    /* its .bss map */
	UPGRADE_HELD_BPF_ATTACH = 21, /* an attachment (index): 0 the exit hook's link, 1 Landlock's,
				       * 2 the perf event of the tracepoint hook */
	UPGRADE_HELD_AUDIT_SOCKET = 22, /* the NETLINK_AUDIT socket */
	UPGRADE_HELD_AUDIT_HOLD = 23, /* the shared hold on /run/uexec-audit.users */
	_UPGRADE_HELD_MAX,
};
enum {
	UPGRADE_HELD_ROLE = 1,        /* U64: enum upgrade_held_role */
	UPGRADE_HELD_FD,              /* FD */
	UPGRADE_HELD_INDEX,           /* U64: which one of a role (a v1 hierarchy, a guard port socket) */
};
enum {
	UPGRADE_LISTENER_FD = 1,      /* FD (socket) */
	UPGRADE_LISTENER_URL,         /* STR: the bound URL printed at start */
	UPGRADE_LISTENER_TLS,         /* BOOL */
};
enum {
	UPGRADE_SESSION_ID = 1,       /* STR: 36 characters */
	UPGRADE_SESSION_EXPIRY_NS,    /* U64: CLOCK_MONOTONIC end of the resume window; 0 attached */
	UPGRADE_SESSION_NEXT_SNAPSHOT,/* U64: shell snapshots are not handed over; kept for order */
};
enum upgrade_proc_stream {
	UPGRADE_STREAM_STDOUT,
	UPGRADE_STREAM_STDERR,
	UPGRADE_STREAM_PTY,
	_UPGRADE_STREAM_MAX,
};
enum {
	UPGRADE_PROC_SESSION = 1,     /* REF session */
	UPGRADE_PROC_ID,              /* BYTES: processId (may hold NUL) */
	UPGRADE_PROC_PID,             /* U64 */
	UPGRADE_PROC_PIDFD,           /* FD, optional (absent with IORING_OP_WAITID) */
	UPGRADE_PROC_TTY,             /* BOOL */
	UPGRADE_PROC_PIPE_STDIN,      /* BOOL */
	UPGRADE_PROC_OUT_FD,          /* FD: stdout pipe or the PTY master, optional (at EOF) */
	UPGRADE_PROC_ERR_FD,          /* FD: stderr pipe, optional */
	UPGRADE_PROC_STDIN_FD,        /* FD, optional (closed, or the PTY master's dup) */
	UPGRADE_PROC_NEXT_SEQ,        /* U64 >= 1 */
	UPGRADE_PROC_RETAINED,        /* CHUNKS */
	UPGRADE_PROC_REAPED,          /* BOOL */
	UPGRADE_PROC_EXITED,          /* BOOL: process/exited published */
	UPGRADE_PROC_EXIT_CODE,       /* U64 */
	UPGRADE_PROC_TERM_SIGNAL,     /* U64 */
	UPGRADE_PROC_EXIT_SEQ,        /* U64 */
	UPGRADE_PROC_CLOSED,          /* BOOL */
	UPGRADE_PROC_STARTED_MS,      /* U64: CLOCK_REALTIME */
	UPGRADE_PROC_CG_GUARD,        /* BOOL: its leaf is below the listener guard's cgroup */
	UPGRADE_PROC_CG_NUM,          /* U64: its leaf p<N> (below the base or the guard) */
	UPGRADE_PROC_TIMEOUT_NS,      /* U64: CLOCK_MONOTONIC timeoutMs deadline, optional */
	UPGRADE_PROC_STDIN_CLOSED,    /* BOOL */
	UPGRADE_PROC_SANDBOXED,       /* BOOL */
	UPGRADE_PROC_TIMED_OUT,       /* BOOL: timeoutMs passed, SIGTERM sent (timeoutNs: the SIGKILL's) */
	UPGRADE_PROC_WRITE_IDS,       /* BYTES: remembered writeIds, oldest first: (u32 len, bytes)* */
	UPGRADE_PROC_HAS_TIMEOUT,     /* BOOL: the start asked for timeoutMs (process/exited's timedOut) */
	UPGRADE_PROC_ASKED_LIMITS,    /* BOOL: the start carried `limits` (process/exited's oomKilled) */
	UPGRADE_PROC_MEM_LIMITED,     /* BOOL: its leaf has a memory limit */
	UPGRADE_PROC_OOM_KILLED,      /* BOOL */
	UPGRADE_PROC_PTY_LAST,        /* U64: a PTY's last byte queued for stdin + 1 (0: none), optional */
	UPGRADE_PROC_WRITES,          /* BYTES: queued stdin writes, oldest first, each
				       * u8 fast | u32 idLen | id (JSON text; 0: no reply owed) |
				       * u32 len (>= 1) | the bytes not yet written */
	/* A sandboxed process (docs/UPGRADE.md "Sandboxed processes"): */
	UPGRADE_PROC_SYNTH = 32,      /* BYTES: the synthesized mount points it puts back at close,
				       * (u32 len, absolute path)*, each a synth record's */
	UPGRADE_PROC_FILTER = 33,     /* U64: its seccomp program (sandbox-handover.h's enum
				       * sandbox_filter_id, 1..5), optional */
	UPGRADE_PROC_EV_DENIED = 34,  /* U64: denials its evidence held decisive before, optional */
	UPGRADE_PROC_EV_LOST = 35,    /* BOOL: its evidence was incomplete before (upg-evidence) */
	UPGRADE_PROC_EV_AMBIGUOUS = 36, /* U64: the tracer's EPERM/EACCES nothing explained, optional */
	UPGRADE_PROC_EV_KEPT = 37,    /* BYTES: the denials its evidence kept (listed at exit), each
				       * u8 kind | u8 decisive | u32 pid | u32 syscall (i32) | u32 errno |
				       * u8 len, object | u8 len, access | u8 len, comm; at most 16 */
	/* A managed network's proxy (docs/UPGRADE.md "Managed-network processes"), optional: */
	UPGRADE_PROC_NP_CONFIG = 40,  /* STR: process/start's networkProxy value, JSON text (an object) */
	UPGRADE_PROC_NP_HTTP_FD = 41, /* FD (socket): the proxy's HTTP listener */
	UPGRADE_PROC_NP_SOCKS_FD = 42,/* FD (socket): its SOCKS5 listener, optional */
	UPGRADE_PROC_NP_UDP_FD = 43,  /* FD (socket): its SOCKS5 UDP relay's socket, optional */
};
enum upgrade_conn_transport {
	UPGRADE_CONN_WS,
	UPGRADE_CONN_STDIO,
	_UPGRADE_CONN_MAX,
};
enum {
	UPGRADE_CONN_TRANSPORT = 1,   /* U64: enum upgrade_conn_transport */
	UPGRADE_CONN_FD_IN,           /* FD */
	UPGRADE_CONN_FD_OUT,          /* FD, optional (WebSocket: the same socket) */
	UPGRADE_CONN_SESSION,         /* REF session, optional */
	UPGRADE_CONN_INPUT,           /* BYTES: read, not yet parsed (a partial frame) */
	UPGRADE_CONN_OUTPUT,          /* BYTES: queued frames not yet written, in order */
	UPGRADE_CONN_INITIALIZED,     /* BOOL */
	UPGRADE_CONN_UPGRADED,        /* BOOL: WebSocket upgrade done */
	UPGRADE_CONN_MISSING_ID,      /* U64: the largest fs/watchMissing watchId seen, optional */
	UPGRADE_CONN_CHANGE_ID,       /* U64: the last watchId fs/watch handed out (0: none) */
};
/*
 * A watch: fs/watchMissing's active one (missing: path is its first missing
 * path, others and present the rest) or an fs/watch one (path is the root
 * directory, only the file's name in it for a file watch).
 */
enum {
	UPGRADE_WATCH_CONN = 1,       /* REF conn */
	UPGRADE_WATCH_ID,             /* U64: the watchId */
	UPGRADE_WATCH_PATH,           /* BYTES: the watched path */
	UPGRADE_WATCH_RECURSIVE,      /* BOOL */
	UPGRADE_WATCH_MISSING,        /* BOOL: fs/watchMissing rather than fs/watch */
	UPGRADE_WATCH_OTHERS,         /* BYTES: fs/watchMissing's other missing paths, (u32 len, path)* */
	UPGRADE_WATCH_PRESENT,        /* BYTES: fs/watchMissing's present path, optional */
	UPGRADE_WATCH_ONLY,           /* BYTES: fs/watch of a file: its name in path, optional */
	UPGRADE_WATCH_MAX_DIRS,       /* U64: fs/watch's maxDirectories */
	UPGRADE_WATCH_MAX_EVENTS,     /* U64: fs/watch's maxQueuedEvents */
	UPGRADE_WATCH_DEV,            /* U64: fs/watch: the root directory's st_dev */
	UPGRADE_WATCH_INO,            /* U64: and its st_ino (a directory replaced meanwhile ends it) */
	UPGRADE_WATCH_ENDED,          /* U64: fs/watch ended, its event not sent yet: enum below */
	UPGRADE_WATCH_QUEUED,         /* BYTES: fs/watch's events not sent yet (a congested
				       * connection): JSON objects, each followed by ',' */
};
enum upgrade_watch_end {
	UPGRADE_WATCH_END_DELETED = 1,
	UPGRADE_WATCH_END_MOVED,
	UPGRADE_WATCH_END_UNMOUNTED,
	_UPGRADE_WATCH_END_MAX,
};
/* An fs/open handle (fs/readBlock and fs/writeBlock are positional: the fd is all it holds). */
enum {
	UPGRADE_FS_HANDLE_CONN = 1,   /* REF conn */
	UPGRADE_FS_HANDLE_ID,         /* BYTES: handleId (at most 32 bytes) */
	UPGRADE_FS_HANDLE_FD,         /* FD */
	UPGRADE_FS_HANDLE_WRITABLE,   /* BOOL: mode "replace" */
};

/* The denial evidence sources handed over (their fds: heldFd roles 16..23). */
enum upgrade_evidence_hook { /* sandbox/bpf-tracer-int.h's enum bpf_tracer_hook */
	UPGRADE_EV_HOOK_TP_BTF,
	UPGRADE_EV_HOOK_RAW_TP,
	UPGRADE_EV_HOOK_TP,
	_UPGRADE_EV_HOOK_MAX,
};
/* A kept denial in evidenceKept: its fixed part, and the bounds of its strings and count. */
#define UPGRADE_EV_KEPT_FIXED 17
#define UPGRADE_EV_KEPT_OBJECT 255
#define UPGRADE_EV_KEPT_ACCESS 95
#define UPGRADE_EV_KEPT_COMM 15
#define UPGRADE_EV_KEPT_MAX 16
#define UPGRADE_EV_KEPT_KINDS 6 /* sandbox/evidence.h's enum sandbox_denial_kind */
enum {
	UPGRADE_EVIDENCE_BPF_HOOK = 1, /* U64: enum upgrade_evidence_hook (with the tracer's fds) */
	UPGRADE_EVIDENCE_BPF_TP_ID,   /* U64: the tracepoint hook's perf id */
	UPGRADE_EVIDENCE_BPF_BSS_SIZE, /* U64: the program's .bss bytes */
	UPGRADE_EVIDENCE_BPF_DROPPED_OFF, /* U64: where its drop counter lies in .bss */
	UPGRADE_EVIDENCE_BPF_ATTACHED, /* BOOL: the programs are attached (attachments handed) */
	UPGRADE_EVIDENCE_BPF_DROPPED, /* U64: the drop counter as last read */
	UPGRADE_EVIDENCE_AUDIT_LOST,  /* U64: audit's "lost" counter as last read (with the socket) */
	UPGRADE_EVIDENCE_AUDIT_SEQ,   /* U64: the last audit barrier's sequence number */
	UPGRADE_EVIDENCE_AUDIT_ENABLED, /* BOOL: this server turned auditing on (--enable-audit) */
};

enum {
	UPGRADE_SYNTH_PATH = 1,       /* STR: absolute, canonical */
	UPGRADE_SYNTH_REFS,           /* U64 >= 1: the processes whose plans hold it */
	UPGRADE_SYNTH_FD,             /* FD (directory): holds the shared flock (synth.c) */
};

/* Where a cgroup limit is enforced (sandbox/cgroup.h's enum sandbox_cg_where). */
enum upgrade_cg_where {
	UPGRADE_CG_NONE,
	UPGRADE_CG_V2,
	UPGRADE_CG_V1,
	_UPGRADE_CG_WHERE_MAX,
};
/* The controllers, in sandbox/cgroup.h's order (pids, memory, cpu). */
#define UPGRADE_CG_KINDS 3
enum {
	UPGRADE_CGROUPS_ENABLED = 1,  /* BOOL: per-process leaves in cgroup v2 */
	UPGRADE_CGROUPS_HAS_KILL,     /* BOOL: cgroup.kill */
	UPGRADE_CGROUPS_BASE,         /* STR: the base's path (its fd: heldFd cgroupBase) */
	UPGRADE_CGROUPS_WHERE_PIDS,   /* U64: enum upgrade_cg_where, one per controller */
	UPGRADE_CGROUPS_WHERE_MEMORY,
	UPGRADE_CGROUPS_WHERE_CPU,
	UPGRADE_CGROUPS_V1_PIDS,      /* STR: a v1 hierarchy's base path (its fd: heldFd v1, index) */
	UPGRADE_CGROUPS_V1_MEMORY,
	UPGRADE_CGROUPS_V1_CPU,
	UPGRADE_CGROUPS_SERVER_CG,    /* STR: uexec-<pid>.server when uexec moved itself there */
	UPGRADE_CGROUPS_SEQ,          /* U64: the next leaf's number */
	UPGRADE_CGROUPS_SUPERVISOR,   /* U64: the supervisor's pid (its pipe: heldFd supervisor) */
};

/* Bounds on a blob (the caller's; upgrade_limits_default() gives uexec's). */
struct upgrade_limits {
	uint64_t max_bytes;     /* the whole blob */
	uint32_t max_records;
	uint32_t max_fds;       /* fd fields in the blob */
	uint32_t fd_bound;      /* every fd number is below it */
};
void upgrade_limits_default(struct upgrade_limits *l);

/* A parsed field: a view into the parsed buffer. */
struct upgrade_field {
	uint16_t tag;
	uint8_t type;
	uint32_t len;
	const uint8_t *val;
};

struct upgrade_rec {
	uint16_t kind;
	uint16_t n_fields;
	uint32_t first;         /* index into upgrade_state.fields */
};

struct upgrade_state {
	uint32_t version;
	struct upgrade_rec *recs;
	uint32_t n_recs;
	struct upgrade_field *fields;
	uint32_t n_fields;
	uint32_t *fds;          /* every fd number, ascending */
	uint32_t n_fds;
	uint32_t count[_UPGRADE_REC_MAX]; /* records per kind */
};

/*
 * Parses and validates buf[0..len). Returns 0 with *ret filled (views into
 * buf: valid while buf is), or -EBADMSG (malformed: err says where and why),
 * -EPROTONOSUPPORT (a version this binary does not read), -E2BIG (over a
 * limit), -ENOMEM. *ret is untouched on failure. err may be NULL.
 */
int upgrade_state_parse(const uint8_t *buf, size_t len, const struct upgrade_limits *lim,
			struct upgrade_state *ret, char *err, size_t err_size);
void upgrade_state_done(struct upgrade_state *st);

/* The first field tagged tag of record rec, or NULL. */
const struct upgrade_field *upgrade_rec_field(const struct upgrade_state *st, uint32_t rec,
					      uint16_t tag);
/* Typed reads of a validated field (the schema fixed its type); def when absent. */
uint64_t upgrade_rec_u64(const struct upgrade_state *st, uint32_t rec, uint16_t tag, uint64_t def);
bool upgrade_rec_bool(const struct upgrade_state *st, uint32_t rec, uint16_t tag);
/* FD and REF fields: the number, or -1 when absent. */
int64_t upgrade_rec_num(const struct upgrade_state *st, uint32_t rec, uint16_t tag);

/* The names of a kind and of a field, for messages ("?" when unknown). */
const char *upgrade_kind_name(unsigned kind);
const char *upgrade_field_name(unsigned kind, unsigned tag);
/* The fd kind a FD field must be (UPGRADE_FD_ANY for other fields). */
enum upgrade_fd_kind upgrade_field_fd_kind(unsigned kind, unsigned tag);

/* One retained-output entry; data points into the field. */
struct upgrade_chunk {
	uint64_t seq;
	uint8_t stream;
	uint32_t len;
	const uint8_t *data;
};
/* Steps through a validated CHUNKS field from *off (start at 0): 1 and *ret, or 0 at the end. */
int upgrade_chunks_next(const struct upgrade_field *f, size_t *off, struct upgrade_chunk *ret);

/*
 * The writer. Calls append to w->b; the first error (-ENOMEM, -EINVAL for a
 * tag out of order or a field outside a record) sticks and is returned by
 * upgrade_writer_finish(), which fills the header. The writer does not check
 * the schema: parse what it made before trusting it (the sender does).
 */
struct upgrade_writer {
	struct buf b;
	size_t rec_off;     /* the open record's header, or SIZE_MAX */
	size_t field_off;   /* the open CHUNKS field's header, or SIZE_MAX */
	uint32_t n_recs;
	uint16_t rec_fields;
	uint16_t last_tag;
	uint32_t version;
	int error;
	/* Where the bytes go: NULL, the heap (w->b); else grows w->b in place (memfd.c). */
	int (*grow)(struct upgrade_writer *w, size_t extra);
	int memfd;          /* memfd.c's, or -1 */
};
void upgrade_writer_init(struct upgrade_writer *w, uint32_t version);
/* The same with another home for the bytes (memfd.c's; grow is called with w->b to grow). */
void upgrade_writer_init_grow(struct upgrade_writer *w, uint32_t version,
			      int (*grow)(struct upgrade_writer *w, size_t extra), int memfd);
/*
 * memfd.c (does I/O): the writer's bytes go straight into a memfd mapped
 * shared, size_hint bytes made and faulted in at once (0: grown on demand),
 * so that SERIALIZE copies each byte once. 0 or -errno. After
 * upgrade_writer_finish(), upgrade_writer_seal() hands the sealed memfd over.
 * upgrade_writer_done() frees either kind of writer.
 */
int upgrade_writer_init_memfd(struct upgrade_writer *w, uint32_t version, size_t size_hint);
/* The finished blob's memfd, sized to the blob and sealed read-only (the caller owns it), or -errno. */
int upgrade_writer_seal(struct upgrade_writer *w);
void upgrade_writer_done(struct upgrade_writer *w);
void upgrade_writer_begin(struct upgrade_writer *w, uint16_t kind);
void upgrade_writer_end(struct upgrade_writer *w);
/* A HELD_FD record of role (with its index unless index < 0) for fd; 1, or 0 when fd < 0. */
unsigned upgrade_writer_held(struct upgrade_writer *w, unsigned role, int fd, int index);
void upgrade_writer_raw(struct upgrade_writer *w, uint16_t tag, uint8_t type, const void *val,
			uint32_t len);
void upgrade_writer_u64(struct upgrade_writer *w, uint16_t tag, uint64_t v);
void upgrade_writer_bool(struct upgrade_writer *w, uint16_t tag, bool v);
void upgrade_writer_bytes(struct upgrade_writer *w, uint16_t tag, const void *p, size_t n);
void upgrade_writer_str(struct upgrade_writer *w, uint16_t tag, const char *s);
void upgrade_writer_fd(struct upgrade_writer *w, uint16_t tag, int fd);
void upgrade_writer_ref(struct upgrade_writer *w, uint16_t tag, uint32_t rec);
/* A CHUNKS field: begin, one call per entry, end. */
void upgrade_writer_chunks_begin(struct upgrade_writer *w, uint16_t tag);
void upgrade_writer_chunk(struct upgrade_writer *w, uint64_t seq, uint8_t stream, const void *p,
			  uint32_t len);
void upgrade_writer_chunks_end(struct upgrade_writer *w);
/* 0 and the blob (w->b.data, w->b.len; the caller frees with buf_done), or the first error. */
int upgrade_writer_finish(struct upgrade_writer *w);

/*
 * After execve (fds.c, does I/O): every fd of st is open, is not blob_fd (the
 * memfd holding st; -1: none) and is of its field's kind. 0, or -EBADF with
 * err saying which.
 */
int upgrade_state_check_fds(const struct upgrade_state *st, int blob_fd, char *err, size_t err_size);
