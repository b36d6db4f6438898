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

struct fs_handle;

/*
 * fs/open with a restricting sandbox: a helper opens the file under it and
 * sends the descriptor back (SCM_RIGHTS over its stdin, a unix socket); h,
 * already in c's handle map and not ready, becomes ready with it. Takes over
 * a reference to h and returns true when it handles the request (replying
 * now or later, ending h through fs_handle_open_end); false when the request
 * runs in the server (h untouched).
 */
bool fs_sandbox_open(struct conn *c, json_t *id, json_t *params, struct fs_handle *h);

/*
 * In the helper (--fs-helper): sends fd to the server over stdin, which is
 * the unix socket fs_sandbox_open gave it. Returns 0 or -errno.
 */
int fs_sandbox_pass_fd(int fd);

struct server;

/*
 * At start: opens uexec's own binary for the helper (spawn_self_init) and
 * warns when it lies under /tmp or $TMPDIR, which the usual workspace-write
 * policies make writable: a sandbox could leave a program there that would
 * run as the server at its next start. Without it, sandboxed fs requests are
 * refused.
 */
void fs_sandbox_init(struct server *s);
