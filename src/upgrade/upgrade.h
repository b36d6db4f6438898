/* SPDX-License-Identifier: MIT */
/*
 * Live upgrade on SIGUSR2 (docs/UPGRADE.md): the trigger, the check of the
 * new binary (`uexec --check-upgrade`), and the hooks the server calls.
 * After a successful check the server quiesces, builds and validates the
 * state; an idle server is then exec'd with it and restored, any other
 * resumes and keeps serving (the hand-over of sessions is not built yet).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct server;

/*
 * main(), before anything else: `uexec --check-upgrade VERSION` is answered
 * here (returns the exit status, >= 0); otherwise remembers argv (borrowed:
 * main's) and the path uexec was started from, and returns -1.
 */
int upgrade_main_hook(int argc, char **argv);

/* SIGUSR2 (server.c's signal handler): starts an upgrade, or logs why not. */
void upgrade_on_signal(struct server *s);

/* Shutdown (server_done, before the ring goes): a check still running is killed and reaped. */
void upgrade_done(struct server *s);

/*
 * RESTORE (restore.c), in the binary an upgrade execs. server_init() calls
 * _begin first: without UEXEC_UPGRADE_STATE_FD it returns 0 and the others
 * do nothing (0); with it, the blob is mapped, parsed, checked and its
 * metric counters taken (1), or -errno (logged; nothing adopted). Then
 * _cgroups adopts the cgroups' layout and the supervisor's pipe, _listener
 * the listening socket (1 each when they did), and _end logs upgrade.done
 * and drops the blob.
 */
int upgrade_restore_begin(struct server *s);
int upgrade_restore_cgroups(struct server *s);
int upgrade_restore_listener(struct server *s);
void upgrade_restore_end(struct server *s);
/*
 * The fds of the processes and connections RESTORE adopted (0 without an
 * upgrade): derive_limits() does not count them as the server's own.
 */
unsigned upgrade_restored_fds(void);
/*
 * After RESTORE, before the signalfd is read: a SIGUSR2 sent during the
 * hand-over (pending across the execve) is refused and logged.
 */
void upgrade_refuse_pending(void);
/* 1 when the state holds the stdio connection (RESTORE adopts it: do not make one), else 0. */
int upgrade_restore_stdio(struct server *s);

/*
 * The way back (rollback.c): in a binary a hand-over exec'd that cannot take
 * over (main() calls it wherever it would give up before serving), the old
 * binary is exec'd again through the fd it passed, with the same state, and
 * this does not return. Returns at once in any other binary, or if that
 * execveat failed (logged); the caller then exits.
 */
void upgrade_rollback(const char *why);

/*
 * The fallback (fallback.c), when the new binary cannot read our state
 * version: the server drains, then execs it fresh. server.c calls
 * _drained where a drain ends, instead of stopping: true when it was the
 * fallback's (it stops the server itself, once the listener's socket is
 * released, having ended the cgroup supervisor, and tells main() to exec).
 * main() calls _exec with serve()'s exit code once the server is shut
 * down: it returns that code when no fallback is due, else execs the new
 * binary with main()'s argv and returns only if that failed (logged), with
 * exit code 1.
 */
bool upgrade_drained(struct server *s);
int upgrade_fallback_exec(int r);

/*
 * remote.c: true in a binary a live upgrade exec'd (or rolled back to): remote
 * mode registers again, and retries its first registration rather than
 * ending the server (server.c's start_front).
 */
bool upgrade_remote_after_upgrade(void);
/*
 * remote.c: the relay identity a live upgrade handed over (*len bytes, for
 * remote_options), or NULL; valid until RESTORE ends (start_front is before).
 */
const void *upgrade_remote_identity(size_t *len);

/*
 * env-secret.c: a secret uexec took out of its environment at start (remote
 * mode's registry credential, as NAME=value), put back for an upgrade's
 * execve only, so that the exec'd binary reads it as at a start. main()
 * calls it once its arguments are read (NULL: none).
 */
void upgrade_keep_env_secret(const char *name, const char *value);
