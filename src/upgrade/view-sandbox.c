/* SPDX-License-Identifier: MIT */
/*
 * The state blob's sandbox part read into the view (view.h; docs/UPGRADE.md
 * "Sandboxed processes"): the synthesized mount points of the registry and
 * what each sandboxed process's plan puts back when it closes, checked
 * against each other so that, after the upgrade, the last process using a
 * directory still removes it and none is removed while another uses it.
 * No I/O.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "view.h"

#define bad upgrade_view_fail

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* An absolute path with a last component (synth.c makes and removes it under its parent). */
static bool synth_path_ok(const uint8_t *p, uint32_t len)
{
	return len >= 2 && p[0] == '/' && p[len - 1] != '/' && !memchr(p, 0, len);
}

int upgrade_view_read_synth(const struct upgrade_state *st, uint32_t rec, struct upgrade_view *v,
			    char *err, size_t err_size)
{
	const struct upgrade_field *path = upgrade_rec_field(st, rec, UPGRADE_SYNTH_PATH);
	struct upgrade_view_synth *e;

	if (!v->synth) {
		v->synth = calloc(st->count[UPGRADE_REC_SYNTH], sizeof(*v->synth));
		if (!v->synth)
			return -ENOMEM;
	}
	if (!synth_path_ok(path->val, path->len))
		return bad(err, err_size, "record %u: a mount point that is not an absolute path "
			   "with a name", rec);
	e = &v->synth[v->n_synth++];
	e->path = path->val;
	e->path_len = path->len;
	e->refs = (uint32_t)upgrade_rec_u64(st, rec, UPGRADE_SYNTH_REFS, 1);
	e->fd = (int)upgrade_rec_num(st, rec, UPGRADE_SYNTH_FD);
	return 0;
}

int upgrade_view_proc_sandbox(const struct upgrade_state *st, uint32_t rec,
			      struct upgrade_view_proc *p, char *err, size_t err_size)
{
	const struct upgrade_field *f = upgrade_rec_field(st, rec, UPGRADE_PROC_SYNTH);
	size_t off = 0;

	p->synth = f;
	p->filter = (unsigned)upgrade_rec_u64(st, rec, UPGRADE_PROC_FILTER, 0);
	p->ev_denied = upgrade_rec_u64(st, rec, UPGRADE_PROC_EV_DENIED, 0);
	/* A plan is a sandboxed process's, and is freed (its mount points put back) at close. */
	if ((f || p->filter) && (!p->sandboxed || p->closed))
		return bad(err, err_size, "record %u: a sandbox plan on a process %s", rec,
			   p->sandboxed ? "closed" : "not sandboxed");
	/* Evidence is tracked until the exit is published; QUIESCE waits for a reaped one. */
	if (p->ev_denied && (!p->sandboxed || p->reaped))
		return bad(err, err_size, "record %u: denial evidence on a process %s", rec,
			   p->sandboxed ? "reaped" : "not sandboxed");
	while (f && off < f->len) {
		uint32_t len;

		if (f->len - off < 4)
			return bad(err, err_size, "record %u: synth: entry %u is cut short", rec,
				   p->n_synth);
		len = le32(f->val + off);
		off += 4;
		if (len > f->len - off || !synth_path_ok(f->val + off, len))
			return bad(err, err_size,
				   "record %u: synth: entry %u is not an absolute path", rec,
				   p->n_synth);
		off += len;
		p->n_synth++;
	}
	return 0;
}

struct synth_key {
	const uint8_t *p;
	uint32_t len;
	uint32_t index;             /* into v->synth */
};

static int cmp_synth(const void *a, const void *b)
{
	const struct synth_key *x = a, *y = b;
	int c = memcmp(x->p, y->p, MIN(x->len, y->len));

	return c ? c : x->len < y->len ? -1 : x->len > y->len;
}

/* Each process's paths against the sorted records: *users counts per record. */
#define MARK 0x80000000u /* named by the process being counted */

/*
 * Each path of p against the sorted records: users[] counts per record.
 * mark: count and mark each (a second mark is a path named twice by one
 * plan, which synth.c would put back twice for one reference); else clear
 * the marks p left. The view walks the field twice, so it stays linear.
 */
static int walk_users(const struct upgrade_view *v, const struct upgrade_view_proc *p,
		      const struct synth_key *keys, uint32_t *users, bool mark, char *err,
		      size_t err_size)
{
	const struct upgrade_field *f = p->synth;
	size_t off = 0;

	while (f && off < f->len) {
		struct synth_key k = { f->val + off + 4, le32(f->val + off), 0 };
		const struct synth_key *hit;

		off += 4 + k.len;
		hit = v->n_synth ? bsearch(&k, keys, v->n_synth, sizeof(*keys), cmp_synth) : NULL;
		if (!hit)
			return bad(err, err_size,
				   "process %d: mount point %.*s is not in the registry", p->pid,
				   (int)MIN(k.len, 200u), (const char *)k.p);
		if (!mark)
			users[hit->index] &= ~MARK;
		else if (users[hit->index] & MARK)
			return bad(err, err_size, "process %d: mount point %.*s named twice",
				   p->pid, (int)MIN(k.len, 200u), (const char *)k.p);
		else
			users[hit->index] = (users[hit->index] + 1) | MARK;
	}
	return 0;
}

int upgrade_view_check_synth(const struct upgrade_state *st, const struct upgrade_view *v,
			     char *err, size_t err_size)
{
	struct synth_key *keys;
	uint32_t *users;
	int r = 0;

	(void)st;
	keys = calloc(v->n_synth ? v->n_synth : 1, sizeof(*keys));
	users = calloc(v->n_synth ? v->n_synth : 1, sizeof(*users));
	if (!keys || !users) {
		r = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < v->n_synth; i++)
		keys[i] = (struct synth_key){ v->synth[i].path, v->synth[i].path_len, i };
	if (v->n_synth > 1)
		qsort(keys, v->n_synth, sizeof(*keys), cmp_synth);
	for (uint32_t i = 1; i < v->n_synth; i++)
		if (cmp_synth(&keys[i - 1], &keys[i]) == 0) {
			r = bad(err, err_size, "mount point %.*s is in the registry twice",
				(int)MIN(keys[i].len, 200u), (const char *)keys[i].p);
			goto out;
		}
	/* A count stays under MARK: a blob has at most 2^24 records. */
	for (uint32_t i = 0; i < v->n_procs && r >= 0; i++) {
		r = walk_users(v, &v->procs[i], keys, users, true, err, err_size);
		if (r >= 0)
			r = walk_users(v, &v->procs[i], keys, users, false, err, err_size);
	}
	for (uint32_t i = 0; i < v->n_synth && r >= 0; i++)
		if (users[i] != v->synth[i].refs)
			r = bad(err, err_size,
				"mount point %.*s: %u users in the registry, %u processes name it",
				(int)MIN(v->synth[i].path_len, 200u),
				(const char *)v->synth[i].path, v->synth[i].refs, users[i]);
out:
	free(keys);
	free(users);
	return r;
}
