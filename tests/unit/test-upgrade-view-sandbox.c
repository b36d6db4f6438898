/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for the live upgrade's view of what a sandboxed process brings
 * (src/upgrade/view-sandbox.c, view-evidence.c, view-netproxy.c): the
 * synthesized mount points and a plan's fields, the denial evidence sources
 * and a tree's evidence, a managed network's configuration and listeners.
 * The view's other rules are in test-upgrade-view.c.
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
	held(w, UPGRADE_HELD_BPF_EXIT_PROG, 20, -1);
	held(w, UPGRADE_HELD_BPF_RING, 21, -1);
	held(w, UPGRADE_HELD_BPF_WATCHED, 22, -1);
	held(w, UPGRADE_HELD_BPF_BSS, 23, -1);
}

static void e_ok_tp_btf(struct upgrade_writer *w)
{
	ev_rec(w, UPGRADE_EV_HOOK_TP_BTF, EV_ATTACHED | EV_AUDIT);
	ev_objs(w);
	held(w, UPGRADE_HELD_BPF_ATTACH, 24, 0);
	held(w, UPGRADE_HELD_AUDIT_SOCKET, 25, -1);
	held(w, UPGRADE_HELD_AUDIT_HOLD, 26, -1);
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
	held(w, UPGRADE_HELD_BPF_LANDLOCK_PROG, 24, -1);
	held(w, UPGRADE_HELD_BPF_ATTACH, 25, 1);
	held(w, UPGRADE_HELD_BPF_ATTACH, 26, 2);
}

static void e_ok_audit(struct upgrade_writer *w)
{
	ev_rec(w, EV_NO_BPF, EV_AUDIT);
	held(w, UPGRADE_HELD_AUDIT_SOCKET, 25, -1);
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
	held(w, UPGRADE_HELD_BPF_EXIT_PROG, 20, -1);
	held(w, UPGRADE_HELD_BPF_WATCHED, 22, -1);
	held(w, UPGRADE_HELD_BPF_BSS, 23, -1);
}

static void e_fds_no_record(struct upgrade_writer *w)
{
	ev_objs(w);
}

static void e_socket_no_record(struct upgrade_writer *w)
{
	held(w, UPGRADE_HELD_AUDIT_SOCKET, 25, -1);
}

static void e_empty_record(struct upgrade_writer *w)
{
	ev_rec(w, EV_NO_BPF, 0);
}

static void e_landlock_no_bpf(struct upgrade_writer *w)
{
	e_ok_audit(w);
	held(w, UPGRADE_HELD_BPF_LANDLOCK_PROG, 24, -1);
}

static void e_attach_detached(struct upgrade_writer *w)
{
	ev_rec(w, UPGRADE_EV_HOOK_TP_BTF, 0);
	ev_objs(w);
	held(w, UPGRADE_HELD_BPF_ATTACH, 24, 0);
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
	held(w, UPGRADE_HELD_BPF_ATTACH, 24, 0);
	held(w, UPGRADE_HELD_BPF_ATTACH, 25, 2);
}

static void e_landlock_no_link(struct upgrade_writer *w)
{
	ev_rec(w, UPGRADE_EV_HOOK_TP_BTF, EV_ATTACHED);
	ev_objs(w);
	held(w, UPGRADE_HELD_BPF_LANDLOCK_PROG, 24, -1);
	held(w, UPGRADE_HELD_BPF_ATTACH, 25, 0);
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
	held(w, UPGRADE_HELD_AUDIT_SOCKET, 25, -1);
}

static void e_hold_no_socket(struct upgrade_writer *w)
{
	e_ok_detached(w);
	held(w, UPGRADE_HELD_AUDIT_HOLD, 26, -1);
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
	held(w, UPGRADE_HELD_BPF_ATTACH, 24, -1);
}

static void e_attach_index3(struct upgrade_writer *w)
{
	ev_rec(w, UPGRADE_EV_HOOK_TP_BTF, EV_ATTACHED);
	ev_objs(w);
	held(w, UPGRADE_HELD_BPF_ATTACH, 24, 3);
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
