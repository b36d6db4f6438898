/* SPDX-License-Identifier: MIT */
/*
 * Outbound connections on the ring, the shared transport of every connection
 * uexec opens: remote mode's registry POSTs and WebSockets (src/remote/link),
 * http/request (src/http) and the network proxy's upstreams, interception and
 * accepted clients (src/netproxy). Each hands it bytes of its own protocol.
 *
 * - DNS: getaddrinfo() on the worker pool (src/server/worker.h). It blocks and
 *   no packaged non-blocking resolver is in the design's list, so it runs on a
 *   worker, never on the loop; IP literals skip it. Every address returned is
 *   tried in order.
 * - TCP: a non-blocking socket, IORING_OP_CONNECT, then RECV into the
 *   netconn's own 64 KiB buffer (few such connections exist: the server's
 *   provided-buffer group is left to clients) and SENDMSG of the output
 *   queue, one in flight, partial writes resumed.
 * - TLS: OpenSSL driven through two memory BIOs; SSL never touches the fd.
 *   One client SSL_CTX per server (lazy): TLS >= 1.2, peer verified against
 *   OpenSSL's default trust store (SSL_CERT_FILE / SSL_CERT_DIR honoured),
 *   host name or IP literal checked, SNI for names only.
 *
 * Handlers run from ring completions on the loop thread, never inside the
 * call that caused them. A netconn is freed by this module once closed() has
 * returned, or once netconn_close() was called and its ring ops and DNS job
 * have completed.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct addrinfo;
struct sockaddr_storage;
struct server;
struct netconn;

struct netconn_config {
	const char *host;      /* DNS name, IPv4 literal, or IPv6 literal without brackets (copied) */
	uint16_t port;
	bool tls;              /* TLS >= 1.2, peer verified, hostname (or IP literal) checked, SNI for names */
	bool nodelay;          /* TCP_NODELAY */
	uint64_t connect_timeout_ms; /* DNS + TCP connect + TLS handshake together; 0 = no limit */
	bool sensitive;        /* what is sent holds a secret: queued bytes are wiped when freed */
};

struct netconn_handlers {
	/* TCP (+TLS) up: application bytes may flow. */
	void (*connected)(struct netconn *nc);
	/* Plaintext received (the view is valid during the call). */
	void (*data)(struct netconn *nc, const uint8_t *p, size_t n);
	/* Optional: everything sent so far was written to the socket. */
	void (*drained)(struct netconn *nc);
	/*
	 * Exactly once, unless the owner called netconn_close() first. err 0: an
	 * orderly end (the peer's TLS close_notify or TCP FIN, or the end of
	 * netconn_shutdown()); else -errno: -ETIMEDOUT (connect timeout),
	 * -ECONNREFUSED, -EHOSTUNREACH, ..., -ENOENT (name not found), -EAGAIN
	 * (temporary DNS failure), -EPROTO (TLS failure) or -EKEYREJECTED
	 * (certificate not verified), -ECANCELED (shut down before connected).
	 * why is a short text for a log line. The netconn is freed when this
	 * returns: the owner drops its pointer and must not call netconn_close().
	 */
	void (*closed)(struct netconn *nc, int err, const char *why);
	/*
	 * Optional, for a DNS name: the addresses getaddrinfo returned, before
	 * any connect. Return 0 to go on (every address tried in order), or a
	 * -errno to end the connection with it (closed() then runs with that
	 * err): the managed network's proxy refuses names that resolve to
	 * local or private addresses here (DNS rebinding).
	 */
	int (*resolved)(struct netconn *nc, const struct addrinfo *list);
};

/* How long netconn_shutdown() waits for the peer to close after our FIN / close_notify. */
#define NETCONN_SHUTDOWN_GRACE_MS 2000

/*
 * Starts connecting. Returns 0 (*ret set) or -errno (-EINVAL for an empty
 * host, -ENOMEM, a socket() error, -ENOSYS without a worker pool for a DNS
 * name). Handlers run later, never inside this call.
 */
int netconn_open(struct server *s, const struct netconn_config *cfg, const struct netconn_handlers *h,
		 void *userdata, struct netconn **ret);
/*
 * Takes a connected stream socket (fd, owned from now on, made non-blocking)
 * as an open plain netconn: the same queue, backpressure and shutdown as an
 * outbound one; connected() is not called. peer names it in logs. Returns 0
 * (*ret set) or -ENOMEM (fd closed).
 */
int netconn_adopt(struct server *s, int fd, const char *peer, const struct netconn_handlers *h,
		  void *userdata, struct netconn **ret);
/*
 * Turns an open plain netconn (adopted) into the server side of TLS with
 * ctx from here on: what was queued before stays plain and goes first;
 * early holds bytes of the peer's already received (its ClientHello's
 * start), fed first. setup(ssl, arg), when given, configures the SSL (its
 * certificate) before the handshake. connected() runs once the handshake
 * completes; netconn_send() refuses until then. The owner bounds the
 * handshake's time (its own timer). Returns 0, -EINVAL (not an open plain
 * netconn, or setup failed), or -ENOMEM.
 */
struct ssl_st;
struct ssl_ctx_st;
int netconn_start_tls_server(struct netconn *nc, struct ssl_ctx_st *ctx,
			     int (*setup)(struct ssl_st *ssl, void *arg), void *arg, const void *early,
			     size_t n);
void *netconn_userdata(const struct netconn *nc);
/*
 * The local address of the connection's socket (getsockname), for a SOCKS5
 * reply's BND.ADDR. 0, or -ENOTCONN before a socket is connected, or -errno.
 */
int netconn_local_address(const struct netconn *nc, struct sockaddr_storage *ss);
/* "host:port" ("[v6]:port" for IPv6 literals), for logs. */
const char *netconn_peer(const struct netconn *nc);
/* Copies and queues n bytes. 0, -ENOTCONN (not connected, shutting down or closing), -ENOMEM. */
int netconn_send(struct netconn *nc, const void *p, size_t n);
/*
 * netconn_send() without its copy: room for n bytes at the tail of the output
 * queue (with TLS, a buffer of the netconn's that SSL_write reads). Fill it,
 * then netconn_send_commit(nc, n) at once, with nothing else called on nc in
 * between (or leave it unused: nothing is sent). NULL when netconn_send() would fail (not connected, shutting
 * down, ending) or out of memory.
 */
void *netconn_send_reserve(struct netconn *nc, size_t n);
int netconn_send_commit(struct netconn *nc, size_t n);
/*
 * Application bytes accepted by netconn_send() not yet written to the socket
 * (with TLS, counted per record batch: a batch counts until all its records
 * are written).
 */
size_t netconn_queued(const struct netconn *nc);
/*
 * TLS over an open plain connection (an HTTP proxy's CONNECT tunnel), with
 * netconn_open()'s checks for host (verified name or IP literal, SNI for
 * names). Nothing may be queued or buffered unread. connected() runs again
 * once the handshake is done; a failure ends the connection as a TLS
 * failure of netconn_open() would. 0, -EINVAL (not open and plain, input
 * pending), -ENOMEM.
 */
int netconn_start_tls(struct netconn *nc, const char *host);
/*
 * Backpressure: stop/resume delivering data (default on). While off, at most
 * one more socket read (64 KiB) is buffered and a peer's EOF waits behind it;
 * errors still end the connection. The TLS handshake and a shutdown read
 * regardless.
 */
void netconn_set_reading(struct netconn *nc, bool on);
/*
 * Orderly end: flushes the queue, sends TLS close_notify and TCP FIN, then
 * closed(nc, 0, ...) once the peer closes or after NETCONN_SHUTDOWN_GRACE_MS.
 * Data still arriving is delivered. Before the connection is up it ends it
 * with -ECANCELED (from the loop, not inside this call).
 */
void netconn_shutdown(struct netconn *nc);
/*
 * Aborts from any state (also from inside a handler). Idempotent until freed;
 * no handler runs after it returns; the memory is freed once the netconn's
 * ring ops and any running DNS job have completed.
 */
void netconn_close(struct netconn *nc);
/* Netconns not freed yet (open, closing, or waiting for their ops): for tests and checks. */
size_t netconn_count(const struct server *s);
/*
 * True while a closed netconn still waits for its ring ops (its socket is
 * not released before they complete): a live upgrade's QUIESCE waits for
 * them, so that the execve leaves no socket held by the old ring.
 */
bool netconn_any_closing(const struct server *s);
/*
 * Server shutdown, after the ring and the worker pool are gone: frees every
 * netconn without calling handlers, and the client SSL_CTX.
 */
void netconn_free_all(struct server *s);
