/* SPDX-License-Identifier: MIT */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
/*
 * uexec-rendezvous: the rendezvous half of tests/relay/fake_relay.py in C,
 * for the relay benchmark only (the Python fake spends ~20 ms of CPU per MB
 * routed and would be what the throughput figure measures). The registry
 * stays in fake_relay.py, started with --rendezvous-base pointing here.
 *
 *   uexec-rendezvous            (prints ws://127.0.0.1:PORT, serves until killed)
 *
 * Same routing as the fake: /rendezvous/{registration}/executor (one live
 * executor per registration, the newest wins) and .../harness; binary
 * messages are routed by stream_id only (RelayMessageFrame field 2, the only
 * field parsed); a harness claims a stream_id with its first frame; when a
 * harness connection ends its streams are reset towards the executor
 * (Reset{"harness_disconnected"}). Pings are answered. One thread, poll(),
 * blocking writes: a bench tool, not a server.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "relay-frame.h"

#define MAXC 256
#define MAX_MSG (256 * 1024)
#define MAX_STREAMS 64

struct conn {
	int fd;
	bool upgraded, executor;
	char reg[128];
	uint8_t *buf;
	size_t len, cap;
	char streams[MAX_STREAMS][40]; /* harness: stream_ids it owns */
	int nstreams;
};

static struct conn *conns[MAXC];
static int nconns;

static void die(const char *what)
{
	fprintf(stderr, "rendezvous: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int send_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

static int ws_send(struct conn *c, int op, const void *p, size_t n)
{
	uint8_t h[10];
	size_t hl;
	h[0] = (uint8_t)(0x80 | op);
	if (n < 126) {
		h[1] = (uint8_t)n;
		hl = 2;
	} else if (n < 65536) {
		h[1] = 126;
		h[2] = (uint8_t)(n >> 8);
		h[3] = (uint8_t)n;
		hl = 4;
	} else {
		h[1] = 127;
		for (int i = 0; i < 8; i++)
			h[2 + i] = (uint8_t)((uint64_t)n >> (56 - 8 * i));
		hl = 10;
	}
	struct iovec iov[2] = { { h, hl }, { (void *)p, n } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
	ssize_t w = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
	if (w < 0)
		return -1;
	if ((size_t)w < hl)
		return send_all(c->fd, h + w, hl - (size_t)w) < 0 ? -1 : send_all(c->fd, p, n);
	return send_all(c->fd, (const uint8_t *)p + ((size_t)w - hl), n - ((size_t)w - hl));
}

/* RelayMessageFrame field 2 (stream_id): 0 with *sid and *len set, or -1. */
static int frame_sid(const uint8_t *b, size_t n, const char **sid, size_t *len)
{
	size_t i = 0;
	while (i < n) {
		uint64_t key = 0, v;
		int sh = 0;
		do {
			if (i >= n || sh > 63)
				return -1;
			key |= (uint64_t)(b[i] & 0x7f) << sh;
			sh += 7;
		} while (b[i++] & 0x80);
		switch (key & 7) {
		case 0:
			while (i < n && (b[i] & 0x80))
				i++;
			i++;
			break;
		case 2:
			v = 0;
			sh = 0;
			do {
				if (i >= n || sh > 63)
					return -1;
				v |= (uint64_t)(b[i] & 0x7f) << sh;
				sh += 7;
			} while (b[i++] & 0x80);
			if (v > n - i)
				return -1;
			if ((key >> 3) == 2) {
				*sid = (const char *)b + i;
				*len = (size_t)v;
				return 0;
			}
			i += (size_t)v;
			break;
		case 1:
			i += 8;
			break;
		case 5:
			i += 4;
			break;
		default:
			return -1;
		}
	}
	return -1;
}

static struct conn *find_executor(const char *reg)
{
	for (int i = nconns - 1; i >= 0; i--)
		if (conns[i]->upgraded && conns[i]->executor && !strcmp(conns[i]->reg, reg))
			return conns[i];
	return NULL;
}

static struct conn *find_owner(const char *reg, const char *sid, size_t sl)
{
	for (int i = 0; i < nconns; i++) {
		struct conn *c = conns[i];
		if (!c->upgraded || c->executor || strcmp(c->reg, reg))
			continue;
		for (int s = 0; s < c->nstreams; s++)
			if (strlen(c->streams[s]) == sl && !memcmp(c->streams[s], sid, sl))
				return c;
	}
	return NULL;
}

static void drop(int idx)
{
	struct conn *c = conns[idx];
	if (c->upgraded && !c->executor) {
		struct conn *ex = find_executor(c->reg);
		for (int s = 0; ex && s < c->nstreams; s++) {
			struct relay_frame f;
			uint8_t out[512];
			static const char why[] = "harness_disconnected";
			relay_frame_init_reset(&f, c->streams[s], strlen(c->streams[s]), why, sizeof(why) - 1);
			ssize_t n = relay_frame_encode(&f, out, sizeof(out));
			if (n > 0)
				ws_send(ex, 2, out, (size_t)n);
		}
	}
	close(c->fd);
	free(c->buf);
	free(c);
	conns[idx] = conns[--nconns];
}

static void route(struct conn *c, const uint8_t *p, size_t n)
{
	const char *sid;
	size_t sl;
	if (frame_sid(p, n, &sid, &sl) < 0 || sl == 0 || sl >= 40)
		return;
	if (c->executor) {
		struct conn *h = find_owner(c->reg, sid, sl);
		if (h)
			ws_send(h, 2, p, n);
		return;
	}
	struct conn *owner = find_owner(c->reg, sid, sl);
	if (!owner && c->nstreams < MAX_STREAMS) {
		memcpy(c->streams[c->nstreams], sid, sl);
		c->streams[c->nstreams++][sl] = 0;
	} else if (owner != c) {
		return;
	}
	struct conn *ex = find_executor(c->reg);
	if (ex)
		ws_send(ex, 2, p, n);
}

/* Handles the HTTP upgrade; -1 to drop, 0 waiting for more, 1 done. */
static int upgrade(struct conn *c)
{
	uint8_t *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
	if (!end)
		return c->len > 8192 ? -1 : 0;
	*end = 0;
	char path[256], role[16];
	const char *k = strcasestr((char *)c->buf, "sec-websocket-key:");
	if (sscanf((char *)c->buf, "GET %255s", path) != 1 || !k ||
	    sscanf(path, "/rendezvous/%127[^/]/%15[a-z]", c->reg, role) != 2 ||
	    (strcmp(role, "executor") && strcmp(role, "harness"))) {
		static const char nf[] = "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
		send_all(c->fd, nf, sizeof(nf) - 1);
		return -1;
	}
	k += strlen("sec-websocket-key:");
	while (*k == ' ')
		k++;
	char key[128];
	size_t kl = strcspn(k, "\r\n ");
	if (kl > 64)
		return -1;
	snprintf(key, sizeof(key), "%.*s258EAFA5-E914-47DA-95CA-C5AB0DC85B11", (int)kl, k);
	uint8_t dg[SHA_DIGEST_LENGTH];
	SHA1((const uint8_t *)key, strlen(key), dg);
	char acc[64];
	EVP_EncodeBlock((uint8_t *)acc, dg, SHA_DIGEST_LENGTH);
	char resp[256];
	int n = snprintf(resp, sizeof(resp),
			 "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
			 "Sec-WebSocket-Accept: %s\r\n\r\n",
			 acc);
	if (send_all(c->fd, resp, (size_t)n) < 0)
		return -1;
	c->executor = !strcmp(role, "executor");
	c->upgraded = true;
	size_t used = (size_t)(end + 4 - c->buf);
	memmove(c->buf, c->buf + used, c->len - used);
	c->len -= used;
	return 1;
}

/* Consumes whole frames from c->buf; -1 to drop the connection. */
static int frames(struct conn *c)
{
	size_t off = 0;
	for (;;) {
		uint8_t *p = c->buf + off;
		size_t avail = c->len - off;
		if (avail < 2)
			break;
		int op = p[0] & 0x0f;
		bool fin = p[0] & 0x80, masked = p[1] & 0x80;
		uint64_t pl = p[1] & 0x7f;
		size_t hl = 2;
		if (pl == 126) {
			if (avail < 4)
				break;
			pl = (uint64_t)p[2] << 8 | p[3];
			hl = 4;
		} else if (pl == 127) {
			if (avail < 10)
				break;
			pl = 0;
			for (int i = 0; i < 8; i++)
				pl = pl << 8 | p[2 + i];
			hl = 10;
		}
		if (pl > MAX_MSG || !fin)
			return -1; /* no fragments from our clients */
		if (masked)
			hl += 4;
		if (avail < hl + pl)
			break;
		uint8_t *d = p + hl;
		if (masked) { /* 8 bytes at a time: byte by byte was 40% of this router's CPU */
			const uint8_t *k = p + hl - 4;
			uint8_t k8[8] = { k[0], k[1], k[2], k[3], k[0], k[1], k[2], k[3] };
			uint64_t m64, w;
			size_t i = 0;
			memcpy(&m64, k8, 8);
			for (; pl - i >= 8; i += 8) {
				memcpy(&w, d + i, 8);
				w ^= m64;
				memcpy(d + i, &w, 8);
			}
			for (; i < pl; i++)
				d[i] ^= k[i & 3];
		}
		off += hl + (size_t)pl;
		if (op == 9)
			ws_send(c, 10, d, (size_t)pl);
		else if (op == 8)
			return -1;
		else if (op == 2)
			route(c, d, (size_t)pl);
	}
	memmove(c->buf, c->buf + off, c->len - off);
	c->len -= off;
	return 0;
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(ls, 64) < 0 ||
	    getsockname(ls, (struct sockaddr *)&sa, &sl) < 0)
		die("listen");
	printf("ws://127.0.0.1:%d\n", ntohs(sa.sin_port));
	fflush(stdout);
	struct pollfd pfd[MAXC + 1];
	for (;;) {
		pfd[0] = (struct pollfd){ .fd = ls, .events = POLLIN };
		for (int i = 0; i < nconns; i++)
			pfd[i + 1] = (struct pollfd){ .fd = conns[i]->fd, .events = POLLIN };
		int n = nconns;
		if (poll(pfd, (nfds_t)n + 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			die("poll");
		}
		/* from the end: drop() moves the last connection into the freed slot */
		for (int i = n - 1; i >= 0; i--) {
			if (!pfd[i + 1].revents)
				continue;
			struct conn *c = conns[i];
			if (c->cap - c->len < 65536) {
				c->cap = c->len + 2 * MAX_MSG;
				c->buf = realloc(c->buf, c->cap);
				if (!c->buf)
					die("realloc");
			}
			ssize_t r = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				drop(i);
				continue;
			}
			c->len += (size_t)r;
			int u = c->upgraded ? 1 : upgrade(c);
			if (u < 0 || (u > 0 && frames(c) < 0))
				drop(i);
		}
		if ((pfd[0].revents & POLLIN) && nconns < MAXC) {
			int fd = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0) {
				int one = 1;
				setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
				struct conn *c = calloc(1, sizeof(*c));
				c->fd = fd;
				conns[nconns++] = c;
			}
		}
	}
}
