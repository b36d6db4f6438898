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

/*
 * A request's `sandbox` member checked as the fs methods check it: 1 when it
 * restricts (the work must run in a helper), 0 when not (absent, null,
 * "disabled"), -1 after replying the error to c/id (bad shape or policy).
 */
int fs_sandbox_check(struct conn *c, json_t *id, json_t *sandbox);

/*
 * The helper's answer to a call: its {"result":...} or {"error":...} message
 * (borrowed), or NULL when it gave none. Runs on the loop thread.
 */
typedef void (*fs_sandbox_done_fn)(void *arg, json_t *reply);

/*
 * Runs method with params (without a sandbox member) in a helper under
 * sandbox (checked by fs_sandbox_check before), for a caller that assembles
 * the reply itself (discovery runs each sandboxed root this way). env: extra
 * "NAME=value" strings for the helper (at most 6; NULL = none), kept until
 * done(). Returns 0 when done(arg, ...) will run later, or -errno (nothing
 * started, done() never runs). c only charges the helper's output to its
 * budgets; the call outlives c's close.
 */
int fs_sandbox_call(struct conn *c, const char *method, json_t *params, json_t *sandbox,
		    char *const *env, fs_sandbox_done_fn done, void *arg);

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
