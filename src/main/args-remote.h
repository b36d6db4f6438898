/* SPDX-License-Identifier: MIT */
/*
 * The command line's remote mode group (args-remote.c), for main.c. Both
 * return -1 to go on, else the exit status (the error printed).
 */
#pragma once

#include <stdbool.h>

struct config;

/* `forward --connect WS_URL`: argv[0] is "forward". */
int server_args_forward(int argc, char **argv, struct config *cfg);
/*
 * --remote's rules (--environment-id, --name, --use-agent-identity-auth,
 * forward; not with --listen), then the credential: taken out of the
 * environment (its bytes overwritten, every candidate variable unset) into
 * cfg->remote_credential.
 */
int server_args_check_remote(struct config *cfg, bool listen_given, bool agent_auth);
