/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for the live upgrade's view (src/upgrade/view.c): the parsed
 * blob into plain structs, and the rules that span fields and records (one
 * refusal per rule beside the accepted cases). The sample is in
 * upgrade-state-kit.c; the codec's tests in test-upgrade-state.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "state.h"
#include "tests.h"
#include "upgrade-state-kit.h"
#include "view.h"

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
	ASSERT_EQ(1, v.conns[0].change_id);
	ASSERT_TRUE(!v.conns[0].has_missing_id);
	ASSERT_EQ(1, v.conns[0].n_changes);
	ASSERT_EQ(1, v.conns[0].n_handles);
	ASSERT_EQ(1, v.n_watches);
	ASSERT_EQ(0, v.watches[0].conn);
	ASSERT_EQ(1, v.watches[0].id);
	ASSERT_TRUE(v.watches[0].recursive && !v.watches[0].missing && v.watches[0].has_ident);
	ASSERT_EQ(77, v.watches[0].ino);
	ASSERT_EQ(0, v.watches[0].max_dirs); /* absent: the default */
	ASSERT_EQ(1, v.n_fs_handles);
	ASSERT_EQ(0, v.fs_handles[0].conn);
	ASSERT_EQ(FD_FILE, v.fs_handles[0].fd);
	ASSERT_MEMEQ("h1", v.fs_handles[0].id, 2);
	ASSERT_TRUE(!v.fs_handles[0].writable);
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

	minimal_server(&w);
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
	upgrade_writer_u64(w, UPGRADE_WATCH_ID, 1);
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
		{ v_v1_no_index, "record 1: an index is for a v1 cgroup base, a guard port or a "
				  "tracer's attachment only, and they need one" },
		{ v_guard_ports_ok, "" },
		{ v_guard_port_no_index, "record 2: an index is for a v1 cgroup base, a guard port "
					  "or a tracer's attachment only, and they need one" },
		{ v_guard_port_twice, "record 3: held fd role 7 given twice" },
		{ v_guard_index_on_cgroup, "record 1: an index is for a v1 cgroup base, a guard port or a "
				  "tracer's attachment only, and they need one" },
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

/* ---- watches and fs/open handles (src/upgrade/adopt-fs.c) ---- */

/* A WebSocket connection with its watch ids (missing_id < 0: no fs/watchMissing seen). */
static void fs_conn(struct upgrade_writer *w, int fd, int64_t missing_id, uint64_t change_id)
{
	upgrade_writer_begin(w, UPGRADE_REC_CONN);
	upgrade_writer_u64(w, UPGRADE_CONN_TRANSPORT, UPGRADE_CONN_WS);
	upgrade_writer_fd(w, UPGRADE_CONN_FD_IN, fd);
	upgrade_writer_bool(w, UPGRADE_CONN_UPGRADED, true);
	if (missing_id >= 0)
		upgrade_writer_u64(w, UPGRADE_CONN_MISSING_ID, (uint64_t)missing_id);
	if (change_id)
		upgrade_writer_u64(w, UPGRADE_CONN_CHANGE_ID, change_id);
	upgrade_writer_end(w);
}

struct wspec {
	uint32_t conn;
	uint64_t id;
	const char *path, *only, *present, *queued;
	const uint8_t *others;
	size_t others_len;
	bool missing, recursive, ident;
	uint64_t ended;
};

static void watch_rec(struct upgrade_writer *w, const struct wspec *s)
{
	upgrade_writer_begin(w, UPGRADE_REC_WATCH);
	upgrade_writer_ref(w, UPGRADE_WATCH_CONN, s->conn);
	upgrade_writer_u64(w, UPGRADE_WATCH_ID, s->id);
	upgrade_writer_bytes(w, UPGRADE_WATCH_PATH, s->path, strlen(s->path));
	if (s->recursive)
		upgrade_writer_bool(w, UPGRADE_WATCH_RECURSIVE, true);
	if (s->missing)
		upgrade_writer_bool(w, UPGRADE_WATCH_MISSING, true);
	if (s->others)
		upgrade_writer_bytes(w, UPGRADE_WATCH_OTHERS, s->others, s->others_len);
	if (s->present)
		upgrade_writer_bytes(w, UPGRADE_WATCH_PRESENT, s->present, strlen(s->present));
	if (s->only)
		upgrade_writer_bytes(w, UPGRADE_WATCH_ONLY, s->only, strlen(s->only));
	if (s->ident) {
		upgrade_writer_u64(w, UPGRADE_WATCH_DEV, 1);
		upgrade_writer_u64(w, UPGRADE_WATCH_INO, 2);
	}
	if (s->ended)
		upgrade_writer_u64(w, UPGRADE_WATCH_ENDED, s->ended);
	if (s->queued)
		upgrade_writer_bytes(w, UPGRADE_WATCH_QUEUED, s->queued, strlen(s->queued));
	upgrade_writer_end(w);
}

static void handle_rec(struct upgrade_writer *w, uint32_t conn, const char *id, int fd)
{
	upgrade_writer_begin(w, UPGRADE_REC_FS_HANDLE);
	upgrade_writer_ref(w, UPGRADE_FS_HANDLE_CONN, conn);
	upgrade_writer_bytes(w, UPGRADE_FS_HANDLE_ID, id, strlen(id));
	upgrade_writer_fd(w, UPGRADE_FS_HANDLE_FD, fd);
	upgrade_writer_end(w);
}

/* (u32 len, path)*: "/a/b" and "/c". */
static const uint8_t others_ok[] = { 4, 0, 0, 0, '/', 'a', '/', 'b', 2, 0, 0, 0, '/', 'c' };

static void v_fs_ok(struct upgrade_writer *w)
{
	fs_conn(w, 5, 1, 3);                                                /* record 1 */
	/* fs/watchMissing and fs/watch ids are two ranges: 1 in both. */
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 1, .path = "/m", .missing = true,
				      .others = others_ok, .others_len = sizeof(others_ok),
				      .present = "/p" });
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 1, .path = "/d", .recursive = true,
				      .ident = true });
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 2, .path = "/d", .only = "f", .ident = true });
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 3, .path = "/", .ended = 2,
				      .queued = "{\"kind\":\"ended\",\"reason\":\"moved\"}," });
	fs_conn(w, 6, -1, 1);                                               /* record 6 */
	watch_rec(w, &(struct wspec){ .conn = 6, .id = 1, .path = "/d", .ident = true });
	handle_rec(w, 1, "h", 7);
	handle_rec(w, 6, "h", 8);
	handle_rec(w, 6, "", 9);
}

static void v_missing_not_newest(struct upgrade_writer *w)
{
	fs_conn(w, 5, 3, 0);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 2, .path = "/m", .missing = true });
}

static void v_missing_without_id(struct upgrade_writer *w)
{
	fs_conn(w, 5, -1, 0);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 0, .path = "/m", .missing = true });
}

static void v_two_missing(struct upgrade_writer *w)
{
	fs_conn(w, 5, 3, 0);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 3, .path = "/m", .missing = true });
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 3, .path = "/n", .missing = true });
}

static void v_missing_recursive(struct upgrade_writer *w)
{
	fs_conn(w, 5, 3, 0);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 3, .path = "/m", .missing = true,
				      .recursive = true });
}

static void v_others_relative(struct upgrade_writer *w)
{
	static const uint8_t o[] = { 1, 0, 0, 0, 'x' };

	fs_conn(w, 5, 3, 0);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 3, .path = "/m", .missing = true,
				      .others = o, .others_len = sizeof(o) });
}

static void v_others_cut(struct upgrade_writer *w)
{
	static const uint8_t o[] = { 9, 0, 0, 0, '/', 'x' };

	fs_conn(w, 5, 3, 0);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 3, .path = "/m", .missing = true,
				      .others = o, .others_len = sizeof(o) });
}

static void v_others_header_cut(struct upgrade_writer *w)
{
	static const uint8_t o[] = { 1, 0, 0, 0, '/', 1, 0 };

	fs_conn(w, 5, 3, 0);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 3, .path = "/m", .missing = true,
				      .others = o, .others_len = sizeof(o) });
}

static void v_present_relative(struct upgrade_writer *w)
{
	fs_conn(w, 5, 3, 0);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 3, .path = "/m", .missing = true,
				      .present = "p" });
}

static void v_change_with_present(struct upgrade_writer *w)
{
	fs_conn(w, 5, -1, 1);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 1, .path = "/d", .present = "/p",
				      .ident = true });
}

static void v_file_watch_recursive(struct upgrade_writer *w)
{
	fs_conn(w, 5, -1, 1);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 1, .path = "/d", .only = "f",
				      .recursive = true, .ident = true });
}

static void v_file_watch_two_names(struct upgrade_writer *w)
{
	fs_conn(w, 5, -1, 1);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 1, .path = "/d", .only = "a/b",
				      .ident = true });
}

static void v_file_watch_dotdot(struct upgrade_writer *w)
{
	fs_conn(w, 5, -1, 1);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 1, .path = "/d", .only = "..",
				      .ident = true });
}

static void v_change_id_not_handed(struct upgrade_writer *w)
{
	fs_conn(w, 5, -1, 2);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 5, .path = "/d", .ident = true });
}

static void v_change_id_zero(struct upgrade_writer *w)
{
	fs_conn(w, 5, -1, 2);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 0, .path = "/d", .ident = true });
}

static void v_ended_with_ident(struct upgrade_writer *w)
{
	fs_conn(w, 5, -1, 1);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 1, .path = "/d", .ident = true, .ended = 1 });
}

static void v_live_without_ident(struct upgrade_writer *w)
{
	fs_conn(w, 5, -1, 1);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 1, .path = "/d" });
}

static void v_dup_change_id(struct upgrade_writer *w)
{
	fs_conn(w, 5, -1, 2);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 1, .path = "/d", .ident = true });
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 1, .path = "/e", .ident = true });
}

static void v_seventeen_watches(struct upgrade_writer *w)
{
	fs_conn(w, 5, -1, 17);
	for (uint64_t id = 1; id <= 17; id++)
		watch_rec(w, &(struct wspec){ .conn = 1, .id = id, .path = "/d", .ident = true });
}

static void v_queued_on_missing(struct upgrade_writer *w)
{
	fs_conn(w, 5, 3, 0);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 3, .path = "/m", .missing = true,
				      .queued = "{}," });
}

static void v_queued_without_comma(struct upgrade_writer *w)
{
	fs_conn(w, 5, -1, 1);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 1, .path = "/d", .ident = true,
				      .queued = "{\"kind\":\"x\"}" });
}

static void v_queued_not_an_object(struct upgrade_writer *w)
{
	fs_conn(w, 5, -1, 1);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 1, .path = "/d", .ident = true,
				      .queued = "1,2," });
}

static void v_dup_handle(struct upgrade_writer *w)
{
	fs_conn(w, 5, -1, 0);
	handle_rec(w, 1, "h", 6);
	handle_rec(w, 1, "h", 7);
}

static void v_too_many_handles(struct upgrade_writer *w)
{
	fs_conn(w, 5, -1, 0);
	for (int i = 0; i < 129; i++) {
		char id[16];

		snprintf(id, sizeof(id), "h%d", i);
		handle_rec(w, 1, id, 10 + i);
	}
}

TEST(view_fs_rules)
{
	static const struct {
		void (*build)(struct upgrade_writer *w);
		const char *err;
	} cases[] = {
		{ v_fs_ok, "" },
		{ v_missing_not_newest, "record 2: fs/watchMissing watch 2 is not its connection's newest, or not its only one" },
		{ v_missing_without_id, "record 2: fs/watchMissing watch 0 is not its connection's newest, or not its only one" },
		{ v_two_missing, "record 3: fs/watchMissing watch 3 is not its connection's newest, or not its only one" },
		{ v_missing_recursive, "record 2: an fs/watchMissing watch with fs/watch's fields" },
		{ v_others_relative, "record 2: others: entry 0 is not an absolute path" },
		{ v_others_cut, "record 2: others: entry 0 is not an absolute path" },
		{ v_others_header_cut, "record 2: others: entry 1 is cut short or one too many" },
		{ v_present_relative, "record 2: a present path that is not absolute" },
		{ v_change_with_present, "record 2: an fs/watch watch with fs/watchMissing's paths" },
		{ v_file_watch_recursive, "record 2: a file watch's name is one component, not recursive" },
		{ v_file_watch_two_names, "record 2: a file watch's name is one component, not recursive" },
		{ v_file_watch_dotdot, "record 2: a file watch's name is one component, not recursive" },
		{ v_change_id_not_handed, "record 2: fs/watch watch 5 was not handed out (last 2)" },
		{ v_change_id_zero, "record 2: fs/watch watch 0 was not handed out (last 2)" },
		{ v_ended_with_ident, "record 2: a root's identity exactly when the watch has not ended" },
		{ v_live_without_ident, "record 2: a root's identity exactly when the watch has not ended" },
		{ v_dup_change_id, "record 3: the same fs/watch watchId on the same connection, as record 2" },
		{ v_seventeen_watches, "record 18: more than 16 fs/watch watches on a connection" },
		{ v_queued_on_missing, "record 2: an fs/watchMissing watch with fs/watch's fields" },
		{ v_queued_without_comma, "record 2: queued events that are not objects each followed by a comma" },
		{ v_queued_not_an_object, "record 2: queued events that are not objects each followed by a comma" },
		{ v_dup_handle, "record 3: the same handleId on the same connection, as record 2" },
		{ v_too_many_handles, "record 130: more than 128 fs/open handles on a connection" },
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		char err[256];
		int r = view_one(cases[i].build, err, sizeof(err));

		ASSERT_EQ(cases[i].err[0] ? -EBADMSG : 0, r);
		ASSERT_STREQ(cases[i].err, err);
	}
}

/* ---- sandboxed processes: the synthesized mount points and a plan's fields ---- */

static void synth_rec(struct upgrade_writer *w, const char *path, uint64_t refs, int fd)
{
	upgrade_writer_begin(w, UPGRADE_REC_SYNTH);
	upgrade_writer_str(w, UPGRADE_SYNTH_PATH, path);
	upgrade_writer_u64(w, UPGRADE_SYNTH_REFS, refs);
	upgrade_writer_fd(w, UPGRADE_SYNTH_FD, fd);
	upgrade_writer_end(w);
}

struct sspec {
	uint64_t pid;
	bool sandboxed, reaped, closed;
	const char *synth;      /* the synth field's bytes, synth_len of them (NULL: absent) */
	size_t synth_len;
	uint64_t filter, ev_denied; /* 0: absent */
	bool ev_lost;
	uint64_t ev_ambiguous;  /* 0: absent */
	const char *kept;       /* evidenceKept's bytes, kept_len of them (NULL: absent) */
	size_t kept_len;
};

/* A process of the session at record 1 with its sandbox fields. */
static void sproc_rec(struct upgrade_writer *w, const struct sspec *p)
{
	char id[16];

	snprintf(id, sizeof(id), "p%llu", (unsigned long long)p->pid);
	upgrade_writer_begin(w, UPGRADE_REC_PROC);
	upgrade_writer_ref(w, UPGRADE_PROC_SESSION, 1);
	upgrade_writer_bytes(w, UPGRADE_PROC_ID, id, strlen(id));
	upgrade_writer_u64(w, UPGRADE_PROC_PID, p->pid);
	upgrade_writer_u64(w, UPGRADE_PROC_NEXT_SEQ, 5);
	upgrade_writer_bool(w, UPGRADE_PROC_REAPED, p->reaped || p->closed);
	upgrade_writer_bool(w, UPGRADE_PROC_EXITED, p->closed);
	if (p->reaped || p->closed) {
		upgrade_writer_u64(w, UPGRADE_PROC_EXIT_CODE, 1);
		upgrade_writer_u64(w, UPGRADE_PROC_TERM_SIGNAL, 0);
	}
	if (p->closed)
		upgrade_writer_u64(w, UPGRADE_PROC_EXIT_SEQ, 3);
	upgrade_writer_bool(w, UPGRADE_PROC_CLOSED, p->closed);
	upgrade_writer_bool(w, UPGRADE_PROC_SANDBOXED, p->sandboxed);
	if (p->synth)
		upgrade_writer_bytes(w, UPGRADE_PROC_SYNTH, p->synth, p->synth_len);
	if (p->filter)
		upgrade_writer_u64(w, UPGRADE_PROC_FILTER, p->filter);
	if (p->ev_denied)
		upgrade_writer_u64(w, UPGRADE_PROC_EV_DENIED, p->ev_denied);
	if (p->ev_lost)
		upgrade_writer_bool(w, UPGRADE_PROC_EV_LOST, true);
	if (p->ev_ambiguous)
		upgrade_writer_u64(w, UPGRADE_PROC_EV_AMBIGUOUS, p->ev_ambiguous);
	if (p->kept)
		upgrade_writer_bytes(w, UPGRADE_PROC_EV_KEPT, p->kept, p->kept_len);
	upgrade_writer_end(w);
}

#define GIT "\x07\0\0\0/w/.git"
#define CODEX "\x09\0\0\0/w/.codex"
#define SYNTH(lit) .synth = lit, .synth_len = sizeof(lit) - 1
/* The session (record 1), the registry (records 2-3), then the processes. */
#define SANDBOX_CASE(name, git_refs, ...)                                   \
	static void name(struct upgrade_writer *w)                            \
	{                                                                     \
		static const struct sspec p[] = { __VA_ARGS__ };              \
		session_rec(w);                                               \
		synth_rec(w, "/w/.git", git_refs, 5);                         \
		synth_rec(w, "/w/.codex", 1, 6);                              \
		for (size_t i = 0; i < ELEMENTSOF(p); i++)                    \
			sproc_rec(w, &p[i]);                                  \
	}
SANDBOX_CASE(s_ok, 2,
	     { .pid = 10, .sandboxed = true, SYNTH(GIT CODEX), .filter = 1, .ev_denied = 3 },
	     { .pid = 11, .sandboxed = true, SYNTH(GIT), .filter = 2 },
	     { .pid = 12, .sandboxed = true, .closed = true })
SANDBOX_CASE(s_refs_more, 2, { .pid = 10, .sandboxed = true, SYNTH(GIT CODEX) })
SANDBOX_CASE(s_refs_fewer, 1,
	     { .pid = 10, .sandboxed = true, SYNTH(GIT CODEX) },
	     { .pid = 11, .sandboxed = true, SYNTH(GIT) })
SANDBOX_CASE(s_unknown, 1, { .pid = 10, .sandboxed = true, SYNTH(GIT CODEX "\x05\0\0\0/w/.x") })
SANDBOX_CASE(s_named_twice, 2, { .pid = 10, .sandboxed = true, SYNTH(GIT CODEX GIT) })
SANDBOX_CASE(s_not_sandboxed, 1, { .pid = 10, SYNTH(GIT CODEX) })
SANDBOX_CASE(s_filter_not_sandboxed, 1,
	     { .pid = 10, .sandboxed = true, SYNTH(GIT CODEX) }, { .pid = 11, .filter = 1 })
SANDBOX_CASE(s_closed_plan, 1,
	     { .pid = 10, .sandboxed = true, SYNTH(GIT CODEX) },
	     { .pid = 11, .sandboxed = true, .closed = true, .filter = 1 })
SANDBOX_CASE(s_denied_reaped, 1,
	     { .pid = 10, .sandboxed = true, .reaped = true, SYNTH(GIT CODEX), .ev_denied = 1 })
SANDBOX_CASE(s_entry_cut, 1, { .pid = 10, .sandboxed = true, SYNTH(GIT CODEX "\x09\0") })
SANDBOX_CASE(s_entry_long, 1, { .pid = 10, .sandboxed = true, SYNTH(GIT CODEX "\x09\0\0\0/w") })
SANDBOX_CASE(s_entry_relative, 1, { .pid = 10, .sandboxed = true, SYNTH(GIT "\x08\0\0\0w/.codex") })

static void s_registry_twice(struct upgrade_writer *w)
{
	synth_rec(w, "/w/.git", 1, 5);
	synth_rec(w, "/w/.git", 1, 6);
}

static void s_relative(struct upgrade_writer *w)
{
	synth_rec(w, "w/.git", 1, 5);
}

static void s_trailing_slash(struct upgrade_writer *w)
{
	synth_rec(w, "/w/.git/", 1, 5);
}

static void s_unused(struct upgrade_writer *w)
{
	synth_rec(w, "/w/.git", 1, 5);
}

TEST(view_sandbox)
{
	struct upgrade_writer w;
	struct upgrade_state st;
	struct upgrade_view v;
	char err[256];

	minimal_server(&w);
	s_ok(&w);
	ASSERT_EQ(0, upgrade_writer_finish(&w));
	ASSERT_EQ(0, upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, sizeof(err)));
	ASSERT_EQ(0, upgrade_view_build(&st, &v, err, sizeof(err)));
	ASSERT_EQ(2, v.n_synth);
	ASSERT_EQ(7, v.synth[0].path_len);
	ASSERT_MEMEQ("/w/.git", v.synth[0].path, 7);
	ASSERT_EQ(2, v.synth[0].refs);
	ASSERT_EQ(5, v.synth[0].fd);
	ASSERT_EQ(6, v.synth[1].fd);
	ASSERT_EQ(3, v.n_procs);
	ASSERT_EQ(2, v.procs[0].n_synth);
	ASSERT_EQ(1, v.procs[0].filter);
	ASSERT_EQ(3, v.procs[0].ev_denied);
	ASSERT_EQ(1, v.procs[1].n_synth);
	ASSERT_EQ(2, v.procs[1].filter);
	ASSERT_EQ(0, v.procs[1].ev_denied);
	ASSERT_TRUE(v.procs[2].synth == NULL && v.procs[2].n_synth == 0 && v.procs[2].filter == 0);
	upgrade_view_done(&v);
	upgrade_state_done(&st);
	buf_done(&w.b);
}

TEST(view_sandbox_rules)
{
	static const struct {
		void (*build)(struct upgrade_writer *w);
		const char *err;
	} cases[] = {
		{ s_ok, "" },
		{ s_refs_more, "mount point /w/.git: 2 users in the registry, 1 processes name it" },
		{ s_refs_fewer, "mount point /w/.git: 1 users in the registry, 2 processes name it" },
		{ s_unknown, "process 10: mount point /w/.x is not in the registry" },
		{ s_named_twice, "process 10: mount point /w/.git named twice" },
		{ s_not_sandboxed, "record 4: a sandbox plan on a process not sandboxed" },
		{ s_filter_not_sandboxed, "record 5: a sandbox plan on a process not sandboxed" },
		{ s_closed_plan, "record 5: a sandbox plan on a process closed" },
		{ s_denied_reaped, "record 4: denial evidence on a process reaped" },
		{ s_entry_cut, "record 4: synth: entry 2 is cut short" },
		{ s_entry_long, "record 4: synth: entry 2 is not an absolute path" },
		{ s_entry_relative, "record 4: synth: entry 1 is not an absolute path" },
		{ s_registry_twice, "mount point /w/.git is in the registry twice" },
		{ s_relative, "record 1: a mount point that is not an absolute path with a name" },
		{ s_trailing_slash, "record 1: a mount point that is not an absolute path with a name" },
		{ s_unused, "mount point /w/.git: 1 users in the registry, 0 processes name it" },
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		char err[256];
		int r = view_one(cases[i].build, err, sizeof(err));

		ASSERT_EQ(cases[i].err[0] ? -EBADMSG : 0, r);
		ASSERT_STREQ(cases[i].err, err);
	}
}

/* ---- the denial evidence sources (upg-evidence) ---- */

enum { EV_NO_BPF = -1, EV_TP_ID = 1, EV_ATTACHED = 2, EV_AUDIT = 4, EV_BAD_OFF = 8,
       EV_NO_BSS = 16 };

/* The evidence record (record 1): the tracer's values on hook (EV_NO_BPF: none), flags above. */
static void ev_rec(struct upgrade_writer *w, int hook, unsigned flags)
{
	upgrade_writer_begin(w, UPGRADE_REC_EVIDENCE);
	if (hook >= 0)
		upgrade_writer_u64(w, UPGRADE_EVIDENCE_BPF_HOOK, (uint64_t)hook);
	if (flags & EV_TP_ID)
		upgrade_writer_u64(w, UPGRADE_EVIDENCE_BPF_TP_ID, 44);
	if (hook >= 0 && !(flags & EV_NO_BSS))
		upgrade_writer_u64(w, UPGRADE_EVIDENCE_BPF_BSS_SIZE, 16);
	if (hook >= 0)
		upgrade_writer_u64(w, UPGRADE_EVIDENCE_BPF_DROPPED_OFF, flags & EV_BAD_OFF ? 12 : 8);
	if (flags & EV_ATTACHED)
		upgrade_writer_bool(w, UPGRADE_EVIDENCE_BPF_ATTACHED, true);
	if (flags & EV_AUDIT)
		upgrade_writer_u64(w, UPGRADE_EVIDENCE_AUDIT_SEQ, 9);
	upgrade_writer_end(w);
}

/* The tracer's programs and maps (fds 20-23). */
static void ev_objs(struct upgrade_writer *w)
{
	held_rec(w, UPGRADE_HELD_BPF_EXIT_PROG, 20, -1);
	held_rec(w, UPGRADE_HELD_BPF_RING, 21, -1);
	held_rec(w, UPGRADE_HELD_BPF_WATCHED, 22, -1);
	held_rec(w, UPGRADE_HELD_BPF_BSS, 23, -1);
}

static void e_ok_tp_btf(struct upgrade_writer *w)
{
	ev_rec(w, UPGRADE_EV_HOOK_TP_BTF, EV_ATTACHED | EV_AUDIT);
	ev_objs(w);
	held_rec(w, UPGRADE_HELD_BPF_ATTACH, 24, 0);
	held_rec(w, UPGRADE_HELD_AUDIT_SOCKET, 25, -1);
	held_rec(w, UPGRADE_HELD_AUDIT_HOLD, 26, -1);
}

static void e_ok_detached(struct upgrade_writer *w)
{
	ev_rec(w, UPGRADE_EV_HOOK_RAW_TP, 0);
	ev_objs(w);
}

static void e_ok_tp_landlock(struct upgrade_writer *w)
{
	ev_rec(w, UPGRADE_EV_HOOK_TP, EV_TP_ID | EV_ATTACHED);
	ev_objs(w);
	held_rec(w, UPGRADE_HELD_BPF_LANDLOCK_PROG, 24, -1);
	held_rec(w, UPGRADE_HELD_BPF_ATTACH, 25, 1);
	held_rec(w, UPGRADE_HELD_BPF_ATTACH, 26, 2);
}

static void e_ok_audit(struct upgrade_writer *w)
{
	ev_rec(w, EV_NO_BPF, EV_AUDIT);
	held_rec(w, UPGRADE_HELD_AUDIT_SOCKET, 25, -1);
}

/* evidenceKept entries: kind, decisive, pid, syscall, errno, then object, access, comm. */
#define KEPT_SECCOMP "\x03\x01\x0a\0\0\0" "7\0\0\0" "\x01\0\0\0" "\0" "\x05" "errno" "\x02" "py"
#define KEPT_MOUNT "\x04\x01\x0a\0\0\0" "\x02\x01\0\0" "\x1e\0\0\0" "\x02" "/o" "\x05" "erofs" "\0"
#define KEPT(lit) .kept = lit, .kept_len = sizeof(lit) - 1
#define KEPT_CASE(name, lit)                                                  \
	static void name(struct upgrade_writer *w)                            \
	{                                                                     \
		static const struct sspec p = { .pid = 10, .sandboxed = true, \
						KEPT(lit) };                  \
		session_rec(w);                                               \
		sproc_rec(w, &p);                                             \
	}
KEPT_CASE(e_kept_cut, KEPT_SECCOMP "\x03\x01")
KEPT_CASE(e_kept_kind, "\x06\x01\x0a\0\0\0" "7\0\0\0" "\x01\0\0\0" "\0" "\0" "\0")
KEPT_CASE(e_kept_decisive, "\x03\x02\x0a\0\0\0" "7\0\0\0" "\x01\0\0\0" "\0" "\0" "\0")
KEPT_CASE(e_kept_nul, KEPT_MOUNT KEPT_SECCOMP "\0")
KEPT_CASE(e_kept_long_comm, "\x03\x01\x0a\0\0\0" "7\0\0\0" "\x01\0\0\0" "\0" "\0"
	  "\x10" "0123456789abcdef")
KEPT_CASE(e_kept_17, KEPT_MOUNT KEPT_MOUNT KEPT_MOUNT KEPT_MOUNT KEPT_MOUNT KEPT_MOUNT
	  KEPT_MOUNT KEPT_MOUNT KEPT_MOUNT KEPT_MOUNT KEPT_MOUNT KEPT_MOUNT KEPT_MOUNT
	  KEPT_MOUNT KEPT_MOUNT KEPT_MOUNT KEPT_MOUNT)

static void e_ok_tree(struct upgrade_writer *w)
{
	static const struct sspec p = { .pid = 10, .sandboxed = true, .ev_lost = true,
					.ev_ambiguous = 2, KEPT(KEPT_SECCOMP KEPT_MOUNT) };

	session_rec(w);
	sproc_rec(w, &p);
}

static void e_no_ring(struct upgrade_writer *w)
{
	ev_rec(w, UPGRADE_EV_HOOK_TP_BTF, 0);
	held_rec(w, UPGRADE_HELD_BPF_EXIT_PROG, 20, -1);
	held_rec(w, UPGRADE_HELD_BPF_WATCHED, 22, -1);
	held_rec(w, UPGRADE_HELD_BPF_BSS, 23, -1);
}

static void e_fds_no_record(struct upgrade_writer *w)
{
	ev_objs(w);
}

static void e_socket_no_record(struct upgrade_writer *w)
{
	held_rec(w, UPGRADE_HELD_AUDIT_SOCKET, 25, -1);
}

static void e_empty_record(struct upgrade_writer *w)
{
	ev_rec(w, EV_NO_BPF, 0);
}

static void e_landlock_no_bpf(struct upgrade_writer *w)
{
	e_ok_audit(w);
	held_rec(w, UPGRADE_HELD_BPF_LANDLOCK_PROG, 24, -1);
}

static void e_attach_detached(struct upgrade_writer *w)
{
	ev_rec(w, UPGRADE_EV_HOOK_TP_BTF, 0);
	ev_objs(w);
	held_rec(w, UPGRADE_HELD_BPF_ATTACH, 24, 0);
}

static void e_no_link(struct upgrade_writer *w)
{
	ev_rec(w, UPGRADE_EV_HOOK_TP_BTF, EV_ATTACHED);
	ev_objs(w);
}

static void e_perf_not_tp(struct upgrade_writer *w)
{
	ev_rec(w, UPGRADE_EV_HOOK_TP_BTF, EV_ATTACHED);
	ev_objs(w);
	held_rec(w, UPGRADE_HELD_BPF_ATTACH, 24, 0);
	held_rec(w, UPGRADE_HELD_BPF_ATTACH, 25, 2);
}

static void e_landlock_no_link(struct upgrade_writer *w)
{
	ev_rec(w, UPGRADE_EV_HOOK_TP_BTF, EV_ATTACHED);
	ev_objs(w);
	held_rec(w, UPGRADE_HELD_BPF_LANDLOCK_PROG, 24, -1);
	held_rec(w, UPGRADE_HELD_BPF_ATTACH, 25, 0);
}

static void e_tp_no_id(struct upgrade_writer *w)
{
	ev_rec(w, UPGRADE_EV_HOOK_TP, 0);
	ev_objs(w);
}

static void e_id_not_tp(struct upgrade_writer *w)
{
	ev_rec(w, UPGRADE_EV_HOOK_RAW_TP, EV_TP_ID);
	ev_objs(w);
}

static void e_bad_off(struct upgrade_writer *w)
{
	ev_rec(w, UPGRADE_EV_HOOK_TP_BTF, EV_BAD_OFF);
	ev_objs(w);
}

static void e_no_bss_size(struct upgrade_writer *w)
{
	ev_rec(w, UPGRADE_EV_HOOK_TP_BTF, EV_NO_BSS);
	ev_objs(w);
}

static void e_attached_no_bpf(struct upgrade_writer *w)
{
	ev_rec(w, EV_NO_BPF, EV_ATTACHED | EV_AUDIT);
	held_rec(w, UPGRADE_HELD_AUDIT_SOCKET, 25, -1);
}

static void e_hold_no_socket(struct upgrade_writer *w)
{
	e_ok_detached(w);
	held_rec(w, UPGRADE_HELD_AUDIT_HOLD, 26, -1);
}

static void e_audit_no_socket(struct upgrade_writer *w)
{
	ev_rec(w, UPGRADE_EV_HOOK_TP_BTF, EV_AUDIT);
	ev_objs(w);
}

static void e_attach_no_index(struct upgrade_writer *w)
{
	ev_rec(w, UPGRADE_EV_HOOK_TP_BTF, EV_ATTACHED);
	ev_objs(w);
	held_rec(w, UPGRADE_HELD_BPF_ATTACH, 24, -1);
}

static void e_attach_index3(struct upgrade_writer *w)
{
	ev_rec(w, UPGRADE_EV_HOOK_TP_BTF, EV_ATTACHED);
	ev_objs(w);
	held_rec(w, UPGRADE_HELD_BPF_ATTACH, 24, 3);
}

static void e_lost_reaped(struct upgrade_writer *w)
{
	static const struct sspec p = { .pid = 10, .sandboxed = true, .reaped = true,
					.ev_lost = true };

	session_rec(w);
	sproc_rec(w, &p);
}

static void e_ambiguous_not_sandboxed(struct upgrade_writer *w)
{
	static const struct sspec p = { .pid = 10, .ev_ambiguous = 1 };

	session_rec(w);
	sproc_rec(w, &p);
}

TEST(view_evidence)
{
	struct upgrade_writer w;
	struct upgrade_state st;
	struct upgrade_view v;
	char err[256];

	minimal_server(&w);
	e_ok_tp_landlock(&w);
	ASSERT_EQ(0, upgrade_writer_finish(&w));
	ASSERT_EQ(0, upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, sizeof(err)));
	ASSERT_EQ(0, upgrade_view_build(&st, &v, err, sizeof(err)));
	ASSERT_TRUE(v.evidence.present && v.evidence.has_bpf && v.evidence.bpf_attached);
	ASSERT_EQ(UPGRADE_EV_HOOK_TP, v.evidence.bpf_hook);
	ASSERT_EQ(44, v.evidence.bpf_tp_id);
	ASSERT_EQ(16, v.evidence.bpf_bss_size);
	ASSERT_EQ(8, v.evidence.bpf_dropped_off);
	ASSERT_EQ(20, v.evidence.exit_prog);
	ASSERT_EQ(24, v.evidence.landlock_prog);
	ASSERT_EQ(21, v.evidence.ring);
	ASSERT_EQ(22, v.evidence.watched);
	ASSERT_EQ(23, v.evidence.bss);
	ASSERT_EQ(-1, v.evidence.links[0]);
	ASSERT_EQ(25, v.evidence.links[1]);
	ASSERT_EQ(26, v.evidence.perf);
	ASSERT_EQ(-1, v.evidence.audit_socket);
	upgrade_view_done(&v);
	upgrade_state_done(&st);
	buf_done(&w.b);
	minimal_server(&w);
	e_ok_tree(&w); /* its session is record 1 */
	e_ok_tp_btf(&w);
	ASSERT_EQ(0, upgrade_writer_finish(&w));
	ASSERT_EQ(0, upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, sizeof(err)));
	ASSERT_EQ(0, upgrade_view_build(&st, &v, err, sizeof(err)));
	ASSERT_EQ(24, v.evidence.links[0]);
	ASSERT_EQ(25, v.evidence.audit_socket);
	ASSERT_EQ(26, v.evidence.audit_hold);
	ASSERT_EQ(9, v.evidence.audit_seq);
	ASSERT_TRUE(v.procs[0].ev_lost);
	ASSERT_EQ(2, v.procs[0].ev_ambiguous);
	ASSERT_EQ(2, v.procs[0].n_ev_kept);
	upgrade_view_done(&v);
	upgrade_state_done(&st);
	buf_done(&w.b);
	/* Without the record: nothing (the fds are all -1). */
	minimal_server(&w);
	ASSERT_EQ(0, upgrade_writer_finish(&w));
	ASSERT_EQ(0, upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, sizeof(err)));
	ASSERT_EQ(0, upgrade_view_build(&st, &v, err, sizeof(err)));
	ASSERT_TRUE(!v.evidence.present && v.evidence.exit_prog == -1 &&
		    v.evidence.audit_socket == -1 && v.evidence.perf == -1);
	upgrade_view_done(&v);
	upgrade_state_done(&st);
	buf_done(&w.b);
}

TEST(view_evidence_rules)
{
	static const struct {
		void (*build)(struct upgrade_writer *w);
		const char *err;
	} cases[] = {
		{ e_ok_tp_btf, "" },
		{ e_ok_detached, "" },
		{ e_ok_tp_landlock, "" },
		{ e_ok_audit, "" },
		{ e_ok_tree, "" },
		{ e_no_ring, "the tracer's programs and maps and its values do not come together" },
		{ e_fds_no_record, "the tracer's programs and maps and its values do not come together" },
		{ e_socket_no_record, "evidence fds without the evidence record" },
		{ e_empty_record, "an evidence record without a source" },
		{ e_landlock_no_bpf, "Landlock's program without the tracer" },
		{ e_attach_detached, "attachments of a tracer not attached" },
		{ e_no_link, "the attachments are not those of the tracer's hook" },
		{ e_perf_not_tp, "the attachments are not those of the tracer's hook" },
		{ e_landlock_no_link, "the attachments are not those of the tracer's hook" },
		{ e_tp_no_id, "record 1: a tracepoint id exactly with the tracepoint hook" },
		{ e_id_not_tp, "record 1: a tracepoint id exactly with the tracepoint hook" },
		{ e_bad_off, "record 1: the drop counter is not an aligned u64 within .bss" },
		{ e_no_bss_size, "record 1: the tracer's hook, .bss size and drop counter's offset "
				 "come together" },
		{ e_attached_no_bpf, "record 1: tracer values without the tracer" },
		{ e_hold_no_socket, "a hold on audit without its socket" },
		{ e_audit_no_socket, "audit values without its socket" },
		{ e_attach_no_index, "record 6: an index is for a v1 cgroup base, a guard port or a "
				     "tracer's attachment only, and they need one" },
		{ e_attach_index3, "record 6: tracer attachment 3: there are 3" },
		{ e_lost_reaped, "record 2: denial evidence on a process reaped" },
		{ e_ambiguous_not_sandboxed, "record 2: denial evidence on a process not sandboxed" },
		{ e_kept_cut, "record 2: evidenceKept: denial 1 is cut short or of an unknown kind" },
		{ e_kept_kind, "record 2: evidenceKept: denial 0 is cut short or of an unknown kind" },
		{ e_kept_decisive, "record 2: evidenceKept: denial 0 is cut short or of an unknown "
				   "kind" },
		{ e_kept_nul, "record 2: evidenceKept: denial 2 is cut short or of an unknown kind" },
		{ e_kept_long_comm, "record 2: evidenceKept: denial 0: a string cut short, too long "
				    "or with a NUL" },
		{ e_kept_17, "record 2: evidenceKept: more than 16 denials" },
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		char err[256];
		int r = view_one(cases[i].build, err, sizeof(err));

		ASSERT_STREQ(cases[i].err, err);
		ASSERT_EQ(cases[i].err[0] ? -EBADMSG : 0, r);
	}
}

/* ---- managed-network processes: a proxy's configuration and listeners (upg-netproxy) ---- */

struct npspec {
	const char *config;     /* NULL: absent */
	int http_fd, socks_fd, udp_fd; /* 0: absent */
	bool closed;
};

/* The session (record 1), then a process (record 2) with its proxy fields. */
static void np_case(struct upgrade_writer *w, const struct npspec *p)
{
	session_rec(w);
	upgrade_writer_begin(w, UPGRADE_REC_PROC);
	upgrade_writer_ref(w, UPGRADE_PROC_SESSION, 1);
	upgrade_writer_bytes(w, UPGRADE_PROC_ID, "np", 2);
	upgrade_writer_u64(w, UPGRADE_PROC_PID, 20);
	upgrade_writer_u64(w, UPGRADE_PROC_NEXT_SEQ, 5);
	upgrade_writer_bool(w, UPGRADE_PROC_REAPED, p->closed);
	upgrade_writer_bool(w, UPGRADE_PROC_EXITED, p->closed);
	if (p->closed) {
		upgrade_writer_u64(w, UPGRADE_PROC_EXIT_CODE, 0);
		upgrade_writer_u64(w, UPGRADE_PROC_TERM_SIGNAL, 0);
		upgrade_writer_u64(w, UPGRADE_PROC_EXIT_SEQ, 3);
	}
	upgrade_writer_bool(w, UPGRADE_PROC_CLOSED, p->closed);
	if (p->config)
		upgrade_writer_str(w, UPGRADE_PROC_NP_CONFIG, p->config);
	if (p->http_fd)
		upgrade_writer_fd(w, UPGRADE_PROC_NP_HTTP_FD, p->http_fd);
	if (p->socks_fd)
		upgrade_writer_fd(w, UPGRADE_PROC_NP_SOCKS_FD, p->socks_fd);
	if (p->udp_fd)
		upgrade_writer_fd(w, UPGRADE_PROC_NP_UDP_FD, p->udp_fd);
	upgrade_writer_end(w);
}

#define NPCFG "{\"proxy\":{\"enabled\":true}}"
#define NP_CASE(name, ...)                                                   \
	static void name(struct upgrade_writer *w)                            \
	{                                                                     \
		static const struct npspec p = { __VA_ARGS__ };                \
		np_case(w, &p);                                               \
	}
NP_CASE(np_all, .config = NPCFG, .http_fd = 8, .socks_fd = 9, .udp_fd = 10)
NP_CASE(np_http_only, .config = NPCFG, .http_fd = 8)
NP_CASE(np_socks_no_udp, .config = NPCFG, .http_fd = 8, .socks_fd = 9)
NP_CASE(np_none, .closed = true)
NP_CASE(np_fd_without_config, .http_fd = 8)
NP_CASE(np_socks_without_config, .socks_fd = 9)
NP_CASE(np_no_http, .config = NPCFG, .socks_fd = 9)
NP_CASE(np_udp_without_socks, .config = NPCFG, .http_fd = 8, .udp_fd = 10)
NP_CASE(np_array, .config = "[{\"proxy\":{}}]", .http_fd = 8)
NP_CASE(np_trailing, .config = "{\"proxy\":{}} ", .http_fd = 8)
NP_CASE(np_string, .config = "\"{}\"", .http_fd = 8)
NP_CASE(np_closed, .config = NPCFG, .http_fd = 8, .closed = true)

TEST(view_netproxy)
{
	struct upgrade_writer w;
	struct upgrade_state st;
	struct upgrade_view v;
	char err[256];

	minimal_server(&w);
	np_all(&w);
	ASSERT_EQ(0, upgrade_writer_finish(&w));
	ASSERT_EQ(0, upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, sizeof(err)));
	ASSERT_EQ(0, upgrade_view_build(&st, &v, err, sizeof(err)));
	ASSERT_EQ(1, v.n_procs);
	ASSERT_EQ(strlen(NPCFG), v.procs[0].np_config_len);
	ASSERT_MEMEQ(NPCFG, v.procs[0].np_config, strlen(NPCFG));
	ASSERT_EQ(8, v.procs[0].np_http_fd);
	ASSERT_EQ(9, v.procs[0].np_socks_fd);
	ASSERT_EQ(10, v.procs[0].np_udp_fd);
	upgrade_view_done(&v);
	upgrade_state_done(&st);
	buf_done(&w.b);
	/* Without a proxy: nothing, every fd -1. */
	minimal_server(&w);
	np_none(&w);
	ASSERT_EQ(0, upgrade_writer_finish(&w));
	ASSERT_EQ(0, upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, sizeof(err)));
	ASSERT_EQ(0, upgrade_view_build(&st, &v, err, sizeof(err)));
	ASSERT_TRUE(v.procs[0].np_config == NULL && v.procs[0].np_config_len == 0);
	ASSERT_TRUE(v.procs[0].np_http_fd == -1 && v.procs[0].np_socks_fd == -1 &&
		    v.procs[0].np_udp_fd == -1);
	upgrade_view_done(&v);
	upgrade_state_done(&st);
	buf_done(&w.b);
}

TEST(view_netproxy_rules)
{
	static const struct {
		void (*build)(struct upgrade_writer *w);
		const char *err;
	} cases[] = {
		{ np_all, "" },
		{ np_http_only, "" },
		{ np_socks_no_udp, "" },
		{ np_none, "" },
		{ np_fd_without_config, "record 2: a proxy's listener without its configuration" },
		{ np_socks_without_config, "record 2: a proxy's listener without its configuration" },
		{ np_no_http, "record 2: a proxy without its HTTP listener" },
		{ np_udp_without_socks, "record 2: a proxy's UDP relay without SOCKS5" },
		{ np_array, "record 2: a proxy configuration that is not a JSON object" },
		{ np_trailing, "record 2: a proxy configuration that is not a JSON object" },
		{ np_string, "record 2: a proxy configuration that is not a JSON object" },
		{ np_closed, "record 2: a proxy on a closed process" },
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		char err[256] = "";
		int r = view_one(cases[i].build, err, sizeof(err));

		ASSERT_EQ(cases[i].err[0] ? -EBADMSG : 0, r);
		ASSERT_STREQ(cases[i].err, err);
	}
}

TEST_MAIN()
