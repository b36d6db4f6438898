/* SPDX-License-Identifier: MIT */
/*
 * What spawn.c (the parent side: stdio, clone, the child's error) and
 * spawn-child.c (the child side, between clone and exec) share. Private to
 * exec.
 */
#pragma once

#include <sched.h>
#include <sys/types.h>

#include "macro.h"
#include "spawn.h"

#define CHILD_STACK_SIZE (256 * 1024) /* the sandbox setup keeps a few PATH_MAX buffers */

/*
 * Sanitizer builds give the child its own (copy-on-write) memory: ASan's
 * interceptors and shadow memory assume one thread per TLS block, which a
 * CLONE_VM child sharing the parent's TLS breaks. Production builds share.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SPAWN_CLONE_VM 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SPAWN_CLONE_VM 0
#endif
#endif
#ifndef SPAWN_CLONE_VM
#define SPAWN_CLONE_VM CLONE_VM
#endif

/*
 * The code between clone and exec runs on its own stack: ASan instrumentation
 * there only produces "ignoring __asan_handle_no_return" warnings.
 */
#define _child_ __attribute__((no_sanitize("address", "undefined")))

struct child_err {
	int err;
	const char *step; /* a static string: the same address in parent and child */
};

struct child_fds {
	int in, out, err; /* become 0, 1, 2 */
	int ctty;         /* PTY slave to make the controlling terminal, or -1 */
	int errpipe;
	pid_t server;     /* getpid() of the server */
	int cg_procs;     /* cgroup.procs to join before exec (no clone3), or -1 */
};

struct child_ctx {
	const struct spawn_args *a;
	struct child_fds cf;
};

/*
 * Where a child that shares the server's memory leaves its error
 * (spawn-child.c says when); the parent reads it once clone returns.
 */
extern struct child_err spawn_shared_err;

/* The child's side: what clone runs (ctx is a struct child_ctx), then exec or _exit(127). */
_child_ int spawn_child_entry(void *ctx);
_child_ _noreturn_ void spawn_child_main(const struct spawn_args *a, struct child_fds *f);
/* Checks what the child side needs up front; allocates the command's stack on first use. */
int spawn_child_prepare(const struct spawn_args *a);
