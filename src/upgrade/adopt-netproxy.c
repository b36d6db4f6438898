/* SPDX-License-Identifier: MIT */
/*
 * Managed-network processes across a live upgrade (docs/UPGRADE.md
 * "Managed-network processes"). A process's proxy (src/netproxy/) is its
 * listening sockets, its configuration and the connections in flight
 * through it. The sockets travel (the command keeps reaching the same
 * addresses: its namespace's 127.0.0.1:3128/1080, or the host ports in its
 * environment), the configuration as the networkProxy JSON text it was
 * decoded from, decoded again by the new binary's own code; the decision
 * sink and the reviewer are the process (session and process names, its
 * session's client). A connection cannot move: QUIESCE waits for those in
 * flight (netproxy_upgrade_blocker), and one idle between requests closes
 * at the execve.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "conn.h"
#include "log.h"
#include "macro.h"
#include "netproxy-upgrade.h"
#include "proc.h"
#include "proxy.h"
#include "server.h"
#include "session.h"
#include "state.h"
#include "upgrade-internal.h"
#include "view.h"

void upgrade_put_proc_netproxy(struct upgrade_writer *w, struct upgrade_collected *c,
			       const struct proc *p)
{
	int http_fd, socks_fd, udp_fd, r;
	char *config;
	size_t len;

	if (!p->netproxy)
		return;
	r = netproxy_upgrade_get(p->netproxy, &http_fd, &socks_fd, &udp_fd, &config, &len);
	if (r < 0) {
		/* Never a process without its proxy in the new binary: the blob fails instead. */
		if (!w->error)
			w->error = r;
		return;
	}
	upgrade_writer_raw(w, UPGRADE_PROC_NP_CONFIG, UPGRADE_T_STR, config, (uint32_t)len);
	free(config);
	upgrade_writer_fd(w, UPGRADE_PROC_NP_HTTP_FD, http_fd);
	if (socks_fd >= 0)
		upgrade_writer_fd(w, UPGRADE_PROC_NP_SOCKS_FD, socks_fd);
	if (udp_fd >= 0)
		upgrade_writer_fd(w, UPGRADE_PROC_NP_UDP_FD, udp_fd);
	c->fds += 1 + (socks_fd >= 0) + (udp_fd >= 0);
	c->netproxies++;
}

const char *upgrade_netproxy_blocker(const struct proc *p, bool *transient)
{
	*transient = false;
	return p->netproxy ? netproxy_upgrade_blocker(p->netproxy, transient) : NULL;
}

void upgrade_netproxy_discard(const struct upgrade_view_proc *vp)
{
	safe_close(vp->np_http_fd);
	safe_close(vp->np_socks_fd);
	safe_close(vp->np_udp_fd);
}

void upgrade_adopt_proc_netproxy(struct server *s, struct proc *p,
				 const struct upgrade_view_proc *vp)
{
	char err[256] = "";
	int r;

	if (!vp->np_config)
		return;
	r = netproxy_adopt(s, (const char *)vp->np_config, vp->np_config_len, vp->np_http_fd,
			   vp->np_socks_fd, vp->np_udp_fd, &p->netproxy, err, sizeof(err));
	if (r < 0) {
		/*
		 * The command would run without its way out (or, unenforced, with
		 * nothing at the ports it was given): ended, as a start whose proxy
		 * fails is (fail closed); its exit is reported as any other.
		 */
		p->netproxy = NULL;
		log_error_errno(r, "Upgrade: session %s: the network proxy of '%s' cannot be made "
				"again (%s); ending it", p->sess->id, p->id, r == -EINVAL ? err : "");
		if (!p->reaped)
			proc_kill_group(p, SIGKILL);
		return;
	}
	netproxy_set_decision_sink(p->netproxy, proc_network_decision, p, p->sess->id, p->id);
	netproxy_set_reviewer(p->netproxy, &proc_network_reviewer);
}

void upgrade_netproxy_before_exec(struct server *s)
{
	struct session *ss;
	struct proc *p;

	list_for_each_entry(ss, &s->sessions, link)
		list_for_each_entry(p, &ss->procs_list, link)
			if (p->netproxy)
				netproxy_upgrade_before_exec(p->netproxy);
}

unsigned upgrade_quiesce_netproxy(struct proc *p)
{
	return p->netproxy ? netproxy_quiesce(p->netproxy) : 0;
}

bool upgrade_netproxy_pending(const struct proc *p)
{
	return p->netproxy && netproxy_quiesce_pending(p->netproxy);
}

void upgrade_resume_netproxy(struct proc *p)
{
	if (p->netproxy)
		netproxy_resume(p->netproxy);
}
