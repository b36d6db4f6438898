/* SPDX-License-Identifier: MIT */
/*
 * A process's managed-network proxy in the state blob, read into the view
 * (view.h; docs/UPGRADE.md "Managed-network processes"): its configuration
 * text and its listening sockets, with the rules that tie them together and
 * to the process's life. No I/O (the text is decoded by RESTORE).
 */
#include <errno.h>
#include <stdio.h>

#include "macro.h"
#include "view.h"

#define bad upgrade_view_fail

static int fd_or_none(const struct upgrade_state *st, uint32_t rec, uint16_t tag)
{
	return (int)upgrade_rec_num(st, rec, tag);
}

int upgrade_view_proc_netproxy(const struct upgrade_state *st, uint32_t rec,
			       struct upgrade_view_proc *p, char *err, size_t err_size)
{
	const struct upgrade_field *f = upgrade_rec_field(st, rec, UPGRADE_PROC_NP_CONFIG);

	p->np_config = f ? f->val : NULL;
	p->np_config_len = f ? f->len : 0;
	p->np_http_fd = fd_or_none(st, rec, UPGRADE_PROC_NP_HTTP_FD);
	p->np_socks_fd = fd_or_none(st, rec, UPGRADE_PROC_NP_SOCKS_FD);
	p->np_udp_fd = fd_or_none(st, rec, UPGRADE_PROC_NP_UDP_FD);
	if (!f) {
		if (p->np_http_fd >= 0 || p->np_socks_fd >= 0 || p->np_udp_fd >= 0)
			return bad(err, err_size, "record %u: a proxy's listener without its "
				   "configuration", rec);
		return 0;
	}
	/* What netproxy_config_decode() was given: an object (the sequence form became one). */
	if (f->val[0] != '{' || f->val[f->len - 1] != '}')
		return bad(err, err_size, "record %u: a proxy configuration that is not a JSON "
			   "object", rec);
	/* Every proxy listens for HTTP; the UDP relay exists only beside SOCKS5. */
	if (p->np_http_fd < 0)
		return bad(err, err_size, "record %u: a proxy without its HTTP listener", rec);
	if (p->np_udp_fd >= 0 && p->np_socks_fd < 0)
		return bad(err, err_size, "record %u: a proxy's UDP relay without SOCKS5", rec);
	/* The proxy lives until its process is closed (proc.c). */
	if (p->closed)
		return bad(err, err_size, "record %u: a proxy on a closed process", rec);
	return 0;
}
