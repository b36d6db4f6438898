/* SPDX-License-Identifier: MIT */
/*
 * The tracer's state between its two files: bpf-tracer.c (the tracer's
 * life: attach, watch, read, close) and bpf-tracer-handover.c (the same
 * tracer exported to and adopted from another binary, a live upgrade).
 * Nothing else includes it. Only with UEXEC_HAVE_BPF.
 */
#pragma once

#include <linux/bpf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bpf-tracer-int.h"

struct bpf_tracer {
	struct bpf_tracer_loaded obj;	/* the programs and maps (fds) */
	int links[2];			/* while attached: the exit hook's and Landlock's, or -1 */
	int perf_fd;			/* BPF_HOOK_TP while attached: the perf event, or -1 */
	const unsigned char *bss;	/* the program's .bss, mapped read-only */
	size_t bss_map_size;
	int ring_fd;
	size_t page;
	uint64_t *consumer_pos;		/* our page, read-write */
	void *producer_map;		/* producer page + data mapped twice, read-only */
	const uint64_t *producer_pos;
	const unsigned char *data;
	const char *source;
	size_t watched;			/* entries in the map; attached while > 0 (or lingering) */
	bool attached;
	bool linger;			/* the last unwatch leaves the programs attached */
};

static inline long sys_bpf(int cmd, union bpf_attr *attr)
{
	return syscall(SYS_bpf, cmd, attr, sizeof(*attr));
}

/* The names of the evidence source (bpf_tracer_source()) by hook, without and with Landlock's. */
extern const char *const bpf_tracer_hook_names[_BPF_HOOK_MAX];
extern const char *const bpf_tracer_hook_names_ll[_BPF_HOOK_MAX];

/* Maps the ring (consumer page, producer page and data twice): 0 or -errno. */
int bpf_tracer_map_ring(struct bpf_tracer *t);
/* Unmaps the ring unless records wait in it. */
void bpf_tracer_unmap_ring(struct bpf_tracer *t);
