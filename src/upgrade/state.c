/* SPDX-License-Identifier: MIT */
/*
 * The live upgrade's state blob: schema tables and the strict parser
 * (state.h; docs/UPGRADE.md); the writer is state-write.c. No I/O.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "state.h"

/* ---- the schema ---- */

#define F_REQ 0x1u /* the field must be present */

struct field_spec {
	uint16_t tag;
	uint8_t type;
	uint8_t flags;
	/* U64: value range; BYTES/STR/CHUNKS: length range; REF: min = target kind; FD: min = fd kind */
	uint64_t min, max;
	const char *name;
};

struct kind_spec {
	const char *name;
	const struct field_spec *fields; /* ascending tags */
	unsigned n_fields;
	uint32_t max_count; /* records of this kind in a blob */
};

/* Linux's PID_MAX_LIMIT on 64-bit: no pid is above it. */
#define PID_LIMIT (4u << 20)
#define PATH_LIMIT 4096
/* What one process may retain (proc.h: 1 MiB, 50 000 chunks), with the entries' headers. */
#define RETAINED_BYTES_LIMIT (1024u * 1024u)
#define RETAINED_CHUNKS_LIMIT 50000u
#define CHUNKS_FIELD_LIMIT (RETAINED_BYTES_LIMIT + RETAINED_CHUNKS_LIMIT * UPGRADE_CHUNK_HEADER_LEN)
/* A process's synthesized mount points: (u32 len, path)*, a bound well above any policy's. */
#define SYNTH_FIELD_LIMIT (1u << 20)
/* A connection's unparsed input and unsent output: --max-message-bytes' ceiling and a bound. */
#define CONN_BYTES_LIMIT (1ull << 32)

/* clang-format off */
static const struct field_spec server_fields[] = {
	{ UPGRADE_SERVER_VERSION,  UPGRADE_T_STR, F_REQ, 1, 64, "version" },
	{ UPGRADE_SERVER_START_MS, UPGRADE_T_U64, F_REQ, 0, UINT64_MAX, "startMs" },
	{ UPGRADE_SERVER_UPGRADES, UPGRADE_T_U64, F_REQ, 0, UINT32_MAX, "upgrades" },
	{ UPGRADE_SERVER_NEXT_CG,  UPGRADE_T_U64, 0, 0, UINT32_MAX, "nextCgroup" },
	{ UPGRADE_SERVER_QUIESCE_NS, UPGRADE_T_U64, 0, 0, UINT64_MAX, "quiesceNs" },
	{ UPGRADE_SERVER_RELAY_IDENTITY, UPGRADE_T_BYTES, 0, UPGRADE_RELAY_IDENTITY_BYTES,
	  UPGRADE_RELAY_IDENTITY_BYTES, "relayIdentity" },
};
static const struct field_spec metric_fields[] = {
	{ UPGRADE_METRIC_NAME,  UPGRADE_T_STR, F_REQ, 1, 128, "name" },
	{ UPGRADE_METRIC_VALUE, UPGRADE_T_U64, F_REQ, 0, UINT64_MAX, "value" },
};
static const struct field_spec held_fields[] = {
	{ UPGRADE_HELD_ROLE,  UPGRADE_T_U64, F_REQ, 1, _UPGRADE_HELD_MAX - 1, "role" },
	{ UPGRADE_HELD_FD,    UPGRADE_T_FD, F_REQ, UPGRADE_FD_ANY, 0, "fd" },
	{ UPGRADE_HELD_INDEX, UPGRADE_T_U64, 0, 0, 15, "index" },
};
static const struct field_spec listener_fields[] = {
	{ UPGRADE_LISTENER_FD,  UPGRADE_T_FD, F_REQ, UPGRADE_FD_SOCKET, 0, "fd" },
	{ UPGRADE_LISTENER_URL, UPGRADE_T_STR, F_REQ, 1, 256, "url" },
	{ UPGRADE_LISTENER_TLS, UPGRADE_T_BOOL, 0, 0, 0, "tls" },
};
static const struct field_spec session_fields[] = {
	{ UPGRADE_SESSION_ID,            UPGRADE_T_STR, F_REQ, 36, 36, "id" },
	{ UPGRADE_SESSION_EXPIRY_NS,     UPGRADE_T_U64, F_REQ, 0, UINT64_MAX, "expiryNs" },
	{ UPGRADE_SESSION_NEXT_SNAPSHOT, UPGRADE_T_U64, 0, 0, UINT32_MAX, "nextSnapshot" },
};
static const struct field_spec proc_fields[] = {
	{ UPGRADE_PROC_SESSION,      UPGRADE_T_REF, F_REQ, UPGRADE_REC_SESSION, 0, "session" },
	{ UPGRADE_PROC_ID,           UPGRADE_T_BYTES, F_REQ, 0, 1u << 20, "processId" },
	{ UPGRADE_PROC_PID,          UPGRADE_T_U64, F_REQ, 1, PID_LIMIT, "pid" },
	{ UPGRADE_PROC_PIDFD,        UPGRADE_T_FD, 0, UPGRADE_FD_ANON, 0, "pidfd" },
	{ UPGRADE_PROC_TTY,          UPGRADE_T_BOOL, 0, 0, 0, "tty" },
	{ UPGRADE_PROC_PIPE_STDIN,   UPGRADE_T_BOOL, 0, 0, 0, "pipeStdin" },
	{ UPGRADE_PROC_OUT_FD,       UPGRADE_T_FD, 0, UPGRADE_FD_STREAM, 0, "stdoutFd" },
	{ UPGRADE_PROC_ERR_FD,       UPGRADE_T_FD, 0, UPGRADE_FD_FIFO, 0, "stderrFd" },
	{ UPGRADE_PROC_STDIN_FD,     UPGRADE_T_FD, 0, UPGRADE_FD_STREAM, 0, "stdinFd" },
	{ UPGRADE_PROC_NEXT_SEQ,     UPGRADE_T_U64, F_REQ, 1, UINT64_MAX, "nextSeq" },
	{ UPGRADE_PROC_RETAINED,     UPGRADE_T_CHUNKS, 0, 0, CHUNKS_FIELD_LIMIT, "retained" },
	{ UPGRADE_PROC_REAPED,       UPGRADE_T_BOOL, 0, 0, 0, "reaped" },
	{ UPGRADE_PROC_EXITED,       UPGRADE_T_BOOL, 0, 0, 0, "exited" },
	{ UPGRADE_PROC_EXIT_CODE,    UPGRADE_T_U64, 0, 0, 255 + 128, "exitCode" },
	{ UPGRADE_PROC_TERM_SIGNAL,  UPGRADE_T_U64, 0, 0, 64, "termSignal" },
	{ UPGRADE_PROC_EXIT_SEQ,     UPGRADE_T_U64, 0, 1, UINT64_MAX, "exitSeq" },
	{ UPGRADE_PROC_CLOSED,       UPGRADE_T_BOOL, 0, 0, 0, "closed" },
	{ UPGRADE_PROC_STARTED_MS,   UPGRADE_T_U64, 0, 0, UINT64_MAX, "startedMs" },
	{ UPGRADE_PROC_CG_GUARD,     UPGRADE_T_BOOL, 0, 0, 0, "cgroupGuard" },
	{ UPGRADE_PROC_CG_NUM,       UPGRADE_T_U64, 0, 0, UINT32_MAX, "cgroupNumber" },
	{ UPGRADE_PROC_TIMEOUT_NS,   UPGRADE_T_U64, 0, 1, UINT64_MAX, "timeoutNs" },
	{ UPGRADE_PROC_STDIN_CLOSED, UPGRADE_T_BOOL, 0, 0, 0, "stdinClosed" },
	{ UPGRADE_PROC_SANDBOXED,    UPGRADE_T_BOOL, 0, 0, 0, "sandboxed" },
	{ UPGRADE_PROC_TIMED_OUT,    UPGRADE_T_BOOL, 0, 0, 0, "timedOut" },
	{ UPGRADE_PROC_WRITE_IDS,    UPGRADE_T_BYTES, 0, 5, CONN_BYTES_LIMIT, "writeIds" },
	{ UPGRADE_PROC_HAS_TIMEOUT,  UPGRADE_T_BOOL, 0, 0, 0, "hasTimeout" },
	{ UPGRADE_PROC_ASKED_LIMITS, UPGRADE_T_BOOL, 0, 0, 0, "askedLimits" },
	{ UPGRADE_PROC_MEM_LIMITED,  UPGRADE_T_BOOL, 0, 0, 0, "memoryLimited" },
	{ UPGRADE_PROC_OOM_KILLED,   UPGRADE_T_BOOL, 0, 0, 0, "oomKilled" },
	{ UPGRADE_PROC_PTY_LAST,     UPGRADE_T_U64, 0, 1, 256, "ptyLastByte" },
	{ UPGRADE_PROC_WRITES,       UPGRADE_T_BYTES, 0, 10, CONN_BYTES_LIMIT, "writes" },
	{ UPGRADE_PROC_SYNTH,        UPGRADE_T_BYTES, 0, 6, SYNTH_FIELD_LIMIT, "synth" },
	{ UPGRADE_PROC_FILTER,       UPGRADE_T_U64, 0, 1, 5, "seccompFilter" },
	{ UPGRADE_PROC_EV_DENIED,    UPGRADE_T_U64, 0, 1, UINT32_MAX, "evidenceDenied" },
	{ UPGRADE_PROC_EV_LOST,      UPGRADE_T_BOOL, 0, 0, 0, "evidenceLost" },
	{ UPGRADE_PROC_EV_AMBIGUOUS, UPGRADE_T_U64, 0, 1, UINT32_MAX, "evidenceAmbiguous" },
	{ UPGRADE_PROC_EV_KEPT,      UPGRADE_T_BYTES, 0, UPGRADE_EV_KEPT_FIXED,
	  UPGRADE_EV_KEPT_MAX * (UPGRADE_EV_KEPT_FIXED + UPGRADE_EV_KEPT_OBJECT +
				 UPGRADE_EV_KEPT_ACCESS + UPGRADE_EV_KEPT_COMM), "evidenceKept" },
	{ UPGRADE_PROC_NP_CONFIG,    UPGRADE_T_STR, 0, 2, 1u << 20, "networkProxy" },
	{ UPGRADE_PROC_NP_HTTP_FD,   UPGRADE_T_FD, 0, UPGRADE_FD_SOCKET, 0, "proxyHttpFd" },
	{ UPGRADE_PROC_NP_SOCKS_FD,  UPGRADE_T_FD, 0, UPGRADE_FD_SOCKET, 0, "proxySocksFd" },
	{ UPGRADE_PROC_NP_UDP_FD,    UPGRADE_T_FD, 0, UPGRADE_FD_SOCKET, 0, "proxyUdpFd" },
};
static const struct field_spec conn_fields[] = {
	{ UPGRADE_CONN_TRANSPORT,   UPGRADE_T_U64, F_REQ, 0, _UPGRADE_CONN_MAX - 1, "transport" },
	{ UPGRADE_CONN_FD_IN,       UPGRADE_T_FD, F_REQ, UPGRADE_FD_STREAM, 0, "fdIn" },
	{ UPGRADE_CONN_FD_OUT,      UPGRADE_T_FD, 0, UPGRADE_FD_STREAM, 0, "fdOut" },
	{ UPGRADE_CONN_SESSION,     UPGRADE_T_REF, 0, UPGRADE_REC_SESSION, 0, "session" },
	{ UPGRADE_CONN_INPUT,       UPGRADE_T_BYTES, 0, 0, CONN_BYTES_LIMIT, "input" },
	{ UPGRADE_CONN_OUTPUT,      UPGRADE_T_BYTES, 0, 0, CONN_BYTES_LIMIT, "output" },
	{ UPGRADE_CONN_INITIALIZED, UPGRADE_T_BOOL, 0, 0, 0, "initialized" },
	{ UPGRADE_CONN_UPGRADED,    UPGRADE_T_BOOL, 0, 0, 0, "upgraded" },
	{ UPGRADE_CONN_MISSING_ID,  UPGRADE_T_U64, 0, 0, UINT64_MAX, "missingWatchId" },
	{ UPGRADE_CONN_CHANGE_ID,   UPGRADE_T_U64, 0, 0, UINT64_MAX, "changeWatchId" },
};
static const struct field_spec watch_fields[] = {
	{ UPGRADE_WATCH_CONN,      UPGRADE_T_REF, F_REQ, UPGRADE_REC_CONN, 0, "conn" },
	{ UPGRADE_WATCH_ID,        UPGRADE_T_U64, F_REQ, 0, UINT64_MAX, "watchId" },
	{ UPGRADE_WATCH_PATH,      UPGRADE_T_BYTES, F_REQ, 1, PATH_LIMIT, "path" },
	{ UPGRADE_WATCH_RECURSIVE, UPGRADE_T_BOOL, 0, 0, 0, "recursive" },
	{ UPGRADE_WATCH_MISSING,   UPGRADE_T_BOOL, 0, 0, 0, "missing" },
	/* At most 255 other paths (fs/watchMissing takes 256), each with its length. */
	{ UPGRADE_WATCH_OTHERS,    UPGRADE_T_BYTES, 0, 5, 255 * (4 + PATH_LIMIT), "others" },
	{ UPGRADE_WATCH_PRESENT,   UPGRADE_T_BYTES, 0, 1, PATH_LIMIT, "present" },
	{ UPGRADE_WATCH_ONLY,      UPGRADE_T_BYTES, 0, 1, 255, "only" },
	{ UPGRADE_WATCH_MAX_DIRS,  UPGRADE_T_U64, 0, 1, 8192, "maxDirectories" },
	{ UPGRADE_WATCH_MAX_EVENTS, UPGRADE_T_U64, 0, 1, 16384, "maxQueuedEvents" },
	{ UPGRADE_WATCH_DEV,       UPGRADE_T_U64, 0, 0, UINT64_MAX, "dev" },
	{ UPGRADE_WATCH_INO,       UPGRADE_T_U64, 0, 0, UINT64_MAX, "ino" },
	{ UPGRADE_WATCH_ENDED,     UPGRADE_T_U64, 0, 1, _UPGRADE_WATCH_END_MAX - 1, "ended" },
	/* watch-tree-internal.h's QUEUE_BYTES (256 KiB), and the events forced past it. */
	{ UPGRADE_WATCH_QUEUED,    UPGRADE_T_BYTES, 0, 3, 1u << 19, "queued" },
};
static const struct field_spec fs_handle_fields[] = {
	{ UPGRADE_FS_HANDLE_CONN,     UPGRADE_T_REF, F_REQ, UPGRADE_REC_CONN, 0, "conn" },
	{ UPGRADE_FS_HANDLE_ID,       UPGRADE_T_BYTES, F_REQ, 0, 32, "handleId" },
	/* A file, or with mode "replace" whatever it names (a FIFO, /dev/null). */
	{ UPGRADE_FS_HANDLE_FD,       UPGRADE_T_FD, F_REQ, UPGRADE_FD_ANY, 0, "fd" },
	{ UPGRADE_FS_HANDLE_WRITABLE, UPGRADE_T_BOOL, 0, 0, 0, "writable" },
};
static const struct field_spec synth_fields[] = {
	{ UPGRADE_SYNTH_PATH, UPGRADE_T_STR, F_REQ, 2, PATH_LIMIT - 1, "path" },
	{ UPGRADE_SYNTH_REFS, UPGRADE_T_U64, F_REQ, 1, UINT32_MAX, "refs" },
	{ UPGRADE_SYNTH_FD,   UPGRADE_T_FD, F_REQ, UPGRADE_FD_DIR, 0, "fd" },
};

static const struct field_spec evidence_fields[] = {
	{ UPGRADE_EVIDENCE_BPF_HOOK,     UPGRADE_T_U64, 0, 0, _UPGRADE_EV_HOOK_MAX - 1, "bpfHook" },
	{ UPGRADE_EVIDENCE_BPF_TP_ID,    UPGRADE_T_U64, 0, 1, INT32_MAX, "bpfTracepointId" },
	{ UPGRADE_EVIDENCE_BPF_BSS_SIZE, UPGRADE_T_U64, 0, 8, 1u << 20, "bpfBssSize" },
	{ UPGRADE_EVIDENCE_BPF_DROPPED_OFF, UPGRADE_T_U64, 0, 0, (1u << 20) - 8, "bpfDroppedOffset" },
	{ UPGRADE_EVIDENCE_BPF_ATTACHED, UPGRADE_T_BOOL, 0, 0, 0, "bpfAttached" },
	{ UPGRADE_EVIDENCE_BPF_DROPPED,  UPGRADE_T_U64, 0, 0, UINT64_MAX, "bpfDropped" },
	{ UPGRADE_EVIDENCE_AUDIT_LOST,   UPGRADE_T_U64, 0, 0, UINT32_MAX, "auditLost" },
	{ UPGRADE_EVIDENCE_AUDIT_SEQ,    UPGRADE_T_U64, 0, 0, UINT32_MAX, "auditSeq" },
	{ UPGRADE_EVIDENCE_AUDIT_ENABLED, UPGRADE_T_BOOL, 0, 0, 0, "auditEnabledByUs" },
};

static const struct field_spec cgroups_fields[] = {
	{ UPGRADE_CGROUPS_ENABLED,      UPGRADE_T_BOOL, 0, 0, 0, "enabled" },
	{ UPGRADE_CGROUPS_HAS_KILL,     UPGRADE_T_BOOL, 0, 0, 0, "hasKill" },
	{ UPGRADE_CGROUPS_BASE,         UPGRADE_T_STR, 0, 2, PATH_LIMIT - 1, "base" },
	{ UPGRADE_CGROUPS_WHERE_PIDS,   UPGRADE_T_U64, F_REQ, 0, _UPGRADE_CG_WHERE_MAX - 1, "wherePids" },
	{ UPGRADE_CGROUPS_WHERE_MEMORY, UPGRADE_T_U64, F_REQ, 0, _UPGRADE_CG_WHERE_MAX - 1, "whereMemory" },
	{ UPGRADE_CGROUPS_WHERE_CPU,    UPGRADE_T_U64, F_REQ, 0, _UPGRADE_CG_WHERE_MAX - 1, "whereCpu" },
	{ UPGRADE_CGROUPS_V1_PIDS,      UPGRADE_T_STR, 0, 2, PATH_LIMIT - 1, "v1Pids" },
	{ UPGRADE_CGROUPS_V1_MEMORY,    UPGRADE_T_STR, 0, 2, PATH_LIMIT - 1, "v1Memory" },
	{ UPGRADE_CGROUPS_V1_CPU,       UPGRADE_T_STR, 0, 2, PATH_LIMIT - 1, "v1Cpu" },
	{ UPGRADE_CGROUPS_SERVER_CG,    UPGRADE_T_STR, 0, 2, PATH_LIMIT - 1, "serverCgroup" },
	{ UPGRADE_CGROUPS_SEQ,          UPGRADE_T_U64, F_REQ, 0, UINT64_MAX, "seq" },
	{ UPGRADE_CGROUPS_SUPERVISOR,   UPGRADE_T_U64, 0, 1, PID_LIMIT, "supervisorPid" },
};

#define KIND(name, fields, max) { name, fields, ELEMENTSOF(fields), max }
static const struct kind_spec kinds_v1[_UPGRADE_REC_MAX] = {
	[UPGRADE_REC_SERVER]   = KIND("server", server_fields, 1),
	[UPGRADE_REC_METRIC]   = KIND("metric", metric_fields, 4096),
	[UPGRADE_REC_HELD_FD]  = KIND("heldFd", held_fields, 64),
	[UPGRADE_REC_LISTENER] = KIND("listener", listener_fields, 1),
	[UPGRADE_REC_SESSION]  = KIND("session", session_fields, UINT32_MAX),
	[UPGRADE_REC_PROC]     = KIND("proc", proc_fields, UINT32_MAX),
	[UPGRADE_REC_CONN]     = KIND("conn", conn_fields, UINT32_MAX),
	[UPGRADE_REC_WATCH]    = KIND("watch", watch_fields, UINT32_MAX),
	[UPGRADE_REC_CGROUPS]  = KIND("cgroups", cgroups_fields, 1),
	[UPGRADE_REC_SYNTH]    = KIND("synth", synth_fields, 1u << 20),
	[UPGRADE_REC_FS_HANDLE] = KIND("fsHandle", fs_handle_fields, UINT32_MAX),
	[UPGRADE_REC_EVIDENCE] = KIND("evidence", evidence_fields, 1),
};
/* clang-format on */

/*
 * The schema of each version this binary reads. A later version adds a
 * table here and keeps the old ones, so that a newer binary still takes over
 * from an older one.
 */
static const struct kind_spec *schema_of(uint32_t version)
{
	return version == 1 ? kinds_v1 : NULL;
}

static const struct kind_spec *kind_spec(uint32_t version, unsigned kind)
{
	const struct kind_spec *k = schema_of(version);

	return k && kind >= 1 && kind < _UPGRADE_REC_MAX && k[kind].name ? &k[kind] : NULL;
}

static const struct field_spec *field_spec(const struct kind_spec *k, unsigned tag)
{
	for (unsigned i = 0; i < k->n_fields; i++)
		if (k->fields[i].tag == tag)
			return &k->fields[i];
	return NULL;
}

const char *upgrade_kind_name(unsigned kind)
{
	const struct kind_spec *k = kind_spec(UPGRADE_STATE_VERSION, kind);

	return k ? k->name : "?";
}

const char *upgrade_field_name(unsigned kind, unsigned tag)
{
	const struct kind_spec *k = kind_spec(UPGRADE_STATE_VERSION, kind);
	const struct field_spec *f = k ? field_spec(k, tag) : NULL;

	return f ? f->name : "?";
}

enum upgrade_fd_kind upgrade_field_fd_kind(unsigned kind, unsigned tag)
{
	const struct kind_spec *k = kind_spec(UPGRADE_STATE_VERSION, kind);
	const struct field_spec *f = k ? field_spec(k, tag) : NULL;

	return f && f->type == UPGRADE_T_FD ? (enum upgrade_fd_kind)f->min : UPGRADE_FD_ANY;
}

void upgrade_limits_default(struct upgrade_limits *l)
{
	/* A server's worth: 1 MiB retained by each of a million processes would not fit anyway. */
	l->max_bytes = 64ull << 30;
	l->max_records = 1u << 24;
	l->max_fds = 1u << 22;
	l->fd_bound = 1u << 30; /* fs.nr_open's ceiling */
}

/* ---- little-endian reads and writes ---- */

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* ---- the parser ---- */

struct parse {
	const uint8_t *buf;
	size_t len;
	const struct upgrade_limits *lim;
	const struct kind_spec *schema;
	struct upgrade_state st;
	uint32_t fields_cap, fds_cap;
	char *err;
	size_t err_size;
};

static int fail(struct parse *p, int r, const char *fmt, ...) _printf_(3, 4);
static int fail(struct parse *p, int r, const char *fmt, ...)
{
	va_list ap;

	if (p->err && p->err_size) {
		va_start(ap, fmt);
		vsnprintf(p->err, p->err_size, fmt, ap);
		va_end(ap);
	}
	return r;
}

static int grow(void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
	uint32_t n;
	void *a;

	if (need <= *cap)
		return 0;
	n = *cap ? *cap : 64;
	while (n < need)
		n = n > UINT32_MAX / 2 ? UINT32_MAX : n * 2;
	a = reallocarray(*arr, n, elem);
	if (!a)
		return -ENOMEM;
	*arr = a;
	*cap = n;
	return 0;
}

static int check_chunks(struct parse *p, uint32_t rec, const struct field_spec *fs,
			const uint8_t *v, uint32_t len)
{
	uint64_t last = 0;
	uint32_t n = 0;
	size_t off = 0;

	while (off < len) {
		uint64_t seq;
		uint32_t clen;

		if (len - off < UPGRADE_CHUNK_HEADER_LEN)
			return fail(p, -EBADMSG, "record %u: %s: a chunk's header is cut short", rec,
				    fs->name);
		seq = get64(v + off);
		clen = get32(v + off + 9);
		if (v[off + 8] >= _UPGRADE_STREAM_MAX)
			return fail(p, -EBADMSG, "record %u: %s: chunk stream %u is unknown", rec,
				    fs->name, v[off + 8]);
		if (seq <= last)
			return fail(p, -EBADMSG, "record %u: %s: chunk seq %llu after %llu", rec,
				    fs->name, (unsigned long long)seq, (unsigned long long)last);
		if (clen == 0 || clen > len - off - UPGRADE_CHUNK_HEADER_LEN)
			return fail(p, -EBADMSG, "record %u: %s: chunk length %u does not fit", rec,
				    fs->name, clen);
		if (++n > RETAINED_CHUNKS_LIMIT)
			return fail(p, -E2BIG, "record %u: %s: more than %u chunks", rec, fs->name,
				    RETAINED_CHUNKS_LIMIT);
		last = seq;
		off += UPGRADE_CHUNK_HEADER_LEN + clen;
	}
	return 0;
}

/* One field's value against its spec. */
static int check_value(struct parse *p, uint32_t rec, const struct field_spec *fs,
		       const uint8_t *v, uint32_t len)
{
	uint64_t x;

	switch ((enum upgrade_type)fs->type) {
	case UPGRADE_T_U64:
		if (len != 8)
			break;
		x = get64(v);
		if (x < fs->min || x > fs->max)
			return fail(p, -EBADMSG, "record %u: %s %llu is out of range [%llu, %llu]",
				    rec, fs->name, (unsigned long long)x,
				    (unsigned long long)fs->min, (unsigned long long)fs->max);
		return 0;
	case UPGRADE_T_BOOL:
		if (len != 1)
			break;
		if (v[0] > 1)
			return fail(p, -EBADMSG, "record %u: %s: boolean %u", rec, fs->name, v[0]);
		return 0;
	case UPGRADE_T_STR:
		if (len && memchr(v, 0, len))
			return fail(p, -EBADMSG, "record %u: %s holds a NUL", rec, fs->name);
		__attribute__((fallthrough)); /* and the length, as bytes */
	case UPGRADE_T_BYTES:
		if (len < fs->min || len > fs->max)
			return fail(p, -EBADMSG, "record %u: %s: length %u out of range [%llu, %llu]",
				    rec, fs->name, len, (unsigned long long)fs->min,
				    (unsigned long long)fs->max);
		return 0;
	case UPGRADE_T_CHUNKS:
		if (len > fs->max)
			return fail(p, -E2BIG, "record %u: %s: %u bytes, more than %llu", rec,
				    fs->name, len, (unsigned long long)fs->max);
		return check_chunks(p, rec, fs, v, len);
	case UPGRADE_T_FD:
		if (len != 4)
			break;
		x = get32(v);
		if (x >= p->lim->fd_bound)
			return fail(p, -EBADMSG, "record %u: %s: fd %llu is not below %u", rec,
				    fs->name, (unsigned long long)x, p->lim->fd_bound);
		if (p->st.n_fds >= p->lim->max_fds)
			return fail(p, -E2BIG, "more than %u fds", p->lim->max_fds);
		if (grow((void **)&p->st.fds, &p->fds_cap, p->st.n_fds + 1, sizeof(uint32_t)) < 0)
			return -ENOMEM;
		p->st.fds[p->st.n_fds++] = (uint32_t)x;
		return 0;
	case UPGRADE_T_REF:
		if (len != 4)
			break;
		x = get32(v);
		/* Backwards only: the target is parsed, and no cycle can be built. */
		if (x >= rec || p->st.recs[x].kind != fs->min)
			return fail(p, -EBADMSG, "record %u: %s names record %llu, not an earlier %s",
				    rec, fs->name, (unsigned long long)x,
				    p->schema[fs->min].name);
		return 0;
	case _UPGRADE_T_MAX:
		break;
	}
	return fail(p, -EBADMSG, "record %u: %s: length %u is wrong for its type", rec, fs->name, len);
}

/* The fields of record rec, in v[0..len). */
static int parse_fields(struct parse *p, uint32_t rec, const struct kind_spec *k, uint16_t n,
			const uint8_t *v, uint32_t len)
{
	struct upgrade_rec *r = &p->st.recs[rec];
	uint32_t off = 0, last_tag = 0;
	unsigned req_seen = 0, req_total = 0;
	int ret;

	r->first = p->st.n_fields;
	r->n_fields = 0;
	for (unsigned i = 0; i < k->n_fields; i++)
		req_total += !!(k->fields[i].flags & F_REQ);
	if (n > k->n_fields)
		return fail(p, -EBADMSG, "record %u (%s): %u fields, it has %u", rec, k->name, n,
			    k->n_fields);
	for (uint16_t i = 0; i < n; i++) {
		const struct field_spec *fs;
		struct upgrade_field *f;
		uint16_t tag;
		uint32_t flen;

		if (len - off < UPGRADE_FIELD_HEADER_LEN)
			return fail(p, -EBADMSG, "record %u (%s): field %u is cut short", rec, k->name, i);
		tag = get16(v + off);
		flen = get32(v + off + 4);
		fs = field_spec(k, tag);
		if (!fs)
			return fail(p, -EBADMSG, "record %u (%s): unknown field %u", rec, k->name, tag);
		if (tag <= last_tag)
			return fail(p, -EBADMSG, "record %u (%s): field %s out of order or repeated",
				    rec, k->name, fs->name);
		if (v[off + 2] != fs->type || v[off + 3] != 0)
			return fail(p, -EBADMSG, "record %u (%s): field %s has type %u, not %u", rec,
				    k->name, fs->name, v[off + 2], fs->type);
		if (flen > len - off - UPGRADE_FIELD_HEADER_LEN)
			return fail(p, -EBADMSG, "record %u (%s): field %s's %u bytes overrun the "
				    "record", rec, k->name, fs->name, flen);
		ret = check_value(p, rec, fs, v + off + UPGRADE_FIELD_HEADER_LEN, flen);
		if (ret < 0)
			return ret;
		if (grow((void **)&p->st.fields, &p->fields_cap, p->st.n_fields + 1,
			 sizeof(*p->st.fields)) < 0)
			return -ENOMEM;
		f = &p->st.fields[p->st.n_fields++];
		f->tag = tag;
		f->type = fs->type;
		f->len = flen;
		f->val = v + off + UPGRADE_FIELD_HEADER_LEN;
		r->n_fields++; /* upgrade_rec_field() sees it from now on */
		req_seen += !!(fs->flags & F_REQ);
		last_tag = tag;
		off += UPGRADE_FIELD_HEADER_LEN + flen;
	}
	if (off != len)
		return fail(p, -EBADMSG, "record %u (%s): %u bytes after its last field", rec, k->name,
			    len - off);
	if (req_seen != req_total) {
		for (unsigned i = 0; i < k->n_fields; i++)
			if ((k->fields[i].flags & F_REQ) && !upgrade_rec_field(&p->st, rec, k->fields[i].tag))
				return fail(p, -EBADMSG, "record %u (%s): field %s is missing", rec,
					    k->name, k->fields[i].name);
	}
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static int parse_header(struct parse *p, uint64_t *ret_body, uint32_t *ret_n)
{
	const uint8_t *b = p->buf;
	uint32_t version;

	if (p->len < UPGRADE_STATE_HEADER_LEN)
		return fail(p, -EBADMSG, "%zu bytes: shorter than the header", p->len);
	if (memcmp(b, UPGRADE_STATE_MAGIC, 8) != 0)
		return fail(p, -EBADMSG, "not an upgrade state (bad magic)");
	version = get32(b + 8);
	p->schema = schema_of(version);
	if (!p->schema || version < UPGRADE_STATE_VERSION_MIN || version > UPGRADE_STATE_VERSION)
		return fail(p, -EPROTONOSUPPORT, "state version %u is not one this binary reads "
			    "(%u-%u)", version, UPGRADE_STATE_VERSION_MIN, UPGRADE_STATE_VERSION);
	if (get32(b + 12) != UPGRADE_STATE_HEADER_LEN || get32(b + 28) != 0)
		return fail(p, -EBADMSG, "header length %u or reserved word %u is wrong",
			    get32(b + 12), get32(b + 28));
	if (p->len > p->lim->max_bytes)
		return fail(p, -E2BIG, "%zu bytes, more than %llu", p->len,
			    (unsigned long long)p->lim->max_bytes);
	*ret_body = get64(b + 16);
	if (*ret_body != p->len - UPGRADE_STATE_HEADER_LEN)
		return fail(p, -EBADMSG, "body of %llu bytes declared, %zu present",
			    (unsigned long long)*ret_body, p->len - UPGRADE_STATE_HEADER_LEN);
	*ret_n = get32(b + 24);
	if (*ret_n > p->lim->max_records)
		return fail(p, -E2BIG, "%u records, more than %u", *ret_n, p->lim->max_records);
	/* Every record takes a header: a count the body cannot hold is a lie. */
	if (*ret_n > *ret_body / UPGRADE_RECORD_HEADER_LEN)
		return fail(p, -EBADMSG, "%u records cannot fit %llu bytes", *ret_n,
			    (unsigned long long)*ret_body);
	p->st.version = version;
	return 0;
}

static int parse_all(struct parse *p)
{
	uint64_t body = 0;
	uint32_t n = 0, i;
	size_t off = UPGRADE_STATE_HEADER_LEN;
	int r;

	r = parse_header(p, &body, &n);
	if (r < 0)
		return r;
	p->st.recs = calloc(n ? n : 1, sizeof(*p->st.recs));
	if (!p->st.recs)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const struct kind_spec *k;
		uint16_t kind, nf;
		uint32_t rlen;

		if (p->len - off < UPGRADE_RECORD_HEADER_LEN)
			return fail(p, -EBADMSG, "record %u is cut short", i);
		kind = get16(p->buf + off);
		nf = get16(p->buf + off + 2);
		rlen = get32(p->buf + off + 4);
		off += UPGRADE_RECORD_HEADER_LEN;
		k = kind >= 1 && kind < _UPGRADE_REC_MAX && p->schema[kind].name ? &p->schema[kind] :
										    NULL;
		if (!k)
			return fail(p, -EBADMSG, "record %u: unknown kind %u", i, kind);
		if ((i == 0) != (kind == UPGRADE_REC_SERVER))
			return fail(p, -EBADMSG, "record %u: %s; the server record comes first, once",
				    i, k->name);
		if (rlen > p->len - off)
			return fail(p, -EBADMSG, "record %u (%s): %u bytes overrun the blob", i,
				    k->name, rlen);
		if (p->st.count[kind] >= k->max_count)
			return fail(p, -EBADMSG, "record %u: more than %u %s records", i,
				    k->max_count, k->name);
		p->st.recs[i].kind = kind;
		p->st.n_recs = i + 1;
		r = parse_fields(p, i, k, nf, p->buf + off, rlen);
		if (r < 0)
			return r;
		p->st.count[kind]++;
		off += rlen;
	}
	if (n == 0)
		return fail(p, -EBADMSG, "no server record");
	if (off != p->len)
		return fail(p, -EBADMSG, "%zu bytes after the last record", p->len - off);
	/* One owner per fd: a number named twice would be closed twice. */
	if (p->st.n_fds > 1) /* qsort must not see NULL, even for 0 elements */
		qsort(p->st.fds, p->st.n_fds, sizeof(uint32_t), cmp_u32);
	for (i = 1; i < p->st.n_fds; i++)
		if (p->st.fds[i] == p->st.fds[i - 1])
			return fail(p, -EBADMSG, "fd %u is named twice", p->st.fds[i]);
	return 0;
}

int upgrade_state_parse(const uint8_t *buf, size_t len, const struct upgrade_limits *lim,
			struct upgrade_state *ret, char *err, size_t err_size)
{
	struct upgrade_limits def;
	struct parse p = { .buf = buf, .len = len, .lim = lim, .err = err, .err_size = err_size };
	int r;

	if (!lim) {
		upgrade_limits_default(&def);
		p.lim = &def;
	}
	if (err && err_size)
		err[0] = '\0';
	r = parse_all(&p);
	if (r == -ENOMEM)
		(void)fail(&p, r, "out of memory");
	if (r < 0) {
		upgrade_state_done(&p.st);
		return r;
	}
	*ret = p.st;
	return 0;
}

void upgrade_state_done(struct upgrade_state *st)
{
	free(st->recs);
	free(st->fields);
	free(st->fds);
	memset(st, 0, sizeof(*st));
}

const struct upgrade_field *upgrade_rec_field(const struct upgrade_state *st, uint32_t rec,
					      uint16_t tag)
{
	const struct upgrade_rec *r;

	if (rec >= st->n_recs)
		return NULL;
	r = &st->recs[rec];
	/* Fields are few and ascending: a scan is as fast as a search. */
	for (uint32_t i = 0; i < r->n_fields; i++)
		if (st->fields[r->first + i].tag == tag)
			return &st->fields[r->first + i];
	return NULL;
}

uint64_t upgrade_rec_u64(const struct upgrade_state *st, uint32_t rec, uint16_t tag, uint64_t def)
{
	const struct upgrade_field *f = upgrade_rec_field(st, rec, tag);

	return f && f->type == UPGRADE_T_U64 ? get64(f->val) : def;
}

bool upgrade_rec_bool(const struct upgrade_state *st, uint32_t rec, uint16_t tag)
{
	const struct upgrade_field *f = upgrade_rec_field(st, rec, tag);

	return f && f->type == UPGRADE_T_BOOL && f->val[0] == 1;
}

int64_t upgrade_rec_num(const struct upgrade_state *st, uint32_t rec, uint16_t tag)
{
	const struct upgrade_field *f = upgrade_rec_field(st, rec, tag);

	return f && (f->type == UPGRADE_T_FD || f->type == UPGRADE_T_REF) ? (int64_t)get32(f->val) :
									     -1;
}

int upgrade_chunks_next(const struct upgrade_field *f, size_t *off, struct upgrade_chunk *ret)
{
	const uint8_t *v = f->val + *off;

	if (*off >= f->len)
		return 0;
	ret->seq = get64(v);
	ret->stream = v[8];
	ret->len = get32(v + 9);
	ret->data = v + UPGRADE_CHUNK_HEADER_LEN;
	*off += UPGRADE_CHUNK_HEADER_LEN + ret->len;
	return 1;
}
