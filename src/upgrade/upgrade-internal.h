/* SPDX-License-Identifier: MIT */
/* What the files of src/upgrade share (not for other modules). */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

#define UPGRADE_UEXEC_VERSION UEXEC_VERSION

/* check.c: `uexec --check-upgrade VERSION`; the exit status. */
int upgrade_check_main(int argc, char **argv);

struct server;
struct upgrade_writer;

/* What upgrade_collect() put in a blob (for the log and the tests). */
struct upgrade_collected {
	uint64_t records, fds, bytes;
	uint64_t sessions, procs, conns;
	uint64_t conns_closed;    /* TLS, relay-carried or closing: they would close and resume */
	uint64_t retained_bytes;  /* processes' retained output */
	uint64_t queued_bytes;    /* connections' unsent output */
	uint64_t watches, fs_handles; /* handed-over connections' watches and fs/open handles */
	uint64_t watch_queued_bytes;  /* their fs/watch events not sent yet */
	uint64_t netproxies;          /* managed-network processes' proxies (adopt-netproxy.c) */
};

/*
 * collect.c: the state blob of s, written straight into a memfd sized from
 * the objects' bytes, then sealed. upgrades: how many upgrades came before;
 * quiesce_ns: CLOCK_MONOTONIC when QUIESCE began (0: none), for the pause.
 * Returns the memfd (CLOEXEC; the caller owns it) or -errno (-ENOMEM, -EINVAL,
 * -E2BIG, -EBADF from the writer, or memfd_create's/ftruncate's).
 */
int upgrade_collect(struct server *s, uint64_t upgrades, uint64_t quiesce_ns,
		    struct upgrade_collected *c);

/*
 * quiesce.c: QUIESCE. _start sets server->quiescing and cancels the listener's
 * accept, connections' reads and writes, and processes' reads, exit waits and
 * stdin writes in flight (returns how many); the loop then reaps their completions, bytes
 * already read or written and exits already reaped going through as usual.
 * _pending: what is still in flight (NULL: nothing; the audit log's queue
 * written out counts too, so that no audit line is lost at the execve). _resume: all re-armed, queued output
 * flushed.
 */
unsigned upgrade_quiesce_start(struct server *s);
const char *upgrade_quiesce_pending(const struct server *s);
/* Cancels what was armed since (a process started meanwhile): each tick while something is pending. */
void upgrade_quiesce_again(struct server *s);
void upgrade_resume(struct server *s);

struct server_metrics;
struct upgrade_view;

/* collect.c: fd's own (peer false) or peer's address as text and port ("?" and 0 when unknown). */
void upgrade_addr_of(int fd, bool peer, char *host, size_t host_size, unsigned *ret_port);
/* collect.c: the METRIC records' counters into m (names this binary does not know are dropped). */
void upgrade_metrics_from_view(struct server_metrics *m, const struct upgrade_view *v);

/* restore.c: the upgrades this process went through (0 if it was started, not upgraded to). */
uint64_t upgrade_restored_upgrades(void);

/*
 * rollback.c. _init (main's hook, a server start): takes the way back a
 * hand-over passed (UEXEC_UPGRADE_ROLLBACK) and opens this binary's own file
 * for the next upgrade; _self_fd: that fd (-1 if it could not be opened);
 * _forget: this binary took over, the way back is closed.
 */
void upgrade_rollback_init(char **argv);
int upgrade_rollback_self_fd(void);
/* A memfd (CLOEXEC) holding this binary's argv, NUL-separated, for the way back; or -errno. */
int upgrade_rollback_argv_fd(void);
void upgrade_rollback_forget(void);

/*
 * restore.c, for the rollback: the blob's fds as they came through the
 * execve (FD_CLOEXEC cleared again), the blob unmapped; the memfd stays open.
 */
void upgrade_restore_release(void);

/*
 * quiesce.c: what keeps s's sessions, processes and connections from being
 * handed over by this version (NULL: nothing), and whether the quiesced
 * loop finishes it by itself (*transient: wait for it, up to QUIESCE's
 * deadline: a managed network's connection in flight among them) or not (a
 * relay-carried, closing or reviewing connection, a managed network that
 * masks credentials, a sandbox mount point held by something other than a
 * process).
 */
const char *upgrade_sessions_blocker(const struct server *s, bool *transient);

/*
 * adopt.c: RESTORE's sessions and processes from v (detached sessions only;
 * after the ring and its buffers are set up). 0, or the first -errno with
 * err saying what (a process that cannot be adopted is killed, the others go on).
 */
int upgrade_adopt_sessions(struct server *s, const struct upgrade_view *v, char *err,
			   size_t err_size);

/*
 * adopt-fs.c: a connection's watch ids (fields of its CONN record, before
 * it ends) and its watches and fs/open handles (records after it, naming
 * conn_rec), for SERIALIZE; for RESTORE, the view's watches and handles
 * onto the adopted connections (conns[i]: the view's connection i, NULL
 * when it could not be adopted: its handles are closed), before they read.
 * *first and err as upgrade_adopt_sessions().
 */
struct conn;
void upgrade_put_conn_fs_ids(struct upgrade_writer *w, struct conn *cn);
void upgrade_put_conn_fs(struct upgrade_writer *w, struct upgrade_collected *c, struct conn *cn,
			 uint32_t conn_rec);
void upgrade_adopt_fs(const struct upgrade_view *v, struct conn **conns, int *first, char *err,
		      size_t err_size);

/*
 * The hand-over's execve (path) and the rollback's execveat (fd, AT_EMPTY_PATH),
 * made on the main thread, which is the spawner (exec-main.c): the one thread
 * an execve keeps must be the parent thread of every child. Return only on
 * failure, with -errno.
 */
int upgrade_exec_main(const char *path, char *const argv[]);
int upgrade_execveat_main(int fd, char *const argv[]);
/*
 * This thread's mask as at a server's start: the signalfd's signals (INT,
 * TERM, HUP, USR2) blocked, every other one not; the one before in *old
 * unless NULL. Before an execve, so that the new binary starts as any start.
 */
void upgrade_start_mask(sigset_t *old);

/*
 * adopt-sandbox.c (docs/UPGRADE.md "Sandboxed processes"): SERIALIZE's
 * synthesized mount points (synth records, each with its flock's fd) and a
 * process's sandbox fields (its mount points, seccomp program, decisive
 * denials); what keeps them from travelling (NULL: nothing); RESTORE's
 * registry (0 or the first -errno with err; an entry not adopted has its fd
 * closed) and a process's plan and evidence tree (0 or -ENOMEM; called
 * first, so that whatever fails next, freeing the process puts its mount
 * points' references back).
 */
struct proc;
struct upgrade_view_proc;
void upgrade_put_synth(struct upgrade_writer *w, struct upgrade_collected *c);
void upgrade_put_proc_sandbox(struct upgrade_writer *w, const struct proc *p);
const char *upgrade_sandbox_blocker(const struct server *s);
int upgrade_adopt_synth(const struct upgrade_view *v, char *err, size_t err_size);
int upgrade_adopt_proc_sandbox(struct server *s, struct proc *p,
			       const struct upgrade_view_proc *vp);
/* Right before the execve: what of the managed network's host-side state would be left behind. */
void upgrade_sandbox_before_exec(struct server *s);

/*
 * adopt-evidence.c (docs/UPGRADE.md "Denial evidence"): SERIALIZE's evidence
 * record and held fds (returns how many fds) and a process's evidence
 * fields (after its sandbox fields); QUIESCE's last step (the sources'
 * reads stopped once no exit waits for them; NULL when done); RESTORE's
 * offer of the sources to exec_evidence_init() (from upgrade_restore_begin),
 * its end (after the processes: what nothing adopted is closed), and a
 * tree's counts carried, incomplete only where a source it used has a gap.
 */
struct sandbox_ev_tree;
unsigned upgrade_put_evidence(struct upgrade_writer *w);
void upgrade_put_proc_evidence(struct upgrade_writer *w, const struct proc *p);
const char *upgrade_evidence_pending(const struct server *s);
void upgrade_restore_evidence(const struct upgrade_view *v);
void upgrade_restore_evidence_end(void);
void upgrade_evidence_carry(struct sandbox_ev_tree *t, const struct upgrade_view_proc *vp);

/*
 * adopt-netproxy.c (docs/UPGRADE.md "Managed-network processes"): SERIALIZE's
 * proxy fields of a process (configuration text, listeners; a failure to
 * get them fails the blob); what keeps its proxy from travelling (NULL:
 * nothing; *transient: a connection in flight, waited for); QUIESCE's
 * accepts cancelled, still in flight, re-armed; RESTORE's proxy made again
 * (a failure ends the process, fail closed) or its sockets closed when the
 * process is not adopted.
 */
struct upgrade_view_proc;
void upgrade_put_proc_netproxy(struct upgrade_writer *w, struct upgrade_collected *c,
			       const struct proc *p);
const char *upgrade_netproxy_blocker(const struct proc *p, bool *transient);
unsigned upgrade_quiesce_netproxy(struct proc *p);
bool upgrade_netproxy_pending(const struct proc *p);
void upgrade_resume_netproxy(struct proc *p);
void upgrade_adopt_proc_netproxy(struct server *s, struct proc *p,
				 const struct upgrade_view_proc *vp);
void upgrade_netproxy_discard(const struct upgrade_view_proc *vp);
/* Right before the execve: every proxy's connections idle between requests shut down. */
void upgrade_netproxy_before_exec(struct server *s);

/*
 * fallback.c: the new binary exe cannot read our state version: the drain
 * starts (s->drain_start), and when it is over main() execs exe fresh with
 * argv (upgrade.h). 0, or -errno (nothing started).
 */
int upgrade_fallback_start(struct server *s, const char *exe, char **argv);

/*
 * remote.c: QUIESCE closes the relay link and its streams (quiesced true),
 * RESUME dials it again; nothing without remote mode.
 */
void upgrade_remote_quiesce(struct server *s, bool quiesced);

/* remote.c: remote mode's identity into the SERVER record (nothing without remote mode). */
void upgrade_put_relay_identity(struct upgrade_writer *w, const struct server *s);
/* restore.c: the identity the state handed over (until RESTORE ends), or NULL. */
const void *upgrade_restored_relay_identity(void);

/* env-secret.c: the kept secret into the environment (on) or out of it, around an execve. */
void upgrade_env_secret_put(bool on);
