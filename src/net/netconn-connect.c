/* SPDX-License-Identifier: MIT */
/*
 * Resolving and connecting a netconn (netconn.h): an IP literal taken as
 * it is, a name through getaddrinfo on the worker pool, then
 * IORING_OP_CONNECT to each address in turn until one answers.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>

#include "log.h"
#include "netconn-int.h"

static void nc_connect_next(struct netconn *nc);

static void on_connect(struct uring_op *op, int res, uint32_t flags)
{
	struct netconn *nc = container_of(op, struct netconn, connect_op);

	if (netconn_quiet(nc))
		return;
	if (res < 0) {
		nc->last_err = res;
		nc->fd = safe_close(nc->fd);
		nc_connect_next(nc);
		return;
	}
	if (nc->tm.ssl) {
		nc->state = NC_HANDSHAKE;
		netconn_input(nc); /* sends the ClientHello, then reads */
		return;
	}
	netconn_connected(nc);
	netconn_input(nc);
}

/* Submits the connect of nc->fd to nc->addr. */
void netconn_start_connect(struct netconn *nc)
{
	struct io_uring_sqe *sqe;
	int one = 1;

	if (nc->nodelay)
		(void)setsockopt(nc->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	nc->state = NC_CONNECTING;
	sqe = uring_get_sqe(&nc->srv->ring, &nc->connect_op, on_connect);
	io_uring_prep_connect(sqe, nc->fd, (struct sockaddr *)&nc->addr, nc->addrlen);
}

int netconn_socket(struct netconn *nc)
{
	nc->fd = socket(nc->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
	return nc->fd < 0 ? -errno : 0;
}

/* Connects to getaddrinfo's next address; ends the connection when none is left. */
static void nc_connect_next(struct netconn *nc)
{
	while (nc->ai_next) {
		struct addrinfo *a = nc->ai_next;
		int r;

		nc->ai_next = a->ai_next;
		if (a->ai_addrlen > sizeof(nc->addr))
			continue;
		memcpy(&nc->addr, a->ai_addr, a->ai_addrlen);
		nc->addrlen = a->ai_addrlen;
		r = netconn_socket(nc);
		if (r < 0) {
			nc->last_err = r;
			continue;
		}
		netconn_start_connect(nc);
		return;
	}
	if (!nc->last_err)
		nc->last_err = -EHOSTUNREACH;
	netconn_fail(nc, nc->last_err, "connecting to %s failed: %s", nc->peer, strerror(-nc->last_err));
}

static int gai_to_errno(int gai, int sys_errno)
{
	switch (gai) {
	case EAI_NONAME:
#ifdef EAI_NODATA
	case EAI_NODATA:
#endif
#ifdef EAI_ADDRFAMILY
	case EAI_ADDRFAMILY:
#endif
		return -ENOENT;
	case EAI_AGAIN:
		return -EAGAIN;
	case EAI_MEMORY:
		return -ENOMEM;
	case EAI_SYSTEM:
		return sys_errno > 0 ? -sys_errno : -EIO;
	case EAI_FAIL:
		return -EIO;
	default:
		return -EINVAL;
	}
}

/* On a worker thread: only the job's own fields. */
void netconn_dns_run(struct work *w)
{
	struct netconn *nc = container_of(w, struct netconn, dns);
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_protocol = IPPROTO_TCP,
		.ai_flags = AI_ADDRCONFIG | AI_NUMERICSERV,
	};

	nc->gai_err = getaddrinfo(nc->host, nc->port_str, &hints, &nc->ai);
	nc->gai_errno = nc->gai_err == EAI_SYSTEM ? errno : 0;
	if (nc->gai_err)
		nc->ai = NULL;
}

void netconn_dns_done(struct work *w)
{
	struct netconn *nc = container_of(w, struct netconn, dns);

	nc->dns_busy = false;
	if (netconn_quiet(nc) || nc->srv->stopping)
		return; /* netconn_free_all() frees it with its addresses */
	if (nc->gai_err) {
		int err = gai_to_errno(nc->gai_err, nc->gai_errno);

		netconn_fail(nc, err, "resolving %s failed: %s", nc->host,
			nc->gai_err == EAI_SYSTEM ? strerror(-err) : gai_strerror(nc->gai_err));
		return;
	}
	if (nc->h.resolved) {
		int r = nc->h.resolved(nc, nc->ai);

		if (netconn_quiet(nc))
			return; /* the handler closed it */
		if (r < 0) {
			netconn_fail(nc, r, "%s resolves to addresses refused here", nc->host);
			return;
		}
	}
	nc->ai_next = nc->ai;
	nc_connect_next(nc);
}

/*
 * nc's address from host and port: an IP literal is the address (nc->is_ip),
 * a name is resolved later on the worker pool (-ENOSYS without one). Sets the
 * peer's name for messages.
 */
int netconn_set_address(struct netconn *nc, const char *host, uint16_t port)
{
	struct in6_addr a6;
	struct in_addr a4;

	snprintf(nc->port_str, sizeof(nc->port_str), "%u", (unsigned)port);
	if (inet_pton(AF_INET, host, &a4) == 1) {
		struct sockaddr_in *in = (struct sockaddr_in *)&nc->addr;

		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		in->sin_addr = a4;
		nc->addrlen = sizeof(*in);
		nc->is_ip = true;
		snprintf(nc->peer, sizeof(nc->peer), "%s:%u", host, (unsigned)port);
	} else if (inet_pton(AF_INET6, host, &a6) == 1) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&nc->addr;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		in6->sin6_addr = a6;
		nc->addrlen = sizeof(*in6);
		nc->is_ip = true;
		snprintf(nc->peer, sizeof(nc->peer), "[%s]:%u", host, (unsigned)port);
	} else {
		if (!nc->srv->workers)
			return -ENOSYS;
		snprintf(nc->peer, sizeof(nc->peer), "%s:%u", host, (unsigned)port);
	}
	return 0;
}

/* The literal's connect now, or the DNS job on a worker first. */
void netconn_resolve_or_connect(struct netconn *nc)
{
	if (nc->is_ip) {
		netconn_start_connect(nc);
		return;
	}
	nc->state = NC_RESOLVING;
	nc->dns.run = netconn_dns_run;
	nc->dns.done = netconn_dns_done;
	nc->dns_busy = true;
	worker_submit(nc->srv, &nc->dns);
}
