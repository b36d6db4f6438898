/* SPDX-License-Identifier: MIT */
/*
 * The env module: environment/info, environment/status and
 * environmentConfig/read (PROTOCOL.md §6.2-§6.4).
 */
#pragma once

#include <jansson.h>

struct conn;
struct server;

/* Adds the module's methods to the dispatcher (rpc.h). Returns 0 or -errno. */
int env_methods_register(void);

/* The server user's login shell from the user database (malloc'd; "/bin/sh" if unset). */
char *env_login_shell_lookup(void);
/*
 * At start-up: builds environmentInfo (reads /etc/machine-id once) naming
 * login_shell (malloc'd, owned from now on; NULL: out of memory). Returns 0
 * or -ENOMEM. env_done() frees both.
 */
int env_init(struct server *s, char *login_shell);
void env_done(void);
/* What env_init() built (borrowed; NULL before it). */
const char *env_login_shell(void);
json_t *env_info(void);

/* environmentConfig/read (rpc-config.c). */
void env_rpc_config_read(struct conn *c, json_t *id, json_t *params);

/* dirs::home_dir(): $HOME if non-empty, else the password database (malloc'd, or NULL). */
char *env_home_dir(void);
/*
 * codex_utils_home_dir::find_codex_home(): $CODEX_HOME canonicalised (it must
 * be a directory), else $HOME/.codex. Returns 0 and *ret, -ENOMEM, or -EINVAL
 * with *ret_msg (malloc'd, the reference's text).
 */
int env_find_codex_home(char **ret, char **ret_msg);
