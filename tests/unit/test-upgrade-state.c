/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for the live upgrade's state blob (src/upgrade/state.c, fds.c):
 * a round trip of every record kind, a blob cut at every byte and corrupted
 * at every byte, each refusal rule, and the fd checks after execve; the
 * view's rules are in the test-upgrade-view*.c files, the sample in upgrade-state-kit.c.
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
#include "upgrade-state-kit.h"
#include "view.h"

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

/*
 * A blob cut anywhere is refused; one with any bit 0 of a byte flipped is
 * refused or re-encodes to itself, and some such are accepted (values in
 * their ranges).
 */
static void check_cuts_and_flips(struct upgrade_writer *w)
{
	struct upgrade_state st;
	unsigned accepted = 0;
	char err[256];

	for (size_t n = 0; n < w->b.len; n++)
		ASSERT_EQ(-EBADMSG, upgrade_state_parse(w->b.data, n, NULL, &st, err, sizeof(err)));
	for (size_t i = 0; i < w->b.len; i++) {
		w->b.data[i] ^= 0x01;
		if (upgrade_state_parse(w->b.data, w->b.len, NULL, &st, err, sizeof(err)) == 0) {
			check_reencodes(&st, w->b.data, w->b.len);
			upgrade_state_done(&st);
			accepted++;
		}
		w->b.data[i] ^= 0x01;
	}
	ASSERT_TRUE(accepted > 0);
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
	ASSERT_EQ(11, st.n_recs);
	ASSERT_EQ(2, st.count[UPGRADE_REC_PROC]);
	ASSERT_EQ(1, st.count[UPGRADE_REC_SERVER]);
	ASSERT_EQ(6, st.n_fds);
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

	minimal_server(&w);
	build(&w);
	ASSERT_EQ(0, upgrade_writer_finish(&w));
	r = upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, err_size);
	if (r == 0)
		upgrade_state_done(&st);
	buf_done(&w.b);
	return r;
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
	ASSERT_STREQ("body of 857 bytes declared, 858 present", err);
	w.b.len--;
	/* Limits. */
	upgrade_limits_default(&lim);
	lim.max_records = 8;
	ASSERT_EQ(-E2BIG, upgrade_state_parse(w.b.data, w.b.len, &lim, &st, err, sizeof(err)));
	ASSERT_STREQ("11 records, more than 8", err);
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

/* ---- a sandboxed process: the synth record and the plan's fields (upg-sandbox) ---- */

/* A session, a synthesized mount point used by one sandboxed process, that process. */
static void sandbox_sample(struct upgrade_writer *w, uint64_t filter, uint64_t denied,
			   const char *synth_path)
{
	minimal_server(w);
	session_rec(w);                                          /* record 1 */
	upgrade_writer_begin(w, UPGRADE_REC_SYNTH);              /* 2 */
	upgrade_writer_str(w, UPGRADE_SYNTH_PATH, synth_path);
	upgrade_writer_u64(w, UPGRADE_SYNTH_REFS, 1);
	upgrade_writer_fd(w, UPGRADE_SYNTH_FD, 5);
	upgrade_writer_end(w);
	upgrade_writer_begin(w, UPGRADE_REC_PROC);               /* 3 */
	upgrade_writer_ref(w, UPGRADE_PROC_SESSION, 1);
	upgrade_writer_bytes(w, UPGRADE_PROC_ID, "sb", 2);
	upgrade_writer_u64(w, UPGRADE_PROC_PID, 77);
	upgrade_writer_fd(w, UPGRADE_PROC_OUT_FD, 7);
	upgrade_writer_u64(w, UPGRADE_PROC_NEXT_SEQ, 1);
	upgrade_writer_bool(w, UPGRADE_PROC_SANDBOXED, true);
	upgrade_writer_bytes(w, UPGRADE_PROC_SYNTH, "\x07\0\0\0/w/.git", 11);
	upgrade_writer_u64(w, UPGRADE_PROC_FILTER, filter);
	upgrade_writer_u64(w, UPGRADE_PROC_EV_DENIED, denied);
	upgrade_writer_end(w);
	ASSERT_EQ(0, upgrade_writer_finish(w));
}

TEST(sandbox_fields)
{
	struct upgrade_writer w;
	struct upgrade_state st;
	const struct upgrade_field *f;
	char err[256];

	sandbox_sample(&w, 2, 4, "/w/.git");
	ASSERT_EQ(0, upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, sizeof(err)));
	ASSERT_EQ(1, st.count[UPGRADE_REC_SYNTH]);
	ASSERT_EQ(5, upgrade_rec_num(&st, 2, UPGRADE_SYNTH_FD));
	ASSERT_EQ(1, upgrade_rec_u64(&st, 2, UPGRADE_SYNTH_REFS, 0));
	ASSERT_EQ(2, upgrade_rec_u64(&st, 3, UPGRADE_PROC_FILTER, 0));
	ASSERT_EQ(4, upgrade_rec_u64(&st, 3, UPGRADE_PROC_EV_DENIED, 0));
	f = upgrade_rec_field(&st, 3, UPGRADE_PROC_SYNTH);
	ASSERT_TRUE(f && f->len == 11);
	ASSERT_STREQ("synth", upgrade_kind_name(UPGRADE_REC_SYNTH));
	ASSERT_STREQ("seccompFilter", upgrade_field_name(UPGRADE_REC_PROC, UPGRADE_PROC_FILTER));
	ASSERT_EQ(UPGRADE_FD_DIR, upgrade_field_fd_kind(UPGRADE_REC_SYNTH, UPGRADE_SYNTH_FD));
	check_reencodes(&st, w.b.data, w.b.len);
	upgrade_state_done(&st);
	check_cuts_and_flips(&w);
	buf_done(&w.b);
	/* The schema's ranges. */
	sandbox_sample(&w, 6, 1, "/w/.git");
	ASSERT_EQ(-EBADMSG, upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, sizeof(err)));
	ASSERT_STREQ("record 3: seccompFilter 6 is out of range [1, 5]", err);
	buf_done(&w.b);
	sandbox_sample(&w, 1, 0, "/w/.git");
	ASSERT_EQ(-EBADMSG, upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, sizeof(err)));
	ASSERT_STREQ("record 3: evidenceDenied 0 is out of range [1, 4294967295]", err);
	buf_done(&w.b);
	sandbox_sample(&w, 1, 1, "/");
	ASSERT_EQ(-EBADMSG, upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, sizeof(err)));
	ASSERT_STREQ("record 2: path: length 1 out of range [2, 4095]", err);
	buf_done(&w.b);
}

/* ---- the denial evidence sources (upg-evidence) ---- */

/* A tracer on the tracepoint hook, attached, with Landlock's; the audit socket; a tree. */
static void evidence_sample(struct upgrade_writer *w, uint64_t hook, uint64_t ambiguous)
{
	minimal_server(w);
	upgrade_writer_begin(w, UPGRADE_REC_EVIDENCE);           /* record 1 */
	upgrade_writer_u64(w, UPGRADE_EVIDENCE_BPF_HOOK, hook);
	upgrade_writer_u64(w, UPGRADE_EVIDENCE_BPF_TP_ID, 321);
	upgrade_writer_u64(w, UPGRADE_EVIDENCE_BPF_BSS_SIZE, 16);
	upgrade_writer_u64(w, UPGRADE_EVIDENCE_BPF_DROPPED_OFF, 8);
	upgrade_writer_bool(w, UPGRADE_EVIDENCE_BPF_ATTACHED, true);
	upgrade_writer_u64(w, UPGRADE_EVIDENCE_BPF_DROPPED, 3);
	upgrade_writer_u64(w, UPGRADE_EVIDENCE_AUDIT_LOST, 4);
	upgrade_writer_u64(w, UPGRADE_EVIDENCE_AUDIT_SEQ, 5);
	upgrade_writer_bool(w, UPGRADE_EVIDENCE_AUDIT_ENABLED, true);
	upgrade_writer_end(w);
	held(w, UPGRADE_HELD_BPF_EXIT_PROG, 10, -1);          /* 2.. */
	held(w, UPGRADE_HELD_BPF_LANDLOCK_PROG, 11, -1);
	held(w, UPGRADE_HELD_BPF_RING, 12, -1);
	held(w, UPGRADE_HELD_BPF_WATCHED, 13, -1);
	held(w, UPGRADE_HELD_BPF_BSS, 14, -1);
	held(w, UPGRADE_HELD_BPF_ATTACH, 15, 1);
	held(w, UPGRADE_HELD_BPF_ATTACH, 16, 2);
	held(w, UPGRADE_HELD_AUDIT_SOCKET, 17, -1);
	held(w, UPGRADE_HELD_AUDIT_HOLD, 18, -1);             /* ..10 */
	session_rec(w);                                          /* 11 */
	upgrade_writer_begin(w, UPGRADE_REC_PROC);               /* 12 */
	upgrade_writer_ref(w, UPGRADE_PROC_SESSION, 11);
	upgrade_writer_bytes(w, UPGRADE_PROC_ID, "ev", 2);
	upgrade_writer_u64(w, UPGRADE_PROC_PID, 78);
	upgrade_writer_fd(w, UPGRADE_PROC_OUT_FD, 7);
	upgrade_writer_u64(w, UPGRADE_PROC_NEXT_SEQ, 1);
	upgrade_writer_bool(w, UPGRADE_PROC_SANDBOXED, true);
	upgrade_writer_u64(w, UPGRADE_PROC_EV_DENIED, 2);
	upgrade_writer_bool(w, UPGRADE_PROC_EV_LOST, true);
	upgrade_writer_u64(w, UPGRADE_PROC_EV_AMBIGUOUS, ambiguous);
	/* One kept denial: seccomp, decisive, pid 78, getsockopt, EPERM, "", "errno", "py". */
	upgrade_writer_bytes(w, UPGRADE_PROC_EV_KEPT,
			     "\x03\x01N\0\0\0" "7\0\0\0" "\x01\0\0\0" "\0" "\x05" "errno" "\x02" "py",
			     24);
	upgrade_writer_end(w);
	ASSERT_EQ(0, upgrade_writer_finish(w));
}

TEST(evidence_fields)
{
	struct upgrade_writer w;
	struct upgrade_state st;
	char err[256];

	evidence_sample(&w, 2, 6);
	ASSERT_EQ(0, upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, sizeof(err)));
	ASSERT_EQ(1, st.count[UPGRADE_REC_EVIDENCE]);
	ASSERT_EQ(9, st.count[UPGRADE_REC_HELD_FD]);
	ASSERT_EQ(2, upgrade_rec_u64(&st, 1, UPGRADE_EVIDENCE_BPF_HOOK, 0));
	ASSERT_EQ(321, upgrade_rec_u64(&st, 1, UPGRADE_EVIDENCE_BPF_TP_ID, 0));
	ASSERT_TRUE(upgrade_rec_bool(&st, 1, UPGRADE_EVIDENCE_BPF_ATTACHED));
	ASSERT_EQ(5, upgrade_rec_u64(&st, 1, UPGRADE_EVIDENCE_AUDIT_SEQ, 0));
	ASSERT_EQ(UPGRADE_HELD_BPF_ATTACH, upgrade_rec_u64(&st, 7, UPGRADE_HELD_ROLE, 0));
	ASSERT_EQ(15, upgrade_rec_num(&st, 7, UPGRADE_HELD_FD));
	ASSERT_TRUE(upgrade_rec_bool(&st, 12, UPGRADE_PROC_EV_LOST));
	ASSERT_EQ(6, upgrade_rec_u64(&st, 12, UPGRADE_PROC_EV_AMBIGUOUS, 0));
	ASSERT_STREQ("evidence", upgrade_kind_name(UPGRADE_REC_EVIDENCE));
	ASSERT_STREQ("bpfDroppedOffset",
		     upgrade_field_name(UPGRADE_REC_EVIDENCE, UPGRADE_EVIDENCE_BPF_DROPPED_OFF));
	ASSERT_STREQ("evidenceLost", upgrade_field_name(UPGRADE_REC_PROC, UPGRADE_PROC_EV_LOST));
	ASSERT_EQ(24, upgrade_rec_field(&st, 12, UPGRADE_PROC_EV_KEPT)->len);
	check_reencodes(&st, w.b.data, w.b.len);
	upgrade_state_done(&st);
	check_cuts_and_flips(&w);
	buf_done(&w.b);
	/* The schema's ranges. */
	evidence_sample(&w, 3, 1);
	ASSERT_EQ(-EBADMSG, upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, sizeof(err)));
	ASSERT_STREQ("record 1: bpfHook 3 is out of range [0, 2]", err);
	buf_done(&w.b);
	evidence_sample(&w, 2, 0);
	ASSERT_EQ(-EBADMSG, upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, sizeof(err)));
	ASSERT_STREQ("record 12: evidenceAmbiguous 0 is out of range [1, 4294967295]", err);
	buf_done(&w.b);
	/* One evidence record at most. */
	minimal_server(&w);
	for (int i = 0; i < 2; i++) {
		upgrade_writer_begin(&w, UPGRADE_REC_EVIDENCE);
		upgrade_writer_u64(&w, UPGRADE_EVIDENCE_AUDIT_SEQ, 1);
		upgrade_writer_end(&w);
	}
	ASSERT_EQ(0, upgrade_writer_finish(&w));
	ASSERT_EQ(-EBADMSG, upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, sizeof(err)));
	buf_done(&w.b);
	/* Held fd roles run to 23 (the audit hold); 24 is not one. */
	minimal_server(&w);
	held(&w, 24, 10, -1);
	ASSERT_EQ(0, upgrade_writer_finish(&w));
	ASSERT_EQ(-EBADMSG, upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, sizeof(err)));
	ASSERT_STREQ("record 1: role 24 is out of range [1, 23]", err);
	buf_done(&w.b);
}

/* ---- remote mode's identity in the SERVER record (upg-remote) ---- */

static void identity_sample(struct upgrade_writer *w, size_t len)
{
	uint8_t id[UPGRADE_RELAY_IDENTITY_BYTES + 1];

	for (size_t i = 0; i < sizeof(id); i++)
		id[i] = (uint8_t)(i * 7);
	upgrade_writer_init(w, UPGRADE_STATE_VERSION);
	upgrade_writer_begin(w, UPGRADE_REC_SERVER);
	upgrade_writer_str(w, UPGRADE_SERVER_VERSION, "x");
	upgrade_writer_u64(w, UPGRADE_SERVER_START_MS, 1);
	upgrade_writer_u64(w, UPGRADE_SERVER_UPGRADES, 0);
	upgrade_writer_bytes(w, UPGRADE_SERVER_RELAY_IDENTITY, id, len);
	upgrade_writer_end(w);
	ASSERT_EQ(0, upgrade_writer_finish(w));
}

TEST(relay_identity)
{
	struct upgrade_writer w;
	struct upgrade_state st;
	const struct upgrade_field *f;
	char err[256];

	/* Exactly the identity's size: parsed, the bytes as written, re-encoded to themselves. */
	identity_sample(&w, UPGRADE_RELAY_IDENTITY_BYTES);
	ASSERT_EQ(0, upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, sizeof(err)));
	f = upgrade_rec_field(&st, 0, UPGRADE_SERVER_RELAY_IDENTITY);
	ASSERT_TRUE(f && f->len == UPGRADE_RELAY_IDENTITY_BYTES);
	ASSERT_EQ(7, f->val[1]);
	ASSERT_STREQ("relayIdentity",
		     upgrade_field_name(UPGRADE_REC_SERVER, UPGRADE_SERVER_RELAY_IDENTITY));
	check_reencodes(&st, w.b.data, w.b.len);
	upgrade_state_done(&st);
	buf_done(&w.b);
	/* One byte short or over: refused by its length. */
	identity_sample(&w, UPGRADE_RELAY_IDENTITY_BYTES - 1);
	ASSERT_EQ(-EBADMSG, upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, sizeof(err)));
	ASSERT_STREQ("record 0: relayIdentity: length 3647 out of range [3648, 3648]", err);
	buf_done(&w.b);
	identity_sample(&w, UPGRADE_RELAY_IDENTITY_BYTES + 1);
	ASSERT_EQ(-EBADMSG, upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, sizeof(err)));
	buf_done(&w.b);
}

/* ---- a managed-network process: its proxy's configuration and listeners (upg-netproxy) ---- */

#define NP_CONFIG                                                              \
	"{\"proxy\":{\"enabled\":true,\"mode\":\"full\",\"domains\":{\"a.test\":\"allow\"}}}"

/* A session and a process with a proxy (config, with_socks: the SOCKS5 and UDP sockets). */
static void netproxy_sample(struct upgrade_writer *w, const char *config, bool with_socks)
{
	minimal_server(w);
	session_rec(w);                                          /* record 1 */
	upgrade_writer_begin(w, UPGRADE_REC_PROC);               /* 2 */
	upgrade_writer_ref(w, UPGRADE_PROC_SESSION, 1);
	upgrade_writer_bytes(w, UPGRADE_PROC_ID, "np", 2);
	upgrade_writer_u64(w, UPGRADE_PROC_PID, 78);
	upgrade_writer_fd(w, UPGRADE_PROC_OUT_FD, 7);
	upgrade_writer_u64(w, UPGRADE_PROC_NEXT_SEQ, 1);
	upgrade_writer_bool(w, UPGRADE_PROC_SANDBOXED, true);
	upgrade_writer_str(w, UPGRADE_PROC_NP_CONFIG, config);
	upgrade_writer_fd(w, UPGRADE_PROC_NP_HTTP_FD, 8);
	if (with_socks) {
		upgrade_writer_fd(w, UPGRADE_PROC_NP_SOCKS_FD, 9);
		upgrade_writer_fd(w, UPGRADE_PROC_NP_UDP_FD, 10);
	}
	upgrade_writer_end(w);
	ASSERT_EQ(0, upgrade_writer_finish(w));
}

TEST(netproxy_fields)
{
	struct upgrade_writer w;
	struct upgrade_state st;
	const struct upgrade_field *f;
	char err[256];

	netproxy_sample(&w, NP_CONFIG, true);
	ASSERT_EQ(0, upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, sizeof(err)));
	f = upgrade_rec_field(&st, 2, UPGRADE_PROC_NP_CONFIG);
	ASSERT_TRUE(f && f->len == strlen(NP_CONFIG) && !memcmp(f->val, NP_CONFIG, f->len));
	ASSERT_EQ(UPGRADE_T_STR, f->type);
	ASSERT_EQ(8, upgrade_rec_num(&st, 2, UPGRADE_PROC_NP_HTTP_FD));
	ASSERT_EQ(9, upgrade_rec_num(&st, 2, UPGRADE_PROC_NP_SOCKS_FD));
	ASSERT_EQ(10, upgrade_rec_num(&st, 2, UPGRADE_PROC_NP_UDP_FD));
	ASSERT_STREQ("networkProxy", upgrade_field_name(UPGRADE_REC_PROC, UPGRADE_PROC_NP_CONFIG));
	ASSERT_STREQ("proxyUdpFd", upgrade_field_name(UPGRADE_REC_PROC, UPGRADE_PROC_NP_UDP_FD));
	for (uint16_t t = UPGRADE_PROC_NP_HTTP_FD; t <= UPGRADE_PROC_NP_UDP_FD; t++)
		ASSERT_EQ(UPGRADE_FD_SOCKET, upgrade_field_fd_kind(UPGRADE_REC_PROC, t));
	/* The tags are fixed (other items' schema numbers stay where they are). */
	ASSERT_EQ(40, UPGRADE_PROC_NP_CONFIG);
	ASSERT_EQ(43, UPGRADE_PROC_NP_UDP_FD);
	check_reencodes(&st, w.b.data, w.b.len);
	upgrade_state_done(&st);
	check_cuts_and_flips(&w);
	buf_done(&w.b);
	/* The schema's range: a configuration of one byte. */
	netproxy_sample(&w, "{", false);
	ASSERT_EQ(-EBADMSG, upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, sizeof(err)));
	ASSERT_STREQ("record 2: networkProxy: length 1 out of range [2, 1048576]", err);
	buf_done(&w.b);
	/* An fd named twice (the HTTP listener as the process's stdout too). */
	minimal_server(&w);
	session_rec(&w);
	upgrade_writer_begin(&w, UPGRADE_REC_PROC);
	upgrade_writer_ref(&w, UPGRADE_PROC_SESSION, 1);
	upgrade_writer_bytes(&w, UPGRADE_PROC_ID, "np", 2);
	upgrade_writer_u64(&w, UPGRADE_PROC_PID, 78);
	upgrade_writer_fd(&w, UPGRADE_PROC_OUT_FD, 7);
	upgrade_writer_u64(&w, UPGRADE_PROC_NEXT_SEQ, 1);
	upgrade_writer_str(&w, UPGRADE_PROC_NP_CONFIG, NP_CONFIG);
	upgrade_writer_fd(&w, UPGRADE_PROC_NP_HTTP_FD, 7);
	upgrade_writer_end(&w);
	ASSERT_EQ(0, upgrade_writer_finish(&w));
	ASSERT_EQ(-EBADMSG, upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, sizeof(err)));
	buf_done(&w.b);
	/* As BYTES rather than STR: the type is the schema's. */
	minimal_server(&w);
	session_rec(&w);
	upgrade_writer_begin(&w, UPGRADE_REC_PROC);
	upgrade_writer_ref(&w, UPGRADE_PROC_SESSION, 1);
	upgrade_writer_bytes(&w, UPGRADE_PROC_ID, "np", 2);
	upgrade_writer_u64(&w, UPGRADE_PROC_PID, 78);
	upgrade_writer_u64(&w, UPGRADE_PROC_NEXT_SEQ, 1);
	upgrade_writer_bytes(&w, UPGRADE_PROC_NP_CONFIG, NP_CONFIG, strlen(NP_CONFIG));
	upgrade_writer_end(&w);
	ASSERT_EQ(0, upgrade_writer_finish(&w));
	ASSERT_EQ(-EBADMSG, upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, sizeof(err)));
	ASSERT_STREQ("record 2 (proc): field networkProxy has type 3, not 4", err);
	buf_done(&w.b);
}

TEST_MAIN()
