/* SPDX-License-Identifier: MIT */
/*
 * A small blocking WebSocket client for the load generators: plain sockets,
 * TCP_NODELAY, masked client frames, one read buffer per connection. The
 * bench clients multiplex connections with poll(); none of this is server code.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct wsc {
	int fd;
	char *rbuf;        /* received bytes not consumed yet: rbuf[roff..rlen) */
	size_t roff, rlen, rcap;
	char *sbuf;        /* frame being built */
	size_t scap;
	char *msg;         /* reassembly of fragmented messages */
	size_t mlen, mcap;
	uint64_t rng;
	size_t want;       /* size of an incomplete frame at roff */
	int closed;
};

/* Monotonic time in nanoseconds. */
uint64_t now_ns(void);

/* Connects to ws://IP:PORT[/path] and performs the upgrade. Returns 0 or -1 (message on stderr). */
int wsc_connect(struct wsc *c, const char *url);
void wsc_close(struct wsc *c);

/* Sends one masked text frame. Returns 0 or -1. */
int wsc_send(struct wsc *c, const char *msg, size_t len);
/* Sends one masked binary frame (relay frames). Returns 0 or -1. */
int wsc_send_binary(struct wsc *c, const void *msg, size_t len);

/* If a whole message is buffered, points *msg and *len at it (valid until the next
 * wsc_* call on c) and returns 1; control frames are handled and skipped.
 * Returns 0 when more bytes are needed, -1 on a protocol error. */
int wsc_next(struct wsc *c, const char **msg, size_t *len);

/* One recv() into the buffer (blocks if the socket is blocking). Returns bytes
 * read, 0 on EOF, -1 on error. */
long wsc_fill(struct wsc *c);

/* Blocks until one whole message is available (timeout_ms < 0: forever).
 * Returns 1, 0 on timeout, -1 on EOF/error. */
int wsc_recv(struct wsc *c, const char **msg, size_t *len, int timeout_ms);

/* initialize + initialized. Returns 0 or -1. */
int wsc_handshake(struct wsc *c, const char *client_name);

/* --- tiny JSON helpers for server frames (compact JSON, keys unique per object) --- */

/* Finds "key" followed by ':' in msg and returns a pointer to the value, or NULL. */
const char *jfind(const char *msg, size_t len, const char *key);
/* The string value of key (without quotes, no unescaping); returns length or -1. */
long jstr(const char *msg, size_t len, const char *key, const char **out);
/* Integer value of key; returns 0 and sets *out, or -1. */
int jint(const char *msg, size_t len, const char *key, long long *out);
/* The notification's method ("process/output"…) or NULL for replies; sets *mlen. */
const char *jmethod(const char *msg, size_t len, size_t *mlen);
/* True when the method of msg equals m. */
int jis(const char *msg, size_t len, const char *m);

/* Decoded length of a base64 string of n characters. */
size_t b64_declen(const char *s, size_t n);
/* Standard base64 decode; returns decoded length or -1. */
long b64_decode(const char *s, size_t n, unsigned char *out);
/* Standard base64 encode with padding; returns encoded length (out needs 4*ceil(n/3)+1). */
size_t b64_encode(const unsigned char *in, size_t n, char *out);
