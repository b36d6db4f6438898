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
