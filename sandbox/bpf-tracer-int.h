/* SPDX-License-Identifier: MIT */
/*
 * Between the denial tracer's two halves: the load (bpf-load.c, on libbpf,
 * built into the module uexec-bpf.so and into the tests) and the tracer
 * that runs after it (bpf-tracer.c, raw bpf(2) calls, in uexec). A load
 * hands over the kernel objects as fds; the skeleton, the BTF it parsed and
 * libbpf itself go away with the module, so that a server carries none of
 * them for its life (bench/README.md, "Footprint").
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bpf_tracer;

/* The attachments of the exit hook, in the order they are tried. */
enum bpf_tracer_hook { BPF_HOOK_TP_BTF, BPF_HOOK_RAW_TP, BPF_HOOK_TP, _BPF_HOOK_MAX };

/* What a load hands over; the receiver owns every fd. */
struct bpf_tracer_loaded {
	int hook;          /* enum bpf_tracer_hook of exit_prog */
	int exit_prog;     /* the sys_exit program, loaded, not attached */
	int landlock_prog; /* fentry/landlock_log_denial, or -1 */
	int tp_id;         /* BPF_HOOK_TP: the perf id of raw_syscalls/sys_exit */
	int ring_fd;       /* the ring buffer map */
	int watched_fd;    /* the watched-cgroup hash map */
	int bss_fd;        /* the program's .bss (an mmapable array) */
	size_t bss_size;
	size_t dropped_off; /* where `dropped` lies in .bss */
};

/*
 * Loads the programs with the given hook, or with the first the kernel
 * takes (hook < 0), with Landlock's hook where it loads (landlock; with a
 * given hook: with it or fail). Each candidate is attached once and detached
 * to prove the kernel takes it. 0, or -errno with a one-line reason in err.
 */
typedef int (*bpf_tracer_load_fn)(int hook, bool landlock, struct bpf_tracer_loaded *ret,
				  char *err, size_t errsz);
int bpf_tracer_load(int hook, bool landlock, struct bpf_tracer_loaded *ret, char *err,
		    size_t errsz);

/* The tracer over loaded objects (takes the fds, closes them on failure). NULL with err. */
struct bpf_tracer *bpf_tracer_new(struct bpf_tracer_loaded *l, char *err, size_t errsz);

/* The module's one exported symbol (uexec-bpf.so): a table checked by its ABI number. */
#define BPF_MODULE_FILE "uexec-bpf.so"
#define BPF_MODULE_SYMBOL "uexec_bpf_module"
#define BPF_MODULE_ABI 1u /* bump when struct bpf_tracer_loaded or the load's signature changes */
struct bpf_module {
	unsigned abi;
	bpf_tracer_load_fn load;
};

/*
 * A running tracer handed to another binary across execve (a live upgrade,
 * docs/UPGRADE.md "Denial evidence"): its loaded objects, and while attached
 * its attachments, so that the programs stay attached in between and keep
 * writing records into the ring; the watched map's entries stay in the
 * kernel. bpf_tracer_export() fills it (the tracer keeps owning every fd);
 * bpf_tracer_adopt() makes a tracer around it in the new binary.
 */
struct bpf_tracer_handover {
	struct bpf_tracer_loaded obj;
	int links[2];   /* while attached: the exit hook's link (or raw tracepoint fd) and
			 * Landlock's, or -1 */
	int perf_fd;    /* BPF_HOOK_TP while attached: the perf event, or -1 */
	bool attached;
};

/* The tracer's objects and attachments (borrowed: t still owns them). */
void bpf_tracer_export(struct bpf_tracer *t, struct bpf_tracer_handover *ret);
/*
 * A tracer around what another binary exported: every fd is checked to be
 * the object it claims (program and map types, sizes, each link's program,
 * the perf event), the watched cgroups are counted from the map, and the ring
 * is mapped again, its consumer position where the other binary left it. On
 * success the tracer owns every fd; on failure (NULL, err says why) nothing
 * is taken or closed: the caller still owns them.
 */
struct bpf_tracer *bpf_tracer_adopt(const struct bpf_tracer_handover *h, char *err, size_t errsz);
/*
 * The cgroup ids the watched map holds (at most max into ids, ascending); the
 * count, or -errno. For the adopter, which keeps the ones its trees claim.
 */
int bpf_tracer_watched_ids(struct bpf_tracer *t, uint64_t *ids, size_t max);
