/* SPDX-License-Identifier: MIT OR GPL-2.0-only */
/*
 * The denial tracer's kernel side (libbpf CO-RE; loaded by sandbox/bpf-tracer.c).
 * At every syscall exit of the host it keeps only the errors a sandbox makes
 * (EROFS, EACCES, EPERM, EXDEV), then only for tasks whose cgroup v2 id, or
 * that of an ancestor, is in `watched`, and writes one record into the ring buffer `events`; a full ring
 * counts the record in `dropped` instead, and a cgroup past its budget of
 * records counts the denial in its map value instead. Three attachments of the same exit
 * hook are compiled in and the loader keeps the first the kernel accepts
 * (tp_btf, raw_tracepoint, tracepoint); a fourth program on Landlock's
 * denial logger (fentry) is tried beside it and left out when refused.
 */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "denial-event.h"

/* errno values (vmlinux.h has no uapi macros); the same on every architecture. */
#define EPERM_ 1
#define EACCES_ 13
#define EXDEV_ 18
#define EROFS_ 30

/* GPL-compatible (the kernel accepts this string), as the probe reads need. */
char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Set by the loader before load; sizes come from denial-event.h. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, BPF_DENIAL_RING_BYTES);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BPF_DENIAL_MAX_CGROUPS);
	__type(key, __u64);
	__type(value, struct bpf_denial_watch);
} watched SEC(".maps");

/* Records lost to a full ring (read by user space through the mmapped .bss). */
__u64 dropped = 0;

/* The errors worth a record; everything else leaves after one comparison. */
static __always_inline bool is_denial_error(long ret)
{
	return ret == -EROFS_ || ret == -EACCES_ || ret == -EPERM_ || ret == -EXDEV_;
}

/*
 * The watch of the current task's cgroup (*cg), or of the watched cgroup it
 * lies below (then *cg becomes that one's id), or NULL: a sandbox allowed to
 * write cgroupfs may make child cgroups of its leaf and move into them. Its
 * ancestors are tried from the root down (0 past its depth); the record
 * names the watched one.
 */
static __always_inline struct bpf_denial_watch *watch_of(__u64 *cg)
{
	struct bpf_denial_watch *w = bpf_map_lookup_elem(&watched, cg);

	if (w)
		return w;
	for (int level = 0; level < BPF_DENIAL_MAX_DEPTH; level++) {
		__u64 a = bpf_get_current_ancestor_cgroup_id(level);

		if (!a || a == *cg)
			break;
		w = bpf_map_lookup_elem(&watched, &a);
		if (w) {
			*cg = a;
			return w;
		}
	}
	return NULL;
}

/*
 * One record; uaddr/alen: a refused connect()'s address (user memory, read
 * here while the caller's buffer is still there), else NULL; regs: the
 * call's registers (its arguments), or NULL.
 */
static __always_inline int emit(long nr, long err, const void *uaddr, long alen,
				struct pt_regs *regs)
{
	__u64 cg = bpf_get_current_cgroup_id();
	struct bpf_denial_watch *w = watch_of(&cg);
	struct bpf_denial_event *e;
	__u64 id;

	if (!w)
		return 0;
	/* Threads racing here may pass the budget by one each: bounded anyway. */
	if (w->offered >= BPF_DENIAL_MAX_PER_CGROUP) {
		__sync_fetch_and_add(&w->suppressed, 1);
		return 0;
	}
	__sync_fetch_and_add(&w->offered, 1);
	if (uaddr) {
		struct bpf_denial_addr_event *a = bpf_ringbuf_reserve(&events, sizeof(*a), 0);
		__u32 n = alen < 0 ? 0 : alen > BPF_DENIAL_ADDR_BYTES ? BPF_DENIAL_ADDR_BYTES : alen;

		if (!a) {
			__sync_fetch_and_add(&dropped, 1);
			return 0;
		}
		n &= 0x7f; /* for the verifier: n <= BPF_DENIAL_ADDR_BYTES already */
		if (n > BPF_DENIAL_ADDR_BYTES)
			n = BPF_DENIAL_ADDR_BYTES;
		if (bpf_probe_read_user(a->addr, n, uaddr) < 0)
			n = 0;
		a->addr_len = n;
		a->pad = 0;
		e = &a->e;
	} else {
		e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
		if (!e) {
			__sync_fetch_and_add(&dropped, 1);
			return 0;
		}
	}
	id = bpf_get_current_pid_tgid();
	e->pid = (__u32)id;
	e->tgid = (__u32)(id >> 32);
	e->cgroup_id = cg;
	e->syscall_nr = (__s32)nr;
	e->err = (__s32)err;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	e->args[5] = 0;
	e->pad_args = 0;
	if (regs) {
		e->args[0] = PT_REGS_PARM1_CORE_SYSCALL(regs);
		e->args[1] = PT_REGS_PARM2_CORE_SYSCALL(regs);
		e->args[2] = PT_REGS_PARM3_CORE_SYSCALL(regs);
		e->args[3] = PT_REGS_PARM4_CORE_SYSCALL(regs);
		e->args[4] = PT_REGS_PARM5_CORE_SYSCALL(regs);
		e->nargs = 5; /* libbpf reads no sixth syscall argument portably */
	} else {
		e->args[0] = e->args[1] = e->args[2] = e->args[3] = e->args[4] = 0;
		e->nargs = 0;
	}
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* connect(2)'s number and its arguments at exit (the argument registers are not clobbered). */
#if defined(__TARGET_ARCH_x86)
#define NR_CONNECT 42
#elif defined(__TARGET_ARCH_arm64)
#define NR_CONNECT 203
#else
#define NR_CONNECT -2
#endif

/* The exit of a syscall: a refused connect() carries its address. */
static __always_inline int emit_regs(struct pt_regs *regs, long nr, long ret)
{
	if (nr == NR_CONNECT && (ret == -EPERM_ || ret == -EACCES_))
		return emit(nr, ret, (const void *)PT_REGS_PARM2_CORE_SYSCALL(regs),
			    (long)PT_REGS_PARM3_CORE_SYSCALL(regs), regs);
	return emit(nr, ret, NULL, 0, regs);
}

/* The syscall number from the registers the exit hook is given. */
static __always_inline long regs_syscall_nr(struct pt_regs *regs)
{
#if defined(__TARGET_ARCH_x86)
	return BPF_CORE_READ(regs, orig_ax);
#elif defined(__TARGET_ARCH_arm64)
	return BPF_CORE_READ(regs, syscallno);
#else
	return -1; /* the tracepoint variant carries the number itself */
#endif
}

/* 1: BTF-typed raw tracepoint (cheapest: direct reads of the arguments). */
SEC("tp_btf/sys_exit")
int BPF_PROG(denial_tp_btf, struct pt_regs *regs, long ret)
{
	if (!is_denial_error(ret))
		return 0;
	return emit_regs(regs, regs_syscall_nr(regs), ret);
}

/* 2: untyped raw tracepoint: the same arguments, registers read with probe reads. */
SEC("raw_tracepoint/sys_exit")
int denial_raw_tp(struct bpf_raw_tracepoint_args *ctx)
{
	long ret = (long)ctx->args[1];

	if (!is_denial_error(ret))
		return 0;
	struct pt_regs *regs = (struct pt_regs *)ctx->args[0];

	return emit_regs(regs, regs_syscall_nr(regs), ret);
}

/* 3: the perf tracepoint raw_syscalls:sys_exit (its record has the number). */
SEC("tracepoint/raw_syscalls/sys_exit")
int denial_tp(struct trace_event_raw_sys_exit *ctx)
{
	long ret = BPF_CORE_READ(ctx, ret);

	if (!is_denial_error(ret))
		return 0;
	return emit(BPF_CORE_READ(ctx, id), ret, NULL, 0, NULL); /* no registers: no address, no arguments */
}

/*
 * Landlock's denial logger (kernel 6.15+), called for each Landlock denial
 * before the syscall returns, audit or not. The record's err is 0: the errno
 * is not known yet (the sys_exit program reports it when the call returns).
 */
SEC("fentry/landlock_log_denial")
int BPF_PROG(denial_landlock, void *subject, void *request)
{
	struct task_struct *task = bpf_get_current_task_btf();

	return emit(regs_syscall_nr((struct pt_regs *)bpf_task_pt_regs(task)), 0, NULL, 0, NULL);
}
