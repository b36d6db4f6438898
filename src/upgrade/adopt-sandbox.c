/* SPDX-License-Identifier: MIT */
/*
 * Sandboxed processes across a live upgrade (docs/UPGRADE.md "Sandboxed
 * processes"). What a plan holds after the spawn that matters at close is
 * the synthesized mount points it puts back (sandbox/synth.c's registry,
 * whose entries hold a shared flock through an fd) and, for its denial
 * evidence, the seccomp program it runs under. The registry travels whole
 * (path, users, fd: the flock is never released in between), each process
 * its paths and its program's id; the new binary makes the registry again
 * around the fds and gives each process a plan of just that, so that the
 * last one to close still removes the directory. Its evidence tree is
 * tracked again by the new binary's sources (its audit session, its cgroup
 * leaf for the BPF tracer, its filter), with the decisive denials seen
 * before carried and the tree marked incomplete for the hand-over's gap.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conn.h"
#include "evidence-ring.h"
#include "evidence.h"
#include "macro.h"
#include "mitm.h"
#include "netguard.h"
#include "proc.h"
#include "sandbox-handover.h"
#include "session.h"
#include "state.h"
#include "upgrade-internal.h"
#include "view.h"

struct put_ctx {
	struct upgrade_writer *w;
	struct upgrade_collected *c;
};

static int put_synth(void *ctx, const char *path, unsigned refs, int fd)
{
	struct put_ctx *x = ctx;

	upgrade_writer_begin(x->w, UPGRADE_REC_SYNTH);
	upgrade_writer_str(x->w, UPGRADE_SYNTH_PATH, path);
	upgrade_writer_u64(x->w, UPGRADE_SYNTH_REFS, refs);
	upgrade_writer_fd(x->w, UPGRADE_SYNTH_FD, fd);
	upgrade_writer_end(x->w);
	x->c->fds++;
	return 0;
}

void upgrade_put_synth(struct upgrade_writer *w, struct upgrade_collected *c)
{
	struct put_ctx x = { w, c };

	(void)sandbox_synth_each(put_synth, &x);
}

void upgrade_put_proc_sandbox(struct upgrade_writer *w, const struct proc *p)
{
	const struct sandbox_features *f = &p->sess->srv->sandbox;
	const char *const *paths;
	size_t n = sandbox_plan_synth(p->plan, &paths), len = 0, off = 0;
	enum sandbox_filter_id filter = sandbox_plan_filter(f, p->plan);
	/* A reaped one's exit is being published (QUIESCE waits for it): not carried. */
	uint64_t denied = p->reaped ? 0 : sandbox_evidence_decisive(p->ev_wait.tree);
	uint8_t *buf;

	for (size_t i = 0; i < n; i++)
		len += 4 + strlen(paths[i]);
	if (n) {
		buf = malloc(len);
		if (!buf) {
			w->error = w->error ? w->error : -ENOMEM;
			return;
		}
		for (size_t i = 0; i < n; i++) {
			uint32_t l = (uint32_t)strlen(paths[i]);

			for (int j = 0; j < 4; j++)
				buf[off + (size_t)j] = (uint8_t)(l >> (8 * j));
			memcpy(buf + off + 4, paths[i], l);
			off += 4 + l;
		}
		upgrade_writer_bytes(w, UPGRADE_PROC_SYNTH, buf, len);
		free(buf);
	}
	if (filter != SANDBOX_FILTER_NONE)
		upgrade_writer_u64(w, UPGRADE_PROC_FILTER, filter);
	if (denied)
		upgrade_writer_u64(w, UPGRADE_PROC_EV_DENIED, MIN(denied, (uint64_t)UINT32_MAX));
}

const char *upgrade_sandbox_blocker(const struct server *s)
{
	const struct session *ss;
	const struct proc *p;
	uint64_t named = 0;

	list_for_each_entry(ss, &s->sessions, link)
		list_for_each_entry(p, &ss->procs_list, link) {
			const char *const *paths;

			named += sandbox_plan_synth(p->plan, &paths);
		}
	/*
	 * Every user of a mount point must travel with it: a plan still being
	 * built or spawned (a start, a sandboxed fs request) is a request in
	 * flight, which QUIESCE waits for before it asks this.
	 */
	if (named != sandbox_synth_refs())
		return "a sandbox mount point used by something other than a process";
	return NULL;
}

int upgrade_adopt_synth(const struct upgrade_view *v, char *err, size_t err_size)
{
	int first = 0;

	for (uint32_t i = 0; i < v->n_synth; i++) {
		const struct upgrade_view_synth *e = &v->synth[i];
		char *path = strndup((const char *)e->path, e->path_len);
		int r = path ? sandbox_synth_adopt(path, e->refs, e->fd) : -ENOMEM;

		if (r < 0) {
			/*
			 * Its lock goes with the fd: the directory stays (another server may
			 * use it), and its processes' puts find no entry (synth.c: a no-op).
			 */
			close(e->fd);
			if (!first) {
				first = r;
				snprintf(err, err_size, "mount point %s: %s", path ? path : "?",
					 strerror(-r));
			}
		}
		free(path);
	}
	return first;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/*
 * The leaf p<N> (below the base or the listener guard's cgroup), for the BPF
 * tracer's watch by cgroup id; -1 without one.
 */
static int leaf_fd(const struct server *s, const struct upgrade_view_proc *vp)
{
	int parent = s->cgroups.base_fd;
	char name[32];

	if (vp->cg_guard)
		parent = s->guard ? netguard_cgroup_fd(s->guard) : -1;
	if (!vp->has_cg || parent < 0)
		return -1;
	snprintf(name, sizeof(name), "p%llu", (unsigned long long)vp->cg_num);
	return openat(parent, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

int upgrade_adopt_proc_sandbox(struct server *s, struct proc *p,
			       const struct upgrade_view_proc *vp)
{
	const struct sock_fprog *prog = sandbox_filter_of(&s->sandbox, vp->filter);
	const struct upgrade_field *f = vp->synth;
	size_t off = 0;
	int r, cg;

	if (f || vp->filter) {
		/*
		 * Each path is a reference the registry counts: it lands in the plan
		 * (put back at close, or when a failed adoption frees the process) or
		 * is put back at once; none is dropped on the way.
		 */
		r = sandbox_plan_adopt(prog, &p->plan);
		/* The view checked the framing, and that each path is a registry entry's. */
		while (f && off + 4 <= f->len) {
			uint32_t len = le32(f->val + off);
			const char *path = (const char *)f->val + off + 4;
			int q = 0;

			if (p->plan)
				q = sandbox_plan_adopt_synth(p->plan, path, len);
			else
				sandbox_synth_put_named(path, len);
			r = r < 0 ? r : q;
			off += 4 + len;
		}
		if (r < 0)
			return r;
	}
	/* Tracked until its exit is published; a reaped one is not handed over before that. */
	if (!vp->sandboxed || vp->reaped)
		return 0;
	p->ev_wait.tree = exec_evidence_track(p->pid);
	if (!p->ev_wait.tree)
		return 0; /* no source in this binary: the reference heuristic decides */
	sandbox_evidence_set_filter(p->ev_wait.tree, prog);
	cg = leaf_fd(s, vp);
	exec_evidence_adopt_cgroup(p->ev_wait.tree, cg >= 0 ? exec_evidence_watch(cg) : 0);
	if (cg >= 0)
		close(cg);
	upgrade_evidence_carry(p->ev_wait.tree, vp);
	return 0;
}

void upgrade_sandbox_before_exec(struct server *s)
{
	/*
	 * Credential masking's CA (src/netproxy/mitm.h): its key lives only in
	 * memory, its certificate and bundle in a private directory removed with
	 * the server, which an execve would leave behind. No process told to
	 * trust it can be running here (one with a proxy keeps the dry run), so
	 * it goes now, files included; the new binary, or this one if the execve
	 * fails, makes another on first use, as at a start.
	 */
	netproxy_mitm_free(s->mitm);
	s->mitm = NULL;
}
