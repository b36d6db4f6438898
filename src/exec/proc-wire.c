/* SPDX-License-Identifier: MIT */
/*
 * What a process sends written straight into the output buffer: the
 * notifications (process/output, exited, closed and the proxy's decisions),
 * and the JSON hot path's replies, process/read's result and process/write's
 * status, byte for byte what the general path's jansson objects serialise to
 * (proc-rw.c's read_result, jrpc_dump: compact, members in insertion order).
 * The length is computed first, so a message is one allocation and no copy.
 * tests/unit/test-rpc-fast.c compares them with jansson's.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base64.h"
#include "log.h"
#include "proc-internal.h"

void proc_wire_output(struct proc *p, struct conn *c, uint64_t seq, uint8_t stream,
		      const uint8_t *data, size_t len)
{
	static const char pre[] = "{\"method\":\"process/output\",\"params\":{\"processId\":";
	char mid[96];
	int midlen = snprintf(mid, sizeof(mid), ",\"seq\":%" PRIu64 ",\"stream\":\"%s\",\"chunk\":\"",
			      seq, proc_stream_name(stream));
	size_t b64 = base64_encoded_len(len);
	size_t total = sizeof(pre) - 1 + p->id_json_len + (size_t)midlen + b64 + 3;
	struct outchunk *o;
	uint8_t *w;

	o = conn_alloc_msg(c, total, &w);
	if (!o) {
		log_error_ratelimited("Out of memory sending output of process '%s'", p->id);
		return;
	}
	memcpy(w, pre, sizeof(pre) - 1);
	w += sizeof(pre) - 1;
	memcpy(w, p->id_json, p->id_json_len);
	w += p->id_json_len;
	memcpy(w, mid, (size_t)midlen);
	w += midlen;
	w += base64_encode(data, len, (char *)w);
	memcpy(w, "\"}}", 3);
	conn_commit(c, o);
}

void proc_wire_event(struct proc *p, const char *method, const char *tail)
{
	struct conn *c = proc_conn(p);
	size_t ml = strlen(method), tl = strlen(tail);
	size_t total = 11 + ml + 24 + p->id_json_len + tl + 2;
	struct outchunk *o;
	uint8_t *w;

	if (!c)
		return;
	o = conn_alloc_msg(c, total, &w);
	if (!o)
		return;
	memcpy(w, "{\"method\":\"", 11);
	w += 11;
	memcpy(w, method, ml);
	w += ml;
	memcpy(w, "\",\"params\":{\"processId\":", 24);
	w += 24;
	memcpy(w, p->id_json, p->id_json_len);
	w += p->id_json_len;
	memcpy(w, tail, tl);
	w += tl;
	memcpy(w, "}}", 2);
	conn_commit(c, o);
}

/* The decimal digits of v, written at w (if not NULL). Returns their count. */
static size_t put_u64(uint8_t *w, uint64_t v)
{
	char t[20];
	size_t n = 0;

	do {
		t[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	if (w)
		for (size_t i = 0; i < n; i++)
			w[i] = (uint8_t)t[n - 1 - i];
	return n;
}

static size_t put(uint8_t *w, const char *s, size_t n)
{
	if (w)
		memcpy(w, s, n);
	return n;
}

#define PUT(w, o, lit) ((o) += put((w) ? (w) + (o) : NULL, lit, sizeof(lit) - 1))
#define PUTS(w, o, s) ((o) += put((w) ? (w) + (o) : NULL, s, strlen(s)))

/*
 * The chunks a read returns: from *ret_first, *ret_n of them (read_result's
 * selection: seq > after_seq, and with max_bytes the first always, then
 * while the decoded total stays within it).
 */
static void select_chunks(const struct proc *p, uint64_t after_seq, bool has_max,
			  uint64_t max_bytes, struct proc_chunk **ret_first, size_t *ret_n,
			  struct proc_chunk **ret_last)
{
	struct proc_chunk *ch, *first = NULL, *last = NULL;
	uint64_t total = 0;
	size_t n = 0;

	list_for_each_entry(ch, &p->chunks, link) {
		if (ch->seq <= after_seq)
			continue;
		if (has_max && n > 0 && total + ch->len > max_bytes)
			break;
		if (!first)
			first = ch;
		total += ch->len;
		n++;
		last = ch;
	}
	*ret_first = first;
	*ret_n = n;
	*ret_last = last;
}

/* Writes the result at w, or only measures it with w NULL. Returns its length. */
static size_t read_result_put(const struct proc *p, struct proc_chunk *first, size_t n,
			      uint64_t next_seq, uint8_t *w)
{
	struct proc_chunk *ch = first;
	size_t o = 0;
	char code[16];

	PUT(w, o, "{\"chunks\":[");
	for (size_t i = 0; i < n; i++, ch = list_entry(ch->link.next, struct proc_chunk, link)) {
		if (i)
			PUT(w, o, ",");
		PUT(w, o, "{\"seq\":");
		o += put_u64(w ? w + o : NULL, ch->seq);
		PUT(w, o, ",\"stream\":\"");
		PUTS(w, o, proc_stream_name(ch->stream));
		PUT(w, o, "\",\"chunk\":\"");
		if (w)
			o += base64_encode(ch->data, ch->len, (char *)w + o);
		else
			o += base64_encoded_len(ch->len);
		PUT(w, o, "\"}");
	}
	PUT(w, o, "],\"nextSeq\":");
	o += put_u64(w ? w + o : NULL, next_seq);
	PUT(w, o, ",\"exited\":");
	PUTS(w, o, p->exited ? "true" : "false");
	PUT(w, o, ",\"exitCode\":");
	if (p->exited) {
		snprintf(code, sizeof(code), "%d", p->exit_code);
		PUTS(w, o, code);
	} else {
		PUT(w, o, "null");
	}
	PUT(w, o, ",\"closed\":");
	PUTS(w, o, p->closed ? "true" : "false");
	PUT(w, o, ",\"failure\":null,\"sandboxDenied\":");
	PUTS(w, o, p->sandbox_denied ? "true" : "false");
	if (p->has_timeout) {
		PUT(w, o, ",\"timedOut\":");
		PUTS(w, o, p->timed_out ? "true" : "false");
	}
	PUT(w, o, "}");
	return o;
}

void proc_wire_read_reply(struct proc *p, struct conn *c, json_t *id,
			  const struct jrpc_fast_req *r, uint64_t after_seq, bool has_max,
			  uint64_t max_bytes)
{
	struct proc_chunk *first, *last;
	struct outchunk *o;
	uint64_t next_seq;
	size_t n, len;
	uint8_t *w;

	select_chunks(p, after_seq, has_max, max_bytes, &first, &n, &last);
	next_seq = has_max && last ? last->seq + 1 : p->next_seq;
	len = read_result_put(p, first, n, next_seq, NULL);
	o = r ? rpc_fast_reply_begin(c, r, len, &w) : rpc_reply_begin(c, id, len, &w);
	if (!o)
		return;
	read_result_put(p, first, n, next_seq, w);
	conn_commit(c, o);
}

void proc_wire_status_reply(struct conn *c, json_t *id, const struct jrpc_fast_req *r,
			    const char *status)
{
	size_t sl = strlen(status), len = sizeof("{\"status\":\"\"}") - 1 + sl;
	struct outchunk *o;
	uint8_t *w;

	o = r ? rpc_fast_reply_begin(c, r, len, &w) : rpc_reply_begin(c, id, len, &w);
	if (!o)
		return;
	memcpy(w, "{\"status\":\"", 11);
	memcpy(w + 11, status, sl);
	memcpy(w + 11 + sl, "\"}", 2);
	conn_commit(c, o);
}

void proc_wire_literal_reply(struct conn *c, const struct jrpc_fast_req *r,
			     const char *result)
{
	size_t len = strlen(result);
	struct outchunk *o;
	uint8_t *w;

	o = rpc_fast_reply_begin(c, r, len, &w);
	if (!o)
		return;
	memcpy(w, result, len);
	conn_commit(c, o);
}
