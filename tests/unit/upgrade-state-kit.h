/* SPDX-License-Identifier: MIT */
/*
 * The state blob tests' kit (upgrade-state-kit.c): a sample of every record
 * kind and a session record, shared by test-upgrade-state.c (the codec) and
 * the test-upgrade-view*.c files (the view's rules).
 */
#pragma once

#include "state.h"

#define SID "0a1b2c3d-0000-4000-8000-000000000001"

/* The fds a sample names (numbers only; the parser does no I/O). */
enum { FD_LISTEN = 5, FD_OUT = 7, FD_ERR = 8, FD_CONN = 9, FD_SUP = 10, FD_FILE = 11 };

/* The sample into an initialised writer (heap or memfd), finished. */
void sample_into(struct upgrade_writer *w);
/* The same into a heap writer of the current version. */
void sample(struct upgrade_writer *w);
/* A SESSION record (SID, expiry 5). */
void session_rec(struct upgrade_writer *w);
/* A heap writer of the current version with the one SERVER record every blob needs. */
void minimal_server(struct upgrade_writer *w);
/*
 * A blob with the server record plus what build() writes, parsed (the schema
 * must accept it) then viewed: 0, or the view's -EBADMSG with its text in err.
 */
int view_one(void (*build)(struct upgrade_writer *w), char *err, size_t err_size);
/* A HELD_FD record of role for fd (with its index unless index < 0). */
void held(struct upgrade_writer *w, uint64_t role, int fd, int index);
