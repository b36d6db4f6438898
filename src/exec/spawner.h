/* SPDX-License-Identifier: MIT */
/*
 * The spawner thread: every clone + exec of the server runs on it, so the
 * loop never sits in the CLONE_VFORK wait (docs/ARCHITECTURE.md "The
 * spawner thread", which says why a thread and why exactly one).
 *
 * spawn_thread_submit() hands a spawn over and returns at once; done() runs later
 * on the loop thread (an eventfd read on the ring). spawn_process() called on
 * the loop thread while the spawner runs is passed to it and waited for
 * (spawn_thread_call()): the children of the server all have one parent thread.
 * That thread is the process's main thread, and the server runs on a thread of
 * its own (spawn_thread_main()), so that a live upgrade's execve, made here,
 * keeps every child's parent. Without spawn_thread_main() (tests, fuzz targets,
 * the fs helper) everything runs where it is called.
 */
#pragma once

#include <stdbool.h>

#include "list.h"
#include "ring.h"
#include "spawn.h"

struct server;

struct spawn_job {
	struct list_head link;
	const struct spawn_args *args; /* read by the thread (and the child) until done() */
	struct spawn_result *res;
	const char *step;              /* spawn_process()'s *ret_step, or NULL */
	int r;                         /* spawn_process()'s result; -ECANCELED: never started */
	void (*done)(struct spawn_job *j); /* on the loop thread */
};

/* The server thread's stack: what the main thread's was (RLIMIT_STACK's usual 8 MiB). */
#define SPAWN_SERVER_STACK (8u << 20)
/*
 * Called by main() on the main thread: runs server_main(arg) on a new thread
 * and takes spawn jobs and calls here until it returns; returns its result.
 * Without a thread (pthread_create failed) server_main runs here.
 */
int spawn_thread_main(int (*server_main)(void *arg), void *arg);
/* Hands the server's spawns to the main thread (after the ring, before any spawn). 0 or -errno. */
int spawn_thread_init(struct server *s);
/* True when spawns go to the thread (spawn_thread_init() succeeded, not stopped). */
bool spawn_thread_running(void);
/* True on the spawner thread itself. */
bool spawn_thread_is_current(void);
/* Queues j; j->done() runs later on the loop thread. Only while spawn_thread_running(). */
void spawn_thread_submit(struct spawn_job *j);
/*
 * Runs fn(arg) on the spawner thread and waits for it (the loop waits). Returns fn's result.
 * Without spawn_thread_main(), or on the spawner itself, fn runs here.
 */
int spawn_thread_call(int (*fn)(void *arg), void *arg);
/*
 * The thread never logs: spawn.c notes what it has to say (clone3 refused
 * here, said once), and the loop thread logs it (spawn_thread_log_deferred(), also
 * after each completion batch).
 */
void spawn_thread_defer_clone3_refused(int err);
void spawn_thread_log_deferred(void);
/*
 * Waits for the jobs queued to run, completes them with done() on the calling
 * thread, and from then on spawns run where they are asked for (the main
 * thread's job loop ends when the server's thread returns).
 */
void spawn_thread_done(void);
