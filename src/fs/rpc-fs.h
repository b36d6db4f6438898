/* SPDX-License-Identifier: MIT */
/* File methods on the ring (rpc-fs.c): the connection-scoped fs/open handles. */
#pragma once

#include <jansson.h>

struct conn;

/* Adds the fs methods to the dispatcher (rpc.h). Returns 0 or -errno. */
int fs_methods_register(void);

/* The method handlers (rpc-fs*.c, fs-rmcp.c, fs-walk.c, watch.c, watch-tree.c). */
void fs_rpc_read_file(struct conn *c, json_t *id, json_t *params);
void fs_rpc_write_file(struct conn *c, json_t *id, json_t *params);
void fs_rpc_create_directory(struct conn *c, json_t *id, json_t *params);
void fs_rpc_get_metadata(struct conn *c, json_t *id, json_t *params);
void fs_rpc_canonicalize(struct conn *c, json_t *id, json_t *params);
void fs_rpc_read_directory(struct conn *c, json_t *id, json_t *params);
void fs_rpc_remove(struct conn *c, json_t *id, json_t *params);
void fs_rpc_copy(struct conn *c, json_t *id, json_t *params);
void fs_rpc_rename(struct conn *c, json_t *id, json_t *params);
void fs_rpc_open(struct conn *c, json_t *id, json_t *params);
void fs_rpc_read_block(struct conn *c, json_t *id, json_t *params);
void fs_rpc_write_block(struct conn *c, json_t *id, json_t *params);
void fs_rpc_close(struct conn *c, json_t *id, json_t *params);
void fs_rpc_walk(struct conn *c, json_t *id, json_t *params);
void fs_rpc_watch_missing(struct conn *c, json_t *id, json_t *params);
void fs_rpc_watch(struct conn *c, json_t *id, json_t *params);
void fs_rpc_unwatch(struct conn *c, json_t *id, json_t *params);

/* Drops every fs/open handle of c (the connection is being freed). */
void fs_handles_release(struct conn *c);
