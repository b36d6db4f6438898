/* SPDX-License-Identifier: MIT */
/*
 * SOCKS5 UDP ASSOCIATE on the ring (socks-udp.h).
 *
 * Flow and bounds, per association:
 * - client -> destination: the relay's one RECVMSG (64 KiB buffer) reads a
 *   datagram, finds its association by source address, and copies the
 *   payload into the association's single transmit slot; a SENDMSG from
 *   the outbound socket sends it. While the slot is busy (sending, or a
 *   name being resolved) further datagrams of that association are dropped:
 *   UDP may lose datagrams, and nothing queues without bound.
 * - destination -> client: each outbound socket has one RECVMSG; a datagram
 *   from a destination the client sent to goes back through the relay
 *   socket with its header. The next RECVMSG is armed once that send is
 *   done, so the kernel's socket buffer is the only queue.
 * - a name the policy allows only if public is resolved on the worker pool
 *   (one job per association at a time) and refused when an answer is
 *   local or private (DNS rebinding), as the TCP path's netconn hook does;
 *   the answer is kept with the destination (at most NP_UDP_MAX_DESTS).
 *
 * Freeing: an association or the relay whose ops are in flight is marked
 * dead, its ops cancelled, and freed by the last completion.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "list.h"
#include "log.h"
#include "macro.h"
#include "policy.h"
#include "ring.h"
#include "server.h"
#include "socks-udp.h"
#include "worker.h"

struct np_udp {
	struct server *srv;
	const struct np_policy *pol;
	bool limited, allow_local;
	int fd;
	struct sockaddr_in bound; /* the relay socket's address, for the replies */
	uint8_t *buf;
	struct sockaddr_storage from;
	struct iovec iov;
	struct msghdr msg;
	struct uring_op recv_op;
	struct list_head assocs;
	unsigned n_assocs;
	bool freeing;
};

struct np_udp_dest {
	char host[256]; /* normalised */
	uint16_t port;
	bool resolved;  /* addr is set */
	struct sockaddr_storage addr;
	socklen_t addrlen;
};

/* An outbound socket of one family, and the datagram it read last. */
struct np_udp_out {
	int fd;
	uint8_t *buf;
	struct sockaddr_storage from;
	struct iovec iov;
	struct msghdr msg;
	struct uring_op recv_op;
	size_t ready;   /* a datagram of this many bytes waits for the reply slot */
	bool has_ready;
};

struct np_udp_dns;

struct np_udp_assoc {
	struct list_head link; /* u->assocs while alive */
	struct np_udp *u;
	struct uring *ring;
	struct npc *c;
	struct sockaddr_storage client; /* bound: the client's UDP address */
	bool bound;
	struct in_addr want_ip;          /* before: the control connection's IPv4 address */
	uint16_t want_port;              /* network order, 0 for any */
	bool ending;                     /* refused or idle: the control connection is closing */
	bool dead;                       /* ended: freed once its ops are back */
	struct np_udp_dest *dests[NP_UDP_MAX_DESTS];
	unsigned n_dests;
	struct np_udp_out out[2];        /* AF_INET, AF_INET6 */
	/* client -> destination: one datagram at a time */
	uint8_t *tx_buf;
	size_t tx_len;
	bool tx_waiting;                 /* for DNS */
	struct iovec tx_iov;
	struct msghdr tx_msg;
	struct uring_op tx_op;
	/* destination -> client */
	uint8_t rx_hdr[22];
	int rx_from;                     /* which out[] the datagram in flight came from */
	struct iovec rx_iov[2];
	struct msghdr rx_msg;
	struct uring_op rx_op;
	struct uring_timer idle;
	uint64_t last_ms;
	struct np_udp_dns *dns;
};

struct np_udp_dns {
	struct work w;
	struct np_udp_assoc *a; /* NULL: orphaned, freed when done */
	struct np_udp_dest *d;
	struct server *srv;
	char host[256], port[8];
	struct addrinfo *ai;
	int gai_err;
};

/* ---- the header (pure) ---- */

int netproxy_udp_parse(const uint8_t *p, size_t n, struct np_udp_header *h)
{
	size_t off;

	if (n < 4 || p[0] || p[1])
		return -EINVAL;
	h->frag = p[2];
	h->atyp = p[3];
	switch (p[3]) {
	case 1:
		if (n < 10)
			return -EINVAL;
		inet_ntop(AF_INET, p + 4, h->host, sizeof(h->host));
		off = 8;
		break;
	case 4: {
		char a[INET6_ADDRSTRLEN];

		if (n < 22)
			return -EINVAL;
		inet_ntop(AF_INET6, p + 4, a, sizeof(a));
		snprintf(h->host, sizeof(h->host), "[%s]", a);
		off = 20;
		break;
	}
	case 3:
		if (n < 5 || !p[4] || n < 5u + p[4] + 2 || memchr(p + 5, 0, p[4]))
			return -EINVAL;
		memcpy(h->host, p + 5, p[4]);
		h->host[p[4]] = 0;
		off = 5u + p[4];
		break;
	default:
		return -EINVAL;
	}
	h->port = (uint16_t)(p[off] << 8 | p[off + 1]);
	h->len = off + 2;
	return h->port ? 0 : -EINVAL;
}

size_t netproxy_udp_reply_header(const struct sockaddr *sa, uint8_t out[22])
{
	memset(out, 0, 4);
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		out[3] = 1;
		memcpy(out + 4, &in->sin_addr, 4);
		memcpy(out + 8, &in->sin_port, 2);
		return 10;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		out[3] = 4;
		memcpy(out + 4, &in6->sin6_addr, 16);
		memcpy(out + 20, &in6->sin6_port, 2);
		return 22;
	}
	return 0;
}

/* ---- helpers ---- */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Same family, address and port (IPv6 flow and scope ignored). */
static bool same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;

		return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	if (a->ss_family == AF_INET6) {
		const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;

		return x->sin6_port == y->sin6_port &&
		       !memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr));
	}
	return false;
}

static void assoc_maybe_free(struct np_udp_assoc *a);
static void udp_maybe_release(struct np_udp *u);
static void out_arm(struct np_udp_assoc *a, int i);
static void tx_send(struct np_udp_assoc *a, struct np_udp_dest *d);

/* Refused or idle: the control connection closes, which ends the association. */
static void assoc_finish(struct np_udp_assoc *a)
{
	if (a->ending || a->dead)
		return;
	a->ending = true;
	netproxy_udp_end(a->c);
}

/* ---- idle timeout ---- */

static void on_idle(struct uring_timer *t, bool fired)
{
	struct np_udp_assoc *a = container_of(t, struct np_udp_assoc, idle);
	uint64_t now;

	if (a->dead) {
		assoc_maybe_free(a);
		return;
	}
	if (!fired)
		return;
	now = now_ms();
	if (now - a->last_ms >= NP_UDP_IDLE_MS) {
		log_debug("Network proxy: UDP association idle for %d s: ending it", NP_UDP_IDLE_MS / 1000);
		assoc_finish(a);
		return;
	}
	uring_timer_arm(a->ring, &a->idle, NP_UDP_IDLE_MS - (now - a->last_ms), on_idle);
}

/* ---- destination -> client ---- */

static void rx_sent(struct uring_op *op, int res, uint32_t flags);

/* Sends out[i]'s datagram to the client with its header. */
static void rx_send(struct np_udp_assoc *a, int i)
{
	struct np_udp_out *o = &a->out[i];
	size_t hl = netproxy_udp_reply_header((struct sockaddr *)&o->from, a->rx_hdr);
	struct io_uring_sqe *sqe;

	o->has_ready = false;
	a->rx_from = i;
	a->rx_iov[0] = (struct iovec){ a->rx_hdr, hl };
	a->rx_iov[1] = (struct iovec){ o->buf, o->ready };
	a->rx_msg = (struct msghdr){ .msg_name = &a->client,
				     .msg_namelen = a->client.ss_family == AF_INET6 ?
						    sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in),
				     .msg_iov = a->rx_iov, .msg_iovlen = 2 };
	sqe = uring_get_sqe(a->ring, &a->rx_op, rx_sent);
	io_uring_prep_sendmsg(sqe, a->u->fd, &a->rx_msg, MSG_NOSIGNAL);
}

static void rx_sent(struct uring_op *op, int res, uint32_t flags)
{
	struct np_udp_assoc *a = container_of(op, struct np_udp_assoc, rx_op);

	if (a->dead) {
		assoc_maybe_free(a);
		return;
	}
	if (res < 0)
		log_debug_errno(res, "Network proxy: UDP reply to the client not sent: %m");
	else
		a->u->srv->metrics.proxy_bytes_down += a->rx_iov[1].iov_len;
	out_arm(a, a->rx_from);
	for (int i = 0; i < 2; i++)
		if (a->out[i].has_ready) {
			rx_send(a, i);
			return;
		}
}

/* Replies only from a destination the client sent to. */
static bool from_a_destination(const struct np_udp_assoc *a, const struct sockaddr_storage *from)
{
	for (unsigned i = 0; i < a->n_dests; i++)
		if (a->dests[i]->resolved && same_addr(&a->dests[i]->addr, from))
			return true;
	return false;
}

static void out_received(struct np_udp_assoc *a, int i, int res)
{
	struct np_udp_out *o = &a->out[i];

	if (res < 0 && res != -EAGAIN && res != -EINTR && res != -ENOMEM && res != -ECONNREFUSED) {
		log_warning_errno_ratelimited(res, "Network proxy: UDP outbound receive failed: %m");
		return; /* this family stays silent for the association */
	}
	if (res < 0 || res >= NP_UDP_DGRAM_MAX || a->ending || !from_a_destination(a, &o->from)) {
		out_arm(a, i); /* an error, a truncated datagram, or not from a destination: dropped */
		return;
	}
	a->last_ms = now_ms();
	o->ready = (size_t)res;
	o->has_ready = true;
	if (uring_op_idle(&a->rx_op))
		rx_send(a, i);
}

static void on_out4(struct uring_op *op, int res, uint32_t flags)
{
	struct np_udp_assoc *a = container_of(op, struct np_udp_assoc, out[0].recv_op);

	if (a->dead)
		assoc_maybe_free(a);
	else
		out_received(a, 0, res);
}

static void on_out6(struct uring_op *op, int res, uint32_t flags)
{
	struct np_udp_assoc *a = container_of(op, struct np_udp_assoc, out[1].recv_op);

	if (a->dead)
		assoc_maybe_free(a);
	else
		out_received(a, 1, res);
}

static void out_arm(struct np_udp_assoc *a, int i)
{
	struct np_udp_out *o = &a->out[i];
	struct io_uring_sqe *sqe;

	o->iov = (struct iovec){ o->buf, NP_UDP_DGRAM_MAX };
	o->msg = (struct msghdr){ .msg_name = &o->from, .msg_namelen = sizeof(o->from),
				  .msg_iov = &o->iov, .msg_iovlen = 1 };
	sqe = uring_get_sqe(a->ring, &o->recv_op, i ? on_out6 : on_out4);
	io_uring_prep_recvmsg(sqe, o->fd, &o->msg, 0);
}

/* The outbound socket for family (made on first use, in the server's namespace). */
static struct np_udp_out *out_get(struct np_udp_assoc *a, int family)
{
	int i = family == AF_INET6;
	struct np_udp_out *o = &a->out[i];

	if (o->fd >= 0)
		return o;
	if (!o->buf && !(o->buf = malloc(NP_UDP_DGRAM_MAX)))
		return NULL;
	o->fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (o->fd < 0) {
		log_warning_errno_ratelimited(-errno, "Network proxy: no outbound UDP socket: %m");
		return NULL;
	}
	out_arm(a, i);
	return o;
}

/* ---- client -> destination ---- */

static void tx_sent(struct uring_op *op, int res, uint32_t flags)
{
	struct np_udp_assoc *a = container_of(op, struct np_udp_assoc, tx_op);

	if (a->dead) {
		assoc_maybe_free(a);
		return;
	}
	if (res < 0)
		log_debug_errno(res, "Network proxy: UDP datagram not sent: %m");
	else
		a->u->srv->metrics.proxy_bytes_up += a->tx_len;
}

static void tx_send(struct np_udp_assoc *a, struct np_udp_dest *d)
{
	struct np_udp_out *o = out_get(a, d->addr.ss_family);
	struct io_uring_sqe *sqe;

	if (!o)
		return; /* dropped */
	a->tx_iov = (struct iovec){ a->tx_buf, a->tx_len };
	a->tx_msg = (struct msghdr){ .msg_name = &d->addr, .msg_namelen = d->addrlen,
				     .msg_iov = &a->tx_iov, .msg_iovlen = 1 };
	sqe = uring_get_sqe(a->ring, &a->tx_op, tx_sent);
	io_uring_prep_sendmsg(sqe, o->fd, &a->tx_msg, MSG_NOSIGNAL);
}

static void dest_drop(struct np_udp_assoc *a, struct np_udp_dest *d)
{
	for (unsigned i = 0; i < a->n_dests; i++)
		if (a->dests[i] == d) {
			a->dests[i] = a->dests[--a->n_dests];
			break;
		}
	free(d);
}

/* Refuses d when an answer is local or private (unless allowLocalBinding); else keeps the first. */
static int dest_resolved(struct np_udp_assoc *a, struct np_udp_dest *d, const struct addrinfo *list,
			 bool decided)
{
	if (!a->u->allow_local)
		for (const struct addrinfo *ai = list; ai; ai = ai->ai_next)
			if (!netproxy_addr_public(ai->ai_addr)) {
				if (!decided)
					netproxy_udp_decision(a->c, d->host, d->port, true, false,
							      "baseline_policy", "not_allowed_local");
				return -EACCES;
			}
	for (const struct addrinfo *ai = list; ai; ai = ai->ai_next)
		if ((ai->ai_family == AF_INET || ai->ai_family == AF_INET6) &&
		    ai->ai_addrlen <= sizeof(d->addr)) {
			if (!decided)
				netproxy_udp_decision(a->c, d->host, d->port, true, true,
						      "baseline_policy", "allow");
			memcpy(&d->addr, ai->ai_addr, ai->ai_addrlen);
			d->addrlen = ai->ai_addrlen;
			d->resolved = true;
			return 0;
		}
	return -ENOENT;
}

/* On a worker thread: only the job's own fields. */
static void dns_run(struct work *w)
{
	struct np_udp_dns *j = container_of(w, struct np_udp_dns, w);
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM,
				  .ai_protocol = IPPROTO_UDP, .ai_flags = AI_ADDRCONFIG | AI_NUMERICSERV };

	j->gai_err = getaddrinfo(j->host, j->port, &hints, &j->ai);
	if (j->gai_err)
		j->ai = NULL;
}

static void dns_done(struct work *w)
{
	struct np_udp_dns *j = container_of(w, struct np_udp_dns, w);
	struct np_udp_assoc *a = j->a;
	int r;

	if (a && !j->srv->stopping) {
		a->dns = NULL;
		a->tx_waiting = false;
		/* NP_ALLOW (allowLocalBinding) was reported when asked; NP_ALLOW_IF_PUBLIC here */
		r = j->gai_err ? -ENOENT : dest_resolved(a, j->d, j->ai, a->u->allow_local);
		if (r == -EACCES) {
			log_info_ratelimited("Network proxy: refused UDP to %s:%u (resolves to a local address)",
					     j->d->host, (unsigned)j->d->port);
			assoc_finish(a);
		} else if (r < 0) {
			log_debug("Network proxy: UDP destination %s not resolved: dropped", j->d->host);
			dest_drop(a, j->d); /* nothing was decided: the next datagram asks again */
		} else if (!a->ending) {
			tx_send(a, j->d);
		}
	} else if (a) {
		a->dns = NULL;
	}
	if (j->ai)
		freeaddrinfo(j->ai);
	free(j);
}

static int dns_start(struct np_udp_assoc *a, struct np_udp_dest *d)
{
	struct np_udp_dns *j;

	if (!a->u->srv->workers || !(j = calloc(1, sizeof(*j))))
		return -ENOMEM;
	j->a = a;
	j->d = d;
	j->srv = a->u->srv;
	memcpy(j->host, d->host, sizeof(j->host));
	snprintf(j->port, sizeof(j->port), "%u", (unsigned)d->port);
	j->w.run = dns_run;
	j->w.done = dns_done;
	a->dns = j;
	a->tx_waiting = true;
	worker_submit(a->u->srv, &j->w);
	return 0;
}

static struct np_udp_dest *dest_find(struct np_udp_assoc *a, const char *host, uint16_t port)
{
	for (unsigned i = 0; i < a->n_dests; i++)
		if (a->dests[i]->port == port && !strcmp(a->dests[i]->host, host))
			return a->dests[i];
	return NULL;
}

/* An IP literal's address, or false for a name. */
static bool literal_addr(struct np_udp_dest *d)
{
	struct sockaddr_in *in = (struct sockaddr_in *)&d->addr;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&d->addr;

	if (inet_pton(AF_INET, d->host, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons(d->port);
		d->addrlen = sizeof(*in);
	} else if (inet_pton(AF_INET6, d->host, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(d->port);
		d->addrlen = sizeof(*in6);
	} else {
		return false;
	}
	d->resolved = true;
	return true;
}

/*
 * A new destination: decided once (limited mode and policy refusals end the
 * association, as the TCP path answers them). Returns it, or NULL when the
 * datagram is dropped or refused.
 */
static struct np_udp_dest *dest_new(struct np_udp_assoc *a, const char *host, uint16_t port)
{
	struct np_udp_dest *d;
	enum np_verdict v;

	if (a->u->limited) {
		netproxy_udp_decision(a->c, host, port, false, false, "mode_guard", "method_not_allowed");
		log_info_ratelimited("Network proxy: refused UDP to %s:%u (limited mode)", host, (unsigned)port);
		assoc_finish(a);
		return NULL;
	}
	v = netproxy_policy_decide(a->u->pol, host);
	if (v == NP_DENIED || v == NP_NOT_ALLOWED || v == NP_NOT_ALLOWED_LOCAL) {
		netproxy_udp_decision(a->c, host, port, true, false, "baseline_policy",
				      netproxy_verdict_reason(v));
		log_info_ratelimited("Network proxy: refused UDP to %s:%u (%s)", host, (unsigned)port,
				     netproxy_verdict_reason(v));
		assoc_finish(a);
		return NULL;
	}
	if (a->n_dests >= NP_UDP_MAX_DESTS) {
		log_info_ratelimited("Network proxy: UDP association at %d destinations: datagram dropped",
				     NP_UDP_MAX_DESTS);
		return NULL;
	}
	if (!(d = calloc(1, sizeof(*d))))
		return NULL;
	snprintf(d->host, sizeof(d->host), "%s", host);
	d->port = port;
	a->dests[a->n_dests++] = d;
	if (v == NP_ALLOW)
		netproxy_udp_decision(a->c, host, port, true, true, "baseline_policy", "allow");
	if (!literal_addr(d) && dns_start(a, d) < 0) {
		dest_drop(a, d);
		return NULL;
	}
	return d;
}

/* One datagram from the association's client. */
static void assoc_input(struct np_udp_assoc *a, const uint8_t *p, size_t n)
{
	struct np_udp_header h;
	struct np_udp_dest *d;
	char host[256];

	if (a->ending || netproxy_udp_parse(p, n, &h) < 0 || h.frag)
		return; /* malformed, or a fragment (not supported): dropped */
	a->last_ms = now_ms();
	if (!uring_op_idle(&a->tx_op) || a->tx_waiting)
		return; /* the slot is busy: dropped */
	if (!netproxy_normalize_host(h.host, strlen(h.host), host, sizeof(host)))
		return;
	d = dest_find(a, host, h.port);
	if (!d && !(d = dest_new(a, host, h.port)))
		return;
	if (!a->tx_buf && !(a->tx_buf = malloc(NP_UDP_DGRAM_MAX)))
		return;
	a->tx_len = n - h.len;
	memcpy(a->tx_buf, p + h.len, a->tx_len);
	if (d->resolved)
		tx_send(a, d);
	/* else sent once resolved (dns_done) */
}

/* ---- the relay socket ---- */

static struct np_udp_assoc *assoc_of(struct np_udp *u, const struct sockaddr_storage *from)
{
	const struct sockaddr_in *in = (const struct sockaddr_in *)from;
	struct np_udp_assoc *a;

	list_for_each_entry(a, &u->assocs, link)
		if (a->bound && same_addr(&a->client, from))
			return a;
	if (from->ss_family != AF_INET)
		return NULL;
	/* the first datagram from the control connection's address binds a pending association */
	list_for_each_entry(a, &u->assocs, link)
		if (!a->bound && a->want_ip.s_addr == in->sin_addr.s_addr &&
		    (!a->want_port || a->want_port == in->sin_port)) {
			a->client = *from;
			a->bound = true;
			return a;
		}
	return NULL;
}

static void udp_arm(struct np_udp *u);

static void on_relay(struct uring_op *op, int res, uint32_t flags)
{
	struct np_udp *u = container_of(op, struct np_udp, recv_op);
	struct np_udp_assoc *a;

	if (u->freeing) {
		udp_maybe_release(u);
		return;
	}
	if (res < 0 && res != -EAGAIN && res != -EINTR && res != -ENOMEM && res != -ECONNREFUSED) {
		log_warning_errno_ratelimited(res, "Network proxy: UDP relay receive failed: %m");
		return; /* the relay stops; associations end with their control connections */
	}
	if (res > 0 && res < NP_UDP_DGRAM_MAX && (a = assoc_of(u, &u->from)))
		assoc_input(a, u->buf, (size_t)res);
	udp_arm(u);
}

static void udp_arm(struct np_udp *u)
{
	struct io_uring_sqe *sqe;

	memset(&u->from, 0, sizeof(u->from));
	u->iov = (struct iovec){ u->buf, NP_UDP_DGRAM_MAX };
	u->msg = (struct msghdr){ .msg_name = &u->from, .msg_namelen = sizeof(u->from),
				  .msg_iov = &u->iov, .msg_iovlen = 1 };
	sqe = uring_get_sqe(&u->srv->ring, &u->recv_op, on_relay);
	io_uring_prep_recvmsg(sqe, u->fd, &u->msg, 0);
}

int netproxy_udp_new(struct server *s, const struct np_policy *pol, bool limited, bool allow_local, int fd,
	       struct np_udp **ret)
{
	struct np_udp *u = calloc(1, sizeof(*u));
	socklen_t len = sizeof(struct sockaddr_in);

	if (!u) {
		safe_close(fd);
		return -ENOMEM;
	}
	if (getsockname(fd, (struct sockaddr *)&u->bound, &len) < 0 || u->bound.sin_family != AF_INET) {
		int r = u->bound.sin_family != AF_INET ? -EAFNOSUPPORT : -errno;

		safe_close(fd);
		free(u);
		return r;
	}
	u->srv = s;
	u->pol = pol;
	u->limited = limited;
	u->allow_local = allow_local;
	u->fd = fd;
	list_init(&u->assocs);
	*ret = u;
	return 0;
}

int netproxy_udp_associate(struct np_udp *u, struct npc *c, const struct sockaddr_storage *ctrl,
		     uint16_t want_port, uint8_t reply[10], struct np_udp_assoc **ret)
{
	struct np_udp_assoc *a;

	if (u->n_assocs >= NP_UDP_MAX_ASSOCS || ctrl->ss_family != AF_INET)
		return -ENOSPC;
	if (!u->buf && !(u->buf = malloc(NP_UDP_DGRAM_MAX)))
		return -ENOMEM;
	if (!(a = calloc(1, sizeof(*a))))
		return -ENOMEM;
	a->u = u;
	a->ring = &u->srv->ring;
	a->c = c;
	a->want_ip = ((const struct sockaddr_in *)ctrl)->sin_addr;
	a->want_port = htons(want_port);
	a->out[0].fd = a->out[1].fd = -1;
	a->last_ms = now_ms();
	list_add_tail(&a->link, &u->assocs);
	u->n_assocs++;
	uring_timer_arm(a->ring, &a->idle, NP_UDP_IDLE_MS, on_idle);
	if (uring_op_idle(&u->recv_op))
		udp_arm(u);
	reply[0] = 5;
	reply[1] = reply[2] = 0;
	reply[3] = 1;
	memcpy(reply + 4, &u->bound.sin_addr, 4);
	memcpy(reply + 8, &u->bound.sin_port, 2);
	*ret = a;
	return 0;
}

/* ---- ending ---- */

static bool assoc_idle(const struct np_udp_assoc *a)
{
	return uring_op_idle(&a->tx_op) && uring_op_idle(&a->rx_op) && uring_op_idle(&a->idle.op) &&
	       uring_op_idle(&a->out[0].recv_op) && uring_op_idle(&a->out[1].recv_op);
}

static void assoc_maybe_free(struct np_udp_assoc *a)
{
	if (!assoc_idle(a))
		return;
	for (unsigned i = 0; i < a->n_dests; i++)
		free(a->dests[i]);
	free(a->out[0].buf);
	free(a->out[1].buf);
	free(a->tx_buf);
	free(a);
}

static void cancel_op(struct uring *ring, struct uring_op *op)
{
	if (!uring_op_idle(op))
		uring_cancel(ring, op);
}

void netproxy_udp_assoc_end(struct np_udp_assoc *a)
{
	if (!a || a->dead)
		return;
	list_del(&a->link);
	a->u->n_assocs--;
	a->dead = true;
	a->c = NULL;
	a->u = NULL;
	if (a->dns)
		a->dns->a = NULL; /* the job frees itself */
	a->dns = NULL;
	uring_timer_cancel(&a->idle);
	cancel_op(a->ring, &a->tx_op);
	cancel_op(a->ring, &a->rx_op);
	for (int i = 0; i < 2; i++) {
		cancel_op(a->ring, &a->out[i].recv_op);
		a->out[i].fd = safe_close(a->out[i].fd); /* an op in flight holds its own reference */
	}
	assoc_maybe_free(a);
}

int netproxy_udp_fd(const struct np_udp *u)
{
	return u ? u->fd : -1;
}

void netproxy_udp_free(struct np_udp *u)
{
	struct np_udp_assoc *a, *tmp;

	if (!u)
		return;
	list_for_each_entry_safe(a, tmp, &u->assocs, link)
		netproxy_udp_assoc_end(a);
	u->freeing = true;
	u->fd = safe_close(u->fd);
	cancel_op(&u->srv->ring, &u->recv_op);
	udp_maybe_release(u);
}

static void udp_maybe_release(struct np_udp *u)
{
	if (!uring_op_idle(&u->recv_op))
		return;
	free(u->buf);
	free(u);
}
