/* SPDX-License-Identifier: MIT */
/*
 * The hot path against the general path (see fast-diff.h). Each run builds
 * the same world, sends the frames, plays the same events, and writes
 * everything observable into one transcript; the two transcripts must be
 * equal.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "conn.h"
#include "exec.h"
#include "fake-ring.h"
#include "fake-server.h"
#include "fast-diff.h"
#include "jsonrpc.h"
#include "base64.h"
#include "log.h"
#include "macro.h"
#include "proc-internal.h"
#include "proc.h"
#include "rpc.h"
#include "server.h"
#include "session-fakes.h"
#include "session.h"

struct fake_stats fake_stats; /* fake-ring.c's (session-fakes.c is not linked here) */

static struct server srv;
static struct buf transcript; /* the run's: what the client saw, and the effects */
static int devnull = -1;

/* Appends a printf line to the transcript. */
#define note(...)                                             \
	do {                                                  \
		if (buf_printf(&transcript, __VA_ARGS__) < 0) \
			abort();                              \
	} while (0)

/* ---- no signal leaves the test (the fixtures' pids are not real) ---- */

void __wrap_proc_kill_group(struct proc *p, int sig);
void __wrap_proc_kill_group(struct proc *p, int sig)
{
	note("effect: signal %d to '%.*s'\n", sig, (int)p->id_len, p->id);
}

void __wrap_proc_cg_kill(struct proc *p);
void __wrap_proc_cg_kill(struct proc *p)
{
	note("effect: cgroup kill of '%.*s'\n", (int)p->id_len, p->id);
}

/* ---- the client's side of a carried connection ---- */

static struct buf wire; /* the carried stream: 4-byte big-endian lengths and messages */

/* Takes what c queued; each whole message goes to the transcript as a line "<< message". */
static void take_output(struct conn *c)
{
	const uint8_t *p;
	size_t n;

	while ((n = conn_out_peek(c, &p, SIZE_MAX)) > 0) {
		if (buf_append(&wire, p, n) < 0)
			abort();
		conn_out_advance(c, n);
	}
	while (wire.len >= 4) {
		size_t m = (size_t)wire.data[0] << 24 | (size_t)wire.data[1] << 16 |
			   (size_t)wire.data[2] << 8 | wire.data[3];

		if (wire.len - 4 < m)
			break;
		if (buf_append(&transcript, "<< ", 3) < 0 ||
		    buf_append(&transcript, wire.data + 4, m) < 0 || buf_append(&transcript, "\n", 1) < 0)
			abort();
		buf_consume(&wire, 4 + m);
	}
}

static void carrier_flush(struct conn *c)
{
	take_output(c);
}

static void carrier_ended(struct conn *c)
{
	(void)c;
}

static const struct conn_carrier carrier = {
	.flush = carrier_flush,
	.ended = carrier_ended,
};

/* ---- the "kernel" ---- */

/* The process whose stdin write op is op, or NULL. */
static struct proc *writer_of(struct session *ss, const struct uring_op *op)
{
	struct proc *p;

	list_for_each_entry(p, &ss->procs_list, link)
		if (&p->write_op == op)
			return p;
	return NULL;
}

struct kernel_ctx {
	struct session *ss;
	bool fire_timers;
};

/* Stdin writes complete whole (their bytes noted); with fire_timers, the timers too. */
static bool kernel_step(unsigned i, struct fake_sqe *e, void *ctx)
{
	const struct kernel_ctx *k = ctx;
	struct proc *p;

	switch (e->sqe.opcode) {
	case IORING_OP_WRITE:
		p = k->ss ? writer_of(k->ss, e->op) : NULL;
		if (!p)
			abort();
		note("effect: stdin of '%.*s' gets %u bytes: ", (int)p->id_len, p->id, e->sqe.len);
		if (buf_append(&transcript, (const void *)(uintptr_t)e->sqe.addr, e->sqe.len) < 0)
			abort();
		fake_ring_complete(i, (int)e->sqe.len, 0);
		return true;
	case IORING_OP_TIMEOUT:
		if (!k->fire_timers)
			return false;
		fake_ring_complete(i, -ETIME, 0);
		return true;
	default:
		fprintf(stderr, "fast-diff: unexpected SQE opcode %u\n", e->sqe.opcode);
		abort();
	}
}

/*
 * Completes what needs no outside world: stdin writes, cancels and timeout
 * removals; with fire_timers, the timers too.
 */
static void kernel_run(struct session *ss, bool fire_timers)
{
	struct kernel_ctx k = { ss, fire_timers };

	fake_kernel_run(kernel_step, &k);
}

/* ---- the processes ---- */

static void add_chunk(struct proc *p, uint8_t stream, const void *data, size_t len)
{
	if (proc_chunk_append(p, p->next_seq++, stream, data, len) < 0)
		abort();
}

/* As proc_new() leaves a process, without a child: no stream is read, no exit watched. */
static struct proc *fixture(struct session *ss, const char *id, size_t id_len, bool tty,
			    bool pipe_stdin, bool stdin_open)
{
	struct proc *p = calloc(1, sizeof(*p));
	json_t *js = json_stringn(id, id_len);

	if (!p || !js)
		abort();
	p->sess = ss;
	p->id = malloc(id_len + 1);
	p->id_json = json_dumps(js, JSON_ENCODE_ANY | JSON_COMPACT);
	json_decref(js);
	if (!p->id || !p->id_json)
		abort();
	memcpy(p->id, id, id_len);
	p->id[id_len] = 0;
	p->id_len = id_len;
	p->id_json_len = strlen(p->id_json);
	p->pid = 0;
	p->pidfd = -1;
	p->tty = tty;
	p->pipe_stdin = pipe_stdin;
	p->stdin_fd = stdin_open ? fcntl(devnull, F_DUPFD_CLOEXEC, 3) : -1;
	if (stdin_open && p->stdin_fd < 0)
		abort();
	p->next_seq = 1;
	list_init(&p->chunks);
	list_init(&p->waiters);
	list_init(&p->writes);
	if (strmap_put(&ss->procs, id, id_len, p) < 0)
		abort();
	list_add_tail(&p->link, &ss->procs_list);
	ss->n_live++;
	return p;
}

static void set_exited(struct proc *p, int code)
{
	p->exited = true;
	p->exit_code = code;
	p->exit_seq = p->next_seq++;
}

static void set_closed(struct proc *p)
{
	p->closed = true;
	p->next_seq++;
}

#define CODEX_ID "69986-8b64557e-1d85-4ba5-97c3-976fe09ad5fb"

/* The processes every run starts with; [0] gets the events. */
static void fixtures(struct session *ss, struct proc **ret_live, struct proc **ret_quiet)
{
	static const char id_nul[] = { 'n', 'u', 0, 'l' };
	uint8_t bin[300];
	struct proc *p;

	for (size_t i = 0; i < sizeof(bin); i++)
		bin[i] = (uint8_t)(i * 7);
	/* A pipe process with stdin, running, four chunks (4, 6, 8, 2 bytes: PROTOCOL.md §6.7). */
	p = fixture(ss, "proc-1", 6, false, true, true);
	add_chunk(p, STREAM_STDOUT, "out1", 4);
	add_chunk(p, STREAM_STDERR, "err1!!", 6);
	add_chunk(p, STREAM_STDOUT, "out2out2", 8);
	add_chunk(p, STREAM_STDOUT, "\n\0", 2);
	*ret_live = p;
	/* The real client's kind: a PTY, exited 3 and closed, denied, with a timeout. */
	p = fixture(ss, CODEX_ID, strlen(CODEX_ID), true, false, false);
	add_chunk(p, STREAM_PTY, bin, sizeof(bin));
	add_chunk(p, STREAM_PTY, "", 0);
	set_exited(p, 3);
	set_closed(p);
	p->sandbox_denied = true;
	p->has_timeout = true;
	p->timed_out = true;
	/* A pipe without stdin, running, no output yet: gets an exit as an event. */
	*ret_quiet = fixture(ss, "nostdin", 7, false, false, false);
	/* A pipe with stdin whose child exited (writes fail), not closed. */
	p = fixture(ss, "done", 4, false, true, true);
	add_chunk(p, STREAM_STDERR, "bye", 3);
	set_exited(p, -1);
	/* Ids the hot path leaves alone or takes as they are. */
	p = fixture(ss, "a/b c", 5, true, false, true);
	add_chunk(p, STREAM_PTY, "x", 1);
	fixture(ss, "\xc3\xa9\n\"", 4, false, true, true);
	fixture(ss, id_nul, sizeof(id_nul), false, false, false);
	fixture(ss, "", 0, false, true, true);
}

static void free_fixtures(struct session *ss)
{
	while (!list_empty(&ss->procs_list)) {
		struct proc *p = list_first_entry(&ss->procs_list, struct proc, link);

		list_del(&p->link);
		strmap_remove(&ss->procs, p->id, p->id_len);
		ss->n_live--;
		proc_free(p);
	}
}

/* ---- a run ---- */

struct variant {
	bool initialized;
	unsigned max_depth;
};

static const struct variant variants[] = {
	{ true, 128 },
	{ false, 128 },
	{ true, 3 },
	{ true, 2 },
};

static struct rpc_method_stats stats_before[256];

static void stats_snapshot(void)
{
	size_t n;
	const struct rpc_method_stats *st = rpc_stats(&n);

	if (n > ELEMENTSOF(stats_before))
		abort();
	memcpy(stats_before, st, n * sizeof(*st));
}

static void stats_note(void)
{
	size_t n;
	const struct rpc_method_stats *st = rpc_stats(&n);

	for (size_t i = 0; i < n; i++) {
		if (st[i].requests != stats_before[i].requests)
			note("stats: %s requests +%" PRIu64 "\n", st[i].name ? st[i].name : "?",
			     st[i].requests - stats_before[i].requests);
		for (size_t k = 0; k < RPC_STATS_CODES; k++)
			if (st[i].errors[k].n != stats_before[i].errors[k].n ||
			    st[i].errors[k].code != stats_before[i].errors[k].code)
				note("stats: %s error %d +%" PRIu64 "\n", st[i].name ? st[i].name : "?",
				     st[i].errors[k].code, st[i].errors[k].n - stats_before[i].errors[k].n);
	}
}

/* One run; the transcript is left in `transcript`. Returns the frames the hot path took. */
static unsigned run(const struct variant *v, bool fast, const char *const *frames,
		    const size_t *lens, size_t n)
{
	struct session *ss = NULL;
	struct proc *live, *quiet;
	struct conn *c;
	unsigned taken = 0;

	transcript.len = 0;
	wire.len = 0;
	srv.cfg.max_json_depth = v->max_depth;
	if (conn_new_carried(&srv, "fast-diff", &carrier, &srv, &c) < 0 ||
	    session_new(&srv, c, &ss) < 0)
		abort();
	c->initialize_done = true;
	c->initialized = v->initialized;
	fixtures(ss, &live, &quiet);
	stats_snapshot();

	for (size_t i = 0; i < n && c->state == CONN_OPEN; i++) {
		note("\n-- frame %zu\n", i);
		/* What rpc_on_message() does with the hot path on, with its decision seen. */
		rpc_fast_enabled = false;
		if (fast && rpc_fast_dispatch(c, frames[i], lens[i])) {
			note("(hot path)\n");
			taken++;
		} else {
			rpc_on_message(c, frames[i], lens[i]);
		}
		rpc_fast_enabled = true;
		if (c->state == CONN_OPEN)
			take_output(c);
	}
	/* Events: output and an exit wake the long polls; writes finish; the timers fire. */
	if (c->state == CONN_OPEN) {
		note("\n-- output\n");
		add_chunk(live, STREAM_STDOUT, "more", 4);
		proc_wake_waiters(live);
		note("\n-- exit\n");
		set_exited(quiet, 0);
		proc_wake_waiters(quiet);
		note("\n-- kernel\n");
		kernel_run(ss, false);
		take_output(c);
		note("\n-- timers\n");
		kernel_run(ss, true);
		take_output(c);
	} else {
		/* Writes in flight finish (orphaned: nobody is answered); long polls were cancelled. */
		note("\n-- connection closed, kernel\n");
		kernel_run(ss, false);
	}
	note("\n-- end\n");
	stats_note();

	free_fixtures(ss);
	kernel_run(ss, true);
	conn_close(c, 0, "done");
	kernel_run(NULL, true); /* the session's resume window expires */
	conn_reap(&srv);
	session_reap(&srv);
	if (srv.n_conns || !list_empty(&srv.conns) || srv.n_sessions || fake_ring_count())
		abort();
	fake_ring_reset();
	return taken;
}

void fast_diff_init(void)
{
	static const struct config cfg = CONFIG_DEFAULTS;

	log_set_max_level(getenv("UEXEC_FAST_DIFF_LOG") ? LOG_DEBUG : LOG_CRIT);
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull < 0)
		abort();
	fake_server_reset(&srv, &cfg);
	if (exec_methods_register() < 0)
		abort();
}

bool fast_diff_run(const char *const *frames, const size_t *lens, size_t n, unsigned *ret_fast)
{
	struct buf general = { 0 };
	unsigned taken = 0;
	bool same = true;

	for (size_t k = 0; k < ELEMENTSOF(variants) && same; k++) {
		const struct variant *v = &variants[k];
		unsigned t;

		run(v, false, frames, lens, n);
		if (buf_append(&general, transcript.data, transcript.len) < 0)
			abort();
		t = run(v, true, frames, lens, n);
		/* The hot path's own lines are not the general path's: drop them to compare. */
		for (uint8_t *m; (m = memmem(transcript.data, transcript.len, "(hot path)\n", 11));) {
			memmove(m, m + 11, transcript.len - (size_t)(m + 11 - transcript.data));
			transcript.len -= 11;
		}
		if (getenv("UEXEC_FAST_DIFF_SHOW")) {
			fprintf(stderr, "== variant %zu ==\n", k);
			fwrite(transcript.data, 1, transcript.len, stderr);
		}
		if (general.len != transcript.len || memcmp(general.data, transcript.data, general.len)) {
			fprintf(stderr, "fast-diff: variant %zu (initialized %d, depth %u) differs\n"
					"== general path ==\n", k, v->initialized, v->max_depth);
			fwrite(general.data, 1, general.len, stderr);
			fprintf(stderr, "\n== hot path ==\n");
			fwrite(transcript.data, 1, transcript.len, stderr);
			same = false;
		}
		if (k == 0)
			taken = t;
		general.len = 0;
	}
	buf_done(&general);
	if (ret_fast)
		*ret_fast = taken;
	return same;
}

/* Appends "<< " + msg's jrpc_dump + "\n" to b (the transcript's form); steals msg. */
static void expect_dump(struct buf *b, json_t *msg)
{
	size_t n;
	char *d = msg ? jrpc_dump(msg, &n) : NULL;

	if (!d || buf_append(b, "<< ", 3) < 0 || buf_append(b, d, n) < 0 || buf_append(b, "\n", 1) < 0)
		abort();
	free(d);
	json_decref(msg);
}

static json_t *notification(const struct proc *p, const char *method, json_t *params_tail)
{
	json_t *msg = json_object(), *params = json_object();
	const char *k;
	json_t *v;

	json_object_set_new(msg, "method", json_string(method));
	json_object_set_new(params, "processId", json_stringn(p->id, p->id_len));
	json_object_foreach(params_tail, k, v)
		json_object_set(params, k, v);
	json_decref(params_tail);
	json_object_set_new(msg, "params", params);
	return msg;
}

bool fast_diff_notifications(void)
{
	static const size_t sizes[] = { 0, 1, 2, 3, 4, 57, 300, 4096 };
	struct buf want = { 0 };
	struct session *ss = NULL;
	struct proc *live, *quiet, *p;
	uint8_t data[4096];
	struct conn *c;
	bool same = true;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 131 + 7);
	transcript.len = 0;
	wire.len = 0;
	srv.cfg.max_json_depth = 128;
	if (conn_new_carried(&srv, "fast-diff", &carrier, &srv, &c) < 0 ||
	    session_new(&srv, c, &ss) < 0)
		abort();
	fixtures(ss, &live, &quiet);
	list_for_each_entry(p, &ss->procs_list, link) {
		for (size_t k = 0; k < ELEMENTSOF(sizes); k++)
			for (uint8_t st = STREAM_STDOUT; st <= STREAM_PTY; st++) {
				char *b64 = malloc(base64_encoded_len(sizes[k]) + 1);
				uint64_t seq = (uint64_t)k * 1000003u + st;

				if (!b64)
					abort();
				b64[base64_encode(data, sizes[k], b64)] = 0;
				proc_wire_output(p, c, seq, st, data, sizes[k]);
				expect_dump(&want, notification(p, "process/output",
					json_pack("{s:I,s:s,s:s}", "seq", (json_int_t)seq, "stream",
						  st == STREAM_STDOUT ? "stdout" : st == STREAM_STDERR ? "stderr" : "pty",
						  "chunk", b64)));
				free(b64);
			}
		proc_wire_event(p, "process/exited",
				",\"seq\":7,\"exitCode\":-3,\"sandboxDenied\":true,\"timedOut\":false");
		expect_dump(&want, notification(p, "process/exited",
			json_pack("{s:i,s:i,s:b,s:b}", "seq", 7, "exitCode", -3, "sandboxDenied", 1,
				  "timedOut", 0)));
		proc_wire_event(p, "process/closed", ",\"seq\":8");
		expect_dump(&want, notification(p, "process/closed", json_pack("{s:i}", "seq", 8)));
	}
	take_output(c);
	if (want.len != transcript.len || memcmp(want.data, transcript.data, want.len)) {
		fprintf(stderr, "fast-diff: notifications differ\n== jansson ==\n");
		fwrite(want.data, 1, want.len, stderr);
		fprintf(stderr, "\n== written ==\n");
		fwrite(transcript.data, 1, transcript.len, stderr);
		same = false;
	}
	buf_done(&want);
	free_fixtures(ss);
	kernel_run(ss, true);
	conn_close(c, 0, "done");
	kernel_run(NULL, true);
	conn_reap(&srv);
	session_reap(&srv);
	fake_ring_reset();
	return same;
}
