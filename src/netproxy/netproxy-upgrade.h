/* SPDX-License-Identifier: MIT */
/*
 * A process's managed-network proxy across the live upgrade (docs/UPGRADE.md
 * "Managed-network processes"; proxy-upgrade.c). What travels: the listening
 * sockets (HTTP, SOCKS5 and the UDP relay's, as present) and the
 * networkProxy value the process was started with, as JSON text, decoded by
 * the new binary with netproxy_config_decode() again; the session and
 * process names and the reviewer are the process's own. Connections in
 * flight through the proxy cannot move: one idle between requests (it has
 * answered one, nothing is buffered either way) closes at the execve, as a
 * server may close an idle keep-alive connection; anything else is waited
 * for, and keeps the dry run if it does not end in time.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct netproxy;
struct server;

/* The largest configuration text handed over (a launch's value is far below it). */
#define NETPROXY_UPGRADE_CONFIG_MAX (1u << 20)

/*
 * What keeps np from travelling (NULL: nothing), and whether it ends by
 * itself while the server's loop is quiesced (*transient: a connection in
 * flight through the proxy) or not (credential masking).
 */
const char *netproxy_upgrade_blocker(const struct netproxy *np, bool *transient);

/*
 * The listening sockets (-1 when absent; borrowed) and the configuration as
 * JSON text (*config: malloc'd, the caller frees; *len its length). 0, or
 * -ENOMEM, -E2BIG (over NETPROXY_UPGRADE_CONFIG_MAX), -ENODATA (no source).
 */
int netproxy_upgrade_get(const struct netproxy *np, int *http_fd, int *socks_fd, int *udp_fd,
			 char **config, size_t *len);

/* Right before the execve: the connections idle between requests are shut down. */
void netproxy_upgrade_before_exec(struct netproxy *np);

/*
 * QUIESCE: the accepts in flight cancelled (how many), none armed again
 * until netproxy_resume(); _pending: one is still to come back.
 */
unsigned netproxy_quiesce(struct netproxy *np);
bool netproxy_quiesce_pending(const struct netproxy *np);
void netproxy_resume(struct netproxy *np);

/*
 * RESTORE: the proxy made again around the sockets handed over (taken: closed
 * on failure too) from the configuration text. 0 with *ret, -EINVAL with err
 * (the text does not decode), or -ENOMEM.
 */
int netproxy_adopt(struct server *s, const char *config, size_t len, int http_fd, int socks_fd,
		   int udp_fd, struct netproxy **ret, char *err, size_t errsz);
