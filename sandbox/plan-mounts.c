/* SPDX-License-Identifier: MIT */
/*
 * The mount side of a sandbox plan (plan.h): denied and protected paths
 * (masks, read-only names under writable roots, secret files), the phases
 * in which apply.c mounts them, the pinned directories between a writable
 * root and a mask, and the paths deny globs match now.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/openat2.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "glob.h"
#include "landlock.h"
#include "evidence.h"
#include "netguard.h"
#include "list.h"
#include "log.h"
#include "macro.h"
#include "plan.h"
#include "sandbox.h"
#include "synth.h"
#include "plan-build.h"


/* ---- plan ---- */

int sandbox_strv_push(char ***v, size_t *n, const char *s)
{
	char **nv = realloc(*v, (*n + 1) * sizeof(char *));

	if (!nv)
		return -ENOMEM;
	*v = nv;
	nv[*n] = strdup(s);
	if (!nv[*n])
		return -ENOMEM;
	(*n)++;
	return 0;
}

void sandbox_strv_clear(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

int sandbox_ll_push(struct sandbox_plan *pl, const char *path, uint64_t access)
{
	struct ll_rule *nr = realloc(pl->ll, (pl->n_ll + 1) * sizeof(*nr));

	if (!nr)
		return -ENOMEM;
	pl->ll = nr;
	nr[pl->n_ll].path = strdup(path);
	if (!nr[pl->n_ll].path)
		return -ENOMEM;
	nr[pl->n_ll].access = access;
	pl->n_ll++;
	return 0;
}

bool sandbox_beneath(const char *path, const char *root)
{
	size_t n = strlen(root);

	if (strcmp(root, "/") == 0)
		return path[0] == '/' && path[1] != 0;
	return strncmp(path, root, n) == 0 && path[n] == '/';
}

size_t sandbox_path_depth(const char *p)
{
	size_t d = 0;

	for (; *p; p++)
		d += *p == '/';
	return d;
}

int sandbox_cmp_depth(const void *a, const void *b)
{
	size_t da = sandbox_path_depth(*(char *const *)a), db = sandbox_path_depth(*(char *const *)b);

	return da < db ? -1 : da > db;
}

bool sandbox_strv_has(char *const *v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], s) == 0)
			return true;
	return false;
}

int sandbox_set_secrets(struct sandbox_features *f, const char *const *paths, size_t n)
{
	char canon[PATH_MAX];
	struct stat st;

	for (size_t i = 0; i < n; i++) {
		if (!paths[i] || !realpath(paths[i], canon) || stat(canon, &st) < 0 ||
		    S_ISDIR(st.st_mode) || sandbox_strv_has(f->secrets, f->n_secrets, canon))
			continue;
		if (sandbox_strv_push(&f->secrets, &f->n_secrets, canon) < 0)
			return -ENOMEM;
	}
	return 0;
}

/*
 * One file the plan hides as a deny file, but where a deny directory or file
 * already covers it. A path gone (or renamed) since the start is skipped
 * (hide_files needs it to exist).
 */
static int plan_hide(struct sandbox_plan *pl, const char *path)
{
	bool covered = sandbox_strv_has(pl->deny_file, pl->n_deny_file, path);
	struct stat st;

	for (size_t d = 0; d < pl->n_deny_dir && !covered; d++) {
		covered = sandbox_beneath(path, pl->deny_dir[d]);
		/* ...unless a writable root beneath that directory opens it again. */
		for (size_t w = 0; w < pl->n_rw && covered; w++)
			covered = !(sandbox_beneath(pl->rw[w], pl->deny_dir[d]) && sandbox_beneath(path, pl->rw[w]));
	}
	if (covered || lstat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return 0;
	return sandbox_strv_push(&pl->deny_file, &pl->n_deny_file, path);
}

/*
 * The server's secrets (sandbox_set_secrets) and uexec's host-wide locks
 * (netguard.h, evidence.h; whichever uexec made them) join the plan's deny
 * files: a sandbox holding one would stall servers starting or stopping.
 */
int sandbox_plan_secrets(struct sandbox_plan *pl, const struct sandbox_features *f)
{
	int r = plan_hide(pl, NETGUARD_LOCK_PATH);

	if (r >= 0)
		r = plan_hide(pl, SANDBOX_AUDIT_USERS_PATH);

	for (size_t i = 0; i < f->n_secrets && r >= 0; i++)
		r = plan_hide(pl, f->secrets[i]);
	return r;
}

/*
 * A reference to the synthetic directory at path, listed in the plan (which
 * drops it when freed); on failure nothing is held: a reference taken and
 * not listed would keep the directory on the host after the plan is gone.
 */
static int plan_synth(struct sandbox_plan *pl, const char *path)
{
	int r = sandbox_synth_get(path);

	if (r < 0)
		return r;
	r = sandbox_strv_push(&pl->synth, &pl->n_synth, path);
	if (r < 0)
		sandbox_synth_put(path);
	return r;
}

/* A read-only path inside writable root w: bind it read-only, or a synthetic dir if missing. */
int sandbox_plan_protect(struct sandbox_plan *pl, const char *path, bool create_if_missing,
			 char *err, size_t errsz)
{
	struct stat st;
	int r, marked;

	/* Named twice (a protected name and a read entry such as project_roots/.git): once. */
	if (sandbox_strv_has(pl->ro, pl->n_ro, path) || sandbox_strv_has(pl->synth, pl->n_synth, path))
		return 0;

	if (lstat(path, &st) == 0) {
		if (S_ISLNK(st.st_mode)) {
			/* The link itself is writable: replacing it would escape a bind on its target. */
			snprintf(err, errsz,
				 "cannot enforce sandbox read-only path %s: it is a symbolic link inside a writable root",
				 path);
			return -EINVAL;
		}
		/*
		 * A mount point this server made, or another server's (marked):
		 * shared, so that it is not removed under this sandbox.
		 */
		marked = sandbox_synth_known(path, S_ISDIR(st.st_mode));
		if (marked == -ENOENT && !create_if_missing)
			return 0; /* gone since the lstat: as a missing path */
		if (marked != 0) {
			/* (marked, or gone since the lstat: then made anew) */
			r = plan_synth(pl, path);
			if (r != -EEXIST) /* (-EEXIST: no longer marked, the user's own) */
				return r;
		}
		return sandbox_strv_push(&pl->ro, &pl->n_ro, path);
	}
	if (errno != ENOENT || !create_if_missing)
		return errno == ENOENT ? 0 : -errno;
	r = plan_synth(pl, path);
	if (r == -EEXIST) /* raced with the user making the directory: bind theirs */
		return sandbox_strv_push(&pl->ro, &pl->n_ro, path);
	if (r < 0)
		snprintf(err, errsz, "cannot create the read-only mount point %s: %s", path,
			 strerror(-r));
	return r;
}

/*
 * sandbox_plan_protect() with creation, for a path inside the writable root root
 * ("/" when root is true). Under "/" the mount point may lie where the
 * server cannot create it (a non-root server: /.git; a read-only host
 * mount): there the command, which has at most the server's access and no
 * capabilities, cannot create it either, so nothing needs masking.
 */
int sandbox_root_protect(struct sandbox_plan *pl, bool root, const char *path, char *err,
			 size_t errsz)
{
	int r = sandbox_plan_protect(pl, path, true, err, errsz);

	if (root && (r == -EACCES || r == -EPERM || r == -EROFS)) {
		err[0] = 0;
		return 0;
	}
	return r;
}

/* "/<name>" for one of the protected names. */
bool sandbox_root_name(const char *path)
{
	for (size_t k = 0; k < ELEMENTSOF(sandbox_protected_names); k++)
		if (path[0] == '/' && strcmp(path + 1, sandbox_protected_names[k]) == 0)
			return true;
	return false;
}

/*
 * For a missing path: the canonical form of its first missing component (the
 * longest existing ancestor resolved, plus the next name). Returns 0 or -errno.
 */
int sandbox_first_missing(const char *path, char ret[PATH_MAX])
{
	char parent[PATH_MAX], real[PATH_MAX];
	const char *slash;
	struct stat st;

	snprintf(parent, sizeof(parent), "%s", path);
	for (;;) {
		char *s = strrchr(parent, '/');

		if (!s || s == parent)
			return -ENOENT;
		*s = 0;
		if (lstat(parent, &st) == 0)
			break;
	}
	if (!S_ISDIR(st.st_mode) || !realpath(parent, real))
		return -ENOTDIR;
	slash = path + strlen(parent) + 1;
	{
		size_t rl = strcmp(real, "/") ? strlen(real) : 0, nl = strcspn(slash, "/");

		if (rl + 1 + nl >= PATH_MAX)
			return -ENAMETOOLONG;
		memcpy(ret, real, rl);
		ret[rl] = '/';
		memcpy(ret + rl + 1, slash, nl);
		ret[rl + 1 + nl] = 0;
	}
	return 0;
}

/* Highest phase among the masks of list v (phases ph) strictly above path. */
static bool mask_above(const char *path, char *const *v, const unsigned *ph, size_t n,
		       unsigned *max)
{
	bool any = false;

	for (size_t i = 0; i < n; i++)
		if (sandbox_beneath(path, v[i])) {
			if (!any || ph[i] > *max)
				*max = ph[i];
			any = true;
		}
	return any;
}

static unsigned rw_phase_above(const struct sandbox_plan *pl, const char *path)
{
	unsigned ph = 0;
	size_t best = 0;

	/* The deepest writable root strictly above path (rw is sorted by depth). */
	for (size_t i = 0; i < pl->n_rw; i++)
		if (sandbox_beneath(path, pl->rw[i]) && sandbox_path_depth(pl->rw[i]) >= best) {
			best = sandbox_path_depth(pl->rw[i]);
			ph = pl->rw_phase[i];
		}
	return ph;
}

/* The masks of list v at depth d take the phase of the writable root above them. */
static void mask_phases(const struct sandbox_plan *pl, size_t d, char *const *v, size_t n,
			unsigned *ph)
{
	for (size_t i = 0; i < n; i++)
		if (sandbox_path_depth(v[i]) == d)
			ph[i] = rw_phase_above(pl, v[i]);
}

int sandbox_plan_phases(struct sandbox_plan *pl)
{
	size_t n_rw = pl->n_rw ? pl->n_rw : 1;

	pl->rw_phase = calloc(n_rw, sizeof(unsigned));
	pl->rw_mkbase = calloc(n_rw, sizeof(int));
	pl->ro_phase = calloc(pl->n_ro + 1, sizeof(unsigned));
	pl->synth_phase = calloc(pl->n_synth + 1, sizeof(unsigned));
	pl->deny_dir_phase = calloc(pl->n_deny_dir + 1, sizeof(unsigned));
	pl->deny_file_phase = calloc(pl->n_deny_file + 1, sizeof(unsigned));
	pl->deny_reopen = calloc(pl->n_deny_dir + 1, sizeof(bool));
	if (!pl->rw_phase || !pl->rw_mkbase || !pl->ro_phase || !pl->synth_phase ||
	    !pl->deny_dir_phase || !pl->deny_file_phase || !pl->deny_reopen)
		return -ENOMEM;

	/*
	 * Depth by depth: a path's phase depends only on strictly shallower
	 * paths, which are done by then.
	 */
	size_t maxd = 0;

	for (size_t i = 0; i < pl->n_rw; i++)
		maxd = MAX(maxd, sandbox_path_depth(pl->rw[i]));
	for (size_t i = 0; i < pl->n_ro; i++)
		maxd = MAX(maxd, sandbox_path_depth(pl->ro[i]));
	for (size_t i = 0; i < pl->n_synth; i++)
		maxd = MAX(maxd, sandbox_path_depth(pl->synth[i]));
	for (size_t i = 0; i < pl->n_deny_dir; i++)
		maxd = MAX(maxd, sandbox_path_depth(pl->deny_dir[i]));
	for (size_t i = 0; i < pl->n_deny_file; i++)
		maxd = MAX(maxd, sandbox_path_depth(pl->deny_file[i]));

	for (size_t d = 0; d <= maxd; d++) {
		for (size_t i = 0; i < pl->n_rw; i++) {
			unsigned m = 0, best = 0;
			bool any = false;

			if (sandbox_path_depth(pl->rw[i]) != d)
				continue;
			any |= mask_above(pl->rw[i], pl->ro, pl->ro_phase, pl->n_ro, &m);
			best = MAX(best, m);
			m = 0;
			any |= mask_above(pl->rw[i], pl->synth, pl->synth_phase, pl->n_synth, &m);
			best = MAX(best, m);
			m = 0;
			any |= mask_above(pl->rw[i], pl->deny_dir, pl->deny_dir_phase, pl->n_deny_dir,
					  &m);
			best = MAX(best, m);
			pl->rw_phase[i] = any ? best + 1 : 0;
			pl->max_phase = MAX(pl->max_phase, pl->rw_phase[i]);
			pl->rw_mkbase[i] = -1;
			for (size_t k = 0; k < pl->n_deny_dir; k++)
				if (sandbox_beneath(pl->rw[i], pl->deny_dir[k]) &&
				    (pl->rw_mkbase[i] < 0 ||
				     sandbox_path_depth(pl->deny_dir[k]) >
					     sandbox_path_depth(pl->deny_dir[pl->rw_mkbase[i]]))) {
					pl->rw_mkbase[i] = (int)k;
					pl->deny_reopen[k] = true;
				}
		}
		mask_phases(pl, d, pl->ro, pl->n_ro, pl->ro_phase);
		mask_phases(pl, d, pl->synth, pl->n_synth, pl->synth_phase);
		mask_phases(pl, d, pl->deny_dir, pl->n_deny_dir, pl->deny_dir_phase);
		mask_phases(pl, d, pl->deny_file, pl->n_deny_file, pl->deny_file_phase);
	}
	return 0;
}

/* ---- pins: the directories leading from a writable root to a mask ---- */

static int cmp_depth_name(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	int d = sandbox_cmp_depth(a, b);

	return d ? d : strcmp(x, y);
}

/* Sorts the pins shallowest first and drops repeats; -E2BIG past SANDBOX_MAX_PINS. */
static int pins_dedup(struct sandbox_plan *pl)
{
	size_t k = 0;

	if (pl->n_pin > 1)
		qsort(pl->pin, pl->n_pin, sizeof(char *), cmp_depth_name);
	for (size_t i = 0; i < pl->n_pin; i++) {
		if (k && strcmp(pl->pin[k - 1], pl->pin[i]) == 0) {
			free(pl->pin[i]);
			continue;
		}
		pl->pin[k++] = pl->pin[i];
	}
	pl->n_pin = k;
	return k > SANDBOX_MAX_PINS ? -E2BIG : 0;
}

/*
 * Pushes each directory strictly between the deepest writable root above
 * path and path (repeats dropped whenever the list doubles the limit).
 */
static int pin_ancestors(struct sandbox_plan *pl, const char *path)
{
	char a[PATH_MAX];
	size_t best = 0, rl = 0;
	bool found = false;
	int r;

	for (size_t i = 0; i < pl->n_rw; i++)
		if (sandbox_beneath(path, pl->rw[i]) && (!found || sandbox_path_depth(pl->rw[i]) >= best)) {
			found = true;
			best = sandbox_path_depth(pl->rw[i]);
			rl = strcmp(pl->rw[i], "/") ? strlen(pl->rw[i]) : 0;
		}
	if (!found)
		return 0;
	for (const char *c = path + rl + 1; (c = strchr(c, '/')); c++) {
		snprintf(a, sizeof(a), "%.*s", (int)(c - path), path);
		if (pl->n_pin >= 2 * SANDBOX_MAX_PINS && (r = pins_dedup(pl)) < 0)
			return r;
		if (sandbox_strv_push(&pl->pin, &pl->n_pin, a) < 0)
			return -ENOMEM;
	}
	return 0;
}

/*
 * A mask covers a path, not the directories leading to it: renamed in one
 * process (`mv cfg cfg2`: a mount point's ancestors may move), a denied
 * file or a read-only entry inside a writable root would sit at a path the
 * next start no longer masks. Each such directory is pinned (bound onto
 * itself in the child, apply.c): rename and rmdir answer EBUSY.
 */
int sandbox_plan_pins(struct sandbox_plan *pl, char *err, size_t errsz)
{
	int r = 0;

	for (size_t i = 0; i < pl->n_deny_file && r >= 0; i++)
		r = pin_ancestors(pl, pl->deny_file[i]);
	for (size_t i = 0; i < pl->n_deny_dir && r >= 0; i++)
		r = pin_ancestors(pl, pl->deny_dir[i]);
	for (size_t i = 0; i < pl->n_ro && r >= 0; i++)
		r = pin_ancestors(pl, pl->ro[i]);
	/*
	 * And the empty directory masking a missing read or deny entry: moved
	 * with its parent (`mv x x2` of x/y), it no longer covered the path,
	 * which the process then created; and uexec's removal at the end went
	 * through the link left at x (sandbox_synth_put).
	 */
	for (size_t i = 0; i < pl->n_synth && r >= 0; i++)
		r = pin_ancestors(pl, pl->synth[i]);
	if (r >= 0)
		r = pins_dedup(pl);
	if (r == -E2BIG)
		snprintf(err, errsz,
			 "the masks inside writable roots lie in more than %d directories (each is "
			 "pinned against renames): deny fewer paths or narrower globs",
			 SANDBOX_MAX_PINS);
	if (r < 0 || pl->n_pin == 0)
		return r;
	pl->pin_phase = calloc(pl->n_pin, sizeof(unsigned));
	if (!pl->pin_phase)
		return -ENOMEM;
	for (size_t i = 0; i < pl->n_pin; i++)
		pl->pin_phase[i] = rw_phase_above(pl, pl->pin[i]);
	return 0;
}

/* ---- deny globs (glob.c): what they match now, masked as denied paths ---- */

struct glob_ctx {
	struct sandbox_plan *pl;
	const struct sandbox_policy *p;
	size_t matches;
};

/* Already hidden (a deny entry above it, or nothing grants it): no mount of its own. */
static bool glob_hidden(const struct glob_ctx *g, const char *path)
{
	return sandbox_policy_access(g->p, path) == SANDBOX_DENY ||
	       sandbox_strv_has(g->pl->deny_file, g->pl->n_deny_file, path) ||
	       sandbox_strv_has(g->pl->deny_dir, g->pl->n_deny_dir, path);
}

static int glob_add(void *ctx, const char *path)
{
	struct glob_ctx *g = ctx;

	if (glob_hidden(g, path))
		return 0;
	if (++g->matches > SANDBOX_GLOB_MAX_MATCHES)
		return -E2BIG;
	return sandbox_strv_push(&g->pl->deny_file, &g->pl->n_deny_file, path);
}

static int glob_add_literal(void *ctx, const char *path, bool is_dir)
{
	struct glob_ctx *g = ctx;
	char canon[PATH_MAX];

	if (!realpath(path, canon) || glob_hidden(g, canon))
		return 0;
	if (++g->matches > SANDBOX_GLOB_MAX_MATCHES)
		return -E2BIG;
	return is_dir ? sandbox_strv_push(&g->pl->deny_dir, &g->pl->n_deny_dir, canon)
		      : sandbox_strv_push(&g->pl->deny_file, &g->pl->n_deny_file, canon);
}

int sandbox_plan_deny_globs(struct sandbox_plan *pl, const struct sandbox_policy *p, char *err,
			    size_t errsz)
{
	struct glob_ctx g = { .pl = pl, .p = p };
	struct sandbox_glob_out out = { &g, glob_add, glob_add_literal };
	struct sandbox_glob_budget budget = { 0 };
	int r = 0;

	for (size_t i = 0; i < p->n_deny_globs && r >= 0; i++)
		r = sandbox_glob_expand(p->deny_globs[i], p->glob_scan_max_depth, &budget, &out, err,
					errsz);
	/* Every refusal names the pattern: the policy cannot be enforced as written. */
	return r < 0 && r != -ENOMEM ? -EINVAL : r;
}
