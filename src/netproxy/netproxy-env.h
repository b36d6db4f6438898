/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct netproxy_config;

/*
 * Puts the managed network's proxy variables into *envp (a NULL-terminated
 * malloc'd "NAME=value" vector, replaced), dropping the client's values of
 * the same names. The proxies listen on 127.0.0.1 at the given ports.
 * With credentialMasking, the credential broker is made (cfg->broker) and,
 * when maskable, masks *envp (credentials.h).
 * Returns 0 or -ENOMEM (*envp unchanged, but for masked credentials).
 */
int netproxy_env_apply(struct netproxy_config *cfg, uint16_t http_port, uint16_t socks_port,
		       bool maskable, char ***envp);

/*
 * Whether credentials can be masked for a command: only the shell form the
 * reference masks, exactly [bash, "-c", script] (any other command, a login
 * shell, extra arguments: its startup could bring the real values back, so
 * the reference runs it unmasked and so does uexec).
 */
bool netproxy_env_maskable(const char *const *argv, size_t argc);

/*
 * Credential masking's CA variables (SSL_CERT_FILE and the others the
 * reference sets) pointing at bundle, in *envp (replaced), dropping the
 * client's values of the same names. Returns 0 or -ENOMEM (*envp unchanged).
 */
int netproxy_env_ca(const char *bundle, char ***envp);
