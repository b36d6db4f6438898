/* SPDX-License-Identifier: MIT */
/*
 * The calls between the executable's own files (src/main): no library
 * includes this header, so nothing below the executable depends on them.
 */
#pragma once

struct buf;
struct config;
struct server;

/* server.c: start-up (0 or -errno, logged), the loop (the exit code), shutdown. */
int server_init(struct server *s, const struct config *cfg);
int server_run(struct server *s);
void server_done(struct server *s);

/*
 * metrics.c: appends the Prometheus text exposition (format 0.0.4) of s to
 * out (the transport's GET /metrics, through conn_handlers). Returns 0 or -ENOMEM.
 */
int server_metrics_render(struct server *s, struct buf *out);
