/* SPDX-License-Identifier: MIT */
/*
 * The per-process cgroups' layout (struct sandbox_cg, sandbox/cgroup.h) to
 * and from the state blob: the cgroups record and the held fds (the v2 base,
 * the v1 bases, the supervisor's pipe). RESTORE fills the struct from the
 * view instead of probing and creating (docs/UPGRADE.md).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "upgrade-cgroups.h"

static const uint16_t v1_tags[UPGRADE_CG_KINDS] = {
	UPGRADE_CGROUPS_V1_PIDS, UPGRADE_CGROUPS_V1_MEMORY, UPGRADE_CGROUPS_V1_CPU };

_Static_assert(_SANDBOX_CG_KIND_MAX == UPGRADE_CG_KINDS, "one field per controller");
_Static_assert((int)SANDBOX_CG_NONE == (int)UPGRADE_CG_NONE && (int)SANDBOX_CG_V1 == (int)UPGRADE_CG_V1 &&
		       (int)SANDBOX_CG_V2 == (int)UPGRADE_CG_V2,
	       "the same numbers");


unsigned upgrade_put_cgroups(struct upgrade_writer *w, const struct sandbox_cg *cg)
{
	unsigned fds = 0;

	upgrade_writer_begin(w, UPGRADE_REC_CGROUPS);
	upgrade_writer_bool(w, UPGRADE_CGROUPS_ENABLED, cg->enabled);
	upgrade_writer_bool(w, UPGRADE_CGROUPS_HAS_KILL, cg->has_kill);
	if (cg->enabled)
		upgrade_writer_str(w, UPGRADE_CGROUPS_BASE, cg->base);
	for (int k = 0; k < UPGRADE_CG_KINDS; k++)
		upgrade_writer_u64(w, (uint16_t)(UPGRADE_CGROUPS_WHERE_PIDS + k), cg->where[k]);
	for (int k = 0; k < UPGRADE_CG_KINDS; k++)
		if (cg->where[k] == SANDBOX_CG_V1)
			upgrade_writer_str(w, v1_tags[k], cg->v1_base[k]);
	if (cg->server_cg[0])
		upgrade_writer_str(w, UPGRADE_CGROUPS_SERVER_CG, cg->server_cg);
	upgrade_writer_u64(w, UPGRADE_CGROUPS_SEQ, cg->seq);
	if (cg->supervisor > 0)
		upgrade_writer_u64(w, UPGRADE_CGROUPS_SUPERVISOR, (uint64_t)cg->supervisor);
	upgrade_writer_end(w);
	fds += upgrade_writer_held(w, UPGRADE_HELD_SUPERVISOR, cg->supervisor_fd, -1);
	fds += upgrade_writer_held(w, UPGRADE_HELD_CG_BASE, cg->base_fd, -1);
	for (int k = 0; k < UPGRADE_CG_KINDS; k++)
		fds += upgrade_writer_held(w, UPGRADE_HELD_CG_V1_BASE, cg->v1_fd[k], k);
	return fds;
}

/* A path view into a NUL-terminated copy; false if it does not fit. */
static bool copy_path(char *dst, size_t size, const uint8_t *src, uint32_t len)
{
	if (len >= size)
		return false;
	if (len)
		memcpy(dst, src, len);
	dst[len] = '\0';
	return true;
}

int upgrade_sandbox_cg_from_view(const struct upgrade_view *v, struct sandbox_cg *cg, char *err,
				 size_t err_size)
{
	const struct upgrade_view_cgroups *c = &v->cgroups;
	struct sandbox_cg n;

	memset(&n, 0, sizeof(n));
	n.base_fd = n.supervisor_fd = -1;
	for (int k = 0; k < UPGRADE_CG_KINDS; k++)
		n.v1_fd[k] = -1;
	if (!c->present) {
		snprintf(err, err_size, "the state has no cgroups layout");
		return -EBADMSG;
	}
	n.enabled = c->enabled;
	n.has_kill = c->has_kill;
	n.seq = c->seq;
	n.supervisor = c->supervisor_pid;
	if (!copy_path(n.base, sizeof(n.base), c->base, c->base_len) ||
	    !copy_path(n.server_cg, sizeof(n.server_cg), c->server_cg, c->server_cg_len)) {
		snprintf(err, err_size, "a cgroup path is too long");
		return -EBADMSG;
	}
	for (int k = 0; k < UPGRADE_CG_KINDS; k++) {
		n.where[k] = (enum sandbox_cg_where)c->where[k];
		if (!copy_path(n.v1_base[k], sizeof(n.v1_base[k]), c->v1_base[k], c->v1_base_len[k])) {
			snprintf(err, err_size, "a v1 cgroup path is too long");
			return -EBADMSG;
		}
		n.v1_fd[k] = upgrade_view_held_fd(v, UPGRADE_HELD_CG_V1_BASE, k);
	}
	/* The view made these agree with the layout (view.c, check_cgroups_fds). */
	n.base_fd = upgrade_view_held_fd(v, UPGRADE_HELD_CG_BASE, -1);
	n.supervisor_fd = upgrade_view_held_fd(v, UPGRADE_HELD_SUPERVISOR, -1);
	*cg = n;
	return 0;
}
