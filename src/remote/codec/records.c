/* SPDX-License-Identifier: MIT */
/* A relay stream's plaintext records, reassembly and ordering (see records.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "records.h"

int relay_msg_writer_init(struct relay_msg_writer *w, const uint8_t *msg, size_t len)
{
	if (len == 0 || len > RELAY_MESSAGE_MAX)
		return -EMSGSIZE;
	w->msg = msg;
	w->len = len;
	w->off = 0;
	return 0;
}

void relay_msg_prefix(uint8_t out[RELAY_MSG_PREFIX], size_t len)
{
	out[0] = (uint8_t)(len >> 24);
	out[1] = (uint8_t)(len >> 16);
	out[2] = (uint8_t)(len >> 8);
	out[3] = (uint8_t)len;
}

int relay_msg_peek(const uint8_t *p, size_t avail, size_t max, uint32_t *ret_len)
{
	uint32_t n;

	if (avail < RELAY_MSG_PREFIX)
		return 0;
	n = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	*ret_len = n;
	if (n == 0 || n > max)
		return -EBADMSG;
	return avail - RELAY_MSG_PREFIX >= n;
}

size_t relay_msg_writer_next(struct relay_msg_writer *w, uint8_t *out)
{
	size_t n = 0, done, k;

	if (w->off == 0) { /* the prefix opens the first record (RELAY_RECORD_MAX > 4) */
		relay_msg_prefix(out, w->len);
		n = w->off = RELAY_MSG_PREFIX;
	}
	done = w->off - RELAY_MSG_PREFIX;
	k = MIN(w->len - done, (size_t)RELAY_RECORD_MAX - n);
	memcpy(out + n, w->msg + done, k);
	w->off += k;
	return n + k;
}

int relay_msg_reader_feed(struct relay_msg_reader *r, const uint8_t *rec, size_t len,
			  int (*fn)(void *ctx, const uint8_t *msg, size_t len), void *ctx)
{
	size_t off = 0;
	int ret = 0;

	if (len > RELAY_RECORD_MAX)
		return -EMSGSIZE;
	if (r->buf.len + len > 4 + (size_t)RELAY_MESSAGE_MAX)
		return -EMSGSIZE;
	if (buf_append(&r->buf, rec, len) < 0)
		return -ENOMEM;
	while (r->buf.len - off >= RELAY_MSG_PREFIX) {
		uint32_t n;
		int q = relay_msg_peek(r->buf.data + off, r->buf.len - off, RELAY_MESSAGE_MAX, &n);

		if (q <= 0) {
			ret = q;
			break;
		}
		ret = fn(ctx, r->buf.data + off + RELAY_MSG_PREFIX, n);
		off += RELAY_MSG_PREFIX + (size_t)n;
		if (ret < 0)
			break;
	}
	buf_consume(&r->buf, off);
	return ret < 0 ? ret : 0;
}

void relay_msg_reader_done(struct relay_msg_reader *r)
{
	buf_done(&r->buf);
}

int relay_seq_take(uint32_t *next, uint32_t *ret)
{
	if (*next == UINT32_MAX)
		return -ERANGE;
	*ret = (*next)++;
	return 0;
}

/* Releases frame next_seq and the contiguous buffered ones after it. */
static int release(struct relay_order *o, const uint8_t *data, size_t len,
		   int (*fn)(void *ctx, const uint8_t *data, size_t len), void *ctx)
{
	int r = fn(ctx, data, len);
	bool found = true;

	if (r < 0)
		return r;
	if (o->next_seq == UINT32_MAX)
		return -EOVERFLOW;
	o->next_seq++;
	while (found && o->n_pending) {
		found = false;
		for (unsigned i = 0; i < RELAY_REORDER_FRAMES; i++) {
			if (!o->slot[i].used || o->slot[i].seq != o->next_seq)
				continue;
			found = true;
			o->slot[i].used = false;
			o->n_pending--;
			o->pending_bytes -= o->slot[i].len;
			r = fn(ctx, o->slot[i].data, o->slot[i].len);
			free(o->slot[i].data);
			o->slot[i].data = NULL;
			if (r < 0)
				return r;
			if (o->next_seq == UINT32_MAX)
				return -EOVERFLOW;
			o->next_seq++;
			break;
		}
	}
	return 0;
}

int relay_order_push(struct relay_order *o, uint32_t seq, const uint8_t *data, size_t len,
		     int (*fn)(void *ctx, const uint8_t *data, size_t len), void *ctx)
{
	unsigned free_slot = RELAY_REORDER_FRAMES;

	if (seq < o->next_seq)
		return 0; /* duplicate: the first copy won */
	if (seq == o->next_seq)
		return release(o, data, len, fn, ctx);
	if (seq - o->next_seq > RELAY_REORDER_DISTANCE)
		return -ERANGE;
	for (unsigned i = 0; i < RELAY_REORDER_FRAMES; i++) {
		if (o->slot[i].used && o->slot[i].seq == seq)
			return 0; /* already buffered */
		if (!o->slot[i].used && free_slot == RELAY_REORDER_FRAMES)
			free_slot = i;
	}
	if (o->n_pending >= RELAY_REORDER_FRAMES || free_slot == RELAY_REORDER_FRAMES ||
	    o->pending_bytes + len > RELAY_REORDER_BYTES)
		return -ENOBUFS;
	o->slot[free_slot].data = malloc(len ? len : 1);
	if (!o->slot[free_slot].data)
		return -ENOMEM;
	memcpy(o->slot[free_slot].data, data, len);
	o->slot[free_slot].len = len;
	o->slot[free_slot].seq = seq;
	o->slot[free_slot].used = true;
	o->n_pending++;
	o->pending_bytes += len;
	return 0;
}

void relay_order_done(struct relay_order *o)
{
	for (unsigned i = 0; i < RELAY_REORDER_FRAMES; i++)
		free(o->slot[i].data);
	memset(o, 0, sizeof(*o));
}
