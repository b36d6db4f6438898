/* SPDX-License-Identifier: MIT */
/*
 * Growable byte buffer. Owns its storage; buf_done() frees it.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct buf {
	uint8_t *data;
	size_t len;
	size_t cap;
};

/* Ensures room for `extra` more bytes. Returns 0 or -ENOMEM. */
int buf_reserve(struct buf *b, size_t extra);
/* Appends n bytes. Returns 0 or -ENOMEM. */
int buf_append(struct buf *b, const void *p, size_t n);
/* Appends printf output (any length). Returns 0 or -ENOMEM. */
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Drops the first n bytes (n <= len). */
void buf_consume(struct buf *b, size_t n);
/* Frees the storage and zeroes the struct. */
void buf_done(struct buf *b);
