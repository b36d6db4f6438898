/* SPDX-License-Identifier: MIT */
/*
 * The state blob read into plain structs, with the rules that span fields
 * and records (view.h). No I/O.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "view.h"

#define CG_KINDS UPGRADE_CG_KINDS
/* What one process retains at most, and the writeIds it remembers (proc.h). */
#define RETAINED_MAX (1024u * 1024u)
#define WRITE_IDS_MAX 4096u
/* A connection's fs state (src/fs): fs/watch watches, fs/watchMissing's paths, fs/open handles. */
#define CHANGE_WATCHES_MAX 16u
#define MISSING_PATHS_MAX 256u
#define FS_HANDLES_MAX 128u

struct build {
	const struct upgrade_state *st;
	struct upgrade_view v;
	uint32_t *idx;          /* record -> index in its kind's array */
	char *err;
	size_t err_size;
};

int upgrade_view_fail(char *err, size_t err_size, const char *fmt, ...)
{
	va_list ap;

	if (err && err_size) {
		va_start(ap, fmt);
		vsnprintf(err, err_size, fmt, ap);
		va_end(ap);
	}
	return -EBADMSG;
}

#define bad(b, ...) upgrade_view_fail((b)->err, (b)->err_size, __VA_ARGS__)

static const struct upgrade_field *field(struct build *b, uint32_t rec, uint16_t tag)
{
	return upgrade_rec_field(b->st, rec, tag);
}

static int fd_of(struct build *b, uint32_t rec, uint16_t tag)
{
	return (int)upgrade_rec_num(b->st, rec, tag);
}

/* Sorting helpers: byte strings, then a number, compared through an index array. */
struct key {
	const uint8_t *p;
	uint32_t len;
	uint64_t n;
	uint32_t rec;
};

static int cmp_key(const void *a, const void *b)
{
	const struct key *x = a, *y = b;
	int c;

	if (x->n != y->n)
		return x->n < y->n ? -1 : 1;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	c = x->len ? memcmp(x->p, y->p, x->len) : 0;
	return c;
}

/* Fails on the first two keys that compare equal; what names the rule. */
static int unique(struct build *b, struct key *k, uint32_t n, const char *what)
{
	if (n > 1)
		qsort(k, n, sizeof(*k), cmp_key);
	for (uint32_t i = 1; i < n; i++)
		if (cmp_key(&k[i - 1], &k[i]) == 0)
			return bad(b, "record %u: %s, as record %u", k[i].rec, what, k[i - 1].rec);
	return 0;
}

static bool uuid_form(const uint8_t *s, uint32_t len)
{
	if (len != 36)
		return false;
	for (uint32_t i = 0; i < len; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? s[i] != '-' : !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	}
	return true;
}

static int read_held(struct build *b, uint32_t rec)
{
	struct upgrade_view_held *h = &b->v.held[b->v.n_held];
	const struct upgrade_field *ix = field(b, rec, UPGRADE_HELD_INDEX);

	h->role = (enum upgrade_held_role)upgrade_rec_u64(b->st, rec, UPGRADE_HELD_ROLE, 0);
	h->fd = fd_of(b, rec, UPGRADE_HELD_FD);
	h->index = ix ? (int)upgrade_rec_u64(b->st, rec, UPGRADE_HELD_INDEX, 0) : -1;
	if ((h->role == UPGRADE_HELD_CG_V1_BASE || h->role == UPGRADE_HELD_GUARD_PORT ||
	     h->role == UPGRADE_HELD_BPF_ATTACH) != (h->index >= 0))
		return bad(b, "record %u: an index is for a v1 cgroup base, a guard port or a tracer's "
			   "attachment only, and they need one", rec);
	if (h->role == UPGRADE_HELD_BPF_ATTACH && h->index > 2)
		return bad(b, "record %u: tracer attachment %d: there are 3", rec, h->index);
	if (h->role == UPGRADE_HELD_CG_V1_BASE && h->index >= CG_KINDS)
		return bad(b, "record %u: v1 cgroup base %d: there are %d", rec, h->index, CG_KINDS);
	for (uint32_t i = 0; i < b->v.n_held; i++)
		if (b->v.held[i].role == h->role && b->v.held[i].index == h->index)
			return bad(b, "record %u: held fd role %u given twice", rec, h->role);
	b->idx[rec] = b->v.n_held++;
	return 0;
}

static int read_session(struct build *b, uint32_t rec)
{
	struct upgrade_view_session *s = &b->v.sessions[b->v.n_sessions];
	const struct upgrade_field *id = field(b, rec, UPGRADE_SESSION_ID);

	if (!uuid_form(id->val, id->len))
		return bad(b, "record %u: session id is not a UUID", rec);
	memcpy(s->id, id->val, 36);
	s->id[36] = '\0';
	s->expiry_ns = upgrade_rec_u64(b->st, rec, UPGRADE_SESSION_EXPIRY_NS, 0);
	s->conn = -1;
	b->idx[rec] = b->v.n_sessions++;
	return 0;
}

/* The retained output of p against its kind of streams and its seqs. */
static int check_retained(struct build *b, uint32_t rec, struct upgrade_view_proc *p)
{
	struct upgrade_chunk c;
	size_t off = 0;

	if (!p->retained)
		return 0;
	while (upgrade_chunks_next(p->retained, &off, &c)) {
		if (p->tty != (c.stream == UPGRADE_STREAM_PTY))
			return bad(b, "record %u: a %s process retains %s output", rec,
				   p->tty ? "PTY" : "pipe", c.stream == UPGRADE_STREAM_PTY ? "PTY" : "pipe");
		if (c.seq >= p->next_seq || (p->exited && c.seq == p->exit_seq))
			return bad(b, "record %u: chunk seq %llu is not an output's (next seq %llu)", rec,
				   (unsigned long long)c.seq, (unsigned long long)p->next_seq);
		p->retained_bytes += c.len;
		p->n_chunks++;
	}
	if (p->retained_bytes > RETAINED_MAX)
		return bad(b, "record %u: %llu bytes retained, more than %u", rec,
			   (unsigned long long)p->retained_bytes, RETAINED_MAX);
	return 0;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/*
 * Queued stdin writes: well framed (fast 0/1, an id of at most 1 KiB without
 * NUL, at least one byte of data), and only on a process that still has its
 * stdin (a pipe's write end, or a PTY's master).
 */
static int check_writes(struct build *b, uint32_t rec, struct upgrade_view_proc *p)
{
	const struct upgrade_field *f = p->writes;
	size_t off = 0;

	if (!f)
		return 0;
	if (p->closed || p->stdin_closed || (p->tty ? p->out_fd < 0 : p->stdin_fd < 0))
		return bad(b, "record %u: stdin writes queued without a stdin", rec);
	while (off < f->len) {
		uint32_t id_len, len;

		if (f->len - off < 5 || f->val[off] > 1)
			return bad(b, "record %u: writes: entry %u is malformed", rec, p->n_writes);
		id_len = le32(f->val + off + 1);
		off += 5;
		if (id_len > 1024 || id_len > f->len - off || memchr(f->val + off, 0, id_len))
			return bad(b, "record %u: writes: entry %u's id", rec, p->n_writes);
		off += id_len;
		if (f->len - off < 4)
			return bad(b, "record %u: writes: entry %u is cut short", rec, p->n_writes);
		len = le32(f->val + off);
		off += 4;
		if (len == 0 || len > f->len - off)
			return bad(b, "record %u: writes: entry %u's data", rec, p->n_writes);
		off += len;
		p->n_writes++;
	}
	return 0;
}

/* The remembered writeIds: well framed, non-empty, without NUL, at most 4 096, distinct. */
static int check_write_ids(struct build *b, uint32_t rec, struct upgrade_view_proc *p)
{
	const struct upgrade_field *f = p->write_ids;
	struct key *k;
	size_t off = 0;
	uint32_t n = 0;
	int r = 0;

	if (!f)
		return 0;
	k = calloc(WRITE_IDS_MAX, sizeof(*k));
	if (!k)
		return -ENOMEM;
	while (off < f->len) {
		uint32_t len;

		if (f->len - off < 4 || n == WRITE_IDS_MAX) {
			r = bad(b, "record %u: writeIds: %s", rec, n == WRITE_IDS_MAX ?
				"more than 4096" : "an entry is cut short");
			goto out;
		}
		len = (uint32_t)f->val[off] | (uint32_t)f->val[off + 1] << 8 |
		      (uint32_t)f->val[off + 2] << 16 | (uint32_t)f->val[off + 3] << 24;
		off += 4;
		if (len == 0 || len > f->len - off || memchr(f->val + off, 0, len)) {
			r = bad(b, "record %u: writeIds: entry %u is empty, cut short or holds a NUL",
				rec, n);
			goto out;
		}
		k[n++] = (struct key){ f->val + off, len, 0, rec };
		off += len;
	}
	p->n_write_ids = n;
	r = unique(b, k, n, "a writeId remembered twice in the same process");
out:
	free(k);
	return r;
}

static int read_proc(struct build *b, uint32_t rec)
{
	struct upgrade_view_proc *p = &b->v.procs[b->v.n_procs];
	const struct upgrade_field *id = field(b, rec, UPGRADE_PROC_ID);
	const struct upgrade_state *st = b->st;
	bool has_code = field(b, rec, UPGRADE_PROC_EXIT_CODE) != NULL;
	bool has_sig = field(b, rec, UPGRADE_PROC_TERM_SIGNAL) != NULL;
	bool has_exit_seq = field(b, rec, UPGRADE_PROC_EXIT_SEQ) != NULL;
	int r;

	p->session = b->idx[upgrade_rec_num(st, rec, UPGRADE_PROC_SESSION)];
	p->id = id->val;
	p->id_len = id->len;
	p->pid = (int)upgrade_rec_u64(st, rec, UPGRADE_PROC_PID, 0);
	p->pidfd = fd_of(b, rec, UPGRADE_PROC_PIDFD);
	p->out_fd = fd_of(b, rec, UPGRADE_PROC_OUT_FD);
	p->err_fd = fd_of(b, rec, UPGRADE_PROC_ERR_FD);
	p->stdin_fd = fd_of(b, rec, UPGRADE_PROC_STDIN_FD);
	p->tty = upgrade_rec_bool(st, rec, UPGRADE_PROC_TTY);
	p->pipe_stdin = upgrade_rec_bool(st, rec, UPGRADE_PROC_PIPE_STDIN);
	p->reaped = upgrade_rec_bool(st, rec, UPGRADE_PROC_REAPED);
	p->exited = upgrade_rec_bool(st, rec, UPGRADE_PROC_EXITED);
	p->closed = upgrade_rec_bool(st, rec, UPGRADE_PROC_CLOSED);
	p->stdin_closed = upgrade_rec_bool(st, rec, UPGRADE_PROC_STDIN_CLOSED);
	p->sandboxed = upgrade_rec_bool(st, rec, UPGRADE_PROC_SANDBOXED);
	p->timed_out = upgrade_rec_bool(st, rec, UPGRADE_PROC_TIMED_OUT);
	p->has_cg = field(b, rec, UPGRADE_PROC_CG_NUM) != NULL;
	p->cg_guard = upgrade_rec_bool(st, rec, UPGRADE_PROC_CG_GUARD);
	p->cg_num = upgrade_rec_u64(st, rec, UPGRADE_PROC_CG_NUM, 0);
	p->next_seq = upgrade_rec_u64(st, rec, UPGRADE_PROC_NEXT_SEQ, 1);
	p->exit_seq = upgrade_rec_u64(st, rec, UPGRADE_PROC_EXIT_SEQ, 0);
	p->started_ms = upgrade_rec_u64(st, rec, UPGRADE_PROC_STARTED_MS, 0);
	p->timeout_ns = upgrade_rec_u64(st, rec, UPGRADE_PROC_TIMEOUT_NS, 0);
	p->exit_code = (int)upgrade_rec_u64(st, rec, UPGRADE_PROC_EXIT_CODE, 0);
	p->term_signal = (int)upgrade_rec_u64(st, rec, UPGRADE_PROC_TERM_SIGNAL, 0);
	p->retained = field(b, rec, UPGRADE_PROC_RETAINED);
	p->write_ids = field(b, rec, UPGRADE_PROC_WRITE_IDS);
	p->has_timeout = upgrade_rec_bool(st, rec, UPGRADE_PROC_HAS_TIMEOUT);
	p->asked_limits = upgrade_rec_bool(st, rec, UPGRADE_PROC_ASKED_LIMITS);
	p->mem_limited = upgrade_rec_bool(st, rec, UPGRADE_PROC_MEM_LIMITED);
	p->oom_killed = upgrade_rec_bool(st, rec, UPGRADE_PROC_OOM_KILLED);
	p->pty_last = (int)upgrade_rec_u64(st, rec, UPGRADE_PROC_PTY_LAST, 0) - 1;
	p->writes = field(b, rec, UPGRADE_PROC_WRITES);
	r = check_writes(b, rec, p);
	if (r < 0)
		return r;
	if (p->pty_last >= 0 && !p->tty)
		return bad(b, "record %u: a PTY's last stdin byte on pipes", rec);
	if ((p->mem_limited || p->oom_killed) && !p->has_cg)
		return bad(b, "record %u: a memory limit without a cgroup leaf", rec);

	/* The life of a process (proc.c): reaped, then exited published, then closed at EOF. */
	if (has_code != p->reaped || has_sig != p->reaped)
		return bad(b, "record %u: an exit status without the reap, or a reap without it", rec);
	if (p->exited && !p->reaped)
		return bad(b, "record %u: exited before it was reaped", rec);
	if (has_exit_seq != p->exited || (p->exited && p->exit_seq >= p->next_seq))
		return bad(b, "record %u: exit seq and exited disagree (next seq %llu)", rec,
			   (unsigned long long)p->next_seq);
	if (p->closed && (!p->exited || p->out_fd >= 0 || p->err_fd >= 0))
		return bad(b, "record %u: closed with a stream open or before its exit", rec);
	if (p->pidfd >= 0 && p->reaped)
		return bad(b, "record %u: a pidfd for a reaped process", rec);
	/* A PTY's master is its stdout and its stdin; pipes: stdin only if it was asked for. */
	if (p->tty && (p->err_fd >= 0 || p->stdin_fd >= 0))
		return bad(b, "record %u: a PTY process with a stderr or stdin fd of its own", rec);
	if (p->stdin_fd >= 0 && !p->pipe_stdin)
		return bad(b, "record %u: a stdin fd without pipeStdin", rec);
	if (p->timed_out && !p->timeout_ns && !p->reaped)
		return bad(b, "record %u: timed out without the SIGKILL's deadline", rec);
	if (p->has_cg != (field(b, rec, UPGRADE_PROC_CG_GUARD) != NULL))
		return bad(b, "record %u: a cgroup number without its parent, or the reverse", rec);
	if (check_retained(b, rec, p) < 0)
		return -EBADMSG;
	r = check_write_ids(b, rec, p);
	if (r < 0)
		return r;
	r = upgrade_view_proc_sandbox(st, rec, p, b->err, b->err_size);
	if (r >= 0)
		r = upgrade_view_proc_evidence(st, rec, p, b->err, b->err_size);
	if (r < 0)
		return r;
	r = upgrade_view_proc_netproxy(st, rec, p, b->err, b->err_size);
	if (r < 0)
		return r;
	b->v.sessions[p->session].n_procs++;
	b->idx[rec] = b->v.n_procs++;
	return 0;
}

static int read_conn(struct build *b, uint32_t rec)
{
	struct upgrade_view_conn *c = &b->v.conns[b->v.n_conns];
	const struct upgrade_field *in = field(b, rec, UPGRADE_CONN_INPUT);
	const struct upgrade_field *out = field(b, rec, UPGRADE_CONN_OUTPUT);
	int64_t sess = upgrade_rec_num(b->st, rec, UPGRADE_CONN_SESSION);

	c->transport = (enum upgrade_conn_transport)upgrade_rec_u64(b->st, rec,
								     UPGRADE_CONN_TRANSPORT, 0);
	c->fd_in = fd_of(b, rec, UPGRADE_CONN_FD_IN);
	c->fd_out = fd_of(b, rec, UPGRADE_CONN_FD_OUT);
	c->session = sess >= 0 ? (int)b->idx[sess] : -1;
	c->input = in ? in->val : NULL;
	c->input_len = in ? in->len : 0;
	c->output = out ? out->val : NULL;
	c->output_len = out ? out->len : 0;
	c->initialized = upgrade_rec_bool(b->st, rec, UPGRADE_CONN_INITIALIZED);
	c->upgraded = upgrade_rec_bool(b->st, rec, UPGRADE_CONN_UPGRADED);
	c->has_missing_id = field(b, rec, UPGRADE_CONN_MISSING_ID) != NULL;
	c->missing_id = upgrade_rec_u64(b->st, rec, UPGRADE_CONN_MISSING_ID, 0);
	c->change_id = upgrade_rec_u64(b->st, rec, UPGRADE_CONN_CHANGE_ID, 0);
	if (c->transport == UPGRADE_CONN_WS && c->fd_out >= 0)
		return bad(b, "record %u: a WebSocket with a second fd", rec);
	if (c->transport == UPGRADE_CONN_STDIO && !c->upgraded)
		return bad(b, "record %u: a stdio connection before an upgrade", rec);
	if (!c->upgraded && (c->initialized || c->session >= 0))
		return bad(b, "record %u: a session or initialize before the WebSocket upgrade", rec);
	if (c->session >= 0) {
		struct upgrade_view_session *s = &b->v.sessions[c->session];

		if (s->conn >= 0)
			return bad(b, "record %u: session %s is attached to two connections", rec, s->id);
		if (s->expiry_ns != 0)
			return bad(b, "record %u: session %s is attached and in its resume window", rec,
				   s->id);
		s->conn = (int)b->v.n_conns;
	}
	for (uint32_t i = 0; c->transport == UPGRADE_CONN_STDIO && i < b->v.n_conns; i++)
		if (b->v.conns[i].transport == UPGRADE_CONN_STDIO)
			return bad(b, "record %u: a second stdio connection", rec);
	b->idx[rec] = b->v.n_conns++;
	return 0;
}

static void str_field(struct build *b, uint32_t rec, uint16_t tag, const uint8_t **ret,
		      uint32_t *ret_len)
{
	const struct upgrade_field *f = field(b, rec, tag);

	*ret = f ? f->val : NULL;
	*ret_len = f ? f->len : 0;
}

/* An absolute path without NUL (the schema bounded its length). */
static bool abs_path(const uint8_t *p, uint32_t len)
{
	return len >= 1 && p[0] == '/' && !memchr(p, 0, len);
}

/* fs/watchMissing's other missing paths: (u32 len, absolute path)*, at most 255. */
static int check_others(struct build *b, uint32_t rec, struct upgrade_view_watch *w)
{
	const struct upgrade_field *f = w->others;
	size_t off = 0;

	while (f && off < f->len) {
		uint32_t len;

		if (f->len - off < 4 || w->n_others + 1 >= MISSING_PATHS_MAX)
			return bad(b, "record %u: others: entry %u is cut short or one too many", rec,
				   w->n_others);
		len = le32(f->val + off);
		off += 4;
		if (len > f->len - off || len > 4096 || !abs_path(f->val + off, len))
			return bad(b, "record %u: others: entry %u is not an absolute path", rec,
				   w->n_others);
		off += len;
		w->n_others++;
	}
	return 0;
}

/* A file watch's name: one component (no '/', no NUL, not "." or ".."). */
static bool name_ok(const uint8_t *p, uint32_t len)
{
	return len >= 1 && !memchr(p, '/', len) && !memchr(p, 0, len) &&
	       !(len == 1 && p[0] == '.') && !(len == 2 && p[0] == '.' && p[1] == '.');
}

static int read_watch(struct build *b, uint32_t rec)
{
	struct upgrade_view_watch *w = &b->v.watches[b->v.n_watches];
	const struct upgrade_field *path = field(b, rec, UPGRADE_WATCH_PATH);
	struct upgrade_view_conn *c;
	bool has_dev = field(b, rec, UPGRADE_WATCH_DEV) != NULL;
	bool has_ino = field(b, rec, UPGRADE_WATCH_INO) != NULL;
	int r;

	w->conn = b->idx[upgrade_rec_num(b->st, rec, UPGRADE_WATCH_CONN)];
	c = &b->v.conns[w->conn];
	w->id = upgrade_rec_u64(b->st, rec, UPGRADE_WATCH_ID, 0);
	w->path = path->val;
	w->path_len = path->len;
	w->recursive = upgrade_rec_bool(b->st, rec, UPGRADE_WATCH_RECURSIVE);
	w->missing = upgrade_rec_bool(b->st, rec, UPGRADE_WATCH_MISSING);
	w->others = field(b, rec, UPGRADE_WATCH_OTHERS);
	str_field(b, rec, UPGRADE_WATCH_PRESENT, &w->present, &w->present_len);
	str_field(b, rec, UPGRADE_WATCH_ONLY, &w->only, &w->only_len);
	w->max_dirs = (uint32_t)upgrade_rec_u64(b->st, rec, UPGRADE_WATCH_MAX_DIRS, 0);
	w->max_events = (uint32_t)upgrade_rec_u64(b->st, rec, UPGRADE_WATCH_MAX_EVENTS, 0);
	w->has_ident = has_dev;
	w->dev = upgrade_rec_u64(b->st, rec, UPGRADE_WATCH_DEV, 0);
	w->ino = upgrade_rec_u64(b->st, rec, UPGRADE_WATCH_INO, 0);
	w->ended = (enum upgrade_watch_end)upgrade_rec_u64(b->st, rec, UPGRADE_WATCH_ENDED, 0);
	str_field(b, rec, UPGRADE_WATCH_QUEUED, &w->queued, &w->queued_len);
	if (!abs_path(w->path, w->path_len))
		return bad(b, "record %u: a watched path that is not absolute", rec);
	if (w->missing) {
		/* The active fs/watchMissing watch is the newest id the connection registered. */
		if (w->only || w->recursive || w->max_dirs || w->max_events || has_dev || has_ino ||
		    w->ended || w->queued)
			return bad(b, "record %u: an fs/watchMissing watch with fs/watch's fields", rec);
		if (!c->has_missing_id || w->id != c->missing_id || c->n_missing++)
			return bad(b, "record %u: fs/watchMissing watch %llu is not its connection's "
				   "newest, or not its only one", rec, (unsigned long long)w->id);
		if (w->present && !abs_path(w->present, w->present_len))
			return bad(b, "record %u: a present path that is not absolute", rec);
		r = check_others(b, rec, w);
		if (r < 0)
			return r;
	} else {
		if (w->others || w->present)
			return bad(b, "record %u: an fs/watch watch with fs/watchMissing's paths", rec);
		/* The JSON itself is parsed by the new binary before anything of it is sent. */
		if (w->queued && (w->queued[0] != '{' || w->queued[w->queued_len - 1] != ',' ||
				  memchr(w->queued, 0, w->queued_len)))
			return bad(b, "record %u: queued events that are not objects each followed by "
				   "a comma", rec);
		if (w->only && (w->recursive || !name_ok(w->only, w->only_len)))
			return bad(b, "record %u: a file watch's name is one component, not recursive",
				   rec);
		if (w->id < 1 || w->id > c->change_id)
			return bad(b, "record %u: fs/watch watch %llu was not handed out (last %llu)", rec,
				   (unsigned long long)w->id, (unsigned long long)c->change_id);
		if (++c->n_changes > CHANGE_WATCHES_MAX)
			return bad(b, "record %u: more than %u fs/watch watches on a connection", rec,
				   CHANGE_WATCHES_MAX);
		/* A live watch knows its root directory; an ended one has none left. */
		if (has_dev != has_ino || has_dev == (w->ended != 0))
			return bad(b, "record %u: a root's identity exactly when the watch has not ended",
				   rec);
	}
	b->idx[rec] = b->v.n_watches++;
	return 0;
}

static int read_fs_handle(struct build *b, uint32_t rec)
{
	struct upgrade_view_fs_handle *h = &b->v.fs_handles[b->v.n_fs_handles];
	const struct upgrade_field *id = field(b, rec, UPGRADE_FS_HANDLE_ID);

	h->conn = b->idx[upgrade_rec_num(b->st, rec, UPGRADE_FS_HANDLE_CONN)];
	h->id = id->val;
	h->id_len = id->len;
	h->fd = fd_of(b, rec, UPGRADE_FS_HANDLE_FD);
	h->writable = upgrade_rec_bool(b->st, rec, UPGRADE_FS_HANDLE_WRITABLE);
	if (++b->v.conns[h->conn].n_handles > FS_HANDLES_MAX)
		return bad(b, "record %u: more than %u fs/open handles on a connection", rec,
			   FS_HANDLES_MAX);
	b->idx[rec] = b->v.n_fs_handles++;
	return 0;
}

static int read_cgroups(struct build *b, uint32_t rec)
{
	struct upgrade_view_cgroups *c = &b->v.cgroups;

	c->present = true;
	c->enabled = upgrade_rec_bool(b->st, rec, UPGRADE_CGROUPS_ENABLED);
	c->has_kill = upgrade_rec_bool(b->st, rec, UPGRADE_CGROUPS_HAS_KILL);
	str_field(b, rec, UPGRADE_CGROUPS_BASE, &c->base, &c->base_len);
	str_field(b, rec, UPGRADE_CGROUPS_SERVER_CG, &c->server_cg, &c->server_cg_len);
	c->seq = upgrade_rec_u64(b->st, rec, UPGRADE_CGROUPS_SEQ, 0);
	c->supervisor_pid = (int)upgrade_rec_u64(b->st, rec, UPGRADE_CGROUPS_SUPERVISOR, 0);
	for (int k = 0; k < CG_KINDS; k++) {
		c->where[k] = (enum upgrade_cg_where)upgrade_rec_u64(
			b->st, rec, (uint16_t)(UPGRADE_CGROUPS_WHERE_PIDS + k), 0);
		str_field(b, rec, (uint16_t)(UPGRADE_CGROUPS_V1_PIDS + k), &c->v1_base[k],
			  &c->v1_base_len[k]);
		if ((c->where[k] == UPGRADE_CG_V1) != (c->v1_base[k] != NULL))
			return bad(b, "record %u: controller %d is in a v1 hierarchy exactly when it "
				   "has a v1 base", rec, k);
		if (c->where[k] == UPGRADE_CG_V2 && !c->enabled)
			return bad(b, "record %u: controller %d in cgroup v2 without v2 leaves", rec, k);
	}
	if (c->enabled != (c->base != NULL))
		return bad(b, "record %u: v2 leaves exactly when there is a base", rec);
	if ((c->base && c->base[0] != '/') || (c->server_cg && c->server_cg[0] != '/'))
		return bad(b, "record %u: a cgroup path that is not absolute", rec);
	return 0;
}

/* The held fds the cgroups' layout names are there, and only those. */
static int check_cgroups_fds(struct build *b)
{
	const struct upgrade_view_cgroups *c = &b->v.cgroups;

	if ((upgrade_view_held_fd(&b->v, UPGRADE_HELD_CG_BASE, -1) >= 0) != (c->present && c->enabled))
		return bad(b, "the cgroup base's fd and its layout disagree");
	if ((upgrade_view_held_fd(&b->v, UPGRADE_HELD_SUPERVISOR, -1) >= 0) !=
	    (c->present && c->supervisor_pid > 0))
		return bad(b, "the supervisor's pipe and its pid disagree");
	for (int k = 0; k < CG_KINDS; k++)
		if ((upgrade_view_held_fd(&b->v, UPGRADE_HELD_CG_V1_BASE, k) >= 0) !=
		    (c->present && c->where[k] == UPGRADE_CG_V1))
			return bad(b, "v1 controller %d: its base's fd and the layout disagree", k);
	return 0;
}

static int read_record(struct build *b, uint32_t rec)
{
	const struct upgrade_state *st = b->st;
	const struct upgrade_field *f;

	switch ((enum upgrade_kind)st->recs[rec].kind) {
	case UPGRADE_REC_SERVER:
		f = field(b, rec, UPGRADE_SERVER_VERSION);
		b->v.sender_version = f->val;
		b->v.sender_version_len = f->len;
		b->v.start_ms = upgrade_rec_u64(st, rec, UPGRADE_SERVER_START_MS, 0);
		b->v.upgrades = upgrade_rec_u64(st, rec, UPGRADE_SERVER_UPGRADES, 0);
		b->v.next_cg = upgrade_rec_u64(st, rec, UPGRADE_SERVER_NEXT_CG, 0);
		b->v.quiesce_ns = upgrade_rec_u64(st, rec, UPGRADE_SERVER_QUIESCE_NS, 0);
		f = field(b, rec, UPGRADE_SERVER_RELAY_IDENTITY);
		b->v.relay_identity = f ? f->val : NULL;
		return 0;
	case UPGRADE_REC_METRIC:
		f = field(b, rec, UPGRADE_METRIC_NAME);
		b->v.metrics[b->v.n_metrics].name = f->val;
		b->v.metrics[b->v.n_metrics].name_len = f->len;
		b->v.metrics[b->v.n_metrics].value = upgrade_rec_u64(st, rec, UPGRADE_METRIC_VALUE, 0);
		b->idx[rec] = b->v.n_metrics++;
		return 0;
	case UPGRADE_REC_HELD_FD:
		return read_held(b, rec);
	case UPGRADE_REC_LISTENER:
		f = field(b, rec, UPGRADE_LISTENER_URL);
		b->v.has_listener = true;
		b->v.listener_fd = fd_of(b, rec, UPGRADE_LISTENER_FD);
		b->v.listener_url = f->val;
		b->v.listener_url_len = f->len;
		b->v.listener_tls = upgrade_rec_bool(st, rec, UPGRADE_LISTENER_TLS);
		return 0;
	case UPGRADE_REC_SESSION:
		return read_session(b, rec);
	case UPGRADE_REC_PROC:
		return read_proc(b, rec);
	case UPGRADE_REC_CONN:
		return read_conn(b, rec);
	case UPGRADE_REC_WATCH:
		return read_watch(b, rec);
	case UPGRADE_REC_CGROUPS:
		return read_cgroups(b, rec);
	case UPGRADE_REC_FS_HANDLE:
		return read_fs_handle(b, rec);
	case UPGRADE_REC_SYNTH:
		return upgrade_view_read_synth(st, rec, &b->v, b->err, b->err_size);
	case UPGRADE_REC_EVIDENCE:
		return upgrade_view_read_evidence(st, rec, &b->v, b->err, b->err_size);
	case _UPGRADE_REC_MAX:
		break;
	}
	return bad(b, "record %u: unknown kind", rec);
}

/* Names, ids and pids that must be unique, checked by sorting. */
static int check_unique(struct build *b)
{
	const struct upgrade_view *v = &b->v;
	uint32_t n = MAX(MAX(MAX(v->n_metrics, v->n_sessions), MAX(v->n_procs, v->n_watches)),
			 v->n_fs_handles), j;
	struct key *k = calloc(n ? n : 1, sizeof(*k));
	int r = 0;

	if (!k)
		return -ENOMEM;
	j = 0;
	for (uint32_t rec = 0; rec < b->st->n_recs; rec++)
		if (b->st->recs[rec].kind == UPGRADE_REC_METRIC)
			k[j++] = (struct key){ v->metrics[b->idx[rec]].name,
					       v->metrics[b->idx[rec]].name_len, 0, rec };
	r = unique(b, k, v->n_metrics, "the same metric");
	for (uint32_t rec = 0, i = 0; r >= 0 && rec < b->st->n_recs; rec++)
		if (b->st->recs[rec].kind == UPGRADE_REC_SESSION)
			k[i++] = (struct key){ (const uint8_t *)v->sessions[b->idx[rec]].id, 36, 0, rec };
	if (r >= 0)
		r = unique(b, k, v->n_sessions, "the same session id");
	for (uint32_t rec = 0, i = 0; r >= 0 && rec < b->st->n_recs; rec++)
		if (b->st->recs[rec].kind == UPGRADE_REC_PROC) {
			const struct upgrade_view_proc *p = &v->procs[b->idx[rec]];

			k[i++] = (struct key){ p->id, p->id_len, p->session, rec };
		}
	if (r >= 0)
		r = unique(b, k, v->n_procs, "the same processId in the same session");
	for (uint32_t rec = 0, i = 0; r >= 0 && rec < b->st->n_recs; rec++)
		if (b->st->recs[rec].kind == UPGRADE_REC_PROC)
			k[i++] = (struct key){ NULL, 0, (uint64_t)v->procs[b->idx[rec]].pid, rec };
	if (r >= 0)
		r = unique(b, k, v->n_procs, "the same pid");
	/* fs/watch's ids per connection (fs/watchMissing's: one watch each, read_watch checked). */
	j = 0;
	for (uint32_t rec = 0; r >= 0 && rec < b->st->n_recs; rec++)
		if (b->st->recs[rec].kind == UPGRADE_REC_WATCH && !v->watches[b->idx[rec]].missing)
			k[j++] = (struct key){ field(b, rec, UPGRADE_WATCH_ID)->val, 8,
					       v->watches[b->idx[rec]].conn, rec };
	if (r >= 0)
		r = unique(b, k, j, "the same fs/watch watchId on the same connection");
	for (uint32_t rec = 0, i = 0; r >= 0 && rec < b->st->n_recs; rec++)
		if (b->st->recs[rec].kind == UPGRADE_REC_FS_HANDLE) {
			const struct upgrade_view_fs_handle *h = &v->fs_handles[b->idx[rec]];

			k[i++] = (struct key){ h->id, h->id_len, h->conn, rec };
		}
	if (r >= 0)
		r = unique(b, k, v->n_fs_handles, "the same handleId on the same connection");
	free(k);
	return r;
}

int upgrade_view_build(const struct upgrade_state *st, struct upgrade_view *ret, char *err,
		       size_t err_size)
{
	struct build b = { .st = st, .err = err, .err_size = err_size };
	int r = -ENOMEM;

	if (err && err_size)
		err[0] = '\0';
	b.v.listener_fd = -1;
	b.idx = calloc(st->n_recs ? st->n_recs : 1, sizeof(*b.idx));
	b.v.held = calloc(st->count[UPGRADE_REC_HELD_FD] + 1, sizeof(*b.v.held));
	b.v.sessions = calloc(st->count[UPGRADE_REC_SESSION] + 1, sizeof(*b.v.sessions));
	b.v.procs = calloc(st->count[UPGRADE_REC_PROC] + 1, sizeof(*b.v.procs));
	b.v.conns = calloc(st->count[UPGRADE_REC_CONN] + 1, sizeof(*b.v.conns));
	b.v.watches = calloc(st->count[UPGRADE_REC_WATCH] + 1, sizeof(*b.v.watches));
	b.v.metrics = calloc(st->count[UPGRADE_REC_METRIC] + 1, sizeof(*b.v.metrics));
	b.v.fs_handles = calloc(st->count[UPGRADE_REC_FS_HANDLE] + 1, sizeof(*b.v.fs_handles));
	if (!b.idx || !b.v.held || !b.v.sessions || !b.v.procs || !b.v.conns || !b.v.watches ||
	    !b.v.metrics || !b.v.fs_handles)
		goto out;
	for (uint32_t rec = 0; rec < st->n_recs; rec++) {
		r = read_record(&b, rec);
		if (r < 0)
			goto out;
	}
	r = check_unique(&b);
	if (r >= 0)
		r = check_cgroups_fds(&b);
	if (r >= 0)
		r = upgrade_view_check_synth(st, &b.v, err, err_size);
	if (r >= 0)
		r = upgrade_view_check_evidence(&b.v, err, err_size);
out:
	free(b.idx);
	if (r == -ENOMEM && err && err_size)
		snprintf(err, err_size, "out of memory");
	if (r < 0) {
		upgrade_view_done(&b.v);
		return r;
	}
	*ret = b.v;
	return 0;
}

void upgrade_view_done(struct upgrade_view *v)
{
	free(v->held);
	free(v->sessions);
	free(v->procs);
	free(v->conns);
	free(v->watches);
	free(v->fs_handles);
	free(v->metrics);
	free(v->synth);
	memset(v, 0, sizeof(*v));
	v->listener_fd = -1;
}

int upgrade_view_held_fd(const struct upgrade_view *v, enum upgrade_held_role role, int index)
{
	for (uint32_t i = 0; i < v->n_held; i++)
		if (v->held[i].role == role && v->held[i].index == index)
			return v->held[i].fd;
	return -1;
}
