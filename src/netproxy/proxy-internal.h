/* SPDX-License-Identifier: MIT */
/*
 * What the files of the managed network's proxy (proxy.h) share: the proxy
 * of one process (struct netproxy) and its client connections (struct npc),
 * and the functions the parts call in each other:
 *  - proxy.c: the listeners, a connection's life (accept, client reads,
 *    timers, the end) and the proxy's own life;
 *  - proxy-http.c: request heads read, decided and forwarded, and the
 *    origin's response back;
 *  - proxy-headers.c: request and response heads rewritten on the way
 *    through (targets, hop-by-hop headers, credentials put back);
 *  - proxy-socks.c: SOCKS5 (greeting, CONNECT, UDP ASSOCIATE's control side);
 *  - proxy-outbound.c: the connection toward the target (direct or through
 *    the upstream proxy), its policy-time lookup, and tunnel bytes back;
 *  - proxy-intercept.c: interception of a tunnel a credential is bound to;
 *  - proxy-review.c: network/policyRequest's question and its answer;
 *  - proxy-answer.c: refusals and answers to the client, and decisions
 *    (network/policyDecision, audit line, metrics).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "buf.h"
#include "chunked.h"
#include "http-client.h"
#include "list.h"
#include "policy.h"
#include "proxy.h"
#include "ring.h"
#include "upstream.h"
#include "worker.h"

struct http_header;
struct http_request;
struct http_response;
struct netconn;

#define NPC_HEAD_MAX (64 * 1024)     /* a request head larger than this: 431 */
#define NPC_MAX_CONNS 256            /* client connections per process */
#define NPC_QUEUE_HIGH (256 * 1024)  /* bytes queued toward one side before its source pauses */
#define NPC_CONNECT_TIMEOUT_MS 30000
#define NPC_ACCEPT_PAUSE_MS 100      /* accept failed for want of fds or memory: retry after */
#define NPC_HEAD_TIMEOUT_MS 30000    /* a request head (or SOCKS5 handshake) must arrive within */

struct netproxy {
	struct server *srv;
	struct netproxy_config *cfg;
	struct np_policy *pol;
	int http_fd, socks_fd, udp_fd;
	struct np_udp *udp;           /* SOCKS5 UDP ASSOCIATE's relay (socks-udp.c), when enabled */
	struct uring_op accept_op, socks_accept_op;
	struct uring_timer pause;     /* accepting paused (no fd or memory left): retried when it fires */
	bool paused[2];               /* which listener waits for it (HTTP, SOCKS5) */
	bool quiesced[2];             /* accept not re-armed: the live upgrade's QUIESCE */
	struct list_head conns;
	unsigned n_conns;
	bool freeing; /* netproxy_free() ran: freed once the accept op is back */
	void (*sink)(void *owner, const char *tail);
	void *owner;
	const struct netproxy_reviewer *reviewer; /* review: who asks the client (NULL: nobody) */
	/* allowUpstreamProxy: the server's upstream proxy for plain requests [0] and tunnels [1] */
	struct np_upstream upstream[2];
	bool has_upstream[2];
	char *session, *process; /* for the audit log's lines */
};

enum npc_state {
	NPC_HEAD,    /* reading a request head */
	NPC_UPSTREAM, /* upstream connecting */
	NPC_UP_CONNECT, /* through an upstream proxy: its answer to our CONNECT */
	NPC_TUNNEL,  /* bytes both ways (CONNECT) */
	NPC_FORWARD, /* a plain request: its body to upstream, then the response back */
	NPC_DONE,    /* ending */
	NPC_SOCKS_GREETING, /* SOCKS5: the client's methods */
	NPC_SOCKS_REQUEST,  /* SOCKS5: its request */
	NPC_SOCKS_UDP,      /* SOCKS5: the control connection of a UDP association */
	NPC_ASKING,  /* the client of the server is asked about the target (review) */
};

/* Review (networkProxy.policyDecisionTimeoutMs): the answer for the request at hand. */
enum npc_review {
	RV_NONE,
	RV_ALLOW,  /* allowed by the decider: still only if public once resolved */
	RV_DENY,   /* deny or ask with the client's reason */
	RV_ASK,
	RV_FAILED, /* nobody to ask, an error reply, a bad answer or no answer in time: not_allowed */
};

struct npc {
	struct list_head link;
	struct netproxy *np;
	struct netconn *client, *up;
	enum npc_state state;
	struct buf head;       /* request bytes not yet handled */
	bool connect;          /* CONNECT (or a SOCKS5 CONNECT: socks too) */
	bool mitm;             /* intercepted (credential masking): requests inside TLS to host:port */
	bool mitm_tls;         /* intercepted inside TLS (https), else plain HTTP (a SOCKS5 tunnel) */
	bool mitm_pending;     /* to be intercepted once its lookup is in */
	size_t mitm_head;      /* then: the CONNECT head's size */
	bool socks;            /* a SOCKS5 client */
	uint64_t body_left;    /* FORWARD: request body bytes still to pass (Content-Length) */
	bool chunked;          /* FORWARD: a chunked body, its end found by ch */
	struct np_chunked ch;
	struct buf out_head;   /* the rewritten request head, sent once upstream is up */
	struct uring_timer head_timer; /* NPC_HEAD_TIMEOUT_MS for a head (or SOCKS5 handshake) */
	bool dead;             /* freed but for its timer's last callback */
	char host[256];        /* normalised */
	uint16_t port;
	char peer[64];          /* the client's address, "127.0.0.1:PORT" */
	const char *method;     /* the request's method (static copy below), NULL for SOCKS5 */
	char method_buf[16];
	bool decided;           /* the domain decision was reported */
	bool served;            /* a request was answered on it: idle between requests (keep-alive) */
	int client_fd;          /* the client's socket (owned by client): shut down by an upgrade */
	struct sockaddr_storage peer_addr; /* the client's address (AF_UNSPEC if unknown) */
	struct np_udp_assoc *assoc; /* NPC_SOCKS_UDP: its association */
	bool udp;               /* decisions are about its datagrams (protocol socks5_udp) */
	bool override;          /* allowed by the decider where the baseline would deny */
	enum npc_review rv;     /* the review's answer, taken by review_refused() */
	char *rv_reason;        /* RV_DENY, RV_ASK: the client's reason */
	void *review;           /* the owner's pending question (reviewer->ask), or NULL */
	struct uring_timer review_timer; /* the question's deadline: its timeout + 5 s */
	const struct np_upstream *via; /* through this upstream proxy (allowUpstreamProxy), or NULL */
	struct buf up_head;     /* NPC_UP_CONNECT: the upstream proxy's answer so far */
	struct np_lookup *lookup; /* the policy-time lookup in flight (through an upstream proxy) */
	/* FORWARD: the response (its head in up_head until complete, then its body's framing) */
	bool keep;              /* the client's connection outlives this request */
	bool head_request;      /* HEAD: the response has no body */
	int minor;              /* the request's HTTP/1.<minor> */
	bool resp_started;      /* its head went to the client */
	struct http_body_reader body;
};

/*
 * Through an upstream proxy the target is never resolved by the connection
 * (it goes to the proxy): a name allowed only if public is looked up on its
 * own first, on the worker pool, as the reference's policy-time check.
 */
struct np_lookup {
	struct work w;
	struct npc *c;  /* NULL once the request is gone (the job frees itself) */
	char host[256];
	bool refused;   /* did not resolve, or an answer is not public */
};

/* proxy.c */
/* The memory goes once neither timer's op is in flight (their callbacks call this again). */
void netproxy_npc_release(struct npc *c);
/* The rewritten head may hold a real credential (credential masking): wiped before it goes. */
void netproxy_out_head_done(struct npc *c);
/* Waiting for a request head (again): it has NPC_HEAD_TIMEOUT_MS. */
void netproxy_head_deadline(struct npc *c);
/* Frees c once neither side's connection is left. */
void netproxy_npc_maybe_free(struct npc *c);
/* Ends the client connection once what was queued is written. */
void netproxy_finish_client(struct npc *c);
/* Reading resumes on each side whose peer's queue has room again. */
void netproxy_client_resume(struct npc *c);

/* proxy-http.c */
void netproxy_client_heads(struct npc *c);
void netproxy_forward_response(struct npc *c, const uint8_t *p, size_t n);
void netproxy_pass_body(struct npc *c);
void netproxy_answered(struct npc *c, size_t n);

/* proxy-headers.c */
uint16_t netproxy_default_port(const char *scheme, size_t n);
int netproxy_set_authority(struct npc *c, const char *a, size_t n, uint16_t def);
bool netproxy_wants_close(const struct http_header *conn);
int netproxy_rewrite_head(const struct npc *c, const struct http_request *req, const char *path,
			  size_t path_len, const char *opath, size_t opath_len, const char *auth,
			  struct buf *out);
int netproxy_response_head(struct npc *c, const struct http_response *resp, struct buf *out);

/* proxy-socks.c */
void netproxy_socks_input(struct npc *c);
void netproxy_socks_decided(struct npc *c, enum np_verdict v);
void netproxy_socks_send(struct npc *c, uint8_t code);
void netproxy_socks_reply(struct npc *c, uint8_t code);
size_t netproxy_socks_bound_reply(struct netconn *nc, uint8_t out[22]);

/* proxy-outbound.c */
const struct np_upstream *netproxy_choose_upstream(const struct npc *c);
int netproxy_open_upstream(struct npc *c);
int netproxy_start_lookup(struct npc *c);

/* proxy-intercept.c */
void netproxy_intercept(struct npc *c, bool tls, size_t n);
void netproxy_start_mitm(struct npc *c, size_t n);

/* proxy-review.c */
bool netproxy_review_start(struct npc *c);
bool netproxy_review_refused(struct npc *c);

/* proxy-answer.c */
void netproxy_send_text(struct npc *c, const char *status, const char *header, const char *body);
void netproxy_send_bad_gateway(struct npc *c);
void netproxy_send_refusal_json(struct npc *c, const char *reason, const char *header,
				const char *message, const char *source, const char *decision);
void netproxy_refuse(struct npc *c, enum np_verdict v);
void netproxy_refuse_local(struct npc *c);
const char *netproxy_protocol(const struct npc *c);
void netproxy_emit_decision(struct npc *c, bool domain, const char *decision, const char *source,
			    const char *reason);
void netproxy_emit(struct npc *c, bool domain, bool allow, const char *source, const char *reason);
