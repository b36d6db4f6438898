/* SPDX-License-Identifier: MIT */
/*
 * Sandboxed filesystem requests (issue: sandbox): a request whose `sandbox`
 * asks for restrictions runs in a short-lived helper, `uexec --fs-helper`,
 * started under that sandbox; the helper is uexec's stdio transport, so it
 * runs the very same fs code. The loop talks to it through the ring.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>

struct conn;

/*
 * If params carries a sandbox that restricts anything, handles the request
 * (replying later or at once with an error) and returns true. Returns false
 * when the request should run directly (no sandbox, null, or "disabled").
 */
bool fs_sandbox_forward(struct conn *c, json_t *id, const char *method, json_t *params);

struct server;

/*
 * At start: opens uexec's own binary for the helper (spawn_self_init) and
 * warns when it lies under /tmp or $TMPDIR, which the usual workspace-write
 * policies make writable: a sandbox could leave a program there that would
 * run as the server at its next start. Without it, sandboxed fs requests are
 * refused.
 */
void fs_sandbox_init(struct server *s);
