/* SPDX-License-Identifier: MIT */
/*
 * Child environment construction (PROTOCOL.md §8.1) and program lookup (§8.3).
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>

/*
 * Builds the child's environment from env (object, required), env_policy
 * (object or NULL), metadata (object or NULL) and, for PTYs, the login shell.
 * Returns 0 and a NULL-terminated malloc'd "NAME=value" vector (free with
 * strv_free), -EILSEQ if a value contains a NUL byte, or -ENOMEM.
 */
int environ_build(json_t *env, json_t *env_policy, json_t *metadata, bool tty,
		  const char *login_shell, char ***ret_envp);

/*
 * Resolves argv0 to the paths exec should try: itself if it contains '/',
 * else each PATH directory (the child's PATH from envp, or the server's).
 * Returns 0 and a NULL-terminated vector (free with strv_free), or -ENOMEM.
 */
int environ_exec_candidates(const char *argv0, char *const *envp, char ***ret);

void environ_strv_free(char **v);

/*
 * Shell snapshots: environ_filter_policy() keeps what env_policy (or NULL)
 * lets through of src, all of it inherited; environ_overlay() is base with
 * over's variables set on top, except the names keep (a JSON object) has.
 * Return 0 and a new strv, or -ENOMEM.
 */
int environ_filter_policy(char *const *src, json_t *env_policy, char ***ret);
int environ_overlay(char *const *base, char *const *over, json_t *keep, char ***ret);

/*
 * PTY spawns follow the reference's PTY library (portable-pty's
 * CommandBuilder, as 0.169.0 behaves), not std::process::Command:
 *
 * environ_pty_dir() is the directory the child starts in: cwd when it is a
 * directory, else HOME of envp, else the server user's home from the user
 * database, else "/". Written to buf (size bytes); returns buf, or NULL
 * when it does not fit.
 *
 * environ_pty_resolve() finds argv0 from dir: an absolute name as is; "./x"
 * or "../x" under dir only; any other name in each PATH entry of envp joined
 * to dir (no PATH: not found). Returns 0 with *ret (malloc'd), -ENOMEM, or
 * -ENOENT with *ret_msg (malloc'd, the library's "Unable to spawn ..." text).
 * Uses stat(2) and access(2) like the library.
 */
const char *environ_pty_dir(const char *cwd, char *const *envp, char *buf, size_t size);
int environ_pty_resolve(const char *argv0, char *const *envp, const char *dir, char **ret,
			char **ret_msg);
