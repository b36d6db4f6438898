/* SPDX-License-Identifier: MIT OR GPL-2.0-only */
/*
 * The record the denial tracer's BPF program (denial.bpf.c) writes into its
 * ring buffer, and the sizes of its maps. Included by the BPF program (types
 * from vmlinux.h) and by sandbox/bpf-tracer.c (types from <linux/types.h>),
 * which checks that struct bpf_denial in bpf-tracer.h has the same layout.
 */
#pragma once

/*
 * Ring buffer: a power of two of pages; 512 KiB hold 5041 records of 104
 * bytes with their header (2340 of a refused connect(), 224 bytes with its
 * address).
 */
#define BPF_DENIAL_RING_BYTES (512 * 1024)
/* Cgroups watched at once (one per sandboxed process tree). */
#define BPF_DENIAL_MAX_CGROUPS 8192
/*
 * Records one cgroup may offer to the ring; later denials are only counted.
 * A fifth of the ring: one flooding process tree cannot fill it, and the
 * reader's work per tree is bounded whatever the flood.
 */
#define BPF_DENIAL_MAX_PER_CGROUP 1024

/*
 * Levels of the cgroup v2 tree the program looks at for a watched ancestor
 * of the task's cgroup (a sandbox that made child cgroups of its own leaf).
 */
#define BPF_DENIAL_MAX_DEPTH 16

/* The value of a watched cgroup. */
struct bpf_denial_watch {
	__u64 offered;		/* records offered to the ring (kept or dropped) */
	__u64 suppressed;	/* denials past BPF_DENIAL_MAX_PER_CGROUP, not offered */
};

struct bpf_denial_event {
	__u32 pid;	/* thread id, in the initial PID namespace */
	__u32 tgid;	/* process id, in the initial PID namespace */
	__u64 cgroup_id;
	__s32 syscall_nr;
	__s32 err;	/* the negative errno returned; 0 from Landlock's hook */
	char comm[16];
	/*
	 * The call's first nargs arguments as the registers held them at entry
	 * (so that user space can run the sandbox's seccomp program on them);
	 * nargs 0 where the hook has no registers (the perf tracepoint).
	 */
	__u64 args[6];
	__u32 nargs;
	__u32 pad_args;
};

/* The first bytes of a refused connect()'s address that a record carries (a whole sockaddr_un). */
#define BPF_DENIAL_ADDR_BYTES 112

/*
 * A refused connect() (EPERM or EACCES): the record and the address the call
 * passed, so that the consumer can tell a probe of an optional local service
 * (libc's nscd socket, absent) from a connection the program needed.
 */
struct bpf_denial_addr_event {
	struct bpf_denial_event e;
	__u32 addr_len;	/* bytes read into addr: the call's addrlen, at most BPF_DENIAL_ADDR_BYTES */
	__u32 pad;
	__u8 addr[BPF_DENIAL_ADDR_BYTES];
};
