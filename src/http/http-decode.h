/* SPDX-License-Identifier: MIT */
/*
 * Content codings of http/request responses, decoded as the reference's
 * client does (it asks for them with accept-encoding: zstd,gzip): gzip
 * through zlib, zstd through libzstd, in bounded steps so that a streamed
 * body can stop between two pieces while the client's output queue drains.
 * One gzip member or zstd frame: bytes after its end are ignored, as the
 * reference ignores them. zstd windows above HTTP_DECODE_ZSTD_WINDOW_LOG are
 * refused (memory per stream: 2^N bytes).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HTTP_DECODE_ZSTD_WINDOW_LOG 23

enum http_coding {
	HTTP_CODING_NONE,
	HTTP_CODING_GZIP,
	HTTP_CODING_ZSTD,
};

struct http_decoder;

/* A decoder for c (not NONE), or NULL when out of memory. */
struct http_decoder *http_decoder_new(enum http_coding c);

/*
 * Decodes from in[0..*in_len) into out[0..cap): returns the bytes written
 * (0 when the input is used up or the coded stream has ended) and moves
 * *in and *in_len past what was consumed, or -EBADMSG for input that is not of
 * the coding.
 */
ssize_t http_decoder_run(struct http_decoder *d, const uint8_t **in, size_t *in_len, uint8_t *out,
			 size_t cap);

/* The body ended: 0 when the coded stream was complete (or no byte came at all), else -EBADMSG. */
int http_decoder_finish(const struct http_decoder *d);

void http_decoder_free(struct http_decoder *d);
