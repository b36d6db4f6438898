/* SPDX-License-Identifier: MIT */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "wsc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p) {
		perror("realloc");
		exit(2);
	}
	return p;
}

static int send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				struct pollfd pfd = { .fd = fd, .events = POLLOUT };
				poll(&pfd, 1, -1);
				continue;
			}
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int wsc_connect(struct wsc *c, const char *url)
{
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->rng = now_ns() ^ ((uint64_t)getpid() << 32) ^ (uintptr_t)c;
	char host[64];
	int port;
	if (sscanf(url, "ws://%63[0-9.]:%d", host, &port) != 2) {
		fprintf(stderr, "wsc: bad url %s\n", url);
		return -1;
	}
	/* an optional path after host:port (the relay's rendezvous URLs have one) */
	const char *path = strchr(url + 5, '/');
	if (!path)
		path = "/";
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return -1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		perror("socket");
		return -1;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("connect");
		close(fd);
		return -1;
	}
	c->fd = fd;
	char req[1024];
	int n = snprintf(req, sizeof(req),
			 "GET %.700s HTTP/1.1\r\nHost: %s:%d\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
			 "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
			 path, host, port);
	if (send_all(fd, req, (size_t)n) < 0)
		goto fail;
	for (;;) {
		long r = wsc_fill(c);
		if (r <= 0)
			goto fail;
		char *end = memmem(c->rbuf, c->rlen, "\r\n\r\n", 4);
		if (!end)
			continue;
		if (c->rlen < 12 || memcmp(c->rbuf + 9, "101", 3) != 0) {
			fprintf(stderr, "wsc: upgrade refused: %.*s\n", (int)(end - c->rbuf), c->rbuf);
			goto fail;
		}
		c->roff = (size_t)(end + 4 - c->rbuf);
		return 0;
	}
fail:
	close(fd);
	c->fd = -1;
	return -1;
}

void wsc_close(struct wsc *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->rbuf);
	free(c->sbuf);
	free(c->msg);
	c->rbuf = c->sbuf = c->msg = NULL;
}

static uint32_t rnd32(struct wsc *c)
{
	uint64_t x = c->rng;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	c->rng = x;
	return (uint32_t)(x >> 16);
}

static int send_frame(struct wsc *c, int opcode, const char *msg, size_t len)
{
	size_t need = len + 14;
	if (c->scap < need) {
		c->scap = need * 2;
		c->sbuf = xrealloc(c->sbuf, c->scap);
	}
	unsigned char *h = (unsigned char *)c->sbuf;
	size_t hl;
	h[0] = (unsigned char)(0x80 | opcode);
	if (len < 126) {
		h[1] = (unsigned char)(0x80 | len);
		hl = 2;
	} else if (len < 65536) {
		h[1] = 0x80 | 126;
		h[2] = (unsigned char)(len >> 8);
		h[3] = (unsigned char)len;
		hl = 4;
	} else {
		h[1] = 0x80 | 127;
		for (int i = 0; i < 8; i++)
			h[2 + i] = (unsigned char)(len >> (56 - 8 * i));
		hl = 10;
	}
	uint32_t key = rnd32(c);
	memcpy(h + hl, &key, 4);
	hl += 4;
	unsigned char *p = h + hl;
	uint64_t k8 = (uint64_t)key | ((uint64_t)key << 32);
	size_t i = 0;
	for (; i + 8 <= len; i += 8) {
		uint64_t v;
		memcpy(&v, msg + i, 8);
		v ^= k8;
		memcpy(p + i, &v, 8);
	}
	const unsigned char *kb = (const unsigned char *)&key;
	for (; i < len; i++)
		p[i] = (unsigned char)msg[i] ^ kb[i & 3];
	return send_all(c->fd, c->sbuf, hl + len);
}

int wsc_send(struct wsc *c, const char *msg, size_t len)
{
	return send_frame(c, 1, msg, len);
}

int wsc_send_binary(struct wsc *c, const void *msg, size_t len)
{
	return send_frame(c, 2, msg, len);
}

long wsc_fill(struct wsc *c)
{
	if (c->roff == c->rlen)
		c->roff = c->rlen = 0;
	size_t avail = c->rlen - c->roff;
	size_t need = 65536;
	if (c->want > avail && c->want - avail > need)
		need = c->want - avail;
	if (c->rcap - c->rlen < need) {
		if (c->roff) {
			memmove(c->rbuf, c->rbuf + c->roff, avail);
			c->rlen = avail;
			c->roff = 0;
		}
		if (c->rcap - c->rlen < need) {
			c->rcap = c->rlen + need + 65536;
			c->rbuf = xrealloc(c->rbuf, c->rcap);
		}
	}
	for (;;) {
		ssize_t n = recv(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n > 0)
			c->rlen += (size_t)n;
		return n;
	}
}

int wsc_next(struct wsc *c, const char **msg, size_t *len)
{
	for (;;) {
		c->want = 0;
		const unsigned char *p = (const unsigned char *)c->rbuf + c->roff;
		size_t avail = c->rlen - c->roff;
		if (avail < 2)
			return 0;
		int fin = p[0] & 0x80, op = p[0] & 0x0f;
		if (p[1] & 0x80)
			return -1; /* server frames are never masked */
		uint64_t pl = p[1] & 0x7f;
		size_t hl = 2;
		if (pl == 126) {
			if (avail < 4)
				return 0;
			pl = ((uint64_t)p[2] << 8) | p[3];
			hl = 4;
		} else if (pl == 127) {
			if (avail < 10)
				return 0;
			pl = 0;
			for (int i = 0; i < 8; i++)
				pl = (pl << 8) | p[2 + i];
			hl = 10;
		}
		if (avail < hl + pl) {
			c->want = hl + pl;
			return 0;
		}
		const char *payload = (const char *)p + hl;
		c->roff += hl + pl;
		if (op >= 8) {
			if (op == 9)
				send_frame(c, 10, payload, pl);
			else if (op == 8) {
				c->closed = 1;
				return -1;
			}
			continue;
		}
		if (op != 0 && fin && c->mlen == 0) {
			*msg = payload;
			*len = pl;
			return 1;
		}
		/* fragmented message */
		if (op != 0)
			c->mlen = 0;
		if (c->mcap < c->mlen + pl) {
			c->mcap = (c->mlen + pl) * 2;
			c->msg = xrealloc(c->msg, c->mcap);
		}
		memcpy(c->msg + c->mlen, payload, pl);
		c->mlen += pl;
		if (fin) {
			*msg = c->msg;
			*len = c->mlen;
			c->mlen = 0; /* buffer stays valid until the next append */
			return 1;
		}
	}
}

int wsc_recv(struct wsc *c, const char **msg, size_t *len, int timeout_ms)
{
	for (;;) {
		int r = wsc_next(c, msg, len);
		if (r)
			return r;
		if (timeout_ms >= 0) {
			struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
			int pr = poll(&pfd, 1, timeout_ms);
			if (pr == 0)
				return 0;
		}
		if (wsc_fill(c) <= 0)
			return -1;
	}
}

int wsc_handshake(struct wsc *c, const char *client_name)
{
	char buf[256];
	int n = snprintf(buf, sizeof(buf),
			 "{\"id\":0,\"method\":\"initialize\",\"params\":{\"clientName\":\"%s\",\"resumeSessionId\":null}}",
			 client_name);
	if (wsc_send(c, buf, (size_t)n) < 0)
		return -1;
	for (;;) {
		const char *m;
		size_t l;
		if (wsc_recv(c, &m, &l, 30000) != 1)
			return -1;
		long long id;
		if (jint(m, l, "id", &id) == 0 && id == 0) {
			if (!jfind(m, l, "result")) {
				fprintf(stderr, "wsc: initialize failed: %.*s\n", (int)l, m);
				return -1;
			}
			break;
		}
	}
	static const char initd[] = "{\"method\":\"initialized\",\"params\":{}}";
	return wsc_send(c, initd, sizeof(initd) - 1);
}

/* ---------------- JSON scanning ---------------- */

const char *jfind(const char *msg, size_t len, const char *key)
{
	size_t kl = strlen(key);
	const char *p = msg, *end = msg + len;
	while (p < end) {
		const char *q = memchr(p, '"', (size_t)(end - p));
		if (!q || (size_t)(end - q) < kl + 2)
			return NULL;
		if (memcmp(q + 1, key, kl) == 0 && q[kl + 1] == '"') {
			const char *v = q + kl + 2;
			while (v < end && (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r'))
				v++;
			if (v < end && *v == ':') {
				v++;
				while (v < end && (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r'))
					v++;
				return v;
			}
		}
		/* skip this string token (memchr: base64 chunks are long) */
		const char *r = q + 1;
		for (;;) {
			r = memchr(r, '"', (size_t)(end - r));
			if (!r)
				return NULL;
			size_t bs = 0;
			while (r - bs > q + 1 && r[-1 - (long)bs] == '\\')
				bs++;
			if (!(bs & 1))
				break;
			r++;
		}
		p = r + 1;
	}
	return NULL;
}

long jstr(const char *msg, size_t len, const char *key, const char **out)
{
	const char *v = jfind(msg, len, key);
	const char *end = msg + len;
	if (!v || v >= end || *v != '"')
		return -1;
	v++;
	const char *q = memchr(v, '"', (size_t)(end - v));
	if (!q)
		return -1;
	*out = v;
	return q - v;
}

int jint(const char *msg, size_t len, const char *key, long long *out)
{
	const char *v = jfind(msg, len, key);
	if (!v || v >= msg + len || !((*v >= '0' && *v <= '9') || *v == '-'))
		return -1;
	*out = strtoll(v, NULL, 10);
	return 0;
}

const char *jmethod(const char *msg, size_t len, size_t *mlen)
{
	/* Both servers put "method" first in notifications; check cheaply first. */
	static const char pre[] = "{\"method\":\"";
	const char *v;
	if (len > sizeof(pre) && memcmp(msg, pre, sizeof(pre) - 1) == 0) {
		v = msg + sizeof(pre) - 1;
		const char *q = memchr(v, '"', len - (sizeof(pre) - 1));
		if (!q)
			return NULL;
		*mlen = (size_t)(q - v);
		return v;
	}
	long n = jstr(msg, len, "method", &v);
	if (n < 0)
		return NULL;
	*mlen = (size_t)n;
	return v;
}

int jis(const char *msg, size_t len, const char *m)
{
	size_t ml;
	const char *v = jmethod(msg, len, &ml);
	return v && ml == strlen(m) && memcmp(v, m, ml) == 0;
}

/* ---------------- base64 ---------------- */

static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t b64_declen(const char *s, size_t n)
{
	size_t d = n / 4 * 3;
	if (n >= 1 && s[n - 1] == '=')
		d--;
	if (n >= 2 && s[n - 2] == '=')
		d--;
	return d;
}

long b64_decode(const char *s, size_t n, unsigned char *out)
{
	static signed char t[256];
	static int init;
	if (!init) {
		memset(t, -1, sizeof(t));
		for (int i = 0; i < 64; i++)
			t[(unsigned char)b64chars[i]] = (signed char)i;
		init = 1;
	}
	size_t o = 0;
	uint32_t acc = 0;
	int bits = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '=')
			break;
		int v = t[(unsigned char)s[i]];
		if (v < 0)
			return -1;
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(acc >> bits);
		}
	}
	return (long)o;
}

/* Scalar base64 with a 4096-entry table of character pairs: 6 input bytes per
 * step from one 64-bit load (about 2 GB/s here; the simple 3-byte loop does
 * about half). */
static uint16_t b64pairs[4096];

size_t b64_encode(const unsigned char *in, size_t n, char *out)
{
	size_t o = 0, i = 0;
	if (!b64pairs[0]) {
		for (int k = 0; k < 4096; k++)
			b64pairs[k] = (uint16_t)((unsigned char)b64chars[k >> 6] |
						 ((unsigned)(unsigned char)b64chars[k & 63] << 8));
	}
	for (; i + 8 <= n; i += 6) {
		uint64_t v;
		memcpy(&v, in + i, 8);
		v = __builtin_bswap64(v);
		uint64_t w = (uint64_t)b64pairs[(v >> 52) & 4095] | (uint64_t)b64pairs[(v >> 40) & 4095] << 16 |
			     (uint64_t)b64pairs[(v >> 28) & 4095] << 32 | (uint64_t)b64pairs[(v >> 16) & 4095] << 48;
		memcpy(out + o, &w, 8);
		o += 8;
	}
	for (; i + 3 <= n; i += 3) {
		uint32_t v = ((uint32_t)in[i] << 16) | ((uint32_t)in[i + 1] << 8) | in[i + 2];
		out[o++] = b64chars[v >> 18];
		out[o++] = b64chars[(v >> 12) & 63];
		out[o++] = b64chars[(v >> 6) & 63];
		out[o++] = b64chars[v & 63];
	}
	if (i < n) {
		uint32_t v = (uint32_t)in[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)in[i + 1] << 8;
		out[o++] = b64chars[v >> 18];
		out[o++] = b64chars[(v >> 12) & 63];
		out[o++] = i + 1 < n ? b64chars[(v >> 6) & 63] : '=';
		out[o++] = '=';
	}
	out[o] = 0;
	return o;
}
