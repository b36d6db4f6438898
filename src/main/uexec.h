/* SPDX-License-Identifier: MIT */
/*
 * The calls between the executable's own files (src/main): no library
 * includes this header, so nothing below the executable depends on them.
 */
#pragma once

#include <stdbool.h>

struct buf;
struct config;
struct server;

/* server.c: start-up (0 or -errno, logged), the loop (the exit code), shutdown. */
int server_init(struct server *s, const struct config *cfg);
int server_run(struct server *s);
void server_done(struct server *s);

/*
 * reload.c: --audit-log's file (path "-": stdout, NULL: none) opened and the
 * audit queue pointed at it, 0 or -errno (logged; the previous file kept);
 * whether "-" would write into --listen stdio's protocol stream; SIGHUP's
 * configuration reload.
 */
int server_audit_log_open(struct server *s, const char *path);
bool server_audit_stdout_clash(const char *audit_log, const char *listen);
void server_reload(struct server *s);

/*
 * metrics.c: appends the Prometheus text exposition (format 0.0.4) of s to
 * out (the transport's GET /metrics, through conn_handlers). Returns 0 or -ENOMEM.
 */
int server_metrics_render(struct server *s, struct buf *out);
