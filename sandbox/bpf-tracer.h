/* SPDX-License-Identifier: MIT */
/*
 * The optional denial tracer: a libbpf CO-RE program (sandbox/bpf/denial.bpf.c)
 * that reports the syscalls of watched cgroup v2 cgroups which fail with EROFS,
 * EACCES, EPERM or EXDEV, the denials a read-only bind mount, a seccomp
 * ERRNO rule or Landlock make, so that a denial leaves evidence even when it
 * leaves no audit record. Nothing here blocks, logs, or uses epoll: the
 * caller polls bpf_tracer_fd() with IORING_OP_POLL_ADD and calls
 * bpf_tracer_consume() when it fires. Never required: bpf_tracer_open() says
 * why it is unavailable and the caller falls back.
 *
 * Not thread-safe: one thread uses a tracer.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bpf_tracer;

/* Limits (the BPF program's map sizes, sandbox/bpf/denial-event.h). */
#define BPF_TRACER_MAX_CGROUPS 8192	 /* cgroups watched at once */
#define BPF_TRACER_MAX_PER_CGROUP 1024	 /* records one watched cgroup may offer */
#define BPF_TRACER_RING_RECORDS 5041	 /* records the ring holds (512 KiB) */

/* One reported syscall (layout shared with the BPF program's record). */
struct bpf_denial {
	uint32_t pid;		/* thread id in the initial PID namespace */
	uint32_t tgid;		/* process id in the initial PID namespace */
	uint64_t cgroup_id;	/* the task's cgroup v2 id (a watched one) */
	int32_t syscall_nr;	/* native syscall number; -1 if unknown */
	int32_t err;		/* -EROFS, -EACCES, -EPERM or -EXDEV as the call returned; 0 for a
				 * record of Landlock's denial hook, made before the call returns
				 * (its exit is reported as well, with the errno) */
	char comm[16];		/* the thread's name, NUL-terminated */
	uint64_t args[6];	/* the call's first nargs arguments (the rest 0) */
	uint32_t nargs;		/* 5 where the hook had the registers, else 0 */
	uint32_t pad_args_;
	uint32_t addr_len;	/* a refused connect(): bytes of its address in addr; else 0 */
	uint32_t pad_;
	uint8_t addr[112];	/* the sockaddr connect() was given (its first addr_len bytes) */
};

/*
 * Loads the program (attached by the first bpf_tracer_watch_cgroup()): the
 * sys_exit hook is the first of
 * tp_btf/sys_exit, raw_tracepoint/sys_exit, tracepoint/raw_syscalls/sys_exit
 * that the kernel accepts; fentry/landlock_log_denial is added where it loads.
 * Returns the tracer, or NULL with a one-line reason in err (missing
 * privileges, no kernel BTF, BPF refused, built without BPF).
 * The tracer watches no cgroup until bpf_tracer_watch_cgroup(). libbpf's
 * print callback is replaced during the call (its warnings give the reason)
 * and restored. Takes up to six loads where the kernel refuses attachments.
 */
struct bpf_tracer *bpf_tracer_open(char *err, size_t errsz);

/*
 * bpf_tracer_open() through the module uexec-bpf.so (bpf-tracer-int.h), open
 * at module_fd (the caller's, not taken): the module, libbpf and libelf are
 * mapped for the load only, and the skeleton and the BTF it parsed go with
 * them. What uexec calls; bpf_tracer_open() is the tests' (bpf-load.c).
 */
struct bpf_tracer *bpf_tracer_open_module(int module_fd, char *err, size_t errsz);

/* False in a build without BPF (meson option `bpf`): no tracer can be opened. */
bool bpf_tracer_built(void);

/*
 * bpf_tracer_open() with one given attachment ("tp_btf", "raw_tracepoint" or
 * "tracepoint"), with Landlock's hook or without, and no fallback: for the
 * tests and the benchmark, which check each attachment the kernel offers.
 */
struct bpf_tracer *bpf_tracer_open_hook(const char *hook, bool landlock, char *err, size_t errsz);

/*
 * The ring buffer's map fd (owned by the tracer): readable while records are
 * waiting. Poll it one-shot and call bpf_tracer_consume() on each completion.
 */
int bpf_tracer_fd(struct bpf_tracer *t);

/*
 * Which sys_exit attachment was loaded ("tp_btf", "raw_tracepoint",
 * "tracepoint"), followed by "+landlock" when Landlock's hook is attached too.
 * Static string owned by the tracer.
 */
const char *bpf_tracer_source(struct bpf_tracer *t);

/*
 * Starts reporting the tasks whose cgroup, or an ancestor of it (up to 16
 * levels from the root), has this id (see bpf_tracer_cgroup_id()); records
 * carry the watched id. Up to BPF_TRACER_MAX_PER_CGROUP
 * records, then counting only; every syscall that returns after this call
 * is seen, so watch before the first task enters the cgroup. The programs are
 * attached only while some cgroup is watched: the first watch attaches them,
 * the last unwatch detaches them (an attached sys_exit hook slows every
 * syscall of the host, bench/README.md). 0 (also when already watched),
 * -ENOSPC when BPF_TRACER_MAX_CGROUPS cgroups are watched, -errno from
 * the map update or the attachment.
 */
int bpf_tracer_watch_cgroup(struct bpf_tracer *t, uint64_t cgroup_id);

/*
 * Stops reporting that cgroup. 0, -ENOENT when it was not watched. Records
 * made before the call may still be in the ring; drain it before deciding
 * about the cgroup's processes (a record is in the ring before the syscall
 * that made it returns, so before the process can be seen to exit).
 */
int bpf_tracer_unwatch_cgroup(struct bpf_tracer *t, uint64_t cgroup_id);

/*
 * Lingering (off by default): the last unwatch leaves the programs attached,
 * and bpf_tracer_detach_if_idle() detaches them later. Attaching and
 * detaching the sys_exit hook costs the caller milliseconds (the kernel's
 * tracepoint registration waits for RCU), which a server starting one
 * sandboxed process after another would otherwise pay on every process;
 * attached, the hook costs every syscall of the host tens of ns.
 */
void bpf_tracer_set_linger(struct bpf_tracer *t, bool linger);

/* Detaches the programs if no cgroup is watched. True if it did. */
bool bpf_tracer_detach_if_idle(struct bpf_tracer *t);

/*
 * How many records this watched cgroup offered to the ring (kept, or dropped
 * because it was full), and how many denials it made past its budget of
 * BPF_TRACER_MAX_PER_CGROUP records, which were counted only. Read
 * them before unwatching. 0, -ENOENT when the cgroup is not watched.
 */
int bpf_tracer_cgroup_counts(struct bpf_tracer *t, uint64_t cgroup_id, uint64_t *ret_offered,
			     uint64_t *ret_suppressed);

/*
 * Calls cb(ctx, record) for the records waiting, oldest first, and frees
 * their room; never blocks. At most BPF_TRACER_RING_RECORDS records per call,
 * so a flood cannot hold the caller: when it returns that many, call again
 * (the fd stays readable). The record is valid during the callback only.
 * Returns the number of records passed to cb, or -errno (-EBADMSG: a record of
 * a size this build does not know; the ring is then skipped past it).
 */
int bpf_tracer_consume(struct bpf_tracer *t, void (*cb)(void *ctx, const struct bpf_denial *d),
		       void *ctx);

/*
 * Records lost because the ring was full, counted by the BPF program since
 * bpf_tracer_open() (all cgroups together). A caller that sees it grow marks
 * the evidence collected meanwhile incomplete. A cgroup's denials past its
 * budget are not drops (bpf_tracer_cgroup_counts()): its first records are
 * kept, and one flooding cgroup cannot fill the ring (its budget is a quarter
 * of it); drops need several at once while the reader lags.
 */
uint64_t bpf_tracer_dropped(struct bpf_tracer *t);

/*
 * The cgroup v2 id of the cgroup directory at path (relative to dirfd, or
 * absolute): the id bpf_get_current_cgroup_id() gives its tasks. 0 or -errno
 * (-EOPNOTSUPP: not a cgroup v2 directory). Works without BPF.
 */
int bpf_tracer_cgroup_id(int dirfd, const char *path, uint64_t *ret_id);

/*
 * The kernel id of the loaded sys_exit program (for `bpftool prog show id`,
 * `bpftool link` and the tests); 0 if unknown.
 */
uint32_t bpf_tracer_prog_id(struct bpf_tracer *t);

/* Detaches and frees everything; NULL is a no-op. */
void bpf_tracer_close(struct bpf_tracer *t);
