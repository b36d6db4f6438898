/* SPDX-License-Identifier: MIT */
/*
 * The seccomp filters of sandboxed processes, built once with libseccomp and
 * kept as classic BPF so that the forked child only has to load them.
 */
#pragma once

#include <linux/filter.h>
#include <stdbool.h>
#include <stdint.h>

struct sandbox_seccomp {
	struct sock_fprog restricted; /* network off: sockets only AF_UNIX, no connect/bind/... */
	struct sock_fprog open_net;   /* network on: only the always-denied set */
	/* managed network (own namespace, proxy only): sockets AF_INET/AF_INET6, stream unix pairs */
	struct sock_fprog proxied;
	struct sock_fprog proxied_all_unix; /* the same with unix sockets (dangerouslyAllowAll...) */
	/*
	 * uexec's own fs helper (trusted code running one request): network off,
	 * io_uring allowed for its loop. Its ring ops run with the helper's
	 * credentials, mount namespace and Landlock domain, so they stay confined.
	 */
	struct sock_fprog fs_helper;
};

/* Builds every program. Returns 0 or -errno (libseccomp missing support: -EOPNOTSUPP). */
int sandbox_seccomp_build(struct sandbox_seccomp *s);
void sandbox_seccomp_done(struct sandbox_seccomp *s);

/*
 * Child side, async-signal-safe: installs prog (no_new_privs must be set);
 * log: with SECCOMP_FILTER_FLAG_LOG (its errno actions become audit records;
 * only when audit is read: with auditing off the kernel prints them).
 * Returns 0 or -errno.
 */
int sandbox_seccomp_apply(const struct sock_fprog *prog, bool log);

/*
 * True for a syscall whose EPERM, in a sandboxed process, can only be the
 * sandbox's (the always-denied set, and socket(): a family the restricted
 * network refuses, or a raw socket without the capabilities the sandbox
 * drops): the denial tracer's EPERM from one is evidence (evidence.c).
 */
bool sandbox_seccomp_always_refused(long nr);

/*
 * What prog decides for the native call nr whose first nargs (0-6)
 * arguments are known: 0 and the SECCOMP_RET_* value in *action, or -EINVAL
 * when that cannot be told here (the program reads an unknown argument or
 * the instruction pointer, or holds an instruction the kernel's seccomp
 * would not accept either).
 */
int sandbox_seccomp_verdict(const struct sock_fprog *prog, long nr, const uint64_t *args,
			    unsigned nargs, uint32_t *action);
/*
 * True if prog fails that call with errno err (positive): an error the
 * denial tracer saw for it, in a process under prog, is the filter's.
 */
bool sandbox_seccomp_refuses(const struct sock_fprog *prog, long nr, const uint64_t *args,
			     unsigned nargs, int err);
