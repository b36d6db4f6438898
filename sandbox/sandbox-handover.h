/* SPDX-License-Identifier: MIT */
/*
 * What a sandboxed process's plan still holds after its spawn, for a live
 * upgrade (docs/UPGRADE.md "Sandboxed processes"): the synthesized mount
 * points it puts back when it closes (synth.c's registry: paths, users, and
 * the fds that hold their shared flocks) and the seccomp program its denial
 * evidence is judged with. The rest of a plan only serves the spawn (the
 * child's mounts, Landlock rules, the idmap namespaces and the proxy's
 * socket, which the mounts and the child keep by themselves).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct sandbox_features;
struct sandbox_plan;
struct sock_fprog;

/* The seccomp programs by a number that does not change across binaries (the blob's). */
enum sandbox_filter_id {
	SANDBOX_FILTER_NONE,
	SANDBOX_FILTER_RESTRICTED,
	SANDBOX_FILTER_OPEN_NET,
	SANDBOX_FILTER_PROXIED,
	SANDBOX_FILTER_PROXIED_ALL_UNIX,
	SANDBOX_FILTER_FS_HELPER,
	_SANDBOX_FILTER_MAX,
};

/* The synthesized mount points plan puts back when freed (*ret: its n paths). */
size_t sandbox_plan_synth(const struct sandbox_plan *plan, const char *const **ret);
/* The id of plan's seccomp program among f's (NONE: no plan, or none of f's). */
enum sandbox_filter_id sandbox_plan_filter(const struct sandbox_features *f,
					   const struct sandbox_plan *plan);
/* f's program of that id, or NULL (NONE, out of range, or f has no seccomp). */
const struct sock_fprog *sandbox_filter_of(const struct sandbox_features *f,
					   enum sandbox_filter_id id);

/*
 * A plan as it is after a spawn, for a process adopted by a live upgrade:
 * nothing but the mount points it puts back (sandbox_plan_adopt_synth(),
 * each a reference the adopted registry already counts: one that cannot be
 * added, -ENOMEM or -ENAMETOOLONG, is put back at once, so that no
 * reference is ever lost) and its seccomp program. 0 or -ENOMEM; freed by
 * sandbox_plan_free().
 */
int sandbox_plan_adopt(const struct sock_fprog *seccomp, struct sandbox_plan **ret);
int sandbox_plan_adopt_synth(struct sandbox_plan *plan, const char *path, size_t len);
/* Puts back a reference to path[0..len) that no plan could take (the plan could not be made). */
void sandbox_synth_put_named(const char *path, size_t len);

/*
 * The registry handed over (synth.c): sandbox_synth_each() calls fn for
 * every entry (its path, users, and the fd holding its shared flock) and
 * stops at fn's first error; sandbox_synth_refs() is the sum of the users;
 * sandbox_synth_adopt() makes an entry again in the new binary around the
 * fd handed over (taken on success; the flock stays with its open file
 * description across execve). 0, -EEXIST (already known), -EINVAL or -ENOMEM.
 */
int sandbox_synth_each(int (*fn)(void *ctx, const char *path, unsigned refs, int fd), void *ctx);
uint64_t sandbox_synth_refs(void);
int sandbox_synth_adopt(const char *path, unsigned refs, int fd);
