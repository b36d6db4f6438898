/* SPDX-License-Identifier: MIT */
/*
 * SOCKS5 UDP ASSOCIATE (RFC 1928 §7) for the managed network's proxy
 * (proxy.c; docs/netproxy-semantics-notes.md §6): internal to src/netproxy.
 *
 * One relay per proxy owns its UDP socket (udp_fd: 127.0.0.1:1080 in the
 * command's namespace, a host loopback socket otherwise). An association
 * belongs to one SOCKS5 control connection and ends with it; the first
 * datagram from the control connection's address binds it to the client's
 * UDP source address. Every new destination of a datagram is decided by the
 * policy (protocol socks5_udp) once; a refused one ends the association
 * (its control connection is closed), as the reference's relay does.
 * Allowed datagrams leave from an outbound socket of the association (made
 * here, in the server's namespace, one per address family, unconnected);
 * datagrams coming back are relayed to the client only from destinations
 * it sent to. Everything runs on the ring; DNS on the worker pool.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct server;
struct np_policy;
struct npc;
struct np_udp;
struct np_udp_assoc;

#define NP_UDP_MAX_ASSOCS 32       /* associations per proxy */
#define NP_UDP_MAX_DESTS 64        /* destinations tracked per association */
#define NP_UDP_DGRAM_MAX 65536     /* receive buffers: a datagram filling one was truncated */
#define NP_UDP_IDLE_MS 120000      /* an association without traffic ends after this */

/* A client datagram's request header (RFC 1928 §7), parsed. */
struct np_udp_header {
	uint8_t frag;
	uint8_t atyp;   /* 1 IPv4, 3 name, 4 IPv6 */
	char host[260]; /* as given: dotted quad, "[v6]", or the name (not normalised) */
	uint16_t port;
	size_t len;     /* header bytes; the payload follows */
};

/*
 * Pure. 0, or -EINVAL for a malformed header (short, RSV not zero, unknown
 * ATYP, an empty name or one holding a NUL, port 0). A FRAG other than 0 is
 * returned as parsed (the relay drops fragments).
 */
int netproxy_udp_parse(const uint8_t *p, size_t n, struct np_udp_header *h);
/* The header of a datagram relayed back from sa (ATYP 1 or 4): its size, 10 or 22; 0 for another family. */
size_t netproxy_udp_reply_header(const struct sockaddr *sa, uint8_t out[22]);

/*
 * A relay serving fd (taken; closed by netproxy_udp_free, also on failure). pol
 * must live until netproxy_udp_free; limited and allow_local are the launch's mode
 * and allowLocalBinding. 0 with *ret, or -errno.
 */
int netproxy_udp_new(struct server *s, const struct np_policy *pol, bool limited, bool allow_local, int fd,
	       struct np_udp **ret);
/* The relay's socket (-1 for NULL): the live upgrade hands it over (proxy-upgrade.c). */
int netproxy_udp_fd(const struct np_udp *u);
/* Ends every association and the relay (no hook runs after it). NULL is fine. */
void netproxy_udp_free(struct np_udp *u);
/*
 * UDP ASSOCIATE from control connection c whose peer is ctrl (its IP is the
 * client's; want_port, when not 0, its UDP source port). Fills the success
 * reply (05 00 00 01 BND.ADDR BND.PORT: the relay socket). 0 with *ret, or
 * -ENOSPC (too many associations), -ENOMEM.
 */
int netproxy_udp_associate(struct np_udp *u, struct npc *c, const struct sockaddr_storage *ctrl,
		     uint16_t want_port, uint8_t reply[10], struct np_udp_assoc **ret);
/* The control connection is gone: the association ends (no hook runs after it). */
void netproxy_udp_assoc_end(struct np_udp_assoc *a);

/* proxy-answer.c: a decision on host:port (network/policyDecision + audit), protocol socks5_udp. */
void netproxy_udp_decision(struct npc *c, const char *host, uint16_t port, bool domain, bool allow,
			   const char *source, const char *reason);
/* proxy.c: end the association by closing its control connection. */
void netproxy_udp_end(struct npc *c);
