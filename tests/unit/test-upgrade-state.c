/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for the live upgrade's state blob (src/upgrade/state.c, fds.c):
 * a round trip of every record kind, a blob cut at every byte and corrupted
 * at every byte, each refusal rule, and the fd checks after execve.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "state.h"
#include "tests.h"
#include "view.h"

#define SID "0a1b2c3d-0000-4000-8000-000000000001"

/* The fds a sample names (numbers only; the parser does no I/O). */
enum { FD_LISTEN = 5, FD_OUT = 7, FD_ERR = 8, FD_CONN = 9, FD_SUP = 10 };

/* The sample into an initialised writer (heap or memfd). */
static void sample_into(struct upgrade_writer *w)
{
	static const uint8_t pid_nul[] = { 'p', 0, '1' };

	upgrade_writer_begin(w, UPGRADE_REC_SERVER);            /* record 0 */
	upgrade_writer_str(w, UPGRADE_SERVER_VERSION, "0.1.0");
	upgrade_writer_u64(w, UPGRADE_SERVER_START_MS, 1700000000000ull);
	upgrade_writer_u64(w, UPGRADE_SERVER_UPGRADES, 2);
	upgrade_writer_end(w);
	upgrade_writer_begin(w, UPGRADE_REC_METRIC);            /* 1 */
	upgrade_writer_str(w, UPGRADE_METRIC_NAME, "uexec_processes_started_total");
	upgrade_writer_u64(w, UPGRADE_METRIC_VALUE, 42);
	upgrade_writer_end(w);
	upgrade_writer_begin(w, UPGRADE_REC_HELD_FD);           /* 2 */
	upgrade_writer_u64(w, UPGRADE_HELD_ROLE, UPGRADE_HELD_SUPERVISOR);
	upgrade_writer_fd(w, UPGRADE_HELD_FD, FD_SUP);
	upgrade_writer_end(w);
	upgrade_writer_begin(w, UPGRADE_REC_LISTENER);          /* 3 */
	upgrade_writer_fd(w, UPGRADE_LISTENER_FD, FD_LISTEN);
	upgrade_writer_str(w, UPGRADE_LISTENER_URL, "ws://127.0.0.1:8822");
	upgrade_writer_end(w);
	upgrade_writer_begin(w, UPGRADE_REC_SESSION);           /* 4 */
	upgrade_writer_str(w, UPGRADE_SESSION_ID, SID);
	upgrade_writer_u64(w, UPGRADE_SESSION_EXPIRY_NS, 0);
	upgrade_writer_end(w);
	upgrade_writer_begin(w, UPGRADE_REC_PROC);              /* 5 */
	upgrade_writer_ref(w, UPGRADE_PROC_SESSION, 4);
	upgrade_writer_bytes(w, UPGRADE_PROC_ID, pid_nul, sizeof(pid_nul));
	upgrade_writer_u64(w, UPGRADE_PROC_PID, 1234);
	upgrade_writer_fd(w, UPGRADE_PROC_OUT_FD, FD_OUT);
	upgrade_writer_fd(w, UPGRADE_PROC_ERR_FD, FD_ERR);
	upgrade_writer_u64(w, UPGRADE_PROC_NEXT_SEQ, 4);
	upgrade_writer_chunks_begin(w, UPGRADE_PROC_RETAINED);
	upgrade_writer_chunk(w, 1, UPGRADE_STREAM_STDOUT, "hello\n", 6);
	upgrade_writer_chunk(w, 3, UPGRADE_STREAM_STDERR, "oops", 4);
	upgrade_writer_chunks_end(w);
	upgrade_writer_end(w);
	upgrade_writer_begin(w, UPGRADE_REC_PROC);              /* 6: exited and closed */
	upgrade_writer_ref(w, UPGRADE_PROC_SESSION, 4);
	upgrade_writer_bytes(w, UPGRADE_PROC_ID, "done", 4);
	upgrade_writer_u64(w, UPGRADE_PROC_PID, 1235);
	upgrade_writer_u64(w, UPGRADE_PROC_NEXT_SEQ, 3);
	upgrade_writer_bool(w, UPGRADE_PROC_REAPED, true);
	upgrade_writer_bool(w, UPGRADE_PROC_EXITED, true);
	upgrade_writer_u64(w, UPGRADE_PROC_EXIT_CODE, 137);
	upgrade_writer_u64(w, UPGRADE_PROC_TERM_SIGNAL, 9);
	upgrade_writer_u64(w, UPGRADE_PROC_EXIT_SEQ, 1);
	upgrade_writer_bool(w, UPGRADE_PROC_CLOSED, true);
	upgrade_writer_end(w);
	upgrade_writer_begin(w, UPGRADE_REC_CONN);              /* 7 */
	upgrade_writer_u64(w, UPGRADE_CONN_TRANSPORT, UPGRADE_CONN_WS);
	upgrade_writer_fd(w, UPGRADE_CONN_FD_IN, FD_CONN);
	upgrade_writer_ref(w, UPGRADE_CONN_SESSION, 4);
	upgrade_writer_bytes(w, UPGRADE_CONN_INPUT, "\x81\x85", 2);
	upgrade_writer_bool(w, UPGRADE_CONN_INITIALIZED, true);
	upgrade_writer_bool(w, UPGRADE_CONN_UPGRADED, true);
	upgrade_writer_end(w);
	upgrade_writer_begin(w, UPGRADE_REC_WATCH);             /* 8 */
	upgrade_writer_ref(w, UPGRADE_WATCH_CONN, 7);
	upgrade_writer_str(w, UPGRADE_WATCH_ID, "w1");
	upgrade_writer_bytes(w, UPGRADE_WATCH_PATH, "/tmp/x", 6);
	upgrade_writer_bool(w, UPGRADE_WATCH_RECURSIVE, true);
	upgrade_writer_end(w);
	upgrade_writer_begin(w, UPGRADE_REC_CGROUPS);           /* 9: the supervisor's pid */
	upgrade_writer_u64(w, UPGRADE_CGROUPS_WHERE_PIDS, UPGRADE_CG_NONE);
	upgrade_writer_u64(w, UPGRADE_CGROUPS_WHERE_MEMORY, UPGRADE_CG_NONE);
	upgrade_writer_u64(w, UPGRADE_CGROUPS_WHERE_CPU, UPGRADE_CG_NONE);
	upgrade_writer_u64(w, UPGRADE_CGROUPS_SEQ, 12);
	upgrade_writer_u64(w, UPGRADE_CGROUPS_SUPERVISOR, 4321);
	upgrade_writer_end(w);
	ASSERT_EQ(0, upgrade_writer_finish(w));
}

static void sample(struct upgrade_writer *w)
{
	upgrade_writer_init(w, UPGRADE_STATE_VERSION);
	sample_into(w);
}

/* Parse -> write gives the same bytes (the encoding is canonical). */
static void check_reencodes(const struct upgrade_state *st, const uint8_t *buf, size_t len)
{
	struct upgrade_writer w;

	upgrade_writer_init(&w, st->version);
	for (uint32_t i = 0; i < st->n_recs; i++) {
		upgrade_writer_begin(&w, st->recs[i].kind);
		for (uint32_t j = 0; j < st->recs[i].n_fields; j++) {
			const struct upgrade_field *f = &st->fields[st->recs[i].first + j];

			upgrade_writer_raw(&w, f->tag, f->type, f->val, f->len);
		}
		upgrade_writer_end(&w);
	}
	ASSERT_EQ(0, upgrade_writer_finish(&w));
	ASSERT_EQ(len, w.b.len);
	ASSERT_MEMEQ(buf, w.b.data, len);
	buf_done(&w.b);
}

TEST(round_trip)
{
	struct upgrade_writer w;
	struct upgrade_state st;
	const struct upgrade_field *f;
	struct upgrade_chunk c;
	size_t off = 0;
	char err[256];

	sample(&w);
	ASSERT_EQ(0, upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, sizeof(err)));
	ASSERT_STREQ("", err);
	ASSERT_EQ(1, st.version);
	ASSERT_EQ(10, st.n_recs);
	ASSERT_EQ(2, st.count[UPGRADE_REC_PROC]);
	ASSERT_EQ(1, st.count[UPGRADE_REC_SERVER]);
	ASSERT_EQ(5, st.n_fds);
	ASSERT_EQ(FD_LISTEN, st.fds[0]); /* ascending */
	ASSERT_EQ(FD_SUP, st.fds[4]);
	ASSERT_EQ(2, upgrade_rec_u64(&st, 0, UPGRADE_SERVER_UPGRADES, 99));
	ASSERT_EQ(99, upgrade_rec_u64(&st, 0, UPGRADE_SERVER_NEXT_CG, 99));
	ASSERT_EQ(FD_LISTEN, upgrade_rec_num(&st, 3, UPGRADE_LISTENER_FD));
	ASSERT_EQ(-1, upgrade_rec_num(&st, 5, UPGRADE_PROC_PIDFD));
	ASSERT_EQ(4, upgrade_rec_num(&st, 5, UPGRADE_PROC_SESSION));
	ASSERT_EQ(1234, upgrade_rec_u64(&st, 5, UPGRADE_PROC_PID, 0));
	ASSERT_TRUE(upgrade_rec_bool(&st, 6, UPGRADE_PROC_CLOSED));
	ASSERT_TRUE(!upgrade_rec_bool(&st, 5, UPGRADE_PROC_CLOSED));
	f = upgrade_rec_field(&st, 5, UPGRADE_PROC_ID);
	ASSERT_TRUE(f);
	ASSERT_EQ(3, f->len);
	ASSERT_MEMEQ("p\0" "1", f->val, 3);
	f = upgrade_rec_field(&st, 4, UPGRADE_SESSION_ID);
	ASSERT_TRUE(f && f->len == 36);
	ASSERT_MEMEQ(SID, f->val, 36);
	f = upgrade_rec_field(&st, 5, UPGRADE_PROC_RETAINED);
	ASSERT_TRUE(f);
	ASSERT_EQ(1, upgrade_chunks_next(f, &off, &c));
	ASSERT_EQ(1, c.seq);
	ASSERT_EQ(UPGRADE_STREAM_STDOUT, c.stream);
	ASSERT_EQ(6, c.len);
	ASSERT_MEMEQ("hello\n", c.data, 6);
	ASSERT_EQ(1, upgrade_chunks_next(f, &off, &c));
	ASSERT_EQ(3, c.seq);
	ASSERT_EQ(UPGRADE_STREAM_STDERR, c.stream);
	ASSERT_MEMEQ("oops", c.data, 4);
	ASSERT_EQ(0, upgrade_chunks_next(f, &off, &c));
	ASSERT_STREQ("proc", upgrade_kind_name(UPGRADE_REC_PROC));
	ASSERT_STREQ("nextSeq", upgrade_field_name(UPGRADE_REC_PROC, UPGRADE_PROC_NEXT_SEQ));
	ASSERT_EQ(UPGRADE_FD_SOCKET, upgrade_field_fd_kind(UPGRADE_REC_LISTENER, UPGRADE_LISTENER_FD));
	check_reencodes(&st, w.b.data, w.b.len);
	upgrade_state_done(&st);
	buf_done(&w.b);
}

TEST(cut_at_every_byte)
{
	struct upgrade_writer w;
	struct upgrade_state st;
	char err[256];

	sample(&w);
	for (size_t n = 0; n < w.b.len; n++) {
		int r = upgrade_state_parse(w.b.data, n, NULL, &st, err, sizeof(err));

		if (r != -EBADMSG)
			tests_fail(__FILE__, __LINE__, "cut at %zu: %d (%s)", n, r, err);
		ASSERT_TRUE(err[0] != '\0');
	}
	buf_done(&w.b);
}

/* Each byte changed (flipped, +1): refused, or a blob that re-encodes to itself. */
TEST(corrupt_every_byte)
{
	static const uint8_t deltas[] = { 0xff, 0x01, 0x80 };
	struct upgrade_writer w;
	struct upgrade_state st;
	unsigned refused = 0, accepted = 0;
	char err[256];

	sample(&w);
	for (size_t i = 0; i < w.b.len; i++)
		for (size_t d = 0; d < ELEMENTSOF(deltas); d++) {
			int r;

			w.b.data[i] ^= deltas[d];
			r = upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, sizeof(err));
			if (r == 0) {
				check_reencodes(&st, w.b.data, w.b.len);
				upgrade_state_done(&st);
				accepted++;
			} else {
				ASSERT_TRUE(r == -EBADMSG || r == -EPROTONOSUPPORT || r == -E2BIG);
				ASSERT_TRUE(err[0] != '\0');
				refused++;
			}
			w.b.data[i] ^= deltas[d];
		}
	/* Values inside their ranges (a pid, a seq, bytes of output) still parse. */
	ASSERT_TRUE(accepted > 0);
	ASSERT_TRUE(refused > accepted);
	buf_done(&w.b);
}

/* A blob with one server record plus the record that build() writes. */
static int parse_one(void (*build)(struct upgrade_writer *w), char *err, size_t err_size)
{
	struct upgrade_writer w;
	struct upgrade_state st;
	int r;

	upgrade_writer_init(&w, UPGRADE_STATE_VERSION);
	upgrade_writer_begin(&w, UPGRADE_REC_SERVER);
	upgrade_writer_str(&w, UPGRADE_SERVER_VERSION, "x");
	upgrade_writer_u64(&w, UPGRADE_SERVER_START_MS, 1);
	upgrade_writer_u64(&w, UPGRADE_SERVER_UPGRADES, 0);
	upgrade_writer_end(&w);
	build(&w);
	ASSERT_EQ(0, upgrade_writer_finish(&w));
	r = upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, err_size);
	if (r == 0)
		upgrade_state_done(&st);
	buf_done(&w.b);
	return r;
}

static void session_rec(struct upgrade_writer *w)
{
	upgrade_writer_begin(w, UPGRADE_REC_SESSION);
	upgrade_writer_str(w, UPGRADE_SESSION_ID, SID);
	upgrade_writer_u64(w, UPGRADE_SESSION_EXPIRY_NS, 5);
	upgrade_writer_end(w);
}

static void ok_session(struct upgrade_writer *w)
{
	session_rec(w);
}

static void bad_missing(struct upgrade_writer *w)
{
	upgrade_writer_begin(w, UPGRADE_REC_SESSION);
	upgrade_writer_str(w, UPGRADE_SESSION_ID, SID);
	upgrade_writer_end(w);
}

static void bad_short_id(struct upgrade_writer *w)
{
	upgrade_writer_begin(w, UPGRADE_REC_SESSION);
	upgrade_writer_str(w, UPGRADE_SESSION_ID, "abc");
	upgrade_writer_u64(w, UPGRADE_SESSION_EXPIRY_NS, 5);
	upgrade_writer_end(w);
}

static void bad_forward_ref(struct upgrade_writer *w)
{
	upgrade_writer_begin(w, UPGRADE_REC_PROC);
	upgrade_writer_ref(w, UPGRADE_PROC_SESSION, 2); /* the session comes after */
	upgrade_writer_bytes(w, UPGRADE_PROC_ID, "p", 1);
	upgrade_writer_u64(w, UPGRADE_PROC_PID, 1);
	upgrade_writer_u64(w, UPGRADE_PROC_NEXT_SEQ, 1);
	upgrade_writer_end(w);
	session_rec(w);
}

static void bad_ref_kind(struct upgrade_writer *w)
{
	upgrade_writer_begin(w, UPGRADE_REC_PROC);
	upgrade_writer_ref(w, UPGRADE_PROC_SESSION, 0); /* the server record */
	upgrade_writer_bytes(w, UPGRADE_PROC_ID, "p", 1);
	upgrade_writer_u64(w, UPGRADE_PROC_PID, 1);
	upgrade_writer_u64(w, UPGRADE_PROC_NEXT_SEQ, 1);
	upgrade_writer_end(w);
}

static void proc_with(struct upgrade_writer *w, uint64_t pid, int out_fd, int err_fd)
{
	session_rec(w);
	upgrade_writer_begin(w, UPGRADE_REC_PROC);
	upgrade_writer_ref(w, UPGRADE_PROC_SESSION, 1);
	upgrade_writer_bytes(w, UPGRADE_PROC_ID, "p", 1);
	upgrade_writer_u64(w, UPGRADE_PROC_PID, pid);
	upgrade_writer_fd(w, UPGRADE_PROC_OUT_FD, out_fd);
	upgrade_writer_fd(w, UPGRADE_PROC_ERR_FD, err_fd);
	upgrade_writer_u64(w, UPGRADE_PROC_NEXT_SEQ, 1);
	upgrade_writer_end(w);
}

static void bad_dup_fd(struct upgrade_writer *w)
{
	proc_with(w, 1, 7, 7);
}

static void bad_pid(struct upgrade_writer *w)
{
	proc_with(w, 0, 7, 8);
}

static void bad_fd_bound(struct upgrade_writer *w)
{
	proc_with(w, 1, 7, 1 << 30);
}

static void bad_order(struct upgrade_writer *w)
{
	upgrade_writer_begin(w, UPGRADE_REC_METRIC);
	/* The writer refuses it; write the bytes by hand through raw with a lower tag. */
	upgrade_writer_u64(w, UPGRADE_METRIC_VALUE, 1);
	w->last_tag = 0;
	upgrade_writer_str(w, UPGRADE_METRIC_NAME, "m");
	upgrade_writer_end(w);
}

static void bad_bool(struct upgrade_writer *w)
{
	uint8_t two = 2;

	upgrade_writer_begin(w, UPGRADE_REC_LISTENER);
	upgrade_writer_fd(w, UPGRADE_LISTENER_FD, 3);
	upgrade_writer_str(w, UPGRADE_LISTENER_URL, "ws://x");
	upgrade_writer_raw(w, UPGRADE_LISTENER_TLS, UPGRADE_T_BOOL, &two, 1);
	upgrade_writer_end(w);
}

static void bad_type(struct upgrade_writer *w)
{
	upgrade_writer_begin(w, UPGRADE_REC_METRIC);
	upgrade_writer_str(w, UPGRADE_METRIC_NAME, "m");
	upgrade_writer_str(w, UPGRADE_METRIC_VALUE, "12345678"); /* a U64 field */
	upgrade_writer_end(w);
}

static void bad_nul(struct upgrade_writer *w)
{
	upgrade_writer_begin(w, UPGRADE_REC_METRIC);
	upgrade_writer_raw(w, UPGRADE_METRIC_NAME, UPGRADE_T_STR, "a\0b", 3);
	upgrade_writer_u64(w, UPGRADE_METRIC_VALUE, 1);
	upgrade_writer_end(w);
}

static void bad_unknown_tag(struct upgrade_writer *w)
{
	upgrade_writer_begin(w, UPGRADE_REC_METRIC);
	upgrade_writer_str(w, UPGRADE_METRIC_NAME, "m");
	upgrade_writer_u64(w, 77, 1);
	upgrade_writer_end(w);
}

static void bad_second_server(struct upgrade_writer *w)
{
	upgrade_writer_begin(w, UPGRADE_REC_SERVER);
	upgrade_writer_str(w, UPGRADE_SERVER_VERSION, "x");
	upgrade_writer_u64(w, UPGRADE_SERVER_START_MS, 1);
	upgrade_writer_u64(w, UPGRADE_SERVER_UPGRADES, 0);
	upgrade_writer_end(w);
}

static void chunks_rec(struct upgrade_writer *w, uint64_t s1, uint64_t s2, uint8_t stream,
		       uint32_t len2)
{
	session_rec(w);
	upgrade_writer_begin(w, UPGRADE_REC_PROC);
	upgrade_writer_ref(w, UPGRADE_PROC_SESSION, 1);
	upgrade_writer_bytes(w, UPGRADE_PROC_ID, "p", 1);
	upgrade_writer_u64(w, UPGRADE_PROC_PID, 1);
	upgrade_writer_u64(w, UPGRADE_PROC_NEXT_SEQ, 9);
	upgrade_writer_chunks_begin(w, UPGRADE_PROC_RETAINED);
	upgrade_writer_chunk(w, s1, 0, "a", 1);
	upgrade_writer_chunk(w, s2, stream, "bb", len2);
	upgrade_writer_chunks_end(w);
	upgrade_writer_end(w);
}

static void ok_chunks(struct upgrade_writer *w)
{
	chunks_rec(w, 1, 2, UPGRADE_STREAM_PTY, 2);
}

static void bad_chunk_seq(struct upgrade_writer *w)
{
	chunks_rec(w, 2, 2, 0, 2);
}

static void bad_chunk_stream(struct upgrade_writer *w)
{
	chunks_rec(w, 1, 2, _UPGRADE_STREAM_MAX, 2);
}

static void bad_chunk_empty(struct upgrade_writer *w)
{
	chunks_rec(w, 1, 2, 0, 0);
}

static void bad_too_many_listeners(struct upgrade_writer *w)
{
	for (int i = 0; i < 2; i++) {
		upgrade_writer_begin(w, UPGRADE_REC_LISTENER);
		upgrade_writer_fd(w, UPGRADE_LISTENER_FD, 3 + i);
		upgrade_writer_str(w, UPGRADE_LISTENER_URL, "ws://x");
		upgrade_writer_end(w);
	}
}

TEST(refusals)
{
	static const struct {
		void (*build)(struct upgrade_writer *w);
		int r;
		const char *err;
	} cases[] = {
		{ ok_session, 0, "" },
		{ ok_chunks, 0, "" },
		{ bad_missing, -EBADMSG, "record 1 (session): field expiryNs is missing" },
		{ bad_short_id, -EBADMSG, "record 1: id: length 3 out of range [36, 36]" },
		{ bad_forward_ref, -EBADMSG, "record 1: session names record 2, not an earlier session" },
		{ bad_ref_kind, -EBADMSG, "record 1: session names record 0, not an earlier session" },
		{ bad_dup_fd, -EBADMSG, "fd 7 is named twice" },
		{ bad_pid, -EBADMSG, "record 2: pid 0 is out of range [1, 4194304]" },
		{ bad_fd_bound, -EBADMSG, "record 2: stderrFd: fd 1073741824 is not below 1073741824" },
		{ bad_order, -EBADMSG, "record 1 (metric): field name out of order or repeated" },
		{ bad_bool, -EBADMSG, "record 1: tls: boolean 2" },
		{ bad_type, -EBADMSG, "record 1 (metric): field value has type 4, not 1" },
		{ bad_nul, -EBADMSG, "record 1: name holds a NUL" },
		{ bad_unknown_tag, -EBADMSG, "record 1 (metric): unknown field 77" },
		{ bad_second_server, -EBADMSG, "record 1: server; the server record comes first, once" },
		{ bad_chunk_seq, -EBADMSG, "record 2: retained: chunk seq 2 after 2" },
		{ bad_chunk_stream, -EBADMSG, "record 2: retained: chunk stream 3 is unknown" },
		{ bad_chunk_empty, -EBADMSG, "record 2: retained: chunk length 0 does not fit" },
		{ bad_too_many_listeners, -EBADMSG, "record 2: more than 1 listener records" },
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		char err[256];

		ASSERT_EQ(cases[i].r, parse_one(cases[i].build, err, sizeof(err)));
		ASSERT_STREQ(cases[i].err, err);
	}
}

TEST(header_rules)
{
	struct upgrade_limits lim;
	struct upgrade_writer w;
	struct upgrade_state st;
	char err[256];

	sample(&w);
	/* A version this binary does not read: refused by name, not parsed. */
	w.b.data[8] = 2;
	ASSERT_EQ(-EPROTONOSUPPORT, upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, sizeof(err)));
	ASSERT_STREQ("state version 2 is not one this binary reads (1-1)", err);
	w.b.data[8] = 0;
	ASSERT_EQ(-EPROTONOSUPPORT, upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, sizeof(err)));
	w.b.data[8] = 1;
	w.b.data[0] = 'U';
	ASSERT_EQ(-EBADMSG, upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, sizeof(err)));
	ASSERT_STREQ("not an upgrade state (bad magic)", err);
	w.b.data[0] = 'u';
	w.b.data[28] = 1;
	ASSERT_EQ(-EBADMSG, upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, sizeof(err)));
	w.b.data[28] = 0;
	/* Trailing bytes: the declared body must be the whole rest. */
	ASSERT_EQ(0, buf_append(&w.b, "", 1));
	ASSERT_EQ(-EBADMSG, upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, sizeof(err)));
	ASSERT_STREQ("body of 752 bytes declared, 753 present", err);
	w.b.len--;
	/* Limits. */
	upgrade_limits_default(&lim);
	lim.max_records = 8;
	ASSERT_EQ(-E2BIG, upgrade_state_parse(w.b.data, w.b.len, &lim, &st, err, sizeof(err)));
	ASSERT_STREQ("10 records, more than 8", err);
	upgrade_limits_default(&lim);
	lim.max_fds = 4;
	ASSERT_EQ(-E2BIG, upgrade_state_parse(w.b.data, w.b.len, &lim, &st, err, sizeof(err)));
	upgrade_limits_default(&lim);
	lim.max_bytes = 100;
	ASSERT_EQ(-E2BIG, upgrade_state_parse(w.b.data, w.b.len, &lim, &st, err, sizeof(err)));
	upgrade_limits_default(&lim);
	lim.fd_bound = FD_SUP;
	ASSERT_EQ(-EBADMSG, upgrade_state_parse(w.b.data, w.b.len, &lim, &st, err, sizeof(err)));
	/* A record count the body cannot hold. */
	w.b.data[24] = 0xff;
	w.b.data[25] = 0xff;
	ASSERT_EQ(-EBADMSG, upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, sizeof(err)));
	buf_done(&w.b);
}

TEST(writer_misuse)
{
	struct upgrade_writer w;

	upgrade_writer_init(&w, 1);
	upgrade_writer_u64(&w, 1, 1); /* no record open */
	ASSERT_EQ(-EINVAL, upgrade_writer_finish(&w));
	buf_done(&w.b);
	upgrade_writer_init(&w, 1);
	upgrade_writer_begin(&w, UPGRADE_REC_SERVER);
	ASSERT_EQ(-EINVAL, upgrade_writer_finish(&w)); /* record not ended */
	buf_done(&w.b);
	upgrade_writer_init(&w, 1);
	upgrade_writer_begin(&w, UPGRADE_REC_SERVER);
	upgrade_writer_fd(&w, 1, -1);
	upgrade_writer_end(&w);
	ASSERT_EQ(-EBADF, upgrade_writer_finish(&w));
	buf_done(&w.b);
}

/* After execve: the numbers must be open fds of the right kind. */
TEST(check_fds)
{
	struct upgrade_writer w;
	struct upgrade_state st;
	int pipes[2], sv[2], r;
	char err[256] = "";

	ASSERT_EQ(0, pipe2(pipes, O_CLOEXEC));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	upgrade_writer_init(&w, 1);
	upgrade_writer_begin(&w, UPGRADE_REC_SERVER);
	upgrade_writer_str(&w, UPGRADE_SERVER_VERSION, "x");
	upgrade_writer_u64(&w, UPGRADE_SERVER_START_MS, 1);
	upgrade_writer_u64(&w, UPGRADE_SERVER_UPGRADES, 0);
	upgrade_writer_end(&w);
	upgrade_writer_begin(&w, UPGRADE_REC_LISTENER);
	upgrade_writer_fd(&w, UPGRADE_LISTENER_FD, sv[0]);
	upgrade_writer_str(&w, UPGRADE_LISTENER_URL, "ws://x");
	upgrade_writer_end(&w);
	upgrade_writer_begin(&w, UPGRADE_REC_HELD_FD);
	upgrade_writer_u64(&w, UPGRADE_HELD_ROLE, UPGRADE_HELD_SUPERVISOR);
	upgrade_writer_fd(&w, UPGRADE_HELD_FD, pipes[1]);
	upgrade_writer_end(&w);
	ASSERT_EQ(0, upgrade_writer_finish(&w));
	ASSERT_EQ(0, upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, sizeof(err)));
	ASSERT_EQ(0, upgrade_state_check_fds(&st, -1, err, sizeof(err)));
	/* The blob's own fd is never an object's. */
	ASSERT_EQ(-EBADF, upgrade_state_check_fds(&st, pipes[1], err, sizeof(err)));
	upgrade_state_done(&st);
	buf_done(&w.b);

	/* A pipe where a socket must be. */
	upgrade_writer_init(&w, 1);
	upgrade_writer_begin(&w, UPGRADE_REC_SERVER);
	upgrade_writer_str(&w, UPGRADE_SERVER_VERSION, "x");
	upgrade_writer_u64(&w, UPGRADE_SERVER_START_MS, 1);
	upgrade_writer_u64(&w, UPGRADE_SERVER_UPGRADES, 0);
	upgrade_writer_end(&w);
	upgrade_writer_begin(&w, UPGRADE_REC_LISTENER);
	upgrade_writer_fd(&w, UPGRADE_LISTENER_FD, pipes[0]);
	upgrade_writer_str(&w, UPGRADE_LISTENER_URL, "ws://x");
	upgrade_writer_end(&w);
	ASSERT_EQ(0, upgrade_writer_finish(&w));
	ASSERT_EQ(0, upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, sizeof(err)));
	r = upgrade_state_check_fds(&st, -1, err, sizeof(err));
	ASSERT_EQ(-EBADF, r);
	ASSERT_TRUE(strstr(err, "listener") != NULL);
	/* Closed: not open any more. */
	close(pipes[0]);
	ASSERT_EQ(-EBADF, upgrade_state_check_fds(&st, -1, err, sizeof(err)));
	ASSERT_TRUE(strstr(err, "is not open") != NULL);
	upgrade_state_done(&st);
	buf_done(&w.b);
	close(pipes[1]);
	close(sv[0]);
	close(sv[1]);
}

/* The memfd writer gives the heap writer's bytes, sized exactly and sealed. */
TEST(memfd_writer)
{
	static const size_t hints[] = { 0, 64, 1 << 16, 3 << 20 };
	struct upgrade_writer heap, w;
	struct upgrade_state st;
	char err[256];

	sample(&heap);
	for (size_t i = 0; i < ELEMENTSOF(hints); i++) {
		struct stat sb;
		uint8_t *map;
		int fd;

		ASSERT_EQ(0, upgrade_writer_init_memfd(&w, UPGRADE_STATE_VERSION, hints[i]));
		sample_into(&w);
		ASSERT_EQ(heap.b.len, w.b.len);
		ASSERT_MEMEQ(heap.b.data, w.b.data, heap.b.len);
		fd = upgrade_writer_seal(&w);
		ASSERT_TRUE(fd >= 0);
		ASSERT_EQ(-1, w.memfd); /* the caller owns it now */
		upgrade_writer_done(&w);
		ASSERT_EQ(0, fstat(fd, &sb));
		ASSERT_EQ(heap.b.len, sb.st_size);
		map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		ASSERT_TRUE(map != MAP_FAILED);
		ASSERT_EQ(0, upgrade_state_parse(map, (size_t)sb.st_size, NULL, &st, err, sizeof(err)));
		upgrade_state_done(&st);
		/* Sealed: neither written nor grown nor shrunk, nor mapped writable. */
		ASSERT_EQ(-1, write(fd, "x", 1));
		ASSERT_EQ(EPERM, errno);
		ASSERT_EQ(-1, ftruncate(fd, 1));
		ASSERT_TRUE(mmap(NULL, 4096, PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED);
		munmap(map, (size_t)sb.st_size);
		close(fd);
	}
	/* An unsealed writer is simply freed. */
	ASSERT_EQ(0, upgrade_writer_init_memfd(&w, UPGRADE_STATE_VERSION, 0));
	sample_into(&w);
	upgrade_writer_done(&w);
	buf_done(&heap.b);
}

/* ---- the view: rules that span fields and records ---- */

TEST(view_of_sample)
{
	struct upgrade_writer w;
	struct upgrade_state st;
	struct upgrade_view v;
	char err[256];

	sample(&w);
	ASSERT_EQ(0, upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, sizeof(err)));
	ASSERT_EQ(0, upgrade_view_build(&st, &v, err, sizeof(err)));
	ASSERT_STREQ("", err);
	ASSERT_EQ(5, v.sender_version_len);
	ASSERT_MEMEQ("0.1.0", v.sender_version, 5);
	ASSERT_EQ(2, v.upgrades);
	ASSERT_TRUE(v.has_listener);
	ASSERT_EQ(FD_LISTEN, v.listener_fd);
	ASSERT_EQ(FD_SUP, upgrade_view_held_fd(&v, UPGRADE_HELD_SUPERVISOR, -1));
	ASSERT_EQ(-1, upgrade_view_held_fd(&v, UPGRADE_HELD_CG_BASE, -1));
	ASSERT_EQ(1, v.n_metrics);
	ASSERT_EQ(42, v.metrics[0].value);
	ASSERT_EQ(1, v.n_sessions);
	ASSERT_STREQ(SID, v.sessions[0].id);
	ASSERT_EQ(0, v.sessions[0].conn);
	ASSERT_EQ(2, v.sessions[0].n_procs);
	ASSERT_EQ(2, v.n_procs);
	ASSERT_EQ(1234, v.procs[0].pid);
	ASSERT_EQ(FD_OUT, v.procs[0].out_fd);
	ASSERT_EQ(-1, v.procs[0].stdin_fd);
	ASSERT_EQ(10, v.procs[0].retained_bytes);
	ASSERT_EQ(2, v.procs[0].n_chunks);
	ASSERT_TRUE(v.procs[1].closed && v.procs[1].exited && v.procs[1].reaped);
	ASSERT_EQ(137, v.procs[1].exit_code);
	ASSERT_EQ(9, v.procs[1].term_signal);
	ASSERT_EQ(1, v.n_conns);
	ASSERT_EQ(0, v.conns[0].session);
	ASSERT_EQ(-1, v.conns[0].fd_out);
	ASSERT_EQ(2, v.conns[0].input_len);
	ASSERT_EQ(1, v.n_watches);
	ASSERT_EQ(0, v.watches[0].conn);
	ASSERT_TRUE(v.cgroups.present && !v.cgroups.enabled);
	ASSERT_EQ(4321, v.cgroups.supervisor_pid);
	ASSERT_EQ(12, v.cgroups.seq);
	upgrade_view_done(&v);
	upgrade_state_done(&st);
	buf_done(&w.b);
}

/* A blob with the server record plus what build() writes, parsed then viewed. */
static int view_one(void (*build)(struct upgrade_writer *w), char *err, size_t err_size)
{
	struct upgrade_writer w;
	struct upgrade_state st;
	struct upgrade_view v;
	int r;

	upgrade_writer_init(&w, UPGRADE_STATE_VERSION);
	upgrade_writer_begin(&w, UPGRADE_REC_SERVER);
	upgrade_writer_str(&w, UPGRADE_SERVER_VERSION, "x");
	upgrade_writer_u64(&w, UPGRADE_SERVER_START_MS, 1);
	upgrade_writer_u64(&w, UPGRADE_SERVER_UPGRADES, 0);
	upgrade_writer_end(&w);
	build(&w);
	ASSERT_EQ(0, upgrade_writer_finish(&w));
	r = upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, err_size);
	ASSERT_EQ(0, r); /* the schema accepts every case: the view's rules refuse them */
	r = upgrade_view_build(&st, &v, err, err_size);
	if (r == 0)
		upgrade_view_done(&v);
	upgrade_state_done(&st);
	buf_done(&w.b);
	return r;
}

struct pspec {
	uint64_t pid, next_seq, exit_seq, chunk_seq;
	bool tty, pipe_stdin, reaped, exited, closed;
	int out_fd, err_fd, stdin_fd, pidfd;
	uint8_t chunk_stream;
	const char *id;
	const char *wids;       /* writeIds field bytes, wids_len of them */
	size_t wids_len;
	uint64_t pty_last;      /* ptyLastByte (byte + 1), 0: absent */
	bool mem_limited;
	const char *writes;     /* the writes field's bytes, writes_len of them */
	size_t writes_len;
};

/* A session (record 1, attached unless expiry) and a process after it. */
static void proc_rec(struct upgrade_writer *w, const struct pspec *p)
{
	upgrade_writer_begin(w, UPGRADE_REC_PROC);
	upgrade_writer_ref(w, UPGRADE_PROC_SESSION, 1);
	upgrade_writer_bytes(w, UPGRADE_PROC_ID, p->id ? p->id : "p", strlen(p->id ? p->id : "p"));
	upgrade_writer_u64(w, UPGRADE_PROC_PID, p->pid ? p->pid : 100);
	if (p->pidfd)
		upgrade_writer_fd(w, UPGRADE_PROC_PIDFD, p->pidfd);
	upgrade_writer_bool(w, UPGRADE_PROC_TTY, p->tty);
	upgrade_writer_bool(w, UPGRADE_PROC_PIPE_STDIN, p->pipe_stdin);
	if (p->out_fd)
		upgrade_writer_fd(w, UPGRADE_PROC_OUT_FD, p->out_fd);
	if (p->err_fd)
		upgrade_writer_fd(w, UPGRADE_PROC_ERR_FD, p->err_fd);
	if (p->stdin_fd)
		upgrade_writer_fd(w, UPGRADE_PROC_STDIN_FD, p->stdin_fd);
	upgrade_writer_u64(w, UPGRADE_PROC_NEXT_SEQ, p->next_seq ? p->next_seq : 5);
	if (p->chunk_seq) {
		upgrade_writer_chunks_begin(w, UPGRADE_PROC_RETAINED);
		upgrade_writer_chunk(w, p->chunk_seq, p->chunk_stream, "z", 1);
		upgrade_writer_chunks_end(w);
	}
	upgrade_writer_bool(w, UPGRADE_PROC_REAPED, p->reaped);
	upgrade_writer_bool(w, UPGRADE_PROC_EXITED, p->exited);
	if (p->reaped) {
		upgrade_writer_u64(w, UPGRADE_PROC_EXIT_CODE, 0);
		upgrade_writer_u64(w, UPGRADE_PROC_TERM_SIGNAL, 0);
	}
	if (p->exit_seq)
		upgrade_writer_u64(w, UPGRADE_PROC_EXIT_SEQ, p->exit_seq);
	upgrade_writer_bool(w, UPGRADE_PROC_CLOSED, p->closed);
	if (p->wids)
		upgrade_writer_bytes(w, UPGRADE_PROC_WRITE_IDS, p->wids, p->wids_len);
	if (p->mem_limited)
		upgrade_writer_bool(w, UPGRADE_PROC_MEM_LIMITED, true);
	if (p->pty_last)
		upgrade_writer_u64(w, UPGRADE_PROC_PTY_LAST, p->pty_last);
	if (p->writes)
		upgrade_writer_bytes(w, UPGRADE_PROC_WRITES, p->writes, p->writes_len);
	upgrade_writer_end(w);
}

#define PROC_CASE(name, ...)                                     \
	static void name(struct upgrade_writer *w)               \
	{                                                        \
		static const struct pspec p = { __VA_ARGS__ };   \
		session_rec(w);                                  \
		proc_rec(w, &p);                                 \
	}
PROC_CASE(v_ok_running, .out_fd = 7, .err_fd = 8, .chunk_seq = 2)
PROC_CASE(v_ok_closed, .reaped = true, .exited = true, .exit_seq = 3, .closed = true, .chunk_seq = 1)
PROC_CASE(v_ok_pty, .tty = true, .out_fd = 7, .chunk_seq = 1, .chunk_stream = UPGRADE_STREAM_PTY)
PROC_CASE(v_exited_unreaped, .exited = true, .exit_seq = 3)
PROC_CASE(v_exit_seq_missing, .reaped = true, .exited = true)
PROC_CASE(v_exit_seq_ahead, .reaped = true, .exited = true, .exit_seq = 5)
PROC_CASE(v_chunk_ahead, .chunk_seq = 5)
PROC_CASE(v_chunk_is_exit, .reaped = true, .exited = true, .exit_seq = 2, .chunk_seq = 2)
PROC_CASE(v_closed_open, .reaped = true, .exited = true, .exit_seq = 3, .closed = true, .out_fd = 7)
PROC_CASE(v_pidfd_reaped, .reaped = true, .pidfd = 9)
PROC_CASE(v_pty_stderr, .tty = true, .out_fd = 7, .err_fd = 8)
PROC_CASE(v_stdin_unasked, .out_fd = 7, .stdin_fd = 9)
PROC_CASE(v_pipe_pty_output, .chunk_seq = 1, .chunk_stream = UPGRADE_STREAM_PTY)
PROC_CASE(v_pty_pipe_output, .tty = true, .chunk_seq = 1, .chunk_stream = UPGRADE_STREAM_STDERR)
PROC_CASE(v_ok_pty_last, .tty = true, .out_fd = 7, .pty_last = 'x' + 1)
PROC_CASE(v_pty_last_on_pipes, .out_fd = 7, .pty_last = 'x' + 1)
PROC_CASE(v_mem_limit_without_leaf, .out_fd = 7, .mem_limited = true)
#define WRITES(lit) .writes = lit, .writes_len = sizeof(lit) - 1
/* fast 0, id "1" (1 byte), 2 bytes "ab"; then fast 1, no id, 1 byte "c" */
PROC_CASE(v_ok_writes, .pipe_stdin = true, .out_fd = 7, .stdin_fd = 9,
	  WRITES("\0\x01\0\0\0" "1" "\x02\0\0\0ab" "\x01\0\0\0\0" "\x01\0\0\0c"))
PROC_CASE(v_writes_without_stdin, .pipe_stdin = true, .out_fd = 7,
	  WRITES("\0\0\0\0\0\x01\0\0\0c"))
PROC_CASE(v_writes_bad_fast, .pipe_stdin = true, .out_fd = 7, .stdin_fd = 9,
	  WRITES("\x02\0\0\0\0\x01\0\0\0c"))
PROC_CASE(v_writes_empty_data, .pipe_stdin = true, .out_fd = 7, .stdin_fd = 9,
	  WRITES("\0\0\0\0\0\0\0\0\0x"))
PROC_CASE(v_writes_cut, .pipe_stdin = true, .out_fd = 7, .stdin_fd = 9,
	  WRITES("\0\0\0\0\0\x05\0\0\0ab"))
#define WIDS(lit) .wids = lit, .wids_len = sizeof(lit) - 1
PROC_CASE(v_ok_write_ids, WIDS("\x02\0\0\0w1\x03\0\0\0w22"))
PROC_CASE(v_write_id_empty, WIDS("\x02\0\0\0w1\0\0\0\0x"))
PROC_CASE(v_write_id_nul, WIDS("\x02\0\0\0w\0"))
PROC_CASE(v_write_id_cut, WIDS("\x09\0\0\0w1"))
PROC_CASE(v_write_id_short_header, WIDS("\x02\0\0\0w1\x01\0"))
PROC_CASE(v_write_id_twice, WIDS("\x02\0\0\0w1\x02\0\0\0w1"))

static void v_two_procs(struct upgrade_writer *w, const char *id2, uint64_t pid2)
{
	struct pspec a = { .id = "a", .pid = 10 }, b = { .id = id2, .pid = pid2 };

	session_rec(w);
	proc_rec(w, &a);
	proc_rec(w, &b);
}

static void v_dup_process_id(struct upgrade_writer *w)
{
	v_two_procs(w, "a", 11);
}

static void v_dup_pid(struct upgrade_writer *w)
{
	v_two_procs(w, "b", 10);
}

static void v_ok_two(struct upgrade_writer *w)
{
	v_two_procs(w, "b", 11);
}

static void conn_rec(struct upgrade_writer *w, uint64_t transport, int fd_in, int fd_out,
		     int sess_rec, bool upgraded)
{
	upgrade_writer_begin(w, UPGRADE_REC_CONN);
	upgrade_writer_u64(w, UPGRADE_CONN_TRANSPORT, transport);
	upgrade_writer_fd(w, UPGRADE_CONN_FD_IN, fd_in);
	if (fd_out >= 0)
		upgrade_writer_fd(w, UPGRADE_CONN_FD_OUT, fd_out);
	if (sess_rec >= 0)
		upgrade_writer_ref(w, UPGRADE_CONN_SESSION, (uint32_t)sess_rec);
	upgrade_writer_bool(w, UPGRADE_CONN_UPGRADED, upgraded);
	upgrade_writer_end(w);
}

static void attached_session(struct upgrade_writer *w)
{
	upgrade_writer_begin(w, UPGRADE_REC_SESSION);
	upgrade_writer_str(w, UPGRADE_SESSION_ID, SID);
	upgrade_writer_u64(w, UPGRADE_SESSION_EXPIRY_NS, 0);
	upgrade_writer_end(w);
}

static void v_ok_conns(struct upgrade_writer *w)
{
	attached_session(w);
	conn_rec(w, UPGRADE_CONN_WS, 5, -1, 1, true);
	conn_rec(w, UPGRADE_CONN_STDIO, 0, 1, -1, true);
	conn_rec(w, UPGRADE_CONN_WS, 6, -1, -1, false);
}

static void v_two_conns_one_session(struct upgrade_writer *w)
{
	attached_session(w);
	conn_rec(w, UPGRADE_CONN_WS, 5, -1, 1, true);
	conn_rec(w, UPGRADE_CONN_WS, 6, -1, 1, true);
}

static void v_attached_in_window(struct upgrade_writer *w)
{
	session_rec(w); /* expiry 5: detached */
	conn_rec(w, UPGRADE_CONN_WS, 5, -1, 1, true);
}

static void v_ws_two_fds(struct upgrade_writer *w)
{
	conn_rec(w, UPGRADE_CONN_WS, 5, 6, -1, true);
}

static void v_two_stdio(struct upgrade_writer *w)
{
	conn_rec(w, UPGRADE_CONN_STDIO, 0, 1, -1, true);
	conn_rec(w, UPGRADE_CONN_STDIO, 5, 6, -1, true);
}

static void v_session_before_upgrade(struct upgrade_writer *w)
{
	attached_session(w);
	conn_rec(w, UPGRADE_CONN_WS, 5, -1, 1, false);
}

static void v_not_uuid(struct upgrade_writer *w)
{
	upgrade_writer_begin(w, UPGRADE_REC_SESSION);
	upgrade_writer_str(w, UPGRADE_SESSION_ID, "0A1B2C3D-0000-4000-8000-000000000001");
	upgrade_writer_u64(w, UPGRADE_SESSION_EXPIRY_NS, 0);
	upgrade_writer_end(w);
}

static void v_dup_session(struct upgrade_writer *w)
{
	session_rec(w);
	session_rec(w);
}

static void v_dup_metric(struct upgrade_writer *w)
{
	for (int i = 0; i < 2; i++) {
		upgrade_writer_begin(w, UPGRADE_REC_METRIC);
		upgrade_writer_str(w, UPGRADE_METRIC_NAME, "spawns");
		upgrade_writer_u64(w, UPGRADE_METRIC_VALUE, 1);
		upgrade_writer_end(w);
	}
}

static void held_rec(struct upgrade_writer *w, uint64_t role, int fd, int index)
{
	upgrade_writer_begin(w, UPGRADE_REC_HELD_FD);
	upgrade_writer_u64(w, UPGRADE_HELD_ROLE, role);
	upgrade_writer_fd(w, UPGRADE_HELD_FD, fd);
	if (index >= 0)
		upgrade_writer_u64(w, UPGRADE_HELD_INDEX, (uint64_t)index);
	upgrade_writer_end(w);
}

/* A cgroups record: enabled with a base, where[] for pids/memory/cpu, a supervisor or not. */
static void cgroups_rec(struct upgrade_writer *w, bool enabled, const uint64_t where[3],
			bool v1_paths, uint64_t supervisor)
{
	upgrade_writer_begin(w, UPGRADE_REC_CGROUPS);
	upgrade_writer_bool(w, UPGRADE_CGROUPS_ENABLED, enabled);
	if (enabled)
		upgrade_writer_str(w, UPGRADE_CGROUPS_BASE, "/sys/fs/cgroup/x/uexec-1.procs");
	for (int k = 0; k < 3; k++)
		upgrade_writer_u64(w, (uint16_t)(UPGRADE_CGROUPS_WHERE_PIDS + k), where[k]);
	for (int k = 0; k < 3; k++)
		if (v1_paths && where[k] == UPGRADE_CG_V1)
			upgrade_writer_str(w, (uint16_t)(UPGRADE_CGROUPS_V1_PIDS + k), "/sys/fs/cgroup/pids/u");
	upgrade_writer_u64(w, UPGRADE_CGROUPS_SEQ, 1);
	if (supervisor)
		upgrade_writer_u64(w, UPGRADE_CGROUPS_SUPERVISOR, supervisor);
	upgrade_writer_end(w);
}

static const uint64_t v1_pids_cpu[3] = { UPGRADE_CG_V1, UPGRADE_CG_NONE, UPGRADE_CG_V1 };
static const uint64_t v2_memory[3] = { UPGRADE_CG_NONE, UPGRADE_CG_V2, UPGRADE_CG_NONE };

static void v_ok_held(struct upgrade_writer *w)
{
	held_rec(w, UPGRADE_HELD_SUPERVISOR, 5, -1);
	held_rec(w, UPGRADE_HELD_CG_V1_BASE, 6, 0);
	held_rec(w, UPGRADE_HELD_CG_V1_BASE, 7, 2);
	cgroups_rec(w, false, v1_pids_cpu, true, 99);
}

static void v_ok_v2(struct upgrade_writer *w)
{
	held_rec(w, UPGRADE_HELD_CG_BASE, 5, -1);
	cgroups_rec(w, true, v2_memory, false, 0);
}

static void v_v1_without_path(struct upgrade_writer *w)
{
	held_rec(w, UPGRADE_HELD_CG_V1_BASE, 6, 0);
	held_rec(w, UPGRADE_HELD_CG_V1_BASE, 7, 2);
	cgroups_rec(w, false, v1_pids_cpu, false, 0);
}

static void v_v2_without_leaves(struct upgrade_writer *w)
{
	cgroups_rec(w, false, v2_memory, false, 0);
}

static void v_base_without_fd(struct upgrade_writer *w)
{
	cgroups_rec(w, true, v2_memory, false, 0);
}

static void v_supervisor_without_pid(struct upgrade_writer *w)
{
	held_rec(w, UPGRADE_HELD_SUPERVISOR, 5, -1);
}

static void v_v1_fd_without_layout(struct upgrade_writer *w)
{
	static const uint64_t none[3] = { 0, 0, 0 };

	held_rec(w, UPGRADE_HELD_CG_V1_BASE, 6, 1);
	cgroups_rec(w, false, none, false, 0);
}

static void v_v1_no_index(struct upgrade_writer *w)
{
	held_rec(w, UPGRADE_HELD_CG_V1_BASE, 6, -1);
}

/* The listener guard's cgroup and its port sockets, by index. */
static void v_guard_ports_ok(struct upgrade_writer *w)
{
	held_rec(w, UPGRADE_HELD_GUARD, 5, -1);
	held_rec(w, UPGRADE_HELD_GUARD_PORT, 6, 0);
	held_rec(w, UPGRADE_HELD_GUARD_PORT, 7, 1);
}

static void v_guard_port_no_index(struct upgrade_writer *w)
{
	held_rec(w, UPGRADE_HELD_GUARD, 5, -1);
	held_rec(w, UPGRADE_HELD_GUARD_PORT, 6, -1);
}

static void v_guard_port_twice(struct upgrade_writer *w)
{
	held_rec(w, UPGRADE_HELD_GUARD, 5, -1);
	held_rec(w, UPGRADE_HELD_GUARD_PORT, 6, 1);
	held_rec(w, UPGRADE_HELD_GUARD_PORT, 7, 1);
}

static void v_guard_index_on_cgroup(struct upgrade_writer *w)
{
	held_rec(w, UPGRADE_HELD_GUARD, 5, 0);
}

static void v_v1_index_range(struct upgrade_writer *w)
{
	held_rec(w, UPGRADE_HELD_CG_V1_BASE, 6, 3);
}

static void v_two_supervisors(struct upgrade_writer *w)
{
	held_rec(w, UPGRADE_HELD_SUPERVISOR, 5, -1);
	held_rec(w, UPGRADE_HELD_SUPERVISOR, 6, -1);
}

static void v_relative_watch(struct upgrade_writer *w)
{
	conn_rec(w, UPGRADE_CONN_WS, 5, -1, -1, true);
	upgrade_writer_begin(w, UPGRADE_REC_WATCH);
	upgrade_writer_ref(w, UPGRADE_WATCH_CONN, 1);
	upgrade_writer_str(w, UPGRADE_WATCH_ID, "w");
	upgrade_writer_bytes(w, UPGRADE_WATCH_PATH, "tmp", 3);
	upgrade_writer_end(w);
}

TEST(view_rules)
{
	static const struct {
		void (*build)(struct upgrade_writer *w);
		const char *err;
	} cases[] = {
		{ v_ok_running, "" },
		{ v_ok_closed, "" },
		{ v_ok_pty, "" },
		{ v_ok_pty_last, "" },
		{ v_pty_last_on_pipes, "record 2: a PTY's last stdin byte on pipes" },
		{ v_mem_limit_without_leaf, "record 2: a memory limit without a cgroup leaf" },
		{ v_ok_writes, "" },
		{ v_writes_without_stdin, "record 2: stdin writes queued without a stdin" },
		{ v_writes_bad_fast, "record 2: writes: entry 0 is malformed" },
		{ v_writes_empty_data, "record 2: writes: entry 0's data" },
		{ v_writes_cut, "record 2: writes: entry 0's data" },
		{ v_ok_two, "" },
		{ v_ok_conns, "" },
		{ v_ok_held, "" },
		{ v_ok_v2, "" },
		{ v_v1_without_path, "record 3: controller 0 is in a v1 hierarchy exactly when it has a v1 base" },
		{ v_v2_without_leaves, "record 1: controller 1 in cgroup v2 without v2 leaves" },
		{ v_base_without_fd, "the cgroup base's fd and its layout disagree" },
		{ v_supervisor_without_pid, "the supervisor's pipe and its pid disagree" },
		{ v_v1_fd_without_layout, "v1 controller 1: its base's fd and the layout disagree" },
		{ v_exited_unreaped, "record 2: exited before it was reaped" },
		{ v_exit_seq_missing, "record 2: exit seq and exited disagree (next seq 5)" },
		{ v_exit_seq_ahead, "record 2: exit seq and exited disagree (next seq 5)" },
		{ v_chunk_ahead, "record 2: chunk seq 5 is not an output's (next seq 5)" },
		{ v_chunk_is_exit, "record 2: chunk seq 2 is not an output's (next seq 5)" },
		{ v_closed_open, "record 2: closed with a stream open or before its exit" },
		{ v_pidfd_reaped, "record 2: a pidfd for a reaped process" },
		{ v_pty_stderr, "record 2: a PTY process with a stderr or stdin fd of its own" },
		{ v_stdin_unasked, "record 2: a stdin fd without pipeStdin" },
		{ v_pipe_pty_output, "record 2: a pipe process retains PTY output" },
		{ v_pty_pipe_output, "record 2: a PTY process retains pipe output" },
		{ v_ok_write_ids, "" },
		{ v_write_id_empty, "record 2: writeIds: entry 1 is empty, cut short or holds a NUL" },
		{ v_write_id_nul, "record 2: writeIds: entry 0 is empty, cut short or holds a NUL" },
		{ v_write_id_cut, "record 2: writeIds: entry 0 is empty, cut short or holds a NUL" },
		{ v_write_id_short_header, "record 2: writeIds: an entry is cut short" },
		{ v_write_id_twice, "record 2: a writeId remembered twice in the same process, as record 2" },
		{ v_dup_process_id, "record 3: the same processId in the same session, as record 2" },
		{ v_dup_pid, "record 3: the same pid, as record 2" },
		{ v_two_conns_one_session, "record 3: session " SID " is attached to two connections" },
		{ v_attached_in_window, "record 2: session " SID " is attached and in its resume window" },
		{ v_ws_two_fds, "record 1: a WebSocket with a second fd" },
		{ v_two_stdio, "record 2: a second stdio connection" },
		{ v_session_before_upgrade, "record 2: a session or initialize before the WebSocket upgrade" },
		{ v_not_uuid, "record 1: session id is not a UUID" },
		{ v_dup_session, "record 2: the same session id, as record 1" },
		{ v_dup_metric, "record 2: the same metric, as record 1" },
		{ v_v1_no_index, "record 1: an index is for a v1 cgroup base or a guard port only, and they need one" },
		{ v_guard_ports_ok, "" },
		{ v_guard_port_no_index, "record 2: an index is for a v1 cgroup base or a guard port only, and they need one" },
		{ v_guard_port_twice, "record 3: held fd role 7 given twice" },
		{ v_guard_index_on_cgroup, "record 1: an index is for a v1 cgroup base or a guard port only, and they need one" },
		{ v_v1_index_range, "record 1: v1 cgroup base 3: there are 3" },
		{ v_two_supervisors, "record 2: held fd role 1 given twice" },
		{ v_relative_watch, "record 2: a watched path that is not absolute" },
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		char err[256];
		int r = view_one(cases[i].build, err, sizeof(err));

		ASSERT_EQ(cases[i].err[0] ? -EBADMSG : 0, r);
		ASSERT_STREQ(cases[i].err, err);
	}
}

TEST_MAIN()
