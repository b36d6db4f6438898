/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the live upgrade's state blob (src/upgrade/state.h). Whatever
 * parses re-encodes to the very same bytes (the encoding is canonical), its
 * fds are ascending and distinct, its references point backwards at the
 * right kind, and every CHUNKS field steps to its end; the view's cross-record
 * rules (view.h) refuse with a reason or give a consistent view. The input is parsed as
 * is, then once more with the header's body length made to fit, so that
 * mutations of the records are reached past the length check.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "state.h"
#include "view.h"

static void check_state(const struct upgrade_state *st, const uint8_t *data, size_t size)
{
	struct upgrade_writer w;

	FUZZ_CHECK(st->n_recs >= 1 && st->recs[0].kind == UPGRADE_REC_SERVER);
	for (uint32_t i = 1; i < st->n_fds; i++)
		FUZZ_CHECK(st->fds[i - 1] < st->fds[i]);
	upgrade_writer_init(&w, st->version);
	for (uint32_t i = 0; i < st->n_recs; i++) {
		const struct upgrade_rec *r = &st->recs[i];

		upgrade_writer_begin(&w, r->kind);
		for (uint32_t j = 0; j < r->n_fields; j++) {
			const struct upgrade_field *f = &st->fields[r->first + j];

			FUZZ_CHECK(upgrade_rec_field(st, i, f->tag) == f);
			if (f->type == UPGRADE_T_REF)
				FUZZ_CHECK(upgrade_rec_num(st, i, f->tag) < (int64_t)i);
			if (f->type == UPGRADE_T_CHUNKS) {
				struct upgrade_chunk c;
				uint64_t last = 0;
				size_t off = 0;

				while (upgrade_chunks_next(f, &off, &c)) {
					FUZZ_CHECK(c.seq > last && c.len > 0);
					FUZZ_CHECK(c.stream < _UPGRADE_STREAM_MAX);
					last = c.seq;
				}
				FUZZ_CHECK(off == f->len);
			}
			upgrade_writer_raw(&w, f->tag, f->type, f->val, f->len);
		}
		upgrade_writer_end(&w);
	}
	FUZZ_CHECK(upgrade_writer_finish(&w) == 0);
	FUZZ_CHECK(w.b.len == size && memcmp(w.b.data, data, size) == 0);
	buf_done(&w.b);
}

static void run(const uint8_t *data, size_t size)
{
	struct upgrade_state st;
	struct upgrade_view v;
	char err[256];
	int r;

	r = upgrade_state_parse(data, size, NULL, &st, err, sizeof(err));
	if (r < 0) {
		FUZZ_CHECK(r == -EBADMSG || r == -EPROTONOSUPPORT || r == -E2BIG);
		FUZZ_CHECK(err[0] != '\0');
		return;
	}
	check_state(&st, data, size);
	/* The cross-record rules: a refusal says why; an acceptance is consistent. */
	r = upgrade_view_build(&st, &v, err, sizeof(err));
	if (r < 0) {
		FUZZ_CHECK(r == -EBADMSG && err[0] != '\0');
	} else {
		uint32_t procs = 0;

		FUZZ_CHECK(v.n_sessions == st.count[UPGRADE_REC_SESSION]);
		FUZZ_CHECK(v.n_procs == st.count[UPGRADE_REC_PROC]);
		for (uint32_t i = 0; i < v.n_sessions; i++) {
			procs += v.sessions[i].n_procs;
			FUZZ_CHECK(v.sessions[i].conn < (int)v.n_conns);
			FUZZ_CHECK(v.sessions[i].conn < 0 || v.conns[v.sessions[i].conn].session == (int)i);
		}
		FUZZ_CHECK(procs == v.n_procs);
		for (uint32_t i = 0; i < v.n_procs; i++) {
			FUZZ_CHECK(v.procs[i].session < v.n_sessions);
			FUZZ_CHECK(v.procs[i].retained_bytes <= 1024 * 1024);
			FUZZ_CHECK(!v.procs[i].exited || v.procs[i].reaped);
		}
		upgrade_view_done(&v);
	}
	upgrade_state_done(&st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy;
	uint64_t body;

	if (size > 1 << 20)
		return 0;
	run(data, size);
	if (size < UPGRADE_STATE_HEADER_LEN)
		return 0;
	copy = malloc(size);
	FUZZ_CHECK(copy);
	memcpy(copy, data, size);
	body = size - UPGRADE_STATE_HEADER_LEN;
	for (int i = 0; i < 8; i++)
		copy[16 + i] = (uint8_t)(body >> (8 * i));
	run(copy, size);
	free(copy);
	return 0;
}
