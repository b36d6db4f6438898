/* SPDX-License-Identifier: MIT */
/* File methods on the ring (rpc-fs.c): the connection-scoped fs/open handles. */
#pragma once

struct conn;

/* Drops every fs/open handle of c (the connection is being freed). */
void fs_handles_release(struct conn *c);
