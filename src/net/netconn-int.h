/* SPDX-License-Identifier: MIT */
/*
 * A netconn's state and the calls between netconn.c (lifetime, input,
 * output, the API), netconn-connect.c (the address, DNS and connect) and
 * netconn-tls.c (the TLS pump's side). Private to src/net.
 */
#pragma once

#include <netdb.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "list.h"
#include "macro.h"
#include "netconn.h"
#include "server.h"
#include "tls-mem.h"
#include "worker.h"

#define NC_RBUF_SIZE (64 * 1024)
#define NC_CHUNK_MIN (16 * 1024)
#define NC_MAX_IOV 64

enum nc_state {
	NC_RESOLVING,  /* DNS job on a worker */
	NC_CONNECTING, /* IORING_OP_CONNECT in flight */
	NC_HANDSHAKE,  /* TCP up, TLS handshake running */
	NC_OPEN,       /* application bytes flow */
};

/* Output: ciphertext with TLS, else application bytes. */
struct nc_chunk {
	struct list_head link;
	size_t len, off, cap;
	size_t app; /* TLS: application bytes this chunk's records carry */
	uint8_t data[];
};

struct netconn {
	struct list_head link; /* server->netconns */
	struct server *srv;
	struct netconn_handlers h;
	void *userdata;
	char *host;
	char port_str[8];
	char peer[320];
	bool tls, nodelay, is_ip, sensitive;
	uint64_t timeout_ms;

	enum nc_state state;
	bool ended;        /* nc_end ran: no handler anymore, waiting for ops */
	bool owner_closed; /* netconn_close(): closed() is not called */
	bool reading;      /* the owner's netconn_set_reading() */
	bool shutting;     /* netconn_shutdown() called (once open) */
	bool fin_sent;
	bool peer_eof;     /* recv returned 0, not yet acted on (reading paused) */
	bool fail_pending; /* an end decided outside a completion: delivered by the kick */
	int fail_err;
	char why[256];

	int fd;
	/* Addresses: the literal, or getaddrinfo's list walked by ai_next. */
	struct sockaddr_storage addr;
	socklen_t addrlen;
	struct addrinfo *ai, *ai_next;
	int last_err;

	/* DNS on the worker pool: run() reads host/port_str, writes ai and gai_*. */
	struct work dns;
	bool dns_busy;
	int gai_err, gai_errno;

	struct uring_op connect_op, read_op, write_op, kick_op;
	struct uring_timer timer; /* connect deadline, then the shutdown grace */

	uint8_t *rbuf; /* recv target */
	uint8_t *pbuf; /* TLS: plaintext out of SSL_read (rbuf may be the kernel's meanwhile) */
	size_t rlen; /* plain: bytes received but not delivered (reading paused) */

	struct list_head outq;
	size_t out_bytes;  /* bytes in outq not written */
	size_t app_queued; /* netconn_queued() */
	uint8_t *scratch;  /* TLS: what netconn_send_reserve() hands out */
	size_t scratch_cap;
	struct iovec iov[NC_MAX_IOV];
	struct msghdr msg;

	struct tls_mem tm; /* TLS when tm.ssl is set (src/tls/tls-mem.h) */
};

/* netconn.c */
/* True once nc ended (or is freed): a completion must not act on it. */
bool netconn_quiet(struct netconn *nc);
/* Ends nc with err, why formatted. */
void _printf_(3, 4) netconn_fail(struct netconn *nc, int err, const char *fmt, ...);
/* TCP (and TLS) up: the owner's connected handler. */
void netconn_connected(struct netconn *nc);
/* Runs the TLS pump / delivers received bytes, then reads on. */
void netconn_input(struct netconn *nc);
/* A NOP through the ring: work that must not run inside the caller (its completion). */
void netconn_kick(struct netconn *nc);
/* Writes what is queued (one SENDMSG in flight). */
void netconn_flush(struct netconn *nc);
/* As netconn_fail, from an API call: the end (and closed()) comes from the loop. */
void _printf_(3, 4) netconn_fail_later(struct netconn *nc, int err, const char *fmt, ...);
/* Room for n more bytes at the tail of the output queue (appending never moves a chunk). */
struct nc_chunk *netconn_tail_room(struct netconn *nc, size_t n);

/* netconn-tls.c */
/* The client SSL for nc->host on the server's client SSL_CTX. 0 or -errno. */
int netconn_tls_setup(struct netconn *nc);
/* Moves what the SSL wrote into the output queue; app: the plaintext bytes it carries. */
int netconn_tls_drain(struct netconn *nc, size_t app);
/*
 * Runs the handshake, then reads plaintext while delivery is on. Returns
 * true when everything received was consumed (the SSL wants more bytes).
 */
bool netconn_tls_process(struct netconn *nc);
/* Application bytes through SSL_write; their records join the output queue (not flushed). */
int netconn_tls_send(struct netconn *nc, const void *p, size_t n);

/* netconn-connect.c */
/* nc's address (IP literal) or the name to resolve; -ENOSYS for a name without workers. */
int netconn_set_address(struct netconn *nc, const char *host, uint16_t port);
/* Starts the connect (a literal) or the DNS job (a name). */
void netconn_resolve_or_connect(struct netconn *nc);
/* A non-blocking TCP socket for nc->addr's family in nc->fd. Returns 0 or -errno. */
int netconn_socket(struct netconn *nc);
/* Submits the connect of nc->fd to nc->addr. */
void netconn_start_connect(struct netconn *nc);
/* The DNS job (struct work): getaddrinfo on a worker, then the connects on the loop. */
void netconn_dns_run(struct work *w);
void netconn_dns_done(struct work *w);
