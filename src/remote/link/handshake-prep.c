/* SPDX-License-Identifier: MIT */
/*
 * The executor's msg2 off the setup path (RELAY.md §4.2, §6): its tokens
 * (two KEM encapsulations, the ephemeral keys, two DHs: most of the
 * executor's handshake CPU) run on the worker pool while the registry
 * validates msg1's key, instead of after its answer; nothing is sent before
 * the verdict (stream.c seals the payload and sends msg2 once both are in).
 * The ephemeral keypair itself is generated ahead, one at a time, on the
 * worker pool too: each serves one handshake and is wiped when it is taken.
 *
 * Jobs touch only their own memory (noise_handshake_prepare's contract); a
 * stream or a mode that ends first leaves its job orphaned, and the job's
 * done() frees what it holds.
 */
#include <errno.h>
#include <stdlib.h>

#include <sodium.h>

#include "log.h"
#include "remote-internal.h"
#include "server.h"
#include "worker.h"

struct stream_prep {
	struct work work;
	struct remote_stream *s; /* NULL once the stream is gone */
	struct noise_handshake *hs;
};

struct remote_spare {
	struct work work;
	struct remote *r; /* NULL once the mode stopped */
	bool ready;
	int err;
	struct noise_keypair kp;
};

/* ---- the ephemeral keypair generated ahead ---- */

static void spare_free(struct remote_spare *sp)
{
	noise_keypair_wipe(&sp->kp);
	free(sp);
}

static void spare_run(struct work *w)
{
	struct remote_spare *sp = container_of(w, struct remote_spare, work);

	sp->err = noise_keypair_generate(&sp->kp);
}

static void spare_done(struct work *w)
{
	struct remote_spare *sp = container_of(w, struct remote_spare, work);

	if (!sp->r || sp->err < 0) {
		if (sp->r)
			sp->r->spare = NULL; /* the next handshake generates its own, then refills */
		spare_free(sp);
		return;
	}
	sp->ready = true;
}

void remote_spare_fill(struct remote *r)
{
	struct remote_spare *sp;

	if (r->spare || !r->srv->workers)
		return;
	sp = calloc(1, sizeof(*sp));
	if (!sp)
		return;
	sp->r = r;
	sp->work.run = spare_run;
	sp->work.done = spare_done;
	r->spare = sp;
	worker_submit(r->srv, &sp->work);
}

void remote_spare_drop(struct remote *r)
{
	struct remote_spare *sp = r->spare;

	if (!sp)
		return;
	r->spare = NULL;
	if (sp->ready)
		spare_free(sp);
	else
		sp->r = NULL; /* spare_done() frees it */
}

/* The ready keypair into hs (moved, wiped here). */
static void spare_take(struct remote *r, struct noise_handshake *hs, const char *id)
{
	struct remote_spare *sp = r->spare;

	if (sp && sp->ready) {
		r->spare = NULL;
		/* On failure the e token makes its own. */
		if (noise_handshake_use_ephemeral(hs, &sp->kp) == 0)
			log_debug("Relay stream %s: ephemeral keys generated ahead", id);
		spare_free(sp);
	}
	/* The next one is started once this handshake is through (remote_spare_fill() from
	 * stream.c): now it would compete for the CPU with msg2's preparation. */
}

/* ---- msg2's tokens during the validation ---- */

static void prep_run(struct work *w)
{
	struct stream_prep *p = container_of(w, struct stream_prep, work);

	/* A failure leaves hs failed: the write after the verdict then fails as it would have. */
	(void)noise_handshake_prepare(p->hs);
}

static void prep_done(struct work *w)
{
	struct stream_prep *p = container_of(w, struct stream_prep, work);
	struct remote_stream *s = p->s;

	if (!s) {
		noise_handshake_free(p->hs);
		free(p);
		return;
	}
	s->hs = p->hs;
	s->prep = NULL;
	free(p);
	if (s->verdict != STREAM_VERDICT_NONE)
		remote_stream_finish_handshake(s);
}

void remote_prep_msg2(struct remote_stream *s)
{
	struct stream_prep *p;

	spare_take(s->r, s->hs, s->id);
	if (!s->r->srv->workers)
		return; /* msg2 is then written whole after the verdict */
	p = calloc(1, sizeof(*p));
	if (!p)
		return;
	p->s = s;
	p->hs = TAKE_PTR(s->hs);
	p->work.run = prep_run;
	p->work.done = prep_done;
	s->prep = p;
	worker_submit(s->r->srv, &p->work);
}

void remote_prep_orphan(struct remote_stream *s)
{
	if (s->prep)
		s->prep->s = NULL;
	s->prep = NULL;
}
