/* SPDX-License-Identifier: MIT */
/*
 * The listener: the --listen URL parsed and bound, the guard that keeps
 * sandboxed processes off its port, and the multishot accept with its pause
 * when descriptors run out. Split out of server.c (issue 24).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn-tls.h"
#include "conn.h"
#include "listener.h"
#include "log.h"
#include "netguard.h"
#include "server.h"

static void on_accept_timer(struct uring_timer *t, bool fired);

/*
 * How long accepting pauses when there is no descriptor (or kernel memory)
 * for a waiting connection, unless a connection ends first (server_run).
 */
#define ACCEPT_PAUSE_MS 100

/* ---- listener ---- */

/* tls: wss:// is accepted (--tls-cert and --tls-key were given). */
static int parse_listen(const char *url, bool tls, struct sockaddr_storage *ss, socklen_t *len)
{
	const char *hp;
	char host[64];
	const char *colon;
	char *end;
	unsigned long port;

	if (!tls && strncmp(url, "ws://", 5) == 0)
		hp = url + 5;
	else if (tls && strncmp(url, "wss://", 6) == 0)
		hp = url + 6;
	else
		return -EPROTONOSUPPORT;
	if (*hp == '[') {
		const char *rb = strchr(hp, ']');
		if (!rb || rb[1] != ':' || (size_t)(rb - hp - 1) >= sizeof(host))
			return -EINVAL;
		memcpy(host, hp + 1, (size_t)(rb - hp - 1));
		host[rb - hp - 1] = 0;
		colon = rb + 1;
	} else {
		colon = strrchr(hp, ':');
		if (!colon || (size_t)(colon - hp) >= sizeof(host))
			return -EINVAL;
		memcpy(host, hp, (size_t)(colon - hp));
		host[colon - hp] = 0;
	}
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || *end || colon[1] == 0 || port > 65535)
		return -EINVAL;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, host, &((struct sockaddr_in *)ss)->sin_addr) == 1) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;
		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)port);
		*len = sizeof(*in);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)ss)->sin6_addr) == 1) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*in6);
		return 0;
	}
	return -EINVAL;
}

static void format_addr(const struct sockaddr_storage *ss, char *out, size_t size)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
		inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
		snprintf(out, size, "[%s]:%u", ip, ntohs(in6->sin6_port));
	} else {
		const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
		inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
		snprintf(out, size, "%s:%u", ip, ntohs(in->sin_port));
	}
}

static void on_accept(struct uring_op *op, int res, uint32_t flags)
{
	struct server *s = container_of(op, struct server, accept_op);
	struct sockaddr_storage peer;
	socklen_t plen = sizeof(peer);
	char name[80];

	if (res >= 0) {
		if (s->stopping || s->draining) {
			safe_close(res);
		} else if (s->n_conns >= s->cfg.max_connections && !conn_evict_one(s)) {
			log_warning_ratelimited("Refusing connection: %u connections open (limit %u), "
						"all initialized", s->n_conns, s->cfg.max_connections);
			safe_close(res);
		} else {
			s->metrics.connections_accepted++;
			if (getpeername(res, (struct sockaddr *)&peer, &plen) == 0)
				format_addr(&peer, name, sizeof(name));
			else
				snprintf(name, sizeof(name), "unknown");
			if (conn_new_ws(s, res, name) < 0)
				log_error_ratelimited("Out of memory accepting %s", name);
		}
	} else if (res == -EMFILE || res == -ENFILE || res == -ENOBUFS || res == -ENOMEM) {
		/*
		 * Retrying at once would fail at once, for as long as the peer
		 * waits (a busy loop). Make room by closing a connection that
		 * has not initialized yet, else pause: the peers wait in the
		 * backlog until a connection ends or ACCEPT_PAUSE_MS pass.
		 */
		if ((res == -EMFILE || res == -ENFILE) && conn_evict_one(s)) {
			log_warning_errno_ratelimited(res, "Accepting a connection failed, closed one "
							   "not initialized to make room");
		} else {
			log_warning_errno_ratelimited(res, "Accepting a connection failed, pausing "
							   "for %d ms or until a connection ends",
						      ACCEPT_PAUSE_MS);
			s->accept_paused = true;
			s->accept_paused_conns = s->n_conns;
			if (flags & IORING_CQE_F_MORE) /* errors end a multishot accept; in case not */
				uring_cancel(&s->ring, &s->accept_op);
			if (!s->accept_timer.armed)
				uring_timer_arm(&s->ring, &s->accept_timer, ACCEPT_PAUSE_MS,
						on_accept_timer);
		}
	} else if (res != -ECANCELED) {
		log_warning_errno_ratelimited(res, "accept failed, continuing");
	}
	if (!(flags & IORING_CQE_F_MORE) && !s->stopping && !s->draining && !s->accept_paused)
		server_arm_accept(s);
}

/* Ends a pause of accept (on_accept): the timer, or a connection that ended. */
void server_accept_resume(struct server *s)
{
	s->accept_paused = false;
	if (!s->stopping && !s->draining && !s->accept_op.busy)
		server_arm_accept(s);
}

static void on_accept_timer(struct uring_timer *t, bool fired)
{
	struct server *s = container_of(t, struct server, accept_timer);

	if (fired && s->accept_paused)
		server_accept_resume(s);
}

void server_arm_accept(struct server *s)
{
	struct io_uring_sqe *sqe = uring_get_sqe(&s->ring, &s->accept_op, on_accept);

	io_uring_prep_multishot_accept(sqe, s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
}

/*
 * A sandboxed process with network access could otherwise connect here and
 * start an unsandboxed one (netguard.h). Where a root server cannot make the
 * guard (no cgroup2 mount, BPF refused), such sandboxes run only if the
 * listener wants a token (--ws-auth), which no sandbox can read (the server's
 * secret files are deny entries of every sandbox); without one they are
 * refused, failing closed (the reference runs them, unguarded). A non-root
 * server can never have the guard (a cgroup of its own and BPF cgroup
 * programs need root): its sandboxes with network access are refused, since
 * the port they would reach is certainly there (docs/SECURITY.md).
 */
static void guard_listener(struct server *s, uint16_t port)
{
	char err[256];
	int r;

	if (s->sandbox.missing[0])
		return; /* no sandboxes at all */
	if (s->sandbox.userns) {
		snprintf(s->sandbox.network_refused, sizeof(s->sandbox.network_refused),
			 "network access needs the listener guard, which needs root (a cgroup of its "
			 "own and BPF cgroup programs): uexec runs as uid %u and listens on port %u, "
			 "which the sandbox could reach to start unsandboxed processes",
			 (unsigned)geteuid(), port);
		log_warning("Listener guard unavailable (it needs root: a cgroup of its own and BPF "
			    "cgroup programs; uexec runs as uid %u): sandboxed processes with network "
			    "access are refused (they could connect to port %u)",
			    (unsigned)geteuid(), port);
		return;
	}
	r = netguard_new(&port, 1, &s->guard, err, sizeof(err));
	if (r < 0 && s->cfg.ws_auth_mode) {
		log_warning("Listener guard unavailable (%s): sandboxed processes with network "
			    "access can connect to port %u, where --ws-auth turns them away (the "
			    "token is out of their reach)",
			    err, port);
		return;
	}
	if (r < 0) {
		snprintf(s->sandbox.network_refused, sizeof(s->sandbox.network_refused),
			 "network access needs the listener guard (unavailable: %.80s) or --ws-auth: "
			 "the sandbox could connect to port %u and start unsandboxed processes",
			 err, port);
		log_warning("Listener guard unavailable (%s): sandboxed processes with network "
			    "access are refused (they could connect to port %u and start unsandboxed "
			    "processes); --ws-auth on the listener lets them run",
			    err, port);
		return;
	}
	s->sandbox.guard = s->guard;
	log_info("Listener guard: sandboxed processes cannot connect to port %u (cgroup %s)", port,
		 netguard_path(s->guard));
}

/* 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104; the wildcard addresses are not loopback. */
static bool is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
	if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;

		if (IN6_IS_ADDR_LOOPBACK(a))
			return true;
		return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
	}
	return false;
}

int server_listen_on(struct server *s)
{
	struct sockaddr_storage ss, bound;
	socklen_t len, blen = sizeof(bound);
	char name[80];
	int fd, one = 1, r;

	r = parse_listen(s->cfg.listen, conn_tls_current() != NULL, &ss, &len);
	if (r == -EPROTONOSUPPORT) {
		/* The reference's text; wss:// is uexec's, with --tls-cert and --tls-key. */
		log_error("unsupported --listen URL `%s`; expected `ws://IP:PORT` or `stdio`%s",
			  s->cfg.listen, strncmp(s->cfg.listen, "wss://", 6) == 0 ?
			  " (wss://IP:PORT needs --tls-cert and --tls-key)" : "");
		return r;
	}
	if (r < 0) {
		log_error("invalid websocket --listen URL `%s`; expected `ws://IP:PORT`",
			  s->cfg.listen);
		return r;
	}
	if (!is_loopback(&ss) && !s->cfg.ws_auth_mode && !s->cfg.allow_unauthenticated) {
		log_error("refusing to start non-loopback websocket listener %s without --ws-auth: "
			  "anyone who can reach it could run commands as uid %u; configure "
			  "--ws-auth or pass --allow-unauthenticated", s->cfg.listen,
			  (unsigned)getuid());
		return -EACCES;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return log_error_errno(errno, "socket() failed");
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, SOMAXCONN) < 0) {
		r = -errno;
		safe_close(fd);
		return log_error_errno(r, "Cannot listen on %s", s->cfg.listen);
	}
	if (getsockname(fd, (struct sockaddr *)&bound, &blen) < 0) {
		r = -errno;
		safe_close(fd);
		return log_error_errno(r, "getsockname failed");
	}
	s->listen_fd = fd;
	format_addr(&bound, name, sizeof(name));
	guard_listener(s, ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
							      : ((struct sockaddr_in *)&bound)->sin_port));
	/* The one line scripts read to find the address (PROTOCOL.md §1.1). */
	printf("%s://%s\n", conn_tls_current() ? "wss" : "ws", name);
	fflush(stdout);
	{
		char url[96];
		struct log_field f[] = { LOG_STR("url", url) };

		snprintf(url, sizeof(url), "%s://%s", conn_tls_current() ? "wss" : "ws", name);
		log_event(LOG_INFO, "server.listening", NULL, f, ELEMENTSOF(f), "Listening on %s", url);
	}
	return 0;
}
