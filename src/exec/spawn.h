/* SPDX-License-Identifier: MIT */
/*
 * Process creation: clone3(CLONE_PIDFD | CLONE_VFORK) + exec, with pipes or a
 * PTY, a new session and process group, and exec errors left in the shared
 * memory (CLONE_VM) or, where the child gets a copy, reported through a
 * CLOEXEC pipe. It runs on the spawner thread (spawner.h). The child runs async-signal-safe code only. It dies with
 * the server (PR_SET_PDEATHSIG, SIGKILL; sandbox/cgroup.h for its
 * descendants).
 */
#pragma once

#include <stdbool.h>
#include <sys/resource.h>
#include <sys/types.h>

struct spawn_args {
	const char *const *candidates; /* paths to try in order (PATH search done by caller) */
	bool explicit_path;            /* argv[0] contained '/': report its exec errno as is */
	char *const *argv;             /* argv for the program (argv[0] already replaced by arg0) */
	char *const *envp;
	const char *cwd;
	bool tty;
	bool pipe_stdin;
	bool stdin_socket;             /* with pipe_stdin: a unix stream socket pair, not a pipe
	                                  (the child can send fds back over its stdin) */
	unsigned short rows, cols;     /* PTY window size */
	const struct rlimit *nofile;   /* RLIMIT_NOFILE for the child, or NULL to inherit */
	const struct sandbox_plan *sandbox; /* applied in the child before chdir/exec, or NULL */
	int stderr_fd;                 /* pipes mode: the child's stderr (dup'd), or -1 for a pipe */
	bool exec_self;                /* run uexec via spawn_self_init()'s fd, not candidates */
	const struct sandbox_cg_leaf *cgroup; /* the process's own cgroup (sandbox/cgroup.h): cloned
	                                         into its v2 leaf, v1 directories entered before
	                                         exec; NULL: the server's (or the guard's) */
	int extra_fd;                  /* > 0: inherited by the program as extra_fd_at (a shell
	                                  snapshot's reader), placed just before exec; 0: none */
	int extra_fd_at;
};

struct spawn_result {
	pid_t pid;
	int pidfd;
	int stdin_fd; /* pipe write end (pipe_stdin; the parent's socket with stdin_socket), else -1
	                 (with a PTY, write to out_fd) */
	int out_fd;   /* stdout pipe read end, or the PTY master (O_NONBLOCK) */
	int err_fd;   /* stderr pipe read end, or -1 (PTY, or stderr_fd given) */
};

struct sandbox_plan;
struct sandbox_cg_leaf;

/*
 * Starts the process. Returns 0 and fills *ret (caller owns the fds), or
 * -errno: the child's failure (chdir/exec errno, e.g. -ENOENT, -EACCES,
 * -ENOTDIR) or a setup failure in the parent (-EMFILE, -ENOMEM, ...). When
 * the child failed while applying the sandbox, *ret_step (if given) names
 * the step; otherwise it is left untouched.
 */
int spawn_process(const struct spawn_args *a, struct spawn_result *ret, const char **ret_step);

/*
 * Opens /dev/null once for the stdin of processes without pipeStdin (at
 * start, so that the server's fd count does not grow at its first spawn;
 * else at the first such spawn). Returns 0 or -errno.
 */
int spawn_open_devnull(void);

/*
 * Opens uexec-init (the PID-namespace init of sandboxed commands) next to
 * this binary, else in libexecdir; path receives the last place looked at. Returns 0 or -errno.
 */
int spawn_init(char *path, size_t size);

/*
 * Opens uexec's own binary (O_PATH, through /proc/self/exe) for spawn_args.
 * exec_self, which executes that fd: whatever is later written over the
 * path, the helper runs the file the server started from. Returns 0 or -errno.
 */
int spawn_self_init(void);
/* That fd (-1 before spawn_self_init) and the binary's canonical path at start (NULL). */
int spawn_self_fd(void);
const char *spawn_self_path(void);
