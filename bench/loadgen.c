/* SPDX-License-Identifier: MIT */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
/*
 * uexec-loadgen: the end-to-end load generator. It speaks the exec-server
 * protocol over WebSocket to one server (uexec or the reference) and prints
 * one JSON line per metric ({"name","unit","value","iters"}); bench.py adds
 * the server, commit and kernel fields.
 *
 *   uexec-loadgen spawn     --url U [--conns N] [--iters N] [--seconds S] [--name P] [--argv a,b]
 *   uexec-loadgen rpc       --url U [--conns N] [--depth D] [--seconds S] [--no-start]
 *   uexec-loadgen throughput --url U --child PATH [--bytes N] [--tty]
 *   uexec-loadgen echo      --url U [--iters N] [--seconds S]
 *   uexec-loadgen exitlat   --url U --child PATH [--iters N]
 *   uexec-loadgen outlat    --url U --child PATH [--procs N] [--lines N] [--interval-us N]
 *   uexec-loadgen storm     --url U [--conns N] [--seconds S]  (one connection's process/read RTT
 *                           alone, then while N other connections spawn /bin/true back to back)
 *   uexec-loadgen idle      --url U --conns N        (prints "ready", waits for stdin EOF)
 *   uexec-loadgen idleproc  --url U --procs N        (same, with N `sleep` processes)
 */
#include "common.h"
#include "wsc.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <unistd.h>

static const char *g_url;
static int g_tty, g_pipe_stdin;
static char g_argv_json[1024] = "[\"/bin/true\"]";

static void die(const char *what)
{
	fprintf(stderr, "loadgen: %s\n", what);
	exit(1);
}

static void set_argv(const char *const *args, int n)
{
	size_t o = 0;
	g_argv_json[o++] = '[';
	for (int i = 0; i < n; i++) {
		o += (size_t)snprintf(g_argv_json + o, sizeof(g_argv_json) - o, "%s\"%s\"", i ? "," : "", args[i]);
	}
	snprintf(g_argv_json + o, sizeof(g_argv_json) - o, "]");
}

static void set_argv_csv(const char *csv)
{
	char tmp[1024];
	const char *parts[32];
	int n = 0;
	snprintf(tmp, sizeof(tmp), "%s", csv);
	for (char *t = strtok(tmp, ","); t && n < 32; t = strtok(NULL, ","))
		parts[n++] = t;
	set_argv(parts, n);
}

struct conn {
	struct wsc ws;
	int idx;
	long long next_id;
	/* spawn phase */
	int busy, have_reply, have_exit, have_closed, have_out;
	long long start_id;
	uint64_t t0;
	char pid[48];
	unsigned seqno;
	/* rpc phase */
	uint64_t sent[256];
	int inflight;
};

static void conn_open(struct conn *c, int idx)
{
	memset(c, 0, sizeof(*c));
	c->idx = idx;
	c->next_id = 1;
	if (wsc_connect(&c->ws, g_url) < 0 || wsc_handshake(&c->ws, "uexec-bench") < 0)
		die("connect/initialize failed");
}

static long long send_start(struct conn *c, const char *pid)
{
	char buf[2048];
	long long id = c->next_id++;
	int n = snprintf(buf, sizeof(buf),
			 "{\"id\":%lld,\"method\":\"process/start\",\"params\":{\"processId\":\"%s\",\"argv\":%s,"
			 "\"cwd\":\"file:///tmp\",\"env\":{\"PATH\":\"/usr/bin:/bin\",\"LC_ALL\":\"C\"},"
			 "\"tty\":%s,\"pipeStdin\":%s,\"arg0\":null}}",
			 id, pid, g_argv_json, g_tty ? "true" : "false", g_pipe_stdin ? "true" : "false");
	if (wsc_send(&c->ws, buf, (size_t)n) < 0)
		die("send failed");
	return id;
}

static int is_reply(const char *m, size_t l)
{
	size_t ml;
	return jmethod(m, l, &ml) == NULL;
}

static int g_allow_error;

static void check_reply_ok(const char *m, size_t l)
{
	if (!g_allow_error && jfind(m, l, "error")) {
		fprintf(stderr, "loadgen: error reply: %.*s\n", (int)(l > 400 ? 400 : l), m);
		exit(1);
	}
}

static int pid_is(const char *m, size_t l, const char *pid)
{
	const char *v;
	long n = jstr(m, l, "processId", &v);
	return n == (long)strlen(pid) && memcmp(v, pid, (size_t)n) == 0;
}

/* Reads messages from c until one is available; dies on EOF. */
static void recv_msg(struct conn *c, const char **m, size_t *l)
{
	int r = wsc_recv(&c->ws, m, l, 60000);
	if (r == 0)
		die("timeout waiting for the server (60 s)");
	if (r < 0)
		die("connection lost");
}

/* ------------------------------------------------------------------ spawn */

struct spawn_stats {
	struct samples reply, first_out, exited, closed;
};

static void spawn_begin(struct conn *c)
{
	snprintf(c->pid, sizeof(c->pid), "s%d-%u", c->idx, c->seqno++);
	c->busy = 1;
	c->have_reply = c->have_exit = c->have_closed = c->have_out = 0;
	c->t0 = now_ns();
	c->start_id = send_start(c, c->pid);
}

/* Handles one message; returns 1 when the current spawn finished. */
static int spawn_handle(struct conn *c, const char *m, size_t l, struct spawn_stats *st)
{
	uint64_t t = now_ns();
	if (is_reply(m, l)) {
		long long id;
		if (jint(m, l, "id", &id) == 0 && id == c->start_id) {
			check_reply_ok(m, l);
			c->have_reply = 1;
			if (st)
				samples_add(&st->reply, t - c->t0);
		}
	} else if (c->busy && pid_is(m, l, c->pid)) {
		if (jis(m, l, "process/output")) {
			if (!c->have_out && st)
				samples_add(&st->first_out, t - c->t0);
			c->have_out = 1;
		} else if (jis(m, l, "process/exited")) {
			c->have_exit = 1;
			if (st)
				samples_add(&st->exited, t - c->t0);
		} else if (jis(m, l, "process/closed")) {
			c->have_closed = 1;
			if (st)
				samples_add(&st->closed, t - c->t0);
		}
	}
	if (c->busy && c->have_reply && c->have_exit && c->have_closed) {
		c->busy = 0;
		return 1;
	}
	return 0;
}

/*
 * The loop of a phase: waits for the connections' messages and hands each to
 * on_msg(c, m, l, ctx), which returns how many of c's requests it finished
 * less how many it started; ends when none is in flight (active). what names
 * the phase in the error when nothing moves for 60 s.
 */
static void run_phase(struct conn *cs, int n, long active, const char *what,
		      long (*on_msg)(struct conn *c, const char *m, size_t l, void *ctx), void *ctx)
{
	struct pollfd pfd[n];

	while (active) {
		for (int i = 0; i < n; i++)
			pfd[i] = (struct pollfd){ .fd = cs[i].ws.fd, .events = POLLIN };
		if (poll(pfd, (nfds_t)n, 60000) == 0) {
			fprintf(stderr, "loadgen: %s: no progress for 60 s\n", what);
			exit(1);
		}
		for (int i = 0; i < n; i++) {
			if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			struct conn *c = &cs[i];
			if (wsc_fill(&c->ws) <= 0)
				die("connection lost");
			const char *m;
			size_t l;
			int r;
			while ((r = wsc_next(&c->ws, &m, &l)) == 1)
				active -= on_msg(c, m, l, ctx);
			if (r < 0)
				die("protocol error");
		}
	}
}

struct spawn_run {
	long iters, started, done;
	uint64_t deadline;
	struct spawn_stats *st;
};

/* A spawn finished: the next one on c, while iters and the time last. */
static long spawn_on_msg(struct conn *c, const char *m, size_t l, void *ctx)
{
	struct spawn_run *run = ctx;

	if (!spawn_handle(c, m, l, run->st))
		return 0;
	run->done++;
	if (run->started < run->iters && now_ns() < run->deadline) {
		spawn_begin(c);
		run->started++;
		return 0;
	}
	return 1;
}

/* Runs spawns on all connections (one outstanding per connection) until iters
 * spawns were started or the deadline passed. Returns spawns completed. */
static long spawn_phase(struct conn *cs, int n, long iters, double seconds, struct spawn_stats *st,
			double *elapsed)
{
	uint64_t t0 = now_ns();
	struct spawn_run run = { .iters = iters, .deadline = t0 + (uint64_t)(seconds * 1e9), .st = st };

	for (int i = 0; i < n && run.started < iters; i++) {
		spawn_begin(&cs[i]);
		run.started++;
	}
	run_phase(cs, n, run.started, "spawn", spawn_on_msg, &run);
	*elapsed = (double)(now_ns() - t0) / 1e9;
	return run.done;
}

/*
 * Appends the decoded chunk of a process/output message to buf (*n bytes
 * used of cap, one kept for a NUL). Returns false when it does not fit or
 * the message has no chunk.
 */
static bool append_chunk(const char *m, size_t l, char *buf, size_t *n, size_t cap)
{
	const char *v;
	long bn = jstr(m, l, "chunk", &v);

	if (bn < 0 || (size_t)bn / 4 * 3 + *n >= cap)
		return false;
	*n += (size_t)b64_decode(v, (size_t)bn, (unsigned char *)buf + *n);
	buf[*n] = 0;
	return true;
}

static int cmd_spawn(int argc, char **argv)
{
	int nc = (int)opt_num(argc, argv, "--conns", 1);
	long iters = (long)opt_num(argc, argv, "--iters", 2000);
	double secs = opt_num(argc, argv, "--seconds", 10);
	long warm = (long)opt_num(argc, argv, "--warmup", 20);
	const char *name = opt_str(argc, argv, "--name", "spawn");
	const char *av = opt_str(argc, argv, "--argv", NULL);
	if (av)
		set_argv_csv(av);
	struct conn *cs = calloc((size_t)nc, sizeof(*cs));
	for (int i = 0; i < nc; i++)
		conn_open(&cs[i], i);
	double el;
	spawn_phase(cs, nc, warm, 30, NULL, &el);
	struct spawn_stats st = { 0 };
	long done = spawn_phase(cs, nc, iters, secs, &st, &el);
	char buf[160];
	snprintf(buf, sizeof(buf), "%s_per_sec_%dc", name, nc);
	emit(buf, "1/s", (double)done / el, (unsigned long long)done);
	snprintf(buf, sizeof(buf), "%s_reply_%dc", name, nc);
	emit_lat(buf, &st.reply);
	snprintf(buf, sizeof(buf), "%s_first_output_%dc", name, nc);
	emit_lat(buf, &st.first_out);
	snprintf(buf, sizeof(buf), "%s_exited_%dc", name, nc);
	emit_lat(buf, &st.exited);
	snprintf(buf, sizeof(buf), "%s_closed_%dc", name, nc);
	emit_lat(buf, &st.closed);
	return 0;
}

/* -------------------------------------------------------------------- rpc */

static void rpc_send(struct conn *c)
{
	char buf[160];
	long long id = c->next_id++;
	int n = snprintf(buf, sizeof(buf),
			 "{\"id\":%lld,\"method\":\"process/read\",\"params\":{\"processId\":\"r\",\"waitMs\":0}}", id);
	c->sent[id & 255] = now_ns();
	c->inflight++;
	if (wsc_send(&c->ws, buf, (size_t)n) < 0)
		die("send failed");
}

struct rpc_run {
	long done;
	uint64_t deadline;
	bool stop; /* past the deadline: no new request */
	struct samples *lat;
};

/* A reply: its round trip, and the next request on c until the deadline. */
static long rpc_on_msg(struct conn *c, const char *m, size_t l, void *ctx)
{
	struct rpc_run *run = ctx;
	long long id;

	if (!is_reply(m, l) || jint(m, l, "id", &id) < 0)
		return 0;
	if (run->done == 0)
		check_reply_ok(m, l);
	uint64_t tr = now_ns();
	if (run->lat)
		samples_add(run->lat, tr - c->sent[id & 255]);
	c->inflight--;
	run->done++;
	if (!run->stop && tr >= run->deadline)
		run->stop = true;
	if (run->stop)
		return 1;
	rpc_send(c);
	return 0;
}

static long rpc_phase(struct conn *cs, int n, int depth, double seconds, struct samples *lat, double *elapsed)
{
	uint64_t t0 = now_ns();
	struct rpc_run run = { .deadline = t0 + (uint64_t)(seconds * 1e9), .lat = lat };

	for (int i = 0; i < n; i++)
		for (int d = 0; d < depth; d++)
			rpc_send(&cs[i]);
	run_phase(cs, n, (long)n * depth, "rpc", rpc_on_msg, &run);
	*elapsed = (double)(now_ns() - t0) / 1e9;
	return run.done;
}

static void start_and_wait_closed(struct conn *c, const char *pid)
{
	snprintf(c->pid, sizeof(c->pid), "%s", pid);
	c->busy = 1;
	c->have_reply = c->have_exit = c->have_closed = 0;
	c->t0 = now_ns();
	c->start_id = send_start(c, pid);
	for (;;) {
		const char *m;
		size_t l;
		recv_msg(c, &m, &l);
		if (spawn_handle(c, m, l, NULL))
			return;
	}
}

static int cmd_rpc(int argc, char **argv)
{
	int nc = (int)opt_num(argc, argv, "--conns", 1);
	int depth = (int)opt_num(argc, argv, "--depth", 1);
	double secs = opt_num(argc, argv, "--seconds", 3);
	const char *name = opt_str(argc, argv, "--name", "rpc_read");
	if (depth < 1 || depth > 200)
		die("--depth must be 1..200");
	/* --no-start: read an unknown process (an error reply) — for profilers
	 * such as valgrind under which the server cannot spawn. */
	int no_start = opt_flag(argc, argv, "--no-start");
	g_allow_error = no_start;
	struct conn *cs = calloc((size_t)nc, sizeof(*cs));
	for (int i = 0; i < nc; i++) {
		conn_open(&cs[i], i);
		if (!no_start)
			start_and_wait_closed(&cs[i], "r");
	}
	double el;
	long warm = rpc_phase(cs, nc, depth, 0.3, NULL, &el); /* warm-up */
	struct samples lat = { 0 };
	long done = rpc_phase(cs, nc, depth, secs, &lat, &el);
	/* every request sent, for bench.py's server-CPU-per-request figure */
	emit("_requests_total", "1", (double)(warm + done + nc), (unsigned long long)(warm + done + nc));
	char buf[160];
	const char *ds = "";
	char dbuf[16];
	if (depth > 1) {
		snprintf(dbuf, sizeof(dbuf), "_d%d", depth);
		ds = dbuf;
	}
	snprintf(buf, sizeof(buf), "%s_per_sec_%dc%s", name, nc, ds);
	emit(buf, "1/s", (double)done / el, (unsigned long long)done);
	snprintf(buf, sizeof(buf), "%s_rtt_%dc%s", name, nc, ds);
	emit_lat(buf, &lat);
	return 0;
}


/* ------------------------------------------------------------------ storm */

/*
 * Another connection's process/read while a spawn storm runs: the reader
 * (connection 0) keeps one `process/read {waitMs:0}` of a finished process
 * in flight; connections 1..n spawn /bin/true back to back (one outstanding
 * each). A spawn must never hold up the reader: its RTT p99 during the storm
 * is compared with its RTT alone, measured first on the same connection.
 */
struct storm_run {
	struct spawn_run sp;
	struct rpc_run rd;
};

static long storm_on_msg(struct conn *c, const char *m, size_t l, void *ctx)
{
	struct storm_run *run = ctx;

	if (c->idx == 0)
		return rpc_on_msg(c, m, l, &run->rd);
	/* The storm lasts as long as the reader measures. */
	run->sp.deadline = run->rd.stop ? 0 : UINT64_MAX;
	return spawn_on_msg(c, m, l, &run->sp);
}

static int cmd_storm(int argc, char **argv)
{
	int nc = (int)opt_num(argc, argv, "--conns", 4);
	double secs = opt_num(argc, argv, "--seconds", 3);
	struct conn *cs = calloc((size_t)nc + 1, sizeof(*cs));
	struct samples alone = { 0 }, during = { 0 };
	struct spawn_stats st = { 0 };
	double el;

	if (nc < 1 || nc > 64)
		die("--conns must be 1..64");
	for (int i = 0; i <= nc; i++)
		conn_open(&cs[i], i);
	start_and_wait_closed(&cs[0], "r");
	rpc_phase(cs, 1, 1, 0.3, NULL, &el); /* warm-up */
	rpc_phase(cs, 1, 1, secs, &alone, &el);

	struct storm_run run = { .sp = { .iters = LONG_MAX, .deadline = UINT64_MAX, .st = &st },
				 .rd = { .deadline = now_ns() + (uint64_t)(secs * 1e9), .lat = &during } };
	long active = 1;

	for (int i = 1; i <= nc; i++) {
		spawn_begin(&cs[i]);
		run.sp.started++;
		active++;
	}
	rpc_send(&cs[0]);
	uint64_t t0 = now_ns();
	run_phase(cs, nc + 1, active, "storm", storm_on_msg, &run);
	el = (double)(now_ns() - t0) / 1e9;

	char buf[160];
	snprintf(buf, sizeof(buf), "storm_%dc_spawns_per_sec", nc);
	emit(buf, "1/s", (double)run.sp.done / el, (unsigned long long)run.sp.done);
	emit_lat("storm_read_rtt_alone", &alone);
	snprintf(buf, sizeof(buf), "storm_%dc_read_rtt", nc);
	emit_lat(buf, &during);
	snprintf(buf, sizeof(buf), "storm_%dc_spawn_reply", nc);
	emit_lat(buf, &st.reply);
	return 0;
}

/* ------------------------------------------------------------- throughput */

static int cmd_throughput(int argc, char **argv)
{
	const char *child = opt_str(argc, argv, "--child", NULL);
	double bytes = opt_num(argc, argv, "--bytes", 256.0 * 1024 * 1024);
	g_tty = opt_flag(argc, argv, "--tty");
	if (!child)
		die("--child required");
	char nb[32];
	snprintf(nb, sizeof(nb), "%.0f", bytes);
	const char *args[] = { child, "produce", nb };
	set_argv(args, 3);
	struct conn c;
	conn_open(&c, 0);
	snprintf(c.pid, sizeof(c.pid), "t");
	c.busy = 1;
	uint64_t t0 = now_ns(), t_first = 0;
	c.start_id = send_start(&c, "t");
	unsigned long long got = 0, chunks = 0;
	int closed = 0, exited = 0;
	while (!closed) {
		const char *m;
		size_t l;
		recv_msg(&c, &m, &l);
		if (is_reply(m, l)) {
			check_reply_ok(m, l);
			continue;
		}
		if (jis(m, l, "process/output")) {
			const char *v;
			long n = jstr(m, l, "chunk", &v);
			if (n < 0)
				die("output without chunk");
			got += b64_declen(v, (size_t)n);
			if (!chunks)
				t_first = now_ns();
			chunks++;
		} else if (jis(m, l, "process/exited")) {
			exited = 1;
		} else if (jis(m, l, "process/closed")) {
			closed = 1;
		}
	}
	uint64_t t1 = now_ns();
	(void)exited;
	(void)t_first;
	if (got < (unsigned long long)bytes)
		fprintf(stderr, "loadgen: throughput: got %llu of %.0f bytes\n", got, bytes);
	const char *mode = g_tty ? "pty" : "pipe";
	char buf[128];
	snprintf(buf, sizeof(buf), "throughput_%s", mode);
	emit(buf, "MB/s", (double)got / ((double)(t1 - t0) / 1e9) / 1e6, got);
	snprintf(buf, sizeof(buf), "throughput_%s_chunk_avg", mode);
	emit(buf, "B", chunks ? (double)got / (double)chunks : 0, chunks);
	return 0;
}

/* ------------------------------------------------------------------- echo */

static int cmd_echo(int argc, char **argv)
{
	long iters = (long)opt_num(argc, argv, "--iters", 2000);
	double secs = opt_num(argc, argv, "--seconds", 10);
	long warm = 20;
	const char *args[] = { "/bin/cat" };
	set_argv(args, 1);
	g_pipe_stdin = 1;
	struct conn c;
	conn_open(&c, 0);
	snprintf(c.pid, sizeof(c.pid), "cat");
	c.start_id = send_start(&c, "cat");
	for (;;) { /* wait for the start reply */
		const char *m;
		size_t l;
		recv_msg(&c, &m, &l);
		if (is_reply(m, l)) {
			check_reply_ok(m, l);
			break;
		}
	}
	struct samples echo = { 0 }, reply = { 0 };
	char acc[4096];
	size_t accn = 0;
	uint64_t deadline = now_ns() + (uint64_t)(secs * 1e9);
	for (long i = 0; i < warm + iters && now_ns() < deadline; i++) {
		char payload[64], b64[128], msg[512], marker[64];
		int pn = snprintf(payload, sizeof(payload), "ping-%ld-abcdefghijklmnop\n", i);
		snprintf(marker, sizeof(marker), "%s", payload);
		b64_encode((const unsigned char *)payload, (size_t)pn, b64);
		long long id = c.next_id++;
		int n = snprintf(msg, sizeof(msg),
				 "{\"id\":%lld,\"method\":\"process/write\",\"params\":{\"processId\":\"cat\",\"chunk\":\"%s\",\"writeId\":\"%ld\"}}",
				 id, b64, i + 1);
		uint64_t t0 = now_ns();
		if (wsc_send(&c.ws, msg, (size_t)n) < 0)
			die("send failed");
		int have_reply = 0, have_echo = 0;
		while (!have_reply || !have_echo) {
			const char *m;
			size_t l;
			recv_msg(&c, &m, &l);
			uint64_t t = now_ns();
			if (is_reply(m, l)) {
				long long rid;
				if (jint(m, l, "id", &rid) == 0 && rid == id) {
					check_reply_ok(m, l);
					have_reply = 1;
					if (i >= warm)
						samples_add(&reply, t - t0);
				}
			} else if (jis(m, l, "process/output")) {
				if (!append_chunk(m, l, acc, &accn, sizeof(acc)))
					die("echo: unexpected output");
				if (memmem(acc, accn, marker, strlen(marker))) {
					have_echo = 1;
					accn = 0;
					if (i >= warm)
						samples_add(&echo, t - t0);
				}
			} else if (jis(m, l, "process/exited")) {
				die("echo: cat exited");
			}
		}
	}
	char msg[256];
	int n = snprintf(msg, sizeof(msg),
			 "{\"id\":%lld,\"method\":\"process/terminate\",\"params\":{\"processId\":\"cat\"}}", c.next_id++);
	wsc_send(&c.ws, msg, (size_t)n);
	emit_lat("write_echo", &echo);
	emit_lat("write_reply", &reply);
	return 0;
}

/* ---------------------------------------------------- child-stamped latency */

/* Parses "T=<ns>\n" lines in buf[0..n); calls fn for each complete line. Returns bytes consumed. */
static size_t parse_stamps(const char *buf, size_t n, uint64_t now, struct samples *s)
{
	size_t off = 0;
	for (;;) {
		const char *nl = memchr(buf + off, '\n', n - off);
		if (!nl)
			return off;
		if (buf[off] == 'T' && buf[off + 1] == '=') {
			uint64_t ts = strtoull(buf + off + 2, NULL, 10);
			if (s && now > ts)
				samples_add(s, now - ts);
		}
		off = (size_t)(nl - buf) + 1;
	}
}

/*
 * Starts pid on c and reads its messages until process/closed: replies must
 * be successes, every other message goes to on_note with the time it came.
 */
static void run_to_closed(struct conn *c, const char *pid,
			  void (*on_note)(const char *m, size_t l, uint64_t t, void *ctx), void *ctx)
{
	snprintf(c->pid, sizeof(c->pid), "%s", pid);
	c->start_id = send_start(c, c->pid);
	for (;;) {
		const char *m;
		size_t l;
		recv_msg(c, &m, &l);
		uint64_t t = now_ns();
		if (is_reply(m, l))
			check_reply_ok(m, l);
		else if (jis(m, l, "process/closed"))
			return;
		else
			on_note(m, l, t, ctx);
	}
}

struct exitlat_run {
	char out[256];
	size_t outn;
	uint64_t stamp;	/* the child's "T=" exit marker, 0 until seen */
	bool measured;	/* past the warm-up runs */
	struct samples exitlat, outlat;
};

static void exitlat_note(const char *m, size_t l, uint64_t t, void *ctx)
{
	struct exitlat_run *run = ctx;

	if (jis(m, l, "process/output")) {
		if (append_chunk(m, l, run->out, &run->outn, sizeof(run->out))) {
			char *p = strstr(run->out, "T=");
			if (p && strchr(p, '\n')) {
				run->stamp = strtoull(p + 2, NULL, 10);
				if (run->measured)
					samples_add(&run->outlat, t - run->stamp);
			}
		}
	} else if (jis(m, l, "process/exited")) {
		if (run->stamp && run->measured)
			samples_add(&run->exitlat, t - run->stamp);
	}
}

static int cmd_exitlat(int argc, char **argv)
{
	const char *child = opt_str(argc, argv, "--child", NULL);
	long iters = (long)opt_num(argc, argv, "--iters", 500);
	double secs = opt_num(argc, argv, "--seconds", 10);
	if (!child)
		die("--child required");
	const char *args[] = { child, "exit" };
	set_argv(args, 2);
	struct conn c;
	conn_open(&c, 0);
	static struct exitlat_run run;
	uint64_t deadline = now_ns() + (uint64_t)(secs * 1e9);
	for (long i = 0; i < iters + 10 && now_ns() < deadline; i++) {
		char pid[32];
		snprintf(pid, sizeof(pid), "x%ld", i);
		run.outn = 0;
		run.stamp = 0;
		run.measured = i >= 10;
		run_to_closed(&c, pid, exitlat_note, &run);
	}
	emit_lat("exit_to_exited", &run.exitlat);
	emit_lat("exit_marker_to_output", &run.outlat);
	return 0;
}

struct outlat_run {
	char out[65536];
	size_t outn;
	struct samples lat;
};

static void outlat_note(const char *m, size_t l, uint64_t t, void *ctx)
{
	struct outlat_run *run = ctx;

	if (jis(m, l, "process/output") &&
	    append_chunk(m, l, run->out, &run->outn, sizeof(run->out))) {
		size_t used = parse_stamps(run->out, run->outn, t, &run->lat);
		memmove(run->out, run->out + used, run->outn - used);
		run->outn -= used;
	}
}

static int cmd_outlat(int argc, char **argv)
{
	const char *child = opt_str(argc, argv, "--child", NULL);
	int procs = (int)opt_num(argc, argv, "--procs", 3);
	const char *lines = opt_str(argc, argv, "--lines", "300");
	const char *interval = opt_str(argc, argv, "--interval-us", "1000");
	if (!child)
		die("--child required");
	const char *args[] = { child, "stream", lines, interval };
	set_argv(args, 4);
	struct conn c;
	conn_open(&c, 0);
	static struct outlat_run run;
	for (int i = 0; i < procs; i++) {
		char pid[32];
		snprintf(pid, sizeof(pid), "o%d", i);
		run.outn = 0;
		run_to_closed(&c, pid, outlat_note, &run);
	}
	emit_lat("output_to_notification", &run.lat);
	return 0;
}

/* ------------------------------------------------------------------- idle */

static void wait_stdin_eof(void)
{
	printf("ready\n");
	fflush(stdout);
	char b[256];
	while (read(0, b, sizeof(b)) > 0)
		;
}

static void raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int cmd_idle(int argc, char **argv)
{
	int nc = (int)opt_num(argc, argv, "--conns", 500);
	raise_nofile();
	struct conn *cs = calloc((size_t)nc, sizeof(*cs));
	for (int i = 0; i < nc; i++)
		conn_open(&cs[i], i);
	wait_stdin_eof();
	for (int i = 0; i < nc; i++)
		wsc_close(&cs[i].ws);
	return 0;
}

static int cmd_idleproc(int argc, char **argv)
{
	int np = (int)opt_num(argc, argv, "--procs", 500);
	const char *args[] = { "/bin/sleep", opt_str(argc, argv, "--sleep", "300") };
	set_argv(args, 2);
	struct conn c;
	conn_open(&c, 0);
	int window = 16, sent = 0, replies = 0;
	while (replies < np) {
		while (sent < np && sent - replies < window) {
			char pid[32];
			snprintf(pid, sizeof(pid), "i%d", sent++);
			send_start(&c, pid);
		}
		const char *m;
		size_t l;
		recv_msg(&c, &m, &l);
		if (is_reply(m, l)) {
			check_reply_ok(m, l);
			replies++;
		}
	}
	wait_stdin_eof();
	/* terminate them all so nothing outlives the benchmark */
	int acks = 0;
	sent = 0;
	while (acks < np) {
		while (sent < np && sent - acks < window) {
			char msg[160];
			int n = snprintf(msg, sizeof(msg),
					 "{\"id\":%lld,\"method\":\"process/terminate\",\"params\":{\"processId\":\"i%d\"}}",
					 c.next_id++, sent++);
			wsc_send(&c.ws, msg, (size_t)n);
		}
		const char *m;
		size_t l;
		recv_msg(&c, &m, &l);
		if (is_reply(m, l))
			acks++;
	}
	return 0;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2) {
		fprintf(stderr, "usage: uexec-loadgen spawn|rpc|storm|throughput|echo|exitlat|outlat|idle|idleproc --url ws://IP:PORT ...\n");
		return 2;
	}
	g_url = opt_str(argc, argv, "--url", NULL);
	if (!g_url)
		die("--url required");
	const char *cmd = argv[1];
	if (!strcmp(cmd, "spawn"))
		return cmd_spawn(argc, argv);
	if (!strcmp(cmd, "rpc"))
		return cmd_rpc(argc, argv);
	if (!strcmp(cmd, "throughput"))
		return cmd_throughput(argc, argv);
	if (!strcmp(cmd, "echo"))
		return cmd_echo(argc, argv);
	if (!strcmp(cmd, "exitlat"))
		return cmd_exitlat(argc, argv);
	if (!strcmp(cmd, "outlat"))
		return cmd_outlat(argc, argv);
	if (!strcmp(cmd, "storm"))
		return cmd_storm(argc, argv);
	if (!strcmp(cmd, "idle"))
		return cmd_idle(argc, argv);
	if (!strcmp(cmd, "idleproc"))
		return cmd_idleproc(argc, argv);
	die("unknown command");
	return 2;
}
