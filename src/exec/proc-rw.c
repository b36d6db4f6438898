/* SPDX-License-Identifier: MIT */
/*
 * process/read (long polls over the retained output) and process/write
 * (stdin writes with writeId de-duplication) of a managed process.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "base64.h"
#include "conn.h"
#include "log.h"
#include "proc-internal.h"
#include "proc.h"
#include "rpc.h"
#include "session.h"
#include "sandbox.h"
#include "spawn.h"

static void proc_reply_status(struct conn *c, json_t *id, const char *status, bool fast);
static void proc_waiter_free(struct proc_waiter *w);
static void proc_write_next(struct proc *p);

/* ---- process/read ---- */

static json_t *read_result(struct proc *p, uint64_t after_seq, bool has_max, uint64_t max_bytes)
{
	json_t *res = json_object(), *chunks = json_array();
	struct proc_chunk *ch, *last = NULL;
	uint64_t total = 0;
	size_t n = 0;

	if (!res || !chunks)
		goto oom;
	list_for_each_entry(ch, &p->chunks, link) {
		json_t *o;
		char *b;

		if (ch->seq <= after_seq)
			continue;
		if (has_max && n > 0 && total + ch->len > max_bytes)
			break;
		b = malloc(base64_encoded_len(ch->len) + 1);
		o = json_object();
		if (!b || !o) {
			free(b);
			json_decref(o);
			goto oom;
		}
		b[base64_encode(ch->data, ch->len, b)] = 0;
		json_object_set_new(o, "seq", json_integer((json_int_t)ch->seq));
		json_object_set_new(o, "stream", json_string(proc_stream_name(ch->stream)));
		json_object_set_new(o, "chunk", json_string_nocheck(b));
		free(b);
		json_array_append_new(chunks, o);
		total += ch->len;
		n++;
		last = ch;
	}
	json_object_set_new(res, "chunks", chunks);
	json_object_set_new(res, "nextSeq", json_integer((json_int_t)(has_max && last ? last->seq + 1
										  : p->next_seq)));
	json_object_set_new(res, "exited", json_boolean(p->exited));
	json_object_set_new(res, "exitCode", p->exited ? json_integer(p->exit_code) : json_null());
	json_object_set_new(res, "closed", json_boolean(p->closed));
	json_object_set_new(res, "failure", json_null());
	json_object_set_new(res, "sandboxDenied", json_boolean(p->sandbox_denied));
	/* uexec extension, only for a start that asked for timeoutMs. */
	if (p->has_timeout)
		json_object_set_new(res, "timedOut", json_boolean(p->timed_out));
	return res;
oom:
	json_decref(chunks);
	json_decref(res);
	return NULL;
}

static bool read_ready(const struct proc *p, uint64_t after_seq)
{
	if (p->closed || (p->exited && p->exit_seq > after_seq))
		return true;
	if (!list_empty(&p->chunks)) {
		struct proc_chunk *last = list_entry(p->chunks.prev, struct proc_chunk, link);
		return last->seq > after_seq;
	}
	return false;
}

static void proc_waiter_free(struct proc_waiter *w)
{
	free(w);
}

static void waiter_reply(struct proc_waiter *w)
{
	if (w->fast)
		proc_wire_read_reply(w->p, w->pend.conn, w->pend.id, NULL, w->after_seq, w->has_max,
				     w->max_bytes);
	else
		rpc_reply(w->pend.conn, w->pend.id,
			  read_result(w->p, w->after_seq, w->has_max, w->max_bytes));
}

static void waiter_on_timer(struct uring_timer *t, bool fired)
{
	struct proc_waiter *w = container_of(t, struct proc_waiter, timer);

	if (fired) {
		/* waitMs elapsed: answer with whatever there is. */
		waiter_reply(w);
		rpc_pending_end(&w->pend);
		list_del(&w->plink);
	}
	proc_waiter_free(w);
}

/* Ends a waiter that has been replied to or cancelled. */
static void waiter_finish(struct proc_waiter *w)
{
	rpc_pending_end(&w->pend);
	list_del(&w->plink);
	if (w->timer.op.busy && !proc_srv(w->p)->stopping)
		uring_timer_cancel(&w->timer); /* freed by waiter_on_timer(fired = false) */
	else
		proc_waiter_free(w);
}

static void waiter_cancel(struct rpc_pending *pend)
{
	waiter_finish(container_of(pend, struct proc_waiter, pend));
}

void proc_wake_waiters(struct proc *p)
{
	struct proc_waiter *w, *n;

	list_for_each_entry_safe(w, n, &p->waiters, plink) {
		if (!read_ready(p, w->after_seq))
			continue;
		waiter_reply(w);
		waiter_finish(w);
	}
}

void proc_answer_waiters(struct proc *p)
{
	struct proc_waiter *w, *n;

	/* As if waitMs elapsed now: whatever there is. */
	list_for_each_entry_safe(w, n, &p->waiters, plink) {
		waiter_reply(w);
		waiter_finish(w);
	}
}

/* A long poll: waits for output, the exit or wait_ms. */
static void read_wait(struct proc *p, struct conn *c, json_t *id, uint64_t after_seq,
		      bool has_max, uint64_t max_bytes, uint64_t wait_ms, bool fast)
{
	struct proc_waiter *w;

	w = calloc(1, sizeof(*w));
	if (!w) {
		rpc_reply_errno_internal(c, id, ENOMEM);
		return;
	}
	w->fast = fast;
	w->p = p;
	w->after_seq = after_seq;
	w->has_max = has_max;
	w->max_bytes = max_bytes;
	rpc_pending_start(&w->pend, c, id, waiter_cancel);
	list_add_tail(&w->plink, &p->waiters);
	uring_timer_arm(&proc_srv(p)->ring, &w->timer, wait_ms, waiter_on_timer);
}

void proc_read(struct proc *p, struct conn *c, json_t *id, uint64_t after_seq, bool has_max,
	       uint64_t max_bytes, uint64_t wait_ms)
{
	if (wait_ms == 0 || read_ready(p, after_seq)) {
		rpc_reply(c, id, read_result(p, after_seq, has_max, max_bytes));
		return;
	}
	read_wait(p, c, id, after_seq, has_max, max_bytes, wait_ms, false);
}

void proc_read_fast(struct proc *p, struct conn *c, const struct jrpc_fast_req *r,
		    uint64_t after_seq, bool has_max, uint64_t max_bytes, uint64_t wait_ms)
{
	json_t *id;

	if (wait_ms == 0 || read_ready(p, after_seq)) {
		proc_wire_read_reply(p, c, NULL, r, after_seq, has_max, max_bytes);
		return;
	}
	id = rpc_fast_id(r);
	if (!id) {
		conn_close(c, WS_CLOSE_INTERNAL, "out of memory");
		return;
	}
	read_wait(p, c, id, after_seq, has_max, max_bytes, wait_ms, true);
	json_decref(id);
}

/* ---- process/write ---- */

void proc_write_free(struct proc_write *w)
{
	free(w->data);
	free(w);
}

static void write_cancel(struct rpc_pending *pend)
{
	struct proc_write *w = container_of(pend, struct proc_write, pend);

	/* Keep writing (the bytes were accepted for delivery); just do not reply. */
	rpc_pending_end(&w->pend);
	w->orphaned = true;
}

bool proc_pending_is_write(const struct rpc_pending *pend)
{
	return pend->cancel == write_cancel;
}

int proc_adopt_write(struct proc *p, struct conn *c, json_t *id, bool fast, const uint8_t *data,
		     size_t len)
{
	struct proc_write *w = calloc(1, sizeof(*w));

	if (!w || !(w->data = malloc(len))) {
		free(w);
		return -ENOMEM;
	}
	memcpy(w->data, data, len);
	w->p = p;
	w->fast = fast;
	w->len = len;
	if (c && id)
		rpc_pending_start(&w->pend, c, id, write_cancel);
	else
		w->orphaned = true; /* its client is gone: written, answered to nobody */
	list_add_tail(&w->plink, &p->writes);
	return 0;
}

static bool remember_write_id(struct proc *p, const char *wid)
{
	char *copy;

	if (!p->write_id_ring) {
		p->write_id_ring = calloc(PROC_WRITE_IDS, sizeof(char *));
		if (!p->write_id_ring)
			return true;
	}
	copy = strdup(wid);
	if (!copy || strmap_put(&p->write_ids, wid, strlen(wid), copy) < 0) {
		free(copy);
		return true;
	}
	if (p->write_id_count == PROC_WRITE_IDS) {
		char *old = p->write_id_ring[p->write_id_head];

		strmap_remove(&p->write_ids, old, strlen(old));
		free(old);
		p->write_id_ring[p->write_id_head] = copy;
		p->write_id_head = (p->write_id_head + 1) % PROC_WRITE_IDS;
	} else {
		p->write_id_ring[(p->write_id_head + p->write_id_count) % PROC_WRITE_IDS] = copy;
		p->write_id_count++;
	}
	return true;
}

static void write_done(struct proc *p, bool ok)
{
	struct proc_write *w = list_first_entry(&p->writes, struct proc_write, plink);

	list_del(&w->plink);
	if (!w->orphaned) {
		if (ok) {
			proc_reply_status(w->pend.conn, w->pend.id, "accepted", w->fast);
		} else {
			rpc_reply_error(w->pend.conn, w->pend.id, RPC_INTERNAL_ERROR,
					"failed to write to process stdin");
		}
		rpc_pending_end(&w->pend);
	}
	proc_write_free(w);
	if (list_empty(&p->writes) && ((!p->tty && (p->exited || p->stdin_closed)) || p->closed))
		p->stdin_fd = safe_close(p->stdin_fd);
	proc_write_next(p);
}

static void on_write_complete(struct uring_op *op, int res, uint32_t flags);

static void on_write_ready(struct uring_op *op, int res, uint32_t flags)
{
	struct proc *p = container_of(op, struct proc, write_op);

	if (res == -ECANCELED && proc_srv(p)->quiescing)
		return; /* a live upgrade's pause: the write stays queued (proc_resume_stdin) */
	if (res < 0) {
		write_done(p, p->tty);
		return;
	}
	proc_write_next(p);
}

static void on_write_complete(struct uring_op *op, int res, uint32_t flags)
{
	struct proc *p = container_of(op, struct proc, write_op);
	struct proc_write *w = list_first_entry(&p->writes, struct proc_write, plink);
	struct io_uring_sqe *sqe;

	if (res == -ECANCELED && proc_srv(p)->quiescing)
		return; /* a live upgrade's pause: nothing was written (proc_resume_stdin) */
	if (res == -EAGAIN || res == -EINTR) {
		/* A non-blocking PTY master is full: wait until it can take more. */
		sqe = uring_get_sqe(&proc_srv(p)->ring, &p->write_op, on_write_ready);
		io_uring_prep_poll_add(sqe, p->stdin_fd, POLLOUT);
		return;
	}
	if (res < 0) {
		/*
		 * PTY writes are accepted even after the child is gone (§8.2). A
		 * pipe whose reader closed while the child runs: data discarded,
		 * accepted; once the child exited: the reference's error.
		 */
		write_done(p, p->tty || !p->exited);
		return;
	}
	w->off += (size_t)res;
	if (w->off < w->len) {
		proc_write_next(p);
		return;
	}
	write_done(p, true);
}

static void proc_write_next(struct proc *p)
{
	struct proc_write *w;
	struct io_uring_sqe *sqe;

	if (p->write_op.busy || list_empty(&p->writes) || proc_srv(p)->quiescing)
		return;
	w = list_first_entry(&p->writes, struct proc_write, plink);
	if (w->off == w->len || p->stdin_fd < 0) {
		write_done(p, w->off == w->len || p->tty);
		return;
	}
	sqe = uring_get_sqe(&proc_srv(p)->ring, &p->write_op, on_write_complete);
	io_uring_prep_write(sqe, p->stdin_fd, w->data + w->off, (unsigned)MIN(w->len - w->off, 1u << 30),
			    (__u64)-1);
}

void proc_resume_stdin(struct proc *p)
{
	proc_write_next(p);
}

static void proc_reply_status(struct conn *c, json_t *id, const char *status, bool fast)
{
	json_t *r;

	if (fast) {
		proc_wire_status_reply(c, id, NULL, status);
		return;
	}
	r = json_object();
	json_object_set_new(r, "status", json_string(status));
	rpc_reply(c, id, r);
}

static void write_common(struct proc *p, struct conn *c, json_t *id, const char *write_id,
			 uint8_t *data, size_t len, bool fast)
{
	struct proc_write *w;

	if (!p->tty && !p->pipe_stdin) {
		proc_reply_status(c, id, "stdinClosed", fast);
		free(data);
		return;
	}
	if (strmap_get(&p->write_ids, write_id, strlen(write_id))) {
		/* Retried writeId: acknowledged, not written again (§6.8). */
		proc_reply_status(c, id, "accepted", fast);
		free(data);
		return;
	}
	if (p->stdin_closed) {
		/* After process/closeStdin (a uexec extension): the reference's status for no stdin. */
		proc_reply_status(c, id, "stdinClosed", fast);
		free(data);
		return;
	}
	if (!p->tty && (p->exited || p->stdin_fd < 0)) {
		rpc_reply_error(c, id, RPC_INTERNAL_ERROR, "failed to write to process stdin");
		free(data);
		return;
	}
	(void)remember_write_id(p, write_id);
	if (len == 0 || p->stdin_fd < 0) {
		/* Nothing to write, or a PTY whose child is gone: accepted (§8.2). */
		proc_reply_status(c, id, "accepted", fast);
		free(data);
		return;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		free(data);
		rpc_reply_errno_internal(c, id, ENOMEM);
		return;
	}
	w->p = p;
	w->fast = fast;
	w->data = data;
	w->len = len;
	if (p->tty) {
		p->pty_wrote = true;
		p->pty_last_byte = data[len - 1];
	}
	rpc_pending_start(&w->pend, c, id, write_cancel);
	list_add_tail(&w->plink, &p->writes);
	proc_write_next(p);
}

void proc_write(struct proc *p, struct conn *c, json_t *id, const char *write_id,
		uint8_t *data, size_t len)
{
	write_common(p, c, id, write_id, data, len, false);
}

void proc_write_fast(struct proc *p, struct conn *c, const struct jrpc_fast_req *r,
		     const char *write_id, uint8_t *data, size_t len)
{
	json_t *id = rpc_fast_id(r);

	if (!id) {
		free(data);
		conn_close(c, WS_CLOSE_INTERNAL, "out of memory");
		return;
	}
	write_common(p, c, id, write_id, data, len, true);
	json_decref(id);
}

/* ---- process/closeStdin (uexec extension) ---- */

static bool ends_line(const struct termios *t, uint8_t b)
{
	return b == '\n' || b == '\r' || (t->c_cc[VEOL] && b == t->c_cc[VEOL]) ||
	       (t->c_cc[VEOL2] && b == t->c_cc[VEOL2]) || b == t->c_cc[VEOF];
}

/*
 * EOF on a PTY is the terminal's VEOF character (^D by default), queued
 * behind the writes already accepted. In canonical mode it ends a read only
 * at the start of a line: after a partial line, a first VEOF hands that line
 * to the reader and a second one is the EOF, so two are sent when the last
 * byte written did not end a line. Without ICANON the byte is plain input:
 * the program decides what it means (readline-style programs take it as EOF).
 */
static void pty_send_eof(struct proc *p)
{
	struct termios t = { 0 };
	struct proc_write *w;
	uint8_t *data;
	size_t n = 1;

	if (tcgetattr(p->stdin_fd, &t) < 0) {
		t.c_lflag = ICANON;
		t.c_cc[VEOF] = 4;
	}
	if (!t.c_cc[VEOF])
		t.c_cc[VEOF] = 4; /* VEOF disabled: ^D is the best we can do */
	if ((t.c_lflag & ICANON) && p->pty_wrote && !ends_line(&t, p->pty_last_byte))
		n = 2;
	w = calloc(1, sizeof(*w));
	data = malloc(n);
	if (!w || !data) {
		free(w);
		free(data);
		log_error_ratelimited("Out of memory sending EOF to process '%s'", p->id);
		return;
	}
	memset(data, t.c_cc[VEOF], n);
	w->p = p;
	w->data = data;
	w->len = n;
	w->orphaned = true; /* nobody waits for this write's reply */
	list_add_tail(&w->plink, &p->writes);
	proc_write_next(p);
}

void proc_close_stdin(struct proc *p)
{
	if (p->stdin_closed)
		return;
	p->stdin_closed = true;
	if (p->tty) {
		/* The master stays open: it carries the output. */
		if (!p->exited && p->stdin_fd >= 0)
			pty_send_eof(p);
		return;
	}
	/* A pipe: closed once the queued writes are through (write_done). */
	if (list_empty(&p->writes))
		p->stdin_fd = safe_close(p->stdin_fd);
}
