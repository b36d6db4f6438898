/* SPDX-License-Identifier: MIT */
/* The state blob tests' sample records (upgrade-state-kit.h). */
#include "tests.h"
#include "upgrade-state-kit.h"
#include "view.h"

/* The sample into an initialised writer (heap or memfd). */
void sample_into(struct upgrade_writer *w)
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
	upgrade_writer_u64(w, UPGRADE_CONN_CHANGE_ID, 1);
	upgrade_writer_end(w);
	upgrade_writer_begin(w, UPGRADE_REC_WATCH);             /* 8: fs/watch, recursive */
	upgrade_writer_ref(w, UPGRADE_WATCH_CONN, 7);
	upgrade_writer_u64(w, UPGRADE_WATCH_ID, 1);
	upgrade_writer_bytes(w, UPGRADE_WATCH_PATH, "/tmp/x", 6);
	upgrade_writer_bool(w, UPGRADE_WATCH_RECURSIVE, true);
	upgrade_writer_u64(w, UPGRADE_WATCH_DEV, 2049);
	upgrade_writer_u64(w, UPGRADE_WATCH_INO, 77);
	upgrade_writer_end(w);
	upgrade_writer_begin(w, UPGRADE_REC_CGROUPS);           /* 9: the supervisor's pid */
	upgrade_writer_u64(w, UPGRADE_CGROUPS_WHERE_PIDS, UPGRADE_CG_NONE);
	upgrade_writer_u64(w, UPGRADE_CGROUPS_WHERE_MEMORY, UPGRADE_CG_NONE);
	upgrade_writer_u64(w, UPGRADE_CGROUPS_WHERE_CPU, UPGRADE_CG_NONE);
	upgrade_writer_u64(w, UPGRADE_CGROUPS_SEQ, 12);
	upgrade_writer_u64(w, UPGRADE_CGROUPS_SUPERVISOR, 4321);
	upgrade_writer_end(w);
	upgrade_writer_begin(w, UPGRADE_REC_FS_HANDLE);         /* 10: an fs/open handle */
	upgrade_writer_ref(w, UPGRADE_FS_HANDLE_CONN, 7);
	upgrade_writer_bytes(w, UPGRADE_FS_HANDLE_ID, "h1", 2);
	upgrade_writer_fd(w, UPGRADE_FS_HANDLE_FD, FD_FILE);
	upgrade_writer_bool(w, UPGRADE_FS_HANDLE_WRITABLE, false);
	upgrade_writer_end(w);
	ASSERT_EQ(0, upgrade_writer_finish(w));
}

void sample(struct upgrade_writer *w)
{
	upgrade_writer_init(w, UPGRADE_STATE_VERSION);
	sample_into(w);
}

void session_rec(struct upgrade_writer *w)
{
	upgrade_writer_begin(w, UPGRADE_REC_SESSION);
	upgrade_writer_str(w, UPGRADE_SESSION_ID, SID);
	upgrade_writer_u64(w, UPGRADE_SESSION_EXPIRY_NS, 5);
	upgrade_writer_end(w);
}

void minimal_server(struct upgrade_writer *w)
{
	upgrade_writer_init(w, UPGRADE_STATE_VERSION);
	upgrade_writer_begin(w, UPGRADE_REC_SERVER);
	upgrade_writer_str(w, UPGRADE_SERVER_VERSION, "x");
	upgrade_writer_u64(w, UPGRADE_SERVER_START_MS, 1);
	upgrade_writer_u64(w, UPGRADE_SERVER_UPGRADES, 0);
	upgrade_writer_end(w);
}

/* A blob with the server record plus what build() writes, parsed then viewed. */
int view_one(void (*build)(struct upgrade_writer *w), char *err, size_t err_size)
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

void held(struct upgrade_writer *w, uint64_t role, int fd, int index)
{
	(void)upgrade_writer_held(w, (unsigned)role, fd, index);
}
