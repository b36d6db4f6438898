/* SPDX-License-Identifier: MIT */
/*
 * The live upgrade's state blob: the writer (state.h; docs/UPGRADE.md), into
 * a growable buffer or straight into a memfd mapping (memfd.c's grow). No I/O.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "state.h"

/* ---- little-endian stores (the parser's loads are in state.c) ---- */

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

/* ---- the writer ---- */

static uint8_t *wreserve(struct upgrade_writer *w, size_t n)
{
	uint8_t *p;
	int r;

	if (w->error)
		return NULL;
	if (w->b.cap - w->b.len < n) {
		r = w->grow ? w->grow(w, n) : buf_reserve(&w->b, n);
		if (r < 0) {
			w->error = r;
			return NULL;
		}
	}
	p = w->b.data + w->b.len;
	w->b.len += n;
	return p;
}

void upgrade_writer_init(struct upgrade_writer *w, uint32_t version)
{
	upgrade_writer_init_grow(w, version, NULL, -1);
}

void upgrade_writer_init_grow(struct upgrade_writer *w, uint32_t version,
			      int (*grow_fn)(struct upgrade_writer *w, size_t extra), int memfd)
{
	memset(w, 0, sizeof(*w));
	w->grow = grow_fn;
	w->memfd = memfd;
	w->rec_off = w->field_off = SIZE_MAX;
	w->version = version;
	(void)wreserve(w, UPGRADE_STATE_HEADER_LEN); /* filled by finish */
}

void upgrade_writer_begin(struct upgrade_writer *w, uint16_t kind)
{
	uint8_t *h;

	if (!w->error && (w->rec_off != SIZE_MAX || w->n_recs == UINT32_MAX))
		w->error = -EINVAL;
	h = wreserve(w, UPGRADE_RECORD_HEADER_LEN);
	if (!h)
		return;
	put16(h, kind);
	w->rec_off = w->b.len - UPGRADE_RECORD_HEADER_LEN;
	w->rec_fields = 0;
	w->last_tag = 0;
}

void upgrade_writer_end(struct upgrade_writer *w)
{
	size_t len;

	if (!w->error && (w->rec_off == SIZE_MAX || w->field_off != SIZE_MAX))
		w->error = -EINVAL;
	if (w->error)
		return;
	len = w->b.len - w->rec_off - UPGRADE_RECORD_HEADER_LEN;
	if (len > UINT32_MAX) {
		w->error = -E2BIG;
		return;
	}
	put16(w->b.data + w->rec_off + 2, w->rec_fields);
	put32(w->b.data + w->rec_off + 4, (uint32_t)len);
	w->rec_off = SIZE_MAX;
	w->n_recs++;
}

/* A field's header; its value follows (len bytes, or patched by chunks_end). */
static uint8_t *field_header(struct upgrade_writer *w, uint16_t tag, uint8_t type, uint32_t len)
{
	uint8_t *h;

	if (!w->error && (w->rec_off == SIZE_MAX || w->field_off != SIZE_MAX ||
			  tag <= w->last_tag || w->rec_fields == UINT16_MAX))
		w->error = -EINVAL;
	h = wreserve(w, UPGRADE_FIELD_HEADER_LEN);
	if (!h)
		return NULL;
	put16(h, tag);
	h[2] = type;
	h[3] = 0;
	put32(h + 4, len);
	w->last_tag = tag;
	w->rec_fields++;
	return h;
}

void upgrade_writer_raw(struct upgrade_writer *w, uint16_t tag, uint8_t type, const void *val,
			uint32_t len)
{
	uint8_t *v;

	if (!field_header(w, tag, type, len))
		return;
	v = wreserve(w, len);
	if (v && len)
		memcpy(v, val, len);
}

void upgrade_writer_u64(struct upgrade_writer *w, uint16_t tag, uint64_t x)
{
	uint8_t v[8];

	put64(v, x);
	upgrade_writer_raw(w, tag, UPGRADE_T_U64, v, sizeof(v));
}

void upgrade_writer_bool(struct upgrade_writer *w, uint16_t tag, bool x)
{
	uint8_t v = x;

	upgrade_writer_raw(w, tag, UPGRADE_T_BOOL, &v, 1);
}

void upgrade_writer_bytes(struct upgrade_writer *w, uint16_t tag, const void *p, size_t n)
{
	if (n > UINT32_MAX) {
		if (!w->error)
			w->error = -E2BIG;
		return;
	}
	upgrade_writer_raw(w, tag, UPGRADE_T_BYTES, p, (uint32_t)n);
}

void upgrade_writer_str(struct upgrade_writer *w, uint16_t tag, const char *s)
{
	size_t n = strlen(s);

	if (n > UINT32_MAX) {
		if (!w->error)
			w->error = -E2BIG;
		return;
	}
	upgrade_writer_raw(w, tag, UPGRADE_T_STR, s, (uint32_t)n);
}

void upgrade_writer_fd(struct upgrade_writer *w, uint16_t tag, int fd)
{
	uint8_t v[4];

	if (fd < 0) {
		if (!w->error)
			w->error = -EBADF;
		return;
	}
	put32(v, (uint32_t)fd);
	upgrade_writer_raw(w, tag, UPGRADE_T_FD, v, sizeof(v));
}

void upgrade_writer_ref(struct upgrade_writer *w, uint16_t tag, uint32_t rec)
{
	uint8_t v[4];

	put32(v, rec);
	upgrade_writer_raw(w, tag, UPGRADE_T_REF, v, sizeof(v));
}

void upgrade_writer_chunks_begin(struct upgrade_writer *w, uint16_t tag)
{
	if (field_header(w, tag, UPGRADE_T_CHUNKS, 0))
		w->field_off = w->b.len - UPGRADE_FIELD_HEADER_LEN;
}

void upgrade_writer_chunk(struct upgrade_writer *w, uint64_t seq, uint8_t stream, const void *p,
			  uint32_t len)
{
	uint8_t *h;

	if (!w->error && w->field_off == SIZE_MAX)
		w->error = -EINVAL;
	h = wreserve(w, UPGRADE_CHUNK_HEADER_LEN + (size_t)len);
	if (!h)
		return;
	put64(h, seq);
	h[8] = stream;
	put32(h + 9, len);
	if (len)
		memcpy(h + UPGRADE_CHUNK_HEADER_LEN, p, len);
}

void upgrade_writer_chunks_end(struct upgrade_writer *w)
{
	size_t len;

	if (!w->error && w->field_off == SIZE_MAX)
		w->error = -EINVAL;
	if (w->error)
		return;
	len = w->b.len - w->field_off - UPGRADE_FIELD_HEADER_LEN;
	if (len > UINT32_MAX) {
		w->error = -E2BIG;
		return;
	}
	put32(w->b.data + w->field_off + 4, (uint32_t)len);
	w->field_off = SIZE_MAX;
}

int upgrade_writer_finish(struct upgrade_writer *w)
{
	uint8_t *h;

	if (!w->error && (w->rec_off != SIZE_MAX || w->field_off != SIZE_MAX))
		w->error = -EINVAL;
	if (w->error)
		return w->error;
	h = w->b.data;
	memcpy(h, UPGRADE_STATE_MAGIC, 8);
	put32(h + 8, w->version);
	put32(h + 12, UPGRADE_STATE_HEADER_LEN);
	put64(h + 16, w->b.len - UPGRADE_STATE_HEADER_LEN);
	put32(h + 24, w->n_recs);
	put32(h + 28, 0);
	return 0;
}

unsigned upgrade_writer_held(struct upgrade_writer *w, unsigned role, int fd, int index)
{
	if (fd < 0)
		return 0;
	upgrade_writer_begin(w, UPGRADE_REC_HELD_FD);
	upgrade_writer_u64(w, UPGRADE_HELD_ROLE, role);
	upgrade_writer_fd(w, UPGRADE_HELD_FD, fd);
	if (index >= 0)
		upgrade_writer_u64(w, UPGRADE_HELD_INDEX, (uint64_t)index);
	upgrade_writer_end(w);
	return 1;
}
