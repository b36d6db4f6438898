/* SPDX-License-Identifier: MIT */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
/*
 * uexec-relaybench: the same exec-server client over the direct WebSocket or
 * over the remote relay (RELAY.md §4.1: registry /connect, rendezvous
 * WebSocket, Resume + Noise handshake, 60 KiB AES-GCM records in relay
 * frames), so the two paths are measured by one program with one code path
 * above the channel. Blocking sockets, one connection, C crypto from
 * src/remote/codec (remote_codec_dep) and src/remote/codec/relay-frame.c: the client should
 * never be what limits the relay figures (it reports its own CPU).
 *
 *   uexec-relaybench MODE SCENARIO [options]
 *     MODE:  --url ws://IP:PORT                                 (direct)
 *            --registry http://IP:PORT --environment-id ID      (relay)
 *     handshake  [--iters N]          connect -> initialized; channel setup alone
 *     rpc        [--seconds S]        process/read {waitMs:0} of an exited process, closed loop
 *     spawn      [--iters N] [--seconds S]   process/start /bin/true -> exited (-> closed)
 *     throughput --child PATH [--bytes N]    output MB/s through process/output; client CPU/MB
 *
 * Metric names are the same in both modes (rl_*); bench.py tags the mode.
 */
#include "common.h"
#include "wsc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "channel.h"
#include "noise.h"
#include "records.h"
#include "relay-frame.h"

static void die(const char *what)
{
	fprintf(stderr, "relaybench: %s\n", what);
	exit(1);
}

static const char *g_url, *g_registry, *g_env;

/* ------------------------------------------------------------- the channel */

struct ch {
	struct wsc ws;
	bool relay;
	char sid[40];
	struct noise_transport t;
	uint32_t send_seq, recv_seq;
	/*
	 * Records are opened straight into in[]; ch_recv returns messages in
	 * place (valid until the next call), as a harness hands a decoded
	 * message on: no copy but the decryption (the old reader + queue made
	 * three more and were 40% of this client's CPU at 300 MB/s).
	 */
	uint8_t *in;
	size_t in_off, in_len, in_cap;
	uint8_t *rec, *ct, *frame;
	/* timings of the last open, ns */
	uint64_t t_registry, t_setup, t_total;
	uint64_t t_wait; /* relay: msg1 frame sent -> msg2 frame received (no harness crypto) */
};

static void send_frame(struct ch *c, const struct relay_frame *f)
{
	ssize_t n = relay_frame_encode(f, c->frame, RELAY_FRAME_MAX_MESSAGE);
	if (n < 0)
		die("relay_frame_encode");
	if (wsc_send_binary(&c->ws, c->frame, (size_t)n) < 0)
		die("send failed");
}

static void ch_send(struct ch *c, const char *msg, size_t len)
{
	if (!c->relay) {
		if (wsc_send(&c->ws, msg, len) < 0)
			die("send failed");
		return;
	}
	struct relay_msg_writer w;
	if (relay_msg_writer_init(&w, (const uint8_t *)msg, len) < 0)
		die("message size");
	size_t n;
	while ((n = relay_msg_writer_next(&w, c->rec)) > 0) {
		ssize_t cn = noise_encrypt(&c->t, c->rec, n, c->ct, RELAY_RECORD_MAX + NOISE_TAG_BYTES);
		if (cn < 0)
			die("noise_encrypt");
		uint32_t seq;
		if (relay_seq_take(&c->send_seq, &seq) < 0)
			die("sequence exhausted");
		struct relay_frame f;
		relay_frame_init_data(&f, c->sid, strlen(c->sid), seq, c->ct, (size_t)cn);
		send_frame(c, &f);
	}
}

/* One relay frame for our stream, decoded (the caller frees it). Dies on EOF/timeout. */
static int next_frame(struct ch *c, struct relay_frame *f, int timeout_ms)
{
	for (;;) {
		const char *m;
		size_t l;
		int r = wsc_recv(&c->ws, &m, &l, timeout_ms);
		if (r <= 0)
			return r;
		enum relay_frame_error fe;
		if (relay_frame_decode((const uint8_t *)m, l, f, &fe) < 0) {
			fprintf(stderr, "relaybench: bad frame: %s\n", relay_frame_error_str(fe));
			exit(1);
		}
		if (f->stream_id_len == strlen(c->sid) && !memcmp(f->stream_id, c->sid, f->stream_id_len)) {
			if (f->kind == RELAY_FRAME_RESET)
				die("stream reset by the executor");
			return 1;
		}
		relay_frame_done(f);
	}
}

/* A protobuf varint at *p (< end); -1 when malformed. */
static int pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (int sh = 0; sh < 64 && *p < end; sh += 7) {
		uint8_t b = *(*p)++;
		*v |= (uint64_t)(b & 0x7f) << sh;
		if (!(b & 0x80))
			return 0;
	}
	return -1;
}

/*
 * The Data frames an executor sends (RELAY.md §2: version 1, stream_id, a
 * data body of seq and payload; ack, ack_bits, segment fields at their
 * defaults), decoded without copies: the payload is a view into the frame.
 * 0 when the frame is something else (relay_frame_decode() then decides).
 */
static int fast_data(const uint8_t *b, size_t n, const char *sid, uint32_t *seq, const uint8_t **pl,
		     size_t *pl_len)
{
	const uint8_t *p = b, *end = b + n, *body = NULL;
	uint64_t v, len, ver = 0;
	bool sid_ok = false;
	size_t body_len = 0;
	while (p < end) {
		uint64_t key;
		if (pb_varint(&p, end, &key) < 0)
			return 0;
		if ((key & 7) == 0) {
			if (pb_varint(&p, end, &v) < 0)
				return 0;
			if (key >> 3 == 1)
				ver = v;
			else if (v) /* ack, ack_bits: always 0 */
				return 0;
			continue;
		}
		if ((key & 7) != 2 || pb_varint(&p, end, &len) < 0 || len > (uint64_t)(end - p))
			return 0;
		if (key >> 3 == 2)
			sid_ok = len == strlen(sid) && !memcmp(p, sid, len);
		else if (key >> 3 == 5)
			body = p, body_len = len;
		else
			return 0;
		p += len;
	}
	if (ver != 1 || !sid_ok || !body)
		return 0;
	*seq = 0;
	*pl = NULL;
	for (p = body, end = body + body_len; p < end;) {
		uint64_t key;
		if (pb_varint(&p, end, &key) < 0)
			return 0;
		if (key == (1 << 3 | 0)) {
			if (pb_varint(&p, end, &v) < 0 || v > UINT32_MAX)
				return 0;
			*seq = (uint32_t)v;
		} else if (key == (4 << 3 | 2)) {
			if (pb_varint(&p, end, &len) < 0 || len > (uint64_t)(end - p) || len == 0)
				return 0;
			*pl = p;
			*pl_len = len;
			p += len;
		} else {
			return 0; /* segment_index/count at their defaults are absent */
		}
	}
	return *pl != NULL;
}

/* Opens one record into in[] (room for a whole record made first). */
static void ch_open_record(struct ch *c, uint32_t seq, const uint8_t *ct, size_t len)
{
	/* one TCP path end to end: frames arrive in order (no reordering to test here) */
	if (seq != c->recv_seq++)
		die("data frame out of order");
	if (c->in_cap - c->in_len < RELAY_RECORD_MAX) {
		memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
		c->in_len -= c->in_off;
		c->in_off = 0;
		if (c->in_cap - c->in_len < RELAY_RECORD_MAX) {
			c->in_cap = c->in_len + 4 * RELAY_RECORD_MAX;
			c->in = realloc(c->in, c->in_cap);
			if (!c->in)
				die("out of memory");
		}
	}
	ssize_t n = noise_decrypt(&c->t, ct, len, c->in + c->in_len, RELAY_RECORD_MAX);
	if (n < 0)
		die("noise_decrypt");
	c->in_len += (size_t)n;
}

/* Returns 1 with a message, 0 on timeout, -1 on EOF. */
static int ch_recv(struct ch *c, const char **msg, size_t *len, int timeout_ms)
{
	if (!c->relay)
		return wsc_recv(&c->ws, msg, len, timeout_ms);
	for (;;) {
		uint32_t n;
		int q = relay_msg_peek(c->in + c->in_off, c->in_len - c->in_off, RELAY_MESSAGE_MAX, &n);
		if (q < 0)
			die("record reassembly: bad message length");
		if (q == 1) {
			*msg = (const char *)c->in + c->in_off + RELAY_MSG_PREFIX;
			*len = n;
			c->in_off += RELAY_MSG_PREFIX + n;
			return 1;
		}
		const char *m;
		size_t l;
		int r = wsc_recv(&c->ws, &m, &l, timeout_ms);
		if (r <= 0)
			return r;
		uint32_t seq;
		const uint8_t *pl;
		size_t pl_len;
		if (fast_data((const uint8_t *)m, l, c->sid, &seq, &pl, &pl_len)) {
			ch_open_record(c, seq, pl, pl_len);
			continue;
		}
		struct relay_frame f;
		enum relay_frame_error fe;
		if (relay_frame_decode((const uint8_t *)m, l, &f, &fe) < 0) {
			fprintf(stderr, "relaybench: bad frame: %s\n", relay_frame_error_str(fe));
			exit(1);
		}
		if (f.stream_id_len == strlen(c->sid) && !memcmp(f.stream_id, c->sid, f.stream_id_len)) {
			if (f.kind == RELAY_FRAME_RESET)
				die("stream reset by the executor");
			if (f.kind == RELAY_FRAME_DATA)
				ch_open_record(c, f.data.seq, f.data.payload, f.data.payload_len);
			else if (f.kind == RELAY_FRAME_HANDSHAKE)
				die("handshake after activation");
		}
		relay_frame_done(&f);
	}
}

/* Blocking HTTP/1.1 POST to http://IP:PORT (connection: close); returns the body (malloc'd). */
static char *http_post(const char *base, const char *path, const char *body)
{
	char host[64];
	int port;
	if (sscanf(base, "http://%63[0-9.]:%d", host, &port) != 2)
		die("--registry must be http://IP:PORT");
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		die("bad registry address");
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("registry connect failed");
	size_t bl = strlen(body);
	char *req = malloc(bl + 1024);
	int n = snprintf(req, bl + 1024,
			 "POST %s HTTP/1.1\r\nHost: %s:%d\r\ncontent-type: application/json\r\n"
			 "authorization: Bearer bench-harness\r\ncontent-length: %zu\r\nconnection: close\r\n\r\n%s",
			 path, host, port, bl, body);
	for (int off = 0; off < n;) {
		ssize_t w = write(fd, req + off, (size_t)(n - off));
		if (w <= 0)
			die("registry write failed");
		off += (int)w;
	}
	free(req);
	size_t cap = 65536, len = 0;
	char *resp = malloc(cap);
	for (;;) {
		if (len + 4096 > cap)
			resp = realloc(resp, cap *= 2);
		ssize_t r = read(fd, resp + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	resp[len] = 0;
	if (len < 12 || memcmp(resp + 9, "200", 3) != 0) {
		fprintf(stderr, "relaybench: registry %s: %.300s\n", path, resp);
		exit(1);
	}
	char *b = strstr(resp, "\r\n\r\n");
	if (!b)
		die("registry response without a body");
	char *ret = strdup(b + 4);
	free(resp);
	return ret;
}

static void random_uuid(char out[37])
{
	uint8_t b[16];
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, b, 16) != 16)
		die("urandom");
	close(fd);
	b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
	b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
		 b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

static void ch_initialize(struct ch *c)
{
	static const char init[] =
		"{\"id\":0,\"method\":\"initialize\",\"params\":{\"clientName\":\"uexec-relaybench\",\"resumeSessionId\":null}}";
	ch_send(c, init, sizeof(init) - 1);
	for (;;) {
		const char *m;
		size_t l;
		if (ch_recv(c, &m, &l, 30000) != 1)
			die("no initialize reply");
		long long id;
		if (jint(m, l, "id", &id) == 0 && id == 0) {
			if (!jfind(m, l, "result"))
				die("initialize failed");
			break;
		}
	}
	static const char initd[] = "{\"method\":\"initialized\",\"params\":{}}";
	ch_send(c, initd, sizeof(initd) - 1);
}

static void ch_open_relay(struct ch *c)
{
	uint64_t t0 = now_ns();
	struct noise_keypair kp;
	struct noise_public pub, rpub;
	if (noise_keypair_generate(&kp) < 0)
		die("keygen");
	noise_keypair_public(&kp, &pub);
	json_t *body = json_pack("{s:o}", "harness_public_key", channel_public_key_json(&pub));
	char *bs = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	char path[512];
	snprintf(path, sizeof(path), "/cloud/environment/%s/connect", g_env);
	uint64_t tr0 = now_ns();
	char *resp = http_post(g_registry, path, bs);
	c->t_registry = now_ns() - tr0;
	free(bs);
	json_error_t je;
	json_t *bundle = json_loads(resp, 0, &je);
	free(resp);
	const char *url, *rid, *authz;
	json_t *ekey;
	if (!bundle || json_unpack(bundle, "{s:s, s:s, s:o, s:s}", "url", &url, "executor_registration_id", &rid,
				   "executor_public_key", &ekey, "harness_key_authorization", &authz) < 0)
		die("bad connect bundle");
	char err[128];
	if (channel_public_key_parse(ekey, &rpub, err, sizeof(err)) < 0)
		die(err);
	if (wsc_connect(&c->ws, url) < 0)
		die("rendezvous connect failed");
	random_uuid(c->sid);
	size_t plen;
	uint8_t *prologue = channel_prologue(g_env, rid, c->sid, &plen);
	struct noise_handshake *hs;
	if (!prologue ||
	    noise_handshake_new(&hs, NOISE_INITIATOR, &kp, &rpub, prologue, plen, NOISE_MSG2_DEFAULT) < 0)
		die("noise_handshake_new");
	free(prologue);
	struct relay_frame f;
	relay_frame_init(&f, RELAY_FRAME_RESUME, c->sid, strlen(c->sid));
	f.resume.next_seq = 0;
	send_frame(c, &f);
	/* msg1 -> msg2: the harness's crypto, the rendezvous both ways, the executor's
	 * msg1 read, its registry validate round trip and msg2 write */
	uint64_t ts = now_ns();
	static uint8_t m1[NOISE_MAX_MESSAGE], pl[256];
	ssize_t n1 = noise_handshake_write(hs, (const uint8_t *)authz, strlen(authz), m1, sizeof(m1));
	if (n1 < 0)
		die("msg1 write");
	relay_frame_init_handshake(&f, c->sid, strlen(c->sid), m1, (size_t)n1);
	send_frame(c, &f);
	uint64_t tw = now_ns();
	json_decref(bundle);
	struct relay_frame in;
	for (;;) {
		if (next_frame(c, &in, 30000) != 1)
			die("no msg2 within 30 s");
		if (in.kind == RELAY_FRAME_HANDSHAKE) {
			c->t_wait = now_ns() - tw;
			break;
		}
		if (in.kind == RELAY_FRAME_DATA)
			die("data before the handshake completed");
		relay_frame_done(&in);
	}
	if (noise_handshake_read(hs, in.handshake.payload, in.handshake.payload_len, pl, sizeof(pl)) != 0)
		die("msg2 read (or a non-empty msg2 payload)");
	relay_frame_done(&in);
	if (noise_handshake_split(hs, &c->t) < 0)
		die("split");
	c->t_setup = now_ns() - ts;
	noise_handshake_free(hs);
	noise_keypair_wipe(&kp);
	c->t_total = now_ns() - t0; /* without initialize; ch_open adds it */
}

static void ch_open(struct ch *c)
{
	memset(c, 0, sizeof(*c));
	uint64_t t0 = now_ns();
	if (g_registry) {
		c->relay = true;
		c->rec = malloc(RELAY_RECORD_MAX + NOISE_TAG_BYTES);
		c->ct = malloc(RELAY_RECORD_MAX + NOISE_TAG_BYTES);
		c->frame = malloc(RELAY_FRAME_MAX_MESSAGE);
		if (!c->rec || !c->ct || !c->frame)
			die("out of memory");
		ch_open_relay(c);
	} else {
		if (wsc_connect(&c->ws, g_url) < 0)
			die("connect failed");
		c->t_setup = now_ns() - t0; /* TCP connect + HTTP upgrade */
	}
	ch_initialize(c);
	c->t_total = now_ns() - t0;
}

static void ch_close(struct ch *c)
{
	wsc_close(&c->ws);
	if (c->relay) {
		free(c->in);
		noise_transport_wipe(&c->t);
		free(c->rec);
		free(c->ct);
		free(c->frame);
	}
}

static void recv_msg(struct ch *c, const char **m, size_t *l)
{
	int r = ch_recv(c, m, l, 60000);
	if (r == 0)
		die("timeout waiting for the server (60 s)");
	if (r < 0)
		die("connection lost");
}

static int is_reply(const char *m, size_t l)
{
	size_t ml;
	return jmethod(m, l, &ml) == NULL;
}

static void check_reply_ok(const char *m, size_t l)
{
	if (jfind(m, l, "error")) {
		fprintf(stderr, "relaybench: error reply: %.*s\n", (int)(l > 400 ? 400 : l), m);
		exit(1);
	}
}

static long long g_id = 1;

static long long send_start(struct ch *c, const char *pid, const char *argv_json)
{
	char buf[2048];
	long long id = g_id++;
	int n = snprintf(buf, sizeof(buf),
			 "{\"id\":%lld,\"method\":\"process/start\",\"params\":{\"processId\":\"%s\",\"argv\":%s,"
			 "\"cwd\":\"file:///tmp\",\"env\":{\"PATH\":\"/usr/bin:/bin\",\"LC_ALL\":\"C\"},"
			 "\"tty\":false,\"pipeStdin\":false,\"arg0\":null}}",
			 id, pid, argv_json);
	ch_send(c, buf, (size_t)n);
	return id;
}

/* Starts pid and waits for reply, exited and closed; the times since the send, ns. */
static void run_one(struct ch *c, const char *pid, const char *argv_json, uint64_t *t_reply, uint64_t *t_exited,
		    uint64_t *t_closed)
{
	uint64_t t0 = now_ns();
	long long sid = send_start(c, pid, argv_json);
	bool reply = false, exited = false, closed = false;
	while (!reply || !exited || !closed) {
		const char *m;
		size_t l;
		recv_msg(c, &m, &l);
		uint64_t t = now_ns() - t0;
		if (is_reply(m, l)) {
			long long id;
			if (jint(m, l, "id", &id) == 0 && id == sid) {
				check_reply_ok(m, l);
				reply = true;
				if (t_reply)
					*t_reply = t;
			}
		} else if (jis(m, l, "process/exited")) {
			exited = true;
			if (t_exited)
				*t_exited = t;
		} else if (jis(m, l, "process/closed")) {
			closed = true;
			if (t_closed)
				*t_closed = t;
		}
	}
}

/* --------------------------------------------------------------- scenarios */

static int cmd_handshake(int argc, char **argv)
{
	long iters = (long)opt_num(argc, argv, "--iters", 50);
	struct samples total = { 0 }, setup = { 0 }, reg = { 0 }, wait = { 0 };
	for (long i = 0; i < iters + 3; i++) {
		struct ch c;
		ch_open(&c);
		if (i >= 3) {
			samples_add(&total, c.t_total);
			samples_add(&setup, c.t_setup);
			if (c.relay) {
				samples_add(&reg, c.t_registry);
				samples_add(&wait, c.t_wait);
			}
		}
		ch_close(&c);
		usleep(2000); /* let the server drop the previous stream first */
	}
	emit_lat("rl_connect", &total);
	emit_lat("rl_setup", &setup);
	emit_lat("rl_registry_connect", &reg);
	emit_lat("rl_setup_wait", &wait);
	return 0;
}

static int cmd_rpc(int argc, char **argv)
{
	double secs = opt_num(argc, argv, "--seconds", 3);
	struct ch c;
	ch_open(&c);
	run_one(&c, "r", "[\"/bin/true\"]", NULL, NULL, NULL);
	struct samples lat = { 0 };
	long done = 0;
	uint64_t t0 = now_ns(), warm_end = t0 + 300000000ull, end = warm_end + (uint64_t)(secs * 1e9), tm = 0;
	for (;;) {
		char buf[160];
		long long id = g_id++;
		int n = snprintf(buf, sizeof(buf),
				 "{\"id\":%lld,\"method\":\"process/read\",\"params\":{\"processId\":\"r\",\"waitMs\":0}}",
				 id);
		uint64_t ts = now_ns();
		if (ts >= end)
			break;
		ch_send(&c, buf, (size_t)n);
		for (;;) {
			const char *m;
			size_t l;
			long long rid;
			recv_msg(&c, &m, &l);
			if (is_reply(m, l) && jint(m, l, "id", &rid) == 0 && rid == id) {
				if (done == 0)
					check_reply_ok(m, l);
				break;
			}
		}
		uint64_t te = now_ns();
		if (ts >= warm_end) {
			if (!tm)
				tm = ts;
			samples_add(&lat, te - ts);
			done++;
		}
	}
	double el = (double)(now_ns() - tm) / 1e9;
	emit("rl_rpc_per_sec", "1/s", (double)done / el, (unsigned long long)done);
	emit_lat("rl_rpc_rtt", &lat);
	ch_close(&c);
	return 0;
}

static int cmd_spawn(int argc, char **argv)
{
	long iters = (long)opt_num(argc, argv, "--iters", 1000);
	double secs = opt_num(argc, argv, "--seconds", 4);
	struct ch c;
	ch_open(&c);
	struct samples reply = { 0 }, exited = { 0 };
	uint64_t deadline = 0;
	for (long i = 0; i < iters + 20; i++) {
		char pid[32];
		snprintf(pid, sizeof(pid), "s%ld", i);
		uint64_t tr, te;
		run_one(&c, pid, "[\"/bin/true\"]", &tr, &te, NULL);
		if (i == 19)
			deadline = now_ns() + (uint64_t)(secs * 1e9);
		if (i >= 20) {
			samples_add(&reply, tr);
			samples_add(&exited, te);
			if (now_ns() > deadline)
				break;
		}
	}
	emit_lat("rl_spawn_reply", &reply);
	emit_lat("rl_spawn_exited", &exited);
	ch_close(&c);
	return 0;
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       (double)ru.ru_stime.tv_usec / 1e6;
}

static int cmd_throughput(int argc, char **argv)
{
	const char *child = opt_str(argc, argv, "--child", NULL);
	double bytes = opt_num(argc, argv, "--bytes", 256.0 * 1024 * 1024);
	if (!child)
		die("--child required");
	char argv_json[1024];
	snprintf(argv_json, sizeof(argv_json), "[\"%s\",\"produce\",\"%.0f\"]", child, bytes);
	struct ch c;
	ch_open(&c);
	/* bench.py reads the servers' CPU around the run: tell it when it starts and ends */
	printf("start\n");
	fflush(stdout);
	double c0 = cpu_s();
	uint64_t t0 = now_ns();
	long long sid = send_start(&c, "t", argv_json);
	unsigned long long got = 0, chunks = 0;
	bool closed = false;
	while (!closed) {
		const char *m;
		size_t l;
		recv_msg(&c, &m, &l);
		if (is_reply(m, l)) {
			long long id;
			if (jint(m, l, "id", &id) == 0 && id == sid)
				check_reply_ok(m, l);
		} else if (jis(m, l, "process/output")) {
			const char *v;
			long n = jstr(m, l, "chunk", &v);
			if (n < 0)
				die("output without chunk");
			got += b64_declen(v, (size_t)n);
			chunks++;
		} else if (jis(m, l, "process/closed")) {
			closed = true;
		}
	}
	uint64_t t1 = now_ns();
	double c1 = cpu_s();
	printf("end\n");
	fflush(stdout);
	if (got < (unsigned long long)bytes)
		fprintf(stderr, "relaybench: throughput: got %llu of %.0f bytes\n", got, bytes);
	double mb = (double)got / 1e6;
	emit("rl_throughput", "MB/s", mb / ((double)(t1 - t0) / 1e9), got);
	emit("rl_chunk_avg", "B", chunks ? (double)got / (double)chunks : 0, chunks);
	emit("rl_client_cpu_per_mb", "ms", (c1 - c0) * 1000 / mb, (unsigned long long)mb);
	ch_close(&c);
	return 0;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2) {
		fprintf(stderr, "usage: uexec-relaybench handshake|rpc|spawn|throughput (--url ws://IP:PORT | "
				"--registry http://IP:PORT --environment-id ID) ...\n");
		return 2;
	}
	g_url = opt_str(argc, argv, "--url", NULL);
	g_registry = opt_str(argc, argv, "--registry", NULL);
	g_env = opt_str(argc, argv, "--environment-id", "bench");
	if (!g_url == !g_registry)
		die("one of --url and --registry");
	const char *cmd = argv[1];
	if (!strcmp(cmd, "handshake"))
		return cmd_handshake(argc, argv);
	if (!strcmp(cmd, "rpc"))
		return cmd_rpc(argc, argv);
	if (!strcmp(cmd, "spawn"))
		return cmd_spawn(argc, argv);
	if (!strcmp(cmd, "throughput"))
		return cmd_throughput(argc, argv);
	die("unknown scenario");
	return 2;
}
