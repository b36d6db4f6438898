/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for the live upgrade's view (src/upgrade/view.c): the parsed
 * blob into plain structs, and the rules that span fields and records (one
 * refusal per rule beside the accepted cases): the sample, sessions,
 * processes, connections, held fds and cgroups. Watches and handles are in
 * test-upgrade-view-fs.c, a process's sandbox, evidence and managed network
 * in test-upgrade-view-sandbox.c; the sample and view_one() in
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
	held(w, UPGRADE_HELD_SUPERVISOR, 5, -1);
	held(w, UPGRADE_HELD_CG_V1_BASE, 6, 0);
	held(w, UPGRADE_HELD_CG_V1_BASE, 7, 2);
	cgroups_rec(w, false, v1_pids_cpu, true, 99);
}

static void v_ok_v2(struct upgrade_writer *w)
{
	held(w, UPGRADE_HELD_CG_BASE, 5, -1);
	cgroups_rec(w, true, v2_memory, false, 0);
}

static void v_v1_without_path(struct upgrade_writer *w)
{
	held(w, UPGRADE_HELD_CG_V1_BASE, 6, 0);
	held(w, UPGRADE_HELD_CG_V1_BASE, 7, 2);
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
	held(w, UPGRADE_HELD_SUPERVISOR, 5, -1);
}

static void v_v1_fd_without_layout(struct upgrade_writer *w)
{
	static const uint64_t none[3] = { 0, 0, 0 };

	held(w, UPGRADE_HELD_CG_V1_BASE, 6, 1);
	cgroups_rec(w, false, none, false, 0);
}

static void v_v1_no_index(struct upgrade_writer *w)
{
	held(w, UPGRADE_HELD_CG_V1_BASE, 6, -1);
}

/* The listener guard's cgroup and its port sockets, by index. */
static void v_guard_ports_ok(struct upgrade_writer *w)
{
	held(w, UPGRADE_HELD_GUARD, 5, -1);
	held(w, UPGRADE_HELD_GUARD_PORT, 6, 0);
	held(w, UPGRADE_HELD_GUARD_PORT, 7, 1);
}

static void v_guard_port_no_index(struct upgrade_writer *w)
{
	held(w, UPGRADE_HELD_GUARD, 5, -1);
	held(w, UPGRADE_HELD_GUARD_PORT, 6, -1);
}

static void v_guard_port_twice(struct upgrade_writer *w)
{
	held(w, UPGRADE_HELD_GUARD, 5, -1);
	held(w, UPGRADE_HELD_GUARD_PORT, 6, 1);
	held(w, UPGRADE_HELD_GUARD_PORT, 7, 1);
}

static void v_guard_index_on_cgroup(struct upgrade_writer *w)
{
	held(w, UPGRADE_HELD_GUARD, 5, 0);
}

static void v_v1_index_range(struct upgrade_writer *w)
{
	held(w, UPGRADE_HELD_CG_V1_BASE, 6, 3);
}

static void v_two_supervisors(struct upgrade_writer *w)
{
	held(w, UPGRADE_HELD_SUPERVISOR, 5, -1);
	held(w, UPGRADE_HELD_SUPERVISOR, 6, -1);
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

TEST_MAIN()
