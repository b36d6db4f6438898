/* SPDX-License-Identifier: MIT */
/*
 * What the files of shell snapshots share (shell-snapshot.c: the
 * per-session cache, parked requests and the decision for one
 * process/start; shell-snapshot-capture.c: the capture child on the ring;
 * shell-snapshot-launch.c: the launch that replays a snapshot;
 * shell-snapshot-script.c: the shell side, in shell-snapshot.h).
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "list.h"
#include "ring.h"
#include "rpc.h"
#include "shell-snapshot.h"

struct server;
struct spawn_args;

enum entry_state { E_CAPTURING, E_READY, E_FAILED };

struct snap_entry;

struct snap_capture {
	struct list_head link; /* captures: every one, so that shutdown finds those let go of */
	struct snap_entry *e; /* NULL once the entry let go of it (it frees itself when idle) */
	struct server *srv;
	enum snap_shell sh;
	char nonce[33];
	pid_t pid;
	int pidfd, out_fd;
	struct uring_op read_op, exit_op;
	struct uring_timer timer;
	uint8_t *buf;
	size_t len, cap;
	bool eof, exited, failed;
	int status; /* waitid's: exit code, or 128 + signal */
};

struct snap_waiter {
	struct rpc_pending pend;
	struct list_head link; /* entry->waiters */
	json_t *params;
	snap_resume_fn resume;
};

struct snap_entry {
	struct list_head link; /* session->snapshots, least recently used first */
	struct session *ss;
	char *key;
	enum entry_state status;
	enum snap_shell sh;
	unsigned attempts;
	uint64_t retry_at_ms;
	struct snap_capture *cap;
	struct list_head waiters;
	/* E_READY */
	char *state;  /* the script to source */
	size_t state_len;
	int memfd;    /* sealed: "close SNAP_FD" + state; -1: replay through the environment */
	char **env;   /* the captured environment, after the request's envPolicy */
};

/* shell-snapshot.c: a capture is over; the entry holds a snapshot, or a failure to retry later. */
void snap_entry_captured(struct snap_entry *e, struct snap_capture *cap);

/*
 * shell-snapshot-capture.c: starts e's capture (process_id: the request's,
 * for the audit line). Returns 0, -EBUSY (too many captures running) or
 * -errno.
 */
int snap_capture_start(struct snap_entry *e, struct conn *c, json_t *process_id,
		       const struct spawn_args *sa);
/* Moves a capture on after a change (an op over, a failure, its entry gone). */
void snap_capture_step(struct snap_capture *cap);

/*
 * shell-snapshot-launch.c: a sealed memfd holding data (a snapshot, or
 * empty: the probe a capture opens through /dev/fd). Returns it or -errno.
 */
int snap_sealed_memfd(const char *data, size_t len);
/*
 * The sealed memfd a command sources: a line closing SNAP_FD, then the
 * state. *ret_fd is -1 where there is none (the state is then replayed
 * through the environment). Returns 0 or -ENOMEM.
 */
int snap_state_memfd(enum snap_shell sh, const char *state, size_t len, int *ret_fd);
/* The launch of a command with e's ready snapshot. Returns 0 or -errno (l to be freed). */
int snap_build_launch(const struct snap_entry *e, const struct snap_start *st,
		      const struct spawn_args *sa, struct snap_launch *l);
