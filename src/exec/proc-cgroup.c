/* SPDX-License-Identifier: MIT */
/*
 * A managed process's own cgroup (sandbox/cgroup.h): process/start's
 * `limits` (README.md "Protocol extensions"), the leaf made before the
 * clone, the whole-tree kill, the memory limit's OOM kills on
 * process/exited, and the leaf's removal once empty.
 *
 * Removal: when the process is closed its leaf is usually empty already:
 * IORING_OP_UNLINKAT (probed; else rmdir, ~20 us). If something is still
 * running in it (a background child, or killed processes still exiting),
 * the leaf's cgroup.events is polled on the ring (kernfs wakes POLLPRI when
 * "populated" changes) and the directory goes when it reads "populated 0".
 * That costs one fd per such leaf, only while it is populated.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "exec.h"
#include "log.h"
#include "params.h"
#include "proc.h"
#include "sandbox.h"
#include "session.h"

#define ERRSZ 512

/* The `limits` members and their bounds. */
static const struct {
	const char *field, *flag;
	uint64_t min, max;
} limit_info[_SANDBOX_CG_KIND_MAX] = {
	[SANDBOX_CG_PIDS] = { "pidsMax", "--process-pids-max", 1, 4194304 },
	[SANDBOX_CG_MEMORY] = { "memoryMaxBytes", "--process-memory-max", 1u << 20, 1ull << 62 },
	[SANDBOX_CG_CPU] = { "cpuMaxMillicpu", "--process-cpu-max", 10, 4096000 },
};

static uint64_t *limit_of(struct sandbox_cg_limits *l, int k)
{
	return k == SANDBOX_CG_PIDS ? &l->pids_max : k == SANDBOX_CG_MEMORY ? &l->memory_max :
									   &l->cpu_milli;
}

int exec_decode_limits(const struct server *s, json_t *limits, struct sandbox_cg_limits *ret,
		       char *err)
{
	static const struct pfield fields[] = {
		{ "pidsMax", P_U64, false, NULL },
		{ "memoryMaxBytes", P_U64, false, NULL },
		{ "cpuMaxMillicpu", P_U64, false, NULL },
	};
	json_t *f[ELEMENTSOF(fields)];
	struct sandbox_cg_limits ceiling = s->cfg.process_limits;

	*ret = ceiling;
	if (!limits)
		return 0;
	/* A misspelt member would silently mean "no limit": refused, in serde's deny_unknown_fields words. */
	if (json_is_object(limits)) {
		const char *key;
		json_t *v;

		json_object_foreach(limits, key, v) {
			size_t i = 0;

			while (i < ELEMENTSOF(fields) && strcmp(key, fields[i].name) != 0)
				i++;
			if (i == ELEMENTSOF(fields)) {
				snprintf(err, ERRSZ, "unknown field `%.64s`, expected one of `pidsMax`, "
					 "`memoryMaxBytes`, `cpuMaxMillicpu`", key);
				return -EINVAL;
			}
		}
	}
	if (params_decode_nested(limits, "ProcessLimits", fields, ELEMENTSOF(fields), f, err, ERRSZ) < 0)
		return -EINVAL;
	for (int k = 0; k < _SANDBOX_CG_KIND_MAX; k++) {
		uint64_t v = params_u64(f[k], 0), top = *limit_of(&ceiling, k);

		if (!f[k])
			continue;
		if (v < limit_info[k].min || v > limit_info[k].max) {
			snprintf(err, ERRSZ,
				 "invalid value: integer `%" PRIu64 "`, expected limits.%s between %" PRIu64
				 " and %" PRIu64, v, limit_info[k].field, limit_info[k].min,
				 limit_info[k].max);
			return -EINVAL;
		}
		if (top && v > top) {
			snprintf(err, ERRSZ,
				 "limits.%s %" PRIu64 " is above the server's ceiling %" PRIu64 " (%s)",
				 limit_info[k].field, v, top, limit_info[k].flag);
			return -EINVAL;
		}
		if (s->cgroups.where[k] == SANDBOX_CG_NONE) {
			snprintf(err, ERRSZ,
				 "limits.%s cannot be enforced: no %s controller is available to uexec on "
				 "this host (see its start-up log)", limit_info[k].field,
				 sandbox_cg_kind_name(k));
			return -EINVAL;
		}
		*limit_of(ret, k) = v;
	}
	return 0;
}

/* ---- leaves kept for reuse ---- */

/*
 * A process without limits and without a sandbox gets a leaf that an earlier
 * such process left empty, when one is free: no mkdir, no rmdir, and the
 * clone lands in a cgroup that already has its css_set (a fresh cgroup cost
 * the clone ~0.1 ms and delayed the reply, bench/README.md "Per-process
 * cgroups"). A slot is a leaf's name only (no fd is held: a running process
 * costs the fds it always did): the emptiness check at release is an open
 * and a read of its cgroup.events, and the directory is opened again for the
 * clone. At most CG_SLOTS_MAX slots, at most CG_FREE_MAX of them empty and
 * waiting, each for CG_FREE_MS at most. A leaf found still populated at
 * release, or beyond those bounds, leaves its slot and is removed as any
 * other once empty.
 */
#define CG_SLOTS_MAX 64
#define CG_FREE_MAX 8
#define CG_FREE_MS 1000 /* an empty leaf not reused for this long is removed */

struct cg_slot {
	bool used;   /* the slot holds a leaf */
	bool busy;   /* a process has it */
	bool killed; /* cgroup.kill was written: the kernel kills what is cloned into it later too */
	char name[24];
	uint64_t free_since; /* CLOCK_MONOTONIC ms, while free */
};

/*
 * Module state: the leaves of the one server in the process, and the timer
 * that removes those left unused (the base's purge at exit takes the rest).
 */
static struct cg_slot slots[CG_SLOTS_MAX];
static unsigned n_free;
static struct uring_timer expiry;
static struct server *expiry_srv;

static uint64_t now_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static struct cg_slot *slot_by_name(const struct sandbox_cg_leaf *leaf)
{
	for (unsigned i = 0; i < CG_SLOTS_MAX; i++)
		if (slots[i].used && strcmp(slots[i].name, leaf->name) == 0)
			return &slots[i];
	return NULL;
}

static void slot_drop(struct cg_slot *sl)
{
	if (!sl->busy)
		n_free--;
	*sl = (struct cg_slot){ 0 };
}

static void leaf_of_slot(struct server *s, const struct cg_slot *sl, struct sandbox_cg_leaf *ret)
{
	*ret = (struct sandbox_cg_leaf){ .live = true, .parent_fd = s->cgroups.base_fd, .fd = -1 };
	memcpy(ret->name, sl->name, sizeof(ret->name));
	for (int k = 0; k < _SANDBOX_CG_KIND_MAX; k++)
		ret->v1_procs[k] = -1;
}

/* A free slot's leaf goes (rmdir, ~20 us: once per idle second at most). */
static void slot_remove(struct server *s, struct cg_slot *sl)
{
	struct sandbox_cg_leaf leaf;
	int r;

	leaf_of_slot(s, sl, &leaf);
	slot_drop(sl);
	r = sandbox_cg_leaf_remove(&s->cgroups, &leaf);
	if (r < 0)
		log_warning_errno_ratelimited(r, "Removing the cgroup %s failed", leaf.name);
}

static void on_expiry(struct uring_timer *t, bool fired)
{
	struct server *s = expiry_srv;
	uint64_t now = now_ms();

	(void)t;
	if (!fired || s->stopping)
		return;
	for (unsigned i = 0; i < CG_SLOTS_MAX; i++)
		if (slots[i].used && !slots[i].busy && now - slots[i].free_since >= CG_FREE_MS)
			slot_remove(s, &slots[i]);
	if (n_free > 0)
		uring_timer_arm(&s->ring, &expiry, CG_FREE_MS, on_expiry);
}

/* sl is free from now on; the expiry timer runs while any is. */
static void slot_free(struct server *s, struct cg_slot *sl)
{
	sl->busy = false;
	sl->free_since = now_ms();
	n_free++;
	expiry_srv = s;
	if (!expiry.armed)
		uring_timer_arm(&s->ring, &expiry, CG_FREE_MS, on_expiry);
}

/* A leaf for a poolable process: a free one, else a new one (in a slot if there is room). */
static int slot_take(struct server *s, struct sandbox_cg_leaf *ret)
{
	struct cg_slot *room = NULL;
	int r;

	for (unsigned i = 0; i < CG_SLOTS_MAX; i++) {
		struct cg_slot *sl = &slots[i];

		if (sl->used && !sl->busy) {
			leaf_of_slot(s, sl, ret);
			ret->fd = openat(ret->parent_fd, sl->name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (ret->fd < 0) {
				slot_drop(sl); /* gone (removed by hand?): forget it */
				continue;
			}
			sl->busy = true;
			n_free--;
			return 0;
		}
		if (!sl->used && !room)
			room = sl;
	}
	r = sandbox_cg_leaf_new(&s->cgroups, -1, NULL, ret);
	if (r < 0 || !room)
		return r;
	*room = (struct cg_slot){ .used = true, .busy = true };
	memcpy(room->name, ret->name, sizeof(room->name));
	return 0;
}

/* True when the leaf went back to its slot (empty), so that the process must forget it. */
static bool slot_give_back(struct server *s, struct sandbox_cg_leaf *leaf)
{
	struct cg_slot *sl = slot_by_name(leaf);
	char buf[128], path[64];
	ssize_t n = -1;
	int fd;

	if (!sl || !sl->busy)
		return false;
	snprintf(path, sizeof(path), "%s/cgroup.events", sl->name);
	fd = openat(s->cgroups.base_fd, path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	if (n > 0)
		buf[n] = 0;
	if (s->stopping || sl->killed || n <= 0 || !strstr(buf, "populated 0") ||
	    n_free >= CG_FREE_MAX) {
		/* Still in use by what the process left, or enough are waiting: removed once empty. */
		sl->busy = true;
		slot_drop(sl);
		return false;
	}
	slot_free(s, sl);
	return true;
}

void exec_cg_leaf_discard(struct server *s, struct sandbox_cg_leaf *leaf)
{
	struct cg_slot *sl = slot_by_name(leaf);

	if (sl) {
		sl->busy = true;
		slot_drop(sl);
	}
	sandbox_cg_leaf_spawned(leaf);
	(void)sandbox_cg_leaf_remove(&s->cgroups, leaf);
}

int exec_cg_leaf(struct server *s, const struct sandbox_plan *plan,
		 const struct sandbox_cg_limits *l, struct sandbox_cg_leaf *ret)
{
	bool limited = false;
	int r;

	for (int k = 0; k < _SANDBOX_CG_KIND_MAX; k++)
		limited |= *limit_of((struct sandbox_cg_limits *)l, k) != 0 &&
			   s->cgroups.where[k] != SANDBOX_CG_NONE;
	if (!s->cgroups.enabled && !limited)
		return 0;
	/* Not what the server's ceiling cannot enforce (warned at start-up): the rest applies. */
	struct sandbox_cg_limits eff = *l;

	for (int k = 0; k < _SANDBOX_CG_KIND_MAX; k++)
		if (s->cgroups.where[k] == SANDBOX_CG_NONE)
			*limit_of(&eff, k) = 0;
	/* Reused leaves: no limits, no sandbox (the denial tracer keys its watch on the leaf). */
	if (!plan && s->cgroups.enabled && s->cgroups.base_fd >= 0 && !eff.pids_max &&
	    !eff.memory_max && !eff.cpu_milli) {
		r = slot_take(s, ret);
		return r < 0 ? r : 1;
	}
	r = sandbox_cg_leaf_new(&s->cgroups, sandbox_plan_cgroup_fd(plan), &eff, ret);
	if (r < 0)
		return r;
	return 1;
}

/* ---- removal once empty ---- */

struct cg_pending {
	struct list_head link; /* on pending_leaves */
	struct server *s;
	struct sandbox_cg_leaf leaf;
	int fd; /* the leaf's cgroup.events once it was found populated, else -1 */
	struct uring_op op;
	char buf[256];
};

/*
 * The leaves waiting to be empty, of the one server in the process (module
 * state: nothing outside this file walks them; exec_cg_pending_free() at exit).
 */
static struct list_head pending_leaves = LIST_HEAD_INIT(pending_leaves);

static void pending_free(struct cg_pending *pd)
{
	list_del(&pd->link);
	safe_close(pd->fd);
	free(pd);
}

static void pending_remove(struct cg_pending *pd);

static void on_events(struct uring_op *op, int res, uint32_t flags)
{
	struct cg_pending *pd = container_of(op, struct cg_pending, op);

	(void)flags;
	if (pd->s->stopping)
		return; /* sandbox_cg_done() purges what is left */
	if (res < 0 && res != -EINTR) {
		log_debug_errno(res, "Polling cgroup %s failed", pd->leaf.name);
		pending_free(pd);
		return;
	}
	ssize_t n = pread(pd->fd, pd->buf, sizeof(pd->buf) - 1, 0);

	if (n >= 0) {
		pd->buf[n] = 0;
		if (strstr(pd->buf, "populated 0")) {
			pending_remove(pd);
			return;
		}
	}
	io_uring_prep_poll_add(uring_get_sqe(&pd->s->ring, &pd->op, on_events), pd->fd, POLLPRI);
}

/* After a removal attempt: done, or watch the leaf until it is empty. */
static void removal_done(struct cg_pending *pd, int r)
{
	char path[64];

	if (r != -EBUSY || pd->leaf.parent_fd < 0) {
		if (r < 0 && r != -EBUSY)
			log_warning_errno_ratelimited(r, "Removing the cgroup %s failed", pd->leaf.name);
		/* v1 only and still busy: the shutdown or the next start removes it */
		pending_free(pd);
		return;
	}
	if (pd->fd < 0) {
		snprintf(path, sizeof(path), "%s/cgroup.events", pd->leaf.name);
		pd->fd = openat(pd->leaf.parent_fd, path, O_RDONLY | O_CLOEXEC);
		if (pd->fd < 0) {
			pending_free(pd);
			return;
		}
	}
	/* Reads "populated" first: it may have emptied since (kernfs then wakes the poll at once). */
	on_events(&pd->op, 0, 0);
}

static void on_unlinked(struct uring_op *op, int res, uint32_t flags)
{
	struct cg_pending *pd = container_of(op, struct cg_pending, op);

	(void)flags;
	if (pd->s->stopping)
		return;
	if (res == 0 || res == -ENOENT) {
		sandbox_cg_leaf_removed(&pd->leaf);
		res = sandbox_cg_leaf_remove(&pd->s->cgroups, &pd->leaf); /* its v1 directories */
	}
	removal_done(pd, res);
}

/*
 * The v2 directory goes by IORING_OP_UNLINKAT where the ring has it: the
 * kernfs removal (~20 us) runs in an io-wq worker, off the loop's thread;
 * the v1 ones (processes with limits on a hybrid host) at once.
 */
static void pending_remove(struct cg_pending *pd)
{
	const char *name;
	int parent;

	if (pd->s->ring.has_unlinkat && sandbox_cg_leaf_dir(&pd->leaf, &parent, &name)) {
		io_uring_prep_unlinkat(uring_get_sqe(&pd->s->ring, &pd->op, on_unlinked), parent, name,
				       AT_REMOVEDIR);
		return;
	}
	removal_done(pd, sandbox_cg_leaf_remove(&pd->s->cgroups, &pd->leaf));
}

/* Removes the leaf now, or once its last process has gone. */
static void release(struct proc *p)
{
	struct server *s = p->sess->srv;
	struct cg_pending *pd;

	if (p->cg_pending || !p->cg.live || s->stopping)
		return; /* stopping: sandbox_cg_done() purges the bases */
	if (slot_give_back(s, &p->cg)) {
		/* Another process may have it from now on: this one's record forgets it. */
		p->has_cg = false;
		p->cg.live = false;
		return;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		(void)sandbox_cg_leaf_remove(&s->cgroups, &p->cg);
		return;
	}
	pd->s = s;
	pd->fd = -1;
	pd->leaf = p->cg;
	list_add_tail(&pd->link, &pending_leaves);
	p->cg_pending = true;
	pending_remove(pd);
}

void proc_cg_closed(struct proc *p)
{
	if (p->has_cg)
		release(p);
}

void proc_cg_kill(struct proc *p)
{
	struct cg_slot *sl;
	int r;

	if (!p->has_cg)
		return;
	/* Never reused (Linux 6.18 kills every later CLONE_INTO_CGROUP child of a killed cgroup). */
	sl = slot_by_name(&p->cg);
	if (sl)
		sl->killed = true;
	r = sandbox_cg_leaf_kill(&p->sess->srv->cgroups, &p->cg);
	if (r < 0)
		log_warning_errno_ratelimited(r, "Killing the cgroup of process '%s' failed", p->id);
}

void proc_cg_exited(struct proc *p)
{
	if (!p->has_cg || !p->cg.memory_limited)
		return;
	p->oom_killed = sandbox_cg_leaf_oom_kills(&p->sess->srv->cgroups, &p->cg) > 0;
	if (p->oom_killed)
		p->sess->srv->metrics.oom_kills++;
	if (p->oom_killed)
		log_info_ratelimited("Session %s: process '%s' (pid %d) reached its memory limit: "
				     "OOM-killed (exit code %d)", p->sess->id, p->id, (int)p->pid,
				     p->exit_code);
}

void proc_cg_free(struct proc *p)
{
	if (!p->has_cg)
		return;
	/* Whatever is left of the tree goes with the process's record. */
	proc_cg_kill(p);
	release(p);
}

void exec_cg_pending_free(void)
{
	/* The slots' directories go with the base (sandbox_cg_done). */
	for (unsigned i = 0; i < CG_SLOTS_MAX; i++)
		slots[i] = (struct cg_slot){ 0 };
	n_free = 0;
	while (!list_empty(&pending_leaves))
		pending_free(list_first_entry(&pending_leaves, struct cg_pending, link));
}
