/* SPDX-License-Identifier: MIT */
/*
 * Live upgrade on SIGUSR2 (docs/UPGRADE.md): the trigger, the check of the
 * new binary (`uexec --check-upgrade`), and the hooks the server calls. The
 * hand-over itself is not built yet: after a successful check the server
 * quiesces, builds and validates the state, resumes, logs that and keeps
 * serving.
 */
#pragma once

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
