/* SPDX-License-Identifier: MIT */
/*
 * RESTORE's sessions and processes (docs/UPGRADE.md): each detached session
 * of the view becomes a session again with what was left of its resume
 * window, and each of its processes a struct proc around the fds handed over
 * (pipe read ends or the PTY master, the stdin write end, the pidfd), with
 * its seq counter, retained output, exit state, remembered writeIds, cgroup
 * leaf and timeoutMs deadline. Then the streams are read and the exit waited
 * for again, as QUIESCE's resume would have: a child that exited during the
 * hand-over is a zombie still, reaped now and reported with its real status.
 * Runs once the ring and its buffers exist, before the loop's first turn.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "conn.h"
#include "log.h"
#include "netguard.h"
#include "proc-internal.h" /* proc_chunk_append(): retained output, as proc.c keeps it */
#include "proc.h"
#include "session.h"
#include "upgrade-internal.h"
#include "view.h"

static uint64_t clock_ms(clockid_t id)
{
	struct timespec ts;

	(void)clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC deadline to a timer's delay from now (0: already due). */
static uint64_t ms_until(uint64_t deadline_ns)
{
	uint64_t now = mono_ns();

	return deadline_ns > now ? (deadline_ns - now + 999999u) / 1000000u : 0;
}

/* A provided buffer came back after -ENOBUFS: read again (proc.c's own waiter is static). */
static void on_bufs_available(struct buf_waiter *w)
{
	struct proc_stream *st = container_of(w, struct proc_stream, bufwait);

	st->paused = true;
	proc_resume_output(st->p);
}

static void stream_adopt(struct proc *p, unsigned i, int fd, enum proc_stream_kind kind)
{
	struct proc_stream *st = &p->streams[i];

	st->p = p;
	st->fd = fd;
	st->kind = kind;
	st->eof = fd < 0;
	st->paused = fd >= 0; /* read from the loop's first turn (proc_resume_output) */
	st->bufwait.rearm = on_bufs_available;
}

static int adopt_write_ids(struct proc *p, const struct upgrade_view_proc *vp)
{
	const struct upgrade_field *f = vp->write_ids;
	size_t off = 0;

	if (!f || !vp->n_write_ids)
		return 0;
	p->write_id_ring = calloc(PROC_WRITE_IDS, sizeof(char *));
	if (!p->write_id_ring)
		return -ENOMEM;
	/* The view checked the framing, the count (<= PROC_WRITE_IDS) and that they are distinct. */
	while (off + 4 <= f->len) {
		uint32_t len = (uint32_t)f->val[off] | (uint32_t)f->val[off + 1] << 8 |
			       (uint32_t)f->val[off + 2] << 16 | (uint32_t)f->val[off + 3] << 24;
		char *copy = strndup((const char *)f->val + off + 4, len);

		off += 4 + len;
		if (!copy)
			return -ENOMEM;
		if (strmap_put(&p->write_ids, copy, len, copy) < 0) {
			free(copy);
			return -ENOMEM;
		}
		p->write_id_ring[p->write_id_count++] = copy;
	}
	return 0;
}

/* The leaf p<N> below the base (or the listener guard's cgroup), as the spawn made it. */
static int adopt_cgroup(struct server *s, struct proc *p, const struct upgrade_view_proc *vp)
{
	struct stat sb;

	if (!vp->has_cg)
		return 0;
	p->cg.parent_fd = vp->cg_guard ? (s->guard ? netguard_cgroup_fd(s->guard) : -1)
				       : s->cgroups.base_fd;
	if (p->cg.parent_fd < 0)
		return -ENOENT;
	snprintf(p->cg.name, sizeof(p->cg.name), "p%llu", (unsigned long long)vp->cg_num);
	p->cg.fd = -1;
	for (int k = 0; k < _SANDBOX_CG_KIND_MAX; k++) {
		p->cg.v1_procs[k] = -1;
		/* Its v1 directories are the ones that exist (a limit of that kind). */
		if (s->cgroups.where[k] == SANDBOX_CG_V1 && s->cgroups.v1_fd[k] >= 0 &&
		    fstatat(s->cgroups.v1_fd[k], p->cg.name, &sb, 0) == 0)
			p->cg.v1_mask |= 1u << k;
	}
	p->cg.live = true;
	p->cg.memory_limited = vp->mem_limited;
	p->has_cg = true;
	return 0;
}

static int adopt_retained(struct proc *p, const struct upgrade_view_proc *vp)
{
	struct upgrade_chunk ch;
	size_t off = 0;

	if (!vp->retained)
		return 0;
	while (upgrade_chunks_next(vp->retained, &off, &ch))
		if (proc_chunk_append(p, ch.seq, ch.stream, ch.data, ch.len) < 0)
			return -ENOMEM;
	return 0;
}

/* A struct proc as proc_new() starts one (without a spawn): its id, in JSON too, and lists. */
static struct proc *proc_alloc(struct session *ss, const uint8_t *id, size_t id_len)
{
	struct proc *p = calloc(1, sizeof(*p));
	json_t *js = json_stringn((const char *)id, id_len);

	if (!p || !js)
		goto fail;
	p->sess = ss;
	p->id = malloc(id_len + 1);
	p->id_json = json_dumps(js, JSON_ENCODE_ANY | JSON_COMPACT);
	if (!p->id || !p->id_json)
		goto fail;
	json_decref(js);
	memcpy(p->id, id, id_len);
	p->id[id_len] = 0;
	p->id_len = id_len;
	p->id_json_len = strlen(p->id_json);
	p->pidfd = p->stdin_fd = -1;
	p->streams[0].fd = p->streams[1].fd = -1;
	list_init(&p->chunks);
	list_init(&p->waiters);
	list_init(&p->writes);
	return p;
fail:
	json_decref(js);
	if (p) {
		free(p->id);
		free(p->id_json);
		free(p);
	}
	return NULL;
}

static int adopt_proc(struct server *s, struct session *ss, const struct upgrade_view_proc *vp,
		      struct proc **ret)
{
	uint64_t now_real = clock_ms(CLOCK_REALTIME), now_mono = clock_ms(CLOCK_MONOTONIC);
	struct proc *p = proc_alloc(ss, vp->id, vp->id_len);
	int r = 0;

	if (!p)
		return -ENOMEM;
	p->pid = vp->pid;
	p->tty = vp->tty;
	p->pipe_stdin = vp->pipe_stdin;
	p->sandboxed = vp->sandboxed;
	p->started_at_ms = vp->started_ms;
	/* For the exit latency metric: as long ago on the monotonic clock as on the real one. */
	p->started_mono_ms = now_real > vp->started_ms && now_mono > now_real - vp->started_ms
				     ? now_mono - (now_real - vp->started_ms) : now_mono;
	p->next_seq = vp->next_seq;
	p->reaped = vp->reaped;
	p->exited = vp->exited;
	p->exit_code = vp->exit_code;
	p->term_signal = vp->term_signal;
	p->exit_seq = vp->exit_seq;
	p->closed = vp->closed;
	p->stdin_closed = vp->stdin_closed;
	p->timed_out = vp->timed_out;
	p->has_timeout = vp->has_timeout;
	p->asked_limits = vp->asked_limits;
	p->oom_killed = vp->oom_killed;
	p->pty_wrote = vp->pty_last >= 0;
	p->pty_last_byte = vp->pty_last >= 0 ? (uint8_t)vp->pty_last : 0;
	if (vp->tty) {
		/* The master is the output stream and stdin (named once, as stdoutFd). */
		stream_adopt(p, 0, vp->out_fd, STREAM_PTY);
		p->n_streams = 1;
		p->stdin_fd = vp->out_fd >= 0 ? vp->out_fd : vp->stdin_fd;
	} else {
		stream_adopt(p, 0, vp->out_fd, STREAM_STDOUT);
		stream_adopt(p, 1, vp->err_fd, STREAM_STDERR);
		p->n_streams = 2;
		p->stdin_fd = vp->stdin_fd;
	}
	p->pidfd = vp->pidfd;
	/* First: its mount points' references then go back with the plan if anything fails. */
	r = upgrade_adopt_proc_sandbox(s, p, vp);
	/* The poll fallback waits on a pidfd: one for a child not reaped yet, if none came. */
	if (!s->ring.has_waitid && p->pidfd < 0 && !vp->reaped) {
		p->pidfd = (int)syscall(SYS_pidfd_open, vp->pid, 0);
		if (p->pidfd < 0)
			r = -errno;
		else
			(void)fcntl(p->pidfd, F_SETFD, FD_CLOEXEC);
	}
	if (r >= 0)
		r = adopt_retained(p, vp);
	if (r >= 0)
		r = adopt_write_ids(p, vp);
	if (r >= 0)
		r = adopt_cgroup(s, p, vp);
	if (r >= 0)
		r = strmap_put(&ss->procs, p->id, p->id_len, p);
	if (r < 0)
		goto fail;
	list_add_tail(&p->link, &ss->procs_list);
	if (!p->closed)
		ss->n_live++;
	if (vp->timeout_ns && !p->closed)
		proc_set_timeout(p, ms_until(vp->timeout_ns));
	upgrade_adopt_proc_netproxy(s, p, vp);
	*ret = p;
	return 0;
fail:
	upgrade_netproxy_discard(vp);
	/* Not adopted: nothing may outlive the server, nor hold its fds, nor stay a zombie. */
	if (!vp->reaped) {
		(void)kill(-vp->pid, SIGKILL);
		(void)waitpid(vp->pid, NULL, 0); /* SIGKILL cannot be refused: at once */
	}
	proc_free(p);
	return r;
}

/* "ADDR:PORT" of the peer, as the listener names a connection it accepts. */
static void peer_name(int fd, char *out, size_t size)
{
	char host[INET6_ADDRSTRLEN];
	unsigned port;

	upgrade_addr_of(fd, true, host, sizeof(host), &port);
	snprintf(out, size, strchr(host, ':') ? "[%s]:%u" : "%s:%u", host, port);
}

/*
 * The WebSocket connections: each queued output first, its session attached
 * (the session's processes' output goes to it from now on), its watches and
 * fs/open handles (adopt-fs.c), then its unparsed input fed to the parser
 * and its read armed.
 */
static void adopt_conns(struct server *s, const struct upgrade_view *v, struct session **made,
			int *first, char *err, size_t err_size)
{
	struct conn **conns = calloc(v->n_conns ? v->n_conns : 1, sizeof(*conns));

	if (!conns) {
		/* The sockets close: their clients resume their sessions on new connections. */
		for (uint32_t i = 0; i < v->n_conns; i++)
			if (v->conns[i].transport != UPGRADE_CONN_STDIO)
				safe_close(v->conns[i].fd_in);
		for (uint32_t i = 0; i < v->n_fs_handles; i++)
			safe_close(v->fs_handles[i].fd);
		if (!*first) {
			*first = -ENOMEM;
			snprintf(err, err_size, "connections: %s", strerror(ENOMEM));
		}
		return;
	}
	for (uint32_t i = 0; i < v->n_conns; i++) {
		const struct upgrade_view_conn *vc = &v->conns[i];
		struct session *ss = vc->session >= 0 ? made[vc->session] : NULL;
		struct conn *c;
		char peer[64];
		int r;

		if (vc->transport == UPGRADE_CONN_STDIO) {
			snprintf(peer, sizeof(peer), "stdio");
			r = conn_adopt_stdio(s, vc->session >= 0, vc->initialized, vc->output,
					     vc->output_len, &c);
		} else {
			peer_name(vc->fd_in, peer, sizeof(peer));
			r = conn_adopt_ws(s, vc->fd_in, peer, vc->session >= 0, vc->initialized,
					  vc->output, vc->output_len, &c);
		}
		if (r < 0) {
			/* The client resumes its session on a new connection (stdio: none: it ends). */
			if (vc->transport != UPGRADE_CONN_STDIO)
				safe_close(vc->fd_in);
			if (!*first) {
				*first = r;
				snprintf(err, err_size, "connection %s: %s", peer, strerror(-r));
			}
			continue;
		}
		if (ss)
			session_attach(ss, c);
		conns[i] = c;
	}
	/* Before any connection reads: a request waiting in its input may name a handle. */
	upgrade_adopt_fs(v, conns, first, err, err_size);
	for (uint32_t i = 0; i < v->n_conns; i++)
		if (conns[i])
			conn_adopt_start(conns[i], v->conns[i].input, v->conns[i].input_len);
	free(conns);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/*
 * The stdin writes the old binary had queued (the view checked their
 * framing), each with the reply it owes on the session's connection, now
 * that it is attached; then the queue is written.
 */
static int adopt_writes(struct proc *p, const struct upgrade_view_proc *vp)
{
	const struct upgrade_field *f = vp->writes;
	size_t off = 0;
	int r = 0;

	while (f && off < f->len && r >= 0) {
		bool fast = f->val[off] == 1;
		uint32_t id_len = le32(f->val + off + 1), len;
		json_t *id = NULL;

		off += 5;
		if (id_len)
			id = json_loadb((const char *)f->val + off, id_len, JSON_DECODE_ANY, NULL);
		off += id_len;
		len = le32(f->val + off);
		off += 4;
		/* An id that does not parse: written all the same, answered to nobody. */
		r = proc_adopt_write(p, id ? p->sess->conn : NULL, id, fast, f->val + off, len);
		json_decref(id);
		off += len;
	}
	proc_resume_stdin(p);
	return r;
}

int upgrade_adopt_sessions(struct server *s, const struct upgrade_view *v, char *err,
			   size_t err_size)
{
	struct session **made;
	struct proc **procs;
	int r = 0, first = 0;

	if (!v->n_sessions && !v->n_conns)
		return 0;
	made = calloc(v->n_sessions ? v->n_sessions : 1, sizeof(*made));
	procs = calloc(v->n_procs ? v->n_procs : 1, sizeof(*procs));
	if (!made || !procs) {
		free(made);
		free(procs);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < v->n_sessions; i++) {
		/*
		 * An attached one gets a whole window too, which attaching cancels: if
		 * its connection cannot be adopted, it waits for the client to resume.
		 */
		uint64_t window = v->sessions[i].conn >= 0 ? s->cfg.resume_window_ms
							    : ms_until(v->sessions[i].expiry_ns);

		r = session_adopt(s, v->sessions[i].id, window, &made[i]);
		if (r < 0 && !first) {
			first = r;
			snprintf(err, err_size, "session %s: %s", v->sessions[i].id, strerror(-r));
		}
	}
	for (uint32_t i = 0; i < v->n_procs; i++) {
		const struct upgrade_view_proc *vp = &v->procs[i];
		struct session *ss = made[vp->session];
		struct proc *p;

		r = ss ? adopt_proc(s, ss, vp, &p) : -ENOMEM;
		if (r < 0) {
			/* Not resumable: killed and reaped (adopt_proc closed its fds). */
			if (!ss) {
				if (!vp->reaped) {
					(void)kill(-vp->pid, SIGKILL);
					(void)waitpid(vp->pid, NULL, 0);
				}
				safe_close(vp->out_fd);
				safe_close(vp->err_fd);
				safe_close(vp->stdin_fd);
				safe_close(vp->pidfd);
				upgrade_netproxy_discard(vp);
			}
			if (!first) {
				first = r;
				snprintf(err, err_size, "process %d: %s", vp->pid, strerror(-r));
			}
			continue;
		}
		proc_resume_output(p);
		proc_resume_exit(p);
		procs[i] = p;
	}
	adopt_conns(s, v, made, &first, err, err_size);
	/* After the connections: the replies owed go to the session's, attached now. */
	for (uint32_t i = 0; i < v->n_procs; i++) {
		if (!procs[i] || !v->procs[i].writes)
			continue;
		r = adopt_writes(procs[i], &v->procs[i]);
		if (r < 0 && !first) {
			first = r;
			snprintf(err, err_size, "process %d's stdin writes: %s", v->procs[i].pid,
				 strerror(-r));
		}
	}
	free(made);
	free(procs);
	return first;
}
