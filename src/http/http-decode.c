/* SPDX-License-Identifier: MIT */
/*
 * gzip and zstd response bodies for http/request (http-decode.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <zlib.h>
#include <zstd.h>

#include "http-decode.h"

struct http_decoder {
	enum http_coding coding;
	z_stream z;
	ZSTD_DStream *zs;
	bool seen;  /* a byte of input came */
	bool ended; /* the member or frame ended: later bytes are ignored */
};

struct http_decoder *http_decoder_new(enum http_coding c)
{
	struct http_decoder *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->coding = c;
	if (c == HTTP_CODING_GZIP) {
		/* 16 + MAX_WBITS: a gzip header and trailer, nothing else. */
		if (inflateInit2(&d->z, 16 + MAX_WBITS) != Z_OK) {
			free(d);
			return NULL;
		}
		return d;
	}
	d->zs = ZSTD_createDStream();
	if (!d->zs ||
	    ZSTD_isError(ZSTD_DCtx_setParameter(d->zs, ZSTD_d_windowLogMax, HTTP_DECODE_ZSTD_WINDOW_LOG))) {
		ZSTD_freeDStream(d->zs);
		free(d);
		return NULL;
	}
	return d;
}

ssize_t http_decoder_run(struct http_decoder *d, const uint8_t **in, size_t *in_len, uint8_t *out,
			 size_t cap)
{
	size_t produced;

	if (*in_len > 0)
		d->seen = true;
	if (d->ended) {
		*in += *in_len;
		*in_len = 0;
		return 0;
	}
	if (d->coding == HTTP_CODING_GZIP) {
		int q;

		d->z.next_in = (Bytef *)(uintptr_t)*in;
		d->z.avail_in = *in_len > UINT32_MAX ? UINT32_MAX : (uInt)*in_len;
		d->z.next_out = out;
		d->z.avail_out = cap > UINT32_MAX ? UINT32_MAX : (uInt)cap;
		q = inflate(&d->z, Z_NO_FLUSH);
		if (q != Z_OK && q != Z_STREAM_END && q != Z_BUF_ERROR)
			return -EBADMSG;
		produced = cap - d->z.avail_out;
		*in_len -= (size_t)(d->z.next_in - *in);
		*in = d->z.next_in;
		if (q == Z_STREAM_END)
			d->ended = true;
		return (ssize_t)produced;
	}
	{
		ZSTD_inBuffer ib = { *in, *in_len, 0 };
		ZSTD_outBuffer ob = { out, cap, 0 };
		size_t q = ZSTD_decompressStream(d->zs, &ob, &ib);

		if (ZSTD_isError(q))
			return -EBADMSG;
		*in += ib.pos;
		*in_len -= ib.pos;
		if (q == 0)
			d->ended = true; /* a frame is complete and flushed */
		return (ssize_t)ob.pos;
	}
}

int http_decoder_finish(const struct http_decoder *d)
{
	return d->ended || !d->seen ? 0 : -EBADMSG;
}

void http_decoder_free(struct http_decoder *d)
{
	if (!d)
		return;
	if (d->coding == HTTP_CODING_GZIP)
		inflateEnd(&d->z);
	else
		ZSTD_freeDStream(d->zs);
	free(d);
}
