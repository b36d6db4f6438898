/* SPDX-License-Identifier: MIT */
/*
 * The state blob of a running server (docs/UPGRADE.md, SERIALIZE): the
 * server, its counters, the fds that must survive, the listener, sessions,
 * processes with their retained output, and connections, read from the live
 * objects. Reads only: what the objects hold in flight (a read or write not
 * completed) is QUIESCE's business, before this runs for a real hand-over.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "config.h"
#include "conn-tls.h"
#include "conn.h"
#include "netguard.h"
#include "proc-internal.h" /* struct proc_write: the queued stdin writes */
#include "proc.h"
#include "session.h"
#include "state.h"
#include "upgrade-cgroups.h"
#include "upgrade-internal.h"
#include "view.h"

/* The counters of struct server_metrics by a stable name (metrics.h), for the METRIC records. */
#define M(field) { #field, offsetof(struct server_metrics, field), 1 }
#define MA(field, n) { #field, offsetof(struct server_metrics, field), n }
static const struct {
	const char *name;
	size_t off;
	unsigned n; /* an array of n counters: name.0, name.1, ... */
} metrics[] = {
	M(connections_accepted), M(ws_upgrades), M(http_responses), M(auth_failures),
	M(sessions_created), M(sessions_resumed), M(spawns), M(spawn_failures),
	M(sandboxed_spawns), M(sandbox_denied), M(oom_kills), M(timeouts), M(exits),
	MA(exit_buckets, SERVER_METRICS_N_EXIT_BUCKETS), M(exit_ms_sum),
	MA(output_bytes, SERVER_METRICS_N_STREAMS), M(buf_exhausted), M(proxy_connections),
	M(proxy_allowed), MA(proxy_refused, SERVER_METRICS_N_PROXY_REASONS), M(proxy_bytes_up),
	M(proxy_bytes_down),
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void put_metrics(struct upgrade_writer *w, const struct server_metrics *m)
{
	for (size_t i = 0; i < ELEMENTSOF(metrics); i++)
		for (unsigned j = 0; j < metrics[i].n; j++) {
			const uint64_t *v = (const uint64_t *)((const char *)m + metrics[i].off) + j;
			char name[64];

			if (metrics[i].n == 1)
				snprintf(name, sizeof(name), "%s", metrics[i].name);
			else
				snprintf(name, sizeof(name), "%s.%u", metrics[i].name, j);
			upgrade_writer_begin(w, UPGRADE_REC_METRIC);
			upgrade_writer_str(w, UPGRADE_METRIC_NAME, name);
			upgrade_writer_u64(w, UPGRADE_METRIC_VALUE, *v);
			upgrade_writer_end(w);
		}
}

static void put_held(struct upgrade_writer *w, struct upgrade_collected *c,
		     enum upgrade_held_role role, int fd, int index)
{
	c->fds += upgrade_writer_held(w, role, fd, index);
}

void upgrade_addr_of(int fd, bool peer, char *host, size_t host_size, unsigned *ret_port)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	snprintf(host, host_size, "?");
	*ret_port = 0;
	if ((peer ? getpeername(fd, (struct sockaddr *)&ss, &len)
		  : getsockname(fd, (struct sockaddr *)&ss, &len)) < 0)
		return;
	if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;

		inet_ntop(AF_INET6, &a->sin6_addr, host, (socklen_t)host_size);
		*ret_port = ntohs(a->sin6_port);
	} else if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &a->sin_addr, host, (socklen_t)host_size);
		*ret_port = ntohs(a->sin_port);
	}
}

/* The URL the listener was printed as (listener.c), from its bound address. */
static void listener_url(const struct server *s, char *out, size_t size)
{
	char host[INET6_ADDRSTRLEN];
	unsigned port;

	upgrade_addr_of(s->listen_fd, false, host, sizeof(host), &port);
	snprintf(out, size, strchr(host, ':') ? "%s://[%s]:%u" : "%s://%s:%u",
		 conn_tls_current() ? "wss" : "ws", host, port);
}

static void put_server(struct upgrade_writer *w, struct upgrade_collected *c,
		       const struct server *s, uint64_t upgrades, uint64_t quiesce_ns)
{
	upgrade_writer_begin(w, UPGRADE_REC_SERVER);
	upgrade_writer_str(w, UPGRADE_SERVER_VERSION, UEXEC_VERSION);
	upgrade_writer_u64(w, UPGRADE_SERVER_START_MS, s->metrics.start_time_ms);
	upgrade_writer_u64(w, UPGRADE_SERVER_UPGRADES, upgrades);
	upgrade_writer_u64(w, UPGRADE_SERVER_NEXT_CG, s->cgroups.seq);
	if (quiesce_ns)
		upgrade_writer_u64(w, UPGRADE_SERVER_QUIESCE_NS, quiesce_ns);
	upgrade_put_relay_identity(w, s); /* remote mode (remote.c) */
	upgrade_writer_end(w);
	put_metrics(w, &s->metrics);
	c->fds += upgrade_put_cgroups(w, &s->cgroups);
	if (s->guard) {
		int held[16];
		size_t n = netguard_held_fds(s->guard, held, ELEMENTSOF(held));

		put_held(w, c, UPGRADE_HELD_GUARD, netguard_cgroup_fd(s->guard), -1);
		for (size_t i = 0; i < n; i++)
			put_held(w, c, UPGRADE_HELD_GUARD_PORT, held[i], (int)i);
	}
	if (s->listen_fd >= 0) {
		char url[96];

		listener_url(s, url, sizeof(url));
		upgrade_writer_begin(w, UPGRADE_REC_LISTENER);
		upgrade_writer_fd(w, UPGRADE_LISTENER_FD, s->listen_fd);
		upgrade_writer_str(w, UPGRADE_LISTENER_URL, url);
		upgrade_writer_bool(w, UPGRADE_LISTENER_TLS, conn_tls_current() != NULL);
		upgrade_writer_end(w);
		c->fds++;
	}
}

/* TLS and relay-carried connections close and let their clients resume (UPGRADE.md). */
static bool conn_handed(const struct conn *cn)
{
	return !cn->tls && cn->transport != CONN_CARRIED && cn->state != CONN_CLOSING &&
	       cn->state != CONN_DEAD && cn->fd_in >= 0;
}

/* The remembered writeIds, oldest first, as (u32 len, bytes)* (proc-rw.c's FIFO ring). */
static void put_write_ids(struct upgrade_writer *w, const struct proc *p)
{
	size_t n = 0, off = 0;
	uint8_t *buf;

	if (!p->write_id_ring || !p->write_id_count)
		return;
	for (size_t i = 0; i < p->write_id_count; i++)
		n += 4 + strlen(p->write_id_ring[(p->write_id_head + i) % PROC_WRITE_IDS]);
	buf = malloc(n);
	if (!buf) {
		w->error = w->error ? w->error : -ENOMEM;
		return;
	}
	for (size_t i = 0; i < p->write_id_count; i++) {
		const char *id = p->write_id_ring[(p->write_id_head + i) % PROC_WRITE_IDS];
		uint32_t len = (uint32_t)strlen(id);

		for (int j = 0; j < 4; j++)
			buf[off + (size_t)j] = (uint8_t)(len >> (8 * j));
		memcpy(buf + off + 4, id, len);
		off += 4 + len;
	}
	upgrade_writer_bytes(w, UPGRADE_PROC_WRITE_IDS, buf, n);
	free(buf);
}

static int le32_put(struct buf *b, uint32_t v)
{
	uint8_t x[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };

	return buf_append(b, x, 4);
}

/*
 * The queued stdin writes (proc-rw.c), oldest first: what is left of each
 * (QUIESCE cancelled the one in flight; a part written is gone from it) and
 * the reply it owes, to a connection that is handed over (else nobody).
 */
static void put_writes(struct upgrade_writer *w, const struct proc *p)
{
	struct proc_write *pw;
	struct buf b = { 0 };
	int err = 0;

	list_for_each_entry(pw, &p->writes, plink) {
		char *id = NULL;
		uint8_t fast = pw->fast;
		size_t id_len;

		if (!pw->orphaned && pw->pend.conn && conn_handed(pw->pend.conn) && pw->pend.id)
			id = json_dumps(pw->pend.id, JSON_ENCODE_ANY | JSON_COMPACT);
		id_len = id ? strlen(id) : 0;
		if (buf_append(&b, &fast, 1) < 0 || le32_put(&b, (uint32_t)id_len) < 0 ||
		    buf_append(&b, id ? id : "", id_len) < 0 ||
		    le32_put(&b, (uint32_t)(pw->len - pw->off)) < 0 ||
		    buf_append(&b, pw->data + pw->off, pw->len - pw->off) < 0)
			err = -ENOMEM;
		free(id);
	}
	if (err)
		w->error = w->error ? w->error : err;
	else if (b.len)
		upgrade_writer_bytes(w, UPGRADE_PROC_WRITES, b.data, b.len);
	buf_done(&b);
}

static void put_proc(struct upgrade_writer *w, struct upgrade_collected *c, const struct proc *p,
		     uint32_t sess_rec)
{
	int out_fd = -1, err_fd = -1;
	struct proc_chunk *ch;

	for (unsigned i = 0; i < p->n_streams; i++) {
		const struct proc_stream *st = &p->streams[i];

		if (st->eof || st->fd < 0)
			continue;
		if (st->kind == STREAM_STDERR)
			err_fd = st->fd;
		else
			out_fd = st->fd;
	}
	upgrade_writer_begin(w, UPGRADE_REC_PROC);
	upgrade_writer_ref(w, UPGRADE_PROC_SESSION, sess_rec);
	upgrade_writer_bytes(w, UPGRADE_PROC_ID, p->id, p->id_len);
	upgrade_writer_u64(w, UPGRADE_PROC_PID, (uint64_t)p->pid);
	if (p->pidfd >= 0)
		upgrade_writer_fd(w, UPGRADE_PROC_PIDFD, p->pidfd);
	upgrade_writer_bool(w, UPGRADE_PROC_TTY, p->tty);
	upgrade_writer_bool(w, UPGRADE_PROC_PIPE_STDIN, p->pipe_stdin);
	if (out_fd >= 0)
		upgrade_writer_fd(w, UPGRADE_PROC_OUT_FD, out_fd);
	if (err_fd >= 0)
		upgrade_writer_fd(w, UPGRADE_PROC_ERR_FD, err_fd);
	/* A PTY's stdin is its master, named once (as stdoutFd). */
	if (p->stdin_fd >= 0 && p->stdin_fd != out_fd)
		upgrade_writer_fd(w, UPGRADE_PROC_STDIN_FD, p->stdin_fd);
	upgrade_writer_u64(w, UPGRADE_PROC_NEXT_SEQ, p->next_seq);
	if (!list_empty(&p->chunks)) {
		upgrade_writer_chunks_begin(w, UPGRADE_PROC_RETAINED);
		list_for_each_entry(ch, &p->chunks, link)
			upgrade_writer_chunk(w, ch->seq, ch->stream, ch->data, ch->len);
		upgrade_writer_chunks_end(w);
	}
	upgrade_writer_bool(w, UPGRADE_PROC_REAPED, p->reaped);
	upgrade_writer_bool(w, UPGRADE_PROC_EXITED, p->exited);
	if (p->reaped) {
		upgrade_writer_u64(w, UPGRADE_PROC_EXIT_CODE, (uint64_t)(unsigned)p->exit_code);
		upgrade_writer_u64(w, UPGRADE_PROC_TERM_SIGNAL, (uint64_t)(unsigned)p->term_signal);
	}
	if (p->exited)
		upgrade_writer_u64(w, UPGRADE_PROC_EXIT_SEQ, p->exit_seq);
	upgrade_writer_bool(w, UPGRADE_PROC_CLOSED, p->closed);
	upgrade_writer_u64(w, UPGRADE_PROC_STARTED_MS, p->started_at_ms);
	if (p->has_cg) {
		upgrade_writer_bool(w, UPGRADE_PROC_CG_GUARD, p->cg.parent_fd != p->sess->srv->cgroups.base_fd);
		upgrade_writer_u64(w, UPGRADE_PROC_CG_NUM, strtoull(p->cg.name + 1, NULL, 10));
	}
	/* timeoutMs: the armed stage's end (SIGTERM's, or once timed out SIGKILL's). */
	if (p->has_timeout && p->timeout.armed && !p->closed)
		upgrade_writer_u64(w, UPGRADE_PROC_TIMEOUT_NS, p->timeout.deadline_ns);
	upgrade_writer_bool(w, UPGRADE_PROC_STDIN_CLOSED, p->stdin_closed);
	upgrade_writer_bool(w, UPGRADE_PROC_SANDBOXED, p->sandboxed);
	upgrade_writer_bool(w, UPGRADE_PROC_TIMED_OUT, p->timed_out);
	put_write_ids(w, p);
	upgrade_writer_bool(w, UPGRADE_PROC_HAS_TIMEOUT, p->has_timeout);
	upgrade_writer_bool(w, UPGRADE_PROC_ASKED_LIMITS, p->asked_limits);
	upgrade_writer_bool(w, UPGRADE_PROC_MEM_LIMITED, p->has_cg && p->cg.memory_limited);
	upgrade_writer_bool(w, UPGRADE_PROC_OOM_KILLED, p->oom_killed);
	if (p->tty && p->pty_wrote)
		upgrade_writer_u64(w, UPGRADE_PROC_PTY_LAST, (uint64_t)p->pty_last_byte + 1);
	put_writes(w, p);
	upgrade_put_proc_sandbox(w, p);
	upgrade_put_proc_evidence(w, p);
	upgrade_put_proc_netproxy(w, c, p);
	upgrade_writer_end(w);
	c->procs++;
	c->retained_bytes += p->retained_bytes;
	c->fds += (p->pidfd >= 0) + (out_fd >= 0) + (err_fd >= 0) +
		  (p->stdin_fd >= 0 && p->stdin_fd != out_fd);
}

/* The index of the SESSION record of ss, or UINT32_MAX (not handed over). */
static uint32_t session_rec(const struct session *ss, struct session *const *order, uint32_t n,
			    const uint32_t *recs)
{
	for (uint32_t i = 0; i < n; i++)
		if (order[i] == ss)
			return recs[i];
	return UINT32_MAX;
}

static void put_conn(struct upgrade_writer *w, struct upgrade_collected *c, struct conn *cn,
		     uint32_t sess_rec)
{
	uint32_t rec = w->n_recs;
	struct outchunk *o;
	size_t out = 0;

	if (!conn_handed(cn)) {
		c->conns_closed++;
		return;
	}
	upgrade_writer_begin(w, UPGRADE_REC_CONN);
	upgrade_writer_u64(w, UPGRADE_CONN_TRANSPORT,
			   cn->transport == CONN_STDIO ? UPGRADE_CONN_STDIO : UPGRADE_CONN_WS);
	upgrade_writer_fd(w, UPGRADE_CONN_FD_IN, cn->fd_in);
	if (cn->fd_out >= 0 && cn->fd_out != cn->fd_in)
		upgrade_writer_fd(w, UPGRADE_CONN_FD_OUT, cn->fd_out);
	if (sess_rec != UINT32_MAX)
		upgrade_writer_ref(w, UPGRADE_CONN_SESSION, sess_rec);
	if (cn->in.len)
		upgrade_writer_bytes(w, UPGRADE_CONN_INPUT, cn->in.data, cn->in.len);
	list_for_each_entry(o, &cn->outq, link)
		out += o->len - o->off;
	if (out) {
		/* One field: the queued frames' unsent bytes, in order. */
		uint8_t *buf = malloc(out), *p = buf;

		if (!buf) {
			w->error = w->error ? w->error : -ENOMEM;
			return;
		}
		list_for_each_entry(o, &cn->outq, link) {
			memcpy(p, o->data + o->off, o->len - o->off);
			p += o->len - o->off;
		}
		upgrade_writer_bytes(w, UPGRADE_CONN_OUTPUT, buf, out);
		free(buf);
	}
	upgrade_writer_bool(w, UPGRADE_CONN_INITIALIZED, cn->initialized);
	upgrade_writer_bool(w, UPGRADE_CONN_UPGRADED, cn->state != CONN_HTTP);
	upgrade_put_conn_fs_ids(w, cn);
	upgrade_writer_end(w);
	upgrade_put_conn_fs(w, c, cn, rec);
	c->conns++;
	c->fds += 1 + (cn->fd_out >= 0 && cn->fd_out != cn->fd_in);
	c->queued_bytes += out;
}

/*
 * The blob's size, near enough that the memfd is made and faulted in once:
 * retained output and queued bytes dominate; records cost a few hundred bytes.
 */
static size_t size_hint(struct server *s)
{
	size_t n = 64 << 10;
	struct session *ss;
	struct conn *cn;
	struct proc *p;

	list_for_each_entry(ss, &s->sessions, link) {
		n += 256;
		list_for_each_entry(p, &ss->procs_list, link) {
			struct proc_write *pw;

			n += 512 + p->id_len + p->retained_bytes +
			     (size_t)p->n_chunks * UPGRADE_CHUNK_HEADER_LEN;
			list_for_each_entry(pw, &p->writes, plink)
				n += 64 + pw->len - pw->off;
		}
	}
	list_for_each_entry(cn, &s->conns, link)
		n += 256 + cn->in.len + cn->out_bytes;
	return n;
}

int upgrade_collect(struct server *s, uint64_t upgrades, uint64_t quiesce_ns,
		    struct upgrade_collected *c)
{
	struct session **order = NULL, *ss;
	uint32_t *recs = NULL, n = 0, i = 0;
	uint64_t now = mono_ns();
	struct upgrade_writer writer, *w = &writer;
	struct conn *cn;
	int r;

	memset(c, 0, sizeof(*c));
	r = upgrade_writer_init_memfd(w, UPGRADE_STATE_VERSION, size_hint(s));
	if (r < 0)
		return r;
	put_server(w, c, s, upgrades, quiesce_ns);
	upgrade_put_synth(w, c);
	c->fds += upgrade_put_evidence(w);
	list_for_each_entry(ss, &s->sessions, link)
		n++;
	order = calloc(n ? n : 1, sizeof(*order));
	recs = calloc(n ? n : 1, sizeof(*recs));
	if (!order || !recs) {
		r = -ENOMEM;
		goto out;
	}
	list_for_each_entry(ss, &s->sessions, link) {
		struct proc *p;

		if (ss->expired)
			continue; /* killed already: nothing a client can resume */
		order[i] = ss;
		recs[i] = w->n_recs; /* the index the next record gets: references name it */
		upgrade_writer_begin(w, UPGRADE_REC_SESSION);
		upgrade_writer_str(w, UPGRADE_SESSION_ID, ss->id);
		/*
		 * A detached session's window ends when its timer would have fired; one
		 * whose connection closes at the execve (TLS) gets a whole window, as
		 * at a disconnection.
		 */
		upgrade_writer_u64(w, UPGRADE_SESSION_EXPIRY_NS,
				   ss->conn && conn_handed(ss->conn) ? 0 :
				   !ss->conn && ss->expiry.armed ? ss->expiry.deadline_ns :
				   now + s->cfg.resume_window_ms * 1000000u);
		upgrade_writer_end(w);
		c->sessions++;
		list_for_each_entry(p, &ss->procs_list, link)
			put_proc(w, c, p, recs[i]);
		i++;
	}
	list_for_each_entry(cn, &s->conns, link)
		put_conn(w, c, cn, cn->sess ? session_rec(cn->sess, order, i, recs) : UINT32_MAX);
	r = upgrade_writer_finish(w);
	c->records = w->n_recs;
	c->bytes = w->b.len;
	if (r >= 0)
		r = upgrade_writer_seal(w);
out:
	upgrade_writer_done(w);
	free(order);
	free(recs);
	return r;
}

void upgrade_metrics_from_view(struct server_metrics *m, const struct upgrade_view *v)
{
	for (uint32_t k = 0; k < v->n_metrics; k++)
		for (size_t i = 0; i < ELEMENTSOF(metrics); i++)
			for (unsigned j = 0; j < metrics[i].n; j++) {
				char name[64];

				if (metrics[i].n == 1)
					snprintf(name, sizeof(name), "%s", metrics[i].name);
				else
					snprintf(name, sizeof(name), "%s.%u", metrics[i].name, j);
				/* A counter this binary does not know is dropped: it cannot show it. */
				if (strlen(name) == v->metrics[k].name_len &&
				    memcmp(name, v->metrics[k].name, v->metrics[k].name_len) == 0)
					*((uint64_t *)((char *)m + metrics[i].off) + j) = v->metrics[k].value;
			}
}
