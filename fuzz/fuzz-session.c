/* SPDX-License-Identifier: MIT */
/*
 * Stateful fuzz target: client bytes through the real connection state
 * machine of src/ (conn.c: HTTP upgrade -> WebSocket frames -> rpc.c's
 * JSON-RPC dispatch -> the initialize/environment/process/config handlers and
 * sessions), on an in-memory ring (fake-ring.c) with this file as the
 * "kernel": it completes reads with the input, writes by collecting what the
 * server sends, cancels, and finally the resume-window timers. No socket, no
 * process, no io_uring. What the server writes is checked as it goes: one
 * HTTP response, then well-formed unmasked frames whose text is a JSON-RPC
 * response object, nothing after a Close. Every connection must end up
 * closed and freed, and every session expired and freed, after each input.
 *
 * Input: byte 0 configures the run (bits 0-2 read size, bit 3 short writes,
 * bit 4 -ENOBUFS before every other read, bit 5 small server limits, bit 6
 * pipelining: frames may arrive in the same read as the end of the HTTP
 * request, where otherwise the request head comes alone, as from a client
 * that waits for the 101); the rest is what clients send, connections
 * separated by SEP (at most MAX_CONNS; later ones may resume an earlier
 * session by its id). UEXEC_FUZZ_NO_PIPELINING=1 in the environment turns
 * bit 6 off, to fuzz past a pipelining bug until it is fixed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "buf.h"
#include "conn.h"
#include "env.h"
#include "exec.h"
#include "fake-ring.h"
#include "fake-server.h"
#include "fuzz.h"
#include "http.h"
#include "json-check.h"
#include "log.h"
#include "rpc.h"
#include "server.h"
#include "session-fakes.h"
#include "session.h"
#include "ws.h"

#define SEP "\n--next-connection--\n"
/* conn.c's HTTP_MAX_HEAD */
#define MAX_HEAD 16384
#define MAX_CONNS 4

static const size_t read_sizes[8] = { 1, 3, 16, 100, 1024, 4096, 16384, IO_BUF_SIZE };

static const struct config default_cfg = CONFIG_DEFAULTS;

static const struct config small_cfg = {
	/* limits a fuzzer can reach: backpressure, oversize frames, session limits */
	.listen = "ws://127.0.0.1:0",
	.resume_window_ms = 1000,
	.max_sessions = 2,
	.max_connections = 4,
	.max_processes = 1,
	.max_frame_bytes = 1024,
	.max_message_bytes = 2048,
	.max_json_depth = 16,
	.max_queued_bytes = 512,
	.max_inflight_bytes_per_conn = 1024,
	.max_inflight_bytes = 4096,
	.ping_interval_ms = 30000,
	.executor_version = "0.169.0",
};

struct mode {
	size_t read_size;
	bool short_writes;
	bool nobufs;
	bool pipelining;
};

static struct server srv;
static uint8_t iobuf[IO_BUF_SIZE];
static int devnull = -1;
static bool no_pipelining;
static char codex_home[] = "/tmp/uexec-fuzz-XXXXXX";

/* ---- what the server writes ---- */

enum out_phase {
	OUT_HTTP,   /* the response head to the upgrade request */
	OUT_BODY,   /* a non-101 response's body; the connection then closes */
	OUT_WS,     /* server frames */
	OUT_CLOSED, /* a Close frame was sent: nothing may follow */
};

struct out {
	enum out_phase phase;
	struct buf acc;
	int expect_status; /* what the codec says the request deserves; 0: no answer yet */
	size_t content_length;
	unsigned responses;
};

static void check_message(const uint8_t *p, size_t n)
{
	char err[256];
	json_error_t jerr;
	json_t *msg, *e;

	FUZZ_CHECK(jcheck_validate((const char *)p, n, 128, err, sizeof(err)) == 0);
	msg = json_loadb((const char *)p, n, JSON_ALLOW_NUL, &jerr);
	FUZZ_CHECK(msg && json_is_object(msg));
	if (json_object_get(msg, "method")) {
		/* a notification (process output, ...) */
		FUZZ_CHECK(!json_object_get(msg, "id"));
	} else {
		e = json_object_get(msg, "id");
		FUZZ_CHECK(json_is_integer(e) || json_is_string(e));
		e = json_object_get(msg, "error");
		FUZZ_CHECK(!e != !json_object_get(msg, "result"));
		if (e) {
			FUZZ_CHECK(json_is_integer(json_object_get(e, "code")));
			FUZZ_CHECK(json_is_string(json_object_get(e, "message")));
		}
	}
	json_decref(msg);
}

static void out_parse(struct out *o)
{
	for (;;) {
		struct ws_frame_hdr h;
		const char *end;
		int r;

		switch (o->phase) {
		case OUT_HTTP:
			end = memmem(o->acc.data, o->acc.len, "\r\n\r\n", 4);
			if (!end)
				return;
			FUZZ_CHECK(o->acc.len >= 12 && memcmp(o->acc.data, "HTTP/1.", 7) == 0);
			/* The server answers the request it was sent. */
			FUZZ_CHECK(atoi((const char *)o->acc.data + 9) == o->expect_status);
			if (memcmp(o->acc.data, "HTTP/1.1 101 ", 13) == 0) {
				o->phase = OUT_WS;
			} else {
				const char *cl = memmem(o->acc.data, (size_t)(end - (char *)o->acc.data),
							"content-length: ", 16);

				FUZZ_CHECK(cl);
				o->content_length = strtoul(cl + 16, NULL, 10);
				o->phase = OUT_BODY;
			}
			buf_consume(&o->acc, (size_t)(end + 4 - (char *)o->acc.data));
			break;
		case OUT_BODY:
			FUZZ_CHECK(o->acc.len <= o->content_length);
			return;
		case OUT_WS:
			r = ws_frame_hdr_parse(o->acc.data, o->acc.len, &h);
			if (r == -EAGAIN)
				return;
			FUZZ_CHECK(r > 0);
			FUZZ_CHECK(h.fin && !h.masked && h.rsv == 0);
			if (o->acc.len - h.header_len < h.payload_len)
				return;
			switch (h.opcode) {
			case WS_OP_TEXT:
				check_message(o->acc.data + h.header_len, (size_t)h.payload_len);
				o->responses++;
				break;
			case WS_OP_PING:
			case WS_OP_PONG:
				FUZZ_CHECK(h.payload_len <= 125);
				break;
			case WS_OP_CLOSE: {
				const uint8_t *pl = o->acc.data + h.header_len;
				unsigned code;

				FUZZ_CHECK(h.payload_len == 2);
				code = (unsigned)pl[0] << 8 | pl[1];
				FUZZ_CHECK(code >= 1000 && code <= 4999 && code != 1005 && code != 1006);
				o->phase = OUT_CLOSED;
				break;
			}
			default:
				FUZZ_CHECK(!"unexpected opcode from the server");
			}
			buf_consume(&o->acc, h.header_len + (size_t)h.payload_len);
			break;
		case OUT_CLOSED:
			FUZZ_CHECK(o->acc.len == 0);
			return;
		}
	}
}

static void out_write(struct out *o, const struct iovec *iov, unsigned n, size_t max)
{
	for (unsigned i = 0; i < n && max > 0; i++) {
		size_t k = iov[i].iov_len < max ? iov[i].iov_len : max;

		FUZZ_CHECK(buf_append(&o->acc, iov[i].iov_base, k) == 0);
		max -= k;
	}
	out_parse(o);
}

/* ---- the "kernel" ---- */

struct kernel_ctx {
	struct conn *c;
	struct out *o;
	const struct mode *m;
};

/* Writes complete (all bytes, or at most 7 with short writes); reads and timeouts wait. */
static bool kernel_step(unsigned i, struct fake_sqe *e, void *ctx)
{
	const struct kernel_ctx *k = ctx;
	const struct iovec *iov = (const struct iovec *)(uintptr_t)e->sqe.addr;
	size_t total = 0;

	switch (e->sqe.opcode) {
	case IORING_OP_RECV:
	case IORING_OP_READ:
	case IORING_OP_TIMEOUT:
		return false;
	case IORING_OP_WRITEV:
		FUZZ_CHECK(k->c && e->op == &k->c->write_op && (int)e->sqe.fd == k->c->fd_out);
		FUZZ_CHECK(e->sqe.len > 0 && e->sqe.len <= CONN_MAX_IOV);
		for (unsigned n = 0; n < e->sqe.len; n++) {
			FUZZ_CHECK(iov[n].iov_len > 0);
			total += iov[n].iov_len;
		}
		if (k->m->short_writes && total > 7)
			total = 7;
		out_write(k->o, iov, e->sqe.len, total);
		fake_ring_complete(i, (int)total, 0);
		return true;
	default:
		fprintf(stderr, "unexpected SQE opcode %u\n", e->sqe.opcode);
		abort();
	}
}

/*
 * Completes every queued SQE that does not wait for the outside world:
 * writes, cancels and timeout removals. Reads wait for input and timeouts
 * for time to pass.
 */
static void kernel_run(struct conn *c, struct out *o, const struct mode *m)
{
	struct kernel_ctx k = { c, o, m };

	fake_kernel_run(kernel_step, &k);
}

/* The loop re-arms readers waiting for buffers between iterations (server/state.c). */
static bool rearm_buf_waiters(void)
{
	if (list_empty(&srv.buf_waiters))
		return false;
	server_rearm_buf_waiters(&srv);
	return true;
}

static void run_connection(const uint8_t *data, size_t len, const struct mode *m)
{
	struct out o = { .phase = OUT_HTTP };
	size_t off = 0, head_end = 0;
	unsigned reads = 0;
	struct conn *c;
	int fd = fcntl(devnull, F_DUPFD_CLOEXEC, 3);

	struct http_request req;
	struct http_upgrade up;
	int r;

	/* The oracle for the response: the codec on the whole stream at once. */
	r = http_request_parse((const char *)data, len, MAX_HEAD, &req);
	if (r > 0)
		head_end = (size_t)r;
	if (r > 0)
		o.expect_status = http_upgrade_check(&req, &up) == 0 ? up.status : 500;
	else if (r != -EAGAIN)
		o.expect_status = 400;

	FUZZ_CHECK(fd >= 0);
	FUZZ_CHECK(conn_new_ws(&srv, fd, "127.0.0.1:40000") == 0);
	c = list_entry(srv.conns.prev, struct conn, link);

	for (;;) {
		int i;

		kernel_run(c, &o, m);
		if (srv.mem_dirty) {
			/* As server.c between loop iterations: budgets, paused input. */
			conn_mem_run(&srv);
			continue;
		}
		if (rearm_buf_waiters())
			continue;
		i = fake_ring_find(&c->read_op);
		if (i < 0)
			break;
		FUZZ_CHECK(c->state == CONN_HTTP || c->state == CONN_OPEN);
		FUZZ_CHECK(fake_ring_get((unsigned)i)->sqe.opcode == IORING_OP_RECV);
		if (m->nobufs && reads++ % 2 == 0) {
			fake_ring_complete((unsigned)i, -ENOBUFS, 0);
		} else if (off < len) {
			size_t n = len - off < m->read_size ? len - off : m->read_size;

			if (!m->pipelining && off < head_end && n > head_end - off)
				n = head_end - off;

			memcpy(iobuf, data + off, n);
			off += n;
			FUZZ_CHECK(!fake_stats.buf_lent);
			fake_stats.buf_lent = true;
			fake_ring_complete((unsigned)i, (int)n, IORING_CQE_F_BUFFER);
			FUZZ_CHECK(!fake_stats.buf_lent); /* copied out and recycled at once */
		} else {
			fake_ring_complete((unsigned)i, 0, 0); /* end of input */
		}
	}
	/* Not reading and nothing left to write: the connection must be over, not stalled. */
	FUZZ_CHECK(c->state == CONN_DEAD);
	if (o.phase == OUT_BODY)
		FUZZ_CHECK(o.acc.len == o.content_length);
	if (o.expect_status == 0)
		FUZZ_CHECK(o.phase == OUT_HTTP && o.acc.len == 0);
	conn_reap(&srv);
	FUZZ_CHECK(srv.n_conns == 0 && list_empty(&srv.conns) && list_empty(&srv.dead_conns));
	buf_done(&o.acc);
}

/* Lets the resume window of every detached session pass. */
static void expire_sessions(void)
{
	bool again;

	do {
		again = false;
		for (unsigned i = 0; i < fake_ring_count(); i++)
			if (!fake_ring_get(i)->done &&
			    fake_ring_get(i)->sqe.opcode == IORING_OP_TIMEOUT) {
				fake_ring_complete(i, -ETIME, 0);
				again = true;
			}
		kernel_run(NULL, NULL, NULL);
	} while (again);
}

static void server_reset(const struct config *cfg)
{
	fake_server_reset(&srv, cfg);
	srv.bufs = (struct uring_bufs){ .base = iobuf, .count = 1, .size = IO_BUF_SIZE,
					.bgid = BGID_IO };
}

static void remove_codex_home(void)
{
	char p[sizeof(codex_home) + 16];

	snprintf(p, sizeof(p), "%s/config.toml", codex_home);
	(void)unlink(p);
	(void)rmdir(codex_home);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const char config_toml[] =
		"model = \"o3\"\n"
		"approval_policy = \"never\"\n"
		"[sandbox_workspace_write]\n"
		"network_access = false\n"
		"writable_roots = [\"/tmp\", \"/var/tmp\"]\n"
		"[profiles.fast]\n"
		"model = \"gpt-5\"\n"
		"[shell_environment_policy]\n"
		"inherit = \"core\"\n"
		"[mcp_servers.docs]\n"
		"command = \"docs-server\"\n"
		"args = [\"--port\", \"4000\"]\n";
	char path[sizeof(codex_home) + 16];
	FILE *f;

	json_object_seed(0x5eed);
	no_pipelining = getenv("UEXEC_FUZZ_NO_PIPELINING") != NULL;
	log_set_max_level(getenv("UEXEC_FUZZ_LOG") ? LOG_DEBUG : LOG_CRIT);
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	FUZZ_CHECK(devnull >= 0);

	/* environmentConfig/read reads $CODEX_HOME/config.toml: give it a fixed one. */
	FUZZ_CHECK(mkdtemp(codex_home));
	atexit(remove_codex_home);
	snprintf(path, sizeof(path), "%s/config.toml", codex_home);
	f = fopen(path, "we");
	FUZZ_CHECK(f);
	fputs(config_toml, f);
	fclose(f);
	setenv("CODEX_HOME", codex_home, 1);
	setenv("HOME", "/nonexistent-home", 1);
	setenv("TMPDIR", "/tmp", 1);

	server_reset(&default_cfg);
	FUZZ_CHECK(exec_methods_register() == 0 && env_methods_register() == 0);
	(void)getrlimit(RLIMIT_NOFILE, &srv.nofile_orig);
	FUZZ_CHECK(env_init(&srv, strdup("/bin/sh")) == 0);
	exec_set_environment(env_login_shell(), env_info());
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mode m;
	unsigned n_conns = 0;

	if (size < 1 || size > 1 << 20)
		return 0;
	m.read_size = read_sizes[data[0] & 7];
	m.short_writes = data[0] & 0x08;
	m.nobufs = data[0] & 0x10;
	m.pipelining = (data[0] & 0x40) && !no_pipelining;
	server_reset(data[0] & 0x20 ? &small_cfg : &default_cfg);
	fake_stats = (struct fake_stats){ 0 };
	data++;
	size--;

	while (n_conns < MAX_CONNS) {
		const uint8_t *sep = n_conns + 1 < MAX_CONNS ? memmem(data, size, SEP, strlen(SEP)) : NULL;
		size_t n = sep ? (size_t)(sep - data) : size;

		run_connection(data, n, &m);
		n_conns++;
		if (!sep)
			break;
		data += n + strlen(SEP);
		size -= n + strlen(SEP);
	}

	expire_sessions();
	session_reap(&srv);
	FUZZ_CHECK(srv.n_sessions == 0 && list_empty(&srv.sessions));
	FUZZ_CHECK(fake_ring_count() == 0);
	fake_ring_reset();
	return 0;
}
