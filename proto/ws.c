/* SPDX-License-Identifier: MIT */
/*
 * RFC 6455 framing: header codec (server and client frames), unmasking, and a
 * message parser for either end that enforces the masking rule of its side, RSV/opcode rules, control-frame rules, size limits
 * and UTF-8 validity of text messages and close reasons.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"
#include "ws.h"

/* Parses a header; without need_mask it succeeds as soon as the length is known. */
static int hdr_parse(const uint8_t *buf, size_t len, struct ws_frame_hdr *ret, bool need_mask)
{
	size_t hl = 2;
	uint64_t plen;

	if (len < 2)
		return -EAGAIN;
	ret->fin = buf[0] & 0x80;
	ret->rsv = (uint8_t)((buf[0] >> 4) & 0x7);
	ret->opcode = buf[0] & 0x0F;
	ret->masked = buf[1] & 0x80;
	plen = buf[1] & 0x7F;

	if (plen == 126) {
		hl += 2;
		if (len < hl)
			return -EAGAIN;
		plen = (uint64_t)buf[2] << 8 | buf[3];
		if (plen < 126)
			return -EBADMSG;
	} else if (plen == 127) {
		hl += 8;
		if (len < hl)
			return -EAGAIN;
		plen = 0;
		for (size_t i = 2; i < 10; i++)
			plen = plen << 8 | buf[i];
		if (plen >> 63 || plen <= 0xFFFF)
			return -EBADMSG;
	}
	memset(ret->mask, 0, 4);
	if (ret->masked) {
		if (need_mask) {
			if (len < hl + 4)
				return -EAGAIN;
			memcpy(ret->mask, buf + hl, 4);
		}
		hl += 4;
	}
	ret->payload_len = plen;
	ret->header_len = hl;
	return (int)hl;
}

int ws_frame_hdr_parse(const uint8_t *buf, size_t len, struct ws_frame_hdr *ret)
{
	return hdr_parse(buf, len, ret, true);
}

void ws_unmask(uint8_t *p, size_t n, const uint8_t mask[4], uint64_t offset)
{
	uint8_t m[8];
	uint64_t m64;
	size_t i = 0;

	/* Rotate the key so that m[0] applies to p[0]. */
	for (size_t k = 0; k < 8; k++)
		m[k] = mask[(offset + k) & 3];
	memcpy(&m64, m, sizeof(m64));

	for (; n - i >= 8; i += 8) {
		uint64_t w;

		memcpy(&w, p + i, sizeof(w));
		w ^= m64;
		memcpy(p + i, &w, sizeof(w));
	}
	for (; i < n; i++)
		p[i] ^= m[i & 7];
}

size_t ws_frame_hdr_encode(uint8_t *dst, enum ws_opcode op, uint64_t payload_len)
{
	dst[0] = (uint8_t)(0x80 | (op & 0x0F));
	if (payload_len < 126) {
		dst[1] = (uint8_t)payload_len;
		return 2;
	}
	if (payload_len <= 0xFFFF) {
		dst[1] = 126;
		dst[2] = (uint8_t)(payload_len >> 8);
		dst[3] = (uint8_t)payload_len;
		return 4;
	}
	dst[1] = 127;
	for (size_t i = 0; i < 8; i++)
		dst[2 + i] = (uint8_t)(payload_len >> (56 - 8 * i));
	return 10;
}

size_t ws_frame_hdr_encode_masked(uint8_t *dst, enum ws_opcode op, uint64_t payload_len,
				  const uint8_t mask[4])
{
	size_t n = ws_frame_hdr_encode(dst, op, payload_len);

	dst[1] |= 0x80;
	memcpy(dst + n, mask, 4);
	return n + 4;
}

uint64_t ws_parser_frame_need(const uint8_t *buf, size_t len)
{
	struct ws_frame_hdr h;

	if (ws_frame_hdr_parse(buf, len, &h) < 0)
		return 0;
	return h.header_len + h.payload_len; /* payload_len < 2^63: no overflow */
}

static bool is_control(uint8_t op)
{
	return op & 0x8;
}

/* RFC 6455 §7.4 plus the IANA-registered 1012-1014; 3000-4999 for libraries and apps. */
static bool close_code_ok(uint16_t c)
{
	return (c >= 1000 && c <= 1003) || (c >= 1007 && c <= 1014) || (c >= 3000 && c <= 4999);
}

/* The rules that the first two header bytes decide. */
static int check_bits(const struct ws_parser *p, uint8_t b0, uint8_t b1)
{
	uint8_t op = b0 & 0x0F;

	if (b0 & 0x70)
		return -EPROTO; /* RSV bits: no extension is ever negotiated */
	switch (op) {
	case WS_OP_CONT:
	case WS_OP_TEXT:
	case WS_OP_BINARY:
	case WS_OP_CLOSE:
	case WS_OP_PING:
	case WS_OP_PONG:
		break;
	default:
		return -EPROTO;
	}
	/* RFC 6455 §5.1: client frames are masked, server frames are not. */
	if (!(b1 & 0x80) != p->client)
		return -EPROTO;
	if (is_control(op))
		return (b0 & 0x80) && (b1 & 0x7F) <= 125 ? 0 : -EPROTO;
	if (op == WS_OP_CONT && !p->_in_message)
		return -EPROTO;
	if (op != WS_OP_CONT && p->_in_message)
		return -EPROTO;
	return 0;
}

/* The size limits, checked as soon as the length field is complete. */
static int check_size(const struct ws_parser *p, const struct ws_frame_hdr *h)
{
	if (is_control(h->opcode))
		return 0;
	if (h->payload_len > p->limits.max_frame_bytes)
		return -EMSGSIZE;
	if (h->opcode == WS_OP_CONT &&
	    (p->_msg_len > p->limits.max_message_bytes ||
	     h->payload_len > p->limits.max_message_bytes - p->_msg_len))
		return -EMSGSIZE;
	if (h->payload_len > p->limits.max_message_bytes)
		return -EMSGSIZE;
	/* The consumed count is returned as an int. */
	if (h->payload_len > (uint64_t)INT_MAX - h->header_len)
		return -EMSGSIZE;
	return 0;
}

static int msg_append(struct ws_parser *p, const uint8_t *d, size_t n)
{
	size_t need = p->_msg_len + n;

	if (need > p->_msg_cap) {
		size_t cap = p->_msg_cap ? p->_msg_cap : 4096;
		uint8_t *m;

		while (cap < need)
			cap = cap > SIZE_MAX / 2 ? need : cap * 2;
		if (cap > p->limits.max_message_bytes && need <= p->limits.max_message_bytes)
			cap = (size_t)p->limits.max_message_bytes;
		m = realloc(p->_msg, cap);
		if (!m)
			return -ENOMEM;
		p->_msg = m;
		p->_msg_cap = cap;
	}
	if (n)
		memcpy(p->_msg + p->_msg_len, d, n);
	p->_msg_len = need;
	return 0;
}

static int on_close(const uint8_t *pl, size_t n, struct ws_event *ev)
{
	uint16_t code;

	ev->type = WS_EV_CLOSE;
	if (n == 0) {
		ev->close_code = 1005;
		ev->data = pl;
		ev->len = 0;
		return 0;
	}
	if (n == 1)
		return -EPROTO;
	code = (uint16_t)(pl[0] << 8 | pl[1]);
	if (!close_code_ok(code))
		return -EPROTO;
	if (!utf8_is_valid(pl + 2, n - 2))
		return -EILSEQ;
	ev->close_code = code;
	ev->data = pl + 2;
	ev->len = n - 2;
	return 0;
}

/*
 * A text, binary or continuation frame's payload (pl, n): a whole message
 * as ev (a view of pl when unfragmented, else of the parser's buffer), or
 * a fragment kept until the last one. Returns 0 or -errno.
 */
static int on_data(struct ws_parser *p, const struct ws_frame_hdr *h, uint8_t *pl, size_t n,
		   struct ws_event *ev)
{
	int r;

	if (h->opcode != WS_OP_CONT && h->fin) {
		/* Unfragmented: hand out a view of the caller's buffer. */
		if (h->opcode == WS_OP_TEXT && !utf8_is_valid(pl, n))
			return -EILSEQ;
		ev->type = WS_EV_MESSAGE;
		ev->binary = h->opcode == WS_OP_BINARY;
		ev->data = pl;
		ev->len = n;
		return 0;
	}
	if (h->opcode != WS_OP_CONT) {
		p->_msg_len = 0;
		r = msg_append(p, pl, n);
		if (r < 0)
			return r;
		p->_in_message = true;
		p->_msg_binary = h->opcode == WS_OP_BINARY;
		return 0;
	}
	r = msg_append(p, pl, n);
	if (r < 0)
		return r;
	if (!h->fin)
		return 0;
	p->_in_message = false;
	if (!p->_msg_binary && !utf8_is_valid(p->_msg, p->_msg_len))
		return -EILSEQ;
	ev->type = WS_EV_MESSAGE;
	ev->binary = p->_msg_binary;
	ev->data = p->_msg;
	ev->len = p->_msg_len;
	/* the view stays valid until the next feed, which starts a new message at 0 */
	p->_msg_len = 0;
	return 0;
}

int ws_parser_feed(struct ws_parser *p, uint8_t *buf, size_t len, struct ws_event *ev)
{
	struct ws_frame_hdr h;
	uint8_t *pl;
	size_t n, total;
	int r;

	memset(ev, 0, sizeof(*ev));
	/* Refuse a bad or oversized frame as early as its header bytes allow. */
	if (len >= 2) {
		r = check_bits(p, buf[0], buf[1]);
		if (r < 0)
			return r;
	}
	r = hdr_parse(buf, len, &h, false);
	if (r == -EAGAIN)
		return 0;
	if (r < 0)
		return -EPROTO; /* non-minimal length encoding */
	r = check_size(p, &h);
	if (r < 0)
		return r;
	r = hdr_parse(buf, len, &h, true);
	if (r < 0)
		return 0;
	if (len - h.header_len < h.payload_len)
		return 0;

	n = (size_t)h.payload_len;
	total = h.header_len + n;
	pl = buf + h.header_len;
	if (h.masked)
		ws_unmask(pl, n, h.mask, 0);

	switch (h.opcode) {
	case WS_OP_PING:
		ev->type = WS_EV_PING;
		ev->data = pl;
		ev->len = n;
		break;
	case WS_OP_PONG:
		ev->type = WS_EV_PONG;
		ev->data = pl;
		ev->len = n;
		break;
	case WS_OP_CLOSE:
		r = on_close(pl, n, ev);
		if (r < 0) {
			memset(ev, 0, sizeof(*ev));
			return r;
		}
		break;
	case WS_OP_TEXT:
	case WS_OP_BINARY:
	case WS_OP_CONT:
		r = on_data(p, &h, pl, n, ev);
		if (r < 0)
			return r;
		break;
	default:
		return -EPROTO; /* unreachable: check_bits() filtered opcodes */
	}
	return (int)total;
}

void ws_parser_done(struct ws_parser *p)
{
	free(p->_msg);
	p->_msg = NULL;
	p->_msg_len = p->_msg_cap = 0;
	p->_in_message = false;
	p->_msg_binary = false;
}

uint16_t ws_close_code_for_error(int r)
{
	switch (r) {
	case -EPROTO:
	case -EBADMSG:
		return WS_CLOSE_PROTOCOL;
	case -EMSGSIZE:
		return WS_CLOSE_TOO_BIG;
	case -EILSEQ:
		return WS_CLOSE_BAD_DATA;
	default:
		return WS_CLOSE_INTERNAL;
	}
}
