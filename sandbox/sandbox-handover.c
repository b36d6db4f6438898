/* SPDX-License-Identifier: MIT */
/*
 * A sandboxed process's plan across a live upgrade (sandbox-handover.h):
 * what it holds after its spawn, read out, and made again in the new binary.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "plan-build.h"
#include "plan.h"
#include "sandbox-handover.h"
#include "sandbox.h"
#include "synth.h"

size_t sandbox_plan_synth(const struct sandbox_plan *plan, const char *const **ret)
{
	*ret = plan ? (const char *const *)plan->synth : NULL;
	return plan ? plan->n_synth : 0;
}

/* f's programs in enum sandbox_filter_id's order (NONE has none). */
static const struct sock_fprog *filter_at(const struct sandbox_features *f, unsigned id)
{
	switch ((enum sandbox_filter_id)id) {
	case SANDBOX_FILTER_RESTRICTED:
		return &f->filters.restricted;
	case SANDBOX_FILTER_OPEN_NET:
		return &f->filters.open_net;
	case SANDBOX_FILTER_PROXIED:
		return &f->filters.proxied;
	case SANDBOX_FILTER_PROXIED_ALL_UNIX:
		return &f->filters.proxied_all_unix;
	case SANDBOX_FILTER_FS_HELPER:
		return &f->filters.fs_helper;
	case SANDBOX_FILTER_NONE:
	case _SANDBOX_FILTER_MAX:
		break;
	}
	return NULL;
}

enum sandbox_filter_id sandbox_plan_filter(const struct sandbox_features *f,
					   const struct sandbox_plan *plan)
{
	if (!plan || !plan->seccomp)
		return SANDBOX_FILTER_NONE;
	for (unsigned id = SANDBOX_FILTER_NONE + 1; id < _SANDBOX_FILTER_MAX; id++)
		if (filter_at(f, id) == plan->seccomp)
			return (enum sandbox_filter_id)id;
	return SANDBOX_FILTER_NONE;
}

const struct sock_fprog *sandbox_filter_of(const struct sandbox_features *f,
					   enum sandbox_filter_id id)
{
	/* Without seccomp (the probe said so) the programs were never built. */
	if (!f->seccomp)
		return NULL;
	return filter_at(f, id);
}

int sandbox_plan_adopt(const struct sock_fprog *seccomp, struct sandbox_plan **ret)
{
	struct sandbox_plan *pl = calloc(1, sizeof(*pl));

	if (!pl)
		return -ENOMEM;
	/* What only the spawn used is absent: no fd is borrowed or owned but the registry's. */
	pl->cgroup_fd = pl->proxy_sock = pl->uid_userns_fd = pl->exe_fd = -1;
	pl->seccomp = seccomp;
	*ret = pl;
	return 0;
}

int sandbox_plan_adopt_synth(struct sandbox_plan *plan, const char *path, size_t len)
{
	char buf[PATH_MAX];
	int r;

	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len);
	buf[len] = '\0';
	r = sandbox_strv_push(&plan->synth, &plan->n_synth, buf);
	/* Not in the plan, so never put back by it: the registry's count drops now. */
	if (r < 0)
		sandbox_synth_put(buf);
	return r;
}

void sandbox_synth_put_named(const char *path, size_t len)
{
	char buf[PATH_MAX];

	if (len >= sizeof(buf))
		return; /* never in the registry: synth.c's paths are below PATH_MAX */
	memcpy(buf, path, len);
	buf[len] = '\0';
	sandbox_synth_put(buf);
}
