/* SPDX-License-Identifier: MIT */
/*
 * The managed network's proxy across the live upgrade (netproxy-upgrade.h,
 * docs/UPGRADE.md "Managed-network processes"): which of its connections
 * keep the old binary, its listeners and configuration for the blob, its
 * accepts quiesced and resumed, and the proxy made again in the new binary.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "macro.h"
#include "netconn.h"
#include "netproxy-config.h"
#include "netproxy-upgrade.h"
#include "proxy-internal.h"
#include "server.h"
#include "socks-udp.h"

/* Why connection c cannot close now (NULL: idle between requests, nothing buffered). */
static const char *npc_busy(const struct npc *c)
{
	int unread = 0;

	switch (c->state) {
	case NPC_HEAD:
		if (!c->client || c->up)
			return "a managed network's connection is closing";
		if (c->head.len)
			return "a managed network's request is being read";
		if (netconn_queued(c->client))
			return "a managed network's answer is being written";
		/* Bytes the client sent that the loop has not read yet: a request coming. */
		if (ioctl(c->client_fd, FIONREAD, &unread) == 0 && unread > 0)
			return "a managed network's request is being read";
		/* A connection made for a request not sent yet is not idle: it is waited for. */
		if (!c->served)
			return "a managed network's connection has not sent its request yet";
		return NULL;
	case NPC_UPSTREAM:
	case NPC_UP_CONNECT:
	case NPC_FORWARD:
		return "a managed network's request is being forwarded";
	case NPC_TUNNEL:
		return c->socks ? "a managed network's SOCKS5 stream is open"
				: "a managed network's CONNECT tunnel is open";
	case NPC_SOCKS_GREETING:
	case NPC_SOCKS_REQUEST:
		return "a managed network's SOCKS5 handshake is under way";
	case NPC_SOCKS_UDP:
		return "a managed network's SOCKS5 UDP association is open";
	case NPC_ASKING:
		return "a managed network's review awaits its answer";
	case NPC_DONE:
		break;
	}
	return "a managed network's connection is closing";
}

const char *netproxy_upgrade_blocker(const struct netproxy *np, bool *transient)
{
	const struct npc *c;

	*transient = false;
	/*
	 * Credential masking: the broker's real credentials and the interception
	 * CA the command trusts (its key) would have to travel; they do not.
	 */
	if (np->cfg->credential_masking)
		return "a process whose managed network masks credentials (its interception CA "
		       "and credentials are not handed over)";
	if (!np->cfg->source)
		return "a process whose managed network's configuration was not kept";
	*transient = true;
	list_for_each_entry(c, &np->conns, link) {
		const char *why = npc_busy(c);

		if (why)
			return why;
	}
	*transient = false;
	return NULL;
}

int netproxy_upgrade_get(const struct netproxy *np, int *http_fd, int *socks_fd, int *udp_fd,
			 char **config, size_t *len)
{
	char *text;

	if (!np->cfg->source)
		return -ENODATA;
	text = json_dumps(np->cfg->source, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!text)
		return -ENOMEM;
	*len = strlen(text);
	if (*len > NETPROXY_UPGRADE_CONFIG_MAX) {
		free(text);
		return -E2BIG;
	}
	*config = text;
	*http_fd = np->http_fd;
	*socks_fd = np->socks_fd;
	*udp_fd = netproxy_udp_fd(np->udp);
	return 0;
}

void netproxy_upgrade_before_exec(struct netproxy *np)
{
	struct npc *c;

	/*
	 * Idle between requests (netproxy_upgrade_blocker() let it through): its
	 * client sees the end now, as when a server closes an idle keep-alive
	 * connection, and opens another for its next request. Shut down rather
	 * than left to the execve's close: the ring's read armed on it holds the
	 * socket until the kernel has torn the old ring down.
	 */
	list_for_each_entry(c, &np->conns, link)
		if (c->client && !npc_busy(c))
			(void)shutdown(c->client_fd, SHUT_RDWR);
}

unsigned netproxy_quiesce(struct netproxy *np)
{
	unsigned n = 0;

	/* accepted() re-arms through arm_accept(), which only marks it while quiescing */
	if (np->accept_op.busy) {
		uring_cancel(&np->srv->ring, &np->accept_op);
		n++;
	}
	if (np->socks_accept_op.busy) {
		uring_cancel(&np->srv->ring, &np->socks_accept_op);
		n++;
	}
	return n;
}

bool netproxy_quiesce_pending(const struct netproxy *np)
{
	return np->accept_op.busy || np->socks_accept_op.busy;
}

int netproxy_adopt(struct server *s, const char *config, size_t len, int http_fd, int socks_fd,
		   int udp_fd, struct netproxy **ret, char *err, size_t errsz)
{
	struct netproxy_config *cfg = NULL;
	json_error_t jerr;
	json_t *v = json_loadb(config, len, JSON_DECODE_ANY, &jerr);
	int r;

	if (!v) {
		snprintf(err, errsz, "the configuration is not JSON: %s", jerr.text);
		r = -EINVAL;
		goto fail;
	}
	r = netproxy_config_decode(v, &cfg, err, errsz);
	json_decref(v);
	if (r >= 0 && !cfg) {
		snprintf(err, errsz, "the configuration is null");
		r = -EINVAL;
	}
	if (r < 0)
		goto fail;
	/* netproxy_new takes cfg and the fds, also when it fails */
	return netproxy_new(s, cfg, http_fd, socks_fd, udp_fd, ret, err, errsz);
fail:
	safe_close(http_fd);
	safe_close(socks_fd);
	safe_close(udp_fd);
	return r;
}
