/* SPDX-License-Identifier: MIT */
/* struct sandbox_cg to and from the state blob (cgroups.c; docs/UPGRADE.md). */
#pragma once

#include "cgroup.h"
#include "state.h"
#include "view.h"

/*
 * The cgroups record of cg and the held fds it names (supervisor pipe, v2
 * base, v1 bases) into w. Returns the number of fds written.
 */
unsigned upgrade_put_cgroups(struct upgrade_writer *w, const struct sandbox_cg *cg);

/*
 * *cg as the view describes it: paths copied, fds taken from the held
 * records (they stay the caller's until the server adopts them). 0, or
 * -EBADMSG with err (no cgroups record, a path longer than the struct holds).
 * *cg is untouched on failure.
 */
int upgrade_sandbox_cg_from_view(const struct upgrade_view *v, struct sandbox_cg *cg, char *err,
				 size_t err_size);
